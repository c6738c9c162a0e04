/* SPDX-License-Identifier: MIT */
/*
 * A line-oriented driver for sr25519_peer.mjs: one request per stdin line,
 * one answer per stdout line.  Hex "-" is the empty byte string; errors
 * answer "ERR <negative errno>".
 *
 *   pair MINI                 -> PUB SS58 SECRET(schnorrkel) SECRET(ed25519)
 *   pairu MINI                -> PUB SECRET                  (uniform mode)
 *   sign MINI MSG RNG         -> SIG
 *   signsk EDSECRET MSG RNG   -> SIG      (secret in polkadot-js form)
 *   verify PUB MSG SIG        -> 0 or ERR
 *   ss58 PUB PREFIX           -> ADDRESS
 *   unss58 ADDRESS            -> PREFIX PUB
 *   mini WORD...              -> MINI     (BIP-39, no passphrase)
 *   merlin LABEL {a LABEL MSG | c LABEL N}...  -> all challenges, concatenated
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bip39.h"
#include "merlin.h"
#include "sr25519.h"
#include "ss58.h"

#define MAX_BYTES (1u << 20)

static uint8_t *unhex(const char *s, size_t *n)
{
	size_t len = strlen(s), i;
	uint8_t *b;
	unsigned v;

	*n = 0;
	if (strcmp(s, "-") == 0)
		return calloc(1, 1);
	if (len % 2 || len / 2 > MAX_BYTES)
		return NULL;
	b = malloc(len / 2 + 1);
	if (!b)
		return NULL;
	for (i = 0; i < len / 2; i++) {
		if (sscanf(s + 2 * i, "%2x", &v) != 1) {
			free(b);
			return NULL;
		}
		b[i] = (uint8_t)v;
	}
	*n = len / 2;
	return b;
}

static void puthex(const uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		printf("%02x", b[i]);
}

/* A hex argument of exactly @want bytes (0: any length) into a new buffer. */
static uint8_t *arg(char **tok, int i, int ntok, size_t want, size_t *n)
{
	uint8_t *b;

	if (i >= ntok)
		return NULL;
	b = unhex(tok[i], n);
	if (b && want && *n != want) {
		free(b);
		return NULL;
	}
	return b;
}

/* A hex label as a NUL-terminated string. */
static char *label(const char *hex)
{
	size_t n;
	uint8_t *b = unhex(hex, &n);

	if (b)
		b[n] = '\0';
	return (char *)b;
}

static int do_merlin(char **tok, int ntok)
{
	struct engy_merlin t;
	int i, printed = 0;
	char *l;

	l = ntok > 1 ? label(tok[1]) : NULL;
	if (!l)
		return -EINVAL;
	engy_merlin_init(&t, l);
	free(l);
	for (i = 2; i + 2 < ntok; i += 3) {
		l = label(tok[i + 1]);
		if (!l)
			return -EINVAL;
		if (strcmp(tok[i], "a") == 0) {
			size_t n;
			uint8_t *m = unhex(tok[i + 2], &n);

			if (!m) {
				free(l);
				return -EINVAL;
			}
			engy_merlin_append(&t, l, m, n);
			free(m);
		} else {
			size_t n = strtoul(tok[i + 2], NULL, 10);
			uint8_t *c = malloc(n + 1);

			if (!c || n > MAX_BYTES) {
				free(c);
				free(l);
				return -EINVAL;
			}
			engy_merlin_challenge(&t, l, c, n);
			puthex(c, n);
			printed = 1;
			free(c);
		}
		free(l);
	}
	if (i != ntok)
		return -EINVAL;
	if (!printed)
		printf("-");
	return 0;
}

