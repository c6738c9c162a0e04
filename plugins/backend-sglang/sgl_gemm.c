/* SPDX-License-Identifier: MIT */
/*
 * backend-sglang's side of the serve's GEMM audit extension (specs/serve.md,
 * "GEMM audit trace"): a request with params.gemm_trace sends
 * "return_gemm_trace": true (and is never cut into calls: one trace covers
 * one call); the final event's meta_info.gemm, untrusted, is read by
 * lib/sglang's bounded parser and checked (engy_sglresp_gemm_json()); a
 * malformed one gives no member and a warning, never a failed request.
 * The member's "rid" becomes "<serve index>/<the serve's rid>" so that
 * gemm_open() goes back to the serve that keeps the trace, with POST
 * /engy/gemm_open {"rid": ..., "challenge": {...}}.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sgl.h"
#include "sgl_http.h"

#define OPEN_MAX_BYTES	    ((size_t)16 << 20) /* an opening's reply */
#define CHALLENGE_MAX_BYTES ((size_t)1 << 20)

struct sgl_open {
	struct sgl_open *next, **pprev;
	struct sgl *s;
	struct sgl_call *call;
	char *buf;
	size_t len, cap;
	bool too_big;
	void (*done)(void *arg, int rc, const char *json, size_t len);
	void *arg;
};

void sgl_gemm_take(struct sgl_gen *g, const struct engy_sglresp_gemm *m)
{
	struct engy_sglresp_gemm c = *m;
	const char *why = NULL;
	char *json = NULL;
	int n;

	n = snprintf(c.rid, sizeof(c.rid), "%zu/%s",
		     (size_t)(g->serve - g->s->serves), m->rid);
	if (n < 0 || (size_t)n >= sizeof(c.rid) - 1)
		why = "rid too long";
	else if (engy_sglresp_gemm_json(&c, &json, &why) == -ENOMEM)
		why = "out of memory";
	if (why || !json) {
		engy_warn(g->s->host,
			  "event=gemm_member_invalid rid=%s serve=%s "
			  "reason=\"%s\"",
			  g->rid, g->serve->url, why ? why : "unknown");
		free(json);
		return;
	}
	free(g->gemm_member);
	g->gemm_member = json;
	g->gemm_np = c.n_prompt;
	g->gemm_nt = c.n_tokens;
}

char *sgl_gemm_commit(void *inst, struct engy_gen *eg)
{
	struct sgl_gen *g = (struct sgl_gen *)eg;
	struct sgl *s = inst;

	if (!g || !g->gemm_member || g->err || g->cancelled)
		return NULL;
	/* A member about other tokens than these binds nothing useful. */
	if (g->gemm_np != (int64_t)g->n_input ||
	    g->gemm_nt != (int64_t)(g->n_input + g->n_out)) {
		engy_warn(s->host,
			  "event=gemm_member_invalid rid=%s reason=\"counts "
			  "%lld/%lld, the request has %zu/%zu\"",
			  g->rid, (long long)g->gemm_np, (long long)g->gemm_nt,
			  g->n_input, g->n_input + g->n_out);
		return NULL;
	}
	return strdup(g->gemm_member);
}

static void open_free(struct sgl_open *o)
{
	if (o->pprev) {
		*o->pprev = o->next;
		if (o->next)
			o->next->pprev = o->pprev;
	}
	if (o->call)
		sgl_call_cancel(o->call);
	free(o->buf);
	free(o);
}

static int open_data(void *arg, const char *p, size_t n)
{
	struct sgl_open *o = arg;
	size_t need = o->len + n + 1;

	if (need > OPEN_MAX_BYTES) {
		o->too_big = true;
		return 1;
	}
	if (need > o->cap) {
		size_t cap = o->cap ? o->cap : 4096;
		char *b;

		while (cap < need)
			cap *= 2;
		b = realloc(o->buf, cap);
		if (!b)
			return 1;
		o->buf = b;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
	o->buf[o->len] = '\0';
	return 0;
}

static int status_rc(long status)
{
	switch (status) {
	case 404:
		return -ENOENT;
	case 400:
		return -EINVAL;
	case 501:
		return -EOPNOTSUPP;
	case 503:
		return -ECANCELED;
	default:
		return -EIO;
	}
}

static void open_done(void *arg, int code, long status)
{
	struct sgl_open *o = arg;
	int rc = 0;

	o->call = NULL;
	if (o->too_big)
		rc = -E2BIG;
	else if (code)
		rc = sgl_http_timed_out(code) ? -ETIMEDOUT : -EIO;
	else if (status != 200)
		rc = status_rc(status);
	if (!rc) {
		/* The opening is the auditor's to judge; here only its
		 * shape: one JSON object. */
		cJSON *j =
			o->buf ? cJSON_ParseWithLength(o->buf, o->len) : NULL;

		if (!cJSON_IsObject(j))
			rc = -EPROTO;
		cJSON_Delete(j);
	}
	if (rc)
		engy_info(o->s->host,
			  "event=gemm_open_failed rc=%d status=%ld "
			  "reason=\"%s\"",
			  rc, status,
			  code ? sgl_http_strerror(code) : "serve answer");
	o->done(o->arg, rc, rc ? NULL : o->buf, rc ? 0 : o->len);
	open_free(o);
}

static const struct sgl_call_cb open_cb = { open_data, open_done };

int sgl_gemm_open(void *inst, const char *rid, const char *challenge,
		  size_t len,
		  void (*done)(void *arg, int rc, const char *json, size_t len),
		  void *arg)
{
	struct sgl *s = inst;
	struct sgl_req r = { 0 };
	struct sgl_open *o;
	cJSON *body, *ch;
	char url[1100], *end;
	unsigned long idx;
	int rc;

	if (!rid || !challenge || !done)
		return -EINVAL;
	if (!s->started || s->stopped)
		return -ESHUTDOWN;
	idx = strtoul(rid, &end, 10);
	if (end == rid || *end != '/' || !end[1] || idx >= s->n_serves ||
	    !sgl_rid_ok(end + 1))
		return -ENOENT;
	if (len > CHALLENGE_MAX_BYTES)
		return -EINVAL;
	ch = cJSON_ParseWithLength(challenge, len);
	if (!cJSON_IsObject(ch)) {
		cJSON_Delete(ch);
		return -EINVAL;
	}
	body = cJSON_CreateObject();
	if (!body || !cJSON_AddStringToObject(body, "rid", end + 1)) {
		cJSON_Delete(body);
		cJSON_Delete(ch);
		return -ENOMEM;
	}
	cJSON_AddItemToObject(body, "challenge", ch);
	r.body = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	o = calloc(1, sizeof(*o));
	if (!r.body || !o) {
		free(r.body);
		free(o);
		return -ENOMEM;
	}
	r.len = strlen(r.body);
	snprintf(url, sizeof(url), "%s/engy/gemm_open", s->serves[idx].url);
	r.url = url;
	r.timeout_s =
		(s->serve_http_s > 0 ? s->serve_http_s : s->max_request_s) +
		s->connect_s;
	r.connect_s = s->connect_s;
	r.api_key = s->api_key;
	o->s = s;
	o->done = done;
	o->arg = arg;
	rc = sgl_call_start(s->http, &r, &open_cb, o, &o->call);
	if (rc) {
		free(o);
		return rc < 0 ? rc : -EIO;
	}
	o->next = s->opens;
	if (o->next)
		o->next->pprev = &o->next;
	s->opens = o;
	o->pprev = &s->opens;
	return 0;
}

void sgl_gemm_drop_all(struct sgl *s)
{
	while (s->opens)
		open_free(s->opens);
}
