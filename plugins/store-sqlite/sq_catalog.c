/* SPDX-License-Identifier: MIT */
/* store-sqlite: models and their price cards, model roots, miners. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "apikey.h"
#include "sq.h"
#include "storecheck.h"
#include "storesql.h"

static const char sql_model_put[] = STORESQL_MODEL_PUT(SQLITE);
static const char sql_model_get[] = STORESQL_MODEL_GET(SQLITE);
static const char sql_model_list[] = STORESQL_MODEL_LIST(SQLITE);
static const char sql_root_put[] = STORESQL_ROOT_PUT(SQLITE);
static const char sql_root_get[] = STORESQL_ROOT_GET(SQLITE);
static const char sql_root_list[] = STORESQL_ROOT_LIST(SQLITE);
static const char sql_root_list_all[] = STORESQL_ROOT_LIST_ALL(SQLITE);
static const char sql_root_del[] = STORESQL_ROOT_DEL(SQLITE);
static const char sql_miner_by_hotkey[] = STORESQL_MINER_BY_HOTKEY(SQLITE);
static const char sql_miner_by_hash[] = STORESQL_MINER_BY_HASH(SQLITE);
static const char sql_miner_list[] = STORESQL_MINER_LIST(SQLITE);
static const char sql_miner_insert[] = STORESQL_MINER_INSERT(SQLITE);
static const char sql_miner_update[] = STORESQL_MINER_UPDATE(SQLITE);

/* A write of one statement in its own transaction; @bind fills it. */
static int write_one(struct sq *s, const char *sql, const char *what,
		     void (*bind)(sqlite3_stmt *st, const void *arg),
		     const void *arg, int *changes)
{
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc = sq_acquire(s, &c);

	if (rc)
		return rc;
	rc = sq_begin(s, c);
	if (rc)
		goto out;
	rc = sq_prep(s, c, sql, &st);
	if (!rc) {
		bind(st, arg);
		rc = sq_exec(s, c, st, what);
	}
	if (!rc && changes)
		*changes = sqlite3_changes(c->db);
	rc = sq_end(s, c, rc);
out:
	sq_release(s, c);
	return rc;
}

/* A read of rows into an array; @bind may be NULL. */
static int read_rows(struct sq *s, const char *sql, const char *what,
		     void (*bind)(sqlite3_stmt *st, const void *arg),
		     const void *arg, size_t elem,
		     void (*rd)(sqlite3_stmt *st, void *elem), void **out,
		     size_t *n)
{
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	*n = 0;
	rc = sq_acquire(s, &c);
	if (rc)
		return rc;
	rc = sq_prep(s, c, sql, &st);
	if (!rc) {
		if (bind)
			bind(st, arg);
		rc = sq_collect(s, c, st, elem, rd, out, n, what);
	}
	sq_release(s, c);
	return rc;
}

/* One row into @elem: 0, -ENOENT, or an error. */
static int read_one(struct sq *s, const char *sql, const char *what,
		    void (*bind)(sqlite3_stmt *st, const void *arg),
		    const void *arg, size_t elem,
		    void (*rd)(sqlite3_stmt *st, void *elem), void *out)
{
	void *arr;
	size_t n;
	int rc = read_rows(s, sql, what, bind, arg, elem, rd, &arr, &n);

	if (rc)
		return rc;
	if (n && out)
		memcpy(out, arr, elem);
	free(arr);
	return n ? 0 : -ENOENT;
}

static void bind_text1(sqlite3_stmt *st, const void *arg)
{
	sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
}

static void bind_blob1(sqlite3_stmt *st, const void *arg)
{
	sqlite3_bind_blob(st, 1, arg, 32, SQLITE_STATIC);
}

static void bind_model(sqlite3_stmt *st, const void *arg)
{
	const struct engy_model *m = arg;

	sqlite3_bind_text(st, 1, m->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, m->status ? m->status : ENGY_MODEL_ENABLED);
	sqlite3_bind_int64(st, 3, m->max_input_tokens);
	sqlite3_bind_int64(st, 4, m->max_output_tokens);
	sqlite3_bind_int64(st, 5, m->max_request_s);
	sqlite3_bind_int64(st, 6, m->toploc_topk);
	sqlite3_bind_int64(st, 7, m->toploc_v);
	sqlite3_bind_int64(st, 8, m->toploc_p_ppm);
	sqlite3_bind_int64(st, 9, m->qual_ttft_p99_ms);
	sqlite3_bind_int64(st, 10, m->qual_tpot_p99_ms);
	sqlite3_bind_int64(st, 11, m->score_rate);
	sqlite3_bind_int64(st, 12, m->price.input);
	sqlite3_bind_int64(st, 13, m->price.cached_input);
	sqlite3_bind_int64(st, 14, m->price.output);
	sqlite3_bind_int64(st, 15, sq_now_ms());
	sqlite3_bind_int64(st, 16, m->toploc_mant_mean_centi);
	sqlite3_bind_int64(st, 17, m->toploc_mant_median_centi);
	sqlite3_bind_int64(st, 18, m->gemm_layers);
	sqlite3_bind_int64(st, 19, m->gemm_tokens);
	sqlite3_bind_int64(st, 20, m->gemm_projections);
	sqlite3_bind_int64(st, 21, m->gemm_spots);
	sqlite3_bind_int64(st, 22, m->gemm_z_milli);
	sqlite3_bind_int64(st, 23, m->gemm_c_el_milli);
	sqlite3_bind_int64(st, 24, m->gemm_rate_ppm);
}

