/* SPDX-License-Identifier: MIT */
/*
 * The gateway role: the buyer API (OpenAI and Anthropic) on
 * transport-http, API keys and prepaid money on the store, the miner pool
 * on transport-ws, routing, SSE relay (specs/gateway.md).  This file holds
 * the options, the wiring, the module table, the timers and the life of
 * the role: the top of the layers gateway_int.h draws.
 *
 * Shutdown (SIGTERM): new buyer requests get 503, every idle leg gets
 * `reconnect` at once and a busy one when its last request ends, and the
 * host waits (shutdown_timeout) for the requests and their settles.  Past
 * it (gw_abort()), what is still at a worker ends with 503: the miner is
 * cancelled, a streaming buyer gets an error event, the row is written
 * and what reached the buyer charged, the hold released.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include <engy/plugin.h>
#include <engy/role.h>

#include "config.h"
#include "chat_template.h"
#include "gateway_mod.h"

#define OFF(f) offsetof(struct gw_conf, f)

static const struct engy_opt gw_opts[] = {
	{ "workers", ENGY_OPT_INT, 0, OFF(workers), "1", "ENGY_GW_WORKERS", 1,
	  1024, "gateway processes behind the miners' URL (GET /gw/meta)" },
	{ "worker_index", ENGY_OPT_INT, 0, OFF(worker_index), "0",
	  "ENGY_GW_WORKER_INDEX", 0, 1023,
	  "which of them this process is: it admits legs on /gw/<index>" },
	{ "ws_path", ENGY_OPT_STR, 0, OFF(ws_path), "/gw", NULL, 0, 0,
	  "the miners' websocket path on transport-ws" },
	{ "onboarding", ENGY_OPT_BOOL, 0, OFF(onboarding), "false",
	  "ENGY_GW_ONBOARDING", 0, 0,
	  "new workers wait for onboarding (probes) before buyer traffic; "
	  "false: admitted workers serve at once" },
	{ "first_party", ENGY_OPT_STR_LIST, 0, OFF(first_party), NULL, NULL, 0,
	  0,
	  "worker names of the 1st-party cluster: always eligible once "
	  "admitted (the store's first_party miners are too)" },
	{ "min_inflight_total", ENGY_OPT_INT, 0, OFF(min_inflight_total), "8",
	  NULL, 1, 65536, "a hello's max_inflight_total must reach this" },
	{ "worker_max_inflight", ENGY_OPT_INT, 0, OFF(worker_max_inflight),
	  "256", NULL, 1, 1 << 20,
	  "the most requests one worker is given at once (and its routing "
	  "weight), whatever its hello claims" },
	{ "hello_max_bytes", ENGY_OPT_INT, 0, OFF(hello_max_bytes), "65536",
	  NULL, 1024, 1 << 26,
	  "the largest message a leg may send before it is admitted" },
	{ "max_unauthenticated", ENGY_OPT_INT, 0, OFF(max_unauthenticated),
	  "256", NULL, 1, 1 << 20,
	  "legs open at once without an admitted hello; more are refused "
	  "(1008)" },
	{ "hello_timeout_s", ENGY_OPT_FLOAT, 0, OFF(hello_timeout_s), "10",
	  NULL, 0, 0, "a leg without a hello this long is closed" },
	{ "stale_s", ENGY_OPT_FLOAT, 0, OFF(stale_s), "90", NULL, 0, 0,
	  "a leg silent this long (no heartbeat, no frame) is dropped" },
	{ "ping_s", ENGY_OPT_FLOAT, 0, OFF(ping_s), "30", NULL, 0, 0,
	  "a leg silent this long gets a ping (it answers with a heartbeat)" },
	{ "first_token_timeout_s", ENGY_OPT_FLOAT, 0,
	  OFF(first_token_timeout_s), "120", "ENGY_GW_FIRST_TOKEN_TIMEOUT_S", 0,
	  0, "no chunk or response this long after serve: 504" },
	{ "keepalive_s", ENGY_OPT_FLOAT, 0, OFF(keepalive_s), "10", NULL, 0, 0,
	  "SSE keep-alive period while a stream waits for its first token" },
	{ "max_attempts", ENGY_OPT_INT, 0, OFF(max_attempts), "2", NULL, 1,
	  GW_MAX_ATTEMPTS, "workers a request may try before its first byte" },
	{ "max_body_bytes", ENGY_OPT_INT, 0, OFF(max_body_bytes), "8388608",
	  NULL, 1024, (int64_t)1 << 32,
	  "largest request body (413 above; keep transport-http's max_body "
	  "higher)" },
	{ "max_messages", ENGY_OPT_INT, 0, OFF(max_messages), "4096", NULL, 0,
	  1 << 20, "messages in one request (0: no limit)" },
	{ "max_tools", ENGY_OPT_INT, 0, OFF(max_tools), "256", NULL, 0, 1 << 20,
	  "tools in one request (0: no limit)" },
	{ "default_max_tokens", ENGY_OPT_INT, 0, OFF(default_max_tokens),
	  "4096", NULL, 1, 1 << 30,
	  "output cap of an OpenAI request that names none (at most the "
	  "model's max_output_tokens)" },
	{ "key_max_inflight", ENGY_OPT_INT, 0, OFF(key_max_inflight), "64",
	  NULL, 0, 1 << 20,
	  "open requests per API key (429 above; 0: no "
	  "limit)" },
	{ "key_cache_s", ENGY_OPT_FLOAT, 0, OFF(key_cache_s), "10", NULL, 0, 0,
	  "API key lookups are cached this long (a revocation takes effect "
	  "within it)" },
	{ "model_cache_s", ENGY_OPT_FLOAT, 0, OFF(model_cache_s), "10", NULL, 0,
	  0, "model specs and price cards are cached this long" },
	{ "miner_cache_s", ENGY_OPT_FLOAT, 0, OFF(miner_cache_s), "10", NULL, 0,
	  0, "a disabled miner's key is refused without the store this long" },
	{ "affinity_chars", ENGY_OPT_INT, 0, OFF(affinity_chars), "512", NULL,
	  1, 1 << 20,
	  "leading bytes of the rendered prompt hashed for "
	  "prefix affinity" },
	{ "affinity_min_chars", ENGY_OPT_INT, 0, OFF(affinity_min_chars), "0",
	  NULL, 0, 1 << 20, "shorter prompts are routed without affinity" },
	{ "affinity_slack", ENGY_OPT_FLOAT, 0, OFF(affinity_slack), "0.5", NULL,
	  0, 0,
	  "the affine worker is skipped when its load (inflight / "
	  "capacity) exceeds the least loaded one's by more" },
	{ "tokenizers", ENGY_OPT_STR_LIST, 0, OFF(tokenizers), NULL, NULL, 0, 0,
	  "MODEL=DIR: the checkpoint directory (tokenizer.json, chat "
	  "template) for exact prompt counts; without one a prompt counts "
	  "one token per byte of its rendered text" },
	{ "chat_template", ENGY_OPT_STR, 0, OFF(chat_template), "qwen3.6", NULL,
	  0, 0,
	  "template rendered for models without a tokenizer "
	  "directory (qwen3.6 or qwen3)" },
	{ "reserve_margin_s", ENGY_OPT_FLOAT, 0, OFF(reserve_margin_s), "300",
	  NULL, 0, 0, "a reservation lapses this long after max_request_s" },
	{ "lease_micro", ENGY_OPT_INT, 0, OFF(lease_micro), "0", NULL, 0,
	  1000000000,
	  "a lease: one reservation of at least this many micro-USD per API "
	  "key that the key's requests hold from in memory, without a store "
	  "trip each (0: a reservation per request)" },
	{ "check_inline_bytes", ENGY_OPT_INT, 0, OFF(check_inline_bytes),
	  "4096", NULL, 0, 1 << 20,
	  "a request of a cached API key with a body up to this size is "
	  "parsed and its prompt counted on the loop thread, without a trip "
	  "to the worker pool (0: always on the pool)" },
	{ "lease_s", ENGY_OPT_FLOAT, 0, OFF(lease_s), "60", NULL, 0, 0,
	  "a lease takes new holds this long, then closes once they have "
	  "settled" },
	{ "settle_window_ms", ENGY_OPT_INT, 0, OFF(settle_window_ms), "5", NULL,
	  0, 60000,
	  "a settlement waits up to this long for others to commit with, "
	  "while other requests are open (0: each batch as soon as the last "
	  "one committed)" },
	{ "cancel_bytes_per_token", ENGY_OPT_INT, 0,
	  OFF(cancel_bytes_per_token), "4", NULL, 1, 64,
	  "a cancelled stream without a tokenizer pays one token per this "
	  "many bytes it received" },
	{ "cancel_hold_s", ENGY_OPT_FLOAT, 0, OFF(cancel_hold_s), "10", NULL, 0,
	  0,
	  "a cancelled request keeps its slot on the worker until the miner "
	  "says `cancelled`; from a miner that never did, this long" },
	{ "max_bytes_per_token", ENGY_OPT_INT, 0, OFF(max_bytes_per_token),
	  "128", NULL, 1, 1 << 20,
	  "an answer longer than max_tokens times this (+1 KiB) is cut and "
	  "counted against its worker" },
	{ "worker_start_inflight", ENGY_OPT_INT, 0, OFF(worker_start_inflight),
	  "4", NULL, 1, 1 << 20,
	  "a new worker's routing weight; it grows by serving at full "
	  "weight in time, up to worker_max_inflight" },
	GW_MOD_OPTS,
	ENGY_OPT_END
};

/*
 * Modules started after the core, in order: onboarding and probes, the
 * circuit breaker, the proof tee, the bench hooks each append their
 * init here (see gateway_int.h).
 */
