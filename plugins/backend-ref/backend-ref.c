/* SPDX-License-Identifier: MIT */
/*
 * backend-ref: the reference engine (lib/qwen3) behind backend.h's ops, in
 * process.  create() reads only config.json; start() loads the weights on
 * the worker pool; requests run as pool steps (ref.h, ref_sched.c).
 *
 * Hidden states (specs/checkpoints.md): the row streamed with an output
 * token is the final hidden state (after the final norm, the input of
 * lm_head) whose logits chose that token, i.e. of the position before it:
 * the last prompt position for the first token.  prefill() of prompt +
 * output gives every position; its rows n_prompt-1 .. n-2 are those same
 * rows, bit for bit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <engy/backend.h>
#include <engy/plugin.h>

#include "checkfmt.h"
#include "config.h"
#include "hex.h"
#include "ref.h"
#include "tokenizer.h"

struct ref_conf {
	const char *checkpoint;
	const char *device;
	const char *name;
	const char *kernel_profile;
	int64_t threads;
	int64_t max_context;
	int64_t max_batch;
	int64_t max_queue;
	int64_t prefill_chunk;
	bool gemm_trace;
	const char *gemm_spec_root;
	int64_t gemm_hold_s;
	int64_t gemm_max_bytes;
};

#define OFF(f) offsetof(struct ref_conf, f)

static const struct engy_opt ref_opts[] = {
	{ "checkpoint", ENGY_OPT_STR, ENGY_OPT_REQUIRED, OFF(checkpoint), NULL,
	  "ENGY_REF_CHECKPOINT", 0, 0,
	  "Hugging Face checkpoint directory (config.json, *.safetensors)" },
	{ "device", ENGY_OPT_STR, 0, OFF(device), "cpu", "ENGY_REF_DEVICE", 0,
	  0,
	  "where matmuls run: cpu, or cuda (needs a --with-cuda build and a GPU)" },
	{ "name", ENGY_OPT_STR, 0, OFF(name), NULL, NULL, 0, 0,
	  "served model name (default: the checkpoint directory's name)" },
	{ "kernel_profile", ENGY_OPT_STR, 0, OFF(kernel_profile), "ref",
	  "ENGY_REF_KERNEL_PROFILE", 0, 0,
	  "summation order and activation precision (specs/checkpoints.md): "
	  "ref (the auditor's), splitk, warp32, bf16act, splitk-f32, "
	  "fp8-bf16, bf16dp or amx; with device cuda ref or bf16act (cuBLAS's "
	  "bf16 GEMM)" },
	{ "threads", ENGY_OPT_INT, 0, OFF(threads), "0", "ENGY_REF_THREADS", 0,
	  1024,
	  "compute threads for matmuls and attention (0: every online CPU)" },
	{ "max_context", ENGY_OPT_INT, 0, OFF(max_context), "0", NULL, 0,
	  1 << 24,
	  "prompt + output tokens per request (0: max_position_embeddings)" },
	{ "max_batch", ENGY_OPT_INT, 0, OFF(max_batch), "4", NULL, 1, 4096,
	  "requests decoded together; more wait in the queue" },
	{ "max_queue", ENGY_OPT_INT, 0, OFF(max_queue), "64", NULL, 0, 1 << 20,
	  "requests waiting beyond max_batch; more are refused (EBUSY)" },
	{ "prefill_chunk", ENGY_OPT_INT, 0, OFF(prefill_chunk), "128", NULL, 1,
	  65536, "prompt tokens fed per step (bounds step time and memory)" },
	{ "gemm_trace", ENGY_OPT_BOOL, 0, OFF(gemm_trace), "true",
	  "ENGY_REF_GEMM_TRACE", 0, 0,
	  "offer GEMM audit traces to requests that ask (specs/gemm-audit.md); "
	  "the checkpoint's model root is then computed at load unless "
	  "gemm_spec_root is set" },
	{ "gemm_spec_root", ENGY_OPT_STR, 0, OFF(gemm_spec_root), NULL, NULL, 0,
	  0,
	  "the pinned model root (64 hex digits) traces bind, instead of the "
	  "one computed from the checkpoint at load" },
	{ "gemm_hold_s", ENGY_OPT_INT, 0, OFF(gemm_hold_s), "300", NULL, 1,
	  86400, "seconds a trace is kept in memory for an opening" },
	{ "gemm_max_bytes", ENGY_OPT_INT, 0, OFF(gemm_max_bytes), "536870912",
	  NULL, 4096, (int64_t)1 << 40,
	  "memory kept traces may hold; the oldest are evicted beyond it" },
	ENGY_OPT_END
};

static int ref_create(const struct engy_host *host, const void *conf,
		      void **inst)
{
	const struct ref_conf *c = conf;
	struct ref *r;
	const char *base;
	char err[512] = "";
	int rc;

	*inst = NULL;
	if (!c->checkpoint || !*c->checkpoint) {
		engy_err(
			host,
			"event=config_invalid option=checkpoint reason=\"required\"");
		return -EINVAL;
	}
	if (c->device && strcmp(c->device, "cpu") &&
	    strcmp(c->device, "cuda")) {
		engy_err(
			host,
			"event=config_invalid option=device reason=\"cpu or cuda\"");
		return -EINVAL;
	}
	if (c->kernel_profile &&
	    (engy_q3_profile_parse(c->kernel_profile) < 0 ||
	     (engy_q3_profile_parse(c->kernel_profile) != Q3_PROFILE_REF &&
	      engy_q3_profile_parse(c->kernel_profile) != Q3_PROFILE_BF16ACT &&
	      c->device && !strcmp(c->device, "cuda")))) {
		engy_err(host,
			 "event=config_invalid option=kernel_profile "
			 "reason=\"ref, splitk, warp32, bf16act, splitk-f32, "
			 "fp8-bf16, bf16dp or amx; "
			 "only ref or bf16act with device cuda\"");
		return -EINVAL;
	}
#ifndef HAVE_CUDA
	if (c->device && !strcmp(c->device, "cuda")) {
		engy_err(
			host,
			"event=config_invalid option=device "
			"reason=\"this build has no CUDA path (configure --with-cuda)\"");
		return -ENOTSUP;
	}
#endif
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->host = host;
	snprintf(r->dir, sizeof(r->dir), "%s", c->checkpoint);
	{
		char tp[600];

		snprintf(tp, sizeof(tp), "%s/tokenizer.json", r->dir);
		r->has_tok = access(tp, R_OK) == 0;
	}
	rc = engy_q3_config_load(r->dir, &r->cfg, err, sizeof(err));
	if (rc) {
		engy_err(host,
			 "event=config_invalid option=checkpoint reason=\"%s\"",
			 err);
		free(r);
		return rc;
	}
	base = strrchr(r->dir, '/');
	base = base && base[1] ? base + 1 : r->dir;
	snprintf(r->name, sizeof(r->name), "%.127s",
		 c->name && *c->name ? c->name : base);
	r->lo.threads = (unsigned)c->threads;
	r->lo.profile = c->kernel_profile
				? engy_q3_profile_parse(c->kernel_profile)
				: Q3_PROFILE_REF;
	r->lo.device = c->device && !strcmp(c->device, "cuda") ? Q3_DEVICE_CUDA
							       : Q3_DEVICE_CPU;
	r->max_ctx = c->max_context ? (uint32_t)c->max_context : r->cfg.max_pos;
	r->max_batch = (uint32_t)c->max_batch;
	r->max_queue = (uint32_t)c->max_queue;
	r->chunk = (uint32_t)c->prefill_chunk;
	if (c->gemm_spec_root && *c->gemm_spec_root) {
		uint8_t tmp[32];

		if (strlen(c->gemm_spec_root) != 64 ||
		    engy_hex_parse(c->gemm_spec_root, tmp, 32)) {
			engy_err(host,
				 "event=config_invalid option=gemm_spec_root "
				 "reason=\"64 hex digits\"");
			free(r);
			return -EINVAL;
		}
	}
	host->metric(host, ENGY_METRIC_COUNTER, "engy_backend_ref_tokens_total",
		     "tokens generated by the reference engine", NULL, NULL, 0,
		     &r->m_tokens);
	host->metric(host, ENGY_METRIC_COUNTER,
		     "engy_backend_ref_prefill_tokens_total",
		     "positions recomputed by prefill()", NULL, NULL, 0,
		     &r->m_prefill);
	host->metric(host, ENGY_METRIC_GAUGE, "engy_backend_ref_requests",
		     "requests running or queued", NULL, NULL, 0,
		     &r->m_requests);
	ref_gemm_setup(r, c->gemm_trace, c->gemm_spec_root, c->gemm_hold_s,
		       c->gemm_max_bytes);
	*inst = r;
	return 0;
}

struct load {
	struct ref *r;
	struct q3_model *m;
	char err[512];
	int rc;
	double secs;
	struct engy_cons_vocab *cvocab;
	uint8_t spec_root[32]; /* the checkpoint's model root (GEMM audit) */
	int spec_rc;
	char spec_err[256];
};

