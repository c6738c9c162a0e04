/* SPDX-License-Identifier: MIT */
/*
 * MM_PROFILE_BF16DP (matmul.h): the definition in C, and the AVX512-BF16
 * kernel that gives its bits where a self-check at first use says so.
 */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "matmul.h"
#include "matmul_int.h"

/* The definition, one element at a time (bf16 weights). */
float engy_mm_bd_dot(const float *a, const uint16_t *b, size_t n)
{
	float l[16] = { 0 };
	size_t k, i;
	int off;

	for (k = 0; k < n; k += 32)
		for (i = 0; i < 16; i++) {
			size_t e = k + 2 * i;
			float t = ftz(fmaf(bd_x(a, e + 1, n), bd_w(b, e + 1, n),
					   l[i]));

			l[i] = ftz(fmaf(bd_x(a, e, n), bd_w(b, e, n), t));
		}
	for (off = 8; off; off /= 2)
		for (i = 0; i < (size_t)off; i++)
			l[i] = l[i] + l[i + off];
	return l[0];
}

const size_t engy_mm_check_ns[MM_CHECK_NS] = { 1, 31, 32, 33, 77, 160 };

void engy_mm_check_fill(float *x, uint16_t *w, size_t count, uint64_t *rng)
{
	uint64_t r = *rng;
	size_t i;

	for (i = 0; i < count; i++) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		x[i] = ldexpf((float)(int32_t)(r >> 32) / 2147483648.0f,
			      (int)(r % 40) - 20);
		w[i] = engy_bf16_from_f32(
			ldexpf((float)(int32_t)r / 2147483648.0f,
			       (int)((r >> 8) % 40) - 20));
		if (i % 13 == 5) { /* subnormal products, inputs */
			x[i] = ldexpf(x[i], -100);
			w[i] = (uint16_t)(w[i] & 0x807Fu);
		}
	}
	*rng = r;
}

#ifdef MM_X86
#define BD __attribute__((target("avx512f,avx512bw,avx512bf16,avx2,fma")))

/* The lanes' tree of the definition: i + i+8, then +4, +2, +1. */
static inline __attribute__((always_inline)) BD float bd_tree(__m512 v)
{
	__m256 a = _mm256_add_ps(_mm512_castps512_ps256(v),
				 _mm256_castpd_ps(_mm512_extractf64x4_pd(
					 _mm512_castps_pd(v), 1)));
	__m128 b = _mm_add_ps(_mm256_castps256_ps128(a),
			      _mm256_extractf128_ps(a, 1));
	__m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));

	return _mm_cvtss_f32(_mm_add_ss(c, _mm_shuffle_ps(c, c, 1)));
}

/*
 * bd_tree() of sixteen accumulators at once, @a[r * 4 + c] the one of row
 * r, column c, into @y (rows @ldy apart): each sum of the tree adds the
 * same two lanes as bd_tree(), several outputs to a register.  After
 * stage 1 a register holds two outputs' 8 lanes, after stage 2 four
 * outputs' 4, then 2 each of eight, then all sixteen, lane 4c + r.
 */
static inline __attribute__((always_inline)) BD void
bd_tree16(const __m512 *a, float *y, size_t ldy)
{
	__m512 s[8], u[4], w[2], t;
	int i;

	_Pragma("GCC unroll 8") for (i = 0; i < 8; i++) s[i] = _mm512_add_ps(
		_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x44),
		_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xEE));
	_Pragma("GCC unroll 4") for (i = 0; i < 4; i++) u[i] = _mm512_add_ps(
		_mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0x88),
		_mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0xDD));
	_Pragma("GCC unroll 2") for (i = 0; i < 2; i++) w[i] =
		_mm512_add_ps(_mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0x44),
			      _mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0xEE));
	t = _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88),
			  _mm512_shuffle_ps(w[0], w[1], 0xDD));
	/* lane 4c + r to lane 4r + c: row r is then the r-th 128 bits */
	t = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2,
						    6, 10, 14, 3, 7, 11, 15),
				  t);
	_mm_storeu_ps(y, _mm512_castps512_ps128(t));
	_mm_storeu_ps(y + ldy, _mm512_extractf32x4_ps(t, 1));
	_mm_storeu_ps(y + 2 * ldy, _mm512_extractf32x4_ps(t, 2));
	_mm_storeu_ps(y + 3 * ldy, _mm512_extractf32x4_ps(t, 3));
}

