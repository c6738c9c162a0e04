/* SPDX-License-Identifier: MIT */
/*
 * store-postgres: the auditor's claims on jobs (one auditor audits a
 * request, a claim lapses so a crashed auditor's job is taken over) and
 * the open holds an epoch waits for (specs/store.md, "Audit claims").
 * Two auditors claiming one request at once: the second INSERT waits for
 * the first's commit on the primary key and does nothing, its UPDATE
 * re-reads the committed row under READ COMMITTED and finds it live.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "storesql.h"

static const char sql_claim_insert[] = STORESQL_CLAIM_INSERT(POSTGRES);
static const char sql_claim_take[] = STORESQL_CLAIM_TAKE(POSTGRES);
static const char sql_claim_get[] = STORESQL_CLAIM_GET(POSTGRES);
static const char sql_holds_open[] = STORESQL_HOLDS_OPEN(POSTGRES);

struct claim_args {
	const char *rid, *holder;
	int64_t now_ms, until_ms;
	int64_t changed, held;
};

static void rd_i64(const PGresult *r, int i, void *elem)
{
	*(int64_t *)elem = pg_i64(r, i, 0);
}

static int do_claim(struct pg *s, struct pg_conn *c, void *arg)
{
	struct claim_args *x = arg;
	struct pg_args a = { 0 }, g = { 0 };
	int64_t *held = NULL;
	size_t n = 0;
	int rc;

	x->changed = 0;
	pg_arg_text(&a, x->rid);
	pg_arg_text(&a, x->holder);
	pg_arg_i64(&a, x->until_ms);
	pg_arg_i64(&a, x->now_ms);
	rc = pg_exec(s, c, sql_claim_insert, &a, "audit_claim", &x->changed);
	if (!rc && !x->changed)
		rc = pg_exec(s, c, sql_claim_take, &a, "audit_claim",
			     &x->changed);
	if (rc || x->changed)
		return rc;
	pg_arg_text(&g, x->rid);
	rc = pg_rows(s, c, sql_claim_get, &g, "audit_claim", sizeof(*held),
		     rd_i64, (void **)&held, &n);
	if (!rc && !n)
		rc = -EBUSY; /* pruned between the two: try again later */
	if (!rc)
		x->held = held[0];
	free(held);
	return rc;
}

int pg_audit_claim(void *inst, const char *request_id, const char *holder,
		   int64_t now_ms, int64_t until_ms, int64_t *held_until)
{
	struct pg *s = inst;
	struct claim_args x = { request_id, holder, now_ms, until_ms, 0, 0 };
	int rc;

	if (!request_id || !*request_id || strlen(request_id) > 63)
		return pg_bad(s, "audit_claim", "request_id");
	if (!holder || !*holder || strlen(holder) > 63)
		return pg_bad(s, "audit_claim", "holder");
	if (now_ms < 0 || until_ms <= now_ms)
		return pg_bad(s, "audit_claim", "until_ms");
	rc = pg_run(s, true, "audit_claim", do_claim, &x);
	if (rc)
		return rc;
	if (x.changed)
		return 0;
	if (held_until)
		*held_until = x.held;
	return -EALREADY;
}

int pg_holds_open(void *inst, int64_t created_before_ms, int64_t now_ms,
		  uint64_t *n)
{
	struct pg *s = inst;
	struct pg_args a = { 0 };
	int64_t cnt = 0;
	int rc;

	if (!n)
		return -EINVAL;
	*n = 0;
	pg_arg_i64(&a, created_before_ms);
	pg_arg_i64(&a, now_ms);
	rc = pg_read_one(s, sql_holds_open, &a, "holds_open", sizeof(cnt),
			 rd_i64, &cnt);
	if (!rc)
		*n = (uint64_t)cnt;
	return rc;
}
