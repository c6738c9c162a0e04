/* SPDX-License-Identifier: MIT */
/*
 * transport-http as the host runs it: the built module loaded by the
 * host's loader, options filled by the host's config code, host services
 * bound to a real event loop (on its own thread), and clients on real
 * sockets speaking raw HTTP/1.x from the test thread, so every byte on
 * the wire is asserted: keep-alive and pipelining, Content-Length and
 * chunked bodies, 413 / 408 / 4xx for bad requests, streamed (chunked)
 * replies, HEAD, longest-prefix routes, asynchronous replies, on_gone()
 * when a client leaves, max_connections, stop(), and the metrics.
 *
 * Oracle: raw HTTP/1.1 bytes written by hand from RFC 9112; every byte on
 * the wire asserted.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include <engy/plugin.h>
#include <engy/transport.h>

#include "conf.h"
#include "http_raw.h"
#include "host.h"
#include "loader.h"
#include "log.h"
#include "metrics.h"
#include "pool.h"

static struct engyd d;
static struct engy_instance in;
static const struct engy_transport_ops *ops;
static pthread_t loop_thr;
static int cmd_pipe[2];
static struct event *cmd_ev;
static char log_path[64];
static int port;
static atomic_int n_gone, n_requests, n_slow, n_streams;
static atomic_int route_rc[3];

/* --- handlers (loop thread) ---------------------------------------------- */

static int h_echo(void *arg, struct engy_http_exchange *x,
		  const struct engy_http_request *r)
{
	const char *hdrs[] = { "X-Method",
			       r->method,
			       "X-Path",
			       r->path,
			       "X-Query",
			       r->query ? r->query : "-",
			       "X-Remote-Set",
			       r->remote && *r->remote ? "yes" : "no",
			       "X-Test",
			       r->header(r, "x-TEST") ? r->header(r, "X-Test")
						      : "-",
			       NULL };

	n_requests++;
	return ops->http_reply(in.inst, x, 200, "text/plain", hdrs, r->body,
			       r->body_len);
}

struct later {
	struct engy_http_exchange *x;
	int step;
};

static void later_cb(evutil_socket_t fd, short what, void *arg)
{
	struct later *l = arg;

	ops->http_reply(in.inst, l->x, 202, "text/plain", NULL, "later", 5);
	free(l);
}

static int h_later(void *arg, struct engy_http_exchange *x,
		   const struct engy_http_request *r)
{
	struct later *l = calloc(1, sizeof(*l));
	struct timeval tv = { 0, 50000 };

	l->x = x;
	event_base_once(d.base, -1, EV_TIMEOUT, later_cb, l, &tv);
	return 0;
}

static struct later *cur_stream; /* one stream at a time in these tests */

static void stream_cb(evutil_socket_t fd, short what, void *arg)
{
	struct later *l = arg;
	struct timeval tv = { 0, 20000 };
	char buf[32];

	if (!l->x) { /* the client left (stream_gone) */
		free(l);
		cur_stream = NULL;
		return;
	}
	if (l->step == 3) {
		cur_stream = NULL;
		ops->http_stream_end(in.inst, l->x);
		free(l);
		return;
	}
	snprintf(buf, sizeof(buf), "data: %d\n\n", l->step++);
	ck_assert_int_eq(
		ops->http_stream_write(in.inst, l->x, buf, strlen(buf)), 0);
	ck_assert_int_eq(ops->http_stream_write(in.inst, l->x, "", 0), 0);
	event_base_once(d.base, -1, EV_TIMEOUT, stream_cb, l, &tv);
}

