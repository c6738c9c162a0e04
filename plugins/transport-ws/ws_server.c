/* SPDX-License-Identifier: MIT */
/*
 * The server side: one listener on the `listen` address (TLS when
 * tls_cert is set), the upgrade check with plain refusals (400, 404, 405,
 * 426, 431, 503), routing by path prefix, then the shared connection code.
 * A plain GET that a route's on_get() answers (a small JSON document such
 * as the gateway's /gw/meta) gets that answer and a close.
 * Origin is ignored: callers are miners, not browsers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>

#include "logfmt.h"
#include "ws_int.h"

int ws_listen(void *inst, const char *prefix, const struct engy_ws_handler *h,
	      void *arg)
{
	struct ws_inst *in = inst;
	struct ws_route *r;

	if (!prefix || prefix[0] != '/' || !h ||
	    h->size < offsetof(struct engy_ws_handler, on_dial_error) ||
	    !h->on_open || !h->on_message || !h->on_close)
		return -EINVAL;
	if (!in->conf.listen) {
		engy_err(
			in->host,
			"event=ws_listen_refused prefix=%s why=\"no listen address set\"",
			prefix);
		return -EINVAL;
	}
	for (r = in->routes; r; r = r->next)
		if (strcmp(r->prefix, prefix) == 0)
			return -EEXIST;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->prefix = strdup(prefix))) {
		free(r);
		return -ENOMEM;
	}
	r->len = strlen(prefix);
	/* "/gw/" routes like "/gw" */
	while (r->len > 1 && r->prefix[r->len - 1] == '/')
		r->prefix[--r->len] = '\0';
	r->h = h;
	r->arg = arg;
	r->next = in->routes;
	in->routes = r;
	return 0;
}

static const struct ws_route *route_of(const struct ws_inst *in,
				       const char *path)
{
	const struct ws_route *r, *best = NULL;

	for (r = in->routes; r; r = r->next) {
		if (strncmp(path, r->prefix, r->len) != 0)
			continue;
		if (r->len > 1 && path[r->len] != '\0' && path[r->len] != '/')
			continue;
		if (!best || r->len > best->len)
			best = r;
	}
	return best;
}

void ws_routes_free(struct ws_inst *in)
{
	struct ws_route *r;

	while ((r = in->routes)) {
		in->routes = r->next;
		free(r->prefix);
		free(r);
	}
}

static void refuse(struct ws_conn *c, int status, const char *why)
{
	struct ws_inst *in = c->in;
	char w[256], *resp;

	ws_count(in, in->m.refused, 1);
	engy_logfmt_value(w, sizeof(w), why);
	engy_info(in->host,
		  "event=ws_refused conn=%llu remote=%s status=%d why=%s",
		  (unsigned long long)c->id, c->remote, status, w);
	if (engy_ws_refusal(&resp, status, why) == 0) {
		bufferevent_write(c->bev, resp, strlen(resp));
		free(resp);
	}
	ws_conn_linger(c);
}

static const char *reason_of(int status)
{
	return status == 200   ? "OK"
	       : status == 404 ? "Not Found"
	       : status == 503 ? "Service Unavailable"
			       : "Status";
}

/*
 * A plain GET (no Upgrade) that the route answers itself through
 * on_get() (the gateway's /gw/meta).  Returns false when the request is
 * not one: then it goes through the upgrade checks (a 426).
 */
static bool plain_get(struct ws_conn *c)
{
	const struct ws_route *r;
	const struct engy_ws_handler *h;
	char *path, *body = NULL, *resp = NULL;
	size_t len = 0;
	int status = 0, rc;

	if (!c->head.method || strcmp(c->head.method, "GET") != 0 ||
	    engy_http_head_get(&c->head, "Upgrade"))
		return false;
	path = strndup(c->head.target, strcspn(c->head.target, "?"));
	if (!path)
		return false;
	r = route_of(c->in, path);
	h = r ? r->h : NULL;
	if (!h ||
	    h->size < offsetof(struct engy_ws_handler, on_get) +
			      sizeof(h->on_get) ||
	    !h->on_get) {
		free(path);
		return false;
	}
	rc = h->on_get(r->arg, path, &status, &body, &len);
	if (rc == -ENOENT) {
		refuse(c, 404, "not found");
	} else if (rc < 0 || status < 200 || status > 599 || (len && !body)) {
		refuse(c, 500, "the route failed to answer");
	} else if (
		asprintf(&resp,
			 "HTTP/1.1 %d %s\r\nContent-Type: "
			 "application/json\r\nContent-Length: %zu\r\n"
			 "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
			 status, reason_of(status), len) < 0) {
		refuse(c, 500, "out of memory");
	} else {
		engy_info(c->in->host,
			  "event=ws_get conn=%llu route=%s remote=%s status=%d",
			  (unsigned long long)c->id, r->prefix, c->remote,
			  status);
		bufferevent_write(c->bev, resp, strlen(resp));
		if (len)
			bufferevent_write(c->bev, body, len);
		ws_conn_linger(c);
	}
	free(resp);
	free(body);
	free(path);
	return true;
}

