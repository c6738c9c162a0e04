/* SPDX-License-Identifier: MIT */
/*
 * The engine's elementwise steps (vec.h): each written once in C, the
 * order of its arithmetic the contract, and again with AVX-512 where the
 * kernel in use is avx512f (matmul.c).  Every lane of the AVX-512 code
 * does what the C does to that element, the same operations on the same
 * operands in the same order (no contraction: -ffp-contract=off), so the
 * two give the same bits; test_vec_kernels (check_backend_ref_engine.c)
 * compares them with memcmp, non-finite and subnormal values included.
 *
 * The C library's expf (softmax, SiLU) is the one step the C does not
 * spell out: the AVX-512 code computes it in lanes by the C library's own
 * algorithm (z_libm_exp), used only once a check at first use has found
 * it equal to the expf this process runs on every value it tried.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "matmul_int.h"
#include "vec.h"

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

static void gen_swiglu(float *g, const float *u, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
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

/*
 * The bf16dp profile's exp (vec.h): e^x = 2^n e^r, n = rint(x log2 e),
 * r = x - n ln 2 in two fused steps (ln 2 split in a head exact for any
 * n here and a tail), e^r by its Taylor polynomial to degree 7 (|r| <=
 * ln 2 / 2: truncation below 6e-9 relative) in fused Horner steps, then
 * two exact-exponent scalings (2^n in two halves, so n = -150 or 128
 * needs no special case).  x is first clamped to [-104, 89], outside
 * which e^x rounds to 0 or overflows anyway; a NaN comes back quieted.
 */
#define PEXP_LOG2E  1.44269504088896341f
#define PEXP_LN2_HI 0.693145751953125f /* 16 significant bits */
#define PEXP_LN2_LO 1.42860682030941723212e-6f
#define PEXP_LO	    -104.0f
#define PEXP_HI	    89.0f

static const float pexp_c[8] = { 1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24,
				 1.0f / 6,    0.5f,	  1.0f,	      1.0f };

