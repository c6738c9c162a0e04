/* SPDX-License-Identifier: MIT */
/*
 * verifier-gemm as the host sees it: dlopen() the built module, fill its
 * conf, refuse to start on a checkpoint whose model root is not the
 * pinned one, then on a tiny request run by lib/qwen3: challenge() a
 * commitment, answer with lib/gemm's opening builder, check() it; and
 * every change to the commitment or the opening gets its verdict (a free
 * field changes nothing; a bound one is a cheat; a malformed or missing
 * opening is unproven).
 *
 * Oracle: engy itself (the plugin against lib/gemm and lib/qwen3).
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <engy/plugin.h>
#include <engy/proof.h>

#include "fake_host.h"
#include "gemm.h"
#include "gemm_testlib.h"
#include "hex.h"
#include "ref_testlib.h"

static void *dl;
static const struct engy_plugin *plug;
static const struct engy_proof_ops *ops;

static const struct engy_opt *opt(const char *name)
{
	const struct engy_opt *o;

	for (o = plug->opts; o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o;
	ck_abort_msg("no option %s", name);
	return NULL;
}

static void *conf_for(const char *dir, const char *root)
{
	uint8_t *conf = calloc(1, plug->conf_size);
	const struct engy_opt *o;

	ck_assert_ptr_nonnull(conf);
	for (o = plug->opts; o->name; o++) {
		int64_t i;
		double d;

		if (o->type == ENGY_OPT_INT) {
			i = strtoll(o->def, NULL, 10);
			memcpy(conf + o->offset, &i, sizeof(i));
		} else if (o->type == ENGY_OPT_FLOAT) {
			d = strtod(o->def, NULL);
			memcpy(conf + o->offset, &d, sizeof(d));
		}
	}
	memcpy(conf + opt("checkpoint")->offset, &dir, sizeof(dir));
	memcpy(conf + opt("spec_root")->offset, &root, sizeof(root));
	return conf;
}

static const uint8_t nonce[32] = { 7, 7, 7 };
static const uint32_t prompt[] = { 17, 230, 5, 99, 311 };

/* The request's trace, its commitment JSON (with @rid in the gemm
 * member) and the rows. */
struct req {
	struct run r;
	struct engy_ga_trace *t;
	uint8_t spec[32], gemm[32], trace[32], sampling[32];
};

static char *commitment(const struct req *q, const char *rid, const char *proof,
			const uint32_t *out_ids, const uint8_t *sampling)
{
	char hex[65], *s;
	cJSON *c = cJSON_CreateObject(), *g, *t, *a;
	uint32_t i;

	cJSON_AddStringToObject(c, "model_root", "m");
	a = cJSON_AddArrayToObject(c, "output_token_ids");
	for (i = q->r.n_prompt; i < q->r.n_tokens; i++)
		cJSON_AddItemToArray(
			a,
			cJSON_CreateNumber(out_ids ? out_ids[i] : q->r.ids[i]));
	t = cJSON_AddObjectToObject(c, "toploc");
	a = cJSON_AddArrayToObject(t, "proofs");
	cJSON_AddItemToArray(a, cJSON_CreateString(proof));
	a = cJSON_AddArrayToObject(t, "prompt_ids");
	for (i = 0; i < q->r.n_prompt; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(q->r.ids[i]));
	g = cJSON_AddObjectToObject(c, "gemm");
	cJSON_AddStringToObject(g, "hashing", ENGY_GA_HASHING);
	engy_hex_print(q->gemm, 32, hex);
	cJSON_AddStringToObject(g, "gemm_root", hex);
	engy_hex_print(q->spec, 32, hex);
	cJSON_AddStringToObject(g, "spec_root", hex);
	cJSON_AddNumberToObject(g, "n_prompt", q->r.n_prompt);
	cJSON_AddNumberToObject(g, "n_tokens", q->r.n_tokens);
	engy_hex_print(sampling ? sampling : q->sampling, 32, hex);
	cJSON_AddStringToObject(g, "sampling", hex);
	cJSON_AddStringToObject(g, "rid", rid);
	engy_hex_print(q->trace, 32, hex);
	cJSON_AddStringToObject(g, "trace_root", hex);
	s = cJSON_PrintUnformatted(c);
	cJSON_Delete(c);
	return s;
}

