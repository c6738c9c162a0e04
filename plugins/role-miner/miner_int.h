/* SPDX-License-Identifier: MIT */
/*
 * The miner role's state, shared by miner.c (options, wiring, the
 * preparation before the legs dial, shutdown), miner_legs.c (legs,
 * hello, heartbeat and the gateway's control frames) and miner_serve.c
 * (one routed request from `serve` to `response`).
 */
#ifndef ENGY_ROLE_MINER_INT_H
#define ENGY_ROLE_MINER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <engy/backend.h>
#include <engy/host.h>
#include <engy/proof.h>
#include <engy/transport.h>

#include "minerproto.h"

struct event;
struct engy_metric;
struct engy_tokenizer;
struct mreq;
struct mgemm_held;
struct mgopen;

#define MINER_MAX_PROOFS 4

/* One log line under the role's instance name ("miner"). */
#define MLOG(m, lvl, ...) (m)->h->log((m)->h, (lvl), __VA_ARGS__)

/* The role's options (the `miner { }` section and its env twins). */
struct miner_conf {
	const char *gw;
	const char *miner_key;
	const char *model;
	const char *worker_name;
	const char *instance_id; /* set: replaces the computed id */
	const char *checkpoint;
	const char *chat_template;
	const char *parallelism;
	const char *lock_file;
	const char *model_root; /* set: replaces the computed identity */
	int64_t max_inflight;
	int64_t max_input_tokens;
	int64_t max_output_tokens;
	int64_t max_tokens;
	int64_t gw_workers;
	int64_t heartbeat_s;
	double max_request_s;
	double stream_flush_s;
	double meta_timeout_s;
	bool stream_reasoning;
	bool gpu_probe;
	bool gemm_trace;	     /* ask a backend that offers one */
	int64_t gemm_open_max;	     /* openings at once per leg */
	int64_t gemm_open_max_bytes; /* the largest opening sent */
};

struct mproof {
	const char *name; /* the instance */
	const struct engy_proof_ops *ops;
	void *inst;
};

/* One leg: a persistent connection to one gateway worker. */
struct mleg {
	struct miner *m;
	unsigned idx, worker, share;
	char *url;
	struct engy_ws_leg *leg;
	struct engy_ws_conn *conn; /* while open */
	bool admitted;
};

/* What the preparation found (filled on the worker pool). */
struct mprep {
	char dir[512];
	int variant_opt; /* -1: detect */
	bool gpu_probe;
	double meta_timeout_s;
	char *meta_url;
	unsigned gw_workers; /* > 0: ENGY_GW_WORKERS, no /meta */
	const char *ca_file;
	bool insecure;
	/* results */
	int rc;
	char err[512];
	struct engy_tokenizer *tok;
	int variant;
	char model_root[65];
	unsigned n_workers;
	char meta_note[160];
	char host[256];
	unsigned cpus;
	double ram_gb;
	char gpu[128];
	unsigned gpu_count;
	double gpu_mem_gb;
	char gpus[256];
};

/* The hello's "constraints" bits (specs/protocol.md §2). */
#define MINER_CONS_JSON	 1u /* "json_schema" */
#define MINER_CONS_TOOL	 2u /* "tool_call" */
#define MINER_CONS_TOPLP 4u /* "top_logprobs": alternatives are served */

struct miner {
	const struct engy_host *h;
	const struct miner_conf *c;
	const struct engy_transport_ops *t;
	void *ti;
	const struct engy_backend_ops *b;
	void *bi;
	struct mproof proofs[MINER_MAX_PROOFS];
	size_t n_proofs;
	struct engy_model_info info;
	/* ENGY_API_CONS_* this worker enforces (the backend's info() and
	 * the template), advertised in the hello */
	unsigned constraints;
	struct engy_tokenizer *tok;
	int variant;
	uint32_t stop_ids[4];
	size_t n_stop;
	char model[128];
	char model_root[65];
	char worker_name[128];
	char instance_id[128];
	char worker_id[33];
	char *serve_urls;	 /* the backend's, joined by "," */
	const char *versions[8]; /* name, value, ..., NULL */
	char ver_backend[160], ver_proof[160];
	struct engy_miner_hw hw;
	struct mprep *prep;		/* while preparing */
	struct mprep hwbuf;		/* strings hw points into */
	struct engy_miner_capacity cap; /* max_inflight set per leg */
	struct mleg *legs;
	size_t n_legs;
	struct mreq *reqs;
	unsigned inflight;
	/* the GEMM audit (miner_gemm.c) */
	struct mgemm_held *gheld; /* request id -> backend rid, a ring */
	size_t gheld_next;
	struct mgopen *gopens; /* openings the backend works on */
	struct timespec idle_since;
	struct event *hb_ev, *info_ev;
	int lock_fd;
	unsigned info_tries;
	bool stopping, ready;
	struct engy_metric *m_inflight, *m_legs, *m_ttft, *m_tokens, *m_prompt,
		*m_prove;
};

/* miner.c */
void miner_count(struct miner *m, const char *outcome);
bool miner_loop_over(struct miner *m);
double miner_since(const struct timespec *t0);

/* miner_legs.c */
int miner_legs_start(struct miner *m, unsigned n_workers);
void miner_legs_close(struct miner *m);
/* Send one text frame on @conn; logs a failure, returns 0 or -errno. */
int miner_send(struct miner *m, struct engy_ws_conn *conn, char *text,
	       size_t len);
unsigned miner_legs_open(const struct miner *m);

/* miner_serve.c */
void miner_serve(struct mleg *leg, struct engy_gw_frame *f);
void miner_cancel(struct mleg *leg, const char *corr_id);
/* The connection under @conn closed: its requests can answer nowhere. */
void miner_orphan(struct miner *m, struct engy_ws_conn *conn);
/* destroy(): end everything without callbacks or frames. */
void miner_reqs_free(struct miner *m);
/* An error `response` for a request that never started. */
void miner_reply_error(struct miner *m, struct engy_ws_conn *conn,
		       const char *corr_id, const char *request_id,
		       const char *error);

/* The descriptor's check op (miner_check.c). */
struct engy_check_sink;
int miner_check(const struct engy_host *h, const void *conf, void *inst,
		const struct engy_check_sink *sink);

#endif /* ENGY_ROLE_MINER_INT_H */
