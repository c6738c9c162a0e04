/* SPDX-License-Identifier: MIT */
/*
 * JSON read strictly in one pass and built as cJSON's tree, and objects
 * parsed member by member with named members checked and kept as text
 * (json_lazy.h).
 */
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json_lazy.h"
#include "jsonword.h"

/* cJSON reads a number through a 64-byte buffer: a longer one fails. */
#define NUMBER_MAX 63

/* Integers of at most this many digits are exact doubles (below 2^53):
 * built directly, the same value strtod() gives. */
#define EXACT_DIGITS 15

/*
 * Byte classes: C_STR a byte a string holds as it is (not a quote, a
 * backslash or a control character), C_WS white space between tokens,
 * C_NUM a byte cJSON copies into a number before strtod() (a number
 * followed by one is read otherwise there), C_DIG a digit.
 */
enum { C_STR = 1, C_WS = 2, C_NUM = 4, C_DIG = 8 };

static const unsigned char cls[256] = {
	['\t'] = C_WS,
	['\n'] = C_WS,
	['\r'] = C_WS,
	[' '] = C_WS | C_STR,
	['!'] = C_STR,
	['#' ... '*'] = C_STR,
	['+'] = C_STR | C_NUM,
	[','] = C_STR,
	['-' ... '.'] = C_STR | C_NUM,
	['/'] = C_STR,
	['0' ... '9'] = C_STR | C_NUM | C_DIG,
	[':' ... 'D'] = C_STR,
	['E'] = C_STR | C_NUM,
	['F' ... '['] = C_STR,
	[']' ... 'd'] = C_STR,
	['e'] = C_STR | C_NUM,
	['f' ... 0xff] = C_STR,
};

static inline bool is(char c, unsigned class)
{
	return cls[(unsigned char)c] & class;
}

static inline const char *ws(const char *p, const char *end)
{
	while (p < end && is(*p, C_WS))
		p++;
	return p;
}

/* The first byte at or after @p that a string does not hold as it is. */
static inline const char *plain(const char *p, const char *end)
{
	uint64_t x, m;

	while (end - p >= 8) {
		x = engy_word_load(p);
		if ((m = engy_word_json_special(x))) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			return p + (__builtin_ctzll(m) >> 3);
#else
			break;
#endif
		}
		p += 8;
	}
	while (p < end && is(*p, C_STR))
		p++;
	return p;
}

static int hex4(const char *p, const char *end)
{
	int v = 0, i;

	if (end - p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/*
 * @p at a backslash in a string ending before @end: the byte after its
 * escape, with the code point it stands for in *@cp, or NULL for one
 * cJSON refuses or reads otherwise (a \u that is not 4 hex digits, a low
 * surrogate alone, a high one not followed by a \u low one).
 */
static const char *escape(const char *p, const char *end, uint32_t *cp)
{
	int u, l;

	if (end - p < 2)
		return NULL;
	switch (p[1]) {
	case '"':
	case '\\':
	case '/':
		*cp = (unsigned char)p[1];
		return p + 2;
	case 'b':
		*cp = '\b';
		return p + 2;
	case 'f':
		*cp = '\f';
		return p + 2;
	case 'n':
		*cp = '\n';
		return p + 2;
	case 'r':
		*cp = '\r';
		return p + 2;
	case 't':
		*cp = '\t';
		return p + 2;
	case 'u':
		break;
	default:
		return NULL;
	}
	u = hex4(p + 2, end);
	if (u < 0 || (u >= 0xDC00 && u <= 0xDFFF))
		return NULL;
	if (u < 0xD800 || u > 0xDBFF) {
		*cp = (uint32_t)u;
		return p + 6;
	}
	/* a high surrogate: a low one must follow */
	if (end - p < 12 || p[6] != '\\' || p[7] != 'u')
		return NULL;
	l = hex4(p + 8, end);
	if (l < 0xDC00 || l > 0xDFFF)
		return NULL;
	*cp = 0x10000 + (((uint32_t)(u & 0x3FF) << 10) | (uint32_t)(l & 0x3FF));
	return p + 12;
}

/* @p at the opening quote; the byte after the closing one, or NULL. */
static inline const char *skip_string(const char *p, const char *end)
{
	uint32_t cp;

	for (p++;;) {
		p = plain(p, end);
		if (p >= end)
			return NULL;
		if (*p == '"')
			return p + 1;
		if (*p != '\\' || !(p = escape(p, end, &cp)))
			return NULL;
	}
}

/* The first byte at or after @p that is not a digit, eight at a time as
 * plain() looks (a byte below '0' or above '9'). */
static inline const char *digits(const char *p, const char *end)
{
	const uint64_t ones = 0x0101010101010101ULL;
	const uint64_t highs = 0x8080808080808080ULL;
	uint64_t x, m;

	while (end - p >= 8) {
		memcpy(&x, p, sizeof(x));
		m = (((x - ones * '0') & ~x) | (x + ones * (127 - '9')) | x) &
		    highs;
		if (m) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			return p + (__builtin_ctzll(m) >> 3);
#else
			break;
#endif
		}
		p += 8;
	}
	while (p < end && is(*p, C_DIG))
		p++;
	return p;
}

/*
 * @p at a number's first byte: the byte after it as RFC 8259 has it, or
 * NULL; with *@dot its '.' (NULL for none) and *@whole false when it has
 * a fraction or an exponent.
 */
static inline const char *number_end(const char *p, const char *end,
				     const char **dot, bool *whole)
{
	*dot = NULL;
	*whole = true;
	if (p < end && *p == '-')
		p++;
	if (p >= end)
		return NULL;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		p = digits(p + 1, end);
	else
		return NULL;
	if (p < end && *p == '.') {
		*dot = p;
		*whole = false;
		if (++p >= end || !is(*p, C_DIG))
			return NULL;
		p = digits(p + 1, end);
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		*whole = false;
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || !is(*p, C_DIG))
			return NULL;
		p = digits(p + 1, end);
	}
	return p;
}

