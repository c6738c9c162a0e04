/* SPDX-License-Identifier: MIT */
/*
 * store-sqlite through its ops on a real database file: every op and its
 * errors (unknown and revoked keys, bad amounts, bad names), money
 * invariants after each step, the schema version, a newer schema and a
 * file that is not a database refused, and zero data retention: the
 * content of the test's traffic and the key texts never reach the file,
 * and no column could hold them.  The concurrent spend race, crash
 * recovery and throughput are in check_store_sqlite_race.c.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "apikey.h"
#include "store_sqlite_test.h"

#define ALICE "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY"
#define BOB "5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty"

/* An expiry far ahead (2100-01-01). */
#define FAR 4102444800000ll

static const char *const fast[] = { "synchronous=normal", NULL };

static void account_ok(const struct engy_account *a)
{
	ck_assert_int_ge(a->balance_micro, 0);
	ck_assert_int_ge(a->reserved_micro, 0);
	ck_assert_int_le(a->reserved_micro, a->balance_micro);
	ck_assert_int_eq(a->balance_micro, a->credited_micro - a->spent_micro);
}

static struct engy_account acct_of(struct st *t, int64_t id)
{
	struct engy_account a;

	ck_assert_int_eq(t->ops->account_get(t->inst, id, &a), 0);
	account_ok(&a);
	return a;
}

/* Run one SQL query on the file directly; returns the first column. */
static long long sql1(const char *file, const char *q)
{
	char path[128];
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v = -1;

	snprintf(path, sizeof(path), "%s/%s", st_dir, file);
	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
			 SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void sql_run(const char *file, const char *q)
{
	char path[128];
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s/%s", st_dir, file);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, q, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

START_TEST(test_descriptor_and_schema)
{
	struct st t;
	char path[128];
	struct stat sb;

	st_dir_new();
	st_open(&t, "a.db", fast);
	ck_assert_uint_eq(t.plug->kind, ENGY_KIND_STORE);
	ck_assert_str_eq(t.plug->name, "store-sqlite");
	ck_assert_uint_ge(t.ops->size, sizeof(struct engy_store_ops));
	ck_assert_ptr_nonnull(t.ops->log_prune);
	ck_assert(strstr(fake_host_log(t.h), "event=store_schema path="));
	st_close(&t);
	ck_assert_int_eq(sql1("a.db", "SELECT MAX(version) FROM engy_schema"), 2);
	ck_assert_int_eq(sql1("a.db", "SELECT COUNT(*) FROM engy_schema"), 2);
	/* WAL, and the file is its owner's only. */
	ck_assert_int_eq(sql1("a.db", "SELECT journal_mode = 'wal' FROM"
			      " pragma_journal_mode"), 1);
	snprintf(path, sizeof(path), "%s/a.db", st_dir);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 077, 0);
	/* A second start migrates nothing. */
	st_open(&t, "a.db", fast);
	ck_assert(!strstr(fake_host_log(t.h), "event=store_schema path="));
	st_close(&t);
	ck_assert_int_eq(sql1("a.db", "SELECT COUNT(*) FROM engy_schema"), 2);
	st_dir_rm();
}
END_TEST

START_TEST(test_schema_refusals)
{
	char path[128];
	struct st t;
	int fd;

	st_dir_new();
	st_open(&t, "new.db", fast);
	st_close(&t);
	/* A database from a newer engy is left alone. */
	sql_run("new.db", "INSERT INTO engy_schema VALUES (99, 1)");
	st_open_rc(&t, "new.db", fast);
	ck_assert_int_eq(t.start_rc, -EPROTO);
	ck_assert(strstr(fake_host_log(t.h), "event=store_schema_newer") != NULL);
	ck_assert(strstr(fake_host_log(t.h), "version=99 supported=2"));
	st_close(&t);
	ck_assert_int_eq(sql1("new.db", "SELECT COUNT(*) FROM engy_schema"), 3);
	/* A file that is not a database: a clear error, not a crash. */
	snprintf(path, sizeof(path), "%s/junk.db", st_dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "this is not sqlite, not at all, no.....", 39), 39);
	for (int i = 0; i < 60; i++)
		ck_assert_int_eq(write(fd, "................................", 32), 32);
	close(fd);
	st_open_rc(&t, "junk.db", fast);
	ck_assert_int_eq(t.start_rc, -EIO);
	ck_assert(strstr(fake_host_log(t.h), "event=store_error"));
	ck_assert(strstr(fake_host_log(t.h), "not a database"));
	st_close(&t);
	st_dir_rm();
}
END_TEST

