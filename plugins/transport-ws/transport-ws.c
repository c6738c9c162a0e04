/* SPDX-License-Identifier: MIT */
/*
 * transport-ws: RFC 6455 websockets on libevent bufferevents, OpenSSL for
 * wss://.  Client legs for miners (ws_dial: re-dial with backoff, ping
 * keepalive) and a routed server for the gateway (ws_listen), sharing the
 * frame codec of lib/ws/ws_frame.c.  This file holds the descriptor, the
 * options, the instance's life and the ops table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ws_int.h"

#define OFF(f) offsetof(struct ws_conf, f)

static const struct engy_opt ws_opts[] = {
	{ "listen", ENGY_OPT_STR, 0, OFF(listen), NULL, "ENGY_WS_LISTEN", 0, 0,
	  "serve websockets on HOST:PORT, [V6]:PORT or :PORT (port 0: any "
	  "free port, logged); unset: client legs only" },
	{ "ca_file", ENGY_OPT_STR, 0, OFF(ca_file), NULL, "ENGY_WS_CA_FILE", 0,
	  0,
	  "PEM CA bundle that wss:// servers are verified against "
	  "(default: the system store)" },
	{ "insecure", ENGY_OPT_BOOL, 0, OFF(insecure), "false",
	  "ENGY_WS_INSECURE", 0, 0,
	  "do not verify wss:// certificates (testing only; logged)" },
	{ "tls_cert", ENGY_OPT_STR, 0, OFF(tls_cert), NULL, NULL, 0, 0,
	  "PEM certificate chain: the listener speaks wss://" },
	{ "tls_key", ENGY_OPT_STR, 0, OFF(tls_key), NULL, NULL, 0, 0,
	  "PEM private key of tls_cert" },
	{ "ping_interval_s", ENGY_OPT_INT, 0, OFF(ping_interval_s), "15",
	  "ENGY_WS_PING_INTERVAL_S", 0, 3600,
	  "send a ping this often on every open connection (0: never)" },
	{ "ping_timeout_s", ENGY_OPT_INT, 0, OFF(ping_timeout_s), "60",
	  "ENGY_WS_PING_TIMEOUT_S", 0, 86400,
	  "drop a connection silent this long, pongs included (0: never)" },
	{ "handshake_timeout_s", ENGY_OPT_INT, 0, OFF(handshake_timeout_s),
	  "10", NULL, 1, 600, "connect, TLS and upgrade must finish within" },
	{ "close_timeout_s", ENGY_OPT_INT, 0, OFF(close_timeout_s), "5", NULL,
	  1, 600, "wait this long for the peer's close frame, and to flush" },
	{ "reconnect_min_ms", ENGY_OPT_INT, 0, OFF(reconnect_min_ms), "500",
	  "ENGY_WS_RECONNECT_MIN_MS", 10, 600000,
	  "first re-dial delay of a leg (doubles per failure, +-25% jitter)" },
	{ "reconnect_max_ms", ENGY_OPT_INT, 0, OFF(reconnect_max_ms), "30000",
	  "ENGY_WS_RECONNECT_MAX_MS", 10, 3600000, "re-dial delay cap" },
	{ "max_message_bytes", ENGY_OPT_INT, 0, OFF(max_message_bytes),
	  "67108864", "ENGY_WS_MAX_MESSAGE_BYTES", 1024, 1073741824,
	  "largest message either way; bigger ones close with 1009" },
	{ "max_send_buffer_bytes", ENGY_OPT_INT, 0, OFF(max_send_buffer_bytes),
	  "134217728", NULL, 65536, 4294967296,
	  "ws_send() fails with ENOBUFS past this many unsent bytes" },
	{ "max_connections", ENGY_OPT_INT, 0, OFF(max_connections), "4096",
	  "ENGY_WS_MAX_CONNECTIONS", 1, 1000000,
	  "server connections at once; more get 503" },
	ENGY_OPT_END
};

static int bad_conf(const struct engy_host *h, const char *why)
{
	engy_err(h, "event=ws_config_error why=\"%s\"", why);
	return -EINVAL;
}

static int check_conf(const struct engy_host *h, const struct ws_conf *cf)
{
	if (cf->ping_interval_s && cf->ping_timeout_s &&
	    cf->ping_timeout_s <= cf->ping_interval_s)
		return bad_conf(h,
				"ping_timeout_s must exceed ping_interval_s");
	if (cf->reconnect_max_ms < cf->reconnect_min_ms)
		return bad_conf(h,
				"reconnect_max_ms is below reconnect_min_ms");
	if (!cf->tls_cert != !cf->tls_key)
		return bad_conf(h, "tls_cert and tls_key go together");
	if (cf->tls_cert && !cf->listen)
		return bad_conf(h, "tls_cert without a listen address");
	if (cf->ca_file && cf->insecure)
		return bad_conf(h,
				"ca_file and insecure contradict each other");
	return 0;
}

static void metric(struct ws_inst *in, int type, const char *name,
		   const char *help, const char *labels, struct engy_metric **m)
{
	if (in->host->metric(in->host, type, name, help, labels, NULL, 0, m) <
	    0)
		*m = NULL;
}

static void metrics_init(struct ws_inst *in)
{
	struct ws_metrics *m = &in->m;

	metric(in, ENGY_METRIC_GAUGE, "engy_ws_connections",
	       "open websocket connections", "side=\"client\"", &m->open[0]);
	metric(in, ENGY_METRIC_GAUGE, "engy_ws_connections",
	       "open websocket connections", "side=\"server\"", &m->open[1]);
	metric(in, ENGY_METRIC_COUNTER, "engy_ws_opened_total",
	       "websocket connections opened", "side=\"client\"",
	       &m->opened[0]);
	metric(in, ENGY_METRIC_COUNTER, "engy_ws_opened_total",
	       "websocket connections opened", "side=\"server\"",
	       &m->opened[1]);
	metric(in, ENGY_METRIC_COUNTER, "engy_ws_messages_total",
	       "websocket messages", "dir=\"in\"", &m->msgs_in);
	metric(in, ENGY_METRIC_COUNTER, "engy_ws_messages_total",
	       "websocket messages", "dir=\"out\"", &m->msgs_out);
	metric(in, ENGY_METRIC_COUNTER, "engy_ws_bytes_total",
	       "websocket message payload bytes", "dir=\"in\"", &m->bytes_in);
	metric(in, ENGY_METRIC_COUNTER, "engy_ws_bytes_total",
	       "websocket message payload bytes", "dir=\"out\"", &m->bytes_out);
	metric(in, ENGY_METRIC_COUNTER, "engy_ws_reconnects_total",
	       "re-dials of client legs", NULL, &m->reconnects);
	metric(in, ENGY_METRIC_COUNTER, "engy_ws_dial_failures_total",
	       "client dials that failed before opening", NULL,
	       &m->dial_failures);
	metric(in, ENGY_METRIC_COUNTER, "engy_ws_refused_total",
	       "upgrade requests the server refused", NULL, &m->refused);
	metric(in, ENGY_METRIC_COUNTER, "engy_ws_pings_missed_total",
	       "pings still unanswered when the next was due", NULL,
	       &m->pings_missed);
	metric(in, ENGY_METRIC_COUNTER, "engy_ws_ping_timeouts_total",
	       "connections dropped for silence", NULL, &m->ping_timeouts);
	metric(in, ENGY_METRIC_COUNTER, "engy_ws_protocol_errors_total",
	       "connections failed for a protocol error (1002/1007/1009)", NULL,
	       &m->protocol_errors);
}

/* Option strings are host-owned: keep copies. */
static int dup_opt(const char **dst, const char *src)
{
	*dst = src ? strdup(src) : NULL;
	return src && !*dst ? -ENOMEM : 0;
}

