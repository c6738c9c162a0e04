/* SPDX-License-Identifier: MIT */
/*
 * The safetensors reader.  The header is untrusted: it is parsed with
 * cJSON only after a UTF-8 and control-character scan, and every number
 * is checked to be an exact non-negative integer before any arithmetic,
 * which is itself overflow-checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "safetensors.h"

struct engy_st {
	const uint8_t *base;
	size_t len;
	bool mapped;
	struct engy_st_tensor *t; /* by data offset */
	size_t n;
	size_t *by_name; /* indices into t, sorted by name */
	char **meta;	 /* key, value, key, value, ... */
	size_t n_meta;
};

static const struct {
	const char *name;
	size_t size;
} dtypes[ENGY_ST_DTYPE_MAX] = {
	[ENGY_ST_BOOL] = { "BOOL", 1 },
	[ENGY_ST_U8] = { "U8", 1 },
	[ENGY_ST_I8] = { "I8", 1 },
	[ENGY_ST_F8_E4M3] = { "F8_E4M3", 1 },
	[ENGY_ST_F8_E5M2] = { "F8_E5M2", 1 },
	[ENGY_ST_I16] = { "I16", 2 },
	[ENGY_ST_U16] = { "U16", 2 },
	[ENGY_ST_F16] = { "F16", 2 },
	[ENGY_ST_BF16] = { "BF16", 2 },
	[ENGY_ST_I32] = { "I32", 4 },
	[ENGY_ST_U32] = { "U32", 4 },
	[ENGY_ST_F32] = { "F32", 4 },
	[ENGY_ST_I64] = { "I64", 8 },
	[ENGY_ST_U64] = { "U64", 8 },
	[ENGY_ST_F64] = { "F64", 8 },
};

int engy_st_dtype_parse(const char *name)
{
	int i;

	for (i = 1; i < ENGY_ST_DTYPE_MAX; i++)
		if (name && strcmp(dtypes[i].name, name) == 0)
			return i;
	return -EINVAL;
}

const char *engy_st_dtype_name(int dtype)
{
	return dtype > 0 && dtype < ENGY_ST_DTYPE_MAX ? dtypes[dtype].name
						      : "?";
}

size_t engy_st_dtype_size(int dtype)
{
	return dtype > 0 && dtype < ENGY_ST_DTYPE_MAX ? dtypes[dtype].size : 0;
}

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen,
						      const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/*
 * Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF) and
 * no control characters but JSON white space: a NUL or a raw control byte
 * has no business in a header and would confuse a C-string parser.
 * Returns the offset of the first bad byte, or @n when all is well.
 */
static size_t bad_utf8(const uint8_t *s, size_t n)
{
	size_t i = 0, k, len;
	uint32_t cp, min;

	while (i < n) {
		uint8_t c = s[i];

		if (c < 0x80) {
			if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
				return i;
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			len = 2;
			cp = c & 0x1F;
			min = 0x80;
		} else if (c >= 0xE0 && c <= 0xEF) {
			len = 3;
			cp = c & 0x0F;
			min = 0x800;
		} else if (c >= 0xF0 && c <= 0xF4) {
			len = 4;
			cp = c & 0x07;
			min = 0x10000;
		} else {
			return i;
		}
		if (n - i < len)
			return i;
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return i;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return i;
		i += len;
	}
	return n;
}

/* An exact integer in [0, 2^53]: what a JSON offset or dimension may be. */
static int json_u64(const cJSON *v, uint64_t *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return -EINVAL;
	d = v->valuedouble;
	if (!isfinite(d) || d < 0 || d > 9007199254740992.0 || d != floor(d))
		return -EINVAL;
	*out = (uint64_t)d;
	return 0;
}

static bool mul_ovf(uint64_t a, uint64_t b, uint64_t *r)
{
	return __builtin_mul_overflow(a, b, r);
}

struct range {
	uint64_t begin, end;
};

static int parse_tensor(const cJSON *e, struct engy_st_tensor *t,
			struct range *r, char *err, size_t errlen)
{
	const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
	const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
	const cJSON *d;
	const char *nm = e->string;
	uint64_t numel = 1, nbytes;
	int dtype;

