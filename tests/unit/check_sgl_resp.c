/* SPDX-License-Identifier: MIT */
/*
 * The streaming /generate response parser: exact floats against strtof,
 * the response fields, ragged hidden states, every split of the input,
 * limits and malformed input.
 *
 * Oracle: libc's strtof for every float; the other fields hand-written
 * from sglang's response shape.
 */
#include <check.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sgl_resp.h"

/* ---- exact numbers ------------------------------------------------------ */

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static void same_as_strtof(const char *s)
{
	float got = 0, want = strtof(s, NULL);

	ck_assert_msg(engy_sglresp_parse_float(s, strlen(s), &got) == 0,
		      "refused %s", s);
	ck_assert_msg(bits(got) == bits(want) || (isnan(got) && isnan(want)),
		      "%s: got %a want %a", s, (double)got, (double)want);
}

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

START_TEST(test_float_edges)
{
	static const char *const v[] = {
		"0",
		"-0",
		"0.0",
		"-0.0",
		"0e10",
		"1",
		"-1",
		"0.5",
		"1e0",
		"1E5",
		"1e+5",
		"1e-5",
		"123456789",
		"0.1",
		"0.2",
		"0.3",
		"3.4028235e38",
		"3.4028234663852886e38",
		"3.40282356779733661637539395458142568448e38", /* midpoint */
		"3.4028236e38",
		"1e39",
		"-1e39",
		"1e-45",
		"1.4e-45",
		"7e-46",
		"7.1e-46",
		"1e-46",
		"1.17549435e-38",
		"1.1754942e-38",
		"1.1754943508222875e-38",
		"5.877472e-39",
		/* 1 + 2^-24 (a tie: to even), just above, just below */
		"1.000000059604644775390625",
		"1.0000000596046447753906250000001",
		"1.0000000596046447753906249999999",
		"1.000000178813934326171875", /* 1 + 3*2^-24: tie, up */
		"16777217",
		"16777219",
		"33554434",
		"9007199254740993",
		"0.0234375",
		"-1.3515625",
		"0.00012302398681640625",
		"2.2250738585072014e-308",
		"4.9e-324",
		"1e308",
		"1e-400",
		"123456789012345678901234567890",
		"0.000000000000000000000001",
		"1.00000000000000000000000000000000000000000000000000001",
		"0.99999999999999999999999999999999999999999999999999999",
		"8.589973e9",
		"8.589974e9",
		"-9.8765432e-12",
		/* the double of these is a float midpoint, the value is not */
		"4282791865989566e-18",
		"6778323614249779e1",
		"7915610885620117e-14",
		"4969879537820816e-16",
		"6936458425983304e2",
		"2066360693424940e-17",
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		same_as_strtof(v[i]);
}
END_TEST

START_TEST(test_negative_zero)
{
	float f = 1;

	ck_assert_int_eq(engy_sglresp_parse_float("-0.0", 4, &f), 0);
	ck_assert(f == 0 && signbit(f));
	ck_assert_int_eq(engy_sglresp_parse_float("-0e-7", 5, &f), 0);
	ck_assert(f == 0 && signbit(f));
	ck_assert_int_eq(engy_sglresp_parse_float("0", 1, &f), 0);
	ck_assert(f == 0 && !signbit(f));
	ck_assert_int_eq(engy_sglresp_parse_float("-1e-60", 6, &f), 0);
	ck_assert(f == 0 && signbit(f));
}
END_TEST

/* Every float's shortest, 9- and 17-digit forms, and random decimals. */
START_TEST(test_float_random)
{
	char s[64];
	int i, k;

	for (i = 0; i < 200000; i++) {
		uint32_t u = (uint32_t)next();
		float f;

		memcpy(&f, &u, sizeof(f));
		if (!isfinite(f))
			continue;
		snprintf(s, sizeof(s), "%.9g", (double)f);
		same_as_strtof(s);
		snprintf(s, sizeof(s), "%.17g", (double)f);
		same_as_strtof(s);
		for (k = 1; k <= 9; k++) { /* shortest round trip */
			snprintf(s, sizeof(s), "%.*g", k, (double)f);
			if (strtof(s, NULL) == f)
				break;
		}
		same_as_strtof(s);
		/* bf16 values, as the serve prints them (shortest double) */
		u &= 0xffff0000u;
		memcpy(&f, &u, sizeof(f));
		if (!isfinite(f))
			continue;
		for (k = 1; k <= 17; k++) {
			snprintf(s, sizeof(s), "%.*g", k, (double)f);
			if (strtod(s, NULL) == (double)f)
				break;
		}
		same_as_strtof(s);
	}
	for (i = 0; i < 100000; i++) {
		int nd = 1 + (int)(next() % 25), e = (int)(next() % 100) - 50;
		int at = 0;

		if (next() & 1)
			s[at++] = '-';
		s[at++] = (char)('1' + next() % 9);
		if (nd > 1)
			s[at++] = '.';
		for (k = 1; k < nd; k++)
			s[at++] = (char)('0' + next() % 10);
		snprintf(s + at, sizeof(s) - (size_t)at, "e%d", e);
		same_as_strtof(s);
	}
}
END_TEST

START_TEST(test_float_invalid)
{
	static const char *const bad[] = {
		"",   "-",   "01",  "-01",  "1.",    ".5",    "+1",
		"1e", "1e+", "1e-", "0x10", "1.5x",  "NaN",   "Infinity",
		"1 ", " 1",  "1,",  "--1",  "1.2.3", "1e5e5", "e5",
	};
	char big[ENGY_SGLRESP_NUM_MAX + 2];
	size_t i;
	float f;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(engy_sglresp_parse_float(bad[i], strlen(bad[i]),
						       &f) == -EINVAL,
			      "%s", bad[i]);
	memset(big, '1', sizeof(big));
	ck_assert_int_eq(
		engy_sglresp_parse_float(big, ENGY_SGLRESP_NUM_MAX + 1, &f),
		-E2BIG);
	ck_assert_int_eq(
		engy_sglresp_parse_float(big, ENGY_SGLRESP_NUM_MAX, &f), 0);
	ck_assert(isinf(f));
}
END_TEST

/* ---- responses --------------------------------------------------------- */

struct rows {
	uint32_t elem[64], row[64], width[64];
	float v[64][8];
	size_t n;
	int fail_with;
};

static int on_row(void *arg, uint32_t elem, uint32_t row, const float *v,
		  uint32_t width)
{
	struct rows *r = arg;

	if (r->fail_with)
		return r->fail_with;
	ck_assert_uint_lt(r->n, 64);
	r->elem[r->n] = elem;
	r->row[r->n] = row;
	r->width[r->n] = width;
	memcpy(r->v[r->n], v, (width < 8 ? width : 8) * sizeof(float));
	r->n++;
	return 0;
}

static int parse_cut(const char *s, size_t len, const size_t *cuts,
		     size_t ncuts, struct engy_sglresp_opts *o, struct rows *r,
		     struct engy_jf **out)
{
	struct engy_jf *j;
	size_t at = 0, i;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	o->on_row = on_row;
	o->arg = r;
	ck_assert_int_eq(engy_sglresp_new(o, &j), 0);
	for (i = 0; i <= ncuts && !rc; i++) {
		size_t to = i < ncuts ? cuts[i] : len;

		rc = engy_sglresp_feed(j, s + at, to - at);
		at = to;
	}
	if (!rc)
		rc = engy_sglresp_finish(j);
	*out = j;
	return rc;
}

static int parse(const char *s, struct engy_sglresp_opts *o, struct rows *r,
		 struct engy_jf **out)
{
	return parse_cut(s, strlen(s), NULL, 0, o, r, out);
}

static const char resp[] =
	"{\"text\":\"Hi \\\"there\\\" \\u00e9\",\"output_ids\":[9,8,151645],"
	"\"meta_info\":{\"id\":\"engy-1\",\"finish_reason\":{\"type\":\"stop\","
	"\"matched\":151645},\"prompt_tokens\":3,\"completion_tokens\":3,"
	"\"cached_tokens\":1,\"e2e_latency\":0.5,"
	"\"weight_version\":\"default\","
	"\"output_token_logprobs\":[[-0.5,9,null],[-1.25,8,\"x\"],"
	"[null,151645,null]],"
	"\"some_nested\":{\"a\":[1,{\"b\":[true,false,null]}],\"c\":\"]}\"},"
	"\"hidden_states\":[[[1,2,3,4],[5,6,7,8],[0.5,-0.25,1e-3,-0.0]],"
	" [ 9 , 10 , 11 , 12 ] ,[1.5E2,2.5e-1,-3,NaN]]},"
	"\"a_very_long_member_name_that_is_not_hidden_states\":[[1]]}";

static void check_resp(const struct engy_jf *j, const struct rows *r)
{
	const struct engy_sglresp_resp *p = engy_sglresp_resp(j);

	ck_assert(p->has_meta && p->has_output_ids && p->has_logprobs &&
		  p->has_hidden && !p->has_error);
	ck_assert_uint_eq(p->n_ids, 3);
	ck_assert_uint_eq(p->ids[2], 151645);
	ck_assert_uint_eq(p->n_lp, 3);
	ck_assert(p->lp[0] == -0.5f && p->lp[1] == -1.25f && isnan(p->lp[2]));
	ck_assert_uint_eq(p->lp_ids[1], 8);
	ck_assert_int_eq(p->prompt_tokens, 3);
	ck_assert_int_eq(p->completion_tokens, 3);
	ck_assert_int_eq(p->cached_tokens, 1);
	ck_assert_int_eq(p->finish, ENGY_SGLRESP_FINISH_STOP);
	ck_assert_int_eq(p->matched, 151645);
	ck_assert_uint_eq(p->n_elems, 3);
	ck_assert(p->elem0_block);
	ck_assert_uint_eq(p->elem0_rows, 3);
	ck_assert_uint_eq(p->width, 4);
	/* Only the block's last row, then the decode rows. */
	ck_assert_uint_eq(r->n, 3);
	ck_assert_uint_eq(r->elem[0], 0);
	ck_assert_uint_eq(r->row[0], 2);
	ck_assert(r->v[0][0] == 0.5f && r->v[0][1] == -0.25f &&
		  r->v[0][2] == 1e-3f && r->v[0][3] == 0 &&
		  signbit(r->v[0][3]));
	ck_assert_uint_eq(r->elem[1], 1);
	ck_assert(r->v[1][0] == 9 && r->v[1][3] == 12);
	ck_assert_uint_eq(r->elem[2], 2);
	ck_assert(r->v[2][0] == 150 && r->v[2][1] == 0.25f &&
		  r->v[2][2] == -3 && isnan(r->v[2][3]));
}

START_TEST(test_response_fields)
{
	struct engy_sglresp_opts o = { 0 };
	struct engy_jf *j;
	struct rows r;

	ck_assert_int_eq(parse(resp, &o, &r, &j), 0);
	check_resp(j, &r);
	ck_assert_str_eq(engy_sglresp_error(j), "");
	engy_sglresp_free(j);
}
END_TEST

START_TEST(test_every_split)
{
	size_t len = strlen(resp), i, k, cuts[2];
	struct engy_sglresp_opts o = { 0 };
	struct engy_jf *j;
	struct rows r;

	for (i = 0; i <= len; i++) {
		cuts[0] = i;
		ck_assert_int_eq(parse_cut(resp, len, cuts, 1, &o, &r, &j), 0);
		check_resp(j, &r);
		engy_sglresp_free(j);
	}
	/* Two cuts around each number and name of the tail. */
	for (i = len - 120; i <= len; i++)
		for (k = i; k <= len; k++) {
			cuts[0] = i;
			cuts[1] = k;
			ck_assert_int_eq(
				parse_cut(resp, len, cuts, 2, &o, &r, &j), 0);
			check_resp(j, &r);
			engy_sglresp_free(j);
		}
}
END_TEST

START_TEST(test_all_block_rows_and_skip)
{
	struct engy_sglresp_opts o = { .all_block_rows = true };
	struct engy_jf *j;
	struct rows r;

	ck_assert_int_eq(parse(resp, &o, &r, &j), 0);
	ck_assert_uint_eq(r.n, 5);
	ck_assert(r.elem[0] == 0 && r.row[0] == 0 && r.v[0][0] == 1);
	ck_assert(r.elem[1] == 0 && r.row[1] == 1 && r.v[1][0] == 5);
	ck_assert(r.elem[2] == 0 && r.row[2] == 2 && r.v[2][0] == 0.5f);
	ck_assert(r.elem[3] == 1 && r.elem[4] == 2);
	engy_sglresp_free(j);

	/* Elements already taken are passed over, and still counted. */
	memset(&o, 0, sizeof(o));
	o.skip_elems = 2;
	ck_assert_int_eq(parse(resp, &o, &r, &j), 0);
	ck_assert_uint_eq(r.n, 1);
	ck_assert_uint_eq(r.elem[0], 2);
	ck_assert_uint_eq(engy_sglresp_resp(j)->n_elems, 3);
	ck_assert_uint_eq(engy_sglresp_resp(j)->n_ids, 3);
	engy_sglresp_free(j);
}
END_TEST

START_TEST(test_empty_prefill_and_shapes)
{
	struct engy_sglresp_opts o = { 0 };
	const struct engy_sglresp_resp *p;
	struct engy_jf *j;
	struct rows r;

	/* A full radix-cache hit: element 0 is an empty block. */
	ck_assert_int_eq(parse("{\"meta_info\":{\"hidden_states\":[[],[1,2],"
			       "[3,4]]}}",
			       &o, &r, &j),
			 0);
	p = engy_sglresp_resp(j);
	ck_assert(p->has_hidden && p->elem0_block);
	ck_assert_uint_eq(p->elem0_rows, 0);
	ck_assert_uint_eq(p->n_elems, 3);
	ck_assert_uint_eq(r.n, 2);
	ck_assert_uint_eq(r.elem[0], 1);
	engy_sglresp_free(j);

	/* No hidden states at all, null, and an empty list. */
	ck_assert_int_eq(
		parse("{\"meta_info\":{\"cached_tokens\":0}}", &o, &r, &j), 0);
	ck_assert(!engy_sglresp_resp(j)->has_hidden);
	ck_assert_int_eq(engy_sglresp_resp(j)->completion_tokens, -1);
	engy_sglresp_free(j);
	ck_assert_int_eq(
		parse("{\"meta_info\":{\"hidden_states\":null}}", &o, &r, &j),
		0);
	ck_assert(!engy_sglresp_resp(j)->has_hidden);
	engy_sglresp_free(j);
	ck_assert_int_eq(
		parse("{\"meta_info\":{\"hidden_states\":[]}}", &o, &r, &j), 0);
	ck_assert(engy_sglresp_resp(j)->has_hidden);
	ck_assert_uint_eq(engy_sglresp_resp(j)->n_elems, 0);
	engy_sglresp_free(j);

	/* Non-finite values as Python and orjson write them. */
	ck_assert_int_eq(parse("{\"meta_info\":{\"hidden_states\":[[NaN,"
			       "Infinity,-Infinity,null]]}}",
			       &o, &r, &j),
			 0);
	ck_assert(isnan(r.v[0][0]) && isinf(r.v[0][1]) && r.v[0][1] > 0 &&
		  isinf(r.v[0][2]) && r.v[0][2] < 0 && isnan(r.v[0][3]));
	ck_assert(!engy_sglresp_resp(j)->elem0_block);
	engy_sglresp_free(j);
}
END_TEST

START_TEST(test_finish_and_errors)
{
	struct engy_sglresp_opts o = { 0 };
	const struct engy_sglresp_resp *p;
	struct engy_jf *j;
	struct rows r;

	ck_assert_int_eq(parse("{\"meta_info\":{\"finish_reason\":{\"type\":"
			       "\"abort\",\"message\":\"Abort in waiting "
			       "queue\",\"status_code\":null}}}",
			       &o, &r, &j),
			 0);
	p = engy_sglresp_resp(j);
	ck_assert_int_eq(p->finish, ENGY_SGLRESP_FINISH_ABORT);
	ck_assert_str_eq(p->finish_msg, "Abort in waiting queue");
	engy_sglresp_free(j);

	ck_assert_int_eq(parse("{\"meta_info\":{\"finish_reason\":{\"type\":"
			       "\"stop\",\"matched\":\"</s>\"}}}",
			       &o, &r, &j),
			 0);
	ck_assert_int_eq(engy_sglresp_resp(j)->finish,
			 ENGY_SGLRESP_FINISH_STOP);
	ck_assert_int_eq(engy_sglresp_resp(j)->matched, -1);
	engy_sglresp_free(j);

	ck_assert_int_eq(parse("{\"meta_info\":{\"finish_reason\":{\"type\":"
			       "\"length\",\"length\":16}}}",
			       &o, &r, &j),
			 0);
	ck_assert_int_eq(engy_sglresp_resp(j)->finish,
			 ENGY_SGLRESP_FINISH_LENGTH);
	engy_sglresp_free(j);

	ck_assert_int_eq(
		parse("{\"meta_info\":{\"finish_reason\":null}}", &o, &r, &j),
		0);
	ck_assert_int_eq(engy_sglresp_resp(j)->finish,
			 ENGY_SGLRESP_FINISH_NONE);
	engy_sglresp_free(j);

	ck_assert_int_eq(parse("{\"error\":{\"message\":\"boom \\\"x\\\"\"}}",
			       &o, &r, &j),
			 0);
	ck_assert(engy_sglresp_resp(j)->has_error);
	ck_assert_str_eq(engy_sglresp_resp(j)->error, "boom \"x\"");
	engy_sglresp_free(j);

	ck_assert_int_eq(parse("{\"object\":\"error\",\"message\":\"bad\","
			       "\"code\":400}",
			       &o, &r, &j),
			 0);
	ck_assert_str_eq(engy_sglresp_resp(j)->error, "bad");
	engy_sglresp_free(j);

	ck_assert_int_eq(parse("{\"detail\":\"Not Found\"}", &o, &r, &j), 0);
	ck_assert_str_eq(engy_sglresp_resp(j)->error, "Not Found");
	engy_sglresp_free(j);
}
END_TEST

/* A long message is cut, never overflows. */
START_TEST(test_long_message)
{
	struct engy_sglresp_opts o = { 0 };
	char *s = malloc(10000);
	struct engy_jf *j;
	struct rows r;

	ck_assert_ptr_nonnull(s);
	strcpy(s, "{\"error\":\"");
	memset(s + 10, 'm', 9000);
	strcpy(s + 9010, "\"}");
	ck_assert_int_eq(parse(s, &o, &r, &j), 0);
	ck_assert_uint_eq(strlen(engy_sglresp_resp(j)->error),
			  ENGY_SGLRESP_MSG_MAX - 1);
	engy_sglresp_free(j);
	free(s);
}
END_TEST

/* 3000 rows of 700 random floats, fed in 1 KB pieces, all exact. */
struct big {
	float *want;
	uint32_t rows, width, seen;
};

static int on_big(void *arg, uint32_t elem, uint32_t row, const float *v,
		  uint32_t width)
{
	struct big *b = arg;

	ck_assert_uint_eq(width, b->width);
	ck_assert_uint_eq(elem, b->seen);
	ck_assert(memcmp(v, b->want + (size_t)elem * width,
			 width * sizeof(float)) == 0);
	b->seen++;
	return 0;
}

START_TEST(test_huge_arrays)
{
	struct big b = { .rows = 3000, .width = 700 };
	size_t cap = (size_t)b.rows * b.width * 20 + 1000, at = 0, i, n;
	char *s = malloc(cap);
	struct engy_sglresp_opts o = { .on_row = on_big, .arg = &b };
	struct engy_jf *j;

	b.want = malloc((size_t)b.rows * b.width * sizeof(float));
	ck_assert(s && b.want);
	at += (size_t)sprintf(s, "{\"meta_info\":{\"hidden_states\":[");
	for (i = 0; i < (size_t)b.rows * b.width; i++) {
		uint32_t u = (uint32_t)next() & 0xbfffffffu; /* finite */
		float f;

		memcpy(&f, &u, sizeof(f));
		b.want[i] = f;
		if (i % b.width == 0)
			at += (size_t)sprintf(s + at, "%s[", i ? "]," : "");
		else
			s[at++] = ',';
		at += (size_t)sprintf(s + at, "%.9g", (double)f);
	}
	at += (size_t)sprintf(s + at, "]]}}");
	ck_assert_int_eq(engy_sglresp_new(&o, &j), 0);
	for (i = 0; i < at; i += n) {
		n = at - i < 1024 ? at - i : 1024;
		ck_assert_int_eq(engy_sglresp_feed(j, s + i, n), 0);
	}
	ck_assert_int_eq(engy_sglresp_finish(j), 0);
	ck_assert_uint_eq(b.seen, b.rows);
	ck_assert_uint_eq(engy_sglresp_resp(j)->n_elems, b.rows);
	engy_sglresp_free(j);
	free(b.want);
	free(s);
}
END_TEST

START_TEST(test_malformed)
{
	static const struct {
		const char *in;
		int err;
	} bad[] = {
		{ "", -EBADMSG },
		{ "   ", -EBADMSG },
		{ "[]", -EBADMSG },
		{ "[{\"text\":\"a\"}]", -EBADMSG },
		{ "\"text\"", -EBADMSG },
		{ "12", -EBADMSG },
		{ "null", -EBADMSG },
		{ "{", -EBADMSG },
		{ "{\"a\":}", -EBADMSG },
		{ "{\"a\" 1}", -EBADMSG },
		{ "{\"a\":1,}", -EBADMSG },
		{ "{\"a\":[1,]}", -EBADMSG },
		{ "{\"a\":[,1]}", -EBADMSG },
		{ "{\"a\":1]", -EBADMSG },
		{ "{\"a\":[1}", -EBADMSG },
		{ "{'a':1}", -EBADMSG },
		{ "{\"a\":01}", -EBADMSG },
		{ "{\"a\":1.}", -EBADMSG },
		{ "{\"a\":tru}", -EBADMSG },
		{ "{\"a\":\"\\x\"}", -EBADMSG },
		{ "{\"a\":\"\\u12G4\"}", -EBADMSG },
		{ "{\"a\":\"\x01\"}", -EBADMSG },
		{ "{\"a\":\"unterminated}", -EBADMSG },
		{ "{} x", -EBADMSG },
		{ "{}{}", -EBADMSG },
		{ "{\"output_ids\":[1.5]}", -EBADMSG },
		{ "{\"output_ids\":[-1]}", -EBADMSG },
		{ "{\"output_ids\":[4294967296]}", -EBADMSG },
		{ "{\"output_ids\":[\"1\"]}", -EBADMSG },
		{ "{\"output_ids\":{}}", -EBADMSG },
		{ "{\"meta_info\":[]}", -EBADMSG },
		{ "{\"meta_info\":{\"cached_tokens\":-1}}", -EBADMSG },
		{ "{\"meta_info\":{\"cached_tokens\":1.5}}", -EBADMSG },
		{ "{\"meta_info\":{\"output_token_logprobs\":[[-1]]}}",
		  -EBADMSG },
		{ "{\"meta_info\":{\"output_token_logprobs\":[[-1,1.5]]}}",
		  -EBADMSG },
		{ "{\"meta_info\":{\"hidden_states\":[[1,2],[1]]}}", -EBADMSG },
		{ "{\"meta_info\":{\"hidden_states\":[[[1,2],[3]]]}}",
		  -EBADMSG },
		{ "{\"meta_info\":{\"hidden_states\":[[1,2],[]]}}", -EBADMSG },
		{ "{\"meta_info\":{\"hidden_states\":[[[]]]}}", -EBADMSG },
		{ "{\"meta_info\":{\"hidden_states\":[[1,\"2\"]]}}", -EBADMSG },
		{ "{\"meta_info\":{\"hidden_states\":[[1,[2]]]}}", -EBADMSG },
		{ "{\"meta_info\":{\"hidden_states\":[1,2]}}", -EBADMSG },
		{ "{\"meta_info\":{\"hidden_states\":[[true]]}}", -EBADMSG },
		{ "{\"meta_info\":{\"hidden_states\":{}}}", -EBADMSG },
		{ "{\"meta_info\":{\"hidden_states\":[[1e99999999999]]}}", 0 },
	};
	struct engy_sglresp_opts o = { 0 };
	char deep[200];
	struct engy_jf *j;
	struct rows r;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rc = parse(bad[i].in, &o, &r, &j);
		ck_assert_msg(rc == bad[i].err, "%s: %d", bad[i].in, rc);
		if (rc)
			ck_assert_msg(engy_sglresp_error(j)[0] != '\0', "%s",
				      bad[i].in);
		engy_sglresp_free(j);
	}
	/* 40 levels deep: refused, no recursion anywhere. */
	memset(deep, '[', 40);
	strcpy(deep + 40, "1");
	memset(deep + 41, ']', 40);
	deep[81] = '\0';
	memmove(deep + 5, deep, 82);
	memcpy(deep, "{\"x\":", 5);
	strcat(deep, "}");
	ck_assert_int_eq(parse(deep, &o, &r, &j), -EBADMSG);
	ck_assert_str_eq(engy_sglresp_error(j), "nested too deep");
	engy_sglresp_free(j);
}
END_TEST

