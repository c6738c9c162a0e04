/* SPDX-License-Identifier: MIT */
/*
 * Loading a Hugging Face tokenizer.json (byte-level BPE) into flat tables:
 * vocab keys and decode bytes per id, a string -> id hash, the merge table,
 * added tokens (the pipeline around the model: tok_pipeline.c).  Anything
 * the encoder does not implement is refused with a reason rather than
 * approximated.
 */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "grow.h"
#include "tok_load.h"

#define TOK_MAX_FILE ((size_t)256 << 20)

/*
 * GPT-2 bytes_to_unicode: printable Latin-1 maps to itself, the rest to
 * U+0100... in order.
 */
uint32_t engy_tok_byte_to_cp(uint8_t b)
{
	if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
		return b;
	if (b <= 0x20)
		return 0x100u + b;
	if (b <= 0xA0)
		return 0x121u + (b - 0x7Fu);
	return 0x143; /* 0xAD */
}

int engy_tok_cp_to_byte(uint32_t cp)
{
	if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) ||
	    (cp >= 0xAE && cp <= 0xFF))
		return (int)cp;
	if (cp >= 0x100 && cp <= 0x120)
		return (int)(cp - 0x100);
	if (cp >= 0x121 && cp <= 0x142)
		return (int)(cp - 0x121 + 0x7F);
	if (cp == 0x143)
		return 0xAD;
	return -1;
}

/*
 * String tables: vocab_tab slots hold ids, added_tab slots hold indices into
 * t->added.
 */
static const uint8_t *tab_key(const struct engy_tokenizer *t, bool added,
			      uint32_t v, size_t *len)
{
	if (added) {
		*len = t->added[v].len;
		return t->added[v].content;
	}
	*len = t->vkey[v].len;
	return (const uint8_t *)t->vkey_arena + t->vkey[v].off;
}

static int tab_init(struct tok_strtab *tab, size_t n)
{
	size_t size = 16;

	while (size < 2 * n)
		size *= 2;
	tab->slot = malloc(size * sizeof(*tab->slot));
	if (!tab->slot)
		return -ENOMEM;
	memset(tab->slot, 0xFF, size * sizeof(*tab->slot));
	tab->mask = (uint32_t)(size - 1);
	return 0;
}

uint32_t engy_tok_strtab_find(const struct engy_tokenizer *t,
			      const struct tok_strtab *tab, bool added,
			      const void *key, size_t len)
{
	uint32_t i, v;
	const uint8_t *k;
	size_t kl;

	if (!tab->slot)
		return TOK_NONE;
	for (i = (uint32_t)tok_hash(key, len) & tab->mask;;
	     i = (i + 1) & tab->mask) {
		v = tab->slot[i];
		if (v == TOK_NONE)
			return TOK_NONE;
		k = tab_key(t, added, v, &kl);
		if (kl == len && memcmp(k, key, len) == 0)
			return v;
	}
}

/* Returns false when the key is already there. */
static bool tab_insert(const struct engy_tokenizer *t, struct tok_strtab *tab,
		       bool added, uint32_t v)
{
	const uint8_t *key, *k;
	size_t len, kl;
	uint32_t i;

	key = tab_key(t, added, v, &len);
	for (i = (uint32_t)tok_hash(key, len) & tab->mask;
	     tab->slot[i] != TOK_NONE; i = (i + 1) & tab->mask) {
		k = tab_key(t, added, tab->slot[i], &kl);
		if (kl == len && memcmp(k, key, len) == 0)
			return false;
	}
	tab->slot[i] = v;
	return true;
}

/*
 * The ByteLevel decoder: a string of alphabet characters is its bytes, any
 * other string itself.
 */
static size_t bytelevel_decode(const uint8_t *s, size_t n, uint8_t *out)
{
	size_t i = 0, k = 0;
	int b;

	while (i < n) {
		b = engy_tok_cp_to_byte(engy_tok_utf8_next(s, n, &i));
		if (b < 0) {
			memcpy(out, s, n);
			return n;
		}
		out[k++] = (uint8_t)b;
	}
	return k;
}

static int json_id(const cJSON *v, uint32_t *id)
{
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
	    v->valuedouble >= TOK_MAX_ID ||
	    v->valuedouble != (double)(uint32_t)v->valuedouble)
		return -EINVAL;
	*id = (uint32_t)v->valuedouble;
	return 0;
}

