/* SPDX-License-Identifier: MIT */
/*
 * transport-ws as the host sees it: dlopen() the built module and drive it
 * through its ops on a real event loop, engy client against engy server,
 * and each side against a hand-driven raw peer (ws_raw.c) that sends the
 * bad frames and handshakes a well-behaved peer never would.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include <engy/engy.h>

#include "ws_host.h"
#include "ws_raw.h"

static void *dl;
static const struct engy_plugin *plug;
static const struct engy_transport_ops *ops;
static struct event_base *base;

struct side {
	struct engy_host *h;
	void *conf;
	void *inst;
};

static void setup(void)
{
	plug = wsth_load(TRANSPORT_WS_SO, &dl);
	ck_assert_ptr_nonnull(plug);
	ck_assert_str_eq(plug->name, "transport-ws");
	ops = plug->ops;
	ck_assert_str_eq(ops->proto, "ws");
	base = event_base_new();
	raw_init(base);
}

static void teardown(void)
{
	event_base_free(base);
	dlclose(dl);
}

static int make(struct side *s, const char *const *kv)
{
	int rc;

	s->h = wsth_new("ws", base);
	s->conf = wsth_conf(plug, kv);
	s->inst = NULL;
	rc = plug->create(s->h, s->conf, &s->inst);
	if (rc == 0)
		ck_assert_int_eq(plug->start(s->inst), 0);
	return rc;
}

static bool no_jobs(void *arg)
{
	return wsth_pending(arg) == 0;
}

static void unmake(struct side *s)
{
	if (s->inst) {
		plug->stop(s->inst);
		wsth_run(base, 2000, no_jobs, s->h);
		plug->destroy(s->inst);
	}
	wsth_conf_free(plug, s->conf);
	wsth_free(s->h);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* What a handler saw. */
struct rec {
	void *inst;
	bool echo;
	const char *const *say;		/* text messages to send on open */
	int opens, closes, msgs, errors;
	int close_after_errors;		/* ws_leg_close() at this many */
	struct engy_ws_conn *conn;
	struct engy_ws_leg *leg, *open_leg;
	uint32_t open_count;
	int code, err, status;
	char reason[128], path[64], query[64], hdr[64], remote[64];
	int type[8];
	size_t len[8];
	uint8_t *data[8];
	long t_open[8], t_close[8], t_err[16];
};

static void rec_free(struct rec *r)
{
	int i;

	for (i = 0; i < 8; i++)
		free(r->data[i]);
}

static int on_open(void *arg, struct engy_ws_conn *c,
		   const struct engy_ws_open *o)
{
	struct rec *r = arg;
	const char *h = o->header(o, "x-test");
	int i;

	r->conn = c;
	if (r->opens < 8)
		r->t_open[r->opens] = now_ms();
	r->opens++;
	r->open_leg = o->leg;
	r->open_count = o->opens;
	snprintf(r->path, sizeof(r->path), "%s", o->path);
	snprintf(r->query, sizeof(r->query), "%s", o->query ? o->query : "");
	snprintf(r->hdr, sizeof(r->hdr), "%s", h ? h : "");
	snprintf(r->remote, sizeof(r->remote), "%s", o->remote);
	ck_assert_ptr_null(ops->ws_user(r->inst, c));
	ops->ws_set_user(r->inst, c, r);
	for (i = 0; r->say && r->say[i]; i++)
		ck_assert_int_eq(ops->ws_send(r->inst, c, ENGY_WS_TEXT,
					      r->say[i], strlen(r->say[i])), 0);
	return 0;
}

static void on_message(void *arg, struct engy_ws_conn *c, int type,
		       const uint8_t *data, size_t len)
{
	struct rec *r = arg;

	ck_assert_ptr_eq(ops->ws_user(r->inst, c), r);
	if (r->msgs < 8) {
		r->type[r->msgs] = type;
		r->len[r->msgs] = len;
		r->data[r->msgs] = malloc(len + 1);
		memcpy(r->data[r->msgs], data, len);
	}
	r->msgs++;
	if (r->echo)
		ck_assert_int_eq(ops->ws_send(r->inst, c, type, data, len), 0);
}

