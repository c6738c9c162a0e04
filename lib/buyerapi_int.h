/* SPDX-License-Identifier: MIT */
/* Helpers the buyer API's files share (lib/oai*.c, lib/anth*.c). */
#ifndef ENGY_BUYERAPI_INT_H
#define ENGY_BUYERAPI_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "oai.h"

#define FNV_OFFSET 0xcbf29ce484222325ULL

/* Write a reason into @err and return @rc. */
int engy_api_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* A member of @obj, NULL when absent or JSON null. */
const cJSON *engy_api_get(const cJSON *obj, const char *key);
/*
 * engy_api_take_model() - the request's "model" into req->model: 0,
 * -EINVAL (missing or not a model name; @err says which), or -ENOMEM.
 */
int engy_api_take_model(const cJSON *in, struct engy_api_req *req, char *err,
			size_t errlen);

/* @j is a number with an integral value in [lo, hi]. */
bool engy_api_int(const cJSON *j, double lo, double hi);

/* @s when it is a short identifier ([a-z0-9_]{1,32}: a block or part
 * type), else "unknown": what error messages may quote of a body. */
const char *engy_api_ident(const char *s);

/* A tool name engy can render and parse back: 1..64 of [A-Za-z0-9_.:-]. */
bool engy_api_tool_name_ok(const char *s);

/* @tools (normalized OpenAI tools) has a function named @name. */
bool engy_api_has_tool(const cJSON *tools, const char *name);

/* FNV-1a over @n bytes, continuing from @h. */
uint64_t engy_api_fnv(uint64_t h, const char *p, size_t n);

/*
 * The size check and the JSON parse every buyer body goes through:
 * -E2BIG over lim->max_body_bytes, -EINVAL for text that is not a JSON
 * object.
 */
int engy_api_parse_root(const char *json, size_t len,
			const struct engy_api_limits *lim, cJSON **root,
			char *err, size_t errlen);

/*
 * The chat template's rules on the turns of a normalized messages array
 * (lib/chat_qwen.c): a system message only first, at least one user
 * message.  -EINVAL with the template's own words.
 */
int engy_api_check_turns(const cJSON *msgs, char *err, size_t errlen);

/* Checks that @s is blank or the JSON text of an object. */
bool engy_api_args_ok(const char *s);

/* A stop field (string or up to 4 strings) copied to @body as "stop". */
int engy_api_copy_stop(const cJSON *stop, const char *field, cJSON *body,
		       char *err, size_t errlen);

/* Adds `"chat_template_kwargs":{"enable_thinking":…}` when @think >= 0
 * (and preserve_thinking when @preserve >= 0). */
int engy_api_set_thinking(cJSON *body, int think, int preserve);

/* Tool call arguments for Anthropic's input: the parsed object, or NULL
 * when they are not the JSON text of an object ("" is {}). */
cJSON *engy_api_args_object(const char *args);

#endif /* ENGY_BUYERAPI_INT_H */
