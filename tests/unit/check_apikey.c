/* SPDX-License-Identifier: MIT */
/*
 * API and miner keys: the generated shape, uniqueness and an even spread
 * of characters, HMAC-SHA-256 against RFC 4231 and Python's hmac, the
 * pepper's effect, input bounds, constant-time equality, the shown part.
 *
 * Oracle: independent for HMAC-SHA-256 (RFC 4231's vectors, Python's
 * hmac); the key shape and spread are properties of engy's own output.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "apikey.h"

static void hash_hex(const uint8_t *pepper, size_t plen, const char *msg,
		     char hex[65])
{
	uint8_t h[ENGY_APIKEY_HASH_BYTES];

	ck_assert_int_eq(engy_apikey_hash(pepper, plen, msg, strlen(msg), h),
			 0);
	sodium_bin2hex(hex, 65, h, sizeof(h));
}

START_TEST(test_generate_shape)
{
	char k[ENGY_APIKEY_SIZE], m[ENGY_APIKEY_SIZE], small[ENGY_APIKEY_LEN];

	ck_assert_int_eq(engy_apikey_generate(ENGY_APIKEY_PREFIX, k, sizeof(k)),
			 0);
	ck_assert_uint_eq(strlen(k), 51);
	ck_assert(strncmp(k, "sk-engy-", 8) == 0);
	ck_assert(engy_apikey_well_formed(ENGY_APIKEY_PREFIX, k, strlen(k)));
	ck_assert(!engy_apikey_well_formed(ENGY_MINERKEY_PREFIX, k, strlen(k)));
	ck_assert_int_eq(
		engy_apikey_generate(ENGY_MINERKEY_PREFIX, m, sizeof(m)), 0);
	ck_assert(strncmp(m, "mk-engy-", 8) == 0);
	ck_assert(engy_apikey_well_formed(ENGY_MINERKEY_PREFIX, m, strlen(m)));
	/* Too small a buffer, a bad prefix. */
	ck_assert_int_eq(
		engy_apikey_generate(ENGY_APIKEY_PREFIX, small, sizeof(small)),
		-EINVAL);
	ck_assert_int_eq(engy_apikey_generate("sk-", k, sizeof(k)), -EINVAL);
	ck_assert_int_eq(engy_apikey_generate(NULL, k, sizeof(k)), -EINVAL);
}
END_TEST

START_TEST(test_well_formed)
{
	char k[ENGY_APIKEY_SIZE], t[ENGY_APIKEY_SIZE + 1];

	ck_assert_int_eq(engy_apikey_generate(ENGY_APIKEY_PREFIX, k, sizeof(k)),
			 0);
	ck_assert(!engy_apikey_well_formed(ENGY_APIKEY_PREFIX, k, 50));
	memcpy(t, k, sizeof(k));
	t[20] = '-';
	ck_assert(!engy_apikey_well_formed(ENGY_APIKEY_PREFIX, t, 51));
	t[20] = '\0';
	ck_assert(!engy_apikey_well_formed(ENGY_APIKEY_PREFIX, t, 51));
	memcpy(t, k, sizeof(k));
	t[0] = 'S';
	ck_assert(!engy_apikey_well_formed(ENGY_APIKEY_PREFIX, t, 51));
	ck_assert(!engy_apikey_well_formed(ENGY_APIKEY_PREFIX, NULL, 51));
	ck_assert(!engy_apikey_well_formed(ENGY_APIKEY_PREFIX, "", 0));
}
END_TEST

static int cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

START_TEST(test_unique_and_even)
{
	enum { N = 4000 };
	static char keys[N][ENGY_APIKEY_SIZE];
	unsigned count[128] = { 0 };
	size_t i, j, distinct = 0;
	double expect, chi = 0;

	for (i = 0; i < N; i++) {
		ck_assert_int_eq(engy_apikey_generate(ENGY_APIKEY_PREFIX,
						      keys[i],
						      ENGY_APIKEY_SIZE),
				 0);
		for (j = 8; j < ENGY_APIKEY_LEN; j++)
			count[(unsigned char)keys[i][j]]++;
	}
	qsort(keys, N, ENGY_APIKEY_SIZE, cmp_str);
	for (i = 1; i < N; i++)
		ck_assert_str_ne(keys[i - 1], keys[i]);
	/* Every base62 character shows up, about equally often. */
	expect = (double)N * ENGY_APIKEY_BODY / 62;
	for (i = 0; i < 128; i++) {
		double d = (double)count[i] - expect;

		if (!count[i])
			continue;
		distinct++;
		chi += d * d / expect;
	}
	ck_assert_uint_eq(distinct, 62);
	/* 61 degrees of freedom: p(chi2 > 120) is below 1e-5. */
	ck_assert_msg(chi < 120, "chi-square %.1f", chi);
}
END_TEST

