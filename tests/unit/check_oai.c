/* SPDX-License-Identifier: MIT */
/*
 * The OpenAI side of the buyer API (lib/buyerapi/oai.c, lib/buyerapi/oai_out.c,
 * lib/buyerapi/buyerapi.c, lib/buyerapi/sse_out.c): requests parsed into the miner's chat
 * body (which the chat template and the miner's own field parser then
 * accept), every refusal naming its field, the model's limits, the
 * miner's output read back, chat.completion and the chunk stream
 * (role first, deltas, tool-call fragments, finish, usage, [DONE]).
 *
 * Oracle: hand-written from OpenAI's API reference and specs/buyer-api.md
 * by the test's author; the official openai SDK reads the same output in
 * buyer_sdk.sh.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buyerapi_check.h"
#include "chat_template.h"
#include "minerproto.h"
#include "oai.h"

static char err[256];

static int parse(const char *json, struct engy_api_req *req)
{
	err[0] = '\0';
	return engy_oai_parse(json, strlen(json), NULL, req, err, sizeof(err));
}

START_TEST(test_parse_minimal)
{
	struct engy_api_req req;
	struct engy_api_model m = { .max_output_tokens = 32768,
				    .default_max_tokens = 4096 };

	ck_assert_int_eq(parse("{\"model\":\"qwen3.6-35b-a3b\",\"messages\":"
			       "[{\"role\":\"user\",\"content\":\"hi\"}]}",
			       &req),
			 0);
	ck_assert_str_eq(req.model, "qwen3.6-35b-a3b");
	ck_assert_int_eq(req.api, ENGY_API_OPENAI);
	ck_assert(!req.stream && !req.include_usage && req.show_reasoning);
	ck_assert(!req.has_max_tokens);
	ck_assert_ptr_null(jget(req.body, "max_tokens"));
	ck_assert_ptr_null(jget(req.body, "model"));
	ck_assert_ptr_null(jget(req.body, "stream"));
	ck_assert_str_eq(jstr(req.body, "messages.0.content"), "hi");
	ck_assert_int_eq(engy_api_req_apply(&req, &m, err, sizeof(err)), 0);
	ck_assert_int_eq(jnum(req.body, "max_tokens"), 4096);
	ck_assert_int_eq(req.max_tokens, 4096);
	miner_accepts(&req);
	engy_api_req_free(&req);
}
END_TEST

START_TEST(test_parse_full)
{
	static const char body[] =
		"{\"model\":\"m\",\"stream\":true,"
		"\"stream_options\":{\"include_usage\":true},"
		"\"max_tokens\":99,\"max_completion_tokens\":500,"
		"\"temperature\":0.5,\"top_p\":0.9,\"top_k\":20,\"seed\":7,"
		"\"stop\":[\"END\",\"STOP\"],\"n\":1,\"user\":\"u1\","
		"\"presence_penalty\":0.1,\"store\":false,\"metadata\":{},"
		"\"reasoning_effort\":\"none\",\"parallel_tool_calls\":true,"
		"\"response_format\":{\"type\":\"text\"},"
		"\"some_future_field\":{\"x\":1},"
		"\"messages\":["
		"{\"role\":\"developer\",\"content\":\"be brief\"},"
		"{\"role\":\"user\",\"name\":\"bob\",\"content\":["
		"{\"type\":\"text\",\"text\":\"weather in \","
		"\"cache_control\":{}},{\"type\":\"text\",\"text\":\"Paris?\"}]"
		"},"
		"{\"role\":\"assistant\",\"content\":null,"
		"\"reasoning\":\"need the "
		"tool\",\"tool_calls\":[{\"id\":\"call_1\","
		"\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
		"\"arguments\":{\"city\":\"Paris\"}}}]},"
		"{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":"
		"\"22C\"}],"
		"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
		"\"get_weather\",\"description\":\"d\",\"strict\":true,"
		"\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":"
		"{\"type\":\"string\"}}}}}],"
		"\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":"
		"\"get_weather\"}}}";
	struct engy_api_req req;
	const cJSON *b;

	ck_assert_msg(parse(body, &req) == 0, "%s", err);
	b = req.body;
	ck_assert(req.stream && req.include_usage);
	ck_assert(req.has_max_tokens);
	ck_assert_int_eq(req.max_tokens, 500);
	ck_assert_str_eq(req.max_tokens_field, "max_completion_tokens");
	ck_assert_int_eq(jnum(b, "max_tokens"), 500);
	ck_assert_ptr_null(jget(b, "max_completion_tokens"));
	ck_assert_double_eq(jnum(b, "temperature"), 0.5);
	ck_assert_double_eq(jnum(b, "top_p"), 0.9);
	ck_assert_int_eq(jnum(b, "top_k"), 20);
	ck_assert_int_eq(jnum(b, "seed"), 7);
	ck_assert_str_eq(jstr(b, "stop.1"), "STOP");
	ck_assert(
		cJSON_IsFalse(jget(b, "chat_template_kwargs.enable_thinking")));
	/* Only what the miner reads goes on. */
	ck_assert_ptr_null(jget(b, "user"));
	ck_assert_ptr_null(jget(b, "some_future_field"));
	ck_assert_ptr_null(jget(b, "presence_penalty"));
	ck_assert_ptr_null(jget(b, "response_format"));
	ck_assert_int_eq(req.n_messages, 4);
	ck_assert_str_eq(jstr(b, "messages.0.role"), "system");
	ck_assert_str_eq(jstr(b, "messages.1.content.1.text"), "Paris?");
	ck_assert_ptr_null(jget(b, "messages.1.content.0.cache_control"));
	ck_assert_ptr_null(jget(b, "messages.1.name"));
	ck_assert(cJSON_IsNull(jget(b, "messages.2.content")));
	ck_assert_str_eq(jstr(b, "messages.2.reasoning_content"),
			 "need the tool");
	ck_assert_str_eq(jstr(b, "messages.2.tool_calls.0.function.arguments"),
			 "{\"city\":\"Paris\"}");
	ck_assert_str_eq(jstr(b, "messages.2.tool_calls.0.type"), "function");
	ck_assert_str_eq(jstr(b, "messages.3.tool_call_id"), "call_1");
	ck_assert_int_eq(req.n_tools, 1);
	ck_assert_str_eq(jstr(b, "tools.0.function.parameters.type"), "object");
	ck_assert_ptr_null(jget(b, "tools.0.function.strict"));
	ck_assert_str_eq(jstr(b, "tool_choice.function.name"), "get_weather");
	miner_accepts(&req);
	engy_api_req_free(&req);
}
END_TEST

