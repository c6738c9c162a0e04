/* SPDX-License-Identifier: MIT */
/*
 * Proof kind: one scheme, both sides (specs/verification.md).  The miner's
 * flow calls prove() on the rows of a finished request; the auditor's flow
 * calls verify() with the rows its own backend recomputed.  Both are pure
 * CPU work: the flows run them on the worker pool.
 *
 * A challenged scheme (1.4; the GEMM audit, specs/gemm-audit.md) instead
 * has challenge() and check(): the miner's commitment member is built by
 * its backend, the auditor asks for an opening after the commitment is
 * held and judges it.  Such a plugin may leave prove() and verify() NULL;
 * a plugin has prove() and verify(), or challenge() and check(), or all.
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
	/* 1.4: the GEMM audit's sizes (0 = the scheme's default), read
	 * only when @size covers them. */
	uint32_t gemm_layers;	   /* layers challenged (lm_head counts) */
	uint32_t gemm_tokens;	   /* positions per challenged layer */
	uint32_t gemm_projections; /* Freivalds projections per product */
	uint32_t gemm_spots;	   /* elementwise recomputes per product */
	double gemm_z;		   /* tolerance multiplier */
	double gemm_c_el;	   /* elementwise tolerance multiplier */
	double gemm_rate; /* share of requests audited (the caller's) */
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
	 * Required unless the scheme is challenged (challenge + check).
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
	 * Required unless the scheme is challenged (challenge + check).
	 */
	int (*verify)(void *inst, const struct engy_rows *rows,
		      const char *json, size_t json_len,
		      const struct engy_proof_limits *limits,
		      struct engy_proof_result *out);

	/**
	 * challenge() - (1.4) the challenge for one held commitment.
	 * @commitment: the whole commitment JSON (untrusted bytes).
	 * @request_id: the request's id (bound into the seed).
	 * @nonce:      32 fresh random bytes the caller drew after it held
	 *              the commitment (it keeps them for check()).
	 * @limits:     sizes; NULL = the instance's configured ones.
	 * @json:       receives the challenge JSON text (malloc'd) to send
	 *              the miner, or NULL when the commitment cannot be
	 *              challenged; then @out says why (UNPROVEN, e.g.
	 *              `no_gemm`, or CHEAT when the commitment contradicts
	 *              itself).
	 * Returns 0, or a negative errno for a local failure (memory).
	 * Context: any thread (the worker pool); reentrant.
	 * Optional; with check(), makes prove()/verify() optional.
	 */
	int (*challenge)(void *inst, const char *commitment, size_t len,
			 const char *request_id, const uint8_t nonce[32],
			 const struct engy_proof_limits *limits, char **json,
			 struct engy_proof_result *out);

	/**
	 * check() - (1.4) judge the miner's opening of challenge().
	 * @commitment, @request_id, @nonce, @limits: as given to challenge().
	 * @opening:    the miner's answer (untrusted bytes), or NULL when
	 *              none came: then @out is UNPROVEN `no_opening` and the
	 *              caller applies its own non-answer rule.
	 * @out:        PASS; CHEAT with the reason (`product`, `path`,
	 *              `routing`, ...) and evidence in @out->detail
	 *              (metadata only); UNPROVEN when it cannot be judged
	 *              (`malformed`, ...).
	 * Returns 0, or a negative errno for a local failure (memory).
	 * Context: any thread (the worker pool); reentrant.
	 * Optional (with challenge()).
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
