/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the buyer API's unit tests (check_oai, check_anth,
 * check_apierr): JSON paths, a strict reader of the SSE we write, and
 * the miner's acceptance of a translated request.
 */
#ifndef ENGY_BUYERAPI_CHECK_H
#define ENGY_BUYERAPI_CHECK_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "chat_template.h"
#include "minerproto.h"
#include "oai.h"

static inline cJSON *jparse(const char *s)
{
	cJSON *j = cJSON_Parse(s);

	ck_assert_msg(j != NULL, "not JSON: %s", s);
	return j;
}

/* "a.b.0.c": members by name, array items by index. */
static inline const cJSON *jget(const cJSON *o, const char *path)
{
	char buf[256], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok && o;
	     tok = strtok_r(NULL, ".", &save))
		o = cJSON_IsArray(o) ? cJSON_GetArrayItem(o, atoi(tok))
				     : cJSON_GetObjectItemCaseSensitive(o, tok);
	return o;
}

static inline const char *jstr(const cJSON *o, const char *path)
{
	const cJSON *j = jget(o, path);

	ck_assert_msg(cJSON_IsString(j), "%s is not a string", path);
	return j->valuestring;
}

static inline double jnum(const cJSON *o, const char *path)
{
	const cJSON *j = jget(o, path);

	ck_assert_msg(cJSON_IsNumber(j), "%s is not a number", path);
	return j->valuedouble;
}

static inline int jsize(const cJSON *o, const char *path)
{
	const cJSON *j = jget(o, path);

	ck_assert_msg(cJSON_IsArray(j) || cJSON_IsObject(j),
		      "%s is not an array or object", path);
	return cJSON_GetArraySize(j);
}

#define MAX_EV 512

/* One event as a client reads it. */
struct ev {
	char name[40]; /* "" when the event had no event line */
	char *data;    /* the data lines joined by "\n" */
	cJSON *json;   /* the data parsed, NULL for [DONE] */
};

struct evs {
	struct ev e[MAX_EV];
	int n;
	int comments;
};

/*
 * Split @s strictly: every line ends with "\n", an event is "event: X"
 * (optional) then one or more "data: " lines then an empty line; lines
 * starting with ":" are comments followed by an empty line.  Anything
 * else fails the test.  Every data but [DONE] must be JSON.
 */
static inline void evs_read(struct evs *v, const char *s)
{
	const char *p = s, *nl;
	struct ev *e = NULL;
	size_t dl = 0;

	memset(v, 0, sizeof(*v));
	while (*p) {
		nl = strchr(p, '\n');
		ck_assert_msg(nl != NULL, "line without an end: %s", p);
		if (nl == p) {
			ck_assert_msg(e != NULL, "blank line outside an event");
			ck_assert_msg(e->data != NULL, "event without data");
			if (strcmp(e->data, "[DONE]"))
				e->json = jparse(e->data);
			e = NULL;
		} else if (*p == ':') {
			ck_assert_msg(e == NULL, "comment inside an event");
			ck_assert_msg(nl[1] == '\n', "comment not alone");
			v->comments++;
			nl++;
		} else {
			if (!e) {
				ck_assert_int_lt(v->n, MAX_EV);
				e = &v->e[v->n++];
				dl = 0;
			}
			if (strncmp(p, "event: ", 7) == 0) {
				ck_assert_msg(!e->data && !e->name[0],
					      "event line out of place");
				ck_assert_int_lt(nl - p - 7, 40);
				memcpy(e->name, p + 7, (size_t)(nl - p - 7));
			} else {
				ck_assert_msg(strncmp(p, "data: ", 6) == 0,
					      "unknown line: %.40s", p);
				e->data = realloc(e->data,
						  dl + (size_t)(nl - p) + 2);
				ck_assert_ptr_nonnull(e->data);
				if (dl)
					e->data[dl++] = '\n';
				memcpy(e->data + dl, p + 6,
				       (size_t)(nl - p - 6));
				dl += (size_t)(nl - p - 6);
				e->data[dl] = '\0';
			}
		}
		p = nl + 1;
	}
	ck_assert_msg(e == NULL, "the last event is not closed");
}

static inline void evs_free(struct evs *v)
{
	int i;

	for (i = 0; i < v->n; i++) {
		free(v->e[i].data);
		cJSON_Delete(v->e[i].json);
	}
	v->n = 0;
}

/* The miner's side accepts what we send: the template renders the body,
 * the sampling fields parse. */
static inline void miner_accepts(const struct engy_api_req *req)
{
	struct engy_chat_opts opts = { .variant = ENGY_CHAT_QWEN36,
				       .enable_thinking = -1 };
	struct engy_chat_params cp;
	char e[256] = "", *prompt = NULL;
	size_t len = 0;

	ck_assert_msg(engy_chat_render(req->body, &opts, &prompt, &len, NULL, e,
				       sizeof(e)) == 0,
		      "template refused: %s", e);
	free(prompt);
	ck_assert_msg(engy_chat_params_parse(req->body, &cp, e, sizeof(e)) == 0,
		      "miner params refused: %s", e);
}

#endif /* ENGY_BUYERAPI_CHECK_H */
