/* SPDX-License-Identifier: MIT */
/*
 * Element conversions and the quantized layouts (specs/checkpoints.md).
 * Tensor data is little-endian and unaligned inside the file, so every
 * element is assembled byte by byte.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "halfconv.h"
#include "safetensors.h"

static inline uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* One element of a float dtype; the caller checked the dtype. */
static inline float elem(int dtype, const uint8_t *d, uint64_t i)
{
	double v;
	uint64_t u;

	switch (dtype) {
	case ENGY_ST_F32:
		return engy_f32_from_bits(le32(d + 4 * i));
	case ENGY_ST_BF16:
		return engy_bf16_to_f32(le16(d + 2 * i));
	case ENGY_ST_F16:
		return engy_f16_to_f32(le16(d + 2 * i));
	case ENGY_ST_F8_E4M3:
		return engy_f8e4m3_to_f32(d[i]);
	case ENGY_ST_F8_E5M2:
		return engy_f8e5m2_to_f32(d[i]);
	default: /* F64 */
		u = le64(d + 8 * i);
		memcpy(&v, &u, sizeof(v));
		return (float)v;
	}
}

static bool is_float(int dtype)
{
	return dtype == ENGY_ST_F32 || dtype == ENGY_ST_BF16 ||
	       dtype == ENGY_ST_F16 || dtype == ENGY_ST_F8_E4M3 ||
	       dtype == ENGY_ST_F8_E5M2 || dtype == ENGY_ST_F64;
}

int engy_st_to_f32(const struct engy_st_tensor *t, float *out)
{
	uint64_t i;

	if (!is_float(t->dtype))
		return -ENOTSUP;
	if (t->dtype == ENGY_ST_BF16) {
		/* The common case, kept tight. */
		for (i = 0; i < t->numel; i++)
			out[i] = engy_f32_from_bits(
				(uint32_t)le16(t->data + 2 * i) << 16);
		return 0;
	}
	for (i = 0; i < t->numel; i++)
		out[i] = elem(t->dtype, t->data, i);
	return 0;
}

static bool is_scale(int dtype)
{
	return dtype == ENGY_ST_F32 || dtype == ENGY_ST_BF16 ||
	       dtype == ENGY_ST_F16;
}

static int bad(char *err, size_t errlen, const char *w, const char *why)
{
	if (err && errlen)
		snprintf(err, errlen, "%.120s: %s", w, why);
	return -EINVAL;
}

int engy_st_dequant_fp8(const struct engy_st_tensor *w,
			const struct engy_st_tensor *scale, uint32_t block,
			float *out, char *err, size_t errlen)
{
	uint64_t rows, cols, br, bc, r, c;
	float lut[256];
	int i;

	if (w->dtype != ENGY_ST_F8_E4M3 || w->ndim != 2)
		return bad(err, errlen, w->name, "not a 2-D F8_E4M3 tensor");
	if (!is_scale(scale->dtype) || scale->ndim != 2)
		return bad(err, errlen, scale->name,
			   "not a 2-D F32/BF16/F16 scale tensor");
	if (!block)
		return bad(err, errlen, w->name, "block size 0");
	rows = w->shape[0];
	cols = w->shape[1];
	br = (rows + block - 1) / block;
	bc = (cols + block - 1) / block;
	if (scale->shape[0] != br || scale->shape[1] != bc)
		return bad(err, errlen, scale->name,
			   "shape is not [ceil(rows/block), ceil(cols/block)]");
	for (i = 0; i < 256; i++)
		lut[i] = engy_f8e4m3_to_f32((uint8_t)i);
	for (r = 0; r < rows; r++) {
		const uint8_t *q = w->data + r * cols;
		float *o = out + r * cols;

		for (c = 0; c < cols; c++)
			o[c] = lut[q[c]] * elem(scale->dtype, scale->data,
						(r / block) * bc + c / block);
	}
	return 0;
}

