// SPDX-License-Identifier: MIT
/*
 * POST /v1/messages: an Anthropic Messages body checked and translated
 * into the OpenAI chat body a miner gets (specs/buyer-api.md §4).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anth.h"
#include "buyerapi_int.h"
#include "jsonget.h"

#define FAIL(...) engy_api_fail(err, errlen, -EINVAL, __VA_ARGS__)

struct aparse {
	char *err;
	size_t errlen;
	cJSON *out; /* the messages array being built */
};

/* Text blocks only (system, tool_result content): appended to @parts. */
static int text_blocks(struct aparse *p, const char *where, const cJSON *blocks,
		       cJSON *parts)
{
	char *err = p->err;
	size_t errlen = p->errlen, j = 0;
	const cJSON *b, *type, *text;

	cJSON_ArrayForEach(b, blocks)
	{
		type = engy_json_get(b, "type");
		text = engy_json_get(b, "text");
		if (!cJSON_IsObject(b) || !cJSON_IsString(type))
			return FAIL("%s[%zu].type: missing or not a string",
				    where, j);
		if (strcmp(type->valuestring, "text"))
			return FAIL("%s[%zu].type: \"%s\" blocks are not "
				    "supported here (text only)",
				    where, j,
				    engy_api_ident(type->valuestring));
		if (!cJSON_IsString(text))
			return FAIL("%s[%zu].text: expected a string", where,
				    j);
		if (engy_api_add_text_part(parts, text->valuestring))
			return -ENOMEM;
		j++;
	}
	return 0;
}

static int add_system(struct aparse *p, const cJSON *sys)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	cJSON *m, *parts;

	if (!sys)
		return 0;
	if (!cJSON_IsString(sys) && !cJSON_IsArray(sys))
		return FAIL("system: expected a string or an array of text "
			    "blocks");
	if (cJSON_IsArray(sys) && !cJSON_GetArraySize(sys))
		return 0;
	m = cJSON_CreateObject();
	if (!m || !cJSON_AddItemToArray(p->out, m) ||
	    !cJSON_AddStringToObject(m, "role", "system"))
		return -ENOMEM;
	if (cJSON_IsString(sys))
		return cJSON_AddStringToObject(m, "content", sys->valuestring)
			       ? 0
			       : -ENOMEM;
	parts = cJSON_AddArrayToObject(m, "content");
	return parts ? text_blocks(p, "system", sys, parts) : -ENOMEM;
}

static int add_tool_result(struct aparse *p, size_t i, size_t j, const cJSON *b)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *id, *c, *ie;
	char where[64];
	cJSON *m, *parts;

	id = engy_json_get(b, "tool_use_id");
	if (!cJSON_IsString(id) || !id->valuestring[0])
		return FAIL("messages[%zu].content[%zu].tool_use_id: missing "
			    "or not a string",
			    i, j);
	ie = engy_api_get(b, "is_error");
	if (ie && !cJSON_IsBool(ie))
		return FAIL("messages[%zu].content[%zu].is_error: expected "
			    "true or false",
			    i, j);
	c = engy_api_get(b, "content");
	if (c && !cJSON_IsString(c) && !cJSON_IsArray(c))
		return FAIL("messages[%zu].content[%zu].content: expected a "
			    "string or an array of text blocks",
			    i, j);
	m = cJSON_CreateObject();
	if (!m || !cJSON_AddItemToArray(p->out, m) ||
	    !cJSON_AddStringToObject(m, "role", "tool") ||
	    !cJSON_AddStringToObject(m, "tool_call_id", id->valuestring))
		return -ENOMEM;
	if (!c || cJSON_IsString(c))
		return cJSON_AddStringToObject(m, "content",
					       c ? c->valuestring : "")
			       ? 0
			       : -ENOMEM;
	parts = cJSON_AddArrayToObject(m, "content");
	if (!parts)
		return -ENOMEM;
	snprintf(where, sizeof(where), "messages[%zu].content[%zu].content", i,
		 j);
	return text_blocks(p, where, c, parts);
}

static int tool_use_call(struct aparse *p, size_t i, size_t j, const cJSON *b,
			 cJSON *calls)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *id, *name, *input;

	id = engy_json_get(b, "id");
	name = engy_json_get(b, "name");
	input = engy_json_get(b, "input");
	if (!cJSON_IsString(id) || !id->valuestring[0])
		return FAIL("messages[%zu].content[%zu].id: missing or not a "
			    "string",
			    i, j);
	if (!cJSON_IsString(name) || !name->valuestring[0])
		return FAIL("messages[%zu].content[%zu].name: missing or not "
			    "a string",
			    i, j);
	if (!cJSON_IsObject(input))
		return FAIL("messages[%zu].content[%zu].input: expected an "
			    "object",
			    i, j);
	return engy_api_add_call(calls, id->valuestring, name->valuestring,
				 input);
}

