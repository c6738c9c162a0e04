/* SPDX-License-Identifier: MIT */
/*
 * store-sqlite: the auditor's verdicts (statistics only, never content)
 * and its closed epochs (the signed payload and the public aggregates:
 * hotkeys, counts and weights, published anyway).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sq.h"
#include "storecheck.h"
#include "storesql.h"

static const char sql_v_insert[] = STORESQL_V_INSERT(SQLITE);
/* ?1 since, ?2 until, ?3 after, ?4 miner ("" = any), ?5 limit */
static const char sql_v_asc[] = STORESQL_V_ASC(SQLITE);
static const char sql_v_desc[] = STORESQL_V_DESC(SQLITE);
static const char sql_e_insert[] = STORESQL_E_INSERT(SQLITE);
static const char sql_e_get[] = STORESQL_E_GET(SQLITE);
static const char sql_e_latest[] = STORESQL_E_LATEST(SQLITE);

int sq_verdict_put(void *inst, const struct engy_verdict *v)
{
	struct sq *s = inst;
	struct sq_conn *c;
	sqlite3_stmt *st;
	const char *bad = engy_store_verdict_bad(v);
	int rc;

	if (bad)
		return v ? sq_bad(s, "verdict_put", bad) : -EINVAL;
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_begin(s, c);
	if (rc)
		goto out;
	rc = sq_prep(s, c, sql_v_insert, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, v->time_ms);
		sqlite3_bind_int64(st, 2, v->request_time_ms);
		sqlite3_bind_int64(st, 3, v->verdict);
		sqlite3_bind_int64(st, 4, v->is_probe);
		sqlite3_bind_int64(st, 5, v->chunks);
		sqlite3_bind_int64(st, 6, v->passed);
		sqlite3_bind_int64(st, 7, v->topk);
		sqlite3_bind_int64(st, 8, v->exp_p99);
		sqlite3_bind_int64(st, 9, v->exp_max);
		sqlite3_bind_int64(st, 10, v->limit_v);
		sqlite3_bind_int64(st, 11, v->limit_p_ppm);
		sqlite3_bind_int64(st, 12, v->mant_mean_max_milli);
		sqlite3_bind_int64(st, 13, v->mant_median_max_milli);
		sqlite3_bind_text(st, 14, v->scheme, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 15, v->reason, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 16, v->request_id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 17, v->miner, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 18, v->model, -1, SQLITE_STATIC);
		rc = sq_exec(s, c, st, "verdict_put");
	}
	rc = sq_end(s, c, rc);
out:
	sq_release(s, c);
	return rc;
}

static void rd_verdict(sqlite3_stmt *st, void *elem)
{
	struct engy_verdict *v = elem;

	v->id = sqlite3_column_int64(st, 0);
	v->time_ms = sqlite3_column_int64(st, 1);
	v->request_time_ms = sqlite3_column_int64(st, 2);
	v->verdict = (uint32_t)sqlite3_column_int64(st, 3);
	v->is_probe = (uint32_t)sqlite3_column_int64(st, 4);
	v->chunks = (uint32_t)sqlite3_column_int64(st, 5);
	v->passed = (uint32_t)sqlite3_column_int64(st, 6);
	v->topk = (uint32_t)sqlite3_column_int64(st, 7);
	v->exp_p99 = (uint32_t)sqlite3_column_int64(st, 8);
	v->exp_max = (uint32_t)sqlite3_column_int64(st, 9);
	v->limit_v = (uint32_t)sqlite3_column_int64(st, 10);
	v->limit_p_ppm = (uint32_t)sqlite3_column_int64(st, 11);
	v->mant_mean_max_milli = (uint32_t)sqlite3_column_int64(st, 12);
	v->mant_median_max_milli = (uint32_t)sqlite3_column_int64(st, 13);
	sq_col_text(st, 14, v->scheme, sizeof(v->scheme));
	sq_col_text(st, 15, v->reason, sizeof(v->reason));
	sq_col_text(st, 16, v->request_id, sizeof(v->request_id));
	sq_col_text(st, 17, v->miner, sizeof(v->miner));
	sq_col_text(st, 18, v->model, sizeof(v->model));
}