static void ws_destroy(void *inst);

static int ws_create(const struct engy_host *host, const void *conf, void **out)
{
	const struct ws_conf *cf = conf;
	struct ws_inst *in;
	int rc;

	rc = check_conf(host, cf);
	if (rc < 0)
		return rc;
	in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	in->host = host;
	in->conf = *cf;
	in->conf.listen = in->conf.ca_file = NULL;
	in->conf.tls_cert = in->conf.tls_key = NULL;
	rc = 0;
	if (dup_opt(&in->conf.listen, cf->listen) ||
	    dup_opt(&in->conf.ca_file, cf->ca_file) ||
	    dup_opt(&in->conf.tls_cert, cf->tls_cert) ||
	    dup_opt(&in->conf.tls_key, cf->tls_key))
		rc = -ENOMEM;
	if (rc == 0)
		rc = ws_tls_init(in);
	if (rc < 0) {
		ws_destroy(in);
		return rc;
	}
	in->base = host->evbase(host);
	metrics_init(in);
	*out = in;
	return 0;
}

static int ws_start(void *inst)
{
	struct ws_inst *in = inst;

	if (!in->base)
		in->base = in->host->evbase(in->host);
	if (!in->base)
		return bad_conf(in->host, "the host has no event loop");
	in->stopped = false;
	return ws_server_start(in);
}

