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
#include <string.h>

#include "sq.h"
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
static const char sql_res_lower[] =
	"UPDATE reservations SET amount_micro = amount_micro - ?2 WHERE id = ?1";
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
static int settle_check(struct sq *s, int64_t reservation_id, int64_t cost,
			const struct engy_request_row *row)
{
	if (cost < 0 || cost > ENGY_STORE_MONEY_MAX ||
	    (!reservation_id && (!row || cost))) {
		engy_warn(s->h,
			  "event=store_bad_input op=settle cost_micro=%lld",
			  (long long)cost);
		return -EINVAL;
	}
	return row ? sq_log_check(s, row) : 0;
}

/*
 * One settlement inside the caller's transaction: -ENOENT (nothing
 * written) when the reservation is not open, else the charge, the hold
 * closed (@keep 0, or charged down to 0) or lowered by the charge, and
 * the row.  *@take gets the charge.
 */
static int settle_one(struct sq *s, struct sq_conn *c, int64_t reservation_id,
		      int64_t cost, int keep,
		      const struct engy_request_row *row, int64_t *take_out)
{
	int64_t account_id = 0, key_id = 0, amount = 0, take = 0;
	sqlite3_stmt *st;
	int rc;

	if (!reservation_id) { /* a row without a hold */
		*take_out = 0;
		return sq_log_insert(s, c, row);
	}
	rc = sq_prep(s, c, sql_res_get, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, reservation_id);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			int64_t balance = sqlite3_column_int64(st, 3);
			int64_t reserved = sqlite3_column_int64(st, 4);

			account_id = sqlite3_column_int64(st, 0);
			key_id = sqlite3_column_int64(st, 1);
			amount = sqlite3_column_int64(st, 2);
			/* Never into money other holds are counting on. */
			take = amount + (balance - reserved);
			take = cost < take ? cost : take;
			rc = 0;
		} else {
			rc = rc == SQLITE_DONE ? -ENOENT
					       : sq_err(s, c, rc, "settle");
		}
		sqlite3_reset(st);
	}
	if (keep && take >= amount)
		keep = 0; /* charged down to nothing: closed */
	if (!rc)
		rc = sq_prep(s, c, sql_charge, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, account_id);
		sqlite3_bind_int64(st, 2, take);
		sqlite3_bind_int64(st, 3, keep ? take : amount);
		rc = sq_exec(s, c, st, "settle");
	}
	if (!rc && !keep)
		rc = step_bound(s, c, sql_res_delete, reservation_id, "settle");
	if (!rc && keep && take) {
		rc = sq_prep(s, c, sql_res_lower, &st);
		if (!rc) {
			sqlite3_bind_int64(st, 1, reservation_id);
			sqlite3_bind_int64(st, 2, take);
			rc = sq_exec(s, c, st, "settle");
		}
	}
	if (!rc && row) {
		struct engy_request_row r = *row;

		r.account_id = account_id;
		r.key_id = key_id;
		r.cost_micro = take;
		rc = sq_log_insert(s, c, &r);
	}
	if (!rc && take < cost)
		engy_warn(
			s->h,
			"event=store_charge_capped reservation=%lld cost_micro=%lld charged_micro=%lld",
			(long long)reservation_id, (long long)cost,
			(long long)take);
	*take_out = take;
	return rc;
}

int sq_settle(void *inst, int64_t reservation_id, int64_t cost,
	      const struct engy_request_row *row, int64_t *charged)
{
	struct sq *s = inst;
	int64_t take = 0;
	struct sq_conn *c;
	int rc;

	if (!reservation_id)
		return -ENOENT;
	if ((rc = settle_check(s, reservation_id, cost, row)))
		return rc;
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_begin(s, c);
	if (!rc)
		rc = sq_end(
			s, c,
			settle_one(s, c, reservation_id, cost, 0, row, &take));
	sq_release(s, c);
	if (!rc && charged)
		*charged = take;
	return rc;
}

int sq_settle_batch(void *inst, struct engy_settle *items, size_t n)
{
	struct sq *s = inst;
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
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_begin(s, c);
	if (rc)
		goto out;
	for (i = 0; !rc && i < n; i++) {
		struct engy_settle *it = &items[i];

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
	rc = sq_end(s, c, rc);
out:
	sq_release(s, c);
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
