/* SPDX-License-Identifier: MIT */
/* lib/constrain's internals: the compiled automaton and its state. */
#ifndef ENGY_CONS_INT_H
#define ENGY_CONS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "constrain.h"

enum cons_kind {
	K_SEQ = 1, /* items: literals (s) and one value (node) in order */
	K_ANYOF,   /* items: branches (node) */
	K_OBJECT,  /* items: properties (s = escaped key, node) */
	K_ANYOBJ,  /* any object (items: [key string node, value node]) */
	K_ARRAY,   /* items: [item node]; min/max items */
	K_STRING,  /* min/max length in code points */
	K_NUMBER,  /* flags: NF_INTEGER, NF_NONNEG */
	K_ENUM,	   /* items: JSON texts (s) */
};

enum { NF_INTEGER = 1, NF_NONNEG = 2 };

struct cons_item {
	char *s; /* owned; NULL for a node item */
	uint32_t len;
	uint16_t node;
};

struct cons_node {
	uint8_t kind;
	uint8_t flags;
	uint16_t n;	/* items */
	uint32_t first; /* index of the first item */
	uint32_t min, max;
	uint64_t required; /* K_OBJECT: bit i for items[first + i] */
	uint32_t minlen;   /* bytes of the shortest complete value */
};

struct engy_cons {
	struct cons_node *nodes;
	size_t n_nodes, cap_nodes;
	struct cons_item *items;
	size_t n_items, cap_items;
	uint16_t root;
};

/* One frame; all fields zeroed when pushed so that stacks compare with
 * memcmp. */
struct cons_frame {
	uint16_t node;
	uint8_t phase;
	uint8_t x;
	uint32_t a;
	uint32_t b;
	uint32_t pad;
	uint64_t mask;
};

struct engy_cons_state {
	const struct engy_cons *c;
	uint8_t n; /* live stacks; 0: dead */
	uint8_t depth[ENGY_CONS_MAX_STACKS];
	struct cons_frame fr[ENGY_CONS_MAX_STACKS][ENGY_CONS_MAX_DEPTH];
};

/* @out = @in advanced by byte @b; false when nothing survives. */
bool engy_cons_step(const struct engy_cons_state *in, uint8_t b,
		    struct engy_cons_state *out);
void engy_cons_copy(struct engy_cons_state *dst,
		    const struct engy_cons_state *src);
/* Sets every node's minlen (a fixpoint: recursion); false when some
 * node has no finite value. */
bool engy_cons_minlen(struct engy_cons *c);

#endif /* ENGY_CONS_INT_H */
