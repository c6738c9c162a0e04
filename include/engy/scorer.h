/* SPDX-License-Identifier: MIT */
/*
 * Scorer kind: settles a closed epoch (specs/settlement.md §2-§4,
 * specs/scoring.md).  The auditor's flow reduces the epoch's slice of the
 * request log and its verdicts to one aggregate row per (miner, model),
 * hands them to settle() and signs the result_json it gets back; it
 * publishes the same aggregates (aggregates()) so that anyone can
 * recompute the epoch with `engyctl epoch score` and falsify a bad one.
 *
 * Everything here is integers: a settlement is consensus, and floating
 * point is not reproducible across implementations.  Every count, token
 * sum, rate and millisecond value is at most ENGY_SCORE_MAX_INT so that it
 * survives any JSON reader exactly.
 *
 * Ops are appended, never reordered (see plugin.h).
 */
#ifndef ENGY_SCORER_H
#define ENGY_SCORER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <engy/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ENGY_SCORE_MAX_INT    9007199254740991ULL /* 2^53 - 1 */
#define ENGY_SCORE_HOTKEY_MAX 64		  /* hotkey text plus NUL */
#define ENGY_SCORE_WEIGHT_SUM 65535u		  /* a weight vector's total */

/* One histogram bucket: @count (>= 1) samples of exactly @ms milliseconds. */
struct engy_score_bucket {
	uint64_t ms;
	uint64_t count;
};

/**
 * struct engy_epoch_model - one model's settlement terms.
 * @model:            the buyer-facing model name ([A-Za-z0-9._:/@+-], 1..128).
 * @score_rate:       µUSD per 1k tokens, set by the operator (not the
 *                    price card).
 * @qual_ttft_p99_ms: the TTFT gate fails when the row's p99 is above it.
 * @qual_tpot_p99_ms: the TPOT gate fails when the row's p99 is above it.
 */
struct engy_epoch_model {
	const char *model;
	uint64_t score_rate;
	uint64_t qual_ttft_p99_ms;
	uint64_t qual_tpot_p99_ms;
};

/**
 * struct engy_epoch_row - one (miner, model) pair's epoch aggregates.
 * @hotkey:  the miner's SS58 hotkey.
 * @uid:     its uid (0..65535) when the epoch closed; a hotkey has one.
 * @model:   a model of the input's models table.
 * @counted: counted requests: HTTP 2xx and cost_micro > 0.
 * @tokens:  Σ prompt_tokens + completion_tokens over the counted requests
 *           (0 when @counted is 0).
 * @n_2xx, @n_499, @n_502, @n_504: eligible (buyer, non-free, non-probe)
 *           requests by status; @counted <= @n_2xx.
 * @ttft, @n_ttft: TTFT histogram of the counted requests, ascending @ms,
 *           at most @counted samples in all.
 * @tpot, @n_tpot: TPOT histogram, likewise.
 * @v_pass, @v_cheat, @v_unproven: verdicts rendered on this pair's
 *           sampled requests (the cheat gate sums them per miner).
 */
struct engy_epoch_row {
	const char *hotkey;
	uint32_t uid;
	const char *model;
	uint64_t counted;
	uint64_t tokens;
	uint64_t n_2xx;
	uint64_t n_499;
	uint64_t n_502;
	uint64_t n_504;
	const struct engy_score_bucket *ttft;
	size_t n_ttft;
	const struct engy_score_bucket *tpot;
	size_t n_tpot;
	uint64_t v_pass;
	uint64_t v_cheat;
	uint64_t v_unproven;
};

/**
 * struct engy_epoch_params - the gates' thresholds and minimum samples.
 * A gate with fewer samples than its minimum (and always one with none)
 * passes.  Defaults in brackets (engy_score_params_default()).
 * @acceptance_min_bp:      fails when 2xx / (2xx + 502 + 504) is below
 *                          this many basis points [9900].
 * @cheat_max_bp:           fails when cheat / (pass + cheat), per miner,
 *                          is above this many basis points [100].
 * @acceptance_min_samples: 2xx + 502 + 504 [100].
 * @ttft_min_samples:       TTFT samples [100].
 * @tpot_min_samples:       TPOT samples [100].
 * @cheat_min_samples:      pass + cheat verdicts of the miner [100].
 */
struct engy_epoch_params {
	uint32_t size; /* sizeof(struct engy_epoch_params) */
	uint32_t acceptance_min_bp;
	uint32_t cheat_max_bp;
	uint64_t acceptance_min_samples;
	uint64_t ttft_min_samples;
	uint64_t tpot_min_samples;
	uint64_t cheat_min_samples;
};

