// SPDX-License-Identifier: MIT
/*
 * Fuzz the public aggregates reader and the settlement behind it: any
 * input is refused with a reason or settles.  A settled epoch must hold
 * the invariants of specs/scoring.md (the weights sum to 65535, burn
 * exactly when nothing scored, result_json passes the light validator's
 * rules) and its canonical aggregates must read back to the same bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "epoch_sign.h"
#include "fuzz.h"
#include "score.h"

#define OWNER "5HTzEPr3W2R93FhiZ4NRM2HWcdg2RY2wu7idwwp4Un8U9gKX"

static void check_result(const struct engy_epoch_input *in,
			 const struct engy_epoch_result *r)
{
	uint64_t sum = 0, total = 0;
	size_t i;

	if (!r->result_json || strlen(r->result_json) != r->result_len ||
	    !r->n_weights || r->n_rows != in->n_rows)
		abort();
	for (i = 0; i < r->n_weights; i++) {
		if (r->weights[i].weight < 1 || r->weights[i].weight > 65535)
			abort();
		sum += r->weights[i].weight;
	}
	for (i = 0; i < r->n_rows; i++) {
		if (r->rows[i].gate != ENGY_GATE_OK && r->rows[i].score)
			abort();
		total += r->rows[i].score;
	}
	if (sum != 65535 || total != r->total_score || r->burn != !total ||
	    (r->burn && (r->n_weights != 1 ||
			 strcmp(r->weights[0].hotkey, in->owner_hotkey))))
		abort();
	if (engy_epoch_result_check(r->result_json, r->result_len, in->netuid,
				    in->epoch_index, NULL, 0))
		abort();
}

/* The canonical aggregates read back and settle to the same bytes. */
static void round_trip(const struct engy_epoch_input *in,
		       const struct engy_epoch_result *r)
{
	struct engy_epoch_result r2;
	struct engy_score_doc *d2;
	char *agg = NULL;

	if (engy_score_aggregates_json(in, NULL, &agg, NULL, 0))
		abort();
	if (engy_score_parse(agg, strlen(agg), &d2, NULL, 0))
		abort();
	if (engy_score_settle(&d2->in, NULL, &r2) ||
	    r2.result_len != r->result_len ||
	    memcmp(r2.result_json, r->result_json, r->result_len))
		abort();
	engy_epoch_result_release(&r2);
	engy_score_doc_free(d2);
	free(agg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_epoch_result r;
	struct engy_score_doc *d;
	char why[256] = "";
	int rc;

	rc = engy_score_parse((const char *)data, size, &d, why, sizeof(why));
	if (rc) {
		if (d || (rc != -ENOMEM && !why[0]))
			abort();
		return 0;
	}
	if (!d->have_owner)
		d->in.owner_hotkey = OWNER;
	rc = engy_score_settle(&d->in, NULL, &r);
	if (rc) {
		if (!r.error[0] || r.result_json || r.weights || r.rows)
			abort();
	} else {
		check_result(&d->in, &r);
		round_trip(&d->in, &r);
		engy_epoch_result_release(&r);
	}
	engy_score_doc_free(d);
	return 0;
}
