/* SPDX-License-Identifier: MIT */
/* The schema of a forced tool call: {"name": <const>, "arguments": ...}. */
#include <string.h>

#include "constrain.h"
#include "jsonget.h"

static cJSON *call_schema(const cJSON *fn)
{
	const cJSON *name = engy_json_get(fn, "name");
	const cJSON *params = engy_json_get(fn, "parameters");
	cJSON *s = cJSON_CreateObject(), *props, *n, *req;

	if (!s || !cJSON_AddStringToObject(s, "type", "object") ||
	    !(props = cJSON_AddObjectToObject(s, "properties")) ||
	    !(n = cJSON_AddObjectToObject(props, "name")) ||
	    !cJSON_AddStringToObject(n, "const", name->valuestring) ||
	    !cJSON_AddItemToObject(
		    props, "arguments",
		    params && !cJSON_IsNull(params)
			    ? cJSON_Duplicate(params, true)
			    : cJSON_Parse("{\"type\":\"object\"}")) ||
	    !(req = cJSON_AddArrayToObject(s, "required")) ||
	    !cJSON_AddItemToArray(req, cJSON_CreateString("name")) ||
	    !cJSON_AddItemToArray(req, cJSON_CreateString("arguments"))) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

cJSON *engy_cons_tool_schema(const cJSON *tools, const char *only)
{
	const cJSON *t, *fn, *name;
	cJSON *any = cJSON_CreateObject(), *arr, *one;

	arr = any ? cJSON_AddArrayToObject(any, "anyOf") : NULL;
	if (!arr)
		goto fail;
	cJSON_ArrayForEach(t, tools)
	{
		fn = engy_json_get(t, "function");
		name = engy_json_get(fn, "name");
		if (!cJSON_IsString(name) ||
		    (only && strcmp(only, name->valuestring)))
			continue;
		one = call_schema(fn);
		if (!one || !cJSON_AddItemToArray(arr, one)) {
			cJSON_Delete(one);
			goto fail;
		}
	}
	if (!arr->child)
		goto fail;
	if (!arr->child->next) { /* one tool: no anyOf */
		one = cJSON_DetachItemViaPointer(arr, arr->child);
		cJSON_Delete(any);
		return one;
	}
	return any;
fail:
	cJSON_Delete(any);
	return NULL;
}

int engy_cons_tool_choice(const cJSON *body, const char **only)
{
	const cJSON *tc = engy_json_get(body, "tool_choice");
	const cJSON *tools = engy_json_get(body, "tools");
	const cJSON *fn, *name;

	*only = NULL;
	if (!cJSON_IsArray(tools) || !tools->child)
		return 0;
	if (cJSON_IsString(tc))
		return strcmp(tc->valuestring, "required") == 0;
	fn = engy_json_get(tc, "function");
	name = engy_json_get(fn, "name");
	if (!cJSON_IsString(name))
		return 0;
	*only = name->valuestring;
	return 1;
}
