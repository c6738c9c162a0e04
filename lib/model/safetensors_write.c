/* SPDX-License-Identifier: MIT */
/*
 * The safetensors writer: tensors in the order added, offsets back to
 * back, the header padded with spaces to a multiple of 8 bytes (so the
 * buffer is 8-aligned, as the reference writer does).  The output is a
 * pure function of the calls made: same calls, same bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "safetensors.h"

struct wt {
	char *name;
	int dtype;
	uint32_t ndim;
	uint64_t shape[ENGY_ST_MAX_DIMS];
	void *data;
	uint64_t nbytes;
};

struct engy_st_writer {
	struct wt *t;
	size_t n, cap;
	char **meta; /* key, value, ... */
	size_t n_meta;
};

struct engy_st_writer *engy_st_writer_new(void)
{
	return calloc(1, sizeof(struct engy_st_writer));
}

void engy_st_writer_free(struct engy_st_writer *w)
{
	size_t i;

	if (!w)
		return;
	for (i = 0; i < w->n; i++) {
		free(w->t[i].name);
		free(w->t[i].data);
	}
	for (i = 0; i < 2 * w->n_meta; i++)
		free(w->meta[i]);
	free(w->meta);
	free(w->t);
	free(w);
}

int engy_st_writer_add_take(struct engy_st_writer *w, const char *name,
			    int dtype, uint32_t ndim, const uint64_t *shape,
			    void *data, uint64_t nbytes)
{
	uint64_t want = engy_st_dtype_size(dtype);
	struct wt *t;
	size_t i;

	for (i = 0; i < ndim && ndim <= ENGY_ST_MAX_DIMS; i++)
		if (__builtin_mul_overflow(want, shape[i], &want))
			break;
	if (!name || !*name || !want || ndim > ENGY_ST_MAX_DIMS || i < ndim ||
	    want != nbytes)
		goto inval;
	for (i = 0; i < w->n; i++)
		if (strcmp(w->t[i].name, name) == 0)
			goto inval;
	if (!ENGY_GROW(w->t, w->cap, w->n + 1)) {
		free(data);
		return -ENOMEM;
	}
	t = &w->t[w->n];
	memset(t, 0, sizeof(*t));
	t->name = strdup(name);
	if (!t->name) {
		free(data);
		return -ENOMEM;
	}
	t->dtype = dtype;
	t->ndim = ndim;
	memcpy(t->shape, shape, ndim * sizeof(*shape));
	t->data = data;
	t->nbytes = nbytes;
	w->n++;
	return 0;
inval:
	free(data);
	return -EINVAL;
}

int engy_st_writer_meta(struct engy_st_writer *w, const char *key,
			const char *value)
{
	char **m = realloc(w->meta, 2 * (w->n_meta + 1) * sizeof(*m));

	if (!m)
		return -ENOMEM;
	w->meta = m;
	m[2 * w->n_meta] = strdup(key);
	m[2 * w->n_meta + 1] = strdup(value);
	w->n_meta++;
	return m[2 * w->n_meta - 2] && m[2 * w->n_meta - 1] ? 0 : -ENOMEM;
}

/* A JSON string; names and metadata are ours, but escape what JSON must. */
static void put_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static char *header(const struct engy_st_writer *w, size_t *len)
{
	uint64_t off = 0;
	char *buf = NULL;
	size_t i, k, sz = 0;
	FILE *f = open_memstream(&buf, &sz);

	if (!f)
		return NULL;
	fputc('{', f);
	if (w->n_meta) {
		fputs("\"__metadata__\":{", f);
		for (i = 0; i < w->n_meta; i++) {
			if (i)
				fputc(',', f);
			put_str(f, w->meta[2 * i]);
			fputc(':', f);
			put_str(f, w->meta[2 * i + 1]);
		}
		fputc('}', f);
	}
	for (i = 0; i < w->n; i++) {
		const struct wt *t = &w->t[i];

		if (i || w->n_meta)
			fputc(',', f);
		put_str(f, t->name);
		fprintf(f, ":{\"dtype\":\"%s\",\"shape\":[",
			engy_st_dtype_name(t->dtype));
		for (k = 0; k < t->ndim; k++)
			fprintf(f, "%s%llu", k ? "," : "",
				(unsigned long long)t->shape[k]);
		fprintf(f, "],\"data_offsets\":[%llu,%llu]}",
			(unsigned long long)off,
			(unsigned long long)(off + t->nbytes));
		off += t->nbytes;
	}
	fputc('}', f);
	while (ftell(f) % 8)
		fputc(' ', f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	*len = sz;
	return buf;
}

int engy_st_writer_save(struct engy_st_writer *w, const char *path)
{
	size_t hlen = 0, i, plen = strlen(path);
	char *h = header(w, &hlen), *tmp = malloc(plen + 8);
	uint8_t len8[8];
	FILE *f = NULL;
	int rc = -EIO;

	if (!h || !tmp) {
		rc = -ENOMEM;
		goto out;
	}
	snprintf(tmp, plen + 8, "%s.tmp", path);
	f = fopen(tmp, "wb");
	if (!f) {
		rc = -errno;
		goto out;
	}
	for (i = 0; i < 8; i++)
		len8[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
	if (fwrite(len8, 1, 8, f) != 8 || fwrite(h, 1, hlen, f) != hlen)
		goto out;
	for (i = 0; i < w->n; i++)
		if (fwrite(w->t[i].data, 1, w->t[i].nbytes, f) !=
		    w->t[i].nbytes)
			goto out;
	if (fflush(f) || fsync(fileno(f)))
		goto out;
	rc = fclose(f) ? -EIO : 0;
	f = NULL;
	if (!rc && rename(tmp, path))
		rc = -errno;
out:
	if (f)
		fclose(f);
	if (rc && tmp)
		unlink(tmp);
	free(h);
	free(tmp);
	return rc;
}
