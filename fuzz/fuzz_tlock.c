/* SPDX-License-Identifier: MIT */
/*
 * Fuzz timelock decryption and beacon-key parsing (lib/drand): any input
 * is tried as a ciphertext opened with a test beacon's round-1 signature
 * and as a compressed public key.  Nothing may crash; a ciphertext that
 * opens must be at least as long as its plaintext plus the fixed fields,
 * and a key that parses must verify nothing it did not sign.
 */
#include <stdlib.h>
#include <string.h>

#include "drand.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t sk[32] = { 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
					7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
					7, 7, 7, 7, 7, 7, 7, 7, 7, 7 };
	static uint8_t sig[DRAND_G1_LEN];
	static int ready;
	uint8_t *pt = NULL;
	size_t n = 0;
	char err[256];
	drand_pk pk;

	if (!ready) {
		drand_test_sign(sk, 1, sig);
		ready = 1;
	}
	if (tlock_decrypt(data, size, sig, &pt, &n, err, sizeof(err)) == 0) {
		if (n + 96 + 80 + 8 + 36 + 16 > size)
			abort();
		free(pt);
	} else if (pt || !err[0]) {
		abort();
	}
	if (size >= DRAND_G2_LEN &&
	    drand_pk_parse(&pk, data, DRAND_G2_LEN, err, sizeof(err)) == 0 &&
	    drand_verify_round(&pk, 1, sig) &&
	    memcmp(data, (drand_test_keygen(sk, &pk), pk.raw), DRAND_G2_LEN))
		abort();
	return 0;
}
