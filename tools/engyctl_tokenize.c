/* SPDX-License-Identifier: MIT */
/*
 * engyctl tokenize: text on stdin -> token ids on one line, or with
 * --decode ids on stdin -> text, with a tokenizer.json (or the directory
 * holding it and tokenizer_config.json).  --jsonl handles many texts in
 * one run: one JSON string per line <-> one line of ids.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engyctl.h"
#include "fsutil.h"
#include "grow.h"
#include "tokenizer.h"

#define STDIN_MAX ((size_t)1 << 30)

static void usage(FILE *f)
{
	fputs("usage: engyctl tokenize --tokenizer PATH [--decode] "
	      "[--skip-special] [--jsonl]\n"
	      "\n"
	      "Encodes UTF-8 text read from stdin and prints the token ids\n"
	      "on one line, space-separated.  With --decode, reads ids\n"
	      "(separated by white space) and writes the text;\n"
	      "--skip-special drops special tokens.  With --jsonl, each\n"
	      "input line is one JSON string (encode) or one line of ids\n"
	      "(decode), and each output line answers one input line.\n"
	      "PATH is a directory with tokenizer.json (and\n"
	      "tokenizer_config.json) or a tokenizer.json file.\n",
	      f);
}

static int load(const char *path, struct engy_tokenizer **t)
{
	char err[512];
	struct stat st;
	int rc;

	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		rc = engy_tokenizer_load_file(path, t, err, sizeof(err));
	else
		rc = engy_tokenizer_load(path, t, err, sizeof(err));
	if (rc)
		return engyctl_fail("tokenizer: %s",
				    err[0] ? err : strerror(-rc));
	return 0;
}

static bool is_sep(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/*
 * White-space separated decimal ids; on a bad item returns -EINVAL with its
 * number in *bad.
 */
static int parse_ids(const uint8_t *in, size_t len, uint32_t **out,
		     size_t *nout, size_t *bad)
{
	uint32_t *ids = NULL;
	size_t n = 0, cap = 0, i = 0;
	uint64_t v;

	for (;;) {
		while (i < len && is_sep(in[i]))
			i++;
		if (i == len)
			break;
		v = 0;
		for (; i < len && !is_sep(in[i]); i++)
			v = (in[i] < '0' || in[i] > '9' || v > UINT32_MAX)
				    ? UINT64_MAX
				    : v * 10 + (in[i] - '0');
		if (v > UINT32_MAX) {
			free(ids);
			*bad = n + 1;
			return -EINVAL;
		}
		if (!ENGY_GROW(ids, cap, n + 1)) {
			free(ids);
			return -ENOMEM;
		}
		ids[n++] = (uint32_t)v;
	}
	*out = ids;
	*nout = n;
	return 0;
}

static int hex4(const uint8_t *s, uint32_t *v)
{
	int k;

	*v = 0;
	for (k = 0; k < 4; k++) {
		uint8_t c = s[k];

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			*v |= (c | 0x20) - 'a' + 10;
		else
			return -1;
	}
	return 0;
}

/*
 * One JSON string (the whole line, surrounding white space allowed) into
 * raw bytes in @out (room for @len bytes); U+0000 survives, unlike cJSON.
 */
static const char *json_string(const uint8_t *s, size_t len, char *out,
			       size_t *olen)
{
	size_t i = 0, o = 0;
	uint32_t cp, lo;

	while (i < len && is_sep(s[i]))
		i++;
	while (len > i && is_sep(s[len - 1]))
		len--;
	if (len - i < 2 || s[i] != '"' || s[len - 1] != '"')
		return "expected one JSON string";
	for (i++, len--; i < len;) {
		if (s[i] < 0x20)
			return "raw control character in a JSON string";
		if (s[i] == '"')
			return "expected one JSON string";
		if (s[i] != '\\') {
			out[o++] = (char)s[i++];
			continue;
		}
		if (++i == len)
			return "bad escape";
		switch (s[i++]) {
		case '"':
			out[o++] = '"';
			continue;
		case '\\':
			out[o++] = '\\';
			continue;
		case '/':
			out[o++] = '/';
			continue;
		case 'b':
			out[o++] = '\b';
			continue;
		case 'f':
			out[o++] = '\f';
			continue;
		case 'n':
			out[o++] = '\n';
			continue;
		case 'r':
			out[o++] = '\r';
			continue;
		case 't':
			out[o++] = '\t';
			continue;
		case 'u':
			break;
		default:
			return "bad escape";
		}
		if (len - i < 4 || hex4(s + i, &cp))
			return "bad \\u escape";
		i += 4;
		if (cp >= 0xDC00 && cp < 0xE000)
			return "lone surrogate in \\u escape";
		if (cp >= 0xD800 && cp < 0xDC00) {
			if (len - i < 6 || s[i] != '\\' || s[i + 1] != 'u' ||
			    hex4(s + i + 2, &lo) || lo < 0xDC00 || lo >= 0xE000)
				return "lone surrogate in \\u escape";
			i += 6;
			cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
		}
		/* Escapes are at least as long as the UTF-8 they stand for. */
		if (cp < 0x80) {
			out[o++] = (char)cp;
		} else if (cp < 0x800) {
			out[o++] = (char)(0xC0 | cp >> 6);
			out[o++] = (char)(0x80 | (cp & 0x3F));
		} else if (cp < 0x10000) {
			out[o++] = (char)(0xE0 | cp >> 12);
			out[o++] = (char)(0x80 | (cp >> 6 & 0x3F));
			out[o++] = (char)(0x80 | (cp & 0x3F));
		} else {
			out[o++] = (char)(0xF0 | cp >> 18);
			out[o++] = (char)(0x80 | (cp >> 12 & 0x3F));
			out[o++] = (char)(0x80 | (cp >> 6 & 0x3F));
			out[o++] = (char)(0x80 | (cp & 0x3F));
		}
	}
	*olen = o;
	return NULL;
}

