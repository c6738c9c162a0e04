// SPDX-License-Identifier: MIT
/*
 * The renderings of a miner's output for POST /v1/responses (a response
 * object and its event stream) and POST /v1/completions (a
 * text_completion and its chunks), specs/buyer-api.md §7.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buyerapi_int.h"
#include "jsonget.h"
#include "resp.h"

/* ---- the response object ---- */

static bool cut_by_cap(const struct engy_api_result *r)
{
	return strcmp(r->finish_reason, "length") == 0;
}

static void reasoning_item(struct engy_sse_out *o, const char *id,
			   const char *text, size_t len)
{
	engy_sse_out_adds(o, "{\"id\":");
	engy_sse_out_jstrz(o, id);
	engy_sse_out_adds(o, ",\"type\":\"reasoning\",\"summary\":[");
	if (text) {
		engy_sse_out_adds(o, "{\"type\":\"summary_text\",\"text\":");
		engy_sse_out_jstr(o, text, len);
		engy_sse_out_adds(o, "}");
	}
	engy_sse_out_adds(o, "]}");
}

static void text_part(struct engy_sse_out *o, const char *text, size_t len,
		      const cJSON *lp, uint32_t top)
{
	engy_sse_out_adds(o, "{\"type\":\"output_text\",\"text\":");
	engy_sse_out_jstr(o, text ? text : "", text ? len : 0);
	engy_sse_out_adds(o, ",\"annotations\":[],\"logprobs\":");
	if (lp)
		engy_api_logprobs_entries(o, lp, top);
	else
		engy_sse_out_adds(o, "[]");
	engy_sse_out_add(o, "}", 1);
}

static void message_item(struct engy_sse_out *o, const char *id,
			 const char *status, const char *text, size_t len,
			 const cJSON *lp, uint32_t top)
{
	engy_sse_out_adds(o, "{\"id\":");
	engy_sse_out_jstrz(o, id);
	engy_sse_out_addf(o,
			  ",\"type\":\"message\",\"status\":\"%s\","
			  "\"role\":\"assistant\",\"content\":[",
			  status);
	if (text)
		text_part(o, text, len, lp, top);
	engy_sse_out_adds(o, "]}");
}

static void call_item(struct engy_sse_out *o, const struct engy_api_call *c,
		      const char *status, bool with_args)
{
	char item_id[ENGY_API_MAX_NAME + 8];

	snprintf(item_id, sizeof(item_id), "fc_%s", c->id);
	engy_sse_out_adds(o, "{\"id\":");
	engy_sse_out_jstrz(o, item_id);
	engy_sse_out_addf(o,
			  ",\"type\":\"function_call\",\"status\":\"%s\","
			  "\"call_id\":",
			  status);
	engy_sse_out_jstrz(o, c->id);
	engy_sse_out_adds(o, ",\"name\":");
	engy_sse_out_jstrz(o, c->name);
	engy_sse_out_adds(o, ",\"arguments\":");
	engy_sse_out_jstrz(o, with_args ? c->arguments : "");
	engy_sse_out_adds(o, "}");
}

static void usage_json(struct engy_sse_out *o, const struct engy_api_result *r)
{
	engy_sse_out_addf(
		o,
		"{\"input_tokens\":%llu,\"input_tokens_details\":"
		"{\"cached_tokens\":%llu},\"output_tokens\":%llu,"
		"\"output_tokens_details\":{\"reasoning_tokens\":0},"
		"\"total_tokens\":%llu}",
		(unsigned long long)r->prompt_tokens,
		(unsigned long long)r->cached_tokens,
		(unsigned long long)r->completion_tokens,
		(unsigned long long)(r->prompt_tokens + r->completion_tokens));
}