static void on_close(void *arg, struct engy_ws_conn *c, int code,
		     const char *reason)
{
	struct rec *r = arg;

	ck_assert_ptr_eq(c, r->conn);
	if (r->closes < 8)
		r->t_close[r->closes] = now_ms();
	r->closes++;
	r->code = code;
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	r->conn = NULL;
}

static void on_dial_error(void *arg, struct engy_ws_leg *leg, int err,
			  int status)
{
	struct rec *r = arg;

	if (r->errors < 16)
		r->t_err[r->errors] = now_ms();
	r->errors++;
	r->err = err;
	r->status = status;
	if (r->close_after_errors && r->errors == r->close_after_errors)
		ops->ws_leg_close(r->inst, leg);
}

static const struct engy_ws_handler handler = {
	.size = sizeof(struct engy_ws_handler),
	.on_open = on_open,
	.on_message = on_message,
	.on_close = on_close,
	.on_dial_error = on_dial_error,
};

struct wait {
	int *v;
	int at_least;
};

static bool reached(void *arg)
{
	struct wait *w = arg;

	return *w->v >= w->at_least;
}

#define WAIT(var, n, ms) do { \
		struct wait w_ = { &(var), (n) }; \
		ck_assert_msg(wsth_run(base, (ms), reached, &w_), \
			      #var " stayed at %d, wanted %d", (var), (n)); \
	} while (0)

static char url[128];

static const char *url_of(int port, const char *rest)
{
	snprintf(url, sizeof(url), "ws://127.0.0.1:%d%s", port, rest);
	return url;
}

