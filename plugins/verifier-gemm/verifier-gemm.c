/* SPDX-License-Identifier: MIT */
/*
 * verifier-gemm: the sampled GEMM audit (specs/gemm-audit.md), the
 * auditor's side of a challenged proof scheme (ABI 1.4).
 *
 * challenge() reads a held commitment's `gemm` member, checks that it
 * agrees with itself (its trace root binds its gemm root and the
 * commitment's TOPLOC proofs), derives the seed from the pinned weight
 * root, the trace root, the request id and the caller's nonce, and
 * returns the cells the miner must open.  check() judges the miner's
 * opening with lib/gemm against the verifier's own checkpoint, whose
 * engy-mc1 model root start() checks against the pinned `spec_root`
 * (refusing to start on any other).  Weights are dequantized exactly to
 * float64 on first use and cached within `cache_mb`.  Both ops are pure
 * CPU work on borrowed data; the cache is shared under a mutex, so the
 * flows may call them concurrently from the worker pool.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <engy/plugin.h>
#include <engy/proof.h>

#include "config.h"
#include "gemm.h"
#include "gemm_ckpt.h"
#include "hex.h"
#include "modelspec.h"

struct gemm_conf {
	const char *checkpoint;
	const char *spec_root;
	int64_t cache_mb;
	int64_t threads;
	int64_t layers, tokens, projections, spots;
	double z, c_el;
};

struct vgemm {
	const struct engy_host *host;
	char *checkpoint;
	uint8_t spec_root[32];
	size_t cache_bytes;
	unsigned threads;
	struct engy_ga_params def;
	struct engy_ga_ckpt *ck;
};

#define OFF(f) offsetof(struct gemm_conf, f)
static const struct engy_opt gemm_opts[] = {
	{ "checkpoint", ENGY_OPT_STR, ENGY_OPT_REQUIRED, OFF(checkpoint), NULL,
	  "GEMM_CHECKPOINT", 0, 0,
	  "safetensors checkpoint directory holding the pinned weights" },
	{ "spec_root", ENGY_OPT_STR, ENGY_OPT_REQUIRED, OFF(spec_root), NULL,
	  "GEMM_SPEC_ROOT", 0, 0,
	  "the model's pinned engy-mc1 model root (64 hex digits)" },
	{ "cache_mb", ENGY_OPT_INT, 0, OFF(cache_mb), "1024", "GEMM_CACHE_MB",
	  1, 1 << 20, "float64 weights kept between checks (MiB)" },
	{ "threads", ENGY_OPT_INT, 0, OFF(threads), "0", NULL, 0, 1024,
	  "threads hashing the checkpoint at start (0: every CPU)" },
	{ "layers", ENGY_OPT_INT, 0, OFF(layers), "4", NULL, 1, 65536,
	  "layers challenged when the model spec sets none (gemm_layers)" },
	{ "tokens", ENGY_OPT_INT, 0, OFF(tokens), "4", NULL, 1, 4096,
	  "positions per layer (gemm_tokens)" },
	{ "projections", ENGY_OPT_INT, 0, OFF(projections), "2", NULL, 1, 64,
	  "Freivalds projections per product (gemm_projections)" },
	{ "spots", ENGY_OPT_INT, 0, OFF(spots), "2", NULL, 0, 4096,
	  "elementwise recomputes per product (gemm_spots)" },
	{ "z", ENGY_OPT_FLOAT, 0, OFF(z), "6", NULL, 0, 0,
	  "tolerance multiplier (gemm_z)" },
	{ "c_el", ENGY_OPT_FLOAT, 0, OFF(c_el), "6", NULL, 0, 0,
	  "elementwise tolerance multiplier (gemm_c_el)" },
	ENGY_OPT_END
};

static int gemm_create(const struct engy_host *host, const void *conf,
		       void **inst)
{
	const struct gemm_conf *c = conf;
	struct vgemm *v;

	*inst = NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (!c->spec_root || strlen(c->spec_root) != 64 ||
	    engy_hex_parse(c->spec_root, v->spec_root, 32)) {
		engy_err(host, "event=config_invalid option=spec_root "
			       "reason=\"not 64 hex digits\"");
		free(v);
		return -EINVAL;
	}
	if (!(c->z >= 1 && c->z <= 1000) ||
	    !(c->c_el >= 1 && c->c_el <= 1000) ||
	    (uint64_t)c->layers * (uint64_t)c->tokens > ENGY_GA_MAX_CELLS) {
		engy_err(host,
			 "event=config_invalid option=%s "
			 "reason=\"out of range\"",
			 !(c->z >= 1 && c->z <= 1000)	      ? "z"
			 : !(c->c_el >= 1 && c->c_el <= 1000) ? "c_el"
							      : "tokens");
		free(v);
		return -EINVAL;
	}
	v->checkpoint = strdup(c->checkpoint ? c->checkpoint : "");
	if (!v->checkpoint) {
		free(v);
		return -ENOMEM;
	}
	v->host = host;
	v->cache_bytes = (size_t)c->cache_mb << 20;
	v->threads = (unsigned)c->threads;
	v->def.layers = (uint32_t)c->layers;
	v->def.tokens = (uint32_t)c->tokens;
	v->def.projections = (uint32_t)c->projections;
	v->def.spots = (uint32_t)c->spots;
	v->def.z = c->z;
	v->def.c_el = c->c_el;
	*inst = v;
	return 0;
}

/* The checkpoint's model root must be the pinned one. */
static int gemm_start(void *inst)
{
	struct vgemm *v = inst;
	char err[256], want[65], got[65];
	struct engy_ms *m;
	int rc;

	rc = engy_ms_open(v->checkpoint, &m, err, sizeof(err));
	if (rc) {
		engy_err(v->host, "event=checkpoint_unusable reason=\"%s\"",
			 err);
		return rc;
	}
	rc = engy_ms_build(m, v->threads, NULL, NULL, 0, err, sizeof(err));
	if (rc) {
		engy_err(v->host, "event=checkpoint_unusable reason=\"%s\"",
			 err);
		engy_ms_close(m);
		return rc;
	}
	engy_hex_print(engy_ms_model_root(m), 32, got);
	engy_hex_print(v->spec_root, 32, want);
	rc = memcmp(engy_ms_model_root(m), v->spec_root, 32) ? -EINVAL : 0;
	engy_ms_close(m);
	if (rc) {
		engy_err(v->host,
			 "event=checkpoint_refused reason=\"its model root "
			 "is not the pinned spec_root\" got=%s want=%s",
			 got, want);
		return rc;
	}
	rc = engy_ga_ckpt_open(v->checkpoint, v->cache_bytes, &v->ck, err,
			       sizeof(err));
	if (rc) {
		engy_err(v->host, "event=checkpoint_unusable reason=\"%s\"",
			 err);
		return rc;
	}
	engy_info(v->host, "event=gemm_ready model_root=%s layers=%u", got,
		  engy_ga_ckpt_layers(v->ck));
	return 0;
}

