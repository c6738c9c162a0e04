// SPDX-License-Identifier: MIT
/*
 * POST /v1/chat/completions: the buyer's body checked and rewritten as the
 * chat body a miner gets (specs/buyer-api.md §2).  The checks follow the
 * chat template's (lib/chat/chat_template.c) so that what passes here renders
 * there, with the same field-naming messages.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buyerapi_int.h"
#include "jsonget.h"

#define FAIL(...) engy_api_fail(err, errlen, -EINVAL, __VA_ARGS__)

struct oparse {
	char *err;
	size_t errlen;
	cJSON *tools; /* the normalized tools, borrowed from the body */
};

/* content: a string, or an array of text parts (kept as {type, text}). */
static int copy_content(struct oparse *p, size_t i, const cJSON *c,
			bool may_be_null, cJSON *out)
{
	char *err = p->err;
	size_t errlen = p->errlen, j = 0;
	const cJSON *part, *type, *text;
	cJSON *arr;

	if (!c) {
		if (may_be_null)
			return cJSON_AddNullToObject(out, "content") ? 0
								     : -ENOMEM;
		return FAIL("messages[%zu].content: missing", i);
	}
	if (cJSON_IsString(c))
		return cJSON_AddStringToObject(out, "content", c->valuestring)
			       ? 0
			       : -ENOMEM;
	if (!cJSON_IsArray(c))
		return FAIL("messages[%zu].content: expected a string or an "
			    "array of text parts",
			    i);
	arr = cJSON_AddArrayToObject(out, "content");
	if (!arr)
		return -ENOMEM;
	cJSON_ArrayForEach(part, c)
	{
		if (!cJSON_IsObject(part))
			return FAIL("messages[%zu].content[%zu]: expected an "
				    "object",
				    i, j);
		type = engy_json_get(part, "type");
		if (!cJSON_IsString(type))
			return FAIL("messages[%zu].content[%zu].type: missing "
				    "or not a string",
				    i, j);
		if (strcmp(type->valuestring, "text") != 0)
			return FAIL("messages[%zu].content[%zu].type: \"%s\" "
				    "parts are not supported (text only)",
				    i, j, engy_api_ident(type->valuestring));
		text = engy_json_get(part, "text");
		if (!cJSON_IsString(text))
			return FAIL("messages[%zu].content[%zu].text: expected "
				    "a string",
				    i, j);
		if (engy_api_add_text_part(arr, text->valuestring))
			return -ENOMEM;
		j++;
	}
	return 0;
}

static int copy_calls(struct oparse *p, size_t i, const cJSON *calls,
		      cJSON *out)
{
	char *err = p->err;
	size_t errlen = p->errlen, j = 0;
	const cJSON *call, *fn, *name, *args, *id, *type;
	cJSON *arr;

	if (!cJSON_IsArray(calls))
		return FAIL("messages[%zu].tool_calls: expected an array", i);
	if (!cJSON_GetArraySize(calls))
		return 0;
	arr = cJSON_AddArrayToObject(out, "tool_calls");
	if (!arr)
		return -ENOMEM;
	cJSON_ArrayForEach(call, calls)
	{
		if (!cJSON_IsObject(call))
			return FAIL("messages[%zu].tool_calls[%zu]: expected "
				    "an object",
				    i, j);
		type = engy_api_get(call, "type");
		if (type && !(cJSON_IsString(type) &&
			      strcmp(type->valuestring, "function") == 0))
			return FAIL("messages[%zu].tool_calls[%zu].type: "
				    "expected \"function\"",
				    i, j);
		id = engy_api_get(call, "id");
		if (id && !cJSON_IsString(id))
			return FAIL("messages[%zu].tool_calls[%zu].id: "
				    "expected a string",
				    i, j);
		fn = engy_json_get(call, "function");
		if (!cJSON_IsObject(fn))
			return FAIL("messages[%zu].tool_calls[%zu].function: "
				    "expected an object",
				    i, j);
		name = engy_json_get(fn, "name");
		if (!cJSON_IsString(name))
			return FAIL("messages[%zu].tool_calls[%zu].function."
				    "name: expected a string",
				    i, j);
		args = engy_api_get(fn, "arguments");
		if (args && !cJSON_IsString(args) && !cJSON_IsObject(args))
			return FAIL("messages[%zu].tool_calls[%zu].function."
				    "arguments: expected a string",
				    i, j);
		if (cJSON_IsString(args) &&
		    !engy_api_args_ok(args->valuestring))
			return FAIL("messages[%zu].tool_calls[%zu].function."
				    "arguments: not the JSON text of an object",
				    i, j);
		if (engy_api_add_call(arr, id ? id->valuestring : NULL,
				      name->valuestring, args))
			return -ENOMEM;
		j++;
	}
	return 0;
}

