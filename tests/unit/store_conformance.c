/* SPDX-License-Identifier: MIT */
/*
 * The store conformance cases (store_conformance.h), the harness and the
 * ops: every op and its errors (unknown and revoked keys, bad amounts,
 * bad names), the money invariants after each step, zero data retention
 * (the content of the test's traffic and the key texts never reach the
 * database).  Concurrency and throughput: store_conformance_race.c.
 *
 * Oracle: money worked by hand from specs/store.md §2 for each step; no
 * engy output is used as an expected value.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apikey.h"
#include "store_conformance.h"

#define ALICE "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY"
#define BOB   "5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty"
#define FAR   ST_FAR

const struct store_engine *st_engine;

/* --- the harness ------------------------------------------------------------ */

void st_open_rc(struct st *t, const char *db, const char *const *over)
{
	const char *all[32];
	char dbopt[256];
	size_t i = 0;

	/* The test's own first, then the database, then the engine's. */
	for (; over && *over && i < 16; over++)
		all[i++] = *over;
	st_engine->db_opt(db, dbopt, sizeof(dbopt));
	all[i++] = dbopt;
	for (over = st_engine->defaults; over && *over && i < 31; over++)
		all[i++] = *over;
	all[i] = NULL;
	st_load(t, st_engine->so, st_engine->name, all);
}

void st_open(struct st *t, const char *db, const char *const *over)
{
	st_open_rc(t, db, over);
	ck_assert_int_eq(t->start_rc, 0);
}

void st_close(struct st *t)
{
	st_unload(t);
}

static void account_ok(const struct engy_account *a)
{
	ck_assert_int_ge(a->balance_micro, 0);
	ck_assert_int_ge(a->reserved_micro, 0);
	ck_assert_int_le(a->reserved_micro, a->balance_micro);
	ck_assert_int_eq(a->balance_micro, a->credited_micro - a->spent_micro);
}

struct engy_account st_acct(struct st *t, int64_t id)
{
	struct engy_account a;

	ck_assert_int_eq(t->ops->account_get(t->inst, id, &a), 0);
	account_ok(&a);
	return a;
}

/* --- the ops ------------------------------------------------------------------ */

START_TEST(test_accounts_and_topup)
{
	struct engy_account a, b, *list;
	char long_name[80];
	struct st t;
	size_t n;

	st_engine->setup();
	st_open(&t, "a.db", NULL);
	ck_assert_int_eq(t.ops->account_create(t.inst, "acme", &a), 0);
	ck_assert_int_gt(a.id, 0);
	ck_assert_str_eq(a.name, "acme");
	ck_assert_int_eq(a.balance_micro, 0);
	ck_assert_int_gt(a.created_ms, 1700000000000ll);
	ck_assert_int_eq(t.ops->account_create(t.inst, "acme", NULL), -EEXIST);
	ck_assert_int_eq(t.ops->account_create(t.inst, "", NULL), -EINVAL);
	ck_assert_int_eq(t.ops->account_create(t.inst, "a\nb", NULL), -EINVAL);
	ck_assert(strstr(fake_host_log(t.h),
			 "event=store_bad_input op=account_create field=name"));
	memset(long_name, 'x', 64);
	long_name[64] = '\0';
	ck_assert_int_eq(t.ops->account_create(t.inst, long_name, NULL),
			 -EINVAL);
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
	ck_assert_int_eq(
		t.ops->topup(t.inst, a.id, ENGY_STORE_MONEY_MAX + 1, NULL),
		-EINVAL);
	ck_assert_int_eq(t.ops->topup(t.inst, 999, 10, NULL), -ENOENT);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 12500000, &b), 0);
	ck_assert_int_eq(b.balance_micro, 12500000);
	ck_assert_int_eq(b.credited_micro, 12500000);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 1, &b), 0);
	ck_assert_int_eq(b.balance_micro, 12500001);
	ck_assert_int_eq(
		t.ops->topup(t.inst, a.id, ENGY_STORE_MONEY_MAX - 12500001, &b),
		0);
	ck_assert_int_eq(b.balance_micro, ENGY_STORE_MONEY_MAX);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 1, NULL), -ERANGE);
	account_ok(&b);
	st_close(&t);
	ck_assert_int_eq(st_engine->sql1("a.db", "SELECT COUNT(*) FROM topups"),
			 3);
	st_engine->teardown();
}
END_TEST