static inline float pow2i(int32_t k)
{
	uint32_t u = (uint32_t)(k + 127) << 23;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

float engy_vec_pexp(float x)
{
	float n, r, p;
	int32_t k, k1;
	int i;

	if (x != x)
		return x + x;
	x = x < PEXP_LO ? PEXP_LO : x > PEXP_HI ? PEXP_HI : x;
	n = rintf(x * PEXP_LOG2E);
	r = fmaf(n, -PEXP_LN2_HI, x);
	r = fmaf(n, -PEXP_LN2_LO, r);
	p = pexp_c[0];
	for (i = 1; i < 8; i++)
		p = fmaf(p, r, pexp_c[i]);
	k = (int32_t)n;
	k1 = k >> 1; /* floor(k / 2): an arithmetic shift */
	return p * pow2i(k1) * pow2i(k - k1);
}

static void gen_exp_sub(float *v, size_t n, float mx)
{
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = engy_vec_pexp(v[i] - mx);
}

static void gen_exp_sub_libm(float *v, size_t n, float mx)
{
	size_t j;

	for (j = 0; j < n; j++)
		v[j] = expf(v[j] - mx);
}

static void gen_swiglu_pexp(float *g, const float *u, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		g[i] = g[i] / (1.0f + engy_vec_pexp(-g[i])) * u[i];
}

/* ---- AVX-512 ---- */

#ifdef MM_X86
#define Z __attribute__((target("avx512f,avx512bw")))

static inline Z __mmask16 tail_mask(size_t left)
{
	return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
}

/* Loads and stores of 16 floats, masked only where @m leaves some out:
 * a masked store is slow on some CPUs (Zen 4), so full ones are plain. */
static inline Z __m512 ldm(__mmask16 m, const float *p)
{
	return m == 0xFFFF ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}

static inline Z void stm(float *p, __mmask16 m, __m512 v)
{
	if (m == 0xFFFF)
		_mm512_storeu_ps(p, v);
	else
		_mm512_mask_storeu_ps(p, m, v);
}

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

/*
 * expf in lanes, step for step the C library's (glibc since 2.27, from
 * Arm's optimized-routines; its x86-64 build with fused multiply-adds,
 * which every AVX-512 CPU has): in double, x 32/ln2 = k + r, k rounded
 * by the 1.5 2^52 shift; 2^(k/32) from a table of 2^(i/32) (rounded to
 * double, less i << 47, the bits k adds back) scaled by k's high bits;
 * 2^(r/32) by a cubic; the product rounded to float.  Each fused
 * multiply-add below is one in that build (its disassembly), so each
 * lane gets the C library's bits; lanes with |x| >= 88, infinities and
 * NaN take the C library's expf itself.  z_exp_ok() checks the claim
 * against the expf in use before anything relies on it.
 */
static const uint64_t exp_tab[32] = {
	0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f,
	0x3fef9301d0125b51, 0x3fef72b83c7d517b, 0x3fef54873168b9aa,
	0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715,
	0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
	0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
	0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74,
	0x3feea11473eb0187, 0x3feea589994cce13, 0x3feeace5422aa0db,
	0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
	0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c,
	0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
	0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};

static inline Z __m512d z_bits_pd(uint64_t u)
{
	return _mm512_castsi512_pd(_mm512_set1_epi64((long long)u));
}

/* Eight lanes of the double-precision steps. */
static inline __attribute__((always_inline)) Z __m256 z_exp8(__m256 xf,
							     const __m512i *tab)
{
	const __m512d invln2n = z_bits_pd(0x40471547652b82feu),
		      shift = z_bits_pd(0x4338000000000000u),
		      c0 = z_bits_pd(0x3ebc6af84b912394u),
		      c1 = z_bits_pd(0x3f2ebfce50fac4f3u),
		      c2 = z_bits_pd(0x3f962e42ff0c52d6u),
		      one = _mm512_set1_pd(1.0);
	__m512d xd = _mm512_cvtps_pd(xf), kd, r, z, r2, y;
	__m512i ki, t;

	kd = _mm512_fmadd_pd(invln2n, xd, shift);
	ki = _mm512_castpd_si512(kd);
	kd = _mm512_sub_pd(kd, shift);
	r = _mm512_fmsub_pd(invln2n, xd, kd);
	t = _mm512_mask_blend_epi64(
		_mm512_test_epi64_mask(ki, _mm512_set1_epi64(16)),
		_mm512_permutex2var_epi64(tab[0], ki, tab[1]),
		_mm512_permutex2var_epi64(tab[2], ki, tab[3]));
	t = _mm512_add_epi64(t, _mm512_slli_epi64(ki, 47));
	z = _mm512_fmadd_pd(r, c0, c1);
	r2 = _mm512_mul_pd(r, r);
	y = _mm512_fmadd_pd(r, c2, one);
	y = _mm512_fmadd_pd(z, r2, y);
	return _mm512_cvtpd_ps(_mm512_mul_pd(y, _mm512_castsi512_pd(t)));
}

static inline __attribute__((always_inline)) Z __m512 z_libm_exp(__m512 x)
{
	__m512i tab[4];
	__m512 y;
	__mmask16 big;
	int i;

	for (i = 0; i < 4; i++)
		tab[i] = _mm512_loadu_si512(exp_tab + 8 * i);
	y = _mm512_castpd_ps(_mm512_insertf64x4(
		_mm512_castpd256_pd512(_mm256_castps_pd(
			z_exp8(_mm512_castps512_ps256(x), tab))),
		_mm256_castps_pd(z_exp8(_mm256_castpd_ps(_mm512_extractf64x4_pd(
						_mm512_castps_pd(x), 1)),
					tab)),
		1));
	/* |x| >= 88 (the top 12 bits past 0x42a), infinities, NaN */
	big = _mm512_cmpgt_epi32_mask(
		_mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(x), 20),
				 _mm512_set1_epi32(0x7ff)),
		_mm512_set1_epi32(0x42a));
	if (big) {
		float xs[16], ys[16];

		_mm512_storeu_ps(xs, x);
		_mm512_storeu_ps(ys, y);
		for (i = 0; i < 16; i++)
			if (big >> i & 1)
				ys[i] = expf(xs[i]);
		y = _mm512_loadu_ps(ys);
	}
	return y;
}

