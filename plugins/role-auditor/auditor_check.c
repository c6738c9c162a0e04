/* SPDX-License-Identifier: MIT */
/*
 * One sampled request (specs/auditor.md §2), one at a time:
 *   1. pool: parse the commitment (model_root, prompt_ids, output ids),
 *      read the model spec (thresholds) and check the root is one the
 *      model accepts;
 *   2. loop: the backend's prefill(prompt ‖ output[:-1]); its rows from
 *      the last prompt position on are the ones the miner proved
 *      (specs/checkpoints.md §5), copied;
 *   3. pool: every proof plugin's verify() with the model's limits, one
 *      verdict row each (statistics only), written to the store.
 * Anything that makes the proof unusable is `unproven`, never `cheat`.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "auditor_int.h"
#include "hex.h"

#define MAX_IDS (1u << 20)

static int ids_of(const cJSON *arr, uint32_t *out, size_t *n)
{
	const cJSON *e;

	*n = 0;
	cJSON_ArrayForEach(e, arr)
	{
		if (!cJSON_IsNumber(e) || e->valuedouble < 0 ||
		    e->valuedouble > 4294967295.0 ||
		    e->valuedouble != floor(e->valuedouble))
			return -EINVAL;
		if (out)
			out[*n] = (uint32_t)e->valuedouble;
		(*n)++;
	}
	return 0;
}

/* Step 1, on the pool. */
static void prep_fn(void *arg)
{
	struct aud_job *j = arg;
	struct aud *a = j->a;
	struct engy_model_root root;
	const cJSON *t, *pid, *oid, *mr;
	uint8_t rb[32];
	size_t np = 0, no = 0;
	cJSON *c;

	/* One auditor per job on a shared store (specs/auditor.md §2). */
	if (a->st->audit_claim && j->request_id[0]) {
		int64_t now = aud_now_ms(), held = 0;
		int rc = a->st->audit_claim(a->sti, j->request_id, a->holder,
					    now, now + a->c->claim_s * 1000,
					    &held);

		if (rc == -EALREADY && held == ENGY_CLAIM_DONE) {
			j->claim = AUD_CLAIM_DONE;
			return;
		}
		if (rc < 0) { /* held elsewhere, or the store failed */
			int64_t soon = now + 2 * a->c->pull_s * 1000;

			j->claim = AUD_CLAIM_HELD;
			j->retry_ms =
				rc == -EALREADY && held < soon ? held : soon;
			return;
		}
		j->claimed = true;
	}
	j->model_rc = a->st->model_get(a->sti, j->model, &j->spec);
	if (j->model_rc) {
		j->why = "model_unknown";
		return;
	}
	c = j->commitment ? cJSON_Parse(j->commitment) : NULL;
	t = cJSON_GetObjectItemCaseSensitive(c, "toploc");
	pid = cJSON_GetObjectItemCaseSensitive(t, "prompt_ids");
	oid = cJSON_GetObjectItemCaseSensitive(c, "output_token_ids");
	mr = cJSON_GetObjectItemCaseSensitive(c, "model_root");
	if (!c || !cJSON_IsArray(pid) || !cJSON_IsArray(oid) ||
	    !cJSON_IsString(mr) || ids_of(pid, NULL, &np) ||
	    ids_of(oid, NULL, &no) || !np || np + no > MAX_IDS) {
		j->why = "bad_commitment";
		goto out;
	}
	if (!no) {
		j->why = "no_chunks";
		goto out;
	}
	snprintf(j->root_hex, sizeof(j->root_hex), "%s", mr->valuestring);
	if (engy_hex_parse(mr->valuestring, rb, sizeof(rb)) ||
	    a->st->model_root_get(a->sti, rb, &root) ||
	    strcmp(root.model, j->model)) {
		j->why = "root_unknown";
		goto out;
	}
	j->ids = malloc((np + no) * sizeof(*j->ids));
	if (!j->ids) {
		j->why = "recompute_failed";
		goto out;
	}
	ids_of(pid, j->ids, &np);
	ids_of(oid, j->ids + np, &no);
	j->n_prompt = np;
	j->n_out = no;
out:
	cJSON_Delete(c);
}

static void verify_done(void *arg, int prc);

