/* SPDX-License-Identifier: MIT */
/*
 * The miner role on the fake host, its files linked into the test: what
 * create() and start() refuse before any leg dials (the host's version,
 * every option check_conf() reads, the peers wire() needs, the
 * one-miner-per-node lock), that create() does no I/O and that destroy()
 * after create() alone, or after a start() that failed at any step,
 * frees everything, and what start() does once wired (the lock file with
 * our pid, the backend asked for its model, a failure there asking the
 * host to exit 1).  No leg dials: the fake backend never names a model.
 *
 * Oracle: behaviour from specs/miner.md (what is refused, what is freed);
 * no computed values, no outside peer.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include <engy/plugin.h>
#include <engy/role.h>

#include <cjson/cJSON.h>

#include "fake_host.h"
#include "miner_int.h"

extern const struct engy_plugin engy_plugin;

static struct event_base *base;
static char state[64];

static struct event_base *test_evbase(const struct engy_host *h)
{
	return base;
}

static const char *test_state_dir(const struct engy_host *h)
{
	return state;
}

/* ---- fake peers --------------------------------------------------------- */

static int info_rc = -EIO;
static unsigned info_calls;

static int be_info(void *inst, struct engy_model_info *out)
{
	info_calls++;
	return info_rc;
}

static int ws_dial(void *inst, const char *url, const char *const *headers,
		   const struct engy_ws_handler *h, void *arg,
		   struct engy_ws_leg **out)
{
	ck_abort_msg("a leg dialled");
	return -EIO;
}

static void ws_leg_close(void *inst, struct engy_ws_leg *leg)
{
}

/* The frames the miner sent, the last one kept. */
static unsigned n_sent;
static struct engy_ws_conn *sent_conn;
static char sent[2048];

static int ws_send(void *inst, struct engy_ws_conn *c, int type,
		   const void *data, size_t len)
{
	ck_assert_int_eq(type, ENGY_WS_TEXT);
	ck_assert_uint_lt(len, sizeof(sent));
	memcpy(sent, data, len);
	sent[len] = '\0';
	sent_conn = c;
	n_sent++;
	return 0;
}

static int ws_close(void *inst, struct engy_ws_conn *c, int code,
		    const char *reason)
{
	return 0;
}

static int prove(void *inst, const struct engy_rows *rows, char **json)
{
	return -EIO;
}

static struct engy_transport_ops t_ws, t_http;
static struct engy_backend_ops be;
static struct engy_proof_ops pr, pr_noprove;

enum { P_WS, P_BE, P_PROOF, P_HTTP, P_BE2, P_NOPROVE };
static struct engy_peer_info peers[6];

static void peers_init(void)
{
	memset(&t_ws, 0, sizeof(t_ws));
	t_ws.size = sizeof(t_ws);
	t_ws.proto = "ws";
	t_ws.ws_dial = ws_dial;
	t_ws.ws_send = ws_send;
	t_ws.ws_close = ws_close;
	t_ws.ws_leg_close = ws_leg_close;
	t_http = t_ws;
	t_http.proto = "http";
	memset(&be, 0, sizeof(be));
	be.size = sizeof(be);
	be.info = be_info;
	memset(&pr, 0, sizeof(pr));
	pr.size = sizeof(pr);
	pr.scheme = "toploc";
	pr.prove = prove;
	pr_noprove = pr;
	pr_noprove.prove = NULL;
#define PEER(i, k, n, o)                                                       \
	peers[i] = (struct engy_peer_info){                                    \
		sizeof(peers[i]), k, n, n, "9.9", o, NULL                      \
	}
	PEER(P_WS, ENGY_KIND_TRANSPORT, "transport-ws", &t_ws);
	PEER(P_BE, ENGY_KIND_BACKEND, "backend-sglang", &be);
	PEER(P_PROOF, ENGY_KIND_PROOF, "proof-toploc", &pr);
	PEER(P_HTTP, ENGY_KIND_TRANSPORT, "transport-http", &t_http);
	PEER(P_BE2, ENGY_KIND_BACKEND, "backend-two", &be);
	PEER(P_NOPROVE, ENGY_KIND_PROOF, "proof-verifier", &pr_noprove);
#undef PEER
	info_rc = -EIO;
	info_calls = 0;
	n_sent = 0;
	sent_conn = NULL;
	sent[0] = '\0';
}

