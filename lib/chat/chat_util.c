/* SPDX-License-Identifier: MIT */
/* Buffer, Python-style JSON and whitespace helpers for chat rendering/parsing.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_util.h"
#include "grow.h"

void engy_chat_buf_add(struct engy_chat_buf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (!engy_grow_by(&b->p, &b->cap, b->len + 1, n, 1)) {
		b->err = -ENOMEM;
		return;
	}
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void engy_chat_buf_adds(struct engy_chat_buf *b, const char *s)
{
	engy_chat_buf_add(b, s, strlen(s));
}

void engy_chat_buf_free(struct engy_chat_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

int engy_chat_buf_take(struct engy_chat_buf *b, char **out, size_t *len)
{
	int err;

	engy_chat_buf_add(b, "", 0);
	err = b->err;
	if (err) {
		engy_chat_buf_free(b);
		return err;
	}
	*out = b->p;
	if (len)
		*len = b->len;
	memset(b, 0, sizeof(*b));
	return 0;
}

void engy_chat_tojson_str(struct engy_chat_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, run = 0;
	char esc[8];

	engy_chat_buf_add(b, "\"", 1);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *e = NULL;

		switch (c) {
		case '"':
			e = "\\\"";
			break;
		case '\\':
			e = "\\\\";
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
		case '\b':
			e = "\\b";
			break;
		case '\f':
			e = "\\f";
			break;
		default:
			if (c < 0x20) {
				esc[0] = '\\';
				esc[1] = 'u';
				esc[2] = '0';
				esc[3] = '0';
				esc[4] = hex[c >> 4];
				esc[5] = hex[c & 15];
				esc[6] = '\0';
				e = esc;
			}
		}
		if (!e)
			continue;
		engy_chat_buf_add(b, s + run, i - run);
		engy_chat_buf_adds(b, e);
		run = i + 1;
	}
	engy_chat_buf_add(b, s + run, n - run);
	engy_chat_buf_add(b, "\"", 1);
}

/* Shortest "%.*e" rendering of @d that reads back exactly: digits and exponent.
 */
