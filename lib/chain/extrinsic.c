/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errbuf.h"
#include "extrinsic.h"
#include "xxhash.h"

/*
 * Identifiers whose bytes are known.  The ones marked EMPTY carry none;
 * with metadata they are accepted only when their types agree.
 */
static const struct {
	const char *id;
	uint8_t kind;
} known[] = {
	{ "CheckNonZeroSender", ENGY_EXT_EMPTY },
	{ "CheckSpecVersion", ENGY_EXT_SPEC_VERSION },
	{ "CheckTxVersion", ENGY_EXT_TX_VERSION },
	{ "CheckGenesis", ENGY_EXT_GENESIS },
	{ "CheckMortality", ENGY_EXT_MORTALITY },
	{ "CheckEra", ENGY_EXT_MORTALITY },
	{ "CheckNonce", ENGY_EXT_NONCE },
	{ "CheckWeight", ENGY_EXT_EMPTY },
	{ "ChargeTransactionPayment", ENGY_EXT_TIP },
	{ "CheckMetadataHash", ENGY_EXT_METADATA_HASH },
	/* subtensor's own, all PhantomData (specs/validator.md §6) */
	{ "SudoTransactionExtension", ENGY_EXT_EMPTY },
	{ "CheckShieldedTxValidity", ENGY_EXT_EMPTY },
	{ "SubtensorTransactionExtension", ENGY_EXT_EMPTY },
	{ "SubtensorSignedExtension", ENGY_EXT_EMPTY },
	{ "DrandPriority", ENGY_EXT_EMPTY },
};

static int known_kind(const char *id)
{
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(known[i].id, id) == 0)
			return known[i].kind;
	return -1;
}

int engy_ext_layout_names(struct engy_ext_layout *l, const char *const *ids,
			  size_t n, char *err, size_t errlen)
{
	size_t i;

	memset(l, 0, sizeof(*l));
	if (n > ENGY_EXT_MAX) {
		engy_seterr(err, errlen, "%zu signed extensions (at most %d)",
			    n, ENGY_EXT_MAX);
		return -ENOTSUP;
	}
	for (i = 0; i < n; i++) {
		int k = known_kind(ids[i]);

		if (k < 0) {
			engy_seterr(err, errlen, "unknown signed extension %s",
				    ids[i]);
			return -ENOTSUP;
		}
		l->kind[i] = (uint8_t)k;
	}
	l->n = n;
	return 0;
}

/* Whether @type, unwrapped, is a 32-byte array. */
static bool is_hash(const struct engy_metadata *md, uint32_t type)
{
	const struct engy_meta_type *t =
		engy_meta_type(md, engy_meta_unwrap(md, type));

	return t && t->def == ENGY_META_ARRAY && t->u.array.len == 32 &&
	       engy_meta_is_prim(md, t->u.array.elem, ENGY_PRIM_U8);
}

static bool is_compact(const struct engy_metadata *md, uint32_t type)
{
	const struct engy_meta_type *t =
		engy_meta_type(md, engy_meta_unwrap(md, type));

	return t && t->def == ENGY_META_COMPACT;
}

static bool is_variant(const struct engy_metadata *md, uint32_t type)
{
	const struct engy_meta_type *t =
		engy_meta_type(md, engy_meta_unwrap(md, type));

	return t && t->def == ENGY_META_VARIANT;
}

/* The types an extension must have for the bytes engy writes. */
static bool types_agree(const struct engy_metadata *md,
			const struct engy_meta_ext *e, int kind)
{
	bool extra0 = engy_meta_zero_size(md, e->type);
	bool impl0 = engy_meta_zero_size(md, e->implicit);

	switch (kind) {
	case ENGY_EXT_EMPTY:
		return extra0 && impl0;
	case ENGY_EXT_SPEC_VERSION:
	case ENGY_EXT_TX_VERSION:
		return extra0 &&
		       engy_meta_is_prim(md, e->implicit, ENGY_PRIM_U32);
	case ENGY_EXT_GENESIS:
		return extra0 && is_hash(md, e->implicit);
	case ENGY_EXT_MORTALITY:
		return is_variant(md, e->type) && is_hash(md, e->implicit);
	case ENGY_EXT_NONCE:
	case ENGY_EXT_TIP:
		return is_compact(md, e->type) && impl0;
	case ENGY_EXT_METADATA_HASH:
		/* mode: an enum (Disabled = 0); implicit: Option<[u8; 32]> */
		return is_variant(md, e->type) && is_variant(md, e->implicit);
	}
	return false;
}