static void rd_model(sqlite3_stmt *st, void *elem)
{
	struct engy_model *m = elem;

	sq_col_text(st, 0, m->name, sizeof(m->name));
	m->status = (uint32_t)sqlite3_column_int64(st, 1);
	m->max_input_tokens = (uint32_t)sqlite3_column_int64(st, 2);
	m->max_output_tokens = (uint32_t)sqlite3_column_int64(st, 3);
	m->max_request_s = (uint32_t)sqlite3_column_int64(st, 4);
	m->toploc_topk = (uint32_t)sqlite3_column_int64(st, 5);
	m->toploc_v = (uint32_t)sqlite3_column_int64(st, 6);
	m->toploc_p_ppm = (uint32_t)sqlite3_column_int64(st, 7);
	m->qual_ttft_p99_ms = (uint32_t)sqlite3_column_int64(st, 8);
	m->qual_tpot_p99_ms = (uint32_t)sqlite3_column_int64(st, 9);
	m->score_rate = sqlite3_column_int64(st, 10);
	m->price.input = sqlite3_column_int64(st, 11);
	m->price.cached_input = sqlite3_column_int64(st, 12);
	m->price.output = sqlite3_column_int64(st, 13);
	m->updated_ms = sqlite3_column_int64(st, 14);
	m->toploc_mant_mean_centi = (uint16_t)sqlite3_column_int64(st, 15);
	m->toploc_mant_median_centi = (uint16_t)sqlite3_column_int64(st, 16);
	m->gemm_layers = (uint32_t)sqlite3_column_int64(st, 17);
	m->gemm_tokens = (uint32_t)sqlite3_column_int64(st, 18);
	m->gemm_projections = (uint32_t)sqlite3_column_int64(st, 19);
	m->gemm_spots = (uint32_t)sqlite3_column_int64(st, 20);
	m->gemm_z_milli = (uint32_t)sqlite3_column_int64(st, 21);
	m->gemm_c_el_milli = (uint32_t)sqlite3_column_int64(st, 22);
	m->gemm_rate_ppm = (uint32_t)sqlite3_column_int64(st, 23);
}

int sq_model_put(void *inst, const struct engy_model *m)
{
	struct sq *s = inst;
	const char *why = engy_store_model_bad(m);

	if (why)
		return sq_bad(s, "model_put", why);
	return write_one(s, sql_model_put, "model_put", bind_model, m, NULL);
}

int sq_model_get(void *inst, const char *name, struct engy_model *out)
{
	struct sq *s = inst;

	if (!engy_store_name_ok(name, 127))
		return -ENOENT;
	return read_one(s, sql_model_get, "model_get", bind_text1, name,
			sizeof(*out), rd_model, out);
}

int sq_model_list(void *inst, struct engy_model **out, size_t *n)
{
	return read_rows(inst, sql_model_list, "model_list", NULL, NULL,
			 sizeof(**out), rd_model, (void **)out, n);
}

static void bind_root(sqlite3_stmt *st, const void *arg)
{
	const struct engy_model_root *r = arg;

	sqlite3_bind_blob(st, 1, r->root, 32, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, r->spec_root, 32, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, r->model, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, r->quant, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, r->arch, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, sq_now_ms());
}

static void rd_root(sqlite3_stmt *st, void *elem)
{
	struct engy_model_root *r = elem;

	sq_col_blob32(st, 0, r->root);
	sq_col_blob32(st, 1, r->spec_root);
	sq_col_text(st, 2, r->model, sizeof(r->model));
	sq_col_text(st, 3, r->quant, sizeof(r->quant));
	sq_col_text(st, 4, r->arch, sizeof(r->arch));
	r->added_ms = sqlite3_column_int64(st, 5);
}

int sq_model_root_put(void *inst, const struct engy_model_root *r)
{
	struct sq *s = inst;
	const char *why = engy_store_root_bad(r);
	int changes = 0, rc;

	if (why)
		return sq_bad(s, "model_root_put", why);
	rc = write_one(s, sql_root_put, "model_root_put", bind_root, r,
		       &changes);
	/* The upsert skipped: the root is another model's. */
	return !rc && !changes ? -EEXIST : rc;
}

int sq_model_root_get(void *inst, const uint8_t root[32],
		      struct engy_model_root *out)
{
	return read_one(inst, sql_root_get, "model_root_get", bind_blob1, root,
			sizeof(*out), rd_root, out);
}

