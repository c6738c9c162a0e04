/* SPDX-License-Identifier: MIT */
/*
 * Backend kind: turns token ids into tokens plus per-token final hidden
 * states (after the final norm: the input of lm_head), and re-runs
 * prompt+output for an auditor (backend-sglang over HTTP, backend-ref in
 * process).  Everything is asynchronous: calls return at once, callbacks
 * come on the loop thread; heavy compute runs on the worker pool or in the
 * serve.
 */
#ifndef ENGY_BACKEND_H
#define ENGY_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <engy/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct engy_gen; /* one request in flight; the backend's own */

struct engy_model_info {
	uint32_t size;	/* sizeof(struct engy_model_info) */
	char name[128]; /* served model name */
	char path[512]; /* checkpoint directory, may be "" */
	uint32_t hidden_size;
	uint32_t vocab_size;
	uint32_t max_context; /* prompt + output tokens */
	uint32_t eos_ids[4];  /* 0-terminated unless all 4 set */
	/* appended in 1.1: the serves behind the backend, "," between
	 * them ("" for an in-process engine); check @size. */
	char serve_urls[1024];
	/* appended in 1.2: the output constraints generate() enforces,
	 * ENGY_BACKEND_CONS_* bits (0: none); check @size. */
	uint32_t constraints;
	/* appended in 1.4: what else generate() can do, ENGY_BACKEND_CAP_*
	 * bits (0: nothing more); check @size. */
	uint32_t caps;
};

/* generate() takes cons_schema (engy_gen_params, 1.2). */
#define ENGY_BACKEND_CONS_JSON 1u
/* ... and cons_prefix / cons_suffix around it (a forced tool call). */
#define ENGY_BACKEND_CONS_AFFIX 2u
/* generate() gives top_logprobs alternatives (engy_gen_params, 1.4). */
#define ENGY_BACKEND_CAP_TOP_LOGPROBS 1u

enum engy_finish {
	ENGY_FINISH_STOP = 1,	/* EOS or a stop id */
	ENGY_FINISH_LENGTH = 2, /* max_new_tokens or context */
	ENGY_FINISH_ABORT = 3,	/* cancelled */
	ENGY_FINISH_ERROR = 4,
};

/**
 * struct engy_gen_params - one generation request (borrowed for the call).
 * @temperature: 0 = greedy.  @top_k: 0 = off.  @top_p: 1 = off.
 * @seed/@has_seed: sampling seed (deterministic given the same batch).
 * @stop_ids: ids that end generation (EOS ids always do).
 * @rid: request id the backend passes to its serve (abort uses it).
 * @ignore_eos: appended in 1.3 (check @size): neither EOS nor @stop_ids end the
 *	generation, only max_new_tokens or the context (sglang's
 *	sampling_params.ignore_eos).
 * @top_logprobs, @on_top_logprobs: appended in 1.4; read both only when
 *	@size is at least ENGY_GEN_PARAMS_SIZE_1_4 (a 1.3 caller's struct
 *	ends at 128 bytes, and @top_logprobs sits in what was its padding).  When
 *	@top_logprobs is 1..ENGY_TOP_LOGPROBS_MAX and @on_top_logprobs is
 *	set, the backend calls @on_top_logprobs with the same @arg
 *	generate() got, immediately before each on_tokens, with the
 *	alternatives of exactly those ids: @k = min(@top_logprobs, vocab)
 *	per id, row-major (@ids[i * k + j], @logprobs[i * k + j]), each
 *	row sorted by logprob descending (ties: lower id first).  The
 *	logprobs are of the same distribution the sampled token's logprob
 *	(on_tokens' @logprobs) is taken from: the log-softmax of the raw
 *	logits, before temperature, top_k and top_p (a constraint's mask,
 *	where one applies, is part of the logits: an alternative it
 *	masked out is -INFINITY).  An alternative a backend does not have
 *	is logprob NaN, id 0.  A backend that cannot
 *	give alternatives leaves on_top_logprobs uncalled (it also tells
 *	by ENGY_BACKEND_CAP_TOP_LOGPROBS in engy_model_info.caps).  Above
 *	ENGY_TOP_LOGPROBS_MAX: generate() returns -EINVAL.
 */
struct engy_gen_params {
	uint32_t size; /* sizeof(struct engy_gen_params) */
	const uint32_t *input_ids;
	size_t n_input;
	uint32_t max_new_tokens;
	double temperature;
	double top_p;
	int32_t top_k;
	uint64_t seed;
	bool has_seed;
	bool return_hidden;
	bool return_logprobs;
	const uint32_t *stop_ids;
	size_t n_stop;
	const char *rid;
	/*
	 * appended in 1.2 (check @size): constrained decoding, for a backend
	 * whose info() has ENGY_BACKEND_CONS_JSON.  @cons_schema: NULL for
	 * none, else the text of a JSON schema (lib/constrain's subset; ""
	 * for any JSON object) the output must match, between the literal
	 * texts @cons_prefix and @cons_suffix (NULL: none; a forced tool
	 * call's template).  Only sampling is masked: hidden states stay
	 * the model's.  A stop or EOS id ends the output only where the
	 * constraint is complete.  A schema the backend cannot compile:
	 * -EINVAL.
	 */
	const char *cons_schema;
	const char *cons_prefix;
	const char *cons_suffix;
	/* appended in 1.3 (check @size): see @ignore_eos above. */
	bool ignore_eos;
	/* appended in 1.4 (check @size covers @on_top_logprobs): see above. */
	uint32_t top_logprobs;
	void (*on_top_logprobs)(void *arg, size_t n, uint32_t k,
				const uint32_t *ids, const float *logprobs);
	/*
	 * appended in 1.4 (read only when @size is at least
	 * ENGY_GEN_PARAMS_SIZE_1_4): keep a GEMM audit trace of this
	 * request (specs/gemm-audit.md): the backend commits to every audited
	 * matrix multiply's rows, gemm_commit() gives the commitment in
	 * on_done and gemm_open() answers a challenge for a while after.  A
	 * backend without the ops, or that cannot trace this request, ignores
	 * it (gemm_commit() then gives NULL); the request is served all the
	 * same.
	 */
	bool gemm_trace;
};

