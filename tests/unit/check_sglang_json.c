/* SPDX-License-Identifier: MIT */
/*
 * sglang's /generate and /abort_request bodies, and the objects the serve
 * role answers with: every accepted field, every refusal with its reason,
 * and the response shapes read back with cJSON (an independent parser).
 *
 * Oracle: read back with cJSON (an independent parser) against sglang's
 * API as written by the test's author.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sglang_json.h"

static int parse(const char *body, struct engy_sgl_gen *g, char *err)
{
	return engy_sgl_parse_generate(body, strlen(body), g, err, 256);
}

START_TEST(test_defaults)
{
	struct engy_sgl_gen g;
	char err[256];

	ck_assert_int_eq(parse("{\"input_ids\":[1,2,3]}", &g, err), 0);
	ck_assert_uint_eq(g.n_input, 3);
	ck_assert_uint_eq(g.input_ids[2], 3);
	ck_assert_ptr_null(g.text);
	ck_assert_ptr_null(g.rid);
	ck_assert(!g.stream && !g.return_logprob && !g.return_hidden_states);
	ck_assert(g.temperature == 1.0 && g.top_p == 1.0);
	ck_assert_int_eq(g.top_k, -1);
	ck_assert_int_eq(g.max_new_tokens, 128);
	ck_assert(!g.has_max_new_tokens && !g.has_seed);
	ck_assert(g.skip_special_tokens && !g.no_stop_trim);
	ck_assert_uint_eq(g.n_stop, 0);
	engy_sgl_gen_free(&g);
}
END_TEST

START_TEST(test_full)
{
	/* The request of specs/protocol.md §4 and a fuller sglang body. */
	static const char body[] =
		"{\"input_ids\": [151644, 872, 198], \"rid\": \"job-17\",\n"
		" \"sampling_params\": {\"temperature\": 0, \"max_new_tokens\": 256,"
		" \"stop_token_ids\": [151645], \"ignore_eos\": false, \"top_p\": 0.5,"
		" \"top_k\": 20, \"sampling_seed\": 42, \"skip_special_tokens\": false,"
		" \"no_stop_trim\": true, \"min_p\": 0, \"n\": 1, \"stop\": [],"
		" \"stream_interval\": 1, \"frequency_penalty\": 0.0},\n"
		" \"return_logprob\": true, \"return_hidden_states\": true,"
		" \"stream\": true, \"logprob_start_len\": -1, \"top_logprobs_num\": 0,"
		" \"return_text_in_logprobs\": true, \"some_future_field\": {\"x\": 1}}";
	struct engy_sgl_gen g;
	char err[256] = "";

	ck_assert_msg(parse(body, &g, err) == 0, "%s", err);
	ck_assert_uint_eq(g.n_input, 3);
	ck_assert_uint_eq(g.input_ids[0], 151644);
	ck_assert_str_eq(g.rid, "job-17");
	ck_assert(g.temperature == 0);
	ck_assert(g.top_p == 0.5);
	ck_assert_int_eq(g.top_k, 20);
	ck_assert_int_eq(g.max_new_tokens, 256);
	ck_assert(g.has_max_new_tokens);
	ck_assert_uint_eq(g.n_stop, 1);
	ck_assert_uint_eq(g.stop_ids[0], 151645);
	ck_assert(g.has_seed && g.seed == 42);
	ck_assert(!g.ignore_eos);
	ck_assert(!g.skip_special_tokens && g.no_stop_trim);
	ck_assert(g.stream && g.return_logprob && g.return_hidden_states &&
		  g.return_text_in_logprobs);
	ck_assert_uint_eq(g.top_logprobs_num, 0);
	engy_sgl_gen_free(&g);

	/* ignore_eos true, as the public miner sends it
	 * (TOPLOC_IGNORE_EOS=1); null is its default, false. */
	ck_assert_int_eq(
		parse("{\"input_ids\":[1],\"sampling_params\":{\"ignore_eos\":true}}",
		      &g, err),
		0);
	ck_assert(g.ignore_eos);
	engy_sgl_gen_free(&g);
	ck_assert_int_eq(
		parse("{\"input_ids\":[1],\"sampling_params\":{\"ignore_eos\":null}}",
		      &g, err),
		0);
	ck_assert(!g.ignore_eos);
	engy_sgl_gen_free(&g);

	/* sglang's greedy: any temperature below 1e-6. */
	ck_assert_int_eq(
		parse("{\"input_ids\":[1],\"sampling_params\":{\"temperature\":1e-7}}",
		      &g, err),
		0);
	ck_assert(g.temperature == 0);
	engy_sgl_gen_free(&g);
	ck_assert_int_eq(
		parse("{\"input_ids\":[1],\"sampling_params\":{\"temperature\":0.7}}",
		      &g, err),
		0);
	ck_assert(g.temperature == 0.7);
	engy_sgl_gen_free(&g);
	/* text, an empty rid (the server makes one), nulls for defaults. */
	ck_assert_int_eq(
		parse("{\"text\":\"hi\",\"rid\":\"\",\"sampling_params\":null,"
		      "\"stream\":null}",
		      &g, err),
		0);
	ck_assert_str_eq(g.text, "hi");
	ck_assert_ptr_null(g.input_ids);
	ck_assert_ptr_null(g.rid);
	engy_sgl_gen_free(&g);
	/* Both: sglang tokenizes from input_ids. */
	ck_assert_int_eq(parse("{\"text\":\"hi\",\"input_ids\":[7]}", &g, err),
			 0);
	ck_assert_uint_eq(g.n_input, 1);
	ck_assert_ptr_null(g.text);
	engy_sgl_gen_free(&g);
}
END_TEST

