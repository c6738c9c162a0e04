/* SPDX-License-Identifier: MIT */
/*
 * Using parsed metadata: lookups by name, storage keys with the declared
 * hashers, walking values by type, and the outcome of an extrinsic from a
 * block's events.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errbuf.h"
#include "metadata.h"
#include "xxhash.h"

const struct engy_meta_type *engy_meta_type(const struct engy_metadata *md,
					    uint32_t id)
{
	return id < md->n_types ? &md->types[id] : NULL;
}

const struct engy_meta_pallet *engy_meta_pallet(const struct engy_metadata *md,
						const char *name)
{
	uint32_t i;

	for (i = 0; i < md->n_pallets; i++)
		if (strcmp(md->pallets[i].name, name) == 0)
			return &md->pallets[i];
	return NULL;
}

const struct engy_meta_pallet *
engy_meta_pallet_by_index(const struct engy_metadata *md, uint8_t index)
{
	uint32_t i;

	for (i = 0; i < md->n_pallets; i++)
		if (md->pallets[i].index == index)
			return &md->pallets[i];
	return NULL;
}

const struct engy_meta_variant *
engy_meta_variant(const struct engy_metadata *md, uint32_t type,
		  const char *name)
{
	const struct engy_meta_type *t = engy_meta_type(md, type);
	uint32_t i;

	if (!t || t->def != ENGY_META_VARIANT)
		return NULL;
	for (i = 0; i < t->u.variants.n; i++)
		if (strcmp(t->u.variants.v[i].name, name) == 0)
			return &t->u.variants.v[i];
	return NULL;
}

const struct engy_meta_variant *
engy_meta_variant_at(const struct engy_metadata *md, uint32_t type,
		     uint8_t index)
{
	const struct engy_meta_type *t = engy_meta_type(md, type);
	uint32_t i;

	if (!t || t->def != ENGY_META_VARIANT)
		return NULL;
	for (i = 0; i < t->u.variants.n; i++)
		if (t->u.variants.v[i].index == index)
			return &t->u.variants.v[i];
	return NULL;
}

const struct engy_meta_entry *engy_meta_entry(const struct engy_metadata *md,
					      const char *pallet,
					      const char *item)
{
	const struct engy_meta_pallet *p = engy_meta_pallet(md, pallet);
	uint32_t i;

	if (!p)
		return NULL;
	for (i = 0; i < p->n_entries; i++)
		if (strcmp(p->entries[i].name, item) == 0)
			return &p->entries[i];
	return NULL;
}

int engy_meta_call(const struct engy_metadata *md, const char *pallet,
		   const char *call, uint8_t *pallet_index, uint8_t *call_index,
		   const struct engy_meta_variant **out)
{
	const struct engy_meta_pallet *p = engy_meta_pallet(md, pallet);
	const struct engy_meta_variant *v;

	if (!p || !p->has_calls)
		return -ENOENT;
	v = engy_meta_variant(md, p->calls, call);
	if (!v)
		return -ENOENT;
	*pallet_index = p->index;
	*call_index = v->index;
	if (out)
		*out = v;
	return 0;
}

void engy_storage_hash(uint8_t hasher, const uint8_t *key, size_t n,
		       struct engy_scale_buf *out)
{
	uint8_t h[32];

	switch (hasher) {
	case ENGY_HASH_BLAKE2_128:
	case ENGY_HASH_BLAKE2_128_CONCAT:
		engy_blake2_128(h, key, n);
		engy_scale_put(out, h, 16);
		break;
	case ENGY_HASH_BLAKE2_256:
		engy_blake2_256(h, key, n);
		engy_scale_put(out, h, 32);
		break;
	case ENGY_HASH_TWOX128:
		engy_twox128(h, key, n);
		engy_scale_put(out, h, 16);
		break;
	case ENGY_HASH_TWOX256:
		engy_twox256(h, key, n);
		engy_scale_put(out, h, 32);
		break;
	case ENGY_HASH_TWOX64_CONCAT:
		engy_twox64(h, key, n);
		engy_scale_put(out, h, 8);
		break;
	}
	if (hasher == ENGY_HASH_BLAKE2_128_CONCAT ||
	    hasher == ENGY_HASH_TWOX64_CONCAT || hasher == ENGY_HASH_IDENTITY)
		engy_scale_put(out, key, n);
}

int engy_meta_storage_key(const struct engy_metadata *md, const char *pallet,
			  const char *item, const uint8_t *const *keys,
			  const size_t *key_lens, size_t n_keys, bool prefix_ok,
			  struct engy_scale_buf *out)
{
	const struct engy_meta_pallet *p = engy_meta_pallet(md, pallet);
	const struct engy_meta_entry *e = engy_meta_entry(md, pallet, item);
	uint8_t h[16];
	size_t i;

	if (!p || !e)
		return -ENOENT;
	if (n_keys > e->n_hashers || (!prefix_ok && n_keys != e->n_hashers))
		return -EINVAL;
	engy_twox128(h, p->prefix, strlen(p->prefix));
	engy_scale_put(out, h, 16);
	engy_twox128(h, e->name, strlen(e->name));
	engy_scale_put(out, h, 16);
	for (i = 0; i < n_keys; i++)
		engy_storage_hash(e->hashers[i], keys[i], key_lens[i], out);
	return out->err;
}

uint32_t engy_meta_unwrap(const struct engy_metadata *md, uint32_t type)
{
	int depth;

	for (depth = 0; depth < ENGY_META_MAX_DEPTH; depth++) {
		const struct engy_meta_type *t = engy_meta_type(md, type);

		if (!t)
			break;
		if (t->def == ENGY_META_COMPOSITE && t->u.fields.n == 1)
			type = t->u.fields.v[0].type;
		else if (t->def == ENGY_META_TUPLE && t->u.tuple.n == 1)
			type = t->u.tuple.v[0];
		else
			break;
	}
	return type;
}

bool engy_meta_is_prim(const struct engy_metadata *md, uint32_t type,
		       uint8_t prim)
{
	const struct engy_meta_type *t =
		engy_meta_type(md, engy_meta_unwrap(md, type));

	return t && t->def == ENGY_META_PRIMITIVE && t->u.prim == prim;
}

bool engy_meta_is_seq_of(const struct engy_metadata *md, uint32_t type,
			 uint8_t prim)
{
	const struct engy_meta_type *t =
		engy_meta_type(md, engy_meta_unwrap(md, type));

	return t && t->def == ENGY_META_SEQUENCE &&
	       engy_meta_is_prim(md, t->u.elem, prim);
}

static bool zero_size(const struct engy_metadata *md, uint32_t type, int depth)
{
	const struct engy_meta_type *t = engy_meta_type(md, type);
	uint32_t i;

	if (!t || depth > ENGY_META_MAX_DEPTH)
		return false;
	switch (t->def) {
	case ENGY_META_COMPOSITE:
		for (i = 0; i < t->u.fields.n; i++)
			if (!zero_size(md, t->u.fields.v[i].type, depth + 1))
				return false;
		return true;
	case ENGY_META_TUPLE:
		for (i = 0; i < t->u.tuple.n; i++)
			if (!zero_size(md, t->u.tuple.v[i], depth + 1))
				return false;
		return true;
	case ENGY_META_ARRAY:
		return t->u.array.len == 0 ||
		       zero_size(md, t->u.array.elem, depth + 1);
	default:
		return false;
	}
}

bool engy_meta_zero_size(const struct engy_metadata *md, uint32_t type)
{
	return zero_size(md, type, 0);
}

/* Any compact, whatever its width (Compact<u128> included). */
static int skip_compact(struct engy_scale_rd *r)
{
	uint8_t b;

	if (engy_scale_u8(r, &b))
		return r->err;
	switch (b & 3) {
	case 0:
		return 0;
	case 1:
		return engy_scale_skip(r, 1);
	case 2:
		return engy_scale_skip(r, 3);
	}
	return engy_scale_skip(r, (size_t)(b >> 2) + 4);
}

