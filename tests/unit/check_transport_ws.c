/* SPDX-License-Identifier: MIT */
/*
 * transport-ws as the host sees it: dlopen() the built module and drive it
 * through its ops on a real event loop, engy client against engy server:
 * echo, closes and re-dials, backoff, argument checks, limits, a plain
 * GET answered by on_get(), teardown.
 *
 * Oracle: engy's client against engy's server (self-consistency);
 * ws_peer.sh uses the npm ws package as the independent peer.
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

	ck_assert_int_eq(side_make(&srv, kv), 0);
	ck_assert_int_eq(side_make(&cli, kv + 1), 0);
	s.inst = srv.inst;
	s.echo = true;
	c.inst = cli.inst;
	c.say = say;
	ck_assert_int_eq(ops->ws_listen(srv.inst, "/gw", &handler, &s), 0);
	ck_assert_int_eq(ops->ws_listen(srv.inst, "/gw", &handler, &s),
			 -EEXIST);
	port = wsth_listen_port(srv.h);
	ck_assert_int_gt(port, 0);
	ck_assert_int_eq(ops->ws_dial(cli.inst, url_of(port, "/gw/3?k=QSECRET"),
				      hdrs, &handler, &c, &leg),
			 0);
	ck_assert_int_eq(c.opens, 0); /* never inside ws_dial() */
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
				      sizeof(big)),
			 0);
	WAIT(c.msgs, 5, 3000);
	ck_assert_int_eq(c.type[4], ENGY_WS_BINARY);
	ck_assert_uint_eq(c.len[4], sizeof(big));
	ck_assert_mem_eq(c.data[4], big, sizeof(big));
	ck_assert_double_eq(
		wsth_metric(srv.h, "engy_ws_messages_total", "dir=\"in\""), 5);
	ck_assert_double_eq(
		wsth_metric(cli.h, "engy_ws_bytes_total", "dir=\"out\""),
		5 + 17 + 0 + 5 + (1 << 20));
	ck_assert_double_eq(
		wsth_metric(srv.h, "engy_ws_connections", "side=\"server\""),
		1);

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
	ck_assert_double_eq(
		wsth_metric(cli.h, "engy_ws_reconnects_total", NULL), 1);

	/* The server side closes this time (what a `reconnect` asks for). */
	WAIT(s.opens, 2, 2000);
	ck_assert_int_eq(ops->ws_close(srv.inst, s.conn, 1001, "draining"), 0);
	ck_assert_int_eq(ops->ws_close(srv.inst, s.conn, 1000, NULL),
			 -ENOTCONN);
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
	ck_assert_int_eq(c.closes, 2); /* no callback after ws_leg_close() */
	ck_assert_int_eq(s.opens, 3);

	/* Metadata only: no payload, query or header value in the logs. */
	for (i = 0; i < 2; i++) {
		const char *log = wsth_log(i ? cli.h : srv.h);

		ck_assert_ptr_nonnull(strstr(log, "event=ws_open"));
		ck_assert_ptr_null(strstr(log, "SECRET"));
	}
	rec_free(&s);
	rec_free(&c);
	side_unmake(&cli);
	side_unmake(&srv);
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

	ck_assert_int_eq(side_make(&cli, kv), 0);
	c.inst = cli.inst;
	c.close_after_errors = 6;
	lfd = raw_listen(&port);
	close(lfd); /* a port nobody listens on */
	ck_assert_int_eq(ops->ws_dial(cli.inst, url_of(port, "/"), NULL,
				      &handler, &c, &leg),
			 0);
	WAIT(c.errors, 6, 5000);
	ck_assert_int_eq(c.err, -ECONNREFUSED);
	for (i = 0; i < 5; i++) {
		gap = c.t_err[i + 1] - c.t_err[i];
		ck_assert_msg(gap >= expect[i] * 3 / 4 - 5 &&
				      gap <= expect[i] * 5 / 4 + 100,
			      "retry %d after %ld ms, wanted ~%d", i, gap,
			      expect[i]);
	}
	/* ws_leg_close() from on_dial_error stopped it for good. */
	wsth_run(base, 800, NULL, NULL);
	ck_assert_int_eq(c.errors, 6);
	ck_assert_double_eq(
		wsth_metric(cli.h, "engy_ws_dial_failures_total", NULL), 6);
	side_unmake(&cli);
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

	ck_assert_int_eq(side_make(&s, bad_ping), -EINVAL);
	side_unmake(&s);
	ck_assert_int_eq(side_make(&s, half_tls), -EINVAL);
	side_unmake(&s);
	ck_assert_int_eq(side_make(&s, bad_ca), -EINVAL);
	ck_assert_ptr_nonnull(strstr(wsth_log(s.h), "option=ca_file"));
	side_unmake(&s);

	ck_assert_int_eq(side_make(&cli, NULL), 0);
	ck_assert_int_eq(ops->ws_listen(cli.inst, "/", &handler, &r), -EINVAL);
	ck_assert_int_eq(
		ops->ws_dial(cli.inst, "http://h/", NULL, &handler, &r, &leg),
		-EINVAL);
	ck_assert_int_eq(
		ops->ws_dial(cli.inst, "ws://h/#x", NULL, &handler, &r, &leg),
		-EINVAL);
	ck_assert_int_eq(
		ops->ws_dial(cli.inst, "ws://h/", inj, &handler, &r, &leg),
		-EINVAL);
	ck_assert_int_eq(
		ops->ws_dial(cli.inst, "ws://h/", NULL, NULL, &r, &leg),
		-EINVAL);

	/* What an open connection refuses to send or close with. */
	ck_assert_int_eq(side_make(&srv, kv), 0);
	r.inst = srv.inst;
	c.inst = cli.inst;
	ck_assert_int_eq(ops->ws_listen(srv.inst, "relative", &handler, &r),
			 -EINVAL);
	ck_assert_int_eq(ops->ws_listen(srv.inst, "/", &handler, &r), 0);
	ck_assert_int_eq(ops->ws_dial(cli.inst,
				      url_of(wsth_listen_port(srv.h), "/"),
				      NULL, &handler, &c, &leg),
			 0);
	WAIT(c.opens, 1, 3000);
	WAIT(r.opens, 1, 2000);
	ck_assert_int_eq(ops->ws_send(srv.inst, r.conn, ENGY_WS_BINARY, big,
				      sizeof(big)),
			 -EMSGSIZE);
	ck_assert_int_eq(
		ops->ws_send(cli.inst, c.conn, ENGY_WS_TEXT, "\xc3", 1),
		-EILSEQ);
	ck_assert_int_eq(ops->ws_send(cli.inst, c.conn, 7, "x", 1), -EINVAL);
	ck_assert_int_eq(ops->ws_send(cli.inst, c.conn, ENGY_WS_BINARY, big,
				      sizeof(big)),
			 0); /* client cap: 64 MiB */
	ck_assert_int_eq(ops->ws_close(cli.inst, c.conn, 1005, NULL), -EINVAL);
	ck_assert_int_eq(ops->ws_close(cli.inst, c.conn, 1000, "\xc3"),
			 -EINVAL);
	/* The client's 2 KiB message was over the server's cap: 1009. */
	WAIT(c.closes, 1, 2000);
	ck_assert_int_eq(c.code, 1009);
	ops->ws_leg_close(cli.inst, leg);
	rec_free(&r);
	rec_free(&c);
	side_unmake(&srv);
	side_unmake(&cli);
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

	ck_assert_int_eq(side_make(&srv, kv), 0);
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
	side_unmake(&srv);
}
END_TEST