START_TEST(test_echo_close_reopen)
{
	static const char *const kv[] = { "listen=127.0.0.1:0",
					  "reconnect_min_ms=200", NULL };
	static const char *const say[] = { "hello", "SECRET-PAYLOAD-42", "",
					   "\xce\xba\xe1\xbd\xb9", NULL };
	static const char *const hdrs[] = { "X-Test", "KEYSECRET", NULL };
	struct side srv, cli;
	struct rec s = { 0 }, c = { 0 };
	struct engy_ws_leg *leg;
	static uint8_t big[1 << 20];
	size_t i;
	int port;

	ck_assert_int_eq(make(&srv, kv), 0);
	ck_assert_int_eq(make(&cli, kv + 1), 0);
	s.inst = srv.inst;
	s.echo = true;
	c.inst = cli.inst;
	c.say = say;
	ck_assert_int_eq(ops->ws_listen(srv.inst, "/gw", &handler, &s), 0);
	ck_assert_int_eq(ops->ws_listen(srv.inst, "/gw", &handler, &s), -EEXIST);
	port = wsth_listen_port(srv.h);
	ck_assert_int_gt(port, 0);
	ck_assert_int_eq(ops->ws_dial(cli.inst, url_of(port, "/gw/3?k=QSECRET"),
				      hdrs, &handler, &c, &leg), 0);
	ck_assert_int_eq(c.opens, 0);	/* never inside ws_dial() */
	WAIT(c.msgs, 4, 3000);
	/* The server saw the path, query, header and peer. */
	ck_assert_int_eq(s.opens, 1);
	ck_assert_str_eq(s.path, "/gw/3");
	ck_assert_str_eq(s.query, "k=QSECRET");
	ck_assert_str_eq(s.hdr, "KEYSECRET");
	ck_assert(strncmp(s.remote, "127.0.0.1:", 10) == 0);
	ck_assert_ptr_null(s.open_leg);
	/* The client leg: first open, its own leg. */
	ck_assert_ptr_eq(c.open_leg, leg);
	ck_assert_uint_eq(c.open_count, 1);
	ck_assert_str_eq(c.path, "/gw/3");
	for (i = 0; say[i]; i++) {
		ck_assert_int_eq(c.type[i], ENGY_WS_TEXT);
		ck_assert_uint_eq(c.len[i], strlen(say[i]));
		ck_assert_mem_eq(c.data[i], say[i], c.len[i]);
	}
	/* A 1 MiB binary message both ways. */
	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 31);
	ck_assert_int_eq(ops->ws_send(cli.inst, c.conn, ENGY_WS_BINARY, big,
				      sizeof(big)), 0);
	WAIT(c.msgs, 5, 3000);
	ck_assert_int_eq(c.type[4], ENGY_WS_BINARY);
	ck_assert_uint_eq(c.len[4], sizeof(big));
	ck_assert_mem_eq(c.data[4], big, sizeof(big));
	ck_assert_double_eq(wsth_metric(srv.h, "engy_ws_messages_total",
					"dir=\"in\""), 5);
	ck_assert_double_eq(wsth_metric(cli.h, "engy_ws_bytes_total",
					"dir=\"out\""), 5 + 17 + 0 + 5 + (1 << 20));
	ck_assert_double_eq(wsth_metric(srv.h, "engy_ws_connections",
					"side=\"server\""), 1);

	/* The client closes: both sides learn the code and reason. */
	ck_assert_int_eq(ops->ws_close(cli.inst, c.conn, 4000, "done"), 0);
	WAIT(c.closes, 1, 3000);
	WAIT(s.closes, 1, 3000);
	ck_assert_int_eq(s.code, 4000);
	ck_assert_str_eq(s.reason, "done");
	ck_assert_int_eq(c.code, 4000);
	/* The leg re-dials on its own, after ~reconnect_min_ms. */
	WAIT(c.opens, 2, 3000);
	ck_assert_uint_eq(c.open_count, 2);
	ck_assert_int_ge(c.t_open[1] - c.t_close[0], 200 * 3 / 4 - 5);
	ck_assert_int_le(c.t_open[1] - c.t_close[0], 200 * 5 / 4 + 150);
	ck_assert_double_eq(wsth_metric(cli.h, "engy_ws_reconnects_total", NULL),
			    1);

	/* The server side closes this time (what a `reconnect` asks for). */
	WAIT(s.opens, 2, 2000);
	ck_assert_int_eq(ops->ws_close(srv.inst, s.conn, 1001, "draining"), 0);
	ck_assert_int_eq(ops->ws_close(srv.inst, s.conn, 1000, NULL), -ENOTCONN);
	WAIT(c.closes, 2, 3000);
	ck_assert_int_eq(c.code, 1001);
	ck_assert_str_eq(c.reason, "draining");
	WAIT(c.opens, 3, 3000);

	/* Closing the leg: the server sees 1001, the leg goes quiet. */
	ops->ws_leg_close(cli.inst, leg);
	WAIT(s.closes, 3, 3000);
	ck_assert_int_eq(s.code, 1001);
	wsth_run(base, 600, NULL, NULL);
	ck_assert_int_eq(c.opens, 3);
	ck_assert_int_eq(c.closes, 2);	/* no callback after ws_leg_close() */
	ck_assert_int_eq(s.opens, 3);

	/* Metadata only: no payload, query or header value in the logs. */
	for (i = 0; i < 2; i++) {
		const char *log = wsth_log(i ? cli.h : srv.h);

		ck_assert_ptr_nonnull(strstr(log, "event=ws_open"));
		ck_assert_ptr_null(strstr(log, "SECRET"));
	}
	rec_free(&s);
	rec_free(&c);
	unmake(&cli);
	unmake(&srv);
}
END_TEST

/* Send @req raw; the reply's status line must start with @status. */
static void refused(int port, const char *req, const char *status,
		    const char *needle)
{
	char head[4096];
	int fd = raw_connect(port);

	raw_write(fd, req, strlen(req));
	ck_assert_msg(raw_head(fd, head, sizeof(head), 2000), "no reply to %s",
		      req);
	ck_assert_msg(strncmp(head, status, strlen(status)) == 0,
		      "wanted %s, got %.40s", status, head);
	if (needle)
		ck_assert_ptr_nonnull(strstr(head, needle));
	ck_assert(raw_eof(fd, 2000));
	close(fd);
}