static const uint8_t prim_size[] = {
	[ENGY_PRIM_BOOL] = 1, [ENGY_PRIM_CHAR] = 4,  [ENGY_PRIM_STR] = 0,
	[ENGY_PRIM_U8] = 1,   [ENGY_PRIM_U16] = 2,   [ENGY_PRIM_U32] = 4,
	[ENGY_PRIM_U64] = 8,  [ENGY_PRIM_U128] = 16, [ENGY_PRIM_U256] = 32,
	[ENGY_PRIM_I8] = 1,   [ENGY_PRIM_I16] = 2,   [ENGY_PRIM_I32] = 4,
	[ENGY_PRIM_I64] = 8,  [ENGY_PRIM_I128] = 16, [ENGY_PRIM_I256] = 32,
};

static int skip(const struct engy_metadata *md, uint32_t type,
		struct engy_scale_rd *r, int depth);

/* @n values of @elem: bounded by the input unless they take no bytes. */
static int skip_n(const struct engy_metadata *md, uint32_t elem, uint64_t n,
		  struct engy_scale_rd *r, int depth)
{
	uint64_t i;

	if (engy_meta_is_prim(md, elem, ENGY_PRIM_U8) ||
	    engy_meta_is_prim(md, elem, ENGY_PRIM_I8))
		return n > engy_scale_left(r) ? engy_scale_fail(r, -EMSGSIZE)
					      : engy_scale_skip(r, (size_t)n);
	if (engy_meta_zero_size(md, elem))
		return r->err;
	if (n > engy_scale_left(r))
		return engy_scale_fail(r, -EMSGSIZE);
	for (i = 0; i < n && !r->err; i++)
		skip(md, elem, r, depth + 1);
	return r->err;
}

