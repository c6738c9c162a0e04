/* SPDX-License-Identifier: MIT */
/*
 * Tokenizer unit tests on hand-made fixtures (tok_fixture.h): BPE merges,
 * pre-tokenizer splits, white space, NFC, added tokens, decoding, threads.
 *
 * Oracle: hand-made fixtures whose tokenizations were worked by hand; the
 * real Qwen3 tokenizer is compared with an independent JavaScript
 * implementation in tokenizer_peer.sh.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <utf8proc.h>

#include "tok_fixture.h"
#include "tok_int.h"

START_TEST(test_byte_alphabet)
{
	int b;

	for (b = 0; b < 256; b++) {
		ck_assert_uint_eq(engy_tok_byte_to_cp((uint8_t)b), gpt2_cp(b));
		ck_assert_int_eq(engy_tok_cp_to_byte(gpt2_cp(b)), b);
	}
	ck_assert_uint_eq(engy_tok_byte_to_cp(' '), 0x120);  /* Ġ */
	ck_assert_uint_eq(engy_tok_byte_to_cp('\n'), 0x10A); /* Ċ */
	ck_assert_int_eq(engy_tok_cp_to_byte(0x144), -1);
	ck_assert_int_eq(engy_tok_cp_to_byte(0x20), -1);
	ck_assert_int_eq(engy_tok_cp_to_byte(0xAD), -1);
}
END_TEST

static const char rank_vocab[] =
	"\"bc\":256,\"ab\":257,\"abc\":258,\"aa\":259,\"aaaa\":260";

