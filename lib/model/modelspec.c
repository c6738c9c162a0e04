/* SPDX-License-Identifier: MIT */
/*
 * A checkpoint's model commitment: the plan, the parallel build, the spec
 * file, its comparison with a checkpoint, and row openings
 * (specs/model-commitment.md).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "errbuf.h"
#include "fsutil.h"
#include "modelspec.h"
#include "safetensors.h"

#define MAX_SHARDS 4096
#define CFG_MAX	   (16u << 20)

struct mtensor {
	struct engy_mc_tensor_desc d;
	const struct engy_st_tensor *t, *scale;
	uint64_t n_rows, row_bytes, aux_bytes;
	uint8_t tid[32], root[32];
	int layer; /* -1: none */
	int cls;   /* 0 other, 1 router, 2 shared, 3 expert */
	int expert;
};

struct engy_ms {
	struct engy_st **st;
	size_t n_st;
	char *config; /* canonical config JSON */
	uint8_t config_sha[32];
	uint32_t n_layers, n_experts, fp8_block;
	struct mtensor *mt; /* committed, sorted by name */
	size_t n;
	uint64_t total;
	bool built;
	uint8_t model_root[32], lm_root[32];
	uint8_t *layer_roots; /* n_layers x 32 */
	cJSON *experts;	      /* expert_roots_by_layer */
};

/* ---- config.json -> the canonical config ---- */

struct kv {
	const char *k;
	char v[96];
};

static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const struct kv *)a)->k, ((const struct kv *)b)->k);
}

/* An exact integer in [0, 2^53]; @def when absent (def < 0: required). */
static int cfg_int(const cJSON *c, const char *k, long long def, uint64_t *out,
		   char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, k);
	double d;

	if (!v || cJSON_IsNull(v)) {
		if (def < 0) {
			engy_seterr(err, errlen, "config.json: no %s", k);
			return -EINVAL;
		}
		*out = (uint64_t)def;
		return 0;
	}
	d = cJSON_IsNumber(v) ? v->valuedouble : -1;
	if (d < 0 || d > 9007199254740992.0 || d != (double)(uint64_t)d) {
		engy_seterr(err, errlen,
			    "config.json: %s is not a non-negative integer", k);
		return -EINVAL;
	}
	*out = (uint64_t)d;
	return 0;
}

