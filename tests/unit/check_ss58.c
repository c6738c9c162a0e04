/* SPDX-License-Identifier: MIT */
/*
 * base58 (published vectors) and SS58 (the well-known dev and Alice
 * addresses), round trips over random accounts and every prefix, and each
 * kind of bad address.
 *
 * Oracle: independent: published base58 vectors and the well-known dev
 * addresses.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "sign_test.h"
#include "ss58.h"

static const struct {
	const char *hex, *b58;
} b58_vectors[] = {
	{ "", "" },
	{ "00", "1" },
	{ "0000", "11" },
	{ "61", "2g" },
	{ "626262", "a3gV" },
	{ "636363", "aPEr" },
	{ "48656c6c6f20576f726c6421", "2NEpo7TZRRrLZSi2U" },
	{ "0000287fb4cd", "11233QC4" },
	{ "00eb15231dfceb60925886b67d065299925915aeb172c06647",
	  "1NS17iag9jJgTHD1VXjvLCEnZuQ3rJDE9L" },
	{ "54686520717569636b2062726f776e20666f78206a756d7073206f76657220746865206c617a7920646f672e",
	  "USm3fpXnKG5EUBx2ndxBDMPVciP5hGey2Jh4NDv6gmeo1LkMeiKrLJUUBk6Z" },
};

START_TEST(test_base58_vectors)
{
	uint8_t in[64], out[64];
	char enc[128];
	size_t i, n, len;

	for (i = 0; i < sizeof(b58_vectors) / sizeof(b58_vectors[0]); i++) {
		n = strlen(b58_vectors[i].hex) / 2;
		unhex(in, n, b58_vectors[i].hex);
		ck_assert_int_eq(engy_base58_encode(enc, sizeof(enc), in, n),
				 (int)strlen(b58_vectors[i].b58));
		ck_assert_str_eq(enc, b58_vectors[i].b58);
		ck_assert_int_eq(engy_base58_decode(out, sizeof(out), &len, enc,
						    strlen(enc), NULL),
				 0);
		ck_assert_uint_eq(len, n);
		ck_assert(memcmp(in, out, n) == 0);
	}
}
END_TEST

START_TEST(test_base58_errors)
{
	uint8_t out[8];
	char enc[8];
	size_t len, at = 99;
	const uint8_t in[4] = { 1, 2, 3, 4 };

	ck_assert_int_eq(
		engy_base58_decode(out, sizeof(out), &len, "2g0", 3, &at),
		-EILSEQ);
	ck_assert_uint_eq(at, 2);
	ck_assert_int_eq(
		engy_base58_decode(out, sizeof(out), &len, "O", 1, &at),
		-EILSEQ);
	ck_assert_int_eq(
		engy_base58_decode(out, sizeof(out), &len, "I", 1, NULL),
		-EILSEQ);
	ck_assert_int_eq(
		engy_base58_decode(out, sizeof(out), &len, "l", 1, NULL),
		-EILSEQ);
	ck_assert_int_eq(
		engy_base58_decode(out, sizeof(out), &len, "a\0b", 3, NULL),
		-EILSEQ);
	ck_assert_int_eq(engy_base58_decode(out, 1, &len, "a3gV", 4, NULL),
			 -ENOSPC);
	ck_assert_int_eq(engy_base58_encode(enc, 3, in, sizeof(in)), -ENOSPC);
}
END_TEST

/* Dev key (specs/signing.md §7) and //Alice on three networks. */
START_TEST(test_known_addresses)
{
	static const struct {
		const char *pub, *addr;
		uint16_t prefix;
	} v[] = {
		{ "46ebddef8cd9bb167dc30878d7113b7e168e6f0646beffd77d69d39bad76b47a",
		  "5DfhGyQdFobKM8NsWvEeAKk5EQQgYe9AydgJ7rMB6E1EqRzV", 42 },
		{ "d43593c715fdd31c61141abd04a99fd6822c8558854ccde39a5684e7a56da27d",
		  "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY", 42 },
		{ "d43593c715fdd31c61141abd04a99fd6822c8558854ccde39a5684e7a56da27d",
		  "15oF4uVJwmo4TdGW7VfQxNLavjCXviqxT9S1MgbjMNHr6Sp5", 0 },
		{ "d43593c715fdd31c61141abd04a99fd6822c8558854ccde39a5684e7a56da27d",
		  "HNZata7iMYWmk5RvZRTiAsSDhV8366zq2YGb3tLH5Upf74F", 2 },
	};
	uint8_t pub[32], got[32];
	char addr[ENGY_SS58_ADDR_SIZE];
	uint16_t prefix;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		unhex(pub, 32, v[i].pub);
		ck_assert_int_eq(
			engy_ss58_encode(addr, sizeof(addr), pub, v[i].prefix),
			(int)strlen(v[i].addr));
		ck_assert_str_eq(addr, v[i].addr);
		ck_assert_int_eq(engy_ss58_decode(v[i].addr, got, &prefix), 0);
		ck_assert(memcmp(got, pub, 32) == 0);
		ck_assert_uint_eq(prefix, v[i].prefix);
	}
	ck_assert_uint_eq(strlen(v[0].addr), 48);
}
END_TEST

