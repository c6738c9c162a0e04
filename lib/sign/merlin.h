/* SPDX-License-Identifier: MIT */
/*
 * Merlin transcripts (merlin.cool) on STROBE-128: the Fiat-Shamir layer
 * schnorrkel signs through.  Labels are NUL-terminated byte strings (the
 * empty string is a valid label); messages are byte ranges.
 */
#ifndef ENGY_MERLIN_H
#define ENGY_MERLIN_H

#include <stddef.h>
#include <stdint.h>

#include "strobe.h"

struct engy_merlin {
	struct engy_strobe strobe;
};

/* Transcript::new(label): STROBE("Merlin v1.0"), then "dom-sep" = label. */
void engy_merlin_init(struct engy_merlin *t, const char *label);

void engy_merlin_append(struct engy_merlin *t, const char *label,
			const void *msg, size_t len);

void engy_merlin_challenge(struct engy_merlin *t, const char *label, void *out,
			   size_t len);

/*
 * The transcript RNG (build_rng().rekey_with_witness_bytes(label, witness)
 * .finalize(rng).fill_bytes(out)), run on a copy so @t is unchanged.  @rng
 * is the 32 bytes finalize() draws from its RNG; passing them in makes
 * signatures reproducible for tests.
 */
void engy_merlin_witness_bytes(const struct engy_merlin *t, const char *label,
			       const void *witness, size_t wlen,
			       const uint8_t rng[32], void *out, size_t len);

void engy_merlin_wipe(struct engy_merlin *t);

#endif /* ENGY_MERLIN_H */