static int (*const gw_modules[])(struct gw *g) = {
	gw_onboard_init, gw_breaker_init, gw_tee_init, gw_admin_init, NULL,
};

static int bad_conf(const struct gw *g, const char *opt, const char *why)
{
	GW_LOG(g, ENGY_LOG_ERR, "event=config_invalid option=%s reason=\"%s\"",
	       opt, why);
	return -EINVAL;
}

static int check_conf(struct gw *g)
{
	const struct gw_conf *c = g->c;

	if (c->worker_index >= c->workers)
		return bad_conf(g, "worker_index", "must be below workers");
	if (!c->ws_path || c->ws_path[0] != '/' || strlen(c->ws_path) > 64)
		return bad_conf(g, "ws_path", "a path such as /gw");
	if (!(c->stale_s > 0) || !(c->ping_s > 0) || !(c->hello_timeout_s > 0))
		return bad_conf(g, "stale_s",
				"stale_s, ping_s and hello_timeout_s "
				"must be > 0");
	if (!(c->first_token_timeout_s > 0) || !(c->keepalive_s > 0))
		return bad_conf(
			g, "first_token_timeout_s",
			"first_token_timeout_s and keepalive_s must be > 0");
	if (c->affinity_slack < 0 || c->key_cache_s < 0 ||
	    c->model_cache_s < 0 || c->miner_cache_s < 0 ||
	    c->reserve_margin_s < 0 || !(c->lease_s > 0))
		return bad_conf(g, "affinity_slack",
				"cache times, slack and "
				"margin must be >= 0, lease_s > 0");
	g->variant = engy_chat_variant_parse(c->chat_template);
	if (g->variant < 0)
		return bad_conf(g, "chat_template", "qwen3.6 or qwen3");
	return 0;
}

