/* SPDX-License-Identifier: MIT */
/* A line-oriented driver for tlock_peer.sh (never installed): one command
 * a line on stdin, one answer a line on stdout (hex; "error: ..." on a
 * refusal).
 *
 *   keygen SK                  the test beacon's public key
 *   sign SK ROUND              its signature of ROUND
 *   verify PK ROUND SIG        ok | bad
 *   encrypt PK ROUND MSG       a timelock ciphertext (fresh randomness; MSG
 *                              "-" is the empty message)
 *   decrypt SIG CT             the plaintext
 *   pair A B                   compressed a*G1, b*G2 and e(a*G1, b*G2)
 *   h2c ROUND                  compressed H(SHA-256(ROUND)) in G1
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drand.h"

static int unhex(const char *h, uint8_t *out, size_t cap, size_t *n)
{
	size_t len = strlen(h);
	if (len % 2 || len / 2 > cap)
		return -1;
	for (size_t i = 0; i < len / 2; i++) {
		unsigned v;
		if (sscanf(h + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	*n = len / 2;
	return 0;
}

static void puthex(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
}

#define CAP (1u << 20)

int main(void)
{
	static char line[4 * CAP];
	static uint8_t b1[CAP], b2[CAP];
	char err[256];
	while (fgets(line, sizeof line, stdin)) {
		char *cmd = strtok(line, " \n"), *a1 = strtok(NULL, " \n"),
		     *a2 = strtok(NULL, " \n"), *a3 = strtok(NULL, " \n");
		size_t n1 = 0, n2 = 0;
		if (!cmd)
			continue;
		if (!strcmp(cmd, "keygen") && a1 && !unhex(a1, b1, 32, &n1) &&
		    n1 == 32) {
			drand_pk pk;
			drand_test_keygen(b1, &pk);
			puthex(pk.raw, sizeof pk.raw);
		} else if (!strcmp(cmd, "sign") && a2 &&
			   !unhex(a1, b1, 32, &n1) && n1 == 32) {
			uint8_t sig[48];
			drand_test_sign(b1, strtoull(a2, NULL, 10), sig);
			puthex(sig, sizeof sig);
		} else if (!strcmp(cmd, "verify") && a3 &&
			   !unhex(a3, b2, 48, &n2) && n2 == 48) {
			drand_pk pk;
			if (drand_pk_parse_hex(&pk, a1, err, sizeof err) < 0)
				printf("error: %s", err);
			else
				printf("%s",
				       drand_verify_round(
					       &pk, strtoull(a2, NULL, 10), b2)
					       ? "ok"
					       : "bad");
		} else if (!strcmp(cmd, "encrypt") && a3 &&
			   (!strcmp(a3, "-") || !unhex(a3, b1, CAP, &n1))) {
			drand_pk pk;
			uint8_t *ct;
			size_t n;
			if (drand_pk_parse_hex(&pk, a1, err, sizeof err) < 0 ||
			    tlock_encrypt(&pk, strtoull(a2, NULL, 10), b1, n1,
					  &ct, &n, err, sizeof err) < 0) {
				printf("error: %s", err);
			} else {
				puthex(ct, n);
				free(ct);
			}
		} else if (!strcmp(cmd, "decrypt") && a2 &&
			   !unhex(a1, b1, 48, &n1) && n1 == 48 &&
			   !unhex(a2, b2, CAP, &n2)) {
			uint8_t *pt;
			size_t n;
			if (tlock_decrypt(b2, n2, b1, &pt, &n, err,
					  sizeof err) < 0) {
				printf("error: %s", err);
			} else {
				puthex(pt, n);
				free(pt);
			}
		} else if (!strcmp(cmd, "pair") && a2 &&
			   !unhex(a1, b1, 32, &n1) && n1 == 32 &&
			   !unhex(a2, b2, 32, &n2) && n2 == 32) {
			uint8_t p[48], q[96], gt[576];
			drand_test_pair(b1, b2, p, q, gt);
			puthex(p, 48);
			printf(" ");
			puthex(q, 96);
			printf(" ");
			puthex(gt, 576);
		} else if (!strcmp(cmd, "h2c") && a1) {
			uint8_t m[32], c[48];
			drand_round_message(strtoull(a1, NULL, 10), m);
			drand_hash_to_g1(m, 32, DRAND_QUICKNET_DST, NULL, c);
			puthex(c, 48);
		} else {
			printf("error: usage");
		}
		printf("\n");
		fflush(stdout);
	}
	return 0;
}
