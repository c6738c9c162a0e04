/* SPDX-License-Identifier: MIT */
/* Test harness for the generation parsers; see genparse_check.h. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genparse_check.h"

static const char tools_json[] =
	"[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
	"\"parameters\":"
	"{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},"
	"\"days\":{\"type\":\"integer\"},\"temp\":{\"type\":\"number\"},"
	"\"exact\":{\"type\":\"boolean\"},\"opts\":{\"type\":\"object\"},"
	"\"list\":{\"type\":\"array\"},\"maybe\":{\"type\":[\"integer\","
	"\"null\"]},"
	"\"free\":{\"description\":\"no "
	"type\"},\"unit\":{\"enum\":[\"c\",\"f\"]},"
	"\"big\":{\"type\":\"int64\"},\"ratio\":{\"type\":\"float\"}}}}},"
	"{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{}}"
	"}]";

cJSON *gp_tools;

void gp_setup(void)
{
	gp_tools = cJSON_Parse(tools_json);
	ck_assert_ptr_nonnull(gp_tools);
}

void gp_teardown(void)
{
	cJSON_Delete(gp_tools);
}

struct engy_genparse_opts gp_opts(bool think_open, bool with_tools)
{
	struct engy_genparse_opts o = { .think_open = think_open,
					.tools = with_tools ? gp_tools : NULL,
					.id_prefix = "id" };
	return o;
}

static void append(char **s, size_t *len, const char *p, size_t n)
{
	*s = realloc(*s, *len + n + 1);
	ck_assert_ptr_nonnull(*s);
	memcpy(*s + *len, p, n);
	*len += n;
	(*s)[*len] = '\0';
}

/* Every delta is whole UTF-8 characters (the inputs here are valid UTF-8). */
static bool utf8_whole(const char *p, size_t n)
{
	size_t i = 0, k, need;
	unsigned char c;

	while (i < n) {
		c = (unsigned char)p[i];
		need = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		if (i + need > n)
			return false;
		for (k = 1; k < need; k++)
			if (((unsigned char)p[i + k] & 0xc0) != 0x80)
				return false;
		i += need;
	}
	return true;
}

int gp_collect(void *arg, const struct engy_gen_delta *d)
{
	struct gp_coll *c = arg;

	ck_assert_uint_gt(d->len, 0);
	ck_assert(utf8_whole(d->text, d->len));
	switch (d->kind) {
	case ENGY_GEN_REASONING:
		ck_assert_uint_eq(c->ncalls, 0);
		ck_assert_uint_eq(c->clen, 0);
		c->saw_reasoning = true;
		append(&c->reasoning, &c->rlen, d->text, d->len);
		break;
	case ENGY_GEN_CONTENT:
		ck_assert_uint_eq(c->ncalls, 0);
		append(&c->content, &c->clen, d->text, d->len);
		break;
	case ENGY_GEN_TOOL_NAME:
		ck_assert_uint_eq(d->index, c->ncalls);
		ck_assert_uint_lt(c->ncalls, 16);
		ck_assert_ptr_nonnull(d->id);
		snprintf(c->call[c->ncalls].id, sizeof(c->call[0].id), "%s",
			 d->id);
		c->call[c->ncalls].name = strndup(d->text, d->len);
		c->ncalls++;
		break;
	case ENGY_GEN_TOOL_ARGS:
		ck_assert_uint_eq(d->index + 1, c->ncalls);
		append(&c->call[d->index].args, &c->call[d->index].alen,
		       d->text, d->len);
		break;
	}
	return 0;
}

void gp_coll_free(struct gp_coll *c)
{
	size_t i;

	for (i = 0; i < c->ncalls; i++) {
		free(c->call[i].name);
		free(c->call[i].args);
	}
	free(c->reasoning);
	free(c->content);
	memset(c, 0, sizeof(*c));
}

