/* SPDX-License-Identifier: MIT */
/*
 * lib/gemm's hashing: the known answers of specs/gemm-audit.md §8 (the
 * EMPTY leaf, a row's leaf, the ids and sampling hashes, a small trace's
 * gemm root, the TOPLOC hash, the trace root, the seed, the PRNG and a
 * challenge's expansion), every opened row's path folding back to the
 * sub-root, the trace builder's refusals, and the challenge and opening
 * JSON round trips.
 *
 * Oracle: independent for the known answers (computed by
 * tests/ref/gemm_audit.py, written from specs/gemm-audit.md alone);
 * the refusals and round trips are engy's own rules.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalogspec.h"
#include "gemm.h"
#include "gemm_int.h"
#include "merkle.h"

static void hexeq(const uint8_t b[32], const char *want)
{
	char hex[65];

	engy_mc_hex(b, 32, hex);
	ck_assert_str_eq(hex, want);
}

#define K(l, m, e, r)                                                          \
	(struct engy_ga_key)                                                   \
	{                                                                      \
		.layer = (l), .mm = (m), .expert = (e), .role = (r)            \
	}

static const uint8_t nonce[32] = {
	0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5,
	0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5,
	0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5,
};

static const float r00[] = { 1.0f, 2.0f }, r01[] = { 3.0f, 4.0f },
		   r02[] = { 0.5f, -0.5f }, y00[] = { 5.0f }, y02[] = { -1.0f },
		   e11[] = { 0.25f, 0.75f, 1.5f },
		   lm2[] = { 9.0f, 8.0f, 7.0f, 6.0f };

/* The trace of tests/ref/gemm_audit.py, rows offered out of order. */
static struct engy_ga_trace *kat_trace(struct engy_ga_bind *b)
{
	struct engy_ga_trace *t = engy_ga_trace_new(8);
	const uint32_t ids[] = { 1, 2, 3, 4 };
	struct engy_ga_key k;
	size_t i;

	ck_assert_ptr_nonnull(t);
	for (i = 0; i < 32; i++)
		b->spec_root[i] = (uint8_t)i;
	engy_ga_ids_hash(ids, 4, b->ids_hash);
	engy_ga_sampling_hash(0.7, 0.95, 20, 42, true, 64, b->sampling);
	b->n_prompt = 2;
	b->n_tokens = 4;
	k = K(ENGY_GA_LM_LAYER, ENGY_GA_MM_LM_HEAD, ENGY_GA_NO_EXPERT, 1);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 2, lm2, 4), 0);
	k = K(0, 0, ENGY_GA_NO_EXPERT, 0);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 2, r02, 2), 0);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 0, r00, 2), 0);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 1, r01, 2), 0);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 1, r01, 2), -EEXIST);
	k = K(1, ENGY_GA_MM_EXPERT_UP, 3, 1);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 1, e11, 3), 0);
	k = K(0, 0, ENGY_GA_NO_EXPERT, 1);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 2, y02, 1), 0);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 0, y00, 1), 0);
	return t;
}

