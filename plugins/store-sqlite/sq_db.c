/* SPDX-License-Identifier: MIT */
/* store-sqlite: connections, statements, transactions, the schema. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "grow.h"
#include "sq.h"

/*
 * Schema migrations: entry v-1 takes a database from version v-1 to v.
 * Append only; a shipped entry never changes.  Money columns are INTEGER
 * and checked to hold integers, and the account invariants are checks of
 * their own, so no bug above can write a negative or fractional balance.
 * No table has a column for prompt, completion or token content; every
 * text column is a bounded identifier (specs/store.md, "Retention").
 */
static const char *const migrations[SQ_SCHEMA_VERSION] = {
	"CREATE TABLE accounts ("
	" id INTEGER PRIMARY KEY,"
	" name TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 63),"
	" balance_micro INTEGER NOT NULL DEFAULT 0"
	"  CHECK (typeof(balance_micro) = 'integer' AND balance_micro >= 0),"
	" reserved_micro INTEGER NOT NULL DEFAULT 0"
	"  CHECK (typeof(reserved_micro) = 'integer' AND reserved_micro >= 0"
	"   AND reserved_micro <= balance_micro),"
	" credited_micro INTEGER NOT NULL DEFAULT 0"
	"  CHECK (typeof(credited_micro) = 'integer' AND credited_micro >= 0),"
	" spent_micro INTEGER NOT NULL DEFAULT 0"
	"  CHECK (typeof(spent_micro) = 'integer' AND spent_micro >= 0),"
	" created_ms INTEGER NOT NULL,"
	" CHECK (balance_micro = credited_micro - spent_micro));"
	"CREATE TABLE topups ("
	" id INTEGER PRIMARY KEY,"
	" account_id INTEGER NOT NULL REFERENCES accounts(id),"
	" amount_micro INTEGER NOT NULL"
	"  CHECK (typeof(amount_micro) = 'integer' AND amount_micro > 0),"
	" time_ms INTEGER NOT NULL);"
	"CREATE INDEX topups_account ON topups(account_id, time_ms);"
	"CREATE TABLE api_keys ("
	" id INTEGER PRIMARY KEY,"
	" account_id INTEGER NOT NULL REFERENCES accounts(id),"
	" hash BLOB NOT NULL UNIQUE"
	"  CHECK (typeof(hash) = 'blob' AND length(hash) = 32),"
	" shown TEXT NOT NULL CHECK (length(shown) <= 15),"
	" label TEXT NOT NULL CHECK (length(label) <= 63),"
	" status INTEGER NOT NULL CHECK (status IN (1, 2)),"
	" created_ms INTEGER NOT NULL,"
	" revoked_ms INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX api_keys_account ON api_keys(account_id);"
	"CREATE TABLE reservations ("
	" id INTEGER PRIMARY KEY,"
	" account_id INTEGER NOT NULL REFERENCES accounts(id),"
	" key_id INTEGER NOT NULL,"
	" amount_micro INTEGER NOT NULL"
	"  CHECK (typeof(amount_micro) = 'integer' AND amount_micro > 0),"
	" created_ms INTEGER NOT NULL,"
	" expires_ms INTEGER NOT NULL);"
	"CREATE INDEX reservations_expires ON reservations(expires_ms);"
	"CREATE INDEX reservations_account ON reservations(account_id);"
	"CREATE TABLE models ("
	" name TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 127),"
	" status INTEGER NOT NULL CHECK (status IN (1, 2)),"
	" max_input_tokens INTEGER NOT NULL CHECK (max_input_tokens > 0),"
	" max_output_tokens INTEGER NOT NULL CHECK (max_output_tokens > 0),"
	" max_request_s INTEGER NOT NULL CHECK (max_request_s > 0),"
	" toploc_topk INTEGER NOT NULL CHECK (toploc_topk > 0),"
	" toploc_v INTEGER NOT NULL CHECK (toploc_v >= 0),"
	" toploc_p_ppm INTEGER NOT NULL"
	"  CHECK (toploc_p_ppm BETWEEN 0 AND 1000000),"
	" qual_ttft_p99_ms INTEGER NOT NULL CHECK (qual_ttft_p99_ms >= 0),"
	" qual_tpot_p99_ms INTEGER NOT NULL CHECK (qual_tpot_p99_ms >= 0),"
	" score_rate INTEGER NOT NULL"
	"  CHECK (typeof(score_rate) = 'integer' AND score_rate >= 0),"
	" price_input INTEGER NOT NULL"
	"  CHECK (typeof(price_input) = 'integer' AND price_input >= 0),"
	" price_cached_input INTEGER NOT NULL"
	"  CHECK (typeof(price_cached_input) = 'integer'"
	"   AND price_cached_input >= 0),"
	" price_output INTEGER NOT NULL"
	"  CHECK (typeof(price_output) = 'integer' AND price_output >= 0),"
	" updated_ms INTEGER NOT NULL);"
	"CREATE TABLE model_roots ("
	" root BLOB PRIMARY KEY CHECK (length(root) = 32),"
	" model TEXT NOT NULL REFERENCES models(name)"
	"  CHECK (length(model) <= 127),"
	" spec_root BLOB NOT NULL CHECK (length(spec_root) = 32),"
	" quant TEXT NOT NULL CHECK (length(quant) <= 31),"
	" arch TEXT NOT NULL CHECK (length(arch) <= 31),"
	" added_ms INTEGER NOT NULL);"
	"CREATE INDEX model_roots_model ON model_roots(model);"
	"CREATE TABLE miners ("
	" id INTEGER PRIMARY KEY,"
	" hotkey TEXT NOT NULL UNIQUE CHECK (length(hotkey) BETWEEN 1 AND 63),"
	" key_hash BLOB NOT NULL UNIQUE CHECK (length(key_hash) = 32),"
	" key_shown TEXT NOT NULL CHECK (length(key_shown) <= 15),"
	" label TEXT NOT NULL CHECK (length(label) <= 63),"
	" status INTEGER NOT NULL CHECK (status IN (1, 2)),"
	" first_party INTEGER NOT NULL CHECK (first_party IN (0, 1)),"
	" priority INTEGER NOT NULL,"
	" created_ms INTEGER NOT NULL,"
	" updated_ms INTEGER NOT NULL);"
	"CREATE TABLE request_log ("
	" id INTEGER PRIMARY KEY,"
	" time_ms INTEGER NOT NULL,"
	" request_id TEXT NOT NULL CHECK (length(request_id) <= 63),"
	" key_id INTEGER NOT NULL,"
	" account_id INTEGER NOT NULL,"
	" model TEXT NOT NULL CHECK (length(model) <= 127),"
	" miner TEXT NOT NULL CHECK (length(miner) <= 63),"
	" worker_name TEXT NOT NULL CHECK (length(worker_name) <= 63),"
	" status INTEGER NOT NULL CHECK (status BETWEEN 100 AND 599),"
	" prompt_tokens INTEGER NOT NULL CHECK (prompt_tokens >= 0),"
	" completion_tokens INTEGER NOT NULL CHECK (completion_tokens >= 0),"
	" cached_tokens INTEGER NOT NULL"
	"  CHECK (cached_tokens BETWEEN 0 AND prompt_tokens),"
	" ttft_ms INTEGER NOT NULL CHECK (ttft_ms >= 0),"
	" tpot_ms INTEGER NOT NULL CHECK (tpot_ms >= 0),"
	" cost_micro INTEGER NOT NULL"
	"  CHECK (typeof(cost_micro) = 'integer' AND cost_micro >= 0),"
	" is_probe INTEGER NOT NULL CHECK (is_probe IN (0, 1)));"
	"CREATE INDEX request_log_time ON request_log(time_ms);"
	"CREATE INDEX request_log_account ON request_log(account_id, time_ms);"
	"CREATE INDEX request_log_key ON request_log(key_id, time_ms);",
	/* 2: the auditor's verdicts (statistics only) and closed epochs. */
	"CREATE TABLE verdicts ("
	" id INTEGER PRIMARY KEY,"
	" time_ms INTEGER NOT NULL,"
	" request_time_ms INTEGER NOT NULL,"
	" verdict INTEGER NOT NULL CHECK (verdict IN (1, 2, 3)),"
	" is_probe INTEGER NOT NULL CHECK (is_probe IN (0, 1)),"
	" chunks INTEGER NOT NULL CHECK (chunks >= 0),"
	" passed INTEGER NOT NULL CHECK (passed BETWEEN 0 AND chunks),"
	" topk INTEGER NOT NULL CHECK (topk >= 0),"
	" exp_p99 INTEGER NOT NULL CHECK (exp_p99 >= 0),"
	" exp_max INTEGER NOT NULL CHECK (exp_max >= 0),"
	" limit_v INTEGER NOT NULL CHECK (limit_v >= 0),"
	" limit_p_ppm INTEGER NOT NULL CHECK (limit_p_ppm BETWEEN 0 AND 1000000),"
	" mant_mean_max_milli INTEGER NOT NULL,"
	" mant_median_max_milli INTEGER NOT NULL,"
	" scheme TEXT NOT NULL CHECK (length(scheme) BETWEEN 1 AND 31),"
	" reason TEXT NOT NULL CHECK (length(reason) <= 63),"
	" request_id TEXT NOT NULL CHECK (length(request_id) <= 63),"
	" miner TEXT NOT NULL CHECK (length(miner) <= 63),"
	" model TEXT NOT NULL CHECK (length(model) <= 127));"
	"CREATE INDEX verdicts_time ON verdicts(time_ms);"
	"CREATE INDEX verdicts_miner ON verdicts(miner, time_ms);"
	"CREATE TABLE epochs ("
	" epoch_index INTEGER PRIMARY KEY CHECK (epoch_index >= 0),"
	" start_ms INTEGER NOT NULL,"
	" end_ms INTEGER NOT NULL CHECK (end_ms >= start_ms),"
	" closed_ms INTEGER NOT NULL,"
	" burn INTEGER NOT NULL CHECK (burn IN (0, 1)),"
	" n_weights INTEGER NOT NULL,"
	" digest TEXT NOT NULL CHECK (length(digest) <= 64 AND length(digest) >= 64),"
	" payload TEXT NOT NULL CHECK (length(payload) <= 16777216),"
	" aggregates TEXT NOT NULL CHECK (length(aggregates) <= 16777216));",
	/* 3: a model's TOPLOC mantissa limits (hundredths; 0 = unchecked). */
	"ALTER TABLE models ADD COLUMN toploc_mant_mean_centi INTEGER NOT NULL"
	" DEFAULT 0 CHECK (toploc_mant_mean_centi BETWEEN 0 AND 65535);"
	"ALTER TABLE models ADD COLUMN toploc_mant_median_centi INTEGER NOT NULL"
	" DEFAULT 0 CHECK (toploc_mant_median_centi BETWEEN 0 AND 65535);",
	/* 4 (ABI 1.3): the auditors' claims on jobs; open holds by age. */
	"CREATE TABLE audit_claims ("
	" request_id TEXT PRIMARY KEY"
	"  CHECK (length(request_id) BETWEEN 1 AND 63),"
	" holder TEXT NOT NULL CHECK (length(holder) BETWEEN 1 AND 63),"
	" until_ms INTEGER NOT NULL,"
	" claimed_ms INTEGER NOT NULL);"
	"CREATE INDEX audit_claims_claimed ON audit_claims(claimed_ms);"
	"CREATE INDEX reservations_created ON reservations(created_ms);",
	/* 5 (ABI 1.4): a model's GEMM audit sizes (specs/gemm-audit.md
	 * §6); a row from before reads as a spec file without them would. */
	"ALTER TABLE models ADD COLUMN gemm_layers INTEGER NOT NULL"
	" DEFAULT 4 CHECK (gemm_layers BETWEEN 0 AND 65536);"
	"ALTER TABLE models ADD COLUMN gemm_tokens INTEGER NOT NULL"
	" DEFAULT 4 CHECK (gemm_tokens BETWEEN 0 AND 4096);"
	"ALTER TABLE models ADD COLUMN gemm_projections INTEGER NOT NULL"
	" DEFAULT 2 CHECK (gemm_projections BETWEEN 0 AND 64);"
	"ALTER TABLE models ADD COLUMN gemm_spots INTEGER NOT NULL"
	" DEFAULT 2 CHECK (gemm_spots BETWEEN 0 AND 4096);"
	"ALTER TABLE models ADD COLUMN gemm_z_milli INTEGER NOT NULL"
	" DEFAULT 6000 CHECK (gemm_z_milli BETWEEN 0 AND 1000000);"
	"ALTER TABLE models ADD COLUMN gemm_c_el_milli INTEGER NOT NULL"
	" DEFAULT 6000 CHECK (gemm_c_el_milli BETWEEN 0 AND 1000000);"
	"ALTER TABLE models ADD COLUMN gemm_rate_ppm INTEGER NOT NULL"
	" DEFAULT 50000 CHECK (gemm_rate_ppm BETWEEN 0 AND 1000000);",
	/* 6: the request log without its (key, time) index: no query reads
	 * by key, and every settlement paid for one more B-tree insert. */
	"DROP INDEX IF EXISTS request_log_key;",
};

