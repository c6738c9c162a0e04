// SPDX-License-Identifier: MIT
/*
 * What both buyer APIs share: the request's life (free, the model's
 * limits), the miner's output, ids, /v1/models, and small helpers.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "buyerapi_int.h"
#include "json_lazy.h"
#include "jsonget.h"
#include "jsonword.h"
#include "minerproto.h"

int engy_api_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

const cJSON *engy_api_get(const cJSON *obj, const char *key)
{
	const cJSON *j = engy_json_get(obj, key);

	return cJSON_IsNull(j) ? NULL : j;
}

bool engy_api_int(const cJSON *j, double lo, double hi)
{
	double d;

	if (!cJSON_IsNumber(j))
		return false;
	d = j->valuedouble;
	return d >= lo && d <= hi && d == (double)(long long)d;
}

const char *engy_api_ident(const char *s)
{
	size_t n;

	for (n = 0; s[n]; n++)
		if (!((s[n] >= 'a' && s[n] <= 'z') ||
		      (s[n] >= '0' && s[n] <= '9') || s[n] == '_'))
			return "unknown";
	return n && n <= 32 ? s : "unknown";
}

bool engy_api_tool_name_ok(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++) {
		char c = s[n];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		      c == '.' || c == ':'))
			return false;
	}
	return n >= 1 && n <= 64;
}

uint64_t engy_api_fnv(uint64_t h, const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

bool engy_api_has_tool(const cJSON *tools, const char *name)
{
	const cJSON *t, *n;

	cJSON_ArrayForEach(t, tools)
	{
		n = engy_json_get(engy_json_get(t, "function"), "name");
		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
			return true;
	}
	return false;
}

/* Whether @s[0..@n) is well-formed UTF-8 (no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
static bool utf8_ok(const unsigned char *s, size_t n)
{
	size_t i = 0, k, j;
	unsigned char c;

	while (i < n) {
		c = s[i];
		if (c < 0x80) {
			i++;
			/* ASCII, most bodies all of it: a word at a time */
			while (n - i >= 8 &&
			       !(engy_word_load(s + i) & ENGY_WORD_HIGHS))
				i += 8;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			k = 1;
		else if (c >= 0xe0 && c <= 0xef)
			k = 2;
		else if (c >= 0xf0 && c <= 0xf4)
			k = 3;
		else
			return false;
		if (n - i <= k)
			return false;
		for (j = 1; j <= k; j++)
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
		if ((c == 0xe0 && s[i + 1] < 0xa0) ||
		    (c == 0xed && s[i + 1] > 0x9f) ||
		    (c == 0xf0 && s[i + 1] < 0x90) ||
		    (c == 0xf4 && s[i + 1] > 0x8f))
			return false;
		i += k + 1;
	}
	return true;
}

/* What cJSON lets through and RFC 8259 does not: a control character
 * (raw, or a \u0000 that would cut the string short) inside a string, one
 * other than whitespace outside.  NULL when there is none. */
static const char *json_bytes_bad(const unsigned char *s, size_t n)
{
	bool in_str = false;
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (in_str) {
			/* a string's plain bytes, a word at a time */
			while (n - i >= 8 &&
			       !engy_word_json_special(engy_word_load(s + i)))
				i += 8;
			if (i >= n)
				break;
			c = s[i];
			if (c == '\\') {
				if (n - i > 5 && s[i + 1] == 'u' &&
				    !memcmp(s + i + 2, "0000", 4))
					return "a NUL (\\u0000) in a string";
				i++;
			} else if (c == '"') {
				in_str = false;
			} else if (c < 0x20) {
				return "a raw control character in a string";
			}
		} else if (c == '"') {
			in_str = true;
		} else if (c < 0x20 && c != ' ' && c != '\t' && c != '\n' &&
			   c != '\r') {
			return "a control character outside a string";
		}
	}
	return NULL;
}

