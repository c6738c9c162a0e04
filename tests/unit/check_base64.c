/* SPDX-License-Identifier: MIT */
/*
 * Oracle: independent: RFC 4648 §10's published vectors.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"

/* RFC 4648 §10 test vectors. */
static const struct {
	const char *in, *out;
} rfc[] = {
	{ "", "" },
	{ "f", "Zg==" },
	{ "fo", "Zm8=" },
	{ "foo", "Zm9v" },
	{ "foob", "Zm9vYg==" },
	{ "fooba", "Zm9vYmE=" },
	{ "foobar", "Zm9vYmFy" },
};

START_TEST(test_rfc_vectors)
{
	char enc[16];
	uint8_t dec[16];
	size_t n, i;

	for (i = 0; i < sizeof(rfc) / sizeof(rfc[0]); i++) {
		n = engy_base64_encode(enc, (const uint8_t *)rfc[i].in,
				       strlen(rfc[i].in));
		ck_assert_str_eq(enc, rfc[i].out);
		ck_assert_uint_eq(n, strlen(rfc[i].out));
		ck_assert_uint_eq(engy_base64_enc_len(strlen(rfc[i].in)), n);
		ck_assert_int_eq(engy_base64_decode(dec, sizeof(dec),
						    rfc[i].out,
						    strlen(rfc[i].out), &n),
				 0);
		ck_assert_uint_eq(n, strlen(rfc[i].in));
		ck_assert(memcmp(dec, rfc[i].in, n) == 0);
	}
}
END_TEST

/* Every byte value and both non-letter symbols survive a round trip. */
START_TEST(test_roundtrip_all_lengths)
{
	uint8_t src[300], dec[300];
	char enc[410];
	size_t len, i, n;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 151 + 7);
	for (len = 0; len <= sizeof(src); len++) {
		engy_base64_encode(enc, src, len);
		ck_assert_int_eq(
			engy_base64_decode(dec, len, enc, strlen(enc), &n), 0);
		ck_assert_uint_eq(n, len);
		ck_assert(memcmp(src, dec, len) == 0);
	}
	/* 0xfb 0xff encodes with both '+' and '/'. */
	engy_base64_encode(enc, (const uint8_t *)"\xfb\xff\xbf", 3);
	ck_assert_str_eq(enc, "+/+/");
}
END_TEST

static int dec(const char *s, size_t cap)
{
	uint8_t out[64];
	size_t n = 99;
	int rc = engy_base64_decode(out, cap, s, strlen(s), &n);

	if (rc)
		ck_assert_uint_eq(n, 0);
	return rc;
}

START_TEST(test_strict_rejects)
{
	ck_assert_int_eq(dec("Zg=", 64), -EINVAL);  /* length % 4 */
	ck_assert_int_eq(dec("Zg", 64), -EINVAL);   /* unpadded */
	ck_assert_int_eq(dec("Zh==", 64), -EINVAL); /* stray low bits */
	ck_assert_int_eq(dec("Zm9=", 64), -EINVAL); /* stray low bits */
	ck_assert_int_eq(dec("Z===", 64), -EINVAL); /* too much padding */
	ck_assert_int_eq(dec("====", 64), -EINVAL);
	ck_assert_int_eq(dec("Zg==Zg==", 64), -EINVAL); /* padding inside */
	ck_assert_int_eq(dec("Zm 9v", 64), -EINVAL);
	ck_assert_int_eq(dec("Zm9v\n", 64), -EINVAL);
	ck_assert_int_eq(dec("Zm-_", 64), -EINVAL); /* url alphabet */
	ck_assert_int_eq(dec("Zm9v", 2), -ENOSPC);
	ck_assert_int_eq(dec("Zm8=", 2), 0);
	ck_assert_int_eq(dec("Zm9vYg==", 3), -ENOSPC);
}
END_TEST

/* A NUL inside the counted length is not an alphabet character. */
START_TEST(test_embedded_nul)
{
	uint8_t out[8];
	size_t n;

	ck_assert_int_eq(engy_base64_decode(out, sizeof(out), "Zm\0v", 4, &n),
			 -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("base64");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_rfc_vectors);
	tcase_add_test(tc, test_roundtrip_all_lengths);
	tcase_add_test(tc, test_strict_rejects);
	tcase_add_test(tc, test_embedded_nul);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
