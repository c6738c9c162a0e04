/* SPDX-License-Identifier: MIT */
/*
 * Buyer API errors (lib/buyerapi/apierr.c): the error type and code for every
 * status the gateway answers, in each API's shape, the in-band forms for
 * a stream already under way, status line texts, the retry rule, the
 * keep-alives, and the field a validation message names; and what both
 * APIs share: /v1/models, the buyer's key, ids, the JSON/SSE writer.
 *
 * Oracle: hand-written from specs/buyer-api.md and the two APIs' error
 * shapes; the official SDKs classify the errors independently in
 * buyer_sdk.sh.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>

#include "apierr.h"
#include "buyerapi_check.h"
#include "oai.h"

static char err[256];

static const struct {
	int status;
	const char *oai_type, *oai_code, *anth_type, *reason;
	bool retry;
} table[] = {
	{ 400, "invalid_request_error", NULL, "invalid_request_error",
	  "Bad Request", false },
	{ 401, "invalid_request_error", "invalid_api_key",
	  "authentication_error", "Unauthorized", false },
	{ 402, "insufficient_quota", "insufficient_quota", "billing_error",
	  "Payment Required", false },
	{ 403, "permission_error", NULL, "permission_error", "Forbidden",
	  false },
	{ 404, "invalid_request_error", "model_not_found", "not_found_error",
	  "Not Found", false },
	{ 408, "invalid_request_error", "timeout", "invalid_request_error",
	  "Request Timeout", true },
	{ 413, "invalid_request_error", "request_too_large",
	  "request_too_large", "Payload Too Large", false },
	{ 429, "rate_limit_error", "rate_limit_exceeded", "rate_limit_error",
	  "Too Many Requests", true },
	{ 499, "invalid_request_error", "client_closed_request",
	  "invalid_request_error", "Client Closed Request", false },
	{ 500, "server_error", NULL, "api_error", "Internal Server Error",
	  true },
	{ 502, "server_error", "bad_gateway", "api_error", "Bad Gateway",
	  true },
	{ 503, "server_error", "service_unavailable", "overloaded_error",
	  "Service Unavailable", true },
	{ 504, "server_error", "timeout", "timeout_error", "Gateway Timeout",
	  true },
	{ 529, "server_error", NULL, "overloaded_error", "Overloaded", true },
};

START_TEST(test_types)
{
	size_t i;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		int st = table[i].status;

		ck_assert_str_eq(engy_apierr_type(ENGY_API_OPENAI, st),
				 table[i].oai_type);
		ck_assert_str_eq(engy_apierr_type(ENGY_API_ANTHROPIC, st),
				 table[i].anth_type);
		if (table[i].oai_code)
			ck_assert_str_eq(engy_apierr_code(st),
					 table[i].oai_code);
		else
			ck_assert_ptr_null(engy_apierr_code(st));
		ck_assert_str_eq(engy_apierr_reason(st), table[i].reason);
		ck_assert_int_eq(engy_apierr_retryable(st), table[i].retry);
	}
	ck_assert_str_eq(engy_apierr_type(ENGY_API_ANTHROPIC, 418),
			 "invalid_request_error");
	ck_assert_str_eq(engy_apierr_type(ENGY_API_OPENAI, 507),
			 "server_error");
	ck_assert_int_eq(engy_apierr_retryable(409), true);
	ck_assert_str_eq(engy_apierr_reason(599), "Server Error");
}
END_TEST

START_TEST(test_bodies)
{
	struct engy_apierr e = { .status = 400,
				 .message = "messages[0].role: \"x\"\nbad",
				 .param = "messages[0].role" };
	struct engy_sse_out o;
	size_t i, len;
	char *s;
	cJSON *j;

	s = engy_apierr_body(ENGY_API_OPENAI, &e, &len);
	ck_assert_int_eq(strlen(s), len);
	j = jparse(s);
	ck_assert_int_eq(jsize(j, ""), 1);
	ck_assert_int_eq(jsize(j, "error"), 4);
	ck_assert_str_eq(jstr(j, "error.message"), e.message);
	ck_assert_str_eq(jstr(j, "error.type"), "invalid_request_error");
	ck_assert_str_eq(jstr(j, "error.param"), "messages[0].role");
	ck_assert(cJSON_IsNull(jget(j, "error.code")));
	cJSON_Delete(j);
	free(s);
	e.request_id = "req_1";
	s = engy_apierr_body(ENGY_API_ANTHROPIC, &e, &len);
	j = jparse(s);
	ck_assert_int_eq(jsize(j, ""), 3);
	ck_assert_str_eq(jstr(j, "type"), "error");
	ck_assert_int_eq(jsize(j, "error"), 2);
	ck_assert_str_eq(jstr(j, "error.type"), "invalid_request_error");
	ck_assert_str_eq(jstr(j, "error.message"), e.message);
	ck_assert_str_eq(jstr(j, "request_id"), "req_1");
	cJSON_Delete(j);
	free(s);

	/* Every status: the API's type, OpenAI's code, caller overrides. */
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		struct engy_apierr f = { .status = table[i].status };

		s = engy_apierr_body(ENGY_API_OPENAI, &f, &len);
		j = jparse(s);
		ck_assert_str_eq(jstr(j, "error.type"), table[i].oai_type);
		ck_assert_str_eq(jstr(j, "error.message"), table[i].reason);
		ck_assert(cJSON_IsNull(jget(j, "error.param")));
		if (table[i].oai_code)
			ck_assert_str_eq(jstr(j, "error.code"),
					 table[i].oai_code);
		cJSON_Delete(j);
		free(s);
		s = engy_apierr_body(ENGY_API_ANTHROPIC, &f, &len);
		j = jparse(s);
		ck_assert_str_eq(jstr(j, "error.type"), table[i].anth_type);
		ck_assert(cJSON_IsNull(jget(j, "request_id")));
		cJSON_Delete(j);
		free(s);
	}
	e.status = 429;
	e.code = "insufficient_quota";
	e.type = "insufficient_quota";
	s = engy_apierr_body(ENGY_API_OPENAI, &e, &len);
	j = jparse(s);
	ck_assert_str_eq(jstr(j, "error.code"), "insufficient_quota");
	ck_assert_str_eq(jstr(j, "error.type"), "insufficient_quota");
	cJSON_Delete(j);
	free(s);

	engy_sse_out_init(&o);
	ck_assert_int_eq(engy_apierr_json(&o, ENGY_API_OPENAI, &e), 0);
	ck_assert_ptr_nonnull(o.buf);
	engy_sse_out_free(&o);
}
END_TEST

