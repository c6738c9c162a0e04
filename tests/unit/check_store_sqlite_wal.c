/* SPDX-License-Identifier: MIT */
/*
 * store-sqlite's WAL checkpoints (plugins/store-sqlite/sq_ckpt.c), on a
 * real database file:
 *   - writes with pauses: the checkpoint thread runs them (never the
 *     committing request) and the WAL file stays near checkpoint_pages;
 *   - writes that never pause: the WAL is still bounded, at
 *     SQ_CKPT_INLINE x checkpoint_pages, by in-line checkpoints;
 *   - checkpoint_pages = 0: SQLite's own autocheckpoint, in line;
 *   - every write is in the database after a reopen.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "store_sqlite_engine.h"

#define PAGE 4096		/* SQLite's default page size */
#define INLINE 8		/* SQ_CKPT_INLINE */

static long long wal_bytes(const char *file)
{
	char p[160];
	struct stat sb;

	snprintf(p, sizeof(p), "%s/%s-wal", st_dir, file);
	return stat(p, &sb) == 0 ? (long long)sb.st_size : 0;
}

static size_t count(const char *log, const char *needle)
{
	size_t n = 0;

	for (const char *p = log; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* @n top-ups of 1 µUSD; the largest WAL file seen along the way. */
static long long topups(struct st *t, int64_t id, int n, int pause_every)
{
	const struct timespec pause = { 0, 20 * 1000 * 1000 };
	long long most = 0, w;

	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(t->ops->topup(t->inst, id, 1, NULL), 0);
		if ((w = wal_bytes("wal.db")) > most)
			most = w;
		if (pause_every && (i + 1) % pause_every == 0)
			nanosleep(&pause, NULL);
	}
	return most;
}

/*
 * A fresh database with checkpoint_pages=@pages, one account, @n top-ups
 * (a pause every @pause_every); *@most gets the largest WAL seen, the
 * result is the instance's log (after its thread stopped).  The balance is
 * checked after a reopen: every write is in the database.
 */
static char *run(const char *pages, int n, int pause_every, long long *most)
{
	const char *o[] = { "synchronous=normal", pages, NULL };
	struct st t, t2;
	struct engy_account a;
	char *log;

	st_engine->setup();
	st_open(&t, "wal.db", o);
	ck_assert_int_eq(t.ops->account_create(t.inst, "w", &a), 0);
	*most = topups(&t, a.id, n, pause_every);
	t.plug->destroy(t.inst);
	log = strdup(fake_host_log(t.h));
	ck_assert_ptr_nonnull(log);
	st_free_conf(&t);
	fake_host_free(t.h);
	if (!getenv("ENGY_NO_DLCLOSE"))
		dlclose(t.dl);
	ck_assert_msg(strstr(log, pages), "store_open line: %s", log);
	ck_assert_uint_eq(count(log, "store_checkpoint_failed"), 0);
	st_open(&t2, "wal.db", NULL);
	ck_assert_int_eq(t2.ops->account_get(t2.inst, a.id, &a), 0);
	ck_assert_int_eq(a.balance_micro, n);
	st_close(&t2);
	st_engine->teardown();
	return log;
}

START_TEST(test_thread_checkpoints)
{
	long long most;
	char *log = run("checkpoint_pages=16", 600, 5, &most);

	ck_assert_uint_gt(count(log, "event=store_checkpoint wal_frames="), 0);
	ck_assert_uint_gt(count(log, "inline=0"), 0);
	ck_assert_uint_eq(count(log, "inline=1"), 0);
	/* 600 top-ups write thousands of pages; checkpointed, the WAL is
	 * started again and stays within a few times checkpoint_pages. */
	ck_assert_msg(most <= (long long)16 * INLINE * PAGE,
		      "WAL grew to %lld bytes", most);
	free(log);
}
END_TEST

START_TEST(test_bounded_without_pauses)
{
	long long most;
	char *log = run("checkpoint_pages=4", 3000, 0, &most);

	ck_assert_uint_gt(count(log, "event=store_checkpoint wal_frames="), 0);
	/* In line only when the WAL reached 8 x 4 pages, and then it is
	 * started again: one transaction's pages above the bound at most. */
	ck_assert_msg(most <= (long long)(4 * INLINE + 16) * PAGE,
		      "WAL grew to %lld bytes", most);
	free(log);
}
END_TEST

START_TEST(test_sqlite_autocheckpoint)
{
	long long most;
	char *log = run("checkpoint_pages=0", 1500, 0, &most);

	ck_assert_uint_eq(count(log, "event=store_checkpoint"), 0);
	/* SQLite's default: a checkpoint in the commit past 1,000 pages. */
	ck_assert_msg(most > 16 * INLINE * PAGE && most <= 1100LL * PAGE,
		      "WAL at %lld bytes", most);
	free(log);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("store_sqlite_wal");
	TCase *tc = tcase_create("wal");
	SRunner *sr;
	int failed;

	st_engine = &store_sqlite_engine;
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_thread_checkpoints);
	tcase_add_test(tc, test_bounded_without_pauses);
	tcase_add_test(tc, test_sqlite_autocheckpoint);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
