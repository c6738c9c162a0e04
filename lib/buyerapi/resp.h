/* SPDX-License-Identifier: MIT */
/*
 * The OpenAI Responses API (POST /v1/responses) and the legacy
 * completions API (POST /v1/completions), specs/buyer-api.md §7.
 *
 * Both are translated into the chat completions request the chat path
 * already checks (engy_oai_parse()): a Responses body's instructions and
 * input items become chat messages, its function tools, tool_choice,
 * max_output_tokens, sampling fields and text.format become the chat
 * fields of the same meaning; a completions prompt becomes one user
 * turn.  So every check and every enforcement of the chat path (tools,
 * tool_choice, response_format, limits) holds for them too, and the miner
 * gets the same chat body it always does.  Only the rendering of the
 * answer differs (a "response" object and its event stream; a
 * "text_completion").
 *
 * Zero data retention: nothing is stored, so store: true,
 * previous_response_id, conversation, background and item references are
 * refused with a message that says so.
 */
#ifndef ENGY_RESP_H
#define ENGY_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "oai.h"

/*
 * engy_resp_parse() - a /v1/responses body into @req (req->route
 * ENGY_ROUTE_RESPONSES).  engy_cmpl_parse() - a /v1/completions body
 * (ENGY_ROUTE_COMPLETIONS).  Returns as engy_oai_parse(): 0, -EINVAL,
 * -E2BIG or -ENOMEM with a reason in @err; @req is empty on failure.
 */
int engy_resp_parse(const char *json, size_t len,
		    const struct engy_api_limits *lim, struct engy_api_req *req,
		    char *err, size_t errlen);
int engy_cmpl_parse(const char *json, size_t len,
		    const struct engy_api_limits *lim, struct engy_api_req *req,
		    char *err, size_t errlen);

/* ---- the Responses rendering ---- */

/* The ids of a response's output items (stable between the stream's
 * events and its final response object). */
struct engy_resp_ids {
	char reasoning[40]; /* rs_… */
	char message[40];   /* msg_… */
	uint64_t calls;	    /* fc_ ids are "fc_" + the call's id */
};

/*
 * engy_resp_response() - the whole response object for @r ("status"
 * completed, or incomplete with incomplete_details.reason
 * "max_output_tokens" when the answer was cut by the cap): output items
 * reasoning (its text as a summary_text part), message (one output_text
 * part) and function_call, then usage.  @id is "resp_…".
 */
int engy_resp_response(struct engy_sse_out *o, const struct engy_api_req *req,
		       const char *id, int64_t created,
		       const struct engy_resp_ids *ids,
		       const struct engy_api_result *r);

/*
 * The Responses event stream: response.created and response.in_progress
 * first; then for the text of each kind as it comes an output item
 * (reasoning: output_item.added, reasoning_summary_part.added,
 * reasoning_summary_text.delta…; message: output_item.added,
 * content_part.added, output_text.delta…) closed by its .done events when
 * the other kind starts or at the end; at the end each function call
 * (output_item.added, function_call_arguments.delta in fragments,
 * function_call_arguments.done, output_item.done) and response.completed
 * (or response.incomplete) with the whole response and its usage.  Every
 * event is "event: TYPE" with a data object holding type and
 * sequence_number.
 */
struct engy_resp_stream {
	char id[48];
	const struct engy_api_req *req;
	int64_t created;
	struct engy_resp_ids ids;
	unsigned long long seq;
	int open;	   /* 0 none, 1 reasoning, 2 message */
	size_t n_items;	   /* output items opened so far */
	size_t open_index; /* the open item's output_index */
	bool started, finished;
	bool had_reasoning, had_message;
	size_t reasoning_index, message_index;
	size_t args_frag; /* default 32 */
	/* the texts so far (to close items, and to find the rest) */
	struct engy_sse_out content, reasoning;
	uint64_t content_hash, reasoning_hash;
};

int engy_resp_stream_init(struct engy_resp_stream *s,
			  const struct engy_api_req *req, const char *id,
			  int64_t created);
void engy_resp_stream_free(struct engy_resp_stream *s);
int engy_resp_stream_start(struct engy_resp_stream *s, struct engy_sse_out *o);
int engy_resp_stream_text(struct engy_resp_stream *s, const char *content,
			  size_t content_len, const char *reasoning,
			  size_t reasoning_len, struct engy_sse_out *o);
int engy_resp_stream_finish(struct engy_resp_stream *s,
			    const struct engy_api_result *r,
			    struct engy_sse_out *o);
/* The in-band error of a Responses stream: "event: error" with
 * {type:"error", code, message, param, sequence_number}. */
int engy_resp_stream_error(struct engy_resp_stream *s, struct engy_sse_out *o,
			   const struct engy_apierr *e);

/* ---- the legacy completions rendering ---- */

/* A text_completion: choices[0].text (content only), finish_reason,
 * usage.  @id is "cmpl-…". */
int engy_cmpl_response(struct engy_sse_out *o, const struct engy_api_req *req,
		       const char *id, int64_t created,
		       const struct engy_api_result *r);

/* Its stream: data: {"object":"text_completion",…,"choices":[{"text":…}]}
 * per delta, the finish_reason chunk, the usage chunk when include_usage,
 * data: [DONE]. */
struct engy_cmpl_stream {
	char *head; /* {"id":…,"object":…,"created":…,"model":…,"choices":[ */
	size_t head_len;
	bool include_usage, finished;
	bool logprobs;	       /* logprobs: N was asked (N > 0) */
	uint32_t top_logprobs; /* that N */
	size_t content_sent;
	uint64_t content_hash;
};

int engy_cmpl_stream_init(struct engy_cmpl_stream *s,
			  const struct engy_api_req *req, const char *id,
			  int64_t created);
void engy_cmpl_stream_free(struct engy_cmpl_stream *s);
int engy_cmpl_stream_text(struct engy_cmpl_stream *s, const char *content,
			  size_t content_len, struct engy_sse_out *o);
int engy_cmpl_stream_finish(struct engy_cmpl_stream *s,
			    const struct engy_api_result *r,
			    struct engy_sse_out *o);

#endif /* ENGY_RESP_H */
