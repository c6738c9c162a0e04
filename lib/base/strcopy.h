/* SPDX-License-Identifier: MIT */
/*
 * Bounded string copies and decimal digits without printf: the gateway's
 * per-request paths fill fixed-size fields (ids, names) and would
 * otherwise pay a format parse for each "%s".
 */
#ifndef ENGY_STRCOPY_H
#define ENGY_STRCOPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * engy_strcopy() - @src into @dst of @size bytes (> 0), cut to size - 1
 * bytes and always terminated, as snprintf(dst, size, "%s", src) would
 * leave it; the length written.
 */
static inline size_t engy_strcopy(char *dst, size_t size, const char *src)
{
	size_t n = 0;

	while (n + 1 < size && src[n]) {
		dst[n] = src[n];
		n++;
	}
	dst[n] = '\0';
	return n;
}

/* The decimal digits of @v at @dst (20 bytes hold any); their count, no
 * terminator. */
static inline size_t engy_u64_dec(char *dst, uint64_t v)
{
	char t[20];
	size_t n = 0, i;

	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	for (i = 0; i < n; i++)
		dst[i] = t[n - 1 - i];
	return n;
}

#endif /* ENGY_STRCOPY_H */