static const struct {
	const char *body;
	const char *reason;
} refused[] = {
	{ "", "empty" },
	{ "{bad", "Invalid JSON" },
	{ "{\"input_ids\":[1]} x", "trailing data" },
	{ "[1,2]", "must be a JSON object" },
	{ "\"str\"", "must be a JSON object" },
	{ "{}", "Either text or input_ids" },
	{ "{\"input_ids\":null,\"text\":null}", "Either text or input_ids" },
	{ "{\"input_ids\":[]}", "input_ids is empty" },
	{ "{\"input_ids\":\"1 2\"}", "input_ids must be a list" },
	{ "{\"input_ids\":[1,-2]}", "entry 1 is not" },
	{ "{\"input_ids\":[1.5]}", "non-negative integers" },
	{ "{\"input_ids\":[4294967296]}", "non-negative integers" },
	{ "{\"input_ids\":[1,\"2\"]}", "non-negative integers" },
	{ "{\"input_ids\":[true]}", "non-negative integers" },
	{ "{\"input_ids\":[[1],[2]]}", "Batch requests" },
	{ "{\"text\":[\"a\",\"b\"]}", "Batch requests" },
	{ "{\"text\":5}", "text must be a string" },
	{ "{\"input_ids\":[1],\"rid\":5}", "rid must be a string" },
	{ "{\"input_ids\":[1],\"rid\":[\"a\"]}", "Batch requests" },
	{ "{\"input_ids\":[1],\"rid\":\"a\\nb\"}", "printable ASCII" },
	{ "{\"input_ids\":[1],\"stream\":\"yes\"}",
	  "stream must be a boolean" },
	{ "{\"input_ids\":[1],\"return_logprob\":1}",
	  "return_logprob must be a boolean" },
	{ "{\"input_ids\":[1],\"return_hidden_states\":\"last\"}",
	  "not supported" },
	{ "{\"input_ids\":[1],\"return_hidden_states\":1}",
	  "must be a boolean" },
	{ "{\"input_ids\":[1],\"sampling_params\":[{}]}", "must be an object" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"temperature\":-1}}",
	  "non-negative" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"temperature\":\"0\"}}",
	  "non-negative" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"top_p\":0}}",
	  "top_p must be in (0, 1]" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"top_p\":1.5}}",
	  "top_p must be in (0, 1]" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"top_k\":0}}",
	  "top_k must be -1" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"top_k\":2.5}}",
	  "top_k must be -1" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"max_new_tokens\":-1}}",
	  "at least 0" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"max_new_tokens\":1.5}}",
	  "at least 0" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"stop_token_ids\":5}}",
	  "stop_token_ids must be" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"stop_token_ids\":[-5]}}",
	  "non-negative integers" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"sampling_seed\":-1}}",
	  "sampling_seed" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"ignore_eos\":1}}",
	  "ignore_eos must be a boolean" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"min_p\":0.1}}",
	  "min_p is not supported" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"n\":2}}",
	  "n is not supported" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"stop\":[\"x\"]}}",
	  "stop is not supported" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"stop\":\"x\"}}",
	  "stop is not supported" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"json_schema\":{}}}",
	  "json_schema must be a JSON schema as a string" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"regex\":\"a+\"}}",
	  "regex is not supported" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"ebnf\":\"r ::= x\"}}",
	  "ebnf is not supported" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"temprature\":0}}",
	  "Unknown sampling parameter: temprature" },
	{ "{\"input_ids\":[1],\"sampling_params\":{\"skip_special_tokens\":0}}",
	  "must be a boolean" },
	{ "{\"input_ids\":[1],\"top_logprobs_num\":21}",
	  "top_logprobs_num above 20 is not supported" },
	{ "{\"input_ids\":[1],\"top_logprobs_num\":-1}",
	  "top_logprobs_num must be an integer >= 0" },
	{ "{\"input_ids\":[1],\"top_logprobs_num\":1.5}",
	  "top_logprobs_num must be an integer >= 0" },
	{ "{\"input_ids\":[1],\"logprob_start_len\":0}", "logprob_start_len" },
	{ "{\"input_ids\":[1],\"input_embeds\":[[0.1]]}",
	  "input_embeds is not supported" },
	{ "{\"input_ids\":[1],\"lora_path\":\"x\"}",
	  "lora_path is not supported" },
};

