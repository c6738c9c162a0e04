/* SPDX-License-Identifier: MIT */
/*
 * The GEMM audit's hashing (specs/gemm-audit.md, "engy-ga1"): keys, leaves,
 * the sparse token trees, the sub tree, the gemm and trace roots, the seed,
 * the PRNG and the challenge's expansion and JSON.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "errbuf.h"
#include "gemm.h"
#include "gemm_int.h"
#include "grow.h"
#include "hex.h"
#include "merkle.h"

/* ---- Keys ---- */

static const char *const mm_names[ENGY_GA_MM_MAX] = {
	"q_proj",
	"k_proj",
	"v_proj",
	"o_proj",
	"gate_proj",
	"up_proj",
	"down_proj",
	"router",
	"experts.gate_proj",
	"experts.up_proj",
	"experts.down_proj",
	"shared_expert.gate_proj",
	"shared_expert.up_proj",
	"shared_expert.down_proj",
	"shared_expert_gate",
	"lm_head",
};

const char *engy_ga_mm_name(int mm)
{
	return mm >= 0 && mm < ENGY_GA_MM_MAX ? mm_names[mm] : "?";
}

int engy_ga_mm_parse(const char *name, int *mm, uint32_t *expert)
{
	int i;

	if (!name)
		return -EINVAL;
	if (strncmp(name, "experts.", 8) == 0) {
		const char *p = name + 8;
		unsigned long e = 0;
		size_t nd = 0;

		while (*p >= '0' && *p <= '9' && nd < 6) {
			e = e * 10 + (unsigned long)(*p - '0');
			p++;
			nd++;
		}
		if (!nd || *p != '.' || e >= ENGY_GA_NO_EXPERT ||
		    (nd > 1 && name[8] == '0'))
			return -EINVAL;
		p++;
		for (i = ENGY_GA_MM_EXPERT_GATE; i <= ENGY_GA_MM_EXPERT_DOWN;
		     i++)
			if (strcmp(p, mm_names[i] + 8) == 0) {
				*mm = i;
				*expert = (uint32_t)e;
				return 0;
			}
		return -EINVAL;
	}
	for (i = 0; i < ENGY_GA_MM_MAX; i++) {
		if (i >= ENGY_GA_MM_EXPERT_GATE && i <= ENGY_GA_MM_EXPERT_DOWN)
			continue;
		if (strcmp(name, mm_names[i]) == 0) {
			*mm = i;
			*expert = ENGY_GA_NO_EXPERT;
			return 0;
		}
	}
	return -EINVAL;
}

int engy_ga_mm_tensor(uint32_t layer, int mm, uint32_t expert, bool tied,
		      char *out, size_t outlen)
{
	static const char *const part[ENGY_GA_MM_MAX] = {
		"self_attn.q_proj",
		"self_attn.k_proj",
		"self_attn.v_proj",
		"self_attn.o_proj",
		"mlp.gate_proj",
		"mlp.up_proj",
		"mlp.down_proj",
		"mlp.gate",
		"gate_proj",
		"up_proj",
		"down_proj",
		"mlp.shared_expert.gate_proj",
		"mlp.shared_expert.up_proj",
		"mlp.shared_expert.down_proj",
		"mlp.shared_expert_gate",
		NULL,
	};
	int n;

	if (mm < 0 || mm >= ENGY_GA_MM_MAX)
		return -EINVAL;
	if (mm == ENGY_GA_MM_LM_HEAD)
		n = snprintf(out, outlen, "%s",
			     tied ? "model.embed_tokens" : "lm_head");
	else if (mm >= ENGY_GA_MM_EXPERT_GATE && mm <= ENGY_GA_MM_EXPERT_DOWN)
		n = snprintf(out, outlen, "model.layers.%u.mlp.experts.%u.%s",
			     layer, expert, part[mm]);
	else
		n = snprintf(out, outlen, "model.layers.%u.%s", layer,
			     part[mm]);
	return n < 0 || (size_t)n >= outlen ? -ENOSPC : 0;
}

static bool is_expert(int mm)
{
	return mm >= ENGY_GA_MM_EXPERT_GATE && mm <= ENGY_GA_MM_EXPERT_DOWN;
}

