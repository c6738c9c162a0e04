/* SPDX-License-Identifier: MIT */
/*
 * The serve's GEMM audit extension (specs/serve.md, "GEMM audit trace"):
 * /generate's return_gemm_trace asks the backend for a trace
 * (engy_gen_params.gemm_trace) and its gemm_commit() rides in
 * meta_info.gemm; POST /engy/gemm_open {"rid": R, "challenge": {...}}
 * hands the challenge to the backend's gemm_open() and answers with the
 * opening object it gives (200), or {"error":{"message":...}} with 404 (no
 * such trace: never kept, expired or evicted), 400 (a malformed request
 * or challenge), 501 (the backend offers no trace), 503 (shutting down) or
 * 500.  The body is the client's and untrusted: only its shape is checked
 * here; the challenge is the backend's to parse.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <engy/host.h>
#include <engy/plugin.h>

#include "serve_int.h"

bool serve_has_gemm(const struct serve *s)
{
	return s->b->size >= offsetof(struct engy_backend_ops, gemm_open) +
				     sizeof(s->b->gemm_open) &&
	       s->b->gemm_commit && s->b->gemm_open;
}

static void unlink_open(struct sopen *o)
{
	struct sopen **p;

	for (p = &o->s->opens; *p; p = &(*p)->next)
		if (*p == o) {
			*p = o->next;
			o->s->n_opens--;
			return;
		}
}

static int status_of(int rc)
{
	switch (rc) {
	case -ENOENT:
		return 404;
	case -EINVAL:
		return 400;
	case -ESHUTDOWN:
	case -ECANCELED:
	case -EBUSY:
		return 503;
	default:
		return 500;
	}
}

static const char *message_of(int rc)
{
	switch (rc) {
	case -ENOENT:
		return "no GEMM trace by that rid (never kept, expired or "
		       "evicted)";
	case -EINVAL:
		return "malformed challenge";
	case -ESHUTDOWN:
	case -ECANCELED:
		return "shutting down";
	case -EBUSY:
		return "the backend's queue is full";
	case -EBADMSG:
		return "the trace could not be re-derived";
	default:
		return "opening failed";
	}
}

static void open_done(void *arg, int rc, const char *json, size_t len)
{
	struct sopen *o = arg;
	struct serve *s = o->s;

	unlink_open(o);
	s->h->log(s->h, ENGY_LOG_INFO,
		  "event=gemm_open_done rc=%d bytes=%zu client=%s", rc,
		  rc ? (size_t)0 : len, o->x ? "yes" : "gone");
	if (o->x) {
		if (!rc && json)
			s->t->http_reply(s->ti, o->x, 200, "application/json",
					 NULL, json, len);
		else
			serve_reply_error(s, o->x, status_of(rc),
					  message_of(rc));
	}
	free(o);
}

int serve_gemm_open(struct serve *s, struct engy_http_exchange *x,
		    const struct engy_http_request *r)
{
	const cJSON *rid, *ch;
	struct sopen *o;
	cJSON *j;
	char *text;
	int rc;

	if (strcmp(r->method, "POST") != 0) {
		serve_reply_error(s, x, 405, "Method Not Allowed (POST)");
		return 0;
	}
	if (s->stopping) {
		serve_reply_error(s, x, 503, "shutting down");
		return 0;
	}
	if (!serve_has_gemm(s)) {
		serve_reply_error(s, x, 501,
				  "this serve's backend keeps no GEMM trace");
		return 0;
	}
	j = cJSON_ParseWithLength((const char *)r->body, r->body_len);
	rid = cJSON_GetObjectItemCaseSensitive(j, "rid");
	ch = cJSON_GetObjectItemCaseSensitive(j, "challenge");
	if (!cJSON_IsObject(j) || !cJSON_IsString(rid) || !*rid->valuestring ||
	    strlen(rid->valuestring) > ENGY_SGL_MAX_RID ||
	    !cJSON_IsObject(ch)) {
		cJSON_Delete(j);
		serve_reply_error(s, x, 400,
				  "expected {\"rid\": string, \"challenge\": "
				  "object}");
		return 0;
	}
	text = cJSON_PrintUnformatted(ch);
	o = calloc(1, sizeof(*o));
	if (!text || !o) {
		cJSON_Delete(j);
		free(text);
		free(o);
		return -ENOMEM;
	}
	o->s = s;
	o->x = x;
	o->next = s->opens;
	s->opens = o;
	s->n_opens++;
	rc = s->b->gemm_open(s->bi, rid->valuestring, text, strlen(text),
			     open_done, o);
	free(text);
	cJSON_Delete(j);
	if (rc < 0) {
		unlink_open(o);
		free(o);
		s->h->log(s->h, ENGY_LOG_INFO, "event=gemm_open_refused rc=%d",
			  rc);
		serve_reply_error(s, x, status_of(rc), message_of(rc));
	}
	return 0;
}

void serve_gemm_gone(struct serve *s, struct engy_http_exchange *x)
{
	struct sopen *o;

	for (o = s->opens; o; o = o->next)
		if (o->x == x)
			o->x = NULL;
}

void serve_gemm_free_all(struct serve *s)
{
	struct sopen *o;

	while ((o = s->opens)) {
		s->opens = o->next;
		free(o);
	}
	s->n_opens = 0;
}
