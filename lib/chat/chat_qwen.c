/* SPDX-License-Identifier: MIT */
/*
 * The Qwen3 and Qwen3.6 chat templates, rule for rule.  Each branch mirrors
 * one rule of the model's Jinja template (Python jinja2 semantics:
 * str.split/strip, `|trim` is str.strip(), `tojson` is
 * json.dumps(ensure_ascii=False)); the peer test renders the real Qwen3
 * template with a Jinja engine and compares bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chat_int.h"
#include "jsonget.h"

static const char qwen3_tools_head[] =
	"# Tools\n\nYou may call one or more functions to assist with the user "
	"query.\n\nYou are provided with function signatures within "
	"<tools></tools> XML tags:\n<tools>";
static const char qwen3_tools_tail[] =
	"\n</tools>\n\nFor each function call, return a json object with "
	"function name and arguments within <tool_call></tool_call> XML tags:\n"
	"<tool_call>\n{\"name\": <function-name>, \"arguments\": "
	"<args-json-object>}\n</tool_call><|im_end|>\n";
static const char qwen36_tools_head[] =
	"# Tools\n\nYou have access to the following functions:\n"
	"\n<tools>";
static const char qwen36_tools_tail[] =
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

static bool is_tool_response(const char *s, size_t n)
{
	static const char open[] = "<tool_response>",
			  close[] = "</tool_response>";

	return engy_chat_has_prefix(s, n, open) && n >= sizeof(close) - 1 &&
	       memcmp(s + n - (sizeof(close) - 1), close, sizeof(close) - 1) ==
		       0;
}

/* Index of the last user message that is a real query, or -1. */
static long last_query(const struct engy_chat_ctx *c)
{
	size_t i;

	for (i = c->n; i-- > 0;)
		if (c->m[i].role == R_USER &&
		    !is_tool_response(c->m[i].content, c->m[i].clen))
			return (long)i;
	return -1;
}

/* Jinja's split('</think>') and split('<think>') on a message's content:
 * reasoning = first piece, right-stripped of '\n', after its last <think>,
 * left-stripped of '\n'; content = the last piece, left-stripped of '\n'. */
static void split_think(const char *s, size_t n, const char **r, size_t *rn,
			const char **cs, size_t *cn)
{
	const char *end = engy_chat_find(s, n, "</think>"), *p, *last;
	size_t head = (size_t)(end - s);

	while (head && s[head - 1] == '\n')
		head--;
	*r = s;
	for (p = s;
	     (last = engy_chat_find(p, head - (size_t)(p - s), "<think>"));
	     p = last + 7)
		*r = last + 7;
	*rn = head - (size_t)(*r - s);
	while (*rn && **r == '\n') {
		(*r)++;
		(*rn)--;
	}
	for (p = end; (last = engy_chat_find(p + 8, n - (size_t)(p + 8 - s),
					     "</think>"));
	     p = last)
		;
	*cs = p + 8;
	*cn = n - (size_t)(*cs - s);
	while (*cn && **cs == '\n') {
		(*cs)++;
		(*cn)--;
	}
}

/* A call's name and arguments: under "function", or on the call itself
 * (the template accepts both). */
static void call_fn(const cJSON *call, const cJSON **name, const cJSON **args)
{
	const cJSON *fn = engy_json_get(call, "function");

	if (!fn)
		fn = call;
	*name = engy_json_get(fn, "name");
	*args = engy_json_get(fn, "arguments");
}

static bool blank(const char *s)
{
	size_t n = strlen(s);

	engy_chat_pystrip(&s, &n);
	return n == 0;
}

/* A string "arguments" must hold JSON (blank means none): *@parsed. */
static int parse_args(struct engy_chat_ctx *c, size_t i, size_t j,
		      const cJSON *args, cJSON **parsed)
{
	*parsed = NULL;
	if (blank(args->valuestring))
		return 0;
	*parsed = cJSON_Parse(args->valuestring);
	if (!*parsed)
		return engy_chat_fail(
			c,
			"messages[%zu].tool_calls[%zu].function.arguments: "
			"not valid JSON",
			i, j);
	return 0;
}

