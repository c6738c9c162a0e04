/* SPDX-License-Identifier: MIT */
/*
 * config.json of a Qwen3 / Qwen3-MoE checkpoint (transformers' Qwen3Config
 * and Qwen3MoeConfig field names and defaults).  Anything the engine does
 * not implement (rope scaling, sliding windows, attention biases, other
 * quantizations) is refused by name rather than run wrongly.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fsutil.h"
#include "qwen3.h"

#define MAX_JSON ((size_t)16 << 20)

struct cfgp {
	const cJSON *j;
	char *err;
	size_t errlen;
	const char *file;
};

__attribute__((format(printf, 2, 3))) static int bad(struct cfgp *p,
						     const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->err && p->errlen)
		snprintf(p->err, p->errlen, "%s: %s", p->file, msg);
	return -EINVAL;
}

static const cJSON *item(const struct cfgp *p, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(p->j, k);
}

static bool present(const cJSON *v)
{
	return v && !cJSON_IsNull(v);
}

/* An integer field in [lo, hi]; absent or null takes @def (< 0: required). */
static int get_u32(struct cfgp *p, const char *k, int64_t def, uint32_t lo,
		   uint32_t hi, uint32_t *out)
{
	const cJSON *v = item(p, k);
	double d;

	if (!present(v)) {
		if (def < 0)
			return bad(p, "%s is missing", k);
		*out = (uint32_t)def;
		return 0;
	}
	d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
	if (!(d >= lo && d <= hi) || d != floor(d))
		return bad(p, "%s must be an integer in [%u, %u]", k, lo, hi);
	*out = (uint32_t)d;
	return 0;
}

static int get_pos(struct cfgp *p, const char *k, double def, double *out)
{
	const cJSON *v = item(p, k);

	if (!present(v)) {
		*out = def;
		return 0;
	}
	if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) ||
	    !isfinite(v->valuedouble))
		return bad(p, "%s must be a positive number", k);
	*out = v->valuedouble;
	return 0;
}

static int get_bool(struct cfgp *p, const char *k, bool def, bool *out)
{
	const cJSON *v = item(p, k);

	if (!present(v)) {
		*out = def;
		return 0;
	}
	if (!cJSON_IsBool(v))
		return bad(p, "%s must be true or false", k);
	*out = cJSON_IsTrue(v);
	return 0;
}

static int add_eos(struct cfgp *p, struct q3_config *c, const cJSON *e)
{
	if (!cJSON_IsNumber(e) || e->valuedouble < 0 ||
	    e->valuedouble >= c->vocab ||
	    e->valuedouble != floor(e->valuedouble))
		return bad(p,
			   "eos_token_id %g is not an id below vocab_size %u",
			   cJSON_IsNumber(e) ? e->valuedouble : -1.0, c->vocab);
	if (c->n_eos == Q3_MAX_EOS)
		return bad(p, "more than %d eos_token_id", Q3_MAX_EOS);
	c->eos[c->n_eos++] = (uint32_t)e->valuedouble;
	return 0;
}

/* eos_token_id: an id or a list of ids. */
static int get_eos(struct cfgp *p, struct q3_config *c)
{
	const cJSON *v = item(p, "eos_token_id"), *e;
	int rc;

	if (!present(v))
		return 0;
	c->n_eos = 0;
	if (cJSON_IsNumber(v))
		return add_eos(p, c, v);
	if (!cJSON_IsArray(v))
		return bad(p, "eos_token_id must be an id or a list of ids");
	cJSON_ArrayForEach(e, v)
	{
		rc = add_eos(p, c, e);
		if (rc)
			return rc;
	}
	return 0;
}

