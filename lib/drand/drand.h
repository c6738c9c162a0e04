/* SPDX-License-Identifier: MIT */
/* drand beacons and timelock encryption for the validator's commit-reveal
 * (specs/commit-reveal.md).  BLS12-381 arithmetic is blst's; this file
 * speaks drand quicknet's scheme ("bls-unchained-g1-rfc9380": signatures
 * on G1, the public key on G2, the message of round R is SHA-256 of R as
 * 8 big-endian bytes, hashed to G1 per RFC 9380 with DRAND_QUICKNET_DST)
 * and the timelock ciphertext subtensor's runtime decrypts (Boneh-Franklin
 * FullIdent over that beacon, AES-256-GCM body, arkworks' compressed
 * serialization).  Built only when configure found blst (HAVE_BLST). */
#ifndef ENGY_DRAND_H
#define ENGY_DRAND_H

#include <stddef.h>
#include <stdint.h>

#define DRAND_G1_LEN	   48 /* a compressed signature */
#define DRAND_G2_LEN	   96 /* a compressed public key */
#define DRAND_QUICKNET_DST "BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_"
/* drand quicknet, as the bittensor SDK and subtensor's runtime pin it. */
#define DRAND_QUICKNET_PK_HEX                                                    \
	"83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b45" \
	"0b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9c" \
	"f809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a"
#define DRAND_QUICKNET_GENESIS 1692803367u /* unix seconds of round 1 */
#define DRAND_QUICKNET_PERIOD  3u	   /* seconds per round */

/* A beacon public key: a G2 point, checked on the curve and in the group. */
typedef struct drand_pk {
	uint8_t raw[DRAND_G2_LEN];
} drand_pk;

/* Parses a compressed G2 public key (96 bytes) or its hex (192 digits,
 * optional 0x).  0, or -1 with a reason in err. */
int drand_pk_parse(drand_pk *pk, const uint8_t *bytes, size_t n, char *err,
		   size_t errlen);
int drand_pk_parse_hex(drand_pk *pk, const char *hex, char *err, size_t errlen);

/* RFC 9380 hash_to_curve into G1 (BLS12381G1_XMD:SHA-256_SSWU_RO_) with the
 * given DST; the point uncompressed (x || y, 96 bytes) and compressed. */
void drand_hash_to_g1(const uint8_t *msg, size_t n, const char *dst,
		      uint8_t xy[96], uint8_t comp[48]);

/* The identity of a round: SHA-256 of the round as 8 big-endian bytes. */
void drand_round_message(uint64_t round, uint8_t out[32]);

/* Does sig (compressed G1) verify as round's signature under pk?  1 yes,
 * 0 no (including a signature that does not parse). */
int drand_verify_round(const drand_pk *pk, uint64_t round,
		       const uint8_t sig[DRAND_G1_LEN]);

/* A test beacon: pk = sk * G2, sig(round) = sk * H(round).  sk is 32
 * big-endian bytes reduced modulo the group order (never zero). */
void drand_test_keygen(const uint8_t sk[32], drand_pk *pk);
void drand_test_sign(const uint8_t sk[32], uint64_t round,
		     uint8_t sig[DRAND_G1_LEN]);

/* For the arithmetic checks against another implementation: P = a*G1 and
 * Q = b*G2 (a, b 32 big-endian bytes reduced modulo the group order),
 * compressed, and e(P, Q) in the serialization the timelock hashes
 * (12 Fp coefficients, 48 bytes little-endian each). */
void drand_test_pair(const uint8_t a[32], const uint8_t b[32], uint8_t p[48],
		     uint8_t q[96], uint8_t gt[576]);

/* The quicknet round whose pulse is published at or before unix time t. */
uint64_t drand_round_at(uint64_t unix_seconds);

/* Timelock encryption to round (tle over FullIdent, AES-256-GCM):
 * *out (malloc'd, *outlen bytes) is the ciphertext in the layout
 * subtensor's runtime deserializes (specs/commit-reveal.md).  The three
 * random inputs are drawn from the system's CSPRNG; tlock_encrypt_det takes
 * them (tests only: the AES key, FullIdent's sigma, the GCM nonce).
 * 0, or -1 with a reason in err. */
int tlock_encrypt(const drand_pk *pk, uint64_t round, const uint8_t *msg,
		  size_t n, uint8_t **out, size_t *outlen, char *err,
		  size_t errlen);
int tlock_encrypt_det(const drand_pk *pk, uint64_t round, const uint8_t *msg,
		      size_t n, const uint8_t key[32], const uint8_t sigma[32],
		      const uint8_t nonce[12], uint8_t **out, size_t *outlen,
		      char *err, size_t errlen);

/* Decrypts with the round's signature (the test helper and the checks;
 * the chain does this itself).  0 and *out (malloc'd), or -1 with a reason
 * (a layout error, a signature that is not the round's, a GCM failure). */
int tlock_decrypt(const uint8_t *ct, size_t n, const uint8_t sig[DRAND_G1_LEN],
		  uint8_t **out, size_t *outlen, char *err, size_t errlen);

#endif
