/* SPDX-License-Identifier: MIT */
/*
 * BIP-39 (word list digest, published vectors, the dev phrase) and hotkey
 * files: the fixtures in tests/data/hotkeys (fields computed by
 * @polkadot/util-crypto) load to the keys their own fields name, encrypted
 * files are refused by name, inconsistent files are refused with the
 * field named, and written files load back.
 *
 * Oracle: independent: BIP-39's published vectors and fixture fields
 * computed by @polkadot/util-crypto.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "bip39.h"
#include "fsutil.h"
#include "hotkey.h"
#include "sign_test.h"

static const char dev_phrase[] =
	"bottom drive obey lake curtain smoke basket hold race lonely fit walk";
static const char dev_mini[] =
	"fac7959dbfe72f052e5a0c3c8d6530f202b02fd8f9f5ca3580ec8deb7797479e";
static const char dev_pub[] =
	"46ebddef8cd9bb167dc30878d7113b7e168e6f0646beffd77d69d39bad76b47a";

START_TEST(test_wordlist_digest)
{
	crypto_hash_sha256_state st;
	uint8_t h[32];
	int i;

	crypto_hash_sha256_init(&st);
	for (i = 0; i < ENGY_BIP39_WORDS; i++) {
		crypto_hash_sha256_update(
			&st, (const uint8_t *)engy_bip39_english[i],
			strlen(engy_bip39_english[i]));
		crypto_hash_sha256_update(&st, (const uint8_t *)"\n", 1);
		if (i)
			ck_assert_int_lt(strcmp(engy_bip39_english[i - 1],
						engy_bip39_english[i]),
					 0);
	}
	crypto_hash_sha256_final(&st, h);
	/* The published english.txt. */
	ck_assert_hex_eq(
		h, 32,
		"2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda");
}
END_TEST

START_TEST(test_bip39_vectors)
{
	uint8_t e[32], mini[32];

	/* BIP-39's reference vectors (trezor/python-mnemonic vectors.json). */
	ck_assert_int_eq(
		engy_bip39_entropy(
			"abandon abandon abandon abandon abandon abandon "
			"abandon abandon abandon abandon abandon about",
			e, NULL),
		16);
	ck_assert_hex_eq(e, 16, "00000000000000000000000000000000");
	ck_assert_int_eq(
		engy_bip39_entropy(
			"zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo wrong", e,
			NULL),
		16);
	ck_assert_hex_eq(e, 16, "ffffffffffffffffffffffffffffffff");
	ck_assert_int_eq(
		engy_bip39_entropy(
			"zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo "
			"zoo zoo zoo zoo zoo zoo zoo zoo zoo vote",
			e, NULL),
		32);
	ck_assert_hex_eq(
		e, 32,
		"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff");
	ck_assert_int_eq(
		engy_bip39_entropy(
			"legal winner thank year wave sausage worth useful legal "
			"winner thank yellow",
			e, NULL),
		16);
	ck_assert_hex_eq(e, 16, "7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f");

	/* The Substrate dev phrase (specs/signing.md §7), blanks tolerated. */
	ck_assert_int_eq(engy_bip39_entropy(dev_phrase, e, NULL), 16);
	ck_assert_hex_eq(e, 16, "1a486a5fbe53639984cb64b070755f7b");
	ck_assert_int_eq(engy_bip39_mini_secret(dev_phrase, NULL, mini, NULL),
			 0);
	ck_assert_hex_eq(mini, 32, dev_mini);
	ck_assert_int_eq(
		engy_bip39_mini_secret(
			"  bottom drive obey lake curtain smoke\tbasket "
			"hold race lonely fit walk\n",
			"", mini, NULL),
		0);
	ck_assert_hex_eq(mini, 32, dev_mini);
	/* A passphrase changes the salt. */
	ck_assert_int_eq(engy_bip39_mini_secret(dev_phrase, "x", mini, NULL),
			 0);
	{
		uint8_t dm[32];

		unhex(dm, 32, dev_mini);
		ck_assert(memcmp(mini, dm, 32) != 0);
	}
}
END_TEST