void gp_expect_same(const struct gp_coll *c, const struct engy_gen_msg *m,
		    const char *how)
{
	size_t i;

	ck_assert_msg(strcmp(c->content ? c->content : "", m->content) == 0,
		      "%s: content '%s' vs batch '%s'", how,
		      c->content ? c->content : "", m->content);
	ck_assert_msg(strcmp(c->reasoning ? c->reasoning : "",
			     m->reasoning ? m->reasoning : "") == 0,
		      "%s: reasoning '%s' vs batch '%s'", how,
		      c->reasoning ? c->reasoning : "",
		      m->reasoning ? m->reasoning : "");
	if (!m->reasoning)
		ck_assert_msg(!c->saw_reasoning,
			      "%s: reasoning deltas without reasoning", how);
	ck_assert_msg(c->ncalls == m->n_calls, "%s: %zu calls vs batch %zu",
		      how, c->ncalls, m->n_calls);
	for (i = 0; i < m->n_calls; i++) {
		ck_assert_str_eq(c->call[i].id, m->calls[i].id);
		ck_assert_str_eq(c->call[i].name, m->calls[i].name);
		ck_assert_msg(strcmp(c->call[i].args ? c->call[i].args : "",
				     m->calls[i].arguments) == 0,
			      "%s: args '%s' vs batch '%s'", how,
			      c->call[i].args, m->calls[i].arguments);
	}
}

/* Feed @text cut at the offsets in @cuts (ascending), then finish. */
void gp_stream(const char *text, size_t len, const struct engy_genparse_opts *o,
	       const size_t *cuts, size_t ncuts, struct gp_coll *c)
{
	struct engy_genstream *s;
	size_t prev = 0, i;

	ck_assert_int_eq(engy_genstream_new(o, gp_collect, c, &s), 0);
	for (i = 0; i <= ncuts; i++) {
		size_t at = i < ncuts ? cuts[i] : len;

		ck_assert_int_eq(engy_genstream_feed(s, text + prev, at - prev),
				 0);
		prev = at;
	}
	ck_assert_int_eq(engy_genstream_finish(s), 0);
	ck_assert_uint_eq(engy_genstream_calls(s), c->ncalls);
	engy_genstream_free(s);
}

/* Batch-parse @text, then check the stream against it: whole, cut once at
 * every offset, cut twice at pairs of offsets, one byte at a time. */
void gp_parse(const char *text, const struct engy_genparse_opts *o,
	      struct engy_gen_msg *m)
{
	size_t len = strlen(text), k, j, *cuts;
	struct gp_coll c = { 0 };
	char how[64];

	ck_assert_int_eq(engy_genparse(text, len, o, m), 0);
	ck_assert_ptr_nonnull(m->content);
	gp_stream(text, len, o, NULL, 0, &c);
	gp_expect_same(&c, m, "whole");
	gp_coll_free(&c);
	for (k = 0; k <= len; k++) {
		gp_stream(text, len, o, &k, 1, &c);
		snprintf(how, sizeof(how), "cut at %zu", k);
		gp_expect_same(&c, m, how);
		gp_coll_free(&c);
	}
	for (k = 0; k <= len; k += 7) {
		for (j = k; j <= len; j += 5) {
			size_t two[2] = { k, j };

			gp_stream(text, len, o, two, 2, &c);
			snprintf(how, sizeof(how), "cuts at %zu,%zu", k, j);
			gp_expect_same(&c, m, how);
			gp_coll_free(&c);
		}
	}
	cuts = malloc((len + 1) * sizeof(*cuts));
	ck_assert_ptr_nonnull(cuts);
	for (k = 0; k < len; k++)
		cuts[k] = k;
	gp_stream(text, len, o, cuts, len, &c);
	gp_expect_same(&c, m, "byte by byte");
	gp_coll_free(&c);
	free(cuts);
}

/* Parse @text every way and check reasoning (NULL: no reasoning section),
 * content and the number of calls. */
void gp_check(const char *text, struct engy_genparse_opts o,
	      const char *reasoning, const char *content, size_t ncalls)
{
	struct engy_gen_msg m;

	gp_parse(text, &o, &m);
	if (reasoning)
		ck_assert_msg(m.reasoning &&
				      strcmp(m.reasoning, reasoning) == 0,
			      "'%s': reasoning '%s', want '%s'", text,
			      m.reasoning, reasoning);
	else
		ck_assert_msg(!m.reasoning, "'%s': reasoning '%s', want none",
			      text, m.reasoning);
	ck_assert_str_eq(m.content, content);
	ck_assert_uint_eq(m.n_calls, ncalls);
	engy_gen_msg_free(&m);
}

/* Parse @text every way; it must give one call with arguments @args. */
void gp_one_call(const char *text, struct engy_genparse_opts o,
		 const char *args)
{
	struct engy_gen_msg m;

	gp_parse(text, &o, &m);
	ck_assert_uint_eq(m.n_calls, 1);
	ck_assert_str_eq(m.calls[0].arguments, args);
	engy_gen_msg_free(&m);
}