START_TEST(kat_hashes)
{
	struct engy_ga_key k = K(3, ENGY_GA_MM_DOWN, ENGY_GA_NO_EXPERT, 1);
	const float row[] = { 1.0f, -2.5f, 0.125f };
	const char *proofs[] = { "/9kAAwABAAA=", "AAAA" };
	uint8_t out[32], gemm[32], tl[32], tr[32], seed[32];
	uint8_t e[ENGY_GA_MAX_DEPTH + 1][32];
	struct engy_ga_trace *t;
	struct engy_ga_bind b;
	struct engy_mh *h = engy_mh_new();
	struct engy_ga_prng p;
	char hex[32 * 17];
	size_t i, len = 0;

	engy_ga_empties(h, e);
	hexeq(e[0],
	      "c9720037026ff0ac2e4fe82c7ba13fa5ee7a950e7781a3e58469d8eea399456c");
	engy_mh_free(h);
	engy_ga_leaf(&k, 17, row, 3, out);
	hexeq(out,
	      "e714049eace01fcd9825be8da7f50630ac0b010b2441f3b4d23ea282ea9ac3c2");
	t = kat_trace(&b);
	hexeq(b.ids_hash,
	      "8b1ba88425cdd799fb99e83383c6451c67c2a0921df6dce89f9d73f1092fb1f6");
	hexeq(b.sampling,
	      "e2cdbcdd2e7856cdbfba78c5c6ec9b594dc177c5701251038a78ddb563fee987");
	ck_assert_int_eq(engy_ga_trace_gemm_root(t, &b, gemm), 0);
	hexeq(gemm,
	      "a53e10322329a14842aa790d4d51d71d7a6f10cc8a413a0f061d8b7ef48edc61");
	/* Rooted: no more rows; the same binding gives the same root. */
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 1, row, 3), -EBUSY);
	ck_assert_int_eq(engy_ga_trace_gemm_root(t, &b, out), 0);
	ck_assert_mem_eq(out, gemm, 32);
	b.n_prompt = 3;
	ck_assert_int_eq(engy_ga_trace_gemm_root(t, &b, out), -EINVAL);
	engy_ga_toploc_hash(proofs, 2, tl);
	hexeq(tl,
	      "a59ad98b2c7bd43d652441ac4ada0fcc44fc43ff196007e6a7e610fd387c8197");
	engy_ga_trace_root(gemm, tl, tr);
	hexeq(tr,
	      "422967b472fb817f5b2a1de0c2655395b6e152e9d23a2769a663aee1673878bf");
	engy_ga_toploc_hash(NULL, 0, out);
	for (i = 0; i < 32; i++)
		ck_assert_uint_eq(out[i], 0);
	engy_ga_seed(b.spec_root, tr, "req-1", nonce, seed);
	hexeq(seed,
	      "8ae165a7a8015568cd806c2ccd3c542779435420b1a26fcdddbb2eaa5b2fb2ca");
	engy_ga_prng_init(&p, seed);
	for (i = 0; i < 5; i++)
		len += (size_t)snprintf(
			hex + len, sizeof(hex) - len, "%s%016llx", i ? " " : "",
			(unsigned long long)engy_ga_prng_u64(&p));
	ck_assert_str_eq(hex, "7dc5c15fc86e90e6 526c8fee72d10292 "
			      "e3b16765ecedc811 48c5440ed68be73e "
			      "69b6611a1d355984");
	ck_assert_uint_eq(engy_ga_prng_below(&p, 7), 2);
	ck_assert_uint_eq(engy_ga_prng_below(&p, 1000), 39);
	ck_assert_uint_eq(engy_ga_prng_below(&p, 3), 0);
	engy_ga_trace_free(t);
}
END_TEST

