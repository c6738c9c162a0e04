/* SPDX-License-Identifier: MIT */
/*
 * store-sqlite on a database file in a fresh directory, for the tests of
 * store-sqlite alone (check_store_sqlite_wal); the store conformance
 * tests run it as an engine (store_sqlite_engine.h).
 */
#ifndef ENGY_STORE_SQLITE_TEST_H
#define ENGY_STORE_SQLITE_TEST_H

#include <stdio.h>
#include <unistd.h>

#include "store_harness.h"

static char st_dir[64];

/* A fresh directory per test (check forks each test). */
static inline void st_dir_new(void)
{
	snprintf(st_dir, sizeof(st_dir), "/tmp/engy-store.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(st_dir));
}

static inline void st_dir_rm(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", st_dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Open the database st_dir/@file; the start result is in t->start_rc. */
static inline void st_open_rc(struct st *t, const char *file,
			      const char *const *over)
{
	char popt[160];
	const char *o2[16];
	size_t i = 0;

	for (; over && over[i] && i < 14; i++)
		o2[i] = over[i];
	snprintf(popt, sizeof(popt), "path=%s/%s", st_dir, file);
	o2[i++] = popt;
	o2[i] = NULL;
	st_load(t, STORE_SQLITE_SO, "store-sqlite", o2);
}

static inline void st_open(struct st *t, const char *file,
			   const char *const *over)
{
	st_open_rc(t, file, over);
	ck_assert_int_eq(t->start_rc, 0);
}

static inline void st_close(struct st *t)
{
	st_unload(t);
}

#endif /* ENGY_STORE_SQLITE_TEST_H */
