/* SPDX-License-Identifier: MIT */
/*
 * Text-level pieces of the tokenizer: UTF-8 validation and lossy decoding,
 * the Unicode classes the reference uses, NFC (utf8proc) with a quick check
 * so that text which cannot change skips the full normalizer, and splitting
 * on added tokens.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tok_int.h"

/* Bytes 0x80..0xFF: sequence length, 0 for a byte that cannot lead. */
static uint8_t utf8_len(uint8_t b)
{
	if (b < 0x80)
		return 1;
	if (b < 0xC2)
		return 0;
	if (b < 0xE0)
		return 2;
	if (b < 0xF0)
		return 3;
	if (b < 0xF5)
		return 4;
	return 0;
}

/* Allowed range of the second byte after lead @b (Unicode Table 3-7). */
static void utf8_second(uint8_t b, uint8_t *lo, uint8_t *hi)
{
	*lo = 0x80;
	*hi = 0xBF;
	if (b == 0xE0)
		*lo = 0xA0;
	else if (b == 0xED)
		*hi = 0x9F;
	else if (b == 0xF0)
		*lo = 0x90;
	else if (b == 0xF4)
		*hi = 0x8F;
}

/*
 * Length of the well-formed sequence at s[0..n), or -(length of its
 * maximal ill-formed subpart) (at least 1).
 */
static long utf8_seq(const uint8_t *s, size_t n)
{
	uint8_t lo, hi;
	size_t len, k;

	len = utf8_len(s[0]);
	if (len == 1)
		return 1;
	if (len == 0)
		return -1;
	utf8_second(s[0], &lo, &hi);
	for (k = 1; k < len; k++) {
		if (k >= n)
			return -(long)k;
		if (s[k] < lo || s[k] > hi)
			return -(long)k;
		lo = 0x80;
		hi = 0xBF;
	}
	return (long)len;
}

bool engy_tok_utf8_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;
	uint64_t w;
	long r;

	while (i < n) {
		if (n - i >= 8) {
			memcpy(&w, s + i, 8);
			if (!(w & 0x8080808080808080ull)) {
				i += 8;
				continue;
			}
		}
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		r = utf8_seq(s + i, n - i);
		if (r < 0)
			return false;
		i += (size_t)r;
	}
	return true;
}

uint32_t engy_tok_utf8_next(const uint8_t *s, size_t n, size_t *i)
{
	uint8_t b = s[*i];
	uint32_t cp;
	size_t len = utf8_len(b), k;

	if (len <= 1 || *i + len > n) {
		(*i)++;
		return b;
	}
	cp = b & (0x7F >> len);
	for (k = 1; k < len; k++)
		cp = cp << 6 | (s[*i + k] & 0x3F);
	*i += len;
	return cp;
}

size_t engy_tok_utf8_lossy(const uint8_t *in, size_t n, uint8_t *out)
{
	size_t i = 0, o = 0;
	long r;

	while (i < n) {
		if (in[i] < 0x80) {
			out[o++] = in[i++];
			continue;
		}
		r = utf8_seq(in + i, n - i);
		if (r > 0) {
			memcpy(out + o, in + i, (size_t)r);
			o += (size_t)r;
			i += (size_t)r;
		} else {
			/*
			 * One U+FFFD per maximal subpart, as Rust's
			 * from_utf8_lossy and WHATWG.
			 */
			out[o++] = 0xEF;
			out[o++] = 0xBF;
			out[o++] = 0xBD;
			i += (size_t)-r;
		}
	}
	return o;
}

/* The White_Space property (Rust char::is_whitespace, Oniguruma's Unicode \s).
 */
bool engy_tok_is_white_space(uint32_t cp)
{
	utf8proc_category_t c;

	if (cp < 0x80)
		return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
	if (cp == 0x85)
		return true;
	c = utf8proc_category((utf8proc_int32_t)cp);
	return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL ||
	       c == UTF8PROC_CATEGORY_ZP;
}

/*
 * Rust regex \w (single_word added tokens): letters, marks, decimal
 * digits, connector punctuation, joiners.  Letter numbers stand in for the
 * rest of Alphabetic.
 */
bool engy_tok_is_word_char(uint32_t cp)
{
	utf8proc_category_t c;

	if (cp < 0x80)
		return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') ||
		       (cp >= 'A' && cp <= 'Z') || cp == '_';
	if (cp == 0x200C || cp == 0x200D)
		return true;
	c = utf8proc_category((utf8proc_int32_t)cp);
	switch (c) {
	case UTF8PROC_CATEGORY_LU:
	case UTF8PROC_CATEGORY_LL:
	case UTF8PROC_CATEGORY_LT:
	case UTF8PROC_CATEGORY_LM:
	case UTF8PROC_CATEGORY_LO:
	case UTF8PROC_CATEGORY_MN:
	case UTF8PROC_CATEGORY_MC:
	case UTF8PROC_CATEGORY_ME:
	case UTF8PROC_CATEGORY_ND:
	case UTF8PROC_CATEGORY_NL:
	case UTF8PROC_CATEGORY_PC:
		return true;
	default:
		return false;
	}
}

