/* SPDX-License-Identifier: MIT */
/*
 * Fuzz hotkey files: any input is parsed as a keyfile.  A file that loads
 * must name a valid public key whose SS58 decodes back to it; one that
 * holds a secret must sign a message its public key verifies.  A refusal
 * must leave the key structure wiped.
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "fuzz.h"
#include "hotkey.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_hotkey hk;
	uint8_t pub[32], sig[64], rng[32] = { 1 };
	char err[256] = "";

	if (engy_hotkey_parse(&hk, (const char *)data, size, err, sizeof(err)) <
	    0) {
		if (!err[0] ||
		    !sodium_is_zero((const uint8_t *)&hk, sizeof(hk)))
			abort();
		return 0;
	}
	if (!engy_sr25519_valid_public(hk.kp.pub))
		abort();
	if (engy_ss58_decode_prefix(hk.ss58, ENGY_SS58_PREFIX_BITTENSOR, pub) !=
		    0 ||
	    memcmp(pub, hk.kp.pub, 32) != 0)
		abort();
	if (hk.source != ENGY_HOTKEY_PUBLIC_ONLY) {
		if (engy_sr25519_sign_rng(&hk.kp, ENGY_SR25519_SUBSTRATE_CTX,
					  data, size, rng, sig) != 0 ||
		    engy_sr25519_verify(hk.kp.pub, ENGY_SR25519_SUBSTRATE_CTX,
					data, size, sig) != 0)
			abort();
	}
	engy_hotkey_wipe(&hk);
	return 0;
}
