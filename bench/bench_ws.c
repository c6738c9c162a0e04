/* SPDX-License-Identifier: MIT */
/*
 * bench_ws: the websocket frame codec on the gateway's hot path: parsing
 * masked text frames from miners (unmask, UTF-8 check, join) and building
 * masked frames, in MB/s, against a byte-at-a-time baseline (unmask with
 * i % 4, decode-style UTF-8 check) measured in the same run on the same
 * bytes, with memcpy as the ceiling.  The text is a JSON-ish body, mostly
 * ASCII with some multi-byte characters, as prompts are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ws_frame.h"

#define MSG    (256 * 1024)
#define N_MSGS 64
#define ROUNDS 8

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The baseline: what a first implementation would write. */
static int naive_utf8(const uint8_t *p, size_t n)
{
	size_t i = 0, k, len;
	uint32_t cp;

	while (i < n) {
		uint8_t b = p[i];

		if (b < 0x80) {
			i++;
			continue;
		}
		len = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0;
		if (!len || i + len > n)
			return 0;
		cp = b & (0x7f >> len);
		for (k = 1; k < len; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += len;
	}
	return 1;
}

static size_t naive_parse(const uint8_t *f, size_t n, uint8_t *out)
{
	size_t off = 0, got = 0, len, i, h;
	const uint8_t *key;

	while (off < n) {
		len = f[off + 1] & 0x7f;
		h = 2;
		if (len == 126) {
			len = (size_t)f[off + 2] << 8 | f[off + 3];
			h = 4;
		} else if (len == 127) {
			for (len = 0, i = 0; i < 8; i++)
				len = len << 8 | f[off + 2 + i];
			h = 10;
		}
		key = f + off + h;
		h += 4;
		for (i = 0; i < len; i++)
			out[i] = f[off + h + i] ^ key[i % 4];
		if (!naive_utf8(out, len))
			abort();
		got += len;
		off += h + len;
	}
	return got;
}

int main(void)
{
	static const char chunk[] =
		"{\"role\":\"user\",\"content\":\"Explain the caf\xc3\xa9 "
		"m\xc3\xa9tro schedule \xe2\x80\x94 and \xf0\x9f\x9a\x87 times\"},";
	uint8_t *text = malloc(MSG), *frames, *out = malloc(MSG);
	uint8_t key[4] = { 0x12, 0x34, 0x56, 0x78 };
	size_t flen = 0, i, used, total = 0, got;
	struct engy_ws_parser p;
	struct engy_ws_event ev;
	double t, ours, naive, copy, build;
	int r, rc;

	frames = malloc((size_t)N_MSGS * (MSG + ENGY_WS_HEADER_MAX));
	if (!text || !out || !frames)
		return 1;
	for (i = 0; i + sizeof(chunk) - 1 <= MSG; i += sizeof(chunk) - 1)
		memcpy(text + i, chunk, sizeof(chunk) - 1);
	memset(text + i, ' ', MSG - i);

	/* Build N masked frames (the client side's work). */
	t = now();
	for (r = 0; r < ROUNDS; r++) {
		flen = 0;
		for (i = 0; i < N_MSGS; i++) {
			key[0] = (uint8_t)i;
			flen += engy_ws_frame_header(frames + flen, true,
						     ENGY_WS_OP_TEXT, MSG, key);
			engy_ws_mask(frames + flen, text, MSG, key, 0);
			flen += MSG;
		}
	}
	build = (double)ROUNDS * N_MSGS * MSG / (now() - t) / 1e6;

	/* Parse them as the server does, in 16 KiB reads. */
	t = now();
	for (r = 0; r < ROUNDS; r++) {
		engy_ws_parser_init(&p, true, 1 << 20);
		for (i = 0; i < flen; i += used) {
			rc = engy_ws_parse(&p, frames + i,
					   flen - i < 16384 ? flen - i : 16384,
					   &used, &ev);
			if (rc < 0)
				abort();
			if (rc > 0)
				total += ev.len;
		}
		engy_ws_parser_free(&p);
	}
	ours = (double)total / (now() - t) / 1e6;

	t = now();
	for (r = 0, got = 0; r < ROUNDS; r++)
		got += naive_parse(frames, flen, out);
	naive = (double)got / (now() - t) / 1e6;
	if (got != total)
		abort();

	t = now();
	for (r = 0; r < ROUNDS; r++)
		for (i = 0; i < N_MSGS; i++)
			memcpy(out, frames + i * (MSG + 14) + 14, MSG);
	copy = (double)ROUNDS * N_MSGS * MSG / (now() - t) / 1e6;

	printf("bench_ws: %d masked text frames of %d KiB, %d rounds\n", N_MSGS,
	       MSG / 1024, ROUNDS);
	printf("  parse (unmask, UTF-8, join) %8.0f MB/s   baseline %8.0f MB/s"
	       "   %.1fx\n",
	       ours, naive, ours / naive);
	printf("  build (header, mask)        %8.0f MB/s\n", build);
	printf("  memcpy ceiling              %8.0f MB/s\n", copy);
	free(text);
	free(out);
	free(frames);
	return 0;
}
