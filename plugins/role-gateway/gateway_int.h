/* SPDX-License-Identifier: MIT */
/*
 * The gateway role's shared state (specs/gateway.md).  Its files are
 * layers: a file calls only files below it, never one above it nor one
 * that calls it back (scripts/callgraph.sh checks plugins/role-gateway/
 * layers under make check).  What must go up goes through a function
 * pointer the upper layer installed: the observers (struct gw_observer),
 * the pool's frames (struct gw_pool_sink), an attempt's end (struct
 * gw_relay_sink), a store trip's continuation.
 *
 *   gateway.c           options, wiring, start/stop/drain, the timers,
 *                       the module table (gw_modules[])
 *   -- modules (gateway_mod.h): observers on the core --
 *   gateway_admin.c ... gateway_probe.c
 *   -- the core --
 *   gateway_http.c      the buyer endpoints: /v1/chat/completions,
 *                       /v1/messages(/count_tokens), /v1/models
 *   gateway_req.c       the request driver: check, reserve, dispatch,
 *                       retry, finish, settle; gw_submit()
 *   gateway_store.c     the store on the worker pool: the buyer checks
 *                       (parse, key, model, limits, prompt count), reserve,
 *                       settle with the metadata row, refusal rows, caches
 *   gateway_relay.c     one attempt on a worker: serve, chunk -> SSE,
 *                       response, timeouts, keep-alive, cancel
 *   gateway_route.c     picking a worker: eligibility, rendezvous-hash
 *                       prefix affinity, weighted round-robin by free
 *                       capacity, priority
 *   gateway_pool.c      the miner legs on transport-ws: /gw/meta, hello,
 *                       admit/deny, supersede, heartbeat, ping, stale,
 *                       reconnect on drain
 *   gateway_hello.c     a miner's hello checked against the store
 *   gateway_frames.c    parsing what miners send
 *   gateway_reply.c     what goes out to a buyer: JSON, SSE, errors
 *   gateway_bus.c       clocks, counters, the worker pool, the observers
 *
 * Everything here runs on the loop thread except the gw_job bodies
 * (gateway_store.c, gateway_hello.c), which touch only their job.
 *
 * Extending the role (onboarding/probes, circuit breaker, proof tee,
 * bench): add a file with an init function `int gw_X_init(struct gw *g)`
 * and append it to gw_modules[] in gateway.c.  From there a module
 *   - registers a struct gw_observer (gw_observe()) to hear of admitted
 *     and closed workers, their changes of state, every finished attempt
 *     (status, TTFT, TPOT, tokens: the breaker's input) and every
 *     successful response frame (commitment included: the tee's input);
 *   - moves workers between states with gw_worker_set_state() (NEW ->
 *     PROBING -> ACTIVE, ACTIVE -> PULLED ...); only gw_worker_eligible()
 *     workers get buyer traffic;
 *   - keeps per-worker state in w->ext[its slot] (gw_ext_slot());
 *   - sends its own requests (probes, bench) with gw_submit(), to one
 *     worker or routed, recorded with is_probe;
 *   - adds HTTP routes on g->t / g->ti (the buyer listener) or timers on
 *     g->h->evbase(g->h).
 */
#ifndef ENGY_ROLE_GATEWAY_INT_H
#define ENGY_ROLE_GATEWAY_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <cjson/cJSON.h>

#include <engy/host.h>
#include <engy/store.h>
#include <engy/transport.h>

#include "anth.h"
#include "gateway_mod_conf.h"
#include "oai.h"
#include "resp.h"
#include "stop.h"

struct event;
struct engy_metric;
struct engy_tokenizer;
struct gw;
struct gw_req;
struct gw_worker;

#define GW_HASH_BYTES	  32
#define GW_MAX_ATTEMPTS	  4    /* workers one request may try */
#define GW_REQ_SERIES	  48   /* requests_total series kept at hand */
#define GW_LEASE_BUCKETS  64   /* open leases by key id */
#define GW_KEY_LEASES	  4    /* open leases per API key, at most */
#define GW_KHASH_SLOTS	  1024 /* key text -> stored hash, direct-mapped */
#define GW_MAX_OBSERVERS  8
#define GW_EXT_SLOTS	  4 /* per-worker state of modules */
#define GW_MAX_TOKENIZERS 16

