/* SPDX-License-Identifier: MIT */
/*
 * Hand-made tokenizer.json fixtures for the tokenizer unit tests: a byte's
 * id is its value, merged and added tokens take ids from 256 up, so the
 * expected ids follow from the rules by hand.
 */
#ifndef ENGY_TEST_TOK_FIXTURE_H
#define ENGY_TEST_TOK_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tokenizer.h"

/* GPT-2's byte -> character map, derived here independently by counting. */
static inline bool printable(int b)
{
	return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) ||
	       (b >= 174 && b <= 255);
}

static inline uint32_t gpt2_cp(int b)
{
	int x, n = 0;

	if (printable(b))
		return (uint32_t)b;
	for (x = 0; x < b; x++)
		n += !printable(x);
	return 256u + (uint32_t)n;
}

static inline size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	o[0] = (char)(0xC0 | cp >> 6);
	o[1] = (char)(0x80 | (cp & 0x3F));
	return 2;
}

/* A fixture tokenizer.json; NULL fields take the defaults below. */
struct fx_spec {
	int _; /* lets FX() take no fields */
	const char *normalizer, *pretok, *vocab, *merges, *added, *model,
		*config;
	int missing; /* a byte left out of the vocab (0: none) */
};

#define FX(...) fx(&(struct fx_spec){ ._ = 0, __VA_ARGS__ })

/*
 * Every byte (but .missing) is in the vocab with id = byte value, .vocab
 * adds entries, .model adds model fields (",\"k\":v").
 */
static inline char *fx_json(const struct fx_spec *f)
{
	size_t cap = 65536, o = 0;
	char *s = malloc(cap);
	int b;

	ck_assert_ptr_nonnull(s);
	o += (size_t)snprintf(
		s + o, cap - o,
		"{\"version\":\"1.0\",\"added_tokens\":%s,\"normalizer\":%s,"
		"\"pre_tokenizer\":%s,\"decoder\":{\"type\":\"ByteLevel\"},"
		"\"model\":{\"type\":\"BPE\"%s,\"vocab\":{",
		f->added ? f->added : "[]",
		f->normalizer ? f->normalizer : "null",
		f->pretok
			? f->pretok
			: "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
			  "\"use_regex\":false}",
		f->model ? f->model : "");
	for (b = 0; b < 256; b++) {
		if (b == f->missing && b)
			continue;
		s[o++] = '"';
		if (b == '"' || b == '\\')
			s[o++] = '\\';
		o += put_utf8(s + o, gpt2_cp(b));
		o += (size_t)snprintf(s + o, cap - o, "\":%d,", b);
	}
	if (f->vocab)
		o += (size_t)snprintf(s + o, cap - o, "%s", f->vocab);
	else
		o--; /* the last byte's comma */
	o += (size_t)snprintf(s + o, cap - o, "},\"merges\":%s}}",
			      f->merges ? f->merges : "[]");
	ck_assert_uint_lt(o, cap);
	return s;
}

static char tmpdir[64] __attribute__((unused));

static inline void write_file(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* Loads @json (and @config when not NULL) from a fresh directory; frees @json.
 */
static inline int fx_load(char *json, const char *config,
			  struct engy_tokenizer **t, char *err)
{
	char path[128];
	int rc;

	snprintf(tmpdir, sizeof(tmpdir), "%s/engy-tok-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
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

static inline struct engy_tokenizer *fx(const struct fx_spec *f)
{
	struct engy_tokenizer *t;
	char err[256];
	int rc = fx_load(fx_json(f), f->config, &t, err);

	ck_assert_msg(rc == 0, "fixture failed to load: %d %s", rc, err);
	return t;
}

static inline void expect_ids(const struct engy_tokenizer *t, const char *text,
			      size_t len, const uint32_t *want, size_t nwant,
			      int line)
{
	uint32_t *ids;
	size_t n, i;
	int rc = engy_tokenizer_encode(t, text, len, &ids, &n);

	ck_assert_msg(rc == 0, "line %d: encode rc %d", line, rc);
	ck_assert_msg(n == nwant, "line %d: %zu ids, want %zu", line, n, nwant);
	for (i = 0; i < n; i++)
		ck_assert_msg(ids[i] == want[i],
			      "line %d: id[%zu] = %u, want %u", line, i, ids[i],
			      want[i]);
	free(ids);
}

#define EXPECT(t, text, ...)                                                   \
	do {                                                                   \
		const uint32_t w_[] = { __VA_ARGS__ };                         \
		expect_ids(t, text, sizeof(text) - 1, w_,                      \
			   sizeof(w_) / sizeof(w_[0]), __LINE__);              \
	} while (0)

static inline void expect_text(const struct engy_tokenizer *t,
			       const uint32_t *ids, size_t n, bool skip,
			       const char *want, size_t wlen)
{
	char *text;
	size_t len;

	ck_assert_int_eq(engy_tokenizer_decode(t, ids, n, skip, &text, &len),
			 0);
	ck_assert_uint_eq(len, wlen);
	ck_assert_mem_eq(text, want, wlen);
	ck_assert_int_eq(text[len], '\0');
	free(text);
}

#define DECODES(t, skip, want, ...)                                            \
	do {                                                                   \
		const uint32_t i_[] = { __VA_ARGS__ };                         \
		expect_text(t, i_, sizeof(i_) / sizeof(i_[0]), skip, want,     \
			    sizeof(want) - 1);                                 \
	} while (0)

#endif /* ENGY_TEST_TOK_FIXTURE_H */
