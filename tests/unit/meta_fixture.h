/* SPDX-License-Identifier: MIT */
/*
 * A small runtime's metadata, written byte by byte in frame-metadata's
 * v14 or v15 layout: System and SubtensorModule pallets (calls, events,
 * errors, storage with every hasher kind the validator reads), the event
 * record types, and a signed-extension list shaped like subtensor's.
 */
#ifndef ENGY_META_FIXTURE_H
#define ENGY_META_FIXTURE_H

#include "chain_test.h"

struct mf_field {
	const char *name; /* NULL: unnamed */
	uint32_t ty;
};

/* clang-format off */
#define MF_END { NULL, UINT32_MAX }
/* clang-format on */

static inline void mf_head(struct engy_scale_buf *b, uint32_t id,
			   const char *path)
{
	engy_scale_put_compact(b, id);
	if (path) {
		engy_scale_put_compact(b, 1);
		put_str(b, path);
	} else {
		engy_scale_put_compact(b, 0);
	}
	engy_scale_put_compact(b, 0); /* type params */
}

static inline void mf_fields(struct engy_scale_buf *b, const struct mf_field *f)
{
	size_t n = 0, i;

	while (f[n].ty != UINT32_MAX)
		n++;
	engy_scale_put_compact(b, n);
	for (i = 0; i < n; i++) {
		engy_scale_put_u8(b, f[i].name ? 1 : 0);
		if (f[i].name)
			put_str(b, f[i].name);
		engy_scale_put_compact(b, f[i].ty);
		engy_scale_put_u8(b, 0);      /* type_name: None */
		engy_scale_put_compact(b, 0); /* docs */
	}
}

static inline void mf_end(struct engy_scale_buf *b)
{
	engy_scale_put_compact(b, 0); /* docs */
}

static inline void mf_prim(struct engy_scale_buf *b, uint32_t id, uint8_t prim)
{
	mf_head(b, id, NULL);
	engy_scale_put_u8(b, 5);
	engy_scale_put_u8(b, prim);
	mf_end(b);
}

static inline void mf_composite(struct engy_scale_buf *b, uint32_t id,
				const char *path, const struct mf_field *f)
{
	mf_head(b, id, path);
	engy_scale_put_u8(b, 0);
	mf_fields(b, f);
	mf_end(b);
}

static inline void mf_one(struct engy_scale_buf *b, uint32_t id, uint8_t def,
			  uint32_t ty)
{
	mf_head(b, id, NULL);
	engy_scale_put_u8(b, def); /* 2 sequence, 6 compact */
	engy_scale_put_compact(b, ty);
	mf_end(b);
}

static inline void mf_array(struct engy_scale_buf *b, uint32_t id, uint32_t len,
			    uint32_t ty)
{
	mf_head(b, id, NULL);
	engy_scale_put_u8(b, 3);
	engy_scale_put_u32(b, len);
	engy_scale_put_compact(b, ty);
	mf_end(b);
}

static inline void mf_tuple(struct engy_scale_buf *b, uint32_t id, size_t n,
			    const uint32_t *tys)
{
	size_t i;

	mf_head(b, id, NULL);
	engy_scale_put_u8(b, 4);
	engy_scale_put_compact(b, n);
	for (i = 0; i < n; i++)
		engy_scale_put_compact(b, tys[i]);
	mf_end(b);
}

struct mf_variant {
	const char *name;
	uint8_t index;
	struct mf_field f[5];
};

static inline void mf_variants(struct engy_scale_buf *b, uint32_t id,
			       const char *path, const struct mf_variant *v,
			       size_t n)
{
	size_t i;

	mf_head(b, id, path);
	engy_scale_put_u8(b, 1);
	engy_scale_put_compact(b, n);
	for (i = 0; i < n; i++) {
		put_str(b, v[i].name);
		mf_fields(b, v[i].f);
		engy_scale_put_u8(b, v[i].index);
		engy_scale_put_compact(b, 0);
	}
	mf_end(b);
}

#define MF_V(...)                                                              \
	(const struct mf_variant[])                                            \
	{                                                                      \
		__VA_ARGS__                                                    \
	}
#define MF_F(...)                                                              \
	(const struct mf_field[])                                              \
	{                                                                      \
		__VA_ARGS__, MF_END                                            \
	}

