/* SPDX-License-Identifier: MIT */
/*
 * Encode and decode, in the order of the Hugging Face pipeline: added
 * tokens are cut out of the raw text first, the text between them is NFC
 * normalized, cut again at normalized added tokens, pre-tokenized and
 * BPE-merged; decoding concatenates token bytes and repairs invalid UTF-8
 * with U+FFFD.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tok_int.h"

struct enc_ctx {
	const struct engy_tokenizer *t;
	struct tok_tls *tls;
	struct tok_ids *o;
};

static int on_normalized_piece(void *ctx, const uint8_t *s,
			       const struct tok_piece *p)
{
	struct enc_ctx *c = ctx;

	if (p->id != TOK_NONE)
		return engy_tok_ids_push(c->o, p->id);
	return engy_tok_pretokenize(c->t, c->tls, 0, s + p->start,
				    p->end - p->start, c->o);
}

static int on_raw_piece(void *ctx, const uint8_t *s, const struct tok_piece *p)
{
	struct enc_ctx *c = ctx;
	const uint8_t *seg = s + p->start;
	size_t n = p->end - p->start;
	uint8_t *norm = NULL;
	int rc;

	if (p->id != TOK_NONE)
		return engy_tok_ids_push(c->o, p->id);
	if (c->t->nfc) {
		rc = engy_tok_nfc(seg, n, &norm, &n);
		if (rc)
			return rc;
		if (norm)
			seg = norm;
	}
	if (c->t->match_norm.n)
		rc = engy_tok_split_added(c->t, &c->t->match_norm, seg, n,
					  on_normalized_piece, c);
	else
		rc = engy_tok_pretokenize(c->t, c->tls, 0, seg, n, c->o);
	free(norm);
	return rc;
}

int engy_tokenizer_encode(const struct engy_tokenizer *t, const char *text,
			  size_t len, uint32_t **ids, size_t *n)
{
	struct tok_ids o = { 0 };
	struct enc_ctx c;
	int rc;

	*ids = NULL;
	*n = 0;
	if (!t || (!text && len))
		return -EINVAL;
	if (!engy_tok_utf8_valid((const uint8_t *)text, len))
		return -EILSEQ;
	if (!len)
		return 0;
	c.t = t;
	c.o = &o;
	c.tls = engy_tok_tls_get(t);
	if (!c.tls)
		return -ENOMEM;
	o.cap = len / 3 + 16;
	o.v = malloc(o.cap * sizeof(*o.v));
	if (!o.v)
		return -ENOMEM;
	rc = engy_tok_split_added(t, &t->match_raw, (const uint8_t *)text, len,
				  on_raw_piece, &c);
	if (rc || !o.n) {
		free(o.v);
		return rc;
	}
	*ids = o.v;
	*n = o.n;
	return 0;
}

int engy_tokenizer_decode(const struct engy_tokenizer *t, const uint32_t *ids,
			  size_t n, bool skip_special, char **text, size_t *len)
{
	size_t i, total = 0, k = 0;
	uint8_t *raw, *fixed;

	*text = NULL;
	*len = 0;
	if (!t || (!ids && n))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (ids[i] >= t->n_ids || t->dec[ids[i]].len == TOK_NONE)
			return -ERANGE;
		if (!(skip_special && (t->flags[ids[i]] & TOK_F_SPECIAL)))
			total += t->dec[ids[i]].len;
	}
	raw = malloc(total + 1);
	if (!raw)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct tok_span *d = &t->dec[ids[i]];

		if (skip_special && (t->flags[ids[i]] & TOK_F_SPECIAL))
			continue;
		memcpy(raw + k, t->dec_arena + d->off, d->len);
		k += d->len;
	}
	if (!engy_tok_utf8_valid(raw, k)) {
		fixed = malloc(3 * k + 1);
		if (!fixed) {
			free(raw);
			return -ENOMEM;
		}
		k = engy_tok_utf8_lossy(raw, k, fixed);
		free(raw);
		raw = fixed;
	}
	raw[k] = '\0';
	*text = (char *)raw;
	*len = k;
	return 0;
}

int engy_tokenizer_token_id(const struct engy_tokenizer *t, const char *token)
{
	size_t len;
	uint32_t k;

	if (!t || !token)
		return -EINVAL;
	len = strlen(token);
	k = engy_tok_strtab_find(t, &t->added_tab, true, token, len);
	if (k != TOK_NONE)
		return (int)t->added[k].id;
	k = engy_tok_strtab_find(t, &t->vocab_tab, false, token, len);
	return k != TOK_NONE ? (int)k : -ENOENT;
}

bool engy_tokenizer_is_special(const struct engy_tokenizer *t, uint32_t id)
{
	return t && id < t->n_ids && (t->flags[id] & TOK_F_SPECIAL);
}

size_t engy_tokenizer_vocab_size(const struct engy_tokenizer *t)
{
	return t ? t->n_ids : 0;
}

int engy_tokenizer_token_bytes(const struct engy_tokenizer *t, uint32_t id,
			       const uint8_t **p, size_t *n)
{
	*p = NULL;
	*n = 0;
	if (!t || id >= t->n_ids || t->dec[id].len == TOK_NONE)
		return -ERANGE;
	*p = t->dec_arena + t->dec[id].off;
	*n = t->dec[id].len;
	return 0;
}