static int get_quant(struct cfgp *p, struct q3_config *c)
{
	const cJSON *q = item(p, "quantization_config"), *m, *b;
	struct cfgp sub = *p;
	uint32_t bits;
	int rc;

	c->quant = Q3_QUANT_NONE;
	if (!present(q))
		return 0;
	m = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
	if (!cJSON_IsString(m))
		return bad(p, "quantization_config has no quant_method");
	sub.j = q;
	if (strcmp(m->valuestring, "fp8") == 0) {
		b = cJSON_GetObjectItemCaseSensitive(q, "weight_block_size");
		c->quant = Q3_QUANT_FP8;
		c->quant_block = 128;
		if (!present(b))
			return 0;
		if (cJSON_GetArraySize(b) != 2 || !cJSON_IsNumber(b->child) ||
		    !cJSON_IsNumber(b->child->next) ||
		    b->child->valuedouble != b->child->next->valuedouble ||
		    !(b->child->valuedouble >= 1 &&
		      b->child->valuedouble <= 65536))
			return bad(
				p,
				"quantization_config.weight_block_size must be [B, B]");
		c->quant_block = (uint32_t)b->child->valuedouble;
		return 0;
	}
	if (strcmp(m->valuestring, "engy_int4") == 0) {
		c->quant = Q3_QUANT_INT4;
		rc = get_u32(&sub, "bits", 4, 4, 4, &bits);
		if (!rc)
			rc = get_u32(&sub, "group_size", -1, 2, 65536,
				     &c->quant_block);
		if (!rc && c->quant_block % 2)
			rc = bad(p,
				 "quantization_config.group_size must be even");
		return rc;
	}
	return bad(
		p,
		"quantization_config.quant_method '%.40s' is not supported (fp8, engy_int4)",
		m->valuestring);
}

static int get_layers(struct cfgp *p, struct q3_config *c)
{
	const cJSON *v = item(p, "mlp_only_layers"), *e;
	uint32_t i;

	for (i = 0; i < c->n_layers; i++)
		c->sparse[i] = c->moe && (i + 1) % c->sparse_step == 0;
	if (!present(v))
		return 0;
	if (!cJSON_IsArray(v))
		return bad(p,
			   "mlp_only_layers must be a list of layer indices");
	cJSON_ArrayForEach(e, v)
	{
		if (!cJSON_IsNumber(e) || e->valuedouble < 0 ||
		    e->valuedouble >= c->n_layers ||
		    e->valuedouble != floor(e->valuedouble))
			return bad(
				p,
				"mlp_only_layers holds a value that is not a layer index");
		c->sparse[(uint32_t)e->valuedouble] = false;
	}
	return 0;
}

static int refuse_unsupported(struct cfgp *p)
{
	const cJSON *v = item(p, "rope_scaling");
	bool b = false;

	if (present(v))
		return bad(p,
			   "rope_scaling is not supported (only plain RoPE)");
	if (get_bool(p, "use_sliding_window", false, &b) || b)
		return bad(p, "use_sliding_window is not supported");
	if (get_bool(p, "attention_bias", false, &b) || b)
		return bad(p,
			   "attention_bias is not supported (Qwen3 has none)");
	return 0;
}

