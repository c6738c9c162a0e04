/* SPDX-License-Identifier: MIT */
/*
 * Generated Qwen3-family checkpoints (specs/checkpoints.md): a complete
 * Hugging Face-style directory (config.json, generation_config.json,
 * model.safetensors, tokenizer.json, tokenizer_config.json) that is a pure
 * function of its options, byte for byte.  Used by engyctl mkmodel, the
 * tests and the bench.
 */
#ifndef ENGY_MKMODEL_H
#define ENGY_MKMODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum mkmodel_quant {
	MKMODEL_QUANT_NONE = 0,
	MKMODEL_QUANT_INT4, /* engy_int4: U8 nibbles + F16 group scales */
	MKMODEL_QUANT_FP8,  /* F8_E4M3 + F32 128x128 weight_scale_inv */
};

struct mkmodel_opts {
	bool moe;   /* qwen3-moe, else qwen3 */
	bool small; /* small, else tiny */
	uint64_t seed;
	int quant; /* enum mkmodel_quant */
	int dtype; /* ENGY_ST_BF16 (default), ENGY_ST_F16, ENGY_ST_F32 */
	bool tie;  /* tie_word_embeddings: no lm_head tensor */
	bool shared_expert; /* MoE: add a Qwen2-MoE style shared expert */
	FILE *progress;	    /* one line per stage, or NULL */
};

/* mkmodel_write() - write the checkpoint into @dir (created if missing). */
int mkmodel_write(const struct mkmodel_opts *o, const char *dir, char *err,
		  size_t errlen);

/*
 * mkmodel_tokenizer() - tokenizer.json and tokenizer_config.json in @dir:
 * 256 byte tokens, @n_new learned tokens, then the 26 Qwen3 added tokens.
 */
#define MKMODEL_N_SPECIAL 26
int mkmodel_tokenizer(uint32_t n_new, uint32_t max_len, const char *dir,
		      char *err, size_t errlen);

/* Qwen3 added tokens in id order (the first is id 256 + n_new). */
extern const char *const mkmodel_specials[MKMODEL_N_SPECIAL];
extern const char mkmodel_chat_template[];

#endif /* ENGY_MKMODEL_H */
