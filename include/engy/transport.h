/* SPDX-License-Identifier: MIT */
/*
 * Transport kind: moves requests in and frames out.  One ops table serves
 * every transport; `proto` says which members a plugin implements:
 *   "http" - an HTTP/1.1 server (transport-http): the buyer API, the
 *            provider API, sglang's API in the serve role;
 *   "ws"   - RFC 6455 websockets (transport-ws): persistent client legs
 *            that re-dial (the miner), and a server with path routes (the
 *            gateway).
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

struct engy_http_exchange; /* one request and its reply; transport-owned */

/**
 * struct engy_http_request - a complete request (headers and body read).
 * Valid until the reply ends or on_gone() returns.
 * @path:  the path without the query, percent-decoding not applied.
 * @header: case-insensitive lookup of a request header, NULL if absent.
 */
struct engy_http_request {
	const char *method;
	const char *path;
	const char *query; /* after '?', or NULL */
	const uint8_t *body;
	size_t body_len;
	const char *remote; /* "addr:port" */
	const char *(*header)(const struct engy_http_request *r,
			      const char *name);
	void *priv; /* transport-owned */
};

struct engy_http_handler {
	uint32_t size; /* sizeof(struct engy_http_handler) */
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

struct engy_ws_conn; /* one websocket connection; transport-owned */
struct engy_ws_leg;  /* a persistent client leg; transport-owned */

/* Message types of ws_send() and on_message(). */
enum engy_ws_type {
	ENGY_WS_TEXT = 1, /* UTF-8, validated both ways */
	ENGY_WS_BINARY = 2,
};

/* Close codes (RFC 6455 §7.4.1) the ws transport sends or reports. */
#define ENGY_WS_CLOSE_NORMAL	   1000
#define ENGY_WS_CLOSE_GOING_AWAY   1001
#define ENGY_WS_CLOSE_PROTOCOL	   1002 /* a frame broke the protocol */
#define ENGY_WS_CLOSE_UNSUPPORTED  1003
#define ENGY_WS_CLOSE_NO_STATUS	   1005 /* reported only: close had no code */
#define ENGY_WS_CLOSE_ABNORMAL	   1006 /* reported only: no close frame */
#define ENGY_WS_CLOSE_INVALID_DATA 1007 /* text that is not UTF-8 */
#define ENGY_WS_CLOSE_POLICY	   1008
#define ENGY_WS_CLOSE_TOO_BIG	   1009 /* over max_message_bytes */
#define ENGY_WS_CLOSE_INTERNAL	   1011

/**
 * struct engy_ws_open - what on_open() learns; valid during on_open() only.
 * @path:   server: the request path without the query; client: the path
 *          the leg dialed.
 * @query:  after '?', or NULL (may hold secrets: never log it).
 * @remote: the peer, "addr:port".
 * @header: case-insensitive lookup: server, a request header; client, a
 *          header of the 101 response.  NULL if absent.
 * @leg:    client: the leg this connection belongs to; server: NULL.
 * @opens:  client: how many times the leg has opened, 1 the first time.
 */
struct engy_ws_open {
	const char *path;
	const char *query;
	const char *remote;
	const char *(*header)(const struct engy_ws_open *o, const char *name);
	struct engy_ws_leg *leg;
	uint32_t opens;
	void *priv; /* transport-owned */
};

/*
 * Callbacks of a leg (ws_dial) or a route (ws_listen).  A connection
 * handle is valid from on_open() until on_close() returns; every on_open()
 * that returned 0 is followed by exactly one on_close().
 */
struct engy_ws_handler {
	uint32_t size; /* sizeof(struct engy_ws_handler) */
	/**
	 * on_open() - the handshake completed.  A client leg calls it on
	 * every (re)open, so a flow sends its first frame (hello) here.
	 * Return 0 to keep the connection; a negative errno closes it with
	 * 1008 and no on_close() follows.  Required.
	 */
	int (*on_open)(void *arg, struct engy_ws_conn *c,
		       const struct engy_ws_open *o);
	/**
	 * on_message() - one whole message (fragments joined, text already
	 * UTF-8 checked); @type is enum engy_ws_type.  @data is borrowed.
	 * Required.
	 */
	void (*on_message)(void *arg, struct engy_ws_conn *c, int type,
			   const uint8_t *data, size_t len);
	/**
	 * on_close() - the connection ended; @c is dead once this returns.
	 * @code: the code of the peer's close frame (1005 when it had none);
	 * when this side failed the connection, the code it sent (1002,
	 * 1007, 1009); 1006 when it ended without a close frame (reset,
	 * ping timeout, close timeout).  @reason: UTF-8, never NULL.  A
	 * client leg re-dials afterwards unless ws_leg_close() was called.
	 * Required.
	 */
	void (*on_close)(void *arg, struct engy_ws_conn *c, int code,
			 const char *reason);
	/**
	 * on_dial_error() - client legs: a dial failed before on_open()
	 * (@err: -ECONNREFUSED, -ETIMEDOUT, -EHOSTUNREACH, -ENOENT for a name
	 * that does not resolve, -EKEYREJECTED for a certificate that failed
	 * verification, -EPROTO for a bad handshake reply; @status: the HTTP
	 * status when the server refused the upgrade, else 0).  The leg
	 * re-dials with backoff unless the callback calls ws_leg_close().
	 * Optional.
	 */
	void (*on_dial_error)(void *arg, struct engy_ws_leg *leg, int err,
			      int status);
	/**
	 * on_get() - server routes: a plain GET (no Upgrade header) under
	 * the route's prefix, for a small document on the websocket port
	 * (the gateway's GET /gw/meta, which miners fetch from the host and
	 * port of their ws URL).  @path is the request path without the
	 * query.  Set *@status (200..599) and *@body to a malloc'd JSON text
	 * of *@len bytes (the transport frees it; NULL for none).  Return 0,
	 * or -ENOENT for a 404.  Optional (appended in 1.0): without it such
	 * a GET gets 426.
	 */
	int (*on_get)(void *arg, const char *path, int *status, char **body,
		      size_t *len);
};

struct engy_transport_ops {
	uint32_t size;	   /* sizeof(struct engy_transport_ops) */
	const char *proto; /* "http" or "ws"; required */

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

