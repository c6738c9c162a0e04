/* SPDX-License-Identifier: MIT */
/*
 * Billing arithmetic: hand-worked vectors (rounding up, the cached
 * discount, zero tokens, the caps), a randomized comparison with a plain
 * 128-bit computation, reservations never below the later cost, and the
 * dollar text parser and formatter.
 *
 * Oracle: independent of the code under test: vectors worked by hand from
 * specs/store.md §2, and a plain 128-bit computation written in the test.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "billing.h"

/* $0.15 / $0.075 / $0.60 per 1M tokens. */
static const struct engy_price_card card = { 150000, 75000, 600000 };

static int64_t cost_of(const struct engy_price_card *c, uint64_t p,
		       uint64_t cached, uint64_t out)
{
	int64_t v = -1;

	ck_assert_int_eq(engy_billing_cost(c, p, cached, out, &v), 0);
	return v;
}

START_TEST(test_vectors)
{
	/* 1000 * 0.15 + 500 * 0.60 = 450 µUSD, exact. */
	ck_assert_int_eq(cost_of(&card, 1000, 0, 500), 450);
	/* 600 * 0.15 + 400 * 0.075 + 500 * 0.60 = 420: the cached discount. */
	ck_assert_int_eq(cost_of(&card, 1000, 400, 500), 420);
	/* All cached. */
	ck_assert_int_eq(cost_of(&card, 1000, 1000, 500), 375);
	/* 0.15 + 0.60 = 0.75 µUSD rounds up to 1. */
	ck_assert_int_eq(cost_of(&card, 1, 0, 1), 1);
	/* 150000 + 0.6 rounds up once, on the sum. */
	ck_assert_int_eq(cost_of(&card, 1000000, 0, 1), 150001);
	/* 3 * 1.234567 = 3.703701 -> 4 (a rate above 1 µUSD per token). */
	{
		struct engy_price_card c = { 0, 0, 1234567 };

		ck_assert_int_eq(cost_of(&c, 0, 0, 3), 4);
	}
	/* Rounding is on the sum, not per part: 0.5 + 0.5 = 1, not 2. */
	{
		struct engy_price_card c = { 500000, 0, 500000 };

		ck_assert_int_eq(cost_of(&c, 1, 0, 1), 1);
	}
}
END_TEST

START_TEST(test_zero)
{
	struct engy_price_card free_card = { 0, 0, 0 };

	/* Zero-completion insurance: no output, no charge. */
	ck_assert_int_eq(cost_of(&card, 5000, 100, 0), 0);
	ck_assert_int_eq(cost_of(&card, 0, 0, 0), 0);
	/* A completion without a prompt still costs. */
	ck_assert_int_eq(cost_of(&card, 0, 0, 1), 1);
	/* A free model is free. */
	ck_assert_int_eq(cost_of(&free_card, 100000, 0, 100000), 0);
}
END_TEST

START_TEST(test_bad_input)
{
	struct engy_price_card c = card;
	int64_t v = 77;

	ck_assert_int_eq(engy_billing_cost(&card, 10, 11, 1, &v), -EINVAL);
	ck_assert_int_eq(engy_billing_cost(NULL, 10, 0, 1, &v), -EINVAL);
	ck_assert_int_eq(engy_billing_cost(&card, 10, 0, 1, NULL), -EINVAL);
	ck_assert_int_eq(
		engy_billing_cost(&card, ENGY_TOKENS_MAX + 1, 0, 1, &v),
		-EINVAL);
	ck_assert_int_eq(
		engy_billing_cost(&card, 1, 0, ENGY_TOKENS_MAX + 1, &v),
		-EINVAL);
	c.input = -1;
	ck_assert_int_eq(engy_billing_cost(&c, 1, 0, 1, &v), -EINVAL);
	ck_assert_int_eq(engy_price_card_check(&c), -EINVAL);
	c = card;
	c.output = ENGY_PRICE_MAX + 1;
	ck_assert_int_eq(engy_billing_cost(&c, 1, 0, 1, &v), -EINVAL);
	c = card;
	c.cached_input = ENGY_PRICE_MAX + 1;
	ck_assert_int_eq(engy_price_card_check(&c), -EINVAL);
	ck_assert_int_eq(engy_billing_reserve(&c, 1, 1, &v), -EINVAL);
	ck_assert_int_eq(v, 77);
}
END_TEST

START_TEST(test_overflow)
{
	struct engy_price_card c = { ENGY_PRICE_MAX, ENGY_PRICE_MAX,
				     ENGY_PRICE_MAX };
	int64_t v = 0;

	/* $1 a token: 1e9 tokens is exactly the money cap, one more is not. */
	ck_assert_int_eq(engy_billing_cost(&c, 0, 0, 1000000000, &v), 0);
	ck_assert_int_eq(v, ENGY_MONEY_MAX);
	ck_assert_int_eq(engy_billing_cost(&c, 1, 0, 1000000000, &v),
			 -EOVERFLOW);
	/* The largest counts at the largest rates: no wrap, a clear error. */
	ck_assert_int_eq(
		engy_billing_cost(&c, ENGY_TOKENS_MAX, 7, ENGY_TOKENS_MAX, &v),
		-EOVERFLOW);
	ck_assert_int_eq(
		engy_billing_reserve(&c, ENGY_TOKENS_MAX, ENGY_TOKENS_MAX, &v),
		-EOVERFLOW);
}
END_TEST

