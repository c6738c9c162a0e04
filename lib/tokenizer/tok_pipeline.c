/* SPDX-License-Identifier: MIT */
/*
 * The parts of tokenizer.json around the BPE model: normalizer,
 * pre-tokenizer, model options, decoder; and the special tokens that
 * tokenizer_config.json names.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tok_load.h"

bool engy_tok_json_true(const cJSON *o, const char *name, bool dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (cJSON_IsBool(v))
		return cJSON_IsTrue(v);
	return dflt;
}

const char *engy_tok_json_type(const cJSON *o)
{
	const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "type");

	return cJSON_IsString(ty) ? ty->valuestring : NULL;
}

int engy_tok_load_normalizer(struct tok_loader *ld, const cJSON *n)
{
	const char *ty;
	const cJSON *e;

	if (!n || cJSON_IsNull(n))
		return 0;
	ty = engy_tok_json_type(n);
	if (ty && strcmp(ty, "NFC") == 0) {
		ld->t->nfc = true;
		return 0;
	}
	if (ty && strcmp(ty, "Sequence") == 0) {
		cJSON_ArrayForEach(
			e, cJSON_GetObjectItemCaseSensitive(n, "normalizers"))
		{
			int rc = engy_tok_load_normalizer(ld, e);

			if (rc)
				return rc;
		}
		return 0;
	}
	TOK_FAIL(ld, -ENOTSUP, "normalizer '%s' is not supported (only NFC)",
		 ty ? ty : "?");
}

/*
 * The ByteLevel split (use_regex): GPT-2's pattern, case-sensitive
 * contractions.
 */
static const char gpt2_pattern[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| "
	"?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

int engy_tok_load_pretok(struct tok_loader *ld, const cJSON *p, int *bytelevel)
{
	struct engy_tokenizer *t = ld->t;
	const cJSON *e, *pat, *s;
	const char *ty, *beh;
	int rc;

	if (!p || cJSON_IsNull(p))
		return 0;
	ty = engy_tok_json_type(p);
	if (ty && strcmp(ty, "Sequence") == 0) {
		cJSON_ArrayForEach(
			e, cJSON_GetObjectItemCaseSensitive(p, "pretokenizers"))
		{
			rc = engy_tok_load_pretok(ld, e, bytelevel);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (ty && strcmp(ty, "Split") == 0) {
		if (*bytelevel)
			TOK_FAIL(ld, -ENOTSUP,
				 "pre_tokenizer: a Split after ByteLevel is "
				 "not supported");
		beh = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(p, "behavior"));
		if (!beh || strcmp(beh, "Isolated") != 0 ||
		    engy_tok_json_true(p, "invert", false))
			TOK_FAIL(ld, -ENOTSUP,
				 "pre_tokenizer Split: only behavior Isolated "
				 "without invert is supported");
		pat = cJSON_GetObjectItemCaseSensitive(p, "pattern");
		if ((s = cJSON_GetObjectItemCaseSensitive(pat, "Regex")) &&
		    cJSON_IsString(s))
			return engy_tok_stage_add_regex(
				t, s->valuestring, strlen(s->valuestring),
				false, ld->err, ld->errlen);
		if ((s = cJSON_GetObjectItemCaseSensitive(pat, "String")) &&
		    cJSON_IsString(s) && s->valuestring[0])
			return engy_tok_stage_add_regex(
				t, s->valuestring, strlen(s->valuestring), true,
				ld->err, ld->errlen);
		TOK_FAIL(ld, -EINVAL,
			 "pre_tokenizer Split: pattern needs a Regex or a "
			 "String");
	}
	if (ty && strcmp(ty, "ByteLevel") == 0) {
		if ((*bytelevel)++)
			TOK_FAIL(ld, -ENOTSUP,
				 "pre_tokenizer: more than one ByteLevel step");
		/* The reference's defaults for missing fields are true. */
		if (engy_tok_json_true(p, "add_prefix_space", true)) {
			rc = engy_tok_stage_add_prefix_space(t, ld->err,
							     ld->errlen);
			if (rc)
				return rc;
		}
		if (engy_tok_json_true(p, "use_regex", true))
			return engy_tok_stage_add_regex(
				t, gpt2_pattern, sizeof(gpt2_pattern) - 1,
				false, ld->err, ld->errlen);
		return 0;
	}
	TOK_FAIL(ld, -ENOTSUP,
		 "pre_tokenizer '%s' is not supported (Split, ByteLevel, "
		 "Sequence)",
		 ty ? ty : "?");
}

int engy_tok_load_model(struct tok_loader *ld, const cJSON *m)
{
	struct engy_tokenizer *t = ld->t;
	const char *ty = engy_tok_json_type(m), *s;
	const cJSON *v;

	if (ty && strcmp(ty, "BPE") != 0)
		TOK_FAIL(ld, -ENOTSUP,
			 "model type '%s' is not supported (only BPE)", ty);
	v = cJSON_GetObjectItemCaseSensitive(m, "dropout");
	if (v && !cJSON_IsNull(v) &&
	    !(cJSON_IsNumber(v) && v->valuedouble == 0))
		TOK_FAIL(ld, -ENOTSUP,
			 "model.dropout is not supported (encoding must be "
			 "deterministic)");
	if (engy_tok_json_true(m, "byte_fallback", false))
		TOK_FAIL(ld, -ENOTSUP, "model.byte_fallback is not supported");
	s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		m, "continuing_subword_prefix"));
	if (s && *s)
		TOK_FAIL(ld, -ENOTSUP,
			 "model.continuing_subword_prefix is not supported");
	s = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(m, "end_of_word_suffix"));
	if (s && *s)
		TOK_FAIL(ld, -ENOTSUP,
			 "model.end_of_word_suffix is not supported");
	t->ignore_merges = engy_tok_json_true(m, "ignore_merges", false);
	t->fuse_unk = engy_tok_json_true(m, "fuse_unk", false);
	t->unk_id = TOK_NONE;
	s = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(m, "unk_token"));
	if (s) {
		t->unk_id = engy_tok_strtab_find(t, &t->vocab_tab, false, s,
						 strlen(s));
		if (t->unk_id == TOK_NONE)
			TOK_FAIL(ld, -EINVAL,
				 "model.unk_token '%.40s' is not in the vocab",
				 s);
	}
	return 0;
}

