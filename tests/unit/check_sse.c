/* SPDX-License-Identifier: MIT */
/*
 * The SSE splitter: framing rules, every split of the stream, no
 * buffering.
 *
 * Oracle: hand-written from the WHATWG server-sent events framing rules by
 * the test's author.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "sse.h"

#define MAX_EV 16

struct col {
	char ev[MAX_EV][256];
	size_t n;
	char cur[256];
	size_t curn;
	size_t data_calls;
	int stop_at; /* data callback fails on this call (1-based) */
};

static int on_data(void *arg, const char *p, size_t n)
{
	struct col *c = arg;

	ck_assert_uint_gt(n, 0);
	c->data_calls++;
	if (c->stop_at && (int)c->data_calls == c->stop_at)
		return -42;
	ck_assert_uint_lt(c->curn + n, sizeof(c->cur));
	memcpy(c->cur + c->curn, p, n);
	c->curn += n;
	c->cur[c->curn] = '\0';
	return 0;
}

static int on_event(void *arg)
{
	struct col *c = arg;

	ck_assert_uint_lt(c->n, MAX_EV);
	memcpy(c->ev[c->n++], c->cur, c->curn + 1);
	c->curn = 0;
	c->cur[0] = '\0';
	return 0;
}

static const struct engy_sse_cb cb = { on_data, on_event };

/* Feed @s cut at the offsets in @cuts (ascending), then end. */
static int run(const char *s, size_t len, const size_t *cuts, size_t ncuts,
	       struct col *c)
{
	struct engy_sse sse;
	size_t at = 0, i;

	memset(c, 0, sizeof(*c));
	engy_sse_init(&sse, &cb, c);
	for (i = 0; i <= ncuts; i++) {
		size_t to = i < ncuts ? cuts[i] : len;

		ck_assert_int_eq(engy_sse_feed(&sse, s + at, to - at), 0);
		at = to;
	}
	return engy_sse_end(&sse);
}

static void same(const struct col *a, const struct col *b)
{
	size_t i;

	ck_assert_uint_eq(a->n, b->n);
	for (i = 0; i < a->n; i++)
		ck_assert_str_eq(a->ev[i], b->ev[i]);
}

START_TEST(test_sglang_stream)
{
	static const char s[] = "data: {\"text\":\"a\"}\n\n"
				"data: {\"text\":\"ab\"}\n\n"
				"data: [DONE]\n\n";
	struct col c;

	ck_assert_int_eq(run(s, strlen(s), NULL, 0, &c), 0);
	ck_assert_uint_eq(c.n, 3);
	ck_assert_str_eq(c.ev[0], "{\"text\":\"a\"}");
	ck_assert_str_eq(c.ev[1], "{\"text\":\"ab\"}");
	ck_assert_str_eq(c.ev[2], "[DONE]");
}
END_TEST

/* Every framing rule in one stream. */
static const char tricky[] =
	"\xef\xbb\xbf" /* BOM */
	": a comment\r\n"
	"event: message\r\n"
	"id: 7\r\n"
	"data:no space\r\n"
	"data:  two spaces\r\n" /* only the first space goes */
	"\r\n"
	"retry: 10\n"
	"data\n" /* no colon: an empty data line */
	"data: x\n"
	"\n"
	"dat: not data\r"
	"datas: nor this\r"
	"data: cr ends\r"
	"\r"
	"\n\n\n" /* blank lines without data */
	"data: last:with:colons\n"
	"\n"
	"data: cut"; /* never closed: dropped */

static const char *const tricky_ev[] = {
	"no space\n two spaces",
	"\nx",
	"cr ends",
	"last:with:colons",
};

START_TEST(test_framing_rules)
{
	struct col c;
	size_t i;

	ck_assert_int_eq(run(tricky, strlen(tricky), NULL, 0, &c), 1);
	ck_assert_uint_eq(c.n, 4);
	for (i = 0; i < 4; i++)
		ck_assert_str_eq(c.ev[i], tricky_ev[i]);
}
END_TEST

/* Any one cut, any two cuts, and one byte at a time give the same events. */
START_TEST(test_every_split)
{
	size_t len = strlen(tricky), i, k, cuts[2];
	struct col whole, c;
	size_t *all;

	ck_assert_int_eq(run(tricky, len, NULL, 0, &whole), 1);
	for (i = 0; i <= len; i++) {
		cuts[0] = i;
		ck_assert_int_eq(run(tricky, len, cuts, 1, &c), 1);
		same(&whole, &c);
		for (k = i; k <= len; k++) {
			cuts[1] = k;
			ck_assert_int_eq(run(tricky, len, cuts, 2, &c), 1);
			same(&whole, &c);
		}
	}
	all = malloc(len * sizeof(*all));
	ck_assert_ptr_nonnull(all);
	for (i = 0; i < len; i++)
		all[i] = i;
	ck_assert_int_eq(run(tricky, len, all, len, &c), 1);
	same(&whole, &c);
	free(all);
}
END_TEST

