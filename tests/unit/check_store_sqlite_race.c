/* SPDX-License-Identifier: MIT */
/*
 * store-sqlite under concurrency, on a real database file: the
 * conformance race cases every store passes (store_conformance.c: the
 * spend race over two instances, churn with a concurrent reader, crash
 * recovery), and the throughput of reserve + settle pairs at each
 * synchronous setting (printed, with a loose floor).
 *
 * Oracle: invariants (balance = credited - spent, reserved = open holds,
 * no negative balance) under concurrency; no expected values from engy.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_sqlite_engine.h"

static double rate(const char *sync, int threads)
{
	const char *over[] = { sync, NULL };
	char file[64];

	snprintf(file, sizeof(file), "%s-%d.db", sync + 12, threads);
	return st_pairs_rate(file, over, threads);
}

START_TEST(test_throughput)
{
	st_engine->setup();
	ck_assert(rate("synchronous=full", 1) > 5);
	ck_assert(rate("synchronous=normal", 1) > 5);
	ck_assert(rate("synchronous=normal", 4) > 5);
	st_lookup_log_rates("lookup.db",
			    (const char *const[]){ "synchronous=full", NULL });
	st_engine->teardown();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("store_sqlite_race");
	TCase *tc = tcase_create("race");
	SRunner *sr;
	int failed;

	st_engine = &store_sqlite_engine;
	tcase_set_timeout(tc, 120);
	store_conformance_race(tc);
	tcase_add_test(tc, test_throughput);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