	if (!cJSON_IsObject(e))
		return fail(err, errlen, "tensor '%.80s' is not an object", nm);
	if (!cJSON_IsString(dt))
		return fail(err, errlen, "tensor '%.80s' has no dtype string",
			    nm);
	dtype = engy_st_dtype_parse(dt->valuestring);
	if (dtype < 0)
		return fail(err, errlen,
			    "tensor '%.80s': unknown dtype '%.20s'", nm,
			    dt->valuestring);
	if (!cJSON_IsArray(sh))
		return fail(err, errlen, "tensor '%.80s' has no shape array",
			    nm);
	if (cJSON_GetArraySize(sh) > ENGY_ST_MAX_DIMS)
		return fail(err, errlen,
			    "tensor '%.80s': more than %d dimensions", nm,
			    ENGY_ST_MAX_DIMS);
	t->ndim = 0;
	cJSON_ArrayForEach(d, sh)
	{
		if (json_u64(d, &t->shape[t->ndim]))
			return fail(
				err, errlen,
				"tensor '%.80s': shape[%u] is not a non-negative integer",
				nm, t->ndim);
		if (mul_ovf(numel, t->shape[t->ndim], &numel))
			return fail(err, errlen,
				    "tensor '%.80s': element count overflows",
				    nm);
		t->ndim++;
	}
	if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 ||
	    json_u64(off->child, &r->begin) ||
	    json_u64(off->child->next, &r->end))
		return fail(
			err, errlen,
			"tensor '%.80s': data_offsets is not [begin, end] of non-negative integers",
			nm);
	if (r->end < r->begin)
		return fail(
			err, errlen,
			"tensor '%.80s': data_offsets end %llu is before begin %llu",
			nm, (unsigned long long)r->end,
			(unsigned long long)r->begin);
	if (mul_ovf(numel, engy_st_dtype_size(dtype), &nbytes))
		return fail(err, errlen, "tensor '%.80s': byte size overflows",
			    nm);
	if (r->end - r->begin != nbytes)
		return fail(
			err, errlen,
			"tensor '%.80s': data_offsets span %llu bytes but %s x %llu elements need %llu",
			nm, (unsigned long long)(r->end - r->begin),
			dtypes[dtype].name, (unsigned long long)numel,
			(unsigned long long)nbytes);
	t->name = nm;
	t->dtype = dtype;
	t->numel = numel;
	t->nbytes = nbytes;
	return 0;
}

static int parse_meta(struct engy_st *st, const cJSON *m, char *err,
		      size_t errlen)
{
	const cJSON *e;
	size_t k = 0;

	if (!cJSON_IsObject(m))
		return fail(err, errlen, "__metadata__ is not an object");
	st->meta = calloc(2 * (size_t)cJSON_GetArraySize(m) + 1,
			  sizeof(*st->meta));
	if (!st->meta)
		return -ENOMEM;
	cJSON_ArrayForEach(e, m)
	{
		if (!cJSON_IsString(e))
			return fail(err, errlen,
				    "__metadata__ '%.80s' is not a string",
				    e->string);
		st->meta[k] = strdup(e->string);
		st->meta[k + 1] = strdup(e->valuestring);
		if (!st->meta[k] || !st->meta[k + 1])
			return -ENOMEM;
		k += 2;
	}
	st->n_meta = k / 2;
	return 0;
}

