/* SPDX-License-Identifier: MIT */
/* store-postgres: accounts, top-ups and API keys. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "apikey.h"
#include "pg.h"
#include "storecheck.h"
#include "storesql.h"

static const char sql_account_insert[] =
	STORESQL_ACCOUNT_INSERT(POSTGRES) " RETURNING " STORESQL_ACCOUNT_COLS;
static const char sql_account_by_id[] = STORESQL_ACCOUNT_BY_ID(POSTGRES);
static const char sql_account_lock[] =
	"SELECT " STORESQL_ACCOUNT_COLS
	" FROM accounts WHERE id = $1 FOR UPDATE";
static const char sql_account_by_name[] = STORESQL_ACCOUNT_BY_NAME(POSTGRES);
static const char sql_account_list[] = STORESQL_ACCOUNT_LIST(POSTGRES);
static const char sql_topup_update[] =
	STORESQL_TOPUP_UPDATE(POSTGRES) " RETURNING " STORESQL_ACCOUNT_COLS;
static const char sql_topup_insert[] = STORESQL_TOPUP_INSERT(POSTGRES);
static const char sql_key_insert[] =
	STORESQL_KEY_INSERT(POSTGRES) " RETURNING " STORESQL_KEY_COLS;
static const char sql_key_by_hash[] = STORESQL_KEY_BY_HASH(POSTGRES);
static const char sql_key_revoke[] = STORESQL_KEY_REVOKE(POSTGRES);
static const char sql_key_exists[] = "SELECT 1 FROM api_keys WHERE id = $1";
static const char sql_account_exists[] = STORESQL_ACCOUNT_EXISTS(POSTGRES);
static const char sql_key_list[] = STORESQL_KEY_LIST(POSTGRES);

int pg_key_hash(void *inst, const char *key, size_t len, uint8_t hash[32])
{
	struct pg *s = inst;

	return engy_apikey_hash((const uint8_t *)s->pepper, s->pepper_len, key,
				len, hash);
}

static void rd_account(const PGresult *r, int i, void *elem)
{
	struct engy_account *a = elem;

	a->id = pg_i64(r, i, 0);
	pg_text(r, i, 1, a->name, sizeof(a->name));
	a->balance_micro = pg_i64(r, i, 2);
	a->reserved_micro = pg_i64(r, i, 3);
	a->credited_micro = pg_i64(r, i, 4);
	a->spent_micro = pg_i64(r, i, 5);
	a->created_ms = pg_i64(r, i, 6);
}

static void rd_key(const PGresult *r, int i, void *elem)
{
	struct engy_api_key *k = elem;

	k->id = pg_i64(r, i, 0);
	k->account_id = pg_i64(r, i, 1);
	pg_text(r, i, 3, k->shown, sizeof(k->shown));
	pg_text(r, i, 4, k->label, sizeof(k->label));
	k->status = (uint32_t)pg_i64(r, i, 5);
	k->created_ms = pg_i64(r, i, 6);
	k->revoked_ms = pg_i64(r, i, 7);
}

/* Run @sql for at most one row, read with @rd into @out (may be NULL). */
static int one(struct pg *s, struct pg_conn *c, const char *sql,
	       const struct pg_args *a, const char *what,
	       void (*rd)(const PGresult *r, int i, void *elem), void *out)
{
	PGresult *r;
	int rc = pg_q(s, c, sql, a, what, &r);

	if (rc)
		return rc;
	rc = PQntuples(r) ? 0 : -ENOENT;
	if (!rc && out)
		rd(r, 0, out);
	PQclear(r);
	return rc;
}

struct acct_args {
	const char *name;
	int64_t id;
	int64_t amount;
	struct engy_account a;
};

static int do_account_create(struct pg *s, struct pg_conn *c, void *arg)
{
	struct acct_args *x = arg;
	struct pg_args a = { 0 };

	pg_arg_text(&a, x->name);
	pg_arg_i64(&a, pg_now_ms());
	return one(s, c, sql_account_insert, &a, "account_create", rd_account,
		   &x->a);
}

int pg_account_create(void *inst, const char *name, struct engy_account *out)
{
	struct pg *s = inst;
	struct acct_args x = { .name = name };
	int rc;

	if (!engy_store_text_ok(name, 1, 63))
		return pg_bad(s, "account_create", "name");
	rc = pg_run(s, true, "account_create", do_account_create, &x);
	if (!rc && out)
		*out = x.a;
	return rc;
}

int pg_account_get(void *inst, int64_t id, struct engy_account *out)
{
	struct pg_args a = { 0 };

	pg_arg_i64(&a, id);
	return pg_read_one(inst, sql_account_by_id, &a, "account_get",
			   sizeof(*out), rd_account, out);
}

int pg_account_by_name(void *inst, const char *name, struct engy_account *out)
{
	struct pg_args a = { 0 };

	if (!engy_store_text_ok(name, 1, 63))
		return -ENOENT;
	pg_arg_text(&a, name);
	return pg_read_one(inst, sql_account_by_name, &a, "account_by_name",
			   sizeof(*out), rd_account, out);
}

int pg_account_list(void *inst, struct engy_account **out, size_t *n)
{
	return pg_read(inst, sql_account_list, NULL, "account_list",
		       sizeof(**out), rd_account, (void **)out, n);
}

