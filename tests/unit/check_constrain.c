/* SPDX-License-Identifier: MIT */
/*
 * lib/constrain: the schema compiler's refusals (each names the feature
 * and where), hostile schemas (bounded), the automaton on texts written
 * by hand, and the tiny generated model (tools/mkmodel.c: random weights)
 * sampling under the token mask, for every schema of the matrix, many
 * seeds: each finished output must parse and match its schema.  The
 * verdicts come from an independent validator written here (cJSON's
 * parser plus a direct reading of the schema), not from lib/constrain.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "constrain.h"
#include "qwen3.h"
#include "ref_testlib.h"
#include "sampler.h"
#include "tokenizer.h"

static char err[512];

/* ---- an independent validator for the subset ---- */

static size_t utf8_len(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

static const cJSON *deref(const cJSON *root, const cJSON *s)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(s, "$ref");
	const char *p;

	if (!r)
		return s;
	p = r->valuestring;
	if (!strcmp(p, "#"))
		return root;
	if (!strncmp(p, "#/$defs/", 8))
		return cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(root, "$defs"), p + 8);
	return cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(root, "definitions"), p + 14);
}

static bool valid(const cJSON *root, const cJSON *s, const cJSON *v);

static bool valid_type(const cJSON *root, const cJSON *s, const char *t,
		       const cJSON *v)
{
	const cJSON *k, *q;

	if (!strcmp(t, "null"))
		return cJSON_IsNull(v);
	if (!strcmp(t, "boolean"))
		return cJSON_IsBool(v);
	if (!strcmp(t, "number") || !strcmp(t, "integer")) {
		if (!cJSON_IsNumber(v))
			return false;
		if (t[0] == 'i' && v->valuedouble != floor(v->valuedouble))
			return false;
		k = cJSON_GetObjectItemCaseSensitive(s, "minimum");
		return !k || v->valuedouble >= k->valuedouble;
	}
	if (!strcmp(t, "string")) {
		if (!cJSON_IsString(v))
			return false;
		k = cJSON_GetObjectItemCaseSensitive(s, "minLength");
		if (k && utf8_len(v->valuestring) < (size_t)k->valuedouble)
			return false;
		k = cJSON_GetObjectItemCaseSensitive(s, "maxLength");
		return !k || utf8_len(v->valuestring) <= (size_t)k->valuedouble;
	}
	if (!strcmp(t, "array")) {
		int n = cJSON_GetArraySize(v);

		if (!cJSON_IsArray(v))
			return false;
		k = cJSON_GetObjectItemCaseSensitive(s, "minItems");
		if (k && n < k->valueint)
			return false;
		k = cJSON_GetObjectItemCaseSensitive(s, "maxItems");
		if (k && n > k->valueint)
			return false;
		k = cJSON_GetObjectItemCaseSensitive(s, "items");
		cJSON_ArrayForEach(q,
				   v) if (k && !valid(root, k, q)) return false;
		return true;
	}
	if (!strcmp(t, "object")) {
		const cJSON *props =
			cJSON_GetObjectItemCaseSensitive(s, "properties");

		if (!cJSON_IsObject(v))
			return false;
		k = cJSON_GetObjectItemCaseSensitive(s, "required");
		cJSON_ArrayForEach(q, k) if (
			!cJSON_GetObjectItemCaseSensitive(
				v, q->valuestring)) return false;
		cJSON_ArrayForEach(q, v)
		{
			const cJSON *ps;

			if (!props)
				continue;
			ps = cJSON_GetObjectItemCaseSensitive(props, q->string);
			if (!ps || !valid(root, ps, q))
				return false;
		}
		return true;
	}
	return false;
}