int engy_ext_layout_meta(struct engy_ext_layout *l,
			 const struct engy_metadata *md, char *err,
			 size_t errlen)
{
	uint32_t i;

	memset(l, 0, sizeof(*l));
	if (md->extrinsic_version != 4) {
		engy_seterr(err, errlen, "extrinsic format v%u (engy signs v4)",
			    md->extrinsic_version);
		return -ENOTSUP;
	}
	if (md->n_exts > ENGY_EXT_MAX) {
		engy_seterr(err, errlen, "%u signed extensions (at most %d)",
			    md->n_exts, ENGY_EXT_MAX);
		return -ENOTSUP;
	}
	for (i = 0; i < md->n_exts; i++) {
		const struct engy_meta_ext *e = &md->exts[i];
		int k = known_kind(e->identifier);

		if (k < 0 && engy_meta_zero_size(md, e->type) &&
		    engy_meta_zero_size(md, e->implicit))
			k = ENGY_EXT_EMPTY;
		if (k < 0) {
			engy_seterr(
				err, errlen,
				"signed extension %s carries bytes engy does "
				"not know how to fill",
				e->identifier);
			return -ENOTSUP;
		}
		if (!types_agree(md, e, k)) {
			engy_seterr(
				err, errlen,
				"signed extension %s has types other than the "
				"known ones",
				e->identifier);
			return -ENOTSUP;
		}
		l->kind[i] = (uint8_t)k;
	}
	l->n = md->n_exts;
	return 0;
}

size_t engy_era_encode(uint64_t period, uint64_t current, uint8_t out[2])
{
	uint64_t p = 4, phase, q;
	unsigned tz = 0;
	uint16_t enc;

	if (!period) {
		out[0] = 0;
		return 1;
	}
	while (p < period && p < 65536)
		p <<= 1;
	phase = current % p;
	q = p >> 12 ? p >> 12 : 1;
	phase = phase / q * q;
	while (!((p >> tz) & 1))
		tz++;
	tz = tz - 1 < 1 ? 1 : tz - 1 > 15 ? 15 : tz - 1;
	enc = (uint16_t)(tz | (phase / q) << 4);
	out[0] = (uint8_t)enc;
	out[1] = (uint8_t)(enc >> 8);
	return 2;
}

static void extra(const struct engy_ext_layout *l,
		  const struct engy_ext_params *p, struct engy_scale_buf *out)
{
	uint8_t era[2];
	size_t i;

	for (i = 0; i < l->n; i++) {
		switch (l->kind[i]) {
		case ENGY_EXT_MORTALITY:
			engy_scale_put(out, era,
				       engy_era_encode(p->era_period,
						       p->era_block, era));
			break;
		case ENGY_EXT_NONCE:
			engy_scale_put_compact(out, p->nonce);
			break;
		case ENGY_EXT_TIP:
			engy_scale_put_compact(out, p->tip);
			break;
		case ENGY_EXT_METADATA_HASH:
			engy_scale_put_u8(out, 0); /* mode: Disabled */
			break;
		}
	}
}

static void implicit(const struct engy_ext_layout *l,
		     const struct engy_ext_params *p,
		     struct engy_scale_buf *out)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		switch (l->kind[i]) {
		case ENGY_EXT_SPEC_VERSION:
			engy_scale_put_u32(out, p->spec_version);
			break;
		case ENGY_EXT_TX_VERSION:
			engy_scale_put_u32(out, p->tx_version);
			break;
		case ENGY_EXT_GENESIS:
			engy_scale_put(out, p->genesis, 32);
			break;
		case ENGY_EXT_MORTALITY:
			engy_scale_put(out,
				       p->era_period ? p->era_hash : p->genesis,
				       32);
			break;
		case ENGY_EXT_METADATA_HASH:
			engy_scale_put_u8(out, 0); /* None */
			break;
		}
	}
}