static int unsupported(struct aparse *p, size_t i, size_t j, const char *t)
{
	char *err = p->err;
	size_t errlen = p->errlen;

	return FAIL("messages[%zu].content[%zu].type: \"%s\" blocks are not "
		    "supported",
		    i, j, engy_api_ident(t));
}

/* An assistant turn: text parts, thinking, tool_use. */
static int add_assistant(struct aparse *p, size_t i, const cJSON *blocks,
			 cJSON *m)
{
	char *err = p->err;
	size_t errlen = p->errlen, j = 0, rlen = 0, n;
	const cJSON *b, *type, *text;
	cJSON *parts, *calls;
	char *reasoning = NULL, *q;
	int rc = -ENOMEM;

	parts = cJSON_AddArrayToObject(m, "content");
	calls = cJSON_CreateArray();
	if (!parts || !calls)
		goto out;
	cJSON_ArrayForEach(b, blocks)
	{
		type = engy_json_get(b, "type");
		rc = -EINVAL;
		if (!cJSON_IsObject(b) || !cJSON_IsString(type)) {
			FAIL("messages[%zu].content[%zu].type: missing or not "
			     "a string",
			     i, j);
			goto out;
		}
		if (strcmp(type->valuestring, "text") == 0) {
			text = engy_json_get(b, "text");
			if (!cJSON_IsString(text)) {
				FAIL("messages[%zu].content[%zu].text: "
				     "expected "
				     "a string",
				     i, j);
				goto out;
			}
			rc = engy_api_add_text_part(parts, text->valuestring);
		} else if (strcmp(type->valuestring, "thinking") == 0) {
			text = engy_json_get(b, "thinking");
			if (!cJSON_IsString(text)) {
				FAIL("messages[%zu].content[%zu].thinking: "
				     "expected a string",
				     i, j);
				goto out;
			}
			n = strlen(text->valuestring);
			rc = -ENOMEM;
			q = realloc(reasoning, rlen + n + 1);
			if (!q)
				goto out;
			reasoning = q;
			memcpy(reasoning + rlen, text->valuestring, n + 1);
			rlen += n;
			rc = 0;
		} else if (strcmp(type->valuestring, "redacted_thinking") ==
			   0) {
			rc = 0;
		} else if (strcmp(type->valuestring, "tool_use") == 0) {
			rc = tool_use_call(p, i, j, b, calls);
		} else {
			rc = unsupported(p, i, j, type->valuestring);
		}
		if (rc)
			goto out;
		j++;
	}
	rc = -ENOMEM;
	if (reasoning &&
	    !cJSON_AddStringToObject(m, "reasoning_content", reasoning))
		goto out;
	if (cJSON_GetArraySize(calls)) {
		cJSON_AddItemToObject(m, "tool_calls", calls);
		calls = NULL;
	}
	rc = 0;
out:
	cJSON_Delete(calls);
	free(reasoning);
	return rc;
}

/* A user turn: tool results become "tool" messages ahead of its text. */
static int add_user(struct aparse *p, size_t i, const cJSON *blocks)
{
	char *err = p->err;
	size_t errlen = p->errlen, j = 0;
	const cJSON *b, *type, *text;
	cJSON *parts = cJSON_CreateArray(), *m;
	int rc = 0;

	if (!parts)
		return -ENOMEM;
	cJSON_ArrayForEach(b, blocks)
	{
		type = engy_json_get(b, "type");
		if (!cJSON_IsObject(b) || !cJSON_IsString(type)) {
			rc = FAIL("messages[%zu].content[%zu].type: missing or "
				  "not a string",
				  i, j);
		} else if (strcmp(type->valuestring, "text") == 0) {
			text = engy_json_get(b, "text");
			if (!cJSON_IsString(text))
				rc = FAIL("messages[%zu].content[%zu].text: "
					  "expected a string",
					  i, j);
			else
				rc = engy_api_add_text_part(parts,
							    text->valuestring);
		} else if (strcmp(type->valuestring, "tool_result") == 0) {
			rc = add_tool_result(p, i, j, b);
		} else {
			rc = unsupported(p, i, j, type->valuestring);
		}
		if (rc)
			break;
		j++;
	}
	if (rc || !cJSON_GetArraySize(parts)) {
		cJSON_Delete(parts);
		return rc;
	}
	m = cJSON_CreateObject();
	if (!m || !cJSON_AddItemToArray(p->out, m)) {
		cJSON_Delete(m);
		cJSON_Delete(parts);
		return -ENOMEM;
	}
	if (!cJSON_AddStringToObject(m, "role", "user") ||
	    !cJSON_AddItemToObject(m, "content", parts)) {
		cJSON_Delete(parts);
		return -ENOMEM;
	}
	return 0;
}