/* ---- fixture ------------------------------------------------------------ */

struct fx {
	struct engy_host *h;
	struct miner_conf c;
	void *inst;
	char lock[96];
};

/* The options' defaults (miner.c's table), a valid gw and key. */
static void fx_init(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(state, sizeof(state), "/tmp/engy-miner.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(state));
	f->h = fake_host_new("miner");
	ck_assert_ptr_nonnull(f->h);
	f->h->evbase = test_evbase;
	f->h->state_dir = test_state_dir;
	peers_init();
	f->c.gw = "wss://gw.example/gw";
	f->c.miner_key = "mk_test";
	f->c.max_inflight = 64;
	f->c.max_input_tokens = 229376;
	f->c.max_output_tokens = 32768;
	f->c.max_request_s = 1800;
	f->c.max_tokens = 512;
	f->c.stream_flush_s = 0.05;
	f->c.heartbeat_s = 30;
	f->c.chat_template = "auto";
	f->c.parallelism = "tp";
	f->c.meta_timeout_s = 10;
	snprintf(f->lock, sizeof(f->lock), "%s/miner.lock", state);
}

static int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void fx_free(struct fx *f)
{
	engy_plugin.destroy(f->inst);
	f->inst = NULL;
	unlink(f->lock);
	ck_assert_int_eq(rmdir(state), 0);
	fake_host_free(f->h);
}

/* create() then start() with all three peers wired. */
static int fx_start(struct fx *f, size_t n_peers)
{
	fake_host_set_peers(f->h, peers, n_peers);
	ck_assert_int_eq(engy_plugin.create(f->h, &f->c, &f->inst), 0);
	ck_assert_ptr_nonnull(f->inst);
	return engy_plugin.start(f->inst);
}

static void assert_log(struct fx *f, const char *s)
{
	ck_assert_msg(strstr(fake_host_log(f->h), s), "no \"%s\" in:\n%s", s,
		      fake_host_log(f->h));
}

/* ---- create ------------------------------------------------------------- */

START_TEST(descriptor)
{
	const struct engy_role_ops *ro = engy_plugin.ops;

	ck_assert_uint_eq(engy_plugin.kind, ENGY_KIND_ROLE);
	ck_assert_str_eq(engy_plugin.name, "role-miner");
	ck_assert_uint_eq(engy_plugin.conf_size, sizeof(struct miner_conf));
	/* transport, backend, 1..MINER_MAX_PROOFS proofs */
	ck_assert_uint_eq(ro->needs[0].kind, ENGY_KIND_TRANSPORT);
	ck_assert_uint_eq(ro->needs[1].kind, ENGY_KIND_BACKEND);
	ck_assert_uint_eq(ro->needs[2].kind, ENGY_KIND_PROOF);
	ck_assert_uint_eq(ro->needs[2].max, MINER_MAX_PROOFS);
	ck_assert_uint_eq(ro->needs[3].kind, 0);
}
END_TEST

START_TEST(create_old_host)
{
	struct fx f;

	fx_init(&f);
	f.inst = (void *)&f;
	f.h->size = offsetof(struct engy_host, shutdown); /* a 1.0 host */
	ck_assert_int_eq(engy_plugin.create(f.h, &f.c, &f.inst), -ENOTSUP);
	ck_assert_ptr_null(f.inst);
	assert_log(&f, "event=host_too_old");
	f.h->size = sizeof(*f.h);
	f.h->shutdown = NULL;
	ck_assert_int_eq(engy_plugin.create(f.h, &f.c, &f.inst), -ENOTSUP);
	ck_assert_ptr_null(f.inst);
	fx_free(&f);
}
END_TEST

/* create() touches nothing: no peer asked, no lock file, no backend call;
 * destroy() right after frees it all (valgrind/ASan see the rest). */
START_TEST(create_no_io)
{
	struct fx f;
	struct miner *m;

	fx_init(&f);
	f.c.lock_file = NULL; /* STATE_DIR/miner.lock */
	fake_host_set_peers(f.h, peers, 3);
	ck_assert_int_eq(engy_plugin.create(f.h, &f.c, &f.inst), 0);
	m = f.inst;
	ck_assert_ptr_eq(m->h, f.h);
	ck_assert_int_eq(m->lock_fd, -1);
	ck_assert_ptr_null(m->t);
	ck_assert_uint_eq(m->n_proofs, 0);
	ck_assert_uint_eq(info_calls, 0);
	ck_assert_int_eq(dir_entries(state), 0);
	ck_assert_str_eq(fake_host_log(f.h), "");
	engy_plugin.destroy(f.inst);
	f.inst = NULL;
	ck_assert_int_eq(dir_entries(state), 0);
	ck_assert_int_eq(fake_host_shutdown_code(f.h), -1);
	fx_free(&f);
}
END_TEST

/* ---- start: the options ------------------------------------------------- */

static void refused_option(void (*set)(struct miner_conf *), const char *opt)
{
	struct fx f;
	char want[96];

	fx_init(&f);
	f.c.lock_file = f.lock;
	set(&f.c);
	ck_assert_int_eq(fx_start(&f, 3), -EINVAL);
	snprintf(want, sizeof(want), "event=config_invalid option=%s ", opt);
	assert_log(&f, want);
	/* refused before wiring: nothing locked, no backend asked */
	ck_assert_int_eq(dir_entries(state), 0);
	ck_assert_uint_eq(info_calls, 0);
	fx_free(&f);
}

static void gw_http(struct miner_conf *c)
{
	c->gw = "http://gw.example/gw";
}
static void gw_unset(struct miner_conf *c)
{
	c->gw = NULL;
}
static void key_unset(struct miner_conf *c)
{
	c->miner_key = NULL;
}
static void key_empty(struct miner_conf *c)
{
	c->miner_key = "";
}
static void req_zero(struct miner_conf *c)
{
	c->max_request_s = 0;
}
static void req_week(struct miner_conf *c)
{
	c->max_request_s = 7 * 86400 + 1;
}
static void flush_neg(struct miner_conf *c)
{
	c->stream_flush_s = -0.01;
}
static void flush_11(struct miner_conf *c)
{
	c->stream_flush_s = 10.5;
}
static void meta_zero(struct miner_conf *c)
{
	c->meta_timeout_s = 0;
}
static void tmpl_bad(struct miner_conf *c)
{
	c->chat_template = "llama";
}
static void root_short(struct miner_conf *c)
{
	c->model_root = "abcd";
}
static void root_upper(struct miner_conf *c)
{
	c->model_root = "ABCDEF0123456789abcdef0123456789"
			"abcdef0123456789abcdef0123456789";
}
static void inst_space(struct miner_conf *c)
{
	c->instance_id = "a b";
}
static void inst_long(struct miner_conf *c)
{
	static char id[129];

	memset(id, 'a', 128);
	c->instance_id = id;
}

START_TEST(refuse_options)
{
	refused_option(gw_http, "gw");
	refused_option(gw_unset, "gw");
	refused_option(key_unset, "miner_key");
	refused_option(key_empty, "miner_key");
	refused_option(req_zero, "max_request_s");
	refused_option(req_week, "max_request_s");
	refused_option(flush_neg, "stream_flush_s");
	refused_option(flush_11, "stream_flush_s");
	refused_option(meta_zero, "meta_timeout_s");
	refused_option(tmpl_bad, "chat_template");
	refused_option(root_short, "model_root");
	refused_option(root_upper, "model_root");
	refused_option(inst_space, "instance_id");
	refused_option(inst_long, "instance_id");
}
END_TEST

/* The boundaries check_conf() lets through, and the key never logged. */
START_TEST(accept_boundaries)
{
	struct fx f;

	fx_init(&f);
	f.c.lock_file = f.lock;
	f.c.max_request_s = 7 * 86400;
	f.c.stream_flush_s = 0;
	f.c.chat_template = "qwen3";
	f.c.model_root = "abcdef0123456789abcdef0123456789"
			 "abcdef0123456789abcdef0123456789";
	f.c.instance_id = "ins-A.b_c:9";
	f.c.max_inflight = 7;
	f.c.miner_key = "mk_secret_never_logged";
	ck_assert_int_eq(fx_start(&f, 3), 0);
	assert_log(&f, "event=config_warning option=max_inflight value=7 ");
	ck_assert_ptr_null(strstr(fake_host_log(f.h), "mk_secret"));
	fx_free(&f);
}
END_TEST

/* ---- start: the peers --------------------------------------------------- */

static void unwired(const size_t *idx, size_t n, const char *why)
{
	static struct engy_peer_info sel[6];
	struct fx f;
	char want[160];
	size_t i;

	fx_init(&f);
	f.c.lock_file = f.lock;
	for (i = 0; i < n; i++)
		sel[i] = peers[idx[i]];
	fake_host_set_peers(f.h, sel, n);
	ck_assert_int_eq(engy_plugin.create(f.h, &f.c, &f.inst), 0);
	ck_assert_int_eq(engy_plugin.start(f.inst), -EINVAL);
	snprintf(want, sizeof(want), "event=miner_unwired reason=\"%s\"", why);
	assert_log(&f, want);
	ck_assert_int_eq(dir_entries(state), 0);
	ck_assert_uint_eq(info_calls, 0);
	/* destroy() after a failed start() frees what wire() found */
	fx_free(&f);
}

START_TEST(refuse_missing_peers)
{
	static const size_t none[1] = { 0 };
	static const size_t http_be_pr[] = { P_HTTP, P_BE, P_PROOF };
	static const size_t ws_pr[] = { P_WS, P_PROOF };
	static const size_t ws_be[] = { P_WS, P_BE };
	static const size_t ws_be_noprove[] = { P_WS, P_BE, P_NOPROVE };

	unwired(none, 0, "no transport with proto ws (transport-ws)");
	unwired(http_be_pr, 3, "no transport with proto ws (transport-ws)");
	unwired(ws_pr, 2, "no backend");
	unwired(ws_be, 2, "no proof plugin with prove()");
	unwired(ws_be_noprove, 3, "no proof plugin with prove()");
}
END_TEST

/* A ws transport lacking one of its four ops is no transport. */
START_TEST(refuse_incomplete_ws)
{
	struct fx f;

	fx_init(&f);
	f.c.lock_file = f.lock;
	t_ws.ws_leg_close = NULL;
	ck_assert_int_eq(fx_start(&f, 3), -EINVAL);
	assert_log(&f, "reason=\"no transport with proto ws");
	fx_free(&f);
}
END_TEST

/* Wired: a second backend is named unused, the proof's version is kept,
 * the lock holds our pid, the backend is asked for its model and its
 * failure asks the host to exit 1. */
START_TEST(start_wired)
{
	struct fx f;
	struct miner *m;
	char buf[32], want[48];
	FILE *fp;

	fx_init(&f);
	f.c.lock_file = NULL;
	ck_assert_int_eq(fx_start(&f, 6), 0);
	m = f.inst;
	ck_assert_ptr_eq(m->t, &t_ws);
	ck_assert_ptr_eq(m->b, &be);
	ck_assert_uint_eq(m->n_proofs, 1); /* not the one without prove */
	ck_assert_str_eq(m->ver_proof, "proof-toploc 9.9");
	ck_assert_str_eq(m->ver_backend, "backend-sglang 9.9");
	ck_assert_str_eq(m->versions[0], "engy");
	ck_assert_ptr_null(m->versions[6]);
	assert_log(&f, "event=backend_unused instance=backend-two ");
	assert_log(&f, "proofs=1");
	ck_assert_uint_eq(strlen(m->worker_id), 32);
	ck_assert_int_ge(m->lock_fd, 0);
	fp = fopen(f.lock, "r");
	ck_assert_ptr_nonnull(fp);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), fp));
	fclose(fp);
	snprintf(want, sizeof(want), "%ld\n", (long)getpid());
	ck_assert_str_eq(buf, want);
	ck_assert_uint_eq(info_calls, 1);
	assert_log(&f, "event=backend_info_failed error=\"");
	ck_assert_int_eq(fake_host_shutdown_code(f.h), 1);
	engy_plugin.stop(f.inst);
	assert_log(&f, "event=miner_stopping inflight=0 legs_open=0");
	ck_assert_uint_eq(((const struct engy_role_ops *)engy_plugin.ops)
				  ->inflight(f.inst),
			  0);
	fx_free(&f);
}
END_TEST