int engy_ext_payload(const struct engy_ext_layout *l,
		     const struct engy_ext_params *p, const uint8_t *call,
		     size_t call_len, struct engy_scale_buf *out)
{
	engy_scale_put(out, call, call_len);
	extra(l, p, out);
	implicit(l, p, out);
	return out->err;
}

const uint8_t *engy_ext_to_sign(const uint8_t *payload, size_t len,
				uint8_t hash[32], size_t *out_len)
{
	if (len > ENGY_EXT_HASH_OVER) {
		engy_blake2_256(hash, payload, len);
		*out_len = 32;
		return hash;
	}
	*out_len = len;
	return payload;
}

int engy_ext_signed(const struct engy_ext_layout *l,
		    const struct engy_ext_params *p, const uint8_t *call,
		    size_t call_len, const uint8_t pub[32],
		    const uint8_t sig[64], struct engy_scale_buf *out)
{
	struct engy_scale_buf body;

	engy_scale_buf_init(&body);
	engy_scale_put_u8(&body, 0x84); /* signed, v4 */
	engy_scale_put_u8(&body, 0x00); /* MultiAddress::Id */
	engy_scale_put(&body, pub, 32);
	engy_scale_put_u8(&body, 0x01); /* MultiSignature::Sr25519 */
	engy_scale_put(&body, sig, 64);
	extra(l, p, &body);
	engy_scale_put(&body, call, call_len);
	if (!body.err)
		engy_scale_put_vec(out, body.p, body.len);
	else
		out->err = body.err;
	engy_scale_buf_free(&body);
	return out->err;
}

void engy_ext_hash(const uint8_t *ext, size_t len, uint8_t out[32])
{
	engy_blake2_256(out, ext, len);
}

int engy_call_check_set_weights(const struct engy_metadata *md,
				const struct engy_meta_variant *v, char *err,
				size_t errlen)
{
	if (v->n_fields != 4 ||
	    !engy_meta_is_prim(md, v->fields[0].type, ENGY_PRIM_U16) ||
	    !engy_meta_is_seq_of(md, v->fields[1].type, ENGY_PRIM_U16) ||
	    !engy_meta_is_seq_of(md, v->fields[2].type, ENGY_PRIM_U16) ||
	    !engy_meta_is_prim(md, v->fields[3].type, ENGY_PRIM_U64)) {
		engy_seterr(
			err, errlen,
			"set_weights takes other arguments than (netuid u16, "
			"dests Vec<u16>, weights Vec<u16>, version_key u64)");
		return -EPROTO;
	}
	return 0;
}

int engy_call_set_weights(const struct engy_metadata *md, uint8_t pallet,
			  uint8_t call, uint16_t netuid, const uint16_t *uids,
			  const uint16_t *weights, size_t n,
			  uint64_t version_key, struct engy_scale_buf *out)
{
	size_t i;

	if (md) {
		const struct engy_meta_pallet *p =
			engy_meta_pallet_by_index(md, pallet);
		const struct engy_meta_variant *v =
			p && p->has_calls
				? engy_meta_variant_at(md, p->calls, call)
				: NULL;

		if (!v || engy_call_check_set_weights(md, v, NULL, 0))
			return -EPROTO;
	}
	engy_scale_put_u8(out, pallet);
	engy_scale_put_u8(out, call);
	engy_scale_put_u16(out, netuid);
	engy_scale_put_compact(out, n);
	for (i = 0; i < n; i++)
		engy_scale_put_u16(out, uids[i]);
	engy_scale_put_compact(out, n);
	for (i = 0; i < n; i++)
		engy_scale_put_u16(out, weights[i]);
	engy_scale_put_u64(out, version_key);
	return out->err;
}