static int add_message(struct aparse *p, size_t i, const cJSON *m)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *role, *c;
	bool user;
	cJSON *nm;

	if (!cJSON_IsObject(m))
		return FAIL("messages[%zu]: expected an object", i);
	role = engy_json_get(m, "role");
	if (!cJSON_IsString(role) || (strcmp(role->valuestring, "user") &&
				      strcmp(role->valuestring, "assistant")))
		return FAIL("messages[%zu].role: expected \"user\" or "
			    "\"assistant\"",
			    i);
	user = strcmp(role->valuestring, "user") == 0;
	c = engy_json_get(m, "content");
	if (!cJSON_IsString(c) && !cJSON_IsArray(c))
		return FAIL("messages[%zu].content: expected a string or an "
			    "array of content blocks",
			    i);
	if (cJSON_IsArray(c) && !cJSON_GetArraySize(c))
		return FAIL("messages[%zu].content: empty", i);
	if (cJSON_IsArray(c) && user)
		return add_user(p, i, c);
	nm = cJSON_CreateObject();
	if (!nm || !cJSON_AddItemToArray(p->out, nm) ||
	    !cJSON_AddStringToObject(nm, "role", role->valuestring))
		return -ENOMEM;
	if (cJSON_IsString(c))
		return cJSON_AddStringToObject(nm, "content", c->valuestring)
			       ? 0
			       : -ENOMEM;
	return add_assistant(p, i, c, nm);
}

static int add_tools(struct aparse *p, const cJSON *tools,
		     const struct engy_api_limits *lim, cJSON *body, size_t *n)
{
	char *err = p->err;
	size_t errlen = p->errlen, i = 0;
	const cJSON *t, *name, *type, *desc, *schema;
	cJSON *arr, *nt;
	int rc;

	rc = engy_api_tools_begin(tools, lim, body, n, &arr, err, errlen);
	if (rc || !arr)
		return rc;
	cJSON_ArrayForEach(t, tools)
	{
		if (!cJSON_IsObject(t))
			return FAIL("tools[%zu]: expected an object", i);
		type = engy_api_get(t, "type");
		if (type && !(cJSON_IsString(type) &&
			      strcmp(type->valuestring, "custom") == 0))
			return FAIL("tools[%zu].type: server tools are not "
				    "supported (custom tools only)",
				    i);
		name = engy_json_get(t, "name");
		if (!cJSON_IsString(name) ||
		    !engy_api_tool_name_ok(name->valuestring))
			return FAIL("tools[%zu].name: expected 1 to 64 of a-z, "
				    "A-Z, 0-9, _ . : -",
				    i);
		if (engy_api_has_tool(arr, name->valuestring))
			return FAIL("tools[%zu].name: the name of an earlier "
				    "tool",
				    i);
		desc = engy_api_get(t, "description");
		if (desc && !cJSON_IsString(desc))
			return FAIL("tools[%zu].description: expected a string",
				    i);
		schema = engy_json_get(t, "input_schema");
		if (!cJSON_IsObject(schema))
			return FAIL("tools[%zu].input_schema: expected a JSON "
				    "Schema object",
				    i);
		nt = cJSON_CreateObject();
		if (!nt || !cJSON_AddItemToArray(arr, nt) ||
		    !cJSON_AddStringToObject(nt, "type", "function") ||
		    engy_api_add_function(nt, name->valuestring, desc, schema))
			return -ENOMEM;
		i++;
	}
	return 0;
}