/* Every refusal: -EINVAL and a message that starts with the field. */
START_TEST(test_parse_errors)
{
	static const struct {
		const char *body, *want;
	} bad[] = {
		{ "{\"model\":", "request body: not valid JSON" },
		{ "[1]", "request body: expected a JSON object" },
		{ "{\"model\":\"m\",\"messages\":[]} {\"model\":\"n\"}",
		  "request body: not valid JSON: text after the value" },
		{ "{\"model\":\"m\",\"messages\":[]}x",
		  "request body: not valid JSON: text after the value" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
		  "\"content\":\"a\x01b\"}]}",
		  "request body: not valid JSON: a raw control character" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
		  "\"content\":\"a\tb\"}]}",
		  "request body: not valid JSON: a raw control character" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
		  "\"content\":\"a\\u0000b\"}]}",
		  "request body: not valid JSON: a NUL" },
		{ "{\"model\":\"m\",\x02\"messages\":[]}",
		  "request body: not valid JSON: a control character outside" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
		  "\"content\":\"a\xff\xfe\"}]}",
		  "request body: not valid UTF-8" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
		  "\"content\":\"\xed\xa0\x80\"}]}", /* a surrogate */
		  "request body: not valid UTF-8" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
		  "\"content\":\"\xc0\xaf\"}]}", /* overlong */
		  "request body: not valid UTF-8" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
		  "\"content\":\"cut \xe2\x82",
		  "request body: not valid UTF-8" },
		{ "{\"messages\":[]}", "model: missing" },
		{ "{\"model\":7,\"messages\":[]}", "model: expected" },
		{ "{\"model\":\"\",\"messages\":[]}", "model: expected" },
		{ "{\"model\":\"m\"}", "messages: missing" },
		{ "{\"model\":\"m\",\"messages\":{}}",
		  "messages: expected an array" },
		{ "{\"model\":\"m\",\"messages\":[]}", "messages: empty" },
		{ "{\"model\":\"m\",\"messages\":[1]}",
		  "messages[0]: expected an object" },
		{ "{\"model\":\"m\",\"messages\":[{\"content\":\"x\"}]}",
		  "messages[0].role: missing" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"function\","
		  "\"content\":\"x\"}]}",
		  "messages[0].role: \"function\" messages are not supported" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"robot\","
		  "\"content\":\"x\"}]}",
		  "messages[0].role: unknown role" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}",
		  "messages[0].content: missing" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
		  "\"content\":5}]}",
		  "messages[0].content: expected a string" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
		  "\"content\":"
		  "[{\"type\":\"image_url\",\"image_url\":{\"url\":\"x\"}}]}]}",
		  "messages[0].content[0].type: \"image_url\" parts are not "
		  "supported" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
		  "\"content\":"
		  "[{\"type\":\"text\",\"text\":1}]}]}",
		  "messages[0].content[0].text: expected a string" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\","
		  "\"content\":\"x\"}]}",
		  "messages[0].tool_call_id: missing" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\","
		  "\"content\":\"\",\"tool_calls\":[{\"type\":\"function\","
		  "\"function\":{\"name\":\"f\",\"arguments\":\"{oops\"}}]}]}",
		  "messages[0].tool_calls[0].function.arguments: not the JSON" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\","
		  "\"content\":\"\",\"tool_calls\":[{\"function\":{}}]}]}",
		  "messages[0].tool_calls[0].function.name: expected a string" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\","
		  "\"content\":\"\",\"reasoning_content\":3}]}",
		  "messages[0].reasoning_content: expected" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
		  "\"content\":\"x\"},{\"role\":\"developer\",\"content\":"
		  "\"y\"}]}",
		  "messages[1]: a system message must come first" },
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"system\","
		  "\"content\":\"x\"}]}",
		  "messages: no user query found" },
		{ "{\"model\":\"m\",\"max_tokens\":0,\"messages\":[{\"role\":"
		  "\"user\",\"content\":\"x\"}]}",
		  "max_tokens: expected an integer >= 1" },
		{ "{\"model\":\"m\",\"max_completion_tokens\":1.5,\"messages\":"
		  "[{\"role\":\"user\",\"content\":\"x\"}]}",
		  "max_completion_tokens: expected an integer >= 1" },
		{ "{\"model\":\"m\",\"temperature\":3,\"messages\":[{\"role\":"
		  "\"user\",\"content\":\"x\"}]}",
		  "temperature: expected a number in 0..2" },
		{ "{\"model\":\"m\",\"top_p\":0,\"messages\":[{\"role\":"
		  "\"user\","
		  "\"content\":\"x\"}]}",
		  "top_p: expected" },
		{ "{\"model\":\"m\",\"n\":2,\"messages\":[{\"role\":\"user\","
		  "\"content\":\"x\"}]}",
		  "n: only 1 choice is served" },
		{ "{\"model\":\"m\",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"],"
		  "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		  "stop: at most 4" },
		{ "{\"model\":\"m\",\"stop\":7,\"messages\":[{\"role\":\"user\","
		  "\"content\":\"x\"}]}",
		  "stop: expected a string or an array" },
		{ "{\"model\":\"m\",\"tools\":{},\"messages\":[{\"role\":"
		  "\"user\","
		  "\"content\":\"x\"}]}",
		  "tools: expected an array" },
		{ "{\"model\":\"m\",\"tools\":[{\"type\":\"custom\",\"custom\":{"
		  "}}],"
		  "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		  "tools[0].type: only \"function\" tools" },
		{ "{\"model\":\"m\",\"tools\":[{\"type\":\"function\","
		  "\"function\":"
		  "{\"name\":\"bad name\"}}],\"messages\":[{\"role\":\"user\","
		  "\"content\":\"x\"}]}",
		  "tools[0].function.name: expected 1 to 64" },
		{ "{\"model\":\"m\",\"tools\":[{\"function\":{\"name\":\"f\"}},"
		  "{\"function\":{\"name\":\"f\"}}],\"messages\":[{\"role\":"
		  "\"user\",\"content\":\"x\"}]}",
		  "tools[1].function.name: the name of an earlier tool" },
		{ "{\"model\":\"m\",\"tools\":[{\"function\":{\"name\":\"f\","
		  "\"parameters\":[]}}],\"messages\":[{\"role\":\"user\","
		  "\"content\":\"x\"}]}",
		  "tools[0].function.parameters: expected" },
		{ "{\"model\":\"m\",\"tools\":[{\"function\":{\"name\":\"f\"}}],"
		  "\"tool_choice\":{\"type\":\"function\",\"function\":{"
		  "\"name\":"
		  "\"g\"}},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]"
		  "}",
		  "tool_choice: names a function that is not in tools" },
		{ "{\"model\":\"m\",\"tool_choice\":\"required\",\"messages\":"
		  "[{\"role\":\"user\",\"content\":\"x\"}]}",
		  "tool_choice: \"required\" needs tools" },
		{ "{\"model\":\"m\",\"tool_choice\":\"sometimes\",\"messages\":"
		  "[{\"role\":\"user\",\"content\":\"x\"}]}",
		  "tool_choice: expected" },
		{ "{\"model\":\"m\",\"response_format\":{\"type\":\"xml\"},"
		  "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		  "response_format.type: expected \"text\", \"json_object\" or "
		  "\"json_schema\"" },
		{ "{\"model\":\"m\",\"response_format\":{\"type\":\"json_"
		  "schema\",\"json_schema\":{\"name\":\"p\",\"schema\":{"
		  "\"type\":\"object\",\"properties\":{\"e\":{\"type\":"
		  "\"string\",\"format\":\"email\"}}}}},"
		  "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		  "response_format.json_schema.schema: unsupported keyword "
		  "\"format\" at /properties/e" },
		{ "{\"model\":\"m\",\"tools\":[{\"function\":{\"name\":\"f\","
		  "\"parameters\":{\"type\":\"object\",\"properties\":{\"a\":"
		  "{\"allOf\":[]}}}}}],\"tool_choice\":\"required\","
		  "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		  "tools[0].parameters: unsupported keyword \"allOf\" at "
		  "/properties/arguments/properties/a" },
		{ "{\"model\":\"m\",\"top_logprobs\":2,"
		  "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		  "top_logprobs: logprobs must be set to true" },
		{ "{\"model\":\"m\",\"logprobs\":true,\"top_logprobs\":21,"
		  "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		  "top_logprobs: expected an integer in 0..20" },
		{ "{\"model\":\"m\",\"stream\":\"yes\",\"messages\":[{\"role\":"
		  "\"user\",\"content\":\"x\"}]}",
		  "stream: expected true or false" },
		{ "{\"model\":\"m\",\"stream\":true,\"stream_options\":"
		  "{\"include_usage\":1},\"messages\":[{\"role\":\"user\","
		  "\"content\":\"x\"}]}",
		  "stream_options.include_usage: expected true or false" },
		{ "{\"model\":\"m\",\"chat_template_kwargs\":{\"enable_"
		  "thinking\":"
		  "\"no\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]"
		  "}",
		  "chat_template_kwargs.enable_thinking: expected true or "
		  "false" },
		{ "{\"model\":\"m\",\"reasoning_effort\":1,\"messages\":[{"
		  "\"role\":"
		  "\"user\",\"content\":\"x\"}]}",
		  "reasoning_effort: expected a string" },
	};
	struct engy_api_req req;
	char param[64];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse(bad[i].body, &req) == -EINVAL,
			      "accepted #%zu: %s", i, bad[i].body);
		ck_assert_msg(strstr(err, bad[i].want) == err,
			      "#%zu: got \"%s\", want \"%s\"", i, err,
			      bad[i].want);
		ck_assert_ptr_null(req.body);
		ck_assert_ptr_null(req.model);
		engy_apierr_param_of(err, param, sizeof(param));
		if (strncmp(err, "request body", 12) == 0)
			ck_assert_str_eq(param, "");
		else
			ck_assert_msg(param[0] && strncmp(err, param,
							  strlen(param)) == 0,
				      "#%zu: no param in %s", i, err);
	}
	engy_apierr_param_of("messages[3].content[0].type: x", param,
			     sizeof(param));
	ck_assert_str_eq(param, "messages[3].content[0].type");
}
END_TEST