static int copy_message(struct oparse *p, size_t i, const cJSON *m, cJSON *out)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *role, *j;
	const char *r;
	int rc;

	if (!cJSON_IsObject(m))
		return FAIL("messages[%zu]: expected an object", i);
	role = engy_json_get(m, "role");
	if (!cJSON_IsString(role))
		return FAIL("messages[%zu].role: missing or not a string", i);
	r = role->valuestring;
	if (strcmp(r, "developer") == 0)
		r = "system";
	if (strcmp(r, "function") == 0)
		return FAIL("messages[%zu].role: \"function\" messages are not "
			    "supported (use tools and \"tool\" messages)",
			    i);
	if (strcmp(r, "system") && strcmp(r, "user") &&
	    strcmp(r, "assistant") && strcmp(r, "tool"))
		return FAIL(
			"messages[%zu].role: unknown role (expected system, "
			"developer, user, assistant or tool)",
			i);
	if (!cJSON_AddStringToObject(out, "role", r))
		return -ENOMEM;
	rc = copy_content(p, i, engy_api_get(m, "content"),
			  strcmp(r, "assistant") == 0, out);
	if (rc)
		return rc;
	if (strcmp(r, "tool") == 0) {
		j = engy_json_get(m, "tool_call_id");
		if (!cJSON_IsString(j))
			return FAIL(
				"messages[%zu].tool_call_id: missing or not "
				"a string",
				i);
		if (!cJSON_AddStringToObject(out, "tool_call_id",
					     j->valuestring))
			return -ENOMEM;
	}
	if (strcmp(r, "assistant"))
		return 0;
	j = engy_api_get(m, "reasoning_content");
	if (!j)
		j = engy_api_get(m, "reasoning");
	if (j && !cJSON_IsString(j))
		return FAIL(
			"messages[%zu].reasoning_content: expected a string "
			"or null",
			i);
	if (j &&
	    !cJSON_AddStringToObject(out, "reasoning_content", j->valuestring))
		return -ENOMEM;
	j = engy_api_get(m, "tool_calls");
	return j ? copy_calls(p, i, j, out) : 0;
}

static int copy_messages(struct oparse *p, const cJSON *msgs,
			 const struct engy_api_limits *lim, cJSON *body,
			 size_t *n)
{
	char *err = p->err;
	size_t errlen = p->errlen, i = 0;
	const cJSON *m;
	cJSON *arr, *nm;
	int rc;

	if (!msgs)
		return FAIL("messages: missing");
	if (!cJSON_IsArray(msgs))
		return FAIL("messages: expected an array");
	*n = (size_t)cJSON_GetArraySize(msgs);
	if (!*n)
		return FAIL("messages: empty");
	if (lim && lim->max_messages && *n > lim->max_messages)
		return FAIL("messages: %zu messages is above the limit of %zu",
			    *n, lim->max_messages);
	arr = cJSON_AddArrayToObject(body, "messages");
	if (!arr)
		return -ENOMEM;
	cJSON_ArrayForEach(m, msgs)
	{
		nm = cJSON_CreateObject();
		if (!nm || !cJSON_AddItemToArray(arr, nm))
			return -ENOMEM;
		rc = copy_message(p, i++, m, nm);
		if (rc)
			return rc;
	}
	return engy_api_check_turns(arr, err, errlen);
}

