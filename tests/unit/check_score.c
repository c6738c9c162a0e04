// SPDX-License-Identifier: MIT
/*
 * Epoch scoring (specs/scoring.md): the spec's vectors byte for byte and
 * their hand-computed numbers, nearest-rank percentiles, the exact
 * 128-bit arithmetic, properties over random epochs (weights sum to
 * 65535, monotonic in tokens, a gate zeroes only its row, row order does
 * not matter, the aggregates round-trip), named errors, and the
 * scorer-sn53 plugin as the host sees it.
 *
 * Oracle: the numbers of specs/scoring.md §9 worked by hand in the spec;
 * tests/data/scoring/NAME.result were produced by engy and are regression
 * locks, not evidence; properties over random epochs. scaleout_postgres.sh
 * computes weights from a request log independently.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <engy/plugin.h>
#include <engy/scorer.h>

#include "epoch_sign.h"
#include "fake_host.h"
#include "fsutil.h"
#include "score.h"

static const char *const hk[] = {
	"5C62Ck4UrFPiBtoCmeSrgF7x9yv9mn38446dhCpsi2mLHiFT",
	"5C7LYpP2ZH3tpKbvVvwiVe54AapxErdPBbvkYhe6y9ZBkqWt",
	"5C8etthaGJi5SkQeEDSaK32ABBjkhwDeK9ksQCTLEGM3EH14",
	"5C9yEy27yLNG5BDMxVwS8RyGBneZB1ouShazFhGZVP8thK5z",
	"5CBHb3LfgN2Shc25gnSHwpvNCPZMe6QAaFR77C5nkVvkAK1o",
	"5CCbw7fDPPgdL2poR4w9mDsUCzUA7AzRhoFDxgu21cibdUmW",
	"5CDvHBym6RLoxTdX9MS1acpaDbNxaFagqM5LpBiFGjWT6o1n",
	"5CFEdGJJoSzzatSEsdvsQ1mgECHm3LAwxtuTfgXUXrJJZr1m",
};

#define OWNER "5HTzEPr3W2R93FhiZ4NRM2HWcdg2RY2wu7idwwp4Un8U9gKX"

static char *slurp(const char *name, size_t *len)
{
	char path[512];
	uint8_t *buf;

	snprintf(path, sizeof(path), "%s/%s", SCORE_DATA, name);
	ck_assert_msg(engy_read_file(path, 1 << 20, &buf, len) == 0, "%s",
		      path);
	return (char *)buf;
}

static struct engy_score_doc *load_doc(const char *name)
{
	struct engy_score_doc *d;
	char why[256], file[64];
	size_t len;
	char *t;
	int rc;

	snprintf(file, sizeof(file), "%s.json", name);
	t = slurp(file, &len);
	rc = engy_score_parse(t, len, &d, why, sizeof(why));
	ck_assert_msg(rc == 0, "%s: %s", name, why);
	free(t);
	return d;
}

/* Settles vector @name and checks result_json against NAME.result. */
static void vector(const char *name, struct engy_epoch_result *r)
{
	struct engy_score_doc *d = load_doc(name);
	char file[64], *want;
	size_t len;

	snprintf(file, sizeof(file), "%s.result", name);
	want = slurp(file, &len);
	ck_assert_msg(engy_score_settle(&d->in, NULL, r) == 0, "%s: %s", name,
		      r->error);
	ck_assert_uint_eq(r->result_len, len);
	ck_assert_str_eq(r->result_json, want);
	ck_assert_int_eq(engy_epoch_result_check(r->result_json, r->result_len,
						 53, d->in.epoch_index, NULL,
						 0),
			 0);
	free(want);
	engy_score_doc_free(d);
}

static void weight_is(const struct engy_epoch_result *r, size_t i,
		      const char *hotkey, uint32_t w)
{
	ck_assert_uint_gt(r->n_weights, i);
	ck_assert_str_eq(r->weights[i].hotkey, hotkey);
	ck_assert_uint_eq(r->weights[i].weight, w);
}

static void row_is(const struct engy_epoch_result *r, size_t i, uint64_t score,
		   uint32_t gate)
{
	ck_assert_uint_eq(r->rows[i].score, score);
	ck_assert_str_eq(engy_gate_name(r->rows[i].gate), engy_gate_name(gate));
}