START_TEST(test_handshake_refusals)
{
	static const char *const kv[] = { "listen=127.0.0.1:0", NULL };
	struct side srv;
	struct rec s = { 0 };
	char *huge;
	int port;

	ck_assert_int_eq(make(&srv, kv), 0);
	s.inst = srv.inst;
	ck_assert_int_eq(ops->ws_listen(srv.inst, "/gw", &handler, &s), 0);
	port = wsth_listen_port(srv.h);
	refused(port, "GET /gw HTTP/1.1\r\nHost: x\r\n\r\n",
		"HTTP/1.1 426 ", "Sec-WebSocket-Version: 13\r\n");
	refused(port, "POST /gw HTTP/1.1\r\nHost: x\r\n\r\n",
		"HTTP/1.1 405 ", "Allow: GET");
	refused(port, "GET /other HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
		"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
		"HTTP/1.1 404 ", NULL);
	/* "/gwx" is not under "/gw". */
	refused(port, "GET /gwx HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
		"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
		"HTTP/1.1 404 ", NULL);
	refused(port, "GET /gw HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
		"Connection: Upgrade\r\nSec-WebSocket-Version: 7\r\n"
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
		"HTTP/1.1 426 ", "Sec-WebSocket-Version: 13");
	refused(port, "GET /gw HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
		"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n",
		"HTTP/1.1 400 ", NULL);
	refused(port, "hello there\r\n\r\n", "HTTP/1.1 400 ", NULL);
	huge = calloc(1, 20001);
	memset(huge, 'a', 20000);
	memcpy(huge, "GET /gw HTTP/1.1\r\nX: ", 21);
	memcpy(huge + 19996, "\r\n\r\n", 4);
	refused(port, huge, "HTTP/1.1 431 ", NULL);
	free(huge);
	ck_assert_int_eq(s.opens, 0);
	ck_assert_double_eq(wsth_metric(srv.h, "engy_ws_refused_total", NULL), 8);
	unmake(&srv);
}
END_TEST

/* An upgraded raw client of a server instance with a 1 KiB message cap. */
static int raw_client(struct side *srv, struct rec *s)
{
	static const char *const kv[] = { "listen=127.0.0.1:0",
					  "max_message_bytes=1024", NULL };
	int fd;

	ck_assert_int_eq(make(srv, kv), 0);
	s->inst = srv->inst;
	s->echo = true;
	ck_assert_int_eq(ops->ws_listen(srv->inst, "/", &handler, s), 0);
	fd = raw_connect(wsth_listen_port(srv->h));
	ck_assert(raw_upgrade(fd, "/any/path"));
	return fd;
}

/* The server must answer with a close frame carrying @code, then hang up. */
static void expect_close(int fd, int code)
{
	uint8_t buf[256];
	size_t len;
	bool masked;
	int b0 = raw_frame_read(fd, buf, sizeof(buf), &len, &masked, 2000);

	ck_assert_int_eq(b0, 0x88);
	ck_assert(!masked);
	ck_assert_uint_ge(len, 2);
	ck_assert_int_eq(buf[0] << 8 | buf[1], code);
	ck_assert(raw_eof(fd, 2000));
}

static void server_fails(int b0, const void *p, size_t n, bool mask, int code)
{
	struct side srv;
	struct rec s = { 0 };
	int fd = raw_client(&srv, &s);

	raw_frame_send(fd, b0, p, n, mask);
	expect_close(fd, code);
	WAIT(s.closes, 1, 2000);
	ck_assert_int_eq(s.code, code);
	ck_assert_int_eq(s.msgs, 0);
	close(fd);
	rec_free(&s);
	unmake(&srv);
}

