/* SPDX-License-Identifier: MIT */
/*
 * Signed extrinsics, format v4, as Substrate's UncheckedExtrinsic encodes
 * them (specs/validator.md §6):
 *
 *   compact(len) || 0x84 || 0x00 pubkey[32] || 0x01 sig[64] || extra || call
 *   payload = call || extra || implicit
 *   signed  = blake2b-256(payload) when longer than 256 bytes, else payload
 *
 * The extension list comes from the runtime's metadata: each identifier
 * must be one whose bytes are known here, or one whose extra and implicit
 * types both encode to nothing (the many PhantomData checks); anything
 * else is refused rather than guessed.
 */
#ifndef ENGY_EXTRINSIC_H
#define ENGY_EXTRINSIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metadata.h"
#include "scale.h"

#define ENGY_EXT_MAX	   32  /* extensions in one runtime */
#define ENGY_EXT_HASH_OVER 256 /* payloads longer are hashed */

enum engy_ext_kind {
	ENGY_EXT_EMPTY = 0,	/* no bytes either side */
	ENGY_EXT_SPEC_VERSION,	/* implicit u32 */
	ENGY_EXT_TX_VERSION,	/* implicit u32 */
	ENGY_EXT_GENESIS,	/* implicit hash */
	ENGY_EXT_MORTALITY,	/* extra era, implicit birth hash */
	ENGY_EXT_NONCE,		/* extra compact nonce */
	ENGY_EXT_TIP,		/* extra compact tip */
	ENGY_EXT_METADATA_HASH, /* extra mode 0, implicit None */
};

struct engy_ext_layout {
	size_t n;
	uint8_t kind[ENGY_EXT_MAX];
};

/*
 * engy_ext_layout_names() - the layout of a list of identifiers, without
 * metadata (golden vectors): identifiers known to carry no bytes are
 * accepted as such.  engy_ext_layout_meta() - the layout of a runtime,
 * checking each extension's types.  Both return 0 or -ENOTSUP with the
 * offending identifier in @err.
 */
int engy_ext_layout_names(struct engy_ext_layout *l, const char *const *ids,
			  size_t n, char *err, size_t errlen);
int engy_ext_layout_meta(struct engy_ext_layout *l,
			 const struct engy_metadata *md, char *err,
			 size_t errlen);

/*
 * Era (mortality).  @period is rounded up to a power of two in 4..65536;
 * the transaction is valid from block @current for @period blocks, and
 * the hash signed is that of block @current.  Returns the encoding's
 * length (2), or 1 for immortal when @period is 0.
 */
size_t engy_era_encode(uint64_t period, uint64_t current, uint8_t out[2]);

struct engy_ext_params {
	uint32_t spec_version;
	uint32_t tx_version;
	uint8_t genesis[32];
	uint64_t era_period; /* 0: immortal */
	uint64_t era_block;  /* the block whose hash is signed */
	uint8_t era_hash[32];
	uint32_t nonce;
	uint64_t tip;
};

/* engy_ext_payload() - the signing payload of @call (before hashing). */
int engy_ext_payload(const struct engy_ext_layout *l,
		     const struct engy_ext_params *p, const uint8_t *call,
		     size_t call_len, struct engy_scale_buf *out);

/* The bytes actually signed: @payload itself, or its blake2b-256. */
const uint8_t *engy_ext_to_sign(const uint8_t *payload, size_t len,
				uint8_t hash[32], size_t *out_len);

/*
 * engy_ext_signed() - the full extrinsic (with its length prefix) from a
 * signature over the payload.  @out is appended to.
 */
int engy_ext_signed(const struct engy_ext_layout *l,
		    const struct engy_ext_params *p, const uint8_t *call,
		    size_t call_len, const uint8_t pub[32],
		    const uint8_t sig[64], struct engy_scale_buf *out);

/* The transaction hash: blake2b-256 of the whole extrinsic. */
void engy_ext_hash(const uint8_t *ext, size_t len, uint8_t out[32]);

/*
 * engy_call_set_weights() - SubtensorModule.set_weights(netuid, dests,
 * weights, version_key) at @pallet/@call.  With @md, the call's four
 * argument types are checked first (-EPROTO when they differ).
 */
int engy_call_set_weights(const struct engy_metadata *md, uint8_t pallet,
			  uint8_t call, uint16_t netuid, const uint16_t *uids,
			  const uint16_t *weights, size_t n,
			  uint64_t version_key, struct engy_scale_buf *out);

/* engy_call_check_set_weights() - 0 when @v (set_weights' variant) has the
 * argument types engy encodes; -EPROTO with the reason otherwise. */
int engy_call_check_set_weights(const struct engy_metadata *md,
				const struct engy_meta_variant *v, char *err,
				size_t errlen);

#endif /* ENGY_EXTRINSIC_H */
