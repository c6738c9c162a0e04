/* SPDX-License-Identifier: MIT */
/*
 * store-postgres internals.  One instance holds a small pool of libpq
 * connections (one per op in flight; an op waits for a free one).  Each
 * connection prepares a statement the first time it runs it and keeps it
 * until the connection is reset.  Every write is one transaction at READ
 * COMMITTED; money moves with conditional UPDATEs and row locks taken in
 * one order (reservation, then account), and a transaction that loses a
 * serialization or deadlock check is retried whole.
 */
#ifndef ENGY_STORE_POSTGRES_PG_H
#define ENGY_STORE_POSTGRES_PG_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include <engy/plugin.h>
#include <engy/store.h>

#define PG_SCHEMA_VERSION 6
#define PG_MAX_CONNS	  64
#define PG_STMT_CACHE	  96
#define PG_MAX_PARAMS	  24

struct pg_conf {
	const char *conninfo;
	const char *password;
	const char *schema;
	int64_t connections;
	int64_t busy_timeout_ms;
	int64_t statement_timeout_ms;
	int64_t connect_timeout_s;
	const char *pepper;
	int64_t max_query_rows;
};

struct pg_conn {
	PGconn *db;
	bool busy;
	size_t n_cache;
	const char *cache[PG_STMT_CACHE]; /* prepared as "s<index>" */
};

struct pg {
	const struct engy_host *h;
	char *conninfo;
	char *password;	 /* sodium_malloc'd; NULL when unset */
	char schema[64]; /* "" = the connection's search_path */
	char where[256]; /* host/port/db/user for log lines */
	char *pepper;
	size_t pepper_len;
	int busy_timeout_ms;
	int statement_timeout_ms;
	int connect_timeout_s;
	uint32_t max_query_rows;
	bool started;

	pthread_mutex_t mu; /* the pool */
	pthread_cond_t cv;
	size_t n_conns;
	struct pg_conn conns[PG_MAX_CONNS];
};

/* Parameters of one statement, sent as text (bytea as binary). */
struct pg_args {
	int n;
	const char *v[PG_MAX_PARAMS];
	int len[PG_MAX_PARAMS];
	int fmt[PG_MAX_PARAMS];
	char num[PG_MAX_PARAMS][24];
};

void pg_arg_i64(struct pg_args *a, int64_t x);
void pg_arg_text(struct pg_args *a, const char *s);
void pg_arg_bytes(struct pg_args *a, const uint8_t *p, int len);

/* pg_schema.c: entry v-1 takes the schema from version v-1 to v. */
extern const char *const pg_migrations[PG_SCHEMA_VERSION];

/* pg_db.c: the pool, statements, transactions, errors, schema. */
int pg_open_pool(struct pg *s);
void pg_close_pool(struct pg *s);

/*
 * pg_run() - run @fn on a pooled connection: inside one transaction
 * (retried whole on a serialization failure or a deadlock, and once on a
 * connection found broken before COMMIT) when @write, else as it is.
 * @fn returns 0 to commit or a negative errno to roll back.
 */
int pg_run(struct pg *s, bool write, const char *what,
	   int (*fn)(struct pg *s, struct pg_conn *c, void *arg), void *arg);

/*
 * pg_q() - run the static statement @sql (prepared on first use on this
 * connection) with @a (may be NULL).  0 with *@res (PQclear it) when it
 * succeeded, else a negative errno (logged where not routine).
 */
int pg_q(struct pg *s, struct pg_conn *c, const char *sql,
	 const struct pg_args *a, const char *what, PGresult **res);
/* pg_q() for a statement whose result is not needed; *@changed (may be
 * NULL) gets the number of rows it touched. */
int pg_exec(struct pg *s, struct pg_conn *c, const char *sql,
	    const struct pg_args *a, const char *what, int64_t *changed);
/*
 * pg_rows() - pg_q() reading each row with @rd into a malloc'd array of
 * @elem-byte zeroed structs (*@out NULL when empty).
 */
int pg_rows(struct pg *s, struct pg_conn *c, const char *sql,
	    const struct pg_args *a, const char *what, size_t elem,
	    void (*rd)(const PGresult *r, int row, void *elem), void **out,
	    size_t *n);
/* pg_rows() outside a transaction on a pooled connection. */
int pg_read(struct pg *s, const char *sql, const struct pg_args *a,
	    const char *what, size_t elem,
	    void (*rd)(const PGresult *r, int row, void *elem), void **out,
	    size_t *n);