static void put_json_string(const char *s, size_t n)
{
	size_t i;

	putchar('"');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c < 0x20 || c == 0x7F)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void put_ids(const uint32_t *ids, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		printf(i ? " %u" : "%u", ids[i]);
	putchar('\n');
}

/* The first id of @ids the tokenizer does not know. */
static uint32_t first_unknown(const struct engy_tokenizer *t,
			      const uint32_t *ids, size_t n)
{
	size_t i, len;
	char *text;

	for (i = 0; i < n; i++) {
		if (engy_tokenizer_decode(t, ids + i, 1, false, &text, &len) ==
		    -ERANGE)
			return ids[i];
		free(text);
	}
	return 0;
}

struct job {
	const struct engy_tokenizer *t;
	bool decode, skip, jsonl;
	size_t line; /* 1-based in --jsonl mode, 0 otherwise */
	char *scratch;
};

static int fail_at(const struct job *j, const char *what)
{
	if (j->line)
		return engyctl_fail("stdin line %zu: %s", j->line, what);
	return engyctl_fail("stdin: %s", what);
}

static int run_one(struct job *j, const uint8_t *in, size_t len)
{
	char msg[128], *text;
	size_t n, bad, tlen;
	const char *why;
	uint32_t *ids;
	int rc;

	if (!j->decode) {
		if (j->jsonl) {
			why = json_string(in, len, j->scratch, &tlen);
			if (why)
				return fail_at(j, why);
			in = (const uint8_t *)j->scratch;
			len = tlen;
		}
		rc = engy_tokenizer_encode(j->t, (const char *)in, len, &ids,
					   &n);
		if (rc == -EILSEQ)
			return fail_at(j, "text is not valid UTF-8");
		if (rc == -E2BIG)
			return fail_at(j, "a piece of the text is beyond the "
					  "pre-tokenizer regex's limits");
		if (rc)
			return fail_at(j, strerror(-rc));
		put_ids(ids, n);
		free(ids);
		return 0;
	}
	rc = parse_ids(in, len, &ids, &n, &bad);
	if (rc == -EINVAL) {
		snprintf(msg, sizeof(msg),
			 "item %zu is not a token id (a decimal number below "
			 "2^32)",
			 bad);
		return fail_at(j, msg);
	}
	if (rc)
		return fail_at(j, strerror(-rc));
	rc = engy_tokenizer_decode(j->t, ids, n, j->skip, &text, &tlen);
	if (rc == -ERANGE) {
		snprintf(msg, sizeof(msg),
			 "token id %u is not in the vocabulary (%zu ids)",
			 first_unknown(j->t, ids, n),
			 engy_tokenizer_vocab_size(j->t));
		rc = fail_at(j, msg);
	} else if (rc) {
		rc = fail_at(j, strerror(-rc));
	} else {
		if (j->jsonl) {
			put_json_string(text, tlen);
			putchar('\n');
		} else {
			fwrite(text, 1, tlen, stdout);
		}
		free(text);
	}
	free(ids);
	return rc;
}

static int run(struct job *j, const uint8_t *in, size_t len)
{
	const uint8_t *nl;
	size_t off = 0, n;
	int rc = 0;

	if (!j->jsonl)
		return run_one(j, in, len);
	j->scratch = malloc(len + 1);
	if (!j->scratch)
		return engyctl_fail("out of memory");
	while (off < len && !rc) {
		nl = memchr(in + off, '\n', len - off);
		n = nl ? (size_t)(nl - (in + off)) : len - off;
		j->line++;
		rc = run_one(j, in + off, n);
		off += n + 1;
	}
	free(j->scratch);
	return rc;
}

int engyctl_tokenize(int argc, char **argv);

int engyctl_tokenize(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tokenizer", required_argument, NULL, 't' },
		{ "decode", no_argument, NULL, 'd' },
		{ "skip-special", no_argument, NULL, 's' },
		{ "jsonl", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct job j = { 0 };
	struct engy_tokenizer *t = NULL;
	const char *path = NULL;
	uint8_t *in = NULL;
	size_t len;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "t:dsjh", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			path = optarg;
			break;
		case 'd':
			j.decode = true;
			break;
		case 's':
			j.skip = true;
			break;
		case 'j':
			j.jsonl = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!path || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (j.skip && !j.decode) {
		fprintf(stderr,
			"engyctl: --skip-special applies to --decode only\n");
		return 2;
	}
	rc = load(path, &t);
	if (rc)
		return rc;
	j.t = t;
	rc = engy_read_file("-", STDIN_MAX, &in, &len);
	if (rc) {
		rc = engyctl_fail("stdin: %s", strerror(-rc));
		goto out;
	}
	rc = run(&j, in, len);
	if (!rc && fflush(stdout) != 0)
		rc = engyctl_fail("stdout: %s", strerror(errno));
out:
	free(in);
	engy_tokenizer_free(t);
	return rc;
}