/* The byte checks before the parse read plain runs a word at a time:
 * each refused byte at every offset of a long string (all alignments,
 * before and after the word loop's end) is still found, and the same
 * body with a plain byte there is accepted. */
START_TEST(test_parse_bytes_every_offset)
{
	static const struct {
		const char *bytes, *want;
	} bad[] = {
		{ "\x01",
		  "request body: not valid JSON: a raw control character" },
		{ "\x1f",
		  "request body: not valid JSON: a raw control character" },
		{ "\\u0000", "request body: not valid JSON: a NUL" },
		{ "\xff", "request body: not valid UTF-8" },
		{ "\x80", "request body: not valid UTF-8" },
		{ "\xc3", "request body: not valid UTF-8" },
		{ "\xed\xa0\x80", "request body: not valid UTF-8" },
	};
	struct engy_api_req req;
	char body[256], text[64];
	size_t i, k;

	for (k = 0; k < 40; k++) {
		for (i = 0; i <= sizeof(bad) / sizeof(bad[0]); i++) {
			memset(text, 'a', k);
			snprintf(text + k, sizeof(text) - k, "%s%s",
				 i < sizeof(bad) / sizeof(bad[0])
					 ? bad[i].bytes
					 : "\\\"\xc3\xa9",
				 "bcdefghijklmnop");
			snprintf(body, sizeof(body),
				 "{\"model\":\"m\",\"messages\":[{\"role\":"
				 "\"user\",\"content\":\"%s\"}]}",
				 text);
			if (i == sizeof(bad) / sizeof(bad[0])) {
				ck_assert_msg(parse(body, &req) == 0,
					      "offset %zu: %s", k, err);
				engy_api_req_free(&req);
				continue;
			}
			ck_assert_msg(parse(body, &req) == -EINVAL,
				      "accepted %s at offset %zu", bad[i].bytes,
				      k);
			ck_assert_msg(strstr(err, bad[i].want) == err,
				      "offset %zu: got \"%s\", want \"%s\"", k,
				      err, bad[i].want);
		}
	}
}
END_TEST

