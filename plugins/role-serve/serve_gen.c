/* SPDX-License-Identifier: MIT */
/*
 * One POST /generate of the serve role: parse and check the body, wait
 * in the queue for a running slot, drive the backend, and answer as
 * sglang does: one object, or SSE events with cumulative text and
 * output_ids, then `data: [DONE]`.
 *
 * A backend may call back from inside generate() or cancel(); `busy`
 * defers the end of a request until the call has returned, so no
 * request is freed under its caller.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <event2/event.h>

#include <engy/plugin.h>

#include "constrain.h"
#include "bf16.h"
#include "grow.h"
#include "logfmt.h"
#include "serve_int.h"
#include "tokenizer.h"

static const char *const sse_headers[] = {
	"Cache-Control",
	"no-cache",
	NULL,
};

static void log_req(struct sreq *r, const char *event, const char *extra)
{
	char rid[ENGY_SGL_MAX_RID * 4 + 8];

	engy_logfmt_value(rid, sizeof(rid), r->rid);
	r->s->h->log(r->s->h, ENGY_LOG_INFO, "event=%s rid=%s%s", event, rid,
		     extra ? extra : "");
}

static double since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) +
	       (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static void gauges(struct serve *s)
{
	if (s->m_running)
		s->h->metric_set(s->m_running, s->n_running);
	if (s->m_queued)
		s->h->metric_set(s->m_queued, s->n_queued);
}

void serve_req_free(struct sreq *r)
{
	if (r->pprev) {
		*r->pprev = r->next;
		if (r->next)
			r->next->pprev = r->pprev;
		r->s->n_open--;
	}
	if (r->flush_ev)
		event_free(r->flush_ev);
	engy_sgl_gen_free(&r->p);
	while (r->n_tok_text)
		free(r->tok_text[--r->n_tok_text]);
	free(r->tok_text);
	while (r->n_top_text)
		free(r->top_text[--r->n_top_text]);
	free(r->top_text);
	free(r->top_ids);
	free(r->top_lp);
	free(r->ctext);
	free(r->ids);
	free(r->lp);
	free(r->rows);
	free(r->gemm);
	free(r);
}

/*
 * The text of @n ids as sglang's detokenizer gives it.  *@clean: the text
 * does not end inside a character (no trailing U+FFFD), so text of later
 * ids can be appended to it as it stands.
 */
static char *decode(struct serve *s, const uint32_t *ids, size_t n, bool skip,
		    bool partial, size_t *len, bool *clean)
{
	char *text = NULL;

	*len = 0;
	*clean = true;
	if (!s->tok || !n ||
	    engy_tokenizer_decode(s->tok, ids, n, skip, &text, len) < 0) {
		free(text);
		*len = 0;
		return strdup("");
	}
	*clean = *len < 3 || memcmp(text + *len - 3, "\xef\xbf\xbd", 3) != 0;
	/* Mid-stream, a trailing U+FFFD is a character still arriving:
	 * sglang holds it back until it is complete. */
	while (partial && *len >= 3 &&
	       memcmp(text + *len - 3, "\xef\xbf\xbd", 3) == 0)
		text[ *len -= 3] = '\0';
	return text;
}

/*
 * The text of the first @n_text ids.  Byte-level BPE text is the
 * concatenation of its tokens' bytes, so a stream appends the text of new
 * ids to the last clean prefix instead of decoding everything per event.
 */
static char *text_of(struct serve *s, struct sreq *r, size_t n_text,
		     bool partial, size_t *len)
{
	size_t from = r->ctext && n_text >= r->ctext_ids ? r->ctext_ids : 0;
	size_t tl;
	bool clean;
	char *tail = decode(s, r->ids + from, n_text - from,
			    r->p.skip_special_tokens, partial, &tl, &clean),
	     *text;

	if (!tail || !from) {
		text = tail;
		*len = tail ? tl : 0;
	} else {
		text = malloc(r->ctext_len + tl + 1);
		if (text) {
			memcpy(text, r->ctext, r->ctext_len);
			memcpy(text + r->ctext_len, tail, tl + 1);
			*len = r->ctext_len + tl;
		}
		free(tail);
	}
	if (text && clean && n_text > r->ctext_ids) {
		char *copy = strdup(text);

		if (copy) {
			free(r->ctext);
			r->ctext = copy;
			r->ctext_len = *len;
			r->ctext_ids = n_text;
		}
	}
	return text;
}

