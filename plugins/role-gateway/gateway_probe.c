/* SPDX-License-Identifier: MIT */
/*
 * The gateway's own probe verifier (specs/gateway.md, "Onboarding"):
 * when the gateway's config holds a proof instance and a backend
 * instance with prefill() on the canonical checkpoint, the commitments of
 * probe answers are checked here, one at a time, as an auditor would
 * (specs/settlement.md §1): the backend recomputes prompt_ids + output ids but
 * the last, its rows from the last prompt position on are the generated
 * tokens' (backend.h), and the proof instance's verify() renders pass,
 * cheat or unproven on the worker pool.  A commitment that names another
 * model_root than the worker's hello is a cheat; one that cannot be used
 * (absent, malformed, too long) is unproven.  Verdicts go to onboarding
 * through the done callback, on the loop thread, in submission order.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include <engy/backend.h>
#include <engy/plugin.h>
#include <engy/proof.h>

#include "gateway_mod.h"
#include "jsonget.h"

struct pv_job {
	struct pv_job *next;
	struct gw_pv *pv;
	uint64_t worker_id;
	uint32_t round;
	uint32_t *ids;
	size_t n_ids;
	uint32_t n_prompt;
	char *toploc;
	struct engy_proof_limits lim;
	bool has_lim;
	bool decided; /* no recompute needed */
	int verdict;
	char reason[64];
	void *rows;
	struct engy_rows r;
	struct engy_gen *gen;
};

struct gw_pv {
	struct gw *g;
	gw_pv_done done;
	const struct engy_proof_ops *proof;
	void *proof_inst;
	const struct engy_backend_ops *be;
	void *be_inst;
	uint32_t max_context;
	struct pv_job *head, *tail, *running;
	struct event *ev;
	unsigned pending;
	bool stopping;
};

static void job_free(struct pv_job *j)
{
	if (!j)
		return;
	free(j->ids);
	free(j->toploc);
	free(j->rows);
	free(j);
}

static void step(struct gw_pv *pv)
{
	if (pv->ev && !pv->stopping)
		event_active(pv->ev, 0, 0);
}

/* The job that ran (or needed no run) is over: tell onboarding. */
static void finish(struct gw_pv *pv, struct pv_job *j)
{
	if (pv->running == j)
		pv->running = NULL;
	pv->pending--;
	pv->done(pv->g, j->worker_id, j->round, j->verdict, j->reason);
	job_free(j);
	step(pv);
}

static void verdict(struct pv_job *j, int v, const char *reason)
{
	j->verdict = v;
	snprintf(j->reason, sizeof(j->reason), "%s", reason);
}

static void verify_fn(void *arg)
{
	struct pv_job *j = arg;
	struct gw_pv *pv = j->pv;
	struct engy_proof_result res;
	int rc;

	rc = pv->proof->verify(pv->proof_inst, &j->r, j->toploc,
			       strlen(j->toploc), j->has_lim ? &j->lim : NULL,
			       &res);
	if (rc < 0) {
		verdict(j, ENGY_VERDICT_UNPROVEN, "verify failed");
		return;
	}
	verdict(j, res.verdict, res.reason[0] ? res.reason : "-");
	free(res.detail);
}

static void verify_done(void *arg, int rc)
{
	struct pv_job *j = arg;

	if (rc < 0)
		verdict(j, ENGY_VERDICT_UNPROVEN, "verify not run");
	finish(j->pv, j);
}

static size_t elem(uint32_t dtype)
{
	return dtype == ENGY_DTYPE_F32 ? 4 : dtype == ENGY_DTYPE_BF16 ? 2 : 0;
}

