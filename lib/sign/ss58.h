/* SPDX-License-Identifier: MIT */
/*
 * SS58 addresses for 32-byte account ids: base58 (Bitcoin alphabet) of
 * prefix || account || blake2b-512("SS58PRE" || prefix || account)[0..2].
 * Bittensor uses prefix 42 (a "5..." address of 48 characters).
 */
#ifndef ENGY_SS58_H
#define ENGY_SS58_H

#include <stddef.h>
#include <stdint.h>

#define ENGY_SS58_PREFIX_BITTENSOR 42
#define ENGY_SS58_PREFIX_MAX	   16383
/* Longest address (two-byte prefix) plus the NUL. */
#define ENGY_SS58_ADDR_SIZE 52

/*
 * engy_base58_encode() - Bitcoin-alphabet base58 of @n bytes into @out
 * (@cap bytes, NUL-terminated).  Returns the length or -ENOSPC.
 */
int engy_base58_encode(char *out, size_t cap, const uint8_t *in, size_t n);

/*
 * engy_base58_decode() - decode @len characters (at most 128) into @out
 * (@cap bytes); stores the length in @out_len.  Returns 0, -EILSEQ for a
 * character outside the alphabet (its offset in @bad_at when not NULL),
 * -EMSGSIZE for text over 128 characters, -ENOSPC when it does not fit.
 */
int engy_base58_decode(uint8_t *out, size_t cap, size_t *out_len,
		       const char *in, size_t len, size_t *bad_at);

/*
 * engy_ss58_encode() - the address of @account under @prefix (0..16383
 * but not the reserved 46 and 47).  Returns the length or -EINVAL / -ENOSPC.
 */
int engy_ss58_encode(char *out, size_t cap, const uint8_t account[32],
		     uint16_t prefix);

/*
 * engy_ss58_decode() - parse a NUL-terminated address into @account and
 * @prefix (either may be NULL).  Returns 0 or:
 *   -EILSEQ   a character outside the base58 alphabet
 *   -EMSGSIZE not the length of a 32-byte account address
 *   -EINVAL   a reserved or malformed prefix
 *   -EBADMSG  checksum mismatch
 */
int engy_ss58_decode(const char *addr, uint8_t account[32], uint16_t *prefix);

/*
 * engy_ss58_decode_prefix() - engy_ss58_decode() that also requires
 * @want as the prefix; -EPROTO when it is another one.
 */
int engy_ss58_decode_prefix(const char *addr, uint16_t want,
			    uint8_t account[32]);

/* A short phrase for a return code of the two decoders. */
const char *engy_ss58_strerror(int rc);

#endif /* ENGY_SS58_H */
