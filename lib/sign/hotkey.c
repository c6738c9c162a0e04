/* SPDX-License-Identifier: MIT */
/*
 * Hotkey files, read the way btwallet reads them (secretPhrase, then
 * secretSeed, then privateKey, then public fields) and written in the
 * layout it writes.  Secret-bearing strings are wiped before they are
 * freed, including cJSON's copies.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "errbuf.h"
#include "bip39.h"
#include "fsutil.h"
#include "hex.h"
#include "hotkey.h"

#define CRYPTO_SR25519 1

/* Exactly @n bytes of hex, with or without a leading "0x". */
static int hexdec(uint8_t *out, size_t n, const char *s)
{
	size_t i;
	int hi, lo;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (strlen(s) != 2 * n)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		hi = engy_hexval((unsigned char)s[2 * i]);
		lo = engy_hexval((unsigned char)s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static void hexenc(char *out, const uint8_t *in, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* 1: a string in *@s; 0: absent or null; -EINVAL: another JSON type. */
static int get_str(const cJSON *obj, const char *name, const char **s)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

	*s = NULL;
	if (!it || cJSON_IsNull(it))
		return 0;
	if (!cJSON_IsString(it) || !it->valuestring)
		return -EINVAL;
	*s = it->valuestring;
	return 1;
}

static void wipe_field(cJSON *obj, const char *name)
{
	cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (it && cJSON_IsString(it) && it->valuestring)
		sodium_memzero(it->valuestring, strlen(it->valuestring));
}

static const char *encrypted_kind(const char *text, size_t len)
{
	static const char *const magic[][2] = {
		{ "$NACL", "$NACL" },
		{ "$ANSIBLE_VAULT", "ansible vault" },
		{ "gAAAAA", "legacy Fernet" },
	};
	size_t i, m;

	while (len && (*text == ' ' || *text == '\n' || *text == '\r' ||
		       *text == '\t')) {
		text++;
		len--;
	}
	for (i = 0; i < sizeof(magic) / sizeof(magic[0]); i++) {
		m = strlen(magic[i][0]);
		if (len >= m && memcmp(text, magic[i][0], m) == 0)
			return magic[i][1];
	}
	return NULL;
}

static int phrase_error(int rc, size_t bad, char *err, size_t errlen)
{
	switch (rc) {
	case -ENOENT:
		engy_seterr(
			err, errlen,
			"secretPhrase: word %zu is not in the BIP-39 English list",
			bad + 1);
		return -EINVAL;
	case -EBADMSG:
		engy_seterr(err, errlen,
			    "secretPhrase: BIP-39 checksum mismatch");
		return -EINVAL;
	case -EINVAL:
		engy_seterr(err, errlen,
			    "secretPhrase: not 12, 15, 18, 21 or 24 words");
		return -EINVAL;
	default:
		engy_seterr(err, errlen,
			    "secretPhrase: cannot derive the key (%s)",
			    strerror(-rc));
		return rc;
	}
}

/* The secret key from privateKey alone: schnorrkel form, else ed25519 form. */
static int from_private(struct engy_sr25519_keypair *kp, const uint8_t sk[64],
			const uint8_t *want_pub)
{
	struct engy_sr25519_keypair cand;
	uint8_t conv[64];
	int rc = -EINVAL;

	if (engy_sr25519_keypair_from_secret(&cand, sk) == 0 &&
	    (!want_pub || memcmp(cand.pub, want_pub, 32) == 0)) {
		*kp = cand;
		rc = 0;
		goto out;
	}
	if (engy_sr25519_secret_from_ed25519(conv, sk) == 0 &&
	    engy_sr25519_keypair_from_secret(&cand, conv) == 0 &&
	    (!want_pub || memcmp(cand.pub, want_pub, 32) == 0)) {
		*kp = cand;
		rc = 0;
	}
out:
	sodium_memzero(&cand, sizeof(cand));
	sodium_memzero(conv, sizeof(conv));
	return rc;
}

/* Does @sk (either serialisation) hold the key pair @kp's secret? */
static bool private_matches(const struct engy_sr25519_keypair *kp,
			    const uint8_t sk[64])
{
	uint8_t ed[64];
	bool same;

	engy_sr25519_secret_to_ed25519(ed, kp->secret);
	same = sodium_memcmp(sk, kp->secret, 64) == 0 ||
	       sodium_memcmp(sk, ed, 64) == 0;
	sodium_memzero(ed, sizeof(ed));
	return same;
}

struct pubfields {
	uint8_t pub[32];
	bool have;
	const char *from; /* the field that set it */
};

/* Collects publicKey, accountId and ss58Address; they must agree. */
static int read_public(const cJSON *obj, struct pubfields *pf, char *err,
		       size_t errlen)
{
	static const char *const hexnames[] = { "publicKey", "accountId" };
	const char *s;
	uint8_t v[32];
	size_t i;
	int rc;

	pf->have = false;
	for (i = 0; i < 3; i++) {
		const char *name = i < 2 ? hexnames[i] : "ss58Address";

		rc = get_str(obj, name, &s);
		if (rc < 0) {
			engy_seterr(err, errlen, "%s: not a string", name);
			return -EINVAL;
		}
		if (rc == 0)
			continue;
		if (i < 2 && hexdec(v, 32, s) < 0) {
			engy_seterr(err, errlen,
				    "%s: not 0x followed by 64 hex digits",
				    name);
			return -EINVAL;
		}
		if (i == 2 && (rc = engy_ss58_decode(s, v, NULL)) < 0) {
			engy_seterr(err, errlen, "ss58Address: %s",
				    engy_ss58_strerror(rc));
			return -EINVAL;
		}
		if (pf->have && memcmp(pf->pub, v, 32) != 0) {
			engy_seterr(err, errlen, "%s does not match %s", name,
				    pf->from);
			return -EINVAL;
		}
		memcpy(pf->pub, v, 32);
		pf->have = true;
		pf->from = name;
	}
	return 0;
}

static int check_type(const cJSON *obj, char *err, size_t errlen)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(obj, "cryptoType");

	if (!t || cJSON_IsNull(t))
		return 0;
	if (!cJSON_IsNumber(t)) {
		engy_seterr(err, errlen, "cryptoType: not a number");
		return -EINVAL;
	}
	if (t->valuedouble != CRYPTO_SR25519) {
		engy_seterr(
			err, errlen,
			"cryptoType %g is not sr25519 (1); engy signs with sr25519 hotkeys only",
			t->valuedouble);
		return -ENOTSUP;
	}
	return 0;
}

/* The secret fields, in btwallet's order of preference. */
static int read_secret(cJSON *obj, struct engy_hotkey *hk,
		       const struct pubfields *pf, char *err, size_t errlen)
{
	const char *phrase, *seed, *priv;
	uint8_t mini[32], m2[32], sk[64];
	const char *mini_from = NULL;
	size_t bad = 0;
	int rc;

	if (get_str(obj, "secretPhrase", &phrase) < 0 ||
	    get_str(obj, "secretSeed", &seed) < 0 ||
	    get_str(obj, "privateKey", &priv) < 0) {
		engy_seterr(
			err, errlen,
			"a secret field (secretPhrase, secretSeed, privateKey) is not a string");
		return -EINVAL;
	}
	hk->source = ENGY_HOTKEY_PUBLIC_ONLY;
	if (phrase) {
		rc = engy_bip39_mini_secret(phrase, NULL, mini, &bad);
		if (rc < 0) {
			rc = phrase_error(rc, bad, err, errlen);
			goto out;
		}
		mini_from = "secretPhrase";
		hk->source = ENGY_HOTKEY_PHRASE;
	}
	if (seed) {
		if (hexdec(m2, 32, seed) < 0) {
			engy_seterr(
				err, errlen,
				"secretSeed: not 0x followed by 64 hex digits");
			rc = -EINVAL;
			goto out;
		}
		if (mini_from && sodium_memcmp(m2, mini, 32) != 0) {
			engy_seterr(err, errlen,
				    "secretSeed does not match secretPhrase");
			rc = -EINVAL;
			goto out;
		}
		if (!mini_from) {
			memcpy(mini, m2, 32);
			mini_from = "secretSeed";
			hk->source = ENGY_HOTKEY_SEED;
		}
	}
	if (mini_from) {
		rc = engy_sr25519_keypair_from_mini(
			&hk->kp, mini, ENGY_SR25519_EXPAND_ED25519);
		if (rc < 0) {
			engy_seterr(err, errlen, "%s: cannot derive the key",
				    mini_from);
			goto out;
		}
	}
	if (priv) {
		if (hexdec(sk, 64, priv) < 0) {
			engy_seterr(
				err, errlen,
				"privateKey: not 0x followed by 128 hex digits");
			rc = -EINVAL;
			goto out;
		}
		if (mini_from && !private_matches(&hk->kp, sk)) {
			engy_seterr(err, errlen, "privateKey does not match %s",
				    mini_from);
			rc = -EINVAL;
			goto out;
		}
		if (!mini_from) {
			if (from_private(&hk->kp, sk,
					 pf->have ? pf->pub : NULL) < 0) {
				if (pf->have)
					engy_seterr(
						err, errlen,
						"privateKey does not match %s",
						pf->from);
				else
					engy_seterr(
						err, errlen,
						"privateKey: not an sr25519 secret key");
				rc = -EINVAL;
				goto out;
			}
			mini_from = "privateKey";
			hk->source = ENGY_HOTKEY_PRIVATE_KEY;
		}
	}
	rc = 0;
	if (mini_from && pf->have && memcmp(pf->pub, hk->kp.pub, 32) != 0) {
		engy_seterr(err, errlen, "%s does not match %s", pf->from,
			    mini_from);
		rc = -EINVAL;
	}
out:
	sodium_memzero(mini, sizeof(mini));
	sodium_memzero(m2, sizeof(m2));
	sodium_memzero(sk, sizeof(sk));
	return rc;
}

int engy_hotkey_parse(struct engy_hotkey *hk, const char *text, size_t len,
		      char *err, size_t errlen)
{
	struct pubfields pf;
	const char *kind;
	cJSON *obj = NULL;
	int rc;

	memset(hk, 0, sizeof(*hk));
	if (sodium_init() < 0) {
		engy_seterr(err, errlen, "libsodium failed to initialise");
		return -EIO;
	}
	kind = encrypted_kind(text, len);
	if (kind) {
		engy_seterr(
			err, errlen,
			"encrypted keyfile (%s); engy reads only unencrypted hotkeys",
			kind);
		return -EKEYREJECTED;
	}
	obj = cJSON_ParseWithLength(text, len);
	if (!obj || !cJSON_IsObject(obj)) {
		engy_seterr(err, errlen,
			    "not a bittensor keyfile (not a JSON object)");
		rc = -EINVAL;
		goto out;
	}
	rc = check_type(obj, err, errlen);
	if (rc < 0)
		goto out;
	rc = read_public(obj, &pf, err, errlen);
	if (rc < 0)
		goto out;
	rc = read_secret(obj, hk, &pf, err, errlen);
	if (rc < 0)
		goto out;
	if (hk->source == ENGY_HOTKEY_PUBLIC_ONLY) {
		if (!pf.have) {
			engy_seterr(
				err, errlen,
				"no key in the keyfile (no secretPhrase, secretSeed, privateKey, publicKey, accountId or ss58Address)");
			rc = -EINVAL;
			goto out;
		}
		if (!engy_sr25519_valid_public(pf.pub)) {
			engy_seterr(err, errlen,
				    "%s: not a valid sr25519 public key",
				    pf.from);
			rc = -EINVAL;
			goto out;
		}
		memcpy(hk->kp.pub, pf.pub, 32);
	}
	rc = engy_ss58_encode(hk->ss58, sizeof(hk->ss58), hk->kp.pub,
			      ENGY_SS58_PREFIX_BITTENSOR);
	if (rc < 0) {
		engy_seterr(err, errlen, "cannot encode the SS58 address");
		goto out;
	}
	rc = 0;
out:
	if (obj) {
		wipe_field(obj, "secretPhrase");
		wipe_field(obj, "secretSeed");
		wipe_field(obj, "privateKey");
		cJSON_Delete(obj);
	}
	if (rc < 0)
		engy_hotkey_wipe(hk);
	return rc;
}

int engy_hotkey_load(struct engy_hotkey *hk, const char *path, char *err,
		     size_t errlen)
{
	char why[256] = "";
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	memset(hk, 0, sizeof(*hk));
	rc = engy_read_file(path, ENGY_HOTKEY_MAX_FILE, &buf, &len);
	if (rc == -EFBIG) {
		engy_seterr(err, errlen, "%s: over %d bytes, not a hotkey file",
			    path, ENGY_HOTKEY_MAX_FILE);
		return -EINVAL;
	}
	if (rc < 0) {
		engy_seterr(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	rc = engy_hotkey_parse(hk, (const char *)buf, len, why, sizeof(why));
	if (rc < 0)
		engy_seterr(err, errlen, "%s: %s", path, why);
	sodium_memzero(buf, len);
	free(buf);
	return rc;
}

int engy_hotkey_format(const uint8_t mini[32], const char *phrase, char **out)
{
	struct engy_sr25519_keypair kp;
	char pub[65], sk[129], seed[65], ss58[ENGY_SS58_ADDR_SIZE];
	uint8_t m2[32];
	size_t cap;
	char *text = NULL;
	int rc;

	*out = NULL;
	if (phrase) {
		rc = engy_bip39_mini_secret(phrase, NULL, m2, NULL);
		if (rc == 0 && sodium_memcmp(m2, mini, 32) != 0)
			rc = -EINVAL;
		sodium_memzero(m2, sizeof(m2));
		if (rc < 0)
			return -EINVAL;
	}
	rc = engy_sr25519_keypair_from_mini(&kp, mini,
					    ENGY_SR25519_EXPAND_ED25519);
	if (rc < 0)
		return rc;
	rc = engy_ss58_encode(ss58, sizeof(ss58), kp.pub,
			      ENGY_SS58_PREFIX_BITTENSOR);
	if (rc < 0)
		goto out;
	hexenc(pub, kp.pub, 32);
	hexenc(sk, kp.secret, 64);
	hexenc(seed, mini, 32);
	cap = 512 + (phrase ? strlen(phrase) : 0);
	text = malloc(cap);
	if (!text) {
		rc = -ENOMEM;
		goto out;
	}
	snprintf(
		text, cap,
		"{\"accountId\":\"0x%s\",\"publicKey\":\"0x%s\",\"privateKey\":\"0x%s\",%s%s%s\"secretSeed\":\"0x%s\",\"ss58Address\":\"%s\",\"cryptoType\":%d}",
		pub, pub, sk, phrase ? "\"secretPhrase\":\"" : "",
		phrase ? phrase : "", phrase ? "\"," : "", seed, ss58,
		CRYPTO_SR25519);
	*out = text;
	rc = 0;
out:
	engy_sr25519_keypair_wipe(&kp);
	sodium_memzero(sk, sizeof(sk));
	sodium_memzero(seed, sizeof(seed));
	return rc;
}

void engy_hotkey_free_text(char *text)
{
	if (!text)
		return;
	sodium_memzero(text, strlen(text));
	free(text);
}

int engy_hotkey_write(const char *path, const uint8_t mini[32],
		      const char *phrase, char *err, size_t errlen)
{
	struct stat st;
	char *text = NULL;
	int rc;

	if (lstat(path, &st) == 0) {
		engy_seterr(err, errlen,
			    "%s: exists; engy never overwrites a key", path);
		return -EEXIST;
	}
	rc = engy_hotkey_format(mini, phrase, &text);
	if (rc < 0) {
		engy_seterr(err, errlen, "%s: cannot build the keyfile (%s)",
			    path,
			    rc == -EINVAL ? "the phrase does not give this seed"
					  : strerror(-rc));
		return rc;
	}
	rc = engy_write_file_atomic(path, text, strlen(text), 0600);
	if (rc < 0)
		engy_seterr(err, errlen, "%s: %s", path, strerror(-rc));
	engy_hotkey_free_text(text);
	return rc;
}

const char *engy_hotkey_source_name(enum engy_hotkey_source src)
{
	switch (src) {
	case ENGY_HOTKEY_PHRASE:
		return "secretPhrase";
	case ENGY_HOTKEY_SEED:
		return "secretSeed";
	case ENGY_HOTKEY_PRIVATE_KEY:
		return "privateKey";
	default:
		return "public key only";
	}
}

void engy_hotkey_wipe(struct engy_hotkey *hk)
{
	sodium_memzero(hk, sizeof(hk[0]));
}