static void set_dec(struct tok_loader *ld, uint32_t id, const uint8_t *s,
		    size_t n)
{
	struct engy_tokenizer *t = ld->t;

	t->dec[id].off = (uint32_t)ld->dec_used;
	t->dec[id].len =
		(uint32_t)bytelevel_decode(s, n, t->dec_arena + ld->dec_used);
	ld->dec_used += t->dec[id].len;
}

static int load_vocab(struct tok_loader *ld, const cJSON *vocab)
{
	struct engy_tokenizer *t = ld->t;
	const cJSON *e;
	size_t used = 0, len, n = 0;
	uint32_t id, b;
	char key[4];

	cJSON_ArrayForEach(e, vocab)
	{
		if (json_id(e, &id))
			TOK_FAIL(ld, -EINVAL,
				 "model.vocab: '%.40s' has no valid id "
				 "(integer below %u)",
				 e->string, TOK_MAX_ID);
		if (t->flags[id] & TOK_F_VOCAB)
			TOK_FAIL(ld, -EINVAL,
				 "model.vocab: id %u is given twice", id);
		len = strlen(e->string);
		if (!engy_tok_utf8_valid((const uint8_t *)e->string, len))
			TOK_FAIL(ld, -EINVAL,
				 "model.vocab: token of id %u is not valid "
				 "UTF-8",
				 id);
		t->flags[id] |= TOK_F_VOCAB;
		memcpy(t->vkey_arena + used, e->string, len);
		t->vkey[id].off = (uint32_t)used;
		t->vkey[id].len = (uint32_t)len;
		used += len;
		set_dec(ld, id, (const uint8_t *)e->string, len);
		n++;
	}
	if (tab_init(&t->vocab_tab, n))
		return -ENOMEM;
	for (id = 0; id < t->n_ids; id++)
		if ((t->flags[id] & TOK_F_VOCAB) &&
		    !tab_insert(t, &t->vocab_tab, false, id))
			TOK_FAIL(ld, -EINVAL,
				 "model.vocab: token of id %u is listed twice",
				 id);
	for (b = 0; b < 256; b++) {
		uint32_t cp = engy_tok_byte_to_cp((uint8_t)b);

		len = 0;
		if (cp < 0x80) {
			key[len++] = (char)cp;
		} else {
			key[len++] = (char)(0xC0 | cp >> 6);
			key[len++] = (char)(0x80 | (cp & 0x3F));
		}
		t->byte_id[b] =
			engy_tok_strtab_find(t, &t->vocab_tab, false, key, len);
	}
	return 0;
}

static int merge_part(struct tok_loader *ld, size_t rank, const char *s,
		      size_t len, uint32_t *id)
{
	*id = engy_tok_strtab_find(ld->t, &ld->t->vocab_tab, false, s, len);
	if (*id == TOK_NONE)
		TOK_FAIL(ld, -EINVAL,
			 "model.merges[%zu]: '%.*s' is not in the vocab", rank,
			 (int)(len > 40 ? 40 : len), s);
	return 0;
}

static int load_merges(struct tok_loader *ld, const cJSON *merges)
{
	const char *a, *b, *sp;
	size_t la, lb, rank = 0, cap = 256;
	char *cat = malloc(cap);
	uint32_t ia, ib, in;
	const cJSON *e;
	int rc;

	if (!cat)
		return -ENOMEM;
	rc = engy_tok_merges_init(ld->t, (size_t)cJSON_GetArraySize(merges));
	if (rc)
		goto out;
	cJSON_ArrayForEach(e, merges)
	{
		if (cJSON_IsString(e)) {
			/* "a b": exactly one space, as the reference requires.
			 */
			a = e->valuestring;
			sp = strchr(a, ' ');
			if (!sp || strchr(sp + 1, ' ')) {
				snprintf(ld->err, ld->errlen,
					 "model.merges[%zu]: expected \"left "
					 "right\" with one space",
					 rank);
				rc = -EINVAL;
				goto out;
			}
			la = (size_t)(sp - a);
			b = sp + 1;
			lb = strlen(b);
		} else if (cJSON_GetArraySize(e) == 2 &&
			   cJSON_IsString(e->child) &&
			   cJSON_IsString(e->child->next)) {
			a = e->child->valuestring;
			b = e->child->next->valuestring;
			la = strlen(a);
			lb = strlen(b);
		} else {
			snprintf(ld->err, ld->errlen,
				 "model.merges[%zu]: expected a string or a "
				 "pair of strings",
				 rank);
			rc = -EINVAL;
			goto out;
		}
		rc = merge_part(ld, rank, a, la, &ia);
		if (!rc)
			rc = merge_part(ld, rank, b, lb, &ib);
		if (rc)
			goto out;
		if (!engy_grow_by(&cat, &cap, la, lb, 1)) {
			rc = -ENOMEM;
			goto out;
		}
		memcpy(cat, a, la);
		memcpy(cat + la, b, lb);
		in = engy_tok_strtab_find(ld->t, &ld->t->vocab_tab, false, cat,
					  la + lb);
		if (in == TOK_NONE) {
			snprintf(
				ld->err, ld->errlen,
				"model.merges[%zu]: '%.*s' is not in the vocab",
				rank, (int)(la + lb > 40 ? 40 : la + lb), cat);
			rc = -EINVAL;
			goto out;
		}
		engy_tok_merges_put(ld->t, ia, ib, (uint32_t)rank, in);
		rank++;
	}
out:
	free(cat);
	return rc;
}

