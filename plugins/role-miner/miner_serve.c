/* SPDX-License-Identifier: MIT */
/*
 * One routed request, from `serve` to `response` (specs/protocol.md §2-5):
 *
 *   PREP  (pool)  render the chat body with the checkpoint's template and
 *                 tokenize it locally;
 *   GEN   (loop)  check the limits, generate on the backend with an
 *                 explicit rid and hidden states, keep the ids and rows
 *                 (as bf16: exactly what the proof reads), and when the
 *                 gateway asked for a stream, send the parsed content as
 *                 `chunk` frames at most every stream_flush_s;
 *   PROVE (pool)  run every proof plugin over the rows, parse the whole
 *                 generation (reasoning, tool calls, finish_reason), and
 *                 build the `response` frame.
 *
 * This file holds the frames, PREP, GEN and the end of a request; the
 * chunks are miner_stream.c's, PROVE is miner_prove.c's.
 *
 * A `cancel` wins in every state: the backend request is aborted, the
 * pool's result is dropped, and nothing more is sent for the corr_id.
 * Every failure is an error `response` (commitment null), never a dead
 * leg.  A backend may call back from inside generate() or cancel(); `busy`
 * defers the end of a request until that call has returned.  Nothing of a
 * prompt or a completion is ever logged.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include <engy/plugin.h>

#include "bf16.h"
#include "chat_template.h"
#include "constrain.h"
#include "grow.h"
#include "logfmt.h"
#include "miner_gemm.h"
#include "miner_req.h"
#include "tokenizer.h"

static void log_done(struct mreq *r, const char *outcome)
{
	char cid[ENGY_GW_MAX_CORR_ID * 4 + 8];

	engy_logfmt_value(cid, sizeof(cid), r->corr_id);
	MLOG(r->m, ENGY_LOG_INFO,
	     "event=request_done corr_id=%s rid=%s outcome=%s "
	     "prompt_tokens=%zu "
	     "completion_tokens=%zu chunks=%u tokenize_ms=%.1f ttft_ms=%.1f "
	     "gen_ms=%.1f prove_ms=%.1f total_ms=%.1f",
	     cid, r->rid, outcome, r->n_prompt, r->n_out, r->chunks,
	     r->tok_s * 1e3, r->ttft_s * 1e3, r->gen_s * 1e3, r->prove_s * 1e3,
	     miner_since(&r->t0) * 1e3);
}

static void req_free(struct mreq *r)
{
	if (r->flush_ev)
		event_free(r->flush_ev);
	if (r->deadline_ev)
		event_free(r->deadline_ev);
	if (r->stop_ev)
		event_free(r->stop_ev);
	free(r->text);
	engy_genstream_free(r->gs);
	cJSON_Delete(r->body);
	free(r->corr_id);
	free(r->prompt);
	free(r->cons_schema);
	free(r->out);
	free(r->gemm);
	free(r->lp);
	free(r->tlp_ids);
	free(r->tlp_lp);
	free(r->rows);
	free(r->pc);
	free(r->pr);
	free(r->frame);
	free(r);
}

/* The gateway's slot for @corr_id is free again (specs/protocol.md §2). */
static void send_cancelled(struct miner *m, struct engy_ws_conn *conn,
			   const char *corr_id)
{
	size_t len = 0;
	char *s = engy_miner_cancelled_json(corr_id, &len);

	if (s)
		miner_send(m, conn, s, len);
}

void mreq_end(struct mreq *r, const char *outcome)
{
	struct miner *m = r->m;

	*r->pprev = r->next;
	if (r->next)
		r->next->pprev = r->pprev;
	if (--m->inflight == 0)
		clock_gettime(CLOCK_MONOTONIC, &m->idle_since);
	if (m->m_inflight)
		m->h->metric_set(m->m_inflight, m->inflight);
	if (m->m_tokens)
		m->h->metric_add(m->m_tokens, (double)r->n_out);
	miner_count(m, outcome);
	log_done(r, outcome);
	if (r->cancelled && r->conn && strcmp(outcome, "cancelled") == 0)
		send_cancelled(m, r->conn, r->corr_id);
	req_free(r);
}

