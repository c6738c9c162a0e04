/* SPDX-License-Identifier: MIT */
/*
 * The reference engine's elementwise steps, each with its arithmetic in a
 * fixed order (vec.c; those with an exp in vec_exp.c): the same bits from
 * the C and from the AVX-512 code that runs where the matmul kernel in
 * use is avx512f.
 */
#ifndef Q3_VEC_H
#define Q3_VEC_H

#include <stdbool.h>
#include <stddef.h>

/* v[j] *= s for each j; the largest v[j] after it (NaN left out;
 * -INFINITY for none). */
float engy_vec_scale_max(float *v, size_t n, float s);

/* v[j] = (float)((double)v[j] / d). */
void engy_vec_div(float *v, size_t n, double d);

/* out[d] = sum over j in order of sc[j] * V[j * ldv + d], from 0, each
 * step a multiply then an add. */
void engy_vec_wsum(const float *sc, size_t n, const float *V, size_t ldv,
		   size_t hd, float *out);

/* engy_vec_wsum() of @rows rows against one V: row i's weights at
 * sc + i * ldsc, its first n[i] positions, into out + i * ldo.  Each row
 * the same steps as alone; V read once for all (the query heads of a KV
 * head, the rows of a prefill group). */
void engy_vec_wsum_rows(const float *sc, size_t ldsc, const size_t *n,
			size_t rows, const float *V, size_t ldv, size_t hd,
			float *out, size_t ldo);

/* Each value rounded to bf16 (nearest, ties to even; NaN quieted). */
void engy_vec_bf16_round(float *v, size_t n);

/* g[i] = g[i] / (1 + expf(-g[i])) * u[i]: silu(gate) times up. */
void engy_vec_swiglu(float *g, const float *u, size_t n);

/* The bf16dp profile's exp: a polynomial, as a vectorized math library
 * computes it (torch's CPU softmax and SiLU do), not the C library's
 * expf; the same bits from the C and the AVX-512 code (vec_exp.c has the
 * steps).  Within 2 ulp of e^x where that is a normal float. */
float engy_vec_pexp(float x);

/* v[j] = expf(v[j] - mx), the C library's expf: the ref profile's
 * softmax. */
void engy_vec_exp_sub_libm(float *v, size_t n, float mx);

/* Whether expf runs in lanes (the kernel in use avx512f or avx2+fma, and
 * the check at first use found its lanes giving the bits of the C
 * library's expf in use); else one value at a time. */
bool engy_vec_exp_lanes(void);

/* v[j] = engy_vec_pexp(v[j] - mx). */
void engy_vec_exp_sub(float *v, size_t n, float mx);

/* engy_vec_swiglu() with engy_vec_pexp() for expf. */
void engy_vec_swiglu_pexp(float *g, const float *u, size_t n);

/* x[i] += y[i]. */
void engy_vec_add(float *x, const float *y, size_t n);

/* y[i] = y[i] + x[i] * w. */
void engy_vec_add_scaled(float *y, const float *x, float w, size_t n);

/* Rotate-half RoPE of one head of @hd (even) values with cos @cs[0, hd/2)
 * and sin @cs[hd/2, hd): x[i] = a c - b s, x[i + hd/2] = b c + a s. */
void engy_vec_rope(float *x, const float *cs, size_t hd);

/* out = w * (x / sqrt(mean(x^2) + eps)), the sum of squares in double
 * in order (transformers' Qwen3RMSNorm); @out may be @x. */
void engy_vec_rmsnorm(float *out, const float *x, const float *w, size_t d,
		      double eps);

/* engy_vec_rmsnorm() of @n rows of @d, row r from x + r * ldx to
 * out + r * ldo (in place where they are the same). */
void engy_vec_rmsnorm_rows(float *out, size_t ldo, const float *x, size_t ldx,
			   const float *w, size_t n, size_t d, double eps);

#endif /* Q3_VEC_H */