/* Each token's own text (return_text_in_logprobs), made once. */
static void token_texts(struct serve *s, struct sreq *r)
{
	size_t l;
	bool clean;

	if (r->n_tok_text >= r->n_ids)
		return;
	if (r->cap_tok_text < r->n_ids) {
		char **p = realloc(r->tok_text, r->cap_ids * sizeof(*p));

		if (!p)
			return;
		r->tok_text = p;
		r->cap_tok_text = r->cap_ids;
	}
	for (; r->n_tok_text < r->n_ids; r->n_tok_text++)
		r->tok_text[r->n_tok_text] = decode(
			s, &r->ids[r->n_tok_text], 1, false, false, &l, &clean);
}

/* Each alternative's own text (return_text_in_logprobs), made once. */
static void top_texts(struct serve *s, struct sreq *r)
{
	size_t l, want = r->n_top * r->p.top_logprobs_num;
	bool clean;

	if (!r->top_lp || r->n_top_text >= want)
		return;
	if (!engy_grow((void **)&r->top_text, &r->cap_top_text, want,
		       sizeof(*r->top_text)))
		return;
	for (; r->n_top_text < want; r->n_top_text++)
		r->top_text[r->n_top_text] =
			isnan(r->top_lp[r->n_top_text])
				? NULL
				: decode(s, &r->top_ids[r->n_top_text], 1,
					 false, false, &l, &clean);
}

static void send_chunk(struct serve *s, struct sreq *r, char *buf, size_t len)
{
	if (buf && r->x)
		s->t->http_stream_write(s->ti, r->x, buf, len);
	free(buf);
}

/* A reply the client can read as sglang's error; ends the exchange. */
static void answer_error(struct serve *s, struct sreq *r, int status,
			 const char *msg)
{
	size_t len;
	char *buf;

	if (!r->x)
		return;
	if (!r->stream) {
		serve_reply_error(s, r->x, status, msg);
	} else {
		buf = engy_sgl_error(msg, true, &len);
		send_chunk(s, r, buf, len);
		s->t->http_stream_write(s->ti, r->x, ENGY_SGL_SSE_DONE,
					strlen(ENGY_SGL_SSE_DONE));
		s->t->http_stream_end(s->ti, r->x);
	}
	r->x = NULL;
}

/* Fill @o from what @r has so far. */
static char *render(struct serve *s, struct sreq *r, int finish, bool sse,
		    size_t *len)
{
	struct engy_sgl_out o = { 0 };
	size_t n_text = r->n_ids, tl = 0;
	char *text, *buf;

	if (finish == ENGY_SGL_STOP && !r->p.no_stop_trim && n_text &&
	    r->res.matched_stop >= 0 &&
	    r->ids[n_text - 1] == (uint32_t)r->res.matched_stop)
		n_text--; /* the matched stop id is not in the text */
	text = text_of(s, r, n_text, finish == ENGY_SGL_RUNNING, &tl);
	if (r->p.return_logprob && r->p.return_text_in_logprobs) {
		token_texts(s, r);
		top_texts(s, r);
	}
	o.rid = r->rid;
	o.text = text;
	o.text_len = text ? tl : 0;
	o.ids = r->ids;
	o.n_ids = r->n_ids;
	o.finish = finish;
	o.matched = r->res.matched_stop;
	o.length = r->max_new;
	o.abort_message = r->abort_msg ? r->abort_msg : "Aborted";
	o.abort_status = r->abort_status;
	o.prompt_tokens = r->res.prompt_tokens ? r->res.prompt_tokens
					       : (uint32_t)r->p.n_input;
	o.cached_tokens = r->res.cached_tokens;
	o.e2e_latency = finish == ENGY_SGL_RUNNING ? -1 : since(&r->t0);
	o.logprobs = r->p.return_logprob;
	o.logprob_v = r->lp_missing ? NULL : r->lp;
	o.token_text = r->n_tok_text == r->n_ids ? r->tok_text : NULL;
	o.top_n = r->p.top_logprobs_num;
	o.top_ids = r->top_ids;
	o.top_lp = r->n_top >= r->n_ids ? r->top_lp : NULL;
	o.top_text = r->n_top_text == r->n_ids * o.top_n ? r->top_text : NULL;
	o.last_prompt_id = r->p.input_ids[r->p.n_input - 1];
	/* A running event carries the rows no earlier event carried, the
	 * ones before them written as [] (a miner pairs each token with its
	 * row and streams what has both; the list keeps sglang's indices),
	 * while they are at most stream_hidden_max floats.  With
	 * stream_hidden_repeat it repeats every row so far, as sglang does:
	 * O(n^2) bytes.  The final object always has them all. */
	if (finish != ENGY_SGL_RUNNING) {
		o.hidden = r->p.return_hidden_states;
	} else if (s->stream_hidden_repeat) {
		o.hidden =
			r->p.return_hidden_states && r->n_rows > 0 &&
			r->n_rows * (size_t)r->hidden <= s->stream_hidden_max;
	} else {
		o.hidden = r->p.return_hidden_states &&
			   r->n_rows > r->rows_sent &&
			   (r->n_rows - r->rows_sent) * (size_t)r->hidden <=
				   s->stream_hidden_max;
		o.rows_elided = r->rows_sent;
		if (o.hidden)
			r->rows_sent = r->n_rows;
	}
	o.rows = r->rows;
	o.n_rows = r->n_rows;
	o.prefill_empty = r->prefill_empty;
	o.hidden_size = r->hidden;
	o.gemm = finish != ENGY_SGL_RUNNING ? r->gemm : NULL;
	buf = engy_sgl_response(&o, sse, len);
	free(text);
	return buf;
}

