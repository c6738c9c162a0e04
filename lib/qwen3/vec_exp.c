/* SPDX-License-Identifier: MIT */
/*
 * The engine's steps with an exp (vec.h), each as vec.c writes its steps:
 * once in C, again in AVX-512 lanes with the same bits.  Two exps: the C
 * library's expf (the softmax's and SiLU's in every profile but bf16dp),
 * which the C does not spell out: the AVX-512 code computes it in lanes
 * by the C library's own algorithm (z_libm_exp), and so does AVX2 code
 * (a_libm_exp: the softmax and SiLU of the ref profile have it too), each
 * used only once a check at first use has found it equal to the expf
 * this process runs on every value it tried; and bf16dp's polynomial
 * (engy_vec_pexp), in AVX-512 lanes and C.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "vec.h"
#include "vec_int.h"

/* ---- The definitions ---- */

static void gen_swiglu(float *g, const float *u, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
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

/* Its constants, as double bits: 32/ln 2, the rounding shift 1.5 2^52,
 * and the cubic's coefficients. */
#define EXP_INVLN2N 0x40471547652b82feu
#define EXP_SHIFT   0x4338000000000000u
#define EXP_C0	    0x3ebc6af84b912394u
#define EXP_C1	    0x3f2ebfce50fac4f3u
#define EXP_C2	    0x3f962e42ff0c52d6u

/* Lanes @big of @y (@n of them) from the C library's expf of @x's. */
static void exp_big(const float *x, float *y, unsigned big, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (big >> i & 1)
			y[i] = expf(x[i]);
}

static inline Z __m512d z_bits_pd(uint64_t u)
{
	return _mm512_castsi512_pd(_mm512_set1_epi64((long long)u));
}

/* Eight lanes of the double-precision steps. */
static inline __attribute__((always_inline)) Z __m256 z_exp8(__m256 xf,
							     const __m512i *tab)
{
	const __m512d invln2n = z_bits_pd(EXP_INVLN2N),
		      shift = z_bits_pd(EXP_SHIFT), c0 = z_bits_pd(EXP_C0),
		      c1 = z_bits_pd(EXP_C1), c2 = z_bits_pd(EXP_C2),
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
		exp_big(xs, ys, big, 16);
		y = _mm512_loadu_ps(ys);
	}
	return y;
}

/* Values that cover the C library's paths: each exponent, both signs,
 * around the edges of its fast path, zeros, subnormals, non-finite. */
#define EXP_EDGES  25
#define EXP_CHECKS (EXP_EDGES + 16 * 4096)

static uint32_t exp_check_bits(size_t i, uint32_t *u)
{
	static const uint32_t edge[EXP_EDGES] = {
		0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007fffff,
		0x807fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
		0x7f800001, 0x42b00000, 0x42afffff, 0xc2b00000, 0xc2afffff,
		0x42b17217, 0x42b17218, 0xc2ce8ed0, 0xc2cff1b4, 0xc2cff1b5,
		0xc2d00000, 0x3f800000, 0xbf800000, 0x33800000, 0xb3800000,
	};

	if (i < EXP_EDGES)
		return edge[i];
	if (i < EXP_EDGES + 8192) /* every 2^19th bit pattern */
		return (uint32_t)(i - EXP_EDGES) << 19 |
		       (uint32_t)(i * 7 & 0x7ffff);
	/* the softmax's range, |x| < 104, at random */
	*u = *u * 1664525u + 1013904223u;
	return (*u & 0x80000000u) | (0x20000000u + (*u >> 3) % 0x22d00000u);
}

/* Whether @lanes (16 values of x to expf(x)) gives the C library's bits
 * on every value of exp_check_bits(). */
static int exp_check(void (*lanes)(const float *x, float *y))
{
	float xs[16], want[16], got[16];
	uint32_t u = 0x9e3779b9u, b;
	size_t i, k = 0;

	for (i = 0; i < EXP_CHECKS; i++) {
		b = exp_check_bits(i, &u);
		memcpy(&xs[k], &b, 4);
		want[k] = expf(xs[k]);
		if (++k == 16 || i + 1 == EXP_CHECKS) {
			lanes(xs, got);
			while (k--)
				if (memcmp(&got[k], &want[k], 4) &&
				    !(want[k] != want[k] && got[k] != got[k]))
					return 0;
			k = 0;
		}
	}
	return 1;
}

