/* SPDX-License-Identifier: MIT */
/* store-postgres: connections, statements, transactions, errors, schema. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hex.h"
#include "pg.h"

/* A transaction that loses a serialization or deadlock check is retried. */
#define PG_RETRIES 10

static const char sql_begin[] = "BEGIN";
static const char sql_commit[] = "COMMIT";
static const char sql_rollback[] = "ROLLBACK";

int64_t pg_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int pg_bad(struct pg *s, const char *op, const char *field)
{
	engy_warn(s->h, "event=store_bad_input op=%s field=%s", op, field);
	return -EINVAL;
}

void pg_arg_i64(struct pg_args *a, int64_t x)
{
	snprintf(a->num[a->n], sizeof(a->num[0]), "%" PRId64, x);
	a->v[a->n] = a->num[a->n];
	a->len[a->n] = 0;
	a->fmt[a->n] = 0;
	a->n++;
}

void pg_arg_text(struct pg_args *a, const char *str)
{
	a->v[a->n] = str;
	a->len[a->n] = 0;
	a->fmt[a->n] = 0;
	a->n++;
}

void pg_arg_bytes(struct pg_args *a, const uint8_t *p, int len)
{
	a->v[a->n] = (const char *)p;
	a->len[a->n] = len;
	a->fmt[a->n] = 1;
	a->n++;
}

/* A server message as one log field: no quotes, no line breaks. */
static void clean(const char *in, char *out, size_t cap)
{
	size_t i = 0;

	for (; in && *in && i + 1 < cap; in++) {
		if (*in == '\n' && !in[1])
			break;
		out[i++] = (*in == '"' || *in == '\n' || *in == '\r' ||
			    *in == '\\')
				   ? '\''
				   : *in;
	}
	out[i] = '\0';
}

/* Map a failed result (or a failed connection, @r NULL) to a negative errno. */
static int pg_err(struct pg *s, struct pg_conn *c, const PGresult *r,
		  const char *what)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *msg =
		r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	char m[256];

	clean(msg ? msg : PQerrorMessage(c->db), m, sizeof(m));
	if (PQstatus(c->db) == CONNECTION_BAD || !state ||
	    strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0) {
		engy_err(s->h,
			 "event=store_disconnected what=%s %s error=\"%s\"",
			 what, s->where, m);
		return -EIO;
	}
	if (!strcmp(state, "23505")) /* unique_violation */
		return -EEXIST;
	if (!strcmp(state, "23503")) /* foreign_key_violation */
		return -ENOENT;
	if (!strcmp(state, "40001") || !strcmp(state, "40P01"))
		return -EAGAIN; /* retried by pg_run() */
	if (!strncmp(state, "23", 2) || !strncmp(state, "22", 2)) {
		engy_warn(s->h,
			  "event=store_refused what=%s code=%s error=\"%s\"",
			  what, state, m);
		return -EINVAL;
	}
	if (!strcmp(state, "55P03") || !strcmp(state, "57014")) {
		engy_warn(
			s->h,
			"event=store_busy what=%s code=%s busy_timeout_ms=%d statement_timeout_ms=%d",
			what, state, s->busy_timeout_ms,
			s->statement_timeout_ms);
		return -EBUSY;
	}
	if (!strcmp(state, "53100")) {
		engy_err(s->h, "event=store_full what=%s %s", what, s->where);
		return -ENOSPC;
	}
	if (!strcmp(state, "53200"))
		return -ENOMEM;
	if (!strcmp(state, "25006")) {
		engy_err(s->h, "event=store_readonly what=%s %s", what,
			 s->where);
		return -EROFS;
	}
	engy_err(s->h, "event=store_error what=%s %s code=%s error=\"%s\"",
		 what, s->where, state, m);
	return -EIO;
}

