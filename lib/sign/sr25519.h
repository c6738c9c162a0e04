/* SPDX-License-Identifier: MIT */
/*
 * sr25519 as Substrate uses it: schnorrkel Schnorr signatures on
 * ristretto255 with a Merlin transcript, built on libsodium.  Signatures
 * verify under schnorrkel / sp-core / polkadot-js and, given the same
 * 32 nonce-rng bytes, equal @scure/sr25519's byte for byte
 * (specs/signing.md).
 *
 * Secret keys are held in schnorrkel's SecretKey::to_bytes() form:
 * key (canonical scalar mod l, little-endian) || nonce (32 bytes).  This is
 * the form of bittensor's "privateKey"; polkadot-js uses the "ed25519" form
 * key*8 || nonce, converted by the helpers below.
 */
#ifndef ENGY_SR25519_H
#define ENGY_SR25519_H

#include <stddef.h>
#include <stdint.h>

#define ENGY_SR25519_MINI_BYTES	  32
#define ENGY_SR25519_SECRET_BYTES 64
#define ENGY_SR25519_PUBLIC_BYTES 32
#define ENGY_SR25519_SIG_BYTES	  64
#define ENGY_SR25519_RNG_BYTES	  32

/* The signing context of every Substrate account signature. */
#define ENGY_SR25519_SUBSTRATE_CTX "substrate"

enum engy_sr25519_expansion {
	/* SHA-512, ed25519 clamp, divide by 8: what Substrate uses. */
	ENGY_SR25519_EXPAND_ED25519,
	/* Merlin "ExpandSecretKeys": schnorrkel's own default. */
	ENGY_SR25519_EXPAND_UNIFORM,
};

struct engy_sr25519_keypair {
	uint8_t secret[ENGY_SR25519_SECRET_BYTES]; /* key || nonce */
	uint8_t pub[ENGY_SR25519_PUBLIC_BYTES];	   /* compressed key*B */
};

/*
 * engy_sr25519_keypair_from_mini() - expand a 32-byte mini secret (the
 * "seed") into a key pair.  Returns 0, or -EINVAL for an unknown @mode.
 */
int engy_sr25519_keypair_from_mini(struct engy_sr25519_keypair *kp,
				   const uint8_t mini[ENGY_SR25519_MINI_BYTES],
				   enum engy_sr25519_expansion mode);

/*
 * engy_sr25519_keypair_from_secret() - a key pair from the 64-byte
 * schnorrkel form.  Returns 0, or -EINVAL when the scalar is zero or not
 * canonical (not below the group order l).
 */
int engy_sr25519_keypair_from_secret(
	struct engy_sr25519_keypair *kp,
	const uint8_t secret[ENGY_SR25519_SECRET_BYTES]);

/*
 * Conversions to and from the ed25519 form (key*8 || nonce).  From: returns
 * -EINVAL unless the first half is a multiple of 8 below 2^255 whose eighth
 * is a canonical non-zero scalar.
 */
int engy_sr25519_secret_from_ed25519(
	uint8_t out[ENGY_SR25519_SECRET_BYTES],
	const uint8_t in[ENGY_SR25519_SECRET_BYTES]);
void engy_sr25519_secret_to_ed25519(
	uint8_t out[ENGY_SR25519_SECRET_BYTES],
	const uint8_t in[ENGY_SR25519_SECRET_BYTES]);

/*
 * engy_sr25519_sign() - sign @len bytes of @msg under the signing context
 * @ctx (a string, usually ENGY_SR25519_SUBSTRATE_CTX).  The nonce mixes the
 * secret nonce, the transcript and 32 random bytes (schnorrkel's hedged
 * nonce).  Returns 0, -EMSGSIZE for a message or context of 4 GiB or more,
 * or -EIO if the random source failed.
 */
int engy_sr25519_sign(const struct engy_sr25519_keypair *kp, const char *ctx,
		      const void *msg, size_t len,
		      uint8_t sig[ENGY_SR25519_SIG_BYTES]);

/* The same with the 32 nonce-rng bytes given: deterministic, for tests. */
int engy_sr25519_sign_rng(const struct engy_sr25519_keypair *kp,
			  const char *ctx, const void *msg, size_t len,
			  const uint8_t rng[ENGY_SR25519_RNG_BYTES],
			  uint8_t sig[ENGY_SR25519_SIG_BYTES]);

/*
 * engy_sr25519_verify() - check @sig over @msg under @ctx for the public
 * key @pub.  Returns 0 when it verifies; -EINVAL when @pub is not a valid
 * ristretto255 point (or is the identity); -EPROTO when @sig is malformed
 * (schnorrkel marker bit clear, s not canonical, R not a valid point);
 * -EBADMSG when it does not verify; -EMSGSIZE as for signing.
 */
int engy_sr25519_verify(const uint8_t pub[ENGY_SR25519_PUBLIC_BYTES],
			const char *ctx, const void *msg, size_t len,
			const uint8_t sig[ENGY_SR25519_SIG_BYTES]);

/* engy_sr25519_valid_public() - 1 when @pub is a usable public key. */
int engy_sr25519_valid_public(const uint8_t pub[ENGY_SR25519_PUBLIC_BYTES]);

void engy_sr25519_keypair_wipe(struct engy_sr25519_keypair *kp);

#endif /* ENGY_SR25519_H */
