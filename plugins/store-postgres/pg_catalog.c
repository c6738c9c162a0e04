/* SPDX-License-Identifier: MIT */
/* store-postgres: models and their price cards, model roots, miners. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "apikey.h"
#include "pg.h"
#include "storecheck.h"
#include "storesql.h"

static const char sql_model_put[] = STORESQL_MODEL_PUT(POSTGRES);
static const char sql_model_get[] = STORESQL_MODEL_GET(POSTGRES);
/* Byte order, as store-sqlite sorts. */
static const char sql_model_list[] = STORESQL_MODEL_LIST(POSTGRES);
static const char sql_root_put[] = STORESQL_ROOT_PUT(POSTGRES);
static const char sql_root_get[] = STORESQL_ROOT_GET(POSTGRES);
static const char sql_root_list[] = STORESQL_ROOT_LIST(POSTGRES);
static const char sql_root_list_all[] = STORESQL_ROOT_LIST_ALL(POSTGRES);
static const char sql_root_del[] = STORESQL_ROOT_DEL(POSTGRES);
static const char sql_miner_by_hotkey[] = STORESQL_MINER_BY_HOTKEY(POSTGRES);
static const char sql_miner_by_hash[] = STORESQL_MINER_BY_HASH(POSTGRES);
static const char sql_miner_list[] = STORESQL_MINER_LIST(POSTGRES);
static const char sql_miner_insert[] = STORESQL_MINER_INSERT(POSTGRES);
static const char sql_miner_update[] = STORESQL_MINER_UPDATE(POSTGRES);

/* A write of one statement in its own transaction. */
struct write_args {
	const char *sql;
	const char *what;
	struct pg_args a;
	int64_t changed;
};

static int do_write(struct pg *s, struct pg_conn *c, void *arg)
{
	struct write_args *w = arg;

	return pg_exec(s, c, w->sql, &w->a, w->what, &w->changed);
}

static void rd_model(const PGresult *r, int i, void *elem)
{
	struct engy_model *m = elem;

	pg_text(r, i, 0, m->name, sizeof(m->name));
	m->status = (uint32_t)pg_i64(r, i, 1);
	m->max_input_tokens = (uint32_t)pg_i64(r, i, 2);
	m->max_output_tokens = (uint32_t)pg_i64(r, i, 3);
	m->max_request_s = (uint32_t)pg_i64(r, i, 4);
	m->toploc_topk = (uint32_t)pg_i64(r, i, 5);
	m->toploc_v = (uint32_t)pg_i64(r, i, 6);
	m->toploc_p_ppm = (uint32_t)pg_i64(r, i, 7);
	m->qual_ttft_p99_ms = (uint32_t)pg_i64(r, i, 8);
	m->qual_tpot_p99_ms = (uint32_t)pg_i64(r, i, 9);
	m->score_rate = pg_i64(r, i, 10);
	m->price.input = pg_i64(r, i, 11);
	m->price.cached_input = pg_i64(r, i, 12);
	m->price.output = pg_i64(r, i, 13);
	m->updated_ms = pg_i64(r, i, 14);
	m->toploc_mant_mean_centi = (uint16_t)pg_i64(r, i, 15);
	m->toploc_mant_median_centi = (uint16_t)pg_i64(r, i, 16);
	m->gemm_layers = (uint32_t)pg_i64(r, i, 17);
	m->gemm_tokens = (uint32_t)pg_i64(r, i, 18);
	m->gemm_projections = (uint32_t)pg_i64(r, i, 19);
	m->gemm_spots = (uint32_t)pg_i64(r, i, 20);
	m->gemm_z_milli = (uint32_t)pg_i64(r, i, 21);
	m->gemm_c_el_milli = (uint32_t)pg_i64(r, i, 22);
	m->gemm_rate_ppm = (uint32_t)pg_i64(r, i, 23);
}

