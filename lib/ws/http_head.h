/* SPDX-License-Identifier: MIT */
/*
 * The one HTTP/1.1 head parser (RFC 9112): a request line or a status
 * line, header fields, the empty line.  transport-http reads requests
 * with it, transport-ws its upgrade requests and replies.  Pure code.
 *
 * Strict on purpose: what a lenient parser lets through (bare CR, folded
 * lines, space before the colon, two lengths) is what request smuggling
 * and header injection are made of.  The rules:
 *
 *  - A line ends in CRLF or in a bare LF (RFC 9112 §2.2 lets a recipient
 *    accept the bare LF; both transports always have).  A CR anywhere
 *    else is refused, as is a NUL anywhere.
 *  - The head ends at its first empty line, and exactly there: bytes
 *    after it are refused (the caller passes the head, not the body).
 *  - A line that starts with SP or HTAB (obs-fold, §5.2) is refused.
 *  - A field name is a token followed at once by ':' (no whitespace
 *    before the colon, §5.1); names compare case-insensitively.  A value
 *    loses its leading and trailing SP/HTAB and may hold HTAB, SP,
 *    visible ASCII and obs-text (0x80-0xff); any other control is refused.
 *  - Request line: a token method, one SP, the target, one SP, the
 *    version.  The target is origin-form ('/' then visible ASCII), or "*"
 *    for OPTIONS only; absolute-form and authority-form are refused (no
 *    proxying here).
 *  - Status line: the version, one SP, three digits (1xx-5xx), then
 *    nothing or one SP and a reason phrase (HTAB, SP, VCHAR, obs-text).
 *  - The version is HTTP/1.0 or HTTP/1.1; any other well-formed
 *    HTTP/DIGIT.DIGIT is -EPROTONOSUPPORT, anything else -EINVAL.
 *  - Framing (§6.3, the smuggling rules), -EBADMSG: Content-Length
 *    repeated with a different value, more than one Transfer-Encoding
 *    field, Transfer-Encoding together with Content-Length, a
 *    Content-Length that is not 1-15 digits, and (requests) more than one
 *    Host.  What Transfer-Encoding may say, and whether Host is required,
 *    is the caller's to decide.
 */
#ifndef ENGY_HTTP_HEAD_H
#define ENGY_HTTP_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The field limit of engy_http_head_parse() (the websocket handshake's). */
#define ENGY_HTTP_HEADERS_MAX 64

struct engy_http_field {
	const char *name;
	const char *value; /* surrounding whitespace removed */
};

/*
 * A parsed request or status head.  Strings point into a private copy of
 * the head; they live until engy_http_head_free().
 */
struct engy_http_head {
	char *buf; /* one allocation: the fields, then the text */
	/* request */
	const char *method;
	const char *target; /* origin-form: path and query; or "*" */
	/* response */
	int status;
	const char *reason_phrase;
	int http_minor;		/* HTTP/1.x: 0 or 1 */
	int64_t content_length; /* -1 when there is none */
	size_t n_fields;
	struct engy_http_field *fields;
};

/* Limits; 0 is no limit. */
struct engy_http_limits {
	size_t head;   /* bytes of the whole head: -EMSGSIZE */
	size_t fields; /* header fields: -E2BIG */
	size_t target; /* bytes of the request target: -ENAMETOOLONG */
};

/*
 * engy_http_head_parse_ex() - parse the head @p of @len bytes (the start
 * line through the empty line) into @h; a request when @request, else a
 * status line.  Returns 0; or -EINVAL malformed, -EBADMSG ambiguous
 * framing, -EPROTONOSUPPORT a version other than HTTP/1.0 or 1.1,
 * -ENAMETOOLONG, -E2BIG, -EMSGSIZE over a limit of @lim (may be NULL),
 * -ENOMEM; *@why then names the problem (a constant string) and @h holds
 * nothing to free.
 */
int engy_http_head_parse_ex(struct engy_http_head *h, const char *p, size_t len,
			    bool request, const struct engy_http_limits *lim,
			    const char **why);

/*
 * engy_http_head_parse() - engy_http_head_parse_ex() with at most
 * ENGY_HTTP_HEADERS_MAX fields and no other limit, the errors folded to
 * -EINVAL (a head it refuses), -E2BIG (too many fields) and -ENOMEM.
 */
int engy_http_head_parse(struct engy_http_head *h, const char *p, size_t len,
			 bool request, const char **why);
void engy_http_head_free(struct engy_http_head *h);

/* The first value of field @name (case-insensitive), or NULL. */
const char *engy_http_head_get(const struct engy_http_head *h,
			       const char *name);
/* Does any @name field list @token (comma-separated, case-insensitive)? */
bool engy_http_head_has_token(const struct engy_http_head *h, const char *name,
			      const char *token);

/* Is @s a token (RFC 9110 §5.6.2: one or more tchar)? */
bool engy_http_token(const char *s);
/* May @s stand as a field value (HTAB, SP, VCHAR, obs-text only)? */
bool engy_http_value_ok(const char *s);

#endif /* ENGY_HTTP_HEAD_H */