START_TEST(test_limits_and_callback)
{
	struct engy_sglresp_opts o = { .max_width = 3 };
	struct engy_jf *j;
	struct rows r;
	char num[ENGY_SGLRESP_NUM_MAX + 60];

	ck_assert_int_eq(parse("{\"meta_info\":{\"hidden_states\":"
			       "[[1,2,3,4]]}}",
			       &o, &r, &j),
			 -E2BIG);
	engy_sglresp_free(j);
	memset(&o, 0, sizeof(o));
	o.max_ids = 2;
	ck_assert_int_eq(parse("{\"output_ids\":[1,2,3]}", &o, &r, &j), -E2BIG);
	engy_sglresp_free(j);

	memset(&o, 0, sizeof(o));
	strcpy(num, "{\"a\":");
	memset(num + 5, '1', ENGY_SGLRESP_NUM_MAX + 1);
	strcpy(num + 6 + ENGY_SGLRESP_NUM_MAX, "}");
	ck_assert_int_eq(parse(num, &o, &r, &j), -E2BIG);
	engy_sglresp_free(j);

	/* What the row callback returns stops the parse, sticky. */
	memset(&o, 0, sizeof(o));
	memset(&r, 0, sizeof(r));
	o.on_row = on_row;
	o.arg = &r;
	r.fail_with = -ENOSPC;
	ck_assert_int_eq(engy_sglresp_new(&o, &j), 0);
	ck_assert_int_eq(engy_sglresp_feed(j, resp, strlen(resp)), -ENOSPC);
	ck_assert_int_eq(engy_sglresp_finish(j), -ENOSPC);
	ck_assert_uint_gt(engy_sglresp_offset(j), 0);
	engy_sglresp_free(j);
}
END_TEST