static void make_req(const char *dir, struct req *q)
{
	const char *proofs[] = { "/9kAAwABAAA=" };
	struct engy_ga_bind b;
	uint8_t tl[32];
	size_t i;

	run_model(dir, Q3_PROFILE_SPLITK, 1, prompt, 5, 6, &q->r);
	model_root(dir, q->spec);
	q->t = engy_ga_trace_new(q->r.n_tokens);
	for (i = 0; i < q->r.n; i++) {
		struct engy_ga_key k;

		engy_ga_key_unpack(q->r.r[i].key, &k);
		ck_assert_int_eq(engy_ga_trace_add(q->t, &k, q->r.r[i].pos,
						   q->r.r[i].d, q->r.r[i].n),
				 0);
	}
	memcpy(b.spec_root, q->spec, 32);
	engy_ga_ids_hash(q->r.ids, q->r.n_tokens, b.ids_hash);
	b.n_prompt = q->r.n_prompt;
	b.n_tokens = q->r.n_tokens;
	engy_ga_sampling_hash(0, 1, 0, 0, false, 6, q->sampling);
	memcpy(b.sampling, q->sampling, 32);
	ck_assert_int_eq(engy_ga_trace_gemm_root(q->t, &b, q->gemm), 0);
	engy_ga_toploc_hash(proofs, 1, tl);
	engy_ga_trace_root(q->gemm, tl, q->trace);
}

/* The miner's answer to @chal. */
static char *answer(struct req *q, const char *chal)
{
	struct engy_ga_cell *cells;
	struct engy_ga_open *o;
	uint8_t n2[32];
	size_t n, i;
	char err[128], *j;

	ck_assert_msg(engy_ga_challenge_parse(chal, strlen(chal), n2, &cells,
					      &n, err, sizeof(err)) == 0,
		      "%s", err);
	o = engy_ga_open_new(q->t, cells, n);
	ck_assert_ptr_nonnull(o);
	for (i = 0; i < q->r.n; i++) {
		struct engy_ga_key k;

		engy_ga_key_unpack(q->r.r[i].key, &k);
		ck_assert_int_eq(engy_ga_open_add(o, &k, q->r.r[i].pos,
						  q->r.r[i].d, q->r.r[i].n),
				 0);
	}
	j = engy_ga_open_json(o);
	ck_assert_ptr_nonnull(j);
	engy_ga_open_free(o);
	free(cells);
	return j;
}

static void verdict(void *inst, const char *c, const char *opening, int want,
		    const char *reason)
{
	struct engy_proof_result res;

	ck_assert_int_eq(ops->check(inst, c, strlen(c), "req-1", nonce, opening,
				    opening ? strlen(opening) : 0, NULL, &res),
			 0);
	ck_assert_msg(res.verdict == want && !strcmp(res.reason, reason),
		      "%d %s (%s), want %d %s", res.verdict, res.reason,
		      res.detail ? res.detail : "", want, reason);
	free(res.detail);
}

