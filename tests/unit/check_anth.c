/* SPDX-License-Identifier: MIT */
/*
 * The Anthropic side of the buyer API (lib/buyerapi/anth.c, lib/buyerapi/anth_out.c): a
 * Messages body translated into the miner's OpenAI chat body (system,
 * text blocks, tool_use/tool_result, thinking, tools, tool_choice,
 * stop_sequences), which the chat template then renders; every refusal
 * naming its field; the anthropic-version header; the Message rendering
 * (block order, signature, stop_reason, usage excluding cache reads); and
 * the event stream, event by event.
 *
 * Oracle: hand-derived by the test's author from Anthropic's Messages API
 * reference and specs/buyer-api.md, not from engy's output; the official
 * @anthropic-ai/sdk reads the same output in buyer_sdk.sh.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anth.h"
#include "buyerapi_check.h"
#include "chat_template.h"
#include "minerproto.h"

static char err[256];

static int parse(const char *json, unsigned flags, struct engy_api_req *req)
{
	err[0] = '\0';
	return engy_anth_parse(json, strlen(json), NULL, flags, req, err,
			       sizeof(err));
}

START_TEST(test_parse_translation)
{
	static const char body[] =
		"{\"model\":\"claude-x\",\"max_tokens\":2048,\"stream\":true,"
		"\"system\":[{\"type\":\"text\",\"text\":\"You are terse.\","
		"\"cache_control\":{\"type\":\"ephemeral\"}},{\"type\":"
		"\"text\","
		"\"text\":\" Answer in French.\"}],"
		"\"metadata\":{\"user_id\":\"u\"},\"temperature\":0.2,"
		"\"top_p\":0.95,\"top_k\":40,\"stop_sequences\":[\"###\"],"
		"\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024},"
		"\"messages\":["
		"{\"role\":\"user\",\"content\":\"Weather in Paris?\"},"
		"{\"role\":\"assistant\",\"content\":["
		"{\"type\":\"thinking\",\"thinking\":\"I should \","
		"\"signature\":\"sig\"},{\"type\":\"redacted_thinking\","
		"\"data\":\"x\"},{\"type\":\"thinking\",\"thinking\":\"call "
		"it.\","
		"\"signature\":\"s2\"},"
		"{\"type\":\"text\",\"text\":\"Checking.\"},"
		"{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_"
		"weather\","
		"\"input\":{\"city\":\"Paris\",\"days\":2}}]},"
		"{\"role\":\"user\",\"content\":["
		"{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\","
		"\"content\":[{\"type\":\"text\",\"text\":\"22C\"}]},"
		"{\"type\":\"text\",\"text\":\"And tomorrow?\"}]}],"
		"\"tools\":[{\"name\":\"get_weather\",\"description\":"
		"\"Weather\","
		"\"input_schema\":{\"type\":\"object\",\"properties\":{"
		"\"city\":"
		"{\"type\":\"string\"},\"days\":{\"type\":\"integer\"}}}}],"
		"\"tool_choice\":{\"type\":\"any\","
		"\"disable_parallel_tool_use\":true}}";
	struct engy_api_req req;
	const cJSON *b;

	ck_assert_msg(parse(body, 0, &req) == 0, "%s", err);
	b = req.body;
	ck_assert_int_eq(req.api, ENGY_API_ANTHROPIC);
	ck_assert_str_eq(req.model, "claude-x");
	ck_assert(req.stream && req.show_reasoning && !req.include_usage);
	ck_assert_int_eq(req.max_tokens, 2048);
	ck_assert_int_eq(jnum(b, "max_tokens"), 2048);
	ck_assert(
		cJSON_IsTrue(jget(b, "chat_template_kwargs.enable_thinking")));
	ck_assert_double_eq(jnum(b, "temperature"), 0.2);
	ck_assert_double_eq(jnum(b, "top_p"), 0.95);
	ck_assert_int_eq(jnum(b, "top_k"), 40);
	ck_assert_str_eq(jstr(b, "stop.0"), "###");
	ck_assert_ptr_null(jget(b, "metadata"));
	ck_assert_ptr_null(jget(b, "stream"));
	/* system, user, assistant, tool, user */
	ck_assert_int_eq(jsize(b, "messages"), 5);
	ck_assert_str_eq(jstr(b, "messages.0.role"), "system");
	ck_assert_str_eq(jstr(b, "messages.0.content.0.text"),
			 "You are terse.");
	ck_assert_str_eq(jstr(b, "messages.0.content.1.text"),
			 " Answer in French.");
	ck_assert_ptr_null(jget(b, "messages.0.content.0.cache_control"));
	ck_assert_str_eq(jstr(b, "messages.1.content"), "Weather in Paris?");
	ck_assert_str_eq(jstr(b, "messages.2.role"), "assistant");
	ck_assert_str_eq(jstr(b, "messages.2.reasoning_content"),
			 "I should call it.");
	ck_assert_str_eq(jstr(b, "messages.2.content.0.text"), "Checking.");
	ck_assert_str_eq(jstr(b, "messages.2.tool_calls.0.id"), "toolu_1");
	ck_assert_str_eq(jstr(b, "messages.2.tool_calls.0.type"), "function");
	ck_assert_str_eq(jstr(b, "messages.2.tool_calls.0.function.name"),
			 "get_weather");
	ck_assert_str_eq(jstr(b, "messages.2.tool_calls.0.function.arguments"),
			 "{\"city\":\"Paris\",\"days\":2}");
	ck_assert_str_eq(jstr(b, "messages.3.role"), "tool");
	ck_assert_str_eq(jstr(b, "messages.3.tool_call_id"), "toolu_1");
	ck_assert_str_eq(jstr(b, "messages.3.content.0.text"), "22C");
	ck_assert_str_eq(jstr(b, "messages.4.role"), "user");
	ck_assert_str_eq(jstr(b, "messages.4.content.0.text"), "And tomorrow?");
	ck_assert_int_eq(req.n_tools, 1);
	ck_assert_str_eq(jstr(b, "tools.0.type"), "function");
	ck_assert_str_eq(jstr(b, "tools.0.function.name"), "get_weather");
	ck_assert_str_eq(jstr(b, "tools.0.function.description"), "Weather");
	ck_assert_str_eq(jstr(b, "tools.0.function.parameters.properties.days."
				 "type"),
			 "integer");
	ck_assert_str_eq(jstr(b, "tool_choice"), "required");
	miner_accepts(&req);
	engy_api_req_free(&req);
}
END_TEST

