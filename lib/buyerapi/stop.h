/* SPDX-License-Identifier: MIT */
/*
 * Stop strings held at the gateway (specs/buyer-api.md §8): a buyer's
 * stop strings are matched in the decoded answer text, across chunk and
 * token boundaries, the text is cut exactly before the first match (the one
 * completed first),
 * and a stream never carries a byte past it: the tail of the text that
 * could still begin a stop string is held back until the next chunk
 * settles it.  The miner matches them too (it stops generating); this is
 * what makes the cut hold whatever the worker did.  Only the answer's
 * content is cut, never reasoning or tool-call arguments.
 */
#ifndef ENGY_STOP_H
#define ENGY_STOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "oai.h"

struct engy_api_stops {
	const char *s[ENGY_API_MAX_STOP]; /* borrowed from the body */
	size_t len[ENGY_API_MAX_STOP];
	size_t n;
};

/* The chat body's "stop" (a string or up to 4 strings; others ignored). */
void engy_api_stops_init(struct engy_api_stops *st, const cJSON *body);

/* The first match in @p[0..@n) (the one that ends first; of those, the
 * one that starts first): the stop's index, its offset in *@at; -1 when
 * none. */
int engy_api_stops_find(const struct engy_api_stops *st, const char *p,
			size_t n, size_t *at);

/* The longest suffix of @p[0..@n) that is a proper prefix of a stop. */
size_t engy_api_stops_tail(const struct engy_api_stops *st, const char *p,
			   size_t n);

/*
 * engy_api_result_stops() - the final answer's stop rules: the content
 * cut before its earliest stop string (finish_reason "stop",
 * stop_sequence the string); else the miner's matched_stop when it names
 * one of @st's strings (stop_sequence); else a "stop" on an answer
 * without tool calls that used all of @max_tokens (non-zero) is
 * "length".
 */
void engy_api_result_stops(struct engy_api_result *r,
			   const struct engy_api_stops *st,
			   uint64_t max_tokens);

/* The stream's filter: feed each content delta; what may reach the
 * buyer now is appended to @emit.  After a match nothing more is. */
struct engy_api_stopper {
	struct engy_api_stops st;
	char *held;
	size_t held_len, held_cap;
	bool hit;
};

void engy_api_stopper_init(struct engy_api_stopper *f, const cJSON *body);
void engy_api_stopper_free(struct engy_api_stopper *f);
/* Returns 0 or -ENOMEM. */
int engy_api_stopper_feed(struct engy_api_stopper *f, const char *p, size_t n,
			  struct engy_sse_out *emit);

#endif /* ENGY_STOP_H */
