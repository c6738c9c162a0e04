/* SPDX-License-Identifier: MIT */
/*
 * lib/http/httpc against a real HTTP server on 127.0.0.1 (libevent's evhttp,
 * on a thread of its own): a 200 body, the size cap one byte either side
 * (declared by Content-Length and read from a chunked body), a server that
 * never answers (the timeout ends it with an error), a redirect that is
 * not followed, a non-2xx status with its body, a refused connection, a
 * cancel, headers and the bearer token as the server sees them, a kept
 * connection that carries no option over, bad requests, and many threads
 * at once.
 *
 * Oracle: an independent peer: libevent's evhttp server, which sees and
 * answers the requests.
 */
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

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "httpc.h"

#define CAP 1000

static struct srv {
	struct event_base *base;
	struct evhttp *http;
	struct event *stop_ev;
	int stop_fd[2];
	pthread_t th;
	unsigned short port;
	atomic_int target_hits;
} S;

static long query_num(struct evhttp_request *req, const char *key)
{
	const char *q =
		evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
	struct evkeyvalq kv;
	const char *v;
	long n = -1;

	if (!q || evhttp_parse_query_str(q, &kv) < 0)
		return -1;
	v = evhttp_find_header(&kv, key);
	if (v)
		n = strtol(v, NULL, 10);
	evhttp_clear_headers(&kv);
	return n;
}

static void reply(struct evhttp_request *req, int code, const char *body,
		  size_t len)
{
	struct evbuffer *b = evbuffer_new();

	evbuffer_add(b, body, len);
	evhttp_send_reply(req, code, code == 200 ? "OK" : "Status", b);
	evbuffer_free(b);
}

static void fill(struct evbuffer *b, size_t n)
{
	char blk[256];

	memset(blk, 'a', sizeof(blk));
	while (n) {
		size_t k = n < sizeof(blk) ? n : sizeof(blk);

		evbuffer_add(b, blk, k);
		n -= k;
	}
}

static const char *hdr(struct evhttp_request *req, const char *name)
{
	const char *v =
		evhttp_find_header(evhttp_request_get_input_headers(req), name);

	return v ? v : "-";
}

/* What the server saw, one "key=value" line each, as the answer. */
static void echo(struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	struct evbuffer *b = evbuffer_new();
	const char *m;

	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_GET:
		m = "GET";
		break;
	case EVHTTP_REQ_POST:
		m = "POST";
		break;
	case EVHTTP_REQ_PUT:
		m = "PUT";
		break;
	default:
		m = "other";
		break;
	}
	evbuffer_add_printf(
		b, "method=%s\nauth=%s\nct=%s\nx=%s\nua=%s\nlen=%zu\nbody=", m,
		hdr(req, "Authorization"), hdr(req, "Content-Type"),
		hdr(req, "X-Test"), hdr(req, "User-Agent"),
		evbuffer_get_length(in));
	evbuffer_add_buffer(b, in);
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

static void handle(struct evhttp_request *req, void *arg)
{
	const char *path =
		evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	long n;

	(void)arg;
	if (!path)
		path = "/";
	if (strcmp(path, "/ok") == 0) {
		reply(req, 200, "hello", 5);
	} else if (strcmp(path, "/size") == 0) {
		struct evbuffer *b = evbuffer_new();

		fill(b, (size_t)query_num(req, "n"));
		evhttp_send_reply(req, 200, "OK", b); /* with Content-Length */
		evbuffer_free(b);
	} else if (strcmp(path, "/chunked") == 0) {
		struct evbuffer *b = evbuffer_new();

		n = query_num(req, "n");
		evhttp_send_reply_start(req, 200, "OK"); /* no length */
		fill(b, (size_t)n / 2);
		evhttp_send_reply_chunk(req, b);
		fill(b, (size_t)(n - n / 2));
		evhttp_send_reply_chunk(req, b);
		evhttp_send_reply_end(req);
		evbuffer_free(b);
	} else if (strcmp(path, "/hang") == 0) {
		/* never answered; evhttp_free() drops it at the end */
	} else if (strcmp(path, "/redirect") == 0) {
		evhttp_add_header(out, "Location", "/target");
		reply(req, 302, "moved", 5);
	} else if (strcmp(path, "/target") == 0) {
		atomic_fetch_add(&S.target_hits, 1);
		reply(req, 200, "target", 6);
	} else if (strcmp(path, "/status") == 0) {
		evhttp_add_header(out, "Content-Type", "application/json");
		reply(req, (int)query_num(req, "c"), "{\"error\":\"busy\"}",
		      16);
	} else if (strcmp(path, "/echo") == 0) {
		echo(req);
	} else {
		reply(req, 404, "no", 2);
	}
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what, (void)arg;
	event_base_loopbreak(S.base);
}

