/* SPDX-License-Identifier: MIT */
/*
 * One routed request, shared by miner_serve.c (the frames, PREP, GEN,
 * the end), miner_stream.c (chunks) and miner_prove.c (PROVE).
 */
#ifndef ENGY_ROLE_MINER_REQ_H
#define ENGY_ROLE_MINER_REQ_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <engy/host.h>

#include "chat_template.h"
#include "miner_int.h"

enum { MR_PREP = 1, MR_GEN, MR_PROVE };

#define MAX_STOP 8

struct mreq {
	struct mreq *next, **pprev;
	struct miner *m;
	struct engy_ws_conn *conn; /* where to answer; NULL: orphaned */
	unsigned leg;
	char *corr_id;
	char request_id[ENGY_GW_MAX_REQUEST_ID + 1];
	char rid[40];
	cJSON *body;
	struct engy_chat_params p;
	struct engy_chat_info ci;
	bool stream;
	int state;
	bool cancelled; /* no frame may follow */
	bool timed_out;
	bool done; /* the backend's on_done came */
	unsigned busy;
	const char *outcome; /* why it was cancelled */
	int prep_rc;
	char err[400];
	uint32_t *prompt;
	size_t n_prompt;
	/* The output constraint (prep): a JSON schema's text ("" any JSON
	 * object) between a literal prefix and suffix (a forced tool
	 * call's template), or NULL. */
	char *cons_schema;
	const char *cons_prefix, *cons_suffix;
	uint32_t max_new;
	uint32_t stop[MAX_STOP];
	const char *stop_of[MAX_STOP]; /* the buyer's string of an id */
	size_t n_stop;
	/* The buyer's stop strings, matched in the decoded text (one-token
	 * ones too: "\n" inside a longer token): the text ends before the
	 * match, the backend request is cancelled. */
	const char *stop_str[4];
	size_t n_stop_str, stop_max, stop_which;
	char *text; /* decoded output (stream or stop strings) */
	size_t text_len, text_cap, fed;
	size_t stop_at;
	bool stop_hit;
	struct event *stop_ev;
	struct engy_gen *g;
	uint32_t *out;
	size_t n_out, cap_out, n_fold;
	float *lp; /* each output id's logprob (NaN: none), when asked */
	size_t cap_lp;
	/* top_logprobs: r->p.top_logprobs alternatives per output id (ids,
	 * logprobs; NaN: none), given by the backend before the id */
	uint32_t *tlp_ids;
	float *tlp_lp;
	size_t n_tlp, cap_tlp_ids, cap_tlp_lp;
	uint16_t *rows;
	size_t n_rows, cap_rows;
	uint32_t hidden;
	bool rows_bad;
	struct engy_gen_result res;
	char res_err[160];
	bool gemm_on; /* a GEMM trace was asked for */
	char *gemm;   /* the backend's member (gemm_commit()), or NULL */
	struct engy_genstream *gs;
	size_t dec_from;
	char *pc, *pr; /* pending content / reasoning deltas */
	size_t pc_len, pc_cap, pr_len, pr_cap;
	unsigned chunks;
	struct event *flush_ev, *deadline_ev;
	struct timespec t0, t_gen, t_flush;
	double tok_s, ttft_s, gen_s, prove_s;
	char *frame;
	size_t frame_len;
};

/* miner_serve.c: the request is over (counted, logged, freed). */
void mreq_end(struct mreq *r, const char *outcome);
/* An error `response` (unless cancelled), then the end. */
void mreq_fail(struct mreq *r, const char *fmt, ...) ENGY_PRINTF(2, 3);

/* miner_stream.c */
int mreq_stream_start(struct mreq *r);
/* Decode new ids (streams and stop strings), feed the stream's parser;
 * @final: the generation ended.  True when a stop string just matched. */
bool mreq_text(struct mreq *r, bool final);
/* Send what is pending now. */
void mreq_flush(struct mreq *r);
/* Output ids whose text the buyer gets (a matched stop id is not). */
size_t mreq_text_ids(const struct mreq *r);

/* miner_prove.c: prove, parse and frame on the pool, then answer. */
void mreq_prove(struct mreq *r);

#endif /* ENGY_ROLE_MINER_REQ_H */
