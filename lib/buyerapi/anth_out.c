// SPDX-License-Identifier: MIT
/*
 * The Anthropic renderings of a miner's output: a Message, and the
 * Messages event stream (specs/buyer-api.md §4).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anth.h"
#include "buyerapi_int.h"

enum { BLK_NONE = 0, BLK_THINKING, BLK_TEXT };

/* A thinking block's signature: opaque to clients, the same for the same
 * text in a Message and in a stream. */
static void signature(char out[32], uint64_t h)
{
	snprintf(out, 32, "engy-fnv1a-%016llx", (unsigned long long)h);
}

static void usage_json(struct engy_sse_out *o, const struct engy_api_result *r)
{
	engy_sse_out_addf(
		o,
		"{\"input_tokens\":%llu,\"output_tokens\":%llu,"
		"\"cache_creation_input_tokens\":0,"
		"\"cache_read_input_tokens\":%llu}",
		(unsigned long long)(r->prompt_tokens - r->cached_tokens),
		(unsigned long long)r->completion_tokens,
		(unsigned long long)r->cached_tokens);
}

int engy_anth_count_json(struct engy_sse_out *o, uint64_t input_tokens)
{
	return engy_sse_out_addf(o, "{\"input_tokens\":%llu}",
				 (unsigned long long)input_tokens);
}

/* The tool input as compact JSON (what both renderings carry). */
static char *input_text(const struct engy_api_call *c)
{
	cJSON *in = engy_api_args_object(c->arguments);
	char *s;

	if (!in)
		return NULL;
	s = cJSON_PrintUnformatted(in);
	cJSON_Delete(in);
	return s;
}

int engy_anth_response(struct engy_sse_out *o, const struct engy_api_req *req,
		       const char *id, const struct engy_api_result *r)
{
	char sig[32];
	bool first = true;
	size_t i;
	char *in;

	engy_sse_out_adds(o, "{\"id\":");
	engy_sse_out_jstrz(o, id);
	engy_sse_out_adds(o, ",\"type\":\"message\",\"role\":\"assistant\","
			     "\"model\":");
	engy_sse_out_jstrz(o, req->model);
	engy_sse_out_adds(o, ",\"content\":[");
	if (req->show_reasoning && r->reasoning_len) {
		engy_sse_out_adds(o, "{\"type\":\"thinking\",\"thinking\":");
		engy_sse_out_jstr(o, r->reasoning, r->reasoning_len);
		signature(sig, engy_api_fnv(FNV_OFFSET, r->reasoning,
					    r->reasoning_len));
		engy_sse_out_adds(o, ",\"signature\":");
		engy_sse_out_jstrz(o, sig);
		engy_sse_out_add(o, "}", 1);
		first = false;
	}
	if (r->content_len || (first && !r->n_calls)) {
		engy_sse_out_adds(o, first ? "{\"type\":\"text\",\"text\":"
					   : ",{\"type\":\"text\",\"text\":");
		engy_sse_out_jstr(o, r->content, r->content_len);
		engy_sse_out_add(o, "}", 1);
		first = false;
	}
	for (i = 0; i < r->n_calls; i++) {
		in = input_text(&r->calls[i]);
		if (!in)
			return -EPROTO;
		engy_sse_out_adds(o, first ? "{\"type\":\"tool_use\",\"id\":"
					   : ",{\"type\":\"tool_use\",\"id\":");
		engy_sse_out_jstrz(o, r->calls[i].id);
		engy_sse_out_adds(o, ",\"name\":");
		engy_sse_out_jstrz(o, r->calls[i].name);
		engy_sse_out_adds(o, ",\"input\":");
		engy_sse_out_adds(o, in);
		engy_sse_out_add(o, "}", 1);
		free(in);
		first = false;
	}
	engy_sse_out_adds(o, "],\"stop_reason\":");
	engy_sse_out_jstrz(
		o, r->stop_sequence ? "stop_sequence"
				    : engy_anth_stop_reason(r->finish_reason));
	engy_sse_out_adds(o, ",\"stop_sequence\":");
	engy_sse_out_jstrz(o, r->stop_sequence);
	engy_sse_out_adds(o, ",\"usage\":");
	usage_json(o, r);
	return engy_sse_out_add(o, "}", 1);
}

/* ---- the stream ---- */