/* Values that cover the C library's paths: each exponent, both signs,
 * around the edges of its fast path, zeros, subnormals, non-finite. */
static int exp_ok = -1;
static pthread_once_t exp_once = PTHREAD_ONCE_INIT;

static Z void z_exp_check(void)
{
	static const uint32_t edge[] = {
		0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007fffff,
		0x807fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
		0x7f800001, 0x42b00000, 0x42afffff, 0xc2b00000, 0xc2afffff,
		0x42b17217, 0x42b17218, 0xc2ce8ed0, 0xc2cff1b4, 0xc2cff1b5,
		0xc2d00000, 0x3f800000, 0xbf800000, 0x33800000, 0xb3800000,
	};
	float xs[16], want[16], got[16];
	uint32_t u = 0x9e3779b9u, b;
	size_t i, k = 0, n = sizeof(edge) / sizeof(edge[0]);
	int ok = 1;

	for (i = 0; i < n + 16 * 4096 && ok; i++) {
		if (i < n)
			b = edge[i];
		else if (i < n + 8192) /* every 2^19th bit pattern */
			b = (uint32_t)(i - n) << 19 |
			    (uint32_t)(i * 7 & 0x7ffff);
		else { /* the softmax's range, |x| < 104, at random */
			u = u * 1664525u + 1013904223u;
			b = (u & 0x80000000u) |
			    (0x20000000u + (u >> 3) % 0x22d00000u);
		}
		memcpy(&xs[k], &b, 4);
		want[k] = expf(xs[k]);
		if (++k == 16 || i + 1 == n + 16 * 4096) {
			_mm512_storeu_ps(got, z_libm_exp(_mm512_loadu_ps(xs)));
			while (k--)
				if (memcmp(&got[k], &want[k], 4) &&
				    !(want[k] != want[k] && got[k] != got[k]))
					ok = 0;
			k = 0;
		}
	}
	exp_ok = ok;
}

/* Whether z_libm_exp() gives the expf in use its bits (checked once). */
static bool z_exp_ok(void)
{
	pthread_once(&exp_once, z_exp_check);
	return exp_ok == 1;
}

/* v[j] = expf(v[j] - mx). */
static Z void z_exp_sub_libm(float *v, size_t n, float mx)
{
	__m512 m = _mm512_set1_ps(mx);
	size_t i;

	if (!z_exp_ok()) {
		for (i = 0; i < n; i++)
			v[i] = expf(v[i] - mx);
		return;
	}
	for (i = 0; i < n; i += 16) {
		__mmask16 k = tail_mask(n - i);

		stm(v + i, k, z_libm_exp(_mm512_sub_ps(ldm(k, v + i), m)));
	}
}