static inline const char *skip_number(const char *p, const char *end)
{
	const char *s = p, *dot;
	bool whole;

	p = number_end(p, end, &dot, &whole);
	return p && p - s <= NUMBER_MAX ? p : NULL;
}

static const char *word(const char *p, const char *end, const char *w, size_t n)
{
	return (size_t)(end - p) >= n && memcmp(p, w, n) == 0 ? p + n : NULL;
}

const char *engy_json_skip(const char *p, const char *end, unsigned max_depth)
{
	char close;

	if (p >= end)
		return NULL;
	switch (*p) {
	case '"':
		return skip_string(p, end);
	case 't':
		return word(p, end, "true", 4);
	case 'f':
		return word(p, end, "false", 5);
	case 'n':
		return word(p, end, "null", 4);
	case '{':
	case '[':
		break;
	default:
		return skip_number(p, end);
	}
	if (max_depth == 0)
		return NULL;
	close = *p == '{' ? '}' : ']';
	p = ws(p + 1, end);
	if (p < end && *p == close)
		return p + 1;
	for (;;) {
		if (close == '}') {
			if (p >= end || *p != '"' || !(p = skip_string(p, end)))
				return NULL;
			p = ws(p, end);
			if (p >= end || *p != ':')
				return NULL;
			p = ws(p + 1, end);
		}
		/* a scalar element here, not one call deeper */
		if (p >= end)
			return NULL;
		if (*p == '"')
			p = skip_string(p, end);
		else if (*p == '-' || is(*p, C_DIG))
			p = skip_number(p, end);
		else
			p = engy_json_skip(p, end, max_depth - 1);
		if (!p)
			return NULL;
		p = ws(p, end);
		if (p >= end)
			return NULL;
		if (*p == close)
			return p + 1;
		if (*p != ',')
			return NULL;
		p = ws(p + 1, end);
	}
}

/* ---- building cJSON's tree ------------------------------------------------ */

/* A node as cJSON makes one: all zero, freed by cJSON_Delete(). */
static cJSON *node(void)
{
	cJSON *it = cJSON_malloc(sizeof(*it));

	if (it)
		memset(it, 0, sizeof(*it));
	return it;
}

/* A new last child of @parent after @last (NULL: the first), linked as
 * cJSON links them: the first child's prev is the last one. */
static cJSON *append(cJSON *parent, cJSON *last)
{
	cJSON *c = node();

	if (!c)
		return NULL;
	if (last) {
		last->next = c;
		c->prev = last;
	} else {
		parent->child = c;
	}
	parent->child->prev = c;
	return c;
}

/* @p..@p+@n as a new NUL-terminated string, freed by cJSON_Delete(). */
static char *text(const char *p, size_t n)
{
	char *t = cJSON_malloc(n + 1);

	if (t) {
		memcpy(t, p, n);
		t[n] = '\0';
	}
	return t;
}

