/* SPDX-License-Identifier: MIT */
/*
 * A JSON schema (the subset specs/serve.md lists) compiled into the
 * automaton's nodes.  Every keyword is either understood, an annotation
 * (ignored), or refused with its name and where it stands; the limits in
 * constrain.h bound the work whatever the schema.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cons_int.h"
#include "jsonget.h"

struct ref_memo {
	const cJSON *target;
	uint16_t node;
};

struct comp {
	struct engy_cons *c;
	const cJSON *root;
	char *err;
	size_t errlen;
	char path[256];
	size_t path_len;
	struct ref_memo refs[64];
	size_t n_refs;
	int any;    /* the any-value node, -1 until built */
	int anyobj; /* its object branch */
};

static int fail(struct comp *p, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* What a reason may quote of a schema (it reaches the gateway's log): a
 * name of 1..32 of [A-Za-z0-9_$], else "?". */
static const char *quot(const char *s)
{
	size_t n =
		strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			  "0123456789_$");

	return n && n <= 32 && !s[n] ? s : "?";
}

static int fail(struct comp *p, int rc, const char *fmt, ...)
{
	va_list ap;
	char msg[200];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->errlen)
		snprintf(p->err, p->errlen, "%s at %s", msg,
			 p->path_len ? p->path : "/");
	return rc;
}

/* Appends "/seg" to the path (cut when long); returns the old length. */
static size_t path_push(struct comp *p, const char *seg)
{
	size_t old = p->path_len;
	int k = snprintf(p->path + old, sizeof(p->path) - old, "/%s",
			 quot(seg));

	if (k > 0)
		p->path_len = old + (size_t)k < sizeof(p->path)
				      ? old + (size_t)k
				      : sizeof(p->path) - 1;
	return old;
}

static void path_pop(struct comp *p, size_t old)
{
	p->path_len = old;
	p->path[old] = 0;
}