START_TEST(test_keys)
{
	const char *const peppered[] = {
		"pepper=0123456789abcdef0123456789abcdef", NULL
	};
	struct engy_api_key k, k2, *list;
	uint8_t h[32], h2[32];
	struct engy_account a;
	char *key = NULL, *key2 = NULL;
	struct st t;
	size_t n;

	st_engine->setup();
	st_open(&t, "k.db", peppered);
	ck_assert_int_eq(t.ops->account_create(t.inst, "acme", &a), 0);
	ck_assert_int_eq(t.ops->key_create(t.inst, a.id, "ci", &key, &k), 0);
	ck_assert(
		engy_apikey_well_formed(ENGY_APIKEY_PREFIX, key, strlen(key)));
	ck_assert(strncmp(key, k.shown, 12) == 0);
	ck_assert_uint_eq(strlen(k.shown), 12);
	ck_assert_str_eq(k.label, "ci");
	ck_assert_int_eq(k.account_id, a.id);
	ck_assert_uint_eq(k.status, ENGY_KEY_ACTIVE);
	ck_assert_int_eq(k.revoked_ms, 0);
	/* The stored hash is HMAC-SHA-256 under the pepper (lib/apikey). */
	ck_assert_int_eq(t.ops->key_hash(t.inst, key, strlen(key), h), 0);
	ck_assert_int_eq(
		engy_apikey_hash(
			(const uint8_t *)"0123456789abcdef0123456789abcdef", 32,
			key, strlen(key), h2),
		0);
	ck_assert(engy_apikey_hash_eq(h, h2));
	ck_assert_int_eq(t.ops->key_lookup(t.inst, h, &k2), 0);
	ck_assert_int_eq(k2.id, k.id);
	ck_assert_int_eq(k2.account_id, a.id);
	ck_assert_uint_eq(k2.status, ENGY_KEY_ACTIVE);
	/* Unknown keys; the key text is refused where it is not a hash. */
	ck_assert_int_eq(t.ops->key_hash(t.inst, "sk-engy-nope", 12, h2), 0);
	ck_assert_int_eq(t.ops->key_lookup(t.inst, h2, &k2), -ENOENT);
	ck_assert_int_eq(t.ops->key_hash(t.inst, "", 0, h2), -EINVAL);
	ck_assert_int_eq(t.ops->key_create(t.inst, 999, NULL, &key2, NULL),
			 -ENOENT);
	ck_assert_ptr_null(key2);
	ck_assert_int_eq(
		t.ops->key_create(t.inst, a.id, "bad\tlabel", &key2, NULL),
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
	st_open(&t, "k.db", NULL);
	ck_assert_int_eq(t.ops->key_hash(t.inst, key2, strlen(key2), h2), 0);
	ck_assert_int_eq(t.ops->key_lookup(t.inst, h2, &k2), -ENOENT);
	st_close(&t);
	free(key);
	free(key2);
	st_engine->teardown();
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

	st_engine->setup();
	st_open(&t, "m.db", NULL);
	ck_assert_int_eq(t.ops->account_create(t.inst, "acme", &a), 0);
	ck_assert_int_eq(t.ops->account_create(t.inst, "other", &b), 0);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 1, 1, FAR, &r1), -EDQUOT);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 1000, NULL), 0);
	/* Bad amounts and an unknown account. */
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 1, 0, FAR, &r1), -EINVAL);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 1, -3, FAR, &r1),
			 -EINVAL);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 1,
					ENGY_STORE_MONEY_MAX + 1, FAR, &r1),
			 -EINVAL);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 1, 5, 0, &r1), -EINVAL);
	ck_assert_int_eq(t.ops->reserve(t.inst, 999, 1, 5, FAR, &r1), -ENOENT);
	/* 600 of 1000, then 500 does not fit, 400 does, 1 more does not. */
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 7, 600, FAR, &r1), 0);
	ck_assert_int_eq(st_acct(&t, a.id).reserved_micro, 600);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 7, 500, FAR, &r2),
			 -EDQUOT);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 7, 400, FAR, &r2), 0);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 7, 1, FAR, &r3), -EDQUOT);
	ck_assert_int_eq(st_acct(&t, a.id).reserved_micro, 1000);
	/* Another account's money is its own. */
	ck_assert_int_eq(t.ops->reserve(t.inst, b.id, 7, 1, FAR, &r3), -EDQUOT);
	/* Settle 250 of 600: the rest is available again. */
	ck_assert_int_eq(t.ops->settle(t.inst, r1, -1, NULL, &ch), -EINVAL);
	ck_assert_int_eq(t.ops->settle(t.inst, r1, 250, NULL, &ch), 0);
	ck_assert_int_eq(ch, 250);
	b = st_acct(&t, a.id);
	ck_assert_int_eq(b.balance_micro, 750);
	ck_assert_int_eq(b.reserved_micro, 400);
	ck_assert_int_eq(b.spent_micro, 250);
	ck_assert_int_eq(t.ops->settle(t.inst, r1, 250, NULL, &ch), -ENOENT);
	ck_assert_int_eq(t.ops->settle(t.inst, 12345, 1, NULL, &ch), -ENOENT);
	/* Cost 0 releases it all (a stream cancelled before a token). */
	ck_assert_int_eq(t.ops->settle(t.inst, r2, 0, NULL, &ch), 0);
	ck_assert_int_eq(ch, 0);
	b = st_acct(&t, a.id);
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
	b = st_acct(&t, a.id);
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
	row.cost_micro = 999999; /* replaced by the charge */
	row.account_id = 4242;	 /* replaced by the reservation's */
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
	ck_assert_uint_eq(rows[0].cached_tokens, 10);
	ck_assert_uint_eq(rows[0].tpot_ms, 15);
	free(rows);
	b = st_acct(&t, a.id);
	ck_assert_int_eq(b.balance_micro, 20);
	ck_assert_int_eq(b.spent_micro, 980);
	ck_assert_int_eq(b.reserved_micro, 0);
	st_close(&t);
	ck_assert_int_eq(
		st_engine->sql1("m.db", "SELECT COUNT(*) FROM reservations"),
		0);
	st_engine->teardown();
}
END_TEST

/* settle_batch(): one transaction for many settlements, a lease kept open
 * and charged by several, a row without a hold, and items that fail on
 * their own (expected values worked out by hand from the spec). */