static void pump(struct serve *s);

/* The request is over (on_done came, or it never reached the backend). */
static void finish_req(struct sreq *r)
{
	struct serve *s = r->s;
	const char *result;
	int finish = 0;
	char extra[160];

	if (r->state == RQ_RUNNING)
		s->n_running--;
	r->state = RQ_DONE;
	if (r->flush_ev)
		event_del(r->flush_ev);
	if (r->res.status < 0 || r->res.finish == ENGY_FINISH_ERROR) {
		result = "error";
	} else if (r->res.finish == ENGY_FINISH_ABORT) {
		result = "abort";
		finish = ENGY_SGL_ABORT;
	} else if (r->res.finish == ENGY_FINISH_STOP) {
		result = "stop";
		finish = ENGY_SGL_STOP;
		if (r->res.matched_stop < 0 && r->n_ids)
			r->res.matched_stop = (int32_t)r->ids[r->n_ids - 1];
	} else {
		result = "length";
		finish = ENGY_SGL_LENGTH;
	}
	if (r->client_gone)
		result = "gone";
	snprintf(
		extra, sizeof(extra),
		" result=%s prompt_tokens=%zu completion_tokens=%zu e2e_ms=%.1f client=%s",
		result, r->p.n_input, r->n_ids, since(&r->t0) * 1e3,
		r->x ? "yes" : "gone");
	log_req(r, "request_done", extra);
	serve_count(s, result);
	if (s->m_tokens)
		s->h->metric_add(s->m_tokens, (double)r->n_ids);
	if (r->x && !finish) {
		char msg[200];

		snprintf(msg, sizeof(msg), "backend error: %s",
			 r->res_error[0] ? r->res_error : "generation failed");
		answer_error(s, r, 500, msg);
	} else if (r->x) {
		size_t len;
		char *buf = render(s, r, finish, r->stream, &len);

		if (!buf) {
			answer_error(s, r, 500, "out of memory");
		} else if (!r->stream) {
			s->t->http_reply(s->ti, r->x, 200, "application/json",
					 NULL, buf, len);
			free(buf);
		} else {
			send_chunk(s, r, buf, len);
			s->t->http_stream_write(s->ti, r->x, ENGY_SGL_SSE_DONE,
						strlen(ENGY_SGL_SSE_DONE));
			s->t->http_stream_end(s->ti, r->x);
		}
		r->x = NULL;
	}
	serve_req_free(r);
	gauges(s);
	pump(s);
}

static void leave(struct sreq *r)
{
	if (--r->busy == 0 && r->done)
		finish_req(r);
}

