/* SPDX-License-Identifier: MIT */
/*
 * The serve role on the fake host, its files linked into the test, with a
 * fake http transport (routes and replies kept) and a fake backend whose
 * generate() holds every request until the test ends it: what start()
 * refuses (no http transport, no backend, a route refused), the routes it
 * registers, that create() does no I/O and destroy() after create() or
 * with requests still open frees everything, and the small routes'
 * answers (health, model info, methods), /generate's refusals (bad body,
 * input past the vocabulary, a duplicate rid, the queue full: 503) and
 * its admission (running up to max_running, then queued; abort_request by
 * rid prefix and abort_all: a queued one ends at once, a running one is
 * cancelled at the backend).
 *
 * Oracle: behaviour from sglang's API and specs/serve.md as written by the
 * test's author; curl and node's fetch drive it independently in
 * serve_api.sh.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include <engy/plugin.h>
#include <engy/role.h>

#include "fake_host.h"
#include "serve_int.h"

extern const struct engy_plugin engy_plugin;

static struct event_base *base;

static struct event_base *test_evbase(const struct engy_host *h)
{
	return base;
}

/* ---- the fake transport ----------------------------------------------- */

#define MAX_ROUTES 8
#define MAX_X	   8

static struct {
	int route_rc;
	size_t n_routes;
	const char *paths[MAX_ROUTES];
	const struct engy_http_handler *hd[MAX_ROUTES];
	void *arg[MAX_ROUTES];
	/* the last reply */
	unsigned n_replies;
	int status;
	char body[1024];
	/* streams */
	unsigned n_begin;
	/* the backend */
	int info_rc;
	unsigned n_gen, n_cancel;
	const struct engy_gen_cb *cb[MAX_X];
	void *cb_arg[MAX_X];
	struct engy_gen *cancelled[MAX_X];
} tk;

/* Exchanges are opaque to the role: distinct addresses. */
static char xs[MAX_X];
#define X(i) ((struct engy_http_exchange *)&xs[i])

static int t_route(void *inst, const char *prefix,
		   const struct engy_http_handler *h, void *arg)
{
	if (tk.route_rc)
		return tk.route_rc;
	ck_assert_uint_lt(tk.n_routes, MAX_ROUTES);
	tk.paths[tk.n_routes] = prefix;
	tk.hd[tk.n_routes] = h;
	tk.arg[tk.n_routes++] = arg;
	return 0;
}

static int t_reply(void *inst, struct engy_http_exchange *x, int status,
		   const char *content_type, const char *const *headers,
		   const void *body, size_t len)
{
	tk.n_replies++;
	tk.status = status;
	ck_assert_uint_lt(len, sizeof(tk.body));
	memcpy(tk.body, body ? body : "", len);
	tk.body[len] = '\0';
	return 0;
}

static int t_begin(void *inst, struct engy_http_exchange *x, int status,
		   const char *content_type, const char *const *headers)
{
	tk.n_begin++;
	return 0;
}

static int t_write(void *inst, struct engy_http_exchange *x, const void *data,
		   size_t len)
{
	return 0;
}

static void t_end(void *inst, struct engy_http_exchange *x)
{
}

static int be_info(void *inst, struct engy_model_info *out)
{
	if (tk.info_rc)
		return tk.info_rc;
	snprintf(out->name, sizeof(out->name), "qwen-test");
	out->hidden_size = 8;
	out->vocab_size = 100;
	out->max_context = 64;
	return 0;
}

static int be_generate(void *inst, const struct engy_gen_params *p,
		       const struct engy_gen_cb *cb, void *arg,
		       struct engy_gen **out)
{
	ck_assert_uint_lt(tk.n_gen, MAX_X);
	tk.cb[tk.n_gen] = cb;
	tk.cb_arg[tk.n_gen] = arg;
	/* any distinct non-NULL handle */
	*out = (struct engy_gen *)&tk.cb_arg[tk.n_gen];
	tk.n_gen++;
	return 0;
}

static void be_cancel(void *inst, struct engy_gen *g)
{
	ck_assert_uint_lt(tk.n_cancel, MAX_X);
	tk.cancelled[tk.n_cancel++] = g;
}

static struct engy_transport_ops t_http, t_ws;
static struct engy_backend_ops be;

enum { P_HTTP, P_BE, P_WS };
static struct engy_peer_info peers[3];