/* expf in lanes where z_exp_ok(), else the C library's one at a time. */
static Z void z_swiglu(float *g, const float *u, size_t n)
{
	float e[16];
	size_t i, k;
	bool lanes = z_exp_ok();

	for (i = 0; i < n; i += 16) {
		size_t c = n - i < 16 ? n - i : 16;
		__mmask16 m = tail_mask(n - i);
		__m512 x, ex, one = _mm512_set1_ps(1.0f);

		x = ldm(m, g + i);
		if (lanes) {
			ex = z_libm_exp(_mm512_castsi512_ps(_mm512_xor_si512(
				_mm512_castps_si512(x),
				_mm512_set1_epi32((int)0x80000000u))));
		} else {
			for (k = 0; k < c; k++)
				e[k] = expf(-g[i + k]);
			ex = ldm(m, e);
		}
		x = _mm512_div_ps(x, _mm512_add_ps(one, ex));
		x = _mm512_mul_ps(x, ldm(m, u + i));
		stm(g + i, m, x);
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
/* engy_vec_pexp() in lanes: the same operations, in the same order. */
static inline Z __m512 z_pexp(__m512 x)
{
	__mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
	__m512 c = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(PEXP_LO)),
				 _mm512_set1_ps(PEXP_HI));
	__m512 n = _mm512_roundscale_ps(
		_mm512_mul_ps(c, _mm512_set1_ps(PEXP_LOG2E)),
		_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-PEXP_LN2_HI), c);
	__m512 p = _mm512_set1_ps(pexp_c[0]);
	__m512i k, k1, b = _mm512_set1_epi32(127);
	int i;

	r = _mm512_fmadd_ps(n, _mm512_set1_ps(-PEXP_LN2_LO), r);
	for (i = 1; i < 8; i++)
		p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(pexp_c[i]));
	k = _mm512_cvtps_epi32(n);
	k1 = _mm512_srai_epi32(k, 1);
	p = _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(
				     _mm512_add_epi32(k1, b), 23)));
	p = _mm512_mul_ps(
		p, _mm512_castsi512_ps(_mm512_slli_epi32(
			   _mm512_add_epi32(_mm512_sub_epi32(k, k1), b), 23)));
	return _mm512_mask_add_ps(p, nan, x, x);
}

static Z void z_exp_sub(float *v, size_t n, float mx)
{
	__m512 m = _mm512_set1_ps(mx);
	size_t i;

	for (i = 0; i < n; i += 16) {
		__mmask16 t = tail_mask(n - i);

		stm(v + i, t, z_pexp(_mm512_sub_ps(ldm(t, v + i), m)));
	}
}

static Z void z_swiglu_pexp(float *g, const float *u, size_t n)
{
	__m512 one = _mm512_set1_ps(1.0f);
	size_t i;

	for (i = 0; i < n; i += 16) {
		__mmask16 t = tail_mask(n - i);
		__m512 x = ldm(t, g + i),
		       e = z_pexp(_mm512_castsi512_ps(_mm512_xor_si512(
			       _mm512_castps_si512(x),
			       _mm512_set1_epi32((int)0x80000000u))));

		x = _mm512_div_ps(x, _mm512_add_ps(one, e));
		stm(g + i, t, _mm512_mul_ps(x, ldm(t, u + i)));
	}
}

#endif

/* ---- Dispatch ---- */

static inline bool use_z(void)
{
#ifdef MM_X86
	return engy_mm_kernel_avx512();
#else
	return false;
#endif
}

#ifdef MM_X86
#define PICK(name, ...)                                                        \
	(use_z() ? z_##name(__VA_ARGS__) : gen_##name(__VA_ARGS__))
#else
#define PICK(name, ...) gen_##name(__VA_ARGS__)
#endif

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
	PICK(wsum, sc, n, V, ldv, hd, out);
}

void engy_vec_wsum_rows(const float *sc, size_t ldsc, const size_t *n,
			size_t rows, const float *V, size_t ldv, size_t hd,
			float *out, size_t ldo)
{
	PICK(wsum_rows, sc, ldsc, n, rows, V, ldv, hd, out, ldo);
}

void engy_vec_bf16_round(float *v, size_t n)
{
	PICK(bf16_round, v, n);
}

void engy_vec_swiglu(float *g, const float *u, size_t n)
{
	PICK(swiglu, g, u, n);
}

void engy_vec_exp_sub(float *v, size_t n, float mx)
{
	PICK(exp_sub, v, n, mx);
}

bool engy_vec_exp_lanes(void)
{
#ifdef MM_X86
	return use_z() && z_exp_ok();
#else
	return false;
#endif
}

void engy_vec_exp_sub_libm(float *v, size_t n, float mx)
{
	PICK(exp_sub_libm, v, n, mx);
}

void engy_vec_swiglu_pexp(float *g, const float *u, size_t n)
{
	PICK(swiglu_pexp, g, u, n);
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