static void hs_read(struct bufferevent *bev, void *arg)
{
	struct ws_conn *c = arg;
	struct evbuffer *input = bufferevent_get_input(bev);
	char accept[ENGY_WS_ACCEPT_LEN + 1], *resp, *path;
	const struct ws_route *r;
	struct evbuffer_ptr end;
	const char *why, *q;
	size_t head_len;
	int rc;

	if (c->state != WS_HANDSHAKE)
		return;
	ws_conn_hold(c);
	end = evbuffer_search(input, "\r\n\r\n", 4, NULL);
	if (end.pos < 0) {
		if (evbuffer_get_length(input) > WS_HEAD_MAX)
			refuse(c, 431, "request head over 16 KiB");
		goto out;
	}
	head_len = (size_t)end.pos + 4;
	if (head_len > WS_HEAD_MAX) {
		refuse(c, 431, "request head over 16 KiB");
		goto out;
	}
	rc = engy_http_head_parse(
		&c->head,
		(const char *)evbuffer_pullup(input, (ev_ssize_t)head_len),
		head_len, true, &why);
	if (rc < 0) {
		refuse(c, rc == -E2BIG ? 431 : 400, why);
		goto out;
	}
	if (plain_get(c))
		goto out;
	rc = engy_ws_check_request(&c->head, accept, &why);
	if (rc != 0) {
		refuse(c, rc, why);
		goto out;
	}
	path = strdup(c->head.target);
	if (!path) {
		refuse(c, 500, "out of memory");
		goto out;
	}
	q = NULL;
	if (strchr(path, '?')) {
		q = strchr(path, '?') + 1;
		path[q - 1 - path] = '\0';
	}
	r = route_of(c->in, path);
	if (!r || engy_ws_response(&resp, accept) < 0) {
		refuse(c, r ? 500 : 404,
		       r ? "out of memory"
			 : "no websocket endpoint at this path");
		free(path);
		goto out;
	}
	evbuffer_drain(input, head_len);
	bufferevent_write(bev, resp, strlen(resp));
	free(resp);
	c->h = r->h;
	c->arg = r->arg;
	engy_info(c->in->host,
		  "event=ws_open conn=%llu side=server route=%s remote=%s",
		  (unsigned long long)c->id, r->prefix, c->remote);
	ws_conn_opened(c, path, q);
	free(path);
out:
	ws_conn_release(c);
}

static void hs_event(struct bufferevent *bev, short what, void *arg)
{
	struct ws_conn *c = arg;
	const char *why = "connection closed during the handshake";

	if (what & BEV_EVENT_CONNECTED)
		return;
	if (c->in->srv_tls && ws_tls_verify_error(bev, &why) == 0 &&
	    (what & BEV_EVENT_ERROR))
		why = "TLS handshake failed";
	engy_dbg(c->in->host,
		 "event=ws_handshake_lost conn=%llu remote=%s why=\"%s\"",
		 (unsigned long long)c->id, c->remote, why);
	ws_conn_free(c);
}

