/* SPDX-License-Identifier: MIT */
/*
 * store-sqlite: reservations.  A reservation moves money from available
 * (balance - reserved) to reserved with one conditional UPDATE, so two
 * requests can never both take the last dollar; settling charges the
 * balance and drops the hold in one transaction.  The same statements
 * work on PostgreSQL, where the UPDATE's row lock does what SQLite's
 * database write lock does here.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sq.h"
#include "storecheck.h"
#include "storesql.h"

static const char sql_hold[] = STORESQL_HOLD(SQLITE);
static const char sql_account_exists[] = STORESQL_ACCOUNT_EXISTS(SQLITE);
static const char sql_res_insert[] = STORESQL_RES_INSERT(SQLITE);
static const char sql_res_get[] =
	"SELECT r.account_id, r.key_id, r.amount_micro, a.balance_micro,"
	" a.reserved_micro FROM reservations r JOIN accounts a"
	" ON a.id = r.account_id WHERE r.id = ?1";
static const char sql_charge[] = STORESQL_CHARGE(SQLITE);
static const char sql_res_delete[] = "DELETE FROM reservations WHERE id = ?1";
static const char sql_res_set[] =
	"UPDATE reservations SET amount_micro = ?2 WHERE id = ?1";
static const char sql_expired_sum[] =
	"SELECT COUNT(*), COALESCE(SUM(amount_micro), 0) FROM reservations"
	" WHERE expires_ms <= ?1";
static const char sql_expired_unhold[] =
	"UPDATE accounts SET reserved_micro = reserved_micro -"
	" (SELECT COALESCE(SUM(r.amount_micro), 0) FROM reservations r"
	"  WHERE r.account_id = accounts.id AND r.expires_ms <= ?1)"
	" WHERE id IN (SELECT account_id FROM reservations WHERE expires_ms <= ?1)";
static const char sql_expired_delete[] =
	"DELETE FROM reservations WHERE expires_ms <= ?1";

static int step_bound(struct sq *s, struct sq_conn *c, const char *sql,
		      int64_t a, const char *what)
{
	sqlite3_stmt *st;
	int rc = sq_prep(s, c, sql, &st);

	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, a);
	return sq_exec(s, c, st, what);
}

/* Why a hold failed: no such account, or not enough money. */
static int hold_failed(struct sq *s, struct sq_conn *c, int64_t account_id)
{
	sqlite3_stmt *st;
	int rc = sq_prep(s, c, sql_account_exists, &st);

	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, account_id);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return -EDQUOT;
	return rc == SQLITE_DONE ? -ENOENT : sq_err(s, c, rc, "reserve");
}

int sq_reserve(void *inst, int64_t account_id, int64_t key_id, int64_t amount,
	       int64_t expires_ms, int64_t *reservation_id)
{
	struct sq *s = inst;
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc;

	if (amount <= 0 || amount > ENGY_STORE_MONEY_MAX || expires_ms <= 0 ||
	    !reservation_id) {
		engy_warn(
			s->h,
			"event=store_bad_input op=reserve amount_micro=%lld expires_ms=%lld",
			(long long)amount, (long long)expires_ms);
		return -EINVAL;
	}
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_begin(s, c);
	if (rc)
		goto out;
	rc = sq_prep(s, c, sql_hold, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, account_id);
		sqlite3_bind_int64(st, 2, amount);
		rc = sq_exec(s, c, st, "reserve");
	}
	if (!rc && sqlite3_changes(c->db) == 0)
		rc = hold_failed(s, c, account_id);
	if (!rc)
		rc = sq_prep(s, c, sql_res_insert, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, account_id);
		sqlite3_bind_int64(st, 2, key_id);
		sqlite3_bind_int64(st, 3, amount);
		sqlite3_bind_int64(st, 4, sq_now_ms());
		sqlite3_bind_int64(st, 5, expires_ms);
		rc = sq_exec(s, c, st, "reserve");
	}
	if (!rc)
		*reservation_id = sqlite3_last_insert_rowid(c->db);
	rc = sq_end(s, c, rc);
out:
	sq_release(s, c);
	return rc;
}