static int add_tool_choice(struct aparse *p, const cJSON *c, cJSON *body)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *type, *name, *dp;

	if (!c)
		return 0;
	type = engy_json_get(c, "type");
	if (!cJSON_IsObject(c) || !cJSON_IsString(type))
		return FAIL("tool_choice.type: expected \"auto\", \"any\", "
			    "\"tool\" or \"none\"");
	dp = engy_api_get(c, "disable_parallel_tool_use");
	if (dp && !cJSON_IsBool(dp))
		return FAIL("tool_choice.disable_parallel_tool_use: expected "
			    "true or false");
	if (strcmp(type->valuestring, "auto") == 0 ||
	    strcmp(type->valuestring, "none") == 0)
		return cJSON_AddStringToObject(body, "tool_choice",
					       type->valuestring)
			       ? 0
			       : -ENOMEM;
	if (!cJSON_GetArraySize(engy_json_get(body, "tools")))
		return FAIL("tool_choice: \"%s\" needs tools",
			    strcmp(type->valuestring, "any") == 0 ? "any"
								  : "tool");
	if (strcmp(type->valuestring, "any") == 0)
		return cJSON_AddStringToObject(body, "tool_choice", "required")
			       ? 0
			       : -ENOMEM;
	if (strcmp(type->valuestring, "tool"))
		return FAIL("tool_choice.type: expected \"auto\", \"any\", "
			    "\"tool\" or \"none\"");
	name = engy_json_get(c, "name");
	if (!cJSON_IsString(name))
		return FAIL("tool_choice.name: expected a string");
	if (!engy_api_has_tool(engy_json_get(body, "tools"), name->valuestring))
		return FAIL("tool_choice.name: not one of tools");
	return engy_api_choose_tool(body, name->valuestring);
}

/* max_tokens, thinking, sampling, stop_sequences, stream. */
static int add_options(struct aparse *p, const cJSON *in, unsigned flags,
		       struct engy_api_req *req)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *j, *t, *b;
	int think = 0, rc;

	j = engy_api_get(in, "max_tokens");
	if (!j && !(flags & ENGY_ANTH_COUNT_TOKENS))
		return FAIL("max_tokens: missing (required)");
	rc = engy_api_take_max_tokens(j, "max_tokens", req, err, errlen);
	if (rc)
		return rc;
	j = engy_api_get(in, "thinking");
	if (j) {
		t = engy_json_get(j, "type");
		if (!cJSON_IsObject(j) || !cJSON_IsString(t))
			return FAIL("thinking.type: expected \"enabled\", "
				    "\"adaptive\" or \"disabled\"");
		if (strcmp(t->valuestring, "enabled") == 0) {
			b = engy_json_get(j, "budget_tokens");
			if (!engy_api_int(b, 1024, 4294967295.0))
				return FAIL(
					"thinking.budget_tokens: expected an "
					"integer >= 1024");
			if (req->has_max_tokens &&
			    b->valuedouble >= (double)req->max_tokens)
				return FAIL("thinking.budget_tokens: must be "
					    "less than max_tokens");
			think = 1;
		} else if (strcmp(t->valuestring, "adaptive") == 0) {
			think = 1;
		} else if (strcmp(t->valuestring, "disabled")) {
			return FAIL("thinking.type: expected \"enabled\", "
				    "\"adaptive\" or \"disabled\"");
		}
	}
	req->show_reasoning = think;
	if (engy_api_set_thinking(req->body, think, -1))
		return -ENOMEM;
	j = engy_api_get(in, "temperature");
	if (j &&
	    (!cJSON_IsNumber(j) || j->valuedouble < 0 || j->valuedouble > 1))
		return FAIL("temperature: expected a number in 0..1");
	if (engy_api_copy_number(j, "temperature", req->body))
		return -ENOMEM;
	j = engy_api_get(in, "top_p");
	if (j &&
	    (!cJSON_IsNumber(j) || !(j->valuedouble > 0) || j->valuedouble > 1))
		return FAIL("top_p: expected a number in (0, 1]");
	if (engy_api_copy_number(j, "top_p", req->body))
		return -ENOMEM;
	j = engy_api_get(in, "top_k");
	if (j && !engy_api_int(j, 0, 1 << 30))
		return FAIL("top_k: expected an integer >= 0");
	if (engy_api_copy_number(j, "top_k", req->body))
		return -ENOMEM;
	j = engy_api_get(in, "stop_sequences");
	if (j && !cJSON_IsArray(j))
		return FAIL("stop_sequences: expected an array of strings");
	if (engy_api_copy_stop(j, "stop_sequences", req->body, err, errlen))
		return -EINVAL;
	j = engy_api_get(in, "stream");
	if (j && !cJSON_IsBool(j))
		return FAIL("stream: expected true or false");
	req->stream = cJSON_IsTrue(j);
	j = engy_api_get(in, "metadata");
	if (j && !cJSON_IsObject(j))
		return FAIL("metadata: expected an object");
	return 0;
}

