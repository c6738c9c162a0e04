/* SPDX-License-Identifier: MIT */
/*
 * The signed epoch (specs/settlement.md §4, specs/signing.md): the master
 * validator signs, with sr25519 in the "substrate" context, the ASCII
 * message
 *
 *   engy-sn53:epoch:v1:<netuid>:<epoch_index>:<digest>
 *
 * where netuid and epoch_index are decimal without leading zeros and
 * digest is the lower-case hex SHA-256 of the exact result_json bytes.
 * The payload the provider publishes carries result_json as a JSON string
 * beside that digest and the 128-hex-digit signature.
 */
#ifndef ENGY_EPOCH_SIGN_H
#define ENGY_EPOCH_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "sr25519.h"

#define ENGY_EPOCH_MSG_PREFIX "engy-sn53:epoch:v1:"
#define ENGY_EPOCH_DIGEST_HEX 64
#define ENGY_EPOCH_MSG_MAX    128		  /* longest message plus NUL */
#define ENGY_EPOCH_MAX_INDEX  9007199254740991ULL /* 2^53 - 1: exact in JSON */

/* engy_epoch_digest() - lower-case hex SHA-256 of @len bytes, NUL-terminated. */
void engy_epoch_digest(const void *result_json, size_t len,
		       char hex[ENGY_EPOCH_DIGEST_HEX + 1]);

/*
 * engy_epoch_message() - the message for @netuid, @epoch and @digest (64
 * lower-case hex digits).  Returns its length, or -EINVAL for a digest of
 * another shape or an epoch over ENGY_EPOCH_MAX_INDEX, -ENOSPC when @cap
 * is too small.
 */
int engy_epoch_message(char *out, size_t cap, uint16_t netuid, uint64_t epoch,
		       const char *digest);

/*
 * engy_epoch_sign() - sign the message built from the digest of
 * @result_json.  @rng: 32 nonce-rng bytes for a reproducible signature, or
 * NULL for fresh randomness (production).  Returns 0 or a negative errno.
 */
int engy_epoch_sign(const struct engy_sr25519_keypair *kp, uint16_t netuid,
		    uint64_t epoch, const void *result_json, size_t len,
		    const uint8_t *rng, uint8_t sig[ENGY_SR25519_SIG_BYTES]);

/* engy_epoch_verify() - 0 when @sig is @pub's over that message; else as
 * engy_sr25519_verify(). */
int engy_epoch_verify(const uint8_t pub[ENGY_SR25519_PUBLIC_BYTES],
		      uint16_t netuid, uint64_t epoch, const void *result_json,
		      size_t len, const uint8_t sig[ENGY_SR25519_SIG_BYTES]);

/*
 * engy_epoch_result_check() - the result_json rules of the light validator
 * (specs/settlement.md §5.2): a JSON object whose epoch_index and netuid equal
 * @epoch and @netuid and whose "weights" is a list of [string, integer]
 * pairs with 0 <= integer <= 65535 (booleans refused).  Returns 0 or
 * -EINVAL with the reason in @why.
 */
int engy_epoch_result_check(const char *result_json, size_t len,
			    uint16_t netuid, uint64_t epoch, char *why,
			    size_t whylen);

/*
 * engy_epoch_payload() - the published payload (v 1, netuid, epoch_index,
 * digest, result_json, signature, and the display-only weights and
 * signed_hotkey), as a malloc'd NUL-terminated JSON text in *@out.
 * @result_json must pass engy_epoch_result_check().  Returns 0 or a
 * negative errno.
 */
int engy_epoch_payload(char **out, uint16_t netuid, uint64_t epoch,
		       const char *result_json, size_t len,
		       const uint8_t sig[ENGY_SR25519_SIG_BYTES],
		       const char *signed_hotkey);

/* Why a payload was rejected, in the light validator's words. */
enum engy_epoch_reject {
	ENGY_EPOCH_ACCEPT = 0,
	ENGY_EPOCH_REJECT_VERSION,
	ENGY_EPOCH_REJECT_NETUID,
	ENGY_EPOCH_REJECT_MALFORMED,
	ENGY_EPOCH_REJECT_DIGEST,
	ENGY_EPOCH_REJECT_SIGNATURE,
};

/* "accept", "version", "netuid", "malformed", "digest", "signature". */
const char *engy_epoch_reject_name(enum engy_epoch_reject r);

struct engy_epoch_verified {
	uint64_t epoch_index;
	char digest[ENGY_EPOCH_DIGEST_HEX + 1];
	char *result_json; /* malloc'd, NUL-terminated; the trusted copy */
	size_t result_len;
};

/*
 * engy_epoch_payload_check() - the light validator's verification of a
 * fetched payload (specs/settlement.md §5.2, in order) against the expected
 * @netuid and the pinned master key @master_pub; never the payload's own
 * signed_hotkey.  On ENGY_EPOCH_ACCEPT, @out holds the verified
 * result_json (free with engy_epoch_verified_free()); otherwise @why
 * holds one line.  A failure to allocate reads as malformed.
 */
enum engy_epoch_reject
engy_epoch_payload_check(const char *payload, size_t len, uint16_t netuid,
			 const uint8_t master_pub[ENGY_SR25519_PUBLIC_BYTES],
			 struct engy_epoch_verified *out, char *why,
			 size_t whylen);

void engy_epoch_verified_free(struct engy_epoch_verified *v);

#endif /* ENGY_EPOCH_SIGN_H */
