/* SPDX-License-Identifier: MIT */
/*
 * The light validator's state file:
 *
 *   {"v":1,"last_applied":105,"last_submit_block":4521337,
 *    "last_submit_ts":1790000000,"cached_epoch":105,
 *    "cached_digest":"<64 hex>","cached_weights":[["5F...",65535]]}
 *
 * Integers are written as their digits (last_submit_ts is also read with a
 * fraction, as the public light validator writes it, truncated to the
 * second); a field that is missing, of the wrong type, out of range, or
 * (for the vector) has any bad row is dropped on its own.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fsutil.h"
#include "valsched.h"

#define MAX_STATE_FILE (4u << 20)
#define MAX_EXACT      9007199254740991.0 /* 2^53 - 1 */

static void note(char *dropped, size_t cap, const char *field)
{
	size_t n = strlen(dropped);

	snprintf(dropped + n, cap - n, "%s%s", n ? "," : "", field);
}

/* A non-negative integer JSON can hold exactly. */
static bool uint_field(const cJSON *o, const char *name, uint64_t *v)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
	double d;

	if (!cJSON_IsNumber(it))
		return false;
	d = it->valuedouble;
	if (!(d >= 0 && d <= MAX_EXACT) || d != (double)(uint64_t)d)
		return false;
	*v = (uint64_t)d;
	return true;
}

/*
 * A non-negative time in whole seconds: the public light validator writes
 * time.time() (a fraction), engy writes integers; the fraction is dropped.
 */
static bool ts_field(const cJSON *o, const char *name, uint64_t *v)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
	double d;

	if (!cJSON_IsNumber(it))
		return false;
	d = it->valuedouble;
	if (!(d >= 0 && d <= MAX_EXACT))
		return false;
	*v = (uint64_t)d;
	return true;
}

static bool hex64(const char *s)
{
	size_t i;

	for (i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[64] == '\0';
}

static int parse_rows(const cJSON *o, struct engy_valstate *st)
{
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "cached_weights"),
		    *it;
	struct engy_valrow *rows;
	size_t n = 0;
	int size;

	if (!cJSON_IsArray(w))
		return -EINVAL;
	size = cJSON_GetArraySize(w);
	if (size <= 0 || size > ENGY_VALSCHED_MAX_ROWS)
		return -EINVAL;
	rows = calloc((size_t)size, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	cJSON_ArrayForEach(it, w)
	{
		const cJSON *hk = cJSON_GetArrayItem(it, 0),
			    *v = cJSON_GetArrayItem(it, 1);
		double d;

		if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2 ||
		    !cJSON_IsString(hk) || !cJSON_IsNumber(v) ||
		    !hk->valuestring[0] ||
		    strlen(hk->valuestring) >= sizeof(rows[n].hotkey))
			goto bad;
		d = v->valuedouble;
		if (!(d >= 0 && d <= 65535) || d != (double)(uint16_t)d)
			goto bad;
		strcpy(rows[n].hotkey, hk->valuestring);
		rows[n].weight = (uint16_t)d;
		n++;
	}
	st->rows = rows;
	st->n_rows = n;
	st->has_cache = true;
	return 0;
bad:
	free(rows);
	return -EINVAL;
}

int engy_valstate_parse(const char *text, size_t len, struct engy_valstate *st,
			char *dropped, size_t cap)
{
	const cJSON *d;
	cJSON *o;
	uint64_t v;
	int rc;

	memset(st, 0, sizeof(*st));
	dropped[0] = '\0';
	o = cJSON_ParseWithLength(text, len);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		if (len)
			note(dropped, cap, "file");
		return 0;
	}
	if (uint_field(o, "last_applied", &v)) {
		st->last.has_applied = true;
		st->last.applied = v;
	} else if (cJSON_GetObjectItemCaseSensitive(o, "last_applied")) {
		note(dropped, cap, "last_applied");
	}
	if (uint_field(o, "last_submit_block", &v) && v <= UINT32_MAX) {
		st->last.has_block = true;
		st->last.block = v;
	} else if (cJSON_GetObjectItemCaseSensitive(o, "last_submit_block")) {
		note(dropped, cap, "last_submit_block");
	}
	if (ts_field(o, "last_submit_ts", &v)) {
		st->last.has_ts = true;
		st->last.ts = (int64_t)v;
	} else if (cJSON_GetObjectItemCaseSensitive(o, "last_submit_ts")) {
		note(dropped, cap, "last_submit_ts");
	}
	if (uint_field(o, "cached_epoch", &v)) {
		st->has_cached_epoch = true;
		st->cached_epoch = v;
	} else if (cJSON_GetObjectItemCaseSensitive(o, "cached_epoch")) {
		note(dropped, cap, "cached_epoch");
	}
	d = cJSON_GetObjectItemCaseSensitive(o, "cached_digest");
	if (cJSON_IsString(d) && hex64(d->valuestring)) {
		st->has_digest = true;
		memcpy(st->digest, d->valuestring, 65);
	} else if (d) {
		note(dropped, cap, "cached_digest");
	}
	rc = parse_rows(o, st);
	if (rc == -ENOMEM) {
		cJSON_Delete(o);
		engy_valstate_free(st);
		return rc;
	}
	if (rc && cJSON_GetObjectItemCaseSensitive(o, "cached_weights"))
		note(dropped, cap, "cached_weights");
	cJSON_Delete(o);
	return 0;
}

