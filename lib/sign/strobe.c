/* SPDX-License-Identifier: MIT */
/*
 * STROBE-128 (strobe.sourceforge.io, v1.0.2) as Merlin uses it.  Only the
 * flags Merlin needs exist; there is no transport direction, so the state
 * machine is absorb / overwrite / squeeze over a 166-byte rate.
 */
#include <string.h>

#include <sodium.h>

#include "strobe.h"

#define FLAG_I 0x01
#define FLAG_A 0x02
#define FLAG_C 0x04
#define FLAG_M 0x10
#define FLAG_K 0x20

static const uint64_t keccak_rc[24] = {
	0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808aULL,
	0x8000000080008000ULL, 0x000000000000808bULL, 0x0000000080000001ULL,
	0x8000000080008081ULL, 0x8000000000008009ULL, 0x000000000000008aULL,
	0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000aULL,
	0x000000008000808bULL, 0x800000000000008bULL, 0x8000000000008089ULL,
	0x8000000000008003ULL, 0x8000000000008002ULL, 0x8000000000000080ULL,
	0x000000000000800aULL, 0x800000008000000aULL, 0x8000000080008081ULL,
	0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL,
};

/* rho offsets and pi destinations along the lane walk that starts at (1,0). */
static const uint8_t keccak_rot[24] = {
	1,  3,	6,  10, 15, 21, 28, 36, 45, 55, 2,  14,
	27, 41, 56, 8,	25, 43, 62, 18, 39, 61, 20, 44,
};
static const uint8_t keccak_pi[24] = {
	10, 7,	11, 17, 18, 3, 5,  16, 8,  21, 24, 4,
	15, 23, 19, 13, 12, 2, 20, 14, 22, 9,  6,  1,
};

static inline uint64_t rol64(uint64_t x, unsigned n)
{
	return (x << n) | (x >> (64 - n));
}

static void keccak_lanes(uint64_t a[25])
{
	uint64_t c[5], t;
	int round, i, j;

	for (round = 0; round < 24; round++) {
		/* theta */
		for (i = 0; i < 5; i++)
			c[i] = a[i] ^ a[i + 5] ^ a[i + 10] ^ a[i + 15] ^
			       a[i + 20];
		for (i = 0; i < 5; i++) {
			t = c[(i + 4) % 5] ^ rol64(c[(i + 1) % 5], 1);
			for (j = 0; j < 25; j += 5)
				a[j + i] ^= t;
		}
		/* rho and pi */
		t = a[1];
		for (i = 0; i < 24; i++) {
			j = keccak_pi[i];
			c[0] = a[j];
			a[j] = rol64(t, keccak_rot[i]);
			t = c[0];
		}
		/* chi */
		for (j = 0; j < 25; j += 5) {
			for (i = 0; i < 5; i++)
				c[i] = a[j + i];
			for (i = 0; i < 5; i++)
				a[j + i] = c[i] ^
					   (~c[(i + 1) % 5] & c[(i + 2) % 5]);
		}
		/* iota */
		a[0] ^= keccak_rc[round];
	}
}

void engy_keccak_f1600(uint8_t st[200])
{
	uint64_t a[25];
	int i, b;

	/* Explicit little-endian lanes keep the byte view portable. */
	for (i = 0; i < 25; i++) {
		a[i] = 0;
		for (b = 7; b >= 0; b--)
			a[i] = (a[i] << 8) | st[8 * i + b];
	}
	keccak_lanes(a);
	for (i = 0; i < 25; i++)
		for (b = 0; b < 8; b++)
			st[8 * i + b] = (uint8_t)(a[i] >> (8 * b));
	sodium_memzero(a, sizeof(a));
}

static void run_f(struct engy_strobe *s)
{
	s->st[s->pos] ^= s->pos_begin;
	s->st[s->pos + 1] ^= 0x04;
	s->st[ENGY_STROBE_R + 1] ^= 0x80;
	engy_keccak_f1600(s->st);
	s->pos = 0;
	s->pos_begin = 0;
}

static void absorb(struct engy_strobe *s, const uint8_t *p, size_t n)
{
	while (n--) {
		s->st[s->pos++] ^= *p++;
		if (s->pos == ENGY_STROBE_R)
			run_f(s);
	}
}

static void overwrite(struct engy_strobe *s, const uint8_t *p, size_t n)
{
	while (n--) {
		s->st[s->pos++] = *p++;
		if (s->pos == ENGY_STROBE_R)
			run_f(s);
	}
}

static void squeeze(struct engy_strobe *s, uint8_t *out, size_t n)
{
	while (n--) {
		*out++ = s->st[s->pos];
		s->st[s->pos++] = 0;
		if (s->pos == ENGY_STROBE_R)
			run_f(s);
	}
}

static void begin_op(struct engy_strobe *s, uint8_t flags, bool more)
{
	uint8_t hdr[2];

	if (more)
		return;
	hdr[0] = s->pos_begin;
	hdr[1] = flags;
	s->pos_begin = (uint8_t)(s->pos + 1);
	s->cur_flags = flags;
	absorb(s, hdr, 2);
	/* Cipher and key operations start on a fresh block. */
	if ((flags & (FLAG_C | FLAG_K)) && s->pos != 0)
		run_f(s);
}

void engy_strobe_init(struct engy_strobe *s, const void *label, size_t len)
{
	static const uint8_t hdr[6] = { 1, ENGY_STROBE_R + 2, 1, 0, 1, 96 };

	memset(s, 0, sizeof(*s));
	memcpy(s->st, hdr, sizeof(hdr));
	memcpy(s->st + 6, "STROBEv1.0.2", 12);
	engy_keccak_f1600(s->st);
	engy_strobe_meta_ad(s, label, len, false);
}

void engy_strobe_meta_ad(struct engy_strobe *s, const void *data, size_t len,
			 bool more)
{
	begin_op(s, FLAG_M | FLAG_A, more);
	absorb(s, data, len);
}

void engy_strobe_ad(struct engy_strobe *s, const void *data, size_t len,
		    bool more)
{
	begin_op(s, FLAG_A, more);
	absorb(s, data, len);
}

void engy_strobe_prf(struct engy_strobe *s, void *out, size_t len, bool more)
{
	begin_op(s, FLAG_I | FLAG_A | FLAG_C, more);
	squeeze(s, out, len);
}

void engy_strobe_key(struct engy_strobe *s, const void *data, size_t len,
		     bool more)
{
	begin_op(s, FLAG_A | FLAG_C, more);
	overwrite(s, data, len);
}

void engy_strobe_wipe(struct engy_strobe *s)
{
	sodium_memzero(s, sizeof(*s));
}