START_TEST(test_bip39_errors)
{
	uint8_t e[32];
	size_t bad = 99;

	ck_assert_int_eq(engy_bip39_entropy("", e, NULL), -EINVAL);
	ck_assert_int_eq(
		engy_bip39_entropy(
			"bottom drive obey lake curtain smoke basket hold "
			"race lonely fit",
			e, NULL),
		-EINVAL);
	ck_assert_int_eq(
		engy_bip39_entropy(
			"abandon abandon abandon abandon abandon abandon abandon "
			"abandon abandon abandon abandon abandon abandon about",
			e, NULL),
		-EINVAL);
	ck_assert_int_eq(
		engy_bip39_entropy(
			"bottom drive obey lake curtain smoke basket hold "
			"race lonely fit wall",
			e, NULL),
		-EBADMSG);
	ck_assert_int_eq(
		engy_bip39_entropy(
			"bottom drive obey lake curtain smoke basket hold "
			"race lonely fit Walk",
			e, &bad),
		-ENOENT);
	ck_assert_uint_eq(bad, 11);
	ck_assert_int_eq(
		engy_bip39_entropy(
			"bottom drive obey lake curtainsmoke basket hold "
			"race lonely fit walk walk",
			e, &bad),
		-ENOENT);
	ck_assert_uint_eq(bad, 4);
	ck_assert_int_eq(
		engy_bip39_entropy(
			"abandon abandon abandon abandon abandon abandon "
			"abandon abandon abandon abandon abandon abandon",
			e, NULL),
		-EBADMSG);
}
END_TEST

/* A fixture's own field, parsed independently of lib/sign/hotkey.c. */
static char *field(const char *name, const char *key)
{
	char path[1024];
	uint8_t *buf;
	size_t len;
	cJSON *o, *it;
	char *v = NULL;

	snprintf(path, sizeof(path), "%s/%s", HOTKEY_DATA, name);
	ck_assert_int_eq(engy_read_file(path, 1 << 16, &buf, &len), 0);
	o = cJSON_ParseWithLength((const char *)buf, len);
	ck_assert_ptr_nonnull(o);
	it = cJSON_GetObjectItemCaseSensitive(o, key);
	if (cJSON_IsString(it))
		v = strdup(it->valuestring);
	cJSON_Delete(o);
	free(buf);
	ck_assert_ptr_nonnull(v);
	return v;
}

static void load_fixture(const char *name, struct engy_hotkey *hk)
{
	char path[1024], err[512] = "";

	snprintf(path, sizeof(path), "%s/%s", HOTKEY_DATA, name);
	ck_assert_msg(engy_hotkey_load(hk, path, err, sizeof(err)) == 0,
		      "%s: %s", name, err);
}

static void assert_pub_field(const struct engy_hotkey *hk, const char *name)
{
	char *pk = field(name, "publicKey"), want[70];

	tohex(want, hk->kp.pub, 32);
	ck_assert_str_eq(pk + 2, want);
	ck_assert(strncmp(pk, "0x", 2) == 0);
	free(pk);
}

START_TEST(test_fixture_plain)
{
	struct engy_hotkey hk;
	char *ss58 = field("plain", "ss58Address"),
	     *sk = field("plain", "privateKey");

	load_fixture("plain", &hk);
	ck_assert_int_eq(hk.source, ENGY_HOTKEY_SEED);
	assert_pub_field(&hk, "plain");
	ck_assert_str_eq(hk.ss58, ss58);
	ck_assert_hex_eq(hk.kp.secret, 64, sk + 2);
	free(ss58);
	free(sk);
	engy_hotkey_wipe(&hk);
}
END_TEST

START_TEST(test_fixture_phrase)
{
	struct engy_hotkey hk;
	char *ss58 = field("phrase", "ss58Address");

	load_fixture("phrase", &hk);
	ck_assert_int_eq(hk.source, ENGY_HOTKEY_PHRASE);
	assert_pub_field(&hk, "phrase");
	ck_assert_str_eq(hk.ss58, ss58);
	free(ss58);
}
END_TEST

START_TEST(test_fixture_private_ed)
{
	struct engy_hotkey hk;
	char *sk = field("private_ed", "privateKey");
	uint8_t ed[64];

	load_fixture("private_ed", &hk);
	ck_assert_int_eq(hk.source, ENGY_HOTKEY_PRIVATE_KEY);
	assert_pub_field(&hk, "private_ed");
	engy_sr25519_secret_to_ed25519(ed, hk.kp.secret);
	ck_assert_hex_eq(ed, 64, sk + 2);
	free(sk);
}
END_TEST

