/* SPDX-License-Identifier: MIT */
/*
 * TOPLOC field arithmetic: the injective-modulus search, interpolation over
 * GF(65497), evaluation, and the proof's byte layout.
 *
 * Interpolation is Newton's divided differences with inverses from a table
 * of all 65496 field inverses (built once), so the O(k^2) inner loops are a
 * table load and one multiply each; the Newton form is expanded to
 * monomials in nested (Horner) order, one multiply-add per coefficient, half
 * the work of the reference's rolling-factor expansion.  Every product of
 * two residues plus a residue fits in 32 bits (65496^2 + 65496 < 2^32).
 * This is the portable path; engy_toploc_interpolate() takes the vector one
 * (lib/toploc/toploc_simd.c, same output) where the CPU has it.  The modulus
 * search leaves its residues for the interpolation, each computed with two
 * multiplies instead of a division.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "toploc.h"
#include "toploc_int.h"

#define P ENGY_TOPLOC_PRIME

static uint16_t inv_tab[P];
static pthread_once_t inv_once = PTHREAD_ONCE_INIT;

/* inv(i) = -(P / i) * inv(P mod i): one pass, each entry from a smaller one. */
static void inv_init(void)
{
	uint32_t i;

	inv_tab[0] = 0;
	inv_tab[1] = 1;
	for (i = 2; i < P; i++)
		inv_tab[i] = (uint16_t)((P - (P / i) * inv_tab[P % i] % P) % P);
}

const uint16_t *engy_toploc_inv_table(void)
{
	pthread_once(&inv_once, inv_init);
	return inv_tab;
}

static const char *const defect_str[ENGY_TOPLOC_DEFECT_MAX] = {
	[ENGY_TOPLOC_OK] = "ok",
	[ENGY_TOPLOC_BAD_JSON] = "bad_json",
	[ENGY_TOPLOC_TOPK_MISMATCH] = "topk_mismatch",
	[ENGY_TOPLOC_DBS_MISMATCH] = "dbs_mismatch",
	[ENGY_TOPLOC_PREFILL_MISMATCH] = "skip_prefill_mismatch",
	[ENGY_TOPLOC_N_TOKENS] = "n_tokens_mismatch",
	[ENGY_TOPLOC_CHUNK_COUNT] = "chunk_count",
	[ENGY_TOPLOC_NO_CHUNKS] = "no_chunks",
	[ENGY_TOPLOC_BAD_BASE64] = "bad_base64",
	[ENGY_TOPLOC_BAD_LENGTH] = "bad_length",
	[ENGY_TOPLOC_NULL_PROOF] = "null_proof",
	[ENGY_TOPLOC_BAD_MODULUS] = "bad_modulus",
	[ENGY_TOPLOC_BAD_COEFF] = "bad_coeff",
	[ENGY_TOPLOC_SHORT_CHUNK] = "short_chunk",
};

const char *engy_toploc_defect_str(int d)
{
	if (d < 0 || d >= ENGY_TOPLOC_DEFECT_MAX)
		return "unknown";
	return defect_str[d];
}

int engy_toploc_params_check(const struct engy_toploc_params *p)
{
	if (!p || p->topk == 0 || p->topk > ENGY_TOPLOC_MAX_TOPK ||
	    p->dbs == 0 || p->dbs > ENGY_TOPLOC_MAX_DBS)
		return -EINVAL;
	return 0;
}

/* A divisor with what its fast remainder needs. */
struct divisor {
	uint32_t m;
	uint64_t magic; /* ceil(2^64 / m) */
	bool wide;	/* some index needs 64 bits: plain division */
};

static struct divisor divisor_of(uint32_t m, uint64_t max)
{
	struct divisor d = { m, UINT64_MAX / m + 1, max >> 32 != 0 };

	return d;
}

/*
 * @v mod @d.m.  Indices under 2^32 take Lemire's direct remainder
 * ((ceil(2^64/m) * v mod 2^64) * m) >> 64, exact for 32-bit v and m: two
 * multiplies instead of a division, as every modulus tried is a variable.
 */
static inline uint32_t res(uint64_t v, const struct divisor *d)
{
#ifdef __SIZEOF_INT128__
	if (!d->wide)
		return (uint32_t)(((unsigned __int128)(d->magic * v) * d->m) >>
				  64);
#endif
	return (uint32_t)(v % d->m);
}

/*
 * The modulus search; with @x, the residues of the modulus found are left
 * there (k entries) so that no caller divides again.
 */
static uint32_t modulus_res(const uint64_t *idx, size_t k, uint32_t *x)
{
	/* One bit per residue; cleared again after each failed try. */
	uint64_t seen[(P + 63) / 64];
	uint64_t max = 0;
	size_t i, j;
	uint32_t m;

	if (k == 0 || k > P)
		return 0;
	for (i = 0; i < k; i++)
		if (idx[i] > max)
			max = idx[i];
	memset(seen, 0, sizeof(seen));
	for (m = P; m >= k; m--) {
		struct divisor d = divisor_of(m, max);

		for (i = 0; i < k; i++) {
			uint32_t r = res(idx[i], &d);
			uint64_t bit = 1ull << (r & 63);

			if (seen[r >> 6] & bit)
				break;
			seen[r >> 6] |= bit;
			if (x)
				x[i] = r;
		}
		if (i == k)
			return m;
		for (j = 0; j < i; j++) {
			uint32_t r = x ? x[j] : res(idx[j], &d);

			seen[r >> 6] &= ~(1ull << (r & 63));
		}
	}
	return 0;
}