/* Type ids of the fixture. */
enum {
	T_U8,
	T_U16,
	T_U32,
	T_U64,
	T_BOOL,
	T_H256,
	T_ACCOUNT,
	T_NETUID,
	T_VEC_U16,
	T_SUB_CALL,
	T_SUB_ERROR,
	T_VEC_BOOL,
	T_VEC_U64,
	T_PHASE,
	T_INFO,
	T_COMPACT_U64,
	T_MODULE_ERROR,
	T_U8X4,
	T_DISPATCH_ERROR,
	T_TOKEN_ERROR,
	T_SYS_EVENT,
	T_SUB_EVENT,
	T_RT_EVENT,
	T_VEC_H256,
	T_RECORD,
	T_VEC_RECORD,
	T_ERA,
	T_COMPACT_U32,
	T_CHECK_NONCE,
	T_CHARGE,
	T_UNIT,
	T_PHANTOM,
	T_MODE,
	T_CHECK_MH,
	T_OPTION_H256,
	T_SYS_CALL,
	T_VEC_U8,
	T_SYS_ERROR,
	T_BITS,
	T_LSB0,
	T_U128,
	T_COMPACT_U128,
	T_KEY_U16U16,
	T_KEY_U16ACC,
	T_STR,
	T_N
};

static inline void mf_types(struct engy_scale_buf *b)
{
	static const uint32_t k1[] = { T_U16, T_U16 },
			      k2[] = { T_U16, T_ACCOUNT };

	engy_scale_put_compact(b, T_N);
	mf_prim(b, T_U8, 3);
	mf_prim(b, T_U16, 4);
	mf_prim(b, T_U32, 5);
	mf_prim(b, T_U64, 6);
	mf_prim(b, T_BOOL, 0);
	mf_array(b, T_H256, 32, T_U8);
	mf_composite(b, T_ACCOUNT, "AccountId32", MF_F({ NULL, T_H256 }));
	mf_composite(b, T_NETUID, "NetUid", MF_F({ NULL, T_U16 }));
	mf_one(b, T_VEC_U16, 2, T_U16);
	mf_variants(b, T_SUB_CALL, "Call",
		    MF_V({ "set_weights",
			   0,
			   { { "netuid", T_NETUID },
			     { "dests", T_VEC_U16 },
			     { "weights", T_VEC_U16 },
			     { "version_key", T_U64 },
			     MF_END } },
			 { "commit_weights",
			   96,
			   { { "netuid", T_NETUID },
			     { "commit_hash", T_H256 },
			     MF_END } }),
		    2);
	mf_variants(b, T_SUB_ERROR, "Error",
		    MF_V({ "HotKeyNotRegisteredInSubNet", 4, { MF_END } },
			 { "NeuronNoValidatorPermit", 15, { MF_END } },
			 { "SettingWeightsTooFast", 29, { MF_END } }),
		    3);
	mf_one(b, T_VEC_BOOL, 2, T_BOOL);
	mf_one(b, T_VEC_U64, 2, T_U64);
	mf_variants(b, T_PHASE, "Phase",
		    MF_V({ "ApplyExtrinsic", 0, { { NULL, T_U32 }, MF_END } },
			 { "Finalization", 1, { MF_END } },
			 { "Initialization", 2, { MF_END } }),
		    3);
	mf_composite(b, T_INFO, "DispatchInfo",
		     MF_F({ "weight", T_COMPACT_U64 }, { "class", T_U8 },
			  { "pays_fee", T_U8 }));
	mf_one(b, T_COMPACT_U64, 6, T_U64);
	mf_composite(b, T_MODULE_ERROR, "ModuleError",
		     MF_F({ "index", T_U8 }, { "error", T_U8X4 }));
	mf_array(b, T_U8X4, 4, T_U8);
	mf_variants(b, T_DISPATCH_ERROR, "DispatchError",
		    MF_V({ "Other", 0, { MF_END } },
			 { "BadOrigin", 2, { MF_END } },
			 { "Module", 3, { { NULL, T_MODULE_ERROR }, MF_END } },
			 { "Token", 7, { { NULL, T_TOKEN_ERROR }, MF_END } }),
		    4);
	mf_variants(b, T_TOKEN_ERROR, "TokenError",
		    MF_V({ "FundsUnavailable", 0, { MF_END } },
			 { "OnlyProvider", 1, { MF_END } }),
		    2);
	mf_variants(b, T_SYS_EVENT, "Event",
		    MF_V({ "ExtrinsicSuccess",
			   0,
			   { { "dispatch_info", T_INFO }, MF_END } },
			 { "ExtrinsicFailed",
			   1,
			   { { "dispatch_error", T_DISPATCH_ERROR },
			     { "dispatch_info", T_INFO },
			     MF_END } },
			 { "Remarked",
			   7,
			   { { "sender", T_ACCOUNT },
			     { "hash", T_H256 },
			     MF_END } }),
		    3);
	mf_variants(
		b, T_SUB_EVENT, "Event",
		MF_V({ "WeightsSet",
		       0,
		       { { NULL, T_U16 }, { NULL, T_U16 }, MF_END } },
		     { "StakeAdded",
		       1,
		       { { NULL, T_COMPACT_U128 }, { NULL, T_STR }, MF_END } },
		     { "Bits", 2, { { NULL, T_BITS }, MF_END } }),
		3);
	mf_variants(b, T_RT_EVENT, "RuntimeEvent",
		    MF_V({ "System", 0, { { NULL, T_SYS_EVENT }, MF_END } },
			 { "SubtensorModule",
			   7,
			   { { NULL, T_SUB_EVENT }, MF_END } }),
		    2);
	mf_one(b, T_VEC_H256, 2, T_H256);
	mf_composite(b, T_RECORD, "EventRecord",
		     MF_F({ "phase", T_PHASE }, { "event", T_RT_EVENT },
			  { "topics", T_VEC_H256 }));
	mf_one(b, T_VEC_RECORD, 2, T_RECORD);
	mf_variants(b, T_ERA, "Era",
		    MF_V({ "Immortal", 0, { MF_END } },
			 { "Mortal1", 1, { { NULL, T_U8 }, MF_END } }),
		    2);
	mf_one(b, T_COMPACT_U32, 6, T_U32);
	mf_composite(b, T_CHECK_NONCE, "CheckNonce",
		     MF_F({ NULL, T_COMPACT_U32 }));
	mf_composite(b, T_CHARGE, "ChargeTransactionPayment",
		     MF_F({ NULL, T_COMPACT_U64 }));
	mf_tuple(b, T_UNIT, 0, NULL);
	mf_composite(b, T_PHANTOM, "Phantom", MF_F({ NULL, T_UNIT }));
	mf_variants(b, T_MODE, "Mode",
		    MF_V({ "Disabled", 0, { MF_END } },
			 { "Enabled", 1, { MF_END } }),
		    2);
	mf_composite(b, T_CHECK_MH, "CheckMetadataHash",
		     MF_F({ "mode", T_MODE }));
	mf_variants(b, T_OPTION_H256, "Option",
		    MF_V({ "None", 0, { MF_END } },
			 { "Some", 1, { { NULL, T_H256 }, MF_END } }),
		    2);
	mf_variants(b, T_SYS_CALL, "Call",
		    MF_V({ "remark", 0, { { "remark", T_VEC_U8 }, MF_END } }),
		    1);
	mf_one(b, T_VEC_U8, 2, T_U8);
	mf_variants(b, T_SYS_ERROR, "Error",
		    MF_V({ "InvalidSpecName", 0, { MF_END } }), 1);
	mf_head(b, T_BITS, "BitVec");
	engy_scale_put_u8(b, 7);
	engy_scale_put_compact(b, T_U8);
	engy_scale_put_compact(b, T_LSB0);
	mf_end(b);
	mf_composite(b, T_LSB0, "Lsb0", MF_F({ NULL, T_UNIT }));
	mf_prim(b, T_U128, 7);
	mf_one(b, T_COMPACT_U128, 6, T_U128);
	mf_tuple(b, T_KEY_U16U16, 2, k1);
	mf_tuple(b, T_KEY_U16ACC, 2, k2);
	mf_prim(b, T_STR, 2);
}