/* One parser, many documents (what a stream of events does). */
/*
 * output_top_logprobs (sglang's shape, written here by hand): per
 * position null or [[logprob, id, text], …]; read only when asked, at
 * most top_n per position, in every split; hostile shapes refused.
 */
START_TEST(test_top_logprobs)
{
	static const char top[] =
		"{\"output_ids\":[5,6,7],\"meta_info\":{\"output_top_logprobs\":"
		"[[[-0.5,5,\"a\"],[-1.5,9,null]],null,[[-Infinity,1,null]]],"
		"\"completion_tokens\":3}}";
	static const struct {
		const char *in;
		int err;
	} bad[] = {
		{ "{\"meta_info\":{\"output_top_logprobs\":[[[-1,1],[-2,2],"
		  "[-3,3]]]}}",
		  -E2BIG },
		{ "{\"meta_info\":{\"output_top_logprobs\":[[[-1]]]}}",
		  -EBADMSG },
		{ "{\"meta_info\":{\"output_top_logprobs\":[[[-1,-2]]]}}",
		  -EBADMSG },
		{ "{\"meta_info\":{\"output_top_logprobs\":[[[-1,1.5]]]}}",
		  -EBADMSG },
		{ "{\"meta_info\":{\"output_top_logprobs\":[[[-1,null]]]}}",
		  -EBADMSG },
		{ "{\"meta_info\":{\"output_top_logprobs\":[[null]]}}",
		  -EBADMSG },
		{ "{\"meta_info\":{\"output_top_logprobs\":[[1]]}}", -EBADMSG },
		{ "{\"meta_info\":{\"output_top_logprobs\":[\"x\"]}}",
		  -EBADMSG },
		{ "{\"meta_info\":{\"output_top_logprobs\":{\"a\":1}}}",
		  -EBADMSG },
	};
	struct engy_sglresp_opts o = { .top_n = 2 };
	const struct engy_sglresp_resp *p;
	size_t len = strlen(top), i, cuts[1];
	struct engy_jf *j;
	struct rows r;

	for (i = 0; i <= len; i++) {
		cuts[0] = i;
		ck_assert_int_eq(parse_cut(top, len, cuts, 1, &o, &r, &j), 0);
		p = engy_sglresp_resp(j);
		ck_assert(p->has_top);
		ck_assert_uint_eq(p->n_top, 3);
		ck_assert_uint_eq(p->top_cnt[0], 2);
		ck_assert_uint_eq(p->top_cnt[1], 0);
		ck_assert_uint_eq(p->top_cnt[2], 1);
		ck_assert(p->top_lp[0] == -0.5f && p->top_lp[1] == -1.5f);
		ck_assert_uint_eq(p->top_ids[1], 9);
		ck_assert(isinf(p->top_lp[4]) && p->top_lp[4] < 0);
		ck_assert_uint_eq(p->top_ids[4], 1);
		engy_sglresp_free(j);
	}
	/* not asked: skipped, whatever it holds */
	o.top_n = 0;
	ck_assert_int_eq(parse(bad[0].in, &o, &r, &j), 0);
	ck_assert(!engy_sglresp_resp(j)->has_top);
	engy_sglresp_free(j);
	o.top_n = 2;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse(bad[i].in, &o, &r, &j) == bad[i].err, "%s",
			      bad[i].in);
		ck_assert(engy_sglresp_error(j)[0]);
		engy_sglresp_free(j);
	}
	/* positions are bounded like output ids */
	o.max_ids = 2;
	ck_assert_int_eq(parse("{\"meta_info\":{\"output_top_logprobs\":"
			       "[null,null,null]}}",
			       &o, &r, &j),
			 -E2BIG);
	engy_sglresp_free(j);
}
END_TEST