START_TEST(test_parse_variants)
{
	struct engy_api_req req;

	/* No thinking: enable_thinking false, reasoning not shown. */
	ck_assert_int_eq(parse("{\"model\":\"m\",\"max_tokens\":5,\"system\":"
			       "\"S\",\"messages\":[{\"role\":\"user\","
			       "\"content\":\"q\"},{\"role\":\"assistant\","
			       "\"content\":[{\"type\":\"tool_use\",\"id\":"
			       "\"t\",\"name\":\"f\",\"input\":{}}]},"
			       "{\"role\":\"user\","
			       "\"content\":[{\"type\":\"tool_result\","
			       "\"tool_use_id\":\"t\",\"is_error\":true}]}],"
			       "\"tools\":[{\"name\":\"f\",\"input_schema\":"
			       "{\"type\":\"object\"}},{\"type\":\"custom\","
			       "\"name\":\"g\",\"input_schema\":{}}],"
			       "\"tool_choice\":{\"type\":\"tool\",\"name\":"
			       "\"g\"}}",
			       0, &req),
			 0);
	ck_assert(!req.show_reasoning && !req.stream);
	ck_assert(cJSON_IsFalse(
		jget(req.body, "chat_template_kwargs.enable_thinking")));
	ck_assert_str_eq(jstr(req.body, "messages.0.content"), "S");
	/* A user turn of only tool results is only tool messages. */
	ck_assert_int_eq(jsize(req.body, "messages"), 4);
	ck_assert_str_eq(jstr(req.body, "messages.2.tool_calls.0.function."
					"arguments"),
			 "{}");
	ck_assert_str_eq(jstr(req.body, "messages.3.role"), "tool");
	ck_assert_str_eq(jstr(req.body, "messages.3.content"), "");
	ck_assert_str_eq(jstr(req.body, "tool_choice.function.name"), "g");
	miner_accepts(&req);
	engy_api_req_free(&req);
	/* adaptive thinking, tool_choice none, string content */
	ck_assert_int_eq(
		parse("{\"model\":\"m\",\"max_tokens\":5,\"thinking\":"
		      "{\"type\":\"adaptive\"},\"messages\":[{\"role\":"
		      "\"user\",\"content\":\"a\"},{\"role\":"
		      "\"assistant\",\"content\":\"b\"},{\"role\":"
		      "\"user\",\"content\":[{\"type\":\"text\",\"text\":"
		      "\"c\"}]}],\"tool_choice\":{\"type\":\"none\"}}",
		      0, &req),
		0);
	ck_assert(req.show_reasoning);
	ck_assert_str_eq(jstr(req.body, "messages.1.content"), "b");
	ck_assert_int_eq(jsize(req.body, "messages.2.content"), 1);
	ck_assert_str_eq(jstr(req.body, "tool_choice"), "none");
	miner_accepts(&req);
	engy_api_req_free(&req);
	/* count_tokens: max_tokens optional */
	ck_assert_int_eq(parse("{\"model\":\"m\",\"messages\":[{\"role\":"
			       "\"user\",\"content\":\"a\"}]}",
			       ENGY_ANTH_COUNT_TOKENS, &req),
			 0);
	ck_assert(!req.has_max_tokens);
	engy_api_req_free(&req);
}
END_TEST

