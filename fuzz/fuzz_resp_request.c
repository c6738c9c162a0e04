/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the OpenAI Responses and legacy completions side of the buyer API
 * (lib/buyerapi/resp.c, resp_out.c, stop.c).  The input is tried as a
 * /v1/responses body and as a /v1/completions body: a parse either fails
 * with a one-line reason or yields a request the chat template renders
 * and the miner's field parser accepts.  It is also tried as a miner's
 * `response` output and, when readable, rendered as a response object,
 * as the Responses event stream (its first half, then the rest) and as a
 * text_completion: every byte out must be JSON or SSE of JSON.  Its
 * content also goes through the stop-string filter in pieces of every
 * size up to 7: what is let out is a prefix of the content, holds no
 * stop string, and is the final cut when the content is done.
 */
#include "buyerapi_fuzz.h"
#include "fuzz.h"
#include "resp.h"
#include "stop.h"

static void stops(const struct engy_api_result *r)
{
	cJSON *body = cJSON_Parse("{\"stop\":[\"\\n\",\"}\",\"ab\",\"xaby\"]}");
	struct engy_api_result fin = *r;
	struct engy_api_stopper f;
	struct engy_sse_out o;
	size_t piece, at, i;

	for (piece = 1; body && piece <= 7; piece++) {
		engy_api_stopper_init(&f, body);
		engy_sse_out_init(&o);
		for (at = 0; at < r->content_len; at += piece)
			engy_api_stopper_feed(&f, r->content + at,
					      r->content_len - at < piece
						      ? r->content_len - at
						      : piece,
					      &o);
		if (o.err)
			abort();
		if (o.len > r->content_len ||
		    (o.len && memcmp(o.buf, r->content, o.len)))
			abort();
		for (i = 0; i < f.st.n; i++)
			if (o.len &&
			    memmem(o.buf, o.len, f.st.s[i], f.st.len[i]))
				abort();
		fin = *r;
		engy_api_result_stops(&fin, &f.st, 0);
		if (f.hit && o.len != fin.content_len)
			abort();
		if (!f.hit && o.len + f.held_len != r->content_len)
			abort();
		engy_sse_out_free(&o);
		engy_api_stopper_free(&f);
	}
	cJSON_Delete(body);
}

static void render(const cJSON *output)
{
	struct engy_api_req req = { .model = "m",
				    .include_usage = true,
				    .show_reasoning = true,
				    .has_max_tokens = true,
				    .max_tokens = 9 };
	struct engy_resp_ids ids = { "rs_1", "msg_1", 0 };
	struct engy_resp_stream s;
	struct engy_cmpl_stream cs;
	struct engy_api_result r;
	struct engy_sse_out o;
	char err[256];

	if (engy_api_result_parse(output, &r, err, sizeof(err)))
		return;
	stops(&r);
	engy_sse_out_init(&o);
	if (engy_resp_response(&o, &req, "resp_f", 1, &ids, &r) == 0)
		fuzz_check_json(o.buf, o.len);
	engy_sse_out_reset(&o);
	if (engy_cmpl_response(&o, &req, "cmpl-f", 1, &r) == 0)
		fuzz_check_json(o.buf, o.len);
	engy_sse_out_reset(&o);
	if (engy_resp_stream_init(&s, &req, "resp_f", 1) == 0) {
		s.args_frag = 3;
		engy_resp_stream_text(&s, r.content, r.content_len / 2,
				      r.reasoning, r.reasoning_len / 2, &o);
		if (engy_resp_stream_finish(&s, &r, &o) == 0)
			fuzz_check_sse(o.buf, o.len);
		engy_resp_stream_free(&s);
	}
	engy_sse_out_reset(&o);
	if (engy_cmpl_stream_init(&cs, &req, "cmpl-f", 1) == 0) {
		engy_cmpl_stream_text(&cs, r.content, r.content_len / 2, &o);
		if (engy_cmpl_stream_finish(&cs, &r, &o) == 0)
			fuzz_check_sse(o.buf, o.len);
		engy_cmpl_stream_free(&cs);
	}
	engy_sse_out_free(&o);
	engy_api_result_free(&r);
}

static void parse(int (*fn)(const char *, size_t,
			    const struct engy_api_limits *,
			    struct engy_api_req *, char *, size_t),
		  const uint8_t *data, size_t size)
{
	struct engy_api_limits lim = { .max_body_bytes = 1 << 20,
				       .max_messages = 64 };
	struct engy_api_req req;
	char err[256];
	int rc;

	err[0] = '\0';
	rc = fn((const char *)data, size, &lim, &req, err, sizeof(err));
	if (rc == 0)
		fuzz_check_req(&req);
	else if (req.body || req.model || !err[0] || strchr(err, '\n') ||
		 (rc != -EINVAL && rc != -E2BIG && rc != -ENOMEM))
		abort();
	engy_api_req_free(&req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *j;

	parse(engy_resp_parse, data, size);
	parse(engy_cmpl_parse, data, size);
	j = cJSON_ParseWithLength((const char *)data, size);
	if (j)
		render(j);
	cJSON_Delete(j);
	return 0;
}
