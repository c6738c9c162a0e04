/* SPDX-License-Identifier: MIT */
/*
 * The buyer API, Anthropic side (specs/buyer-api.md §4): POST
 * /v1/messages parsed and translated into the same internal request as
 * the OpenAI side (an OpenAI chat body for the miner), and the miner's
 * output rendered as a Message or as the full event stream
 * (message_start, content_block_start/delta/stop, message_delta,
 * message_stop, ping; every event with its "event:" line).
 */
#ifndef ENGY_ANTH_H
#define ENGY_ANTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "oai.h"

/* The body is a POST /v1/messages/count_tokens one: max_tokens optional. */
#define ENGY_ANTH_COUNT_TOKENS 1u

/*
 * engy_anth_parse() - a /v1/messages body into @req: system (string or
 * text blocks) as a leading system message; user text blocks as text
 * parts; tool_result blocks as "tool" messages (before the user's text);
 * assistant text, thinking (reasoning_content) and tool_use blocks
 * (tool_calls, input printed as arguments); tools' input_schema as
 * parameters; tool_choice auto/any/tool/none as auto/required/named/none;
 * thinking enabled or adaptive as enable_thinking true, else false;
 * stop_sequences as stop.  max_tokens is required (unless @flags has
 * ENGY_ANTH_COUNT_TOKENS).  Returns 0, -EINVAL, -E2BIG or -ENOMEM with a
 * reason naming the field; @req is empty on failure.
 */
int engy_anth_parse(const char *json, size_t len,
		    const struct engy_api_limits *lim, unsigned flags,
		    struct engy_api_req *req, char *err, size_t errlen);

/*
 * engy_anth_check_version() - the anthropic-version header (NULL when
 * absent): required, and a date YYYY-MM-DD.  -EINVAL with a reason.
 */
int engy_anth_check_version(const char *value, char *err, size_t errlen);

/* Anthropic's stop_reason for an OpenAI finish_reason: stop end_turn,
 * length max_tokens, tool_calls tool_use, content_filter refusal. */
const char *engy_anth_stop_reason(const char *finish_reason);

/*
 * engy_anth_response() - append the Message for @r to @o: content blocks
 * thinking (with a signature; only when req->show_reasoning), text, then
 * one tool_use per call with its arguments as the input object (an empty
 * text block when there is nothing else); stop_reason; usage with
 * input_tokens excluding cache reads, cache_read_input_tokens,
 * cache_creation_input_tokens 0 and output_tokens.  -EPROTO when a call's
 * arguments are not a JSON object.
 */
int engy_anth_response(struct engy_sse_out *o, const struct engy_api_req *req,
		       const char *id, const struct engy_api_result *r);

/*
 * The event stream.  Feed it what the miner sends, in order:
 *   start   message_start (usage.input_tokens = @input_tokens, the
 *           gateway's count of the prompt, 0 when it has none) and a ping;
 *           called by the others when not called first
 *   delta   a miner `chunk` delta: reasoning opens (or continues) a
 *           thinking block, content a text block; switching closes the
 *           open block (a thinking block with its signature_delta first)
 *   finish  what the chunks did not carry, the open block's stop, one
 *           tool_use block per call (input {} then input_json_delta
 *           fragments of at most args_frag bytes), message_delta
 *           (stop_reason, the final usage), message_stop
 * A stream broken off ends with engy_apierr_sse() instead of finish.
 */
struct engy_anth_stream {
	char *id;
	char *model;
	bool show_reasoning;
	bool started;
	bool finished;
	int open;	  /* the open block: 0 none, 1 thinking, 2 text */
	unsigned index;	  /* blocks started so far */
	bool any_text;	  /* a text block was opened */
	size_t args_frag; /* default 32 */
	size_t content_sent, reasoning_sent;
	uint64_t content_hash, reasoning_hash;
	uint64_t block_hash; /* of the open thinking block (signature) */
};

int engy_anth_stream_init(struct engy_anth_stream *s,
			  const struct engy_api_req *req, const char *id);
void engy_anth_stream_free(struct engy_anth_stream *s);
int engy_anth_stream_start(struct engy_anth_stream *s, uint64_t input_tokens,
			   struct engy_sse_out *o);
int engy_anth_stream_delta(struct engy_anth_stream *s, const cJSON *delta,
			   struct engy_sse_out *o);
int engy_anth_stream_text(struct engy_anth_stream *s, const char *content,
			  size_t content_len, const char *reasoning,
			  size_t reasoning_len, struct engy_sse_out *o);
int engy_anth_stream_finish(struct engy_anth_stream *s,
			    const struct engy_api_result *r,
			    struct engy_sse_out *o);

/* engy_anth_count_json() - the count_tokens answer {"input_tokens":N}. */
int engy_anth_count_json(struct engy_sse_out *o, uint64_t input_tokens);

#endif /* ENGY_ANTH_H */