bool engy_ga_key_ok(const struct engy_ga_key *k)
{
	if (k->mm >= ENGY_GA_MM_MAX || k->role > ENGY_GA_Y)
		return false;
	if (is_expert(k->mm) != (k->expert != ENGY_GA_NO_EXPERT))
		return false;
	return (k->layer == ENGY_GA_LM_LAYER) == (k->mm == ENGY_GA_MM_LM_HEAD);
}

uint64_t engy_ga_key_pack(const struct engy_ga_key *k)
{
	return (uint64_t)k->layer << 32 | (uint64_t)k->mm << 24 |
	       (uint64_t)k->expert << 8 | k->role;
}

void engy_ga_key_unpack(uint64_t v, struct engy_ga_key *k)
{
	k->layer = (uint16_t)(v >> 32);
	k->mm = (uint8_t)(v >> 24);
	k->expert = (uint16_t)(v >> 8);
	k->role = (uint8_t)v;
}

int engy_ga_key_cmp(const struct engy_ga_key *a, const struct engy_ga_key *b)
{
	uint64_t x = engy_ga_key_pack(a), y = engy_ga_key_pack(b);

	return x < y ? -1 : x > y;
}

static void put_key(struct engy_mh *h, const struct engy_ga_key *k)
{
	engy_mh_u16(h, k->layer);
	engy_mh_u8(h, k->mm);
	engy_mh_u16(h, k->expert);
	engy_mh_u8(h, k->role);
}

/* ---- Small hashes ---- */

static struct engy_mh *mh(void)
{
	struct engy_mh *h = engy_mh_new();

	if (!h)
		abort(); /* no SHA-256: nothing in engy works */
	return h;
}

void engy_ga_ids_hash(const uint32_t *ids, size_t n, uint8_t out[32])
{
	struct engy_mh *h = mh();
	size_t i;

	engy_mh_begin(h, ENGY_GA_TAG_IDS);
	engy_mh_u32(h, (uint32_t)n);
	for (i = 0; i < n; i++)
		engy_mh_u32(h, ids[i]);
	engy_mh_end(h, out);
	engy_mh_free(h);
}

void engy_ga_sampling_hash(double temperature, double top_p, int32_t top_k,
			   uint64_t seed, bool has_seed,
			   uint32_t max_new_tokens, uint8_t out[32])
{
	uint8_t b[8 + 8 + 4 + 8 + 1 + 4], *p = b;
	struct engy_mh *h = mh();
	uint64_t u;
	int i;

	memcpy(&u, &temperature, 8);
	for (i = 0; i < 8; i++)
		*p++ = (uint8_t)(u >> (8 * i));
	memcpy(&u, &top_p, 8);
	for (i = 0; i < 8; i++)
		*p++ = (uint8_t)(u >> (8 * i));
	for (i = 0; i < 4; i++)
		*p++ = (uint8_t)((uint32_t)top_k >> (8 * i));
	u = has_seed ? seed : 0;
	for (i = 0; i < 8; i++)
		*p++ = (uint8_t)(u >> (8 * i));
	*p++ = has_seed ? 1 : 0;
	for (i = 0; i < 4; i++)
		*p++ = (uint8_t)(max_new_tokens >> (8 * i));
	engy_mh_sha256(h, b, sizeof(b), out);
	engy_mh_free(h);
}

void engy_ga_leaf_h(struct engy_mh *h, const struct engy_ga_key *key,
		    uint32_t pos, const float *row, size_t n, uint8_t out[32])
{
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
	size_t i;
#endif

	engy_mh_begin(h, ENGY_GA_TAG_LEAF);
	put_key(h, key);
	engy_mh_u32(h, pos);
	engy_mh_u32(h, (uint32_t)n);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	engy_mh_put(h, row, n * sizeof(float));
#else
	for (i = 0; i < n; i++) {
		uint32_t u;

		memcpy(&u, &row[i], 4);
		engy_mh_u32(h, u);
	}
#endif
	engy_mh_end(h, out);
}

void engy_ga_leaf(const struct engy_ga_key *key, uint32_t pos, const float *row,
		  size_t n, uint8_t out[32])
{
	struct engy_mh *h = mh();

	engy_ga_leaf_h(h, key, pos, row, n, out);
	engy_mh_free(h);
}

void engy_ga_node(struct engy_mh *h, const uint8_t l[32], const uint8_t r[32],
		  uint8_t out[32])
{
	engy_mh_begin(h, ENGY_GA_TAG_NODE);
	engy_mh_put(h, l, 32);
	engy_mh_put(h, r, 32);
	engy_mh_end(h, out);
}

