/* SPDX-License-Identifier: MIT */
/*
 * Substrate runtime metadata, versions 14 and 15 (frame-metadata): the
 * portable type registry, each pallet's index, calls, events, errors and
 * storage entries (with their key hashers and defaults), and the signed
 * extensions.  Parsed fully enough to find call and error indices by name,
 * to build storage keys with the hashers the runtime declares, and to walk
 * any value by its type (the events of a block).  Nothing here is
 * hard-coded for a runtime: names are looked up.
 *
 * Everything parsed lives in one allocation owned by struct engy_metadata;
 * strings are NUL-terminated copies.
 */
#ifndef ENGY_METADATA_H
#define ENGY_METADATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scale.h"

#define ENGY_META_MAGIC	    0x6174656du /* "meta" as u32 LE */
#define ENGY_META_MAX_DEPTH 64		/* nesting of a walked value */

enum engy_meta_def {
	ENGY_META_COMPOSITE = 0,
	ENGY_META_VARIANT = 1,
	ENGY_META_SEQUENCE = 2,
	ENGY_META_ARRAY = 3,
	ENGY_META_TUPLE = 4,
	ENGY_META_PRIMITIVE = 5,
	ENGY_META_COMPACT = 6,
	ENGY_META_BITSEQ = 7,
};

/* scale-info's primitive codes. */
enum engy_meta_prim {
	ENGY_PRIM_BOOL = 0,
	ENGY_PRIM_CHAR,
	ENGY_PRIM_STR,
	ENGY_PRIM_U8,
	ENGY_PRIM_U16,
	ENGY_PRIM_U32,
	ENGY_PRIM_U64,
	ENGY_PRIM_U128,
	ENGY_PRIM_U256,
	ENGY_PRIM_I8,
	ENGY_PRIM_I16,
	ENGY_PRIM_I32,
	ENGY_PRIM_I64,
	ENGY_PRIM_I128,
	ENGY_PRIM_I256,
};

/* Storage key hashers, in metadata's numbering. */
enum engy_hasher {
	ENGY_HASH_BLAKE2_128 = 0,
	ENGY_HASH_BLAKE2_256 = 1,
	ENGY_HASH_BLAKE2_128_CONCAT = 2,
	ENGY_HASH_TWOX128 = 3,
	ENGY_HASH_TWOX256 = 4,
	ENGY_HASH_TWOX64_CONCAT = 5,
	ENGY_HASH_IDENTITY = 6,
};

struct engy_meta_field {
	const char *name; /* NULL when unnamed */
	uint32_t type;
};

struct engy_meta_variant {
	const char *name;
	uint8_t index;
	uint32_t n_fields;
	struct engy_meta_field *fields;
};

struct engy_meta_type {
	uint8_t def;	  /* enum engy_meta_def */
	const char *path; /* "a::b::Name", "" when none */
	union {
		struct {
			uint32_t n;
			struct engy_meta_field *v;
		} fields; /* COMPOSITE */
		struct {
			uint32_t n;
			struct engy_meta_variant *v;
		} variants;    /* VARIANT */
		uint32_t elem; /* SEQUENCE, COMPACT */
		struct {
			uint32_t len;
			uint32_t elem;
		} array; /* ARRAY */
		struct {
			uint32_t n;
			uint32_t *v;
		} tuple;      /* TUPLE */
		uint8_t prim; /* PRIMITIVE */
		struct {
			uint32_t store, order;
		} bits; /* BITSEQ */
	} u;
};

struct engy_meta_entry {
	const char *name;
	uint8_t modifier; /* 0 Optional, 1 Default */
	bool is_map;
	uint32_t n_hashers;
	uint8_t *hashers; /* enum engy_hasher */
	uint32_t key;	  /* type of the key (a tuple for several) */
	uint32_t value;
	const uint8_t *def; /* the default value's bytes */
	size_t def_len;
};

struct engy_meta_pallet {
	const char *name;
	uint8_t index;
	bool has_calls, has_events, has_errors, has_storage;
	uint32_t calls, events, errors; /* variant type ids */
	const char *prefix;		/* storage prefix */
	uint32_t n_entries;
	struct engy_meta_entry *entries;
};

struct engy_meta_ext {
	const char *identifier;
	uint32_t type;	   /* in the extrinsic ("extra") */
	uint32_t implicit; /* signed only ("additional_signed") */
};

struct engy_metadata {
	uint8_t version; /* 14 or 15 */
	uint32_t n_types;
	struct engy_meta_type *types; /* indexed by type id */
	uint32_t n_pallets;
	struct engy_meta_pallet *pallets;
	uint8_t extrinsic_version;
	uint32_t n_exts;
	struct engy_meta_ext *exts;
	void *arena; /* everything above lives here */
};

