/* SPDX-License-Identifier: MIT */
/*
 * store-sqlite as a conformance engine (store_conformance.h): each test's
 * databases are files in a fresh directory, read back with libsqlite3.
 * store-sqlite's own tests (check_store_sqlite_wal) open theirs with it
 * too: setup(), st_open(), teardown().
 */
#ifndef ENGY_STORE_SQLITE_ENGINE_H
#define ENGY_STORE_SQLITE_ENGINE_H

#include "store_conformance.h"

extern const struct store_engine store_sqlite_engine;
/* The current test's directory (store_sqlite_engine.setup()). */
extern char st_dir[64];

/* Run @q on the file st_dir/@db (asserting it succeeds). */
void sq_test_run(const char *db, const char *q);

#endif /* ENGY_STORE_SQLITE_ENGINE_H */
