/* SPDX-License-Identifier: MIT */
/* The one blocking HTTP client (httpc.h says what it does and does not). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "httpc.h"

struct engy_httpc {
	CURL *h;
};

struct sink {
	char *p;
	size_t len, cap, max;
	bool too_big, oom;
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CURLcode init_rc = CURLE_FAILED_INIT;

static void global_init(void)
{
	init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int engy_httpc_global_init(void)
{
	pthread_once(&init_once, global_init);
	return init_rc == CURLE_OK ? 0 : -ENOMEM;
}

struct engy_httpc *engy_httpc_new(void)
{
	struct engy_httpc *c;

	if (engy_httpc_global_init() < 0)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->h = curl_easy_init();
	if (!c->h) {
		free(c);
		return NULL;
	}
	return c;
}

void engy_httpc_free(struct engy_httpc *c)
{
	if (!c)
		return;
	curl_easy_cleanup(c->h);
	free(c);
}

/* Grow by copy and wipe, so no stale copy of the body is left in the heap. */
static size_t on_body(char *d, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;

	n *= size;
	if (n > s->max - s->len) {
		s->too_big = true;
		return 0;
	}
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		char *q;

		while (cap < s->len + n + 1)
			cap = cap > SIZE_MAX / 2 ? s->len + n + 1 : cap * 2;
		q = malloc(cap);
		if (!q) {
			s->oom = true;
			return 0;
		}
		if (s->p) {
			memcpy(q, s->p, s->len);
			explicit_bzero(s->p, s->len);
			free(s->p);
		}
		s->p = q;
		s->cap = cap;
	}
	memcpy(s->p + s->len, d, n);
	s->len += n;
	s->p[s->len] = '\0';
	return n;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
		       curl_off_t un)
{
	const atomic_int *cancel = arg;

	(void)dt, (void)dn, (void)ut, (void)un;
	return atomic_load(cancel) ? 1 : 0;
}

static void wipe_headers(struct curl_slist *hs)
{
	struct curl_slist *l;

	for (l = hs; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(hs);
}

static int add_header(struct curl_slist **hs, const char *line)
{
	struct curl_slist *n = curl_slist_append(*hs, line);

	if (!n)
		return -ENOMEM;
	*hs = n;
	return 0;
}

/* A line break in a header would smuggle in headers or a request. */
static bool one_line(const char *s)
{
	return !strpbrk(s, "\r\n");
}

static int build_headers(const struct engy_httpc_req *rq,
			 struct curl_slist **hs)
{
	const char *const *l;
	char *auth;
	size_t n;
	int rc;

	for (l = rq->headers; l && *l; l++)
		if (!one_line(*l))
			return -EINVAL;
		else if (add_header(hs, *l) < 0)
			return -ENOMEM;
	if (!rq->bearer)
		return 0;
	if (!one_line(rq->bearer))
		return -EINVAL;
	n = strlen(rq->bearer) + sizeof("Authorization: Bearer ");
	auth = malloc(n);
	if (!auth)
		return -ENOMEM;
	snprintf(auth, n, "Authorization: Bearer %s", rq->bearer);
	rc = add_header(hs, auth);
	explicit_bzero(auth, n);
	free(auth);
	return rc;
}

static void set_method(CURL *h, const struct engy_httpc_req *rq)
{
	const char *m = rq->method ? rq->method : rq->body ? "POST" : "GET";

	if (strcmp(m, "GET") == 0 && !rq->body) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
		return;
	}
	if (strcmp(m, "POST") != 0)
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, m);
	if (rq->body || strcmp(m, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS,
				 rq->body ? rq->body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(rq->body ? rq->body_len : 0));
	}
}

static void set_options(CURL *h, const struct engy_httpc_req *rq,
			struct curl_slist *hs, struct sink *s)
{
	curl_off_t max = rq->max_body > (size_t)INT64_MAX
				 ? INT64_MAX
				 : (curl_off_t)rq->max_body;

	curl_easy_setopt(h, CURLOPT_URL, rq->url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(h, CURLOPT_PROTOCOLS,
			 (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, rq->timeout_ms);
	if (rq->connect_timeout_ms > 0)
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
				 rq->connect_timeout_ms);
	/* A declared Content-Length over the cap is refused before the body. */
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, max);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
	if (hs)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
	if (rq->user_agent)
		curl_easy_setopt(h, CURLOPT_USERAGENT, rq->user_agent);
	if (rq->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, rq->ca_file);
	if (rq->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (rq->cancel) {
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)rq->cancel);
	}
	set_method(h, rq);
}

static int fail(struct engy_httpc_resp *rs, int rc, const char *why)
{
	snprintf(rs->err, sizeof(rs->err), "%s", why);
	return rc;
}

static int transfer_error(const struct engy_httpc_req *rq,
			  struct engy_httpc_resp *rs, CURLcode cc,
			  const struct sink *s)
{
	if (rq->cancel && atomic_load(rq->cancel))
		return fail(rs, -ECANCELED, "cancelled");
	if (s->too_big || cc == CURLE_FILESIZE_EXCEEDED) {
		snprintf(rs->err, sizeof(rs->err), "response over %zu bytes",
			 rq->max_body);
		return -EFBIG;
	}
	if (s->oom)
		return fail(rs, -ENOMEM, "out of memory");
	fail(rs, 0, curl_easy_strerror(cc));
	switch (cc) {
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

int engy_httpc_do(struct engy_httpc *c, const struct engy_httpc_req *rq,
		  struct engy_httpc_resp *rs)
{
	struct curl_slist *hs = NULL;
	struct sink s = { .max = rq->max_body };
	CURLcode cc;
	CURL *h;
	int rc;

	memset(rs, 0, sizeof(*rs));
	if (!rq->url || rq->timeout_ms <= 0 || !rq->max_body)
		return fail(rs, -EINVAL,
			    "a request needs a URL, a timeout and a size cap");
	if (engy_httpc_global_init() < 0)
		return fail(rs, -ENOMEM, "libcurl did not initialise");
	if (c) {
		h = c->h;
		curl_easy_reset(h); /* keeps the connection, drops options */
	} else {
		h = curl_easy_init();
		if (!h)
			return fail(rs, -ENOMEM, "out of memory");
	}
	rc = build_headers(rq, &hs);
	if (rc < 0) {
		fail(rs, rc,
		     rc == -EINVAL ? "a header holds a line break"
				   : "out of memory");
		goto out;
	}
	set_options(h, rq, hs, &s);
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &rs->status);
	if (cc != CURLE_OK) {
		rc = transfer_error(rq, rs, cc, &s);
		goto out;
	}
	rs->body = s.p;
	rs->len = s.len;
	s.p = NULL;
	rc = 0;
out:
	if (c) /* the header list must not outlive its use by the handle */
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	else
		curl_easy_cleanup(h);
	wipe_headers(hs);
	if (s.p) {
		explicit_bzero(s.p, s.len);
		free(s.p);
	}
	return rc;
}

void engy_httpc_resp_free(struct engy_httpc_resp *rs)
{
	if (rs->body) {
		explicit_bzero(rs->body, rs->len);
		free(rs->body);
	}
	memset(rs, 0, sizeof(*rs));
}
