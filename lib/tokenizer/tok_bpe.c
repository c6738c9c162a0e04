/* SPDX-License-Identifier: MIT */
/*
 * The BPE model: the merge table, merging one pre-token by rank (a plain
 * scan for short pieces, a linked list and a min-heap for long ones, which
 * give the same result: lowest rank first, leftmost on ties), and a
 * per-thread cache of pre-token -> ids.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "tok_int.h"

#define BPE_SMALL 64

int engy_tok_merges_init(struct engy_tokenizer *t, size_t n)
{
	size_t size = 16, i;

	/* Load stays under one half: most lookups during BPE are misses. */
	while (size < 2 * n)
		size *= 2;
	if (size > (size_t)1 << 31)
		return -E2BIG;
	t->mtab = malloc(size * sizeof(*t->mtab));
	if (!t->mtab)
		return -ENOMEM;
	for (i = 0; i < size; i++)
		t->mtab[i].key = UINT64_MAX;
	t->mmask = (uint32_t)(size - 1);
	t->n_merges = 0;
	return 0;
}

void engy_tok_merges_put(struct engy_tokenizer *t, uint32_t a, uint32_t b,
			 uint32_t rank, uint32_t id)
{
	uint64_t key = (uint64_t)a << 32 | b;
	uint32_t i = (uint32_t)tok_hash_pair(a, b) & t->mmask;

	while (t->mtab[i].key != UINT64_MAX && t->mtab[i].key != key)
		i = (i + 1) & t->mmask;
	if (t->mtab[i].key == UINT64_MAX)
		t->n_merges++;
	t->mtab[i].key = key;
	t->mtab[i].rank = rank;
	t->mtab[i].id = id;
}

bool engy_tok_merges_get(const struct engy_tokenizer *t, uint32_t a, uint32_t b,
			 uint32_t *rank, uint32_t *id)
{
	uint64_t key = (uint64_t)a << 32 | b;
	uint32_t i = (uint32_t)tok_hash_pair(a, b) & t->mmask;

	for (;;) {
		const struct tok_merge *m = &t->mtab[i];

		if (m->key == key) {
			*rank = m->rank;
			*id = m->id;
			return true;
		}
		if (m->key == UINT64_MAX)
			return false;
		i = (i + 1) & t->mmask;
	}
}

size_t engy_tok_bpe_merge_small(const struct engy_tokenizer *t, uint32_t *sym,
				size_t n)
{
	uint32_t rank[BPE_SMALL], nid[BPE_SMALL], best;
	size_t i, bi;

	if (n < 2 || n > BPE_SMALL)
		return n;
	for (i = 0; i + 1 < n; i++)
		if (!engy_tok_merges_get(t, sym[i], sym[i + 1], &rank[i],
					 &nid[i]))
			rank[i] = TOK_NONE;
	for (;;) {
		best = TOK_NONE;
		bi = 0;
		for (i = 0; i + 1 < n; i++)
			if (rank[i] < best) {
				best = rank[i];
				bi = i;
			}
		if (best == TOK_NONE)
			break;
		sym[bi] = nid[bi];
		n--;
		memmove(sym + bi + 1, sym + bi + 2,
			(n - bi - 1) * sizeof(*sym));
		if (bi + 1 < n) {
			memmove(rank + bi + 1, rank + bi + 2,
				(n - bi - 2) * sizeof(*rank));
			memmove(nid + bi + 1, nid + bi + 2,
				(n - bi - 2) * sizeof(*nid));
		}
		if (bi > 0 && !engy_tok_merges_get(t, sym[bi - 1], sym[bi],
						   &rank[bi - 1], &nid[bi - 1]))
			rank[bi - 1] = TOK_NONE;
		if (bi + 1 < n && !engy_tok_merges_get(t, sym[bi], sym[bi + 1],
						       &rank[bi], &nid[bi]))
			rank[bi] = TOK_NONE;
	}
	return n;
}

/* Min-heap of (rank << 32 | position). */
struct heap {
	uint64_t *v;
	size_t n;
};

static void heap_push(struct heap *h, uint64_t x)
{
	size_t i = h->n++, p;

	while (i > 0) {
		p = (i - 1) / 2;
		if (h->v[p] <= x)
			break;
		h->v[i] = h->v[p];
		i = p;
	}
	h->v[i] = x;
}

static uint64_t heap_pop(struct heap *h)
{
	uint64_t top = h->v[0], x = h->v[--h->n];
	size_t i = 0, c;

	for (;;) {
		c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1] < h->v[c])
			c++;
		if (h->v[c] >= x)
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = x;
	return top;
}