/* added_tokens[@n] @e into t->added[@n], its content at *@used. */
static int load_one_added(struct tok_loader *ld, const cJSON *e, size_t n,
			  size_t *used)
{
	struct engy_tokenizer *t = ld->t;
	struct tok_added *a = &t->added[n];
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "content");
	uint8_t *norm = NULL;
	size_t len, nlen;
	uint32_t id;
	int rc;

	if (json_id(cJSON_GetObjectItemCaseSensitive(e, "id"), &id) ||
	    !cJSON_IsString(c))
		TOK_FAIL(ld, -EINVAL,
			 "added_tokens[%zu]: needs an integer id and a "
			 "content string",
			 n);
	len = strlen(c->valuestring);
	if (!len || !engy_tok_utf8_valid((const uint8_t *)c->valuestring, len))
		TOK_FAIL(ld, -EINVAL,
			 "added_tokens[%zu]: content is empty or not "
			 "valid UTF-8",
			 n);
	if (t->flags[id] & TOK_F_ADDED)
		TOK_FAIL(ld, -EINVAL, "added_tokens[%zu]: id %u is given twice",
			 n, id);
	a->id = id;
	a->special = engy_tok_json_true(e, "special", false);
	a->normalized = engy_tok_json_true(e, "normalized", !a->special);
	a->lstrip = engy_tok_json_true(e, "lstrip", false);
	a->rstrip = engy_tok_json_true(e, "rstrip", false);
	a->single_word = engy_tok_json_true(e, "single_word", false);
	t->flags[id] |= TOK_F_ADDED | (a->special ? TOK_F_SPECIAL : 0);
	set_dec(ld, id, (const uint8_t *)c->valuestring, len);
	/* Normalized tokens are looked for in normalized text. */
	nlen = len;
	if (a->normalized && t->nfc) {
		rc = engy_tok_nfc((const uint8_t *)c->valuestring, len, &norm,
				  &nlen);
		if (rc)
			return rc;
	}
	a->content = t->added_arena + *used;
	a->len = (uint32_t)nlen;
	memcpy(t->added_arena + *used,
	       norm ? norm : (const uint8_t *)c->valuestring, nlen);
	free(norm);
	*used += nlen;
	return 0;
}

/*
 * Special tokens named only in tokenizer_config.json become added
 * tokens, as transformers does.
 */
static size_t add_config_specials(struct engy_tokenizer *t, const char **extra,
				  size_t n_extra, size_t n, size_t used)
{
	size_t i, len;
	uint32_t id;

	for (i = 0; i < n_extra; i++) {
		len = strlen(extra[i]);
		id = engy_tok_strtab_find(t, &t->vocab_tab, false, extra[i],
					  len);
		if (id == TOK_NONE || (t->flags[id] & TOK_F_ADDED))
			continue;
		t->added[n] = (struct tok_added){ .id = id,
						  .special = true,
						  .len = (uint32_t)len };
		t->added[n].content = t->added_arena + used;
		memcpy(t->added_arena + used, extra[i], len);
		used += len;
		t->flags[id] |= TOK_F_ADDED | TOK_F_SPECIAL;
		n++;
	}
	return n;
}

/* The added tokens' lookup table, their special marks, their matchers. */
static int index_added(struct tok_loader *ld, const char **extra,
		       size_t n_extra)
{
	struct engy_tokenizer *t = ld->t;
	size_t i, n = t->n_added;
	int rc;

	if (tab_init(&t->added_tab, n))
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (!tab_insert(t, &t->added_tab, true, (uint32_t)i))
			TOK_FAIL(ld, -EINVAL,
				 "added_tokens: '%.*s' is listed twice",
				 (int)(t->added[i].len > 40 ? 40
							    : t->added[i].len),
				 (const char *)t->added[i].content);
	for (i = 0; i < n_extra; i++) {
		uint32_t k = engy_tok_strtab_find(t, &t->added_tab, true,
						  extra[i], strlen(extra[i]));

		if (k != TOK_NONE) {
			t->added[k].special = true;
			t->flags[t->added[k].id] |= TOK_F_SPECIAL;
		}
	}
	rc = engy_tok_matcher_build(&t->match_raw, t->added, n, false);
	if (!rc)
		rc = engy_tok_matcher_build(&t->match_norm, t->added, n, true);
	return rc;
}