static int h_stream(void *arg, struct engy_http_exchange *x,
		    const struct engy_http_request *r)
{
	static const char *const hdrs[] = { "Cache-Control", "no-cache", NULL };
	struct later *l = calloc(1, sizeof(*l));
	int rc;

	l->x = x;
	cur_stream = l;
	n_streams++;
	rc = ops->http_stream_begin(in.inst, x, 200, "text/event-stream", hdrs);
	ck_assert_int_eq(rc, 0);
	/* A whole reply on a streamed exchange is refused. */
	ck_assert_int_eq(ops->http_reply(in.inst, x, 200, NULL, NULL, NULL, 0),
			 -EINVAL);
	stream_cb(-1, 0, l);
	return 0;
}

static void stream_gone(void *arg, struct engy_http_exchange *x)
{
	/* Writes to a gone exchange are refused, never crash. */
	ck_assert_int_eq(ops->http_stream_write(in.inst, x, "x", 1), -EPIPE);
	if (cur_stream && cur_stream->x == x)
		cur_stream->x = NULL;
	n_gone++;
}

/* Never answers: the client leaves, and on_gone() must say so. */
static int h_slow(void *arg, struct engy_http_exchange *x,
		  const struct engy_http_request *r)
{
	n_slow++;
	return 0;
}

static void h_slow_gone(void *arg, struct engy_http_exchange *x)
{
	/* The exchange is refused from here on. */
	ck_assert_int_eq(ops->http_reply(in.inst, x, 200, NULL, NULL, NULL, 0),
			 -EINVAL);
	n_gone++;
}

static int h_err(void *arg, struct engy_http_exchange *x,
		 const struct engy_http_request *r)
{
	static const char *const bad[] = { "X-Bad", "a\r\nInjected: 1", NULL };
	static const char *const owned[] = { "Content-Length", "5", NULL };

	/* Header injection and transport-owned headers are refused. */
	ck_assert_int_eq(ops->http_reply(in.inst, x, 200, NULL, bad, NULL, 0),
			 -EINVAL);
	ck_assert_int_eq(ops->http_reply(in.inst, x, 200, NULL, owned, NULL, 0),
			 -EINVAL);
	ck_assert_int_eq(ops->http_reply(in.inst, x, 99, NULL, NULL, NULL, 0),
			 -EINVAL);
	return strcmp(r->path, "/err/missing") == 0 ? -ENOENT : -EIO;
}

static int h_tag(void *arg, struct engy_http_exchange *x,
		 const struct engy_http_request *r)
{
	return ops->http_reply(in.inst, x, 200, "text/plain", NULL, arg,
			       strlen(arg));
}

/* Queues 8 MiB and stops the loop at once: destroy() must still send it. */
#define BIG (8u << 20)
static atomic_bool destroy_in_loop;

static int h_big(void *arg, struct engy_http_exchange *x,
		 const struct engy_http_request *r)
{
	char *body = malloc(BIG);
	int rc;

	memset(body, 'z', BIG);
	rc = ops->http_reply(in.inst, x, 200, "text/plain", NULL, body, BIG);
	free(body);
	destroy_in_loop = true;
	event_base_loopbreak(d.base);
	return rc;
}

static const struct engy_http_handler hd_big = { sizeof(hd_big), h_big, NULL };
static const struct engy_http_handler hd_echo = { sizeof(hd_echo), h_echo,
						  NULL };
static const struct engy_http_handler hd_later = { sizeof(hd_later), h_later,
						   NULL };
static const struct engy_http_handler hd_stream = { sizeof(hd_stream), h_stream,
						    stream_gone };
static const struct engy_http_handler hd_slow = { sizeof(hd_slow), h_slow,
						  h_slow_gone };
static const struct engy_http_handler hd_err = { sizeof(hd_err), h_err, NULL };
static const struct engy_http_handler hd_tag = { sizeof(hd_tag), h_tag, NULL };

/* --- the loop thread --------------------------------------------------- */

static void on_cmd(evutil_socket_t fd, short what, void *arg)
{
	char c;

	if (read(fd, &c, 1) != 1)
		return;
	if (c == 's')
		in.lp.desc.stop(in.inst);
	else if (c == 'q')
		event_base_loopbreak(d.base);
}

