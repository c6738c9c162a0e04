/* SPDX-License-Identifier: MIT */
/*
 * Generation parser rules: reasoning split, Qwen3-coder XML and hermes JSON
 * tool calls, schema typing, finish_reason, the message JSON.  Every text is
 * also streamed at every byte split (genparse_check.c) and must agree.
 *
 * Oracle: expected parses hand-written from specs/chat.md by the test's
 * author; the byte-split streaming runs are compared with the batch parse
 * (self-consistency).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "genparse.h"
#include "genparse_check.h"

/* ---- reasoning ---- */

START_TEST(reasoning_split)
{
	struct engy_genparse_opts o = gp_opts(false, false);

	gp_check("<think>\nThe user greets.\n</think>\n\nHello!", o,
		 "The user greets.", "Hello!", 0);
	gp_check("  \n<think>a</think>b", o, "a", "b", 0);
	gp_check("<think></think>", o, "", "", 0);
	/* max_tokens hit inside <think>: all reasoning, content empty. */
	gp_check("<think>\nLet me think about 2+2. It is", o,
		 "Let me think about 2+2. It is", "", 0);
}
END_TEST

START_TEST(reasoning_prompt_opened)
{
	struct engy_genparse_opts o = gp_opts(true, false);

	gp_check("plan the answer\n</think>\n\n4", o, "plan the answer", "4",
		 0);
	gp_check("cut short, no closing tag", o, "cut short, no closing tag",
		 "", 0);
	/* A repeated opening tag is not reasoning text. */
	gp_check("\n<think>\nx\n</think>\ny", o, "x", "y", 0);
	gp_check("", o, "", "", 0);
}
END_TEST

START_TEST(reasoning_absent)
{
	struct engy_genparse_opts o = gp_opts(false, false);

	gp_check("\n\nPlain answer, a < b > c.\n", o, NULL,
		 "Plain answer, a < b > c.", 0);
	/* A stray closing tag (no-think mode) stays in the content. */
	gp_check("answer </think> more", o, NULL, "answer </think> more", 0);
	gp_check("text then <think>late</think>", o, NULL,
		 "text then <think>late</think>", 0);
	gp_check("<thi", o, NULL, "<thi", 0);
	gp_check("", o, NULL, "", 0);
	gp_check("héllo wörld ☃ 😀 中文", o, NULL, "héllo wörld ☃ 😀 中文", 0);
}
END_TEST

/* ---- XML tool calls ---- */

