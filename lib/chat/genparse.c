/* SPDX-License-Identifier: MIT */
/*
 * Batch generation parser and the rules it shares with the streaming one
 * (chat_genstream.c).  specs/chat.md states the rules; in short: an output
 * that opens with <think> (or follows a prompt that opened it) is reasoning
 * up to </think>; a <tool_call> that really opens a call ends the text, and
 * every call after it is parsed, in the Qwen3-coder XML form or the hermes
 * JSON form.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "genparse.h"
#include "genparse_int.h"
#include "grow.h"
#include "jsonget.h"

void engy_gen_trim(const char **p, size_t *n)
{
	while (*n && engy_gen_ws(**p)) {
		(*p)++;
		(*n)--;
	}
	while (*n && engy_gen_ws((*p)[*n - 1]))
		(*n)--;
}

void engy_gen_value_strip(const char **p, size_t *n)
{
	if (*n && **p == '\n') {
		(*p)++;
		(*n)--;
	}
	if (*n && (*p)[*n - 1] == '\n')
		(*n)--;
}

int engy_gen_fname(const char *p, size_t n, bool final, size_t *gt)
{
	const char *s;
	size_t i, k;

	for (i = 0; i < n; i++) {
		if (p[i] == '<' || p[i] == '\n' || p[i] == '\0')
			return ENGY_GEN_FAIL;
		if (p[i] == '>')
			break;
	}
	if (i == n)
		return final ? ENGY_GEN_FAIL : ENGY_GEN_MORE;
	s = p;
	k = i;
	engy_gen_trim(&s, &k);
	if (!k)
		return ENGY_GEN_FAIL;
	*gt = i;
	return ENGY_GEN_XML;
}

static bool blank(const char *s)
{
	size_t n = strlen(s);

	engy_gen_trim(&s, &n);
	return n == 0;
}

/* A hermes block's JSON: {"name": …, "arguments": {…}} ("parameters" too). */
static int json_call(const char *p, size_t n, struct engy_gen_probe *pr)
{
	struct engy_chat_buf b = { 0 };
	const cJSON *name, *args;
	cJSON *j;
	int rc;

	engy_gen_trim(&p, &n);
	j = cJSON_ParseWithLength(p, n);
	if (!j)
		return ENGY_GEN_FAIL;
	name = engy_json_get(j, "name");
	args = engy_json_get(j, "arguments");
	if (!args)
		args = engy_json_get(j, "parameters");
	if (!cJSON_IsObject(j) || !cJSON_IsString(name) ||
	    !name->valuestring[0]) {
		cJSON_Delete(j);
		return ENGY_GEN_FAIL;
	}
	if (!args || cJSON_IsNull(args) ||
	    (cJSON_IsString(args) && blank(args->valuestring)))
		engy_chat_buf_adds(&b, "{}");
	else if (cJSON_IsString(args))
		engy_chat_buf_adds(&b, args->valuestring);
	else
		engy_chat_tojson(&b, args);
	pr->json_name = strdup(name->valuestring);
	cJSON_Delete(j);
	rc = engy_chat_buf_take(&b, &pr->json_args, NULL);
	if (rc || !pr->json_name) {
		free(pr->json_name);
		pr->json_name = NULL;
		return -ENOMEM;
	}
	return ENGY_GEN_JSON;
}

/*
 * The </tool_call> that ends a hermes block whose JSON starts at @p: the
 * first one outside the JSON's strings while its object is open (a string
 * may hold the marker: a constrained forced call can fill one with it),
 * then the first one at all.  NULL when there is none yet.
 */
