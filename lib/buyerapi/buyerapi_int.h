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

/* A streamed chunk's fixed head, `{"id":ID,"object":OBJECT,"created":T,
 * "model":MODEL,"choices":[` (T: now when @created is 0); malloc'd. */
char *engy_api_chunk_head(const char *id, const char *object, int64_t created,
			  const char *model, size_t *len);

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
 * (lib/chat/chat_qwen.c): a system message only first, at least one user
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

/*
 * engy_api_set_format() - constrain the output to JSON matching @schema
 * (NULL: any JSON object): the schema is compiled once to check it
 * (lib/constrain), refusals naming @field and the unsupported feature
 * (-EINVAL/-E2BIG, 400); body.response_format is set in OpenAI's shape
 * (json_schema named @name, "response" when NULL) and
 * ENGY_API_CONS_JSON added to req->constraint.
 */
int engy_api_set_format(struct engy_api_req *req, const cJSON *schema,
			const char *name, const char *field, char *err,
			size_t errlen);

/*
 * engy_api_check_forced_tool() - when the body's tool_choice forces a
 * call, the schema each callable tool's call must match is checked as
 * above (a refusal names the tool) and ENGY_API_CONS_TOOL added.
 */
int engy_api_check_forced_tool(struct engy_api_req *req, char *err,
			       size_t errlen);

/* ---- lib/buyerapi/buyerapi_build.c: what both parsers build, both streams read ---- */

/*
 * engy_api_parse_begin() - a parse's start: @req zeroed for @api (OpenAI
 * shows reasoning unless asked not to, Anthropic only with thinking on),
 * the body checked and parsed into *@in, req->body created, req->model
 * taken.  On failure all is freed and the error returned.
 * engy_api_parse_end() - its end: *@in freed, and on failure (@rc) @req
 * freed, -ENOMEM saying "out of memory".  Returns @rc.
 */
int engy_api_parse_begin(const char *json, size_t len,
			 const struct engy_api_limits *lim, enum engy_api api,
			 struct engy_api_req *req, cJSON **in, char *err,
			 size_t errlen);
int engy_api_parse_end(cJSON *in, struct engy_api_req *req, int rc, char *err,
		       size_t errlen);

/* The output cap @j (absent: 0) named @field into req->max_tokens and the
 * body's "max_tokens". */
int engy_api_take_max_tokens(const cJSON *j, const char *field,
			     struct engy_api_req *req, char *err,
			     size_t errlen);

/* A checked number @j (absent: 0) copied to @body as @key. */
int engy_api_copy_number(const cJSON *j, const char *key, cJSON *body);

/* The tools array checked for its size (count in *@n) and, unless empty
 * (*@arr NULL), the body's "tools" array created in *@arr. */
int engy_api_tools_begin(const cJSON *tools, const struct engy_api_limits *lim,
			 cJSON *body, size_t *n, cJSON **arr, char *err,
			 size_t errlen);

/* @tool's "function": {name, description, parameters} (the last two when
 * given). */
int engy_api_add_function(cJSON *tool, const char *name, const cJSON *desc,
			  const cJSON *params);

/* The body's tool_choice naming function @name. */
int engy_api_choose_tool(cJSON *body, const char *name);

/* A tool call appended to @calls: {id (when given), type, function:{name,
 * arguments}}; @args an object (printed), a string, or absent ("{}"). */
int engy_api_add_call(cJSON *calls, const char *id, const char *name,
		      const cJSON *args);

/* A {type:"text", text} part appended to @parts. */
int engy_api_add_text_part(cJSON *parts, const char *text);

/* The texts a stream step carries (NULL, 0 when none). */
struct engy_api_text {
	const char *content;
	size_t content_len;
	const char *reasoning;
	size_t reasoning_len;
};

/* A chunk's delta: content, reasoning_content (or reasoning). */
void engy_api_delta_text(const cJSON *delta, struct engy_api_text *t);

/* What of the final texts the stream did not carry, when it carried a
 * prefix of each (its length and FNV-1a hash). */
void engy_api_text_rest(const struct engy_api_result *r, size_t content_sent,
			uint64_t content_hash, size_t reasoning_sent,
			uint64_t reasoning_hash, struct engy_api_text *t);

/* The checked logprobs entries (engy_api_result.logprobs) as an array of
 * {token, logprob, bytes, top_logprobs: [{token, logprob, bytes}, …]}
 * with at most @top alternatives each; bytes are the miner's when all are
 * bytes, else the token's own. */
void engy_api_logprobs_entries(struct engy_sse_out *o, const cJSON *content,
			       uint32_t top);

/* The bytes of a checked entry or alternative: "[…]" after @prefix. */
void engy_api_token_bytes(struct engy_sse_out *o, const cJSON *e);

#endif /* ENGY_BUYERAPI_INT_H */
