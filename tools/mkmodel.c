/* SPDX-License-Identifier: MIT */
/*
 * Generated checkpoints: config, weights and files (specs/checkpoints.md).
 *
 * Weights are random but shaped so a model says something: E is the
 * embedding, sigma a random permutation of the vocabulary, and lm_head's
 * row j mixes E[sigma(j)] into a random row, so while the residual stream
 * still resembles the current token's embedding the next token tends to
 * be sigma^-1 of it (a long cycle through the vocabulary), and attention
 * and the MLPs bend that by context.  Greedy text is gibberish that does
 * not collapse onto one token.
 *
 * All randomness is integer (splitmix64) and the normal-ish samples are
 * sums of uniforms (no libm), so the bytes are the same on every machine.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "fsutil.h"
#include "grow.h"
#include "halfconv.h"
#include "mkmodel.h"
#include "safetensors.h"

struct shape {
	uint32_t hidden, layers, heads, kv, head_dim, inter, vocab, max_pos;
	uint32_t experts, top_k, moe_inter;
	int mlp_only;	/* a dense layer of a MoE model, or -1 */
	uint32_t group; /* INT4 group size */
};

/* [moe][small] */
static const struct shape shapes[2][2] = {
	{ { 64, 2, 4, 2, 32, 128, 512, 4096, 0, 0, 0, -1, 128 },
	  { 512, 6, 8, 4, 64, 1536, 6144, 8192, 0, 0, 0, -1, 128 } },
	{ { 64, 2, 4, 2, 32, 128, 512, 4096, 8, 2, 32, 1, 128 },
	  { 512, 6, 8, 4, 64, 1536, 6144, 8192, 16, 4, 384, -1, 128 } },
};

#define GAMMA  0.5 /* scale of each block's output against the stream */
#define SIGNAL 6.0 /* permutation signal in lm_head, in logit units */

struct tens {
	char name[128];
	int dtype;
	uint32_t ndim;
	uint64_t shape[2];
	void *data;
	uint64_t nbytes;
};

struct gen {
	const struct mkmodel_opts *o;
	struct shape s;
	uint64_t rng;
	struct tens *t;
	size_t n, cap;
	uint64_t bytes;
};

