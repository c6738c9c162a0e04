/* SPDX-License-Identifier: MIT */
/*
 * The engine's elementwise steps (vec.h): each written once in C, the
 * order of its arithmetic the contract, and again with AVX-512 where the
 * kernel in use is avx512f (matmul.c); attention's weighted sum of values
 * with AVX2 too, where the kernel is avx2+fma (the C's column walk over V
 * was a fifth of decode there).  Every lane of the AVX-512 and AVX2 code
 * does what the C does to that element, the same operations on the same
 * operands in the same order (no contraction: -ffp-contract=off), so
 * they give the same bits; test_vec_kernels (check_backend_ref_engine.c)
 * compares them with memcmp, non-finite and subnormal values included,
 * and a forward pass under each kernel.
 * The steps with an exp (the softmax's, SiLU's) are in vec_exp.c.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "matmul_int.h"
#include "vec.h"
#include "vec_int.h"

/* ---- The definitions ---- */

static float gen_scale_max(float *v, size_t n, float s)
{
	float mx = -INFINITY;
	size_t j;

	for (j = 0; j < n; j++) {
		v[j] *= s;
		mx = v[j] > mx ? v[j] : mx;
	}
	return mx;
}

static void gen_div(float *v, size_t n, double d)
{
	size_t j;

	for (j = 0; j < n; j++)
		v[j] = (float)((double)v[j] / d);
}

static void gen_wsum(const float *sc, size_t n, const float *V, size_t ldv,
		     size_t hd, float *out)
{
	size_t j, d;

	for (d = 0; d < hd; d++) {
		float o = 0;

		for (j = 0; j < n; j++)
			o = o + sc[j] * V[j * ldv + d];
		out[d] = o;
	}
}

static void gen_wsum_rows(const float *sc, size_t ldsc, const size_t *n,
			  size_t rows, const float *V, size_t ldv, size_t hd,
			  float *out, size_t ldo)
{
	size_t i;

	for (i = 0; i < rows; i++)
		gen_wsum(sc + i * ldsc, n[i], V, ldv, hd, out + i * ldo);
}

static inline uint32_t bf16_bits(uint32_t u)
{
	if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu))
		return (u | 0x400000u) & 0xFFFF0000u; /* quiet NaN */
	return (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
}

static void gen_bf16_round(float *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t u;

		memcpy(&u, &v[i], sizeof(u));
		u = bf16_bits(u);
		memcpy(&v[i], &u, sizeof(u));
	}
}

static void gen_add(float *x, const float *y, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = x[i] + y[i];
}

static void gen_add_scaled(float *y, const float *x, float w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		y[i] = y[i] + x[i] * w;
}

static void gen_rope(float *x, const float *cs, size_t hd)
{
	size_t i, half = hd / 2;

	for (i = 0; i < half; i++) {
		float a = x[i], b = x[i + half], c = cs[i], s = cs[half + i];

		x[i] = a * c - b * s;
		x[i + half] = b * c + a * s;
	}
}

static void gen_scale_mul(float *out, const float *x, const float *w, float inv,
			  size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = w[i] * (x[i] * inv);
}

/* ---- AVX-512 ---- */

#ifdef MM_X86
static Z float z_scale_max(float *v, size_t n, float s)
{
	__m512 sv = _mm512_set1_ps(s), mx = _mm512_set1_ps(-INFINITY);
	size_t j;

	for (j = 0; j < n; j += 16) {
		__mmask16 m = tail_mask(n - j);
		__m512 x = _mm512_mul_ps(ldm(m, v + j), sv);

		stm(v + j, m, x);
		/* max(x, mx) is mx where x is NaN, as the C's comparison */
		mx = _mm512_mask_max_ps(mx, m, x, mx);
	}
	/* The maximum of the lanes: no NaN is in mx, any order gives it. */
	return _mm512_reduce_max_ps(mx);
}