int sq_verdict_list(void *inst, const struct engy_verdict_query *in,
		    struct engy_verdict **out, size_t *n)
{
	struct sq *s = inst;
	struct engy_verdict_query q;
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	*n = 0;
	rc = engy_store_verdict_query_in(in, s->max_query_rows, &q);
	if (rc)
		return rc;
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_prep(s, c, q.newest_first ? sql_v_desc : sql_v_asc, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, q.since_ms);
		sqlite3_bind_int64(st, 2, q.until_ms);
		sqlite3_bind_int64(st, 3, q.after_id);
		sqlite3_bind_text(st, 4, q.miner, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 5, q.limit);
		rc = sq_collect(s, c, st, sizeof(**out), rd_verdict,
				(void **)out, n, "verdict_list");
	}
	sq_release(s, c);
	return rc;
}

int sq_epoch_put(void *inst, const struct engy_epoch_rec *e,
		 const char *payload, const char *aggregates)
{
	struct sq *s = inst;
	struct sq_conn *c;
	sqlite3_stmt *st;
	const char *bad = engy_store_epoch_bad(e, payload, aggregates);
	int rc;

	if (bad)
		return sq_bad(s, "epoch_put", bad);
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_begin(s, c);
	if (rc)
		goto out;
	rc = sq_prep(s, c, sql_e_insert, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, e->epoch_index);
		sqlite3_bind_int64(st, 2, e->start_ms);
		sqlite3_bind_int64(st, 3, e->end_ms);
		sqlite3_bind_int64(st, 4,
				   e->closed_ms ? e->closed_ms : sq_now_ms());
		sqlite3_bind_int64(st, 5, e->burn ? 1 : 0);
		sqlite3_bind_int64(st, 6, e->n_weights);
		sqlite3_bind_text(st, 7, e->digest, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 8, payload, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 9, aggregates, -1, SQLITE_STATIC);
		rc = sq_exec(s, c, st, "epoch_put");
	}
	rc = sq_end(s, c, rc);
out:
	sq_release(s, c);
	return rc;
}

static int dup_col(sqlite3_stmt *st, int col, char **out)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	int len = sqlite3_column_bytes(st, col);

	if (!out)
		return 0;
	*out = malloc((size_t)len + 1);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, t ? (const char *)t : "", (size_t)len);
	(*out)[len] = '\0';
	return 0;
}

int sq_epoch_get(void *inst, int64_t index, int latest,
		 struct engy_epoch_rec *out, char **payload, char **aggregates)
{
	struct sq *s = inst;
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc;

	if (payload)
		*payload = NULL;
	if (aggregates)
		*aggregates = NULL;
	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_prep(s, c, latest ? sql_e_latest : sql_e_get, &st);
	if (rc)
		goto out;
	if (!latest)
		sqlite3_bind_int64(st, 1, index);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		out->epoch_index = sqlite3_column_int64(st, 0);
		out->start_ms = sqlite3_column_int64(st, 1);
		out->end_ms = sqlite3_column_int64(st, 2);
		out->closed_ms = sqlite3_column_int64(st, 3);
		out->burn = (uint32_t)sqlite3_column_int64(st, 4);
		out->n_weights = (uint32_t)sqlite3_column_int64(st, 5);
		sq_col_text(st, 6, out->digest, sizeof(out->digest));
		rc = dup_col(st, 7, payload);
		if (!rc)
			rc = dup_col(st, 8, aggregates);
	} else if (rc == SQLITE_DONE) {
		rc = -ENOENT;
	} else {
		rc = sq_err(s, c, rc, "epoch_get");
	}
	sqlite3_reset(st);
	if (rc && payload) {
		free(*payload);
		*payload = NULL;
	}
	if (rc && aggregates) {
		free(*aggregates);
		*aggregates = NULL;
	}
out:
	sq_release(s, c);
	return rc;
}
