// SPDX-License-Identifier: MIT
/*
 * The OpenAI renderings of a miner's output: chat.completion and the
 * chat.completion.chunk stream (specs/buyer-api.md §3).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buyerapi_int.h"
#include "jsonget.h"

/* Written piece by piece: a printf of four numbers cost more than the
 * rest of the answer. */
static void usage_json(struct engy_sse_out *o, const struct engy_api_result *r)
{
	engy_sse_out_adds(o, "{\"prompt_tokens\":");
	engy_sse_out_u64(o, r->prompt_tokens);
	engy_sse_out_adds(o, ",\"completion_tokens\":");
	engy_sse_out_u64(o, r->completion_tokens);
	engy_sse_out_adds(o, ",\"total_tokens\":");
	engy_sse_out_u64(o, (uint64_t)r->prompt_tokens + r->completion_tokens);
	engy_sse_out_adds(o, ",\"prompt_tokens_details\":{\"cached_tokens\":");
	engy_sse_out_u64(o, r->cached_tokens);
	engy_sse_out_adds(o, "}}");
}

void engy_api_token_bytes(struct engy_sse_out *o, const cJSON *e)
{
	const cJSON *t = engy_json_get(e, "token"),
		    *b = engy_json_get(e, "bytes"), *x;
	size_t i, n;
	bool ok;

	engy_sse_out_add(o, "[", 1);
	ok = cJSON_IsArray(b);
	if (ok) {
		cJSON_ArrayForEach(x, b) if (!engy_api_int(x, 0, 255)) ok =
			false;
	}
	if (ok) {
		i = 0;
		cJSON_ArrayForEach(x, b) engy_sse_out_addf(
			o, i++ ? ",%d" : "%d", (int)x->valuedouble);
	} else {
		n = strlen(t->valuestring);
		for (i = 0; i < n; i++)
			engy_sse_out_addf(o, i ? ",%d" : "%d",
					  (unsigned char)t->valuestring[i]);
	}
	engy_sse_out_add(o, "]", 1);
}

/* {"token":…,"logprob":…,"bytes":[…] (no closing brace) */
static void token_head(struct engy_sse_out *o, const cJSON *e)
{
	engy_sse_out_adds(o, "{\"token\":");
	engy_sse_out_jstrz(o, engy_json_get(e, "token")->valuestring);
	engy_sse_out_addf(o, ",\"logprob\":%.9g,\"bytes\":",
			  engy_json_get(e, "logprob")->valuedouble);
	engy_api_token_bytes(o, e);
}

void engy_api_logprobs_entries(struct engy_sse_out *o, const cJSON *content,
			       uint32_t top)
{
	const cJSON *e, *a;
	bool first = true;
	uint32_t k;

	engy_sse_out_add(o, "[", 1);
	cJSON_ArrayForEach(e, content)
	{
		if (!first)
			engy_sse_out_add(o, ",", 1);
		first = false;
		token_head(o, e);
		engy_sse_out_adds(o, ",\"top_logprobs\":[");
		k = 0;
		cJSON_ArrayForEach(a, engy_json_get(e, "top_logprobs"))
		{
			if (k == top)
				break;
			if (k++)
				engy_sse_out_add(o, ",", 1);
			token_head(o, a);
			engy_sse_out_add(o, "}", 1);
		}
		engy_sse_out_adds(o, "]}");
	}
	engy_sse_out_add(o, "]", 1);
}

/* {"content":[…],"refusal":null} */
static void logprobs_json(struct engy_sse_out *o, const cJSON *content,
			  uint32_t top)
{
	engy_sse_out_adds(o, "{\"content\":");
	engy_api_logprobs_entries(o, content, top);
	engy_sse_out_adds(o, ",\"refusal\":null}");
}