/* One miner per node: a second start on the same lock is -EBUSY and names
 * the holder; the lock is free again once the first is destroyed. */
START_TEST(lock_held)
{
	struct fx f;
	struct engy_host *h2;
	void *i2 = NULL;
	char want[256];

	fx_init(&f);
	f.c.lock_file = f.lock;
	ck_assert_int_eq(fx_start(&f, 3), 0);
	h2 = fake_host_new("miner");
	h2->evbase = test_evbase;
	h2->state_dir = test_state_dir;
	fake_host_set_peers(h2, peers, 3);
	ck_assert_int_eq(engy_plugin.create(h2, &f.c, &i2), 0);
	ck_assert_int_eq(engy_plugin.start(i2), -EBUSY);
	snprintf(want, sizeof(want), "event=lock_held path=%s holder_pid=%ld ",
		 f.lock, (long)getpid());
	ck_assert_msg(strstr(fake_host_log(h2), want), "%s", fake_host_log(h2));
	ck_assert_uint_eq(info_calls, 1); /* the first miner's only */
	engy_plugin.destroy(i2);
	engy_plugin.destroy(f.inst);
	f.inst = NULL;
	ck_assert_int_eq(engy_plugin.create(h2, &f.c, &i2), 0);
	ck_assert_int_eq(engy_plugin.start(i2), 0);
	engy_plugin.destroy(i2);
	fake_host_free(h2);
	fx_free(&f);
}
END_TEST