int engy_st_dequant_int4(const struct engy_st_tensor *q,
			 const struct engy_st_tensor *scale, uint32_t group,
			 float *out, uint64_t *colsp, char *err, size_t errlen)
{
	uint64_t rows, cols, ng, r, c;

	if (q->dtype != ENGY_ST_U8 || q->ndim != 2)
		return bad(err, errlen, q->name, "not a 2-D U8 tensor");
	if (!is_scale(scale->dtype) || scale->ndim != 2)
		return bad(err, errlen, scale->name,
			   "not a 2-D F32/BF16/F16 scale tensor");
	if (!group || group % 2)
		return bad(err, errlen, q->name, "group size must be even");
	rows = q->shape[0];
	ng = scale->shape[1];
	if (__builtin_mul_overflow(ng, (uint64_t)group, &cols))
		return bad(err, errlen, scale->name, "too many groups");
	if (scale->shape[0] != rows || q->shape[1] * 2 != cols)
		return bad(err, errlen, q->name,
			   "shape does not fit its scales ([rows, cols/2] "
			   "against [rows, cols/group])");
	for (r = 0; r < rows; r++) {
		const uint8_t *p = q->data + r * (cols / 2);
		float *o = out + r * cols;

		for (c = 0; c < cols; c += 2) {
			float s = elem(scale->dtype, scale->data,
				       r * ng + c / group);

			o[c] = (float)((int)(p[c / 2] & 0xF) - 8) * s;
			o[c + 1] = (float)((int)(p[c / 2] >> 4) - 8) * s;
		}
	}
	if (colsp)
		*colsp = cols;
	return 0;
}

void engy_st_quant_int4(const float *w, uint64_t rows, uint64_t cols,
			uint32_t group, uint8_t *q, uint16_t *scale)
{
	uint64_t r, g, c, ng = cols / group;

	for (r = 0; r < rows; r++) {
		for (g = 0; g < ng; g++) {
			const float *x = w + r * cols + g * group;
			uint8_t *o = q + r * (cols / 2) + g * group / 2;
			float amax = 0, s, inv;
			uint16_t sh;

			for (c = 0; c < group; c++)
				amax = fmaxf(amax, fabsf(x[c]));
			sh = engy_f16_from_f32(amax / 7.0f);
			/* Quantize against the scale as stored. */
			s = engy_f16_to_f32(sh);
			inv = s > 0 ? 1.0f / s : 0;
			scale[r * ng + g] = sh;
			for (c = 0; c < group; c += 2) {
				float a = rintf(x[c] * inv),
				      b = rintf(x[c + 1] * inv);

				a = fminf(fmaxf(a, -8), 7);
				b = fminf(fmaxf(b, -8), 7);
				o[c / 2] = (uint8_t)((int)(a + 8) |
						     (int)(b + 8) << 4);
			}
		}
	}
}

void engy_st_quant_fp8(const float *w, uint64_t rows, uint64_t cols,
		       uint32_t block, uint8_t *q, float *scale)
{
	uint64_t br = (rows + block - 1) / block,
		 bc = (cols + block - 1) / block;
	uint64_t i, j, r, c;

	for (i = 0; i < br; i++) {
		for (j = 0; j < bc; j++) {
			uint64_t r1 =
				(i + 1) * block < rows ? (i + 1) * block : rows;
			uint64_t c1 =
				(j + 1) * block < cols ? (j + 1) * block : cols;
			float amax = 0, s;

			for (r = i * block; r < r1; r++)
				for (c = j * block; c < c1; c++)
					amax = fmaxf(amax,
						     fabsf(w[r * cols + c]));
			s = amax / 448.0f;
			scale[i * bc + j] = s;
			for (r = i * block; r < r1; r++)
				for (c = j * block; c < c1; c++)
					q[r * cols + c] = engy_f8e4m3_from_f32(
						s > 0 ? w[r * cols + c] / s
						      : 0);
		}
	}
}
