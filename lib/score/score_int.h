/* SPDX-License-Identifier: MIT */
/* Internals shared by lib/score*.c. */
#ifndef ENGY_SCORE_INT_H
#define ENGY_SCORE_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "score.h"

/* A growing NUL-terminated text; @err latches the first failure. */
struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};

void engy_score_sbuf_put(struct sbuf *b, const char *s);
void engy_score_sbuf_putu(struct sbuf *b, uint64_t v);
/* A JSON string of a name already checked to need no escaping. */
void engy_score_sbuf_putq(struct sbuf *b, const char *s);

/* One-line error into @why (may be NULL); returns @rc. */
int engy_score_fail(char *why, size_t whylen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Names: hotkeys are SS58 addresses, models [A-Za-z0-9._:/@+-]{1,128}. */
int engy_score_hotkey_ok(const char *s);
int engy_score_model_ok(const char *s);

/* The effective parameters: @p, else @in->params, else the defaults. */
const struct engy_epoch_params *
engy_score_params(const struct engy_epoch_input *in,
		  const struct engy_epoch_params *p,
		  struct engy_epoch_params *def);

/*
 * The rows of @in in result order (uid, then hotkey, then model, by
 * byte), as a malloc'd array of indices; NULL when out of memory.
 */
size_t *engy_score_row_order(const struct engy_epoch_input *in);

/* The model entry a row names (checked input: always found). */
const struct engy_epoch_model *
engy_score_model_of(const struct engy_epoch_input *in, const char *model);

/* Samples in a (checked) histogram. */
uint64_t engy_score_hist_total(const struct engy_score_bucket *b, size_t n);

/* result_json of a settled epoch (lib/score/score_out.c). */
int engy_score_render_result(const struct engy_epoch_input *in,
			     const size_t *order,
			     struct engy_epoch_result *out);

#endif /* ENGY_SCORE_INT_H */
