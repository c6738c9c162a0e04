/* SPDX-License-Identifier: MIT */
/*
 * What vec.c and vec_exp.c share: the AVX-512 target and its masked
 * loads and stores, the AVX2 target and its tail mask, and PICK(), which
 * runs a step's AVX-512 code where the matmul kernel in use is avx512f
 * and its C definition elsewhere (PICK3(): its AVX2 code where the
 * kernel is avx2+fma).
 */
#ifndef Q3_VEC_INT_H
#define Q3_VEC_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "matmul_int.h"

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

#define A __attribute__((target("avx2,fma")))

/* The mask of the lanes below @left, for maskload/maskstore. */
static inline A __m256i a_tail(size_t left)
{
	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)left),
				  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif

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
/* A step with AVX2 code too, run where the kernel in use is avx2+fma. */
#define PICK3(name, ...)                                                       \
	(use_z()		 ? z_##name(__VA_ARGS__)                       \
	 : engy_mm_kernel_avx2() ? a_##name(__VA_ARGS__)                       \
				 : gen_##name(__VA_ARGS__))
#else
#define PICK(name, ...)	 gen_##name(__VA_ARGS__)
#define PICK3(name, ...) gen_##name(__VA_ARGS__)
#endif

#endif /* Q3_VEC_INT_H */
