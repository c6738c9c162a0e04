/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the GEMM audit's tests and bench: lib/qwen3 runs a
 * request one token at a time with the matmul hook keeping every audited
 * row (so a hooked row's position is the token fed), and a checkpoint's
 * model root.
 */
#ifndef GEMM_TESTLIB_H
#define GEMM_TESTLIB_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "gemm_int.h"
#include "modelspec.h"
#include "qwen3.h"

/* GT_OK(cond, fmt, ...): a check assertion in the tests; the bench
 * defines its own (abort with the message) before including this. */
#ifndef GT_OK
#include <check.h>
#define GT_OK(cond, ...) ck_assert_msg(cond, __VA_ARGS__)
#endif

struct srow {
	uint64_t key;
	uint32_t pos;
	float *d;
	size_t n;
};

struct run {
	uint32_t ids[512];
	uint32_t n_prompt, n_tokens, pos;
	struct srow *r;
	size_t n, cap;
	bool bad;
};

static inline void keep(struct run *r, const struct engy_ga_key *k,
			const float *d, size_t n)
{
	struct srow *s;

	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 256;
		r->r = realloc(r->r, r->cap * sizeof(*r->r));
		GT_OK(r->r != NULL, "out of memory");
	}
	s = &r->r[r->n++];
	s->key = engy_ga_key_pack(k);
	s->pos = r->pos;
	s->n = n;
	s->d = malloc(n * sizeof(float));
	GT_OK(s->d != NULL, "out of memory");
	memcpy(s->d, d, n * sizeof(float));
}

static inline void hook(void *arg, int layer, const char *name, const float *in,
			size_t rows, size_t in_dim, const float *out,
			size_t out_dim)
{
	struct run *r = arg;
	struct engy_ga_key k;
	uint32_t e;
	int mm;

	if (rows != 1 || engy_ga_mm_parse(name, &mm, &e)) {
		r->bad = true;
		return;
	}
	k.layer = layer < 0 ? ENGY_GA_LM_LAYER : (uint16_t)layer;
	k.mm = (uint8_t)mm;
	k.expert = (uint16_t)e;
	k.role = ENGY_GA_X;
	keep(r, &k, in, in_dim);
	k.role = ENGY_GA_Y;
	keep(r, &k, out, out_dim);
}

static inline void run_free(struct run *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		free(r->r[i].d);
	free(r->r);
	memset(r, 0, sizeof(*r));
}

/* Prompt @p[0..P), then G greedy tokens, fed one at a time. */
static inline void run_model(const char *dir, int profile, unsigned threads,
			     const uint32_t *p, uint32_t P, uint32_t G,
			     struct run *r)
{
	struct q3_load_opts lo = { .threads = threads, .profile = profile };
	const struct q3_config *c;
	struct q3_model *m;
	struct q3_seq *s;
	float *hidden, *logits;
	char err[256];
	uint32_t pos;

	memset(r, 0, sizeof(*r));
	GT_OK(engy_q3_model_load(dir, &lo, &m, err, sizeof(err)) == 0, "%s",
	      err);
	c = engy_q3_model_config(m);
	engy_q3_model_set_hook(m, hook, r);
	s = engy_q3_seq_new(m, P + G);
	hidden = malloc(c->hidden * sizeof(float));
	logits = malloc(c->vocab * sizeof(float));
	memcpy(r->ids, p, P * sizeof(*p));
	r->n_prompt = P;
	r->n_tokens = P + G;
	for (pos = 0; pos + 1 < P + G; pos++) {
		struct q3_row row = { s, r->ids[pos] };

		r->pos = pos;
		GT_OK(engy_q3_forward(m, &row, 1, hidden) == 0, "forward");
		if (pos + 1 >= P) {
			uint32_t v, best = 0;

			GT_OK(engy_q3_logits(m, hidden, 1, logits) == 0,
			      "logits");
			for (v = 1; v < c->vocab; v++)
				if (logits[v] > logits[best])
					best = v;
			r->ids[pos + 1] = best;
		}
	}
	GT_OK(!r->bad, "a hooked call of several rows");
	free(hidden);
	free(logits);
	engy_q3_seq_free(s);
	engy_q3_model_free(m);
}

static inline struct srow *find_row(struct run *r, uint16_t layer, int mm,
				    uint16_t expert, int role, uint32_t pos)
{
	struct engy_ga_key k = { layer, (uint8_t)mm, expert, (uint8_t)role };
	uint64_t key = engy_ga_key_pack(&k);
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->r[i].key == key && r->r[i].pos == pos)
			return &r->r[i];
	return NULL;
}

static inline void model_root(const char *dir, uint8_t out[32])
{
	struct engy_ms *m;
	char err[256];

	GT_OK(engy_ms_open(dir, &m, err, sizeof(err)) == 0, "%s", err);
	GT_OK(engy_ms_build(m, 1, NULL, NULL, 0, err, sizeof(err)) == 0, "%s",
	      err);
	memcpy(out, engy_ms_model_root(m), 32);
	engy_ms_close(m);
}

#endif /* GEMM_TESTLIB_H */