static uint64_t next(struct gen *g)
{
	uint64_t z = (g->rng += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Unit variance, bounded: the centred sum of four uniforms, scaled. */
static float randn(struct gen *g)
{
	double u = 0;
	int i;

	for (i = 0; i < 4; i++)
		u += (double)(next(g) >> 11) * 0x1p-53;
	return (float)((u - 2.0) * 1.7320508075688772);
}

static float *rand_mat(struct gen *g, uint64_t n, double std, double mean)
{
	float *w = malloc(n * sizeof(float));
	uint64_t i;

	if (!w)
		return NULL;
	for (i = 0; i < n; i++)
		w[i] = (float)(mean + std * randn(g));
	return w;
}

static int push(struct gen *g, const char *name, int dtype, uint64_t rows,
		uint64_t cols, void *data)
{
	struct tens *t;

	if (!data)
		return -ENOMEM;
	if (!ENGY_GROW(g->t, g->cap, g->n + 1)) {
		free(data);
		return -ENOMEM;
	}
	t = &g->t[g->n++];
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->dtype = dtype;
	t->ndim = cols ? 2 : 1;
	t->shape[0] = rows;
	t->shape[1] = cols;
	t->data = data;
	t->nbytes = rows * (cols ? cols : 1) * engy_st_dtype_size(dtype);
	g->bytes += t->nbytes;
	return 0;
}

/* The model dtype's bits of @w; @w itself becomes those values. */
static void *narrow(int dtype, float *w, uint64_t n)
{
	uint16_t *h;
	uint64_t i;

	if (dtype == ENGY_ST_F32) {
		float *c = malloc(n * sizeof(float));

		if (c)
			memcpy(c, w, n * sizeof(float));
		return c;
	}
	h = malloc(n * sizeof(*h));
	if (!h)
		return NULL;
	for (i = 0; i < n; i++) {
		if (dtype == ENGY_ST_F16) {
			h[i] = engy_f16_from_f32(w[i]);
			w[i] = engy_f16_to_f32(h[i]);
		} else {
			h[i] = engy_bf16_from_f32(w[i]);
			w[i] = engy_bf16_to_f32(h[i]);
		}
	}
	/* Little-endian on disk. */
	for (i = 0; i < n; i++) {
		uint8_t *b = (uint8_t *)&h[i];
		uint16_t v = h[i];

		b[0] = (uint8_t)v;
		b[1] = (uint8_t)(v >> 8);
	}
	return h;
}

static int emit_vec(struct gen *g, const char *name, float *v, uint64_t n)
{
	void *d = v ? narrow(g->o->dtype, v, n) : NULL;

	free(v);
	return push(g, name, g->o->dtype, n, 0, d);
}

/* A Linear weight, quantized when asked (it is rounded to the dtype first). */
static int emit_linear(struct gen *g, const char *prefix, float *w,
		       uint64_t rows, uint64_t cols, bool quantize)
{
	char name[128];
	void *d = w ? narrow(g->o->dtype, w, rows * cols) : NULL;
	uint64_t i, nb;
	int rc;

	if (!w || !d || !quantize || g->o->quant == MKMODEL_QUANT_NONE) {
		free(w);
		snprintf(name, sizeof(name), "%s.weight", prefix);
		return push(g, name, g->o->dtype, rows, cols, d);
	}
	free(d);
	if (g->o->quant == MKMODEL_QUANT_INT4) {
		/* A row shorter than the group size is one group. */
		uint32_t grp = cols < g->s.group ? (uint32_t)cols : g->s.group;
		uint8_t *q = malloc(rows * cols / 2);
		uint16_t *s = malloc(rows * (cols / grp) * 2);

		if (q && s)
			engy_st_quant_int4(w, rows, cols, grp, q, s);
		for (i = 0; s && i < rows * (cols / grp); i++) {
			uint16_t v = s[i];

			((uint8_t *)&s[i])[0] = (uint8_t)v;
			((uint8_t *)&s[i])[1] = (uint8_t)(v >> 8);
		}
		free(w);
		if (!q || !s) {
			free(q);
			free(s);
			return -ENOMEM;
		}
		snprintf(name, sizeof(name), "%s.qweight", prefix);
		rc = push(g, name, ENGY_ST_U8, rows, cols / 2, q);
		snprintf(name, sizeof(name), "%s.scales", prefix);
		if (rc) {
			free(s);
			return rc;
		}
		return push(g, name, ENGY_ST_F16, rows, cols / grp, s);
	}
	/* FP8 */
	nb = ((rows + 127) / 128) * ((cols + 127) / 128);
	{
		uint8_t *q = malloc(rows * cols);
		float *s = malloc(nb * sizeof(float));

		if (q && s)
			engy_st_quant_fp8(w, rows, cols, 128, q, s);
		free(w);
		if (!q || !s) {
			free(q);
			free(s);
			return -ENOMEM;
		}
		snprintf(name, sizeof(name), "%s.weight", prefix);
		rc = push(g, name, ENGY_ST_F8_E4M3, rows, cols, q);
		snprintf(name, sizeof(name), "%s.weight_scale_inv", prefix);
		if (rc) {
			free(s);
			return rc;
		}
		return push(g, name, ENGY_ST_F32, (rows + 127) / 128,
			    (cols + 127) / 128, s);
	}
}

static int mlp(struct gen *g, const char *prefix, uint32_t inter)
{
	uint32_t h = g->s.hidden;
	char n[128];
	int rc;

	snprintf(n, sizeof(n), "%s.gate_proj", prefix);
	rc = emit_linear(g, n, rand_mat(g, (uint64_t)inter * h, 1 / sqrt(h), 0),
			 inter, h, true);
	snprintf(n, sizeof(n), "%s.up_proj", prefix);
	if (!rc)
		rc = emit_linear(
			g, n, rand_mat(g, (uint64_t)inter * h, 1 / sqrt(h), 0),
			inter, h, true);
	snprintf(n, sizeof(n), "%s.down_proj", prefix);
	if (!rc)
		rc = emit_linear(g, n,
				 rand_mat(g, (uint64_t)h * inter,
					  GAMMA / sqrt(inter), 0),
				 h, inter, true);
	return rc;
}

static int layer(struct gen *g, uint32_t i)
{
	const struct shape *s = &g->s;
	uint32_t h = s->hidden, qd = s->heads * s->head_dim;
	uint32_t kvd = s->kv * s->head_dim, e;
	char p[64], n[128];
	int rc = 0;

	snprintf(p, sizeof(p), "model.layers.%u", i);
#define VEC(suffix, len)                                                       \
	do {                                                                   \
		snprintf(n, sizeof(n), "%s.%s", p, suffix);                    \
		if (!rc)                                                       \
			rc = emit_vec(g, n, rand_mat(g, len, 0.1, 1.0), len);  \
	} while (0)
#define LIN(suffix, rows, cols, std)                                           \
	do {                                                                   \
		snprintf(n, sizeof(n), "%s.%s", p, suffix);                    \
		if (!rc)                                                       \
			rc = emit_linear(g, n,                                 \
					 rand_mat(g,                           \
						  (uint64_t)(rows) * (cols),   \
						  std, 0),                     \
					 rows, cols, true);                    \
	} while (0)
	VEC("input_layernorm.weight", h);
	VEC("post_attention_layernorm.weight", h);
	VEC("self_attn.q_norm.weight", s->head_dim);
	VEC("self_attn.k_norm.weight", s->head_dim);
	LIN("self_attn.q_proj", qd, h, 1 / sqrt(h));
	LIN("self_attn.k_proj", kvd, h, 1 / sqrt(h));
	LIN("self_attn.v_proj", kvd, h, 1 / sqrt(h));
	LIN("self_attn.o_proj", h, qd, GAMMA / sqrt(qd));
#undef VEC
#undef LIN
	if (rc)
		return rc;
	if (!s->experts || (int)i == s->mlp_only) {
		snprintf(n, sizeof(n), "%s.mlp", p);
		return mlp(g, n, s->inter);
	}
	/* The router is never quantized (nor is it in Qwen's FP8 files). */
	snprintf(n, sizeof(n), "%s.mlp.gate", p);
	rc = emit_linear(g, n,
			 rand_mat(g, (uint64_t)s->experts * h, 2 / sqrt(h), 0),
			 s->experts, h, false);
	for (e = 0; !rc && e < s->experts; e++) {
		snprintf(n, sizeof(n), "%s.mlp.experts.%u", p, e);
		rc = mlp(g, n, s->moe_inter);
	}
	if (!rc && g->o->shared_expert) {
		snprintf(n, sizeof(n), "%s.mlp.shared_expert", p);
		rc = mlp(g, n, s->moe_inter);
		snprintf(n, sizeof(n), "%s.mlp.shared_expert_gate", p);
		if (!rc)
			rc = emit_linear(g, n, rand_mat(g, h, 1 / sqrt(h), 0),
					 1, h, false);
	}
	return rc;
}

/* Embedding, the permutation-shaped lm_head, final norm. */
static int embeddings(struct gen *g)
{
	uint32_t V = g->s.vocab, H = g->s.hidden, i, j, *perm;
	float *E = rand_mat(g, (uint64_t)V * H, 1, 0), *lm, *Ec;
	double beta = SIGNAL / sqrt(H) / 2.0, c = 2.0 / sqrt(H);
	int rc;

	perm = malloc(V * sizeof(*perm));
	Ec = E ? malloc((uint64_t)V * H * sizeof(float)) : NULL;
	if (!perm || !Ec) {
		free(perm);
		free(E);
		free(Ec);
		return -ENOMEM;
	}
	memcpy(Ec, E, (uint64_t)V * H * sizeof(float));
	for (i = 0; i < V; i++)
		perm[i] = i;
	for (i = V - 1; i > 0; i--) {
		uint32_t k = (uint32_t)(next(g) % (i + 1)), t = perm[i];

		perm[i] = perm[k];
		perm[k] = t;
	}
	rc = emit_linear(g, "model.embed_tokens", E, V, H, false);
	lm = rc ? NULL : rand_mat(g, (uint64_t)V * H, c, 0);
	if (!rc && !lm)
		rc = -ENOMEM;
	if (!rc && !g->o->tie) {
		for (j = 0; j < V; j++)
			for (i = 0; i < H; i++)
				lm[(uint64_t)j * H + i] +=
					(float)(beta * c *
						Ec[(uint64_t)perm[j] * H + i]);
		rc = emit_linear(g, "lm_head", lm, V, H, false);
		lm = NULL;
	}
	free(lm);
	free(Ec);
	free(perm);
	if (!rc)
		rc = emit_vec(g, "model.norm.weight", rand_mat(g, H, 0.1, 1.0),
			      H);
	return rc;
}

static cJSON *config_json(const struct gen *g, uint32_t n_tok)
{
	const struct shape *s = &g->s;
	const struct mkmodel_opts *o = g->o;
	cJSON *c = cJSON_CreateObject(), *a, *q, *prov;
	char seed[32];

	a = cJSON_AddArrayToObject(c, "architectures");
	cJSON_AddItemToArray(a,
			     cJSON_CreateString(o->moe ? "Qwen3MoeForCausalLM"
						       : "Qwen3ForCausalLM"));
	cJSON_AddFalseToObject(c, "attention_bias");
	cJSON_AddNumberToObject(c, "attention_dropout", 0);
	cJSON_AddNumberToObject(c, "bos_token_id", n_tok);
	if (o->moe)
		cJSON_AddNumberToObject(c, "decoder_sparse_step", 1);
	cJSON_AddNumberToObject(c, "eos_token_id", n_tok + 2);
	cJSON_AddNumberToObject(c, "head_dim", s->head_dim);
	cJSON_AddStringToObject(c, "hidden_act", "silu");
	cJSON_AddNumberToObject(c, "hidden_size", s->hidden);
	cJSON_AddNumberToObject(c, "initializer_range", 0.02);
	cJSON_AddNumberToObject(c, "intermediate_size", s->inter);
	cJSON_AddNumberToObject(c, "max_position_embeddings", s->max_pos);
	cJSON_AddNumberToObject(c, "max_window_layers", s->layers);
	if (o->moe) {
		a = cJSON_AddArrayToObject(c, "mlp_only_layers");
		if (s->mlp_only >= 0)
			cJSON_AddItemToArray(a,
					     cJSON_CreateNumber(s->mlp_only));
	}
	cJSON_AddStringToObject(c, "model_type",
				o->moe ? "qwen3_moe" : "qwen3");
	if (o->moe) {
		cJSON_AddNumberToObject(c, "moe_intermediate_size",
					s->moe_inter);
		cJSON_AddTrueToObject(c, "norm_topk_prob");
	}
	cJSON_AddNumberToObject(c, "num_attention_heads", s->heads);
	if (o->moe) {
		cJSON_AddNumberToObject(c, "num_experts", s->experts);
		cJSON_AddNumberToObject(c, "num_experts_per_tok", s->top_k);
	}
	cJSON_AddNumberToObject(c, "num_hidden_layers", s->layers);
	cJSON_AddNumberToObject(c, "num_key_value_heads", s->kv);
	if (o->quant == MKMODEL_QUANT_INT4) {
		q = cJSON_AddObjectToObject(c, "quantization_config");
		cJSON_AddStringToObject(q, "quant_method", "engy_int4");
		cJSON_AddNumberToObject(q, "bits", 4);
		cJSON_AddNumberToObject(q, "group_size", s->group);
		cJSON_AddTrueToObject(q, "sym");
	} else if (o->quant == MKMODEL_QUANT_FP8) {
		q = cJSON_AddObjectToObject(c, "quantization_config");
		cJSON_AddStringToObject(q, "quant_method", "fp8");
		cJSON_AddStringToObject(q, "fmt", "e4m3");
		cJSON_AddStringToObject(q, "activation_scheme", "dynamic");
		a = cJSON_AddArrayToObject(q, "weight_block_size");
		cJSON_AddItemToArray(a, cJSON_CreateNumber(128));
		cJSON_AddItemToArray(a, cJSON_CreateNumber(128));
	}
	cJSON_AddNumberToObject(c, "rms_norm_eps", 1e-6);
	cJSON_AddNullToObject(c, "rope_scaling");
	cJSON_AddNumberToObject(c, "rope_theta", 1000000);
	if (o->moe && o->shared_expert)
		cJSON_AddNumberToObject(c, "shared_expert_intermediate_size",
					s->moe_inter);
	cJSON_AddNullToObject(c, "sliding_window");
	cJSON_AddBoolToObject(c, "tie_word_embeddings", o->tie);
	cJSON_AddStringToObject(c, "torch_dtype",
				o->dtype == ENGY_ST_F32	  ? "float32"
				: o->dtype == ENGY_ST_F16 ? "float16"
							  : "bfloat16");
	cJSON_AddFalseToObject(c, "use_sliding_window");
	cJSON_AddNumberToObject(c, "vocab_size", s->vocab);
	prov = cJSON_AddObjectToObject(c, "engy_mkmodel");
	cJSON_AddStringToObject(prov, "arch", o->moe ? "qwen3-moe" : "qwen3");
	cJSON_AddStringToObject(prov, "size", o->small ? "small" : "tiny");
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)o->seed);
	cJSON_AddStringToObject(prov, "seed", seed);
	return c;
}

