/* SPDX-License-Identifier: MIT */
/*
 * Qwen3 ChatML rendering.  Each branch below mirrors one rule of the model's
 * Jinja template (Python jinja2 semantics: str.split/strip, `|trim` is
 * str.strip(), `tojson` is json.dumps(ensure_ascii=False)); the peer test
 * renders the real template with a Jinja engine and compares bytes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"
#include "chat_util.h"

enum role { R_SYSTEM, R_USER, R_ASSISTANT, R_TOOL };

static const char *const role_names[] = { "system", "user", "assistant", "tool" };

struct msg {
	enum role role;
	char *content;		/* flattened text parts; trimmed for QWEN36 */
	size_t clen;
	const cJSON *reasoning; /* string, or NULL when absent/null */
	const cJSON *calls;	/* non-empty array, or NULL */
};

struct ctx {
	enum engy_chat_variant v;
	struct msg *m;
	size_t n;
	const cJSON **tools;
	size_t ntools;
	bool thinking_false; /* enable_thinking defined and false */
	bool preserve_thinking;
	char *err;
	size_t errlen;
	struct engy_chat_buf out;
};

static const char qwen3_tools_head[] =
	"# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
	"You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
static const char qwen3_tools_tail[] =
	"\n</tools>\n\nFor each function call, return a json object with function name and "
	"arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
	"<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";
static const char qwen36_tools_head[] =
	"# Tools\n\nYou have access to the following functions:\n\n<tools>";
static const char qwen36_tools_tail[] =
	"\n</tools>\n\nIf you choose to call a function ONLY reply in the following format "
	"with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n"
	"<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
	"<parameter=example_parameter_2>\nThis is the value for the second parameter\n"
	"that can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n"
	"<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner "
	"<function=...></function> block must be nested within <tool_call></tool_call> XML "
	"tags\n- Required parameters MUST be specified\n- You may provide optional reasoning "
	"for your function call in natural language BEFORE the function call, but NOT after\n"
	"- If there is no function call available, answer the question like normal with your "
	"current knowledge and do not tell the user about function calls\n</IMPORTANT>";

int engy_chat_variant_parse(const char *name)
{
	if (!name)
		return -EINVAL;
	if (strcmp(name, "qwen3.6") == 0 || strcmp(name, "qwen3.5") == 0)
		return ENGY_CHAT_QWEN36;
	if (strcmp(name, "qwen3") == 0)
		return ENGY_CHAT_QWEN3;
	return -EINVAL;
}

const char *engy_chat_variant_name(enum engy_chat_variant v)
{
	return v == ENGY_CHAT_QWEN3 ? "qwen3" : "qwen3.6";
}

int engy_chat_variant_detect(const char *tmpl)
{
	if (!tmpl)
		return -ENOENT;
	if (strstr(tmpl, "<function=") && strstr(tmpl, "<parameter="))
		return ENGY_CHAT_QWEN36;
	if (strstr(tmpl, "<tool_call>") && strstr(tmpl, "<|im_start|>"))
		return ENGY_CHAT_QWEN3;
	return -ENOENT;
}