static bool valid(const cJSON *root, const cJSON *s, const cJSON *v)
{
	const cJSON *k, *q;

	s = deref(root, s);
	if (!s)
		return false;
	if ((k = cJSON_GetObjectItemCaseSensitive(s, "const")))
		return cJSON_Compare(k, v, true);
	if ((k = cJSON_GetObjectItemCaseSensitive(s, "enum"))) {
		cJSON_ArrayForEach(
			q, k) if (cJSON_Compare(q, v, true)) return true;
		return false;
	}
	if ((k = cJSON_GetObjectItemCaseSensitive(s, "anyOf"))) {
		cJSON_ArrayForEach(q, k) if (valid(root, q, v)) return true;
		return false;
	}
	k = cJSON_GetObjectItemCaseSensitive(s, "type");
	if (cJSON_IsString(k))
		return valid_type(root, s, k->valuestring, v);
	if (cJSON_IsArray(k)) {
		cJSON_ArrayForEach(q, k) if (valid_type(root, s, q->valuestring,
							v)) return true;
		return false;
	}
	if (cJSON_GetObjectItemCaseSensitive(s, "properties"))
		return valid_type(root, s, "object", v);
	return true;
}

/* ---- the schema matrix ---- */

struct mcase {
	const char *schema; /* NULL: any object (json_object) */
	const char *prefix, *suffix;
	const char *good[4];
	const char *bad[4];
};

static const struct mcase matrix[] = {
	{ "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\","
	  "\"maxLength\":12},\"age\":{\"type\":\"integer\"}},\"required\":["
	  "\"name\",\"age\"],\"additionalProperties\":false}",
	  NULL,
	  NULL,
	  { "{\"name\":\"Ann\",\"age\":42}", "{\"name\": \"\", \"age\": -7}" },
	  { "{\"age\":42,\"name\":\"Ann\"}", "{\"name\":\"Ann\"}",
	    "{\"name\":\"Ann\",\"age\":4.2}",
	    "{\"name\":\"abcdefghijklm\",\"age\":1}" } },
	{ "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"boolean\"},"
	  "\"b\":{\"type\":\"null\"},\"c\":{\"type\":\"number\"}},"
	  "\"required\":[\"c\"]}",
	  NULL,
	  NULL,
	  { "{\"c\":1.5e3}", "{\"a\":true,\"c\":0}", "{\"b\":null,\"c\":-0.25}",
	    "{\"a\":false,\"b\":null,\"c\":12}" },
	  { "{}", "{\"a\":true}", "{\"c\":01}", "{\"c\":1,\"a\":true}" } },
	{ "{\"type\":\"object\",\"properties\":{\"color\":{\"enum\":[\"red\","
	  "\"green\",\"reddish\"]},\"n\":{\"enum\":[1,10,\"x\",null,true]}},"
	  "\"required\":[\"color\",\"n\"]}",
	  NULL,
	  NULL,
	  { "{\"color\":\"red\",\"n\":10}", "{\"color\":\"reddish\",\"n\":1}",
	    "{\"color\":\"green\",\"n\":null}" },
	  { "{\"color\":\"blue\",\"n\":1}", "{\"color\":\"red\",\"n\":2}",
	    "{\"color\":\"redd\",\"n\":1}" } },
	{ "{\"type\":\"array\",\"items\":{\"type\":\"array\",\"items\":{"
	  "\"type\":\"integer\",\"minimum\":0},\"maxItems\":3},\"minItems\":1,"
	  "\"maxItems\":3}",
	  NULL,
	  NULL,
	  { "[[]]", "[[1,2,3],[0]]", "[[], [5], [6, 7]]" },
	  { "[]", "[[1,2,3,4]]", "[[-1]]", "[[],[],[],[]]" } },
	{ "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{"
	  "\"type\":\"integer\"},\"kids\":{\"type\":\"array\",\"items\":{"
	  "\"$ref\":\"#/$defs/node\"},\"maxItems\":2}},\"required\":[\"v\","
	  "\"kids\"]}},\"$ref\":\"#/$defs/node\"}",
	  NULL,
	  NULL,
	  { "{\"v\":1,\"kids\":[]}",
	    "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[]}]}" },
	  { "{\"v\":1}", "{\"v\":1,\"kids\":[{\"v\":2}]}" } },
	{ "{\"type\":\"object\",\"properties\":{\"x\":{\"anyOf\":[{\"type\":"
	  "\"string\",\"maxLength\":5},{\"type\":\"null\"}]},\"y\":{\"type\":["
	  "\"integer\",\"string\"],\"maxLength\":8}},\"required\":[\"x\",\"y\"]}",
	  NULL,
	  NULL,
	  { "{\"x\":null,\"y\":3}", "{\"x\":\"hi\",\"y\":\"yo\"}" },
	  { "{\"x\":3,\"y\":3}", "{\"x\":null,\"y\":true}" } },
	{ NULL,
	  NULL,
	  NULL,
	  { "{}", "{\"a\":[1,{\"b\":null}],\"c\":\"d\"}" },
	  { "[]", "3", "\"x\"", "{\"a\":}" } },
	{ "{\"type\":\"string\",\"minLength\":2,\"maxLength\":6}",
	  NULL,
	  NULL,
	  { "\"ab\"", "\"\\u00e9t\\n\"", "\"\xc3\xa9t\xc3\xa9\"" },
	  { "\"a\"", "\"abcdefg\"", "\"a\nb\"", "\"\xc3\"" } },
	{ "{\"type\":\"object\",\"properties\":{\"name\":{\"const\":"
	  "\"get_weather\"},\"arguments\":{\"type\":\"object\",\"properties\":"
	  "{\"city\":{\"type\":\"string\",\"maxLength\":20}},\"required\":["
	  "\"city\"]}},\"required\":[\"name\",\"arguments\"]}",
	  "<tool_call>\n",
	  "\n</tool_call>",
	  { "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
	    "{\"city\": \"Oslo\"}}\n</tool_call>" },
	  { "{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}",
	    "<tool_call>\n{\"name\":\"other\",\"arguments\":{}}\n</tool_call>" } },
	{ "{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"name\":{\"const\":"
	  "\"a\"},\"arguments\":{\"type\":\"object\",\"properties\":{\"x\":{"
	  "\"type\":\"integer\"}},\"required\":[\"x\"]}},\"required\":["
	  "\"name\",\"arguments\"]},{\"type\":\"object\",\"properties\":{"
	  "\"name\":{\"const\":\"b\"},\"arguments\":{\"type\":\"object\","
	  "\"properties\":{\"y\":{\"type\":\"boolean\"}},\"required\":[\"y\"]}},"
	  "\"required\":[\"name\",\"arguments\"]}]}",
	  NULL,
	  NULL,
	  { "{\"name\":\"a\",\"arguments\":{\"x\":1}}",
	    "{\"name\":\"b\",\"arguments\":{\"y\":false}}" },
	  { "{\"name\":\"a\",\"arguments\":{\"y\":false}}",
	    "{\"name\":\"b\",\"arguments\":{\"x\":1}}" } },
};
#define N_MATRIX (sizeof(matrix) / sizeof(matrix[0]))

