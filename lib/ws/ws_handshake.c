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
	"Host",
	"Upgrade",
	"Connection",
	"Sec-WebSocket-Key",
	"Sec-WebSocket-Version",
	"Sec-WebSocket-Extensions",
	"Sec-WebSocket-Accept",
	"Content-Length",
	"Transfer-Encoding",
	NULL,
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
		if (!engy_http_token(headers[i])) {
			*why = "malformed header name";
			return -EINVAL;
		}
		if (!engy_http_value_ok(headers[i + 1])) {
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
	if (!engy_http_value_ok(host) || !engy_http_value_ok(target) ||
	    strchr(target, ' ')) {
		*why = "control character or space in the host or path";
		return -EINVAL;
	}
	s = malloc(len);
	if (!s) {
		*why = "out of memory";
		return -ENOMEM;
	}
	p = s +
	    sprintf(s,
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
			  char accept[ENGY_WS_ACCEPT_LEN + 1], const char **why)
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
	    engy_base64_decode(nonce, sizeof(nonce), key, strlen(key), &n) <
		    0 ||
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
		     "Sec-WebSocket-Accept: %s\r\n\r\n",
		     accept) < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

static const char *status_text(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 426:
		return "Upgrade Required";
	case 431:
		return "Request Header Fields Too Large";
	case 503:
		return "Service Unavailable";
	default:
		return "Internal Server Error";
	}
}

int engy_ws_refusal(char **out, int status, const char *why)
{
	const char *extra = "";

	if (status == 426)
		extra = "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n";
	else if (status == 405)
		extra = "Allow: GET\r\n";
	if (asprintf(
		    out,
		    "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
		    "Content-Length: %zu\r\n%sConnection: close\r\n\r\n%s\n",
		    status, status_text(status), strlen(why) + 1, extra,
		    why) < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}
