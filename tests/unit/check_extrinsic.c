/* SPDX-License-Identifier: MIT */
/*
 * Signed extrinsics: a golden vector (call,
 * signing payload, signature with a fixed rng, whole extrinsic; the
 * current mainnet extension layout, which @polkadot/types and
 * @scure/sr25519 produced), era encodings, the >256-byte hash rule, the
 * 2023 runtime's shorter layout, and the extension layout read from
 * metadata: known ones, unknown zero-byte ones, and refusals.
 *
 * Oracle: independent: the golden vector was produced by @polkadot/types
 * and @scure/sr25519 (extrinsic_peer.sh compares live on many more cases).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "extrinsic.h"
#include "meta_fixture.h"
#include "sr25519.h"

#define MINI "fac7959dbfe72f052e5a0c3c8d6530f202b02fd8f9f5ca3580ec8deb7797479e"
#define GENESIS                                                                \
	"2f0555cc76fc2840a25a6ea3b9637146806f1f44b090c175ffde2a7e5ab36c03"
#define H11 "1111111111111111111111111111111111111111111111111111111111111111"
#define DEV_PUB                                                                \
	"46ebddef8cd9bb167dc30878d7113b7e168e6f0646beffd77d69d39bad76b47a"
#define GOLDEN_CALL "07003500080000e50008ffff00800000000000000000"
#define GOLDEN_SIG                                                             \
	"183f4cd079d01e56681c6a6abdc1b4dfce50271fcfc1de55db6bb447ca4dca1c"     \
	"33117963597abb7a62e8ccf6a15d720ad39349ec0c219398c0acd4762afc2d88"

static const char *const mainnet_ids[] = {
	"CheckNonZeroSender",
	"CheckSpecVersion",
	"CheckTxVersion",
	"CheckGenesis",
	"CheckMortality",
	"CheckNonce",
	"CheckWeight",
	"ChargeTransactionPayment",
	"SudoTransactionExtension",
	"CheckShieldedTxValidity",
	"SubtensorTransactionExtension",
	"DrandPriority",
	"CheckMetadataHash",
};

static void golden_params(struct engy_ext_params *p)
{
	memset(p, 0, sizeof(*p));
	p->spec_version = 425;
	p->tx_version = 1;
	ck_assert_int_eq(engy_hex_decode(p->genesis, 32, GENESIS), 32);
	p->era_period = 64;
	p->era_block = 5000000;
	memset(p->era_hash, 0x11, 32);
	p->nonce = 7;
	p->tip = 0;
}

START_TEST(test_golden_vector)
{
	static const uint16_t uids[] = { 0, 229 }, w[] = { 65535, 32768 };
	struct engy_sr25519_keypair kp;
	struct engy_ext_layout l;
	struct engy_ext_params p;
	struct engy_scale_buf call, pay, ext;
	uint8_t mini[32], rng[32], sig[64], hash[32];
	const uint8_t *msg;
	size_t mlen;
	char err[128];

	engy_hex_decode(mini, 32, MINI);
	ck_assert_int_eq(engy_sr25519_keypair_from_mini(
				 &kp, mini, ENGY_SR25519_EXPAND_ED25519),
			 0);
	ck_bytes(kp.pub, 32, DEV_PUB);
	ck_assert_int_eq(
		engy_ext_layout_names(&l, mainnet_ids, 13, err, sizeof(err)),
		0);
	golden_params(&p);
	engy_scale_buf_init(&call);
	engy_scale_buf_init(&pay);
	engy_scale_buf_init(&ext);
	ck_assert_int_eq(
		engy_call_set_weights(NULL, 7, 0, 53, uids, w, 2, 0, &call), 0);
	ck_bytes(call.p, call.len, GOLDEN_CALL);
	ck_assert_int_eq(engy_ext_payload(&l, &p, call.p, call.len, &pay), 0);
	ck_bytes(pay.p, pay.len,
		 GOLDEN_CALL " 05001c0000 a9010000 01000000 " GENESIS " " H11
			     " 00");
	msg = engy_ext_to_sign(pay.p, pay.len, hash, &mlen);
	ck_assert_ptr_eq(msg, pay.p); /* 100 bytes: signed as is */
	memset(rng, 7, sizeof(rng));
	ck_assert_int_eq(engy_sr25519_sign_rng(&kp, ENGY_SR25519_SUBSTRATE_CTX,
					       msg, mlen, rng, sig),
			 0);
	ck_bytes(sig, 64, GOLDEN_SIG);
	ck_assert_int_eq(
		engy_ext_signed(&l, &p, call.p, call.len, kp.pub, sig, &ext),
		0);
	ck_bytes(ext.p, ext.len,
		 "f901 84 00 " DEV_PUB " 01 " GOLDEN_SIG
		 " 05001c0000 " GOLDEN_CALL);
	engy_ext_hash(ext.p, ext.len, hash);
	engy_scale_buf_free(&call);
	engy_scale_buf_free(&pay);
	engy_scale_buf_free(&ext);
}
END_TEST

