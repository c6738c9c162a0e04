/* SPDX-License-Identifier: MIT */
/*
 * schnorrkel's sign/verify (src/sign.rs) on libsodium's ristretto255.
 * Scalars are 32-byte little-endian values below l; every reduction from
 * 64 transcript bytes goes through crypto_core_ristretto255_scalar_reduce.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <sodium.h>

#include "merlin.h"
#include "sr25519.h"

#define SCALAR crypto_core_ristretto255_SCALARBYTES
#define POINT  crypto_core_ristretto255_BYTES

/* 1 when @s (32 bytes) is a canonical scalar, i.e. below l. */
static int scalar_canonical(const uint8_t s[SCALAR])
{
	uint8_t wide[64], red[SCALAR];
	int ok;

	memcpy(wide, s, SCALAR);
	memset(wide + SCALAR, 0, SCALAR);
	crypto_core_ristretto255_scalar_reduce(red, wide);
	ok = sodium_memcmp(red, s, SCALAR) == 0;
	sodium_memzero(wide, sizeof(wide));
	sodium_memzero(red, sizeof(red));
	return ok;
}

static int public_from_key(uint8_t pub[POINT], const uint8_t key[SCALAR])
{
	/* Fails only for the zero scalar (identity result). */
	return crypto_scalarmult_ristretto255_base(pub, key) == 0 ? 0 : -EINVAL;
}

static void expand_ed25519(uint8_t secret[64], const uint8_t mini[32])
{
	uint8_t h[crypto_hash_sha512_BYTES];
	int i;

	crypto_hash_sha512(h, mini, 32);
	h[0] &= 248;
	h[31] &= 63;
	h[31] |= 64;
	/* Divide by the cofactor: the result is below 2^252 < l. */
	for (i = 0; i < 31; i++)
		secret[i] = (uint8_t)((h[i] >> 3) | (h[i + 1] << 5));
	secret[31] = h[31] >> 3;
	memcpy(secret + 32, h + 32, 32);
	sodium_memzero(h, sizeof(h));
}

static void expand_uniform(uint8_t secret[64], const uint8_t mini[32])
{
	struct engy_merlin t;
	uint8_t wide[64];

	engy_merlin_init(&t, "ExpandSecretKeys");
	engy_merlin_append(&t, "mini", mini, 32);
	engy_merlin_challenge(&t, "sk", wide, sizeof(wide));
	crypto_core_ristretto255_scalar_reduce(secret, wide);
	engy_merlin_challenge(&t, "no", secret + 32, 32);
	sodium_memzero(wide, sizeof(wide));
	engy_merlin_wipe(&t);
}

int engy_sr25519_keypair_from_mini(struct engy_sr25519_keypair *kp,
				   const uint8_t mini[ENGY_SR25519_MINI_BYTES],
				   enum engy_sr25519_expansion mode)
{
	if (sodium_init() < 0)
		return -EIO;
	switch (mode) {
	case ENGY_SR25519_EXPAND_ED25519:
		expand_ed25519(kp->secret, mini);
		break;
	case ENGY_SR25519_EXPAND_UNIFORM:
		expand_uniform(kp->secret, mini);
		break;
	default:
		return -EINVAL;
	}
	/* The ed25519 scalar is never zero; a uniform zero has odds 1/l. */
	if (public_from_key(kp->pub, kp->secret) < 0) {
		engy_sr25519_keypair_wipe(kp);
		return -EINVAL;
	}
	return 0;
}

int engy_sr25519_keypair_from_secret(
	struct engy_sr25519_keypair *kp,
	const uint8_t secret[ENGY_SR25519_SECRET_BYTES])
{
	if (sodium_init() < 0)
		return -EIO;
	if (!scalar_canonical(secret))
		return -EINVAL;
	memcpy(kp->secret, secret, ENGY_SR25519_SECRET_BYTES);
	if (public_from_key(kp->pub, kp->secret) < 0) {
		engy_sr25519_keypair_wipe(kp);
		return -EINVAL;
	}
	return 0;
}

int engy_sr25519_secret_from_ed25519(
	uint8_t out[ENGY_SR25519_SECRET_BYTES],
	const uint8_t in[ENGY_SR25519_SECRET_BYTES])
{
	uint8_t key[SCALAR];
	int i, rc = 0;

	if ((in[0] & 7) || (in[31] & 0x80))
		return -EINVAL;
	for (i = 0; i < 31; i++)
		key[i] = (uint8_t)((in[i] >> 3) | (in[i + 1] << 5));
	key[31] = in[31] >> 3;
	if (sodium_is_zero(key, SCALAR) || !scalar_canonical(key)) {
		rc = -EINVAL;
		goto out;
	}
	memcpy(out, key, SCALAR);
	memmove(out + 32, in + 32, 32);
out:
	sodium_memzero(key, sizeof(key));
	return rc;
}

void engy_sr25519_secret_to_ed25519(uint8_t out[ENGY_SR25519_SECRET_BYTES],
				    const uint8_t in[ENGY_SR25519_SECRET_BYTES])
{
	uint8_t key[SCALAR];
	int i;

	/* key < l < 2^253, so key*8 fits in 256 bits. */
	key[0] = (uint8_t)(in[0] << 3);
	for (i = 1; i < 32; i++)
		key[i] = (uint8_t)((in[i] << 3) | (in[i - 1] >> 5));
	memcpy(out, key, SCALAR);
	memmove(out + 32, in + 32, 32);
	sodium_memzero(key, sizeof(key));
}

