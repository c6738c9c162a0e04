/* SPDX-License-Identifier: MIT */
/*
 * sr25519: key derivation and signatures against published known answers
 * (Substrate's dev seed, check_extrinsic's golden extrinsic vector,
 * curve25519-voi's zero-seed expansions), verification's refusals, and
 * random round trips.  The peer test compares with @scure/sr25519 and
 * @polkadot/util-crypto on many more inputs.
 *
 * Oracle: independent: published known answers (Substrate's dev seed,
 * curve25519-voi's expansions) and the golden extrinsic's signature.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "sign_test.h"
#include "sr25519.h"

#define CTX ENGY_SR25519_SUBSTRATE_CTX

/* The Substrate dev phrase's mini secret ("bottom drive obey lake ..."). */
static const char dev_mini[] =
	"fac7959dbfe72f052e5a0c3c8d6530f202b02fd8f9f5ca3580ec8deb7797479e";
static const char dev_secret[] =
	"05d65584630d16cd4af6d0bec10f34bb504a5dcb62dba2122d49f5a663763d0a"
	"fd190cce74df356432b410bd64682309d6dedb27c76845daf388557cbac3ca34";
static const char dev_secret_ed[] =
	"28b0ae221c6bb06856b287f60d7ea0d98552ea5a16db16956849aa371db3eb51"
	"fd190cce74df356432b410bd64682309d6dedb27c76845daf388557cbac3ca34";
static const char dev_pub[] =
	"46ebddef8cd9bb167dc30878d7113b7e168e6f0646beffd77d69d39bad76b47a";

static void dev_keypair(struct engy_sr25519_keypair *kp)
{
	uint8_t mini[32];

	unhex(mini, 32, dev_mini);
	ck_assert_int_eq(engy_sr25519_keypair_from_mini(
				 kp, mini, ENGY_SR25519_EXPAND_ED25519),
			 0);
}

START_TEST(test_dev_key)
{
	struct engy_sr25519_keypair kp, kp2;
	uint8_t ed[64], back[64], sk[64];

	dev_keypair(&kp);
	ck_assert_hex_eq(kp.secret, 64, dev_secret);
	ck_assert_hex_eq(kp.pub, 32, dev_pub);

	engy_sr25519_secret_to_ed25519(ed, kp.secret);
	ck_assert_hex_eq(ed, 64, dev_secret_ed);
	ck_assert_int_eq(engy_sr25519_secret_from_ed25519(back, ed), 0);
	ck_assert(memcmp(back, kp.secret, 64) == 0);

	unhex(sk, 64, dev_secret);
	ck_assert_int_eq(engy_sr25519_keypair_from_secret(&kp2, sk), 0);
	ck_assert(memcmp(&kp, &kp2, sizeof(kp)) == 0);
}
END_TEST

/* curve25519-voi's sr25519 tests: both expansions of the all-zero seed. */
START_TEST(test_zero_seed_expansions)
{
	struct engy_sr25519_keypair kp;
	uint8_t mini[32] = { 0 };

	ck_assert_int_eq(engy_sr25519_keypair_from_mini(
				 &kp, mini, ENGY_SR25519_EXPAND_UNIFORM),
			 0);
	ck_assert_hex_eq(
		kp.secret, 64,
		"04f0557e7f35e00df0824f458868915368bd5e41fd91f85b177f5907383ac50b"
		"dd0660b091e0ec47ecaf1f6ce73e7168fef267770f5030d5c524a49615163471");
	ck_assert_hex_eq(
		kp.pub, 32,
		"063b66cc8b77aa24f694d073ad72c21a9f296be0fd4ee953d8e58d5d627d435b");

	ck_assert_int_eq(engy_sr25519_keypair_from_mini(
				 &kp, mini, ENGY_SR25519_EXPAND_ED25519),
			 0);
	ck_assert_hex_eq(
		kp.secret, 64,
		"caa835781b15c7706f65b71f7a58c807ab360faed6440fb23e0f4c52e930de0a"
		"0a6a85eaa642dac835424b5d7c8d637c00408c7a73da672b7f498521420b6dd3");
	ck_assert_hex_eq(
		kp.pub, 32,
		"def12e42f3e487e9b14095aa8d5cc16a33491f1b50dadcf8811d1480f3fa8627");

	ck_assert_int_eq(engy_sr25519_keypair_from_mini(
				 &kp, mini, (enum engy_sr25519_expansion)7),
			 -EINVAL);
}
END_TEST

