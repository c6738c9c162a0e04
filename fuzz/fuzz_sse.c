/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the SSE splitter differentially: the first input byte picks a piece
 * size, the rest is the stream.  Fed whole and fed in pieces, it must
 * yield the same events (hashed) and the same end state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sse.h"

struct acc {
	uint64_t h; /* FNV-1a over data bytes and event marks */
	size_t events;
};

static void mix(struct acc *a, const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		a->h = (a->h ^ (unsigned char)p[i]) * 0x100000001b3ull;
}

static int on_data(void *arg, const char *p, size_t n)
{
	if (!n)
		abort();
	mix(arg, p, n);
	return 0;
}

static int on_event(void *arg)
{
	struct acc *a = arg;

	a->events++;
	mix(a, "\0E", 2);
	return 0;
}

static const struct engy_sse_cb cb = { on_data, on_event };

static int run(const uint8_t *p, size_t n, size_t piece, struct acc *a)
{
	struct engy_sse s;
	size_t at, k;

	a->h = 0xcbf29ce484222325ull;
	a->events = 0;
	engy_sse_init(&s, &cb, a);
	for (at = 0; at < n; at += k) {
		k = n - at < piece ? n - at : piece;
		if (engy_sse_feed(&s, (const char *)p + at, k))
			abort();
	}
	return engy_sse_end(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct acc whole, cut;
	size_t piece;
	int a, b;

	if (size < 1)
		return 0;
	piece = 1 + data[0] % 17;
	a = run(data + 1, size - 1, size, &whole);
	b = run(data + 1, size - 1, piece, &cut);
	if (a != b || whole.h != cut.h || whole.events != cut.events) {
		fprintf(stderr, "fuzz_sse: pieces of %zu differ\n", piece);
		abort();
	}
	return 0;
}