/* The handler records into the rec; on_get counts its calls. */
struct meta_rec {
	struct rec r;
	int calls;
};

static int meta_get(void *arg, const char *path, int *status, char **body,
		    size_t *len)
{
	struct meta_rec *m = arg;

	m->calls++;
	if (strcmp(path, "/gw/meta") != 0)
		return -ENOENT;
	*status = 200;
	*body = strdup("{\"workers\":2}");
	*len = strlen(*body);
	return 0;
}

/* A plain GET answered by the route's on_get() (the gateway's /gw/meta);
 * the same route still upgrades, and a route without on_get says 426. */
START_TEST(test_plain_get)
{
	static const char *const kv[] = { "listen=127.0.0.1:0", NULL };
	static const char get_meta[] =
		"GET /gw/meta?x=1 HTTP/1.1\r\n"
		"Host: 127.0.0.1\r\nAccept: application/json\r\n\r\n";
	static const char get_other[] = "GET /gw/other HTTP/1.1\r\n"
					"Host: 127.0.0.1\r\n\r\n";
	static const char get_plain[] = "GET /ws HTTP/1.1\r\n"
					"Host: 127.0.0.1\r\n\r\n";
	struct engy_ws_handler meta = handler;
	struct side srv;
	struct rec s = { 0 };
	struct meta_rec m = { { 0 }, 0 };
	char head[1024], body[256];
	int port, fd;

	meta.on_get = meta_get;
	ck_assert_int_eq(side_make(&srv, kv), 0);
	s.inst = srv.inst;
	m.r.inst = srv.inst;
	ck_assert_int_eq(ops->ws_listen(srv.inst, "/gw", &meta, &m), 0);
	ck_assert_int_eq(ops->ws_listen(srv.inst, "/ws", &handler, &s), 0);
	port = wsth_listen_port(srv.h);

	fd = raw_connect(port);
	raw_write(fd, get_meta, sizeof(get_meta) - 1);
	ck_assert(raw_head(fd, head, sizeof(head), 2000));
	ck_assert_msg(strncmp(head, "HTTP/1.1 200 ", 13) == 0, "%s", head);
	ck_assert_ptr_nonnull(
		strstr(head, "Content-Type: application/json\r\n"));
	ck_assert_ptr_nonnull(strstr(head, "Content-Length: 13\r\n"));
	raw_head(fd, body, sizeof(body), 2000);
	ck_assert_str_eq(body, "{\"workers\":2}");
	ck_assert(raw_eof(fd, 2000));
	close(fd);
	ck_assert_int_eq(m.calls, 1);

	fd = raw_connect(port);
	raw_write(fd, get_other, sizeof(get_other) - 1);
	ck_assert(raw_head(fd, head, sizeof(head), 2000));
	ck_assert_msg(strncmp(head, "HTTP/1.1 404 ", 13) == 0, "%s", head);
	close(fd);
	ck_assert_int_eq(m.calls, 2);

	fd = raw_connect(port);
	raw_write(fd, get_plain, sizeof(get_plain) - 1);
	ck_assert(raw_head(fd, head, sizeof(head), 2000));
	ck_assert_msg(strncmp(head, "HTTP/1.1 426 ", 13) == 0, "%s", head);
	close(fd);

	/* Upgrades on the on_get route still open websockets. */
	fd = raw_connect(port);
	ck_assert(raw_upgrade(fd, "/gw"));
	WAIT(m.r.opens, 1, 2000);
	close(fd);
	WAIT(m.r.closes, 1, 2000);
	ck_assert_int_eq(m.calls, 2);
	side_unmake(&srv);
	rec_free(&m.r);
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

	ck_assert_int_eq(side_make(&srv, kv), 0);
	ck_assert_int_eq(side_make(&cli, NULL), 0);
	s.inst = srv.inst;
	c.inst = d.inst = cli.inst;
	ck_assert_int_eq(ops->ws_listen(srv.inst, "/", &handler, &s), 0);
	ck_assert_int_eq(ops->ws_dial(cli.inst,
				      url_of(wsth_listen_port(srv.h), "/"),
				      NULL, &handler, &c, &open_leg),
			 0);
	lfd = raw_listen(&dead);
	close(lfd);
	ck_assert_int_eq(ops->ws_dial(cli.inst, url_of(dead, "/"), NULL,
				      &handler, &d, &dead_leg),
			 0);
	/* A listener that never answers the upgrade. */
	lfd = raw_listen(&port);
	ck_assert_int_eq(ops->ws_dial(cli.inst, url_of(port, "/"), NULL,
				      &handler, &d, &slow_leg),
			 0);
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
	side_unmake(&cli);
	side_unmake(&srv);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("transport_ws");
	TCase *tc = tcase_create("loop");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, ws_setup, ws_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_echo_close_reopen);
	tcase_add_test(tc, test_backoff);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_max_connections);
	tcase_add_test(tc, test_plain_get);
	tcase_add_test(tc, test_destroy_busy);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