__attribute__((format(printf, 2, 3))) static int fail(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static void out(struct ctx *c, const char *s, size_t n)
{
	engy_chat_buf_add(&c->out, s, n);
}

static void outs(struct ctx *c, const char *s)
{
	engy_chat_buf_adds(&c->out, s);
}

/* A message's content as the template sees it: text parts joined (" " as the
 * OpenAI servers flatten them for string templates, "" as the Qwen3.6
 * template concatenates them itself), null as "". */
static int flatten(struct ctx *c, size_t i, const cJSON *content, struct msg *m)
{
	struct engy_chat_buf b = { 0 };
	const cJSON *part, *type, *text;
	size_t j = 0;
	const char *s;
	size_t n;
	int err;

	if (!content || cJSON_IsNull(content)) {
		engy_chat_buf_add(&b, "", 0);
	} else if (cJSON_IsString(content)) {
		engy_chat_buf_adds(&b, content->valuestring);
	} else if (cJSON_IsArray(content)) {
		cJSON_ArrayForEach(part, content) {
			if (!cJSON_IsObject(part)) {
				engy_chat_buf_free(&b);
				return fail(c, "messages[%zu].content[%zu]: expected an object", i, j);
			}
			type = cJSON_GetObjectItemCaseSensitive(part, "type");
			text = cJSON_GetObjectItemCaseSensitive(part, "text");
			if ((type && !(cJSON_IsString(type) && strcmp(type->valuestring, "text") == 0)) ||
			    (!type && !text)) {
				engy_chat_buf_free(&b);
				return fail(c, "messages[%zu].content[%zu]: unsupported part type "
					       "(only \"text\" parts are accepted)", i, j);
			}
			if (!cJSON_IsString(text)) {
				engy_chat_buf_free(&b);
				return fail(c, "messages[%zu].content[%zu].text: expected a string", i, j);
			}
			if (j && c->v == ENGY_CHAT_QWEN3)
				engy_chat_buf_add(&b, " ", 1);
			engy_chat_buf_adds(&b, text->valuestring);
			j++;
		}
		engy_chat_buf_add(&b, "", 0);
	} else {
		return fail(c, "messages[%zu].content: expected a string, an array of text parts or null",
			    i);
	}
	err = engy_chat_buf_take(&b, &m->content, &m->clen);
	if (err)
		return err;
	if (c->v == ENGY_CHAT_QWEN36) {
		s = m->content;
		n = m->clen;
		engy_chat_pystrip(&s, &n);
		memmove(m->content, s, n);
		m->content[n] = '\0';
		m->clen = n;
	}
	return 0;
}

/* Checks one tool call's shape; arguments are checked while rendering. */
static int check_call(struct ctx *c, size_t i, size_t j, const cJSON *call)
{
	const cJSON *fn, *name;

	if (!cJSON_IsObject(call))
		return fail(c, "messages[%zu].tool_calls[%zu]: expected an object", i, j);
	fn = cJSON_GetObjectItemCaseSensitive(call, "function");
	if (fn && !cJSON_IsObject(fn))
		return fail(c, "messages[%zu].tool_calls[%zu].function: expected an object", i, j);
	name = cJSON_GetObjectItemCaseSensitive(fn ? fn : call, "name");
	if (!cJSON_IsString(name))
		return fail(c, "messages[%zu].tool_calls[%zu].function.name: expected a string",
			    i, j);
	return 0;
}

static int load_messages(struct ctx *c, const cJSON *msgs)
{
	const cJSON *it, *role, *rc, *calls, *call;
	size_t i = 0, j;
	int r, err;

	if (!msgs)
		return fail(c, "messages: missing");
	if (!cJSON_IsArray(msgs))
		return fail(c, "messages: expected an array");
	c->n = (size_t)cJSON_GetArraySize(msgs);
	if (!c->n)
		return fail(c, "messages: empty");
	c->m = calloc(c->n, sizeof(*c->m));
	if (!c->m)
		return -ENOMEM;
	cJSON_ArrayForEach(it, msgs) {
		struct msg *m = &c->m[i];

		if (!cJSON_IsObject(it))
			return fail(c, "messages[%zu]: expected an object", i);
		role = cJSON_GetObjectItemCaseSensitive(it, "role");
		if (!cJSON_IsString(role))
			return fail(c, "messages[%zu].role: missing or not a string", i);
		for (r = 0; r < 4; r++)
			if (strcmp(role->valuestring, role_names[r]) == 0)
				break;
		if (r == 4)
			return fail(c, "messages[%zu].role: unknown role (expected system, user, "
				       "assistant or tool)", i);
		m->role = (enum role)r;
		err = flatten(c, i, cJSON_GetObjectItemCaseSensitive(it, "content"), m);
		if (err)
			return err;
		rc = cJSON_GetObjectItemCaseSensitive(it, "reasoning_content");
		if (rc && !cJSON_IsNull(rc) && !cJSON_IsString(rc))
			return fail(c, "messages[%zu].reasoning_content: expected a string or null", i);
		if (m->role == R_ASSISTANT && cJSON_IsString(rc))
			m->reasoning = rc;
		calls = cJSON_GetObjectItemCaseSensitive(it, "tool_calls");
		if (calls && !cJSON_IsNull(calls) && !cJSON_IsArray(calls))
			return fail(c, "messages[%zu].tool_calls: expected an array", i);
		if (m->role == R_ASSISTANT && cJSON_GetArraySize(calls) > 0) {
			j = 0;
			cJSON_ArrayForEach(call, calls) {
				err = check_call(c, i, j++, call);
				if (err)
					return err;
			}
			m->calls = calls;
		}
		i++;
	}
	return 0;
}

static int get_bool(struct ctx *c, const cJSON *obj, const char *key, const char *where, int *val)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v))
		return fail(c, "%s%s: expected true or false", where, key);
	*val = cJSON_IsTrue(v);
	return 0;
}

