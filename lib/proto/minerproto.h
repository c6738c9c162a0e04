/* SPDX-License-Identifier: MIT */
/*
 * The miner link (specs/protocol.md §1-3), the pure part: the leg plan and the
 * gateway URLs, the frames a miner sends (hello, heartbeat, chunk,
 * response) and parses (admit, deny, serve, cancel, ping, reconnect), the
 * sampling fields of a routed OpenAI request, the default worker name and
 * the cheap checkpoint identity.  No I/O but reading a checkpoint
 * directory; a gateway built on engy can use the same code from the other
 * side.  plugins/role-miner/miner*.c puts it on a transport and a backend.
 */
#ifndef ENGY_MINERPROTO_H
#define ENGY_MINERPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "genparse.h"

#define ENGY_GW_MAX_WORKERS    1024 /* a /meta above this is refused */
#define ENGY_GW_MAX_CORR_ID    256  /* bytes of a corr_id we answer */
#define ENGY_GW_MAX_REQUEST_ID 128  /* bytes of an engy_request_id kept */

/* ---- The leg plan (§1) ---- */

/*
 * engy_leg_plan() - which gateway workers to dial and each leg's share of
 * @total: with @total >= @n_workers, every worker at total / n_workers
 * (integer division); with fewer, @total workers chosen at random from
 * @seed (a partial Fisher-Yates shuffle), at 1 each.  @workers (room for
 * @n_workers) receives the chosen worker indices in ascending order.
 * Returns 0, or -EINVAL when @total or @n_workers is 0 or @n_workers is
 * above ENGY_GW_MAX_WORKERS.
 */
int engy_leg_plan(unsigned total, unsigned n_workers, uint64_t seed,
		  unsigned *workers, unsigned *n_legs, unsigned *share);

/*
 * engy_gw_meta_url() - `GET <GW as http(s)>/meta`: ws:// becomes http://,
 * wss:// https://, the query is dropped.  engy_gw_worker_url() - the URL
 * of worker @i: @gw itself when @n_workers is 1, else <GW>/<i> (before
 * any query).  Both return a malloc'd string, or -EINVAL (logged by the
 * caller with @why) for a URL that is not ws:// or wss://, -ENOMEM.
 */
int engy_gw_meta_url(const char *gw, char **out, const char **why);
int engy_gw_worker_url(const char *gw, unsigned i, unsigned n_workers,
		       char **out);

/*
 * engy_gw_meta_parse() - {"workers": N} with N an integer in
 * 1..ENGY_GW_MAX_WORKERS; -EINVAL for anything else (the caller then
 * plans for one worker).
 */
int engy_gw_meta_parse(const char *body, size_t len, unsigned *workers);

/*
 * engy_worker_name() - the default worker name: "ins-" and the first 12
 * hex digits of sha256(host "|" model "|" serve_urls).  @out holds 17.
 */
void engy_worker_name(const char *host, const char *model,
		      const char *serve_urls, char out[17]);

/* engy_hex_id() - 2 * @n lower-case hex digits of fresh random bytes. */
void engy_hex_id(char *out, size_t n);

/* ---- Frames the miner sends (§2) ---- */

struct engy_miner_capacity {
	unsigned max_inflight;	     /* this leg's share */
	unsigned max_inflight_total; /* the miner's whole concurrency */
	uint64_t max_input_tokens;
	uint64_t max_output_tokens;
	double max_request_s;
};

struct engy_miner_hw {
	const char *host;
	unsigned cpus;
	double ram_gb;
	const char *gpu; /* "" when none was found */
	unsigned gpu_count;
	double gpu_mem_gb;	 /* per GPU */
	const char *gpus;	 /* "4x NVIDIA GeForce RTX 4090" */
	const char *parallelism; /* NULL: left out */
};

struct engy_miner_hello {
	const char *miner_key;
	const char *model;
	const char *model_root;
	const struct engy_miner_hw *hw;
	const char *const *versions; /* name, value, ..., NULL */
	struct engy_miner_capacity cap;
	const char *worker_name;
	const char *instance_id;
	const char *worker_id;
	/* "constraints" (left out when 0): bit 1 "json_schema", bit 2
	 * "tool_call", bit 4 "top_logprobs" (ENGY_API_CONS_JSON,
	 * ENGY_API_CONS_TOOL, ENGY_API_CONS_TOPLP) */
	unsigned constraints;
};

/*
 * Each builder returns a malloc'd NUL-terminated JSON text (its length in
 * *@len) or NULL when out of memory.
 */
char *engy_miner_hello_json(const struct engy_miner_hello *h, size_t *len);
char *engy_miner_heartbeat_json(unsigned inflight, double idle_seconds,
				const struct engy_miner_capacity *cap,
				size_t *len);
/* A chunk; @reasoning (may be NULL or empty) rides as
 * delta.reasoning_content, content as delta.content when not empty. */
char *engy_miner_chunk_json(const char *corr_id, const char *content,
			    size_t content_len, const char *reasoning,
			    size_t reasoning_len, size_t *len);
/* The failure form of `response`: commitment null, output {}, error. */
/* {"type":"cancelled","corr_id":…}: a cancelled request's slot is free. */
char *engy_miner_cancelled_json(const char *corr_id, size_t *len);
char *engy_miner_error_json(const char *corr_id, const char *request_id,
			    const char *error, size_t *len);