static char *utf8(char *w, uint32_t cp)
{
	if (cp < 0x80) {
		*w++ = (char)cp;
	} else if (cp < 0x800) {
		*w++ = (char)(0xC0 | cp >> 6);
		*w++ = (char)(0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		*w++ = (char)(0xE0 | cp >> 12);
		*w++ = (char)(0x80 | (cp >> 6 & 0x3F));
		*w++ = (char)(0x80 | (cp & 0x3F));
	} else {
		*w++ = (char)(0xF0 | cp >> 18);
		*w++ = (char)(0x80 | (cp >> 12 & 0x3F));
		*w++ = (char)(0x80 | (cp >> 6 & 0x3F));
		*w++ = (char)(0x80 | (cp & 0x3F));
	}
	return w;
}

/*
 * @p at the opening quote: the string unescaped to UTF-8 in a new *@out,
 * and the byte after the closing quote; NULL for what engy_json_skip()
 * refuses, or a \u0000 (cJSON's string would end there, the text not).
 */
static const char *build_string(const char *p, const char *end, char **out)
{
	const char *s = p + 1, *q, *r;
	uint32_t cp;
	char *o, *w;

	p = plain(s, end);
	if (p >= end)
		return NULL;
	if (*p == '"') {
		*out = text(s, (size_t)(p - s));
		return *out ? p + 1 : NULL;
	}
	/* Escapes: the closing quote first, a backslash taking the byte after
	 * it (where cJSON finds it), for the text unescaped is never longer
	 * than the text itself. */
	for (q = p; *q != '"';) {
		if (*q != '\\' || end - q < 2)
			return NULL;
		q = plain(q + 2, end);
		if (q >= end)
			return NULL;
	}
	if (!(o = cJSON_malloc((size_t)(q - s) + 1)))
		return NULL;
	memcpy(o, s, (size_t)(p - s));
	w = o + (p - s);
	while (p < q) {
		if (*p != '\\' || !(p = escape(p, q, &cp)) || !cp) {
			cJSON_free(o);
			return NULL;
		}
		w = utf8(w, cp);
		r = plain(p, q);
		memcpy(w, p, (size_t)(r - p));
		w += r - p;
		p = r;
	}
	*w = '\0';
	*out = o;
	return q + 1;
}

/*
 * A decimal without an exponent, digits @d..@p with its point at @dot,
 * of at most EXACT_DIGITS digits ("0.7", "12.25"): its value in *@n, the
 * one strtod() gives, as the integer of its digits divided by a power of
 * ten.  Both are exact doubles (below 2^53, 10^k for k <= 22), so the
 * quotient is the correctly rounded value, as strtod()'s is.  Only where
 * double arithmetic is done in double (FLT_EVAL_METHOD 0).
 */
static bool short_decimal(const char *d, const char *dot, const char *p,
			  double *n)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
	static const double tens[] = { 1e0,  1e1,  1e2,	 1e3, 1e4,  1e5,
				       1e6,  1e7,  1e8,	 1e9, 1e10, 1e11,
				       1e12, 1e13, 1e14, 1e15 };
	const char *q;
	uint64_t m = 0;

	if (!dot || p - d - 1 > EXACT_DIGITS)
		return false;
	for (q = d; q < p; q++) {
		if (q == dot)
			continue;
		if (*q < '0' || *q > '9')
			return false; /* an exponent: strtod() */
		m = m * 10 + (uint64_t)(*q - '0');
	}
	*n = (double)m / tens[p - dot - 1];
	return true;
#else
	(void)d;
	(void)dot;
	(void)p;
	(void)n;
	return false;
#endif
}

/*
 * @p at a number's first byte: the number in @it as cJSON has it (its
 * double as strtod() reads the text in this locale, its int that double
 * saturated to int's range), and the byte after it; NULL for what the
 * grammar refuses, for over NUMBER_MAX bytes, or for a number followed
 * by a byte cJSON would read as part of it.
 */
static const char *build_number(const char *p, const char *end, cJSON *it)
{
	const char *s = p, *d = p + (*p == '-'), *dot = NULL;
	char buf[NUMBER_MAX + 1], *e;
	bool whole = true;
	uint64_t v = 0;
	double n;

	/* An integer is read as it is scanned (unsigned: past 19 digits it
	 * wraps, but only up to EXACT_DIGITS are used); anything else, or a
	 * number followed by what cJSON would read on, goes by the grammar. */
	for (p = d; p < end && is(*p, C_DIG); p++)
		v = v * 10 + (uint64_t)(*p - '0');
	if ((p == d || (*d == '0' && p - d > 1) ||
	     (p < end && is(*p, C_NUM))) &&
	    (!(p = number_end(s, end, &dot, &whole)) ||
	     (p < end && is(*p, C_NUM))))
		return NULL;
	if (p - s > NUMBER_MAX)
		return NULL;
	if (whole && p - d <= EXACT_DIGITS) {
		n = (double)v;
		if (*s == '-')
			n = -n; /* -0 too */
	} else if (short_decimal(d, dot, p, &n)) {
		if (*s == '-')
			n = -n;
	} else {
		/* as cJSON: '.' as this locale's decimal point, for strtod() */
		memcpy(buf, s, (size_t)(p - s));
		buf[p - s] = '\0';
		if (dot)
			buf[dot - s] = *localeconv()->decimal_point;
		n = strtod(buf, &e);
		if (e != buf + (p - s))
			return NULL;
	}
	it->type = cJSON_Number;
	it->valuedouble = n;
	if (n >= INT_MAX)
		it->valueint = INT_MAX;
	else if (n <= (double)INT_MIN)
		it->valueint = INT_MIN;
	else
		it->valueint = (int)n;
	return p;
}

