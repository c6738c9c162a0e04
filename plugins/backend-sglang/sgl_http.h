/* SPDX-License-Identifier: MIT */
/*
 * libcurl's multi interface on the host's libevent loop: every transfer
 * of an instance shares one CURLM whose sockets and timer are libevent
 * events, so requests never block the loop and need no threads.
 */
#ifndef SGL_HTTP_H
#define SGL_HTTP_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
struct sgl_http;
struct sgl_call;

struct sgl_call_cb {
	/* Response bytes, in order.  Non-zero aborts the transfer (done
	 * then comes with CURLE_WRITE_ERROR). */
	int (*data)(void *arg, const char *p, size_t n);
	/* The transfer is over: once, from the loop (never from inside
	 * libcurl), unless the call was cancelled.  @code is a CURLcode. */
	void (*done)(void *arg, int code, long status);
};

struct sgl_req {
	const char *url;
	char *body; /* taken (freed with the call); NULL: GET */
	size_t len;
	double timeout_s; /* whole transfer; 0: none */
	double connect_s;
	const char *api_key; /* Authorization: Bearer; NULL: none */
};

int sgl_http_new(struct event_base *base, struct sgl_http **out);
/* Drops every call in flight without calling back. */
void sgl_http_free(struct sgl_http *h);

/* sgl_call_start() - begin a request; @r->body is taken even on error. */
int sgl_call_start(struct sgl_http *h, struct sgl_req *r,
		   const struct sgl_call_cb *cb, void *arg,
		   struct sgl_call **out);
/* Stop a call; no callback comes for it afterwards. */
void sgl_call_cancel(struct sgl_call *c);

/* The HTTP status (0 before the headers) and Content-Type ("" if none);
 * meant for the data callback. */
long sgl_call_status(struct sgl_call *c);
const char *sgl_call_ctype(struct sgl_call *c);

/* What a CURLcode means, in words; whether it was a timeout or a
 * refused / unreachable connection. */
const char *sgl_http_strerror(int code);
bool sgl_http_timed_out(int code);
bool sgl_http_unreachable(int code);

#endif /* SGL_HTTP_H */
