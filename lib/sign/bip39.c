/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "bip39.h"

#define MAX_WORDS    24
#define MAX_WORD_LEN 8

static int word_index(const char *w, size_t len)
{
	char buf[MAX_WORD_LEN + 1];
	int lo = 0, hi = ENGY_BIP39_WORDS - 1, mid, c;

	if (len == 0 || len > MAX_WORD_LEN)
		return -1;
	memcpy(buf, w, len);
	buf[len] = '\0';
	while (lo <= hi) {
		mid = (lo + hi) / 2;
		c = strcmp(buf, engy_bip39_english[mid]);
		if (c == 0)
			return mid;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int engy_bip39_entropy(const char *phrase,
		       uint8_t entropy[ENGY_BIP39_MAX_ENTROPY],
		       size_t *bad_word)
{
	/* 24 words * 11 bits = 264 bits = 33 bytes: entropy then checksum. */
	uint8_t bits[33] = { 0 }, hash[crypto_hash_sha256_BYTES];
	const char *p = phrase, *w;
	size_t nwords = 0, nbits = 0, ent, cs, i;
	int idx, b, rc;

	for (;;) {
		while (is_blank(*p))
			p++;
		if (!*p)
			break;
		w = p;
		while (*p && !is_blank(*p))
			p++;
		if (nwords == MAX_WORDS) {
			rc = -EINVAL;
			goto out;
		}
		idx = word_index(w, (size_t)(p - w));
		if (idx < 0) {
			if (bad_word)
				*bad_word = nwords;
			rc = -ENOENT;
			goto out;
		}
		for (b = 10; b >= 0; b--, nbits++)
			if (idx & (1 << b))
				bits[nbits / 8] |=
					(uint8_t)(0x80 >> (nbits % 8));
		nwords++;
	}
	if (nwords < 12 || nwords % 3) {
		rc = -EINVAL;
		goto out;
	}
	ent = nbits * 32 / 33 / 8; /* entropy bytes */
	cs = nbits - ent * 8;	   /* checksum bits: ent * 8 / 32 */
	if (crypto_hash_sha256(hash, bits, ent) != 0) {
		rc = -EIO;
		goto out;
	}
	for (i = 0; i < cs; i++) {
		size_t at = ent * 8 + i;
		int want = (hash[i / 8] >> (7 - i % 8)) & 1;
		int got = (bits[at / 8] >> (7 - at % 8)) & 1;

		if (want != got) {
			rc = -EBADMSG;
			goto out;
		}
	}
	memcpy(entropy, bits, ent);
	rc = (int)ent;
out:
	sodium_memzero(bits, sizeof(bits));
	sodium_memzero(hash, sizeof(hash));
	return rc;
}

int engy_bip39_mini_secret(const char *phrase, const char *passphrase,
			   uint8_t mini[32], size_t *bad_word)
{
	uint8_t entropy[ENGY_BIP39_MAX_ENTROPY], seed[64];
	size_t plen = passphrase ? strlen(passphrase) : 0;
	char *salt = NULL;
	int n, rc = 0;

	if (plen > 1024)
		return -EINVAL;
	n = engy_bip39_entropy(phrase, entropy, bad_word);
	if (n < 0)
		return n;
	salt = malloc(8 + plen + 1);
	if (!salt) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(salt, "mnemonic", 8);
	if (plen)
		memcpy(salt + 8, passphrase, plen);
	if (PKCS5_PBKDF2_HMAC((const char *)entropy, n, (unsigned char *)salt,
			      (int)(8 + plen), 2048, EVP_sha512(),
			      (int)sizeof(seed), seed) != 1) {
		rc = -EIO;
		goto out;
	}
	memcpy(mini, seed, 32);
out:
	if (salt) {
		sodium_memzero(salt, 8 + plen);
		free(salt);
	}
	sodium_memzero(entropy, sizeof(entropy));
	sodium_memzero(seed, sizeof(seed));
	return rc;
}
