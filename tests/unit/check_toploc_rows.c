/* SPDX-License-Identifier: MIT */
/*
 * TOPLOC per request: chunking of engy_rows, the verdict rule, every
 * unusable proof or commitment giving UNPROVEN, and the commitment JSON.
 *
 * Oracle: hand-derived from specs/verification.md by the test's author;
 * proofs made by engy and verified by engy (self-consistency).
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "bf16.h"
#include "toploc.h"

static uint64_t rng_state;

static double gauss(void)
{
	double u[2];
	int i;

	for (i = 0; i < 2; i++) {
		rng_state ^= rng_state << 13;
		rng_state ^= rng_state >> 7;
		rng_state ^= rng_state << 17;
		u[i] = ((rng_state >> 11) + 0.5) / 9007199254740992.0;
	}
	return sqrt(-2 * log(u[0])) * cos(2 * M_PI * u[1]);
}

/* A request's rows as f32, from "model" @model; @noise relative. */
static float *rows_f32(size_t n, uint64_t model, double noise)
{
	float *f = malloc(n * sizeof(*f));
	size_t i;

	ck_assert_ptr_nonnull(f);
	rng_state = model * 0x9E3779B97F4A7C15ull + 1;
	for (i = 0; i < n; i++)
		f[i] = (float)gauss();
	rng_state = 12345;
	for (i = 0; noise > 0 && i < n; i++)
		f[i] = (float)(f[i] * (1 + noise * gauss()));
	return f;
}

static uint16_t *cast(const float *f, size_t n)
{
	uint16_t *b = malloc(n * sizeof(*b));
	size_t i;

	ck_assert_ptr_nonnull(b);
	for (i = 0; i < n; i++)
		b[i] = engy_bf16_from_f32(f[i]);
	return b;
}

static struct engy_rows mk_rows(const void *data, uint32_t dtype,
				uint32_t n_rows, uint32_t hidden,
				uint32_t n_prefill)
{
	struct engy_rows r = { data, dtype, n_rows, hidden, n_prefill };

	return r;
}

static const struct engy_toploc_params P128 = { 128, 32, true };

static struct engy_proof_limits limits(uint32_t v, double p)
{
	struct engy_proof_limits l = { .size = sizeof(l),
				       .max_exp_mismatches = v,
				       .min_pass_ratio = p };

	return l;
}

START_TEST(test_n_chunks)
{
	static const struct {
		uint32_t rows, prefill, dbs;
		bool skip;
		size_t want;
	} t[] = { { 0, 0, 32, true, 0 },   { 1, 0, 32, true, 1 },
		  { 32, 0, 32, true, 1 },  { 33, 0, 32, true, 2 },
		  { 40, 8, 32, true, 1 },  { 41, 8, 32, true, 2 },
		  { 41, 8, 32, false, 3 }, { 8, 8, 32, false, 1 },
		  { 100, 0, 1, true, 100 } };
	struct engy_toploc_params p = { 4, 32, true };
	uint16_t dummy[1];
	size_t i, n;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct engy_rows r = mk_rows(dummy, ENGY_DTYPE_BF16, t[i].rows,
					     16, t[i].prefill);

		p.dbs = t[i].dbs;
		p.skip_prefill = t[i].skip;
		ck_assert_int_eq(engy_toploc_n_chunks(&r, &p, &n), 0);
		ck_assert_uint_eq(n, t[i].want);
	}
	{
		struct engy_rows r = mk_rows(dummy, ENGY_DTYPE_BF16, 4, 0, 0);

		ck_assert_int_eq(engy_toploc_n_chunks(&r, &p, &n), -EINVAL);
		r = mk_rows(dummy, 9, 4, 16, 0);
		ck_assert_int_eq(engy_toploc_n_chunks(&r, &p, &n), -EINVAL);
		r = mk_rows(dummy, ENGY_DTYPE_BF16, 4, 16, 5);
		ck_assert_int_eq(engy_toploc_n_chunks(&r, &p, &n), -EINVAL);
		r = mk_rows(NULL, ENGY_DTYPE_BF16, 4, 16, 0);
		ck_assert_int_eq(engy_toploc_n_chunks(&r, &p, &n), -EINVAL);
		r = mk_rows(dummy, ENGY_DTYPE_BF16, 4, 16, 0);
		p.topk = 0;
		ck_assert_int_eq(engy_toploc_n_chunks(&r, &p, &n), -EINVAL);
	}
}
END_TEST

