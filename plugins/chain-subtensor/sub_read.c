/* SPDX-License-Identifier: MIT */
/* Reads: the best block, the runtime and its metadata, storage, the metagraph.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sub.h"

#define KEYS_BATCH 256 /* keys per state_queryStorageAt */

static int fail(struct rpc *r, int rc, char *err, size_t cap, const char *what)
{
	snprintf(err, cap, "%s: %s", what, r->err[0] ? r->err : "failed");
	return rc;
}

static int hash32(const char *hex, uint8_t out[32])
{
	return engy_hex_decode(out, 32, hex) == 32 ? 0 : -EPROTO;
}

int sub_best(struct sub *s, struct rpc *r, struct sub_at *at, char *err,
	     size_t cap)
{
	const cJSON *res, *num;
	char params[96];
	cJSON *root;
	int rc;

	rc = rpc_call_str(r, "chain_getBlockHash", "[]", at->hex,
			  sizeof(at->hex));
	if (rc)
		return fail(r, rc, err, cap, "chain_getBlockHash");
	if (hash32(at->hex, at->hash)) {
		snprintf(err, cap, "chain_getBlockHash: not a block hash");
		return -EPROTO;
	}
	snprintf(params, sizeof(params), "[\"%s\"]", at->hex);
	rc = rpc_call(r, "chain_getHeader", params, &root, &res);
	if (rc)
		return fail(r, rc, err, cap, "chain_getHeader");
	num = cJSON_GetObjectItemCaseSensitive(res, "number");
	if (!cJSON_IsString(num) ||
	    engy_hex_quantity(num->valuestring, &at->number)) {
		cJSON_Delete(root);
		snprintf(err, cap, "chain_getHeader: no block number");
		return -EPROTO;
	}
	cJSON_Delete(root);
	return 0;
}

static int load_metadata(struct sub *s, struct rpc *r, const struct sub_at *at,
			 char *err, size_t cap)
{
	char params[160], why[256];
	const cJSON *res = NULL;
	struct engy_metadata *md = NULL;
	cJSON *root = NULL;
	uint8_t *blob = NULL;
	size_t len = 0;
	int rc;

	/* v15 where the runtime offers it, else state_getMetadata (v14). */
	snprintf(params, sizeof(params),
		 "[\"Metadata_metadata_at_version\",\"0x0f000000\",\"%s\"]",
		 at->hex);
	rc = rpc_call(r, "state_call", params, &root, &res);
	if (rc == 0 && cJSON_IsString(res) &&
	    strcmp(res->valuestring, "0x00") != 0)
		rc = engy_hex_decode_alloc(res->valuestring, &blob, &len);
	else if (rc != -ECANCELED)
		rc = -ENOENT;
	cJSON_Delete(root);
	if (rc == -ECANCELED)
		return fail(r, rc, err, cap, "state_call");
	if (!rc && blob) {
		rc = engy_meta_parse(blob, len, &md, why, sizeof(why));
		if (rc)
			engy_warn(s->h,
				  "event=metadata_v15_unusable reason=\"%s\" "
				  "effect=\"state_getMetadata (v14) instead\"",
				  why);
	}
	free(blob);
	blob = NULL;
	if (!md) {
		snprintf(params, sizeof(params), "[\"%s\"]", at->hex);
		rc = rpc_call(r, "state_getMetadata", params, &root, &res);
		if (rc)
			return fail(r, rc, err, cap, "state_getMetadata");
		rc = cJSON_IsString(res)
			     ? engy_hex_decode_alloc(res->valuestring, &blob,
						     &len)
			     : -EPROTO;
		cJSON_Delete(root);
		if (rc) {
			snprintf(err, cap, "state_getMetadata: not hex bytes");
			return -EPROTO;
		}
		rc = engy_meta_parse(blob, len, &md, why, sizeof(why));
		free(blob);
		if (rc) {
			snprintf(err, cap, "runtime metadata: %s", why);
			return -EPROTO;
		}
	}
	engy_meta_free(s->md);
	s->md = md;
	s->layout_rc = engy_ext_layout_meta(&s->layout, md, s->layout_err,
					    sizeof(s->layout_err));
	engy_info(s->h,
		  "event=metadata spec_version=%u metadata_version=%u "
		  "pallets=%u types=%u signed_extensions=%u%s%s",
		  s->spec_version, md->version, md->n_pallets, md->n_types,
		  md->n_exts, s->layout_rc ? " cannot_sign=" : "",
		  s->layout_rc ? "yes" : "");
	if (s->layout_rc)
		engy_warn(s->h, "event=cannot_sign reason=\"%s\"",
			  s->layout_err);
	return 0;
}

