/* SPDX-License-Identifier: MIT */
/*
 * bench_gemm_verify: the GEMM audit's verifier cost on one core, against
 * a naive full recompute of the same matmuls in the same run.
 *
 *   bench_gemm_verify [TOKENS]   (default 64: prompt 16 + output)
 *
 * Generates the "small" dense checkpoint (engyctl mkmodel --size small),
 * runs one request on lib/qwen3 with the matmul hook capturing every
 * audited row, builds the trace and, for a few challenge sizes, the
 * opening; then times engy_ga_check() on one thread (best of 3, weights
 * already dequantized and cached: a running auditor's steady state; the
 * first, cold check is printed too) and a naive check of the same opened
 * rows (every output of every opened product recomputed in float64,
 * Y = X . W^T, with the same weights).  Prints ms per audited token (a
 * challenged (layer, position) cell) and per token of the request, and
 * the ratio check / naive.  Goal: < 0.5 ms per audited token.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GT_OK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "bench_gemm_verify: " __VA_ARGS__);    \
			fputc('\n', stderr);                                   \
			exit(1);                                               \
		}                                                              \
	} while (0)

#include "gemm.h"
#include "gemm_ckpt.h"
#include "gemm_int.h"
#include "mkmodel.h"
#include "safetensors.h"
#include "../tests/unit/gemm_testlib.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double sink;

/* Every output of every opened product, recomputed in float64. */
static double naive(const struct engy_ga_opening *o,
		    const struct engy_ga_weights *w)
{
	double t0 = now(), bad = 0;
	size_t i, r, j, k;

	for (i = 0; i < o->n_osubs; i++) {
		const struct engy_ga_osub *x = &o->subs[i], *y;
		struct engy_ga_matrix m;
		size_t out, in;

		if (x->key.role != ENGY_GA_X || i + 1 >= o->n_osubs)
			continue;
		y = &o->subs[i + 1]; /* the Y sub follows its X sub */
		GT_OK(y->key.role == ENGY_GA_Y && y->key.mm == x->key.mm &&
			      y->key.layer == x->key.layer &&
			      y->key.expert == x->key.expert &&
			      y->n_rows == x->n_rows,
		      "subs out of order");
		GT_OK(w->get(w->arg, x->key.layer, x->key.mm, x->key.expert,
			     &m) == 0,
		      "no weights");
		out = m.out;
		in = m.in;
		for (r = 0; r < x->n_rows; r++)
			for (j = 0; j < out; j++) {
				double s = 0;

				if (m.w)
					for (k = 0; k < in; k++)
						s += m.w[j * in + k] *
						     x->rows[r].data[k];
				else
					for (k = 0; k < in; k++)
						s += (double)m.wf[j * in + k] *
						     x->rows[r].data[k];
				bad += fabs(s - y->rows[r].data[j]);
			}
	}
	sink += bad;
	return now() - t0;
}

static const uint8_t nonce[32] = { 42 };

