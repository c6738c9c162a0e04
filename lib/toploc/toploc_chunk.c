/* SPDX-License-Identifier: MIT */
/*
 * TOPLOC per chunk: top-k selection, proving and verifying one chunk.
 *
 * Top-k by |x| of bf16 is an integer problem: the magnitude key is the 15
 * low bits, and integer order on keys is torch's order on abs().  Selection
 * runs in O(n) without sorting:
 *   1. guess a key threshold from a strided sample (~4k values) that leaves
 *      a few hundred candidates above it;
 *   2. one branch-light pass tests four keys per 64-bit word and collects
 *      the candidates at or above the threshold (about 1% of a chunk);
 *   3. an exact two-level histogram select (8-bit exponent, then 7-bit
 *      mantissa) over the candidates finds the k-th key and how many ties
 *      at it to take, lowest index first.
 * When the guess is off (fewer than k candidates, or too many) step 3 runs
 * over the whole chunk instead: the answer never depends on the guess.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "toploc.h"
#include "toploc_int.h"

#define P ENGY_TOPLOC_PRIME

#define SAMPLE_TARGET 4096 /* values sampled for the threshold guess */

struct engy_toploc_ws {
	uint32_t topk;
	int isa;	  /* enum engy_toploc_isa */
	size_t cap;	  /* candidate capacity */
	uint16_t *cv;	  /* candidate values */
	uint64_t *ci;	  /* candidate indices, ascending */
	uint64_t *idx;	  /* [topk] */
	uint32_t *x;	  /* [topk] evaluation points */
	uint32_t *r;	  /* [topk] polynomial values */
	uint16_t *coeffs; /* [topk] */
	uint16_t *l2;	  /* [8 topk] tile maxima (vector top-k) */
	uint16_t *l1;	  /* block maxima (vector top-k), grown */
	size_t l1_cap;
};

struct engy_toploc_ws *engy_toploc_ws_new(uint32_t topk)
{
	struct engy_toploc_ws *ws;

	if (topk == 0 || topk > ENGY_TOPLOC_MAX_TOPK)
		return NULL;
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return NULL;
	ws->topk = topk;
	ws->isa = engy_toploc_isa_default();
	ws->cap = 64 * (size_t)topk + 8192;
	ws->cv = malloc((ws->cap + 16) * sizeof(*ws->cv));
	ws->l2 = malloc(8 * (size_t)topk * sizeof(*ws->l2));
	ws->ci = malloc(ws->cap * sizeof(*ws->ci));
	ws->idx = malloc(topk * sizeof(*ws->idx));
	ws->x = malloc(topk * sizeof(*ws->x));
	ws->r = malloc(topk * sizeof(*ws->r));
	ws->coeffs = malloc(topk * sizeof(*ws->coeffs));
	if (!ws->cv || !ws->ci || !ws->idx || !ws->x || !ws->r || !ws->coeffs ||
	    !ws->l2) {
		engy_toploc_ws_free(ws);
		return NULL;
	}
	return ws;
}

void engy_toploc_ws_free(struct engy_toploc_ws *ws)
{
	if (!ws)
		return;
	free(ws->cv);
	free(ws->ci);
	free(ws->idx);
	free(ws->x);
	free(ws->r);
	free(ws->coeffs);
	free(ws->l1);
	free(ws->l2);
	free(ws);
}

void engy_toploc_ws_force_scalar(struct engy_toploc_ws *ws)
{
	ws->isa = ENGY_TOPLOC_ISA_SCALAR;
}

/*
 * select_exact() - the @k largest keys of @v[0..n) into @out (ascending
 * position), as @map[j] when @map is given, else as j.
 */
