/* SPDX-License-Identifier: MIT */
/*
 * Chat rendering: the Qwen3.6 variant against hand-derived renders of its
 * template rules, Qwen3 against renders recorded from the reference Jinja,
 * thinking switches, request errors, and the Python-style JSON helpers.
 * (The Qwen3 variant is also compared byte for byte with a Jinja engine in
 * tests/integration/chat_template_peer.sh.)
 *
 * Oracle: Qwen3: renders recorded from the model's reference Jinja
 * template (independent); Qwen3.6: hand-derived from its template's rules
 * by the test's author. chat_template_peer.sh compares live with
 * @huggingface/jinja.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"
#include "chat_util.h"

static const char q36_tools_tail[] =
	"\n</tools>\n\nIf you choose to call a function ONLY reply in the "
	"following format with NO suffix:\n\n<tool_call>\n"
	"<function=example_function_name>\n<parameter=example_parameter_1>\n"
	"value_1\n</parameter>\n<parameter=example_parameter_2>\n"
	"This is the value for the second parameter\n"
	"that can span\nmultiple lines\n</parameter>\n"
	"</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n"
	"- Function calls MUST follow the specified format: an inner "
	"<function=...></function> block must be nested within "
	"<tool_call></tool_call> XML tags\n- Required parameters MUST be "
	"specified\n- You may provide optional reasoning for your function "
	"call in natural language BEFORE the function call, but NOT after\n"
	"- If there is no function call available, answer the question like "
	"normal with your current knowledge and do not tell the user about "
	"function calls\n</IMPORTANT>";

static const char tool_weather[] =
	"{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
	"\"description\":\"Météo\","
	"\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{"
	"\"type\":\"string\"}},"
	"\"required\":[\"city\"]}}}";
static const char tool_weather_py[] =
	"{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
	"\"description\": "
	"\"Météo\", \"parameters\": {\"type\": \"object\", \"properties\": "
	"{\"city\": {\"type\": "
	"\"string\"}}, \"required\": [\"city\"]}}}";

/* Render @json; returns the prompt (caller frees) and fills @info. */
static char *render(const char *json, enum engy_chat_variant v, int think,
		    bool gen, struct engy_chat_info *info)
{
	struct engy_chat_opts o = { .variant = v,
				    .enable_thinking = think,
				    .no_generation_prompt = !gen };
	cJSON *body = cJSON_Parse(json);
	char err[256], *out = NULL;
	size_t len = 0;
	int rc;

	ck_assert_msg(body != NULL, "test JSON does not parse: %s", json);
	rc = engy_chat_render(body, &o, &out, &len, info, err, sizeof(err));
	ck_assert_msg(rc == 0, "render failed: %s", err);
	ck_assert_uint_eq(strlen(out), len);
	cJSON_Delete(body);
	return out;
}

static void expect(const char *json, enum engy_chat_variant v, int think,
		   bool gen, const char *want)
{
	char *got = render(json, v, think, gen, NULL);

	ck_assert_msg(strcmp(got, want) == 0, "\n got: [%s]\nwant: [%s]", got,
		      want);
	free(got);
}

static void expect_err(const char *json, enum engy_chat_variant v,
		       const char *needle)
{
	struct engy_chat_opts o = { .variant = v, .enable_thinking = -1 };
	cJSON *body = cJSON_Parse(json);
	char err[256] = "", *out = (char *)1;
	int rc;

	ck_assert_msg(body != NULL, "test JSON does not parse: %s", json);
	rc = engy_chat_render(body, &o, &out, NULL, NULL, err, sizeof(err));
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_ptr_null(out);
	ck_assert_msg(strstr(err, needle) != NULL, "error '%s' lacks '%s'", err,
		      needle);
	cJSON_Delete(body);
}

