/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "hex.h"
#include "scale.h"

void engy_scale_rd_init(struct engy_scale_rd *r, const void *p, size_t len)
{
	r->p = p;
	r->len = p ? len : 0;
	r->pos = 0;
	r->err = 0;
}

size_t engy_scale_left(const struct engy_scale_rd *r)
{
	return r->err ? 0 : r->len - r->pos;
}

int engy_scale_fail(struct engy_scale_rd *r, int err)
{
	if (!r->err)
		r->err = err;
	return r->err;
}

static const uint8_t *take(struct engy_scale_rd *r, size_t n)
{
	const uint8_t *p;

	if (r->err)
		return NULL;
	if (n > r->len - r->pos) {
		r->err = -EMSGSIZE;
		return NULL;
	}
	p = r->p + r->pos;
	r->pos += n;
	return p;
}

static uint64_t le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

int engy_scale_u8(struct engy_scale_rd *r, uint8_t *v)
{
	const uint8_t *p = take(r, 1);

	*v = p ? p[0] : 0;
	return r->err;
}

int engy_scale_u16(struct engy_scale_rd *r, uint16_t *v)
{
	const uint8_t *p = take(r, 2);

	*v = p ? (uint16_t)le(p, 2) : 0;
	return r->err;
}

int engy_scale_u32(struct engy_scale_rd *r, uint32_t *v)
{
	const uint8_t *p = take(r, 4);

	*v = p ? (uint32_t)le(p, 4) : 0;
	return r->err;
}

int engy_scale_u64(struct engy_scale_rd *r, uint64_t *v)
{
	const uint8_t *p = take(r, 8);

	*v = p ? le(p, 8) : 0;
	return r->err;
}

int engy_scale_bool(struct engy_scale_rd *r, bool *v)
{
	uint8_t b;

	*v = false;
	if (engy_scale_u8(r, &b))
		return r->err;
	if (b > 1)
		return engy_scale_fail(r, -EINVAL);
	*v = b;
	return 0;
}

int engy_scale_compact(struct engy_scale_rd *r, uint64_t *v)
{
	const uint8_t *p;
	size_t n;

	*v = 0;
	p = take(r, 1);
	if (!p)
		return r->err;
	switch (p[0] & 3) {
	case 0:
		*v = p[0] >> 2;
		return 0;
	case 1:
		r->pos--;
		p = take(r, 2);
		if (!p)
			return r->err;
		*v = le(p, 2) >> 2;
		return *v < 64 ? engy_scale_fail(r, -EINVAL) : 0;
	case 2:
		r->pos--;
		p = take(r, 4);
		if (!p)
			return r->err;
		*v = le(p, 4) >> 2;
		return *v < (1u << 14) ? engy_scale_fail(r, -EINVAL) : 0;
	}
	n = (size_t)(p[0] >> 2) + 4;
	if (n > 8) {
		/* Up to 67 bytes are valid SCALE; beyond u64 is not ours. */
		p = take(r, n);
		if (!p)
			return r->err;
		while (n > 8)
			if (p[--n])
				return engy_scale_fail(r, -ERANGE);
		return engy_scale_fail(r, -EINVAL); /* not minimal */
	}
	p = take(r, n);
	if (!p)
		return r->err;
	*v = le(p, n);
	/* Minimal: the top byte is not zero, and the value needs 4+ bytes. */
	if (p[n - 1] == 0 || *v < (1u << 30)) {
		*v = 0;
		return engy_scale_fail(r, -EINVAL);
	}
	return 0;
}

int engy_scale_compact32(struct engy_scale_rd *r, uint32_t *v)
{
	uint64_t x;

	*v = 0;
	if (engy_scale_compact(r, &x))
		return r->err;
	if (x > UINT32_MAX)
		return engy_scale_fail(r, -ERANGE);
	*v = (uint32_t)x;
	return 0;
}

int engy_scale_bytes(struct engy_scale_rd *r, size_t n, const uint8_t **out)
{
	*out = take(r, n);
	return r->err;
}

int engy_scale_skip(struct engy_scale_rd *r, size_t n)
{
	take(r, n);
	return r->err;
}

int engy_scale_vec(struct engy_scale_rd *r, const uint8_t **out, size_t *n)
{
	uint64_t len;

	*out = NULL;
	*n = 0;
	if (engy_scale_compact(r, &len))
		return r->err;
	if (len > engy_scale_left(r))
		return engy_scale_fail(r, -EMSGSIZE);
	*n = (size_t)len;
	*out = take(r, *n);
	return r->err;
}