void engy_ga_empties(struct engy_mh *h, uint8_t e[ENGY_GA_MAX_DEPTH + 1][32])
{
	unsigned d;

	engy_mh_begin(h, ENGY_GA_TAG_EMPTY);
	engy_mh_end(h, e[0]);
	for (d = 1; d <= ENGY_GA_MAX_DEPTH; d++)
		engy_ga_node(h, e[d - 1], e[d - 1], e[d]);
}

void engy_ga_sub_leaf(struct engy_mh *h, const struct engy_ga_key *k,
		      const uint8_t token_root[32], uint8_t out[32])
{
	engy_mh_begin(h, ENGY_GA_TAG_SUB);
	put_key(h, k);
	engy_mh_put(h, token_root, 32);
	engy_mh_end(h, out);
}

void engy_ga_gemm_hash(struct engy_mh *h, const struct engy_ga_bind *b,
		       uint32_t n_subs, const uint8_t sub_root[32],
		       uint8_t out[32])
{
	engy_mh_begin(h, ENGY_GA_TAG_GEMM);
	engy_mh_put(h, b->spec_root, 32);
	engy_mh_put(h, b->ids_hash, 32);
	engy_mh_u32(h, b->n_prompt);
	engy_mh_u32(h, b->n_tokens);
	engy_mh_put(h, b->sampling, 32);
	engy_mh_u32(h, n_subs);
	engy_mh_put(h, sub_root, 32);
	engy_mh_end(h, out);
}

void engy_ga_trace_root(const uint8_t gemm_root[32],
			const uint8_t toploc_hash[32], uint8_t out[32])
{
	struct engy_mh *h = mh();

	engy_mh_begin(h, ENGY_GA_TAG_TRACE);
	engy_mh_put(h, gemm_root, 32);
	engy_mh_put(h, toploc_hash, 32);
	engy_mh_end(h, out);
	engy_mh_free(h);
}

void engy_ga_toploc_hash(const char *const *proofs, size_t n, uint8_t out[32])
{
	struct engy_mh *h;
	size_t i, len = 0, at = 0;
	uint8_t *buf;

	if (!proofs) {
		memset(out, 0, 32);
		return;
	}
	/* Plain SHA-256 over the length-prefixed strings. */
	for (i = 0; i < n; i++)
		len += 4 + strlen(proofs[i]);
	buf = malloc(len ? len : 1);
	if (!buf)
		abort(); /* a few KB: nothing sensible to do without them */
	for (i = 0; i < n; i++) {
		uint32_t l = (uint32_t)strlen(proofs[i]);

		buf[at++] = (uint8_t)l;
		buf[at++] = (uint8_t)(l >> 8);
		buf[at++] = (uint8_t)(l >> 16);
		buf[at++] = (uint8_t)(l >> 24);
		memcpy(buf + at, proofs[i], l);
		at += l;
	}
	h = mh();
	engy_mh_sha256(h, buf, len, out);
	engy_mh_free(h);
	free(buf);
}

void engy_ga_seed(const uint8_t spec_root[32], const uint8_t trace_root[32],
		  const char *rid, const uint8_t nonce[32], uint8_t out[32])
{
	struct engy_mh *h = mh();
	size_t n = rid ? strlen(rid) : 0;

	if (n > 0xffff)
		n = 0xffff;
	engy_mh_begin(h, ENGY_GA_TAG_CHAL);
	engy_mh_put(h, spec_root, 32);
	engy_mh_put(h, trace_root, 32);
	engy_mh_u16(h, (uint16_t)n);
	engy_mh_put(h, rid, n);
	engy_mh_put(h, nonce, 32);
	engy_mh_end(h, out);
	engy_mh_free(h);
}

/* ---- Sparse trees ---- */

/*
 * The root of the subtree of depth @d starting at position @base holding
 * entries @e[0 .. n) (sorted, all inside it).  For each wanted position
 * inside it, its sibling at each level goes to paths[w * depth + level].
 */
