/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the metadata parser and the value walker: any input is parsed as
 * metadata; what parses is used the way chain-subtensor uses it (lookups,
 * the extension layout, storage keys), and the input's tail is walked as
 * a value of every type and as a block's events.
 * Consistency of what parsed: every pallet, call and storage entry it
 * lists is found again by name (and a pallet and a call by index) with
 * the same indices; each entry's storage key is twox128(prefix) ||
 * twox128(name) followed by one hash per hasher of the length that
 * hasher gives, a *_concat or identity hash ending in the key itself.
 */
#include <stdlib.h>
#include <string.h>

#include "extrinsic.h"
#include "fuzz.h"
#include "metadata.h"
#include "xxhash.h"

/* The bytes @hasher puts in a storage key for a key of @n bytes; 0 for
 * one metadata does not name.  *@concat: the key follows the hash. */
static size_t hash_len(uint8_t hasher, size_t n, int *concat)
{
	*concat = 0;
	switch (hasher) {
	case ENGY_HASH_BLAKE2_128:
	case ENGY_HASH_TWOX128:
		return 16;
	case ENGY_HASH_BLAKE2_256:
	case ENGY_HASH_TWOX256:
		return 32;
	case ENGY_HASH_BLAKE2_128_CONCAT:
		*concat = 1;
		return 16 + n;
	case ENGY_HASH_TWOX64_CONCAT:
		*concat = 1;
		return 8 + n;
	case ENGY_HASH_IDENTITY:
		*concat = 1;
		return n;
	}
	return 0;
}

static void check_calls(const struct engy_metadata *md,
			const struct engy_meta_pallet *p)
{
	const struct engy_meta_type *t = engy_meta_type(md, p->calls);
	const struct engy_meta_variant *v, *w;
	uint8_t pi, ci;
	uint32_t i;

	if (!p->has_calls || !t || t->def != ENGY_META_VARIANT)
		return;
	for (i = 0; i < t->u.variants.n; i++) {
		v = &t->u.variants.v[i];
		if (engy_meta_call(md, p->name, v->name, &pi, &ci, &w) ||
		    pi != p->index || !w || strcmp(w->name, v->name) ||
		    ci != w->index)
			abort();
		w = engy_meta_variant_at(md, p->calls, v->index);
		if (!w || w->index != v->index)
			abort();
	}
}

static void check_entry(const struct engy_metadata *md,
			const struct engy_meta_pallet *p,
			const struct engy_meta_entry *e)
{
	static const uint8_t key[3] = { 53, 0, 7 };
	const uint8_t *keys[8];
	size_t lens[8], want = 32, i, l;
	struct engy_scale_buf b;
	uint8_t h[16];
	int concat;

	if (engy_meta_entry(md, p->name, e->name) != e || e->n_hashers > 8)
		return; /* a repeated name: the first one is found */
	for (i = 0; i < e->n_hashers; i++) {
		keys[i] = key;
		lens[i] = sizeof(key);
		l = hash_len(e->hashers[i], sizeof(key), &concat);
		if (!l)
			return;
		want += l;
	}
	engy_scale_buf_init(&b);
	if (engy_meta_storage_key(md, p->name, e->name, keys, lens,
				  e->n_hashers, false, &b) ||
	    b.len != want)
		abort();
	engy_twox128(h, p->prefix, strlen(p->prefix));
	if (memcmp(b.p, h, 16))
		abort();
	engy_twox128(h, e->name, strlen(e->name));
	if (memcmp(b.p + 16, h, 16))
		abort();
	for (i = 0, want = 32; i < e->n_hashers; i++) {
		want += hash_len(e->hashers[i], sizeof(key), &concat);
		if (concat &&
		    memcmp(b.p + want - sizeof(key), key, sizeof(key)))
			abort();
	}
	engy_scale_buf_free(&b);
}

static void check_lookups(const struct engy_metadata *md)
{
	const struct engy_meta_pallet *p, *q;
	uint32_t i, k;

	for (i = 0; i < md->n_pallets; i++) {
		p = &md->pallets[i];
		q = engy_meta_pallet(md, p->name);
		if (!q || strcmp(q->name, p->name))
			abort();
		q = engy_meta_pallet_by_index(md, p->index);
		if (!q || q->index != p->index)
			abort();
		if (engy_meta_pallet(md, p->name) != p)
			continue; /* a repeated name: the first one is found */
		check_calls(md, p);
		for (k = 0; p->has_storage && k < p->n_entries; k++)
			check_entry(md, p, &p->entries[k]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_metadata *md;
	struct engy_ext_layout l;
	struct engy_meta_outcome o;
	struct engy_scale_buf b;
	const uint8_t key[2] = { 53, 0 }, *keys[2] = { key, key };
	const size_t lens[2] = { 2, 2 };
	char err[256];
	uint8_t pi, ci;
	uint32_t t;

	if (engy_meta_parse(data, size, &md, err, sizeof(err)))
		return 0;
	engy_ext_layout_meta(&l, md, err, sizeof(err));
	engy_meta_call(md, "SubtensorModule", "set_weights", &pi, &ci, NULL);
	engy_scale_buf_init(&b);
	engy_meta_storage_key(md, "SubtensorModule", "Keys", keys, lens, 2,
			      true, &b);
	engy_scale_buf_free(&b);
	for (t = 0; t < md->n_types && t < 256; t++) {
		struct engy_scale_rd r;

		engy_scale_rd_init(&r, data + size / 2, size - size / 2);
		engy_meta_skip(md, t, &r);
		if (r.pos > size - size / 2)
			abort();
		engy_meta_zero_size(md, t);
	}
	engy_meta_outcome(md, data + size / 2, size - size / 2, 1, &o, err,
			  sizeof(err));
	check_lookups(md);
	engy_meta_free(md);
	return 0;
}
