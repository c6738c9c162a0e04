/* SPDX-License-Identifier: MIT */
/*
 * One HTTP/1.1 connection on a bufferevent: read a request (head, then a
 * Content-Length or chunked body), hand it to the routes, write the reply,
 * go on with the next one (keep-alive) or close.
 *
 * Reading stays enabled while a handler works: that is how a client that
 * goes away is noticed at once (EOF), so its backend work can be
 * cancelled.  evhttp disables reading there, which is why this is not
 * evhttp.  A client that half-closes after its request is taken as gone.
 * Requests on one connection are answered one at a time; pipelined bytes
 * wait in the input buffer until the reply before them has ended.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "grow.h"
#include "http_int.h"

enum {
	ST_HEAD,       /* waiting for or reading a request head */
	ST_BODY,       /* a Content-Length body */
	ST_CHUNK_SIZE, /* chunked body: the size line */
	ST_CHUNK_DATA,
	ST_CHUNK_END, /* the CRLF after a chunk's data */
	ST_TRAILER,
	ST_HANDLER, /* dispatched: the reply is the handler's */
	ST_CLOSING, /* a last reply is queued; shut down once flushed */
	ST_LINGER,  /* write side shut; discard input until EOF */
};

/* Input buffered while a handler works (pipelined requests) is capped:
 * past this, reading pauses until the reply ends. */
#define TH_READ_HIGH (256 * 1024)

struct th_conn {
	struct th_conn *next, **pprev;
	struct th_inst *ti;
	struct bufferevent *bev;
	struct event *timer;
	struct event *kick;
	char remote[72];
	char addr[48]; /* the client's address, without the port */
	struct timespec idle_since;
	int state;
	bool counted; /* holds a max_connections slot */
	bool started; /* the current request has begun */
	struct engy_http_exchange *x;
	uint64_t need; /* body or chunk bytes still to read */
	size_t trailer_bytes;
};

static void exchange_free(struct engy_http_exchange *x)
{
	if (!x)
		return;
	engy_http_head_free(&x->head);
	free(x->path);
	free(x->body);
	free(x);
}

static void arm_timer(struct th_conn *c, long ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	event_add(c->timer, &tv);
}

void th_conn_free(struct th_conn *c)
{
	struct th_inst *ti = c->ti;

	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	if (c->x && c->x->dispatched && ti->n_inflight)
		ti->n_inflight--;
	exchange_free(c->x);
	if (c->counted)
		ti->n_conns--;
	if (ti->m_conns)
		ti->host->metric_set(ti->m_conns, ti->n_conns);
	if (ti->m_inflight)
		ti->host->metric_set(ti->m_inflight, ti->n_inflight);
	bufferevent_free(c->bev);
	event_free(c->timer);
	event_free(c->kick);
	free(c);
}

static void begin_linger(struct th_conn *c)
{
	c->state = ST_LINGER;
	shutdown(bufferevent_getfd(c->bev), SHUT_WR);
	evbuffer_drain(bufferevent_get_input(c->bev),
		       evbuffer_get_length(bufferevent_get_input(c->bev)));
	arm_timer(c, TH_LINGER_MS);
}

/* Answer an unreadable request with @status and close. */
static void conn_fail(struct th_conn *c, int status, const char *msg)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	char body[256];
	int n;

	n = snprintf(body, sizeof(body),
		     "{\"error\":{\"message\":\"%s\",\"code\":%d}}", msg,
		     status);
	evbuffer_add_printf(
		out,
		"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
		"Content-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, th_reason(status), n, body);
	th_count_status(c->ti, status);
	exchange_free(c->x);
	c->x = NULL;
	event_del(c->timer);
	c->state = ST_CLOSING;
	c->started = false;
}

static void ready(struct th_conn *c)
{
	struct engy_http_exchange *x = c->x;

	c->state = ST_HANDLER;
	c->started = false;
	event_del(c->timer);
	x->r.remote = c->remote;
	th_dispatch(c->ti, x);
}