/* Validate one settlement (nothing touched on failure). */
static int settle_check(struct sq *s, int64_t id, int64_t cost,
			const struct engy_request_row *row)
{
	const char *bad = engy_store_settle_bad(id, cost, row);

	return bad ? sq_bad(s, "settle", bad) : 0;
}

/*
 * settle_batch(): the items in order, as settle() would do them one by
 * one, but each reservation and account is read once and written once
 * per batch (a lease charged by many requests costs one SELECT, one
 * UPDATE of it and of its account, and its rows in a few multi-row
 * INSERTs at the end, in the items' order): the running amounts live in
 * these tables while the transaction is open.
 */
struct bres {
	int64_t id, account_id, key_id, amount;
	bool closed, dirty;
};
struct bacct {
	int64_t id, balance, reserved, d_spent, d_reserved;
};

static struct bacct *bacct_find(struct bacct *a, size_t n, int64_t id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i].id == id)
			return &a[i];
	return NULL;
}

static int batch_apply(struct sq *s, struct sq_conn *c,
		       struct engy_settle *items, size_t n, struct bres *res,
		       struct bacct *acc, struct engy_request_row *rows)
{
	size_t n_res = 0, n_acc = 0, n_rows = 0, i, j;
	sqlite3_stmt *st;
	int rc = 0;

	for (i = 0; !rc && i < n; i++) {
		struct engy_settle *it = &items[i];
		struct bres *r = NULL;
		struct bacct *a;
		int64_t take;

		if (it->rc)
			continue;
		if (!it->reservation_id) {
			rows[n_rows++] = *it->row;
			continue;
		}
		for (j = 0; j < n_res; j++)
			if (res[j].id == it->reservation_id)
				r = &res[j];
		if (!r) {
			int64_t bal, rsv;

			rc = sq_prep(s, c, sql_res_get, &st);
			if (rc)
				break;
			sqlite3_bind_int64(st, 1, it->reservation_id);
			rc = sqlite3_step(st);
			if (rc != SQLITE_ROW) {
				rc = rc == SQLITE_DONE
					     ? 0
					     : sq_err(s, c, rc, "settle_batch");
				sqlite3_reset(st);
				if (!rc)
					it->rc = -ENOENT;
				continue;
			}
			r = &res[n_res++];
			*r = (struct bres){
				.id = it->reservation_id,
				.account_id = sqlite3_column_int64(st, 0),
				.key_id = sqlite3_column_int64(st, 1),
				.amount = sqlite3_column_int64(st, 2)
			};
			bal = sqlite3_column_int64(st, 3);
			rsv = sqlite3_column_int64(st, 4);
			sqlite3_reset(st);
			rc = 0;
			/* An account met before keeps its running sums. */
			if (!bacct_find(acc, n_acc, r->account_id))
				acc[n_acc++] =
					(struct bacct){ .id = r->account_id,
							.balance = bal,
							.reserved = rsv };
		}
		if (r->closed) {
			it->rc = -ENOENT;
			continue;
		}
		a = bacct_find(acc, n_acc, r->account_id);
		/* Never into money other holds are counting on. */
		take = r->amount + (a->balance - a->reserved);
		take = it->cost_micro < take ? it->cost_micro : take;
		a->balance -= take;
		a->d_spent += take;
		if (it->keep && take < r->amount) {
			r->amount -= take;
			a->reserved -= take;
			a->d_reserved += take;
		} else { /* closed: the rest of it goes back */
			a->reserved -= r->amount;
			a->d_reserved += r->amount;
			r->amount = 0;
			r->closed = true;
		}
		r->dirty = r->dirty || take > 0 || r->closed;
		it->charged = take;
		if (take < it->cost_micro)
			engy_warn(
				s->h,
				"event=store_charge_capped reservation=%lld cost_micro=%lld charged_micro=%lld",
				(long long)r->id, (long long)it->cost_micro,
				(long long)take);
		if (it->row) {
			struct engy_request_row *row = &rows[n_rows++];

			*row = *it->row;
			row->account_id = r->account_id;
			row->key_id = r->key_id;
			row->cost_micro = take;
		}
	}
	if (!rc)
		rc = sq_log_insert(s, c, rows, n_rows);
	/* One write per account and reservation touched. */
	for (i = 0; !rc && i < n_acc; i++) {
		if (!acc[i].d_spent && !acc[i].d_reserved)
			continue;
		rc = sq_prep(s, c, sql_charge, &st);
		if (rc)
			break;
		sqlite3_bind_int64(st, 1, acc[i].id);
		sqlite3_bind_int64(st, 2, acc[i].d_spent);
		sqlite3_bind_int64(st, 3, acc[i].d_reserved);
		rc = sq_exec(s, c, st, "settle_batch");
	}
	for (i = 0; !rc && i < n_res; i++) {
		if (!res[i].dirty)
			continue;
		if (res[i].closed) {
			rc = step_bound(s, c, sql_res_delete, res[i].id,
					"settle_batch");
			continue;
		}
		rc = sq_prep(s, c, sql_res_set, &st);
		if (rc)
			break;
		sqlite3_bind_int64(st, 1, res[i].id);
		sqlite3_bind_int64(st, 2, res[i].amount);
		rc = sq_exec(s, c, st, "settle_batch");
	}
	return rc;
}

