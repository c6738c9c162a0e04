/* SPDX-License-Identifier: MIT */
/*
 * The writing side of the buyer API: a growable byte buffer that the
 * renderers append JSON bodies and server-sent events to.  The caller
 * hands ->buf/->len to its connection and resets the buffer; nothing here
 * does I/O.
 *
 * JSON strings are written with every control character escaped and any
 * byte sequence that is not well-formed UTF-8 replaced by U+FFFD, so what
 * leaves the gateway is valid JSON in valid UTF-8 whatever a miner sent.
 * SSE events are "event: NAME\n" (when named) then one "data: " line per
 * line of the payload, then a blank line.
 */
#ifndef ENGY_SSE_OUT_H
#define ENGY_SSE_OUT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct engy_sse_out {
	char *buf; /* NUL-terminated when not NULL */
	size_t len;
	size_t cap;
	int err; /* sticky: -ENOMEM after a failed growth */
};

void engy_sse_out_init(struct engy_sse_out *o);
void engy_sse_out_free(struct engy_sse_out *o);
/* Empty the buffer, keep its memory and clear the error. */
void engy_sse_out_reset(struct engy_sse_out *o);
/* Hand the bytes over (malloc'd, NUL-terminated; "" when empty) and reset;
 * NULL when the buffer is in error or out of memory. */
char *engy_sse_out_take(struct engy_sse_out *o, size_t *len);

/* Raw appends.  Each returns 0 or the sticky -ENOMEM.  An append that
 * fits is inline (renderers make a hundred small ones per answer); the
 * rest grow the buffer in engy_sse_out_add_grow(). */
int engy_sse_out_add_grow(struct engy_sse_out *o, const char *p, size_t n);
static inline int engy_sse_out_add(struct engy_sse_out *o, const char *p,
				   size_t n)
{
	if (o->err || !o->buf || n >= o->cap - o->len)
		return engy_sse_out_add_grow(o, p, n);
	if (n)
		memcpy(o->buf + o->len, p, n);
	o->len += n;
	o->buf[o->len] = '\0';
	return 0;
}
static inline int engy_sse_out_adds(struct engy_sse_out *o, const char *s)
{
	return engy_sse_out_add(o, s, strlen(s));
}
int engy_sse_out_addf(struct engy_sse_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int engy_sse_out_u64(struct engy_sse_out *o, uint64_t v);
int engy_sse_out_i64(struct engy_sse_out *o, int64_t v);

/*
 * engy_sse_out_cjson() - @j as the bytes cJSON_PrintUnformatted() writes
 * for it (strings escaped as cJSON does, not as engy_sse_out_jstr(); a
 * cJSON_Raw node's text as it is), without cJSON's buffer copies and
 * printf per integer; engy_sse_out_cjson_str() one such string.
 */
struct cJSON;
int engy_sse_out_cjson(struct engy_sse_out *o, const struct cJSON *j);
int engy_sse_out_cjson_str(struct engy_sse_out *o, const char *s);

/* A JSON string literal, quotes included, of @n bytes of @s. */
int engy_sse_out_jstr(struct engy_sse_out *o, const char *s, size_t n);
/* The same for a NUL-terminated string; NULL writes `null`. */
int engy_sse_out_jstrz(struct engy_sse_out *o, const char *s);

/*
 * engy_sse_utf8_cut() - the largest length <= @n at which @s can be cut
 * without splitting a UTF-8 sequence (never 0 when @n > 0: a cut that
 * would have to be 0 returns @n's first character's end instead).
 */
size_t engy_sse_utf8_cut(const char *s, size_t len, size_t n);

/*
 * engy_sse_out_event() - one event: "event: @event" (when not NULL), the
 * @n bytes of @data as data lines (split at LF, CR and CRLF), the blank
 * line.
 */
int engy_sse_out_event(struct engy_sse_out *o, const char *event,
		       const char *data, size_t n);
/* ": @text\n\n", a comment every SSE parser skips (a keep-alive); @text
 * must hold no line end. */
int engy_sse_out_comment(struct engy_sse_out *o, const char *text);

/*
 * Building an event in place: engy_sse_out_begin() writes the event line
 * and "data: ", the caller appends one line of JSON (no raw line ends:
 * engy_sse_out_jstr escapes them), engy_sse_out_end() closes the event.
 */
int engy_sse_out_begin(struct engy_sse_out *o, const char *event);
int engy_sse_out_end(struct engy_sse_out *o);

#endif /* ENGY_SSE_OUT_H */
