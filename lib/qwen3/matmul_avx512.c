/* SPDX-License-Identifier: MIT */
/*
 * The reference engine's avx512f matmul kernel (matmul.c picks it where
 * the CPU has AVX-512F and AVX512-BW).
 */
#include <stddef.h>
#include <stdint.h>

#include "bf16.h"
#include "matmul.h"
#include "matmul_int.h"

#ifdef MM_X86
/*
 * AVX-512F: two columns per 512-bit register, each half the very eight
 * lanes of the AVX2 kernel (x broadcast to both halves, the two columns'
 * weights side by side), so every lane sees the same fused multiply-adds
 * in the same order and every element goes through the same finish():
 * the same bits as avx2+fma, with twice the multiply-adds per instruction.
 * P column pairs; the last pair of an odd C loads its last column twice
 * and keeps one.  bf16 weights are widened 16 k at a time where they
 * can be (z_loadw2: AVX512-BW's word permute, which every AVX-512 CPU but
 * the Xeon Phi has), each half then added as the 8-k step adds it.
 */
#define AVX512 __attribute__((target("avx512f,avx512bw,avx2,fma")))

static inline __attribute__((always_inline)) AVX512 __m512 z_pair_ps(__m256 lo,
								     __m256 hi)
{
	return _mm512_castpd_ps(
		_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)),
				   _mm256_castps_pd(hi), 1));
}

static inline __attribute__((always_inline)) AVX512 __m512
z_loadw(const void *w0, const void *w1, int wt, size_t k)
{
	if (wt == MM_BF16) {
		__m128i a = _mm_loadu_si128(
			(const __m128i *)((const uint16_t *)w0 + k));
		__m128i b = _mm_loadu_si128(
			(const __m128i *)((const uint16_t *)w1 + k));

		return _mm512_castsi512_ps(_mm512_slli_epi32(
			_mm512_cvtepu16_epi32(_mm256_inserti128_si256(
				_mm256_castsi128_si256(a), b, 1)),
			16));
	}
	return z_pair_ps(_mm256_loadu_ps((const float *)w0 + k),
			 _mm256_loadu_ps((const float *)w1 + k));
}

/*
 * Two 8-k blocks of a column pair from one load of each row: @lo gets
 * w0[k..k+7] then w1[k..k+7] and @hi the 8 after each, as z_loadw() gives
 * them at k and at k + 8.  One zero-masked word permute per block puts
 * each bf16 in the high half of its float lane (the low half zero), in
 * place of a zero-extension and a shift per block and a load per row.
 */
static const uint16_t z_idx[2][32] = {
	{ 0, 0,	 0, 1,	0, 2,  0, 3,  0, 4,  0, 5,  0, 6,  0, 7,
	  0, 16, 0, 17, 0, 18, 0, 19, 0, 20, 0, 21, 0, 22, 0, 23 },
	{ 0, 8,	 0, 9,	0, 10, 0, 11, 0, 12, 0, 13, 0, 14, 0, 15,
	  0, 24, 0, 25, 0, 26, 0, 27, 0, 28, 0, 29, 0, 30, 0, 31 },
};

static inline __attribute__((always_inline)) AVX512 void
z_loadw2(const void *w0, const void *w1, size_t k, __m512i ilo, __m512i ihi,
	 __m512 *lo, __m512 *hi)
{
	__m512i ab = _mm512_inserti64x4(
		_mm512_castsi256_si512(_mm256_loadu_si256(
			(const __m256i *)((const uint16_t *)w0 + k))),
		_mm256_loadu_si256((const __m256i *)((const uint16_t *)w1 + k)),
		1);

	*lo = _mm512_castsi512_ps(
		_mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, ilo, ab));
	*hi = _mm512_castsi512_ps(
		_mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, ihi, ab));
}

/*
 * finish()'s lane sums for the eight columns of four accumulators (column
 * pairs) at once: ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)) of
 * each column, the very additions, several columns to a register; lane
 * c of the result is column c's.
 */