int engy_tok_bpe_merge_heap(const struct engy_tokenizer *t, uint32_t *sym,
			    size_t n, size_t *out_n)
{
	uint32_t *next = NULL, *prev = NULL, rank, id, p, q;
	uint8_t *dead = NULL;
	struct heap h = { 0 };
	size_t i, k;
	int rc = 0;

	*out_n = n;
	if (n < 2)
		return 0;
	if (n >= UINT32_MAX)
		return -E2BIG;
	next = malloc(n * sizeof(*next));
	prev = malloc(n * sizeof(*prev));
	dead = calloc(n, 1);
	/*
	 * At most n - 1 entries to start; a pop that merges pushes at most
	 * two, so the heap never holds more than 2n.
	 */
	h.v = malloc(2 * n * sizeof(*h.v));
	if (!next || !prev || !dead || !h.v) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		prev[i] = i ? (uint32_t)i - 1 : TOK_NONE;
		next[i] = i + 1 < n ? (uint32_t)i + 1 : TOK_NONE;
		if (i + 1 < n &&
		    engy_tok_merges_get(t, sym[i], sym[i + 1], &rank, &id))
			heap_push(&h, (uint64_t)rank << 32 | i);
	}
	while (h.n) {
		uint64_t top = heap_pop(&h);

		p = (uint32_t)top;
		if (dead[p] || next[p] == TOK_NONE)
			continue;
		q = next[p];
		/* Stale entry: the pair at p changed since it was pushed. */
		if (!engy_tok_merges_get(t, sym[p], sym[q], &rank, &id) ||
		    rank != (uint32_t)(top >> 32))
			continue;
		sym[p] = id;
		dead[q] = 1;
		next[p] = next[q];
		if (next[q] != TOK_NONE)
			prev[next[q]] = p;
		if (prev[p] != TOK_NONE &&
		    engy_tok_merges_get(t, sym[prev[p]], sym[p], &rank, &id))
			heap_push(&h, (uint64_t)rank << 32 | prev[p]);
		if (next[p] != TOK_NONE &&
		    engy_tok_merges_get(t, sym[p], sym[next[p]], &rank, &id))
			heap_push(&h, (uint64_t)rank << 32 | p);
	}
	k = 0;
	for (p = 0; p != TOK_NONE; p = next[p])
		sym[k++] = sym[p];
	*out_n = k;
out:
	free(next);
	free(prev);
	free(dead);
	free(h.v);
	return rc;
}

int engy_tok_ids_push(struct tok_ids *o, uint32_t id)
{
	if (!ENGY_GROW(o->v, o->cap, o->n + 1))
		return -ENOMEM;
	o->v[o->n++] = id;
	return 0;
}

/*
 * Per-thread state.  The cache maps pre-token bytes to ids for the
 * tokenizer named by uid and starts over when it fills or another
 * tokenizer is used; no locks, and nothing a caller must release (the
 * thread's exit frees it).
 */
#define CACHE_SLOTS   16384u /* power of two */
#define CACHE_ARENA   (1u << 21)
#define CACHE_MAX_KEY 255
#define CACHE_PROBES  8

struct cache_slot {
	uint64_t hash;
	uint32_t off;  /* key bytes, then ids (4-aligned) */
	uint16_t klen; /* 0 = free */
	uint16_t nids;
};

struct tok_tls {
	uint64_t uid;
	struct cache_slot *slot;
	uint8_t *arena;
	size_t used, count;
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	pcre2_jit_stack *jstack;
};

static _Thread_local struct tok_tls *tls_cur;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_destroy(void *p)
{
	struct tok_tls *tls = p;

	if (!tls)
		return;
	free(tls->slot);
	free(tls->arena);
	pcre2_match_data_free(tls->md);
	pcre2_match_context_free(tls->mctx);
	pcre2_jit_stack_free(tls->jstack);
	free(tls);
}

static void tls_key_init(void)
{
	(void)pthread_key_create(&tls_key, tls_destroy);
}

static void cache_reset(struct tok_tls *tls)
{
	memset(tls->slot, 0, CACHE_SLOTS * sizeof(*tls->slot));
	tls->used = 0;
	tls->count = 0;
}

struct tok_tls *engy_tok_tls_get(const struct engy_tokenizer *t)
{
	struct tok_tls *tls = tls_cur;

	if (!tls) {
		pthread_once(&tls_once, tls_key_init);
		tls = calloc(1, sizeof(*tls));
		if (!tls)
			return NULL;
		tls->slot = calloc(CACHE_SLOTS, sizeof(*tls->slot));
		tls->arena = malloc(CACHE_ARENA);
		tls->md = pcre2_match_data_create(1, NULL);
		tls->mctx = pcre2_match_context_create(NULL);
		/*
		 * Long whitespace runs backtrack through (?!\S); 32 KiB is not
		 * enough.
		 */
		tls->jstack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024,
						     NULL);
		if (!tls->slot || !tls->arena || !tls->md || !tls->mctx ||
		    !tls->jstack) {
			tls_destroy(tls);
			return NULL;
		}
		pcre2_jit_stack_assign(tls->mctx, NULL, tls->jstack);
		/*
		 * The patterns come from the tokenizer file and the work is
		 * bounded by the text; the default limit (10M) refuses a
		 * whitespace run of a few MB.
		 */
		pcre2_set_match_limit(tls->mctx, UINT32_MAX);
		tls->uid = t->uid;
		tls_cur = tls;
		(void)pthread_setspecific(tls_key, tls);
	}
	if (tls->uid != t->uid) {
		cache_reset(tls);
		tls->uid = t->uid;
	}
	return tls;
}