static void peers_init(void)
{
	memset(&tk, 0, sizeof(tk));
	memset(&t_http, 0, sizeof(t_http));
	t_http.size = sizeof(t_http);
	t_http.proto = "http";
	t_http.http_route = t_route;
	t_http.http_reply = t_reply;
	t_http.http_stream_begin = t_begin;
	t_http.http_stream_write = t_write;
	t_http.http_stream_end = t_end;
	t_ws = t_http;
	t_ws.proto = "ws";
	memset(&be, 0, sizeof(be));
	be.size = sizeof(be);
	be.info = be_info;
	be.generate = be_generate;
	be.cancel = be_cancel;
#define PEER(i, k, n, o)                                                       \
	peers[i] = (struct engy_peer_info){                                    \
		sizeof(peers[i]), k, n, n, "9.9", o, NULL                      \
	}
	PEER(P_HTTP, ENGY_KIND_TRANSPORT, "transport-http", &t_http);
	PEER(P_BE, ENGY_KIND_BACKEND, "backend-ref", &be);
	PEER(P_WS, ENGY_KIND_TRANSPORT, "transport-ws", &t_ws);
#undef PEER
}

/* ---- fixture ------------------------------------------------------------ */

/* serve.c's own conf layout: three int64s and a bool. */
struct conf {
	int64_t max_running, max_queued, stream_hidden_max;
	bool stream_hidden_repeat;
};

struct fx {
	struct engy_host *h;
	struct conf c;
	void *inst;
};

static void fx_init(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	f->h = fake_host_new("serve");
	ck_assert_ptr_nonnull(f->h);
	f->h->evbase = test_evbase;
	peers_init();
	fake_host_set_peers(f->h, peers, 2);
	f->c.max_running = 2;
	f->c.max_queued = 1;
	f->c.stream_hidden_max = 1048576;
}

static void fx_free(struct fx *f)
{
	engy_plugin.destroy(f->inst);
	f->inst = NULL;
	fake_host_free(f->h);
}

static int fx_start(struct fx *f)
{
	ck_assert_int_eq(engy_plugin.create(f->h, &f->c, &f->inst), 0);
	return engy_plugin.start(f->inst);
}

static void assert_log(struct fx *f, const char *s)
{
	ck_assert_msg(strstr(fake_host_log(f->h), s), "no \"%s\" in:\n%s", s,
		      fake_host_log(f->h));
}

/* One request to the route registered for @path, as the transport would
 * send it; returns the handler's rc. */
static int call(struct fx *f, struct engy_http_exchange *x, const char *method,
		const char *path, const char *body)
{
	struct engy_http_request r = { 0 };
	size_t i;

	for (i = 0; i < tk.n_routes; i++)
		if (!strcmp(tk.paths[i], path))
			break;
	ck_assert_msg(i < tk.n_routes, "no route %s", path);
	r.method = method;
	r.path = path;
	r.body = (const uint8_t *)body;
	r.body_len = body ? strlen(body) : 0;
	r.remote = "127.0.0.1:9";
	tk.status = 0;
	return tk.hd[i]->on_request(tk.arg[i], x, &r);
}

/* ---- create and start ------------------------------------------------- */

START_TEST(descriptor)
{
	const struct engy_role_ops *ro = engy_plugin.ops;

	ck_assert_uint_eq(engy_plugin.kind, ENGY_KIND_ROLE);
	ck_assert_str_eq(engy_plugin.name, "role-serve");
	ck_assert_uint_eq(engy_plugin.conf_size, sizeof(struct conf));
	ck_assert_uint_eq(ro->needs[0].kind, ENGY_KIND_TRANSPORT);
	ck_assert_uint_eq(ro->needs[1].kind, ENGY_KIND_BACKEND);
	ck_assert_uint_eq(ro->needs[2].kind, 0);
}
END_TEST

START_TEST(create_no_io)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(engy_plugin.create(f.h, &f.c, &f.inst), 0);
	ck_assert_uint_eq(tk.n_routes, 0);
	ck_assert_str_eq(fake_host_log(f.h), "");
	ck_assert_uint_eq(((const struct engy_role_ops *)engy_plugin.ops)
				  ->inflight(f.inst),
			  0);
	fx_free(&f);
}
END_TEST