/* sampling_params.json_schema, as sglang takes it: a string. */
START_TEST(test_json_schema)
{
	struct engy_sgl_gen g;
	char err[256] = "";

	ck_assert_int_eq(
		parse("{\"input_ids\":[1],\"sampling_params\":{"
		      "\"json_schema\":\"{\\\"type\\\":\\\"object\\\"}\"}}",
		      &g, err),
		0);
	ck_assert_str_eq(g.json_schema, "{\"type\":\"object\"}");
	engy_sgl_gen_free(&g);
	ck_assert_int_eq(parse("{\"input_ids\":[1],\"sampling_params\":{"
			       "\"json_schema\":null}}",
			       &g, err),
			 0);
	ck_assert_ptr_null(g.json_schema);
	engy_sgl_gen_free(&g);
	/* top_logprobs_num: 0..20, only with return_logprob (sglang's) */
	ck_assert_int_eq(parse("{\"input_ids\":[1],\"return_logprob\":true,"
			       "\"top_logprobs_num\":20}",
			       &g, err),
			 0);
	ck_assert_uint_eq(g.top_logprobs_num, 20);
	engy_sgl_gen_free(&g);
	ck_assert_int_eq(
		parse("{\"input_ids\":[1],\"top_logprobs_num\":3}", &g, err),
		0);
	ck_assert_uint_eq(g.top_logprobs_num, 0);
	engy_sgl_gen_free(&g);
}
END_TEST

START_TEST(test_refused)
{
	struct engy_sgl_gen g;
	char err[256];

	err[0] = '\0';
	ck_assert_msg(parse(refused[_i].body, &g, err) == -EINVAL,
		      "accepted: %s", refused[_i].body);
	ck_assert_msg(strstr(err, refused[_i].reason) != NULL,
		      "%s: reason \"%s\" lacks \"%s\"", refused[_i].body, err,
		      refused[_i].reason);
	engy_sgl_gen_free(&g);
}
END_TEST

START_TEST(test_long_rid)
{
	char body[600], err[256];
	struct engy_sgl_gen g;

	memset(err, 0, sizeof(err));
	snprintf(body, sizeof(body), "{\"input_ids\":[1],\"rid\":\"%0*d\"}",
		 ENGY_SGL_MAX_RID, 0);
	ck_assert_int_eq(parse(body, &g, err), 0);
	ck_assert_uint_eq(strlen(g.rid), ENGY_SGL_MAX_RID);
	engy_sgl_gen_free(&g);
	snprintf(body, sizeof(body), "{\"input_ids\":[1],\"rid\":\"%0*d\"}",
		 ENGY_SGL_MAX_RID + 1, 0);
	ck_assert_int_eq(parse(body, &g, err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "longer than"));
	engy_sgl_gen_free(&g);
	/* A body with a NUL inside is not JSON text. */
	ck_assert_int_eq(engy_sgl_parse_generate("{\"input_ids\":[1]}\0", 18,
						 &g, err, sizeof(err)),
			 -EINVAL);
	engy_sgl_gen_free(&g);
}
END_TEST

