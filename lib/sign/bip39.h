/* SPDX-License-Identifier: MIT */
/*
 * BIP-39 English mnemonics as Substrate reads them (substrate-bip39): the
 * phrase decodes to its entropy, and the mini secret is
 * PBKDF2-HMAC-SHA512(password = entropy, salt = "mnemonic" || passphrase,
 * 2048 rounds)[0..32].  Note the password is the entropy, not the phrase
 * as in BIP-39's own seed; this is what bittensor wallets use.
 */
#ifndef ENGY_BIP39_H
#define ENGY_BIP39_H

#include <stddef.h>
#include <stdint.h>

#define ENGY_BIP39_WORDS       2048
#define ENGY_BIP39_MAX_ENTROPY 32

extern const char *const engy_bip39_english[ENGY_BIP39_WORDS];

/*
 * engy_bip39_entropy() - decode @phrase (12, 15, 18, 21 or 24 lower-case
 * words separated by blanks) into @entropy.  Returns the entropy length,
 * or -EINVAL for a wrong word count, -ENOENT for a word not in the list
 * (its 0-based position in @bad_word when not NULL), -EBADMSG for a
 * checksum mismatch.
 */
int engy_bip39_entropy(const char *phrase,
		       uint8_t entropy[ENGY_BIP39_MAX_ENTROPY],
		       size_t *bad_word);

/*
 * engy_bip39_mini_secret() - the 32-byte mini secret of @phrase with
 * @passphrase (NULL = none; at most 1024 bytes).  Errors as
 * engy_bip39_entropy(), or -EIO.
 */
int engy_bip39_mini_secret(const char *phrase, const char *passphrase,
			   uint8_t mini[32], size_t *bad_word);

#endif /* ENGY_BIP39_H */
