/* SPDX-License-Identifier: MIT */
/*
 * One websocket connection once the handshake is done, either side: frame
 * I/O through the shared codec, ping/pong keepalive, the close handshake,
 * and the connection's end (on_close, then a short linger that flushes the
 * close frame).  Payloads are never logged: only ids, sizes and codes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/rand.h>

#include "logfmt.h"
#include "ws_int.h"

uint64_t ws_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Frames are small and often (streamed chunks): no Nagle delay. */
void ws_nodelay(evutil_socket_t fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static struct timeval tv_s(int64_t s)
{
	struct timeval tv = { (time_t)s, 0 };

	return tv;
}

static void timer_cb(evutil_socket_t fd, short what, void *arg);
static void ping_cb(evutil_socket_t fd, short what, void *arg);

struct ws_conn *ws_conn_new(struct ws_inst *in, bool server)
{
	struct ws_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->in = in;
	c->id = ++in->next_id;
	c->server = server;
	engy_ws_parser_init(&c->parser, server,
			    (size_t)in->conf.max_message_bytes);
	c->timer = evtimer_new(in->base, timer_cb, c);
	c->ping = event_new(in->base, -1, EV_PERSIST, ping_cb, c);
	if (!c->timer || !c->ping) {
		if (c->timer)
			event_free(c->timer);
		if (c->ping)
			event_free(c->ping);
		free(c);
		return NULL;
	}
	c->next = in->conns;
	if (c->next)
		c->next->pprev = &c->next;
	c->pprev = &in->conns;
	in->conns = c;
	if (server)
		in->n_server++;
	return c;
}

void ws_conn_free(struct ws_conn *c)
{
	if (c->busy) {
		c->dead = true;
		return;
	}
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	if (c->server)
		c->in->n_server--;
	if (c->leg && c->leg->conn == c)
		c->leg->conn = NULL;
	if (c->bev)
		bufferevent_free(c->bev);
	event_free(c->timer);
	event_free(c->ping);
	engy_ws_parser_free(&c->parser);
	engy_http_head_free(&c->head);
	free(c);
}

void ws_conn_hold(struct ws_conn *c)
{
	c->busy++;
}

void ws_conn_release(struct ws_conn *c)
{
	if (--c->busy == 0 && c->dead) {
		c->dead = false;
		ws_conn_free(c);
	}
}

void ws_conn_detach(struct ws_conn *c)
{
	c->h = NULL;
	c->arg = NULL;
	c->notify = false;
	c->leg = NULL;
	c->ai_next = NULL;
}

/* One whole frame, header and (masked, on the client) payload, at once. */
static int send_frame(struct ws_conn *c, int opcode, const void *data,
		      size_t len)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	uint8_t hdr[ENGY_WS_HEADER_MAX], mask[4];
	struct evbuffer_iovec v;
	size_t n;

	if (!c->server && RAND_bytes(mask, sizeof(mask)) != 1)
		return -EIO;
	n = engy_ws_frame_header(hdr, true, opcode, len,
				 c->server ? NULL : mask);
	if (evbuffer_reserve_space(out, (ev_ssize_t)(n + len), &v, 1) != 1 ||
	    v.iov_len < n + len)
		return -ENOMEM;
	memcpy(v.iov_base, hdr, n);
	if (c->server)
		memcpy((uint8_t *)v.iov_base + n, data, len);
	else
		engy_ws_mask((uint8_t *)v.iov_base + n, data, len, mask, 0);
	v.iov_len = n + len;
	return evbuffer_commit_space(out, &v, 1) < 0 ? -ENOMEM : 0;
}