START_TEST(plugin)
{
	char *dir = tiny_model(true, 4, MKMODEL_QUANT_NONE);
	struct engy_host *h = fake_host_new("gemm0");
	struct engy_proof_result res;
	struct engy_proof_limits lim = { .size = sizeof(lim),
					 .gemm_layers = 1,
					 .gemm_tokens = 1 };
	char root[65], *c, *c2, *chal, *chal2, *open;
	uint32_t ids[512];
	uint8_t samp[32];
	struct req q;
	void *conf, *inst;

	dl = dlopen(VERIFIER_GEMM_SO, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(dl != NULL, "dlopen: %s", dlerror());
	plug = dlsym(dl, ENGY_PLUGIN_SYMBOL);
	ck_assert_ptr_nonnull(plug);
	ck_assert_uint_eq(plug->kind, ENGY_KIND_PROOF);
	ck_assert_uint_eq(plug->abi_minor, 5);
	ops = plug->ops;
	ck_assert_str_eq(ops->scheme, "gemm");
	ck_assert_ptr_null(ops->prove);
	ck_assert_ptr_null(ops->verify);
	make_req(dir, &q);
	/* Another root: refused at start. */
	conf = conf_for(dir, "00000000000000000000000000000000"
			     "00000000000000000000000000000000");
	ck_assert_int_eq(plug->create(h, conf, &inst), 0);
	ck_assert_int_eq(plug->start(inst), -EINVAL);
	ck_assert_ptr_nonnull(strstr(fake_host_log(h), "checkpoint_refused"));
	plug->destroy(inst);
	free(conf);
	/* A malformed root: refused at create. */
	conf = conf_for(dir, "12");
	ck_assert_int_eq(plug->create(h, conf, &inst), -EINVAL);
	free(conf);
	engy_hex_print(q.spec, 32, root);
	conf = conf_for(dir, root);
	ck_assert_int_eq(plug->create(h, conf, &inst), 0);
	ck_assert_int_eq(plug->start(inst), 0);

	/* The honest round. */
	c = commitment(&q, "r1", "/9kAAwABAAA=", NULL, NULL);
	ck_assert_int_eq(ops->challenge(inst, c, strlen(c), "req-1", nonce,
					NULL, &chal, &res),
			 0);
	ck_assert_ptr_nonnull(chal);
	open = answer(&q, chal);
	verdict(inst, c, open, ENGY_VERDICT_PASS, "ok");
	/* A free field (the backend's rid) changes nothing. */
	c2 = commitment(&q, "another-rid", "/9kAAwABAAA=", NULL, NULL);
	ck_assert_int_eq(ops->challenge(inst, c2, strlen(c2), "req-1", nonce,
					NULL, &chal2, &res),
			 0);
	ck_assert_str_eq(chal, chal2);
	verdict(inst, c2, open, ENGY_VERDICT_PASS, "ok");
	free(chal2);
	free(c2);
	/* The model spec's sizes reach the challenge. */
	ck_assert_int_eq(ops->challenge(inst, c, strlen(c), "req-1", nonce,
					&lim, &chal2, &res),
			 0);
	ck_assert_ptr_nonnull(strstr(chal2, "\"cells\":[["));
	ck_assert_ptr_null(strstr(chal2, "],["));
	free(chal2);
	/* Bound fields: sampling, the TOPLOC member, the output ids. */
	memcpy(samp, q.sampling, 32);
	samp[0] ^= 1;
	c2 = commitment(&q, "r1", "/9kAAwABAAA=", NULL, samp);
	verdict(inst, c2, open, ENGY_VERDICT_CHEAT, "sampling");
	free(c2);
	c2 = commitment(&q, "r1", "AAAA", NULL, NULL);
	verdict(inst, c2, open, ENGY_VERDICT_CHEAT, "trace_root");
	ck_assert_int_eq(ops->challenge(inst, c2, strlen(c2), "req-1", nonce,
					NULL, &chal2, &res),
			 0);
	ck_assert_ptr_null(chal2);
	ck_assert_int_eq(res.verdict, ENGY_VERDICT_CHEAT);
	free(c2);
	memcpy(ids, q.r.ids, sizeof(ids));
	ids[q.r.n_tokens - 2] += 1;
	c2 = commitment(&q, "r1", "/9kAAwABAAA=", ids, NULL);
	verdict(inst, c2, open, ENGY_VERDICT_CHEAT, "ids");
	free(c2);
	/* Another request id: another seed, other cells. */
	{
		struct engy_proof_result r2;

		ck_assert_int_eq(ops->check(inst, c, strlen(c), "req-2", nonce,
					    open, strlen(open), NULL, &r2),
				 0);
		ck_assert_int_eq(r2.verdict, ENGY_VERDICT_CHEAT);
		ck_assert_str_eq(r2.reason, "cells");
		free(r2.detail);
	}
	/* No answer, a malformed one, no gemm member. */
	verdict(inst, c, NULL, ENGY_VERDICT_UNPROVEN, "no_opening");
	verdict(inst, c, "{\"hashing\":", ENGY_VERDICT_UNPROVEN, "malformed");
	verdict(inst, "{\"gemm\":null}", open, ENGY_VERDICT_UNPROVEN,
		"no_gemm");
	verdict(inst, "[1]", open, ENGY_VERDICT_UNPROVEN, "malformed");
	ck_assert_int_eq(ops->challenge(inst, "{}", 2, "req-1", nonce, NULL,
					&chal2, &res),
			 0);
	ck_assert_ptr_null(chal2);
	ck_assert_str_eq(res.reason, "no_gemm");

	free(open);
	free(chal);
	free(c);
	plug->destroy(inst);
	free(conf);
	engy_ga_trace_free(q.t);
	run_free(&q.r);
	fake_host_free(h);
	dlclose(dl);
	rm_model(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("verifier_gemm");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, plugin);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
