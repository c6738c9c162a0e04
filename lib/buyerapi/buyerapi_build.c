// SPDX-License-Identifier: MIT
/*
 * The pieces of the miner's chat body that the OpenAI and the Anthropic
 * parsers (lib/buyerapi/oai.c, lib/buyerapi/anth.c) both build, and what their streams
 * (lib/buyerapi/oai_out.c, lib/buyerapi/anth_out.c) both read back of the miner's output.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buyerapi_int.h"
#include "constrain.h"
#include "jsonget.h"

int engy_api_parse_end(cJSON *in, struct engy_api_req *req, int rc, char *err,
		       size_t errlen)
{
	cJSON_Delete(in);
	if (rc == -ENOMEM)
		engy_api_fail(err, errlen, rc, "out of memory");
	if (rc)
		engy_api_req_free(req);
	return rc;
}

int engy_api_parse_begin(const char *json, size_t len,
			 const struct engy_api_limits *lim, enum engy_api api,
			 struct engy_api_req *req, cJSON **in, char *err,
			 size_t errlen)
{
	int rc;

	memset(req, 0, sizeof(*req));
	req->api = api;
	req->show_reasoning = api == ENGY_API_OPENAI;
	req->max_tokens_field = "max_tokens";
	rc = engy_api_parse_root(json, len, lim, in, err, errlen);
	if (rc)
		return rc;
	req->body = cJSON_CreateObject();
	rc = req->body ? engy_api_take_model(*in, req, err, errlen) : -ENOMEM;
	if (rc) {
		engy_api_parse_end(*in, req, rc, err, errlen);
		*in = NULL;
	}
	return rc;
}

int engy_api_take_max_tokens(const cJSON *j, const char *field,
			     struct engy_api_req *req, char *err, size_t errlen)
{
	if (!j)
		return 0;
	if (!engy_api_int(j, 1, 4294967295.0))
		return engy_api_fail(err, errlen, -EINVAL,
				     "%s: expected an integer >= 1", field);
	req->max_tokens = (uint64_t)j->valuedouble;
	req->has_max_tokens = true;
	return cJSON_AddNumberToObject(req->body, "max_tokens", j->valuedouble)
		       ? 0
		       : -ENOMEM;
}

int engy_api_copy_number(const cJSON *j, const char *key, cJSON *body)
{
	return !j || cJSON_AddNumberToObject(body, key, j->valuedouble)
		       ? 0
		       : -ENOMEM;
}

int engy_api_tools_begin(const cJSON *tools, const struct engy_api_limits *lim,
			 cJSON *body, size_t *n, cJSON **arr, char *err,
			 size_t errlen)
{
	*arr = NULL;
	if (!cJSON_IsArray(tools))
		return engy_api_fail(err, errlen, -EINVAL,
				     "tools: expected an array");
	*n = (size_t)cJSON_GetArraySize(tools);
	if (!*n)
		return 0;
	if (lim && lim->max_tools && *n > lim->max_tools)
		return engy_api_fail(err, errlen, -EINVAL,
				     "tools: %zu tools is above the limit of "
				     "%zu",
				     *n, lim->max_tools);
	*arr = cJSON_AddArrayToObject(body, "tools");
	return *arr ? 0 : -ENOMEM;
}

int engy_api_add_function(cJSON *tool, const char *name, const cJSON *desc,
			  const cJSON *params)
{
	cJSON *fn = cJSON_AddObjectToObject(tool, "function");

	if (!fn || !cJSON_AddStringToObject(fn, "name", name))
		return -ENOMEM;
	if (desc &&
	    !cJSON_AddStringToObject(fn, "description", desc->valuestring))
		return -ENOMEM;
	if (params && !cJSON_AddItemToObject(fn, "parameters",
					     cJSON_Duplicate(params, true)))
		return -ENOMEM;
	return 0;
}

int engy_api_choose_tool(cJSON *body, const char *name)
{
	cJSON *nc = cJSON_AddObjectToObject(body, "tool_choice");
	cJSON *fn = nc ? cJSON_AddObjectToObject(nc, "function") : NULL;

	if (!fn || !cJSON_AddStringToObject(nc, "type", "function") ||
	    !cJSON_AddStringToObject(fn, "name", name))
		return -ENOMEM;
	return 0;
}

int engy_api_add_call(cJSON *calls, const char *id, const char *name,
		      const cJSON *args)
{
	cJSON *c = cJSON_CreateObject(), *fn;
	char *printed = NULL;
	int rc = -ENOMEM;

	if (!c || !cJSON_AddItemToArray(calls, c)) {
		cJSON_Delete(c);
		return -ENOMEM;
	}
	if (id && !cJSON_AddStringToObject(c, "id", id))
		return -ENOMEM;
	fn = cJSON_CreateObject();
	if (!cJSON_AddStringToObject(c, "type", "function") || !fn ||
	    !cJSON_AddItemToObject(c, "function", fn)) {
		cJSON_Delete(fn);
		return -ENOMEM;
	}
	if (cJSON_IsObject(args) && !(printed = cJSON_PrintUnformatted(args)))
		return -ENOMEM;
	if (cJSON_AddStringToObject(fn, "name", name) &&
	    cJSON_AddStringToObject(fn, "arguments",
				    printed		   ? printed
				    : cJSON_IsString(args) ? args->valuestring
							   : "{}"))
		rc = 0;
	free(printed);
	return rc;
}

int engy_api_add_text_part(cJSON *parts, const char *text)
{
	cJSON *p = cJSON_CreateObject();

	if (!p || !cJSON_AddItemToArray(parts, p) ||
	    !cJSON_AddStringToObject(p, "type", "text") ||
	    !cJSON_AddStringToObject(p, "text", text))
		return -ENOMEM;
	return 0;
}

void engy_api_delta_text(const cJSON *delta, struct engy_api_text *t)
{
	const cJSON *c = engy_json_get(delta, "content");
	const cJSON *r = engy_json_get(delta, "reasoning_content");

	if (!cJSON_IsString(r))
		r = engy_json_get(delta, "reasoning");
	t->content = cJSON_IsString(c) ? c->valuestring : NULL;
	t->content_len = cJSON_IsString(c) ? strlen(c->valuestring) : 0;
	t->reasoning = cJSON_IsString(r) ? r->valuestring : NULL;
	t->reasoning_len = cJSON_IsString(r) ? strlen(r->valuestring) : 0;
}

/* What of @full the chunks did not carry, when they carried a prefix. */
static size_t rest_of(const char *full, size_t len, size_t sent, uint64_t hash)
{
	if (!full || len <= sent ||
	    engy_api_fnv(FNV_OFFSET, full, sent) != hash)
		return 0;
	return len - sent;
}

