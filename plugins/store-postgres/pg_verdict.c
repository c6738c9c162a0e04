/* SPDX-License-Identifier: MIT */
/*
 * store-postgres: the auditor's verdicts (statistics only, never content)
 * and its closed epochs (the signed payload and the public aggregates).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "storecheck.h"
#include "storesql.h"

static const char sql_v_insert[] = STORESQL_V_INSERT(POSTGRES);
/* $1 since, $2 until, $3 after, $4 miner ("" = any), $5 limit */
static const char sql_v_asc[] = STORESQL_V_ASC(POSTGRES);
static const char sql_v_desc[] = STORESQL_V_DESC(POSTGRES);
static const char sql_e_insert[] = STORESQL_E_INSERT(POSTGRES);
static const char sql_e_get[] = STORESQL_E_GET(POSTGRES);
static const char sql_e_latest[] = STORESQL_E_LATEST(POSTGRES);

struct put_args {
	const char *sql;
	const char *what;
	struct pg_args a;
};

static int do_put(struct pg *s, struct pg_conn *c, void *arg)
{
	struct put_args *p = arg;

	return pg_exec(s, c, p->sql, &p->a, p->what, NULL);
}

int pg_verdict_put(void *inst, const struct engy_verdict *v)
{
	struct pg *s = inst;
	struct put_args p = { sql_v_insert, "verdict_put", { 0 } };
	const char *bad = engy_store_verdict_bad(v);

	if (bad)
		return v ? pg_bad(s, "verdict_put", bad) : -EINVAL;
	pg_arg_i64(&p.a, v->time_ms);
	pg_arg_i64(&p.a, v->request_time_ms);
	pg_arg_i64(&p.a, v->verdict);
	pg_arg_i64(&p.a, v->is_probe);
	pg_arg_i64(&p.a, v->chunks);
	pg_arg_i64(&p.a, v->passed);
	pg_arg_i64(&p.a, v->topk);
	pg_arg_i64(&p.a, v->exp_p99);
	pg_arg_i64(&p.a, v->exp_max);
	pg_arg_i64(&p.a, v->limit_v);
	pg_arg_i64(&p.a, v->limit_p_ppm);
	pg_arg_i64(&p.a, v->mant_mean_max_milli);
	pg_arg_i64(&p.a, v->mant_median_max_milli);
	pg_arg_text(&p.a, v->scheme);
	pg_arg_text(&p.a, v->reason);
	pg_arg_text(&p.a, v->request_id);
	pg_arg_text(&p.a, v->miner);
	pg_arg_text(&p.a, v->model);
	return pg_run(s, true, "verdict_put", do_put, &p);
}

static void rd_verdict(const PGresult *r, int i, void *elem)
{
	struct engy_verdict *v = elem;

	v->id = pg_i64(r, i, 0);
	v->time_ms = pg_i64(r, i, 1);
	v->request_time_ms = pg_i64(r, i, 2);
	v->verdict = (uint32_t)pg_i64(r, i, 3);
	v->is_probe = (uint32_t)pg_i64(r, i, 4);
	v->chunks = (uint32_t)pg_i64(r, i, 5);
	v->passed = (uint32_t)pg_i64(r, i, 6);
	v->topk = (uint32_t)pg_i64(r, i, 7);
	v->exp_p99 = (uint32_t)pg_i64(r, i, 8);
	v->exp_max = (uint32_t)pg_i64(r, i, 9);
	v->limit_v = (uint32_t)pg_i64(r, i, 10);
	v->limit_p_ppm = (uint32_t)pg_i64(r, i, 11);
	v->mant_mean_max_milli = (uint32_t)pg_i64(r, i, 12);
	v->mant_median_max_milli = (uint32_t)pg_i64(r, i, 13);
	pg_text(r, i, 14, v->scheme, sizeof(v->scheme));
	pg_text(r, i, 15, v->reason, sizeof(v->reason));
	pg_text(r, i, 16, v->request_id, sizeof(v->request_id));
	pg_text(r, i, 17, v->miner, sizeof(v->miner));
	pg_text(r, i, 18, v->model, sizeof(v->model));
}

