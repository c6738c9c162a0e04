/* SPDX-License-Identifier: MIT */
/*
 * One request on the serve: the /generate calls of a generation (chunked
 * with the one-token overlap, sgl_request.c), their responses parsed as
 * they arrive (SSE events or one JSON body, lib/sglang/sse.c + lib/sglang/sgl_resp.c),
 * kept tokens coalesced before on_tokens, cancel as /abort_request.
 *
 * Hidden rows go straight from the parser into g->rows at the slot of the
 * output token they belong to: element 0 of a call's hidden_states is the
 * prefill block, whose last row made the call's first token; element k is
 * the decode row that made token k.  A call that drops its first token
 * (the overlap) never converts element 0.  When a full radix-cache hit
 * leaves chunk 0's prefill block empty, output token 0 has no row: it is
 * folded into the prompt (specs/protocol.md §4), which on_tokens says by
 * handing it over alone with rows == NULL.
 *
 * Callbacks to the caller never run inside libcurl: kept tokens are
 * flushed from a timer, and a call's end is handled after
 * curl_multi_socket_action has returned (sgl_http.c).
 */
#include <errno.h>
#include <event2/event.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>

#include "logfmt.h"
#include "sgl.h"
#include "sgl_http.h"

void sgl_gen_fail(struct sgl_gen *g, int err, const char *fmt, ...)
{
	va_list ap;

	if (g->err)
		return;
	g->err = err;
	va_start(ap, fmt);
	vsnprintf(g->errmsg, sizeof(g->errmsg), fmt, ap);
	va_end(ap);
}

double sgl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void gen_free(struct sgl_gen *g)
{
	free(g->json_schema);
	if (g->call)
		sgl_call_cancel(g->call);
	if (g->abort_call)
		sgl_call_cancel(g->abort_call);
	if (g->flush_ev)
		event_free(g->flush_ev);
	if (g->done_ev)
		event_free(g->done_ev);
	engy_sglresp_free(g->jf);
	free(g->input);
	free(g->stop);
	free(g->out);
	free(g->lp);
	free(g->tid);
	free(g->tlp);
	free(g->rows);
	free(g->c_ids);
	free(g->c_lp);
	free(g->c_tid);
	free(g->c_tlp);
	free(g->errbody);
	free(g->gemm_member);
	free(g);
}

static void unlink_gen(struct sgl_gen *g)
{
	struct sgl *s = g->s;

	if (!g->pprev)
		return;
	*g->pprev = g->next;
	if (g->next)
		g->next->pprev = g->pprev;
	g->pprev = NULL;
	s->inflight--;
	g->serve->inflight--;
	if (s->m_inflight)
		s->host->metric_set(s->m_inflight, s->inflight);
}

/* The end: exactly one on_done (or prefill done), then the handle dies. */
static void gen_finish(struct sgl_gen *g, int finish, int32_t matched)
{
	struct sgl *s = g->s;
	struct engy_gen_result res = { 0 };
	struct engy_rows rows = { 0 };
	int64_t cached = g->cached < 0 ? 0 : g->cached;

	g->finishing = true;
	if (g->call) {
		sgl_call_cancel(g->call);
		g->call = NULL;
	}
	event_del(g->flush_ev);
	unlink_gen(g);
	if (g->err) {
		char why[sizeof(g->errmsg) * 2];

		finish = ENGY_FINISH_ERROR;
		if (s->m_errors)
			s->host->metric_add(s->m_errors, 1);
		engy_logfmt_value(why, sizeof(why), g->errmsg);
		engy_warn(s->host,
			  "event=sglang_failed rid=%s serve=%s "
			  "status=%d chunk=%u tokens=%zu error=%s",
			  g->rid, g->serve->url, g->err, g->chunk, g->n_out,
			  why);
	} else {
		engy_dbg(s->host,
			 "event=sglang_done rid=%s finish=%d "
			 "chunks=%u tokens=%zu cached=%lld",
			 g->rid, finish, g->chunk + 1, g->n_out,
			 (long long)cached);
	}
	if (g->prefill) {
		rows.data = g->rows;
		rows.dtype = ENGY_DTYPE_F32;
		rows.n_rows = (uint32_t)g->row_hi;
		rows.hidden = g->hidden_size;
		rows.n_prefill = rows.n_rows;
		g->prefill_done(g->arg,
				g->err	       ? g->err
				: g->cancelled ? -ECANCELED
					       : 0,
				g->err || g->cancelled ? NULL : &rows);
		gen_free(g);
		return;
	}
	res.status = g->err;
	res.error = g->err ? g->errmsg : NULL;
	res.finish = finish;
	res.matched_stop = finish == ENGY_FINISH_STOP ? matched : -1;
	res.prompt_tokens = (uint32_t)g->n_input;
	res.completion_tokens = (uint32_t)g->n_out;
	res.cached_tokens =
		(uint32_t)((size_t)cached > g->n_input ? g->n_input
						       : (size_t)cached);
	g->cb.on_done(g->arg, &res);
	gen_free(g);
}

