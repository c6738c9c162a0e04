/* SPDX-License-Identifier: MIT */
/*
 * The generated checkpoints' tokenizer: a byte-level BPE in the Qwen3
 * tokenizer.json format (NFC, Qwen's split regex, ByteLevel, the 26 Qwen3
 * added tokens), trained at generation time on a fixed word corpus: a
 * list of English words plus syllable words from a fixed generator, each
 * as a pre-token piece (" word", "word", " Word") with a Zipf-like
 * frequency.  Training merges the most frequent adjacent pair (ties: the
 * smaller pair of ids) until the vocabulary has its size; a merge that
 * rebuilds an existing token is kept as a merge without a new id.
 * Everything is integer arithmetic: the same on any machine.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fsutil.h"
#include "grow.h"
#include "mkmodel.h"

const char *const mkmodel_specials[MKMODEL_N_SPECIAL] = {
	"<|endoftext|>",
	"<|im_start|>",
	"<|im_end|>",
	"<|object_ref_start|>",
	"<|object_ref_end|>",
	"<|box_start|>",
	"<|box_end|>",
	"<|quad_start|>",
	"<|quad_end|>",
	"<|vision_start|>",
	"<|vision_end|>",
	"<|vision_pad|>",
	"<|image_pad|>",
	"<|video_pad|>",
	"<tool_call>",
	"</tool_call>",
	"<|fim_prefix|>",
	"<|fim_middle|>",
	"<|fim_suffix|>",
	"<|fim_pad|>",
	"<|repo_name|>",
	"<|file_sep|>",
	"<tool_response>",
	"</tool_response>",
	"<think>",
	"</think>",
};
#define N_FLAGGED_SPECIAL 14 /* the first 14 have special: true */

/* Qwen2/Qwen3's pre-tokenizer split (tokenizer.json's Split Regex). */
static const char split_regex[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?"
	"[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static const char *const words[] = {
	"the",	     "of",	   "and",	  "to",	       "in",
	"is",	     "that",	   "for",	  "it",	       "as",
	"was",	     "with",	   "be",	  "by",	       "on",
	"not",	     "he",	   "this",	  "are",       "or",
	"his",	     "from",	   "at",	  "which",     "but",
	"have",	     "an",	   "had",	  "they",      "you",
	"were",	     "their",	   "one",	  "all",       "we",
	"can",	     "her",	   "has",	  "there",     "been",
	"if",	     "more",	   "when",	  "will",      "would",
	"who",	     "so",	   "no",	  "model",     "token",
	"tokens",    "proof",	   "verify",	  "network",   "miner",
	"request",   "response",   "server",	  "client",    "hidden",
	"state",     "layer",	   "weight",	  "weights",   "matrix",
	"vector",    "attention",  "expert",	  "experts",   "router",
	"sample",    "greedy",	   "seed",	  "prompt",    "output",
	"input",     "value",	   "values",	  "number",    "string",
	"function",  "return",	   "const",	  "static",    "struct",
	"int",	     "float",	   "double",	  "char",      "void",
	"include",   "define",	   "error",	  "errors",    "check",
	"test",	     "tests",	   "time",	  "people",    "year",
	"way",	     "day",	   "thing",	  "man",       "world",
	"life",	     "hand",	   "part",	  "child",     "eye",
	"woman",     "place",	   "work",	  "week",      "case",
	"point",     "government", "company",	  "system",    "program",
	"question",  "night",	   "water",	  "room",      "mother",
	"area",	     "money",	   "story",	  "fact",      "month",
	"lot",	     "right",	   "study",	  "book",      "job",
	"word",	     "business",   "issue",	  "side",      "kind",
	"head",	     "house",	   "service",	  "friend",    "father",
	"power",     "hour",	   "game",	  "line",      "end",
	"member",    "law",	   "car",	  "city",      "community",
	"name",	     "president",  "team",	  "minute",    "idea",
	"kid",	     "body",	   "information", "back",      "parent",
	"face",	     "others",	   "level",	  "office",    "door",
	"health",    "person",	   "art",	  "war",       "history",
	"party",     "result",	   "change",	  "morning",   "reason",
	"research",  "girl",	   "guy",	  "moment",    "air",
	"teacher",   "force",	   "education",	  "think",     "answer",
	"reasoning", "tool",	   "call",	  "weather",   "city",
	"today",     "hello",	   "thanks",	  "please",    "good",
	"great",     "small",	   "large",	  "first",     "last",
	"long",	     "little",	   "own",	  "other",     "old",
	"big",	     "high",	   "different",	  "important", "public",
	"able",	     "café",	   "naïve",	  "über",      "señor",
	"données",   "straße",	   "中文",	  "模型",      "你好",
	"世界",	     "数据",	   "очень",	  "привет",    "καλημέρα",
};

