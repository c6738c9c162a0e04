/* SPDX-License-Identifier: MIT */
/* store-sqlite: the metadata request log (no content, ever). */
#include <errno.h>
#include <string.h>

#include "sq.h"
#include "storecheck.h"
#include "storesql.h"

/* The log's rows go in by statements of 16, 8, 4, 2 and 1 rows: a
 * statement's own cost (its step and reset, its cursors on the table
 * and both indexes) is about a third of a one-row insert's. */
#define SQ_ROW1	    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define SQ_ROW2	    SQ_ROW1 ", " SQ_ROW1
#define SQ_ROW4	    SQ_ROW2 ", " SQ_ROW2
#define SQ_ROW8	    SQ_ROW4 ", " SQ_ROW4
#define SQ_ROW16    SQ_ROW8 ", " SQ_ROW8
#define SQ_LOG_COLS 15
static const char sql_ins1[] = STORESQL_LOG_INSERT_HEAD SQ_ROW1;
static const char sql_ins2[] = STORESQL_LOG_INSERT_HEAD SQ_ROW2;
static const char sql_ins4[] = STORESQL_LOG_INSERT_HEAD SQ_ROW4;
static const char sql_ins8[] = STORESQL_LOG_INSERT_HEAD SQ_ROW8;
static const char sql_ins16[] = STORESQL_LOG_INSERT_HEAD SQ_ROW16;
/* Four shapes, so each can use its index: ?1 since, ?2 until, ?3 after,
 * ?4 limit, ?5 account. */
static const char sql_asc[] = STORESQL_LOG_ASC(SQLITE);
static const char sql_desc[] = STORESQL_LOG_DESC(SQLITE);
static const char sql_acct_asc[] = STORESQL_LOG_ACCT_ASC(SQLITE);
static const char sql_acct_desc[] = STORESQL_LOG_ACCT_DESC(SQLITE);
static const char sql_prune[] = STORESQL_LOG_PRUNE(SQLITE);
static const char sql_claim_prune[] = STORESQL_CLAIM_PRUNE(SQLITE);

int sq_log_check(struct sq *s, const struct engy_request_row *r)
{
	const char *bad = engy_store_row_bad(r);

	return bad ? sq_bad(s, "log", bad) : 0;
}

/* Row @r's values as parameters @o + 1 .. @o + 15. */
static void bind_row(sqlite3_stmt *st, int o, const struct engy_request_row *r)
{
	sqlite3_bind_int64(st, o + 1, r->time_ms);
	sqlite3_bind_text(st, o + 2, r->request_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, o + 3, r->key_id);
	sqlite3_bind_int64(st, o + 4, r->account_id);
	sqlite3_bind_text(st, o + 5, r->model, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, o + 6, r->miner, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, o + 7, r->worker_name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, o + 8, r->status);
	sqlite3_bind_int64(st, o + 9, r->prompt_tokens);
	sqlite3_bind_int64(st, o + 10, r->completion_tokens);
	sqlite3_bind_int64(st, o + 11, r->cached_tokens);
	sqlite3_bind_int64(st, o + 12, r->ttft_ms);
	sqlite3_bind_int64(st, o + 13, r->tpot_ms);
	sqlite3_bind_int64(st, o + 14, r->cost_micro);
	sqlite3_bind_int64(st, o + 15, r->is_probe);
}

int sq_log_insert(struct sq *s, struct sq_conn *c,
		  const struct engy_request_row *rows, size_t n)
{
	static const char *const sql[] = { sql_ins1, sql_ins2, sql_ins4,
					   sql_ins8, sql_ins16 };
	sqlite3_stmt *st;
	size_t m, i;
	int k, rc;

	while (n) {
		/* The largest statement that fits (sql[k]: 2^k rows), rows
		 * in their order. */
		for (k = 4; ((size_t)1 << k) > n; k--)
			;
		m = (size_t)1 << k;
		rc = sq_prep(s, c, sql[k], &st);
		if (rc)
			return rc;
		for (i = 0; i < m; i++)
			bind_row(st, (int)i * SQ_LOG_COLS, &rows[i]);
		rc = sq_exec(s, c, st, "log_append");
		if (rc)
			return rc;
		rows += m;
		n -= m;
	}
	return 0;
}

