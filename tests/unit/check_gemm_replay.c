/* SPDX-License-Identifier: MIT */
/*
 * The GEMM trace's replay is bit-identical to the generation it stands for
 * (specs/checkpoints.md, "GEMM trace"): backend-ref builds a request's
 * trace, and answers openings, from a hooked prefill of the positions its
 * generation computed, so every audited row of that prefill must be the
 * row the generation computed, byte for byte.
 *
 * Here lib/qwen3 is driven the way backend-ref's scheduler drives it:
 * three requests at once, prompts fed in chunks while others decode, one
 * batched engy_q3_forward() per step and one batched lm_head over the rows
 * that sample (greedy).  The row hook (engy_q3_model_set_row_hook) copies
 * every audited row of every request with its position.  Afterwards each
 * request's trace is built from those rows (lib/gemm) and compared with the
 * trace of a replay as backend-ref's gemm_open() runs it: one prefill of
 * prompt ‖ output less the last token on a fresh sequence, then lm_head on
 * the positions that sampled.  Same gemm
 * root under every kernel profile (fp8-bf16 on an FP8 checkpoint), 1 and 3
 * threads, dense and MoE; and an opening of the generation's trace fed with
 * a replay's rows accepts every row (no -EBADMSG).
 *
 * Oracle: engy against itself (the generation's own rows are the expected
 * values); the hashing is lib/gemm's, whose known answers are its own
 * tests'.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "qwen3.h"
#include "ref_testlib.h"

#define NREQ	 3
#define MAX_NEW	 5
#define CHUNK	 4
#define MAX_ROWS 64

static char err[512];

struct row {
	struct engy_ga_key key;
	uint32_t pos;
	float *v;
	size_t n;
};

struct req {
	uint32_t ids[64];
	size_t n_ids, n_prompt, n_fed;
	uint32_t n_out;
	struct q3_seq *seq;
	struct row *rows;
	size_t n_rows, cap;
};

/* What the hook sees: each row of the current call's request and pos. */
struct ctx {
	struct req *req[MAX_ROWS];
	uint32_t pos[MAX_ROWS];
	size_t n;
	/* a replay: rows go to a trace or an opening instead */
	struct engy_ga_trace *t;
	struct engy_ga_open *o;
	int rc;
	size_t fed;
};

static void keep(struct req *q, const struct engy_ga_key *k, uint32_t pos,
		 const float *v, size_t n)
{
	struct row *r;

	if (q->n_rows == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 256;
		q->rows = realloc(q->rows, q->cap * sizeof(*q->rows));
		ck_assert_ptr_nonnull(q->rows);
	}
	r = &q->rows[q->n_rows++];
	r->key = *k;
	r->pos = pos;
	r->n = n;
	r->v = malloc(n * sizeof(float));
	ck_assert_ptr_nonnull(r->v);
	memcpy(r->v, v, n * sizeof(float));
}

static void feed(struct ctx *c, struct req *q, const struct engy_ga_key *k,
		 uint32_t pos, const float *v, size_t n)
{
	int rc;

	if (c->t)
		rc = engy_ga_trace_add(c->t, k, pos, v, n);
	else if (c->o)
		rc = engy_ga_open_add(c->o, k, pos, v, n);
	else {
		keep(q, k, pos, v, n);
		return;
	}
	c->fed++;
	if (rc && !c->rc)
		c->rc = rc;
}

static void hook(void *arg, int layer, const char *name, const uint32_t *idx,
		 const float *in, size_t rows, size_t in_dim, const float *out,
		 size_t out_dim)
{
	struct ctx *c = arg;
	struct engy_ga_key k;
	uint32_t expert;
	size_t i;
	int mm;

	if (engy_ga_mm_parse(name, &mm, &expert))
		return;
	k = (struct engy_ga_key){ layer < 0 ? ENGY_GA_LM_LAYER
					    : (uint16_t)layer,
				  (uint8_t)mm, (uint16_t)expert, ENGY_GA_X };
	for (i = 0; i < rows; i++) {
		size_t fr = idx ? idx[i] : i;

		ck_assert_uint_lt(fr, c->n);
		k.role = ENGY_GA_X;
		feed(c, c->req[fr], &k, c->pos[fr], in + i * in_dim, in_dim);
		k.role = ENGY_GA_Y;
		feed(c, c->req[fr], &k, c->pos[fr], out + i * out_dim, out_dim);
	}
}