static void *serve(void *arg)
{
	(void)arg;
	event_base_dispatch(S.base);
	return NULL;
}

static void srv_up(void)
{
	struct evhttp_bound_socket *bs;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);

	memset(&S, 0, sizeof(S));
	ck_assert_int_eq(pipe(S.stop_fd), 0);
	S.base = event_base_new();
	ck_assert_ptr_nonnull(S.base);
	S.http = evhttp_new(S.base);
	ck_assert_ptr_nonnull(S.http);
	evhttp_set_allowed_methods(S.http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
						   EVHTTP_REQ_PUT);
	evhttp_set_gencb(S.http, handle, NULL);
	bs = evhttp_bind_socket_with_handle(S.http, "127.0.0.1", 0);
	ck_assert_ptr_nonnull(bs);
	ck_assert_int_eq(getsockname(evhttp_bound_socket_get_fd(bs),
				     (struct sockaddr *)&sa, &sl),
			 0);
	S.port = ntohs(sa.sin_port);
	S.stop_ev = event_new(S.base, S.stop_fd[0], EV_READ, on_stop, NULL);
	ck_assert_int_eq(event_add(S.stop_ev, NULL), 0);
	ck_assert_int_eq(pthread_create(&S.th, NULL, serve, NULL), 0);
	ck_assert_int_eq(engy_httpc_global_init(), 0);
}

static void srv_down(void)
{
	ck_assert_int_eq(write(S.stop_fd[1], "x", 1), 1);
	pthread_join(S.th, NULL);
	evhttp_free(S.http);
	event_free(S.stop_ev);
	event_base_free(S.base);
	close(S.stop_fd[0]);
	close(S.stop_fd[1]);
}

static void url(char *buf, size_t cap, const char *path)
{
	snprintf(buf, cap, "http://127.0.0.1:%u%s", S.port, path);
}

/* One GET with the default test settings (cap CAP, 10 s). */
static int get(const char *path, struct engy_httpc_resp *rs)
{
	char u[128];
	const struct engy_httpc_req rq = {
		.url = u,
		.timeout_ms = 10000,
		.max_body = CAP,
	};

	url(u, sizeof(u), path);
	return engy_httpc_do(NULL, &rq, rs);
}

static bool all_a(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != 'a')
			return false;
	return true;
}

START_TEST(test_200_body)
{
	struct engy_httpc_resp rs;

	ck_assert_int_eq(get("/ok", &rs), 0);
	ck_assert_int_eq(rs.status, 200);
	ck_assert_uint_eq(rs.len, 5);
	ck_assert_str_eq(rs.body, "hello"); /* NUL-terminated */
	ck_assert_str_eq(rs.err, "");
	engy_httpc_resp_free(&rs);
	ck_assert_ptr_null(rs.body);
}
END_TEST

/* Declared length: exactly the cap passes, one byte more never reads. */
START_TEST(test_cap_content_length)
{
	struct engy_httpc_resp rs;
	char path[64];

	snprintf(path, sizeof(path), "/size?n=%d", CAP);
	ck_assert_int_eq(get(path, &rs), 0);
	ck_assert_int_eq(rs.status, 200);
	ck_assert_uint_eq(rs.len, CAP);
	ck_assert(all_a(rs.body, rs.len));
	ck_assert_int_eq(rs.body[CAP], '\0');
	engy_httpc_resp_free(&rs);

	snprintf(path, sizeof(path), "/size?n=%d", CAP + 1);
	ck_assert_int_eq(get(path, &rs), -EFBIG);
	ck_assert_str_eq(rs.err, "response over 1000 bytes");
	ck_assert_ptr_null(rs.body);
	ck_assert_uint_eq(rs.len, 0);
	engy_httpc_resp_free(&rs);

	ck_assert_int_eq(get("/size?n=5000000", &rs), -EFBIG);
	ck_assert_str_eq(rs.err, "response over 1000 bytes");
	engy_httpc_resp_free(&rs);
}
END_TEST