START_TEST(test_fixture_public)
{
	struct engy_hotkey hk;
	char *ss58 = field("public", "ss58Address");

	load_fixture("public", &hk);
	ck_assert_int_eq(hk.source, ENGY_HOTKEY_PUBLIC_ONLY);
	assert_pub_field(&hk, "public");
	ck_assert_str_eq(hk.ss58, ss58);
	ck_assert(sodium_is_zero(hk.kp.secret, 64));
	free(ss58);
}
END_TEST

START_TEST(test_encrypted_refused)
{
	static const char *const names[][2] = {
		{ "nacl", "$NACL" },
		{ "ansible", "ansible vault" },
		{ "fernet", "Fernet" },
	};
	struct engy_hotkey hk;
	char path[1024], err[512];
	size_t i;

	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", HOTKEY_DATA, names[i][0]);
		ck_assert_int_eq(engy_hotkey_load(&hk, path, err, sizeof(err)),
				 -EKEYREJECTED);
		ck_assert_ptr_nonnull(strstr(err, path));
		ck_assert_ptr_nonnull(strstr(err, "encrypted"));
		ck_assert_ptr_nonnull(strstr(err, names[i][1]));
		ck_assert(sodium_is_zero((const uint8_t *)&hk, sizeof(hk)));
	}
}
END_TEST

/* Inline files that must be refused, and the words the reason must hold. */
START_TEST(test_refusals)
{
	static const struct {
		const char *text, *needle;
		int rc;
	} v[] = {
		{ "", "not a JSON object", -EINVAL },
		{ "[1]", "not a JSON object", -EINVAL },
		{ "{\"secretSeed\":", "not a JSON object", -EINVAL },
		{ "{}", "no key", -EINVAL },
		{ "{\"secretSeed\":null,\"publicKey\":null}", "no key",
		  -EINVAL },
		{ "{\"secretSeed\":12}", "not a string", -EINVAL },
		{ "{\"publicKey\":true}", "publicKey: not a string", -EINVAL },
		{ "{\"secretSeed\":\"0x1234\"}", "secretSeed: not 0x",
		  -EINVAL },
		{ "{\"secretSeed\":\"0xzz\"}", "secretSeed: not 0x", -EINVAL },
		{ "{\"privateKey\":\"0x00\"}", "privateKey: not 0x", -EINVAL },
		{ "{\"publicKey\":\"0x46ebddef\"}", "publicKey: not 0x",
		  -EINVAL },
		{ "{\"ss58Address\":\"5DfhGyQdFobKM8NsWvEeAKk5EQQgYe9AydgJ7rMB6E1EqRzW\"}",
		  "ss58Address: SS58 checksum", -EINVAL },
		{ "{\"secretPhrase\":\"bottom drive obey\"}",
		  "secretPhrase: not 12", -EINVAL },
		{ "{\"secretPhrase\":\"bottom drive obey lake curtain smoke basket hold race lonely fit wall\"}",
		  "checksum", -EINVAL },
		{ "{\"secretPhrase\":\"bottom drive obey lake curtain smoke basket hold race lonely fit wallk\"}",
		  "word 12", -EINVAL },
		/* The seed of the zero mini secret against the dev phrase. */
		{ "{\"secretPhrase\":\"bottom drive obey lake curtain smoke basket hold race lonely fit walk\","
		  "\"secretSeed\":\"0x0000000000000000000000000000000000000000000000000000000000000000\"}",
		  "secretSeed does not match secretPhrase", -EINVAL },
		{ "{\"secretSeed\":\"0xfac7959dbfe72f052e5a0c3c8d6530f202b02fd8f9f5ca3580ec8deb7797479e\","
		  "\"publicKey\":\"0xdef12e42f3e487e9b14095aa8d5cc16a33491f1b50dadcf8811d1480f3fa8627\"}",
		  "publicKey does not match secretSeed", -EINVAL },
		{ "{\"publicKey\":\"0x46ebddef8cd9bb167dc30878d7113b7e168e6f0646beffd77d69d39bad76b47a\","
		  "\"accountId\":\"0xdef12e42f3e487e9b14095aa8d5cc16a33491f1b50dadcf8811d1480f3fa8627\"}",
		  "accountId does not match publicKey", -EINVAL },
		{ "{\"secretSeed\":\"0xfac7959dbfe72f052e5a0c3c8d6530f202b02fd8f9f5ca3580ec8deb7797479e\","
		  "\"ss58Address\":\"5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY\"}",
		  "ss58Address does not match secretSeed", -EINVAL },
		{ "{\"secretSeed\":\"0xfac7959dbfe72f052e5a0c3c8d6530f202b02fd8f9f5ca3580ec8deb7797479e\","
		  "\"privateKey\":\"0xcaa835781b15c7706f65b71f7a58c807ab360faed6440fb23e0f4c52e930de0a"
		  "0a6a85eaa642dac835424b5d7c8d637c00408c7a73da672b7f498521420b6dd3\"}",
		  "privateKey does not match secretSeed", -EINVAL },
		{ "{\"privateKey\":\"0x05d65584630d16cd4af6d0bec10f34bb504a5dcb62dba2122d49f5a663763d0a"
		  "fd190cce74df356432b410bd64682309d6dedb27c76845daf388557cbac3ca34\","
		  "\"publicKey\":\"0xdef12e42f3e487e9b14095aa8d5cc16a33491f1b50dadcf8811d1480f3fa8627\"}",
		  "privateKey does not match publicKey", -EINVAL },
		{ "{\"privateKey\":\"0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
		  "fd190cce74df356432b410bd64682309d6dedb27c76845daf388557cbac3ca34\"}",
		  "privateKey: not an sr25519 secret key", -EINVAL },
		{ "{\"publicKey\":\"0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff0f\"}",
		  "not a valid sr25519 public key", -EINVAL },
		{ "{\"secretSeed\":\"0xfac7959dbfe72f052e5a0c3c8d6530f202b02fd8f9f5ca3580ec8deb7797479e\","
		  "\"cryptoType\":0}",
		  "not sr25519", -ENOTSUP },
		{ "{\"secretSeed\":\"0xfac7959dbfe72f052e5a0c3c8d6530f202b02fd8f9f5ca3580ec8deb7797479e\","
		  "\"cryptoType\":\"1\"}",
		  "cryptoType: not a number", -EINVAL },
		{ "  \n$NACL....", "encrypted keyfile ($NACL)", -EKEYREJECTED },
	};
	struct engy_hotkey hk;
	char err[512];
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(engy_hotkey_parse(&hk, v[i].text,
						strlen(v[i].text), err,
						sizeof(err)) == v[i].rc,
			      "case %zu: %s", i, err);
		ck_assert_msg(strstr(err, v[i].needle) != NULL,
			      "case %zu: '%s' lacks '%s'", i, err, v[i].needle);
		ck_assert(sodium_is_zero((const uint8_t *)&hk, sizeof(hk)));
	}
}
END_TEST