static void gemm_stop(void *inst)
{
	(void)inst;
}

static void gemm_destroy(void *inst)
{
	struct vgemm *v = inst;

	if (!v)
		return;
	engy_ga_ckpt_close(v->ck);
	free(v->checkpoint);
	free(v);
}

/* ---- The commitment (untrusted) ---- */

struct held {
	struct engy_ga_bind bind;
	uint8_t trace_root[32], toploc_hash[32];
};

static int result(struct engy_proof_result *out, int verdict,
		  const char *reason)
{
	out->verdict = verdict;
	snprintf(out->reason, sizeof(out->reason), "%s", reason);
	return 0;
}

static bool hex32(const cJSON *o, const char *k, uint8_t out[32])
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(j) && strlen(j->valuestring) == 64 &&
	       engy_hex_parse(j->valuestring, out, 32) == 0;
}

static bool u32_of(const cJSON *o, const char *k, uint32_t *out)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsNumber(j) || !(j->valuedouble >= 0) ||
	    j->valuedouble > 4294967295.0 ||
	    j->valuedouble != (double)(uint32_t)j->valuedouble)
		return false;
	*out = (uint32_t)j->valuedouble;
	return true;
}

/* An id array into @ids at @at; false when not one. */
static bool ids_of(const cJSON *a, uint32_t **ids, size_t *n)
{
	const cJSON *e;
	size_t cnt, i = 0;
	uint32_t *p;

	if (!cJSON_IsArray(a))
		return false;
	cnt = (size_t)cJSON_GetArraySize(a);
	p = realloc(*ids, (*n + cnt + 1) * sizeof(*p));
	if (!p)
		return false;
	*ids = p;
	cJSON_ArrayForEach(e, a)
	{
		if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0) ||
		    e->valuedouble > 4294967295.0 ||
		    e->valuedouble != (double)(uint32_t)e->valuedouble)
			return false;
		p[*n + i++] = (uint32_t)e->valuedouble;
	}
	*n += cnt;
	return true;
}

