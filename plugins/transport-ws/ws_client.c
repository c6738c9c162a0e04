/* SPDX-License-Identifier: MIT */
/*
 * Client legs: a leg is a URL that stays connected.  Each dial resolves
 * the host on the worker pool (getaddrinfo honours /etc/hosts and NSS),
 * tries the addresses in order, does TLS for wss:// (verified, hostname
 * checked), sends the upgrade and checks the reply.  Any failure or close
 * re-dials after a jittered exponential backoff.  URLs are logged without
 * their query and headers never, since either may carry a miner key.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/rand.h>

#include "logfmt.h"
#include "ws_int.h"

struct ws_resolve {
	struct ws_leg *leg; /* NULL once the leg is gone */
	char *host;
	char port[8];
	struct addrinfo *ai;
	int gai;
};

static void connect_to(struct ws_leg *leg, struct addrinfo *ai);
static void leg_free(struct ws_leg *leg);

static void schedule(struct ws_leg *leg, uint64_t ms)
{
	struct timeval tv = { (time_t)(ms / 1000),
			      (suseconds_t)(ms % 1000) * 1000 };

	evtimer_add(leg->retry, &tv);
}

/* min << failures, capped at max, times a jitter in [0.75, 1.25). */
static void retry_later(struct ws_leg *leg)
{
	struct ws_inst *in = leg->in;
	uint64_t ms = (uint64_t)in->conf.reconnect_min_ms;
	uint64_t max = (uint64_t)in->conf.reconnect_max_ms;
	uint32_t r = 0;
	unsigned i;

	if (leg->closed || in->stopped)
		return;
	for (i = 0; i < leg->failures && ms < max; i++)
		ms *= 2;
	if (ms > max)
		ms = max;
	if (RAND_bytes((unsigned char *)&r, sizeof(r)) != 1)
		r = (uint32_t)ws_now_ms() * 2654435761u;
	ms = ms * 3 / 4 + (uint64_t)((double)ms / 2 * (r / 4294967296.0));
	if (ms > max)
		ms = max;
	leg->failures++;
	engy_info(in->host, "event=ws_redial leg=%llu in_ms=%llu failures=%u",
		  (unsigned long long)leg->id, (unsigned long long)ms,
		  leg->failures);
	schedule(leg, ms);
}

void ws_leg_dial_failed(struct ws_leg *leg, int err, int status,
			const char *why)
{
	struct ws_inst *in = leg->in;
	struct ws_conn *c = leg->conn;
	char w[256];

	ws_count(in, in->m.dial_failures, 1);
	engy_logfmt_value(w, sizeof(w), why ? why : "");
	engy_warn(
		in->host,
		"event=ws_dial_failed leg=%llu url=%s err=%d status=%d why=%s",
		(unsigned long long)leg->id, leg->url.safe, err, status, w);
	if (c) {
		leg->conn = NULL;
		ws_conn_detach(c);
		ws_conn_free(c);
	}
	if (leg->ai) {
		freeaddrinfo(leg->ai);
		leg->ai = NULL;
	}
	if (leg->h->size >= offsetof(struct engy_ws_handler, on_dial_error) +
				    sizeof(leg->h->on_dial_error) &&
	    leg->h->on_dial_error) {
		leg->busy++;
		leg->h->on_dial_error(leg->arg, (struct engy_ws_leg *)leg, err,
				      status);
		if (--leg->busy == 0 && leg->closed) {
			leg_free(leg);
			return;
		}
	}
	retry_later(leg);
}

void ws_leg_conn_ended(struct ws_leg *leg, struct ws_conn *c)
{
	leg->conn = NULL;
	c->leg = NULL;
	if (ws_now_ms() - c->opened_ms >= WS_STABLE_MS)
		leg->failures = 0;
	retry_later(leg);
}

static void send_request(struct ws_conn *c)
{
	struct ws_leg *leg = c->leg;
	uint8_t nonce[16];
	const char *why;
	char *req;

	if (RAND_bytes(nonce, sizeof(nonce)) != 1) {
		ws_leg_dial_failed(leg, -EIO, 0, "no randomness for the key");
		return;
	}
	engy_ws_key(c->key, nonce);
	if (engy_ws_request(&req, leg->url.authority, leg->url.target, c->key,
			    (const char *const *)leg->headers, &why) < 0) {
		ws_leg_dial_failed(leg, -EINVAL, 0, why);
		return;
	}
	c->state = WS_HANDSHAKE;
	bufferevent_write(c->bev, req, strlen(req));
	free(req);
}

