/* SPDX-License-Identifier: MIT */
/*
 * store-postgres: reservations.  A hold is one conditional UPDATE on the
 * account row (it takes the row lock, and READ COMMITTED re-checks the
 * condition against the row a concurrent writer left), so two requests
 * can never both take the last dollar.  settle() and release_expired()
 * lock the reservation first and the account second, the order every
 * money transaction follows; a deadlock between two release_expired()
 * runs is retried by pg_run().
 */
#include <errno.h>
#include <string.h>

#include "pg.h"
#include "storecheck.h"
#include "storesql.h"

static const char sql_hold[] = STORESQL_HOLD(POSTGRES);
static const char sql_account_exists[] = STORESQL_ACCOUNT_EXISTS(POSTGRES);
static const char sql_res_insert[] =
	STORESQL_RES_INSERT(POSTGRES) " RETURNING id";
static const char sql_res_take[] =
	"DELETE FROM reservations WHERE id = $1"
	" RETURNING account_id, key_id, amount_micro";
static const char sql_res_lock[] =
	"SELECT account_id, key_id, amount_micro FROM reservations"
	" WHERE id = $1 FOR UPDATE";
static const char sql_res_lower[] =
	"UPDATE reservations SET amount_micro = amount_micro - $2 WHERE id = $1";
static const char sql_res_delete[] = "DELETE FROM reservations WHERE id = $1";
static const char sql_account_lock[] =
	"SELECT balance_micro, reserved_micro FROM accounts WHERE id = $1"
	" FOR UPDATE";
static const char sql_charge[] = STORESQL_CHARGE(POSTGRES);
/* Per account, in id order (so two runs lock accounts in one order). */
static const char sql_expired[] =
	"WITH gone AS (DELETE FROM reservations WHERE expires_ms <= $1"
	"  RETURNING account_id, amount_micro),"
	" per AS (SELECT account_id, COUNT(*) AS n, SUM(amount_micro) AS micro"
	"  FROM gone GROUP BY account_id),"
	" locked AS (SELECT a.id FROM accounts a JOIN per ON per.account_id = a.id"
	"  ORDER BY a.id FOR UPDATE OF a),"
	" unheld AS (UPDATE accounts a SET reserved_micro = reserved_micro - per.micro"
	"  FROM per WHERE a.id = per.account_id AND a.id IN (SELECT id FROM locked)"
	"  RETURNING per.n, per.micro)"
	" SELECT COALESCE(SUM(n), 0), COALESCE(SUM(micro), 0) FROM unheld";

struct res_args {
	int64_t account_id;
	int64_t key_id;
	int64_t amount;
	int64_t expires_ms;
	int64_t id;
};

static int do_reserve(struct pg *s, struct pg_conn *c, void *arg)
{
	struct res_args *x = arg;
	struct pg_args a = { 0 };
	int64_t changed = 0;
	PGresult *r;
	int rc;

	pg_arg_i64(&a, x->account_id);
	pg_arg_i64(&a, x->amount);
	rc = pg_exec(s, c, sql_hold, &a, "reserve", &changed);
	if (rc)
		return rc;
	if (!changed) { /* no such account, or not enough money */
		a.n = 1;
		rc = pg_q(s, c, sql_account_exists, &a, "reserve", &r);
		if (rc)
			return rc;
		rc = PQntuples(r) ? -EDQUOT : -ENOENT;
		PQclear(r);
		return rc;
	}
	a.n = 0;
	pg_arg_i64(&a, x->account_id);
	pg_arg_i64(&a, x->key_id);
	pg_arg_i64(&a, x->amount);
	pg_arg_i64(&a, pg_now_ms());
	pg_arg_i64(&a, x->expires_ms);
	rc = pg_q(s, c, sql_res_insert, &a, "reserve", &r);
	if (rc)
		return rc;
	x->id = pg_i64(r, 0, 0);
	PQclear(r);
	return 0;
}

int pg_reserve(void *inst, int64_t account_id, int64_t key_id, int64_t amount,
	       int64_t expires_ms, int64_t *reservation_id)
{
	struct pg *s = inst;
	struct res_args x = { account_id, key_id, amount, expires_ms, 0 };
	int rc;

	if (amount <= 0 || amount > ENGY_STORE_MONEY_MAX || expires_ms <= 0 ||
	    !reservation_id) {
		engy_warn(
			s->h,
			"event=store_bad_input op=reserve amount_micro=%lld expires_ms=%lld",
			(long long)amount, (long long)expires_ms);
		return -EINVAL;
	}
	rc = pg_run(s, true, "reserve", do_reserve, &x);
	if (!rc)
		*reservation_id = x.id;
	return rc;
}

/*
 * One settlement inside the caller's transaction: -ENOENT (nothing
 * written) when the reservation is not open, else the charge, the hold
 * closed (@keep 0, or charged down to 0) or lowered by the charge, and
 * the row.  *@take gets the charge.
 */
