/* SPDX-License-Identifier: MIT */
/*
 * Byte-level BPE tokenizer (GPT-2 / Qwen family) loaded from a Hugging Face
 * tokenizer.json: NFC normalizer, regex Split pre-tokenizer, BPE model with
 * merge ranks, added/special tokens, ByteLevel decoder.  A loaded tokenizer
 * is immutable; encode and decode may run concurrently from many threads.
 */
#ifndef ENGY_TOKENIZER_H
#define ENGY_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct engy_tokenizer;

/*
 * engy_tokenizer_load() - load DIR/tokenizer.json (DIR/tokenizer_config.json
 * is read when present).  Returns 0, or a negative errno with a one-line
 * reason in @err (@errlen bytes, may be 0).
 */
int engy_tokenizer_load(const char *dir, struct engy_tokenizer **out, char *err,
			size_t errlen);

/* engy_tokenizer_load_file() - as above, from the path of a tokenizer.json. */
int engy_tokenizer_load_file(const char *path, struct engy_tokenizer **out,
			     char *err, size_t errlen);

void engy_tokenizer_free(struct engy_tokenizer *t);

/*
 * engy_tokenizer_encode() - @text (@len bytes) must be valid UTF-8, else
 * -EILSEQ.  *@ids is malloc'd (NULL when *@n is 0).  Added and special
 * tokens written in the text are recognised as single tokens.  Other
 * errors: -ENOMEM, -E2BIG (a pre-token beyond the regex engine's limits).
 */
int engy_tokenizer_encode(const struct engy_tokenizer *t, const char *text,
			  size_t len, uint32_t **ids, size_t *n);

/*
 * engy_tokenizer_decode() - -ERANGE on an unknown id.  *@text is malloc'd
 * and NUL-terminated; byte sequences that are not valid UTF-8 become U+FFFD
 * as the reference decoder does.  @skip_special drops tokens flagged special.
 */
int engy_tokenizer_decode(const struct engy_tokenizer *t, const uint32_t *ids,
			  size_t n, bool skip_special, char **text,
			  size_t *len);

/*
 * engy_tokenizer_token_id() - id of a token string (e.g. "<|im_end|>"), or
 * -ENOENT.
 */
int engy_tokenizer_token_id(const struct engy_tokenizer *t, const char *token);

/* engy_tokenizer_is_special() - true for added tokens flagged special. */
bool engy_tokenizer_is_special(const struct engy_tokenizer *t, uint32_t id);

/*
 * engy_tokenizer_token_bytes() - the bytes id @id decodes to on its own,
 * without the UTF-8 repair decode applies (borrowed from @t): what a
 * constrained sampler matches (lib/constrain).  -ERANGE on an unused id.
 */
int engy_tokenizer_token_bytes(const struct engy_tokenizer *t, uint32_t id,
			       const uint8_t **p, size_t *n);

/* engy_tokenizer_vocab_size() - max id + 1 over vocab and added tokens. */
size_t engy_tokenizer_vocab_size(const struct engy_tokenizer *t);

#endif /* ENGY_TOKENIZER_H */
