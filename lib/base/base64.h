/* SPDX-License-Identifier: MIT */
/*
 * Standard base64 (RFC 4648 §4: A-Z a-z 0-9 + /, '=' padding).  The decoder
 * is strict: it accepts only the canonical encoding of some byte string
 * (length a multiple of 4, padding only at the end, unused trailing bits
 * zero, no whitespace), so every byte string has exactly one text form.
 */
#ifndef ENGY_BASE64_H
#define ENGY_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Characters engy_base64_encode() writes for @n bytes, without the NUL. */
static inline size_t engy_base64_enc_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

/*
 * engy_base64_encode() - encode @n bytes of @src into @dst, which must hold
 * engy_base64_enc_len(@n) + 1 bytes; NUL-terminates.  Returns the length.
 */
size_t engy_base64_encode(char *dst, const uint8_t *src, size_t n);

/*
 * engy_base64_decode() - decode @len characters of @src into @dst, which
 * holds @cap bytes.  Stores the decoded length in @out_len.
 * Returns 0, -EINVAL for text that is not canonical base64, or -ENOSPC when
 * the result does not fit in @cap (then nothing useful is in @dst).
 */
int engy_base64_decode(uint8_t *dst, size_t cap, const char *src, size_t len,
		       size_t *out_len);

#endif /* ENGY_BASE64_H */
