/* SPDX-License-Identifier: MIT */
/*
 * Proof kind: one scheme, both sides (specs/verification.md).  The miner's
 * flow calls prove() on the rows of a finished request; the auditor's flow
 * calls verify() with the rows its own backend recomputed.  Both are pure
 * CPU work: the flows run them on the worker pool.
 */
#ifndef ENGY_PROOF_H
#define ENGY_PROOF_H

#include <stddef.h>
#include <stdint.h>

#include <engy/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct engy_proof_result - what verify() found.
 * @verdict: enum engy_verdict_kind.
 * @reason:  short machine-readable reason (`ok`, `exp_mismatch`,
 *           `null_proof`, `bad_base64`, ...), NUL-terminated.
 * @detail:  JSON text with the scheme's statistics (per chunk), malloc'd,
 *           released by the caller with free(); may be NULL.
 */
struct engy_proof_result {
	int verdict;
	char reason[64];
	char *detail;
};

/**
 * struct engy_proof_limits - acceptance thresholds from the model spec.
 * Fields a scheme does not use are ignored; 0 means "not set" for the
 * optional ones.  Never constants in code: they come from config or spec.
 */
struct engy_proof_limits {
	uint32_t size;		     /* sizeof(struct engy_proof_limits) */
	uint32_t max_exp_mismatches; /* toploc_v: per chunk */
	double min_pass_ratio;	     /* toploc_p: share of chunks passing */
	double max_mant_mean;	     /* optional, 0 = not checked */
	double max_mant_median;	     /* optional, 0 = not checked */
	/* appended in 1.4 (check @size): the GEMM audit's sizes */
	uint32_t gemm_layers, gemm_tokens, gemm_projections, gemm_spots;
	double gemm_z, gemm_c_el, gemm_rate;
};

struct engy_proof_ops {
	uint32_t size;	    /* sizeof(struct engy_proof_ops) */
	const char *scheme; /* key in the commitment: "toploc" */

	/**
	 * prove() - build the scheme's commitment member for one request.
	 * @rows: the request's final hidden states (prefill rows first).
	 * @json: receives a JSON object text (malloc'd) that the flow puts
	 *        at commitment[scheme], e.g. {"proofs":[...],"topk":128,...}.
	 * Context: any thread (the worker pool); reentrant.
	 * Required.
	 */
	int (*prove)(void *inst, const struct engy_rows *rows, char **json);

	/**
	 * verify() - check a commitment member against recomputed rows.
	 * @rows:   the auditor's own rows for prompt + output.
	 * @json:   commitment[scheme] as received (untrusted bytes).
	 * @limits: thresholds; NULL = the instance's configured ones.
	 * @out:    the verdict; malformed proofs give UNPROVEN, not an error.
	 * Returns 0, or a negative errno for a local failure (memory).
	 * Context: any thread (the worker pool); reentrant.
	 * Required.
	 */
	int (*verify)(void *inst, const struct engy_rows *rows,
		      const char *json, size_t json_len,
		      const struct engy_proof_limits *limits,
		      struct engy_proof_result *out);

	/* appended in 1.4 (check @size); a scheme with challenge() may
	 * leave prove()/verify() NULL. */
	/**
	 * challenge() - @commitment: the whole commitment JSON (untrusted).
	 * 0 and *@json set: ask the miner.  0 and *@json NULL: not
	 * challengeable, *@out says why (unproven, e.g. no_gemm).
	 */
	int (*challenge)(void *inst, const char *commitment, size_t len,
			 const char *request_id, const uint8_t nonce[32],
			 const struct engy_proof_limits *limits, char **json,
			 struct engy_proof_result *out);
	/**
	 * check() - @opening NULL: no answer came (the caller says why in a
	 * reason it sets itself when the result is unproven/cheat by its
	 * rule).
	 */
	int (*check)(void *inst, const char *commitment, size_t len,
		     const char *request_id, const uint8_t nonce[32],
		     const char *opening, size_t olen,
		     const struct engy_proof_limits *limits,
		     struct engy_proof_result *out);
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_PROOF_H */
