/* SPDX-License-Identifier: MIT */
/*
 * store-sqlite through its ops on a real database file: the conformance
 * cases every store passes (store_conformance.c), and what only a SQLite
 * file has: the schema version, WAL and the file's mode, a newer schema
 * and a file that is not a database refused, and the live schema read
 * back (no column could hold content; money columns hold integers).  The
 * concurrency cases and throughput are in check_store_sqlite_race.c.
 *
 * Oracle: the conformance cases' money worked by hand from specs/store.md
 * §2, and SQLite's own schema tables read back.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_sqlite_engine.h"

#define sql1 store_sqlite_engine.sql1

/* Schema 5's columns dropped: back to schema 4's models table. */
#define GEMM_DROP                                                              \
	" ALTER TABLE models DROP COLUMN gemm_layers;"                         \
	" ALTER TABLE models DROP COLUMN gemm_tokens;"                         \
	" ALTER TABLE models DROP COLUMN gemm_projections;"                    \
	" ALTER TABLE models DROP COLUMN gemm_spots;"                          \
	" ALTER TABLE models DROP COLUMN gemm_z_milli;"                        \
	" ALTER TABLE models DROP COLUMN gemm_c_el_milli;"                     \
	" ALTER TABLE models DROP COLUMN gemm_rate_ppm;"

START_TEST(test_descriptor_and_schema)
{
	struct st t;
	char path[128];
	struct stat sb;

	st_engine->setup();
	st_open(&t, "a.db", NULL);
	ck_assert_uint_eq(t.plug->kind, ENGY_KIND_STORE);
	ck_assert_str_eq(t.plug->name, "store-sqlite");
	ck_assert_uint_ge(t.ops->size, sizeof(struct engy_store_ops));
	ck_assert_ptr_nonnull(t.ops->log_prune);
	ck_assert(strstr(fake_host_log(t.h), "event=store_schema path="));
	st_close(&t);
	ck_assert_int_eq(sql1("a.db", "SELECT MAX(version) FROM engy_schema"),
			 6);
	ck_assert_int_eq(sql1("a.db", "SELECT COUNT(*) FROM engy_schema"), 6);
	/* WAL, and the file is its owner's only. */
	ck_assert_int_eq(sql1("a.db", "SELECT journal_mode = 'wal' FROM"
				      " pragma_journal_mode"),
			 1);
	snprintf(path, sizeof(path), "%s/a.db", st_dir);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 077, 0);
	/* A second start migrates nothing. */
	st_open(&t, "a.db", NULL);
	ck_assert(!strstr(fake_host_log(t.h), "event=store_schema path="));
	st_close(&t);
	ck_assert_int_eq(sql1("a.db", "SELECT COUNT(*) FROM engy_schema"), 6);
	st_engine->teardown();
}
END_TEST

/* A schema-3 database (before audit claims) migrates to 6 and keeps its
 * rows; the claim op works on it. */
START_TEST(test_migrate_3_to_4)
{
	struct engy_account a;
	struct st t;

	st_engine->setup();
	st_open(&t, "old.db", NULL);
	ck_assert_int_eq(t.ops->account_create(t.inst, "kept", &a), 0);
	st_close(&t);
	sq_test_run("old.db", "DROP TABLE audit_claims");
	sq_test_run("old.db", "DROP INDEX reservations_created");
	sq_test_run("old.db", GEMM_DROP);
	sq_test_run("old.db", "DELETE FROM engy_schema WHERE version >= 4");
	st_open(&t, "old.db", NULL);
	ck_assert(strstr(fake_host_log(t.h), "from=3 version=6"));
	ck_assert_int_eq(st_acct(&t, a.id).balance_micro, 0);
	ck_assert_int_eq(t.ops->audit_claim(t.inst, "r", "h", 1, 2, NULL), 0);
	st_close(&t);
	ck_assert_int_eq(sql1("old.db", "SELECT MAX(version) FROM engy_schema"),
			 6);
	st_engine->teardown();
}
END_TEST