static cJSON *generation_json(uint32_t n_tok)
{
	cJSON *c = cJSON_CreateObject(), *a;

	cJSON_AddNumberToObject(c, "bos_token_id", n_tok);
	a = cJSON_AddArrayToObject(c, "eos_token_id");
	cJSON_AddItemToArray(a, cJSON_CreateNumber(n_tok + 2)); /* <|im_end|> */
	cJSON_AddItemToArray(a, cJSON_CreateNumber(n_tok)); /* <|endoftext|> */
	cJSON_AddNumberToObject(c, "pad_token_id", n_tok);
	return c;
}

static int save_json(const char *dir, const char *name, cJSON *j, char *err,
		     size_t errlen)
{
	char path[4096], *s = j ? cJSON_Print(j) : NULL;
	int rc;

	cJSON_Delete(j);
	if (!s)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	rc = engy_write_file_atomic(path, s, strlen(s), 0644);
	free(s);
	if (rc)
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	return rc;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct tens *)a)->name,
		      ((const struct tens *)b)->name);
}

static int save_weights(struct gen *g, const char *dir, char *err,
			size_t errlen)
{
	struct engy_st_writer *w = engy_st_writer_new();
	char path[4096];
	size_t i;
	int rc = w ? engy_st_writer_meta(w, "format", "pt") : -ENOMEM;

	/* By name: a canonical order, whatever order they were made in. */
	qsort(g->t, g->n, sizeof(*g->t), cmp_name);
	for (i = 0; i < g->n; i++) {
		struct tens *t = &g->t[i];

		if (!rc)
			rc = engy_st_writer_add_take(w, t->name, t->dtype,
						     t->ndim, t->shape, t->data,
						     t->nbytes);
		else
			free(t->data);
		t->data = NULL;
	}
	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	if (!rc)
		rc = engy_st_writer_save(w, path);
	if (rc)
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	engy_st_writer_free(w);
	return rc;
}