/* Proofs of a request are the proofs of its chunks, in order: the
 * prefill rows first (when proven), then 32 decode rows at a time. */
START_TEST(test_prove_rows_chunks)
{
	const uint32_t hidden = 256, n_rows = 75, prefill = 5;
	float *f = rows_f32((size_t)n_rows * hidden, 1, 0);
	uint16_t *b = cast(f, (size_t)n_rows * hidden);
	struct engy_toploc_params p = { 128, 32, false };
	struct engy_rows r =
		mk_rows(b, ENGY_DTYPE_BF16, n_rows, hidden, prefill);
	struct engy_rows rf =
		mk_rows(f, ENGY_DTYPE_F32, n_rows, hidden, prefill);
	struct engy_toploc_ws *ws = engy_toploc_ws_new(128);
	static const uint32_t first[] = { 0, 5, 37, 69 },
			      cnt[] = { 5, 32, 32, 6 };
	uint8_t *pr, *prf, one[258];
	size_t n, nf, i;

	ck_assert_int_eq(engy_toploc_prove_rows(&r, &p, &pr, &n), 0);
	ck_assert_uint_eq(n, 4);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(engy_toploc_prove_chunk(ws,
							 b + first[i] * hidden,
							 cnt[i] * hidden, one),
				 0);
		ck_assert(memcmp(pr + i * 258, one, 258) == 0);
	}
	/* f32 rows are cast exactly as the bf16 rows were. */
	ck_assert_int_eq(engy_toploc_prove_rows(&rf, &p, &prf, &nf), 0);
	ck_assert_uint_eq(nf, n);
	ck_assert(memcmp(pr, prf, n * 258) == 0);
	free(prf);
	/* skip_prefill drops the first proof only. */
	p.skip_prefill = true;
	ck_assert_int_eq(engy_toploc_prove_rows(&r, &p, &prf, &nf), 0);
	ck_assert_uint_eq(nf, 3);
	ck_assert(memcmp(pr + 258, prf, 3 * 258) == 0);
	free(prf);
	/* A chunk with fewer values than topk cannot be proven. */
	r.n_rows = 70; /* last chunk: 1 row of 256 values: fine */
	p.topk = 257;
	ck_assert_int_eq(engy_toploc_prove_rows(&r, &p, &prf, &nf), -EINVAL);
	ck_assert_ptr_null(prf);
	/* An empty prefill chunk (f32 rows too) is a short chunk. */
	rf.n_prefill = 0;
	p.skip_prefill = false;
	p.topk = 128;
	ck_assert_int_eq(engy_toploc_prove_rows(&rf, &p, &prf, &nf), -EINVAL);
	{
		struct engy_proof_limits l = limits(40, 0.99);
		struct engy_toploc_report rep;
		const char *v[4] = { "", "", "", "" };
		size_t len[4] = { 0, 0, 0, 0 };
		uint8_t one_null[258] = { 0 };
		char nb[400];

		engy_base64_encode(nb, one_null, 258);
		nb[0] = '/'; /* modulus 0xFF00: fine to decode */
		nb[1] = 'w';
		v[0] = nb;
		len[0] = strlen(nb);
		ck_assert_int_eq(
			engy_toploc_verify_rows(&rf, &p, v, len, 4, &l, &rep),
			0);
		ck_assert_int_eq(rep.verdict, ENGY_VERDICT_UNPROVEN);
		ck_assert_str_eq(rep.reason, "short_chunk");
		ck_assert_int_eq(rep.bad_proof, 0);
		engy_toploc_report_free(&rep);
	}
	p.skip_prefill = true;
	/* No decode rows, skip_prefill: nothing to prove. */
	r.n_rows = prefill;
	p.topk = 128;
	ck_assert_int_eq(engy_toploc_prove_rows(&r, &p, &prf, &nf), 0);
	ck_assert_uint_eq(nf, 0);
	ck_assert_ptr_null(prf);
	engy_toploc_ws_free(ws);
	free(pr);
	free(f);
	free(b);
}
END_TEST

/* Base64 of @n proofs, as pointers into one block. */
struct b64s {
	char *text;
	const char **v;
	size_t *len;
};

static struct b64s encode_all(const uint8_t *proofs, size_t n, size_t plen)
{
	size_t el = engy_base64_enc_len(plen) + 1, i;
	struct b64s s;