/*
 * The checkpoint's tokenizer as constrained decoding needs it: each id's
 * bytes (special tokens never match).  NULL when the checkpoint has no
 * tokenizer.json: the backend then enforces no constraint.
 */
static struct engy_cons_vocab *cons_vocab(const char *dir, uint32_t n_ids)
{
	struct engy_tokenizer *t;
	struct engy_cons_vocab *v;
	const uint8_t *p;
	size_t n;
	uint32_t id;

	if (engy_tokenizer_load(dir, &t, NULL, 0))
		return NULL;
	v = engy_cons_vocab_new(n_ids);
	for (id = 0; v && id < n_ids; id++) {
		if (engy_tokenizer_token_bytes(t, id, &p, &n) ||
		    engy_tokenizer_is_special(t, id))
			continue;
		if (engy_cons_vocab_set(v, id, p, n)) {
			engy_cons_vocab_free(v);
			v = NULL;
		}
	}
	if (v && engy_cons_vocab_seal(v)) {
		engy_cons_vocab_free(v);
		v = NULL;
	}
	engy_tokenizer_free(t);
	return v;
}

static void load_run(void *arg)
{
	struct load *l = arg;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	l->rc = engy_q3_model_load(l->r->dir, &l->r->lo, &l->m, l->err,
				   sizeof(l->err));
	if (!l->rc)
		l->cvocab = cons_vocab(l->r->dir, l->r->cfg.vocab);
	if (!l->rc && l->r->gemm_on && !l->r->spec_set)
		l->spec_rc = ref_gemm_spec_root(l->r->dir, l->r->lo.threads,
						l->spec_root, l->spec_err,
						sizeof(l->spec_err));
	clock_gettime(CLOCK_MONOTONIC, &b);
	l->secs =
		(double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
}

static void load_done(void *arg, int rc)
{
	struct load *l = arg;
	struct ref *r = l->r;

	if (!rc)
		rc = l->rc;
	if (!rc) {
		r->smp = engy_q3_sampler_new(r->cfg.vocab);
		if (!r->smp)
			rc = -ENOMEM;
	}
	if (!rc && l->cvocab) {
		r->cscratch = malloc(r->cfg.vocab);
		if (!r->cscratch)
			rc = -ENOMEM;
	}
	if (rc) {
		engy_cons_vocab_free(l->cvocab);
		engy_q3_model_free(l->m);
		snprintf(r->load_err, sizeof(r->load_err), "%s",
			 l->err[0] ? l->err : strerror(-rc));
		r->state = REF_FAILED;
		engy_err(r->host, "event=model_load_failed rc=%d reason=\"%s\"",
			 rc, r->load_err);
		free(l);
		ref_fail_all(r, rc, "the checkpoint did not load");
		return;
	}
	r->m = l->m;
	r->cvocab = l->cvocab;
	r->state = REF_READY;
	engy_info(r->host,
		  "event=model_loaded model=%s layers=%u hidden=%u vocab=%u "
		  "moe=%d weights_mb=%.1f device=\"%s\" load_s=%.3f",
		  r->name, r->cfg.n_layers, r->cfg.hidden, r->cfg.vocab,
		  r->cfg.moe, engy_q3_model_bytes(r->m) / 1e6,
		  engy_q3_model_device(r->m), l->secs);
	ref_gemm_ready(r, l->spec_rc, l->spec_root, l->spec_err);
	free(l);
	ref_kick(r);
}

static int ref_start(void *inst)
{
	struct ref *r = inst;
	struct load *l;
	int rc;

	if (r->state != REF_INIT)
		return 0;
	rc = ref_gemm_start(r);
	if (rc)
		return rc;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->r = r;
	r->state = REF_LOADING;
	rc = r->host->work(r->host, load_run, load_done, l);
	if (rc) {
		r->state = REF_INIT;
		free(l);
	}
	return rc;
}

static void ref_stop(void *inst)
{
	((struct ref *)inst)->stopping = true;
}

static void ref_destroy(void *inst)
{
	struct ref *r = inst;
	struct engy_gen *g;

	if (!r)
		return;
	/* The host drained the pool; what is left gets no callback. */
	while ((g = r->active)) {
		r->active = g->next;
		ref_req_free(g);
	}
	while ((g = r->queue)) {
		r->queue = g->next;
		ref_req_free(g);
	}
	ref_gemm_destroy(r);
	engy_q3_sampler_free(r->smp);
	engy_q3_model_free(r->m);
	engy_cons_vocab_free(r->cvocab);
	free(r->cscratch);
	free(r);
}

static int ref_info(void *inst, struct engy_model_info *caller)
{
	struct ref *r = inst;
	struct engy_model_info mi = { 0 };
	uint32_t i;

	/* A caller built before 1.4 has a shorter struct: fill a whole one,
	 * copy what the caller's @size covers. */
	size_t size = caller->size && caller->size < sizeof(mi) ? caller->size
								: sizeof(mi);
	struct engy_model_info *out = &mi;

	snprintf(out->name, sizeof(out->name), "%s", r->name);
	snprintf(out->path, sizeof(out->path), "%s", r->dir);
	out->hidden_size = r->cfg.hidden;
	out->vocab_size = r->cfg.vocab;
	out->max_context = r->max_ctx;
	for (i = 0; i < r->cfg.n_eos && i < 4; i++)
		out->eos_ids[i] = r->cfg.eos[i];
	/* known once the checkpoint (and its tokenizer) has loaded */
	out->constraints =
		r->cvocab || ((r->state == REF_INIT ||
			       r->state == REF_LOADING) &&
			      r->has_tok)
			? ENGY_BACKEND_CONS_JSON | ENGY_BACKEND_CONS_AFFIX
			: 0;
	out->caps = ENGY_BACKEND_CAP_TOP_LOGPROBS;
	mi.size = (uint32_t)size;
	memcpy(caller, &mi, size);
	return 0;
}

/* Checks shared by generate() and prefill(); returns the new handle. */
static int new_req(struct ref *r, const uint32_t *ids, size_t n, size_t extra,
		   struct engy_gen **out)
{
	struct engy_gen *g;
	size_t i;

	*out = NULL;
	if (r->stopping)
		return -ESHUTDOWN;
	if (r->state == REF_FAILED)
		return -EIO;
	if (!ids || !n)
		return -EINVAL;
	if (n > r->max_ctx)
		return -E2BIG;
	for (i = 0; i < n; i++)
		if (ids[i] >= r->cfg.vocab)
			return -ERANGE;
	if (r->n_active + r->n_queued >= (size_t)r->max_batch + r->max_queue)
		return -EBUSY;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->r = r;
	g->ids = malloc((n + extra) * sizeof(*g->ids));
	if (!g->ids) {
		free(g);
		return -ENOMEM;
	}
	memcpy(g->ids, ids, n * sizeof(*ids));
	g->n_ids = g->n_prompt = n;
	*out = g;
	return 0;
}

/* The request's constraint compiled, its matcher at the start. */
static int cons_start(struct ref *r, struct engy_gen *g,
		      const struct engy_gen_params *q)
{
	cJSON *schema = NULL;
	char why[200];
	size_t i;
	int rc;

	if (!r->cvocab && r->state == REF_READY)
		return -EOPNOTSUPP;
	if (q->cons_schema[0]) {
		schema = cJSON_Parse(q->cons_schema);
		if (!schema)
			return -EINVAL;
	}
	rc = engy_cons_compile(schema, q->cons_prefix, q->cons_suffix, &g->cons,
			       why, sizeof(why));
	cJSON_Delete(schema);
	if (rc) {
		engy_dbg(r->host, "event=generate_refused reason=\"%s\"", why);
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	g->cst = engy_cons_state_new(g->cons);
	g->cend = malloc((r->cfg.n_eos + g->n_stop + 1) * sizeof(*g->cend));
	if (!g->cst || !g->cend)
		return -ENOMEM;
	for (i = 0; i < r->cfg.n_eos; i++)
		g->cend[g->n_cend++] = r->cfg.eos[i];
	for (i = 0; i < g->n_stop; i++)
		g->cend[g->n_cend++] = g->stop[i];
	return 0;
}

static int ref_generate(void *inst, const struct engy_gen_params *p,
			const struct engy_gen_cb *cb, void *arg,
			struct engy_gen **out)
{
	struct ref *r = inst;
	struct engy_gen_params q = { 0 };
	struct engy_gen *g;
	const char *why;
	size_t room;
	int rc;

	*out = NULL;
	if (!p || !cb || !cb->on_tokens || !cb->on_done)
		return -EINVAL;
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
	if (q.n_input >= r->max_ctx)
		return -E2BIG; /* no room for even one output token */
	{
		struct q3_sampling sp = { q.temperature, q.top_p, q.top_k };

		if (engy_q3_sampling_check(&sp, &why)) {
			engy_dbg(r->host,
				 "event=generate_refused reason=\"%s\"", why);
			return -EINVAL;
		}
	}
	room = r->max_ctx - q.n_input;
	rc = new_req(r, q.input_ids, q.n_input,
		     q.max_new_tokens < room ? q.max_new_tokens : room, &g);
	if (rc)
		return rc;
	g->kind = REQ_GENERATE;
	g->max_new = q.max_new_tokens;
	g->sp = (struct q3_sampling){ q.temperature, q.top_p, q.top_k };
	/* No seed: a fresh one, so unseeded requests differ. */
	engy_q3_rng_seed(&g->rng, q.has_seed ? q.seed
					     : (uint64_t)time(NULL) ^
						       (uint64_t)(uintptr_t)g);
	g->want_hidden = q.return_hidden;
	g->want_logprobs = q.return_logprobs;
	g->ignore_eos = q.ignore_eos;
	if (q.gemm_trace)
		ref_gemm_begin(r, g, &q);
	g->cb = *cb;
	g->arg = arg;
	g->hidden = malloc(r->cfg.hidden * sizeof(float));
	if (q.top_logprobs) {
		g->top_n = q.top_logprobs;
		g->on_top = q.on_top_logprobs;
		g->step_top_ids = malloc(g->top_n * sizeof(*g->step_top_ids));
		g->step_top_lp = malloc(g->top_n * sizeof(*g->step_top_lp));
		if (!g->step_top_ids || !g->step_top_lp) {
			ref_req_free(g);
			return -ENOMEM;
		}
	}
	if (q.n_stop) {
		g->stop =
			q.stop_ids ? malloc(q.n_stop * sizeof(*g->stop)) : NULL;
		if (g->stop)
			memcpy(g->stop, q.stop_ids,
			       q.n_stop * sizeof(*g->stop));
		g->n_stop = q.n_stop;
	}
	if (!g->hidden || (q.n_stop && !g->stop)) {
		ref_req_free(g);
		return q.n_stop && !q.stop_ids ? -EINVAL : -ENOMEM;
	}
	if (p->size >= offsetof(struct engy_gen_params, cons_suffix) +
			       sizeof(q.cons_suffix) &&
	    q.cons_schema) {
		rc = cons_start(r, g, &q);
		if (rc) {
			ref_req_free(g);
			return rc;
		}
	}
	*out = g;
	ref_enqueue(r, g);
	return 0;
}

static void ref_cancel(void *inst, struct engy_gen *g)
{
	struct ref *r = inst;

	if (!g)
		return;
	g->cancelled = true;
	/* Idle with work queued (loading, or nothing running): ends at the
	 * next step; ref_kick() starts one when the model is ready. */
	ref_kick(r);
}

static int ref_prefill(void *inst, const uint32_t *ids, size_t n,
		       void (*done)(void *arg, int rc,
				    const struct engy_rows *rows),
		       void *arg, struct engy_gen **out)
{
	struct ref *r = inst;
	struct engy_gen *g;
	int rc;

	if (out)
		*out = NULL;
	if (!done)
		return -EINVAL;
	rc = new_req(r, ids, n, 0, &g);
	if (rc)
		return rc;
	g->kind = REQ_PREFILL;
	g->pdone = done;
	g->arg = arg;
	g->hidden = malloc(n * r->cfg.hidden * sizeof(float));
	if (!g->hidden) {
		ref_req_free(g);
		return -ENOMEM;
	}
	if (out)
		*out = g;
	ref_enqueue(r, g);
	return 0;
}

/*
 * The check op (engyd -t, engyctl doctor): the engine runs in process;
 * its checkpoint directory must be here.  Reads the conf.
 */
static int ref_check(const struct engy_host *h, const void *conf, void *inst,
		     const struct engy_check_sink *sink)
{
	const struct ref_conf *c = conf;
	struct engy_check_buf b;
	int rc;

	(void)inst;
	engy_check_begin(&b, "serve", ENGY_PROBE_NONE);
	ENGY_CHECK_SET(&b, target, "in-process engine (backend-ref)");
	ENGY_CHECK_SET(&b, source, "config");
	if ((rc = engy_check_add(sink, &b)) < 0)
		return rc;
	return engy_check_add_checkpoint(h, sink, "checkpoint", c->checkpoint);
}

static const struct engy_backend_ops ref_ops = {
	.size = sizeof(struct engy_backend_ops),
	.info = ref_info,
	.generate = ref_generate,
	.cancel = ref_cancel,
	.prefill = ref_prefill,
	.gemm_commit = ref_gemm_commit,
	.gemm_open = ref_gemm_open,
};

ENGY_PLUGIN(.kind = ENGY_KIND_BACKEND, .name = "backend-ref",
	    .version = PACKAGE_VERSION,
	    .description =
		    "reference Qwen3 / Qwen3-MoE engine in process (CPU, optional CUDA)",
	    .opts = ref_opts, .conf_size = sizeof(struct ref_conf),
	    .create = ref_create, .start = ref_start, .stop = ref_stop,
	    .destroy = ref_destroy, .ops = &ref_ops, .check = ref_check);