static int exp_ok = -1;
static pthread_once_t exp_once = PTHREAD_ONCE_INIT;

static Z void z_exp16(const float *x, float *y)
{
	_mm512_storeu_ps(y, z_libm_exp(_mm512_loadu_ps(x)));
}

static void z_exp_check(void)
{
	exp_ok = exp_check(z_exp16);
}

/* Whether z_libm_exp() gives the expf in use its bits (checked once). */
static bool z_exp_ok(void)
{
	pthread_once(&exp_once, z_exp_check);
	return exp_ok == 1;
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

/* The steps around an exp, with the C library's (@libm) or bf16dp's. */
static inline __attribute__((always_inline)) Z __m512 z_exp(__m512 x,
							    const bool libm)
{
	return libm ? z_libm_exp(x) : z_pexp(x);
}

/* v[j] = exp(v[j] - mx). */
static inline __attribute__((always_inline)) Z void
z_exp_sub_with(float *v, size_t n, float mx, const bool libm)
{
	__m512 m = _mm512_set1_ps(mx);
	size_t i;

	for (i = 0; i < n; i += 16) {
		__mmask16 t = tail_mask(n - i);

		stm(v + i, t, z_exp(_mm512_sub_ps(ldm(t, v + i), m), libm));
	}
}

/* g[i] = g[i] / (1 + exp(-g[i])) * u[i]. */
static inline __attribute__((always_inline)) Z void
z_swiglu_with(float *g, const float *u, size_t n, const bool libm)
{
	__m512 one = _mm512_set1_ps(1.0f);
	size_t i;

	for (i = 0; i < n; i += 16) {
		__mmask16 t = tail_mask(n - i);
		__m512 x = ldm(t, g + i),
		       e = z_exp(_mm512_castsi512_ps(_mm512_xor_si512(
					 _mm512_castps_si512(x),
					 _mm512_set1_epi32((int)0x80000000u))),
				 libm);

		x = _mm512_div_ps(x, _mm512_add_ps(one, e));
		stm(g + i, t, _mm512_mul_ps(x, ldm(t, u + i)));
	}
}

/* The C library's expf in lanes where z_exp_ok(), else the C. */
static Z void z_exp_sub_libm(float *v, size_t n, float mx)
{
	if (z_exp_ok())
		z_exp_sub_with(v, n, mx, true);
	else
		gen_exp_sub_libm(v, n, mx);
}

static Z void z_swiglu(float *g, const float *u, size_t n)
{
	if (z_exp_ok())
		z_swiglu_with(g, u, n, true);
	else
		gen_swiglu(g, u, n);
}

static Z void z_exp_sub(float *v, size_t n, float mx)
{
	z_exp_sub_with(v, n, mx, false);
}

static Z void z_swiglu_pexp(float *g, const float *u, size_t n)
{
	z_swiglu_with(g, u, n, false);
}

/* ---- AVX2 ---- */

/*
 * z_libm_exp()'s steps four doubles to a register: the same operations
 * (each fused multiply-add one of the C library's), 2^(i/32) by a gather
 * from the same table; lanes with |x| >= 88, infinities and NaN take the
 * C library's expf itself.  a_exp_ok() checks it against the expf in use
 * before anything relies on it, as z_exp_ok() does.
 */
static inline A __m256d a_bits_pd(uint64_t u)
{
	return _mm256_castsi256_pd(_mm256_set1_epi64x((long long)u));
}

static inline __attribute__((always_inline)) A __m128 a_exp4(__m128 xf)
{
	const __m256d invln2n = a_bits_pd(EXP_INVLN2N),
		      shift = a_bits_pd(EXP_SHIFT), c0 = a_bits_pd(EXP_C0),
		      c1 = a_bits_pd(EXP_C1), c2 = a_bits_pd(EXP_C2),
		      one = _mm256_set1_pd(1.0);
	__m256d xd = _mm256_cvtps_pd(xf), kd, r, z, r2, y;
	__m256i ki, t;

	kd = _mm256_fmadd_pd(invln2n, xd, shift);
	ki = _mm256_castpd_si256(kd);
	kd = _mm256_sub_pd(kd, shift);
	r = _mm256_fmsub_pd(invln2n, xd, kd);
	t = _mm256_i64gather_epi64((const long long *)exp_tab,
				   _mm256_and_si256(ki, _mm256_set1_epi64x(31)),
				   8);
	t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 47));
	z = _mm256_fmadd_pd(r, c0, c1);
	r2 = _mm256_mul_pd(r, r);
	y = _mm256_fmadd_pd(r, c2, one);
	y = _mm256_fmadd_pd(z, r2, y);
	return _mm256_cvtpd_ps(_mm256_mul_pd(y, _mm256_castsi256_pd(t)));
}