/* The plain way, with 128-bit integers. */
static int64_t ref_cost(const struct engy_price_card *c, uint64_t p,
			uint64_t cached, uint64_t out)
{
	unsigned __int128 n;

	if (!out)
		return 0;
	n = (unsigned __int128)(p - cached) * (uint64_t)c->input +
	    (unsigned __int128)cached * (uint64_t)c->cached_input +
	    (unsigned __int128)out * (uint64_t)c->output;
	return (int64_t)((n + 999999) / 1000000);
}

static uint64_t rnd(uint64_t max)
{
	uint64_t v = ((uint64_t)random() << 31) ^ (uint64_t)random();

	return max ? v % (max + 1) : 0;
}

START_TEST(test_random_against_reference)
{
	int i;

	srandom(53);
	for (i = 0; i < 200000; i++) {
		struct engy_price_card c = {
			(int64_t)rnd(i & 1 ? 10000000 : 100000000000ll),
			(int64_t)rnd(i & 2 ? 10000000 : 100000000000ll),
			(int64_t)rnd(i & 4 ? 10000000 : 100000000000ll),
		};
		uint64_t p = rnd(i & 8 ? 300000 : 5000000);
		uint64_t cached = rnd(p);
		uint64_t out = rnd(i & 16 ? 40000 : 5000000);
		int64_t want = ref_cost(&c, p, cached, out), got = -1, res = -1;
		int rc = engy_billing_cost(&c, p, cached, out, &got);

		if (want > ENGY_MONEY_MAX) {
			ck_assert_int_eq(rc, -EOVERFLOW);
			continue;
		}
		ck_assert_int_eq(rc, 0);
		ck_assert_int_eq(got, want);
		/* A reservation covers any request within its bounds. */
		if (engy_billing_reserve(&c, p, out, &res) == 0)
			ck_assert_int_ge(res, got);
	}
}
END_TEST

START_TEST(test_reserve)
{
	struct engy_price_card dear_cache = { 100, 200, 1000 };
	int64_t v = 0;

	ck_assert_int_eq(engy_billing_reserve(&card, 1000, 500, &v), 0);
	ck_assert_int_eq(v, 450);
	/* Rounded up like a cost. */
	ck_assert_int_eq(engy_billing_reserve(&card, 1, 1, &v), 0);
	ck_assert_int_eq(v, 1);
	/* Bytes as the prompt bound: 4096 * 0.15 + 256 * 0.60 = 768.0. */
	ck_assert_int_eq(engy_billing_reserve(&card, 4096, 256, &v), 0);
	ck_assert_int_eq(v, 768);
	/* A cache rate above the input rate is what the bound uses. */
	ck_assert_int_eq(engy_billing_reserve(&dear_cache, 1000000, 0, &v), 0);
	ck_assert_int_eq(v, 200);
	ck_assert_int_eq(cost_of(&dear_cache, 1000000, 1000000, 1), 201);
}
END_TEST

START_TEST(test_money_parse)
{
	static const struct {
		const char *s;
		int rc;
		int64_t v;
	} t[] = {
		{ "12", 0, 12000000 },
		{ "12.5", 0, 12500000 },
		{ "0.000001", 0, 1 },
		{ "007.25", 0, 7250000 },
		{ "0", 0, 0 },
		{ "1000000000", 0, 1000000000000000ll },
		{ "1000000000.000001", -ERANGE, 0 },
		{ "99999999999999999999999999", -ERANGE, 0 },
		{ "0.0000001", -EINVAL, 0 },
		{ "", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "+1", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "1 ", -EINVAL, 0 },
		{ "1e3", -EINVAL, 0 },
		{ "1.", -EINVAL, 0 },
		{ ".5", -EINVAL, 0 },
		{ "1.2.3", -EINVAL, 0 },
		{ "1,5", -EINVAL, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int64_t v = -7;
		int rc = engy_money_parse(t[i].s, &v);

		ck_assert_msg(rc == t[i].rc, "'%s': rc %d, want %d", t[i].s, rc,
			      t[i].rc);
		ck_assert_int_eq(v, rc ? -7 : t[i].v);
	}
	ck_assert_int_eq(engy_money_parse(NULL, NULL), -EINVAL);
}
END_TEST

START_TEST(test_money_format)
{
	char buf[32];

	engy_money_format(buf, sizeof(buf), 12500000);
	ck_assert_str_eq(buf, "12.500000");
	engy_money_format(buf, sizeof(buf), -150);
	ck_assert_str_eq(buf, "-0.000150");
	engy_money_format(buf, sizeof(buf), 0);
	ck_assert_str_eq(buf, "0.000000");
	engy_money_format(buf, sizeof(buf), INT64_MIN);
	ck_assert_str_eq(buf, "-9223372036854.775808");
	engy_money_format(buf, sizeof(buf), INT64_MAX);
	ck_assert_str_eq(buf, "9223372036854.775807");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("billing");
	TCase *tc = tcase_create("billing");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_vectors);
	tcase_add_test(tc, test_zero);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_overflow);
	tcase_add_test(tc, test_random_against_reference);
	tcase_add_test(tc, test_reserve);
	tcase_add_test(tc, test_money_parse);
	tcase_add_test(tc, test_money_format);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
