/* SPDX-License-Identifier: MIT */
/*
 * JSON text eight bytes at a time: the bytes a JSON string cannot hold
 * as they are (below 0x20, a quote, a backslash), found in a 64-bit word
 * by the "a byte is zero / below n" word tricks.  The mask is exact as a
 * yes or no for the word, and exact up to the first such byte (a borrow
 * only spreads up from one), so on a little-endian machine its lowest
 * set bit is that byte.  The parser, the body's checks and the string
 * writers share it.
 */
#ifndef ENGY_JSONWORD_H
#define ENGY_JSONWORD_H

#include <stdint.h>
#include <string.h>

#define ENGY_WORD_ONES	0x0101010101010101ULL
#define ENGY_WORD_HIGHS 0x8080808080808080ULL

/* Eight bytes at @p, unaligned. */
static inline uint64_t engy_word_load(const void *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

/* The top bit of each byte of @w a JSON string does not hold as it is
 * (see above); 0 when the word is plain. */
static inline uint64_t engy_word_json_special(uint64_t w)
{
	uint64_t q = w ^ ENGY_WORD_ONES * '"', b = w ^ ENGY_WORD_ONES * '\\';

	return (((w - ENGY_WORD_ONES * 0x20) & ~w) |
		((q - ENGY_WORD_ONES) & ~q) | ((b - ENGY_WORD_ONES) & ~b)) &
	       ENGY_WORD_HIGHS;
}

#endif /* ENGY_JSONWORD_H */