/* enable_thinking, preserve_thinking, tools and tool_choice. */
static int load_options(struct ctx *c, const cJSON *body, const struct engy_chat_opts *o)
{
	const cJSON *kw, *tools, *choice, *t, *fn, *name, *want = NULL;
	int think = -1, top = -1, preserve = -1, err;
	size_t i = 0;

	kw = cJSON_GetObjectItemCaseSensitive(body, "chat_template_kwargs");
	if (kw && !cJSON_IsNull(kw) && !cJSON_IsObject(kw))
		return fail(c, "chat_template_kwargs: expected an object");
	if (cJSON_IsObject(kw)) {
		err = get_bool(c, kw, "enable_thinking", "chat_template_kwargs.", &think);
		if (!err)
			err = get_bool(c, kw, "preserve_thinking", "chat_template_kwargs.", &preserve);
		if (err)
			return err;
	}
	err = get_bool(c, body, "enable_thinking", "", &top);
	if (err)
		return err;
	if (think < 0)
		think = top;
	if (o && o->enable_thinking >= 0)
		think = o->enable_thinking;
	c->thinking_false = think == 0;
	c->preserve_thinking = preserve == 1;

	tools = cJSON_GetObjectItemCaseSensitive(body, "tools");
	if (!tools || cJSON_IsNull(tools))
		return 0;
	if (!cJSON_IsArray(tools))
		return fail(c, "tools: expected an array");
	choice = cJSON_GetObjectItemCaseSensitive(body, "tool_choice");
	if (cJSON_IsString(choice)) {
		if (strcmp(choice->valuestring, "none") == 0)
			return 0;
		if (strcmp(choice->valuestring, "auto") && strcmp(choice->valuestring, "required"))
			return fail(c, "tool_choice: expected \"none\", \"auto\", \"required\" or "
				       "a function");
	} else if (cJSON_IsObject(choice)) {
		fn = cJSON_GetObjectItemCaseSensitive(choice, "function");
		want = cJSON_GetObjectItemCaseSensitive(fn, "name");
		if (!cJSON_IsString(want))
			return fail(c, "tool_choice.function.name: expected a string");
	} else if (choice && !cJSON_IsNull(choice)) {
		return fail(c, "tool_choice: expected a string or an object");
	}
	c->tools = calloc((size_t)cJSON_GetArraySize(tools) + 1, sizeof(*c->tools));
	if (!c->tools)
		return -ENOMEM;
	cJSON_ArrayForEach(t, tools) {
		if (!cJSON_IsObject(t))
			return fail(c, "tools[%zu]: expected an object", i);
		fn = cJSON_GetObjectItemCaseSensitive(t, "function");
		name = cJSON_GetObjectItemCaseSensitive(fn, "name");
		if (!cJSON_IsObject(fn) || !cJSON_IsString(name))
			return fail(c, "tools[%zu].function.name: expected a string", i);
		if (!want || strcmp(name->valuestring, want->valuestring) == 0)
			c->tools[c->ntools++] = t;
		i++;
	}
	if (want && !c->ntools)
		return fail(c, "tool_choice: names a function that is not in tools");
	return 0;
}

