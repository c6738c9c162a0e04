/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the OpenAI side of the buyer API.  The input is tried as a
 * /v1/chat/completions body: a parse either fails with a one-line reason
 * or yields a request the chat template renders and the miner's field
 * parser accepts.  It is also tried as a miner's `response` output and,
 * when readable, rendered as a chat.completion and as a chunk stream
 * (streamed whole, and as its first half then the rest), with logprobs and
 * 3 top_logprobs asked, and again once its alternatives are named by id
 * (as a gateway with a tokenizer does): every byte out must be JSON or SSE
 * of JSON.  The body's one-pass reader (engy_json_parse(), which
 * engy_oai_parse() tries before cJSON) builds cJSON's tree or nothing.
 */
#include <stdio.h>

#include "buyerapi_fuzz.h"
#include "fuzz.h"

/* A tokenizer stand-in for the gateway's naming of alternatives. */
static int decode(void *arg, uint32_t id, char **text, size_t *len)
{
	char buf[16];

	(void)arg;
	if (id >= 1000)
		return -ERANGE;
	snprintf(buf, sizeof(buf), "\xe2t%u", id); /* a lone UTF-8 byte */
	*text = strdup(buf);
	*len = strlen(buf);
	return *text ? 0 : -ENOMEM;
}

static void render(const cJSON *output)
{
	struct engy_api_req req = { .model = "m",
				    .include_usage = true,
				    .show_reasoning = true,
				    .logprobs = true,
				    .top_logprobs = 3 };
	struct engy_oai_stream s;
	struct engy_api_result r;
	struct engy_sse_out o;
	char err[256];

	if (engy_api_result_parse(output, &r, err, sizeof(err)))
		return;
	engy_sse_out_init(&o);
	if (engy_oai_response(&o, &req, "chatcmpl-f", 1, &r) == 0)
		fuzz_check_json(o.buf, o.len);
	engy_sse_out_reset(&o);
	if (engy_oai_stream_init(&s, &req, "chatcmpl-f", 1) == 0) {
		s.args_frag = 3;
		engy_oai_stream_text(&s, r.content, r.content_len / 2,
				     r.reasoning, r.reasoning_len / 2, &o);
		if (engy_oai_stream_finish(&s, &r, &o) == 0)
			fuzz_check_sse(o.buf, o.len);
		engy_oai_stream_free(&s);
	}
	/* the checked logprobs named by id, as a gateway with the model's
	 * tokenizer does, render as JSON too (or are dropped) */
	if (r.logprobs &&
	    engy_api_logprobs_name((cJSON *)r.logprobs, decode, NULL) == 0) {
		engy_sse_out_reset(&o);
		if (engy_oai_response(&o, &req, "chatcmpl-f", 1, &r) == 0)
			fuzz_check_json(o.buf, o.len);
	}
	engy_sse_out_free(&o);
	engy_api_result_free(&r);
}

/* engy_sse_out_cjson() (the serve frame's writer) writes exactly what
 * cJSON_PrintUnformatted() does, for the request a miner is sent and for
 * whatever cJSON reads. */
static void same_print(const cJSON *j)
{
	struct engy_sse_out o;
	char *c = cJSON_PrintUnformatted(j);

	engy_sse_out_init(&o);
	if (engy_sse_out_cjson(&o, j) == 0 && c && strcmp(o.buf, c) != 0)
		abort();
	if (c && o.err)
		abort(); /* printed by cJSON, refused here */
	free(c);
	engy_sse_out_free(&o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_api_limits lim = { .max_body_bytes = 1 << 20 };
	struct engy_api_req req;
	char err[256];
	cJSON *j;
	int rc;

	err[0] = '\0';
	rc = engy_oai_parse((const char *)data, size, &lim, &req, err,
			    sizeof(err));
	if (rc == 0)
		fuzz_check_req(&req);
	else if (req.body || req.model || !err[0] || strchr(err, '\n') ||
		 (rc != -EINVAL && rc != -E2BIG && rc != -ENOMEM))
		abort();
	if (rc == 0)
		same_print(req.body);
	engy_api_req_free(&req);
	fuzz_check_json_parse((const char *)data, size);
	j = cJSON_ParseWithLength((const char *)data, size);
	if (j) {
		render(j);
		same_print(j);
	}
	cJSON_Delete(j);
	return 0;
}