START_TEST(xml_basic)
{
	struct engy_genparse_opts o = gp_opts(true, true);
	struct engy_gen_msg m;

	gp_parse("The user wants weather.\n</think>\n\nLet me "
		 "check.\n\n<tool_call>\n"
		 "<function=get_weather>\n<parameter=city>\nParis\n</"
		 "parameter>\n"
		 "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
		 &o, &m);
	ck_assert_str_eq(m.reasoning, "The user wants weather.");
	ck_assert_str_eq(m.content, "Let me check.");
	ck_assert_uint_eq(m.n_calls, 1);
	ck_assert_str_eq(m.calls[0].id, "id0");
	ck_assert_str_eq(m.calls[0].name, "get_weather");
	ck_assert_str_eq(m.calls[0].arguments,
			 "{\"city\": \"Paris\", \"days\": 3}");
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(xml_typing)
{
	struct engy_genparse_opts o = gp_opts(false, true);
	struct engy_gen_msg m;

	gp_parse("<tool_call>\n<function=get_weather>\n"
		 "<parameter=city>\n  42 \"q\" null\n</parameter>\n"
		 "<parameter=days>\n007\n</parameter>\n"
		 "<parameter=temp>\n2.50\n</parameter>\n"
		 "<parameter=exact>\nTrue\n</parameter>\n"
		 "<parameter=opts>\n{\"a\":[1,2],\"b\":\"é\"}\n</parameter>\n"
		 "<parameter=list>\n[1, \"x\", null]\n</parameter>\n"
		 "<parameter=maybe>\nnull\n</parameter>\n"
		 "<parameter=free>\n12\n</parameter>\n"
		 "<parameter=unit>\nc\n</parameter>\n"
		 "<parameter=big>\n-123456789012345678901234\n</parameter>\n"
		 "<parameter=ratio>\n1e-5\n</parameter>\n"
		 "<parameter=other>\n[1]\n</parameter>\n"
		 "</function>\n</tool_call>",
		 &o, &m);
	ck_assert_uint_eq(m.n_calls, 1);
	ck_assert_str_eq(
		m.calls[0].arguments,
		"{\"city\": \"  42 \\\"q\\\" null\", \"days\": 7, \"temp\": "
		"2.5, "
		"\"exact\": true, \"opts\": {\"a\": [1, 2], \"b\": \"é\"}, "
		"\"list\": [1, \"x\", null], \"maybe\": null, \"free\": "
		"\"12\", "
		"\"unit\": \"c\", \"big\": -123456789012345678901234, "
		"\"ratio\": 1e-05, \"other\": \"[1]\"}");
	engy_gen_msg_free(&m);

	/* Values that do not fit their type stay strings. */
	gp_one_call(
		"<tool_call>\n<function=get_weather>\n"
		"<parameter=days>\nthree\n</"
		"parameter>\n<parameter=temp>\n0x10\n</parameter>\n"
		"<parameter=exact>\nyes\n</"
		"parameter>\n<parameter=opts>\n[1]\n</parameter>\n"
		"<parameter=list>\n[1, "
		"2\n</parameter>\n<parameter=maybe>\n-0\n</parameter>\n"
		"<parameter=ratio>\n3\n</parameter>\n<parameter=big>\n1_000\n</"
		"parameter>\n"
		"</function>\n</tool_call>",
		o,
		"{\"days\": \"three\", \"temp\": \"0x10\", \"exact\": \"yes\", "
		"\"opts\": \"[1]\", \"list\": \"[1, 2\", \"maybe\": 0, "
		"\"ratio\": 3, "
		"\"big\": \"1_000\"}");
}
END_TEST

START_TEST(xml_values_and_keys)
{
	struct engy_genparse_opts o = gp_opts(false, true);
	struct engy_gen_msg m;

	/* One newline off each side only; first key wins; no </parameter>. */
	gp_one_call(
		"<tool_call>\n<function=get_weather>\n<parameter=city>"
		"\n\nA\nB\n\n</parameter>\n"
		"<parameter=city>\nsecond\n</parameter>\n<parameter= days "
		">\n5\n"
		"<parameter=free>\nline1\r\nline2\n</function>\n</tool_call>",
		o,
		"{\"city\": \"\\nA\\nB\\n\", \"days\": 5, \"free\": "
		"\"line1\\r\\nline2\"}");

	/* A call without parameters, and a name that no tool has. */
	gp_parse("<tool_call>\n<function=f>\n</function>\n</tool_call>\n"
		 "<tool_call>\n<function=unknown>\n<parameter=n>\n1\n</"
		 "parameter>\n</function>\n"
		 "</tool_call>",
		 &o, &m);
	ck_assert_uint_eq(m.n_calls, 2);
	ck_assert_str_eq(m.calls[0].name, "f");
	ck_assert_str_eq(m.calls[0].arguments, "{}");
	ck_assert_str_eq(m.calls[1].name, "unknown");
	ck_assert_str_eq(m.calls[1].arguments, "{\"n\": \"1\"}");
	ck_assert_str_eq(m.calls[1].id, "id1");
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(xml_several)
{
	struct engy_genparse_opts o = gp_opts(false, true);
	struct engy_gen_msg m;

	/* Two functions in one block, then a second block; text around and
	 * between calls is not content. */
	gp_parse("Checking "
		 "both.\n<tool_call>\n<function=get_weather>\n<parameter=city>"
		 "\nParis\n"
		 "</parameter>\n</"
		 "function>\nnoise\n<function=get_weather>\n<parameter=city>"
		 "\nRome\n"
		 "</parameter>\n</function>\n</"
		 "tool_call>\nbetween\n<tool_call>\n<function= f >\n"
		 "</function>\n</tool_call>\ntrailing text",
		 &o, &m);
	ck_assert_str_eq(m.content, "Checking both.");
	ck_assert_uint_eq(m.n_calls, 3);
	ck_assert_str_eq(m.calls[0].arguments, "{\"city\": \"Paris\"}");
	ck_assert_str_eq(m.calls[1].arguments, "{\"city\": \"Rome\"}");
	ck_assert_str_eq(m.calls[2].name, "f");
	ck_assert_str_eq(m.calls[2].id, "id2");
	engy_gen_msg_free(&m);

	/* A bad second function name is skipped, the block goes on. */
	gp_parse(
		"<tool_call>\n<function=f>\n</function>\n<function=bad\nname>\n"
		"<function=get_weather>\n</function>\n</tool_call>",
		&o, &m);
	ck_assert_uint_eq(m.n_calls, 2);
	ck_assert_str_eq(m.calls[1].name, "get_weather");
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(xml_truncated)
{
	struct engy_genparse_opts o = gp_opts(false, true);

	/* Cut mid-value: the call is kept with what arrived. */
	gp_one_call(
		"<tool_call>\n<function=get_weather>\n<parameter=city>\nPar", o,
		"{\"city\": \"Par\"}");
	/* Cut inside a parameter name: that parameter is dropped. */
	gp_one_call("<tool_call>\n<function=get_weather>\n<parameter=days>"
		    "\n2\n</parameter>\n"
		    "<parameter=ci",
		    o, "{\"days\": 2}");
	/* Cut before a value ends in a partial closing tag. */
	gp_one_call("<tool_call>\n<function=get_weather>\n<parameter=city>"
		    "\nOslo\n</param",
		    o, "{\"city\": \"Oslo\\n</param\"}");
	/* Cut right after the name. */
	gp_one_call("<tool_call>\n<function=f>", o, "{}");
}
END_TEST

START_TEST(not_a_call)
{
	struct engy_genparse_opts o = gp_opts(false, true);
	const char *t = "Use <tool_call> tags like "
			"<tool_call>this</tool_call>.\n<tool_call>\n"
			"<function=f>\n</function>\n</tool_call>";

	gp_check(t, o, NULL,
		 "Use <tool_call> tags like <tool_call>this</tool_call>.", 1);
	/* Without tools in the request nothing is parsed as a call. */
	gp_check(t, gp_opts(false, false), NULL, t, 0);
	gp_check("<tool_call>\n<function=bad<name>\n</function>\n</tool_call>",
		 o, NULL,
		 "<tool_call>\n<function=bad<name>\n</function>\n</tool_call>",
		 0);
	gp_check("<tool_call>\n<function=  >\n</function>\n</tool_call>", o,
		 NULL, "<tool_call>\n<function=  >\n</function>\n</tool_call>",
		 0);
	/* Cut inside the function name: no call; the text stays content. */
	gp_check("Sure.\n<tool_call>\n<function=get_wea", o, NULL,
		 "Sure.\n<tool_call>\n<function=get_wea", 0);
	gp_check("<tool_call>", o, NULL, "<tool_call>", 0);
}
END_TEST

START_TEST(call_inside_reasoning)
{
	struct engy_genparse_opts o = gp_opts(true, true);
	struct engy_gen_msg m;

	/* A call opened before </think> ends the reasoning (nothing after it
	 * is content). */
	gp_parse("I need the "
		 "weather.\n<tool_call>\n<function=get_weather>\n<parameter="
		 "city>\nLima\n"
		 "</parameter>\n</function>\n</tool_call>\n</think>\n\nafter",
		 &o, &m);
	ck_assert_str_eq(m.reasoning, "I need the weather.");
	ck_assert_str_eq(m.content, "");
	ck_assert_uint_eq(m.n_calls, 1);
	ck_assert_str_eq(m.calls[0].arguments, "{\"city\": \"Lima\"}");
	engy_gen_msg_free(&m);

	/* A marker that opens no call stays reasoning text. */
	gp_check("the format is <tool_call> then JSON\n</think>\nok", o,
		 "the format is <tool_call> then JSON", "ok", 0);
}
END_TEST

START_TEST(hermes_json)
{
	struct engy_genparse_opts o = gp_opts(false, true);
	struct engy_gen_msg m;

	gp_parse("<think>\nneed two\n</think>\n\nOn "
		 "it.\n<tool_call>\n{\"name\": \"get_weather\", "
		 "\"arguments\": {\"city\": \"Paris\", \"n\": [1, "
		 "2.5]}}\n</tool_call>\n<tool_call>\n"
		 "{\"name\":\"f\",\"arguments\":\"{\\\"raw\\\":1}\"}\n</"
		 "tool_call>\n<tool_call>\n"
		 "{\"name\":\"f\"}\n</tool_call>",
		 &o, &m);
	ck_assert_str_eq(m.reasoning, "need two");
	ck_assert_str_eq(m.content, "On it.");
	ck_assert_uint_eq(m.n_calls, 3);
	ck_assert_str_eq(m.calls[0].name, "get_weather");
	ck_assert_str_eq(m.calls[0].arguments,
			 "{\"city\": \"Paris\", \"n\": [1, 2.5]}");
	ck_assert_str_eq(m.calls[1].arguments, "{\"raw\":1}");
	ck_assert_str_eq(m.calls[2].arguments, "{}");
	engy_gen_msg_free(&m);

	/* Invalid JSON, no name: not calls; an XML block after still is. */
	gp_parse("a <tool_call>\n{\"name\": \"f\", \"arguments\": "
		 "{</tool_call> b <tool_call>{\"x\":1}"
		 "</tool_call> "
		 "c\n<tool_call>\n<function=f>\n</function>\n</tool_call>",
		 &o, &m);
	ck_assert_str_eq(
		m.content,
		"a <tool_call>\n{\"name\": \"f\", \"arguments\": {</tool_call> "
		"b <tool_call>{\"x\":1}</tool_call> c");
	ck_assert_uint_eq(m.n_calls, 1);
	engy_gen_msg_free(&m);

	/* Unterminated at the end: parsed if the JSON is whole. */
	gp_one_call(
		"<tool_call>\n{\"name\": \"f\", \"parameters\": {\"k\": true}}",
		o, "{\"k\": true}");
	/* Blank string arguments are no arguments. */
	gp_one_call("<tool_call>{\"name\": \"f\", \"arguments\": \" "
		    "\"}</tool_call>",
		    o, "{}");

	gp_check("<tool_call>\n{\"name\": \"f\", \"argu", o, NULL,
		 "<tool_call>\n{\"name\": \"f\", \"argu", 0);

	/* The end marker inside a JSON string is the string's content (a
	 * constrained forced call may fill a string with it), escaped
	 * quotes included; after the object closes it ends the block. */
	gp_one_call("<tool_call>\n{\"name\": \"f\", \"arguments\": "
		    "{\"city\": \"</tool_call>\"}}\n</tool_call>",
		    o, "{\"city\": \"</tool_call>\"}");
	gp_one_call("<tool_call>{\"name\": \"f\", \"arguments\": "
		    "{\"q\": \"a\\\"</tool_call>\\\\\"}}</tool_call>",
		    o, "{\"q\": \"a\\\"</tool_call>\\\\\"}");
	gp_check("<tool_call>{\"name\": \"f\"} \"</tool_call>\n"
		 "<tool_call>{\"name\": \"g\"}</tool_call>",
		 o, NULL, "", 2);
}
END_TEST

START_TEST(finish_and_json)
{
	struct engy_genparse_opts o = gp_opts(false, true);
	struct engy_gen_msg m;
	cJSON *j, *c;
	char *s;

	ck_assert_str_eq(engy_gen_finish_reason(false, 0), "stop");
	ck_assert_str_eq(engy_gen_finish_reason(false, 2), "tool_calls");
	ck_assert_str_eq(engy_gen_finish_reason(true, 1), "length");
	ck_assert_str_eq(engy_gen_finish_reason(true, 0), "length");

	gp_parse("<think>r</think>Hi\n<tool_call>\n<function=f>\n</"
		 "function>\n</tool_call>",
		 &o, &m);
	j = engy_gen_msg_json(&m);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(cJSON_GetObjectItem(j, "role")->valuestring,
			 "assistant");
	ck_assert_str_eq(cJSON_GetObjectItem(j, "content")->valuestring, "Hi");
	ck_assert_str_eq(
		cJSON_GetObjectItem(j, "reasoning_content")->valuestring, "r");
	c = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tool_calls"), 0);
	ck_assert_str_eq(cJSON_GetObjectItem(c, "id")->valuestring, "id0");
	ck_assert_str_eq(cJSON_GetObjectItem(c, "type")->valuestring,
			 "function");
	c = cJSON_GetObjectItem(c, "function");
	ck_assert_str_eq(cJSON_GetObjectItem(c, "name")->valuestring, "f");
	ck_assert_str_eq(cJSON_GetObjectItem(c, "arguments")->valuestring,
			 "{}");
	cJSON_Delete(j);
	engy_gen_msg_free(&m);

	/* A NUL byte in the text survives into the JSON, escaped. */
	ck_assert_int_eq(engy_genparse("a\0b", 3, &o, &m), 0);
	ck_assert_uint_eq(m.content_len, 3);
	j = engy_gen_msg_json(&m);
	ck_assert_ptr_nonnull(j);
	s = cJSON_PrintUnformatted(j);
	ck_assert_str_eq(s,
			 "{\"role\":\"assistant\",\"content\":\"a\\u0000b\"}");
	free(s);
	cJSON_Delete(j);
	engy_gen_msg_free(&m);

	/* No reasoning, no calls: neither key is present. */
	gp_parse("just text", &o, &m);
	j = engy_gen_msg_json(&m);
	ck_assert_ptr_null(cJSON_GetObjectItem(j, "reasoning_content"));
	ck_assert_ptr_null(cJSON_GetObjectItem(j, "tool_calls"));
	cJSON_Delete(j);
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(random_ids)
{
	struct engy_genparse_opts o = { .tools = gp_tools };
	const char *t = "<tool_call>\n<function=f>\n</"
			"function>\n<function=f>\n</function>\n"
			"</tool_call>";
	struct engy_gen_msg m;
	size_t i, k;

	ck_assert_int_eq(engy_genparse(t, strlen(t), &o, &m), 0);
	ck_assert_uint_eq(m.n_calls, 2);
	for (i = 0; i < 2; i++) {
		ck_assert_uint_eq(strlen(m.calls[i].id), 29);
		ck_assert(strncmp(m.calls[i].id, "call_", 5) == 0);
		for (k = 5; k < 29; k++)
			ck_assert(strchr("0123456789abcdef", m.calls[i].id[k]));
	}
	ck_assert_str_ne(m.calls[0].id, m.calls[1].id);
	engy_gen_msg_free(&m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("genparse");
	TCase *t = tcase_create("core");

	tcase_add_checked_fixture(t, gp_setup, gp_teardown);
	tcase_set_timeout(t, 120);
	tcase_add_test(t, reasoning_split);
	tcase_add_test(t, reasoning_prompt_opened);
	tcase_add_test(t, reasoning_absent);
	tcase_add_test(t, xml_basic);
	tcase_add_test(t, xml_typing);
	tcase_add_test(t, xml_values_and_keys);
	tcase_add_test(t, xml_several);
	tcase_add_test(t, xml_truncated);
	tcase_add_test(t, not_a_call);
	tcase_add_test(t, call_inside_reasoning);
	tcase_add_test(t, hermes_json);
	tcase_add_test(t, finish_and_json);
	tcase_add_test(t, random_ids);
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