void miner_reply_error(struct miner *m, struct engy_ws_conn *conn,
		       const char *corr_id, const char *request_id,
		       const char *error)
{
	char rid[33];
	size_t len = 0;
	char *s;

	if (!request_id) {
		engy_hex_id(rid, 16);
		request_id = rid;
	}
	s = engy_miner_error_json(corr_id, request_id, error, &len);
	miner_send(m, conn, s, len);
}

void mreq_fail(struct mreq *r, const char *fmt, ...)
{
	char msg[512], q[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->cancelled) {
		mreq_end(r, r->outcome);
		return;
	}
	/* Reasons name fields and limits, never message text. */
	engy_logfmt_value(q, sizeof(q), msg);
	MLOG(r->m, ENGY_LOG_INFO, "event=request_error rid=%s reason=%s",
	     r->rid, q);
	miner_reply_error(r->m, r->conn, r->corr_id, r->request_id, msg);
	mreq_end(r, "error");
}

/* ---- the backend's callbacks ---- */

static void add_rows(struct mreq *r, const struct engy_rows *rows, size_t n)
{
	size_t skip = rows->n_prefill, take, i, k, cap;

	take = rows->n_rows > skip ? rows->n_rows - skip : 0;
	if (take > n)
		take = n;
	if (take < n || !rows->data || !rows->hidden ||
	    (r->hidden && rows->hidden != r->hidden) ||
	    (rows->dtype != ENGY_DTYPE_F32 && rows->dtype != ENGY_DTYPE_BF16)) {
		r->rows_bad = true;
		return;
	}
	r->hidden = rows->hidden;
	cap = r->cap_rows * r->hidden;
	if (!engy_grow((void **)&r->rows, &cap, (r->n_rows + take) * r->hidden,
		       sizeof(*r->rows))) {
		r->rows_bad = true;
		return;
	}
	r->cap_rows = cap / r->hidden;
	for (i = 0; i < take; i++) {
		uint16_t *dst = r->rows + (r->n_rows + i) * r->hidden;
		size_t at = (skip + i) * r->hidden;

		if (rows->dtype == ENGY_DTYPE_BF16) {
			memcpy(dst, (const uint16_t *)rows->data + at,
			       r->hidden * sizeof(*dst));
			continue;
		}
		for (k = 0; k < r->hidden; k++)
			dst[k] = engy_bf16_from_f32(
				((const float *)rows->data)[at + k]);
	}
	r->n_rows += take;
}

static void on_tokens(void *arg, const uint32_t *ids, size_t n,
		      const struct engy_rows *rows, const float *logprobs)
{
	struct mreq *r = arg;

	if (!n || r->done || r->cancelled)
		return;
	if (!r->n_out) {
		r->ttft_s = miner_since(&r->t0);
		if (r->m->m_ttft)
			r->m->h->metric_observe(r->m->m_ttft, r->ttft_s);
	}
	if (!engy_grow((void **)&r->out, &r->cap_out, r->n_out + n,
		       sizeof(*r->out))) {
		r->rows_bad = true;
		return;
	}
	/* Output token 0 without a row: a full radix-cache hit; it joins
	 * the prompt the proof is checked against (specs/protocol.md §4). */
	if (rows)
		add_rows(r, rows, n);
	else if (!r->n_out && n == 1)
		r->n_fold = 1;
	else
		r->rows_bad = true;
	if (r->p.logprobs) {
		size_t k;

		if (!engy_grow((void **)&r->lp, &r->cap_lp, r->n_out + n,
			       sizeof(*r->lp))) {
			r->rows_bad = true;
			return;
		}
		for (k = 0; k < n; k++)
			r->lp[r->n_out + k] = logprobs ? logprobs[k] : NAN;
	}
	memcpy(r->out + r->n_out, ids, n * sizeof(*ids));
	r->n_out += n;
	/* A stop string: cancel from the loop, not inside the backend's
	 * callback. */
	if ((r->stream || r->n_stop_str) && mreq_text(r, false) && r->stop_ev)
		event_active(r->stop_ev, 0, 0);
}