static bool is_tool_response(const char *s, size_t n)
{
	static const char open[] = "<tool_response>", close[] = "</tool_response>";

	return engy_chat_has_prefix(s, n, open) && n >= sizeof(close) - 1 &&
	       memcmp(s + n - (sizeof(close) - 1), close, sizeof(close) - 1) == 0;
}

/* Index of the last user message that is a real query, or -1. */
static long last_query(const struct ctx *c)
{
	size_t i;

	for (i = c->n; i-- > 0;)
		if (c->m[i].role == R_USER && !is_tool_response(c->m[i].content, c->m[i].clen))
			return (long)i;
	return -1;
}

/* Jinja's split('</think>') and split('<think>') on a message's content:
 * reasoning = first piece, right-stripped of '\n', after its last <think>,
 * left-stripped of '\n'; content = the last piece, left-stripped of '\n'. */
static void split_think(const char *s, size_t n, const char **r, size_t *rn, const char **cs,
			size_t *cn)
{
	const char *end = engy_chat_find(s, n, "</think>"), *p, *last;
	size_t head = (size_t)(end - s);

	while (head && s[head - 1] == '\n')
		head--;
	*r = s;
	for (p = s; (last = engy_chat_find(p, head - (size_t)(p - s), "<think>")); p = last + 7)
		*r = last + 7;
	*rn = head - (size_t)(*r - s);
	while (*rn && **r == '\n') {
		(*r)++;
		(*rn)--;
	}
	for (p = end; (last = engy_chat_find(p + 8, n - (size_t)(p + 8 - s), "</think>")); p = last)
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
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");

	if (!fn)
		fn = call;
	*name = cJSON_GetObjectItemCaseSensitive(fn, "name");
	*args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
}

static bool blank(const char *s)
{
	size_t n = strlen(s);

	engy_chat_pystrip(&s, &n);
	return n == 0;
}

/* A string "arguments" must hold JSON (blank means none): *@parsed. */
static int parse_args(struct ctx *c, size_t i, size_t j, const cJSON *args, cJSON **parsed)
{
	*parsed = NULL;
	if (blank(args->valuestring))
		return 0;
	*parsed = cJSON_Parse(args->valuestring);
	if (!*parsed)
		return fail(c, "messages[%zu].tool_calls[%zu].function.arguments: not valid JSON",
			    i, j);
	return 0;
}

static int qwen3_calls(struct ctx *c, size_t i, size_t clen)
{
	const cJSON *call, *name, *args;
	cJSON *parsed;
	size_t j = 0;
	int err;

	cJSON_ArrayForEach(call, c->m[i].calls) {
		call_fn(call, &name, &args);
		if (!args || cJSON_IsNull(args))
			return fail(c, "messages[%zu].tool_calls[%zu].function.arguments: missing",
				    i, j);
		if ((j == 0 && clen) || j > 0)
			outs(c, "\n");
		outs(c, "<tool_call>\n{\"name\": \"");
		outs(c, name->valuestring);
		outs(c, "\", \"arguments\": ");
		if (cJSON_IsString(args)) {
			err = parse_args(c, i, j, args, &parsed);
			cJSON_Delete(parsed);
			if (err)
				return err;
			outs(c, args->valuestring);
		} else {
			engy_chat_tojson(&c->out, args);
		}
		outs(c, "}\n</tool_call>");
		j++;
	}
	return 0;
}

