/* SPDX-License-Identifier: MIT */
/*
 * The operator's view of the gateway (specs/gateway.md, "Internal API"
 * and "Metrics"):
 *
 *   GET /internal/v1/workers   every leg: who, state, load, capacity,
 *                              p99s, breaker, onboarding (the bearer
 *                              token of the tee; engyctl workers prints it)
 *
 * and the modules' metrics on engyd's metrics_listen: the worker states
 * gauge, attempts by kind and status, the TPOT histogram, balance
 * reservations held, onboarding rounds, breaker trips, the tee (the last
 * three from their own modules).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "gateway_mod.h"

#define N_STATES	(GW_W_CLOSED + 1)
#define N_ATTEMPT_KEYS	32

struct attempt_key {			/* engy_gw_attempts_total{kind,status} */
	int kind, status;
	struct engy_metric *m;
};

struct adm {
	struct gw *g;
	struct event *tick;
	struct engy_metric *m_state[N_STATES], *m_res_open, *m_res_micro,
		*m_tpot;
	struct attempt_key keys[N_ATTEMPT_KEYS];	/* found once each */
	size_t n_keys;
};

/* ---- GET /internal/v1/workers --------------------------------------- */

static cJSON *worker_json(struct gw *g, const struct gw_worker *w)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "id", (double)w->id);
	cJSON_AddStringToObject(o, "name", w->worker_name);
	cJSON_AddStringToObject(o, "miner", w->hotkey);
	cJSON_AddStringToObject(o, "model", w->model);
	cJSON_AddStringToObject(o, "model_root", w->model_root);
	cJSON_AddStringToObject(o, "state", gw_wstate_name(w->state));
	cJSON_AddBoolToObject(o, "eligible", gw_worker_eligible(g, w));
	cJSON_AddBoolToObject(o, "first_party", w->first_party);
	cJSON_AddNumberToObject(o, "priority", w->priority);
	cJSON_AddNumberToObject(o, "inflight", w->inflight);
	cJSON_AddNumberToObject(o, "capacity", w->max_inflight);
	cJSON_AddNumberToObject(o, "capacity_total", w->max_inflight_total);
	cJSON_AddNumberToObject(o, "miner_inflight", w->miner_inflight);
	cJSON_AddNumberToObject(o, "served", (double)w->served);
	cJSON_AddNumberToObject(o, "failed", (double)w->failed);
	cJSON_AddNumberToObject(o, "connected_s", gw_since(&w->opened));
	cJSON_AddNumberToObject(o, "silent_s", gw_since(&w->last_seen));
	cJSON_AddStringToObject(o, "remote", w->remote);
	gw_breaker_describe(g, w, o);
	gw_onboard_describe(g, w, o);
	return o;
}

static int h_workers(void *arg, struct engy_http_exchange *x,
		     const struct engy_http_request *hr)
{
	struct adm *a = arg;
	struct gw *g = a->g;
	const struct gw_worker *w;
	uint64_t passed, failed;
	cJSON *o, *arr;

	if (!gw_internal_auth(g, x, hr))
		return 0;
	if (strcmp(hr->path, "/internal/v1/workers") != 0) {
		gw_internal_reply(g, x, 404, NULL, "no such route");
		return 0;
	}
	if (strcmp(hr->method, "GET") != 0) {
		gw_internal_reply(g, x, 405, NULL, "use GET");
		return 0;
	}
	o = cJSON_CreateObject();
	arr = o ? cJSON_AddArrayToObject(o, "workers") : NULL;
	if (!arr) {
		cJSON_Delete(o);
		gw_internal_reply(g, x, 500, NULL, "out of memory");
		return 0;
	}
	for (w = g->workers; w; w = w->next)
		cJSON_AddItemToArray(arr, worker_json(g, w));
	gw_onboard_totals(g, &passed, &failed);
	cJSON_AddBoolToObject(o, "onboarding", g->c->onboarding);
	cJSON_AddNumberToObject(o, "requests_open", g->n_reqs);
	cJSON_AddNumberToObject(o, "rounds_passed", (double)passed);
	cJSON_AddNumberToObject(o, "rounds_failed", (double)failed);
	cJSON_AddNumberToObject(o, "time_ms", (double)gw_now_ms());
	gw_internal_reply(g, x, 200, o, NULL);
	return 0;
}

static const struct engy_http_handler workers_handler = {
	.size = sizeof(workers_handler),
	.on_request = h_workers,
};

/* ---- metrics ------------------------------------------------------------ */