int sq_log_append(void *inst, const struct engy_request_row *rows, size_t n)
{
	struct sq *s = inst;
	struct sq_conn *c;
	size_t i;
	int rc;

	if (n && !rows)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if ((rc = sq_log_check(s, &rows[i])))
			return rc;
	if (!n)
		return 0;
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_begin(s, c);
	if (!rc) {
		rc = sq_end(s, c, sq_log_insert(s, c, rows, n));
	}
	sq_release(s, c);
	return rc;
}

static void rd_row(sqlite3_stmt *st, void *elem)
{
	struct engy_request_row *r = elem;

	r->id = sqlite3_column_int64(st, 0);
	r->time_ms = sqlite3_column_int64(st, 1);
	sq_col_text(st, 2, r->request_id, sizeof(r->request_id));
	r->key_id = sqlite3_column_int64(st, 3);
	r->account_id = sqlite3_column_int64(st, 4);
	sq_col_text(st, 5, r->model, sizeof(r->model));
	sq_col_text(st, 6, r->miner, sizeof(r->miner));
	sq_col_text(st, 7, r->worker_name, sizeof(r->worker_name));
	r->status = (uint32_t)sqlite3_column_int64(st, 8);
	r->prompt_tokens = (uint32_t)sqlite3_column_int64(st, 9);
	r->completion_tokens = (uint32_t)sqlite3_column_int64(st, 10);
	r->cached_tokens = (uint32_t)sqlite3_column_int64(st, 11);
	r->ttft_ms = (uint32_t)sqlite3_column_int64(st, 12);
	r->tpot_ms = (uint32_t)sqlite3_column_int64(st, 13);
	r->cost_micro = sqlite3_column_int64(st, 14);
	r->is_probe = (uint32_t)sqlite3_column_int64(st, 15);
}

int sq_log_query(void *inst, const struct engy_log_query *in,
		 struct engy_request_row **out, size_t *n)
{
	struct sq *s = inst;
	struct engy_log_query q;
	struct sq_conn *c;
	sqlite3_stmt *st;
	const char *sql;
	int rc;

	*out = NULL;
	*n = 0;
	rc = engy_store_log_query_in(in, s->max_query_rows, &q);
	if (rc)
		return rc;
	if (q.account_id)
		sql = q.newest_first ? sql_acct_desc : sql_acct_asc;
	else
		sql = q.newest_first ? sql_desc : sql_asc;
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_prep(s, c, sql, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, q.since_ms);
		sqlite3_bind_int64(st, 2, q.until_ms);
		sqlite3_bind_int64(st, 3, q.after_id);
		if (q.account_id)
			sqlite3_bind_int64(st, 5, q.account_id);
		sqlite3_bind_int64(st, 4, q.limit);
		rc = sq_collect(s, c, st, sizeof(**out), rd_row, (void **)out,
				n, "log_query");
	}
	sq_release(s, c);
	return rc;
}

int sq_log_prune(void *inst, int64_t before_ms, uint64_t *n)
{
	struct sq *s = inst;
	struct sq_conn *c;
	sqlite3_stmt *st;
	uint64_t cnt = 0;
	int rc = sq_acquire(s, &c);

	if (rc)
		return rc;
	rc = sq_begin(s, c);
	if (rc)
		goto out;
	rc = sq_prep(s, c, sql_prune, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, before_ms);
		rc = sq_exec(s, c, st, "log_prune");
	}
	if (!rc)
		cnt = (uint64_t)sqlite3_changes(c->db);
	if (!rc)
		rc = sq_prep(s, c, sql_claim_prune, &st);
	if (!rc) { /* the auditors' claims go with the rows */
		sqlite3_bind_int64(st, 1, before_ms);
		rc = sq_exec(s, c, st, "log_prune");
	}
	rc = sq_end(s, c, rc);
out:
	sq_release(s, c);
	if (!rc && n)
		*n = cnt;
	if (!rc && cnt)
		engy_info(s->h,
			  "event=store_log_pruned rows=%llu before_ms=%lld",
			  (unsigned long long)cnt, (long long)before_ms);
	return rc;
}