int main(int argc, char **argv)
{
	struct mkmodel_opts mo = { .small = true,
				   .seed = 11,
				   .dtype = ENGY_ST_BF16 };
	static const struct {
		uint32_t layers, tokens;
	} sizes[] = { { 2, 4 }, { 4, 4 }, { 4, 16 }, { 7, 32 } };
	uint32_t total = argc > 1 ? (uint32_t)atoi(argv[1]) : 64, P = 16;
	char tmpl[] = "/tmp/engy-bench-gemm-XXXXXX", err[256], cmd[600];
	char *dir = mkdtemp(tmpl);
	struct engy_ga_trace *t;
	struct engy_ga_ckpt *ck;
	struct engy_ga_bind b;
	uint32_t prompt[16];
	uint8_t gemm[32], tl[32], tr[32], seed[32];
	struct run r;
	size_t i, si, bytes = 0;
	double t_run, t_trace;

	GT_OK(dir && total > P && total <= 512, "usage: bench_gemm_verify "
						"[TOKENS 17..512]");
	GT_OK(mkmodel_write(&mo, dir, err, sizeof(err)) == 0, "%s", err);
	for (i = 0; i < P; i++)
		prompt[i] = (uint32_t)(100 + 37 * i);
	t_run = now();
	run_model(dir, Q3_PROFILE_REF, 0, prompt, P, total - P, &r);
	t_run = now() - t_run;
	model_root(dir, b.spec_root);
	t_trace = now();
	t = engy_ga_trace_new(r.n_tokens);
	for (i = 0; i < r.n; i++) {
		struct engy_ga_key k;

		engy_ga_key_unpack(r.r[i].key, &k);
		GT_OK(engy_ga_trace_add(t, &k, r.r[i].pos, r.r[i].d,
					r.r[i].n) == 0,
		      "trace_add");
	}
	engy_ga_ids_hash(r.ids, r.n_tokens, b.ids_hash);
	b.n_prompt = r.n_prompt;
	b.n_tokens = r.n_tokens;
	engy_ga_sampling_hash(0, 1, 0, 0, false, total - P, b.sampling);
	GT_OK(engy_ga_trace_gemm_root(t, &b, gemm) == 0, "gemm root");
	t_trace = now() - t_trace;
	for (i = 0; i < r.n; i++)
		bytes += r.r[i].n * sizeof(float);
	engy_ga_toploc_hash(NULL, 0, tl);
	engy_ga_trace_root(gemm, tl, tr);
	engy_ga_seed(b.spec_root, tr, "bench", nonce, seed);
	GT_OK(engy_ga_ckpt_open(dir, (size_t)4 << 30, &ck, err, sizeof(err)) ==
		      0,
	      "%s", err);
	printf("bench_gemm_verify: small dense (hidden 512, 6 layers, vocab "
	       "6144), %u tokens (prompt %u), one core\n",
	       r.n_tokens, P);
	printf("  trace: %zu rows, %.1f MB hashed into the gemm root in %.1f "
	       "ms (%.0f MB/s; one token at a time, the engine took %.0f "
	       "ms on every CPU: %.1f%%), %.1f KB held\n",
	       r.n, bytes / 1e6, t_trace * 1e3, bytes / 1e6 / t_trace,
	       t_run * 1e3, 100 * t_trace / t_run,
	       engy_ga_trace_bytes(t) / 1024.0);
	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		struct engy_ga_params p = { .layers = sizes[si].layers,
					    .tokens = sizes[si].tokens,
					    .projections = 2,
					    .spots = 2,
					    .z = 6,
					    .c_el = 6 };
		struct engy_ga_cell cells[ENGY_GA_MAX_CELLS];
		struct engy_ga_opening *op;
		struct engy_ga_verdict v;
		struct engy_ga_weights w;
		struct engy_ga_ckpt_use *u;
		struct engy_ga_open *o;
		double best = 1e30, cold = 0, nv = 1e30, t0;
		size_t n;
		char *j;
		int rep;

		GT_OK(engy_ga_challenge(seed, 6, r.n_prompt, r.n_tokens, &p,
					cells, ENGY_GA_MAX_CELLS, &n) == 0,
		      "challenge");
		o = engy_ga_open_new(t, cells, n);
		for (i = 0; i < r.n; i++) {
			struct engy_ga_key k;

			engy_ga_key_unpack(r.r[i].key, &k);
			GT_OK(engy_ga_open_add(o, &k, r.r[i].pos, r.r[i].d,
					       r.r[i].n) == 0,
			      "open_add");
		}
		j = engy_ga_open_json(o);
		GT_OK(j && engy_ga_opening_parse(j, strlen(j), &op, err,
						 sizeof(err)) == 0,
		      "opening");
		for (rep = 0; rep < 4; rep++) {
			u = engy_ga_ckpt_use(ck, &w);
			t0 = now();
			GT_OK(engy_ga_check(op, seed, tr, tl, &b, &p, &w, &v) ==
				      0,
			      "check");
			t0 = now() - t0;
			engy_ga_ckpt_done(u);
			GT_OK(v.outcome == ENGY_GA_PASS, "honest run judged %s",
			      v.reason);
			if (!rep)
				cold = t0;
			else if (t0 < best)
				best = t0;
		}
		for (rep = 0; rep < 3; rep++) {
			u = engy_ga_ckpt_use(ck, &w);
			t0 = naive(op, &w);
			engy_ga_ckpt_done(u);
			if (t0 < nv)
				nv = t0;
		}
		printf("  layers %u x tokens %2u: %3zu cells, opening %7.1f KB; "
		       "check %7.2f ms (cold %7.1f ms), naive %8.2f ms, "
		       "ratio %.3f; %.3f ms per audited token, %.3f ms per "
		       "request token; rho_max %.3f\n",
		       p.layers, p.tokens, n, strlen(j) / 1024.0, best * 1e3,
		       cold * 1e3, nv * 1e3, best / nv, best * 1e3 / (double)n,
		       best * 1e3 / r.n_tokens, v.rho_max);
		free(j);
		engy_ga_opening_free(op);
		engy_ga_open_free(o);
	}
	engy_ga_ckpt_close(ck);
	engy_ga_trace_free(t);
	run_free(&r);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) || sink < 0;
}