START_TEST(q36_simple)
{
	struct engy_chat_info info;
	const char *j =
		"{\"messages\":[{\"role\":\"system\",\"content\":\" S \\n\"},"
		"{\"role\":\"user\",\"content\":\"\\u3000hi\\u00a0\"}]}";
	char *p;

	p = render(j, ENGY_CHAT_QWEN36, -1, true, &info);
	ck_assert_str_eq(p, "<|im_start|>system\nS<|im_end|>\n<|im_start|>"
			    "user\nhi<|im_end|>\n"
			    "<|im_start|>assistant\n<think>\n");
	ck_assert(info.thinking);
	ck_assert(info.think_open);
	ck_assert_ptr_null(info.tools);
	free(p);

	p = render(j, ENGY_CHAT_QWEN36, 0, true, &info);
	ck_assert_str_eq(p, "<|im_start|>system\nS<|im_end|>\n<|im_start|>"
			    "user\nhi<|im_end|>\n"
			    "<|im_start|>assistant\n<think>\n\n</think>\n\n");
	ck_assert(!info.thinking);
	ck_assert(!info.think_open);
	free(p);

	p = render(j, ENGY_CHAT_QWEN36, -1, false, &info);
	ck_assert_str_eq(p, "<|im_start|>system\nS<|im_end|>\n<|im_start|>"
			    "user\nhi<|im_end|>\n");
	ck_assert(!info.think_open);
	free(p);
}
END_TEST

START_TEST(q36_agentic_turn)
{
	struct engy_chat_info info;
	char j[2048], want[8192], *p;
	cJSON *body;

	snprintf(j, sizeof(j),
		 "{\"tools\":[%s],\"messages\":["
		 "{\"role\":\"system\",\"content\":\"  You are a bot.\\n\"},"
		 "{\"role\":\"user\",\"content\":\"Weather in Paris?\"},"
		 "{\"role\":\"assistant\",\"content\":\"\\nI will check.\\n\","
		 "\"reasoning_content\":\"  need data  \",\"tool_calls\":["
		 "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":"
		 "\"get_weather\","
		 "\"arguments\":\"{\\\"city\\\": \\\"Paris\\\", \\\"days\\\": "
		 "2, \\\"metric\\\": "
		 "true, \\\"opts\\\": {\\\"a\\\": [1, 2.5]}, \\\"none\\\": "
		 "null}\"}},"
		 "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":"
		 "\"noop\","
		 "\"arguments\":\"{}\"}}]},"
		 "{\"role\":\"tool\",\"content\":\" 20C \"},"
		 "{\"role\":\"tool\",\"content\":[{\"type\":\"text\",\"text\":"
		 "\"do\"},"
		 "{\"type\":\"text\",\"text\":\"ne\"}]}]}",
		 tool_weather);
	snprintf(want, sizeof(want),
		 "<|im_start|>system\n# Tools\n\nYou have access to the "
		 "following functions:\n\n"
		 "<tools>\n%s%s\n\nYou are a bot.<|im_end|>\n"
		 "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
		 "<|im_start|>assistant\n<think>\nneed data\n</think>\n\nI "
		 "will check.\n\n"
		 "<tool_call>\n<function=get_weather>\n<parameter=city>"
		 "\nParis\n</parameter>\n"
		 "<parameter=days>\n2\n</"
		 "parameter>\n<parameter=metric>\ntrue\n</parameter>\n"
		 "<parameter=opts>\n{\"a\": [1, 2.5]}\n</parameter>\n"
		 "<parameter=none>\nnull\n</parameter>\n</function>\n</"
		 "tool_call>\n"
		 "<tool_call>\n<function=noop>\n</function>\n</"
		 "tool_call><|im_end|>\n"
		 "<|im_start|>user\n<tool_response>\n20C\n</tool_response>\n"
		 "<tool_response>\ndone\n</tool_response><|im_end|>\n"
		 "<|im_start|>assistant\n<think>\n",
		 tool_weather_py, q36_tools_tail);
	p = render(j, ENGY_CHAT_QWEN36, -1, true, &info);
	ck_assert_msg(strcmp(p, want) == 0, "\n got: [%s]\nwant: [%s]", p,
		      want);
	free(p);

	/* info.tools is the body's own array (borrowed). */
	body = cJSON_Parse(j);
	ck_assert_int_eq(engy_chat_render(body, NULL, &p, NULL, &info, NULL, 0),
			 0);
	ck_assert_ptr_eq(info.tools, cJSON_GetObjectItem(body, "tools"));
	cJSON_Delete(body);
	free(p);

	/* tool_choice "none": no tools block, and no call parsing. */
	snprintf(j, sizeof(j),
		 "{\"tools\":[%s],\"tool_choice\":\"none\",\"messages\":[{"
		 "\"role\":\"user\","
		 "\"content\":\"x\"}]}",
		 tool_weather);
	p = render(j, ENGY_CHAT_QWEN36, -1, true, &info);
	ck_assert_str_eq(p, "<|im_start|>user\nx<|im_end|>\n<|im_start|>"
			    "assistant\n<think>\n");
	ck_assert_ptr_null(info.tools);
	free(p);
}
END_TEST