/* The response object's fields, @status and, when @r, output and usage. */
static void response_obj(struct engy_sse_out *o, const struct engy_api_req *req,
			 const char *id, int64_t created, const char *status,
			 const struct engy_resp_ids *ids,
			 const struct engy_api_result *r)
{
	bool first = true;
	size_t i;

	engy_sse_out_adds(o, "{\"id\":");
	engy_sse_out_jstrz(o, id);
	engy_sse_out_addf(o,
			  ",\"object\":\"response\",\"created_at\":%lld,"
			  "\"status\":\"%s\",\"error\":null,"
			  "\"incomplete_details\":",
			  (long long)(created ? created : time(NULL)), status);
	if (strcmp(status, "incomplete") == 0)
		engy_sse_out_adds(o, "{\"reason\":\"max_output_tokens\"}");
	else
		engy_sse_out_adds(o, "null");
	engy_sse_out_adds(o, ",\"instructions\":null,\"max_output_tokens\":");
	if (req->has_max_tokens)
		engy_sse_out_u64(o, req->max_tokens);
	else
		engy_sse_out_adds(o, "null");
	engy_sse_out_adds(o, ",\"model\":");
	engy_sse_out_jstrz(o, req->model);
	engy_sse_out_adds(o, ",\"output\":[");
	if (r && req->show_reasoning && r->reasoning_len) {
		reasoning_item(o, ids->reasoning, r->reasoning,
			       r->reasoning_len);
		first = false;
	}
	if (r && (r->content_len || !r->n_calls)) {
		if (!first)
			engy_sse_out_add(o, ",", 1);
		message_item(o, ids->message, "completed", r->content,
			     r->content_len, req->logprobs ? r->logprobs : NULL,
			     req->top_logprobs);
		first = false;
	}
	for (i = 0; r && i < r->n_calls; i++) {
		if (!first)
			engy_sse_out_add(o, ",", 1);
		call_item(o, &r->calls[i], "completed", true);
		first = false;
	}
	engy_sse_out_adds(o, "],\"parallel_tool_calls\":true,"
			     "\"previous_response_id\":null,"
			     "\"reasoning\":{\"effort\":null,\"summary\":null},"
			     "\"store\":false,\"text\":{\"format\":"
			     "{\"type\":\"text\"}},\"tool_choice\":\"auto\","
			     "\"tools\":[],\"truncation\":\"disabled\","
			     "\"metadata\":{},\"usage\":");
	if (r)
		usage_json(o, r);
	else
		engy_sse_out_adds(o, "null");
	engy_sse_out_add(o, "}", 1);
}

int engy_resp_response(struct engy_sse_out *o, const struct engy_api_req *req,
		       const char *id, int64_t created,
		       const struct engy_resp_ids *ids,
		       const struct engy_api_result *r)
{
	response_obj(o, req, id, created,
		     cut_by_cap(r) ? "incomplete" : "completed", ids, r);
	return o->err;
}

/* ---- the event stream ---- */

int engy_resp_stream_init(struct engy_resp_stream *s,
			  const struct engy_api_req *req, const char *id,
			  int64_t created)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->req = req;
	s->created = created ? created : time(NULL);
	engy_api_new_id(s->ids.reasoning, sizeof(s->ids.reasoning), "rs_");
	engy_api_new_id(s->ids.message, sizeof(s->ids.message), "msg_");
	s->args_frag = 32;
	engy_sse_out_init(&s->content);
	engy_sse_out_init(&s->reasoning);
	s->content_hash = s->reasoning_hash = FNV_OFFSET;
	return 0;
}

void engy_resp_stream_free(struct engy_resp_stream *s)
{
	engy_sse_out_free(&s->content);
	engy_sse_out_free(&s->reasoning);
	memset(s, 0, sizeof(*s));
}

/* "event: TYPE\ndata: {"type":TYPE,"sequence_number":N" — the caller
 * adds its fields and ev_end() closes it. */
static void ev_begin(struct engy_resp_stream *s, struct engy_sse_out *o,
		     const char *type)
{
	engy_sse_out_begin(o, type);
	engy_sse_out_addf(o, "{\"type\":\"%s\",\"sequence_number\":%llu", type,
			  s->seq++);
}

static void ev_end(struct engy_sse_out *o)
{
	engy_sse_out_add(o, "}", 1);
	engy_sse_out_end(o);
}

/* ,"item_id":ID,"output_index":N */
static void ev_item(struct engy_sse_out *o, const char *item_id, size_t index)
{
	engy_sse_out_adds(o, ",\"item_id\":");
	engy_sse_out_jstrz(o, item_id);
	engy_sse_out_addf(o, ",\"output_index\":%zu", index);
}

int engy_resp_stream_start(struct engy_resp_stream *s, struct engy_sse_out *o)
{
	static const char *const first[] = { "response.created",
					     "response.in_progress" };
	size_t i;

	if (s->started)
		return o->err;
	s->started = true;
	for (i = 0; i < 2; i++) {
		ev_begin(s, o, first[i]);
		engy_sse_out_adds(o, ",\"response\":");
		response_obj(o, s->req, s->id, s->created, "in_progress",
			     &s->ids, NULL);
		ev_end(o);
	}
	return o->err;
}

