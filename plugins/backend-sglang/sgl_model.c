/* SPDX-License-Identifier: MIT */
/* Model facts from the serve and the checkpoint (see sgl_model.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sgl_model.h"

static cJSON *parse(const char *json, size_t len)
{
	cJSON *j = cJSON_ParseWithLength(json, len);

	if (j && !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		j = NULL;
	}
	return j;
}

/* A positive integer member that fits in 32 bits, else 0. */
static uint32_t u32(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!cJSON_IsNumber(v) || v->valuedouble < 1 ||
	    v->valuedouble > 4294967295.0 ||
	    v->valuedouble != (double)(uint32_t)v->valuedouble)
		return 0;
	return (uint32_t)v->valuedouble;
}

static void set_u32(uint32_t *dst, uint32_t v)
{
	if (v)
		*dst = v;
}

static void set_str(char *dst, size_t cap, const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (cJSON_IsString(v) && v->valuestring[0] &&
	    strlen(v->valuestring) < cap)
		snprintf(dst, cap, "%s", v->valuestring);
}

int sgl_parse_model_info(const char *json, size_t len,
			 struct engy_model_info *info)
{
	cJSON *j = parse(json, len);

	if (!j)
		return -EBADMSG;
	set_str(info->path, sizeof(info->path), j, "model_path");
	set_u32(&info->hidden_size, u32(j, "hidden_size"));
	set_u32(&info->vocab_size, u32(j, "vocab_size"));
	set_u32(&info->max_context, u32(j, "max_context"));
	set_u32(&info->max_context, u32(j, "context_length"));
	cJSON_Delete(j);
	return 0;
}

int sgl_parse_models(const char *json, size_t len, struct engy_model_info *info)
{
	cJSON *j = parse(json, len);
	const cJSON *m;

	if (!j)
		return -EBADMSG;
	m = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "data"), 0);
	if (cJSON_IsObject(m)) {
		set_str(info->name, sizeof(info->name), m, "id");
		set_u32(&info->max_context, u32(m, "max_model_len"));
	}
	cJSON_Delete(j);
	return 0;
}

static void set_eos(struct engy_model_info *info, const cJSON *v)
{
	const cJSON *e;
	size_t n = 0;

	if (cJSON_IsNumber(v) && v->valuedouble >= 0 &&
	    v->valuedouble <= 4294967295.0) {
		memset(info->eos_ids, 0, sizeof(info->eos_ids));
		info->eos_ids[0] = (uint32_t)v->valuedouble;
		return;
	}
	if (!cJSON_IsArray(v) || !cJSON_GetArraySize(v))
		return;
	memset(info->eos_ids, 0, sizeof(info->eos_ids));
	cJSON_ArrayForEach(e, v)
	{
		if (n == 4)
			break;
		if (cJSON_IsNumber(e) && e->valuedouble >= 0 &&
		    e->valuedouble <= 4294967295.0)
			info->eos_ids[n++] = (uint32_t)e->valuedouble;
	}
}

int sgl_parse_config(const char *json, size_t len, struct engy_model_info *info)
{
	cJSON *j = parse(json, len);
	const cJSON *o, *text;
	int pass;

	if (!j)
		return -EBADMSG;
	/* Multimodal checkpoints keep the language model's numbers under
	 * text_config; those win over anything at the top. */
	text = cJSON_GetObjectItemCaseSensitive(j, "text_config");
	for (pass = 0; pass < 2; pass++) {
		o = pass ? text : j;
		if (!cJSON_IsObject(o))
			continue;
		set_u32(&info->hidden_size, u32(o, "hidden_size"));
		set_u32(&info->vocab_size, u32(o, "vocab_size"));
		set_u32(&info->max_context, u32(o, "max_position_embeddings"));
		set_eos(info,
			cJSON_GetObjectItemCaseSensitive(o, "eos_token_id"));
	}
	cJSON_Delete(j);
	return 0;
}

int sgl_parse_gen_config(const char *json, size_t len,
			 struct engy_model_info *info)
{
	cJSON *j = parse(json, len);

	if (!j)
		return -EBADMSG;
	set_eos(info, cJSON_GetObjectItemCaseSensitive(j, "eos_token_id"));
	cJSON_Delete(j);
	return 0;
}