/* The role's options: the `gateway { }` section and its env twins. */
struct gw_conf {
	int64_t workers;	      /* gateway processes (GET /gw/meta) */
	int64_t worker_index;	      /* which of them this one is */
	const char *ws_path;	      /* "/gw" */
	bool onboarding;	      /* false: new workers serve at once */
	struct engy_strv first_party; /* worker names always eligible */
	int64_t min_inflight_total;   /* hello's max_inflight_total >= */
	int64_t worker_max_inflight;  /* a worker's share, at most */
	int64_t hello_max_bytes;      /* a message before admission */
	int64_t max_unauthenticated;  /* legs not yet admitted, at most */
	double hello_timeout_s;
	double stale_s; /* silence before a leg is dropped */
	double ping_s;	/* silence before a ping */
	double first_token_timeout_s;
	double keepalive_s;   /* SSE keep-alive while waiting */
	int64_t max_attempts; /* workers tried before the 1st byte */
	int64_t max_body_bytes;
	int64_t max_messages;
	int64_t max_tools;
	int64_t default_max_tokens;
	int64_t key_max_inflight; /* 429 above, per API key */
	double key_cache_s;
	double model_cache_s;
	double miner_cache_s;	     /* deny verdicts per miner key */
	int64_t affinity_chars;	     /* prompt prefix hashed */
	int64_t affinity_min_chars;  /* shorter prompts: no affinity */
	double affinity_slack;	     /* load above the least loaded */
	struct engy_strv tokenizers; /* "MODEL=DIR" */
	const char *chat_template;   /* qwen3.6 or qwen3 */
	double reserve_margin_s;
	int64_t lease_micro;		/* a key's lease, at least (0: off) */
	int64_t check_inline_bytes;	/* bodies checked on the loop */
	double lease_s;			/* a lease takes new holds this long */
	int64_t settle_window_ms;	/* a batch waits this long for more */
	int64_t cancel_bytes_per_token; /* cancelled stream, no tokenizer */
	double cancel_hold_s;		/* a cancelled slot, unconfirmed */
	int64_t max_bytes_per_token;	/* content bound from max_tokens */
	int64_t worker_start_inflight;	/* a new worker's earned share */
	struct gw_mod_conf mod;		/* onboarding, breaker, tee */
};

/* ---- the miner pool ------------------------------------------------- */

enum gw_wstate {
	GW_W_HELLO = 0, /* connected, waiting for hello */
	GW_W_CHECKING,	/* hello under validation (store) */
	GW_W_NEW,	/* admitted, not proven: onboarding's input */
	GW_W_PROBING,	/* onboarding at work: probes only */
	GW_W_ACTIVE,	/* serves buyers */
	GW_W_PULLED,	/* taken out (breaker, control plane): re-prove */
	GW_W_CLOSED,	/* the leg is gone */
};

/* A cancelled attempt whose slot the miner has not released yet. */
struct gw_hold {
	struct gw_hold *next;
	char corr_id[48];
	struct timespec t;
};

/* One leg: a miner's connection to this gateway worker. */
struct gw_worker {
	struct gw *g;
	struct gw_worker *next, **pprev;
	struct engy_ws_conn *conn; /* NULL once closing */
	uint64_t id;		   /* this process's number, for logs */
	enum gw_wstate state;
	bool first_party;    /* always eligible */
	bool reconnect_sent; /* draining: reconnect went out */
	bool in_job;	     /* a pool job holds it: free later */
	int32_t priority;    /* routing bias, 0 none */
	/* who */
	int64_t miner_id;
	uint8_t key_hash[GW_HASH_BYTES];
	char hotkey[64];
	char worker_name[128];
	char worker_id[64];
	char instance_id[64];
	char remote[64];
	char model[128];
	char model_root[129];
	char spec_root[65]; /* its accepted root's pinned Merkle root, or "" */
	/* capacity and limits: min(model spec, hello) */
	unsigned max_inflight; /* this leg's share */
	unsigned max_inflight_total;
	uint64_t max_input_tokens;
	uint64_t max_output_tokens;
	double max_request_s;
	/* the output constraints it enforces (hello "constraints"):
	 * ENGY_API_CONS_* bits */
	unsigned constraints;
	/* load */
	unsigned inflight;	 /* attempts routed here, open */
	unsigned miner_inflight; /* its last heartbeat */
	struct gw_req *reqs;	 /* those attempts */
	/* cancelled attempts still holding a slot until the miner says
	 * `cancelled` (or cancel_hold_s, for a miner that never did) */
	struct gw_hold *holds;
	unsigned held;
	bool acks_cancel; /* it sent a `cancelled` frame */
	/* the share it earned by serving (routing weight), <= max_inflight */
	unsigned earned;
	double ms_per_token; /* its answers' time per token, a moving mean */
	uint64_t answered;   /* buyer answers in that mean */
	int64_t swrr;	     /* smooth weighted round-robin */
	uint64_t ident;	     /* hash of (key, worker_name) */
	/* timing (CLOCK_MONOTONIC) */
	struct timespec opened, last_seen, last_ping;
	uint64_t served, failed, bad_frames;
	int close_code; /* how the leg closed (the observers' `closed`) */
	void *ext[GW_EXT_SLOTS]; /* modules' per-worker state */
};