static void close_item(struct engy_resp_stream *s, struct engy_sse_out *o)
{
	const char *id;

	if (s->open == 1) {
		id = s->ids.reasoning;
		ev_begin(s, o, "response.reasoning_summary_text.done");
		ev_item(o, id, s->open_index);
		engy_sse_out_adds(o, ",\"summary_index\":0,\"text\":");
		engy_sse_out_jstr(o, s->reasoning.buf ? s->reasoning.buf : "",
				  s->reasoning.len);
		ev_end(o);
		ev_begin(s, o, "response.reasoning_summary_part.done");
		ev_item(o, id, s->open_index);
		engy_sse_out_adds(o, ",\"summary_index\":0,\"part\":"
				     "{\"type\":\"summary_text\",\"text\":");
		engy_sse_out_jstr(o, s->reasoning.buf ? s->reasoning.buf : "",
				  s->reasoning.len);
		engy_sse_out_adds(o, "}");
		ev_end(o);
		ev_begin(s, o, "response.output_item.done");
		engy_sse_out_addf(
			o, ",\"output_index\":%zu,\"item\":", s->open_index);
		reasoning_item(o, id, s->reasoning.buf ? s->reasoning.buf : "",
			       s->reasoning.len);
		ev_end(o);
	} else if (s->open == 2) {
		id = s->ids.message;
		ev_begin(s, o, "response.output_text.done");
		ev_item(o, id, s->open_index);
		engy_sse_out_adds(o, ",\"content_index\":0,\"text\":");
		engy_sse_out_jstr(o, s->content.buf ? s->content.buf : "",
				  s->content.len);
		engy_sse_out_adds(o, ",\"logprobs\":[]");
		ev_end(o);
		ev_begin(s, o, "response.content_part.done");
		ev_item(o, id, s->open_index);
		engy_sse_out_adds(o, ",\"content_index\":0,\"part\":");
		text_part(o, s->content.buf ? s->content.buf : "",
			  s->content.len, NULL, 0);
		ev_end(o);
		ev_begin(s, o, "response.output_item.done");
		engy_sse_out_addf(
			o, ",\"output_index\":%zu,\"item\":", s->open_index);
		message_item(o, id, "completed",
			     s->content.buf ? s->content.buf : "",
			     s->content.len, NULL, 0);
		ev_end(o);
	}
	s->open = 0;
}

/* Open the item of @kind (1 reasoning, 2 message) unless it is open. */
static void open_item(struct engy_resp_stream *s, struct engy_sse_out *o,
		      int kind)
{
	if (s->open == kind)
		return;
	close_item(s, o);
	s->open = kind;
	s->open_index = s->n_items++;
	ev_begin(s, o, "response.output_item.added");
	engy_sse_out_addf(o, ",\"output_index\":%zu,\"item\":", s->open_index);
	if (kind == 1) {
		reasoning_item(o, s->ids.reasoning, NULL, 0);
		ev_end(o);
		ev_begin(s, o, "response.reasoning_summary_part.added");
		ev_item(o, s->ids.reasoning, s->open_index);
		engy_sse_out_adds(o,
				  ",\"summary_index\":0,\"part\":"
				  "{\"type\":\"summary_text\",\"text\":\"\"}");
		ev_end(o);
		return;
	}
	message_item(o, s->ids.message, "in_progress", NULL, 0, NULL, 0);
	ev_end(o);
	ev_begin(s, o, "response.content_part.added");
	ev_item(o, s->ids.message, s->open_index);
	engy_sse_out_adds(o, ",\"content_index\":0,\"part\":");
	text_part(o, "", 0, NULL, 0);
	ev_end(o);
}

