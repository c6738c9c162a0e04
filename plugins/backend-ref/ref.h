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
};

struct ref;

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
};

/* Start a step if none is running and there is work (loop thread). */
void ref_kick(struct ref *r);

/* Move queued requests into free active slots (loop thread). */
void ref_admit(struct ref *r);

/* End every request with ENGY_FINISH_ERROR (a failed load or pool). */
void ref_fail_all(struct ref *r, int status, const char *why);

/* Free a request (no callbacks). */
void ref_req_free(struct engy_gen *g);

#endif /* REF_H */
