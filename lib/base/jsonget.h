/* SPDX-License-Identifier: MIT */
/*
 * A member of a cJSON object by name, inline: the answer
 * cJSON_GetObjectItemCaseSensitive() gives (the first member named @key;
 * a member without a name ends the search), with first bytes compared
 * before whole names.  A gateway request reads its body, its miner's
 * frames and its answer through some hundred of these lookups, most of
 * them for members that are not there.
 */
#ifndef ENGY_JSONGET_H
#define ENGY_JSONGET_H

#include <stddef.h>
#include <string.h>

#include <cjson/cJSON.h>

static inline cJSON *engy_json_get(const cJSON *obj, const char *key)
{
	cJSON *j;

	if (!obj || !key)
		return NULL;
	for (j = obj->child; j && j->string; j = j->next)
		if (j->string[0] == key[0] && strcmp(j->string, key) == 0)
			return j;
	return NULL;
}

#endif /* ENGY_JSONGET_H */