	s.text = malloc(n * el + 1);
	s.v = malloc((n + 1) * sizeof(*s.v));
	s.len = malloc((n + 1) * sizeof(*s.len));
	ck_assert(s.text && s.v && s.len);
	for (i = 0; i < n; i++) {
		s.len[i] = engy_base64_encode(s.text + i * el,
					      proofs + i * plen, plen);
		s.v[i] = s.text + i * el;
	}
	return s;
}

static void free_b64s(struct b64s *s)
{
	free(s->text);
	free(s->v);
	free(s->len);
}

struct fixture {
	float *f;
	uint16_t *b;
	struct engy_rows rows;
	uint8_t *proofs;
	size_t n;
	struct b64s s;
};

/* A 100-chunk request (3200 decode rows of 512, 4 prefill rows). */
static void fixture(struct fixture *x)
{
	const uint32_t hidden = 512, rows = 3204;

	x->f = rows_f32((size_t)rows * hidden, 7, 0);
	x->b = cast(x->f, (size_t)rows * hidden);
	x->rows = mk_rows(x->b, ENGY_DTYPE_BF16, rows, hidden, 4);
	ck_assert_int_eq(
		engy_toploc_prove_rows(&x->rows, &P128, &x->proofs, &x->n), 0);
	ck_assert_uint_eq(x->n, 100);
	x->s = encode_all(x->proofs, x->n, 258);
}

static void fixture_free(struct fixture *x)
{
	free_b64s(&x->s);
	free(x->proofs);
	free(x->f);
	free(x->b);
}

static struct engy_toploc_report verify(const struct fixture *x,
					const struct engy_rows *rows, size_t n,
					struct engy_proof_limits l)
{
	struct engy_toploc_report rep;

	ck_assert_int_eq(engy_toploc_verify_rows(rows, &P128, x->s.v, x->s.len,
						 n, &l, &rep),
			 0);
	return rep;
}

START_TEST(test_verdicts)
{
	struct fixture x;
	struct engy_toploc_report rep;
	size_t total, i;
	float *g;
	uint16_t *nz, *other;
	struct engy_rows r;

	fixture(&x);
	total = (size_t)x.rows.n_rows * x.rows.hidden;
	/* The same rows: every chunk exact. */
	rep = verify(&x, &x.rows, x.n, limits(40, 0.99));
	ck_assert_int_eq(rep.verdict, ENGY_VERDICT_PASS);
	ck_assert_str_eq(rep.reason, "ok");
	ck_assert_uint_eq(rep.n_chunks, 100);
	ck_assert_uint_eq(rep.n_pass, 100);
	for (i = 0; i < rep.n_chunks; i++)
		ck_assert_uint_eq(rep.chunks[i].exp_mismatches, 0);
	engy_toploc_report_free(&rep);
	/* ~1% relative noise (f32 rows this time) still passes. */
	g = rows_f32(total, 7, 0.01);
	r = mk_rows(g, ENGY_DTYPE_F32, x.rows.n_rows, x.rows.hidden, 4);
	rep = verify(&x, &r, x.n, limits(40, 0.99));
	ck_assert_int_eq(rep.verdict, ENGY_VERDICT_PASS);
	for (i = 0; i < rep.n_chunks; i++)
		ck_assert_uint_le(rep.chunks[i].exp_mismatches, 20);
	engy_toploc_report_free(&rep);
	/* ... unless a mantissa limit is set below what noise costs. */
	{
		struct engy_proof_limits l = limits(40, 0.99);

		l.max_mant_mean = 0.25;
		rep = verify(&x, &r, x.n, l);
		ck_assert_int_eq(rep.verdict, ENGY_VERDICT_CHEAT);
		ck_assert_str_eq(rep.reason, "mant_mean");
		engy_toploc_report_free(&rep);
	}
	free(g);
	/* Rows of another model fail every chunk. */
	g = rows_f32(total, 8, 0);
	r.data = g;
	rep = verify(&x, &r, x.n, limits(40, 0.99));
	ck_assert_int_eq(rep.verdict, ENGY_VERDICT_CHEAT);
	ck_assert_str_eq(rep.reason, "exp_mismatch");
	ck_assert_uint_eq(rep.n_pass, 0);
	engy_toploc_report_free(&rep);
	/* One chunk of 100 from another model: 0.99 still passes, 1.0 not;
	 * two such chunks fail 0.99. */
	other = cast(g, total);
	nz = malloc(total * sizeof(*nz));
	ck_assert_ptr_nonnull(nz);
	memcpy(nz, x.b, total * sizeof(*nz));
	memcpy(nz + (4 + 32 * 50) * 512, other, 32 * 512 * sizeof(*nz));
	r = mk_rows(nz, ENGY_DTYPE_BF16, x.rows.n_rows, x.rows.hidden, 4);
	rep = verify(&x, &r, x.n, limits(40, 0.99));
	ck_assert_int_eq(rep.verdict, ENGY_VERDICT_PASS);
	ck_assert_uint_eq(rep.n_pass, 99);
	ck_assert_uint_gt(rep.chunks[50].exp_mismatches, 40);
	engy_toploc_report_free(&rep);
	rep = verify(&x, &r, x.n, limits(40, 1.0));
	ck_assert_int_eq(rep.verdict, ENGY_VERDICT_CHEAT);
	engy_toploc_report_free(&rep);
	memcpy(nz + (4 + 32 * 99) * 512, other, 32 * 512 * sizeof(*nz));
	rep = verify(&x, &r, x.n, limits(40, 0.99));
	ck_assert_int_eq(rep.verdict, ENGY_VERDICT_CHEAT);
	ck_assert_uint_eq(rep.n_pass, 98);
	engy_toploc_report_free(&rep);
	/* The threshold is the configured one: at 128 all pass. */
	rep = verify(&x, &r, x.n, limits(128, 0.99));
	ck_assert_int_eq(rep.verdict, ENGY_VERDICT_PASS);
	engy_toploc_report_free(&rep);
	free(nz);
	free(other);
	free(g);
	fixture_free(&x);
}
END_TEST

