/* SPDX-License-Identifier: MIT */
/*
 * PROVE: on the worker pool, every proof plugin over the request's rows
 * (one that cannot build its proof leaves its scheme null: the answer
 * still goes out, unproven), the whole generation parsed (reasoning, tool
 * calls, finish_reason), and the `response` frame built with its
 * commitment; the loop only sends it.
 * A cancel that came meanwhile drops the result.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genparse.h"
#include "miner_gemm.h"
#include "miner_req.h"
#include "tokenizer.h"

static uint32_t *prompt_with_fold(const struct mreq *r)
{
	uint32_t *ids = malloc((r->n_prompt + r->n_fold + 1) * sizeof(*ids));

	if (!ids)
		return NULL;
	memcpy(ids, r->prompt, r->n_prompt * sizeof(*ids));
	memcpy(ids + r->n_prompt, r->out, r->n_fold * sizeof(*ids));
	return ids;
}

/* Pool thread: reads the request, which nothing else touches meanwhile. */
/* The buyer's stop string that ended the answer: matched in the text,
 * or sampled as its one token; NULL for an end of sequence or the cap. */
static const char *matched_stop(const struct mreq *r)
{
	size_t i;

	if (r->stop_hit)
		return r->stop_str[r->stop_which];
	if (r->res.finish != ENGY_FINISH_STOP || r->res.matched_stop < 0)
		return NULL;
	for (i = 0; i < r->n_stop; i++)
		if (r->stop_of[i] &&
		    r->stop[i] == (uint32_t)r->res.matched_stop)
			return r->stop_of[i];
	return NULL;
}

/* {token, logprob, bytes} of @id into @arr, plus "id" when @with_id. */
static bool add_token(const struct mreq *r, cJSON *arr, uint32_t id, float lp,
		      bool with_id, cJSON **out, size_t *len_out)
{
	cJSON *e, *bytes;
	size_t k, len = 0;
	char *t = NULL;
	bool ok;

	if (engy_tokenizer_decode(r->m->tok, &id, 1, true, &t, &len) < 0) {
		free(t);
		return false;
	}
	e = cJSON_CreateObject();
	if (!e || !cJSON_AddItemToArray(arr, e)) {
		cJSON_Delete(e);
		free(t);
		return false;
	}
	bytes = cJSON_AddArrayToObject(e, "bytes");
	for (k = 0; bytes && k < len; k++)
		if (!cJSON_AddItemToArray(
			    bytes, cJSON_CreateNumber((unsigned char)t[k])))
			bytes = NULL;
	ok = bytes && cJSON_AddStringToObject(e, "token", t ? t : "") &&
	     cJSON_AddNumberToObject(e, "logprob", lp) &&
	     (!with_id || cJSON_AddNumberToObject(e, "id", id));
	free(t);
	if (out)
		*out = e;
	if (len_out)
		*len_out = len;
	return ok;
}

/*
 * choices[0].logprobs when the request asked: one entry per output token
 * of the text (up to a stop string's cut), {token, logprob, bytes,
 * top_logprobs: [{token, logprob, bytes, id}, …]} (top_logprobs' count
 * of the backend's alternatives, best first, less those it did not have
 * or that a constraint masked out (not finite); [] when none were asked;
 * "id" lets a gateway with a tokenizer name the token itself).  NULL
 * when not asked, or when a token has no logprob.
 */
