/* SPDX-License-Identifier: MIT */
/* store-postgres: the metadata request log (no content, ever). */
#include <errno.h>
#include <string.h>

#include "pg.h"
#include "storecheck.h"
#include "storesql.h"

static const char sql_insert[] = STORESQL_LOG_INSERT(POSTGRES);
/* Four shapes, so each can use its index: $1 since, $2 until, $3 after,
 * $4 limit, $5 account. */
static const char sql_asc[] = STORESQL_LOG_ASC(POSTGRES);
static const char sql_desc[] = STORESQL_LOG_DESC(POSTGRES);
static const char sql_acct_asc[] = STORESQL_LOG_ACCT_ASC(POSTGRES);
static const char sql_acct_desc[] = STORESQL_LOG_ACCT_DESC(POSTGRES);
static const char sql_prune[] = STORESQL_LOG_PRUNE(POSTGRES);
static const char sql_claim_prune[] = STORESQL_CLAIM_PRUNE(POSTGRES);

int pg_log_check(struct pg *s, const struct engy_request_row *r)
{
	const char *bad = engy_store_row_bad(r);

	return bad ? pg_bad(s, "log", bad) : 0;
}

int pg_log_insert(struct pg *s, struct pg_conn *c,
		  const struct engy_request_row *r)
{
	struct pg_args a = { 0 };

	pg_arg_i64(&a, r->time_ms);
	pg_arg_text(&a, r->request_id);
	pg_arg_i64(&a, r->key_id);
	pg_arg_i64(&a, r->account_id);
	pg_arg_text(&a, r->model);
	pg_arg_text(&a, r->miner);
	pg_arg_text(&a, r->worker_name);
	pg_arg_i64(&a, r->status);
	pg_arg_i64(&a, r->prompt_tokens);
	pg_arg_i64(&a, r->completion_tokens);
	pg_arg_i64(&a, r->cached_tokens);
	pg_arg_i64(&a, r->ttft_ms);
	pg_arg_i64(&a, r->tpot_ms);
	pg_arg_i64(&a, r->cost_micro);
	pg_arg_i64(&a, r->is_probe);
	return pg_exec(s, c, sql_insert, &a, "log_append", NULL);
}

struct append_args {
	const struct engy_request_row *rows;
	size_t n;
};

static int do_append(struct pg *s, struct pg_conn *c, void *arg)
{
	struct append_args *x = arg;
	size_t i;
	int rc = 0;

	for (i = 0; !rc && i < x->n; i++)
		rc = pg_log_insert(s, c, &x->rows[i]);
	return rc;
}

int pg_log_append(void *inst, const struct engy_request_row *rows, size_t n)
{
	struct pg *s = inst;
	struct append_args x = { rows, n };
	size_t i;
	int rc;

	if (n && !rows)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if ((rc = pg_log_check(s, &rows[i])))
			return rc;
	if (!n)
		return 0;
	return pg_run(s, true, "log_append", do_append, &x);
}

static void rd_row(const PGresult *res, int i, void *elem)
{
	struct engy_request_row *r = elem;

	r->id = pg_i64(res, i, 0);
	r->time_ms = pg_i64(res, i, 1);
	pg_text(res, i, 2, r->request_id, sizeof(r->request_id));
	r->key_id = pg_i64(res, i, 3);
	r->account_id = pg_i64(res, i, 4);
	pg_text(res, i, 5, r->model, sizeof(r->model));
	pg_text(res, i, 6, r->miner, sizeof(r->miner));
	pg_text(res, i, 7, r->worker_name, sizeof(r->worker_name));
	r->status = (uint32_t)pg_i64(res, i, 8);
	r->prompt_tokens = (uint32_t)pg_i64(res, i, 9);
	r->completion_tokens = (uint32_t)pg_i64(res, i, 10);
	r->cached_tokens = (uint32_t)pg_i64(res, i, 11);
	r->ttft_ms = (uint32_t)pg_i64(res, i, 12);
	r->tpot_ms = (uint32_t)pg_i64(res, i, 13);
	r->cost_micro = pg_i64(res, i, 14);
	r->is_probe = (uint32_t)pg_i64(res, i, 15);
}

int pg_log_query(void *inst, const struct engy_log_query *in,
		 struct engy_request_row **out, size_t *n)
{
	struct pg *s = inst;
	struct engy_log_query q;
	struct pg_args a = { 0 };
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
	pg_arg_i64(&a, q.since_ms);
	pg_arg_i64(&a, q.until_ms);
	pg_arg_i64(&a, q.after_id);
	pg_arg_i64(&a, q.limit);
	if (q.account_id)
		pg_arg_i64(&a, q.account_id);
	return pg_read(s, sql, &a, "log_query", sizeof(**out), rd_row,
		       (void **)out, n);
}

struct prune_args {
	int64_t before_ms;
	int64_t n;
};

static int do_prune(struct pg *s, struct pg_conn *c, void *arg)
{
	struct prune_args *x = arg;
	struct pg_args a = { 0 };
	int rc;

	pg_arg_i64(&a, x->before_ms);
	rc = pg_exec(s, c, sql_prune, &a, "log_prune", &x->n);
	if (!rc) /* the auditors' claims go with the rows */
		rc = pg_exec(s, c, sql_claim_prune, &a, "log_prune", NULL);
	return rc;
}

int pg_log_prune(void *inst, int64_t before_ms, uint64_t *n)
{
	struct pg *s = inst;
	struct prune_args x = { before_ms, 0 };
	int rc = pg_run(s, true, "log_prune", do_prune, &x);

	if (rc)
		return rc;
	if (n)
		*n = (uint64_t)x.n;
	if (x.n)
		engy_info(s->h,
			  "event=store_log_pruned rows=%llu before_ms=%lld",
			  (unsigned long long)x.n, (long long)before_ms);
	return 0;
}
