/* SPDX-License-Identifier: MIT */
/* One hex digit's value. */
#ifndef ENGY_HEX_H
#define ENGY_HEX_H

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

#endif /* ENGY_HEX_H */