static int copy_tools(struct oparse *p, const cJSON *tools,
		      const struct engy_api_limits *lim, cJSON *body, size_t *n)
{
	char *err = p->err;
	size_t errlen = p->errlen, i = 0;
	const cJSON *t, *fn, *name, *type, *desc, *params;
	cJSON *arr, *nt;
	int rc;

	rc = engy_api_tools_begin(tools, lim, body, n, &arr, err, errlen);
	if (rc || !arr)
		return rc;
	p->tools = arr;
	cJSON_ArrayForEach(t, tools)
	{
		if (!cJSON_IsObject(t))
			return FAIL("tools[%zu]: expected an object", i);
		type = engy_api_get(t, "type");
		if (type && !(cJSON_IsString(type) &&
			      strcmp(type->valuestring, "function") == 0))
			return FAIL("tools[%zu].type: only \"function\" tools "
				    "are supported",
				    i);
		fn = engy_json_get(t, "function");
		if (!cJSON_IsObject(fn))
			return FAIL("tools[%zu].function: expected an object",
				    i);
		name = engy_json_get(fn, "name");
		if (!cJSON_IsString(name))
			return FAIL("tools[%zu].function.name: expected a "
				    "string",
				    i);
		if (!engy_api_tool_name_ok(name->valuestring))
			return FAIL(
				"tools[%zu].function.name: expected 1 to 64 "
				"of a-z, A-Z, 0-9, _ . : -",
				i);
		if (engy_api_has_tool(arr, name->valuestring))
			return FAIL("tools[%zu].function.name: the name of an "
				    "earlier tool",
				    i);
		desc = engy_api_get(fn, "description");
		if (desc && !cJSON_IsString(desc))
			return FAIL("tools[%zu].function.description: expected "
				    "a string",
				    i);
		params = engy_api_get(fn, "parameters");
		if (params && !cJSON_IsObject(params))
			return FAIL(
				"tools[%zu].function.parameters: expected a "
				"JSON Schema object",
				i);
		nt = cJSON_CreateObject();
		if (!nt || !cJSON_AddItemToArray(arr, nt) ||
		    engy_api_add_function(nt, name->valuestring, desc,
					  params) ||
		    !cJSON_AddStringToObject(nt, "type", "function"))
			return -ENOMEM;
		i++;
	}
	return 0;
}

static int copy_tool_choice(struct oparse *p, const cJSON *c, cJSON *body)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *fn, *name, *type;

	if (!c)
		return 0;
	if (cJSON_IsString(c)) {
		if (strcmp(c->valuestring, "none") &&
		    strcmp(c->valuestring, "auto") &&
		    strcmp(c->valuestring, "required"))
			return FAIL("tool_choice: expected \"none\", \"auto\", "
				    "\"required\" or a function");
		if (strcmp(c->valuestring, "required") == 0 && !p->tools)
			return FAIL("tool_choice: \"required\" needs tools");
		return cJSON_AddStringToObject(body, "tool_choice",
					       c->valuestring)
			       ? 0
			       : -ENOMEM;
	}
	if (!cJSON_IsObject(c))
		return FAIL("tool_choice: expected a string or an object");
	type = engy_api_get(c, "type");
	if (type && !(cJSON_IsString(type) &&
		      strcmp(type->valuestring, "function") == 0))
		return FAIL("tool_choice.type: expected \"function\"");
	fn = engy_json_get(c, "function");
	name = engy_json_get(fn, "name");
	if (!cJSON_IsString(name))
		return FAIL("tool_choice.function.name: expected a string");
	if (!engy_api_has_tool(p->tools, name->valuestring))
		return FAIL("tool_choice: names a function that is not in "
			    "tools");
	return engy_api_choose_tool(body, name->valuestring);
}

static int get_bool(struct oparse *p, const cJSON *obj, const char *key,
		    const char *where, int *val)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *v = engy_api_get(obj, key);

	if (!v)
		return 0;
	if (!cJSON_IsBool(v))
		return FAIL("%s%s: expected true or false", where, key);
	*val = cJSON_IsTrue(v);
	return 0;
}