pcre2_match_data *engy_tok_tls_match_data(struct tok_tls *tls)
{
	return tls->md;
}

pcre2_match_context *engy_tok_tls_match_context(struct tok_tls *tls)
{
	return tls->mctx;
}

static const struct cache_slot *
cache_find(const struct tok_tls *tls, uint64_t h, const uint8_t *s, size_t n)
{
	uint32_t i = (uint32_t)h & (CACHE_SLOTS - 1), k;

	for (k = 0; k < CACHE_PROBES; k++, i = (i + 1) & (CACHE_SLOTS - 1)) {
		const struct cache_slot *c = &tls->slot[i];

		if (!c->klen)
			return NULL;
		if (c->hash == h && c->klen == n &&
		    memcmp(tls->arena + c->off, s, n) == 0)
			return c;
	}
	return NULL;
}

static void cache_put(struct tok_tls *tls, uint64_t h, const uint8_t *s,
		      size_t n, const uint32_t *ids, size_t nids)
{
	size_t need = ((n + 3) & ~(size_t)3) + nids * sizeof(uint32_t);
	uint32_t i, k;

	if (nids > UINT16_MAX)
		return;
	if (tls->used + need > CACHE_ARENA || tls->count >= CACHE_SLOTS / 2)
		cache_reset(tls);
	i = (uint32_t)h & (CACHE_SLOTS - 1);
	for (k = 0; k < CACHE_PROBES; k++, i = (i + 1) & (CACHE_SLOTS - 1)) {
		struct cache_slot *c = &tls->slot[i];

		if (c->klen)
			continue;
		c->hash = h;
		c->off = (uint32_t)tls->used;
		c->klen = (uint16_t)n;
		c->nids = (uint16_t)nids;
		memcpy(tls->arena + tls->used, s, n);
		memcpy(tls->arena + tls->used + ((n + 3) & ~(size_t)3), ids,
		       nids * sizeof(uint32_t));
		tls->used += need;
		tls->count++;
		return;
	}
}

/* ignore_merges: a pre-token that is itself in the vocab is one token. */
static uint32_t whole_piece_id(const struct engy_tokenizer *t, const uint8_t *s,
			       size_t n)
{
	char buf[2 * 256];
	size_t i, k = 0;
	uint32_t cp;

	if (n > 256)
		return TOK_NONE;
	for (i = 0; i < n; i++) {
		cp = engy_tok_byte_to_cp(s[i]);
		if (cp < 0x80) {
			buf[k++] = (char)cp;
		} else {
			buf[k++] = (char)(0xC0 | cp >> 6);
			buf[k++] = (char)(0x80 | (cp & 0x3F));
		}
	}
	return engy_tok_strtab_find(t, &t->vocab_tab, false, buf, k);
}

int engy_tok_bpe_piece(const struct engy_tokenizer *t, struct tok_tls *tls,
		       const uint8_t *s, size_t n, struct tok_ids *o)
{
	uint32_t small[BPE_SMALL], *sym = small, id;
	const struct cache_slot *c;
	size_t i, k = 0, nsym;
	bool unk_open = false;
	uint64_t h = 0;
	int rc = 0;

	if (!n)
		return 0;
	if (t->ignore_merges && (id = whole_piece_id(t, s, n)) != TOK_NONE)
		return engy_tok_ids_push(o, id);
	if (n <= CACHE_MAX_KEY) {
		h = tok_hash(s, n);
		c = cache_find(tls, h, s, n);
		if (c) {
			const uint8_t *v =
				tls->arena + c->off + ((c->klen + 3u) & ~3u);

			for (i = 0; i < c->nids; i++) {
				memcpy(&id, v + 4 * i, 4);
				rc = engy_tok_ids_push(o, id);
				if (rc)
					return rc;
			}
			return 0;
		}
	}
	if (n > BPE_SMALL) {
		sym = malloc(n * sizeof(*sym));
		if (!sym)
			return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		id = t->byte_id[s[i]];
		if (id != TOK_NONE) {
			sym[k++] = id;
			unk_open = false;
		} else if (t->unk_id != TOK_NONE &&
			   !(unk_open && t->fuse_unk)) {
			/*
			 * The reference drops a byte with no symbol unless
			 * unk_token is set.
			 */
			sym[k++] = t->unk_id;
			unk_open = true;
		}
	}
	if (k <= BPE_SMALL) {
		nsym = engy_tok_bpe_merge_small(t, sym, k);
	} else {
		rc = engy_tok_bpe_merge_heap(t, sym, k, &nsym);
		if (rc)
			goto out;
	}
	for (i = 0; i < nsym && !rc; i++)
		rc = engy_tok_ids_push(o, sym[i]);
	if (!rc && n <= CACHE_MAX_KEY)
		cache_put(tls, h, s, n, sym, nsym);
out:
	if (sym != small)
		free(sym);
	return rc;
}