static void fill_stats(struct engy_verdict *v, const char *detail)
{
	cJSON *d = detail ? cJSON_Parse(detail) : NULL;
	const cJSON *e, *arr;
	uint32_t *xs = NULL;
	size_t n = 0, i, k;
	double mm = 0, md = 0;

	v->chunks = (uint32_t)cJSON_GetNumberValue(
		cJSON_GetObjectItemCaseSensitive(d, "chunks"));
	e = cJSON_GetObjectItemCaseSensitive(d, "passed");
	v->passed = cJSON_IsNumber(e) ? (uint32_t)e->valuedouble : 0;
	if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(d, "chunks")))
		v->chunks = 0;
	if (v->passed > v->chunks)
		v->passed = v->chunks;
	arr = cJSON_GetObjectItemCaseSensitive(d, "exp_mismatches");
	n = (size_t)cJSON_GetArraySize(arr);
	xs = n ? calloc(n, sizeof(*xs)) : NULL;
	i = 0;
	if (xs)
		cJSON_ArrayForEach(e, arr) xs[i++] =
			cJSON_IsNumber(e) ? (uint32_t)e->valuedouble : 0;
	/* nearest-rank p99 over the chunks, and the maximum */
	for (i = 1; xs && i < n; i++)
		for (k = i; k > 0 && xs[k - 1] > xs[k]; k--) {
			uint32_t t = xs[k];

			xs[k] = xs[k - 1];
			xs[k - 1] = t;
		}
	if (xs && n) {
		v->exp_p99 = xs[(99 * n + 99) / 100 - 1];
		v->exp_max = xs[n - 1];
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(
				      d, "mant_mean")) if (cJSON_IsNumber(e) &&
							   e->valuedouble > mm)
		mm = e->valuedouble;
	cJSON_ArrayForEach(e,
			   cJSON_GetObjectItemCaseSensitive(
				   d, "mant_median")) if (cJSON_IsNumber(e) &&
							  e->valuedouble > md)
		md = e->valuedouble;
	v->mant_mean_max_milli = mm > 4e6 ? 4000000000u : (uint32_t)(mm * 1000);
	v->mant_median_max_milli =
		md > 4e6 ? 4000000000u : (uint32_t)(md * 1000);
	free(xs);
	cJSON_Delete(d);
}

/*
 * The limits every scheme gets, from the model's row (specs/auditor.md,
 * "GEMM audit"): TOPLOC's thresholds; the GEMM sizes (0: the verifier's
 * own option); the GEMM rate, the auditor's gemm_rate when that is set
 * (>= 0), else the model's.
 */
void aud_limits(const struct aud_conf *c, const struct engy_model *m,
		struct engy_proof_limits *lim)
{
	memset(lim, 0, sizeof(*lim));
	lim->size = sizeof(*lim);
	lim->max_exp_mismatches = m->toploc_v;
	lim->min_pass_ratio = m->toploc_p_ppm / 1e6;
	lim->max_mant_mean = m->toploc_mant_mean_centi / 100.0;
	lim->max_mant_median = m->toploc_mant_median_centi / 100.0;
	lim->gemm_layers = m->gemm_layers;
	lim->gemm_tokens = m->gemm_tokens;
	lim->gemm_projections = m->gemm_projections;
	lim->gemm_spots = m->gemm_spots;
	lim->gemm_z = m->gemm_z_milli / 1e3;
	lim->gemm_c_el = m->gemm_c_el_milli / 1e3;
	lim->gemm_rate =
		c->gemm_rate >= 0 ? c->gemm_rate : m->gemm_rate_ppm / 1e6;
}

