/* SPDX-License-Identifier: MIT */
/* Hex helpers shared by the signing unit tests. */
#ifndef ENGY_SIGN_TEST_H
#define ENGY_SIGN_TEST_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Decodes exactly @n bytes of hex (a test's own constant: must be valid). */
static inline void unhex(uint8_t *out, size_t n, const char *hex)
{
	size_t i;
	unsigned v;

	ck_assert_uint_eq(strlen(hex), 2 * n);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

static inline void tohex(char *out, const uint8_t *in, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", in[i]);
	out[2 * n] = '\0';
}

/* ck_assert that @n bytes at @got are the hex string @want. */
#define ck_assert_hex_eq(got, n, want)                                         \
	do {                                                                   \
		char h_[2 * (n) + 1];                                          \
		tohex(h_, (got), (n));                                         \
		ck_assert_str_eq(h_, (want));                                  \
	} while (0)

#endif /* ENGY_SIGN_TEST_H */