START_TEST(test_parse_errors)
{
#define MSG "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]"
	static const struct {
		const char *body, *want;
	} bad[] = {
		{ "{\"model\":\"m\"," MSG "}",
		  "max_tokens: missing (required)" },
		{ "{\"model\":\"m\",\"max_tokens\":0," MSG "}",
		  "max_tokens: expected an integer >= 1" },
		{ "{\"max_tokens\":1," MSG "}", "model: missing" },
		{ "{\"model\":\"m\",\"max_tokens\":1}", "messages: missing" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[]}",
		  "messages: expected a non-empty array" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":"
		  "\"system\",\"content\":\"x\"}]}",
		  "messages[0].role: expected \"user\" or \"assistant\"" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":"
		  "\"user\"}]}",
		  "messages[0].content: expected a string or an array" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":"
		  "\"user\",\"content\":[{\"type\":\"image\",\"source\":{}}]}]}",
		  "messages[0].content[0].type: \"image\" blocks are not "
		  "supported" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":"
		  "\"user\",\"content\":[{\"text\":\"x\"}]}]}",
		  "messages[0].content[0].type: missing" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":"
		  "\"user\",\"content\":[{\"type\":\"tool_result\"}]}]}",
		  "messages[0].content[0].tool_use_id: missing" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":"
		  "\"user\",\"content\":[{\"type\":\"tool_result\","
		  "\"tool_use_id\":\"t\",\"content\":[{\"type\":\"image\"}]}]}]"
		  "}",
		  "messages[0].content[0].content[0].type: \"image\" blocks" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":"
		  "\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":"
		  "\"t\","
		  "\"name\":\"f\",\"input\":\"{}\"}]}]}",
		  "messages[0].content[0].input: expected an object" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":"
		  "\"assistant\",\"content\":[{\"type\":\"thinking\"}]}]}",
		  "messages[0].content[0].thinking: expected a string" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":"
		  "\"assistant\",\"content\":\"x\"}]}",
		  "messages: no user query found" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":"
		  "\"user\",\"content\":[]}]}",
		  "messages[0].content: empty" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"system\":5," MSG "}",
		  "system: expected a string or an array" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"system\":[{\"type\":"
		  "\"image\"}]," MSG "}",
		  "system[0].type: \"image\" blocks are not supported" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"tools\":[{\"type\":"
		  "\"web_search_20250305\",\"name\":\"web_search\"}]," MSG "}",
		  "tools[0].type: server tools are not supported" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"tools\":[{\"name\":\"f\"}"
		  "]," MSG "}",
		  "tools[0].input_schema: expected" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"tools\":[{\"name\":\"f "
		  "g\","
		  "\"input_schema\":{}}]," MSG "}",
		  "tools[0].name: expected 1 to 64" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"tools\":[{\"name\":\"f\","
		  "\"input_schema\":{}},{\"name\":\"f\",\"input_schema\":{}}]"
		  "," MSG "}",
		  "tools[1].name: the name of an earlier tool" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"tools\":[{\"name\":\"f\","
		  "\"input_schema\":{}}],\"tool_choice\":{\"type\":\"tool\","
		  "\"name\":\"g\"}," MSG "}",
		  "tool_choice.name: not one of tools" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"tool_choice\":{\"type\":"
		  "\"any\"}," MSG "}",
		  "tool_choice: \"any\" needs tools" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"tool_choice\":"
		  "\"auto\"," MSG "}",
		  "tool_choice.type: expected" },
		{ "{\"model\":\"m\",\"max_tokens\":2000,\"thinking\":{\"type\":"
		  "\"enabled\",\"budget_tokens\":100}," MSG "}",
		  "thinking.budget_tokens: expected an integer >= 1024" },
		{ "{\"model\":\"m\",\"max_tokens\":2000,\"thinking\":{\"type\":"
		  "\"enabled\",\"budget_tokens\":2000}," MSG "}",
		  "thinking.budget_tokens: must be less than max_tokens" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"thinking\":{\"type\":"
		  "\"maybe\"}," MSG "}",
		  "thinking.type: expected" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"temperature\":1.5," MSG
		  "}",
		  "temperature: expected a number in 0..1" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"top_k\":-1," MSG "}",
		  "top_k: expected an integer >= 0" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"stop_sequences\":"
		  "\"x\"," MSG "}",
		  "stop_sequences: expected an array of strings" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"stop_sequences\":[\"a\","
		  "\"b\",\"c\",\"d\",\"e\"]," MSG "}",
		  "stop_sequences: at most 4 sequences are served" },
		{ "{\"model\":\"m\",\"max_tokens\":1,\"stream\":1," MSG "}",
		  "stream: expected true or false" },
	};
