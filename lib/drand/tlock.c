/* SPDX-License-Identifier: MIT */
/* Timelock encryption to a drand round, in the ciphertext layout
 * subtensor's runtime deserializes (specs/commit-reveal.md):
 *
 *   header  U (compressed G2, 96) | len64 32 | V (32) | len64 32 | W (32)
 *   body    len64 B | [ len64 C | AES-256-GCM ciphertext||tag (C) |
 *                       len64 12 | nonce (12) ]           (B bytes)
 *   suite   len64 8 | "AES_GCM_"
 *
 * len64 is a little-endian u64 (arkworks' length prefix).  With the AES
 * key k, a random sigma, r = SHA-256(sigma || k) mod q, U = r*G2,
 * V = sigma ^ SHA-256(ser(e(H(round), r*P))), W = k ^ SHA-256(sigma), where
 * ser(GT) is the 12 Fp coefficients, c0 before c1 at every level, each 48
 * bytes little-endian.  Decryption with the round's signature s*H(round):
 * e(sig, U) gives the same GT element. */
#include "drand_int.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"

#define SUITE	   "AES_GCM_"
#define SUITE_LEN  8
#define NONCE_LEN  12
#define TAG_LEN	   16
#define HEADER_LEN (DRAND_G2_LEN + 8 + 32 + 8 + 32)
/* The largest body decryption accepts (a commit is a few KiB). */
#define MAX_MSG (1u << 24)

void drand_sha256(const uint8_t *a, size_t an, const uint8_t *b, size_t bn,
		  uint8_t out[32])
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned int olen = 32;
	if (!c || !EVP_DigestInit_ex(c, EVP_sha256(), NULL) ||
	    !EVP_DigestUpdate(c, a, an) ||
	    (b && bn && !EVP_DigestUpdate(c, b, bn)) ||
	    !EVP_DigestFinal_ex(c, out, &olen))
		abort(); /* out of memory in OpenSSL: nothing sensible to return */
	EVP_MD_CTX_free(c);
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void drand_gt_bytes(const blst_fp12 *f, uint8_t out[576])
{
	size_t k = 0;
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			for (int l = 0; l < 2; l++, k++)
				blst_lendian_from_fp(out + 48 * k,
						     &f->fp6[i].fp2[j].fp[l]);
}

/* SHA-256 of the GT element in arkworks' serialization. */
static void gt_hash(const blst_fp12 *f, uint8_t out[32])
{
	uint8_t buf[576];
	drand_gt_bytes(f, buf);
	drand_sha256(buf, sizeof buf, NULL, 0, out);
}

static void pairing(blst_fp12 *out, const blst_p1_affine *p,
		    const blst_p2_affine *q)
{
	blst_miller_loop(out, q, p);
	blst_final_exp(out, out);
}

static int gcm(int enc, const uint8_t key[32], const uint8_t nonce[12],
	       const uint8_t *in, size_t n, uint8_t *out, uint8_t tag[TAG_LEN])
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int ok = 0, len = 0;
	if (!c)
		return -1;
	if (EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) &&
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN, NULL) &&
	    EVP_CipherInit_ex(c, NULL, NULL, key, nonce, enc) &&
	    (n == 0 || EVP_CipherUpdate(c, out, &len, in, (int)n)) &&
	    (enc ||
	     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG_LEN, tag)) &&
	    EVP_CipherFinal_ex(c, out + len, &len) &&
	    (!enc ||
	     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG_LEN, tag)))
		ok = 1;
	EVP_CIPHER_CTX_free(c);
	return ok ? 0 : -1;
}