/* One storage entry: @hashers NULL for a plain value. */
static inline void mf_entry(struct engy_scale_buf *b, const char *name,
			    uint8_t modifier, const char *hashers, uint32_t key,
			    uint32_t value, const char *def_hex)
{
	size_t n;
	uint8_t *def = unhex(def_hex, &n);

	put_str(b, name);
	engy_scale_put_u8(b, modifier);
	if (!hashers) {
		engy_scale_put_u8(b, 0);
		engy_scale_put_compact(b, value);
	} else {
		engy_scale_put_u8(b, 1);
		engy_scale_put_vec(b, hashers, strlen(hashers));
		engy_scale_put_compact(b, key);
		engy_scale_put_compact(b, value);
	}
	engy_scale_put_vec(b, def, n);
	engy_scale_put_compact(b, 1); /* one doc line */
	put_str(b, "docs are skipped");
	free(def);
}

static inline void mf_pallet_tail(struct engy_scale_buf *b, int version,
				  uint8_t index)
{
	engy_scale_put_u8(b, index);
	if (version >= 15)
		engy_scale_put_compact(b, 0); /* pallet docs */
}

struct mf_ext {
	const char *id;
	uint32_t ty, implicit;
};

/* The whole blob.  @exts NULL: subtensor's current list. */
static inline void mf_build(struct engy_scale_buf *b, int version,
			    uint8_t sub_index, const struct mf_ext *exts,
			    size_t n_exts)
{
	static const struct mf_ext current[] = {
		{ "CheckNonZeroSender", T_PHANTOM, T_UNIT },
		{ "CheckSpecVersion", T_UNIT, T_U32 },
		{ "CheckTxVersion", T_UNIT, T_U32 },
		{ "CheckGenesis", T_UNIT, T_H256 },
		{ "CheckMortality", T_ERA, T_H256 },
		{ "CheckNonce", T_CHECK_NONCE, T_UNIT },
		{ "CheckWeight", T_PHANTOM, T_UNIT },
		{ "ChargeTransactionPayment", T_CHARGE, T_UNIT },
		{ "SudoTransactionExtension", T_PHANTOM, T_UNIT },
		{ "CheckShieldedTxValidity", T_PHANTOM, T_UNIT },
		{ "SubtensorTransactionExtension", T_PHANTOM, T_UNIT },
		{ "DrandPriority", T_PHANTOM, T_UNIT },
		{ "CheckMetadataHash", T_CHECK_MH, T_OPTION_H256 },
	};
	size_t i;

	if (!exts) {
		exts = current;
		n_exts = sizeof(current) / sizeof(current[0]);
	}
	engy_scale_put(b, "meta", 4);
	engy_scale_put_u8(b, (uint8_t)version);
	mf_types(b);
	engy_scale_put_compact(b, 2); /* pallets */
	/* System */
	put_str(b, "System");
	engy_scale_put_u8(b, 1);
	put_str(b, "System");
	engy_scale_put_compact(b, 2);
	mf_entry(b, "Number", 1, NULL, 0, T_U32, "00000000");
	mf_entry(b, "Events", 1, NULL, 0, T_VEC_RECORD, "00");
	engy_scale_put_u8(b, 1);
	engy_scale_put_compact(b, T_SYS_CALL);
	engy_scale_put_u8(b, 1);
	engy_scale_put_compact(b, T_SYS_EVENT);
	engy_scale_put_compact(b, 1); /* one constant */
	put_str(b, "BlockHashCount");
	engy_scale_put_compact(b, T_U32);
	engy_scale_put_vec(b, "\x60\x09\x00\x00", 4);
	engy_scale_put_compact(b, 0);
	engy_scale_put_u8(b, 1);
	engy_scale_put_compact(b, T_SYS_ERROR);
	mf_pallet_tail(b, version, 0);
	/* SubtensorModule */
	put_str(b, "SubtensorModule");
	engy_scale_put_u8(b, 1);
	put_str(b, "SubtensorModule");
	engy_scale_put_compact(b, 9);
	mf_entry(b, "Keys", 1, "\x06\x06", T_KEY_U16U16, T_ACCOUNT,
		 "0000000000000000000000000000000000000000000000000000000000000"
		 "000");
	mf_entry(b, "Uids", 0, "\x06\x02", T_KEY_U16ACC, T_U16, "00");
	mf_entry(b, "SubnetworkN", 1, "\x06", T_U16, T_U16, "0000");
	mf_entry(b, "WeightsSetRateLimit", 1, "\x06", T_U16, T_U64,
		 "6400000000000000");
	mf_entry(b, "CommitRevealWeightsEnabled", 1, "\x06", T_U16, T_BOOL,
		 "01");
	mf_entry(b, "ValidatorPermit", 1, "\x06", T_U16, T_VEC_BOOL, "00");
	mf_entry(b, "LastUpdate", 1, "\x06", T_U16, T_VEC_U64, "00");
	mf_entry(b, "RevealPeriodEpochs", 1, "\x05", T_U16, T_U64,
		 "0100000000000000");
	mf_entry(b, "StakeThreshold", 1, NULL, 0, T_U64, "0000000000000000");
	engy_scale_put_u8(b, 1);
	engy_scale_put_compact(b, T_SUB_CALL);
	engy_scale_put_u8(b, 1);
	engy_scale_put_compact(b, T_SUB_EVENT);
	engy_scale_put_compact(b, 0);
	engy_scale_put_u8(b, 1);
	engy_scale_put_compact(b, T_SUB_ERROR);
	mf_pallet_tail(b, version, sub_index);
	/* extrinsic */
	if (version == 14) {
		engy_scale_put_compact(b, T_UNIT);
		engy_scale_put_u8(b, 4);
	} else {
		engy_scale_put_u8(b, 4);
		for (i = 0; i < 4; i++)
			engy_scale_put_compact(b, T_UNIT);
	}
	engy_scale_put_compact(b, n_exts);
	for (i = 0; i < n_exts; i++) {
		put_str(b, exts[i].id);
		engy_scale_put_compact(b, exts[i].ty);
		engy_scale_put_compact(b, exts[i].implicit);
	}
	engy_scale_put_compact(b, T_UNIT); /* the runtime type */
	if (version >= 15) {
		engy_scale_put_compact(b, 0); /* apis */
		engy_scale_put_compact(b, T_UNIT);
		engy_scale_put_compact(b, T_RT_EVENT);
		engy_scale_put_compact(b, T_UNIT);
		engy_scale_put_compact(b, 0); /* custom */
	}
	ck_assert_int_eq(b->err, 0);
}

#endif /* ENGY_META_FIXTURE_H */
