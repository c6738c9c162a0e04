/* SPDX-License-Identifier: MIT */
/*
 * SCALE, the Substrate codec: little-endian fixed-width integers, compact
 * integers (the low two bits of the first byte pick 1, 2, 4 or 5..68
 * bytes), and length-prefixed sequences.  A reader over borrowed bytes
 * with a sticky error, and a growable writer.  Compact values above 2^64
 * - 1 are refused (-ERANGE); non-canonical compacts (a value written
 * longer than it needs) are refused as parity-scale-codec refuses them
 * (-EINVAL), so every decoded value encodes back to the same bytes.
 */
#ifndef ENGY_SCALE_H
#define ENGY_SCALE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct engy_scale_rd {
	const uint8_t *p;
	size_t len;
	size_t pos;
	int err; /* first error, sticky: 0 or a negative errno */
};

void engy_scale_rd_init(struct engy_scale_rd *r, const void *p, size_t len);
/* Bytes not read yet. */
size_t engy_scale_left(const struct engy_scale_rd *r);

/*
 * Each read returns 0, or the reader's sticky error: -EMSGSIZE when the
 * input ends early, -EINVAL / -ERANGE as above.  After an error every read
 * fails the same way and leaves its output zeroed.
 */
int engy_scale_u8(struct engy_scale_rd *r, uint8_t *v);
int engy_scale_u16(struct engy_scale_rd *r, uint16_t *v);
int engy_scale_u32(struct engy_scale_rd *r, uint32_t *v);
int engy_scale_u64(struct engy_scale_rd *r, uint64_t *v);
int engy_scale_bool(struct engy_scale_rd *r, bool *v); /* only 0 or 1 */
int engy_scale_compact(struct engy_scale_rd *r, uint64_t *v);
/* A compact that must fit 32 bits (lengths, type ids). */
int engy_scale_compact32(struct engy_scale_rd *r, uint32_t *v);
/* @n bytes in place; *@out points into the input. */
int engy_scale_bytes(struct engy_scale_rd *r, size_t n, const uint8_t **out);
int engy_scale_skip(struct engy_scale_rd *r, size_t n);
/* A compact length then that many bytes (Vec<u8>, String), in place. */
int engy_scale_vec(struct engy_scale_rd *r, const uint8_t **out, size_t *n);
/* Record a failure of the caller's own (the first one sticks). */
int engy_scale_fail(struct engy_scale_rd *r, int err);

struct engy_scale_buf {
	uint8_t *p;
	size_t len;
	size_t cap;
	int err; /* -ENOMEM, sticky */
};

void engy_scale_buf_init(struct engy_scale_buf *b);
void engy_scale_buf_free(struct engy_scale_buf *b);
void engy_scale_put(struct engy_scale_buf *b, const void *p, size_t n);
void engy_scale_put_u8(struct engy_scale_buf *b, uint8_t v);
void engy_scale_put_u16(struct engy_scale_buf *b, uint16_t v);
void engy_scale_put_u32(struct engy_scale_buf *b, uint32_t v);
void engy_scale_put_u64(struct engy_scale_buf *b, uint64_t v);
void engy_scale_put_compact(struct engy_scale_buf *b, uint64_t v);
/* A compact length then the bytes. */
void engy_scale_put_vec(struct engy_scale_buf *b, const void *p, size_t n);

/* engy_scale_compact_encode() - the compact form of @v in @out (9 bytes
 * at most); returns its length. */
size_t engy_scale_compact_encode(uint64_t v, uint8_t out[9]);

/*
 * Hex with an optional 0x prefix, as JSON-RPC carries bytes.
 * engy_hex_decode(): returns the byte count, or -EINVAL for an odd length
 * or a non-hex digit, -ENOSPC when over @cap.
 * engy_hex_encode(): "0x" then lower-case digits, NUL-terminated; @out
 * needs 2 * @n + 3 bytes.
 */
long engy_hex_decode(uint8_t *out, size_t cap, const char *hex);
/* The same into a malloc'd buffer (free()); 0 or -EINVAL / -ENOMEM. */
int engy_hex_decode_alloc(const char *hex, uint8_t **out, size_t *n);
void engy_hex_encode(char *out, const uint8_t *p, size_t n);
/*
 * engy_hex_quantity() - a JSON-RPC quantity ("0x" and at least one hex
 * digit, nothing else, at most 2^64 - 1), such as a header's block
 * number.  Returns 0, or -EINVAL (and leaves *@v alone).
 */
int engy_hex_quantity(const char *s, uint64_t *v);

#endif /* ENGY_SCALE_H */
