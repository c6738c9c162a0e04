/* SPDX-License-Identifier: MIT */
/*
 * Pre-tokenizer stages: regex splits (PCRE2, UTF + UCP, JIT) whose matches
 * and the gaps between them both become pieces ("Isolated"), and the
 * ByteLevel prefix space.  The leaves go to the BPE model.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_int.h"

#define WS_CLASS     "\\p{White_Space}"
#define NOT_WS_CLASS "\\P{White_Space}"

/*
 * The reference (Oniguruma) reads \s as White_Space.  PCRE2's UCP \s adds
 * U+180E, JavaScript's adds U+FEFF and drops U+0085; the property form
 * means the same inside and outside a character class.
 */
char *engy_tok_regex_translate(const char *pat, size_t len)
{
	size_t i = 0, o = 0;
	char *out = malloc(len * 8 + 1);

	if (!out)
		return NULL;
	while (i < len) {
		if (pat[i] == '\\' && i + 1 < len) {
			if (pat[i + 1] == 's') {
				memcpy(out + o, WS_CLASS, sizeof(WS_CLASS) - 1);
				o += sizeof(WS_CLASS) - 1;
			} else if (pat[i + 1] == 'S') {
				memcpy(out + o, NOT_WS_CLASS,
				       sizeof(NOT_WS_CLASS) - 1);
				o += sizeof(NOT_WS_CLASS) - 1;
			} else {
				out[o++] = pat[i];
				out[o++] = pat[i + 1];
			}
			i += 2;
		} else {
			out[o++] = pat[i++];
		}
	}
	out[o] = '\0';
	return out;
}

int engy_tok_stage_add_regex(struct engy_tokenizer *t, const char *pat,
			     size_t len, bool literal, char *err, size_t errlen)
{
	struct tok_stage *st;
	PCRE2_UCHAR msg[160];
	PCRE2_SIZE erroff;
	char *src;
	int code;

	if (t->n_stages == TOK_MAX_STAGES) {
		snprintf(err, errlen, "more than %d pre-tokenizer steps",
			 TOK_MAX_STAGES);
		return -E2BIG;
	}
	src = literal ? strndup(pat, len) : engy_tok_regex_translate(pat, len);
	if (!src)
		return -ENOMEM;
	st = &t->stages[t->n_stages];
	st->kind = TOK_STAGE_SPLIT;
	st->re = pcre2_compile(
		(PCRE2_SPTR)src, literal ? len : PCRE2_ZERO_TERMINATED,
		PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0), &code,
		&erroff, NULL);
	free(src);
	if (!st->re) {
		pcre2_get_error_message(code, msg, sizeof(msg));
		snprintf(err, errlen,
			 "pre-tokenizer regex: %s (near offset %zu)",
			 (char *)msg, (size_t)erroff);
		return -EINVAL;
	}
	st->jit = pcre2_jit_compile(st->re, PCRE2_JIT_COMPLETE) == 0;
	t->n_stages++;
	return 0;
}

int engy_tok_stage_add_prefix_space(struct engy_tokenizer *t, char *err,
				    size_t errlen)
{
	if (t->n_stages == TOK_MAX_STAGES) {
		snprintf(err, errlen, "more than %d pre-tokenizer steps",
			 TOK_MAX_STAGES);
		return -E2BIG;
	}
	t->stages[t->n_stages].kind = TOK_STAGE_PREFIX_SPACE;
	t->stages[t->n_stages].re = NULL;
	t->n_stages++;
	return 0;
}

void engy_tok_stages_free(struct engy_tokenizer *t)
{
	size_t i;

	for (i = 0; i < t->n_stages; i++)
		pcre2_code_free(t->stages[i].re);
	t->n_stages = 0;
}

static int prefix_space(const struct engy_tokenizer *t, struct tok_tls *tls,
			size_t stage, const uint8_t *s, size_t n,
			struct tok_ids *o)
{
	uint8_t small[256], *buf = small;
	int rc;

	if (n && s[0] == ' ')
		return engy_tok_pretokenize(t, tls, stage + 1, s, n, o);
	if (n + 1 > sizeof(small)) {
		buf = malloc(n + 1);
		if (!buf)
			return -ENOMEM;
	}
	buf[0] = ' ';
	memcpy(buf + 1, s, n);
	rc = engy_tok_pretokenize(t, tls, stage + 1, buf, n + 1, o);
	if (buf != small)
		free(buf);
	return rc;
}

int engy_tok_pretokenize(const struct engy_tokenizer *t, struct tok_tls *tls,
			 size_t stage, const uint8_t *s, size_t n,
			 struct tok_ids *o)
{
	pcre2_match_data *md = engy_tok_tls_match_data(tls);
	pcre2_match_context *mctx = engy_tok_tls_match_context(tls);
	const struct tok_stage *st;
	size_t off = 0, prev = 0, ms, me;
	PCRE2_SIZE *ov;
	int rc;

	if (stage == t->n_stages)
		return engy_tok_bpe_piece(t, tls, s, n, o);
	st = &t->stages[stage];
	if (st->kind == TOK_STAGE_PREFIX_SPACE)
		return prefix_space(t, tls, stage, s, n, o);
	while (off < n) {
		if (st->jit)
			rc = pcre2_jit_match(st->re, s, n, off, 0, md, mctx);
		else
			rc = pcre2_match(st->re, s, n, off, PCRE2_NO_UTF_CHECK,
					 md, mctx);
		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0)
			return rc == PCRE2_ERROR_NOMEMORY ? -ENOMEM : -E2BIG;
		ov = pcre2_get_ovector_pointer(md);
		ms = ov[0];
		me = ov[1];
		if (me <= ms) {
			/*
			 * An empty match yields no piece; step over one
			 * character.
			 */
			off = ms + 1;
			while (off < n && (s[off] & 0xC0) == 0x80)
				off++;
			continue;
		}
		if (ms > prev) {
			rc = engy_tok_pretokenize(t, tls, stage + 1, s + prev,
						  ms - prev, o);
			if (rc)
				return rc;
		}
		rc = engy_tok_pretokenize(t, tls, stage + 1, s + ms, me - ms,
					  o);
		if (rc)
			return rc;
		prev = off = me;
	}
	if (prev < n)
		return engy_tok_pretokenize(t, tls, stage + 1, s + prev,
					    n - prev, o);
	return 0;
}
