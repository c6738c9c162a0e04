/* SPDX-License-Identifier: MIT */
/*
 * SS58 as polkadot-js and Substrate write it (util-crypto/address):
 * one prefix byte below 64, else two bytes
 * [((p & 0xfc) >> 2) | 0x40, (p >> 8) | ((p & 3) << 6)].
 */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "ss58.h"

#define B58_MAX_TEXT 128
#define ACCOUNT	     32

static const char b58_alpha[] =
	"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

int engy_base58_encode(char *out, size_t cap, const uint8_t *in, size_t n)
{
	/* log(256)/log(58) < 1.37: n * 138 / 100 + 1 digits suffice. */
	uint8_t digits[B58_MAX_TEXT * 2];
	size_t zeros = 0, len = 0, i, j, total;
	unsigned carry;

	if (n > B58_MAX_TEXT)
		return -EMSGSIZE;
	while (zeros < n && in[zeros] == 0)
		zeros++;
	for (i = zeros; i < n; i++) {
		carry = in[i];
		for (j = 0; j < len; j++) {
			carry += (unsigned)digits[j] << 8;
			digits[j] = (uint8_t)(carry % 58);
			carry /= 58;
		}
		while (carry) {
			digits[len++] = (uint8_t)(carry % 58);
			carry /= 58;
		}
	}
	total = zeros + len;
	if (total + 1 > cap)
		return -ENOSPC;
	for (i = 0; i < zeros; i++)
		out[i] = '1';
	for (j = 0; j < len; j++)
		out[zeros + j] = b58_alpha[digits[len - 1 - j]];
	out[total] = '\0';
	return (int)total;
}

static int b58_value(char c)
{
	const char *p;

	if (c == '\0')
		return -1;
	p = strchr(b58_alpha, c);
	return p ? (int)(p - b58_alpha) : -1;
}

int engy_base58_decode(uint8_t *out, size_t cap, size_t *out_len,
		       const char *in, size_t len, size_t *bad_at)
{
	uint8_t bytes[B58_MAX_TEXT]; /* little-endian while building */
	size_t zeros = 0, n = 0, i, j;
	unsigned carry;
	int v;

	*out_len = 0;
	if (len > B58_MAX_TEXT)
		return -EMSGSIZE;
	while (zeros < len && in[zeros] == '1')
		zeros++;
	for (i = zeros; i < len; i++) {
		v = b58_value(in[i]);
		if (v < 0) {
			if (bad_at)
				*bad_at = i;
			return -EILSEQ;
		}
		carry = (unsigned)v;
		for (j = 0; j < n; j++) {
			carry += (unsigned)bytes[j] * 58;
			bytes[j] = (uint8_t)carry;
			carry >>= 8;
		}
		while (carry) {
			bytes[n++] = (uint8_t)carry;
			carry >>= 8;
		}
	}
	if (zeros + n > cap)
		return -ENOSPC;
	memset(out, 0, zeros);
	for (j = 0; j < n; j++)
		out[zeros + j] = bytes[n - 1 - j];
	*out_len = zeros + n;
	return 0;
}

static void ss58_checksum(uint8_t sum[2], const uint8_t *data, size_t n)
{
	crypto_generichash_state st;
	uint8_t h[64];

	crypto_generichash_init(&st, NULL, 0, sizeof(h));
	crypto_generichash_update(&st, (const uint8_t *)"SS58PRE", 7);
	crypto_generichash_update(&st, data, n);
	crypto_generichash_final(&st, h, sizeof(h));
	sum[0] = h[0];
	sum[1] = h[1];
}

static int prefix_ok(unsigned p)
{
	return p <= ENGY_SS58_PREFIX_MAX && p != 46 && p != 47;
}

int engy_ss58_encode(char *out, size_t cap, const uint8_t account[32],
		     uint16_t prefix)
{
	uint8_t raw[2 + ACCOUNT + 2];
	size_t n = 0;

	if (!prefix_ok(prefix))
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	if (prefix < 64) {
		raw[n++] = (uint8_t)prefix;
	} else {
		raw[n++] = (uint8_t)(((prefix & 0xfc) >> 2) | 0x40);
		raw[n++] = (uint8_t)((prefix >> 8) | ((prefix & 3) << 6));
	}
	memcpy(raw + n, account, ACCOUNT);
	n += ACCOUNT;
	ss58_checksum(raw + n, raw, n);
	n += 2;
	return engy_base58_encode(out, cap, raw, n);
}

int engy_ss58_decode(const char *addr, uint8_t account[32], uint16_t *prefix)
{
	uint8_t raw[B58_MAX_TEXT], sum[2];
	size_t n, len = strlen(addr), plen;
	unsigned p;
	int rc;

	if (sodium_init() < 0)
		return -EIO;
	if (len > B58_MAX_TEXT)
		return -EMSGSIZE;
	rc = engy_base58_decode(raw, sizeof(raw), &n, addr, len, NULL);
	if (rc < 0)
		return rc;
	if (n != 1 + ACCOUNT + 2 && n != 2 + ACCOUNT + 2)
		return -EMSGSIZE;
	if (raw[0] < 64) {
		plen = 1;
		p = raw[0];
	} else if (raw[0] < 128) {
		plen = 2;
		p = ((unsigned)(raw[0] & 0x3f) << 2) | (raw[1] >> 6) |
		    ((unsigned)(raw[1] & 0x3f) << 8);
	} else {
		return -EINVAL;
	}
	if (n != plen + ACCOUNT + 2)
		return -EMSGSIZE;
	if (!prefix_ok(p))
		return -EINVAL;
	ss58_checksum(sum, raw, plen + ACCOUNT);
	if (sum[0] != raw[plen + ACCOUNT] || sum[1] != raw[plen + ACCOUNT + 1])
		return -EBADMSG;
	if (account)
		memcpy(account, raw + plen, ACCOUNT);
	if (prefix)
		*prefix = (uint16_t)p;
	return 0;
}

int engy_ss58_decode_prefix(const char *addr, uint16_t want,
			    uint8_t account[32])
{
	uint8_t acc[ACCOUNT];
	uint16_t p;
	int rc;

	rc = engy_ss58_decode(addr, acc, &p);
	if (rc < 0)
		return rc;
	if (p != want)
		return -EPROTO;
	if (account)
		memcpy(account, acc, ACCOUNT);
	return 0;
}

const char *engy_ss58_strerror(int rc)
{
	switch (rc) {
	case 0:
		return "valid";
	case -EILSEQ:
		return "not base58 (a character outside the alphabet)";
	case -EMSGSIZE:
		return "wrong length for an SS58 address of a 32-byte account";
	case -EINVAL:
		return "reserved or malformed SS58 prefix";
	case -EBADMSG:
		return "SS58 checksum mismatch";
	case -EPROTO:
		return "wrong SS58 network prefix";
	default:
		return "cannot decode the SS58 address";
	}
}