int ws_conn_send(struct ws_conn *c, int type, const void *data, size_t len)
{
	struct ws_inst *in = c->in;
	int rc;

	if (type != ENGY_WS_TEXT && type != ENGY_WS_BINARY)
		return -EINVAL;
	if (!data && len)
		return -EINVAL;
	if (c->state != WS_OPEN)
		return -ENOTCONN;
	if (len > (uint64_t)in->conf.max_message_bytes)
		return -EMSGSIZE;
	if (type == ENGY_WS_TEXT && !engy_utf8_valid(data, len))
		return -EILSEQ;
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) >
	    (uint64_t)in->conf.max_send_buffer_bytes)
		return -ENOBUFS;
	rc = send_frame(
		c, type == ENGY_WS_TEXT ? ENGY_WS_OP_TEXT : ENGY_WS_OP_BINARY,
		data ? data : "", len);
	if (rc < 0)
		return rc;
	ws_count(in, in->m.msgs_out, 1);
	ws_count(in, in->m.bytes_out, (double)len);
	return 0;
}

int ws_conn_close(struct ws_conn *c, int code, const char *reason)
{
	uint8_t pl[ENGY_WS_CONTROL_MAX];
	struct timeval tv = tv_s(c->in->conf.close_timeout_s);
	int n = engy_ws_close_payload(pl, code, reason);

	if (n < 0)
		return -EINVAL;
	if (c->state != WS_OPEN)
		return -ENOTCONN;
	if (send_frame(c, ENGY_WS_OP_CLOSE, pl, (size_t)n) < 0)
		return -ENOMEM;
	c->state = WS_CLOSING;
	event_del(c->ping);
	evtimer_add(c->timer, &tv);
	engy_dbg(c->in->host, "event=ws_closing conn=%llu code=%d",
		 (unsigned long long)c->id, code);
	return 0;
}

static void linger_read(struct bufferevent *bev, void *arg)
{
	evbuffer_drain(bufferevent_get_input(bev),
		       evbuffer_get_length(bufferevent_get_input(bev)));
}

/*
 * Everything queued went out: send our end (TLS close_notify, then FIN)
 * and read until the peer's.  Closing while its bytes still arrive would
 * reset the connection, which can destroy our close frame or refusal
 * before the peer has read it.  close_timeout_s bounds the wait.
 */
static void linger_flushed(struct ws_conn *c)
{
	SSL *ssl = bufferevent_openssl_get_ssl(c->bev);

	if (c->half_closed)
		return;
	c->half_closed = true;
	/* The output is empty, so no TLS record is half written. */
	if (ssl) {
		SSL_shutdown(ssl);
		ERR_clear_error();
	}
	shutdown(bufferevent_getfd(c->bev), SHUT_WR);
}

static void linger_write(struct bufferevent *bev, void *arg)
{
	linger_flushed(arg);
}

static void linger_event(struct bufferevent *bev, short what, void *arg)
{
	ws_conn_free(arg);
}

/* Flush what is queued (a close frame, a refusal), then close. */
void ws_conn_linger(struct ws_conn *c)
{
	struct timeval tv = tv_s(c->in->conf.close_timeout_s);

	if (!c->bev) {
		ws_conn_free(c);
		return;
	}
	c->state = WS_DONE;
	event_del(c->ping);
	bufferevent_setcb(c->bev, linger_read, linger_write, linger_event, c);
	bufferevent_set_timeouts(c->bev, NULL, NULL);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	evtimer_add(c->timer, &tv);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		linger_flushed(c);
}

void ws_conn_end(struct ws_conn *c, int code, const char *reason)
{
	struct ws_inst *in = c->in;
	char r[3 * ENGY_WS_REASON_MAX + 8];

	if (c->state == WS_DONE)
		return;
	if (c->state != WS_OPEN && c->state != WS_CLOSING) {
		ws_conn_free(c); /* never opened: nothing to report */
		return;
	}
	ws_conn_hold(c);
	c->state = WS_DONE;
	event_del(c->timer);
	event_del(c->ping);
	ws_count(in, in->m.open[c->server], -1);
	engy_logfmt_value(r, sizeof(r), reason);
	engy_info(in->host,
		  "event=ws_closed conn=%llu code=%d reason=%s open_ms=%llu",
		  (unsigned long long)c->id, code, r,
		  (unsigned long long)(ws_now_ms() - c->opened_ms));
	if (c->notify && c->h) {
		c->notify = false;
		c->h->on_close(c->arg, (struct engy_ws_conn *)c, code, reason);
	}
	c->notify = false;
	if (c->leg)
		ws_leg_conn_ended(c->leg, c);
	ws_conn_linger(c);
	ws_conn_release(c);
}