int64_t sq_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sq_err(struct sq *s, struct sq_conn *c, int rc, const char *what)
{
	const char *msg =
		c && c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc);

	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_CONSTRAINT:
		if (rc == SQLITE_CONSTRAINT_UNIQUE ||
		    rc == SQLITE_CONSTRAINT_PRIMARYKEY)
			return -EEXIST;
		if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
			return -ENOENT;
		engy_warn(s->h, "event=store_refused what=%s error=\"%s\"",
			  what, msg);
		return -EINVAL;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		engy_warn(s->h, "event=store_busy what=%s timeout_ms=%d", what,
			  s->busy_timeout_ms);
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_FULL:
		engy_err(s->h, "event=store_full what=%s path=%s", what,
			 s->path);
		return -ENOSPC;
	case SQLITE_READONLY:
		engy_err(s->h, "event=store_readonly what=%s path=%s", what,
			 s->path);
		return -EROFS;
	default:
		engy_err(
			s->h,
			"event=store_error what=%s path=%s code=%d error=\"%s\"",
			what, s->path, rc, msg);
		return -EIO;
	}
}

/* The database holds key hashes: create it for its owner only. */
static int precreate(struct sq *s)
{
	int fd = open(s->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0) {
		int e = errno;

		engy_err(s->h, "event=store_open_failed path=%s error=\"%s\"",
			 s->path, strerror(e));
		return -e;
	}
	close(fd);
	return 0;
}