START_TEST(test_abort)
{
	struct engy_sgl_abort a;
	char err[256];

	ck_assert_int_eq(engy_sgl_parse_abort("{\"rid\":\"job-1\"}", 15, &a,
					      err, sizeof(err)),
			 0);
	ck_assert_str_eq(a.rid, "job-1");
	ck_assert(!a.abort_all);
	engy_sgl_abort_free(&a);
	ck_assert_int_eq(engy_sgl_parse_abort("{}", 2, &a, err, sizeof(err)),
			 0);
	ck_assert_str_eq(a.rid, "");
	engy_sgl_abort_free(&a);
	ck_assert_int_eq(
		engy_sgl_parse_abort("{\"abort_all\":true,\"rid\":\"\"}", 27,
				     &a, err, sizeof(err)),
		0);
	ck_assert(a.abort_all);
	ck_assert_str_eq(a.rid, "");
	engy_sgl_abort_free(&a);
	ck_assert_int_eq(
		engy_sgl_parse_abort("{\"rid\":5}", 9, &a, err, sizeof(err)),
		-EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "rid must be a string"));
	engy_sgl_abort_free(&a);
	ck_assert_int_eq(engy_sgl_parse_abort("nope", 4, &a, err, sizeof(err)),
			 -EINVAL);
	engy_sgl_abort_free(&a);
	ck_assert_int_eq(engy_sgl_parse_abort("{\"abort_all\":1}", 15, &a, err,
					      sizeof(err)),
			 -EINVAL);
	engy_sgl_abort_free(&a);
}
END_TEST

static cJSON *reparse(const char *s, size_t len)
{
	cJSON *j;

	j = cJSON_ParseWithLength(s, len);
	ck_assert_msg(j != NULL, "not JSON: %s", s);
	return j;
}

static cJSON *path(cJSON *j, const char *a, const char *b)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(j, a);

	ck_assert_msg(v != NULL, "no %s", a);
	if (b) {
		v = cJSON_GetObjectItemCaseSensitive(v, b);
		ck_assert_msg(v != NULL, "no %s.%s", a, b);
	}
	return v;
}

