/* SPDX-License-Identifier: MIT */
/*
 * What matmul.c, matmul_bf16dp.c, matmul_amx.c and mm_pool.c share: the
 * x86 switch, decode's prefetch distance, and the entry points of the
 * profiles that run on a CPU's bf16 instructions (bf16dp, amx).
 */
#ifndef Q3_MATMUL_INT_H
#define Q3_MATMUL_INT_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bf16.h"
#include "matmul.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MM_X86 1
#endif

/*
 * Decode's prefetch distance: PF_ROWS rows on, into L2 (_MM_HINT_T1; see
 * pf_rows()).  Measured on a 2-vCPU Zen 4 VM with the earlier pattern (a
 * line of each row), the 50 MB small checkpoint (rows of 1 KiB), decode
 * of 128 tokens on 2 threads, interleaved runs: the next block into L1
 * (_MM_HINT_T0, the earlier choice) 370-410 tok/s where 16 rows on into
 * L2 gave 670-780; into L2, 8 or 16 rows on 930-990, 24 rows 890-940, 32
 * rows 850-870, 48 rows 700-730 (another moment of the same VM).  Pulled
 * into L1, the stream's lines crowd the few L1 miss buffers.  With the
 * sequential pattern, on a 2-vCPU Zen 3 VM: 8 rows on against 16, MoE
 * decode faster in 6 of 6 interleaved pairs (1.04x), 4 and 12 no better
 * than 8, 24 and 32 slower than 16.  A matmul's tasks go by ranges
 * (engy_mm_pool_run_ranges), so the rows asked for are the same thread's
 * next ones but at the end of its run.
 */
#define PF_ROWS 8

/* Whether the kernel in use is avx512f, or avx2+fma (vec.c and vec_exp.c
 * follow it). */
bool engy_mm_kernel_avx512(void);
bool engy_mm_kernel_avx2(void);

/* The bf16 instructions' inputs and results (bf16dp and amx, matmul.h):
 * subnormals flushed to a zero of their sign. */
static inline float ftz(float v)
{
	return fabsf(v) < FLT_MIN ? copysignf(0.0f, v) : v;
}

/* Element @k of a row as the instruction sees it: bf16, zero past @n,
 * subnormals flushed. */
static inline float bd_x(const float *a, size_t k, size_t n)
{
	return k < n ? ftz(engy_bf16_to_f32(engy_bf16_from_f32(a[k]))) : 0.0f;
}

static inline float bd_w(const uint16_t *b, size_t k, size_t n)
{
	return k < n ? ftz(engy_bf16_to_f32(b[k])) : 0.0f;
}

/* MM_PROFILE_BF16DP (matmul_bf16dp.c). */

/* The definition, one element (bf16 weights): the instruction's bits. */
float engy_mm_bd_dot(const float *a, const uint16_t *b, size_t n);

/* Whether the instruction computes the profile here: the CPU has it, its
 * self-check agreed, and the kernel in use is avx512f. */
bool engy_mm_bd_fast(void);

/* Each bf16-weight part's x as @profile's instruction reads it, into
 * @xb[i] (parts that share an x share it; float32-weight parts stay
 * NULL): bf16dp's rows rounded to bf16, or amx's tiles (engy_mm_amx_pack);
 * the buffer to free, or NULL when out of memory (then every @xb is
 * NULL). */
void *engy_mm_x_prepare(struct mm_pool *p, const struct mm_part *parts,
			size_t n_parts, const void **xb, int profile);

/* Columns [c0, c1) of @pt on the instruction, @xb its x in bf16. */
void engy_mm_bd_cols(const struct mm_part *pt, const uint16_t *xb, size_t c0,
		     size_t c1);

/* The instructions' self-checks at first use (matmul_bf16dp.c): the row
 * lengths they try (every tail), and @count random x and bf16 w over 40
 * binades with subnormal inputs and products mixed in (*@rng advances). */
#define MM_CHECK_NS 6
extern const size_t engy_mm_check_ns[MM_CHECK_NS];
void engy_mm_check_fill(float *x, uint16_t *w, size_t count, uint64_t *rng);

/* MM_PROFILE_AMX (matmul_amx.c), as MM_PROFILE_BF16DP above. */
float engy_mm_amx_dot(const float *a, const uint16_t *b, size_t n);
bool engy_mm_amx_fast(void);
/* engy_mm_profile_kernel()'s answer for MM_PROFILE_AMX. */
const char *engy_mm_amx_kernel(void);

