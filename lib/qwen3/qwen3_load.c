/* SPDX-License-Identifier: MIT */
/*
 * Weights of a Qwen3 checkpoint into float32: one model.safetensors or the
 * shards of model.safetensors.index.json.  A Linear weight is found in one
 * of three forms, whatever the config says, so mixed checkpoints load
 * (Qwen's FP8 files keep embeddings, norms and the router in BF16):
 *   NAME.weight                             F32/BF16/F16
 *   NAME.weight (F8_E4M3) + NAME.weight_scale_inv   block FP8
 *   NAME.qweight (U8) + NAME.scales                 engy INT4
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fsutil.h"
#include "grow.h"
#include "qwen3_int.h"
#include "safetensors.h"

#define MAX_SHARDS 4096

struct loader {
	struct q3_model *m;
	struct engy_st **st;
	size_t n_st;
	char *err;
	size_t errlen;
};

static const struct engy_st_tensor *find(const struct loader *ld,
					 const char *name)
{
	const struct engy_st_tensor *t;
	size_t i;

	for (i = 0; i < ld->n_st; i++)
		if ((t = engy_st_find(ld->st[i], name)))
			return t;
	return NULL;
}

/*
 * The weights live in chunks of 2 MiB pages (madvise(MADV_HUGEPAGE), where
 * the kernel has transparent huge pages): decode streams every matrix once
 * a token, and with 4 KiB pages each 4 KiB of weights cost a TLB miss (a
 * two-level page walk in a virtual machine).  Measured on a 2-vCPU Zen 4
 * VM, the 50 MB small checkpoint, decode of 128 tokens, five interleaved
 * pairs: median 665 tok/s on 2 MiB pages, 610 on 4 KiB.  Under AddressSanitizer
 * every buffer is its own allocation, so that an overrun stays visible.
 */
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_CHUNK 0
#else
#define ARENA_CHUNK ((size_t)32 << 20)
#endif
#define HUGE_PAGE ((size_t)2 << 20)

