/* SPDX-License-Identifier: MIT */
/*
 * A checkpoint directory as the miner link sees it (specs/miner.md,
 * specs/chat.md): its cheap identity and the chat template it ships.
 */
#ifndef ENGY_MINER_CKPT_H
#define ENGY_MINER_CKPT_H

#include <stddef.h>

/*
 * engy_ckpt_model_root() - the cheap checkpoint identity the public miner
 * sends as `model_root`: sha256(config.json bytes || for each
 * *.safetensors in sorted name order: basename || decimal byte size), as
 * 64 hex digits.  Not the Merkle roots of specs/ (a commitment over the
 * weights themselves).  Returns 0, or a negative errno with a reason in
 * @err (no config.json, an unreadable directory).
 */
int engy_ckpt_model_root(const char *dir, char hex[65], char *err,
			 size_t errlen);

/*
 * engy_ckpt_chat_variant() - the chat template variant @dir ships
 * (tokenizer_config.json's chat_template, else chat_template.jinja), or
 * -ENOENT when there is none or it is not a Qwen3 one.
 */
int engy_ckpt_chat_variant(const char *dir);

#endif /* ENGY_MINER_CKPT_H */