/* specs/signing.md §7: dev key, "hello bittensor", nonce-rng 07 x 32. */
START_TEST(test_known_signature)
{
	struct engy_sr25519_keypair kp;
	uint8_t rng[32], sig[64];

	dev_keypair(&kp);
	memset(rng, 7, sizeof(rng));
	ck_assert_int_eq(engy_sr25519_sign_rng(&kp, CTX, "hello bittensor", 15,
					       rng, sig),
			 0);
	ck_assert_hex_eq(
		sig, 64,
		"5455e5dd6012cf9ca97d3526c8af078755001ec2b4e32e4d20704315c4871066"
		"a0dcba63ac81784f8ecc1a570b4e7dd855ac7ea9332c6b532276c3aa1b789281");
	ck_assert_int_eq(
		engy_sr25519_verify(kp.pub, CTX, "hello bittensor", 15, sig),
		0);
}
END_TEST

/* The set_weights signing payload of check_extrinsic's golden vector. */
START_TEST(test_golden_extrinsic_signature)
{
	static const char payload_hex[] =
		"07003500080000e50008ffff00800000000000000000"
		"05001c0000"
		"a9010000"
		"01000000"
		"2f0555cc76fc2840a25a6ea3b9637146806f1f44b090c175ffde2a7e5ab36c03"
		"1111111111111111111111111111111111111111111111111111111111111111"
		"00";
	struct engy_sr25519_keypair kp;
	uint8_t payload[sizeof(payload_hex) / 2], rng[32], sig[64];

	unhex(payload, sizeof(payload), payload_hex);
	dev_keypair(&kp);
	memset(rng, 7, sizeof(rng));
	ck_assert_int_eq(engy_sr25519_sign_rng(&kp, CTX, payload,
					       sizeof(payload), rng, sig),
			 0);
	ck_assert_hex_eq(
		sig, 64,
		"183f4cd079d01e56681c6a6abdc1b4dfce50271fcfc1de55db6bb447ca4dca1c"
		"33117963597abb7a62e8ccf6a15d720ad39349ec0c219398c0acd4762afc2d88");
	ck_assert_int_eq(
		engy_sr25519_verify(kp.pub, CTX, payload, sizeof(payload), sig),
		0);
}
END_TEST

