// SPDX-License-Identifier: MIT
/*
 * The buyer API's output buffer: JSON strings and server-sent events.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "grow.h"
#include "jsonword.h"
#include "sse_out.h"

void engy_sse_out_init(struct engy_sse_out *o)
{
	memset(o, 0, sizeof(*o));
}

void engy_sse_out_free(struct engy_sse_out *o)
{
	free(o->buf);
	memset(o, 0, sizeof(*o));
}

void engy_sse_out_reset(struct engy_sse_out *o)
{
	o->len = 0;
	o->err = 0;
	if (o->buf)
		o->buf[0] = '\0';
}

char *engy_sse_out_take(struct engy_sse_out *o, size_t *len)
{
	char *p;

	if (o->err || (!o->buf && engy_sse_out_add(o, "", 0))) {
		engy_sse_out_free(o);
		return NULL;
	}
	p = o->buf;
	if (len)
		*len = o->len;
	memset(o, 0, sizeof(*o));
	return p;
}

static int grow(struct engy_sse_out *o, size_t n)
{
	if (o->err)
		return o->err;
	if (!engy_grow_by(&o->buf, &o->cap, o->len + 1, n, 1))
		o->err = -ENOMEM;
	return o->err;
}

int engy_sse_out_add_grow(struct engy_sse_out *o, const char *p, size_t n)
{
	if (grow(o, n))
		return o->err;
	if (n)
		memcpy(o->buf + o->len, p, n);
	o->len += n;
	o->buf[o->len] = '\0';
	return 0;
}

int engy_sse_out_addf(struct engy_sse_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		o->err = -EINVAL;
		return o->err;
	}
	if (grow(o, (size_t)n))
		return o->err;
	va_start(ap, fmt);
	vsnprintf(o->buf + o->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	o->len += (size_t)n;
	return 0;
}

int engy_sse_out_u64(struct engy_sse_out *o, uint64_t v)
{
	char t[20];
	size_t i = sizeof(t);

	do
		t[--i] = (char)('0' + v % 10);
	while ((v /= 10));
	return engy_sse_out_add(o, t + i, sizeof(t) - i);
}

int engy_sse_out_i64(struct engy_sse_out *o, int64_t v)
{
	if (v >= 0)
		return engy_sse_out_u64(o, (uint64_t)v);
	engy_sse_out_add(o, "-", 1);
	return engy_sse_out_u64(o, 0 - (uint64_t)v);
}

/* Length of the well-formed UTF-8 sequence at @s (1..4), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xBF;
	size_t k, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		k = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		k = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		k = 4;
	else
		return 0;
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	if (n < k || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < k; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return k;
}

/* The first byte at or after @p (before @end) that a JSON string does not
 * hold as it is, or with @ascii set one at or above 0x80: a plain run,
 * eight bytes at a time. */
static const unsigned char *plain_run(const unsigned char *p,
				      const unsigned char *end, bool ascii)
{
	uint64_t w;

	while (end - p >= 8) {
		w = engy_word_load(p);
		if (engy_word_json_special(w) |
		    (ascii ? w & ENGY_WORD_HIGHS : 0))
			break;
		p += 8;
	}
	while (p < end && *p >= 0x20 && *p != '"' && *p != '\\' &&
	       !(ascii && *p >= 0x80))
		p++;
	return p;
}

size_t engy_sse_utf8_cut(const char *s, size_t len, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;

	if (n >= len)
		return len;
	while (i < len) {
		k = utf8_len(u + i, len - i);
		if (!k)
			k = 1;
		if (i + k > n)
			return i ? i : i + k;
		i += k;
	}
	return len;
}

int engy_sse_out_jstr(struct engy_sse_out *o, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run, k;
	char esc[6];

	if (engy_sse_out_add(o, "\"", 1))
		return o->err;
	while (i < n) {
		run = (size_t)(plain_run(u + i, u + n, true) - u);
		if (run > i && engy_sse_out_add(o, s + i, run - i))
			return o->err;
		i = run;
		if (i >= n)
			break;
		if (u[i] >= 0x80) {
			k = utf8_len(u + i, n - i);
			if (k)
				engy_sse_out_add(o, s + i, k);
			else
				engy_sse_out_add(o, "\xEF\xBF\xBD", 3);
			i += k ? k : 1;
			continue;
		}
		esc[0] = '\\';
		switch (u[i]) {
		case '"':
		case '\\':
			esc[1] = (char)u[i];
			break;
		case '\b':
			esc[1] = 'b';
			break;
		case '\f':
			esc[1] = 'f';
			break;
		case '\n':
			esc[1] = 'n';
			break;
		case '\r':
			esc[1] = 'r';
			break;
		case '\t':
			esc[1] = 't';
			break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[u[i] >> 4];
			esc[5] = hex[u[i] & 15];
			engy_sse_out_add(o, esc, 6);
			i++;
			continue;
		}
		engy_sse_out_add(o, esc, 2);
		i++;
	}
	return engy_sse_out_add(o, "\"", 1);
}

int engy_sse_out_jstrz(struct engy_sse_out *o, const char *s)
{
	if (!s)
		return engy_sse_out_add(o, "null", 4);
	return engy_sse_out_jstr(o, s, strlen(s));
}

