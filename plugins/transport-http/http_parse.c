/* SPDX-License-Identifier: MIT */
/*
 * The request-head parser: strict RFC 9112 syntax, because everything a
 * lenient parser lets through (bare CR, folded lines, spaces before the
 * colon) is what request smuggling is made of.  Pure code, no I/O.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "http_int.h"

static bool is_tchar(unsigned char c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Field values: visible ASCII, obs-text, space and tab; no CTLs. */
static bool is_vchar(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* The next line of @p (CRLF, or a bare LF as RFC 9112 allows); NULL if
 * a bare CR appears.  *@next points after the terminator. */
static char *line_end(char *p, char **next)
{
	char *lf = strchr(p, '\n');

	if (!lf)
		return NULL;
	*next = lf + 1;
	if (lf > p && lf[-1] == '\r')
		lf--;
	if (memchr(p, '\r', (size_t)(lf - p)))
		return NULL;
	*lf = '\0';
	return lf;
}

static int parse_request_line(char *line, struct th_head *out)
{
	char *sp1, *sp2, *v;

	sp1 = strchr(line, ' ');
	if (!sp1 || sp1 == line)
		return 400;
	*sp1 = '\0';
	for (v = line; *v; v++)
		if (!is_tchar((unsigned char)*v))
			return 400;
	sp2 = strchr(sp1 + 1, ' ');
	if (!sp2 || sp2 == sp1 + 1)
		return 400;
	*sp2 = '\0';
	out->method = line;
	out->target = sp1 + 1;
	if (strlen(out->target) > TH_MAX_TARGET)
		return 414;
	for (v = out->target; *v; v++)
		if ((unsigned char)*v <= 0x20 || (unsigned char)*v >= 0x7f)
			return 400;
	/* origin-form only: a server of its own routes has no proxy use
	 * for absolute-form, and "*" is OPTIONS-only. */
	if (out->target[0] != '/' && strcmp(out->target, "*") != 0)
		return 400;
	v = sp2 + 1;
	if (strncmp(v, "HTTP/", 5) != 0 || !isdigit((unsigned char)v[5]) ||
	    v[6] != '.' || !isdigit((unsigned char)v[7]) || v[8])
		return 400;
	if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
		return 505;
	out->minor = v[7] - '0';
	return 0;
}

static int parse_header(char *line, struct th_head *out)
{
	char *colon = strchr(line, ':'), *v, *end;
	char *p;

	if (!colon || colon == line)
		return 400;
	for (p = line; p < colon; p++)
		if (!is_tchar((unsigned char)*p))
			return 400;	/* includes space before the colon */
	*colon = '\0';
	v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	end = v + strlen(v);
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*end = '\0';
	for (p = v; *p; p++)
		if (!is_vchar((unsigned char)*p))
			return 400;
	if (out->n_hdr == TH_MAX_HEADERS)
		return 431;
	out->hdr[out->n_hdr].name = line;
	out->hdr[out->n_hdr].value = v;
	out->n_hdr++;
	return 0;
}

int th_parse_head(char *buf, size_t len, struct th_head *out)
{
	char *p = buf, *next, *line;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len > TH_MAX_HEAD)
		return 431;
	if (memchr(buf, '\0', len))
		return 400;
	line = p;
	if (!line_end(p, &next))
		return 400;
	rc = parse_request_line(line, out);
	if (rc)
		return rc;
	for (p = next; *p;) {
		line = p;
		if (!line_end(p, &next))
			return 400;
		p = next;
		if (!*line)
			return 0;	/* the empty line ends the head */
		if (*line == ' ' || *line == '\t')
			return 400;	/* obs-fold */
		rc = parse_header(line, out);
		if (rc)
			return rc;
	}
	return 400;			/* no empty line */
}

const char *th_header_get(const struct th_head *h, const char *name)
{
	size_t i;

	for (i = 0; i < h->n_hdr; i++)
		if (strcasecmp(h->hdr[i].name, name) == 0)
			return h->hdr[i].value;
	return NULL;
}

bool th_token_in_list(const char *list, const char *tok)
{
	size_t tl = strlen(tok);
	const char *p = list;

	while (p && *p) {
		const char *e;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		e = p;
		while (*e && *e != ',' && *e != ' ' && *e != '\t')
			e++;
		if ((size_t)(e - p) == tl && strncasecmp(p, tok, tl) == 0)
			return true;
		p = strchr(e, ',');
	}
	return false;
}

const char *th_reason(int status)
{
	static const struct {
		int code;
		const char *text;
	} r[] = {
		{ 100, "Continue" }, { 200, "OK" }, { 201, "Created" },
		{ 202, "Accepted" }, { 204, "No Content" },
		{ 301, "Moved Permanently" }, { 302, "Found" },
		{ 304, "Not Modified" }, { 400, "Bad Request" },
		{ 401, "Unauthorized" }, { 403, "Forbidden" },
		{ 404, "Not Found" }, { 405, "Method Not Allowed" },
		{ 408, "Request Timeout" }, { 409, "Conflict" },
		{ 411, "Length Required" }, { 413, "Content Too Large" },
		{ 414, "URI Too Long" }, { 415, "Unsupported Media Type" },
		{ 417, "Expectation Failed" }, { 422, "Unprocessable Content" },
		{ 429, "Too Many Requests" },
		{ 431, "Request Header Fields Too Large" },
		{ 499, "Client Closed Request" },
		{ 500, "Internal Server Error" }, { 501, "Not Implemented" },
		{ 502, "Bad Gateway" }, { 503, "Service Unavailable" },
		{ 504, "Gateway Timeout" },
		{ 505, "HTTP Version Not Supported" },
	};
	size_t i;

	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (r[i].code == status)
			return r[i].text;
	return "Unknown";
}
