/* SPDX-License-Identifier: MIT */
/*
 * A member of a cJSON object by name, inline: the answer
 * cJSON_GetObjectItemCaseSensitive() gives (the first member named @key;
 * a member without a name ends the search), the names compared inline.
 * A gateway request reads its body, its miner's frames and its answer
 * through some hundred of these lookups, most of them for members that
 * are not there.
 */
#ifndef ENGY_JSONGET_H
#define ENGY_JSONGET_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* strcmp(@a, @b) == 0 inline: most names differ in their first bytes. */
static inline int engy_json_same(const char *a, const char *b)
{
	while (*a == *b) {
		if (!*a)
			return 1;
		a++;
		b++;
	}
	return 0;
}

static inline cJSON *engy_json_get(const cJSON *obj, const char *key)
{
	cJSON *j;

	if (!obj || !key)
		return NULL;
	for (j = obj->child; j && j->string; j = j->next)
		if (engy_json_same(j->string, key))
			return j;
	return NULL;
}

#endif /* ENGY_JSONGET_H */