int sub_runtime(struct sub *s, struct rpc *r, const struct sub_at *at,
		char *err, size_t cap)
{
	const cJSON *res, *spec, *tx;
	char params[96];
	cJSON *root;
	uint32_t sv;
	int rc;

	snprintf(params, sizeof(params), "[\"%s\"]", at->hex);
	rc = rpc_call(r, "state_getRuntimeVersion", params, &root, &res);
	if (rc)
		return fail(r, rc, err, cap, "state_getRuntimeVersion");
	spec = cJSON_GetObjectItemCaseSensitive(res, "specVersion");
	tx = cJSON_GetObjectItemCaseSensitive(res, "transactionVersion");
	if (!cJSON_IsNumber(spec) || !cJSON_IsNumber(tx) ||
	    spec->valuedouble < 0 || spec->valuedouble > UINT32_MAX ||
	    tx->valuedouble < 0 || tx->valuedouble > UINT32_MAX) {
		cJSON_Delete(root);
		snprintf(
			err, cap,
			"state_getRuntimeVersion: no spec/transaction version");
		return -EPROTO;
	}
	sv = (uint32_t)spec->valuedouble;
	s->tx_version = (uint32_t)tx->valuedouble;
	cJSON_Delete(root);
	if (s->md && sv == s->spec_version)
		return 0;
	s->spec_version = sv;
	return load_metadata(s, r, at, err, cap);
}

int sub_storage(struct sub *s, struct rpc *r, const struct sub_at *at,
		const char *pallet, const char *item,
		const uint8_t *const *keys, const size_t *key_lens,
		size_t n_keys, uint8_t **val, size_t *len, char *err,
		size_t cap)
{
	const struct engy_meta_entry *e = engy_meta_entry(s->md, pallet, item);
	struct engy_scale_buf key;
	const cJSON *res;
	cJSON *root;
	char *params;
	int rc;

	*val = NULL;
	*len = 0;
	if (!e)
		return -ENOENT;
	engy_scale_buf_init(&key);
	rc = engy_meta_storage_key(s->md, pallet, item, keys, key_lens, n_keys,
				   false, &key);
	params = rc ? NULL : malloc(2 * key.len + 100);
	if (!params) {
		engy_scale_buf_free(&key);
		snprintf(err, cap, "%s.%s: cannot build its key", pallet, item);
		return rc ? rc : -ENOMEM;
	}
	params[0] = '[';
	params[1] = '"';
	engy_hex_encode(params + 2, key.p, key.len);
	sprintf(params + strlen(params), "\",\"%s\"]", at->hex);
	engy_scale_buf_free(&key);
	rc = rpc_call(r, "state_getStorage", params, &root, &res);
	free(params);
	if (rc) {
		char what[128];

		snprintf(what, sizeof(what), "state_getStorage %s.%s", pallet,
			 item);
		return fail(r, rc, err, cap, what);
	}
	if (cJSON_IsString(res)) {
		rc = engy_hex_decode_alloc(res->valuestring, val, len);
	} else if (cJSON_IsNull(res) && e->modifier == 1) {
		*val = malloc(e->def_len ? e->def_len : 1);
		rc = *val ? 0 : -ENOMEM;
		if (*val && e->def_len)
			memcpy(*val, e->def, e->def_len);
		*len = e->def_len;
	} else {
		rc = cJSON_IsNull(res) ? -ENOENT : -EPROTO;
	}
	cJSON_Delete(root);
	if (rc && rc != -ENOENT)
		snprintf(err, cap, "%s.%s: not a SCALE value", pallet, item);
	return rc;
}

/* A u64, u16 or bool item keyed by netuid; @def when the runtime lacks it. */
int sub_u64_item(struct sub *s, struct rpc *r, const struct sub_at *at,
		 const char *item, uint16_t netuid, uint64_t def, uint64_t *v,
		 char *err, size_t cap)
{
	const struct engy_meta_entry *e =
		engy_meta_entry(s->md, "SubtensorModule", item);
	uint8_t key[2] = { (uint8_t)netuid, (uint8_t)(netuid >> 8) };
	const uint8_t *keys[1] = { key };
	size_t lens[1] = { 2 }, len;
	struct engy_scale_rd rd;
	uint8_t *val;
	int rc;

	*v = def;
	if (!e)
		return 0;
	rc = sub_storage(s, r, at, "SubtensorModule", item, keys, lens,
			 e->n_hashers ? 1 : 0, &val, &len, err, cap);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	engy_scale_rd_init(&rd, val, len);
	if (engy_meta_is_prim(s->md, e->value, ENGY_PRIM_U64)) {
		engy_scale_u64(&rd, v);
	} else if (engy_meta_is_prim(s->md, e->value, ENGY_PRIM_U16)) {
		uint16_t x;

		engy_scale_u16(&rd, &x);
		*v = x;
	} else if (engy_meta_is_prim(s->md, e->value, ENGY_PRIM_BOOL)) {
		bool b;

		engy_scale_bool(&rd, &b);
		*v = b;
	} else {
		engy_scale_fail(&rd, -EPROTO);
	}
	free(val);
	if (rd.err) {
		snprintf(err, cap,
			 "SubtensorModule.%s: unexpected type or value", item);
		return -EPROTO;
	}
	return 0;
}

