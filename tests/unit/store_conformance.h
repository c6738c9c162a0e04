/* SPDX-License-Identifier: MIT */
/*
 * The store kind's conformance tests, run against every store plugin
 * (specs/store.md: the same ops, the same results, the same errors).  A
 * check program describes its engine with a struct store_engine, points
 * st_engine at it and adds the engine-neutral cases to its own suite
 * beside its engine-only ones.
 *
 * The harness (store_harness.h) loads the plugin as the host does and
 * opens a named database of the test's own (a file, a schema).
 */
#ifndef ENGY_STORE_CONFORMANCE_H
#define ENGY_STORE_CONFORMANCE_H

#include <stdbool.h>
#include <stddef.h>

#include "store_harness.h"

/* An expiry far ahead (2100-01-01). */
#define ST_FAR 4102444800000ll

struct store_engine {
	const char *name;	     /* the plugin's name */
	const char *so;		     /* the built module */
	const char *const *defaults; /* options every test sets */
	/* A fresh place for one test's databases; removing it. */
	void (*setup)(void);
	void (*teardown)(void);
	/* The option that names database @db ("path=DIR/db", "schema=..."). */
	void (*db_opt)(const char *db, char *opt, size_t cap);
	/* The first column of the first row of @q on @db, as an integer. */
	long long (*sql1)(const char *db, const char *q);
	/* Whether @needle is anywhere in what @db stores. */
	bool (*db_has)(const char *db, const char *needle);
};

/* The engine under test: set by main() before the suite runs. */
extern const struct store_engine *st_engine;

/*
 * Open database @db with @over ("name=value" overrides, NULL-terminated,
 * may be NULL); the start result is in t->start_rc (st_open() asserts 0).
 */
void st_open_rc(struct st *t, const char *db, const char *const *over);
void st_open(struct st *t, const char *db, const char *const *over);
void st_close(struct st *t);
/* The account, checked against the money invariants. */
struct engy_account st_acct(struct st *t, int64_t id);

/* Add the ops cases (every op, its errors, the invariants, retention). */
void store_conformance_ops(TCase *tc);
/* Add the concurrency cases: the spend race over two instances, churn
 * with a concurrent reader, recovery after a killed process. */
void store_conformance_race(TCase *tc);

/*
 * Reserve + settle pairs per second (the two write transactions each
 * request makes) on database @db by @threads threads (at most 8) for one
 * second; printed with the engine's name and @over's first option.
 */
double st_pairs_rate(const char *db, const char *const *over, int threads);
/* key_hash + key_lookup (a gateway's cache miss) per second, and
 * log_append rows per second in 100-row batches, printed. */
void st_lookup_log_rates(const char *db, const char *const *over);

#endif /* ENGY_STORE_CONFORMANCE_H */
