/* SPDX-License-Identifier: MIT */
/*
 * lib/drand: RFC 9380 hash-to-G1 and drand quicknet's published beacon
 * (tests/data/drand: independent sources, named there), a test beacon
 * that signs, timelock encryption round trips and every kind of bad
 * input.  The round trips' expected values come from engy itself; the
 * independent checks of the ciphertext are tests/integration/tlock_peer.sh.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drand.h"

static void unhex(const char *h, uint8_t *out, size_t n)
{
	ck_assert_uint_eq(strlen(h), 2 * n);
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		ck_assert_int_eq(sscanf(h + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

static FILE *data(const char *name)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", DRAND_DATA, name);
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "open %s", path);
	return f;
}

START_TEST(test_rfc9380_g1)
{
	FILE *f = data("rfc9380_g1.txt");
	char line[512];
	int n = 0;
	while (fgets(line, sizeof line, f)) {
		if (line[0] != '"')
			continue;
		char *q = strchr(line + 1, '"');
		ck_assert_ptr_nonnull(q);
		*q = 0;
		char x[100], y[100];
		ck_assert_int_eq(sscanf(q + 1, "%99s %99s", x, y), 2);
		uint8_t want[96], got[96], comp[48];
		unhex(x, want, 48);
		unhex(y, want + 48, 48);
		drand_hash_to_g1(
			(const uint8_t *)line + 1, strlen(line + 1),
			"QUUX-V01-CS02-with-BLS12381G1_XMD:SHA-256_SSWU_RO_",
			got, comp);
		ck_assert_mem_eq(got, want, 96);
		/* the compressed form is x with the flag bits (compressed, sign of y) */
		ck_assert_mem_eq(comp + 1, want + 1, 47);
		ck_assert_uint_eq(comp[0] & 0x1f, want[0]);
		ck_assert_uint_eq(comp[0] & 0x80, 0x80);
		n++;
	}
	fclose(f);
	ck_assert_int_eq(n, 3);
}
END_TEST

static drand_pk quicknet;
static struct {
	uint64_t round;
	uint8_t sig[48];
} pulses[8];
static int npulses;

static void load_quicknet(void)
{
	FILE *f = data("quicknet.txt");
	char line[512], err[256];
	npulses = 0;
	while (fgets(line, sizeof line, f)) {
		char hex[300];
		unsigned long long r;
		if (sscanf(line, "pk %299s", hex) == 1) {
			ck_assert_msg(drand_pk_parse_hex(&quicknet, hex, err,
							 sizeof err) == 0,
				      "%s", err);
			ck_assert_str_eq(hex, DRAND_QUICKNET_PK_HEX);
		} else if (sscanf(line, "round %llu %299s", &r, hex) == 2) {
			ck_assert_int_lt(npulses, 8);
			pulses[npulses].round = r;
			unhex(hex, pulses[npulses].sig, 48);
			npulses++;
		}
	}
	fclose(f);
	ck_assert_int_ge(npulses, 2);
}

START_TEST(test_quicknet_pulses_verify)
{
	load_quicknet();
	for (int i = 0; i < npulses; i++) {
		ck_assert(drand_verify_round(&quicknet, pulses[i].round,
					     pulses[i].sig));
		/* another round's message, or another beacon, does not verify */
		ck_assert(!drand_verify_round(&quicknet, pulses[i].round + 1,
					      pulses[i].sig));
		uint8_t bad[48];
		memcpy(bad, pulses[i].sig, 48);
		bad[47] ^= 1;
		ck_assert(!drand_verify_round(&quicknet, pulses[i].round, bad));
	}
}
END_TEST

START_TEST(test_bad_public_keys)
{
	drand_pk pk;
	char err[256];
	uint8_t b[96];
	ck_assert_int_eq(drand_pk_parse_hex(&pk, "abcd", err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "192 hex digits"));
	ck_assert_int_eq(drand_pk_parse_hex(&pk, "zz", err, sizeof err), -1);
	ck_assert_int_eq(drand_pk_parse(&pk, b, 48, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "48 bytes"));
	memset(b, 0xff, sizeof b); /* x beyond the field */
	ck_assert_int_eq(drand_pk_parse(&pk, b, 96, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "not a compressed G2 point"));
	memset(b, 0, sizeof b);
	b[0] = 0xc0; /* the point at infinity */
	ck_assert_int_eq(drand_pk_parse(&pk, b, 96, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "subgroup"));
	/* the quicknet key with its x changed: off the curve or out of G2 */
	unhex(DRAND_QUICKNET_PK_HEX, b, 96);
	b[95] ^= 1;
	ck_assert_int_eq(drand_pk_parse(&pk, b, 96, err, sizeof err), -1);
}
END_TEST

static const uint8_t test_sk[32] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
				     0x88, 1,	 2,    3,    4,	   5,	 6,
				     7,	   8,	 9,    10,   11,   12,	 13,
				     14,   15,	 16,   17,   18,   19,	 20,
				     21,   22,	 23,   24 };