#undef MSG
	struct engy_api_req req;
	char param[96];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse(bad[i].body, 0, &req) == -EINVAL,
			      "accepted #%zu: %s", i, bad[i].body);
		ck_assert_msg(strstr(err, bad[i].want) == err,
			      "#%zu: got \"%s\", want \"%s\"", i, err,
			      bad[i].want);
		ck_assert_ptr_null(req.body);
		engy_apierr_param_of(err, param, sizeof(param));
		ck_assert_msg(param[0], "#%zu: no field in %s", i, err);
	}
	ck_assert_int_eq(
		engy_anth_check_version("2023-06-01", err, sizeof(err)), 0);
	ck_assert_int_eq(engy_anth_check_version(NULL, err, sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, "anthropic-version: header is required");
	ck_assert_int_eq(engy_anth_check_version("2023-06-1", err, sizeof(err)),
			 -EINVAL);
	ck_assert_int_eq(
		engy_anth_check_version("2023-06-011", err, sizeof(err)),
		-EINVAL);
	ck_assert_int_eq(engy_anth_check_version("latest", err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "expected a date"));
}
END_TEST

static cJSON *output(const char *json, struct engy_api_result *r)
{
	cJSON *o = jparse(json);

	ck_assert_msg(engy_api_result_parse(o, r, err, sizeof(err)) == 0, "%s",
		      err);
	return o;
}

#define OUT_ALL                                                                \
	"{\"choices\":[{\"finish_reason\":\"stop\",\"message\":{\"content\":"  \
	"\"Let me check.\",\"reasoning_content\":\"Need weather.\","           \
	"\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\","            \
	"\"function\":{\"name\":\"get_weather\",\"arguments\":"                \
	"\"{\\\"city\\\": \\\"Paris\\\", \\\"when\\\": [1, 2.5, "              \
	"\\\"naïve\\\"]}\"}},{\"id\":\"call_2\",\"function\":{\"name\":"      \
	"\"noop\",\"arguments\":\"\"}}]}}],\"usage\":{\"prompt_tokens\":472,"  \
	"\"completion_tokens\":89,\"prompt_tokens_details\":"                  \
	"{\"cached_tokens\":400}}}"