static const char *json_block_end(const char *p, size_t n)
{
	size_t i, depth = 0;
	bool str = false, esc = false;

	for (i = 0; i < n; i++) {
		char c = p[i];

		if (str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				str = false;
			continue;
		}
		if (c == '"') {
			str = true;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (depth && !--depth)
				return engy_chat_find(p + i + 1, n - i - 1,
						      GEN_TC_END);
		} else if (c == '<' && n - i >= GEN_LEN(GEN_TC_END) &&
			   memcmp(p + i, GEN_TC_END, GEN_LEN(GEN_TC_END)) ==
				   0) {
			return p + i;
		}
	}
	return NULL;
}

int engy_gen_probe(const char *p, size_t n, bool final,
		   struct engy_gen_probe *pr)
{
	const char *e;
	size_t i = GEN_LEN(GEN_TC), gt, rest;
	int rc;

	while (i < n && engy_gen_ws(p[i]))
		i++;
	if (i == n)
		return final ? ENGY_GEN_FAIL : ENGY_GEN_MORE;
	rest = n - i;
	if (p[i] == '<') {
		if (rest < GEN_LEN(GEN_FN))
			return memcmp(p + i, GEN_FN, rest) || final
				       ? ENGY_GEN_FAIL
				       : ENGY_GEN_MORE;
		if (memcmp(p + i, GEN_FN, GEN_LEN(GEN_FN)))
			return ENGY_GEN_FAIL;
		i += GEN_LEN(GEN_FN);
		rc = engy_gen_fname(p + i, n - i, final, &gt);
		if (rc != ENGY_GEN_XML)
			return rc;
		pr->name = p + i;
		pr->name_len = gt;
		engy_gen_trim(&pr->name, &pr->name_len);
		pr->used = i + gt + 1;
		return ENGY_GEN_XML;
	}
	if (p[i] != '{')
		return ENGY_GEN_FAIL;
	e = json_block_end(p + i, rest);
	if (!e && !final)
		return ENGY_GEN_MORE;
	rc = json_call(p + i, e ? (size_t)(e - p - i) : rest, pr);
	if (rc == ENGY_GEN_JSON)
		pr->used = e ? (size_t)(e - p) + GEN_LEN(GEN_TC_END) : n;
	return rc;
}

const cJSON *engy_gen_tool_props(const cJSON *tools, const char *name, size_t n)
{
	const cJSON *t, *fn, *nm, *params;

	cJSON_ArrayForEach(t, tools)
	{
		fn = engy_json_get(t, "function");
		nm = engy_json_get(fn, "name");
		if (!cJSON_IsString(nm) || strlen(nm->valuestring) != n ||
		    memcmp(nm->valuestring, name, n))
			continue;
		params = engy_json_get(fn, "parameters");
		return engy_json_get(params, "properties");
	}
	return NULL;
}

static bool type_is(const char *t, const char *const *names, bool prefix)
{
	for (; *names; names++)
		if (prefix ? strncmp(t, *names, strlen(*names)) == 0
			   : strcmp(t, *names) == 0)
			return true;
	return false;
}

/* The schema type of a property: "type", or the first non-"null" entry of
 * a type list; "" when there is none. */
static const char *prop_type(const cJSON *props, const char *key, size_t klen)
{
	const cJSON *p, *t, *it;

	cJSON_ArrayForEach(p, props)
	{
		if (!p->string || strlen(p->string) != klen ||
		    memcmp(p->string, key, klen))
			continue;
		t = engy_json_get(p, "type");
		if (cJSON_IsString(t))
			return t->valuestring;
		cJSON_ArrayForEach(
			it,
			(cJSON_IsArray(t) ? t
					  : NULL)) if (cJSON_IsString(it) &&
						       strcmp(it->valuestring,
							      "null")) return it
			->valuestring;
		return "";
	}
	return "";
}

/* Python int(): optional sign, decimal digits; written without leading zeros.
 */
