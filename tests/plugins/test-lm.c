/* SPDX-License-Identifier: MIT */
/*
 * test-lm: a scripted backend for the serve tests.  Everything it emits
 * is a fixed function of the request, so a test can predict every byte:
 *
 *   S          = (sum of input ids) mod 94
 *   token k    = 33 + (S + 7k [+ 13*seed when temperature > 0]) mod 94
 *                (printable ASCII, so a byte-level tokenizer decodes
 *                it to that character)
 *   logprob k  = -0.0625 - 0.125 * (k mod 8)
 *   row k, j   = 0.5 * (n_input - 1 + k) + 0.25 * j    (F32)
 *
 * Generation stops at a stop id (finish stop), at max_new_tokens or the
 * context (finish length).  Scripted prompts:
 *   [1, n, ...]  token n is the EOS id instead;
 *   [2, n, ...]  the request fails (ENGY_FINISH_ERROR) after n tokens;
 *   [3, ...]     generate() itself fails with -EIO;
 *   [4, ...]     token k is byte k mod 10 of "a\u00e9\u20ac\U0001F600" in UTF-8
 *                (61 c3 a9 e2 82 ac f0 9f 98 80): characters split over
 *                tokens, for the stream's held-back partial characters;
 *   [5, ...]     a full prefix-cache hit: token 0 comes alone and without
 *                a row (backend.h), cached_tokens is the prompt length.
 * Tokens come `per_call` at a time, one batch every `delay_ms` (a timer
 * on the loop), so abort and disconnect tests can act mid-request.
 * cancel() logs `event=cancel rid=...` and ends the request with
 * ENGY_FINISH_ABORT on the next tick, or at once with cancel_sync.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <engy/engy.h>

struct lm_conf {
	char *name;
	char *model_path;
	int64_t hidden_size;
	int64_t vocab_size;
	int64_t max_context;
	int64_t eos_id;
	int64_t delay_ms;
	int64_t per_call;
	bool cancel_sync;
};

struct lm;

struct engy_gen {
	struct engy_gen *next, **pprev;
	struct lm *lm;
	struct engy_gen_cb cb;
	void *arg;
	struct engy_timer *timer;
	char rid[128];
	uint32_t s, n_input, first, arg1, max_new, seed_add, k, n_stop;
	uint32_t *stop;
	bool hidden, logprobs, cancelled;
};

struct lm {
	const struct engy_host *h;
	struct lm_conf c;
	struct engy_gen *gens;
	unsigned active;
	struct engy_metric *m_gen, *m_cancel, *m_active;
};

#define OFF(f) offsetof(struct lm_conf, f)

static const struct engy_opt lm_opts[] = {
	{ "name", ENGY_OPT_STR, 0, OFF(name), "test-lm", NULL, 0, 0,
	  "served model name" },
	{ "model_path", ENGY_OPT_STR, 0, OFF(model_path), NULL, NULL, 0, 0,
	  "directory reported as the checkpoint (tokenizer.json)" },
	{ "hidden_size", ENGY_OPT_INT, 0, OFF(hidden_size), "8", NULL, 1, 8192,
	  "row width" },
	{ "vocab_size", ENGY_OPT_INT, 0, OFF(vocab_size), "257", NULL, 128,
	  1 << 24, "ids the model knows" },
	{ "max_context", ENGY_OPT_INT, 0, OFF(max_context), "256", NULL, 2,
	  1 << 24, "prompt + output tokens at most" },
	{ "eos_id", ENGY_OPT_INT, 0, OFF(eos_id), "256", NULL, 0, 1 << 24,
	  "the EOS id" },
	{ "delay_ms", ENGY_OPT_INT, 0, OFF(delay_ms), "0", NULL, 0, 60000,
	  "milliseconds between token batches" },
	{ "per_call", ENGY_OPT_INT, 0, OFF(per_call), "1", NULL, 1, 1 << 20,
	  "tokens per on_tokens() call" },
	{ "cancel_sync", ENGY_OPT_BOOL, 0, OFF(cancel_sync), "false", NULL, 0,
	  0, "cancel() calls on_done before it returns" },
	ENGY_OPT_END
};

static int lm_create(const struct engy_host *h, const void *conf, void **out)
{
	struct lm *lm = calloc(1, sizeof(*lm));

	if (!lm)
		return -ENOMEM;
	lm->h = h;
	lm->c = *(const struct lm_conf *)conf;
	*out = lm;
	return 0;
}

static int lm_start(void *inst)
{
	struct lm *lm = inst;
	const struct engy_host *h = lm->h;

	h->metric(h, ENGY_METRIC_COUNTER, "test_lm_generate_total",
		  "generate() calls", NULL, NULL, 0, &lm->m_gen);
	h->metric(h, ENGY_METRIC_COUNTER, "test_lm_cancel_total",
		  "cancel() calls", NULL, NULL, 0, &lm->m_cancel);
	h->metric(h, ENGY_METRIC_GAUGE, "test_lm_active",
		  "requests between generate() and on_done", NULL, NULL, 0,
		  &lm->m_active);
	return 0;
}

static void gen_free(struct engy_gen *g)
{
	*g->pprev = g->next;
	if (g->next)
		g->next->pprev = g->pprev;
	free(g->stop);
	free(g);
}

static void lm_destroy(void *inst)
{
	struct lm *lm = inst;

	/* Timers are the host's to free; no callback fires from here. */
	while (lm->gens)
		gen_free(lm->gens);
	free(lm);
}

