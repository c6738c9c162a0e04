/* SPDX-License-Identifier: MIT */
/*
 * sglang's native HTTP API, the pure part (no I/O): parse the bodies of
 * POST /generate and POST /abort_request, and write the JSON sglang
 * answers with (one object per reply or per SSE event).  The serve role
 * (plugins/role-serve/serve.c) puts it on a transport and a backend; the shapes
 * follow sglang's GenerateReqInput, SamplingParams and tokenizer_manager.
 */
#ifndef ENGY_SGLANG_JSON_H
#define ENGY_SGLANG_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENGY_SGL_MAX_RID	  256 /* bytes of a request id */
#define ENGY_SGL_MAX_STOP_IDS	  1024
#define ENGY_SGL_DEFAULT_MAX_NEW  128 /* sglang's native default */
#define ENGY_SGL_MAX_TOP_LOGPROBS 20  /* engy's backends give at most this */

/* A parsed POST /generate (one prompt; batches are refused). */
struct engy_sgl_gen {
	uint32_t *input_ids; /* malloc'd; NULL when only text */
	size_t n_input;
	char *text; /* the prompt as text, or NULL */
	char *rid;  /* malloc'd, or NULL: none given */
	bool stream;
	bool return_logprob;
	bool return_text_in_logprobs;
	bool return_hidden_states;
	/* top_logprobs_num (0..ENGY_SGL_MAX_TOP_LOGPROBS): alternatives per
	 * output token, with return_logprob (else 0) */
	uint32_t top_logprobs_num;
	/* sampling_params */
	double temperature;	/* 0 = greedy (sglang: < 1e-6) */
	double top_p;		/* (0, 1] */
	int32_t top_k;		/* -1 = whole vocabulary */
	int64_t max_new_tokens; /* ENGY_SGL_DEFAULT_MAX_NEW if unset */
	bool has_max_new_tokens;
	uint32_t *stop_ids; /* malloc'd */
	size_t n_stop;
	uint64_t seed; /* sampling_seed */
	bool has_seed;
	bool ignore_eos;	  /* neither EOS nor stop_token_ids end it */
	bool skip_special_tokens; /* true by default */
	bool no_stop_trim;
	/* sampling_params.json_schema (a JSON schema's text, malloc'd) or
	 * NULL; regex and ebnf are refused */
	char *json_schema;
	/* engy's extension (specs/serve.md, "GEMM audit trace"): keep a
	 * GEMM audit trace and answer with meta_info.gemm */
	bool return_gemm_trace;
};

/*
 * engy_sgl_parse_generate() - parse and check a /generate body.  Returns
 * 0, or -EINVAL with a one-line reason in @err (sent back to the client)
 * for bad JSON, wrong types, out-of-range values, batches, and fields this
 * server cannot honour (they are refused, never silently ignored).
 * -ENOMEM on allocation failure.  Free @out with engy_sgl_gen_free() in
 * every case.
 */
int engy_sgl_parse_generate(const void *body, size_t len,
			    struct engy_sgl_gen *out, char *err, size_t errlen);
void engy_sgl_gen_free(struct engy_sgl_gen *g);

/* A parsed POST /abort_request. */
struct engy_sgl_abort {
	char *rid; /* malloc'd; "" when absent */
	bool abort_all;
};

int engy_sgl_parse_abort(const void *body, size_t len,
			 struct engy_sgl_abort *out, char *err, size_t errlen);
void engy_sgl_abort_free(struct engy_sgl_abort *a);

enum engy_sgl_finish {
	ENGY_SGL_RUNNING = 0, /* finish_reason null */
	ENGY_SGL_STOP = 1,    /* {"type":"stop","matched":ID} */
	ENGY_SGL_LENGTH = 2,  /* {"type":"length","length":N} */
	ENGY_SGL_ABORT = 3,   /* {"type":"abort","message":...} */
};

/* What one response object (or SSE event) says. */
struct engy_sgl_out {
	const char *rid;
	const char *text; /* UTF-8, @text_len bytes */
	size_t text_len;
	const uint32_t *ids; /* output ids so far */
	size_t n_ids;
	int finish;		   /* enum engy_sgl_finish */
	int64_t matched;	   /* ENGY_SGL_STOP: the matched id */
	uint32_t length;	   /* ENGY_SGL_LENGTH: the limit hit */
	const char *abort_message; /* ENGY_SGL_ABORT ("Aborted") */
	int abort_status;	   /* 0: null */
	uint32_t prompt_tokens;
	uint32_t cached_tokens;
	double e2e_latency;	 /* seconds; < 0 leaves it out */
	bool logprobs;		 /* write the logprob lists */
	const float *logprob_v;	 /* @n_ids values, or NULL (nulls) */
	char *const *token_text; /* @n_ids strings, or NULL (nulls) */
	/* output_top_logprobs (with @logprobs, when @top_n > 0): @top_n
	 * alternatives per id, row-major; a logprob NaN writes the
	 * position as null; @top_lp NULL: every position null */
	uint32_t top_n;
	const uint32_t *top_ids;
	const float *top_lp;
	char *const *top_text;	 /* @n_ids * @top_n strings, or NULL */
	uint32_t last_prompt_id; /* input_token_logprobs' one entry */
	bool hidden;		 /* write hidden_states */
	const float *rows;	 /* @n_rows x @hidden_size, row k made
					 * output token k */
	size_t n_rows;
	bool prefill_empty; /* a full prefix-cache hit: output token
					 * 0 has no row, rows[k] made token k+1 */
	uint32_t hidden_size;
	size_t rows_elided; /* the first ones written as [] (a stream's
					 * running event: rows an earlier one had) */
	/* meta_info.gemm: a JSON object's text written as is (the
	 * backend's gemm_commit()), or NULL: none */
	const char *gemm;
};

/*
 * engy_sgl_response() - the object sglang writes for @o:
 *   {"text":..,"output_ids":[..],"meta_info":{"id":..,"finish_reason":..,
 *    "prompt_tokens":..,"completion_tokens":..,"cached_tokens":..,...}}
 * hidden_states is ragged as sglang's: [[row 0], row 1, row 2, ...] (a
 * one-row prefill block, then one row per decode step), or with
 * @prefill_empty [[], row 1, row 2, ...] as sglang after a full cache hit;
 * the first @rows_elided rows are written as [] (each keeps its index).  With @sse the
 * object is framed as one event, "data: {...}\n\n".  Returns a malloc'd
 * NUL-terminated string (*@len bytes), or NULL when out of memory.
 */
char *engy_sgl_response(const struct engy_sgl_out *o, bool sse, size_t *len);

/* engy_sgl_error() - {"error":{"message":@msg}}, SSE-framed with @sse. */
char *engy_sgl_error(const char *msg, bool sse, size_t *len);

/* engy_sgl_model_info() - the /get_model_info object. */
char *engy_sgl_model_info(const char *model_path, const char *tokenizer_path,
			  size_t *len);

/* The SSE end of stream. */
#define ENGY_SGL_SSE_DONE "data: [DONE]\n\n"

#endif /* ENGY_SGLANG_JSON_H */