static void on_prefill(void *arg, int rc, const struct engy_rows *rows)
{
	struct pv_job *j = arg;
	struct gw_pv *pv = j->pv;
	const struct engy_host *h = pv->g->h;
	size_t bytes;

	j->gen = NULL;
	if (rc < 0 || !rows || !elem(rows->dtype) || rows->n_rows != j->n_ids ||
	    j->n_prompt < 1 || pv->stopping) {
		verdict(j, ENGY_VERDICT_UNPROVEN,
			rc < 0 ? "recompute failed"
			       : "recompute gave unusable rows");
		finish(pv, j);
		return;
	}
	bytes = (size_t)rows->n_rows * rows->hidden * elem(rows->dtype);
	j->rows = malloc(bytes ? bytes : 1);
	if (!j->rows) {
		verdict(j, ENGY_VERDICT_UNPROVEN, "out of memory");
		finish(pv, j);
		return;
	}
	memcpy(j->rows, rows->data, bytes);
	j->r = (struct engy_rows){ j->rows, rows->dtype, rows->n_rows,
				   rows->hidden, j->n_prompt - 1 };
	if (h->work(h, verify_fn, verify_done, j) < 0)
		verify_done(j, -ECANCELED);
}

static void on_step(evutil_socket_t fd, short what, void *arg)
{
	struct gw_pv *pv = arg;
	struct pv_job *j;
	int rc;

	while (!pv->running && (j = pv->head)) {
		pv->head = j->next;
		if (!pv->head)
			pv->tail = NULL;
		j->next = NULL;
		if (j->decided) {
			finish(pv, j);
			continue;
		}
		pv->running = j;
		rc = pv->be->prefill(pv->be_inst, j->ids, j->n_ids, on_prefill,
				     j, &j->gen);
		if (rc < 0) {
			verdict(j, ENGY_VERDICT_UNPROVEN, "recompute refused");
			finish(pv, j);
		}
	}
}