static bool http_ok(const struct engy_transport_ops *t)
{
	return t && t->proto && strcmp(t->proto, "http") == 0 &&
	       t->http_route && t->http_reply && t->http_stream_begin &&
	       t->http_stream_write && t->http_stream_end;
}

static bool ws_ok(const struct engy_transport_ops *t)
{
	return t && t->proto && strcmp(t->proto, "ws") == 0 && t->ws_listen &&
	       t->ws_send && t->ws_close && t->ws_set_user && t->ws_user;
}

static int wire(struct gw *g)
{
	const struct engy_host *h = g->h;
	struct engy_peer_info pi = { .size = sizeof(pi) };
	const void *st_ops = NULL;
	void *st_inst = NULL;
	size_t i;

	for (i = 0; h->peer_at(h, i, &pi) == 0; i++) {
		if (pi.kind != ENGY_KIND_TRANSPORT)
			continue;
		if (!g->t && http_ok(pi.ops)) {
			g->t = pi.ops;
			g->ti = pi.inst;
		} else if (!g->ws && ws_ok(pi.ops)) {
			g->ws = pi.ops;
			g->wsi = pi.inst;
		}
	}
	if (h->peer(h, ENGY_KIND_STORE, NULL, &st_ops, &st_inst) < 0)
		st_ops = NULL;
	if (!g->t || !g->ws || !st_ops) {
		GW_LOG(g, ENGY_LOG_ERR, "event=gateway_unwired reason=\"%s\"",
		       !g->t ? "no transport with proto http (transport-http)"
		       : !g->ws ? "no transport with proto ws (transport-ws)"
				: "no store");
		return -EINVAL;
	}
	g->st = st_ops;
	g->sti = st_inst;
	return 0;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct gw *g = arg;

	gw_pool_tick(g);
	gw_mset(g, g->m_inflight, g->n_reqs);
}