static void add_rows(struct sreq *r, const struct engy_rows *rows, size_t n)
{
	size_t skip = rows->n_prefill, take, i, j, cap;

	if (rows->n_rows <= skip || !rows->hidden || !rows->data)
		return;
	if (!r->hidden)
		r->hidden = rows->hidden;
	if (rows->hidden != r->hidden)
		return; /* a backend bug; keep the rows consistent */
	take = rows->n_rows - skip;
	if (take > n)
		take = n;
	cap = r->cap_rows * r->hidden;
	if (!engy_grow((void **)&r->rows, &cap, (r->n_rows + take) * r->hidden,
		       sizeof(float)))
		return;
	r->cap_rows = cap / r->hidden;
	for (i = 0; i < take; i++) {
		float *dst = r->rows + (r->n_rows + i) * r->hidden;

		if (rows->dtype == ENGY_DTYPE_BF16) {
			const uint16_t *src = (const uint16_t *)rows->data +
					      (skip + i) * r->hidden;

			for (j = 0; j < r->hidden; j++)
				dst[j] = engy_bf16_to_f32(src[j]);
		} else {
			memcpy(dst,
			       (const float *)rows->data +
				       (skip + i) * r->hidden,
			       r->hidden * sizeof(float));
		}
	}
	r->n_rows += take;
}

static void flush_event(evutil_socket_t fd, short what, void *arg)
{
	struct sreq *r = arg;
	size_t len;
	char *buf;

	if (!r->x || r->done)
		return;
	buf = render(r->s, r, ENGY_SGL_RUNNING, true, &len);
	send_chunk(r->s, r, buf, len);
}

/* The alternatives of the ids on_tokens gets next, kept at n_ids; a
 * position the backend gave fewer for is padded with NaN (written as
 * the end of its list). */
static void on_top(void *arg, size_t n, uint32_t k, const uint32_t *ids,
		   const float *lps)
{
	struct sreq *r = arg;
	size_t K = r->p.top_logprobs_num, i, j, at = r->n_ids, need;

	if (!n || r->done || !K)
		return;
	need = (at + n) * K;
	if (!engy_grow((void **)&r->top_ids, &r->cap_top_ids, need,
		       sizeof(*r->top_ids)) ||
	    !engy_grow((void **)&r->top_lp, &r->cap_top_lp, need,
		       sizeof(*r->top_lp)))
		return;
	/* ids that came without alternatives before these: none */
	for (i = r->n_top * K; i < at * K; i++)
		r->top_lp[i] = NAN;
	for (i = 0; i < n; i++)
		for (j = 0; j < K; j++) {
			r->top_ids[(at + i) * K + j] =
				j < k ? ids[i * k + j] : 0;
			r->top_lp[(at + i) * K + j] =
				j < k ? lps[i * k + j] : NAN;
		}
	r->n_top = at + n;
}

static void on_tokens(void *arg, const uint32_t *ids, size_t n,
		      const struct engy_rows *rows, const float *logprobs)
{
	struct sreq *r = arg;
	size_t cap_lp = r->cap_ids;

	if (!n || r->done)
		return;
	if (!engy_grow((void **)&r->ids, &r->cap_ids, r->n_ids + n,
		       sizeof(*r->ids)) ||
	    !engy_grow((void **)&r->lp, &cap_lp, r->n_ids + n, sizeof(*r->lp)))
		return; /* out of memory: the tokens are dropped */
	if (cap_lp != r->cap_ids) {
		float *lp = realloc(r->lp, r->cap_ids * sizeof(*lp));

		if (!lp)
			return;
		r->lp = lp;
	}
	memcpy(r->ids + r->n_ids, ids, n * sizeof(*ids));
	if (logprobs)
		memcpy(r->lp + r->n_ids, logprobs, n * sizeof(*logprobs));
	else
		r->lp_missing = true;
	/* After a full prefix-cache hit, token 0 comes alone without a
	 * row: sglang's block for it is empty (backend.h). */
	if (!rows && r->p.return_hidden_states && !r->n_ids && !r->n_rows)
		r->prefill_empty = true;
	if (rows && r->p.return_hidden_states)
		add_rows(r, rows, n);
	r->n_ids += n;
	/* The event goes out from the loop, after this callback: when
	 * on_done follows at once, the last tokens and finish_reason share
	 * one event, as sglang's do. */
	if (r->stream && r->x && r->flush_ev)
		event_active(r->flush_ev, 0, 0);
	else if (r->stream && r->x)
		flush_event(-1, 0, r);
}

static void on_done(void *arg, const struct engy_gen_result *res)
{
	struct sreq *r = arg;

	if (r->done)
		return;
	r->done = true;
	/* The handle is alive until this returns: the GEMM commitment. */
	if (r->p.return_gemm_trace && r->g && serve_has_gemm(r->s))
		r->gemm = r->s->b->gemm_commit(r->s->bi, r->g);
	r->g = NULL;
	r->res = *res;
	snprintf(r->res_error, sizeof(r->res_error), "%s",
		 res->error ? res->error : "");
	r->res.error = NULL;
	if (!r->busy)
		finish_req(r);
}