/* Structured outputs and forced tools: the constraint and what the body
 * carries to the miner (expected values from OpenAI's API reference). */
START_TEST(test_parse_constraint)
{
	static const char *const j_obj =
		"{\"model\":\"m\",\"response_format\":{\"type\":\"json_object\"},"
		"\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
	static const char *const j_schema =
		"{\"model\":\"m\",\"response_format\":{\"type\":\"json_schema\","
		"\"json_schema\":{\"name\":\"person\",\"strict\":true,\"schema\":"
		"{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
		"\"string\"}},\"required\":[\"n\"],\"additionalProperties\":"
		"false}}},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";
	static const char *const j_tool =
		"{\"model\":\"m\",\"tools\":[{\"type\":\"function\",\"function\":"
		"{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"properties\""
		":{\"a\":{\"type\":\"integer\"}}}}},{\"type\":\"function\","
		"\"function\":{\"name\":\"g\"}}],\"tool_choice\":%s,\"messages\":"
		"[{\"role\":\"user\",\"content\":\"x\"}]}";
	struct engy_api_req req;
	char body[1024];
	const cJSON *rf, *js;

	ck_assert_int_eq(engy_oai_parse(j_obj, strlen(j_obj), NULL, &req, err,
					sizeof(err)),
			 0);
	ck_assert_uint_eq(req.constraint, ENGY_API_CONS_JSON);
	rf = jget(req.body, "response_format");
	ck_assert_str_eq(jget(rf, "type")->valuestring, "json_object");
	engy_api_req_free(&req);

	ck_assert_int_eq(engy_oai_parse(j_schema, strlen(j_schema), NULL, &req,
					err, sizeof(err)),
			 0);
	ck_assert_uint_eq(req.constraint, ENGY_API_CONS_JSON);
	rf = jget(req.body, "response_format");
	js = jget(rf, "json_schema");
	ck_assert_str_eq(jget(rf, "type")->valuestring, "json_schema");
	ck_assert_str_eq(jget(js, "name")->valuestring, "person");
	ck_assert_str_eq(jget(jget(js, "schema"), "type")->valuestring,
			 "object");
	engy_api_req_free(&req);

	snprintf(body, sizeof(body), j_tool, "\"required\"");
	ck_assert_int_eq(engy_oai_parse(body, strlen(body), NULL, &req, err,
					sizeof(err)),
			 0);
	ck_assert_uint_eq(req.constraint, ENGY_API_CONS_TOOL);
	engy_api_req_free(&req);
	snprintf(body, sizeof(body), j_tool,
		 "{\"type\":\"function\",\"function\":{\"name\":\"g\"}}");
	ck_assert_int_eq(engy_oai_parse(body, strlen(body), NULL, &req, err,
					sizeof(err)),
			 0);
	ck_assert_uint_eq(req.constraint, ENGY_API_CONS_TOOL);
	engy_api_req_free(&req);
	snprintf(body, sizeof(body), j_tool, "\"auto\"");
	ck_assert_int_eq(engy_oai_parse(body, strlen(body), NULL, &req, err,
					sizeof(err)),
			 0);
	ck_assert_uint_eq(req.constraint, 0);
	ck_assert_ptr_null(jget(req.body, "response_format"));
	engy_api_req_free(&req);
}
END_TEST