static void ws_stop(void *inst)
{
	struct ws_inst *in = inst;

	in->stopped = true;
	ws_server_stop(in);
	ws_legs_stop(in);
}

static void ws_destroy(void *inst)
{
	struct ws_inst *in = inst;
	struct ws_conn *c;

	ws_server_stop(in);
	/* Legs first: they detach their connections, freed next. */
	ws_legs_free(in);
	while ((c = in->conns)) {
		c->busy = 0;
		ws_conn_detach(c);
		ws_conn_free(c);
	}
	ws_routes_free(in);
	ws_tls_free(in);
	free((char *)in->conf.listen);
	free((char *)in->conf.ca_file);
	free((char *)in->conf.tls_cert);
	free((char *)in->conf.tls_key);
	free(in);
}

static int op_dial(void *inst, const char *url, const char *const *headers,
		   const struct engy_ws_handler *h, void *arg,
		   struct engy_ws_leg **out)
{
	struct ws_inst *in = inst;

	if (!in->base)
		in->base = in->host->evbase(in->host);
	if (!in->base)
		return -EINVAL;
	return ws_dial(inst, url, headers, h, arg, out);
}

static int op_send(void *inst, struct engy_ws_conn *c, int type,
		   const void *data, size_t len)
{
	if (!c)
		return -EINVAL;
	return ws_conn_send((struct ws_conn *)c, type, data, len);
}

static int op_close(void *inst, struct engy_ws_conn *c, int code,
		    const char *reason)
{
	if (!c)
		return -EINVAL;
	return ws_conn_close((struct ws_conn *)c, code, reason);
}

static void op_set_user(void *inst, struct engy_ws_conn *c, void *user)
{
	if (c)
		((struct ws_conn *)c)->user = user;
}

static void *op_user(void *inst, struct engy_ws_conn *c)
{
	return c ? ((struct ws_conn *)c)->user : NULL;
}

static int op_client_tls(void *inst, const char **ca_file, int *insecure)
{
	struct ws_inst *in = inst;

	if (ca_file)
		*ca_file = in->conf.ca_file;
	if (insecure)
		*insecure = in->conf.insecure;
	return 0;
}

static int op_set_max_message(void *inst, struct engy_ws_conn *c, size_t max)
{
	struct ws_inst *in = inst;
	size_t top = (size_t)in->conf.max_message_bytes;

	if (!c)
		return -EINVAL;
	((struct ws_conn *)c)->parser.max_message =
		max && max < top ? max : top;
	return 0;
}

static const struct engy_transport_ops ws_ops = {
	.size = sizeof(struct engy_transport_ops),
	.proto = "ws",
	.ws_dial = op_dial,
	.ws_leg_close = ws_leg_close,
	.ws_listen = ws_listen,
	.ws_send = op_send,
	.ws_close = op_close,
	.ws_set_user = op_set_user,
	.ws_user = op_user,
	.client_tls = op_client_tls,
	.ws_set_max_message = op_set_max_message,
};

ENGY_PLUGIN(.kind = ENGY_KIND_TRANSPORT, .name = "transport-ws",
	    .version = PACKAGE_VERSION,
	    .description = "RFC 6455 websockets: client legs that re-dial, "
			   "and a routed server (ws:// and wss://)",
	    .opts = ws_opts, .conf_size = sizeof(struct ws_conf),
	    .create = ws_create, .start = ws_start, .stop = ws_stop,
	    .destroy = ws_destroy, .ops = &ws_ops);
