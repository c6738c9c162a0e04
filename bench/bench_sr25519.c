/* SPDX-License-Identifier: MIT */
/*
 * bench_sr25519: key expansion, signing and verification of a typical
 * epoch message (~110 bytes), against libsodium's Ed25519 on the same
 * message as the baseline measured in the same run.  Settlement signs one
 * epoch per few hours, so this is for the record, not a target.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "sr25519.h"
#include "ss58.h"

#define N 2000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
	static const char msg[] =
		"engy-sn53:epoch:v1:53:105:"
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
	struct engy_sr25519_keypair kp;
	uint8_t mini[32], sig[64], edpk[32], edsk[64], edsig[64];
	char addr[ENGY_SS58_ADDR_SIZE];
	double t0, key, sign, verify, edsign, edverify, ss58;
	size_t len = strlen(msg);
	int i, bad = 0;

	if (sodium_init() < 0)
		return 1;
	randombytes_buf(mini, sizeof(mini));
	t0 = now();
	for (i = 0; i < N; i++)
		bad |= engy_sr25519_keypair_from_mini(
			&kp, mini, ENGY_SR25519_EXPAND_ED25519);
	key = (now() - t0) / N;
	t0 = now();
	for (i = 0; i < N; i++)
		bad |= engy_sr25519_sign(&kp, ENGY_SR25519_SUBSTRATE_CTX, msg,
					 len, sig);
	sign = (now() - t0) / N;
	t0 = now();
	for (i = 0; i < N; i++)
		bad |= engy_sr25519_verify(kp.pub, ENGY_SR25519_SUBSTRATE_CTX,
					   msg, len, sig);
	verify = (now() - t0) / N;
	t0 = now();
	for (i = 0; i < N; i++)
		bad |= engy_ss58_encode(addr, sizeof(addr), kp.pub, 42) < 0 ||
		       engy_ss58_decode(addr, edpk, NULL) < 0;
	ss58 = (now() - t0) / N;

	crypto_sign_seed_keypair(edpk, edsk, mini);
	t0 = now();
	for (i = 0; i < N; i++)
		crypto_sign_detached(edsig, NULL, (const uint8_t *)msg, len,
				     edsk);
	edsign = (now() - t0) / N;
	t0 = now();
	for (i = 0; i < N; i++)
		bad |= crypto_sign_verify_detached(edsig, (const uint8_t *)msg,
						   len, edpk);
	edverify = (now() - t0) / N;
	if (bad) {
		fprintf(stderr, "bench_sr25519: an operation failed\n");
		return 1;
	}
	printf("sr25519 (%zu-byte message, %d runs each)\n", len, N);
	printf("  keypair from mini secret  %7.1f us\n", key * 1e6);
	printf("  sign                      %7.1f us   ed25519 %6.1f us   ratio %.2f\n",
	       sign * 1e6, edsign * 1e6, sign / edsign);
	printf("  verify                    %7.1f us   ed25519 %6.1f us   ratio %.2f\n",
	       verify * 1e6, edverify * 1e6, verify / edverify);
	printf("  ss58 encode + decode      %7.1f us\n", ss58 * 1e6);
	engy_sr25519_keypair_wipe(&kp);
	return 0;
}