START_TEST(test_server_frame_rules)
{
	static uint8_t big[2000];
	struct side srv;
	struct rec s = { 0 };
	uint8_t buf[256];
	size_t len;
	bool masked;
	int fd;

	server_fails(0x81, "hi", 2, false, 1002);	/* unmasked */
	server_fails(0xc1, "hi", 2, true, 1002);	/* RSV1 */
	server_fails(0x83, "hi", 2, true, 1002);	/* reserved opcode */
	server_fails(0x81, "\xff", 1, true, 1007);	/* not UTF-8 */
	server_fails(0x82, big, sizeof(big), true, 1009);	/* over 1 KiB */

	/* Fragments with a ping between them: pong first, then the echo. */
	fd = raw_client(&srv, &s);
	raw_frame_send(fd, 0x01, "frag", 4, true);
	raw_frame_send(fd, 0x89, "p1", 2, true);
	raw_frame_send(fd, 0x00, "men", 3, true);
	raw_frame_send(fd, 0x80, "ted", 3, true);
	ck_assert_int_eq(raw_frame_read(fd, buf, sizeof(buf), &len, &masked,
					2000), 0x8a);
	ck_assert(!masked);
	ck_assert_uint_eq(len, 2);
	ck_assert_mem_eq(buf, "p1", 2);
	ck_assert_int_eq(raw_frame_read(fd, buf, sizeof(buf), &len, &masked,
					2000), 0x81);
	ck_assert_uint_eq(len, 10);
	ck_assert_mem_eq(buf, "fragmented", 10);
	ck_assert_int_eq(s.msgs, 1);
	/* The close handshake from the client's side. */
	raw_frame_send(fd, 0x88, "\x03\xe8" "bye", 5, true);
	expect_close(fd, 1000);
	WAIT(s.closes, 1, 2000);
	ck_assert_int_eq(s.code, 1000);
	ck_assert_str_eq(s.reason, "bye");
	close(fd);
	rec_free(&s);
	unmake(&srv);
}
END_TEST

/* A client leg to a raw server; returns the accepted, upgraded socket. */
static int raw_server_leg(struct side *cli, struct rec *c, int *lfd,
			  const char *const *kv, struct engy_ws_leg **leg)
{
	static const char *const hdrs[] = { "X-Test", "1", NULL };
	char req[2048];
	int port, fd;

	ck_assert_int_eq(make(cli, kv), 0);
	c->inst = cli->inst;
	*lfd = raw_listen(&port);
	ck_assert_int_eq(ops->ws_dial(cli->inst, url_of(port, "/gw"), hdrs,
				      &handler, c, leg), 0);
	fd = raw_accept(*lfd, 3000);
	ck_assert_int_ge(fd, 0);
	ck_assert(raw_accept_upgrade(fd, req, sizeof(req)));
	ck_assert(strncmp(req, "GET /gw HTTP/1.1\r\n", 18) == 0);
	ck_assert_ptr_nonnull(strstr(req, "\r\nSec-WebSocket-Version: 13\r\n"));
	ck_assert_ptr_nonnull(strstr(req, "\r\nX-Test: 1\r\n"));
	WAIT(c->opens, 1, 2000);
	return fd;
}