START_TEST(test_test_beacon)
{
	drand_pk pk;
	uint8_t sig[48];
	char err[256];
	drand_test_keygen(test_sk, &pk);
	drand_pk copy;
	ck_assert_int_eq(drand_pk_parse(&copy, pk.raw, 96, err, sizeof err), 0);
	drand_test_sign(test_sk, 12345, sig);
	ck_assert(drand_verify_round(&pk, 12345, sig));
	ck_assert(!drand_verify_round(&pk, 12346, sig));
	ck_assert(!drand_verify_round(&quicknet, 12345, sig));
}
END_TEST

START_TEST(test_tlock_roundtrip)
{
	drand_pk pk;
	char err[256];
	uint8_t sig[48], other[48], *ct, *pt;
	size_t ctlen, ptlen;
	drand_test_keygen(test_sk, &pk);
	drand_test_sign(test_sk, 777, sig);
	drand_test_sign(test_sk, 778, other);
	for (size_t n = 0; n < 300; n += 37) {
		uint8_t msg[300];
		for (size_t i = 0; i < n; i++)
			msg[i] = (uint8_t)(i * 7 + n);
		ck_assert_msg(tlock_encrypt(&pk, 777, msg, n, &ct, &ctlen, err,
					    sizeof err) == 0,
			      "%s", err);
		ck_assert_uint_eq(ctlen, 96 + 8 + 32 + 8 + 32 + 8 +
						 (8 + n + 16 + 8 + 12) + 8 + 8);
		ck_assert_msg(tlock_decrypt(ct, ctlen, sig, &pt, &ptlen, err,
					    sizeof err) == 0,
			      "%s", err);
		ck_assert_uint_eq(ptlen, n);
		ck_assert(n == 0 || memcmp(pt, msg, n) == 0);
		free(pt);
		/* another round's signature does not open it */
		ck_assert_int_eq(tlock_decrypt(ct, ctlen, other, &pt, &ptlen,
					       err, sizeof err),
				 -1);
		ck_assert_ptr_nonnull(strstr(err, "not this round's"));
		ck_assert_ptr_null(pt);
		/* every truncation and a flipped byte in each part are refused */
		for (size_t cut = 0; cut < ctlen; cut += 11)
			ck_assert_int_eq(tlock_decrypt(ct, cut, sig, &pt,
						       &ptlen, err, sizeof err),
					 -1);
		size_t spots[] = { 10,		96 + 8 + 3, 96 + 48 + 3,
				   96 + 80 + 3, ctlen - 30, ctlen - 1 };
		for (size_t i = 0; i < sizeof spots / sizeof spots[0]; i++) {
			ct[spots[i]] ^= 0x40;
			ck_assert_int_eq(tlock_decrypt(ct, ctlen, sig, &pt,
						       &ptlen, err, sizeof err),
					 -1);
			ct[spots[i]] ^= 0x40;
		}
		free(ct);
	}
}
END_TEST

START_TEST(test_tlock_quicknet_published)
{
	/* Encrypted to quicknet's real key for a past round: the published
	 * pulse opens it, a different pulse does not. */
	load_quicknet();
	char err[256];
	uint8_t *ct, *pt;
	size_t ctlen, ptlen;
	const char msg[] = "engy commit-reveal";
	ck_assert_int_eq(tlock_encrypt(&quicknet, pulses[0].round,
				       (const uint8_t *)msg, sizeof msg, &ct,
				       &ctlen, err, sizeof err),
			 0);
	ck_assert_msg(tlock_decrypt(ct, ctlen, pulses[0].sig, &pt, &ptlen, err,
				    sizeof err) == 0,
		      "%s", err);
	ck_assert_uint_eq(ptlen, sizeof msg);
	ck_assert_mem_eq(pt, msg, sizeof msg);
	free(pt);
	ck_assert_int_eq(tlock_decrypt(ct, ctlen, pulses[1].sig, &pt, &ptlen,
				       err, sizeof err),
			 -1);
	free(ct);
}
END_TEST

START_TEST(test_round_at)
{
	ck_assert_uint_eq(drand_round_at(0), 0);
	ck_assert_uint_eq(drand_round_at(DRAND_QUICKNET_GENESIS), 1);
	ck_assert_uint_eq(drand_round_at(DRAND_QUICKNET_GENESIS + 2), 1);
	ck_assert_uint_eq(drand_round_at(DRAND_QUICKNET_GENESIS + 3), 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("drand");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_rfc9380_g1);
	tcase_add_test(tc, test_quicknet_pulses_verify);
	tcase_add_test(tc, test_bad_public_keys);
	tcase_add_test(tc, test_test_beacon);
	tcase_add_test(tc, test_tlock_roundtrip);
	tcase_add_test(tc, test_tlock_quicknet_published);
	tcase_add_test(tc, test_round_at);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