static const char *const onsets[] = { "b",  "c",  "d",	"f",  "g",  "h",  "j",
				      "k",  "l",  "m",	"n",  "p",  "r",  "s",
				      "t",  "v",  "w",	"z",  "ch", "sh", "th",
				      "st", "tr", "pl", "gr", "br", "qu", "" };
static const char *const nuclei[] = { "a",  "e",  "i",	"o",  "u",
				      "ai", "ea", "ou", "io", "y" };
static const char *const codas[] = { "",  "",  "n",  "r",  "s",	 "t",
				     "l", "m", "nd", "st", "ng", "x" };

static const char *const puncts[] = {
	".",   ",",   "!",    "?",    ":",    ";",	  "\"", " \"", "(",
	" (",  ")",   ").",   "),",   "'",    "-",	  " -", " --", "...",
	".\n", "\n",  "\n\n", "  ",   "    ", "        ", " {", "}",   "{",
	");",  "();", " =",   " ==",  " !=",  " ->",	  " +", " *",  " /",
	"//",  " //", "/*",   " */",  "#",    "[",	  "]",	" [",  "],",
	"_",   "__",  "\t",   "\t\t", " <",   ">",	  "</", "/>",  "://",
	" &&", " ||", "%",    " %",   " $",   "@",	  " @"
};

#define CAT(a) (sizeof(a) / sizeof((a)[0]))

/* splitmix64: integer only, the same sequence everywhere. */
static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

struct piece {
	uint32_t *sym;
	uint32_t n;
	uint64_t freq;
};

struct corpus {
	struct piece *p;
	size_t n, cap;
};

static int add_piece(struct corpus *c, const char *s, uint64_t freq)
{
	size_t len = strlen(s), i;
	struct piece *p;

	if (!ENGY_GROW(c->p, c->cap, c->n + 1))
		return -ENOMEM;
	p = &c->p[c->n];
	p->sym = malloc((len + 1) * sizeof(*p->sym));
	if (!p->sym)
		return -ENOMEM;
	for (i = 0; i < len; i++)
		p->sym[i] = (uint8_t)s[i];
	p->n = (uint32_t)len;
	p->freq = freq;
	c->n++;
	return 0;
}

/* A word as the pieces the split regex makes of running text. */
static int add_word(struct corpus *c, const char *w, uint64_t freq)
{
	char buf[64];
	int rc;

	snprintf(buf, sizeof(buf), " %s", w);
	rc = add_piece(c, buf, freq);
	if (!rc)
		rc = add_piece(c, w, freq / 4 + 1);
	if (!rc && w[0] >= 'a' && w[0] <= 'z') {
		snprintf(buf, sizeof(buf), " %c%s", w[0] - 'a' + 'A', w + 1);
		rc = add_piece(c, buf, freq / 6 + 1);
	}
	return rc;
}

static int build_corpus(struct corpus *c, uint32_t n_synth)
{
	uint64_t s = 0x656E67796B656E73ull; /* fixed: not the model seed */
	char w[64];
	size_t i, k;
	int rc = 0;

	for (i = 0; i < CAT(words) && !rc; i++)
		rc = add_word(c, words[i], 4000 / (i + 1) + 20);
	for (i = 0; i < CAT(puncts) && !rc; i++)
		rc = add_piece(c, puncts[i], 600 / (i + 1) + 10);
	for (i = 0; i < n_synth && !rc; i++) {
		uint64_t syl = 1 + next(&s) % 3;

		w[0] = '\0';
		for (k = 0; k < syl; k++) {
			strcat(w, onsets[next(&s) % CAT(onsets)]);
			strcat(w, nuclei[next(&s) % CAT(nuclei)]);
			strcat(w, codas[next(&s) % CAT(codas)]);
		}
		rc = add_word(c, w, 2000 / (i + 10) + 2);
	}
	return rc;
}