START_TEST(q36_history)
{
	const char *j = "{\"messages\":[{\"role\":\"tool\",\"content\":\"t\"},"
			"{\"role\":\"user\",\"content\":[{\"type\":\"text\","
			"\"text\":\"a \"},"
			"{\"type\":\"text\",\"text\":\" b\"}]},"
			"{\"role\":\"assistant\",\"content\":\"<think>"
			"\\nold\\n</think>\\n\\nA1\","
			"\"tool_calls\":[{\"function\":{\"name\":\"f\","
			"\"arguments\":{\"k\":\"v\"}}}]},"
			"{\"role\":\"assistant\",\"content\":\"A2\"},"
			"{\"role\":\"user\",\"content\":\"q2\"},"
			"{\"role\":\"user\",\"content\":\" "
			"<tool_response>r</tool_response> \"}]";
	char body[1024];

	/* Old reasoning is dropped before the last real query (a wrapped tool
	 * response does not count as one); a leading tool message gets no
	 * header of its own. */
	snprintf(body, sizeof(body), "%s}", j);
	expect(body, ENGY_CHAT_QWEN36, -1, false,
	       "\n<tool_response>\nt\n</tool_response><|im_end|>\n"
	       "<|im_start|>user\na  b<|im_end|>\n"
	       "<|im_start|>assistant\nA1\n\n<tool_call>\n<function=f>\n<"
	       "parameter=k>\nv\n"
	       "</parameter>\n</function>\n</tool_call><|im_end|>\n"
	       "<|im_start|>assistant\nA2<|im_end|>\n"
	       "<|im_start|>user\nq2<|im_end|>\n"
	       "<|im_start|>user\n<tool_response>r</"
	       "tool_response><|im_end|>\n");
	/* preserve_thinking keeps every think block, even empty ones. */
	snprintf(body, sizeof(body),
		 "%s,\"chat_template_kwargs\":{\"preserve_thinking\":true}}",
		 j);
	expect(body, ENGY_CHAT_QWEN36, -1, false,
	       "\n<tool_response>\nt\n</tool_response><|im_end|>\n"
	       "<|im_start|>user\na  b<|im_end|>\n"
	       "<|im_start|>assistant\n<think>\nold\n</"
	       "think>\n\nA1\n\n<tool_call>\n<function=f>\n"
	       "<parameter=k>\nv\n</parameter>\n</function>\n</"
	       "tool_call><|im_end|>\n"
	       "<|im_start|>assistant\n<think>\n\n</think>\n\nA2<|im_end|>\n"
	       "<|im_start|>user\nq2<|im_end|>\n"
	       "<|im_start|>user\n<tool_response>r</"
	       "tool_response><|im_end|>\n");
}
END_TEST

