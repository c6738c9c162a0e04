/* SPDX-License-Identifier: MIT */
/*
 * The operator's view of the gateway (specs/gateway.md, "Internal API"
 * and "Metrics"):
 *
 *   GET /internal/v1/workers   every leg: who, state, load, capacity,
 *                              p99s, breaker, onboarding (the bearer
 *                              token of the tee; engyctl workers prints it)
 *   GET /internal/v1/status    the same as an HTML page that refreshes
 *                              itself, with money at a glance: the
 *                              reservations open and the spend per model
 *                              since this process started (the request
 *                              log, read on the pool)
 *
 * and the modules' metrics on engyd's metrics_listen: the worker states
 * gauge, attempts by kind and status, the TPOT histogram, balance
 * reservations held, onboarding rounds, breaker trips, the tee (the last
 * three from their own modules).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "gateway_mod.h"
#include "html.h"
#include "jsonget.h"

#define N_STATES       (GW_W_CLOSED + 1)
#define N_ATTEMPT_KEYS 32

struct attempt_key { /* engy_gw_attempts_total{kind,status} */
	int kind, status;
	struct engy_metric *m;
};

struct adm {
	struct gw *g;
	struct event *tick;
	struct engy_metric *m_state[N_STATES], *m_res_open, *m_res_micro,
		*m_tpot;
	struct attempt_key keys[N_ATTEMPT_KEYS]; /* found once each */
	size_t n_keys;
	int64_t started_ms;	 /* spend is counted from here */
	struct statusq *pending; /* status pages on the pool */
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
	cJSON_AddStringToObject(o, "spec_root", w->spec_root);
	cJSON_AddStringToObject(o, "state", gw_wstate_name(w->state));
	cJSON_AddBoolToObject(o, "eligible", gw_worker_eligible(g, w));
	cJSON_AddBoolToObject(o, "first_party", w->first_party);
	cJSON_AddNumberToObject(o, "priority", w->priority);
	cJSON_AddNumberToObject(o, "inflight", w->inflight);
	cJSON_AddNumberToObject(o, "capacity", w->max_inflight);
	cJSON_AddNumberToObject(o, "earned", w->earned);
	cJSON_AddNumberToObject(o, "cancels_held", w->held);
	cJSON_AddNumberToObject(o, "ms_per_token", w->ms_per_token);
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

/* The workers document (NULL when out of memory). */
static cJSON *workers_doc(struct adm *a)
{
	struct gw *g = a->g;
	const struct gw_worker *w;
	uint64_t passed, failed;
	cJSON *o, *arr;

	o = cJSON_CreateObject();
	arr = o ? cJSON_AddArrayToObject(o, "workers") : NULL;
	if (!arr) {
		cJSON_Delete(o);
		return NULL;
	}
	for (w = g->workers; w; w = w->next)
		cJSON_AddItemToArray(arr, worker_json(g, w));
	gw_onboard_totals(g, &passed, &failed);
	cJSON_AddBoolToObject(o, "onboarding", g->c->onboarding);
	cJSON_AddNumberToObject(o, "requests_open", g->n_reqs);
	cJSON_AddNumberToObject(o, "rounds_passed", (double)passed);
	cJSON_AddNumberToObject(o, "rounds_failed", (double)failed);
	cJSON_AddNumberToObject(o, "time_ms", (double)gw_now_ms());
	return o;
}

static int h_workers(void *arg, struct engy_http_exchange *x,
		     const struct engy_http_request *hr)
{
	struct adm *a = arg;
	struct gw *g = a->g;
	cJSON *o;

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
	o = workers_doc(a);
	if (!o) {
		gw_internal_reply(g, x, 500, NULL, "out of memory");
		return 0;
	}
	gw_internal_reply(g, x, 200, o, NULL);
	return 0;
}

static const struct engy_http_handler workers_handler = {
	.size = sizeof(workers_handler),
	.on_request = h_workers,
};

/* ---- GET /internal/v1/status (HTML) ----------------------------------- */

#define SPEND_MODELS   64
#define SPEND_ROWS_MAX 1000000 /* rows read for one page, at most */

struct spend {
	char model[128];
	int64_t micro, requests, tokens;
};

struct statusq {
	struct statusq *next;
	struct adm *a;
	struct engy_http_exchange *x;
	bool gone;
	cJSON *doc; /* the workers, taken on the loop */
	unsigned res_open;
	int64_t res_micro;
	int64_t since_ms;
	struct spend sp[SPEND_MODELS];
	size_t n_sp;
	bool truncated;
	int rc;
};

static void status_fn(void *arg)
{
	struct statusq *q = arg;
	struct gw *g = q->a->g;
	struct engy_log_query lq = { .size = sizeof(lq),
				     .limit = 10000,
				     .since_ms = q->since_ms };
	struct engy_request_row *rows;
	size_t n, i, k, seen = 0;

	for (;;) {
		q->rc = g->st->log_query(g->sti, &lq, &rows, &n);
		if (q->rc)
			return;
		for (i = 0; i < n; i++) {
			if (rows[i].is_probe || rows[i].account_id == 0 ||
			    rows[i].cost_micro <= 0)
				continue;
			for (k = 0; k < q->n_sp; k++)
				if (!strcmp(q->sp[k].model, rows[i].model))
					break;
			if (k == q->n_sp) {
				if (q->n_sp == SPEND_MODELS) {
					q->truncated = true;
					continue;
				}
				snprintf(q->sp[k].model, sizeof(q->sp[k].model),
					 "%s", rows[i].model);
				q->n_sp++;
			}
			q->sp[k].micro += rows[i].cost_micro;
			q->sp[k].requests++;
			q->sp[k].tokens += (int64_t)rows[i].prompt_tokens +
					   rows[i].completion_tokens;
		}
		if (n)
			lq.after_id = rows[n - 1].id;
		free(rows);
		seen += n;
		if (!n || seen >= SPEND_ROWS_MAX) {
			q->truncated |= n != 0;
			return;
		}
	}
}

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *v = engy_json_get(o, k);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static double jnum(const cJSON *o, const char *k)
{
	const cJSON *v = engy_json_get(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void render_status(const struct statusq *q, struct engy_html *h)
{
	const cJSON *w, *ob, *bk;
	size_t k;

	engy_html_raw(
		h,
		"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		"<meta http-equiv=\"refresh\" content=\"5\">"
		"<title>gateway status</title><style>"
		"body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}"
		"table{border-collapse:collapse;margin:.5em 0 1.5em}"
		"th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
		"td.n{text-align:right;font-variant-numeric:tabular-nums}"
		".bad{color:#b00;font-weight:bold}.ok{color:#070}"
		"</style></head><body><h1>gateway status</h1>\n");
	engy_html_printf(
		h,
		"<p>Refreshes every 5 s. Requests open: %.0f; onboarding %s; "
		"rounds passed %.0f, failed %.0f.</p>\n<h2>workers</h2>\n",
		jnum(q->doc, "requests_open"),
		cJSON_IsTrue(engy_json_get(q->doc, "onboarding")) ? "on"
								  : "off",
		jnum(q->doc, "rounds_passed"), jnum(q->doc, "rounds_failed"));
	engy_html_raw(
		h,
		"<table class=\"workers\"><thead><tr><th>id</th><th>worker</th>"
		"<th>miner</th><th>model</th><th>state</th><th>onboarding</th>"
		"<th>breaker</th><th>load / capacity</th><th>TTFT p99 (ms)</th>"
		"<th>TPOT p99 (ms)</th><th>served / failed</th>"
		"<th>probe verdicts (pass/cheat/unproven)</th><th>last</th></tr></thead><tbody>\n");
	cJSON_ArrayForEach(w, engy_json_get(q->doc, "workers"))
	{
		ob = engy_json_get(w, "onboarding");
		bk = engy_json_get(w, "breaker");
		engy_html_printf(
			h, "<tr><td class=\"n\">%.0f</td><td class=\"name\">",
			jnum(w, "id"));
		engy_html_text(h, jstr(w, "name"));
		engy_html_raw(h, "</td><td><code>");
		engy_html_text(h, jstr(w, "miner"));
		engy_html_raw(h, "</code></td><td>");
		engy_html_text(h, jstr(w, "model"));
		engy_html_printf(h, "</td><td class=\"state %s\">",
				 cJSON_IsTrue(engy_json_get(w, "eligible"))
					 ? "ok"
					 : "bad");
		engy_html_text(h, jstr(w, "state"));
		engy_html_raw(h, "</td><td>");
		engy_html_text(h, ob ? jstr(ob, "phase") : "-");
		if (ob)
			engy_html_printf(h, " (round %.0f)", jnum(ob, "round"));
		engy_html_raw(h, "</td><td>");
		engy_html_text(h, bk ? jstr(bk, "status") : "-");
		if (bk)
			engy_html_printf(h, ", %.0f trips", jnum(bk, "trips"));
		engy_html_printf(
			h,
			"</td><td class=\"n\">%.0f / %.0f</td><td class=\"n\">%.0f</td>"
			"<td class=\"n\">%.0f</td><td class=\"n\">%.0f / %.0f</td>"
			"<td class=\"n\">%.0f / %.0f / %.0f</td><td>",
			jnum(w, "inflight"), jnum(w, "capacity"),
			jnum(w, "ttft_p99_ms"), jnum(w, "tpot_p99_ms"),
			jnum(w, "served"), jnum(w, "failed"),
			jnum(ob, "verdicts_pass"), jnum(ob, "verdicts_cheat"),
			jnum(ob, "verdicts_unproven"));
		engy_html_text(h, ob ? jstr(ob, "last") : "");
		engy_html_raw(h, "</td></tr>\n");
	}
	engy_html_printf(
		h,
		"</tbody></table>\n<h2>money</h2>\n<table class=\"reservations\"><tr>"
		"<th>reservations open</th><td class=\"n\">%u</td></tr><tr><th>held</th>"
		"<td class=\"n\">%" PRId64 " µUSD</td></tr></table>\n"
		"<table class=\"spend\"><thead><tr><th>model</th><th>requests billed</th>"
		"<th>tokens</th><th>spend (µUSD)</th></tr></thead><tbody>\n",
		q->res_open, q->res_micro);
	for (k = 0; k < q->n_sp; k++) {
		engy_html_raw(h, "<tr><td>");
		engy_html_text(h, q->sp[k].model);
		engy_html_printf(h,
				 "</td><td class=\"n\">%" PRId64
				 "</td><td class=\"n\">%" PRId64
				 "</td><td class=\"n\">%" PRId64 "</td></tr>\n",
				 q->sp[k].requests, q->sp[k].tokens,
				 q->sp[k].micro);
	}
	engy_html_printf(
		h,
		"</tbody></table>\n<p>Spend is read from the request log since this "
		"gateway started (%" PRId64
		" ms)%s; buyer content is never stored.</p>"
		"</body></html>\n",
		q->since_ms, q->truncated ? ", truncated" : "");
}

static void status_done(void *arg, int prc)
{
	struct statusq *q = arg, **pp;
	struct gw *g = q->a->g;
	const char *hdr[] = { "Cache-Control",
			      "no-store",
			      "Content-Security-Policy",
			      "default-src 'none'; style-src 'unsafe-inline'",
			      "X-Content-Type-Options",
			      "nosniff",
			      NULL };
	struct engy_html h = { 0 };
	char *body;
	size_t len;

	for (pp = &q->a->pending; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	if (!q->gone) {
		if (prc < 0 || q->rc) {
			gw_internal_reply(g, q->x, 503, NULL,
					  "the store is unavailable");
		} else {
			render_status(q, &h);
			body = engy_html_take(&h, &len);
			if (body)
				g->t->http_reply(g->ti, q->x, 200,
						 "text/html; charset=utf-8",
						 hdr, body, len);
			else
				gw_internal_reply(g, q->x, 500, NULL,
						  "out of memory");
			free(body);
		}
	}
	cJSON_Delete(q->doc);
	free(q);
}

static int h_status(void *arg, struct engy_http_exchange *x,
		    const struct engy_http_request *hr)
{
	struct adm *a = arg;
	struct gw *g = a->g;
	const struct gw_req *r;
	struct statusq *q;

	if (!gw_internal_auth(g, x, hr))
		return 0;
	if (strcmp(hr->path, "/internal/v1/status") != 0) {
		gw_internal_reply(g, x, 404, NULL, "no such route");
		return 0;
	}
	if (strcmp(hr->method, "GET") != 0) {
		gw_internal_reply(g, x, 405, NULL, "use GET");
		return 0;
	}
	q = calloc(1, sizeof(*q));
	if (q)
		q->doc = workers_doc(a);
	if (!q || !q->doc) {
		free(q);
		gw_internal_reply(g, x, 500, NULL, "out of memory");
		return 0;
	}
	q->a = a;
	q->x = x;
	q->since_ms = a->started_ms;
	for (r = g->reqs; r; r = r->next)
		if (r->reservation_id) {
			q->res_open++;
			q->res_micro += r->reserved_micro;
		}
	if (g->h->work(g->h, status_fn, status_done, q) < 0) {
		cJSON_Delete(q->doc);
		free(q);
		gw_internal_reply(g, x, 503, NULL, "shutting down");
		return 0;
	}
	q->next = a->pending;
	a->pending = q;
	return 0;
}

static void status_gone(void *arg, struct engy_http_exchange *x)
{
	struct adm *a = arg;
	struct statusq *q;

	for (q = a->pending; q; q = q->next)
		if (q->x == x)
			q->gone = true;
}

static const struct engy_http_handler status_handler = {
	.size = sizeof(status_handler),
	.on_request = h_status,
	.on_gone = status_gone,
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
			a->keys[a->n_keys++] =
				(struct attempt_key){ kind, status, m };
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
	static const double tpot[] = {
		0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1
	};
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
		  "balance reservations held by requests in flight", NULL, NULL,
		  0, &a->m_res_open);
	r->metric(r, ENGY_METRIC_GAUGE, "engy_gw_reserved_micro",
		  "micro-USD those reservations hold", NULL, NULL, 0,
		  &a->m_res_micro);
	r->metric(r, ENGY_METRIC_HISTOGRAM, "engy_gw_tpot_seconds",
		  "time per output token of answered buyer attempts", NULL,
		  tpot, sizeof(tpot) / sizeof(tpot[0]), &a->m_tpot);
	a->tick = event_new(g->h->evbase(g->h), -1, EV_PERSIST, on_tick, a);
	if (!a->tick || event_add(a->tick, &one) < 0)
		return -ENOMEM;
	a->started_ms = gw_now_ms();
	rc = g->t->http_route(g->ti, "/internal/v1/workers", &workers_handler,
			      a);
	if (rc < 0)
		GW_LOG(g, ENGY_LOG_ERR,
		       "event=route_failed "
		       "path=/internal/v1/workers error=\"%s\"",
		       strerror(-rc));
	if (rc >= 0) {
		rc = g->t->http_route(g->ti, "/internal/v1/status",
				      &status_handler, a);
		if (rc < 0)
			GW_LOG(g, ENGY_LOG_ERR,
			       "event=route_failed "
			       "path=/internal/v1/status error=\"%s\"",
			       strerror(-rc));
	}
	return rc;
}
