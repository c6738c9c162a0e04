/* SPDX-License-Identifier: MIT */
/* lib/drand's internals: blst types and the helpers drand.c and tlock.c
 * share. */
#ifndef ENGY_DRAND_INT_H
#define ENGY_DRAND_INT_H

#include <blst.h>

#include "drand.h"

/* SHA-256 of a || b (b may be NULL). */
void drand_sha256(const uint8_t *a, size_t an, const uint8_t *b, size_t bn,
		  uint8_t out[32]);
/* The round's identity point H(SHA-256(round)) in G1. */
void drand_round_point(uint64_t round, blst_p1_affine *q);
/* arkworks' serialization of a GT element (576 bytes). */
void drand_gt_bytes(const blst_fp12 *f, uint8_t out[576]);
/* Hex to bytes (optional 0x); -1 on a bad digit, odd length or overflow. */
int drand_unhex(const char *hex, uint8_t *out, size_t cap, size_t *n);

#endif
