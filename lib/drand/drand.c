/* SPDX-License-Identifier: MIT */
/* drand quicknet over blst: public keys, RFC 9380 hash-to-G1, round
 * signatures (verify, and a test beacon that signs). */
#include "drand_int.h"

#include <string.h>

#include "errbuf.h"
#include "hex.h"

int drand_pk_parse(drand_pk *pk, const uint8_t *bytes, size_t n, char *err,
		   size_t errlen)
{
	blst_p2_affine a;
	if (n != DRAND_G2_LEN) {
		engy_seterr(
			err, errlen,
			"beacon public key: %zu bytes, expected a %d-byte compressed G2 point",
			n, DRAND_G2_LEN);
		return -1;
	}
	BLST_ERROR e = blst_p2_uncompress(&a, bytes);
	if (e != BLST_SUCCESS) {
		engy_seterr(
			err, errlen,
			"beacon public key: not a compressed G2 point (blst error %d)",
			(int)e);
		return -1;
	}
	if (blst_p2_affine_is_inf(&a) || !blst_p2_affine_in_g2(&a)) {
		engy_seterr(err, errlen,
			    "beacon public key: not in the G2 subgroup");
		return -1;
	}
	memcpy(pk->raw, bytes, DRAND_G2_LEN);
	return 0;
}

int drand_unhex(const char *hex, uint8_t *out, size_t cap, size_t *n)
{
	if (hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X'))
		hex += 2;
	size_t len = strlen(hex);
	if (len % 2 || len / 2 > cap)
		return -1;
	for (size_t i = 0; i < len / 2; i++) {
		int hi = engy_hexval((unsigned char)hex[2 * i]),
		    lo = engy_hexval((unsigned char)hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	*n = len / 2;
	return 0;
}

int drand_pk_parse_hex(drand_pk *pk, const char *hex, char *err, size_t errlen)
{
	uint8_t b[DRAND_G2_LEN];
	size_t n;
	if (drand_unhex(hex, b, sizeof b, &n) < 0 || n != DRAND_G2_LEN) {
		engy_seterr(err, errlen,
			    "beacon public key: expected %d hex digits",
			    2 * DRAND_G2_LEN);
		return -1;
	}
	return drand_pk_parse(pk, b, n, err, errlen);
}

void drand_hash_to_g1(const uint8_t *msg, size_t n, const char *dst,
		      uint8_t xy[96], uint8_t comp[48])
{
	blst_p1 p;
	blst_hash_to_g1(&p, msg, n, (const byte *)dst, strlen(dst), NULL, 0);
	if (xy)
		blst_p1_serialize(xy, &p);
	if (comp)
		blst_p1_compress(comp, &p);
}

void drand_round_message(uint64_t round, uint8_t out[32])
{
	uint8_t be[8];
	for (int i = 0; i < 8; i++)
		be[i] = (uint8_t)(round >> (56 - 8 * i));
	drand_sha256(be, sizeof be, NULL, 0, out);
}

void drand_round_point(uint64_t round, blst_p1_affine *q)
{
	uint8_t m[32];
	blst_p1 p;
	drand_round_message(round, m);
	blst_hash_to_g1(&p, m, sizeof m, (const byte *)DRAND_QUICKNET_DST,
			strlen(DRAND_QUICKNET_DST), NULL, 0);
	blst_p1_to_affine(q, &p);
}

int drand_verify_round(const drand_pk *pk, uint64_t round,
		       const uint8_t sig[DRAND_G1_LEN])
{
	blst_p1_affine s, h;
	blst_p2_affine k;
	if (blst_p1_uncompress(&s, sig) != BLST_SUCCESS ||
	    !blst_p1_affine_in_g1(&s) || blst_p1_affine_is_inf(&s))
		return 0;
	if (blst_p2_uncompress(&k, pk->raw) != BLST_SUCCESS)
		return 0;
	drand_round_point(round, &h);
	/* e(sig, G2) == e(H(round), pk) */
	blst_fp12 l, r;
	blst_miller_loop(&l, blst_p2_affine_generator(), &s);
	blst_miller_loop(&r, &k, &h);
	blst_final_exp(&l, &l);
	blst_final_exp(&r, &r);
	return blst_fp12_is_equal(&l, &r) ? 1 : 0;
}

static void sk_scalar(const uint8_t sk[32], blst_scalar *s)
{
	blst_scalar_from_be_bytes(s, sk, 32);
}

void drand_test_keygen(const uint8_t sk[32], drand_pk *pk)
{
	blst_scalar s;
	blst_p2 p;
	sk_scalar(sk, &s);
	blst_p2_mult(&p, blst_p2_generator(), s.b, 255);
	blst_p2_compress(pk->raw, &p);
}

void drand_test_sign(const uint8_t sk[32], uint64_t round,
		     uint8_t sig[DRAND_G1_LEN])
{
	blst_scalar s;
	blst_p1_affine h;
	blst_p1 hp, out;
	sk_scalar(sk, &s);
	drand_round_point(round, &h);
	blst_p1_from_affine(&hp, &h);
	blst_p1_mult(&out, &hp, s.b, 255);
	blst_p1_compress(sig, &out);
}

void drand_test_pair(const uint8_t a[32], const uint8_t b[32], uint8_t p[48],
		     uint8_t q[96], uint8_t gt[576])
{
	blst_scalar sa, sb;
	blst_p1 P;
	blst_p2 Q;
	blst_p1_affine Pa;
	blst_p2_affine Qa;
	blst_fp12 f;
	blst_scalar_from_be_bytes(&sa, a, 32);
	blst_scalar_from_be_bytes(&sb, b, 32);
	blst_p1_mult(&P, blst_p1_generator(), sa.b, 255);
	blst_p2_mult(&Q, blst_p2_generator(), sb.b, 255);
	blst_p1_compress(p, &P);
	blst_p2_compress(q, &Q);
	blst_p1_to_affine(&Pa, &P);
	blst_p2_to_affine(&Qa, &Q);
	blst_miller_loop(&f, &Qa, &Pa);
	blst_final_exp(&f, &f);
	drand_gt_bytes(&f, gt);
}

uint64_t drand_round_at(uint64_t t)
{
	if (t < DRAND_QUICKNET_GENESIS)
		return 0;
	return (t - DRAND_QUICKNET_GENESIS) / DRAND_QUICKNET_PERIOD + 1;
}