static bool put_int(struct engy_chat_buf *b, const char *s, size_t n)
{
	size_t i = 0, k;
	bool neg = false;

	if (i < n && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	if (i == n)
		return false;
	for (k = i; k < n; k++)
		if (!isdigit((unsigned char)s[k]))
			return false;
	while (i + 1 < n && s[i] == '0')
		i++;
	if (neg && !(n - i == 1 && s[i] == '0'))
		engy_chat_buf_add(b, "-", 1);
	engy_chat_buf_add(b, s + i, n - i);
	return true;
}

/* Python float(): decimal notation only (no hex, inf or nan). */
static bool put_float(struct engy_chat_buf *b, const char *s, size_t n)
{
	char tmp[128], *end;
	bool point = false;
	double d;
	size_t i;

	if (!n || n >= sizeof(tmp))
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] == '.' || s[i] == 'e' || s[i] == 'E')
			point = true;
		else if (!isdigit((unsigned char)s[i]) && s[i] != '+' &&
			 s[i] != '-')
			return false;
	}
	if (!point)
		return put_int(b, s, n);
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	d = strtod(tmp, &end);
	if (end != tmp + n || !isfinite(d))
		return false;
	engy_chat_tojson_float(b, d);
	return true;
}

static bool put_json(struct engy_chat_buf *b, const char *s, size_t n,
		     bool want_array)
{
	cJSON *j = cJSON_ParseWithLength(s, n);
	bool ok = j && (want_array ? cJSON_IsArray(j) : cJSON_IsObject(j));

	if (ok)
		engy_chat_tojson(b, j);
	cJSON_Delete(j);
	return ok;
}

void engy_gen_param_json(struct engy_chat_buf *b, const cJSON *props,
			 const char *key, size_t klen, const char *val,
			 size_t vlen)
{
	static const char *const ints[] = { "int",   "uint",	 "long",
					    "short", "unsigned", NULL };
	static const char *const nums[] = { "num", "float", "double", NULL };
	static const char *const bools[] = { "boolean", "bool", "binary",
					     NULL };
	static const char *const objs[] = { "object", "dict", NULL };
	static const char *const arrs[] = { "array", "arr", "list", NULL };
	const char *t = prop_type(props, key, klen), *s = val;
	size_t n = vlen;
	bool done = false;

	engy_chat_tojson_str(b, key, klen);
	engy_chat_buf_add(b, ": ", 2);
	if (!t[0] || strcmp(t, "string") == 0) {
		engy_chat_tojson_str(b, val, vlen);
		return;
	}
	engy_gen_trim(&s, &n);
	if (n == 4 && strncasecmp(s, "null", 4) == 0) {
		engy_chat_buf_adds(b, "null");
		return;
	}
	if (type_is(t, ints, true))
		done = put_int(b, s, n);
	else if (type_is(t, nums, true))
		done = put_float(b, s, n);
	else if (type_is(t, bools, false) && n == 4 &&
		 strncasecmp(s, "true", 4) == 0)
		done = (engy_chat_buf_adds(b, "true"), true);
	else if (type_is(t, bools, false) && n == 5 &&
		 strncasecmp(s, "false", 5) == 0)
		done = (engy_chat_buf_adds(b, "false"), true);
	else if (type_is(t, objs, true))
		done = put_json(b, s, n, false);
	else if (type_is(t, arrs, true))
		done = put_json(b, s, n, true);
	if (!done)
		engy_chat_tojson_str(b, val, vlen);
}

void engy_gen_call_id(const char *prefix, size_t index, char *out, size_t cap)
{
	unsigned char rnd[12];

	if (prefix) {
		snprintf(out, cap, "%s%zu", prefix, index);
		return;
	}
	if (sodium_init() < 0)
		abort();
	randombytes_buf(rnd, sizeof(rnd));
	snprintf(out, cap, "call_");
	if (cap > 5)
		sodium_bin2hex(out + 5, cap - 5, rnd, sizeof(rnd));
}

/* ---- batch parser ---- */

struct batch {
	const struct engy_genparse_opts *o;
	struct engy_gen_msg *m;
	size_t cap;
	/* The XML call being built. */
	struct engy_chat_buf args;
	const cJSON *props;
	char **keys;
	size_t nkeys;
};