static int load_added(struct tok_loader *ld, const cJSON *arr,
		      const char **extra, size_t n_extra)
{
	struct engy_tokenizer *t = ld->t;
	size_t n = 0, used = 0;
	const cJSON *e;
	int rc;

	t->added = calloc((size_t)cJSON_GetArraySize(arr) + n_extra + 1,
			  sizeof(*t->added));
	if (!t->added)
		return -ENOMEM;
	cJSON_ArrayForEach(e, arr)
	{
		rc = load_one_added(ld, e, n, &used);
		if (rc)
			return rc;
		n++;
	}
	t->n_added = add_config_specials(t, extra, n_extra, n, used);
	return index_added(ld, extra, n_extra);
}

static cJSON *parse_file(const char *path, bool optional, char *err,
			 size_t errlen, int *rc)
{
	uint8_t *buf;
	size_t len;
	cJSON *j;

	*rc = engy_read_file(path, TOK_MAX_FILE, &buf, &len);
	if (*rc) {
		if (optional && *rc == -ENOENT) {
			*rc = 0;
			return NULL;
		}
		snprintf(err, errlen, "%s: %s", path, strerror(-*rc));
		return NULL;
	}
	j = cJSON_ParseWithLength((const char *)buf, len);
	if (!j) {
		const char *at = cJSON_GetErrorPtr();

		snprintf(err, errlen, "%s: not valid JSON (near byte %zu)",
			 path,
			 at && at >= (const char *)buf &&
					 at <= (const char *)buf + len
				 ? (size_t)(at - (const char *)buf)
				 : len);
		*rc = -EINVAL;
	} else if (!cJSON_IsObject(j)) {
		snprintf(err, errlen, "%s: not a JSON object", path);
		cJSON_Delete(j);
		j = NULL;
		*rc = -EINVAL;
	}
	free(buf);
	return j;
}

/* Sizes every per-id array from the largest id and the total string bytes. */
static int alloc_tables(struct tok_loader *ld, const cJSON *vocab,
			const cJSON *added, const char **extra, size_t n_extra)
{
	struct engy_tokenizer *t = ld->t;
	size_t key_bytes = 0, added_bytes = 1, i;
	uint32_t max = 0, id;
	const cJSON *e, *c;

	cJSON_ArrayForEach(e, vocab)
	{
		if (json_id(e, &id))
			TOK_FAIL(ld, -EINVAL,
				 "model.vocab: '%.40s' has no valid id "
				 "(integer below %u)",
				 e->string, TOK_MAX_ID);
		max = id > max ? id : max;
		key_bytes += strlen(e->string);
	}
	cJSON_ArrayForEach(e, added)
	{
		if (!json_id(cJSON_GetObjectItemCaseSensitive(e, "id"), &id))
			max = id > max ? id : max;
		c = cJSON_GetObjectItemCaseSensitive(e, "content");
		if (cJSON_IsString(c))
			added_bytes +=
				3 * strlen(c->valuestring); /* NFC grows UTF-8
							       at most 3x */
	}
	for (i = 0; i < n_extra; i++)
		added_bytes += strlen(extra[i]);
	if (key_bytes + added_bytes >= UINT32_MAX)
		TOK_FAIL(ld, -E2BIG, "tokenizer strings exceed 4 GiB");
	t->n_ids = max + 1;
	t->flags = calloc(t->n_ids, 1);
	t->dec = malloc(t->n_ids * sizeof(*t->dec));
	t->vkey = calloc(t->n_ids, sizeof(*t->vkey));
	t->vkey_arena = malloc(key_bytes + 1);
	t->dec_arena = malloc(key_bytes + added_bytes);
	t->added_arena = malloc(added_bytes);
	if (!t->flags || !t->dec || !t->vkey || !t->vkey_arena ||
	    !t->dec_arena || !t->added_arena)
		return -ENOMEM;
	for (i = 0; i < t->n_ids; i++)
		t->dec[i] = (struct tok_span){ 0, TOK_NONE };
	return 0;
}