static void sparse(struct engy_mh *h, const struct engy_ga_ent *e, size_t n,
		   unsigned d, uint64_t base,
		   const uint8_t empty[ENGY_GA_MAX_DEPTH + 1][32],
		   const uint32_t *want, size_t n_want, unsigned depth,
		   uint8_t *paths, uint8_t out[32])
{
	uint8_t l[32], r[32];
	uint64_t mid;
	size_t m, w;

	if (!n) {
		memcpy(out, empty[d], 32);
		return;
	}
	if (d == 0) {
		memcpy(out, e[0].leaf, 32);
		return;
	}
	mid = base + ((uint64_t)1 << (d - 1));
	for (m = 0; m < n && e[m].pos < mid; m++)
		;
	/* Narrow the wanted list to this subtree's halves. */
	sparse(h, e, m, d - 1, base, empty, want, n_want, depth, paths, l);
	sparse(h, e + m, n - m, d - 1, mid, empty, want, n_want, depth, paths,
	       r);
	for (w = 0; w < n_want; w++) {
		if (want[w] < base || want[w] >= mid + (mid - base))
			continue;
		memcpy(paths + (w * depth + (d - 1)) * 32,
		       want[w] < mid ? r : l, 32);
	}
	engy_ga_node(h, l, r, out);
}

void engy_ga_sparse_root(struct engy_mh *h, const struct engy_ga_ent *e,
			 size_t n, unsigned depth,
			 const uint8_t empty[ENGY_GA_MAX_DEPTH + 1][32],
			 const uint32_t *want, size_t n_want, uint8_t *paths,
			 uint8_t out[32])
{
	sparse(h, e, n, depth, 0, empty, want, n_want, depth, paths, out);
}

void engy_ga_fold(struct engy_mh *h, const uint8_t leaf[32], uint64_t index,
		  const uint8_t *path, unsigned depth, uint8_t root[32])
{
	uint8_t cur[32];
	unsigned d;

	memcpy(cur, leaf, 32);
	for (d = 0; d < depth; d++) {
		if ((index >> d) & 1)
			engy_ga_node(h, path + 32 * d, cur, cur);
		else
			engy_ga_node(h, cur, path + 32 * d, cur);
	}
	memcpy(root, cur, 32);
}

/* ---- The trace ---- */

struct engy_ga_trace *engy_ga_trace_new(uint32_t max_tokens)
{
	struct engy_ga_trace *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->h = engy_mh_new();
	if (!t->h) {
		free(t);
		return NULL;
	}
	t->max_tokens = max_tokens;
	return t;
}

void engy_ga_trace_free(struct engy_ga_trace *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->n_subs; i++)
		free(t->subs[i].e);
	free(t->subs);
	free(t->index);
	free(t->order);
	engy_mh_free(t->h);
	free(t);
}

size_t engy_ga_trace_bytes(const struct engy_ga_trace *t)
{
	size_t b = sizeof(*t) + t->cap_subs * sizeof(*t->subs) +
		   t->index_cap * sizeof(*t->index) +
		   (t->order ? t->n_subs * sizeof(*t->order) : 0),
	       i;

	for (i = 0; i < t->n_subs; i++)
		b += t->subs[i].cap * sizeof(*t->subs[i].e);
	return b;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	return x;
}

/* The sub of @key, created when @create; NULL when absent or ENOMEM. */
struct engy_ga_sub *engy_ga_trace_sub(struct engy_ga_trace *t, uint64_t key,
				      bool create)
{
	size_t i, mask;

	if (t->index_cap) {
		mask = t->index_cap - 1;
		for (i = mix(key) & mask; t->index[i]; i = (i + 1) & mask)
			if (t->subs[t->index[i] - 1].key == key)
				return &t->subs[t->index[i] - 1];
	}
	if (!create)
		return NULL;
	if (2 * (t->n_subs + 1) > t->index_cap) {
		size_t cap = t->index_cap ? 2 * t->index_cap : 64, j;
		uint32_t *ix = calloc(cap, sizeof(*ix));

		if (!ix)
			return NULL;
		for (j = 0; j < t->n_subs; j++) {
			for (i = mix(t->subs[j].key) & (cap - 1); ix[i];
			     i = (i + 1) & (cap - 1))
				;
			ix[i] = (uint32_t)(j + 1);
		}
		free(t->index);
		t->index = ix;
		t->index_cap = cap;
	}
	if (!ENGY_GROW_BY(t->subs, t->cap_subs, t->n_subs, 1))
		return NULL;
	memset(&t->subs[t->n_subs], 0, sizeof(t->subs[0]));
	t->subs[t->n_subs].key = key;
	mask = t->index_cap - 1;
	for (i = mix(key) & mask; t->index[i]; i = (i + 1) & mask)
		;
	t->index[i] = (uint32_t)(++t->n_subs);
	return &t->subs[t->n_subs - 1];
}

