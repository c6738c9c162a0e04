/* SPDX-License-Identifier: MIT */
/*
 * The opening (specs/gemm-audit.md §4): the builder on the miner's side
 * (rows offered by a replay, checked against the trace's leaves, with
 * their token and sub paths), and the parser of an untrusted opening.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base64.h"
#include "errbuf.h"
#include "gemm.h"
#include "gemm_int.h"
#include "grow.h"
#include "hex.h"
#include "merkle.h"

struct brow {
	uint64_t key;
	uint32_t pos;
	float *data;
	size_t n;
};

struct engy_ga_open {
	struct engy_ga_trace *t;
	struct engy_ga_cell *cells;
	size_t n_cells;
	struct brow *rows;
	size_t n_rows, cap_rows;
};

struct engy_ga_open *engy_ga_open_new(struct engy_ga_trace *t,
				      const struct engy_ga_cell *cells,
				      size_t n)
{
	struct engy_ga_open *o;

	if (!t->rooted || n > ENGY_GA_MAX_CELLS) {
		errno = EINVAL;
		return NULL;
	}
	o = calloc(1, sizeof(*o));
	if (!o || !(o->cells = malloc((n ? n : 1) * sizeof(*cells)))) {
		free(o);
		errno = ENOMEM;
		return NULL;
	}
	memcpy(o->cells, cells, n * sizeof(*cells));
	o->n_cells = n;
	o->t = t;
	return o;
}

void engy_ga_open_free(struct engy_ga_open *o)
{
	size_t i;

	if (!o)
		return;
	for (i = 0; i < o->n_rows; i++)
		free(o->rows[i].data);
	free(o->rows);
	free(o->cells);
	free(o);
}

static bool challenged(const struct engy_ga_cell *c, size_t n, uint16_t layer,
		       uint32_t pos)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (c[i].layer == layer && c[i].pos == pos)
			return true;
	return false;
}

int engy_ga_open_add(struct engy_ga_open *o, const struct engy_ga_key *key,
		     uint32_t pos, const float *row, size_t n)
{
	struct engy_ga_sub *s;
	uint64_t k;
	uint8_t leaf[32];
	bool found;
	size_t at, i;

	if (!engy_ga_key_ok(key) || !n || n > ENGY_GA_MAX_ROW)
		return -EINVAL;
	if (!challenged(o->cells, o->n_cells, key->layer, pos))
		return 0;
	k = engy_ga_key_pack(key);
	s = engy_ga_trace_sub(o->t, k, false);
	if (!s)
		return -ENOENT;
	at = engy_ga_sub_find(s, pos, &found);
	if (!found)
		return -ENOENT;
	engy_ga_leaf_h(o->t->h, key, pos, row, n, leaf);
	if (memcmp(leaf, s->e[at].leaf, 32))
		return -EBADMSG;
	for (i = 0; i < o->n_rows; i++)
		if (o->rows[i].key == k && o->rows[i].pos == pos)
			return -EEXIST;
	if (!ENGY_GROW_BY(o->rows, o->cap_rows, o->n_rows, 1))
		return -ENOMEM;
	o->rows[o->n_rows].data = malloc(n * sizeof(float));
	if (!o->rows[o->n_rows].data)
		return -ENOMEM;
	memcpy(o->rows[o->n_rows].data, row, n * sizeof(float));
	o->rows[o->n_rows].key = k;
	o->rows[o->n_rows].pos = pos;
	o->rows[o->n_rows].n = n;
	o->n_rows++;
	return 0;
}

static int cmp_brow(const void *a, const void *b)
{
	const struct brow *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* ---- The JSON (one writer for the builder and the round trip) ---- */