START_TEST(test_chunk_fail_boundaries)
{
	struct engy_toploc_stats st = { 40, 10, 8 };
	struct engy_proof_limits l = limits(40, 0.99);

	ck_assert_ptr_null(engy_toploc_chunk_fail(&st, &l));
	st.exp_mismatches = 41;
	ck_assert_str_eq(engy_toploc_chunk_fail(&st, &l), "exp_mismatch");
	st.exp_mismatches = 0;
	st.mant_mean = st.mant_median = ldexp(1, 64);
	ck_assert_ptr_null(engy_toploc_chunk_fail(&st, &l)); /* unchecked */
	l.max_mant_mean = 10;
	ck_assert_str_eq(engy_toploc_chunk_fail(&st, &l), "mant_mean");
	st.mant_mean = 10;
	ck_assert_ptr_null(engy_toploc_chunk_fail(&st, &l));
	l.max_mant_median = 8;
	ck_assert_str_eq(engy_toploc_chunk_fail(&st, &l), "mant_median");
	st.mant_median = 8;
	ck_assert_ptr_null(engy_toploc_chunk_fail(&st, &l));
}
END_TEST

static void expect_unproven(const struct fixture *x, const char *const *v,
			    const size_t *len, size_t n, const char *reason,
			    long which)
{
	struct engy_proof_limits l = limits(40, 0.99);
	struct engy_toploc_report rep;

	ck_assert_int_eq(
		engy_toploc_verify_rows(&x->rows, &P128, v, len, n, &l, &rep),
		0);
	ck_assert_int_eq(rep.verdict, ENGY_VERDICT_UNPROVEN);
	ck_assert_str_eq(rep.reason, reason);
	ck_assert_int_eq(rep.bad_proof, which);
	engy_toploc_report_free(&rep);
}