static int skip(const struct engy_metadata *md, uint32_t type,
		struct engy_scale_rd *r, int depth)
{
	const struct engy_meta_type *t = engy_meta_type(md, type);
	uint32_t i;
	uint64_t n;

	if (r->err)
		return r->err;
	if (!t)
		return engy_scale_fail(r, -EINVAL);
	if (depth > ENGY_META_MAX_DEPTH)
		return engy_scale_fail(r, -ELOOP);
	switch (t->def) {
	case ENGY_META_COMPOSITE:
		for (i = 0; i < t->u.fields.n && !r->err; i++)
			skip(md, t->u.fields.v[i].type, r, depth + 1);
		return r->err;
	case ENGY_META_VARIANT: {
		const struct engy_meta_variant *v;
		uint8_t idx;

		if (engy_scale_u8(r, &idx))
			return r->err;
		v = engy_meta_variant_at(md, type, idx);
		if (!v)
			return engy_scale_fail(r, -EINVAL);
		for (i = 0; i < v->n_fields && !r->err; i++)
			skip(md, v->fields[i].type, r, depth + 1);
		return r->err;
	}
	case ENGY_META_SEQUENCE:
		if (engy_scale_compact(r, &n))
			return r->err;
		return skip_n(md, t->u.elem, n, r, depth);
	case ENGY_META_ARRAY:
		return skip_n(md, t->u.array.elem, t->u.array.len, r, depth);
	case ENGY_META_TUPLE:
		for (i = 0; i < t->u.tuple.n && !r->err; i++)
			skip(md, t->u.tuple.v[i], r, depth + 1);
		return r->err;
	case ENGY_META_PRIMITIVE:
		if (t->u.prim == ENGY_PRIM_STR) {
			const uint8_t *p;
			size_t len;

			return engy_scale_vec(r, &p, &len);
		}
		return engy_scale_skip(r, prim_size[t->u.prim]);
	case ENGY_META_COMPACT:
		return skip_compact(r);
	case ENGY_META_BITSEQ: {
		const struct engy_meta_type *st = engy_meta_type(
			md, engy_meta_unwrap(md, t->u.bits.store));
		uint64_t unit;

		if (!st || st->def != ENGY_META_PRIMITIVE ||
		    st->u.prim < ENGY_PRIM_U8 || st->u.prim > ENGY_PRIM_U64)
			return engy_scale_fail(r, -EINVAL);
		unit = prim_size[st->u.prim];
		if (engy_scale_compact(r, &n))
			return r->err;
		n = (n + 8 * unit - 1) / (8 * unit) * unit;
		if (n > engy_scale_left(r))
			return engy_scale_fail(r, -EMSGSIZE);
		return engy_scale_skip(r, (size_t)n);
	}
	}
	return engy_scale_fail(r, -EINVAL);
}

