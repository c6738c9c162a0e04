/* SPDX-License-Identifier: MIT */
/*
 * What the model is, from the serve (GET /get_model_info, GET /v1/models)
 * and from the checkpoint (config.json, generation_config.json).  Pure
 * parsers: each fills only the fields its document has, so the sources
 * can be layered.
 */
#ifndef SGL_MODEL_H
#define SGL_MODEL_H

#include <stddef.h>

#include <engy/backend.h>

/* {"model_path":..., "hidden_size"?, "vocab_size"?, ...}: path, sizes. */
int sgl_parse_model_info(const char *json, size_t len,
			 struct engy_model_info *info);
/* {"data":[{"id":..., "max_model_len":...}]}: name, max_context. */
int sgl_parse_models(const char *json, size_t len,
		     struct engy_model_info *info);
/* config.json (fields at the top or under text_config): hidden_size,
 * vocab_size, max_position_embeddings, eos_token_id. */
int sgl_parse_config(const char *json, size_t len,
		     struct engy_model_info *info);
/* generation_config.json: eos_token_id (an id or a list). */
int sgl_parse_gen_config(const char *json, size_t len,
			 struct engy_model_info *info);

#endif /* SGL_MODEL_H */
