/* SPDX-License-Identifier: MIT */
/*
 * store-sqlite internals.  One instance holds a small pool of connections
 * to one database file in WAL mode: readers run side by side, writers
 * take the instance's write lock and then BEGIN IMMEDIATE (so another
 * process, engyctl for one, waits on the busy timeout rather than failing
 * half way).  Each connection caches its prepared statements.
 */
#ifndef ENGY_STORE_SQLITE_SQ_H
#define ENGY_STORE_SQLITE_SQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include <engy/plugin.h>
#include <engy/store.h>

#define SQ_SCHEMA_VERSION 6
#define SQ_MAX_CONNS	  64
#define SQ_STMT_CACHE	  96
#define SQ_CKPT_INLINE	  8 /* x checkpoint_pages: in line */

struct sq_conf {
	const char *path;
	int64_t busy_timeout_ms;
	int64_t connections;
	const char *synchronous;
	const char *pepper;
	int64_t max_query_rows;
	int64_t checkpoint_pages;
};

struct sq_conn {
	sqlite3 *db;
	bool busy;
	size_t n_cache;
	struct {
		const char *sql;
		sqlite3_stmt *st;
	} cache[SQ_STMT_CACHE];
};

struct sq {
	const struct engy_host *h;
	char *path;
	char *pepper;
	size_t pepper_len;
	const char *synchronous;
	int busy_timeout_ms;
	uint32_t max_query_rows;
	bool started;

	pthread_mutex_t mu; /* the pool */
	pthread_cond_t cv;
	size_t n_conns;
	struct sq_conn conns[SQ_MAX_CONNS];
	pthread_mutex_t wmu; /* one writer of this instance at a time */

	/* sq_ckpt.c: the checkpoint thread, woken by the WAL hook. */
	int ckpt_pages; /* 0: SQLite's in-line autocheckpoint */
	pthread_mutex_t ckpt_mu;
	pthread_cond_t ckpt_cv;	  /* the thread: ckpt_want or ckpt_stop */
	pthread_cond_t ckpt_idle; /* ckpt_busy went false */
	bool ckpt_want, ckpt_stop, ckpt_running;
	bool ckpt_busy;	 /* a checkpoint is running */
	bool ckpt_ready; /* the thread's connection is open (ckpt_idle) */
	pthread_t ckpt_thread;
	struct engy_metric *m_ckpt, *m_ckpt_inline;
};

/* sq_db.c: the pool, statements, transactions, errors, schema. */
int sq_open_pool(struct sq *s);
void sq_close_pool(struct sq *s);
int sq_acquire(struct sq *s, struct sq_conn **out);
void sq_release(struct sq *s, struct sq_conn *c);
/* A cached statement for @sql (a static string), reset and unbound. */
int sq_prep(struct sq *s, struct sq_conn *c, const char *sql,
	    sqlite3_stmt **out);
/* sq_ckpt.c: the WAL hook on a pool connection, the thread's life. */
int sq_ckpt_attach(struct sq *s, sqlite3 *db);
int sq_ckpt_start(struct sq *s);
void sq_ckpt_stop(struct sq *s);
/* Map a result code to a negative errno, logging what is not routine. */
int sq_err(struct sq *s, struct sq_conn *c, int rc, const char *what);
/* Step a statement that returns no rows; 0 or a negative errno. */
int sq_exec(struct sq *s, struct sq_conn *c, sqlite3_stmt *st,
	    const char *what);
/* Write transactions: take the write lock and BEGIN IMMEDIATE ... */
int sq_begin(struct sq *s, struct sq_conn *c);
/* ... then COMMIT when @rc is 0, else ROLLBACK; returns the outcome. */
int sq_end(struct sq *s, struct sq_conn *c, int rc);
int64_t sq_now_ms(void);

/* Log a refused input (specs/store.md: the op and the field); -EINVAL. */
int sq_bad(struct sq *s, const char *op, const char *field);
/* Copy a column's text into a fixed array (truncating, NUL-terminated). */
void sq_col_text(sqlite3_stmt *st, int col, char *out, size_t cap);
void sq_col_blob32(sqlite3_stmt *st, int col, uint8_t out[32]);
/*
 * Step @st to the end, reading each row with @rd into a malloc'd array of
 * @elem-byte structs (*@out NULL when empty).  0 or a negative errno.
 */
