/* SPDX-License-Identifier: MIT */
/*
 * Qwen3 ChatML rendering: the request is loaded and checked here (messages,
 * content parts, tools, tool_choice, thinking switches), then rendered by
 * the variant's rules in chat_qwen.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_int.h"
#include "jsonget.h"

const char *const engy_chat_role_names[4] = { "system", "user", "assistant",
					      "tool" };

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

int engy_chat_fail(struct engy_chat_ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A message's content as the template sees it: text parts joined (" " as the
 * OpenAI servers flatten them for string templates, "" as the Qwen3.6
 * template concatenates them itself), null as "". */
static int flatten(struct engy_chat_ctx *c, size_t i, const cJSON *content,
		   struct engy_chat_msg *m)
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
		cJSON_ArrayForEach(part, content)
		{
			if (!cJSON_IsObject(part)) {
				engy_chat_buf_free(&b);
				return engy_chat_fail(
					c,
					"messages[%zu].content[%zu]: "
					"expected an object",
					i, j);
			}
			type = engy_json_get(part, "type");
			text = engy_json_get(part, "text");
			if ((type &&
			     !(cJSON_IsString(type) &&
			       strcmp(type->valuestring, "text") == 0)) ||
			    (!type && !text)) {
				engy_chat_buf_free(&b);
				return engy_chat_fail(
					c,
					"messages[%zu].content[%zu]: "
					"unsupported part type "
					"(only \"text\" parts are accepted)",
					i, j);
			}
			if (!cJSON_IsString(text)) {
				engy_chat_buf_free(&b);
				return engy_chat_fail(
					c,
					"messages[%zu].content[%zu].text: "
					"expected a string",
					i, j);
			}
			if (j && c->v == ENGY_CHAT_QWEN3)
				engy_chat_buf_add(&b, " ", 1);
			engy_chat_buf_adds(&b, text->valuestring);
			j++;
		}
		engy_chat_buf_add(&b, "", 0);
	} else {
		return engy_chat_fail(
			c,
			"messages[%zu].content: expected a string, an "
			"array of text parts or null",
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
static int check_call(struct engy_chat_ctx *c, size_t i, size_t j,
		      const cJSON *call)
{
	const cJSON *fn, *name;

	if (!cJSON_IsObject(call))
		return engy_chat_fail(
			c, "messages[%zu].tool_calls[%zu]: expected an object",
			i, j);
	fn = engy_json_get(call, "function");
	if (fn && !cJSON_IsObject(fn))
		return engy_chat_fail(
			c,
			"messages[%zu].tool_calls[%zu].function: expected "
			"an object",
			i, j);
	name = engy_json_get(fn ? fn : call, "name");
	if (!cJSON_IsString(name))
		return engy_chat_fail(
			c,
			"messages[%zu].tool_calls[%zu].function.name: "
			"expected a string",
			i, j);
	return 0;
}

static int load_messages(struct engy_chat_ctx *c, const cJSON *msgs)
{
	const cJSON *it, *role, *rc, *calls, *call;
	size_t i = 0, j;
	int r, err;

	if (!msgs)
		return engy_chat_fail(c, "messages: missing");
	if (!cJSON_IsArray(msgs))
		return engy_chat_fail(c, "messages: expected an array");
	c->n = (size_t)cJSON_GetArraySize(msgs);
	if (!c->n)
		return engy_chat_fail(c, "messages: empty");
	c->m = calloc(c->n, sizeof(*c->m));
	if (!c->m)
		return -ENOMEM;
	cJSON_ArrayForEach(it, msgs)
	{
		struct engy_chat_msg *m = &c->m[i];

		if (!cJSON_IsObject(it))
			return engy_chat_fail(
				c, "messages[%zu]: expected an object", i);
		role = engy_json_get(it, "role");
		if (!cJSON_IsString(role))
			return engy_chat_fail(
				c,
				"messages[%zu].role: missing or not a string",
				i);
		for (r = 0; r < 4; r++)
			if (strcmp(role->valuestring,
				   engy_chat_role_names[r]) == 0)
				break;
		if (r == 4)
			return engy_chat_fail(
				c,
				"messages[%zu].role: unknown role "
				"(expected system, user, "
				"assistant or tool)",
				i);
		m->role = (enum engy_chat_role)r;
		err = flatten(c, i, engy_json_get(it, "content"), m);
		if (err)
			return err;
		rc = engy_json_get(it, "reasoning_content");
		if (rc && !cJSON_IsNull(rc) && !cJSON_IsString(rc))
			return engy_chat_fail(
				c,
				"messages[%zu].reasoning_content: expected "
				"a string or null",
				i);
		if (m->role == R_ASSISTANT && cJSON_IsString(rc))
			m->reasoning = rc;
		calls = engy_json_get(it, "tool_calls");
		if (calls && !cJSON_IsNull(calls) && !cJSON_IsArray(calls))
			return engy_chat_fail(
				c,
				"messages[%zu].tool_calls: expected an array",
				i);
		if (m->role == R_ASSISTANT && cJSON_GetArraySize(calls) > 0) {
			j = 0;
			cJSON_ArrayForEach(call, calls)
			{
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

static int get_bool(struct engy_chat_ctx *c, const cJSON *obj, const char *key,
		    const char *where, int *val)
{
	const cJSON *v = engy_json_get(obj, key);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v))
		return engy_chat_fail(c, "%s%s: expected true or false", where,
				      key);
	*val = cJSON_IsTrue(v);
	return 0;
}

/* enable_thinking, preserve_thinking, tools and tool_choice. */
static int load_options(struct engy_chat_ctx *c, const cJSON *body,
			const struct engy_chat_opts *o)
{
	const cJSON *kw, *tools, *choice, *t, *fn, *name, *want = NULL;
	int think = -1, top = -1, preserve = -1, err;
	size_t i = 0;

	kw = engy_json_get(body, "chat_template_kwargs");
	if (kw && !cJSON_IsNull(kw) && !cJSON_IsObject(kw))
		return engy_chat_fail(
			c, "chat_template_kwargs: expected an object");
	if (cJSON_IsObject(kw)) {
		err = get_bool(c, kw, "enable_thinking",
			       "chat_template_kwargs.", &think);
		if (!err)
			err = get_bool(c, kw, "preserve_thinking",
				       "chat_template_kwargs.", &preserve);
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

	tools = engy_json_get(body, "tools");
	if (!tools || cJSON_IsNull(tools))
		return 0;
	if (!cJSON_IsArray(tools))
		return engy_chat_fail(c, "tools: expected an array");
	choice = engy_json_get(body, "tool_choice");
	if (cJSON_IsString(choice)) {
		if (strcmp(choice->valuestring, "none") == 0)
			return 0;
		if (strcmp(choice->valuestring, "auto") &&
		    strcmp(choice->valuestring, "required"))
			return engy_chat_fail(c,
					      "tool_choice: expected \"none\", "
					      "\"auto\", \"required\" or "
					      "a function");
	} else if (cJSON_IsObject(choice)) {
		fn = engy_json_get(choice, "function");
		want = engy_json_get(fn, "name");
		if (!cJSON_IsString(want))
			return engy_chat_fail(
				c,
				"tool_choice.function.name: expected a string");
	} else if (choice && !cJSON_IsNull(choice)) {
		return engy_chat_fail(
			c, "tool_choice: expected a string or an object");
	}
	c->tools = calloc((size_t)cJSON_GetArraySize(tools) + 1,
			  sizeof(*c->tools));
	if (!c->tools)
		return -ENOMEM;
	cJSON_ArrayForEach(t, tools)
	{
		if (!cJSON_IsObject(t))
			return engy_chat_fail(
				c, "tools[%zu]: expected an object", i);
		fn = engy_json_get(t, "function");
		name = engy_json_get(fn, "name");
		if (!cJSON_IsObject(fn) || !cJSON_IsString(name))
			return engy_chat_fail(
				c,
				"tools[%zu].function.name: expected a string",
				i);
		if (!want || strcmp(name->valuestring, want->valuestring) == 0)
			c->tools[c->ntools++] = t;
		i++;
	}
	if (want && !c->ntools)
		return engy_chat_fail(
			c,
			"tool_choice: names a function that is not in tools");
	return 0;
}

int engy_chat_render(const cJSON *body, const struct engy_chat_opts *opts,
		     char **prompt, size_t *len, struct engy_chat_info *info,
		     char *err, size_t errlen)
{
	struct engy_chat_ctx c = { .err = err, .errlen = errlen };
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
		rc = engy_chat_fail(&c, "unknown chat template variant");
		goto out;
	}
	if (!cJSON_IsObject(body)) {
		rc = engy_chat_fail(&c, "request body: expected a JSON object");
		goto out;
	}
	rc = load_options(&c, body, opts);
	if (!rc)
		rc = load_messages(&c, engy_json_get(body, "messages"));
	if (rc)
		goto out;
	rc = c.v == ENGY_CHAT_QWEN3 ? engy_chat_render_qwen3(&c)
				    : engy_chat_render_qwen36(&c);
	if (rc)
		goto out;
	if (gen) {
		engy_chat_outs(&c, "<|im_start|>assistant\n");
		if (c.thinking_false)
			engy_chat_outs(&c, "<think>\n\n</think>\n\n");
		else if (c.v == ENGY_CHAT_QWEN36)
			engy_chat_outs(&c, "<think>\n");
	}
	rc = engy_chat_buf_take(&c.out, prompt, len);
	if (rc)
		goto out;
	if (info) {
		info->thinking = !c.thinking_false;
		info->think_open =
			gen && !c.thinking_false && c.v == ENGY_CHAT_QWEN36;
		info->tools = c.ntools ? engy_json_get(body, "tools") : NULL;
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