static bool res_ok(const PGresult *r)
{
	ExecStatusType st = PQresultStatus(r);

	return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

int pg_q(struct pg *s, struct pg_conn *c, const char *sql,
	 const struct pg_args *a, const char *what, PGresult **res)
{
	char name[16];
	PGresult *r;
	size_t i;
	int rc, n = a ? a->n : 0;

	*res = NULL;
	for (i = 0; i < c->n_cache && c->cache[i] != sql; i++)
		;
	snprintf(name, sizeof(name), "s%zu", i);
	if (i == c->n_cache) {
		if (c->n_cache == PG_STMT_CACHE) {
			engy_err(
				s->h,
				"event=store_bug error=\"statement cache full\"");
			return -ENOSPC;
		}
		r = PQprepare(c->db, name, sql, n, NULL);
		if (!r || !res_ok(r)) {
			rc = pg_err(s, c, r, what);
			PQclear(r);
			return rc;
		}
		PQclear(r);
		c->cache[c->n_cache++] = sql;
	}
	r = PQexecPrepared(c->db, name, n, a ? a->v : NULL, a ? a->len : NULL,
			   a ? a->fmt : NULL, 0);
	if (!r || !res_ok(r)) {
		rc = pg_err(s, c, r, what);
		PQclear(r);
		return rc;
	}
	*res = r;
	return 0;
}

int pg_exec(struct pg *s, struct pg_conn *c, const char *sql,
	    const struct pg_args *a, const char *what, int64_t *changed)
{
	PGresult *r;
	int rc = pg_q(s, c, sql, a, what, &r);

	if (rc)
		return rc;
	if (changed)
		*changed = strtoll(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	return 0;
}

int64_t pg_i64(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col)
		       ? 0
		       : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

void pg_text(const PGresult *r, int row, int col, char *out, size_t cap)
{
	const char *t = PQgetvalue(r, row, col);
	size_t n = (size_t)PQgetlength(r, row, col);

	if (n >= cap)
		n = cap - 1;
	memcpy(out, t, n);
	out[n] = '\0';
}

void pg_blob32(const PGresult *r, int row, int col, uint8_t out[32])
{
	const char *t = PQgetvalue(r, row, col);
	int i, hi, lo;

	memset(out, 0, 32);
	if (PQgetlength(r, row, col) != 2 + 64 || t[0] != '\\' || t[1] != 'x')
		return;
	for (i = 0; i < 32; i++) {
		hi = engy_hexval((unsigned char)t[2 + 2 * i]);
		lo = engy_hexval((unsigned char)t[3 + 2 * i]);
		if (hi < 0 || lo < 0) {
			memset(out, 0, 32);
			return;
		}
		out[i] = (uint8_t)(hi << 4 | lo);
	}
}

int pg_rows(struct pg *s, struct pg_conn *c, const char *sql,
	    const struct pg_args *a, const char *what, size_t elem,
	    void (*rd)(const PGresult *r, int row, void *elem), void **out,
	    size_t *n)
{
	PGresult *r;
	char *arr = NULL;
	int rc = pg_q(s, c, sql, a, what, &r), i, cnt;

	if (rc)
		return rc;
	cnt = PQntuples(r);
	if (cnt > 0 && !(arr = calloc((size_t)cnt, elem))) {
		PQclear(r);
		return -ENOMEM;
	}
	for (i = 0; i < cnt; i++)
		rd(r, i, arr + (size_t)i * elem);
	PQclear(r);
	*out = arr;
	*n = (size_t)cnt;
	return 0;
}

/* --- connections ------------------------------------------------------- */

/* Session settings; run after every connect and reset. */
static int session(struct pg *s, struct pg_conn *c)
{
	char sql[256], *ident = NULL;
	PGresult *r;
	int rc = 0;

	if (s->schema[0]) {
		ident = PQescapeIdentifier(c->db, s->schema, strlen(s->schema));
		if (!ident)
			return pg_err(s, c, NULL, "session");
	}
	snprintf(sql, sizeof(sql),
		 "SET statement_timeout = %d; SET lock_timeout = %d%s%s",
		 s->statement_timeout_ms, s->busy_timeout_ms,
		 ident ? "; SET search_path = " : "", ident ? ident : "");
	PQfreemem(ident);
	r = PQexec(c->db, sql);
	if (!r || !res_ok(r))
		rc = pg_err(s, c, r, "session");
	PQclear(r);
	c->n_cache = 0;
	return rc;
}

static void describe(struct pg *s, PGconn *db)
{
	const char *host = PQhost(db), *port = PQport(db);

	snprintf(s->where, sizeof(s->where), "host=%s port=%s db=%s user=%s",
		 host && *host ? host : "-", port && *port ? port : "-",
		 PQdb(db) ? PQdb(db) : "-", PQuser(db) ? PQuser(db) : "-");
}

/* The server's notices ("already exists, skipping") are not news. */
static void notice(void *arg, const char *msg)
{
	struct pg *s = arg;
	char m[256];

	clean(msg, m, sizeof(m));
	engy_dbg(s->h, "event=store_notice message=\"%s\"", m);
}

static int open_conn(struct pg *s, struct pg_conn *c)
{
	char timeout[16];
	const char *kw[8], *val[8];
	int k = 0;

	snprintf(timeout, sizeof(timeout), "%d", s->connect_timeout_s);
	kw[k] = "connect_timeout";
	val[k++] = timeout;
	kw[k] = "fallback_application_name";
	val[k++] = "engy";
	kw[k] = "client_encoding";
	val[k++] = "UTF8";
	kw[k] = "dbname"; /* first dbname: expanded */
	val[k++] = s->conninfo;
	if (s->password) {
		kw[k] = "password";
		val[k++] = s->password;
	}
	kw[k] = NULL;
	val[k] = NULL;
	c->db = PQconnectdbParams(kw, val, 1);
	if (!c->db)
		return -ENOMEM;
	if (PQstatus(c->db) != CONNECTION_OK) {
		char m[256];

		clean(PQerrorMessage(c->db), m, sizeof(m));
		engy_err(s->h, "event=store_connect_failed %s error=\"%s\"",
			 s->where[0] ? s->where : "conninfo=(option)", m);
		PQfinish(c->db);
		c->db = NULL;
		return -EIO;
	}
	PQsetNoticeProcessor(c->db, notice, s);
	if (!s->where[0]) /* the first connection, in start() */
		describe(s, c->db);
	c->n_cache = 0;
	if (session(s, c)) {
		PQfinish(c->db);
		c->db = NULL;
		return -EIO;
	}
	return 0;
}

static void close_conn(struct pg_conn *c)
{
	if (c->db)
		PQfinish(c->db);
	c->db = NULL;
	c->n_cache = 0;
}

/* A connection the server or the network dropped: reset it in place. */
static int revive(struct pg *s, struct pg_conn *c)
{
	engy_warn(s->h, "event=store_reconnect %s", s->where);
	PQreset(c->db);
	if (PQstatus(c->db) != CONNECTION_OK) {
		char m[256];

		clean(PQerrorMessage(c->db), m, sizeof(m));
		engy_err(s->h, "event=store_connect_failed %s error=\"%s\"",
			 s->where, m);
		close_conn(c);
		return -EIO;
	}
	return session(s, c);
}

static void release(struct pg *s, struct pg_conn *c)
{
	pthread_mutex_lock(&s->mu);
	c->busy = false;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static int acquire(struct pg *s, struct pg_conn **out)
{
	struct pg_conn *c = NULL;
	size_t i;
	int rc = 0;

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
			if (!s->conns[i].busy)
				c = &s->conns[i];
		if (c)
			break;
		pthread_cond_wait(&s->cv, &s->mu);
	}
	c->busy = true;
	pthread_mutex_unlock(&s->mu);
	if (!c->db)
		rc = open_conn(s, c);
	else if (PQstatus(c->db) == CONNECTION_BAD)
		rc = revive(s, c);
	if (rc) {
		release(s, c);
		return rc;
	}
	*out = c;
	return 0;
}

/* --- transactions -------------------------------------------------------- */

int pg_run(struct pg *s, bool write, const char *what,
	   int (*fn)(struct pg *s, struct pg_conn *c, void *arg), void *arg)
{
	struct pg_conn *c;
	bool committing, broken;
	int attempt, rc;

	for (attempt = 0;; attempt++) {
		rc = acquire(s, &c);
		if (rc)
			return rc;
		committing = false;
		rc = write ? pg_exec(s, c, sql_begin, NULL, what, NULL) : 0;
		if (!rc)
			rc = fn(s, c, arg);
		if (write && !rc) {
			committing = true;
			rc = pg_exec(s, c, sql_commit, NULL, what, NULL);
		}
		/* A failed write (or a failed COMMIT) is rolled back. */
		if (rc && PQtransactionStatus(c->db) != PQTRANS_IDLE &&
		    PQstatus(c->db) == CONNECTION_OK)
			pg_exec(s, c, sql_rollback, NULL, what, NULL);
		broken = PQstatus(c->db) == CONNECTION_BAD;
		release(s, c);
		if (rc == -EAGAIN && attempt < PG_RETRIES) {
			usleep((useconds_t)(1000
					    << (attempt < 5 ? attempt : 5)) +
			       (useconds_t)(rand() % 1000));
			continue;
		}
		if (rc == -EAGAIN) {
			engy_warn(
				s->h,
				"event=store_busy what=%s reason=retries attempts=%d",
				what, attempt + 1);
			return -EBUSY;
		}
		/* Dropped before COMMIT was sent: nothing was written; once more. */
		if (rc && broken && !committing && attempt == 0)
			continue;
		return rc;
	}
}

struct read_args {
	const char *sql;
	const struct pg_args *a;
	const char *what;
	size_t elem;
	void (*rd)(const PGresult *r, int row, void *elem);
	void **out;
	size_t *n;
};

static int do_read(struct pg *s, struct pg_conn *c, void *arg)
{
	struct read_args *ra = arg;

	return pg_rows(s, c, ra->sql, ra->a, ra->what, ra->elem, ra->rd,
		       ra->out, ra->n);
}

int pg_read(struct pg *s, const char *sql, const struct pg_args *a,
	    const char *what, size_t elem,
	    void (*rd)(const PGresult *r, int row, void *elem), void **out,
	    size_t *n)
{
	struct read_args ra = { sql, a, what, elem, rd, out, n };

	*out = NULL;
	*n = 0;
	return pg_run(s, false, what, do_read, &ra);
}

int pg_read_one(struct pg *s, const char *sql, const struct pg_args *a,
		const char *what, size_t elem,
		void (*rd)(const PGresult *r, int row, void *elem), void *out)
{
	void *arr;
	size_t n;
	int rc = pg_read(s, sql, a, what, elem, rd, &arr, &n);

	if (rc)
		return rc;
	if (n && out)
		memcpy(out, arr, elem);
	free(arr);
	return n ? 0 : -ENOENT;
}

/* --- the schema ------------------------------------------------------------ */

static const char sql_lock[] = "SELECT pg_advisory_xact_lock(hashtext($1))";
static const char sql_version[] =
	"SELECT COALESCE(MAX(version), 0) FROM engy_schema";
static const char sql_applied[] =
	"INSERT INTO engy_schema (version, applied_ms) VALUES ($1, $2)";

static int simple(struct pg *s, struct pg_conn *c, const char *sql,
		  const char *what)
{
	PGresult *r = PQexec(c->db, sql);
	int rc = r && res_ok(r) ? 0 : pg_err(s, c, r, what);

	PQclear(r);
	return rc;
}

struct migrate_args {
	int from;
};

/* One transaction under an advisory lock: processes starting together
 * migrate one after the other. */
static int do_migrate(struct pg *s, struct pg_conn *c, void *arg)
{
	struct migrate_args *m = arg;
	char lock[96], sql[160], *ident;
	struct pg_args a = { 0 };
	PGresult *r;
	int rc, v;

	snprintf(lock, sizeof(lock), "engy_schema:%s", s->schema);
	pg_arg_text(&a, lock);
	rc = pg_exec(s, c, sql_lock, &a, "schema", NULL);
	if (!rc && s->schema[0]) {
		ident = PQescapeIdentifier(c->db, s->schema, strlen(s->schema));
		if (!ident)
			return -ENOMEM;
		snprintf(sql, sizeof(sql), "CREATE SCHEMA IF NOT EXISTS %s",
			 ident);
		PQfreemem(ident);
		rc = simple(s, c, sql, "schema");
	}
	if (!rc)
		rc = simple(s, c,
			    "CREATE TABLE IF NOT EXISTS engy_schema ("
			    " version INTEGER PRIMARY KEY,"
			    " applied_ms BIGINT NOT NULL)",
			    "schema");
	if (!rc)
		rc = pg_q(s, c, sql_version, NULL, "schema", &r);
	if (rc)
		return rc;
	m->from = (int)pg_i64(r, 0, 0);
	PQclear(r);
	if (m->from > PG_SCHEMA_VERSION) {
		engy_err(
			s->h,
			"event=store_schema_newer %s schema=%s version=%d supported=%d",
			s->where, s->schema[0] ? s->schema : "-", m->from,
			PG_SCHEMA_VERSION);
		return -EPROTO;
	}
	for (v = m->from + 1; !rc && v <= PG_SCHEMA_VERSION; v++) {
		rc = simple(s, c, pg_migrations[v - 1], "migrate");
		a.n = 0;
		pg_arg_i64(&a, v);
		pg_arg_i64(&a, pg_now_ms());
		if (!rc)
			rc = pg_exec(s, c, sql_applied, &a, "migrate", NULL);
	}
	return rc;
}

int pg_open_pool(struct pg *s)
{
	struct migrate_args m = { 0 };
	int rc;

	s->started = true;
	rc = pg_run(s, true, "schema", do_migrate, &m);
	if (rc) {
		s->started = false;
		pg_close_pool(s);
		return rc;
	}
	if (m.from != PG_SCHEMA_VERSION)
		engy_info(s->h,
			  "event=store_schema %s schema=%s from=%d version=%d",
			  s->where, s->schema[0] ? s->schema : "-", m.from,
			  PG_SCHEMA_VERSION);
	return 0;
}

void pg_close_pool(struct pg *s)
{
	size_t i;

	for (i = 0; i < s->n_conns; i++)
		close_conn(&s->conns[i]);
}