/* Structured output: output_config.format, or the beta's output_format:
 * {"type": "json_schema", "schema": {...}}. */
static int add_output_format(struct aparse *p, const cJSON *in,
			     struct engy_api_req *req)
{
	char *err = p->err;
	size_t errlen = p->errlen;
	const cJSON *cfg = engy_api_get(in, "output_config");
	const cJSON *f = engy_api_get(in, "output_format"), *t, *schema;
	const char *field = "output_format";

	if (cfg && !cJSON_IsObject(cfg))
		return FAIL("output_config: expected an object");
	if (cfg && engy_api_get(cfg, "format")) {
		if (f)
			return FAIL("output_format: give output_config.format "
				    "or output_format, not both");
		f = engy_api_get(cfg, "format");
		field = "output_config.format";
	}
	if (!f)
		return 0;
	t = engy_json_get(f, "type");
	if (!cJSON_IsObject(f) || !cJSON_IsString(t) ||
	    strcmp(t->valuestring, "json_schema"))
		return FAIL("%s.type: expected \"json_schema\"", field);
	schema = engy_json_get(f, "schema");
	if (!cJSON_IsObject(schema))
		return FAIL("%s.schema: expected an object", field);
	return engy_api_set_format(req, schema, NULL,
				   cfg && f == engy_api_get(cfg, "format")
					   ? "output_config.format.schema"
					   : "output_format.schema",
				   err, errlen);
}

int engy_anth_parse(const char *json, size_t len,
		    const struct engy_api_limits *lim, unsigned flags,
		    struct engy_api_req *req, char *err, size_t errlen)
{
	struct aparse p = { .err = err, .errlen = errlen };
	const cJSON *j, *m;
	cJSON *in = NULL;
	size_t i = 0;
	int rc;

	rc = engy_api_parse_begin(json, len, lim, ENGY_API_ANTHROPIC, req, &in,
				  err, errlen);
	if (rc)
		return rc;
	rc = -ENOMEM;
	p.out = cJSON_AddArrayToObject(req->body, "messages");
	if (!p.out)
		goto out;
	j = engy_api_get(in, "messages");
	rc = -EINVAL;
	if (!j) {
		FAIL("messages: missing");
		goto out;
	}
	if (!cJSON_IsArray(j) || !cJSON_GetArraySize(j)) {
		FAIL("messages: expected a non-empty array");
		goto out;
	}
	req->n_messages = (size_t)cJSON_GetArraySize(j);
	if (lim && lim->max_messages && req->n_messages > lim->max_messages) {
		FAIL("messages: %zu messages is above the limit of %zu",
		     req->n_messages, lim->max_messages);
		goto out;
	}
	rc = add_system(&p, engy_api_get(in, "system"));
	cJSON_ArrayForEach(m, j)
	{
		if (rc)
			break;
		rc = add_message(&p, i++, m);
	}
	if (!rc)
		rc = engy_api_check_turns(p.out, err, errlen);
	if (!rc && (j = engy_api_get(in, "tools")))
		rc = add_tools(&p, j, lim, req->body, &req->n_tools);
	if (!rc)
		rc = add_tool_choice(&p, engy_api_get(in, "tool_choice"),
				     req->body);
	if (!rc)
		rc = engy_api_check_forced_tool(req, err, errlen);
	if (!rc)
		rc = add_options(&p, in, flags, req);
	if (!rc)
		rc = add_output_format(&p, in, req);
out:
	return engy_api_parse_end(in, req, rc, err, errlen);
}

int engy_anth_check_version(const char *v, char *err, size_t errlen)
{
	int i;

	if (!v || !*v)
		return FAIL("anthropic-version: header is required");
	for (i = 0; i < 10; i++) {
		if (i == 4 || i == 7 ? v[i] != '-'
				     : !isdigit((unsigned char)v[i]))
			return FAIL("anthropic-version: expected a date like "
				    "2023-06-01");
	}
	if (v[10])
		return FAIL("anthropic-version: expected a date like "
			    "2023-06-01");
	return 0;
}

const char *engy_anth_stop_reason(const char *fr)
{
	if (!fr)
		return "end_turn";
	if (strcmp(fr, "length") == 0)
		return "max_tokens";
	if (strcmp(fr, "tool_calls") == 0)
		return "tool_use";
	if (strcmp(fr, "content_filter") == 0)
		return "refusal";
	return "end_turn";
}
