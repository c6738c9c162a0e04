/* SPDX-License-Identifier: MIT */
/*
 * bench_transport_http: requests per second and round-trip latency of a
 * small POST answered by transport-http (loaded and hosted as engyd does)
 * against libevent's own evhttp answering the same request on the same
 * loop, measured in the same run from the same client: keep-alive
 * requests on one connection, then new connections per request.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include <engy/plugin.h>
#include <engy/transport.h>

#include "conf.h"
#include "host.h"
#include "loader.h"
#include "log.h"
#include "metrics.h"
#include "pool.h"

#define N_KEEP 20000
#define N_NEW  2000
#define BODY                                                                   \
	"{\"input_ids\":[1,2,3,4,5,6,7,8],\"sampling_params\":{\"max_new_tokens\":8}}"

static struct engyd d;
static struct engy_instance in;
static const struct engy_transport_ops *ops;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int h_echo(void *arg, struct engy_http_exchange *x,
		  const struct engy_http_request *r)
{
	return ops->http_reply(in.inst, x, 200, "application/json", NULL,
			       r->body, r->body_len);
}

static const struct engy_http_handler hd_echo = { sizeof(hd_echo), h_echo,
						  NULL };

static void evhttp_echo(struct evhttp_request *req, void *arg)
{
	struct evbuffer *out = evbuffer_new();

	evhttp_add_header(evhttp_request_get_output_headers(req),
			  "Content-Type", "application/json");
	evbuffer_add_buffer(out, evhttp_request_get_input_buffer(req));
	evhttp_send_reply(req, 200, "OK", out);
	evbuffer_free(out);
}

static const char *conf_get(void *arg, const char *name)
{
	return strcmp(name, "listen") == 0 ? "127.0.0.1:0" : NULL;
}

static void on_quit(evutil_socket_t fd, short what, void *arg)
{
	event_base_loopbreak(d.base);
}

static void *loop_main(void *arg)
{
	event_base_dispatch(d.base);
	return NULL;
}

static int dial(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Send one request, read until the whole echoed body is in. */
static void roundtrip(int fd, const char *req, size_t len)
{
	char buf[4096];
	size_t got = 0;
	char *end;

	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len) {
		perror("send");
		exit(1);
	}
	for (;;) {
		ssize_t n = recv(fd, buf + got, sizeof(buf) - got - 1, 0);

		if (n <= 0) {
			fprintf(stderr, "recv: connection closed\n");
			exit(1);
		}
		got += (size_t)n;
		buf[got] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end && strlen(end + 4) >= strlen(BODY))
			return;
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct result {
	double rps, p50_us, p99_us, new_rps;
};

static void run(const char *name, int port, struct result *r)
{
	static double lat[N_KEEP];
	char req[512];
	size_t len;
	double t0, t;
	int fd, i;

	len = (size_t)snprintf(
		req, sizeof(req),
		"POST /echo HTTP/1.1\r\nHost: b\r\nContent-Type: application/json\r\n"
		"Content-Length: %zu\r\n\r\n%s",
		strlen(BODY), BODY);
	fd = dial(port);
	for (i = 0; i < 500; i++)
		roundtrip(fd, req, len);
	t0 = now();
	for (i = 0; i < N_KEEP; i++) {
		t = now();
		roundtrip(fd, req, len);
		lat[i] = now() - t;
	}
	r->rps = N_KEEP / (now() - t0);
	close(fd);
	qsort(lat, N_KEEP, sizeof(lat[0]), cmp);
	r->p50_us = lat[N_KEEP / 2] * 1e6;
	r->p99_us = lat[N_KEEP * 99 / 100] * 1e6;
	len = (size_t)snprintf(
		req, sizeof(req),
		"POST /echo HTTP/1.1\r\nHost: b\r\nConnection: close\r\n"
		"Content-Length: %zu\r\n\r\n%s",
		strlen(BODY), BODY);
	t0 = now();
	for (i = 0; i < N_NEW; i++) {
		fd = dial(port);
		roundtrip(fd, req, len);
		close(fd);
	}
	r->new_rps = N_NEW / (now() - t0);
	printf("%-15s keep-alive %8.0f req/s  p50 %6.1f us  p99 %6.1f us   "
	       "new connection each %7.0f req/s\n",
	       name, r->rps, r->p50_us, r->p99_us, r->new_rps);
}