static int lm_info(void *inst, struct engy_model_info *out)
{
	struct lm *lm = inst;

	memset(out, 0, sizeof(*out));
	out->size = sizeof(*out);
	snprintf(out->name, sizeof(out->name), "%s",
		 lm->c.name ? lm->c.name : "");
	snprintf(out->path, sizeof(out->path), "%s",
		 lm->c.model_path ? lm->c.model_path : "");
	out->hidden_size = (uint32_t)lm->c.hidden_size;
	out->vocab_size = (uint32_t)lm->c.vocab_size;
	out->max_context = (uint32_t)lm->c.max_context;
	out->eos_ids[0] = (uint32_t)lm->c.eos_id;
	return 0;
}

static void finish(struct engy_gen *g, int how, int32_t matched, int status)
{
	struct lm *lm = g->lm;
	struct engy_gen_result res = {
		.status = status,
		.error = status ? "scripted failure" : NULL,
		.finish = how,
		.matched_stop = matched,
		.prompt_tokens = g->n_input,
		.completion_tokens = g->k,
		.cached_tokens = g->first == 5 ? g->n_input : 0,
	};
	struct engy_gen_cb cb = g->cb;
	void *arg = g->arg;

	lm->h->timer_del(lm->h, g->timer);
	engy_info(lm->h, "event=finish rid=%s finish=%d n=%u", g->rid, how,
		  g->k);
	gen_free(g);
	lm->active--;
	lm->h->metric_set(lm->m_active, lm->active);
	cb.on_done(arg, &res);
}

static uint32_t token(const struct engy_gen *g, uint32_t k)
{
	static const uint8_t utf8[10] = { 0x61, 0xc3, 0xa9, 0xe2, 0x82,
					  0xac, 0xf0, 0x9f, 0x98, 0x80 };

	if (g->first == 4)
		return utf8[k % 10];
	if (g->first == 1 && k == g->arg1)
		return (uint32_t)g->lm->c.eos_id;
	return 33 + (g->s + 7 * k + g->seed_add) % 94;
}

static void tick(void *arg)
{
	struct engy_gen *g = arg;
	struct lm *lm = g->lm;
	uint32_t n = (uint32_t)lm->c.per_call, i,
		 hs = (uint32_t)lm->c.hidden_size;
	uint32_t *ids = NULL;
	float *lp = NULL, *rows = NULL;
	int how = 0;
	int32_t matched = -1;

	if (g->cancelled) {
		finish(g, ENGY_FINISH_ABORT, -1, 0);
		return;
	}
	if (g->first == 2 && g->k >= g->arg1) {
		finish(g, ENGY_FINISH_ERROR, -1, -EIO);
		return;
	}
	ids = calloc(n, sizeof(*ids));
	lp = calloc(n, sizeof(*lp));
	rows = calloc((size_t)n * hs, sizeof(*rows));
	if (!ids || !lp || !rows) {
		free(ids);
		free(lp);
		free(rows);
		finish(g, ENGY_FINISH_ERROR, -1, -ENOMEM);
		return;
	}
	if (g->first == 5 && g->k == 0)
		n = 1; /* the cache-hit token comes alone */
	for (i = 0; i < n && !how;) {
		uint32_t k = g->k, t = token(g, k), j, s;

		ids[i] = t;
		lp[i] = -0.0625f - 0.125f * (float)(k % 8);
		for (j = 0; j < hs; j++)
			rows[(size_t)i * hs + j] =
				0.5f * (float)(g->n_input - 1 + k) +
				0.25f * (float)j;
		g->k++;
		i++;
		if (t == (uint32_t)lm->c.eos_id)
			how = ENGY_FINISH_STOP, matched = (int32_t)t;
		for (s = 0; s < g->n_stop && !how; s++)
			if (g->stop[s] == t)
				how = ENGY_FINISH_STOP, matched = (int32_t)t;
		if (!how && (g->k >= g->max_new ||
			     g->n_input + g->k >= (uint32_t)lm->c.max_context))
			how = ENGY_FINISH_LENGTH;
		if (g->first == 2 && g->k >= g->arg1)
			break;
	}
	{
		struct engy_rows r = { rows, ENGY_DTYPE_F32, i, hs, 0 };

		bool rowless = g->first == 5 && g->k == 1;

		g->cb.on_tokens(g->arg, ids, i,
				g->hidden && !rowless ? &r : NULL,
				g->logprobs ? lp : NULL);
	}
	free(ids);
	free(lp);
	free(rows);
	if (how)
		finish(g, how, matched, 0);
}

