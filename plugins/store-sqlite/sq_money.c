/* SPDX-License-Identifier: MIT */
/* store-sqlite: accounts, top-ups and API keys. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "apikey.h"
#include "sq.h"
#include "storecheck.h"
#include "storesql.h"

static const char sql_account_insert[] = STORESQL_ACCOUNT_INSERT(SQLITE);
static const char sql_account_by_id[] = STORESQL_ACCOUNT_BY_ID(SQLITE);
static const char sql_account_by_name[] = STORESQL_ACCOUNT_BY_NAME(SQLITE);
static const char sql_account_list[] = STORESQL_ACCOUNT_LIST(SQLITE);
static const char sql_topup_update[] = STORESQL_TOPUP_UPDATE(SQLITE);
static const char sql_topup_insert[] = STORESQL_TOPUP_INSERT(SQLITE);
static const char sql_key_insert[] = STORESQL_KEY_INSERT(SQLITE);
static const char sql_key_by_hash[] = STORESQL_KEY_BY_HASH(SQLITE);
static const char sql_key_by_id[] =
	"SELECT " STORESQL_KEY_COLS " FROM api_keys WHERE id = ?1";
static const char sql_key_revoke[] = STORESQL_KEY_REVOKE(SQLITE);
static const char sql_key_list[] = STORESQL_KEY_LIST(SQLITE);

int sq_key_hash(void *inst, const char *key, size_t len, uint8_t hash[32])
{
	struct sq *s = inst;

	return engy_apikey_hash((const uint8_t *)s->pepper, s->pepper_len, key,
				len, hash);
}

static void read_account(sqlite3_stmt *st, struct engy_account *a)
{
	memset(a, 0, sizeof(*a));
	a->id = sqlite3_column_int64(st, 0);
	sq_col_text(st, 1, a->name, sizeof(a->name));
	a->balance_micro = sqlite3_column_int64(st, 2);
	a->reserved_micro = sqlite3_column_int64(st, 3);
	a->credited_micro = sqlite3_column_int64(st, 4);
	a->spent_micro = sqlite3_column_int64(st, 5);
	a->created_ms = sqlite3_column_int64(st, 6);
}

static void read_key(sqlite3_stmt *st, struct engy_api_key *k)
{
	memset(k, 0, sizeof(*k));
	k->id = sqlite3_column_int64(st, 0);
	k->account_id = sqlite3_column_int64(st, 1);
	sq_col_text(st, 3, k->shown, sizeof(k->shown));
	sq_col_text(st, 4, k->label, sizeof(k->label));
	k->status = (uint32_t)sqlite3_column_int(st, 5);
	k->created_ms = sqlite3_column_int64(st, 6);
	k->revoked_ms = sqlite3_column_int64(st, 7);
}

/* Step @st for one row: 0 with a row, -ENOENT without, or an error. */
static int one_row(struct sq *s, struct sq_conn *c, sqlite3_stmt *st,
		   const char *what)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? -ENOENT : sq_err(s, c, rc, what);
}

static int get_account(struct sq *s, struct sq_conn *c, int64_t id,
		       struct engy_account *out)
{
	sqlite3_stmt *st;
	int rc = sq_prep(s, c, sql_account_by_id, &st);

	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	rc = one_row(s, c, st, "account_get");
	if (!rc)
		read_account(st, out);
	sqlite3_reset(st);
	return rc;
}

int sq_account_create(void *inst, const char *name, struct engy_account *out)
{
	struct sq *s = inst;
	struct sq_conn *c;
	sqlite3_stmt *st;
	int64_t now = sq_now_ms();
	int rc;

	if (!engy_store_text_ok(name, 1, 63))
		return sq_bad(s, "account_create", "name");
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_begin(s, c);
	if (rc)
		goto out;
	rc = sq_prep(s, c, sql_account_insert, &st);
	if (!rc) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, now);
		rc = sq_exec(s, c, st, "account_create");
	}
	if (!rc && out)
		rc = get_account(s, c, sqlite3_last_insert_rowid(c->db), out);
	rc = sq_end(s, c, rc);
out:
	sq_release(s, c);
	return rc;
}

int sq_account_get(void *inst, int64_t id, struct engy_account *out)
{
	struct sq *s = inst;
	struct sq_conn *c;
	int rc = sq_acquire(s, &c);

	if (rc)
		return rc;
	rc = get_account(s, c, id, out);
	sq_release(s, c);
	return rc;
}

int sq_account_by_name(void *inst, const char *name, struct engy_account *out)
{
	struct sq *s = inst;
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc;

	if (!engy_store_text_ok(name, 1, 63))
		return -ENOENT;
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_prep(s, c, sql_account_by_name, &st);
	if (!rc) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		rc = one_row(s, c, st, "account_by_name");
		if (!rc)
			read_account(st, out);
	}
	sq_release(s, c);
	return rc;
}

static void rd_account(sqlite3_stmt *st, void *elem)
{
	read_account(st, elem);
}

int sq_account_list(void *inst, struct engy_account **out, size_t *n)
{
	struct sq *s = inst;
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	*n = 0;
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_prep(s, c, sql_account_list, &st);
	if (!rc)
		rc = sq_collect(s, c, st, sizeof(**out), rd_account,
				(void **)out, n, "account_list");
	sq_release(s, c);
	return rc;
}

int sq_topup(void *inst, int64_t account_id, int64_t amount,
	     struct engy_account *out)
{
	struct sq *s = inst;
	struct engy_account a;
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc;