/* Merges apply by rank, not left to right; ties go to the leftmost pair. */
START_TEST(test_bpe_ranks)
{
	static const char *forms[] = {
		"[[\"b\",\"c\"],[\"a\",\"b\"],[\"a\",\"bc\"],[\"a\",\"a\"],["
		"\"aa\",\"aa\"]]",
		"[\"b c\",\"a b\",\"a bc\",\"a a\",\"aa aa\"]",
	};
	char a130[131], a201[202];
	uint32_t want[51];
	int f, i;

	memset(a130, 'a', 130);
	memset(a201, 'a', 201);
	for (f = 0; f < 2; f++) {
		struct engy_tokenizer *t =
			FX(.vocab = rank_vocab, .merges = forms[f]);

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
	struct engy_tokenizer *t =
		FX(.vocab = rank_vocab,
		   .merges = "[[\"a\",\"b\"],[\"b\",\"c\"],[\"a\",\"b\"]]");

	EXPECT(t, "abc", 'a', 256);
	engy_tokenizer_free(t);
}
END_TEST

/* Textbook BPE on the merge list itself, to check both fast paths against. */
struct ref_merge {
	uint32_t a, b, id;
};

static size_t ref_bpe(const struct ref_merge *m, size_t nm, uint32_t *s,
		      size_t n)
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
		{ 'b', 'a', 256 }, { 'a', 'b', 257 }, { 'a', 'a', 258 },
		{ 256, 'a', 259 }, { 257, 257, 260 }, { 'c', 258, 261 },
		{ 258, 258, 262 }, { 259, 'b', 263 },
	};
	struct engy_tokenizer *t =
		FX(.vocab = "\"ba\":256,\"ab\":257,\"aa\":258,\"baa\":259,"
			    "\"abab\":260,\"caa\":261,"
			    "\"aaaa\":262,\"baab\":263",
		   .merges = "[[\"b\",\"a\"],[\"a\",\"b\"],[\"a\",\"a\"],["
			     "\"ba\",\"a\"],[\"ab\",\"ab\"],"
			     "[\"c\",\"aa\"],[\"aa\",\"aa\"],[\"baa\",\"b\"]]");
	uint32_t a[64], b[64], c[64];
	size_t n, na, nb, nc, i, iter;
	unsigned seed = 7;

	for (iter = 0; iter < 20000; iter++) {
		n = 2 + (size_t)(rand_r(&seed) % 63);
		for (i = 0; i < n; i++)
			a[i] = b[i] = c[i] = "abc"[rand_r(&seed) % 3];
		na = engy_tok_bpe_merge_small(t, a, n);
		ck_assert_int_eq(engy_tok_bpe_merge_heap(t, b, n, &nb), 0);
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

	plain = FX(.vocab = "\"b1\":256", .merges = "[[\"b\",\"1\"]]");
	split = FX(.pretok = "{\"type\":\"Sequence\",\"pretokenizers\":[{"
			     "\"type\":\"Split\","
			     "\"pattern\":{\"Regex\":\"\\\\d\"},\"behavior\":"
			     "\"Isolated\","
			     "\"invert\":false},{\"type\":\"ByteLevel\",\"add_"
			     "prefix_space\":false,"
			     "\"use_regex\":false}]}",
		   .vocab = "\"b1\":256", .merges = "[[\"b\",\"1\"]]");
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
	struct engy_tokenizer *t =
		FX(.pretok = "{\"type\":\"Sequence\",\"pretokenizers\":[{"
			     "\"type\":\"Split\","
			     "\"pattern\":{\"Regex\":\"\\\\s+|\\\\S+\"},"
			     "\"behavior\":\"Isolated\"},"
			     "{\"type\":\"ByteLevel\",\"add_prefix_space\":"
			     "false,\"use_regex\":false}]}",
		   .vocab = "\"x\xc3\x82\":256,\"x\xc3\xaf\":257,\"x\xc3\xa1\":"
			    "258",
		   .merges = "[[\"x\",\"\xc3\x82\"],[\"x\",\"\xc3\xaf\"],["
			     "\"x\",\"\xc3\xa1\"]]");
	char *tr = engy_tok_regex_translate("[^\\s\\p{L}]\\S\\\\s", 16);

	EXPECT(t, "x\xc2\x85", 'x', 0xC2, 0x85);     /* U+0085 */
	EXPECT(t, "x\xc2\xa0", 'x', 0xC2, 0xA0);     /* U+00A0 */
	EXPECT(t, "x\xef\xbb\xbf", 257, 0xBB, 0xBF); /* U+FEFF */
	EXPECT(t, "x\xe1\xa0\x8e", 258, 0xA0, 0x8E); /* U+180E */
	ck_assert_str_eq(tr, "[^\\p{White_Space}\\p{L}]\\P{White_Space}\\\\s");
	free(tr);
	ck_assert(engy_tok_is_white_space(0x85) &&
		  engy_tok_is_white_space(0x3000) &&
		  engy_tok_is_white_space(0x2028) &&
		  engy_tok_is_white_space('\v'));
	ck_assert(!engy_tok_is_white_space(0xFEFF) &&
		  !engy_tok_is_white_space(0x180E) &&
		  !engy_tok_is_white_space(0x200B));
	engy_tokenizer_free(t);
}
END_TEST

/* ByteLevel with use_regex splits GPT-2 style; add_prefix_space adds one space.
 */