int main(void)
{
	struct engy_errs e = { 0 };
	struct evhttp_bound_socket *bs;
	struct result a, b;
	struct evhttp *eh;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	char err[512], path[512], line[512];
	pthread_t thr;
	struct event *quit;
	int port = 0, eport, pfd[2];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/engy-bench-http-%d.log",
		 (int)getpid());
	engy_log_open(path, ENGY_LOG_INFO);
	d.base = event_base_new();
	engy_metrics_new(&d.metrics);
	engy_pool_new(d.base, 1, &d.pool);
	d.state_dir = strdup("/tmp");
	in.d = &d;
	in.name = strdup("bench");
	if (engy_loader_open(TRANSPORT_HTTP_SO, "transport-http", &in.lp, err,
			     sizeof(err)) ||
	    engy_conf_from_text("transport-http", in.lp.desc.opts,
				in.lp.desc.conf_size, conf_get, NULL, &in.conf,
				&e)) {
		fprintf(stderr, "bench_transport_http: %s\n", err);
		unlink(path);
		return 1;
	}
	engy_host_bind(&in);
	if (in.lp.desc.create(&in.host, in.conf, &in.inst) ||
	    in.lp.desc.start(in.inst)) {
		fprintf(stderr,
			"bench_transport_http: transport-http did not start\n");
		unlink(path);
		return 1;
	}
	ops = in.lp.ops;
	ops->http_route(in.inst, "/echo", &hd_echo, NULL);
	/* The port is in the "event=listen" line, which the log's writer
	 * thread may not have written yet: flush first.  The file is not
	 * needed after that (the log keeps writing to the unlinked file). */
	engy_log_flush();
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "event=listen ") && strstr(line, "port="))
			sscanf(strstr(line, "port=") + 5, "%d", &port);
	if (f)
		fclose(f);
	unlink(path);
	if (port <= 0 || port > 65535) {
		fprintf(stderr,
			"bench_transport_http: no listening port in %s\n",
			path);
		return 1;
	}
	eh = evhttp_new(d.base);
	evhttp_set_gencb(eh, evhttp_echo, NULL);
	bs = evhttp_bind_socket_with_handle(eh, "127.0.0.1", 0);
	getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&sa,
		    &sl);
	eport = ntohs(sa.sin_port);
	if (pipe(pfd) < 0)
		return 1;
	quit = event_new(d.base, pfd[0], EV_READ, on_quit, NULL);
	event_add(quit, NULL);
	pthread_create(&thr, NULL, loop_main, NULL);
	run("transport-http", port, &a);
	run("evhttp", eport, &b);
	printf("transport-http / evhttp: keep-alive %.2fx req/s, p50 latency %.2fx; "
	       "new connections %.2fx req/s\n",
	       a.rps / b.rps, a.p50_us / b.p50_us, a.new_rps / b.new_rps);
	if (write(pfd[1], "q", 1) != 1)
		return 1;
	pthread_join(thr, NULL);
	event_free(quit);
	close(pfd[0]);
	close(pfd[1]);
	evhttp_free(eh);
	in.lp.desc.destroy(in.inst);
	engy_host_release_timers(&in);
	engy_conf_free(in.lp.desc.opts, in.conf);
	engy_loader_close(&in.lp, true);
	engy_pool_close(d.pool);
	engy_pool_free(d.pool);
	engy_metrics_free(d.metrics);
	event_base_free(d.base);
	free(d.state_dir);
	free(in.name);
	engy_log_close();
	return 0;
}