/* One uid's Keys value (32 bytes) from a hex value or null. */
static int put_key(struct sub_job *j, size_t u, const cJSON *v)
{
	if (cJSON_IsNull(v))
		return 0; /* ValueQuery: the zero account */
	if (!cJSON_IsString(v) ||
	    engy_hex_decode(j->mg_uids[u], 32, v->valuestring) != 32) {
		snprintf(j->error, sizeof(j->error),
			 "SubtensorModule.Keys: not a 32-byte account");
		return -EPROTO;
	}
	return 0;
}

/*
 * Keys(netuid, uid) for uids [@from, @to) with one state_queryStorageAt;
 * -ENOSYS when the node does not offer it.
 */
static int keys_batch(struct sub_job *j, struct rpc *r, const struct sub_at *at,
		      size_t from, size_t to)
{
	struct sub *s = j->s;
	const cJSON *res, *ch, *it;
	char **hex, *params, *p;
	cJSON *root;
	size_t u, n = to - from;
	int rc = 0;

	hex = calloc(n, sizeof(*hex));
	params = malloc(n * 140 + 100);
	if (!hex || !params) {
		free(hex);
		free(params);
		return -ENOMEM;
	}
	p = params;
	*p++ = '[';
	*p++ = '[';
	for (u = from; u < to && !rc; u++) {
		uint8_t k1[2] = { (uint8_t)j->netuid,
				  (uint8_t)(j->netuid >> 8) };
		uint8_t k2[2] = { (uint8_t)u, (uint8_t)(u >> 8) };
		const uint8_t *keys[2] = { k1, k2 };
		size_t lens[2] = { 2, 2 };
		struct engy_scale_buf key;

		engy_scale_buf_init(&key);
		rc = engy_meta_storage_key(s->md, "SubtensorModule", "Keys",
					   keys, lens, 2, false, &key);
		hex[u - from] = rc ? NULL : malloc(2 * key.len + 3);
		if (!rc && !hex[u - from])
			rc = -ENOMEM;
		if (!rc) {
			engy_hex_encode(hex[u - from], key.p, key.len);
			p += sprintf(p, "%s\"%s\"", u > from ? "," : "",
				     hex[u - from]);
		}
		engy_scale_buf_free(&key);
	}
	sprintf(p, "],\"%s\"]", at->hex);
	if (!rc)
		rc = rpc_call(r, "state_queryStorageAt", params, &root, &res);
	if (rc == -EREMOTEIO) {
		rc = -ENOSYS;
	} else if (!rc) {
		ch = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetArrayItem(res, 0), "changes");
		if (!cJSON_IsArray(ch))
			rc = -ENOSYS;
		cJSON_ArrayForEach(it, ch)
		{
			const cJSON *k = cJSON_GetArrayItem(it, 0);

			for (u = 0; u < n && !rc; u++)
				if (cJSON_IsString(k) && hex[u] &&
				    strcasecmp(k->valuestring, hex[u]) == 0)
					rc = put_key(j, from + u,
						     cJSON_GetArrayItem(it, 1));
		}
		cJSON_Delete(root);
	} else {
		snprintf(j->error, sizeof(j->error), "state_queryStorageAt: %s",
			 r->err);
	}
	for (u = 0; u < n; u++)
		free(hex[u]);
	free(hex);
	free(params);
	return rc;
}

/* Keys(netuid, uid) for every uid: in batches, else one by one. */
static int read_keys(struct sub_job *j, struct rpc *r, const struct sub_at *at)
{
	struct sub *s = j->s;
	size_t u, n = j->mg.n;
	int rc = 0;

	j->mg_uids = calloc(n ? n : 1, 32);
	if (!j->mg_uids)
		return -ENOMEM;
	for (u = 0; u < n && !rc; u += KEYS_BATCH)
		rc = keys_batch(j, r, at, u,
				u + KEYS_BATCH < n ? u + KEYS_BATCH : n);
	if (rc != -ENOSYS)
		return rc;
	for (u = 0, rc = 0; u < n && !rc; u++) {
		uint8_t k1[2] = { (uint8_t)j->netuid,
				  (uint8_t)(j->netuid >> 8) };
		uint8_t k2[2] = { (uint8_t)u, (uint8_t)(u >> 8) };
		const uint8_t *keys[2] = { k1, k2 };
		size_t lens[2] = { 2, 2 }, len;
		uint8_t *val;

		rc = sub_storage(s, r, at, "SubtensorModule", "Keys", keys,
				 lens, 2, &val, &len, j->error,
				 sizeof(j->error));
		if (rc == -ENOENT) {
			rc = 0;
			continue;
		}
		if (!rc && len != 32) {
			snprintf(j->error, sizeof(j->error),
				 "SubtensorModule.Keys: not a 32-byte account");
			rc = -EPROTO;
		}
		if (!rc)
			memcpy(j->mg_uids[u], val, 32);
		free(val);
	}
	return rc;
}