START_TEST(test_bytelevel_prefix)
{
	struct engy_tokenizer *t =
		FX(.pretok = "{\"type\":\"ByteLevel\",\"add_prefix_space\":"
			     "true,\"use_regex\":true}",
		   .vocab = "\"\xc4\xa0h\":256,\"it\":257",
		   .merges = "[[\"\xc4\xa0\",\"h\"],[\"i\",\"t\"]]");

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

	nfc = FX(.normalizer = "{\"type\":\"NFC\"}");
	seq = FX(.normalizer = "{\"type\":\"Sequence\",\"normalizers\":[{"
			       "\"type\":\"NFC\"}]}");
	none = FX();
	EXPECT(nfc, "e\xcc\x81", 0xC3, 0xA9); /* e + U+0301 -> U+00E9 */
	EXPECT(seq, "e\xcc\x81", 0xC3, 0xA9);
	EXPECT(none, "e\xcc\x81", 'e', 0xCC, 0x81);
	EXPECT(nfc, "\xe2\x84\xab", 0xC3, 0x85); /* U+212B -> U+00C5 */
	EXPECT(nfc, "\xe1\x84\x80\xe1\x85\xa1", 0xEA, 0xB0,
	       0x80); /* jamo -> U+AC00 */
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
		if ((cp >= 0xD800 && cp < 0xE000) ||
		    (cp >= 0x2FA20 && cp < 0x30000))
			continue;
		cp2 = 0x80 + (uint32_t)rand_r(&seed) % 0x3000;
		if (cp2 >= 0xD800 && cp2 < 0xE000)
			cp2 = 'a';
		n = 0;
		s[n++] = 'A';
		n += (size_t)utf8proc_encode_char((utf8proc_int32_t)cp, s + n);
		n += (size_t)utf8proc_encode_char((utf8proc_int32_t)cp2, s + n);
		if (!engy_tok_nfc_quick(s, n))
			continue;
		quick++;
		r = utf8proc_map(s, (utf8proc_ssize_t)n, &out,
				 UTF8PROC_STABLE | UTF8PROC_COMPOSE);
		ck_assert_msg(r == (ssize_t)n && memcmp(out, s, n) == 0,
			      "U+%04X U+%04X passed the quick check but NFC "
			      "changes it",
			      cp, cp2);
		free(out);
	}
	ck_assert_uint_gt(quick, 100000);
	ck_assert(!engy_tok_nfc_quick((const uint8_t *)"e\xcc\x81", 3));
	ck_assert(!engy_tok_nfc_quick(
		(const uint8_t *)"\xea\xb0\x80\xe1\x86\xa8", 6)); /* LV + T */
	ck_assert(engy_tok_nfc_quick((const uint8_t *)"\xea\xb0\x80 plain", 9));
}
END_TEST

/* Normalizing chunk by chunk equals normalizing the whole text. */
START_TEST(test_nfc_chunks)
{
	static const uint32_t pool[] = {
		'a',	'e',	'A',	' ',	0x301,	 0x323,	 0x308,
		0x327,	0x345,	0x1100, 0x1161, 0x11A8,	 0xAC00, 0xAC01,
		0x9C7,	0x9BE,	0x9D7,	0x212B, 0x2126,	 0xE9,	 0x1E9B,
		0x4E2D, 0x3099, 0x304B, 0xF900, 0x1F600, 0x0F73, 0x0344
	};
	utf8proc_uint8_t s[256], *whole;
	unsigned seed = 5;
	size_t n, k, len, iter;
	uint8_t *out;
	ssize_t r;

	for (iter = 0; iter < 20000; iter++) {
		n = 0;
		for (k = 1 + (size_t)rand_r(&seed) % 12; k > 0; k--)
			n += (size_t)utf8proc_encode_char(
				(utf8proc_int32_t)
					pool[rand_r(&seed) %
					     (sizeof(pool) / sizeof(pool[0]))],
				s + n);
		r = utf8proc_map(s, (utf8proc_ssize_t)n, &whole,
				 UTF8PROC_STABLE | UTF8PROC_COMPOSE);
		ck_assert_int_gt(r, 0);
		ck_assert_int_eq(engy_tok_nfc(s, n, &out, &len), 0);
		ck_assert_uint_eq(len, (size_t)r);
		ck_assert_mem_eq(out ? out : s, whole, len);
		free(out);
		free(whole);
	}
}
END_TEST

static const char added_fixture[] =
	"[{\"id\":300,\"content\":\"<a>\",\"special\":true,\"normalized\":"
	"false},"
	"{\"id\":301,\"content\":\"<a>b\",\"special\":false,\"normalized\":"
	"false},"
	"{\"id\":302,\"content\":\"<m>\",\"lstrip\":true,\"rstrip\":true,"
	"\"normalized\":false},"
	"{\"id\":303,\"content\":\"ab\",\"single_word\":true,\"normalized\":"
	"false},"
	"{\"id\":304,\"content\":\"\xc3\xa9\",\"normalized\":true,\"special\":"
	"false},"
	"{\"id\":305,\"content\":\"<r>\",\"special\":true,\"normalized\":false}"
	"]";