START_TEST(test_era)
{
	uint8_t e[2];

	ck_assert_uint_eq(engy_era_encode(64, 42, e), 2);
	ck_bytes(e, 2, "a502");
	engy_era_encode(64, 5000000, e);
	ck_bytes(e, 2, "0500");
	engy_era_encode(32768, 20000, e);
	ck_bytes(e, 2, "4e9c");
	/* rounded up to a power of two, at least 4 */
	engy_era_encode(50, 42, e);
	ck_bytes(e, 2, "a502");
	engy_era_encode(1, 3, e);
	ck_bytes(e, 2, "3100");
	ck_assert_uint_eq(engy_era_encode(0, 99, e), 1);
	ck_assert_uint_eq(e[0], 0);
}
END_TEST

START_TEST(test_long_payload_is_hashed)
{
	uint16_t uids[70], w[70];
	struct engy_sr25519_keypair kp;
	struct engy_ext_layout l;
	struct engy_ext_params p;
	struct engy_scale_buf call, pay;
	uint8_t mini[32], hash[32], sig[64];
	const uint8_t *msg;
	size_t i, mlen;

	for (i = 0; i < 70; i++) {
		uids[i] = (uint16_t)i;
		w[i] = (uint16_t)(1000 + i);
	}
	engy_hex_decode(mini, 32, MINI);
	engy_sr25519_keypair_from_mini(&kp, mini, ENGY_SR25519_EXPAND_ED25519);
	engy_ext_layout_names(&l, mainnet_ids, 13, NULL, 0);
	golden_params(&p);
	engy_scale_buf_init(&call);
	engy_scale_buf_init(&pay);
	engy_call_set_weights(NULL, 7, 0, 53, uids, w, 70, 0, &call);
	ck_assert_uint_eq(call.len, 2 + 2 + 2 + 140 + 2 + 140 + 8);
	engy_ext_payload(&l, &p, call.p, call.len, &pay);
	ck_assert_uint_gt(pay.len, ENGY_EXT_HASH_OVER);
	msg = engy_ext_to_sign(pay.p, pay.len, hash, &mlen);
	ck_assert_ptr_eq(msg, hash);
	ck_assert_uint_eq(mlen, 32);
	engy_ext_to_sign(pay.p, ENGY_EXT_HASH_OVER, hash, &mlen);
	ck_assert_uint_eq(mlen, ENGY_EXT_HASH_OVER); /* exactly 256: as is */
	msg = engy_ext_to_sign(pay.p, pay.len, hash, &mlen);
	ck_assert_int_eq(engy_sr25519_sign(&kp, ENGY_SR25519_SUBSTRATE_CTX, msg,
					   mlen, sig),
			 0);
	ck_assert_int_eq(engy_sr25519_verify(kp.pub, ENGY_SR25519_SUBSTRATE_CTX,
					     hash, 32, sig),
			 0);
	engy_scale_buf_free(&call);
	engy_scale_buf_free(&pay);
}
END_TEST

START_TEST(test_old_runtime_layout)
{
	static const char *const ids[] = {
		"CheckNonZeroSender", "CheckSpecVersion",
		"CheckTxVersion",     "CheckGenesis",
		"CheckMortality",     "CheckNonce",
		"CheckWeight",	      "ChargeTransactionPayment",
	};
	static const uint16_t uids[] = { 1 }, w[] = { 65535 };
	struct engy_ext_layout l;
	struct engy_ext_params p;
	struct engy_scale_buf call, pay;

	ck_assert_int_eq(engy_ext_layout_names(&l, ids, 8, NULL, 0), 0);
	golden_params(&p);
	p.spec_version = 103;
	p.era_period = 0; /* immortal: the genesis hash is signed */
	engy_scale_buf_init(&call);
	engy_scale_buf_init(&pay);
	engy_call_set_weights(NULL, 8, 0, 3, uids, w, 1, 0, &call);
	engy_ext_payload(&l, &p, call.p, call.len, &pay);
	ck_bytes(pay.p, pay.len,
		 "0800 0300 04 0100 04 ffff 0000000000000000 "
		 "00 1c 00 67000000 01000000 " GENESIS " " GENESIS);
	engy_scale_buf_free(&call);
	engy_scale_buf_free(&pay);
}
END_TEST

