/* SPDX-License-Identifier: MIT */
/*
 * Oracle: hand-written expected markup (HTML escaping rules) by the test's
 * author; no outside peer.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"

START_TEST(test_escape_hostile)
{
	const char *in = "<script>alert(\"x\")</script>'&\x01\x7f\tok\n";
	const char *want = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
			   "&#39;&amp;&#xFFFD;&#xFFFD;\tok\n";
	char out[256];

	ck_assert_uint_eq(engy_html_escape(out, sizeof(out), in), strlen(want));
	ck_assert_str_eq(out, want);
	ck_assert_uint_eq(engy_html_escape(NULL, 0, in), strlen(want));
	ck_assert_uint_eq(engy_html_escape(out, sizeof(out), ""), 0);
	ck_assert_str_eq(out, "");
	/* UTF-8 passes through untouched */
	ck_assert_uint_eq(engy_html_escape(out, sizeof(out), "caf\xc3\xa9"), 5);
	ck_assert_str_eq(out, "caf\xc3\xa9");
}
END_TEST

START_TEST(test_escape_truncates_whole_entities)
{
	char out[8];

	/* "a&lt;" fits in 6 bytes with its NUL; "&gt;" would not */
	memset(out, 'X', sizeof(out));
	ck_assert_uint_eq(engy_html_escape(out, 7, "a<>"), 9);
	ck_assert_str_eq(out, "a&lt;");
	ck_assert_uint_eq(engy_html_escape(out, 1, "<"), 4);
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_builder)
{
	struct engy_html h = { 0 };
	size_t len;
	char *p;
	int i;

	engy_html_raw(&h, "<td title=\"");
	engy_html_text(&h, "\" onmouseover=\"x");
	engy_html_raw(&h, "\">");
	engy_html_printf(&h, "%d/%s", 42, "x");
	engy_html_text(&h, NULL);
	engy_html_raw(&h, "</td>");
	p = engy_html_take(&h, &len);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p,
			 "<td title=\"&quot; onmouseover=&quot;x\">42/x</td>");
	ck_assert_uint_eq(len, strlen(p));
	ck_assert_ptr_null(h.p);
	free(p);
	/* growing past the first allocation keeps every byte */
	for (i = 0; i < 5000; i++)
		engy_html_text(&h, "<>");
	p = engy_html_take(&h, &len);
	ck_assert_uint_eq(len, 5000 * 8);
	ck_assert(!strncmp(p + len - 8, "&lt;&gt;", 8));
	free(p);
	/* an empty page is "" */
	p = engy_html_take(&h, &len);
	ck_assert_str_eq(p, "");
	ck_assert_uint_eq(len, 0);
	free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("html");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_escape_hostile);
	tcase_add_test(tc, test_escape_truncates_whole_entities);
	tcase_add_test(tc, test_builder);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