START_TEST(test_sse)
{
	struct engy_apierr e = { .status = 502, .message = "the miner failed" };
	struct engy_sse_out o;
	struct evs v;

	engy_sse_out_init(&o);
	ck_assert_int_eq(engy_apierr_sse(&o, ENGY_API_OPENAI, &e), 0);
	ck_assert_int_eq(engy_api_keepalive(&o, ENGY_API_OPENAI), 0);
	ck_assert_int_eq(engy_apierr_sse(&o, ENGY_API_ANTHROPIC, &e), 0);
	ck_assert_int_eq(engy_api_keepalive(&o, ENGY_API_ANTHROPIC), 0);
	evs_read(&v, o.buf);
	ck_assert_int_eq(v.n, 3);
	ck_assert_int_eq(v.comments, 1);
	ck_assert_ptr_nonnull(strstr(o.buf, "\n\n: keep-alive\n\n"));
	/* OpenAI: a data event whose object has "error" (the SDK throws). */
	ck_assert_str_eq(v.e[0].name, "");
	ck_assert_str_eq(jstr(v.e[0].json, "error.message"),
			 "the miner failed");
	ck_assert_str_eq(jstr(v.e[0].json, "error.type"), "server_error");
	ck_assert_str_eq(jstr(v.e[0].json, "error.code"), "bad_gateway");
	/* Anthropic: event: error with the error body. */
	ck_assert_str_eq(v.e[1].name, "error");
	ck_assert_str_eq(jstr(v.e[1].json, "type"), "error");
	ck_assert_str_eq(jstr(v.e[1].json, "error.type"), "api_error");
	ck_assert_str_eq(v.e[2].name, "ping");
	ck_assert_str_eq(jstr(v.e[2].json, "type"), "ping");
	evs_free(&v);
	engy_sse_out_free(&o);
}
END_TEST

