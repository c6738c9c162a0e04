/* SPDX-License-Identifier: MIT */
/*
 * The auditor role's shared state (specs/auditor.md).  Files:
 *
 *   auditor.c        options, wiring, the timers, start/stop
 *   auditor_pin.c    the checkpoint's Merkle root against the pinned one
 *   auditor_pull.c   pulling sampled commitments from the gateway's tee
 *                    (lib/http/httpc on the pool) into a bounded queue
 *   auditor_check.c  one job: model and thresholds from the store, the
 *                    backend's prefill of prompt + output, every proof
 *                    plugin's verify() on the pool, the verdict row
 *   auditor_epoch.c  closing an epoch: the request log's slice and the
 *                    verdicts to the scorer's input, settle, sign, store
 *   auditor_api.c    the provider API (transport-http)
 *   auditor_pages.c  the provider's pages (/epochs, /miners) beside it
 *
 * Everything runs on the loop thread except the pool job bodies, which
 * touch only their own job.  Commitments live in RAM only, for as long as
 * their job; nothing of a prompt or an output reaches the store or a log.
 */
#ifndef ENGY_ROLE_AUDITOR_INT_H
#define ENGY_ROLE_AUDITOR_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <engy/backend.h>
#include <engy/host.h>
#include <engy/proof.h>
#include <engy/scorer.h>
#include <engy/store.h>
#include <engy/transport.h>

#include "hotkey.h"

struct event;

/* The role instance is named "auditor": the host prefixes it. */
#define aud_log(a, lvl, ...) (a)->h->log((a)->h, (lvl), __VA_ARGS__)
#define AUD_MAX_PROOFS	     4
#define AUD_MAX_BACKENDS     8

struct aud_conf {
	const char *tee_url;   /* the gateway's tee endpoint */
	const char *tee_token; /* secret: its bearer token */
	int64_t sample_ppm;    /* buyer requests audited, millionths */
	int64_t pull_s;	       /* seconds between pulls */
	int64_t queue_max;     /* jobs held at once */
	int64_t epoch_s;       /* epoch length */
	int64_t netuid;
	const char *hotkey_file;  /* the master hotkey (secret) */
	const char *owner_hotkey; /* the burn target */
	const char *api_prefix;	  /* "/api/subnet/v1" */
	int64_t fetch_timeout_s;
	const char *spec_root; /* the pinned Merkle root (64 hex), or NULL */
	int64_t claim_s;       /* an audit claim lapses this long after it */
	/* the GEMM audit (auditor_gemm.c) */
	double gemm_rate; /* share of audited entries opened (< 0: the model's) */
	double gemm_open_timeout_s;  /* one POST tee/open */
	int64_t gemm_open_max_bytes; /* the largest opening read */
	int64_t gemm_miss_allowance; /* misses per miner per epoch forgiven */
};

/* A job's claim (store audit_claim(), ABI 1.3). */
enum aud_claim {
	AUD_CLAIM_OURS = 0, /* ours, or the store has no claims */
	AUD_CLAIM_HELD,	    /* another auditor's, live: retry later */
	AUD_CLAIM_DONE,	    /* audited by another auditor */
};

/* One sampled request: its metadata and its commitment (RAM only). */
struct aud_job {
	struct aud_job *next;
	struct aud *a;
	char request_id[64];
	char miner[64];
	char model[128];
	int64_t time_ms;
	uint64_t seq; /* the tee's entry number */
	bool is_probe;
	char *commitment; /* the commitment JSON text */
	/* parsed from the commitment */
	uint32_t *ids; /* prompt ids, then output ids */
	size_t n_prompt, n_out;
	char root_hex[80];
	/* thresholds (the store's model spec) */
	struct engy_model spec;
	int model_rc;	 /* model_get / root checks */
	const char *why; /* an unproven reason found early */
	/* the recompute: the decode rows, copied */
	void *rows;
	uint32_t n_rows, hidden, dtype;
	struct engy_gen *gen;
	int be; /* index into a->be */
	/* results, one per proof plugin */
	struct engy_verdict v[AUD_MAX_PROOFS];
	int rc;
	/* the claim */
	enum aud_claim claim;
	bool claimed;	  /* we hold it: mark it done after the verdict */
	int64_t retry_ms; /* AUD_CLAIM_HELD: when to try again */
	int done_rc;	  /* marking it done */
};