int engy_anth_stream_init(struct engy_anth_stream *s,
			  const struct engy_api_req *req, const char *id)
{
	memset(s, 0, sizeof(*s));
	s->id = strdup(id ? id : "");
	s->model = strdup(req->model ? req->model : "");
	if (!s->id || !s->model) {
		engy_anth_stream_free(s);
		return -ENOMEM;
	}
	s->show_reasoning = req->show_reasoning;
	s->args_frag = 32;
	s->content_hash = s->reasoning_hash = FNV_OFFSET;
	return 0;
}

void engy_anth_stream_free(struct engy_anth_stream *s)
{
	free(s->id);
	free(s->model);
	memset(s, 0, sizeof(*s));
}

int engy_anth_stream_start(struct engy_anth_stream *s, uint64_t input_tokens,
			   struct engy_sse_out *o)
{
	if (s->started)
		return o->err;
	s->started = true;
	engy_sse_out_begin(o, "message_start");
	engy_sse_out_adds(o,
			  "{\"type\":\"message_start\",\"message\":{\"id\":");
	engy_sse_out_jstrz(o, s->id);
	engy_sse_out_adds(o, ",\"type\":\"message\",\"role\":\"assistant\","
			     "\"model\":");
	engy_sse_out_jstrz(o, s->model);
	engy_sse_out_addf(o,
			  ",\"content\":[],\"stop_reason\":null,"
			  "\"stop_sequence\":null,\"usage\":{\"input_tokens\":"
			  "%llu,\"output_tokens\":0}}}",
			  (unsigned long long)input_tokens);
	engy_sse_out_end(o);
	return engy_api_keepalive(o, ENGY_API_ANTHROPIC);
}

static void block_stop(struct engy_anth_stream *s, struct engy_sse_out *o)
{
	char sig[32];

	if (s->open == BLK_NONE)
		return;
	if (s->open == BLK_THINKING) {
		signature(sig, s->block_hash);
		engy_sse_out_begin(o, "content_block_delta");
		engy_sse_out_addf(o,
				  "{\"type\":\"content_block_delta\","
				  "\"index\":%u,\"delta\":{\"type\":"
				  "\"signature_delta\",\"signature\":\"%s\"}}",
				  s->index - 1, sig);
		engy_sse_out_end(o);
	}
	engy_sse_out_begin(o, "content_block_stop");
	engy_sse_out_addf(o, "{\"type\":\"content_block_stop\",\"index\":%u}",
			  s->index - 1);
	engy_sse_out_end(o);
	s->open = BLK_NONE;
}

/* Opens a block of @kind unless one is open; @head is its initial JSON. */
static void block_open(struct engy_anth_stream *s, struct engy_sse_out *o,
		       int kind, const char *head)
{
	if (s->open == kind)
		return;
	block_stop(s, o);
	engy_sse_out_begin(o, "content_block_start");
	engy_sse_out_addf(o,
			  "{\"type\":\"content_block_start\",\"index\":%u,"
			  "\"content_block\":%s}",
			  s->index, head);
	engy_sse_out_end(o);
	s->index++;
	s->open = kind;
	s->block_hash = FNV_OFFSET;
	if (kind == BLK_TEXT)
		s->any_text = true;
}

static void block_delta(struct engy_anth_stream *s, struct engy_sse_out *o,
			const char *type, const char *field, const char *p,
			size_t n)
{
	engy_sse_out_begin(o, "content_block_delta");
	engy_sse_out_addf(o,
			  "{\"type\":\"content_block_delta\",\"index\":%u,"
			  "\"delta\":{\"type\":\"%s\",\"%s\":",
			  s->index - 1, type, field);
	engy_sse_out_jstr(o, p, n);
	engy_sse_out_adds(o, "}}");
	engy_sse_out_end(o);
}

static void thinking(struct engy_anth_stream *s, struct engy_sse_out *o,
		     const char *p, size_t n)
{
	block_open(
		s, o, BLK_THINKING,
		"{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}");
	block_delta(s, o, "thinking_delta", "thinking", p, n);
	s->block_hash = engy_api_fnv(s->block_hash, p, n);
}

static void text(struct engy_anth_stream *s, struct engy_sse_out *o,
		 const char *p, size_t n)
{
	block_open(s, o, BLK_TEXT, "{\"type\":\"text\",\"text\":\"\"}");
	block_delta(s, o, "text_delta", "text", p, n);
}