static cJSON *hex_array(const uint8_t *p, unsigned depth)
{
	cJSON *a = cJSON_CreateArray();
	char hex[65];
	unsigned d;

	for (d = 0; a && d < depth; d++) {
		cJSON *s;

		engy_hex_print(p + 32 * d, 32, hex);
		s = cJSON_CreateString(hex);
		if (!s || !cJSON_AddItemToArray(a, s)) {
			cJSON_Delete(s);
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

static bool add_hex(cJSON *o, const char *k, const uint8_t b[32])
{
	char hex[65];

	engy_hex_print(b, 32, hex);
	return cJSON_AddStringToObject(o, k, hex) != NULL;
}

static cJSON *row_json(const struct engy_ga_orow *r)
{
	cJSON *o = cJSON_CreateObject(), *p;
	size_t blen = r->n * sizeof(float);
	char *b64 = malloc(engy_base64_enc_len(blen) + 1);
	bool ok;
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the opening's rows are little-endian float32: port the encoder"
#endif

	ok = o && b64 && cJSON_AddNumberToObject(o, "pos", r->pos) &&
	     (p = hex_array(r->path, r->depth)) &&
	     cJSON_AddItemToObject(o, "path", p);
	if (ok) {
		engy_base64_encode(b64, (const uint8_t *)r->data, blen);
		ok = cJSON_AddStringToObject(o, "data", b64) != NULL;
	}
	free(b64);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *sub_json(const struct engy_ga_osub *s)
{
	cJSON *o = cJSON_CreateObject(), *k = cJSON_CreateArray(), *p, *rows;
	size_t i;
	bool ok;

	ok = o && k &&
	     cJSON_AddItemToArray(k, cJSON_CreateNumber(s->key.layer)) &&
	     cJSON_AddItemToArray(k, cJSON_CreateNumber(s->key.mm)) &&
	     cJSON_AddItemToArray(k, cJSON_CreateNumber(s->key.expert)) &&
	     cJSON_AddItemToArray(k, cJSON_CreateNumber(s->key.role)) &&
	     cJSON_AddItemToObject(o, "key", k);
	if (!ok)
		cJSON_Delete(k);
	ok = ok && cJSON_AddNumberToObject(o, "index", s->index) &&
	     (p = hex_array(s->path, s->depth)) &&
	     cJSON_AddItemToObject(o, "path", p) &&
	     (rows = cJSON_AddArrayToObject(o, "rows"));
	for (i = 0; ok && i < s->n_rows; i++) {
		cJSON *r = row_json(&s->rows[i]);

		ok = r && cJSON_AddItemToArray(rows, r);
		if (!ok)
			cJSON_Delete(r);
	}
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

char *engy_ga_opening_json(const struct engy_ga_opening *op)
{
	cJSON *o = cJSON_CreateObject(), *cells, *subs;
	const struct engy_ga_bind *b = &op->bind;
	char *s = NULL;
	size_t i;
	bool ok;

	ok = o && cJSON_AddStringToObject(o, "hashing", ENGY_GA_HASHING) &&
	     add_hex(o, "spec_root", b->spec_root) &&
	     add_hex(o, "ids_hash", b->ids_hash) &&
	     cJSON_AddNumberToObject(o, "n_prompt", b->n_prompt) &&
	     cJSON_AddNumberToObject(o, "n_tokens", b->n_tokens) &&
	     add_hex(o, "sampling", b->sampling) &&
	     cJSON_AddNumberToObject(o, "n_subs", op->n_subs) &&
	     (cells = cJSON_AddArrayToObject(o, "cells"));
	for (i = 0; ok && i < op->n_cells; i++) {
		cJSON *c = cJSON_CreateArray();

		ok = c &&
		     cJSON_AddItemToArray(
			     c, cJSON_CreateNumber(op->cells[i].layer)) &&
		     cJSON_AddItemToArray(
			     c, cJSON_CreateNumber(op->cells[i].pos)) &&
		     cJSON_AddItemToArray(cells, c);
		if (!ok)
			cJSON_Delete(c);
	}
	ok = ok && (subs = cJSON_AddArrayToObject(o, "subs"));
	for (i = 0; ok && i < op->n_osubs; i++) {
		cJSON *c = sub_json(&op->subs[i]);

		ok = c && cJSON_AddItemToArray(subs, c);
		if (!ok)
			cJSON_Delete(c);
	}
	if (ok)
		s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!s)
		errno = ENOMEM;
	return s;
}

/* The rows of the trace at (layer, pos) that were not offered. */
static bool complete(struct engy_ga_open *o)
{
	struct engy_ga_trace *t = o->t;
	size_t c, i, r;

	for (c = 0; c < o->n_cells; c++)
		for (i = 0; i < t->n_subs; i++) {
			const struct engy_ga_sub *s = &t->subs[i];
			bool found, have = false;

			if ((uint16_t)(s->key >> 32) != o->cells[c].layer)
				continue;
			engy_ga_sub_find(s, o->cells[c].pos, &found);
			if (!found)
				continue;
			for (r = 0; r < o->n_rows && !have; r++)
				have = o->rows[r].key == s->key &&
				       o->rows[r].pos == o->cells[c].pos;
			if (!have)
				return false;
		}
	return true;
}

char *engy_ga_open_json(struct engy_ga_open *o)
{
	struct engy_ga_trace *t = o->t;
	struct engy_ga_opening op = { .bind = t->bind,
				      .n_subs = (uint32_t)t->n_subs,
				      .cells = o->cells,
				      .n_cells = o->n_cells };
	unsigned tdepth = engy_mc_depth(t->bind.n_tokens),
		 sdepth = engy_mc_depth(t->n_subs);
	uint32_t *ranks = NULL, *want = NULL;
	uint8_t *spaths = NULL, *tpaths = NULL;
	struct engy_ga_orow *orows = NULL;
	size_t i, j, ns = 0;
	char *json = NULL;
	int err = ENOMEM;

	if (!complete(o)) {
		errno = ENOENT;
		return NULL;
	}
	qsort(o->rows, o->n_rows, sizeof(*o->rows), cmp_brow);
	for (i = 0; i < o->n_rows; i++)
		if (!i || o->rows[i].key != o->rows[i - 1].key)
			ns++;
	op.subs = calloc(ns ? ns : 1, sizeof(*op.subs));
	ranks = malloc((ns ? ns : 1) * sizeof(*ranks));
	want = malloc((o->n_rows ? o->n_rows : 1) * sizeof(*want));
	orows = calloc(o->n_rows ? o->n_rows : 1, sizeof(*orows));
	spaths = malloc((ns ? ns : 1) * (sdepth ? sdepth : 1) * 32);
	tpaths = malloc((o->n_rows ? o->n_rows : 1) * (tdepth ? tdepth : 1) *
			32);
	if (!op.subs || !ranks || !want || !orows || !spaths || !tpaths)
		goto out;
	for (i = 0, j = 0; i < o->n_rows; j++) {
		struct engy_ga_osub *os = &op.subs[j];
		struct engy_ga_sub *s =
			engy_ga_trace_sub(t, o->rows[i].key, false);
		uint8_t root[32];
		size_t first = i;

		engy_ga_key_unpack(o->rows[i].key, &os->key);
		os->index = s->rank;
		ranks[j] = s->rank;
		os->depth = sdepth;
		os->path = spaths + j * sdepth * 32;
		os->rows = orows + first;
		for (; i < o->n_rows && o->rows[i].key == o->rows[first].key;
		     i++) {
			want[i - first] = o->rows[i].pos;
			orows[i].pos = o->rows[i].pos;
			orows[i].depth = tdepth;
			orows[i].path = tpaths + i * tdepth * 32;
			orows[i].data = o->rows[i].data;
			orows[i].n = o->rows[i].n;
		}
		os->n_rows = i - first;
		engy_ga_sparse_root(t->h, s->e, s->n, tdepth, t->empty, want,
				    os->n_rows, tpaths + first * tdepth * 32,
				    root);
		if (memcmp(root, s->root, 32)) {
			err = EIO;
			goto out;
		}
	}
	op.n_osubs = ns;
	if (engy_ga_trace_sub_paths(t, ranks, ns, spaths) < 0) {
		err = EIO;
		goto out;
	}
	json = engy_ga_opening_json(&op);
out:
	free(op.subs);
	free(ranks);
	free(want);
	free(orows);
	free(spaths);
	free(tpaths);
	if (!json)
		errno = err;
	return json;
}

/* ---- The parser (untrusted) ---- */

void engy_ga_opening_free(struct engy_ga_opening *o)
{
	size_t i, j;

	if (!o)
		return;
	for (i = 0; i < o->n_osubs; i++) {
		for (j = 0; j < o->subs[i].n_rows; j++) {
			free(o->subs[i].rows[j].path);
			free(o->subs[i].rows[j].data);
		}
		free(o->subs[i].rows);
		free(o->subs[i].path);
	}
	free(o->subs);
	free(o->cells);
	free(o);
}

static int parse_path(const cJSON *a, uint8_t **out, unsigned *depth)
{
	const cJSON *h;
	int n, k = 0;

	if (!cJSON_IsArray(a) ||
	    (n = cJSON_GetArraySize(a)) > ENGY_GA_MAX_DEPTH)
		return -EINVAL;
	*out = malloc(n ? (size_t)n * 32 : 1);
	if (!*out)
		return -ENOMEM;
	cJSON_ArrayForEach(h, a)
	{
		if (!engy_ga_json_hex32(h, *out + 32 * k))
			return -EINVAL;
		k++;
	}
	*depth = (unsigned)n;
	return 0;
}

static int parse_row(const cJSON *r, struct engy_ga_orow *o, size_t *budget,
		     char *err, size_t errlen)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(r, "data");
	size_t len, got;
	int rc;

	if (!cJSON_IsObject(r) ||
	    !engy_ga_json_u32(cJSON_GetObjectItemCaseSensitive(r, "pos"),
			      UINT32_MAX, &o->pos))
		return engy_seterr(err, errlen, "a row has no pos"), -EINVAL;
	rc = parse_path(cJSON_GetObjectItemCaseSensitive(r, "path"), &o->path,
			&o->depth);
	if (rc)
		return engy_seterr(err, errlen, "a row's path is malformed"),
		       rc;
	if (!cJSON_IsString(d))
		return engy_seterr(err, errlen, "a row has no data"), -EINVAL;
	len = strlen(d->valuestring);
	/* 4 bytes per value: at most len * 3 / 4 bytes decoded. */
	got = len / 4 * 3;
	if (!got || got / 4 > ENGY_GA_MAX_ROW || got / 4 > *budget)
		return engy_seterr(err, errlen, "a row's data is too long"),
		       -EINVAL;
	o->data = malloc(got);
	if (!o->data)
		return -ENOMEM;
	if (engy_base64_decode((uint8_t *)o->data, got, d->valuestring, len,
			       &got) < 0 ||
	    !got || got % 4)
		return engy_seterr(err, errlen,
				   "a row's data is not base64 float32"),
		       -EINVAL;
	o->n = got / 4;
	*budget -= o->n;
	return 0;
}

static int parse_sub(const cJSON *s, struct engy_ga_osub *o, size_t *rows,
		     size_t *budget, char *err, size_t errlen)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(s, "key"), *r;
	uint32_t v[4];
	int i, rc;

	if (!cJSON_IsObject(s) || !cJSON_IsArray(k) ||
	    cJSON_GetArraySize(k) != 4)
		return engy_seterr(err, errlen, "a sub has no key"), -EINVAL;
	for (i = 0; i < 4; i++)
		if (!engy_ga_json_u32(cJSON_GetArrayItem(k, i), 0xffff, &v[i]))
			return engy_seterr(err, errlen,
					   "a sub's key is malformed"),
			       -EINVAL;
	o->key.layer = (uint16_t)v[0];
	o->key.mm = (uint8_t)(v[1] > 255 ? 255 : v[1]);
	o->key.expert = (uint16_t)v[2];
	o->key.role = (uint8_t)(v[3] > 255 ? 255 : v[3]);
	if (!engy_ga_key_ok(&o->key))
		return engy_seterr(err, errlen, "a sub's key is not a key"),
		       -EINVAL;
	if (!engy_ga_json_u32(cJSON_GetObjectItemCaseSensitive(s, "index"),
			      UINT32_MAX, &o->index))
		return engy_seterr(err, errlen, "a sub has no index"), -EINVAL;
	rc = parse_path(cJSON_GetObjectItemCaseSensitive(s, "path"), &o->path,
			&o->depth);
	if (rc)
		return engy_seterr(err, errlen, "a sub's path is malformed"),
		       rc;
	r = cJSON_GetObjectItemCaseSensitive(s, "rows");
	if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) < 1 ||
	    (size_t)cJSON_GetArraySize(r) > ENGY_GA_MAX_ROWS - *rows)
		return engy_seterr(err, errlen, "a sub's rows are malformed"),
		       -EINVAL;
	o->rows = calloc((size_t)cJSON_GetArraySize(r), sizeof(*o->rows));
	if (!o->rows)
		return -ENOMEM;
	cJSON_ArrayForEach(s, r)
	{
		rc = parse_row(s, &o->rows[o->n_rows++], budget, err, errlen);
		if (rc)
			return rc;
	}
	*rows += o->n_rows;
	return 0;
}