START_TEST(test_hmac_vectors)
{
	uint8_t k1[20];
	char hex[65];

	memset(k1, 0x0b, sizeof(k1));
	hash_hex(k1, sizeof(k1), "Hi There", hex);
	ck_assert_str_eq(
		hex,
		"b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	hash_hex((const uint8_t *)"Jefe", 4, "what do ya want for nothing?",
		 hex);
	ck_assert_str_eq(
		hex,
		"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	/* No pepper: HMAC under the empty key (Python's hmac agrees). */
	hash_hex(NULL, 0, "sk-engy-test", hex);
	ck_assert_str_eq(
		hex,
		"a9341b4f289f1771978f87b647b12c520ab71faa39ec6e7e81d61a192ab00553");
	hash_hex((const uint8_t *)"pepper-0123456789abcdef", 23, "sk-engy-test",
		 hex);
	ck_assert_str_eq(
		hex,
		"d9f818d714a68147e6f9e5fed98296dee380c038ee26636d65edb87e7b9ff77d");
}
END_TEST

START_TEST(test_hash_bounds)
{
	static char big[ENGY_APIKEY_MAX_INPUT + 2];
	uint8_t h[ENGY_APIKEY_HASH_BYTES];

	memset(big, 'a', sizeof(big) - 1);
	ck_assert_int_eq(
		engy_apikey_hash(NULL, 0, big, ENGY_APIKEY_MAX_INPUT, h), 0);
	ck_assert_int_eq(
		engy_apikey_hash(NULL, 0, big, ENGY_APIKEY_MAX_INPUT + 1, h),
		-EINVAL);
	ck_assert_int_eq(engy_apikey_hash(NULL, 0, big, 0, h), -EINVAL);
	ck_assert_int_eq(engy_apikey_hash(NULL, 0, NULL, 3, h), -EINVAL);
	ck_assert_int_eq(engy_apikey_hash(NULL, 4, "abc", 3, h), -EINVAL);
}
END_TEST

START_TEST(test_hash_eq)
{
	uint8_t a[ENGY_APIKEY_HASH_BYTES], b[ENGY_APIKEY_HASH_BYTES];

	ck_assert_int_eq(engy_apikey_hash(NULL, 0, "k1", 2, a), 0);
	memcpy(b, a, sizeof(a));
	ck_assert(engy_apikey_hash_eq(a, b));
	b[0] ^= 1;
	ck_assert(!engy_apikey_hash_eq(a, b));
	b[0] ^= 1;
	b[31] ^= 0x80;
	ck_assert(!engy_apikey_hash_eq(a, b));
	/* A different pepper gives a different hash of the same key. */
	ck_assert_int_eq(engy_apikey_hash((const uint8_t *)"p", 1, "k1", 2, b),
			 0);
	ck_assert(!engy_apikey_hash_eq(a, b));
}
END_TEST

START_TEST(test_shown)
{
	char out[ENGY_APIKEY_SHOWN + 1];

	engy_apikey_shown("sk-engy-AbCdEfGh", out);
	ck_assert_str_eq(out, "sk-engy-AbCd");
	engy_apikey_shown("short", out);
	ck_assert_str_eq(out, "short");
	engy_apikey_shown(NULL, out);
	ck_assert_str_eq(out, "");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("apikey");
	TCase *tc = tcase_create("apikey");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_generate_shape);
	tcase_add_test(tc, test_well_formed);
	tcase_add_test(tc, test_unique_and_even);
	tcase_add_test(tc, test_hmac_vectors);
	tcase_add_test(tc, test_hash_bounds);
	tcase_add_test(tc, test_hash_eq);
	tcase_add_test(tc, test_shown);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
