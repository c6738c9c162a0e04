/* SPDX-License-Identifier: MIT */
/*
 * bench_gemm_trace: what the GEMM audit trace costs a miner on backend-ref
 * (specs/checkpoints.md, "GEMM trace"), on the generated `small`
 * checkpoints (dense and MoE), every online CPU.  One request is generated
 * as backend-ref runs it (prompt in chunks, then greedy decode, lm_head on
 * the sampling rows), without the row hook and with the hook backend-ref
 * sets when a request asks for a trace (every audited row, input and
 * output, hashed into an engy_ga_trace as the forward runs, then the gemm
 * root), alternately, best of 3 each.  Printed in one run: both times,
 * the overhead as a fraction of generation time, the bytes hashed per
 * token, the trace's memory per token, and an opening's replay (prefill of
 * the whole request, hooked, into an opening) against the generation.
 * Figures, never pass/fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gemm.h"
#include "mkmodel.h"
#include "qwen3.h"
#include "safetensors.h"

#define PROMPT 128
#define CHUNK  128
#define DECODE 32
#define ROUNDS 3

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint32_t argmax(const float *v, uint32_t n)
{
	uint32_t i, b = 0;

	for (i = 1; i < n; i++)
		b = v[i] > v[b] ? i : b;
	return b;
}

/* backend-ref's hook, for one request: positions by call row. */
struct cap {
	struct engy_ga_trace *t;
	struct engy_ga_open *o;
	uint32_t pos[CHUNK]; /* of each row of the current call */
	size_t n;
	double bytes;
	int rc;
};

static void hook(void *arg, int layer, const char *name, const uint32_t *idx,
		 const float *in, size_t rows, size_t in_dim, const float *out,
		 size_t out_dim)
{
	struct cap *c = arg;
	struct engy_ga_key kx, ky;
	uint32_t expert;
	size_t i;
	int mm;

	if (engy_ga_mm_parse(name, &mm, &expert))
		return;
	kx = (struct engy_ga_key){ layer < 0 ? ENGY_GA_LM_LAYER
					     : (uint16_t)layer,
				   (uint8_t)mm, (uint16_t)expert, ENGY_GA_X };
	ky = kx;
	ky.role = ENGY_GA_Y;
	for (i = 0; i < rows && !c->rc; i++) {
		uint32_t p = c->pos[idx ? idx[i] : i];

		if (c->o) {
			c->rc = engy_ga_open_add(c->o, &kx, p, in + i * in_dim,
						 in_dim);
			if (!c->rc)
				c->rc = engy_ga_open_add(c->o, &ky, p,
							 out + i * out_dim,
							 out_dim);
			continue;
		}
		c->rc = engy_ga_trace_add(c->t, &kx, p, in + i * in_dim,
					  in_dim);
		if (!c->rc)
			c->rc = engy_ga_trace_add(c->t, &ky, p,
						  out + i * out_dim, out_dim);
		c->bytes += 4.0 * (double)(in_dim + out_dim);
	}
}

/* One request; @c NULL: untraced.  Fills @ids (PROMPT + DECODE). */
static double generate(struct q3_model *m, struct cap *c, uint32_t *ids,
		       uint8_t root[32])
{
	const struct q3_config *cf = engy_q3_model_config(m);
	struct q3_seq *s = engy_q3_seq_new(m, PROMPT + DECODE + 1);
	float *h = malloc(CHUNK * cf->hidden * sizeof(float));
	float *lg = malloc(cf->vocab * sizeof(float));
	struct q3_row rows[CHUNK];
	size_t off, k, cnt = 0, n = PROMPT;
	double t = now();

	if (c) {
		c->t = engy_ga_trace_new(PROMPT + DECODE);
		c->o = NULL;
		c->rc = 0;
		c->bytes = 0;
	}
	engy_q3_model_set_row_hook(m, c ? hook : NULL, c);
	for (off = 0; off < PROMPT; off += cnt) {
		cnt = PROMPT - off < CHUNK ? PROMPT - off : CHUNK;
		for (k = 0; k < cnt; k++) {
			ids[off + k] = (uint32_t)((off + k) * 97 % 5000);
			rows[k] = (struct q3_row){ s, ids[off + k] };
			if (c)
				c->pos[k] = (uint32_t)(off + k);
		}
		engy_q3_forward(m, rows, cnt, h);
	}
	if (c)
		c->pos[0] = PROMPT - 1;
	engy_q3_logits(m, h + (cnt - 1) * cf->hidden, 1, lg);
	for (k = 0; k < DECODE; k++) {
		ids[n++] = argmax(lg, cf->vocab);
		if (k + 1 == DECODE)
			break; /* the last token is sampled, never fed */
		rows[0] = (struct q3_row){ s, ids[n - 1] };
		if (c)
			c->pos[0] = (uint32_t)(n - 1);
		engy_q3_forward(m, rows, 1, h);
		engy_q3_logits(m, h, 1, lg);
	}
	if (c) {
		struct engy_ga_bind b = { .n_prompt = PROMPT,
					  .n_tokens = PROMPT + DECODE };

		engy_ga_ids_hash(ids, n, b.ids_hash);
		engy_ga_sampling_hash(0, 1, 0, 0, false, DECODE, b.sampling);
		if (c->rc || engy_ga_trace_gemm_root(c->t, &b, root))
			fprintf(stderr, "bench_gemm_trace: trace failed\n");
	}
	t = now() - t;
	engy_q3_model_set_row_hook(m, NULL, NULL);
	engy_q3_seq_free(s);
	free(h);
	free(lg);
	return t;
}