static int lm_generate(void *inst, const struct engy_gen_params *p,
		       const struct engy_gen_cb *cb, void *arg,
		       struct engy_gen **out)
{
	struct lm *lm = inst;
	struct engy_gen *g;
	size_t i;
	int rc;

	if (!p || !cb || !cb->on_tokens || !cb->on_done || !p->n_input ||
	    !p->input_ids)
		return -EINVAL;
	lm->h->metric_add(lm->m_gen, 1);
	engy_info(
		lm->h,
		"event=generate rid=%s n_input=%zu max_new=%u hidden=%d logprobs=%d",
		p->rid ? p->rid : "-", p->n_input, p->max_new_tokens,
		p->return_hidden, p->return_logprobs);
	if (p->input_ids[0] == 3)
		return -EIO;
	if (!p->max_new_tokens)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->lm = lm;
	g->cb = *cb;
	g->arg = arg;
	snprintf(g->rid, sizeof(g->rid), "%s", p->rid ? p->rid : "-");
	for (i = 0; i < p->n_input; i++)
		g->s = (uint32_t)((g->s + p->input_ids[i]) % 94);
	g->n_input = (uint32_t)p->n_input;
	g->first = p->input_ids[0];
	g->arg1 = p->n_input > 1 ? p->input_ids[1] : 0;
	g->max_new = p->max_new_tokens;
	if (p->temperature > 0)
		g->seed_add = (uint32_t)((p->has_seed ? p->seed : 1) * 13 % 94);
	g->hidden = p->return_hidden;
	g->logprobs = p->return_logprobs;
	if (p->n_stop) {
		g->stop = calloc(p->n_stop, sizeof(*g->stop));
		if (!g->stop) {
			free(g);
			return -ENOMEM;
		}
		memcpy(g->stop, p->stop_ids, p->n_stop * sizeof(*g->stop));
		g->n_stop = (uint32_t)p->n_stop;
	}
	rc = lm->h->timer_add(lm->h, (uint64_t)lm->c.delay_ms, 1, tick, g,
			      &g->timer);
	if (rc < 0) {
		free(g->stop);
		free(g);
		return rc;
	}
	g->next = lm->gens;
	if (g->next)
		g->next->pprev = &g->next;
	g->pprev = &lm->gens;
	lm->gens = g;
	lm->active++;
	lm->h->metric_set(lm->m_active, lm->active);
	*out = g;
	return 0;
}

static void lm_cancel(void *inst, struct engy_gen *g)
{
	struct lm *lm = inst;

	if (!g)
		return;
	lm->h->metric_add(lm->m_cancel, 1);
	engy_info(lm->h, "event=cancel rid=%s sync=%d", g->rid,
		  lm->c.cancel_sync);
	if (lm->c.cancel_sync)
		finish(g, ENGY_FINISH_ABORT, -1, 0);
	else
		g->cancelled = true;
}

static const struct engy_backend_ops lm_ops = {
	.size = sizeof(lm_ops),
	.info = lm_info,
	.generate = lm_generate,
	.cancel = lm_cancel,
};

ENGY_PLUGIN(.kind = ENGY_KIND_BACKEND, .name = "test-lm", .version = "1",
	    .description = "scripted backend for the serve tests",
	    .opts = lm_opts, .conf_size = sizeof(struct lm_conf),
	    .create = lm_create, .start = lm_start, .destroy = lm_destroy,
	    .ops = &lm_ops);
