/* SPDX-License-Identifier: MIT */
/*
 * Generation parsers: reasoning split, Qwen3-coder XML and hermes JSON tool
 * calls, schema typing, finish_reason, and the streaming parser fed at every
 * byte split (its deltas, concatenated, must equal the batch result).
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genparse.h"

static const char tools_json[] =
	"[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":"
	"{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},"
	"\"days\":{\"type\":\"integer\"},\"temp\":{\"type\":\"number\"},"
	"\"exact\":{\"type\":\"boolean\"},\"opts\":{\"type\":\"object\"},"
	"\"list\":{\"type\":\"array\"},\"maybe\":{\"type\":[\"integer\",\"null\"]},"
	"\"free\":{\"description\":\"no type\"},\"unit\":{\"enum\":[\"c\",\"f\"]},"
	"\"big\":{\"type\":\"int64\"},\"ratio\":{\"type\":\"float\"}}}}},"
	"{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{}}}]";

static cJSON *tools;

static void setup(void)
{
	tools = cJSON_Parse(tools_json);
	ck_assert_ptr_nonnull(tools);
}

static void teardown(void)
{
	cJSON_Delete(tools);
}

static struct engy_genparse_opts opts(bool think_open, bool with_tools)
{
	struct engy_genparse_opts o = { .think_open = think_open,
					.tools = with_tools ? tools : NULL,
					.id_prefix = "id" };
	return o;
}

/* ---- streaming collector ---- */

struct coll {
	char *reasoning, *content;
	size_t rlen, clen;
	bool saw_reasoning;
	struct {
		char id[64], *name, *args;
		size_t alen;
	} call[16];
	size_t ncalls;
};

static void append(char **s, size_t *len, const char *p, size_t n)
{
	*s = realloc(*s, *len + n + 1);
	ck_assert_ptr_nonnull(*s);
	memcpy(*s + *len, p, n);
	*len += n;
	(*s)[*len] = '\0';
}

/* Every delta is whole UTF-8 characters (the inputs here are valid UTF-8). */
static bool utf8_whole(const char *p, size_t n)
{
	size_t i = 0, k, need;
	unsigned char c;

	while (i < n) {
		c = (unsigned char)p[i];
		need = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		if (i + need > n)
			return false;
		for (k = 1; k < need; k++)
			if (((unsigned char)p[i + k] & 0xc0) != 0x80)
				return false;
		i += need;
	}
	return true;
}

static int collect(void *arg, const struct engy_gen_delta *d)
{
	struct coll *c = arg;

	ck_assert_uint_gt(d->len, 0);
	ck_assert(utf8_whole(d->text, d->len));
	switch (d->kind) {
	case ENGY_GEN_REASONING:
		ck_assert_uint_eq(c->ncalls, 0);
		ck_assert_uint_eq(c->clen, 0);
		c->saw_reasoning = true;
		append(&c->reasoning, &c->rlen, d->text, d->len);
		break;
	case ENGY_GEN_CONTENT:
		ck_assert_uint_eq(c->ncalls, 0);
		append(&c->content, &c->clen, d->text, d->len);
		break;
	case ENGY_GEN_TOOL_NAME:
		ck_assert_uint_eq(d->index, c->ncalls);
		ck_assert_uint_lt(c->ncalls, 16);
		ck_assert_ptr_nonnull(d->id);
		snprintf(c->call[c->ncalls].id, sizeof(c->call[0].id), "%s", d->id);
		c->call[c->ncalls].name = strndup(d->text, d->len);
		c->ncalls++;
		break;
	case ENGY_GEN_TOOL_ARGS:
		ck_assert_uint_eq(d->index + 1, c->ncalls);
		append(&c->call[d->index].args, &c->call[d->index].alen, d->text, d->len);
		break;
	}
	return 0;
}

static void coll_free(struct coll *c)
{
	size_t i;

	for (i = 0; i < c->ncalls; i++) {
		free(c->call[i].name);
		free(c->call[i].args);
	}
	free(c->reasoning);
	free(c->content);
	memset(c, 0, sizeof(*c));
}

