// SPDX-License-Identifier: MIT
/*
 * Buyer API error bodies in the OpenAI and Anthropic shapes.
 */
#include <ctype.h>
#include <string.h>

#include "apierr.h"

const char *engy_apierr_type(enum engy_api api, int status)
{
	if (api == ENGY_API_ANTHROPIC) {
		switch (status) {
		case 401:
			return "authentication_error";
		case 402:
			return "billing_error";
		case 403:
			return "permission_error";
		case 404:
			return "not_found_error";
		case 413:
			return "request_too_large";
		case 429:
			return "rate_limit_error";
		case 503:
		case 529:
			return "overloaded_error";
		case 504:
			return "timeout_error";
		}
		return status >= 500 ? "api_error" : "invalid_request_error";
	}
	switch (status) {
	case 402:
		return "insufficient_quota";
	case 403:
		return "permission_error";
	case 429:
		return "rate_limit_error";
	}
	return status >= 500 ? "server_error" : "invalid_request_error";
}

const char *engy_apierr_code(int status)
{
	switch (status) {
	case 401:
		return "invalid_api_key";
	case 402:
		return "insufficient_quota";
	case 404:
		return "model_not_found";
	case 408:
	case 504:
		return "timeout";
	case 413:
		return "request_too_large";
	case 429:
		return "rate_limit_exceeded";
	case 499:
		return "client_closed_request";
	case 502:
		return "bad_gateway";
	case 503:
		return "service_unavailable";
	}
	return NULL;
}

const char *engy_apierr_reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 402:
		return "Payment Required";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 409:
		return "Conflict";
	case 413:
		return "Payload Too Large";
	case 415:
		return "Unsupported Media Type";
	case 422:
		return "Unprocessable Entity";
	case 429:
		return "Too Many Requests";
	case 499:
		return "Client Closed Request";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 529:
		return "Overloaded";
	}
	return status >= 500 ? "Server Error" : "Error";
}

bool engy_apierr_retryable(int status)
{
	return status == 408 || status == 409 || status == 429 || status >= 500;
}

int engy_apierr_json(struct engy_sse_out *o, enum engy_api api,
		     const struct engy_apierr *e)
{
	const char *type = e->type ? e->type : engy_apierr_type(api, e->status);
	const char *msg =
		e->message ? e->message : engy_apierr_reason(e->status);

	if (api == ENGY_API_ANTHROPIC) {
		engy_sse_out_adds(o,
				  "{\"type\":\"error\",\"error\":{\"type\":");
		engy_sse_out_jstrz(o, type);
		engy_sse_out_adds(o, ",\"message\":");
		engy_sse_out_jstrz(o, msg);
		engy_sse_out_adds(o, "},\"request_id\":");
		engy_sse_out_jstrz(o, e->request_id);
		return engy_sse_out_add(o, "}", 1);
	}
	engy_sse_out_adds(o, "{\"error\":{\"message\":");
	engy_sse_out_jstrz(o, msg);
	engy_sse_out_adds(o, ",\"type\":");
	engy_sse_out_jstrz(o, type);
	engy_sse_out_adds(o, ",\"param\":");
	engy_sse_out_jstrz(o, e->param && e->param[0] ? e->param : NULL);
	engy_sse_out_adds(o, ",\"code\":");
	engy_sse_out_jstrz(o, e->code ? e->code : engy_apierr_code(e->status));
	return engy_sse_out_add(o, "}}", 2);
}

char *engy_apierr_body(enum engy_api api, const struct engy_apierr *e,
		       size_t *len)
{
	struct engy_sse_out o;

	engy_sse_out_init(&o);
	engy_apierr_json(&o, api, e);
	return engy_sse_out_take(&o, len);
}

int engy_apierr_sse(struct engy_sse_out *o, enum engy_api api,
		    const struct engy_apierr *e)
{
	engy_sse_out_begin(o, api == ENGY_API_ANTHROPIC ? "error" : NULL);
	engy_apierr_json(o, api, e);
	return engy_sse_out_end(o);
}

void engy_apierr_param_of(const char *msg, char *out, size_t outlen)
{
	const char *end = msg ? strstr(msg, ": ") : NULL;
	size_t n, i;

	if (outlen)
		out[0] = '\0';
	if (!end || end == msg)
		return;
	n = (size_t)(end - msg);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)msg[i];

		if (!isalnum(c) && !strchr("_.[]-", c))
			return;
	}
	if (n >= outlen)
		return;
	memcpy(out, msg, n);
	out[n] = '\0';
}

int engy_api_keepalive(struct engy_sse_out *o, enum engy_api api)
{
	if (api == ENGY_API_ANTHROPIC)
		return engy_sse_out_adds(
			o, "event: ping\ndata: {\"type\":\"ping\"}\n\n");
	return engy_sse_out_comment(o, "keep-alive");
}