/* R rows of bf16 x against C rows of bf16 w. */
static inline __attribute__((always_inline)) BD void
bd_block(const uint16_t *x, size_t ldx, const uint16_t *w, size_t ldw,
	 size_t in, float *y, size_t ldy, const int R, const int C)
{
	__m512 acc[4][4];
	__m512i wv[4], xv;
	size_t k;
	int r, c;

	_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
		_Pragma("GCC unroll 4") for (c = 0; c < C; c++) acc[r][c] =
			_mm512_setzero_ps();
	for (k = 0; k + 32 <= in; k += 32) {
		if (R <= 2) /* decode: as in avx_block */
			pf_rows(w, MM_BF16, ldw, C, k, 32);
		_Pragma("GCC unroll 4") for (c = 0; c < C; c++) wv[c] =
			_mm512_loadu_si512(w + c * ldw + k);
		_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
		{
			xv = _mm512_loadu_si512(x + r * ldx + k);
			_Pragma("GCC unroll 4") for (c = 0; c < C; c++)
				acc[r][c] = _mm512_dpbf16_ps(acc[r][c],
							     (__m512bh)xv,
							     (__m512bh)wv[c]);
		}
	}
	if (k < in) { /* the zero-padded last block */
		__mmask32 m = (__mmask32)((1ull << (in - k)) - 1);

		_Pragma("GCC unroll 4") for (c = 0; c < C; c++) wv[c] =
			_mm512_maskz_loadu_epi16(m, w + c * ldw + k);
		_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
		{
			xv = _mm512_maskz_loadu_epi16(m, x + r * ldx + k);
			_Pragma("GCC unroll 4") for (c = 0; c < C; c++)
				acc[r][c] = _mm512_dpbf16_ps(acc[r][c],
							     (__m512bh)xv,
							     (__m512bh)wv[c]);
		}
	}
	if (R == 4 && C == 4) {
		bd_tree16(&acc[0][0], y, ldy);
		return;
	}
	_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
		_Pragma("GCC unroll 4") for (c = 0; c < C; c++) y[r * ldy + c] =
			bd_tree(acc[r][c]);
}

#define BD_CASE(R, C)                                                          \
	case (R)*8 + (C):                                                      \
		bd_block(x, ldx, w, ldw, in, y, ldy, R, C);                    \
		break;

/* r in {1, 2, 4}, c in 1..4. */
static BD void bd_dispatch(const uint16_t *x, size_t ldx, const uint16_t *w,
			   size_t ldw, size_t in, float *y, size_t ldy, int r,
			   int c)
{
	switch (r * 8 + c) {
		BD_CASE(1, 1)
		BD_CASE(1, 2)
		BD_CASE(1, 3)
		BD_CASE(1, 4)
		BD_CASE(2, 1)
		BD_CASE(2, 2)
		BD_CASE(2, 3)
		BD_CASE(2, 4)
		BD_CASE(4, 1)
		BD_CASE(4, 2)
		BD_CASE(4, 3)
	default:
		bd_block(x, ldx, w, ldw, in, y, ldy, 4, 4);
		break;
	}
}

static BD void bd_round_row(const float *a, uint16_t *o, size_t n)
{
	size_t k;

	for (k = 0; k + 32 <= n; k += 32)
		_mm512_storeu_si512(o + k, (__m512i)_mm512_cvtne2ps_pbh(
						   _mm512_loadu_ps(a + k + 16),
						   _mm512_loadu_ps(a + k)));
	for (; k < n; k++)
		o[k] = engy_bf16_from_f32(a[k]);
}

/* Random values over 40 binades, with subnormal inputs and products
 * mixed in, at every tail length: the instruction against the
 * definition. */
static bool bd_self_check(void)
{
	float x[4 * 160], y[16], want;
	uint16_t xb[4 * 160], w[4 * 160];
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	size_t t, r, c;

	for (t = 0; t < MM_CHECK_NS; t++) {
		size_t n = engy_mm_check_ns[t];

		engy_mm_check_fill(x, w, 4 * n, &rng);
		for (r = 0; r < 4; r++)
			bd_round_row(x + r * n, xb + r * n, n);
		bd_dispatch(xb, n, w, n, n, y, 4, 4, 4);
		for (r = 0; r < 4; r++)
			for (c = 0; c < 4; c++) {
				want = engy_mm_bd_dot(x + r * n, w + c * n, n);
				if (memcmp(&want, &y[r * 4 + c], sizeof(want)))
					return false;
			}
	}
	return true;
}
#endif

/* 1: the instruction; -1: the definition in C; 0: not decided yet. */
static _Atomic int bd_fast;

bool engy_mm_bd_fast(void)
{
	int v = atomic_load_explicit(&bd_fast, memory_order_relaxed);

#ifdef MM_X86
	if (!v) {
		v = __builtin_cpu_supports("avx512f") &&
				    __builtin_cpu_supports("avx512bw") &&
				    __builtin_cpu_supports("avx512bf16") &&
				    bd_self_check()
			    ? 1
			    : -1;
		atomic_store_explicit(&bd_fast, v, memory_order_relaxed);
	}
#else
	v = -1;
#endif
	/* a kernel forced below avx512f (tests, benchmarks) forces the
	 * definition in C as well */
	return v > 0 && strcmp(engy_mm_kernel_name(), "avx512f") == 0;
}