static void on_release(evutil_socket_t fd, short what, void *arg)
{
	gw_store_release_expired(arg);
}

static void metrics_init(struct gw *g)
{
	static const double ttft[] = { 0.05, 0.1, 0.25, 0.5, 1,
				       2.5,  5,	  10,	30,  60 };
	static const double over[] = { 0.0001, 0.00025, 0.0005, 0.001,
				       0.0025, 0.005,	0.01,	0.05 };
	const struct engy_host *r = g->h;

	r->metric(r, ENGY_METRIC_GAUGE, "engy_gw_workers",
		  "miner legs admitted", NULL, NULL, 0, &g->m_workers);
	r->metric(r, ENGY_METRIC_GAUGE, "engy_gw_inflight",
		  "buyer and internal requests open", NULL, NULL, 0,
		  &g->m_inflight);
	r->metric(r, ENGY_METRIC_HISTOGRAM, "engy_gw_ttft_seconds",
		  "request arrival to the first token", NULL, ttft,
		  sizeof(ttft) / sizeof(ttft[0]), &g->m_ttft);
	r->metric(r, ENGY_METRIC_HISTOGRAM, "engy_gw_overhead_seconds",
		  "request arrival to the serve frame sent (checks, "
		  "reserve, route)",
		  NULL, over, sizeof(over) / sizeof(over[0]), &g->m_overhead);
	r->metric(r, ENGY_METRIC_COUNTER, "engy_gw_retries_total",
		  "attempts moved to another worker", NULL, NULL, 0,
		  &g->m_attempts);
}

static int gw_create(const struct engy_host *h, const void *conf, void **inst)
{
	struct gw *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->h = h;
	g->c = conf;
	*inst = g;
	return 0;
}