/* The ids of @arr (non-negative integers below 2^32) appended to @j. */
static int take_ids(struct pv_job *j, const cJSON *arr, size_t skip_last)
{
	const cJSON *e;
	size_t n = (size_t)cJSON_GetArraySize(arr), k = 0;
	uint32_t *p;

	if (n < skip_last)
		return -EINVAL;
	n -= skip_last;
	p = realloc(j->ids, (j->n_ids + n + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	j->ids = p;
	cJSON_ArrayForEach(e, arr)
	{
		if (k == n)
			break;
		if (!cJSON_IsNumber(e) || e->valuedouble < 0 ||
		    e->valuedouble > 4294967295.0 ||
		    e->valuedouble != (double)(uint32_t)e->valuedouble)
			return -EINVAL;
		j->ids[j->n_ids++] = (uint32_t)e->valuedouble;
		k++;
	}
	return 0;
}

/* Fill @j from the commitment @c, or decide it at once. */
static int prepare_c(struct gw_pv *pv, struct pv_job *j, const cJSON *c,
		     const char *model_root)
{
	const cJSON *root = engy_json_get(c, "model_root");
	const cJSON *t = engy_json_get(c, pv->proof->scheme);
	const cJSON *pids = engy_json_get(t, "prompt_ids");
	const cJSON *out = engy_json_get(c, "output_token_ids");
	int rc;

	j->decided = true;
	if (!cJSON_IsObject(c) || !cJSON_IsObject(t) || !cJSON_IsArray(pids) ||
	    !cJSON_IsArray(out)) {
		verdict(j, ENGY_VERDICT_UNPROVEN, "no usable commitment");
		return 0;
	}
	if (model_root && model_root[0] &&
	    (!cJSON_IsString(root) || strcmp(root->valuestring, model_root))) {
		verdict(j, ENGY_VERDICT_CHEAT,
			"model_root differs from the hello");
		return 0;
	}
	if (cJSON_GetArraySize(pids) < 1 || cJSON_GetArraySize(out) < 1) {
		verdict(j, ENGY_VERDICT_UNPROVEN, "no prompt or no output ids");
		return 0;
	}
	rc = take_ids(j, pids, 0);
	j->n_prompt = (uint32_t)j->n_ids;
	if (rc == 0)
		rc = take_ids(j, out, 1);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0) {
		verdict(j, ENGY_VERDICT_UNPROVEN, "malformed token ids");
		return 0;
	}
	if (pv->max_context && j->n_ids > pv->max_context) {
		verdict(j, ENGY_VERDICT_UNPROVEN,
			"longer than the recompute context");
		return 0;
	}
	j->toploc = cJSON_PrintUnformatted(t);
	if (!j->toploc)
		return -ENOMEM;
	j->decided = false;
	return 0;
}

static int prepare(struct gw_pv *pv, struct pv_job *j, const cJSON *frame,
		   const char *model_root)
{
	cJSON *own;
	const cJSON *c = gw_frame_member(frame, "commitment", &own);
	int rc;

	if (!c && cJSON_IsRaw(engy_json_get(frame, "commitment")))
		return -ENOMEM; /* checked text that did not parse */
	rc = prepare_c(pv, j, c, model_root);
	cJSON_Delete(own);
	return rc;
}

int gw_pv_submit(struct gw_pv *pv, const cJSON *frame, const char *model_root,
		 uint32_t toploc_v, uint32_t toploc_p_ppm,
		 uint16_t mant_mean_centi, uint16_t mant_median_centi,
		 uint64_t worker_id, uint32_t round)
{
	struct pv_job *j;
	int rc;

	if (!pv || pv->stopping)
		return -ESHUTDOWN;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->pv = pv;
	j->worker_id = worker_id;
	j->round = round;
	if (toploc_p_ppm) {
		j->has_lim = true;
		j->lim.size = sizeof(j->lim);
		j->lim.max_exp_mismatches = toploc_v;
		j->lim.min_pass_ratio = toploc_p_ppm / 1e6;
		j->lim.max_mant_mean = mant_mean_centi / 100.0;
		j->lim.max_mant_median = mant_median_centi / 100.0;
	}
	rc = prepare(pv, j, frame, model_root);
	if (rc < 0) {
		job_free(j);
		return rc;
	}
	if (pv->tail)
		pv->tail->next = j;
	else
		pv->head = j;
	pv->tail = j;
	pv->pending++;
	step(pv);
	return 0;
}

unsigned gw_pv_pending(const struct gw_pv *pv)
{
	return pv ? pv->pending : 0;
}

void gw_pv_stop(struct gw_pv *pv)
{
	if (!pv)
		return;
	pv->stopping = true;
	if (pv->running && pv->running->gen && pv->be->cancel)
		pv->be->cancel(pv->be_inst, pv->running->gen);
}

void gw_pv_free(struct gw_pv *pv)
{
	struct pv_job *j;

	if (!pv)
		return;
	/* Past the loop: the backend calls nobody back any more. */
	while ((j = pv->head)) {
		pv->head = j->next;
		job_free(j);
	}
	job_free(pv->running);
	if (pv->ev)
		event_free(pv->ev);
	free(pv);
}

int gw_pv_new(struct gw *g, gw_pv_done done, struct gw_pv **out)
{
	const struct engy_host *h = g->h;
	struct engy_peer_info pi = { .size = sizeof(pi) };
	struct engy_peer_info proof_in = { 0 }, be_in = { 0 };
	struct engy_model_info info;
	struct gw_pv *pv;
	size_t i;

	*out = NULL;
	for (i = 0; h->peer_at(h, i, &pi) == 0; i++) {
		if (pi.kind == ENGY_KIND_PROOF && !proof_in.ops &&
		    ((const struct engy_proof_ops *)pi.ops)->verify)
			proof_in = pi;
		else if (pi.kind == ENGY_KIND_BACKEND && !be_in.ops &&
			 ((const struct engy_backend_ops *)pi.ops)->prefill)
			be_in = pi;
	}
	if (!proof_in.ops || !be_in.ops)
		return 0;
	pv = calloc(1, sizeof(*pv));
	if (!pv)
		return -ENOMEM;
	pv->g = g;
	pv->done = done;
	pv->proof = proof_in.ops;
	pv->proof_inst = proof_in.inst;
	pv->be = be_in.ops;
	pv->be_inst = be_in.inst;
	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	if (pv->be->info && pv->be->info(pv->be_inst, &info) == 0)
		pv->max_context = info.max_context;
	pv->ev = event_new(g->h->evbase(g->h), -1, 0, on_step, pv);
	if (!pv->ev) {
		free(pv);
		return -ENOMEM;
	}
	GW_LOG(g, ENGY_LOG_INFO,
	       "event=probe_verifier proof=%s backend=%s scheme=%s "
	       "max_context=%u",
	       proof_in.instance, be_in.instance,
	       pv->proof->scheme ? pv->proof->scheme : "?", pv->max_context);
	*out = pv;
	return 0;
}