/* The alternatives of the ids on_tokens gets next: kept at n_out. */
static void on_top(void *arg, size_t n, uint32_t k, const uint32_t *ids,
		   const float *lps)
{
	struct mreq *r = arg;
	size_t K = r->p.top_logprobs, i, j, at;

	if (!n || r->done || r->cancelled || !K)
		return;
	at = r->n_out;
	if (!engy_grow((void **)&r->tlp_ids, &r->cap_tlp_ids, (at + n) * K,
		       sizeof(*r->tlp_ids)) ||
	    !engy_grow((void **)&r->tlp_lp, &r->cap_tlp_lp, (at + n) * K,
		       sizeof(*r->tlp_lp))) {
		r->rows_bad = true;
		return;
	}
	/* fewer than asked (a small vocabulary): NaN marks the rest */
	for (i = 0; i < n; i++)
		for (j = 0; j < K; j++) {
			r->tlp_ids[(at + i) * K + j] =
				j < k ? ids[i * k + j] : 0;
			r->tlp_lp[(at + i) * K + j] =
				j < k ? lps[i * k + j] : NAN;
		}
	r->n_tlp = at + n;
}

static void finish_gen(struct mreq *r);

static void on_done(void *arg, const struct engy_gen_result *res)
{
	struct mreq *r = arg;

	if (r->done)
		return;
	r->done = true;
	/* The trace's member, while the handle lives (only a request that
	 * ended well answers with a commitment). */
	if (r->gemm_on && r->g && res->status == 0 &&
	    res->finish != ENGY_FINISH_ERROR) {
		r->gemm = r->m->b->gemm_commit(r->m->bi, r->g);
		if (r->gemm)
			miner_gemm_keep(r->m, r->request_id, r->gemm);
	}
	r->g = NULL;
	r->res = *res;
	snprintf(r->res_err, sizeof(r->res_err), "%s",
		 res->error ? res->error : "");
	r->res.error = NULL;
	if (!r->busy)
		finish_gen(r);
}

static void leave(struct mreq *r)
{
	if (--r->busy == 0 && r->done)
		finish_gen(r);
}

static void cancel_backend(struct mreq *r)
{
	if (r->state != MR_GEN || !r->g || r->done)
		return;
	r->busy++;
	r->m->b->cancel(r->m->bi, r->g);
	leave(r);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct mreq *r = arg;

	r->timed_out = true;
	MLOG(r->m, ENGY_LOG_WARNING,
	     "event=request_deadline rid=%s state=%d "
	     "max_request_s=%g",
	     r->rid, r->state, r->m->c->max_request_s);
	cancel_backend(r);
}

#define NO_ROWS                                                                \
	"the serve returned no hidden states for the generated "               \
	"tokens: start sglang with --enable-return-hidden-states (check: "     \
	"curl "                                                                \
	"-s SERVE/generate -d '{\"text\":\"hi\",\"sampling_params\":"          \
	"{\"max_new_tokens\":2},\"return_hidden_states\":true}' | grep "       \
	"hidden_states)"