START_TEST(test_vectors)
{
	struct engy_epoch_result r;

	/* floor(667*1500/1000) = 1000, 1333 -> 1999, 2667 -> 4000; shares
	 * 9363 + 18717 + 37453 = 65533: the 2 left go to the top row */
	vector("basic", &r);
	row_is(&r, 0, 4000, ENGY_GATE_OK);
	row_is(&r, 1, 1000, ENGY_GATE_OK);
	row_is(&r, 2, 1999, ENGY_GATE_OK);
	ck_assert_uint_eq(r.total_score, 6999);
	ck_assert_uint_eq(r.n_weights, 3);
	weight_is(&r, 0, hk[0], 9363);
	weight_is(&r, 1, hk[1], 18717);
	weight_is(&r, 2, hk[2], 37453 + 2);
	ck_assert(!r.burn);
	engy_epoch_result_release(&r);

	vector("burn-empty", &r);
	ck_assert(r.burn);
	ck_assert_uint_eq(r.n_weights, 1);
	weight_is(&r, 0, OWNER, 65535);
	engy_epoch_result_release(&r);

	/* probe-only traffic scores nothing; 150/152 < 99% fails */
	vector("burn-gated", &r);
	ck_assert(r.burn);
	weight_is(&r, 0, OWNER, 65535);
	row_is(&r, 0, 0, ENGY_GATE_OK);
	row_is(&r, 1, 0, ENGY_GATE_ACCEPTANCE);
	ck_assert_uint_eq(r.rows[1].accept_bp, 9868);
	engy_epoch_result_release(&r);

	/* 6000 each: 32767.5 floors to 32767 twice; the 1 left to uid 3 */
	vector("ties", &r);
	weight_is(&r, 0, hk[0], 32768);
	weight_is(&r, 1, hk[1], 32767);
	engy_epoch_result_release(&r);

	vector("thresholds", &r);
	row_is(&r, 0, 19800, ENGY_GATE_OK); /* 198/200, p99 = limit, 1% */
	ck_assert_uint_eq(r.rows[0].accept_bp, 9900);
	ck_assert_uint_eq(r.rows[0].ttft_p99_ms, 500);
	ck_assert_uint_eq(r.rows[0].tpot_p99_ms, 50);
	row_is(&r, 1, 0, ENGY_GATE_ACCEPTANCE); /* 197/200 */
	ck_assert_uint_eq(r.rows[1].accept_bp, 9850);
	row_is(&r, 2, 0, ENGY_GATE_TTFT_P99); /* 99th of 100 is 501 */
	ck_assert_uint_eq(r.rows[2].ttft_p99_ms, 501);
	row_is(&r, 3, 10000, ENGY_GATE_OK); /* one slow sample in 100 */
	ck_assert_uint_eq(r.rows[3].ttft_p99_ms, 100);
	row_is(&r, 4, 0, ENGY_GATE_TPOT_P99);
	weight_is(&r, 0, hk[0], 43543 + 1);
	weight_is(&r, 1, hk[3], 21991);
	engy_epoch_result_release(&r);

	vector("min-samples", &r);
	row_is(&r, 0, 5000, ENGY_GATE_OK);	/* 99 samples: gates pass */
	row_is(&r, 1, 0, ENGY_GATE_ACCEPTANCE); /* 100: the gate runs */
	row_is(&r, 2, 9900, ENGY_GATE_OK);	/* 99 verdicts, all cheat */
	row_is(&r, 3, 0, ENGY_GATE_CHEAT);	/* 2 of 100 */
	weight_is(&r, 0, hk[0], 21991);
	weight_is(&r, 1, hk[2], 43543 + 1);
	engy_epoch_result_release(&r);

	/* miner 1: 2 cheats in 100 verdicts over both models zero both
	 * rows; the glm row fails acceptance first (100/102) */
	vector("cheat-miner", &r);
	row_is(&r, 0, 0, ENGY_GATE_CHEAT);
	row_is(&r, 1, 0, ENGY_GATE_ACCEPTANCE);
	row_is(&r, 2, 150000, ENGY_GATE_OK); /* 1 in 101 is under 1% */
	row_is(&r, 3, 60000, ENGY_GATE_OK);
	ck_assert_uint_eq(r.n_weights, 1);
	weight_is(&r, 0, hk[1], 65535);
	engy_epoch_result_release(&r);
}
END_TEST