/* ---- requests ------------------------------------------------------- */

enum gw_rstate {
	GW_R_CHECK = 0, /* parse, key, model, count (pool) */
	GW_R_RESERVE,	/* reserve (pool) */
	GW_R_ROUTED,	/* an attempt is at a worker */
	GW_R_SETTLE,	/* settle and log (pool) */
};

/*
 * How one request (or one attempt, for observers) ended.  Statuses are
 * the buyer's: 200, 499 (the buyer left), 500 (the gateway could not
 * send the serve frame: never the worker's fault), 502 (the worker
 * failed), 504 (the worker ran out of time), or a refusal (4xx, 503)
 * before any worker was picked.
 */
struct gw_outcome {
	int status;
	bool miner_fault; /* 502/504: counts against the worker */
	uint32_t prompt_tokens;
	uint32_t completion_tokens;
	uint32_t cached_tokens;
	uint32_t ttft_ms; /* 0 when no token came */
	uint32_t tpot_ms;
	double total_s;
	int64_t cost_micro; /* what settle was asked to charge */
	bool is_probe;
	const char *reason; /* short, never content */
};

/* How an attempt failed: a buyer request's failures are charged to
 * workers at its end, by kind (specs/gateway.md, "Failures: who is
 * charged").  The kinds from GW_F_ERROR on are the worker's fault. */
enum gw_fail {
	GW_F_NONE = 0,
	GW_F_GATEWAY,  /* 500: the gateway's own failure */
	GW_F_CANCELS,  /* an error while cancels were in flight there */
	GW_F_ERROR,    /* an error response */
	GW_F_RENDER,   /* output that cannot be rendered */
	GW_F_LEG,      /* the leg was lost */
	GW_F_TIMEOUT,  /* no token in time, or past max_request_s */
	GW_F_OVERSIZE, /* more content than max_tokens can produce */
};

/* A failed attempt of a buyer request, told to the observers when the
 * request ends (charged or not). */
struct gw_failed_attempt {
	uint64_t worker; /* its id */
	enum gw_fail kind;
	struct gw_outcome o;
};

/*
 * Who gets an internal request's result (gw_submit()): @done runs once,
 * on the loop thread, with the miner's response frame when there was one
 * (borrowed: copy what you keep).
 */
struct gw_sink {
	void (*done)(void *arg, const struct gw_outcome *o, const cJSON *frame);
};

struct gw_model_entry;