/*
 * engy_meta_parse() - parse a metadata blob ("meta" magic, version byte,
 * then the v14 or v15 body) or an Option<OpaqueMetadata> of one (what
 * Metadata_metadata_at_version returns).  Returns 0 and a new metadata
 * in *@out (free with engy_meta_free()), or a negative errno with one line
 * in @err: -EPROTONOSUPPORT for another version, -EINVAL for malformed
 * bytes, -ENOMEM.
 */
int engy_meta_parse(const uint8_t *blob, size_t len, struct engy_metadata **out,
		    char *err, size_t errlen);
void engy_meta_free(struct engy_metadata *md);

/* The type @id, or NULL when out of range. */
const struct engy_meta_type *engy_meta_type(const struct engy_metadata *md,
					    uint32_t id);
const struct engy_meta_pallet *engy_meta_pallet(const struct engy_metadata *md,
						const char *name);
const struct engy_meta_pallet *
engy_meta_pallet_by_index(const struct engy_metadata *md, uint8_t index);
/* A variant of the variant type @type, by name or by index; NULL if none. */
const struct engy_meta_variant *
engy_meta_variant(const struct engy_metadata *md, uint32_t type,
		  const char *name);
const struct engy_meta_variant *
engy_meta_variant_at(const struct engy_metadata *md, uint32_t type,
		     uint8_t index);
const struct engy_meta_entry *engy_meta_entry(const struct engy_metadata *md,
					      const char *pallet,
					      const char *item);

/*
 * engy_meta_call() - pallet and call index of @pallet's call @call, and
 * the call's variant (its fields) in *@v when not NULL.  -ENOENT when the
 * runtime has no such pallet or call.
 */
int engy_meta_call(const struct engy_metadata *md, const char *pallet,
		   const char *call, uint8_t *pallet_index, uint8_t *call_index,
		   const struct engy_meta_variant **v);

/*
 * engy_meta_storage_key() - the key of @pallet's @item with @n_keys SCALE
 * encoded keys (one per hasher of the entry; 0 for a plain value):
 * twox128(prefix) || twox128(item) || hasher(key) ...  Appended to @out.
 * Returns 0, -ENOENT when there is no such entry, -EINVAL when @n_keys
 * differs from the entry's hasher count.  Giving fewer keys than hashers
 * is allowed with @prefix_ok (a prefix for state_getKeysPaged).
 */
int engy_meta_storage_key(const struct engy_metadata *md, const char *pallet,
			  const char *item, const uint8_t *const *keys,
			  const size_t *key_lens, size_t n_keys, bool prefix_ok,
			  struct engy_scale_buf *out);

/* engy_storage_hash() - append @hasher(@key) to @out. */
void engy_storage_hash(uint8_t hasher, const uint8_t *key, size_t n,
		       struct engy_scale_buf *out);

/*
 * engy_meta_skip() - step over one value of @type in @r.  Returns 0 or
 * the reader's error (-EINVAL for a value that breaks its type, -ELOOP
 * beyond ENGY_META_MAX_DEPTH).
 */
int engy_meta_skip(const struct engy_metadata *md, uint32_t type,
		   struct engy_scale_rd *r);

/* engy_meta_zero_size() - true when every value of @type is zero bytes
 * (empty composites and tuples, zero-length arrays, nested). */
bool engy_meta_zero_size(const struct engy_metadata *md, uint32_t type);

/*
 * engy_meta_unwrap() - follow single-field composites and one-element
 * tuples (newtypes such as NetUid(u16)) down to the type that carries the
 * bytes.
 */
uint32_t engy_meta_unwrap(const struct engy_metadata *md, uint32_t type);

/* True when @type (unwrapped) is the primitive @prim. */
bool engy_meta_is_prim(const struct engy_metadata *md, uint32_t type,
		       uint8_t prim);
/* True when @type (unwrapped) is a sequence of the primitive @prim. */
bool engy_meta_is_seq_of(const struct engy_metadata *md, uint32_t type,
			 uint8_t prim);

/*
 * The outcome of one extrinsic, read from a block's System.Events.
 * @error: the dispatch error's name, "Pallet.Variant" for a module error
 * ("SubtensorModule.NeuronNoValidatorPermit"), the variant ("BadOrigin",
 * "Token.FundsUnavailable") otherwise.
 */
struct engy_meta_outcome {
	bool found; /* an ExtrinsicSuccess/Failed for it */
	bool success;
	char error[128];
};

/*
 * engy_meta_outcome() - walk @events (the SCALE value of System.Events)
 * and report extrinsic @index's outcome.  Returns 0 (with found false
 * when no event names it) or a negative errno with @err set.
 */
int engy_meta_outcome(const struct engy_metadata *md, const uint8_t *events,
		      size_t len, uint32_t index, struct engy_meta_outcome *out,
		      char *err, size_t errlen);

#endif /* ENGY_METADATA_H */