static Z void z_div(float *v, size_t n, double d)
{
	__m512d dv = _mm512_set1_pd(d);
	size_t j;

	for (j = 0; j < n; j += 16) {
		__mmask16 m = tail_mask(n - j);
		__m512 x = ldm(m, v + j);
		__m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(x)),
			hi = _mm512_cvtps_pd(
				_mm256_castpd_ps(_mm512_extractf64x4_pd(
					_mm512_castps_pd(x), 1)));
		__m256 l = _mm512_cvtpd_ps(_mm512_div_pd(lo, dv)),
		       h = _mm512_cvtpd_ps(_mm512_div_pd(hi, dv));

		x = _mm512_castpd_ps(_mm512_insertf64x4(
			_mm512_castpd256_pd512(_mm256_castps_pd(l)),
			_mm256_castps_pd(h), 1));
		stm(v + j, m, x);
	}
}

/* 64 d (four registers) of out at a time, the j loop inside, in order. */
static Z void z_wsum(const float *sc, size_t n, const float *V, size_t ldv,
		     size_t hd, float *out)
{
	size_t j, d;

	for (d = 0; d + 64 <= hd; d += 64) {
		__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
		const float *p = V + d;

		for (j = 0; j < n; j++, p += ldv) {
			__m512 s = _mm512_set1_ps(sc[j]);

			a0 = _mm512_add_ps(
				a0, _mm512_mul_ps(s, _mm512_loadu_ps(p)));
			a1 = _mm512_add_ps(
				a1, _mm512_mul_ps(s, _mm512_loadu_ps(p + 16)));
			a2 = _mm512_add_ps(
				a2, _mm512_mul_ps(s, _mm512_loadu_ps(p + 32)));
			a3 = _mm512_add_ps(
				a3, _mm512_mul_ps(s, _mm512_loadu_ps(p + 48)));
		}
		_mm512_storeu_ps(out + d, a0);
		_mm512_storeu_ps(out + d + 16, a1);
		_mm512_storeu_ps(out + d + 32, a2);
		_mm512_storeu_ps(out + d + 48, a3);
	}
	/* the rest, 16 d at a time, the last masked */
	for (; d < hd; d += 16) {
		__mmask16 m = tail_mask(hd - d);
		__m512 a = _mm512_setzero_ps();
		const float *p = V + d;

		for (j = 0; j < n; j++, p += ldv)
			a = _mm512_add_ps(
				a, _mm512_mul_ps(_mm512_set1_ps(sc[j]),
						 _mm512_maskz_loadu_ps(m, p)));
		_mm512_mask_storeu_ps(out + d, m, a);
	}
}

/* Up to WS_ROWS rows, 64 d at a time: each row's four registers add
 * position j (masked off past the row's own n) as z_wsum adds it. */
#define WS_ROWS 4

static inline __attribute__((always_inline)) Z void
z_wsum_block(const float *sc, size_t ldsc, const size_t *n, const int R,
	     const float *V, size_t ldv, float *out, size_t ldo)
{
	__m512 a[WS_ROWS][4];
	size_t j, nmax = 0;
	int i, q;

	_Pragma("GCC unroll 4") for (i = 0; i < R; i++)
	{
		if (n[i] > nmax)
			nmax = n[i];
		_Pragma("GCC unroll 4") for (q = 0; q < 4; q++) a[i][q] =
			_mm512_setzero_ps();
	}
	for (j = 0; j < nmax; j++, V += ldv) {
		__m512 v0 = _mm512_loadu_ps(V), v1 = _mm512_loadu_ps(V + 16),
		       v2 = _mm512_loadu_ps(V + 32),
		       v3 = _mm512_loadu_ps(V + 48);

		_Pragma("GCC unroll 4") for (i = 0; i < R; i++)
		{
			__mmask16 m = j < n[i] ? 0xFFFF : 0;
			__m512 s = _mm512_set1_ps(j < n[i] ? sc[i * ldsc + j]
							   : 0.0f);

			a[i][0] = _mm512_mask_add_ps(a[i][0], m, a[i][0],
						     _mm512_mul_ps(s, v0));
			a[i][1] = _mm512_mask_add_ps(a[i][1], m, a[i][1],
						     _mm512_mul_ps(s, v1));
			a[i][2] = _mm512_mask_add_ps(a[i][2], m, a[i][2],
						     _mm512_mul_ps(s, v2));
			a[i][3] = _mm512_mask_add_ps(a[i][3], m, a[i][3],
						     _mm512_mul_ps(s, v3));
		}
	}
	_Pragma("GCC unroll 4") for (i = 0; i < R; i++)
		_Pragma("GCC unroll 4") for (q = 0; q < 4; q++)
			_mm512_storeu_ps(out + i * ldo + 16 * q, a[i][q]);
}