struct gw_req {
	struct gw *g;
	struct gw_req *next, **pprev;  /* g->reqs */
	struct gw_req *wnext, **wprev; /* w->reqs while routed */
	enum gw_rstate state;
	/* the buyer (NULL for internal requests, or once gone) */
	struct engy_http_exchange *x;
	const struct gw_sink *sink;
	void *sink_arg;
	bool gone;	/* the buyer hung up */
	bool internal;	/* gw_submit(): no buyer, no money */
	bool no_worker; /* none eligible at CHECK: 503/404 */
	bool sink_called;
	bool is_probe;
	bool count_only; /* /v1/messages/count_tokens */
	bool aborted;	 /* ended at the shutdown deadline (503) */
	enum engy_api api;
	enum engy_api_route route; /* the OpenAI route it came in on */
	struct engy_api_req areq;
	char request_id[40];	/* x-request-id, engy_request_id */
	char completion_id[48]; /* chatcmpl-... / msg_... */
	char corr_id[48];	/* the current attempt */
	uint64_t corr_hash;	/* gw_corr_hash(corr_id): find()'s first test */
	/* what the checks found */
	int64_t key_id, account_id;
	uint8_t key_hash[GW_HASH_BYTES];
	uint8_t key_fast[16]; /* gw_store_key_hash()'s table key */
	bool key_fast_miss;   /* the store hashed it: remember it */
	bool key_counted;     /* holds one of the key's inflight */
	struct engy_model spec;
	uint64_t prompt_bound; /* tokens: exact, or a byte bound */
	bool prompt_exact;
	uint64_t prompt_est; /* exact, or bytes / cancel_bytes_per_token */
	uint64_t affinity;   /* hash of the prompt's prefix */
	bool has_affinity;
	const struct gw_tok *tok; /* the model's tokenizer, or NULL */
	int64_t reservation_id;
	int64_t reserved_micro;
	struct gw_lease *lease; /* the hold is in memory, on this lease */
	bool lease_new;		/* the pool reserved one for it */
	bool lease_plain;	/* its key has GW_KEY_LEASES open */
	int64_t lease_amount, lease_expires_ms;
	uint64_t pin; /* internal: only the worker with this
					 * id (0: routed); an id, not a pointer:
					 * the worker may go while it waits */
	/* routing */
	struct gw_worker *w; /* the current attempt's worker */
	unsigned attempts;
	uint64_t tried[GW_MAX_ATTEMPTS];
	struct gw_failed_attempt fails[GW_MAX_ATTEMPTS];
	unsigned n_fails;
	size_t content_bytes; /* this attempt's text, all chunks */
	char miner[64];	      /* last worker's hotkey and name */
	char worker_name[128];
	/* earlier attempts that failed on a worker by its own fault (502/504)
	 * and were retried: each gets a request-log row of its own (scoring
	 * counts it), unless the request was poison (gw_relay_charge()) */
	struct gw_attempt_row {
		char miner[64];
		char worker_name[64];
		int status;
	} failed_attempts[GW_MAX_ATTEMPTS];
	unsigned n_failed_attempts;
	bool last_fault; /* the last failed attempt was the worker's fault */
	bool poison;	 /* failed the same way on several workers */
	int attempt_rows_rc; /* their log_append() (pool) */
	/* settling (gateway_settle.c): the queue of the next batch, and
	 * where its items are in the batch */
	struct gw_req *settle_next;
	size_t settle_item;
	unsigned settle_att;
	double deadline_s; /* min(model, worker) max_request_s */
	/* relay */
	bool stream_begun; /* buyer: status line and headers out */
	bool content_sent; /* buyer: a content byte out */
	bool first_chunk;  /* this attempt had a chunk */
	struct engy_oai_stream os;
	struct engy_anth_stream as;
	struct engy_resp_stream rs;	 /* /v1/responses */
	struct engy_cmpl_stream cs;	 /* /v1/completions */
	struct engy_resp_ids rids;	 /* a plain response's item ids */
	struct engy_api_stopper stopper; /* the buyer's stop strings */
	struct engy_sse_out cut;	 /* scratch: a delta's content */
	struct engy_sse_out out;
	size_t relayed_bytes; /* content + reasoning to the buyer */
	char *relayed;	      /* that text, kept only to count it
					 * with the tokenizer (RAM only) */
	size_t relayed_cap;
	struct event *timer; /* first token / deadline */
	struct event *keepalive;
	struct timespec t0, t_sent, t_first, t_last;
	int64_t t0_ms; /* arrival, Unix ms (the row's time) */
	/* the end */
	struct gw_outcome out_come;
	uint32_t prompt_tokens, completion_tokens, cached_tokens;
	int status;
	int64_t cost_micro;
	/* the pool job's scratch (gateway_store.c) */
	void (*job_done)(struct gw_req *r); /* the trip's continuation */
	uint8_t *body;
	size_t body_len;
	int job_rc;
	int job_status;
	char err[256];
	bool key_cached, model_cached;
	struct engy_api_key key_rec;
	struct gw_model_entry *model_hit;
};

/* A lease (gateway_settle.c): one store reservation of an API key that
 * backs the in-memory holds of many of its requests (loop thread). */
struct gw_lease {
	struct gw_lease *next;
	int64_t res_id, key_id;
	int64_t amount;	    /* open in the store: committed charges taken */
	int64_t held;	    /* holds whose charge is not committed yet */
	unsigned n_holds;   /* their number */
	int64_t retire_ms;  /* no new holds from then */
	int64_t expires_ms; /* the store's reservation lapses then */
	struct gw_lease *close_next; /* the close queue, a batch's */
	bool dead;		     /* the store no longer has it */
	bool closing;		     /* its close is queued or on the pool */
};

/* A model's tokenizer and chat template, for exact prompt counts. */
struct gw_tok {
	char model[128];
	char dir[512];
	struct engy_tokenizer *tok;
	int variant; /* enum engy_chat_variant */
};

/* Cached reads of the store (loop thread; refreshed on the pool). */
struct gw_key_entry {
	struct gw_key_entry *next;
	uint8_t hash[GW_HASH_BYTES];
	int64_t key_id, account_id;
	uint32_t status;   /* 0: no such key */
	unsigned inflight; /* this key's open requests */
	struct timespec fetched;
};