int tlock_encrypt_det(const drand_pk *pk, uint64_t round, const uint8_t *msg,
		      size_t n, const uint8_t key[32], const uint8_t sigma[32],
		      const uint8_t nonce[12], uint8_t **out, size_t *outlen,
		      char *err, size_t errlen)
{
	blst_p2_affine P;
	*out = NULL;
	*outlen = 0;
	if (n > MAX_MSG) {
		engy_seterr(err, errlen,
			    "timelock: a %zu-byte message is too large", n);
		return -1;
	}
	if (blst_p2_uncompress(&P, pk->raw) != BLST_SUCCESS) {
		engy_seterr(err, errlen,
			    "timelock: the beacon public key does not parse");
		return -1;
	}
	/* r = SHA-256(sigma || key) mod q; U = r*G2; rP = r*P. */
	uint8_t h[32], gh[32];
	blst_scalar r;
	drand_sha256(sigma, 32, key, 32, h);
	blst_scalar_from_be_bytes(&r, h, sizeof h);
	blst_p2 U, Pp, rP;
	blst_p2_mult(&U, blst_p2_generator(), r.b, 255);
	blst_p2_from_affine(&Pp, &P);
	blst_p2_mult(&rP, &Pp, r.b, 255);
	blst_p2_affine rPa;
	blst_p2_to_affine(&rPa, &rP);
	blst_p1_affine Q;
	drand_round_point(round, &Q);
	blst_fp12 g;
	pairing(&g, &Q, &rPa);
	gt_hash(&g, gh);
	uint8_t hs[32];
	drand_sha256(sigma, 32, NULL, 0, hs);

	size_t ctlen = n + TAG_LEN, body = 8 + ctlen + 8 + NONCE_LEN;
	size_t total = HEADER_LEN + 8 + body + 8 + SUITE_LEN;
	uint8_t *b = malloc(total), *p = b;
	if (!b) {
		engy_seterr(err, errlen, "timelock: out of memory");
		return -1;
	}
	blst_p2_compress(p, &U);
	p += DRAND_G2_LEN;
	put64(p, 32);
	p += 8;
	for (int i = 0; i < 32; i++)
		p[i] = sigma[i] ^ gh[i];
	p += 32;
	put64(p, 32);
	p += 8;
	for (int i = 0; i < 32; i++)
		p[i] = key[i] ^ hs[i];
	p += 32;
	put64(p, body);
	p += 8;
	put64(p, ctlen);
	p += 8;
	if (gcm(1, key, nonce, msg, n, p, p + n) < 0) {
		free(b);
		engy_seterr(err, errlen, "timelock: AES-256-GCM failed");
		return -1;
	}
	p += ctlen;
	put64(p, NONCE_LEN);
	p += 8;
	memcpy(p, nonce, NONCE_LEN);
	p += NONCE_LEN;
	put64(p, SUITE_LEN);
	p += 8;
	memcpy(p, SUITE, SUITE_LEN);
	*out = b;
	*outlen = total;
	return 0;
}

int tlock_encrypt(const drand_pk *pk, uint64_t round, const uint8_t *msg,
		  size_t n, uint8_t **out, size_t *outlen, char *err,
		  size_t errlen)
{
	uint8_t key[32], sigma[32], nonce[NONCE_LEN];
	if (RAND_bytes(key, sizeof key) != 1 ||
	    RAND_bytes(sigma, sizeof sigma) != 1 ||
	    RAND_bytes(nonce, sizeof nonce) != 1) {
		engy_seterr(err, errlen,
			    "timelock: the system's random source failed");
		return -1;
	}
	int rc = tlock_encrypt_det(pk, round, msg, n, key, sigma, nonce, out,
				   outlen, err, errlen);
	OPENSSL_cleanse(key, sizeof key);
	OPENSSL_cleanse(sigma, sizeof sigma);
	return rc;
}

