/* SPDX-License-Identifier: MIT */
/*
 * TOPLOC: known answers (specs/verification.md §1.4, the reference README), the
 * straightforward reference port (lib/toploc/toploc_ref.c) as the independent
 * peer, and the properties the scheme promises: same rows give zero
 * mismatches, ~1% noise passes, another model fails, every malformed
 * proof is UNPROVEN.
 *
 * Oracle: independent: the reference README's known answers; toploc_ref.c
 * is a second, straightforward port in this repository (same authors, so a
 * cross-check rather than an outside oracle).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base64.h"
#include "bf16.h"
#include "toploc.h"
#include "toploc_int.h"
#include "toploc_ref.h"

#define P ENGY_TOPLOC_PRIME

static uint64_t rng_state;

static void seed(uint64_t s)
{
	rng_state = s * 0x9E3779B97F4A7C15ull + 1;
}

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double unif(void)
{
	return ((rnd() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double gauss(void)
{
	return sqrt(-2 * log(unif())) * cos(2 * M_PI * unif());
}

/* n "hidden state" values: Gaussian with a few large outlier channels. */
static float *model_rows(size_t n_rows, size_t hidden, uint64_t s)
{
	float *f = malloc(n_rows * hidden * sizeof(*f));
	size_t i;

	ck_assert_ptr_nonnull(f);
	seed(s);
	for (i = 0; i < n_rows * hidden; i++)
		f[i] = (float)(gauss() * ((i % hidden) % 97 == 0 ? 8 : 1));
	return f;
}

static uint16_t *to_bf16(const float *f, size_t n)
{
	uint16_t *b = malloc(n * sizeof(*b) + 1);
	size_t i;

	ck_assert_ptr_nonnull(b);
	for (i = 0; i < n; i++)
		b[i] = engy_bf16_from_f32(f[i]);
	return b;
}

/* ~@rel relative Gaussian noise, as a different GPU / kernel would add. */
static uint16_t *noisy_bf16(const float *f, size_t n, double rel, uint64_t s)
{
	uint16_t *b = malloc(n * sizeof(*b));
	size_t i;

	ck_assert_ptr_nonnull(b);
	seed(s);
	for (i = 0; i < n; i++)
		b[i] = engy_bf16_from_f32((float)(f[i] * (1 + rel * gauss())));
	return b;
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

/* ---- bf16 cast ---- */

/* Independent peer: the nearer of the two bf16 neighbours in double,
 * ties to the even pattern. */
static uint16_t peer_bf16(uint32_t u)
{
	float f = engy_f32_from_bits(u);
	uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
	double dl, dh;

	if (isnan(f))
		return 0x7FC0;
	if ((u & 0xFFFF) == 0)
		return lo;
	dl = fabs((double)f - (double)engy_bf16_to_f32(lo));
	if ((hi & 0x7F80) == 0x7F80 && (hi & 0x7F)) /* past infinity */
		return lo;
	dh = (lo & 0x7FFF) == 0x7F7F
		     ? ldexp(1, 128) - fabs((double)f)
		     : fabs((double)f - (double)engy_bf16_to_f32(hi));
	if (dl < dh)
		return lo;
	if (dh < dl)
		return hi;
	return (lo & 1) ? hi : lo;
}

START_TEST(test_bf16_cast)
{
	static const uint32_t in[] = { 0x3F800000, 0x3F808000, 0x3F818000,
				       0x3F808001, 0x3F80FFFF, 0xBF808000,
				       0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000,
				       0xFF800000, 0x7FC00000, 0xFFC00001,
				       0x7F800001, 0x00008000, 0x00018000,
				       0x80008001, 0x00000000, 0x80000000 };
	static const uint16_t want[] = { 0x3F80, 0x3F80, 0x3F82, 0x3F81, 0x3F81,
					 0xBF80, 0x7F80, 0xFF80, 0x7F80, 0xFF80,
					 0x7FC0, 0x7FC0, 0x7FC0, 0x0000, 0x0002,
					 0x8001, 0x0000, 0x8000 };
	size_t i;

	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		ck_assert_uint_eq(engy_bf16_from_f32_bits(in[i]), want[i]);
		ck_assert_uint_eq(peer_bf16(in[i]), want[i]);
	}
	seed(1);
	for (i = 0; i < 2000000; i++) {
		uint32_t u = (uint32_t)rnd();

		if (i & 1) /* dwell on halfway points */
			u = (u & 0xFFFF0000u) | 0x8000u;
		ck_assert_uint_eq(engy_bf16_from_f32_bits(u), peer_bf16(u));
	}
	ck_assert_uint_eq(engy_bf16_exp(0xBF85), 0x7F);
	ck_assert_uint_eq(engy_bf16_mant(0xBF85), 5);
	ck_assert_uint_eq(engy_bf16_key(0xBF85), 0x3F85);
}
END_TEST