START_TEST(test_reset_reuse)
{
	struct engy_sglresp_opts o = { 0 };
	struct engy_jf *j;
	struct rows r;
	int k;

	memset(&r, 0, sizeof(r));
	o.on_row = on_row;
	o.arg = &r;
	ck_assert_int_eq(engy_sglresp_new(&o, &j), 0);
	ck_assert_int_eq(engy_sglresp_feed(j, "{\"x\":", 5), 0);
	for (k = 0; k < 3; k++) {
		r.n = 0;
		engy_sglresp_reset(j, NULL);
		ck_assert_int_eq(engy_sglresp_feed(j, resp, strlen(resp)), 0);
		ck_assert_int_eq(engy_sglresp_finish(j), 0);
		check_resp(j, &r);
	}
	engy_sglresp_reset(j, NULL);
	ck_assert_int_eq(engy_sglresp_feed(j, "{\"output_ids\":[]}", 17), 0);
	ck_assert_int_eq(engy_sglresp_finish(j), 0);
	ck_assert_uint_eq(engy_sglresp_resp(j)->n_ids, 0);
	ck_assert(!engy_sglresp_resp(j)->has_hidden);
	engy_sglresp_free(j);
}
END_TEST

/* meta_info.gemm (engy's extension): read, split anywhere; every wrong
 * shape marks it bad and never fails the response; the check and the
 * canonical text.  Expected values: the literals written here. */