static void select_exact(const uint16_t *v, const uint64_t *map, size_t n,
			 size_t k, uint64_t *out)
{
	/* Four interleaved histograms: runs of equal exponents would
	 * otherwise serialise on one counter. */
	uint64_t h1[4][256], h2[128];
	size_t i, above = 0, ties, o = 0;
	unsigned b1, b2, thr;

	memset(h1, 0, sizeof(h1));
	memset(h2, 0, sizeof(h2));
	for (i = 0; i + 4 <= n; i += 4) {
		h1[0][engy_bf16_key(v[i]) >> 7]++;
		h1[1][engy_bf16_key(v[i + 1]) >> 7]++;
		h1[2][engy_bf16_key(v[i + 2]) >> 7]++;
		h1[3][engy_bf16_key(v[i + 3]) >> 7]++;
	}
	for (; i < n; i++)
		h1[0][engy_bf16_key(v[i]) >> 7]++;
	for (b1 = 255;; b1--) {
		uint64_t c = h1[0][b1] + h1[1][b1] + h1[2][b1] + h1[3][b1];

		if (above + c >= k || b1 == 0)
			break;
		above += c;
	}
	for (i = 0; i < n; i++) {
		unsigned key = engy_bf16_key(v[i]);

		if (key >> 7 == b1)
			h2[key & 0x7F]++;
	}
	for (b2 = 127;; b2--) {
		if (above + h2[b2] >= k || b2 == 0)
			break;
		above += h2[b2];
	}
	thr = b1 << 7 | b2;
	ties = k - above;
	for (i = 0; i < n && o < k; i++) {
		unsigned key = engy_bf16_key(v[i]);

		if (key > thr || (key == thr && ties > 0)) {
			if (key == thr)
				ties--;
			out[o++] = map ? map[i] : i;
		}
	}
}

/* A key threshold with, on typical data, a few hundred keys above it. */
static unsigned guess_threshold(const uint16_t *v, size_t n, size_t k)
{
	uint32_t h[1024];
	size_t stride = n / SAMPLE_TARGET, i, m = 0, need, acc = 0;
	unsigned b;

	memset(h, 0, sizeof(h));
	for (i = 0; i < n; i += stride, m++)
		h[engy_bf16_key(v[i]) >> 5]++;
	/* Aim at 2k candidates plus sampling slack. */
	need = 2 * k * m / n + 16;
	if (need > m)
		return 0;
	for (b = 1023;; b--) {
		acc += h[b];
		if (acc >= need || b == 0)
			break;
	}
	return b << 5;
}

/*
 * filter() - copy the values with key >= @thr (and their indices) into
 * @cv/@ci; returns how many, or @cap + 1 once they do not fit.
 * SWAR: for 15-bit keys, key + (0x8000 - thr) sets bit 15 of its 16-bit
 * lane exactly when key >= thr, and never carries into the next lane.
 */
static size_t filter(const uint16_t *v, size_t n, unsigned thr, uint16_t *cv,
		     uint64_t *ci, size_t cap)
{
	const uint64_t keys = 0x7FFF7FFF7FFF7FFFull;
	const uint64_t high = 0x8000800080008000ull;
	const uint64_t add = (uint64_t)(0x8000u - thr) * 0x0001000100010001ull;
	size_t i, j, c = 0;
	uint64_t w0, w1;

	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&w0, v + i, 8);
		memcpy(&w1, v + i + 4, 8);
		if (!((((w0 & keys) + add) | ((w1 & keys) + add)) & high))
			continue;
		for (j = i; j < i + 8; j++) {
			if (engy_bf16_key(v[j]) < thr)
				continue;
			if (c == cap)
				return cap + 1;
			cv[c] = v[j];
			ci[c++] = j;
		}
	}
	for (; i < n; i++) {
		if (engy_bf16_key(v[i]) < thr)
			continue;
		if (c == cap)
			return cap + 1;
		cv[c] = v[i];
		ci[c++] = i;
	}
	return c;
}

/* Room for @n block maxima in @ws; false without memory. */
static bool l1_fit(struct engy_toploc_ws *ws, size_t n)
{
	uint16_t *p;

	if (n <= ws->l1_cap)
		return true;
	p = realloc(ws->l1, n * sizeof(*p));
	if (!p)
		return false;
	ws->l1 = p;
	ws->l1_cap = n;
	return true;
}