static struct engy_api_req mkreq(bool thinking)
{
	struct engy_api_req req;
	char body[256];

	snprintf(body, sizeof(body),
		 "{\"model\":\"qwen\",\"max_tokens\":4096,%s\"messages\":"
		 "[{\"role\":\"user\",\"content\":\"x\"}]}",
		 thinking ? "\"thinking\":{\"type\":\"enabled\","
			    "\"budget_tokens\":2048},"
			  : "");
	ck_assert_msg(parse(body, 0, &req) == 0, "%s", err);
	return req;
}

/* Structured output (output_config.format, the beta's output_format) and
 * forced tools (expected values from Anthropic's API reference). */
START_TEST(test_parse_constraint)
{
	static const char *const fmt =
		"{\"model\":\"m\",\"max_tokens\":9,%s,\"messages\":[{\"role\":"
		"\"user\",\"content\":\"x\"}]}";
	static const char *const tools =
		"\"tools\":[{\"name\":\"f\",\"input_schema\":{\"type\":"
		"\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}}]";
	struct engy_api_req req;
	char body[1024], part[512];
	const cJSON *js;

	snprintf(body, sizeof(body), fmt,
		 "\"output_config\":{\"format\":{\"type\":\"json_schema\","
		 "\"schema\":{\"type\":\"object\",\"properties\":{\"n\":{"
		 "\"type\":\"string\"}},\"required\":[\"n\"],"
		 "\"additionalProperties\":false}}}");
	ck_assert_int_eq(parse(body, 0, &req), 0);
	ck_assert_uint_eq(req.constraint, ENGY_API_CONS_JSON);
	js = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(req.body, "response_format"),
		"json_schema");
	ck_assert_str_eq(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(js, "schema"), "type")
			->valuestring,
		"object");
	engy_api_req_free(&req);

	snprintf(body, sizeof(body), fmt,
		 "\"output_format\":{\"type\":\"json_schema\",\"schema\":{"
		 "\"type\":\"array\",\"items\":{\"type\":\"integer\"}}}");
	ck_assert_int_eq(parse(body, 0, &req), 0);
	ck_assert_uint_eq(req.constraint, ENGY_API_CONS_JSON);
	engy_api_req_free(&req);

	snprintf(body, sizeof(body), fmt,
		 "\"output_format\":{\"type\":\"json_schema\",\"schema\":{"
		 "\"type\":\"string\",\"pattern\":\"^a$\"}}");
	ck_assert_int_eq(parse(body, 0, &req), -EINVAL);
	ck_assert_str_eq(err, "output_format.schema: unsupported keyword "
			      "\"pattern\" at /");
	snprintf(body, sizeof(body), fmt,
		 "\"output_format\":{\"type\":\"text\"}");
	ck_assert_int_eq(parse(body, 0, &req), -EINVAL);
	ck_assert_str_eq(err, "output_format.type: expected \"json_schema\"");

	snprintf(part, sizeof(part), "%s,\"tool_choice\":{\"type\":\"any\"}",
		 tools);
	snprintf(body, sizeof(body), fmt, part);
	ck_assert_int_eq(parse(body, 0, &req), 0);
	ck_assert_uint_eq(req.constraint, ENGY_API_CONS_TOOL);
	engy_api_req_free(&req);
	snprintf(part, sizeof(part),
		 "%s,\"tool_choice\":{\"type\":\"tool\",\"name\":\"f\"}",
		 tools);
	snprintf(body, sizeof(body), fmt, part);
	ck_assert_int_eq(parse(body, 0, &req), 0);
	ck_assert_uint_eq(req.constraint, ENGY_API_CONS_TOOL);
	engy_api_req_free(&req);
	snprintf(part, sizeof(part), "%s,\"tool_choice\":{\"type\":\"auto\"}",
		 tools);
	snprintf(body, sizeof(body), fmt, part);
	ck_assert_int_eq(parse(body, 0, &req), 0);
	ck_assert_uint_eq(req.constraint, 0);
	engy_api_req_free(&req);
}
END_TEST