/* ---- known answers ---- */

START_TEST(test_known_answer_123)
{
	const uint64_t idx[] = { 1, 2, 3 };
	const uint16_t y[] = { 4, 5, 6 };
	uint8_t proof[8];
	char h[17], b64[16];
	uint16_t c[3];
	uint32_t m;

	ck_assert_int_eq(engy_toploc_from_points(idx, y, 3, proof), 0);
	hex(proof, 8, h);
	ck_assert_str_eq(h, "ffd9000300010000");
	engy_base64_encode(b64, proof, 8);
	ck_assert_str_eq(b64, "/9kAAwABAAA=");
	ck_assert_int_eq(engy_toploc_proof_decode(proof, 8, 3, &m, c), 0);
	ck_assert_uint_eq(m, 65497);
	ck_assert_uint_eq(engy_toploc_eval(c, 3, 2), 5);
}
END_TEST

START_TEST(test_known_answer_collision)
{
	const uint64_t idx[] = { 0, 65497 };
	const uint16_t y[] = { 0x3F80, 0x4000 };
	uint8_t proof[6];
	uint16_t c[2];
	uint32_t m;
	char h[13];

	ck_assert_uint_eq(engy_toploc_modulus(idx, 2), 65496);
	ck_assert_int_eq(engy_toploc_from_points(idx, y, 2, proof), 0);
	hex(proof, 6, h);
	ck_assert_str_eq(h, "ffd83f800080");
	ck_assert_int_eq(engy_toploc_proof_decode(proof, 6, 2, &m, c), 0);
	ck_assert_uint_eq(m, 65496);
	/* At idx mod m the values come back; at the raw index they do not
	 * (the bug the reference's list path still has). */
	ck_assert_uint_eq(engy_toploc_eval(c, 2, idx[0] % m), 16256);
	ck_assert_uint_eq(engy_toploc_eval(c, 2, idx[1] % m), 16384);
	ck_assert_uint_eq(engy_toploc_eval(c, 2, (uint32_t)idx[1]), 16256);
}
END_TEST

/* The reference README's first proof (k = 4). */
START_TEST(test_known_answer_readme)
{
	const char *b = "/9kbQitnukt1bQ==";
	static const uint16_t want[] = { 0x1B42, 0x2B67, 0xBA4B, 0x756D };
	uint8_t bytes[10];
	uint16_t c[4];
	uint32_t m;
	size_t n, i;
	char again[20];

	ck_assert_int_eq(
		engy_base64_decode(bytes, sizeof(bytes), b, strlen(b), &n), 0);
	ck_assert_uint_eq(n, engy_toploc_proof_len(4));
	ck_assert_int_eq(engy_toploc_proof_decode(bytes, n, 4, &m, c), 0);
	ck_assert_uint_eq(m, 65497);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(c[i], want[i]);
	engy_base64_encode(again, bytes, n);
	ck_assert_str_eq(again, b);
	ck_assert_int_eq(engy_toploc_proof_decode(bytes, n, 5, &m, c),
			 ENGY_TOPLOC_BAD_LENGTH);
}
END_TEST

/* ---- field arithmetic against the peer ---- */

START_TEST(test_interpolate_matches_peer)
{
	static const size_t ks[] = { 1, 2, 3, 7, 64, 128, 300 };
	uint32_t x[300], w[600];
	uint16_t y[300], c[300], cr[300];
	size_t t, i, j, k;

	seed(2);
	for (t = 0; t < sizeof(ks) / sizeof(ks[0]); t++) {
		k = ks[t];
		for (i = 0; i < k; i++) {
			do {
				x[i] = (uint32_t)(rnd() % P);
				for (j = 0; j < i && x[j] != x[i]; j++)
					;
			} while (j < i);
			y[i] = (uint16_t)rnd(); /* includes >= P */
		}
		ck_assert_int_eq(engy_toploc_interpolate(x, y, k, c, w), 0);
		ck_assert_int_eq(engy_toploc_ref_interpolate(x, y, k, cr), 0);
		for (i = 0; i < k; i++) {
			ck_assert_uint_lt(c[i], P);
			ck_assert_uint_eq(c[i], cr[i]);
			ck_assert_uint_eq(engy_toploc_eval(c, k, x[i]),
					  y[i] % P);
			ck_assert_uint_eq(engy_toploc_ref_eval(c, k, x[i]),
					  y[i] % P);
		}
	}
	x[0] = P;
	ck_assert_int_eq(engy_toploc_interpolate(x, y, 2, c, w), -EINVAL);
	ck_assert_int_eq(engy_toploc_interpolate(x, y, 0, c, w), -EINVAL);
}
END_TEST