START_TEST(lock_unopenable)
{
	struct fx f;

	fx_init(&f);
	snprintf(f.lock, sizeof(f.lock), "%s/no/such/dir/miner.lock", state);
	f.c.lock_file = f.lock;
	ck_assert_int_eq(fx_start(&f, 3), -ENOENT);
	assert_log(&f, "event=lock_failed path=");
	ck_assert_uint_eq(info_calls, 0);
	fx_free(&f);
}
END_TEST

/* A backend still loading (-EAGAIN) is asked again later: no exit. */
START_TEST(backend_loading)
{
	struct fx f;
	struct miner *m;

	fx_init(&f);
	f.c.lock_file = f.lock;
	info_rc = -EAGAIN;
	ck_assert_int_eq(fx_start(&f, 3), 0);
	m = f.inst;
	ck_assert_uint_eq(info_calls, 1);
	ck_assert_ptr_nonnull(m->info_ev);
	assert_log(&f, "event=waiting_for_backend");
	ck_assert_int_eq(fake_host_shutdown_code(f.h), -1);
	fx_free(&f);
}
END_TEST

/* ---- routed requests refused before any work --------------------------- */

static char conn_mem;
#define CONN ((struct engy_ws_conn *)&conn_mem)

/* One gateway text frame to miner_serve() on leg 0. */
static void serve(struct miner *m, const char *text)
{
	struct mleg leg = { .m = m, .idx = 0, .conn = CONN };
	struct engy_gw_frame fr;
	char err[128];

	ck_assert_int_eq(
		engy_gw_frame_parse(text, strlen(text), &fr, err, sizeof(err)),
		0);
	ck_assert_int_eq(fr.type, ENGY_GW_SERVE);
	miner_serve(&leg, &fr);
	engy_gw_frame_free(&fr);
}

