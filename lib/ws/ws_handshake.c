/* SPDX-License-Identifier: MIT */
/* RFC 6455 §4: the opening handshake (see ws_handshake.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "base64.h"
#include "ws_handshake.h"

static bool tchar(int c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!tchar((unsigned char)*s))
			return false;
	return true;
}

/* Field values: visible characters, spaces and tabs; no CTLs. */
static bool field_value_ok(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return s;
}

/* "HTTP/1.x": stores x; false for anything else. */
static bool http_version(const char *s, int *minor)
{
	if (strncmp(s, "HTTP/1.", 7) != 0 || s[7] < '0' || s[7] > '9' ||
	    s[8] != '\0')
		return false;
	*minor = s[7] - '0';
	return true;
}

static int start_line(struct engy_http_head *h, char *line, bool request,
		      const char **why)
{
	char *a = line, *b, *c;

	b = strchr(a, ' ');
	if (!b)
		goto bad;
	*b++ = '\0';
	if (request) {
		c = strchr(b, ' ');
		if (!c)
			goto bad;
		*c++ = '\0';
		if (!token(a)) {
			*why = "malformed method";
			return -EINVAL;
		}
		if (b[0] != '/') {
			*why = "request target must be a path";
			return -EINVAL;
		}
		if (!http_version(c, &h->http_minor)) {
			*why = "not an HTTP/1.x request";
			return -EINVAL;
		}
		h->method = a;
		h->target = b;
		return 0;
	}
	if (!http_version(a, &h->http_minor)) {
		*why = "not an HTTP/1.x reply";
		return -EINVAL;
	}
	if (b[0] < '1' || b[0] > '5' || b[1] < '0' || b[1] > '9' ||
	    b[2] < '0' || b[2] > '9' || (b[3] != ' ' && b[3] != '\0')) {
		*why = "malformed status code";
		return -EINVAL;
	}
	h->status = (b[0] - '0') * 100 + (b[1] - '0') * 10 + (b[2] - '0');
	h->reason_phrase = b[3] ? b + 4 : "";
	return 0;
bad:
	*why = request ? "malformed request line" : "malformed status line";
	return -EINVAL;
}

int engy_http_head_parse(struct engy_http_head *h, const char *p, size_t len,
			 bool request, const char **why)
{
	char *line, *next, *colon, *name;
	bool first = true;
	int rc;

	memset(h, 0, sizeof(*h));
	*why = NULL;
	if (memchr(p, '\0', len)) {
		*why = "NUL byte in the head";
		return -EINVAL;
	}
	h->buf = malloc(len + 1);
	if (!h->buf) {
		*why = "out of memory";
		return -ENOMEM;
	}
	memcpy(h->buf, p, len);
	h->buf[len] = '\0';
	for (line = h->buf; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (*line && line[strlen(line) - 1] == '\r')
			line[strlen(line) - 1] = '\0';
		if (first) {
			rc = start_line(h, line, request, why);
			if (rc < 0)
				goto fail;
			first = false;
			continue;
		}
		if (!*line)
			break;		/* the empty line ends the head */
		if (*line == ' ' || *line == '\t') {
			*why = "folded header line";
			rc = -EINVAL;
			goto fail;
		}
		colon = strchr(line, ':');
		if (!colon) {
			*why = "header line without a colon";
			rc = -EINVAL;
			goto fail;
		}
		*colon = '\0';
		name = line;
		if (!token(name)) {
			*why = "malformed header name";
			rc = -EINVAL;
			goto fail;
		}
		if (!field_value_ok(colon + 1)) {
			*why = "control character in a header value";
			rc = -EINVAL;
			goto fail;
		}
		if (h->n_fields == ENGY_HTTP_HEADERS_MAX) {
			*why = "too many header fields";
			rc = -E2BIG;
			goto fail;
		}
		h->fields[h->n_fields].name = name;
		h->fields[h->n_fields].value = trim(colon + 1);
		h->n_fields++;
	}
	if (first) {
		*why = "empty head";
		rc = -EINVAL;
		goto fail;
	}
	return 0;
fail:
	engy_http_head_free(h);
	return rc;
}

void engy_http_head_free(struct engy_http_head *h)
{
	free(h->buf);
	memset(h, 0, sizeof(*h));
}

const char *engy_http_head_get(const struct engy_http_head *h,
			       const char *name)
{
	size_t i;

	for (i = 0; i < h->n_fields; i++)
		if (strcasecmp(h->fields[i].name, name) == 0)
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

bool engy_http_head_has_token(const struct engy_http_head *h,
			      const char *name, const char *tok)
{
	size_t i;

	for (i = 0; i < h->n_fields; i++)
		if (strcasecmp(h->fields[i].name, name) == 0 &&
		    list_has(h->fields[i].value, tok))
			return true;
	return false;
}

void engy_ws_key(char out[ENGY_WS_KEY_LEN + 1], const uint8_t nonce[16])
{
	engy_base64_encode(out, nonce, 16);
}

int engy_ws_accept(char out[ENGY_WS_ACCEPT_LEN + 1], const char *key)
{
	static const char guid[] = ENGY_WS_GUID;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok;

	if (!ctx)
		return -EIO;
	ok = EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) &&
	     EVP_DigestUpdate(ctx, key, strlen(key)) &&
	     EVP_DigestUpdate(ctx, guid, sizeof(guid) - 1) &&
	     EVP_DigestFinal_ex(ctx, md, &md_len) && md_len == 20;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -EIO;
	engy_base64_encode(out, md, 20);
	return 0;
}

