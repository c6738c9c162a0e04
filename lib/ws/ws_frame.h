/* SPDX-License-Identifier: MIT */
/*
 * RFC 6455 frame codec: an incremental parser of frames from a byte stream
 * and a frame builder, shared by both sides of transport-ws.  No I/O, no
 * extensions (any RSV bit is a protocol error), no subprotocols.
 *
 * The parser joins fragments into whole messages (control frames may come
 * between fragments), validates text as UTF-8 as the bytes arrive (so a bad
 * byte fails at once, not at the end of a long message), enforces the
 * masking rule of its side and a maximum message size, and checks close
 * frames.  Every failure carries the close code to send: 1002 (protocol),
 * 1007 (invalid UTF-8) or 1009 (too big).
 */
#ifndef ENGY_WS_FRAME_H
#define ENGY_WS_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum engy_ws_opcode {
	ENGY_WS_OP_CONT = 0x0,
	ENGY_WS_OP_TEXT = 0x1,
	ENGY_WS_OP_BINARY = 0x2,
	ENGY_WS_OP_CLOSE = 0x8,
	ENGY_WS_OP_PING = 0x9,
	ENGY_WS_OP_PONG = 0xa,
};

#define ENGY_WS_HEADER_MAX  14	/* 2 + 8 (length) + 4 (mask) */
#define ENGY_WS_CONTROL_MAX 125 /* payload of a control frame */
#define ENGY_WS_REASON_MAX  123 /* a close reason, after the code */

enum engy_ws_event_type {
	ENGY_WS_EV_MESSAGE = 1, /* a whole text or binary message */
	ENGY_WS_EV_PING = 2,
	ENGY_WS_EV_PONG = 3,
	ENGY_WS_EV_CLOSE = 4,
};

/**
 * struct engy_ws_event - what engy_ws_parse() completed.
 * @type:   enum engy_ws_event_type.
 * @opcode: MESSAGE: ENGY_WS_OP_TEXT or ENGY_WS_OP_BINARY.
 * @data:   the message or control payload (CLOSE: the reason, without the
 *          code); parser-owned, valid until the next engy_ws_parse().
 * @code:   CLOSE: the peer's code, or 1005 when the frame had none.
 */
struct engy_ws_event {
	int type;
	int opcode;
	const uint8_t *data;
	size_t len;
	int code;
};

/* Incremental UTF-8 validator state (zero = between characters). */
struct engy_utf8 {
	uint8_t need;	/* continuation bytes still expected */
	uint8_t lo, hi; /* allowed range of the next one */
};

struct engy_ws_parser {
	bool server; /* frames must be masked (we are the server) */
	size_t max_message;
	int state;
	/* the frame being read */
	uint8_t hdr[ENGY_WS_HEADER_MAX];
	size_t hdr_len, hdr_need;
	int fin, opcode;
	bool masked;
	uint8_t mask[4];
	uint64_t len, got;
	/* the message being joined */
	int msg_opcode; /* 0: none in progress */
	uint8_t *msg;
	size_t msg_len, msg_cap;
	struct engy_utf8 utf8;
	uint8_t ctl[ENGY_WS_CONTROL_MAX];
	/* after a failure */
	int fail_code;
	const char *fail_reason;
};

/* engy_ws_parser_init() - @server: we are the server side. */
void engy_ws_parser_init(struct engy_ws_parser *p, bool server,
			 size_t max_message);
void engy_ws_parser_free(struct engy_ws_parser *p);

/*
 * engy_ws_parse() - consume bytes of @buf until one event completes.
 * Stores in *@used how many bytes were consumed.  Returns 1 with @ev
 * filled, 0 when all @len bytes were consumed without completing an event,
 * or a negative errno once the stream is broken: -EPROTO (close code 1002),
 * -EILSEQ (1007), -EMSGSIZE (1009), -ENOMEM (1011); p->fail_code and
 * p->fail_reason (static text) say which, and every later call fails alike.
 */
int engy_ws_parse(struct engy_ws_parser *p, const uint8_t *buf, size_t len,
		  size_t *used, struct engy_ws_event *ev);

/*
 * engy_ws_frame_header() - write a frame header into @out (at least
 * ENGY_WS_HEADER_MAX bytes): FIN when @fin, @opcode, payload length @len,
 * and the masking key @mask when not NULL (client frames).  Returns its
 * length.
 */
size_t engy_ws_frame_header(uint8_t *out, bool fin, int opcode, uint64_t len,
			    const uint8_t *mask);

/*
 * engy_ws_mask() - @dst = @src XOR @mask for @len bytes that start @pos
 * bytes into the payload, so a payload can be masked in pieces.  @dst may
 * equal @src.
 */
void engy_ws_mask(uint8_t *dst, const uint8_t *src, size_t len,
		  const uint8_t mask[4], uint64_t pos);

/*
 * engy_ws_close_payload() - the payload of a close frame: @code big-endian
 * and @reason (may be NULL), into @out (ENGY_WS_CONTROL_MAX bytes).
 * Returns its length, or -EINVAL when @code may not be sent or @reason is
 * not UTF-8 or longer than ENGY_WS_REASON_MAX bytes.
 */
int engy_ws_close_payload(uint8_t *out, int code, const char *reason);

/* May @code appear in a close frame on the wire (RFC 6455 §7.4)? */
bool engy_ws_close_code_valid(int code);

/* UTF-8 validation, whole or in pieces (feed, then require finished). */
bool engy_utf8_feed(struct engy_utf8 *u, const uint8_t *p, size_t n);
static inline bool engy_utf8_finished(const struct engy_utf8 *u)
{
	return u->need == 0;
}
bool engy_utf8_valid(const uint8_t *p, size_t n);

#endif /* ENGY_WS_FRAME_H */
