/* SPDX-License-Identifier: MIT */
/*
 * What a miner reads from its checkpoint directory: the cheap identity it
 * sends as `model_root` (specs/protocol.md §3) and the chat template variant
 * (specs/chat.md).  Files are read whole with limits; nothing is kept.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "chat_template.h"
#include "fsutil.h"
#include "grow.h"
#include "jsonget.h"
#include "miner_ckpt.h"
#include "minerproto.h"

#define CONFIG_MAX   (16u << 20)
#define TEMPLATE_MAX (4u << 20)
#define MAX_SHARDS   100000

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_shard(const char *name)
{
	size_t n = strlen(name), s = strlen(".safetensors");

	return n > s && strcmp(name + n - s, ".safetensors") == 0;
}

/* The sorted basenames of @dir's *.safetensors. */
static int list_shards(const char *dir, char ***out, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;
	size_t cap = 0;
	int rc = 0;

	*n = 0;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (!is_shard(e->d_name))
			continue;
		if (*n == MAX_SHARDS || !ENGY_GROW(v, cap, *n + 1)) {
			rc = *n == MAX_SHARDS ? -E2BIG : -ENOMEM;
			break;
		}
		if (!(v[*n] = strdup(e->d_name))) {
			rc = -ENOMEM;
			break;
		}
		(*n)++;
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_str);
	*out = v;
	return rc;
}

int engy_ckpt_model_root(const char *dir, char hex[65], char *err,
			 size_t errlen)
{
	crypto_hash_sha256_state st;
	uint8_t h[crypto_hash_sha256_BYTES], *cfg = NULL;
	char path[4096], num[32];
	char **shards = NULL;
	size_t len, n = 0, i;
	struct stat sb;
	int rc;

	hex[0] = '\0';
	if (snprintf(path, sizeof(path), "%s/config.json", dir) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	rc = engy_read_file(path, CONFIG_MAX, &cfg, &len);
	if (rc) {
		snprintf(err, errlen, "cannot read %s: %s", path,
			 strerror(-rc));
		return rc;
	}
	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, cfg, len);
	free(cfg);
	rc = list_shards(dir, &shards, &n);
	if (rc)
		snprintf(err, errlen, "cannot list %s: %s", dir, strerror(-rc));
	for (i = 0; !rc && i < n; i++) {
		/* stat() follows links, as a Hugging Face cache needs. */
		if (snprintf(path, sizeof(path), "%s/%s", dir, shards[i]) >=
		    (int)sizeof(path))
			rc = -ENAMETOOLONG;
		else if (stat(path, &sb) < 0)
			rc = -errno;
		if (rc) {
			snprintf(err, errlen, "cannot stat %s: %s", path,
				 strerror(-rc));
			break;
		}
		snprintf(num, sizeof(num), "%llu",
			 (unsigned long long)sb.st_size);
		crypto_hash_sha256_update(&st, (const uint8_t *)shards[i],
					  strlen(shards[i]));
		crypto_hash_sha256_update(&st, (const uint8_t *)num,
					  strlen(num));
	}
	for (i = 0; i < n; i++)
		free(shards[i]);
	free(shards);
	if (rc)
		return rc;
	crypto_hash_sha256_final(&st, h);
	for (i = 0; i < sizeof(h); i++)
		sprintf(hex + 2 * i, "%02x", h[i]);
	return 0;
}

/* tokenizer_config.json's chat_template: a string, or a list of named
 * templates of which "default" is the one. */
static int variant_of_config(const char *buf, size_t len)
{
	cJSON *cfg = cJSON_ParseWithLength(buf, len), *t, *it, *name, *tmpl;
	const char *src = NULL;
	int rc;

	t = engy_json_get(cfg, "chat_template");
	if (cJSON_IsString(t))
		src = t->valuestring;
	if (!cJSON_IsArray(t))
		t = NULL;
	cJSON_ArrayForEach(it, t)
	{
		name = engy_json_get(it, "name");
		tmpl = engy_json_get(it, "template");
		if (cJSON_IsString(name) &&
		    strcmp(name->valuestring, "default") == 0 &&
		    cJSON_IsString(tmpl))
			src = tmpl->valuestring;
	}
	rc = src ? engy_chat_variant_detect(src) : -ENOENT;
	cJSON_Delete(cfg);
	return rc;
}

int engy_ckpt_chat_variant(const char *dir)
{
	char path[4096];
	uint8_t *buf = NULL;
	size_t len;
	int rc = -ENOENT;

	snprintf(path, sizeof(path), "%s/tokenizer_config.json", dir);
	if (engy_read_file(path, TEMPLATE_MAX, &buf, &len) == 0) {
		rc = variant_of_config((const char *)buf, len);
		free(buf);
		if (rc >= 0)
			return rc;
	}
	snprintf(path, sizeof(path), "%s/chat_template.jinja", dir);
	if (engy_read_file(path, TEMPLATE_MAX, &buf, &len) == 0) {
		rc = engy_chat_variant_detect((const char *)buf);
		free(buf);
	}
	return rc < 0 ? -ENOENT : rc;
}