START_TEST(test_param_of)
{
	char p[32];

	engy_apierr_param_of("tools[2].function.name: expected", p, sizeof(p));
	ck_assert_str_eq(p, "tools[2].function.name");
	engy_apierr_param_of("max_tokens: 5 is above", p, sizeof(p));
	ck_assert_str_eq(p, "max_tokens");
	engy_apierr_param_of("request body: not valid JSON", p, sizeof(p));
	ck_assert_str_eq(p, "");
	engy_apierr_param_of("no colon here", p, sizeof(p));
	ck_assert_str_eq(p, "");
	engy_apierr_param_of(": leading", p, sizeof(p));
	ck_assert_str_eq(p, "");
	engy_apierr_param_of(NULL, p, sizeof(p));
	ck_assert_str_eq(p, "");
	engy_apierr_param_of("a_very_long_field_name_that_does_not_fit: x", p,
			     sizeof(p));
	ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_models_keys)
{
	struct engy_api_model_info m[2] = {
		{ .id = "qwen3.6-35b-a3b",
		  .created = 1767225600,
		  .context_length = 262144,
		  .max_output_tokens = 32768 },
		{ .id = "glm",
		  .created = 0,
		  .owned_by = "x",
		  .display_name = "GLM 5.2" },
	};
	struct engy_sse_out o;
	const char *key;
	size_t len;
	cJSON *j;

	engy_sse_out_init(&o);
	ck_assert_int_eq(engy_api_models_json(&o, m, 2), 0);
	j = jparse(o.buf);
	ck_assert_str_eq(jstr(j, "object"), "list");
	ck_assert(cJSON_IsFalse(jget(j, "has_more")));
	ck_assert_str_eq(jstr(j, "first_id"), "qwen3.6-35b-a3b");
	ck_assert_str_eq(jstr(j, "last_id"), "glm");
	ck_assert_str_eq(jstr(j, "data.0.object"), "model");
	ck_assert_str_eq(jstr(j, "data.0.type"), "model");
	ck_assert_str_eq(jstr(j, "data.0.owned_by"), "engy");
	ck_assert_str_eq(jstr(j, "data.0.display_name"), "qwen3.6-35b-a3b");
	ck_assert_str_eq(jstr(j, "data.0.created_at"), "2026-01-01T00:00:00Z");
	ck_assert_int_eq(jnum(j, "data.0.created"), 1767225600);
	ck_assert_int_eq(jnum(j, "data.0.context_length"), 262144);
	ck_assert_str_eq(jstr(j, "data.1.display_name"), "GLM 5.2");
	ck_assert_ptr_null(jget(j, "data.1.context_length"));
	cJSON_Delete(j);
	engy_sse_out_reset(&o);
	ck_assert_int_eq(engy_api_models_json(&o, m, 0), 0);
	ck_assert_str_eq(o.buf, "{\"object\":\"list\",\"data\":[],\"has_more\":"
				"false,\"first_id\":null,\"last_id\":null}");
	engy_sse_out_reset(&o);
	ck_assert_int_eq(engy_api_model_json(&o, &m[1]), 0);
	j = jparse(o.buf);
	ck_assert_str_eq(jstr(j, "id"), "glm");
	ck_assert_str_eq(jstr(j, "owned_by"), "x");
	cJSON_Delete(j);
	engy_sse_out_free(&o);

	ck_assert_int_eq(engy_api_key("Bearer sk-1 ", NULL, &key, &len, err,
				      sizeof(err)),
			 0);
	ck_assert_int_eq(len, 4);
	ck_assert_int_eq(strncmp(key, "sk-1", 4), 0);
	ck_assert_int_eq(engy_api_key("bearer\tsk-2", "other", &key, &len, err,
				      sizeof(err)),
			 0);
	ck_assert_int_eq(strncmp(key, "sk-2", len), 0);
	ck_assert_int_eq(
		engy_api_key(NULL, "sk-3", &key, &len, err, sizeof(err)), 0);
	ck_assert_int_eq(strncmp(key, "sk-3", len), 0);
	ck_assert_int_eq(engy_api_key("Basic dXNlcg==", NULL, &key, &len, err,
				      sizeof(err)),
			 -EACCES);
	ck_assert_str_eq(err, "Authorization: expected \"Bearer <key>\"");
	ck_assert_int_eq(
		engy_api_key("Bearer  ", NULL, &key, &len, err, sizeof(err)),
		-EACCES);
	ck_assert_int_eq(engy_api_key(NULL, NULL, &key, &len, err, sizeof(err)),
			 -EACCES);
	ck_assert_ptr_nonnull(strstr(err, "no API key"));
	ck_assert_ptr_null(key);
}
END_TEST