static Z void z_wsum_rows(const float *sc, size_t ldsc, const size_t *n,
			  size_t rows, const float *V, size_t ldv, size_t hd,
			  float *out, size_t ldo)
{
	size_t i, d;

	if (hd % 64) { /* a row at a time, with z_wsum's tail */
		for (i = 0; i < rows; i++)
			z_wsum(sc + i * ldsc, n[i], V, ldv, hd, out + i * ldo);
		return;
	}
	for (i = 0; i < rows; i += WS_ROWS)
		for (d = 0; d < hd; d += 64) {
			const float *s = sc + i * ldsc;
			const float *v = V + d;
			float *o = out + i * ldo + d;

			switch (rows - i >= WS_ROWS ? WS_ROWS : rows - i) {
			case 1:
				z_wsum_block(s, ldsc, n + i, 1, v, ldv, o, ldo);
				break;
			case 2:
				z_wsum_block(s, ldsc, n + i, 2, v, ldv, o, ldo);
				break;
			case 3:
				z_wsum_block(s, ldsc, n + i, 3, v, ldv, o, ldo);
				break;
			default:
				z_wsum_block(s, ldsc, n + i, 4, v, ldv, o, ldo);
			}
		}
}

static Z __m512i z_bf16_bits(__m512i u)
{
	const __m512i exp = _mm512_set1_epi32(0x7F800000),
		      man = _mm512_set1_epi32(0x7FFFFF),
		      hi = _mm512_set1_epi32((int)0xFFFF0000u),
		      one = _mm512_set1_epi32(1);
	__mmask16 nan = _mm512_cmpeq_epi32_mask(_mm512_and_si512(u, exp), exp) &
			_mm512_test_epi32_mask(u, man);
	__m512i r = _mm512_add_epi32(
		_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)),
		_mm512_and_si512(_mm512_srli_epi32(u, 16), one));
	__m512i q = _mm512_or_si512(u, _mm512_set1_epi32(0x400000));

	return _mm512_and_si512(_mm512_mask_blend_epi32(nan, r, q), hi);
}

static Z void z_bf16_round(float *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i += 16) {
		__mmask16 m = tail_mask(n - i);
		__m512i u = _mm512_castps_si512(ldm(m, v + i));

		stm(v + i, m, _mm512_castsi512_ps(z_bf16_bits(u)));
	}
}

static Z void z_add(float *x, const float *y, size_t n)
{
	size_t i;

	for (i = 0; i < n; i += 16) {
		__mmask16 m = tail_mask(n - i);

		stm(x + i, m, _mm512_add_ps(ldm(m, x + i), ldm(m, y + i)));
	}
}

static Z void z_add_scaled(float *y, const float *x, float w, size_t n)
{
	__m512 wv = _mm512_set1_ps(w);
	size_t i;

	for (i = 0; i < n; i += 16) {
		__mmask16 m = tail_mask(n - i);
		__m512 t = _mm512_mul_ps(ldm(m, x + i), wv);

		stm(y + i, m, _mm512_add_ps(ldm(m, y + i), t));
	}
}

static Z void z_rope(float *x, const float *cs, size_t hd)
{
	size_t i, half = hd / 2;

	for (i = 0; i < half; i += 16) {
		__mmask16 m = tail_mask(half - i);
		__m512 a = ldm(m, x + i), b = ldm(m, x + i + half),
		       c = ldm(m, cs + i), s = ldm(m, cs + half + i);

		stm(x + i, m,
		    _mm512_sub_ps(_mm512_mul_ps(a, c), _mm512_mul_ps(b, s)));
		stm(x + i + half, m,
		    _mm512_add_ps(_mm512_mul_ps(b, c), _mm512_mul_ps(a, s)));
	}
}

static Z void z_scale_mul(float *out, const float *x, const float *w, float inv,
			  size_t n)
{
	__m512 iv = _mm512_set1_ps(inv);
	size_t i;

	for (i = 0; i < n; i += 16) {
		__mmask16 m = tail_mask(n - i);
		__m512 t = _mm512_mul_ps(ldm(m, x + i), iv);

		stm(out + i, m, _mm512_mul_ps(ldm(m, w + i), t));
	}
}
#endif