/* Sampling fields: checked against OpenAI's ranges, the miner's ones
 * copied (top_k and seed as well: sglang-style extras). */
static int copy_sampling(struct oparse *p, const cJSON *in, cJSON *body,
			 struct engy_api_req *req)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const char *mt = "max_completion_tokens";
	const cJSON *j;
	int rc;

	j = engy_api_get(in, "n");
	if (j && !engy_api_int(j, 1, 1))
		return FAIL("n: only 1 choice is served");
	j = engy_api_get(in, mt);
	if (!j)
		j = engy_api_get(in, mt = "max_tokens");
	req->max_tokens_field = mt;
	rc = engy_api_take_max_tokens(j, mt, req, err, errlen);
	if (rc)
		return rc;
	j = engy_api_get(in, "temperature");
	if (j && (!cJSON_IsNumber(j) ||
		  !(j->valuedouble >= 0 && j->valuedouble <= 2)))
		return FAIL("temperature: expected a number in 0..2");
	if (engy_api_copy_number(j, "temperature", body))
		return -ENOMEM;
	j = engy_api_get(in, "top_p");
	if (j && (!cJSON_IsNumber(j) ||
		  !(j->valuedouble > 0 && j->valuedouble <= 1)))
		return FAIL("top_p: expected a number in (0, 1]");
	if (engy_api_copy_number(j, "top_p", body))
		return -ENOMEM;
	j = engy_api_get(in, "top_k");
	if (j && !engy_api_int(j, -1, 1 << 30))
		return FAIL("top_k: expected an integer >= -1");
	if (engy_api_copy_number(j, "top_k", body))
		return -ENOMEM;
	j = engy_api_get(in, "seed");
	if (j && !engy_api_int(j, -9007199254740991.0, 9007199254740991.0))
		return FAIL("seed: expected an integer");
	if (engy_api_copy_number(j, "seed", body))
		return -ENOMEM;
	j = engy_api_get(in, "presence_penalty");
	if (j &&
	    (!cJSON_IsNumber(j) || j->valuedouble < -2 || j->valuedouble > 2))
		return FAIL("presence_penalty: expected a number in -2..2");
	j = engy_api_get(in, "frequency_penalty");
	if (j &&
	    (!cJSON_IsNumber(j) || j->valuedouble < -2 || j->valuedouble > 2))
		return FAIL("frequency_penalty: expected a number in -2..2");
	return engy_api_copy_stop(engy_api_get(in, "stop"), "stop", body, err,
				  errlen);
}

/* stream, stream_options, and what engy does not serve. */
/* response_format: text, json_object, or json_schema {name, schema,
 * strict}; the last two enforced by constrained decoding. */
static int read_format(struct oparse *p, const cJSON *j,
		       struct engy_api_req *req)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *t, *js, *schema, *name;

	if (!j)
		return 0;
	t = engy_json_get(j, "type");
	if (!cJSON_IsObject(j) || !cJSON_IsString(t))
		return FAIL("response_format.type: expected a string");
	if (strcmp(t->valuestring, "text") == 0)
		return 0;
	if (strcmp(t->valuestring, "json_object") == 0)
		return engy_api_set_format(req, NULL, NULL, "response_format",
					   err, errlen);
	if (strcmp(t->valuestring, "json_schema"))
		return FAIL("response_format.type: expected \"text\", "
			    "\"json_object\" or \"json_schema\"");
	js = engy_json_get(j, "json_schema");
	if (!cJSON_IsObject(js))
		return FAIL("response_format.json_schema: expected an object");
	name = engy_json_get(js, "name");
	if (name &&
	    !(cJSON_IsString(name) && engy_api_tool_name_ok(name->valuestring)))
		return FAIL("response_format.json_schema.name: expected 1..64 "
			    "of [A-Za-z0-9_.:-]");
	schema = engy_api_get(js, "schema");
	if (schema && !cJSON_IsObject(schema) && !cJSON_IsBool(schema))
		return FAIL("response_format.json_schema.schema: expected an "
			    "object");
	return engy_api_set_format(req, schema, name ? name->valuestring : NULL,
				   "response_format.json_schema.schema", err,
				   errlen);
}