int engy_meta_skip(const struct engy_metadata *md, uint32_t type,
		   struct engy_scale_rd *r)
{
	return skip(md, type, r, 0);
}

/* A field's type, unwrapped, as a u8 or the first byte of a [u8; N]. */
static int read_byte(const struct engy_metadata *md, uint32_t type,
		     struct engy_scale_rd *r, uint8_t *b)
{
	const struct engy_meta_type *t =
		engy_meta_type(md, engy_meta_unwrap(md, type));

	if (t && t->def == ENGY_META_PRIMITIVE && t->u.prim == ENGY_PRIM_U8)
		return engy_scale_u8(r, b);
	if (t && t->def == ENGY_META_ARRAY && t->u.array.len >= 1 &&
	    engy_meta_is_prim(md, t->u.array.elem, ENGY_PRIM_U8)) {
		engy_scale_u8(r, b);
		return engy_scale_skip(r, t->u.array.len - 1);
	}
	return engy_scale_fail(r, -EINVAL);
}

/* DispatchError -> a name, reading exactly its bytes. */
static int dispatch_error(const struct engy_metadata *md, uint32_t type,
			  struct engy_scale_rd *r, char *name, size_t cap)
{
	const struct engy_meta_variant *v;
	const struct engy_meta_type *ft;
	uint32_t i;
	uint8_t idx;

	if (engy_scale_u8(r, &idx))
		return r->err;
	v = engy_meta_variant_at(md, type, idx);
	if (!v)
		return engy_scale_fail(r, -EINVAL);
	snprintf(name, cap, "%s", v->name);
	if (v->n_fields != 1)
		goto rest;
	ft = engy_meta_type(md, engy_meta_unwrap(md, v->fields[0].type));
	if (strcmp(v->name, "Module") == 0 && ft &&
	    ft->def == ENGY_META_COMPOSITE && ft->u.fields.n >= 2) {
		const struct engy_meta_pallet *p;
		const struct engy_meta_variant *ev;
		uint8_t pallet = 0, err = 0;

		read_byte(md, ft->u.fields.v[0].type, r, &pallet);
		read_byte(md, ft->u.fields.v[1].type, r, &err);
		for (i = 2; i < ft->u.fields.n; i++)
			engy_meta_skip(md, ft->u.fields.v[i].type, r);
		p = engy_meta_pallet_by_index(md, pallet);
		ev = p && p->has_errors
			     ? engy_meta_variant_at(md, p->errors, err)
			     : NULL;
		if (ev)
			snprintf(name, cap, "%s.%s", p->name, ev->name);
		else
			snprintf(name, cap, "Module(%u).Error(%u)", pallet,
				 err);
		return r->err;
	}
	if (ft && ft->def == ENGY_META_VARIANT) {
		const struct engy_meta_variant *iv;
		size_t n = strlen(name);

		if (engy_scale_u8(r, &idx))
			return r->err;
		iv = engy_meta_variant_at(
			md, engy_meta_unwrap(md, v->fields[0].type), idx);
		if (!iv)
			return engy_scale_fail(r, -EINVAL);
		snprintf(name + n, cap - n, ".%s", iv->name);
		for (i = 0; i < iv->n_fields; i++)
			engy_meta_skip(md, iv->fields[i].type, r);
		return r->err;
	}
rest:
	for (i = 0; i < v->n_fields; i++)
		engy_meta_skip(md, v->fields[i].type, r);
	return r->err;
}

struct rec {
	bool apply; /* phase ApplyExtrinsic */
	uint32_t index;
};

static int phase(const struct engy_metadata *md, uint32_t type,
		 struct engy_scale_rd *r, struct rec *rec)
{
	const struct engy_meta_variant *v;
	uint32_t i;
	uint8_t idx;

