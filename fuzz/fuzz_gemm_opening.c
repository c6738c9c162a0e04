/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the GEMM audit's parser of a miner's opening (lib/gemm,
 * engy_ga_opening_parse()): any input is refused with a reason or
 * accepted, never crashes; an accepted opening is within the parser's
 * bounds, and its canonical re-encoding parses to the same opening and
 * re-encodes to the same bytes (round trip).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "gemm.h"
#include "gemm_int.h"

static void same(const struct engy_ga_opening *a,
		 const struct engy_ga_opening *b)
{
	size_t i, r;

	if (memcmp(&a->bind, &b->bind, sizeof(a->bind)) ||
	    a->n_subs != b->n_subs || a->n_cells != b->n_cells ||
	    a->n_osubs != b->n_osubs ||
	    memcmp(a->cells, b->cells, a->n_cells * sizeof(*a->cells)))
		abort();
	for (i = 0; i < a->n_osubs; i++) {
		const struct engy_ga_osub *x = &a->subs[i], *y = &b->subs[i];

		if (engy_ga_key_cmp(&x->key, &y->key) || x->index != y->index ||
		    x->depth != y->depth || x->n_rows != y->n_rows ||
		    memcmp(x->path, y->path, 32 * x->depth))
			abort();
		for (r = 0; r < x->n_rows; r++)
			if (x->rows[r].pos != y->rows[r].pos ||
			    x->rows[r].depth != y->rows[r].depth ||
			    x->rows[r].n != y->rows[r].n ||
			    memcmp(x->rows[r].path, y->rows[r].path,
				   32 * x->rows[r].depth) ||
			    memcmp(x->rows[r].data, y->rows[r].data,
				   4 * x->rows[r].n))
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_ga_opening *o, *o2;
	char err[160], *j, *j2;
	size_t i, rows = 0;

	err[0] = 0;
	if (engy_ga_opening_parse((const char *)data, size, &o, err,
				  sizeof(err))) {
		if (!err[0])
			abort(); /* every refusal has a reason */
		return 0;
	}
	if (o->n_cells > ENGY_GA_MAX_CELLS)
		abort();
	for (i = 0; i < o->n_osubs; i++) {
		const struct engy_ga_osub *s = &o->subs[i];
		size_t r;

		if (s->depth > ENGY_GA_MAX_DEPTH || !s->n_rows)
			abort();
		for (r = 0; r < s->n_rows; r++)
			if (!s->rows[r].n || s->rows[r].n > ENGY_GA_MAX_ROW ||
			    s->rows[r].depth > ENGY_GA_MAX_DEPTH)
				abort();
		rows += s->n_rows;
	}
	if (rows > ENGY_GA_MAX_ROWS)
		abort();
	j = engy_ga_opening_json(o);
	if (!j)
		abort();
	if (engy_ga_opening_parse(j, strlen(j), &o2, err, sizeof(err)))
		abort(); /* the canonical form parses */
	same(o, o2);
	j2 = engy_ga_opening_json(o2);
	if (!j2 || strcmp(j, j2))
		abort();
	free(j);
	free(j2);
	engy_ga_opening_free(o);
	engy_ga_opening_free(o2);
	return 0;
}