static void shortest_digits(double d, char *digits, size_t cap, int *exp10)
{
	char tmp[40], *e;
	size_t k = 0;
	int prec;

	for (prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	e = strchr(tmp, 'e');
	*exp10 = e ? atoi(e + 1) : 0;
	for (char *p = tmp; *p && p != e && k + 1 < cap; p++)
		if (*p >= '0' && *p <= '9')
			digits[k++] = *p;
	while (k > 1 && digits[k - 1] == '0')
		k--;
	digits[k] = '\0';
}

/* Python's repr(float): shortest round-trip digits, exponent form below
 * 1e-4 and from 1e16. */
static void py_float(struct engy_chat_buf *b, double d)
{
	char digits[24], out[64];
	size_t nd, o = 0, i;
	int exp10;

	if (!isfinite(d)) {
		/* Python writes these (not JSON); cJSON never produces them. */
		engy_chat_buf_adds(b, isnan(d) ? "NaN"
				      : d < 0  ? "-Infinity"
					       : "Infinity");
		return;
	}
	if (d == 0) {
		engy_chat_buf_adds(b, signbit(d) ? "-0.0" : "0.0");
		return;
	}
	if (d < 0) {
		out[o++] = '-';
		d = -d;
	}
	shortest_digits(d, digits, sizeof(digits), &exp10);
	nd = strlen(digits);
	if (exp10 >= -4 && exp10 < 16) {
		if (exp10 < 0) {
			out[o++] = '0';
			out[o++] = '.';
			for (i = 0; i < (size_t)(-exp10 - 1); i++)
				out[o++] = '0';
			memcpy(out + o, digits, nd);
			o += nd;
		} else {
			for (i = 0; i <= (size_t)exp10; i++)
				out[o++] = i < nd ? digits[i] : '0';
			out[o++] = '.';
			if (nd > (size_t)exp10 + 1) {
				memcpy(out + o, digits + exp10 + 1,
				       nd - exp10 - 1);
				o += nd - exp10 - 1;
			} else {
				out[o++] = '0';
			}
		}
		out[o] = '\0';
	} else {
		out[o++] = digits[0];
		if (nd > 1) {
			out[o++] = '.';
			memcpy(out + o, digits + 1, nd - 1);
			o += nd - 1;
		}
		snprintf(out + o, sizeof(out) - o, "e%c%02d",
			 exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
	}
	engy_chat_buf_adds(b, out);
}

void engy_chat_tojson_num(struct engy_chat_buf *b, double d)
{
	char out[32];

	if (d == floor(d) && fabs(d) < 1e16) {
		snprintf(out, sizeof(out), "%.0f", d == 0 ? 0.0 : d);
		engy_chat_buf_adds(b, out);
		return;
	}
	py_float(b, d);
}

void engy_chat_tojson_float(struct engy_chat_buf *b, double d)
{
	py_float(b, d);
}

void engy_chat_tojson(struct engy_chat_buf *b, const cJSON *v)
{
	const cJSON *c;
	bool first = true;

	if (!v || cJSON_IsNull(v) || cJSON_IsInvalid(v)) {
		engy_chat_buf_adds(b, "null");
	} else if (cJSON_IsTrue(v)) {
		engy_chat_buf_adds(b, "true");
	} else if (cJSON_IsFalse(v)) {
		engy_chat_buf_adds(b, "false");
	} else if (cJSON_IsNumber(v)) {
		engy_chat_tojson_num(b, v->valuedouble);
	} else if (cJSON_IsString(v)) {
		engy_chat_tojson_str(b, v->valuestring, strlen(v->valuestring));
	} else if (cJSON_IsRaw(v)) {
		engy_chat_buf_adds(b, v->valuestring ? v->valuestring : "null");
	} else if (cJSON_IsArray(v)) {
		engy_chat_buf_add(b, "[", 1);
		cJSON_ArrayForEach(c, v)
		{
			if (!first)
				engy_chat_buf_add(b, ", ", 2);
			first = false;
			engy_chat_tojson(b, c);
		}
		engy_chat_buf_add(b, "]", 1);
	} else {
		engy_chat_buf_add(b, "{", 1);
		cJSON_ArrayForEach(c, v)
		{
			if (!first)
				engy_chat_buf_add(b, ", ", 2);
			first = false;
			engy_chat_tojson_str(b, c->string ? c->string : "",
					     c->string ? strlen(c->string) : 0);
			engy_chat_buf_add(b, ": ", 2);
			engy_chat_tojson(b, c);
		}
		engy_chat_buf_add(b, "}", 1);
	}
}

/* Decode one UTF-8 code point; 0 length on a malformed sequence. */
static size_t utf8_cp(const unsigned char *s, size_t n, uint32_t *cp)
{
	if (n >= 1 && s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (n >= 2 && (s[0] & 0xe0) == 0xc0 && (s[1] & 0xc0) == 0x80) {
		*cp = ((uint32_t)(s[0] & 0x1f) << 6) | (s[1] & 0x3f);
		return 2;
	}
	if (n >= 3 && (s[0] & 0xf0) == 0xe0 && (s[1] & 0xc0) == 0x80 &&
	    (s[2] & 0xc0) == 0x80) {
		*cp = ((uint32_t)(s[0] & 0x0f) << 12) |
		      ((uint32_t)(s[1] & 0x3f) << 6) | (s[2] & 0x3f);
		return 3;
	}
	return 0;
}

size_t engy_chat_pyspace(const char *s, size_t n)
{
	uint32_t cp;
	size_t k = utf8_cp((const unsigned char *)s, n, &cp);

	if (!k)
		return 0;
	if ((cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) ||
	    cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
	    (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
	    cp == 0x202f || cp == 0x205f || cp == 0x3000)
		return k;
	return 0;
}

/* Length of the Python whitespace character that ends at @s[n-1], or 0. */
static size_t pyspace_before(const char *s, size_t n)
{
	size_t k;

	for (k = 1; k <= 3 && k <= n; k++)
		if (engy_chat_pyspace(s + n - k, k) == k)
			return k;
	return 0;
}

void engy_chat_pystrip(const char **s, size_t *n)
{
	size_t k;

	while (*n && (k = engy_chat_pyspace(*s, *n))) {
		*s += k;
		*n -= k;
	}
	while (*n && (k = pyspace_before(*s, *n)))
		*n -= k;
}

const char *engy_chat_find(const char *s, size_t n, const char *needle)
{
	size_t m = strlen(needle);

	if (!m)
		return s;
	return memmem(s, n, needle, m);
}

bool engy_chat_has_prefix(const char *s, size_t n, const char *prefix)
{
	size_t m = strlen(prefix);

	return n >= m && memcmp(s, prefix, m) == 0;
}
