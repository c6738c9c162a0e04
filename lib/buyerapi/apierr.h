/* SPDX-License-Identifier: MIT */
/*
 * Buyer API errors, in each API's own shape (specs/buyer-api.md §5):
 *
 *   OpenAI     {"error":{"message":…,"type":…,"param":…,"code":…}}
 *   Anthropic  {"type":"error","error":{"type":…,"message":…},
 *               "request_id":…}
 *
 * with the types the official SDKs map to their typed errors, the HTTP
 * status line text, which statuses a client may retry, and the in-band
 * forms for a stream that has already started (OpenAI: a data event
 * holding an "error" object; Anthropic: "event: error").  Messages are
 * the caller's: they name fields and limits, never buyer content.
 */
#ifndef ENGY_APIERR_H
#define ENGY_APIERR_H

#include <stdbool.h>
#include <stddef.h>

#include "sse_out.h"

/* Which buyer API a request came in on. */
enum engy_api {
	ENGY_API_OPENAI = 0, /* POST /v1/chat/completions */
	ENGY_API_ANTHROPIC,  /* POST /v1/messages */
};

/*
 * engy_apierr_type() - error.type for @status: OpenAI
 * invalid_request_error (400, 401 as OpenAI sends it, 404, 413, 499, other
 * 4xx), insufficient_quota (402), permission_error (403),
 * rate_limit_error (429), server_error (5xx); Anthropic
 * invalid_request_error (400, other 4xx), authentication_error (401),
 * billing_error (402), permission_error (403), not_found_error (404),
 * request_too_large (413), rate_limit_error (429), timeout_error (504),
 * overloaded_error (503, 529), api_error (other 5xx).
 */
const char *engy_apierr_type(enum engy_api api, int status);

/*
 * engy_apierr_code() - OpenAI error.code for @status: invalid_api_key
 * (401), insufficient_quota (402), model_not_found (404),
 * request_too_large (413), rate_limit_exceeded (429),
 * client_closed_request (499), bad_gateway (502), service_unavailable
 * (503), timeout (408, 504); NULL (null) for the rest.
 */
const char *engy_apierr_code(int status);

/* engy_apierr_reason() - the status line text ("Payment Required"). */
const char *engy_apierr_reason(int status);

/*
 * engy_apierr_retryable() - whether the SDKs' retry policy applies to
 * @status (408, 409, 429, >= 500).  The gateway sends "x-should-retry:
 * false" on a 429 that waiting will not cure (a spent quota) and
 * "retry-after" on one that it will.
 */
bool engy_apierr_retryable(int status);

struct engy_apierr {
	int status;		/* HTTP status, 400..599 */
	const char *message;	/* one line; required */
	const char *param;	/* OpenAI error.param (a field), NULL: null */
	const char *code;	/* OpenAI error.code; NULL: engy_apierr_code */
	const char *type;	/* NULL: engy_apierr_type */
	const char *request_id; /* Anthropic request_id; NULL: null */
};

/*
 * engy_apierr_json() - append the error body for @api to @o.  Returns 0
 * or the buffer's sticky -ENOMEM.
 */
int engy_apierr_json(struct engy_sse_out *o, enum engy_api api,
		     const struct engy_apierr *e);

/*
 * engy_apierr_body() - the same as a malloc'd NUL-terminated string
 * (length in *@len), NULL when out of memory.
 */
char *engy_apierr_body(enum engy_api api, const struct engy_apierr *e,
		       size_t *len);

/*
 * engy_apierr_sse() - the error event for a stream already under way:
 * OpenAI "data: {"error":{…}}", Anthropic "event: error" with the body.
 * The stream ends after it (no [DONE], no message_stop).
 */
int engy_apierr_sse(struct engy_sse_out *o, enum engy_api api,
		    const struct engy_apierr *e);

/*
 * engy_apierr_param_of() - the field a validation message names: the
 * text before its first ": " when that looks like a field path
 * ("messages[2].role"), copied to @out; "" when it does not.
 */
void engy_apierr_param_of(const char *msg, char *out, size_t outlen);

/*
 * engy_api_keepalive() - what keeps an idle stream open while a request
 * waits for its first token: ": keep-alive" (OpenAI) or an Anthropic
 * "event: ping".  Both are skipped by the SDKs' parsers.
 */
int engy_api_keepalive(struct engy_sse_out *o, enum engy_api api);

#endif /* ENGY_APIERR_H */