uint32_t engy_toploc_modulus(const uint64_t *idx, size_t k)
{
	return modulus_res(idx, k, NULL);
}

static int interp_check(const uint32_t *x, size_t k)
{
	size_t i;

	if (k == 0)
		return -EINVAL;
	for (i = 0; i < k; i++)
		if (x[i] >= P)
			return -EINVAL;
	return 0;
}

/* The portable path for checked input. */
static void interp_scalar(const uint32_t *x, const uint16_t *y, size_t k,
			  uint16_t *coeffs, uint32_t *work)
{
	const uint16_t *inv = engy_toploc_inv_table();
	uint32_t *dd = work, *c = work + k;
	size_t i, j;

	for (i = 0; i < k; i++)
		dd[i] = y[i] % P;
	/* Divided differences in place: after level j, dd[i] (i >= j) is
	 * f[x_{i-j}..x_i]; descending i reads dd[i-1] before it changes. */
	for (j = 1; j < k; j++) {
		for (i = k - 1; i >= j; i--) {
			uint32_t num = dd[i] + P - dd[i - 1];
			uint32_t den = x[i] + P - x[i - j];

			num -= num >= P ? P : 0;
			den -= den >= P ? P : 0;
			dd[i] = num * inv[den] % P;
		}
	}
	/* Nested expansion: c <- c * (X - x_i) + dd[i], i = k-2 .. 0. */
	c[0] = dd[k - 1];
	for (i = k - 1; i-- > 0;) {
		uint32_t nx = P - x[i];
		size_t deg = k - 2 - i; /* degree of c before this step */

		c[deg + 1] = c[deg];
		for (j = deg; j > 0; j--)
			c[j] = (c[j] * nx + c[j - 1]) % P;
		c[0] = (c[0] * nx + dd[i]) % P;
	}
	for (i = 0; i < k; i++)
		coeffs[i] = (uint16_t)c[i];
}

int engy_toploc_interpolate_scalar(const uint32_t *x, const uint16_t *y,
				   size_t k, uint16_t *coeffs, uint32_t *work)
{
	int rc = interp_check(x, k);

	if (!rc)
		interp_scalar(x, y, k, coeffs, work);
	return rc;
}

int engy_toploc_interpolate_isa(const uint32_t *x, const uint16_t *y, size_t k,
				uint16_t *coeffs, uint32_t *work, int isa)
{
	int rc = interp_check(x, k);

	if (rc)
		return rc;
	if (isa == ENGY_TOPLOC_ISA_AVX2 &&
	    engy_toploc_interp_avx2(x, y, k, coeffs) == 0)
		return 0;
	interp_scalar(x, y, k, coeffs, work);
	return 0;
}

int engy_toploc_interpolate(const uint32_t *x, const uint16_t *y, size_t k,
			    uint16_t *coeffs, uint32_t *work)
{
	return engy_toploc_interpolate_isa(x, y, k, coeffs, work,
					   engy_toploc_isa_default());
}

uint32_t engy_toploc_eval(const uint16_t *coeffs, size_t k, uint32_t x)
{
	uint32_t r = 0;
	size_t i;

	x %= P;
	for (i = k; i-- > 0;)
		r = (r * x + coeffs[i]) % P;
	return r;
}

int engy_toploc_from_points(const uint64_t *idx, const uint16_t *y, size_t k,
			    uint8_t *proof)
{
	return engy_toploc_from_points_isa(idx, y, k, proof,
					   engy_toploc_isa_default());
}

static void put_be16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

int engy_toploc_from_points_isa(const uint64_t *idx, const uint16_t *y,
				size_t k, uint8_t *proof, int isa)
{
	uint32_t stack_x[256], stack_w[512], *x = stack_x, *w = stack_w;
	uint16_t stack_c[256], *c = stack_c;
	uint32_t m;
	size_t i;
	int rc = 0;

	if (k == 0 || k > ENGY_TOPLOC_MAX_TOPK)
		return -EINVAL;
	memset(proof, 0, engy_toploc_proof_len((uint32_t)k));
	if (k > 256) {
		x = malloc(k * (3 * sizeof(uint32_t) + sizeof(uint16_t)));
		if (!x)
			return -ENOMEM;
		w = x + k;
		c = (uint16_t *)(w + 2 * k);
	}
	m = modulus_res(idx, k, x); /* x[i] = idx[i] mod m */
	if (!m) {
		rc = -ERANGE; /* the reference's null proof */
		goto out;
	}
	rc = engy_toploc_interpolate_isa(x, y, k, c, w, isa);
	if (rc)
		goto out;
	put_be16(proof, m);
	for (i = 0; i < k; i++)
		put_be16(proof + 2 + 2 * i, c[i]);
out:
	if (x != stack_x)
		free(x);
	return rc;
}

int engy_toploc_proof_decode(const uint8_t *proof, size_t len, uint32_t topk,
			     uint32_t *modulus, uint16_t *coeffs)
{
	uint32_t m, c;
	size_t i;

	if (len != engy_toploc_proof_len(topk))
		return ENGY_TOPLOC_BAD_LENGTH;
	m = (uint32_t)proof[0] << 8 | proof[1];
	if (m == 0)
		return ENGY_TOPLOC_NULL_PROOF;
	if (m > P)
		return ENGY_TOPLOC_BAD_MODULUS;
	for (i = 0; i < topk; i++) {
		c = (uint32_t)proof[2 + 2 * i] << 8 | proof[3 + 2 * i];
		if (c >= P)
			return ENGY_TOPLOC_BAD_COEFF;
		coeffs[i] = (uint16_t)c;
	}
	*modulus = m;
	return ENGY_TOPLOC_OK;
}
