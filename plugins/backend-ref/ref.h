/* SPDX-License-Identifier: MIT */
/*
 * backend-ref internals: the plugin instance, its requests and the step
 * scheduler (ref_sched.c).
 *
 * Requests run as a chain of pool jobs, one "step" at a time per instance:
 * a step feeds every active request its next rows (a prefill chunk of up
 * to prefill_chunk prompt tokens, or the one token it just generated) as
 * one batched forward, then samples the requests whose prompt is done.
 * The step's done callback (loop thread) streams tokens, ends finished or
 * cancelled requests, admits queued ones and submits the next step.  So
 * cancel() takes effect between steps, and since each row's numbers do
 * not depend on its batch (qwen3.h), batching never changes a result.
 */
#ifndef REF_H
#define REF_H

#include <stdbool.h>
#include <stdint.h>

#include <engy/backend.h>
#include <engy/plugin.h>

#include "qwen3.h"
#include "constrain.h"
#include "sampler.h"

enum ref_state {
	REF_INIT = 0, /* created, not started: requests queue */
	REF_LOADING,  /* the load job is running: requests queue */
	REF_READY,
	REF_FAILED, /* the checkpoint did not load */
};

enum req_kind {
	REQ_GENERATE = 1,
	REQ_PREFILL,
	REQ_REPLAY, /* a GEMM opening's replay (ref_gemm.c): prefill, hooked */
};

struct ref;
struct ref_gsink;
struct ref_hold;

/* One request; the handle generate()/prefill() hand out. */
struct engy_gen {
	struct ref *r;
	struct engy_gen *next; /* in the active list or the queue */
	int kind;	       /* enum req_kind */
	uint32_t *ids;	       /* prompt, then generated tokens */
	size_t n_ids, n_prompt;
	uint32_t max_new, n_out;
	struct q3_sampling sp;
	struct q3_rng rng;
	bool want_hidden, want_logprobs;
	uint32_t *stop;
	size_t n_stop;
	bool ignore_eos; /* neither EOS nor a stop id ends it */
	/* top_logprobs alternatives (0: none asked), filled by the step job */
	uint32_t top_n, step_top_n;
	void (*on_top)(void *arg, size_t n, uint32_t k, const uint32_t *ids,
		       const float *logprobs);
	uint32_t *step_top_ids;
	float *step_top_lp;
	struct engy_gen_cb cb;
	void (*pdone)(void *arg, int rc, const struct engy_rows *rows);
	void *arg;
	struct q3_seq *seq;
	size_t n_fed; /* positions in the KV cache */
	bool cancelled;
	/* constrained decoding (NULL: none): the matcher is advanced by the
	 * step job only */
	struct engy_cons *cons;
	struct engy_cons_state *cst;
	bool cons_stuck; /* no id may follow: ends with an error */
	uint32_t *cend;	 /* EOS and stop ids: allowed once complete */
	size_t n_cend;
	/* This step's share and results (written by the step job). */
	size_t step_rows, step_first;
	bool step_samples;
	uint32_t step_tok;
	float step_lp;
	float *hidden; /* the sampled row, or every row (prefill) */
	/* GEMM audit (ref_gemm.c).  Generate: @gs the trace its rows go to
	 * as the forward runs (NULL: not traced), @gmember the commitment
	 * once built (for gemm_commit() in on_done), @gsamp the sampling
	 * hash, @grid the rid it is kept under.  Replay: @gs the opening
	 * its rows go to, @hold the trace it opens, @odone its answer. */
	struct ref_gsink *gs;
	uint8_t gsamp[32];
	char *gmember;
	char grid[128];
	struct ref_hold *hold;
	void (*odone)(void *arg, int rc, const char *json, size_t len);
	void *oarg;
};

/*
 * What the row hook (ref_gemm.c) sees of the product being computed: for
 * each row of the engy_q3_forward() or engy_q3_logits() call, its request
 * and position.  Set by the step job around each call; NULL when no
 * request in the step is traced.
 */
struct ref_hookctx {
	struct engy_gen **req;
	uint32_t *pos;
	size_t n;
};

