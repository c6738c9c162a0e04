/* SPDX-License-Identifier: MIT */
/*
 * A JSON object parsed member by member, named members checked and kept
 * as text (json_lazy.h).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "json_lazy.h"

/* cJSON reads a number through a 64-byte buffer: a longer one fails. */
#define NUMBER_MAX 63

static const char *ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static int hex4(const char *p, const char *end)
{
	int v = 0, i;

	if (end - p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* @p at the opening quote; the byte after the closing one, or NULL. */
static const char *skip_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		unsigned char c = (unsigned char)*p;
		int u;

		if (c == '"')
			return p + 1;
		if (c < 0x20)
			return NULL;
		if (c != '\\')
			continue;
		if (++p >= end)
			return NULL;
		switch (*p) {
		case '"':
		case '\\':
		case '/':
		case 'b':
		case 'f':
		case 'n':
		case 'r':
		case 't':
			break;
		case 'u':
			u = hex4(p + 1, end);
			if (u < 0 || (u >= 0xDC00 && u <= 0xDFFF))
				return NULL;
			p += 4;
			if (u >= 0xD800 && u <= 0xDBFF) {
				/* a high surrogate: a low one must follow */
				if (end - p < 7 || p[1] != '\\' || p[2] != 'u')
					return NULL;
				u = hex4(p + 3, end);
				if (u < 0xDC00 || u > 0xDFFF)
					return NULL;
				p += 6;
			}
			break;
		default:
			return NULL;
		}
	}
	return NULL;
}

static const char *skip_number(const char *p, const char *end)
{
	const char *s = p;

	if (p < end && *p == '-')
		p++;
	if (p >= end)
		return NULL;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	else
		return NULL;
	if (p < end && *p == '.') {
		if (++p >= end || *p < '0' || *p > '9')
			return NULL;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || *p < '0' || *p > '9')
			return NULL;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	return p - s > NUMBER_MAX ? NULL : p;
}

static const char *word(const char *p, const char *end, const char *w, size_t n)
{
	return (size_t)(end - p) >= n && memcmp(p, w, n) == 0 ? p + n : NULL;
}

const char *engy_json_skip(const char *p, const char *end, unsigned max_depth)
{
	char close;

	if (p >= end)
		return NULL;
	switch (*p) {
	case '"':
		return skip_string(p, end);
	case 't':
		return word(p, end, "true", 4);
	case 'f':
		return word(p, end, "false", 5);
	case 'n':
		return word(p, end, "null", 4);
	case '{':
	case '[':
		break;
	default:
		return skip_number(p, end);
	}
	if (max_depth == 0)
		return NULL;
	close = *p == '{' ? '}' : ']';
	p = ws(p + 1, end);
	if (p < end && *p == close)
		return p + 1;
	for (;;) {
		if (close == '}') {
			if (p >= end || *p != '"' || !(p = skip_string(p, end)))
				return NULL;
			p = ws(p, end);
			if (p >= end || *p != ':')
				return NULL;
			p = ws(p + 1, end);
		}
		if (!(p = engy_json_skip(p, end, max_depth - 1)))
			return NULL;
		p = ws(p, end);
		if (p >= end)
			return NULL;
		if (*p == close)
			return p + 1;
		if (*p != ',')
			return NULL;
		p = ws(p + 1, end);
	}
}

static bool named(const char *k, size_t n, const char *const *keys)
{
	for (; keys && *keys; keys++)
		if (strlen(*keys) == n && memcmp(*keys, k, n) == 0)
			return true;
	return false;
}

static cJSON *raw_node(const char *p, size_t n)
{
	cJSON *it = cJSON_CreateRaw("");
	char *t = cJSON_malloc(n + 1); /* freed by cJSON_Delete() */

	if (!it || !t) {
		cJSON_Delete(it);
		cJSON_free(t);
		return NULL;
	}
	memcpy(t, p, n);
	t[n] = '\0';
	cJSON_free(it->valuestring);
	it->valuestring = t;
	return it;
}

cJSON *engy_json_parse_lazy(const char *s, size_t len,
			    const char *const *raw_keys)
{
	const char *p = s, *end = s + len, *k, *v;
	cJSON *root, *item;
	char kbuf[64];
	size_t kn;

	p = ws(p, end);
	if (p >= end || *p != '{' || !(root = cJSON_CreateObject()))
		return NULL;
	p = ws(p + 1, end);
	if (p < end && *p == '}') {
		p++;
		goto done;
	}
	for (;;) {
		if (p >= end || *p != '"')
			goto fail;
		k = p + 1;
		if (!(p = skip_string(p, end)))
			goto fail;
		kn = (size_t)(p - 1 - k);
		if (kn >= sizeof(kbuf) || memchr(k, '\\', kn))
			goto fail; /* escapes or a long key: cJSON's whole parse */
		memcpy(kbuf, k, kn);
		kbuf[kn] = '\0';
		p = ws(p, end);
		if (p >= end || *p != ':')
			goto fail;
		p = ws(p + 1, end);
		if (p >= end)
			goto fail;
		if (named(k, kn, raw_keys)) {
			if (!(v = engy_json_skip(p, end,
						 ENGY_JSON_SKIP_DEPTH)) ||
			    !(item = raw_node(p, (size_t)(v - p))))
				goto fail;
		} else {
			/* A value's first byte as the grammar has it: cJSON
			 * would skip a byte-order mark or a control byte. */
			if (!strchr("{[\"-0123456789tfn", *p) || !*p)
				goto fail;
			item = cJSON_ParseWithLengthOpts(p, (size_t)(end - p),
							 &v, 0);
			if (!item)
				goto fail;
		}
		if (!cJSON_AddItemToObject(root, kbuf, item))
			goto fail_item; /* out of memory: not added */
		p = ws(v, end);
		if (p < end && *p == ',') {
			p = ws(p + 1, end);
			continue;
		}
		if (p < end && *p == '}') {
			p++;
			break;
		}
		goto fail;
	}
done:
	if (ws(p, end) != end)
		goto fail; /* anything after the object: the whole parse says */
	return root;
fail_item:
	cJSON_Delete(item);
fail:
	cJSON_Delete(root);
	return NULL;
}