static int read_options(struct oparse *p, const cJSON *in,
			struct engy_api_req *req)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *j;
	int v = 0;

	if (get_bool(p, in, "stream", "", &v))
		return -EINVAL;
	req->stream = v;
	j = engy_api_get(in, "stream_options");
	if (j && !cJSON_IsObject(j))
		return FAIL("stream_options: expected an object");
	v = 0;
	if (j && get_bool(p, j, "include_usage", "stream_options.", &v))
		return -EINVAL;
	req->include_usage = req->stream && v;
	v = 0;
	if (get_bool(p, in, "logprobs", "", &v))
		return -EINVAL;
	req->logprobs = v;
	if (v && !cJSON_AddTrueToObject(req->body, "logprobs"))
		return -ENOMEM;
	j = engy_api_get(in, "top_logprobs");
	if (j && !cJSON_IsNull(j) && !engy_api_int(j, 0, 20))
		return FAIL("top_logprobs: expected an integer in 0..20");
	/* OpenAI: top_logprobs needs logprobs: true */
	if (j && cJSON_IsNumber(j) && j->valuedouble > 0) {
		if (!req->logprobs)
			return FAIL("top_logprobs: logprobs must be set to "
				    "true when top_logprobs is used");
		req->top_logprobs = (uint32_t)j->valuedouble;
		req->constraint |= ENGY_API_CONS_TOPLP;
		if (!cJSON_AddNumberToObject(req->body, "top_logprobs",
					     req->top_logprobs))
			return -ENOMEM;
	}
	v = 1;
	if (get_bool(p, in, "parallel_tool_calls", "", &v))
		return -EINVAL;
	return read_format(p, engy_api_get(in, "response_format"), req);
}

/* enable_thinking: chat_template_kwargs, then the top-level field, then
 * reasoning_effort "none". */
static int copy_thinking(struct oparse *p, const cJSON *in, cJSON *body)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *kw, *eff;
	int think = -1, top = -1, preserve = -1;

	kw = engy_api_get(in, "chat_template_kwargs");
	if (kw && !cJSON_IsObject(kw))
		return FAIL("chat_template_kwargs: expected an object");
	if (kw && (get_bool(p, kw, "enable_thinking", "chat_template_kwargs.",
			    &think) ||
		   get_bool(p, kw, "preserve_thinking", "chat_template_kwargs.",
			    &preserve)))
		return -EINVAL;
	if (get_bool(p, in, "enable_thinking", "", &top))
		return -EINVAL;
	if (think < 0)
		think = top;
	eff = engy_api_get(in, "reasoning_effort");
	if (eff && !cJSON_IsString(eff))
		return FAIL("reasoning_effort: expected a string");
	if (think < 0 && eff && strcmp(eff->valuestring, "none") == 0)
		think = 0;
	return engy_api_set_thinking(body, think, preserve);
}

int engy_oai_parse(const char *json, size_t len,
		   const struct engy_api_limits *lim, struct engy_api_req *req,
		   char *err, size_t errlen)
{
	struct oparse p = { .err = err, .errlen = errlen };
	const cJSON *j;
	cJSON *in = NULL;
	int rc;

	rc = engy_api_parse_begin(json, len, lim, ENGY_API_OPENAI, req, &in,
				  err, errlen);
	if (rc)
		return rc;
	rc = copy_messages(&p, engy_api_get(in, "messages"), lim, req->body,
			   &req->n_messages);
	if (!rc)
		rc = copy_sampling(&p, in, req->body, req);
	if (!rc && (j = engy_api_get(in, "tools")))
		rc = copy_tools(&p, j, lim, req->body, &req->n_tools);
	if (!rc)
		rc = copy_tool_choice(&p, engy_api_get(in, "tool_choice"),
				      req->body);
	if (!rc)
		rc = engy_api_check_forced_tool(req, err, errlen);
	if (!rc)
		rc = read_options(&p, in, req);
	if (!rc)
		rc = copy_thinking(&p, in, req->body);
	return engy_api_parse_end(in, req, rc, err, errlen);
}
