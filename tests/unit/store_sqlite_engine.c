/* SPDX-License-Identifier: MIT */
/* store-sqlite as a conformance engine: one file per database. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_sqlite_engine.h"

char st_dir[64];

static const char *const defaults[] = { "synchronous=normal", NULL };

/* A fresh directory per test (check forks each test). */
static void setup(void)
{
	snprintf(st_dir, sizeof(st_dir), "/tmp/engy-store.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(st_dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", st_dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void db_opt(const char *db, char *opt, size_t cap)
{
	snprintf(opt, cap, "path=%s/%s", st_dir, db);
}

static long long sql1(const char *db, const char *q)
{
	char path[128];
	sqlite3 *h;
	sqlite3_stmt *st;
	long long v = -1;

	snprintf(path, sizeof(path), "%s/%s", st_dir, db);
	ck_assert_int_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL),
			 SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(h, q, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

void sq_test_run(const char *db, const char *q)
{
	char path[128];
	sqlite3 *h;

	snprintf(path, sizeof(path), "%s/%s", st_dir, db);
	ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(h, q, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
}

/* Is @needle anywhere in the file? */
static bool file_has(const char *path, const char *needle)
{
	size_t len, nl = strlen(needle);
	bool found;
	char *buf;
	FILE *f = fopen(path, "rb");

	if (!f)
		return false;
	buf = malloc(16 << 20);
	ck_assert_ptr_nonnull(buf);
	len = fread(buf, 1, 16 << 20, f);
	fclose(f);
	found = memmem(buf, len, needle, nl) != NULL;
	free(buf);
	return found;
}

/* The database file and its WAL. */
static bool db_has(const char *db, const char *needle)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", st_dir, db);
	if (file_has(path, needle))
		return true;
	snprintf(path, sizeof(path), "%s/%s-wal", st_dir, db);
	return file_has(path, needle);
}

const struct store_engine store_sqlite_engine = {
	.name = "store-sqlite",
	.so = STORE_SQLITE_SO,
	.defaults = defaults,
	.setup = setup,
	.teardown = teardown,
	.db_opt = db_opt,
	.sql1 = sql1,
	.db_has = db_has,
};