static struct engy_cons *compile_case(const struct mcase *m, cJSON **schema)
{
	struct engy_cons *c;

	*schema = m->schema ? cJSON_Parse(m->schema) : NULL;
	ck_assert(!m->schema || *schema);
	ck_assert_msg(engy_cons_compile(*schema, m->prefix, m->suffix, &c, err,
					sizeof(err)) == 0,
		      "%s", err);
	return c;
}

static bool accepts(const struct engy_cons *c, const char *text)
{
	struct engy_cons_state *s = engy_cons_state_new(c);
	bool ok;

	ck_assert_ptr_nonnull(s);
	ok = engy_cons_feed(s, (const uint8_t *)text, strlen(text)) == 0 &&
	     engy_cons_done(s);
	engy_cons_state_free(s);
	return ok;
}

START_TEST(test_matrix_texts)
{
	size_t i, k;

	for (i = 0; i < N_MATRIX; i++) {
		cJSON *schema;
		struct engy_cons *c = compile_case(&matrix[i], &schema);

		for (k = 0; k < 4 && matrix[i].good[k]; k++) {
			const char *g = matrix[i].good[k];
			size_t len = strlen(g), at;
			struct engy_cons_state *s = engy_cons_state_new(c);

			ck_assert_msg(accepts(c, g), "case %zu refuses %s", i,
				      g);
			/* the shortest way to finish is never longer than
			 * this text's rest (2 bytes of slack: an object's
			 * or array's first comma is counted) */
			for (at = 0; at <= len; at++) {
				uint32_t need = engy_cons_min_close(s);

				ck_assert_msg(need <= len - at + 2,
					      "case %zu %s at %zu: %u", i, g,
					      at, need);
				if (at == len)
					ck_assert_uint_eq(need, 0);
				else
					ck_assert_int_eq(
						engy_cons_feed(
							s,
							(const uint8_t *)g + at,
							1),
						0);
			}
			engy_cons_state_free(s);
		}
		for (k = 0; k < 4 && matrix[i].bad[k]; k++)
			ck_assert_msg(!accepts(c, matrix[i].bad[k]),
				      "case %zu accepts %s", i,
				      matrix[i].bad[k]);
		engy_cons_free(c);
		cJSON_Delete(schema);
	}
}
END_TEST