int mkmodel_write(const struct mkmodel_opts *o, const char *dir, char *err,
		  size_t errlen)
{
	struct gen g = { .o = o };
	uint32_t n_tok, i;
	size_t k;
	int rc;

	g.s = shapes[o->moe][o->small];
	g.rng = o->seed ^ 0x51776E336D6F646Cull;
	n_tok = g.s.vocab - MKMODEL_N_SPECIAL;
	if (o->shared_expert && !o->moe) {
		snprintf(err, errlen, "a shared expert needs --arch qwen3-moe");
		return -EINVAL;
	}
	if (o->tie && o->quant) {
		snprintf(err, errlen, "--tie and --quant do not combine");
		return -EINVAL;
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return rc;
	}
	if (o->progress)
		fprintf(o->progress, "mkmodel: tokenizer: %u tokens\n",
			g.s.vocab);
	rc = mkmodel_tokenizer(n_tok - 256, g.s.max_pos, dir, err, errlen);
	if (!rc)
		rc = save_json(dir, "config.json", config_json(&g, n_tok), err,
			       errlen);
	if (!rc)
		rc = save_json(dir, "generation_config.json",
			       generation_json(n_tok), err, errlen);
	if (!rc)
		rc = embeddings(&g);
	for (i = 0; !rc && i < g.s.layers; i++) {
		if (o->progress)
			fprintf(o->progress, "mkmodel: layer %u/%u\n", i + 1,
				g.s.layers);
		rc = layer(&g, i);
	}
	if (!rc && o->progress)
		fprintf(o->progress,
			"mkmodel: model.safetensors: %zu tensors, %.1f MB\n",
			g.n, (double)g.bytes / 1e6);
	if (!rc)
		rc = save_weights(&g, dir, err, errlen);
	else if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	for (k = 0; k < g.n; k++)
		free(g.t[k].data);
	free(g.t);
	return rc;
}
