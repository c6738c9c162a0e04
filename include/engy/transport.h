/* SPDX-License-Identifier: MIT */
/*
 * Transport kind: moves requests in and frames out.  One ops table serves
 * every transport; `proto` says which members a plugin implements:
 *   "http" - an HTTP/1.1 server (transport-http): the buyer API, the
 *            provider API, sglang's API in the serve role;
 *   "ws"   - websocket legs (transport-ws): its members are appended by
 *            the work that builds it.
 * Everything runs on the loop thread.
 */
#ifndef ENGY_TRANSPORT_H
#define ENGY_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include <engy/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct engy_http_exchange;	/* one request and its reply; transport-owned */

/**
 * struct engy_http_request - a complete request (headers and body read).
 * Valid until the reply ends or on_gone() returns.
 * @path:  the path without the query, percent-decoding not applied.
 * @header: case-insensitive lookup of a request header, NULL if absent.
 */
struct engy_http_request {
	const char *method;
	const char *path;
	const char *query;		/* after '?', or NULL */
	const uint8_t *body;
	size_t body_len;
	const char *remote;		/* "addr:port" */
	const char *(*header)(const struct engy_http_request *r,
			      const char *name);
	void *priv;			/* transport-owned */
};

struct engy_http_handler {
	uint32_t size;			/* sizeof(struct engy_http_handler) */
	/**
	 * on_request() - a request under the route's prefix.  Reply at once
	 * or later through the ops; return 0.  Returning -ENOENT makes the
	 * transport answer 404, any other negative errno 500.  Required.
	 */
	int (*on_request)(void *arg, struct engy_http_exchange *x,
			  const struct engy_http_request *r);
	/**
	 * on_gone() - the client closed or timed out before the reply
	 * ended; @x is dead once this returns.  Optional.
	 */
	void (*on_gone)(void *arg, struct engy_http_exchange *x);
};

struct engy_transport_ops {
	uint32_t size;			/* sizeof(struct engy_transport_ops) */
	const char *proto;		/* "http" or "ws"; required */

	/* --- proto "http" ------------------------------------------------ */
	/**
	 * http_route() - send requests whose path equals @prefix, or starts
	 * with @prefix followed by '/', to @h (longest prefix wins; "/" is
	 * the catch-all).  @h is borrowed for the instance's lifetime.
	 */
	int (*http_route)(void *inst, const char *prefix,
			  const struct engy_http_handler *h, void *arg);
	/**
	 * http_reply() - a whole reply.  @headers: name, value, ..., NULL
	 * (may be NULL).  Ends the exchange.
	 */
	int (*http_reply)(void *inst, struct engy_http_exchange *x, int status,
			  const char *content_type, const char *const *headers,
			  const void *body, size_t len);
	/* A streamed reply (SSE and the like): begin, write..., end. */
	int (*http_stream_begin)(void *inst, struct engy_http_exchange *x,
				 int status, const char *content_type,
				 const char *const *headers);
	int (*http_stream_write)(void *inst, struct engy_http_exchange *x,
				 const void *data, size_t len);
	void (*http_stream_end)(void *inst, struct engy_http_exchange *x);
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_TRANSPORT_H */