/* @s as a JSON string (the rows' hotkeys are whatever was verified). */
static char *json_str(char *p, const char *s)
{
	*p++ = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			*p++ = '\\';
			*p++ = (char)c;
		} else if (c < 0x20) {
			p += sprintf(p, "\\u%04x", c);
		} else {
			*p++ = (char)c;
		}
	}
	*p++ = '"';
	return p;
}

bool engy_valstate_claim(const struct engy_valstate *st)
{
	return st->last.has_applied && st->has_digest &&
	       (!st->has_cached_epoch || st->cached_epoch == st->last.applied);
}

char *engy_valstate_format(const struct engy_valstate *st)
{
	char *buf, *p;
	size_t cap = 320 + st->n_rows * (6 * ENGY_SS58_ADDR_SIZE + 16), i;

	if (st->n_rows > ENGY_VALSCHED_MAX_ROWS)
		return NULL;
	buf = malloc(cap);
	if (!buf)
		return NULL;
	p = buf;
	p += sprintf(p, "{\"v\":1");
	if (st->last.has_applied)
		p += sprintf(p, ",\"last_applied\":%" PRIu64, st->last.applied);
	if (st->last.has_block)
		p += sprintf(p, ",\"last_submit_block\":%" PRIu64,
			     st->last.block);
	if (st->last.has_ts && st->last.ts >= 0)
		p += sprintf(p, ",\"last_submit_ts\":%" PRId64, st->last.ts);
	if (st->has_cached_epoch)
		p += sprintf(p, ",\"cached_epoch\":%" PRIu64, st->cached_epoch);
	if (st->has_digest)
		p += sprintf(p, ",\"cached_digest\":\"%.64s\"", st->digest);
	if (st->has_cache && st->n_rows) {
		p += sprintf(p, ",\"cached_weights\":[");
		for (i = 0; i < st->n_rows; i++) {
			p += sprintf(p, "%s[", i ? "," : "");
			p = json_str(p, st->rows[i].hotkey);
			p += sprintf(p, ",%u]", st->rows[i].weight);
		}
		*p++ = ']';
	}
	strcpy(p, "}\n");
	return buf;
}

int engy_valstate_load(const char *path, struct engy_valstate *st,
		       char *dropped, size_t cap)
{
	uint8_t *buf;
	size_t len;
	int rc;

	memset(st, 0, sizeof(*st));
	dropped[0] = '\0';
	rc = engy_read_file(path, MAX_STATE_FILE, &buf, &len);
	if (rc == -ENOENT)
		return 0;
	if (rc == -EFBIG) {
		note(dropped, cap, "file");
		return 0;
	}
	if (rc)
		return rc;
	rc = engy_valstate_parse((const char *)buf, len, st, dropped, cap);
	free(buf);
	return rc;
}

int engy_valstate_save(const char *path, const struct engy_valstate *st)
{
	char *text = engy_valstate_format(st);
	int rc;

	if (!text)
		return -ENOMEM;
	rc = engy_write_file_atomic(path, text, strlen(text), 0600);
	free(text);
	return rc;
}

void engy_valstate_free(struct engy_valstate *st)
{
	free(st->rows);
	st->rows = NULL;
	st->n_rows = 0;
	st->has_cache = false;
}

int engy_valstate_set_cache(struct engy_valstate *st,
			    const struct engy_valrow *rows, size_t n)
{
	struct engy_valrow *copy = calloc(n ? n : 1, sizeof(*copy));

	if (!copy)
		return -ENOMEM;
	if (n) /* a burn caches no rows, and may pass rows NULL */
		memcpy(copy, rows, n * sizeof(*copy));
	free(st->rows);
	st->rows = copy;
	st->n_rows = n;
	st->has_cache = n > 0;
	return 0;
}
