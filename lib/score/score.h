/* SPDX-License-Identifier: MIT */
/*
 * Epoch scoring (specs/settlement.md §2-§4, specs/scoring.md): integer-only
 * settlement of per-(miner, model) aggregates into per-row scores, the
 * on-chain weight vector and the canonical result_json; the public
 * aggregates document both ways.  No floating point anywhere.
 */
#ifndef ENGY_SCORE_H
#define ENGY_SCORE_H

#include <stddef.h>
#include <stdint.h>

#include <engy/scorer.h>

#define ENGY_SCORE_RULES     "engy-sn53-v1"
#define ENGY_SCORE_MODEL_MAX 128    /* longest model name */
#define ENGY_SCORE_PCT	     99	    /* the latency gates' percentile */
#define ENGY_SCORE_BP	     10000u /* basis points in one */

/* The documented defaults of the gates (specs/scoring.md §3). */
void engy_score_params_default(struct engy_epoch_params *p);

/* "ok", "acceptance", "ttft_p99", "tpot_p99", "cheat"; NULL otherwise. */
const char *engy_gate_name(uint32_t gate);

/*
 * engy_score_percentile() - the nearest-rank @pct-th percentile (1..100)
 * of a histogram with ascending ms: the k-th smallest sample for
 * k = ceil(pct * n / 100), n the number of samples.  Returns 0,
 * -ENODATA when there is no sample, -EINVAL for a @pct out of range.
 */
int engy_score_percentile(const struct engy_score_bucket *b, size_t n,
			  uint32_t pct, uint64_t *out);

/*
 * engy_score_muldiv() - floor(@a * @b / @c) exactly (128-bit
 * intermediate).  Returns 0, -EDOM for @c == 0, -ERANGE when the
 * quotient does not fit 64 bits.
 */
int engy_score_muldiv(uint64_t a, uint64_t b, uint64_t c, uint64_t *out);

/*
 * engy_score_settle() - settle @in under @p (NULL: @in->params, else the
 * defaults).  As struct engy_scorer_ops.settle().
 */
int engy_score_settle(const struct engy_epoch_input *in,
		      const struct engy_epoch_params *p,
		      struct engy_epoch_result *out);

/*
 * engy_score_check() - validate @in and @p as settle() does, without
 * settling.  Returns 0, or -EINVAL / -ERANGE with the field in @why.
 */
int engy_score_check(const struct engy_epoch_input *in,
		     const struct engy_epoch_params *p, char *why,
		     size_t whylen);

/* A parsed aggregates document (engy_score_parse()). */
struct engy_score_doc {
	struct engy_epoch_input in;
	struct engy_epoch_params params;
	int have_netuid, have_epoch, have_owner;
	char owner[ENGY_SCORE_HOTKEY_MAX];
	void *priv; /* the storage behind in's pointers */
};

/*
 * engy_score_parse() - read an aggregates document (specs/scoring.md §5):
 * a strict JSON object, integers only (0..2^53-1), no unknown keys.
 * netuid, epoch_index and owner_hotkey may be absent (have_* tells);
 * absent params take the defaults.  On success *@out holds the document
 * (in.params points at its params); free it with engy_score_doc_free().
 * Returns 0, -EINVAL with the field and why in @why (one line), -ENOMEM.
 */
int engy_score_parse(const char *text, size_t len, struct engy_score_doc **out,
		     char *why, size_t whylen);

void engy_score_doc_free(struct engy_score_doc *d);

/*
 * engy_score_aggregates_json() - the canonical aggregates document of
 * @in under @p (NULL as in settle()): fixed key order, no spaces, rows
 * in settle()'s order, models by name.  @in must pass engy_score_check().
 * Returns 0, -EINVAL / -ERANGE with the field in @why, or -ENOMEM.
 */
int engy_score_aggregates_json(const struct engy_epoch_input *in,
			       const struct engy_epoch_params *p, char **json,
			       char *why, size_t whylen);

#endif /* ENGY_SCORE_H */