/*
 * NFC quick check.  A code point is "unsafe" when NFC could change it or
 * its neighbour: a non-zero combining class, a canonical decomposition,
 * or a place after the first in some canonical decomposition (so it might
 * compose with what precedes it).  Text without unsafe code points is NFC.
 * The set comes from utf8proc's own data once per process, so it always
 * agrees with the normalizer it guards.
 */
#define TOK_CP_LIMIT 0x110000u
static uint8_t nfc_unsafe[TOK_CP_LIMIT / 8];
static pthread_once_t nfc_once = PTHREAD_ONCE_INIT;

/* Hangul syllables are algorithmic composites: NFC leaves them alone. */
#define HANGUL_S_BASE  0xAC00u
#define HANGUL_S_COUNT 11172u

static void nfc_mark(uint32_t cp)
{
	nfc_unsafe[cp >> 3] |= (uint8_t)(1u << (cp & 7));
}

static void nfc_init(void)
{
	utf8proc_int32_t buf[8];
	utf8proc_ssize_t n, k;
	uint32_t cp;
	int bc;

	for (cp = 0x80; cp < TOK_CP_LIMIT; cp++) {
		const utf8proc_property_t *p;

		if (cp >= 0xD800 && cp < 0xE000)
			continue;
		p = utf8proc_get_property((utf8proc_int32_t)cp);
		if (p->category == UTF8PROC_CATEGORY_CN)
			continue;
		if (p->combining_class)
			nfc_mark(cp);
		bc = 0;
		n = utf8proc_decompose_char((utf8proc_int32_t)cp, buf, 8,
					    UTF8PROC_DECOMPOSE, &bc);
		if (n < 1 || n > 8 ||
		    (n == 1 && buf[0] == (utf8proc_int32_t)cp))
			continue;
		if (cp - HANGUL_S_BASE >= HANGUL_S_COUNT)
			nfc_mark(cp);
		for (k = 1; k < n; k++)
			nfc_mark((uint32_t)buf[k]);
	}
}

static bool nfc_is_unsafe(uint32_t cp)
{
	return cp < TOK_CP_LIMIT && (nfc_unsafe[cp >> 3] >> (cp & 7) & 1);
}

bool engy_tok_nfc_quick(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		pthread_once(&nfc_once, nfc_init);
		if (nfc_is_unsafe(engy_tok_utf8_next(s, n, &i)))
			return false;
	}
	return true;
}

/* Appends NFC(s[0..n)) to @o (room for 3 * n more bytes). */
static int nfc_chunk(const uint8_t *s, size_t n, uint8_t *o, size_t *olen)
{
	utf8proc_uint8_t *dst = NULL;
	utf8proc_ssize_t r;

	r = utf8proc_map(s, (utf8proc_ssize_t)n, &dst,
			 UTF8PROC_STABLE | UTF8PROC_COMPOSE);
	if (r < 0)
		return r == UTF8PROC_ERROR_NOMEM ? -ENOMEM : -EILSEQ;
	memcpy(o + *olen, dst, (size_t)r);
	*olen += (size_t)r;
	free(dst);
	return 0;
}

/*
 * Normalization never acts across the start of a safe code point (one NFC
 * leaves alone and that never composes with what precedes it), so only the
 * chunks from a safe code point up to the next one that hold an unsafe code
 * point go through utf8proc; the rest is copied.
 */
int engy_tok_nfc(const uint8_t *s, size_t n, uint8_t **out, size_t *outlen)
{
	size_t i = 0, chunk = 0, copied = 0, o = 0, at;
	bool dirty = false;
	uint8_t *buf;
	uint32_t cp;
	int rc;

	*out = NULL;
	*outlen = n;
	if (engy_tok_nfc_quick(s, n))
		return 0;
	/* NFC grows UTF-8 at most threefold. */
	buf = malloc(3 * n + 1);
	if (!buf)
		return -ENOMEM;
	while (i <= n) {
		at = i;
		cp = i < n ? (s[i] < 0x80 ? s[i++]
					  : engy_tok_utf8_next(s, n, &i))
			   : 0;
		if (at < n && nfc_is_unsafe(cp)) {
			dirty = true;
			continue;
		}
		/* A boundary at @at: flush the chunk that ends here. */
		if (dirty) {
			memcpy(buf + o, s + copied, chunk - copied);
			o += chunk - copied;
			rc = nfc_chunk(s + chunk, at - chunk, buf, &o);
			if (rc) {
				free(buf);
				return rc;
			}
			copied = at;
			dirty = false;
		}
		chunk = at;
		if (at == n)
			break;
	}
	memcpy(buf + o, s + copied, n - copied);
	o += n - copied;
	*out = buf;
	*outlen = o;
	return 0;
}