/* Hand kept tokens over; rows of delivered tokens are dropped. */
static void flush(struct sgl_gen *g)
{
	size_t from, n, keep;
	struct engy_rows rows, *rp;

	while (g->delivered < g->n_out && !g->cancelled) {
		from = g->delivered;
		n = g->n_out - from;
		rp = NULL;
		if (g->hidden && g->fold && from == 0) {
			n = 1; /* folded into the prompt: no row */
		} else if (g->hidden) {
			rows.data = g->rows + (from - g->row0) * g->hidden_size;
			rows.dtype = ENGY_DTYPE_F32;
			rows.n_rows = (uint32_t)n;
			rows.hidden = g->hidden_size;
			rows.n_prefill = 0;
			rp = &rows;
		}
		g->delivered += n;
		if (g->top_n)
			g->on_top(g->arg, n, g->top_n, g->tid + from * g->top_n,
				  g->tlp + from * g->top_n);
		g->cb.on_tokens(g->arg, g->out + from, n, rp,
				g->logprobs ? g->lp + from : NULL);
	}
	if (g->delivered <= g->row0)
		return;
	keep = g->row_hi > g->delivered ? g->row_hi - g->delivered : 0;
	if (keep)
		memmove(g->rows,
			g->rows + (g->delivered - g->row0) * g->hidden_size,
			keep * g->hidden_size * sizeof(float));
	g->row0 = g->delivered;
	g->row_hi = g->row0 + keep;
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct sgl_gen *g = arg;

	g->flush_armed = false;
	flush(g);
}

void sgl_arm_flush(struct sgl_gen *g)
{
	double s = g->s->flush_s;
	struct timeval tv = { (time_t)s, (suseconds_t)((s - floor(s)) * 1e6) };

	if (g->flush_armed || g->delivered == g->n_out)
		return;
	if (!evtimer_add(g->flush_ev, &tv))
		g->flush_armed = true;
}

static void on_cancelled(evutil_socket_t fd, short what, void *arg)
{
	gen_finish(arg, ENGY_FINISH_ABORT, -1);
}

static int start_call(struct sgl_gen *g);

static void chunk_end(struct sgl_gen *g)
{
	int finish = ENGY_FINISH_STOP, rc;
	int32_t matched = -1;

	if (g->hidden && !g->c_hidden_seen) {
		sgl_gen_fail(g, -ENODATA, "%s", SGL_NO_HIDDEN_MSG);
		goto out;
	}
	if (g->prefill) {
		if (g->c_rows != g->n_input || g->row_hi != g->n_input)
			sgl_gen_fail(g, -EIO,
				     "serve returned %zu of %zu "
				     "prompt hidden rows (radix cache or "
				     "chunked prefill): start sglang with "
				     "--disable-radix-cache and a "
				     "--chunked-prefill-size above the "
				     "longest audit",
				     g->c_rows, g->n_input);
		goto out;
	}
	if (g->hidden && g->c_rows < g->c_nids) {
		sgl_gen_fail(g, -EPROTO,
			     "serve returned %zu hidden-state "
			     "rows for %zu tokens",
			     g->c_rows, g->c_nids);
		goto out;
	}
	if (sgl_ingest(g, true))
		goto out;
	if (g->c_finish == ENGY_SGLRESP_FINISH_ABORT) {
		sgl_gen_fail(g, -ECONNABORTED,
			     "serve aborted the request: "
			     "%s",
			     g->c_msg[0] ? g->c_msg : "no reason given");
		goto out;
	}
	if (g->c_finish == ENGY_SGLRESP_FINISH_LENGTH)
		finish = ENGY_FINISH_LENGTH;
	else if (g->c_matched >= 0 && g->c_matched <= INT32_MAX)
		matched = (int32_t)g->c_matched;
	flush(g);
	if (g->cancelled)
		return; /* on_tokens cancelled: its finish is queued */
	if (sgl_chunk_more(g->c_finish, g->c_nids, g->plan.ask, g->n_out,
			   g->max_new)) {
		g->chunk++;
		rc = start_call(g);
		if (rc == 0)
			return;
		if (rc < 0)
			sgl_gen_fail(g, rc,
				     "could not start the next chunk (%s)",
				     strerror(-rc));
	}
out:
	gen_finish(g, finish, matched);
}