int engy_resp_stream_text(struct engy_resp_stream *s, const char *content,
			  size_t content_len, const char *reasoning,
			  size_t reasoning_len, struct engy_sse_out *o)
{
	if (s->finished)
		return -EINVAL;
	engy_resp_stream_start(s, o);
	/* One reasoning item and one message: text of a kind whose item was
	 * closed is not reopened (a model reasons, then answers). */
	if (reasoning && reasoning_len && s->req->show_reasoning &&
	    !(s->had_reasoning && s->open != 1)) {
		open_item(s, o, 1);
		s->had_reasoning = true;
		ev_begin(s, o, "response.reasoning_summary_text.delta");
		ev_item(o, s->ids.reasoning, s->open_index);
		engy_sse_out_adds(o, ",\"summary_index\":0,\"delta\":");
		engy_sse_out_jstr(o, reasoning, reasoning_len);
		ev_end(o);
	}
	if (reasoning && reasoning_len) {
		engy_sse_out_add(&s->reasoning, reasoning, reasoning_len);
		s->reasoning_hash = engy_api_fnv(s->reasoning_hash, reasoning,
						 reasoning_len);
	}
	if (content && content_len && !(s->had_message && s->open != 2)) {
		open_item(s, o, 2);
		s->had_message = true;
		ev_begin(s, o, "response.output_text.delta");
		ev_item(o, s->ids.message, s->open_index);
		engy_sse_out_adds(o, ",\"content_index\":0,\"delta\":");
		engy_sse_out_jstr(o, content, content_len);
		engy_sse_out_adds(o, ",\"logprobs\":[]");
		ev_end(o);
		engy_sse_out_add(&s->content, content, content_len);
		s->content_hash =
			engy_api_fnv(s->content_hash, content, content_len);
	}
	if (s->content.err || s->reasoning.err)
		return -ENOMEM;
	return o->err;
}

static void call_events(struct engy_resp_stream *s, struct engy_sse_out *o,
			const struct engy_api_call *c)
{
	size_t index = s->n_items++, len = strlen(c->arguments), at = 0, n;
	char item_id[ENGY_API_MAX_NAME + 8];

	snprintf(item_id, sizeof(item_id), "fc_%s", c->id);
	ev_begin(s, o, "response.output_item.added");
	engy_sse_out_addf(o, ",\"output_index\":%zu,\"item\":", index);
	call_item(o, c, "in_progress", false);
	ev_end(o);
	while (at < len) {
		n = engy_sse_utf8_cut(c->arguments + at, len - at,
				      s->args_frag ? s->args_frag : 32);
		ev_begin(s, o, "response.function_call_arguments.delta");
		ev_item(o, item_id, index);
		engy_sse_out_adds(o, ",\"delta\":");
		engy_sse_out_jstr(o, c->arguments + at, n);
		ev_end(o);
		at += n;
	}
	ev_begin(s, o, "response.function_call_arguments.done");
	ev_item(o, item_id, index);
	engy_sse_out_adds(o, ",\"name\":");
	engy_sse_out_jstrz(o, c->name);
	engy_sse_out_adds(o, ",\"arguments\":");
	engy_sse_out_jstrz(o, c->arguments);
	ev_end(o);
	ev_begin(s, o, "response.output_item.done");
	engy_sse_out_addf(o, ",\"output_index\":%zu,\"item\":", index);
	call_item(o, c, "completed", true);
	ev_end(o);
}

int engy_resp_stream_finish(struct engy_resp_stream *s,
			    const struct engy_api_result *r,
			    struct engy_sse_out *o)
{
	struct engy_api_result fin = *r;
	struct engy_api_text t;
	const char *type;
	size_t i;

	if (s->finished)
		return -EINVAL;
	engy_resp_stream_start(s, o);
	engy_api_text_rest(r, s->content.len, s->content_hash, s->reasoning.len,
			   s->reasoning_hash, &t);
	engy_resp_stream_text(s, t.content, t.content_len, t.reasoning,
			      t.reasoning_len, o);
	/* An answer with neither text nor calls still has its message. */
	if (!s->had_message && !r->n_calls) {
		open_item(s, o, 2);
		s->had_message = true;
	}
	close_item(s, o);
	for (i = 0; i < r->n_calls; i++)
		call_events(s, o, &r->calls[i]);
	/* The final object holds what the events carried. */
	fin.content = s->content.buf ? s->content.buf : "";
	fin.content_len = s->content.len;
	fin.reasoning = s->had_reasoning ? s->reasoning.buf : NULL;
	fin.reasoning_len = s->had_reasoning ? s->reasoning.len : 0;
	type = cut_by_cap(r) ? "response.incomplete" : "response.completed";
	ev_begin(s, o, type);
	engy_sse_out_adds(o, ",\"response\":");
	response_obj(o, s->req, s->id, s->created,
		     cut_by_cap(r) ? "incomplete" : "completed", &s->ids, &fin);
	ev_end(o);
	s->finished = true;
	return o->err;
}