START_TEST(test_settle_batch)
{
	struct engy_request_row row[4], *rows;
	struct engy_log_query q = { .size = sizeof(q) };
	struct engy_settle it[6];
	struct engy_account a, b;
	int64_t lease, r1, r2;
	struct st t;
	size_t n, i;

	st_engine->setup();
	st_open(&t, "b.db", NULL);
	if (!t.ops->settle_batch) { /* optional: nothing more to check */
		st_close(&t);
		st_engine->teardown();
		return;
	}
	ck_assert_int_eq(t.ops->account_create(t.inst, "acme", &a), 0);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 10000, NULL), 0);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 7, 5000, FAR, &lease), 0);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 8, 300, FAR, &r1), 0);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 8, 200, FAR, &r2), 0);
	ck_assert_int_eq(t.ops->settle_batch(t.inst, NULL, 0), 0);
	memset(row, 0, sizeof(row));
	for (i = 0; i < 4; i++) {
		row[i].time_ms = 1767225600000ll + (int64_t)i;
		row[i].status = 200;
		row[i].account_id = 4242; /* replaced by the reservation's */
		snprintf(row[i].request_id, sizeof(row[i].request_id),
			 "req-b%zu", i);
		strcpy(row[i].model, "qwen3.6-35b-a3b");
	}
	row[3].status = 429; /* a refusal's row: no hold */
	row[3].account_id = a.id;
	row[3].key_id = 9;
	memset(it, 0, sizeof(it));
	/* Two requests charged to the lease, which stays open... */
	it[0] = (struct engy_settle){ .reservation_id = lease,
				      .cost_micro = 1200,
				      .row = &row[0],
				      .keep = 1 };
	it[1] = (struct engy_settle){ .reservation_id = lease,
				      .cost_micro = 800,
				      .row = &row[1],
				      .keep = 1 };
	/* ...one plain settlement, one bad cost, one unknown hold... */
	it[2] = (struct engy_settle){ .reservation_id = r1,
				      .cost_micro = 250,
				      .row = &row[2] };
	it[3] = (struct engy_settle){ .reservation_id = r2, .cost_micro = -5 };
	it[4] = (struct engy_settle){ .reservation_id = 987654,
				      .cost_micro = 1 };
	/* ...and a row without a hold. */
	it[5] = (struct engy_settle){ .row = &row[3] };
	ck_assert_int_eq(t.ops->settle_batch(t.inst, it, 6), 0);
	ck_assert_int_eq(it[0].rc, 0);
	ck_assert_int_eq(it[0].charged, 1200);
	ck_assert_int_eq(it[1].rc, 0);
	ck_assert_int_eq(it[1].charged, 800);
	ck_assert_int_eq(it[2].rc, 0);
	ck_assert_int_eq(it[2].charged, 250);
	ck_assert_int_eq(it[3].rc, -EINVAL);
	ck_assert_int_eq(it[4].rc, -ENOENT);
	ck_assert_int_eq(it[4].charged, 0);
	ck_assert_int_eq(it[5].rc, 0);
	ck_assert_int_eq(it[5].charged, 0);
	/* 10000 - 2250 spent; held: the lease's 3000 left and r2's 200. */
	b = st_acct(&t, a.id);
	ck_assert_int_eq(b.balance_micro, 7750);
	ck_assert_int_eq(b.spent_micro, 2250);
	ck_assert_int_eq(b.reserved_micro, 3200);
	ck_assert_int_eq(t.ops->log_query(t.inst, &q, &rows, &n), 0);
	ck_assert_uint_eq(n, 4);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(rows[i].account_id, a.id);
		if (strcmp(rows[i].request_id, "req-b0") == 0)
			ck_assert_int_eq(rows[i].cost_micro, 1200);
		else if (strcmp(rows[i].request_id, "req-b1") == 0)
			ck_assert_int_eq(rows[i].cost_micro, 800);
		else if (strcmp(rows[i].request_id, "req-b2") == 0)
			ck_assert_int_eq(rows[i].key_id, 8);
		else
			ck_assert_int_eq(rows[i].key_id, 9);
		if (strcmp(rows[i].request_id, "req-b3") != 0 &&
		    strcmp(rows[i].request_id, "req-b2") != 0)
			ck_assert_int_eq(rows[i].key_id, 7);
	}
	free(rows);
	/* The lease charged down to nothing closes: an item after it on the
	 * same lease finds nothing. */
	it[0] = (struct engy_settle){ .reservation_id = lease,
				      .cost_micro = 3000,
				      .keep = 1 };
	it[1] = (struct engy_settle){ .reservation_id = lease,
				      .cost_micro = 1,
				      .keep = 1 };
	it[2] = (struct engy_settle){ .reservation_id = r2 };
	ck_assert_int_eq(t.ops->settle_batch(t.inst, it, 3), 0);
	ck_assert_int_eq(it[0].rc, 0);
	ck_assert_int_eq(it[0].charged, 3000);
	ck_assert_int_eq(it[1].rc, -ENOENT);
	ck_assert_int_eq(it[2].rc, 0);
	b = st_acct(&t, a.id);
	ck_assert_int_eq(b.balance_micro, 4750);
	ck_assert_int_eq(b.spent_micro, 5250);
	ck_assert_int_eq(b.reserved_micro, 0);
	/* A lease closed with nothing charged gives it all back. */
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 7, 4000, FAR, &lease), 0);
	it[0] = (struct engy_settle){ .reservation_id = lease,
				      .cost_micro = 100,
				      .keep = 1 };
	it[1] = (struct engy_settle){ .reservation_id = lease };
	ck_assert_int_eq(t.ops->settle_batch(t.inst, it, 2), 0);
	ck_assert_int_eq(it[0].charged, 100);
	ck_assert_int_eq(it[1].rc, 0);
	b = st_acct(&t, a.id);
	ck_assert_int_eq(b.balance_micro, 4650);
	ck_assert_int_eq(b.reserved_micro, 0);
	/* A row without a hold must not carry a cost. */
	it[0] = (struct engy_settle){ .cost_micro = 5, .row = &row[3] };
	ck_assert_int_eq(t.ops->settle_batch(t.inst, it, 1), 0);
	ck_assert_int_eq(it[0].rc, -EINVAL);
	st_close(&t);
	ck_assert_int_eq(
		st_engine->sql1("b.db", "SELECT COUNT(*) FROM reservations"),
		0);
	st_engine->teardown();
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

	st_engine->setup();
	st_open(&t, "c.db", NULL);
	ck_assert_int_eq(t.ops->model_put(t.inst, &m), 0);
	ck_assert_int_eq(t.ops->model_get(t.inst, m.name, &g), 0);
	ck_assert_uint_eq(g.status, ENGY_MODEL_ENABLED);
	ck_assert_uint_eq(g.max_input_tokens, 229376);
	ck_assert_uint_eq(g.toploc_p_ppm, 990000);
	ck_assert_int_eq(g.price.cached_input, 75000);
	ck_assert_int_gt(g.updated_ms, 0);
	/* the mantissa limits: 0 (unchecked) unless set, then kept */
	ck_assert_uint_eq(g.toploc_mant_mean_centi, 0);
	ck_assert_uint_eq(g.toploc_mant_median_centi, 0);
	m.price.output = 700000;
	m.status = ENGY_MODEL_DISABLED;
	m.toploc_mant_mean_centi = 1000;
	m.toploc_mant_median_centi = 65535;
	ck_assert_int_eq(t.ops->model_put(t.inst, &m), 0);
	ck_assert_int_eq(t.ops->model_get(t.inst, m.name, &g), 0);
	ck_assert_uint_eq(g.toploc_mant_mean_centi, 1000);
	ck_assert_uint_eq(g.toploc_mant_median_centi, 65535);
	ck_assert_int_eq(g.price.output, 700000);
	ck_assert_uint_eq(g.status, ENGY_MODEL_DISABLED);
	/* the GEMM audit's sizes: 0 (the verifier's own) kept as 0, then
	 * every field at the top of its range kept */
	ck_assert_uint_eq(g.gemm_layers, 0);
	ck_assert_uint_eq(g.gemm_rate_ppm, 0);
	m.gemm_layers = 1;
	m.gemm_tokens = 4096;
	m.gemm_projections = 64;
	m.gemm_spots = 4096;
	m.gemm_z_milli = 1000000;
	m.gemm_c_el_milli = 6500;
	m.gemm_rate_ppm = 1000000;
	ck_assert_int_eq(t.ops->model_put(t.inst, &m), 0);
	ck_assert_int_eq(t.ops->model_get(t.inst, m.name, &g), 0);
	ck_assert_uint_eq(g.gemm_layers, 1);
	ck_assert_uint_eq(g.gemm_tokens, 4096);
	ck_assert_uint_eq(g.gemm_projections, 64);
	ck_assert_uint_eq(g.gemm_spots, 4096);
	ck_assert_uint_eq(g.gemm_z_milli, 1000000);
	ck_assert_uint_eq(g.gemm_c_el_milli, 6500);
	ck_assert_uint_eq(g.gemm_rate_ppm, 1000000);
	ck_assert_uint_eq(g.toploc_mant_median_centi, 65535);
	ck_assert_int_eq(t.ops->model_get(t.inst, "nope", &g), -ENOENT);
	{
		/* each out of §6's range (specs/gemm-audit.md) is refused */
		static const struct {
			size_t off;
			uint32_t v;
		} no[] = {
			{ offsetof(struct engy_model, gemm_layers), 65537 },
			{ offsetof(struct engy_model, gemm_tokens), 4097 },
			{ offsetof(struct engy_model, gemm_projections), 65 },
			{ offsetof(struct engy_model, gemm_spots), 4097 },
			{ offsetof(struct engy_model, gemm_z_milli), 999 },
			{ offsetof(struct engy_model, gemm_z_milli), 1000001 },
			{ offsetof(struct engy_model, gemm_c_el_milli), 1 },
			{ offsetof(struct engy_model, gemm_rate_ppm), 1000001 },
			{ offsetof(struct engy_model, gemm_pad), 1 },
		};
		size_t k;

		for (k = 0; k < sizeof(no) / sizeof(no[0]); k++) {
			bad = model("x");
			memcpy((char *)&bad + no[k].off, &no[k].v, 4);
			ck_assert_int_eq(t.ops->model_put(t.inst, &bad),
					 -EINVAL);
		}
		/* layers x tokens above 4096 */
		bad = model("x");
		bad.gemm_layers = 65;
		bad.gemm_tokens = 64;
		ck_assert_int_eq(t.ops->model_put(t.inst, &bad), -EINVAL);
	}
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
	bad = model("Z-upper"); /* byte order: before the lower case */
	ck_assert_int_eq(t.ops->model_put(t.inst, &bad), 0);
	ck_assert_int_eq(t.ops->model_list(t.inst, &ml, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(ml[0].name, "Z-upper");
	ck_assert_str_eq(ml[1].name, "glm-5.2");
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
	ck_assert_str_eq(r2.arch, "qwen3_5_moe_v0");
	ck_assert_int_eq(memcmp(r2.root, r.root, 32), 0);
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
	ck_assert(strcmp(rl[0].quant, "fp8-v2") == 0 ||
		  strcmp(rl[1].quant, "fp8-v2") == 0);
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
	st_engine->teardown();
}
END_TEST

START_TEST(test_miners)
{
	struct engy_miner m, out, *ml;
	char *key = NULL, *key2 = NULL;
	uint8_t h[32], h2[32];
	struct st t;
	size_t n;

	st_engine->setup();
	st_open(&t, "mi.db", NULL);
	memset(&m, 0, sizeof(m));
	strcpy(m.hotkey, "5NotAnAddress");
	ck_assert_int_eq(t.ops->miner_put(t.inst, &m, &key, NULL), -EINVAL);
	strcpy(m.hotkey, ALICE);
	strcpy(m.label, "alice-4090s");
	/* A new miner needs a key. */
	ck_assert_int_eq(t.ops->miner_put(t.inst, &m, NULL, NULL), -EINVAL);
	ck_assert_int_eq(t.ops->miner_put(t.inst, &m, &key, &out), 0);
	ck_assert(engy_apikey_well_formed(ENGY_MINERKEY_PREFIX, key,
					  strlen(key)));
	ck_assert_str_eq(out.hotkey, ALICE);
	ck_assert_uint_eq(out.status, ENGY_MINER_ACTIVE);
	ck_assert(strncmp(out.key_shown, key, 12) == 0);
	ck_assert_int_eq(t.ops->key_hash(t.inst, key, strlen(key), h), 0);
	ck_assert_int_eq(t.ops->miner_lookup(t.inst, h, &out), 0);
	ck_assert_str_eq(out.label, "alice-4090s");
	/* Update without a key keeps it. */
	m.priority = -5;
	m.first_party = 1;
	m.status = ENGY_MINER_DISABLED;
	ck_assert_int_eq(t.ops->miner_put(t.inst, &m, NULL, NULL), 0);
	ck_assert_int_eq(t.ops->miner_lookup(t.inst, h, &out), 0);
	ck_assert_int_eq(out.priority, -5);
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
	st_engine->teardown();
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
	snprintf(r.request_id, sizeof(r.request_id), "req-%lld",
		 (long long)time_ms);
	strcpy(r.model, "m");
	return r;
}

START_TEST(test_log)
{
	const char *const capped[] = { "max_query_rows=5", NULL };
	struct engy_log_query q = { .size = sizeof(q) };
	struct engy_request_row rows[12], *out;
	uint64_t pruned = 0;
	struct st t;
	size_t n, i;

	st_engine->setup();
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
	ck_assert_int_eq(
		st_engine->sql1("l.db", "SELECT COUNT(*) FROM request_log"), 2);
	st_engine->teardown();
}
END_TEST

/* Row @i of a batch test: every field its own, times going backwards (so
 * the id order, not the time order, is what keeps them in sequence). */
static struct engy_request_row nrow(size_t i, int64_t account)
{
	struct engy_request_row r;

	memset(&r, 0, sizeof(r));
	r.time_ms = 1767225600000ll - (int64_t)i * 7;
	r.account_id = account;
	r.key_id = 100 + (int64_t)i;
	r.status = 100 + (uint32_t)(i % 500);
	r.prompt_tokens = 1000 + (uint32_t)i;
	r.completion_tokens = 3 * (uint32_t)i;
	r.cached_tokens = (uint32_t)(i % 11);
	r.ttft_ms = (uint32_t)i + 1;
	r.tpot_ms = 2 * (uint32_t)i;
	r.cost_micro = 11 * (int64_t)i;
	r.is_probe = (uint32_t)(i & 1);
	snprintf(r.request_id, sizeof(r.request_id), "req-n%zu", i);
	snprintf(r.model, sizeof(r.model), "model-%zu", i % 13);
	snprintf(r.miner, sizeof(r.miner), "miner-%zu", i % 17);
	snprintf(r.worker_name, sizeof(r.worker_name), "w%zu", i);
	return r;
}

/* The whole log in id order, paged by after_id. */
static size_t log_all(struct st *t, struct engy_request_row *out, size_t cap)
{
	struct engy_log_query q = { .size = sizeof(q), .limit = 50 };
	struct engy_request_row *got;
	size_t n, total = 0;

	for (;;) {
		ck_assert_int_eq(t->ops->log_query(t->inst, &q, &got, &n), 0);
		if (!n)
			break;
		ck_assert_uint_le(total + n, cap);
		memcpy(&out[total], got, n * sizeof(*got));
		total += n;
		q.after_id = got[n - 1].id;
		free(got);
	}
	free(got);
	return total;
}

static void row_eq(const struct engy_request_row *a,
		   const struct engy_request_row *b)
{
	ck_assert_int_eq(a->time_ms, b->time_ms);
	ck_assert_int_eq(a->account_id, b->account_id);
	ck_assert_int_eq(a->key_id, b->key_id);
	ck_assert_uint_eq(a->status, b->status);
	ck_assert_uint_eq(a->prompt_tokens, b->prompt_tokens);
	ck_assert_uint_eq(a->completion_tokens, b->completion_tokens);
	ck_assert_uint_eq(a->cached_tokens, b->cached_tokens);
	ck_assert_uint_eq(a->ttft_ms, b->ttft_ms);
	ck_assert_uint_eq(a->tpot_ms, b->tpot_ms);
	ck_assert_int_eq(a->cost_micro, b->cost_micro);
	ck_assert_uint_eq(a->is_probe, b->is_probe);
	ck_assert_str_eq(a->request_id, b->request_id);
	ck_assert_str_eq(a->model, b->model);
	ck_assert_str_eq(a->miner, b->miner);
	ck_assert_str_eq(a->worker_name, b->worker_name);
}

/* log_append() and settle_batch() with every batch size from 1 to 40
 * (a store may write many rows per statement): each row comes back
 * whole, in the order given, and the ids grow with it. */
START_TEST(test_log_batches)
{
	enum { MAXN = 40, TOTAL = MAXN * (MAXN + 1) / 2 };
	static struct engy_request_row rows[TOTAL], back[2 * TOTAL + 1];
	struct engy_settle it[MAXN];
	struct engy_account a, b;
	size_t n, i, at = 0, got;
	int64_t lease, spent = 0;
	struct st t;

	st_engine->setup();
	st_open(&t, "n.db", NULL);
	for (i = 0; i < TOTAL; i++)
		rows[i] = nrow(i, 1 + (int64_t)(i % 5));
	for (n = 1; n <= MAXN; n++) {
		ck_assert_int_eq(t.ops->log_append(t.inst, &rows[at], n), 0);
		at += n;
	}
	got = log_all(&t, back, 2 * TOTAL + 1);
	ck_assert_uint_eq(got, TOTAL);
	for (i = 0; i < TOTAL; i++) {
		row_eq(&back[i], &rows[i]);
		if (i)
			ck_assert_int_gt(back[i].id, back[i - 1].id);
	}
	if (!t.ops->settle_batch) {
		st_close(&t);
		st_engine->teardown();
		return;
	}
	/* Settlements on one lease: each row gets the lease's account and
	 * key and the cost charged, in the items' order. */
	ck_assert_int_eq(t.ops->account_create(t.inst, "batches", &a), 0);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 100000000, NULL), 0);
	ck_assert_int_eq(
		t.ops->reserve(t.inst, a.id, 77, 50000000, FAR, &lease), 0);
	at = 0;
	for (n = 1; n <= MAXN; n++) {
		for (i = 0; i < n; i++) {
			it[i] = (struct engy_settle){
				.reservation_id = lease,
				.cost_micro = rows[at + i].cost_micro,
				.row = &rows[at + i],
				.keep = 1
			};
			spent += rows[at + i].cost_micro;
		}
		ck_assert_int_eq(t.ops->settle_batch(t.inst, it, n), 0);
		for (i = 0; i < n; i++) {
			ck_assert_int_eq(it[i].rc, 0);
			ck_assert_int_eq(it[i].charged,
					 rows[at + i].cost_micro);
		}
		at += n;
	}
	got = log_all(&t, back, 2 * TOTAL + 1);
	ck_assert_uint_eq(got, 2 * TOTAL);
	for (i = 0; i < TOTAL; i++) {
		struct engy_request_row want = rows[i];

		want.account_id = a.id;
		want.key_id = 77;
		row_eq(&back[TOTAL + i], &want);
		ck_assert_int_gt(back[TOTAL + i].id, back[TOTAL + i - 1].id);
	}
	b = st_acct(&t, a.id);
	ck_assert_int_eq(b.spent_micro, spent);
	ck_assert_int_eq(b.balance_micro, 100000000 - spent);
	ck_assert_int_eq(b.reserved_micro, 50000000 - spent);
	st_close(&t);
	st_engine->teardown();
}
END_TEST

