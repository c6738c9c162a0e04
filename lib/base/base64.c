/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "base64.h"

static const char enc_tab[64] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t engy_base64_encode(char *dst, const uint8_t *src, size_t n)
{
	size_t i, o = 0;
	uint32_t v;

	for (i = 0; i + 3 <= n; i += 3) {
		v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8 |
		    src[i + 2];
		dst[o++] = enc_tab[v >> 18];
		dst[o++] = enc_tab[(v >> 12) & 63];
		dst[o++] = enc_tab[(v >> 6) & 63];
		dst[o++] = enc_tab[v & 63];
	}
	if (n - i == 1) {
		v = (uint32_t)src[i] << 16;
		dst[o++] = enc_tab[v >> 18];
		dst[o++] = enc_tab[(v >> 12) & 63];
		dst[o++] = '=';
		dst[o++] = '=';
	} else if (n - i == 2) {
		v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8;
		dst[o++] = enc_tab[v >> 18];
		dst[o++] = enc_tab[(v >> 12) & 63];
		dst[o++] = enc_tab[(v >> 6) & 63];
		dst[o++] = '=';
	}
	dst[o] = '\0';
	return o;
}

/* The 6-bit value of @c, or -1 when @c is not in the alphabet. */
static int dec_char(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int engy_base64_decode(uint8_t *dst, size_t cap, const char *src, size_t len,
		       size_t *out_len)
{
	size_t i, o = 0, pad = 0, need;
	int d[4], j;

	*out_len = 0;
	if (len % 4)
		return -EINVAL;
	if (len && src[len - 1] == '=')
		pad = (len >= 2 && src[len - 2] == '=') ? 2 : 1;
	need = len / 4 * 3 - pad;
	if (need > cap)
		return -ENOSPC;
	for (i = 0; i < len; i += 4) {
		int last = i + 4 == len;
		int n_in = last ? 4 - (int)pad : 4;

		for (j = 0; j < 4; j++) {
			d[j] = j < n_in ? dec_char((unsigned char)src[i + j])
					: 0;
			if (d[j] < 0)
				return -EINVAL;
		}
		dst[o++] = (uint8_t)(d[0] << 2 | d[1] >> 4);
		if (n_in >= 3)
			dst[o++] = (uint8_t)((d[1] & 15) << 4 | d[2] >> 2);
		if (n_in == 4)
			dst[o++] = (uint8_t)((d[2] & 3) << 6 | d[3]);
		/* Canonical form: the bits that padding drops must be zero. */
		if ((n_in == 2 && (d[1] & 15)) || (n_in == 3 && (d[2] & 3)))
			return -EINVAL;
	}
	*out_len = o;
	return 0;
}