/* An opening of 4 cells: the replay of the whole request, hooked. */
static double replay(struct q3_model *m, struct cap *c, const uint32_t *ids)
{
	const struct q3_config *cf = engy_q3_model_config(m);
	struct engy_ga_cell cells[4] = {
		{ 0, 3 },
		{ (uint16_t)(cf->n_layers - 1), PROMPT + DECODE - 2 },
		{ (uint16_t)(cf->n_layers / 2), PROMPT },
		{ ENGY_GA_LM_LAYER, PROMPT + DECODE - 2 },
	};
	size_t n = PROMPT + DECODE - 1, off, k, cnt;
	struct q3_seq *s = engy_q3_seq_new(m, PROMPT + DECODE + 1);
	float *h = malloc(CHUNK * cf->hidden * sizeof(float));
	float *lg = malloc(cf->vocab * sizeof(float));
	struct q3_row rows[CHUNK];
	double t = now();
	char *json;

	c->o = engy_ga_open_new(c->t, cells, 4);
	c->rc = 0;
	engy_q3_model_set_row_hook(m, hook, c);
	for (off = 0; off < n; off += cnt) {
		cnt = n - off < CHUNK ? n - off : CHUNK;
		for (k = 0; k < cnt; k++) {
			rows[k] = (struct q3_row){ s, ids[off + k] };
			c->pos[k] = (uint32_t)(off + k);
		}
		engy_q3_forward(m, rows, cnt, h);
	}
	c->pos[0] = PROMPT + DECODE - 2;
	engy_q3_logits(m, h + (cnt - 1) * cf->hidden, 1, lg);
	json = c->o && !c->rc ? engy_ga_open_json(c->o) : NULL;
	t = now() - t;
	if (!json)
		fprintf(stderr, "bench_gemm_trace: the opening failed (%d)\n",
			c->rc);
	free(json);
	engy_ga_open_free(c->o);
	c->o = NULL;
	engy_q3_model_set_row_hook(m, NULL, NULL);
	engy_q3_seq_free(s);
	free(h);
	free(lg);
	return t;
}

static int bench(bool moe, unsigned threads)
{
	struct mkmodel_opts mo = {
		.moe = moe, .small = true, .seed = 1, .dtype = ENGY_ST_BF16
	};
	struct q3_load_opts lo = { .threads = threads };
	char dir[] = "/tmp/engy-bench-XXXXXX", err[512], cmd[600];
	double plain = 1e9, traced = 1e9, rep, bytes = 0;
	uint32_t ids[PROMPT + DECODE];
	struct cap *c = calloc(1, sizeof(*c));
	struct q3_model *m;
	uint8_t root[32];
	size_t tb = 0;
	int i;

	if (!c || !mkdtemp(dir) || mkmodel_write(&mo, dir, err, sizeof(err)) ||
	    engy_q3_model_load(dir, &lo, &m, err, sizeof(err))) {
		fprintf(stderr, "bench_gemm_trace: %s\n", err);
		return 1;
	}
	generate(m, NULL, ids, root); /* warm up */
	for (i = 0; i < ROUNDS; i++) {
		double a = generate(m, NULL, ids, root), b;

		if (a < plain)
			plain = a;
		b = generate(m, c, ids, root);
		if (b < traced)
			traced = b;
		bytes = c->bytes;
		tb = engy_ga_trace_bytes(c->t);
		if (i + 1 < ROUNDS) {
			engy_ga_trace_free(c->t);
			c->t = NULL;
		}
	}
	rep = replay(m, c, ids);
	printf("%s small (%s), %d prompt + %d output tokens:\n",
	       moe ? "qwen3-moe" : "qwen3", engy_q3_model_device(m), PROMPT,
	       DECODE);
	printf("  generation %.3f s; with the GEMM trace %.3f s: overhead "
	       "%.1f%% of generation time\n",
	       plain, traced, 100.0 * (traced - plain) / plain);
	printf("  hashed %.1f KB per token (%.0f MB/s of trace time); trace "
	       "%.1f KB per token in memory\n",
	       bytes / (PROMPT + DECODE) / 1e3,
	       traced > plain ? bytes / (traced - plain) / 1e6 : 0.0,
	       (double)tb / (PROMPT + DECODE) / 1e3);
	printf("  an opening's replay (prefill of the request, hooked): "
	       "%.3f s, %.2fx the generation\n",
	       rep, rep / plain);
	engy_ga_trace_free(c->t);
	free(c);
	engy_q3_model_free(m);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) != 0;
}

int main(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned threads = ncpu > 0 ? (unsigned)ncpu : 1;

	printf("bench_gemm_trace: %u threads, best of %d\n", threads, ROUNDS);
	return bench(false, threads) || bench(true, threads);
}
