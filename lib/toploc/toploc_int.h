/* SPDX-License-Identifier: MIT */
/*
 * TOPLOC internals shared by lib/toploc*.c: the CPU-specific kernels
 * (lib/toploc/toploc_simd.c) and how one is chosen.  Every kernel gives exactly
 * the portable path's output; they only differ in speed.
 */
#ifndef ENGY_TOPLOC_INT_H
#define ENGY_TOPLOC_INT_H

#include <stddef.h>
#include <stdint.h>

enum engy_toploc_isa {
	ENGY_TOPLOC_ISA_SCALAR = 0, /* portable C, every CPU */
	ENGY_TOPLOC_ISA_AVX2,	    /* x86-64 with AVX2 (runtime check) */
};

/*
 * engy_toploc_isa_default() - the fastest path this CPU runs, decided once
 * per process; ENGY_TOPLOC_SIMD=scalar (or 0 / off) in the environment
 * forces the portable path.
 */
int engy_toploc_isa_default(void);

/* engy_toploc_interpolate() / _from_points() on the path @isa. */
int engy_toploc_interpolate_isa(const uint32_t *x, const uint16_t *y, size_t k,
				uint16_t *coeffs, uint32_t *work, int isa);
int engy_toploc_from_points_isa(const uint64_t *idx, const uint16_t *y,
				size_t k, uint8_t *proof, int isa);

/* The inverses of every field element (inv[0] = 0), built once. */
const uint16_t *engy_toploc_inv_table(void);

/*
 * engy_toploc_interp_avx2() - engy_toploc_interpolate() for checked input
 * (k > 0, every x < 65497).  Returns 0, or -ENOMEM (k > 256 and no
 * memory: the caller falls back to the portable path).
 */
int engy_toploc_interp_avx2(const uint32_t *x, const uint16_t *y, size_t k,
			    uint16_t *coeffs);

/*
 * engy_toploc_eval_avx2() - r[i] = the polynomial @c (k coefficients, each
 * < 65497) at x[i] mod 65497, for @n points (every x < 65497, k >= 1).
 */
void engy_toploc_eval_avx2(const uint16_t *c, size_t k, const uint32_t *x,
			   uint32_t *r, size_t n);

/* engy_toploc_eval_many() - the same on the path @isa. */
void engy_toploc_eval_many(const uint16_t *c, size_t k, const uint32_t *x,
			   uint32_t *r, size_t n, int isa);

/*
 * engy_toploc_topk_avx2() - engy_toploc_topk() for chunks of at least
 * 32 k values, into @idx.  Scratch: @l1 n / 8 entries, @l2 8 k entries,
 * @cv / @ci @cap candidates (@cv 16 more).  Returns 0, 1 when @n is too
 * small for the method, or 2 when the candidates do not fit @cap.
 */
int engy_toploc_topk_avx2(const uint16_t *v, size_t n, size_t k, uint16_t *l1,
			  uint16_t *l2, uint16_t *cv, uint64_t *ci, size_t cap,
			  uint64_t *idx);

#endif /* ENGY_TOPLOC_INT_H */
