/* SPDX-License-Identifier: MIT */
/*
 * API keys (buyers, "sk-engy-...") and miner keys ("mk-engy-..."): a
 * fixed prefix and 43 base62 characters drawn uniformly from libsodium's
 * randomness (43 * log2(62) = 256 bits).  Only a keyed hash is stored:
 *
 *   hash = HMAC-SHA-256(key = pepper, message = the whole key text)
 *
 * with the server-side pepper (empty when none is configured), so a copy
 * of the database alone cannot confirm a guessed key.  Hashes are
 * compared in constant time.  specs/store.md states the scheme so every
 * store plugin computes the same hash.
 */
#ifndef ENGY_APIKEY_H
#define ENGY_APIKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENGY_APIKEY_PREFIX   "sk-engy-"
#define ENGY_MINERKEY_PREFIX "mk-engy-"
#define ENGY_APIKEY_BODY     43
/* Characters of a generated key: the 8-character prefix and the body. */
#define ENGY_APIKEY_LEN	 (8 + ENGY_APIKEY_BODY)
#define ENGY_APIKEY_SIZE (ENGY_APIKEY_LEN + 1)
/* What may be shown of a key later: the prefix and 4 body characters. */
#define ENGY_APIKEY_SHOWN      12
#define ENGY_APIKEY_HASH_BYTES 32
/* Longest key text hashed at all; longer input is refused unhashed. */
#define ENGY_APIKEY_MAX_INPUT 512

/*
 * engy_apikey_generate() - a fresh key with @prefix (8 characters,
 * ENGY_APIKEY_PREFIX or ENGY_MINERKEY_PREFIX) into @out (@cap >=
 * ENGY_APIKEY_SIZE).  Returns 0 or -EINVAL.
 */
int engy_apikey_generate(const char *prefix, char *out, size_t cap);

/* Whether @key (@len bytes) has the shape engy_apikey_generate() makes. */
bool engy_apikey_well_formed(const char *prefix, const char *key, size_t len);

/*
 * engy_apikey_hash() - HMAC-SHA-256 of @key under @pepper (may be empty).
 * Any bytes are hashed (a miner key issued elsewhere need not have our
 * shape); 1..ENGY_APIKEY_MAX_INPUT bytes, else -EINVAL.
 */
int engy_apikey_hash(const uint8_t *pepper, size_t pepper_len, const char *key,
		     size_t len, uint8_t out[ENGY_APIKEY_HASH_BYTES]);

/* Constant-time equality of two hashes. */
bool engy_apikey_hash_eq(const uint8_t a[ENGY_APIKEY_HASH_BYTES],
			 const uint8_t b[ENGY_APIKEY_HASH_BYTES]);

/* The ENGY_APIKEY_SHOWN leading characters of @key, NUL-terminated. */
void engy_apikey_shown(const char *key, char out[ENGY_APIKEY_SHOWN + 1]);

#endif /* ENGY_APIKEY_H */
