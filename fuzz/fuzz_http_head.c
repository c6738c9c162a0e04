/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the HTTP/1.1 head parser (lib/ws/http_head.c).  Input: one
 * mode byte (bit 0: a request, else a status line), then the head.
 * Checks:
 *   - a refusal names its reason and leaves nothing to free;
 *   - what is accepted obeys the rules: token names and methods, values
 *     without controls or surrounding whitespace, origin-form targets,
 *     HTTP/1.0 or 1.1, a Content-Length that is the field's number;
 *   - the head written back out (CRLF, then bare LF) parses to the same
 *     fields, and engy_http_head_parse() agrees with the limits it has.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "http_head.h"

static const struct engy_http_limits lim = {
	.head = 16384,
	.fields = 100,
	.target = 8192,
};

static bool trimmed(const char *s)
{
	size_t n = strlen(s);

	return !n || (s[0] != ' ' && s[0] != '\t' && s[n - 1] != ' ' &&
		      s[n - 1] != '\t');
}

static void check(const struct engy_http_head *h, bool request)
{
	const char *cl = engy_http_head_get(h, "Content-Length");
	size_t i;

	if (request) {
		if (!h->method || !engy_http_token(h->method) || !h->target)
			abort();
		if (h->target[0] != '/' && strcmp(h->target, "*") != 0)
			abort();
		if (strpbrk(h->target, " \t\r\n"))
			abort();
	} else {
		if (h->status < 100 || h->status > 599 || !h->reason_phrase ||
		    !engy_http_value_ok(h->reason_phrase))
			abort();
	}
	if (h->http_minor != 0 && h->http_minor != 1)
		abort();
	for (i = 0; i < h->n_fields; i++)
		if (!engy_http_token(h->fields[i].name) ||
		    !engy_http_value_ok(h->fields[i].value) ||
		    !trimmed(h->fields[i].value) ||
		    strpbrk(h->fields[i].value, "\r\n"))
			abort();
	if ((cl == NULL) != (h->content_length < 0))
		abort();
	if (cl && h->content_length != strtoll(cl, NULL, 10))
		abort();
	if (cl && engy_http_head_get(h, "Transfer-Encoding"))
		abort();
}

/* The head in canonical form, lines ended by @eol. */
static char *write_head(const struct engy_http_head *h, bool request,
			const char *eol, size_t *len)
{
	size_t n = 64, i, o;
	char *s;

	n += request ? strlen(h->method) + strlen(h->target)
		     : strlen(h->reason_phrase);
	for (i = 0; i < h->n_fields; i++)
		n += strlen(h->fields[i].name) + strlen(h->fields[i].value) + 4;
	s = malloc(n);
	if (!s)
		abort();
	if (request)
		o = (size_t)snprintf(s, n, "%s %s HTTP/1.%d%s", h->method,
				     h->target, h->http_minor, eol);
	else
		o = (size_t)snprintf(s, n, "HTTP/1.%d %03d %s%s", h->http_minor,
				     h->status, h->reason_phrase, eol);
	for (i = 0; i < h->n_fields; i++)
		o += (size_t)snprintf(s + o, n - o, "%s: %s%s",
				      h->fields[i].name, h->fields[i].value,
				      eol);
	o += (size_t)snprintf(s + o, n - o, "%s", eol);
	if (o >= n)
		abort();
	*len = o;
	return s;
}

static void same(const struct engy_http_head *a, const struct engy_http_head *b,
		 bool request)
{
	size_t i;

	if (a->http_minor != b->http_minor || a->n_fields != b->n_fields ||
	    a->content_length != b->content_length)
		abort();
	if (request ? strcmp(a->method, b->method) != 0 ||
			      strcmp(a->target, b->target) != 0
		    : a->status != b->status ||
			      strcmp(a->reason_phrase, b->reason_phrase) != 0)
		abort();
	for (i = 0; i < a->n_fields; i++)
		if (strcmp(a->fields[i].name, b->fields[i].name) != 0 ||
		    strcmp(a->fields[i].value, b->fields[i].value) != 0)
			abort();
}

static void round_trip(const struct engy_http_head *h, bool request,
		       const char *eol)
{
	struct engy_http_head again;
	const char *why;
	size_t len;
	char *s = write_head(h, request, eol, &len);

	/* The canonical form may be longer than the input (": " for ":"),
	 * so no head-size limit here; the other limits still hold. */
	if (engy_http_head_parse_ex(
		    &again, s, len, request,
		    &(struct engy_http_limits){ .fields = lim.fields,
						.target = lim.target },
		    &why) != 0)
		abort();
	same(h, &again, request);
	engy_http_head_free(&again);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_http_head h, w;
	const char *why, *why_w;
	bool request;
	int rc, rc_w;

	if (size < 1)
		return 0;
	request = data[0] & 1;
	rc = engy_http_head_parse_ex(&h, (const char *)data + 1, size - 1,
				     request, &lim, &why);
	if (rc < 0) {
		if (!why || h.buf || h.n_fields || h.content_length != -1)
			abort();
		if (rc != -EINVAL && rc != -EBADMSG && rc != -EPROTONOSUPPORT &&
		    rc != -ENAMETOOLONG && rc != -E2BIG && rc != -EMSGSIZE &&
		    rc != -ENOMEM)
			abort();
	} else {
		if (rc != 0 || why)
			abort();
		check(&h, request);
		(void)engy_http_head_has_token(&h, "Connection", "close");
		round_trip(&h, request, "\r\n");
		round_trip(&h, request, "\n");
	}
	/* The websocket handshake's entry point: the same verdict wherever
	 * its one limit (64 fields, none on size) does not decide. */
	rc_w = engy_http_head_parse((&w), (const char *)data + 1, size - 1,
				    request, &why_w);
	if (rc_w != 0 && rc_w != -EINVAL && rc_w != -E2BIG && rc_w != -ENOMEM)
		abort();
	if (rc == 0 && h.n_fields <= ENGY_HTTP_HEADERS_MAX) {
		if (rc_w != 0)
			abort();
		same(&h, &w, request);
	}
	if (rc == -EINVAL && rc_w == 0)
		abort();
	if (rc_w == 0)
		engy_http_head_free(&w);
	if (rc == 0)
		engy_http_head_free(&h);
	return 0;
}