int sq_collect(struct sq *s, struct sq_conn *c, sqlite3_stmt *st, size_t elem,
	       void (*rd)(sqlite3_stmt *st, void *elem), void **out, size_t *n,
	       const char *what);

/* sq_money.c */
int sq_key_hash(void *inst, const char *key, size_t len, uint8_t hash[32]);
int sq_account_create(void *inst, const char *name, struct engy_account *out);
int sq_account_get(void *inst, int64_t id, struct engy_account *out);
int sq_account_by_name(void *inst, const char *name, struct engy_account *out);
int sq_account_list(void *inst, struct engy_account **out, size_t *n);
int sq_topup(void *inst, int64_t account_id, int64_t amount,
	     struct engy_account *out);
int sq_key_create(void *inst, int64_t account_id, const char *label, char **key,
		  struct engy_api_key *out);
int sq_key_lookup(void *inst, const uint8_t hash[32], struct engy_api_key *out);
int sq_key_revoke(void *inst, int64_t key_id);
int sq_key_list(void *inst, int64_t account_id, struct engy_api_key **out,
		size_t *n);

/* sq_reserve.c */
int sq_reserve(void *inst, int64_t account_id, int64_t key_id, int64_t amount,
	       int64_t expires_ms, int64_t *reservation_id);
int sq_settle_batch(void *inst, struct engy_settle *items, size_t n);
int sq_settle(void *inst, int64_t reservation_id, int64_t cost,
	      const struct engy_request_row *row, int64_t *charged);
int sq_release_expired(void *inst, int64_t now_ms, uint64_t *n, int64_t *micro);

/* sq_catalog.c */
int sq_model_put(void *inst, const struct engy_model *m);
int sq_model_get(void *inst, const char *name, struct engy_model *out);
int sq_model_list(void *inst, struct engy_model **out, size_t *n);
int sq_model_root_put(void *inst, const struct engy_model_root *r);
int sq_model_root_get(void *inst, const uint8_t root[32],
		      struct engy_model_root *out);
int sq_model_root_list(void *inst, const char *model,
		       struct engy_model_root **out, size_t *n);
int sq_model_root_del(void *inst, const uint8_t root[32]);
int sq_miner_put(void *inst, const struct engy_miner *m, char **key,
		 struct engy_miner *out);
int sq_miner_lookup(void *inst, const uint8_t hash[32], struct engy_miner *out);
int sq_miner_list(void *inst, struct engy_miner **out, size_t *n);

/* sq_log.c */
int sq_log_check(struct sq *s, const struct engy_request_row *r);
/* @n rows, in their order, inside the caller's transaction. */
int sq_log_insert(struct sq *s, struct sq_conn *c,
		  const struct engy_request_row *rows, size_t n);
int sq_log_append(void *inst, const struct engy_request_row *rows, size_t n);
int sq_log_query(void *inst, const struct engy_log_query *q,
		 struct engy_request_row **out, size_t *n);
int sq_log_prune(void *inst, int64_t before_ms, uint64_t *n);

/* sq_verdict.c */
int sq_verdict_put(void *inst, const struct engy_verdict *v);
int sq_verdict_list(void *inst, const struct engy_verdict_query *q,
		    struct engy_verdict **out, size_t *n);
int sq_epoch_put(void *inst, const struct engy_epoch_rec *e,
		 const char *payload, const char *aggregates);
int sq_epoch_get(void *inst, int64_t index, int latest,
		 struct engy_epoch_rec *out, char **payload, char **aggregates);
/* sq_claim.c */
int sq_audit_claim(void *inst, const char *request_id, const char *holder,
		   int64_t now_ms, int64_t until_ms, int64_t *held_until);
int sq_holds_open(void *inst, int64_t created_before_ms, int64_t now_ms,
		  uint64_t *n);

#endif /* ENGY_STORE_SQLITE_SQ_H */