/*
 * Frame the body from the head's headers (whose framing the parser has
 * checked already: one length, not both); 0, or a status to fail with.
 */
static int setup_body(struct th_conn *c, struct engy_http_exchange *x,
		      const char **why)
{
	const struct engy_http_head *h = &x->head;
	const char *te = engy_http_head_get(h, "Transfer-Encoding");
	const char *expect = engy_http_head_get(h, "Expect");

	if (h->http_minor == 1 && !engy_http_head_get(h, "Host")) {
		*why = "HTTP/1.1 request without Host";
		return 400;
	}
	x->keepalive =
		h->http_minor == 1
			? !engy_http_head_has_token(h, "Connection", "close")
			: engy_http_head_has_token(h, "Connection",
						   "keep-alive");
	if (te) {
		if (h->http_minor == 0 || strcasecmp(te, "chunked") != 0) {
			*why = "unsupported Transfer-Encoding";
			return h->http_minor == 0 ? 400 : 501;
		}
		c->state = ST_CHUNK_SIZE;
	} else if (h->content_length >= 0) {
		if (h->content_length > c->ti->conf.max_body) {
			*why = "request body too large";
			return 413;
		}
		c->need = (uint64_t)h->content_length;
		c->state = c->need ? ST_BODY : ST_HEAD;
	}
	if (expect) {
		if (strcasecmp(expect, "100-continue") != 0) {
			*why = "unsupported Expect";
			return 417;
		}
		if (h->http_minor == 1 && c->state != ST_HEAD &&
		    !evbuffer_get_length(bufferevent_get_input(c->bev)))
			bufferevent_write(c->bev,
					  "HTTP/1.1 100 Continue\r\n\r\n", 25);
	}
	return 0;
}

static int body_add(struct th_conn *c, struct evbuffer *in, size_t n)
{
	struct engy_http_exchange *x = c->x;

	if (x->body_len + n > (uint64_t)c->ti->conf.max_body)
		return 413;
	if (!engy_grow_by(&x->body, &x->body_cap, x->body_len + 1, n, 1))
		return 500;
	evbuffer_remove(in, x->body + x->body_len, n);
	x->body_len += n;
	x->body[x->body_len] = 0; /* handlers may treat it as a string */
	return 0;
}

/* Read the request head; 1 when one was parsed, 0 to wait, or a status. */
static int read_head(struct th_conn *c, struct evbuffer *in, const char **why)
{
	static const struct engy_http_limits limits = {
		.head = TH_MAX_HEAD,
		.fields = TH_MAX_HEADERS,
		.target = TH_MAX_TARGET,
	};
	struct evbuffer_ptr a, b, end;
	const unsigned char *head;
	const char *perr;
	struct engy_http_exchange *x;
	size_t len, head_len;
	int rc;

	while (!c->started && evbuffer_get_length(in)) {
		unsigned char ch;

		evbuffer_copyout(in, &ch, 1);
		if (ch != '\r' && ch != '\n')
			break;
		evbuffer_drain(in, 1); /* stray CRLF between requests */
	}
	len = evbuffer_get_length(in);
	if (!len)
		return 0;
	if (!c->started) {
		c->started = true;
		arm_timer(c, (long)c->ti->conf.timeout_s * 1000);
	}
	a = evbuffer_search(in, "\n\r\n", 3, NULL);
	b = evbuffer_search(in, "\n\n", 2, NULL);
	if (a.pos < 0 && b.pos < 0) {
		*why = "request head too large";
		return len > TH_MAX_HEAD ? 431 : 0;
	}
	end = a.pos >= 0 && (b.pos < 0 || a.pos < b.pos) ? a : b;
	head_len = (size_t)end.pos + (end.pos == a.pos ? 3 : 2);
	if (head_len > TH_MAX_HEAD) {
		*why = "request head too large";
		return 431;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		*why = "out of memory";
		return 500;
	}
	x->c = c;
	c->x = x;
	head = evbuffer_pullup(in, (ev_ssize_t)head_len);
	rc = head ? engy_http_head_parse_ex(&x->head, (const char *)head,
					    head_len, true, &limits, &perr)
		  : -ENOMEM;
	evbuffer_drain(in, head_len);
	switch (rc) {
	case 0:
		break;
	case -EPROTONOSUPPORT:
		*why = "HTTP version not supported";
		return 505;
	case -ENAMETOOLONG:
		*why = "request target too long";
		return 414;
	case -E2BIG:
		*why = "too many header fields";
		return 431;
	case -EMSGSIZE:
		*why = "request head too large";
		return 431;
	case -EBADMSG: /* ambiguous framing: the parser says how */
		*why = perr;
		return 400;
	case -ENOMEM:
		*why = "out of memory";
		return 500;
	default:
		*why = "malformed request";
		return 400;
	}
	c->state = ST_HEAD;
	c->need = 0;
	c->trailer_bytes = 0;
	rc = setup_body(c, x, why);
	return rc ? rc : 1;
}

