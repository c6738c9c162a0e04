/* SPDX-License-Identifier: MIT */
/*
 * Metadata v14/v15 parsing (frame-metadata's layout).  The registry comes
 * first, so it is parsed whole; docs are skipped; everything kept is
 * copied into an arena owned by the result.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "metadata.h"

struct chunk {
	struct chunk *next;
	size_t used, cap;
	max_align_t data[];
};

struct parser {
	struct engy_scale_rd r;
	struct chunk *arena;
	char *err;
	size_t errlen;
	const char *where; /* what was being read */
};

static void *alloc(struct parser *ps, size_t n)
{
	struct chunk *c = ps->arena;
	void *p;

	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) *
	    sizeof(max_align_t);
	if (!n)
		n = sizeof(max_align_t);
	if (!c || c->cap - c->used < n) {
		size_t cap = n > 65536 ? n : 65536;

		c = calloc(1, sizeof(*c) + cap);
		if (!c) {
			engy_scale_fail(&ps->r, -ENOMEM);
			return NULL;
		}
		c->cap = cap;
		c->next = ps->arena;
		ps->arena = c;
	}
	p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

static void *alloc_n(struct parser *ps, size_t n, size_t size)
{
	if (n && size > SIZE_MAX / n) {
		engy_scale_fail(&ps->r, -ENOMEM);
		return NULL;
	}
	return alloc(ps, n * size);
}

static void arena_free(struct chunk *c)
{
	while (c) {
		struct chunk *next = c->next;

		free(c);
		c = next;
	}
}