void engy_scale_buf_init(struct engy_scale_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void engy_scale_buf_free(struct engy_scale_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void engy_scale_put(struct engy_scale_buf *b, const void *p, size_t n)
{
	if (b->err || !n)
		return;
	if (!engy_grow_by(&b->p, &b->cap, b->len, n, 1)) {
		b->err = -ENOMEM;
		return;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void put_le(struct engy_scale_buf *b, uint64_t v, size_t n)
{
	uint8_t x[8];
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	engy_scale_put(b, x, n);
}

void engy_scale_put_u8(struct engy_scale_buf *b, uint8_t v)
{
	engy_scale_put(b, &v, 1);
}

void engy_scale_put_u16(struct engy_scale_buf *b, uint16_t v)
{
	put_le(b, v, 2);
}

void engy_scale_put_u32(struct engy_scale_buf *b, uint32_t v)
{
	put_le(b, v, 4);
}

void engy_scale_put_u64(struct engy_scale_buf *b, uint64_t v)
{
	put_le(b, v, 8);
}

size_t engy_scale_compact_encode(uint64_t v, uint8_t out[9])
{
	size_t n, i;

	if (v < 64) {
		out[0] = (uint8_t)(v << 2);
		return 1;
	}
	if (v < (1u << 14)) {
		out[0] = (uint8_t)(v << 2 | 1);
		out[1] = (uint8_t)(v >> 6);
		return 2;
	}
	if (v < (1u << 30)) {
		uint32_t x = (uint32_t)(v << 2 | 2);

		for (i = 0; i < 4; i++)
			out[i] = (uint8_t)(x >> (8 * i));
		return 4;
	}
	for (n = 4; n < 8 && (v >> (8 * n)); n++)
		;
	out[0] = (uint8_t)((n - 4) << 2 | 3);
	for (i = 0; i < n; i++)
		out[1 + i] = (uint8_t)(v >> (8 * i));
	return n + 1;
}

void engy_scale_put_compact(struct engy_scale_buf *b, uint64_t v)
{
	uint8_t x[9];

	engy_scale_put(b, x, engy_scale_compact_encode(v, x));
}

void engy_scale_put_vec(struct engy_scale_buf *b, const void *p, size_t n)
{
	engy_scale_put_compact(b, n);
	engy_scale_put(b, p, n);
}

int engy_hex_quantity(const char *s, uint64_t *v)
{
	uint64_t acc = 0;
	size_t i;

	if (s[0] != '0' || s[1] != 'x' || !s[2])
		return -EINVAL;
	for (i = 2; s[i]; i++) {
		int d = engy_hexval((unsigned char)s[i]);

		if (d < 0 || acc > UINT64_MAX >> 4)
			return -EINVAL;
		acc = acc << 4 | (uint64_t)d;
	}
	*v = acc;
	return 0;
}

static const char *hex_body(const char *hex, size_t *n)
{
	if (hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X'))
		hex += 2;
	*n = strlen(hex);
	return hex;
}

static int hex_fill(uint8_t *out, const char *h, size_t n)
{
	size_t i;

	for (i = 0; i < n / 2; i++) {
		int a = engy_hexval((unsigned char)h[2 * i]),
		    b = engy_hexval((unsigned char)h[2 * i + 1]);

		if (a < 0 || b < 0)
			return -EINVAL;
		out[i] = (uint8_t)(a << 4 | b);
	}
	return 0;
}

long engy_hex_decode(uint8_t *out, size_t cap, const char *hex)
{
	size_t n;
	const char *h = hex_body(hex, &n);

	if (n % 2)
		return -EINVAL;
	if (n / 2 > cap)
		return -ENOSPC;
	if (hex_fill(out, h, n))
		return -EINVAL;
	return (long)(n / 2);
}

int engy_hex_decode_alloc(const char *hex, uint8_t **out, size_t *len)
{
	size_t n;
	const char *h = hex_body(hex, &n);

	*out = NULL;
	*len = 0;
	if (n % 2)
		return -EINVAL;
	*out = malloc(n / 2 ? n / 2 : 1);
	if (!*out)
		return -ENOMEM;
	if (hex_fill(*out, h, n)) {
		free(*out);
		*out = NULL;
		return -EINVAL;
	}
	*len = n / 2;
	return 0;
}

void engy_hex_encode(char *out, const uint8_t *p, size_t n)
{
	static const char d[] = "0123456789abcdef";
	size_t i;

	*out++ = '0';
	*out++ = 'x';
	for (i = 0; i < n; i++) {
		*out++ = d[p[i] >> 4];
		*out++ = d[p[i] & 15];
	}
	*out = '\0';
}