int sq_model_root_list(void *inst, const char *model,
		       struct engy_model_root **out, size_t *n)
{
	if (model)
		return read_rows(inst, sql_root_list, "model_root_list",
				 bind_text1, model, sizeof(**out), rd_root,
				 (void **)out, n);
	return read_rows(inst, sql_root_list_all, "model_root_list", NULL, NULL,
			 sizeof(**out), rd_root, (void **)out, n);
}

int sq_model_root_del(void *inst, const uint8_t root[32])
{
	int changes = 0;
	int rc = write_one(inst, sql_root_del, "model_root_del", bind_blob1,
			   root, &changes);

	return !rc && !changes ? -ENOENT : rc;
}

static void rd_miner(sqlite3_stmt *st, void *elem)
{
	struct engy_miner *m = elem;

	m->id = sqlite3_column_int64(st, 0);
	sq_col_text(st, 1, m->hotkey, sizeof(m->hotkey));
	sq_col_text(st, 3, m->key_shown, sizeof(m->key_shown));
	sq_col_text(st, 4, m->label, sizeof(m->label));
	m->status = (uint32_t)sqlite3_column_int64(st, 5);
	m->first_party = (uint32_t)sqlite3_column_int64(st, 6);
	m->priority = (int32_t)sqlite3_column_int64(st, 7);
	m->created_ms = sqlite3_column_int64(st, 8);
	m->updated_ms = sqlite3_column_int64(st, 9);
}

struct miner_bind {
	const struct engy_miner *m;
	const uint8_t *hash; /* NULL: keep the key */
	const char *shown;
	int64_t now;
};

static void bind_miner(sqlite3_stmt *st, const void *arg)
{
	const struct miner_bind *b = arg;

	sqlite3_bind_text(st, 1, b->m->hotkey, -1, SQLITE_STATIC);
	if (b->hash) {
		sqlite3_bind_blob(st, 2, b->hash, 32, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, b->shown, -1, SQLITE_STATIC);
	}
	sqlite3_bind_text(st, 4, b->m->label, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5,
			   b->m->status ? b->m->status : ENGY_MINER_ACTIVE);
	sqlite3_bind_int64(st, 6, b->m->first_party);
	sqlite3_bind_int64(st, 7, b->m->priority);
	sqlite3_bind_int64(st, 8, b->now);
}

/* Update by hotkey, or insert when new (which needs a key): one transaction. */
static int miner_write(struct sq *s, const struct miner_bind *b, bool have_key)
{
	struct sq_conn *c;
	sqlite3_stmt *st;
	int rc = sq_acquire(s, &c);

	if (rc)
		return rc;
	rc = sq_begin(s, c);
	if (rc)
		goto out;
	rc = sq_prep(s, c, sql_miner_update, &st);
	if (!rc) {
		bind_miner(st, b);
		rc = sq_exec(s, c, st, "miner_put");
	}
	if (!rc && sqlite3_changes(c->db) == 0) {
		if (!have_key)
			rc = sq_bad(s, "miner_put", "key"); /* new: needs one */
		else
			rc = sq_prep(s, c, sql_miner_insert, &st);
		if (!rc) {
			bind_miner(st, b);
			rc = sq_exec(s, c, st, "miner_put");
		}
	}
	rc = sq_end(s, c, rc);
out:
	sq_release(s, c);
	return rc;
}

int sq_miner_put(void *inst, const struct engy_miner *m, char **key,
		 struct engy_miner *out)
{
	struct sq *s = inst;
	char text[ENGY_APIKEY_SIZE], shown[ENGY_APIKEY_SHOWN + 1];
	struct miner_bind b = { m, NULL, shown, sq_now_ms() };
	const char *why = engy_store_miner_bad(m);
	uint8_t hash[32];
	int rc;

	if (why)
		return sq_bad(s, "miner_put", why);
	if (key) {
		*key = NULL;
		rc = engy_apikey_generate(ENGY_MINERKEY_PREFIX, text,
					  sizeof(text));
		if (!rc)
			rc = sq_key_hash(s, text, ENGY_APIKEY_LEN, hash);
		if (rc)
			return rc;
		engy_apikey_shown(text, shown);
		b.hash = hash;
	}
	rc = miner_write(s, &b, key != NULL);
	if (!rc && out)
		rc = read_one(s, sql_miner_by_hotkey, "miner_get", bind_text1,
			      m->hotkey, sizeof(*out), rd_miner, out);
	if (!rc && key && !(*key = strdup(text)))
		rc = -ENOMEM;
	sodium_memzero(text, sizeof(text));
	return rc;
}

int sq_miner_lookup(void *inst, const uint8_t hash[32], struct engy_miner *out)
{
	return read_one(inst, sql_miner_by_hash, "miner_lookup", bind_blob1,
			hash, sizeof(*out), rd_miner, out);
}

int sq_miner_list(void *inst, struct engy_miner **out, size_t *n)
{
	return read_rows(inst, sql_miner_list, "miner_list", NULL, NULL,
			 sizeof(**out), rd_miner, (void **)out, n);
}