static const char *build(const char *p, const char *end, cJSON *it,
			 unsigned depth);

/*
 * @p at '{' or '[': the members (keys and values) or elements as @it's
 * children, linked as cJSON links them (next and prev, the first child's
 * prev the last child).  Whatever was built stays linked on failure, for
 * the caller's cJSON_Delete().
 */
static const char *build_container(const char *p, const char *end, cJSON *it,
				   unsigned depth)
{
	bool obj = *p == '{';
	char close = obj ? '}' : ']';
	cJSON *c, *last = NULL;

	if (depth == 0)
		return NULL;
	it->type = obj ? cJSON_Object : cJSON_Array;
	p = ws(p + 1, end);
	if (p < end && *p == close)
		return p + 1;
	for (;;) {
		if (!(c = last = append(it, last)))
			return NULL;
		if (obj) {
			if (p >= end || *p != '"' ||
			    !(p = build_string(p, end, &c->string)))
				return NULL;
			p = ws(p, end);
			if (p >= end || *p != ':')
				return NULL;
			p = ws(p + 1, end);
		}
		if (!(p = build(p, end, c, depth - 1)))
			return NULL;
		p = ws(p, end);
		if (p >= end)
			return NULL;
		if (*p == close)
			return p + 1;
		if (*p != ',')
			return NULL;
		p = ws(p + 1, end);
	}
}

/* @p at a value's first byte: the value in @it, and the byte after it. */
static const char *build(const char *p, const char *end, cJSON *it,
			 unsigned depth)
{
	if (p >= end)
		return NULL;
	switch (*p) {
	case '"':
		it->type = cJSON_String;
		return build_string(p, end, &it->valuestring);
	case 't':
		it->type = cJSON_True;
		it->valueint = 1;
		return word(p, end, "true", 4);
	case 'f':
		it->type = cJSON_False;
		return word(p, end, "false", 5);
	case 'n':
		it->type = cJSON_NULL;
		return word(p, end, "null", 4);
	case '{':
	case '[':
		return build_container(p, end, it, depth);
	default:
		return build_number(p, end, it);
	}
}

cJSON *engy_json_parse(const char *s, size_t len, const char **end)
{
	const char *p = s, *e = s + len;
	cJSON *it;

	if (!s || !len)
		return NULL;
	/* cJSON skips any byte up to a space before the value (a byte-order
	 * mark it skips too is no value here: not taken) */
	while (p < e && (unsigned char)*p <= ' ')
		p++;
	if (p >= e || !(it = node()))
		return NULL;
	if (!(p = build(p, e, it, ENGY_JSON_PARSE_DEPTH))) {
		cJSON_Delete(it);
		return NULL;
	}
	if (end)
		*end = p;
	return it;
}

static bool named(const char *k, const char *const *keys)
{
	for (; keys && *keys; keys++)
		if (strcmp(*keys, k) == 0)
			return true;
	return false;
}

cJSON *engy_json_parse_lazy(const char *s, size_t len,
			    const char *const *raw_keys)
{
	const char *p = s, *end = s + len, *v;
	cJSON *root, *item, *last = NULL;

	p = ws(p, end);
	if (p >= end || *p != '{' || !(root = node()))
		return NULL;
	root->type = cJSON_Object;
	p = ws(p + 1, end);
	if (p < end && *p == '}') {
		p++;
		goto done;
	}
	for (;;) {
		if (!(item = last = append(root, last)))
			goto fail;
		if (p >= end || *p != '"' ||
		    !(p = build_string(p, end, &item->string)))
			goto fail;
		p = ws(p, end);
		if (p >= end || *p != ':')
			goto fail;
		p = ws(p + 1, end);
		if (named(item->string, raw_keys)) {
			if (!(v = engy_json_skip(p, end,
						 ENGY_JSON_SKIP_DEPTH)) ||
			    !(item->valuestring = text(p, (size_t)(v - p))))
				goto fail;
			item->type = cJSON_Raw;
		} else if (!(v = build(p, end, item,
				       ENGY_JSON_PARSE_DEPTH - 1))) {
			goto fail; /* the root counts as one level */
		}
		p = ws(v, end);
		if (p < end && *p == ',') {
			p = ws(p + 1, end);
			continue;
		}
		if (p < end && *p == '}') {
			p++;
			break;
		}
		goto fail;
	}
done:
	if (ws(p, end) != end)
		goto fail; /* anything after the object: the whole parse says */
	return root;
fail:
	cJSON_Delete(root);
	return NULL;
}
