/* SPDX-License-Identifier: MIT */
/*
 * A checkpoint directory's safetensors files, as the model spec builder,
 * the reference engine's loader and the GEMM verifier's weights all open
 * them: model.safetensors, or every distinct file that
 * model.safetensors.index.json's weight_map names.  The names come from a
 * file, so only plain names of .safetensors files beside it are opened.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "errbuf.h"
#include "fsutil.h"
#include "safetensors.h"

#define INDEX_MAX ((size_t)64 << 20) /* bytes of an index file read */

static bool shard_name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 12 && n < 256 && s[0] != '.' && !strchr(s, '/') &&
	       strcmp(s + n - 12, ".safetensors") == 0;
}

static int open_one(struct engy_st_dir *d, const char *dir, const char *file,
		    size_t max, char *err, size_t errlen)
{
	char path[4096];
	struct engy_st **st;
	int rc;

	if (d->n == max) {
		engy_seterr(err, errlen, "%s: over %zu shards", dir, max);
		return -EINVAL;
	}
	st = realloc(d->st, (d->n + 1) * sizeof(*st));
	if (!st)
		return -ENOMEM;
	d->st = st;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	rc = engy_st_open(path, &d->st[d->n], err, errlen);
	if (!rc)
		d->n++;
	return rc;
}

int engy_st_dir_open(const char *dir, size_t max, struct engy_st_dir *d,
		     char *err, size_t errlen)
{
	const cJSON *map, *e, *f;
	char path[4096];
	uint8_t *buf;
	size_t len;
	cJSON *j;
	int rc;

	d->st = NULL;
	d->n = 0;
	snprintf(path, sizeof(path), "%s/model.safetensors.index.json", dir);
	rc = engy_read_file(path, INDEX_MAX, &buf, &len);
	if (rc == -ENOENT)
		rc = open_one(d, dir, "model.safetensors", max, err, errlen);
	else if (rc)
		engy_seterr(err, errlen, "%s: %s", path, strerror(-rc));
	else {
		j = cJSON_ParseWithLength((const char *)buf, len);
		free(buf);
		map = cJSON_GetObjectItemCaseSensitive(j, "weight_map");
		if (!cJSON_IsObject(map)) {
			engy_seterr(err, errlen, "%s: no weight_map object",
				    path);
			rc = -EINVAL;
		}
		for (e = rc ? NULL : map->child; e; e = e->next) {
			bool seen = false;

			if (!cJSON_IsString(e) ||
			    !shard_name_ok(e->valuestring)) {
				engy_seterr(
					err, errlen,
					"%s: weight_map names '%.60s', not a .safetensors file beside it",
					path,
					cJSON_IsString(e) ? e->valuestring
							  : "");
				rc = -EINVAL;
				break;
			}
			for (f = map->child; f != e && !seen; f = f->next)
				seen = strcmp(f->valuestring, e->valuestring) ==
				       0;
			if (!seen && (rc = open_one(d, dir, e->valuestring, max,
						    err, errlen)))
				break;
		}
		cJSON_Delete(j);
	}
	if (rc)
		engy_st_dir_close(d);
	return rc;
}

void engy_st_dir_close(struct engy_st_dir *d)
{
	for (size_t i = 0; i < d->n; i++)
		engy_st_close(d->st[i]);
	free(d->st);
	d->st = NULL;
	d->n = 0;
}
