/* SPDX-License-Identifier: MIT */
/* RFC 6455 frame codec (see ws_frame.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ws_frame.h"

enum { ST_HDR, ST_PAYLOAD, ST_FAILED };

/* A joined message buffer larger than this is freed once delivered, so an
 * idle connection does not pin the memory of its largest message. */
#define MSG_KEEP (64 * 1024)

#define ASCII_MASK 0x8080808080808080ull

bool engy_utf8_feed(struct engy_utf8 *u, const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t b = p[i];

		if (u->need) {
			if (b < u->lo || b > u->hi)
				return false;
			u->need--;
			u->lo = 0x80;
			u->hi = 0xbf;
			i++;
			continue;
		}
		if (b < 0x80) {
			uint64_t w;

			/* Prompts are mostly ASCII: skip it a word at a time. */
			while (i + 8 <= n) {
				memcpy(&w, p + i, 8);
				if (w & ASCII_MASK)
					break;
				i += 8;
			}
			if (i < n && p[i] < 0x80)
				i++;
			continue;
		}
		u->lo = 0x80;
		u->hi = 0xbf;
		if (b >= 0xc2 && b <= 0xdf) {
			u->need = 1;
		} else if (b >= 0xe0 && b <= 0xef) {
			u->need = 2;
			if (b == 0xe0)
				u->lo = 0xa0; /* no overlong forms */
			else if (b == 0xed)
				u->hi = 0x9f; /* no surrogates */
		} else if (b >= 0xf0 && b <= 0xf4) {
			u->need = 3;
			if (b == 0xf0)
				u->lo = 0x90;
			else if (b == 0xf4)
				u->hi = 0x8f; /* nothing above U+10FFFF */
		} else {
			return false;
		}
		i++;
	}
	return true;
}

bool engy_utf8_valid(const uint8_t *p, size_t n)
{
	struct engy_utf8 u = { 0, 0, 0 };

	return engy_utf8_feed(&u, p, n) && engy_utf8_finished(&u);
}

bool engy_ws_close_code_valid(int code)
{
	if (code >= 1000 && code <= 1003)
		return true;
	if (code >= 1007 && code <= 1014)
		return true;
	return code >= 3000 && code <= 4999;
}

void engy_ws_mask(uint8_t *dst, const uint8_t *src, size_t len,
		  const uint8_t mask[4], uint64_t pos)
{
	uint8_t m[8];
	uint64_t k, w;
	size_t i;

	for (i = 0; i < 8; i++)
		m[i] = mask[(pos + i) & 3];
	memcpy(&k, m, 8);
	/* Every 8-byte block starting at a multiple of 8 has the same phase. */
	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, src + i, 8);
		w ^= k;
		memcpy(dst + i, &w, 8);
	}
	for (; i < len; i++)
		dst[i] = src[i] ^ m[i & 7];
}

size_t engy_ws_frame_header(uint8_t *out, bool fin, int opcode, uint64_t len,
			    const uint8_t *mask)
{
	size_t n = 2, i;

	out[0] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0f));
	if (len < 126) {
		out[1] = (uint8_t)len;
	} else if (len <= 0xffff) {
		out[1] = 126;
		out[2] = (uint8_t)(len >> 8);
		out[3] = (uint8_t)len;
		n = 4;
	} else {
		out[1] = 127;
		for (i = 0; i < 8; i++)
			out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
		n = 10;
	}
	if (mask) {
		out[1] |= 0x80;
		memcpy(out + n, mask, 4);
		n += 4;
	}
	return n;
}

int engy_ws_close_payload(uint8_t *out, int code, const char *reason)
{
	size_t rlen = reason ? strlen(reason) : 0;

	if (!engy_ws_close_code_valid(code))
		return -EINVAL;
	if (rlen > ENGY_WS_REASON_MAX ||
	    !engy_utf8_valid((const uint8_t *)reason, rlen))
		return -EINVAL;
	out[0] = (uint8_t)(code >> 8);
	out[1] = (uint8_t)code;
	if (rlen)
		memcpy(out + 2, reason, rlen);
	return (int)(2 + rlen);
}

void engy_ws_parser_init(struct engy_ws_parser *p, bool server,
			 size_t max_message)
{
	memset(p, 0, sizeof(*p));
	p->server = server;
	p->max_message = max_message;
	p->state = ST_HDR;
	p->hdr_need = 2;
}

