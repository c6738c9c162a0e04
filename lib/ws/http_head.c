/* SPDX-License-Identifier: MIT */
/* The HTTP/1.1 head parser (see http_head.h for the rules it enforces). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_head.h"

/* RFC 9110 tchar: ALPHA, DIGIT and "!#$%&'*+-.^_`|~" (every byte of every
 * field name comes through here: a switch, not a strchr). */
static bool tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	switch (c) {
	case '!':
	case '#':
	case '$':
	case '%':
	case '&':
	case '\'':
	case '*':
	case '+':
	case '-':
	case '.':
	case '^':
	case '_':
	case '`':
	case '|':
	case '~':
		return true;
	default:
		return false;
	}
}

/* ASCII lower case (field names are tokens: ASCII only). */
static int lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* strcasecmp(a, b) == 0, with the first bytes compared first: most
 * fields are not the one asked for. */
static bool name_is(const char *a, const char *b)
{
	return lower((unsigned char)*a) == lower((unsigned char)*b) &&
	       strcasecmp(a, b) == 0;
}

/* HTAB, SP, VCHAR, obs-text: what a field value or reason may hold. */
static bool text_char(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

bool engy_http_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!tchar((unsigned char)*s))
			return false;
	return true;
}

bool engy_http_value_ok(const char *s)
{
	for (; *s; s++)
		if (!text_char((unsigned char)*s))
			return false;
	return true;
}

#define FAIL(code, text)                                                       \
	do {                                                                   \
		*why = (text);                                                 \
		return (code);                                                 \
	} while (0)

/* "HTTP/DIGIT.DIGIT" and nothing more: 0 for 1.0 and 1.1 (*@minor),
 * -EPROTONOSUPPORT for another version, -EINVAL for no version. */
static int version(const char *s, int *minor)
{
	if (strncmp(s, "HTTP/", 5) != 0 || s[5] < '0' || s[5] > '9' ||
	    s[6] != '.' || s[7] < '0' || s[7] > '9' || s[8] != '\0')
		return -EINVAL;
	if (s[5] != '1' || s[7] > '1')
		return -EPROTONOSUPPORT;
	*minor = s[7] - '0';
	return 0;
}

static int request_line(struct engy_http_head *h, char *line,
			const struct engy_http_limits *lim, const char **why)
{
	char *sp1, *sp2, *t;
	int rc;

	sp1 = strchr(line, ' ');
	if (!sp1 || sp1 == line)
		FAIL(-EINVAL, "malformed request line");
	*sp1 = '\0';
	if (!engy_http_token(line))
		FAIL(-EINVAL, "malformed method");
	t = sp1 + 1;
	sp2 = strchr(t, ' ');
	if (!sp2 || sp2 == t)
		FAIL(-EINVAL, "malformed request line");
	*sp2 = '\0';
	if (lim && lim->target && (size_t)(sp2 - t) > lim->target)
		FAIL(-ENAMETOOLONG, "request target too long");
	for (; *t; t++)
		if ((unsigned char)*t <= 0x20 || (unsigned char)*t >= 0x7f)
			FAIL(-EINVAL, "malformed request target");
	t = sp1 + 1;
	if (t[0] != '/' &&
	    !(strcmp(t, "*") == 0 && strcmp(line, "OPTIONS") == 0))
		FAIL(-EINVAL, "request target must be a path");
	rc = version(sp2 + 1, &h->http_minor);
	if (rc < 0)
		FAIL(rc, rc == -EINVAL ? "not an HTTP/1.x request"
				       : "HTTP version not supported");
	h->method = line;
	h->target = t;
	return 0;
}

static int status_line(struct engy_http_head *h, char *line, const char **why)
{
	char *b = strchr(line, ' ');
	int rc;

	if (!b)
		FAIL(-EINVAL, "malformed status line");
	*b++ = '\0';
	rc = version(line, &h->http_minor);
	if (rc < 0)
		FAIL(rc, rc == -EINVAL ? "not an HTTP/1.x reply"
				       : "HTTP version not supported");
	if (b[0] < '1' || b[0] > '5' || b[1] < '0' || b[1] > '9' ||
	    b[2] < '0' || b[2] > '9' || (b[3] != ' ' && b[3] != '\0'))
		FAIL(-EINVAL, "malformed status code");
	h->status = (b[0] - '0') * 100 + (b[1] - '0') * 10 + (b[2] - '0');
	h->reason_phrase = b[3] ? b + 4 : "";
	if (!engy_http_value_ok(h->reason_phrase))
		FAIL(-EINVAL, "control character in the reason phrase");
	return 0;
}

static int field_line(struct engy_http_head *h, char *line, size_t cap,
		      const char **why)
{
	char *colon = strchr(line, ':'), *v, *e;

	if (*line == ' ' || *line == '\t')
		FAIL(-EINVAL, "folded header line");
	if (!colon)
		FAIL(-EINVAL, "header line without a colon");
	*colon = '\0';
	if (!engy_http_token(line)) /* includes space before the colon */
		FAIL(-EINVAL, "malformed header name");
	v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	e = v + strlen(v);
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	if (!engy_http_value_ok(v))
		FAIL(-EINVAL, "control character in a header value");
	if (h->n_fields == cap)
		FAIL(-E2BIG, "too many header fields");
	h->fields[h->n_fields].name = line;
	h->fields[h->n_fields].value = v;
	h->n_fields++;
	return 0;
}