START_TEST(test_client_rules)
{
	static const char *const kv[] = { "reconnect_min_ms=100",
					  "close_timeout_s=1", NULL };
	static const char forbidden[] =
		"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
	/* The accept for RFC 6455's sample key, not for the leg's own. */
	static const char wrong_key[] =
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		"Connection: Upgrade\r\nSec-WebSocket-Accept: "
		"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
	struct side cli;
	struct rec c = { 0 };
	struct engy_ws_leg *leg;
	uint8_t buf[256];
	char req[2048];
	size_t len;
	bool masked;
	int lfd, fd, fd2;

	fd = raw_server_leg(&cli, &c, &lfd, kv, &leg);
	/* Client frames are masked. */
	ck_assert_int_eq(ops->ws_send(cli.inst, c.conn, ENGY_WS_TEXT, "up", 2), 0);
	ck_assert_int_eq(raw_frame_read(fd, buf, sizeof(buf), &len, &masked,
					2000), 0x81);
	ck_assert(masked);
	ck_assert_mem_eq(buf, "up", 2);
	/* The server closes with 4001: echoed, reported, then a re-dial. */
	raw_frame_send(fd, 0x88, "\x0f\xa1" "drain", 7, false);
	ck_assert_int_eq(raw_frame_read(fd, buf, sizeof(buf), &len, &masked,
					2000), 0x88);
	ck_assert(masked);
	ck_assert_int_eq(buf[0] << 8 | buf[1], 4001);
	WAIT(c.closes, 1, 2000);
	ck_assert_int_eq(c.code, 4001);
	ck_assert_str_eq(c.reason, "drain");
	close(fd);
	fd2 = raw_accept(lfd, 3000);
	ck_assert_int_ge(fd2, 0);
	ck_assert(raw_accept_upgrade(fd2, req, sizeof(req)));
	WAIT(c.opens, 2, 2000);
	/* A masked frame from a server fails the connection with 1002. */
	raw_frame_send(fd2, 0x81, "x", 1, true);
	ck_assert_int_eq(raw_frame_read(fd2, buf, sizeof(buf), &len, &masked,
					2000), 0x88);
	ck_assert_int_eq(buf[0] << 8 | buf[1], 1002);
	WAIT(c.closes, 2, 2000);
	ck_assert_int_eq(c.code, 1002);
	close(fd2);
	/* Handshake replies a client must refuse. */
	fd = raw_accept(lfd, 3000);
	ck_assert(raw_head(fd, req, sizeof(req), 2000));
	raw_write(fd, forbidden, strlen(forbidden));
	WAIT(c.errors, 1, 2000);
	ck_assert_int_eq(c.err, -EPROTO);
	ck_assert_int_eq(c.status, 403);
	close(fd);
	fd = raw_accept(lfd, 3000);
	ck_assert(raw_head(fd, req, sizeof(req), 2000));
	raw_write(fd, wrong_key, strlen(wrong_key));
	WAIT(c.errors, 2, 2000);
	ck_assert_int_eq(c.err, -EPROTO);
	ck_assert_int_eq(c.status, 0);
	close(fd);
	/* A close this side starts, never answered: 1006 after 1 s. */
	fd = raw_accept(lfd, 3000);
	ck_assert(raw_accept_upgrade(fd, req, sizeof(req)));
	WAIT(c.opens, 3, 2000);
	ck_assert_int_eq(ops->ws_close(cli.inst, c.conn, 1000, NULL), 0);
	WAIT(c.closes, 3, 3000);
	ck_assert_int_eq(c.code, 1006);
	ck_assert_str_eq(c.reason, "close timeout");
	ck_assert_int_ge(c.t_close[2] - c.t_open[2], 900);
	close(fd);
	ops->ws_leg_close(cli.inst, leg);
	close(lfd);
	rec_free(&c);
	unmake(&cli);
}
END_TEST

START_TEST(test_keepalive)
{
	static const char *const kv[] = { "ping_interval_s=1",
					  "ping_timeout_s=3", NULL };
	struct side cli;
	struct rec c = { 0 };
	struct engy_ws_leg *leg;
	uint8_t buf[256];
	size_t len;
	bool masked;
	int lfd, fd;

	fd = raw_server_leg(&cli, &c, &lfd, kv, &leg);
	/* A ping comes within the interval; the raw peer never answers. */
	ck_assert_int_eq(raw_frame_read(fd, buf, sizeof(buf), &len, &masked,
					1500), 0x89);
	ck_assert(masked);
	WAIT(c.closes, 1, 5000);
	ck_assert_int_eq(c.code, 1006);
	ck_assert_str_eq(c.reason, "ping timeout");
	ck_assert_int_ge(c.t_close[0] - c.t_open[0], 2900);
	ck_assert_int_le(c.t_close[0] - c.t_open[0], 4000);
	ck_assert_double_eq(wsth_metric(cli.h, "engy_ws_ping_timeouts_total",
					NULL), 1);
	ck_assert_double_ge(wsth_metric(cli.h, "engy_ws_pings_missed_total",
					NULL), 1);
	ops->ws_leg_close(cli.inst, leg);
	close(fd);
	close(lfd);
	rec_free(&c);
	unmake(&cli);
}
END_TEST

