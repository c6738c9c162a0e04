/* SPDX-License-Identifier: MIT */
/*
 * transport-http internals: the instance, its connections and exchanges.
 * Request heads are parsed by lib/ws/http_head.c.
 */
#ifndef ENGY_TRANSPORT_HTTP_INT_H
#define ENGY_TRANSPORT_HTTP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <engy/plugin.h>
#include <engy/transport.h>

#include "http_head.h"

#define TH_MAX_HEAD	  (16 * 1024) /* request line + headers */
#define TH_MAX_HEADERS	  100
#define TH_MAX_TARGET	  8192
#define TH_MAX_CHUNK_LINE 1024
#define TH_LINGER_MS	  2000 /* drain after a closing reply */
#define TH_FLUSH_MS	  2000 /* destroy: finish writing queued replies */

/* --- the instance ------------------------------------------------------- */

struct th_conf {
	struct engy_strv listen;
	int64_t max_body;
	int64_t timeout_s;
	int64_t max_connections;
	int64_t max_idle_per_client; /* idle keep-alives per address */
};

struct th_route {
	char *prefix;
	size_t len;
	const struct engy_http_handler *h;
	void *arg;
};

struct th_status_metric {
	int status;
	struct engy_metric *m;
};

struct th_conn;
struct evbuffer;
struct evconnlistener;
struct sockaddr;

struct th_inst {
	const struct engy_host *host;
	struct event_base *base;
	struct th_conf conf;
	struct evconnlistener **lis;
	size_t n_lis;
	struct th_route *routes;
	size_t n_routes;
	struct th_conn *conns; /* every open connection */
	unsigned n_conns;      /* counted against max_connections */
	unsigned n_inflight;   /* exchanges dispatched, not ended */
	bool stopping;
	struct th_status_metric by_status[32];
	size_t n_status;
	struct engy_metric *m_inflight, *m_conns, *m_gone, *m_refused;
	struct engy_metric *m_reclaimed;
};

struct engy_http_exchange {
	struct th_conn *c;
	struct engy_http_request r;
	struct engy_http_head head;
	char *path; /* target up to '?' */
	uint8_t *body;
	size_t body_len, body_cap;
	const struct th_route *route;
	bool keepalive;
	bool is_head; /* HEAD: no body in the reply */
	bool streaming;
	bool chunked;	 /* streamed with chunked framing */
	bool dispatched; /* counted in n_inflight */
	bool gone;	 /* the client left: ops refuse it */
};

/* http_conn.c */
void th_conn_accept(struct th_inst *ti, int fd, const struct sockaddr *sa,
		    int salen);
void th_conn_free(struct th_conn *c);
/*
 * Write what the connections still have queued, for up to @ms in all:
 * destroy() comes once the flows have drained, when the last replies may
 * still sit in output buffers (the loop no longer runs to send them).
 */
void th_conn_flush_all(struct th_inst *ti, int ms);
/* Close the idle keep-alive connections (stop()). */
void th_conn_close_idle(struct th_inst *ti);
/* Is @x still @c's exchange?  (No dereference of @x.) */
bool th_conn_holds(const struct th_conn *c, const struct engy_http_exchange *x);
struct th_inst *th_conn_inst(const struct th_conn *c);
/* The output buffer of a live exchange's connection, or NULL. */
struct evbuffer *th_conn_output(struct engy_http_exchange *x);
/* The exchange's reply is complete: free it, go on with the connection. */
void th_conn_end(struct engy_http_exchange *x);

/* transport-http.c: dispatch and accounting the connection code calls. */
void th_dispatch(struct th_inst *ti, struct engy_http_exchange *x);
void th_count_status(struct th_inst *ti, int status);
/* th_reason() - the reason phrase of @status ("Unknown" if none). */
const char *th_reason(int status);
void th_exchange_gone(struct th_inst *ti, struct engy_http_exchange *x);
/* A reply the transport writes itself (errors); ends @x. */
void th_error_reply(struct engy_http_exchange *x, int status, const char *msg);

#endif /* ENGY_TRANSPORT_HTTP_INT_H */
