/* SPDX-License-Identifier: MIT */
/*
 * A strict, integer-only JSON reader for the aggregates document: a tree
 * of values where numbers are kept as unsigned integers only when they are
 * written as one (no sign, fraction or exponent) and fit 2^53 - 1; any
 * other number is kept as "not an integer" for the caller to name.
 * Strings are ASCII.  Nothing here uses floating point.
 */
#ifndef ENGY_SCORE_JSON_H
#define ENGY_SCORE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SJ_MAX_DEPTH   16
#define SJ_MAX_MEMBERS 64 /* per object */

enum sj_type {
	SJ_NULL = 1,
	SJ_BOOL,
	SJ_NUM,
	SJ_STR,
	SJ_ARR,
	SJ_OBJ,
};

struct sj {
	int type;
	bool is_uint; /* SJ_NUM: an integer 0..2^53-1, in @u */
	bool b;	      /* SJ_BOOL */
	uint64_t u;
	char *s; /* SJ_STR: decoded, NUL-terminated */
	size_t slen;
	struct sj *v; /* SJ_ARR, SJ_OBJ: @n values */
	char **k;     /* SJ_OBJ: @n keys */
	size_t n;
};

/*
 * engy_sj_parse() - parse @len bytes holding one JSON value.  Returns 0 with
 * the tree in *@out (engy_sj_free()), -EINVAL with "byte N: what" in @why, or
 * -ENOMEM.
 */
int engy_sj_parse(const char *text, size_t len, struct sj **out, char *why,
		  size_t whylen);

void engy_sj_free(struct sj *j);

/* The member @key of an object, or NULL. */
const struct sj *engy_sj_get(const struct sj *obj, const char *key);

/* "null", "a boolean", "a number", "a string", "an array", "an object". */
const char *engy_sj_type_name(const struct sj *j);

#endif /* ENGY_SCORE_JSON_H */