int engy_tok_check_decoder(struct tok_loader *ld, const cJSON *d)
{
	const char *ty = d ? engy_tok_json_type(d) : NULL;

	if (ty && strcmp(ty, "ByteLevel") == 0)
		return 0;
	TOK_FAIL(ld, -ENOTSUP, "decoder '%s' is not supported (only ByteLevel)",
		 ty ? ty : "null");
}

/* Special-token names of tokenizer_config.json (strings or {"content": ...}).
 */
static const char *config_token(const cJSON *v)
{
	if (cJSON_IsString(v))
		return v->valuestring;
	return cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(v, "content"));
}

int engy_tok_config_specials(const cJSON *cfg, const char ***out, size_t *n)
{
	static const char *const names[] = { "bos_token", "eos_token",
					     "unk_token", "sep_token",
					     "pad_token", "cls_token",
					     "mask_token" };
	const cJSON *add = cJSON_GetObjectItemCaseSensitive(
			    cfg, "additional_special_tokens"),
		    *e;
	const char **v, *s;
	size_t i, k = 0;

	*out = NULL;
	*n = 0;
	v = malloc((sizeof(names) / sizeof(names[0]) +
		    (size_t)cJSON_GetArraySize(add) + 1) *
		   sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((s = config_token(cJSON_GetObjectItemCaseSensitive(
			     cfg, names[i]))) &&
		    *s)
			v[k++] = s;
	if (cJSON_IsArray(add))
		cJSON_ArrayForEach(e, add) if ((s = config_token(e)) && *s)
			v[k++] = s;
	*out = v;
	*n = k;
	return 0;
}
