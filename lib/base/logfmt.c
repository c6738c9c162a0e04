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
	/* Every log line calls it: the date part is formatted once a
	 * second per thread, the milliseconds by hand (gmtime_r, strftime
	 * and snprintf were a fifth of a logged request's cost). */
	static _Thread_local time_t last_sec = (time_t)-1;
	static _Thread_local char base[32];
	struct timespec ts;
	char out[40];
	long ms;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec != last_sec) {
		struct tm tm;

		gmtime_r(&ts.tv_sec, &tm);
		if (!strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm))
			base[0] = '\0';
		last_sec = ts.tv_sec;
	}
	n = strlen(base);
	memcpy(out, base, n);
	ms = ts.tv_nsec / 1000000L;
	out[n++] = '.';
	out[n++] = (char)('0' + ms / 100);
	out[n++] = (char)('0' + ms / 10 % 10);
	out[n++] = (char)('0' + ms % 10);
	out[n++] = 'Z';
	out[n] = '\0';
	if (!cap)
		return;
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, out, n);
	dst[n] = '\0';
}