void engy_ws_parser_free(struct engy_ws_parser *p)
{
	free(p->msg);
	p->msg = NULL;
	p->msg_cap = 0;
	p->msg_len = 0;
}

static int fail(struct engy_ws_parser *p, int code, const char *why)
{
	p->state = ST_FAILED;
	p->fail_code = code;
	p->fail_reason = why;
	switch (code) {
	case 1007:
		return -EILSEQ;
	case 1009:
		return -EMSGSIZE;
	case 1011:
		return -ENOMEM;
	default:
		return -EPROTO;
	}
}

static int fail_again(const struct engy_ws_parser *p)
{
	switch (p->fail_code) {
	case 1007:
		return -EILSEQ;
	case 1009:
		return -EMSGSIZE;
	case 1011:
		return -ENOMEM;
	default:
		return -EPROTO;
	}
}

static bool is_control(int opcode)
{
	return (opcode & 0x8) != 0;
}

/* The first two bytes: everything but the extended length and the key. */
static int header_start(struct engy_ws_parser *p)
{
	uint8_t b0 = p->hdr[0], b1 = p->hdr[1];
	unsigned len7 = b1 & 0x7f;

	p->fin = b0 >> 7;
	p->opcode = b0 & 0x0f;
	p->masked = (b1 & 0x80) != 0;
	if (b0 & 0x70)
		return fail(p, 1002, "reserved bits set (no extension agreed)");
	switch (p->opcode) {
	case ENGY_WS_OP_CONT:
	case ENGY_WS_OP_TEXT:
	case ENGY_WS_OP_BINARY:
	case ENGY_WS_OP_CLOSE:
	case ENGY_WS_OP_PING:
	case ENGY_WS_OP_PONG:
		break;
	default:
		return fail(p, 1002, "reserved opcode");
	}
	if (is_control(p->opcode)) {
		if (!p->fin)
			return fail(p, 1002, "fragmented control frame");
		if (len7 > ENGY_WS_CONTROL_MAX)
			return fail(p, 1002, "control frame over 125 bytes");
	} else if (p->opcode == ENGY_WS_OP_CONT) {
		if (!p->msg_opcode)
			return fail(p, 1002, "continuation outside a message");
	} else if (p->msg_opcode) {
		return fail(p, 1002, "new message inside a fragmented one");
	}
	if (p->server && !p->masked)
		return fail(p, 1002, "unmasked frame from a client");
	if (!p->server && p->masked)
		return fail(p, 1002, "masked frame from a server");
	p->hdr_need = 2 +
		      (len7 == 126   ? 2
		       : len7 == 127 ? 8
				     : 0) +
		      (p->masked ? 4 : 0);
	return 0;
}

/* The whole header is in: length, key, size limit.  Returns 0 or < 0. */
static int header_end(struct engy_ws_parser *p)
{
	unsigned len7 = p->hdr[1] & 0x7f;
	size_t off = 2, i;
	uint64_t len = len7;

	if (len7 == 126) {
		len = (uint64_t)p->hdr[2] << 8 | p->hdr[3];
		off = 4;
		if (len < 126)
			return fail(p, 1002, "length not minimally encoded");
	} else if (len7 == 127) {
		len = 0;
		for (i = 0; i < 8; i++)
			len = len << 8 | p->hdr[2 + i];
		off = 10;
		if (len >> 63)
			return fail(p, 1002, "length with the top bit set");
		if (len <= 0xffff)
			return fail(p, 1002, "length not minimally encoded");
	}
	if (p->masked)
		memcpy(p->mask, p->hdr + off, 4);
	if (!is_control(p->opcode)) {
		if (len > p->max_message - p->msg_len)
			return fail(p, 1009, "message over max_message_bytes");
		if (p->opcode != ENGY_WS_OP_CONT) {
			p->msg_opcode = p->opcode;
			p->msg_len = 0;
			memset(&p->utf8, 0, sizeof(p->utf8));
		}
	}
	p->len = len;
	p->got = 0;
	return 0;
}

static int reserve(struct engy_ws_parser *p, size_t n)
{
	size_t need = p->msg_len + n, cap;
	uint8_t *m;

	if (need <= p->msg_cap)
		return 0;
	/* Grow as bytes arrive, never to a length the peer merely claimed. */
	cap = p->msg_cap ? p->msg_cap : 4096;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (cap > p->max_message && need <= p->max_message)
		cap = p->max_message;
	m = realloc(p->msg, cap);
	if (!m)
		return -ENOMEM;
	p->msg = m;
	p->msg_cap = cap;
	return 0;
}