START_TEST(test_response_shape)
{
	static const uint32_t ids[] = { 9, 8, 151645 };
	static const float lp[] = { -0.5f, -0.25f, NAN };
	float rows[3 * 4];
	char *tt[] = { "a", NULL, "\"q\"" };
	struct engy_sgl_out o = {
		.rid = "job-17",
		.text = "he said \"hi\"\n\x01\xc3\xa9",
		.ids = ids,
		.n_ids = 3,
		.finish = ENGY_SGL_STOP,
		.matched = 151645,
		.prompt_tokens = 5,
		.cached_tokens = 2,
		.e2e_latency = 0.25,
		.logprobs = true,
		.logprob_v = lp,
		.token_text = tt,
		.last_prompt_id = 198,
		.hidden = true,
		.rows = rows,
		.n_rows = 3,
		.hidden_size = 4,
	};
	cJSON *j, *m, *hs, *v;
	size_t len, i, k;
	char *s;

	o.text_len = strlen(o.text);
	for (i = 0; i < 12; i++)
		rows[i] = (float)i * 0.1f - 0.3f;
	s = engy_sgl_response(&o, false, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(strlen(s), len);
	j = reparse(s, len);
	ck_assert_str_eq(path(j, "text", NULL)->valuestring, o.text);
	v = path(j, "output_ids", NULL);
	ck_assert_int_eq(cJSON_GetArraySize(v), 3);
	ck_assert(cJSON_GetArrayItem(v, 2)->valuedouble == 151645);
	m = path(j, "meta_info", NULL);
	ck_assert_str_eq(path(m, "id", NULL)->valuestring, "job-17");
	ck_assert_str_eq(path(m, "finish_reason", "type")->valuestring, "stop");
	ck_assert(path(m, "finish_reason", "matched")->valuedouble == 151645);
	ck_assert(path(m, "prompt_tokens", NULL)->valuedouble == 5);
	ck_assert(path(m, "completion_tokens", NULL)->valuedouble == 3);
	ck_assert(path(m, "cached_tokens", NULL)->valuedouble == 2);
	ck_assert(fabs(path(m, "e2e_latency", NULL)->valuedouble - 0.25) <
		  1e-9);
	v = path(m, "input_token_logprobs", NULL);
	ck_assert_int_eq(cJSON_GetArraySize(v), 1);
	ck_assert(
		cJSON_IsNull(cJSON_GetArrayItem(cJSON_GetArrayItem(v, 0), 0)));
	ck_assert(
		cJSON_GetArrayItem(cJSON_GetArrayItem(v, 0), 1)->valuedouble ==
		198);
	v = path(m, "output_token_logprobs", NULL);
	ck_assert_int_eq(cJSON_GetArraySize(v), 3);
	ck_assert((float)cJSON_GetArrayItem(cJSON_GetArrayItem(v, 0), 0)
			  ->valuedouble == -0.5f);
	ck_assert(
		cJSON_GetArrayItem(cJSON_GetArrayItem(v, 1), 1)->valuedouble ==
		8);
	ck_assert_str_eq(
		cJSON_GetArrayItem(cJSON_GetArrayItem(v, 0), 2)->valuestring,
		"a");
	ck_assert(
		cJSON_IsNull(cJSON_GetArrayItem(cJSON_GetArrayItem(v, 1), 2)));
	ck_assert_str_eq(
		cJSON_GetArrayItem(cJSON_GetArrayItem(v, 2), 2)->valuestring,
		"\"q\"");
	ck_assert(cJSON_IsNull(
		cJSON_GetArrayItem(cJSON_GetArrayItem(v, 2), 0))); /* NaN */
	/* Ragged: [[row 0], row 1, row 2]; every value reads back exactly. */
	hs = path(m, "hidden_states", NULL);
	ck_assert_int_eq(cJSON_GetArraySize(hs), 3);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetArrayItem(hs, 0)), 1);
	for (i = 0; i < 3; i++) {
		cJSON *row = cJSON_GetArrayItem(hs, (int)i);

		if (i == 0)
			row = cJSON_GetArrayItem(row, 0);
		ck_assert_int_eq(cJSON_GetArraySize(row), 4);
		for (k = 0; k < 4; k++)
			ck_assert((float)cJSON_GetArrayItem(row, (int)k)
					  ->valuedouble == rows[i * 4 + k]);
	}
	ck_assert_ptr_null(cJSON_GetObjectItem(m, "output_top_logprobs"));
	cJSON_Delete(j);
	free(s);

	/* top_logprobs_num 2: per position [[lp, id, text|null], …], a
	 * position without alternatives (NaN) null; input's one null. */
	{
		static const uint32_t tid[] = { 9, 4, 8, 3, 0, 0 };
		static const float tlp[] = { -0.5f, -1.5f, -0.25f,
					     -2.0f, NAN,   NAN };
		char *ttx[] = { "a", "b", NULL, "c", NULL, NULL };

		o.top_n = 2;
		o.top_ids = tid;
		o.top_lp = tlp;
		o.top_text = ttx;
		s = engy_sgl_response(&o, false, &len);
		j = reparse(s, len);
		m = path(j, "meta_info", NULL);
		v = path(m, "input_top_logprobs", NULL);
		ck_assert_int_eq(cJSON_GetArraySize(v), 1);
		ck_assert(cJSON_IsNull(cJSON_GetArrayItem(v, 0)));
		v = path(m, "output_top_logprobs", NULL);
		ck_assert_int_eq(cJSON_GetArraySize(v), 3);
		ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetArrayItem(v, 0)),
				 2);
		hs = cJSON_GetArrayItem(cJSON_GetArrayItem(v, 0), 1);
		ck_assert((float)cJSON_GetArrayItem(hs, 0)->valuedouble ==
			  -1.5f);
		ck_assert(cJSON_GetArrayItem(hs, 1)->valuedouble == 4);
		ck_assert_str_eq(cJSON_GetArrayItem(hs, 2)->valuestring, "b");
		hs = cJSON_GetArrayItem(cJSON_GetArrayItem(v, 1), 0);
		ck_assert(cJSON_IsNull(cJSON_GetArrayItem(hs, 2)));
		ck_assert(cJSON_IsNull(cJSON_GetArrayItem(v, 2)));
		cJSON_Delete(j);
		free(s);
		o.top_n = 0;
	}

	/* SSE framing, a running event: no e2e_latency, finish null, no
	 * optional lists when not asked for. */
	o.finish = ENGY_SGL_RUNNING;
	o.e2e_latency = -1;
	o.logprobs = o.hidden = false;
	s = engy_sgl_response(&o, true, &len);
	ck_assert_int_eq(strncmp(s, "data: {", 7), 0);
	ck_assert_int_eq(strcmp(s + len - 3, "}\n\n"), 0);
	j = reparse(s + 6, len - 8);
	m = path(j, "meta_info", NULL);
	ck_assert(cJSON_IsNull(path(m, "finish_reason", NULL)));
	ck_assert_ptr_null(cJSON_GetObjectItem(m, "e2e_latency"));
	ck_assert_ptr_null(cJSON_GetObjectItem(m, "hidden_states"));
	ck_assert_ptr_null(cJSON_GetObjectItem(m, "output_token_logprobs"));
	cJSON_Delete(j);
	free(s);
}
END_TEST

