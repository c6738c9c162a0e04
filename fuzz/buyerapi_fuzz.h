/* SPDX-License-Identifier: MIT */
/*
 * What both buyer API fuzz targets check of a parsed request and of the
 * renderings of a miner output: invariants that hold for any input.  And
 * what they and the gateway's frame target check of the one-pass JSON
 * reader (lib/proto/json_lazy.c): whatever it takes is cJSON's tree.
 */
#ifndef ENGY_BUYERAPI_FUZZ_H
#define ENGY_BUYERAPI_FUZZ_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "chat_template.h"
#include "json_lazy.h"
#include "minerproto.h"
#include "oai.h"

/* An accepted request: a model, a messages array the chat template
 * renders and sampling fields the miner accepts; a cap within the model's
 * after apply. */
static inline void fuzz_check_req(struct engy_api_req *req)
{
	struct engy_chat_opts o = { .variant = ENGY_CHAT_QWEN36,
				    .enable_thinking = -1 };
	struct engy_api_model m = { .max_output_tokens = 4096 };
	struct engy_chat_params cp;
	char err[256], *prompt = NULL;
	size_t len;
	int rc;

	if (!req->model || !req->model[0] || !cJSON_IsObject(req->body))
		abort();
	if (cJSON_GetArraySize(cJSON_GetObjectItem(req->body, "messages")) < 1)
		abort();
	if (engy_chat_render(req->body, &o, &prompt, &len, NULL, err,
			     sizeof(err)) == -EINVAL)
		abort(); /* the gateway accepted what the miner refuses */
	free(prompt);
	rc = engy_api_req_apply(req, &m, err, sizeof(err));
	if (rc == 0 && (req->max_tokens < 1 || req->max_tokens > 4096))
		abort();
	if (rc == -EINVAL && (!req->has_max_tokens || req->max_tokens <= 4096))
		abort();
	if (rc == 0 &&
	    engy_chat_params_parse(req->body, &cp, err, sizeof(err)) == -EINVAL)
		abort();
}

/* Every event of a stream is "data: " (after an optional "event: ")
 * holding JSON or [DONE], and ends with a blank line. */
static inline void fuzz_check_sse(const char *s, size_t n)
{
	const char *p = s, *end = s + n, *nl, *d;
	cJSON *j;

	while (p < end) {
		if (*p == ':') {
			p = strstr(p, "\n\n");
			if (!p)
				abort();
			p += 2;
			continue;
		}
		if (strncmp(p, "event: ", 7) == 0) {
			p = strchr(p, '\n');
			if (!p)
				abort();
			p++;
		}
		if (strncmp(p, "data: ", 6) != 0)
			abort();
		d = p + 6;
		nl = strchr(d, '\n');
		if (!nl || nl[1] != '\n')
			abort();
		if (strncmp(d, "[DONE]\n", 7) != 0) {
			j = cJSON_ParseWithLength(d, (size_t)(nl - d));
			if (!j)
				abort();
			cJSON_Delete(j);
		}
		p = nl + 2;
	}
}

static inline void fuzz_check_json(const char *s, size_t n)
{
	cJSON *j = cJSON_ParseWithLength(s, n);

	if (!j)
		abort();
	cJSON_Delete(j);
}

static inline bool fuzz_same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* @a and @b the same trees node for node: type, key, string value,
 * valueint and valuedouble's bits (-0 is not 0), and @a's child links as
 * cJSON sets them (the first child's prev is the last child). */
static inline bool fuzz_json_same(const cJSON *a, const cJSON *b)
{
	const cJSON *x, *y;

	if (memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) != 0)
		return false;
	if (a->type != b->type || a->valueint != b->valueint ||
	    !fuzz_same_str(a->string, b->string) ||
	    !fuzz_same_str(a->valuestring, b->valuestring))
		return false;
	for (x = a->child, y = b->child; x && y; x = x->next, y = y->next) {
		if (x != a->child && x->prev->next != x)
			return false;
		if (!x->next && a->child->prev != x)
			return false;
		if (!fuzz_json_same(x, y))
			return false;
	}
	return !x && !y;
}

/* engy_json_parse() takes @data..@data+@size as cJSON reads it, or not
 * at all: cJSON's whole parse then decides, as the callers fall back. */
static inline void fuzz_check_json_parse(const char *data, size_t size)
{
	const char *je = NULL, *we = NULL;
	cJSON *j = engy_json_parse(data, size, &je), *w;

	if (!j)
		return;
	w = cJSON_ParseWithLengthOpts(data, size, &we, false);
	if (!w || je != we || !fuzz_json_same(j, w))
		abort(); /* taken otherwise than cJSON takes it */
	cJSON_Delete(w);
	cJSON_Delete(j);
}

#endif /* ENGY_BUYERAPI_FUZZ_H */