int engy_anth_stream_text(struct engy_anth_stream *s, const char *content,
			  size_t content_len, const char *reasoning,
			  size_t reasoning_len, struct engy_sse_out *o)
{
	if (s->finished)
		return -EINVAL;
	engy_anth_stream_start(s, 0, o);
	if (reasoning && reasoning_len) {
		s->reasoning_hash = engy_api_fnv(s->reasoning_hash, reasoning,
						 reasoning_len);
		s->reasoning_sent += reasoning_len;
		if (s->show_reasoning)
			thinking(s, o, reasoning, reasoning_len);
	}
	if (content && content_len) {
		s->content_hash =
			engy_api_fnv(s->content_hash, content, content_len);
		s->content_sent += content_len;
		text(s, o, content, content_len);
	}
	return o->err;
}

int engy_anth_stream_delta(struct engy_anth_stream *s, const cJSON *delta,
			   struct engy_sse_out *o)
{
	struct engy_api_text t;

	engy_api_delta_text(delta, &t);
	return engy_anth_stream_text(s, t.content, t.content_len, t.reasoning,
				     t.reasoning_len, o);
}

static int tool_block(struct engy_anth_stream *s, struct engy_sse_out *o,
		      const struct engy_api_call *c)
{
	char *in = input_text(c);
	size_t len, at = 0, n;

	if (!in)
		return -EPROTO;
	block_stop(s, o);
	engy_sse_out_begin(o, "content_block_start");
	engy_sse_out_addf(o,
			  "{\"type\":\"content_block_start\",\"index\":%u,"
			  "\"content_block\":{\"type\":\"tool_use\",\"id\":",
			  s->index);
	engy_sse_out_jstrz(o, c->id);
	engy_sse_out_adds(o, ",\"name\":");
	engy_sse_out_jstrz(o, c->name);
	engy_sse_out_adds(o, ",\"input\":{}}}");
	engy_sse_out_end(o);
	s->index++;
	len = strlen(in);
	while (at < len) {
		n = engy_sse_utf8_cut(in + at, len - at,
				      s->args_frag ? s->args_frag : 32);
		engy_sse_out_begin(o, "content_block_delta");
		engy_sse_out_addf(o,
				  "{\"type\":\"content_block_delta\","
				  "\"index\":%u,\"delta\":{\"type\":"
				  "\"input_json_delta\",\"partial_json\":",
				  s->index - 1);
		engy_sse_out_jstr(o, in + at, n);
		engy_sse_out_adds(o, "}}");
		engy_sse_out_end(o);
		at += n;
	}
	free(in);
	engy_sse_out_begin(o, "content_block_stop");
	engy_sse_out_addf(o, "{\"type\":\"content_block_stop\",\"index\":%u}",
			  s->index - 1);
	return engy_sse_out_end(o);
}

int engy_anth_stream_finish(struct engy_anth_stream *s,
			    const struct engy_api_result *r,
			    struct engy_sse_out *o)
{
	struct engy_api_text t;
	size_t i;
	int rc;

	if (s->finished)
		return -EINVAL;
	engy_anth_stream_start(s, 0, o);
	engy_api_text_rest(r, s->content_sent, s->content_hash,
			   s->reasoning_sent, s->reasoning_hash, &t);
	engy_anth_stream_text(s, t.content, t.content_len, t.reasoning,
			      t.reasoning_len, o);
	/* Nothing at all to show: one empty text block, as a Message has. */
	if (!s->index && !r->n_calls)
		block_open(s, o, BLK_TEXT, "{\"type\":\"text\",\"text\":\"\"}");
	block_stop(s, o);
	for (i = 0; i < r->n_calls; i++) {
		rc = tool_block(s, o, &r->calls[i]);
		if (rc)
			return rc;
	}
	s->finished = true;
	engy_sse_out_begin(o, "message_delta");
	engy_sse_out_adds(o, "{\"type\":\"message_delta\",\"delta\":"
			     "{\"stop_reason\":");
	engy_sse_out_jstrz(
		o, r->stop_sequence ? "stop_sequence"
				    : engy_anth_stop_reason(r->finish_reason));
	engy_sse_out_adds(o, ",\"stop_sequence\":");
	engy_sse_out_jstrz(o, r->stop_sequence);
	engy_sse_out_adds(o, "},\"usage\":");
	usage_json(o, r);
	engy_sse_out_add(o, "}", 1);
	engy_sse_out_end(o);
	engy_sse_out_begin(o, "message_stop");
	engy_sse_out_adds(o, "{\"type\":\"message_stop\"}");
	return engy_sse_out_end(o);
}