START_TEST(test_response)
{
	struct engy_api_req req = mkreq(true);
	struct engy_api_result r;
	struct engy_sse_out o;
	cJSON *out, *j, *want;

	engy_sse_out_init(&o);
	out = output(OUT_ALL, &r);
	ck_assert_int_eq(engy_anth_response(&o, &req, "msg_1", &r), 0);
	j = jparse(o.buf);
	ck_assert_str_eq(jstr(j, "id"), "msg_1");
	ck_assert_str_eq(jstr(j, "type"), "message");
	ck_assert_str_eq(jstr(j, "role"), "assistant");
	ck_assert_str_eq(jstr(j, "model"), "qwen");
	ck_assert_int_eq(jsize(j, "content"), 4);
	ck_assert_str_eq(jstr(j, "content.0.type"), "thinking");
	ck_assert_str_eq(jstr(j, "content.0.thinking"), "Need weather.");
	ck_assert_int_eq(strncmp(jstr(j, "content.0.signature"), "engy-", 5),
			 0);
	ck_assert_str_eq(jstr(j, "content.1.type"), "text");
	ck_assert_str_eq(jstr(j, "content.1.text"), "Let me check.");
	ck_assert_str_eq(jstr(j, "content.2.type"), "tool_use");
	ck_assert_str_eq(jstr(j, "content.2.id"), "call_1");
	ck_assert_str_eq(jstr(j, "content.2.name"), "get_weather");
	want = jparse("{\"city\":\"Paris\",\"when\":[1,2.5,\"naïve\"]}");
	ck_assert(cJSON_Compare(jget(j, "content.2.input"), want, true));
	cJSON_Delete(want);
	ck_assert_int_eq(jsize(j, "content.3.input"), 0);
	ck_assert_str_eq(jstr(j, "stop_reason"), "tool_use");
	ck_assert(cJSON_IsNull(jget(j, "stop_sequence")));
	ck_assert_int_eq(jnum(j, "usage.input_tokens"), 72);
	ck_assert_int_eq(jnum(j, "usage.cache_read_input_tokens"), 400);
	ck_assert_int_eq(jnum(j, "usage.cache_creation_input_tokens"), 0);
	ck_assert_int_eq(jnum(j, "usage.output_tokens"), 89);
	cJSON_Delete(j);
	engy_api_result_free(&r);
	cJSON_Delete(out);
	engy_api_req_free(&req);

	/* Without thinking asked: no thinking block.  Nothing at all: one
	 * empty text block.  Stop reasons mapped. */
	req = mkreq(false);
	engy_sse_out_reset(&o);
	out = output("{\"choices\":[{\"finish_reason\":\"length\",\"message\":"
		     "{\"content\":\"\",\"reasoning_content\":\"hm\"}}]}",
		     &r);
	ck_assert_int_eq(engy_anth_response(&o, &req, "msg_2", &r), 0);
	j = jparse(o.buf);
	ck_assert_int_eq(jsize(j, "content"), 1);
	ck_assert_str_eq(jstr(j, "content.0.type"), "text");
	ck_assert_str_eq(jstr(j, "content.0.text"), "");
	ck_assert_str_eq(jstr(j, "stop_reason"), "max_tokens");
	cJSON_Delete(j);
	engy_api_result_free(&r);
	cJSON_Delete(out);
	engy_api_req_free(&req);
	ck_assert_str_eq(engy_anth_stop_reason("stop"), "end_turn");
	ck_assert_str_eq(engy_anth_stop_reason("content_filter"), "refusal");
	ck_assert_str_eq(engy_anth_stop_reason(NULL), "end_turn");
	engy_sse_out_reset(&o);
	engy_anth_count_json(&o, 1234);
	ck_assert_str_eq(o.buf, "{\"input_tokens\":1234}");
	engy_sse_out_free(&o);
}
END_TEST

/* Replays the stream the way the SDK's accumulator does and checks the
 * protocol: names match types, message_start once and first, deltas go to
 * the open block of the right type, message_stop last. */