START_TEST(test_roundtrip_all_prefixes)
{
	uint8_t pub[32], got[32];
	char addr[ENGY_SS58_ADDR_SIZE];
	unsigned p;
	uint16_t prefix;
	int n;

	ck_assert_int_ge(sodium_init(), 0);
	for (p = 0; p <= ENGY_SS58_PREFIX_MAX; p += (p < 300 ? 1 : 97)) {
		randombytes_buf(pub, sizeof(pub));
		if (p % 5 == 0)
			memset(pub, p % 2 ? 0xff : 0, sizeof(pub));
		n = engy_ss58_encode(addr, sizeof(addr), pub, (uint16_t)p);
		if (p == 46 || p == 47) {
			ck_assert_int_eq(n, -EINVAL);
			continue;
		}
		ck_assert_int_gt(n, 0);
		ck_assert_int_lt(n, ENGY_SS58_ADDR_SIZE);
		ck_assert_int_eq(engy_ss58_decode(addr, got, &prefix), 0);
		ck_assert(memcmp(pub, got, 32) == 0);
		ck_assert_uint_eq(prefix, p);
		ck_assert_int_eq(
			engy_ss58_decode_prefix(addr, (uint16_t)p, got), 0);
	}
	ck_assert_int_eq(engy_ss58_encode(addr, sizeof(addr), pub,
					  ENGY_SS58_PREFIX_MAX + 1),
			 -EINVAL);
	ck_assert_int_eq(engy_ss58_encode(addr, 10, pub, 42), -ENOSPC);
}
END_TEST

/* Raw bytes with a correct checksum, base58-encoded (for odd prefixes). */
static void craft(char *addr, size_t cap, const uint8_t *raw, size_t n)
{
	crypto_generichash_state st;
	uint8_t buf[80], h[64];

	memcpy(buf, raw, n);
	crypto_generichash_init(&st, NULL, 0, 64);
	crypto_generichash_update(&st, (const uint8_t *)"SS58PRE", 7);
	crypto_generichash_update(&st, raw, n);
	crypto_generichash_final(&st, h, 64);
	buf[n] = h[0];
	buf[n + 1] = h[1];
	ck_assert_int_gt(engy_base58_encode(addr, cap, buf, n + 2), 0);
}

