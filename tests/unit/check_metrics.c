/* SPDX-License-Identifier: MIT */
/*
 * Metrics registry and its Prometheus text rendering.
 *
 * Oracle: hand-written expected Prometheus text (the exposition format) by
 * the test's author; no outside parser is run (Debian's prometheus package
 * ships promtool, which could check it).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

START_TEST(test_render)
{
	static const double b[] = { 0.1, 1, 10 };
	struct engy_metrics *r;
	struct engy_metric *c, *c2, *g, *h, *again;
	char *text;

	ck_assert_int_eq(engy_metrics_new(&r), 0);
	ck_assert_int_eq(engy_metrics_get(r, ENGY_METRIC_COUNTER, "req_total",
					  "Requests\nby status",
					  "status=\"200\"", NULL, 0, &c),
			 0);
	ck_assert_int_eq(engy_metrics_get(r, ENGY_METRIC_COUNTER, "req_total",
					  "Requests\nby status",
					  "status=\"502\"", NULL, 0, &c2),
			 0);
	ck_assert_int_eq(engy_metrics_get(r, ENGY_METRIC_COUNTER, "req_total",
					  "Requests\nby status",
					  "status=\"200\"", NULL, 0, &again),
			 0);
	ck_assert_ptr_eq(c, again);
	ck_assert_int_eq(engy_metrics_get(r, ENGY_METRIC_GAUGE, "workers", NULL,
					  NULL, NULL, 0, &g),
			 0);
	ck_assert_int_eq(engy_metrics_get(r, ENGY_METRIC_HISTOGRAM,
					  "ttft_seconds", "TTFT", NULL, b, 3,
					  &h),
			 0);
	engy_metric_add(c, 2);
	engy_metric_add(c, 1);
	engy_metric_add(c2, 1);
	engy_metric_set(g, 4);
	engy_metric_observe(h, 0.05);
	engy_metric_observe(h, 0.5);
	engy_metric_observe(h, 0.7);
	engy_metric_observe(h, 100);
	ck_assert(engy_metric_value(c) == 3);
	text = engy_metrics_render(r);
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(
		strstr(text, "# HELP req_total Requests\\nby status\n"));
	ck_assert_ptr_nonnull(strstr(text, "# TYPE req_total counter\n"));
	ck_assert_ptr_nonnull(strstr(text, "req_total{status=\"200\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(text, "req_total{status=\"502\"} 1\n"));
	ck_assert_ptr_nonnull(
		strstr(text, "# TYPE workers gauge\nworkers 4\n"));
	/* Buckets are cumulative; +Inf counts everything. */
	ck_assert_ptr_nonnull(strstr(
		text, "ttft_seconds_bucket{le=\"0.10000000000000001\"} 1\n"));
	ck_assert_ptr_nonnull(
		strstr(text, "ttft_seconds_bucket{le=\"1\"} 3\n"));
	ck_assert_ptr_nonnull(
		strstr(text, "ttft_seconds_bucket{le=\"10\"} 3\n"));
	ck_assert_ptr_nonnull(
		strstr(text, "ttft_seconds_bucket{le=\"+Inf\"} 4\n"));
	ck_assert_ptr_nonnull(strstr(text, "ttft_seconds_count 4\n"));
	ck_assert_ptr_nonnull(strstr(text, "ttft_seconds_sum 101.25\n"));
	free(text);
	engy_metrics_free(r);
}
END_TEST

START_TEST(test_invalid)
{
	static const double bad[] = { 1, 1 };
	struct engy_metrics *r;
	struct engy_metric *m;

	ck_assert_int_eq(engy_metrics_new(&r), 0);
	ck_assert_int_eq(engy_metrics_get(r, ENGY_METRIC_GAUGE, "9lives", NULL,
					  NULL, NULL, 0, &m),
			 -EINVAL);
	ck_assert_int_eq(engy_metrics_get(r, ENGY_METRIC_GAUGE, "a-b", NULL,
					  NULL, NULL, 0, &m),
			 -EINVAL);
	ck_assert_int_eq(engy_metrics_get(r, ENGY_METRIC_GAUGE, "ok", NULL,
					  "k=unquoted", NULL, 0, &m),
			 -EINVAL);
	ck_assert_int_eq(engy_metrics_get(r, ENGY_METRIC_GAUGE, "ok", NULL,
					  "k=\"v\"x", NULL, 0, &m),
			 -EINVAL);
	ck_assert_int_eq(engy_metrics_get(r, ENGY_METRIC_HISTOGRAM, "h", NULL,
					  NULL, bad, 2, &m),
			 -EINVAL);
	ck_assert_int_eq(engy_metrics_get(r, ENGY_METRIC_GAUGE, "ok", NULL,
					  "a=\"1\",b=\"x\\\"y\"", NULL, 0, &m),
			 0);
	/* The same name with another type is a conflict, not a new family. */
	ck_assert_int_eq(engy_metrics_get(r, ENGY_METRIC_COUNTER, "ok", NULL,
					  NULL, NULL, 0, &m),
			 -EEXIST);
	engy_metrics_free(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_render);
	tcase_add_test(tc, test_invalid);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