START_TEST(test_percentile)
{
	const struct engy_score_bucket one[] = { { 7, 1 } };
	const struct engy_score_bucket h[] = { { 10, 98 },
					       { 20, 1 },
					       { 30, 1 } };
	const struct engy_score_bucket g[] = { { 1, 197 }, { 2, 1 }, { 3, 2 } };
	uint64_t v = 0;

	ck_assert_int_eq(engy_score_percentile(one, 1, 99, &v), 0);
	ck_assert_uint_eq(v, 7);
	/* n = 100: k = 99 */
	ck_assert_int_eq(engy_score_percentile(h, 3, 99, &v), 0);
	ck_assert_uint_eq(v, 20);
	ck_assert_int_eq(engy_score_percentile(h, 3, 100, &v), 0);
	ck_assert_uint_eq(v, 30);
	ck_assert_int_eq(engy_score_percentile(h, 3, 1, &v), 0);
	ck_assert_uint_eq(v, 10);
	ck_assert_int_eq(engy_score_percentile(h, 3, 98, &v), 0);
	ck_assert_uint_eq(v, 10);
	/* n = 200: k = 198 */
	ck_assert_int_eq(engy_score_percentile(g, 3, 99, &v), 0);
	ck_assert_uint_eq(v, 2);
	/* n = 201: k = ceil(198.99) = 199 */
	{
		const struct engy_score_bucket x[] = { { 1, 198 },
						       { 2, 1 },
						       { 3, 2 } };

		ck_assert_int_eq(engy_score_percentile(x, 3, 99, &v), 0);
		ck_assert_uint_eq(v, 2);
	}
	ck_assert_int_eq(engy_score_percentile(h, 0, 99, &v), -ENODATA);
	ck_assert_int_eq(engy_score_percentile(h, 3, 0, &v), -EINVAL);
	ck_assert_int_eq(engy_score_percentile(h, 3, 101, &v), -EINVAL);
}
END_TEST

static uint64_t rng = 0x853c49e6748fea9bULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

