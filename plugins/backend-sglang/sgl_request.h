/* SPDX-License-Identifier: MIT */
/*
 * The pure rules of driving an sglang serve (specs/protocol.md §4), apart from
 * any I/O so the unit tests can pin them: /generate bodies, how a long
 * generation is cut into calls with the one-token overlap, how a call's
 * cumulative (or incremental) lists and hidden-state elements line up
 * with kept output tokens, and what an error from the serve becomes.
 */
#ifndef SGL_REQUEST_H
#define SGL_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The error a request fails with when the serve sends no hidden states. */
#define SGL_NO_HIDDEN_MSG                                                      \
	"serve returned no hidden states: start sglang with "                  \
	"--enable-return-hidden-states (check: curl -s SERVE/generate "        \
	"-d '{\"input_ids\":[1],\"return_hidden_states\":true}')"

struct sgl_sampling {
	double temperature; /* 0: greedy */
	double top_p;	    /* 1: off */
	int32_t top_k;	    /* 0: off */
	uint64_t seed;
	bool has_seed;
	const uint32_t *stop;
	size_t n_stop;
	const char *json_schema; /* sampling_params.json_schema, or NULL */
	bool ignore_eos;
};

/* One /generate call: input_ids = prompt then out[0..n_out). */
struct sgl_call_spec {
	const uint32_t *prompt;
	size_t n_prompt;
	const uint32_t *out;
	size_t n_out;
	uint32_t ask; /* max_new_tokens */
	const struct sgl_sampling *sp;
	const char *rid;
	bool stream;
	bool hidden;
	bool logprob;
	uint32_t top_n;	    /* top_logprobs_num, with logprob */
	bool all_positions; /* logprob_start_len 0: no cache hit,
					 * the prefill block covers all */
	bool gemm_trace;    /* engy's return_gemm_trace (specs/serve.md) */
};

/* sgl_body_generate() - the JSON body (malloc'd, *@len bytes), or NULL. */
char *sgl_body_generate(const struct sgl_call_spec *c, size_t *len);
/* sgl_body_abort() - {"rid": @rid}. */
char *sgl_body_abort(const char *rid, size_t *len);

/* sgl_rid_ok() - printable ASCII without quotes or backslashes, 1..128. */
bool sgl_rid_ok(const char *rid);

/*
 * The next call of a generation that has kept @n_out of @max_new tokens.
 * A continuation (n_out > 0) with greedy sampling re-sends the prompt and
 * all but the last kept token, asks one token more than it keeps, and
 * drops the first (the last kept token, regenerated), so every kept row
 * is a decode row.  A sampled continuation cannot count on regenerating
 * the same token: it sends every kept token and keeps all it gets.
 */
struct sgl_chunk {
	size_t feed_out; /* kept tokens sent after the prompt */
	uint32_t ask;	 /* max_new_tokens of the call */
	uint32_t drop;	 /* leading call tokens not kept */
};

/* Returns 0 and fills @c, or 1 when nothing is left to ask for. */
int sgl_plan_chunk(size_t n_out, uint32_t max_new, uint32_t gen_chunk,
		   bool greedy, struct sgl_chunk *c);

/*
 * sgl_chunk_more() - whether another call follows one that returned @got
 * tokens of @ask and ended with finish_reason @finish (ENGY_SGLRESP_FINISH_*),
 * with @n_out of @max_new kept: only a call cut by length that returned
 * all it was asked for, while the budget lasts.
 */
bool sgl_chunk_more(int finish, size_t got, uint32_t ask, size_t n_out,
		    uint32_t max_new);

/*
 * sgl_list_new_from() - where the new entries of a list in one event
 * start.  @have entries are known; the event holds @n; the serve counts
 * @total tokens (completion_tokens, -1 when absent).  sglang's default
 * events are cumulative (new entries start at @have); with
 * --incremental-streaming-output they are deltas (all new).  Returns -1
 * when neither fits (the list shrank).
 */
long sgl_list_new_from(size_t have, size_t n, int64_t total);

/*
 * sgl_take() - how many of a call's tokens can be consumed now (the new
 * "taken" count): every kept token needs its id, its hidden row when
 * rows are asked for, and its logprob when the serve sends them; kept
 * tokens stop at @room.  The pass-through is SIZE_MAX for what is not
 * needed.
 */
struct sgl_avail {
	size_t ids;
	size_t rows; /* hidden elements known */
	size_t lps;
	size_t taken; /* call tokens consumed so far */
	uint32_t drop;
	size_t room; /* kept tokens still allowed */
};

size_t sgl_take(const struct sgl_avail *a);

/*
 * sgl_error_text() - the error a failed call becomes, from its HTTP
 * status and the serve's message ("" when none): hidden-state refusals
 * become SGL_NO_HIDDEN_MSG.  Writes at most @cap bytes.
 */
void sgl_error_text(long status, const char *msg, char *out, size_t cap);

#endif /* SGL_REQUEST_H */
