/* SPDX-License-Identifier: MIT */
/*
 * transport-ws against a hand-driven raw peer (ws_raw.c) that sends the
 * bad handshakes and frames a well-behaved peer never would, and reads
 * exactly what the transport puts on the wire: refusals, masking rules,
 * fragments, close handshakes, keepalive.
 *
 * Oracle: RFC 6455's rules, through a raw peer written in the test.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <engy/engy.h>

#include "ws_harness.h"
#include "ws_raw.h"

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

	ck_assert_int_eq(side_make(&srv, kv), 0);
	s.inst = srv.inst;
	ck_assert_int_eq(ops->ws_listen(srv.inst, "/gw", &handler, &s), 0);
	port = wsth_listen_port(srv.h);
	refused(port, "GET /gw HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 426 ",
		"Sec-WebSocket-Version: 13\r\n");
	refused(port, "POST /gw HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 405 ",
		"Allow: GET");
	refused(port,
		"GET /other HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
		"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
		"HTTP/1.1 404 ", NULL);
	/* "/gwx" is not under "/gw". */
	refused(port,
		"GET /gwx HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
		"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
		"HTTP/1.1 404 ", NULL);
	refused(port,
		"GET /gw HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
		"Connection: Upgrade\r\nSec-WebSocket-Version: 7\r\n"
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
		"HTTP/1.1 426 ", "Sec-WebSocket-Version: 13");
	refused(port,
		"GET /gw HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
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
	ck_assert_double_eq(wsth_metric(srv.h, "engy_ws_refused_total", NULL),
			    8);
	side_unmake(&srv);
}
END_TEST

/* An upgraded raw client of a server instance with a 1 KiB message cap. */
static int raw_client(struct side *srv, struct rec *s)
{
	static const char *const kv[] = { "listen=127.0.0.1:0",
					  "max_message_bytes=1024", NULL };
	int fd;

	ck_assert_int_eq(side_make(srv, kv), 0);
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
	side_unmake(&srv);
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

	server_fails(0x81, "hi", 2, false, 1002);	  /* unmasked */
	server_fails(0xc1, "hi", 2, true, 1002);	  /* RSV1 */
	server_fails(0x83, "hi", 2, true, 1002);	  /* reserved opcode */
	server_fails(0x81, "\xff", 1, true, 1007);	  /* not UTF-8 */
	server_fails(0x82, big, sizeof(big), true, 1009); /* over 1 KiB */

	/* Fragments with a ping between them: pong first, then the echo. */
	fd = raw_client(&srv, &s);
	raw_frame_send(fd, 0x01, "frag", 4, true);
	raw_frame_send(fd, 0x89, "p1", 2, true);
	raw_frame_send(fd, 0x00, "men", 3, true);
	raw_frame_send(fd, 0x80, "ted", 3, true);
	ck_assert_int_eq(
		raw_frame_read(fd, buf, sizeof(buf), &len, &masked, 2000),
		0x8a);
	ck_assert(!masked);
	ck_assert_uint_eq(len, 2);
	ck_assert_mem_eq(buf, "p1", 2);
	ck_assert_int_eq(
		raw_frame_read(fd, buf, sizeof(buf), &len, &masked, 2000),
		0x81);
	ck_assert_uint_eq(len, 10);
	ck_assert_mem_eq(buf, "fragmented", 10);
	ck_assert_int_eq(s.msgs, 1);
	/* The close handshake from the client's side. */
	raw_frame_send(fd, 0x88,
		       "\x03\xe8"
		       "bye",
		       5, true);
	expect_close(fd, 1000);
	WAIT(s.closes, 1, 2000);
	ck_assert_int_eq(s.code, 1000);
	ck_assert_str_eq(s.reason, "bye");
	close(fd);
	rec_free(&s);
	side_unmake(&srv);
}
END_TEST

/* A client leg to a raw server; returns the accepted, upgraded socket. */
static int raw_server_leg(struct side *cli, struct rec *c, int *lfd,
			  const char *const *kv, struct engy_ws_leg **leg)
{
	static const char *const hdrs[] = { "X-Test", "1", NULL };
	char req[2048];
	int port, fd;

	ck_assert_int_eq(side_make(cli, kv), 0);
	c->inst = cli->inst;
	*lfd = raw_listen(&port);
	ck_assert_int_eq(ops->ws_dial(cli->inst, url_of(port, "/gw"), hdrs,
				      &handler, c, leg),
			 0);
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
	ck_assert_int_eq(ops->ws_send(cli.inst, c.conn, ENGY_WS_TEXT, "up", 2),
			 0);
	ck_assert_int_eq(
		raw_frame_read(fd, buf, sizeof(buf), &len, &masked, 2000),
		0x81);
	ck_assert(masked);
	ck_assert_mem_eq(buf, "up", 2);
	/* The server closes with 4001: echoed, reported, then a re-dial. */
	raw_frame_send(fd, 0x88,
		       "\x0f\xa1"
		       "drain",
		       7, false);
	ck_assert_int_eq(
		raw_frame_read(fd, buf, sizeof(buf), &len, &masked, 2000),
		0x88);
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
	ck_assert_int_eq(
		raw_frame_read(fd2, buf, sizeof(buf), &len, &masked, 2000),
		0x88);
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
	side_unmake(&cli);
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
	ck_assert_int_eq(
		raw_frame_read(fd, buf, sizeof(buf), &len, &masked, 1500),
		0x89);
	ck_assert(masked);
	WAIT(c.closes, 1, 5000);
	ck_assert_int_eq(c.code, 1006);
	ck_assert_str_eq(c.reason, "ping timeout");
	ck_assert_int_ge(c.t_close[0] - c.t_open[0], 2900);
	ck_assert_int_le(c.t_close[0] - c.t_open[0], 4000);
	ck_assert_double_eq(
		wsth_metric(cli.h, "engy_ws_ping_timeouts_total", NULL), 1);
	ck_assert_double_ge(
		wsth_metric(cli.h, "engy_ws_pings_missed_total", NULL), 1);
	ops->ws_leg_close(cli.inst, leg);
	close(fd);
	close(lfd);
	rec_free(&c);
	side_unmake(&cli);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("transport_ws_raw");
	TCase *tc = tcase_create("loop");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, ws_setup, ws_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_handshake_refusals);
	tcase_add_test(tc, test_server_frame_rules);
	tcase_add_test(tc, test_client_rules);
	tcase_add_test(tc, test_keepalive);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