static int qwen3_calls(struct engy_chat_ctx *c, size_t i, size_t clen)
{
	const cJSON *call, *name, *args;
	cJSON *parsed;
	size_t j = 0;
	int err;

	cJSON_ArrayForEach(call, c->m[i].calls)
	{
		call_fn(call, &name, &args);
		if (!args || cJSON_IsNull(args))
			return engy_chat_fail(
				c,
				"messages[%zu].tool_calls[%zu].function."
				"arguments: missing",
				i, j);
		if ((j == 0 && clen) || j > 0)
			engy_chat_outs(c, "\n");
		engy_chat_outs(c, "<tool_call>\n{\"name\": \"");
		engy_chat_outs(c, name->valuestring);
		engy_chat_outs(c, "\", \"arguments\": ");
		if (cJSON_IsString(args)) {
			err = parse_args(c, i, j, args, &parsed);
			cJSON_Delete(parsed);
			if (err)
				return err;
			engy_chat_outs(c, args->valuestring);
		} else {
			engy_chat_tojson(&c->out, args);
		}
		engy_chat_outs(c, "}\n</tool_call>");
		j++;
	}
	return 0;
}

int engy_chat_render_qwen3(struct engy_chat_ctx *c)
{
	long lqi = last_query(c);
	const char *r, *cs, *lc;
	size_t i, rn, cn, ln;
	int err;

	if (lqi < 0)
		lqi = (long)c->n - 1;
	if (c->ntools) {
		engy_chat_outs(c, "<|im_start|>system\n");
		if (c->m[0].role == R_SYSTEM) {
			engy_chat_out(c, c->m[0].content, c->m[0].clen);
			engy_chat_outs(c, "\n\n");
		}
		engy_chat_outs(c, qwen3_tools_head);
		for (i = 0; i < c->ntools; i++) {
			engy_chat_outs(c, "\n");
			engy_chat_tojson(&c->out, c->tools[i]);
		}
		engy_chat_outs(c, qwen3_tools_tail);
	} else if (c->m[0].role == R_SYSTEM) {
		engy_chat_outs(c, "<|im_start|>system\n");
		engy_chat_out(c, c->m[0].content, c->m[0].clen);
		engy_chat_outs(c, "<|im_end|>\n");
	}
	for (i = 0; i < c->n; i++) {
		const struct engy_chat_msg *m = &c->m[i];

		if (m->role == R_USER || (m->role == R_SYSTEM && i > 0)) {
			engy_chat_outs(c, "<|im_start|>");
			engy_chat_outs(c, engy_chat_role_names[m->role]);
			engy_chat_outs(c, "\n");
			engy_chat_out(c, m->content, m->clen);
			engy_chat_outs(c, "<|im_end|>\n");
		} else if (m->role == R_ASSISTANT) {
			cs = m->content;
			cn = m->clen;
			r = "";
			rn = 0;
			if (m->reasoning) {
				r = m->reasoning->valuestring;
				rn = strlen(r);
			} else if (engy_chat_find(cs, cn, "</think>")) {
				split_think(m->content, m->clen, &r, &rn, &cs,
					    &cn);
			}
			if ((long)i > lqi && (i == c->n - 1 || rn)) {
				while (rn && *r == '\n') {
					r++;
					rn--;
				}
				while (rn && r[rn - 1] == '\n')
					rn--;
				engy_chat_outs(
					c, "<|im_start|>assistant\n<think>\n");
				engy_chat_out(c, r, rn);
				engy_chat_outs(c, "\n</think>\n\n");
				lc = cs;
				ln = cn;
				while (ln && *lc == '\n') {
					lc++;
					ln--;
				}
				engy_chat_out(c, lc, ln);
			} else {
				engy_chat_outs(c, "<|im_start|>assistant\n");
				engy_chat_out(c, cs, cn);
			}
			if (m->calls) {
				err = qwen3_calls(c, i, cn);
				if (err)
					return err;
			}
			engy_chat_outs(c, "<|im_end|>\n");
		} else if (m->role == R_TOOL) {
			if (i == 0 || c->m[i - 1].role != R_TOOL)
				engy_chat_outs(c, "<|im_start|>user");
			engy_chat_outs(c, "\n<tool_response>\n");
			engy_chat_out(c, m->content, m->clen);
			engy_chat_outs(c, "\n</tool_response>");
			if (i == c->n - 1 || c->m[i + 1].role != R_TOOL)
				engy_chat_outs(c, "<|im_end|>\n");
		}
	}
	if (c->out.err)
		return c->out.err;
	return 0;
}

