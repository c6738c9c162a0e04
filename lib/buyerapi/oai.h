/* SPDX-License-Identifier: MIT */
/*
 * The buyer API, OpenAI side (specs/buyer-api.md): POST
 * /v1/chat/completions parsed and checked into the request the miner
 * protocol carries (an OpenAI chat body, specs/protocol.md §2 `serve`), and the
 * miner's output (`chunk` deltas, the `response` frame's output) rendered
 * back as a chat.completion or a chat.completion.chunk stream.  Also the
 * types both buyer APIs share: the internal request, the model's limits,
 * the parsed miner output, and the /v1/models rendering.
 *
 * Errors: functions return 0 or a negative errno with a one-line reason
 * in @err that names the offending field ("messages[2].role: ...");
 * engy_api_status() turns the errno into the HTTP status to answer with.
 * Nothing here logs or keeps buyer content.
 */
#ifndef ENGY_OAI_H
#define ENGY_OAI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "apierr.h"
#include "sse_out.h"

/* Longest model name, tool name, id accepted from a buyer. */
#define ENGY_API_MAX_NAME 256
/* At most this many stop strings (the miner's limit). */
#define ENGY_API_MAX_STOP 4

/* Limits that do not depend on the model (the gateway's settings). */
struct engy_api_limits {
	size_t max_body_bytes; /* a larger body: -E2BIG (413); 0: none */
	size_t max_messages;   /* 0: no limit */
	size_t max_tools;      /* 0: no limit */
};

/* What the model spec allows (engy_api_req_apply). */
struct engy_api_model {
	uint64_t max_output_tokens; /* a larger max_tokens: 400; 0: none */
	/* The cap sent when the buyer gave none (OpenAI makes it optional);
	 * 0: max_output_tokens. */
	uint64_t default_max_tokens;
};

/* Which OpenAI route a request came in on (lib/buyerapi/resp.h): the
 * chat body the miner gets is the same, the rendering differs. */
enum engy_api_route {
	ENGY_ROUTE_CHAT = 0,	/* /v1/chat/completions, /v1/messages */
	ENGY_ROUTE_RESPONSES,	/* /v1/responses */
	ENGY_ROUTE_COMPLETIONS, /* /v1/completions */
};

/* One buyer request, either API, as the miner will get it. */
struct engy_api_req {
	enum engy_api api;
	enum engy_api_route route;
	char *model; /* as the buyer named it */
	/*
	 * The OpenAI chat body for the `serve` frame: messages (roles
	 * system/user/assistant/tool, text only), max_tokens, temperature,
	 * top_p, top_k, seed, stop, tools, tool_choice, chat_template_kwargs.
	 * Owned; the gateway adds engy_request_id before sending it.
	 */
	cJSON *body;
	bool stream;
	bool include_usage; /* OpenAI stream_options.include_usage */
	bool logprobs;	    /* OpenAI logprobs: true (the sampled token's) */
	uint32_t
		top_logprobs; /* alternatives per token (0..20), with logprobs */
	/* Reasoning reaches the buyer: always on OpenAI
	 * (reasoning_content); on Anthropic only when thinking was asked. */
	bool show_reasoning;
	bool has_max_tokens;	      /* the buyer named a cap */
	uint64_t max_tokens;	      /* that cap; after apply, the one sent */
	const char *max_tokens_field; /* static: the field it came in */
	size_t n_messages;
	size_t n_tools;
	/*
	 * The output constraint, ENGY_API_CONS_* bits (specs/buyer-api.md
	 * "Structured outputs and forced tool calls"); every API's parser
	 * sets it through engy_api_set_format() and
	 * engy_api_check_forced_tool().  The body carries what it
	 * constrains to: "response_format" in OpenAI's shape for JSON,
	 * "tools" and "tool_choice" for a forced call.
	 */
	unsigned constraint;
};

/* The output is JSON: body.response_format is {"type":"json_object"} or
 * {"type":"json_schema","json_schema":{"name","schema","strict":true}}. */
#define ENGY_API_CONS_JSON 1u
/* The output is a tool call: body.tool_choice is "required" or names a
 * function of body.tools; its arguments match that tool's parameters. */