int engy_api_parse_root(const char *json, size_t len,
			const struct engy_api_limits *lim, cJSON **root,
			char *err, size_t errlen)
{
	const char *bad, *end = NULL;

	*root = NULL;
	if (lim && lim->max_body_bytes && len > lim->max_body_bytes)
		return engy_api_fail(err, errlen, -E2BIG,
				     "request body: %zu bytes is above the "
				     "limit of %zu",
				     len, lim->max_body_bytes);
	if (!json || !len)
		return engy_api_fail(err, errlen, -EINVAL,
				     "request body: empty");
	if (!utf8_ok((const unsigned char *)json, len))
		return engy_api_fail(err, errlen, -EINVAL,
				     "request body: not valid UTF-8");
	if ((bad = json_bytes_bad((const unsigned char *)json, len)))
		return engy_api_fail(err, errlen, -EINVAL,
				     "request body: not valid JSON: %s", bad);
	/* the one-pass reader first; what it does not take, cJSON reads */
	*root = engy_json_parse(json, len, &end);
	if (!*root)
		*root = cJSON_ParseWithLengthOpts(json, len, &end, false);
	if (!*root)
		return engy_api_fail(err, errlen, -EINVAL,
				     "request body: not valid JSON");
	while (end && end < json + len &&
	       (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
		end++;
	if (!end || end != json + len) {
		cJSON_Delete(*root);
		*root = NULL;
		return engy_api_fail(err, errlen, -EINVAL,
				     "request body: not valid JSON: text after "
				     "the value");
	}
	if (!cJSON_IsObject(*root)) {
		cJSON_Delete(*root);
		*root = NULL;
		return engy_api_fail(err, errlen, -EINVAL,
				     "request body: expected a JSON object");
	}
	return 0;
}

bool engy_api_args_ok(const char *s)
{
	cJSON *j;
	bool ok;

	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	if (!*s)
		return true;
	j = cJSON_ParseWithOpts(s, NULL, true);
	ok = cJSON_IsObject(j);
	cJSON_Delete(j);
	return ok;
}

cJSON *engy_api_args_object(const char *args)
{
	const char *s = args;
	cJSON *j;

	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	if (!*s)
		return cJSON_CreateObject();
	j = cJSON_ParseWithOpts(s, NULL, true);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

int engy_api_copy_stop(const cJSON *stop, const char *field, cJSON *body,
		       char *err, size_t errlen)
{
	const cJSON *it;
	cJSON *arr;

	if (!stop)
		return 0;
	if (cJSON_IsString(stop)) {
		if (!cJSON_AddStringToObject(body, "stop", stop->valuestring))
			return -ENOMEM;
		return 0;
	}
	if (!cJSON_IsArray(stop))
		return engy_api_fail(err, errlen, -EINVAL,
				     "%s: expected a string or an array of "
				     "strings",
				     field);
	if (cJSON_GetArraySize(stop) > ENGY_API_MAX_STOP)
		return engy_api_fail(err, errlen, -EINVAL,
				     "%s: at most %d sequences are served",
				     field, ENGY_API_MAX_STOP);
	cJSON_ArrayForEach(it, stop)
	{
		if (!cJSON_IsString(it))
			return engy_api_fail(err, errlen, -EINVAL,
					     "%s: expected an array of strings",
					     field);
		if (!it->valuestring[0])
			return engy_api_fail(err, errlen, -EINVAL,
					     "%s: empty sequence", field);
	}
	if (!cJSON_GetArraySize(stop))
		return 0;
	arr = cJSON_Duplicate(stop, true);
	if (!arr || !cJSON_AddItemToObject(body, "stop", arr)) {
		cJSON_Delete(arr);
		return -ENOMEM;
	}
	return 0;
}

int engy_api_set_thinking(cJSON *body, int think, int preserve)
{
	cJSON *kw;

	if (think < 0 && preserve < 0)
		return 0;
	kw = cJSON_AddObjectToObject(body, "chat_template_kwargs");
	if (!kw)
		return -ENOMEM;
	if (think >= 0 && !cJSON_AddBoolToObject(kw, "enable_thinking", think))
		return -ENOMEM;
	if (preserve >= 0 &&
	    !cJSON_AddBoolToObject(kw, "preserve_thinking", preserve))
		return -ENOMEM;
	return 0;
}

int engy_api_check_turns(const cJSON *msgs, char *err, size_t errlen)
{
	const cJSON *m, *role;
	bool user = false;
	size_t i = 0;

	cJSON_ArrayForEach(m, msgs)
	{
		role = engy_json_get(m, "role");
		if (strcmp(role->valuestring, "system") == 0 && i > 0)
			return engy_api_fail(err, errlen, -EINVAL,
					     "messages[%zu]: a system message "
					     "must come first",
					     i);
		user |= strcmp(role->valuestring, "user") == 0;
		i++;
	}
	if (!user)
		return engy_api_fail(err, errlen, -EINVAL,
				     "messages: no user query found");
	return 0;
}

void engy_api_req_free(struct engy_api_req *req)
{
	free(req->model);
	cJSON_Delete(req->body);
	memset(req, 0, sizeof(*req));
}

int engy_api_req_apply(struct engy_api_req *req, const struct engy_api_model *m,
		       char *err, size_t errlen)
{
	uint64_t cap = m->max_output_tokens, def = m->default_max_tokens;
	cJSON *n;

	if (!req->body)
		return -EINVAL;
	if (!def || (cap && def > cap))
		def = cap;
	if (req->has_max_tokens) {
		if (cap && req->max_tokens > cap)
			return engy_api_fail(
				err, errlen, -EINVAL,
				"%s: %llu is above this model's "
				"limit of %llu output tokens",
				req->max_tokens_field,
				(unsigned long long)req->max_tokens,
				(unsigned long long)cap);
	} else if (def) {
		req->max_tokens = def;
	}
	if (!req->max_tokens)
		return 0;
	n = cJSON_CreateNumber((double)req->max_tokens);
	if (!n)
		return -ENOMEM;
	cJSON_DeleteItemFromObjectCaseSensitive(req->body, "max_tokens");
	cJSON_AddItemToObject(req->body, "max_tokens", n);
	return 0;
}

int engy_api_status(int rc)
{
	switch (rc) {
	case 0:
		return 200;
	case -EINVAL:
		return 400;
	case -EACCES:
		return 401;
	case -E2BIG:
		return 413;
	case -ENOENT:
		return 404;
	case -EPROTO:
		return 502;
	}
	return 500;
}

static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

int engy_api_key(const char *authorization, const char *x_api_key,
		 const char **key, size_t *len, char *err, size_t errlen)
{
	const char *k = NULL;
	size_t n;

	*key = NULL;
	*len = 0;
	if (authorization && *skip_ws(authorization)) {
		k = skip_ws(authorization);
		if (strncasecmp(k, "Bearer", 6) != 0 ||
		    (k[6] != ' ' && k[6] != '\t'))
			return engy_api_fail(err, errlen, -EACCES,
					     "Authorization: expected "
					     "\"Bearer <key>\"");
		k = skip_ws(k + 6);
	} else if (x_api_key) {
		k = skip_ws(x_api_key);
	}
	n = k ? strlen(k) : 0;
	while (n && (k[n - 1] == ' ' || k[n - 1] == '\t'))
		n--;
	if (!n)
		return engy_api_fail(err, errlen, -EACCES,
				     "no API key: send \"Authorization: Bearer "
				     "<key>\" or \"x-api-key: <key>\"");
	*key = k;
	*len = n;
	return 0;
}

void engy_api_new_id(char *out, size_t outlen, const char *prefix)
{
	char id[ENGY_API_MAX_NAME + 25];
	size_t n = strlen(prefix);

	if (!outlen)
		return;
	if (n > ENGY_API_MAX_NAME)
		n = ENGY_API_MAX_NAME;
	memcpy(id, prefix, n);
	engy_hex_id(id + n, 12); /* 24 digits and a NUL */
	n += 24;
	if (n >= outlen)
		n = outlen - 1; /* cut as snprintf would */
	memcpy(out, id, n);
	out[n] = '\0';
}

/* ---- the miner's output ---- */

static const char *finish_name(const cJSON *fr)
{
	static const char *const known[] = { "stop", "length", "tool_calls",
					     "content_filter" };
	size_t i;

	if (!cJSON_IsString(fr))
		return "stop";
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(fr->valuestring, known[i]) == 0)
			return known[i];
	return "stop";
}

/* A logprob a buyer may see: a finite number <= 0. */
static bool logprob_ok(const cJSON *l)
{
	return cJSON_IsNumber(l) && l->valuedouble >= -1e300 &&
	       l->valuedouble <= 0;
}

/* An entry's top_logprobs: absent, or at most ENGY_API_TOP_LOGPROBS_MAX
 * {token, logprob[, id]} sorted by logprob descending. */
static bool top_ok(const cJSON *top)
{
	const cJSON *a, *id;
	double last = 0;
	int n = 0;

	if (!top)
		return true;
	if (!cJSON_IsArray(top))
		return false;
	cJSON_ArrayForEach(a, top)
	{
		const cJSON *l = engy_json_get(a, "logprob");

		if (++n > (int)ENGY_API_TOP_LOGPROBS_MAX ||
		    !cJSON_IsString(engy_json_get(a, "token")) ||
		    !logprob_ok(l) || (n > 1 && l->valuedouble > last))
			return false;
		id = engy_json_get(a, "id");
		if (id && !engy_api_int(id, 0, 4294967295.0))
			return false;
		last = l->valuedouble;
	}
	return true;
}

/* A miner's logprobs.content, when every entry has a string token and a
 * finite logprob <= 0, and well-formed top_logprobs (bytes, when given,
 * are rendered only if all are bytes). */
static const cJSON *logprobs_ok(const cJSON *content)
{
	const cJSON *e, *t, *l;

	if (!cJSON_IsArray(content))
		return NULL;
	cJSON_ArrayForEach(e, content)
	{
		t = engy_json_get(e, "token");
		l = engy_json_get(e, "logprob");
		if (!cJSON_IsString(t) || !logprob_ok(l) ||
		    !top_ok(engy_json_get(e, "top_logprobs")))
			return NULL;
	}
	return content;
}

int engy_api_logprobs_name(cJSON *content,
			   int (*decode)(void *arg, uint32_t id, char **text,
					 size_t *len),
			   void *arg)
{
	cJSON *e, *a, *id, *b;
	char *t;
	size_t len, k;
	int rc;

	cJSON_ArrayForEach(e, content)
	{
		cJSON_ArrayForEach(a, engy_json_get(e, "top_logprobs"))
		{
			id = engy_json_get(a, "id");
			if (!engy_api_int(id, 0, 4294967295.0))
				return -EINVAL;
			t = NULL;
			len = 0;
			rc = decode(arg, (uint32_t)id->valuedouble, &t, &len);
			if (rc < 0) {
				free(t);
				return rc;
			}
			b = cJSON_CreateArray();
			for (k = 0; b && k < len; k++)
				if (!cJSON_AddItemToArray(
					    b, cJSON_CreateNumber(
						       (unsigned char)t[k]))) {
					cJSON_Delete(b);
					b = NULL;
				}
			/* the text as JSON can hold (the bytes are exact) */
			rc = b && cJSON_ReplaceItemInObjectCaseSensitive(
					  a, "token",
					  cJSON_CreateString(t ? t : ""))
				     ? 0
				     : -ENOMEM;
			free(t);
			if (!rc && !engy_json_get(a, "bytes"))
				rc = cJSON_AddItemToObject(a, "bytes", b)
					     ? 0
					     : -ENOMEM;
			else if (!rc)
				rc = cJSON_ReplaceItemInObjectCaseSensitive(
					     a, "bytes", b)
					     ? 0
					     : -ENOMEM;
			else
				cJSON_Delete(b);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static uint64_t count(const cJSON *obj, const char *key)
{
	const cJSON *j = engy_json_get(obj, key);

	if (!engy_api_int(j, 0, 9007199254740991.0))
		return 0;
	return (uint64_t)j->valuedouble;
}

static int take_call(const cJSON *call, size_t i, struct engy_api_call *c,
		     char *err, size_t errlen)
{
	const cJSON *fn, *id, *name, *args;
	char fresh[40];

	fn = engy_json_get(call, "function");
	if (!cJSON_IsObject(fn))
		fn = call;
	name = engy_json_get(fn, "name");
	args = engy_json_get(fn, "arguments");
	id = engy_json_get(call, "id");
	if (!cJSON_IsString(name) || !name->valuestring[0])
		return engy_api_fail(err, errlen, -EPROTO,
				     "miner output: tool_calls[%zu]: no "
				     "function name",
				     i);
	if (cJSON_IsString(args)) {
		if (!engy_api_args_ok(args->valuestring))
			return engy_api_fail(err, errlen, -EPROTO,
					     "miner output: tool_calls[%zu]: "
					     "arguments are not a JSON object",
					     i);
		c->arguments = strdup(args->valuestring);
	} else if (cJSON_IsObject(args)) {
		c->arguments = cJSON_PrintUnformatted(args);
	} else if (!args || cJSON_IsNull(args)) {
		c->arguments = strdup("{}");
	} else {
		return engy_api_fail(err, errlen, -EPROTO,
				     "miner output: tool_calls[%zu]: "
				     "arguments are not a JSON object",
				     i);
	}
	if (cJSON_IsString(id) && id->valuestring[0] &&
	    strlen(id->valuestring) < ENGY_API_MAX_NAME) {
		c->id = strdup(id->valuestring);
	} else {
		engy_api_new_id(fresh, sizeof(fresh), "call_");
		c->id = strdup(fresh);
	}
	c->name = strdup(name->valuestring);
	if (!c->id || !c->name || !c->arguments)
		return -ENOMEM;
	return 0;
}

int engy_api_result_parse(const cJSON *output, struct engy_api_result *r,
			  char *err, size_t errlen)
{
	const cJSON *ch, *msg, *j, *calls, *usage, *det, *call;
	size_t i = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	r->content = "";
	r->finish_reason = "stop";
	ch = cJSON_GetArrayItem(engy_json_get(output, "choices"), 0);
	if (!cJSON_IsObject(ch))
		return engy_api_fail(err, errlen, -EPROTO,
				     "miner output: no choices[0]");
	msg = engy_json_get(ch, "message");
	if (!cJSON_IsObject(msg))
		return engy_api_fail(err, errlen, -EPROTO,
				     "miner output: choices[0].message: "
				     "expected an object");
	r->finish_reason = finish_name(engy_json_get(ch, "finish_reason"));
	j = engy_json_get(ch, "matched_stop");
	if (cJSON_IsString(j))
		r->matched_stop = j->valuestring;
	r->logprobs = logprobs_ok(
		engy_json_get(engy_json_get(ch, "logprobs"), "content"));
	j = engy_json_get(msg, "content");
	if (cJSON_IsString(j))
		r->content = j->valuestring;
	else if (j && !cJSON_IsNull(j))
		return engy_api_fail(err, errlen, -EPROTO,
				     "miner output: message.content: expected "
				     "a string");
	r->content_len = strlen(r->content);
	j = engy_json_get(msg, "reasoning_content");
	if (!cJSON_IsString(j))
		j = engy_json_get(msg, "reasoning");
	if (cJSON_IsString(j)) {
		r->reasoning = j->valuestring;
		r->reasoning_len = strlen(j->valuestring);
	}
	calls = engy_json_get(msg, "tool_calls");
	if (calls && !cJSON_IsNull(calls) && !cJSON_IsArray(calls))
		return engy_api_fail(err, errlen, -EPROTO,
				     "miner output: message.tool_calls: "
				     "expected an array");
	if (cJSON_GetArraySize(calls) > 0) {
		r->calls = calloc((size_t)cJSON_GetArraySize(calls),
				  sizeof(*r->calls));
		if (!r->calls)
			return -ENOMEM;
		cJSON_ArrayForEach(call, calls)
		{
			r->n_calls = i + 1;
			rc = take_call(call, i, &r->calls[i], err, errlen);
			if (rc) {
				engy_api_result_free(r);
				return rc;
			}
			i++;
		}
	}
	/* tool_calls only when calls came back and the model stopped on its
	 * own (specs/protocol.md §5); a cut by max_tokens stays "length". */
	if (r->n_calls && strcmp(r->finish_reason, "stop") == 0)
		r->finish_reason = "tool_calls";
	else if (!r->n_calls && strcmp(r->finish_reason, "tool_calls") == 0)
		r->finish_reason = "stop";
	usage = engy_json_get(output, "usage");
	r->prompt_tokens = count(usage, "prompt_tokens");
	r->completion_tokens = count(usage, "completion_tokens");
	det = engy_json_get(usage, "prompt_tokens_details");
	r->cached_tokens = count(det, "cached_tokens");
	if (r->cached_tokens > r->prompt_tokens)
		r->cached_tokens = r->prompt_tokens;
	return 0;
}

void engy_api_result_free(struct engy_api_result *r)
{
	size_t i;

	for (i = 0; i < r->n_calls; i++) {
		free(r->calls[i].id);
		free(r->calls[i].name);
		free(r->calls[i].arguments);
	}
	free(r->calls);
	r->calls = NULL;
	r->n_calls = 0;
}

/* ---- /v1/models ---- */

static void model_obj(struct engy_sse_out *o,
		      const struct engy_api_model_info *m)
{
	time_t t = (time_t)m->created;
	struct tm tm;
	char when[32] = "1970-01-01T00:00:00Z";

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	engy_sse_out_adds(o, "{\"id\":");
	engy_sse_out_jstrz(o, m->id);
	engy_sse_out_addf(o,
			  ",\"object\":\"model\",\"type\":\"model\","
			  "\"created\":%lld,\"created_at\":\"%s\","
			  "\"owned_by\":",
			  (long long)m->created, when);
	engy_sse_out_jstrz(o, m->owned_by ? m->owned_by : "engy");
	engy_sse_out_adds(o, ",\"display_name\":");
	engy_sse_out_jstrz(o, m->display_name ? m->display_name : m->id);
	if (m->context_length)
		engy_sse_out_addf(o, ",\"context_length\":%llu",
				  (unsigned long long)m->context_length);
	if (m->max_output_tokens)
		engy_sse_out_addf(o, ",\"max_output_tokens\":%llu",
				  (unsigned long long)m->max_output_tokens);
	engy_sse_out_add(o, "}", 1);
}

int engy_api_models_json(struct engy_sse_out *o,
			 const struct engy_api_model_info *m, size_t n)
{
	size_t i;

	engy_sse_out_adds(o, "{\"object\":\"list\",\"data\":[");
	for (i = 0; i < n; i++) {
		if (i)
			engy_sse_out_add(o, ",", 1);
		model_obj(o, &m[i]);
	}
	engy_sse_out_adds(o, "],\"has_more\":false,\"first_id\":");
	engy_sse_out_jstrz(o, n ? m[0].id : NULL);
	engy_sse_out_adds(o, ",\"last_id\":");
	engy_sse_out_jstrz(o, n ? m[n - 1].id : NULL);
	return engy_sse_out_add(o, "}", 1);
}

int engy_api_model_json(struct engy_sse_out *o,
			const struct engy_api_model_info *m)
{
	model_obj(o, m);
	return o->err;
}

int engy_api_take_model(const cJSON *in, struct engy_api_req *req, char *err,
			size_t errlen)
{
	const cJSON *j = engy_api_get(in, "model");

	if (!j)
		return engy_api_fail(err, errlen, -EINVAL, "model: missing");
	if (!cJSON_IsString(j) || !j->valuestring[0] ||
	    strlen(j->valuestring) > ENGY_API_MAX_NAME)
		return engy_api_fail(err, errlen, -EINVAL,
				     "model: expected a model name");
	req->model = strdup(j->valuestring);
	return req->model ? 0 : -ENOMEM;
}