/* The entry at @pos in @s (sorted), or the place it would go. */
size_t engy_ga_sub_find(const struct engy_ga_sub *s, uint32_t pos, bool *found)
{
	size_t lo = 0, hi = s->n;

	if (s->n && s->e[s->n - 1].pos < pos) {
		*found = false;
		return s->n;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->e[mid].pos < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < s->n && s->e[lo].pos == pos;
	return lo;
}

int engy_ga_trace_add(struct engy_ga_trace *t, const struct engy_ga_key *key,
		      uint32_t pos, const float *row, size_t n)
{
	struct engy_ga_sub *s;
	bool found;
	size_t at;

	if (t->rooted)
		return -EBUSY;
	if (!engy_ga_key_ok(key) || !row || !n || n > ENGY_GA_MAX_ROW)
		return -EINVAL;
	if (pos >= t->max_tokens)
		return -ERANGE;
	s = engy_ga_trace_sub(t, engy_ga_key_pack(key), true);
	if (!s)
		return -ENOMEM;
	at = engy_ga_sub_find(s, pos, &found);
	if (found)
		return -EEXIST;
	if (!ENGY_GROW_BY(s->e, s->cap, s->n, 1))
		return -ENOMEM;
	memmove(&s->e[at + 1], &s->e[at], (s->n - at) * sizeof(s->e[0]));
	s->e[at].pos = pos;
	engy_ga_leaf_h(t->h, key, pos, row, n, s->e[at].leaf);
	s->n++;
	return 0;
}

static int cmp_sub(const void *a, const void *b, void *arg)
{
	const struct engy_ga_trace *t = arg;
	uint64_t x = t->subs[*(const uint32_t *)a].key,
		 y = t->subs[*(const uint32_t *)b].key;

	return x < y ? -1 : x > y;
}

/* The sub tree's leaves (sorted by key) into @leaves (n_subs x 32). */
static void sub_leaves(struct engy_ga_trace *t, struct engy_ga_ent *leaves)
{
	size_t i;

	for (i = 0; i < t->n_subs; i++) {
		struct engy_ga_sub *s = &t->subs[t->order[i]];
		struct engy_ga_key k;

		engy_ga_key_unpack(s->key, &k);
		leaves[i].pos = (uint32_t)i;
		engy_ga_sub_leaf(t->h, &k, s->root, leaves[i].leaf);
	}
}

int engy_ga_trace_gemm_root(struct engy_ga_trace *t,
			    const struct engy_ga_bind *b, uint8_t out[32])
{
	struct engy_ga_ent *leaves;
	unsigned depth;
	size_t i;

	if (!b->n_tokens || b->n_prompt > b->n_tokens)
		return -EINVAL;
	if (t->rooted) {
		if (memcmp(b, &t->bind, sizeof(*b)))
			return -EINVAL;
		memcpy(out, t->gemm_root, 32);
		return 0;
	}
	for (i = 0; i < t->n_subs; i++)
		if (t->subs[i].n &&
		    t->subs[i].e[t->subs[i].n - 1].pos >= b->n_tokens)
			return -ERANGE;
	free(t->order);
	t->order = malloc((t->n_subs ? t->n_subs : 1) * sizeof(*t->order));
	leaves = malloc((t->n_subs ? t->n_subs : 1) * sizeof(*leaves));
	if (!t->order || !leaves) {
		free(leaves);
		return -ENOMEM;
	}
	engy_ga_empties(t->h, t->empty);
	depth = engy_mc_depth(b->n_tokens);
	for (i = 0; i < t->n_subs; i++) {
		t->order[i] = (uint32_t)i;
		engy_ga_sparse_root(t->h, t->subs[i].e, t->subs[i].n, depth,
				    t->empty, NULL, 0, NULL, t->subs[i].root);
	}
	qsort_r(t->order, t->n_subs, sizeof(*t->order), cmp_sub, t);
	for (i = 0; i < t->n_subs; i++)
		t->subs[t->order[i]].rank = (uint32_t)i;
	sub_leaves(t, leaves);
	engy_ga_sparse_root(t->h, leaves, t->n_subs, engy_mc_depth(t->n_subs),
			    t->empty, NULL, 0, NULL, t->sub_root);
	free(leaves);
	t->bind = *b;
	engy_ga_gemm_hash(t->h, b, (uint32_t)t->n_subs, t->sub_root,
			  t->gemm_root);
	t->rooted = true;
	memcpy(out, t->gemm_root, 32);
	return 0;
}

/* Sub-tree paths of the subs ranked @ranks (n x depth x 32 into @paths). */
int engy_ga_trace_sub_paths(struct engy_ga_trace *t, const uint32_t *ranks,
			    size_t n, uint8_t *paths)
{
	struct engy_ga_ent *leaves =
		malloc((t->n_subs ? t->n_subs : 1) * sizeof(*leaves));
	uint8_t root[32];

	if (!leaves)
		return -ENOMEM;
	sub_leaves(t, leaves);
	engy_ga_sparse_root(t->h, leaves, t->n_subs, engy_mc_depth(t->n_subs),
			    t->empty, ranks, n, paths, root);
	free(leaves);
	return memcmp(root, t->sub_root, 32) ? -EIO : 0;
}

/* ---- PRNG and challenge ---- */

void engy_ga_prng_init(struct engy_ga_prng *p, const uint8_t seed[32])
{
	memcpy(p->seed, seed, 32);
	p->block = 0;
	p->used = 4;
}

uint64_t engy_ga_prng_u64(struct engy_ga_prng *p)
{
	if (p->used == 4) {
		struct engy_mh *h = mh();
		uint8_t b[32];
		int i, j;

		engy_mh_begin(h, ENGY_GA_TAG_PRNG);
		engy_mh_put(h, p->seed, 32);
		engy_mh_u64(h, p->block++);
		engy_mh_end(h, b);
		engy_mh_free(h);
		for (i = 0; i < 4; i++) {
			p->buf[i] = 0;
			for (j = 0; j < 8; j++)
				p->buf[i] |= (uint64_t)b[8 * i + j] << (8 * j);
		}
		p->used = 0;
	}
	return p->buf[p->used++];
}

uint64_t engy_ga_prng_below(struct engy_ga_prng *p, uint64_t n)
{
	/* Reject the top 2^64 mod n values so that x mod n is uniform. */
	uint64_t lim = n ? UINT64_MAX - (UINT64_MAX % n + 1) % n : 0, x;

	if (n <= 1)
		return 0;
	do
		x = engy_ga_prng_u64(p);
	while (x > lim);
	return x % n;
}

void engy_ga_product_seed(const uint8_t seed[32], uint16_t layer, uint8_t mm,
			  uint16_t expert, uint8_t out[32])
{
	struct engy_mh *h = mh();

	engy_mh_begin(h, ENGY_GA_TAG_PRNG);
	engy_mh_put(h, seed, 32);
	engy_mh_u16(h, layer);
	engy_mh_u8(h, mm);
	engy_mh_u16(h, expert);
	engy_mh_u8(h, 0xff);
	engy_mh_end(h, out);
	engy_mh_free(h);
}

int engy_ga_challenge(const uint8_t seed[32], uint32_t n_layers,
		      uint32_t n_prompt, uint32_t n_tokens,
		      const struct engy_ga_params *p, struct engy_ga_cell *out,
		      size_t cap, size_t *n)
{
	struct engy_ga_prng g;
	uint32_t *cand = NULL, nc = 0, L, i, j;
	size_t k = 0;
	int rc = 0;

	*n = 0;
	if (n_layers > ENGY_GA_LM_LAYER || n_prompt > n_tokens)
		return -EINVAL;
	if (n_tokens < 2 || !p->layers || !p->tokens)
		return 0;
	cand = malloc(((size_t)n_layers + 1) * sizeof(*cand));
	if (!cand)
		return -ENOMEM;
	for (i = 0; i < n_layers; i++)
		cand[nc++] = i;
	/* lm_head has rows at n_prompt-1 .. n_tokens-2 (none without a
	 * prompt token before the first output). */
	if (n_prompt >= 1 && n_prompt < n_tokens)
		cand[nc++] = ENGY_GA_LM_LAYER;
	engy_ga_prng_init(&g, seed);
	L = p->layers < nc ? p->layers : nc;
	for (i = 0; i < L; i++) {
		uint32_t t = (uint32_t)(i + engy_ga_prng_below(&g, nc - i)), lo,
			 hi, T, s;

		j = cand[i];
		cand[i] = cand[t];
		cand[t] = j;
		lo = cand[i] == ENGY_GA_LM_LAYER ? n_prompt - 1 : 0;
		hi = n_tokens - 1;
		T = p->tokens < hi - lo ? p->tokens : hi - lo;
		for (s = 0; s < T; s++) {
			uint32_t pos;
			size_t q;
			bool dup;

			do {
				pos = lo +
				      (uint32_t)engy_ga_prng_below(&g, hi - lo);
				dup = false;
				for (q = k - s; q < k; q++)
					if (out[q].pos == pos)
						dup = true;
			} while (dup);
			if (k >= cap) {
				rc = -ENOSPC;
				goto out;
			}
			out[k].layer = (uint16_t)cand[i];
			out[k].pos = pos;
			k++;
		}
	}
	*n = k;
out:
	free(cand);
	return rc;
}

char *engy_ga_challenge_json(const uint8_t nonce[32],
			     const struct engy_ga_cell *c, size_t n)
{
	size_t cap = 96 + n * 24, i, len;
	char *s = malloc(cap), hex[65];

	if (!s)
		return NULL;
	engy_hex_print(nonce, 32, hex);
	len = (size_t)snprintf(s, cap, "{\"nonce\":\"%s\",\"cells\":[", hex);
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s[%u,%u]",
					i ? "," : "", c[i].layer, c[i].pos);
	snprintf(s + len, cap - len, "]}");
	return s;
}