/*
 * What the auditor holds of a commitment: the binding it recomputes
 * (its own spec root, the ids hash and counts of the ids the commitment
 * carries, the sampling hash the member declares), the trace root, the
 * TOPLOC hash.  1 with @out set when it cannot be challenged or
 * contradicts itself; 0 when held; -ENOMEM.
 */
static int hold(const struct vgemm *v, const char *buf, size_t len,
		struct held *h, struct engy_proof_result *out)
{
	cJSON *c = cJSON_ParseWithLength(buf, len);
	const cJSON *g, *t, *pr, *p;
	uint8_t gemm_root[32], tr[32];
	uint32_t *ids = NULL, np, nt;
	const char **proofs = NULL;
	size_t n = 0, n_prompt, k = 0;
	int rc = 1;

	memset(h, 0, sizeof(*h));
	if (!cJSON_IsObject(c)) {
		result(out, ENGY_VERDICT_UNPROVEN, "malformed");
		goto out;
	}
	g = cJSON_GetObjectItemCaseSensitive(c, "gemm");
	if (!g || cJSON_IsNull(g)) {
		result(out, ENGY_VERDICT_UNPROVEN, "no_gemm");
		goto out;
	}
	p = cJSON_GetObjectItemCaseSensitive(g, "hashing");
	if (!cJSON_IsObject(g) || !cJSON_IsString(p) ||
	    strcmp(p->valuestring, ENGY_GA_HASHING) ||
	    !hex32(g, "gemm_root", gemm_root) ||
	    !hex32(g, "trace_root", h->trace_root) ||
	    !hex32(g, "sampling", h->bind.sampling) ||
	    !u32_of(g, "n_prompt", &np) || !u32_of(g, "n_tokens", &nt)) {
		result(out, ENGY_VERDICT_UNPROVEN, "malformed");
		goto out;
	}
	/* The ids: prompt_ids (the gemm member's, else the TOPLOC
	 * member's) then output_token_ids. */
	t = cJSON_GetObjectItemCaseSensitive(c, "toploc");
	p = cJSON_GetObjectItemCaseSensitive(g, "prompt_ids");
	if (!p && cJSON_IsObject(t))
		p = cJSON_GetObjectItemCaseSensitive(t, "prompt_ids");
	if (!ids_of(p, &ids, &n)) {
		result(out, ENGY_VERDICT_UNPROVEN,
		       p ? "malformed" : "no_prompt_ids");
		goto out;
	}
	n_prompt = n;
	if (!ids_of(cJSON_GetObjectItemCaseSensitive(c, "output_token_ids"),
		    &ids, &n) ||
	    n > UINT32_MAX) {
		result(out, ENGY_VERDICT_UNPROVEN, "malformed");
		goto out;
	}
	if (np != n_prompt || nt != n) {
		result(out, ENGY_VERDICT_CHEAT, "ids");
		goto out;
	}
	/* The TOPLOC member as the trace root binds it. */
	if (t && !cJSON_IsNull(t)) {
		pr = cJSON_GetObjectItemCaseSensitive(t, "proofs");
		if (!cJSON_IsArray(pr)) {
			result(out, ENGY_VERDICT_UNPROVEN, "malformed");
			goto out;
		}
		proofs = calloc((size_t)cJSON_GetArraySize(pr) + 1,
				sizeof(*proofs));
		if (!proofs) {
			rc = -ENOMEM;
			goto out;
		}
		cJSON_ArrayForEach(p, pr)
		{
			if (!cJSON_IsString(p)) {
				result(out, ENGY_VERDICT_UNPROVEN, "malformed");
				goto out;
			}
			proofs[k++] = p->valuestring;
		}
		engy_ga_toploc_hash(proofs, k, h->toploc_hash);
	} else {
		engy_ga_toploc_hash(NULL, 0, h->toploc_hash);
	}
	engy_ga_trace_root(gemm_root, h->toploc_hash, tr);
	if (memcmp(tr, h->trace_root, 32)) {
		result(out, ENGY_VERDICT_CHEAT, "trace_root");
		goto out;
	}
	memcpy(h->bind.spec_root, v->spec_root, 32);
	engy_ga_ids_hash(ids, n, h->bind.ids_hash);
	h->bind.n_prompt = np;
	h->bind.n_tokens = nt;
	rc = 0;
out:
	free(proofs);
	free(ids);
	cJSON_Delete(c);
	return rc;
}