/* A BOM cut short is not a BOM: that line is a field we skip. */
START_TEST(test_broken_bom)
{
	static const char s[] = "\xef\xbb"
				"data: a\n\ndata: b\n\n";
	struct col c;

	ck_assert_int_eq(run(s, strlen(s), NULL, 0, &c), 0);
	ck_assert_uint_eq(c.n, 1);
	ck_assert_str_eq(c.ev[0], "b");
}
END_TEST

/* Data leaves in the same feed it came in: nothing waits for the line end. */
START_TEST(test_no_buffering)
{
	struct engy_sse sse;
	struct col c;

	memset(&c, 0, sizeof(c));
	engy_sse_init(&sse, &cb, &c);
	ck_assert_int_eq(engy_sse_feed(&sse, "data: {\"hidden", 14), 0);
	ck_assert_str_eq(c.cur, "{\"hidden");
	ck_assert_int_eq(engy_sse_feed(&sse, "_states\":[1]", 12), 0);
	ck_assert_str_eq(c.cur, "{\"hidden_states\":[1]");
	ck_assert_uint_eq(c.n, 0);
	ck_assert_int_eq(engy_sse_feed(&sse, "}\n\n", 3), 0);
	ck_assert_uint_eq(c.n, 1);
	ck_assert_uint_eq(c.data_calls, 3);
	ck_assert_int_eq(engy_sse_end(&sse), 0);
}
END_TEST

static int count_data(void *arg, const char *p, size_t n)
{
	size_t *total = arg;

	*total += n;
	return 0;
}

/* A 64 MB event fed 4 KB at a time: one data call per feed. */
START_TEST(test_huge_event)
{
	static const struct engy_sse_cb ccb = { count_data, NULL };
	size_t total = 0, i, chunk = 4096, n = (size_t)64 << 20;
	struct engy_sse sse;
	char *buf = malloc(chunk);

	ck_assert_ptr_nonnull(buf);
	memset(buf, '7', chunk);
	engy_sse_init(&sse, &ccb, &total);
	ck_assert_int_eq(engy_sse_feed(&sse, "data: ", 6), 0);
	for (i = 0; i < n / chunk; i++)
		ck_assert_int_eq(engy_sse_feed(&sse, buf, chunk), 0);
	ck_assert_int_eq(engy_sse_feed(&sse, "\n\n", 2), 0);
	ck_assert_uint_eq(total, n);
	ck_assert_int_eq(engy_sse_end(&sse), 0);
	free(buf);
}
END_TEST

START_TEST(test_callback_stops)
{
	static const char s[] = "data: a\n\ndata: b\n\ndata: c\n\n";
	struct engy_sse sse;
	struct col c;

	memset(&c, 0, sizeof(c));
	c.stop_at = 2;
	engy_sse_init(&sse, &cb, &c);
	ck_assert_int_eq(engy_sse_feed(&sse, s, strlen(s)), -42);
	ck_assert_uint_eq(c.n, 1);
	/* Sticky: nothing more is called. */
	ck_assert_int_eq(engy_sse_feed(&sse, s, strlen(s)), -42);
	ck_assert_uint_eq(c.data_calls, 2);
	ck_assert_int_eq(engy_sse_end(&sse), -42);
}
END_TEST

START_TEST(test_end_states)
{
	struct col c;

	ck_assert_int_eq(run("", 0, NULL, 0, &c), 0);
	ck_assert_int_eq(run("data: a\n", 8, NULL, 0, &c), 1);
	ck_assert_uint_eq(c.n, 0);
	ck_assert_int_eq(run("data", 4, NULL, 0, &c), 1);
	ck_assert_int_eq(run("id: 1", 5, NULL, 0, &c), 0);
	ck_assert_int_eq(run("data: a\n\n", 9, NULL, 0, &c), 0);
	ck_assert_uint_eq(c.n, 1);
}
END_TEST

static Suite *sse_suite(void)
{
	Suite *s = suite_create("sse");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_sglang_stream);
	tcase_add_test(tc, test_framing_rules);
	tcase_add_test(tc, test_every_split);
	tcase_add_test(tc, test_broken_bom);
	tcase_add_test(tc, test_no_buffering);
	tcase_add_test(tc, test_huge_event);
	tcase_add_test(tc, test_callback_stops);
	tcase_add_test(tc, test_end_states);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sse_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