static void *loop_main(void *arg)
{
	event_base_dispatch(d.base);
	if (destroy_in_loop) { /* as engyd does once drained */
		in.lp.desc.destroy(in.inst);
		in.inst = NULL;
	}
	return NULL;
}

static void cmd(char c)
{
	ck_assert_int_eq(write(cmd_pipe[1], &c, 1), 1);
}

static const char *conf_get(void *arg, const char *name)
{
	static const char *const kv[] = {
		"listen", "127.0.0.1:0",     "max_body", "1024", "timeout_s",
		"1",	  "max_connections", "8",	 NULL,
	};
	size_t i;

	for (i = 0; kv[i]; i += 2)
		if (strcmp(kv[i], name) == 0)
			return kv[i + 1];
	return NULL;
}

static void setup(void)
{
	struct engy_errs e = { 0 };
	char err[512], line[512];
	int fd;
	FILE *f;

	snprintf(log_path, sizeof(log_path), "/tmp/engy-th-XXXXXX");
	fd = mkstemp(log_path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(engy_log_open(log_path, ENGY_LOG_DEBUG), 0);
	memset(&d, 0, sizeof(d));
	d.base = event_base_new();
	ck_assert_ptr_nonnull(d.base);
	ck_assert_int_eq(engy_metrics_new(&d.metrics), 0);
	ck_assert_int_eq(engy_pool_new(d.base, 1, &d.pool), 0);
	d.state_dir = strdup("/tmp");
	memset(&in, 0, sizeof(in));
	in.d = &d;
	in.name = strdup("web");
	ck_assert_msg(engy_loader_open(TRANSPORT_HTTP_SO, "transport-http",
				       &in.lp, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(engy_conf_from_text("transport-http", in.lp.desc.opts,
					     in.lp.desc.conf_size, conf_get,
					     NULL, &in.conf, &e),
			 0);
	engy_host_bind(&in);
	ck_assert_int_eq(in.lp.desc.create(&in.host, in.conf, &in.inst), 0);
	ck_assert_int_eq(in.lp.desc.start(in.inst), 0);
	ops = in.lp.ops;
	ck_assert_str_eq(ops->proto, "http");
	ck_assert_int_eq(ops->http_route(in.inst, "/echo", &hd_echo, NULL), 0);
	ck_assert_int_eq(ops->http_route(in.inst, "/later", &hd_later, NULL),
			 0);
	ck_assert_int_eq(ops->http_route(in.inst, "/stream", &hd_stream, NULL),
			 0);
	ck_assert_int_eq(ops->http_route(in.inst, "/slow", &hd_slow, NULL), 0);
	ck_assert_int_eq(ops->http_route(in.inst, "/err", &hd_err, NULL), 0);
	ck_assert_int_eq(ops->http_route(in.inst, "/big", &hd_big, NULL), 0);
	ck_assert_int_eq(ops->http_route(in.inst, "/a", &hd_tag, "a"), 0);
	ck_assert_int_eq(ops->http_route(in.inst, "/a/b/", &hd_tag, "a/b"), 0);
	ck_assert_int_eq(ops->http_route(in.inst, "/", &hd_tag, "root"), 0);
	route_rc[0] = ops->http_route(in.inst, "/a/b", &hd_tag, "dup");
	route_rc[1] = ops->http_route(in.inst, "nope", &hd_tag, "x");
	route_rc[2] = ops->http_route(in.inst, "/x", NULL, "x");
	/* The bound port, from the `event=listen` line. */
	engy_log_flush();
	f = fopen(log_path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "event=listen "))
			sscanf(strstr(line, "port=") + 5, "%d", &port);
	fclose(f);
	ck_assert_int_gt(port, 0);
	ck_assert_int_eq(pipe(cmd_pipe), 0);
	cmd_ev = event_new(d.base, cmd_pipe[0], EV_READ | EV_PERSIST, on_cmd,
			   NULL);
	event_add(cmd_ev, NULL);
	n_gone = 0;
	n_slow = 0;
	n_streams = 0;
	n_requests = 0;
	destroy_in_loop = false;
	ck_assert_int_eq(pthread_create(&loop_thr, NULL, loop_main, NULL), 0);
}

static void teardown(void)
{
	cmd('q');
	pthread_join(loop_thr, NULL);
	if (in.inst)
		in.lp.desc.destroy(in.inst);
	engy_host_release_timers(&in);
	engy_conf_free(in.lp.desc.opts, in.conf);
	engy_loader_close(&in.lp, true);
	free(in.name);
	event_free(cmd_ev);
	close(cmd_pipe[0]);
	close(cmd_pipe[1]);
	engy_pool_close(d.pool);
	engy_pool_free(d.pool);
	engy_metrics_free(d.metrics);
	event_base_free(d.base);
	free(d.state_dir);
	engy_log_close();
	unlink(log_path);
}

static struct http_resp R;

static void one(const char *req, bool head_req)
{
	int fd = http_raw_dial(port);

	http_raw_put(fd, req);
	http_raw_read(fd, &R, head_req);
	close(fd);
}

/* --- tests ------------------------------------------------------------ */

START_TEST(test_basic_and_keepalive)
{
	int fd = http_raw_dial(port);

	http_raw_put(
		fd,
		"GET /echo?x=1&y=2 HTTP/1.1\r\nHost: t\r\nX-Test: v 1\r\n\r\n");
	http_raw_read(fd, &R, false);
	ck_assert_int_eq(R.status, 200);
	ck_assert_str_eq(http_raw_hdr(&R, "X-Method"), "GET");
	ck_assert_str_eq(http_raw_hdr(&R, "X-Path"), "/echo");
	ck_assert_str_eq(http_raw_hdr(&R, "X-Query"), "x=1&y=2");
	ck_assert_str_eq(http_raw_hdr(&R, "X-Test"), "v 1");
	ck_assert_str_eq(http_raw_hdr(&R, "X-Remote-Set"), "yes");
	ck_assert_str_eq(http_raw_hdr(&R, "Connection"), "keep-alive");
	ck_assert_str_eq(http_raw_hdr(&R, "Content-Type"), "text/plain");
	ck_assert_uint_eq(R.body_len, 0);
	/* The same connection again, with a body. */
	http_raw_put(
		fd,
		"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
	http_raw_read(fd, &R, false);
	ck_assert_int_eq(R.status, 200);
	ck_assert_str_eq(R.body, "hello");
	/* Pipelined: two requests in one write, answered in order. */
	http_raw_put(
		fd,
		"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\none"
		"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\ntwo");
	http_raw_read(fd, &R, false);
	ck_assert_str_eq(R.body, "one");
	http_raw_read(fd, &R, false);
	ck_assert_str_eq(R.body, "two");
	/* Connection: close is honoured. */
	http_raw_put(
		fd,
		"GET /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
	http_raw_read(fd, &R, false);
	ck_assert_str_eq(http_raw_hdr(&R, "Connection"), "close");
	ck_assert(http_raw_closed(fd));
	close(fd);
	ck_assert_int_eq(n_requests, 5);
	/* HTTP/1.0: closes unless asked to keep alive. */
	one("GET /echo HTTP/1.0\r\n\r\n", false);
	ck_assert_int_eq(R.status, 200);
	ck_assert_str_eq(http_raw_hdr(&R, "Connection"), "close");
	/* The route API's own checks ran in setup. */
	ck_assert_int_eq(route_rc[0], -EEXIST);
	ck_assert_int_eq(route_rc[1], -EINVAL);
	ck_assert_int_eq(route_rc[2], -EINVAL);
}
END_TEST

START_TEST(test_bodies)
{
	int fd;

	one("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n",
	    false);
	ck_assert_int_eq(R.status, 200);
	ck_assert_str_eq(R.body, "hello world");
	/* Expect: 100-continue: the interim answer comes before the body. */
	fd = http_raw_dial(port);
	http_raw_put(fd,
		     "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n"
		     "Expect: 100-continue\r\n\r\n");
	{
		char line[128];

		ck_assert_int_gt(http_raw_line(fd, line, sizeof(line)), 0);
		ck_assert_str_eq(line, "HTTP/1.1 100 Continue\r\n");
		ck_assert_int_gt(http_raw_line(fd, line, sizeof(line)), 0);
		ck_assert_str_eq(line, "\r\n");
	}
	http_raw_put(fd, "body");
	http_raw_read(fd, &R, false);
	ck_assert_str_eq(R.body, "body");
	close(fd);
	/* Over max_body (1024): declared, then chunked. */
	one("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2000\r\n\r\n",
	    false);
	ck_assert_int_eq(R.status, 413);
	ck_assert_str_eq(http_raw_hdr(&R, "Connection"), "close");
	ck_assert_ptr_nonnull(strstr(R.body, "\"code\":413"));
	one("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "401\r\n",
	    false);
	ck_assert_int_eq(R.status, 413);
	{
		char big[1500];

		memset(big, 'x', sizeof(big));
		fd = http_raw_dial(port);
		http_raw_put(
			fd,
			"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
			"300\r\n");
		ck_assert_int_eq(send(fd, big, 0x300, MSG_NOSIGNAL), 0x300);
		http_raw_put(fd, "\r\n300\r\n");
		ck_assert_int_eq(send(fd, big, 0x300, MSG_NOSIGNAL), 0x300);
		http_raw_read(fd, &R, false);
		ck_assert_int_eq(R.status, 413);
		close(fd);
	}
	/* Exactly max_body is fine. */
	{
		char req[1200];
		size_t o = (size_t)snprintf(req, sizeof(req),
					    "POST /echo HTTP/1.1\r\nHost: t\r\n"
					    "Content-Length: 1024\r\n\r\n");

		memset(req + o, 'y', 1024);
		req[o + 1024] = '\0';
		one(req, false);
		ck_assert_int_eq(R.status, 200);
		ck_assert_uint_eq(R.body_len, 1024);
	}
}
END_TEST

static const struct {
	const char *req;
	int status;
} bad[] = {
	{ "GARBAGE\r\n\r\n", 400 },
	{ "GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505 },
	{ "GET / HTTP/1.1\r\n\r\n", 400 },	       /* no Host */
	{ "GET / HTTP/1.1\r\nHost : t\r\n\r\n", 400 }, /* space before colon */
	{ "GET / HTTP/1.1\r\nHost: t\r\n folded\r\n\r\n", 400 }, /* obs-fold */
	{ "GET / HTTP/1.1\r\nHost: t\rx\r\n\r\n", 400 },	 /* bare CR */
	{ "GET http://h/ HTTP/1.1\r\nHost: t\r\n\r\n",
	  400 }, /* absolute-form */
	{ "GET /a b HTTP/1.1\r\nHost: t\r\n\r\n", 400 },
	{ "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
	  "Transfer-Encoding: chunked\r\n\r\n",
	  400 },
	{ "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
	  400 },
	{ "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: -3\r\n\r\n", 400 },
	{ "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0x10\r\n\r\n", 400 },
	{ "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n",
	  501 },
	{ "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	  400 },
	{ "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n",
	  400 },
	/* 1*HEXDIG only: no "0x", no sign, at most 16 digits. */
	{ "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\nab\r\n0\r\n\r\n",
	  400 },
	{ "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0X2\r\nab\r\n0\r\n\r\n",
	  400 },
	{ "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000002\r\nab\r\n0\r\n\r\n",
	  400 },
	{ "GET / HTTP/1.1\r\nHost: t\r\nExpect: magic\r\n\r\n", 417 },
	{ "GET / HTTP/1.1\r\nHost: t\r\nHost: u\r\n\r\n", 400 },
	{ "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n"
	  "Transfer-Encoding: identity\r\n\r\n",
	  400 },
};

START_TEST(test_bad_requests)
{
	one(bad[_i].req, false);
	ck_assert_msg(R.status == bad[_i].status, "%s -> %d, want %d",
		      bad[_i].req, R.status, bad[_i].status);
	ck_assert_str_eq(http_raw_hdr(&R, "Connection"), "close");
	ck_assert_str_eq(http_raw_hdr(&R, "Content-Type"), "application/json");
}
END_TEST

START_TEST(test_limits)
{
	char *req = malloc(40000);
	size_t o;
	int i, fd;

	/* 101 header fields, then a 20 KiB head: both 431. */
	o = (size_t)sprintf(req, "GET / HTTP/1.1\r\nHost: t\r\n");
	for (i = 0; i < 100; i++)
		o += (size_t)sprintf(req + o, "X-%d: v\r\n", i);
	strcpy(req + o, "\r\n");
	one(req, false);
	ck_assert_int_eq(R.status, 431);
	o = (size_t)sprintf(req, "GET / HTTP/1.1\r\nHost: t\r\nX-Big: ");
	memset(req + o, 'a', 20000);
	strcpy(req + o + 20000, "\r\n\r\n");
	one(req, false);
	ck_assert_int_eq(R.status, 431);
	o = (size_t)sprintf(req, "GET /");
	memset(req + o, 'a', 9000);
	strcpy(req + o + 9000, " HTTP/1.1\r\nHost: t\r\n\r\n");
	one(req, false);
	ck_assert_int_eq(R.status, 414);
	free(req);
	/* timeout_s = 1: a half-sent request gets 408; an idle one closes. */
	fd = http_raw_dial(port);
	http_raw_put(fd, "GET /echo HTTP/1.1\r\nHost: t\r\n");
	http_raw_read(fd, &R, false);
	ck_assert_int_eq(R.status, 408);
	close(fd);
	fd = http_raw_dial(port);
	ck_assert(http_raw_closed(fd));
	close(fd);
}
END_TEST

START_TEST(test_routes)
{
	one("GET /a/b/c HTTP/1.1\r\nHost: t\r\n\r\n", false);
	ck_assert_str_eq(R.body, "a/b");
	one("GET /a/b HTTP/1.1\r\nHost: t\r\n\r\n", false);
	ck_assert_str_eq(R.body, "a/b");
	one("GET /a/bc HTTP/1.1\r\nHost: t\r\n\r\n", false);
	ck_assert_str_eq(R.body, "a");
	one("GET /ab HTTP/1.1\r\nHost: t\r\n\r\n", false);
	ck_assert_str_eq(R.body, "root");
	one("GET /err HTTP/1.1\r\nHost: t\r\n\r\n", false);
	ck_assert_int_eq(R.status, 500);
	one("GET /err/missing HTTP/1.1\r\nHost: t\r\n\r\n", false);
	ck_assert_int_eq(R.status, 404);
	ck_assert_str_eq(
		R.body, "{\"error\":{\"message\":\"Not Found\",\"code\":404}}");
	/* HEAD: the headers of the reply, no body. */
	{
		int fd = http_raw_dial(port);

		http_raw_put(fd, "HEAD /a HTTP/1.1\r\nHost: t\r\n\r\n");
		http_raw_read(fd, &R, true);
		ck_assert_int_eq(R.status, 200);
		ck_assert_str_eq(http_raw_hdr(&R, "Content-Length"), "1");
		/* The next response starts right after the head. */
		http_raw_put(fd, "GET /a/b HTTP/1.1\r\nHost: t\r\n\r\n");
		http_raw_read(fd, &R, false);
		ck_assert_str_eq(R.body, "a/b");
		close(fd);
	}
}
END_TEST

START_TEST(test_async_and_stream)
{
	int fd = http_raw_dial(port);

	http_raw_put(fd, "GET /later HTTP/1.1\r\nHost: t\r\n\r\n");
	http_raw_read(fd, &R, false);
	ck_assert_int_eq(R.status, 202);
	ck_assert_str_eq(R.body, "later");
	http_raw_put(fd, "GET /stream HTTP/1.1\r\nHost: t\r\n\r\n");
	http_raw_read(fd, &R, false);
	ck_assert_int_eq(R.status, 200);
	ck_assert(R.chunked);
	ck_assert_int_eq(R.n_chunks, 3);
	ck_assert_str_eq(R.body, "data: 0\n\ndata: 1\n\ndata: 2\n\n");
	ck_assert_str_eq(http_raw_hdr(&R, "Content-Type"), "text/event-stream");
	ck_assert_str_eq(http_raw_hdr(&R, "Cache-Control"), "no-cache");
	/* Keep-alive after a stream. */
	http_raw_put(fd, "GET /a HTTP/1.1\r\nHost: t\r\n\r\n");
	http_raw_read(fd, &R, false);
	ck_assert_str_eq(R.body, "a");
	close(fd);
	/* HTTP/1.0 has no chunked: the stream ends with the connection. */
	one("GET /stream HTTP/1.0\r\n\r\n", false);
	ck_assert(!R.chunked && R.closed);
	ck_assert_str_eq(R.body, "data: 0\n\ndata: 1\n\ndata: 2\n\n");
}
END_TEST

START_TEST(test_gone)
{
	int fd = http_raw_dial(port), i;

	http_raw_put(fd, "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
	/* The handler has the exchange, and it is not gone while the
	 * client is still there. */
	for (i = 0; i < 500 && n_slow == 0; i++)
		usleep(10000);
	ck_assert_int_eq(n_slow, 1);
	ck_assert_int_eq(n_gone, 0);
	close(fd);
	for (i = 0; i < 500 && n_gone == 0; i++)
		usleep(10000);
	ck_assert_int_eq(n_gone, 1);
	/* A client that leaves mid-stream is gone too. */
	fd = http_raw_dial(port);
	http_raw_put(fd, "GET /stream HTTP/1.1\r\nHost: t\r\n\r\n");
	for (i = 0; i < 500 && n_streams == 0; i++)
		usleep(10000);
	ck_assert_int_eq(n_streams, 1);
	close(fd);
	for (i = 0; i < 500 && n_gone == 1; i++)
		usleep(10000);
	ck_assert_int_eq(n_gone, 2);
	/* Still serving. */
	one("GET /a HTTP/1.1\r\nHost: t\r\n\r\n", false);
	ck_assert_int_eq(R.status, 200);
}
END_TEST

/* Until the metrics show @want, up to 20 s. */
static void wait_metric(const char *want)
{
	bool seen = false;

	for (int i = 0; i < 2000 && !seen; i++) {
		char *m = engy_metrics_render(d.metrics);

		seen = m && strstr(m, want);
		free(m);
		if (!seen)
			usleep(10000);
	}
	ck_assert_msg(seen, "never saw %s", want);
}

/* Until the loop has @n connections open (the gauge). */
static void wait_conns(int n)
{
	char want[96];

	snprintf(want, sizeof(want),
		 "engy_http_connections{instance=\"web\"} %d\n", n);
	wait_metric(want);
}

START_TEST(test_max_connections_and_stop)
{
	int fds[8], fd, i;
	char *m;

	/* 8 busy connections (handlers that never answer): a 9th is 503. */
	for (i = 0; i < 8; i++) {
		fds[i] = http_raw_dial(port);
		http_raw_put(fds[i], "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
	}
	wait_metric("engy_http_inflight{instance=\"web\"} 8\n");
	fd = http_raw_dial(port);
	http_raw_read(fd, &R, false);
	ck_assert_int_eq(R.status, 503);
	close(fd);
	for (i = 0; i < 8; i++)
		close(fds[i]);
	wait_conns(0); /* the loop saw them go */
	/* 8 idle ones: a 9th closes the oldest idle one and is served. */
	for (i = 0; i < 8; i++) {
		fds[i] = http_raw_dial(port);
		wait_conns(i + 1); /* accepted in this order */
	}
	one("GET /a HTTP/1.1\r\nHost: t\r\n\r\n", false);
	ck_assert_int_eq(R.status, 200);
	ck_assert(http_raw_closed(fds[0]));
	for (i = 0; i < 8; i++)
		close(fds[i]);
	wait_conns(0);
	one("GET /a HTTP/1.1\r\nHost: t\r\n\r\n", false);
	ck_assert_int_eq(R.status, 200);
	/* stop(): listeners close, new connections are refused. */
	fd = http_raw_dial(port); /* an idle keep-alive one, closed by stop() */
	cmd('s');
	ck_assert(http_raw_closed(fd));
	close(fd);
	{
		struct sockaddr_in sa = { .sin_family = AF_INET };

		fd = socket(AF_INET, SOCK_STREAM, 0);
		sa.sin_port = htons((uint16_t)port);
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		for (i = 0; i < 50; i++) {
			if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
				break;
			close(fd);
			fd = socket(AF_INET, SOCK_STREAM, 0);
			usleep(10000);
		}
		ck_assert_int_eq(errno, ECONNREFUSED);
		close(fd);
	}
	cmd('q');
	pthread_join(loop_thr, NULL);
	m = engy_metrics_render(d.metrics);
	ck_assert_ptr_nonnull(strstr(
		m,
		"engy_http_requests_total{instance=\"web\",status=\"503\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(
		m,
		"engy_http_requests_total{instance=\"web\",status=\"200\"} 2\n"));
	ck_assert_ptr_nonnull(
		strstr(m, "engy_http_refused_total{instance=\"web\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(
		m, "engy_http_idle_reclaimed_total{instance=\"web\"} 1\n"));
	ck_assert_ptr_nonnull(
		strstr(m, "engy_http_inflight{instance=\"web\"} 0\n"));
	free(m);
	/* teardown joins again: restart a loop it can stop. */
	ck_assert_int_eq(pthread_create(&loop_thr, NULL, loop_main, NULL), 0);
}
END_TEST

START_TEST(test_destroy_flushes)
{
	char *buf = malloc(BIG + 4096), line[256];
	size_t got = 0;
	ssize_t n;
	int fd = http_raw_dial(port);

	http_raw_put(fd, "GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
	ck_assert_int_gt(http_raw_line(fd, line, sizeof(line)), 0);
	ck_assert_str_eq(line, "HTTP/1.1 200 OK\r\n");
	while ((n = recv(fd, buf + got, BIG + 4096 - got, 0)) > 0)
		got += (size_t)n;
	/* The head's rest, then every byte of the body, then the close. */
	ck_assert_ptr_nonnull(strstr(buf, "\r\n\r\n"));
	ck_assert_uint_eq(got - (size_t)(strstr(buf, "\r\n\r\n") + 4 - buf),
			  BIG);
	ck_assert_int_eq(buf[got - 1], 'z');
	close(fd);
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("transport_http");
	TCase *tc = tcase_create("wire");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_basic_and_keepalive);
	tcase_add_test(tc, test_bodies);
	tcase_add_loop_test(tc, test_bad_requests, 0,
			    sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_routes);
	tcase_add_test(tc, test_async_and_stream);
	tcase_add_test(tc, test_gone);
	tcase_add_test(tc, test_max_connections_and_stop);
	tcase_add_test(tc, test_destroy_flushes);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
