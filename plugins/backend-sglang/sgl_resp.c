/* SPDX-License-Identifier: MIT */
/*
 * A /generate call's response, as it arrives (inside libcurl's write
 * callback): SSE events or one JSON body, parsed without a DOM; hidden
 * rows land in the request's row buffer at their token's slot, and the
 * tokens that have everything they need move to the output.  Nothing here
 * calls the caller back: flushing is sgl_gen.c's, from a timer.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sgl.h"
#include "sgl_http.h"

#define ERRBODY_MAX 4096

/*
 * Room for @need floats.  The first growth of a call takes what its
 * remaining tokens need (@hint), so a call's rows are one allocation;
 * only a serve sending more than asked makes it double.
 */
static int grow_floats(float **p, size_t *cap, size_t need, size_t hint)
{
	size_t n = need > hint ? need : hint;
	float *q;

	if (need <= *cap)
		return 0;
	if (n < *cap * 2 && need > hint)
		n = *cap * 2;
	q = realloc(*p, n * sizeof(float));
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/* A row from the parser (inside libcurl's write callback). */
static int on_row(void *arg, uint32_t elem, uint32_t row, const float *v,
		  uint32_t width)
{
	struct sgl_gen *g = arg;
	size_t t, slot, hint;

	if (g->hidden_size && width != g->hidden_size) {
		sgl_gen_fail(g, -EPROTO,
			     "serve changed the hidden size "
			     "from %u to %u",
			     g->hidden_size, width);
		return -EPROTO;
	}
	if (!g->hidden_size)
		sgl_info_learn_width(g->s, width);
	g->hidden_size = width;
	if (g->prefill) {
		if (elem) /* the sampled token's decode rows */
			return 0;
		t = row;
	} else {
		if (elem < g->plan.drop)
			return 0;
		t = g->c_base + elem - g->plan.drop;
		if (t >= g->max_new || t < g->row0)
			return 0;
	}
	slot = t - g->row0;
	hint = g->prefill ? g->n_input
			  : g->c_base + g->plan.ask - g->plan.drop - g->row0;
	if (grow_floats(&g->rows, &g->rows_cap, (slot + 1) * width,
			hint * width)) {
		sgl_gen_fail(g, -ENOMEM, "out of memory for hidden states");
		return -ENOMEM;
	}
	memcpy(g->rows + slot * width, v, width * sizeof(float));
	if (t + 1 > g->row_hi)
		g->row_hi = t + 1;
	return 0;
}

static int call_lists_grow(struct sgl_gen *g, size_t need)
{
	size_t n = g->c_cap ? g->c_cap * 2 : 256;
	uint32_t *ids;
	float *lp;

	if (need <= g->c_cap)
		return 0;
	while (n < need)
		n *= 2;
	ids = realloc(g->c_ids, n * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	g->c_ids = ids;
	lp = realloc(g->c_lp, n * sizeof(*lp));
	if (!lp)
		return -ENOMEM;
	g->c_lp = lp;
	g->c_cap = n;
	return 0;
}

static int out_grow(struct sgl_gen *g, size_t need)
{
	size_t n = g->cap_out ? g->cap_out * 2 : 256;
	uint32_t *o;
	float *l;

	if (need <= g->cap_out)
		return 0;
	while (n < need)
		n *= 2;
	o = realloc(g->out, n * sizeof(*o));
	if (!o)
		return -ENOMEM;
	g->out = o;
	l = realloc(g->lp, n * sizeof(*l));
	if (!l)
		return -ENOMEM;
	g->lp = l;
	if (g->top_n) {
		o = realloc(g->tid, n * g->top_n * sizeof(*o));
		if (!o)
			return -ENOMEM;
		g->tid = o;
		l = realloc(g->tlp, n * g->top_n * sizeof(*l));
		if (!l)
			return -ENOMEM;
		g->tlp = l;
	}
	g->cap_out = n;
	return 0;
}

/*
 * The new positions of an event's output_top_logprobs, checked: ids in
 * the vocabulary (when known), logprobs <= 0 and sorted; a null or
 * non-finite logprob, and the rest of a short list, read as none (NaN).
 */
static int append_top(struct sgl_gen *g, const struct engy_sglresp_resp *r)
{
	size_t K = g->top_n, k, i, from_i, need;
	uint32_t vocab = g->s->info.vocab_size, cnt;
	long from =
		sgl_list_new_from(g->c_ntop, r->n_top, r->completion_tokens);
	float v, last;

	if (from < 0) {
		sgl_gen_fail(g, -EPROTO, "serve's output list went backwards");
		return -EPROTO;
	}
	from_i = (size_t)from;
	need = g->c_ntop + (r->n_top - from_i);
	if (need > g->c_tcap) {
		size_t c1 = 0, c2 = 0;

		if (!engy_grow((void **)&g->c_tid, &c1, need * K,
			       sizeof(*g->c_tid)) ||
		    !engy_grow((void **)&g->c_tlp, &c2, need * K,
			       sizeof(*g->c_tlp)))
			return -ENOMEM;
		g->c_tcap = need;
	}
	for (k = from_i; k < r->n_top; k++, g->c_ntop++) {
		cnt = r->top_cnt[k];
		last = 0;
		for (i = 0; i < K; i++) {
			uint32_t id = i < cnt ? r->top_ids[k * K + i] : 0;

			v = i < cnt ? r->top_lp[k * K + i] : NAN;
			if (!isfinite(v)) /* null, -Infinity: none */
				v = NAN;
			if (!isnan(v) && (v > 0 || v > last)) {
				sgl_gen_fail(g, -EPROTO,
					     "serve's top logprobs are not "
					     "sorted log-probabilities");
				return -EPROTO;
			}
			if (i < cnt && vocab && id >= vocab) {
				sgl_gen_fail(g, -EPROTO,
					     "serve's top logprob id %u is "
					     "out of the vocabulary (%u)",
					     id, vocab);
				return -EPROTO;
			}
			if (!isnan(v))
				last = v;
			g->c_tid[g->c_ntop * K + i] = id;
			g->c_tlp[g->c_ntop * K + i] = v;
		}
	}
	return 0;
}

/* Move the call's tokens that have all they need into the output. */
int sgl_ingest(struct sgl_gen *g, bool final)
{
	size_t tops = g->top_n && g->c_top_seen && !final ? g->c_ntop
							  : SIZE_MAX,
	       lps = g->logprobs && g->c_lp_seen && !final ? g->c_nlp
							   : SIZE_MAX;
	struct sgl_avail a = {
		.ids = g->c_nids,
		.rows = g->hidden ? g->c_rows : SIZE_MAX,
		.lps = lps < tops ? lps : tops,
		.taken = g->c_taken,
		.drop = g->plan.drop,
		.room = g->max_new - g->n_out,
	};
	size_t n = sgl_take(&a), j, k;

	if (out_grow(g, g->n_out + (n - g->c_taken)))
		return -ENOMEM;
	for (j = g->c_taken; j < n; j++) {
		if (j < g->plan.drop) {
			if (g->c_ids[j] != g->out[g->c_base - 1]) {
				sgl_gen_fail(g, -EPROTO,
					     "serve regenerated "
					     "another token at a chunk "
					     "boundary");
				return -EPROTO;
			}
			continue;
		}
		g->out[g->n_out] = g->c_ids[j];
		g->lp[g->n_out] =
			g->c_lp_seen && j < g->c_nlp ? g->c_lp[j] : NAN;
		for (k = 0; k < g->top_n; k++) {
			bool have = g->c_top_seen && j < g->c_ntop;

			g->tid[g->n_out * g->top_n + k] =
				have ? g->c_tid[j * g->top_n + k] : 0;
			g->tlp[g->n_out * g->top_n + k] =
				have ? g->c_tlp[j * g->top_n + k] : NAN;
		}
		g->n_out++;
	}
	g->c_taken = n;
	return 0;
}

static int append_list(struct sgl_gen *g, size_t *have, const uint32_t *ids,
		       const float *lp, size_t n, int64_t total)
{
	long from = sgl_list_new_from(*have, n, total);
	size_t k;

	if (from < 0) {
		sgl_gen_fail(g, -EPROTO, "serve's output list went backwards");
		return -EPROTO;
	}
	if (call_lists_grow(g, *have + (n - (size_t)from)))
		return -ENOMEM;
	for (k = (size_t)from; k < n; k++) {
		if (ids)
			g->c_ids[(*have)++] = ids[k];
		else
			g->c_lp[(*have)++] = lp[k];
	}
	return 0;
}

/* One complete response object (an SSE event, or the whole body). */
static int take_event(struct sgl_gen *g)
{
	const struct engy_sglresp_resp *r = engy_sglresp_resp(g->jf);
	char msg[ENGY_SGLRESP_MSG_MAX + 64];
	int rc;

	if (r->has_error || (!r->has_meta && r->error[0])) {
		sgl_error_text(0, r->error, msg, sizeof(msg));
		sgl_gen_fail(g, -EIO, "%s", msg);
		return -EIO;
	}
	if (r->has_output_ids)
		rc = append_list(g, &g->c_nids, r->ids, NULL, r->n_ids,
				 r->completion_tokens);
	else if (r->has_logprobs)
		rc = append_list(g, &g->c_nids, r->lp_ids, NULL, r->n_lp,
				 r->completion_tokens);
	else
		rc = 0;
	if (!rc && r->has_logprobs) {
		g->c_lp_seen = true;
		rc = append_list(g, &g->c_nlp, NULL, r->lp, r->n_lp,
				 r->completion_tokens);
	}
	if (!rc && g->top_n && r->has_top) {
		g->c_top_seen = true;
		rc = append_top(g, r);
	}
	if (rc)
		return rc;
	if (r->has_hidden) {
		g->c_hidden_seen = true;
		if (r->elem0_block && r->elem0_rows == 0 && g->plan.drop == 0 &&
		    g->c_rows == 0 && !g->prefill) {
			if (g->chunk) {
				sgl_gen_fail(g, -EPROTO,
					     "serve returned no "
					     "row for the first token of a "
					     "continuation");
				return -EPROTO;
			}
			g->fold = true;
		}
		if (g->prefill && r->elem0_block && r->n_elems)
			g->c_rows = r->elem0_rows;
		else if (r->n_elems > g->c_rows)
			g->c_rows = r->n_elems;
	}
	if (g->chunk == 0 && r->cached_tokens >= 0)
		g->cached = r->cached_tokens;
	if (g->gemm && r->gemm.present)
		sgl_gemm_take(g, &r->gemm);
	if (r->finish != ENGY_SGLRESP_FINISH_NONE) {
		g->have_final = true;
		g->c_finish = r->finish;
		g->c_matched = r->matched;
		memcpy(g->c_msg, r->finish_msg, sizeof(g->c_msg));
	}
	if (g->prefill)
		return 0;
	rc = sgl_ingest(g, false);
	if (!rc && g->sse_mode)
		sgl_arm_flush(g);
	return rc;
}

static struct engy_sglresp_opts jf_opts(struct sgl_gen *g)
{
	struct engy_sglresp_opts o = {
		.skip_elems = (uint32_t)g->c_rows,
		.all_block_rows = g->prefill,
		.max_ids = (size_t)g->plan.ask + 16,
		.on_row = on_row,
		.arg = g,
		.top_n = g->prefill ? 0 : g->top_n,
	};

	return o;
}

static int jf_failed(struct sgl_gen *g, int rc)
{
	if (!g->err)
		sgl_gen_fail(g, rc == -ENOMEM ? -ENOMEM : -EBADMSG,
			     "serve sent a malformed response: %s at byte %zu",
			     engy_sglresp_error(g->jf),
			     engy_sglresp_offset(g->jf));
	return rc;
}

static int json_start(struct sgl_gen *g)
{
	struct engy_sglresp_opts o = jf_opts(g);

	engy_sglresp_reset(g->jf, &o);
	g->ev_json = true;
	return 0;
}

/* SSE data: a "[DONE]" event ends the stream, the others are JSON. */
static int sse_data(void *arg, const char *p, size_t n)
{
	static const char done[] = "[DONE]";
	struct sgl_gen *g = arg;
	size_t k = 0;
	int rc;

	if (!g->ev_json) {
		while (k < n && g->pfx_n < 6) {
			g->pfx[g->pfx_n++] = p[k++];
			if (memcmp(g->pfx, done, g->pfx_n) != 0)
				break;
		}
		if (k == n && memcmp(g->pfx, done, g->pfx_n) == 0)
			return 0; /* it may still be [DONE] */
		json_start(g);
		rc = engy_sglresp_feed(g->jf, g->pfx, g->pfx_n);
		if (rc)
			return jf_failed(g, rc);
		p += k;
		n -= k;
	}
	rc = n ? engy_sglresp_feed(g->jf, p, n) : 0;
	return rc ? jf_failed(g, rc) : 0;
}

static int sse_event(void *arg)
{
	struct sgl_gen *g = arg;
	int rc;

	if (!g->ev_json) {
		if (g->pfx_n == 6 && memcmp(g->pfx, "[DONE]", 6) == 0) {
			g->pfx_n = 0;
			return 0;
		}
		json_start(g);
		rc = engy_sglresp_feed(g->jf, g->pfx, g->pfx_n);
		if (rc)
			return jf_failed(g, rc);
	}
	g->ev_json = false;
	g->pfx_n = 0;
	rc = engy_sglresp_finish(g->jf);
	if (rc)
		return jf_failed(g, rc);
	return take_event(g);
}

static const struct engy_sse_cb sse_cb = { sse_data, sse_event };

/* Response bytes (inside libcurl): the check for cancel is per read. */
int sgl_resp_data(void *arg, const char *p, size_t n)
{
	struct sgl_gen *g = arg;
	long status = sgl_call_status(g->call);
	size_t room;
	int rc;

	if (g->cancelled || g->err)
		return 1;
	if (status != 200) {
		room = ERRBODY_MAX - g->errlen;
		if (!g->errbody)
			g->errbody = malloc(ERRBODY_MAX);
		if (g->errbody && room) {
			memcpy(g->errbody + g->errlen, p, n < room ? n : room);
			g->errlen += n < room ? n : room;
		}
		return 0;
	}
	if (!g->ev_json && !g->sse_mode) {
		/* First bytes: an event stream, or one JSON body even when
		 * a stream was asked for (then the serve chose). */
		g->sse_mode = strncmp(sgl_call_ctype(g->call),
				      "text/event-stream", 17) == 0;
		if (!g->sse_mode)
			json_start(g);
	}
	if (g->sse_mode)
		return engy_sse_feed(&g->sse, p, n) ? 1 : 0;
	rc = engy_sglresp_feed(g->jf, p, n);
	if (rc)
		jf_failed(g, rc);
	return rc ? 1 : 0;
}

/* The call failed at the HTTP level: say why, in the serve's words if any. */
void sgl_resp_failed(struct sgl_gen *g, int code, long status)
{
	struct sgl *s = g->s;
	char msg[ENGY_SGLRESP_MSG_MAX + 64];
	const char *serve_msg = "";
	struct engy_sglresp_opts plain = { 0 };

	if (code && sgl_http_timed_out(code)) {
		sgl_gen_fail(g, -ETIMEDOUT,
			     "serve timed out "
			     "(max_request_s %g)",
			     s->serve_http_s > 0 ? s->serve_http_s
						 : s->max_request_s);
	} else if (code && status == 200) {
		sgl_gen_fail(g, -EPROTO,
			     "serve ended the stream before the "
			     "result: %s",
			     sgl_http_strerror(code));
	} else if (code && sgl_http_unreachable(code)) {
		sgl_gen_fail(g, -ECONNREFUSED, "serve unreachable at %s: %s",
			     g->serve->url, sgl_http_strerror(code));
	} else if (code) {
		sgl_gen_fail(g, -EIO, "serve connection failed: %s",
			     sgl_http_strerror(code));
	} else {
		/* The serve's own words, when it sent JSON with them. */
		engy_sglresp_reset(g->jf, &plain);
		if (g->errbody &&
		    !engy_sglresp_feed(g->jf, g->errbody, g->errlen) &&
		    !engy_sglresp_finish(g->jf))
			serve_msg = engy_sglresp_resp(g->jf)->error;
		sgl_error_text(status, serve_msg, msg, sizeof(msg));
		sgl_gen_fail(g, status >= 500 ? -EIO : -EINVAL, "%s", msg);
	}
}

void sgl_resp_begin(struct sgl_gen *g)
{
	g->c_nids = g->c_nlp = g->c_taken = g->c_ntop = 0;
	g->c_top_seen = false;
	g->c_rows = g->plan.drop;
	g->c_lp_seen = g->have_final = g->c_hidden_seen = false;
	g->c_finish = ENGY_SGLRESP_FINISH_NONE;
	g->c_matched = -1;
	g->c_msg[0] = '\0';
	g->errlen = 0;
	g->sse_mode = g->ev_json = false;
	g->pfx_n = 0;
	engy_sse_init(&g->sse, &sse_cb, g);
}

void sgl_resp_end(struct sgl_gen *g)
{
	if (g->sse_mode) {
		if (!g->have_final)
			sgl_gen_fail(g, -EPROTO,
				     "serve ended the stream "
				     "before the result%s",
				     engy_sse_end(&g->sse) == 1
					     ? " (cut mid-event)"
					     : "");
		return;
	}
	if (!g->ev_json)
		json_start(g); /* no body at all */
	if (engy_sglresp_finish(g->jf))
		jf_failed(g, -EBADMSG);
	else if (!take_event(g) && !g->have_final)
		sgl_gen_fail(g, -EPROTO, "serve response has no finish_reason");
}
