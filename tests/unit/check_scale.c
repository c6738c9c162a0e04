/* SPDX-License-Identifier: MIT */
/*
 * SCALE: fixed-width and compact integers against parity-scale-codec's
 * encodings, refusal of non-canonical and oversized compacts, truncation,
 * the sticky error, hex; xxHash64/twox and blake2 against
 * @polkadot/util-crypto's values.
 *
 * Oracle: independent: parity-scale-codec's encodings and @polkadot/util-
 * crypto's hash values.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "chain_test.h"
#include "scale.h"
#include "xxhash.h"

static void compact_is(uint64_t v, const char *hex)
{
	struct engy_scale_buf b;
	struct engy_scale_rd r;
	uint64_t back;

	engy_scale_buf_init(&b);
	engy_scale_put_compact(&b, v);
	ck_assert_int_eq(b.err, 0);
	ck_bytes(b.p, b.len, hex);
	engy_scale_rd_init(&r, b.p, b.len);
	ck_assert_int_eq(engy_scale_compact(&r, &back), 0);
	ck_assert_uint_eq(back, v);
	ck_assert_uint_eq(engy_scale_left(&r), 0);
	engy_scale_buf_free(&b);
}

START_TEST(test_compact_vectors)
{
	compact_is(0, "00");
	compact_is(1, "04");
	compact_is(7, "1c");
	compact_is(63, "fc");
	compact_is(64, "0101");
	compact_is(229, "9503");
	compact_is(16383, "fdff");
	compact_is(16384, "02000100");
	compact_is(1073741823, "feffffff");
	compact_is(1073741824, "0300000040");
	compact_is(4294967295u, "03ffffffff");
	compact_is(4294967296ull, "070000000001");
	compact_is(UINT64_MAX, "13ffffffffffffffff");
}
END_TEST

static int decode(const char *hex, uint64_t *v)
{
	struct engy_scale_rd r;
	size_t n;
	uint8_t *p = unhex(hex, &n);
	int rc;

	engy_scale_rd_init(&r, p, n);
	rc = engy_scale_compact(&r, v);
	free(p);
	return rc;
}

START_TEST(test_compact_refusals)
{
	uint64_t v = 99;

	/* the same values written longer than needed */
	ck_assert_int_eq(decode("0100", &v), -EINVAL);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(decode("fd000000", &v), -EINVAL);
	ck_assert_int_eq(decode("03ffffff3f", &v), -EINVAL);
	ck_assert_int_eq(decode("070000ff0000", &v), -EINVAL);
	/* beyond u64, and zero padding past eight bytes */
	ck_assert_int_eq(decode("17000000000000000001", &v), -ERANGE);
	ck_assert_int_eq(decode("170000000000000000ff00", &v), -ERANGE);
	ck_assert_int_eq(decode("17ffffffffffffffff00", &v), -EINVAL);
	/* truncated */
	ck_assert_int_eq(decode("01", &v), -EMSGSIZE);
	ck_assert_int_eq(decode("020000", &v), -EMSGSIZE);
	ck_assert_int_eq(decode("", &v), -EMSGSIZE);
}
END_TEST

START_TEST(test_fixed_and_sticky)
{
	static const uint8_t in[] = { 0x35, 0x00, 0xff, 0xff, 0xff, 0x7f,
				      1,    2,	  3,	4,    5,    6,
				      7,    8,	  0x02, 0x01 };
	struct engy_scale_rd r;
	uint16_t a;
	uint32_t b;
	uint64_t c;
	uint8_t d;
	bool e;

	engy_scale_rd_init(&r, in, sizeof(in));
	ck_assert_int_eq(engy_scale_u16(&r, &a), 0);
	ck_assert_uint_eq(a, 53);
	ck_assert_int_eq(engy_scale_u32(&r, &b), 0);
	ck_assert_uint_eq(b, 0x7fffffff);
	ck_assert_int_eq(engy_scale_u64(&r, &c), 0);
	ck_assert_uint_eq(c, 0x0807060504030201ull);
	ck_assert_int_eq(engy_scale_bool(&r, &e), -EINVAL); /* 2 is no bool */
	ck_assert(!e);
	/* sticky: the next read fails the same way, output zeroed */
	ck_assert_int_eq(engy_scale_u8(&r, &d), -EINVAL);
	ck_assert_uint_eq(d, 0);
	ck_assert_uint_eq(engy_scale_left(&r), 0);

	engy_scale_rd_init(&r, in, 3);
	ck_assert_int_eq(engy_scale_u32(&r, &b), -EMSGSIZE);
	ck_assert_uint_eq(b, 0);
}
END_TEST