/* Lengths hold under both readings: minLength in code points (JSON
 * Schema), maxLength in UTF-16 units too (zod's .max()). */
START_TEST(test_string_lengths)
{
	cJSON *j = cJSON_Parse("{\"type\":\"string\",\"minLength\":2,"
			       "\"maxLength\":5}");
	struct engy_cons *c;

	ck_assert_int_eq(engy_cons_compile(j, NULL, NULL, &c, err, sizeof(err)),
			 0);
	/* U+1F600 is one code point, two UTF-16 units */
	ck_assert(accepts(c, "\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\""));
	ck_assert(accepts(c, "\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80z\""));
	ck_assert(!accepts(c, "\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80zz\""));
	ck_assert(!accepts(c, "\"\xf0\x9f\x98\x80\""));
	ck_assert(accepts(c, "\"\\ud83d\\ude00a\""));
	ck_assert(!accepts(c, "\"\\ud83d\\ude00\""));
	ck_assert(accepts(c, "\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\""));
	engy_cons_free(c);
	cJSON_Delete(j);
}
END_TEST

/* A refused byte leaves the state as it was; a prefix is not done. */
START_TEST(test_feed_state)
{
	struct engy_cons *c;
	struct engy_cons_state *s;

	ck_assert_int_eq(
		engy_cons_compile(NULL, NULL, NULL, &c, err, sizeof(err)), 0);
	s = engy_cons_state_new(c);
	ck_assert_int_eq(engy_cons_feed(s, (const uint8_t *)"{\"a\":", 5), 0);
	ck_assert(!engy_cons_done(s));
	ck_assert_int_eq(engy_cons_feed(s, (const uint8_t *)"}", 1), -EINVAL);
	ck_assert_int_eq(engy_cons_feed(s, (const uint8_t *)"12", 2), 0);
	ck_assert(!engy_cons_done(s));
	ck_assert_int_eq(engy_cons_feed(s, (const uint8_t *)"}", 1), 0);
	ck_assert(engy_cons_done(s));
	ck_assert(!engy_cons_more(s));
	ck_assert_int_eq(engy_cons_feed(s, (const uint8_t *)" ", 1), -EINVAL);
	engy_cons_state_free(s);
	engy_cons_free(c);
}
END_TEST

static void refused(const char *schema, int rc, const char *words)
{
	cJSON *j = cJSON_Parse(schema);
	struct engy_cons *c = (struct engy_cons *)1;

	ck_assert_msg(j, "%s", schema);
	ck_assert_int_eq(engy_cons_compile(j, NULL, NULL, &c, err, sizeof(err)),
			 rc);
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(err, words), "\"%s\" lacks \"%s\"", err, words);
	cJSON_Delete(j);
}