START_TEST(test_schema_refusals)
{
	char path[128];
	struct st t;
	int fd;

	st_engine->setup();
	st_open(&t, "new.db", NULL);
	st_close(&t);
	/* A database from a newer engy is left alone. */
	sq_test_run("new.db", "INSERT INTO engy_schema VALUES (99, 1)");
	st_open_rc(&t, "new.db", NULL);
	ck_assert_int_eq(t.start_rc, -EPROTO);
	ck_assert(strstr(fake_host_log(t.h), "event=store_schema_newer") !=
		  NULL);
	ck_assert(strstr(fake_host_log(t.h), "version=99 supported=6"));
	st_close(&t);
	ck_assert_int_eq(sql1("new.db", "SELECT COUNT(*) FROM engy_schema"), 7);
	/* A file that is not a database: a clear error, not a crash. */
	snprintf(path, sizeof(path), "%s/junk.db", st_dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(
		write(fd, "this is not sqlite, not at all, no.....", 39), 39);
	for (int i = 0; i < 60; i++)
		ck_assert_int_eq(
			write(fd, "................................", 32), 32);
	close(fd);
	st_open_rc(&t, "junk.db", NULL);
	ck_assert_int_eq(t.start_rc, -EIO);
	ck_assert(strstr(fake_host_log(t.h), "event=store_error"));
	ck_assert(strstr(fake_host_log(t.h), "not a database"));
	st_close(&t);
	st_engine->teardown();
}
END_TEST

/* A schema 4 database (no GEMM sizes) migrates to 6: its model is kept
 * and reads as a spec file without the gemm_* fields would
 * (specs/gemm-audit.md §6's defaults); they can be set afterwards. */
START_TEST(test_migrate_gemm_sizes)
{
	struct engy_model m, g;
	struct st t;

	st_engine->setup();
	st_open(&t, "v4.db", NULL);
	memset(&m, 0, sizeof(m));
	snprintf(m.name, sizeof(m.name), "old-model");
	m.max_input_tokens = m.max_output_tokens = m.max_request_s = 10;
	m.toploc_topk = 128;
	m.toploc_v = 40;
	m.toploc_p_ppm = 990000;
	m.toploc_mant_mean_centi = 7;
	ck_assert_int_eq(t.ops->model_put(t.inst, &m), 0);
	st_close(&t);
	sq_test_run("v4.db",
		    GEMM_DROP " DELETE FROM engy_schema WHERE version >= 5");
	ck_assert_int_eq(sql1("v4.db", "SELECT MAX(version) FROM engy_schema"),
			 4);
	st_open(&t, "v4.db", NULL);
	ck_assert(strstr(fake_host_log(t.h), "from=4 version=6"));
	ck_assert_int_eq(t.ops->model_get(t.inst, "old-model", &g), 0);
	ck_assert_uint_eq(g.toploc_v, 40);
	ck_assert_uint_eq(g.toploc_mant_mean_centi, 7);
	ck_assert_uint_eq(g.gemm_layers, 4);
	ck_assert_uint_eq(g.gemm_tokens, 4);
	ck_assert_uint_eq(g.gemm_projections, 2);
	ck_assert_uint_eq(g.gemm_spots, 2);
	ck_assert_uint_eq(g.gemm_z_milli, 6000);
	ck_assert_uint_eq(g.gemm_c_el_milli, 6000);
	ck_assert_uint_eq(g.gemm_rate_ppm, 50000);
	m.gemm_layers = 3;
	m.gemm_rate_ppm = 0;
	ck_assert_int_eq(t.ops->model_put(t.inst, &m), 0);
	ck_assert_int_eq(t.ops->model_get(t.inst, "old-model", &g), 0);
	ck_assert_uint_eq(g.gemm_layers, 3);
	ck_assert_uint_eq(g.gemm_tokens, 0);
	ck_assert_uint_eq(g.gemm_rate_ppm, 0);
	st_close(&t);
	ck_assert_int_eq(sql1("v4.db", "SELECT COUNT(*) FROM models"), 1);
	st_engine->teardown();
}
END_TEST

/* A schema 5 database (the request log indexed by key) migrates to 6:
 * the index is gone, the rows are kept and still read by account. */
START_TEST(test_migrate_key_index)
{
	struct engy_request_row row, *out = NULL;
	struct engy_log_query q = { .size = sizeof(q) };
	struct engy_account a;
	size_t n = 0;
	struct st t;

	st_engine->setup();
	st_open(&t, "v5.db", NULL);
	ck_assert_int_eq(t.ops->account_create(t.inst, "kept", &a), 0);
	memset(&row, 0, sizeof(row));
	row.time_ms = 1000;
	row.account_id = a.id;
	row.key_id = 7;
	row.status = 200;
	row.cost_micro = 3;
	strcpy(row.request_id, "req-kept");
	strcpy(row.model, "m");
	ck_assert_int_eq(t.ops->log_append(t.inst, &row, 1), 0);
	st_close(&t);
	ck_assert_int_eq(sql1("v5.db", "SELECT COUNT(*) FROM sqlite_master"
				       " WHERE name = 'request_log_key'"),
			 0);
	sq_test_run("v5.db", "CREATE INDEX request_log_key ON"
			     " request_log(key_id, time_ms);"
			     " DELETE FROM engy_schema WHERE version >= 6");
	ck_assert_int_eq(sql1("v5.db", "SELECT COUNT(*) FROM sqlite_master"
				       " WHERE name = 'request_log_key'"),
			 1);
	st_open(&t, "v5.db", NULL);
	ck_assert(strstr(fake_host_log(t.h), "from=5 version=6"));
	q.account_id = a.id;
	ck_assert_int_eq(t.ops->log_query(t.inst, &q, &out, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(out[0].request_id, "req-kept");
	ck_assert_int_eq(out[0].key_id, 7);
	free(out);
	st_close(&t);
	ck_assert_int_eq(sql1("v5.db", "SELECT COUNT(*) FROM sqlite_master"
				       " WHERE name = 'request_log_key'"),
			 0);
	/* what is left: the time and (account, time) indexes */
	ck_assert_int_eq(sql1("v5.db", "SELECT COUNT(*) FROM sqlite_master"
				       " WHERE type = 'index' AND"
				       " tbl_name = 'request_log'"),
			 2);
	st_engine->teardown();
}
END_TEST

/* A schema 2 database (no mantissa limits) migrates to 6: its models are
 * kept, their limits 0 (unchecked), and they can be set afterwards. */
START_TEST(test_migrate_mantissa_limits)
{
	struct engy_model m, g;
	struct st t;

	st_engine->setup();
	st_open(&t, "v2.db", NULL);
	memset(&m, 0, sizeof(m));
	snprintf(m.name, sizeof(m.name), "old-model");
	m.max_input_tokens = m.max_output_tokens = m.max_request_s = 10;
	m.toploc_topk = 128;
	m.toploc_v = 40;
	m.toploc_p_ppm = 990000;
	m.toploc_mant_mean_centi = 7;
	ck_assert_int_eq(t.ops->model_put(t.inst, &m), 0);
	st_close(&t);
	/* back to schema 2's shape, the row kept */
	sq_test_run(
		"v2.db",
		"ALTER TABLE models DROP COLUMN toploc_mant_mean_centi;"
		" ALTER TABLE models DROP COLUMN toploc_mant_median_centi;"
		" DROP TABLE audit_claims; DROP INDEX reservations_created;" GEMM_DROP
		" DELETE FROM engy_schema WHERE version >= 3");
	ck_assert_int_eq(sql1("v2.db", "SELECT MAX(version) FROM engy_schema"),
			 2);
	st_open(&t, "v2.db", NULL);
	ck_assert(strstr(fake_host_log(t.h), "from=2 version=6"));
	ck_assert_int_eq(t.ops->model_get(t.inst, "old-model", &g), 0);
	ck_assert_uint_eq(g.toploc_v, 40);
	ck_assert_uint_eq(g.toploc_mant_mean_centi, 0);
	ck_assert_uint_eq(g.toploc_mant_median_centi, 0);
	m.toploc_mant_median_centi = 300;
	ck_assert_int_eq(t.ops->model_put(t.inst, &m), 0);
	ck_assert_int_eq(t.ops->model_get(t.inst, "old-model", &g), 0);
	ck_assert_uint_eq(g.toploc_mant_mean_centi, 7);
	ck_assert_uint_eq(g.toploc_mant_median_centi, 300);
	st_close(&t);
	/* still the one row */
	ck_assert_int_eq(sql1("v2.db", "SELECT COUNT(*) FROM models"), 1);
	st_engine->teardown();
}
END_TEST

/* No column could hold content: every text column is a bounded
 * identifier, every blob a 32-byte hash or root; money is integer. */
START_TEST(test_retention_schema)
{
	struct engy_account a;
	struct st t;

	st_engine->setup();
	st_open(&t, "z.db", NULL);
	ck_assert_int_eq(t.ops->account_create(t.inst, "acme", &a), 0);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 12500000, NULL), 0);
	st_close(&t);
	ck_assert_int_eq(sql1("z.db", "SELECT typeof(balance_micro) = 'integer'"
				      " FROM accounts WHERE name = 'acme'"),
			 1);
	ck_assert_int_eq(
		sql1("z.db",
		     "SELECT COUNT(*) FROM sqlite_schema s, pragma_table_info(s.name) c"
		     " WHERE s.type = 'table' AND upper(c.type) IN ('TEXT', 'BLOB', '')"
		     " AND NOT (instr(s.sql, 'length(' || c.name || ') <= ') > 0"
		     "  OR instr(s.sql, 'length(' || c.name || ') BETWEEN 1 AND ') > 0"
		     "  OR instr(s.sql, 'length(' || c.name || ') = 32') > 0)"),
		0);
	ck_assert_int_eq(
		sql1("z.db",
		     "SELECT COUNT(*) FROM sqlite_schema s, pragma_table_info(s.name) c"
		     " WHERE s.type = 'table' AND upper(c.type) IN ('TEXT', '')"
		     " AND c.name NOT IN ('name', 'shown', 'label', 'model', 'quant',"
		     " 'arch', 'hotkey', 'key_shown', 'request_id', 'miner',"
		     " 'worker_name', 'scheme', 'reason', 'digest', 'payload', 'holder',"
		     " 'aggregates')"),
		0);
	ck_assert_int_eq(
		sql1("z.db",
		     "SELECT COUNT(*) FROM sqlite_schema s, pragma_table_info(s.name) c"
		     " WHERE s.type = 'table' AND (c.name LIKE '%prompt%' OR"
		     " c.name LIKE '%completion%' OR c.name LIKE '%content%' OR"
		     " c.name LIKE '%message%' OR c.name LIKE '%text%')"
		     " AND c.name NOT LIKE '%_tokens'"),
		0);
	st_engine->teardown();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("store_sqlite");
	TCase *tc = tcase_create("ops");
	SRunner *sr;
	int failed;

	st_engine = &store_sqlite_engine;
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_descriptor_and_schema);
	tcase_add_test(tc, test_schema_refusals);
	tcase_add_test(tc, test_migrate_mantissa_limits);
	tcase_add_test(tc, test_migrate_gemm_sizes);
	tcase_add_test(tc, test_migrate_key_index);
	tcase_add_test(tc, test_migrate_3_to_4);
	store_conformance_ops(tc);
	tcase_add_test(tc, test_retention_schema);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