static int do_topup(struct pg *s, struct pg_conn *c, void *arg)
{
	struct acct_args *x = arg;
	struct pg_args a = { 0 };
	int rc;

	pg_arg_i64(&a, x->id);
	rc = one(s, c, sql_account_lock, &a, "topup", rd_account, &x->a);
	if (rc)
		return rc;
	if (x->a.balance_micro > ENGY_STORE_MONEY_MAX - x->amount ||
	    x->a.credited_micro > INT64_MAX - x->amount) {
		engy_warn(
			s->h,
			"event=store_topup_refused account=%lld reason=balance_cap",
			(long long)x->id);
		return -ERANGE;
	}
	pg_arg_i64(&a, x->amount);
	rc = one(s, c, sql_topup_update, &a, "topup", rd_account, &x->a);
	pg_arg_i64(&a, pg_now_ms());
	if (!rc)
		rc = pg_exec(s, c, sql_topup_insert, &a, "topup", NULL);
	return rc;
}

int pg_topup(void *inst, int64_t account_id, int64_t amount,
	     struct engy_account *out)
{
	struct pg *s = inst;
	struct acct_args x = { .id = account_id, .amount = amount };
	int rc;

	if (amount <= 0 || amount > ENGY_STORE_MONEY_MAX) {
		engy_warn(
			s->h,
			"event=store_bad_input op=topup field=amount_micro value=%lld",
			(long long)amount);
		return -EINVAL;
	}
	rc = pg_run(s, true, "topup", do_topup, &x);
	if (!rc && out)
		*out = x.a;
	return rc;
}

struct key_args {
	int64_t id;
	const uint8_t *hash;
	const char *shown;
	const char *label;
	struct engy_api_key k;
};

static int do_key_create(struct pg *s, struct pg_conn *c, void *arg)
{
	struct key_args *x = arg;
	struct pg_args a = { 0 };

	pg_arg_i64(&a, x->id);
	pg_arg_bytes(&a, x->hash, 32);
	pg_arg_text(&a, x->shown);
	pg_arg_text(&a, x->label);
	pg_arg_i64(&a, pg_now_ms());
	return one(s, c, sql_key_insert, &a, "key_create", rd_key, &x->k);
}

int pg_key_create(void *inst, int64_t account_id, const char *label, char **key,
		  struct engy_api_key *out)
{
	struct pg *s = inst;
	char text[ENGY_APIKEY_SIZE], shown[ENGY_APIKEY_SHOWN + 1];
	uint8_t hash[32];
	struct key_args x = {
		account_id, hash, shown, label ? label : "", { 0 }
	};
	int rc;

	if (!key || !engy_store_text_ok(x.label, 0, 63))
		return pg_bad(s, "key_create", "label");
	*key = NULL;
	rc = engy_apikey_generate(ENGY_APIKEY_PREFIX, text, sizeof(text));
	if (!rc)
		rc = pg_key_hash(s, text, ENGY_APIKEY_LEN, hash);
	if (rc)
		goto wipe;
	engy_apikey_shown(text, shown);
	rc = pg_run(s, true, "key_create", do_key_create, &x);
	if (!rc && !(*key = strdup(text)))
		rc = -ENOMEM;
	if (!rc && out)
		*out = x.k;
wipe:
	sodium_memzero(text, sizeof(text));
	return rc;
}

static int do_key_lookup(struct pg *s, struct pg_conn *c, void *arg)
{
	struct key_args *x = arg;
	struct pg_args a = { 0 };
	uint8_t stored[32];
	PGresult *r;
	int rc;

	pg_arg_bytes(&a, x->hash, 32);
	rc = pg_q(s, c, sql_key_by_hash, &a, "key_lookup", &r);
	if (rc)
		return rc;
	rc = -ENOENT;
	if (PQntuples(r)) {
		pg_blob32(r, 0, 2, stored);
		if (engy_apikey_hash_eq(stored, x->hash)) {
			rd_key(r, 0, &x->k);
			rc = 0;
		}
	}
	PQclear(r);
	return rc;
}

int pg_key_lookup(void *inst, const uint8_t hash[32], struct engy_api_key *out)
{
	struct key_args x = { .hash = hash };
	int rc = pg_run(inst, false, "key_lookup", do_key_lookup, &x);

	if (!rc && out)
		*out = x.k;
	return rc;
}

static int do_key_revoke(struct pg *s, struct pg_conn *c, void *arg)
{
	struct key_args *x = arg;
	struct pg_args a = { 0 };
	int64_t changed = 0;
	int rc;

	pg_arg_i64(&a, x->id);
	pg_arg_i64(&a, pg_now_ms());
	rc = pg_exec(s, c, sql_key_revoke, &a, "key_revoke", &changed);
	/* Nothing changed: unknown, or revoked before (which is fine). */
	a.n = 1;
	if (!rc && !changed)
		rc = one(s, c, sql_key_exists, &a, "key_revoke", NULL, NULL);
	return rc;
}

int pg_key_revoke(void *inst, int64_t key_id)
{
	struct key_args x = { .id = key_id };

	return pg_run(inst, true, "key_revoke", do_key_revoke, &x);
}

struct key_list_args {
	int64_t account_id;
	struct engy_api_key **out;
	size_t *n;
};

static int do_key_list(struct pg *s, struct pg_conn *c, void *arg)
{
	struct key_list_args *x = arg;
	struct pg_args a = { 0 };
	int rc;

	pg_arg_i64(&a, x->account_id);
	rc = one(s, c, sql_account_exists, &a, "key_list", NULL, NULL);
	if (!rc)
		rc = pg_rows(s, c, sql_key_list, &a, "key_list",
			     sizeof(**x->out), rd_key, (void **)x->out, x->n);
	return rc;
}

int pg_key_list(void *inst, int64_t account_id, struct engy_api_key **out,
		size_t *n)
{
	struct key_list_args x = { account_id, out, n };

	*out = NULL;
	*n = 0;
	return pg_run(inst, false, "key_list", do_key_list, &x);
}