struct gw_model_entry {
	struct gw_model_entry *next;
	struct engy_model m;
	bool found;
	struct timespec fetched;
};

struct gw_miner_entry { /* refused miner keys, briefly */
	struct gw_miner_entry *next;
	uint8_t hash[GW_HASH_BYTES];
	char reason[96];
	struct timespec fetched;
};

/* ---- observers: how modules hear of what happens ---------------------- */

struct gw_observer {
	const char *name;
	/* @w was admitted: state NEW (or ACTIVE when 1st-party). */
	void (*admitted)(void *arg, struct gw_worker *w);
	/* @w moved from @from to w->state (gw_worker_set_state(), whoever
	 * called it; logged already).  Admission's own moves come before
	 * `admitted`: the module has no record of @w yet. */
	void (*state)(void *arg, struct gw_worker *w, enum gw_wstate from);
	/* @w's leg closed; its requests were failed over already.  @w is
	 * freed when the observers return. */
	void (*closed)(void *arg, struct gw_worker *w);
	/* One attempt on @w ended (the breaker's input).  @r->is_probe
	 * tells probes from buyer traffic. */
	void (*finished)(void *arg, struct gw_worker *w, const struct gw_req *r,
			 const struct gw_outcome *o);
	/* A successful `response` frame from @w (the tee's input: the
	 * commitment rides it, usually as a cJSON_Raw node holding its
	 * checked text: see gw_frame_parse()).  Borrowed; copy what you
	 * keep, in RAM. */
	void (*response)(void *arg, struct gw_worker *w, const struct gw_req *r,
			 const cJSON *frame);
	/* The role is stopping (SIGTERM): stop sending probes. */
	void (*stop)(void *arg);
	/* Free the module's state (after the loop ended). */
	void (*destroy)(void *arg);
	void *arg;
};

/* ---- hooks: how a lower layer hands events up -------------------------- */

/* The pool's frames for an attempt (set by gw_relay_init()). */
struct gw_pool_sink {
	void (*chunk)(struct gw_worker *w, const char *corr_id,
		      const cJSON *delta);
	void (*response)(struct gw_worker *w, const char *corr_id,
			 const cJSON *frame);
	/* @w's leg is gone: fail its attempts over. */
	void (*orphan)(struct gw_worker *w);
};

/* A cancelled attempt's slot on @w stays taken until the miner releases
 * it (gateway_pool.c). */
void gw_worker_hold(struct gw_worker *w, const char *corr_id);
/* The miner released @corr_id's slot (`cancelled`, or a late response
 * frame): true when it was held. */
bool gw_worker_unhold(struct gw_worker *w, const char *corr_id);
/* Slots taken on @w: open attempts and held cancels. */
unsigned gw_worker_busy(const struct gw_worker *w);

/* The end of an attempt (set by gw_req_init()).  The observers were
 * told already and r->w is detached. */
struct gw_relay_sink {
	/* No result (r->status = @status); @retry: another worker may be
	 * tried while nothing reached the buyer. */
	void (*failed)(struct gw_req *r, int status, bool retry);
	/* The answer went out to the buyer (or the sink). */
	void (*answered)(struct gw_req *r);
};

/* ---- the role ---------------------------------------------------------- */