int engy_sse_out_begin(struct engy_sse_out *o, const char *event)
{
	if (event) {
		engy_sse_out_add(o, "event: ", 7);
		engy_sse_out_adds(o, event);
		engy_sse_out_add(o, "\n", 1);
	}
	return engy_sse_out_add(o, "data: ", 6);
}

int engy_sse_out_end(struct engy_sse_out *o)
{
	return engy_sse_out_add(o, "\n\n", 2);
}

int engy_sse_out_event(struct engy_sse_out *o, const char *event,
		       const char *data, size_t n)
{
	size_t i = 0, j;

	if (event) {
		engy_sse_out_add(o, "event: ", 7);
		engy_sse_out_adds(o, event);
		engy_sse_out_add(o, "\n", 1);
	}
	do {
		j = i;
		while (j < n && data[j] != '\n' && data[j] != '\r')
			j++;
		engy_sse_out_add(o, "data: ", 6);
		engy_sse_out_add(o, data + i, j - i);
		engy_sse_out_add(o, "\n", 1);
		if (j < n && data[j] == '\r' && j + 1 < n &&
		    data[j + 1] == '\n')
			j++;
		i = j + 1;
	} while (i <= n && j < n);
	return engy_sse_out_add(o, "\n", 1);
}

int engy_sse_out_comment(struct engy_sse_out *o, const char *text)
{
	engy_sse_out_add(o, ": ", 2);
	engy_sse_out_adds(o, text);
	return engy_sse_out_add(o, "\n\n", 2);
}

/* ---- cJSON's unformatted print ---- */

int engy_sse_out_cjson_str(struct engy_sse_out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *run, *end;
	char u[8];

	if (!s)
		return engy_sse_out_add(o, "\"\"", 2);
	engy_sse_out_add(o, "\"", 1);
	end = p + strlen(s);
	for (run = p; (p = plain_run(p, end, false)) < end; p++) {
		const char *e;

		engy_sse_out_add(o, (const char *)run, (size_t)(p - run));
		run = p + 1;
		switch (*p) {
		case '"':
			e = "\\\"";
			break;
		case '\\':
			e = "\\\\";
			break;
		case '\b':
			e = "\\b";
			break;
		case '\f':
			e = "\\f";
			break;
		case '\n':
			e = "\\n";
			break;
		case '\r':
			e = "\\r";
			break;
		case '\t':
			e = "\\t";
			break;
		default:
			snprintf(u, sizeof(u), "\\u%04x", *p);
			e = u;
		}
		engy_sse_out_adds(o, e);
	}
	engy_sse_out_add(o, (const char *)run, (size_t)(p - run));
	return engy_sse_out_add(o, "\"", 1);
}

/* cJSON's rule: 15 significant digits ("%1.15g") when they read back
 * within DBL_EPSILON, else 17; an integer below 1e15 is what %1.15g
 * prints for it, written without printf ("-0" for negative zero). */
static int cjson_number(struct engy_sse_out *o, const cJSON *j)
{
	double d = j->valuedouble, t, m;
	char b[32];
	int n;

	if (isnan(d) || isinf(d))
		return engy_sse_out_add(o, "null", 4);
	if (d > -1e15 && d < 1e15 && d == (double)(int64_t)d) {
		if (d == 0 && signbit(d))
			return engy_sse_out_add(o, "-0", 2);
		return engy_sse_out_i64(o, (int64_t)d);
	}
	n = snprintf(b, sizeof(b), "%1.15g", d);
	t = strtod(b, NULL);
	m = fabs(t) > fabs(d) ? fabs(t) : fabs(d);
	if (!(fabs(t - d) <= m * DBL_EPSILON))
		n = snprintf(b, sizeof(b), "%1.17g", d);
	return engy_sse_out_add(o, b, (size_t)n);
}

int engy_sse_out_cjson(struct engy_sse_out *o, const cJSON *j)
{
	const cJSON *c;

	if (!j)
		return o->err ? o->err : (o->err = -EINVAL);
	switch (j->type & 0xFF) {
	case cJSON_NULL:
		return engy_sse_out_add(o, "null", 4);
	case cJSON_False:
		return engy_sse_out_add(o, "false", 5);
	case cJSON_True:
		return engy_sse_out_add(o, "true", 4);
	case cJSON_Number:
		return cjson_number(o, j);
	case cJSON_Raw:
		if (!j->valuestring)
			return o->err ? o->err : (o->err = -EINVAL);
		return engy_sse_out_adds(o, j->valuestring);
	case cJSON_String:
		return engy_sse_out_cjson_str(o, j->valuestring);
	case cJSON_Array:
	case cJSON_Object:
		engy_sse_out_add(o, (j->type & 0xFF) == cJSON_Array ? "[" : "{",
				 1);
		for (c = j->child; c; c = c->next) {
			if (c != j->child)
				engy_sse_out_add(o, ",", 1);
			if ((j->type & 0xFF) == cJSON_Object) {
				engy_sse_out_cjson_str(o, c->string);
				engy_sse_out_add(o, ":", 1);
			}
			if (engy_sse_out_cjson(o, c))
				return o->err;
		}
		return engy_sse_out_add(
			o, (j->type & 0xFF) == cJSON_Array ? "]" : "}", 1);
	default:
		return o->err ? o->err : (o->err = -EINVAL);
	}
}
