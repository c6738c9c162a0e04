/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the websocket frame parser (lib/ws/ws_frame.c), both sides.
 * Input: one mode byte (bit 0: server side; bits 1-3: how the stream is
 * cut into pieces), then the byte stream.  Checks:
 *   - every event obeys the protocol's limits (message size, UTF-8 text,
 *     control payloads of at most 125 bytes, valid close codes);
 *   - a failure names a close code and stays failed;
 *   - cutting the stream differently never changes what comes out;
 *   - the builder's frame of the input, parsed back, is the input.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "ws_frame.h"

#define MAX_MESSAGE 4096

static const size_t cuts[8] = { 1, 2, 3, 7, 64, 125, 4096, (size_t)-1 };

struct digest {
	uint64_t h;
	unsigned events;
	int rc;
};

static void mix(struct digest *d, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		d->h = (d->h ^ b[i]) * 0x100000001b3ull;
}

static void check_event(const struct engy_ws_event *ev)
{
	switch (ev->type) {
	case ENGY_WS_EV_MESSAGE:
		if (ev->opcode != ENGY_WS_OP_TEXT &&
		    ev->opcode != ENGY_WS_OP_BINARY)
			abort();
		if (ev->len > MAX_MESSAGE)
			abort();
		if (ev->opcode == ENGY_WS_OP_TEXT &&
		    !engy_utf8_valid(ev->data, ev->len))
			abort();
		break;
	case ENGY_WS_EV_PING:
	case ENGY_WS_EV_PONG:
		if (ev->len > ENGY_WS_CONTROL_MAX)
			abort();
		break;
	case ENGY_WS_EV_CLOSE:
		if (ev->code == 1005 ? ev->len != 0
				     : !engy_ws_close_code_valid(ev->code))
			abort();
		if (ev->len > ENGY_WS_REASON_MAX ||
		    !engy_utf8_valid(ev->data, ev->len))
			abort();
		break;
	default:
		abort();
	}
}

static void run(bool server, const uint8_t *p, size_t n, size_t cut,
		struct digest *d)
{
	struct engy_ws_parser ps;
	struct engy_ws_event ev;
	size_t off = 0, used, chunk;
	int rc = 0;

	memset(d, 0, sizeof(*d));
	d->h = 0xcbf29ce484222325ull;
	engy_ws_parser_init(&ps, server, MAX_MESSAGE);
	while (off < n) {
		chunk = n - off < cut ? n - off : cut;
		rc = engy_ws_parse(&ps, p + off, chunk, &used, &ev);
		if (used > chunk)
			abort();
		off += used;
		if (rc < 0)
			break;
		if (rc == 0) {
			if (used != chunk)
				abort();
			continue;
		}
		check_event(&ev);
		mix(d, &ev.type, sizeof(ev.type));
		mix(d, &ev.opcode, sizeof(ev.opcode));
		mix(d, &ev.code, sizeof(ev.code));
		mix(d, &ev.len, sizeof(ev.len));
		mix(d, ev.data, ev.len);
		d->events++;
	}
	d->rc = rc < 0 ? rc : 0;
	if (rc < 0) {
		if (ps.fail_code != 1002 && ps.fail_code != 1007 &&
		    ps.fail_code != 1009 && ps.fail_code != 1011)
			abort();
		if (!ps.fail_reason)
			abort();
		if (engy_ws_parse(&ps, p, n, &used, &ev) != rc || used != 0)
			abort();
		mix(d, &ps.fail_code, sizeof(ps.fail_code));
	}
	engy_ws_parser_free(&ps);
}

/* The input as one masked binary frame, parsed back by a server. */
static void round_trip(const uint8_t *p, size_t n)
{
	struct engy_ws_parser ps;
	struct engy_ws_event ev;
	uint8_t *f = malloc(n + ENGY_WS_HEADER_MAX), key[4] = { 0 };
	size_t h, used;
	int rc;

	if (!f)
		abort();
	memcpy(key, p, n < 4 ? n : 4);
	h = engy_ws_frame_header(f, true, ENGY_WS_OP_BINARY, n, key);
	engy_ws_mask(f + h, p, n, key, 0);
	engy_ws_parser_init(&ps, true, n + 1);
	rc = engy_ws_parse(&ps, f, h + n, &used, &ev);
	if (rc != 1 || used != h + n || ev.type != ENGY_WS_EV_MESSAGE ||
	    ev.len != n || (n && memcmp(ev.data, p, n) != 0))
		abort();
	engy_ws_parser_free(&ps);
	free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct digest a, b;
	bool server;

	if (size < 1)
		return 0;
	server = data[0] & 1;
	run(server, data + 1, size - 1, cuts[(data[0] >> 1) & 7], &a);
	run(server, data + 1, size - 1, (size_t)-1, &b);
	if (a.h != b.h || a.events != b.events || a.rc != b.rc)
		abort();
	round_trip(data + 1, size - 1);
	return 0;
}
