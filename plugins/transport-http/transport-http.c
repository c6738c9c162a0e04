/* SPDX-License-Identifier: MIT */
/*
 * transport-http: an HTTP/1.1 server for the flows (the serve role's
 * sglang API, the buyer and provider APIs).  Routes by longest path
 * prefix; a handler answers at once or later with a whole reply or a
 * streamed one (chunked), and hears on_gone() when its client leaves
 * first.  Connection handling is in http_conn.c, the head parser is
 * lib/ws/http_head.c.  No request or reply content is ever logged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include <engy/plugin.h>
#include <engy/transport.h>

#include "http_int.h"

#define OFF(f) offsetof(struct th_conf, f)

static const struct engy_opt th_opts[] = {
	{ "listen", ENGY_OPT_STR_LIST, 0, OFF(listen), "127.0.0.1:30000",
	  "ENGY_HTTP_LISTEN", 0, 0,
	  "addresses to listen on, \"addr:port\" or \"[v6]:port\" (port 0: any)" },
	{ "max_body", ENGY_OPT_INT, 0, OFF(max_body), "16777216", NULL, 0,
	  (int64_t)1 << 32, "largest request body in bytes (413 above)" },
	{ "timeout_s", ENGY_OPT_INT, 0, OFF(timeout_s), "30", NULL, 1, 86400,
	  "seconds to receive a whole request, to idle between requests, "
	  "and for a stalled write" },
	{ "max_connections", ENGY_OPT_INT, 0, OFF(max_connections), "1024",
	  NULL, 1, 1 << 20,
	  "open connections at most: at the limit the oldest idle one is "
	  "closed for a new one, else 503" },
	{ "max_idle_per_client", ENGY_OPT_INT, 0, OFF(max_idle_per_client),
	  "64", NULL, 1, 1 << 20,
	  "idle keep-alive connections per client address: a new one "
	  "past it closes that address's oldest idle one" },
	ENGY_OPT_END
};

/* "a.b.c.d:port" or "[v6]:port"; port 0 binds any free port. */
static int parse_addr(const char *s, struct sockaddr_storage *ss, int *len)
{
	char host[64], *end;
	const char *colon;
	unsigned long port;
	size_t hl;

	memset(ss, 0, sizeof(*ss));
	if (!s || !(colon = strrchr(s, ':')) || !colon[1])
		return -EINVAL;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (*end || errno || port > 65535 || colon[1] == '-' || colon[1] == '+')
		return -EINVAL;
	hl = (size_t)(colon - s);
	if (s[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		if (hl < 3 || s[hl - 1] != ']' || hl - 2 >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, hl - 2);
		host[hl - 2] = '\0';
		if (evutil_inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*len = (int)sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		if (!hl || hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, hl);
		host[hl] = '\0';
		if (evutil_inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return -EINVAL;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		*len = (int)sizeof(*s4);
	}
	return 0;
}

static int th_create(const struct engy_host *host, const void *conf, void **out)
{
	const struct th_conf *c = conf;
	struct sockaddr_storage ss;
	struct th_inst *ti;
	size_t i;
	int len;

	*out = NULL;
	if (!c->listen.n) {
		engy_err(
			host,
			"event=config_invalid option=listen reason=\"no address\"");
		return -EINVAL;
	}
	for (i = 0; i < c->listen.n; i++) {
		if (parse_addr(c->listen.v[i], &ss, &len) < 0) {
			engy_err(
				host,
				"event=config_invalid option=listen value=\"%s\" "
				"reason=\"want addr:port or [v6]:port\"",
				c->listen.v[i]);
			return -EINVAL;
		}
	}
	ti = calloc(1, sizeof(*ti));
	if (!ti)
		return -ENOMEM;
	ti->host = host;
	ti->conf = *c;
	*out = ti;
	return 0;
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
		      struct sockaddr *sa, int salen, void *arg)
{
	th_conn_accept(arg, fd, sa, salen);
}

static void on_accept_error(struct evconnlistener *l, void *arg)
{
	struct th_inst *ti = arg;
	int err = EVUTIL_SOCKET_ERROR();

	/* EMFILE and friends: log, keep the listener; the loop retries. */
	engy_warn(ti->host, "event=accept_failed error=\"%s\"",
		  evutil_socket_error_to_string(err));
}

static void metrics_init(struct th_inst *ti)
{
	const struct engy_host *h = ti->host;
	char labels[192];

	snprintf(labels, sizeof(labels), "instance=\"%s\"", h->instance);
	h->metric(h, ENGY_METRIC_GAUGE, "engy_http_inflight",
		  "HTTP requests dispatched and not yet answered", labels, NULL,
		  0, &ti->m_inflight);
	h->metric(h, ENGY_METRIC_GAUGE, "engy_http_connections",
		  "Open HTTP connections", labels, NULL, 0, &ti->m_conns);
	h->metric(h, ENGY_METRIC_COUNTER, "engy_http_gone_total",
		  "HTTP requests whose client left before the reply ended",
		  labels, NULL, 0, &ti->m_gone);
	h->metric(h, ENGY_METRIC_COUNTER, "engy_http_refused_total",
		  "HTTP connections refused at max_connections", labels, NULL,
		  0, &ti->m_refused);
	h->metric(h, ENGY_METRIC_COUNTER, "engy_http_idle_reclaimed_total",
		  "idle keep-alive connections closed for new ones "
		  "(max_idle_per_client, max_connections)",
		  labels, NULL, 0, &ti->m_reclaimed);
}

static int th_start(void *inst)
{
	struct th_inst *ti = inst;
	size_t i;

	ti->base = ti->host->evbase(ti->host);
	if (!ti->base)
		return -EINVAL;
	metrics_init(ti);
	ti->lis = calloc(ti->conf.listen.n, sizeof(*ti->lis));
	if (!ti->lis)
		return -ENOMEM;
	for (i = 0; i < ti->conf.listen.n; i++) {
		const char *a = ti->conf.listen.v[i];
		struct sockaddr_storage ss, bound;
		socklen_t blen = sizeof(bound);
		char host[64] = "?";
		int len, port = -1, err;

		parse_addr(a, &ss, &len);
		ti->lis[i] = evconnlistener_new_bind(
			ti->base, on_accept, ti,
			LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
				LEV_OPT_CLOSE_ON_EXEC,
			-1, (struct sockaddr *)&ss, len);
		if (!ti->lis[i]) {
			err = errno ? errno : EADDRINUSE;
			engy_err(ti->host,
				 "event=listen_failed addr=%s error=\"%s\"", a,
				 strerror(err));
			return -err;
		}
		ti->n_lis++;
		evconnlistener_set_error_cb(ti->lis[i], on_accept_error);
		if (getsockname(evconnlistener_get_fd(ti->lis[i]),
				(struct sockaddr *)&bound, &blen) == 0) {
			if (bound.ss_family == AF_INET) {
				struct sockaddr_in *s4 =
					(struct sockaddr_in *)&bound;

				evutil_inet_ntop(AF_INET, &s4->sin_addr, host,
						 sizeof(host));
				port = ntohs(s4->sin_port);
			} else if (bound.ss_family == AF_INET6) {
				struct sockaddr_in6 *s6 =
					(struct sockaddr_in6 *)&bound;

				evutil_inet_ntop(AF_INET6, &s6->sin6_addr, host,
						 sizeof(host));
				port = ntohs(s6->sin6_port);
			}
		}
		engy_info(ti->host, "event=listen addr=%s port=%d", host, port);
	}
	return 0;
}

static void close_listeners(struct th_inst *ti)
{
	size_t i;

	for (i = 0; i < ti->n_lis; i++)
		evconnlistener_free(ti->lis[i]);
	free(ti->lis);
	ti->lis = NULL;
	ti->n_lis = 0;
}

static void th_stop(void *inst)
{
	struct th_inst *ti = inst;

	ti->stopping = true;
	close_listeners(ti);
	th_conn_close_idle(ti);
	engy_info(ti->host, "event=stopping inflight=%u connections=%u",
		  ti->n_inflight, ti->n_conns);
}

static void th_destroy(void *inst)
{
	struct th_inst *ti = inst;
	size_t i;

	if (!ti)
		return;
	close_listeners(ti);
	th_conn_flush_all(ti, TH_FLUSH_MS);
	while (ti->conns)
		th_conn_free(ti->conns);
	for (i = 0; i < ti->n_routes; i++)
		free(ti->routes[i].prefix);
	free(ti->routes);
	free(ti);
}

void th_count_status(struct th_inst *ti, int status)
{
	const struct engy_host *h = ti->host;
	char labels[192];
	size_t i;

	for (i = 0; i < ti->n_status; i++)
		if (ti->by_status[i].status == status)
			goto add;
	if (ti->n_status == sizeof(ti->by_status) / sizeof(ti->by_status[0]) ||
	    !h->metric)
		return;
	snprintf(labels, sizeof(labels), "instance=\"%s\",status=\"%d\"",
		 h->instance, status);
	if (h->metric(h, ENGY_METRIC_COUNTER, "engy_http_requests_total",
		      "HTTP requests answered, by status", labels, NULL, 0,
		      &ti->by_status[i].m) < 0)
		return;
	ti->by_status[i].status = status;
	ti->n_status++;
add:
	if (ti->by_status[i].m)
		h->metric_add(ti->by_status[i].m, 1);
}

static const struct th_route *find_route(const struct th_inst *ti,
					 const char *path)
{
	const struct th_route *best = NULL;
	size_t i;

	for (i = 0; i < ti->n_routes; i++) {
		const struct th_route *r = &ti->routes[i];
		bool match = r->len == 1 ||
			     (strncmp(path, r->prefix, r->len) == 0 &&
			      (path[r->len] == '\0' || path[r->len] == '/'));

		if (match && (!best || r->len > best->len))
			best = r;
	}
	return best;
}

static const char *req_header(const struct engy_http_request *r,
			      const char *name)
{
	const struct engy_http_exchange *x = r->priv;

	return name ? engy_http_head_get(&x->head, name) : NULL;
}

static bool header_ok(const char *name, const char *value)
{
	static const char *const owned[] = { "Content-Length",
					     "Transfer-Encoding", "Connection",
					     NULL };
	const char *p;
	size_t i;

	if (!name || !value || !engy_http_token(name))
		return false;
	for (p = value; *p; p++)
		if ((unsigned char)*p < 0x20 && *p != '\t')
			return false;
	for (i = 0; owned[i]; i++)
		if ((*name | 0x20) == (owned[i][0] | 0x20) &&
		    strcasecmp(name, owned[i]) == 0)
			return false;
	return true;
}

/* A response head built in one buffer, added to the output once (a
 * printf per line cost more than the rest of the reply). */
struct head_buf {
	struct evbuffer *out;
	size_t n;
	char buf[1024];
};

static void hb_put(struct head_buf *h, const char *s, size_t n)
{
	if (h->n + n > sizeof(h->buf)) {
		evbuffer_add(h->out, h->buf, h->n);
		h->n = 0;
		if (n > sizeof(h->buf)) {
			evbuffer_add(h->out, s, n);
			return;
		}
	}
	memcpy(h->buf + h->n, s, n);
	h->n += n;
}

static void hb_str(struct head_buf *h, const char *s)
{
	hb_put(h, s, strlen(s));
}

static void hb_u64(struct head_buf *h, uint64_t v)
{
	char d[20];
	size_t i = sizeof(d);

	do
		d[--i] = (char)('0' + v % 10);
	while ((v /= 10));
	hb_put(h, d + i, sizeof(d) - i);
}

/*
 * The status line and headers.  @len >= 0: a Content-Length reply;
 * -1: a streamed one (chunked on HTTP/1.1, close-delimited on 1.0).
 */
static int write_head(struct engy_http_exchange *x, int status,
		      const char *ctype, const char *const *headers,
		      int64_t len)
{
	struct evbuffer *out = th_conn_output(x);
	struct head_buf hb;
	struct th_inst *ti;
	size_t i;

	if (!out || x->gone)
		return -EPIPE;
	if (status < 200 || status > 599)
		return -EINVAL;
	if (ctype && !header_ok("Content-Type", ctype))
		return -EINVAL;
	for (i = 0; headers && headers[i]; i += 2)
		if (!header_ok(headers[i], headers[i + 1]))
			return -EINVAL;
	ti = th_conn_inst(x->c);
	if (ti->stopping)
		x->keepalive = false;
	if (len < 0) {
		x->streaming = true;
		x->chunked = x->head.http_minor == 1;
		if (!x->chunked)
			x->keepalive = false;
	}
	hb.out = out;
	hb.n = 0;
	hb_put(&hb, "HTTP/1.1 ", 9);
	hb_u64(&hb, (uint64_t)status);
	hb_put(&hb, " ", 1);
	hb_str(&hb, th_reason(status));
	hb_put(&hb, "\r\n", 2);
	if (ctype) {
		hb_put(&hb, "Content-Type: ", 14);
		hb_str(&hb, ctype);
		hb_put(&hb, "\r\n", 2);
	}
	for (i = 0; headers && headers[i]; i += 2) {
		hb_str(&hb, headers[i]);
		hb_put(&hb, ": ", 2);
		hb_str(&hb, headers[i + 1]);
		hb_put(&hb, "\r\n", 2);
	}
	if (len >= 0) {
		hb_put(&hb, "Content-Length: ", 16);
		hb_u64(&hb, (uint64_t)len);
		hb_put(&hb, "\r\n", 2);
	} else if (x->chunked && !x->is_head) {
		hb_str(&hb, "Transfer-Encoding: chunked\r\n");
	}
	hb_str(&hb, x->keepalive ? "Connection: keep-alive\r\n\r\n"
				 : "Connection: close\r\n\r\n");
	evbuffer_add(out, hb.buf, hb.n);
	th_count_status(ti, status);
	return 0;
}

const char *th_reason(int status)
{
	static const struct {
		int code;
		const char *text;
	} r[] = {
		{ 100, "Continue" },
		{ 200, "OK" },
		{ 201, "Created" },
		{ 202, "Accepted" },
		{ 204, "No Content" },
		{ 301, "Moved Permanently" },
		{ 302, "Found" },
		{ 304, "Not Modified" },
		{ 400, "Bad Request" },
		{ 401, "Unauthorized" },
		{ 403, "Forbidden" },
		{ 404, "Not Found" },
		{ 405, "Method Not Allowed" },
		{ 408, "Request Timeout" },
		{ 409, "Conflict" },
		{ 411, "Length Required" },
		{ 413, "Content Too Large" },
		{ 414, "URI Too Long" },
		{ 415, "Unsupported Media Type" },
		{ 417, "Expectation Failed" },
		{ 422, "Unprocessable Content" },
		{ 429, "Too Many Requests" },
		{ 431, "Request Header Fields Too Large" },
		{ 499, "Client Closed Request" },
		{ 500, "Internal Server Error" },
		{ 501, "Not Implemented" },
		{ 502, "Bad Gateway" },
		{ 503, "Service Unavailable" },
		{ 504, "Gateway Timeout" },
		{ 505, "HTTP Version Not Supported" },
	};
	size_t i;

	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (r[i].code == status)
			return r[i].text;
	return "Unknown";
}

void th_dispatch(struct th_inst *ti, struct engy_http_exchange *x)
{
	struct th_conn *c = x->c;
	const char *q = strchr(x->head.target, '?');
	int rc;

	x->path = q ? strndup(x->head.target, (size_t)(q - x->head.target))
		    : strdup(x->head.target);
	x->r.method = x->head.method;
	x->r.path = x->path;
	x->r.query = q ? q + 1 : NULL;
	x->r.body = x->body ? x->body : (const uint8_t *)"";
	x->r.body_len = x->body_len;
	x->r.header = req_header;
	x->r.priv = x;
	x->is_head = strcmp(x->head.method, "HEAD") == 0;
	x->dispatched = true;
	ti->n_inflight++;
	if (ti->m_inflight)
		ti->host->metric_set(ti->m_inflight, ti->n_inflight);
	if (!x->path) {
		th_error_reply(x, 500, "out of memory");
		return;
	}
	x->route = find_route(ti, x->path);
	if (!x->route) {
		th_error_reply(x, 404, "Not Found");
		return;
	}
	rc = x->route->h->on_request(x->route->arg, x, &x->r);
	/* The handler may have ended @x already: only the connection
	 * knows (nothing frees a connection during a handler call). */
	if (rc >= 0 || !th_conn_holds(c, x))
		return;
	if (x->streaming)
		th_conn_end(x);
	else
		th_error_reply(x, rc == -ENOENT ? 404 : 500,
			       rc == -ENOENT ? "Not Found"
					     : "Internal Server Error");
}

void th_exchange_gone(struct th_inst *ti, struct engy_http_exchange *x)
{
	if (ti->m_gone)
		ti->host->metric_add(ti->m_gone, 1);
	x->gone = true; /* the ops refuse it from here on */
	if (x->route && x->route->h->on_gone)
		x->route->h->on_gone(x->route->arg, x);
}

/* A JSON string body of @msg (our own texts: quotes and controls dropped). */
void th_error_reply(struct engy_http_exchange *x, int status, const char *msg)
{
	char body[320];
	size_t o = 0;
	const char *p;

	o += (size_t)snprintf(body, sizeof(body), "{\"error\":{\"message\":\"");
	for (p = msg; *p && o < sizeof(body) - 48; p++)
		if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
			body[o++] = *p;
	o += (size_t)snprintf(body + o, sizeof(body) - o, "\",\"code\":%d}}",
			      status);
	if (write_head(x, status, "application/json", NULL, (int64_t)o) < 0) {
		th_conn_end(x);
		return;
	}
	if (!x->is_head)
		evbuffer_add(th_conn_output(x), body, o);
	th_conn_end(x);
}

/* --- ops ---------------------------------------------------------------- */

static int th_route_add(void *inst, const char *prefix,
			const struct engy_http_handler *h, void *arg)
{
	struct th_inst *ti = inst;
	struct th_route *r;
	size_t len, i;

	if (!prefix || prefix[0] != '/' || !h || !h->on_request ||
	    h->size < offsetof(struct engy_http_handler, on_gone))
		return -EINVAL;
	len = strlen(prefix);
	while (len > 1 && prefix[len - 1] == '/')
		len--;
	for (i = 0; i < ti->n_routes; i++)
		if (ti->routes[i].len == len &&
		    strncmp(ti->routes[i].prefix, prefix, len) == 0)
			return -EEXIST;
	r = realloc(ti->routes, (ti->n_routes + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	ti->routes = r;
	r = &ti->routes[ti->n_routes];
	r->prefix = strndup(prefix, len);
	if (!r->prefix)
		return -ENOMEM;
	r->len = len;
	r->h = h;
	r->arg = arg;
	ti->n_routes++;
	return 0;
}

static int th_reply(void *inst, struct engy_http_exchange *x, int status,
		    const char *content_type, const char *const *headers,
		    const void *body, size_t len)
{
	int rc;

	if (!x || x->streaming || x->gone || (len && !body))
		return -EINVAL;
	rc = write_head(x, status, content_type, headers, (int64_t)len);
	if (rc < 0)
		return rc;
	if (len && !x->is_head)
		evbuffer_add(th_conn_output(x), body, len);
	th_conn_end(x);
	return 0;
}

static int th_stream_begin(void *inst, struct engy_http_exchange *x, int status,
			   const char *content_type, const char *const *headers)
{
	if (!x || x->streaming || x->gone)
		return -EINVAL;
	return write_head(x, status, content_type, headers, -1);
}

static int th_stream_write(void *inst, struct engy_http_exchange *x,
			   const void *data, size_t len)
{
	struct evbuffer *out;

	if (!x || !x->streaming || (len && !data))
		return -EINVAL;
	out = x->gone ? NULL : th_conn_output(x);
	if (!out)
		return -EPIPE;
	if (!len || x->is_head)
		return 0; /* a zero-size chunk would end the stream */
	if (x->chunked)
		evbuffer_add_printf(out, "%zx\r\n", len);
	evbuffer_add(out, data, len);
	if (x->chunked)
		evbuffer_add(out, "\r\n", 2);
	return 0;
}

static void th_stream_end(void *inst, struct engy_http_exchange *x)
{
	struct evbuffer *out;

	if (!x || !x->streaming || x->gone)
		return;
	out = th_conn_output(x);
	if (out && x->chunked && !x->is_head)
		evbuffer_add(out, "0\r\n\r\n", 5);
	th_conn_end(x);
}

static const struct engy_transport_ops th_ops = {
	.size = sizeof(th_ops),
	.proto = "http",
	.http_route = th_route_add,
	.http_reply = th_reply,
	.http_stream_begin = th_stream_begin,
	.http_stream_write = th_stream_write,
	.http_stream_end = th_stream_end,
};

ENGY_PLUGIN(.kind = ENGY_KIND_TRANSPORT, .name = "transport-http",
	    .version = "1.0",
	    .description =
		    "HTTP/1.1 server: routes, whole and streamed replies, client-gone",
	    .opts = th_opts, .conf_size = sizeof(struct th_conf),
	    .create = th_create, .start = th_start, .stop = th_stop,
	    .destroy = th_destroy, .ops = &th_ops);