START_TEST(test_verify_refusals)
{
	struct engy_sr25519_keypair kp, other;
	uint8_t msg[40], sig[64], bad[64], pub[32], mini[32];
	size_t i;
	int b;

	dev_keypair(&kp);
	memset(mini, 3, sizeof(mini));
	ck_assert_int_eq(engy_sr25519_keypair_from_mini(
				 &other, mini, ENGY_SR25519_EXPAND_ED25519),
			 0);
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	ck_assert_int_eq(engy_sr25519_sign(&kp, CTX, msg, sizeof(msg), sig), 0);
	ck_assert_int_eq(
		engy_sr25519_verify(kp.pub, CTX, msg, sizeof(msg), sig), 0);

	/* Every single-bit change of the message. */
	for (i = 0; i < sizeof(msg); i++)
		for (b = 0; b < 8; b++) {
			msg[i] ^= (uint8_t)(1 << b);
			ck_assert_int_eq(engy_sr25519_verify(kp.pub, CTX, msg,
							     sizeof(msg), sig),
					 -EBADMSG);
			msg[i] ^= (uint8_t)(1 << b);
		}
	/* A shorter or longer message, another context, another key. */
	ck_assert_int_eq(
		engy_sr25519_verify(kp.pub, CTX, msg, sizeof(msg) - 1, sig),
		-EBADMSG);
	ck_assert_int_eq(engy_sr25519_verify(kp.pub, "substrate2", msg,
					     sizeof(msg), sig),
			 -EBADMSG);
	ck_assert_int_eq(engy_sr25519_verify(kp.pub, "", msg, sizeof(msg), sig),
			 -EBADMSG);
	ck_assert_int_eq(
		engy_sr25519_verify(other.pub, CTX, msg, sizeof(msg), sig),
		-EBADMSG);

	/* Any byte of the signature changed: rejected, as bad or malformed. */
	for (i = 0; i < 64; i++) {
		int rc;

		memcpy(bad, sig, 64);
		bad[i] ^= 0x01;
		rc = engy_sr25519_verify(kp.pub, CTX, msg, sizeof(msg), bad);
		ck_assert_msg(rc == -EBADMSG || rc == -EPROTO, "byte %zu: %d",
			      i, rc);
	}

	/* No schnorrkel marker. */
	memcpy(bad, sig, 64);
	bad[63] &= 0x7f;
	ck_assert_int_eq(
		engy_sr25519_verify(kp.pub, CTX, msg, sizeof(msg), bad),
		-EPROTO);

	/* s + l: the same scalar mod l, but not canonical. */
	{
		static const uint8_t l[32] = {
			0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58,
			0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
			0,    0,    0,	  0,	0,    0,    0,	  0,
			0,    0,    0,	  0,	0,    0,    0,	  0x10,
		};
		unsigned carry = 0;

		memcpy(bad, sig, 64);
		bad[63] &= 0x7f;
		for (i = 0; i < 32; i++) {
			carry += (unsigned)bad[32 + i] + l[i];
			bad[32 + i] = (uint8_t)carry;
			carry >>= 8;
		}
		ck_assert_uint_eq(carry, 0);
		ck_assert_uint_eq(bad[63] & 0x80, 0); /* s + l < 2^255 */
		bad[63] |= 0x80;
		ck_assert_int_eq(
			engy_sr25519_verify(kp.pub, CTX, msg, sizeof(msg), bad),
			-EPROTO);
	}

	/* R not a point encoding (odd, so a negative field element). */
	memcpy(bad, sig, 64);
	memset(bad, 0xff, 32);
	bad[31] = 0x0f;
	ck_assert_int_eq(
		engy_sr25519_verify(kp.pub, CTX, msg, sizeof(msg), bad),
		-EPROTO);

	/* Public keys: not a point, and the identity. */
	memset(pub, 0xff, sizeof(pub));
	pub[31] = 0x0f;
	ck_assert_int_eq(engy_sr25519_verify(pub, CTX, msg, sizeof(msg), sig),
			 -EINVAL);
	ck_assert_int_eq(engy_sr25519_valid_public(pub), 0);
	memset(pub, 0, sizeof(pub));
	ck_assert_int_eq(engy_sr25519_verify(pub, CTX, msg, sizeof(msg), sig),
			 -EINVAL);
	ck_assert_int_eq(engy_sr25519_valid_public(pub), 0);
	ck_assert_int_eq(engy_sr25519_valid_public(kp.pub), 1);
}
END_TEST

/* With the identity as R and s = 0, verification must not accept. */
START_TEST(test_identity_forgery)
{
	struct engy_sr25519_keypair kp;
	uint8_t sig[64] = { 0 };

	dev_keypair(&kp);
	sig[63] = 0x80;
	ck_assert_int_eq(engy_sr25519_verify(kp.pub, CTX, "m", 1, sig),
			 -EBADMSG);
}
END_TEST

START_TEST(test_secret_forms)
{
	struct engy_sr25519_keypair kp;
	uint8_t sk[64], out[64];

	/* curve25519-voi's rejections of ed25519-form keys. */
	unhex(sk, 64, dev_secret_ed);
	sk[31] |= 0x80;
	ck_assert_int_eq(engy_sr25519_secret_from_ed25519(out, sk), -EINVAL);
	unhex(sk, 64, dev_secret_ed);
	sk[0] |= 0x02;
	ck_assert_int_eq(engy_sr25519_secret_from_ed25519(out, sk), -EINVAL);
	memset(sk, 0, 32);
	ck_assert_int_eq(engy_sr25519_secret_from_ed25519(out, sk), -EINVAL);

	/* The schnorrkel form: zero and non-canonical scalars are refused. */
	memset(sk, 0, sizeof(sk));
	ck_assert_int_eq(engy_sr25519_keypair_from_secret(&kp, sk), -EINVAL);
	memset(sk, 0xff, 32);
	sk[31] = 0x1f; /* 2^253 - 1 > l */
	ck_assert_int_eq(engy_sr25519_keypair_from_secret(&kp, sk), -EINVAL);
	/* The ed25519 form of the dev key is not canonical as a scalar. */
	unhex(sk, 64, dev_secret_ed);
	ck_assert_int_eq(engy_sr25519_keypair_from_secret(&kp, sk), -EINVAL);
	/* l - 1 is the largest canonical scalar. */
	{
		static const uint8_t lm1[32] = {
			0xec, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58,
			0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
			0,    0,    0,	  0,	0,    0,    0,	  0,
			0,    0,    0,	  0,	0,    0,    0,	  0x10,
		};
		memcpy(sk, lm1, 32);
		ck_assert_int_eq(engy_sr25519_keypair_from_secret(&kp, sk), 0);
		sk[0]++;
		ck_assert_int_eq(engy_sr25519_keypair_from_secret(&kp, sk),
				 -EINVAL);
	}
}
END_TEST