static int load_json(struct tok_loader *ld, const cJSON *root, const cJSON *cfg)
{
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
	const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
	const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
	const cJSON *added =
		cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
	const char **extra = NULL;
	size_t n_extra = 0;
	int bytelevel = 0, rc;

	if (!cJSON_IsObject(vocab) || !cJSON_IsArray(merges))
		TOK_FAIL(ld, -EINVAL,
			 "model needs a vocab object and a merges array");
	if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added))
		TOK_FAIL(ld, -EINVAL, "added_tokens is not an array");
	rc = engy_tok_check_decoder(
		ld, cJSON_GetObjectItemCaseSensitive(root, "decoder"));
	if (!rc)
		rc = engy_tok_load_normalizer(
			ld,
			cJSON_GetObjectItemCaseSensitive(root, "normalizer"));
	if (!rc)
		rc = engy_tok_load_pretok(
			ld,
			cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"),
			&bytelevel);
	if (!rc && !bytelevel)
		TOK_FAIL(ld, -ENOTSUP,
			 "pre_tokenizer has no ByteLevel step (only byte-level "
			 "BPE)");
	if (!rc && cfg) {
		ld->t->split_special =
			engy_tok_json_true(cfg, "split_special_tokens", false);
		rc = engy_tok_config_specials(cfg, &extra, &n_extra);
	}
	if (!rc)
		rc = alloc_tables(ld, vocab, added, extra, n_extra);
	if (!rc)
		rc = load_vocab(ld, vocab);
	if (!rc)
		rc = load_merges(ld, merges);
	if (!rc)
		rc = load_added(ld, added, extra, n_extra);
	if (!rc)
		rc = engy_tok_load_model(ld, model);
	free(extra);
	return rc;
}

static atomic_uint_fast64_t next_uid = 1;

static int load_paths(const char *json_path, const char *cfg_path,
		      struct engy_tokenizer **out, char *err, size_t errlen)
{
	struct engy_tokenizer *t;
	struct tok_loader ld;
	cJSON *root = NULL, *cfg = NULL;
	char dummy[1];
	int rc;

	*out = NULL;
	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->unk_id = TOK_NONE;
	t->uid = atomic_fetch_add(&next_uid, 1);
	ld = (struct tok_loader){ .t = t, .err = err, .errlen = errlen };
	root = parse_file(json_path, false, err, errlen, &rc);
	if (!root)
		goto out;
	if (cfg_path) {
		cfg = parse_file(cfg_path, true, err, errlen, &rc);
		if (rc)
			goto out;
	}
	rc = load_json(&ld, root, cfg);
	if (rc && !err[0])
		snprintf(err, errlen, "%s: %s", json_path, strerror(-rc));
	else if (rc && err != dummy) {
		/* Prefix the file the reason is about. */
		char *tmp = strdup(err);

		if (tmp) {
			snprintf(err, errlen, "%s: %s", json_path, tmp);
			free(tmp);
		}
	}
out:
	cJSON_Delete(root);
	cJSON_Delete(cfg);
	if (rc) {
		/* The reason may quote the file (a name, a token): one line,
		 * no control characters, whatever the file holds. */
		for (char *c = err; c && *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		engy_tokenizer_free(t);
	} else {
		*out = t;
	}
	return rc;
}

int engy_tokenizer_load_file(const char *path, struct engy_tokenizer **out,
			     char *err, size_t errlen)
{
	return load_paths(path, NULL, out, err, errlen);
}

int engy_tokenizer_load(const char *dir, struct engy_tokenizer **out, char *err,
			size_t errlen)
{
	size_t n = strlen(dir) + sizeof("/tokenizer_config.json");
	char *json = malloc(n), *cfg = malloc(n);
	int rc;

	if (!json || !cfg) {
		free(json);
		free(cfg);
		*out = NULL;
		return -ENOMEM;
	}
	snprintf(json, n, "%s/tokenizer.json", dir);
	snprintf(cfg, n, "%s/tokenizer_config.json", dir);
	rc = load_paths(json, cfg, out, err, errlen);
	free(json);
	free(cfg);
	return rc;
}

void engy_tokenizer_free(struct engy_tokenizer *t)
{
	if (!t)
		return;
	free(t->flags);
	free(t->dec);
	free(t->dec_arena);
	free(t->vkey);
	free(t->vkey_arena);
	free(t->vocab_tab.slot);
	free(t->added_tab.slot);
	free(t->mtab);
	free(t->added);
	free(t->added_arena);
	engy_tok_matcher_free(&t->match_raw);
	engy_tok_matcher_free(&t->match_norm);
	engy_tok_stages_free(t);
	free(t);
}