/* Parse what the input holds; stops once a request is dispatched. */
static void process(struct th_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	const char *why = "malformed request";
	char *line;
	size_t n;
	int rc;

	for (;;) {
		switch (c->state) {
		case ST_HEAD:
			rc = read_head(c, in, &why);
			if (rc == 0)
				return;
			if (rc != 1)
				goto fail;
			if (c->state == ST_HEAD) {
				ready(c);
				return;
			}
			break;
		case ST_BODY:
		case ST_CHUNK_DATA:
			n = evbuffer_get_length(in);
			if (n > c->need)
				n = (size_t)c->need;
			if (!n)
				return;
			rc = body_add(c, in, n);
			if (rc) {
				why = rc == 413 ? "request body too large"
						: "out of memory";
				goto fail;
			}
			c->need -= n;
			if (c->need)
				return;
			if (c->state == ST_BODY) {
				ready(c);
				return;
			}
			c->state = ST_CHUNK_END;
			break;
		case ST_CHUNK_SIZE:
		case ST_CHUNK_END:
		case ST_TRAILER:
			line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF);
			if (!line) {
				if (evbuffer_get_length(in) <=
				    TH_MAX_CHUNK_LINE)
					return;
				why = "chunk framing line too long";
				rc = 400;
				goto fail;
			}
			rc = 0;
			if (c->state == ST_CHUNK_END) {
				rc = n ? 400 : 0;
				c->state = ST_CHUNK_SIZE;
			} else if (c->state == ST_TRAILER) {
				c->trailer_bytes += n + 2;
				if (c->trailer_bytes > TH_MAX_HEAD)
					rc = 431;
				else if (!n) {
					free(line);
					ready(c);
					return;
				}
			} else {
				const char *end = line;
				unsigned long long sz = 0;

				/* 1*HEXDIG (RFC 9112 §7.1), nothing else: no
				 * "0x", no sign, at most 16 digits. */
				while (isxdigit((unsigned char)*end) &&
				       end - line < 16) {
					sz = sz * 16 +
					     (unsigned long long)(isdigit((
									  unsigned char)*end)
									  ? *end - '0'
									  : (tolower((
										     unsigned char)*end) -
									     'a' +
									     10));
					end++;
				}
				if (end == line ||
				    (*end && *end != ';' && *end != ' ' &&
				     *end != '\t'))
					rc = 400;
				else if (sz > (unsigned long long)
							 c->ti->conf.max_body ||
					 c->x->body_len + sz >
						 (unsigned long long)
							 c->ti->conf.max_body)
					rc = 413;
				c->need = sz;
				c->state = sz ? ST_CHUNK_DATA : ST_TRAILER;
			}
			free(line);
			if (rc) {
				why = rc == 413	  ? "request body too large"
				      : rc == 431 ? "trailer too large"
						  : "bad chunked framing";
				goto fail;
			}
			break;
		case ST_CLOSING:
		case ST_LINGER:
			evbuffer_drain(in, evbuffer_get_length(in));
			return;
		default: /* ST_HANDLER: pipelined bytes wait */
			return;
		}
	}