START_TEST(kat_challenge)
{
	static const struct engy_ga_cell want[] = {
		{ 1, 19 }, { 1, 14 }, { 1, 34 }, { 1, 17 },
		{ 2, 13 }, { 2, 18 }, { 2, 17 }, { 2, 2 },
		{ 4, 16 }, { 4, 38 }, { 4, 18 }, { 4, 5 },
	};
	struct engy_ga_params p = { .layers = 3, .tokens = 4 };
	struct engy_ga_cell c[16], *pc;
	uint8_t seed[32], n2[32];
	size_t n, i;
	char *j, err[128];

	engy_mc_unhex(
		"8ae165a7a8015568cd806c2ccd3c542779435420b1a26fcdddbb2eaa5b2fb2ca",
		seed, 32);
	ck_assert_int_eq(engy_ga_challenge(seed, 6, 5, 40, &p, c, 16, &n), 0);
	ck_assert_uint_eq(n, 12);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(c[i].layer, want[i].layer);
		ck_assert_uint_eq(c[i].pos, want[i].pos);
	}
	ck_assert_int_eq(engy_ga_challenge(seed, 6, 5, 40, &p, c, 11, &n),
			 -ENOSPC);
	/* Every layer and lm_head, each position once, within range. */
	p.layers = 100;
	p.tokens = 100;
	{
		struct engy_ga_cell big[8 * 8];
		bool seen[8][8] = { { false } };

		ck_assert_int_eq(
			engy_ga_challenge(seed, 2, 3, 6, &p, big, 64, &n), 0);
		ck_assert_uint_eq(n, 5 + 5 + 3);
		for (i = 0; i < n; i++) {
			unsigned l = big[i].layer == ENGY_GA_LM_LAYER
					     ? 2
					     : big[i].layer;

			ck_assert_uint_lt(big[i].pos, 5);
			if (l == 2)
				ck_assert_uint_ge(big[i].pos, 2);
			ck_assert(!seen[l][big[i].pos]);
			seen[l][big[i].pos] = true;
		}
	}
	/* Nothing to challenge in a one-token request. */
	ck_assert_int_eq(engy_ga_challenge(seed, 2, 1, 1, &p, c, 16, &n), 0);
	ck_assert_uint_eq(n, 0);
	/* The JSON and its parse. */
	j = engy_ga_challenge_json(nonce, want, 3);
	ck_assert_str_eq(j, "{\"nonce\":\""
			    "a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5"
			    "a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5"
			    "\",\"cells\":[[1,19],[1,14],[1,34]]}");
	ck_assert_int_eq(engy_ga_challenge_parse(j, strlen(j), n2, &pc, &n, err,
						 sizeof(err)),
			 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_mem_eq(n2, nonce, 32);
	ck_assert_uint_eq(pc[2].pos, 34);
	free(pc);
	free(j);
	ck_assert_int_eq(
		engy_ga_challenge_parse("{\"nonce\":\"a5\",\"cells\":[]}", 25,
					n2, &pc, &n, err, sizeof(err)),
		-EINVAL);
	{
		static const char *bad[] = {
			"[[1,-2]]",  "[[1]]", "[[65536,1]]",
			"[[1,2.5]]", "{}",    "[[1,4294967296]]"
		};
		char buf[256];
		size_t b;

		for (b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
			snprintf(buf, sizeof(buf),
				 "{\"nonce\":\"%064d\",\"cells\":%s}", 0,
				 bad[b]);
			ck_assert_int_eq(engy_ga_challenge_parse(
						 buf, strlen(buf), n2, &pc, &n,
						 err, sizeof(err)),
					 -EINVAL);
		}
		snprintf(buf, sizeof(buf),
			 "{\"nonce\":\"%064d\",\"cells\":[[65535,7]]}", 0);
		ck_assert_int_eq(engy_ga_challenge_parse(buf, strlen(buf), n2,
							 &pc, &n, err,
							 sizeof(err)),
				 0);
		ck_assert_uint_eq(pc[0].layer, ENGY_GA_LM_LAYER);
		free(pc);
	}
}
END_TEST

START_TEST(keys_and_refusals)
{
	struct engy_ga_trace *t = engy_ga_trace_new(4);
	struct engy_ga_key k;
	const float v[1] = { 1 };
	char name[96];
	uint32_t e;
	int mm;

	ck_assert_int_eq(engy_ga_mm_parse("experts.12.down_proj", &mm, &e), 0);
	ck_assert_int_eq(mm, ENGY_GA_MM_EXPERT_DOWN);
	ck_assert_uint_eq(e, 12);
	ck_assert_int_eq(engy_ga_mm_parse("shared_expert_gate", &mm, &e), 0);
	ck_assert_int_eq(mm, ENGY_GA_MM_SHARED_EGATE);
	ck_assert_uint_eq(e, ENGY_GA_NO_EXPERT);
	ck_assert_int_eq(engy_ga_mm_parse("experts.01.up_proj", &mm, &e),
			 -EINVAL);
	ck_assert_int_eq(engy_ga_mm_parse("experts..up_proj", &mm, &e),
			 -EINVAL);
	ck_assert_int_eq(engy_ga_mm_parse("q_norm", &mm, &e), -EINVAL);
	ck_assert_int_eq(engy_ga_mm_tensor(2, ENGY_GA_MM_EXPERT_UP, 5, false,
					   name, sizeof(name)),
			 0);
	ck_assert_str_eq(name, "model.layers.2.mlp.experts.5.up_proj");
	ck_assert_int_eq(engy_ga_mm_tensor(ENGY_GA_LM_LAYER, ENGY_GA_MM_LM_HEAD,
					   0, true, name, sizeof(name)),
			 0);
	ck_assert_str_eq(name, "model.embed_tokens");
	ck_assert_int_eq(engy_ga_mm_tensor(0, ENGY_GA_MM_ROUTER, 0, false, name,
					   sizeof(name)),
			 0);
	ck_assert_str_eq(name, "model.layers.0.mlp.gate");
	k = K(0, ENGY_GA_MM_EXPERT_UP, ENGY_GA_NO_EXPERT, 0);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 0, v, 1), -EINVAL);
	k = K(0, ENGY_GA_MM_Q, 3, 0);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 0, v, 1), -EINVAL);
	k = K(0, ENGY_GA_MM_LM_HEAD, ENGY_GA_NO_EXPERT, 0);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 0, v, 1), -EINVAL);
	k = K(0, ENGY_GA_MM_Q, ENGY_GA_NO_EXPERT, 2);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 0, v, 1), -EINVAL);
	k = K(0, ENGY_GA_MM_Q, ENGY_GA_NO_EXPERT, 0);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 4, v, 1), -ERANGE);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 3, v, 0), -EINVAL);
	ck_assert_int_eq(engy_ga_trace_add(t, &k, 3, v, 1), 0);
	ck_assert_uint_gt(engy_ga_trace_bytes(t), 32);
	{
		struct engy_ga_bind b = { .n_prompt = 1, .n_tokens = 3 };
		uint8_t r[32];

		/* A row past the bound's n_tokens. */
		ck_assert_int_eq(engy_ga_trace_gemm_root(t, &b, r), -ERANGE);
		b.n_tokens = 0;
		ck_assert_int_eq(engy_ga_trace_gemm_root(t, &b, r), -EINVAL);
	}
	engy_ga_trace_free(t);
}
END_TEST