static int gw_start(void *inst)
{
	struct timeval one = { 1, 0 }, minute = { 60, 0 };
	struct gw *g = inst;
	struct event_base *base = g->h->evbase(g->h);
	size_t i;
	int rc;

	rc = check_conf(g);
	if (rc == 0)
		rc = wire(g);
	if (rc)
		return rc;
	metrics_init(g);
	gw_req_init(g);
	gw_relay_init(g);
	rc = gw_store_init(g);
	if (rc == 0)
		rc = gw_pool_init(g);
	if (rc == 0)
		rc = gw_http_init(g);
	for (i = 0; rc == 0 && gw_modules[i]; i++)
		rc = gw_modules[i](g);
	if (rc)
		return rc;
	g->tick = event_new(base, -1, EV_PERSIST, on_tick, g);
	g->release_ev = event_new(base, -1, EV_PERSIST, on_release, g);
	if (!g->tick || !g->release_ev || event_add(g->tick, &one) < 0 ||
	    event_add(g->release_ev, &minute) < 0)
		return -ENOMEM;
	gw_store_release_expired(g);
	GW_LOG(g, ENGY_LOG_INFO,
	       "event=gateway_start workers=%lld worker_index=%lld path=%s "
	       "onboarding=%s first_party=%zu tokenizers=%zu",
	       (long long)g->c->workers, (long long)g->c->worker_index,
	       g->c->ws_path, g->c->onboarding ? "on" : "off",
	       g->c->first_party.n, g->n_toks);
	return 0;
}

static void gw_stop(void *inst)
{
	struct gw *g = inst;
	size_t i;

	if (!g)
		return;
	g->stopping = true;
	for (i = 0; i < g->n_obs; i++)
		if (g->obs[i].stop)
			g->obs[i].stop(g->obs[i].arg);
	GW_LOG(g, ENGY_LOG_INFO,
	       "event=gateway_stopping inflight=%u workers=%u", g->n_reqs,
	       g->n_workers);
	gw_pool_drain(g);
	gw_lease_close_idle(g);
}

static void gw_abort(void *inst)
{
	struct gw *g = inst;

	if (g)
		gw_req_abort_all(g);
}

static unsigned gw_inflight(void *inst)
{
	const struct gw *g = inst;

	/* Open leases count: they close (a store write) before it exits. */
	return g ? g->n_reqs + g->n_leases : 0;
}

static void gw_destroy(void *inst)
{
	struct gw *g = inst;
	size_t i;

	if (!g)
		return;
	for (i = g->n_obs; i-- > 0;)
		if (g->obs[i].destroy)
			g->obs[i].destroy(g->obs[i].arg);
	/* Past the drain: what is left goes without callbacks or frames. */
	while (g->reqs)
		gw_req_free(g->reqs);
	gw_req_spare_free(g);
	gw_pool_free(g);
	gw_lease_free_all(g);
	gw_store_free(g);
	if (g->tick)
		event_free(g->tick);
	if (g->release_ev)
		event_free(g->release_ev);
	if (g->settle_ev)
		event_free(g->settle_ev);
	free(g);
}

static const struct engy_role_need gw_needs[] = {
	{ ENGY_KIND_TRANSPORT, 2, 0,
	  "the buyer HTTP API (transport-http) and the miner websocket listener (transport-ws)" },
	{ ENGY_KIND_STORE, 1, 1,
	  "accounts, balances, the metadata request log" },
	{ ENGY_KIND_PROOF, 0, 0, "an optional probe verifier" },
	{ ENGY_KIND_BACKEND, 0, 0, "an optional probe recompute engine" },
	{ 0, 0, 0, NULL },
};

static const struct engy_role_ops gw_role_ops = {
	.size = sizeof(struct engy_role_ops),
	.needs = gw_needs,
	.inflight = gw_inflight,
	.abort = gw_abort,
};

ENGY_PLUGIN(.kind = ENGY_KIND_ROLE, .name = "role-gateway",
	    .version = PACKAGE_VERSION,
	    .description =
		    "buyer API, auth, prepaid billing, SSE, miner pool, routing, proof tee",
	    .opts = gw_opts, .conf_size = sizeof(struct gw_conf),
	    .create = gw_create, .start = gw_start, .stop = gw_stop,
	    .destroy = gw_destroy, .ops = &gw_role_ops);
