/* SPDX-License-Identifier: MIT */
/* Hex digits: one digit's value, and byte strings both ways. */
#ifndef ENGY_HEX_H
#define ENGY_HEX_H

#include <stddef.h>
#include <stdint.h>

/* engy_hexval() - 0-15 for the hex digit @c (either case), else -1. */
static inline int engy_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * engy_hex_parse() - @n bytes from @s, which must be exactly 2n hex digits
 * (either case, no 0x prefix, NUL-terminated): 0, or -1 with @out partly
 * written.  Chain hex ("0x…") is lib/chain/scale.h's engy_hex_decode().
 */
static inline int engy_hex_parse(const char *s, uint8_t *out, size_t n)
{
	size_t i;

	for (i = 0; i < 2 * n; i++) {
		int v = engy_hexval((unsigned char)s[i]);

		if (v < 0)
			return -1;
		if (i % 2)
			out[i / 2] |= (uint8_t)v;
		else
			out[i / 2] = (uint8_t)(v << 4);
	}
	return s[2 * n] ? -1 : 0;
}

/* engy_hex_print() - @n bytes as 2n lower-case digits and a NUL in @out. */
static inline void engy_hex_print(const uint8_t *b, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = d[b[i] >> 4];
		out[2 * i + 1] = d[b[i] & 15];
	}
	out[2 * n] = 0;
}

#endif /* ENGY_HEX_H */