static uint32_t argmax(const float *v, size_t n)
{
	size_t i, b = 0;

	for (i = 1; i < n; i++)
		if (v[i] > v[b])
			b = i;
	return (uint32_t)b;
}

/* backend-ref's scheduling: chunks of prompt, one token per decode step,
 * every request in one forward per step. */
static void generate(struct q3_model *m, struct req *q, size_t nq,
		     struct ctx *c)
{
	const struct q3_config *cf = engy_q3_model_config(m);
	size_t H = cf->hidden, V = cf->vocab, k, i;
	float *hid = malloc(MAX_ROWS * H * sizeof(float));
	float *last = malloc(NREQ * H * sizeof(float));
	float *lg = malloc(NREQ * V * sizeof(float));
	struct q3_row rows[MAX_ROWS];
	bool active = true;

	ck_assert_ptr_nonnull(hid);
	ck_assert_ptr_nonnull(last);
	ck_assert_ptr_nonnull(lg);
	while (active) {
		size_t n = 0, ns = 0, first[NREQ], cnt[NREQ];
		struct req *samp[NREQ];

		active = false;
		for (k = 0; k < nq; k++) {
			struct req *r = &q[k];
			size_t want;

			if (r->n_fed < r->n_prompt)
				want = r->n_prompt - r->n_fed < CHUNK
					       ? r->n_prompt - r->n_fed
					       : CHUNK;
			else
				want = r->n_out < MAX_NEW && r->n_fed < r->n_ids
					       ? 1
					       : 0;
			first[k] = n;
			cnt[k] = want;
			for (i = 0; i < want; i++) {
				c->req[n] = r;
				c->pos[n] = (uint32_t)(r->n_fed + i);
				rows[n++] =
					(struct q3_row){ r->seq,
							 r->ids[r->n_fed + i] };
			}
		}
		if (!n)
			break;
		c->n = n;
		ck_assert_int_eq(engy_q3_forward(m, rows, n, hid), 0);
		for (k = 0; k < nq; k++) {
			struct req *r = &q[k];

			if (!cnt[k])
				continue;
			r->n_fed += cnt[k];
			if (r->n_fed >= r->n_prompt && r->n_out < MAX_NEW) {
				memcpy(last + ns * H,
				       hid + (first[k] + cnt[k] - 1) * H,
				       H * sizeof(float));
				c->req[ns] = r;
				c->pos[ns] = (uint32_t)(r->n_fed - 1);
				samp[ns++] = r;
			}
		}
		c->n = ns;
		if (ns)
			ck_assert_int_eq(engy_q3_logits(m, last, ns, lg), 0);
		for (k = 0; k < ns; k++) {
			struct req *r = samp[k];

			r->ids[r->n_ids++] = argmax(lg + k * V, V);
			r->n_out++;
		}
		for (k = 0; k < nq; k++)
			if (q[k].n_out < MAX_NEW)
				active = true;
	}
	free(hid);
	free(last);
	free(lg);
}

/* The replay backend-ref runs: one prefill of the positions forwarded,
 * then lm_head on those that sampled (@lm_only: just these). */
static void replay(struct q3_model *m, struct req *r, struct ctx *c)
{
	const struct q3_config *cf = engy_q3_model_config(m);
	size_t H = cf->hidden, i, n = r->n_fed, ns = 0;
	struct q3_seq *s = engy_q3_seq_new(m, 256);
	float *hid = malloc(n * H * sizeof(float));
	float *lg = malloc(n * (size_t)cf->vocab * sizeof(float));
	float *last = malloc(n * H * sizeof(float));
	struct q3_row *rows = calloc(n, sizeof(*rows));

	ck_assert_ptr_nonnull(s);
	ck_assert(hid && lg && last && rows);
	ck_assert_uint_le(n, MAX_ROWS);
	for (i = 0; i < n; i++) {
		rows[i] = (struct q3_row){ s, r->ids[i] };
		c->req[i] = r;
		c->pos[i] = (uint32_t)i;
	}
	c->n = n;
	ck_assert_int_eq(engy_q3_forward(m, rows, n, hid), 0);
	for (i = r->n_prompt - 1; i < r->n_prompt - 1 + r->n_out; i++) {
		memcpy(last + ns * H, hid + i * H, H * sizeof(float));
		c->pos[ns++] = (uint32_t)i;
	}
	c->n = ns;
	ck_assert_int_eq(engy_q3_logits(m, last, ns, lg), 0);
	engy_q3_seq_free(s);
	free(hid);
	free(lg);
	free(last);
	free(rows);
}

