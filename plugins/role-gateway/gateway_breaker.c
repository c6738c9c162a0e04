/* SPDX-License-Identifier: MIT */
/*
 * The circuit breaker (specs/gateway.md, "Circuit breaker"): every buyer
 * attempt that ends on a worker lands in that worker's sliding window
 * (breaker_window_s, in 30 buckets): answered (200), failed (502, 504
 * charged to the worker: at most one per buyer request, told when the
 * request ends, gateway_relay.c; 499 and refusals never count) and slow
 * (answered with a TTFT or TPOT over the model's p99 ceiling).  An eligible
 * permissionless worker is pulled (state PULLED) when
 *
 *   - breaker_consecutive attempts in a row failed, or
 *   - the window holds breaker_min_requests attempts and more than
 *     breaker_max_error_ratio of them failed, or more than
 *     breaker_max_slow_ratio were slow, or
 *   - its open attempts still without a first token after
 *     breaker_stall_s (checked every second) count as failures and
 *     tip one of the above: a hung worker goes before its requests time
 *     out.
 *
 * Every trip is logged (event=breaker_trip) and counted
 * (engy_gw_breaker_trips_total{reason}); the worker goes through
 * onboarding again after breaker_cooldown_s (onboarding hears of the
 * state PULLED).  A worker that enters ACTIVE or NEW (qualified, or back
 * after its cooldown) starts with an empty window.
 * 1st-party workers are watched but never pulled.  Probes are
 * onboarding's business and never enter the window.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "gateway_mod.h"
#include "logfmt.h"

#define BK_BUCKETS 30
#define BK_SAMPLES 512

struct bk_bucket {
	int64_t slot; /* which window slice it counts */
	uint32_t n, fail, slow;
};

struct bk_sample {
	double t;	     /* monotonic seconds */
	uint32_t ttft, tpot; /* tpot 0: one token */
};

struct bk_w {
	struct bk_bucket b[BK_BUCKETS];
	uint32_t consecutive;
	uint32_t stalled; /* at the last check */
	uint64_t trips;
	char last_trip[160];
	struct timespec last_trip_at;
	struct bk_sample s[BK_SAMPLES]; /* answered attempts, a ring */
	unsigned s_head, s_n;
};

enum { TRIP_ERRORS, TRIP_SLOW, TRIP_CONSECUTIVE, TRIP_STALLED, N_TRIPS };
static const char *const trip_names[] = {
	"errors",
	"slow",
	"consecutive",
	"stalled",
};

struct bk {
	struct gw *g;
	const struct gw_mod_conf *c;
	int slot;
	struct event *tick;
	struct engy_metric *m_trip[N_TRIPS];
};