int engy_resp_stream_error(struct engy_resp_stream *s, struct engy_sse_out *o,
			   const struct engy_apierr *e)
{
	const char *code = e->code ? e->code : engy_apierr_code(e->status);

	ev_begin(s, o, "error");
	engy_sse_out_adds(o, ",\"code\":");
	engy_sse_out_jstrz(o, code);
	engy_sse_out_adds(o, ",\"message\":");
	engy_sse_out_jstrz(o, e->message);
	engy_sse_out_adds(o, ",\"param\":");
	engy_sse_out_jstrz(o, e->param);
	ev_end(o);
	s->finished = true;
	return o->err;
}

/* ---- legacy completions ---- */

static void cmpl_usage(struct engy_sse_out *o, const struct engy_api_result *r)
{
	engy_sse_out_addf(
		o,
		"{\"prompt_tokens\":%llu,\"completion_tokens\":%llu,"
		"\"total_tokens\":%llu}",
		(unsigned long long)r->prompt_tokens,
		(unsigned long long)r->completion_tokens,
		(unsigned long long)(r->prompt_tokens + r->completion_tokens));
}

/* A completion has no tool calls: "tool_calls" cannot come back (no
 * tools were sent), anything else stays. */
static const char *cmpl_finish(const struct engy_api_result *r)
{
	return strcmp(r->finish_reason, "tool_calls") == 0 ? "stop"
							   : r->finish_reason;
}

/*
 * The legacy logprobs object: {"tokens":[…],"token_logprobs":[…],
 * "top_logprobs":[{token: logprob, …}, …],"text_offset":[…]}, offsets in
 * bytes of the tokens' text from the start of the completion; of
 * alternatives with the same text only the first (likeliest) is a key.
 */
static bool seen(const cJSON *e, const cJSON *a)
{
	const char *t = engy_json_get(a, "token")->valuestring;
	const cJSON *b;

	cJSON_ArrayForEach(b, engy_json_get(e, "top_logprobs"))
	{
		if (b == a)
			return false;
		if (strcmp(engy_json_get(b, "token")->valuestring, t) == 0)
			return true;
	}
	return false;
}

static void cmpl_logprobs(struct engy_sse_out *o, const cJSON *content,
			  uint32_t top)
{
	const cJSON *e, *a;
	size_t off = 0;
	uint32_t k, n;
	bool first;

	engy_sse_out_adds(o, "{\"tokens\":[");
	first = true;
	cJSON_ArrayForEach(e, content)
	{
		if (!first)
			engy_sse_out_add(o, ",", 1);
		first = false;
		engy_sse_out_jstrz(o, engy_json_get(e, "token")->valuestring);
	}
	engy_sse_out_adds(o, "],\"token_logprobs\":[");
	first = true;
	cJSON_ArrayForEach(e, content)
	{
		engy_sse_out_addf(o, first ? "%.9g" : ",%.9g",
				  engy_json_get(e, "logprob")->valuedouble);
		first = false;
	}
	engy_sse_out_adds(o, "],\"top_logprobs\":[");
	first = true;
	cJSON_ArrayForEach(e, content)
	{
		engy_sse_out_adds(o, first ? "{" : ",{");
		first = false;
		k = 0;
		n = 0;
		cJSON_ArrayForEach(a, engy_json_get(e, "top_logprobs"))
		{
			if (k++ == top)
				break;
			/* one key per text (lone bytes of a UTF-8 sequence
			 * share one): the likeliest, which comes first */
			if (seen(e, a))
				continue;
			if (n++)
				engy_sse_out_add(o, ",", 1);
			engy_sse_out_jstrz(
				o, engy_json_get(a, "token")->valuestring);
			engy_sse_out_addf(
				o, ":%.9g",
				engy_json_get(a, "logprob")->valuedouble);
		}
		engy_sse_out_add(o, "}", 1);
	}
	engy_sse_out_adds(o, "],\"text_offset\":[");
	first = true;
	cJSON_ArrayForEach(e, content)
	{
		engy_sse_out_addf(o, first ? "%zu" : ",%zu", off);
		first = false;
		off += strlen(engy_json_get(e, "token")->valuestring);
	}
	engy_sse_out_adds(o, "]}");
}