/* This side fails the connection: say why in a close frame, and end. */
static void conn_fail(struct ws_conn *c, int code, const char *why)
{
	struct ws_inst *in = c->in;
	uint8_t pl[ENGY_WS_CONTROL_MAX];
	int n;

	ws_count(in, in->m.protocol_errors, 1);
	engy_warn(in->host, "event=ws_fail conn=%llu code=%d why=\"%s\"",
		  (unsigned long long)c->id, code, why);
	if (c->state == WS_OPEN) {
		n = engy_ws_close_payload(pl, code, why);
		if (n > 0)
			send_frame(c, ENGY_WS_OP_CLOSE, pl, (size_t)n);
	}
	ws_conn_end(c, code, why);
}

static void on_frame(struct ws_conn *c, const struct engy_ws_event *ev)
{
	struct ws_inst *in = c->in;
	uint8_t pl[2];
	char reason[ENGY_WS_REASON_MAX + 1];

	switch (ev->type) {
	case ENGY_WS_EV_MESSAGE:
		if (c->state != WS_OPEN)
			return; /* after our close: discarded */
		ws_count(in, in->m.msgs_in, 1);
		ws_count(in, in->m.bytes_in, (double)ev->len);
		if (c->h)
			c->h->on_message(c->arg, (struct engy_ws_conn *)c,
					 ev->opcode == ENGY_WS_OP_TEXT
						 ? ENGY_WS_TEXT
						 : ENGY_WS_BINARY,
					 ev->data, ev->len);
		return;
	case ENGY_WS_EV_PING:
		if (c->state == WS_OPEN)
			send_frame(c, ENGY_WS_OP_PONG, ev->data, ev->len);
		return;
	case ENGY_WS_EV_PONG:
		c->ping_unanswered = false;
		return;
	case ENGY_WS_EV_CLOSE:
		memcpy(reason, ev->data, ev->len);
		reason[ev->len] = '\0';
		if (c->state == WS_OPEN) {
			/* Echo the peer's code (none when it gave none). */
			pl[0] = (uint8_t)(ev->code >> 8);
			pl[1] = (uint8_t)ev->code;
			send_frame(c, ENGY_WS_OP_CLOSE, pl,
				   ev->code == 1005 ? 0 : 2);
		}
		ws_conn_end(c, ev->code, reason);
		return;
	default:
		return;
	}
}

static void process(struct ws_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct evbuffer_iovec v;
	struct engy_ws_event ev;
	size_t used;
	int rc;

	while ((c->state == WS_OPEN || c->state == WS_CLOSING) &&
	       evbuffer_get_length(in) > 0) {
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		rc = engy_ws_parse(&c->parser, v.iov_base, v.iov_len, &used,
				   &ev);
		evbuffer_drain(in, used);
		if (rc < 0) {
			conn_fail(c, c->parser.fail_code,
				  c->parser.fail_reason);
			break;
		}
		if (rc > 0)
			on_frame(c, &ev);
	}
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct ws_conn *c = arg;

	ws_conn_hold(c);
	process(c);
	ws_conn_release(c);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct ws_conn *c = arg;
	struct ws_inst *in = c->in;

	ws_conn_hold(c);
	if (what & BEV_EVENT_TIMEOUT) {
		ws_count(in, in->m.ping_timeouts, 1);
		engy_warn(in->host,
			  "event=ws_ping_timeout conn=%llu silent_s=%lld",
			  (unsigned long long)c->id,
			  (long long)in->conf.ping_timeout_s);
		ws_conn_end(c, ENGY_WS_CLOSE_ABNORMAL, "ping timeout");
	} else if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		ws_conn_end(c, ENGY_WS_CLOSE_ABNORMAL,
			    what & BEV_EVENT_EOF
				    ? "connection closed without a close frame"
				    : "connection error");
	}
	/* The socket is gone or silent: nothing left worth flushing. */
	ws_conn_free(c);
	ws_conn_release(c);
}