START_TEST(test_vec_and_bytes)
{
	static const uint8_t in[] = { 0x0c, 'a', 'b', 'c', 0x10, 'x' };
	struct engy_scale_buf b;
	struct engy_scale_rd r;
	const uint8_t *p;
	size_t n;

	engy_scale_rd_init(&r, in, sizeof(in));
	ck_assert_int_eq(engy_scale_vec(&r, &p, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert(memcmp(p, "abc", 3) == 0);
	/* a length past the end is refused before reading */
	ck_assert_int_eq(engy_scale_vec(&r, &p, &n), -EMSGSIZE);
	ck_assert_ptr_null(p);

	engy_scale_buf_init(&b);
	engy_scale_put_vec(&b, "abc", 3);
	engy_scale_put_u16(&b, 0xe5);
	engy_scale_put_u64(&b, 0);
	ck_bytes(b.p, b.len, "0c616263 e500 0000000000000000");
	engy_scale_buf_free(&b);
}
END_TEST

START_TEST(test_hex)
{
	uint8_t out[4];
	char txt[16];

	ck_assert_int_eq(engy_hex_decode(out, sizeof(out), "0xA0b1"), 2);
	ck_assert_uint_eq(out[0], 0xa0);
	ck_assert_uint_eq(out[1], 0xb1);
	ck_assert_int_eq(engy_hex_decode(out, sizeof(out), "abc"), -EINVAL);
	ck_assert_int_eq(engy_hex_decode(out, sizeof(out), "0xzz"), -EINVAL);
	ck_assert_int_eq(engy_hex_decode(out, sizeof(out), "0011223344"),
			 -ENOSPC);
	ck_assert_int_eq(engy_hex_decode(out, sizeof(out), "0x"), 0);
	engy_hex_encode(txt, out, 2);
	ck_assert_str_eq(txt, "0xa0b1");
}
END_TEST

/* A JSON-RPC quantity such as a header's block number. */
START_TEST(test_hex_quantity)
{
	static const char *const bad[] = {
		"0xzz",
		"0x",
		"",
		"12",
		"0x12 ",
		" 0x12",
		"0x-1",
		"0x+1",
		"0x1g",
		"0X12",
		"0x1ffffffffffffffff",
		"0x12\n",
	};
	uint64_t v = 77;
	size_t i;

	ck_assert_int_eq(engy_hex_quantity("0x0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(engy_hex_quantity("0x1a2B", &v), 0);
	ck_assert_uint_eq(v, 0x1a2b);
	ck_assert_int_eq(engy_hex_quantity("0xffffffffffffffff", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(engy_hex_quantity("0x00000000000000001", &v), 0);
	ck_assert_uint_eq(v, 1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 77;
		ck_assert_msg(engy_hex_quantity(bad[i], &v) == -EINVAL,
			      "\"%s\" accepted", bad[i]);
		ck_assert_uint_eq(v, 77);
	}
}
END_TEST

START_TEST(test_xxhash)
{
	uint8_t h[32];
	char x100[101];

	ck_assert_uint_eq(engy_xxh64("", 0, 0), 0xef46db3751d8e999ull);
	engy_twox64(h, "a", 1);
	ck_bytes(h, 8, "5b6e8ca9f1c44ed2");
	engy_twox128(h, "abc", 3);
	ck_bytes(h, 16, "990977adf52cbc440889329981caa9be");
	engy_twox128(h, "System", 6);
	ck_bytes(h, 16, "26aa394eea5630e07c48ae0c9558cef7");
	engy_twox128(h, "SubtensorModule", 15);
	ck_bytes(h, 16, "658faa385070e074c85bf6b568cf0555");
	engy_twox128(h, "Keys", 4);
	ck_bytes(h, 16, "9f99a2ce711f3a31b2fc05604c93f179");
	engy_twox256(h, "Keys", 4);
	ck_bytes(h, 32,
		 "9f99a2ce711f3a31b2fc05604c93f17925ddd9f73c582bba3b51e580865d8"
		 "963");
	/* past the 32-byte stripes */
	memset(x100, 'x', 100);
	engy_twox256(h, x100, 100);
	ck_bytes(h, 32,
		 "94c0a3885adef092aebda23f10ec7aa27efc30b6591e9607d845d2bdbda21"
		 "889");
	engy_blake2_128(h, "\x35\x00", 2);
	ck_bytes(h, 16, "9218dd940c438b32313c4c0f1d3f4151");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("scale");
	TCase *tc = tcase_create("codec");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_compact_vectors);
	tcase_add_test(tc, test_compact_refusals);
	tcase_add_test(tc, test_fixed_and_sticky);
	tcase_add_test(tc, test_vec_and_bytes);
	tcase_add_test(tc, test_hex);
	tcase_add_test(tc, test_hex_quantity);
	tcase_add_test(tc, test_xxhash);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