static int add_call(struct batch *b, const char *name, size_t nlen, char *args)
{
	struct engy_gen_call *c;
	char id[64];

	if (!ENGY_GROW(b->m->calls, b->cap, b->m->n_calls + 1))
		return -ENOMEM;
	engy_gen_call_id(b->o->id_prefix, b->m->n_calls, id, sizeof(id));
	c = &b->m->calls[b->m->n_calls];
	c->id = strdup(id);
	c->name = strndup(name, nlen);
	c->arguments = args;
	if (!c->id || !c->name || !args) {
		free(c->id);
		free(c->name);
		free(args);
		return -ENOMEM;
	}
	b->m->n_calls++;
	return 0;
}

/* The earliest of @marks in [p, end), or NULL; *@which is its index.  The
 * search for later marks stops at the best one found so far. */
static const char *earliest(const char *p, const char *end,
			    const char *const *marks, int *which)
{
	const char *best = NULL, *f;
	int i;

	for (i = 0; marks[i]; i++) {
		f = engy_chat_find(p, (size_t)((best ? best : end) - p),
				   marks[i]);
		if (f) {
			best = f;
			*which = i;
		}
	}
	return best;
}

static int xml_close(struct batch *b, const char *name, size_t nlen)
{
	char *args;
	size_t i;
	int rc;

	engy_chat_buf_add(&b->args, b->nkeys ? "}" : "{}", b->nkeys ? 1 : 2);
	for (i = 0; i < b->nkeys; i++)
		free(b->keys[i]);
	b->nkeys = 0;
	rc = engy_chat_buf_take(&b->args, &args, NULL);
	if (rc)
		return rc;
	return add_call(b, name, nlen, args);
}