/* Step 3, on the pool: every scheme, one verdict each, stored. */
static void verify_fn(void *arg)
{
	struct aud_job *j = arg;
	struct aud *a = j->a;
	struct engy_rows rows = { j->rows, j->dtype, j->n_rows, j->hidden, 0 };
	struct engy_proof_limits lim;
	cJSON *c = j->commitment ? cJSON_Parse(j->commitment) : NULL;
	unsigned i;

	aud_limits(a->c, &j->spec, &lim);
	for (i = 0; i < a->n_pr; i++) {
		struct engy_verdict *v = &j->v[i];
		struct engy_proof_result res = { 0 };
		const cJSON *m;
		char *mj = NULL;

		v->time_ms = aud_now_ms();
		v->request_time_ms = j->time_ms;
		v->is_probe = j->is_probe;
		v->topk = j->spec.toploc_topk;
		v->limit_v = j->spec.toploc_v;
		v->limit_p_ppm = j->spec.toploc_p_ppm;
		snprintf(v->scheme, sizeof(v->scheme), "%s",
			 a->pr[i].ops->scheme);
		snprintf(v->request_id, sizeof(v->request_id), "%s",
			 j->request_id);
		snprintf(v->miner, sizeof(v->miner), "%s", j->miner);
		snprintf(v->model, sizeof(v->model), "%s", j->model);
		v->verdict = ENGY_VERDICT_UNPROVEN;
		if (aud_proof_challenges(&a->pr[i])) {
			/* a challenged scheme: a verdict only when sampled */
			v->topk = v->limit_v = v->limit_p_ppm = 0;
			v->scheme[0] = '\0';
			if (!aud_gemm_audit(a, j, &a->pr[i], &lim, v))
				continue;
			snprintf(v->scheme, sizeof(v->scheme), "%s",
				 a->pr[i].ops->scheme);
		} else if (!a->pr[i].ops->verify) {
			v->scheme[0] = '\0';
			continue;
		} else if (j->why) {
			snprintf(v->reason, sizeof(v->reason), "%s", j->why);
		} else if (!(m = cJSON_GetObjectItemCaseSensitive(c,
								  v->scheme)) ||
			   !(mj = cJSON_PrintUnformatted(m))) {
			snprintf(v->reason, sizeof(v->reason), "no_proof");
		} else if (a->pr[i].ops->verify(a->pr[i].inst, &rows, mj,
						strlen(mj), &lim, &res) < 0) {
			snprintf(v->reason, sizeof(v->reason), "verify_failed");
		} else {
			v->verdict = (uint32_t)res.verdict;
			snprintf(v->reason, sizeof(v->reason), "%s",
				 res.reason);
			fill_stats(v, res.detail);
		}
		free(res.detail);
		free(mj);
		if (v->verdict < ENGY_VERDICT_PASS ||
		    v->verdict > ENGY_VERDICT_UNPROVEN)
			v->verdict = ENGY_VERDICT_UNPROVEN;
		if (a->st->verdict_put(a->sti, v))
			j->rc = -EIO;
	}
	cJSON_Delete(c);
	/* Done for good once its verdicts are stored; a failed write lets
	 * the claim lapse, and another auditor tries again. */
	if (j->claimed && !j->rc && a->n_pr)
		j->done_rc =
			a->st->audit_claim(a->sti, j->request_id, a->holder,
					   aud_now_ms(), ENGY_CLAIM_DONE, NULL);
	if (a->n_pr)
		aud_ack(a, j);
}

static void finish(struct aud_job *j)
{
	struct aud *a = j->a;

	a->inflight++;
	if (a->h->work(a->h, verify_fn, verify_done, j) < 0) {
		a->inflight--;
		verify_done(j, -ESHUTDOWN);
	}
}

static void on_rows(void *arg, int rc, const struct engy_rows *rows)
{
	struct aud_job *j = arg;
	size_t es, first;

	j->gen = NULL;
	j->a->be[j->be].busy = false;
	first = j->n_prompt - 1;
	if (rc < 0 || !rows || rows->n_rows < first + j->n_out ||
	    (rows->dtype != ENGY_DTYPE_F32 && rows->dtype != ENGY_DTYPE_BF16)) {
		j->why = "recompute_failed";
		finish(j);
		return;
	}
	es = rows->dtype == ENGY_DTYPE_F32 ? 4 : 2;
	j->rows = malloc(j->n_out * rows->hidden * es);
	if (!j->rows) {
		j->why = "recompute_failed";
		finish(j);
		return;
	}
	memcpy(j->rows, (const uint8_t *)rows->data + first * rows->hidden * es,
	       j->n_out * rows->hidden * es);
	j->n_rows = (uint32_t)j->n_out;
	j->hidden = rows->hidden;
	j->dtype = rows->dtype;
	finish(j);
}

static int pick_backend(struct aud *a, const char *model)
{
	unsigned i;

	for (i = 0; i < a->n_be; i++)
		if (!strcmp(a->be[i].name, model))
			return (int)i;
	return a->n_be == 1 ? 0 : -1;
}