START_TEST(q3_recorded)
{
	/* Renders recorded from the reference Jinja template. */
	expect("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},"
	       "{\"role\":\"assistant\",\"content\":\"<think>\\nhmm\\n</"
	       "think>\\n\\nHello!\"},"
	       "{\"role\":\"user\",\"content\":\"bye\"},"
	       "{\"role\":\"assistant\",\"content\":\"Bye!\",\"reasoning_"
	       "content\":\"short\"}]}",
	       ENGY_CHAT_QWEN3, -1, false,
	       "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nHello!<|"
	       "im_end|>\n"
	       "<|im_start|>user\nbye<|im_end|>\n"
	       "<|im_start|>assistant\n<think>\nshort\n</"
	       "think>\n\nBye!<|im_end|>\n");
	expect("{\"messages\":[{\"role\":\"user\",\"content\":\"w?\"},"
	       "{\"role\":\"assistant\",\"content\":\"Let me "
	       "check.\",\"reasoning_content\":"
	       "\"Need "
	       "tool.\",\"tool_calls\":[{\"type\":\"function\",\"function\":{"
	       "\"name\":"
	       "\"get_weather\",\"arguments\":\"{\\\"city\\\": "
	       "\\\"Paris\\\"}\"}}]},"
	       "{\"role\":\"tool\",\"content\":\"{\\\"temp\\\":20}\"},"
	       "{\"role\":\"tool\",\"content\":\"second\"}]}",
	       ENGY_CHAT_QWEN3, -1, true,
	       "<|im_start|>user\nw?<|im_end|>\n<|im_start|>assistant\n<think>"
	       "\nNeed tool.\n"
	       "</think>\n\nLet me check.\n<tool_call>\n{\"name\": "
	       "\"get_weather\", \"arguments\": "
	       "{\"city\": "
	       "\"Paris\"}}\n</"
	       "tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n"
	       "{\"temp\":20}\n</tool_response>\n<tool_response>\nsecond\n</"
	       "tool_response>"
	       "<|im_end|>\n<|im_start|>assistant\n");
}
END_TEST