/* Accepted variants: no "0x", upper-case hex, nulls, unknown fields. */
START_TEST(test_accepted_variants)
{
	static const char *const v[] = {
		"{\"secretSeed\":\"fac7959dbfe72f052e5a0c3c8d6530f202b02fd8f9f5ca3580ec8deb7797479e\"}",
		"{\"secretSeed\":\"0XFAC7959DBFE72F052E5A0C3C8D6530F202B02FD8F9F5CA3580EC8DEB7797479E\","
		"\"secretPhrase\":null,\"cryptoType\":1,\"name\":\"x\"}",
		"{\"secretPhrase\":\"bottom drive obey lake curtain smoke basket hold race lonely fit walk\","
		"\"ss58Address\":\"5DfhGyQdFobKM8NsWvEeAKk5EQQgYe9AydgJ7rMB6E1EqRzV\"}",
		"{\"privateKey\":\"0x05d65584630d16cd4af6d0bec10f34bb504a5dcb62dba2122d49f5a663763d0a"
		"fd190cce74df356432b410bd64682309d6dedb27c76845daf388557cbac3ca34\"}",
		"{\"privateKey\":\"0x28b0ae221c6bb06856b287f60d7ea0d98552ea5a16db16956849aa371db3eb51"
		"fd190cce74df356432b410bd64682309d6dedb27c76845daf388557cbac3ca34\"}",
	};
	struct engy_hotkey hk;
	char err[512];
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ck_assert_msg(engy_hotkey_parse(&hk, v[i], strlen(v[i]), err,
						sizeof(err)) == 0,
			      "case %zu: %s", i, err);
		ck_assert_hex_eq(hk.kp.pub, 32, dev_pub);
		ck_assert_str_eq(
			hk.ss58,
			"5DfhGyQdFobKM8NsWvEeAKk5EQQgYe9AydgJ7rMB6E1EqRzV");
	}
}
END_TEST