START_TEST(test_modulus_matches_peer)
{
	uint64_t idx[128];
	size_t t, i;

	seed(3);
	for (t = 0; t < 200; t++) {
		/* Indices in a large chunk, forced to collide mod 65497 and
		 * sometimes mod the next candidates too. */
		for (i = 0; i < 128; i++)
			idx[i] = rnd() % 400000;
		idx[1] = idx[0] + 65497;
		if (t % 2)
			idx[3] = idx[2] + 2 * 65496;
		if (t % 3 == 0)
			idx[5] = idx[4] + 65495 * 3;
		for (i = 0; i < 128; i++) {
			size_t j;

			for (j = 0; j < i; j++)
				if (idx[j] == idx[i])
					idx[i] += 400000 + i;
		}
		ck_assert_uint_eq(engy_toploc_modulus(idx, 128),
				  engy_toploc_ref_modulus(idx, 128));
		ck_assert_uint_lt(engy_toploc_modulus(idx, 128), 65497);
	}
	/* Indices past 32 bits reduce like any others. */
	idx[0] = 1ull << 40;
	idx[1] = (1ull << 40) + 65497;
	idx[2] = 7;
	ck_assert_uint_eq(engy_toploc_modulus(idx, 3),
			  engy_toploc_ref_modulus(idx, 3));
	/* Repeated indices: no modulus, and a null proof. */
	idx[1] = idx[0];
	ck_assert_uint_eq(engy_toploc_modulus(idx, 2), 0);
	{
		uint16_t y[2] = { 1, 2 };
		uint8_t proof[6] = { 9, 9, 9, 9, 9, 9 };
		static const uint8_t zero[6];

		ck_assert_int_eq(engy_toploc_from_points(idx, y, 2, proof),
				 -ERANGE);
		ck_assert(memcmp(proof, zero, 6) == 0);
	}
}
END_TEST

/* ---- top-k ---- */

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Our top-k equals the full-sort peer's, as a set, in ascending order. */
static void check_topk(const uint16_t *v, size_t n, uint32_t k)
{
	struct engy_toploc_ws *ws = engy_toploc_ws_new(k);
	uint64_t *a = malloc(k * sizeof(*a)), *b = malloc(k * sizeof(*b));
	size_t i;

	ck_assert_ptr_nonnull(ws);
	ck_assert_int_eq(engy_toploc_topk(ws, v, n, a), 0);
	ck_assert_int_eq(engy_toploc_ref_topk(v, n, k, b), 0);
	qsort(b, k, sizeof(*b), u64_cmp);
	for (i = 0; i < k; i++)
		ck_assert_uint_eq(a[i], b[i]);
	free(a);
	free(b);
	engy_toploc_ws_free(ws);
}

START_TEST(test_topk_cases)
{
	size_t n = 70000, i;
	float *f = model_rows(1, n, 4);
	uint16_t *v = to_bf16(f, n), *w = malloc(n * sizeof(*w));

	ck_assert_ptr_nonnull(w);
	check_topk(v, n, 128);	  /* sampled-threshold path */
	check_topk(v, 5000, 128); /* small: exact path only */
	check_topk(v, 128, 128);  /* n == k */
	check_topk(v, n, 1);
	check_topk(v, n, 1000);
	/* Heavy ties: few distinct magnitudes, both signs. */
	for (i = 0; i < n; i++)
		w[i] = (uint16_t)((i % 7 == 0 ? 0x8000 : 0) | (0x3F80 + i % 3));
	check_topk(w, n, 128);
	/* All equal: the lowest indices win. */
	for (i = 0; i < n; i++)
		w[i] = 0x4000;
	check_topk(w, n, 128);
	/* NaN and infinity outrank every finite value. */
	memcpy(w, v, n * sizeof(*w));
	w[12345] = 0xFFC1;
	w[99] = 0x7F80;
	w[69999] = 0xFF80;
	check_topk(w, n, 128);
	/* Large values only where the sample looks: the guess leaves too few
	 * candidates and the exact pass must take over. */
	for (i = 0; i < n; i++)
		w[i] = i % (n / 4096) == 0 ? 0x4400
					   : (uint16_t)(0x3000 + i % 50);
	check_topk(w, n, 128);
	/* Many values just above a threshold: candidates overflow. */
	for (i = 0; i < n; i++)
		w[i] = (uint16_t)(i % 2 ? 0x4100 + i % 5 : 0x3F00);
	check_topk(w, n, 128);
	free(f);
	free(v);
	free(w);
}
END_TEST

