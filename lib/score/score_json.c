// SPDX-License-Identifier: MIT
/* The aggregates document's JSON reader (see score_json.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"
#include "score_json.h"

#define MAX_UINT 9007199254740991ULL /* 2^53 - 1 */

struct rd {
	const char *p;
	size_t len, at;
	int depth;
	char *why;
	size_t wl;
};

static int bad(struct rd *r, const char *what)
{
	if (r->why && r->wl)
		snprintf(r->why, r->wl, "byte %zu: %s", r->at, what);
	return -EINVAL;
}

static void skip_ws(struct rd *r)
{
	while (r->at < r->len && strchr(" \t\r\n", r->p[r->at]) && r->p[r->at])
		r->at++;
}

static int peek(struct rd *r)
{
	return r->at < r->len ? (unsigned char)r->p[r->at] : -1;
}

static int literal(struct rd *r, const char *word)
{
	size_t n = strlen(word);

	if (r->len - r->at < n || memcmp(r->p + r->at, word, n))
		return bad(r, "unexpected character");
	r->at += n;
	return 0;
}

static int escape(struct rd *r, char *c)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e;
	int i, v = 0, h;

	if (r->at >= r->len)
		return bad(r, "unterminated string");
	e = r->p[r->at] ? strchr(from, r->p[r->at]) : NULL;
	if (e) {
		*c = to[e - from];
		r->at++;
		return 0;
	}
	if (r->p[r->at] != 'u')
		return bad(r, "bad escape in a string");
	for (i = 1; i <= 4; i++) {
		h = r->at + i < r->len
			    ? engy_hexval((unsigned char)r->p[r->at + i])
			    : -1;
		if (h < 0)
			return bad(r, "bad \\u escape");
		v = v * 16 + h;
	}
	if (v == 0 || v > 0x7f)
		return bad(r, "\\u escape outside ASCII (or NUL)");
	*c = (char)v;
	r->at += 5;
	return 0;
}

static int string(struct rd *r, char **out, size_t *outlen)
{
	size_t start, cap, n = 0;
	char *s;
	int rc;

	r->at++; /* the opening quote */
	start = r->at;
	while (r->at < r->len && r->p[r->at] != '"')
		r->at += r->p[r->at] == '\\' ? 2 : 1;
	if (r->at >= r->len)
		return bad(r, "unterminated string");
	cap = r->at - start + 1; /* decoding never grows */
	r->at = start;
	s = malloc(cap);
	if (!s)
		return -ENOMEM;
	for (;;) {
		unsigned char c = (unsigned char)r->p[r->at];

		if (c == '"')
			break;
		if (c < 0x20 || c > 0x7e) {
			free(s);
			return bad(r, c < 0x20 ? "control character in a string"
					       : "non-ASCII byte in a string");
		}
		r->at++;
		if (c == '\\') {
			rc = escape(r, &s[n++]);
			if (rc) {
				free(s);
				return rc;
			}
			continue;
		}
		s[n++] = (char)c;
	}
	r->at++; /* the closing quote */
	s[n] = '\0';
	*out = s;
	*outlen = n;
	return 0;
}

static int digits(struct rd *r)
{
	size_t a = r->at;

	while (peek(r) >= '0' && peek(r) <= '9')
		r->at++;
	return r->at > a;
}

/* The JSON number grammar; a plain integer 0..2^53-1 sets is_uint. */
static int number(struct rd *r, struct sj *j)
{
	size_t a = r->at, i;
	bool plain = true;
	uint64_t v = 0;

	if (peek(r) == '-') {
		plain = false;
		r->at++;
	}
	if (peek(r) == '0')
		r->at++;
	else if (!digits(r))
		return bad(r, "bad number");
	if (peek(r) == '.') {
		plain = false;
		r->at++;
		if (!digits(r))
			return bad(r, "bad number");
	}
	if (peek(r) == 'e' || peek(r) == 'E') {
		plain = false;
		r->at++;
		if (peek(r) == '+' || peek(r) == '-')
			r->at++;
		if (!digits(r))
			return bad(r, "bad number");
	}
	j->type = SJ_NUM;
	for (i = a; plain && i < r->at; i++) {
		v = v * 10 + (uint64_t)(r->p[i] - '0');
		if (v > MAX_UINT)
			plain = false;
	}
	j->is_uint = plain;
	j->u = plain ? v : 0;
	return 0;
}

static int value(struct rd *r, struct sj *j);

static int grow(struct sj *j, size_t *cap, bool keys)
{
	size_t nc = *cap ? *cap * 2 : 4;
	struct sj *v;
	char **k;

	if (j->n < *cap)
		return 0;
	v = realloc(j->v, nc * sizeof(*v));
	if (!v)
		return -ENOMEM;
	j->v = v;
	if (keys) {
		k = realloc(j->k, nc * sizeof(*k));
		if (!k)
			return -ENOMEM;
		j->k = k;
	}
	*cap = nc;
	return 0;
}