static void finish_gen(struct mreq *r)
{
	struct miner *m = r->m;

	if (r->deadline_ev)
		evtimer_del(r->deadline_ev);
	r->gen_s = miner_since(&r->t_gen);
	if (r->cancelled || miner_loop_over(m)) {
		mreq_end(r, r->cancelled ? r->outcome : "shutdown");
		return;
	}
	if (r->timed_out) {
		mreq_fail(r, "the request ran past max_request_s (%g s)",
			  m->c->max_request_s);
		return;
	}
	/* A stop string ended it, whatever the backend says after. */
	if (r->stop_hit && r->res.status >= 0 &&
	    r->res.finish != ENGY_FINISH_ERROR) {
		r->res.finish = ENGY_FINISH_STOP;
		r->res.matched_stop = -1;
	}
	if (r->res.status < 0 || r->res.finish == ENGY_FINISH_ERROR) {
		mreq_fail(r, "backend error: %s",
			  r->res_err[0]
				  ? r->res_err
				  : strerror(r->res.status < 0 ? -r->res.status
							       : EIO));
		return;
	}
	if (r->res.finish == ENGY_FINISH_ABORT) {
		mreq_fail(r, "backend error: the generation was aborted");
		return;
	}
	if (r->rows_bad || r->n_rows + r->n_fold != r->n_out) {
		mreq_fail(r, NO_ROWS);
		return;
	}
	if (!r->n_rows) {
		mreq_fail(r, "backend error: no token was generated");
		return;
	}
	if (r->stream || r->n_stop_str)
		mreq_text(r, true);
	if (r->stream)
		mreq_flush(r);
	mreq_prove(r);
}

/* ---- PREP ---- */

/*
 * The body's output constraint (specs/miner.md "Constrained decoding"):
 * a forced tool call (tool_choice "required" or named; the Qwen3 hermes
 * template's <tool_call> JSON), else response_format json_object or
 * json_schema.  0 when there is none or it is set; -EOPNOTSUPP when this
 * worker does not enforce it (the gateway routes by the hello).
 */
static int constraint_of(struct mreq *r)
{
	const cJSON *rf =
		cJSON_GetObjectItemCaseSensitive(r->body, "response_format");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(rf, "type");
	const char *only;
	cJSON *s;

	if (engy_cons_tool_choice(r->body, &only)) {
		if (!(r->m->constraints & MINER_CONS_TOOL))
			return -EOPNOTSUPP;
		s = engy_cons_tool_schema(
			cJSON_GetObjectItemCaseSensitive(r->body, "tools"),
			only);
		r->cons_schema = s ? cJSON_PrintUnformatted(s) : NULL;
		cJSON_Delete(s);
		r->cons_prefix = "<tool_call>\n";
		r->cons_suffix = "\n</tool_call>";
		return r->cons_schema ? 0 : -ENOMEM;
	}
	if (!cJSON_IsString(t) || strcmp(t->valuestring, "text") == 0)
		return 0;
	if (!(r->m->constraints & MINER_CONS_JSON))
		return -EOPNOTSUPP;
	s = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(rf, "json_schema"), "schema");
	r->cons_schema = s ? cJSON_PrintUnformatted(s) : strdup("");
	return r->cons_schema ? 0 : -ENOMEM;
}

/* Pool thread: the body and the tokenizer are read-only here. */
static void prep_fn(void *arg)
{
	struct mreq *r = arg;
	struct miner *m = r->m;
	struct engy_chat_opts o = { .variant = m->variant,
				    .enable_thinking = -1 };
	struct timespec t0;
	char err[300], *text = NULL;
	size_t len = 0;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (r->p.top_logprobs && !(r->m->constraints & MINER_CONS_TOPLP)) {
		snprintf(r->err, sizeof(r->err),
			 "this worker's backend returns no top_logprobs");
		r->prep_rc = -EOPNOTSUPP;
		return;
	}
	rc = constraint_of(r);
	if (rc < 0) {
		snprintf(r->err, sizeof(r->err), "%s",
			 rc == -ENOMEM ? "out of memory"
				       : "this worker does not enforce the "
					 "request's output constraint");
		r->prep_rc = rc;
		return;
	}
	/* A constrained output starts at once: no thinking block. */
	if (r->cons_schema)
		o.enable_thinking = 0;
	rc = engy_chat_render(r->body, &o, &text, &len, &r->ci, err,
			      sizeof(err));
	if (rc < 0) {
		snprintf(r->err, sizeof(r->err), "invalid request: %s",
			 rc == -ENOMEM ? "out of memory" : err);
	} else {
		rc = engy_tokenizer_encode(m->tok, text, len, &r->prompt,
					   &r->n_prompt);
		if (rc < 0)
			snprintf(r->err, sizeof(r->err),
				 "the prompt could not be "
				 "tokenized: %s",
				 strerror(-rc));
		else if (!r->n_prompt)
			rc = -EINVAL;
	}
	free(text);
	r->prep_rc = rc;
	r->tok_s = miner_since(&t0);
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
	cancel_backend(arg);
}