/* No declared length (chunked): the running total is the cap. */
START_TEST(test_cap_chunked)
{
	struct engy_httpc_resp rs;
	char path[64];

	snprintf(path, sizeof(path), "/chunked?n=%d", CAP);
	ck_assert_int_eq(get(path, &rs), 0);
	ck_assert_int_eq(rs.status, 200);
	ck_assert_uint_eq(rs.len, CAP);
	ck_assert(all_a(rs.body, rs.len));
	engy_httpc_resp_free(&rs);

	snprintf(path, sizeof(path), "/chunked?n=%d", CAP + 1);
	ck_assert_int_eq(get(path, &rs), -EFBIG);
	ck_assert_str_eq(rs.err, "response over 1000 bytes");
	ck_assert_ptr_null(rs.body);
	engy_httpc_resp_free(&rs);

	ck_assert_int_eq(get("/chunked?n=3000000", &rs), -EFBIG);
	engy_httpc_resp_free(&rs);
}
END_TEST

/* The server takes the request and never answers: the timeout ends it. */
START_TEST(test_timeout)
{
	struct engy_httpc_resp rs;
	char u[128];
	const struct engy_httpc_req rq = {
		.url = u,
		.timeout_ms = 300,
		.connect_timeout_ms = 300,
		.max_body = CAP,
	};

	url(u, sizeof(u), "/hang");
	ck_assert_int_eq(engy_httpc_do(NULL, &rq, &rs), -ETIMEDOUT);
	ck_assert_int_eq(rs.status, 0);
	ck_assert_ptr_null(rs.body);
	ck_assert_str_eq(rs.err, "Timeout was reached");
	engy_httpc_resp_free(&rs);
}
END_TEST

/* Redirects are refused: the 3xx comes back, its target is never asked. */
START_TEST(test_redirect_not_followed)
{
	struct engy_httpc *c = engy_httpc_new();
	struct engy_httpc_resp rs;
	char u[128];
	const struct engy_httpc_req rq = {
		.url = u,
		.timeout_ms = 10000,
		.max_body = CAP,
	};

	ck_assert_int_eq(get("/redirect", &rs), 0);
	ck_assert_int_eq(rs.status, 302);
	ck_assert_str_eq(rs.body, "moved");
	engy_httpc_resp_free(&rs);
	ck_assert_ptr_nonnull(c);
	url(u, sizeof(u), "/redirect");
	ck_assert_int_eq(engy_httpc_do(c, &rq, &rs), 0);
	ck_assert_int_eq(rs.status, 302);
	engy_httpc_resp_free(&rs);
	/* the server answered /ok after both: it would have seen /target */
	ck_assert_int_eq(get("/ok", &rs), 0);
	engy_httpc_resp_free(&rs);
	ck_assert_int_eq(atomic_load(&S.target_hits), 0);
	ck_assert_int_eq(get("/target", &rs), 0);
	engy_httpc_resp_free(&rs);
	ck_assert_int_eq(atomic_load(&S.target_hits), 1);
	engy_httpc_free(c);
}
END_TEST

START_TEST(test_non_2xx_keeps_body)
{
	struct engy_httpc_resp rs;

	ck_assert_int_eq(get("/status?c=503", &rs), 0);
	ck_assert_int_eq(rs.status, 503);
	ck_assert_str_eq(rs.body, "{\"error\":\"busy\"}");
	ck_assert_str_eq(rs.err, "");
	engy_httpc_resp_free(&rs);
	ck_assert_int_eq(get("/status?c=401", &rs), 0);
	ck_assert_int_eq(rs.status, 401);
	engy_httpc_resp_free(&rs);
	ck_assert_int_eq(get("/nothing", &rs), 0);
	ck_assert_int_eq(rs.status, 404);
	ck_assert_str_eq(rs.body, "no");
	engy_httpc_resp_free(&rs);
}
END_TEST

