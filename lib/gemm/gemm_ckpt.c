/* SPDX-License-Identifier: MIT */
/* The verifier's weights from a checkpoint (gemm_ckpt.h). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "errbuf.h"
#include "fsutil.h"
#include "gemm.h"
#include "gemm_ckpt.h"
#include "gemm_int.h"
#include "grow.h"
#include "safetensors.h"

#define MAX_SHARDS 256
#define CFG_MAX	   (1u << 20)

struct ent {
	uint64_t key;
	double *w, *colsq, *rerr; /* w NULL when wf holds W */
	float *wf;
	size_t out, in, bytes;
	unsigned refs;
	uint64_t used;
};

struct engy_ga_ckpt {
	struct engy_st **st;
	size_t n_st;
	uint32_t n_layers, top_k, fp8_block;
	bool tied;
	size_t cap_bytes, bytes, loads;
	uint64_t tick;
	struct ent *e;
	size_t n_e, cap_e;
	pthread_mutex_t mu;
};

struct engy_ga_ckpt_use {
	struct engy_ga_ckpt *c;
	uint64_t *keys; /* held: by key, as e[] may move */
	size_t n, cap;
};

static void ent_free(struct ent *e)
{
	free(e->w);
	free(e->wf);
	free(e->colsq);
}

static int open_shards(struct engy_ga_ckpt *c, const char *dir, char *err,
		       size_t errlen)
{
	struct engy_st_dir d;
	int rc = engy_st_dir_open(dir, MAX_SHARDS, &d, err, errlen);

	if (!rc) {
		c->st = d.st;
		c->n_st = d.n;
	}
	return rc && rc != -ENOMEM ? -EINVAL : rc;
}

static uint32_t cfg_u32(const cJSON *o, const char *k, uint32_t def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e6 ||
	    v->valuedouble != floor(v->valuedouble))
		return def;
	return (uint32_t)v->valuedouble;
}

static int read_config(struct engy_ga_ckpt *c, const char *dir, char *err,
		       size_t errlen)
{
	const cJSON *q, *b;
	char path[4096];
	uint8_t *buf;
	size_t len;
	cJSON *j;
	int rc;

	snprintf(path, sizeof(path), "%s/config.json", dir);
	rc = engy_read_file(path, CFG_MAX, &buf, &len);
	if (rc)
		return engy_seterr(err, errlen, "%s: %s", path, strerror(-rc)),
		       rc;
	j = cJSON_ParseWithLength((const char *)buf, len);
	free(buf);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return engy_seterr(err, errlen, "%s: not a JSON object", path),
		       -EINVAL;
	}
	c->n_layers = cfg_u32(j, "num_hidden_layers", 0);
	c->top_k = cfg_u32(j, "num_experts", 0)
			   ? cfg_u32(j, "num_experts_per_tok", 0)
			   : 0;
	c->tied = cJSON_IsTrue(
		cJSON_GetObjectItemCaseSensitive(j, "tie_word_embeddings"));
	c->fp8_block = 128;
	q = cJSON_GetObjectItemCaseSensitive(j, "quantization_config");
	b = cJSON_GetObjectItemCaseSensitive(q, "weight_block_size");
	if (cJSON_IsArray(b) && cJSON_IsNumber(cJSON_GetArrayItem(b, 0)) &&
	    cJSON_GetArrayItem(b, 0)->valuedouble >= 1 &&
	    cJSON_GetArrayItem(b, 0)->valuedouble <= 65536)
		c->fp8_block = (uint32_t)cJSON_GetArrayItem(b, 0)->valuedouble;
	cJSON_Delete(j);
	if (!c->n_layers || c->n_layers >= ENGY_GA_LM_LAYER)
		return engy_seterr(err, errlen, "%s: no num_hidden_layers",
				   path),
		       -EINVAL;
	return 0;
}