/* Stop strings that are one token stop as ids at the backend; every one
 * is matched in the decoded text (sglang's semantics: the text ends
 * before the match, the ids generated stay in the commitment). */
static int stop_ids(struct mreq *r)
{
	struct miner *m = r->m;
	uint32_t *ids;
	size_t i, n, len;

	for (i = 0; i < m->n_stop && r->n_stop < MAX_STOP; i++)
		r->stop[r->n_stop++] = m->stop_ids[i];
	for (i = 0; i < r->p.n_stop; i++) {
		len = strlen(r->p.stop[i]);
		ids = NULL;
		if (!len)
			continue;
		/* One token: a stop id at the backend as well, for the
		 * sampled token itself; the text match catches it inside
		 * longer tokens. */
		if (engy_tokenizer_encode(m->tok, r->p.stop[i], len, &ids,
					  &n) == 0 &&
		    n == 1 && r->n_stop < MAX_STOP) {
			r->stop_of[r->n_stop] = r->p.stop[i];
			r->stop[r->n_stop++] = ids[0];
		}
		r->stop_str[r->n_stop_str++] = r->p.stop[i];
		if (len > r->stop_max)
			r->stop_max = len;
		free(ids);
	}
	if (r->n_stop_str &&
	    !(r->stop_ev = evtimer_new(m->h->evbase(m->h), on_stop, r)))
		return -ENOMEM;
	return 0;
}

static const char *check_limits(struct mreq *r, char *msg, size_t n)
{
	const struct miner_conf *c = r->m->c;
	uint64_t ctx = r->m->info.max_context, want;

	if ((int64_t)r->n_prompt > c->max_input_tokens) {
		snprintf(msg, n,
			 "the prompt is %zu tokens, over max_input_tokens "
			 "(%lld)",
			 r->n_prompt, (long long)c->max_input_tokens);
		return msg;
	}
	if (ctx && r->n_prompt >= ctx) {
		snprintf(
			msg, n,
			"the prompt is %zu tokens; the model's context is %llu",
			r->n_prompt, (unsigned long long)ctx);
		return msg;
	}
	want = r->p.has_max_tokens ? r->p.max_tokens : (uint64_t)c->max_tokens;
	if (want > (uint64_t)c->max_output_tokens)
		want = (uint64_t)c->max_output_tokens;
	if (ctx && r->n_prompt + want > ctx)
		want = ctx - r->n_prompt;
	r->max_new = (uint32_t)want;
	return NULL;
}