static void on_call_done(void *arg, int code, long status)
{
	struct sgl_gen *g = arg;

	g->call = NULL;
	/* A stream cut after its final event lost nothing. */
	if (code && status == 200 && g->sse_mode && g->have_final)
		code = 0;
	if (!g->err && (code || status != 200))
		sgl_resp_failed(g, code, status);
	else if (!g->err)
		sgl_resp_end(g);
	if (g->err)
		gen_finish(g, ENGY_FINISH_ERROR, -1);
	else
		chunk_end(g);
}

static const struct sgl_call_cb gen_call_cb = { sgl_resp_data, on_call_done };

/* Start the next /generate call; 1 when nothing is left to ask. */
static int start_call(struct sgl_gen *g)
{
	struct sgl *s = g->s;
	struct sgl_call_spec spec = { 0 };
	struct sgl_req r = { 0 };
	char url[1024];
	double left;

	if (g->prefill) {
		g->plan.feed_out = 0;
		g->plan.ask = 1;
		g->plan.drop = 0;
	} else if (sgl_plan_chunk(g->n_out, g->max_new,
				  /* a grammar restarts with each call:
				   * constrained, one call */
				  g->json_schema || g->gemm ? UINT32_MAX
							    : s->gen_chunk,
				  g->sp.temperature == 0, &g->plan)) {
		return 1;
	}
	left = g->deadline - sgl_now();
	if (left <= 0) {
		sgl_gen_fail(g, -ETIMEDOUT,
			     "serve timed out (max_request_s %g)",
			     s->max_request_s);
		return -ETIMEDOUT;
	}
	if (g->chunk)
		snprintf(g->call_rid, sizeof(g->call_rid), "%s-c%u", g->rid,
			 g->chunk);
	else
		snprintf(g->call_rid, sizeof(g->call_rid), "%s", g->rid);
	spec.prompt = g->input;
	spec.n_prompt = g->n_input;
	spec.out = g->out;
	spec.n_out = g->plan.feed_out;
	spec.ask = g->plan.ask;
	spec.sp = &g->sp;
	spec.rid = g->call_rid;
	spec.stream = s->stream && !g->prefill;
	spec.hidden = g->hidden;
	spec.logprob = g->logprobs || !g->prefill;
	spec.top_n = g->prefill ? 0 : g->top_n;
	spec.all_positions = g->prefill;
	spec.gemm_trace = g->gemm;
	r.body = sgl_body_generate(&spec, &r.len);
	if (!r.body)
		return -ENOMEM;
	g->c_base = g->n_out;
	sgl_resp_begin(g);
	snprintf(url, sizeof(url), "%s/generate", g->serve->url);
	r.url = url;
	r.timeout_s =
		(s->serve_http_s > 0 ? s->serve_http_s : left) + s->connect_s;
	r.connect_s = s->connect_s;
	r.api_key = s->api_key;
	if (s->m_calls)
		s->host->metric_add(s->m_calls, 1);
	return sgl_call_start(s->http, &r, &gen_call_cb, g, &g->call);
}

/*
 * A cancelled request ends when the serve has been told: on_done waits
 * for the /abort_request answer, so in-flight counts (and a draining
 * shutdown) cover the serve's slot until it is released.
 */
static void on_abort_done(void *arg, int code, long status)
{
	struct sgl_gen *g = arg;

	g->abort_call = NULL;
	if (code || status != 200)
		engy_warn(g->s->host,
			  "event=sglang_abort_failed rid=%s "
			  "code=%d status=%ld",
			  g->call_rid, code, status);
	gen_finish(g, ENGY_FINISH_ABORT, -1);
}