/* The caller's sizes where set, else the instance's. */
static void params_of(const struct vgemm *v, const struct engy_proof_limits *in,
		      struct engy_ga_params *p)
{
	struct engy_proof_limits l;
	size_t n;

	*p = v->def;
	if (!in)
		return;
	memset(&l, 0, sizeof(l));
	n = in->size < sizeof(l) ? in->size : sizeof(l);
	memcpy(&l, in, n);
	if (l.gemm_layers)
		p->layers = l.gemm_layers;
	if (l.gemm_tokens)
		p->tokens = l.gemm_tokens;
	if (l.gemm_projections)
		p->projections = l.gemm_projections;
	if (l.gemm_spots)
		p->spots = l.gemm_spots;
	if (l.gemm_z >= 1)
		p->z = l.gemm_z;
	if (l.gemm_c_el >= 1)
		p->c_el = l.gemm_c_el;
	if ((uint64_t)p->layers * p->tokens > ENGY_GA_MAX_CELLS)
		p->tokens = ENGY_GA_MAX_CELLS / (p->layers ? p->layers : 1);
}

static int gemm_challenge(void *inst, const char *commitment, size_t len,
			  const char *request_id, const uint8_t nonce[32],
			  const struct engy_proof_limits *limits, char **json,
			  struct engy_proof_result *out)
{
	struct vgemm *v = inst;
	struct engy_ga_cell *cells;
	struct engy_ga_params p;
	uint8_t seed[32];
	struct held h;
	size_t n = 0;
	int rc;

	*json = NULL;
	memset(out, 0, sizeof(*out));
	if (!v->ck)
		return result(out, ENGY_VERDICT_UNPROVEN, "not_started");
	rc = hold(v, commitment, len, &h, out);
	if (rc)
		return rc < 0 ? rc : 0;
	params_of(v, limits, &p);
	engy_ga_seed(v->spec_root, h.trace_root, request_id ? request_id : "",
		     nonce, seed);
	cells = malloc((size_t)p.layers * p.tokens * sizeof(*cells) + 1);
	if (!cells)
		return -ENOMEM;
	rc = engy_ga_challenge(seed, engy_ga_ckpt_layers(v->ck),
			       h.bind.n_prompt, h.bind.n_tokens, &p, cells,
			       (size_t)p.layers * p.tokens, &n);
	if (rc == -ENOMEM) {
		free(cells);
		return rc;
	}
	if (rc || !n) {
		free(cells);
		return result(out, ENGY_VERDICT_UNPROVEN,
			      rc ? "malformed" : "too_short");
	}
	*json = engy_ga_challenge_json(nonce, cells, n);
	free(cells);
	return *json ? 0 : -ENOMEM;
}