static void bind_of(const struct req *r, struct engy_ga_bind *b)
{
	memset(b, 0, sizeof(*b));
	memset(b->spec_root, 0x5a, 32);
	engy_ga_ids_hash(r->ids, r->n_ids, b->ids_hash);
	b->n_prompt = (uint32_t)r->n_prompt;
	b->n_tokens = (uint32_t)r->n_ids;
	engy_ga_sampling_hash(0, 1, 0, 0, false, MAX_NEW, b->sampling);
}

static void one(const char *dir, int profile, unsigned threads, bool moe)
{
	struct q3_load_opts lo = { .threads = threads, .profile = profile };
	static const uint32_t prompts[NREQ][11] = {
		{ 12, 250, 7, 99, 480, 3, 77, 301, 5, 42, 9 },
		{ 1, 260, 33, 400, 18 },
		{ 2, 64, 128, 256, 8, 31, 500 },
	};
	static const size_t np[NREQ] = { 11, 5, 7 };
	struct req q[NREQ];
	struct ctx *c = calloc(1, sizeof(*c));
	const struct q3_config *cf;
	struct q3_model *m;
	size_t k, i;

	ck_assert_ptr_nonnull(c);
	ck_assert_msg(engy_q3_model_load(dir, &lo, &m, err, sizeof(err)) == 0,
		      "%s", err);
	cf = engy_q3_model_config(m);
	engy_q3_model_set_row_hook(m, hook, c);
	memset(q, 0, sizeof(q));
	for (k = 0; k < NREQ; k++) {
		memcpy(q[k].ids, prompts[k], np[k] * sizeof(uint32_t));
		q[k].n_ids = q[k].n_prompt = np[k];
		q[k].seq = engy_q3_seq_new(m, 256);
		ck_assert_ptr_nonnull(q[k].seq);
	}
	generate(m, q, NREQ, c);
	for (k = 0; k < NREQ; k++) {
		struct req *r = &q[k];
		struct engy_ga_bind b;
		struct engy_ga_trace *live, *rep;
		uint8_t root_live[32], root_rep[32];
		struct engy_ga_cell cells[4] = {
			{ 0, 0 },
			{ (uint16_t)(cf->n_layers - 1), (uint32_t)r->n_prompt },
			{ ENGY_GA_LM_LAYER, (uint32_t)r->n_prompt - 1 },
			{ 1, (uint32_t)r->n_fed - 1 },
		};
		char *json;

		ck_assert_uint_eq(r->n_out, MAX_NEW);
		ck_assert_uint_eq(r->n_fed, r->n_ids - 1);
		bind_of(r, &b);
		live = engy_ga_trace_new((uint32_t)r->n_ids);
		ck_assert_ptr_nonnull(live);
		for (i = 0; i < r->n_rows; i++)
			ck_assert_int_eq(
				engy_ga_trace_add(live, &r->rows[i].key,
						  r->rows[i].pos, r->rows[i].v,
						  r->rows[i].n),
				0);
		ck_assert_int_eq(engy_ga_trace_gemm_root(live, &b, root_live),
				 0);

		rep = engy_ga_trace_new((uint32_t)r->n_ids);
		ck_assert_ptr_nonnull(rep);
		c->t = rep;
		c->fed = 0;
		c->rc = 0;
		replay(m, r, c);
		c->t = NULL;
		ck_assert_int_eq(c->rc, 0);
		ck_assert_uint_eq(c->fed, r->n_rows);
		ck_assert_int_eq(engy_ga_trace_gemm_root(rep, &b, root_rep), 0);
		ck_assert_msg(memcmp(root_live, root_rep, 32) == 0,
			      "%s threads %u %s request %zu: the replay's gemm "
			      "root differs",
			      engy_q3_profile_name(profile), threads,
			      moe ? "moe" : "dense", k);

		/* One bit of one row changes the root: the comparison
		 * above sees every byte. */
		if (k == 0) {
			struct engy_ga_trace *t2 =
				engy_ga_trace_new((uint32_t)r->n_ids);
			struct row *x = &r->rows[r->n_rows / 2];
			uint8_t root2[32];
			uint32_t u;

			ck_assert_ptr_nonnull(t2);
			memcpy(&u, &x->v[0], 4);
			u ^= 1;
			memcpy(&x->v[0], &u, 4);
			for (i = 0; i < r->n_rows; i++)
				ck_assert_int_eq(
					engy_ga_trace_add(t2, &r->rows[i].key,
							  r->rows[i].pos,
							  r->rows[i].v,
							  r->rows[i].n),
					0);
			ck_assert_int_eq(engy_ga_trace_gemm_root(t2, &b, root2),
					 0);
			ck_assert(memcmp(root2, root_live, 32) != 0);
			engy_ga_trace_free(t2);
		}

		/* An opening of the generation's trace, fed by a replay. */
		c->o = engy_ga_open_new(live, cells, 4);
		ck_assert_ptr_nonnull(c->o);
		c->rc = 0;
		replay(m, r, c);
		ck_assert_int_eq(c->rc, 0);
		json = engy_ga_open_json(c->o);
		ck_assert_ptr_nonnull(json);
		free(json);
		engy_ga_open_free(c->o);
		c->o = NULL;
		engy_ga_trace_free(live);
		engy_ga_trace_free(rep);
	}
	for (k = 0; k < NREQ; k++) {
		for (i = 0; i < q[k].n_rows; i++)
			free(q[k].rows[i].v);
		free(q[k].rows);
		engy_q3_seq_free(q[k].seq);
	}
	engy_q3_model_free(m);
	free(c);
}