struct gw {
	const struct engy_host *h; /* the role instance's host services */
	const struct gw_conf *c;
	/* the buyer listener (transport-http) */
	const struct engy_transport_ops *t;
	void *ti;
	/* the miner listener (transport-ws) */
	const struct engy_transport_ops *ws;
	void *wsi;
	/* the store (called on the host's worker pool) */
	const struct engy_store_ops *st;
	void *sti;
	/* miners */
	struct gw_worker *workers;
	unsigned n_workers;
	uint64_t next_worker_id;
	/* requests */
	struct gw_req *reqs;
	unsigned n_reqs;
	/* ended ones kept for the next (gw_req_new): a 3 KB struct is past
	 * malloc's per-thread cache; at most GW_REQ_SPARE */
	struct gw_req *req_spare;
	unsigned n_req_spare;
	/* caches */
	struct gw_key_entry *keys[256]; /* by the hash's first byte */
	struct gw_model_entry *models;
	struct gw_miner_entry *denied;
	struct gw_tok toks[GW_MAX_TOKENIZERS];
	size_t n_toks;
	int variant; /* default chat template */
	/* hooks */
	const struct gw_pool_sink *pool_sink;
	/* A miner's `gemm_opening` frame (set by the tee, gateway_tee.c;
	 * NULL: ignored).  @frame's "opening" may be taken. */
	void (*gemm_opening)(struct gw *g, struct gw_worker *w,
			     const char *corr_id, const cJSON *frame,
			     size_t len);
	const struct gw_relay_sink *relay_sink;
	/* modules */
	struct gw_observer obs[GW_MAX_OBSERVERS];
	size_t n_obs;
	unsigned n_ext;
	/* life */
	struct event *tick;	  /* stale, ping, hello timeouts */
	struct event *release_ev; /* release_expired */
	bool stopping;
	bool aborting; /* past shutdown_timeout: requests end with 503 */
	uint64_t served, refused;
	struct engy_metric *m_workers, *m_inflight, *m_ttft, *m_overhead,
		*m_attempts;
	/* settling (gateway_settle.c): requests waiting for the next
	 * batch, and whether one is on the pool */
	struct gw_req *settle_q, **settle_q_tail;
	unsigned n_settle_q;
	bool settling;
	int64_t settle_q_ms;	 /* when the queue's first one joined */
	struct event *settle_ev; /* the window's end (settle_window_ms) */
	/* leases (gateway_settle.c): open ones, and those to close in the
	 * next batch */
	struct gw_lease *leases[GW_LEASE_BUCKETS], *lease_closeq;
	unsigned n_leases;
	struct engy_metric *m_batches; /* engy_gw_settle_batches_total */
	/* gw_store_key_hash()'s table (gateway_store.c) */
	struct gw_khash {
		uint8_t fast[16];
		uint8_t hash[GW_HASH_BYTES];
		bool used;
	} khash[GW_KHASH_SLOTS];
	uint8_t khash_key[16]; /* SipHash-2-4's, 128-bit output */
	/* engy_gw_requests_total's series met so far (gateway_req.c) */
	struct gw_req_series {
		const char *api; /* a string constant: compared by address */
		int status;
		struct engy_metric *m;
	} req_series[GW_REQ_SERIES];
	unsigned n_req_series;
};

/* Log one event line under the role's instance name ("gateway"). */
#define GW_LOG(g, lvl, ...) (g)->h->log((g)->h, (lvl), __VA_ARGS__)

/* Metric updates through the host; a NULL metric (registration failed)
 * is skipped. */
static inline void gw_madd(const struct gw *g, struct engy_metric *m, double v)
{
	if (m)
		g->h->metric_add(m, v);
}

static inline void gw_mset(const struct gw *g, struct engy_metric *m, double v)
{
	if (m)
		g->h->metric_set(m, v);
}

static inline void gw_mobserve(const struct gw *g, struct engy_metric *m,
			       double v)
{
	if (m)
		g->h->metric_observe(m, v);
}

/* Layer by layer, top down. */

/* gateway_http.c */
int gw_http_init(struct gw *g);

/* gateway_req.c */
void gw_req_init(struct gw *g);
struct gw_req *gw_req_new(struct gw *g);
void gw_req_free(struct gw_req *r);
void gw_req_spare_free(struct gw *g); /* the kept ones, at destroy */
/* A buyer request taken by gateway_http.c: check, reserve, route. */
void gw_req_start(struct gw_req *r);
/* The buyer left (transport on_gone). */
void gw_req_gone(struct gw_req *r);
/* End @r with @status (the settle job follows, then the free). */
void gw_req_finish(struct gw_req *r, int status, const char *reason);
/* Answer @r's buyer with an error (gw_reply_error()), then end @r. */
void gw_req_error(struct gw_req *r, int status, const char *msg);
/* The drain reached shutdown_timeout: every routed request ends now with
 * 503 (a streaming buyer gets it as an error event), its row written and
 * what reached the buyer charged, its hold released; those still in a
 * store trip end so when they come back. */
void gw_req_abort_all(struct gw *g);
/*
 * gw_submit() - an internal request (probe, bench): @body (an OpenAI
 * chat body, taken) for @model, sent to @pin (NULL: routed like a buyer
 * request, among eligible workers).  No money moves; a probe's row has
 * is_probe = 1.  @s->done gets the outcome.  Returns 0 or -errno.
 */
int gw_submit(struct gw *g, const char *model, cJSON *body_take,
	      struct gw_worker *pin, bool is_probe, const struct gw_sink *s,
	      void *arg);

/* gateway_store.c: each trip ends in @done on the loop thread, with a
 * refusal in r->job_status and r->err. */
/* The buyer checks on the pool. */
void gw_store_check(struct gw_req *r, void (*done)(struct gw_req *r));
/* r->key_hash for the key text @key (the store's key_hash(), memoised
 * for keys the store knew). */