static int render_qwen3(struct ctx *c)
{
	long lqi = last_query(c);
	const char *r, *cs, *lc;
	size_t i, rn, cn, ln;
	int err;

	if (lqi < 0)
		lqi = (long)c->n - 1;
	if (c->ntools) {
		outs(c, "<|im_start|>system\n");
		if (c->m[0].role == R_SYSTEM) {
			out(c, c->m[0].content, c->m[0].clen);
			outs(c, "\n\n");
		}
		outs(c, qwen3_tools_head);
		for (i = 0; i < c->ntools; i++) {
			outs(c, "\n");
			engy_chat_tojson(&c->out, c->tools[i]);
		}
		outs(c, qwen3_tools_tail);
	} else if (c->m[0].role == R_SYSTEM) {
		outs(c, "<|im_start|>system\n");
		out(c, c->m[0].content, c->m[0].clen);
		outs(c, "<|im_end|>\n");
	}
	for (i = 0; i < c->n; i++) {
		const struct msg *m = &c->m[i];

		if (m->role == R_USER || (m->role == R_SYSTEM && i > 0)) {
			outs(c, "<|im_start|>");
			outs(c, role_names[m->role]);
			outs(c, "\n");
			out(c, m->content, m->clen);
			outs(c, "<|im_end|>\n");
		} else if (m->role == R_ASSISTANT) {
			cs = m->content;
			cn = m->clen;
			r = "";
			rn = 0;
			if (m->reasoning) {
				r = m->reasoning->valuestring;
				rn = strlen(r);
			} else if (engy_chat_find(cs, cn, "</think>")) {
				split_think(m->content, m->clen, &r, &rn, &cs, &cn);
			}
			if ((long)i > lqi && (i == c->n - 1 || rn)) {
				while (rn && *r == '\n') {
					r++;
					rn--;
				}
				while (rn && r[rn - 1] == '\n')
					rn--;
				outs(c, "<|im_start|>assistant\n<think>\n");
				out(c, r, rn);
				outs(c, "\n</think>\n\n");
				lc = cs;
				ln = cn;
				while (ln && *lc == '\n') {
					lc++;
					ln--;
				}
				out(c, lc, ln);
			} else {
				outs(c, "<|im_start|>assistant\n");
				out(c, cs, cn);
			}
			if (m->calls) {
				err = qwen3_calls(c, i, cn);
				if (err)
					return err;
			}
			outs(c, "<|im_end|>\n");
		} else if (m->role == R_TOOL) {
			if (i == 0 || c->m[i - 1].role != R_TOOL)
				outs(c, "<|im_start|>user");
			outs(c, "\n<tool_response>\n");
			out(c, m->content, m->clen);
			outs(c, "\n</tool_response>");
			if (i == c->n - 1 || c->m[i + 1].role != R_TOOL)
				outs(c, "<|im_end|>\n");
		}
	}
	if (c->out.err)
		return c->out.err;
	return 0;
}

static int qwen36_calls(struct ctx *c, size_t i, const char *content, size_t clen)
{
	const cJSON *call, *name, *args, *kv, *obj;
	cJSON *parsed = NULL;
	size_t j = 0;
	int err = 0;

	engy_chat_pystrip(&content, &clen);
	cJSON_ArrayForEach(call, c->m[i].calls) {
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
			return fail(c, "messages[%zu].tool_calls[%zu].function.arguments: expected "
				       "a JSON object", i, j);
		}
		if (j == 0)
			outs(c, clen ? "\n\n<tool_call>\n<function=" : "<tool_call>\n<function=");
		else
			outs(c, "\n<tool_call>\n<function=");
		outs(c, name->valuestring);
		outs(c, ">\n");
		cJSON_ArrayForEach(kv, obj) {
			outs(c, "<parameter=");
			outs(c, kv->string);
			outs(c, ">\n");
			if (cJSON_IsString(kv))
				outs(c, kv->valuestring);
			else
				engy_chat_tojson(&c->out, kv);
			outs(c, "\n</parameter>\n");
		}
		outs(c, "</function>\n</tool_call>");
		cJSON_Delete(parsed);
		parsed = NULL;
		j++;
	}
	return 0;
}