static int settle_one(struct pg *s, struct pg_conn *c, int64_t id, int64_t cost,
		      int keep, const struct engy_request_row *row,
		      int64_t *take)
{
	int64_t account_id, key_id, amount, balance, reserved;
	struct pg_args a = { 0 };
	PGresult *r;
	int rc;

	*take = 0;
	if (!id) /* a row without a hold */
		return pg_log_insert(s, c, row);
	/* Deleting (or locking) the row first: a concurrent settle or
	 * release of the same reservation waits, then finds nothing. */
	pg_arg_i64(&a, id);
	rc = pg_q(s, c, keep ? sql_res_lock : sql_res_take, &a, "settle", &r);
	if (rc)
		return rc;
	if (!PQntuples(r)) {
		PQclear(r);
		return -ENOENT;
	}
	account_id = pg_i64(r, 0, 0);
	key_id = pg_i64(r, 0, 1);
	amount = pg_i64(r, 0, 2);
	PQclear(r);
	a.n = 0;
	pg_arg_i64(&a, account_id);
	rc = pg_q(s, c, sql_account_lock, &a, "settle", &r);
	if (rc)
		return rc;
	if (!PQntuples(r)) {
		PQclear(r);
		return -ENOENT;
	}
	balance = pg_i64(r, 0, 0);
	reserved = pg_i64(r, 0, 1);
	PQclear(r);
	/* Never into money other holds are counting on. */
	*take = amount + (balance - reserved);
	*take = cost < *take ? cost : *take;
	if (keep && *take < amount) {
		a.n = 0;
		pg_arg_i64(&a, id);
		pg_arg_i64(&a, *take);
		rc = pg_exec(s, c, sql_res_lower, &a, "settle", NULL);
	} else if (keep) {
		keep = 0; /* charged down to nothing: closed */
		a.n = 0;
		pg_arg_i64(&a, id);
		rc = pg_exec(s, c, sql_res_delete, &a, "settle", NULL);
	}
	if (rc)
		return rc;
	a.n = 0;
	pg_arg_i64(&a, account_id);
	pg_arg_i64(&a, *take);
	pg_arg_i64(&a, keep ? *take : amount);
	rc = pg_exec(s, c, sql_charge, &a, "settle", NULL);
	if (!rc && row) {
		struct engy_request_row lr = *row;

		lr.account_id = account_id;
		lr.key_id = key_id;
		lr.cost_micro = *take;
		rc = pg_log_insert(s, c, &lr);
	}
	if (!rc && *take < cost)
		engy_warn(
			s->h,
			"event=store_charge_capped reservation=%lld cost_micro=%lld charged_micro=%lld",
			(long long)id, (long long)cost, (long long)*take);
	return rc;
}

static int settle_check(struct pg *s, int64_t id, int64_t cost,
			const struct engy_request_row *row)
{
	const char *bad = engy_store_settle_bad(id, cost, row);

	return bad ? pg_bad(s, "settle", bad) : 0;
}

struct settle_args {
	int64_t id;
	int64_t cost;
	const struct engy_request_row *row;
	int64_t take;
};

static int do_settle(struct pg *s, struct pg_conn *c, void *arg)
{
	struct settle_args *x = arg;

	return settle_one(s, c, x->id, x->cost, 0, x->row, &x->take);
}

int pg_settle(void *inst, int64_t reservation_id, int64_t cost,
	      const struct engy_request_row *row, int64_t *charged)
{
	struct pg *s = inst;
	struct settle_args x = { reservation_id, cost, row, 0 };
	int rc;

	if (!reservation_id)
		return -ENOENT;
	if ((rc = settle_check(s, reservation_id, cost, row)))
		return rc;
	rc = pg_run(s, true, "settle", do_settle, &x);
	if (rc)
		return rc;
	if (charged)
		*charged = x.take;
	return 0;
}

struct batch_args {
	struct engy_settle *items;
	size_t n;
};

static int do_batch(struct pg *s, struct pg_conn *c, void *arg)
{
	struct batch_args *x = arg;
	size_t i;
	int rc = 0;

	/* A retried transaction (a deadlock) starts every item afresh. */
	for (i = 0; i < x->n; i++)
		if (x->items[i].rc != -EINVAL) {
			x->items[i].rc = 0;
			x->items[i].charged = 0;
		}
	for (i = 0; !rc && i < x->n; i++) {
		struct engy_settle *it = &x->items[i];

		if (it->rc)
			continue;
		rc = settle_one(s, c, it->reservation_id, it->cost_micro,
				it->keep, it->row, &it->charged);
		if (rc == -ENOENT) {
			it->rc = -ENOENT;
			it->charged = 0;
			rc = 0;
		}
	}
	return rc;
}

int pg_settle_batch(void *inst, struct engy_settle *items, size_t n)
{
	struct pg *s = inst;
	struct batch_args x = { items, n };
	size_t i;

	if (n && !items)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		items[i].charged = 0;
		items[i].rc = settle_check(s, items[i].reservation_id,
					   items[i].cost_micro, items[i].row);
	}
	return n ? pg_run(s, true, "settle_batch", do_batch, &x) : 0;
}

struct expired_args {
	int64_t now_ms;
	int64_t n;
	int64_t micro;
};

static int do_expired(struct pg *s, struct pg_conn *c, void *arg)
{
	struct expired_args *x = arg;
	struct pg_args a = { 0 };
	PGresult *r;
	int rc;

	pg_arg_i64(&a, x->now_ms);
	rc = pg_q(s, c, sql_expired, &a, "release_expired", &r);
	if (rc)
		return rc;
	x->n = pg_i64(r, 0, 0);
	x->micro = pg_i64(r, 0, 1);
	PQclear(r);
	return 0;
}

int pg_release_expired(void *inst, int64_t now_ms, uint64_t *n, int64_t *micro)
{
	struct pg *s = inst;
	struct expired_args x = { now_ms, 0, 0 };
	int rc = pg_run(s, true, "release_expired", do_expired, &x);

	if (rc)
		return rc;
	if (x.n)
		engy_info(
			s->h,
			"event=store_released_expired reservations=%lld micro=%lld",
			(long long)x.n, (long long)x.micro);
	if (n)
		*n = (uint64_t)x.n;
	if (micro)
		*micro = x.micro;
	return 0;
}