int gw_store_key_hash(struct gw_req *r, const char *key, size_t len);
/* Hold one of the key's inflight places; -EBUSY at key_max_inflight. */
int gw_store_key_hold(struct gw_req *r);
/* Give back @r's place in its key's inflight count. */
void gw_store_key_release(struct gw_req *r);
/* The model and the reservation (internal requests: the model only);
 * a refusal from the caches calls @done at once. */
void gw_store_reserve(struct gw_req *r, void (*done)(struct gw_req *r));

/* gateway_settle.c: settle (or log) @r, group-committed with the others
 * that end meanwhile; @done frees it once its row is written. */
void gw_store_settle(struct gw_req *r, void (*done)(struct gw_req *r));
/* Hold @amount for @r on one of its key's leases, in memory: 0, or
 * -ENOENT when none has the room and the time (then the pool reserves a
 * new one: gw_lease_add()). */
int gw_lease_hold(struct gw_req *r, int64_t amount);
/* Whether @key_id may open another lease (GW_KEY_LEASES). */
bool gw_lease_room(struct gw *g, int64_t key_id);
/* The lease the pool reserved for @r (r->lease_new), holding @r's hold. */
void gw_lease_add(struct gw_req *r);
/* Close the leases that hold nothing (stop, the minute timer). */
void gw_lease_close_idle(struct gw *g);
void gw_lease_free_all(struct gw *g);
/* The tokenizer configured for @model, or NULL. */
const struct gw_tok *gw_store_tok(const struct gw *g, const char *model);
int gw_store_init(struct gw *g);
void gw_store_free(struct gw *g);
void gw_store_release_expired(struct gw *g);

/* gateway_relay.c: one attempt. */
void gw_relay_init(struct gw *g);
/* Before @r's first attempt: engy_request_id, the buyer's stream. */
int gw_relay_prepare(struct gw_req *r);
/* Send @r's next attempt to @w (picked by the driver). */
void gw_relay_start(struct gw_req *r, struct gw_worker *w);
/* The buyer left a routed @r: `cancel` to its worker, the observers. */
void gw_relay_cancel(struct gw_req *r);
/* The observers' outcome of @r (or of its attempt) ending in @status. */
void gw_relay_outcome(const struct gw_req *r, int status, const char *reason,
		      struct gw_outcome *o);
/* @r ends: off its worker, timers stopped. */
void gw_relay_end(struct gw_req *r);
/* @r is freed: off its worker, timers freed. */
void gw_relay_drop(struct gw_req *r);
/* @r ends (@answered: a worker answered it): its failed attempts are
 * told to the observers, at most one charged to its worker. */
void gw_relay_charge(struct gw_req *r, bool answered);

/* gateway_route.c */
/* Whether @w may get buyer traffic (state, 1st-party, onboarding). */
bool gw_worker_eligible(const struct gw *g, const struct gw_worker *w);
/* Whether any eligible worker serves @model (the quick 503). */
bool gw_route_any(const struct gw *g, const char *model);
/* The worker for @r's next attempt, or NULL. */
struct gw_worker *gw_route_pick(struct gw *g, struct gw_req *r);
/* An eligible worker of @model enforces every ENGY_API_CONS_* bit of
 * @constraint. */
bool gw_route_constrained(const struct gw *g, const char *model,
			  unsigned constraint);
/* The prefix hash of a rendered prompt (affinity_chars of it). */
uint64_t gw_route_affinity(const struct gw *g, const char *prompt, size_t len,
			   bool *use);

/* gateway_pool.c */
int gw_pool_init(struct gw *g);
/* Drain: reconnect to every leg once it is idle. */
void gw_pool_drain(struct gw *g);
/* Once a second: stale legs, pings, hello timeouts, drain. */
void gw_pool_tick(struct gw *g);
void gw_pool_free(struct gw *g);
/* Send one frame (@text is consumed); logs a failure. */
int gw_send(struct gw *g, struct gw_worker *w, char *text, size_t len);
/* Close a leg with a reason (its requests fail over). */
void gw_worker_close(struct gw_worker *w, int code, const char *reason);
/* Move @w to @s (logged; the observers hear of it). */
void gw_worker_set_state(struct gw_worker *w, enum gw_wstate s,
			 const char *why);
const char *gw_wstate_name(enum gw_wstate s);
/* An attempt on @w ended: inflight bookkeeping, drain. */
void gw_worker_release(struct gw_worker *w);