START_TEST(test_refusals)
{
	refused("{\"type\":\"object\",\"properties\":{\"email\":{\"type\":"
		"\"string\",\"pattern\":\"^a\"}}}",
		-EINVAL,
		"unsupported keyword \"pattern\" at /properties/email");
	refused("{\"type\":\"string\",\"format\":\"email\"}", -EINVAL,
		"\"format\"");
	/* a reason reaches the gateway's log: names that are not short
	 * identifiers are not quoted */
	refused("{\"type\":\"object\",\"properties\":{\"my e-mail\":{"
		"\"type\":\"string\",\"secret keyword\":1}}}",
		-EINVAL, "unsupported keyword \"?\" at /properties/?");
	refused("{\"allOf\":[{\"type\":\"string\"}]}", -EINVAL, "\"allOf\"");
	refused("{\"type\":\"object\",\"additionalProperties\":{\"type\":"
		"\"string\"}}",
		-EINVAL, "additionalProperties");
	refused("{\"$ref\":\"http://x/y\"}", -EINVAL, "unsupported $ref");
	refused("{\"type\":\"integer\",\"minimum\":3}", -EINVAL, "\"minimum\"");
	refused("{\"type\":\"integer\",\"maximum\":3}", -EINVAL, "\"maximum\"");
	refused("{\"type\":\"uuid\"}", -EINVAL, "unknown type");
	refused("{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":"
		"[\"b\"]}",
		-EINVAL, "\"b\" is not in properties");
	refused("{\"anyOf\":[{\"type\":\"array\",\"items\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}},"
		"{\"type\":\"string\"}],\"prefixItems\":[]}",
		-EINVAL, "\"prefixItems\" at /");
}
END_TEST

/* Hostile schemas: refused by a limit, quickly, with a reason. */
START_TEST(test_hostile)
{
	char *deep = malloc(64 * 30 + 64), *p;
	int i;

	/* nesting */
	p = deep;
	for (i = 0; i < 40; i++)
		p += sprintf(p, "{\"type\":\"array\",\"items\":");
	p += sprintf(p, "{\"type\":\"null\"}");
	for (i = 0; i < 40; i++)
		*p++ = '}';
	*p = 0;
	refused(deep, -E2BIG, "nested deeper");
	free(deep);
	/* left recursion through $ref */
	refused("{\"$defs\":{\"a\":{\"anyOf\":[{\"$ref\":\"#/$defs/a\"},"
		"{\"type\":\"null\"}]}},\"$ref\":\"#/$defs/a\"}",
		-EINVAL, "cycle");
	/* recursion under branches that start alike: exponential readings */
	refused("{\"$defs\":{\"a\":{\"anyOf\":[{\"type\":\"array\",\"items\":{"
		"\"$ref\":\"#/$defs/a\"}},{\"type\":\"array\",\"items\":{"
		"\"$ref\":\"#/$defs/a\"}}]}},\"$ref\":\"#/$defs/a\"}",
		-EINVAL, "cycle");
	/* too many alternatives alive at once: 4 x 4 x 2 over 16 */
	refused("{\"type\":\"object\",\"properties\":{\"a\":{\"anyOf\":["
		"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"string\"},{"
		"\"type\":\"string\"},{\"type\":\"string\"}]},{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"string\"},{"
		"\"type\":\"string\"},{\"type\":\"string\"}]},"
		"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"string\"},{"
		"\"type\":\"string\"},{\"type\":\"string\"}]},{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"string\"},{"
		"\"type\":\"string\"},{\"type\":\"string\"}]},{\"type\":\"string\"}]}}}",
		-E2BIG, "alternatives");
	/* a DAG of $refs (each level 16 branches to the next): the walks
	 * over it are memoized, not 16^levels paths */
	{
		char *dag = malloc(65536), *q = dag;
		int lv, b;

		q += sprintf(q, "{\"$defs\":{");
		for (lv = 0; lv < 10; lv++) {
			q += sprintf(q, "%s\"d%d\":{\"anyOf\":[", lv ? "," : "",
				     lv);
			for (b = 0; b < 16; b++)
				q += sprintf(q, "%s{\"$ref\":\"#/$defs/d%d\"}",
					     b ? "," : "", lv + 1);
			q += sprintf(q, "]}");
		}
		q += sprintf(q, ",\"d10\":{\"type\":\"null\"}},"
				"\"$ref\":\"#/$defs/d0\"}");
		refused(dag, -E2BIG, "alternatives");
		free(dag);
	}
	/* a required recursion: no finite value, so no output could end */
	refused("{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":"
		"\"#\"}},\"required\":[\"a\"]}",
		-EINVAL, "no finite value");
	/* a recursive schema that is fine: deterministic branches */
	{
		cJSON *j = cJSON_Parse(
			"{\"type\":\"object\",\"properties\":{\"next\":{"
			"\"anyOf\":[{\"$ref\":\"#\"},{\"type\":\"null\"}]}},"
			"\"required\":[\"next\"]}");
		struct engy_cons *c;
		struct engy_cons_state *s;
		char text[4096];
		size_t k = 0;

		ck_assert_int_eq(
			engy_cons_compile(j, NULL, NULL, &c, err, sizeof(err)),
			0);
		/* deeper than the automaton's stacks: refused, not a crash */
		for (i = 0; i < 100; i++)
			k += (size_t)sprintf(text + k, "{\"next\":");
		s = engy_cons_state_new(c);
		ck_assert_int_eq(engy_cons_feed(s, (const uint8_t *)text, k),
				 -EINVAL);
		engy_cons_state_free(s);
		ck_assert(accepts(c, "{\"next\":{\"next\":null}}"));
		engy_cons_free(c);
		cJSON_Delete(j);
	}
}
END_TEST