int engy_ga_ckpt_open(const char *dir, size_t cache_bytes,
		      struct engy_ga_ckpt **out, char *err, size_t errlen)
{
	struct engy_ga_ckpt *c = calloc(1, sizeof(*c));
	int rc;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	c->cap_bytes = cache_bytes;
	rc = read_config(c, dir, err, errlen);
	if (!rc)
		rc = open_shards(c, dir, err, errlen);
	if (rc) {
		engy_ga_ckpt_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

void engy_ga_ckpt_close(struct engy_ga_ckpt *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n_st; i++)
		engy_st_close(c->st[i]);
	for (i = 0; i < c->n_e; i++)
		ent_free(&c->e[i]);
	free(c->e);
	free(c->st);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static const struct engy_st_tensor *find(struct engy_ga_ckpt *c,
					 const char *base, const char *suffix)
{
	char name[512];
	size_t i;

	snprintf(name, sizeof(name), "%s%s", base, suffix);
	for (i = 0; i < c->n_st; i++) {
		const struct engy_st_tensor *t = engy_st_find(c->st[i], name);

		if (t)
			return t;
	}
	return NULL;
}

/* float8_e4m3fn, exactly: bias 7, no infinities, S.1111.111 NaN. */
static double e4m3(uint8_t b)
{
	int e = (b >> 3) & 15, m = b & 7;
	double v;

	if (e == 15 && m == 7)
		return NAN;
	v = e ? ldexp(8 + m, e - 10) : ldexp(m, -9);
	return b & 0x80 ? -v : v;
}

/* A tensor's elements widened to double (exactly). */
static int widen(const struct engy_st_tensor *t, double *out)
{
	float *f = malloc((t->numel ? t->numel : 1) * sizeof(float));
	uint64_t i;
	int rc;

	if (!f)
		return -ENOMEM;
	rc = engy_st_to_f32(t, f);
	for (i = 0; !rc && i < t->numel; i++)
		out[i] = f[i];
	free(f);
	return rc;
}

static int load(struct engy_ga_ckpt *c, uint32_t layer, int mm, uint32_t expert,
		struct ent *e)
{
	const struct engy_st_tensor *t, *s = NULL;
	char base[256];
	double *w, *sc = NULL;
	uint64_t r, k, out, in;
	int rc = 0;

	if (engy_ga_mm_tensor(layer, mm, expert, c->tied, base, sizeof(base)))
		return -ENOENT;
	if (mm == ENGY_GA_MM_LM_HEAD && !c->tied && !find(c, base, ".weight"))
		snprintf(base, sizeof(base), "model.embed_tokens");
	if ((t = find(c, base, ".weight"))) {
		if (t->ndim != 2)
			return -EINVAL;
		out = t->shape[0];
		in = t->shape[1];
	} else if ((t = find(c, base, ".qweight"))) {
		s = find(c, base, ".scales");
		if (t->ndim != 2 || t->dtype != ENGY_ST_U8 || !s ||
		    s->ndim != 2 || s->shape[0] != t->shape[0] ||
		    !s->shape[1] || (2 * t->shape[1]) % s->shape[1])
			return -EINVAL;
		out = t->shape[0];
		in = 2 * t->shape[1];
	} else {
		return -ENOENT;
	}
	if (!out || !in || out > ((uint64_t)1 << 36) / in)
		return -EINVAL;
	w = malloc((size_t)(out * in) * sizeof(*w));
	if (!w)
		return -ENOMEM;
	if (t->dtype == ENGY_ST_F8_E4M3) {
		uint64_t B = c->fp8_block, sr, scn;

		s = find(c, base, ".weight_scale_inv");
		if (!s || s->ndim != 2 || s->shape[0] != (out + B - 1) / B ||
		    s->shape[1] != (in + B - 1) / B) {
			rc = -EINVAL;
			goto out;
		}
		sr = s->shape[0];
		scn = s->shape[1];
		sc = malloc(sr * scn * sizeof(*sc));
		if (!sc || (rc = widen(s, sc)))
			goto out;
		for (r = 0; r < out; r++)
			for (k = 0; k < in; k++)
				w[r * in + k] = e4m3(t->data[r * in + k]) *
						sc[(r / B) * scn + k / B];
	} else if (t->dtype == ENGY_ST_U8) {
		uint64_t G = in / s->shape[1];

		sc = malloc(out * s->shape[1] * sizeof(*sc));
		if (!sc || (rc = widen(s, sc)))
			goto out;
		for (r = 0; r < out; r++)
			for (k = 0; k < in; k++) {
				uint8_t b = t->data[r * (in / 2) + k / 2];
				int u = k % 2 ? b >> 4 : b & 15;

				w[r * in + k] = (double)(u - 8) *
						sc[r * s->shape[1] + k / G];
			}
	} else {
		rc = widen(t, w);
	}
	for (r = 0; !rc && r < out * in; r++)
		if (!isfinite(w[r]))
			rc = -EINVAL;
out:
	free(sc);
	if (rc) {
		free(w);
		return rc == -ENOTSUP ? -EINVAL : rc;
	}
	{
		struct engy_ga_matrix m = { .w = w, .out = out, .in = in };
		bool f32 = true;

		e->colsq = malloc(2 * in * sizeof(*e->colsq));
		if (!e->colsq) {
			free(w);
			return -ENOMEM;
		}
		e->rerr = e->colsq + in;
		engy_ga_cols(&m, e->colsq, e->rerr);
		/* Exactly float32 (BF16, F16, F32, INT4 with F16 scales):
		 * kept as such, half the bytes each check streams. */
		for (r = 0; f32 && r < out * in; r++)
			f32 = (double)(float)w[r] == w[r];
		if (f32 && (e->wf = malloc(out * in * sizeof(float)))) {
			for (r = 0; r < out * in; r++)
				e->wf[r] = (float)w[r];
			free(w);
			w = NULL;
		}
	}
	e->w = w;
	e->out = out;
	e->in = in;
	e->bytes =
		(size_t)(out * in) * (e->wf ? sizeof(float) : sizeof(double)) +
		2 * in * sizeof(double);
	return 0;
}

/* e[] is sorted by key: the entry of @key, or where it would go. */
static size_t place(const struct engy_ga_ckpt *c, uint64_t key)
{
	size_t lo = 0, hi = c->n_e;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->e[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct ent *lookup(struct engy_ga_ckpt *c, uint64_t key)
{
	size_t i = place(c, key);

	return i < c->n_e && c->e[i].key == key ? &c->e[i] : NULL;
}

static void evict(struct engy_ga_ckpt *c)
{
	while (c->bytes > c->cap_bytes) {
		size_t i, best = c->n_e;

		for (i = 0; i < c->n_e; i++)
			if (!c->e[i].refs &&
			    (best == c->n_e || c->e[i].used < c->e[best].used))
				best = i;
		if (best == c->n_e)
			return;
		c->bytes -= c->e[best].bytes;
		ent_free(&c->e[best]);
		memmove(&c->e[best], &c->e[best + 1],
			(c->n_e - best - 1) * sizeof(c->e[0]));
		c->n_e--;
	}
}

static uint64_t mkey(uint32_t layer, int mm, uint32_t expert)
{
	struct engy_ga_key k = { (uint16_t)layer, (uint8_t)mm, (uint16_t)expert,
				 0 };

	return engy_ga_key_pack(&k);
}

/* The matrix's pointers (heap blocks that never move while held). */
static int hold(struct engy_ga_ckpt_use *u, uint32_t layer, int mm,
		uint32_t expert, struct ent *out)
{
	struct engy_ga_ckpt *c = u->c;
	uint64_t key = mkey(layer, mm, expert);
	struct ent *e, fresh = { 0 };
	bool held = false;
	size_t i;
	int rc = 0;

	if (mm < 0 || mm >= ENGY_GA_MM_MAX)
		return -ENOENT;
	for (i = 0; i < u->n && !held; i++)
		held = u->keys[i] == key;
	if (!held && !ENGY_GROW_BY(u->keys, u->cap, u->n, 1))
		return -ENOMEM;
	pthread_mutex_lock(&c->mu);
	e = lookup(c, key);
	if (!e) {
		rc = load(c, layer, mm, expert, &fresh);
		if (!rc && !ENGY_GROW_BY(c->e, c->cap_e, c->n_e, 1)) {
			ent_free(&fresh);
			rc = -ENOMEM;
		}
		if (!rc) {
			fresh.key = key;
			size_t at = place(c, key);

			memmove(&c->e[at + 1], &c->e[at],
				(c->n_e - at) * sizeof(c->e[0]));
			c->e[at] = fresh;
			c->n_e++;
			e = &c->e[at];
			c->bytes += fresh.bytes;
			c->loads++;
		}
	}
	if (e) {
		if (!held) {
			e->refs++;
			u->keys[u->n++] = key;
		}
		e->used = ++c->tick;
		*out = *e;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static int get(void *arg, uint32_t layer, int mm, uint32_t expert,
	       struct engy_ga_matrix *m)
{
	struct ent e;
	int rc = hold(arg, layer, mm, expert, &e);

	if (rc)
		return rc == -ENOMEM ? rc : -ENOENT;
	m->w = e.w;
	m->wf = e.wf;
	m->out = e.out;
	m->in = e.in;
	m->colsq = e.colsq;
	m->rerr = e.rerr;
	return 0;
}

struct engy_ga_ckpt_use *engy_ga_ckpt_use(struct engy_ga_ckpt *c,
					  struct engy_ga_weights *w)
{
	struct engy_ga_ckpt_use *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->c = c;
	memset(w, 0, sizeof(*w));
	w->arg = u;
	w->get = get;
	w->tied = c->tied;
	w->n_layers = c->n_layers;
	w->top_k = c->top_k;
	return u;
}

void engy_ga_ckpt_done(struct engy_ga_ckpt_use *u)
{
	struct engy_ga_ckpt *c;
	size_t i;

	if (!u)
		return;
	c = u->c;
	pthread_mutex_lock(&c->mu);
	for (i = 0; i < u->n; i++) {
		struct ent *e = lookup(c, u->keys[i]);

		if (e && e->refs)
			e->refs--;
	}
	evict(c);
	pthread_mutex_unlock(&c->mu);
	free(u->keys);
	free(u);
}

size_t engy_ga_ckpt_cached(struct engy_ga_ckpt *c)
{
	size_t b;

	pthread_mutex_lock(&c->mu);
	b = c->bytes;
	pthread_mutex_unlock(&c->mu);
	return b;
}

size_t engy_ga_ckpt_loads(struct engy_ga_ckpt *c)
{
	size_t n;

	pthread_mutex_lock(&c->mu);
	n = c->loads;
	pthread_mutex_unlock(&c->mu);
	return n;
}

uint32_t engy_ga_ckpt_layers(const struct engy_ga_ckpt *c)
{
	return c->n_layers;
}