/* The smuggling rules (RFC 9112 §6.3, §3.2) once the fields are known. */
static int framing(struct engy_http_head *h, bool request, const char **why)
{
	const char *cl = NULL, *p;
	size_t i, n_te = 0, n_host = 0;
	int64_t len = 0;

	for (i = 0; i < h->n_fields; i++) {
		const struct engy_http_field *f = &h->fields[i];

		n_te += name_is(f->name, "Transfer-Encoding");
		n_host += name_is(f->name, "Host");
		if (!name_is(f->name, "Content-Length"))
			continue;
		if (cl && strcmp(cl, f->value) != 0)
			FAIL(-EBADMSG, "conflicting Content-Length headers");
		cl = f->value;
	}
	if (request && n_host > 1)
		FAIL(-EBADMSG, "more than one Host");
	if (n_te > 1)
		FAIL(-EBADMSG, "more than one Transfer-Encoding");
	if (n_te && cl)
		FAIL(-EBADMSG, "both Transfer-Encoding and Content-Length");
	if (cl) {
		if (!*cl || strlen(cl) > 15)
			FAIL(-EBADMSG, "bad Content-Length");
		for (p = cl; *p; p++) {
			if (*p < '0' || *p > '9')
				FAIL(-EBADMSG, "bad Content-Length");
			len = len * 10 + (*p - '0');
		}
		h->content_length = len;
	}
	return 0;
}

static int parse(struct engy_http_head *h, const char *p, size_t len,
		 bool request, const struct engy_http_limits *lim,
		 const char **why)
{
	char *line, *lf, *e, *end;
	size_t cap = 0, i;
	int rc;

	if (lim && lim->head && len > lim->head)
		FAIL(-EMSGSIZE, "head too large");
	if (memchr(p, '\0', len))
		FAIL(-EINVAL, "NUL byte in the head");
	/* Each field takes a line of its own (the start line and the empty
	 * line take two more): room for every line, up to the limit. */
	for (e = memchr(p, '\n', len); e;
	     e = memchr(e + 1, '\n', len - (size_t)(e + 1 - p)))
		cap++;
	if (lim && lim->fields && cap > lim->fields)
		cap = lim->fields;
	h->buf = malloc(cap * sizeof(*h->fields) + len + 1);
	if (!h->buf)
		FAIL(-ENOMEM, "out of memory");
	h->fields = (struct engy_http_field *)(void *)h->buf;
	line = h->buf + cap * sizeof(*h->fields);
	memcpy(line, p, len);
	line[len] = '\0';
	end = line + len;
	for (i = 0;; i++) {
		lf = memchr(line, '\n', (size_t)(end - line));
		if (!lf)
			FAIL(-EINVAL, i ? "no empty line at the end of the head"
					: "empty head");
		e = lf > line && lf[-1] == '\r' ? lf - 1 : lf;
		if (memchr(line, '\r', (size_t)(e - line)))
			FAIL(-EINVAL, "bare CR in the head");
		*e = '\0';
		if (i == 0) {
			rc = request ? request_line(h, line, lim, why)
				     : status_line(h, line, why);
		} else if (!*line) {
			if (lf + 1 != end)
				FAIL(-EINVAL, "bytes after the empty line");
			return framing(h, request, why);
		} else {
			rc = field_line(h, line, cap, why);
		}
		if (rc < 0)
			return rc;
		line = lf + 1;
	}
}

int engy_http_head_parse_ex(struct engy_http_head *h, const char *p, size_t len,
			    bool request, const struct engy_http_limits *lim,
			    const char **why)
{
	int rc;

	memset(h, 0, sizeof(*h));
	h->content_length = -1;
	*why = NULL;
	rc = parse(h, p, len, request, lim, why);
	if (rc < 0)
		engy_http_head_free(h);
	return rc;
}

int engy_http_head_parse(struct engy_http_head *h, const char *p, size_t len,
			 bool request, const char **why)
{
	static const struct engy_http_limits lim = {
		.fields = ENGY_HTTP_HEADERS_MAX,
	};
	int rc = engy_http_head_parse_ex(h, p, len, request, &lim, why);

	return rc == 0 || rc == -E2BIG || rc == -ENOMEM ? rc : -EINVAL;
}

void engy_http_head_free(struct engy_http_head *h)
{
	free(h->buf);
	memset(h, 0, sizeof(*h));
	h->content_length = -1;
}

const char *engy_http_head_get(const struct engy_http_head *h, const char *name)
{
	size_t i;

	for (i = 0; i < h->n_fields; i++)
		if (name_is(h->fields[i].name, name))
			return h->fields[i].value;
	return NULL;
}

static bool list_has(const char *list, const char *tok)
{
	size_t n = strlen(tok);
	const char *p = list, *e;

	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		e = p;
		while (*e && *e != ',')
			e++;
		/* trim the element's trailing whitespace */
		while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if ((size_t)(e - p) == n && strncasecmp(p, tok, n) == 0)
			return true;
		p = e;
		while (*p && *p != ',')
			p++;
	}
	return false;
}

bool engy_http_head_has_token(const struct engy_http_head *h, const char *name,
			      const char *tok)
{
	size_t i;

	for (i = 0; i < h->n_fields; i++)
		if (strcasecmp(h->fields[i].name, name) == 0 &&
		    list_has(h->fields[i].value, tok))
			return true;
	return false;
}
