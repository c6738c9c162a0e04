/* SPDX-License-Identifier: MIT */
/*
 * transport-ws internals shared by its files: the instance (options, TLS
 * contexts, routes, legs, connections), one connection (both sides), and
 * one client leg.
 */
#ifndef TRANSPORT_WS_INT_H
#define TRANSPORT_WS_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <netdb.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <openssl/ssl.h>

#include <engy/engy.h>

#include "url.h"
#include "ws_frame.h"
#include "ws_handshake.h"

/* A request or reply head longer than this is refused. */
#define WS_HEAD_MAX (16 * 1024)
/* A leg that stayed open this long starts its backoff afresh. */
#define WS_STABLE_MS 5000

struct ws_conf {
	const char *listen;
	const char *ca_file;
	bool insecure;
	const char *tls_cert;
	const char *tls_key;
	int64_t ping_interval_s;
	int64_t ping_timeout_s;
	int64_t handshake_timeout_s;
	int64_t close_timeout_s;
	int64_t reconnect_min_ms;
	int64_t reconnect_max_ms;
	int64_t max_message_bytes;
	int64_t max_send_buffer_bytes;
	int64_t max_connections;
};

struct ws_metrics {
	struct engy_metric *open[2];   /* [server] gauges */
	struct engy_metric *opened[2]; /* [server] counters */
	struct engy_metric *msgs_in, *msgs_out, *bytes_in, *bytes_out;
	struct engy_metric *reconnects, *dial_failures, *refused;
	struct engy_metric *pings_missed, *ping_timeouts, *protocol_errors;
};

struct ws_route {
	char *prefix;
	size_t len;
	const struct engy_ws_handler *h;
	void *arg;
	struct ws_route *next;
};

struct ws_conn;
struct ws_leg;

struct ws_inst {
	const struct engy_host *host;
	struct ws_conf conf; /* strings copied */
	struct event_base *base;
	SSL_CTX *cli_tls, *srv_tls;
	struct evconnlistener *listener;
	struct ws_route *routes;
	struct ws_conn *conns;
	struct ws_leg *legs;
	uint64_t next_id;
	size_t n_server; /* server connections, any state */
	bool stopped;
	struct ws_metrics m;
};

enum ws_state {
	WS_DIALING,   /* client: TCP connect and TLS */
	WS_HANDSHAKE, /* the HTTP upgrade */
	WS_OPEN,
	WS_CLOSING, /* our close frame sent, waiting for the peer's */
	WS_DONE,    /* ended; flushing before the socket closes */
};

struct ws_conn {
	struct ws_inst *in;
	uint64_t id;
	bool server;
	enum ws_state state;
	struct bufferevent *bev;
	struct engy_ws_parser parser;
	const struct engy_ws_handler *h; /* NULL: nobody listens */
	void *arg;
	void *user;
	struct ws_leg *leg;  /* client */
	struct event *timer; /* handshake / close timeout */
	struct event *ping;
	struct addrinfo *ai_next;      /* client: next address */
	struct engy_http_head head;    /* during on_open */
	char key[ENGY_WS_KEY_LEN + 1]; /* client */
	char remote[64];
	bool notify; /* on_open returned 0: on_close owed */
	bool ping_unanswered;
	bool half_closed; /* lingering: our FIN sent */
	int busy;	  /* callbacks on the stack */
	bool dead;	  /* free once busy drops to 0 */
	uint64_t opened_ms;
	struct ws_conn *next, **pprev;
};

struct ws_resolve;

struct ws_leg {
	struct ws_inst *in;
	uint64_t id;
	struct engy_url url;
	char **headers; /* name, value, ..., NULL */
	const struct engy_ws_handler *h;
	void *arg;
	struct ws_conn *conn;	/* dialing or open */
	struct ws_resolve *res; /* a lookup in flight */
	struct addrinfo *ai;	/* the addresses being tried */
	struct event *retry;
	unsigned failures;
	uint32_t opens;
	int busy;
	bool closed;
	struct ws_leg *next, **pprev;
};

/* ws_conn.c */
struct ws_conn *ws_conn_new(struct ws_inst *in, bool server);
void ws_conn_hold(struct ws_conn *c);
void ws_conn_release(struct ws_conn *c);
void ws_conn_free(struct ws_conn *c);
int ws_conn_opened(struct ws_conn *c, const char *path, const char *query);
int ws_conn_send(struct ws_conn *c, int opcode, const void *data, size_t len);
int ws_conn_close(struct ws_conn *c, int code, const char *reason);
void ws_conn_end(struct ws_conn *c, int code, const char *reason);
void ws_conn_linger(struct ws_conn *c);
void ws_conn_detach(struct ws_conn *c);
uint64_t ws_now_ms(void);
void ws_nodelay(evutil_socket_t fd);

/* ws_client.c */
int ws_dial(void *inst, const char *url, const char *const *headers,
	    const struct engy_ws_handler *h, void *arg,
	    struct engy_ws_leg **out);
void ws_leg_close(void *inst, struct engy_ws_leg *leg);
void ws_leg_conn_ended(struct ws_leg *leg, struct ws_conn *c);
void ws_leg_dial_failed(struct ws_leg *leg, int err, int status,
			const char *why);
void ws_legs_stop(struct ws_inst *in);
void ws_legs_free(struct ws_inst *in);

/* ws_server.c */
int ws_listen(void *inst, const char *prefix, const struct engy_ws_handler *h,
	      void *arg);
int ws_server_start(struct ws_inst *in);
void ws_server_stop(struct ws_inst *in);
void ws_routes_free(struct ws_inst *in);

/* ws_tls.c */
int ws_tls_init(struct ws_inst *in);
void ws_tls_free(struct ws_inst *in);
SSL *ws_tls_client(struct ws_inst *in, const struct engy_url *u);
int ws_tls_verify_error(struct bufferevent *bev, const char **why);

/* Metrics that may be absent (a host without them). */
static inline void ws_count(struct ws_inst *in, struct engy_metric *m, double v)
{
	if (m)
		in->host->metric_add(m, v);
}

#endif /* TRANSPORT_WS_INT_H */
