/* SPDX-License-Identifier: MIT */
/*
 * bfloat16 bit helpers.  A bf16 value is the top half of an IEEE binary32:
 * 1 sign bit, 8 exponent bits, 7 mantissa bits.  engy handles bf16 as raw
 * uint16_t bit patterns so that proofs see exactly the bits torch saw.
 */
#ifndef ENGY_BF16_H
#define ENGY_BF16_H

#include <stdint.h>
#include <string.h>

#define ENGY_BF16_EXP_MASK  0x7F80u
#define ENGY_BF16_MANT_MASK 0x007Fu
#define ENGY_BF16_ABS_MASK  0x7FFFu
#define ENGY_BF16_CANON_NAN 0x7FC0u

static inline uint32_t engy_f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float engy_f32_from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/*
 * engy_bf16_from_f32_bits() - binary32 bits -> bf16 bits, rounding to
 * nearest with ties to even, exactly as torch's CPU cast (c10
 * round_to_nearest_even): every NaN becomes the canonical 0x7FC0 (its sign
 * is dropped), overflow rounds to infinity, subnormals round like any other
 * value (no flush to zero).
 */
static inline uint16_t engy_bf16_from_f32_bits(uint32_t u)
{
	if ((u & 0x7FFFFFFFu) > 0x7F800000u)
		return ENGY_BF16_CANON_NAN;
	return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

static inline uint16_t engy_bf16_from_f32(float f)
{
	return engy_bf16_from_f32_bits(engy_f32_bits(f));
}

/* engy_bf16_to_f32() - exact widening. */
static inline float engy_bf16_to_f32(uint16_t b)
{
	return engy_f32_from_bits((uint32_t)b << 16);
}

/*
 * The magnitude key: the bits without the sign.  Ordering keys as integers
 * orders |x| (NaN above infinity above every finite value), which is the
 * order torch's topk over abs() uses.
 */
static inline uint16_t engy_bf16_key(uint16_t b)
{
	return (uint16_t)(b & ENGY_BF16_ABS_MASK);
}

static inline unsigned engy_bf16_exp(uint16_t b)
{
	return (b & ENGY_BF16_EXP_MASK) >> 7;
}

static inline unsigned engy_bf16_mant(uint16_t b)
{
	return b & ENGY_BF16_MANT_MASK;
}

#endif /* ENGY_BF16_H */