static void all_profiles(bool moe)
{
	char *dir = tiny_model(moe, moe ? 6 : 1, 0);
	char *f8 = tiny_model(moe, moe ? 6 : 1, 2);
	unsigned t;
	int p;

	for (t = 1; t <= 3; t += 2) {
		for (p = 0; p < Q3_PROFILE_MAX; p++)
			one(p == Q3_PROFILE_FP8_BF16 ? f8 : dir, p, t, moe);
		one(f8, Q3_PROFILE_REF, t, moe);
	}
	rm_model(dir);
	rm_model(f8);
}

START_TEST(test_replay_dense)
{
	all_profiles(false);
}
END_TEST

START_TEST(test_replay_moe)
{
	all_profiles(true);
}
END_TEST

/* The row hook's indices: an expert's rows name the rows routed to it. */
struct rcount {
	size_t expert_rows, other_rows;
	bool bad;
	size_t n;
};

static void count_hook(void *arg, int layer, const char *name,
		       const uint32_t *idx, const float *in, size_t rows,
		       size_t in_dim, const float *out, size_t out_dim)
{
	struct rcount *c = arg;
	size_t i;

	(void)layer, (void)in, (void)in_dim, (void)out, (void)out_dim;
	if (!strncmp(name, "experts.", 8)) {
		if (!idx)
			c->bad = true;
		for (i = 0; idx && i < rows; i++)
			if (idx[i] >= c->n || (i && idx[i] <= idx[i - 1]))
				c->bad = true;
		c->expert_rows += rows;
	} else {
		if (idx || rows != c->n)
			c->bad = true;
		c->other_rows += rows;
	}
}

START_TEST(test_row_hook)
{
	char *dir = tiny_model(true, 6, 0);
	uint32_t ids[9] = { 5, 80, 200, 3, 9, 100, 44, 7, 301 };
	struct rcount c = { .n = 9 };
	const struct q3_config *cf;
	struct q3_model *m;
	struct q3_seq *s;
	struct q3_row rows[9];
	float *h;
	size_t i, n_sparse = 0;

	ck_assert_int_eq(engy_q3_model_load(dir, NULL, &m, err, sizeof(err)),
			 0);
	cf = engy_q3_model_config(m);
	h = malloc(9 * cf->hidden * sizeof(float));
	s = engy_q3_seq_new(m, 64);
	for (i = 0; i < 9; i++)
		rows[i] = (struct q3_row){ s, ids[i] };
	engy_q3_model_set_row_hook(m, count_hook, &c);
	ck_assert_int_eq(engy_q3_forward(m, rows, 9, h), 0);
	ck_assert(!c.bad);
	for (i = 0; i < cf->n_layers; i++)
		n_sparse += cf->sparse[i];
	ck_assert_uint_gt(n_sparse, 0);
	/* top_k experts per row per sparse layer, three products each */
	ck_assert_uint_eq(c.expert_rows, 9 * cf->top_k * 3 * n_sparse);
	engy_q3_model_set_row_hook(m, NULL, NULL);
	engy_q3_seq_free(s);
	engy_q3_model_free(m);
	free(h);
	rm_model(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("gemm_replay");
	TCase *tc = tcase_create("replay");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_row_hook);
	tcase_add_test(tc, test_replay_dense);
	tcase_add_test(tc, test_replay_moe);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