/* The one frame sent since the last call: an error response to @corr. */
static cJSON *sent_error(const char *corr, const char *error)
{
	cJSON *j = cJSON_Parse(sent), *it;

	ck_assert_uint_eq(n_sent, 1);
	ck_assert_ptr_eq(sent_conn, CONN);
	ck_assert_ptr_nonnull(j);
	it = cJSON_GetObjectItemCaseSensitive(j, "type");
	ck_assert_str_eq(it->valuestring, "response");
	it = cJSON_GetObjectItemCaseSensitive(j, "corr_id");
	ck_assert_str_eq(it->valuestring, corr);
	ck_assert(cJSON_IsNull(
		cJSON_GetObjectItemCaseSensitive(j, "commitment")));
	it = cJSON_GetObjectItemCaseSensitive(j, "error");
	ck_assert_msg(cJSON_IsString(it) && strstr(it->valuestring, error),
		      "%s", sent);
	n_sent = 0;
	return j;
}

static const char *request_id(cJSON *j)
{
	return cJSON_GetObjectItemCaseSensitive(j, "request_id")->valuestring;
}

#define MSGS "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"

/* Before the preparation the capacity is 0: every serve is refused with
 * an error response naming it, echoing the gateway's request id; past
 * capacity, a body that is not a chat request fails on its own; stopping
 * refuses everything; nothing stays in flight. */