static int cmp_range(const void *a, const void *b, void *ctx)
{
	const struct range *r = ctx;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	if (r[x].begin != r[y].begin)
		return r[x].begin < r[y].begin ? -1 : 1;
	if (r[x].end != r[y].end)
		return r[x].end < r[y].end ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int cmp_name(const void *a, const void *b, void *ctx)
{
	const struct engy_st_tensor *t = ctx;

	return strcmp(t[*(const size_t *)a].name, t[*(const size_t *)b].name);
}

/* Names are copied into one block after the tensor array: cJSON goes away. */
static int build(struct engy_st *st, const cJSON *root, uint64_t buf_len,
		 const uint8_t *buf, char *err, size_t errlen)
{
	struct engy_st_tensor *tmp = NULL;
	struct range *r = NULL;
	size_t *order = NULL, n = 0, i, names = 0;
	const cJSON *e;
	char *p;
	int rc;

	cJSON_ArrayForEach(e, root)
	{
		if (strcmp(e->string, "__metadata__") == 0) {
			if (st->meta)
				return fail(err, errlen,
					    "__metadata__ is given twice");
			rc = parse_meta(st, e, err, errlen);
			if (rc)
				return rc;
			continue;
		}
		n++;
		names += strlen(e->string) + 1;
	}
	tmp = calloc(n + 1, sizeof(*tmp));
	r = calloc(n + 1, sizeof(*r));
	order = calloc(n + 1, sizeof(*order));
	st->t = malloc((n + 1) * sizeof(*st->t) + names);
	st->by_name = calloc(n + 1, sizeof(*st->by_name));
	if (!tmp || !r || !order || !st->t || !st->by_name) {
		rc = -ENOMEM;
		goto out;
	}
	i = 0;
	cJSON_ArrayForEach(e, root)
	{
		if (strcmp(e->string, "__metadata__") == 0)
			continue;
		if (!e->string[0]) {
			rc = fail(err, errlen, "a tensor has an empty name");
			goto out;
		}
		rc = parse_tensor(e, &tmp[i], &r[i], err, errlen);
		if (rc)
			goto out;
		order[i] = i;
		i++;
	}
	qsort_r(order, n, sizeof(*order), cmp_range, r);
	p = (char *)(st->t + n + 1);
	for (i = 0; i < n; i++) {
		size_t k = order[i];
		uint64_t expect = i ? r[order[i - 1]].end : 0;

		if (r[k].begin != expect) {
			rc = fail(
				err, errlen,
				"tensor '%.80s' starts at %llu but the previous data ends at %llu (%s)",
				tmp[k].name, (unsigned long long)r[k].begin,
				(unsigned long long)expect,
				r[k].begin < expect ? "overlap" : "hole");
			goto out;
		}
		if (r[k].end > buf_len) {
			rc = fail(
				err, errlen,
				"truncated: tensor '%.80s' ends at byte %llu of a %llu-byte buffer",
				tmp[k].name, (unsigned long long)r[k].end,
				(unsigned long long)buf_len);
			goto out;
		}
		st->t[i] = tmp[k];
		st->t[i].data = buf + r[k].begin;
		strcpy(p, tmp[k].name);
		st->t[i].name = p;
		p += strlen(p) + 1;
		st->by_name[i] = i;
	}
	if ((n ? r[order[n - 1]].end : 0) != buf_len) {
		rc = fail(
			err, errlen,
			"the buffer holds %llu bytes but the tensors cover %llu",
			(unsigned long long)buf_len,
			(unsigned long long)(n ? r[order[n - 1]].end : 0));
		goto out;
	}
	st->n = n;
	qsort_r(st->by_name, n, sizeof(*st->by_name), cmp_name, st->t);
	for (i = 1; i < n; i++)
		if (!strcmp(st->t[st->by_name[i]].name,
			    st->t[st->by_name[i - 1]].name)) {
			rc = fail(err, errlen, "tensor '%.80s' is given twice",
				  st->t[st->by_name[i]].name);
			goto out;
		}
	rc = 0;
out:
	free(tmp);
	free(r);
	free(order);
	return rc;
}

static int parse(struct engy_st *st, char *err, size_t errlen)
{
	const uint8_t *b = st->base;
	uint64_t hlen = 0, buf_len;
	const char *end = NULL;
	cJSON *root;
	size_t bad, i;
	int rc;

	if (st->len < 8)
		return fail(
			err, errlen,
			"truncated: %zu bytes, not even the 8-byte header length",
			st->len);
	for (i = 0; i < 8; i++)
		hlen |= (uint64_t)b[i] << (8 * i);
	if (hlen > ENGY_ST_MAX_HEADER)
		return fail(err, errlen,
			    "header length %llu is over the %llu-byte limit",
			    (unsigned long long)hlen,
			    (unsigned long long)ENGY_ST_MAX_HEADER);
	if (hlen > st->len - 8)
		return fail(
			err, errlen,
			"truncated: the header is %llu bytes but only %zu follow",
			(unsigned long long)hlen, st->len - 8);
	if (hlen < 2 || b[8] != '{')
		return fail(err, errlen, "the header does not start with '{'");
	bad = bad_utf8(b + 8, hlen);
	if (bad != hlen)
		return fail(
			err, errlen,
			"the header is not valid UTF-8 JSON text (byte %zu)",
			bad);
	root = cJSON_ParseWithLengthOpts((const char *)b + 8, hlen, &end, 0);
	if (!root || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return fail(err, errlen, "the header is not a JSON object");
	}
	/* The reference writer pads with spaces; nothing else may follow. */
	for (i = (size_t)(end - (const char *)b - 8); i < hlen; i++)
		if (b[8 + i] != ' ' && b[8 + i] != '\t' && b[8 + i] != '\n' &&
		    b[8 + i] != '\r') {
			cJSON_Delete(root);
			return fail(
				err, errlen,
				"the header has bytes after its JSON object (byte %zu)",
				i);
		}
	buf_len = st->len - 8 - hlen;
	rc = build(st, root, buf_len, b + 8 + hlen, err, errlen);
	cJSON_Delete(root);
	return rc;
}

static int finish(struct engy_st *st, struct engy_st **out, char *err,
		  size_t errlen, const char *what)
{
	char reason[400] = "";
	int rc = parse(st, reason, sizeof(reason));

	if (rc) {
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", what,
				 reason[0] ? reason : strerror(-rc));
		engy_st_close(st);
		return rc;
	}
	*out = st;
	return 0;
}

