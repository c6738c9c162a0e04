/* SPDX-License-Identifier: MIT */
/*
 * IEEE binary16 and the two 8-bit float formats of safetensors
 * (F8_E4M3 = torch float8_e4m3fn, F8_E5M2), as bit patterns.  bfloat16
 * lives in bf16.h.  Widening is exact; narrowing rounds to nearest even.
 */
#ifndef ENGY_HALFCONV_H
#define ENGY_HALFCONV_H

#include <math.h>
#include <stdint.h>

#include "bf16.h"

/* engy_f16_to_f32() - exact, subnormals, infinities and NaN included. */
static inline float engy_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;

	if (exp == 0x1F)
		return engy_f32_from_bits(sign | 0x7F800000u | (mant << 13));
	if (exp == 0) {
		/* Subnormal (or zero): mant x 2^-24, exact in binary32. */
		float v = (float)mant * 0x1p-24f;

		return sign ? -v : v;
	}
	return engy_f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
}

/* engy_f16_from_f32() - round to nearest even; overflow gives infinity. */
static inline uint16_t engy_f16_from_f32(float f)
{
	uint32_t u = engy_f32_bits(f), sign = (u >> 16) & 0x8000u;
	uint32_t a = u & 0x7FFFFFFFu, mant, r;
	int exp;

	if (a > 0x7F800000u)
		return (uint16_t)(sign | 0x7E00u);
	if (a >= 0x477FF000u) /* rounds to 65520 or more: infinity */
		return (uint16_t)(sign | 0x7C00u);
	exp = (int)(a >> 23) - 127;
	if (exp < -14) {
		/* Subnormal half: value / 2^-24, rounded to an integer. */
		float v = engy_f32_from_bits(a) * 0x1p24f;

		return (uint16_t)(sign | (uint32_t)rintf(v));
	}
	mant = a & 0x7FFFFFu;
	r = ((uint32_t)(exp + 15) << 10) | (mant >> 13);
	/* Round to nearest even on the 13 dropped bits; a carry into the
	 * exponent is the right answer. */
	if ((mant & 0x1FFFu) > 0x1000u ||
	    ((mant & 0x1FFFu) == 0x1000u && (r & 1u)))
		r++;
	return (uint16_t)(sign | r);
}

/* engy_f8e4m3_to_f32() - float8_e4m3fn: bias 7, no infinity, S1111111 NaN. */
static inline float engy_f8e4m3_to_f32(uint8_t b)
{
	uint32_t exp = (b >> 3) & 0xFu, mant = b & 7u;
	float v;

	if (exp == 0xF && mant == 7)
		return NAN;
	if (exp == 0)
		v = (float)mant * 0x1p-9f;
	else
		v = ldexpf(1.0f + (float)mant / 8.0f, (int)exp - 7);
	return (b & 0x80u) ? -v : v;
}

/* engy_f8e5m2_to_f32() - the top byte of a binary16. */
static inline float engy_f8e5m2_to_f32(uint8_t b)
{
	return engy_f16_to_f32((uint16_t)(b << 8));
}

/*
 * engy_f8e4m3_from_f32() - round to nearest even, saturating at +-448
 * (writers scale into range first; there is no infinity to overflow to).
 */
static inline uint8_t engy_f8e4m3_from_f32(float f)
{
	uint8_t sign = signbit(f) ? 0x80 : 0;
	float a = fabsf(f);
	int e;
	float m;

	if (isnan(f))
		return 0x7F;
	if (a >= 448.0f)
		return sign | 0x7E;
	if (a < 0x1p-6f) /* subnormal: steps of 2^-9; 8 steps = 2^-6 */
		return sign | (uint8_t)rintf(a * 0x1p9f);
	m = frexpf(a, &e); /* a = m x 2^e, m in [0.5, 1) */
	e -= 1;		   /* a = (2m) x 2^e, 2m in [1, 2) */
	m = rintf((2.0f * m - 1.0f) * 8.0f);
	if (m >= 8.0f) {
		m = 0;
		e++;
	}
	if (e + 7 > 15 || (e + 7 == 15 && m > 6))
		return sign | 0x7E;
	return sign | (uint8_t)(((e + 7) << 3) | (int)m);
}

#endif /* ENGY_HALFCONV_H */