/* A Vec<bool> or Vec<u64> by uid, padded (or cut) to n. */
static int read_vec(struct sub_job *j, struct rpc *r, const struct sub_at *at,
		    const char *item, bool is_bool)
{
	struct sub *s = j->s;
	const struct engy_meta_entry *e =
		engy_meta_entry(s->md, "SubtensorModule", item);
	uint8_t key[2] = { (uint8_t)j->netuid, (uint8_t)(j->netuid >> 8) };
	const uint8_t *keys[1] = { key };
	size_t lens[1] = { 2 }, len, n = j->mg.n ? j->mg.n : 1;
	struct engy_scale_rd rd;
	uint64_t count, i;
	uint8_t *val;
	int rc;

	if (is_bool)
		j->mg_permit = calloc(n, sizeof(bool));
	else
		j->mg_last = calloc(n, sizeof(uint64_t));
	if (is_bool ? !j->mg_permit : !j->mg_last)
		return -ENOMEM;
	if (!e)
		return 0;
	if (!engy_meta_is_seq_of(s->md, e->value,
				 is_bool ? ENGY_PRIM_BOOL : ENGY_PRIM_U64)) {
		snprintf(j->error, sizeof(j->error),
			 "SubtensorModule.%s: unexpected type", item);
		return -EPROTO;
	}
	rc = sub_storage(s, r, at, "SubtensorModule", item, keys, lens, 1, &val,
			 &len, j->error, sizeof(j->error));
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	engy_scale_rd_init(&rd, val, len);
	engy_scale_compact(&rd, &count);
	for (i = 0; i < count && !rd.err; i++) {
		if (is_bool) {
			bool b;

			engy_scale_bool(&rd, &b);
			if (i < j->mg.n)
				j->mg_permit[i] = b;
		} else {
			uint64_t v;

			engy_scale_u64(&rd, &v);
			if (i < j->mg.n)
				j->mg_last[i] = v;
		}
	}
	free(val);
	if (rd.err) {
		snprintf(j->error, sizeof(j->error),
			 "SubtensorModule.%s: does not decode", item);
		return -EPROTO;
	}
	return 0;
}

void sub_do_metagraph(struct sub_job *j, struct rpc *r)
{
	struct sub *s = j->s;
	struct engy_chain_metagraph *m = &j->mg;
	uint64_t n, added;
	struct sub_at at;
	int rc;

	rc = sub_best(s, r, &at, j->error, sizeof(j->error));
	if (!rc)
		rc = sub_runtime(s, r, &at, j->error, sizeof(j->error));
	if (rc)
		goto out;
	m->block = at.number;
	memcpy(m->block_hash, at.hash, 32);
	if (!engy_meta_entry(s->md, "SubtensorModule", "Keys") ||
	    !engy_meta_entry(s->md, "SubtensorModule", "SubnetworkN")) {
		snprintf(j->error, sizeof(j->error),
			 "the runtime has no SubtensorModule.Keys / "
			 "SubnetworkN");
		rc = -ENOTSUP;
		goto out;
	}
	rc = sub_u64_item(s, r, &at, "SubnetworkN", j->netuid, 0, &n, j->error,
			  sizeof(j->error));
	if (!rc)
		rc = sub_u64_item(s, r, &at, "NetworksAdded", j->netuid, n > 0,
				  &added, j->error, sizeof(j->error));
	if (rc)
		goto out;
	m->exists = added != 0;
	m->n = m->exists ? (size_t)n : 0;
	rc = read_keys(j, r, &at);
	if (!rc)
		rc = read_vec(j, r, &at, "ValidatorPermit", true);
	if (!rc)
		rc = read_vec(j, r, &at, "LastUpdate", false);
	if (!rc)
		rc = sub_u64_item(s, r, &at, "WeightsSetRateLimit", j->netuid,
				  0, &m->rate_limit, j->error,
				  sizeof(j->error));
	if (!rc)
		rc = sub_u64_item(s, r, &at, "WeightsVersionKey", j->netuid, 0,
				  &m->version_key, j->error, sizeof(j->error));
	if (!rc) {
		uint64_t cr;

		rc = sub_u64_item(s, r, &at, "CommitRevealWeightsEnabled",
				  j->netuid, 0, &cr, j->error,
				  sizeof(j->error));
		m->commit_reveal = cr != 0;
	}
	if (!rc)
		rc = sub_cr_settings(j, r, &at, m);
out:
	m->status = rc;
}
