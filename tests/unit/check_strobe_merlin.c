/* SPDX-License-Identifier: MIT */
/*
 * Keccak-f[1600] against OpenSSL's SHA-3 and SHAKE (a sponge built here on
 * our permutation must give their digests), STROBE's operation framing,
 * and Merlin's published test vector.
 *
 * Oracle: independent: OpenSSL's SHA-3 and SHAKE, and Merlin's published
 * test vector.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "merlin.h"
#include "sign_test.h"
#include "strobe.h"

/* A SHA-3 style sponge on engy_keccak_f1600: rate @rate, domain byte @dom. */
static void sponge(uint8_t *out, size_t outlen, const uint8_t *in, size_t n,
		   size_t rate, uint8_t dom)
{
	uint8_t st[200] = { 0 };
	size_t i, take;

	while (n >= rate) {
		for (i = 0; i < rate; i++)
			st[i] ^= in[i];
		engy_keccak_f1600(st);
		in += rate;
		n -= rate;
	}
	for (i = 0; i < n; i++)
		st[i] ^= in[i];
	st[n] ^= dom;
	st[rate - 1] ^= 0x80;
	engy_keccak_f1600(st);
	while (outlen) {
		take = outlen < rate ? outlen : rate;
		memcpy(out, st, take);
		out += take;
		outlen -= take;
		if (outlen)
			engy_keccak_f1600(st);
	}
}

static void openssl_digest(const EVP_MD *md, uint8_t *out, size_t outlen,
			   const uint8_t *in, size_t n)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(EVP_DigestInit_ex(c, md, NULL), 1);
	ck_assert_int_eq(EVP_DigestUpdate(c, in, n), 1);
	if (EVP_MD_flags(md) & EVP_MD_FLAG_XOF)
		ck_assert_int_eq(EVP_DigestFinalXOF(c, out, outlen), 1);
	else
		ck_assert_int_eq(EVP_DigestFinal_ex(c, out, NULL), 1);
	EVP_MD_CTX_free(c);
}

/* Every length across several rate boundaries, for two rates and domains. */
START_TEST(test_keccak_vs_openssl)
{
	uint8_t msg[600], a[400], b[400];
	size_t n, i;

	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 131 + 7);
	for (n = 0; n <= sizeof(msg); n += (n < 340 ? 1 : 13)) {
		sponge(a, 32, msg, n, 136, 0x06);
		openssl_digest(EVP_sha3_256(), b, 32, msg, n);
		ck_assert_msg(memcmp(a, b, 32) == 0,
			      "SHA3-256 differs at length %zu", n);
		sponge(a, sizeof(a), msg, n, 168, 0x1f);
		openssl_digest(EVP_shake128(), b, sizeof(b), msg, n);
		ck_assert_msg(memcmp(a, b, sizeof(a)) == 0,
			      "SHAKE128 differs at length %zu", n);
	}
}
END_TEST

/* The Keccak team's value of Keccak-f[1600] on the all-zero state. */
START_TEST(test_keccak_zero_state)
{
	uint8_t st[200] = { 0 };

	engy_keccak_f1600(st);
	ck_assert_hex_eq(st, 16, "e7dde140798f25f18a47c033f9ccd584");
}
END_TEST

/* merlin/src/transcript.rs, test "equivalence_simple". */
START_TEST(test_merlin_published_vector)
{
	struct engy_merlin t;
	uint8_t c[32];

	engy_merlin_init(&t, "test protocol");
	engy_merlin_append(&t, "some label", "some data", 9);
	engy_merlin_challenge(&t, "challenge", c, sizeof(c));
	ck_assert_hex_eq(
		c, 32,
		"d5a21972d0d5fe320c0d263fac7fffb8145aa640af6e9bca177c03c7efcf0615");
}
END_TEST