/* engy's extension: return_gemm_trace in, meta_info.gemm out (the
 * backend's text as is, before e2e_latency).  Expected: literals here. */
START_TEST(test_gemm_extension)
{
	static const uint32_t ids[1] = { 7 };
	struct engy_sgl_out o = {
		.rid = "r", .ids = ids, .n_ids = 1, .e2e_latency = 0.5
	};
	struct engy_sgl_gen g;
	char err[256], *s;
	size_t len;

	ck_assert_int_eq(parse("{\"input_ids\":[1],\"return_gemm_trace\":true}",
			       &g, err),
			 0);
	ck_assert(g.return_gemm_trace);
	engy_sgl_gen_free(&g);
	ck_assert_int_eq(parse("{\"input_ids\":[1]}", &g, err), 0);
	ck_assert(!g.return_gemm_trace);
	engy_sgl_gen_free(&g);
	ck_assert_int_eq(
		parse("{\"input_ids\":[1],\"return_gemm_trace\":1}", &g, err),
		-EINVAL);
	ck_assert_str_eq(err, "return_gemm_trace must be a boolean");
	engy_sgl_gen_free(&g);
	s = engy_sgl_response(&o, false, &len);
	ck_assert_ptr_null(strstr(s, "gemm"));
	free(s);
	o.gemm = "{\"a\":1}";
	s = engy_sgl_response(&o, false, &len);
	ck_assert_ptr_nonnull(
		strstr(s, ",\"gemm\":{\"a\":1},\"e2e_latency\":0.500000}}"));
	free(s);
}
END_TEST

START_TEST(test_cache_hit_layout)
{
	static const float rows[4] = { 1, 2, 3, 4 };
	static const uint32_t ids[3] = { 7, 8, 9 };
	struct engy_sgl_out o = { .rid = "r",
				  .e2e_latency = -1,
				  .ids = ids,
				  .n_ids = 3,
				  .hidden = true,
				  .rows = rows,
				  .n_rows = 2,
				  .hidden_size = 2,
				  .prefill_empty = true };
	size_t len;
	char *s = engy_sgl_response(&o, false, &len);

	ck_assert_ptr_nonnull(strstr(s, "\"hidden_states\":[[],[1,2],[3,4]]"));
	free(s);
	o.n_rows = 0;
	o.n_ids = 1;
	s = engy_sgl_response(&o, false, &len);
	ck_assert_ptr_nonnull(strstr(s, "\"hidden_states\":[[]]"));
	free(s);
	o.prefill_empty = false;
	o.n_rows = 2;
	o.n_ids = 2;
	s = engy_sgl_response(&o, false, &len);
	ck_assert_ptr_nonnull(strstr(s, "\"hidden_states\":[[[1,2]],[3,4]]"));
	free(s);
}
END_TEST

START_TEST(test_finish_reasons)
{
	struct engy_sgl_out o = { .rid = "r", .e2e_latency = -1 };
	cJSON *j, *f;
	size_t len;
	char *s;

	o.finish = ENGY_SGL_LENGTH;
	o.length = 77;
	s = engy_sgl_response(&o, false, &len);
	j = reparse(s, len);
	f = path(path(j, "meta_info", NULL), "finish_reason", NULL);
	ck_assert_str_eq(path(f, "type", NULL)->valuestring, "length");
	ck_assert(path(f, "length", NULL)->valuedouble == 77);
	ck_assert_str_eq(path(j, "text", NULL)->valuestring, "");
	ck_assert_int_eq(cJSON_GetArraySize(path(j, "output_ids", NULL)), 0);
	cJSON_Delete(j);
	free(s);

	o.finish = ENGY_SGL_ABORT;
	o.abort_message = "Abort in waiting queue";
	s = engy_sgl_response(&o, false, &len);
	j = reparse(s, len);
	f = path(path(j, "meta_info", NULL), "finish_reason", NULL);
	ck_assert_str_eq(path(f, "type", NULL)->valuestring, "abort");
	ck_assert_str_eq(path(f, "message", NULL)->valuestring,
			 "Abort in waiting queue");
	ck_assert(cJSON_IsNull(path(f, "status_code", NULL)));
	ck_assert(cJSON_IsNull(path(f, "err_type", NULL)));
	cJSON_Delete(j);
	free(s);

	o.abort_status = 503;
	s = engy_sgl_response(&o, false, &len);
	j = reparse(s, len);
	f = path(path(j, "meta_info", NULL), "finish_reason", NULL);
	ck_assert(path(f, "status_code", NULL)->valuedouble == 503);
	cJSON_Delete(j);
	free(s);
}
END_TEST