START_TEST(test_limits)
{
	static const char body[] =
		"{\"model\":\"m\",\"max_tokens\":40000,\"messages\":["
		"{\"role\":\"user\",\"content\":\"a\"},"
		"{\"role\":\"assistant\",\"content\":\"b\"},"
		"{\"role\":\"user\",\"content\":\"c\"}],"
		"\"tools\":[{\"function\":{\"name\":\"f\"}},"
		"{\"function\":{\"name\":\"g\"}}]}";
	struct engy_api_limits lim = { .max_body_bytes = 64 };
	struct engy_api_model m = { .max_output_tokens = 32768 };
	struct engy_api_req req;

	ck_assert_int_eq(engy_oai_parse(body, strlen(body), &lim, &req, err,
					sizeof(err)),
			 -E2BIG);
	ck_assert_int_eq(engy_api_status(-E2BIG), 413);
	ck_assert_ptr_nonnull(strstr(err, "is above the limit of 64"));
	lim.max_body_bytes = 0;
	lim.max_messages = 2;
	ck_assert_int_eq(engy_oai_parse(body, strlen(body), &lim, &req, err,
					sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, "messages: 3 messages is above the limit of 2");
	lim.max_messages = 3;
	lim.max_tools = 1;
	ck_assert_int_eq(engy_oai_parse(body, strlen(body), &lim, &req, err,
					sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, "tools: 2 tools is above the limit of 1");
	lim.max_tools = 2;
	ck_assert_int_eq(engy_oai_parse(body, strlen(body), &lim, &req, err,
					sizeof(err)),
			 0);
	ck_assert_int_eq(engy_api_req_apply(&req, &m, err, sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, "max_tokens: 40000 is above this model's limit "
			      "of 32768 output tokens");
	m.max_output_tokens = 40000;
	ck_assert_int_eq(engy_api_req_apply(&req, &m, err, sizeof(err)), 0);
	ck_assert_int_eq(jnum(req.body, "max_tokens"), 40000);
	engy_api_req_free(&req);
	ck_assert_int_eq(engy_api_status(-EINVAL), 400);
	ck_assert_int_eq(engy_api_status(-EACCES), 401);
	ck_assert_int_eq(engy_api_status(-ENOENT), 404);
	ck_assert_int_eq(engy_api_status(-EPROTO), 502);
	ck_assert_int_eq(engy_api_status(-ENOMEM), 500);
}
END_TEST

/* A miner `response` output, parsed. */
static cJSON *output(const char *json, struct engy_api_result *r)
{
	cJSON *o = jparse(json);

	ck_assert_msg(engy_api_result_parse(o, r, err, sizeof(err)) == 0, "%s",
		      err);
	return o;
}

#define OUT_TEXT                                                               \
	"{\"choices\":[{\"index\":0,\"finish_reason\":\"stop\",\"message\":"   \
	"{\"role\":\"assistant\",\"content\":\"Hello \\u00e9\\n\\\"x\\\"\","   \
	"\"reasoning_content\":\"think\"}}],\"usage\":{\"prompt_tokens\":19,"  \
	"\"completion_tokens\":10,\"total_tokens\":29,"                        \
	"\"prompt_tokens_details\":{\"cached_tokens\":4}}}"
#define OUT_TOOLS                                                              \
	"{\"choices\":[{\"index\":0,\"finish_reason\":\"stop\",\"message\":"   \
	"{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":"    \
	"\"call_a\",\"type\":\"function\",\"function\":{\"name\":"             \
	"\"get_weather\",\"arguments\":\"{\\\"city\\\": \\\"Zürich, "         \
	"Schweiz — a long name to split\\\"}\"}},{\"function\":{\"name\":"   \
	"\"get_time\",\"arguments\":{}}}]}}],\"usage\":{\"prompt_tokens\":5,"  \
	"\"completion_tokens\":3}}"

START_TEST(test_result_parse)
{
	static const char *bad[] = {
		"{}",
		"{\"choices\":[]}",
		"{\"choices\":[{\"message\":\"x\"}]}",
		"{\"choices\":[{\"message\":{\"content\":5}}]}",
		"{\"choices\":[{\"message\":{\"tool_calls\":{}}}]}",
		"{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":"
		"{\"arguments\":\"{}\"}}]}}]}",
		"{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":"
		"{\"name\":\"f\",\"arguments\":\"[1]\"}}]}}]}",
		"{\"choices\":[{\"message\":{\"tool_calls\":[{\"function\":"
		"{\"name\":\"f\",\"arguments\":\"{} x\"}}]}}]}",
	};
	struct engy_api_result r;
	cJSON *o;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o = jparse(bad[i]);
		ck_assert_msg(engy_api_result_parse(o, &r, err, sizeof(err)) ==
				      -EPROTO,
			      "accepted %s", bad[i]);
		ck_assert_msg(strncmp(err, "miner output: ", 14) == 0, "%s",
			      err);
		engy_api_result_free(&r);
		cJSON_Delete(o);
	}
	o = output(OUT_TEXT, &r);
	ck_assert_str_eq(r.content, "Hello \xc3\xa9\n\"x\"");
	ck_assert_str_eq(r.reasoning, "think");
	ck_assert_str_eq(r.finish_reason, "stop");
	ck_assert_int_eq(r.prompt_tokens, 19);
	ck_assert_int_eq(r.cached_tokens, 4);
	engy_api_result_free(&r);
	cJSON_Delete(o);
	/* Calls: a "stop" becomes tool_calls, a missing id is made, object
	 * arguments printed, vLLM's "reasoning" read. */
	o = output(OUT_TOOLS, &r);
	ck_assert_int_eq(r.n_calls, 2);
	ck_assert_str_eq(r.finish_reason, "tool_calls");
	ck_assert_str_eq(r.calls[0].id, "call_a");
	ck_assert_int_eq(strncmp(r.calls[1].id, "call_", 5), 0);
	ck_assert_int_eq(strlen(r.calls[1].id), 29);
	ck_assert_str_eq(r.calls[1].arguments, "{}");
	ck_assert_ptr_null(r.reasoning);
	engy_api_result_free(&r);
	cJSON_Delete(o);
	o = output(
		"{\"choices\":[{\"finish_reason\":\"tool_calls\",\"message\":"
		"{\"reasoning\":\"r\"}}],\"usage\":{\"prompt_tokens\":2,"
		"\"prompt_tokens_details\":{\"cached_tokens\":9}}}",
		&r);
	ck_assert_str_eq(r.finish_reason, "stop");
	ck_assert_str_eq(r.content, "");
	ck_assert_str_eq(r.reasoning, "r");
	ck_assert_int_eq(r.cached_tokens, 2);
	engy_api_result_free(&r);
	cJSON_Delete(o);
	o = output("{\"choices\":[{\"finish_reason\":\"length\",\"message\":"
		   "{\"tool_calls\":[{\"function\":{\"name\":\"f\"}}]}}]}",
		   &r);
	ck_assert_str_eq(r.finish_reason, "length");
	engy_api_result_free(&r);
	cJSON_Delete(o);
}
END_TEST

static struct engy_api_req mkreq(const char *extra)
{
	struct engy_api_req req;
	char body[512];

	snprintf(body, sizeof(body),
		 "{\"model\":\"qwen\\\"3\",%s\"messages\":[{\"role\":\"user\","
		 "\"content\":\"x\"}]}",
		 extra);
	ck_assert_msg(parse(body, &req) == 0, "%s", err);
	return req;
}

START_TEST(test_response)
{
	struct engy_api_req req = mkreq("");
	struct engy_api_result r;
	struct engy_sse_out o;
	cJSON *out, *j;

	engy_sse_out_init(&o);
	out = output(OUT_TEXT, &r);
	ck_assert_int_eq(
		engy_oai_response(&o, &req, "chatcmpl-1", 1730000000, &r), 0);
	j = jparse(o.buf);
	ck_assert_str_eq(jstr(j, "id"), "chatcmpl-1");
	ck_assert_str_eq(jstr(j, "object"), "chat.completion");
	ck_assert_int_eq(jnum(j, "created"), 1730000000);
	ck_assert_str_eq(jstr(j, "model"), "qwen\"3");
	ck_assert_int_eq(jsize(j, "choices"), 1);
	ck_assert_int_eq(jnum(j, "choices.0.index"), 0);
	ck_assert_str_eq(jstr(j, "choices.0.message.role"), "assistant");
	ck_assert_str_eq(jstr(j, "choices.0.message.content"),
			 "Hello \xc3\xa9\n\"x\"");
	ck_assert_str_eq(jstr(j, "choices.0.message.reasoning_content"),
			 "think");
	ck_assert(cJSON_IsNull(jget(j, "choices.0.message.refusal")));
	ck_assert_ptr_null(jget(j, "choices.0.message.tool_calls"));
	ck_assert(cJSON_IsNull(jget(j, "choices.0.logprobs")));
	ck_assert_str_eq(jstr(j, "choices.0.finish_reason"), "stop");
	ck_assert_int_eq(jnum(j, "usage.prompt_tokens"), 19);
	ck_assert_int_eq(jnum(j, "usage.completion_tokens"), 10);
	ck_assert_int_eq(jnum(j, "usage.total_tokens"), 29);
	ck_assert_int_eq(jnum(j, "usage.prompt_tokens_details.cached_tokens"),
			 4);
	cJSON_Delete(j);
	engy_api_result_free(&r);
	cJSON_Delete(out);

	engy_sse_out_reset(&o);
	out = output(OUT_TOOLS, &r);
	ck_assert_int_eq(engy_oai_response(&o, &req, "c2", 1, &r), 0);
	j = jparse(o.buf);
	ck_assert(cJSON_IsNull(jget(j, "choices.0.message.content")));
	ck_assert_str_eq(jstr(j, "choices.0.finish_reason"), "tool_calls");
	ck_assert_int_eq(jsize(j, "choices.0.message.tool_calls"), 2);
	ck_assert_str_eq(jstr(j, "choices.0.message.tool_calls.0.id"),
			 "call_a");
	ck_assert_str_eq(jstr(j, "choices.0.message.tool_calls.0.type"),
			 "function");
	ck_assert_str_eq(
		jstr(j, "choices.0.message.tool_calls.0.function.name"),
		"get_weather");
	ck_assert_str_eq(jstr(j, "choices.0.message.tool_calls.0.function."
				 "arguments"),
			 r.calls[0].arguments);
	ck_assert_str_eq(jstr(j, "choices.0.message.tool_calls.1.function."
				 "arguments"),
			 "{}");
	ck_assert_int_eq(jnum(j, "usage.prompt_tokens_details.cached_tokens"),
			 0);
	cJSON_Delete(j);
	engy_api_result_free(&r);
	cJSON_Delete(out);
	engy_sse_out_free(&o);
	engy_api_req_free(&req);
}
END_TEST

/* The chunks every stream must have: same id/created/model/object, one
 * choice at index 0 with a delta, usage null only under include_usage. */
static void check_chunks(const struct evs *v, bool usage, int *n_chunks)
{
	int i, k = 0;

	ck_assert_int_ge(v->n, 3);
	ck_assert_str_eq(v->e[v->n - 1].data, "[DONE]");
	for (i = 0; i < v->n - 1; i++) {
		const cJSON *j = v->e[i].json;

		ck_assert_str_eq(v->e[i].name, "");
		ck_assert_ptr_nonnull(j);
		ck_assert_str_eq(jstr(j, "id"), "chatcmpl-s");
		ck_assert_str_eq(jstr(j, "object"), "chat.completion.chunk");
		ck_assert_int_eq(jnum(j, "created"), 42);
		ck_assert_str_eq(jstr(j, "model"), "qwen\"3");
		if (usage && i == v->n - 2) {
			ck_assert_int_eq(jsize(j, "choices"), 0);
			continue;
		}
		ck_assert_int_eq(jsize(j, "choices"), 1);
		ck_assert_int_eq(jnum(j, "choices.0.index"), 0);
		ck_assert(cJSON_IsObject(jget(j, "choices.0.delta")));
		if (usage)
			ck_assert(cJSON_IsNull(jget(j, "usage")));
		else
			ck_assert_ptr_null(jget(j, "usage"));
		k++;
	}
	/* The role delta first, finish_reason only on the last choice. */
	ck_assert_str_eq(jstr(v->e[0].json, "choices.0.delta.role"),
			 "assistant");
	ck_assert_str_eq(jstr(v->e[0].json, "choices.0.delta.content"), "");
	for (i = 0; i < k - 1; i++)
		ck_assert(cJSON_IsNull(
			jget(v->e[i].json, "choices.0.finish_reason")));
	*n_chunks = k;
}

START_TEST(test_stream_text)
{
	struct engy_api_req req = mkreq("\"stream\":true,\"stream_options\":"
					"{\"include_usage\":true},");
	struct engy_oai_stream s;
	struct engy_api_result r;
	struct engy_sse_out o;
	struct evs v;
	cJSON *out, *d;
	int n;

	engy_sse_out_init(&o);
	ck_assert_int_eq(engy_oai_stream_init(&s, &req, "chatcmpl-s", 42), 0);
	d = jparse("{\"reasoning_content\":\"thi\"}");
	ck_assert_int_eq(engy_oai_stream_delta(&s, d, &o), 0);
	cJSON_Delete(d);
	d = jparse("{\"reasoning\":\"nk\",\"content\":\"Hello \"}");
	ck_assert_int_eq(engy_oai_stream_delta(&s, d, &o), 0);
	cJSON_Delete(d);
	out = output(OUT_TEXT, &r);
	ck_assert_int_eq(engy_oai_stream_finish(&s, &r, &o), 0);
	ck_assert_int_eq(engy_oai_stream_finish(&s, &r, &o), -EINVAL);
	evs_read(&v, o.buf);
	check_chunks(&v, true, &n);
	/* role, thi, nk, "Hello ", the rest of the content, finish */
	ck_assert_int_eq(n, 6);
	ck_assert_str_eq(jstr(v.e[1].json, "choices.0.delta.reasoning_content"),
			 "thi");
	ck_assert_str_eq(jstr(v.e[2].json, "choices.0.delta.reasoning_content"),
			 "nk");
	ck_assert_str_eq(jstr(v.e[3].json, "choices.0.delta.content"),
			 "Hello ");
	ck_assert_str_eq(jstr(v.e[4].json, "choices.0.delta.content"),
			 "\xc3\xa9\n\"x\"");
	ck_assert_int_eq(jsize(v.e[5].json, "choices.0.delta"), 0);
	ck_assert_str_eq(jstr(v.e[5].json, "choices.0.finish_reason"), "stop");
	ck_assert_int_eq(jnum(v.e[6].json, "usage.prompt_tokens"), 19);
	ck_assert_int_eq(jnum(v.e[6].json, "usage.total_tokens"), 29);
	ck_assert_int_eq(
		jnum(v.e[6].json, "usage.prompt_tokens_details.cached_tokens"),
		4);
	evs_free(&v);
	engy_oai_stream_free(&s);
	engy_api_req_free(&req);

	/* No include_usage: no usage anywhere; streamed content that is
	 * not a prefix of the final one is not patched up. */
	req = mkreq("\"stream\":true,");
	engy_sse_out_reset(&o);
	ck_assert_int_eq(engy_oai_stream_init(&s, &req, "chatcmpl-s", 42), 0);
	ck_assert_int_eq(engy_oai_stream_text(&s, "Bye", 3, NULL, 0, &o), 0);
	ck_assert_int_eq(engy_oai_stream_finish(&s, &r, &o), 0);
	evs_read(&v, o.buf);
	check_chunks(&v, false, &n);
	/* role, Bye, the whole reasoning (none was streamed), finish */
	ck_assert_int_eq(n, 4);
	ck_assert_str_eq(jstr(v.e[2].json, "choices.0.delta.reasoning_content"),
			 "think");
	evs_free(&v);
	engy_oai_stream_free(&s);
	engy_api_req_free(&req);
	engy_api_result_free(&r);
	cJSON_Delete(out);
	engy_sse_out_free(&o);
}
END_TEST

START_TEST(test_stream_tools)
{
	struct engy_api_req req = mkreq("\"stream\":true,");
	struct engy_oai_stream s;
	struct engy_api_result r;
	struct engy_sse_out o;
	char args[2][256] = { "", "" };
	struct evs v;
	const cJSON *tc;
	int i, n, frags = 0;
	cJSON *out;

	engy_sse_out_init(&o);
	ck_assert_int_eq(engy_oai_stream_init(&s, &req, "chatcmpl-s", 42), 0);
	s.args_frag = 10;
	out = output(OUT_TOOLS, &r);
	ck_assert_int_eq(engy_oai_stream_finish(&s, &r, &o), 0);
	evs_read(&v, o.buf);
	check_chunks(&v, false, &n);
	for (i = 1; i < n - 1; i++) {
		ck_assert_int_eq(
			jsize(v.e[i].json, "choices.0.delta.tool_calls"), 1);
		tc = jget(v.e[i].json, "choices.0.delta.tool_calls.0");
		int k = (int)jnum(tc, "index");

		ck_assert(k == 0 || k == 1);
		if (jget(tc, "id")) {
			/* The first delta of a call: id, type, name, "". */
			ck_assert_str_eq(jstr(tc, "id"), r.calls[k].id);
			ck_assert_str_eq(jstr(tc, "type"), "function");
			ck_assert_str_eq(jstr(tc, "function.name"),
					 r.calls[k].name);
			ck_assert_str_eq(jstr(tc, "function.arguments"), "");
			ck_assert_str_eq(args[k], "");
		} else {
			ck_assert_ptr_null(jget(tc, "type"));
			ck_assert_ptr_null(jget(tc, "function.name"));
			ck_assert_int_le(strlen(jstr(tc, "function.arguments")),
					 10);
			strcat(args[k], jstr(tc, "function.arguments"));
			frags++;
		}
	}
	/* Cut at character boundaries (each fragment decoded as UTF-8). */
	ck_assert_str_eq(args[0], r.calls[0].arguments);
	ck_assert_str_eq(args[1], "{}");
	ck_assert_int_gt(frags, 5);
	ck_assert_str_eq(jstr(v.e[n - 1].json, "choices.0.finish_reason"),
			 "tool_calls");
	ck_assert_int_eq(jsize(v.e[n - 1].json, "choices.0.delta"), 0);
	evs_free(&v);
	engy_oai_stream_free(&s);
	engy_api_result_free(&r);
	cJSON_Delete(out);
	engy_sse_out_free(&o);
	engy_api_req_free(&req);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("oai");
	TCase *tc = tcase_create("oai");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_parse_minimal);
	tcase_add_test(tc, test_parse_full);
	tcase_add_test(tc, test_parse_errors);
	tcase_add_test(tc, test_parse_bytes_every_offset);
	tcase_add_test(tc, test_parse_constraint);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_result_parse);
	tcase_add_test(tc, test_response);
	tcase_add_test(tc, test_stream_text);
	tcase_add_test(tc, test_stream_tools);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