/* gateway_hello.c: hello validation on the pool; @done on the loop. */
void gw_store_hello(struct gw_worker *w, const char *miner_key,
		    void (*done)(struct gw_worker *w, int rc,
				 const struct engy_miner *m,
				 const struct engy_model *spec,
				 const char *why));

/* gateway_reply.c: what goes out to @r's buyer (nothing when gone). */
/* A whole JSON reply. */
void gw_reply_json(struct gw_req *r, int status, const char *body, size_t len);
/* An error in the API's shape (in-band once the stream is under way). */
void gw_reply_error(struct gw_req *r, int status, const char *msg);
/* A count_tokens answer; -ENOMEM. */
int gw_reply_count(struct gw_req *r);
/* Start @r's SSE reply (status line, headers; message_start for
 * Anthropic); 0 or -errno. */
int gw_reply_stream_begin(struct gw_req *r);
/* Write what the renderers left in r->out to the buyer. */
void gw_reply_flush(struct gw_req *r);

/* gateway_bus.c */
double gw_since(const struct timespec *t0);
int64_t gw_now_ms(void);
/* Whether @t is less than @ttl seconds ago (CLOCK_MONOTONIC). */
bool gw_fresh(const struct timespec *t, double ttl);
void gw_count(struct gw *g, const char *name, const char *labels);
/* Run @fn on the host's worker pool, @done on the loop. */
int gw_store_work(struct gw *g, void (*fn)(void *), void (*done)(void *, int),
		  void *arg);
/* Register @o (copied); 0 or -ENOSPC. */
int gw_observe(struct gw *g, const struct gw_observer *o);
/* A free slot of w->ext for one module; -ENOSPC. */
int gw_ext_slot(struct gw *g);
/* Observers, in registration order. */
void gw_notify_admitted(struct gw *g, struct gw_worker *w);
void gw_notify_state(struct gw *g, struct gw_worker *w, enum gw_wstate from);
void gw_notify_closed(struct gw *g, struct gw_worker *w);
void gw_notify_finished(struct gw *g, struct gw_worker *w,
			const struct gw_req *r, const struct gw_outcome *o);
void gw_notify_response(struct gw *g, struct gw_worker *w,
			const struct gw_req *r, const cJSON *frame);

/* gateway_frames.c: what a miner sends (specs/protocol.md §2). */
enum gw_mtype {
	GW_M_UNKNOWN = 0, /* ignored */
	GW_M_HELLO,
	GW_M_HEARTBEAT,
	GW_M_CHUNK,
	GW_M_RESPONSE,
	GW_M_CANCELLED,	   /* the miner released a cancelled corr_id's slot */
	GW_M_GEMM_OPENING, /* the answer to a gemm_open (gateway_tee.c) */
};

struct gw_capacity {
	bool has_total;
	unsigned max_inflight;
	unsigned max_inflight_total;
	uint64_t max_input_tokens; /* 0: not sent */
	uint64_t max_output_tokens;
	double max_request_s;
};

struct gw_mframe {
	int type; /* enum gw_mtype */
	const char *type_name;
	cJSON *root;
	const char *corr_id; /* chunk, response, cancelled, gemm_opening */
	const cJSON *delta;  /* chunk */
	/* hello */
	const char *miner_key;
	const char *model;
	const char *model_root;
	const char *worker_name;
	const char *worker_id;
	const char *instance_id;
	struct gw_capacity cap; /* hello, heartbeat */
	unsigned inflight;	/* heartbeat */
	unsigned constraints;	/* hello: ENGY_API_CONS_* it enforces */
};

/*
 * gw_frame_parse() - one text message from a miner.  -EINVAL with a
 * reason for what is not a JSON object with a string "type", a hello
 * without its required fields, a chunk or response without a corr_id;
 * unknown types parse as GW_M_UNKNOWN.  A top-level "commitment" is a
 * cJSON_Raw node holding its text, checked to be one JSON value
 * (engy_json_parse_lazy()), except in the rare frame that path leaves to
 * cJSON's whole parse (a key with escapes): readers take both, with
 * gw_frame_member().  Free with gw_frame_free().
 */
int gw_frame_parse(const char *data, size_t len, struct gw_mframe *f, char *err,
		   size_t errlen);
void gw_frame_free(struct gw_mframe *f);

/*
 * gw_frame_member() - @frame's member @name as a tree: itself, or parsed
 * from a cJSON_Raw node's text into *@own (the caller's to cJSON_Delete();
 * NULL when nothing was parsed).  NULL when absent or out of memory.
 */
const cJSON *gw_frame_member(const cJSON *frame, const char *name, cJSON **own);

#endif /* ENGY_ROLE_GATEWAY_INT_H */