/* Another auditor has (or had) the job: drop it, or retry it later. */
static void claim_skip(struct aud *a, struct aud_job *j)
{
	if (j->claim == AUD_CLAIM_DONE) {
		aud_log(a, ENGY_LOG_INFO,
			"event=audit_skipped request_id=%s reason=audited_elsewhere",
			j->request_id);
		aud_job_free(j);
	} else if (a->d_len >= (unsigned)a->c->queue_max) {
		a->n_dropped++;
		aud_log(a, ENGY_LOG_WARNING,
			"event=audit_dropped request_id=%s reason=deferred_full",
			j->request_id);
		aud_job_free(j);
	} else {
		aud_log(a, ENGY_LOG_INFO,
			"event=audit_deferred request_id=%s reason=claimed_elsewhere retry_ms=%lld",
			j->request_id, (long long)j->retry_ms);
		j->next = a->d_head;
		a->d_head = j;
		a->d_len++;
	}
	a->checking = false;
	aud_check_next(a);
}

static void prep_done(void *arg, int prc)
{
	struct aud_job *j = arg;
	struct aud *a = j->a;
	int rc;

	a->inflight--;
	if (prc < 0 || a->stopping) {
		verify_done(j, -ESHUTDOWN);
		return;
	}
	if (j->claim != AUD_CLAIM_OURS) {
		claim_skip(a, j);
		return;
	}
	if (j->why) {
		finish(j);
		return;
	}
	j->be = pick_backend(a, j->model);
	if (j->be < 0) {
		j->why = "no_checkpoint";
		finish(j);
		return;
	}
	a->be[j->be].busy = true;
	rc = a->be[j->be].ops->prefill(a->be[j->be].inst, j->ids,
				       j->n_prompt + j->n_out - 1, on_rows, j,
				       &j->gen);
	if (rc < 0) {
		a->be[j->be].busy = false;
		j->why = "recompute_failed";
		finish(j);
	}
}

static const char *vname(uint32_t v)
{
	return v == ENGY_VERDICT_PASS	 ? "pass"
	       : v == ENGY_VERDICT_CHEAT ? "cheat"
					 : "unproven";
}

static void verify_done(void *arg, int prc)
{
	struct aud_job *j = arg;
	struct aud *a = j->a;
	unsigned i;

	if (prc != -ESHUTDOWN)
		a->inflight--;
	for (i = 0; prc >= 0 && i < a->n_pr; i++) {
		const struct engy_verdict *v = &j->v[i];

		if (!v->scheme[0]) /* not sampled for that scheme */
			continue;
		aud_log(a, ENGY_LOG_NOTICE,
			"event=verdict request_id=%s miner=%s model=%s probe=%u scheme=%s verdict=%s reason=%s chunks=%u passed=%u exp_p99=%u exp_max=%u topk=%u p99_score=%.4f mant_mean_max=%.3f limit_v=%u stored=%s",
			v->request_id, v->miner, v->model, v->is_probe,
			v->scheme, vname(v->verdict), v->reason, v->chunks,
			v->passed, v->exp_p99, v->exp_max, v->topk,
			v->topk ? (double)v->exp_p99 / v->topk : 0.0,
			v->mant_mean_max_milli / 1000.0, v->limit_v,
			j->rc ? "no" : "yes");
	}
	if (prc >= 0 && j->done_rc == -EALREADY)
		aud_log(a, ENGY_LOG_WARNING,
			"event=claim_lost request_id=%s claim_s=%lld effect=\"another auditor took the job after the claim lapsed\"",
			j->request_id, (long long)a->c->claim_s);
	a->n_done++;
	a->checking = false;
	aud_job_free(j);
	aud_check_next(a);
}

void aud_check_next(struct aud *a)
{
	struct aud_job *j = a->q_head;

	if (a->checking || a->stopping || !j)
		return;
	a->q_head = j->next;
	if (!a->q_head)
		a->q_tail = NULL;
	a->q_len--;
	j->next = NULL;
	a->checking = true;
	a->inflight++;
	if (a->h->work(a->h, prep_fn, prep_done, j) < 0) {
		a->inflight--;
		a->checking = false;
		aud_job_free(j);
	}
}