static const struct sgl_call_cb abort_cb = { NULL, on_abort_done };

static int send_abort(struct sgl_gen *g)
{
	struct sgl *s = g->s;
	struct sgl_req r = { 0 };
	char url[1024];

	r.body = sgl_body_abort(g->call_rid, &r.len);
	if (!r.body)
		return -ENOMEM;
	snprintf(url, sizeof(url), "%s/abort_request", g->serve->url);
	r.url = url;
	r.timeout_s = s->connect_s + 5;
	r.connect_s = s->connect_s;
	r.api_key = s->api_key;
	return sgl_call_start(s->http, &r, &abort_cb, g, &g->abort_call);
}

void sgl_cancel(struct sgl_gen *g)
{
	if (g->cancelled || g->finishing)
		return;
	g->cancelled = true;
	event_del(g->flush_ev);
	if (g->call) {
		sgl_call_cancel(g->call);
		g->call = NULL;
		if (!send_abort(g))
			return;
		engy_warn(g->s->host, "event=sglang_abort_failed rid=%s",
			  g->call_rid);
	}
	/* Not inside the caller's cancel(): on the next loop turn. */
	event_active(g->done_ev, EV_TIMEOUT, 0);
}

void sgl_gen_drop(struct sgl_gen *g)
{
	unlink_gen(g);
	gen_free(g);
}

static struct sgl_serve *pick_serve(struct sgl *s)
{
	struct sgl_serve *best = NULL, *v;
	size_t i;

	for (i = 0; i < s->n_serves; i++) {
		v = &s->serves[(s->rr + i) % s->n_serves];
		if (!best || v->inflight < best->inflight)
			best = v;
	}
	s->rr++;
	return best;
}

static void random_rid(char *rid, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t b[16];
	size_t i;

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		uint64_t x = (uint64_t)(sgl_now() * 1e9) ^ (uintptr_t)rid;

		for (i = 0; i < sizeof(b); i++) {
			x = x * 6364136223846793005ull + 1;
			b[i] = (uint8_t)(x >> 56);
		}
	}
	/* Fixed length: no rid of ours is a prefix of another. */
	memcpy(rid, "engy-", 5);
	for (i = 0; i < sizeof(b) && 6 + 2 * i < cap; i++) {
		rid[5 + 2 * i] = hex[b[i] >> 4];
		rid[6 + 2 * i] = hex[b[i] & 15];
	}
	rid[5 + 2 * i] = '\0';
}

static struct sgl_gen *gen_new(struct sgl *s, const uint32_t *ids, size_t n)
{
	struct sgl_gen *g = calloc(1, sizeof(*g));
	struct engy_sglresp_opts o = { 0 };

	if (!g)
		return NULL;
	g->s = s;
	g->cached = -1;
	g->input = malloc(n * sizeof(*ids));
	g->flush_ev = evtimer_new(s->base, on_flush, g);
	g->done_ev = evtimer_new(s->base, on_cancelled, g);
	if (!g->input || !g->flush_ev || !g->done_ev ||
	    engy_sglresp_new(&o, &g->jf)) {
		gen_free(g);
		return NULL;
	}
	memcpy(g->input, ids, n * sizeof(*ids));
	g->n_input = n;
	g->deadline = sgl_now() + s->max_request_s;
	return g;
}

static int gen_launch(struct sgl *s, struct sgl_gen *g, struct sgl_gen **out)
{
	int rc;

	g->serve = pick_serve(s);
	rc = start_call(g);
	if (rc) {
		gen_free(g);
		return rc < 0 ? rc : -EINVAL;
	}
	g->next = s->gens;
	if (g->next)
		g->next->pprev = &g->next;
	s->gens = g;
	g->pprev = &s->gens;
	s->inflight++;
	g->serve->inflight++;
	if (s->m_requests)
		s->host->metric_add(s->m_requests, 1);
	if (s->m_inflight)
		s->host->metric_set(s->m_inflight, s->inflight);
	*out = g;
	return 0;
}