/* Masks against a hand-made vocabulary, checked id by id against feed. */
START_TEST(test_mask_vocab)
{
	static const char *const toks[] = { "{",   "}",	 "\"",	"\"a",	 "a",
					    ":",   "1",	 "12",	"{\"",	 "x\"",
					    "\":", ", ", "tru", "true}", "" };
	size_t V = sizeof(toks) / sizeof(toks[0]), i, k, n;
	struct engy_cons_vocab *v = engy_cons_vocab_new(V);
	struct engy_cons *c;
	struct engy_cons_state *s;
	uint8_t allow[32];
	cJSON *j = cJSON_Parse("{\"type\":\"object\",\"properties\":{\"a\":{"
			       "\"type\":\"boolean\"},\"x\":{\"type\":"
			       "\"integer\"}}}");
	static const char *const path[] = { "{", "\"a",	 "\":", "tru", "e",
					    ",", " \"x", "\":", "12",  "}" };

	for (i = 0; i < V; i++)
		ck_assert_int_eq(engy_cons_vocab_set(v, (uint32_t)i,
						     (const uint8_t *)toks[i],
						     strlen(toks[i])),
				 0);
	ck_assert_int_eq(engy_cons_vocab_seal(v), 0);
	ck_assert_int_eq(engy_cons_compile(j, NULL, NULL, &c, err, sizeof(err)),
			 0);
	s = engy_cons_state_new(c);
	for (k = 0; k < sizeof(path) / sizeof(path[0]); k++) {
		n = engy_cons_mask(s, v, allow);
		for (i = 0; i < V; i++) {
			struct engy_cons_state *t = engy_cons_state_dup(s);
			bool ok;

			ok = toks[i][0] &&
			     engy_cons_feed(t, (const uint8_t *)toks[i],
					    strlen(toks[i])) == 0;
			ck_assert_msg(allow[i] == ok, "step %zu id %zu", k, i);
			n -= ok;
			engy_cons_state_free(t);
		}
		ck_assert_uint_eq(n, 0);
		ck_assert_int_eq(engy_cons_feed(s, (const uint8_t *)path[k],
						strlen(path[k])),
				 0);
	}
	ck_assert(engy_cons_done(s));
	engy_cons_state_free(s);
	engy_cons_free(c);
	engy_cons_vocab_free(v);
	cJSON_Delete(j);
}
END_TEST

/* Whatever the sampler picks among the allowed ids (here uniformly at
 * random, the worst sampler for closing), the budget ends every output
 * complete within its tokens: one id per byte plus a few longer ones (every case fits in 100 bytes). */