START_TEST(test_write_and_read_back)
{
	char dir[] = "/tmp/engy-hotkey.XXXXXX", path[256], err[512];
	struct engy_hotkey hk;
	struct stat st;
	uint8_t mini[32];
	char *text;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/default", dir);
	unhex(mini, 32, dev_mini);
	ck_assert_int_eq(engy_hotkey_write(path, mini, NULL, err, sizeof(err)),
			 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(engy_hotkey_load(&hk, path, err, sizeof(err)), 0);
	ck_assert_int_eq(hk.source, ENGY_HOTKEY_SEED);
	ck_assert_hex_eq(hk.kp.pub, 32, dev_pub);
	/* Never replaces a key. */
	ck_assert_int_eq(engy_hotkey_write(path, mini, NULL, err, sizeof(err)),
			 -EEXIST);
	ck_assert_ptr_nonnull(strstr(err, "exists"));
	unlink(path);

	/* With the phrase: the phrase is what a reader prefers. */
	ck_assert_int_eq(
		engy_hotkey_write(path, mini, dev_phrase, err, sizeof(err)), 0);
	ck_assert_int_eq(engy_hotkey_load(&hk, path, err, sizeof(err)), 0);
	ck_assert_int_eq(hk.source, ENGY_HOTKEY_PHRASE);
	ck_assert_hex_eq(hk.kp.pub, 32, dev_pub);
	unlink(path);

	/* A phrase that does not give the seed is refused. */
	mini[0] ^= 1;
	ck_assert_int_eq(engy_hotkey_format(mini, dev_phrase, &text), -EINVAL);
	ck_assert_ptr_null(text);
	ck_assert_int_eq(
		engy_hotkey_write(path, mini, dev_phrase, err, sizeof(err)),
		-EINVAL);
	ck_assert_int_eq(access(path, F_OK), -1);

	/* The layout: btwallet's field names, 0x-prefixed hex. */
	mini[0] ^= 1;
	ck_assert_int_eq(engy_hotkey_format(mini, NULL, &text), 0);
	ck_assert_ptr_nonnull(strstr(text, "\"publicKey\":\"0x46ebddef"));
	ck_assert_ptr_nonnull(strstr(text, "\"accountId\":\"0x46ebddef"));
	ck_assert_ptr_nonnull(strstr(text, "\"secretSeed\":\"0xfac7959d"));
	ck_assert_ptr_nonnull(strstr(text, "\"privateKey\":\"0x05d65584"));
	ck_assert_ptr_nonnull(strstr(text, "\"ss58Address\":\"5DfhGyQd"));
	ck_assert_ptr_null(strstr(text, "secretPhrase"));
	engy_hotkey_free_text(text);
	rmdir(dir);
}
END_TEST

START_TEST(test_file_errors)
{
	char dir[] = "/tmp/engy-hotkey.XXXXXX", path[256], err[512];
	struct engy_hotkey hk;
	char *big;

	ck_assert_int_eq(
		engy_hotkey_load(&hk, "/nonexistent/hotkey", err, sizeof(err)),
		-ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/hotkey"));
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/big", dir);
	big = malloc(ENGY_HOTKEY_MAX_FILE + 10);
	ck_assert_ptr_nonnull(big);
	memset(big, ' ', ENGY_HOTKEY_MAX_FILE + 10);
	ck_assert_int_eq(engy_write_file_atomic(
				 path, big, ENGY_HOTKEY_MAX_FILE + 10, 0600),
			 0);
	free(big);
	ck_assert_int_eq(engy_hotkey_load(&hk, path, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not a hotkey file"));
	unlink(path);
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hotkey");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_wordlist_digest);
	tcase_add_test(tc, test_bip39_vectors);
	tcase_add_test(tc, test_bip39_errors);
	tcase_add_test(tc, test_fixture_plain);
	tcase_add_test(tc, test_fixture_phrase);
	tcase_add_test(tc, test_fixture_private_ed);
	tcase_add_test(tc, test_fixture_public);
	tcase_add_test(tc, test_encrypted_refused);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_accepted_variants);
	tcase_add_test(tc, test_write_and_read_back);
	tcase_add_test(tc, test_file_errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
