/* SPDX-License-Identifier: MIT */
/*
 * The GEMM audit end to end on generated checkpoints: lib/qwen3 runs a
 * request one token at a time with the matmul hook capturing every
 * audited row (so a hooked row's position is the token fed), the rows
 * make a trace, an auditor's challenge is opened and engy_ga_check()
 * judges it against the verifier's own weights (lib/gemm's checkpoint
 * reader).  Honest runs pass under every kernel profile and thread
 * count; each tamper (INT4 weights, a weight row from another tensor, a
 * shifted row, swapped FP8 scale rows, rows spliced from another token,
 * layer or request at commit or at opening time, a skipped layer, other
 * output ids, a changed binding, other cells, a missing row, MoE rows
 * relabelled to an expert the router did not pick) fails for its own
 * reason.  The largest honest rho and the smallest INT4 rho are printed.
 *
 * Oracle: engy's own (the engine and the rules of specs/gemm-audit.md);
 * the pass/fail split rests on the weights the engine actually used
 * (tampered checkpoints are written to disk and run).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalogspec.h"
#include "fsutil.h"
#include "gemm.h"
#include "gemm_ckpt.h"
#include "gemm_int.h"
#include "gemm_testlib.h"
#include "modelspec.h"
#include "qwen3.h"
#include "ref_testlib.h"

/* ---- The audit of one run ---- */

static const uint8_t nonce1[32] = { 1, 2, 3 }, nonce2[32] = { 9 };
static const char *const proofs[] = { "/9kAAwABAAA=" };

struct audit {
	struct engy_ga_ckpt *ck; /* the verifier's */
	uint8_t spec_root[32];
	struct engy_ga_params p;
	/* What differs from the honest protocol. */
	const uint32_t *auditor_ids; /* the commitment's ids, else the run's */
	bool other_sampling, other_toploc, other_spec, other_nonce_cells;
	const uint8_t *nonce; /* NULL: nonce1 */
	void (*mutate)(struct engy_ga_opening *o, void *arg);
	void *arg;
};

static void bind_of(const struct audit *a, const uint32_t *ids,
		    const struct run *r, bool other_sampling,
		    struct engy_ga_bind *b)
{
	memcpy(b->spec_root, a->spec_root, 32);
	engy_ga_ids_hash(ids, r->n_tokens, b->ids_hash);
	b->n_prompt = r->n_prompt;
	b->n_tokens = r->n_tokens;
	engy_ga_sampling_hash(other_sampling ? 0.5 : 0.0, 1.0, 0, 0, false,
			      r->n_tokens - r->n_prompt, b->sampling);
}

/* The opening JSON of @r for the challenge of @nonce (malloc'd). */
static char *open_run(const struct audit *a, const struct run *r,
		      const uint8_t nonce[32], uint8_t trace_root[32],
		      uint8_t seed[32])
{
	struct engy_ga_trace *t = engy_ga_trace_new(r->n_tokens);
	struct engy_ga_cell cells[ENGY_GA_MAX_CELLS];
	uint8_t gemm[32], tl[32], cseed[32];
	struct engy_ga_bind b;
	struct engy_ga_open *o;
	size_t i, n;
	char *j;

	bind_of(a, r->ids, r, false, &b);
	for (i = 0; i < r->n; i++) {
		struct engy_ga_key k;

		engy_ga_key_unpack(r->r[i].key, &k);
		ck_assert_int_eq(engy_ga_trace_add(t, &k, r->r[i].pos,
						   r->r[i].d, r->r[i].n),
				 0);
	}
	ck_assert_int_eq(engy_ga_trace_gemm_root(t, &b, gemm), 0);
	engy_ga_toploc_hash(proofs, 1, tl);
	engy_ga_trace_root(gemm, tl, trace_root);
	engy_ga_seed(a->spec_root, trace_root, "req-1", nonce, seed);
	engy_ga_seed(a->spec_root, trace_root, "req-1",
		     a->other_nonce_cells ? nonce2 : nonce, cseed);
	ck_assert_int_eq(engy_ga_challenge(cseed, engy_ga_ckpt_layers(a->ck),
					   r->n_prompt, r->n_tokens, &a->p,
					   cells, ENGY_GA_MAX_CELLS, &n),
			 0);
	ck_assert_uint_gt(n, 0);
	o = engy_ga_open_new(t, cells, n);
	ck_assert_ptr_nonnull(o);
	for (i = 0; i < r->n; i++) {
		struct engy_ga_key k;

		engy_ga_key_unpack(r->r[i].key, &k);
		ck_assert_int_eq(engy_ga_open_add(o, &k, r->r[i].pos, r->r[i].d,
						  r->r[i].n),
				 0);
	}
	j = engy_ga_open_json(o);
	ck_assert_ptr_nonnull(j);
	engy_ga_open_free(o);
	engy_ga_trace_free(t);
	return j;
}