START_TEST(test_writer)
{
	static const char raw[] = "a\"\\\b\f\n\r\t\x01\x1f\x7f"
				  "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
				  "\xc3\x28\xed\xa0\x80\xff\xe2\x82";
	struct engy_sse_out o;
	char id[40];
	cJSON *j;

	engy_sse_out_init(&o);
	ck_assert_int_eq(engy_sse_out_jstr(&o, raw, sizeof(raw) - 1), 0);
	ck_assert_str_eq(o.buf,
			 "\"a\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\x7f"
			 "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
			 "\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
			 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	j = jparse(o.buf);
	cJSON_Delete(j);
	ck_assert_int_eq(engy_sse_utf8_cut("ab\xc3\xa9z", 5, 3), 2);
	ck_assert_int_eq(engy_sse_utf8_cut("ab\xc3\xa9z", 5, 4), 4);
	ck_assert_int_eq(engy_sse_utf8_cut("\xf0\x9f\x98\x80", 4, 2), 4);
	ck_assert_int_eq(engy_sse_utf8_cut("abc", 3, 9), 3);
	engy_sse_out_reset(&o);
	engy_sse_out_event(&o, "x", "1\n2\r\n3\r4", 8);
	ck_assert_str_eq(o.buf,
			 "event: x\ndata: 1\ndata: 2\ndata: 3\ndata: 4\n\n");
	engy_sse_out_reset(&o);
	engy_sse_out_event(&o, NULL, "", 0);
	engy_sse_out_comment(&o, "keep-alive");
	ck_assert_str_eq(o.buf, "data: \n\n: keep-alive\n\n");
	engy_api_new_id(id, sizeof(id), "chatcmpl-");
	ck_assert_int_eq(strlen(id), 33);
	ck_assert_int_eq(strncmp(id, "chatcmpl-", 9), 0);
	engy_sse_out_free(&o);
}
END_TEST

/* Both string writers read plain runs eight bytes at a time: each byte
 * that needs an escape (or a replacement), at every offset of a long
 * string, comes out as it does alone. */
START_TEST(test_writer_every_offset)
{
	static const struct {
		const char *in, *jstr;
	} sp[] = {
		{ "\x01", "\\u0001" },	    { "\x1f", "\\u001f" },
		{ "\"", "\\\"" },	    { "\\", "\\\\" },
		{ "\x7f", "\x7f" },	    { "\xc3\xa9", "\xc3\xa9" },
		{ "\xff", "\xef\xbf\xbd" }, { "\n", "\\n" },
	};
	struct engy_sse_out o;
	char in[96], want[128];
	size_t k, i;

	for (k = 0; k < 40; k++) {
		for (i = 0; i < sizeof(sp) / sizeof(sp[0]); i++) {
			cJSON *j;
			char *c;

			memset(in, 'a', k);
			snprintf(in + k, sizeof(in) - k, "%sbcdefghijklmnopq",
				 sp[i].in);
			memset(want, 'a', k + 1);
			want[0] = '"';
			snprintf(want + k + 1, sizeof(want) - k - 1,
				 "%sbcdefghijklmnopq\"", sp[i].jstr);
			engy_sse_out_init(&o);
			ck_assert_int_eq(engy_sse_out_jstr(&o, in, strlen(in)),
					 0);
			ck_assert_msg(strcmp(o.buf, want) == 0,
				      "jstr, offset %zu, byte #%zu", k, i);
			engy_sse_out_reset(&o);
			j = cJSON_CreateString(in);
			c = cJSON_PrintUnformatted(j);
			ck_assert_int_eq(engy_sse_out_cjson_str(&o, in), 0);
			ck_assert_msg(strcmp(o.buf, c) == 0,
				      "cjson_str, offset %zu, byte #%zu", k, i);
			free(c);
			cJSON_Delete(j);
			engy_sse_out_free(&o);
		}
	}
}
END_TEST

/* engy_sse_out_cjson(): byte for byte what cJSON_PrintUnformatted()
 * prints (the serve frame's request), numbers at both of cJSON's
 * precisions, escapes, nesting and raw text included. */
START_TEST(test_cjson_print)
{
	static const char *const docs[] = {
		"{\"a\":0.1,\"b\":-0.0,\"c\":1e15,\"d\":999999999999999,"
		"\"e\":-999999999999999,\"f\":1e300,\"g\":5e-324,\"h\":0.7,"
		"\"i\":1.0000000000000002,\"j\":123456789012345678,\"k\":-3,"
		"\"l\":2147483648,\"m\":0.30000000000000004}",
		"[\"\\u0001\\b\\f\\n\\r\\t\\\"\\\\/\\u001f\\u007f\","
		"\"\\u00e9\\ud83d\\ude00\",\"\",[],{},[[{\"\":null}]],true,"
		"false]",
		"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
		"\"hi\\nthere\"}],\"max_tokens\":4,\"temperature\":0.6,"
		"\"top_p\":0.95,\"stop\":[\"\\u0000x\"]}",
	};
	struct engy_sse_out o;
	size_t i;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		cJSON *j = cJSON_Parse(docs[i]);
		char *c;

		ck_assert_ptr_nonnull(j);
		c = cJSON_PrintUnformatted(j);
		engy_sse_out_init(&o);
		ck_assert_int_eq(engy_sse_out_cjson(&o, j), 0);
		ck_assert_str_eq(o.buf, c);
		engy_sse_out_free(&o);
		free(c);
		cJSON_Delete(j);
	}
	{
		cJSON *j = cJSON_CreateObject(), *n = cJSON_CreateNumber(0);
		char *c;

		n->valuedouble = NAN; /* not JSON: cJSON writes null */
		cJSON_AddItemToObject(j, "n", n);
		cJSON_AddRawToObject(j, "r", "{\"x\": [1, 2]}");
		cJSON_AddItemToObject(j, "s", cJSON_CreateString("a\x02"));
		c = cJSON_PrintUnformatted(j);
		engy_sse_out_init(&o);
		ck_assert_int_eq(engy_sse_out_cjson(&o, j), 0);
		ck_assert_str_eq(o.buf, c);
		ck_assert_str_eq(
			o.buf,
			"{\"n\":null,\"r\":{\"x\": [1, 2]},\"s\":\"a\\u0002\"}");
		engy_sse_out_free(&o);
		free(c);
		cJSON_Delete(j);
	}
	engy_sse_out_init(&o);
	ck_assert_int_eq(engy_sse_out_cjson(&o, NULL), -EINVAL);
	engy_sse_out_free(&o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("apierr");
	TCase *tc = tcase_create("apierr");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_types);
	tcase_add_test(tc, test_bodies);
	tcase_add_test(tc, test_sse);
	tcase_add_test(tc, test_param_of);
	tcase_add_test(tc, test_models_keys);
	tcase_add_test(tc, test_writer);
	tcase_add_test(tc, test_writer_every_offset);
	tcase_add_test(tc, test_cjson_print);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