int tlock_decrypt(const uint8_t *ct, size_t n, const uint8_t sig[DRAND_G1_LEN],
		  uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
	*out = NULL;
	*outlen = 0;
	blst_p1_affine s;
	blst_p2_affine U;
	if (blst_p1_uncompress(&s, sig) != BLST_SUCCESS ||
	    !blst_p1_affine_in_g1(&s)) {
		engy_seterr(
			err, errlen,
			"timelock: the signature is not a compressed G1 point");
		return -1;
	}
	if (n < HEADER_LEN + 8) {
		engy_seterr(err, errlen,
			    "timelock: %zu bytes is shorter than the header",
			    n);
		return -1;
	}
	if (blst_p2_uncompress(&U, ct) != BLST_SUCCESS ||
	    !blst_p2_affine_in_g2(&U)) {
		engy_seterr(err, errlen,
			    "timelock: U is not a compressed G2 point");
		return -1;
	}
	const uint8_t *V = ct + DRAND_G2_LEN + 8, *W = V + 32 + 8;
	if (get64(ct + DRAND_G2_LEN) != 32 || get64(V + 32) != 32) {
		engy_seterr(err, errlen,
			    "timelock: V and W must be 32 bytes each");
		return -1;
	}
	const uint8_t *p = ct + HEADER_LEN, *end = ct + n;
	uint64_t body = get64(p);
	p += 8;
	if (body > (uint64_t)(end - p) || body < 8 + TAG_LEN + 8 + NONCE_LEN) {
		engy_seterr(err, errlen,
			    "timelock: the body length %llu does not fit",
			    (unsigned long long)body);
		return -1;
	}
	const uint8_t *bp = p, *bend = p + body;
	uint64_t clen = get64(bp);
	bp += 8;
	if (clen < TAG_LEN || clen != body - 8 - 8 - NONCE_LEN ||
	    get64(bp + clen) != NONCE_LEN) {
		engy_seterr(
			err, errlen,
			"timelock: the body is not ciphertext || 12-byte nonce");
		return -1;
	}
	const uint8_t *cbytes = bp, *nonce = bp + clen + 8;
	p = bend;
	if ((size_t)(end - p) != 8 + SUITE_LEN || get64(p) != SUITE_LEN ||
	    memcmp(p + 8, SUITE, SUITE_LEN)) {
		engy_seterr(
			err, errlen,
			"timelock: the cipher suite is not AES_GCM_ (or bytes follow it)");
		return -1;
	}
	/* sigma = V ^ H(e(sig, U)); key = W ^ SHA-256(sigma); check U. */
	blst_fp12 g;
	uint8_t gh[32], sigma[32], hs[32], key[32], h[32];
	pairing(&g, &s, &U);
	gt_hash(&g, gh);
	for (int i = 0; i < 32; i++)
		sigma[i] = V[i] ^ gh[i];
	drand_sha256(sigma, 32, NULL, 0, hs);
	for (int i = 0; i < 32; i++)
		key[i] = W[i] ^ hs[i];
	blst_scalar r;
	drand_sha256(sigma, 32, key, 32, h);
	blst_scalar_from_be_bytes(&r, h, sizeof h);
	blst_p2 Uc;
	uint8_t uc[DRAND_G2_LEN];
	blst_p2_mult(&Uc, blst_p2_generator(), r.b, 255);
	blst_p2_compress(uc, &Uc);
	if (memcmp(uc, ct, DRAND_G2_LEN)) {
		engy_seterr(
			err, errlen,
			"timelock: the signature is not this round's (the header does not open)");
		return -1;
	}
	size_t mlen = clen - TAG_LEN;
	uint8_t *m = malloc(mlen ? mlen : 1), tag[TAG_LEN];
	if (!m) {
		engy_seterr(err, errlen, "timelock: out of memory");
		return -1;
	}
	memcpy(tag, cbytes + mlen, TAG_LEN);
	if (gcm(0, key, nonce, cbytes, mlen, m, tag) < 0) {
		free(m);
		engy_seterr(
			err, errlen,
			"timelock: the body does not authenticate (AES-256-GCM)");
		return -1;
	}
	OPENSSL_cleanse(key, sizeof key);
	*out = m;
	*outlen = mlen;
	return 0;
}