static void audit(const struct audit *a, const struct run *r,
		  struct engy_ga_verdict *v)
{
	uint8_t tr[32], seed[32], tl[32];
	struct engy_ga_opening *op;
	struct engy_ga_weights w;
	struct engy_ga_ckpt_use *u;
	struct engy_ga_bind b;
	char err[128], *j;
	const char *other[] = { "AAAA" };

	j = open_run(a, r, a->nonce ? a->nonce : nonce1, tr, seed);
	ck_assert_msg(
		engy_ga_opening_parse(j, strlen(j), &op, err, sizeof(err)) == 0,
		"%s", err);
	free(j);
	if (a->mutate)
		a->mutate(op, a->arg);
	bind_of(a, a->auditor_ids ? a->auditor_ids : r->ids, r,
		a->other_sampling, &b);
	if (a->other_spec)
		b.spec_root[0] ^= 1;
	engy_ga_toploc_hash(a->other_toploc ? other : proofs, 1, tl);
	u = engy_ga_ckpt_use(a->ck, &w);
	ck_assert_ptr_nonnull(u);
	ck_assert_int_eq(engy_ga_check(op, seed, tr, tl, &b, &a->p, &w, v), 0);
	engy_ga_ckpt_done(u);
	engy_ga_opening_free(op);
}

static void expect(const struct audit *a, const struct run *r, int outcome,
		   const char *reason, const char *what)
{
	struct engy_ga_verdict v;

	audit(a, r, &v);
	ck_assert_msg(v.outcome == outcome && !strcmp(v.reason, reason),
		      "%s: %d %s (%s), want %d %s", what, v.outcome, v.reason,
		      v.where, outcome, reason);
	printf("gemm-audit: %-28s %-8s %-11s rho_max %.3g products %u %s\n",
	       what, v.outcome == ENGY_GA_PASS ? "pass" : "cheat", v.reason,
	       v.rho_max, v.products, v.where);
}

static struct engy_ga_ckpt *ckpt(const char *dir)
{
	struct engy_ga_ckpt *c;
	char err[256];

	ck_assert_msg(engy_ga_ckpt_open(dir, (size_t)1 << 30, &c, err,
					sizeof(err)) == 0,
		      "%s", err);
	return c;
}

static const uint32_t prompt[] = { 17, 230, 5, 99, 311 };

static struct audit audit_all(struct engy_ga_ckpt *ck, const char *dir)
{
	struct audit a = { .ck = ck };

	model_root(dir, a.spec_root);
	a.p.layers = 100; /* every layer and lm_head */
	a.p.tokens = 100; /* every position */
	a.p.projections = 2;
	a.p.spots = 4;
	a.p.z = 6;
	a.p.c_el = 6;
	return a;
}

/* ---- Honest runs ---- */