int sgl_generate(struct sgl *s, const struct engy_gen_params *p,
		 const struct engy_gen_cb *cb, void *arg, struct sgl_gen **out)
{
	struct engy_gen_params q = { 0 };
	struct sgl_gen *g;

	*out = NULL;
	memcpy(&q, p, p->size < sizeof(q) ? p->size : sizeof(q));
	if (p->size < ENGY_GEN_PARAMS_SIZE_1_4) { /* 1.3: that was padding */
		q.top_logprobs = 0;
		q.on_top_logprobs = NULL;
		q.gemm_trace = false;
	}
	if (q.top_logprobs > ENGY_TOP_LOGPROBS_MAX)
		return -EINVAL;
	if (!q.on_top_logprobs)
		q.top_logprobs = 0;
	if (!s->started || s->stopped)
		return s->stopped ? -ESHUTDOWN : -EAGAIN;
	if (!cb || !cb->on_tokens || !cb->on_done || !q.input_ids ||
	    !q.n_input || q.n_input > ((size_t)1 << 24) || !q.max_new_tokens ||
	    !(q.temperature >= 0) || isnan(q.top_p) || q.top_p < 0 ||
	    (q.n_stop && !q.stop_ids) || (q.rid && !sgl_rid_ok(q.rid)))
		return -EINVAL;
	if (s->inflight >= s->max_inflight)
		return -EBUSY;
	g = gen_new(s, q.input_ids, q.n_input);
	if (!g)
		return -ENOMEM;
	g->max_new = q.max_new_tokens;
	g->sp.temperature = q.temperature < 1e-6 ? 0 : q.temperature;
	g->sp.top_p = q.top_p;
	g->sp.top_k = q.top_k;
	g->sp.seed = q.seed;
	g->sp.has_seed = q.has_seed;
	g->sp.ignore_eos = q.ignore_eos;
	if (q.n_stop) {
		g->stop = malloc(q.n_stop * sizeof(*g->stop));
		if (!g->stop) {
			gen_free(g);
			return -ENOMEM;
		}
		memcpy(g->stop, q.stop_ids, q.n_stop * sizeof(*g->stop));
		g->sp.stop = g->stop;
		g->sp.n_stop = q.n_stop;
	}
	if (p->size >= offsetof(struct engy_gen_params, cons_suffix) +
			       sizeof(q.cons_suffix) &&
	    q.cons_schema) {
		/* sglang's json_schema has no literal text around it */
		if ((q.cons_prefix && q.cons_prefix[0]) ||
		    (q.cons_suffix && q.cons_suffix[0])) {
			gen_free(g);
			return -EOPNOTSUPP;
		}
		g->json_schema =
			strdup(q.cons_schema[0] ? q.cons_schema
						: "{\"type\":\"object\"}");
		if (!g->json_schema) {
			gen_free(g);
			return -ENOMEM;
		}
		g->sp.json_schema = g->json_schema;
	}
	g->hidden = q.return_hidden;
	g->logprobs = q.return_logprobs;
	g->top_n = q.top_logprobs;
	g->on_top = q.on_top_logprobs;
	/* A trace covers one call: a traced generation is never cut. */
	g->gemm = s->gemm_on && q.gemm_trace;
	g->cb = *cb;
	g->arg = arg;
	if (q.rid)
		snprintf(g->rid, sizeof(g->rid), "%s", q.rid);
	else
		random_rid(g->rid, sizeof(g->rid));
	return gen_launch(s, g, out);
}

int sgl_prefill(struct sgl *s, const uint32_t *ids, size_t n,
		void (*done)(void *arg, int rc, const struct engy_rows *rows),
		void *arg, struct sgl_gen **out)
{
	struct sgl_gen *g;

	*out = NULL;
	if (!s->started || s->stopped)
		return s->stopped ? -ESHUTDOWN : -EAGAIN;
	if (!done || !ids || !n || n > ((size_t)1 << 24))
		return -EINVAL;
	if (s->inflight >= s->max_inflight)
		return -EBUSY;
	g = gen_new(s, ids, n);
	if (!g)
		return -ENOMEM;
	g->prefill = true;
	g->hidden = true;
	g->max_new = 1;
	g->prefill_done = done;
	g->arg = arg;
	random_rid(g->rid, sizeof(g->rid));
	return gen_launch(s, g, out);
}
