/* SPDX-License-Identifier: MIT */
/*
 * The signed epoch: the exact message (specs/settlement.md §4), signatures over
 * it, the result_json rules, and the payload check's named reasons in the
 * light validator's order (§5.2).
 *
 * Oracle: the message of specs/settlement.md §4, written out by hand;
 * signatures checked with engy's sr25519, which sr25519_peer.sh holds
 * against @scure/sr25519.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "epoch_sign.h"
#include "sign_test.h"
#include "sr25519.h"

static const char dev_mini[] =
	"fac7959dbfe72f052e5a0c3c8d6530f202b02fd8f9f5ca3580ec8deb7797479e";
static const char rj[] =
	"{\"epoch_index\":105,\"netuid\":53,\"weights\":[[\"5DfhGyQdFobKM8NsWvEeAKk5EQQgYe9AydgJ7rMB6E1EqRzV\",65535],"
	"[\"5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY\",0]],\"note\":\"\\u00e9\"}";

static void keypair(struct engy_sr25519_keypair *kp, uint8_t fill)
{
	uint8_t mini[32];

	if (fill)
		memset(mini, fill, sizeof(mini));
	else
		unhex(mini, 32, dev_mini);
	ck_assert_int_eq(engy_sr25519_keypair_from_mini(
				 kp, mini, ENGY_SR25519_EXPAND_ED25519),
			 0);
}

START_TEST(test_message_format)
{
	char digest[65], msg[ENGY_EPOCH_MSG_MAX];

	/* FIPS 180-2's SHA-256("abc"). */
	engy_epoch_digest("abc", 3, digest);
	ck_assert_str_eq(
		digest,
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	ck_assert_int_eq(engy_epoch_message(msg, sizeof(msg), 53, 105, digest),
			 90);
	ck_assert_str_eq(
		msg,
		"engy-sn53:epoch:v1:53:105:"
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	ck_assert_int_eq(engy_epoch_message(msg, sizeof(msg), 0, 0, digest),
			 87);
	ck_assert_str_eq(
		msg,
		"engy-sn53:epoch:v1:0:0:"
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	ck_assert_int_gt(engy_epoch_message(msg, sizeof(msg), 65535,
					    ENGY_EPOCH_MAX_INDEX, digest),
			 0);
	ck_assert_str_eq(
		msg,
		"engy-sn53:epoch:v1:65535:9007199254740991:"
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	/* SHA-256 of no bytes. */
	engy_epoch_digest("", 0, digest);
	ck_assert_str_eq(
		digest,
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

	ck_assert_int_eq(engy_epoch_message(msg, sizeof(msg), 53,
					    ENGY_EPOCH_MAX_INDEX + 1, digest),
			 -EINVAL);
	ck_assert_int_eq(
		engy_epoch_message(
			msg, sizeof(msg), 53, 1,
			"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"),
		-EINVAL);
	ck_assert_int_eq(engy_epoch_message(msg, sizeof(msg), 53, 1, "e3b0"),
			 -EINVAL);
	ck_assert_int_eq(
		engy_epoch_message(
			msg, sizeof(msg), 53, 1,
			"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b8550"),
		-EINVAL);
	ck_assert_int_eq(engy_epoch_message(msg, 40, 53, 1, digest), -ENOSPC);
}
END_TEST

START_TEST(test_sign_verify)
{
	struct engy_sr25519_keypair kp, other;
	uint8_t sig[64], sig2[64], rng[32];
	char digest[65], msg[ENGY_EPOCH_MSG_MAX];
	char copy[sizeof(rj)];
	size_t len = strlen(rj), i;
	int n;

	keypair(&kp, 0);
	keypair(&other, 9);
	memset(rng, 7, sizeof(rng));
	ck_assert_int_eq(engy_epoch_sign(&kp, 53, 105, rj, len, rng, sig), 0);
	/* It is exactly sr25519 over the message string. */
	engy_epoch_digest(rj, len, digest);
	n = engy_epoch_message(msg, sizeof(msg), 53, 105, digest);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(engy_sr25519_sign_rng(&kp, "substrate", msg, (size_t)n,
					       rng, sig2),
			 0);
	ck_assert(memcmp(sig, sig2, 64) == 0);
	ck_assert_int_eq(engy_epoch_verify(kp.pub, 53, 105, rj, len, sig), 0);

	ck_assert_int_eq(engy_epoch_verify(kp.pub, 54, 105, rj, len, sig),
			 -EBADMSG);
	ck_assert_int_eq(engy_epoch_verify(kp.pub, 53, 106, rj, len, sig),
			 -EBADMSG);
	ck_assert_int_eq(engy_epoch_verify(other.pub, 53, 105, rj, len, sig),
			 -EBADMSG);
	ck_assert_int_eq(engy_epoch_verify(kp.pub, 53, 105, rj, len - 1, sig),
			 -EBADMSG);
	memcpy(copy, rj, sizeof(rj));
	for (i = 0; i < len; i += 11) {
		copy[i] ^= 0x20;
		ck_assert_int_eq(
			engy_epoch_verify(kp.pub, 53, 105, copy, len, sig),
			-EBADMSG);
		copy[i] ^= 0x20;
	}
	/* Production signing draws its own nonce-rng. */
	ck_assert_int_eq(engy_epoch_sign(&kp, 53, 105, rj, len, NULL, sig2), 0);
	ck_assert(memcmp(sig, sig2, 64) != 0);
	ck_assert_int_eq(engy_epoch_verify(kp.pub, 53, 105, rj, len, sig2), 0);
	ck_assert_int_eq(engy_epoch_sign(&kp, 53, ENGY_EPOCH_MAX_INDEX + 1, rj,
					 len, NULL, sig2),
			 -EINVAL);
}
END_TEST

START_TEST(test_result_check)
{
	static const struct {
		const char *json, *needle;
	} bad[] = {
		{ "{", "not valid JSON" },
		{ "[]", "not a JSON object" },
		{ "{\"netuid\":53,\"weights\":[]}", "epoch_index missing" },
		{ "{\"epoch_index\":\"105\",\"netuid\":53,\"weights\":[]}",
		  "epoch_index missing" },
		{ "{\"epoch_index\":105.5,\"netuid\":53,\"weights\":[]}",
		  "epoch_index missing" },
		{ "{\"epoch_index\":-1,\"netuid\":53,\"weights\":[]}",
		  "epoch_index missing" },
		{ "{\"epoch_index\":104,\"netuid\":53,\"weights\":[]}",
		  "epoch_index 104, expected 105" },
		{ "{\"epoch_index\":105,\"netuid\":52,\"weights\":[]}",
		  "netuid 52, expected 53" },
		{ "{\"epoch_index\":105,\"netuid\":true,\"weights\":[]}",
		  "netuid missing" },
		{ "{\"epoch_index\":105,\"netuid\":53}",
		  "weights is not a list" },
		{ "{\"epoch_index\":105,\"netuid\":53,\"weights\":{}}",
		  "weights is not a list" },
		{ "{\"epoch_index\":105,\"netuid\":53,\"weights\":[[\"a\",1],[\"b\"]]}",
		  "weights[1]" },
		{ "{\"epoch_index\":105,\"netuid\":53,\"weights\":[[\"a\",true]]}",
		  "weights[0]" },
		{ "{\"epoch_index\":105,\"netuid\":53,\"weights\":[[\"a\",65536]]}",
		  "weights[0]" },
		{ "{\"epoch_index\":105,\"netuid\":53,\"weights\":[[\"a\",-1]]}",
		  "weights[0]" },
		{ "{\"epoch_index\":105,\"netuid\":53,\"weights\":[[\"a\",0.5]]}",
		  "weights[0]" },
		{ "{\"epoch_index\":105,\"netuid\":53,\"weights\":[[1,1]]}",
		  "weights[0]" },
		{ "{\"epoch_index\":105,\"netuid\":53,\"weights\":[[\"a\",1,2]]}",
		  "weights[0]" },
	};
	char why[256];
	size_t i;

	ck_assert_int_eq(engy_epoch_result_check(rj, strlen(rj), 53, 105, why,
						 sizeof(why)),
			 0);
	ck_assert_int_eq(
		engy_epoch_result_check(
			"{\"epoch_index\":0,\"netuid\":0,\"weights\":[]}", 42,
			0, 0, why, sizeof(why)),
		0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ck_assert_msg(engy_epoch_result_check(
				      bad[i].json, strlen(bad[i].json), 53, 105,
				      why, sizeof(why)) == -EINVAL,
			      "case %zu", i);
		ck_assert_msg(strstr(why, bad[i].needle) != NULL,
			      "case %zu: '%s'", i, why);
	}
}
END_TEST

/* Build a payload, let @edit change it, check it; returns the verdict. */
static enum engy_epoch_reject
check_edited(const struct engy_sr25519_keypair *signer, const uint8_t *pin,
	     void (*edit)(cJSON *), struct engy_epoch_verified *v)
{
	uint8_t sig[64];
	char *text, *edited, why[256] = "";
	enum engy_epoch_reject r;
	cJSON *p;

	ck_assert_int_eq(
		engy_epoch_sign(signer, 53, 105, rj, strlen(rj), NULL, sig), 0);
	ck_assert_int_eq(
		engy_epoch_payload(&text, 53, 105, rj, strlen(rj), sig, "5Dfh"),
		0);
	p = cJSON_Parse(text);
	ck_assert_ptr_nonnull(p);
	if (edit)
		edit(p);
	edited = cJSON_PrintUnformatted(p);
	r = engy_epoch_payload_check(edited, strlen(edited), 53, pin, v, why,
				     sizeof(why));
	ck_assert(r == ENGY_EPOCH_ACCEPT ? why[0] == '\0' : why[0] != '\0');
	cJSON_Delete(p);
	free(text);
	free(edited);
	return r;
}

static void set(cJSON *p, const char *k, cJSON *val)
{
	ck_assert(cJSON_ReplaceItemInObjectCaseSensitive(p, k, val));
}

static void e_v2(cJSON *p)
{
	set(p, "v", cJSON_CreateNumber(2));
}

static void e_vstr(cJSON *p)
{
	set(p, "v", cJSON_CreateString("1"));
}

static void e_netuid(cJSON *p)
{
	set(p, "netuid", cJSON_CreateNumber(54));
}

static void e_rj_num(cJSON *p)
{
	set(p, "result_json", cJSON_CreateNumber(1));
}

static void e_digest(cJSON *p)
{
	set(p, "digest",
	    cJSON_CreateString(
		    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
}

static void e_no_digest(cJSON *p)
{
	cJSON_DeleteItemFromObjectCaseSensitive(p, "digest");
}

static void e_sig_short(cJSON *p)
{
	set(p, "signature", cJSON_CreateString("abcd"));
}

static void e_sig_flip(cJSON *p)
{
	char *s = cJSON_GetObjectItemCaseSensitive(p, "signature")->valuestring;

	s[10] = s[10] == '0' ? '1' : '0';
}

static void e_epoch(cJSON *p)
{
	set(p, "epoch_index", cJSON_CreateNumber(106));
}

static void e_rj_edit(cJSON *p)
{
	/* Re-digested, so only the signature can catch it. */
	static const char other[] =
		"{\"epoch_index\":105,\"netuid\":53,\"weights\":[[\"x\",65535]]}";
	char d[65];

	set(p, "result_json", cJSON_CreateString(other));
	engy_epoch_digest(other, strlen(other), d);
	set(p, "digest", cJSON_CreateString(d));
}

static void e_display(cJSON *p)
{
	set(p, "weights", cJSON_CreateString("display only"));
	set(p, "signed_hotkey", cJSON_CreateString("someone else"));
}

static void e_digest_upper(cJSON *p)
{
	char *s = cJSON_GetObjectItemCaseSensitive(p, "digest")->valuestring;

	for (; *s; s++)
		if (*s >= 'a' && *s <= 'f')
			*s = (char)(*s - 32);
}

START_TEST(test_payload_reasons)
{
	struct engy_sr25519_keypair kp, other;
	struct engy_epoch_verified v;
	char why[128];

	keypair(&kp, 0);
	keypair(&other, 9);
	ck_assert_int_eq(check_edited(&kp, kp.pub, NULL, &v),
			 ENGY_EPOCH_ACCEPT);
	ck_assert_str_eq(v.result_json, rj);
	ck_assert_uint_eq(v.result_len, strlen(rj));
	ck_assert_uint_eq(v.epoch_index, 105);
	engy_epoch_verified_free(&v);
	/* Display fields are never trusted, so never checked. */
	ck_assert_int_eq(check_edited(&kp, kp.pub, e_display, &v),
			 ENGY_EPOCH_ACCEPT);
	ck_assert_str_eq(v.result_json, rj);
	engy_epoch_verified_free(&v);
	ck_assert_int_eq(check_edited(&kp, kp.pub, e_digest_upper, &v),
			 ENGY_EPOCH_ACCEPT);
	engy_epoch_verified_free(&v);

	ck_assert_int_eq(check_edited(&kp, kp.pub, e_v2, &v),
			 ENGY_EPOCH_REJECT_VERSION);
	ck_assert_ptr_null(v.result_json);
	ck_assert_int_eq(check_edited(&kp, kp.pub, e_vstr, &v),
			 ENGY_EPOCH_REJECT_VERSION);
	ck_assert_int_eq(check_edited(&kp, kp.pub, e_netuid, &v),
			 ENGY_EPOCH_REJECT_NETUID);
	ck_assert_int_eq(check_edited(&kp, kp.pub, e_rj_num, &v),
			 ENGY_EPOCH_REJECT_MALFORMED);
	ck_assert_int_eq(check_edited(&kp, kp.pub, e_digest, &v),
			 ENGY_EPOCH_REJECT_DIGEST);
	ck_assert_int_eq(check_edited(&kp, kp.pub, e_no_digest, &v),
			 ENGY_EPOCH_REJECT_DIGEST);
	ck_assert_int_eq(check_edited(&kp, kp.pub, e_sig_short, &v),
			 ENGY_EPOCH_REJECT_SIGNATURE);
	ck_assert_int_eq(check_edited(&kp, kp.pub, e_sig_flip, &v),
			 ENGY_EPOCH_REJECT_SIGNATURE);
	ck_assert_int_eq(check_edited(&kp, kp.pub, e_rj_edit, &v),
			 ENGY_EPOCH_REJECT_SIGNATURE);
	/* Signed by a key other than the pinned one. */
	ck_assert_int_eq(check_edited(&other, kp.pub, NULL, &v),
			 ENGY_EPOCH_REJECT_SIGNATURE);
	/* The payload's epoch_index is part of the signed message. */
	ck_assert_int_eq(check_edited(&kp, kp.pub, e_epoch, &v),
			 ENGY_EPOCH_REJECT_SIGNATURE);

	ck_assert_int_eq(engy_epoch_payload_check("nope", 4, 53, kp.pub, &v,
						  why, sizeof(why)),
			 ENGY_EPOCH_REJECT_MALFORMED);
	ck_assert_str_eq(engy_epoch_reject_name(ENGY_EPOCH_REJECT_DIGEST),
			 "digest");
	ck_assert_str_eq(engy_epoch_reject_name(ENGY_EPOCH_REJECT_MALFORMED),
			 "malformed");
}
END_TEST

/* A correctly signed result_json that breaks the rules is still malformed. */
START_TEST(test_signed_but_malformed)
{
	static const char bad_rj[] =
		"{\"epoch_index\":105,\"netuid\":53,\"weights\":[[\"a\",true]]}";
	struct engy_sr25519_keypair kp;
	struct engy_epoch_verified v;
	uint8_t sig[64];
	char digest[65], why[256], *text;
	cJSON *p;

	keypair(&kp, 0);
	/* engy_epoch_payload() refuses to build it ... */
	ck_assert_int_eq(engy_epoch_sign(&kp, 53, 105, bad_rj, strlen(bad_rj),
					 NULL, sig),
			 0);
	ck_assert_int_eq(engy_epoch_payload(&text, 53, 105, bad_rj,
					    strlen(bad_rj), sig, NULL),
			 -EINVAL);
	/* ... so assemble it by hand. */
	engy_epoch_digest(bad_rj, strlen(bad_rj), digest);
	p = cJSON_CreateObject();
	cJSON_AddNumberToObject(p, "v", 1);
	cJSON_AddNumberToObject(p, "netuid", 53);
	cJSON_AddNumberToObject(p, "epoch_index", 105);
	cJSON_AddStringToObject(p, "digest", digest);
	cJSON_AddStringToObject(p, "result_json", bad_rj);
	{
		char hex[129];

		tohex(hex, sig, 64);
		cJSON_AddStringToObject(p, "signature", hex);
	}
	text = cJSON_PrintUnformatted(p);
	ck_assert_int_eq(engy_epoch_payload_check(text, strlen(text), 53,
						  kp.pub, &v, why, sizeof(why)),
			 ENGY_EPOCH_REJECT_MALFORMED);
	ck_assert_ptr_nonnull(strstr(why, "weights[0]"));
	free(text);
	cJSON_Delete(p);
}
END_TEST

/* The largest epoch index prints exactly (a double printed to 15 digits would not). */
START_TEST(test_payload_large_epoch)
{
	static const char big[] =
		"{\"epoch_index\":9007199254740991,\"netuid\":53,\"weights\":[[\"a\",1]]}";
	struct engy_sr25519_keypair kp;
	struct engy_epoch_verified v;
	uint8_t sig[64];
	char *text, why[256];

	keypair(&kp, 0);
	ck_assert_int_eq(engy_epoch_sign(&kp, 53, ENGY_EPOCH_MAX_INDEX, big,
					 strlen(big), NULL, sig),
			 0);
	ck_assert_int_eq(engy_epoch_payload(&text, 53, ENGY_EPOCH_MAX_INDEX,
					    big, strlen(big), sig, NULL),
			 0);
	ck_assert_ptr_nonnull(
		strstr(text, "\"epoch_index\":9007199254740991,"));
	ck_assert_int_eq(engy_epoch_payload_check(text, strlen(text), 53,
						  kp.pub, &v, why, sizeof(why)),
			 ENGY_EPOCH_ACCEPT);
	ck_assert_uint_eq(v.epoch_index, ENGY_EPOCH_MAX_INDEX);
	engy_epoch_verified_free(&v);
	free(text);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("epoch_sign");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_message_format);
	tcase_add_test(tc, test_sign_verify);
	tcase_add_test(tc, test_result_check);
	tcase_add_test(tc, test_payload_reasons);
	tcase_add_test(tc, test_signed_but_malformed);
	tcase_add_test(tc, test_payload_large_epoch);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