/* A continued operation ("more") equals one operation over the concatenation. */
START_TEST(test_strobe_continuation)
{
	struct engy_strobe a, b;
	uint8_t data[700], oa[300], ob[300];
	size_t i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i ^ 0x5a);
	engy_strobe_init(&a, "x", 1);
	engy_strobe_init(&b, "x", 1);
	engy_strobe_meta_ad(&a, data, 9, false);
	engy_strobe_meta_ad(&b, data, 4, false);
	engy_strobe_meta_ad(&b, data + 4, 5, true);
	engy_strobe_ad(&a, data, sizeof(data),
		       false); /* crosses R four times */
	engy_strobe_ad(&b, data, 100, false);
	engy_strobe_ad(&b, data + 100, 200, true);
	engy_strobe_ad(&b, data + 300, 400, true);
	engy_strobe_key(&a, data, 40, false);
	engy_strobe_key(&b, data, 1, false);
	engy_strobe_key(&b, data + 1, 39, true);
	engy_strobe_prf(&a, oa, sizeof(oa), false);
	engy_strobe_prf(&b, ob, 170, false);
	engy_strobe_prf(&b, ob + 170, 130, true);
	ck_assert(memcmp(oa, ob, sizeof(oa)) == 0);
	ck_assert(memcmp(&a, &b, sizeof(a)) == 0);

	/* Splitting into two separate operations is different framing. */
	engy_strobe_init(&a, "x", 1);
	engy_strobe_init(&b, "x", 1);
	engy_strobe_ad(&a, data, 10, false);
	engy_strobe_ad(&b, data, 5, false);
	engy_strobe_ad(&b, data + 5, 5, false);
	engy_strobe_prf(&a, oa, 32, false);
	engy_strobe_prf(&b, ob, 32, false);
	ck_assert(memcmp(oa, ob, 32) != 0);
}
END_TEST

/* Labels, messages and lengths are all bound into the challenge. */
START_TEST(test_merlin_binding)
{
	struct engy_merlin t;
	uint8_t base[32], c[32];

	engy_merlin_init(&t, "p");
	engy_merlin_append(&t, "l", "ab", 2);
	engy_merlin_challenge(&t, "c", base, 32);

	engy_merlin_init(&t, "q");
	engy_merlin_append(&t, "l", "ab", 2);
	engy_merlin_challenge(&t, "c", c, 32);
	ck_assert(memcmp(base, c, 32) != 0);

	engy_merlin_init(&t, "p");
	engy_merlin_append(&t, "m", "ab", 2);
	engy_merlin_challenge(&t, "c", c, 32);
	ck_assert(memcmp(base, c, 32) != 0);

	/* Same concatenation, another split between label and message. */
	engy_merlin_init(&t, "p");
	engy_merlin_append(&t, "la", "b", 1);
	engy_merlin_challenge(&t, "c", c, 32);
	ck_assert(memcmp(base, c, 32) != 0);

	/* The requested length is framed too: a prefix is not a shorter read. */
	engy_merlin_init(&t, "p");
	engy_merlin_append(&t, "l", "ab", 2);
	engy_merlin_challenge(&t, "c", c, 16);
	ck_assert(memcmp(base, c, 16) != 0);

	engy_merlin_init(&t, "p");
	engy_merlin_append(&t, "l", "ab", 2);
	engy_merlin_challenge(&t, "c", c, 32);
	ck_assert(memcmp(base, c, 32) == 0);
}
END_TEST

/* The witness RNG runs on a copy and depends on witness and rng bytes. */
START_TEST(test_merlin_witness)
{
	struct engy_merlin t, u;
	uint8_t rng[32], w1[64], w2[64], c1[32], c2[32];

	memset(rng, 7, sizeof(rng));
	engy_merlin_init(&t, "p");
	engy_merlin_append(&t, "l", "ab", 2);
	u = t;
	engy_merlin_witness_bytes(&t, "signing", "nonce", 5, rng, w1, 64);
	ck_assert(memcmp(&t, &u, sizeof(t)) == 0);
	engy_merlin_witness_bytes(&t, "signing", "nonce", 5, rng, w2, 64);
	ck_assert(memcmp(w1, w2, 64) == 0);
	rng[31] ^= 1;
	engy_merlin_witness_bytes(&t, "signing", "nonce", 5, rng, w2, 64);
	ck_assert(memcmp(w1, w2, 64) != 0);
	rng[31] ^= 1;
	engy_merlin_witness_bytes(&t, "signing", "nonc3", 5, rng, w2, 64);
	ck_assert(memcmp(w1, w2, 64) != 0);
	engy_merlin_challenge(&t, "c", c1, 32);
	engy_merlin_challenge(&u, "c", c2, 32);
	ck_assert(memcmp(c1, c2, 32) == 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("strobe_merlin");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_keccak_vs_openssl);
	tcase_add_test(tc, test_keccak_zero_state);
	tcase_add_test(tc, test_merlin_published_vector);
	tcase_add_test(tc, test_strobe_continuation);
	tcase_add_test(tc, test_merlin_binding);
	tcase_add_test(tc, test_merlin_witness);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