/* ---- chunks ---- */

START_TEST(test_prove_matches_peer)
{
	static const struct {
		size_t n;
		uint32_t k;
	} shapes[] = { { 32 * 2048, 128 }, { 32 * 64, 128 }, { 70000, 4 },
		       { 5 * 16, 4 },	   { 20000, 300 },   { 64, 64 } };
	uint8_t a[2 + 2 * 300], b[2 + 2 * 300];
	size_t t;

	for (t = 0; t < sizeof(shapes) / sizeof(shapes[0]); t++) {
		size_t n = shapes[t].n;
		uint32_t k = shapes[t].k;
		float *f = model_rows(1, n, 10 + t);
		uint16_t *v = to_bf16(f, n);
		struct engy_toploc_ws *ws = engy_toploc_ws_new(k);

		ck_assert_int_eq(engy_toploc_prove_chunk(ws, v, n, a), 0);
		ck_assert_int_eq(engy_toploc_ref_prove_chunk(v, n, k, b), 0);
		ck_assert(memcmp(a, b, engy_toploc_proof_len(k)) == 0);
		ck_assert_int_eq(engy_toploc_prove_chunk(ws, v, k - 1, a),
				 -EINVAL);
		engy_toploc_ws_free(ws);
		free(f);
		free(v);
	}
}
END_TEST

static struct engy_toploc_stats verify1(const uint16_t *v, size_t n, uint32_t k,
					const uint8_t *proof)
{
	struct engy_toploc_ws *ws = engy_toploc_ws_new(k);
	struct engy_toploc_stats st, peer;

	ck_assert_int_eq(engy_toploc_verify_chunk(ws, v, n, proof,
						  engy_toploc_proof_len(k),
						  &st),
			 ENGY_TOPLOC_OK);
	ck_assert_int_eq(engy_toploc_ref_verify_chunk(v, n, k, proof, &peer),
			 0);
	ck_assert_uint_eq(st.exp_mismatches, peer.exp_mismatches);
	ck_assert(st.mant_mean == peer.mant_mean);
	ck_assert(st.mant_median == peer.mant_median);
	engy_toploc_ws_free(ws);
	return st;
}

START_TEST(test_verify_same_noisy_other)
{
	size_t n = 32 * 2048, t;
	uint8_t proof[258];

	for (t = 0; t < 4; t++) {
		float *f = model_rows(32, 2048, 20 + t);
		float *g = model_rows(32, 2048, 90 + t);
		uint16_t *v = to_bf16(f, n), *nz = noisy_bf16(f, n, 0.01, t);
		uint16_t *other = to_bf16(g, n);
		struct engy_toploc_ws *ws = engy_toploc_ws_new(128);
		struct engy_toploc_stats st;

		ck_assert_int_eq(engy_toploc_prove_chunk(ws, v, n, proof), 0);
		st = verify1(v, n, 128, proof);
		ck_assert_uint_eq(st.exp_mismatches, 0);
		ck_assert(st.mant_mean == 0 && st.mant_median == 0);
		st = verify1(nz, n, 128, proof);
		ck_assert_uint_le(st.exp_mismatches, 20);
		ck_assert(st.mant_mean > 0 && st.mant_mean <= 10);
		ck_assert(st.mant_median <= 8);
		st = verify1(other, n, 128, proof);
		ck_assert_uint_ge(st.exp_mismatches, 100);
		engy_toploc_ws_free(ws);
		free(f);
		free(g);
		free(v);
		free(nz);
		free(other);
	}
}
END_TEST