int pg_model_put(void *inst, const struct engy_model *m)
{
	struct pg *s = inst;
	const char *why = engy_store_model_bad(m);
	struct write_args w = { sql_model_put, "model_put", { 0 }, 0 };

	if (why)
		return pg_bad(s, "model_put", why);
	pg_arg_text(&w.a, m->name);
	pg_arg_i64(&w.a, m->status ? m->status : ENGY_MODEL_ENABLED);
	pg_arg_i64(&w.a, m->max_input_tokens);
	pg_arg_i64(&w.a, m->max_output_tokens);
	pg_arg_i64(&w.a, m->max_request_s);
	pg_arg_i64(&w.a, m->toploc_topk);
	pg_arg_i64(&w.a, m->toploc_v);
	pg_arg_i64(&w.a, m->toploc_p_ppm);
	pg_arg_i64(&w.a, m->qual_ttft_p99_ms);
	pg_arg_i64(&w.a, m->qual_tpot_p99_ms);
	pg_arg_i64(&w.a, m->score_rate);
	pg_arg_i64(&w.a, m->price.input);
	pg_arg_i64(&w.a, m->price.cached_input);
	pg_arg_i64(&w.a, m->price.output);
	pg_arg_i64(&w.a, pg_now_ms());
	pg_arg_i64(&w.a, m->toploc_mant_mean_centi);
	pg_arg_i64(&w.a, m->toploc_mant_median_centi);
	pg_arg_i64(&w.a, m->gemm_layers);
	pg_arg_i64(&w.a, m->gemm_tokens);
	pg_arg_i64(&w.a, m->gemm_projections);
	pg_arg_i64(&w.a, m->gemm_spots);
	pg_arg_i64(&w.a, m->gemm_z_milli);
	pg_arg_i64(&w.a, m->gemm_c_el_milli);
	pg_arg_i64(&w.a, m->gemm_rate_ppm);
	return pg_run(s, true, "model_put", do_write, &w);
}

int pg_model_get(void *inst, const char *name, struct engy_model *out)
{
	struct pg_args a = { 0 };

	if (!engy_store_name_ok(name, 127))
		return -ENOENT;
	pg_arg_text(&a, name);
	return pg_read_one(inst, sql_model_get, &a, "model_get", sizeof(*out),
			   rd_model, out);
}

int pg_model_list(void *inst, struct engy_model **out, size_t *n)
{
	return pg_read(inst, sql_model_list, NULL, "model_list", sizeof(**out),
		       rd_model, (void **)out, n);
}

static void rd_root(const PGresult *r, int i, void *elem)
{
	struct engy_model_root *m = elem;

	pg_blob32(r, i, 0, m->root);
	pg_blob32(r, i, 1, m->spec_root);
	pg_text(r, i, 2, m->model, sizeof(m->model));
	pg_text(r, i, 3, m->quant, sizeof(m->quant));
	pg_text(r, i, 4, m->arch, sizeof(m->arch));
	m->added_ms = pg_i64(r, i, 5);
}

int pg_model_root_put(void *inst, const struct engy_model_root *r)
{
	struct pg *s = inst;
	const char *why = engy_store_root_bad(r);
	struct write_args w = { sql_root_put, "model_root_put", { 0 }, 0 };
	int rc;

	if (why)
		return pg_bad(s, "model_root_put", why);
	pg_arg_bytes(&w.a, r->root, 32);
	pg_arg_bytes(&w.a, r->spec_root, 32);
	pg_arg_text(&w.a, r->model);
	pg_arg_text(&w.a, r->quant);
	pg_arg_text(&w.a, r->arch);
	pg_arg_i64(&w.a, pg_now_ms());
	rc = pg_run(s, true, "model_root_put", do_write, &w);
	/* The upsert skipped: the root is another model's. */
	return !rc && !w.changed ? -EEXIST : rc;
}

int pg_model_root_get(void *inst, const uint8_t root[32],
		      struct engy_model_root *out)
{
	struct pg_args a = { 0 };

	pg_arg_bytes(&a, root, 32);
	return pg_read_one(inst, sql_root_get, &a, "model_root_get",
			   sizeof(*out), rd_root, out);
}

int pg_model_root_list(void *inst, const char *model,
		       struct engy_model_root **out, size_t *n)
{
	struct pg_args a = { 0 };

	if (!model)
		return pg_read(inst, sql_root_list_all, NULL, "model_root_list",
			       sizeof(**out), rd_root, (void **)out, n);
	pg_arg_text(&a, model);
	return pg_read(inst, sql_root_list, &a, "model_root_list",
		       sizeof(**out), rd_root, (void **)out, n);
}