#define ENGY_API_CONS_TOOL 2u
/* Not an output constraint but routed the same way: the answer carries
 * top_logprobs alternatives (body.top_logprobs > 0); only workers whose
 * hello lists "top_logprobs" get it. */
#define ENGY_API_CONS_TOPLP 4u

/* The most top_logprobs alternatives per token (OpenAI's bound). */
#define ENGY_API_TOP_LOGPROBS_MAX 20u

/*
 * engy_api_logprobs_name() - name each top_logprobs alternative of the
 * checked entries @content (engy_api_result.logprobs, cast: the caller
 * owns the frame) by its "id" with @decode (a tokenizer: a malloc'd text
 * of @len bytes), replacing the miner's "token" and "bytes".  Returns 0,
 * -EINVAL (an alternative without an id), what @decode returned (-ERANGE:
 * an id out of the vocabulary) or -ENOMEM; then drop the logprobs.
 */
int engy_api_logprobs_name(cJSON *content,
			   int (*decode)(void *arg, uint32_t id, char **text,
					 size_t *len),
			   void *arg);

void engy_api_req_free(struct engy_api_req *req);

/*
 * engy_api_req_apply() - the model's limits, once the gateway has found
 * the model req->model names: a buyer cap above max_output_tokens is
 * refused (-EINVAL, 400); a missing one becomes default_max_tokens.  The
 * body's max_tokens is the cap the miner gets.
 */
int engy_api_req_apply(struct engy_api_req *req, const struct engy_api_model *m,
		       char *err, size_t errlen);

/*
 * engy_api_status() - the HTTP status for a parse or render errno:
 * -EINVAL 400, -EACCES 401, -E2BIG 413, -ENOENT 404, -EPROTO 502 (a
 * miner's output that cannot be rendered), else 500.
 */
int engy_api_status(int rc);

/*
 * engy_api_key() - the buyer's key from the request headers (NULL when
 * absent): "Authorization: Bearer KEY" (either API; the scheme is
 * case-insensitive), else "x-api-key: KEY" (Anthropic's; accepted on
 * both).  *@key points into the header, *@len is its length.  Returns 0,
 * or -EACCES (401) with a reason: no key, or an Authorization that is not
 * Bearer.
 */
int engy_api_key(const char *authorization, const char *x_api_key,
		 const char **key, size_t *len, char *err, size_t errlen);

/*
 * engy_oai_parse() - a /v1/chat/completions body (@len bytes, need not be
 * NUL-terminated) into @req.  Unknown fields are ignored; fields engy
 * cannot honour (n > 1, logprobs, non-text parts, a response_format schema
 * outside lib/constrain's subset, custom tools) are refused.  Returns 0, -EINVAL, -E2BIG or -ENOMEM;
 * @req is empty (engy_api_req_free-able) on failure too.
 */
int engy_oai_parse(const char *json, size_t len,
		   const struct engy_api_limits *lim, struct engy_api_req *req,
		   char *err, size_t errlen);

/* ---- The miner's output (specs/protocol.md §2 `response`) ---- */

struct engy_api_call {
	char *id;
	char *name;
	char *arguments; /* JSON text of an object */
};

struct engy_api_result {
	const char *content; /* borrowed from the output; never NULL */
	size_t content_len;
	const char *reasoning; /* borrowed; NULL or "" when none */
	size_t reasoning_len;
	struct engy_api_call *calls; /* owned */
	size_t n_calls;
	/* "stop", "length", "tool_calls", "content_filter" (borrowed). */
	const char *finish_reason;
	/* The stop string that ended the answer (engy_api_result_stops()),
	 * NULL when none; the miner's choices[0].matched_stop as given. */
	const char *stop_sequence;
	const char *matched_stop;
	/* choices[0].logprobs.content when well formed (borrowed; each entry
	 * has a string token and a finite number logprob <= 0, and its
	 * top_logprobs, when present, at most ENGY_API_TOP_LOGPROBS_MAX
	 * such entries sorted descending, each "id" a uint32), else NULL. */
	const cJSON *logprobs;
	uint64_t prompt_tokens;	    /* including cached_tokens */
	uint64_t completion_tokens; /* including reasoning */
	uint64_t cached_tokens;
};