static double mono(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static struct bk_w *rec_of(const struct bk *bk, const struct gw_worker *w)
{
	return bk && bk->slot >= 0 ? w->ext[bk->slot] : NULL;
}

static int64_t slot_now(const struct bk *bk)
{
	return (int64_t)floor(mono() / (bk->c->breaker_window_s / BK_BUCKETS));
}

static struct bk_bucket *bucket(const struct bk *bk, struct bk_w *rec)
{
	int64_t s = slot_now(bk);
	struct bk_bucket *b = &rec->b[s % BK_BUCKETS];

	if (b->slot != s)
		*b = (struct bk_bucket){ .slot = s };
	return b;
}

static void window(const struct bk *bk, const struct bk_w *rec, uint32_t *n,
		   uint32_t *fail, uint32_t *slow)
{
	int64_t s = slot_now(bk);
	size_t i;

	*n = *fail = *slow = 0;
	for (i = 0; i < BK_BUCKETS; i++) {
		const struct bk_bucket *b = &rec->b[i];

		if (b->slot > s - BK_BUCKETS && b->slot <= s) {
			*n += b->n;
			*fail += b->fail;
			*slow += b->slow;
		}
	}
}

/* Whether the breaker may pull @w at all. */
static bool guarded(const struct gw *g, const struct gw_worker *w)
{
	return !w->first_party && (w->state == GW_W_ACTIVE ||
				   (w->state == GW_W_NEW && !g->c->onboarding));
}

static void clear(struct bk_w *rec)
{
	memset(rec->b, 0, sizeof(rec->b));
	rec->consecutive = 0;
	rec->stalled = 0;
	rec->s_n = rec->s_head = 0;
}

static void trip(struct bk *bk, struct gw_worker *w, struct bk_w *rec, int kind,
		 uint32_t n, uint32_t fail, uint32_t slow)
{
	char why[160], qn[300], qw[200];

	snprintf(why, sizeof(why),
		 "breaker: %s (%u attempts in the window, "
		 "%u failed, %u slow, %u stalled, %u failed in a row)",
		 trip_names[kind], n, fail, slow, rec->stalled,
		 rec->consecutive);
	rec->trips++;
	snprintf(rec->last_trip, sizeof(rec->last_trip), "%s", why);
	clock_gettime(CLOCK_MONOTONIC, &rec->last_trip_at);
	if (bk->m_trip[kind])
		gw_madd(bk->g, bk->m_trip[kind], 1);
	GW_LOG(bk->g, ENGY_LOG_NOTICE,
	       "event=breaker_trip worker=%llu name=%s miner=%s model=%s "
	       "reason=%s window_s=%.0f attempts=%u failed=%u slow=%u "
	       "stalled=%u consecutive=%u trips=%llu why=%s",
	       (unsigned long long)w->id,
	       (engy_logfmt_value(qn, sizeof(qn), w->worker_name), qn),
	       w->hotkey, w->model, trip_names[kind], bk->c->breaker_window_s,
	       n, fail, slow, rec->stalled, rec->consecutive,
	       (unsigned long long)rec->trips,
	       (engy_logfmt_value(qw, sizeof(qw), why), qw));
	clear(rec);
	gw_worker_set_state(w, GW_W_PULLED, why);
}

static void judge(struct bk *bk, struct gw_worker *w, struct bk_w *rec)
{
	const struct gw_mod_conf *c = bk->c;
	uint32_t n, fail, slow, all, bad;

	if (!guarded(bk->g, w))
		return;
	window(bk, rec, &n, &fail, &slow);
	all = n + rec->stalled;
	bad = fail + rec->stalled;
	if (rec->consecutive >= (uint32_t)c->breaker_consecutive)
		trip(bk, w, rec, TRIP_CONSECUTIVE, n, fail, slow);
	else if (n >= (uint32_t)c->breaker_min_requests &&
		 (double)fail > c->breaker_max_error_ratio * n)
		trip(bk, w, rec, TRIP_ERRORS, n, fail, slow);
	else if (rec->stalled &&
		 (rec->consecutive + rec->stalled >=
			  (uint32_t)c->breaker_consecutive ||
		  (all >= (uint32_t)c->breaker_min_requests &&
		   (double)bad > c->breaker_max_error_ratio * all)))
		trip(bk, w, rec, TRIP_STALLED, n, fail, slow);
	else if (n >= (uint32_t)c->breaker_min_requests &&
		 (double)slow > c->breaker_max_slow_ratio * n)
		trip(bk, w, rec, TRIP_SLOW, n, fail, slow);
}

static void bk_finished(void *arg, struct gw_worker *w, const struct gw_req *r,
			const struct gw_outcome *o)
{
	struct bk *bk = arg;
	struct bk_w *rec = rec_of(bk, w);
	struct bk_bucket *b;
	uint32_t ttft_c, tpot_c;

	if (!rec || r->is_probe || r->internal)
		return;
	if (o->status == 200) {
		gw_onboard_ceilings(bk->g, w, &ttft_c, &tpot_c);
		b = bucket(bk, rec);
		b->n++;
		if ((ttft_c && o->ttft_ms > ttft_c) ||
		    (tpot_c && o->completion_tokens > 1 && o->tpot_ms > tpot_c))
			b->slow++;
		rec->consecutive = 0;
		rec->s[rec->s_head] = (struct bk_sample){
			mono(), o->ttft_ms,
			o->completion_tokens > 1 ? o->tpot_ms : 0
		};
		rec->s_head = (rec->s_head + 1) % BK_SAMPLES;
		if (rec->s_n < BK_SAMPLES)
			rec->s_n++;
	} else if (o->miner_fault) {
		b = bucket(bk, rec);
		b->n++;
		b->fail++;
		rec->consecutive++;
	} else {
		return;
	}
	judge(bk, w, rec);
}

/* Once a second: open attempts past breaker_stall_s without a token. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct bk *bk = arg;
	struct gw_worker *w, *next;
	const struct gw_req *r;
	struct bk_w *rec;

	for (w = bk->g->workers; w; w = next) {
		next = w->next;
		rec = rec_of(bk, w);
		if (!rec || !w->conn)
			continue;
		rec->stalled = 0;
		for (r = w->reqs; r; r = r->wnext)
			if (!r->internal && !r->first_chunk &&
			    gw_since(&r->t_sent) > bk->c->breaker_stall_s)
				rec->stalled++;
		if (rec->stalled)
			judge(bk, w, rec);
	}
}

static void bk_admitted(void *arg, struct gw_worker *w)
{
	struct bk *bk = arg;

	w->ext[bk->slot] = calloc(1, sizeof(struct bk_w));
}

static void bk_closed(void *arg, struct gw_worker *w)
{
	struct bk *bk = arg;

	free(w->ext[bk->slot]);
	w->ext[bk->slot] = NULL;
}

static void bk_destroy(void *arg)
{
	struct bk *bk = arg;
	struct gw_worker *w;

	for (w = bk->g->workers; w; w = w->next)
		bk_closed(bk, w);
	if (bk->tick)
		event_free(bk->tick);
	free(bk);
}

/* Qualified, or back after a pull: a fresh window. */
static void bk_state(void *arg, struct gw_worker *w, enum gw_wstate from)
{
	struct bk_w *rec = rec_of(arg, w);

	if (rec && (w->state == GW_W_ACTIVE || w->state == GW_W_NEW))
		clear(rec);
}

void gw_breaker_describe(struct gw *g, const struct gw_worker *w, cJSON *o)
{
	struct bk *bk = gw_mod_find(g, GW_MOD_BREAKER);
	const struct bk_w *rec = rec_of(bk, w);
	uint32_t n, fail, slow, ttft[BK_SAMPLES], tpot[BK_SAMPLES];
	size_t i, nt = 0, np = 0;
	double now = mono();
	cJSON *j;

	if (!rec)
		return;
	for (i = 0; i < rec->s_n; i++) {
		const struct bk_sample *s = &rec->s[i];

		if (now - s->t > bk->c->breaker_window_s)
			continue;
		ttft[nt++] = s->ttft;
		if (s->tpot)
			tpot[np++] = s->tpot;
	}
	cJSON_AddNumberToObject(o, "ttft_p99_ms",
				gw_mod_quantile(ttft, nt, 0.99));
	cJSON_AddNumberToObject(o, "tpot_p99_ms",
				gw_mod_quantile(tpot, np, 0.99));
	cJSON_AddNumberToObject(o, "latency_samples", (double)nt);
	j = cJSON_AddObjectToObject(o, "breaker");
	if (!j)
		return;
	window(bk, rec, &n, &fail, &slow);
	cJSON_AddStringToObject(j, "status",
				w->first_party		  ? "exempt"
				: w->state == GW_W_PULLED ? "open"
				: guarded(g, w)		  ? "closed"
							  : "idle");
	cJSON_AddNumberToObject(j, "window_s", bk->c->breaker_window_s);
	cJSON_AddNumberToObject(j, "attempts", n);
	cJSON_AddNumberToObject(j, "failed", fail);
	cJSON_AddNumberToObject(j, "slow", slow);
	cJSON_AddNumberToObject(j, "stalled", rec->stalled);
	cJSON_AddNumberToObject(j, "consecutive_failures", rec->consecutive);
	cJSON_AddNumberToObject(j, "trips", (double)rec->trips);
	if (rec->trips) {
		cJSON_AddStringToObject(j, "last_trip", rec->last_trip);
		cJSON_AddNumberToObject(j, "last_trip_ago_s",
					gw_since(&rec->last_trip_at));
	}
}

int gw_breaker_init(struct gw *g)
{
	struct gw_observer o = {
		.name = GW_MOD_BREAKER,
		.admitted = bk_admitted,
		.state = bk_state,
		.closed = bk_closed,
		.finished = bk_finished,
		.destroy = bk_destroy,
	};
	struct timeval one = { 1, 0 };
	struct bk *bk = calloc(1, sizeof(*bk));
	char l[48];
	int rc, i;

	if (!bk)
		return -ENOMEM;
	bk->g = g;
	bk->c = &g->c->mod;
	bk->slot = gw_ext_slot(g);
	o.arg = bk;
	rc = bk->slot < 0 ? bk->slot : gw_observe(g, &o);
	if (rc) {
		free(bk);
		return rc;
	}
	for (i = 0; i < N_TRIPS; i++) {
		snprintf(l, sizeof(l), "reason=\"%s\"", trip_names[i]);
		g->h->metric(g->h, ENGY_METRIC_COUNTER,
			     "engy_gw_breaker_trips_total",
			     "workers pulled by the circuit breaker", l, NULL,
			     0, &bk->m_trip[i]);
	}
	bk->tick = event_new(g->h->evbase(g->h), -1, EV_PERSIST, on_tick, bk);
	if (!bk->tick || event_add(bk->tick, &one) < 0)
		return -ENOMEM;
	return 0;
}