static struct engy_verdict verdict(int64_t time_ms, const char *miner,
				   uint32_t kind)
{
	struct engy_verdict v;

	memset(&v, 0, sizeof(v));
	v.time_ms = time_ms;
	v.request_time_ms = time_ms - 500;
	v.verdict = kind;
	v.chunks = 10;
	v.passed = kind == ENGY_VERDICT_PASS ? 10 : 3;
	v.topk = 128;
	v.exp_p99 = 7;
	v.exp_max = 9;
	v.limit_v = 40;
	v.limit_p_ppm = 990000;
	v.mant_mean_max_milli = 1250;
	v.mant_median_max_milli = 1000;
	strcpy(v.scheme, "toploc");
	strcpy(v.reason, kind == ENGY_VERDICT_PASS ? "ok" : "exp_mismatch");
	snprintf(v.request_id, sizeof(v.request_id), "req-%lld",
		 (long long)time_ms);
	snprintf(v.miner, sizeof(v.miner), "%s", miner);
	strcpy(v.model, "qwen3.6-35b-a3b");
	return v;
}

START_TEST(test_verdicts_and_epochs)
{
	struct engy_verdict_query q = { .size = sizeof(q) };
	struct engy_verdict v, *vs;
	struct engy_epoch_rec e, got;
	char *payload = NULL, *agg = NULL;
	struct st t;
	size_t n;

	st_engine->setup();
	st_open(&t, "v.db", NULL);
	ck_assert_ptr_nonnull(t.ops->verdict_put);
	v = verdict(2000, ALICE, ENGY_VERDICT_PASS);
	ck_assert_int_eq(t.ops->verdict_put(t.inst, &v), 0);
	v = verdict(3000, BOB, ENGY_VERDICT_CHEAT);
	ck_assert_int_eq(t.ops->verdict_put(t.inst, &v), 0);
	v = verdict(4000, ALICE, ENGY_VERDICT_UNPROVEN);
	ck_assert_int_eq(t.ops->verdict_put(t.inst, &v), 0);
	v.passed = 11;
	ck_assert_int_eq(t.ops->verdict_put(t.inst, &v), -EINVAL);
	v = verdict(4000, ALICE, 9);
	ck_assert_int_eq(t.ops->verdict_put(t.inst, &v), -EINVAL);
	ck_assert_int_eq(t.ops->verdict_list(t.inst, &q, &vs, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_lt(vs[0].id, vs[1].id);
	ck_assert_str_eq(vs[1].miner, BOB);
	ck_assert_uint_eq(vs[1].verdict, ENGY_VERDICT_CHEAT);
	ck_assert_uint_eq(vs[1].passed, 3);
	ck_assert_uint_eq(vs[1].mant_mean_max_milli, 1250);
	ck_assert_str_eq(vs[1].reason, "exp_mismatch");
	ck_assert_int_eq(vs[1].request_time_ms, 2500);
	free(vs);
	strcpy(q.miner, ALICE);
	q.newest_first = 1;
	ck_assert_int_eq(t.ops->verdict_list(t.inst, &q, &vs, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(vs[0].time_ms, 4000);
	free(vs);
	q.miner[0] = '\0';
	q.newest_first = 0;
	q.since_ms = 2500;
	q.until_ms = 4000;
	ck_assert_int_eq(t.ops->verdict_list(t.inst, &q, &vs, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(vs[0].time_ms, 3000);
	free(vs);

	memset(&e, 0, sizeof(e));
	e.epoch_index = 7;
	e.start_ms = 1000;
	e.end_ms = 5000;
	e.burn = 1;
	e.n_weights = 2;
	memset(e.digest, 'a', 64);
	ck_assert_int_eq(t.ops->epoch_get(t.inst, 0, 1, &got, &payload, &agg),
			 -ENOENT);
	ck_assert_int_eq(t.ops->epoch_put(t.inst, &e, "", "{}"), -EINVAL);
	ck_assert_int_eq(t.ops->epoch_put(t.inst, &e, "{\"p\":7}", "{\"a\":7}"),
			 0);
	ck_assert_int_eq(t.ops->epoch_put(t.inst, &e, "{\"p\":7}", "{\"a\":7}"),
			 -EEXIST);
	e.epoch_index = 5;
	e.burn = 0;
	ck_assert_int_eq(t.ops->epoch_put(t.inst, &e, "{\"p\":5}", "{\"a\":5}"),
			 0);
	ck_assert_int_eq(t.ops->epoch_get(t.inst, 0, 1, &got, &payload, &agg),
			 0);
	ck_assert_int_eq(got.epoch_index, 7);
	ck_assert_uint_eq(got.burn, 1);
	ck_assert_uint_eq(got.n_weights, 2);
	ck_assert_int_gt(got.closed_ms, 0);
	ck_assert_uint_eq(strlen(got.digest), 64);
	ck_assert_str_eq(payload, "{\"p\":7}");
	ck_assert_str_eq(agg, "{\"a\":7}");
	free(payload);
	free(agg);
	ck_assert_int_eq(t.ops->epoch_get(t.inst, 5, 0, &got, &payload, NULL),
			 0);
	ck_assert_int_eq(got.end_ms, 5000);
	ck_assert_str_eq(payload, "{\"p\":5}");
	free(payload);
	ck_assert_int_eq(t.ops->epoch_get(t.inst, 6, 0, &got, NULL, NULL),
			 -ENOENT);
	st_close(&t);
	st_engine->teardown();
}
END_TEST

START_TEST(test_retention_traffic)
{
	static const char marker[] = "ZDR-MARKER-7f3a9c-do-not-store";
	char body[512], *key = NULL;
	struct engy_request_row row;
	struct engy_account a;
	int64_t res;
	struct st t;
	int i;

	st_engine->setup();
	st_open(&t, "z.db", NULL);
	ck_assert_int_eq(t.ops->account_create(t.inst, "buyer", &a), 0);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 1000000, NULL), 0);
	ck_assert_int_eq(t.ops->key_create(t.inst, a.id, "k", &key, NULL), 0);
	/* Traffic as a gateway makes it: the buyer's body holds the marker;
	 * only counts and identifiers reach the store. */
	for (i = 0; i < 50; i++) {
		int len = snprintf(
			body, sizeof(body),
			"{\"messages\":[{\"role\":\"user\",\"content\":\"%s %d\"}]}",
			marker, i);

		ck_assert_int_eq(
			t.ops->reserve(t.inst, a.id, 1, 100, FAR, &res), 0);
		memset(&row, 0, sizeof(row));
		row.time_ms = 1767225600000ll + i;
		row.status = 200;
		row.prompt_tokens = (uint32_t)len;
		row.completion_tokens = 7;
		snprintf(row.request_id, sizeof(row.request_id), "req-%d", i);
		strcpy(row.model, "qwen3.6-35b-a3b");
		strcpy(row.miner, ALICE);
		ck_assert_int_eq(t.ops->settle(t.inst, res, 5, &row, NULL), 0);
	}
	ck_assert(!st_engine->db_has("z.db", marker));
	ck_assert(!st_engine->db_has("z.db", key));
	/* The identifiers did arrive (the search does find what is there). */
	ck_assert(st_engine->db_has("z.db", "req-49"));
	ck_assert(!strstr(fake_host_log(t.h), key));
	st_close(&t);
	ck_assert(!st_engine->db_has("z.db", marker));
	ck_assert(!st_engine->db_has("z.db", key));
	ck_assert_int_eq(
		st_engine->sql1("z.db", "SELECT COUNT(*) FROM request_log"),
		50);
	free(key);
	st_engine->teardown();
}
END_TEST

static int64_t st_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Audit claims (1.3): one holder at a time, a lapsed claim is taken over,
 * the holder's renewal never shortens it, done is for good, log_prune()
 * drops old claims; open holds by age.  Times are the test's own. */
START_TEST(test_audit_claims)
{
	char long_name[65];
	struct engy_account a;
	int64_t held, r1, r2, now;
	uint64_t n = 99;
	struct st t;

	st_engine->setup();
	st_open(&t, "c.db", NULL);
	ck_assert_ptr_nonnull(t.ops->audit_claim);
	ck_assert_ptr_nonnull(t.ops->holds_open);
	memset(long_name, 'h', 64);
	long_name[64] = '\0';
	ck_assert_int_eq(t.ops->audit_claim(t.inst, "", "A", 1000, 5000, NULL),
			 -EINVAL);
	ck_assert_int_eq(
		t.ops->audit_claim(t.inst, "r1", long_name, 1000, 5000, NULL),
		-EINVAL);
	ck_assert_int_eq(
		t.ops->audit_claim(t.inst, "r1", "A", 1000, 1000, NULL),
		-EINVAL);
	/* A takes r1 until 5000; B is refused and told until when. */
	ck_assert_int_eq(
		t.ops->audit_claim(t.inst, "r1", "A", 1000, 5000, NULL), 0);
	held = 0;
	ck_assert_int_eq(
		t.ops->audit_claim(t.inst, "r1", "B", 2000, 6000, &held),
		-EALREADY);
	ck_assert_int_eq(held, 5000);
	/* Another request is its own. */
	ck_assert_int_eq(
		t.ops->audit_claim(t.inst, "r2", "B", 2000, 6000, NULL), 0);
	/* A's renewal to 4000 keeps 5000. */
	ck_assert_int_eq(
		t.ops->audit_claim(t.inst, "r1", "A", 2000, 4000, NULL), 0);
	ck_assert_int_eq(
		t.ops->audit_claim(t.inst, "r1", "B", 4500, 9000, &held),
		-EALREADY);
	ck_assert_int_eq(held, 5000);
	/* At 5000 it has lapsed (A crashed): B takes it over until 9000. */
	ck_assert_int_eq(
		t.ops->audit_claim(t.inst, "r1", "B", 5000, 9000, NULL), 0);
	ck_assert_int_eq(
		t.ops->audit_claim(t.inst, "r1", "A", 5500, 9500, &held),
		-EALREADY);
	ck_assert_int_eq(held, 9000);
	/* B is done: nobody takes it again, however late. */
	ck_assert_int_eq(t.ops->audit_claim(t.inst, "r1", "B", 6000,
					    ENGY_CLAIM_DONE, NULL),
			 0);
	ck_assert_int_eq(
		t.ops->audit_claim(t.inst, "r1", "A", FAR, FAR + 1, &held),
		-EALREADY);
	ck_assert(held == ENGY_CLAIM_DONE);
	/* Retention: claims last taken before the bound go. */
	ck_assert_int_eq(t.ops->log_prune(t.inst, 5800, NULL), 0);
	ck_assert_int_eq(
		t.ops->audit_claim(t.inst, "r2", "A", 7000, 8000, NULL),
		0); /* r2's (taken at 2000) went */
	ck_assert_int_eq(
		t.ops->audit_claim(t.inst, "r1", "A", FAR, FAR + 1, &held),
		-EALREADY); /* r1's (taken at 6000) stays */

	/* Open holds: made before a bound and neither settled nor lapsed. */
	ck_assert_int_eq(t.ops->account_create(t.inst, "holder", &a), 0);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 1000, NULL), 0);
	now = st_now_ms();
	ck_assert_int_eq(t.ops->holds_open(t.inst, now + 60000, now, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 1, 10, FAR, &r1), 0);
	ck_assert_int_eq(t.ops->reserve(t.inst, a.id, 1, 10, now + 60000, &r2),
			 0);
	ck_assert_int_eq(t.ops->holds_open(t.inst, now + 60000, now, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(t.ops->holds_open(t.inst, now - 60000, now, &n), 0);
	ck_assert_uint_eq(n, 0); /* made after the bound */
	ck_assert_int_eq(
		t.ops->holds_open(t.inst, now + 60000, now + 60000, &n), 0);
	ck_assert_uint_eq(n, 1); /* r2 lapsed by then */
	ck_assert_int_eq(t.ops->settle(t.inst, r1, 5, NULL, NULL), 0);
	ck_assert_int_eq(t.ops->holds_open(t.inst, now + 60000, now, &n), 0);
	ck_assert_uint_eq(n, 1);
	st_close(&t);
}
END_TEST

void store_conformance_ops(TCase *tc)
{
	tcase_add_test(tc, test_accounts_and_topup);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_reserve_settle);
	tcase_add_test(tc, test_settle_batch);
	tcase_add_test(tc, test_log_batches);
	tcase_add_test(tc, test_models_and_roots);
	tcase_add_test(tc, test_miners);
	tcase_add_test(tc, test_log);
	tcase_add_test(tc, test_verdicts_and_epochs);
	tcase_add_test(tc, test_retention_traffic);
	tcase_add_test(tc, test_audit_claims);
}
