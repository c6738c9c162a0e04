/* SPDX-License-Identifier: MIT */
/*
 * Merlin v1.0 framing: every append and challenge is a meta-AD of the label
 * continued by the little-endian 32-bit length, then the data operation.
 */
#include <string.h>

#include "merlin.h"

static void le32(uint8_t b[4], size_t n)
{
	b[0] = (uint8_t)n;
	b[1] = (uint8_t)(n >> 8);
	b[2] = (uint8_t)(n >> 16);
	b[3] = (uint8_t)(n >> 24);
}

void engy_merlin_init(struct engy_merlin *t, const char *label)
{
	engy_strobe_init(&t->strobe, "Merlin v1.0", 11);
	engy_merlin_append(t, "dom-sep", label, strlen(label));
}

void engy_merlin_append(struct engy_merlin *t, const char *label,
			const void *msg, size_t len)
{
	uint8_t n[4];

	le32(n, len);
	engy_strobe_meta_ad(&t->strobe, label, strlen(label), false);
	engy_strobe_meta_ad(&t->strobe, n, 4, true);
	engy_strobe_ad(&t->strobe, msg, len, false);
}

void engy_merlin_challenge(struct engy_merlin *t, const char *label, void *out,
			   size_t len)
{
	uint8_t n[4];

	le32(n, len);
	engy_strobe_meta_ad(&t->strobe, label, strlen(label), false);
	engy_strobe_meta_ad(&t->strobe, n, 4, true);
	engy_strobe_prf(&t->strobe, out, len, false);
}

void engy_merlin_witness_bytes(const struct engy_merlin *t, const char *label,
			       const void *witness, size_t wlen,
			       const uint8_t rng[32], void *out, size_t len)
{
	struct engy_strobe s = t->strobe;
	uint8_t n[4];

	le32(n, wlen);
	engy_strobe_meta_ad(&s, label, strlen(label), false);
	engy_strobe_meta_ad(&s, n, 4, true);
	engy_strobe_key(&s, witness, wlen, false);
	engy_strobe_meta_ad(&s, "rng", 3, false);
	engy_strobe_key(&s, rng, 32, false);
	/* The output request is framed by its length alone, unlabelled. */
	le32(n, len);
	engy_strobe_meta_ad(&s, n, 4, false);
	engy_strobe_prf(&s, out, len, false);
	engy_strobe_wipe(&s);
}

void engy_merlin_wipe(struct engy_merlin *t)
{
	engy_strobe_wipe(&t->strobe);
}