static void expect_same(const struct coll *c, const struct engy_gen_msg *m, const char *how)
{
	size_t i;

	ck_assert_msg(strcmp(c->content ? c->content : "", m->content) == 0,
		      "%s: content '%s' vs batch '%s'", how, c->content ? c->content : "",
		      m->content);
	ck_assert_msg(strcmp(c->reasoning ? c->reasoning : "", m->reasoning ? m->reasoning : "") ==
			      0,
		      "%s: reasoning '%s' vs batch '%s'", how, c->reasoning ? c->reasoning : "",
		      m->reasoning ? m->reasoning : "");
	if (!m->reasoning)
		ck_assert_msg(!c->saw_reasoning, "%s: reasoning deltas without reasoning", how);
	ck_assert_msg(c->ncalls == m->n_calls, "%s: %zu calls vs batch %zu", how, c->ncalls,
		      m->n_calls);
	for (i = 0; i < m->n_calls; i++) {
		ck_assert_str_eq(c->call[i].id, m->calls[i].id);
		ck_assert_str_eq(c->call[i].name, m->calls[i].name);
		ck_assert_msg(strcmp(c->call[i].args ? c->call[i].args : "",
				     m->calls[i].arguments) == 0,
			      "%s: args '%s' vs batch '%s'", how, c->call[i].args,
			      m->calls[i].arguments);
	}
}

/* Feed @text cut at the offsets in @cuts (ascending), then finish. */
static void stream(const char *text, size_t len, const struct engy_genparse_opts *o,
		   const size_t *cuts, size_t ncuts, struct coll *c)
{
	struct engy_genstream *s;
	size_t prev = 0, i;

	ck_assert_int_eq(engy_genstream_new(o, collect, c, &s), 0);
	for (i = 0; i <= ncuts; i++) {
		size_t at = i < ncuts ? cuts[i] : len;

		ck_assert_int_eq(engy_genstream_feed(s, text + prev, at - prev), 0);
		prev = at;
	}
	ck_assert_int_eq(engy_genstream_finish(s), 0);
	ck_assert_uint_eq(engy_genstream_calls(s), c->ncalls);
	engy_genstream_free(s);
}

/* Batch-parse @text, then check the stream against it: whole, cut once at
 * every offset, cut twice at pairs of offsets, one byte at a time. */
static void parse(const char *text, const struct engy_genparse_opts *o, struct engy_gen_msg *m)
{
	size_t len = strlen(text), k, j, *cuts;
	struct coll c = { 0 };
	char how[64];

	ck_assert_int_eq(engy_genparse(text, len, o, m), 0);
	ck_assert_ptr_nonnull(m->content);
	stream(text, len, o, NULL, 0, &c);
	expect_same(&c, m, "whole");
	coll_free(&c);
	for (k = 0; k <= len; k++) {
		stream(text, len, o, &k, 1, &c);
		snprintf(how, sizeof(how), "cut at %zu", k);
		expect_same(&c, m, how);
		coll_free(&c);
	}
	for (k = 0; k <= len; k += 7) {
		for (j = k; j <= len; j += 5) {
			size_t two[2] = { k, j };

			stream(text, len, o, two, 2, &c);
			snprintf(how, sizeof(how), "cuts at %zu,%zu", k, j);
			expect_same(&c, m, how);
			coll_free(&c);
		}
	}
	cuts = malloc((len + 1) * sizeof(*cuts));
	ck_assert_ptr_nonnull(cuts);
	for (k = 0; k < len; k++)
		cuts[k] = k;
	stream(text, len, o, cuts, len, &c);
	expect_same(&c, m, "byte by byte");
	coll_free(&c);
	free(cuts);
}

/* ---- reasoning ---- */