static void hs_read(struct bufferevent *bev, void *arg)
{
	struct ws_conn *c = arg;
	struct evbuffer *input = bufferevent_get_input(bev);
	struct ws_leg *leg = c->leg;
	struct evbuffer_ptr end;
	size_t head_len;
	const char *why;
	int status;

	if (c->state != WS_HANDSHAKE || !leg)
		return;
	ws_conn_hold(c);
	end = evbuffer_search(input, "\r\n\r\n", 4, NULL);
	if (end.pos < 0) {
		if (evbuffer_get_length(input) > WS_HEAD_MAX)
			ws_leg_dial_failed(leg, -EPROTO, 0,
					   "reply head too long");
		goto out;
	}
	head_len = (size_t)end.pos + 4;
	if (head_len > WS_HEAD_MAX ||
	    engy_http_head_parse(
		    &c->head,
		    (const char *)evbuffer_pullup(input, (ev_ssize_t)head_len),
		    head_len, false, &why) < 0) {
		ws_leg_dial_failed(
			leg, -EPROTO, 0,
			head_len > WS_HEAD_MAX ? "reply head too long" : why);
		goto out;
	}
	if (engy_ws_check_response(&c->head, c->key, &why) < 0) {
		status = c->head.status == 101 ? 0 : c->head.status;
		ws_leg_dial_failed(leg, -EPROTO, status, why);
		goto out;
	}
	evbuffer_drain(input, head_len);
	leg->opens++;
	if (leg->ai) {
		freeaddrinfo(leg->ai);
		leg->ai = NULL;
	}
	c->ai_next = NULL;
	engy_info(
		c->in->host,
		"event=ws_open conn=%llu side=client leg=%llu url=%s remote=%s opens=%u",
		(unsigned long long)c->id, (unsigned long long)leg->id,
		leg->url.safe, c->remote, leg->opens);
	ws_conn_opened(c, leg->url.path, leg->url.query);
out:
	ws_conn_release(c);
}

static void hs_event(struct bufferevent *bev, short what, void *arg)
{
	struct ws_conn *c = arg;
	struct ws_leg *leg = c->leg;
	struct addrinfo *next = c->ai_next;
	const char *why = NULL;
	int err, tls;

	if (!leg)
		return;
	ws_conn_hold(c);
	if (what & BEV_EVENT_CONNECTED) {
		ws_nodelay(bufferevent_getfd(bev));
		send_request(c);
		goto out;
	}
	err = EVUTIL_SOCKET_ERROR() ? -EVUTIL_SOCKET_ERROR() : -ECONNRESET;
	tls = leg->url.tls ? ws_tls_verify_error(bev, &why) : 0;
	if (tls < 0) {
		err = tls;
	} else if (what & BEV_EVENT_EOF) {
		err = -ECONNRESET;
		why = c->state == WS_DIALING ? "closed during the TLS handshake"
					     : "closed before the reply";
	} else {
		why = strerror(-err);
	}
	if (c->state == WS_DIALING && tls == 0 && next) {
		/* The next address of the name, within the same dial. */
		leg->conn = NULL;
		ws_conn_detach(c);
		ws_conn_free(c);
		connect_to(leg, next);
		goto out;
	}
	ws_leg_dial_failed(leg, err, 0, why);
out:
	ws_conn_release(c);
}