static const char *str(struct parser *ps)
{
	const uint8_t *p;
	size_t n;
	char *s;

	if (engy_scale_vec(&ps->r, &p, &n))
		return "";
	if (memchr(p, 0, n)) {
		engy_scale_fail(&ps->r, -EINVAL);
		return "";
	}
	s = alloc(ps, n + 1);
	if (!s)
		return "";
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

static void skip_str(struct parser *ps)
{
	const uint8_t *p;
	size_t n;

	engy_scale_vec(&ps->r, &p, &n);
}

/* A count of items, each at least @min bytes: bounded by what is left. */
static uint32_t count(struct parser *ps, size_t min)
{
	uint32_t n;

	if (engy_scale_compact32(&ps->r, &n))
		return 0;
	if (min && n > engy_scale_left(&ps->r) / min) {
		engy_scale_fail(&ps->r, -EMSGSIZE);
		return 0;
	}
	return n;
}

static void skip_strs(struct parser *ps)
{
	uint32_t i, n = count(ps, 1);

	for (i = 0; i < n && !ps->r.err; i++)
		skip_str(ps);
}

static uint32_t type_id(struct parser *ps)
{
	uint32_t v;

	engy_scale_compact32(&ps->r, &v);
	return v;
}

static bool option(struct parser *ps)
{
	uint8_t b;

	if (engy_scale_u8(&ps->r, &b))
		return false;
	if (b > 1)
		engy_scale_fail(&ps->r, -EINVAL);
	return b == 1;
}

static struct engy_meta_field *fields(struct parser *ps, uint32_t *n_out)
{
	uint32_t i, n = count(ps, 3);
	struct engy_meta_field *f = alloc_n(ps, n, sizeof(*f));

	*n_out = 0;
	if (!f)
		return NULL;
	for (i = 0; i < n && !ps->r.err; i++) {
		f[i].name = option(ps) ? str(ps) : NULL;
		f[i].type = type_id(ps);
		if (option(ps))
			skip_str(ps); /* type_name */
		skip_strs(ps);	      /* docs */
	}
	*n_out = n;
	return f;
}

static void type_def(struct parser *ps, struct engy_meta_type *t)
{
	uint32_t i;

	engy_scale_u8(&ps->r, &t->def);
	switch (t->def) {
	case ENGY_META_COMPOSITE:
		t->u.fields.v = fields(ps, &t->u.fields.n);
		break;
	case ENGY_META_VARIANT: {
		uint32_t n = count(ps, 4);
		struct engy_meta_variant *v = alloc_n(ps, n, sizeof(*v));

		if (!v)
			return;
		for (i = 0; i < n && !ps->r.err; i++) {
			v[i].name = str(ps);
			v[i].fields = fields(ps, &v[i].n_fields);
			engy_scale_u8(&ps->r, &v[i].index);
			skip_strs(ps);
		}
		t->u.variants.n = n;
		t->u.variants.v = v;
		break;
	}
	case ENGY_META_SEQUENCE:
	case ENGY_META_COMPACT:
		t->u.elem = type_id(ps);
		break;
	case ENGY_META_ARRAY:
		engy_scale_u32(&ps->r, &t->u.array.len);
		t->u.array.elem = type_id(ps);
		break;
	case ENGY_META_TUPLE: {
		uint32_t n = count(ps, 1);
		uint32_t *v = alloc_n(ps, n, sizeof(*v));

		if (!v)
			return;
		for (i = 0; i < n && !ps->r.err; i++)
			v[i] = type_id(ps);
		t->u.tuple.n = n;
		t->u.tuple.v = v;
		break;
	}
	case ENGY_META_PRIMITIVE:
		engy_scale_u8(&ps->r, &t->u.prim);
		if (t->u.prim > ENGY_PRIM_I256)
			engy_scale_fail(&ps->r, -EINVAL);
		break;
	case ENGY_META_BITSEQ:
		t->u.bits.store = type_id(ps);
		t->u.bits.order = type_id(ps);
		break;
	default:
		engy_scale_fail(&ps->r, -EINVAL);
	}
}

static const char *path(struct parser *ps)
{
	uint32_t i, n = count(ps, 1);
	size_t start = ps->r.pos, total = 0, at = 0;
	struct engy_scale_rd r;
	char *s;

	/* Two passes over the same bytes: measure, then join with "::". */
	for (i = 0; i < n && !ps->r.err; i++) {
		const uint8_t *p;
		size_t len;

		engy_scale_vec(&ps->r, &p, &len);
		total += len + 2;
	}
	if (ps->r.err || !(s = alloc(ps, total + 1)))
		return "";
	engy_scale_rd_init(&r, ps->r.p + start, ps->r.pos - start);
	for (i = 0; i < n; i++) {
		const uint8_t *p;
		size_t len;

		engy_scale_vec(&r, &p, &len);
		if (i) {
			memcpy(s + at, "::", 2);
			at += 2;
		}
		if (memchr(p, 0, len))
			engy_scale_fail(&ps->r, -EINVAL);
		memcpy(s + at, p, len);
		at += len;
	}
	s[at] = '\0';
	return s;
}

static int registry(struct parser *ps, struct engy_metadata *md)
{
	uint32_t i, j, n;

	ps->where = "type registry";
	n = count(ps, 4);
	md->types = alloc_n(ps, n, sizeof(*md->types));
	if (!md->types)
		return ps->r.err;
	md->n_types = n;
	for (i = 0; i < n && !ps->r.err; i++) {
		struct engy_meta_type *t = &md->types[i];
		uint32_t id = type_id(ps), np;

		if (!ps->r.err && id != i)
			return engy_scale_fail(&ps->r, -EINVAL);
		t->path = path(ps);
		np = count(ps, 2);
		for (j = 0; j < np && !ps->r.err; j++) {
			skip_str(ps);
			if (option(ps))
				type_id(ps);
		}
		type_def(ps, t);
		skip_strs(ps);
	}
	if (ps->r.err)
		return ps->r.err;
	/* Every reference must name a type of the registry. */
	for (i = 0; i < n; i++) {
		const struct engy_meta_type *t = &md->types[i];
		bool bad = false;

		switch (t->def) {
		case ENGY_META_COMPOSITE:
			for (j = 0; j < t->u.fields.n; j++)
				bad |= t->u.fields.v[j].type >= n;
			break;
		case ENGY_META_VARIANT:
			for (j = 0; j < t->u.variants.n; j++) {
				const struct engy_meta_variant *v =
					&t->u.variants.v[j];
				uint32_t k;

				for (k = 0; k < v->n_fields; k++)
					bad |= v->fields[k].type >= n;
			}
			break;
		case ENGY_META_SEQUENCE:
		case ENGY_META_COMPACT:
			bad = t->u.elem >= n;
			break;
		case ENGY_META_ARRAY:
			bad = t->u.array.elem >= n;
			break;
		case ENGY_META_TUPLE:
			for (j = 0; j < t->u.tuple.n; j++)
				bad |= t->u.tuple.v[j] >= n;
			break;
		case ENGY_META_BITSEQ:
			bad = t->u.bits.store >= n || t->u.bits.order >= n;
			break;
		}
		if (bad) {
			ps->where = "a type reference";
			return engy_scale_fail(&ps->r, -EINVAL);
		}
	}
	return 0;
}

static void storage(struct parser *ps, struct engy_meta_pallet *p)
{
	uint32_t i, n;

	p->has_storage = true;
	p->prefix = str(ps);
	n = count(ps, 5);
	p->entries = alloc_n(ps, n, sizeof(*p->entries));
	if (!p->entries)
		return;
	for (i = 0; i < n && !ps->r.err; i++) {
		struct engy_meta_entry *e = &p->entries[i];
		uint8_t kind;
		size_t len;

		e->name = str(ps);
		engy_scale_u8(&ps->r, &e->modifier);
		engy_scale_u8(&ps->r, &kind);
		if (e->modifier > 1 || kind > 1) {
			engy_scale_fail(&ps->r, -EINVAL);
			return;
		}
		if (kind == 0) {
			e->value = type_id(ps);
		} else {
			uint32_t k, nh = count(ps, 1);

			e->is_map = true;
			e->hashers = alloc(ps, nh);
			if (!e->hashers)
				return;
			for (k = 0; k < nh && !ps->r.err; k++) {
				engy_scale_u8(&ps->r, &e->hashers[k]);
				if (e->hashers[k] > ENGY_HASH_IDENTITY)
					engy_scale_fail(&ps->r, -EINVAL);
			}
			e->n_hashers = nh;
			e->key = type_id(ps);
			e->value = type_id(ps);
		}
		engy_scale_vec(&ps->r, &e->def, &len);
		e->def_len = len;
		if (e->def && len) {
			uint8_t *copy = alloc(ps, len);

			if (copy)
				memcpy(copy, e->def, len);
			e->def = copy;
		}
		skip_strs(ps);
	}
	p->n_entries = n;
}

static int pallets(struct parser *ps, struct engy_metadata *md)
{
	uint32_t i, j, n;

	ps->where = "pallets";
	n = count(ps, 7);
	md->pallets = alloc_n(ps, n, sizeof(*md->pallets));
	if (!md->pallets)
		return ps->r.err;
	md->n_pallets = n;
	for (i = 0; i < n && !ps->r.err; i++) {
		struct engy_meta_pallet *p = &md->pallets[i];
		uint32_t nc;

		p->name = str(ps);
		if (option(ps))
			storage(ps, p);
		if ((p->has_calls = option(ps)))
			p->calls = type_id(ps);
		if ((p->has_events = option(ps)))
			p->events = type_id(ps);
		nc = count(ps, 4);
		for (j = 0; j < nc && !ps->r.err; j++) {
			const uint8_t *v;
			size_t len;

			skip_str(ps);
			type_id(ps);
			engy_scale_vec(&ps->r, &v, &len);
			skip_strs(ps);
		}
		if ((p->has_errors = option(ps)))
			p->errors = type_id(ps);
		engy_scale_u8(&ps->r, &p->index);
		if (md->version >= 15)
			skip_strs(ps);
	}
	return ps->r.err;
}

static int extrinsic(struct parser *ps, struct engy_metadata *md)
{
	uint32_t i, n;

	ps->where = "extrinsic";
	if (md->version == 14) {
		type_id(ps);
		engy_scale_u8(&ps->r, &md->extrinsic_version);
	} else {
		engy_scale_u8(&ps->r, &md->extrinsic_version);
		for (i = 0; i < 4; i++) /* address, call, signature, extra */
			type_id(ps);
	}
	n = count(ps, 3);
	md->exts = alloc_n(ps, n, sizeof(*md->exts));
	if (!md->exts)
		return ps->r.err;
	for (i = 0; i < n && !ps->r.err; i++) {
		md->exts[i].identifier = str(ps);
		md->exts[i].type = type_id(ps);
		md->exts[i].implicit = type_id(ps);
		if (!ps->r.err && (md->exts[i].type >= md->n_types ||
				   md->exts[i].implicit >= md->n_types))
			engy_scale_fail(&ps->r, -EINVAL);
	}
	md->n_exts = n;
	return ps->r.err;
}

static int check_refs(struct parser *ps, struct engy_metadata *md)
{
	uint32_t i, j;

	ps->where = "pallet type references";
	for (i = 0; i < md->n_pallets; i++) {
		const struct engy_meta_pallet *p = &md->pallets[i];

		if ((p->has_calls &&
		     (p->calls >= md->n_types ||
		      md->types[p->calls].def != ENGY_META_VARIANT)) ||
		    (p->has_events &&
		     (p->events >= md->n_types ||
		      md->types[p->events].def != ENGY_META_VARIANT)) ||
		    (p->has_errors &&
		     (p->errors >= md->n_types ||
		      md->types[p->errors].def != ENGY_META_VARIANT)))
			return engy_scale_fail(&ps->r, -EINVAL);
		for (j = 0; j < p->n_entries; j++)
			if (p->entries[j].value >= md->n_types ||
			    (p->entries[j].is_map &&
			     p->entries[j].key >= md->n_types))
				return engy_scale_fail(&ps->r, -EINVAL);
	}
	return 0;
}

int engy_meta_parse(const uint8_t *blob, size_t len, struct engy_metadata **out,
		    char *err, size_t errlen)
{
	struct parser ps = { .err = err, .errlen = errlen, .where = "header" };
	struct engy_metadata *md;
	uint32_t magic;
	int rc;

	*out = NULL;
	engy_scale_rd_init(&ps.r, blob, len);
	/* Option<OpaqueMetadata>: 01 || compact(len) || "meta"... */
	if (len > 5 && blob[0] == 1 && memcmp(blob, "meta", 4) != 0) {
		const uint8_t *p;
		size_t n;

		engy_scale_skip(&ps.r, 1);
		if (engy_scale_vec(&ps.r, &p, &n) == 0 &&
		    engy_scale_left(&ps.r) == 0)
			engy_scale_rd_init(&ps.r, p, n);
		else
			engy_scale_rd_init(&ps.r, blob, len);
	}
	md = alloc(&ps, sizeof(*md));
	if (!md) {
		engy_seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	engy_scale_u32(&ps.r, &magic);
	engy_scale_u8(&ps.r, &md->version);
	if (ps.r.err || magic != ENGY_META_MAGIC) {
		arena_free(ps.arena);
		engy_seterr(err, errlen,
			    "not runtime metadata (no \"meta\" magic)");
		return -EINVAL;
	}
	if (md->version != 14 && md->version != 15) {
		/* md lives in the arena: the message first. */
		engy_seterr(err, errlen,
			    "metadata version %u (14 and 15 are understood)",
			    md->version);
		arena_free(ps.arena);
		return -EPROTONOSUPPORT;
	}
	rc = registry(&ps, md);
	if (!rc)
		rc = pallets(&ps, md);
	if (!rc)
		rc = extrinsic(&ps, md);
	if (!rc)
		rc = check_refs(&ps, md);
	/* What follows (the runtime type, v15's apis, outer enums, custom
	 * values) is not needed. */
	if (rc) {
		if (rc == -ENOMEM)
			engy_seterr(err, errlen, "out of memory");
		else
			engy_seterr(err, errlen,
				    "metadata v%u: malformed %s at byte %zu",
				    md->version, ps.where, ps.r.pos);
		arena_free(ps.arena);
		return rc == -ENOMEM ? rc : -EINVAL;
	}
	md->arena = ps.arena;
	*out = md;
	return 0;
}

void engy_meta_free(struct engy_metadata *md)
{
	if (md)
		arena_free(md->arena); /* md itself lives in the arena */
}