/* Pair counts: open addressing on (left << 32 | right); entries stay. */
struct pairs {
	uint64_t *key;
	int64_t *cnt;
	size_t mask, used;
};

#define EMPTY UINT64_MAX

static size_t slot(const struct pairs *t, uint64_t k)
{
	size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 17) & t->mask;

	while (t->key[i] != EMPTY && t->key[i] != k)
		i = (i + 1) & t->mask;
	return i;
}

static int pairs_init(struct pairs *t, size_t size)
{
	t->key = malloc(size * sizeof(*t->key));
	t->cnt = calloc(size, sizeof(*t->cnt));
	if (!t->key || !t->cnt)
		return -ENOMEM;
	memset(t->key, 0xFF, size * sizeof(*t->key));
	t->mask = size - 1;
	t->used = 0;
	return 0;
}

static int pairs_add(struct pairs *t, uint32_t a, uint32_t b, int64_t d)
{
	uint64_t k = (uint64_t)a << 32 | b;
	size_t i = slot(t, k);

	if (t->key[i] == EMPTY) {
		if (2 * (t->used + 1) > t->mask + 1) {
			struct pairs n;
			size_t j;

			if (pairs_init(&n, 2 * (t->mask + 1)))
				return -ENOMEM;
			for (j = 0; j <= t->mask; j++)
				if (t->key[j] != EMPTY) {
					size_t s = slot(&n, t->key[j]);

					n.key[s] = t->key[j];
					n.cnt[s] = t->cnt[j];
					n.used++;
				}
			free(t->key);
			free(t->cnt);
			*t = n;
			i = slot(t, k);
		}
		t->key[i] = k;
		t->used++;
	}
	t->cnt[i] += d;
	return 0;
}

static int count_piece(struct pairs *t, const struct piece *p, int64_t sign)
{
	uint32_t i;

	for (i = 0; i + 1 < p->n; i++)
		if (pairs_add(t, p->sym[i], p->sym[i + 1],
			      sign * (int64_t)p->freq))
			return -ENOMEM;
	return 0;
}

struct vocab {
	uint8_t **b; /* raw bytes of each training id */
	uint32_t *len;
	uint32_t n;		 /* ids so far */
	uint32_t *ml, *mr, *res; /* merges: left, right, result */
	uint32_t n_merges, cap_merges;
};

/* The id of the bytes @s, or -1: a merge may rebuild an existing token. */
static int64_t vocab_find(const struct vocab *v, const uint8_t *s, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < v->n; i++)
		if (v->len[i] == n && memcmp(v->b[i], s, n) == 0)
			return i;
	return -1;
}

static int record(struct vocab *v, uint32_t a, uint32_t b, uint32_t *res)
{
	uint32_t n = v->len[a] + v->len[b];
	uint8_t *s = malloc(n);
	int64_t old;

	if (!s)
		return -ENOMEM;
	memcpy(s, v->b[a], v->len[a]);
	memcpy(s + v->len[a], v->b[b], v->len[b]);
	if (v->n_merges == v->cap_merges) {
		uint32_t cap = v->cap_merges ? 2 * v->cap_merges : 256;
		uint32_t *l = realloc(v->ml, cap * sizeof(*l));

		if (l)
			v->ml = l;
		l = l ? realloc(v->mr, cap * sizeof(*l)) : NULL;
		if (l)
			v->mr = l;
		l = l ? realloc(v->res, cap * sizeof(*l)) : NULL;
		if (!l) {
			free(s);
			return -ENOMEM;
		}
		v->res = l;
		v->cap_merges = cap;
	}
	old = vocab_find(v, s, n);
	if (old >= 0) {
		free(s);
		*res = (uint32_t)old;
	} else {
		*res = v->n;
		v->b[v->n] = s;
		v->len[v->n++] = n;
	}
	v->ml[v->n_merges] = a;
	v->mr[v->n_merges] = b;
	v->res[v->n_merges++] = *res;
	return 0;
}