	if (amount <= 0 || amount > ENGY_STORE_MONEY_MAX) {
		engy_warn(
			s->h,
			"event=store_bad_input op=topup field=amount_micro value=%lld",
			(long long)amount);
		return -EINVAL;
	}
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_begin(s, c);
	if (rc)
		goto out;
	rc = get_account(s, c, account_id, &a);
	if (!rc && (a.balance_micro > ENGY_STORE_MONEY_MAX - amount ||
		    a.credited_micro > INT64_MAX - amount)) {
		engy_warn(
			s->h,
			"event=store_topup_refused account=%lld reason=balance_cap",
			(long long)account_id);
		rc = -ERANGE;
	}
	if (!rc)
		rc = sq_prep(s, c, sql_topup_update, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, account_id);
		sqlite3_bind_int64(st, 2, amount);
		rc = sq_exec(s, c, st, "topup");
	}
	if (!rc)
		rc = sq_prep(s, c, sql_topup_insert, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, account_id);
		sqlite3_bind_int64(st, 2, amount);
		sqlite3_bind_int64(st, 3, sq_now_ms());
		rc = sq_exec(s, c, st, "topup");
	}
	if (!rc && out)
		rc = get_account(s, c, account_id, out);
	rc = sq_end(s, c, rc);
out:
	sq_release(s, c);
	return rc;
}

static int get_key(struct sq *s, struct sq_conn *c, const char *sql, int64_t id,
		   const uint8_t *hash, struct engy_api_key *out)
{
	sqlite3_stmt *st;
	int rc = sq_prep(s, c, sql, &st);

	if (rc)
		return rc;
	if (hash)
		sqlite3_bind_blob(st, 1, hash, 32, SQLITE_STATIC);
	else
		sqlite3_bind_int64(st, 1, id);
	rc = one_row(s, c, st, "key_get");
	if (!rc && hash &&
	    (sqlite3_column_bytes(st, 2) != 32 ||
	     !engy_apikey_hash_eq(sqlite3_column_blob(st, 2), hash)))
		rc = -ENOENT;
	if (!rc && out)
		read_key(st, out);
	sqlite3_reset(st);
	return rc;
}

int sq_key_create(void *inst, int64_t account_id, const char *label, char **key,
		  struct engy_api_key *out)
{
	struct sq *s = inst;
	char text[ENGY_APIKEY_SIZE], shown[ENGY_APIKEY_SHOWN + 1];
	uint8_t hash[32];
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc;

	if (!label)
		label = "";
	if (!key || !engy_store_text_ok(label, 0, 63))
		return sq_bad(s, "key_create", "label");
	*key = NULL;
	rc = engy_apikey_generate(ENGY_APIKEY_PREFIX, text, sizeof(text));
	if (!rc)
		rc = sq_key_hash(s, text, ENGY_APIKEY_LEN, hash);
	if (rc)
		return rc;
	engy_apikey_shown(text, shown);
	rc = sq_acquire(s, &c);
	if (rc)
		goto wipe;
	rc = sq_begin(s, c);
	if (rc)
		goto release;
	rc = sq_prep(s, c, sql_key_insert, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, account_id);
		sqlite3_bind_blob(st, 2, hash, 32, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, shown, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, label, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 5, sq_now_ms());
		rc = sq_exec(s, c, st, "key_create");
	}
	if (!rc && out)
		rc = get_key(s, c, sql_key_by_id,
			     sqlite3_last_insert_rowid(c->db), NULL, out);
	if (!rc) {
		*key = strdup(text);
		if (!*key)
			rc = -ENOMEM;
	}
	rc = sq_end(s, c, rc);
	if (rc && *key) {
		sodium_memzero(*key, ENGY_APIKEY_LEN);
		free(*key);
		*key = NULL;
	}
release:
	sq_release(s, c);
wipe:
	sodium_memzero(text, sizeof(text));
	return rc;
}

int sq_key_lookup(void *inst, const uint8_t hash[32], struct engy_api_key *out)
{
	struct sq *s = inst;
	struct sq_conn *c;
	int rc = sq_acquire(s, &c);

	if (rc)
		return rc;
	rc = get_key(s, c, sql_key_by_hash, 0, hash, out);
	sq_release(s, c);
	return rc;
}

int sq_key_revoke(void *inst, int64_t key_id)
{
	struct sq *s = inst;
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc = sq_acquire(s, &c);

	if (rc)
		return rc;
	rc = sq_begin(s, c);
	if (rc)
		goto out;
	rc = sq_prep(s, c, sql_key_revoke, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, key_id);
		sqlite3_bind_int64(st, 2, sq_now_ms());
		rc = sq_exec(s, c, st, "key_revoke");
	}
	/* Nothing changed: unknown, or revoked before (which is fine). */
	if (!rc && sqlite3_changes(c->db) == 0)
		rc = get_key(s, c, sql_key_by_id, key_id, NULL, NULL);
	rc = sq_end(s, c, rc);
out:
	sq_release(s, c);
	return rc;
}

static void rd_key(sqlite3_stmt *st, void *elem)
{
	read_key(st, elem);
}

int sq_key_list(void *inst, int64_t account_id, struct engy_api_key **out,
		size_t *n)
{
	struct sq *s = inst;
	struct engy_account a;
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	*n = 0;
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = get_account(s, c, account_id, &a);
	if (!rc)
		rc = sq_prep(s, c, sql_key_list, &st);
	if (!rc) {
		sqlite3_bind_int64(st, 1, account_id);
		rc = sq_collect(s, c, st, sizeof(**out), rd_key, (void **)out,
				n, "key_list");
	}
	sq_release(s, c);
	return rc;
}