START_TEST(test_layout_from_metadata)
{
	static const struct mf_ext unknown_empty[] = {
		{ "CheckSpecVersion", T_UNIT, T_U32 },
		{ "SomethingNewAndEmpty", T_PHANTOM, T_UNIT },
		{ "CheckNonce", T_CHECK_NONCE, T_UNIT },
	};
	static const struct mf_ext unknown_bytes[] = {
		{ "CheckSpecVersion", T_UNIT, T_U32 },
		{ "ChargeAssetTxPayment", T_CHARGE, T_UNIT },
	};
	static const struct mf_ext wrong_type[] = {
		{ "CheckGenesis", T_UNIT, T_U32 },
	};
	struct engy_ext_layout a, b;
	struct engy_metadata *md;
	struct engy_scale_buf buf;
	const struct engy_meta_variant *v;
	uint8_t pi, ci;
	char err[256];

	engy_scale_buf_init(&buf);
	mf_build(&buf, 14, 7, NULL, 0);
	ck_assert_int_eq(engy_meta_parse(buf.p, buf.len, &md, err, sizeof(err)),
			 0);
	ck_assert_int_eq(engy_ext_layout_meta(&a, md, err, sizeof(err)), 0);
	ck_assert_int_eq(
		engy_ext_layout_names(&b, mainnet_ids, 13, err, sizeof(err)),
		0);
	ck_assert_uint_eq(a.n, 13);
	ck_assert(memcmp(a.kind, b.kind, sizeof(a.kind)) == 0);
	ck_assert_int_eq(engy_meta_call(md, "SubtensorModule", "set_weights",
					&pi, &ci, &v),
			 0);
	ck_assert_int_eq(engy_call_check_set_weights(md, v, err, sizeof(err)),
			 0);
	/* commit_weights' arguments are not set_weights' */
	v = engy_meta_variant(md,
			      engy_meta_pallet(md, "SubtensorModule")->calls,
			      "commit_weights");
	ck_assert_int_eq(engy_call_check_set_weights(md, v, err, sizeof(err)),
			 -EPROTO);
	ck_assert_int_eq(
		engy_call_set_weights(md, 7, 96, 53, NULL, NULL, 0, 0, &buf),
		-EPROTO);
	engy_meta_free(md);
	engy_scale_buf_free(&buf);

	engy_scale_buf_init(&buf);
	mf_build(&buf, 14, 7, unknown_empty, 3);
	ck_assert_int_eq(engy_meta_parse(buf.p, buf.len, &md, err, sizeof(err)),
			 0);
	ck_assert_int_eq(engy_ext_layout_meta(&a, md, err, sizeof(err)), 0);
	ck_assert_uint_eq(a.kind[1], ENGY_EXT_EMPTY);
	ck_assert_uint_eq(a.kind[2], ENGY_EXT_NONCE);
	engy_meta_free(md);
	engy_scale_buf_free(&buf);

	engy_scale_buf_init(&buf);
	mf_build(&buf, 15, 7, unknown_bytes, 2);
	ck_assert_int_eq(engy_meta_parse(buf.p, buf.len, &md, err, sizeof(err)),
			 0);
	ck_assert_int_eq(engy_ext_layout_meta(&a, md, err, sizeof(err)),
			 -ENOTSUP);
	ck_assert_str_eq(err, "signed extension ChargeAssetTxPayment carries "
			      "bytes engy does not know how to fill");
	engy_meta_free(md);
	engy_scale_buf_free(&buf);

	engy_scale_buf_init(&buf);
	mf_build(&buf, 14, 7, wrong_type, 1);
	ck_assert_int_eq(engy_meta_parse(buf.p, buf.len, &md, err, sizeof(err)),
			 0);
	ck_assert_int_eq(engy_ext_layout_meta(&a, md, err, sizeof(err)),
			 -ENOTSUP);
	ck_assert_str_eq(err, "signed extension CheckGenesis has types other "
			      "than the known ones");
	engy_meta_free(md);
	engy_scale_buf_free(&buf);

	ck_assert_int_eq(engy_ext_layout_names(&a,
					       (const char *const[]){ "Nope" },
					       1, err, sizeof(err)),
			 -ENOTSUP);
	ck_assert_str_eq(err, "unknown signed extension Nope");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("extrinsic");
	TCase *tc = tcase_create("signed");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_golden_vector);
	tcase_add_test(tc, test_era);
	tcase_add_test(tc, test_long_payload_is_hashed);
	tcase_add_test(tc, test_old_runtime_layout);
	tcase_add_test(tc, test_layout_from_metadata);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