START_TEST(test_muldiv)
{
	uint64_t v, a, b, c;
	int i;

	ck_assert_int_eq(engy_score_muldiv(5, 3, 0, &v), -EDOM);
	ck_assert_int_eq(engy_score_muldiv(UINT64_MAX, UINT64_MAX, 1, &v),
			 -ERANGE);
	ck_assert_int_eq(
		engy_score_muldiv(UINT64_MAX, UINT64_MAX, UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(engy_score_muldiv(ENGY_SCORE_MAX_INT, 65535,
					   ENGY_SCORE_MAX_INT, &v),
			 0);
	ck_assert_uint_eq(v, 65535);
	ck_assert_int_eq(engy_score_muldiv(1ULL << 63, 4, 8, &v), 0);
	ck_assert_uint_eq(v, 1ULL << 62);
	for (i = 0; i < 20000; i++) {
		a = rnd() >> below(64);
		b = rnd() >> below(64);
		c = (rnd() >> below(64)) | 1;
#ifdef __SIZEOF_INT128__
		{
			unsigned __int128 q = (unsigned __int128)a * b / c;

			if (q >> 64) {
				ck_assert_int_eq(engy_score_muldiv(a, b, c, &v),
						 -ERANGE);
			} else {
				ck_assert_int_eq(engy_score_muldiv(a, b, c, &v),
						 0);
				ck_assert_uint_eq(v, (uint64_t)q);
			}
		}
#else
		if (b <= UINT32_MAX && a <= UINT32_MAX) {
			ck_assert_int_eq(engy_score_muldiv(a, b, c, &v), 0);
			ck_assert_uint_eq(v, a * b / c);
		}
#endif
	}
}
END_TEST

/* A random epoch: up to 8 miners over up to 3 models. */
struct gen {
	struct engy_epoch_input in;
	struct engy_epoch_params p;
	struct engy_epoch_model m[3];
	struct engy_epoch_row r[24];
	struct engy_score_bucket b[24][2][3];
};

static void gen_hist(struct engy_score_bucket *b, size_t *n, uint64_t counted)
{
	uint64_t left = counted, ms = below(50);
	size_t j;

	*n = 0;
	for (j = 0; j < 3 && left; j++) {
		ms += 1 + below(400);
		b[j].ms = ms;
		b[j].count = j == 2 ? left : 1 + below(left);
		left -= b[j].count;
		(*n)++;
	}
}

static void gen(struct gen *g)
{
	static const char *const models[] = { "m-a", "m-b", "m-c" };
	size_t i, k, n = 0, nm = 1 + below(3), nh = 1 + below(8);

	memset(g, 0, sizeof(*g));
	engy_score_params_default(&g->p);
	g->p.acceptance_min_samples = below(4) * 10;
	g->p.ttft_min_samples = below(4) * 10;
	g->p.tpot_min_samples = below(4) * 10;
	g->p.cheat_min_samples = below(4) * 10;
	for (k = 0; k < nm; k++) {
		g->m[k].model = models[k];
		g->m[k].score_rate = below(5000);
		g->m[k].qual_ttft_p99_ms = 200 + below(1000);
		g->m[k].qual_tpot_p99_ms = 200 + below(1000);
	}
	for (i = 0; i < nh; i++)
		for (k = 0; k < nm; k++) {
			struct engy_epoch_row *r = &g->r[n];

			if (below(4) == 0)
				continue;
			r->hotkey = hk[i];
			r->uid = (uint32_t)(below(3) ? 10 + i : 5);
			if (n && g->r[n - 1].hotkey == r->hotkey)
				r->uid = g->r[n - 1].uid;
			r->model = models[k];
			r->n_2xx = below(300);
			r->counted = below(r->n_2xx + 1);
			r->tokens = r->counted ? r->counted * below(4000) : 0;
			r->n_502 = below(3) ? 0 : below(5);
			r->n_504 = below(3) ? 0 : below(5);
			r->n_499 = below(50);
			gen_hist(g->b[n][0], &r->n_ttft, r->counted);
			gen_hist(g->b[n][1], &r->n_tpot, below(r->counted + 1));
			r->ttft = g->b[n][0];
			r->tpot = g->b[n][1];
			r->v_pass = below(100);
			r->v_cheat = below(4) ? 0 : below(3);
			r->v_unproven = below(10);
			n++;
		}
	g->in.size = sizeof(g->in);
	g->in.netuid = 53;
	g->in.epoch_index = 1 + below(1000);
	g->in.owner_hotkey = OWNER;
	g->in.params = &g->p;
	g->in.models = g->m;
	g->in.n_models = nm;
	g->in.rows = g->r;
	g->in.n_rows = n;
}

static void settle_ok(const struct engy_epoch_input *in,
		      struct engy_epoch_result *r)
{
	int rc = engy_score_settle(in, NULL, r);

	ck_assert_msg(rc == 0, "rc %d: %s", rc, r->error);
}

static uint32_t weight_of(const struct engy_epoch_result *r, const char *h)
{
	size_t i;

	for (i = 0; i < r->n_weights; i++)
		if (strcmp(r->weights[i].hotkey, h) == 0)
			return r->weights[i].weight;
	return 0;
}

START_TEST(test_prop_weights)
{
	struct engy_epoch_result r;
	static struct gen g;
	uint64_t sum, total;
	size_t i;
	int t;

	for (t = 0; t < 400; t++) {
		gen(&g);
		settle_ok(&g.in, &r);
		sum = total = 0;
		for (i = 0; i < r.n_weights; i++) {
			ck_assert_uint_ge(r.weights[i].weight, 1);
			sum += r.weights[i].weight;
		}
		for (i = 0; i < r.n_rows; i++) {
			if (r.rows[i].gate)
				ck_assert_uint_eq(r.rows[i].score, 0);
			total += r.rows[i].score;
		}
		ck_assert_uint_eq(sum, 65535);
		ck_assert_uint_eq(total, r.total_score);
		ck_assert_int_eq(r.burn, total == 0);
		if (r.burn)
			ck_assert_str_eq(r.weights[0].hotkey, OWNER);
		ck_assert_int_eq(
			engy_epoch_result_check(r.result_json, r.result_len, 53,
						g.in.epoch_index, NULL, 0),
			0);
		engy_epoch_result_release(&r);
	}
}
END_TEST

/* More tokens on a passing row never lower its score or its miner's weight. */
START_TEST(test_prop_monotonic)
{
	struct engy_epoch_result a, b;
	static struct gen g;
	size_t i;
	int t;

	for (t = 0; t < 300; t++) {
		gen(&g);
		if (!g.in.n_rows)
			continue;
		i = below(g.in.n_rows);
		if (!g.r[i].counted)
			continue;
		settle_ok(&g.in, &a);
		g.r[i].tokens += 1 + below(100000);
		settle_ok(&g.in, &b);
		ck_assert_uint_eq(a.rows[i].gate, b.rows[i].gate);
		ck_assert_uint_ge(b.rows[i].score, a.rows[i].score);
		if (!a.burn && !b.burn)
			ck_assert_uint_ge(weight_of(&b, g.r[i].hotkey),
					  weight_of(&a, g.r[i].hotkey));
		engy_epoch_result_release(&a);
		engy_epoch_result_release(&b);
	}
}
END_TEST

/* An acceptance failure zeroes its own row and changes no other row. */
START_TEST(test_prop_gate_row)
{
	struct engy_epoch_result a, b;
	static struct gen g;
	size_t i, j;
	int t;

	for (t = 0; t < 300; t++) {
		gen(&g);
		if (!g.in.n_rows)
			continue;
		i = below(g.in.n_rows);
		settle_ok(&g.in, &a);
		g.r[i].n_502 += g.r[i].n_2xx + 1 + g.p.acceptance_min_samples;
		settle_ok(&g.in, &b);
		ck_assert_uint_eq(b.rows[i].gate, ENGY_GATE_ACCEPTANCE);
		ck_assert_uint_eq(b.rows[i].score, 0);
		for (j = 0; j < g.in.n_rows; j++) {
			if (j == i)
				continue;
			ck_assert_uint_eq(a.rows[j].score, b.rows[j].score);
			ck_assert_uint_eq(a.rows[j].gate, b.rows[j].gate);
		}
		engy_epoch_result_release(&a);
		engy_epoch_result_release(&b);
	}
}
END_TEST

/* Rows and models in any order give the same bytes; aggregates round-trip. */
START_TEST(test_prop_permutation)
{
	struct engy_epoch_result a, b, c;
	struct engy_score_doc *d;
	char *agg1, *agg2;
	static struct gen g;
	size_t i, j;
	int t;

	for (t = 0; t < 300; t++) {
		gen(&g);
		settle_ok(&g.in, &a);
		ck_assert_int_eq(
			engy_score_aggregates_json(&g.in, NULL, &agg1, NULL, 0),
			0);
		for (i = g.in.n_rows; i > 1; i--) {
			struct engy_epoch_row tmp;

			j = below(i);
			tmp = g.r[i - 1];
			g.r[i - 1] = g.r[j];
			g.r[j] = tmp;
		}
		if (g.in.n_models > 1) {
			struct engy_epoch_model tmp = g.m[0];

			g.m[0] = g.m[g.in.n_models - 1];
			g.m[g.in.n_models - 1] = tmp;
		}
		settle_ok(&g.in, &b);
		ck_assert_str_eq(a.result_json, b.result_json);
		ck_assert_int_eq(
			engy_score_aggregates_json(&g.in, NULL, &agg2, NULL, 0),
			0);
		ck_assert_str_eq(agg1, agg2);
		ck_assert_int_eq(
			engy_score_parse(agg1, strlen(agg1), &d, NULL, 0), 0);
		settle_ok(&d->in, &c);
		ck_assert_str_eq(a.result_json, c.result_json);
		engy_score_doc_free(d);
		free(agg1);
		free(agg2);
		engy_epoch_result_release(&a);
		engy_epoch_result_release(&b);
		engy_epoch_result_release(&c);
	}
}
END_TEST

/* Two hotkeys on one uid tie: the remainder goes to the lower hotkey. */
START_TEST(test_tie_same_uid)
{
	struct engy_epoch_model m = { "m", 1000, 100, 100 };
	struct engy_epoch_row r[2] = {
		{ .hotkey = hk[1],
		  .uid = 5,
		  .model = "m",
		  .counted = 1,
		  .tokens = 7,
		  .n_2xx = 1 },
		{ .hotkey = hk[0],
		  .uid = 5,
		  .model = "m",
		  .counted = 1,
		  .tokens = 7,
		  .n_2xx = 1 },
	};
	struct engy_epoch_input in = {
		.size = sizeof(in),
		.netuid = 53,
		.epoch_index = 9,
		.owner_hotkey = OWNER,
		.models = &m,
		.n_models = 1,
		.rows = r,
		.n_rows = 2,
	};
	struct engy_epoch_result res;

	settle_ok(&in, &res);
	weight_is(&res, 0, hk[0], 32768);
	weight_is(&res, 1, hk[1], 32767);
	engy_epoch_result_release(&res);
}
END_TEST

static const char base[] =
	"{\"v\":1,\"netuid\":53,\"epoch_index\":7,\"owner_hotkey\":\"" OWNER
	"\","
	"\"params\":{\"cheat_min_samples\":1},"
	"\"models\":[{\"model\":\"m\",\"score_rate\":1000,\"qual_ttft_p99_ms\":9,\"qual_tpot_p99_ms\":9},"
	"{\"model\":\"n\",\"score_rate\":1,\"qual_ttft_p99_ms\":9,\"qual_tpot_p99_ms\":9}],"
	"\"rows\":[{\"hotkey\":\"5C62Ck4UrFPiBtoCmeSrgF7x9yv9mn38446dhCpsi2mLHiFT\",\"uid\":1,"
	"\"model\":\"m\",\"counted\":4,\"tokens\":40,"
	"\"status\":{\"2xx\":4,\"499\":0,\"502\":0,\"504\":0},"
	"\"ttft_ms\":[[1,2],[5,2]],\"tpot_ms\":[],"
	"\"verdicts\":{\"pass\":1,\"cheat\":0,\"unproven\":0}}]}";

/* A second row's text around its uid and model. */
#define ROW1 "\"hotkey\":\"5C62Ck4UrFPiBtoCmeSrgF7x9yv9mn38446dhCpsi2mLHiFT\","
#define ROW2                                                                   \
	",\"counted\":0,\"tokens\":0,\"status\":{\"2xx\":0,\"499\":0,"         \
	"\"502\":0,\"504\":0},\"ttft_ms\":[],\"tpot_ms\":[],"                  \
	"\"verdicts\":{\"pass\":0,\"cheat\":0,\"unproven\":0}}]}"

/* base with the first @from replaced by @to; settle; the error holds @want. */
static void bad(const char *from, const char *to, int rc_want, const char *want)
{
	char text[2048], why[256] = "";
	struct engy_epoch_result r;
	struct engy_score_doc *d;
	const char *at = strstr(base, from);
	int rc;

	ck_assert_msg(at != NULL, "no %s in base", from);
	snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - base), base, to,
		 at + strlen(from));
	rc = engy_score_parse(text, strlen(text), &d, why, sizeof(why));
	if (!rc) {
		rc = engy_score_settle(&d->in, NULL, &r);
		snprintf(why, sizeof(why), "%s", r.error);
		ck_assert_ptr_null(r.result_json);
		engy_score_doc_free(d);
	}
	ck_assert_msg(rc == rc_want, "%s -> %s: rc %d (%s)", from, to, rc, why);
	ck_assert_msg(strstr(why, want) != NULL, "%s -> %s: '%s' lacks '%s'",
		      from, to, why, want);
}

