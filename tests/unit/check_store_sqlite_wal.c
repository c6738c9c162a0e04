/* SPDX-License-Identifier: MIT */
/*
 * store-sqlite's WAL checkpoints (plugins/store-sqlite/sq_ckpt.c), on a
 * real database file:
 *   - writes with pauses: the checkpoint thread runs them; the committing
 *     request checkpoints only once the WAL reached SQ_CKPT_INLINE x
 *     checkpoint_pages (which a loaded machine may reach), so that is
 *     the bound;
 *   - writes that never pause: the WAL is still bounded, at
 *     SQ_CKPT_INLINE x checkpoint_pages, by in-line checkpoints;
 *   - checkpoint_pages = 0: SQLite's own autocheckpoint, in line;
 *   - every write is in the database after a reopen.
 * The bounds are in WAL frames: the file is a 32-byte header and frames
 * of a 24-byte frame header and a page.  A commit's frames are appended
 * before its WAL hook runs, so the WAL holds at most (threshold - 1)
 * frames plus one transaction's (TX_PAGES) when a checkpoint starts it
 * again.  An in-line checkpoint that stays busy is reported, never
 * dropped: none is in these runs (no other process checkpoints).
 * Only a reader can hold a checkpoint back; there is none here, and the
 * store's own checkpoint thread has finished opening (it reads the file)
 * before the store opens: a thread left waiting with that read open once
 * held the in-line checkpoints at 0 frames on a loaded CI machine.
 *
 * Oracle: SQLite's documented WAL file format (a 32-byte header, frames of
 * 24 bytes plus a page) for the bounds.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "store_sqlite_engine.h"

#define PAGE	 4096 /* SQLite's default page size */
#define INLINE	 8    /* SQ_CKPT_INLINE */
#define TX_PAGES 16   /* pages one top-up's transaction writes, at most */
/* The size of a WAL file of @frames frames. */
#define WAL_BYTES(frames) (32LL + (long long)(frames) * (PAGE + 24))

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
	ck_assert_msg(count(log, "store_checkpoint_busy") == 0, "%s", log);
	st_open(&t2, "wal.db", NULL);
	ck_assert_int_eq(t2.ops->account_get(t2.inst, a.id, &a), 0);
	ck_assert_int_eq(a.balance_micro, n);
	st_close(&t2);
	st_engine->teardown();
	return log;
}

/* Every in-line checkpoint in @log ran on a WAL of at least @min frames. */
static size_t inline_at_least(const char *log, int min)
{
	const char *p = log, *eol, *il;
	size_t n = 0;
	int frames;

	while ((p = strstr(p, "event=store_checkpoint wal_frames="))) {
		p += strlen("event=store_checkpoint wal_frames=");
		frames = atoi(p);
		eol = strchr(p, '\n');
		il = strstr(p, " inline=1 ");
		if (il && (!eol || il < eol)) {
			ck_assert_msg(frames >= min,
				      "in line at %d frames, under %d", frames,
				      min);
			n++;
		}
	}
	return n;
}

START_TEST(test_thread_checkpoints)
{
	long long most;
	char *log = run("checkpoint_pages=16", 600, 5, &most);
	size_t in_line;

	ck_assert_uint_gt(count(log, "event=store_checkpoint wal_frames="), 0);
	/* The thread checkpoints; the committing request only past 8 x 16. */
	ck_assert_uint_gt(count(log, " inline=0 "), 0);
	in_line = inline_at_least(log, 16 * INLINE);
	/* 600 top-ups write thousands of pages; checkpointed, the WAL is
	 * started again and stays within the in-line bound. */
	ck_assert_msg(most <= WAL_BYTES(16 * INLINE - 1 + TX_PAGES),
		      "WAL grew to %lld bytes (%zu in-line checkpoints)", most,
		      in_line);
	free(log);
}
END_TEST

START_TEST(test_bounded_without_pauses)
{
	long long most;
	char *log = run("checkpoint_pages=4", 3000, 0, &most);
	size_t in_line;

	ck_assert_uint_gt(count(log, "event=store_checkpoint wal_frames="), 0);
	/* In line only when the WAL reached 8 x 4 pages, and then it is
	 * started again: one transaction's pages above the bound at most. */
	in_line = inline_at_least(log, 4 * INLINE);
	ck_assert_msg(most <= WAL_BYTES(4 * INLINE - 1 + TX_PAGES),
		      "WAL grew to %lld bytes (%zu in-line checkpoints)", most,
		      in_line);
	free(log);
}
END_TEST

START_TEST(test_sqlite_autocheckpoint)
{
	long long most;
	char *log = run("checkpoint_pages=0", 1500, 0, &most);

	ck_assert_uint_eq(count(log, "event=store_checkpoint"), 0);
	/* SQLite's default: a checkpoint in the commit past 1,000 pages. */
	ck_assert_msg(most > WAL_BYTES(16 * INLINE) &&
			      most <= WAL_BYTES(1000 - 1 + TX_PAGES),
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