void engy_api_text_rest(const struct engy_api_result *r, size_t content_sent,
			uint64_t content_hash, size_t reasoning_sent,
			uint64_t reasoning_hash, struct engy_api_text *t)
{
	t->reasoning_len = rest_of(r->reasoning, r->reasoning_len,
				   reasoning_sent, reasoning_hash);
	t->reasoning = t->reasoning_len ? r->reasoning + r->reasoning_len -
						  t->reasoning_len
					: NULL;
	t->content_len =
		rest_of(r->content, r->content_len, content_sent, content_hash);
	t->content = t->content_len
			     ? r->content + r->content_len - t->content_len
			     : NULL;
}

int engy_api_set_format(struct engy_api_req *req, const cJSON *schema,
			const char *name, const char *field, char *err,
			size_t errlen)
{
	struct engy_cons *c;
	char why[200];
	cJSON *rf, *js;
	int rc;

	rc = engy_cons_compile(schema, NULL, NULL, &c, why, sizeof(why));
	if (rc == -ENOMEM)
		return rc;
	if (rc)
		return engy_api_fail(err, errlen, rc, "%s: %s", field, why);
	engy_cons_free(c);
	cJSON_DeleteItemFromObjectCaseSensitive(req->body, "response_format");
	rf = cJSON_AddObjectToObject(req->body, "response_format");
	if (!rf)
		return -ENOMEM;
	req->constraint |= ENGY_API_CONS_JSON;
	if (!schema)
		return cJSON_AddStringToObject(rf, "type", "json_object")
			       ? 0
			       : -ENOMEM;
	if (!cJSON_AddStringToObject(rf, "type", "json_schema") ||
	    !(js = cJSON_AddObjectToObject(rf, "json_schema")) ||
	    !cJSON_AddStringToObject(js, "name", name ? name : "response") ||
	    !cJSON_AddItemToObject(js, "schema",
				   cJSON_Duplicate(schema, true)) ||
	    !cJSON_AddTrueToObject(js, "strict"))
		return -ENOMEM;
	return 0;
}

int engy_api_check_forced_tool(struct engy_api_req *req, char *err,
			       size_t errlen)
{
	const cJSON *tools = engy_json_get(req->body, "tools");
	const cJSON *t, *name;
	const char *only;
	struct engy_cons *c;
	char why[200];
	cJSON *one;
	size_t i;
	int rc;

	if (!engy_cons_tool_choice(req->body, &only))
		return 0;
	/* each tool on its own, so that a refusal names it */
	i = 0;
	cJSON_ArrayForEach(t, tools)
	{
		name = engy_json_get(engy_json_get(t, "function"), "name");
		i++;
		if (!cJSON_IsString(name) ||
		    (only && strcmp(only, name->valuestring)))
			continue;
		one = engy_cons_tool_schema(tools, name->valuestring);
		if (!one)
			return -ENOMEM;
		rc = engy_cons_compile(one, NULL, NULL, &c, why, sizeof(why));
		cJSON_Delete(one);
		if (rc == -ENOMEM)
			return rc;
		if (rc)
			return engy_api_fail(err, errlen, rc,
					     "tools[%zu].parameters: %s (the "
					     "call is forced by tool_choice)",
					     i - 1, why);
		engy_cons_free(c);
	}
	/* all of them at once: the alternatives' own limits */
	one = engy_cons_tool_schema(tools, only);
	if (!one)
		return -ENOMEM;
	rc = engy_cons_compile(one, NULL, NULL, &c, why, sizeof(why));
	cJSON_Delete(one);
	if (rc == -ENOMEM)
		return rc;
	if (rc)
		return engy_api_fail(err, errlen, rc, "tools: %s", why);
	engy_cons_free(c);
	req->constraint |= ENGY_API_CONS_TOOL;
	return 0;
}
