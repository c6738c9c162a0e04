/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the chat template and the generation parsers: a growable
 * byte buffer, JSON serialised the way the reference stack writes it
 * (Python json.dumps(ensure_ascii=False): ", " and ": " separators, keys in
 * insertion order, non-ASCII kept raw), and whitespace trimming with
 * Python's str.strip() notion of whitespace.
 */
#ifndef ENGY_CHAT_UTIL_H
#define ENGY_CHAT_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* A byte buffer, always NUL-terminated once anything was added; @err is
 * sticky (-ENOMEM), so callers check it once at the end. */
struct engy_chat_buf {
	char *p;
	size_t len;
	size_t cap;
	int err;
};

void engy_chat_buf_add(struct engy_chat_buf *b, const char *s, size_t n);
void engy_chat_buf_adds(struct engy_chat_buf *b, const char *s);
void engy_chat_buf_free(struct engy_chat_buf *b);

/*
 * engy_chat_buf_take() - hand the bytes over (never NULL on success: an
 * empty buffer gives ""); returns 0 or the sticky error, freeing the buffer.
 */
int engy_chat_buf_take(struct engy_chat_buf *b, char **out, size_t *len);

/* engy_chat_tojson() - append @v as Python json.dumps(v, ensure_ascii=False).
 */
void engy_chat_tojson(struct engy_chat_buf *b, const cJSON *v);

/* engy_chat_tojson_str() - append @s (@n bytes) as a JSON string literal. */
void engy_chat_tojson_str(struct engy_chat_buf *b, const char *s, size_t n);

/*
 * engy_chat_tojson_num() - append a number as Python prints it: integral
 * values below 1e16 as integers, others as repr(float) (shortest
 * round-trip digits, exponent form below 1e-4 and from 1e16).
 */
void engy_chat_tojson_num(struct engy_chat_buf *b, double d);

/* engy_chat_tojson_float() - append @d as Python's repr(float) ("5.0",
 * "1e-05"). */
void engy_chat_tojson_float(struct engy_chat_buf *b, double d);

/* engy_chat_pyspace() - byte length of the Python whitespace character
 * (str.isspace) at @s, or 0 if @s does not start with one. */
size_t engy_chat_pyspace(const char *s, size_t n);

/* engy_chat_pystrip() - narrow [*s, *s + *n) as Python's str.strip(). */
void engy_chat_pystrip(const char **s, size_t *n);

/* engy_chat_find() - first occurrence of @needle in @s[0..n), or NULL. */
const char *engy_chat_find(const char *s, size_t n, const char *needle);

/* engy_chat_has_prefix() - @s[0..n) starts with @prefix. */
bool engy_chat_has_prefix(const char *s, size_t n, const char *prefix);

#endif /* ENGY_CHAT_UTIL_H */