/* The amx tiles of @rows (at most 16) rows of x, @in long: a tile for
 * each 32 columns (zero past @in and past the rows), row p of a tile the
 * 16 rows' bf16 pairs (columns 2p, 2p+1), 64 bytes; MM_AMX_BYTES(n, in)
 * for @n rows. */
#define MM_AMX_BYTES(n, in) ((((n) + 15) / 16) * (((in) + 31) / 32) * 1024)
void engy_mm_amx_pack(const float *x, size_t rows, size_t in, void *dst);
void engy_mm_amx_cols(const struct mm_part *pt, const uint32_t *xp, size_t c0,
		      size_t c1);

/* ---- The block kernels (matmul.c, matmul_avx512.c) ---- */

/* The one lane reduction and tail every element goes through.  A bf16
 * weight widens exactly, so both weight types give the same numbers.
 * finish_tail(): s + a[k] w[k] for the k left, in order. */
static inline __attribute__((always_inline)) float
finish_tail(float s, const float *a, const void *b, int wt, size_t k, size_t n)
{
	if (wt == MM_BF16)
		for (; k < n; k++)
			s += a[k] * engy_bf16_to_f32(((const uint16_t *)b)[k]);
	else
		for (; k < n; k++)
			s += a[k] * ((const float *)b)[k];
	return s;
}

static inline __attribute__((always_inline)) float finish(const float l[8],
							  const float *a,
							  const void *b, int wt,
							  size_t k, size_t n)
{
	float s = ((l[0] + l[1]) + (l[2] + l[3])) +
		  ((l[4] + l[5]) + (l[6] + l[7]));

	return finish_tail(s, a, b, wt, k, n);
}

#define WROW(w, wt, c, in)                                                     \
	((const void *)((const char *)(w) +                                    \
			(c) * (in) * ((wt) == MM_BF16 ? 2 : 4)))

/*
 * Decode's prefetch (PF_ROWS), for a block of @C rows of @w: the kernel
 * reads the rows side by side, KS elements of each per step from element
 * @k; they lie end to end (@ldw is the row length in every caller), so
 * the prefetch walks the same bytes PF_ROWS rows on as one sequential
 * run, the cache lines that start in this step's share of it (C x KS
 * elements), into L2 (prefetcht1).  The earlier pattern, at each line
 * boundary a line of each of the C rows PF_ROWS on, gives the hardware C
 * interleaved streams a row apart.  Measured on a 2-vCPU Zen 3 VM (rows
 * of 1 KiB, bf16, 2 threads, interleaved pairs): 28 matmuls of 1536 x 512
 * as one job each, 1.44-1.53x the bandwidth (10 of 10 pairs); small
 * checkpoint decode, dense 1.16-1.43x and MoE 1.15-1.33x (8 of 8 each);
 * reading the same bytes in the kernel's order with no arithmetic, 30-33
 * GB/s with a line per row against 40-49 GB/s sequential.  Prefetches
 * past the matrix are harmless.
 */
static inline __attribute__((always_inline)) void
pf_rows(const void *w, int wt, size_t ldw, int C, size_t k, int KS)
{
	size_t es = wt == MM_BF16 ? 2 : 4;
	uintptr_t lo = (uintptr_t)WROW(w, wt, PF_ROWS, ldw) +
		       k * es * (size_t)C,
		  hi = lo + (size_t)KS * es * (size_t)C, a;

	for (a = (lo + 63) & ~(uintptr_t)63; a < hi; a += 64)
		__builtin_prefetch((const void *)a, 0, 2);
}

/* @w's rows @ldw elements apart (@in for a matrix, a KV stride for
 * attention's keys). */
typedef void (*block_fn)(const float *x, size_t ldx, const void *w, size_t ldw,
			 size_t in, float *y, size_t ldy, int r, int c, int wt);

/* The avx512f kernel: r in {1, 2, 4} rows, c in 1..8 columns. */
void engy_mm_z_dispatch(const float *x, size_t ldx, const void *w, size_t ldw,
			size_t in, float *y, size_t ldy, int r, int c, int wt);

#endif /* Q3_MATMUL_INT_H */