static void format_remote(char *dst, size_t cap, const struct sockaddr *sa,
			  socklen_t len)
{
	char host[NI_MAXHOST], serv[NI_MAXSERV];

	if (getnameinfo(sa, len, host, sizeof(host), serv, sizeof(serv),
			NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(dst, cap, "?");
		return;
	}
	snprintf(dst, cap, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
		 host, serv);
}

static void connect_to(struct ws_leg *leg, struct addrinfo *ai)
{
	struct ws_inst *in = leg->in;
	struct timeval tv = { (time_t)in->conf.handshake_timeout_s, 0 };
	struct ws_conn *c = ws_conn_new(in, false);
	SSL *ssl;

	if (!c) {
		ws_leg_dial_failed(leg, -ENOMEM, 0, "out of memory");
		return;
	}
	c->leg = leg;
	c->h = leg->h;
	c->arg = leg->arg;
	c->ai_next = ai->ai_next;
	c->state = WS_DIALING;
	leg->conn = c;
	format_remote(c->remote, sizeof(c->remote), ai->ai_addr,
		      ai->ai_addrlen);
	if (leg->url.tls) {
		ssl = ws_tls_client(in, &leg->url);
		c->bev = ssl ? bufferevent_openssl_socket_new(
				       in->base, -1, ssl,
				       BUFFEREVENT_SSL_CONNECTING,
				       BEV_OPT_CLOSE_ON_FREE)
			     : NULL;
		if (c->bev)
			bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
		else if (ssl)
			SSL_free(ssl);
	} else {
		c->bev = bufferevent_socket_new(in->base, -1,
						BEV_OPT_CLOSE_ON_FREE);
	}
	if (!c->bev) {
		ws_leg_dial_failed(leg, -ENOMEM, 0,
				   leg->url.tls ? "TLS setup failed"
						: "cannot make a socket");
		return;
	}
	bufferevent_setcb(c->bev, hs_read, NULL, hs_event, c);
	evtimer_add(c->timer, &tv);
	/* A failure here has already been reported through hs_event. */
	ws_conn_hold(c);
	if (bufferevent_socket_connect(c->bev, ai->ai_addr,
				       (int)ai->ai_addrlen) == 0)
		bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	ws_conn_release(c);
}

static void resolve_fn(void *arg)
{
	struct ws_resolve *r = arg;
	struct addrinfo hints;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	r->gai = getaddrinfo(r->host, r->port, &hints, &r->ai);
}

static void resolve_done(void *arg, int rc)
{
	struct ws_resolve *r = arg;
	struct ws_leg *leg = r->leg;

	if (leg) {
		leg->res = NULL;
		if (rc < 0 || leg->in->stopped) {
			/* shutting down: no dial */
		} else if (r->gai) {
			ws_leg_dial_failed(leg,
					   r->gai == EAI_NONAME ? -ENOENT
								: -EHOSTUNREACH,
					   0, gai_strerror(r->gai));
		} else {
			leg->ai = r->ai;
			r->ai = NULL;
			connect_to(leg, leg->ai);
		}
	}
	if (r->ai)
		freeaddrinfo(r->ai);
	free(r->host);
	free(r);
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct ws_leg *leg = arg;
	struct ws_inst *in = leg->in;
	struct ws_resolve *r;
	int rc;

	if (leg->closed || in->stopped || leg->conn || leg->res)
		return;
	if (leg->opens || leg->failures)
		ws_count(in, in->m.reconnects, 1);
	r = calloc(1, sizeof(*r));
	if (!r || !(r->host = strdup(leg->url.host))) {
		free(r);
		ws_leg_dial_failed(leg, -ENOMEM, 0, "out of memory");
		return;
	}
	snprintf(r->port, sizeof(r->port), "%u", leg->url.port);
	r->leg = leg;
	leg->res = r;
	rc = in->host->work(in->host, resolve_fn, resolve_done, r);
	if (rc < 0) {
		leg->res = NULL;
		free(r->host);
		free(r);
		ws_leg_dial_failed(leg, rc, 0,
				   "worker pool refused the lookup");
	}
}

static void leg_free(struct ws_leg *leg)
{
	size_t i;

	*leg->pprev = leg->next;
	if (leg->next)
		leg->next->pprev = leg->pprev;
	if (leg->retry)
		event_free(leg->retry);
	if (leg->ai)
		freeaddrinfo(leg->ai);
	for (i = 0; leg->headers && leg->headers[i]; i++)
		free(leg->headers[i]);
	free(leg->headers);
	engy_url_free(&leg->url);
	free(leg);
}

static int copy_headers(struct ws_leg *leg, const char *const *headers)
{
	size_t n = 0, i;

	while (headers && headers[n])
		n++;
	leg->headers = calloc(n + 1, sizeof(char *));
	if (!leg->headers)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (!(leg->headers[i] = strdup(headers[i])))
			return -ENOMEM;
	return 0;
}

int ws_dial(void *inst, const char *url, const char *const *headers,
	    const struct engy_ws_handler *h, void *arg,
	    struct engy_ws_leg **out)
{
	struct ws_inst *in = inst;
	struct ws_leg *leg;
	const char *why = NULL;
	char *req = NULL;
	int rc;

	if (!url || !h || !out ||
	    h->size < offsetof(struct engy_ws_handler, on_dial_error) ||
	    !h->on_open || !h->on_message || !h->on_close)
		return -EINVAL;
	if (in->stopped)
		return -ESHUTDOWN;
	leg = calloc(1, sizeof(*leg));
	if (!leg)
		return -ENOMEM;
	leg->in = in;
	leg->pprev = &leg->next; /* until linked */
	rc = engy_url_parse(&leg->url, url, &why);
	if (rc == 0 && strcmp(leg->url.scheme, "ws") != 0 &&
	    strcmp(leg->url.scheme, "wss") != 0) {
		why = "not a ws:// or wss:// URL";
		rc = -EINVAL;
	}
	if (rc == 0)
		rc = engy_ws_request(&req, leg->url.authority, leg->url.target,
				     "AAAAAAAAAAAAAAAAAAAAAA==", headers, &why);
	free(req);
	if (rc == 0)
		rc = copy_headers(leg, headers);
	if (rc == 0) {
		leg->retry = evtimer_new(in->base, retry_cb, leg);
		if (!leg->retry)
			rc = -ENOMEM;
	}
	if (rc < 0) {
		engy_err(in->host, "event=ws_dial_refused why=\"%s\"",
			 why ? why : "out of memory");
		leg_free(leg);
		return rc;
	}
	leg->id = ++in->next_id;
	leg->h = h;
	leg->arg = arg;
	leg->next = in->legs;
	if (leg->next)
		leg->next->pprev = &leg->next;
	leg->pprev = &in->legs;
	in->legs = leg;
	engy_info(in->host, "event=ws_dial leg=%llu url=%s",
		  (unsigned long long)leg->id, leg->url.safe);
	/* Dial from the loop, so no callback runs inside ws_dial(). */
	schedule(leg, 0);
	*out = (struct engy_ws_leg *)leg;
	return 0;
}

void ws_leg_close(void *inst, struct engy_ws_leg *l)
{
	struct ws_leg *leg = (struct ws_leg *)l;
	struct ws_conn *c;

	if (!leg || leg->closed)
		return;
	leg->closed = true;
	evtimer_del(leg->retry);
	if (leg->res) {
		leg->res->leg = NULL;
		leg->res = NULL;
	}
	c = leg->conn;
	leg->conn = NULL;
	if (c) {
		ws_conn_detach(c);
		if (c->state == WS_OPEN)
			ws_conn_close(c, ENGY_WS_CLOSE_GOING_AWAY,
				      "leg closed");
		else if (c->state == WS_DIALING || c->state == WS_HANDSHAKE)
			ws_conn_free(c);
	}
	engy_info(leg->in->host, "event=ws_leg_closed leg=%llu",
		  (unsigned long long)leg->id);
	if (!leg->busy)
		leg_free(leg);
}

/* stop(): no more dials; connections still dialing are dropped. */
void ws_legs_stop(struct ws_inst *in)
{
	struct ws_leg *leg;
	struct ws_conn *c;

	for (leg = in->legs; leg; leg = leg->next) {
		evtimer_del(leg->retry);
		c = leg->conn;
		if (c && (c->state == WS_DIALING || c->state == WS_HANDSHAKE)) {
			leg->conn = NULL;
			ws_conn_detach(c);
			ws_conn_free(c);
		}
	}
}

void ws_legs_free(struct ws_inst *in)
{
	while (in->legs) {
		if (in->legs->res)
			in->legs->res->leg = NULL;
		if (in->legs->conn)
			ws_conn_detach(in->legs->conn);
		leg_free(in->legs);
	}
}