START_TEST(test_errors)
{
	struct engy_epoch_result r;
	struct engy_score_doc *d;

	ck_assert_int_eq(engy_score_parse(base, strlen(base), &d, NULL, 0), 0);
	settle_ok(&d->in, &r);
	ck_assert_uint_eq(r.total_score, 40);
	engy_epoch_result_release(&r);
	engy_score_doc_free(d);

	bad("\"uid\":1", "\"uid\":70000", -EINVAL,
	    "rows[0].uid: 70000 is over 65535");
	bad("\"tokens\":40", "\"tokens\":40.0", -EINVAL,
	    "rows[0].tokens: not an integer");
	bad("\"tokens\":40", "\"tokens\":-40", -EINVAL,
	    "rows[0].tokens: not an integer");
	bad("\"tokens\":40", "\"tokens\":9007199254740992", -EINVAL,
	    "rows[0].tokens: not an integer 0..2^53-1");
	bad("\"tokens\":40", "\"tokens\":\"40\"", -EINVAL,
	    "rows[0].tokens: not an integer");
	bad("\"tokens\":40", "\"tokenz\":40", -EINVAL,
	    "rows[0]: unknown key \"tokenz\"");
	bad("\"status\":{\"2xx\":4,", "\"status\":{\"2xx\":3,", -EINVAL,
	    "rows[0].counted: 4 is above status.2xx (3)");
	bad("\"502\":0,", "", -EINVAL, "rows[0].status.502: missing");
	bad("\"counted\":4", "\"counted\":0", -EINVAL,
	    "rows[0].tokens: 40 with no counted");
	bad("[[1,2],[5,2]]", "[[5,2],[1,2]]", -EINVAL,
	    "rows[0].ttft_ms[1]: ms 1 not above the previous bucket's 5");
	bad("[[1,2],[5,2]]", "[[1,2],[5,3]]", -EINVAL,
	    "rows[0].ttft_ms[1]: more samples than counted");
	bad("[[1,2],[5,2]]", "[[1,0]]", -EINVAL, "rows[0].ttft_ms[0]: count 0");
	bad("[[1,2],[5,2]]", "[[1,2,3]]", -EINVAL,
	    "rows[0].ttft_ms[0]: not an [ms, count]");
	bad("\"model\":\"m\",\"counted\"", "\"model\":\"x\",\"counted\"",
	    -EINVAL, "rows[0].model: 'x' is not in models");
	bad("\"model\":\"m\",\"score", "\"model\":\"m m\",\"score", -EINVAL,
	    "models[0].model: not a model name");
	bad("\"5C62Ck4UrFPiBtoCmeSrgF7x9yv9mn38446dhCpsi2mLHiFT\"",
	    "\"5C62Ck4UrFPiBtoCmeSrgF7x9yv9mn38446dhCpsi2mLHiFU\"", -EINVAL,
	    "rows[0].hotkey: not an SS58 address");
	bad("\"owner_hotkey\":\"" OWNER "\",", "", -EINVAL,
	    "owner_hotkey: missing");
	bad("\"v\":1", "\"v\":2", -EINVAL, "v: not 1");
	bad("\"v\":1,", "", -EINVAL, "v: missing");
	bad("\"netuid\":53", "\"netuid\":65536", -EINVAL,
	    "netuid: 65536 is over 65535");
	bad("\"rows\":[", "\"rowz\":[", -EINVAL,
	    "aggregates: unknown key \"rowz\"");
	bad("\"cheat_min_samples\":1", "\"acceptance_min_bp\":10001", -EINVAL,
	    "params.acceptance_min_bp: 10001 is over 10000");
	bad("\"cheat_min_samples\":1",
	    "\"cheat_min_samples\":1,\"cheat_min_samples\":2", -EINVAL,
	    "duplicate key");
	bad("{\"v\"", "[{\"v\"", -EINVAL, "not JSON (byte");
	bad("\"netuid\":53", "\"netuid\":53,", -EINVAL,
	    "not JSON (byte 19: expected a key)");
	bad("\"tpot_ms\":[]", "\"tpot_ms\":{}", -EINVAL,
	    "rows[0].tpot_ms: not an array");
	bad("\"verdicts\":{", "\"verdicts\":{\"fail\":1,", -EINVAL,
	    "rows[0].verdicts: unknown key \"fail\"");
	/* the same pair twice; one hotkey with two uids */
	bad("}]}", "},{" ROW1 "\"uid\":1,\"model\":\"m\"" ROW2, -EINVAL,
	    "rows[1]: hotkey 5C62Ck4UrFPiBtoCmeSrgF7x9yv9mn38446dhCpsi2mLHiFT and model m repeat rows[0]");
	bad("}]}", "},{" ROW1 "\"uid\":2,\"model\":\"n\"" ROW2, -EINVAL,
	    "rows[1].uid: hotkey 5C62Ck4UrFPiBtoCmeSrgF7x9yv9mn38446dhCpsi2mLHiFT has uid 1 in rows[0]");
}
END_TEST

