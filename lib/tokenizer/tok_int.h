/* SPDX-License-Identifier: MIT */
/*
 * Tokenizer internals shared by lib/tok_*.c and lib/tokenizer/tokenizer.c; not part
 * of the public API (tests include it to reach the building blocks).
 */
#ifndef ENGY_TOK_INTERNAL_H
#define ENGY_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer.h"

/* Ids are dense array indices; a larger id in a file is refused at load. */
#define TOK_MAX_ID     (1u << 24)
#define TOK_NONE       UINT32_MAX
#define TOK_MAX_STAGES 8

enum {
	TOK_F_VOCAB = 1,   /* id is in model.vocab */
	TOK_F_ADDED = 2,   /* id is an added token */
	TOK_F_SPECIAL = 4, /* dropped by skip_special */
};

/* A byte range in one of the tokenizer's arenas. */
struct tok_span {
	uint32_t off;
	uint32_t len;
};

/* One merge; key UINT64_MAX marks a free slot (ids stay below 2^24). */
struct tok_merge {
	uint64_t key;
	uint32_t rank;
	uint32_t id;
};

/* Open-addressing set of ids keyed by a string each id owns. */
struct tok_strtab {
	uint32_t *slot; /* id, or TOK_NONE */
	uint32_t mask;
};

struct tok_added {
	const uint8_t *content; /* into t->added_arena; valid UTF-8 */
	uint32_t len;
	uint32_t id;
	bool lstrip, rstrip, single_word, normalized, special;
};

/*
 * Leftmost-longest literal matcher over a subset of the added tokens:
 * order[first[b] .. first[b + 1]) are the tokens starting with byte b,
 * longest first.
 */
struct tok_matcher {
	uint32_t *order;
	uint32_t first[257];
	size_t n;
};

enum tok_stage_kind {
	TOK_STAGE_SPLIT,	/* regex split, matches and gaps both kept */
	TOK_STAGE_PREFIX_SPACE, /* ByteLevel add_prefix_space */
};

struct tok_stage {
	enum tok_stage_kind kind;
	pcre2_code *re;
	bool jit;
};

struct engy_tokenizer {
	uint32_t n_ids; /* max id + 1 */
	uint8_t *flags;
	/*
	 * Bytes an id decodes to (ByteLevel decoder rule); len TOK_NONE =
	 * unused id.
	 */
	struct tok_span *dec;
	uint8_t *dec_arena;
	/* model.vocab keys as written in the file (byte-level alphabet). */
	struct tok_span *vkey;
	char *vkey_arena;
	struct tok_strtab vocab_tab;
	struct tok_strtab added_tab; /* keyed by added-token content */
	uint32_t byte_id[256]; /* id of each single-byte symbol, or TOK_NONE */

	/* merges: (left << 32 | right) -> rank, merged id */
	struct tok_merge *mtab;
	uint32_t mmask;
	size_t n_merges;

	struct tok_added *added;
	size_t n_added;
	uint8_t *added_arena;
	struct tok_matcher match_raw;  /* added tokens with normalized=false */
	struct tok_matcher match_norm; /* normalized=true, matched after NFC */

	bool nfc;
	struct tok_stage stages[TOK_MAX_STAGES];
	size_t n_stages;

	bool ignore_merges;
	bool fuse_unk;
	uint32_t unk_id;    /* TOK_NONE without unk_token */
	bool split_special; /* tokenizer_config split_special_tokens */
	uint64_t uid;	    /* names this tokenizer in per-thread caches */
};

/* 64-bit hash of a byte string (not keyed: for tables built from files). */
static inline uint64_t tok_hash(const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t h =
		0x9e3779b97f4a7c15ull ^ ((uint64_t)n * 0xff51afd7ed558ccdull);
	uint64_t v;

	while (n >= 8) {
		memcpy(&v, s, 8);
		h = (h ^ v) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
		s += 8;
		n -= 8;
	}
	v = 0;
	memcpy(&v, s, n);
	h = (h ^ v) * 0x94d049bb133111ebull;
	return h ^ (h >> 29);
}

static inline uint64_t tok_hash_pair(uint32_t a, uint32_t b)
{
	uint64_t h = ((uint64_t)a << 32 | b) * 0x9e3779b97f4a7c15ull;

	return h ^ (h >> 32);
}

/* tok_text.c: UTF-8, Unicode classes, NFC, added-token matching. */
bool engy_tok_utf8_valid(const uint8_t *s, size_t n);
/* Decode the code point at s[*i] of valid UTF-8 and advance *i. */
uint32_t engy_tok_utf8_next(const uint8_t *s, size_t n, size_t *i);
/*
 * Writes @n bytes with U+FFFD for ill-formed parts (maximal subparts); @out
 * holds 3 * n.
 */