const char *engy_mm_profile_kernel(int profile)
{
	if (profile == MM_PROFILE_AMX)
		return engy_mm_amx_kernel();
	if (profile != MM_PROFILE_BF16DP)
		return "";
	return engy_mm_bd_fast() ? "avx512bf16" : "emulated";
}

#ifdef MM_X86
void engy_mm_bd_cols(const struct mm_part *pt, const uint16_t *xb, size_t c0,
		     size_t c1)
{
	size_t r, c;
	int R, C;

	for (r = 0; r < pt->n; r += (size_t)R) {
		R = pt->n - r >= 4 ? 4 : pt->n - r >= 2 ? 2 : 1;
		for (c = c0; c < c1; c += (size_t)C) {
			C = c1 - c >= 4 ? 4 : (int)(c1 - c);
			bd_dispatch(xb + r * pt->in, pt->in,
				    (const uint16_t *)pt->w + c * pt->in,
				    pt->in, pt->in, pt->y + r * pt->out + c,
				    pt->out, R, C);
		}
	}
}

struct bd_conv {
	const float *src;
	void *dst;
	size_t rows, in;
	bool amx;
};

static void bd_conv_task(void *arg, size_t task, unsigned thread)
{
	const struct bd_conv *cv = (const struct bd_conv *)arg + task;
	size_t r;

	(void)thread;
	if (cv->amx) {
		engy_mm_amx_pack(cv->src, cv->rows, cv->in, cv->dst);
		return;
	}
	for (r = 0; r < cv->rows; r++)
		bd_round_row(cv->src + r * cv->in,
			     (uint16_t *)cv->dst + r * cv->in, cv->in);
}

/* matmul_int.h; on the pool, but inline for decode's few rows.  A task
 * converts 8 rows (bf16dp) or a tile's 16 (amx). */
void *engy_mm_x_prepare(struct mm_pool *p, const struct mm_part *parts,
			size_t n_parts, const void **xb, int profile)
{
	bool amx = profile == MM_PROFILE_AMX;
	size_t i, r, total = 0, elems = 0, nc = 0, last = SIZE_MAX;
	size_t rows = amx ? 16 : 8;
	struct bd_conv *cv;
	char *buf, *o;

	for (i = 0; i < n_parts; i++)
		if (parts[i].wt == MM_BF16)
			total += amx ? MM_AMX_BYTES(parts[i].n, parts[i].in)
				     : parts[i].n * parts[i].in * 2;
	buf = total ? aligned_alloc(64, (total + 63) & ~(size_t)63) : NULL;
	cv = total ? malloc((total / 16 + n_parts) * sizeof(*cv)) : NULL;
	if (!buf || !cv) {
		free(buf);
		free(cv);
		return NULL;
	}
	o = buf;
	for (i = 0; i < n_parts; i++) {
		const struct mm_part *pt = &parts[i];
		size_t tile = amx ? MM_AMX_BYTES(16, pt->in) : 16 * pt->in;

		if (pt->wt != MM_BF16)
			continue;
		if (last != SIZE_MAX && parts[last].x == pt->x &&
		    parts[last].n == pt->n && parts[last].in == pt->in) {
			xb[i] = xb[last];
			continue;
		}
		xb[i] = o;
		last = i;
		elems += pt->n * pt->in;
		for (r = 0; r < pt->n; r += rows)
			cv[nc++] = (struct bd_conv){
				pt->x + r * pt->in, o + r / rows * tile,
				pt->n - r < rows ? pt->n - r : rows, pt->in, amx
			};
		o += amx ? MM_AMX_BYTES(pt->n, pt->in) : pt->n * pt->in * 2;
	}
	if (elems <= 8192) /* decode: not worth a hand-off */
		for (i = 0; i < nc; i++)
			bd_conv_task(cv, i, 0);
	else
		engy_mm_pool_run(p, bd_conv_task, cv, nc);
	free(cv);
	return buf;
}
#else
void engy_mm_bd_cols(const struct mm_part *pt, const uint16_t *xb, size_t c0,
		     size_t c1)
{
	(void)pt, (void)xb, (void)c0, (void)c1; /* engy_mm_bd_fast(): false */
}

void *engy_mm_x_prepare(struct mm_pool *p, const struct mm_part *parts,
			size_t n_parts, const void **xb, int profile)
{
	(void)p, (void)parts, (void)n_parts, (void)xb, (void)profile;
	return NULL;
}
#endif