int engy_st_parse(const uint8_t *buf, size_t len, struct engy_st **out,
		  char *err, size_t errlen)
{
	struct engy_st *st;

	*out = NULL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->base = buf;
	st->len = len;
	return finish(st, out, err, errlen, "safetensors");
}

int engy_st_open(const char *path, struct engy_st **out, char *err,
		 size_t errlen)
{
	struct engy_st *st;
	struct stat sb;
	void *m;
	int fd, rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		snprintf(err, errlen, "%s: not a regular file", path);
		return -EINVAL;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		close(fd);
		return -ENOMEM;
	}
	st->len = (size_t)sb.st_size;
	if (st->len) {
		m = mmap(NULL, st->len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			rc = -errno;
			close(fd);
			free(st);
			snprintf(err, errlen, "%s: mmap: %s", path,
				 strerror(-rc));
			return rc;
		}
		st->base = m;
		st->mapped = true;
	}
	close(fd);
	return finish(st, out, err, errlen, path);
}

void engy_st_close(struct engy_st *st)
{
	size_t i;

	if (!st)
		return;
	if (st->mapped)
		munmap((void *)st->base, st->len);
	if (st->meta)
		for (i = 0; st->meta[i]; i++)
			free(st->meta[i]);
	free(st->meta);
	free(st->t);
	free(st->by_name);
	free(st);
}

size_t engy_st_count(const struct engy_st *st)
{
	return st->n;
}

const struct engy_st_tensor *engy_st_at(const struct engy_st *st, size_t i)
{
	return i < st->n ? &st->t[i] : NULL;
}

const struct engy_st_tensor *engy_st_find(const struct engy_st *st,
					  const char *name)
{
	size_t lo = 0, hi = st->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct engy_st_tensor *t = &st->t[st->by_name[mid]];
		int c = strcmp(name, t->name);

		if (!c)
			return t;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

const char *engy_st_metadata(const struct engy_st *st, const char *key)
{
	size_t i;

	for (i = 0; i < st->n_meta; i++)
		if (strcmp(st->meta[2 * i], key) == 0)
			return st->meta[2 * i + 1];
	return NULL;
}