static inline __attribute__((always_inline)) A __m256 a_libm_exp(__m256 x)
{
	__m256 y = _mm256_set_m128(a_exp4(_mm256_extractf128_ps(x, 1)),
				   a_exp4(_mm256_castps256_ps128(x)));
	/* |x| >= 88 (the top 12 bits past 0x42a), infinities, NaN */
	int big = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(
		_mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 20),
				 _mm256_set1_epi32(0x7ff)),
		_mm256_set1_epi32(0x42a))));

	if (big) {
		float xs[8], ys[8];

		_mm256_storeu_ps(xs, x);
		_mm256_storeu_ps(ys, y);
		exp_big(xs, ys, (unsigned)big, 8);
		y = _mm256_loadu_ps(ys);
	}
	return y;
}

static int a_ok = -1;
static pthread_once_t a_once = PTHREAD_ONCE_INIT;

static A void a_exp16(const float *x, float *y)
{
	_mm256_storeu_ps(y, a_libm_exp(_mm256_loadu_ps(x)));
	_mm256_storeu_ps(y + 8, a_libm_exp(_mm256_loadu_ps(x + 8)));
}

static void a_exp_check(void)
{
	a_ok = exp_check(a_exp16);
}

/* Whether a_libm_exp() gives the expf in use its bits (checked once). */
static bool a_exp_ok(void)
{
	pthread_once(&a_once, a_exp_check);
	return a_ok == 1;
}

/* v[j] = expf(v[j] - mx). */
static A void a_exp_sub_libm(float *v, size_t n, float mx)
{
	__m256 m = _mm256_set1_ps(mx);
	size_t i;

	if (!a_exp_ok()) {
		gen_exp_sub_libm(v, n, mx);
		return;
	}
	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(v + i, a_libm_exp(_mm256_sub_ps(
						_mm256_loadu_ps(v + i), m)));
	if (i < n) {
		__m256i t = a_tail(n - i);

		_mm256_maskstore_ps(v + i, t,
				    a_libm_exp(_mm256_sub_ps(
					    _mm256_maskload_ps(v + i, t), m)));
	}
}

/* g[i] = g[i] / (1 + expf(-g[i])) * u[i]. */
static inline __attribute__((always_inline)) A __m256 a_silu_mul(__m256 x,
								 __m256 u)
{
	__m256 e = a_libm_exp(_mm256_xor_ps(x, _mm256_set1_ps(-0.0f)));

	return _mm256_mul_ps(
		_mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

static A void a_swiglu(float *g, const float *u, size_t n)
{
	size_t i;

	if (!a_exp_ok()) {
		gen_swiglu(g, u, n);
		return;
	}
	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(g + i, a_silu_mul(_mm256_loadu_ps(g + i),
						   _mm256_loadu_ps(u + i)));
	if (i < n) {
		__m256i t = a_tail(n - i);

		_mm256_maskstore_ps(g + i, t,
				    a_silu_mul(_mm256_maskload_ps(g + i, t),
					       _mm256_maskload_ps(u + i, t)));
	}
}
#endif

/* ---- Dispatch ---- */

void engy_vec_swiglu(float *g, const float *u, size_t n)
{
	PICK3(swiglu, g, u, n);
}

void engy_vec_exp_sub(float *v, size_t n, float mx)
{
	PICK(exp_sub, v, n, mx);
}

bool engy_vec_exp_lanes(void)
{
#ifdef MM_X86
	return use_z() ? z_exp_ok() : engy_mm_kernel_avx2() && a_exp_ok();
#else
	return false;
#endif
}

void engy_vec_exp_sub_libm(float *v, size_t n, float mx)
{
	PICK3(exp_sub_libm, v, n, mx);
}

void engy_vec_swiglu_pexp(float *g, const float *u, size_t n)
{
	PICK(swiglu_pexp, g, u, n);
}
