/* SPDX-License-Identifier: MIT */
/*
 * The request driver (specs/gateway.md, "A buyer request"): one request's
 * life, from its arrival to its settle, as a chain of steps the layers
 * below run and hand back:
 *
 *   start    CHECK on the pool (gateway_store.c), then here: 499 when the
 *            buyer left, the refusal, count_tokens answered, 429 per key,
 *            whether any worker serves the model;
 *   RESERVE  on the pool (the model, the hold on the balance), then here:
 *            the refusal, or dispatch;
 *   dispatch pick a worker (gateway_route.c) and start an attempt on it
 *            (gateway_relay.c); an attempt that fails comes back through
 *            struct gw_relay_sink: another worker while no content byte
 *            reached the buyer and attempts and time remain, else the
 *            error; an answer ends the request;
 *   finish   the outcome, the sink of an internal request, the request
 *            counter and log line, then SETTLE on the pool and free.
 *
 * gw_submit() runs the same chain for internal requests (probes, bench)
 * from RESERVE on, without a buyer and without money.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway_int.h"
#include "jsonget.h"
#include "strcopy.h"
#include "logfmt.h"

/* Kept for reuse, never under AddressSanitizer (it would hide a use after
 * free).  Only the struct: its buffers went with gw_req_free(). */
#if defined(__SANITIZE_ADDRESS__)
#define GW_REQ_SPARE 0
#else
#define GW_REQ_SPARE 64
#endif

struct gw_req *gw_req_new(struct gw *g)
{
	struct gw_req *r = g->req_spare;

	if (r) {
		g->req_spare = r->next;
		g->n_req_spare--;
		memset(r, 0, sizeof(*r));
	} else if (!(r = calloc(1, sizeof(*r)))) {
		return NULL;
	}
	r->g = g;
	engy_api_new_id(r->request_id, sizeof(r->request_id), "req_");
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	r->t0_ms = gw_now_ms();
	engy_sse_out_init(&r->out);
	engy_sse_out_init(&r->cut);
	r->next = g->reqs;
	if (r->next)
		r->next->pprev = &r->next;
	r->pprev = &g->reqs;
	g->reqs = r;
	g->n_reqs++;
	return r;
}

void gw_req_free(struct gw_req *r)
{
	struct gw *g = r->g;

	gw_relay_drop(r);
	gw_store_key_release(r);
	*r->pprev = r->next;
	if (r->next)
		r->next->pprev = r->pprev;
	g->n_reqs--;
	engy_api_req_free(&r->areq);
	engy_oai_stream_free(&r->os);
	engy_anth_stream_free(&r->as);
	engy_resp_stream_free(&r->rs);
	engy_cmpl_stream_free(&r->cs);
	engy_api_stopper_free(&r->stopper);
	engy_sse_out_free(&r->cut);
	engy_sse_out_free(&r->out);
	free(r->relayed);
	free(r->body);
#if GW_REQ_SPARE
	if (g->n_req_spare < GW_REQ_SPARE) {
		r->next = g->req_spare;
		g->req_spare = r;
		g->n_req_spare++;
		return;
	}
#endif
	free(r);
}

void gw_req_spare_free(struct gw *g)
{
	struct gw_req *r;

	while ((r = g->req_spare)) {
		g->req_spare = r->next;
		free(r);
	}
	g->n_req_spare = 0;
}

/* engy_gw_requests_total{api,status}: the series found once, then
 * counted from a small table (a lookup by name was a request's cost). */
static void count_request(struct gw *g, const char *api, int status)
{
	struct engy_metric *m = NULL;
	char labels[64];
	unsigned i;

	for (i = 0; i < g->n_req_series; i++)
		if (g->req_series[i].api == api &&
		    g->req_series[i].status == status) {
			gw_madd(g, g->req_series[i].m, 1);
			return;
		}
	snprintf(labels, sizeof(labels), "api=\"%s\",status=\"%d\"", api,
		 status);
	if (g->h->metric(g->h, ENGY_METRIC_COUNTER, "engy_gw_requests_total",
			 "gateway events", labels, NULL, 0, &m) ||
	    !m)
		return;
	gw_madd(g, m, 1);
	if (g->n_req_series < GW_REQ_SERIES)
		g->req_series[g->n_req_series++] =
			(struct gw_req_series){ api, status, m };
}

