/* SPDX-License-Identifier: MIT */
/*
 * The store kind's input rules (specs/store.md), engine-neutral: every
 * store plugin refuses the same inputs with -EINVAL, naming the same
 * field.  Each *_bad() returns the name of the first bad field, or NULL
 * when the input is acceptable.
 */
#ifndef ENGY_STORECHECK_H
#define ENGY_STORECHECK_H

#include <stdbool.h>
#include <stddef.h>

#include <engy/store.h>

/* The largest rate (price card, score rate): $1,000,000 per unit. */
#define ENGY_STORE_RATE_MAX 1000000000000ll
/* The largest epoch document (payload, aggregates). */
#define ENGY_STORE_DOC_MAX (16u << 20)

/* @min..@max printable bytes (no control characters); NULL is bad. */
bool engy_store_text_ok(const char *s, size_t min, size_t max);
/* A fixed char[@cap] field: NUL-terminated inside it, printable. */
bool engy_store_fixed_ok(const char *s, size_t cap);
/* A model name: 1..@max of [A-Za-z0-9._:/-]. */
bool engy_store_name_ok(const char *s, size_t max);

const char *engy_store_model_bad(const struct engy_model *m);
const char *engy_store_root_bad(const struct engy_model_root *r);
const char *engy_store_miner_bad(const struct engy_miner *m);
const char *engy_store_row_bad(const struct engy_request_row *r);
/* One settlement (settle(), an item of settle_batch()): a cost in
 * 0..ENGY_STORE_MONEY_MAX, an acceptable row when there is one, and an
 * item without a reservation is a row at cost 0. */
const char *engy_store_settle_bad(int64_t reservation_id, int64_t cost_micro,
				  const struct engy_request_row *row);
const char *engy_store_verdict_bad(const struct engy_verdict *v);
const char *engy_store_epoch_bad(const struct engy_epoch_rec *e,
				 const char *payload, const char *aggregates);

/*
 * A query as a plugin runs it: *@in copied into *@q (a shorter, older
 * struct zero-extended), limit 0 made 100 and capped at @max_rows, an
 * until_ms of 0 made "no end" (INT64_MAX).  0, or -EINVAL when @in is
 * NULL or too short (a verdict query: or its miner is not terminated).
 */
int engy_store_log_query_in(const struct engy_log_query *in, uint32_t max_rows,
			    struct engy_log_query *q);
int engy_store_verdict_query_in(const struct engy_verdict_query *in,
				uint32_t max_rows,
				struct engy_verdict_query *q);

#endif /* ENGY_STORECHECK_H */