static void honest(bool moe)
{
	static const int profiles[] = {
		Q3_PROFILE_REF,	    Q3_PROFILE_SPLITK,	   Q3_PROFILE_WARP32,
		Q3_PROFILE_BF16ACT, Q3_PROFILE_SPLITK_F32, Q3_PROFILE_FP8_BF16,
		Q3_PROFILE_BF16DP,  Q3_PROFILE_AMX
	};
	char *dir = tiny_model(moe, 3, MKMODEL_QUANT_NONE);
	char *fp8 = tiny_model(moe, 3, MKMODEL_QUANT_FP8);
	struct engy_ga_ckpt *ck = ckpt(dir), *ck8 = ckpt(fp8);
	struct audit a = audit_all(ck, dir), a8 = audit_all(ck8, fp8);
	char what[64];
	struct run r;
	size_t i;
	unsigned th;

	for (i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		for (th = 1; th <= 2; th++) {
			run_model(dir, profiles[i], th, prompt, 5, 6, &r);
			snprintf(what, sizeof(what), "%s honest %s x%u",
				 moe ? "moe" : "dense",
				 engy_q3_profile_name(profiles[i]), th);
			expect(&a, &r, ENGY_GA_PASS, "ok", what);
			run_free(&r);
		}
	/* FP8: the engine dequantizes to float32 (ref) or to bf16. */
	for (i = 0; i < 2; i++) {
		int pr = i ? Q3_PROFILE_FP8_BF16 : Q3_PROFILE_REF;

		run_model(fp8, pr, 2, prompt, 5, 6, &r);
		snprintf(what, sizeof(what), "%s honest fp8 %s",
			 moe ? "moe" : "dense", engy_q3_profile_name(pr));
		expect(&a8, &r, ENGY_GA_PASS, "ok", what);
		run_free(&r);
	}
	engy_ga_ckpt_close(ck);
	engy_ga_ckpt_close(ck8);
	rm_model(dir);
	rm_model(fp8);
}

START_TEST(honest_dense)
{
	honest(false);
}
END_TEST

START_TEST(honest_moe)
{
	honest(true);
}
END_TEST

/* Tied embeddings (lm_head is the embedding) and a Qwen2-MoE style
 * shared expert with its sigmoid gate (an output of one column). */
START_TEST(honest_tied_shared)
{
	int i;

	for (i = 0; i < 2; i++) {
		struct mkmodel_opts o = { .moe = i == 1,
					  .seed = 8,
					  .dtype = ENGY_ST_BF16,
					  .tie = i == 0,
					  .shared_expert = i == 1 };
		char tmpl[] = "/tmp/engy-ga-XXXXXX", err[256], *dir;
		struct engy_ga_ckpt *ck;
		struct audit a;
		struct run r;

		dir = strdup(mkdtemp(tmpl));
		ck_assert_msg(mkmodel_write(&o, dir, err, sizeof(err)) == 0,
			      "%s", err);
		ck = ckpt(dir);
		a = audit_all(ck, dir);
		run_model(dir, Q3_PROFILE_WARP32, 2, prompt, 5, 6, &r);
		expect(&a, &r, ENGY_GA_PASS, "ok",
		       i ? "moe shared expert honest" : "dense tied honest");
		if (i) {
			/* The shared expert's gate output zeroed. */
			size_t k;

			for (k = 0; k < r.n; k++) {
				struct engy_ga_key key;

				engy_ga_key_unpack(r.r[k].key, &key);
				if (key.mm == ENGY_GA_MM_SHARED_EGATE &&
				    key.role == ENGY_GA_Y && key.layer == 0)
					r.r[k].d[0] = 0;
			}
			expect(&a, &r, ENGY_GA_CHEAT, "product",
			       "moe shared expert gate zeroed");
		}
		run_free(&r);
		engy_ga_ckpt_close(ck);
		rm_model(dir);
	}
}
END_TEST

/* ---- Tampered checkpoints the engine runs ---- */

/* Copy @src to a fresh directory and let @fn edit model.safetensors. */
static char *patched(const char *src,
		     void (*fn)(struct engy_st *st, uint8_t *base))
{
	char tmpl[] = "/tmp/engy-ga-XXXXXX", cmd[512], path[512], err[256];
	char *dir = mkdtemp(tmpl);
	struct engy_st *st;
	uint8_t *buf;
	size_t len;
	FILE *f;

	ck_assert_ptr_nonnull(dir);
	snprintf(cmd, sizeof(cmd), "cp -r '%s'/. '%s'", src, dir);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	ck_assert_int_eq(engy_read_file(path, (size_t)1 << 30, &buf, &len), 0);
	ck_assert_msg(engy_st_parse(buf, len, &st, err, sizeof(err)) == 0, "%s",
		      err);
	fn(st, buf);
	engy_st_close(st);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
	free(buf);
	return strdup(dir);
}

static uint8_t *tensor(struct engy_st *st, const char *name, size_t *row_bytes,
		       size_t *rows)
{
	const struct engy_st_tensor *t = engy_st_find(st, name);

	ck_assert_msg(t != NULL, "%s", name);
	*rows = t->shape[0];
	*row_bytes = t->nbytes / t->shape[0];
	return (uint8_t *)t->data;
}

/* Row 3 of layer 0's q_proj is row 3 of its k_proj. */
static void other_tensor(struct engy_st *st, uint8_t *base)
{
	size_t rb, rb2, n;
	uint8_t *q = tensor(st, "model.layers.0.self_attn.q_proj.weight", &rb,
			    &n),
		*k = tensor(st, "model.layers.0.self_attn.k_proj.weight", &rb2,
			    &n);

	(void)base;
	ck_assert_uint_eq(rb, rb2);
	memcpy(q + 3 * rb, k + 3 * rb, rb);
}

/* Layer 1's up_proj read one row off. */
static void shifted(struct engy_st *st, uint8_t *base)
{
	size_t rb, n;
	uint8_t *u = tensor(st, "model.layers.1.mlp.up_proj.weight", &rb, &n);

	(void)base;
	memmove(u, u + rb, (n - 1) * rb);
}

/* Layer 0's q_proj scale rows 0 and 1 swapped. */
static void swap_scales(struct engy_st *st, uint8_t *base)
{
	size_t rb, n;
	uint8_t *s = tensor(st,
			    "model.layers.0.self_attn.q_proj.weight_scale_inv",
			    &rb, &n),
		tmp[4096];

	(void)base;
	ck_assert_uint_ge(n, 2);
	ck_assert_uint_le(rb, sizeof(tmp));
	memcpy(tmp, s, rb);
	memcpy(s, s + rb, rb);
	memcpy(s + rb, tmp, rb);
}

static void cheat_ckpt(bool moe, void (*fn)(struct engy_st *, uint8_t *),
		       const char *what)
{
	char *dir = tiny_model(moe, 3, MKMODEL_QUANT_NONE),
	     *bad = patched(dir, fn);
	struct engy_ga_ckpt *ck = ckpt(dir);
	struct audit a = audit_all(ck, dir);
	struct run r;

	run_model(bad, Q3_PROFILE_REF, 2, prompt, 5, 6, &r);
	expect(&a, &r, ENGY_GA_CHEAT, "product", what);
	run_free(&r);
	engy_ga_ckpt_close(ck);
	rm_model(dir);
	rm_model(bad);
}

START_TEST(int4_weights)
{
	int moe;

	for (moe = 0; moe < 2; moe++) {
		char *dir = tiny_model(moe, 3, MKMODEL_QUANT_NONE),
		     *q4 = tiny_model(moe, 3, MKMODEL_QUANT_INT4);
		struct engy_ga_ckpt *ck = ckpt(dir);
		struct audit a = audit_all(ck, dir);
		struct run r;

		run_model(q4, Q3_PROFILE_REF, 2, prompt, 5, 6, &r);
		expect(&a, &r, ENGY_GA_CHEAT, "product",
		       moe ? "moe int4 weights" : "dense int4 weights");
		run_free(&r);
		engy_ga_ckpt_close(ck);
		rm_model(dir);
		rm_model(q4);
	}
}
END_TEST

START_TEST(weight_rows)
{
	cheat_ckpt(false, other_tensor, "dense row of another tensor");
	cheat_ckpt(true, other_tensor, "moe row of another tensor");
	cheat_ckpt(false, shifted, "dense shifted rows");
	cheat_ckpt(true, shifted, "moe shifted rows");
}
END_TEST

/* Block scales need two block rows: the small model (hidden 512). */
START_TEST(fp8_scale_rows)
{
	struct mkmodel_opts o = { .small = true,
				  .seed = 5,
				  .quant = MKMODEL_QUANT_FP8,
				  .dtype = ENGY_ST_BF16 };
	char tmpl[] = "/tmp/engy-ga-XXXXXX", err[256], *dir, *bad;
	struct engy_ga_ckpt *ck;
	struct audit a;
	struct run r;

	dir = strdup(mkdtemp(tmpl));
	ck_assert_msg(mkmodel_write(&o, dir, err, sizeof(err)) == 0, "%s", err);
	bad = patched(dir, swap_scales);
	ck = ckpt(dir);
	a = audit_all(ck, dir);
	a.p.layers = 100;
	a.p.tokens = 2;
	run_model(dir, Q3_PROFILE_REF, 2, prompt, 3, 2, &r);
	expect(&a, &r, ENGY_GA_PASS, "ok", "small fp8 honest");
	run_free(&r);
	run_model(bad, Q3_PROFILE_REF, 2, prompt, 3, 2, &r);
	expect(&a, &r, ENGY_GA_CHEAT, "product", "small fp8 swapped scales");
	run_free(&r);
	engy_ga_ckpt_close(ck);
	rm_model(dir);
	rm_model(bad);
}
END_TEST

/* ---- Rows changed before the commitment ---- */

static void splice(struct srow *to, const struct srow *from)
{
	ck_assert_ptr_nonnull(to);
	ck_assert_ptr_nonnull(from);
	ck_assert_uint_eq(to->n, from->n);
	memcpy(to->d, from->d, to->n * sizeof(float));
}

static void commit_cases(bool moe)
{
	char *dir = tiny_model(moe, 3, MKMODEL_QUANT_NONE);
	struct engy_ga_ckpt *ck = ckpt(dir);
	struct audit a = audit_all(ck, dir);
	const uint32_t other_prompt[] = { 40, 41, 42, 43, 44 };
	struct run r, o;
	const char *pre = moe ? "moe" : "dense";
	char what[64];
	int mm;
	size_t i;

	run_model(dir, Q3_PROFILE_REF, 2, other_prompt, 5, 6, &o);
	/* A Y row from another token. */
	run_model(dir, Q3_PROFILE_REF, 2, prompt, 5, 6, &r);
	splice(find_row(&r, 0, ENGY_GA_MM_O, ENGY_GA_NO_EXPERT, 1, 3),
	       find_row(&r, 0, ENGY_GA_MM_O, ENGY_GA_NO_EXPERT, 1, 4));
	snprintf(what, sizeof(what), "%s Y from another token", pre);
	expect(&a, &r, ENGY_GA_CHEAT, "product", what);
	run_free(&r);
	/* q/k/v's X from another layer (consistently). */
	run_model(dir, Q3_PROFILE_REF, 2, prompt, 5, 6, &r);
	for (mm = ENGY_GA_MM_Q; mm <= ENGY_GA_MM_V; mm++)
		splice(find_row(&r, 0, mm, ENGY_GA_NO_EXPERT, 0, 2),
		       find_row(&r, 1, mm, ENGY_GA_NO_EXPERT, 0, 2));
	snprintf(what, sizeof(what), "%s X from another layer", pre);
	expect(&a, &r, ENGY_GA_CHEAT, "product", what);
	run_free(&r);
	/* q's X alone from another token: its layer's inputs disagree. */
	run_model(dir, Q3_PROFILE_REF, 2, prompt, 5, 6, &r);
	splice(find_row(&r, 1, ENGY_GA_MM_Q, ENGY_GA_NO_EXPERT, 0, 2),
	       find_row(&r, 1, ENGY_GA_MM_Q, ENGY_GA_NO_EXPERT, 0, 3));
	snprintf(what, sizeof(what), "%s X of q alone spliced", pre);
	expect(&a, &r, ENGY_GA_CHEAT, "input", what);
	run_free(&r);
	/* down_proj's X from another request. */
	run_model(dir, Q3_PROFILE_REF, 2, prompt, 5, 6, &r);
	splice(find_row(&r, 1, ENGY_GA_MM_DOWN, ENGY_GA_NO_EXPERT, 0, 2),
	       find_row(&o, 1, ENGY_GA_MM_DOWN, ENGY_GA_NO_EXPERT, 0, 2));
	snprintf(what, sizeof(what), "%s X from another request", pre);
	expect(&a, &r, ENGY_GA_CHEAT, "product", what);
	run_free(&r);
	/* A skipped layer: its outputs zero, or its inputs passed on. */
	for (i = 0; i < 2; i++) {
		size_t k;

		run_model(dir, Q3_PROFILE_REF, 2, prompt, 5, 6, &r);
		for (k = 0; k < r.n; k++) {
			struct engy_ga_key key;
			size_t j;

			engy_ga_key_unpack(r.r[k].key, &key);
			if (key.layer != 1 || key.role != ENGY_GA_Y)
				continue;
			for (j = 0; j < r.r[k].n; j++) {
				const struct srow *x =
					find_row(&r, 1, key.mm, key.expert, 0,
						 r.r[k].pos);

				r.r[k].d[j] = i && j < x->n ? x->d[j] : 0;
			}
		}
		snprintf(what, sizeof(what), "%s skipped layer (%s)", pre,
			 i ? "passthrough" : "zero");
		expect(&a, &r, ENGY_GA_CHEAT, "product", what);
		run_free(&r);
	}
	if (moe) {
		/* Layer 0's rows of an expert the router picked at pos 2,
		 * claimed for one it did not. */
		struct srow *rt;
		uint32_t e, from = 0, to = 0;
		int role;

		run_model(dir, Q3_PROFILE_REF, 2, prompt, 5, 6, &r);
		rt = find_row(&r, 0, ENGY_GA_MM_ROUTER, ENGY_GA_NO_EXPERT, 1,
			      2);
		ck_assert_ptr_nonnull(rt);
		for (e = 0; e < rt->n; e++) {
			if (find_row(&r, 0, ENGY_GA_MM_EXPERT_UP, (uint16_t)e,
				     1, 2))
				from = e;
			else
				to = e;
		}
		for (mm = ENGY_GA_MM_EXPERT_GATE; mm <= ENGY_GA_MM_EXPERT_DOWN;
		     mm++)
			for (role = 0; role < 2; role++) {
				struct srow *s = find_row(
					&r, 0, mm, (uint16_t)from, role, 2);
				struct engy_ga_key k = { 0, (uint8_t)mm,
							 (uint16_t)to,
							 (uint8_t)role };

				ck_assert_ptr_nonnull(s);
				s->key = engy_ga_key_pack(&k);
			}
		expect(&a, &r, ENGY_GA_CHEAT, "routing",
		       "moe rows of an unpicked expert");
		run_free(&r);
	}
	run_free(&o);
	engy_ga_ckpt_close(ck);
	rm_model(dir);
}

START_TEST(commit_dense)
{
	commit_cases(false);
}
END_TEST

START_TEST(commit_moe)
{
	commit_cases(true);
}
END_TEST

/* ---- The opening and the binding changed after the commitment ---- */

static const struct run *other_run;

/* A row's data from another token (its own path kept). */
static void open_splice_token(struct engy_ga_opening *o, void *arg)
{
	struct engy_ga_osub *s = &o->subs[0];

	(void)arg;
	ck_assert_uint_ge(s->n_rows, 2);
	ck_assert_uint_eq(s->rows[0].n, s->rows[1].n);
	memcpy(s->rows[0].data, s->rows[1].data, s->rows[0].n * sizeof(float));
}

/* A row from another request's opening, with that request's path. */
static void open_splice_request(struct engy_ga_opening *o, void *arg)
{
	struct engy_ga_opening *x = arg;
	struct engy_ga_orow t;

	ck_assert_uint_eq(o->subs[1].rows[0].n, x->subs[1].rows[0].n);
	t = o->subs[1].rows[0];
	o->subs[1].rows[0] = x->subs[1].rows[0];
	x->subs[1].rows[0] = t;
}

/* The last row of the last sub dropped. */
static void open_drop(struct engy_ga_opening *o, void *arg)
{
	struct engy_ga_osub *s = &o->subs[o->n_osubs - 1];

	(void)arg;
	s->n_rows--;
	free(s->rows[s->n_rows].path);
	free(s->rows[s->n_rows].data);
	if (!s->n_rows) {
		free(s->rows);
		free(s->path);
		o->n_osubs--;
	}
}

static void after_cases(bool moe)
{
	char *dir = tiny_model(moe, 3, MKMODEL_QUANT_NONE);
	struct engy_ga_ckpt *ck = ckpt(dir);
	struct audit a = audit_all(ck, dir), b;
	const uint32_t other_prompt[] = { 40, 41, 42, 43, 44 };
	struct engy_ga_opening *xo;
	struct run r, o;
	uint32_t ids[512];
	uint8_t tr[32], seed[32];
	char *j, err[128], what[64];
	const char *pre = moe ? "moe" : "dense";

	run_model(dir, Q3_PROFILE_REF, 2, prompt, 5, 6, &r);
	run_model(dir, Q3_PROFILE_REF, 2, other_prompt, 5, 6, &o);
	other_run = &o;
#define CASE(field, val, oc, reason, label)                                    \
	do {                                                                   \
		b = a;                                                         \
		b.field = val;                                                 \
		snprintf(what, sizeof(what), "%s %s", pre, label);             \
		expect(&b, &r, oc, reason, what);                              \
	} while (0)
	CASE(mutate, open_splice_token, ENGY_GA_CHEAT, "path",
	     "opened row of another token");
	j = open_run(&a, &o, nonce1, tr, seed);
	ck_assert_int_eq(
		engy_ga_opening_parse(j, strlen(j), &xo, err, sizeof(err)), 0);
	free(j);
	b = a;
	b.mutate = open_splice_request;
	b.arg = xo;
	snprintf(what, sizeof(what), "%s opened row of another request", pre);
	expect(&b, &r, ENGY_GA_CHEAT, "path", what);
	engy_ga_opening_free(xo);
	CASE(mutate, open_drop, ENGY_GA_CHEAT, "missing_row", "a row left out");
	memcpy(ids, r.ids, sizeof(ids));
	ids[r.n_tokens - 1] ^= 1;
	CASE(auditor_ids, ids, ENGY_GA_CHEAT, "ids", "other output ids");
	CASE(other_sampling, true, ENGY_GA_CHEAT, "sampling",
	     "ground: sampling changed");
	CASE(other_spec, true, ENGY_GA_CHEAT, "spec_root",
	     "ground: another model root");
	CASE(other_toploc, true, ENGY_GA_CHEAT, "path",
	     "ground: toploc changed");
	CASE(other_nonce_cells, true, ENGY_GA_CHEAT, "cells",
	     "cells of another nonce");
#undef CASE
	run_free(&r);
	run_free(&o);
	engy_ga_ckpt_close(ck);
	rm_model(dir);
}

START_TEST(after_dense)
{
	after_cases(false);
}
END_TEST

START_TEST(after_moe)
{
	after_cases(true);
}
END_TEST

/*
 * Soundness per audited request at the model spec's default sizes (4
 * layers, 4 positions, 2 projections, 2 spots, z 6), over 200 nonces:
 * INT4 weights never pass; an honest run always does; one skipped matmul
 * (layer 1's down_proj writing zeros) is caught exactly when its layer is
 * drawn, with 1 layer challenged of the 3 a tiny model has (2 layers and
 * lm_head): a third of the audits.
 */
START_TEST(soundness)
{
	char *dir = tiny_model(false, 3, MKMODEL_QUANT_NONE),
	     *q4 = tiny_model(false, 3, MKMODEL_QUANT_INT4);
	struct engy_ga_ckpt *ck = ckpt(dir);
	struct audit a = audit_all(ck, dir);
	struct run hon, bad, skip;
	uint8_t nonce[32] = { 0 };
	unsigned i, pass_int4 = 0, pass_hon = 0, caught = 0;
	double rho_hon = 0, rho_int4 = INFINITY;
	size_t k;

	run_model(dir, Q3_PROFILE_SPLITK, 2, prompt, 5, 6, &hon);
	run_model(q4, Q3_PROFILE_REF, 2, prompt, 5, 6, &bad);
	run_model(dir, Q3_PROFILE_REF, 2, prompt, 5, 6, &skip);
	for (k = 0; k < skip.n; k++) {
		struct engy_ga_key key;

		engy_ga_key_unpack(skip.r[k].key, &key);
		if (key.layer == 1 && key.mm == ENGY_GA_MM_DOWN &&
		    key.role == ENGY_GA_Y)
			memset(skip.r[k].d, 0, skip.r[k].n * sizeof(float));
	}
	a.p.layers = ENGY_CS_GEMM_LAYERS;
	a.p.tokens = ENGY_CS_GEMM_TOKENS;
	a.p.projections = ENGY_CS_GEMM_PROJECTIONS;
	a.p.spots = ENGY_CS_GEMM_SPOTS;
	a.p.z = ENGY_CS_GEMM_Z;
	a.p.c_el = ENGY_CS_GEMM_C_EL;
	a.nonce = nonce;
	for (i = 0; i < 200; i++) {
		struct engy_ga_verdict v;

		nonce[0] = (uint8_t)i;
		nonce[1] = (uint8_t)(i >> 8);
		a.p.layers = ENGY_CS_GEMM_LAYERS;
		audit(&a, &hon, &v);
		pass_hon += v.outcome == ENGY_GA_PASS;
		if (v.rho_max > rho_hon)
			rho_hon = v.rho_max;
		audit(&a, &bad, &v);
		pass_int4 += v.outcome == ENGY_GA_PASS;
		ck_assert(v.outcome == ENGY_GA_PASS ||
			  !strcmp(v.reason, "product"));
		if (v.rho_max < rho_int4)
			rho_int4 = v.rho_max;
		a.p.layers = 1;
		audit(&a, &skip, &v);
		if (v.outcome == ENGY_GA_CHEAT) {
			ck_assert_str_eq(v.reason, "product");
			caught++;
		}
	}
	printf("gemm-audit: soundness over 200 nonces at the defaults: honest "
	       "(splitk) %u pass, rho_max %.3g; INT4 %u pass, smallest "
	       "failing rho %.3g; skipped down_proj with 1 layer of 3 "
	       "challenged: caught %u\n",
	       pass_hon, rho_hon, pass_int4, rho_int4, caught);
	ck_assert_uint_eq(pass_hon, 200);
	ck_assert_uint_eq(pass_int4, 0);
	/* Binomial(200, 1/3): 67 expected; 3 sigma is 20. */
	ck_assert_uint_ge(caught, 47);
	ck_assert_uint_le(caught, 87);
	run_free(&hon);
	run_free(&bad);
	run_free(&skip);
	engy_ga_ckpt_close(ck);
	rm_model(dir);
	rm_model(q4);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gemm_audit");
	TCase *tc = tcase_create("audit");
	SRunner *sr;
	int nf;

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, honest_dense);
	tcase_add_test(tc, honest_moe);
	tcase_add_test(tc, honest_tied_shared);
	tcase_add_test(tc, int4_weights);
	tcase_add_test(tc, weight_rows);
	tcase_add_test(tc, fp8_scale_rows);
	tcase_add_test(tc, commit_dense);
	tcase_add_test(tc, commit_moe);
	tcase_add_test(tc, after_dense);
	tcase_add_test(tc, after_moe);
	tcase_add_test(tc, soundness);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
