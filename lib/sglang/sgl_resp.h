/* SPDX-License-Identifier: MIT */
/*
 * Streaming parser of one sglang /generate response object (or one SSE
 * event of a streamed one).  Bytes go in as they arrive, in any split;
 * nothing but the fields engy reads is kept, so there is no DOM:
 *
 *  - meta_info.hidden_states, a ragged list (element 0 may be a 2-D
 *    prefill block, later elements are 1-D decode rows), is converted row
 *    by row into float32 and handed to a callback; a 2-D element yields
 *    only its last row unless every row is asked for; elements below
 *    skip_elems (rows already taken from an earlier cumulative event) are
 *    skipped by bracket counting, never converted;
 *  - output_ids, meta_info.output_token_logprobs ([logprob, id, text]
 *    entries), meta_info.{prompt,completion,cached}_tokens and
 *    meta_info.finish_reason {type, matched, message};
 *  - when asked (top_n > 0), meta_info.output_top_logprobs: per output
 *    position null or a list of at most top_n [logprob, id, text];
 *  - error messages: {"error": {"message": ...}}, {"error": "..."} and a
 *    top-level "message" or "detail" string.
 *
 * Everything else is checked for JSON syntax and dropped.  Numbers are
 * converted exactly (correctly rounded to float); inside hidden-state rows
 * NaN, Infinity, -Infinity and null (NaN) are accepted, as Python's json
 * and orjson write non-finite values.
 */
#ifndef ENGY_SGL_RESP_H
#define ENGY_SGL_RESP_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENGY_SGLRESP_NUM_MAX   800 /* longest number accepted */
#define ENGY_SGLRESP_MSG_MAX   256 /* messages are cut to this */
#define ENGY_SGLRESP_MAX_DEPTH 32

enum engy_sglresp_finish {
	ENGY_SGLRESP_FINISH_NONE = 0, /* absent or null: still running */
	ENGY_SGLRESP_FINISH_STOP = 1,
	ENGY_SGLRESP_FINISH_LENGTH = 2,
	ENGY_SGLRESP_FINISH_ABORT = 3,
	ENGY_SGLRESP_FINISH_OTHER = 4,
};

struct engy_sglresp_opts {
	uint32_t skip_elems; /* hidden_states elements not converted */
	bool all_block_rows; /* every row of a 2-D element, not its last */
	uint32_t max_width;  /* floats per row at most (0: 1 << 20) */
	size_t max_ids;	     /* output ids / logprobs at most (0: 1 << 24) */
	/* A converted row (borrowed); non-zero stops the parse with it. */
	int (*on_row)(void *arg, uint32_t elem, uint32_t row, const float *v,
		      uint32_t width);
	void *arg;
	/* output_top_logprobs: alternatives per position at most (more:
	 * -E2BIG; at most ENGY_SGLRESP_TOP_MAX); 0: the list is skipped */
	uint32_t top_n;
};

#define ENGY_SGLRESP_TOP_MAX 64
/*
 * meta_info.gemm, engy's GEMM audit extension (specs/serve.md): a flat
 * object read leniently, so that a serve's malformed member never fails
 * the response: a value of the wrong shape sets @bad, strings longer than
 * their buffer allow set @bad, other members are dropped.
 * engy_sglresp_gemm_json() checks it and writes it canonically.
 */
#define ENGY_SGLRESP_GEMM_RID_MAX 256
struct engy_sglresp_gemm {
	bool present; /* meta_info had a non-null "gemm" */
	bool bad;     /* ... that is not an object of the expected members */
	char hashing[18];
	char gemm_root[66], spec_root[66], sampling[66];
	char rid[ENGY_SGLRESP_GEMM_RID_MAX + 2];
	int64_t n_prompt, n_tokens; /* -1: absent */
};

struct engy_sglresp_resp {
	bool has_meta;
	bool has_output_ids;
	bool has_logprobs;
	bool has_hidden; /* meta_info.hidden_states was a list */
	bool has_error;	 /* an "error" member was present */
	uint32_t *ids;	 /* output_ids */
	size_t n_ids;
	float *lp;	  /* output_token_logprobs: logprob (null: NaN) */
	uint32_t *lp_ids; /* ... and token id */
	size_t n_lp;
	/* output_top_logprobs (top_n > 0): @n_top positions, each
	 * @top_cnt[i] alternatives (0: null or []) at @top_lp/@top_ids
	 * [i * top_n ...] (logprob null: NaN) */
	bool has_top;
	float *top_lp;
	uint32_t *top_ids;
	uint8_t *top_cnt;
	size_t n_top;
	int64_t prompt_tokens; /* -1 when absent */
	int64_t completion_tokens;
	int64_t cached_tokens;
	int finish;	 /* enum engy_sglresp_finish */
	int64_t matched; /* the stop token id; -1: none, or a string */
	char finish_msg[ENGY_SGLRESP_MSG_MAX];
	char error[ENGY_SGLRESP_MSG_MAX]; /* error message, "" when none */
	uint32_t n_elems;    /* hidden_states elements, skipped ones too */
	bool elem0_block;    /* element 0 was 2-D (or empty) */
	uint32_t elem0_rows; /* its rows (0: an empty prefill block) */
	uint32_t width;	     /* floats per converted row (0: none yet) */
	struct engy_sglresp_gemm gemm;
};

struct engy_jf;

/* engy_sglresp_new() - a parser ready for a document; @o is copied. */
int engy_sglresp_new(const struct engy_sglresp_opts *o, struct engy_jf **out);
void engy_sglresp_free(struct engy_jf *j);

/* engy_sglresp_reset() - start a new document (keeps buffers); @o may change. */
void engy_sglresp_reset(struct engy_jf *j, const struct engy_sglresp_opts *o);

/*
 * engy_sglresp_feed() - parse @n more bytes.  Returns 0, -EBADMSG (not JSON,
 * or not shaped like a /generate response), -E2BIG (a limit), -ENOMEM, or
 * what on_row returned; errors are sticky.
 */
int engy_sglresp_feed(struct engy_jf *j, const char *p, size_t n);

/* engy_sglresp_finish() - the input ended: 0 when one whole object was read. */
int engy_sglresp_finish(struct engy_jf *j);

/* The fields read so far (complete after a successful finish). */
const struct engy_sglresp_resp *engy_sglresp_resp(const struct engy_jf *j);

/* Why feed or finish failed ("" when they did not), and where. */
const char *engy_sglresp_error(const struct engy_jf *j);
size_t engy_sglresp_offset(const struct engy_jf *j);

/*
 * engy_sglresp_gemm_json() - the member @g as canonical JSON text
 * (malloc'd): {"hashing":"engy-ga1","gemm_root":hex,"spec_root":hex,
 * "n_prompt":N,"n_tokens":M,"sampling":hex,"rid":R}.  -EBADMSG with the
 * reason in @why when it is absent, not of that shape, hashing is not
 * engy-ga1, a root or the sampling hash is not 64 lowercase hex digits,
 * 0 < n_prompt <= n_tokens < 2^31 fails, or the rid is empty or not
 * printable ASCII without quotes or backslashes; -ENOMEM.
 */
int engy_sglresp_gemm_json(const struct engy_sglresp_gemm *g, char **out,
			   const char **why);

/*
 * engy_sglresp_parse_float() - the whole of @s (@len bytes) as one JSON number,
 * correctly rounded to float.  Returns 0, -EINVAL or -E2BIG.
 */
int engy_sglresp_parse_float(const char *s, size_t len, float *out);

#endif /* ENGY_SGL_RESP_H */