START_TEST(test_unusable_proofs)
{
	struct fixture x;
	const char *v[101];
	size_t len[101];
	char nullp[400], longp[400];
	uint8_t raw[261];

	fixture(&x);
	memcpy(v, x.s.v, 100 * sizeof(*v));
	memcpy(len, x.s.len, 100 * sizeof(*len));
	expect_unproven(&x, v, len, 99, "chunk_count", -1);
	v[100] = v[0];
	len[100] = len[0];
	expect_unproven(&x, v, len, 101, "chunk_count", -1);
	v[7] = "not base64!";
	len[7] = strlen(v[7]);
	expect_unproven(&x, v, len, 100, "bad_base64", 7);
	v[7] = "/9kAAwABAAA="; /* k = 3 */
	len[7] = strlen(v[7]);
	expect_unproven(&x, v, len, 100, "bad_length", 7);
	memcpy(raw, x.proofs, 258);
	raw[258] = raw[259] = raw[260] = 0;
	engy_base64_encode(longp, raw, 261);
	v[7] = longp;
	len[7] = strlen(longp);
	expect_unproven(&x, v, len, 100, "bad_length", 7);
	memset(raw, 0, 258);
	engy_base64_encode(nullp, raw, 258);
	v[7] = nullp;
	len[7] = strlen(nullp);
	expect_unproven(&x, v, len, 100, "null_proof", 7);
	v[7] = "";
	len[7] = 0;
	expect_unproven(&x, v, len, 100, "bad_length", 7);
	/* Nothing generated: nothing proven. */
	x.rows.n_rows = 4;
	expect_unproven(&x, v, len, 0, "no_chunks", -1);
	/* A last chunk under topk values. */
	{
		struct engy_rows r = x.rows;
		struct engy_toploc_params p = { 128, 32, true };
		struct engy_proof_limits l = limits(40, 0.99);
		struct engy_toploc_report rep;

		r.hidden = 64; /* reinterpret: 99 full chunks + 1 row */
		r.n_rows = 4 + 32 * 99 + 1;
		ck_assert_int_eq(engy_toploc_verify_rows(&r, &p, x.s.v, x.s.len,
							 100, &l, &rep),
				 0);
		ck_assert_int_eq(rep.verdict, ENGY_VERDICT_UNPROVEN);
		ck_assert_str_eq(rep.reason, "short_chunk");
		ck_assert_int_eq(rep.bad_proof, 99);
		engy_toploc_report_free(&rep);
		l.min_pass_ratio = 1.5;
		ck_assert_int_eq(engy_toploc_verify_rows(&r, &p, x.s.v, x.s.len,
							 100, &l, &rep),
				 -EINVAL);
		ck_assert_int_eq(engy_toploc_verify_rows(&r, &p, x.s.v, x.s.len,
							 100, NULL, &rep),
				 -EINVAL);
	}
	fixture_free(&x);
}
END_TEST

static struct engy_toploc_report vjson(const struct engy_rows *rows,
				       const char *json)
{
	struct engy_proof_limits l = limits(40, 0.99);
	struct engy_toploc_report rep;

	ck_assert_int_eq(engy_toploc_verify_json(rows, &P128, json,
						 strlen(json), &l, &rep),
			 0);
	return rep;
}

static void json_unproven(const struct engy_rows *rows, const char *json,
			  const char *reason)
{
	struct engy_toploc_report rep = vjson(rows, json);

	ck_assert_int_eq(rep.verdict, ENGY_VERDICT_UNPROVEN);
	ck_assert_msg(strcmp(rep.reason, reason) == 0, "%s: %s, not %s", json,
		      rep.reason, reason);
	engy_toploc_report_free(&rep);
}