	if (engy_scale_u8(r, &idx))
		return r->err;
	v = engy_meta_variant_at(md, type, idx);
	if (!v)
		return engy_scale_fail(r, -EINVAL);
	rec->apply = strcmp(v->name, "ApplyExtrinsic") == 0 &&
		     v->n_fields == 1 &&
		     engy_meta_is_prim(md, v->fields[0].type, ENGY_PRIM_U32);
	if (rec->apply)
		return engy_scale_u32(r, &rec->index);
	for (i = 0; i < v->n_fields; i++)
		engy_meta_skip(md, v->fields[i].type, r);
	return r->err;
}

static int event(const struct engy_metadata *md, uint32_t type,
		 struct engy_scale_rd *r, const struct rec *rec, uint32_t want,
		 struct engy_meta_outcome *out)
{
	const struct engy_meta_variant *pv, *ev;
	uint32_t i, inner;
	uint8_t idx;

	if (engy_scale_u8(r, &idx))
		return r->err;
	pv = engy_meta_variant_at(md, type, idx);
	if (!pv || pv->n_fields != 1)
		return engy_scale_fail(r, -EINVAL);
	inner = pv->fields[0].type;
	if (engy_scale_u8(r, &idx))
		return r->err;
	ev = engy_meta_variant_at(md, inner, idx);
	if (!ev)
		return engy_scale_fail(r, -EINVAL);
	i = 0;
	if (rec->apply && rec->index == want &&
	    strcmp(pv->name, "System") == 0) {
		if (strcmp(ev->name, "ExtrinsicSuccess") == 0) {
			out->found = true;
			out->success = true;
		} else if (strcmp(ev->name, "ExtrinsicFailed") == 0 &&
			   ev->n_fields >= 1) {
			out->found = true;
			out->success = false;
			dispatch_error(md, ev->fields[0].type, r, out->error,
				       sizeof(out->error));
			i = 1;
		}
	}
	for (; i < ev->n_fields; i++)
		engy_meta_skip(md, ev->fields[i].type, r);
	return r->err;
}

int engy_meta_outcome(const struct engy_metadata *md, const uint8_t *events,
		      size_t len, uint32_t index, struct engy_meta_outcome *out,
		      char *err, size_t errlen)
{
	const struct engy_meta_entry *e =
		engy_meta_entry(md, "System", "Events");
	const struct engy_meta_type *seq, *rt;
	struct engy_scale_rd r;
	uint64_t n, k;

	memset(out, 0, sizeof(out[0]));
	seq = e ? engy_meta_type(md, e->value) : NULL;
	rt = seq && seq->def == ENGY_META_SEQUENCE
		     ? engy_meta_type(md, seq->u.elem)
		     : NULL;
	if (!rt || rt->def != ENGY_META_COMPOSITE) {
		engy_seterr(
			err, errlen,
			"the runtime has no System.Events of event records");
		return -ENOENT;
	}
	engy_scale_rd_init(&r, events, len);
	if (engy_scale_compact(&r, &n) == 0 && n > engy_scale_left(&r))
		engy_scale_fail(&r, -EMSGSIZE);
	for (k = 0; k < n && !r.err; k++) {
		struct rec rec = { 0 };
		uint32_t i;

		for (i = 0; i < rt->u.fields.n && !r.err; i++) {
			const struct engy_meta_field *f = &rt->u.fields.v[i];

			if (f->name && strcmp(f->name, "phase") == 0)
				phase(md, f->type, &r, &rec);
			else if (f->name && strcmp(f->name, "event") == 0)
				event(md, f->type, &r, &rec, index, out);
			else
				engy_meta_skip(md, f->type, &r);
		}
	}
	if (!r.err && engy_scale_left(&r))
		engy_scale_fail(&r, -EINVAL);
	if (r.err) {
		engy_seterr(
			err, errlen,
			"events do not decode with this metadata (byte %zu)",
			r.pos);
		return -EINVAL;
	}
	return 0;
}