int engy_oai_response(struct engy_sse_out *o, const struct engy_api_req *req,
		      const char *id, int64_t created,
		      const struct engy_api_result *r)
{
	size_t i;

	engy_sse_out_adds(o, "{\"id\":");
	engy_sse_out_jstrz(o, id);
	engy_sse_out_adds(o, ",\"object\":\"chat.completion\",\"created\":");
	engy_sse_out_i64(o, created ? created : (int64_t)time(NULL));
	engy_sse_out_adds(o, ",\"model\":");
	engy_sse_out_jstrz(o, req->model);
	engy_sse_out_adds(o, ",\"choices\":[{\"index\":0,\"message\":"
			     "{\"role\":\"assistant\",\"content\":");
	if (!r->content_len && r->n_calls)
		engy_sse_out_adds(o, "null");
	else
		engy_sse_out_jstr(o, r->content, r->content_len);
	if (req->show_reasoning && r->reasoning_len) {
		engy_sse_out_adds(o, ",\"reasoning_content\":");
		engy_sse_out_jstr(o, r->reasoning, r->reasoning_len);
	}
	if (r->n_calls) {
		engy_sse_out_adds(o, ",\"tool_calls\":[");
		for (i = 0; i < r->n_calls; i++) {
			engy_sse_out_adds(o, i ? ",{\"id\":" : "{\"id\":");
			engy_sse_out_jstrz(o, r->calls[i].id);
			engy_sse_out_adds(o, ",\"type\":\"function\","
					     "\"function\":{\"name\":");
			engy_sse_out_jstrz(o, r->calls[i].name);
			engy_sse_out_adds(o, ",\"arguments\":");
			engy_sse_out_jstrz(o, r->calls[i].arguments);
			engy_sse_out_adds(o, "}}");
		}
		engy_sse_out_add(o, "]", 1);
	}
	engy_sse_out_adds(o, ",\"refusal\":null},\"logprobs\":");
	if (req->logprobs && r->logprobs)
		logprobs_json(o, r->logprobs, req->top_logprobs);
	else
		engy_sse_out_adds(o, "null");
	engy_sse_out_adds(o, ",\"finish_reason\":");
	engy_sse_out_jstrz(o, r->finish_reason);
	engy_sse_out_adds(o, "}],\"usage\":");
	usage_json(o, r);
	return engy_sse_out_add(o, "}", 1);
}

/* ---- the stream ---- */

char *engy_api_chunk_head(const char *id, const char *object, int64_t created,
			  const char *model, size_t *len)
{
	struct engy_sse_out h;

	engy_sse_out_init(&h);
	engy_sse_out_adds(&h, "{\"id\":");
	engy_sse_out_jstrz(&h, id);
	engy_sse_out_adds(&h, ",\"object\":\"");
	engy_sse_out_adds(&h, object);
	engy_sse_out_adds(&h, "\",\"created\":");
	engy_sse_out_i64(&h, created ? created : (int64_t)time(NULL));
	engy_sse_out_adds(&h, ",\"model\":");
	engy_sse_out_jstrz(&h, model);
	engy_sse_out_adds(&h, ",\"choices\":[");
	return engy_sse_out_take(&h, len);
}

int engy_oai_stream_init(struct engy_oai_stream *s,
			 const struct engy_api_req *req, const char *id,
			 int64_t created)
{
	memset(s, 0, sizeof(*s));
	s->head = engy_api_chunk_head(id, "chat.completion.chunk", created,
				      req->model, &s->head_len);
	if (!s->head)
		return -ENOMEM;
	s->include_usage = req->include_usage;
	s->logprobs = req->logprobs;
	s->top_logprobs = req->top_logprobs;
	s->args_frag = 32;
	s->content_hash = s->reasoning_hash = FNV_OFFSET;
	return 0;
}

void engy_oai_stream_free(struct engy_oai_stream *s)
{
	free(s->head);
	memset(s, 0, sizeof(*s));
}

/* "data: {head{"index":0,"delta":{" — the caller writes the delta. */
static void chunk_begin(struct engy_oai_stream *s, struct engy_sse_out *o)
{
	engy_sse_out_begin(o, NULL);
	engy_sse_out_add(o, s->head, s->head_len);
	engy_sse_out_adds(o, "{\"index\":0,\"delta\":{");
}

static int chunk_end(struct engy_oai_stream *s, struct engy_sse_out *o,
		     const char *finish)
{
	engy_sse_out_adds(o, "},\"logprobs\":null,\"finish_reason\":");
	engy_sse_out_jstrz(o, finish);
	engy_sse_out_add(o, "}]", 2);
	if (s->include_usage)
		engy_sse_out_adds(o, ",\"usage\":null");
	engy_sse_out_add(o, "}", 1);
	return engy_sse_out_end(o);
}

int engy_oai_stream_start(struct engy_oai_stream *s, struct engy_sse_out *o)
{
	if (s->started)
		return o->err;
	s->started = true;
	chunk_begin(s, o);
	engy_sse_out_adds(o, "\"role\":\"assistant\",\"content\":\"\"");
	return chunk_end(s, o, NULL);
}