START_TEST(reasoning_split)
{
	struct engy_genparse_opts o = opts(false, false);
	struct engy_gen_msg m;

	parse("<think>\nThe user greets.\n</think>\n\nHello!", &o, &m);
	ck_assert_str_eq(m.reasoning, "The user greets.");
	ck_assert_str_eq(m.content, "Hello!");
	ck_assert_uint_eq(m.n_calls, 0);
	engy_gen_msg_free(&m);

	parse("  \n<think>a</think>b", &o, &m);
	ck_assert_str_eq(m.reasoning, "a");
	ck_assert_str_eq(m.content, "b");
	engy_gen_msg_free(&m);

	parse("<think></think>", &o, &m);
	ck_assert_ptr_nonnull(m.reasoning);
	ck_assert_str_eq(m.reasoning, "");
	ck_assert_str_eq(m.content, "");
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(reasoning_unterminated)
{
	struct engy_genparse_opts o = opts(false, false);
	struct engy_gen_msg m;

	/* max_tokens hit inside <think>: all reasoning, content empty. */
	parse("<think>\nLet me think about 2+2. It is", &o, &m);
	ck_assert_str_eq(m.reasoning, "Let me think about 2+2. It is");
	ck_assert_str_eq(m.content, "");
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(reasoning_prompt_opened)
{
	struct engy_genparse_opts o = opts(true, false);
	struct engy_gen_msg m;

	parse("plan the answer\n</think>\n\n4", &o, &m);
	ck_assert_str_eq(m.reasoning, "plan the answer");
	ck_assert_str_eq(m.content, "4");
	engy_gen_msg_free(&m);

	parse("cut short, no closing tag", &o, &m);
	ck_assert_str_eq(m.reasoning, "cut short, no closing tag");
	ck_assert_str_eq(m.content, "");
	engy_gen_msg_free(&m);

	/* A repeated opening tag is not reasoning text. */
	parse("\n<think>\nx\n</think>\ny", &o, &m);
	ck_assert_str_eq(m.reasoning, "x");
	ck_assert_str_eq(m.content, "y");
	engy_gen_msg_free(&m);

	parse("", &o, &m);
	ck_assert_str_eq(m.reasoning, "");
	ck_assert_str_eq(m.content, "");
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(reasoning_absent)
{
	struct engy_genparse_opts o = opts(false, false);
	struct engy_gen_msg m;

	parse("\n\nPlain answer, a < b > c.\n", &o, &m);
	ck_assert_ptr_null(m.reasoning);
	ck_assert_str_eq(m.content, "Plain answer, a < b > c.");
	engy_gen_msg_free(&m);

	/* A stray closing tag (no-think mode) stays in the content. */
	parse("answer </think> more", &o, &m);
	ck_assert_ptr_null(m.reasoning);
	ck_assert_str_eq(m.content, "answer </think> more");
	engy_gen_msg_free(&m);

	parse("text then <think>late</think>", &o, &m);
	ck_assert_ptr_null(m.reasoning);
	ck_assert_str_eq(m.content, "text then <think>late</think>");
	engy_gen_msg_free(&m);

	parse("<thi", &o, &m);
	ck_assert_str_eq(m.content, "<thi");
	engy_gen_msg_free(&m);

	parse("", &o, &m);
	ck_assert_ptr_null(m.reasoning);
	ck_assert_str_eq(m.content, "");
	engy_gen_msg_free(&m);

	parse("héllo wörld ☃ 😀 中文", &o, &m);
	ck_assert_str_eq(m.content, "héllo wörld ☃ 😀 中文");
	engy_gen_msg_free(&m);
}
END_TEST

/* ---- XML tool calls ---- */

START_TEST(xml_basic)
{
	struct engy_genparse_opts o = opts(true, true);
	struct engy_gen_msg m;

	parse("The user wants weather.\n</think>\n\nLet me check.\n\n<tool_call>\n"
	      "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
	      "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
	      &o, &m);
	ck_assert_str_eq(m.reasoning, "The user wants weather.");
	ck_assert_str_eq(m.content, "Let me check.");
	ck_assert_uint_eq(m.n_calls, 1);
	ck_assert_str_eq(m.calls[0].id, "id0");
	ck_assert_str_eq(m.calls[0].name, "get_weather");
	ck_assert_str_eq(m.calls[0].arguments, "{\"city\": \"Paris\", \"days\": 3}");
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(xml_typing)
{
	struct engy_genparse_opts o = opts(false, true);
	struct engy_gen_msg m;

	parse("<tool_call>\n<function=get_weather>\n"
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
	ck_assert_str_eq(m.calls[0].arguments,
			 "{\"city\": \"  42 \\\"q\\\" null\", \"days\": 7, \"temp\": 2.5, "
			 "\"exact\": true, \"opts\": {\"a\": [1, 2], \"b\": \"é\"}, "
			 "\"list\": [1, \"x\", null], \"maybe\": null, \"free\": \"12\", "
			 "\"unit\": \"c\", \"big\": -123456789012345678901234, "
			 "\"ratio\": 1e-05, \"other\": \"[1]\"}");
	engy_gen_msg_free(&m);

	/* Values that do not fit their type stay strings. */
	parse("<tool_call>\n<function=get_weather>\n"
	      "<parameter=days>\nthree\n</parameter>\n<parameter=temp>\n0x10\n</parameter>\n"
	      "<parameter=exact>\nyes\n</parameter>\n<parameter=opts>\n[1]\n</parameter>\n"
	      "<parameter=list>\n[1, 2\n</parameter>\n<parameter=maybe>\n-0\n</parameter>\n"
	      "<parameter=ratio>\n3\n</parameter>\n<parameter=big>\n1_000\n</parameter>\n"
	      "</function>\n</tool_call>",
	      &o, &m);
	ck_assert_str_eq(m.calls[0].arguments,
			 "{\"days\": \"three\", \"temp\": \"0x10\", \"exact\": \"yes\", "
			 "\"opts\": \"[1]\", \"list\": \"[1, 2\", \"maybe\": 0, \"ratio\": 3, "
			 "\"big\": \"1_000\"}");
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(xml_values_and_keys)
{
	struct engy_genparse_opts o = opts(false, true);
	struct engy_gen_msg m;

	/* One newline off each side only; first key wins; no </parameter>. */
	parse("<tool_call>\n<function=get_weather>\n<parameter=city>\n\nA\nB\n\n</parameter>\n"
	      "<parameter=city>\nsecond\n</parameter>\n<parameter= days >\n5\n"
	      "<parameter=free>\nline1\r\nline2\n</function>\n</tool_call>",
	      &o, &m);
	ck_assert_str_eq(m.calls[0].arguments,
			 "{\"city\": \"\\nA\\nB\\n\", \"days\": 5, \"free\": \"line1\\r\\nline2\"}");
	engy_gen_msg_free(&m);

	/* A call without parameters, and a name that no tool has. */
	parse("<tool_call>\n<function=f>\n</function>\n</tool_call>\n"
	      "<tool_call>\n<function=unknown>\n<parameter=n>\n1\n</parameter>\n</function>\n"
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
	struct engy_genparse_opts o = opts(false, true);
	struct engy_gen_msg m;

	/* Two functions in one block, then a second block; text around and
	 * between calls is not content. */
	parse("Checking both.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
	      "</parameter>\n</function>\nnoise\n<function=get_weather>\n<parameter=city>\nRome\n"
	      "</parameter>\n</function>\n</tool_call>\nbetween\n<tool_call>\n<function= f >\n"
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
	parse("<tool_call>\n<function=f>\n</function>\n<function=bad\nname>\n"
	      "<function=get_weather>\n</function>\n</tool_call>",
	      &o, &m);
	ck_assert_uint_eq(m.n_calls, 2);
	ck_assert_str_eq(m.calls[1].name, "get_weather");
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(xml_truncated)
{
	struct engy_genparse_opts o = opts(false, true);
	struct engy_gen_msg m;

	/* Cut mid-value: the call is kept with what arrived. */
	parse("<tool_call>\n<function=get_weather>\n<parameter=city>\nPar", &o, &m);
	ck_assert_uint_eq(m.n_calls, 1);
	ck_assert_str_eq(m.calls[0].arguments, "{\"city\": \"Par\"}");
	engy_gen_msg_free(&m);

	/* Cut inside a parameter name: that parameter is dropped. */
	parse("<tool_call>\n<function=get_weather>\n<parameter=days>\n2\n</parameter>\n"
	      "<parameter=ci",
	      &o, &m);
	ck_assert_str_eq(m.calls[0].arguments, "{\"days\": 2}");
	engy_gen_msg_free(&m);

	/* Cut before a value ends in a partial closing tag. */
	parse("<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</param", &o, &m);
	ck_assert_str_eq(m.calls[0].arguments, "{\"city\": \"Oslo\\n</param\"}");
	engy_gen_msg_free(&m);

	/* Cut inside the function name: no call; the text stays content. */
	parse("Sure.\n<tool_call>\n<function=get_wea", &o, &m);
	ck_assert_uint_eq(m.n_calls, 0);
	ck_assert_str_eq(m.content, "Sure.\n<tool_call>\n<function=get_wea");
	engy_gen_msg_free(&m);

	parse("<tool_call>", &o, &m);
	ck_assert_uint_eq(m.n_calls, 0);
	ck_assert_str_eq(m.content, "<tool_call>");
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(not_a_call)
{
	struct engy_genparse_opts o = opts(false, true);
	struct engy_genparse_opts plain = opts(false, false);
	struct engy_gen_msg m;
	const char *t = "Use <tool_call> tags like <tool_call>this</tool_call>.\n<tool_call>\n"
			"<function=f>\n</function>\n</tool_call>";

	parse(t, &o, &m);
	ck_assert_str_eq(m.content, "Use <tool_call> tags like <tool_call>this</tool_call>.");
	ck_assert_uint_eq(m.n_calls, 1);
	engy_gen_msg_free(&m);

	/* Without tools in the request nothing is parsed as a call. */
	parse(t, &plain, &m);
	ck_assert_uint_eq(m.n_calls, 0);
	ck_assert_str_eq(m.content, t);
	engy_gen_msg_free(&m);

	parse("<tool_call>\n<function=bad<name>\n</function>\n</tool_call>", &o, &m);
	ck_assert_uint_eq(m.n_calls, 0);
	engy_gen_msg_free(&m);

	parse("<tool_call>\n<function=  >\n</function>\n</tool_call>", &o, &m);
	ck_assert_uint_eq(m.n_calls, 0);
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(call_inside_reasoning)
{
	struct engy_genparse_opts o = opts(true, true);
	struct engy_gen_msg m;

	/* A call opened before </think> ends the reasoning (nothing after it
	 * is content). */
	parse("I need the weather.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nLima\n"
	      "</parameter>\n</function>\n</tool_call>\n</think>\n\nafter",
	      &o, &m);
	ck_assert_str_eq(m.reasoning, "I need the weather.");
	ck_assert_str_eq(m.content, "");
	ck_assert_uint_eq(m.n_calls, 1);
	ck_assert_str_eq(m.calls[0].arguments, "{\"city\": \"Lima\"}");
	engy_gen_msg_free(&m);

	/* A marker that opens no call stays reasoning text. */
	parse("the format is <tool_call> then JSON\n</think>\nok", &o, &m);
	ck_assert_str_eq(m.reasoning, "the format is <tool_call> then JSON");
	ck_assert_str_eq(m.content, "ok");
	ck_assert_uint_eq(m.n_calls, 0);
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(hermes_json)
{
	struct engy_genparse_opts o = opts(false, true);
	struct engy_gen_msg m;

	parse("<think>\nneed two\n</think>\n\nOn it.\n<tool_call>\n{\"name\": \"get_weather\", "
	      "\"arguments\": {\"city\": \"Paris\", \"n\": [1, 2.5]}}\n</tool_call>\n<tool_call>\n"
	      "{\"name\":\"f\",\"arguments\":\"{\\\"raw\\\":1}\"}\n</tool_call>\n<tool_call>\n"
	      "{\"name\":\"f\"}\n</tool_call>",
	      &o, &m);
	ck_assert_str_eq(m.reasoning, "need two");
	ck_assert_str_eq(m.content, "On it.");
	ck_assert_uint_eq(m.n_calls, 3);
	ck_assert_str_eq(m.calls[0].name, "get_weather");
	ck_assert_str_eq(m.calls[0].arguments, "{\"city\": \"Paris\", \"n\": [1, 2.5]}");
	ck_assert_str_eq(m.calls[1].arguments, "{\"raw\":1}");
	ck_assert_str_eq(m.calls[2].arguments, "{}");
	engy_gen_msg_free(&m);

	/* Invalid JSON, no name: not calls; an XML block after still is. */
	parse("a <tool_call>\n{\"name\": \"f\", \"arguments\": {</tool_call> b <tool_call>{\"x\":1}"
	      "</tool_call> c\n<tool_call>\n<function=f>\n</function>\n</tool_call>",
	      &o, &m);
	ck_assert_str_eq(m.content, "a <tool_call>\n{\"name\": \"f\", \"arguments\": {</tool_call> "
				    "b <tool_call>{\"x\":1}</tool_call> c");
	ck_assert_uint_eq(m.n_calls, 1);
	engy_gen_msg_free(&m);

	/* Unterminated at the end: parsed if the JSON is whole. */
	parse("<tool_call>\n{\"name\": \"f\", \"parameters\": {\"k\": true}}", &o, &m);
	ck_assert_uint_eq(m.n_calls, 1);
	ck_assert_str_eq(m.calls[0].arguments, "{\"k\": true}");
	engy_gen_msg_free(&m);

	/* Blank string arguments are no arguments. */
	parse("<tool_call>{\"name\": \"f\", \"arguments\": \" \"}</tool_call>", &o, &m);
	ck_assert_str_eq(m.calls[0].arguments, "{}");
	engy_gen_msg_free(&m);

	parse("<tool_call>\n{\"name\": \"f\", \"argu", &o, &m);
	ck_assert_uint_eq(m.n_calls, 0);
	ck_assert_str_eq(m.content, "<tool_call>\n{\"name\": \"f\", \"argu");
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(finish_and_json)
{
	struct engy_genparse_opts o = opts(false, true);
	struct engy_gen_msg m;
	cJSON *j, *c;
	char *s;

	ck_assert_str_eq(engy_gen_finish_reason(false, 0), "stop");
	ck_assert_str_eq(engy_gen_finish_reason(false, 2), "tool_calls");
	ck_assert_str_eq(engy_gen_finish_reason(true, 1), "length");
	ck_assert_str_eq(engy_gen_finish_reason(true, 0), "length");

	parse("<think>r</think>Hi\n<tool_call>\n<function=f>\n</function>\n</tool_call>", &o, &m);
	j = engy_gen_msg_json(&m);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(cJSON_GetObjectItem(j, "role")->valuestring, "assistant");
	ck_assert_str_eq(cJSON_GetObjectItem(j, "content")->valuestring, "Hi");
	ck_assert_str_eq(cJSON_GetObjectItem(j, "reasoning_content")->valuestring, "r");
	c = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tool_calls"), 0);
	ck_assert_str_eq(cJSON_GetObjectItem(c, "id")->valuestring, "id0");
	ck_assert_str_eq(cJSON_GetObjectItem(c, "type")->valuestring, "function");
	c = cJSON_GetObjectItem(c, "function");
	ck_assert_str_eq(cJSON_GetObjectItem(c, "name")->valuestring, "f");
	ck_assert_str_eq(cJSON_GetObjectItem(c, "arguments")->valuestring, "{}");
	cJSON_Delete(j);
	engy_gen_msg_free(&m);

	/* A NUL byte in the text survives into the JSON, escaped. */
	ck_assert_int_eq(engy_genparse("a\0b", 3, &o, &m), 0);
	ck_assert_uint_eq(m.content_len, 3);
	j = engy_gen_msg_json(&m);
	ck_assert_ptr_nonnull(j);
	s = cJSON_PrintUnformatted(j);
	ck_assert_str_eq(s, "{\"role\":\"assistant\",\"content\":\"a\\u0000b\"}");
	free(s);
	cJSON_Delete(j);
	engy_gen_msg_free(&m);

	/* No reasoning, no calls: neither key is present. */
	parse("just text", &o, &m);
	j = engy_gen_msg_json(&m);
	ck_assert_ptr_null(cJSON_GetObjectItem(j, "reasoning_content"));
	ck_assert_ptr_null(cJSON_GetObjectItem(j, "tool_calls"));
	cJSON_Delete(j);
	engy_gen_msg_free(&m);
}
END_TEST

START_TEST(random_ids)
{
	struct engy_genparse_opts o = { .tools = tools };
	const char *t = "<tool_call>\n<function=f>\n</function>\n<function=f>\n</function>\n"
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

/* Random texts built from the markers and the characters around them:
 * the stream, fed whole, byte by byte and in random chunks, must agree
 * with the batch parse every time. */
START_TEST(random_soup)
{
	static const char *const pieces[] = {
		"<think>", "</think>", "<tool_call>", "</tool_call>", "<function=f>",
		"<function=get_weather>", "</function>", "<parameter=days>", "<parameter=city>",
		"</parameter>", "<parameter=", "<function=", "<tool_", "</", "<", ">", "\n", " ",
		"x", "42", "true", "null", "é", "😀", "{\"name\": \"f\", \"arguments\": {\"a\": 1}}",
		"{", "}", "\"", "\t", "\n\n", "<tool_call>\n<function=get_weather>\n",
		"<parameter=days>\n3\n</parameter>\n", "<tool_call>{\"name\": \"f\"}</tool_call>",
	};
	const size_t np = sizeof(pieces) / sizeof(pieces[0]);
	uint64_t rng = 0x2545f4914f6cdd1dull;
	size_t iter, len, k, cuts[64], ncuts, calls = 0, reasoned = 0;
	const char *pc;
	char text[1024];

	for (iter = 0; iter < 3000; iter++) {
		struct engy_genparse_opts o = opts(iter & 1, iter & 2);
		struct engy_gen_msg m;
		struct coll c = { 0 };
		size_t n = 1 + iter % 40;

		len = 0;
		text[0] = '\0';
		for (k = 0; k < n; k++) {
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			pc = pieces[rng % np];

			if (len + strlen(pc) >= sizeof(text))
				break;
			memcpy(text + len, pc, strlen(pc) + 1);
			len += strlen(pc);
		}
		ck_assert_int_eq(engy_genparse(text, len, &o, &m), 0);
		stream(text, len, &o, NULL, 0, &c);
		expect_same(&c, &m, text);
		coll_free(&c);
		ncuts = 0;
		for (k = 1; k < len && ncuts < 64; k += 1 + (rng >> (k % 32)) % 9)
			cuts[ncuts++] = k;
		stream(text, len, &o, cuts, ncuts, &c);
		expect_same(&c, &m, text);
		coll_free(&c);
		for (k = 0; k + 1 < len && k < 64; k++)
			cuts[k] = k + 1;
		if (len <= 65) {
			stream(text, len, &o, cuts, len - 1, &c);
			expect_same(&c, &m, text);
			coll_free(&c);
		}
		calls += m.n_calls;
		reasoned += m.reasoning && m.reasoning_len;
		engy_gen_msg_free(&m);
	}
	/* The soup does reach calls and reasoning, not only plain text. */
	ck_assert_uint_gt(calls, 300);
	ck_assert_uint_gt(reasoned, 300);
}
END_TEST

/* ---- streaming specifics ---- */

START_TEST(stream_emits_early)
{
	struct engy_genparse_opts o = opts(false, true);
	struct engy_genstream *s;
	struct coll c = { 0 };
	const char *a = "<think>abc ";

	ck_assert_int_eq(engy_genstream_new(&o, collect, &c, &s), 0);
	ck_assert_int_eq(engy_genstream_feed(s, a, strlen(a)), 0);
	ck_assert_str_eq(c.reasoning, "abc"); /* the space waits for more */
	ck_assert_int_eq(engy_genstream_feed(s, "d\n</thi", 7), 0);
	ck_assert_str_eq(c.reasoning, "abc d");
	ck_assert_int_eq(engy_genstream_feed(s, "nk>Hi <tool_ca", 14), 0);
	ck_assert_str_eq(c.content, "Hi"); /* never a partial marker */
	ck_assert_int_eq(engy_genstream_feed(s, "ll>\n<function=get_weather>\n", 27), 0);
	ck_assert_uint_eq(c.ncalls, 1);
	ck_assert_str_eq(c.call[0].name, "get_weather");
	ck_assert_int_eq(engy_genstream_feed(s, "<parameter=days>\n4\n</parameter>", 31), 0);
	ck_assert_str_eq(c.call[0].args, "{\"days\": 4");
	ck_assert_int_eq(engy_genstream_feed(s, "\n</function>", 12), 0);
	ck_assert_str_eq(c.call[0].args, "{\"days\": 4}");
	ck_assert_int_eq(engy_genstream_finish(s), 0);
	ck_assert_str_eq(c.content, "Hi");
	/* Finished: more input or a second finish is refused. */
	ck_assert_int_eq(engy_genstream_feed(s, "x", 1), -EINVAL);
	ck_assert_int_eq(engy_genstream_finish(s), -EINVAL);
	engy_genstream_free(s);
	coll_free(&c);
}
END_TEST

START_TEST(stream_utf8_held)
{
	struct engy_genparse_opts o = opts(false, false);
	struct engy_genstream *s;
	struct coll c = { 0 };
	const char *t = "a😀";

	ck_assert_int_eq(engy_genstream_new(&o, collect, &c, &s), 0);
	ck_assert_int_eq(engy_genstream_feed(s, t, 3), 0);
	ck_assert_str_eq(c.content, "a");
	ck_assert_int_eq(engy_genstream_feed(s, t + 3, 2), 0);
	ck_assert_str_eq(c.content, "a😀");
	ck_assert_int_eq(engy_genstream_finish(s), 0);
	engy_genstream_free(s);
	coll_free(&c);
}
END_TEST

static int stop_cb(void *arg, const struct engy_gen_delta *d)
{
	(*(int *)arg)++;
	return -ECANCELED;
}

START_TEST(stream_callback_stops)
{
	struct engy_genparse_opts o = opts(false, false);
	struct engy_genstream *s;
	int calls = 0;

	ck_assert_int_eq(engy_genstream_new(&o, NULL, NULL, &s), -EINVAL);
	ck_assert_int_eq(engy_genstream_new(&o, stop_cb, &calls, &s), 0);
	ck_assert_int_eq(engy_genstream_feed(s, "hello world", 11), -ECANCELED);
	ck_assert_int_eq(engy_genstream_feed(s, "more", 4), -ECANCELED);
	ck_assert_int_eq(engy_genstream_finish(s), -ECANCELED);
	ck_assert_int_eq(calls, 1);
	engy_genstream_free(s);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("genparse");
	TCase *t = tcase_create("core");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 120);
	tcase_add_test(t, reasoning_split);
	tcase_add_test(t, reasoning_unterminated);
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
	tcase_add_test(t, random_soup);
	tcase_add_test(t, stream_emits_early);
	tcase_add_test(t, stream_utf8_held);
	tcase_add_test(t, stream_callback_stops);
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