START_TEST(refuse_unwired)
{
	struct fx f;

	fx_init(&f);
	fake_host_set_peers(f.h, peers + 1, 2); /* backend, ws */
	ck_assert_int_eq(fx_start(&f), -EINVAL);
	assert_log(&f, "event=serve_unwired reason=\"no transport with proto "
		       "http (transport-http)\"");
	ck_assert_uint_eq(tk.n_routes, 0);
	fx_free(&f);

	fx_init(&f);
	fake_host_set_peers(f.h, peers, 1); /* http only */
	ck_assert_int_eq(fx_start(&f), -EINVAL);
	assert_log(&f, "event=serve_unwired reason=\"no backend\"");
	fx_free(&f);

	fx_init(&f);
	t_http.http_stream_end = NULL; /* cannot stream */
	ck_assert_int_eq(fx_start(&f), -EINVAL);
	assert_log(&f, "reason=\"no transport with proto http");
	fx_free(&f);

	fx_init(&f);
	tk.route_rc = -EADDRINUSE;
	ck_assert_int_eq(fx_start(&f), -EADDRINUSE);
	assert_log(&f, "event=route_failed path=/generate error=");
	fx_free(&f);
}
END_TEST

START_TEST(start_routes)
{
	static const char *const want[] = {
		"/generate",	  "/abort_request", "/get_model_info",
		"/model_info",	  "/health",	    "/health_generate",
		"/engy/gemm_open"
	};
	struct fx f;
	size_t i;

	fx_init(&f);
	ck_assert_int_eq(fx_start(&f), 0);
	ck_assert_uint_eq(tk.n_routes, 7);
	for (i = 0; i < 7; i++) {
		ck_assert_str_eq(tk.paths[i], want[i]);
		ck_assert_ptr_eq(tk.arg[i], f.inst);
	}
	assert_log(&f, "event=model hidden_size=8 vocab_size=100 "
		       "max_context=64");
	assert_log(&f, "event=no_tokenizer reason=\"the backend names no "
		       "checkpoint directory\"");
	assert_log(&f, "event=serve_ready transport=transport-http "
		       "backend=backend-ref max_running=2 max_queued=1");
	fx_free(&f);
}
END_TEST

/* ---- the small routes ------------------------------------------------- */

START_TEST(small_routes)
{
	struct fx f;

	fx_init(&f);
	tk.info_rc = -EAGAIN; /* the backend still loads */
	ck_assert_int_eq(fx_start(&f), 0);
	assert_log(&f, "event=backend_info_failed");
	ck_assert_int_eq(call(&f, X(0), "GET", "/health", NULL), 0);
	ck_assert_int_eq(tk.status, 503);
	ck_assert_int_eq(call(&f, X(0), "GET", "/get_model_info", NULL), 0);
	ck_assert_int_eq(tk.status, 503);
	ck_assert_ptr_nonnull(strstr(tk.body, "The backend is not ready."));
	tk.info_rc = 0;
	ck_assert_int_eq(call(&f, X(0), "HEAD", "/health_generate", NULL), 0);
	ck_assert_int_eq(tk.status, 200);
	ck_assert_int_eq(call(&f, X(0), "POST", "/health", NULL), 0);
	ck_assert_int_eq(tk.status, 405);
	ck_assert_int_eq(call(&f, X(0), "GET", "/model_info", NULL), 0);
	ck_assert_int_eq(tk.status, 200);
	ck_assert_str_eq(tk.body, "{\"model_path\":\"qwen-test\","
				  "\"tokenizer_path\":\"qwen-test\","
				  "\"is_generation\":true,"
				  "\"preferred_sampling_params\":null,"
				  "\"weight_version\":\"default\"}");
	ck_assert_int_eq(call(&f, X(0), "GET", "/abort_request", NULL), 0);
	ck_assert_int_eq(tk.status, 405);
	ck_assert_int_eq(call(&f, X(0), "POST", "/abort_request", "{"), 0);
	ck_assert_int_eq(tk.status, 400);
	ck_assert_int_eq(call(&f, X(0), "GET", "/generate", NULL), 0);
	ck_assert_int_eq(tk.status, 405);
	engy_plugin.stop(f.inst);
	ck_assert_int_eq(call(&f, X(0), "GET", "/health", NULL), 0);
	ck_assert_int_eq(tk.status, 503);
	ck_assert_int_eq(
		call(&f, X(0), "POST", "/generate", "{\"input_ids\":[1,2]}"),
		0);
	ck_assert_int_eq(tk.status, 503);
	ck_assert_ptr_nonnull(strstr(tk.body, "shutting down"));
	ck_assert_uint_eq(tk.n_gen, 0);
	fx_free(&f);
}
END_TEST

/* ---- /generate -------------------------------------------------------- */

