/* SPDX-License-Identifier: MIT */
/*
 * store-sqlite: the auditor's claims on jobs (one auditor audits a
 * request, a claim lapses so a crashed auditor's job is taken over) and
 * the open holds an epoch waits for (specs/store.md, "Audit claims").
 */
#include <errno.h>
#include <string.h>

#include "sq.h"
#include "storesql.h"

static const char sql_claim_insert[] = STORESQL_CLAIM_INSERT(SQLITE);
static const char sql_claim_take[] = STORESQL_CLAIM_TAKE(SQLITE);
static const char sql_claim_get[] = STORESQL_CLAIM_GET(SQLITE);
static const char sql_holds_open[] = STORESQL_HOLDS_OPEN(SQLITE);

static int claim_step(struct sq *s, struct sq_conn *c, const char *sql,
		      const char *rid, const char *holder, int64_t until_ms,
		      int64_t now_ms, int *changed)
{
	sqlite3_stmt *st;
	int rc = sq_prep(s, c, sql, &st);

	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, rid, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, holder, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, until_ms);
	sqlite3_bind_int64(st, 4, now_ms);
	rc = sq_exec(s, c, st, "audit_claim");
	*changed = rc ? 0 : sqlite3_changes(c->db);
	return rc;
}

int sq_audit_claim(void *inst, const char *request_id, const char *holder,
		   int64_t now_ms, int64_t until_ms, int64_t *held_until)
{
	struct sq *s = inst;
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc, changed = 0;
	int64_t held = 0;

	if (!request_id || !*request_id || strlen(request_id) > 63)
		return sq_bad(s, "audit_claim", "request_id");
	if (!holder || !*holder || strlen(holder) > 63)
		return sq_bad(s, "audit_claim", "holder");
	if (now_ms < 0 || until_ms <= now_ms)
		return sq_bad(s, "audit_claim", "until_ms");
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_begin(s, c);
	if (rc)
		goto out;
	rc = claim_step(s, c, sql_claim_insert, request_id, holder, until_ms,
			now_ms, &changed);
	if (!rc && !changed)
		rc = claim_step(s, c, sql_claim_take, request_id, holder,
				until_ms, now_ms, &changed);
	if (!rc && !changed) {
		rc = sq_prep(s, c, sql_claim_get, &st);
		if (!rc) {
			sqlite3_bind_text(st, 1, request_id, -1, SQLITE_STATIC);
			rc = sqlite3_step(st);
			if (rc == SQLITE_ROW) {
				held = sqlite3_column_int64(st, 0);
				rc = 0;
			} else {
				rc = rc == SQLITE_DONE
					     ? -EBUSY
					     : sq_err(s, c, rc, "audit_claim");
			}
			sqlite3_reset(st);
		}
	}
	rc = sq_end(s, c, rc);
	if (!rc && !changed) {
		if (held_until)
			*held_until = held;
		rc = -EALREADY;
	}
out:
	sq_release(s, c);
	return rc;
}

int sq_holds_open(void *inst, int64_t created_before_ms, int64_t now_ms,
		  uint64_t *n)
{
	struct sq *s = inst;
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc;

	if (!n)
		return -EINVAL;
	*n = 0;
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_prep(s, c, sql_holds_open, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, created_before_ms);
		sqlite3_bind_int64(st, 2, now_ms);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*n = (uint64_t)sqlite3_column_int64(st, 0);
			rc = 0;
		} else {
			rc = sq_err(s, c, rc, "holds_open");
		}
		sqlite3_reset(st);
	}
	sq_release(s, c);
	return rc;
}