static int payload(struct engy_ws_parser *p, const uint8_t *src, size_t n)
{
	uint8_t *dst;

	if (is_control(p->opcode)) {
		dst = p->ctl + p->got;
	} else {
		if (reserve(p, n) < 0)
			return fail(p, 1011, "out of memory");
		dst = p->msg + p->msg_len;
	}
	if (p->masked)
		engy_ws_mask(dst, src, n, p->mask, p->got);
	else
		memcpy(dst, src, n);
	if (!is_control(p->opcode)) {
		if (p->msg_opcode == ENGY_WS_OP_TEXT &&
		    !engy_utf8_feed(&p->utf8, dst, n))
			return fail(p, 1007, "text is not UTF-8");
		p->msg_len += n;
	}
	p->got += n;
	return 0;
}

/* A frame ended.  Returns 1 with @ev filled, 0 to go on, or < 0. */
static int frame_done(struct engy_ws_parser *p, struct engy_ws_event *ev)
{
	size_t n = (size_t)p->len;
	int code;

	p->state = ST_HDR;
	p->hdr_len = 0;
	p->hdr_need = 2;
	memset(ev, 0, sizeof(*ev));
	switch (p->opcode) {
	case ENGY_WS_OP_PING:
	case ENGY_WS_OP_PONG:
		ev->type = p->opcode == ENGY_WS_OP_PING ? ENGY_WS_EV_PING
							: ENGY_WS_EV_PONG;
		ev->data = p->ctl;
		ev->len = n;
		return 1;
	case ENGY_WS_OP_CLOSE:
		ev->type = ENGY_WS_EV_CLOSE;
		ev->data = p->ctl;
		if (n == 0) {
			ev->code = 1005;
			return 1;
		}
		if (n == 1)
			return fail(p, 1002, "close payload of one byte");
		code = p->ctl[0] << 8 | p->ctl[1];
		if (!engy_ws_close_code_valid(code))
			return fail(p, 1002, "invalid close code");
		if (!engy_utf8_valid(p->ctl + 2, n - 2))
			return fail(p, 1007, "close reason is not UTF-8");
		ev->code = code;
		ev->data = p->ctl + 2;
		ev->len = n - 2;
		return 1;
	default:
		break;
	}
	if (!p->fin)
		return 0;
	if (p->msg_opcode == ENGY_WS_OP_TEXT && !engy_utf8_finished(&p->utf8))
		return fail(p, 1007, "text ends inside a UTF-8 sequence");
	ev->type = ENGY_WS_EV_MESSAGE;
	ev->opcode = p->msg_opcode;
	ev->data = p->msg ? p->msg : (const uint8_t *)"";
	ev->len = p->msg_len;
	/* Released at the next call, once the caller is done with it. */
	p->msg_opcode = -1;
	return 1;
}

int engy_ws_parse(struct engy_ws_parser *p, const uint8_t *buf, size_t len,
		  size_t *used, struct engy_ws_event *ev)
{
	size_t off = 0, take;
	int rc;

	*used = 0;
	if (p->state == ST_FAILED)
		return fail_again(p);
	if (p->msg_opcode == -1) {
		p->msg_opcode = 0;
		p->msg_len = 0;
		if (p->msg_cap > MSG_KEEP)
			engy_ws_parser_free(p);
	}
	for (;;) {
		if (p->state == ST_HDR) {
			if (off == len)
				break;
			take = p->hdr_need - p->hdr_len;
			if (take > len - off)
				take = len - off;
			memcpy(p->hdr + p->hdr_len, buf + off, take);
			p->hdr_len += take;
			off += take;
			if (p->hdr_len < p->hdr_need)
				continue;
			if (p->hdr_len == 2) {
				rc = header_start(p);
				if (rc < 0)
					goto out;
				if (p->hdr_need > 2)
					continue;
			}
			rc = header_end(p);
			if (rc < 0)
				goto out;
			p->state = ST_PAYLOAD;
		}
		if (p->got < p->len) {
			if (off == len)
				break;
			take = len - off;
			if (take > p->len - p->got)
				take = (size_t)(p->len - p->got);
			rc = payload(p, buf + off, take);
			off += take;
			if (rc < 0)
				goto out;
			if (p->got < p->len)
				break;
		}
		rc = frame_done(p, ev);
		if (rc != 0)
			goto out;
	}
	rc = 0;
out:
	*used = off;
	return rc;
}