static int read_config(struct engy_ms *m, const char *dir, char *err,
		       size_t errlen)
{
	struct kv kv[20];
	char path[4096], *p;
	const cJSON *mt, *q, *qm, *t;
	uint64_t hidden, layers, heads, kvh, hd, dff, vocab, ne, topk, moe,
		shared, g;
	const char *quant = "none";
	struct engy_mh *h;
	size_t n = 0, i, len, cap;
	uint8_t *buf;
	cJSON *c;
	int rc;

	snprintf(path, sizeof(path), "%s/config.json", dir);
	rc = engy_read_file(path, CFG_MAX, &buf, &len);
	if (rc) {
		engy_seterr(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	c = cJSON_ParseWithLength((const char *)buf, len);
	free(buf);
	if (!cJSON_IsObject(c)) {
		cJSON_Delete(c);
		engy_seterr(err, errlen, "%s: not a JSON object", path);
		return -EINVAL;
	}
	rc = -EINVAL;
	mt = cJSON_GetObjectItemCaseSensitive(c, "model_type");
	if (!cJSON_IsString(mt) || !mt->valuestring[0] ||
	    strlen(mt->valuestring) > 64 ||
	    strspn(mt->valuestring,
		   "abcdefghijklmnopqrstuvwxyz"
		   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
		    strlen(mt->valuestring)) {
		engy_seterr(err, errlen,
			    "%s: model_type must be 1 to 64 of [A-Za-z0-9_.-]",
			    path);
		goto out;
	}
	if (cfg_int(c, "hidden_size", -1, &hidden, err, errlen) ||
	    cfg_int(c, "num_hidden_layers", -1, &layers, err, errlen) ||
	    cfg_int(c, "num_attention_heads", -1, &heads, err, errlen) ||
	    cfg_int(c, "num_key_value_heads", (long long)heads, &kvh, err,
		    errlen) ||
	    cfg_int(c, "intermediate_size", -1, &dff, err, errlen) ||
	    cfg_int(c, "vocab_size", -1, &vocab, err, errlen) ||
	    cfg_int(c, "num_experts", 0, &ne, err, errlen) ||
	    cfg_int(c, "num_experts_per_tok", 0, &topk, err, errlen) ||
	    cfg_int(c, "moe_intermediate_size", 0, &moe, err, errlen) ||
	    cfg_int(c, "shared_expert_intermediate_size", 0, &shared, err,
		    errlen))
		goto out;
	if (!heads || layers > ENGY_MS_MAX_LAYERS || ne > ENGY_MS_MAX_EXPERTS) {
		engy_seterr(
			err, errlen,
			"%s: num_attention_heads is 0, or over %u layers or %u experts",
			path, ENGY_MS_MAX_LAYERS, ENGY_MS_MAX_EXPERTS);
		goto out;
	}
	if (cfg_int(c, "head_dim", (long long)(hidden / heads), &hd, err,
		    errlen))
		goto out;
	t = cJSON_GetObjectItemCaseSensitive(c, "tie_word_embeddings");
	if (t && !cJSON_IsBool(t) && !cJSON_IsNull(t)) {
		engy_seterr(err, errlen,
			    "%s: tie_word_embeddings is not a boolean", path);
		goto out;
	}
#define KV(key, fmt, val)                                                      \
	do {                                                                   \
		kv[n].k = key;                                                 \
		snprintf(kv[n].v, sizeof(kv[n].v), fmt, val);                  \
		n++;                                                           \
	} while (0)
	KV("arch", "\"%s\"", mt->valuestring);
	KV("n_layers", "%llu", (unsigned long long)layers);
	KV("hidden", "%llu", (unsigned long long)hidden);
	KV("n_heads", "%llu", (unsigned long long)heads);
	KV("n_kv_heads", "%llu", (unsigned long long)kvh);
	KV("head_dim", "%llu", (unsigned long long)hd);
	KV("d_ff", "%llu", (unsigned long long)dff);
	KV("vocab", "%llu", (unsigned long long)vocab);
	KV("tie_word_embeddings", "%s", cJSON_IsTrue(t) ? "true" : "false");
	if (ne) {
		KV("n_experts", "%llu", (unsigned long long)ne);
		KV("top_k", "%llu", (unsigned long long)topk);
		KV("moe_d_ff", "%llu", (unsigned long long)moe);
		KV("shared_d_ff", "%llu", (unsigned long long)shared);
	}
	q = cJSON_GetObjectItemCaseSensitive(c, "quantization_config");
	if (q && !cJSON_IsNull(q)) {
		qm = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
		if (!cJSON_IsString(qm)) {
			engy_seterr(
				err, errlen,
				"%s: quantization_config has no quant_method",
				path);
			goto out;
		}
		if (strcmp(qm->valuestring, "fp8") == 0) {
			const cJSON *b = cJSON_GetObjectItemCaseSensitive(
				q, "weight_block_size");

			g = 128;
			if (b) {
				const cJSON *b0 = cJSON_GetArrayItem(b, 0),
					    *b1 = cJSON_GetArrayItem(b, 1);

				if (!cJSON_IsArray(b) ||
				    cJSON_GetArraySize(b) != 2 ||
				    !cJSON_IsNumber(b0) ||
				    !cJSON_IsNumber(b1) ||
				    b0->valuedouble != b1->valuedouble ||
				    b0->valuedouble < 1 ||
				    b0->valuedouble > 65536 ||
				    b0->valuedouble !=
					    (double)(uint64_t)b0->valuedouble) {
					engy_seterr(
						err, errlen,
						"%s: weight_block_size must be [B, B], 1 <= B <= 65536",
						path);
					goto out;
				}
				g = (uint64_t)b0->valuedouble;
			}
			quant = "fp8";
			KV("fp8_block", "%llu", (unsigned long long)g);
		} else if (strcmp(qm->valuestring, "engy_int4") == 0) {
			if (cfg_int(q, "group_size", -1, &g, err, errlen))
				goto out;
			quant = "int4";
			KV("int4_group", "%llu", (unsigned long long)g);
		} else {
			engy_seterr(
				err, errlen,
				"%s: quant_method '%.40s': fp8 or engy_int4",
				path, qm->valuestring);
			goto out;
		}
	}
	KV("quant", "\"%s\"", quant);
#undef KV
	qsort(kv, n, sizeof(kv[0]), kv_cmp);
	cap = 2;
	for (i = 0; i < n; i++)
		cap += strlen(kv[i].k) + strlen(kv[i].v) + 4;
	m->config = p = malloc(cap);
	if (!p) {
		rc = -ENOMEM;
		goto out;
	}
	*p++ = '{';
	for (i = 0; i < n; i++)
		p += sprintf(p, "%s\"%s\":%s", i ? "," : "", kv[i].k, kv[i].v);
	strcpy(p, "}");
	m->n_layers = (uint32_t)layers;
	m->n_experts = (uint32_t)ne;
	m->fp8_block = 128;
	for (i = 0; i < n; i++)
		if (strcmp(kv[i].k, "fp8_block") == 0)
			m->fp8_block = (uint32_t)strtoul(kv[i].v, NULL, 10);
	h = engy_mh_new();
	if (!h) {
		rc = -ENOMEM;
		goto out;
	}
	engy_mh_sha256(h, m->config, strlen(m->config), m->config_sha);
	engy_mh_free(h);
	rc = 0;
out:
	cJSON_Delete(c);
	return rc;
}

/* ---- the shards and the plan ---- */

static int open_shards(struct engy_ms *m, const char *dir, char *err,
		       size_t errlen)
{
	struct engy_st_dir d;
	int rc = engy_st_dir_open(dir, MAX_SHARDS, &d, err, errlen);

	if (!rc) {
		m->st = d.st;
		m->n_st = d.n;
	}
	return rc && rc != -ENOMEM ? -EINVAL : rc;
}

static int tcmp(const void *a, const void *b)
{
	return strcmp((*(const struct engy_st_tensor *const *)a)->name,
		      (*(const struct engy_st_tensor *const *)b)->name);
}

static bool ends(const char *s, const char *suf)
{
	size_t n = strlen(s), k = strlen(suf);

	return n > k && strcmp(s + n - k, suf) == 0;
}

/* The sibling @base + @suf in the sorted @all, or NULL. */
static const struct engy_st_tensor *sibling(const struct engy_st_tensor **all,
					    size_t n, const char *name,
					    size_t baselen, const char *suf)
{
	const struct engy_st_tensor key = { 0 }, *kp = &key, **hit;
	char buf[70000];

	if (baselen + strlen(suf) >= sizeof(buf))
		return NULL;
	memcpy(buf, name, baselen);
	strcpy(buf + baselen, suf);
	((struct engy_st_tensor *)&key)->name = buf;
	hit = bsearch(&kp, all, n, sizeof(*all), tcmp);
	return hit ? *hit : NULL;
}

/* "model.layers.<i>.<rest>": i (no leading zeros), *rest; else -1. */
static int layer_of(const char *name, const char **rest)
{
	const char *p = name + 13;
	long v = 0;

	if (strncmp(name, "model.layers.", 13) != 0 || *p < '0' || *p > '9' ||
	    (*p == '0' && p[1] != '.'))
		return -1;
	while (*p >= '0' && *p <= '9' && v <= ENGY_MS_MAX_LAYERS)
		v = v * 10 + (*p++ - '0');
	if (*p != '.' || v >= ENGY_MS_MAX_LAYERS)
		return -1;
	*rest = p + 1;
	return (int)v;
}

static void classify(struct mtensor *t)
{
	const char *r, *p;
	long e = 0;

	t->layer = layer_of(t->d.name, &r);
	t->cls = 0;
	t->expert = -1;
	if (t->layer < 0)
		return;
	if (strncmp(r, "mlp.gate.", 9) == 0) {
		t->cls = 1;
	} else if (strncmp(r, "mlp.shared_expert.", 18) == 0 ||
		   strncmp(r, "mlp.shared_expert_gate.", 23) == 0) {
		t->cls = 2;
	} else if (strncmp(r, "mlp.experts.", 12) == 0) {
		p = r + 12;
		if (*p < '0' || *p > '9' || (*p == '0' && p[1] != '.'))
			return;
		while (*p >= '0' && *p <= '9' && e <= ENGY_MS_MAX_EXPERTS)
			e = e * 10 + (*p++ - '0');
		if (*p != '.' || e >= ENGY_MS_MAX_EXPERTS)
			return;
		t->cls = 3;
		t->expert = (int)e;
	}
}

static int plan(struct engy_ms *m, char *err, size_t errlen)
{
	const struct engy_st_tensor **all, *s;
	size_t n = 0, i, k;
	bool *used;
	int rc = 0;

	for (i = 0; i < m->n_st; i++)
		n += engy_st_count(m->st[i]);
	if (n > ENGY_MS_MAX_TENSORS) {
		engy_seterr(err, errlen, "over %u tensors",
			    ENGY_MS_MAX_TENSORS);
		return -EINVAL;
	}
	all = calloc(n ? n : 1, sizeof(*all));
	used = calloc(n ? n : 1, sizeof(*used));
	m->mt = calloc(n ? n : 1, sizeof(*m->mt));
	if (!all || !used || !m->mt) {
		rc = -ENOMEM;
		goto out;
	}
	n = 0;
	for (i = 0; i < m->n_st; i++)
		for (k = 0; k < engy_st_count(m->st[i]); k++)
			all[n++] = engy_st_at(m->st[i], k);
	qsort(all, n, sizeof(*all), tcmp);
	for (i = 1; i < n; i++)
		if (strcmp(all[i - 1]->name, all[i]->name) == 0) {
			engy_seterr(err, errlen,
				    "tensor %.200s is in two shards",
				    all[i]->name);
			rc = -EINVAL;
			goto out;
		}
	/* Scale tensors that belong to a weight are bound into its rows. */
	for (i = 0; i < n; i++) {
		const char *nm = all[i]->name;

		s = NULL;
		if (all[i]->dtype == ENGY_ST_F8_E4M3 && all[i]->ndim == 2 &&
		    ends(nm, ".weight"))
			s = sibling(all, n, nm, strlen(nm) - 6,
				    "weight_scale_inv");
		else if (all[i]->dtype == ENGY_ST_U8 && all[i]->ndim == 2 &&
			 ends(nm, ".qweight"))
			s = sibling(all, n, nm, strlen(nm) - 7, "scales");
		if (s)
			used[(const struct engy_st_tensor **)bsearch(
				     &s, all, n, sizeof(*all), tcmp) -
			     all] = true;
	}
	for (i = 0; i < n; i++) {
		struct mtensor *t;
		const char *nm = all[i]->name;

		if (used[i])
			continue;
		t = &m->mt[m->n++];
		t->t = all[i];
		t->d.name = nm;
		t->d.dtype = all[i]->dtype;
		t->d.ndim = all[i]->ndim;
		memcpy(t->d.shape, all[i]->shape, sizeof(t->d.shape));
		s = NULL;
		if (all[i]->dtype == ENGY_ST_F8_E4M3 && all[i]->ndim == 2 &&
		    ends(nm, ".weight") &&
		    (s = sibling(all, n, nm, strlen(nm) - 6,
				 "weight_scale_inv"))) {
			t->d.quant = ENGY_MC_Q_FP8_BLOCK;
			t->d.qparam = m->fp8_block;
		} else if (all[i]->dtype == ENGY_ST_U8 && all[i]->ndim == 2 &&
			   ends(nm, ".qweight") &&
			   (s = sibling(all, n, nm, strlen(nm) - 7,
					"scales"))) {
			t->d.quant = ENGY_MC_Q_INT4;
			t->d.qparam =
				s->ndim == 2 && s->shape[1] &&
						2 * all[i]->shape[1] %
								s->shape[1] ==
							0 &&
						2 * all[i]->shape[1] /
								s->shape[1] <=
							UINT32_MAX
					? (uint32_t)(2 * all[i]->shape[1] /
						     s->shape[1])
					: 0;
		}
		if (s) {
			t->scale = s;
			t->d.scale_name = s->name;
			t->d.scale_dtype = s->dtype;
			if (s->ndim != 2) {
				engy_seterr(
					err, errlen,
					"%.200s: scale tensor %.200s is not 2-D",
					nm, s->name);
				rc = -EINVAL;
				goto out;
			}
			t->d.scale_shape[0] = s->shape[0];
			t->d.scale_shape[1] = s->shape[1];
		}
		rc = engy_mc_desc_check(&t->d, &t->n_rows, &t->row_bytes,
					&t->aux_bytes, err, errlen);
		if (rc)
			goto out;
		if (t->d.quant == ENGY_MC_Q_FP8_BLOCK && t->d.qparam == 0) {
			engy_seterr(err, errlen, "%.200s: no block", nm);
			rc = -EINVAL;
			goto out;
		}
		classify(t);
		m->total += t->n_rows * (t->row_bytes + t->aux_bytes);
	}
out:
	free(all);
	free(used);
	return rc;
}

int engy_ms_open(const char *dir, struct engy_ms **out, char *err,
		 size_t errlen)
{
	struct engy_ms *m = calloc(1, sizeof(*m));
	int rc;

	if (!m)
		return -ENOMEM;
	rc = read_config(m, dir, err, errlen);
	if (!rc)
		rc = open_shards(m, dir, err, errlen);
	if (!rc)
		rc = plan(m, err, errlen);
	if (rc) {
		if (rc == -ENOMEM)
			engy_seterr(err, errlen, "%s: out of memory", dir);
		engy_ms_close(m);
		return rc;
	}
	*out = m;
	return 0;
}

void engy_ms_close(struct engy_ms *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n_st; i++)
		engy_st_close(m->st[i]);
	free(m->st);
	free(m->config);
	free(m->mt);
	free(m->layer_roots);
	cJSON_Delete(m->experts);
	free(m);
}

uint64_t engy_ms_total_bytes(const struct engy_ms *m)
{
	return m->total;
}

const uint8_t *engy_ms_model_root(const struct engy_ms *m)
{
	return m->model_root;
}

/* ---- the build ---- */

/* Row @i's leaf and the scale bytes bound into it. */
static void row_leaf(struct engy_mh *h, const struct mtensor *t, uint64_t i,
		     uint8_t out[32])
{
	const uint8_t *aux = NULL;

	if (t->d.quant == ENGY_MC_Q_FP8_BLOCK)
		aux = t->scale->data + (i / t->d.qparam) * t->aux_bytes;
	else if (t->d.quant == ENGY_MC_Q_INT4)
		aux = t->scale->data + i * t->aux_bytes;
	engy_mc_leaf(h, t->tid, i, t->t->data + i * t->row_bytes, t->row_bytes,
		     aux, t->aux_bytes, out);
}

struct job {
	struct engy_ms *m;
	size_t *order;
	size_t next;
	uint64_t done;
	unsigned running;
	int rc;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

static int tensor_leaves(struct engy_mh *h, const struct mtensor *t,
			 uint8_t **leaves, uint64_t *done)
{
	uint64_t i, n = t->n_rows;

	*leaves = malloc(32 * (n ? n : 1));
	if (!*leaves)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		row_leaf(h, t, i, *leaves + 32 * i);
		if (done)
			__atomic_fetch_add(done, t->row_bytes + t->aux_bytes,
					   __ATOMIC_RELAXED);
	}
	return 0;
}

static void *worker(void *arg)
{
	struct job *j = arg;
	struct engy_mh *h = engy_mh_new();
	int rc = h ? 0 : -ENOMEM;
	uint8_t *leaves, rr[32];
	struct mtensor *t;
	size_t k;

	while (!rc) {
		k = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		if (k >= j->m->n)
			break;
		t = &j->m->mt[j->order[k]];
		engy_mc_tid(h, &t->d, t->n_rows, t->row_bytes, t->tid);
		rc = tensor_leaves(h, t, &leaves, &j->done);
		if (rc)
			break;
		engy_mc_tree(h, leaves, t->n_rows, leaves, 0, NULL, rr);
		free(leaves);
		engy_mc_tensor_root(h, t->tid, t->n_rows, rr, t->root);
	}
	engy_mh_free(h);
	pthread_mutex_lock(&j->mu);
	if (rc && !j->rc)
		j->rc = rc;
	j->running--;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

static int size_desc(const void *a, const void *b, void *arg)
{
	const struct engy_ms *m = arg;
	const struct mtensor *x = &m->mt[*(const size_t *)a],
			     *y = &m->mt[*(const size_t *)b];
	uint64_t sx = x->n_rows * (x->row_bytes + x->aux_bytes),
		 sy = y->n_rows * (y->row_bytes + y->aux_bytes);

	if (sx != sy)
		return sx > sy ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* The group root of the committed tensors @idx[0..n). */
static int group_root(struct engy_mh *h, const struct engy_ms *m,
		      const size_t *idx, size_t n, uint8_t out[32])
{
	uint8_t *tl = malloc(32 * (n ? n : 1)), tree[32];
	size_t i;

	if (!tl)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		engy_mc_tleaf(h, m->mt[idx[i]].root, tl + 32 * i);
	engy_mc_tree(h, tl, n, tl, 0, NULL, tree);
	free(tl);
	engy_mc_group(h, (uint32_t)n, tree, out);
	return 0;
}

static int add_hex(cJSON *o, const char *k, const uint8_t b[32])
{
	char hex[65];

	engy_mc_hex(b, 32, hex);
	return cJSON_AddStringToObject(o, k, hex) ? 0 : -ENOMEM;
}

static int groups(struct engy_ms *m, struct engy_mh *h)
{
	size_t *idx = malloc(sizeof(size_t) * (m->n ? m->n : 1)), n, i;
	uint8_t r[32];
	uint32_t L, e;
	char key[16], hex[65];
	int rc = -ENOMEM;

	m->layer_roots = calloc(m->n_layers ? m->n_layers : 1, 32);
	m->experts = cJSON_CreateObject();
	if (!idx || !m->layer_roots || !m->experts)
		goto out;
	/* lm_root: lm_head's tensors, or the embedding when tied. */
	for (n = i = 0; i < m->n; i++)
		if (strncmp(m->mt[i].d.name, "lm_head.", 8) == 0)
			idx[n++] = i;
	if (!n)
		for (i = 0; i < m->n; i++)
			if (strncmp(m->mt[i].d.name, "model.embed_tokens.",
				    19) == 0)
				idx[n++] = i;
	if (group_root(h, m, idx, n, m->lm_root))
		goto out;
	for (L = 0; L < m->n_layers; L++) {
		bool moe = false;
		cJSON *lo, *ex;

		for (n = i = 0; i < m->n; i++)
			if (m->mt[i].layer == (int)L) {
				idx[n++] = i;
				moe |= m->mt[i].cls == 3;
			}
		if (group_root(h, m, idx, n, m->layer_roots + 32 * L))
			goto out;
		if (!moe)
			continue;
		snprintf(key, sizeof(key), "%u", L);
		lo = cJSON_AddObjectToObject(m->experts, key);
		if (!lo)
			goto out;
		for (n = i = 0; i < m->n; i++)
			if (m->mt[i].layer == (int)L && m->mt[i].cls == 1)
				idx[n++] = i;
		if (n &&
		    (group_root(h, m, idx, n, r) || add_hex(lo, "router", r)))
			goto out;
		for (n = i = 0; i < m->n; i++)
			if (m->mt[i].layer == (int)L && m->mt[i].cls == 2)
				idx[n++] = i;
		if (n &&
		    (group_root(h, m, idx, n, r) || add_hex(lo, "shared", r)))
			goto out;
		ex = cJSON_AddArrayToObject(lo, "experts");
		if (!ex)
			goto out;
		for (e = 0; e < m->n_experts; e++) {
			for (n = i = 0; i < m->n; i++)
				if (m->mt[i].layer == (int)L &&
				    m->mt[i].cls == 3 &&
				    m->mt[i].expert == (int)e)
					idx[n++] = i;
			if (group_root(h, m, idx, n, r))
				goto out;
			engy_mc_hex(r, 32, hex);
			if (!cJSON_AddItemToArray(ex, cJSON_CreateString(hex)))
				goto out;
		}
	}
	for (i = 0; i < m->n; i++)
		idx[i] = i;
	{
		uint8_t *tl = malloc(32 * (m->n ? m->n : 1)), tree[32];

		if (!tl)
			goto out;
		for (i = 0; i < m->n; i++)
			engy_mc_tleaf(h, m->mt[i].root, tl + 32 * i);
		engy_mc_tree(h, tl, m->n, tl, 0, NULL, tree);
		free(tl);
		engy_mc_model(h, m->config_sha, (uint32_t)m->n, tree,
			      m->model_root);
	}
	rc = 0;
out:
	free(idx);
	return rc;
}

int engy_ms_build(struct engy_ms *m, unsigned threads,
		  engy_ms_progress_fn progress, void *arg, unsigned progress_ms,
		  char *err, size_t errlen)
{
	struct job j = { .m = m,
			 .mu = PTHREAD_MUTEX_INITIALIZER,
			 .cv = PTHREAD_COND_INITIALIZER };
	pthread_t *tid;
	struct engy_mh *h;
	unsigned i, started = 0;
	int rc;

	if (!threads) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);

		threads = c > 0 ? (unsigned)c : 1;
	}
	if (threads > 256)
		threads = 256;
	if (threads > m->n && m->n)
		threads = (unsigned)m->n;
	j.order = malloc(sizeof(size_t) * (m->n ? m->n : 1));
	tid = calloc(threads, sizeof(*tid));
	if (!j.order || !tid) {
		free(j.order);
		free(tid);
		engy_seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < m->n; i++)
		j.order[i] = i;
	qsort_r(j.order, m->n, sizeof(size_t), size_desc, m);
	pthread_mutex_lock(&j.mu);
	for (i = 0; i < threads; i++) {
		if (pthread_create(&tid[i], NULL, worker, &j))
			break;
		started++;
		j.running++;
	}
	if (!started)
		j.rc = -EAGAIN;
	while (j.running) {
		if (progress) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)(progress_ms % 1000) * 1000000L;
			ts.tv_sec +=
				progress_ms / 1000 + ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			pthread_cond_timedwait(&j.cv, &j.mu, &ts);
			pthread_mutex_unlock(&j.mu);
			progress(arg,
				 __atomic_load_n(&j.done, __ATOMIC_RELAXED),
				 m->total);
			pthread_mutex_lock(&j.mu);
		} else {
			pthread_cond_wait(&j.cv, &j.mu);
		}
	}
	pthread_mutex_unlock(&j.mu);
	for (i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	free(tid);
	free(j.order);
	rc = j.rc;
	if (!rc) {
		h = engy_mh_new();
		rc = h ? groups(m, h) : -ENOMEM;
		engy_mh_free(h);
	}
	if (rc) {
		engy_seterr(err, errlen, "building the roots: %s",
			    strerror(-rc));
		return rc;
	}
	m->built = true;
	return 0;
}

/* ---- the spec file ---- */

static cJSON *spec_obj(const struct engy_ms *m)
{
	cJSON *o = cJSON_CreateObject(), *a, *tr;
	char hex[65];
	size_t i;

	if (!o)
		return NULL;
	if (!cJSON_AddStringToObject(o, "hashing", ENGY_MC_HASHING) ||
	    !cJSON_AddItemToObject(o, "config", cJSON_Parse(m->config)) ||
	    add_hex(o, "model_root", m->model_root) ||
	    add_hex(o, "lm_root", m->lm_root) ||
	    !(a = cJSON_AddArrayToObject(o, "layer_roots")))
		goto fail;
	for (i = 0; i < m->n_layers; i++) {
		engy_mc_hex(m->layer_roots + 32 * i, 32, hex);
		if (!cJSON_AddItemToArray(a, cJSON_CreateString(hex)))
			goto fail;
	}
	if (!cJSON_AddItemReferenceToObject(o, "expert_roots_by_layer",
					    m->experts) ||
	    !(tr = cJSON_AddObjectToObject(o, "tensor_roots")))
		goto fail;
	for (i = 0; i < m->n; i++)
		if (add_hex(tr, m->mt[i].d.name, m->mt[i].root))
			goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

char *engy_ms_spec_json(const struct engy_ms *m)
{
	cJSON *o;
	char *s, *r;
	size_t n;

	if (!m->built || !(o = spec_obj(m)))
		return NULL;
	s = cJSON_Print(o);
	cJSON_Delete(o);
	if (!s)
		return NULL;
	n = strlen(s);
	r = realloc(s, n + 2);
	if (!r) {
		free(s);
		return NULL;
	}
	memcpy(r + n, "\n", 2);
	return r;
}

/* Names are shown to an operator: no control characters. */
static bool plain(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static bool is_hex64(const cJSON *v)
{
	uint8_t b[32];
	const char *s;

	if (!cJSON_IsString(v))
		return false;
	for (s = v->valuestring; *s; s++)
		if (*s >= 'A' && *s <= 'F')
			return false;
	return engy_mc_unhex(v->valuestring, b, 32) == 0;
}

static bool exact_u53(const cJSON *v, uint64_t max)
{
	return cJSON_IsNumber(v) && v->valuedouble >= 0 &&
	       v->valuedouble <= 9007199254740992.0 &&
	       v->valuedouble <= (double)max &&
	       v->valuedouble == (double)(uint64_t)v->valuedouble;
}

/* The config object's canonical text: sorted keys, no white space. */
static char *config_text(const cJSON *c, char *err, size_t errlen)
{
	struct kv kv[64];
	const cJSON *e;
	size_t n = 0, i, cap = 3;
	char *s, *p;

	if (!cJSON_IsObject(c)) {
		engy_seterr(err, errlen, "config is not an object");
		return NULL;
	}
	cJSON_ArrayForEach(e, c)
	{
		if (n == 64 || !e->string || !e->string[0] ||
		    strlen(e->string) > 40 ||
		    strspn(e->string,
			   "abcdefghijklmnopqrstuvwxyz0123456789_") !=
			    strlen(e->string)) {
			engy_seterr(
				err, errlen,
				"config: over 64 keys or a key not of [a-z0-9_]");
			return NULL;
		}
		kv[n].k = e->string;
		if (cJSON_IsBool(e)) {
			strcpy(kv[n].v, cJSON_IsTrue(e) ? "true" : "false");
		} else if (exact_u53(e, UINT64_MAX)) {
			snprintf(kv[n].v, sizeof(kv[n].v), "%llu",
				 (unsigned long long)e->valuedouble);
		} else if (cJSON_IsString(e) && strlen(e->valuestring) <= 64 &&
			   strspn(e->valuestring,
				  "abcdefghijklmnopqrstuvwxyz"
				  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
				   strlen(e->valuestring)) {
			snprintf(kv[n].v, sizeof(kv[n].v), "\"%s\"",
				 e->valuestring);
		} else {
			engy_seterr(
				err, errlen,
				"config: %.40s is not an integer, a boolean or a plain string",
				e->string);
			return NULL;
		}
		n++;
	}
	qsort(kv, n, sizeof(kv[0]), kv_cmp);
	for (i = 0; i < n; i++) {
		if (i && strcmp(kv[i - 1].k, kv[i].k) == 0) {
			engy_seterr(err, errlen, "config: key %.40s twice",
				    kv[i].k);
			return NULL;
		}
		cap += strlen(kv[i].k) + strlen(kv[i].v) + 4;
	}
	s = p = malloc(cap);
	if (!s) {
		engy_seterr(err, errlen, "out of memory");
		return NULL;
	}
	*p++ = '{';
	for (i = 0; i < n; i++)
		p += sprintf(p, "%s\"%s\":%s", i ? "," : "", kv[i].k, kv[i].v);
	strcpy(p, "}");
	return s;
}

static int hex_array(const cJSON *a, size_t max, const char *what, char *err,
		     size_t errlen)
{
	const cJSON *e;

	if (!cJSON_IsArray(a) || (size_t)cJSON_GetArraySize(a) > max) {
		engy_seterr(err, errlen,
			    "%s: not an array of at most %zu roots", what, max);
		return -EINVAL;
	}
	cJSON_ArrayForEach(e, a) if (!is_hex64(e))
	{
		engy_seterr(err, errlen,
			    "%s: an entry is not 64 lowercase hex digits",
			    what);
		return -EINVAL;
	}
	return 0;
}

/* Validate the parsed spec object. */
static int spec_valid(const cJSON *o, char *err, size_t errlen)
{
	const cJSON *v, *e, *f, *prev = NULL;
	size_t nl, n = 0;
	char *c;

	if (!cJSON_IsObject(o)) {
		engy_seterr(err, errlen, "not a JSON object");
		return -EINVAL;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "hashing");
	if (!cJSON_IsString(v) ||
	    strcmp(v->valuestring, ENGY_MC_HASHING) != 0) {
		engy_seterr(err, errlen, "hashing is not \"%s\"",
			    ENGY_MC_HASHING);
		return -EINVAL;
	}
	c = config_text(cJSON_GetObjectItemCaseSensitive(o, "config"), err,
			errlen);
	if (!c)
		return -EINVAL;
	free(c);
	if (!is_hex64(cJSON_GetObjectItemCaseSensitive(o, "model_root")) ||
	    !is_hex64(cJSON_GetObjectItemCaseSensitive(o, "lm_root"))) {
		engy_seterr(
			err, errlen,
			"model_root or lm_root is not 64 lowercase hex digits");
		return -EINVAL;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "layer_roots");
	if (hex_array(v, ENGY_MS_MAX_LAYERS, "layer_roots", err, errlen))
		return -EINVAL;
	nl = (size_t)cJSON_GetArraySize(v);
	v = cJSON_GetObjectItemCaseSensitive(o, "expert_roots_by_layer");
	if (!cJSON_IsObject(v)) {
		engy_seterr(err, errlen,
			    "expert_roots_by_layer is not an object");
		return -EINVAL;
	}
	cJSON_ArrayForEach(e, v)
	{
		const char *r;
		char nm[64];

		snprintf(nm, sizeof(nm), "model.layers.%.20s.", e->string);
		if (layer_of(nm, &r) < 0 || (size_t)layer_of(nm, &r) >= nl ||
		    *r || !cJSON_IsObject(e)) {
			engy_seterr(
				err, errlen,
				"expert_roots_by_layer: '%.20s' is not a layer of layer_roots",
				e->string);
			return -EINVAL;
		}
		cJSON_ArrayForEach(f, e)
		{
			if (strcmp(f->string, "experts") == 0) {
				if (hex_array(f, ENGY_MS_MAX_EXPERTS, "experts",
					      err, errlen))
					return -EINVAL;
			} else if ((strcmp(f->string, "router") &&
				    strcmp(f->string, "shared")) ||
				   !is_hex64(f)) {
				engy_seterr(
					err, errlen,
					"expert_roots_by_layer.%.20s: '%.40s' is not router, shared or experts with roots",
					e->string, f->string);
				return -EINVAL;
			}
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "tensor_roots");
	if (!cJSON_IsObject(v)) {
		engy_seterr(err, errlen, "tensor_roots is not an object");
		return -EINVAL;
	}
	cJSON_ArrayForEach(e, v)
	{
		if (++n > ENGY_MS_MAX_TENSORS || !e->string[0] ||
		    !is_hex64(e) || !plain(e->string) ||
		    (prev && strcmp(prev->string, e->string) >= 0)) {
			engy_seterr(
				err, errlen,
				"tensor_roots: entry %zu's name is empty, has a control character or is not after the one before it, or its root is not 64 hex digits",
				n);
			return -EINVAL;
		}
		prev = e;
	}
	return 0;
}

static cJSON *spec_load(const char *buf, size_t len, char *err, size_t errlen)
{
	cJSON *o = cJSON_ParseWithLength(buf, len);

	if (!o) {
		engy_seterr(err, errlen, "not JSON");
		return NULL;
	}
	if (spec_valid(o, err, errlen)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int engy_ms_spec_parse(const char *buf, size_t len, uint8_t model_root[32],
		       char *err, size_t errlen)
{
	cJSON *o = spec_load(buf, len, err, errlen);

	if (!o)
		return -EINVAL;
	engy_mc_unhex(
		cJSON_GetObjectItemCaseSensitive(o, "model_root")->valuestring,
		model_root, 32);
	cJSON_Delete(o);
	return 0;
}

int engy_ms_spec_check(const struct engy_ms *m, const char *buf, size_t len,
		       char *err, size_t errlen)
{
	static const char *const keys[] = { "model_root", "lm_root",
					    "layer_roots",
					    "expert_roots_by_layer" };
	cJSON *o, *mine;
	const cJSON *e;
	char *c, hex[65];
	size_t i = 0, k;
	int rc = -EBADMSG;

	if (!m->built) {
		engy_seterr(err, errlen, "not built");
		return -EINVAL;
	}
	o = spec_load(buf, len, err, errlen);
	if (!o)
		return -EINVAL;
	mine = spec_obj(m);
	c = config_text(cJSON_GetObjectItemCaseSensitive(o, "config"), err,
			errlen);
	if (!mine || !c) {
		rc = -ENOMEM;
		goto out;
	}
	if (strcmp(c, m->config) != 0) {
		engy_seterr(
			err, errlen,
			"the config differs: the spec has %.300s, the checkpoint %.300s",
			c, m->config);
		goto out;
	}
	/* Both lists are sorted by name: the first difference is named. */
	e = cJSON_GetObjectItemCaseSensitive(o, "tensor_roots")->child;
	for (;;) {
		int d;

		if (!e && i == m->n)
			break;
		d = !e		? -1
		    : i == m->n ? 1
				: strcmp(m->mt[i].d.name, e->string);
		if (d < 0) {
			engy_seterr(
				err, errlen,
				"tensor %.200s is in the checkpoint, not in the spec",
				m->mt[i].d.name);
			goto out;
		}
		if (d > 0) {
			engy_seterr(
				err, errlen,
				"tensor %.200s is in the spec, not in the checkpoint",
				e->string);
			goto out;
		}
		engy_mc_hex(m->mt[i].root, 32, hex);
		if (strcmp(hex, e->valuestring) != 0) {
			engy_seterr(
				err, errlen,
				"tensor %.200s differs: its root is %s, the spec's %s",
				e->string, hex, e->valuestring);
			goto out;
		}
		i++;
		e = e->next;
	}
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		if (!cJSON_Compare(
			    cJSON_GetObjectItemCaseSensitive(o, keys[k]),
			    cJSON_GetObjectItemCaseSensitive(mine, keys[k]),
			    true)) {
			engy_seterr(err, errlen,
				    "%s differs from the checkpoint's",
				    keys[k]);
			goto out;
		}
	rc = 0;
out:
	if (rc == -ENOMEM)
		engy_seterr(err, errlen, "out of memory");
	free(c);
	cJSON_Delete(mine);
	cJSON_Delete(o);
	return rc;
}

/* ---- openings ---- */

static cJSON *hex_item(const uint8_t *b, size_t n)
{
	char *s = malloc(2 * n + 1);
	cJSON *v;

	if (!s)
		return NULL;
	engy_mc_hex(b, n, s);
	v = cJSON_CreateString(s);
	free(s);
	return v;
}

static cJSON *path_item(const uint8_t *p, unsigned depth)
{
	cJSON *a = cJSON_CreateArray();
	unsigned k;

	for (k = 0; a && k < depth; k++)
		if (!cJSON_AddItemToArray(a, hex_item(p + 32 * k, 32))) {
			cJSON_Delete(a);
			return NULL;
		}
	return a;
}

static cJSON *shape_item(const uint64_t *s, uint32_t n)
{
	cJSON *a = cJSON_CreateArray();
	uint32_t k;

	for (k = 0; a && k < n; k++)
		if (!cJSON_AddItemToArray(a,
					  cJSON_CreateNumber((double)s[k]))) {
			cJSON_Delete(a);
			return NULL;
		}
	return a;
}

char *engy_ms_open_row(const struct engy_ms *m, const char *name, uint64_t row,
		       char *err, size_t errlen)
{
	uint8_t *leaves = NULL, *rpath = NULL, *tpath = NULL, rr[32], tree[32];
	const struct mtensor *t = NULL;
	struct engy_mh *h = NULL;
	cJSON *o = NULL, *td, *q, *sc;
	unsigned rd, td_depth;
	size_t i, k = 0;
	char *s = NULL;
	const uint8_t *aux = NULL;

	for (i = 0; i < m->n; i++)
		if (strcmp(m->mt[i].d.name, name) == 0) {
			t = &m->mt[i];
			k = i;
		}
	if (!m->built || !t) {
		engy_seterr(err, errlen, "no committed tensor %.200s%s", name,
			    m->built ? "" : " (not built)");
		return NULL;
	}
	if (row >= t->n_rows) {
		engy_seterr(err, errlen, "%.200s has %llu rows", name,
			    (unsigned long long)t->n_rows);
		return NULL;
	}
	rd = engy_mc_depth(t->n_rows);
	td_depth = engy_mc_depth(m->n);
	h = engy_mh_new();
	rpath = malloc(32 * (rd + 1));
	tpath = malloc(32 * (td_depth + 1));
	if (!h || !rpath || !tpath || tensor_leaves(h, t, &leaves, NULL))
		goto nomem;
	engy_mc_tree(h, leaves, t->n_rows, leaves, row, rpath, rr);
	free(leaves);
	leaves = malloc(32 * m->n);
	if (!leaves)
		goto nomem;
	for (i = 0; i < m->n; i++)
		engy_mc_tleaf(h, m->mt[i].root, leaves + 32 * i);
	engy_mc_tree(h, leaves, m->n, leaves, k, tpath, tree);
	if (t->d.quant == ENGY_MC_Q_FP8_BLOCK)
		aux = t->scale->data + (row / t->d.qparam) * t->aux_bytes;
	else if (t->d.quant == ENGY_MC_Q_INT4)
		aux = t->scale->data + row * t->aux_bytes;
	o = cJSON_CreateObject();
	if (!o || !cJSON_AddStringToObject(o, "hashing", ENGY_MC_HASHING) ||
	    !cJSON_AddItemToObject(o, "config_sha256",
				   hex_item(m->config_sha, 32)) ||
	    !cJSON_AddNumberToObject(o, "n_tensors", (double)m->n) ||
	    !cJSON_AddNumberToObject(o, "tensor_index", (double)k) ||
	    !cJSON_AddItemToObject(o, "tensor_path",
				   path_item(tpath, td_depth)) ||
	    !(td = cJSON_AddObjectToObject(o, "tensor")) ||
	    !cJSON_AddStringToObject(td, "name", t->d.name) ||
	    !cJSON_AddStringToObject(td, "dtype",
				     engy_st_dtype_name(t->d.dtype)) ||
	    !cJSON_AddItemToObject(td, "shape",
				   shape_item(t->d.shape, t->d.ndim)))
		goto nomem;
	if (t->d.quant == ENGY_MC_Q_NONE) {
		if (!cJSON_AddNullToObject(td, "quant"))
			goto nomem;
	} else if (!(q = cJSON_AddObjectToObject(td, "quant")) ||
		   !cJSON_AddStringToObject(q, "kind",
					    t->d.quant == ENGY_MC_Q_INT4
						    ? "int4"
						    : "fp8-block") ||
		   !cJSON_AddNumberToObject(
			   q, t->d.quant == ENGY_MC_Q_INT4 ? "group" : "block",
			   t->d.qparam) ||
		   !(sc = cJSON_AddObjectToObject(q, "scale")) ||
		   !cJSON_AddStringToObject(sc, "name", t->d.scale_name) ||
		   !cJSON_AddStringToObject(
			   sc, "dtype", engy_st_dtype_name(t->d.scale_dtype)) ||
		   !cJSON_AddItemToObject(sc, "shape",
					  shape_item(t->d.scale_shape, 2))) {
		goto nomem;
	}
	if (!cJSON_AddNumberToObject(o, "row", (double)row) ||
	    !cJSON_AddItemToObject(
		    o, "row_bytes",
		    hex_item(t->t->data + row * t->row_bytes, t->row_bytes)) ||
	    !cJSON_AddItemToObject(o, "aux_bytes",
				   hex_item(aux, t->aux_bytes)) ||
	    !cJSON_AddItemToObject(o, "row_path", path_item(rpath, rd)))
		goto nomem;
	s = cJSON_Print(o);
	if (!s)
		goto nomem;
	goto out;
nomem:
	engy_seterr(err, errlen, "out of memory");
out:
	cJSON_Delete(o);
	free(leaves);
	free(rpath);
	free(tpath);
	engy_mh_free(h);
	return s;
}

/* Decode @v (lowercase or uppercase hex of any even length) into *out. */
static int hex_blob(const cJSON *v, uint8_t **out, uint64_t *n)
{
	size_t len;

	if (!cJSON_IsString(v) || (len = strlen(v->valuestring)) % 2)
		return -EINVAL;
	*n = len / 2;
	*out = malloc(*n ? *n : 1);
	if (!*out)
		return -ENOMEM;
	return engy_mc_unhex(v->valuestring, *out, *n);
}

static int path_blob(const cJSON *v, uint8_t **out, unsigned *depth)
{
	const cJSON *e;
	unsigned k = 0;

	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > ENGY_MC_MAX_DEPTH)
		return -EINVAL;
	*depth = (unsigned)cJSON_GetArraySize(v);
	*out = malloc(32 * (*depth ? *depth : 1));
	if (!*out)
		return -ENOMEM;
	cJSON_ArrayForEach(e,
			   v) if (!cJSON_IsString(e) ||
				  engy_mc_unhex(e->valuestring, *out + 32 * k++,
						32)) return -EINVAL;
	return 0;
}

static int shape_of(const cJSON *v, uint64_t *s, uint32_t max, uint32_t *n)
{
	const cJSON *e;
	uint32_t k = 0;

	if (!cJSON_IsArray(v) || (uint32_t)cJSON_GetArraySize(v) > max)
		return -EINVAL;
	cJSON_ArrayForEach(e, v)
	{
		if (!exact_u53(e, UINT64_MAX))
			return -EINVAL;
		s[k++] = (uint64_t)e->valuedouble;
	}
	*n = k;
	return 0;
}

static char *dup_str(const cJSON *v)
{
	return cJSON_IsString(v) && plain(v->valuestring)
		       ? strdup(v->valuestring)
		       : NULL;
}

int engy_mc_opening_parse(const char *buf, size_t len,
			  struct engy_mc_opening **out, char *err,
			  size_t errlen)
{
	struct engy_mc_opening *o = calloc(1, sizeof(*o));
	const cJSON *v, *td, *q, *sc;
	cJSON *j = cJSON_ParseWithLength(buf, len);
	const char *what = "JSON";
	uint32_t n2;

#define GET(obj, k) cJSON_GetObjectItemCaseSensitive(obj, k)
	if (!o || !j)
		goto bad;
	what = "hashing";
	v = GET(j, "hashing");
	if (!cJSON_IsString(v) || strcmp(v->valuestring, ENGY_MC_HASHING) != 0)
		goto bad;
	what = "config_sha256";
	v = GET(j, "config_sha256");
	if (!cJSON_IsString(v) ||
	    engy_mc_unhex(v->valuestring, o->config_sha, 32))
		goto bad;
	what = "n_tensors / tensor_index";
	v = GET(j, "n_tensors");
	if (!exact_u53(v, UINT32_MAX))
		goto bad;
	o->n_tensors = (uint32_t)v->valuedouble;
	v = GET(j, "tensor_index");
	if (!exact_u53(v, UINT32_MAX))
		goto bad;
	o->tensor_index = (uint32_t)v->valuedouble;
	what = "tensor_path";
	if (path_blob(GET(j, "tensor_path"), &o->tensor_path, &o->tensor_depth))
		goto bad;
	what = "tensor";
	td = GET(j, "tensor");
	if (!cJSON_IsObject(td) || !(o->name_buf = dup_str(GET(td, "name"))) ||
	    !cJSON_IsString(GET(td, "dtype")) ||
	    (o->d.dtype = engy_st_dtype_parse(GET(td, "dtype")->valuestring)) <
		    0 ||
	    shape_of(GET(td, "shape"), o->d.shape, ENGY_ST_MAX_DIMS,
		     &o->d.ndim))
		goto bad;
	o->d.name = o->name_buf;
	q = GET(td, "quant");
	what = "tensor.quant";
	if (!cJSON_IsNull(q)) {
		const cJSON *kind = GET(q, "kind"), *p;

		if (!cJSON_IsObject(q) || !cJSON_IsString(kind))
			goto bad;
		if (strcmp(kind->valuestring, "fp8-block") == 0) {
			o->d.quant = ENGY_MC_Q_FP8_BLOCK;
			p = GET(q, "block");
		} else if (strcmp(kind->valuestring, "int4") == 0) {
			o->d.quant = ENGY_MC_Q_INT4;
			p = GET(q, "group");
		} else {
			goto bad;
		}
		sc = GET(q, "scale");
		if (!exact_u53(p, UINT32_MAX) || !cJSON_IsObject(sc) ||
		    !(o->scale_name_buf = dup_str(GET(sc, "name"))) ||
		    !cJSON_IsString(GET(sc, "dtype")) ||
		    (o->d.scale_dtype = engy_st_dtype_parse(
			     GET(sc, "dtype")->valuestring)) < 0 ||
		    shape_of(GET(sc, "shape"), o->d.scale_shape, 2, &n2) ||
		    n2 != 2)
			goto bad;
		o->d.qparam = (uint32_t)p->valuedouble;
		o->d.scale_name = o->scale_name_buf;
	}
	what = "row";
	v = GET(j, "row");
	if (!exact_u53(v, UINT64_MAX))
		goto bad;
	o->row = (uint64_t)v->valuedouble;
	what = "row_bytes / aux_bytes";
	if (hex_blob(GET(j, "row_bytes"), &o->row_bytes, &o->row_len) ||
	    hex_blob(GET(j, "aux_bytes"), &o->aux_bytes, &o->aux_len))
		goto bad;
	what = "row_path";
	if (path_blob(GET(j, "row_path"), &o->row_path, &o->row_depth))
		goto bad;
#undef GET
	cJSON_Delete(j);
	*out = o;
	return 0;
bad:
	engy_seterr(err, errlen, "opening: %s is missing or malformed", what);
	cJSON_Delete(j);
	engy_mc_opening_free(o);
	return -EINVAL;
}

void engy_mc_opening_free(struct engy_mc_opening *o)
{
	if (!o)
		return;
	free(o->name_buf);
	free(o->scale_name_buf);
	free(o->tensor_path);
	free(o->row_bytes);
	free(o->aux_bytes);
	free(o->row_path);
	free(o);
}