START_TEST(test_budget_walk)
{
	static const char *const multi[] = { "{\"",  "\":", "\"a",   "[1",
					     "22]",  "}",   "\",\"", "true",
					     "null", ", \"" };
	uint32_t eos[1] = { 299 };
	struct engy_cons_vocab *v = engy_cons_vocab_new(300);
	uint64_t seed = 1;
	uint8_t scratch[300];
	float lg[300];
	size_t i, k, run;
	unsigned done_runs = 0;

	for (i = 0; i < 256; i++) {
		uint8_t b = (uint8_t)i;

		ck_assert_int_eq(engy_cons_vocab_set(v, (uint32_t)i, &b, 1), 0);
	}
	for (i = 0; i < 10; i++)
		ck_assert_int_eq(engy_cons_vocab_set(v, 256 + (uint32_t)i,
						     (const uint8_t *)multi[i],
						     strlen(multi[i])),
				 0);
	ck_assert_int_eq(engy_cons_vocab_seal(v), 0);
	for (i = 0; i < N_MATRIX; i++) {
		cJSON *schema;
		struct engy_cons *c = compile_case(&matrix[i], &schema);

		for (run = 0; run < 20; run++) {
			struct engy_cons_state *s = engy_cons_state_new(c);
			uint32_t budget = 100 + (uint32_t)run;
			bool done = false;

			for (k = 0; k < budget && !done; k++) {
				size_t n, want, cnt = 0, pick = 0, t;

				for (t = 0; t < 300; t++)
					lg[t] = 0;
				n = engy_cons_mask_logits(s, v, lg, eos, 1,
							  budget - (uint32_t)k,
							  scratch);
				ck_assert_uint_gt(n, 0);
				seed = seed * 6364136223846793005ull +
				       1442695040888963407ull;
				want = (size_t)(seed >> 33) % n;
				for (t = 0; t < 300; t++)
					if (lg[t] == 0 && cnt++ == want) {
						pick = t;
						break;
					}
				if (pick == 299)
					done = true;
				else
					ck_assert_int_eq(
						engy_cons_feed_id(
							s, v, (uint32_t)pick),
						0);
			}
			ck_assert_msg(done, "case %zu run %zu: not ended in %u",
				      i, run, budget);
			done_runs++;
			engy_cons_state_free(s);
		}
		engy_cons_free(c);
		cJSON_Delete(schema);
	}
	ck_assert_uint_eq(done_runs, N_MATRIX * 20);
	engy_cons_vocab_free(v);
}
END_TEST

/* ---- the tiny model under the mask ---- */

#define SEEDS	6
#define MAX_OUT 160

