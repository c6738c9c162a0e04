/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "logfmt.h"

static bool bare_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c >= 0x7f)
			return false;
	}
	return true;
}

static void put(char *dst, size_t cap, size_t *n, char c)
{
	if (*n + 1 < cap)
		dst[*n] = c;
	(*n)++;
}

size_t engy_logfmt_value(char *dst, size_t cap, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	if (!s)
		s = "";
	if (bare_ok(s)) {
		for (; *s; s++)
			put(dst, cap, &n, *s);
		goto out;
	}
	put(dst, cap, &n, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '"':
		case '\\':
			put(dst, cap, &n, '\\');
			put(dst, cap, &n, (char)c);
			break;
		case '\n':
			put(dst, cap, &n, '\\');
			put(dst, cap, &n, 'n');
			break;
		case '\t':
			put(dst, cap, &n, '\\');
			put(dst, cap, &n, 't');
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				put(dst, cap, &n, '\\');
				put(dst, cap, &n, 'x');
				put(dst, cap, &n, hex[c >> 4]);
				put(dst, cap, &n, hex[c & 15]);
			} else {
				put(dst, cap, &n, (char)c);
			}
		}
	}
	put(dst, cap, &n, '"');
out:
	if (cap)
		dst[n < cap ? n : cap - 1] = '\0';
	return n;
}

void engy_logfmt_now(char *dst, size_t cap)
{
	struct timespec ts;
	struct tm tm;
	char base[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(dst, cap, "%s.%03ldZ", base, ts.tv_nsec / 1000000L);
}