int engy_toploc_topk(struct engy_toploc_ws *ws, const uint16_t *v, size_t n,
		     uint64_t *idx)
{
	size_t k = ws->topk, c;
	unsigned thr;

	if (n < k)
		return -EINVAL;
	if (ws->isa == ENGY_TOPLOC_ISA_AVX2 && l1_fit(ws, n / 8 + 16)) {
		int r = engy_toploc_topk_avx2(v, n, k, ws->l1, ws->l2, ws->cv,
					      ws->ci, ws->cap, idx);

		if (r == 0)
			return 0;
		if (r == 2) { /* too many at the threshold */
			select_exact(v, NULL, n, k, idx);
			return 0;
		}
	}
	if (n >= 2 * SAMPLE_TARGET && n >= 16 * k) {
		thr = guess_threshold(v, n, k);
		if (thr) {
			c = filter(v, n, thr, ws->cv, ws->ci, ws->cap);
			if (c >= k && c <= ws->cap) {
				select_exact(ws->cv, ws->ci, c, k, idx);
				return 0;
			}
		}
	}
	select_exact(v, NULL, n, k, idx);
	return 0;
}

int engy_toploc_prove_chunk(struct engy_toploc_ws *ws, const uint16_t *v,
			    size_t n, uint8_t *proof)
{
	uint16_t *y = ws->coeffs; /* free until from_points */
	size_t i;
	int rc;

	rc = engy_toploc_topk(ws, v, n, ws->idx);
	if (rc)
		return rc;
	for (i = 0; i < ws->topk; i++)
		y[i] = v[ws->idx[i]];
	return engy_toploc_from_points_isa(ws->idx, y, ws->topk, proof,
					   ws->isa);
}

/* Horner at every point at once: the inner loop has no carried chain. */
void engy_toploc_eval_many(const uint16_t *c, size_t k, const uint32_t *x,
			   uint32_t *r, size_t n, int isa)
{
	size_t i, j;

	if (isa == ENGY_TOPLOC_ISA_AVX2) {
		engy_toploc_eval_avx2(c, k, x, r, n);
		return;
	}
	for (i = 0; i < n; i++)
		r[i] = c[k - 1];
	for (j = k - 1; j-- > 0;) {
		uint32_t cj = c[j];

		for (i = 0; i < n; i++)
			r[i] = (r[i] * x[i] + cj) % P;
	}
}

int engy_toploc_verify_chunk(struct engy_toploc_ws *ws, const uint16_t *v,
			     size_t n, const uint8_t *proof, size_t len,
			     struct engy_toploc_stats *st)
{
	size_t k = ws->topk, i, cnt = 0, half, acc;
	uint32_t m, mism = 0, hist[128];
	uint64_t sum = 0;
	unsigned e;
	int rc;

	rc = engy_toploc_proof_decode(proof, len, ws->topk, &m, ws->coeffs);
	if (rc)
		return rc;
	if (n < k)
		return ENGY_TOPLOC_SHORT_CHUNK;
	engy_toploc_topk(ws, v, n, ws->idx);
	for (i = 0; i < k; i++)
		ws->x[i] = (uint32_t)(ws->idx[i] % m);
	engy_toploc_eval_many(ws->coeffs, k, ws->x, ws->r, k, ws->isa);

	memset(hist, 0, sizeof(hist));
	for (i = 0; i < k; i++) {
		uint16_t pv = (uint16_t)ws->r[i], own = v[ws->idx[i]];
		unsigned a = engy_bf16_mant(pv), b = engy_bf16_mant(own);

		if (engy_bf16_exp(pv) != engy_bf16_exp(own)) {
			mism++;
			continue;
		}
		e = a > b ? a - b : b - a;
		hist[e]++;
		sum += e;
		cnt++;
	}
	st->exp_mismatches = mism;
	if (!cnt) {
		st->mant_mean = 18446744073709551616.0; /* 2^64 */
		st->mant_median = 18446744073709551616.0;
		return ENGY_TOPLOC_OK;
	}
	st->mant_mean = (double)sum / (double)cnt;
	/* Upper median: the element at sorted position cnt / 2. */
	half = cnt / 2;
	for (e = 0, acc = 0; e < 128; e++) {
		acc += hist[e];
		if (acc > half)
			break;
	}
	st->mant_median = e;
	return ENGY_TOPLOC_OK;
}
