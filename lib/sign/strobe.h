/* SPDX-License-Identifier: MIT */
/*
 * STROBE-128 over Keccak-f[1600], reduced to the operations Merlin uses
 * (meta-AD, AD, PRF, KEY; no transport), byte-compatible with the
 * merlin crate's strobe.rs.  specs/signing.md describes the layering.
 */
#ifndef ENGY_STROBE_H
#define ENGY_STROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENGY_STROBE_R 166 /* rate in bytes: 200 - 2 * 128 / 8 - 2 */

struct engy_strobe {
	uint8_t st[200];
	uint8_t pos;
	uint8_t pos_begin;
	uint8_t cur_flags;
};

/* The Keccak-f[1600] permutation on a 200-byte state (lanes little-endian). */
void engy_keccak_f1600(uint8_t st[200]);

void engy_strobe_init(struct engy_strobe *s, const void *label, size_t len);

/*
 * Each operation continues the previous one of the same kind when @more is
 * true (Merlin frames "label || LE32(len)" as one meta-AD that way).
 */
void engy_strobe_meta_ad(struct engy_strobe *s, const void *data, size_t len,
			 bool more);
void engy_strobe_ad(struct engy_strobe *s, const void *data, size_t len,
		    bool more);
void engy_strobe_prf(struct engy_strobe *s, void *out, size_t len, bool more);
void engy_strobe_key(struct engy_strobe *s, const void *data, size_t len,
		     bool more);

/* Wipes the state (it may hold key material). */
void engy_strobe_wipe(struct engy_strobe *s);

#endif /* ENGY_STROBE_H */