/* Every opened row folds to its token root, that to the sub root, that
 * to the gemm root; the parse of the JSON gives back the same. */
START_TEST(opening_roundtrip)
{
	struct engy_ga_cell cells[] = { { 0, 2 }, { ENGY_GA_LM_LAYER, 2 } };
	struct engy_ga_opening *op, *op2;
	struct engy_ga_open *o;
	struct engy_ga_bind b;
	struct engy_ga_trace *t = kat_trace(&b);
	struct engy_mh *h = engy_mh_new();
	struct engy_ga_key k;
	uint8_t gemm[32], root[32], g2[32];
	char *j, *j2, err[128];
	size_t i, r;

	ck_assert_int_eq(engy_ga_trace_gemm_root(t, &b, gemm), 0);
	o = engy_ga_open_new(t, cells, 2);
	ck_assert_ptr_nonnull(o);
	k = K(0, 0, ENGY_GA_NO_EXPERT, 0);
	ck_assert_int_eq(engy_ga_open_add(o, &k, 0, r00, 2), 0); /* ignored */
	ck_assert_int_eq(engy_ga_open_add(o, &k, 2, r00, 2), -EBADMSG);
	ck_assert_int_eq(engy_ga_open_add(o, &k, 2, r02, 2), 0);
	ck_assert_int_eq(engy_ga_open_add(o, &k, 2, r02, 2), -EEXIST);
	/* Incomplete: the Y row of (0, 2) and lm_head are missing. */
	ck_assert_ptr_null(engy_ga_open_json(o));
	ck_assert_int_eq(errno, ENOENT);
	k = K(0, 0, ENGY_GA_NO_EXPERT, 1);
	ck_assert_int_eq(engy_ga_open_add(o, &k, 2, y02, 1), 0);
	k = K(ENGY_GA_LM_LAYER, ENGY_GA_MM_LM_HEAD, ENGY_GA_NO_EXPERT, 1);
	ck_assert_int_eq(engy_ga_open_add(o, &k, 2, lm2, 4), 0);
	j = engy_ga_open_json(o);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(
		engy_ga_opening_parse(j, strlen(j), &op, err, sizeof(err)), 0);
	ck_assert_uint_eq(op->n_osubs, 3);
	ck_assert_uint_eq(op->n_subs, 4);
	ck_assert_uint_eq(op->n_cells, 2);
	for (i = 0; i < op->n_osubs; i++) {
		const struct engy_ga_osub *s = &op->subs[i];
		uint8_t troot[32], leaf[32];

		for (r = 0; r < s->n_rows; r++) {
			engy_ga_leaf(&s->key, s->rows[r].pos, s->rows[r].data,
				     s->rows[r].n, leaf);
			engy_ga_fold(h, leaf, s->rows[r].pos, s->rows[r].path,
				     s->rows[r].depth, troot);
		}
		engy_ga_sub_leaf(h, &s->key, troot, leaf);
		ck_assert_uint_eq(s->depth, 2);
		engy_ga_fold(h, leaf, s->index, s->path, s->depth, root);
		engy_ga_gemm_hash(h, &op->bind, op->n_subs, root, g2);
		ck_assert_mem_eq(g2, gemm, 32);
	}
	j2 = engy_ga_opening_json(op);
	ck_assert_str_eq(j, j2);
	ck_assert_int_eq(
		engy_ga_opening_parse(j2, strlen(j2), &op2, err, sizeof(err)),
		0);
	engy_ga_opening_free(op2);
	/* Refusals: truncated, wrong hashing, a bad key. */
	ck_assert_int_eq(
		engy_ga_opening_parse(j, strlen(j) - 1, &op2, err, sizeof(err)),
		-EINVAL);
	ck_assert_int_eq(engy_ga_opening_parse("{\"hashing\":\"engy-ga0\"}", 22,
					       &op2, err, sizeof(err)),
			 -EINVAL);
	free(j2);
	free(j);
	engy_ga_opening_free(op);
	engy_ga_open_free(o);
	engy_ga_trace_free(t);
	engy_mh_free(h);
}
END_TEST