START_TEST(test_added_tokens)
{
	struct engy_tokenizer *t =
		FX(.normalizer = "{\"type\":\"NFC\"}", .added = added_fixture);
	const uint32_t hole = 256, beyond = 306;
	char *text;
	size_t len;

	EXPECT(t, "<a>bc", 301, 'c'); /* longest match wins */
	EXPECT(t, "<a>c", 300, 'c');
	EXPECT(t, "x<a", 'x', '<', 'a');
	EXPECT(t, "x  <m>  y", 'x', 302,
	       'y');			 /* lstrip and rstrip take the spaces */
	EXPECT(t, "xab", 'x', 'a', 'b'); /* single_word needs word boundaries */
	EXPECT(t, "abc", 'a', 'b', 'c');
	EXPECT(t, "x ab y", 'x', ' ', 303, ' ', 'y');
	EXPECT(t, "ab", 303);
	EXPECT(t, "e\xcc\x81", 304); /* normalized token found after NFC */
	EXPECT(t, "<a>\xcc\x81", 300, 0xCC,
	       0x81); /* raw tokens are cut before NFC */
	DECODES(t, false, "<a>x<a>b<r>", 300, 'x', 301, 305);
	DECODES(t, true, "x<a>b", 300, 'x', 301, 305);
	ck_assert(engy_tokenizer_is_special(t, 300) &&
		  engy_tokenizer_is_special(t, 305));
	ck_assert(!engy_tokenizer_is_special(t, 301) &&
		  !engy_tokenizer_is_special(t, 'a'));
	ck_assert(!engy_tokenizer_is_special(t, 1u << 30));
	ck_assert_int_eq(engy_tokenizer_token_id(t, "<a>"), 300);
	ck_assert_int_eq(engy_tokenizer_token_id(t, "\xc3\xa9"), 304);
	ck_assert_int_eq(engy_tokenizer_token_id(t, "a"), 'a');
	ck_assert_int_eq(engy_tokenizer_token_id(t, "\xc4\xa0"), ' ');
	ck_assert_int_eq(engy_tokenizer_token_id(t, " "), -ENOENT);
	ck_assert_int_eq(engy_tokenizer_token_id(t, "<b>"), -ENOENT);
	ck_assert_uint_eq(engy_tokenizer_vocab_size(t), 306);
	ck_assert_int_eq(engy_tokenizer_decode(t, &hole, 1, false, &text, &len),
			 -ERANGE);
	ck_assert_int_eq(
		engy_tokenizer_decode(t, &beyond, 1, false, &text, &len),
		-ERANGE);
	ck_assert_ptr_null(text);
	engy_tokenizer_free(t);
}
END_TEST