int pg_verdict_list(void *inst, const struct engy_verdict_query *in,
		    struct engy_verdict **out, size_t *n)
{
	struct pg *s = inst;
	struct engy_verdict_query q;
	struct pg_args a = { 0 };
	int rc;

	*out = NULL;
	*n = 0;
	rc = engy_store_verdict_query_in(in, s->max_query_rows, &q);
	if (rc)
		return rc;
	pg_arg_i64(&a, q.since_ms);
	pg_arg_i64(&a, q.until_ms);
	pg_arg_i64(&a, q.after_id);
	pg_arg_text(&a, q.miner);
	pg_arg_i64(&a, q.limit);
	return pg_read(s, q.newest_first ? sql_v_desc : sql_v_asc, &a,
		       "verdict_list", sizeof(**out), rd_verdict, (void **)out,
		       n);
}

int pg_epoch_put(void *inst, const struct engy_epoch_rec *e,
		 const char *payload, const char *aggregates)
{
	struct pg *s = inst;
	struct put_args p = { sql_e_insert, "epoch_put", { 0 } };
	const char *bad = engy_store_epoch_bad(e, payload, aggregates);

	if (bad)
		return pg_bad(s, "epoch_put", bad);
	pg_arg_i64(&p.a, e->epoch_index);
	pg_arg_i64(&p.a, e->start_ms);
	pg_arg_i64(&p.a, e->end_ms);
	pg_arg_i64(&p.a, e->closed_ms ? e->closed_ms : pg_now_ms());
	pg_arg_i64(&p.a, e->burn ? 1 : 0);
	pg_arg_i64(&p.a, e->n_weights);
	pg_arg_text(&p.a, e->digest);
	pg_arg_text(&p.a, payload);
	pg_arg_text(&p.a, aggregates);
	return pg_run(s, true, "epoch_put", do_put, &p);
}

struct epoch_args {
	int64_t index;
	int latest;
	struct engy_epoch_rec *out;
	char **payload;
	char **aggregates;
};

static int dup_col(const PGresult *r, int col, char **out)
{
	size_t len = (size_t)PQgetlength(r, 0, col);

	if (!out)
		return 0;
	*out = malloc(len + 1);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, PQgetvalue(r, 0, col), len);
	(*out)[len] = '\0';
	return 0;
}

static int do_epoch_get(struct pg *s, struct pg_conn *c, void *arg)
{
	struct epoch_args *x = arg;
	struct pg_args a = { 0 };
	PGresult *r;
	int rc;

	if (!x->latest)
		pg_arg_i64(&a, x->index);
	rc = pg_q(s, c, x->latest ? sql_e_latest : sql_e_get, &a, "epoch_get",
		  &r);
	if (rc)
		return rc;
	if (!PQntuples(r)) {
		PQclear(r);
		return -ENOENT;
	}
	x->out->epoch_index = pg_i64(r, 0, 0);
	x->out->start_ms = pg_i64(r, 0, 1);
	x->out->end_ms = pg_i64(r, 0, 2);
	x->out->closed_ms = pg_i64(r, 0, 3);
	x->out->burn = (uint32_t)pg_i64(r, 0, 4);
	x->out->n_weights = (uint32_t)pg_i64(r, 0, 5);
	pg_text(r, 0, 6, x->out->digest, sizeof(x->out->digest));
	rc = dup_col(r, 7, x->payload);
	if (!rc)
		rc = dup_col(r, 8, x->aggregates);
	PQclear(r);
	return rc;
}

int pg_epoch_get(void *inst, int64_t index, int latest,
		 struct engy_epoch_rec *out, char **payload, char **aggregates)
{
	struct epoch_args x = { index, latest, out, payload, aggregates };
	int rc;

	if (payload)
		*payload = NULL;
	if (aggregates)
		*aggregates = NULL;
	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	rc = pg_run(inst, false, "epoch_get", do_epoch_get, &x);
	if (rc && payload) {
		free(*payload);
		*payload = NULL;
	}
	if (rc && aggregates) {
		free(*aggregates);
		*aggregates = NULL;
	}
	return rc;
}
