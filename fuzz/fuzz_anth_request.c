/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the Anthropic side of the buyer API.  The input is tried as a
 * /v1/messages body (and as a count_tokens one): a parse either fails with
 * a one-line reason or yields a request the chat template renders and the
 * miner's field parser accepts.  It is also tried as a miner's `response`
 * output, rendered as a Message and as the event stream (with thinking
 * shown or not, text streamed in two halves first): every byte out must be
 * JSON or SSE of JSON.
 */
#include "anth.h"
#include "buyerapi_fuzz.h"
#include "fuzz.h"

static void render(const cJSON *output, bool show)
{
	struct engy_api_req req = { .model = "m", .show_reasoning = show };
	struct engy_anth_stream s;
	struct engy_api_result r;
	struct engy_sse_out o;
	char err[256];

	if (engy_api_result_parse(output, &r, err, sizeof(err)))
		return;
	engy_sse_out_init(&o);
	if (engy_anth_response(&o, &req, "msg_f", &r) == 0)
		fuzz_check_json(o.buf, o.len);
	engy_sse_out_reset(&o);
	if (engy_anth_stream_init(&s, &req, "msg_f") == 0) {
		s.args_frag = 3;
		engy_anth_stream_start(&s, 5, &o);
		engy_anth_stream_text(&s, NULL, 0, r.reasoning,
				      r.reasoning_len / 2, &o);
		engy_anth_stream_text(&s, r.content, r.content_len / 2, NULL, 0,
				      &o);
		if (engy_anth_stream_finish(&s, &r, &o) == 0)
			fuzz_check_sse(o.buf, o.len);
		engy_anth_stream_free(&s);
	}
	engy_sse_out_free(&o);
	engy_api_result_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_api_limits lim = { .max_body_bytes = 1 << 20 };
	struct engy_api_req req;
	unsigned flags;
	char err[256];
	cJSON *j;
	int rc;

	for (flags = 0; flags < 2; flags++) {
		err[0] = '\0';
		rc = engy_anth_parse((const char *)data, size, &lim,
				     flags ? ENGY_ANTH_COUNT_TOKENS : 0, &req,
				     err, sizeof(err));
		if (rc == 0)
			fuzz_check_req(&req);
		else if (req.body || req.model || !err[0] ||
			 strchr(err, '\n') ||
			 (rc != -EINVAL && rc != -E2BIG && rc != -ENOMEM))
			abort();
		engy_api_req_free(&req);
	}
	j = cJSON_ParseWithLength((const char *)data, size);
	if (j) {
		render(j, true);
		render(j, false);
	}
	cJSON_Delete(j);
	return 0;
}