static int open_conn(struct sq *s, struct sq_conn *c)
{
	char sql[96];
	int rc;

	rc = sqlite3_open_v2(s->path, &c->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK)
		goto fail;
	sqlite3_extended_result_codes(c->db, 1);
	sqlite3_busy_timeout(c->db, s->busy_timeout_ms);
	snprintf(sql, sizeof(sql),
		 "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s;"
		 " PRAGMA foreign_keys=ON;",
		 s->synchronous);
	rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sq_ckpt_attach(s, c->db);
	if (rc != SQLITE_OK)
		goto fail;
	return 0;
fail:
	rc = sq_err(s, c, rc, "open");
	sqlite3_close_v2(c->db);
	c->db = NULL;
	return rc;
}

static void close_conn(struct sq_conn *c)
{
	size_t i;

	for (i = 0; i < c->n_cache; i++)
		sqlite3_finalize(c->cache[i].st);
	c->n_cache = 0;
	if (c->db)
		sqlite3_close_v2(c->db);
	c->db = NULL;
}

static int migrate(struct sq *s, struct sq_conn *c)
{
	sqlite3_stmt *st = NULL;
	int rc, from = 0, v;

	rc = sq_begin(s, c);
	if (rc)
		return rc;
	rc = sqlite3_exec(c->db,
			  "CREATE TABLE IF NOT EXISTS engy_schema ("
			  " version INTEGER PRIMARY KEY,"
			  " applied_ms INTEGER NOT NULL)",
			  NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(c->db,
					"SELECT COALESCE(MAX(version), 0)"
					" FROM engy_schema",
					-1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		from = sqlite3_column_int(st, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_OK) {
		rc = sq_err(s, c, rc, "schema");
		goto out;
	}
	if (from > SQ_SCHEMA_VERSION) {
		engy_err(
			s->h,
			"event=store_schema_newer path=%s version=%d supported=%d",
			s->path, from, SQ_SCHEMA_VERSION);
		rc = -EPROTO;
		goto out;
	}
	for (v = from + 1; v <= SQ_SCHEMA_VERSION; v++) {
		char ins[96];

		snprintf(ins, sizeof(ins),
			 "INSERT INTO engy_schema VALUES (%d, %lld)", v,
			 (long long)sq_now_ms());
		rc = sqlite3_exec(c->db, migrations[v - 1], NULL, NULL, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_exec(c->db, ins, NULL, NULL, NULL);
		if (rc != SQLITE_OK) {
			rc = sq_err(s, c, rc, "migrate");
			goto out;
		}
	}
out:
	rc = sq_end(s, c, rc);
	if (!rc && from != SQ_SCHEMA_VERSION)
		engy_info(s->h, "event=store_schema path=%s from=%d version=%d",
			  s->path, from, SQ_SCHEMA_VERSION);
	return rc;
}

int sq_open_pool(struct sq *s)
{
	int rc = precreate(s);

	if (rc)
		return rc;
	rc = open_conn(s, &s->conns[0]);
	if (!rc)
		rc = migrate(s, &s->conns[0]);
	if (rc)
		close_conn(&s->conns[0]);
	return rc;
}

void sq_close_pool(struct sq *s)
{
	size_t i;

	for (i = 0; i < s->n_conns; i++)
		close_conn(&s->conns[i]);
}

int sq_acquire(struct sq *s, struct sq_conn **out)
{
	struct sq_conn *c = NULL;
	size_t i;
	int rc;

	if (!s->started) {
		engy_err(s->h, "event=store_not_started");
		return -ENOTCONN;
	}
	pthread_mutex_lock(&s->mu);
	for (;;) {
		for (i = 0; i < s->n_conns && !c; i++)
			if (s->conns[i].db && !s->conns[i].busy)
				c = &s->conns[i];
		for (i = 0; i < s->n_conns && !c; i++)
			if (!s->conns[i].db && !s->conns[i].busy)
				c = &s->conns[i];
		if (c)
			break;
		pthread_cond_wait(&s->cv, &s->mu);
	}
	c->busy = true;
	pthread_mutex_unlock(&s->mu);
	if (!c->db) {
		rc = open_conn(s, c);
		if (rc) {
			sq_release(s, c);
			return rc;
		}
	}
	*out = c;
	return 0;
}

void sq_release(struct sq *s, struct sq_conn *c)
{
	size_t i;

	/* A stepped statement holds a read snapshot until it is reset. */
	for (i = 0; i < c->n_cache; i++)
		sqlite3_reset(c->cache[i].st);
	pthread_mutex_lock(&s->mu);
	c->busy = false;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

int sq_prep(struct sq *s, struct sq_conn *c, const char *sql,
	    sqlite3_stmt **out)
{
	sqlite3_stmt *st;
	size_t i;
	int rc;

	for (i = 0; i < c->n_cache; i++) {
		if (c->cache[i].sql == sql) {
			sqlite3_reset(c->cache[i].st);
			sqlite3_clear_bindings(c->cache[i].st);
			*out = c->cache[i].st;
			return 0;
		}
	}
	if (c->n_cache == SQ_STMT_CACHE) {
		engy_err(s->h,
			 "event=store_bug error=\"statement cache full\"");
		return -ENOSPC;
	}
	rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st,
				NULL);
	if (rc != SQLITE_OK)
		return sq_err(s, c, rc, "prepare");
	c->cache[c->n_cache].sql = sql;
	c->cache[c->n_cache].st = st;
	c->n_cache++;
	*out = st;
	return 0;
}

int sq_exec(struct sq *s, struct sq_conn *c, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : sq_err(s, c, rc, what);
}

static const char sql_begin[] = "BEGIN IMMEDIATE";
static const char sql_commit[] = "COMMIT";
static const char sql_rollback[] = "ROLLBACK";

int sq_begin(struct sq *s, struct sq_conn *c)
{
	sqlite3_stmt *st;
	int rc;

	pthread_mutex_lock(&s->wmu);
	rc = sq_prep(s, c, sql_begin, &st);
	if (!rc)
		rc = sq_exec(s, c, st, "begin");
	if (rc)
		pthread_mutex_unlock(&s->wmu);
	return rc;
}

int sq_end(struct sq *s, struct sq_conn *c, int rc)
{
	sqlite3_stmt *st;
	int rc2;

	if (!rc) {
		rc = sq_prep(s, c, sql_commit, &st);
		if (!rc)
			rc = sq_exec(s, c, st, "commit");
	}
	if (rc && sqlite3_get_autocommit(c->db) == 0) {
		rc2 = sq_prep(s, c, sql_rollback, &st);
		if (!rc2)
			sq_exec(s, c, st, "rollback");
	}
	pthread_mutex_unlock(&s->wmu);
	return rc;
}

int sq_bad(struct sq *s, const char *op, const char *field)
{
	engy_warn(s->h, "event=store_bad_input op=%s field=%s", op, field);
	return -EINVAL;
}

void sq_col_text(sqlite3_stmt *st, int col, char *out, size_t cap)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	size_t n = t ? (size_t)sqlite3_column_bytes(st, col) : 0;

	if (n >= cap)
		n = cap - 1;
	if (n)
		memcpy(out, t, n);
	out[n] = '\0';
}

void sq_col_blob32(sqlite3_stmt *st, int col, uint8_t out[32])
{
	const void *b = sqlite3_column_blob(st, col);

	memset(out, 0, 32);
	if (b && sqlite3_column_bytes(st, col) == 32)
		memcpy(out, b, 32);
}

int sq_collect(struct sq *s, struct sq_conn *c, sqlite3_stmt *st, size_t elem,
	       void (*rd)(sqlite3_stmt *st, void *elem), void **out, size_t *n,
	       const char *what)
{
	size_t cnt = 0, cap = 0;
	char *arr = NULL;
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!engy_grow(&arr, &cap, cnt + 1, elem)) {
			free(arr);
			sqlite3_reset(st);
			return -ENOMEM;
		}
		memset(arr + cnt * elem, 0, elem);
		rd(st, arr + cnt * elem);
		cnt++;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		free(arr);
		return sq_err(s, c, rc, what);
	}
	*out = arr;
	*n = cnt;
	return 0;
}