/* One <parameter=KEY>VALUE; the first of a key wins. */
static int xml_param(struct batch *b, const char *key, size_t klen,
		     const char *val, size_t vlen)
{
	char **keys;
	size_t i;

	engy_gen_trim(&key, &klen);
	for (i = 0; i < b->nkeys; i++)
		if (strlen(b->keys[i]) == klen &&
		    memcmp(b->keys[i], key, klen) == 0)
			return 0;
	keys = realloc(b->keys, (b->nkeys + 1) * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	b->keys = keys;
	keys[b->nkeys] = strndup(key, klen);
	if (!keys[b->nkeys])
		return -ENOMEM;
	engy_chat_buf_add(&b->args, b->nkeys ? ", " : "{", b->nkeys ? 2 : 1);
	b->nkeys++;
	engy_gen_value_strip(&val, &vlen);
	engy_gen_param_json(&b->args, b->props, key, klen, val, vlen);
	return b->args.err;
}

/*
 * The body of a <function=NAME> (@p is just past its '>') up to the end of
 * its <tool_call> block; returns where the block ends, or NULL on ENOMEM.
 */
static const char *xml_block(struct batch *b, const char *p, const char *end,
			     const char *name, size_t nlen)
{
	static const char *const body[] = { GEN_PARAM, GEN_FN_END, GEN_TC_END,
					    NULL };
	static const char *const vend[] = { GEN_PARAM_END, GEN_PARAM,
					    GEN_FN_END, GEN_TC_END, NULL };
	static const char *const after[] = { GEN_FN, GEN_TC_END, NULL };
	const char *q, *k, *gt;
	size_t g;
	int w = 0;

	for (;;) {
		b->props = engy_gen_tool_props(b->o->tools, name, nlen);
		for (;;) {
			q = earliest(p, end, body, &w);
			if (!q || w != 0)
				break;
			k = q + GEN_LEN(GEN_PARAM);
			gt = memchr(k, '>', (size_t)(end - k));
			if (!gt) {
				q = NULL;
				break;
			}
			p = earliest(gt + 1, end, vend, &w);
			if (!p)
				p = end;
			if (xml_param(b, k, (size_t)(gt - k), gt + 1,
				      (size_t)(p - gt - 1)))
				return NULL;
			if (p < end && w == 0)
				p += GEN_LEN(GEN_PARAM_END);
		}
		if (xml_close(b, name, nlen))
			return NULL;
		if (!q)
			return end;
		if (w == 2)
			return q + GEN_LEN(GEN_TC_END);
		/* </function>: another <function= may follow in the same block.
		 */
		p = q + GEN_LEN(GEN_FN_END);
		for (;;) {
			q = earliest(p, end, after, &w);
			if (!q)
				return end;
			if (w == 1)
				return q + GEN_LEN(GEN_TC_END);
			p = q + GEN_LEN(GEN_FN);
			if (engy_gen_fname(p, (size_t)(end - p), true, &g) ==
			    ENGY_GEN_XML)
				break;
		}
		name = p;
		nlen = g;
		engy_gen_trim(&name, &nlen);
		p += g + 1;
	}
}

/* The first <tool_call> in [p, limit) that opens a call (it may run past
 * @limit), or NULL. */
static const char *first_call(const char *p, const char *limit, const char *end,
			      int *err)
{
	struct engy_gen_probe pr;
	const char *c;
	int rc;

	while ((c = engy_chat_find(p, (size_t)(limit - p), GEN_TC))) {
		memset(&pr, 0, sizeof(pr));
		rc = engy_gen_probe(c, (size_t)(end - c), true, &pr);
		free(pr.json_name);
		free(pr.json_args);
		if (rc < 0) {
			*err = rc;
			return NULL;
		}
		if (rc != ENGY_GEN_FAIL)
			return c;
		p = c + GEN_LEN(GEN_TC);
	}
	return NULL;
}

static int parse_calls(struct batch *b, const char *p, const char *end)
{
	struct engy_gen_probe pr;
	const char *c;
	int rc;

	while ((c = engy_chat_find(p, (size_t)(end - p), GEN_TC))) {
		memset(&pr, 0, sizeof(pr));
		rc = engy_gen_probe(c, (size_t)(end - c), true, &pr);
		if (rc < 0)
			return rc;
		if (rc == ENGY_GEN_FAIL) {
			p = c + GEN_LEN(GEN_TC);
		} else if (rc == ENGY_GEN_JSON) {
			rc = add_call(b, pr.json_name, strlen(pr.json_name),
				      pr.json_args);
			free(pr.json_name);
			if (rc)
				return rc;
			p = c + pr.used;
		} else {
			p = xml_block(b, c + pr.used, end, pr.name,
				      pr.name_len);
			if (!p)
				return -ENOMEM;
		}
	}
	return 0;
}

/* A copy of the trimmed text, NUL bytes inside and all. */
static int dup_trimmed(const char *p, size_t n, char **out, size_t *len)
{
	engy_gen_trim(&p, &n);
	*out = malloc(n + 1);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, p, n);
	(*out)[n] = '\0';
	*len = n;
	return 0;
}

