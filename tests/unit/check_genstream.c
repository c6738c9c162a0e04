/* SPDX-License-Identifier: MIT */
/*
 * The streaming generation parser: random marker soups fed whole, in random
 * chunks and byte by byte must match the batch parse; deltas come out as
 * early as is safe (never a partial marker or UTF-8 character); a callback
 * can stop the stream; a finished stream refuses more input.
 *
 * Oracle: engy itself: the streaming parser against the batch parser on
 * random input (self-consistency); no expected values of its own.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "genparse.h"
#include "genparse_check.h"

/* Random texts built from the markers and the characters around them:
 * the stream, fed whole, byte by byte and in random chunks, must agree
 * with the batch parse every time. */
START_TEST(random_soup)
{
	static const char *const pieces[] = {
		"<think>",
		"</think>",
		"<tool_call>",
		"</tool_call>",
		"<function=f>",
		"<function=get_weather>",
		"</function>",
		"<parameter=days>",
		"<parameter=city>",
		"</parameter>",
		"<parameter=",
		"<function=",
		"<tool_",
		"</",
		"<",
		">",
		"\n",
		" ",
		"x",
		"42",
		"true",
		"null",
		"é",
		"😀",
		"{\"name\": \"f\", \"arguments\": {\"a\": 1}}",
		"{",
		"}",
		"\"",
		"\t",
		"\n\n",
		"<tool_call>\n<function=get_weather>\n",
		"<parameter=days>\n3\n</parameter>\n",
		"<tool_call>{\"name\": \"f\"}</tool_call>",
		"{\"name\": \"f\", \"arguments\": {\"a\": \"",
		"\\\"",
		"\\",
		"]",
	};
	const size_t np = sizeof(pieces) / sizeof(pieces[0]);
	uint64_t rng = 0x2545f4914f6cdd1dull;
	size_t iter, len, k, cuts[64], ncuts, calls = 0, reasoned = 0;
	const char *pc;
	char text[1024];

	for (iter = 0; iter < 3000; iter++) {
		struct engy_genparse_opts o = gp_opts(iter & 1, iter & 2);
		struct engy_gen_msg m;
		struct gp_coll c = { 0 };
		size_t n = 1 + iter % 40;

		len = 0;
		text[0] = '\0';
		for (k = 0; k < n; k++) {
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			pc = pieces[rng % np];

			if (len + strlen(pc) >= sizeof(text))
				break;
			memcpy(text + len, pc, strlen(pc) + 1);
			len += strlen(pc);
		}
		ck_assert_int_eq(engy_genparse(text, len, &o, &m), 0);
		gp_stream(text, len, &o, NULL, 0, &c);
		gp_expect_same(&c, &m, text);
		gp_coll_free(&c);
		ncuts = 0;
		for (k = 1; k < len && ncuts < 64;
		     k += 1 + (rng >> (k % 32)) % 9)
			cuts[ncuts++] = k;
		gp_stream(text, len, &o, cuts, ncuts, &c);
		gp_expect_same(&c, &m, text);
		gp_coll_free(&c);
		for (k = 0; k + 1 < len && k < 64; k++)
			cuts[k] = k + 1;
		if (len <= 65) {
			gp_stream(text, len, &o, cuts, len - 1, &c);
			gp_expect_same(&c, &m, text);
			gp_coll_free(&c);
		}
		calls += m.n_calls;
		reasoned += m.reasoning && m.reasoning_len;
		engy_gen_msg_free(&m);
	}
	/* The soup does reach calls and reasoning, not only plain text. */
	ck_assert_uint_gt(calls, 300);
	ck_assert_uint_gt(reasoned, 300);
}
END_TEST

/* ---- streaming specifics ---- */

START_TEST(stream_emits_early)
{
	struct engy_genparse_opts o = gp_opts(false, true);
	struct engy_genstream *s;
	struct gp_coll c = { 0 };
	const char *a = "<think>abc ";

	ck_assert_int_eq(engy_genstream_new(&o, gp_collect, &c, &s), 0);
	ck_assert_int_eq(engy_genstream_feed(s, a, strlen(a)), 0);
	ck_assert_str_eq(c.reasoning, "abc"); /* the space waits for more */
	ck_assert_int_eq(engy_genstream_feed(s, "d\n</thi", 7), 0);
	ck_assert_str_eq(c.reasoning, "abc d");
	ck_assert_int_eq(engy_genstream_feed(s, "nk>Hi <tool_ca", 14), 0);
	ck_assert_str_eq(c.content, "Hi"); /* never a partial marker */
	ck_assert_int_eq(
		engy_genstream_feed(s, "ll>\n<function=get_weather>\n", 27), 0);
	ck_assert_uint_eq(c.ncalls, 1);
	ck_assert_str_eq(c.call[0].name, "get_weather");
	ck_assert_int_eq(
		engy_genstream_feed(s, "<parameter=days>\n4\n</parameter>", 31),
		0);
	ck_assert_str_eq(c.call[0].args, "{\"days\": 4");
	ck_assert_int_eq(engy_genstream_feed(s, "\n</function>", 12), 0);
	ck_assert_str_eq(c.call[0].args, "{\"days\": 4}");
	ck_assert_int_eq(engy_genstream_finish(s), 0);
	ck_assert_str_eq(c.content, "Hi");
	/* Finished: more input or a second finish is refused. */
	ck_assert_int_eq(engy_genstream_feed(s, "x", 1), -EINVAL);
	ck_assert_int_eq(engy_genstream_finish(s), -EINVAL);
	engy_genstream_free(s);
	gp_coll_free(&c);
}
END_TEST

START_TEST(stream_utf8_held)
{
	struct engy_genparse_opts o = gp_opts(false, false);
	struct engy_genstream *s;
	struct gp_coll c = { 0 };
	const char *t = "a😀";

	ck_assert_int_eq(engy_genstream_new(&o, gp_collect, &c, &s), 0);
	ck_assert_int_eq(engy_genstream_feed(s, t, 3), 0);
	ck_assert_str_eq(c.content, "a");
	ck_assert_int_eq(engy_genstream_feed(s, t + 3, 2), 0);
	ck_assert_str_eq(c.content, "a😀");
	ck_assert_int_eq(engy_genstream_finish(s), 0);
	engy_genstream_free(s);
	gp_coll_free(&c);
}
END_TEST

static int stop_cb(void *arg, const struct engy_gen_delta *d)
{
	(*(int *)arg)++;
	return -ECANCELED;
}

START_TEST(stream_callback_stops)
{
	struct engy_genparse_opts o = gp_opts(false, false);
	struct engy_genstream *s;
	int calls = 0;

	ck_assert_int_eq(engy_genstream_new(&o, NULL, NULL, &s), -EINVAL);
	ck_assert_int_eq(engy_genstream_new(&o, stop_cb, &calls, &s), 0);
	ck_assert_int_eq(engy_genstream_feed(s, "hello world", 11), -ECANCELED);
	ck_assert_int_eq(engy_genstream_feed(s, "more", 4), -ECANCELED);
	ck_assert_int_eq(engy_genstream_finish(s), -ECANCELED);
	ck_assert_int_eq(calls, 1);
	engy_genstream_free(s);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("genstream");
	TCase *t = tcase_create("core");

	tcase_add_checked_fixture(t, gp_setup, gp_teardown);
	tcase_set_timeout(t, 120);
	tcase_add_test(t, random_soup);
	tcase_add_test(t, stream_emits_early);
	tcase_add_test(t, stream_utf8_held);
	tcase_add_test(t, stream_callback_stops);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