/* Added tokens. */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int engy_tok_matcher_build(struct tok_matcher *m, const struct tok_added *added,
			   size_t n_added, bool normalized)
{
	uint64_t *key;
	size_t i, k = 0;
	unsigned b;

	memset(m, 0, sizeof(*m));
	m->order = malloc((n_added ? n_added : 1) * sizeof(*m->order));
	key = malloc((n_added ? n_added : 1) * sizeof(*key));
	if (!m->order || !key) {
		free(key);
		engy_tok_matcher_free(m);
		return -ENOMEM;
	}
	/* Sort by first byte, then longest first (content is under 2^24 bytes).
	 */
	for (i = 0; i < n_added; i++)
		if (added[i].normalized == normalized)
			key[k++] = (uint64_t)added[i].content[0] << 56 |
				   (uint64_t)(0xFFFFFFu - added[i].len) << 32 |
				   i;
	qsort(key, k, sizeof(*key), cmp_u64);
	for (i = 0; i < k; i++)
		m->order[i] = (uint32_t)key[i];
	free(key);
	m->n = k;
	i = 0;
	for (b = 0; b < 256; b++) {
		m->first[b] = (uint32_t)i;
		while (i < k && added[m->order[i]].content[0] == b)
			i++;
	}
	m->first[256] = (uint32_t)k;
	return 0;
}

void engy_tok_matcher_free(struct tok_matcher *m)
{
	free(m->order);
	m->order = NULL;
	m->n = 0;
}

/*
 * Leftmost-longest match at or after @pos; returns the index into t->added or
 * -1.
 */
static long find_added(const struct engy_tokenizer *t,
		       const struct tok_matcher *m, const uint8_t *s, size_t n,
		       size_t pos, size_t *at)
{
	size_t i, k;

	for (i = pos; i < n; i++) {
		uint8_t b = s[i];

		for (k = m->first[b]; k < m->first[b + 1]; k++) {
			const struct tok_added *a = &t->added[m->order[k]];

			if (a->len <= n - i &&
			    memcmp(s + i, a->content, a->len) == 0) {
				*at = i;
				return (long)m->order[k];
			}
		}
	}
	return -1;
}

/* Code point ending at s[end) (valid UTF-8, end > 0). */
static uint32_t cp_before(const uint8_t *s, size_t end, size_t *start)
{
	size_t i = end - 1, j;

	while (i > 0 && (s[i] & 0xC0) == 0x80)
		i--;
	j = i;
	*start = i;
	return engy_tok_utf8_next(s, end, &j);
}

int engy_tok_split_added(const struct engy_tokenizer *t,
			 const struct tok_matcher *m, const uint8_t *s,
			 size_t n, tok_piece_fn fn, void *ctx)
{
	struct tok_piece p;
	size_t pos = 0, done = 0, at, start, stop, j, c0;
	long k;
	int rc;

	while (m->n && pos < n && (k = find_added(t, m, s, n, pos, &at)) >= 0) {
		const struct tok_added *a = &t->added[k];

		start = at;
		stop = at + a->len;
		pos = stop;
		if (t->split_special && a->special)
			continue;
		if (a->single_word) {
			bool left_ok = true, right_ok = true;

			if (start > 0)
				left_ok = !engy_tok_is_word_char(
					cp_before(s, start, &c0));
			if (stop < n) {
				j = stop;
				right_ok = !engy_tok_is_word_char(
					engy_tok_utf8_next(s, n, &j));
			}
			if (!left_ok || !right_ok)
				continue;
		}
		if (a->lstrip) {
			/*
			 * Never reaches back into text an earlier match already
			 * took.
			 */
			while (start > done &&
			       engy_tok_is_white_space(
				       cp_before(s, start, &c0)))
				start = c0;
		}
		if (a->rstrip) {
			j = stop;
			while (j < n && engy_tok_is_white_space(
						engy_tok_utf8_next(s, n, &j)))
				stop = j;
			pos = stop;
		}
		if (start > done) {
			p.start = done;
			p.end = start;
			p.id = TOK_NONE;
			rc = fn(ctx, s, &p);
			if (rc)
				return rc;
		}
		p.start = start;
		p.end = stop;
		p.id = a->id;
		rc = fn(ctx, s, &p);
		if (rc)
			return rc;
		done = stop;
	}
	if (done < n) {
		p.start = done;
		p.end = n;
		p.id = TOK_NONE;
		return fn(ctx, s, &p);
	}
	return 0;
}
