/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the safetensors reader: any input must be refused with a reason or
 * accepted, never crash; an accepted file's tensors must lie inside the
 * input, in order, and widen to floats (float dtypes) without reading
 * outside their bytes.  Each small tensor also goes through the FP8 and
 * INT4 dequantizers with the next tensor as its scales.
 * Round trip: the tensors of an accepted file (all but zero-sized ones,
 * which the writer refuses) written again with engy_st_writer and read
 * back give the same names, dtypes, shapes and bytes, in the same order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "safetensors.h"

/* A file of this process's in the temporary directory. */
static const char *scratch(void)
{
	static char path[256];
	const char *d;

	if (!path[0]) {
		d = getenv("TMPDIR");
		if (!d || !*d)
			d = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(path, sizeof(path), "%s/fuzz_safetensors.%ld", d,
			 (long)getpid());
	}
	return path;
}

static void round_trip(const struct engy_st *st)
{
	struct engy_st_writer *w = engy_st_writer_new();
	const struct engy_st_tensor *t, *u;
	struct engy_st *back;
	size_t i, n = 0, j = 0;
	char err[256];
	void *copy;

	if (!w)
		abort();
	for (i = 0; i < engy_st_count(st); i++) {
		t = engy_st_at(st, i);
		if (!t->nbytes)
			continue;
		copy = malloc(t->nbytes);
		if (!copy)
			abort();
		memcpy(copy, t->data, t->nbytes);
		if (engy_st_writer_add_take(w, t->name, t->dtype, t->ndim,
					    t->shape, copy, t->nbytes))
			abort(); /* the reader took what the writer refuses */
		n++;
	}
	if (engy_st_writer_save(w, scratch()))
		abort();
	engy_st_writer_free(w);
	if (engy_st_open(scratch(), &back, err, sizeof(err)))
		abort(); /* the writer wrote what the reader refuses */
	unlink(scratch());
	if (engy_st_count(back) != n)
		abort();
	for (i = 0; i < engy_st_count(st); i++) {
		t = engy_st_at(st, i);
		if (!t->nbytes)
			continue;
		u = engy_st_at(back, j++);
		if (strcmp(t->name, u->name) || t->dtype != u->dtype ||
		    t->ndim != u->ndim || t->numel != u->numel ||
		    memcmp(t->shape, u->shape, t->ndim * sizeof(*t->shape)) ||
		    t->nbytes != u->nbytes ||
		    memcmp(t->data, u->data, t->nbytes))
			abort();
	}
	engy_st_close(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct engy_st_tensor *t, *prev = NULL;
	struct engy_st *st;
	char err[256];
	float *out;
	size_t i;

	if (engy_st_parse(data, size, &st, err, sizeof(err))) {
		if (!err[0])
			abort(); /* every refusal has a reason */
		return 0;
	}
	for (i = 0; i < engy_st_count(st); i++) {
		t = engy_st_at(st, i);
		if (t->data < data || t->data + t->nbytes > data + size)
			abort();
		if (prev && t->data < prev->data + prev->nbytes)
			abort();
		if (engy_st_find(st, t->name) != t)
			abort();
		if (t->numel <= (1u << 16)) {
			const struct engy_st_tensor *s = engy_st_at(st, i + 1);

			/* INT4 writes two values per byte. */
			out = malloc((2 * t->numel + 1) * sizeof(float));
			if (!out)
				abort();
			engy_st_to_f32(t, out);
			if (s && s->ndim == 2 && s->shape[1] && t->ndim == 2) {
				engy_st_dequant_fp8(t, s, 128, out, err,
						    sizeof(err));
				if (2 * t->shape[1] % s->shape[1] == 0)
					engy_st_dequant_int4(
						t, s,
						(uint32_t)(2 * t->shape[1] /
							   s->shape[1]),
						out, NULL, err, sizeof(err));
			}
			free(out);
		}
		prev = t;
	}
	round_trip(st);
	engy_st_close(st);
	return 0;
}