START_TEST(test_float_roundtrip)
{
	static const float fixed[] = { 0.0f,	       -0.0f,
				       1.0f,	       0.1f,
				       -3.4028235e38f, 1.17549435e-38f,
				       1.4e-45f,       0.10009765625f,
				       123456.789f,    -2.5e-7f };
	struct engy_sgl_out o = {
		.rid = "r", .e2e_latency = -1, .hidden = true, .hidden_size = 1
	};
	uint32_t st = 99;
	float v[2000];
	size_t i, len;
	cJSON *j, *hs;
	char *s;

	for (i = 0; i < 2000; i++) {
		uint32_t bits;

		if (i < sizeof(fixed) / sizeof(fixed[0])) {
			v[i] = fixed[i];
			continue;
		}
		do {
			st = st * 1664525u + 1013904223u;
			bits = st;
			memcpy(&v[i], &bits, 4);
		} while (!isfinite(v[i]));
	}
	o.rows = v;
	o.n_rows = 2000;
	s = engy_sgl_response(&o, false, &len);
	j = reparse(s, len);
	hs = path(path(j, "meta_info", NULL), "hidden_states", NULL);
	ck_assert_int_eq(cJSON_GetArraySize(hs), 2000);
	for (i = 0; i < 2000; i++) {
		cJSON *row = cJSON_GetArrayItem(hs, (int)i);

		if (i == 0)
			row = cJSON_GetArrayItem(row, 0);
		ck_assert_msg((float)cJSON_GetArrayItem(row, 0)->valuedouble ==
				      v[i],
			      "row %zu: %.9g", i, (double)v[i]);
	}
	/* The shortest form: 0.1f is written "0.1", not 0.100000001. */
	ck_assert_ptr_nonnull(strstr(s, "[0.1]"));
	cJSON_Delete(j);
	free(s);
}
END_TEST

START_TEST(test_error_and_info)
{
	size_t len;
	char *s;
	cJSON *j;

	s = engy_sgl_error("bad \"thing\"\n", false, &len);
	j = reparse(s, len);
	ck_assert_str_eq(path(j, "error", "message")->valuestring,
			 "bad \"thing\"\n");
	cJSON_Delete(j);
	free(s);
	s = engy_sgl_error("x", true, &len);
	ck_assert_str_eq(s, "data: {\"error\":{\"message\":\"x\"}}\n\n");
	free(s);
	s = engy_sgl_model_info("/m/qwen", "/m/qwen", &len);
	j = reparse(s, len);
	ck_assert_str_eq(path(j, "model_path", NULL)->valuestring, "/m/qwen");
	ck_assert_str_eq(path(j, "tokenizer_path", NULL)->valuestring,
			 "/m/qwen");
	ck_assert(cJSON_IsTrue(path(j, "is_generation", NULL)));
	ck_assert(cJSON_IsNull(path(j, "preferred_sampling_params", NULL)));
	ck_assert_str_eq(path(j, "weight_version", NULL)->valuestring,
			 "default");
	cJSON_Delete(j);
	free(s);
	ck_assert_str_eq(ENGY_SGL_SSE_DONE, "data: [DONE]\n\n");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sglang_json");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_full);
	tcase_add_test(tc, test_json_schema);
	tcase_add_loop_test(tc, test_refused, 0,
			    sizeof(refused) / sizeof(refused[0]));
	tcase_add_test(tc, test_long_rid);
	tcase_add_test(tc, test_abort);
	tcase_add_test(tc, test_response_shape);
	tcase_add_test(tc, test_cache_hit_layout);
	tcase_add_test(tc, test_gemm_extension);
	tcase_add_test(tc, test_finish_reasons);
	tcase_add_test(tc, test_float_roundtrip);
	tcase_add_test(tc, test_error_and_info);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