int pg_model_root_del(void *inst, const uint8_t root[32])
{
	struct write_args w = { sql_root_del, "model_root_del", { 0 }, 0 };
	int rc;

	pg_arg_bytes(&w.a, root, 32);
	rc = pg_run(inst, true, "model_root_del", do_write, &w);
	return !rc && !w.changed ? -ENOENT : rc;
}

static void rd_miner(const PGresult *r, int i, void *elem)
{
	struct engy_miner *m = elem;

	m->id = pg_i64(r, i, 0);
	pg_text(r, i, 1, m->hotkey, sizeof(m->hotkey));
	pg_text(r, i, 3, m->key_shown, sizeof(m->key_shown));
	pg_text(r, i, 4, m->label, sizeof(m->label));
	m->status = (uint32_t)pg_i64(r, i, 5);
	m->first_party = (uint32_t)pg_i64(r, i, 6);
	m->priority = (int32_t)pg_i64(r, i, 7);
	m->created_ms = pg_i64(r, i, 8);
	m->updated_ms = pg_i64(r, i, 9);
}

/* Update by hotkey, or insert when new (which needs a key). */
static int do_miner_write(struct pg *s, struct pg_conn *c, void *arg)
{
	struct write_args *w = arg;
	int rc = pg_exec(s, c, sql_miner_update, &w->a, "miner_put",
			 &w->changed);

	if (rc || w->changed)
		return rc;
	if (w->a.v[1] == NULL)
		return pg_bad(s, "miner_put", "key"); /* new: needs one */
	return pg_exec(s, c, sql_miner_insert, &w->a, "miner_put", NULL);
}

int pg_miner_put(void *inst, const struct engy_miner *m, char **key,
		 struct engy_miner *out)
{
	struct pg *s = inst;
	char text[ENGY_APIKEY_SIZE], shown[ENGY_APIKEY_SHOWN + 1];
	struct write_args w = { NULL, "miner_put", { 0 }, 0 };
	const char *why = engy_store_miner_bad(m);
	struct pg_args a = { 0 };
	uint8_t hash[32];
	int rc;

	if (why)
		return pg_bad(s, "miner_put", why);
	pg_arg_text(&w.a, m->hotkey);
	if (key) {
		*key = NULL;
		rc = engy_apikey_generate(ENGY_MINERKEY_PREFIX, text,
					  sizeof(text));
		if (!rc)
			rc = pg_key_hash(s, text, ENGY_APIKEY_LEN, hash);
		if (rc)
			goto wipe;
		engy_apikey_shown(text, shown);
		pg_arg_bytes(&w.a, hash, 32);
		pg_arg_text(&w.a, shown);
	} else {
		pg_arg_text(&w.a, NULL); /* NULL: keep the key */
		pg_arg_text(&w.a, NULL);
	}
	pg_arg_text(&w.a, m->label);
	pg_arg_i64(&w.a, m->status ? m->status : ENGY_MINER_ACTIVE);
	pg_arg_i64(&w.a, m->first_party);
	pg_arg_i64(&w.a, m->priority);
	pg_arg_i64(&w.a, pg_now_ms());
	rc = pg_run(s, true, "miner_put", do_miner_write, &w);
	pg_arg_text(&a, m->hotkey);
	if (!rc && out)
		rc = pg_read_one(s, sql_miner_by_hotkey, &a, "miner_get",
				 sizeof(*out), rd_miner, out);
	if (!rc && key && !(*key = strdup(text)))
		rc = -ENOMEM;
wipe:
	if (key)
		sodium_memzero(text, sizeof(text));
	return rc;
}

int pg_miner_lookup(void *inst, const uint8_t hash[32], struct engy_miner *out)
{
	struct pg_args a = { 0 };

	pg_arg_bytes(&a, hash, 32);
	return pg_read_one(inst, sql_miner_by_hash, &a, "miner_lookup",
			   sizeof(*out), rd_miner, out);
}

int pg_miner_list(void *inst, struct engy_miner **out, size_t *n)
{
	return pg_read(inst, sql_miner_list, NULL, "miner_list", sizeof(**out),
		       rd_miner, (void **)out, n);
}
