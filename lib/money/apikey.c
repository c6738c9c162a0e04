/* SPDX-License-Identifier: MIT */
/* API and miner keys: generation, keyed hashing, comparison (apikey.h). */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "apikey.h"

static const char base62[] =
	"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

static bool prefix_ok(const char *prefix)
{
	return prefix && strlen(prefix) == 8;
}

int engy_apikey_generate(const char *prefix, char *out, size_t cap)
{
	size_t i;

	if (!prefix_ok(prefix) || !out || cap < ENGY_APIKEY_SIZE)
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	memcpy(out, prefix, 8);
	for (i = 0; i < ENGY_APIKEY_BODY; i++)
		out[8 + i] = base62[randombytes_uniform(62)];
	out[ENGY_APIKEY_LEN] = '\0';
	return 0;
}

bool engy_apikey_well_formed(const char *prefix, const char *key, size_t len)
{
	size_t i;

	if (!prefix_ok(prefix) || !key || len != ENGY_APIKEY_LEN ||
	    memcmp(key, prefix, 8) != 0)
		return false;
	for (i = 8; i < len; i++)
		if (!memchr(base62, key[i], sizeof(base62) - 1) || !key[i])
			return false;
	return true;
}

int engy_apikey_hash(const uint8_t *pepper, size_t pepper_len, const char *key,
		     size_t len, uint8_t out[ENGY_APIKEY_HASH_BYTES])
{
	static const uint8_t none[1];
	crypto_auth_hmacsha256_state st;

	if (!key || len == 0 || len > ENGY_APIKEY_MAX_INPUT ||
	    (pepper_len && !pepper))
		return -EINVAL;
	if (sodium_init() < 0)
		return -EIO;
	crypto_auth_hmacsha256_init(&st, pepper_len ? pepper : none,
				    pepper_len);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)key, len);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
	return 0;
}

bool engy_apikey_hash_eq(const uint8_t a[ENGY_APIKEY_HASH_BYTES],
			 const uint8_t b[ENGY_APIKEY_HASH_BYTES])
{
	return sodium_memcmp(a, b, ENGY_APIKEY_HASH_BYTES) == 0;
}

void engy_apikey_shown(const char *key, char out[ENGY_APIKEY_SHOWN + 1])
{
	size_t n = key ? strnlen(key, ENGY_APIKEY_SHOWN) : 0;

	if (n)
		memcpy(out, key, n);
	out[n] = '\0';
}