int sq_settle_batch(void *inst, struct engy_settle *items, size_t n)
{
	struct sq *s = inst;
	struct bres *res = NULL;
	struct bacct *acc = NULL;
	struct engy_request_row *rows = NULL;
	struct sq_conn *c;
	size_t i;
	int rc;

	if (n && !items)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		items[i].charged = 0;
		items[i].rc = settle_check(s, items[i].reservation_id,
					   items[i].cost_micro, items[i].row);
	}
	if (!n)
		return 0;
	res = calloc(n, sizeof(*res));
	acc = calloc(n, sizeof(*acc));
	rows = malloc(n * sizeof(*rows));
	if (!res || !acc || !rows) {
		free(res);
		free(acc);
		free(rows);
		return -ENOMEM;
	}
	rc = sq_acquire(s, &c);
	if (rc)
		goto out_free;
	rc = sq_begin(s, c);
	if (rc)
		goto out;
	rc = sq_end(s, c, batch_apply(s, c, items, n, res, acc, rows));
out:
	sq_release(s, c);
out_free:
	if (rc) /* rolled back: nothing was charged */
		for (i = 0; i < n; i++)
			items[i].charged = 0;
	free(res);
	free(acc);
	free(rows);
	return rc;
}

/* settle(): a batch of one that closes its reservation. */
int sq_settle(void *inst, int64_t reservation_id, int64_t cost,
	      const struct engy_request_row *row, int64_t *charged)
{
	struct engy_settle it = { .reservation_id = reservation_id,
				  .cost_micro = cost,
				  .row = row };
	int rc;

	if (!reservation_id)
		return -ENOENT;
	rc = sq_settle_batch(inst, &it, 1);
	if (!rc)
		rc = it.rc;
	if (!rc && charged)
		*charged = it.charged;
	return rc;
}

int sq_release_expired(void *inst, int64_t now_ms, uint64_t *n, int64_t *micro)
{
	struct sq *s = inst;
	int64_t cnt = 0, sum = 0;
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc = sq_acquire(s, &c);

	if (rc)
		return rc;
	rc = sq_begin(s, c);
	if (rc)
		goto out;
	rc = sq_prep(s, c, sql_expired_sum, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, now_ms);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			cnt = sqlite3_column_int64(st, 0);
			sum = sqlite3_column_int64(st, 1);
			rc = 0;
		} else {
			rc = sq_err(s, c, rc, "release_expired");
		}
		sqlite3_reset(st);
	}
	if (!rc && cnt)
		rc = step_bound(s, c, sql_expired_unhold, now_ms,
				"release_expired");
	if (!rc && cnt)
		rc = step_bound(s, c, sql_expired_delete, now_ms,
				"release_expired");
	rc = sq_end(s, c, rc);
out:
	sq_release(s, c);
	if (rc)
		return rc;
	if (cnt)
		engy_info(
			s->h,
			"event=store_released_expired reservations=%lld micro=%lld",
			(long long)cnt, (long long)sum);
	if (n)
		*n = (uint64_t)cnt;
	if (micro)
		*micro = sum;
	return 0;
}