START_TEST(generate_refusals)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(fx_start(&f), 0);
	ck_assert_int_eq(call(&f, X(0), "POST", "/generate", "[1,"), 0);
	ck_assert_int_eq(tk.status, 400);
	ck_assert_int_eq(call(&f, X(0), "POST", "/generate",
			      "{\"input_ids\":[1,100],"
			      "\"sampling_params\":{\"max_new_tokens\":4}}"),
			 0);
	ck_assert_int_eq(tk.status, 400);
	ck_assert_ptr_nonnull(strstr(tk.body, "token id 100"));
	ck_assert_int_eq(call(&f, X(0), "POST", "/generate",
			      "{\"input_ids\":[1,99],"
			      "\"sampling_params\":{\"max_new_tokens\":63}}"),
			 0);
	ck_assert_int_eq(tk.status, 400);
	ck_assert_uint_eq(tk.n_gen, 0);
	ck_assert_uint_eq(((const struct engy_role_ops *)engy_plugin.ops)
				  ->inflight(f.inst),
			  0);
	fx_free(&f);
}
END_TEST

#define GEN(rid)                                                               \
	"{\"rid\":\"" rid "\",\"input_ids\":[1,2,3],"                          \
	"\"sampling_params\":{\"max_new_tokens\":4}}"

/* max_running 2, max_queued 1: two run, one waits, the fourth is 503;
 * a duplicate rid is 400; abort by prefix ends the queued one at once and
 * cancels a running one at the backend; destroy() frees what is left. */
START_TEST(generate_admission_abort)
{
	struct fx f;
	struct serve *s;
	const struct engy_role_ops *ro = engy_plugin.ops;

	fx_init(&f);
	ck_assert_int_eq(fx_start(&f), 0);
	s = f.inst;
	ck_assert_int_eq(call(&f, X(0), "POST", "/generate", GEN("a-1")), 0);
	ck_assert_int_eq(call(&f, X(1), "POST", "/generate", GEN("b-1")), 0);
	ck_assert_uint_eq(tk.n_gen, 2);
	ck_assert_uint_eq(s->n_running, 2);
	ck_assert_int_eq(call(&f, X(2), "POST", "/generate", GEN("a-2")), 0);
	ck_assert_uint_eq(tk.n_gen, 2);
	ck_assert_uint_eq(s->n_queued, 1);
	ck_assert_uint_eq(tk.n_replies, 0); /* nobody answered yet */
	ck_assert_int_eq(call(&f, X(3), "POST", "/generate", GEN("c-1")), 0);
	ck_assert_int_eq(tk.status, 503);
	ck_assert_ptr_nonnull(strstr(tk.body, "The request queue is full."));
	ck_assert_int_eq(call(&f, X(4), "POST", "/generate", GEN("b-1")), 0);
	ck_assert_int_eq(tk.status, 400);
	ck_assert_ptr_nonnull(strstr(tk.body, "Duplicate request ID detected: "
					      "b-1"));
	ck_assert_uint_eq(ro->inflight(f.inst), 3);

	/* "a-": the queued a-2 ends now, the running a-1 is cancelled */
	ck_assert_int_eq(
		call(&f, X(5), "POST", "/abort_request", "{\"rid\":\"a-\"}"),
		0);
	ck_assert_int_eq(tk.status, 200);
	assert_log(&f, "event=abort_request prefix_len=2 all=0 matched=2");
	ck_assert_uint_eq(tk.n_cancel, 1);
	ck_assert_ptr_eq(tk.cancelled[0], &tk.cb_arg[0]);
	ck_assert_uint_eq(s->n_queued, 0);
	ck_assert_uint_eq(ro->inflight(f.inst), 2); /* a-1 until on_done */
	/* an empty rid names nothing */
	ck_assert_int_eq(
		call(&f, X(5), "POST", "/abort_request", "{\"rid\":\"\"}"), 0);
	assert_log(&f, "matched=0");
	ck_assert_uint_eq(tk.n_cancel, 1);
	ck_assert_int_eq(call(&f, X(5), "POST", "/abort_request",
			      "{\"abort_all\":true}"),
			 0);
	ck_assert_uint_eq(tk.n_cancel, 2); /* b-1; a-1 already */
	ck_assert_ptr_eq(tk.cancelled[1], &tk.cb_arg[1]);
	/* stopped past the drain: destroy() ends both without callbacks */
	fx_free(&f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("role_serve");
	TCase *t = tcase_create("start");

	tcase_add_test(t, descriptor);
	tcase_add_test(t, create_no_io);
	tcase_add_test(t, refuse_unwired);
	tcase_add_test(t, start_routes);
	suite_add_tcase(s, t);
	t = tcase_create("routes");
	tcase_add_test(t, small_routes);
	tcase_add_test(t, generate_refusals);
	tcase_add_test(t, generate_admission_abort);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r;
	int failed;

	base = event_base_new();
	if (!base)
		return 99;
	r = srunner_create(suite());
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	event_base_free(base);
	return failed ? 1 : 0;
}