void gw_req_finish(struct gw_req *r, int status, const char *reason)
{
	struct gw *g = r->g;
	unsigned long long tenths; /* total_ms to 0.1, without a float format */
	char qr[200];

	gw_relay_end(r);
	gw_relay_charge(r, status == 200);
	r->status = status;
	gw_relay_outcome(r, status, reason, &r->out_come);
	tenths = r->out_come.total_s > 0
			 ? (unsigned long long)(r->out_come.total_s * 1e4 + 0.5)
			 : 0;
	gw_store_key_release(r);
	if (r->sink && !r->sink_called) {
		r->sink_called = true;
		r->sink->done(r->sink_arg, &r->out_come, NULL);
	}
	count_request(g,
		      r->internal		  ? "internal"
		      : r->api == ENGY_API_OPENAI ? "openai"
						  : "anthropic",
		      status);
	if (r->miner[0] && r->out_come.ttft_ms && g->m_ttft)
		gw_mobserve(g, g->m_ttft, r->out_come.ttft_ms / 1e3);
	GW_LOG(g, ENGY_LOG_INFO,
	       "event=request_done request=%s status=%d api=%s stream=%d "
	       "attempts=%u miner=%s ttft_ms=%u tpot_ms=%u total_ms=%llu.%u "
	       "reason=%s",
	       r->request_id, status,
	       r->api == ENGY_API_OPENAI ? "openai" : "anthropic",
	       r->areq.stream, r->attempts, r->miner[0] ? r->miner : "-",
	       r->out_come.ttft_ms, r->out_come.tpot_ms, tenths / 10,
	       (unsigned)(tenths % 10),
	       (engy_logfmt_value(qr, sizeof(qr), reason ? reason : ""), qr));
	gw_store_settle(r, gw_req_free);
}

void gw_req_error(struct gw_req *r, int status, const char *msg)
{
	gw_reply_error(r, status, msg);
	gw_req_finish(r, status, msg);
}

/* ---- routed: attempts ------------------------------------------------- */

static void dispatch(struct gw_req *r)
{
	struct gw_worker *w;

	if (r->gone) {
		gw_req_finish(r, 499, "buyer left");
		return;
	}
	if (r->g->aborting) {
		r->aborted = true;
		gw_req_error(r, 503, "the gateway is shutting down; retry");
		return;
	}
	if (!r->attempts && gw_relay_prepare(r) < 0) {
		gw_req_error(r, 500, "out of memory");
		return;
	}
	r->state = GW_R_ROUTED;
	w = gw_route_pick(r->g, r);
	if (!w) {
		if (r->attempts)
			gw_req_error(
				r, r->status ? r->status : 502,
				"the worker failed to complete the request");
		else
			gw_req_error(r, 503,
				     "every worker serving this model is "
				     "busy or ineligible; retry shortly");
		return;
	}
	gw_relay_start(r, w);
}

void gw_req_abort_all(struct gw *g)
{
	struct gw_req *r, *next;
	unsigned n = 0;

	g->aborting = true;
	for (r = g->reqs; r; r = next) {
		next = r->next;
		if (r->state != GW_R_ROUTED || !r->w)
			continue;
		GW_LOG(g, ENGY_LOG_WARNING,
		       "event=request_aborted request=%s miner=%s "
		       "relayed_bytes=%zu reason=shutdown_timeout",
		       r->request_id, r->w->hotkey, r->relayed_bytes);
		gw_relay_cancel(r);
		r->aborted = true;
		gw_req_error(r, 503, "the gateway is shutting down; retry");
		n++;
	}
	GW_LOG(g, ENGY_LOG_WARNING, "event=shutdown_abort aborted=%u left=%u",
	       n, g->n_reqs);
}

/* An attempt failed (the observers know): another worker, or @status. */
static void attempt_failed(struct gw_req *r, int status, bool retry)
{
	struct gw *g = r->g;
	double left = r->deadline_s - gw_since(&r->t0);

	if (retry && !r->content_sent && !r->gone && !g->stopping &&
	    r->attempts < (unsigned)g->c->max_attempts && left > 1) {
		if (g->m_attempts)
			gw_madd(g, g->m_attempts, 1);
		/* The worker's failure stays on record (scoring) though
		 * another worker may answer. */
		if ((status == 502 || status == 504) && r->miner[0] &&
		    r->last_fault && r->n_failed_attempts < GW_MAX_ATTEMPTS) {
			struct gw_attempt_row *f =
				&r->failed_attempts[r->n_failed_attempts++];

			engy_strcopy(f->miner, sizeof(f->miner), r->miner);
			engy_strcopy(f->worker_name, sizeof(f->worker_name),
				     r->worker_name);
			f->status = status;
		}
		GW_LOG(g, ENGY_LOG_INFO,
		       "event=attempt_retry request=%s attempt=%u status=%d",
		       r->request_id, r->attempts, status);
		dispatch(r);
		return;
	}
	gw_req_error(r, status,
		     status == 504 ? "the worker did not answer in time"
		     : status == 500
			     ? "the gateway could not send the request"
			       " to a worker"
			     : "the worker failed to complete the request");
}