static int gemm_check(void *inst, const char *commitment, size_t len,
		      const char *request_id, const uint8_t nonce[32],
		      const char *opening, size_t olen,
		      const struct engy_proof_limits *limits,
		      struct engy_proof_result *out)
{
	struct vgemm *v = inst;
	struct engy_ga_opening *op = NULL;
	struct engy_ga_ckpt_use *u;
	struct engy_ga_weights w;
	struct engy_ga_verdict gv;
	struct engy_ga_params p;
	uint8_t seed[32];
	struct held h;
	char err[160];
	cJSON *d;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!v->ck)
		return result(out, ENGY_VERDICT_UNPROVEN, "not_started");
	rc = hold(v, commitment, len, &h, out);
	if (rc)
		return rc < 0 ? rc : 0;
	if (!opening)
		return result(out, ENGY_VERDICT_UNPROVEN, "no_opening");
	rc = engy_ga_opening_parse(opening, olen, &op, err, sizeof(err));
	if (rc == -ENOMEM)
		return rc;
	if (rc) {
		result(out, ENGY_VERDICT_UNPROVEN, "malformed");
		d = cJSON_CreateObject();
		if (d && cJSON_AddStringToObject(d, "error", err))
			out->detail = cJSON_PrintUnformatted(d);
		cJSON_Delete(d);
		return 0;
	}
	params_of(v, limits, &p);
	engy_ga_seed(v->spec_root, h.trace_root, request_id ? request_id : "",
		     nonce, seed);
	u = engy_ga_ckpt_use(v->ck, &w);
	if (!u) {
		engy_ga_opening_free(op);
		return -ENOMEM;
	}
	rc = engy_ga_check(op, seed, h.trace_root, h.toploc_hash, &h.bind, &p,
			   &w, &gv);
	engy_ga_ckpt_done(u);
	engy_ga_opening_free(op);
	if (rc)
		return rc;
	result(out,
	       gv.outcome == ENGY_GA_PASS    ? ENGY_VERDICT_PASS
	       : gv.outcome == ENGY_GA_CHEAT ? ENGY_VERDICT_CHEAT
					     : ENGY_VERDICT_UNPROVEN,
	       gv.reason);
	/* Evidence: metadata only (where, statistics), never values. */
	d = cJSON_CreateObject();
	if (d && cJSON_AddStringToObject(d, "where", gv.where) &&
	    cJSON_AddNumberToObject(d, "rho_max", gv.rho_max) &&
	    cJSON_AddNumberToObject(d, "products", gv.products) &&
	    cJSON_AddNumberToObject(d, "layers", p.layers) &&
	    cJSON_AddNumberToObject(d, "tokens", p.tokens) &&
	    cJSON_AddNumberToObject(d, "projections", p.projections) &&
	    cJSON_AddNumberToObject(d, "z", p.z))
		out->detail = cJSON_PrintUnformatted(d);
	cJSON_Delete(d);
	return 0;
}

static const struct engy_proof_ops gemm_ops = {
	.size = sizeof(struct engy_proof_ops),
	.scheme = "gemm",
	.challenge = gemm_challenge,
	.check = gemm_check,
};

ENGY_PLUGIN(.kind = ENGY_KIND_PROOF, .name = "verifier-gemm",
	    .version = PACKAGE_VERSION,
	    .description = "sampled GEMM audit (challenge and check)",
	    .opts = gemm_opts, .conf_size = sizeof(struct gemm_conf),
	    .create = gemm_create, .start = gemm_start, .stop = gemm_stop,
	    .destroy = gemm_destroy, .ops = &gemm_ops);