/**
 * struct engy_epoch_input - a closed epoch, borrowed for the call.
 * @netuid, @epoch_index: written into result_json (epoch <= 2^53 - 1).
 * @owner_hotkey: the subnet owner's SS58 hotkey, the burn target.
 * @params: NULL: the scorer instance's configured ones.
 * @models: the settlement terms of every model a row names.
 * @rows:   one per (miner, model) pair, any order.
 */
struct engy_epoch_input {
	uint32_t size; /* sizeof(struct engy_epoch_input) */
	uint16_t netuid;
	uint64_t epoch_index;
	const char *owner_hotkey;
	const struct engy_epoch_params *params;
	const struct engy_epoch_model *models;
	size_t n_models;
	const struct engy_epoch_row *rows;
	size_t n_rows;
};

/* The gates in evaluation order; a row's gate_reason is the first failed. */
enum engy_gate {
	ENGY_GATE_OK = 0,	  /* "ok" */
	ENGY_GATE_ACCEPTANCE = 1, /* "acceptance" */
	ENGY_GATE_TTFT_P99 = 2,	  /* "ttft_p99" */
	ENGY_GATE_TPOT_P99 = 3,	  /* "tpot_p99" */
	ENGY_GATE_CHEAT = 4,	  /* "cheat" */
};

/**
 * struct engy_epoch_row_result - what settle() found for one input row.
 * @score:       floor(tokens * score_rate / 1000), or 0 when a gate failed.
 * @gate:        enum engy_gate.
 * @accept_bp:   floor(2xx * 10000 / (2xx + 502 + 504)); 10000 when none.
 * @ttft_p99_ms: nearest-rank p99 of the TTFT samples; 0 when none.
 * @tpot_p99_ms: likewise for TPOT.
 */
struct engy_epoch_row_result {
	uint64_t score;
	uint32_t gate;
	uint32_t accept_bp;
	uint64_t ttft_p99_ms;
	uint64_t tpot_p99_ms;
};

/* One entry of the weight vector. */
struct engy_epoch_weight {
	char hotkey[ENGY_SCORE_HOTKEY_MAX];
	uint32_t weight; /* 1..65535; the entries sum to 65535 */
};

/**
 * struct engy_epoch_result - a settled epoch.  Members are malloc'd by
 * the scorer and released by the caller: engy_epoch_result_release().
 * @result_json:  the canonical result (specs/scoring.md §6), NUL-terminated;
 *                its exact @result_len bytes are what is digested and signed.
 * @weights:      the vector in result_json's order.
 * @rows:         one per input row, in the input's order.
 * @total_score:  Σ row scores.
 * @burn:         no score anywhere: the whole 65535 went to the owner.
 * @error:        on -EINVAL or -ERANGE, the field and why, one line.
 */
struct engy_epoch_result {
	char *result_json;
	size_t result_len;
	struct engy_epoch_weight *weights;
	size_t n_weights;
	struct engy_epoch_row_result *rows;
	size_t n_rows;
	uint64_t total_score;
	bool burn;
	char error[192];
};

static inline void engy_epoch_result_release(struct engy_epoch_result *r)
{
	free(r->result_json);
	free(r->weights);
	free(r->rows);
	r->result_json = NULL;
	r->weights = NULL;
	r->rows = NULL;
	r->result_len = r->n_weights = r->n_rows = 0;
}

struct engy_scorer_ops {
	uint32_t size; /* sizeof(struct engy_scorer_ops) */
	/* The rule set, also written into result_json: "engy-sn53-v1". */
	const char *rules;

	/**
	 * settle() - score a closed epoch and build its weight vector.
	 * @in:  the epoch (borrowed); validated field by field.
	 * @out: zeroed by settle() first; on success holds the result.
	 * Returns 0; -EINVAL for bad input or -ERANGE for a sum past
	 * ENGY_SCORE_MAX_INT, with the field named in @out->error (nothing
	 * else of @out allocated); -ENOMEM.
	 * Context: any thread (the worker pool); reentrant.
	 * Required.
	 */
	int (*settle)(void *inst, const struct engy_epoch_input *in,
		      struct engy_epoch_result *out);

	/**
	 * aggregates() - the public aggregates document of @in
	 * (specs/scoring.md §5), canonical: what settle() scored, with the
	 * parameters it used, so that `engyctl epoch score` recomputes the
	 * same result_json from it.
	 * @json: receives the NUL-terminated text (malloc'd).
	 * @why:  on -EINVAL, the field and why; may be NULL.
	 * Returns 0, -EINVAL or -ENOMEM.
	 * Context: any thread; reentrant.
	 * Required.
	 */
	int (*aggregates)(void *inst, const struct engy_epoch_input *in,
			  char **json, char *why, size_t whylen);
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_SCORER_H */