#define H64A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define H64B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

static const char gresp[] =
	"{\"text\":\"\",\"output_ids\":[1,2],\"meta_info\":{\"id\":\"x\","
	"\"finish_reason\":{\"type\":\"length\",\"length\":2},"
	"\"gemm\":{\"hashing\":\"engy-ga1\",\"gemm_root\":\"" H64A "\","
	"\"spec_root\":\"" H64B "\",\"n_prompt\":3,\"n_tokens\":5,"
	"\"extra\":[1,{\"a\":null}],\"sampling\":\"" H64A "\","
	"\"rid\":\"r-1\"},\"completion_tokens\":2}}";

static void gemm_of(const char *body, struct engy_sglresp_gemm *g)
{
	struct engy_sglresp_opts o = { 0 };
	struct engy_jf *j;
	struct rows r;

	ck_assert_msg(parse(body, &o, &r, &j) == 0, "%s: %s", body,
		      engy_sglresp_error(j));
	*g = engy_sglresp_resp(j)->gemm;
	ck_assert_int_eq(engy_sglresp_resp(j)->n_ids, 2);
	engy_sglresp_free(j);
}

START_TEST(test_gemm_member)
{
	static const char *const bad[] = {
		"\"gemm\":[1,2]",
		"\"gemm\":\"x\"",
		"\"gemm\":7",
		"\"gemm\":true",
		"\"gemm\":{\"n_prompt\":\"3\"}",
		"\"gemm\":{\"n_prompt\":-1}",
		"\"gemm\":{\"n_prompt\":1.5}",
		"\"gemm\":{\"rid\":7}",
		"\"gemm\":{\"rid\":[\"a\"]}",
		"\"gemm\":{\"gemm_root\":{\"a\":1}}",
		"\"gemm\":{\"hashing\":null}",
		"\"gemm\":{\"gemm_root\":\"" H64A "0\"}",
	};
	struct engy_sglresp_gemm g;
	const char *why;
	char *json, body[600];
	size_t i, len = strlen(gresp), k;

	gemm_of(gresp, &g);
	ck_assert(g.present && !g.bad);
	ck_assert_str_eq(g.hashing, "engy-ga1");
	ck_assert_str_eq(g.gemm_root, H64A);
	ck_assert_str_eq(g.spec_root, H64B);
	ck_assert_str_eq(g.rid, "r-1");
	ck_assert_int_eq(g.n_prompt, 3);
	ck_assert_int_eq(g.n_tokens, 5);
	ck_assert_int_eq(engy_sglresp_gemm_json(&g, &json, &why), 0);
	ck_assert_str_eq(json, "{\"hashing\":\"engy-ga1\",\"gemm_root\":\"" H64A
			       "\",\"spec_root\":\"" H64B
			       "\",\"n_prompt\":3,\"n_tokens\":5,\"sampling\":"
			       "\"" H64A "\",\"rid\":\"r-1\"}");
	free(json);
	/* every split gives the same */
	for (k = 1; k < len; k++) {
		struct engy_sglresp_opts o = { 0 };
		struct engy_jf *j;
		struct rows r;

		ck_assert_int_eq(parse_cut(gresp, len, &k, 1, &o, &r, &j), 0);
		ck_assert(!memcmp(&engy_sglresp_resp(j)->gemm, &g, sizeof(g)));
		engy_sglresp_free(j);
	}
	/* absent and null: nothing */
	gemm_of("{\"output_ids\":[1,2],\"meta_info\":{\"gemm\":null}}", &g);
	ck_assert(!g.present);
	ck_assert_int_eq(engy_sglresp_gemm_json(&g, &json, &why), -EBADMSG);
	ck_assert_ptr_null(json);
	/* a "gemm" outside meta_info is not it */
	gemm_of("{\"output_ids\":[1,2],\"gemm\":{\"rid\":\"a\"}}", &g);
	ck_assert(!g.present);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(body, sizeof(body),
			 "{\"output_ids\":[1,2],\"meta_info\":{%s}}", bad[i]);
		gemm_of(body, &g);
		ck_assert_msg(g.present && g.bad, "%s", bad[i]);
		ck_assert_int_eq(engy_sglresp_gemm_json(&g, &json, &why),
				 -EBADMSG);
	}
	/* well formed, wrong values */
	gemm_of(gresp, &g);
	strcpy(g.hashing, "engy-ga2");
	ck_assert_int_eq(engy_sglresp_gemm_json(&g, &json, &why), -EBADMSG);
	gemm_of(gresp, &g);
	g.gemm_root[3] = 'A';
	ck_assert_int_eq(engy_sglresp_gemm_json(&g, &json, &why), -EBADMSG);
	gemm_of(gresp, &g);
	g.n_tokens = 2;
	ck_assert_int_eq(engy_sglresp_gemm_json(&g, &json, &why), -EBADMSG);
	gemm_of(gresp, &g);
	g.n_prompt = 0;
	ck_assert_int_eq(engy_sglresp_gemm_json(&g, &json, &why), -EBADMSG);
	gemm_of(gresp, &g);
	strcpy(g.rid, "a\"b");
	ck_assert_int_eq(engy_sglresp_gemm_json(&g, &json, &why), -EBADMSG);
	gemm_of(gresp, &g);
	g.rid[0] = '\0';
	ck_assert_int_eq(engy_sglresp_gemm_json(&g, &json, &why), -EBADMSG);
	gemm_of(gresp, &g);
	g.spec_root[0] = '\0';
	ck_assert_int_eq(engy_sglresp_gemm_json(&g, &json, &why), -EBADMSG);
	/* a rid past the bound */
	{
		char *big = malloc(1000);
		int n = snprintf(
			big, 1000,
			"{\"output_ids\":[1,2],\"meta_info\":{\"gemm\":"
			"{\"rid\":\"");

		memset(big + n, 'r', 300);
		strcpy(big + n + 300, "\"}}}");
		gemm_of(big, &g);
		ck_assert(g.bad);
		free(big);
	}
}
END_TEST

static Suite *jf_suite(void)
{
	Suite *s = suite_create("sgl_resp");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_float_edges);
	tcase_add_test(tc, test_negative_zero);
	tcase_add_test(tc, test_float_random);
	tcase_add_test(tc, test_float_invalid);
	tcase_add_test(tc, test_response_fields);
	tcase_add_test(tc, test_every_split);
	tcase_add_test(tc, test_all_block_rows_and_skip);
	tcase_add_test(tc, test_empty_prefill_and_shapes);
	tcase_add_test(tc, test_finish_and_errors);
	tcase_add_test(tc, test_long_message);
	tcase_add_test(tc, test_huge_arrays);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_limits_and_callback);
	tcase_add_test(tc, test_reset_reuse);
	tcase_add_test(tc, test_top_logprobs);
	tcase_add_test(tc, test_gemm_member);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(jf_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
