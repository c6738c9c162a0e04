/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the generation parsers differentially: the first input byte picks the
 * options (prompt-opened <think>, tools given) and the chunk sizes, the rest
 * is the generated text.  The batch parse must succeed, and the streaming
 * parse, fed in those chunks, must emit exactly the batch result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "genparse.h"

static const char tools_json[] = "[{\"type\":\"function\",\"function\":{"
				 "\"name\":\"f\",\"parameters\":{\"type\":"
				 "\"object\",\"properties\":{\"s\":{\"type\":"
				 "\"string\"},\"i\":{\"type\":\"integer\"},"
				 "\"n\":{\"type\":\"number\"},\"b\":{\"type\":"
				 "\"boolean\"},\"o\":{\"type\":\"object\"},"
				 "\"a\":{\"type\":\"array\"},\"u\":{\"type\":["
				 "\"integer\",\"null\"]}}}}}]";

struct acc {
	char *text[2];
	size_t len[2];
	char *args;
	size_t alen;
	size_t calls;
};

static void add(char **s, size_t *len, const char *p, size_t n)
{
	char *q = realloc(*s, *len + n + 1);

	if (!q)
		abort();
	memcpy(q + *len, p, n);
	*len += n;
	q[*len] = '\0';
	*s = q;
}

static void die(const char *why)
{
	fprintf(stderr, "fuzz_toolcall: %s\n", why);
	abort();
}

static int cb(void *arg, const struct engy_gen_delta *d)
{
	struct acc *a = arg;

	if (!d->len)
		die("an empty delta");
	if (d->kind == ENGY_GEN_REASONING || d->kind == ENGY_GEN_CONTENT)
		add(&a->text[d->kind == ENGY_GEN_CONTENT],
		    &a->len[d->kind == ENGY_GEN_CONTENT], d->text, d->len);
	else if (d->kind == ENGY_GEN_TOOL_NAME)
		a->calls++;
	else
		add(&a->args, &a->alen, d->text, d->len);
	return 0;
}

static bool same(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && (!alen || memcmp(a, b, alen) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static cJSON *tools;
	struct engy_genparse_opts o = { .id_prefix = "c" };
	struct engy_genstream *s = NULL;
	struct engy_gen_msg m;
	struct acc a = { 0 };
	const char *text;
	size_t len, off = 0, step, i;
	char *all = NULL;
	size_t alllen = 0;
	cJSON *j;

	if (!size)
		return 0;
	if (!tools)
		tools = cJSON_Parse(tools_json);
	o.think_open = data[0] & 1;
	o.tools = data[0] & 2 ? tools : NULL;
	step = 1 + (data[0] >> 2);
	text = (const char *)data + 1;
	len = size - 1;

	if (engy_genparse(text, len, &o, &m))
		die("the batch parse failed");
	j = engy_gen_msg_json(&m);
	if (!j)
		die("no message JSON");
	cJSON_Delete(j);

	if (engy_genstream_new(&o, cb, &a, &s))
		die("no stream");
	while (off < len) {
		size_t n = len - off < step ? len - off : step;

		if (engy_genstream_feed(s, text + off, n))
			die("a feed failed");
		off += n;
		step = step * 5 % 61 + 1;
	}
	if (engy_genstream_finish(s))
		die("finish failed");

	for (i = 0; i < m.n_calls; i++)
		add(&all, &alllen, m.calls[i].arguments,
		    strlen(m.calls[i].arguments));
	if (!same(a.text[0], a.len[0], m.reasoning, m.reasoning_len) ||
	    !same(a.text[1], a.len[1], m.content, m.content_len) ||
	    a.calls != m.n_calls || !same(a.args, a.alen, all, alllen) ||
	    engy_genstream_calls(s) != m.n_calls)
		die("the stream differs from the batch parse");
	engy_genstream_free(s);
	free(all);
	free(a.text[0]);
	free(a.text[1]);
	free(a.args);
	engy_gen_msg_free(&m);
	return 0;
}