/* Merge until the vocabulary has @n_tok ids (256 bytes + new tokens). */
static int train(struct corpus *c, struct vocab *v, uint32_t n_tok)
{
	uint32_t a, b, res, i, j;
	struct pairs t;
	size_t k, best;
	int rc;

	rc = pairs_init(&t, 1 << 16);
	for (k = 0; k < c->n && !rc; k++)
		rc = count_piece(&t, &c->p[k], 1);
	while (!rc && v->n < n_tok) {
		best = SIZE_MAX;
		for (k = 0; k <= t.mask; k++)
			if (t.key[k] != EMPTY && t.cnt[k] > 0 &&
			    (best == SIZE_MAX || t.cnt[k] > t.cnt[best] ||
			     (t.cnt[k] == t.cnt[best] &&
			      t.key[k] < t.key[best])))
				best = k;
		if (best == SIZE_MAX) {
			rc = -ERANGE; /* the corpus is used up */
			break;
		}
		a = (uint32_t)(t.key[best] >> 32);
		b = (uint32_t)t.key[best];
		rc = record(v, a, b, &res);
		for (k = 0; k < c->n && !rc; k++) {
			struct piece *p = &c->p[k];
			bool hit = false;

			for (i = 0; i + 1 < p->n && !hit; i++)
				hit = p->sym[i] == a && p->sym[i + 1] == b;
			if (!hit)
				continue;
			rc = count_piece(&t, p, -1);
			for (i = 0, j = 0; i < p->n; j++) {
				if (i + 1 < p->n && p->sym[i] == a &&
				    p->sym[i + 1] == b) {
					p->sym[j] = res;
					i += 2;
				} else {
					p->sym[j] = p->sym[i++];
				}
			}
			p->n = j;
			if (!rc)
				rc = count_piece(&t, p, 1);
		}
	}
	free(t.key);
	free(t.cnt);
	return rc;
}

/* GPT-2's byte <-> printable code point map, as UTF-8 text. */
static uint32_t byte_cp(uint8_t b)
{
	if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
		return b;
	if (b <= 0x20)
		return 0x100u + b;
	if (b <= 0xA0)
		return 0x121u + (b - 0x7Fu);
	return 0x143;
}

/* Byte-level ids 0..255 in GPT-2's order: printable bytes first. */
static void byte_order(uint8_t *id_byte)
{
	uint32_t b, k = 0;

	for (b = 0; b < 256; b++)
		if (byte_cp((uint8_t)b) == b)
			id_byte[k++] = (uint8_t)b;
	for (b = 0; b < 256; b++)
		if (byte_cp((uint8_t)b) != b)
			id_byte[k++] = (uint8_t)b;
}

static size_t put_cp(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	o[0] = (char)(0xC0 | cp >> 6);
	o[1] = (char)(0x80 | (cp & 0x3F));
	return 2;
}

/* Raw bytes as byte-level text (each byte one printable code point). */
static char *bytelevel_text(const uint8_t *b, uint32_t n)
{
	char *s = malloc(2 * (size_t)n + 1);
	size_t k = 0;
	uint32_t i;

	if (!s)
		return NULL;
	for (i = 0; i < n; i++)
		k += put_cp(s + k, byte_cp(b[i]));
	s[k] = '\0';
	return s;
}

static cJSON *bytelevel_obj(const char *type)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "type", type);
	cJSON_AddFalseToObject(o, "add_prefix_space");
	cJSON_AddFalseToObject(o, "trim_offsets");
	cJSON_AddFalseToObject(o, "use_regex");
	return o;
}

static cJSON *added_token(uint32_t id, const char *s, bool special)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "id", id);
	cJSON_AddStringToObject(o, "content", s);
	cJSON_AddFalseToObject(o, "single_word");
	cJSON_AddFalseToObject(o, "lstrip");
	cJSON_AddFalseToObject(o, "rstrip");
	cJSON_AddFalseToObject(o, "normalized");
	cJSON_AddBoolToObject(o, "special", special);
	return o;
}