/* The model spec file's gemm_* fields: defaults, values, refusals. */
START_TEST(spec_fields)
{
	static const char root[] = "{\"model_root\":\"000000000000000000000000"
				   "0000000000000000000000000000000000000000\"";
	static const char *const bad[] = {
		",\"gemm_layers\":0}",
		",\"gemm_tokens\":2.5}",
		",\"gemm_z\":\"6\"}",
		",\"gemm_rate\":1.5}",
		",\"gemm_projections\":65}",
		",\"gemm_c_el\":0.5}",
		",\"gemm_layers\":100,\"gemm_tokens\":100}",
	};
	struct engy_cspec cs;
	char buf[512], err[160];
	size_t i;

	snprintf(buf, sizeof(buf), "%s}", root);
	ck_assert_int_eq(
		engy_cspec_parse(buf, strlen(buf), &cs, err, sizeof(err)), 0);
	ck_assert_uint_eq(cs.gemm.layers, ENGY_CS_GEMM_LAYERS);
	ck_assert_uint_eq(cs.gemm.tokens, ENGY_CS_GEMM_TOKENS);
	ck_assert_uint_eq(cs.gemm.projections, ENGY_CS_GEMM_PROJECTIONS);
	ck_assert_uint_eq(cs.gemm.spots, ENGY_CS_GEMM_SPOTS);
	ck_assert(cs.gemm.z == ENGY_CS_GEMM_Z && cs.gemm.rate == 0.05);
	ck_assert_uint_eq(cs.gemm.have, 0);
	snprintf(buf, sizeof(buf),
		 "%s,\"gemm_layers\":3,\"gemm_tokens\":16,"
		 "\"gemm_projections\":4,\"gemm_spots\":0,\"gemm_z\":8,"
		 "\"gemm_c_el\":7.5,\"gemm_rate\":0.25}",
		 root);
	ck_assert_int_eq(
		engy_cspec_parse(buf, strlen(buf), &cs, err, sizeof(err)), 0);
	ck_assert_uint_eq(cs.gemm.layers, 3);
	ck_assert_uint_eq(cs.gemm.tokens, 16);
	ck_assert_uint_eq(cs.gemm.projections, 4);
	ck_assert_uint_eq(cs.gemm.spots, 0);
	ck_assert(cs.gemm.z == 8 && cs.gemm.c_el == 7.5 &&
		  cs.gemm.rate == 0.25);
	ck_assert_uint_eq(cs.gemm.have, 0x7f);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(buf, sizeof(buf), "%s%s", root, bad[i]);
		ck_assert_int_eq(engy_cspec_parse(buf, strlen(buf), &cs, err,
						  sizeof(err)),
				 -EINVAL);
		ck_assert_ptr_nonnull(strstr(err, "gemm_"));
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gemm");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, kat_hashes);
	tcase_add_test(tc, kat_challenge);
	tcase_add_test(tc, keys_and_refusals);
	tcase_add_test(tc, opening_roundtrip);
	tcase_add_test(tc, spec_fields);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