	/* --- proto "ws" -------------------------------------------------- */
	/**
	 * ws_dial() - open a persistent client leg to @url ("ws://" or
	 * "wss://host[:port][/path][?query]").  It dials at once and
	 * re-dials after every close or failed dial, with jittered
	 * exponential backoff (reconnect_min_ms doubling up to
	 * reconnect_max_ms; a leg that stayed open resets it).  @headers:
	 * extra request headers, name, value, ..., NULL (may be NULL; never
	 * logged).  @h and @arg are borrowed until ws_leg_close().  Returns
	 * -EINVAL for a bad URL or header (logged), -ESHUTDOWN after stop().
	 */
	int (*ws_dial)(void *inst, const char *url, const char *const *headers,
		       const struct engy_ws_handler *h, void *arg,
		       struct engy_ws_leg **out);
	/**
	 * ws_leg_close() - stop the leg: no more dials and no more callbacks
	 * to its handler (not even on_close); an open connection is closed
	 * with 1001 in the background.  @leg is freed.  Safe from the
	 * leg's own callbacks.
	 */
	void (*ws_leg_close)(void *inst, struct engy_ws_leg *leg);
	/**
	 * ws_listen() - serve upgrades whose path equals @prefix or starts
	 * with @prefix followed by '/' (longest prefix wins; "/" is the
	 * catch-all) on the `listen` address.  @h is borrowed for the
	 * instance's lifetime.  -EINVAL when no `listen` address is set.
	 */
	int (*ws_listen)(void *inst, const char *prefix,
			 const struct engy_ws_handler *h, void *arg);
	/**
	 * ws_send() - queue one message (@type enum engy_ws_type).  Returns
	 * 0, -EILSEQ for text that is not UTF-8, -EMSGSIZE over
	 * max_message_bytes, -ENOBUFS when more than max_send_buffer_bytes
	 * wait unsent (a stuck peer), -ENOTCONN once closing.
	 */
	int (*ws_send)(void *inst, struct engy_ws_conn *c, int type,
		       const void *data, size_t len);
	/**
	 * ws_close() - start the close handshake with @code (1000-1003,
	 * 1007-1011, 3000-4999) and @reason (UTF-8, at most 123 bytes; may be
	 * NULL).  on_close() follows when the peer answers or close_timeout_s
	 * passes.  Closing a leg's connection makes the leg re-dial (what a
	 * `reconnect` frame asks for).  -EINVAL for a bad code or reason,
	 * -ENOTCONN when already closing.
	 */
	int (*ws_close)(void *inst, struct engy_ws_conn *c, int code,
			const char *reason);
	/* A pointer of the caller's own per connection (NULL at first). */
	void (*ws_set_user)(void *inst, struct engy_ws_conn *c, void *user);
	void *(*ws_user)(void *inst, struct engy_ws_conn *c);

	/* --- appended in 1.1 ---------------------------------------------- */
	/**
	 * client_tls() - the trust settings of this instance's client legs:
	 * *@ca_file (borrowed for the instance's life; NULL = the system
	 * roots) and *@insecure (non-zero: certificates not verified), so a
	 * role's own HTTPS requests to the same peer trust what its legs
	 * trust.  Optional.
	 */
	int (*client_tls)(void *inst, const char **ca_file, int *insecure);

	/* --- appended in 1.2 ---------------------------------------------- */
	/**
	 * ws_set_max_message() - the largest message @c may receive from now
	 * on, in bytes (never above the instance's max_message_bytes; 0: back
	 * to it).  A frame that would take the message past it closes the
	 * connection with 1009 at once.  A server lowers it until the peer
	 * has said who it is, so an unauthenticated peer cannot make it
	 * buffer a large message.  Optional.
	 */
	int (*ws_set_max_message)(void *inst, struct engy_ws_conn *c,
				  size_t max);
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_TRANSPORT_H */