static cJSON *tokenizer_json(char **tok, uint32_t n_tok, const uint32_t *ml,
			     const uint32_t *mr, uint32_t n_merges)
{
	cJSON *root = cJSON_CreateObject(), *pre, *seq, *split, *pat, *model;
	cJSON *added, *vocab, *merges, *pair, *norm;
	uint32_t i;

	cJSON_AddStringToObject(root, "version", "1.0");
	cJSON_AddNullToObject(root, "truncation");
	cJSON_AddNullToObject(root, "padding");
	added = cJSON_AddArrayToObject(root, "added_tokens");
	for (i = 0; i < MKMODEL_N_SPECIAL; i++)
		cJSON_AddItemToArray(added,
				     added_token(n_tok + i, mkmodel_specials[i],
						 i < N_FLAGGED_SPECIAL));
	norm = cJSON_AddObjectToObject(root, "normalizer");
	cJSON_AddStringToObject(norm, "type", "NFC");
	pre = cJSON_AddObjectToObject(root, "pre_tokenizer");
	cJSON_AddStringToObject(pre, "type", "Sequence");
	seq = cJSON_AddArrayToObject(pre, "pretokenizers");
	split = cJSON_CreateObject();
	cJSON_AddStringToObject(split, "type", "Split");
	pat = cJSON_AddObjectToObject(split, "pattern");
	cJSON_AddStringToObject(pat, "Regex", split_regex);
	cJSON_AddStringToObject(split, "behavior", "Isolated");
	cJSON_AddFalseToObject(split, "invert");
	cJSON_AddItemToArray(seq, split);
	cJSON_AddItemToArray(seq, bytelevel_obj("ByteLevel"));
	cJSON_AddItemToObject(root, "post_processor",
			      bytelevel_obj("ByteLevel"));
	cJSON_AddItemToObject(root, "decoder", bytelevel_obj("ByteLevel"));
	model = cJSON_AddObjectToObject(root, "model");
	cJSON_AddStringToObject(model, "type", "BPE");
	cJSON_AddNullToObject(model, "dropout");
	cJSON_AddNullToObject(model, "unk_token");
	cJSON_AddStringToObject(model, "continuing_subword_prefix", "");
	cJSON_AddStringToObject(model, "end_of_word_suffix", "");
	cJSON_AddFalseToObject(model, "fuse_unk");
	cJSON_AddFalseToObject(model, "byte_fallback");
	cJSON_AddFalseToObject(model, "ignore_merges");
	vocab = cJSON_AddObjectToObject(model, "vocab");
	for (i = 0; i < n_tok; i++)
		cJSON_AddNumberToObject(vocab, tok[i], i);
	merges = cJSON_AddArrayToObject(model, "merges");
	for (i = 0; i < n_merges; i++) {
		pair = cJSON_CreateArray();
		cJSON_AddItemToArray(pair, cJSON_CreateString(tok[ml[i]]));
		cJSON_AddItemToArray(pair, cJSON_CreateString(tok[mr[i]]));
		cJSON_AddItemToArray(merges, pair);
	}
	return root;
}

static cJSON *config_json(uint32_t n_tok, uint32_t max_len)
{
	cJSON *root = cJSON_CreateObject(), *dec, *add;
	char id[16];
	uint32_t i;

	cJSON_AddFalseToObject(root, "add_bos_token");
	cJSON_AddFalseToObject(root, "add_prefix_space");
	dec = cJSON_AddObjectToObject(root, "added_tokens_decoder");
	for (i = 0; i < MKMODEL_N_SPECIAL; i++) {
		cJSON *t = added_token(n_tok + i, mkmodel_specials[i],
				       i < N_FLAGGED_SPECIAL);

		cJSON_DeleteItemFromObject(t, "id");
		snprintf(id, sizeof(id), "%u", n_tok + i);
		cJSON_AddItemToObject(dec, id, t);
	}
	add = cJSON_AddArrayToObject(root, "additional_special_tokens");
	for (i = 1; i < N_FLAGGED_SPECIAL; i++)
		cJSON_AddItemToArray(add,
				     cJSON_CreateString(mkmodel_specials[i]));
	cJSON_AddNullToObject(root, "bos_token");
	cJSON_AddStringToObject(root, "chat_template", mkmodel_chat_template);
	cJSON_AddFalseToObject(root, "clean_up_tokenization_spaces");
	cJSON_AddStringToObject(root, "eos_token", "<|im_end|>");
	cJSON_AddStringToObject(root, "errors", "replace");
	cJSON_AddNumberToObject(root, "model_max_length", max_len);
	cJSON_AddStringToObject(root, "pad_token", "<|endoftext|>");
	cJSON_AddFalseToObject(root, "split_special_tokens");
	cJSON_AddStringToObject(root, "tokenizer_class", "Qwen2Tokenizer");
	cJSON_AddNullToObject(root, "unk_token");
	return root;
}