static void prep_done(void *arg, int rc)
{
	static const struct engy_gen_cb cb = { on_tokens, on_done };
	struct mreq *r = arg;
	struct miner *m = r->m;
	struct engy_gen_params gp = { .size = sizeof(gp) };
	const char *bad;
	char msg[200];

	if (r->cancelled || rc < 0 || miner_loop_over(m)) {
		mreq_end(r, r->cancelled ? r->outcome : "shutdown");
		return;
	}
	if (r->timed_out) {
		mreq_fail(r, "the request ran past max_request_s (%g s)",
			  m->c->max_request_s);
		return;
	}
	if (r->prep_rc) {
		mreq_fail(r, "%s", r->err[0] ? r->err : "the prompt is empty");
		return;
	}
	if (m->m_prompt)
		m->h->metric_add(m->m_prompt, (double)r->n_prompt);
	if ((bad = check_limits(r, msg, sizeof(msg)))) {
		mreq_fail(r, "%s", bad);
		return;
	}
	if ((r->stream && mreq_stream_start(r) < 0) || stop_ids(r) < 0) {
		mreq_fail(r, "out of memory");
		return;
	}
	gp.input_ids = r->prompt;
	gp.n_input = r->n_prompt;
	gp.max_new_tokens = r->max_new;
	gp.temperature = r->p.temperature;
	gp.top_p = r->p.top_p;
	gp.top_k = r->p.top_k;
	gp.seed = r->p.seed;
	gp.has_seed = r->p.has_seed;
	gp.return_hidden = true;
	gp.return_logprobs = true;
	gp.stop_ids = r->stop;
	gp.n_stop = r->n_stop;
	gp.rid = r->rid;
	gp.cons_schema = r->cons_schema;
	gp.cons_prefix = r->cons_prefix;
	gp.cons_suffix = r->cons_suffix;
	gp.top_logprobs = r->p.top_logprobs;
	gp.on_top_logprobs = r->p.top_logprobs ? on_top : NULL;
	gp.gemm_trace = r->gemm_on = miner_gemm_on(m);
	r->state = MR_GEN;
	clock_gettime(CLOCK_MONOTONIC, &r->t_gen);
	r->t_flush = r->t_gen;
	r->busy++;
	rc = m->b->generate(m->bi, &gp, &cb, r, &r->g);
	if (rc < 0 && !r->done) {
		r->done = true;
		r->res.status = rc;
		r->res.finish = ENGY_FINISH_ERROR;
		snprintf(r->res_err, sizeof(r->res_err), "generate failed: %s",
			 strerror(-rc));
	}
	leave(r);
}

/* ---- the frames ---- */

static struct mreq *find(struct miner *m, struct engy_ws_conn *conn,
			 const char *corr_id)
{
	struct mreq *r;

	for (r = m->reqs; r; r = r->next)
		if (r->conn == conn && strcmp(r->corr_id, corr_id) == 0)
			return r;
	return NULL;
}

void miner_serve(struct mleg *leg, struct engy_gw_frame *f)
{
	struct miner *m = leg->m;
	struct engy_ws_conn *conn = leg->conn;
	struct timeval tv;
	char msg[200], cid[ENGY_GW_MAX_CORR_ID * 4 + 8];
	const char *rq = NULL;
	struct mreq *r;
	cJSON *j;

	j = f->request ? cJSON_GetObjectItemCaseSensitive(f->request,
							  "engy_request_id")
		       : NULL;
	if (cJSON_IsString(j) && j->valuestring[0] &&
	    strlen(j->valuestring) <= ENGY_GW_MAX_REQUEST_ID)
		rq = j->valuestring;
	engy_logfmt_value(cid, sizeof(cid), f->corr_id);
	if (find(m, conn, f->corr_id)) {
		MLOG(m, ENGY_LOG_WARNING,
		     "event=serve_duplicate leg=%u "
		     "corr_id=%s",
		     leg->idx, cid);
		return;
	}
	if (m->stopping || f->bad || m->inflight >= m->cap.max_inflight_total) {
		if (m->stopping || f->bad)
			snprintf(msg, sizeof(msg), "%s",
				 f->bad ? f->bad
					: "the miner is shutting down");
		else
			snprintf(msg, sizeof(msg),
				 "the miner is at capacity "
				 "(max_inflight_total %u)",
				 m->cap.max_inflight_total);
		MLOG(m, ENGY_LOG_INFO,
		     "event=serve_refused leg=%u corr_id=%s "
		     "reason=\"%s\"",
		     leg->idx, cid, msg);
		miner_count(m, "refused");
		miner_reply_error(m, conn, f->corr_id, rq, msg);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r || !(r->corr_id = strdup(f->corr_id))) {
		free(r);
		miner_reply_error(m, conn, f->corr_id, rq, "out of memory");
		return;
	}
	r->m = m;
	r->conn = conn;
	r->leg = leg->idx;
	r->stream = f->stream;
	r->state = MR_PREP;
	r->outcome = "cancelled";
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	r->body = cJSON_DetachItemFromObjectCaseSensitive(f->root, "request");
	f->request = NULL;
	memcpy(r->rid, "engy-", 5);
	engy_hex_id(r->rid + 5, 16);
	if (rq)
		snprintf(r->request_id, sizeof(r->request_id), "%s", rq);
	else
		engy_hex_id(r->request_id, 16);
	r->next = m->reqs;
	if (r->next)
		r->next->pprev = &r->next;
	r->pprev = &m->reqs;
	m->reqs = r;
	m->inflight++;
	if (m->m_inflight)
		m->h->metric_set(m->m_inflight, m->inflight);
	MLOG(m, ENGY_LOG_INFO,
	     "event=request leg=%u corr_id=%s rid=%s "
	     "stream=%d",
	     leg->idx, cid, r->rid, r->stream);
	if (engy_chat_params_parse(r->body, &r->p, msg, sizeof(msg)) < 0) {
		mreq_fail(r, "invalid request: %s", msg);
		return;
	}
	r->deadline_ev = evtimer_new(m->h->evbase(m->h), on_deadline, r);
	tv.tv_sec = (time_t)m->c->max_request_s;
	tv.tv_usec =
		(suseconds_t)((m->c->max_request_s - (double)tv.tv_sec) * 1e6);
	if (!r->deadline_ev || evtimer_add(r->deadline_ev, &tv) < 0 ||
	    m->h->work(m->h, prep_fn, prep_done, r) < 0)
		mreq_fail(r, "the miner could not queue the request");
}