START_TEST(test_decode_lossy)
{
	static const struct {
		const char *in, *out;
	} v[] = {
		{ "\xe4\xb8"
		  "a",
		  "\xef\xbf\xbd"
		  "a" },			    /* truncated, then ASCII */
		{ "\xf0\x9f\x98", "\xef\xbf\xbd" }, /* truncated at the end */
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" }, /* overlong lead */
		{ "\xed\xa0\x80",
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* surrogate */
		{ "\xf4\x90\x80\x80",
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xe0\x80", "\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xff\xfe", "\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80" },
	};
	struct engy_tokenizer *t = FX();
	uint32_t ids[8];
	size_t i, k, n;
	char *text;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		n = strlen(v[i].in);
		for (k = 0; k < n; k++)
			ids[k] = (uint8_t)v[i].in[k];
		expect_text(t, ids, n, false, v[i].out, strlen(v[i].out));
	}
	ck_assert_int_eq(engy_tokenizer_decode(t, NULL, 0, false, &text, &n),
			 0);
	ck_assert_str_eq(text, "");
	free(text);
	engy_tokenizer_free(t);
}
END_TEST

START_TEST(test_encode_rejects_bad_utf8)
{
	static const char *bad[] = { "\xff",	     "\xc0\xaf",
				     "\xed\xa0\x80", "\xf4\x90\x80\x80",
				     "\xe4\xb8",     "a\x80",
				     "\xc2",	     "\xf8\x88\x80\x80\x80" };
	struct engy_tokenizer *t = FX();
	uint32_t *ids = (uint32_t *)1;
	size_t i, n = 1;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(engy_tokenizer_encode(
					 t, bad[i], strlen(bad[i]), &ids, &n),
				 -EILSEQ);
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

#define QWEN_PATTERN                                                           \
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+" \
	"|\\\\p{N}| "                                                          \
	"?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?" \
	"!\\\\S)|\\\\s+"

struct thr {
	const struct engy_tokenizer *t;
	const char *text;
	size_t len, nwant;
	const uint32_t *want;
	int bad;
};

static void *thr_run(void *p)
{
	struct thr *a = p;
	uint32_t *ids;
	size_t n;
	int k;

	for (k = 0; k < 20; k++, free(ids))
		a->bad += engy_tokenizer_encode(a->t, a->text, a->len, &ids,
						&n) ||
			  n != a->nwant ||
			  memcmp(ids, a->want, n * sizeof(*ids));
	return NULL;
}

/*
 * Several threads on one tokenizer, each with its own cache, agree with one
 * thread.
 */
START_TEST(test_threads)
{
	static const char words[][12] = { "abc ",      "aaaa", "  \n",
					  "Don't",     "12",   "\xe4\xb8\xad",
					  "e\xcc\x81", "!!",   "\t",
					  "bca" };
	struct engy_tokenizer *t =
		FX(.normalizer = "{\"type\":\"NFC\"}",
		   .pretok = "{\"type\":\"Sequence\",\"pretokenizers\":[{"
			     "\"type\":\"Split\",\"pattern\":"
			     "{\"Regex\":\"" QWEN_PATTERN
			     "\"},\"behavior\":\"Isolated\"},{\"type\":"
			     "\"ByteLevel\",\"add_prefix_space\":false,\"use_"
			     "regex\":false}]}",
		   .vocab = rank_vocab,
		   .merges = "[[\"b\",\"c\"],[\"a\",\"b\"],[\"a\",\"bc\"],["
			     "\"a\",\"a\"]]");
	char *text = malloc(200000);
	size_t len = 0, n;
	unsigned seed = 3;
	struct thr a[4];
	pthread_t th[4];
	uint32_t *want;
	int i;

	for (; len < 190000; len += strlen(text + len))
		strcpy(text + len, words[rand_r(&seed) % 10]);
	ck_assert_int_eq(engy_tokenizer_encode(t, text, len, &want, &n), 0);
	for (i = 0; i < 4; i++) {
		a[i] = (struct thr){ .t = t,
				     .text = text,
				     .len = len,
				     .nwant = n,
				     .want = want };
		ck_assert_int_eq(pthread_create(&th[i], NULL, thr_run, &a[i]),
				 0);
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

int main(void)
{
	const TTest *tests[] = {
		test_byte_alphabet,
		test_bpe_ranks,
		test_bpe_duplicate_merge,
		test_bpe_paths_agree,
		test_split_isolated,
		test_white_space_class,
		test_bytelevel_prefix,
		test_nfc,
		test_nfc_quick_check,
		test_nfc_chunks,
		test_added_tokens,
		test_decode_lossy,
		test_encode_rejects_bad_utf8,
		test_threads,
	};
	Suite *s = suite_create("tokenizer");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	size_t i;
	int failed;

	tcase_set_timeout(tc, 120);
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		tcase_add_test(tc, tests[i]);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