START_TEST(test_accounts_and_topup)
{
	struct engy_account a, b, *list;
	char long_name[80];
	struct st t;
	size_t n;

	st_dir_new();
	st_open(&t, "a.db", fast);
	ck_assert_int_eq(t.ops->account_create(t.inst, "acme", &a), 0);
	ck_assert_int_gt(a.id, 0);
	ck_assert_str_eq(a.name, "acme");
	ck_assert_int_eq(a.balance_micro, 0);
	ck_assert_int_gt(a.created_ms, 1700000000000ll);
	ck_assert_int_eq(t.ops->account_create(t.inst, "acme", NULL), -EEXIST);
	ck_assert_int_eq(t.ops->account_create(t.inst, "", NULL), -EINVAL);
	ck_assert_int_eq(t.ops->account_create(t.inst, "a\nb", NULL), -EINVAL);
	memset(long_name, 'x', 64);
	long_name[64] = '\0';
	ck_assert_int_eq(t.ops->account_create(t.inst, long_name, NULL), -EINVAL);
	long_name[63] = '\0';
	ck_assert_int_eq(t.ops->account_create(t.inst, long_name, &b), 0);
	ck_assert_int_eq(t.ops->account_by_name(t.inst, "acme", &b), 0);
	ck_assert_int_eq(b.id, a.id);
	ck_assert_int_eq(t.ops->account_by_name(t.inst, "nobody", &b), -ENOENT);
	ck_assert_int_eq(t.ops->account_get(t.inst, 999, &b), -ENOENT);
	ck_assert_int_eq(t.ops->account_list(t.inst, &list, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(list[0].name, "acme");
	ck_assert_int_lt(list[0].id, list[1].id);
	free(list);

	/* Top-ups: bad amounts, an unknown account, the cap. */
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 0, NULL), -EINVAL);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, -5, NULL), -EINVAL);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, ENGY_STORE_MONEY_MAX + 1, NULL),
			 -EINVAL);
	ck_assert_int_eq(t.ops->topup(t.inst, 999, 10, NULL), -ENOENT);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 12500000, &b), 0);
	ck_assert_int_eq(b.balance_micro, 12500000);
	ck_assert_int_eq(b.credited_micro, 12500000);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 1, &b), 0);
	ck_assert_int_eq(b.balance_micro, 12500001);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, ENGY_STORE_MONEY_MAX - 12500001,
				       &b), 0);
	ck_assert_int_eq(b.balance_micro, ENGY_STORE_MONEY_MAX);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 1, NULL), -ERANGE);
	account_ok(&b);
	st_close(&t);
	ck_assert_int_eq(sql1("a.db", "SELECT COUNT(*) FROM topups"), 3);
	ck_assert_int_eq(sql1("a.db", "SELECT typeof(balance_micro) = 'integer'"
			      " FROM accounts WHERE name = 'acme'"), 1);
	st_dir_rm();
}
END_TEST

