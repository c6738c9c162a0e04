/* SPDX-License-Identifier: MIT */
/*
 * The one blocking HTTP client (libcurl easy) for worker threads and
 * tools: a request with its own timeouts, a response size cap that aborts
 * the transfer past it, TLS options, an optional bearer token.  Nothing is
 * logged here; the token and every header line are wiped from memory once
 * sent, and a response body is wiped when it is freed or grown.
 *
 * Redirects are refused: a 3xx comes back as it is (its status and body),
 * never followed, so a request reaches only the URL its caller named.
 * Only http:// and https:// are dialled.  Content-Encoding is never asked
 * for, so the cap counts the bytes the caller gets.
 *
 * Thread safety: engy_httpc_do() with a NULL client may run on any number
 * of threads at once; a struct engy_httpc (a kept connection) is used by
 * one thread at a time.  libcurl's global init is done once per process
 * image by engy_httpc_global_init() (called by every request too, so a
 * caller that skips it still works; call it on the main thread before
 * workers start where libcurl is older than 7.84, whose init is not
 * thread-safe).  It is never undone: libcurl's own refcount keeps other
 * users (backend-sglang's multi handle) unaffected.
 */
#ifndef ENGY_HTTPC_H
#define ENGY_HTTPC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct engy_httpc_req {
	const char
		*method; /* "GET", "POST", other; NULL: GET, POST with a body */
	const char *url; /* http:// or https:// */
	const char *const
		*headers; /* "Name: value" lines, NULL-terminated, or NULL */
	const char *body; /* request body (POST), body_len bytes, or NULL */
	size_t body_len;
	long timeout_ms;	 /* the whole request, > 0 */
	long connect_timeout_ms; /* 0: bounded by timeout_ms only */
	size_t max_body; /* response cap in bytes, > 0; one byte more is -EFBIG */
	const char *ca_file;	/* NULL: the system's CA store */
	bool insecure;		/* skip certificate and host name checks */
	const char *bearer;	/* "Authorization: Bearer <bearer>", or NULL */
	const char *user_agent; /* NULL: no User-Agent header */
	const atomic_int *cancel; /* non-zero aborts the transfer, or NULL */
};

struct engy_httpc_resp {
	long status; /* the HTTP status, 0 when none came */
	char *body;  /* NUL-terminated, len bytes; NULL when empty */
	size_t len;
	char err[128]; /* one line when the call failed, else "" */
};

/* A kept connection (keep-alive between calls); one thread at a time. */
struct engy_httpc;

int engy_httpc_global_init(void);
struct engy_httpc *engy_httpc_new(void);
void engy_httpc_free(struct engy_httpc *c);

/*
 * engy_httpc_do() - send @rq on @c (NULL: a fresh connection) and read the
 * answer into @rs (zeroed first; free it with engy_httpc_resp_free()).
 * Returns 0 when a whole answer came, whatever its status (a non-2xx keeps
 * its body), or a negative errno with rs->err saying why: -EINVAL (a bad
 * request), -ENOMEM, -ECANCELED ("cancelled"), -EFBIG ("response over N
 * bytes", declared or read), -ETIMEDOUT, -ECONNREFUSED, -EHOSTUNREACH (no
 * such host), -EIO (anything else; rs->err is libcurl's text for it).
 */
int engy_httpc_do(struct engy_httpc *c, const struct engy_httpc_req *rq,
		  struct engy_httpc_resp *rs);
void engy_httpc_resp_free(struct engy_httpc_resp *rs);

#endif /* ENGY_HTTPC_H */
