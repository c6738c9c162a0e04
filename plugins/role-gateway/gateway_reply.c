/* SPDX-License-Identifier: MIT */
/*
 * What goes out to a buyer (specs/buyer-api.md): a JSON reply, the SSE
 * stream's start and its writes, an error in the API's own shape (or
 * in-band once the stream is under way), the count of count_tokens.
 * Every reply carries x-request-id and request-id, with retry-after on
 * 429 and 503 and x-should-retry: false on a 402.  A leaf: it writes
 * and ends nothing of the request itself (gateway_req.c does).
 */
#include <errno.h>
#include <stdlib.h>

#include "gateway_int.h"

static void headers(struct gw_req *r, int status, const char *h[12])
{
	size_t n = 0;

	h[n++] = "x-request-id";
	h[n++] = r->request_id;
	h[n++] = "request-id";
	h[n++] = r->request_id;
	if (status == 429 || status == 503) {
		h[n++] = "retry-after";
		h[n++] = "1";
	} else if (status == 402) {
		h[n++] = "x-should-retry";
		h[n++] = "false";
	}
	h[n] = NULL;
}

void gw_reply_json(struct gw_req *r, int status, const char *body, size_t len)
{
	struct gw *g = r->g;
	const char *h[12];

	headers(r, status, h);
	if (g->t->http_reply(g->ti, r->x, status, "application/json", h, body,
			     len) < 0)
		GW_LOG(g, ENGY_LOG_INFO,
		       "event=reply_failed request=%s status=%d", r->request_id,
		       status);
	r->x = NULL;
}

void gw_reply_flush(struct gw_req *r)
{
	struct gw *g = r->g;

	if (!r->out.len)
		return;
	if (r->x && r->stream_begun)
		g->t->http_stream_write(g->ti, r->x, r->out.buf, r->out.len);
	engy_sse_out_reset(&r->out);
}

int gw_reply_stream_begin(struct gw_req *r)
{
	struct gw *g = r->g;
	const char *h[16];
	int rc;

	if (r->stream_begun)
		return 0;
	if (!r->x)
		return -EPIPE;
	headers(r, 200, h);
	h[4] = "Cache-Control";
	h[5] = "no-cache";
	h[6] = "X-Accel-Buffering";
	h[7] = "no";
	h[8] = NULL;
	rc = g->t->http_stream_begin(g->ti, r->x, 200, "text/event-stream", h);
	if (rc < 0)
		return rc;
	r->stream_begun = true;
	if (r->areq.route == ENGY_ROUTE_RESPONSES && r->rs.req)
		engy_resp_stream_start(&r->rs, &r->out);
	else if (r->api == ENGY_API_ANTHROPIC)
		engy_anth_stream_start(
			&r->as, r->prompt_exact ? r->prompt_bound : 0, &r->out);
	gw_reply_flush(r);
	return 0;
}

void gw_reply_error(struct gw_req *r, int status, const char *msg)
{
	struct engy_apierr e = {
		.status = status,
		.message = msg,
		.request_id = r->request_id,
	};
	char param[96];
	size_t len;
	char *body;

	engy_apierr_param_of(msg, param, sizeof(param));
	e.param = param[0] ? param : NULL;
	if (r->x && r->stream_begun && r->areq.route == ENGY_ROUTE_RESPONSES &&
	    r->rs.req) {
		engy_resp_stream_error(&r->rs, &r->out, &e);
		gw_reply_flush(r);
		r->g->t->http_stream_end(r->g->ti, r->x);
		r->x = NULL;
	} else if (r->x && r->stream_begun) {
		engy_apierr_sse(&r->out, r->api, &e);
		gw_reply_flush(r);
		r->g->t->http_stream_end(r->g->ti, r->x);
		r->x = NULL;
	} else if (r->x) {
		body = engy_apierr_body(r->api, &e, &len);
		if (body)
			gw_reply_json(r, status, body, len);
		else
			gw_reply_json(r, 500, NULL, 0);
		free(body);
	}
}

int gw_reply_count(struct gw_req *r)
{
	struct engy_sse_out o;

	engy_sse_out_init(&o);
	if (engy_anth_count_json(&o, r->prompt_bound) < 0) {
		engy_sse_out_free(&o);
		return -ENOMEM;
	}
	gw_reply_json(r, 200, o.buf, o.len);
	engy_sse_out_free(&o);
	return 0;
}
