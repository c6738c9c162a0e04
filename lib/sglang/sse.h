/* SPDX-License-Identifier: MIT */
/*
 * Incremental splitter of a server-sent events stream (the WHATWG
 * "text/event-stream" format as sglang's /generate writes it).  It never
 * buffers an event: the bytes of each event's data are handed on as they
 * arrive, so a final event of hundreds of MB costs no memory here, and
 * every input byte is looked at a bounded number of times (linear time for
 * any split of the stream into feeds).
 *
 * Handled: LF, CRLF and CR line ends (a CR at the end of one feed and the
 * LF at the start of the next count as one end), a leading UTF-8 BOM,
 * comment lines (":..."), several data lines per event (joined with "\n"),
 * the one optional space after the colon, and fields other than "data"
 * (event, id, retry, unknown), which are skipped.  An event is dispatched
 * at a blank line when it had at least one data line.
 */
#ifndef ENGY_SSE_H
#define ENGY_SSE_H

#include <stdbool.h>
#include <stddef.h>

struct engy_sse_cb {
	/* Bytes of the current event's data, in order; may be called many
	 * times per event, never with @n == 0.  Non-zero stops the feed. */
	int (*data)(void *arg, const char *p, size_t n);
	/* The current event is complete.  Non-zero stops the feed. */
	int (*event)(void *arg);
};

struct engy_sse {
	const struct engy_sse_cb *cb;
	void *arg;
	int state; /* where in a line we are */
	bool bom_checked;
	unsigned bom_seen; /* BOM bytes matched so far */
	bool skip_lf;	   /* the last byte was a CR */
	bool has_data;	   /* the event has a data line */
	char field[8];	   /* the field name while it may be "data" */
	unsigned flen;
	int err; /* sticky: a callback's return */
};

/* engy_sse_init() - start a stream; @cb and @arg are borrowed. */
void engy_sse_init(struct engy_sse *s, const struct engy_sse_cb *cb, void *arg);

/*
 * engy_sse_feed() - split @n more bytes.  Returns 0, or the first non-zero
 * value a callback returned (then the stream is dead: later feeds return
 * it again without calling anything).
 */
int engy_sse_feed(struct engy_sse *s, const char *p, size_t n);

/*
 * engy_sse_end() - the stream ended.  An event not closed by a blank line
 * is dropped (as the format says); returns 1 when that happened, so a
 * caller can tell a cut stream, else 0 (or the sticky error).
 */
int engy_sse_end(struct engy_sse *s);

#endif /* ENGY_SSE_H */