static void count_attempt(struct adm *a, int kind, int status)
{
	static const char *const kinds[] = { "buyer", "probe", "internal" };
	const struct engy_host *h = a->g->h;
	struct engy_metric *m = NULL;
	char l[64];
	size_t i;

	for (i = 0; i < a->n_keys; i++)
		if (a->keys[i].kind == kind && a->keys[i].status == status) {
			m = a->keys[i].m;
			break;
		}
	if (!m) {
		snprintf(l, sizeof(l), "kind=\"%s\",status=\"%d\"", kinds[kind],
			 status);
		if (h->metric(h, ENGY_METRIC_COUNTER, "engy_gw_attempts_total",
			      "attempts ended on a worker, by kind and status",
			      l, NULL, 0, &m) < 0)
			return;
		if (a->n_keys < N_ATTEMPT_KEYS)
			a->keys[a->n_keys++] = (struct attempt_key){ kind, status, m };
	}
	gw_madd(a->g, m, 1);
}

static void adm_finished(void *arg, struct gw_worker *w, const struct gw_req *r,
			 const struct gw_outcome *o)
{
	struct adm *a = arg;

	count_attempt(a, r->is_probe ? 1 : r->internal ? 2 : 0, o->status);
	if (o->status == 200 && !r->internal && o->completion_tokens > 1 &&
	    a->m_tpot)
		gw_mobserve(a->g, a->m_tpot, o->tpot_ms / 1e3);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct adm *a = arg;
	const struct gw_worker *w;
	const struct gw_req *r;
	unsigned n[N_STATES] = { 0 }, open = 0;
	double micro = 0;
	int i;

	for (w = a->g->workers; w; w = w->next)
		if ((unsigned)w->state < N_STATES)
			n[w->state]++;
	for (i = 0; i < N_STATES; i++)
		if (a->m_state[i])
			gw_mset(a->g, a->m_state[i], n[i]);
	for (r = a->g->reqs; r; r = r->next) {
		if (r->reservation_id) {
			open++;
			micro += (double)r->reserved_micro;
		}
	}
	if (a->m_res_open)
		gw_mset(a->g, a->m_res_open, open);
	if (a->m_res_micro)
		gw_mset(a->g, a->m_res_micro, micro);
}

static void adm_destroy(void *arg)
{
	struct adm *a = arg;

	if (a->tick)
		event_free(a->tick);
	free(a);
}

int gw_admin_init(struct gw *g)
{
	static const double tpot[] = { 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1 };
	struct gw_observer o = {
		.name = GW_MOD_ADMIN,
		.finished = adm_finished,
		.destroy = adm_destroy,
	};
	const struct engy_host *r = g->h;
	struct timeval one = { 1, 0 };
	struct adm *a = calloc(1, sizeof(*a));
	char l[48];
	int rc, i;

	if (!a)
		return -ENOMEM;
	a->g = g;
	o.arg = a;
	rc = gw_observe(g, &o);
	if (rc) {
		free(a);
		return rc;
	}
	for (i = 0; i < N_STATES; i++) {
		snprintf(l, sizeof(l), "state=\"%s\"", gw_wstate_name(i));
		r->metric(r, ENGY_METRIC_GAUGE, "engy_gw_worker_states",
			  "miner legs by state", l, NULL, 0, &a->m_state[i]);
	}
	r->metric(r, ENGY_METRIC_GAUGE, "engy_gw_reservations_open",
		  "balance reservations held by requests in flight", NULL,
		  NULL, 0, &a->m_res_open);
	r->metric(r, ENGY_METRIC_GAUGE, "engy_gw_reserved_micro",
		  "micro-USD those reservations hold", NULL, NULL, 0,
		  &a->m_res_micro);
	r->metric(r, ENGY_METRIC_HISTOGRAM, "engy_gw_tpot_seconds",
		  "time per output token of answered buyer attempts", NULL,
		  tpot, sizeof(tpot) / sizeof(tpot[0]), &a->m_tpot);
	a->tick = event_new(g->h->evbase(g->h), -1, EV_PERSIST, on_tick, a);
	if (!a->tick || event_add(a->tick, &one) < 0)
		return -ENOMEM;
	rc = g->t->http_route(g->ti, "/internal/v1/workers", &workers_handler, a);
	if (rc < 0)
		GW_LOG(g, ENGY_LOG_ERR, "event=route_failed "
		       "path=/internal/v1/workers error=\"%s\"", strerror(-rc));
	return rc;
}