/* One row of pg_read() into @out: 0, -ENOENT, or an error. */
int pg_read_one(struct pg *s, const char *sql, const struct pg_args *a,
		const char *what, size_t elem,
		void (*rd)(const PGresult *r, int row, void *elem), void *out);

/* Column readers (text format results). */
int64_t pg_i64(const PGresult *r, int row, int col);
void pg_text(const PGresult *r, int row, int col, char *out, size_t cap);
/* A bytea column of 32 bytes (zeros when it is not). */
void pg_blob32(const PGresult *r, int row, int col, uint8_t out[32]);
int64_t pg_now_ms(void);
int pg_bad(struct pg *s, const char *op, const char *field);

/* pg_money.c */
int pg_key_hash(void *inst, const char *key, size_t len, uint8_t hash[32]);
int pg_account_create(void *inst, const char *name, struct engy_account *out);
int pg_account_get(void *inst, int64_t id, struct engy_account *out);
int pg_account_by_name(void *inst, const char *name, struct engy_account *out);
int pg_account_list(void *inst, struct engy_account **out, size_t *n);
int pg_topup(void *inst, int64_t account_id, int64_t amount,
	     struct engy_account *out);
int pg_key_create(void *inst, int64_t account_id, const char *label, char **key,
		  struct engy_api_key *out);
int pg_key_lookup(void *inst, const uint8_t hash[32], struct engy_api_key *out);
int pg_key_revoke(void *inst, int64_t key_id);
int pg_key_list(void *inst, int64_t account_id, struct engy_api_key **out,
		size_t *n);

/* pg_reserve.c */
int pg_reserve(void *inst, int64_t account_id, int64_t key_id, int64_t amount,
	       int64_t expires_ms, int64_t *reservation_id);
int pg_settle_batch(void *inst, struct engy_settle *items, size_t n);
int pg_settle(void *inst, int64_t reservation_id, int64_t cost,
	      const struct engy_request_row *row, int64_t *charged);
int pg_release_expired(void *inst, int64_t now_ms, uint64_t *n, int64_t *micro);

/* pg_catalog.c */
int pg_model_put(void *inst, const struct engy_model *m);
int pg_model_get(void *inst, const char *name, struct engy_model *out);
int pg_model_list(void *inst, struct engy_model **out, size_t *n);
int pg_model_root_put(void *inst, const struct engy_model_root *r);
int pg_model_root_get(void *inst, const uint8_t root[32],
		      struct engy_model_root *out);
int pg_model_root_list(void *inst, const char *model,
		       struct engy_model_root **out, size_t *n);
int pg_model_root_del(void *inst, const uint8_t root[32]);
int pg_miner_put(void *inst, const struct engy_miner *m, char **key,
		 struct engy_miner *out);
int pg_miner_lookup(void *inst, const uint8_t hash[32], struct engy_miner *out);
int pg_miner_list(void *inst, struct engy_miner **out, size_t *n);

/* pg_log.c */
int pg_log_check(struct pg *s, const struct engy_request_row *r);
int pg_log_insert(struct pg *s, struct pg_conn *c,
		  const struct engy_request_row *r);
int pg_log_append(void *inst, const struct engy_request_row *rows, size_t n);
int pg_log_query(void *inst, const struct engy_log_query *q,
		 struct engy_request_row **out, size_t *n);
int pg_log_prune(void *inst, int64_t before_ms, uint64_t *n);

/* pg_verdict.c */
int pg_verdict_put(void *inst, const struct engy_verdict *v);
int pg_verdict_list(void *inst, const struct engy_verdict_query *q,
		    struct engy_verdict **out, size_t *n);
int pg_epoch_put(void *inst, const struct engy_epoch_rec *e,
		 const char *payload, const char *aggregates);
int pg_epoch_get(void *inst, int64_t index, int latest,
		 struct engy_epoch_rec *out, char **payload, char **aggregates);
/* pg_claim.c */
int pg_audit_claim(void *inst, const char *request_id, const char *holder,
		   int64_t now_ms, int64_t until_ms, int64_t *held_until);
int pg_holds_open(void *inst, int64_t created_before_ms, int64_t now_ms,
		  uint64_t *n);

#endif /* ENGY_STORE_POSTGRES_PG_H */