static void start_req(struct sreq *r)
{
	static const struct engy_gen_cb cb = { on_tokens, on_done };
	struct serve *s = r->s;
	struct engy_gen_params p = {
		.size = sizeof(p),
		.input_ids = r->p.input_ids,
		.n_input = r->p.n_input,
		.max_new_tokens = r->max_new,
		.temperature = r->p.temperature,
		.top_p = r->p.top_p,
		.top_k = r->p.top_k < 0 ? 0 : r->p.top_k,
		.seed = r->p.seed,
		.has_seed = r->p.has_seed,
		.return_hidden = r->p.return_hidden_states,
		.return_logprobs = r->p.return_logprob,
		.stop_ids = r->p.stop_ids,
		.n_stop = r->p.n_stop,
		.rid = r->rid,
		.cons_schema = r->p.json_schema,
		.ignore_eos = r->p.ignore_eos,
		.top_logprobs = r->p.top_logprobs_num,
		.on_top_logprobs = r->p.top_logprobs_num ? on_top : NULL,
		.gemm_trace = r->p.return_gemm_trace,
	};
	int rc;

	r->state = RQ_RUNNING;
	s->n_running++;
	gauges(s);
	if (!r->max_new) { /* nothing to generate: length 0 at once */
		r->res.finish = ENGY_FINISH_LENGTH;
		r->done = true;
		finish_req(r);
		return;
	}
	r->busy++;
	rc = s->b->generate(s->bi, &p, &cb, r, &r->g);
	if (rc < 0 && !r->done) {
		r->done = true;
		r->res.status = rc;
		snprintf(r->res_error, sizeof(r->res_error),
			 "generate failed: %s", strerror(-rc));
	}
	leave(r);
}

static void pump(struct serve *s)
{
	struct sreq *r;

	if (s->pumping)
		return;
	s->pumping = true;
	while (s->n_running < s->max_running && (r = s->qhead)) {
		s->qhead = r->qnext;
		if (!s->qhead)
			s->qtail = &s->qhead;
		s->n_queued--;
		start_req(r);
	}
	s->pumping = false;
	gauges(s);
}

static void dequeue(struct serve *s, struct sreq *r)
{
	struct sreq **pp;

	for (pp = &s->qhead; *pp; pp = &(*pp)->qnext) {
		if (*pp != r)
			continue;
		*pp = r->qnext;
		if (!*pp)
			s->qtail = pp;
		s->n_queued--;
		return;
	}
}

void serve_abort(struct sreq *r, const char *msg)
{
	struct serve *s = r->s;

	if (r->state == RQ_QUEUED) {
		dequeue(s, r);
		r->aborting = true;
		r->abort_msg = msg ? msg : "Abort in waiting queue";
		r->res.finish = ENGY_FINISH_ABORT;
		r->res.matched_stop = -1;
		r->done = true;
		finish_req(r);
		return;
	}
	if (r->state != RQ_RUNNING || r->aborting || r->done || !r->g)
		return;
	r->aborting = true;
	r->abort_msg = msg;
	log_req(r, "cancel", NULL);
	r->busy++;
	s->b->cancel(s->bi, r->g);
	leave(r);
}

void serve_gone(struct serve *s, struct engy_http_exchange *x)
{
	struct sreq *r;

	for (r = s->open; r && r->x != x; r = r->next)
		;
	if (!r)
		return;
	r->x = NULL;
	r->client_gone = true;
	log_req(r, "client_gone",
		r->state == RQ_QUEUED ? " state=queued" : " state=running");
	if (r->state == RQ_QUEUED) {
		dequeue(s, r);
		serve_count(s, "gone");
		serve_req_free(r);
		gauges(s);
		return;
	}
	serve_abort(r, NULL);
}