/* Random keys and messages (empty to long), both expansions. */
START_TEST(test_random_roundtrips)
{
	struct engy_sr25519_keypair kp;
	static uint8_t msg[5000];
	uint8_t mini[32], sig[64], sig2[64], rng[32];
	size_t len;
	int i;

	ck_assert_int_ge(sodium_init(), 0);
	for (i = 0; i < 200; i++) {
		randombytes_buf(mini, sizeof(mini));
		ck_assert_int_eq(engy_sr25519_keypair_from_mini(
					 &kp, mini,
					 i % 2 ? ENGY_SR25519_EXPAND_UNIFORM
					       : ENGY_SR25519_EXPAND_ED25519),
				 0);
		len = i == 0 ? 0
			     : randombytes_uniform(i % 10 == 0 ? sizeof(msg)
							       : 300);
		randombytes_buf(msg, len);
		ck_assert_int_eq(engy_sr25519_sign(&kp, CTX, msg, len, sig), 0);
		ck_assert_int_eq(
			engy_sr25519_verify(kp.pub, CTX, msg, len, sig), 0);
		/* Hedged nonces: a second signature differs and verifies. */
		ck_assert_int_eq(engy_sr25519_sign(&kp, CTX, msg, len, sig2),
				 0);
		ck_assert(memcmp(sig, sig2, 64) != 0);
		ck_assert_int_eq(
			engy_sr25519_verify(kp.pub, CTX, msg, len, sig2), 0);
		/* A fixed nonce-rng is deterministic. */
		randombytes_buf(rng, sizeof(rng));
		ck_assert_int_eq(
			engy_sr25519_sign_rng(&kp, CTX, msg, len, rng, sig), 0);
		ck_assert_int_eq(
			engy_sr25519_sign_rng(&kp, CTX, msg, len, rng, sig2),
			0);
		ck_assert(memcmp(sig, sig2, 64) == 0);
		if (len) {
			msg[len - 1] ^= 0x80;
			ck_assert_int_eq(
				engy_sr25519_verify(kp.pub, CTX, msg, len, sig),
				-EBADMSG);
		}
	}
	engy_sr25519_keypair_wipe(&kp);
	ck_assert(sodium_is_zero((const uint8_t *)&kp, sizeof(kp)));
}
END_TEST

/* Merlin frames lengths in 32 bits: longer inputs are refused unread. */
START_TEST(test_oversized_message)
{
	struct engy_sr25519_keypair kp;
	uint8_t sig[64] = { 0 }, one = 0;
	size_t huge = (size_t)UINT32_MAX + 1;

	if (sizeof(size_t) <= 4)
		return;
	dev_keypair(&kp);
	ck_assert_int_eq(engy_sr25519_sign(&kp, CTX, &one, huge, sig),
			 -EMSGSIZE);
	ck_assert_int_eq(engy_sr25519_verify(kp.pub, CTX, &one, huge, sig),
			 -EMSGSIZE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sr25519");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_dev_key);
	tcase_add_test(tc, test_zero_seed_expansions);
	tcase_add_test(tc, test_known_signature);
	tcase_add_test(tc, test_golden_extrinsic_signature);
	tcase_add_test(tc, test_verify_refusals);
	tcase_add_test(tc, test_identity_forgery);
	tcase_add_test(tc, test_secret_forms);
	tcase_add_test(tc, test_random_roundtrips);
	tcase_add_test(tc, test_oversized_message);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