bool engy_ga_json_u32(const cJSON *j, uint32_t max, uint32_t *out)
{
	double d;

	if (!cJSON_IsNumber(j))
		return false;
	d = j->valuedouble;
	if (!(d >= 0) || d > (double)max || d != (double)(uint64_t)d)
		return false;
	*out = (uint32_t)d;
	return true;
}

bool engy_ga_json_hex32(const cJSON *j, uint8_t out[32])
{
	return cJSON_IsString(j) && strlen(j->valuestring) == 64 &&
	       engy_hex_parse(j->valuestring, out, 32) == 0;
}

int engy_ga_cells_parse(const cJSON *a, struct engy_ga_cell **cells, size_t *n,
			char *err, size_t errlen)
{
	const cJSON *c;
	size_t k = 0, cnt;

	*cells = NULL;
	*n = 0;
	if (!cJSON_IsArray(a))
		return engy_seterr(err, errlen, "cells is not an array"),
		       -EINVAL;
	cnt = (size_t)cJSON_GetArraySize(a);
	if (cnt > ENGY_GA_MAX_CELLS)
		return engy_seterr(err, errlen, "over %u cells",
				   ENGY_GA_MAX_CELLS),
		       -EINVAL;
	*cells = calloc(cnt ? cnt : 1, sizeof(**cells));
	if (!*cells)
		return -ENOMEM;
	cJSON_ArrayForEach(c, a)
	{
		uint32_t l, p;

		if (!cJSON_IsArray(c) || cJSON_GetArraySize(c) != 2 ||
		    !engy_ga_json_u32(cJSON_GetArrayItem(c, 0), 0xffff, &l) ||
		    !engy_ga_json_u32(cJSON_GetArrayItem(c, 1), UINT32_MAX,
				      &p)) {
			free(*cells);
			*cells = NULL;
			engy_seterr(err, errlen,
				    "cell %zu is not [layer, position]", k);
			return -EINVAL;
		}
		(*cells)[k].layer = (uint16_t)l;
		(*cells)[k].pos = p;
		k++;
	}
	*n = k;
	return 0;
}

int engy_ga_challenge_parse(const char *buf, size_t len, uint8_t nonce[32],
			    struct engy_ga_cell **cells, size_t *n, char *err,
			    size_t errlen)
{
	cJSON *j = cJSON_ParseWithLength(buf, len);
	int rc;

	*cells = NULL;
	*n = 0;
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		engy_seterr(err, errlen, "the challenge is not a JSON object");
		return -EINVAL;
	}
	if (!engy_ga_json_hex32(cJSON_GetObjectItemCaseSensitive(j, "nonce"),
				nonce)) {
		cJSON_Delete(j);
		engy_seterr(err, errlen, "nonce is not 64 hex digits");
		return -EINVAL;
	}
	rc = engy_ga_cells_parse(cJSON_GetObjectItemCaseSensitive(j, "cells"),
				 cells, n, err, errlen);
	cJSON_Delete(j);
	return rc;
}