struct aud_backend {
	const struct engy_backend_ops *ops;
	void *inst;
	char name[128];
	bool busy;
};

struct aud_proof {
	const struct engy_proof_ops *ops;
	void *inst;
	const char *name;
};

/* One miner's GEMM misses (gone, miner errors) in one epoch. */
#define AUD_MISS_SLOTS 256
struct aud_miss {
	char miner[64];
	int64_t epoch;
	unsigned count;
};

struct aud {
	const struct engy_host *h;
	const struct aud_conf *c;
	const struct engy_store_ops *st;
	void *sti;
	const struct engy_scorer_ops *sc;
	void *sci;
	const struct engy_transport_ops *t;
	void *ti;
	struct aud_backend be[AUD_MAX_BACKENDS];
	unsigned n_be;
	struct aud_proof pr[AUD_MAX_PROOFS];
	unsigned n_pr;
	struct engy_hotkey hk;
	bool have_key;
	char owner[64];
	bool stopping;
	unsigned inflight; /* pool jobs and recomputes */
	/* the tee pull */
	struct event *pull_ev;
	bool pulling;
	char cursor[64];
	char boot[40]; /* the tee's process id the cursor belongs to */
	struct aud_job *q_head, *q_tail;
	unsigned q_len;
	bool checking;
	uint64_t n_dropped, n_done;
	/* claims: this process's holder name, jobs another auditor holds */
	char holder[64];
	struct aud_miss misses[AUD_MISS_SLOTS]; /* the verify step's only */
	struct aud_job *d_head;
	unsigned d_len;
	/* epochs */
	struct event *epoch_ev;
	bool closing;
	int64_t next_close;  /* the next epoch index to close */
	uint64_t wait_holds; /* open holds the last wait was logged with */
};

/* auditor_pin.c: every backend's checkpoint against its pinned Merkle
 * root (the spec_root option, the store's); at start, blocking. */
int aud_pin_check(struct aud *a);
int aud_pin_parse(const char *s, uint8_t out[32]);
/* auditor_pull.c */
void aud_pull_start(struct aud *a);
void aud_job_free(struct aud_job *j);
/* Jobs another auditor held whose retry time came go back in the queue. */
void aud_requeue_deferred(struct aud *a);
/* POST the verdict to the tee's ack (.../sample -> .../ack); pool only. */
void aud_ack(struct aud *a, const struct aud_job *j);
/* auditor_check.c: the limits from @m's row; gemm_rate @c's when set. */
void aud_limits(const struct aud_conf *c, const struct engy_model *m,
		struct engy_proof_limits *lim);
/* auditor_gemm.c: @p (a scheme with challenge()/check()) on @j, on the
 * pool; false when the entry is not sampled for it (no verdict). */
bool aud_gemm_audit(struct aud *a, const struct aud_job *j,
		    const struct aud_proof *p,
		    const struct engy_proof_limits *lim,
		    struct engy_verdict *v);
/* Whether @p is such a scheme. */
bool aud_proof_challenges(const struct aud_proof *p);
/* auditor_check.c */
void aud_check_next(struct aud *a);
/* auditor_epoch.c */
int64_t aud_now_ms(void);
void aud_epoch_tick(struct aud *a);
/* auditor_api.c */
int aud_api_init(struct aud *a);
/* auditor_pages.c: /epochs, /epochs/{i}, /miners (HTML) */
int aud_pages_init(struct aud *a);

#endif /* ENGY_ROLE_AUDITOR_INT_H */