static int array(struct rd *r, struct sj *j)
{
	size_t cap = 0;
	int rc;

	j->type = SJ_ARR;
	r->at++;
	skip_ws(r);
	if (peek(r) == ']') {
		r->at++;
		return 0;
	}
	for (;;) {
		rc = grow(j, &cap, false);
		if (rc)
			return rc;
		memset(&j->v[j->n], 0, sizeof(j->v[0]));
		rc = value(r, &j->v[j->n++]);
		if (rc)
			return rc;
		skip_ws(r);
		if (peek(r) == ']') {
			r->at++;
			return 0;
		}
		if (peek(r) != ',')
			return bad(r, "expected ',' or ']'");
		r->at++;
	}
}

static int object(struct rd *r, struct sj *j)
{
	size_t cap = 0, kl, i;
	char *k;
	int rc;

	j->type = SJ_OBJ;
	r->at++;
	skip_ws(r);
	if (peek(r) == '}') {
		r->at++;
		return 0;
	}
	for (;;) {
		skip_ws(r);
		if (peek(r) != '"')
			return bad(r, "expected a key");
		if (j->n == SJ_MAX_MEMBERS)
			return bad(r, "object with too many members");
		rc = grow(j, &cap, true);
		if (rc)
			return rc;
		rc = string(r, &k, &kl);
		if (rc)
			return rc;
		for (i = 0; i < j->n; i++)
			if (strcmp(j->k[i], k) == 0) {
				free(k);
				return bad(r, "duplicate key");
			}
		j->k[j->n] = k;
		memset(&j->v[j->n], 0, sizeof(j->v[0]));
		j->n++;
		skip_ws(r);
		if (peek(r) != ':')
			return bad(r, "expected ':'");
		r->at++;
		rc = value(r, &j->v[j->n - 1]);
		if (rc)
			return rc;
		skip_ws(r);
		if (peek(r) == '}') {
			r->at++;
			return 0;
		}
		if (peek(r) != ',')
			return bad(r, "expected ',' or '}'");
		r->at++;
	}
}

static int value(struct rd *r, struct sj *j)
{
	int c, rc;

	skip_ws(r);
	c = peek(r);
	if (c == '{' || c == '[') {
		if (++r->depth > SJ_MAX_DEPTH)
			return bad(r, "nested too deep");
		rc = c == '{' ? object(r, j) : array(r, j);
		r->depth--;
		return rc;
	}
	if (c == '"') {
		j->type = SJ_STR;
		return string(r, &j->s, &j->slen);
	}
	if (c == '-' || (c >= '0' && c <= '9'))
		return number(r, j);
	if (c == 't' || c == 'f') {
		j->type = SJ_BOOL;
		j->b = c == 't';
		return literal(r, c == 't' ? "true" : "false");
	}
	if (c == 'n') {
		j->type = SJ_NULL;
		return literal(r, "null");
	}
	return bad(r,
		   c < 0 ? "unexpected end of input" : "unexpected character");
}

static void sj_clear(struct sj *j)
{
	size_t i;

	for (i = 0; i < j->n; i++) {
		sj_clear(&j->v[i]);
		if (j->k)
			free(j->k[i]);
	}
	free(j->v);
	free(j->k);
	free(j->s);
}

void engy_sj_free(struct sj *j)
{
	if (!j)
		return;
	sj_clear(j);
	free(j);
}

int engy_sj_parse(const char *text, size_t len, struct sj **out, char *why,
		  size_t whylen)
{
	struct rd r = { text, len, 0, 0, why, whylen };
	struct sj *j = calloc(1, sizeof(*j));
	int rc;

	*out = NULL;
	if (!j)
		return -ENOMEM;
	rc = value(&r, j);
	if (!rc) {
		skip_ws(&r);
		if (r.at != len)
			rc = bad(&r, "trailing bytes after the document");
	}
	if (rc) {
		engy_sj_free(j);
		return rc;
	}
	*out = j;
	return 0;
}

const struct sj *engy_sj_get(const struct sj *obj, const char *key)
{
	size_t i;

	if (!obj || obj->type != SJ_OBJ)
		return NULL;
	for (i = 0; i < obj->n; i++)
		if (strcmp(obj->k[i], key) == 0)
			return &obj->v[i];
	return NULL;
}

const char *engy_sj_type_name(const struct sj *j)
{
	switch (j->type) {
	case SJ_NULL:
		return "null";
	case SJ_BOOL:
		return "a boolean";
	case SJ_NUM:
		return "a number";
	case SJ_STR:
		return "a string";
	case SJ_ARR:
		return "an array";
	default:
		return "an object";
	}
}