static int new_node(struct comp *p, uint8_t kind)
{
	struct engy_cons *c = p->c;

	if (c->n_nodes >= ENGY_CONS_MAX_NODES)
		return fail(p, -E2BIG, "schema too large (over %d nodes)",
			    ENGY_CONS_MAX_NODES);
	if (c->n_nodes == c->cap_nodes) {
		size_t cap = c->cap_nodes ? c->cap_nodes * 2 : 32;
		struct cons_node *n = realloc(c->nodes, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->nodes = n;
		c->cap_nodes = cap;
	}
	memset(&c->nodes[c->n_nodes], 0, sizeof(c->nodes[0]));
	c->nodes[c->n_nodes].kind = kind;
	c->nodes[c->n_nodes].max = UINT32_MAX;
	return (int)c->n_nodes++;
}

/* Appends an item (a copy of @s, or a node item when @s is NULL). */
static int add_item(struct comp *p, const char *s, size_t len, int node)
{
	struct engy_cons *c = p->c;
	struct cons_item *it;

	if (c->n_items >= (size_t)ENGY_CONS_MAX_NODES * 4)
		return fail(p, -E2BIG, "schema too large");
	if (c->n_items == c->cap_items) {
		size_t cap = c->cap_items ? c->cap_items * 2 : 64;
		struct cons_item *n = realloc(c->items, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->items = n;
		c->cap_items = cap;
	}
	it = &c->items[c->n_items];
	memset(it, 0, sizeof(*it));
	if (s) {
		it->s = malloc(len + 1);
		if (!it->s)
			return -ENOMEM;
		memcpy(it->s, s, len);
		it->s[len] = 0;
		it->len = (uint32_t)len;
	} else {
		it->node = (uint16_t)node;
	}
	c->n_items++;
	return 0;
}

/* A node with @n node items. */
static int node_of(struct comp *p, uint8_t kind, const int *kids, size_t n)
{
	int id = new_node(p, kind), rc;
	size_t i;

	if (id < 0)
		return id;
	p->c->nodes[id].first = (uint32_t)p->c->n_items;
	p->c->nodes[id].n = (uint16_t)n;
	for (i = 0; i < n; i++)
		if ((rc = add_item(p, NULL, 0, kids[i])) < 0)
			return rc;
	return id;
}

static int enum_of(struct comp *p, const char *const *lits, size_t n)
{
	int id = new_node(p, K_ENUM), rc;
	size_t i;

	if (id < 0)
		return id;
	p->c->nodes[id].first = (uint32_t)p->c->n_items;
	p->c->nodes[id].n = (uint16_t)n;
	for (i = 0; i < n; i++)
		if ((rc = add_item(p, lits[i], strlen(lits[i]), 0)) < 0)
			return rc;
	return id;
}

/* Any JSON value (built once): objects, arrays, strings, numbers,
 * true/false/null. */
static int any_value(struct comp *p)
{
	static const char *const lits[] = { "true", "false", "null" };
	int any, obj, arr, str, num, lit, kids[5], rc;

	if (p->any >= 0)
		return p->any;
	if ((any = new_node(p, K_ANYOF)) < 0 ||
	    (str = new_node(p, K_STRING)) < 0 ||
	    (num = new_node(p, K_NUMBER)) < 0 ||
	    (lit = enum_of(p, lits, 3)) < 0)
		return any < 0 ? any : str < 0 ? str : num < 0 ? num : lit;
	p->any = any;
	kids[0] = str, kids[1] = any;
	if ((obj = node_of(p, K_ANYOBJ, kids, 2)) < 0)
		return obj;
	p->anyobj = obj;
	kids[0] = any;
	if ((arr = node_of(p, K_ARRAY, kids, 1)) < 0)
		return arr;
	kids[0] = obj, kids[1] = arr, kids[2] = str, kids[3] = num;
	kids[4] = lit;
	p->c->nodes[any].first = (uint32_t)p->c->n_items;
	p->c->nodes[any].n = 5;
	for (int i = 0; i < 5; i++)
		if ((rc = add_item(p, NULL, 0, kids[i])) < 0)
			return rc;
	return any;
}

static int compile(struct comp *p, const cJSON *s, int depth);

static const char *const annotations[] = {
	"title", "description", "default",    "examples", "$schema",
	"$id",	 "$comment",	"deprecated", "readOnly", "writeOnly",
	"$defs", "definitions", NULL
};
static const char *const keywords[] = {
	"type",	     "properties", "required", "additionalProperties",
	"items",     "minItems",   "maxItems", "enum",
	"const",     "anyOf",	   "oneOf",    "$ref",
	"minLength", "maxLength",  "minimum",  "maximum",
	NULL
};

static bool in_list(const char *const *l, const char *k)
{
	for (; *l; l++)
		if (!strcmp(*l, k))
			return true;
	return false;
}

static int count(const cJSON *j, const char *key, uint32_t dflt, struct comp *p,
		 uint32_t *out)
{
	const cJSON *v = engy_json_get(j, key);

	*out = dflt;
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e9 ||
	    v->valuedouble != (double)(uint32_t)v->valuedouble)
		return fail(p, -EINVAL, "%s: expected a count", key);
	*out = (uint32_t)v->valuedouble;
	return 0;
}

/* The JSON texts of an enum's values (or const's one). */
static int compile_enum(struct comp *p, const cJSON *vals, bool is_const)
{
	const cJSON *v;
	char *texts[ENGY_CONS_MAX_ENUM];
	size_t n = 0, i;
	int id, rc = 0;

	if (!is_const && (!cJSON_IsArray(vals) || !vals->child))
		return fail(p, -EINVAL, "enum: expected a non-empty array");
	if (!is_const && cJSON_GetArraySize(vals) > ENGY_CONS_MAX_ENUM)
		return fail(p, -E2BIG, "enum: over %d values",
			    ENGY_CONS_MAX_ENUM);
	for (v = is_const ? vals : vals->child; v;
	     v = is_const ? NULL : v->next) {
		texts[n] = cJSON_PrintUnformatted(v);
		if (!texts[n]) {
			rc = -ENOMEM;
			break;
		}
		n++;
		if (strlen(texts[n - 1]) > ENGY_CONS_MAX_LITERAL) {
			rc = fail(p, -E2BIG, "%s: a value over %d bytes",
				  is_const ? "const" : "enum",
				  ENGY_CONS_MAX_LITERAL);
			break;
		}
	}
	if (!rc) {
		id = enum_of(p, (const char *const *)texts, n);
		rc = id;
	}
	for (i = 0; i < n; i++)
		free(texts[i]);
	return rc;
}

static int compile_object(struct comp *p, const cJSON *s, int depth)
{
	const cJSON *props = engy_json_get(s, "properties");
	const cJSON *req = engy_json_get(s, "required");
	const cJSON *addl = engy_json_get(s, "additionalProperties");
	const cJSON *q, *r;
	int kids[ENGY_CONS_MAX_PROPS], id, rc;
	uint64_t required = 0;
	size_t n = 0, i, old;

	if (props && !cJSON_IsObject(props))
		return fail(p, -EINVAL, "properties: expected an object");
	if (req && !cJSON_IsArray(req))
		return fail(p, -EINVAL, "required: expected an array");
	if (addl && !cJSON_IsBool(addl))
		return fail(p, -EINVAL,
			    "unsupported keyword \"additionalProperties\" "
			    "(only true or false)");
	if (!props || !props->child) {
		if (req && req->child)
			return fail(p, -EINVAL,
				    "required: names a property not in "
				    "properties");
		if (addl && cJSON_IsFalse(addl))
			return enum_of(p, (const char *const[]){ "{}" }, 1);
		if ((rc = any_value(p)) < 0)
			return rc;
		return p->anyobj;
	}
	if (addl && cJSON_IsTrue(addl))
		return fail(p, -EINVAL,
			    "unsupported keyword \"additionalProperties\": "
			    "true beside properties");
	if (cJSON_GetArraySize(props) > ENGY_CONS_MAX_PROPS)
		return fail(p, -E2BIG, "properties: over %d",
			    ENGY_CONS_MAX_PROPS);
	for (q = props->child; q; q = q->next) {
		for (r = props->child; r != q; r = r->next)
			if (!strcmp(r->string, q->string))
				return fail(p, -EINVAL,
					    "properties: \"%s\" twice",
					    quot(q->string));
		if (strlen(q->string) > ENGY_CONS_MAX_LITERAL)
			return fail(p, -E2BIG,
				    "properties: a name over %d "
				    "bytes",
				    ENGY_CONS_MAX_LITERAL);
		old = path_push(p, "properties");
		path_push(p, q->string);
		id = compile(p, q, depth + 1);
		path_pop(p, old);
		if (id < 0)
			return id;
		kids[n++] = id;
	}
	for (r = req ? req->child : NULL; r; r = r->next) {
		if (!cJSON_IsString(r))
			return fail(p, -EINVAL, "required: expected strings");
		for (i = 0, q = props->child; q; q = q->next, i++)
			if (!strcmp(q->string, r->valuestring))
				break;
		if (!q)
			return fail(p, -EINVAL,
				    "required: \"%s\" is not in properties",
				    quot(r->valuestring));
		required |= 1ull << i;
	}
	id = new_node(p, K_OBJECT);
	if (id < 0)
		return id;
	p->c->nodes[id].first = (uint32_t)p->c->n_items;
	p->c->nodes[id].n = (uint16_t)n;
	p->c->nodes[id].required = required;
	for (i = 0, q = props->child; q; q = q->next, i++) {
		cJSON *name = cJSON_CreateString(q->string);
		char *t = name ? cJSON_PrintUnformatted(name) : NULL;

		cJSON_Delete(name);
		if (!t)
			return -ENOMEM;
		/* the escaped name without its quotes */
		rc = add_item(p, t + 1, strlen(t) - 2, kids[i]);
		free(t);
		if (rc < 0)
			return rc;
		p->c->items[p->c->n_items - 1].node = (uint16_t)kids[i];
	}
	return id;
}

static int compile_typed(struct comp *p, const cJSON *s, const char *t,
			 int depth)
{
	uint32_t lo, hi;
	int id, kid, rc;

	if (!strcmp(t, "object"))
		return compile_object(p, s, depth);
	if (!strcmp(t, "array")) {
		const cJSON *items = engy_json_get(s, "items");
		size_t old;

		if ((rc = count(s, "minItems", 0, p, &lo)) < 0 ||
		    (rc = count(s, "maxItems", UINT32_MAX, p, &hi)) < 0)
			return rc;
		if (lo > hi)
			return fail(p, -EINVAL, "minItems above maxItems");
		if (items) {
			old = path_push(p, "items");
			kid = compile(p, items, depth + 1);
			path_pop(p, old);
		} else {
			kid = any_value(p);
		}
		if (kid < 0)
			return kid;
		id = node_of(p, K_ARRAY, &kid, 1);
		if (id >= 0)
			p->c->nodes[id].min = lo, p->c->nodes[id].max = hi;
		return id;
	}
	if (!strcmp(t, "string")) {
		if ((rc = count(s, "minLength", 0, p, &lo)) < 0 ||
		    (rc = count(s, "maxLength", UINT32_MAX, p, &hi)) < 0)
			return rc;
		if (lo > hi)
			return fail(p, -EINVAL, "minLength above maxLength");
		id = new_node(p, K_STRING);
		if (id >= 0)
			p->c->nodes[id].min = lo, p->c->nodes[id].max = hi;
		return id;
	}
	if (!strcmp(t, "number") || !strcmp(t, "integer")) {
		const cJSON *mn = engy_json_get(s, "minimum");
		const cJSON *mx = engy_json_get(s, "maximum");
		uint8_t flags = t[0] == 'i' ? NF_INTEGER : 0;

		/* Bounds the grammar cannot express are refused; the
		 * grammar's own (15 digits) make wider ones hold. */
		if (mn && (!cJSON_IsNumber(mn) ||
			   (mn->valuedouble != 0 &&
			    mn->valuedouble > -999999999999999.0)))
			return fail(p, -EINVAL,
				    "unsupported keyword \"minimum\" (only 0 "
				    "or below -999999999999999)");
		if (mn && mn->valuedouble == 0)
			flags |= NF_NONNEG;
		if (mx && (!cJSON_IsNumber(mx) ||
			   mx->valuedouble < 999999999999999.0))
			return fail(p, -EINVAL,
				    "unsupported keyword \"maximum\" (only "
				    "above 999999999999999)");
		id = new_node(p, K_NUMBER);
		if (id >= 0)
			p->c->nodes[id].flags = flags;
		return id;
	}
	if (!strcmp(t, "boolean"))
		return enum_of(p, (const char *const[]){ "true", "false" }, 2);
	if (!strcmp(t, "null"))
		return enum_of(p, (const char *const[]){ "null" }, 1);
	return fail(p, -EINVAL, "type: unknown type \"%s\"", quot(t));
}

/* The target of a local $ref: "#", "#/$defs/NAME", "#/definitions/NAME". */
static const cJSON *resolve(struct comp *p, const char *ref)
{
	const char *name;
	char buf[ENGY_CONS_MAX_LITERAL + 1];
	size_t k = 0;
	const cJSON *defs;

	if (!strcmp(ref, "#"))
		return p->root;
	if (!strncmp(ref, "#/$defs/", 8))
		name = ref + 8, defs = engy_json_get(p->root, "$defs");
	else if (!strncmp(ref, "#/definitions/", 14))
		name = ref + 14, defs = engy_json_get(p->root, "definitions");
	else
		return NULL;
	for (; *name && k < sizeof(buf) - 1; name++) {
		if (*name == '/')
			return NULL;
		if (*name == '~' && (name[1] == '0' || name[1] == '1'))
			buf[k++] = name[1] == '0' ? '~' : '/', name++;
		else
			buf[k++] = *name;
	}
	buf[k] = 0;
	return engy_json_get(defs, buf);
}

static int compile_ref(struct comp *p, const cJSON *ref, int depth)
{
	const cJSON *t;
	size_t i;
	int fwd, id, rc;

	if (!cJSON_IsString(ref))
		return fail(p, -EINVAL, "$ref: expected a string");
	t = resolve(p, ref->valuestring);
	if (!t)
		return fail(p, -EINVAL,
			    "unsupported $ref (only \"#\", "
			    "\"#/$defs/NAME\", \"#/definitions/NAME\")");
	for (i = 0; i < p->n_refs; i++)
		if (p->refs[i].target == t)
			return p->refs[i].node;
	if (p->n_refs == sizeof(p->refs) / sizeof(p->refs[0]))
		return fail(p, -E2BIG, "$ref: over 64 targets");
	/* A one-branch anyOf forwards to the target, so that the target
	 * may refer to itself. */
	if ((fwd = new_node(p, K_ANYOF)) < 0)
		return fwd;
	p->refs[p->n_refs].target = t;
	p->refs[p->n_refs++].node = (uint16_t)fwd;
	id = compile(p, t, depth + 1);
	if (id < 0)
		return id;
	p->c->nodes[fwd].first = (uint32_t)p->c->n_items;
	p->c->nodes[fwd].n = 1;
	if ((rc = add_item(p, NULL, 0, id)) < 0)
		return rc;
	return fwd;
}

static int compile(struct comp *p, const cJSON *s, int depth)
{
	const cJSON *k, *type, *alt;
	int kids[ENGY_CONS_MAX_BRANCHES], id;
	size_t n = 0, old;

	if (depth > ENGY_CONS_MAX_NEST)
		return fail(p, -E2BIG, "schema nested deeper than %d",
			    ENGY_CONS_MAX_NEST);
	if (cJSON_IsTrue(s))
		return any_value(p);
	if (!cJSON_IsObject(s))
		return fail(p, -EINVAL, "expected a schema object");
	for (k = s->child; k; k = k->next)
		if (!in_list(keywords, k->string) &&
		    !in_list(annotations, k->string))
			return fail(p, -EINVAL, "unsupported keyword \"%s\"",
				    quot(k->string));
	if ((k = engy_json_get(s, "$ref")))
		return compile_ref(p, k, depth);
	if ((k = engy_json_get(s, "const")))
		return compile_enum(p, k, true);
	if ((k = engy_json_get(s, "enum")))
		return compile_enum(p, k, false);
	alt = engy_json_get(s, "anyOf");
	if (!alt)
		alt = engy_json_get(s, "oneOf");
	if (alt) {
		if (!cJSON_IsArray(alt) || !alt->child)
			return fail(p, -EINVAL,
				    "%s: expected a non-empty array",
				    alt->string);
		if (cJSON_GetArraySize(alt) > ENGY_CONS_MAX_BRANCHES)
			return fail(p, -E2BIG, "%s: over %d branches",
				    alt->string, ENGY_CONS_MAX_BRANCHES);
		for (k = alt->child; k; k = k->next) {
			char idx[16];

			snprintf(idx, sizeof(idx), "%zu", n);
			old = path_push(p, alt->string);
			path_push(p, idx);
			id = compile(p, k, depth + 1);
			path_pop(p, old);
			if (id < 0)
				return id;
			kids[n++] = id;
		}
		return n == 1 ? kids[0] : node_of(p, K_ANYOF, kids, n);
	}
	type = engy_json_get(s, "type");
	if (cJSON_IsString(type))
		return compile_typed(p, s, type->valuestring, depth);
	if (cJSON_IsArray(type) && type->child) {
		if (cJSON_GetArraySize(type) > ENGY_CONS_MAX_BRANCHES)
			return fail(p, -E2BIG, "type: too many types");
		for (k = type->child; k; k = k->next) {
			if (!cJSON_IsString(k))
				return fail(p, -EINVAL,
					    "type: expected strings");
			id = compile_typed(p, s, k->valuestring, depth);
			if (id < 0)
				return id;
			kids[n++] = id;
		}
		return n == 1 ? kids[0] : node_of(p, K_ANYOF, kids, n);
	}
	if (type)
		return fail(p, -EINVAL, "type: expected a string or an array");
	if (engy_json_get(s, "properties"))
		return compile_object(p, s, depth);
	if (engy_json_get(s, "items"))
		return compile_typed(p, s, "array", depth);
	return any_value(p);
}

/* ---- checks on the compiled automaton ---- */

struct walk {
	const struct engy_cons *c;
	uint8_t *mark; /* 1 on the path, 2 done */
	uint16_t *amb;
	uint16_t *path;
	uint8_t *took; /* the edge into path[k] consumed a byte */
	size_t depth;
	uint64_t (*first)[4]; /* first_bytes() memo */
	uint8_t *fmark;	      /* 1 being built, 2 done */
};

/* The bytes a value of @n may start with, memoized per node (a walk
 * over a DAG of $refs costs its nodes, not its paths); a node met again
 * while its own set is being built (a cycle through anyOf only, refused
 * as left recursion anyway) counts as every byte. */
static const uint64_t *first_bytes(struct walk *w, uint16_t n)
{
	const struct cons_node *d = &w->c->nodes[n];
	uint64_t *out = w->first[n];
	unsigned i, b, k;

	if (w->fmark[n] == 2)
		return out;
	if (w->fmark[n] == 1) {
		static const uint64_t all[4] = { ~0ull, ~0ull, ~0ull, ~0ull };

		return all;
	}
	w->fmark[n] = 1;
	memset(out, 0, 4 * sizeof(uint64_t));
	switch (d->kind) {
	case K_OBJECT:
	case K_ANYOBJ:
		out['{' / 64] |= 1ull << ('{' % 64);
		break;
	case K_ARRAY:
		out['[' / 64] |= 1ull << ('[' % 64);
		break;
	case K_STRING:
		out['"' / 64] |= 1ull << ('"' % 64);
		break;
	case K_NUMBER:
		for (b = '0'; b <= '9'; b++)
			out[b / 64] |= 1ull << (b % 64);
		out['-' / 64] |= 1ull << ('-' % 64);
		break;
	case K_ENUM:
		for (i = 0; i < d->n; i++) {
			b = (uint8_t)w->c->items[d->first + i].s[0];
			out[b / 64] |= 1ull << (b % 64);
		}
		break;
	default: /* anyOf (the root's sequence is never asked) */
		for (i = 0; i < d->n; i++) {
			const uint64_t *f =
				first_bytes(w, w->c->items[d->first + i].node);

			for (k = 0; k < 4; k++)
				out[k] |= f[k];
		}
	}
	w->fmark[n] = 2;
	return out;
}

/* An anyOf whose branches start with different bytes: after its first
 * byte one branch at most is alive. */
static bool deterministic(struct walk *w, const struct cons_node *d)
{
	uint64_t seen[4] = { 0 };
	unsigned i, k;

	for (i = 0; i < d->n; i++) {
		const uint64_t *f =
			first_bytes(w, w->c->items[d->first + i].node);

		for (k = 0; k < 4; k++) {
			if (seen[k] & f[k])
				return false;
			seen[k] |= f[k];
		}
	}
	return true;
}

/* The most stacks a value of @n can keep alive at once; a cycle that
 * reaches itself through an ambiguous anyOf, or without consuming a
 * byte, makes it unbounded (UINT16_MAX). */
static unsigned amb(struct walk *w, uint16_t n, bool consumed)
{
	const struct cons_node *d = &w->c->nodes[n];
	unsigned r = 1, a, i;
	size_t k;

	if (w->mark[n] == 1) {
		bool any = consumed;

		for (k = w->depth; k-- > 0 && w->path[k] != n;) {
			const struct cons_node *e = &w->c->nodes[w->path[k]];

			any |= w->took[k];
			if (e->kind == K_ANYOF && e->n > 1 &&
			    !deterministic(w, e))
				return UINT16_MAX;
		}
		return any ? 1 : UINT16_MAX; /* else left recursion */
	}
	if (w->mark[n] == 2)
		return w->amb[n];
	if (w->depth >= ENGY_CONS_MAX_NODES)
		return UINT16_MAX;
	w->mark[n] = 1;
	w->took[w->depth] = consumed;
	w->path[w->depth++] = n;
	if (d->kind == K_ANYOF) {
		bool det = deterministic(w, d);

		r = 0;
		for (i = 0; i < d->n; i++) {
			a = amb(w, w->c->items[d->first + i].node, false);
			if (a == UINT16_MAX) { /* unbounded: stays so */
				r = a;
				break;
			}
			r = det ? (a > r ? a : r) : r + a;
			/* saturate above the limit, below the sentinel */
			if (r > ENGY_CONS_MAX_STACKS + 1)
				r = ENGY_CONS_MAX_STACKS + 1;
		}
	} else if (d->kind != K_STRING && d->kind != K_NUMBER &&
		   d->kind != K_ENUM) {
		for (i = 0; i < d->n; i++) {
			if (d->kind != K_SEQ || !w->c->items[d->first + i].s) {
				a = amb(w, w->c->items[d->first + i].node,
					d->kind != K_SEQ);
				r = a > r ? a : r;
			}
		}
	}
	w->depth--;
	w->mark[n] = 2;
	w->amb[n] = (uint16_t)(r > UINT16_MAX ? UINT16_MAX : r);
	return w->amb[n];
}

static int add_seq_literal(struct comp *p, const char *s, size_t *n)
{
	int rc;

	if (!s || !*s)
		return 0;
	if (strlen(s) > ENGY_CONS_MAX_AFFIX)
		return fail(p, -E2BIG, "prefix or suffix over %d bytes",
			    ENGY_CONS_MAX_AFFIX);
	if ((rc = add_item(p, s, strlen(s), 0)) < 0)
		return rc;
	(*n)++;
	return 0;
}

int engy_cons_compile(const cJSON *schema, const char *prefix,
		      const char *suffix, struct engy_cons **out, char *err,
		      size_t errlen)
{
	struct comp p = {
		.err = err, .errlen = errlen, .any = -1, .anyobj = -1
	};
	struct walk w = { 0 };
	int val, seq, rc;
	size_t n = 0;
	unsigned a;

	*out = NULL;
	if (errlen)
		err[0] = 0;
	p.c = calloc(1, sizeof(*p.c));
	if (!p.c)
		return -ENOMEM;
	p.root = schema;
	if (schema) {
		val = compile(&p, schema, 0);
	} else {
		val = any_value(&p);
		if (val >= 0)
			val = p.anyobj;
	}
	rc = val;
	if (val < 0)
		goto fail;
	if ((rc = seq = new_node(&p, K_SEQ)) < 0)
		goto fail;
	p.c->nodes[seq].first = (uint32_t)p.c->n_items;
	if ((rc = add_seq_literal(&p, prefix, &n)) < 0 ||
	    (rc = add_item(&p, NULL, 0, val)) < 0)
		goto fail;
	n++;
	if ((rc = add_seq_literal(&p, suffix, &n)) < 0)
		goto fail;
	p.c->nodes[seq].n = (uint16_t)n;
	p.c->root = (uint16_t)seq;

	w.c = p.c;
	w.mark = calloc(p.c->n_nodes, 1);
	w.amb = calloc(p.c->n_nodes, sizeof(*w.amb));
	w.path = calloc(p.c->n_nodes + 1, sizeof(*w.path));
	w.took = calloc(p.c->n_nodes + 1, 1);
	w.first = calloc(p.c->n_nodes, sizeof(*w.first));
	w.fmark = calloc(p.c->n_nodes, 1);
	rc = -ENOMEM;
	if (!w.mark || !w.amb || !w.path || !w.took || !w.first || !w.fmark)
		goto fail_walk;
	a = amb(&w, p.c->root, true);
	if (a == UINT16_MAX) {
		p.path_len = 0, p.path[0] = 0;
		rc = fail(&p, -EINVAL,
			  "unsupported schema: a $ref cycle that consumes "
			  "nothing, or through an anyOf whose branches "
			  "start alike");
		goto fail_walk;
	}
	if (a > ENGY_CONS_MAX_STACKS) {
		p.path_len = 0, p.path[0] = 0;
		rc = fail(&p, -E2BIG,
			  "anyOf: over %d alternatives that start alike",
			  ENGY_CONS_MAX_STACKS);
		goto fail_walk;
	}
	free(w.mark), free(w.amb), free(w.path), free(w.took);
	free(w.first), free(w.fmark);
	if (!engy_cons_minlen(p.c)) {
		p.path_len = 0, p.path[0] = 0;
		rc = fail(&p, -EINVAL,
			  "unsupported schema: no finite value matches it (a "
			  "required $ref cycle)");
		goto fail;
	}
	*out = p.c;
	return 0;
fail_walk:
	free(w.mark), free(w.amb), free(w.path), free(w.took);
	free(w.first), free(w.fmark);
fail:
	if (rc == -ENOMEM && errlen)
		snprintf(err, errlen, "out of memory");
	engy_cons_free(p.c);
	return rc;
}

void engy_cons_free(struct engy_cons *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n_items; i++)
		free(c->items[i].s);
	free(c->items);
	free(c->nodes);
	free(c);
}