static void answered(struct gw_req *r)
{
	gw_req_finish(r, 200, NULL);
}

static const struct gw_relay_sink relay_sink = {
	.failed = attempt_failed,
	.answered = answered,
};

/* ---- before routing: the pool's two trips ----------------------------- */

static void reserved(struct gw_req *r)
{
	if (r->gone) {
		gw_req_finish(r, 499, "buyer left");
		return;
	}
	if (r->job_status) {
		gw_req_error(r, r->job_status, r->err);
		return;
	}
	dispatch(r);
}

static void checked(struct gw_req *r)
{
	if (r->gone) {
		gw_req_finish(r, 499, "buyer left");
		return;
	}
	if (r->job_status) {
		gw_req_error(r, r->job_status, r->err);
		return;
	}
	engy_strcopy(r->spec.name, sizeof(r->spec.name), r->areq.model);
	if (r->count_only) {
		if (gw_reply_count(r) < 0)
			gw_req_error(r, 500, "out of memory");
		else
			gw_req_finish(r, 200, "count_tokens");
		return;
	}
	if (gw_store_key_hold(r) < 0) {
		gw_req_error(r, 429,
			     "too many requests in flight for this API "
			     "key; retry when one has finished");
		return;
	}
	/* No worker: 503 at once, or 404 once the model is known not to
	 * exist (the reserve job looks it up, and reserves nothing). */
	r->no_worker = !gw_route_any(r->g, r->areq.model);
	/* Structured output or a forced tool call where workers serve the
	 * model but none enforces it: 400 (it would be only a hint). */
	if (!r->no_worker && r->areq.constraint &&
	    !gw_route_constrained(r->g, r->areq.model, r->areq.constraint)) {
		unsigned c = r->areq.constraint;

		gw_req_error(
			r, 400,
			(c & ENGY_API_CONS_TOPLP) &&
					!gw_route_constrained(
						r->g, r->areq.model,
						ENGY_API_CONS_TOPLP)
				? "top_logprobs: no worker serving this "
				  "model returns alternatives; ask "
				  "logprobs without top_logprobs"
			: !(c & ENGY_API_CONS_JSON)
				? "tool_choice: no worker serving this "
				  "model enforces forced tool calls "
				  "(constrained decoding); use \"auto\""
			: r->api == ENGY_API_OPENAI
				? "response_format: no worker serving this "
				  "model enforces structured outputs "
				  "(constrained decoding)"
				: "output_format: no worker serving this "
				  "model enforces structured outputs "
				  "(constrained decoding)");
		return;
	}
	gw_store_reserve(r, reserved);
}

void gw_req_start(struct gw_req *r)
{
	gw_store_check(r, checked);
}

void gw_req_gone(struct gw_req *r)
{
	r->gone = true;
	r->x = NULL;
	if (r->state != GW_R_ROUTED)
		return; /* a pool job will see it, or it is settling */
	gw_relay_cancel(r);
	gw_req_finish(r, 499, "buyer left");
}

int gw_submit(struct gw *g, const char *model, cJSON *body_take,
	      struct gw_worker *pin, bool is_probe, const struct gw_sink *s,
	      void *arg)
{
	const cJSON *mt;
	struct gw_req *r;

	if (!cJSON_IsObject(body_take) || !model || !s || !s->done) {
		cJSON_Delete(body_take);
		return -EINVAL;
	}
	r = gw_req_new(g);
	if (!r || !(r->areq.model = strdup(model))) {
		cJSON_Delete(body_take);
		if (r)
			gw_req_free(r);
		return -ENOMEM;
	}
	r->internal = true;
	r->is_probe = is_probe;
	r->pin = pin ? pin->id : 0;
	r->sink = s;
	r->sink_arg = arg;
	r->areq.body = body_take;
	r->areq.stream = true;
	mt = engy_json_get(body_take, "max_tokens");
	if (cJSON_IsNumber(mt) && mt->valuedouble >= 1) {
		r->areq.has_max_tokens = true;
		r->areq.max_tokens = (uint64_t)mt->valuedouble;
	}
	snprintf(r->spec.name, sizeof(r->spec.name), "%s", model);
	gw_store_reserve(r, reserved);
	return 0;
}

void gw_req_init(struct gw *g)
{
	g->relay_sink = &relay_sink;
}