static cJSON *accumulate(const struct evs *v, int *pings)
{
	cJSON *msg = NULL, *content = NULL, *blk, *in;
	char json[1024] = "";
	int i, open = -1, next = 0;
	const cJSON *j;
	const char *type;

	*pings = 0;
	for (i = 0; i < v->n; i++) {
		j = v->e[i].json;
		ck_assert_ptr_nonnull(j);
		type = jstr(j, "type");
		ck_assert_str_eq(v->e[i].name, type);
		if (strcmp(type, "ping") == 0) {
			(*pings)++;
			continue;
		}
		if (strcmp(type, "message_start") == 0) {
			ck_assert_int_eq(i, 0);
			msg = cJSON_Duplicate(jget(j, "message"), true);
			content = cJSON_GetObjectItem(msg, "content");
			ck_assert_int_eq(cJSON_GetArraySize(content), 0);
			continue;
		}
		ck_assert_ptr_nonnull(msg);
		if (strcmp(type, "content_block_start") == 0) {
			ck_assert_int_eq(open, -1);
			ck_assert_int_eq(jnum(j, "index"), next);
			open = next++;
			cJSON_AddItemToArray(
				content,
				cJSON_Duplicate(jget(j, "content_block"),
						true));
			json[0] = '\0';
		} else if (strcmp(type, "content_block_delta") == 0) {
			const char *dt = jstr(j, "delta.type");

			ck_assert_int_eq(jnum(j, "index"), open);
			blk = cJSON_GetArrayItem(content, open);
			type = jstr(blk, "type");
			if (strcmp(dt, "text_delta") == 0) {
				char *t;

				ck_assert_str_eq(type, "text");
				ck_assert_int_ne(
					asprintf(&t, "%s%s", jstr(blk, "text"),
						 jstr(j, "delta.text")),
					-1);
				cJSON_ReplaceItemInObject(
					blk, "text", cJSON_CreateString(t));
				free(t);
			} else if (strcmp(dt, "thinking_delta") == 0) {
				char *t;

				ck_assert_str_eq(type, "thinking");
				ck_assert_int_ne(
					asprintf(&t, "%s%s",
						 jstr(blk, "thinking"),
						 jstr(j, "delta.thinking")),
					-1);
				cJSON_ReplaceItemInObject(
					blk, "thinking", cJSON_CreateString(t));
				free(t);
			} else if (strcmp(dt, "signature_delta") == 0) {
				ck_assert_str_eq(type, "thinking");
				cJSON_ReplaceItemInObject(
					blk, "signature",
					cJSON_CreateString(
						jstr(j, "delta.signature")));
			} else {
				ck_assert_str_eq(dt, "input_json_delta");
				ck_assert_str_eq(type, "tool_use");
				ck_assert_int_le(
					strlen(jstr(j, "delta."
						       "partial_json")),
					8);
				strcat(json, jstr(j, "delta.partial_json"));
			}
		} else if (strcmp(type, "content_block_stop") == 0) {
			ck_assert_int_eq(jnum(j, "index"), open);
			blk = cJSON_GetArrayItem(content, open);
			if (strcmp(jstr(blk, "type"), "tool_use") == 0 &&
			    json[0]) {
				in = jparse(json);
				cJSON_ReplaceItemInObject(blk, "input", in);
			}
			if (strcmp(jstr(blk, "type"), "thinking") == 0)
				ck_assert_str_ne(jstr(blk, "signature"), "");
			open = -1;
		} else if (strcmp(type, "message_delta") == 0) {
			ck_assert_int_eq(open, -1);
			cJSON_ReplaceItemInObject(
				msg, "stop_reason",
				cJSON_Duplicate(jget(j, "delta.stop_reason"),
						true));
			cJSON_ReplaceItemInObject(
				msg, "usage",
				cJSON_Duplicate(jget(j, "usage"), true));
		} else {
			ck_assert_str_eq(type, "message_stop");
			ck_assert_int_eq(i, v->n - 1);
		}
	}
	ck_assert_str_eq(v->e[v->n - 1].name, "message_stop");
	return msg;
}