static int parse(struct cfgp *p, struct q3_config *c)
{
	const cJSON *mt = item(p, "model_type"), *dt = item(p, "torch_dtype");
	bool any_dense = false;
	uint32_t i;
	int rc;

	memset(c, 0, sizeof(*c));
	if (!cJSON_IsString(mt) || (strcmp(mt->valuestring, "qwen3") &&
				    strcmp(mt->valuestring, "qwen3_moe")))
		return bad(
			p,
			"model_type '%.40s' is not a Qwen3 model (qwen3, qwen3_moe)",
			cJSON_IsString(mt) ? mt->valuestring : "");
	c->moe = strcmp(mt->valuestring, "qwen3_moe") == 0;
	if (cJSON_IsString(dt))
		snprintf(c->dtype, sizeof(c->dtype), "%s", dt->valuestring);
	rc = refuse_unsupported(p);
	if (!rc)
		rc = get_u32(p, "hidden_size", -1, 1, 65536, &c->hidden);
	if (!rc)
		rc = get_u32(p, "num_hidden_layers", -1, 1, Q3_MAX_LAYERS,
			     &c->n_layers);
	if (!rc)
		rc = get_u32(p, "num_attention_heads", -1, 1, 4096,
			     &c->n_heads);
	if (!rc)
		rc = get_u32(p, "num_key_value_heads", c->n_heads, 1, 4096,
			     &c->n_kv);
	if (!rc)
		rc = get_u32(p, "head_dim", c->hidden / c->n_heads, 2, 4096,
			     &c->head_dim);
	if (!rc)
		rc = get_u32(p, "vocab_size", -1, 1, 1u << 24, &c->vocab);
	if (!rc)
		rc = get_u32(p, "max_position_embeddings", 32768, 1, 1u << 24,
			     &c->max_pos);
	if (!rc)
		rc = get_pos(p, "rms_norm_eps", 1e-6, &c->eps);
	if (!rc)
		rc = get_pos(p, "rope_theta", 1e6, &c->rope_theta);
	if (!rc)
		rc = get_bool(p, "tie_word_embeddings", false, &c->tied);
	if (rc)
		return rc;
	if (c->n_heads % c->n_kv)
		return bad(
			p,
			"num_attention_heads %u is not a multiple of num_key_value_heads %u",
			c->n_heads, c->n_kv);
	if (c->head_dim % 2)
		return bad(p, "head_dim %u is odd (RoPE rotates halves)",
			   c->head_dim);
	if (c->moe) {
		rc = get_u32(p, "num_experts", -1, 1, 4096, &c->n_experts);
		if (!rc)
			rc = get_u32(p, "num_experts_per_tok", -1, 1,
				     c->n_experts, &c->top_k);
		if (!rc)
			rc = get_u32(p, "moe_intermediate_size", -1, 1,
				     1u << 20, &c->moe_inter);
		if (!rc)
			rc = get_u32(p, "decoder_sparse_step", 1, 1,
				     Q3_MAX_LAYERS, &c->sparse_step);
		if (!rc)
			rc = get_u32(p, "shared_expert_intermediate_size", 0, 0,
				     1u << 20, &c->shared_inter);
		if (!rc)
			rc = get_bool(p, "norm_topk_prob", false,
				      &c->norm_topk);
		if (rc)
			return rc;
	}
	rc = get_layers(p, c);
	if (rc)
		return rc;
	for (i = 0; i < c->n_layers; i++)
		any_dense |= !c->sparse[i];
	rc = get_u32(p, "intermediate_size", any_dense ? -1 : 0,
		     any_dense ? 1 : 0, 1u << 20, &c->inter);
	if (!rc)
		rc = get_eos(p, c);
	if (!rc)
		rc = get_quant(p, c);
	return rc;
}

static cJSON *read_json(const char *path, char *err, size_t errlen, int *rc)
{
	uint8_t *buf;
	size_t len;
	cJSON *j;

	*rc = engy_read_file(path, MAX_JSON, &buf, &len);
	if (*rc) {
		snprintf(err, errlen, "%s: %s", path, strerror(-*rc));
		return NULL;
	}
	j = cJSON_ParseWithLength((const char *)buf, len);
	free(buf);
	if (!j || !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		snprintf(err, errlen, "%s: not a JSON object", path);
		*rc = -EINVAL;
		return NULL;
	}
	return j;
}

int engy_q3_config_load(const char *dir, struct q3_config *c, char *err,
			size_t errlen)
{
	char path[4096];
	struct cfgp p = { .err = err, .errlen = errlen, .file = path };
	cJSON *j;
	int rc;

	snprintf(path, sizeof(path), "%s/config.json", dir);
	j = read_json(path, err, errlen, &rc);
	if (!j)
		return rc;
	p.j = j;
	rc = parse(&p, c);
	cJSON_Delete(j);
	if (rc)
		return rc;
	/* generation_config.json's EOS list is what generation stops on. */
	snprintf(path, sizeof(path), "%s/generation_config.json", dir);
	j = read_json(path, err, errlen, &rc);
	if (!j) {
		if (rc == -ENOENT) {
			if (err && errlen)
				err[0] = '\0';
			return 0;
		}
		return rc;
	}
	p.j = j;
	rc = get_eos(&p, c);
	cJSON_Delete(j);
	return rc;
}