/* {"type":"gemm_opening","corr_id":…,"opening":{…}} with @opening (a JSON
 * object's text, not checked), else {…,"error":@error}. */
char *engy_miner_gemm_opening_json(const char *corr_id, const char *opening,
				   size_t olen, const char *error, size_t *len);

/* What a successful `response` carries. */
struct engy_miner_result {
	const char *corr_id;
	const char *request_id;
	const char *model_root;
	/* The ids the serve was fed plus any leading output ids folded into
	 * the prompt, and the output ids the proof covers (one row each). */
	const uint32_t *prompt_ids;
	size_t n_prompt_ids;
	const uint32_t *output_ids;
	size_t n_output_ids;
	/* commitment[scheme] = the proof plugin's JSON object, with
	 * prompt_ids added; null where proofs[i] is NULL (the proof could
	 * not be built). */
	const char *const *schemes;
	const char *const *proofs;
	size_t n_schemes;
	const struct engy_gen_msg *msg;
	const char *finish_reason;
	/* The buyer's stop string that ended the answer (choices[0].
	 * matched_stop, sglang's name), NULL when none did. */
	const char *matched_stop;
	/* choices[0].logprobs when asked for: {"content":[{token, logprob,
	 * bytes, top_logprobs: [{token, logprob, bytes, id}, …]}, …]}
	 * (borrowed; NULL: null). */
	const cJSON *logprobs;
	uint32_t prompt_tokens;	    /* as fed, before any folding */
	uint32_t completion_tokens; /* every generated token */
	uint32_t cached_tokens;	    /* 0: no prompt_tokens_details */
	/* commitment["gemm"] when @has_gemm: the GEMM trace member (a JSON
	 * object's text), NULL for null; absent when !@has_gemm. */
	bool has_gemm;
	const char *gemm;
};

/* engy_miner_response_json() - NULL on ENOMEM or a proof that is not a
 * JSON object (-EINVAL in *@rc). */
char *engy_miner_response_json(const struct engy_miner_result *r, size_t *len,
			       int *rc);

/* ---- Frames the miner reads (§2) ---- */

enum engy_gw_type {
	ENGY_GW_UNKNOWN = 0, /* ignored (forward compatibility) */
	ENGY_GW_ADMIT,
	ENGY_GW_DENY,
	ENGY_GW_SERVE,
	ENGY_GW_CANCEL,
	ENGY_GW_PING,
	ENGY_GW_RECONNECT,
	ENGY_GW_GEMM_OPEN, /* a GEMM audit's challenge (specs/protocol.md) */
};

struct engy_gw_frame {
	int type;	       /* enum engy_gw_type */
	const char *type_name; /* borrowed from @root */
	const char *corr_id;   /* serve, cancel, gemm_open; borrowed */
	const char *reason;    /* deny; borrowed, may be NULL */
	cJSON *request;	       /* serve: detach it to keep it */
	bool stream;
	/* serve: why the frame cannot run (answered with an error
	 * response), or NULL; gemm_open: likewise (an error opening). */
	const char *bad;
	/* gemm_open: the request it opens and the challenge (borrowed) */
	const char *request_id;
	const cJSON *challenge;
	cJSON *root;
};

/*
 * engy_gw_frame_parse() - one text message.  Returns 0, or -EINVAL with a
 * reason in @err for a message that is not a JSON object with a string
 * "type", or a serve / cancel without a usable corr_id (nothing can be
 * answered), -ENOMEM.  A serve whose request is unusable parses (with
 * @bad set) so the caller can answer it.  Free with engy_gw_frame_free().
 */
int engy_gw_frame_parse(const char *data, size_t len, struct engy_gw_frame *f,
			char *err, size_t errlen);
void engy_gw_frame_free(struct engy_gw_frame *f);

/* The sampling fields of a routed OpenAI chat body. */
struct engy_chat_params {
	uint64_t max_tokens; /* max_completion_tokens, else max_tokens */
	bool has_max_tokens;
	double temperature; /* 1 when absent (OpenAI) */
	double top_p;	    /* 1 when absent */
	int32_t top_k;	    /* 0 (off) when absent */
	uint64_t seed;
	bool has_seed;
	const char *request_id; /* engy_request_id, borrowed, or NULL */
	const char *stop[4];	/* stop strings, borrowed */
	size_t n_stop;
	bool logprobs; /* "logprobs": true: each output token's logprob */
	/* "top_logprobs" (0..ENGY_CHAT_TOP_LOGPROBS_MAX): alternatives per
	 * output token; 0 unless logprobs */
	uint32_t top_logprobs;
};

#define ENGY_CHAT_TOP_LOGPROBS_MAX 20u

/*
 * engy_chat_params_parse() - read and check those fields of @req.
 * Returns 0, or -EINVAL with a one-line reason naming the field (n other
 * than 1, a max_tokens under 1, values out of OpenAI's ranges, wrong
 * types).
 */
int engy_chat_params_parse(const cJSON *req, struct engy_chat_params *p,
			   char *err, size_t errlen);

#endif /* ENGY_MINERPROTO_H */