START_TEST(test_backoff)
{
	static const char *const kv[] = { "reconnect_min_ms=40",
					  "reconnect_max_ms=320", NULL };
	static const int expect[] = { 40, 80, 160, 320, 320 };
	struct side cli;
	struct rec c = { 0 };
	struct engy_ws_leg *leg;
	int port, lfd, i;
	long gap;

	ck_assert_int_eq(make(&cli, kv), 0);
	c.inst = cli.inst;
	c.close_after_errors = 6;
	lfd = raw_listen(&port);
	close(lfd);			/* a port nobody listens on */
	ck_assert_int_eq(ops->ws_dial(cli.inst, url_of(port, "/"), NULL,
				      &handler, &c, &leg), 0);
	WAIT(c.errors, 6, 5000);
	ck_assert_int_eq(c.err, -ECONNREFUSED);
	for (i = 0; i < 5; i++) {
		gap = c.t_err[i + 1] - c.t_err[i];
		ck_assert_msg(gap >= expect[i] * 3 / 4 - 5 &&
			      gap <= expect[i] * 5 / 4 + 60,
			      "retry %d after %ld ms, wanted ~%d", i, gap,
			      expect[i]);
	}
	/* ws_leg_close() from on_dial_error stopped it for good. */
	wsth_run(base, 800, NULL, NULL);
	ck_assert_int_eq(c.errors, 6);
	ck_assert_double_eq(wsth_metric(cli.h, "engy_ws_dial_failures_total",
					NULL), 6);
	unmake(&cli);
}
END_TEST

START_TEST(test_bad_arguments)
{
	static const char *const bad_ping[] = { "ping_interval_s=30",
						"ping_timeout_s=30", NULL };
	static const char *const half_tls[] = { "listen=127.0.0.1:0",
						"tls_cert=/nonexistent", NULL };
	static const char *const bad_ca[] = { "ca_file=/nonexistent/ca.pem",
					      NULL };
	static const char *const inj[] = { "X-A", "1\r\nX-B: 2", NULL };
	static const char *const kv[] = { "listen=127.0.0.1:0",
					  "max_message_bytes=1024", NULL };
	static char big[2048];
	struct side s, srv, cli;
	struct rec r = { 0 }, c = { 0 };
	struct engy_ws_leg *leg;

	ck_assert_int_eq(make(&s, bad_ping), -EINVAL);
	unmake(&s);
	ck_assert_int_eq(make(&s, half_tls), -EINVAL);
	unmake(&s);
	ck_assert_int_eq(make(&s, bad_ca), -EINVAL);
	ck_assert_ptr_nonnull(strstr(wsth_log(s.h), "option=ca_file"));
	unmake(&s);

	ck_assert_int_eq(make(&cli, NULL), 0);
	ck_assert_int_eq(ops->ws_listen(cli.inst, "/", &handler, &r), -EINVAL);
	ck_assert_int_eq(ops->ws_dial(cli.inst, "http://h/", NULL, &handler,
				      &r, &leg), -EINVAL);
	ck_assert_int_eq(ops->ws_dial(cli.inst, "ws://h/#x", NULL, &handler,
				      &r, &leg), -EINVAL);
	ck_assert_int_eq(ops->ws_dial(cli.inst, "ws://h/", inj, &handler, &r,
				      &leg), -EINVAL);
	ck_assert_int_eq(ops->ws_dial(cli.inst, "ws://h/", NULL, NULL, &r,
				      &leg), -EINVAL);

	/* What an open connection refuses to send or close with. */
	ck_assert_int_eq(make(&srv, kv), 0);
	r.inst = srv.inst;
	c.inst = cli.inst;
	ck_assert_int_eq(ops->ws_listen(srv.inst, "relative", &handler, &r),
			 -EINVAL);
	ck_assert_int_eq(ops->ws_listen(srv.inst, "/", &handler, &r), 0);
	ck_assert_int_eq(ops->ws_dial(cli.inst, url_of(wsth_listen_port(srv.h),
				      "/"), NULL, &handler, &c, &leg), 0);
	WAIT(c.opens, 1, 3000);
	WAIT(r.opens, 1, 2000);
	ck_assert_int_eq(ops->ws_send(srv.inst, r.conn, ENGY_WS_BINARY, big,
				      sizeof(big)), -EMSGSIZE);
	ck_assert_int_eq(ops->ws_send(cli.inst, c.conn, ENGY_WS_TEXT, "\xc3", 1),
			 -EILSEQ);
	ck_assert_int_eq(ops->ws_send(cli.inst, c.conn, 7, "x", 1), -EINVAL);
	ck_assert_int_eq(ops->ws_send(cli.inst, c.conn, ENGY_WS_BINARY, big,
				      sizeof(big)), 0);	/* client cap: 64 MiB */
	ck_assert_int_eq(ops->ws_close(cli.inst, c.conn, 1005, NULL), -EINVAL);
	ck_assert_int_eq(ops->ws_close(cli.inst, c.conn, 1000, "\xc3"), -EINVAL);
	/* The client's 2 KiB message was over the server's cap: 1009. */
	WAIT(c.closes, 1, 2000);
	ck_assert_int_eq(c.code, 1009);
	ops->ws_leg_close(cli.inst, leg);
	rec_free(&r);
	rec_free(&c);
	unmake(&srv);
	unmake(&cli);
}
END_TEST

