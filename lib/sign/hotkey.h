/* SPDX-License-Identifier: MIT */
/*
 * Bittensor hotkey files (btwallet's keyfile layout): a flat JSON object
 * with optional "secretPhrase", "secretSeed" (0x + 32-byte mini secret),
 * "privateKey" (0x + 64 bytes, schnorrkel key || nonce), "publicKey" and
 * "accountId" (0x + 32 bytes), "ss58Address" and "cryptoType" (1 =
 * sr25519).  The secret comes from the first of phrase, seed, private key
 * that is present, as btwallet loads it; every other field present must
 * agree with it, so a damaged or hand-edited file is refused instead of
 * signing with a key nobody expects.  Encrypted keyfiles ($NACL, ansible
 * vault, legacy Fernet) are recognised and refused: engy does not ask for
 * passwords.
 */
#ifndef ENGY_HOTKEY_H
#define ENGY_HOTKEY_H

#include <stddef.h>
#include <stdint.h>

#include "sr25519.h"
#include "ss58.h"

#define ENGY_HOTKEY_MAX_FILE 65536

enum engy_hotkey_source {
	ENGY_HOTKEY_PUBLIC_ONLY, /* no secret: can verify, cannot sign */
	ENGY_HOTKEY_PHRASE,
	ENGY_HOTKEY_SEED,
	ENGY_HOTKEY_PRIVATE_KEY,
};

struct engy_hotkey {
	struct engy_sr25519_keypair kp; /* kp.secret is zero when public only */
	char ss58[ENGY_SS58_ADDR_SIZE]; /* prefix 42 */
	enum engy_hotkey_source source;
};

/*
 * engy_hotkey_parse() - read a keyfile's bytes.  Returns 0, or a negative
 * errno with a one-line reason in @err: -EKEYREJECTED for an encrypted
 * file, -EINVAL for anything malformed or inconsistent, -ENOTSUP for a key
 * type other than sr25519.
 */
int engy_hotkey_parse(struct engy_hotkey *hk, const char *text, size_t len,
		      char *err, size_t errlen);

/* engy_hotkey_load() - engy_hotkey_parse() of a file; @err names the file. */
int engy_hotkey_load(struct engy_hotkey *hk, const char *path, char *err,
		     size_t errlen);

/*
 * engy_hotkey_format() - the keyfile text for the key expanded from @mini
 * (ed25519 mode, as btwallet does), with @phrase as "secretPhrase" when not
 * NULL.  *@out is malloc'd and holds secrets: free it with
 * engy_hotkey_free_text().  Returns 0 or a negative errno.
 */
int engy_hotkey_format(const uint8_t mini[32], const char *phrase, char **out);
void engy_hotkey_free_text(char *text);

/*
 * engy_hotkey_write() - write that text to @path with mode 0600, atomically.
 * Refuses (-EEXIST) to replace an existing file.
 */
int engy_hotkey_write(const char *path, const uint8_t mini[32],
		      const char *phrase, char *err, size_t errlen);

const char *engy_hotkey_source_name(enum engy_hotkey_source src);

void engy_hotkey_wipe(struct engy_hotkey *hk);

#endif /* ENGY_HOTKEY_H */