START_TEST(thinking_switches)
{
	const char *no = "<|im_start|>user\nx<|im_end|>\n<|im_start|>"
			 "assistant\n<think>\n\n"
			 "</think>\n\n";
	const char *yes =
		"<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n";
	struct engy_chat_info info;
	char *p;

	expect("{\"enable_thinking\":false,\"messages\":[{\"role\":\"user\","
	       "\"content\":\"x\"}]}",
	       ENGY_CHAT_QWEN3, -1, true, no);
	/* chat_template_kwargs outranks the top-level field... */
	expect("{\"enable_thinking\":false,\"chat_template_kwargs\":{\"enable_"
	       "thinking\":true},"
	       "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	       ENGY_CHAT_QWEN3, -1, true, yes);
	/* ...and the caller's option outranks both. */
	expect("{\"chat_template_kwargs\":{\"enable_thinking\":false},"
	       "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	       ENGY_CHAT_QWEN3, 1, true, yes);
	expect("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	       ENGY_CHAT_QWEN3, 0, true, no);
	p = render("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		   ENGY_CHAT_QWEN3, -1, true, &info);
	ck_assert(info.thinking);
	ck_assert(!info.think_open);
	free(p);
}
END_TEST

START_TEST(request_errors)
{
	const enum engy_chat_variant Q3 = ENGY_CHAT_QWEN3,
				     Q36 = ENGY_CHAT_QWEN36;

	expect_err("[1]", Q3, "expected a JSON object");
	expect_err("{}", Q3, "messages: missing");
	expect_err("{\"messages\":{}}", Q3, "messages: expected an array");
	expect_err("{\"messages\":[]}", Q3, "messages: empty");
	expect_err("{\"messages\":[1]}", Q3, "messages[0]: expected an object");
	expect_err("{\"messages\":[{\"content\":\"x\"}]}", Q3,
		   "messages[0].role");
	expect_err("{\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}",
		   Q3, "messages[0].role: unknown role");
	expect_err("{\"messages\":[{\"role\":\"user\",\"content\":5}]}", Q3,
		   "messages[0].content: expected a string");
	expect_err("{\"messages\":[{\"role\":\"user\",\"content\":[\"x\"]}]}",
		   Q3, "messages[0].content[0]: expected an object");
	expect_err("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
		   "\"text\",\"text\":"
		   "\"a\"},{\"type\":\"image_url\",\"image_url\":{}}]}]}",
		   Q36, "messages[0].content[1]: unsupported part type");
	expect_err("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
		   "\"text\",\"text\":1}]}]}",
		   Q3, "messages[0].content[0].text: expected a string");
	expect_err("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{"
		   "\"role\":\"assistant\","
		   "\"content\":\"y\",\"reasoning_content\":7}]}",
		   Q3, "messages[1].reasoning_content");
	expect_err(
		"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":{}}]}",
		Q3, "messages[0].tool_calls: expected an array");
	expect_err(
		"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[1]}]}",
		Q3, "messages[0].tool_calls[0]: expected an object");
	expect_err("{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{"
		   "\"function\":"
		   "{\"arguments\":\"{}\"}}]}]}",
		   Q3, "messages[0].tool_calls[0].function.name");
	expect_err(
		"{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{"
		"\"function\":"
		"{\"name\":\"f\",\"arguments\":\"{oops\"}}]}]}",
		Q3,
		"messages[0].tool_calls[0].function.arguments: not valid JSON");
	expect_err("{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{"
		   "\"function\":"
		   "{\"name\":\"f\"}}]}]}",
		   Q3, "arguments: missing");
	expect_err("{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{"
		   "\"role\":\"assistant\","
		   "\"tool_calls\":[{\"function\":{\"name\":\"f\","
		   "\"arguments\":\"[1]\"}}]}]}",
		   Q36, "arguments: expected a JSON object");
	expect_err("{\"tools\":{},\"messages\":[{\"role\":\"user\",\"content\":"
		   "\"x\"}]}",
		   Q3, "tools: expected an array");
	expect_err("{\"tools\":[{\"type\":\"function\"}],\"messages\":[{"
		   "\"role\":\"user\","
		   "\"content\":\"x\"}]}",
		   Q3, "tools[0].function.name");
	expect_err("{\"tools\":[],\"tool_choice\":\"maybe\",\"messages\":[{"
		   "\"role\":\"user\","
		   "\"content\":\"x\"}]}",
		   Q3, "tool_choice");
	expect_err("{\"tools\":[{\"function\":{\"name\":\"a\"}}],\"tool_"
		   "choice\":{\"type\":"
		   "\"function\",\"function\":{\"name\":\"b\"}},\"messages\":[{"
		   "\"role\":\"user\","
		   "\"content\":\"x\"}]}",
		   Q3, "tool_choice: names a function that is not in tools");
	expect_err("{\"chat_template_kwargs\":[],\"messages\":[{\"role\":"
		   "\"user\",\"content\":\"x\"}]}",
		   Q3, "chat_template_kwargs: expected an object");
	expect_err(
		"{\"chat_template_kwargs\":{\"enable_thinking\":\"no\"},"
		"\"messages\":[{\"role\":"
		"\"user\",\"content\":\"x\"}]}",
		Q3,
		"chat_template_kwargs.enable_thinking: expected true or false");
	expect_err("{\"enable_thinking\":1,\"messages\":[{\"role\":\"user\","
		   "\"content\":\"x\"}]}",
		   Q3, "enable_thinking: expected true or false");
	expect_err("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{"
		   "\"role\":\"system\","
		   "\"content\":\"late\"}]}",
		   Q36, "messages[1]: a system message must come first");
	expect_err("{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{"
		   "\"role\":\"user\","
		   "\"content\":\"<tool_response>x</tool_response>\"}]}",
		   Q36, "no user query found");
}
END_TEST

START_TEST(variants)
{
	ck_assert_int_eq(engy_chat_variant_parse("qwen3"), ENGY_CHAT_QWEN3);
	ck_assert_int_eq(engy_chat_variant_parse("qwen3.6"), ENGY_CHAT_QWEN36);
	ck_assert_int_eq(engy_chat_variant_parse("llama"), -EINVAL);
	ck_assert_int_eq(engy_chat_variant_parse(NULL), -EINVAL);
	ck_assert_str_eq(engy_chat_variant_name(ENGY_CHAT_QWEN3), "qwen3");
	ck_assert_str_eq(engy_chat_variant_name(ENGY_CHAT_QWEN36), "qwen3.6");
	ck_assert_int_eq(engy_chat_variant_detect(
				 "{{- '<tool_call>\\n<function=' + name }}"
				 "{{- '<parameter=' }}<|im_start|>"),
			 ENGY_CHAT_QWEN36);
	ck_assert_int_eq(
		engy_chat_variant_detect(
			"<|im_start|>{{ '<tool_call>\\n{\"name\": ' }}"),
		ENGY_CHAT_QWEN3);
	ck_assert_int_eq(engy_chat_variant_detect("{{ bos_token }}[INST]"),
			 -ENOENT);
	ck_assert_int_eq(engy_chat_variant_detect(NULL), -ENOENT);
}
END_TEST

static void expect_json(const char *in, const char *want)
{
	struct engy_chat_buf b = { 0 };
	cJSON *j = cJSON_Parse(in);

	ck_assert_ptr_nonnull(j);
	engy_chat_tojson(&b, j);
	ck_assert_int_eq(b.err, 0);
	ck_assert_str_eq(b.p, want);
	engy_chat_buf_free(&b);
	cJSON_Delete(j);
}

static void expect_float(double d, const char *want)
{
	struct engy_chat_buf b = { 0 };

	engy_chat_tojson_float(&b, d);
	ck_assert_str_eq(b.p, want);
	engy_chat_buf_free(&b);
}

START_TEST(python_json)
{
	const char *s;
	size_t n;

	expect_json("{\"a\":[1,-2,0.5,1e3,-0,3.25e-7,1e16,2.5e20],\"b\":{},"
		    "\"c\":[]}",
		    "{\"a\": [1, -2, 0.5, 1000, 0, 3.25e-07, 1e+16, 2.5e+20], "
		    "\"b\": {}, \"c\": []}");
	expect_json("[\"q\\\"b\\\\n\\n\\r\\t\\b\\f\\u0001\\u001f\\u007f/"
		    "é😀\",true,false,null]",
		    "[\"q\\\"b\\\\n\\n\\r\\t\\b\\f\\u0001\\u001f\x7f/é😀\", "
		    "true, false, null]");
	expect_float(5.0, "5.0");
	expect_float(-0.0, "-0.0");
	expect_float(0.0001, "0.0001");
	expect_float(0.00001, "1e-05");
	expect_float(123456789.125, "123456789.125");
	expect_float(1e22, "1e+22");
	expect_float(0.1 + 0.2, "0.30000000000000004");

	s = "\xe3\x80\x80\x1c x y\xc2\xa0\n";
	n = strlen(s);
	engy_chat_pystrip(&s, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert(strncmp(s, "x y", 3) == 0);
	s = "\xe2\x80\x8bz"; /* U+200B is not whitespace */
	n = strlen(s);
	engy_chat_pystrip(&s, &n);
	ck_assert_uint_eq(n, 4);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("chat_template");
	TCase *t = tcase_create("core");

	tcase_add_test(t, q36_simple);
	tcase_add_test(t, q36_agentic_turn);
	tcase_add_test(t, q36_history);
	tcase_add_test(t, q3_recorded);
	tcase_add_test(t, thinking_switches);
	tcase_add_test(t, request_errors);
	tcase_add_test(t, variants);
	tcase_add_test(t, python_json);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