/* ---- AVX2 (the steps where the C's order leaves it slow) ---- */

#ifdef MM_X86

/* A pass over V reads 32 d of each row (128 of a 256-byte row at head
 * dim 64), so a row's later passes would stream from memory again: the
 * first pass asks for whole rows (@pf bytes) WSUM_PF rows on, into L2,
 * where the later ones find them.  Measured on a 2-vCPU Zen 3 VM, small
 * checkpoint decode in interleaved pairs: 16 rows on faster in 15 of 20
 * dense pairs (about 1.01-1.04x) and 4 of 6 MoE; 8 and 32 no clear
 * gain. */
#define WSUM_PF 16

/* Up to WS_ROWS rows, 32 d at a time: each row's four registers add
 * position j in order (none past the row's own n), a product then a sum
 * as the C does. */
static inline __attribute__((always_inline)) A void
a_wsum_block(const float *sc, size_t ldsc, const size_t *n, const int R,
	     const float *V, size_t ldv, float *out, size_t ldo, size_t pf)
{
	__m256 a[WS_ROWS][4];
	size_t j, b, nmax = 0;
	int i, q;

	_Pragma("GCC unroll 4") for (i = 0; i < R; i++)
	{
		if (n[i] > nmax)
			nmax = n[i];
		_Pragma("GCC unroll 4") for (q = 0; q < 4; q++) a[i][q] =
			_mm256_setzero_ps();
	}
	for (j = 0; j < nmax; j++, V += ldv) {
		__m256 v0, v1, v2, v3;

		for (b = 0; b < pf; b += 64)
			_mm_prefetch((const char *)(V + WSUM_PF * ldv) + b,
				     _MM_HINT_T1);
		v0 = _mm256_loadu_ps(V);
		v1 = _mm256_loadu_ps(V + 8);
		v2 = _mm256_loadu_ps(V + 16);
		v3 = _mm256_loadu_ps(V + 24);

		_Pragma("GCC unroll 4") for (i = 0; i < R; i++)
		{
			__m256 s;

			if (j >= n[i])
				continue;
			s = _mm256_set1_ps(sc[i * ldsc + j]);
			a[i][0] = _mm256_add_ps(a[i][0], _mm256_mul_ps(s, v0));
			a[i][1] = _mm256_add_ps(a[i][1], _mm256_mul_ps(s, v1));
			a[i][2] = _mm256_add_ps(a[i][2], _mm256_mul_ps(s, v2));
			a[i][3] = _mm256_add_ps(a[i][3], _mm256_mul_ps(s, v3));
		}
	}
	_Pragma("GCC unroll 4") for (i = 0; i < R; i++)
		_Pragma("GCC unroll 4") for (q = 0; q < 4; q++)
			_mm256_storeu_ps(out + i * ldo + 8 * q, a[i][q]);
}

/* z_wsum in eight lanes: the C walks V a column at a time; this reads
 * it a row at a time, 32 d (four registers) at once (a_wsum_block's
 * one row), each d adding position j in order, a product then a sum as
 * the C does. */
static A void a_wsum(const float *sc, size_t n, const float *V, size_t ldv,
		     size_t hd, float *out)
{
	size_t j, d;

	for (d = 0; d + 32 <= hd; d += 32)
		a_wsum_block(sc, 0, &n, 1, V + d, ldv, out + d, 0,
			     d ? 0 : hd * 4);
	/* the rest, 8 d at a time, the last masked */
	for (; d < hd; d += 8) {
		__m256i m = a_tail(hd - d);
		__m256 a = _mm256_setzero_ps();
		const float *p = V + d;

		for (j = 0; j < n; j++, p += ldv)
			a = _mm256_add_ps(
				a, _mm256_mul_ps(_mm256_set1_ps(sc[j]),
						 _mm256_maskload_ps(p, m)));
		_mm256_maskstore_ps(out + d, m, a);
	}
}

