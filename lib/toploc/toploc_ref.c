/* SPDX-License-Identifier: MIT */
/*
 * A straightforward port of the reference library's algorithms, kept as
 * the independent peer of lib/toploc/toploc.c in tests and as the baseline of
 * bench/bench_toploc.c.  Nothing in the product calls it.
 *
 *   - top-k: sort every (|x|, index) pair, take the first k;
 *   - modulus: for m = 65497 down, linear search for a repeated residue;
 *   - interpolation: Newton divided differences with an extended-Euclid
 *     inverse at every step, then the rolling-factor expansion
 *     (coeffs += dd_i * F; F *= (X - x_i)), as ndd.cpp;
 *   - evaluation: Horner with 64-bit intermediates, as ndd.cpp.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "toploc.h"
#include "toploc_ref.h"

#define P ((int64_t)ENGY_TOPLOC_PRIME)

static int64_t safe_mod(int64_t v)
{
	v %= P;
	return v < 0 ? v + P : v;
}

static int64_t mod_inverse(int64_t a)
{
	int64_t old_r = safe_mod(a), r = P, old_s = 1, s = 0, q, t;

	while (r != 0) {
		q = old_r / r;
		t = old_r - q * r;
		old_r = r;
		r = t;
		t = old_s - q * s;
		old_s = s;
		s = t;
	}
	return old_r == 1 ? safe_mod(old_s) : -1;
}

int engy_toploc_ref_interpolate(const uint32_t *x, const uint16_t *y, size_t k,
				uint16_t *coeffs)
{
	int64_t *dd, *c, *f;
	size_t i, j;
	int rc = 0;

	dd = calloc(3 * k, sizeof(*dd));
	if (!dd)
		return -ENOMEM;
	c = dd + k;
	f = c + k;
	for (i = 0; i < k; i++)
		dd[i] = safe_mod(y[i]);
	for (j = 1; j < k; j++) {
		for (i = k - 1; i >= j; i--) {
			int64_t num = safe_mod(dd[i] - dd[i - 1]);
			int64_t inv = mod_inverse(
				safe_mod((int64_t)x[i] - (int64_t)x[i - j]));

			if (inv < 0) {
				rc = -EINVAL;
				goto out;
			}
			dd[i] = safe_mod(num * inv);
		}
	}
	f[0] = 1;
	for (i = 0; i < k; i++) {
		for (j = 0; j <= i; j++)
			c[j] = safe_mod(c[j] + dd[i] * f[j]);
		if (i + 1 < k) {
			int64_t mx = safe_mod(-(int64_t)x[i]), prev = f[0], old;

			f[0] = safe_mod(prev * mx);
			for (j = 1; j <= i + 1; j++) {
				old = f[j];
				f[j] = safe_mod(prev + old * mx);
				prev = old;
			}
		}
	}
	for (i = 0; i < k; i++)
		coeffs[i] = (uint16_t)c[i];
out:
	free(dd);
	return rc;
}

uint32_t engy_toploc_ref_eval(const uint16_t *coeffs, size_t k, uint64_t x)
{
	int64_t r = coeffs[k - 1], xi = (int64_t)(x % (uint64_t)P);
	size_t i;

	for (i = k - 1; i-- > 0;)
		r = (r * xi + coeffs[i]) % P;
	return (uint32_t)safe_mod(r);
}

uint32_t engy_toploc_ref_modulus(const uint64_t *idx, size_t k)
{
	uint32_t *seen, m;
	size_t i, j, n;

	seen = malloc(k * sizeof(*seen) + 1);
	if (!seen)
		return 0;
	for (m = (uint32_t)P; m > 0; m--) {
		for (i = 0, n = 0; i < k; i++) {
			uint32_t r = (uint32_t)(idx[i] % m);

			for (j = 0; j < n; j++)
				if (seen[j] == r)
					break;
			if (j < n)
				break;
			seen[n++] = r;
		}
		if (i == k)
			break;
	}
	free(seen);
	return m;
}

struct ent {
	uint16_t key;
	uint64_t idx;
};

/* Larger |x| first; among equal |x| the lower index first. */
static int ent_cmp(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int engy_toploc_ref_topk(const uint16_t *v, size_t n, size_t k, uint64_t *idx)
{
	struct ent *e;
	size_t i;

	if (n < k)
		return -EINVAL;
	e = malloc(n * sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		e[i].key = engy_bf16_key(v[i]);
		e[i].idx = i;
	}
	qsort(e, n, sizeof(*e), ent_cmp);
	for (i = 0; i < k; i++)
		idx[i] = e[i].idx;
	free(e);
	return 0;
}

int engy_toploc_ref_prove_chunk(const uint16_t *v, size_t n, size_t k,
				uint8_t *proof)
{
	uint64_t *idx;
	uint32_t *x, m;
	uint16_t *y, *c;
	size_t i;
	int rc;

	if (k == 0)
		return -EINVAL;
	idx = calloc(k, sizeof(*idx));
	x = calloc(k, sizeof(*x));
	y = calloc(k, sizeof(*y));
	c = calloc(k, sizeof(*c));
	rc = (!idx || !x || !y || !c) ? -ENOMEM : 0;
	if (!rc)
		rc = engy_toploc_ref_topk(v, n, k, idx);
	if (rc)
		goto out;
	memset(proof, 0, engy_toploc_proof_len((uint32_t)k));
	m = engy_toploc_ref_modulus(idx, k);
	if (!m) {
		rc = -ERANGE;
		goto out;
	}
	for (i = 0; i < k; i++) {
		x[i] = (uint32_t)(idx[i] % m);
		y[i] = v[idx[i]];
	}
	rc = engy_toploc_ref_interpolate(x, y, k, c);
	if (rc)
		goto out;
	proof[0] = (uint8_t)(m >> 8);
	proof[1] = (uint8_t)m;
	for (i = 0; i < k; i++) {
		proof[2 + 2 * i] = (uint8_t)(c[i] >> 8);
		proof[3 + 2 * i] = (uint8_t)c[i];
	}
out:
	free(idx);
	free(x);
	free(y);
	free(c);
	return rc;
}

static int float_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int engy_toploc_ref_verify_chunk(const uint16_t *v, size_t n, size_t k,
				 const uint8_t *proof,
				 struct engy_toploc_stats *st)
{
	uint64_t *idx;
	double *errs, sum = 0;
	uint16_t *c;
	uint32_t m;
	size_t i, cnt = 0, mism = 0;
	int rc;

	if (k == 0)
		return -EINVAL;
	idx = calloc(k, sizeof(*idx));
	errs = calloc(k, sizeof(*errs));
	c = calloc(k, sizeof(*c));
	rc = (!idx || !errs || !c) ? -ENOMEM : 0;
	if (!rc)
		rc = engy_toploc_ref_topk(v, n, k, idx);
	if (rc)
		goto out;
	m = (uint32_t)proof[0] << 8 | proof[1];
	if (!m) {
		rc = -EINVAL;
		goto out;
	}
	for (i = 0; i < k; i++)
		c[i] = (uint16_t)(proof[2 + 2 * i] << 8 | proof[3 + 2 * i]);
	for (i = 0; i < k; i++) {
		uint16_t pv = (uint16_t)engy_toploc_ref_eval(c, k, idx[i] % m);
		uint16_t own = v[idx[i]];

		if (((pv & 0x7F80) >> 7) != ((own & 0x7F80) >> 7)) {
			mism++;
			continue;
		}
		errs[cnt] = abs((int)(pv & 0x7F) - (int)(own & 0x7F));
		sum += errs[cnt++];
	}
	st->exp_mismatches = (uint32_t)mism;
	if (cnt) {
		qsort(errs, cnt, sizeof(*errs), float_cmp);
		st->mant_mean = sum / (double)cnt;
		st->mant_median = errs[cnt / 2];
	} else {
		st->mant_mean = st->mant_median = 18446744073709551616.0;
	}
out:
	free(idx);
	free(errs);
	free(c);
	return rc;
}