int engy_ga_opening_parse(const char *buf, size_t len,
			  struct engy_ga_opening **out, char *err,
			  size_t errlen)
{
	struct engy_ga_opening *o;
	const cJSON *h, *s;
	size_t rows = 0, budget = (size_t)64 << 20; /* values in all */
	cJSON *j;
	int rc = -EINVAL;

	*out = NULL;
	j = cJSON_ParseWithLength(buf, len);
	o = calloc(1, sizeof(*o));
	if (!o) {
		cJSON_Delete(j);
		return -ENOMEM;
	}
	if (!cJSON_IsObject(j)) {
		engy_seterr(err, errlen, "the opening is not a JSON object");
		goto fail;
	}
	h = cJSON_GetObjectItemCaseSensitive(j, "hashing");
	if (!cJSON_IsString(h) || strcmp(h->valuestring, ENGY_GA_HASHING)) {
		engy_seterr(err, errlen, "hashing is not %s", ENGY_GA_HASHING);
		goto fail;
	}
	if (!engy_ga_json_hex32(
		    cJSON_GetObjectItemCaseSensitive(j, "spec_root"),
		    o->bind.spec_root) ||
	    !engy_ga_json_hex32(cJSON_GetObjectItemCaseSensitive(j, "ids_hash"),
				o->bind.ids_hash) ||
	    !engy_ga_json_hex32(cJSON_GetObjectItemCaseSensitive(j, "sampling"),
				o->bind.sampling) ||
	    !engy_ga_json_u32(cJSON_GetObjectItemCaseSensitive(j, "n_prompt"),
			      UINT32_MAX, &o->bind.n_prompt) ||
	    !engy_ga_json_u32(cJSON_GetObjectItemCaseSensitive(j, "n_tokens"),
			      UINT32_MAX, &o->bind.n_tokens) ||
	    !engy_ga_json_u32(cJSON_GetObjectItemCaseSensitive(j, "n_subs"),
			      UINT32_MAX, &o->n_subs)) {
		engy_seterr(err, errlen, "the binding fields are malformed");
		goto fail;
	}
	rc = engy_ga_cells_parse(cJSON_GetObjectItemCaseSensitive(j, "cells"),
				 &o->cells, &o->n_cells, err, errlen);
	if (rc)
		goto fail;
	rc = -EINVAL;
	h = cJSON_GetObjectItemCaseSensitive(j, "subs");
	if (!cJSON_IsArray(h) ||
	    (size_t)cJSON_GetArraySize(h) > ENGY_GA_MAX_ROWS) {
		engy_seterr(err, errlen, "subs is not an array");
		goto fail;
	}
	o->subs = calloc((size_t)cJSON_GetArraySize(h) + 1, sizeof(*o->subs));
	if (!o->subs) {
		rc = -ENOMEM;
		goto fail;
	}
	cJSON_ArrayForEach(s, h)
	{
		rc = parse_sub(s, &o->subs[o->n_osubs++], &rows, &budget, err,
			       errlen);
		if (rc)
			goto fail;
	}
	cJSON_Delete(j);
	*out = o;
	return 0;
fail:
	cJSON_Delete(j);
	engy_ga_opening_free(o);
	return rc;
}