START_TEST(test_overflow)
{
	struct engy_epoch_model m = { "m", 2000, 100, 100 };
	struct engy_epoch_row r[2] = {
		{ .hotkey = hk[0],
		  .uid = 1,
		  .model = "m",
		  .counted = 1,
		  .tokens = ENGY_SCORE_MAX_INT,
		  .n_2xx = 1 },
		{ .hotkey = hk[1],
		  .uid = 2,
		  .model = "m",
		  .counted = 1,
		  .tokens = ENGY_SCORE_MAX_INT / 2 + 1,
		  .n_2xx = 1 },
	};
	struct engy_epoch_input in = {
		.size = sizeof(in),
		.netuid = 53,
		.owner_hotkey = OWNER,
		.models = &m,
		.n_models = 1,
		.rows = r,
		.n_rows = 1,
	};
	struct engy_epoch_result res;

	ck_assert_int_eq(engy_score_settle(&in, NULL, &res), -ERANGE);
	ck_assert_str_eq(
		res.error,
		"rows[0]: score tokens * score_rate / 1000 is over 2^53-1");
	ck_assert_ptr_null(res.result_json);
	/* each row fits, the sum does not */
	m.score_rate = 1000;
	r[0].tokens = ENGY_SCORE_MAX_INT / 2 + 1;
	in.n_rows = 2;
	ck_assert_int_eq(engy_score_settle(&in, NULL, &res), -ERANGE);
	ck_assert_str_eq(res.error, "rows: the total score is over 2^53-1");
	/* the largest total that fits still weighs exactly */
	r[1].tokens = ENGY_SCORE_MAX_INT / 2;
	settle_ok(&in, &res);
	ck_assert_uint_eq(res.total_score, ENGY_SCORE_MAX_INT);
	weight_is(&res, 0, hk[0], 32768);
	weight_is(&res, 1, hk[1], 32767);
	engy_epoch_result_release(&res);
}
END_TEST