START_TEST(test_refused)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	struct engy_httpc_resp rs;
	char u[128];
	const struct engy_httpc_req rq = {
		.url = u,
		.timeout_ms = 10000,
		.max_body = CAP,
	};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	/* a port just bound and closed: nothing listens there */
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	snprintf(u, sizeof(u), "http://127.0.0.1:%u/ok", ntohs(sa.sin_port));
	ck_assert_int_eq(engy_httpc_do(NULL, &rq, &rs), -ECONNREFUSED);
	ck_assert_str_eq(rs.err, "Couldn't connect to server");
	engy_httpc_resp_free(&rs);
}
END_TEST

START_TEST(test_cancel)
{
	atomic_int cancel = 1;
	struct engy_httpc_resp rs;
	char u[128];
	const struct engy_httpc_req rq = {
		.url = u,
		.timeout_ms = 60000,
		.max_body = CAP,
		.cancel = &cancel,
	};

	url(u, sizeof(u), "/hang");
	ck_assert_int_eq(engy_httpc_do(NULL, &rq, &rs), -ECANCELED);
	ck_assert_str_eq(rs.err, "cancelled");
	engy_httpc_resp_free(&rs);
}
END_TEST

/* Method, headers, body and the bearer token as the server got them. */
START_TEST(test_post_headers_bearer)
{
	static const char *const hs[] = { "Content-Type: application/json",
					  "X-Test: one", NULL };
	static const char body[] = "{\"a\":1}";
	struct engy_httpc_resp rs;
	char u[128];
	struct engy_httpc_req rq = {
		.url = u,
		.headers = hs,
		.body = body,
		.body_len = sizeof(body) - 1,
		.timeout_ms = 10000,
		.max_body = CAP,
		.bearer = "s3cret",
		.user_agent = "engy-test/1",
	};

	url(u, sizeof(u), "/echo");
	ck_assert_int_eq(engy_httpc_do(NULL, &rq, &rs), 0);
	ck_assert_int_eq(rs.status, 200);
	ck_assert_str_eq(rs.body, "method=POST\nauth=Bearer s3cret\n"
				  "ct=application/json\nx=one\nua=engy-test/1\n"
				  "len=7\nbody={\"a\":1}");
	engy_httpc_resp_free(&rs);

	rq.method = "PUT";
	ck_assert_int_eq(engy_httpc_do(NULL, &rq, &rs), 0);
	ck_assert_ptr_nonnull(strstr(rs.body, "method=PUT\n"));
	ck_assert_ptr_nonnull(strstr(rs.body, "body={\"a\":1}"));
	engy_httpc_resp_free(&rs);

	/* POST without a body sends an empty one */
	rq.method = "POST";
	rq.body = NULL;
	rq.body_len = 0;
	ck_assert_int_eq(engy_httpc_do(NULL, &rq, &rs), 0);
	ck_assert_ptr_nonnull(strstr(rs.body, "method=POST\n"));
	ck_assert_ptr_nonnull(strstr(rs.body, "len=0\n"));
	engy_httpc_resp_free(&rs);
}
END_TEST

/* A kept connection: each call has only its own options. */
START_TEST(test_kept_connection)
{
	static const char *const hs[] = { "X-Test: kept", NULL };
	struct engy_httpc *c = engy_httpc_new();
	struct engy_httpc_resp rs;
	char u[128];
	struct engy_httpc_req rq = {
		.url = u,
		.headers = hs,
		.body = "x",
		.body_len = 1,
		.timeout_ms = 10000,
		.max_body = CAP,
		.bearer = "tok1",
		.user_agent = "ua1",
	};
	int i;

	ck_assert_ptr_nonnull(c);
	url(u, sizeof(u), "/echo");
	ck_assert_int_eq(engy_httpc_do(c, &rq, &rs), 0);
	ck_assert_str_eq(
		rs.body,
		"method=POST\nauth=Bearer tok1\nct=application/x-www-form-urlencoded\n"
		"x=kept\nua=ua1\nlen=1\nbody=x");
	engy_httpc_resp_free(&rs);
	memset(&rq, 0, sizeof(rq));
	rq.url = u;
	rq.timeout_ms = 10000;
	rq.max_body = CAP;
	ck_assert_int_eq(engy_httpc_do(c, &rq, &rs), 0);
	ck_assert_str_eq(rs.body,
			 "method=GET\nauth=-\nct=-\nx=-\nua=-\nlen=0\nbody=");
	engy_httpc_resp_free(&rs);
	/* an error on a kept connection leaves it usable */
	rq.max_body = 10;
	url(u, sizeof(u), "/size?n=11");
	ck_assert_int_eq(engy_httpc_do(c, &rq, &rs), -EFBIG);
	engy_httpc_resp_free(&rs);
	rq.max_body = CAP;
	for (i = 0; i < 3; i++) {
		url(u, sizeof(u), "/ok");
		ck_assert_int_eq(engy_httpc_do(c, &rq, &rs), 0);
		ck_assert_str_eq(rs.body, "hello");
		engy_httpc_resp_free(&rs);
	}
	engy_httpc_free(c);
}
END_TEST