static int handle(char **tok, int ntok)
{
	struct engy_sr25519_keypair kp;
	uint8_t *a = NULL, *b = NULL, *c = NULL, ed[64], sig[64];
	char addr[ENGY_SS58_ADDR_SIZE];
	size_t na, nb, nc;
	uint16_t prefix;
	int rc = -EINVAL;

	if (strcmp(tok[0], "pair") == 0 || strcmp(tok[0], "pairu") == 0) {
		int uni = tok[0][4] == 'u';

		if (!(a = arg(tok, 1, ntok, 32, &na)))
			goto out;
		rc = engy_sr25519_keypair_from_mini(
			&kp, a,
			uni ? ENGY_SR25519_EXPAND_UNIFORM
			    : ENGY_SR25519_EXPAND_ED25519);
		if (rc < 0)
			goto out;
		puthex(kp.pub, 32);
		if (!uni) {
			rc = engy_ss58_encode(addr, sizeof(addr), kp.pub, 42);
			if (rc < 0)
				goto out;
			printf(" %s", addr);
		}
		printf(" ");
		puthex(kp.secret, 64);
		if (!uni) {
			engy_sr25519_secret_to_ed25519(ed, kp.secret);
			printf(" ");
			puthex(ed, 64);
		}
		rc = 0;
	} else if (strcmp(tok[0], "sign") == 0 ||
		   strcmp(tok[0], "signsk") == 0) {
		int sk = tok[0][4] == 's';

		if (!(a = arg(tok, 1, ntok, sk ? 64 : 32, &na)) ||
		    !(b = arg(tok, 2, ntok, 0, &nb)) ||
		    !(c = arg(tok, 3, ntok, 32, &nc)))
			goto out;
		if (sk) {
			rc = engy_sr25519_secret_from_ed25519(ed, a);
			if (rc == 0)
				rc = engy_sr25519_keypair_from_secret(&kp, ed);
		} else {
			rc = engy_sr25519_keypair_from_mini(
				&kp, a, ENGY_SR25519_EXPAND_ED25519);
		}
		if (rc == 0)
			rc = engy_sr25519_sign_rng(
				&kp, ENGY_SR25519_SUBSTRATE_CTX, b, nb, c, sig);
		if (rc == 0)
			puthex(sig, 64);
	} else if (strcmp(tok[0], "verify") == 0) {
		if (!(a = arg(tok, 1, ntok, 32, &na)) ||
		    !(b = arg(tok, 2, ntok, 0, &nb)) ||
		    !(c = arg(tok, 3, ntok, 64, &nc)))
			goto out;
		rc = engy_sr25519_verify(a, ENGY_SR25519_SUBSTRATE_CTX, b, nb,
					 c);
		if (rc == 0)
			printf("0");
	} else if (strcmp(tok[0], "ss58") == 0) {
		if (!(a = arg(tok, 1, ntok, 32, &na)) || ntok != 3)
			goto out;
		rc = engy_ss58_encode(addr, sizeof(addr), a,
				      (uint16_t)atoi(tok[2]));
		if (rc > 0) {
			printf("%s", addr);
			rc = 0;
		}
	} else if (strcmp(tok[0], "unss58") == 0) {
		uint8_t pub[32];

		if (ntok != 2)
			goto out;
		rc = engy_ss58_decode(tok[1], pub, &prefix);
		if (rc == 0) {
			printf("%u ", prefix);
			puthex(pub, 32);
		}
	} else if (strcmp(tok[0], "mini") == 0) {
		char phrase[1024] = "";
		uint8_t mini[32];
		int i;

		for (i = 1; i < ntok; i++) {
			strncat(phrase, tok[i],
				sizeof(phrase) - strlen(phrase) - 2);
			strcat(phrase, " ");
		}
		rc = engy_bip39_mini_secret(phrase, NULL, mini, NULL);
		if (rc == 0)
			puthex(mini, 32);
	} else if (strcmp(tok[0], "merlin") == 0) {
		rc = do_merlin(tok, ntok);
	}
out:
	free(a);
	free(b);
	free(c);
	return rc;
}

int main(void)
{
	char *line = NULL, *tok[512], *save;
	size_t cap = 0;
	ssize_t len;
	int ntok, rc;

	while ((len = getline(&line, &cap, stdin)) > 0) {
		ntok = 0;
		for (tok[0] = strtok_r(line, " \n", &save);
		     tok[ntok] && ntok < 511;
		     tok[++ntok] = strtok_r(NULL, " \n", &save))
			;
		if (ntok == 0) {
			printf("ERR %d\n", -EINVAL);
			continue;
		}
		rc = handle(tok, ntok);
		if (rc < 0)
			printf("ERR %d", rc);
		printf("\n");
	}
	free(line);
	return 0;
}