START_TEST(test_model_matrix)
{
	char *dir = tiny_model(false, 7, 0);
	struct engy_tokenizer *tok;
	struct q3_model *m;
	struct q3_load_opts lo = { .threads = 1 };
	const struct q3_config *cfg;
	struct engy_cons_vocab *v;
	uint32_t *prompt;
	size_t n_prompt, V, i, id;
	float *hid, *logits;
	uint8_t *scratch;
	unsigned finished_total = 0;
	struct q3_sampler *smp;

	ck_assert_int_eq(engy_tokenizer_load(dir, &tok, err, sizeof(err)), 0);
	ck_assert_msg(engy_q3_model_load(dir, &lo, &m, err, sizeof(err)) == 0,
		      "%s", err);
	cfg = engy_q3_model_config(m);
	V = cfg->vocab;
	smp = engy_q3_sampler_new((uint32_t)V);
	v = engy_cons_vocab_new(V);
	for (id = 0; id < V; id++) {
		const uint8_t *p;
		size_t n;

		if (engy_tokenizer_token_bytes(tok, (uint32_t)id, &p, &n) ||
		    engy_tokenizer_is_special(tok, (uint32_t)id))
			continue;
		ck_assert_int_eq(engy_cons_vocab_set(v, (uint32_t)id, p, n), 0);
	}
	ck_assert_int_eq(engy_cons_vocab_seal(v), 0);
	ck_assert_int_eq(engy_tokenizer_encode(tok, "Answer in JSON:", 15,
					       &prompt, &n_prompt),
			 0);
	hid = malloc((n_prompt + MAX_OUT) * cfg->hidden * sizeof(float));
	logits = malloc(V * sizeof(float));
	scratch = malloc(V);
	for (i = 0; i < N_MATRIX; i++) {
		cJSON *schema;
		struct engy_cons *c = compile_case(&matrix[i], &schema);
		unsigned seed, finished = 0;

		for (seed = 1; seed <= SEEDS; seed++) {
			struct q3_seq *sq = engy_q3_seq_new(m, 1024);
			struct engy_cons_state *st = engy_cons_state_new(c);
			struct q3_sampling sp = { 1.0, 1.0, 0 };
			struct q3_rng rng;
			struct q3_row row;
			char out[8192];
			size_t out_len = 0, k, left;
			bool eos = false;

			engy_q3_rng_seed(&rng, seed * 1000 + i);
			for (k = 0; k < n_prompt; k++) {
				row = (struct q3_row){ sq, prompt[k] };
				ck_assert_int_eq(
					engy_q3_forward(m, &row, 1, hid), 0);
			}
			for (k = 0; k < MAX_OUT; k++) {
				uint32_t t;
				const uint8_t *p;
				size_t n, e;

				engy_q3_logits(m, hid, 1, logits);
				left = engy_cons_mask_logits(
					st, v, logits, cfg->eos, cfg->n_eos,
					(uint32_t)(MAX_OUT - k), scratch);
				ck_assert_uint_gt(left, 0);
				t = engy_q3_sample(smp, logits, &sp, &rng,
						   NULL);
				for (e = 0; e < cfg->n_eos; e++)
					eos |= t == cfg->eos[e];
				if (eos) {
					ck_assert(engy_cons_done(st));
					break;
				}
				ck_assert_int_eq(engy_cons_feed_id(st, v, t),
						 0);
				ck_assert_int_eq(engy_tokenizer_token_bytes(
							 tok, t, &p, &n),
						 0);
				ck_assert_uint_lt(out_len + n, sizeof(out));
				memcpy(out + out_len, p, n);
				out_len += n;
				row = (struct q3_row){ sq, t };
				ck_assert_int_eq(
					engy_q3_forward(m, &row, 1, hid), 0);
			}
			out[out_len] = 0;
			if (eos) {
				const char *body = out;
				size_t pl = matrix[i].prefix
						    ? strlen(matrix[i].prefix)
						    : 0,
				       sl = matrix[i].suffix
						    ? strlen(matrix[i].suffix)
						    : 0;
				cJSON *val;

				ck_assert_uint_ge(out_len, pl + sl);
				ck_assert(!pl ||
					  !memcmp(out, matrix[i].prefix, pl));
				ck_assert(!sl || !memcmp(out + out_len - sl,
							 matrix[i].suffix, sl));
				out[out_len - sl] = 0;
				body = out + pl;
				val = cJSON_Parse(body);
				ck_assert_msg(val, "case %zu seed %u: not JSON",
					      i, seed);
				ck_assert_msg(
					schema ? valid(schema, schema, val)
					       : cJSON_IsObject(val),
					"case %zu seed %u: not valid", i, seed);
				cJSON_Delete(val);
				finished++;
			}
			engy_cons_state_free(st);
			engy_q3_seq_free(sq);
		}
		/* the budget closes every output before max_tokens */
		ck_assert_msg(finished == SEEDS, "case %zu: %u of %d finished",
			      i, finished, SEEDS);
		finished_total += finished;
		engy_cons_free(c);
		cJSON_Delete(schema);
	}
	printf("constrain: %u of %zu outputs finished, all valid\n",
	       finished_total, (size_t)N_MATRIX * SEEDS);
	engy_q3_sampler_free(smp);
	free(hid);
	free(logits);
	free(scratch);
	free(prompt);
	engy_cons_vocab_free(v);
	engy_q3_model_free(m);
	engy_tokenizer_free(tok);
	rm_model(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("constrain");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_matrix_texts);
	tcase_add_test(tc, test_string_lengths);
	tcase_add_test(tc, test_feed_state);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_mask_vocab);
	tcase_add_test(tc, test_budget_walk);
	tcase_add_test(tc, test_model_matrix);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