static cJSON *logprobs_json(const struct mreq *r)
{
	size_t i, j, n = mreq_text_ids(r), at = 0, len, K = r->p.top_logprobs;
	cJSON *o, *arr, *e, *top;

	if (!r->p.logprobs || !r->lp)
		return NULL;
	o = cJSON_CreateObject();
	arr = o ? cJSON_AddArrayToObject(o, "content") : NULL;
	if (!arr || !cJSON_AddNullToObject(o, "refusal"))
		goto fail;
	for (i = 0; i < n && (!r->stop_hit || at < r->stop_at); i++) {
		if (isnan(r->lp[i]) || (K && i >= r->n_tlp))
			goto fail;
		if (!add_token(r, arr, r->out[i], r->lp[i], false, &e, &len) ||
		    !(top = cJSON_AddArrayToObject(e, "top_logprobs")))
			goto fail;
		for (j = 0; j < K; j++)
			if (isfinite(r->tlp_lp[i * K + j]) &&
			    !add_token(r, top, r->tlp_ids[i * K + j],
				       r->tlp_lp[i * K + j], true, NULL, NULL))
				goto fail;
		at += len;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

static void prove_fn(void *arg)
{
	struct mreq *r = arg;
	struct miner *m = r->m;
	struct engy_rows rows = { r->rows, ENGY_DTYPE_BF16, (uint32_t)r->n_rows,
				  r->hidden, 0 };
	struct engy_genparse_opts po = { .think_open = r->ci.think_open,
					 .tools = r->ci.tools };
	struct engy_gen_msg msg = { 0 };
	const char *schemes[MINER_MAX_PROOFS];
	char *proofs[MINER_MAX_PROOFS] = { NULL }, *text = NULL, *gemm = NULL;
	const char *toploc = NULL;
	cJSON *lp = NULL;
	uint32_t *prompt = NULL;
	struct timespec t0;
	size_t i, len = 0;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* A proof that cannot be built (the plugin logs why) never fails
	 * the buyer's request: its scheme goes out as null, which the
	 * auditor records as unproven. */
	for (i = 0; i < m->n_proofs; i++) {
		schemes[i] = m->proofs[i].ops->scheme;
		if (m->proofs[i].ops->prove(m->proofs[i].inst, &rows,
					    &proofs[i])) {
			free(proofs[i]);
			proofs[i] = NULL;
		}
		if (!strcmp(schemes[i], "toploc"))
			toploc = proofs[i];
	}
	/* The trace's member binds the TOPLOC proofs sent beside it; one
	 * that cannot be completed goes out as null (unproven). */
	if (r->gemm)
		gemm = miner_gemm_member(r->gemm, toploc);
	if (!rc && r->stop_hit) {
		text = strndup(r->text, r->stop_at);
		len = r->stop_at;
		if (!text)
			rc = -ENOMEM;
	} else if (!rc &&
		   engy_tokenizer_decode(m->tok, r->out, mreq_text_ids(r), true,
					 &text, &len) < 0) {
		rc = -EINVAL;
		snprintf(r->err, sizeof(r->err),
			 "the output could not be decoded");
	}
	if (!rc && engy_genparse(text ? text : "", len, &po, &msg) < 0) {
		rc = -ENOMEM;
		snprintf(r->err, sizeof(r->err),
			 "the output could not be parsed");
	}
	if (!rc && !(prompt = prompt_with_fold(r)))
		rc = -ENOMEM;
	if (!rc)
		lp = logprobs_json(r);
	if (!rc) {
		struct engy_miner_result res = {
			.corr_id = r->corr_id,
			.request_id = r->request_id,
			.model_root = m->model_root,
			.prompt_ids = prompt,
			.n_prompt_ids = r->n_prompt + r->n_fold,
			.output_ids = r->out + r->n_fold,
			.n_output_ids = r->n_out - r->n_fold,
			.schemes = schemes,
			.proofs = (const char *const *)proofs,
			.n_schemes = m->n_proofs,
			.msg = &msg,
			.finish_reason = engy_gen_finish_reason(
				r->res.finish == ENGY_FINISH_LENGTH,
				msg.n_calls),
			.matched_stop = matched_stop(r),
			.logprobs = lp,
			.prompt_tokens = (uint32_t)r->n_prompt,
			.completion_tokens = (uint32_t)r->n_out,
			.cached_tokens = r->res.cached_tokens,
			.has_gemm = r->gemm_on,
			.gemm = gemm,
		};

		r->frame = engy_miner_response_json(&res, &r->frame_len, &rc);
		if (!r->frame)
			snprintf(r->err, sizeof(r->err),
				 "the response could not be "
				 "built: %s",
				 strerror(-rc));
	} else if (!r->err[0]) {
		snprintf(r->err, sizeof(r->err), "out of memory");
	}
	for (i = 0; i < m->n_proofs; i++)
		free(proofs[i]);
	engy_gen_msg_free(&msg);
	free(gemm);
	cJSON_Delete(lp);
	free(text);
	free(prompt);
	r->prove_s = miner_since(&t0);
}

static void prove_done(void *arg, int rc)
{
	struct mreq *r = arg;
	struct miner *m = r->m;

	if (r->cancelled || rc < 0 || miner_loop_over(m)) {
		mreq_end(r, r->cancelled ? r->outcome : "shutdown");
		return;
	}
	if (m->m_prove)
		m->h->metric_observe(m->m_prove, r->prove_s);
	if (!r->frame) {
		mreq_fail(r, "%s", r->err);
		return;
	}
	miner_send(m, r->conn, r->frame, r->frame_len);
	r->frame = NULL;
	mreq_end(r, "ok");
}

void mreq_prove(struct mreq *r)
{
	r->state = MR_PROVE;
	if (r->m->h->work(r->m->h, prove_fn, prove_done, r) < 0)
		mreq_fail(r, "the miner is shutting down");
}