START_TEST(test_commitment_json)
{
	struct fixture x;
	struct engy_toploc_report rep;
	char *json, *detail, buf[2048], *edit;
	cJSON *root, *it;
	size_t i;

	fixture(&x);
	ck_assert_int_eq(
		engy_toploc_commitment_json(&P128, x.proofs, x.n, 3200, &json),
		0);
	root = cJSON_Parse(json);
	ck_assert_ptr_nonnull(root);
	ck_assert_int_eq(cJSON_GetArraySize(root), 5); /* no prompt_ids */
	ck_assert_int_eq(cJSON_GetObjectItem(root, "topk")->valueint, 128);
	ck_assert_int_eq(
		cJSON_GetObjectItem(root, "decode_batching_size")->valueint,
		32);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(root, "skip_prefill")));
	ck_assert_int_eq(cJSON_GetObjectItem(root, "n_tokens")->valueint, 3200);
	it = cJSON_GetObjectItem(root, "proofs");
	ck_assert_int_eq(cJSON_GetArraySize(it), 100);
	for (i = 0; i < 100; i++)
		ck_assert_str_eq(cJSON_GetArrayItem(it, (int)i)->valuestring,
				 x.s.v[i]);
	cJSON_Delete(root);

	rep = vjson(&x.rows, json);
	ck_assert_int_eq(rep.verdict, ENGY_VERDICT_PASS);
	ck_assert_int_eq(engy_toploc_report_json(&rep, &detail), 0);
	root = cJSON_Parse(detail);
	ck_assert_str_eq(cJSON_GetObjectItem(root, "verdict")->valuestring,
			 "pass");
	ck_assert_int_eq(cJSON_GetObjectItem(root, "passed")->valueint, 100);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(root, "exp_mismatches")),
		100);
	cJSON_Delete(root);
	free(detail);
	engy_toploc_report_free(&rep);

	/* Parameters that differ from ours. */
	edit = strstr(json, "\"topk\":128");
	ck_assert_ptr_nonnull(edit);
	memcpy(edit, "\"topk\":127", 10);
	json_unproven(&x.rows, json, "topk_mismatch");
	memcpy(edit, "\"topk\":128", 10);
	edit = strstr(json, "\"n_tokens\":3200");
	memcpy(edit, "\"n_tokens\":3201", 15);
	json_unproven(&x.rows, json, "n_tokens_mismatch");
	memcpy(edit, "\"n_tokens\":3200", 15);
	edit = strstr(json, "true");
	memcpy(edit, "null", 4);
	json_unproven(&x.rows, json, "bad_json");
	memcpy(edit, "true", 4);
	rep = vjson(&x.rows, json);
	ck_assert_int_eq(rep.verdict, ENGY_VERDICT_PASS);
	engy_toploc_report_free(&rep);
	free(json);

	json_unproven(&x.rows, "", "bad_json");
	json_unproven(&x.rows, "[1,2]", "bad_json");
	json_unproven(&x.rows, "{\"proofs\":[", "bad_json");
	json_unproven(&x.rows, "{\"topk\":128,\"decode_batching_size\":32}",
		      "bad_json");
	json_unproven(&x.rows,
		      "{\"topk\":\"128\",\"decode_batching_size\":32,"
		      "\"proofs\":[]}",
		      "bad_json");
	json_unproven(&x.rows,
		      "{\"topk\":128.5,\"decode_batching_size\":32,"
		      "\"proofs\":[]}",
		      "bad_json");
	json_unproven(&x.rows,
		      "{\"topk\":-128,\"decode_batching_size\":32,"
		      "\"proofs\":[]}",
		      "bad_json");
	json_unproven(&x.rows,
		      "{\"topk\":128,\"decode_batching_size\":16,"
		      "\"proofs\":[]}",
		      "dbs_mismatch");
	json_unproven(&x.rows,
		      "{\"topk\":128,\"decode_batching_size\":32,"
		      "\"skip_prefill\":false,\"proofs\":[]}",
		      "skip_prefill_mismatch");
	json_unproven(&x.rows,
		      "{\"topk\":128,\"decode_batching_size\":32,"
		      "\"proofs\":{}}",
		      "bad_json");
	json_unproven(&x.rows,
		      "{\"topk\":128,\"decode_batching_size\":32,"
		      "\"proofs\":[]}",
		      "chunk_count");
	/* 100 proofs, one of them a number. */
	{
		size_t o = (size_t)snprintf(buf, sizeof(buf),
					    "{\"topk\":128,"
					    "\"decode_batching_size\":32,"
					    "\"proofs\":[1");

		for (i = 1; i < 100; i++)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o,
					      ",\"\"");
		snprintf(buf + o, sizeof(buf) - o, "]}");
		json_unproven(&x.rows, buf, "bad_json");
	}
	ck_assert_int_eq(
		engy_toploc_verify_json(&x.rows, &P128, NULL, 0, NULL, &rep),
		-EINVAL);
	fixture_free(&x);
}
END_TEST

/* The end-to-end regression vector of specs/toploc.md §8. */
START_TEST(test_lcg_vector)
{
	static const char *const want[] = { "/9mDt91Gn7HExdSj+5xlzITY",
					    "/9mgbiLM6fHwblBPI/52trjt" };
	const struct engy_toploc_params p = { 8, 2, true };
	uint16_t v[5 * 16];
	struct engy_rows r = mk_rows(v, ENGY_DTYPE_BF16, 5, 16, 1);
	uint32_t s = 12345;
	uint8_t *proofs;
	char b64[32];
	size_t i, n;

	for (i = 0; i < 5 * 16; i++) {
		s = s * 1103515245u + 12345u;
		v[i] = (uint16_t)(((s >> 16) & 0x8000) |
				  (0x3C00 + ((s >> 8) & 0x7FF)));
	}
	ck_assert_int_eq(engy_toploc_prove_rows(&r, &p, &proofs, &n), 0);
	ck_assert_uint_eq(n, 2);
	for (i = 0; i < n; i++) {
		engy_base64_encode(b64, proofs + i * 18, 18);
		ck_assert_str_eq(b64, want[i]);
	}
	free(proofs);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("toploc_rows");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_n_chunks);
	tcase_add_test(tc, test_prove_rows_chunks);
	tcase_add_test(tc, test_verdicts);
	tcase_add_test(tc, test_chunk_fail_boundaries);
	tcase_add_test(tc, test_unusable_proofs);
	tcase_add_test(tc, test_commitment_json);
	tcase_add_test(tc, test_lcg_vector);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