static A void a_wsum_rows(const float *sc, size_t ldsc, const size_t *n,
			  size_t rows, const float *V, size_t ldv, size_t hd,
			  float *out, size_t ldo)
{
	size_t i, d;

	if (hd % 32) { /* a row at a time, with a_wsum's tail */
		for (i = 0; i < rows; i++)
			a_wsum(sc + i * ldsc, n[i], V, ldv, hd, out + i * ldo);
		return;
	}
	for (i = 0; i < rows; i += WS_ROWS)
		for (d = 0; d < hd; d += 32) {
			const float *s = sc + i * ldsc;
			const float *v = V + d;
			float *o = out + i * ldo + d;
			size_t pf = i || d ? 0 : hd * 4;

			switch (rows - i >= WS_ROWS ? WS_ROWS : rows - i) {
			case 1:
				a_wsum_block(s, ldsc, n + i, 1, v, ldv, o, ldo,
					     pf);
				break;
			case 2:
				a_wsum_block(s, ldsc, n + i, 2, v, ldv, o, ldo,
					     pf);
				break;
			case 3:
				a_wsum_block(s, ldsc, n + i, 3, v, ldv, o, ldo,
					     pf);
				break;
			default:
				a_wsum_block(s, ldsc, n + i, 4, v, ldv, o, ldo,
					     pf);
			}
		}
}
#endif

/* ---- Dispatch ---- */

float engy_vec_scale_max(float *v, size_t n, float s)
{
	return PICK(scale_max, v, n, s);
}

void engy_vec_div(float *v, size_t n, double d)
{
	PICK(div, v, n, d);
}

void engy_vec_wsum(const float *sc, size_t n, const float *V, size_t ldv,
		   size_t hd, float *out)
{
	PICK3(wsum, sc, n, V, ldv, hd, out);
}

void engy_vec_wsum_rows(const float *sc, size_t ldsc, const size_t *n,
			size_t rows, const float *V, size_t ldv, size_t hd,
			float *out, size_t ldo)
{
	PICK3(wsum_rows, sc, ldsc, n, rows, V, ldv, hd, out, ldo);
}

void engy_vec_bf16_round(float *v, size_t n)
{
	PICK(bf16_round, v, n);
}

void engy_vec_add(float *x, const float *y, size_t n)
{
	PICK(add, x, y, n);
}

void engy_vec_add_scaled(float *y, const float *x, float w, size_t n)
{
	PICK(add_scaled, y, x, w, n);
}

void engy_vec_rope(float *x, const float *cs, size_t hd)
{
	PICK(rope, x, cs, hd);
}

/* Each row's sum of squares in double, in order: one chain per row, four
 * rows' chains interleaved (the same additions, overlapped). */
static void sumsq_rows(const float *x, size_t ldx, size_t n, size_t d,
		       double *ss)
{
	size_t r = 0, i;

	for (; r + 4 <= n; r += 4) {
		const float *a = x + r * ldx, *b = a + ldx, *c = b + ldx,
			    *e = c + ldx;
		double s0 = 0, s1 = 0, s2 = 0, s3 = 0;

		for (i = 0; i < d; i++) {
			s0 += (double)a[i] * a[i];
			s1 += (double)b[i] * b[i];
			s2 += (double)c[i] * c[i];
			s3 += (double)e[i] * e[i];
		}
		ss[r] = s0;
		ss[r + 1] = s1;
		ss[r + 2] = s2;
		ss[r + 3] = s3;
	}
	for (; r < n; r++) {
		double s0 = 0;

		for (i = 0; i < d; i++)
			s0 += (double)x[r * ldx + i] * x[r * ldx + i];
		ss[r] = s0;
	}
}

void engy_vec_rmsnorm_rows(float *out, size_t ldo, const float *x, size_t ldx,
			   const float *w, size_t n, size_t d, double eps)
{
	double ss[16];
	size_t r0, r;

	for (r0 = 0; r0 < n; r0 += 16) {
		size_t nr = n - r0 < 16 ? n - r0 : 16;

		sumsq_rows(x + r0 * ldx, ldx, nr, d, ss);
		for (r = 0; r < nr; r++) {
			float inv =
				(float)(1.0 / sqrt(ss[r] / (double)d + eps));

			PICK(scale_mul, out + (r0 + r) * ldo,
			     x + (r0 + r) * ldx, w, inv, d);
		}
	}
}

void engy_vec_rmsnorm(float *out, const float *x, const float *w, size_t d,
		      double eps)
{
	engy_vec_rmsnorm_rows(out, 0, x, 0, w, 1, d, eps);
}