static int save_json(const char *dir, const char *name, cJSON *j, char *err,
		     size_t errlen)
{
	char path[4096], *s = j ? cJSON_Print(j) : NULL;
	int rc;

	cJSON_Delete(j);
	if (!s) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	rc = engy_write_file_atomic(path, s, strlen(s), 0644);
	free(s);
	if (rc)
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	return rc;
}

int mkmodel_tokenizer(uint32_t n_new, uint32_t max_len, const char *dir,
		      char *err, size_t errlen)
{
	uint32_t n_tok = 256 + n_new, i, *ml = NULL, *mr = NULL;
	struct corpus c = { 0 };
	struct vocab v = { 0 };
	uint8_t id_byte[256], remap[256];
	char **tok = NULL;
	size_t k;
	int rc = -ENOMEM;

	v.b = calloc(n_tok, sizeof(*v.b));
	v.len = calloc(n_tok, sizeof(*v.len));
	tok = calloc(n_tok, sizeof(*tok));
	if (!v.b || !v.len || !tok)
		goto out;
	for (i = 0; i < 256; i++) {
		v.b[i] = malloc(1);
		if (!v.b[i])
			goto out;
		v.b[i][0] = (uint8_t)i;
		v.len[i] = 1;
	}
	v.n = 256;
	rc = build_corpus(&c, n_new);
	if (!rc)
		rc = train(&c, &v, n_tok);
	if (rc == -ERANGE) {
		snprintf(err, errlen, "tokenizer: the corpus has no %u merges",
			 n_new);
		goto out;
	}
	/*
	 * Training numbered the bytes by value; the vocabulary numbers them
	 * in GPT-2's order (printable first), so remap ids below 256.
	 */
	byte_order(id_byte);
	for (i = 0; i < 256; i++)
		remap[id_byte[i]] = (uint8_t)i;
	ml = malloc((v.n_merges + 1) * sizeof(*ml));
	mr = malloc((v.n_merges + 1) * sizeof(*mr));
	if (rc || !ml || !mr)
		goto out;
	for (i = 0; i < v.n_merges; i++) {
		ml[i] = v.ml[i] < 256 ? remap[v.ml[i]] : v.ml[i];
		mr[i] = v.mr[i] < 256 ? remap[v.mr[i]] : v.mr[i];
	}
	for (i = 0; i < n_tok; i++) {
		tok[i] = i < 256 ? bytelevel_text(&id_byte[i], 1)
				 : bytelevel_text(v.b[i], v.len[i]);
		if (!tok[i]) {
			rc = -ENOMEM;
			goto out;
		}
	}
	rc = save_json(dir, "tokenizer.json",
		       tokenizer_json(tok, n_tok, ml, mr, v.n_merges), err,
		       errlen);
	if (!rc)
		rc = save_json(dir, "tokenizer_config.json",
			       config_json(n_tok, max_len), err, errlen);
out:
	if (rc == -ENOMEM)
		snprintf(err, errlen, "tokenizer: out of memory");
	for (k = 0; k < c.n; k++)
		free(c.p[k].sym);
	free(c.p);
	for (i = 0; tok && i < n_tok; i++)
		free(tok[i]);
	for (i = 0; v.b && i < v.n; i++)
		free(v.b[i]);
	free(v.b);
	free(v.len);
	free(v.ml);
	free(v.mr);
	free(v.res);
	free(tok);
	free(ml);
	free(mr);
	return rc;
}