int engy_genparse(const char *text, size_t len,
		  const struct engy_genparse_opts *o, struct engy_gen_msg *msg)
{
	static const struct engy_genparse_opts none = { 0 };
	const char *end = text + len, *p = text, *rs = NULL, *re = NULL, *e,
		   *c = NULL;
	struct batch b = { .o = o ? o : &none, .m = msg };
	bool reasoning = b.o->think_open;
	int rc = 0;
	size_t i;

	memset(msg, 0, sizeof(*msg));
	if (!text && len)
		return -EINVAL;
	if (!text)
		text = end = p = "";
	while (p < end && engy_gen_ws(*p))
		p++;
	if (engy_chat_has_prefix(p, (size_t)(end - p), GEN_THINK)) {
		reasoning = true;
		p += GEN_LEN(GEN_THINK);
	} else if (!reasoning) {
		p = text;
	}
	if (reasoning) {
		rs = p;
		e = engy_chat_find(p, (size_t)(end - p), GEN_THINK_END);
		if (b.o->tools)
			c = first_call(p, e ? e : end, end, &rc);
		if (rc)
			goto out;
		re = c ? c : e ? e : end;
		p = c ? c : e ? e + GEN_LEN(GEN_THINK_END) : end;
		rc = dup_trimmed(rs, (size_t)(re - rs), &msg->reasoning,
				 &msg->reasoning_len);
		if (rc)
			goto out;
	}
	if (!c && b.o->tools)
		c = first_call(p, end, end, &rc);
	if (rc)
		goto out;
	rc = dup_trimmed(p, (size_t)((c ? c : end) - p), &msg->content,
			 &msg->content_len);
	if (!rc && c)
		rc = parse_calls(&b, c, end);
out:
	for (i = 0; i < b.nkeys; i++)
		free(b.keys[i]);
	free(b.keys);
	engy_chat_buf_free(&b.args);
	if (rc)
		engy_gen_msg_free(msg);
	return rc;
}

void engy_gen_msg_free(struct engy_gen_msg *msg)
{
	size_t i;

	if (!msg)
		return;
	for (i = 0; i < msg->n_calls; i++) {
		free(msg->calls[i].id);
		free(msg->calls[i].name);
		free(msg->calls[i].arguments);
	}
	free(msg->calls);
	free(msg->reasoning);
	free(msg->content);
	memset(msg, 0, sizeof(*msg));
}

/* A string member; text holding NUL bytes (which cJSON strings cannot)
 * goes in as raw JSON with them escaped, so nothing is cut off. */
static bool add_text(cJSON *obj, const char *key, const char *p, size_t n)
{
	struct engy_chat_buf b = { 0 };
	cJSON *raw;

	if (!memchr(p, '\0', n))
		return cJSON_AddStringToObject(obj, key, p) != NULL;
	engy_chat_tojson_str(&b, p, n);
	raw = b.err ? NULL : cJSON_CreateRaw(b.p);
	engy_chat_buf_free(&b);
	return raw && cJSON_AddItemToObject(obj, key, raw);
}

cJSON *engy_gen_msg_json(const struct engy_gen_msg *msg)
{
	cJSON *m = cJSON_CreateObject(), *calls, *call, *fn;
	size_t i;

	if (!m || !cJSON_AddStringToObject(m, "role", "assistant") ||
	    !add_text(m, "content", msg->content ? msg->content : "",
		      msg->content_len))
		goto fail;
	if (msg->reasoning && msg->reasoning_len &&
	    !add_text(m, "reasoning_content", msg->reasoning,
		      msg->reasoning_len))
		goto fail;
	if (!msg->n_calls)
		return m;
	calls = cJSON_AddArrayToObject(m, "tool_calls");
	if (!calls)
		goto fail;
	for (i = 0; i < msg->n_calls; i++) {
		call = cJSON_CreateObject();
		if (!call)
			goto fail;
		cJSON_AddItemToArray(calls, call);
		fn = cJSON_CreateObject();
		if (!fn ||
		    !cJSON_AddStringToObject(call, "id", msg->calls[i].id) ||
		    !cJSON_AddStringToObject(call, "type", "function")) {
			cJSON_Delete(fn);
			goto fail;
		}
		cJSON_AddItemToObject(call, "function", fn);
		if (!cJSON_AddStringToObject(fn, "name", msg->calls[i].name) ||
		    !cJSON_AddStringToObject(fn, "arguments",
					     msg->calls[i].arguments))
			goto fail;
	}
	return m;
fail:
	cJSON_Delete(m);
	return NULL;
}

const char *engy_gen_finish_reason(bool length, size_t n_calls)
{
	if (length)
		return "length";
	return n_calls ? "tool_calls" : "stop";
}