/* @n elements of @size bytes, 64-byte aligned, freed with the model. */
static void *alloc_buf(struct q3_model *m, uint64_t n, size_t size)
{
	size_t want, len;
	void *p;

	if (n > ((uint64_t)1 << 40) / size)
		return NULL;
	want = ((n * size + 63) / 64) * 64 + 64;
	if (ARENA_CHUNK && m->arena_left >= want) {
		p = m->arena_cur;
		m->arena_cur += want;
		m->arena_left -= want;
		m->bytes += n * size;
		return p;
	}
	if (!ENGY_GROW(m->bufs, m->cap_bufs, m->n_bufs + 1))
		return NULL;
	if (!ARENA_CHUNK) {
		p = aligned_alloc(64, want);
	} else {
		len = want > ARENA_CHUNK ? want : ARENA_CHUNK;
		len = (len + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
		p = aligned_alloc(HUGE_PAGE, len);
#ifdef MADV_HUGEPAGE
		if (p)
			(void)madvise(p, len, MADV_HUGEPAGE); /* a hint */
#endif
		if (p) { /* the rest of the chunk serves the next ones */
			m->arena_cur = (char *)p + want;
			m->arena_left = len - want;
		}
	}
	if (!p)
		return NULL;
	m->bufs[m->n_bufs++] = p;
	m->bytes += n * size;
	return p;
}

static int nomem(struct loader *ld, const char *what)
{
	snprintf(ld->err, ld->errlen, "out of memory for %s", what);
	return -ENOMEM;
}

static int shape_err(struct loader *ld, const struct engy_st_tensor *t,
		     uint64_t rows, uint64_t cols)
{
	char got[128] = "";
	size_t k, n = 0;

	for (k = 0; k < t->ndim && n < sizeof(got) - 24; k++)
		n += (size_t)snprintf(got + n, sizeof(got) - n, "%s%llu",
				      k ? ", " : "",
				      (unsigned long long)t->shape[k]);
	if (cols)
		snprintf(ld->err, ld->errlen,
			 "tensor %s has shape [%s], expected [%llu, %llu]",
			 t->name, got, (unsigned long long)rows,
			 (unsigned long long)cols);
	else
		snprintf(ld->err, ld->errlen,
			 "tensor %s has shape [%s], expected [%llu]", t->name,
			 got, (unsigned long long)rows);
	return -EINVAL;
}

static int float_tensor(struct loader *ld, const struct engy_st_tensor *t,
			float *out)
{
	if (engy_st_to_f32(t, out) == 0)
		return 0;
	snprintf(ld->err, ld->errlen, "tensor %s has dtype %s, not a float",
		 t->name, engy_st_dtype_name(t->dtype));
	return -EINVAL;
}

/* BF16 bits as stored (little-endian) into host uint16s. */
static void copy_bf16(const struct engy_st_tensor *t, uint16_t *out)
{
	uint64_t i;

	for (i = 0; i < t->numel; i++)
		out[i] = (uint16_t)(t->data[2 * i] | t->data[2 * i + 1] << 8);
}

/* A Linear weight [rows, cols] named PREFIX.weight (or its quantized forms). */
static int linear(struct loader *ld, const char *prefix, uint64_t rows,
		  uint64_t cols, void **out)
{
	const struct engy_st_tensor *w, *s;
	char n1[512], n2[512];
	uint64_t got = 0;
	float *p;
	int rc;

	if (ld->m->wt == MM_BF16) {
		/* load_weights() checked every matrix is a BF16 .weight. */
		snprintf(n1, sizeof(n1), "%s.weight", prefix);
		w = find(ld, n1);
		if (!w || w->dtype != ENGY_ST_BF16) {
			snprintf(ld->err, ld->errlen, "tensor %s is missing",
				 n1);
			return -EINVAL;
		}
		if (w->ndim != 2 || w->shape[0] != rows || w->shape[1] != cols)
			return shape_err(ld, w, rows, cols);
		*out = alloc_buf(ld->m, rows * cols, sizeof(uint16_t));
		if (!*out)
			return nomem(ld, prefix);
		copy_bf16(w, *out);
		return 0;
	}
	p = alloc_buf(ld->m, rows * cols, sizeof(float));
	if (!p)
		return nomem(ld, prefix);
	snprintf(n1, sizeof(n1), "%s.qweight", prefix);
	if ((w = find(ld, n1))) {
		snprintf(n2, sizeof(n2), "%s.scales", prefix);
		s = find(ld, n2);
		if (!s) {
			snprintf(ld->err, ld->errlen,
				 "tensor %s is missing (%s is INT4)", n2, n1);
			return -EINVAL;
		}
		if (w->ndim != 2 || w->shape[0] != rows ||
		    w->shape[1] * 2 != cols)
			return shape_err(ld, w, rows, cols / 2);
		if (s->ndim != 2 || s->shape[0] != rows || !s->shape[1] ||
		    cols % s->shape[1]) {
			snprintf(
				ld->err, ld->errlen,
				"tensor %s is not [%llu, groups] with groups dividing %llu",
				n2, (unsigned long long)rows,
				(unsigned long long)cols);
			return -EINVAL;
		}
		rc = engy_st_dequant_int4(w, s, (uint32_t)(cols / s->shape[1]),
					  p, &got, ld->err, ld->errlen);
		if (!rc && got != cols)
			return shape_err(ld, s, rows, cols);
		*out = p;
		return rc;
	}
	snprintf(n1, sizeof(n1), "%s.weight", prefix);
	w = find(ld, n1);
	if (!w) {
		snprintf(ld->err, ld->errlen, "tensor %s is missing", n1);
		return -EINVAL;
	}
	if (w->ndim != 2 || w->shape[0] != rows || w->shape[1] != cols)
		return shape_err(ld, w, rows, cols);
	*out = p;
	if (w->dtype == ENGY_ST_F8_E4M3) {
		snprintf(n2, sizeof(n2), "%s.weight_scale_inv", prefix);
		s = find(ld, n2);
		if (!s) {
			snprintf(ld->err, ld->errlen,
				 "tensor %s is missing (%s is F8_E4M3)", n2,
				 n1);
			return -EINVAL;
		}
		rc = engy_st_dequant_fp8(
			w, s,
			ld->m->cfg.quant_block ? ld->m->cfg.quant_block : 128,
			p, ld->err, ld->errlen);
		/* fp8-bf16: the weight a GPU without FP8 GEMMs multiplies,
		 * q x scale rounded to bf16 (specs/checkpoints.md §4.1). */
		if (!rc && ld->m->profile == Q3_PROFILE_FP8_BF16)
			engy_q3_bf16_round(p, (size_t)rows * cols);
		return rc;
	}
	return float_tensor(ld, w, p);
}

static int vector(struct loader *ld, const char *name, uint64_t len,
		  float **out)
{
	const struct engy_st_tensor *t = find(ld, name);

	if (!t) {
		snprintf(ld->err, ld->errlen, "tensor %s is missing", name);
		return -EINVAL;
	}
	if (t->ndim != 1 || t->shape[0] != len)
		return shape_err(ld, t, len, 0);
	*out = alloc_buf(ld->m, len, sizeof(float));
	if (!*out)
		return nomem(ld, name);
	return float_tensor(ld, t, *out);
}

static int mlp(struct loader *ld, const char *prefix, uint32_t inter,
	       struct q3_mlp *o)
{
	uint32_t h = ld->m->cfg.hidden;
	char n[512];
	int rc;

	o->inter = inter;
	snprintf(n, sizeof(n), "%s.gate_proj", prefix);
	rc = linear(ld, n, inter, h, &o->gate);
	if (rc)
		return rc;
	snprintf(n, sizeof(n), "%s.up_proj", prefix);
	rc = linear(ld, n, inter, h, &o->up);
	if (rc)
		return rc;
	snprintf(n, sizeof(n), "%s.down_proj", prefix);
	return linear(ld, n, h, inter, &o->down);
}

static int layer(struct loader *ld, uint32_t i)
{
	const struct q3_config *c = &ld->m->cfg;
	struct q3_layer *l = &ld->m->layers[i];
	uint32_t h = c->hidden, qd = c->n_heads * c->head_dim;
	uint32_t kvd = c->n_kv * c->head_dim, e;
	char p[256], n[512];
	int rc;

	snprintf(p, sizeof(p), "model.layers.%u", i);
#define TRY(x)                                                                 \
	do {                                                                   \
		rc = (x);                                                      \
		if (rc)                                                        \
			return rc;                                             \
	} while (0)
	snprintf(n, sizeof(n), "%s.input_layernorm.weight", p);
	TRY(vector(ld, n, h, &l->in_norm));
	snprintf(n, sizeof(n), "%s.post_attention_layernorm.weight", p);
	TRY(vector(ld, n, h, &l->post_norm));
	snprintf(n, sizeof(n), "%s.self_attn.q_norm.weight", p);
	TRY(vector(ld, n, c->head_dim, &l->q_norm));
	snprintf(n, sizeof(n), "%s.self_attn.k_norm.weight", p);
	TRY(vector(ld, n, c->head_dim, &l->k_norm));
	snprintf(n, sizeof(n), "%s.self_attn.q_proj", p);
	TRY(linear(ld, n, qd, h, &l->wq));
	snprintf(n, sizeof(n), "%s.self_attn.k_proj", p);
	TRY(linear(ld, n, kvd, h, &l->wk));
	snprintf(n, sizeof(n), "%s.self_attn.v_proj", p);
	TRY(linear(ld, n, kvd, h, &l->wv));
	snprintf(n, sizeof(n), "%s.self_attn.o_proj", p);
	TRY(linear(ld, n, h, qd, &l->wo));
	if (!c->sparse[i]) {
		snprintf(n, sizeof(n), "%s.mlp", p);
		return mlp(ld, n, c->inter, &l->mlp);
	}
	snprintf(n, sizeof(n), "%s.mlp.gate", p);
	TRY(linear(ld, n, c->n_experts, h, &l->router));
	l->experts = calloc(c->n_experts, sizeof(*l->experts));
	if (!l->experts)
		return nomem(ld, "experts");
	for (e = 0; e < c->n_experts; e++) {
		snprintf(n, sizeof(n), "%s.mlp.experts.%u", p, e);
		TRY(mlp(ld, n, c->moe_inter, &l->experts[e]));
	}
	if (c->shared_inter) {
		snprintf(n, sizeof(n), "%s.mlp.shared_expert", p);
		TRY(mlp(ld, n, c->shared_inter, &l->shared));
		snprintf(n, sizeof(n), "%s.mlp.shared_expert_gate", p);
		TRY(linear(ld, n, 1, h, &l->shared_gate));
	}
#undef TRY
	return 0;
}

static int open_shards(struct loader *ld, const char *dir)
{
	struct engy_st_dir d;
	int rc = engy_st_dir_open(dir, MAX_SHARDS, &d, ld->err, ld->errlen);

	if (rc == -ENOMEM)
		return nomem(ld, "shards");
	if (!rc) {
		ld->st = d.st;
		ld->n_st = d.n;
	}
	return rc;
}

/* RoPE frequencies as transformers computes them, in float32. */
static int rope_table(struct q3_model *m)
{
	uint32_t i, half = m->cfg.head_dim / 2;

	m->inv_freq = calloc(half, sizeof(float));
	if (!m->inv_freq)
		return -ENOMEM;
	for (i = 0; i < half; i++)
		m->inv_freq[i] =
			(float)(1.0 / pow(m->cfg.rope_theta,
					  (double)(2 * i) / m->cfg.head_dim));
	return 0;
}

/*
 * Matrices stay bf16 in memory (half the bytes, so half the memory traffic
 * of decode) when every one of them is a BF16 .weight; anything else (F16,
 * F32, FP8, INT4) is widened or dequantized to float32.  A bf16 weight
 * widens exactly, so the numbers do not depend on the choice.
 */
static int matrix_type(const struct loader *ld)
{
	const struct engy_st_tensor *t;
	size_t i, k, len;

	for (i = 0; i < ld->n_st; i++)
		for (k = 0; k < engy_st_count(ld->st[i]); k++) {
			t = engy_st_at(ld->st[i], k);
			len = strlen(t->name);
			if (len > 8 && !strcmp(t->name + len - 8, ".qweight"))
				return MM_F32;
			if (t->ndim == 2 && len > 7 &&
			    !strcmp(t->name + len - 7, ".weight") &&
			    t->dtype != ENGY_ST_BF16)
				return MM_F32;
		}
	return MM_BF16;
}

static int load_weights(struct loader *ld)
{
	struct q3_model *m = ld->m;
	const struct q3_config *c = &m->cfg;
	uint32_t i;
	int rc;

	m->wt = matrix_type(ld);
	rc = linear(ld, "model.embed_tokens", c->vocab, c->hidden, &m->embed);
	if (!rc)
		rc = vector(ld, "model.norm.weight", c->hidden, &m->final_norm);
	if (!rc && !c->tied)
		rc = linear(ld, "lm_head", c->vocab, c->hidden, &m->lm_head);
	if (!rc && c->tied)
		m->lm_head = m->embed;
	m->layers = calloc(c->n_layers, sizeof(*m->layers));
	if (!rc && !m->layers)
		rc = nomem(ld, "layers");
	for (i = 0; !rc && i < c->n_layers; i++)
		rc = layer(ld, i);
	return rc;
}

int engy_q3_model_load(const char *dir, const struct q3_load_opts *o,
		       struct q3_model **out, char *err, size_t errlen)
{
	struct loader ld = { .err = err, .errlen = errlen };
	struct q3_model *m;
	unsigned threads = o && o->threads ? o->threads : 0;
	long ncpu;
	size_t i;
	int rc;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->mu, NULL);
	ld.m = m;
	if (o && o->profile > 0 && o->profile < Q3_PROFILE_MAX)
		m->profile =
			o->profile; /* checked below; the loader reads it */
	rc = engy_q3_config_load(dir, &m->cfg, err, errlen);
	if (!rc)
		rc = open_shards(&ld, dir);
	if (!rc)
		rc = load_weights(&ld);
	if (!rc)
		rc = rope_table(m);
	for (i = 0; i < ld.n_st; i++)
		engy_st_close(ld.st[i]);
	free(ld.st);
	if (!rc && o && (o->profile < 0 || o->profile >= Q3_PROFILE_MAX)) {
		snprintf(err, errlen, "kernel profile %d is unknown",
			 o->profile);
		rc = -EINVAL;
	}
	/* On CUDA, bf16act is the GPU's own bf16 GEMM (matmul_cuda.cu). */
	if (!rc && o && o->profile &&
	    (o->naive || (o->device == Q3_DEVICE_CUDA &&
			  o->profile != Q3_PROFILE_BF16ACT))) {
		snprintf(err, errlen,
			 "kernel profile %s runs on the CPU kernels only%s",
			 engy_q3_profile_name(o->profile),
			 o->naive ? "" : " (bf16act also on cuda)");
		rc = -EINVAL;
	}
	if (!rc && o)
		m->profile = o->profile;
	if (!rc && o && o->device == Q3_DEVICE_CUDA)
		rc = engy_q3_cuda_open(
			&m->cuda, o->profile == Q3_PROFILE_BF16ACT, m->device,
			sizeof(m->device), err, errlen);
	if (!rc) {
		if (!threads) {
			ncpu = sysconf(_SC_NPROCESSORS_ONLN);
			threads = ncpu > 0 ? (unsigned)ncpu : 1;
		}
		m->naive = o && o->naive;
		m->pool = engy_mm_pool_new(m->naive ? 1 : threads);
		if (!m->pool)
			rc = -ENOMEM;
		else if (m->naive)
			snprintf(m->device, sizeof(m->device), "cpu naive x1");
		else if (!m->cuda)
			snprintf(m->device, sizeof(m->device), "cpu %s x%u",
				 m->profile ? engy_q3_profile_name(m->profile)
					    : engy_mm_kernel_name(),
				 threads);
	}
	if (rc) {
		engy_q3_model_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void engy_q3_model_free(struct q3_model *m)
{
	size_t i;

	if (!m)
		return;
	engy_mm_pool_free(m->pool);
	engy_q3_cuda_close(m->cuda);
	for (i = 0; i < m->n_bufs; i++)
		free(m->bufs[i]);
	if (m->layers)
		for (i = 0; i < m->cfg.n_layers; i++)
			free(m->layers[i].experts);
	free(m->layers);
	free(m->bufs);
	free(m->inv_freq);
	for (i = 0; i < Q3_SCRATCH_N; i++)
		free(m->scratch[i]);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

const struct q3_config *engy_q3_model_config(const struct q3_model *m)
{
	return &m->cfg;
}

size_t engy_q3_model_bytes(const struct q3_model *m)
{
	return m->bytes;
}

unsigned engy_q3_model_matrix_bytes(const struct q3_model *m)
{
	return m->wt == MM_BF16 ? 2 : 4;
}

unsigned engy_q3_model_threads(const struct q3_model *m)
{
	return engy_mm_pool_threads(m->pool);
}

void engy_q3_model_set_hook(struct q3_model *m, q3_hook_fn fn, void *arg)
{
	m->hook = fn;
	m->hook_arg = arg;
}

void engy_q3_model_set_row_hook(struct q3_model *m, q3_row_hook_fn fn,
				void *arg)
{
	m->row_hook = fn;
	m->row_hook_arg = arg;
}

const char *engy_q3_model_device(const struct q3_model *m)
{
	return m->device;
}

int engy_q3_model_profile(const struct q3_model *m)
{
	return m->profile;
}

const char *engy_q3_model_profile_kernel(const struct q3_model *m)
{
	return m->cuda ? "" : engy_mm_profile_kernel(engy_q3_mm_order(m));
}

static const char *const profile_names[Q3_PROFILE_MAX] = {
	[Q3_PROFILE_REF] = "ref",
	[Q3_PROFILE_SPLITK] = "splitk",
	[Q3_PROFILE_WARP32] = "warp32",
	[Q3_PROFILE_BF16ACT] = "bf16act",
	[Q3_PROFILE_SPLITK_F32] = "splitk-f32",
	[Q3_PROFILE_FP8_BF16] = "fp8-bf16",
	[Q3_PROFILE_BF16DP] = "bf16dp",
	[Q3_PROFILE_AMX] = "amx",
};

const char *engy_q3_profile_name(int profile)
{
	return profile >= 0 && profile < Q3_PROFILE_MAX ? profile_names[profile]
							: NULL;
}

int engy_q3_profile_parse(const char *name)
{
	int i;

	for (i = 0; name && i < Q3_PROFILE_MAX; i++)
		if (!strcmp(name, profile_names[i]))
			return i;
	return -1;
}