/* Checks sglang makes once the body parsed; NULL when the request fits. */
static const char *check(struct serve *s, struct sreq *r, char *msg, size_t n)
{
	uint32_t ctx = s->info.max_context, vocab = s->info.vocab_size;
	size_t i;

	for (i = 0; vocab && i < r->p.n_input; i++)
		if (r->p.input_ids[i] >= vocab) {
			snprintf(
				msg, n,
				"The input_ids contains token id %u, outside the "
				"vocabulary (size %u).",
				r->p.input_ids[i], vocab);
			return msg;
		}
	if (ctx && r->p.n_input >= ctx) {
		snprintf(msg, n,
			 "The input (%zu tokens) is longer than the model's "
			 "context length (%u tokens).",
			 r->p.n_input, ctx);
		return msg;
	}
	if (ctx && r->p.has_max_new_tokens &&
	    (uint64_t)r->p.max_new_tokens + r->p.n_input >= ctx) {
		snprintf(
			msg, n,
			"Requested token count exceeds the model's maximum "
			"context length of %u tokens. You requested a total of %llu "
			"tokens: %zu tokens from the input messages and %lld tokens "
			"for the completion. Please reduce the number of tokens in "
			"the input messages or the completion to fit within the limit.",
			ctx,
			(unsigned long long)r->p.max_new_tokens + r->p.n_input,
			r->p.n_input, (long long)r->p.max_new_tokens);
		return msg;
	}
	r->max_new = (uint32_t)(r->p.max_new_tokens > UINT32_MAX
					? UINT32_MAX
					: r->p.max_new_tokens);
	if (ctx && !r->p.has_max_new_tokens && r->p.n_input + r->max_new >= ctx)
		r->max_new = (uint32_t)(ctx - r->p.n_input - 1);
	return NULL;
}

static bool rid_open(struct serve *s, const char *rid)
{
	struct sreq *r;

	for (r = s->open; r; r = r->next)
		if (strcmp(r->rid, rid) == 0)
			return true;
	return false;
}