static void text_chunk(struct engy_oai_stream *s, struct engy_sse_out *o,
		       const char *field, const char *p, size_t n)
{
	chunk_begin(s, o);
	engy_sse_out_adds(o, field);
	engy_sse_out_jstr(o, p, n);
	chunk_end(s, o, NULL);
}

int engy_oai_stream_text(struct engy_oai_stream *s, const char *content,
			 size_t content_len, const char *reasoning,
			 size_t reasoning_len, struct engy_sse_out *o)
{
	if (s->finished)
		return -EINVAL;
	engy_oai_stream_start(s, o);
	if (reasoning && reasoning_len) {
		text_chunk(s, o, "\"reasoning_content\":", reasoning,
			   reasoning_len);
		s->reasoning_hash = engy_api_fnv(s->reasoning_hash, reasoning,
						 reasoning_len);
		s->reasoning_sent += reasoning_len;
	}
	if (content && content_len) {
		text_chunk(s, o, "\"content\":", content, content_len);
		s->content_hash =
			engy_api_fnv(s->content_hash, content, content_len);
		s->content_sent += content_len;
	}
	return o->err;
}

int engy_oai_stream_delta(struct engy_oai_stream *s, const cJSON *delta,
			  struct engy_sse_out *o)
{
	struct engy_api_text t;

	engy_api_delta_text(delta, &t);
	return engy_oai_stream_text(s, t.content, t.content_len, t.reasoning,
				    t.reasoning_len, o);
}

static void tool_call_chunks(struct engy_oai_stream *s, struct engy_sse_out *o,
			     size_t i, const struct engy_api_call *c)
{
	const char *a = c->arguments;
	size_t len = strlen(a), at = 0, n;

	chunk_begin(s, o);
	engy_sse_out_addf(o, "\"tool_calls\":[{\"index\":%zu,\"id\":", i);
	engy_sse_out_jstrz(o, c->id);
	engy_sse_out_adds(o, ",\"type\":\"function\",\"function\":{\"name\":");
	engy_sse_out_jstrz(o, c->name);
	engy_sse_out_adds(o, ",\"arguments\":\"\"}}]");
	chunk_end(s, o, NULL);
	while (at < len) {
		n = engy_sse_utf8_cut(a + at, len - at,
				      s->args_frag ? s->args_frag : 32);
		chunk_begin(s, o);
		engy_sse_out_addf(o,
				  "\"tool_calls\":[{\"index\":%zu,"
				  "\"function\":{\"arguments\":",
				  i);
		engy_sse_out_jstr(o, a + at, n);
		engy_sse_out_adds(o, "}}]");
		chunk_end(s, o, NULL);
		at += n;
	}
}

int engy_oai_stream_finish(struct engy_oai_stream *s,
			   const struct engy_api_result *r,
			   struct engy_sse_out *o)
{
	struct engy_api_text t;
	size_t i;

	if (s->finished)
		return -EINVAL;
	engy_oai_stream_start(s, o);
	engy_api_text_rest(r, s->content_sent, s->content_hash,
			   s->reasoning_sent, s->reasoning_hash, &t);
	engy_oai_stream_text(s, t.content, t.content_len, t.reasoning,
			     t.reasoning_len, o);
	for (i = 0; i < r->n_calls; i++)
		tool_call_chunks(s, o, i, &r->calls[i]);
	if (s->logprobs && r->logprobs) {
		/* the answer's logprobs in one chunk of their own */
		chunk_begin(s, o);
		engy_sse_out_adds(o, "},\"logprobs\":");
		logprobs_json(o, r->logprobs, s->top_logprobs);
		engy_sse_out_adds(o, ",\"finish_reason\":null}]");
		if (s->include_usage)
			engy_sse_out_adds(o, ",\"usage\":null");
		engy_sse_out_add(o, "}", 1);
		engy_sse_out_end(o);
	}
	chunk_begin(s, o);
	chunk_end(s, o, r->finish_reason);
	if (s->include_usage) {
		engy_sse_out_begin(o, NULL);
		engy_sse_out_add(o, s->head, s->head_len);
		engy_sse_out_adds(o, "],\"usage\":");
		usage_json(o, r);
		engy_sse_out_add(o, "}", 1);
		engy_sse_out_end(o);
	}
	s->finished = true;
	return engy_sse_out_adds(o, "data: [DONE]\n\n");
}
