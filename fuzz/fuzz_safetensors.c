/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the safetensors reader: any input must be refused with a reason or
 * accepted, never crash; an accepted file's tensors must lie inside the
 * input, in order, and widen to floats (float dtypes) without reading
 * outside their bytes.  Each small tensor also goes through the FP8 and
 * INT4 dequantizers with the next tensor as its scales.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "safetensors.h"

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
	engy_st_close(st);
	return 0;
}