static void cancel_req(struct mreq *r, const char *outcome)
{
	char cid[ENGY_GW_MAX_CORR_ID * 4 + 8];

	if (r->cancelled)
		return;
	r->cancelled = true;
	r->outcome = outcome;
	if (r->flush_ev)
		evtimer_del(r->flush_ev);
	if (r->deadline_ev)
		evtimer_del(r->deadline_ev);
	engy_logfmt_value(cid, sizeof(cid), r->corr_id);
	MLOG(r->m, ENGY_LOG_INFO,
	     "event=request_cancel corr_id=%s rid=%s "
	     "state=%s why=%s",
	     cid, r->rid,
	     r->state == MR_PREP  ? "prep"
	     : r->state == MR_GEN ? "gen"
				  : "prove",
	     outcome);
	/* PREP and PROVE end when the pool hands the request back. */
	cancel_backend(r);
}

void miner_cancel(struct mleg *leg, const char *corr_id)
{
	struct mreq *r = find(leg->m, leg->conn, corr_id);
	char cid[ENGY_GW_MAX_CORR_ID * 4 + 8];

	if (!r) {
		engy_logfmt_value(cid, sizeof(cid), corr_id);
		MLOG(leg->m, ENGY_LOG_DEBUG,
		     "event=cancel_unknown leg=%u corr_id=%s", leg->idx, cid);
		/* Over already (its response crossed the cancel): the slot
		 * is free. */
		send_cancelled(leg->m, leg->conn, corr_id);
		return;
	}
	cancel_req(r, "cancelled");
}

void miner_orphan(struct miner *m, struct engy_ws_conn *conn)
{
	struct mreq *r, *next;

	for (r = m->reqs; r; r = next) {
		next = r->next;
		if (r->conn != conn)
			continue;
		r->conn = NULL;
		cancel_req(r, "orphaned");
	}
}

void miner_reqs_free(struct miner *m)
{
	struct mreq *r;

	/* Past the drain deadline: the loop has stopped and the pool is
	 * closed; abort what the backend still runs, without callbacks. */
	while ((r = m->reqs)) {
		m->reqs = r->next;
		r->cancelled = true;
		if (r->state == MR_GEN && r->g && !r->done) {
			r->busy++;
			m->b->cancel(m->bi, r->g);
		}
		req_free(r);
	}
	m->inflight = 0;
}