START_TEST(test_plugin)
{
	void *dl = dlopen(SCORER_SN53_SO, RTLD_NOW | RTLD_LOCAL);
	const struct engy_scorer_ops *ops;
	struct engy_epoch_params def;
	const struct engy_plugin *pl;
	struct engy_epoch_result r, r2;
	struct engy_score_doc *d;
	struct engy_host *h;
	int64_t conf[6];
	void *inst;
	char *agg;
	size_t i;

	ck_assert_msg(dl != NULL, "dlopen: %s", dlerror());
	pl = dlsym(dl, ENGY_PLUGIN_SYMBOL);
	ck_assert_ptr_nonnull(pl);
	ck_assert_uint_eq(pl->kind, ENGY_KIND_SCORER);
	ck_assert_str_eq(pl->name, "scorer-sn53");
	ck_assert_uint_eq(pl->conf_size, sizeof(conf));
	ops = pl->ops;
	ck_assert_uint_ge(ops->size, sizeof(*ops));
	ck_assert_str_eq(ops->rules, ENGY_SCORE_RULES);
	ck_assert(ops->settle && ops->aggregates);
	/* the option defaults are the library's */
	engy_score_params_default(&def);
	for (i = 0; i < 6; i++) {
		ck_assert_ptr_nonnull(pl->opts[i].name);
		ck_assert_uint_eq(pl->opts[i].offset, i * sizeof(int64_t));
		conf[i] = strtoll(pl->opts[i].def, NULL, 10);
	}
	ck_assert_ptr_null(pl->opts[6].name);
	ck_assert_int_eq(conf[0], def.acceptance_min_bp);
	ck_assert_int_eq(conf[1], def.acceptance_min_samples);
	ck_assert_int_eq(conf[2], def.ttft_min_samples);
	ck_assert_int_eq(conf[3], def.tpot_min_samples);
	ck_assert_int_eq(conf[4], def.cheat_max_bp);
	ck_assert_int_eq(conf[5], def.cheat_min_samples);

	h = fake_host_new("scorer0");
	conf[0] = 10001;
	ck_assert_int_eq(pl->create(h, conf, &inst), -EINVAL);
	ck_assert_ptr_nonnull(
		strstr(fake_host_log(h), "option=acceptance_min_bp"));
	conf[0] = 9900;
	conf[5] = 1000; /* cheat gate needs 1000 verdicts */
	ck_assert_int_eq(pl->create(h, conf, &inst), 0);

	/* the input's own params win: the vector as the spec settles it */
	d = load_doc("cheat-miner");
	ck_assert_int_eq(ops->settle(inst, &d->in, &r), 0);
	row_is(&r, 0, 0, ENGY_GATE_CHEAT);
	/* without them, the instance's: 100 verdicts are too few to gate */
	d->in.params = NULL;
	ck_assert_int_eq(ops->settle(inst, &d->in, &r2), 0);
	row_is(&r2, 0, 500000, ENGY_GATE_OK);
	ck_assert_ptr_nonnull(
		strstr(fake_host_log(h), "event=settled epoch=107"));
	/* its aggregates carry the params used and recompute the same bytes */
	ck_assert_int_eq(ops->aggregates(inst, &d->in, &agg, NULL, 0), 0);
	ck_assert_ptr_nonnull(strstr(agg, "\"cheat_min_samples\":1000}"));
	engy_score_doc_free(d);
	ck_assert_int_eq(engy_score_parse(agg, strlen(agg), &d, NULL, 0), 0);
	engy_epoch_result_release(&r);
	ck_assert_int_eq(engy_score_settle(&d->in, NULL, &r), 0);
	ck_assert_str_eq(r.result_json, r2.result_json);
	engy_epoch_result_release(&r);
	/* a refusal names the field */
	d->in.owner_hotkey = "nope";
	ck_assert_int_eq(ops->settle(inst, &d->in, &r), -EINVAL);
	ck_assert_str_eq(r.error, "owner_hotkey: not an SS58 address");
	ck_assert_ptr_nonnull(strstr(fake_host_log(h), "event=settle_refused"));
	engy_score_doc_free(d);
	free(agg);
	engy_epoch_result_release(&r2);
	pl->destroy(inst);
	fake_host_free(h);
	dlclose(dl);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("score");
	TCase *tc = tcase_create("score");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_vectors);
	tcase_add_test(tc, test_percentile);
	tcase_add_test(tc, test_muldiv);
	tcase_add_test(tc, test_prop_weights);
	tcase_add_test(tc, test_prop_monotonic);
	tcase_add_test(tc, test_prop_gate_row);
	tcase_add_test(tc, test_prop_permutation);
	tcase_add_test(tc, test_tie_same_uid);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_overflow);
	tcase_add_test(tc, test_plugin);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
