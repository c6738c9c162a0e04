/* SPDX-License-Identifier: MIT */
/*
 * The RFC 6455 opening handshake, both sides: Sec-WebSocket-Key /
 * Sec-WebSocket-Accept, the client's request and the server's checks and
 * replies, on the heads http_head.h parses.  No extensions and no
 * subprotocols are ever negotiated.  Pure code: the transport does the I/O.
 */
#ifndef ENGY_WS_HANDSHAKE_H
#define ENGY_WS_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http_head.h"

#define ENGY_WS_GUID	   "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define ENGY_WS_KEY_LEN	   24 /* base64 of 16 bytes */
#define ENGY_WS_ACCEPT_LEN 28 /* base64 of a SHA-1 */

/* engy_ws_key() - the Sec-WebSocket-Key for a 16-byte random @nonce. */
void engy_ws_key(char out[ENGY_WS_KEY_LEN + 1], const uint8_t nonce[16]);

/*
 * engy_ws_accept() - Sec-WebSocket-Accept for @key (base64(SHA-1(key
 * GUID))).  Returns 0 or -EIO when the digest is unavailable.
 */
int engy_ws_accept(char out[ENGY_WS_ACCEPT_LEN + 1], const char *key);

/*
 * engy_ws_request() - the client's upgrade request: GET @target with Host
 * @host, the key, version 13, then @headers (name, value, ..., NULL; may be
 * NULL).  Returns a malloc'd string in *@out, or -EINVAL (and *@why) for an
 * extra header that is malformed, holds CR/LF, or is one the handshake sets.
 */
int engy_ws_request(char **out, const char *host, const char *target,
		    const char *key, const char *const *headers,
		    const char **why);

/*
 * engy_ws_check_response() - the client's check of the server's reply to
 * @key.  Returns 0 when it accepts the upgrade, else -EPROTO with *@why
 * (the status, if not 101, is in h->status).
 */
int engy_ws_check_response(const struct engy_http_head *h, const char *key,
			   const char **why);

/*
 * engy_ws_check_request() - the server's check of an upgrade request.
 * Returns 0 with @accept filled, or the HTTP status to refuse with (400
 * malformed, 405 not GET, 426 not an upgrade or not version 13) and *@why.
 */
int engy_ws_check_request(const struct engy_http_head *h,
			  char accept[ENGY_WS_ACCEPT_LEN + 1],
			  const char **why);

/* engy_ws_response() - the 101 reply, malloc'd in *@out; 0 or -ENOMEM. */
int engy_ws_response(char **out, const char *accept);

/*
 * engy_ws_refusal() - a complete refusal for @status with the one-line
 * text @why as its body (426 also names the version and Upgrade; 405 says
 * Allow: GET).  malloc'd in *@out; 0 or -ENOMEM.
 */
int engy_ws_refusal(char **out, int status, const char *why);

#endif /* ENGY_WS_HANDSHAKE_H */