int engy_cmpl_response(struct engy_sse_out *o, const struct engy_api_req *req,
		       const char *id, int64_t created,
		       const struct engy_api_result *r)
{
	engy_sse_out_adds(o, "{\"id\":");
	engy_sse_out_jstrz(o, id);
	engy_sse_out_addf(o,
			  ",\"object\":\"text_completion\",\"created\":%lld,"
			  "\"model\":",
			  (long long)(created ? created : time(NULL)));
	engy_sse_out_jstrz(o, req->model);
	engy_sse_out_adds(o, ",\"choices\":[{\"text\":");
	engy_sse_out_jstr(o, r->content, r->content_len);
	engy_sse_out_adds(o, ",\"index\":0,\"logprobs\":");
	if (req->logprobs && r->logprobs)
		cmpl_logprobs(o, r->logprobs, req->top_logprobs);
	else
		engy_sse_out_adds(o, "null");
	engy_sse_out_adds(o, ",\"finish_reason\":");
	engy_sse_out_jstrz(o, cmpl_finish(r));
	engy_sse_out_adds(o, "}],\"usage\":");
	cmpl_usage(o, r);
	return engy_sse_out_add(o, "}", 1);
}

int engy_cmpl_stream_init(struct engy_cmpl_stream *s,
			  const struct engy_api_req *req, const char *id,
			  int64_t created)
{
	memset(s, 0, sizeof(*s));
	s->head = engy_api_chunk_head(id, "text_completion", created,
				      req->model, &s->head_len);
	if (!s->head)
		return -ENOMEM;
	s->include_usage = req->include_usage;
	s->logprobs = req->logprobs;
	s->top_logprobs = req->top_logprobs;
	s->content_hash = FNV_OFFSET;
	return 0;
}

void engy_cmpl_stream_free(struct engy_cmpl_stream *s)
{
	free(s->head);
	memset(s, 0, sizeof(*s));
}

static void cmpl_chunk(struct engy_cmpl_stream *s, struct engy_sse_out *o,
		       const char *text, size_t len, const char *finish,
		       const cJSON *lp)
{
	engy_sse_out_begin(o, NULL);
	engy_sse_out_add(o, s->head, s->head_len);
	engy_sse_out_adds(o, "{\"text\":");
	engy_sse_out_jstr(o, text, len);
	engy_sse_out_adds(o, ",\"index\":0,\"logprobs\":");
	if (lp)
		cmpl_logprobs(o, lp, s->top_logprobs);
	else
		engy_sse_out_adds(o, "null");
	engy_sse_out_adds(o, ",\"finish_reason\":");
	engy_sse_out_jstrz(o, finish);
	engy_sse_out_adds(o, "}]");
	if (s->include_usage)
		engy_sse_out_adds(o, ",\"usage\":null");
	engy_sse_out_add(o, "}", 1);
	engy_sse_out_end(o);
}

int engy_cmpl_stream_text(struct engy_cmpl_stream *s, const char *content,
			  size_t content_len, struct engy_sse_out *o)
{
	if (s->finished)
		return -EINVAL;
	if (!content || !content_len)
		return o->err;
	cmpl_chunk(s, o, content, content_len, NULL, NULL);
	s->content_hash = engy_api_fnv(s->content_hash, content, content_len);
	s->content_sent += content_len;
	return o->err;
}

int engy_cmpl_stream_finish(struct engy_cmpl_stream *s,
			    const struct engy_api_result *r,
			    struct engy_sse_out *o)
{
	struct engy_api_text t;

	if (s->finished)
		return -EINVAL;
	engy_api_text_rest(r, s->content_sent, s->content_hash, 0, FNV_OFFSET,
			   &t);
	engy_cmpl_stream_text(s, t.content, t.content_len, o);
	/* the answer's logprobs ride on the finish chunk (its text is
	 * empty: the tokens came with the deltas before) */
	cmpl_chunk(s, o, "", 0, cmpl_finish(r),
		   s->logprobs && r->logprobs ? r->logprobs : NULL);
	if (s->include_usage) {
		engy_sse_out_begin(o, NULL);
		engy_sse_out_add(o, s->head, s->head_len);
		engy_sse_out_adds(o, "],\"usage\":");
		cmpl_usage(o, r);
		engy_sse_out_add(o, "}", 1);
		engy_sse_out_end(o);
	}
	s->finished = true;
	return engy_sse_out_adds(o, "data: [DONE]\n\n");
}