START_TEST(test_max_connections)
{
	static const char *const kv[] = { "listen=127.0.0.1:0",
					  "max_connections=1", NULL };
	struct side srv;
	struct rec s = { 0 };
	char head[1024];
	int port, a, b;

	ck_assert_int_eq(make(&srv, kv), 0);
	s.inst = srv.inst;
	ck_assert_int_eq(ops->ws_listen(srv.inst, "/", &handler, &s), 0);
	port = wsth_listen_port(srv.h);
	a = raw_connect(port);
	ck_assert(raw_upgrade(a, "/"));
	b = raw_connect(port);
	ck_assert(raw_head(b, head, sizeof(head), 2000));
	ck_assert(strncmp(head, "HTTP/1.1 503 ", 13) == 0);
	ck_assert(raw_eof(b, 1000));
	close(b);
	close(a);
	WAIT(s.closes, 1, 2000);
	ck_assert_int_eq(s.code, 1006);
	/* The slot is free again. */
	b = raw_connect(port);
	ck_assert(raw_upgrade(b, "/"));
	close(b);
	unmake(&srv);
}
END_TEST

/* destroy() with legs open, dialing and waiting, and server peers. */
START_TEST(test_destroy_busy)
{
	static const char *const kv[] = { "listen=127.0.0.1:0", NULL };
	struct side srv, cli;
	struct rec s = { 0 }, c = { 0 }, d = { 0 };
	struct engy_ws_leg *open_leg, *dead_leg, *slow_leg;
	int lfd, port, dead;

	ck_assert_int_eq(make(&srv, kv), 0);
	ck_assert_int_eq(make(&cli, NULL), 0);
	s.inst = srv.inst;
	c.inst = d.inst = cli.inst;
	ck_assert_int_eq(ops->ws_listen(srv.inst, "/", &handler, &s), 0);
	ck_assert_int_eq(ops->ws_dial(cli.inst, url_of(wsth_listen_port(srv.h),
				      "/"), NULL, &handler, &c, &open_leg), 0);
	lfd = raw_listen(&dead);
	close(lfd);
	ck_assert_int_eq(ops->ws_dial(cli.inst, url_of(dead, "/"), NULL,
				      &handler, &d, &dead_leg), 0);
	/* A listener that never answers the upgrade. */
	lfd = raw_listen(&port);
	ck_assert_int_eq(ops->ws_dial(cli.inst, url_of(port, "/"), NULL,
				      &handler, &d, &slow_leg), 0);
	WAIT(c.opens, 1, 3000);
	WAIT(d.errors, 1, 3000);
	WAIT(s.opens, 1, 3000);
	/* No stop(), no ws_leg_close(): destroy must free it all. */
	plug->destroy(cli.inst);
	cli.inst = NULL;
	WAIT(s.closes, 1, 3000);
	ck_assert_int_eq(s.code, 1006);
	plug->destroy(srv.inst);
	srv.inst = NULL;
	close(lfd);
	unmake(&cli);
	unmake(&srv);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("transport_ws");
	TCase *tc = tcase_create("loop");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_echo_close_reopen);
	tcase_add_test(tc, test_handshake_refusals);
	tcase_add_test(tc, test_server_frame_rules);
	tcase_add_test(tc, test_client_rules);
	tcase_add_test(tc, test_keepalive);
	tcase_add_test(tc, test_backoff);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_max_connections);
	tcase_add_test(tc, test_destroy_busy);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
