/* SPDX-License-Identifier: MIT */
/*
 * Token masks.  The ids are walked in the byte order of their texts, so
 * that an id shares the automaton states of the prefix it has in common
 * with the one before it: the work is that of the vocabulary's prefix
 * tree, less the subtrees under a byte the automaton refuses.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cons_int.h"

struct engy_cons_vocab {
	size_t n_ids;
	uint8_t **bytes; /* NULL: never allowed */
	uint32_t *len;
	uint32_t *order; /* ids with bytes, sorted by them */
	size_t n_order;
	uint32_t max_len;
	bool sealed;
};

struct engy_cons_vocab *engy_cons_vocab_new(size_t n_ids)
{
	struct engy_cons_vocab *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->n_ids = n_ids;
	v->bytes = calloc(n_ids ? n_ids : 1, sizeof(*v->bytes));
	v->len = calloc(n_ids ? n_ids : 1, sizeof(*v->len));
	if (!v->bytes || !v->len) {
		engy_cons_vocab_free(v);
		return NULL;
	}
	return v;
}

int engy_cons_vocab_set(struct engy_cons_vocab *v, uint32_t id,
			const uint8_t *p, size_t n)
{
	if (id >= v->n_ids || n > 4096 || v->sealed)
		return -ERANGE;
	free(v->bytes[id]);
	v->bytes[id] = NULL;
	v->len[id] = 0;
	if (!n)
		return 0;
	v->bytes[id] = malloc(n);
	if (!v->bytes[id])
		return -ENOMEM;
	memcpy(v->bytes[id], p, n);
	v->len[id] = (uint32_t)n;
	return 0;
}

static const struct engy_cons_vocab *sort_v;

static int by_bytes(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint32_t lx = sort_v->len[x], ly = sort_v->len[y];
	int c = memcmp(sort_v->bytes[x], sort_v->bytes[y], lx < ly ? lx : ly);

	if (c)
		return c;
	return lx < ly ? -1 : lx > ly;
}

int engy_cons_vocab_seal(struct engy_cons_vocab *v)
{
	size_t i;

	free(v->order);
	v->order = malloc((v->n_ids ? v->n_ids : 1) * sizeof(*v->order));
	if (!v->order)
		return -ENOMEM;
	v->n_order = 0;
	v->max_len = 0;
	for (i = 0; i < v->n_ids; i++) {
		if (!v->bytes[i])
			continue;
		v->order[v->n_order++] = (uint32_t)i;
		if (v->len[i] > v->max_len)
			v->max_len = v->len[i];
	}
	/* qsort has no context argument; sealing runs once, at load */
	sort_v = v;
	qsort(v->order, v->n_order, sizeof(*v->order), by_bytes);
	sort_v = NULL;
	v->sealed = true;
	return 0;
}

void engy_cons_vocab_free(struct engy_cons_vocab *v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; v->bytes && i < v->n_ids; i++)
		free(v->bytes[i]);
	free(v->bytes);
	free(v->len);
	free(v->order);
	free(v);
}

size_t engy_cons_vocab_size(const struct engy_cons_vocab *v)
{
	return v->n_ids;
}

size_t engy_cons_mask(const struct engy_cons_state *s,
		      const struct engy_cons_vocab *v, uint8_t *allow)
{
	struct engy_cons_state *lvl;
	const uint8_t *prev = NULL;
	uint32_t prev_len = 0, dead_at = UINT32_MAX, k, lcp;
	size_t i, n = 0;

	memset(allow, 0, v->n_ids);
	if (!v->sealed || !s->n)
		return 0;
	/* lvl[k]: the state after the first k bytes of the current id */
	lvl = malloc(((size_t)v->max_len + 1) * sizeof(*lvl));
	if (!lvl)
		return 0;
	engy_cons_copy(&lvl[0], s);
	for (i = 0; i < v->n_order; i++) {
		uint32_t id = v->order[i], len = v->len[id];
		const uint8_t *b = v->bytes[id];

		for (lcp = 0;
		     prev && lcp < len && lcp < prev_len && b[lcp] == prev[lcp];
		     lcp++)
			;
		prev = b;
		prev_len = len;
		if (dead_at <= lcp)
			continue; /* a prefix it shares is refused */
		dead_at = UINT32_MAX;
		for (k = lcp; k < len; k++) {
			if (!engy_cons_step(&lvl[k], b[k], &lvl[k + 1])) {
				dead_at = k + 1;
				break;
			}
		}
		if (k == len) {
			allow[id] = 1;
			n++;
		}
	}
	free(lvl);
	return n;
}

int engy_cons_feed_id(struct engy_cons_state *s,
		      const struct engy_cons_vocab *v, uint32_t id)
{
	if (id >= v->n_ids || !v->bytes[id])
		return -EINVAL;
	return engy_cons_feed(s, v->bytes[id], v->len[id]);
}

/* @s advanced by @n bytes in @a/@b (scratch): the result, or NULL. */
static const struct engy_cons_state *advance(const struct engy_cons_state *s,
					     const uint8_t *p, size_t n,
					     struct engy_cons_state *a,
					     struct engy_cons_state *b)
{
	const struct engy_cons_state *cur = s;
	struct engy_cons_state *next = a;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!engy_cons_step(cur, p[i], next))
			return NULL;
		cur = next;
		next = next == a ? b : a;
	}
	return cur;
}

/* Near the end of the budget: only ids after which the output can still
 * be finished, and ended, in the tokens left (one byte a token at worst).
 * When none can, those that get closest. */
static size_t budget(const struct engy_cons_state *s,
		     const struct engy_cons_vocab *v, uint8_t *allow,
		     uint32_t left)
{
	struct engy_cons_state *a = malloc(2 * sizeof(*a));
	uint32_t best = UINT32_MAX, *need;
	size_t i, n = 0;

	need = a ? malloc(v->n_ids * sizeof(*need)) : NULL;
	if (!need) {
		free(a);
		return SIZE_MAX; /* keep the plain mask */
	}
	for (i = 0; i < v->n_ids; i++) {
		const struct engy_cons_state *t;

		if (!allow[i])
			continue;
		t = advance(s, v->bytes[i], v->len[i], a, a + 1);
		need[i] = t ? engy_cons_min_close(t) : UINT32_MAX;
		if (need[i] < best)
			best = need[i];
	}
	for (i = 0; i < v->n_ids; i++) {
		if (!allow[i])
			continue;
		/* this id, then @need bytes, then an end id: all within
		 * @left tokens */
		allow[i] =
			(left >= 2 && need[i] <= left - 2) || need[i] == best;
		n += allow[i];
	}
	free(need);
	free(a);
	return n;
}

size_t engy_cons_mask_logits(const struct engy_cons_state *s,
			     const struct engy_cons_vocab *v, float *logits,
			     const uint32_t *eos, size_t n_eos, uint32_t left,
			     uint8_t *scratch)
{
	size_t i, n = engy_cons_mask(s, v, scratch), k;
	bool done = engy_cons_done(s);

	if (n && left && engy_cons_min_close(s) + 16 >= left &&
	    (k = budget(s, v, scratch, left)) != SIZE_MAX)
		n = k;
	for (i = 0; i < n_eos; i++)
		if (eos[i] < v->n_ids && done && !scratch[eos[i]]) {
			scratch[eos[i]] = 1;
			n++;
		}
	for (i = 0; i < v->n_ids; i++)
		if (!scratch[i])
			logits[i] = -INFINITY;
	return n;
}