START_TEST(test_bad_addresses)
{
	const char *dev = "5DfhGyQdFobKM8NsWvEeAKk5EQQgYe9AydgJ7rMB6E1EqRzV";
	char a[256], polka[ENGY_SS58_ADDR_SIZE];
	uint8_t pub[32] = { 1 }, raw[40];
	size_t n = strlen(dev), i;

	/* Characters outside the alphabet, anywhere. */
	for (i = 0; i < n; i += 7) {
		strcpy(a, dev);
		a[i] = "0OIl+ "[i % 6];
		ck_assert_int_eq(engy_ss58_decode(a, NULL, NULL), -EILSEQ);
	}
	strcpy(a, dev);
	a[5] = (char)0xc3;
	ck_assert_int_eq(engy_ss58_decode(a, NULL, NULL), -EILSEQ);

	/* Checksum: the last digit changed, and two digits swapped. */
	strcpy(a, dev);
	a[n - 1] = a[n - 1] == 'V' ? 'W' : 'V';
	ck_assert_int_eq(engy_ss58_decode(a, NULL, NULL), -EBADMSG);
	strcpy(a, dev);
	a[20] = dev[21];
	a[21] = dev[20];
	ck_assert_int_eq(engy_ss58_decode(a, NULL, NULL), -EBADMSG);

	/* Lengths. */
	ck_assert_int_eq(engy_ss58_decode("", NULL, NULL), -EMSGSIZE);
	ck_assert_int_eq(engy_ss58_decode("1", NULL, NULL), -EMSGSIZE);
	strcpy(a, dev);
	a[n - 1] = '\0';
	ck_assert_int_eq(engy_ss58_decode(a, NULL, NULL), -EMSGSIZE);
	memset(a, 'z', 127);
	a[127] = '\0';
	ck_assert_int_eq(engy_ss58_decode(a, NULL, NULL), -EMSGSIZE);
	memset(a, 'z', 129);
	a[129] = '\0';
	ck_assert_int_eq(engy_ss58_decode(a, NULL, NULL), -EMSGSIZE);
	memset(raw, 7, sizeof(raw));
	raw[0] = 42;
	craft(a, sizeof(a), raw, 1 + 20); /* a 20-byte account */
	ck_assert_int_eq(engy_ss58_decode(a, NULL, NULL), -EMSGSIZE);

	/* Reserved prefixes 46 and 47, and a first byte of 128 or more. */
	raw[0] = 46;
	craft(a, sizeof(a), raw, 33);
	ck_assert_int_eq(engy_ss58_decode(a, NULL, NULL), -EINVAL);
	raw[0] = 0x80;
	craft(a, sizeof(a), raw, 33);
	ck_assert_int_eq(engy_ss58_decode(a, NULL, NULL), -EINVAL);

	/* A valid address of another network is not a bittensor one. */
	ck_assert_int_gt(engy_ss58_encode(polka, sizeof(polka), pub, 0), 0);
	ck_assert_int_eq(engy_ss58_decode(polka, NULL, NULL), 0);
	ck_assert_int_eq(engy_ss58_decode_prefix(
				 polka, ENGY_SS58_PREFIX_BITTENSOR, NULL),
			 -EPROTO);
	ck_assert_int_eq(
		engy_ss58_decode_prefix(dev, ENGY_SS58_PREFIX_BITTENSOR, NULL),
		0);
}
END_TEST

START_TEST(test_strerror)
{
	static const int codes[] = { -EILSEQ, -EMSGSIZE, -EINVAL, -EBADMSG,
				     -EPROTO };
	size_t i, j;

	for (i = 0; i < 5; i++)
		for (j = i + 1; j < 5; j++)
			ck_assert_str_ne(engy_ss58_strerror(codes[i]),
					 engy_ss58_strerror(codes[j]));
	ck_assert_ptr_nonnull(strstr(engy_ss58_strerror(-EBADMSG), "checksum"));
	ck_assert_ptr_nonnull(strstr(engy_ss58_strerror(-EPROTO), "prefix"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ss58");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_base58_vectors);
	tcase_add_test(tc, test_base58_errors);
	tcase_add_test(tc, test_known_addresses);
	tcase_add_test(tc, test_roundtrip_all_prefixes);
	tcase_add_test(tc, test_bad_addresses);
	tcase_add_test(tc, test_strerror);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