/* Hand-made mantissa errors 0,1,2,3: mean 1.5, upper median 2. */
START_TEST(test_verify_statistics)
{
	const uint16_t mine[] = { 0x3F80, 0x4000, 0x4040, 0x4080 };
	uint16_t theirs[] = { 0x3F80, 0x4001, 0x4042, 0x4083 };
	uint8_t proof[10];
	struct engy_toploc_stats st;
	size_t i;

	{
		struct engy_toploc_ws *ws = engy_toploc_ws_new(4);

		ck_assert_int_eq(engy_toploc_prove_chunk(ws, mine, 4, proof),
				 0);
		engy_toploc_ws_free(ws);
	}
	st = verify1(theirs, 4, 4, proof);
	ck_assert_uint_eq(st.exp_mismatches, 0);
	ck_assert(st.mant_mean == 1.5);
	ck_assert(st.mant_median == 2);
	/* One exponent off: errors 0,1,3 remain. */
	theirs[2] = 0x40C2;
	st = verify1(theirs, 4, 4, proof);
	ck_assert_uint_eq(st.exp_mismatches, 1);
	ck_assert(st.mant_mean == 4.0 / 3);
	ck_assert(st.mant_median == 1);
	/* Signs are not compared. */
	for (i = 0; i < 4; i++)
		theirs[i] = (uint16_t)(mine[i] | 0x8000);
	st = verify1(theirs, 4, 4, proof);
	ck_assert_uint_eq(st.exp_mismatches, 0);
	ck_assert(st.mant_mean == 0);
	/* No exponent matches: both statistics are 2^64. */
	for (i = 0; i < 4; i++)
		theirs[i] = (uint16_t)(mine[i] + 0x0800);
	st = verify1(theirs, 4, 4, proof);
	ck_assert_uint_eq(st.exp_mismatches, 4);
	ck_assert(st.mant_mean == ldexp(1, 64));
	ck_assert(st.mant_median == ldexp(1, 64));
}
END_TEST

/* Top-k indices 65497 apart force m = 65496: verifying must reduce the
 * verifier's indices mod m to see zero mismatches. */
START_TEST(test_verify_reduces_mod_m)
{
	size_t n = 70000, i;
	uint16_t *v = calloc(n, sizeof(*v));
	uint8_t proof[10];
	struct engy_toploc_ws *ws = engy_toploc_ws_new(4);
	struct engy_toploc_stats st;

	ck_assert_ptr_nonnull(v);
	for (i = 0; i < n; i++)
		v[i] = (uint16_t)(0x3C00 + i % 100);
	v[10] = 0x4400;
	v[10 + 65497] = 0xC480;
	v[20] = 0x4500;
	v[30] = 0x4600;
	ck_assert_int_eq(engy_toploc_prove_chunk(ws, v, n, proof), 0);
	ck_assert_uint_eq((uint32_t)proof[0] << 8 | proof[1], 65496);
	st = verify1(v, n, 4, proof);
	ck_assert_uint_eq(st.exp_mismatches, 0);
	engy_toploc_ws_free(ws);
	free(v);
}
END_TEST

START_TEST(test_malformed_proofs)
{
	size_t n = 4096;
	float *f = model_rows(1, n, 5);
	uint16_t *v = to_bf16(f, n);
	struct engy_toploc_ws *ws = engy_toploc_ws_new(16);
	struct engy_toploc_stats st;
	uint8_t good[34], bad[40];

	ck_assert_int_eq(engy_toploc_prove_chunk(ws, v, n, good), 0);
	ck_assert_int_eq(engy_toploc_verify_chunk(ws, v, n, good, 33, &st),
			 ENGY_TOPLOC_BAD_LENGTH);
	memcpy(bad, good, 34);
	ck_assert_int_eq(engy_toploc_verify_chunk(ws, v, n, bad, 36, &st),
			 ENGY_TOPLOC_BAD_LENGTH);
	ck_assert_int_eq(engy_toploc_verify_chunk(ws, v, n, bad, 0, &st),
			 ENGY_TOPLOC_BAD_LENGTH);
	bad[0] = bad[1] = 0;
	ck_assert_int_eq(engy_toploc_verify_chunk(ws, v, n, bad, 34, &st),
			 ENGY_TOPLOC_NULL_PROOF);
	bad[0] = 0xFF;
	bad[1] = 0xDA;
	ck_assert_int_eq(engy_toploc_verify_chunk(ws, v, n, bad, 34, &st),
			 ENGY_TOPLOC_BAD_MODULUS);
	memcpy(bad, good, 34);
	bad[32] = 0xFF;
	bad[33] = 0xD9;
	ck_assert_int_eq(engy_toploc_verify_chunk(ws, v, n, bad, 34, &st),
			 ENGY_TOPLOC_BAD_COEFF);
	ck_assert_int_eq(engy_toploc_verify_chunk(ws, v, 15, good, 34, &st),
			 ENGY_TOPLOC_SHORT_CHUNK);
	/* A small modulus is usable, just wrong: mismatches, no crash. */
	memcpy(bad, good, 34);
	bad[0] = 0;
	bad[1] = 1;
	ck_assert_int_eq(engy_toploc_verify_chunk(ws, v, n, bad, 34, &st),
			 ENGY_TOPLOC_OK);
	ck_assert_str_eq(engy_toploc_defect_str(ENGY_TOPLOC_NULL_PROOF),
			 "null_proof");
	ck_assert_str_eq(engy_toploc_defect_str(-1), "unknown");
	engy_toploc_ws_free(ws);
	free(f);
	free(v);
}
END_TEST