START_TEST(test_stream)
{
	struct engy_api_req req = mkreq(true);
	struct engy_anth_stream s;
	struct engy_api_result r;
	struct engy_sse_out o;
	cJSON *out, *msg, *whole, *d;
	struct evs v;
	int pings;

	engy_sse_out_init(&o);
	out = output(OUT_ALL, &r);
	ck_assert_int_eq(engy_anth_stream_init(&s, &req, "msg_1"), 0);
	s.args_frag = 8;
	ck_assert_int_eq(engy_anth_stream_start(&s, 472, &o), 0);
	d = jparse("{\"reasoning_content\":\"Need \"}");
	ck_assert_int_eq(engy_anth_stream_delta(&s, d, &o), 0);
	cJSON_Delete(d);
	d = jparse("{\"reasoning_content\":\"weather.\",\"content\":\"Let\"}");
	ck_assert_int_eq(engy_anth_stream_delta(&s, d, &o), 0);
	cJSON_Delete(d);
	ck_assert_int_eq(engy_anth_stream_text(&s, " me", 3, NULL, 0, &o), 0);
	ck_assert_int_eq(engy_anth_stream_finish(&s, &r, &o), 0);
	ck_assert_int_eq(engy_anth_stream_finish(&s, &r, &o), -EINVAL);
	evs_read(&v, o.buf);
	ck_assert_int_eq(v.comments, 0);
	ck_assert_str_eq(v.e[1].name, "ping");
	ck_assert_int_eq(jnum(v.e[0].json, "message.usage.input_tokens"), 472);
	msg = accumulate(&v, &pings);
	ck_assert_int_eq(pings, 1);
	/* The stream accumulates to exactly the non-streamed Message. */
	engy_sse_out_reset(&o);
	ck_assert_int_eq(engy_anth_response(&o, &req, "msg_1", &r), 0);
	whole = jparse(o.buf);
	ck_assert_msg(cJSON_Compare(msg, whole, true),
		      "stream and Message differ:\n%s\n%s",
		      cJSON_PrintUnformatted(msg), o.buf);
	cJSON_Delete(whole);
	cJSON_Delete(msg);
	evs_free(&v);
	engy_anth_stream_free(&s);
	engy_api_req_free(&req);

	/* No thinking asked: reasoning never shows; an empty output still
	 * has its text block and a ping; stream starts on its own. */
	req = mkreq(false);
	engy_sse_out_reset(&o);
	engy_api_result_free(&r);
	cJSON_Delete(out);
	out = output("{\"choices\":[{\"finish_reason\":\"length\",\"message\":"
		     "{\"content\":\"\",\"reasoning_content\":\"hm\"}}],"
		     "\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":7}}",
		     &r);
	ck_assert_int_eq(engy_anth_stream_init(&s, &req, "msg_2"), 0);
	ck_assert_int_eq(engy_anth_stream_text(&s, NULL, 0, "h", 1, &o), 0);
	ck_assert_int_eq(engy_anth_stream_finish(&s, &r, &o), 0);
	evs_read(&v, o.buf);
	msg = accumulate(&v, &pings);
	ck_assert_int_eq(jsize(msg, "content"), 1);
	ck_assert_str_eq(jstr(msg, "content.0.text"), "");
	ck_assert_str_eq(jstr(msg, "stop_reason"), "max_tokens");
	ck_assert_int_eq(jnum(msg, "usage.output_tokens"), 7);
	ck_assert_int_eq(jnum(msg, "usage.input_tokens"), 3);
	ck_assert_int_eq(jnum(v.e[0].json, "message.usage.input_tokens"), 0);
	ck_assert_ptr_null(strstr(o.buf, "thinking"));
	cJSON_Delete(msg);
	evs_free(&v);
	engy_anth_stream_free(&s);
	engy_api_req_free(&req);
	engy_api_result_free(&r);
	cJSON_Delete(out);
	engy_sse_out_free(&o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("anth");
	TCase *tc = tcase_create("anth");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_parse_translation);
	tcase_add_test(tc, test_parse_variants);
	tcase_add_test(tc, test_parse_errors);
	tcase_add_test(tc, test_parse_constraint);
	tcase_add_test(tc, test_response);
	tcase_add_test(tc, test_stream);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