/* Headers the handshake owns; a caller may not add or override them. */
static const char *const reserved[] = {
	"Host", "Upgrade", "Connection", "Sec-WebSocket-Key",
	"Sec-WebSocket-Version", "Sec-WebSocket-Extensions",
	"Sec-WebSocket-Accept", "Content-Length", "Transfer-Encoding", NULL,
};

int engy_ws_request(char **out, const char *host, const char *target,
		    const char *key, const char *const *headers,
		    const char **why)
{
	size_t len, i, j;
	char *s, *p;

	*out = NULL;
	*why = NULL;
	len = strlen(target) + strlen(host) + strlen(key) + 128;
	for (i = 0; headers && headers[i]; i += 2) {
		if (!headers[i + 1]) {
			*why = "header without a value";
			return -EINVAL;
		}
		if (!token(headers[i])) {
			*why = "malformed header name";
			return -EINVAL;
		}
		if (!field_value_ok(headers[i + 1])) {
			*why = "control character in a header value";
			return -EINVAL;
		}
		for (j = 0; reserved[j]; j++)
			if (strcasecmp(headers[i], reserved[j]) == 0) {
				*why = "header set by the handshake itself";
				return -EINVAL;
			}
		len += strlen(headers[i]) + strlen(headers[i + 1]) + 4;
	}
	if (!field_value_ok(host) || !field_value_ok(target) ||
	    strchr(target, ' ')) {
		*why = "control character or space in the host or path";
		return -EINVAL;
	}
	s = malloc(len);
	if (!s) {
		*why = "out of memory";
		return -ENOMEM;
	}
	p = s + sprintf(s,
			"GET %s HTTP/1.1\r\nHost: %s\r\n"
			"Upgrade: websocket\r\nConnection: Upgrade\r\n"
			"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n",
			target, host, key);
	for (i = 0; headers && headers[i]; i += 2)
		p += sprintf(p, "%s: %s\r\n", headers[i], headers[i + 1]);
	memcpy(p, "\r\n", 3);
	*out = s;
	return 0;
}

int engy_ws_check_response(const struct engy_http_head *h, const char *key,
			   const char **why)
{
	char want[ENGY_WS_ACCEPT_LEN + 1];
	const char *got;

	if (h->status != 101) {
		*why = "the server refused the upgrade";
		return -EPROTO;
	}
	if (!engy_http_head_has_token(h, "Upgrade", "websocket") ||
	    !engy_http_head_has_token(h, "Connection", "upgrade")) {
		*why = "the reply lacks Upgrade: websocket";
		return -EPROTO;
	}
	got = engy_http_head_get(h, "Sec-WebSocket-Accept");
	if (engy_ws_accept(want, key) < 0) {
		*why = "SHA-1 unavailable";
		return -EPROTO;
	}
	if (!got || strcmp(got, want) != 0) {
		*why = "wrong Sec-WebSocket-Accept";
		return -EPROTO;
	}
	if (engy_http_head_get(h, "Sec-WebSocket-Extensions")) {
		*why = "the server chose an extension none was offered";
		return -EPROTO;
	}
	if (engy_http_head_get(h, "Sec-WebSocket-Protocol")) {
		*why = "the server chose a subprotocol none was offered";
		return -EPROTO;
	}
	*why = NULL;
	return 0;
}

int engy_ws_check_request(const struct engy_http_head *h,
			  char accept[ENGY_WS_ACCEPT_LEN + 1],
			  const char **why)
{
	const char *key, *ver;
	uint8_t nonce[16];
	size_t n = 0;

	if (!h->method || strcmp(h->method, "GET") != 0) {
		*why = "a websocket upgrade is a GET";
		return 405;
	}
	if (h->http_minor < 1) {
		*why = "a websocket upgrade needs HTTP/1.1";
		return 400;
	}
	if (!engy_http_head_get(h, "Host")) {
		*why = "no Host header";
		return 400;
	}
	if (!engy_http_head_has_token(h, "Upgrade", "websocket")) {
		*why = "this endpoint speaks websocket only (Upgrade: websocket)";
		return 426;
	}
	if (!engy_http_head_has_token(h, "Connection", "upgrade")) {
		*why = "Connection: Upgrade missing";
		return 400;
	}
	ver = engy_http_head_get(h, "Sec-WebSocket-Version");
	if (!ver || strcmp(ver, "13") != 0) {
		*why = "Sec-WebSocket-Version must be 13";
		return 426;
	}
	key = engy_http_head_get(h, "Sec-WebSocket-Key");
	if (!key || strlen(key) != ENGY_WS_KEY_LEN ||
	    engy_base64_decode(nonce, sizeof(nonce), key, strlen(key), &n) < 0 ||
	    n != 16) {
		*why = "Sec-WebSocket-Key must be base64 of 16 bytes";
		return 400;
	}
	if (engy_ws_accept(accept, key) < 0) {
		*why = "SHA-1 unavailable";
		return 500;
	}
	*why = NULL;
	return 0;
}

int engy_ws_response(char **out, const char *accept)
{
	if (asprintf(out,
		     "HTTP/1.1 101 Switching Protocols\r\n"
		     "Upgrade: websocket\r\nConnection: Upgrade\r\n"
		     "Sec-WebSocket-Accept: %s\r\n\r\n", accept) < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

static const char *status_text(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 426: return "Upgrade Required";
	case 431: return "Request Header Fields Too Large";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

int engy_ws_refusal(char **out, int status, const char *why)
{
	const char *extra = "";

	if (status == 426)
		extra = "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n";
	else if (status == 405)
		extra = "Allow: GET\r\n";
	if (asprintf(out,
		     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %zu\r\n%sConnection: close\r\n\r\n%s\n",
		     status, status_text(status), strlen(why) + 1, extra,
		     why) < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}