static int qwen36_calls(struct engy_chat_ctx *c, size_t i, const char *content,
			size_t clen)
{
	const cJSON *call, *name, *args, *kv, *obj;
	cJSON *parsed = NULL;
	size_t j = 0;
	int err = 0;

	engy_chat_pystrip(&content, &clen);
	cJSON_ArrayForEach(call, c->m[i].calls)
	{
		call_fn(call, &name, &args);
		obj = NULL;
		if (cJSON_IsString(args)) {
			err = parse_args(c, i, j, args, &parsed);
			if (err)
				return err;
			obj = parsed;
		} else if (args && !cJSON_IsNull(args)) {
			obj = args;
		}
		if (obj && !cJSON_IsObject(obj)) {
			cJSON_Delete(parsed);
			return engy_chat_fail(
				c,
				"messages[%zu].tool_calls[%zu].function."
				"arguments: expected "
				"a JSON object",
				i, j);
		}
		if (j == 0)
			engy_chat_outs(c, clen ? "\n\n<tool_call>\n<function="
					       : "<tool_call>\n<function=");
		else
			engy_chat_outs(c, "\n<tool_call>\n<function=");
		engy_chat_outs(c, name->valuestring);
		engy_chat_outs(c, ">\n");
		cJSON_ArrayForEach(kv, obj)
		{
			engy_chat_outs(c, "<parameter=");
			engy_chat_outs(c, kv->string);
			engy_chat_outs(c, ">\n");
			if (cJSON_IsString(kv))
				engy_chat_outs(c, kv->valuestring);
			else
				engy_chat_tojson(&c->out, kv);
			engy_chat_outs(c, "\n</parameter>\n");
		}
		engy_chat_outs(c, "</function>\n</tool_call>");
		cJSON_Delete(parsed);
		parsed = NULL;
		j++;
	}
	return 0;
}

int engy_chat_render_qwen36(struct engy_chat_ctx *c)
{
	long lqi = last_query(c);
	const char *r, *cs;
	size_t i, rn, cn;
	int err;

	if (lqi < 0)
		return engy_chat_fail(c, "messages: no user query found");
	if (c->ntools) {
		engy_chat_outs(c, "<|im_start|>system\n");
		engy_chat_outs(c, qwen36_tools_head);
		for (i = 0; i < c->ntools; i++) {
			engy_chat_outs(c, "\n");
			engy_chat_tojson(&c->out, c->tools[i]);
		}
		engy_chat_outs(c, qwen36_tools_tail);
		if (c->m[0].role == R_SYSTEM && c->m[0].clen) {
			engy_chat_outs(c, "\n\n");
			engy_chat_out(c, c->m[0].content, c->m[0].clen);
		}
		engy_chat_outs(c, "<|im_end|>\n");
	} else if (c->m[0].role == R_SYSTEM) {
		engy_chat_outs(c, "<|im_start|>system\n");
		engy_chat_out(c, c->m[0].content, c->m[0].clen);
		engy_chat_outs(c, "<|im_end|>\n");
	}
	for (i = 0; i < c->n; i++) {
		const struct engy_chat_msg *m = &c->m[i];

		if (m->role == R_SYSTEM) {
			if (i > 0)
				return engy_chat_fail(
					c,
					"messages[%zu]: a system message "
					"must come first",
					i);
		} else if (m->role == R_USER) {
			engy_chat_outs(c, "<|im_start|>user\n");
			engy_chat_out(c, m->content, m->clen);
			engy_chat_outs(c, "<|im_end|>\n");
		} else if (m->role == R_ASSISTANT) {
			cs = m->content;
			cn = m->clen;
			r = "";
			rn = 0;
			if (m->reasoning) {
				r = m->reasoning->valuestring;
				rn = strlen(r);
			} else if (engy_chat_find(cs, cn, "</think>")) {
				split_think(m->content, m->clen, &r, &rn, &cs,
					    &cn);
			}
			engy_chat_pystrip(&r, &rn);
			if (c->preserve_thinking || (long)i > lqi) {
				engy_chat_outs(
					c, "<|im_start|>assistant\n<think>\n");
				engy_chat_out(c, r, rn);
				engy_chat_outs(c, "\n</think>\n\n");
			} else {
				engy_chat_outs(c, "<|im_start|>assistant\n");
			}
			engy_chat_out(c, cs, cn);
			if (m->calls) {
				err = qwen36_calls(c, i, cs, cn);
				if (err)
					return err;
			}
			engy_chat_outs(c, "<|im_end|>\n");
		} else {
			if (i > 0 && c->m[i - 1].role != R_TOOL)
				engy_chat_outs(c, "<|im_start|>user");
			engy_chat_outs(c, "\n<tool_response>\n");
			engy_chat_out(c, m->content, m->clen);
			engy_chat_outs(c, "\n</tool_response>");
			if (i == c->n - 1 || c->m[i + 1].role != R_TOOL)
				engy_chat_outs(c, "<|im_end|>\n");
		}
	}
	if (c->out.err)
		return c->out.err;
	return 0;
}