/*
 * engy_api_result_parse() - the `output` object of a miner's response
 * frame: choices[0].message (content, reasoning_content or reasoning,
 * tool_calls) and finish_reason, usage.  Tool calls without an id get a
 * fresh call_<24 hex>; arguments given as an object are printed.  Returns
 * 0, -EPROTO with a reason for output that cannot be rendered (→ 502), or
 * -ENOMEM.  @output must outlive @r.
 */
int engy_api_result_parse(const cJSON *output, struct engy_api_result *r,
			  char *err, size_t errlen);
void engy_api_result_free(struct engy_api_result *r);

/* ---- OpenAI rendering ---- */

/*
 * engy_oai_response() - append the chat.completion for @r to @o: one
 * choice, message {role, content (null when empty beside tool calls),
 * reasoning_content when any, tool_calls, refusal: null}, finish_reason,
 * usage with prompt_tokens_details.cached_tokens.  @id is the completion
 * id ("chatcmpl-…"), @created a Unix time.
 */
int engy_oai_response(struct engy_sse_out *o, const struct engy_api_req *req,
		      const char *id, int64_t created,
		      const struct engy_api_result *r);

/*
 * A chat.completion.chunk stream.  The caller feeds it what the miner
 * sends, in order, and writes what lands in @o to the buyer:
 *   start   the role chunk (delta {role, content: ""}); called by the
 *           others when not called first
 *   delta   a miner `chunk` frame's delta: content and reasoning_content
 *           (or vLLM's "reasoning") become chunks of their own
 *   finish  the response's output: whatever part of content or reasoning
 *           the chunks did not carry, each tool call (id, type, name and
 *           arguments "" first, then the arguments in fragments of at
 *           most args_frag bytes), the finish_reason chunk, the usage
 *           chunk (choices: []) when include_usage, then data: [DONE]
 * A stream broken off goes out with engy_apierr_sse() instead of finish.
 */
struct engy_oai_stream {
	char *head; /* {"id":…,…,"choices":[ */
	size_t head_len;
	bool include_usage;
	bool logprobs;
	uint32_t top_logprobs; /* alternatives per token rendered at most */
	bool started;
	bool finished;
	size_t args_frag; /* default 32 */
	/* What the chunks carried: length and FNV-1a of each text. */
	size_t content_sent, reasoning_sent;
	uint64_t content_hash, reasoning_hash;
};

int engy_oai_stream_init(struct engy_oai_stream *s,
			 const struct engy_api_req *req, const char *id,
			 int64_t created);
void engy_oai_stream_free(struct engy_oai_stream *s);
int engy_oai_stream_start(struct engy_oai_stream *s, struct engy_sse_out *o);
int engy_oai_stream_delta(struct engy_oai_stream *s, const cJSON *delta,
			  struct engy_sse_out *o);
int engy_oai_stream_text(struct engy_oai_stream *s, const char *content,
			 size_t content_len, const char *reasoning,
			 size_t reasoning_len, struct engy_sse_out *o);
int engy_oai_stream_finish(struct engy_oai_stream *s,
			   const struct engy_api_result *r,
			   struct engy_sse_out *o);

/* ---- GET /v1/models, one rendering both SDKs read ---- */

struct engy_api_model_info {
	const char *id;
	int64_t created;	    /* Unix time */
	const char *owned_by;	    /* NULL: "engy" */
	const char *display_name;   /* NULL: the id */
	uint64_t context_length;    /* 0: left out */
	uint64_t max_output_tokens; /* 0: left out */
};

/*
 * engy_api_models_json() - the list: {"object":"list","data":[…],
 * "has_more":false,"first_id":…,"last_id":…}, each model carrying both
 * the OpenAI fields (id, object "model", created, owned_by) and the
 * Anthropic ones (type "model", display_name, created_at RFC 3339).
 * engy_api_model_json() - one model, for GET /v1/models/{id}.
 */
int engy_api_models_json(struct engy_sse_out *o,
			 const struct engy_api_model_info *m, size_t n);
int engy_api_model_json(struct engy_sse_out *o,
			const struct engy_api_model_info *m);

/* engy_api_new_id() - "@prefix" and 24 fresh hex digits into @out. */
void engy_api_new_id(char *out, size_t outlen, const char *prefix);

#endif /* ENGY_OAI_H */