/* SigningContext(ctx).bytes(msg), then proto-name and the public key. */
static void transcript_start(struct engy_merlin *t, const char *ctx,
			     const void *msg, size_t len,
			     const uint8_t pub[POINT])
{
	engy_merlin_init(t, "SigningContext");
	engy_merlin_append(t, "", ctx, strlen(ctx));
	engy_merlin_append(t, "sign-bytes", msg, len);
	engy_merlin_append(t, "proto-name", "Schnorr-sig", 11);
	engy_merlin_append(t, "sign:pk", pub, POINT);
}

static int too_long(const char *ctx, size_t len)
{
	/* Merlin frames lengths as 32 bits. */
	return len > UINT32_MAX || strlen(ctx) > UINT32_MAX;
}

int engy_sr25519_sign_rng(const struct engy_sr25519_keypair *kp,
			  const char *ctx, const void *msg, size_t len,
			  const uint8_t rng[ENGY_SR25519_RNG_BYTES],
			  uint8_t sig[ENGY_SR25519_SIG_BYTES])
{
	struct engy_merlin t;
	uint8_t wide[64], r[SCALAR], k[SCALAR], s[SCALAR];
	int rc = 0;

	if (too_long(ctx, len))
		return -EMSGSIZE;
	if (sodium_init() < 0)
		return -EIO;
	transcript_start(&t, ctx, msg, len, kp->pub);
	engy_merlin_witness_bytes(&t, "signing", kp->secret + 32, 32, rng, wide,
				  sizeof(wide));
	crypto_core_ristretto255_scalar_reduce(r, wide);
	/* R = r*B; r == 0 needs a 2^-252 accident. */
	if (crypto_scalarmult_ristretto255_base(sig, r) != 0) {
		rc = -EIO;
		goto out;
	}
	engy_merlin_append(&t, "sign:R", sig, POINT);
	engy_merlin_challenge(&t, "sign:c", wide, sizeof(wide));
	crypto_core_ristretto255_scalar_reduce(k, wide);
	crypto_core_ristretto255_scalar_mul(s, k, kp->secret);
	crypto_core_ristretto255_scalar_add(sig + POINT, s, r);
	sig[63] |= 0x80; /* schnorrkel's marker: not an old-format sig */
out:
	sodium_memzero(wide, sizeof(wide));
	sodium_memzero(r, sizeof(r));
	sodium_memzero(s, sizeof(s));
	engy_merlin_wipe(&t);
	if (rc)
		memset(sig, 0, ENGY_SR25519_SIG_BYTES);
	return rc;
}

int engy_sr25519_sign(const struct engy_sr25519_keypair *kp, const char *ctx,
		      const void *msg, size_t len,
		      uint8_t sig[ENGY_SR25519_SIG_BYTES])
{
	uint8_t rng[ENGY_SR25519_RNG_BYTES];
	int rc;

	if (sodium_init() < 0)
		return -EIO;
	randombytes_buf(rng, sizeof(rng));
	rc = engy_sr25519_sign_rng(kp, ctx, msg, len, rng, sig);
	sodium_memzero(rng, sizeof(rng));
	return rc;
}

int engy_sr25519_valid_public(const uint8_t pub[ENGY_SR25519_PUBLIC_BYTES])
{
	if (sodium_init() < 0)
		return 0;
	return crypto_core_ristretto255_is_valid_point(pub) &&
	       !sodium_is_zero(pub, POINT);
}

int engy_sr25519_verify(const uint8_t pub[ENGY_SR25519_PUBLIC_BYTES],
			const char *ctx, const void *msg, size_t len,
			const uint8_t sig[ENGY_SR25519_SIG_BYTES])
{
	static const uint8_t identity[POINT];
	struct engy_merlin t;
	uint8_t wide[64], s[SCALAR], k[SCALAR];
	uint8_t sb[POINT], ka[POINT], rr[POINT];

	if (too_long(ctx, len))
		return -EMSGSIZE;
	/* The identity key would accept R = s*B for every message. */
	if (!engy_sr25519_valid_public(pub))
		return -EINVAL;
	if (!(sig[63] & 0x80))
		return -EPROTO;
	memcpy(s, sig + POINT, SCALAR);
	s[31] &= 0x7f;
	if (!scalar_canonical(s) ||
	    !crypto_core_ristretto255_is_valid_point(sig))
		return -EPROTO;

	transcript_start(&t, ctx, msg, len, pub);
	engy_merlin_append(&t, "sign:R", sig, POINT);
	engy_merlin_challenge(&t, "sign:c", wide, sizeof(wide));
	engy_merlin_wipe(&t);
	crypto_core_ristretto255_scalar_reduce(k, wide);

	/* A -1 here means an identity result, which encodes as zeros. */
	if (crypto_scalarmult_ristretto255_base(sb, s) != 0)
		memcpy(sb, identity, POINT);
	if (crypto_scalarmult_ristretto255(ka, k, pub) != 0)
		memcpy(ka, identity, POINT);
	if (crypto_core_ristretto255_sub(rr, sb, ka) != 0)
		return -EBADMSG;
	return sodium_memcmp(rr, sig, POINT) == 0 ? 0 : -EBADMSG;
}

void engy_sr25519_keypair_wipe(struct engy_sr25519_keypair *kp)
{
	sodium_memzero(kp, sizeof(*kp));
}