/* Concurrent provers (and the first use of the inverse table) agree. */
struct job {
	const uint16_t *v;
	size_t n;
	uint8_t proof[258];
	int rc;
};

static void *prove_job(void *arg)
{
	struct job *j = arg;
	struct engy_toploc_ws *ws = engy_toploc_ws_new(128);

	j->rc = ws ? engy_toploc_prove_chunk(ws, j->v, j->n, j->proof) : -1;
	engy_toploc_ws_free(ws);
	return NULL;
}

START_TEST(test_threads)
{
	size_t n = 32 * 2048, i;
	float *f = model_rows(32, 2048, 77);
	uint16_t *v = to_bf16(f, n);
	struct job jobs[4];
	pthread_t th[4];
	uint8_t want[258];

	ck_assert_int_eq(engy_toploc_ref_prove_chunk(v, n, 128, want), 0);
	for (i = 0; i < 4; i++) {
		jobs[i].v = v;
		jobs[i].n = n;
		ck_assert_int_eq(
			pthread_create(&th[i], NULL, prove_job, &jobs[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(jobs[i].rc, 0);
		ck_assert(memcmp(jobs[i].proof, want, 258) == 0);
	}
	free(f);
	free(v);
}
END_TEST

/* ---- the vector path against the portable one ---- */

/* What engy_toploc_simd() says in a fresh process, with @env set. */
static void simd_in_child(const char *env, char *out, size_t len)
{
	int fd[2], st;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(fd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fd[1], STDOUT_FILENO);
		if (env)
			setenv("ENGY_TOPLOC_SIMD", env, 1);
		else
			unsetenv("ENGY_TOPLOC_SIMD");
		execl("/proc/self/exe", "check_toploc", "--simd", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	n = read(fd[0], out, len - 1);
	close(fd[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	out[n > 0 ? n : 0] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

/* The vector path is the one taken where the CPU has it (so the tests
 * below compare two different paths), and the variable forces the
 * portable one. */
START_TEST(test_simd_dispatch)
{
	char got[32];
	const char *want = "scalar";

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		want = "avx2";
#endif
	simd_in_child(NULL, got, sizeof(got));
	ck_assert_str_eq(got, want);
	simd_in_child("scalar", got, sizeof(got));
	ck_assert_str_eq(got, "scalar");
	simd_in_child("0", got, sizeof(got));
	ck_assert_str_eq(got, "scalar");
	simd_in_child("avx2", got, sizeof(got));
	ck_assert_str_eq(got, want);
	printf("toploc path on this CPU: %s\n", want);
}
END_TEST

/* Random points, distinct or not (duplicates give meaningless but still
 * identical coefficients), every k up to 300 and a few up to 4096. */
START_TEST(test_simd_interpolate_matches_scalar)
{
	uint32_t *x = malloc(4096 * sizeof(*x)), *w = malloc(8192 * sizeof(*w));
	uint16_t *y = malloc(4096 * sizeof(*y)), *a = malloc(4096 * 2),
		 *b = malloc(4096 * 2);
	size_t t, i, k;

	ck_assert(x && w && y && a && b);
	seed(31);
	for (t = 0; t < 1500; t++) {
		k = t < 300    ? t + 1
		    : t < 1490 ? 1 + rnd() % 300
			       : 1 + rnd() % 4096;
		for (i = 0; i < k; i++) {
			x[i] = (uint32_t)(rnd() % P);
			y[i] = (uint16_t)rnd();
		}
		if (t % 3 == 0) /* distinct: a random stride from a start */
			for (i = 0; i < k; i++)
				x[i] = (uint32_t)((x[0] + i * (1 + x[1] % 15)) %
						  P);
		if (t % 7 == 0 && k > 2) /* a duplicate */
			x[rnd() % k] = x[rnd() % k];
		if (t % 11 == 0) /* extremes */
			for (i = 0; i < k; i++) {
				x[i] = (uint32_t)(i % 2 ? P - 1 - i : i);
				y[i] = (uint16_t)(i % 3 ? 0xFFFF - i : 0);
			}
		ck_assert_int_eq(engy_toploc_interpolate(x, y, k, a, w), 0);
		ck_assert_int_eq(engy_toploc_interpolate_scalar(x, y, k, b, w),
				 0);
		ck_assert_msg(memcmp(a, b, k * sizeof(*a)) == 0,
			      "case %zu, k %zu", t, k);
	}
	x[3] = P;
	ck_assert_int_eq(engy_toploc_interpolate(x, y, 4, a, w), -EINVAL);
	ck_assert_int_eq(engy_toploc_interpolate_scalar(x, y, 4, a, w),
			 -EINVAL);
	free(x);
	free(w);
	free(y);
	free(a);
	free(b);
}
END_TEST

/* A chunk of @n values drawn by pattern @kind. */
static void fill_chunk(uint16_t *v, size_t n, unsigned kind)
{
	size_t i, step = 1 + rnd() % 5000;
	uint16_t base = (uint16_t)(0x3000 + rnd() % 0x1000);

	for (i = 0; i < n; i++) {
		switch (kind) {
		case 0: /* hidden-state like, outlier channels */
			v[i] = engy_bf16_from_f32(
				(float)(gauss() *
					((i % 2048) % 97 == 0 ? 8 : 1)));
			break;
		case 1: /* any bits: NaNs, infinities, both signs */
			v[i] = (uint16_t)rnd();
			break;
		case 2: /* few magnitudes: ties at the boundary */
			v[i] = (uint16_t)((rnd() & 0x8000) |
					  (base + rnd() % 3));
			break;
		case 3: /* constant */
			v[i] = base;
			break;
		case 4: /* large values in one place only */
			v[i] = i % step == 0 ? (uint16_t)(base + 0x800)
					     : (uint16_t)(base + i % 50);
			break;
		default: /* many just above the rest: candidates overflow */
			v[i] = (uint16_t)(i % 2 ? base + 0x100 + i % 5 : base);
			break;
		}
	}
}

/* The verifier's evaluation at many points, on this CPU's path and the
 * portable one, against Horner at each point alone. */
START_TEST(test_eval_many_matches_single)
{
	uint16_t *c = malloc(300 * sizeof(*c));
	uint32_t *x = malloc(300 * sizeof(*x)), *ra = malloc(300 * 4),
		 *rb = malloc(300 * 4);
	size_t t, i, k, n;

	ck_assert(c && x && ra && rb);
	seed(33);
	for (t = 0; t < 400; t++) {
		k = t < 20 ? t + 1 : 1 + rnd() % 300;
		n = t % 3 == 0 ? k : 1 + rnd() % 300;
		for (i = 0; i < k; i++)
			c[i] = (uint16_t)(t % 5 == 0 ? P - 1 - i % 2
						     : rnd() % P);
		for (i = 0; i < n; i++)
			x[i] = (uint32_t)(t % 5 == 1 ? P - 1 - i : rnd() % P);
		engy_toploc_eval_many(c, k, x, ra, n,
				      engy_toploc_isa_default());
		engy_toploc_eval_many(c, k, x, rb, n, ENGY_TOPLOC_ISA_SCALAR);
		for (i = 0; i < n; i++) {
			uint32_t want = engy_toploc_eval(c, k, x[i]);

			ck_assert_msg(ra[i] == want && rb[i] == want,
				      "case %zu, k %zu, point %zu: %u %u, "
				      "want %u",
				      t, k, i, ra[i], rb[i], want);
		}
	}
	free(c);
	free(x);
	free(ra);
	free(rb);
}
END_TEST

START_TEST(test_simd_chunk_matches_scalar)
{
	static const uint32_t ks[] = { 1, 4, 32, 128, 128, 128, 300, 1000 };
	size_t cap = 300000, t, i;
	uint16_t *v = malloc(cap * sizeof(*v)), *nz = malloc(cap * sizeof(*v));
	uint64_t *ia = malloc(1000 * sizeof(*ia)), *ib = malloc(1000 * 8);
	uint8_t *pa = malloc(2 + 2 * 1000), *pb = malloc(2 + 2 * 1000);

	ck_assert(v && nz && ia && ib && pa && pb);
	seed(32);
	for (t = 0; t < 120; t++) {
		uint32_t k = ks[t % 8];
		size_t n = t % 5 == 0	? 32 * 2048
			   : t % 5 == 1 ? 32 * 6144
					: k + rnd() % (cap - k);
		struct engy_toploc_ws *wa = engy_toploc_ws_new(k);
		struct engy_toploc_ws *wb = engy_toploc_ws_new(k);
		struct engy_toploc_stats sa, sb;
		int ra, rb;

		ck_assert(wa && wb);
		engy_toploc_ws_force_scalar(wb);
		fill_chunk(v, n, (unsigned)(t / 8) % 6);
		for (i = 0; i < n; i++) /* the verifier's: ~1% off */
			nz[i] = engy_bf16_from_f32(engy_bf16_to_f32(v[i]) *
						   (float)(1 + 0.01 * gauss()));
		ck_assert_int_eq(engy_toploc_topk(wa, v, n, ia), 0);
		ck_assert_int_eq(engy_toploc_topk(wb, v, n, ib), 0);
		ck_assert_msg(memcmp(ia, ib, k * sizeof(*ia)) == 0,
			      "top-k differs: case %zu, n %zu, k %u", t, n, k);
		ra = engy_toploc_prove_chunk(wa, v, n, pa);
		rb = engy_toploc_prove_chunk(wb, v, n, pb);
		ck_assert_int_eq(ra, rb);
		ck_assert(memcmp(pa, pb, engy_toploc_proof_len(k)) == 0);
		ck_assert_int_eq(
			engy_toploc_verify_chunk(wa, nz, n, pa,
						 engy_toploc_proof_len(k), &sa),
			ra ? ENGY_TOPLOC_NULL_PROOF : ENGY_TOPLOC_OK);
		ck_assert_int_eq(
			engy_toploc_verify_chunk(wb, nz, n, pa,
						 engy_toploc_proof_len(k), &sb),
			ra ? ENGY_TOPLOC_NULL_PROOF : ENGY_TOPLOC_OK);
		if (!ra) {
			ck_assert_uint_eq(sa.exp_mismatches, sb.exp_mismatches);
			ck_assert(sa.mant_mean == sb.mant_mean);
			ck_assert(sa.mant_median == sb.mant_median);
		}
		engy_toploc_ws_free(wa);
		engy_toploc_ws_free(wb);
	}
	free(v);
	free(nz);
	free(ia);
	free(ib);
	free(pa);
	free(pb);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s;
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	if (argc > 1 && strcmp(argv[1], "--simd") == 0) { /* for the test */
		puts(engy_toploc_simd());
		return 0;
	}
	s = suite_create("toploc");
	/* The first test runs the threads: the inverse table is cold. */
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_bf16_cast);
	tcase_add_test(tc, test_known_answer_123);
	tcase_add_test(tc, test_known_answer_collision);
	tcase_add_test(tc, test_known_answer_readme);
	tcase_add_test(tc, test_interpolate_matches_peer);
	tcase_add_test(tc, test_modulus_matches_peer);
	tcase_add_test(tc, test_topk_cases);
	tcase_add_test(tc, test_prove_matches_peer);
	tcase_add_test(tc, test_verify_same_noisy_other);
	tcase_add_test(tc, test_verify_statistics);
	tcase_add_test(tc, test_verify_reduces_mod_m);
	tcase_add_test(tc, test_malformed_proofs);
	tcase_add_test(tc, test_simd_dispatch);
	tcase_add_test(tc, test_simd_interpolate_matches_scalar);
	tcase_add_test(tc, test_eval_many_matches_single);
	tcase_add_test(tc, test_simd_chunk_matches_scalar);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