static int render_qwen36(struct ctx *c)
{
	long lqi = last_query(c);
	const char *r, *cs;
	size_t i, rn, cn;
	int err;

	if (lqi < 0)
		return fail(c, "messages: no user query found");
	if (c->ntools) {
		outs(c, "<|im_start|>system\n");
		outs(c, qwen36_tools_head);
		for (i = 0; i < c->ntools; i++) {
			outs(c, "\n");
			engy_chat_tojson(&c->out, c->tools[i]);
		}
		outs(c, qwen36_tools_tail);
		if (c->m[0].role == R_SYSTEM && c->m[0].clen) {
			outs(c, "\n\n");
			out(c, c->m[0].content, c->m[0].clen);
		}
		outs(c, "<|im_end|>\n");
	} else if (c->m[0].role == R_SYSTEM) {
		outs(c, "<|im_start|>system\n");
		out(c, c->m[0].content, c->m[0].clen);
		outs(c, "<|im_end|>\n");
	}
	for (i = 0; i < c->n; i++) {
		const struct msg *m = &c->m[i];

		if (m->role == R_SYSTEM) {
			if (i > 0)
				return fail(c, "messages[%zu]: a system message must come first", i);
		} else if (m->role == R_USER) {
			outs(c, "<|im_start|>user\n");
			out(c, m->content, m->clen);
			outs(c, "<|im_end|>\n");
		} else if (m->role == R_ASSISTANT) {
			cs = m->content;
			cn = m->clen;
			r = "";
			rn = 0;
			if (m->reasoning) {
				r = m->reasoning->valuestring;
				rn = strlen(r);
			} else if (engy_chat_find(cs, cn, "</think>")) {
				split_think(m->content, m->clen, &r, &rn, &cs, &cn);
			}
			engy_chat_pystrip(&r, &rn);
			if (c->preserve_thinking || (long)i > lqi) {
				outs(c, "<|im_start|>assistant\n<think>\n");
				out(c, r, rn);
				outs(c, "\n</think>\n\n");
			} else {
				outs(c, "<|im_start|>assistant\n");
			}
			out(c, cs, cn);
			if (m->calls) {
				err = qwen36_calls(c, i, cs, cn);
				if (err)
					return err;
			}
			outs(c, "<|im_end|>\n");
		} else {
			if (i > 0 && c->m[i - 1].role != R_TOOL)
				outs(c, "<|im_start|>user");
			outs(c, "\n<tool_response>\n");
			out(c, m->content, m->clen);
			outs(c, "\n</tool_response>");
			if (i == c->n - 1 || c->m[i + 1].role != R_TOOL)
				outs(c, "<|im_end|>\n");
		}
	}
	if (c->out.err)
		return c->out.err;
	return 0;
}

int engy_chat_render(const cJSON *body, const struct engy_chat_opts *opts, char **prompt,
		     size_t *len, struct engy_chat_info *info, char *err, size_t errlen)
{
	struct ctx c = { .err = err, .errlen = errlen };
	bool gen = !(opts && opts->no_generation_prompt);
	size_t i;
	int rc;

	*prompt = NULL;
	if (len)
		*len = 0;
	if (err && errlen)
		err[0] = '\0';
	c.v = opts ? opts->variant : ENGY_CHAT_QWEN36;
	if (c.v != ENGY_CHAT_QWEN36 && c.v != ENGY_CHAT_QWEN3) {
		rc = fail(&c, "unknown chat template variant");
		goto out;
	}
	if (!cJSON_IsObject(body)) {
		rc = fail(&c, "request body: expected a JSON object");
		goto out;
	}
	rc = load_options(&c, body, opts);
	if (!rc)
		rc = load_messages(&c, cJSON_GetObjectItemCaseSensitive(body, "messages"));
	if (rc)
		goto out;
	rc = c.v == ENGY_CHAT_QWEN3 ? render_qwen3(&c) : render_qwen36(&c);
	if (rc)
		goto out;
	if (gen) {
		outs(&c, "<|im_start|>assistant\n");
		if (c.thinking_false)
			outs(&c, "<think>\n\n</think>\n\n");
		else if (c.v == ENGY_CHAT_QWEN36)
			outs(&c, "<think>\n");
	}
	rc = engy_chat_buf_take(&c.out, prompt, len);
	if (rc)
		goto out;
	if (info) {
		info->thinking = !c.thinking_false;
		info->think_open = gen && !c.thinking_false && c.v == ENGY_CHAT_QWEN36;
		info->tools = c.ntools ? cJSON_GetObjectItemCaseSensitive(body, "tools") : NULL;
	}
out:
	if (rc == -ENOMEM && err && errlen)
		snprintf(err, errlen, "out of memory");
	for (i = 0; c.m && i < c.n; i++)
		free(c.m[i].content);
	free(c.m);
	free(c.tools);
	engy_chat_buf_free(&c.out);
	return rc;
}