static void format_remote(char *dst, size_t cap, const struct sockaddr *sa,
			  socklen_t len)
{
	char host[NI_MAXHOST], serv[NI_MAXSERV];

	if (getnameinfo(sa, len, host, sizeof(host), serv, sizeof(serv),
			NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		snprintf(dst, cap, "?");
	else
		snprintf(dst, cap,
			 sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host,
			 serv);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd,
		      struct sockaddr *sa, int socklen, void *arg)
{
	struct ws_inst *in = arg;
	struct timeval tv = { (time_t)in->conf.handshake_timeout_s, 0 };
	static const char busy[] =
		"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 21\r\n"
		"Connection: close\r\n\r\ntoo many connections\n";
	char remote[64];
	struct ws_conn *c;
	SSL *ssl;

	format_remote(remote, sizeof(remote), sa, (socklen_t)socklen);
	if (in->stopped || in->n_server >= (size_t)in->conf.max_connections) {
		ws_count(in, in->m.refused, 1);
		engy_warn(in->host,
			  "event=ws_refused remote=%s status=503 why=\"%s\"",
			  remote,
			  in->stopped ? "stopping" : "max_connections reached");
		/* Best effort and never blocking; TLS peers just see a close. */
		if (!in->srv_tls && send(fd, busy, sizeof(busy) - 1,
					 MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			engy_dbg(in->host, "event=ws_refusal_unsent remote=%s",
				 remote);
		evutil_closesocket(fd);
		return;
	}
	c = ws_conn_new(in, true);
	if (!c) {
		evutil_closesocket(fd);
		return;
	}
	ws_nodelay(fd);
	snprintf(c->remote, sizeof(c->remote), "%s", remote);
	c->state = WS_HANDSHAKE;
	if (in->srv_tls) {
		ssl = SSL_new(in->srv_tls);
		c->bev = ssl ? bufferevent_openssl_socket_new(
				       in->base, fd, ssl,
				       BUFFEREVENT_SSL_ACCEPTING,
				       BEV_OPT_CLOSE_ON_FREE)
			     : NULL;
		if (c->bev)
			bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
		else if (ssl)
			SSL_free(ssl);
	} else {
		c->bev = bufferevent_socket_new(in->base, fd,
						BEV_OPT_CLOSE_ON_FREE);
	}
	if (!c->bev) {
		evutil_closesocket(fd);
		ws_conn_free(c);
		return;
	}
	bufferevent_setcb(c->bev, hs_read, NULL, hs_event, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	evtimer_add(c->timer, &tv);
}

/* "host:port", "[v6]:port" or ":port" (every address). */
static int listen_addr(const char *spec, struct addrinfo **out)
{
	struct addrinfo hints;
	const char *colon = strrchr(spec, ':');
	char host[256];
	size_t n;

	if (!colon || !colon[1])
		return -EINVAL;
	n = (size_t)(colon - spec);
	if (n >= 2 && spec[0] == '[' && spec[n - 1] == ']') {
		spec++;
		n -= 2;
	}
	if (n >= sizeof(host))
		return -EINVAL;
	memcpy(host, spec, n);
	host[n] = '\0';
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	return getaddrinfo(n ? host : NULL, colon + 1, &hints, out) ? -EINVAL
								    : 0;
}

int ws_server_start(struct ws_inst *in)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct addrinfo *ai;
	char addr[80];
	int err;

	if (!in->conf.listen)
		return 0;
	if (listen_addr(in->conf.listen, &ai) < 0) {
		engy_err(
			in->host,
			"event=ws_config_error option=listen why=\"not HOST:PORT\"");
		return -EINVAL;
	}
	in->listener = evconnlistener_new_bind(
		in->base, accept_cb, in,
		LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
			LEV_OPT_CLOSE_ON_EXEC,
		128, ai->ai_addr, (int)ai->ai_addrlen);
	err = errno;
	freeaddrinfo(ai);
	if (!in->listener) {
		engy_err(in->host,
			 "event=ws_listen_failed listen=%s why=\"%s\"",
			 in->conf.listen, strerror(err ? err : EIO));
		return -(err ? err : EIO);
	}
	if (getsockname(evconnlistener_get_fd(in->listener),
			(struct sockaddr *)&ss, &len) == 0)
		format_remote(addr, sizeof(addr), (struct sockaddr *)&ss, len);
	else
		snprintf(addr, sizeof(addr), "%s", in->conf.listen);
	engy_info(in->host, "event=ws_listen addr=%s tls=%s", addr,
		  in->srv_tls ? "yes" : "no");
	return 0;
}

void ws_server_stop(struct ws_inst *in)
{
	if (in->listener) {
		evconnlistener_free(in->listener);
		in->listener = NULL;
	}
}