static void new_rid(char *out)
{
	uint8_t b[16];
	size_t i;

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		memcpy(b, &t, sizeof(b) < sizeof(t) ? sizeof(b) : sizeof(t));
	}
	for (i = 0; i < sizeof(b); i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static int tokenize_text(struct serve *s, struct sreq *r, char *msg, size_t n)
{
	int rc;

	if (!s->tok) {
		snprintf(
			msg, n,
			"text input needs the model's tokenizer, and none is "
			"loaded (the backend names no checkpoint directory); send "
			"input_ids instead");
		return -EINVAL;
	}
	rc = engy_tokenizer_encode(s->tok, r->p.text, strlen(r->p.text),
				   &r->p.input_ids, &r->p.n_input);
	if (rc == -EILSEQ)
		snprintf(msg, n, "text is not valid UTF-8");
	else if (!rc && !r->p.n_input)
		snprintf(msg, n, "text encodes to no tokens");
	else if (rc)
		snprintf(msg, n, "text could not be tokenized: %s",
			 strerror(-rc));
	return rc ? rc : r->p.n_input ? 0 : -EINVAL;
}

/* Whether a request can be taken at all; if not, it is answered. */
static bool accepting(struct serve *s, struct engy_http_exchange *x,
		      const struct engy_http_request *r)
{
	if (strcmp(r->method, "POST") != 0 && strcmp(r->method, "PUT") != 0) {
		serve_reply_error(s, x, 405,
				  "Method Not Allowed (POST or PUT)");
		return false;
	}
	if (s->stopping) {
		serve_count(s, "rejected");
		serve_reply_error(s, x, 503, "The server is shutting down.");
		return false;
	}
	if (!serve_model(s)) {
		serve_count(s, "rejected");
		serve_reply_error(s, x, 503, "The backend is not ready.");
		return false;
	}
	return true;
}

/*
 * What is wrong with a parsed request (into @msg), or NULL.  Past the
 * body's syntax, sglang reports problems inside the stream of a streamed
 * request (its tokenizer_manager runs after the response began).
 */
/* sampling_params.json_schema: enforced only where the backend masks
 * sampling (backend-ref); the schema in lib/constrain's subset. */
static const char *check_schema(struct serve *s, struct sreq *q, char *msg,
				size_t n)
{
	struct engy_cons *c;
	char why[200];
	cJSON *j;
	int rc;

	if (!q->p.json_schema)
		return NULL;
	if (s->info.size < offsetof(struct engy_model_info, constraints) +
				   sizeof(s->info.constraints) ||
	    !(s->info.constraints & ENGY_BACKEND_CONS_JSON)) {
		snprintf(msg, n,
			 "sampling_params.json_schema is not supported by "
			 "this server's backend");
		return msg;
	}
	j = cJSON_Parse(q->p.json_schema);
	if (!j) {
		snprintf(msg, n, "sampling_params.json_schema is not JSON");
		return msg;
	}
	rc = engy_cons_compile(j, NULL, NULL, &c, why, sizeof(why));
	cJSON_Delete(j);
	if (rc) {
		snprintf(msg, n, "sampling_params.json_schema: %s", why);
		return msg;
	}
	engy_cons_free(c);
	return NULL;
}

static const char *invalid(struct serve *s, struct sreq *q, char *msg, size_t n)
{
	const char *bad = NULL;

	if (q->p.text && !q->p.input_ids && tokenize_text(s, q, msg, n) < 0)
		bad = msg;
	if (!bad)
		bad = check(s, q, msg, n);
	if (!bad)
		bad = check_schema(s, q, msg, n);
	if (!bad && rid_open(s, q->rid)) {
		snprintf(msg, n, "Duplicate request ID detected: %s", q->rid);
		bad = msg;
	}
	return bad;
}

/* No room to run or queue it: a 503, in the stream if streamed. */
static void refuse_queue_full(struct serve *s, struct sreq *q)
{
	size_t len;
	char *buf;

	serve_count(s, "rejected");
	log_req(q, "queue_full", NULL);
	if (!q->stream) {
		serve_reply_error(s, q->x, 503, "The request queue is full.");
		return;
	}
	q->aborting = true;
	q->abort_msg = "The request queue is full.";
	q->abort_status = 503;
	q->res.finish = ENGY_FINISH_ABORT;
	buf = render(s, q, ENGY_SGL_ABORT, true, &len);
	send_chunk(s, q, buf, len);
	s->t->http_stream_write(s->ti, q->x, ENGY_SGL_SSE_DONE,
				strlen(ENGY_SGL_SSE_DONE));
	s->t->http_stream_end(s->ti, q->x);
}

/* Open it, log it, queue it, and run what can run. */
static void enqueue(struct serve *s, struct sreq *q)
{
	char msg[512];

	q->next = s->open;
	if (q->next)
		q->next->pprev = &q->next;
	q->pprev = &s->open;
	s->open = q;
	s->n_open++;
	snprintf(msg, sizeof(msg),
		 " prompt_tokens=%zu max_new_tokens=%u stream=%d "
		 "hidden=%d logprob=%d",
		 q->p.n_input, q->max_new, q->stream, q->p.return_hidden_states,
		 q->p.return_logprob);
	log_req(q, "request", msg);
	q->state = RQ_QUEUED;
	q->qnext = NULL;
	*s->qtail = q;
	s->qtail = &q->qnext;
	s->n_queued++;
	pump(s);
}

int serve_generate(struct serve *s, struct engy_http_exchange *x,
		   const struct engy_http_request *r)
{
	char msg[512];
	const char *bad;
	struct sreq *q;
	int rc;

	if (!accepting(s, x, r))
		return 0;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->s = s;
	q->x = x;
	q->res.matched_stop = -1;
	clock_gettime(CLOCK_MONOTONIC, &q->t0);
	rc = engy_sgl_parse_generate(r->body, r->body_len, &q->p, msg,
				     sizeof(msg));
	if (rc) {
		serve_count(s, "rejected");
		serve_reply_error(s, x, rc == -ENOMEM ? 500 : 400,
				  rc == -ENOMEM ? "out of memory" : msg);
		serve_req_free(q);
		return 0;
	}
	q->stream = q->p.stream;
	if (q->p.rid)
		snprintf(q->rid, sizeof(q->rid), "%s", q->p.rid);
	else
		new_rid(q->rid);
	bad = invalid(s, q, msg, sizeof(msg));
	if (q->stream)
		q->flush_ev =
			event_new(s->h->evbase(s->h), -1, 0, flush_event, q);
	if (q->stream &&
	    s->t->http_stream_begin(s->ti, x, 200, "text/event-stream",
				    sse_headers) < 0) {
		serve_req_free(q);
		return -EIO;
	}
	if (bad) {
		serve_count(s, "rejected");
		answer_error(s, q, 400, bad);
		serve_req_free(q);
		return 0;
	}
	if (s->n_running >= s->max_running && s->n_queued >= s->max_queued) {
		refuse_queue_full(s, q);
		serve_req_free(q);
		return 0;
	}
	enqueue(s, q);
	return 0;
}