START_TEST(serve_refusals)
{
	struct fx f;
	struct miner *m;
	char long_id[ENGY_GW_MAX_REQUEST_ID + 40], text[512];
	cJSON *j;

	fx_init(&f);
	f.c.lock_file = f.lock;
	info_rc = -EAGAIN;
	ck_assert_int_eq(fx_start(&f, 3), 0);
	m = f.inst;
	ck_assert_uint_eq(m->cap.max_inflight_total, 0);

	serve(m, "{\"type\":\"serve\",\"corr_id\":\"c1\",\"request\":"
		 "{\"engy_request_id\":\"rq-1\"," MSGS "}}");
	j = sent_error("c1", "the miner is at capacity (max_inflight_total 0)");
	ck_assert_str_eq(request_id(j), "rq-1");
	cJSON_Delete(j);
	assert_log(&f, "event=serve_refused leg=0 corr_id=c1 reason=\"the "
		       "miner is at capacity");

	/* a request id past the limit is not echoed: one of our own */
	memset(long_id, 'x', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	snprintf(text, sizeof(text),
		 "{\"type\":\"serve\",\"corr_id\":\"c2\",\"request\":"
		 "{\"engy_request_id\":\"%s\"," MSGS "}}",
		 long_id);
	serve(m, text);
	j = sent_error("c2", "at capacity");
	ck_assert_uint_eq(strlen(request_id(j)), 32);
	ck_assert_uint_eq(strspn(request_id(j), "0123456789abcdef"), 32);
	cJSON_Delete(j);

	/* the frame's own fault, whatever the capacity */
	m->cap.max_inflight_total = 8;
	serve(m, "{\"type\":\"serve\",\"corr_id\":\"c3\",\"request\":[1]}");
	cJSON_Delete(sent_error("c3", "serve: request is not a JSON object"));
	serve(m, "{\"type\":\"serve\",\"corr_id\":\"c4\",\"stream\":1,"
		 "\"request\":{" MSGS "}}");
	cJSON_Delete(sent_error("c4", "serve: stream is not a boolean"));

	/* admitted, then not a chat request: failed, counted, gone */
	serve(m, "{\"type\":\"serve\",\"corr_id\":\"c5\",\"request\":"
		 "{\"engy_request_id\":\"rq-5\",\"messages\":7}}");
	j = sent_error("c5", "invalid request: ");
	ck_assert_str_eq(request_id(j), "rq-5");
	cJSON_Delete(j);
	assert_log(&f, "event=request leg=0 corr_id=c5 rid=engy-");
	ck_assert_uint_eq(m->inflight, 0);
	ck_assert_ptr_null(m->reqs);

	engy_plugin.stop(f.inst);
	serve(m, "{\"type\":\"serve\",\"corr_id\":\"c6\",\"request\":"
		 "{" MSGS "}}");
	cJSON_Delete(sent_error("c6", "the miner is shutting down"));
	ck_assert_uint_eq(m->inflight, 0);
	fx_free(&f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("role_miner");
	TCase *t = tcase_create("create");

	tcase_add_test(t, descriptor);
	tcase_add_test(t, create_old_host);
	tcase_add_test(t, create_no_io);
	suite_add_tcase(s, t);
	t = tcase_create("start");
	tcase_add_test(t, refuse_options);
	tcase_add_test(t, accept_boundaries);
	tcase_add_test(t, refuse_missing_peers);
	tcase_add_test(t, refuse_incomplete_ws);
	tcase_add_test(t, start_wired);
	tcase_add_test(t, lock_held);
	tcase_add_test(t, lock_unopenable);
	tcase_add_test(t, backend_loading);
	suite_add_tcase(s, t);
	t = tcase_create("serve");
	tcase_add_test(t, serve_refusals);
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