START_TEST(test_keys)
{
	const char *const peppered[] = { "synchronous=normal",
		"pepper=0123456789abcdef0123456789abcdef", NULL };
	struct engy_api_key k, k2, *list;
	uint8_t h[32], h2[32];
	struct engy_account a;
	char *key = NULL, *key2 = NULL;
	struct st t;
	size_t n;

	st_dir_new();
	st_open(&t, "k.db", peppered);
	ck_assert_int_eq(t.ops->account_create(t.inst, "acme", &a), 0);
	ck_assert_int_eq(t.ops->key_create(t.inst, a.id, "ci", &key, &k), 0);
	ck_assert(engy_apikey_well_formed(ENGY_APIKEY_PREFIX, key, strlen(key)));
	ck_assert(strncmp(key, k.shown, 12) == 0);
	ck_assert_uint_eq(strlen(k.shown), 12);
	ck_assert_str_eq(k.label, "ci");
	ck_assert_int_eq(k.account_id, a.id);
	ck_assert_uint_eq(k.status, ENGY_KEY_ACTIVE);
	ck_assert_int_eq(k.revoked_ms, 0);
	/* The stored hash is HMAC-SHA-256 under the pepper (lib/apikey). */
	ck_assert_int_eq(t.ops->key_hash(t.inst, key, strlen(key), h), 0);
	ck_assert_int_eq(engy_apikey_hash((const uint8_t *)"0123456789abcdef0123456789abcdef",
					  32, key, strlen(key), h2), 0);
	ck_assert(engy_apikey_hash_eq(h, h2));
	ck_assert_int_eq(t.ops->key_lookup(t.inst, h, &k2), 0);
	ck_assert_int_eq(k2.id, k.id);
	ck_assert_int_eq(k2.account_id, a.id);
	ck_assert_uint_eq(k2.status, ENGY_KEY_ACTIVE);
	/* Unknown keys; the key text is refused where it is not a hash. */
	ck_assert_int_eq(t.ops->key_hash(t.inst, "sk-engy-nope", 12, h2), 0);
	ck_assert_int_eq(t.ops->key_lookup(t.inst, h2, &k2), -ENOENT);
	ck_assert_int_eq(t.ops->key_hash(t.inst, "", 0, h2), -EINVAL);
	ck_assert_int_eq(t.ops->key_create(t.inst, 999, NULL, &key2, NULL), -ENOENT);
	ck_assert_ptr_null(key2);
	ck_assert_int_eq(t.ops->key_create(t.inst, a.id, "bad\tlabel", &key2, NULL),
			 -EINVAL);
	ck_assert_int_eq(t.ops->key_create(t.inst, a.id, NULL, &key2, NULL), 0);
	ck_assert_str_ne(key, key2);
	ck_assert_int_eq(t.ops->key_list(t.inst, a.id, &list, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(list[0].id, k.id);
	ck_assert_str_eq(list[1].label, "");
	free(list);
	ck_assert_int_eq(t.ops->key_list(t.inst, 999, &list, &n), -ENOENT);
	/* Revoked: still found, marked, for good; twice is fine. */
	ck_assert_int_eq(t.ops->key_revoke(t.inst, k.id), 0);
	ck_assert_int_eq(t.ops->key_lookup(t.inst, h, &k2), 0);
	ck_assert_uint_eq(k2.status, ENGY_KEY_REVOKED);
	ck_assert_int_gt(k2.revoked_ms, 0);
	ck_assert_int_eq(t.ops->key_revoke(t.inst, k.id), 0);
	ck_assert_int_eq(t.ops->key_revoke(t.inst, 999), -ENOENT);
	st_close(&t);
	/* Without the pepper the same key is unknown. */
	st_open(&t, "k.db", fast);
	ck_assert_int_eq(t.ops->key_hash(t.inst, key2, strlen(key2), h2), 0);
	ck_assert_int_eq(t.ops->key_lookup(t.inst, h2, &k2), -ENOENT);
	st_close(&t);
	free(key);
	free(key2);
	st_dir_rm();
}
END_TEST

START_TEST(test_reserve_settle)
{
	struct engy_request_row row, *rows;
	struct engy_log_query q = { .size = sizeof(q) };
	struct engy_account a, b;
	int64_t r1, r2, r3, ch;
	struct st t;
	size_t n;

	st_dir_new();
	st_open(&t, "m.db", fast);
	ck_assert_int_eq(t.ops->account_create(t.inst, "acme", &a), 0);
	ck_assert_int_eq(t.ops->account_create(t.inst, "other", &b), 0);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 1, 1, FAR, &r1), -EDQUOT);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 1000, NULL), 0);
	/* Bad amounts and an unknown account. */
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 1, 0, FAR, &r1), -EINVAL);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 1, -3, FAR, &r1), -EINVAL);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 1, ENGY_STORE_MONEY_MAX + 1,
					 FAR, &r1), -EINVAL);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 1, 5, 0, &r1), -EINVAL);
	ck_assert_int_eq(t.ops->reserve(t.inst, 999, 1, 5, FAR, &r1), -ENOENT);
	/* 600 of 1000, then 500 does not fit, 400 does, 1 more does not. */
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 7, 600, FAR, &r1), 0);
	ck_assert_int_eq(acct_of(&t, a.id).reserved_micro, 600);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 7, 500, FAR, &r2), -EDQUOT);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 7, 400, FAR, &r2), 0);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 7, 1, FAR, &r3), -EDQUOT);
	ck_assert_int_eq(acct_of(&t, a.id).reserved_micro, 1000);
	/* Another account's money is its own. */
	ck_assert_int_eq(t.ops->reserve(t.inst, b.id, 7, 1, FAR, &r3), -EDQUOT);
	/* Settle 250 of 600: the rest is available again. */
	ck_assert_int_eq(t.ops->settle(t.inst, r1, -1, NULL, &ch), -EINVAL);
	ck_assert_int_eq(t.ops->settle(t.inst, r1, 250, NULL, &ch), 0);
	ck_assert_int_eq(ch, 250);
	b = acct_of(&t, a.id);
	ck_assert_int_eq(b.balance_micro, 750);
	ck_assert_int_eq(b.reserved_micro, 400);
	ck_assert_int_eq(b.spent_micro, 250);
	ck_assert_int_eq(t.ops->settle(t.inst, r1, 250, NULL, &ch), -ENOENT);
	ck_assert_int_eq(t.ops->settle(t.inst, 12345, 1, NULL, &ch), -ENOENT);
	/* Cost 0 releases it all (a stream cancelled before a token). */
	ck_assert_int_eq(t.ops->settle(t.inst, r2, 0, NULL, &ch), 0);
	ck_assert_int_eq(ch, 0);
	b = acct_of(&t, a.id);
	ck_assert_int_eq(b.balance_micro, 750);
	ck_assert_int_eq(b.reserved_micro, 0);
	/* A cost above the hold is charged while the available covers it... */
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 7, 100, FAR, &r1), 0);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 7, 300, FAR, &r2), 0);
	ck_assert_int_eq(t.ops->settle(t.inst, r1, 150, NULL, &ch), 0);
	ck_assert_int_eq(ch, 150);
	/* ...but never into money another hold counts on: 600 left, 300 held. */
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 7, 100, FAR, &r1), 0);
	ck_assert_int_eq(t.ops->settle(t.inst, r1, 5000, NULL, &ch), 0);
	ck_assert_int_eq(ch, 100 + (600 - 400));
	ck_assert(strstr(fake_host_log(t.h), "event=store_charge_capped"));
	b = acct_of(&t, a.id);
	ck_assert_int_eq(b.balance_micro, 300);
	ck_assert_int_eq(b.reserved_micro, 300);
	/* Settling with a row logs it in the same step, with the charge. */
	memset(&row, 0, sizeof(row));
	row.time_ms = 1767225600000ll;
	row.status = 200;
	row.prompt_tokens = 40;
	row.cached_tokens = 10;
	row.completion_tokens = 8;
	row.ttft_ms = 120;
	row.tpot_ms = 15;
	row.cost_micro = 999999;	/* replaced by the charge */
	row.account_id = 4242;		/* replaced by the reservation's */
	strcpy(row.request_id, "req-1");
	strcpy(row.model, "qwen3.6-35b-a3b");
	strcpy(row.miner, ALICE);
	strcpy(row.worker_name, "ins-0123456789ab");
	row.cached_tokens = 41;
	ck_assert_int_eq(t.ops->settle(t.inst, r2, 280, &row, &ch), -EINVAL);
	row.cached_tokens = 10;
	ck_assert_int_eq(t.ops->settle(t.inst, r2, 280, &row, &ch), 0);
	ck_assert_int_eq(ch, 280);
	ck_assert_int_eq(t.ops->log_query(t.inst, &q, &rows, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(rows[0].cost_micro, 280);
	ck_assert_int_eq(rows[0].account_id, a.id);
	ck_assert_int_eq(rows[0].key_id, 7);
	ck_assert_str_eq(rows[0].miner, ALICE);
	free(rows);
	b = acct_of(&t, a.id);
	ck_assert_int_eq(b.balance_micro, 20);
	ck_assert_int_eq(b.spent_micro, 980);
	ck_assert_int_eq(b.reserved_micro, 0);
	st_close(&t);
	ck_assert_int_eq(sql1("m.db", "SELECT COUNT(*) FROM reservations"), 0);
	st_dir_rm();
}
END_TEST

static struct engy_model model(const char *name)
{
	struct engy_model m;

	memset(&m, 0, sizeof(m));
	snprintf(m.name, sizeof(m.name), "%s", name);
	m.max_input_tokens = 229376;
	m.max_output_tokens = 32768;
	m.max_request_s = 1800;
	m.toploc_topk = 128;
	m.toploc_v = 40;
	m.toploc_p_ppm = 990000;
	m.qual_ttft_p99_ms = 5000;
	m.qual_tpot_p99_ms = 100;
	m.score_rate = 500;
	m.price = (struct engy_price_card){ 150000, 75000, 600000 };
	return m;
}

START_TEST(test_models_and_roots)
{
	struct engy_model m = model("qwen3.6-35b-a3b"), g, *ml, bad;
	struct engy_model_root r, r2, *rl;
	struct st t;
	size_t n;

	st_dir_new();
	st_open(&t, "c.db", fast);
	ck_assert_int_eq(t.ops->model_put(t.inst, &m), 0);
	ck_assert_int_eq(t.ops->model_get(t.inst, m.name, &g), 0);
	ck_assert_uint_eq(g.status, ENGY_MODEL_ENABLED);
	ck_assert_uint_eq(g.max_input_tokens, 229376);
	ck_assert_uint_eq(g.toploc_p_ppm, 990000);
	ck_assert_int_eq(g.price.cached_input, 75000);
	ck_assert_int_gt(g.updated_ms, 0);
	m.price.output = 700000;
	m.status = ENGY_MODEL_DISABLED;
	ck_assert_int_eq(t.ops->model_put(t.inst, &m), 0);
	ck_assert_int_eq(t.ops->model_get(t.inst, m.name, &g), 0);
	ck_assert_int_eq(g.price.output, 700000);
	ck_assert_uint_eq(g.status, ENGY_MODEL_DISABLED);
	ck_assert_int_eq(t.ops->model_get(t.inst, "nope", &g), -ENOENT);
	bad = model("bad name");
	ck_assert_int_eq(t.ops->model_put(t.inst, &bad), -EINVAL);
	bad = model("x");
	bad.max_output_tokens = 0;
	ck_assert_int_eq(t.ops->model_put(t.inst, &bad), -EINVAL);
	bad = model("x");
	bad.toploc_v = 129;
	ck_assert_int_eq(t.ops->model_put(t.inst, &bad), -EINVAL);
	bad = model("x");
	bad.toploc_p_ppm = 1000001;
	ck_assert_int_eq(t.ops->model_put(t.inst, &bad), -EINVAL);
	bad = model("x");
	bad.price.input = -1;
	ck_assert_int_eq(t.ops->model_put(t.inst, &bad), -EINVAL);
	bad = model("x");
	bad.status = 7;
	ck_assert_int_eq(t.ops->model_put(t.inst, &bad), -EINVAL);
	bad = model("glm-5.2");
	ck_assert_int_eq(t.ops->model_put(t.inst, &bad), 0);
	ck_assert_int_eq(t.ops->model_list(t.inst, &ml, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(ml[0].name, "glm-5.2");
	free(ml);

	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(t.ops->model_root_put(t.inst, &r), -EINVAL);
	memset(r.root, 0xab, 32);
	memset(r.spec_root, 0x15, 32);
	strcpy(r.model, "unknown");
	ck_assert_int_eq(t.ops->model_root_put(t.inst, &r), -ENOENT);
	strcpy(r.model, m.name);
	strcpy(r.quant, "fp8");
	strcpy(r.arch, "qwen3_5_moe_v0");
	ck_assert_int_eq(t.ops->model_root_put(t.inst, &r), 0);
	ck_assert_int_eq(t.ops->model_root_get(t.inst, r.root, &r2), 0);
	ck_assert_str_eq(r2.model, m.name);
	ck_assert_str_eq(r2.quant, "fp8");
	ck_assert_int_eq(memcmp(r2.spec_root, r.spec_root, 32), 0);
	/* One model per root; the same model may re-describe it. */
	strcpy(r2.model, "glm-5.2");
	ck_assert_int_eq(t.ops->model_root_put(t.inst, &r2), -EEXIST);
	strcpy(r.quant, "fp8-v2");
	ck_assert_int_eq(t.ops->model_root_put(t.inst, &r), 0);
	memset(r.root, 0xcd, 32);
	strcpy(r.quant, "int4");
	ck_assert_int_eq(t.ops->model_root_put(t.inst, &r), 0);
	ck_assert_int_eq(t.ops->model_root_list(t.inst, m.name, &rl, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert(strcmp(rl[0].quant, "fp8-v2") == 0 || strcmp(rl[1].quant, "fp8-v2") == 0);
	free(rl);
	ck_assert_int_eq(t.ops->model_root_list(t.inst, "glm-5.2", &rl, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_null(rl);
	ck_assert_int_eq(t.ops->model_root_del(t.inst, r.root), 0);
	ck_assert_int_eq(t.ops->model_root_del(t.inst, r.root), -ENOENT);
	ck_assert_int_eq(t.ops->model_root_get(t.inst, r.root, &r2), -ENOENT);
	ck_assert_int_eq(t.ops->model_root_list(t.inst, NULL, &rl, &n), 0);
	ck_assert_uint_eq(n, 1);
	free(rl);
	st_close(&t);
	st_dir_rm();
}
END_TEST

START_TEST(test_miners)
{
	struct engy_miner m, out, *ml;
	char *key = NULL, *key2 = NULL;
	uint8_t h[32], h2[32];
	struct st t;
	size_t n;

	st_dir_new();
	st_open(&t, "mi.db", fast);
	memset(&m, 0, sizeof(m));
	strcpy(m.hotkey, "5NotAnAddress");
	ck_assert_int_eq(t.ops->miner_put(t.inst, &m, &key, NULL), -EINVAL);
	strcpy(m.hotkey, ALICE);
	strcpy(m.label, "alice-4090s");
	/* A new miner needs a key. */
	ck_assert_int_eq(t.ops->miner_put(t.inst, &m, NULL, NULL), -EINVAL);
	ck_assert_int_eq(t.ops->miner_put(t.inst, &m, &key, &out), 0);
	ck_assert(engy_apikey_well_formed(ENGY_MINERKEY_PREFIX, key, strlen(key)));
	ck_assert_str_eq(out.hotkey, ALICE);
	ck_assert_uint_eq(out.status, ENGY_MINER_ACTIVE);
	ck_assert(strncmp(out.key_shown, key, 12) == 0);
	ck_assert_int_eq(t.ops->key_hash(t.inst, key, strlen(key), h), 0);
	ck_assert_int_eq(t.ops->miner_lookup(t.inst, h, &out), 0);
	ck_assert_str_eq(out.label, "alice-4090s");
	/* Update without a key keeps it. */
	m.priority = 5;
	m.first_party = 1;
	m.status = ENGY_MINER_DISABLED;
	ck_assert_int_eq(t.ops->miner_put(t.inst, &m, NULL, NULL), 0);
	ck_assert_int_eq(t.ops->miner_lookup(t.inst, h, &out), 0);
	ck_assert_int_eq(out.priority, 5);
	ck_assert_uint_eq(out.first_party, 1);
	ck_assert_uint_eq(out.status, ENGY_MINER_DISABLED);
	/* A new key retires the old one. */
	ck_assert_int_eq(t.ops->miner_put(t.inst, &m, &key2, NULL), 0);
	ck_assert_int_eq(t.ops->miner_lookup(t.inst, h, &out), -ENOENT);
	ck_assert_int_eq(t.ops->key_hash(t.inst, key2, strlen(key2), h2), 0);
	ck_assert_int_eq(t.ops->miner_lookup(t.inst, h2, &out), 0);
	m.status = 9;
	ck_assert_int_eq(t.ops->miner_put(t.inst, &m, NULL, NULL), -EINVAL);
	memset(&m, 0, sizeof(m));
	strcpy(m.hotkey, BOB);
	free(key);
	ck_assert_int_eq(t.ops->miner_put(t.inst, &m, &key, NULL), 0);
	ck_assert_int_eq(t.ops->miner_list(t.inst, &ml, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(ml[0].hotkey, ALICE);
	ck_assert_str_eq(ml[1].hotkey, BOB);
	free(ml);
	st_close(&t);
	free(key);
	free(key2);
	st_dir_rm();
}
END_TEST

static struct engy_request_row logrow(int64_t time_ms, int64_t account)
{
	struct engy_request_row r;

	memset(&r, 0, sizeof(r));
	r.time_ms = time_ms;
	r.account_id = account;
	r.status = 200;
	r.prompt_tokens = 10;
	r.completion_tokens = 5;
	r.cost_micro = 3;
	snprintf(r.request_id, sizeof(r.request_id), "req-%lld", (long long)time_ms);
	strcpy(r.model, "m");
	return r;
}

START_TEST(test_log)
{
	const char *const capped[] = { "synchronous=normal", "max_query_rows=5",
				       NULL };
	struct engy_log_query q = { .size = sizeof(q) };
	struct engy_request_row rows[12], *out;
	uint64_t pruned = 0;
	struct st t;
	size_t n, i;

	st_dir_new();
	st_open(&t, "l.db", capped);
	for (i = 0; i < 12; i++)
		rows[i] = logrow(1000 + (int64_t)i * 10, i % 3 ? 1 : 2);
	/* One bad row refuses the batch: all or nothing. */
	rows[11].cached_tokens = 11;
	ck_assert_int_eq(t.ops->log_append(t.inst, rows, 12), -EINVAL);
	rows[11].cached_tokens = 0;
	rows[11].status = 0;
	ck_assert_int_eq(t.ops->log_append(t.inst, rows, 12), -EINVAL);
	rows[11].status = 499;
	memset(rows[11].worker_name, 'w', sizeof(rows[11].worker_name));
	ck_assert_int_eq(t.ops->log_append(t.inst, rows, 12), -EINVAL);
	rows[11].worker_name[63] = '\0';
	ck_assert_int_eq(t.ops->log_append(t.inst, NULL, 0), 0);
	ck_assert_int_eq(t.ops->log_query(t.inst, &q, &out, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(t.ops->log_append(t.inst, rows, 12), 0);
	/* The cap: 5 rows at most, in id order, then paged by after_id. */
	ck_assert_int_eq(t.ops->log_query(t.inst, &q, &out, &n), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert_int_eq(out[0].time_ms, 1000);
	ck_assert_int_eq(out[4].time_ms, 1040);
	q.after_id = out[4].id;
	free(out);
	ck_assert_int_eq(t.ops->log_query(t.inst, &q, &out, &n), 0);
	ck_assert_int_eq(out[0].time_ms, 1050);
	free(out);
	/* A time window [1020, 1060). */
	q.after_id = 0;
	q.since_ms = 1020;
	q.until_ms = 1060;
	ck_assert_int_eq(t.ops->log_query(t.inst, &q, &out, &n), 0);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(out[3].time_ms, 1050);
	free(out);
	/* The tail of one account, newest first. */
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.account_id = 2;
	q.limit = 2;
	q.newest_first = 1;
	ck_assert_int_eq(t.ops->log_query(t.inst, &q, &out, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(out[0].time_ms, 1090);
	ck_assert_int_eq(out[1].time_ms, 1060);
	ck_assert_int_eq(out[0].account_id, 2);
	ck_assert_str_eq(out[0].request_id, "req-1090");
	ck_assert_uint_eq(out[0].completion_tokens, 5);
	free(out);
	q.size = 2;
	ck_assert_int_eq(t.ops->log_query(t.inst, &q, &out, &n), -EINVAL);
	/* Retention. */
	ck_assert_int_eq(t.ops->log_prune(t.inst, 1100, &pruned), 0);
	ck_assert_uint_eq(pruned, 10);
	ck_assert_int_eq(t.ops->log_prune(t.inst, 1100, &pruned), 0);
	ck_assert_uint_eq(pruned, 0);
	st_close(&t);
	ck_assert_int_eq(sql1("l.db", "SELECT COUNT(*) FROM request_log"), 2);
	st_dir_rm();
}
END_TEST

/* Is @needle anywhere in the file (the database, its WAL)? */
static bool file_has(const char *file, const char *needle)
{
	char path[160], *buf;
	bool found = false;
	size_t len, i, nl = strlen(needle);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", st_dir, file);
	f = fopen(path, "rb");
	if (!f)
		return false;
	buf = malloc(16 << 20);
	ck_assert_ptr_nonnull(buf);
	len = fread(buf, 1, 16 << 20, f);
	fclose(f);
	for (i = 0; i + nl <= len && !found; i++)
		found = memcmp(buf + i, needle, nl) == 0;
	free(buf);
	return found;
}

START_TEST(test_retention)
{
	static const char marker[] = "ZDR-MARKER-7f3a9c-do-not-store";
	char body[512], *key = NULL;
	struct engy_request_row row;
	struct engy_account a;
	int64_t res, cost;
	struct st t;
	int i;

	st_dir_new();
	st_open(&t, "z.db", fast);
	ck_assert_int_eq(t.ops->account_create(t.inst, "buyer", &a), 0);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 1000000, NULL), 0);
	ck_assert_int_eq(t.ops->key_create(t.inst, a.id, "k", &key, NULL), 0);
	/* Traffic as a gateway makes it: the buyer's body holds the marker;
	 * only counts and identifiers reach the store. */
	for (i = 0; i < 50; i++) {
		int len = snprintf(body, sizeof(body),
				   "{\"messages\":[{\"role\":\"user\",\"content\":\"%s %d\"}]}",
				   marker, i);

		ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 1, 100, FAR, &res), 0);
		memset(&row, 0, sizeof(row));
		row.time_ms = 1767225600000ll + i;
		row.status = 200;
		row.prompt_tokens = (uint32_t)len;
		row.completion_tokens = 7;
		cost = 5;
		snprintf(row.request_id, sizeof(row.request_id), "req-%d", i);
		strcpy(row.model, "qwen3.6-35b-a3b");
		strcpy(row.miner, ALICE);
		ck_assert_int_eq(t.ops->settle(t.inst, res, cost, &row, NULL), 0);
	}
	ck_assert(!file_has("z.db", marker));
	ck_assert(!file_has("z.db-wal", marker));
	ck_assert(!file_has("z.db", key));
	ck_assert(!file_has("z.db-wal", key));
	/* The identifiers did arrive (the search does find what is there). */
	ck_assert(file_has("z.db", "req-49") || file_has("z.db-wal", "req-49"));
	st_close(&t);
	ck_assert(!file_has("z.db", marker));
	ck_assert(!file_has("z.db", key));
	/* No column could hold content: every text column is a bounded
	 * identifier, every blob a 32-byte hash or root. */
	ck_assert_int_eq(sql1("z.db",
		"SELECT COUNT(*) FROM sqlite_schema s, pragma_table_info(s.name) c"
		" WHERE s.type = 'table' AND upper(c.type) IN ('TEXT', 'BLOB', '')"
		" AND NOT (instr(s.sql, 'length(' || c.name || ') <= ') > 0"
		"  OR instr(s.sql, 'length(' || c.name || ') BETWEEN 1 AND ') > 0"
		"  OR instr(s.sql, 'length(' || c.name || ') = 32') > 0)"), 0);
	ck_assert_int_eq(sql1("z.db",
		"SELECT COUNT(*) FROM sqlite_schema s, pragma_table_info(s.name) c"
		" WHERE s.type = 'table' AND upper(c.type) IN ('TEXT', '')"
		" AND c.name NOT IN ('name', 'shown', 'label', 'model', 'quant',"
		" 'arch', 'hotkey', 'key_shown', 'request_id', 'miner',"
		" 'worker_name', 'scheme', 'reason', 'digest', 'payload',"
		" 'aggregates')"), 0);
	ck_assert_int_eq(sql1("z.db",
		"SELECT COUNT(*) FROM sqlite_schema s, pragma_table_info(s.name) c"
		" WHERE s.type = 'table' AND (c.name LIKE '%prompt%' OR"
		" c.name LIKE '%completion%' OR c.name LIKE '%content%' OR"
		" c.name LIKE '%message%' OR c.name LIKE '%text%')"
		" AND c.name NOT LIKE '%_tokens'"), 0);
	ck_assert_int_eq(sql1("z.db", "SELECT COUNT(*) FROM request_log"), 50);
	free(key);
	st_dir_rm();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("store_sqlite");
	TCase *tc = tcase_create("ops");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_descriptor_and_schema);
	tcase_add_test(tc, test_schema_refusals);
	tcase_add_test(tc, test_accounts_and_topup);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_reserve_settle);
	tcase_add_test(tc, test_models_and_roots);
	tcase_add_test(tc, test_miners);
	tcase_add_test(tc, test_log);
	tcase_add_test(tc, test_retention);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