static void ping_cb(evutil_socket_t fd, short what, void *arg)
{
	struct ws_conn *c = arg;
	uint64_t now = ws_now_ms();
	uint8_t pl[8];
	int i;

	if (c->state != WS_OPEN)
		return;
	if (c->ping_unanswered)
		ws_count(c->in, c->in->m.pings_missed, 1);
	for (i = 0; i < 8; i++)
		pl[i] = (uint8_t)(now >> (56 - 8 * i));
	if (send_frame(c, ENGY_WS_OP_PING, pl, sizeof(pl)) == 0)
		c->ping_unanswered = true;
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct ws_conn *c = arg;

	ws_conn_hold(c);
	switch (c->state) {
	case WS_DIALING:
	case WS_HANDSHAKE:
		if (c->leg) {
			ws_leg_dial_failed(c->leg, -ETIMEDOUT, 0,
					   "handshake timeout");
		} else {
			engy_info(
				c->in->host,
				"event=ws_refused conn=%llu remote=%s status=408 why=\"handshake timeout\"",
				(unsigned long long)c->id, c->remote);
			ws_conn_free(c);
		}
		break;
	case WS_CLOSING:
		ws_conn_end(c, ENGY_WS_CLOSE_ABNORMAL, "close timeout");
		ws_conn_free(c);
		break;
	case WS_DONE:
		ws_conn_free(c);
		break;
	default:
		break;
	}
	ws_conn_release(c);
}

static const char *open_header(const struct engy_ws_open *o, const char *name)
{
	const struct ws_conn *c = o->priv;

	return engy_http_head_get(&c->head, name);
}

int ws_conn_opened(struct ws_conn *c, const char *path, const char *query)
{
	struct ws_inst *in = c->in;
	struct engy_ws_open o;
	struct timeval ping = tv_s(in->conf.ping_interval_s);
	struct timeval quiet = tv_s(in->conf.ping_timeout_s);
	int rc = 0;

	ws_conn_hold(c);
	c->state = WS_OPEN;
	c->opened_ms = ws_now_ms();
	event_del(c->timer);
	bufferevent_setcb(c->bev, read_cb, NULL, event_cb, c);
	/* No byte for ping_timeout_s (pongs included): the peer is gone. */
	bufferevent_set_timeouts(c->bev,
				 in->conf.ping_timeout_s ? &quiet : NULL, NULL);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	if (in->conf.ping_interval_s)
		event_add(c->ping, &ping);
	ws_count(in, in->m.opened[c->server], 1);
	ws_count(in, in->m.open[c->server], 1);
	memset(&o, 0, sizeof(o));
	o.path = path;
	o.query = query;
	o.remote = c->remote;
	o.header = open_header;
	o.leg = (struct engy_ws_leg *)c->leg;
	o.opens = c->leg ? c->leg->opens : 0;
	o.priv = c;
	if (c->h)
		rc = c->h->on_open(c->arg, (struct engy_ws_conn *)c, &o);
	engy_http_head_free(&c->head);
	if (rc != 0) {
		engy_info(in->host, "event=ws_open_refused conn=%llu rc=%d",
			  (unsigned long long)c->id, rc);
		c->h = NULL;
		if (c->state == WS_OPEN)
			ws_conn_close(c, ENGY_WS_CLOSE_POLICY, "refused");
	} else if (c->state != WS_DONE) {
		c->notify = c->h != NULL;
	}
	/* Frames that came right behind the handshake. */
	process(c);
	ws_conn_release(c);
	return 0;
}