START_TEST(test_bad_requests)
{
	static const char *const split[] = { "X-Test: a\r\nX-Evil: b", NULL };
	struct engy_httpc_resp rs;
	char u[128];
	struct engy_httpc_req rq = {
		.url = u,
		.timeout_ms = 10000,
		.max_body = CAP,
	};

	url(u, sizeof(u), "/ok");
	rq.headers = split;
	ck_assert_int_eq(engy_httpc_do(NULL, &rq, &rs), -EINVAL);
	ck_assert_str_eq(rs.err, "a header holds a line break");
	rq.headers = NULL;
	rq.bearer = "tok\nX-Evil: b";
	ck_assert_int_eq(engy_httpc_do(NULL, &rq, &rs), -EINVAL);
	rq.bearer = NULL;
	rq.max_body = 0;
	ck_assert_int_eq(engy_httpc_do(NULL, &rq, &rs), -EINVAL);
	rq.max_body = CAP;
	rq.timeout_ms = 0;
	ck_assert_int_eq(engy_httpc_do(NULL, &rq, &rs), -EINVAL);
	rq.timeout_ms = 10000;
	rq.url = NULL;
	ck_assert_int_eq(engy_httpc_do(NULL, &rq, &rs), -EINVAL);
	/* only http and https are dialled */
	rq.url = "file:///etc/passwd";
	ck_assert_int_eq(engy_httpc_do(NULL, &rq, &rs), -EIO);
	ck_assert_ptr_null(rs.body);
	engy_httpc_resp_free(&rs);
}
END_TEST

#define N_THREADS 8
#define N_EACH	  25

static void *hammer(void *arg)
{
	struct engy_httpc *kept = arg ? engy_httpc_new() : NULL;
	long ok = 0;
	int i;

	for (i = 0; i < N_EACH; i++) {
		struct engy_httpc_resp rs;
		char u[128];
		const struct engy_httpc_req rq = {
			.url = u,
			.timeout_ms = 10000,
			.max_body = 4096,
		};

		url(u, sizeof(u), i % 2 ? "/size?n=4096" : "/chunked?n=4096");
		if (engy_httpc_do(kept, &rq, &rs) == 0 && rs.status == 200 &&
		    rs.len == 4096 && all_a(rs.body, rs.len))
			ok++;
		engy_httpc_resp_free(&rs);
	}
	engy_httpc_free(kept);
	return (void *)ok;
}

/* Worker threads: fresh connections and kept ones, all at once. */
START_TEST(test_threads)
{
	pthread_t th[N_THREADS];
	void *ok;
	int i;

	for (i = 0; i < N_THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, hammer,
						i % 2 ? (void *)1 : NULL),
				 0);
	for (i = 0; i < N_THREADS; i++) {
		ck_assert_int_eq(pthread_join(th[i], &ok), 0);
		ck_assert_int_eq((long)ok, N_EACH);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("httpc");
	TCase *tc = tcase_create("local server");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, srv_up, srv_down);
	tcase_add_test(tc, test_200_body);
	tcase_add_test(tc, test_cap_content_length);
	tcase_add_test(tc, test_cap_chunked);
	tcase_add_test(tc, test_timeout);
	tcase_add_test(tc, test_redirect_not_followed);
	tcase_add_test(tc, test_non_2xx_keeps_body);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_cancel);
	tcase_add_test(tc, test_post_headers_bearer);
	tcase_add_test(tc, test_kept_connection);
	tcase_add_test(tc, test_bad_requests);
	tcase_add_test(tc, test_threads);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