size_t engy_tok_utf8_lossy(const uint8_t *in, size_t n, uint8_t *out);
bool engy_tok_is_white_space(uint32_t cp);
bool engy_tok_is_word_char(uint32_t cp);
/* NFC quick check: true when @s (valid UTF-8) is certainly already NFC. */
bool engy_tok_nfc_quick(const uint8_t *s, size_t n);
/* NFC of valid UTF-8: *out is NULL when @s is already NFC, else malloc'd. */
int engy_tok_nfc(const uint8_t *s, size_t n, uint8_t **out, size_t *outlen);

struct tok_piece {
	size_t start, end;
	uint32_t id; /* added-token id, or TOK_NONE for plain text */
};

typedef int (*tok_piece_fn)(void *ctx, const uint8_t *s,
			    const struct tok_piece *p);

int engy_tok_matcher_build(struct tok_matcher *m, const struct tok_added *added,
			   size_t n_added, bool normalized);
void engy_tok_matcher_free(struct tok_matcher *m);
/*
 * Split @s into added tokens and text between them as the reference does
 * (lstrip/rstrip/single_word honoured; special ones skipped when
 * @skip_special), calling @fn on each piece in order.
 */
int engy_tok_split_added(const struct engy_tokenizer *t,
			 const struct tok_matcher *m, const uint8_t *s,
			 size_t n, tok_piece_fn fn, void *ctx);

/* tok_pretok.c: pre-tokenizer stages. */
/* Rewrites an Oniguruma pattern for PCRE2 (\s and \S as White_Space). */
char *engy_tok_regex_translate(const char *pat, size_t len);
int engy_tok_stage_add_regex(struct engy_tokenizer *t, const char *pat,
			     size_t len, bool literal, char *err,
			     size_t errlen);
int engy_tok_stage_add_prefix_space(struct engy_tokenizer *t, char *err,
				    size_t errlen);
void engy_tok_stages_free(struct engy_tokenizer *t);

/* tok_bpe.c: merges and the BPE model. */
int engy_tok_merges_init(struct engy_tokenizer *t, size_t n);
/* Adds or (as the reference's map does) replaces a merge. */
void engy_tok_merges_put(struct engy_tokenizer *t, uint32_t a, uint32_t b,
			 uint32_t rank, uint32_t id);
bool engy_tok_merges_get(const struct engy_tokenizer *t, uint32_t a, uint32_t b,
			 uint32_t *rank, uint32_t *id);
/* Merge the symbols @sym[0..n) in place; returns the new count. */
size_t engy_tok_bpe_merge_small(const struct engy_tokenizer *t, uint32_t *sym,
				size_t n);
int engy_tok_bpe_merge_heap(const struct engy_tokenizer *t, uint32_t *sym,
			    size_t n, size_t *out_n);

struct tok_ids {
	uint32_t *v;
	size_t n, cap;
};

int engy_tok_ids_push(struct tok_ids *o, uint32_t id);
/* BPE one pre-token (raw bytes) and append its ids, through the thread's cache.
 */
struct tok_tls;
int engy_tok_bpe_piece(const struct engy_tokenizer *t, struct tok_tls *tls,
		       const uint8_t *s, size_t n, struct tok_ids *o);

/* Per-thread scratch: PCRE2 match data and the piece cache (NULL: no memory).
 */
struct tok_tls *engy_tok_tls_get(const struct engy_tokenizer *t);
pcre2_match_data *engy_tok_tls_match_data(struct tok_tls *tls);
pcre2_match_context *engy_tok_tls_match_context(struct tok_tls *tls);

/* tok_pretok.c: run the stages from @stage on one piece, BPE-ing the leaves. */
int engy_tok_pretokenize(const struct engy_tokenizer *t, struct tok_tls *tls,
			 size_t stage, const uint8_t *s, size_t n,
			 struct tok_ids *o);

/* tok_strtab helpers (tok_load.c). */
uint32_t engy_tok_strtab_find(const struct engy_tokenizer *t,
			      const struct tok_strtab *tab, bool added,
			      const void *key, size_t len);

/* Byte-level alphabet (GPT-2 bytes_to_unicode). */
uint32_t engy_tok_byte_to_cp(uint8_t b);
/* Byte for a code point of the alphabet, or -1. */
int engy_tok_cp_to_byte(uint32_t cp);

#endif /* ENGY_TOK_INTERNAL_H */