static inline __attribute__((always_inline)) AVX512 __m256
z_sums8(const __m512 *a)
{
	/* per 128 bits: l0 + l1, l2 + l3 of one column's half, two pairs */
	__m512 x = _mm512_add_ps(_mm512_shuffle_ps(a[0], a[1], 0x88),
				 _mm512_shuffle_ps(a[0], a[1], 0xDD));
	__m512 y = _mm512_add_ps(_mm512_shuffle_ps(a[2], a[3], 0x88),
				 _mm512_shuffle_ps(a[2], a[3], 0xDD));
	/* (l0 + l1) + (l2 + l3), and of l4..l7, of four columns each */
	__m512 z = _mm512_add_ps(_mm512_shuffle_ps(x, y, 0x88),
				 _mm512_shuffle_ps(x, y, 0xDD));
	__m256 s;

	/* 128-bit blocks: columns 0 2 4 6 (l0..3), the same (l4..7), then
	 * columns 1 3 5 7 twice: the first half of each plus the second */
	z = _mm512_shuffle_f32x4(z, z, 0xD8);
	s = _mm256_add_ps(_mm512_castps512_ps256(z),
			  _mm256_castpd_ps(_mm512_extractf64x4_pd(
				  _mm512_castps_pd(z), 1)));
	return _mm256_permutevar8x32_ps(
		s, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static inline __attribute__((always_inline)) AVX512 void
z_block(const float *x, size_t ldx, const void *w, size_t ldw, size_t in,
	float *y, size_t ldy, int C, const int R, const int P, const int WT)
{
	__m512 acc[4][4], wv[4], xv;
	const void *wr[8];
	float l[16];
	size_t k;
	int r, p, c;

	_Pragma("GCC unroll 8") for (c = 0; c < 2 * P; c++) wr[c] =
		WROW(w, WT, c < C ? c : C - 1, ldw);
	_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
		_Pragma("GCC unroll 4") for (p = 0; p < P; p++) acc[r][p] =
			_mm512_setzero_ps();
	k = 0;
	if (WT == MM_BF16) {
		const __m512i ilo = _mm512_loadu_si512(z_idx[0]),
			      ihi = _mm512_loadu_si512(z_idx[1]);
		__m512 wh[4];

		/* Each accumulator adds block k, then block k + 8: the
		 * 8-k loop's order. */
		for (; k + 16 <= in; k += 16) {
			if (R <= 2)
				pf_rows(w, WT, ldw, C, k, 16);
			_Pragma("GCC unroll 4") for (p = 0; p < P; p++)
				z_loadw2(wr[2 * p], wr[2 * p + 1], k, ilo, ihi,
					 &wv[p], &wh[p]);
			_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
			{
				__m256 h = _mm256_loadu_ps(x + r * ldx + k);

				xv = z_pair_ps(h, h);
				_Pragma("GCC unroll 4") for (p = 0; p < P;
							     p++) acc[r][p] =
					_mm512_fmadd_ps(xv, wv[p], acc[r][p]);
				h = _mm256_loadu_ps(x + r * ldx + k + 8);
				xv = z_pair_ps(h, h);
				_Pragma("GCC unroll 4") for (p = 0; p < P;
							     p++) acc[r][p] =
					_mm512_fmadd_ps(xv, wh[p], acc[r][p]);
			}
		}
	}
	for (; k + 8 <= in; k += 8) {
		if (R <= 2) /* as in avx_block */
			pf_rows(w, WT, ldw, C, k, 8);
		_Pragma("GCC unroll 4") for (p = 0; p < P; p++) wv[p] =
			z_loadw(wr[2 * p], wr[2 * p + 1], WT, k);
		_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
		{
			__m256 h = _mm256_loadu_ps(x + r * ldx + k);

			xv = z_pair_ps(h, h);
			_Pragma("GCC unroll 4") for (p = 0; p < P; p++)
				acc[r][p] =
					_mm512_fmadd_ps(xv, wv[p], acc[r][p]);
		}
	}
	if (P == 4) {
		_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
		{
			_mm256_storeu_ps(l, z_sums8(acc[r]));
			for (c = 0; c < C; c++)
				y[r * ldy + c] = finish_tail(l[c], x + r * ldx,
							     wr[c], WT, k, in);
		}
		return;
	}
	_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
		_Pragma("GCC unroll 4") for (p = 0; p < P; p++)
	{
		_mm512_storeu_ps(l, acc[r][p]);
		y[r * ldy + 2 * p] =
			finish(l, x + r * ldx, wr[2 * p], WT, k, in);
		if (2 * p + 1 < C)
			y[r * ldy + 2 * p + 1] = finish(
				l + 8, x + r * ldx, wr[2 * p + 1], WT, k, in);
	}
}

#define Z_CASE(R, P, WT)                                                       \
	z_block(x, ldx, w, ldw, in, y, ldy, c, R, P, WT);                      \
	break;

#define Z_DISPATCH(WT)                                                         \
	switch ((r < 2 ? 1 : r < 4 ? 2 : 4) * 8 + (c + 1) / 2) {               \
	case 8 + 1:                                                            \
		Z_CASE(1, 1, WT)                                               \
	case 8 + 2:                                                            \
		Z_CASE(1, 2, WT)                                               \
	case 8 + 3:                                                            \
		Z_CASE(1, 3, WT)                                               \
	case 8 + 4:                                                            \
		Z_CASE(1, 4, WT)                                               \
	case 16 + 1:                                                           \
		Z_CASE(2, 1, WT)                                               \
	case 16 + 2:                                                           \
		Z_CASE(2, 2, WT)                                               \
	case 16 + 3:                                                           \
		Z_CASE(2, 3, WT)                                               \
	case 16 + 4:                                                           \
		Z_CASE(2, 4, WT)                                               \
	case 32 + 1:                                                           \
		Z_CASE(4, 1, WT)                                               \
	case 32 + 2:                                                           \
		Z_CASE(4, 2, WT)                                               \
	case 32 + 3:                                                           \
		Z_CASE(4, 3, WT)                                               \
	default:                                                               \
		Z_CASE(4, 4, WT)                                               \
	}

/* r in {1, 2, 4} rows (3 is never asked for), c in 1..8 columns. */
AVX512 void engy_mm_z_dispatch(const float *x, size_t ldx, const void *w,
			       size_t ldw, size_t in, float *y, size_t ldy,
			       int r, int c, int wt)
{
	if (wt == MM_BF16) {
		Z_DISPATCH(MM_BF16)
	} else {
		Z_DISPATCH(MM_F32)
	}
}
#endif
