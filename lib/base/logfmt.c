/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
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

struct fbuf {
	char *p;
	size_t cap, n; /* n: the whole length, past cap too */
};

static void fput(struct fbuf *b, const char *s, size_t k)
{
	if (b->n < b->cap) {
		size_t room = b->cap - b->n;

		memcpy(b->p + b->n, s, k < room ? k : room);
	}
	b->n += k;
}

static void fu64(struct fbuf *b, uint64_t v, unsigned base)
{
	static const char d[] = "0123456789abcdef";
	char t[24];
	size_t i = sizeof(t);

	do
		t[--i] = d[v % base];
	while ((v /= base));
	fput(b, t + i, sizeof(t) - i);
}

int engy_logfmt_vformat(char *dst, size_t cap, const char *fmt, va_list ap)
{
	struct fbuf b = { dst, cap ? cap - 1 : 0, 0 };
	const char *f = fmt, *s;

	while (*f) {
		int len = 0; /* 0 int, 1 long, 2 long long, 3 size_t */
		int64_t sv = 0;
		uint64_t uv = 0;
		char c;

		s = strchr(f, '%');
		if (!s) {
			fput(&b, f, strlen(f));
			break;
		}
		fput(&b, f, (size_t)(s - f));
		f = s + 1;
		if (*f == 'l' && f[1] == 'l') {
			len = 2;
			f += 2;
		} else if (*f == 'l') {
			len = 1;
			f++;
		} else if (*f == 'z') {
			len = 3;
			f++;
		}
		c = *f++;
		switch (c) {
		case '%':
			if (len)
				return -1;
			fput(&b, "%", 1);
			continue;
		case 's':
			if (len)
				return -1;
			s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			fput(&b, s, strlen(s));
			continue;
		case 'c':
			if (len)
				return -1;
			{
				char ch = (char)va_arg(ap, int);

				fput(&b, &ch, 1);
			}
			continue;
		case 'd':
		case 'i':
			sv = len == 0	? va_arg(ap, int)
			     : len == 1 ? va_arg(ap, long)
			     : len == 2 ? va_arg(ap, long long)
					: (int64_t)va_arg(ap, ssize_t);
			if (sv < 0) {
				fput(&b, "-", 1);
				fu64(&b, 0 - (uint64_t)sv, 10);
			} else {
				fu64(&b, (uint64_t)sv, 10);
			}
			continue;
		case 'u':
		case 'x':
			uv = len == 0	? va_arg(ap, unsigned)
			     : len == 1 ? va_arg(ap, unsigned long)
			     : len == 2 ? va_arg(ap, unsigned long long)
					: va_arg(ap, size_t);
			fu64(&b, uv, c == 'u' ? 10 : 16);
			continue;
		default:
			return -1; /* flags, widths, floats, pointers ... */
		}
	}
	if (cap)
		dst[b.n < b.cap ? b.n : b.cap] = '\0';
	return b.n > INT32_MAX ? -1 : (int)b.n;
}