/* The most alternatives per token (OpenAI's top_logprobs bound). */
#define ENGY_TOP_LOGPROBS_MAX 20u

/* A 1.4 struct engy_gen_params: @size at least this. */
#define ENGY_GEN_PARAMS_SIZE_1_4                                               \
	(offsetof(struct engy_gen_params, gemm_trace) +                        \
	 sizeof(((struct engy_gen_params *)0)->gemm_trace))

struct engy_gen_result {
	int status;	      /* 0 or a negative errno */
	const char *error;    /* short text when status != 0 */
	int finish;	      /* enum engy_finish */
	int32_t matched_stop; /* the stop id that ended it, or -1 */
	uint32_t prompt_tokens;
	uint32_t completion_tokens;
	uint32_t cached_tokens;
};

/**
 * struct engy_gen_cb - what a backend calls back (loop thread).
 * @on_tokens: new output tokens, in order; @rows (dtype F32, one row per
 *     id, n_prefill 0) when hidden states were asked for, else NULL;
 *     @logprobs one per id or NULL.  May come once or many times.  Row k
 *     is the final hidden state whose logits chose token k.  One
 *     exception: after a full prefix-cache hit a serve has no row for
 *     output token 0; it then comes alone with @rows NULL even though
 *     rows were asked for, and the caller folds that id into the prompt
 *     it proves (specs/protocol.md §4).
 * @on_done: exactly once, last; the handle is dead after it returns.
 */
struct engy_gen_cb {
	void (*on_tokens)(void *arg, const uint32_t *ids, size_t n,
			  const struct engy_rows *rows, const float *logprobs);
	void (*on_done)(void *arg, const struct engy_gen_result *res);
};

struct engy_backend_ops {
	uint32_t size; /* sizeof(struct engy_backend_ops) */

	/*
	 * info() - the served model.  Required.  -EAGAIN: not known yet
	 * (a serve that has not answered); @out->serve_urls (1.1) is
	 * filled all the same when @out->size covers it.
	 */
	int (*info)(void *inst, struct engy_model_info *out);

	/**
	 * generate() - start a request.  On 0, @cb will be called and
	 * *@out names the request for cancel() until on_done.  Required.
	 */
	int (*generate)(void *inst, const struct engy_gen_params *p,
			const struct engy_gen_cb *cb, void *arg,
			struct engy_gen **out);

	/**
	 * cancel() - stop a request (and abort it at the serve); on_done
	 * still comes, once, with ENGY_FINISH_ABORT.  Required.
	 */
	void (*cancel)(void *inst, struct engy_gen *g);

	/**
	 * prefill() - the final hidden state of every position of @ids
	 * (an auditor's recompute of prompt + output).  @done gets the rows
	 * (borrowed for the call) or a negative errno.  Optional.
	 */
	int (*prefill)(void *inst, const uint32_t *ids, size_t n,
		       void (*done)(void *arg, int rc,
				    const struct engy_rows *rows),
		       void *arg, struct engy_gen **out);

	/* ---- appended in 1.4 (check @size); optional ---- */

	/**
	 * gemm_commit() - the GEMM audit member of a request started with
	 * params.gemm_trace, called from its on_done (the handle is still
	 * alive there): malloc'd JSON text, one object
	 *   {"hashing":"engy-ga1","gemm_root":"<hex>","spec_root":"<hex>",
	 *    "n_prompt":N,"n_tokens":M,"sampling":"<hex>","rid":"<rid>"}
	 * (specs/gemm-audit.md), or NULL when there is none (not asked,
	 * not finished normally, evicted, the serve did not offer one).
	 * "rid" names the kept trace for gemm_open().  The caller frees it.
	 */
	char *(*gemm_commit)(void *inst, struct engy_gen *g);

	/**
	 * gemm_open() - answer a challenge (@challenge: JSON text
	 * {"nonce":"<hex>","cells":[[layer,pos],...]}, untrusted) against the
	 * trace gemm_commit() named @rid.  0: @done comes once, on the loop
	 * thread, with 0 and the opening JSON (borrowed for the call) or a
	 * negative errno and NULL: -ENOENT no such trace (never kept, expired
	 * or evicted), -EINVAL a malformed challenge, -EBADMSG the rows the
	 * backend re-derived do not match its commitment (an internal error),
	 * -ECANCELED shutting down.  A negative return: @done never comes.
	 */
	int (*gemm_open)(void *inst, const char *rid, const char *challenge,
			 size_t len,
			 void (*done)(void *arg, int rc, const char *json,
				      size_t len),
			 void *arg);
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_BACKEND_H */