struct ref {
	const struct engy_host *host;
	char dir[512];
	char name[128];
	struct q3_config cfg;
	struct q3_load_opts lo;
	struct q3_model *m;
	struct q3_sampler *smp;		/* used by the step job only */
	struct engy_cons_vocab *cvocab; /* NULL: no constraints */
	uint8_t *cscratch;		/* the step job's mask */
	bool has_tok; /* the checkpoint has a tokenizer.json */
	int state;    /* enum ref_state */
	char load_err[512];
	uint32_t max_ctx, max_batch, max_queue, chunk;
	struct engy_gen *active, *queue;
	size_t n_active, n_queued;
	bool step_inflight;
	bool stopping;
	struct engy_metric *m_tokens, *m_prefill, *m_requests;
	/* GEMM audit (ref_gemm.c) */
	bool gemm_on;	 /* option gemm_trace */
	bool gemm_ready; /* spec_root known: traces are offered */
	bool spec_set;	 /* spec_root came from the option */
	uint8_t spec_root[32];
	uint64_t hold_ms;		      /* option gemm_hold_s */
	uint64_t hold_max;		      /* option gemm_max_bytes */
	struct ref_hold *holds, **holds_tail; /* oldest first */
	size_t hold_bytes, n_holds;
	uint64_t rid_seq;
	uint8_t rid_salt[8];
	struct ref_hookctx *hctx; /* the step job's, during its calls */
	struct engy_timer *gtimer;
	struct engy_metric *m_gheld, *m_gbytes, *m_gevicted, *m_gexpired;
	struct engy_metric *m_gopens;
};

/* Start a step if none is running and there is work (loop thread). */
void ref_kick(struct ref *r);

/* Move queued requests into free active slots (loop thread). */
void ref_admit(struct ref *r);

/* End every request with ENGY_FINISH_ERROR (a failed load or pool). */
void ref_fail_all(struct ref *r, int status, const char *why);

/* Free a request (no callbacks). */
void ref_req_free(struct engy_gen *g);

/* Queue a request (loop thread). */
void ref_enqueue(struct ref *r, struct engy_gen *g);

/* ---- GEMM audit (ref_gemm.c) ---- */

/* The row hook set on the model (step job thread). */
void ref_gemm_hook(void *arg, int layer, const char *name, const uint32_t *idx,
		   const float *in, size_t rows, size_t in_dim,
		   const float *out, size_t out_dim);
/* A traced generate request finished normally: its gemm root, the trace
 * kept, g->gmember set (loop thread, before on_done). */
void ref_gemm_commit_now(struct ref *r, struct engy_gen *g);
/* A replay ended (@rc 0: every row fed): answer the opening (loop). */
void ref_gemm_replay_done(struct ref *r, struct engy_gen *rg, int rc);
/* Whether @pos of replay @rg needs lm_head's row (step job). */
bool ref_gemm_lm_want(const struct engy_gen *rg, uint32_t pos);
/* The sink's first error (replay rows that did not match). */
int ref_gemm_sink_rc(const struct engy_gen *rg);
/* Record @rc (when non-zero and the first) as the sink's error. */
void ref_gemm_sink_fail(struct engy_gen *rg, int rc);
void ref_gemm_sink_free(struct ref_gsink *gs);
void ref_hold_put(struct ref *r, struct ref_hold *h);
/* Options (create): tracing on, the spec root's hex (NULL: computed at
 * load), the hold time and memory cap. */
void ref_gemm_setup(struct ref *r, bool on, const char *spec_hex,
		    int64_t hold_s, int64_t max_bytes);
/* The checkpoint's engy-mc1 model root (the load job). */
int ref_gemm_spec_root(const char *dir, unsigned threads, uint8_t out[32],
		       char *err, size_t errlen);
/* The model is loaded (@rc, @root: ref_gemm_spec_root()'s). */
void ref_gemm_ready(struct ref *r, int rc, const uint8_t root[32],
		    const char *err);
int ref_gemm_start(struct ref *r);
void ref_gemm_destroy(struct ref *r);
/* generate(): note params.gemm_trace. */
void ref_gemm_begin(struct ref *r, struct engy_gen *g,
		    const struct engy_gen_params *q);
/* The ops. */
char *ref_gemm_commit(void *inst, struct engy_gen *g);
int ref_gemm_open(void *inst, const char *rid, const char *challenge,
		  size_t len,
		  void (*done)(void *arg, int rc, const char *json, size_t len),
		  void *arg);

#endif /* REF_H */
