/* SPDX-License-Identifier: MIT */
/* Helpers of the chain unit tests: hex in and out, a SCALE writer. */
#ifndef ENGY_CHAIN_TEST_H
#define ENGY_CHAIN_TEST_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "scale.h"

/* @hex (spaces allowed) as bytes; the caller frees. */
static inline uint8_t *unhex(const char *hex, size_t *n)
{
	char *clean = malloc(strlen(hex) + 1), *q = clean;
	uint8_t *out;
	size_t len;

	ck_assert_ptr_nonnull(clean);
	for (; *hex; hex++)
		if (*hex != ' ' && *hex != '\n')
			*q++ = *hex;
	*q = '\0';
	ck_assert_int_eq(engy_hex_decode_alloc(clean, &out, &len), 0);
	free(clean);
	*n = len;
	return out;
}

/* Compare @n bytes with @hex (spaces allowed). */
static inline void ck_bytes(const uint8_t *p, size_t n, const char *hex)
{
	size_t m;
	uint8_t *want = unhex(hex, &m);
	char *got = malloc(2 * n + 3);

	ck_assert_ptr_nonnull(got);
	engy_hex_encode(got, p, n);
	ck_assert_msg(m == n && memcmp(want, p, n) == 0, "got %s, want %s", got,
		      hex);
	free(got);
	free(want);
}

static inline void put_str(struct engy_scale_buf *b, const char *s)
{
	engy_scale_put_vec(b, s, strlen(s));
}

#endif /* ENGY_CHAIN_TEST_H */