fail:
	conn_fail(c, rc, why);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	process(arg);
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
	process(arg);
}

static void on_write(struct bufferevent *bev, void *arg)
{
	struct th_conn *c = arg;

	if (c->state == ST_CLOSING)
		begin_linger(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct th_conn *c = arg;

	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
		return;
	if (c->x && c->x->dispatched && c->state == ST_HANDLER)
		th_exchange_gone(c->ti, c->x);
	th_conn_free(c); /* and the exchange, if one is left */
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct th_conn *c = arg;

	switch (c->state) {
	case ST_HEAD:
		if (!c->started && !c->x) {
			th_conn_free(c); /* idle keep-alive */
			return;
		}
		/* fall through */
	case ST_BODY:
	case ST_CHUNK_SIZE:
	case ST_CHUNK_DATA:
	case ST_CHUNK_END:
	case ST_TRAILER:
		conn_fail(c, 408, "request not received in time");
		return;
	case ST_LINGER:
		th_conn_free(c);
		return;
	default:
		return;
	}
}

static bool idle(const struct th_conn *c)
{
	return c->state == ST_HEAD && !c->started && !c->x;
}

static bool older(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/*
 * Idle keep-alive connections are what a client can hold for free: at
 * most max_idle_per_client per address (a new one closes that address's
 * oldest idle one), and at max_connections the oldest idle one anywhere
 * makes room.  A client's pool re-dials a closed idle connection.
 */
static void reclaim(struct th_inst *ti, struct th_conn *c)
{
	struct th_conn *x, *old = NULL;
	int64_t n = 0;

	for (x = ti->conns; x; x = x->next) {
		if (x == c || !x->counted || !idle(x) ||
		    strcmp(x->addr, c->addr) != 0)
			continue;
		n++;
		if (!old || older(&x->idle_since, &old->idle_since))
			old = x;
	}
	if (old && n >= ti->conf.max_idle_per_client) {
		th_conn_free(old);
		if (ti->m_reclaimed)
			ti->host->metric_add(ti->m_reclaimed, 1);
	}
	if (ti->n_conns < (unsigned)ti->conf.max_connections)
		return;
	old = NULL;
	for (x = ti->conns; x; x = x->next)
		if (x != c && x->counted && idle(x) &&
		    (!old || older(&x->idle_since, &old->idle_since)))
			old = x;
	if (old) {
		th_conn_free(old);
		if (ti->m_reclaimed)
			ti->host->metric_add(ti->m_reclaimed, 1);
	}
}

void th_conn_accept(struct th_inst *ti, int fd, const struct sockaddr *sa,
		    int salen)
{
	struct timeval wt = { (time_t)ti->conf.timeout_s, 0 };
	char addr[INET6_ADDRSTRLEN] = "?";
	struct th_conn *c;
	int one = 1, port = 0;

	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->ti = ti;
	c->bev = bufferevent_socket_new(ti->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->timer = evtimer_new(ti->base, on_timer, c);
	c->kick = event_new(ti->base, -1, 0, on_kick, c);
	if (!c->bev || !c->timer || !c->kick) {
		if (c->bev)
			bufferevent_free(c->bev);
		else
			close(fd);
		if (c->timer)
			event_free(c->timer);
		if (c->kick)
			event_free(c->kick);
		free(c);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof(addr));
		port = ntohs(s4->sin_port);
		snprintf(c->remote, sizeof(c->remote), "%s:%d", addr, port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof(addr));
		port = ntohs(s6->sin6_port);
		snprintf(c->remote, sizeof(c->remote), "[%s]:%d", addr, port);
	} else {
		snprintf(c->remote, sizeof(c->remote), "local");
	}
	snprintf(c->addr, sizeof(c->addr), "%s", addr);
	clock_gettime(CLOCK_MONOTONIC, &c->idle_since);
	c->next = ti->conns;
	if (c->next)
		c->next->pprev = &c->next;
	c->pprev = &ti->conns;
	ti->conns = c;
	bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
	bufferevent_setwatermark(c->bev, EV_READ, 0, TH_READ_HIGH);
	bufferevent_set_timeouts(c->bev, NULL, &wt);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	c->state = ST_HEAD;
	reclaim(ti, c);
	if (ti->n_conns >= (unsigned)ti->conf.max_connections) {
		if (ti->m_refused)
			ti->host->metric_add(ti->m_refused, 1);
		conn_fail(c, 503, "too many connections");
		return;
	}
	c->counted = true;
	ti->n_conns++;
	if (ti->m_conns)
		ti->host->metric_set(ti->m_conns, ti->n_conns);
	arm_timer(c,
		  (long)ti->conf.timeout_s * 1000); /* idle until a request */
}

void th_conn_flush_all(struct th_inst *ti, int ms)
{
	struct timespec t0, t;
	struct th_conn *c;
	bool pending = true;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (pending) {
		long left;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = ms - ((t.tv_sec - t0.tv_sec) * 1000 +
			     (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			return;
		pending = false;
		for (c = ti->conns; c; c = c->next) {
			struct evbuffer *out = bufferevent_get_output(c->bev);
			struct pollfd p = { bufferevent_getfd(c->bev), POLLOUT,
					    0 };

			if (!evbuffer_get_length(out) || p.fd < 0)
				continue;
			/* A socket bufferevent keeps the buffer's start
			 * frozen for its own writes. */
			evbuffer_unfreeze(out, 1);
			if (poll(&p, 1, (int)(left < 50 ? left : 50)) == 1 &&
			    (p.revents & POLLOUT)) {
				if (evbuffer_write(out, p.fd) < 0)
					evbuffer_drain(
						out, evbuffer_get_length(out));
			}
			pending |= evbuffer_get_length(out) > 0;
		}
	}
}

void th_conn_close_idle(struct th_inst *ti)
{
	struct th_conn *c = ti->conns, *next;

	for (; c; c = next) {
		next = c->next;
		if (c->state == ST_HEAD && !c->started && !c->x)
			th_conn_free(c);
	}
}

bool th_conn_holds(const struct th_conn *c, const struct engy_http_exchange *x)
{
	return c && c->x == x;
}

struct th_inst *th_conn_inst(const struct th_conn *c)
{
	return c->ti;
}

struct evbuffer *th_conn_output(struct engy_http_exchange *x)
{
	struct th_conn *c = x->c;

	if (!c || c->x != x || c->state != ST_HANDLER)
		return NULL;
	return bufferevent_get_output(c->bev);
}

void th_conn_end(struct engy_http_exchange *x)
{
	struct th_conn *c = x->c;
	struct th_inst *ti = c->ti;
	bool keep = x->keepalive && !ti->stopping;

	c->x = NULL;
	if (x->dispatched && ti->n_inflight)
		ti->n_inflight--;
	if (ti->m_inflight)
		ti->host->metric_set(ti->m_inflight, ti->n_inflight);
	exchange_free(x);
	if (keep) {
		c->state = ST_HEAD;
		c->started = false;
		clock_gettime(CLOCK_MONOTONIC, &c->idle_since);
		arm_timer(c, (long)ti->conf.timeout_s * 1000);
		event_active(c->kick, 0, 0); /* pipelined bytes, if any */
		return;
	}
	c->state = ST_CLOSING;
	if (!evbuffer_get_length(bufferevent_get_output(c->bev)))
		begin_linger(c);
}
