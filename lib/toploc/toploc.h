/* SPDX-License-Identifier: MIT */
/*
 * TOPLOC proofs (specs/toploc.md), byte-compatible with the reference
 * `toploc` library: per chunk of rows, the top-k elements by |x| of the
 * bf16 hidden states are committed as the unique polynomial of degree < k
 * over GF(65497) through (index mod m, bf16 bits), serialised as
 * u16be(m) || u16be(c_0) || ... || u16be(c_{k-1}).
 *
 * Everything here is pure CPU code with no global mutable state (the
 * inverse table is built once, thread-safely): any thread may call any
 * function, each with its own workspace.
 */
#ifndef ENGY_TOPLOC_H
#define ENGY_TOPLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <engy/proof.h>
#include <engy/types.h>

#define ENGY_TOPLOC_PRIME    65497u /* the field; also the largest modulus */
#define ENGY_TOPLOC_MAX_TOPK 4096u  /* bounds O(k^2) work and proof size */
#define ENGY_TOPLOC_MAX_DBS  65536u

/* Proof parameters; part of the model spec and of each commitment. */
struct engy_toploc_params {
	uint32_t topk;	   /* k: points per proof */
	uint32_t dbs;	   /* decode_batching_size: rows per proof */
	bool skip_prefill; /* false: one more proof over the prefill rows */
};

/* One chunk's statistics, as the reference's VerificationResult. */
struct engy_toploc_stats {
	uint32_t exp_mismatches;
	double mant_mean;   /* 2^64 when no exponent matched */
	double mant_median; /* upper median sorted[n/2]; 2^64 likewise */
};

/*
 * Why a proof is unusable.  Functions that judge untrusted proofs return
 * one of these (>= 0) or a negative errno for a local failure.
 */
enum engy_toploc_defect {
	ENGY_TOPLOC_OK = 0,
	ENGY_TOPLOC_BAD_JSON,	   /* commitment is not the expected object */
	ENGY_TOPLOC_TOPK_MISMATCH, /* commitment topk != configured */
	ENGY_TOPLOC_DBS_MISMATCH,  /* decode_batching_size != configured */
	ENGY_TOPLOC_PREFILL_MISMATCH, /* skip_prefill != configured */
	ENGY_TOPLOC_N_TOKENS,	      /* n_tokens != the rows recomputed */
	ENGY_TOPLOC_CHUNK_COUNT,      /* number of proofs != chunks */
	ENGY_TOPLOC_NO_CHUNKS,	      /* nothing to check */
	ENGY_TOPLOC_BAD_BASE64,
	ENGY_TOPLOC_BAD_LENGTH,	 /* decoded length != 2 + 2k */
	ENGY_TOPLOC_NULL_PROOF,	 /* modulus 0: the prover failed */
	ENGY_TOPLOC_BAD_MODULUS, /* modulus > 65497: never produced */
	ENGY_TOPLOC_BAD_COEFF,	 /* coefficient >= 65497: not canonical */
	ENGY_TOPLOC_SHORT_CHUNK, /* a chunk holds fewer than k elements */
	ENGY_TOPLOC_DEFECT_MAX
};

/* The short reason string of @d ("ok", "bad_base64", ...). */
const char *engy_toploc_defect_str(int d);

static inline size_t engy_toploc_proof_len(uint32_t topk)
{
	return 2 + 2 * (size_t)topk;
}

/* engy_toploc_params_check() - 0, or -EINVAL for out-of-range values. */
int engy_toploc_params_check(const struct engy_toploc_params *p);

/* ---- Field and polynomial primitives (exposed for tests). ---- */

/*
 * engy_toploc_modulus() - the largest m <= 65497 such that all @idx[i] mod m
 * are distinct (the reference's injective-modulus search), or 0 when none
 * is (only possible for adversarial index sets; then a null proof).
 */
uint32_t engy_toploc_modulus(const uint64_t *idx, size_t k);

/*
 * engy_toploc_interpolate() - ascending monomial coefficients (each in
 * [0, 65496]) of the polynomial of degree < @k over GF(65497) through
 * (@x[i], @y[i] mod 65497).  The @x must be distinct and < 65497.
 * @work holds 2 * @k entries.  Returns 0 or -EINVAL (k == 0, or an x out of
 * range; duplicate x give a meaningless result).
 */
int engy_toploc_interpolate(const uint32_t *x, const uint16_t *y, size_t k,
			    uint16_t *coeffs, uint32_t *work);

/*
 * engy_toploc_interpolate_scalar() - the same on the portable path, which
 * every CPU runs; engy_toploc_interpolate() and the chunk functions use
 * the fastest path the CPU has (engy_toploc_simd()), with the same output.
 */
int engy_toploc_interpolate_scalar(const uint32_t *x, const uint16_t *y,
				   size_t k, uint16_t *coeffs, uint32_t *work);

/*
 * engy_toploc_simd() - the path chosen for this process: "avx2" (x86-64
 * CPUs with AVX2) or "scalar".  ENGY_TOPLOC_SIMD=scalar in the environment
 * forces the portable path.
 */
const char *engy_toploc_simd(void);

/* engy_toploc_eval() - sum c_i x^i mod 65497; coefficients < 65497. */
uint32_t engy_toploc_eval(const uint16_t *coeffs, size_t k, uint32_t x);

/*
 * engy_toploc_from_points() - one proof from top-k indices and bf16 bits:
 * the modulus search, interpolation at idx mod m, serialisation into
 * @proof (engy_toploc_proof_len(k) bytes).  When no injective modulus
 * exists it writes the reference's null proof and returns -ERANGE.
 */
int engy_toploc_from_points(const uint64_t *idx, const uint16_t *y, size_t k,
			    uint8_t *proof);

/*
 * engy_toploc_proof_decode() - check a serialised proof for @topk points
 * and unpack it.  Returns ENGY_TOPLOC_OK or the defect (length, null
 * proof, modulus or coefficient out of range).
 */
int engy_toploc_proof_decode(const uint8_t *proof, size_t len, uint32_t topk,
			     uint32_t *modulus, uint16_t *coeffs);

/* ---- Chunks: a contiguous run of bf16 values. ---- */

/* A per-thread workspace for one topk; reuse it across chunks. */
struct engy_toploc_ws;
struct engy_toploc_ws *engy_toploc_ws_new(uint32_t topk);
void engy_toploc_ws_free(struct engy_toploc_ws *ws);

/* engy_toploc_ws_force_scalar() - @ws takes the portable path (tests). */
void engy_toploc_ws_force_scalar(struct engy_toploc_ws *ws);

/*
 * engy_toploc_topk() - indices of the workspace's topk largest |v| (bf16
 * bits; NaN above infinity above every finite value, ties at the boundary
 * to the lower index), written to @idx in ascending index order.
 * Returns 0 or -EINVAL when @n is under topk.
 */
int engy_toploc_topk(struct engy_toploc_ws *ws, const uint16_t *v, size_t n,
		     uint64_t *idx);

/*
 * engy_toploc_prove_chunk() - the proof of one chunk of @n bf16 values
 * into @proof (engy_toploc_proof_len(topk) bytes).  Returns 0, -EINVAL
 * when @n < topk, or -ERANGE after writing a null proof.
 */
int engy_toploc_prove_chunk(struct engy_toploc_ws *ws, const uint16_t *v,
			    size_t n, uint8_t *proof);

/*
 * engy_toploc_verify_chunk() - the reference statistics of one chunk of
 * the verifier's own values against a serialised proof.  Indices are
 * always reduced mod the proof's modulus; signs are not compared.
 * Returns ENGY_TOPLOC_OK (with @st filled) or a defect.
 */
int engy_toploc_verify_chunk(struct engy_toploc_ws *ws, const uint16_t *v,
			     size_t n, const uint8_t *proof, size_t len,
			     struct engy_toploc_stats *st);

/* ---- Requests: engy_rows -> chunks (lib/toploc/toploc_rows.c). ---- */

/*
 * engy_toploc_n_chunks() - how many proofs @rows take under @p: one per
 * decode_batching_size decode rows (the last may be shorter), plus one for
 * the prefill rows unless skip_prefill.  Returns 0 or -EINVAL for
 * malformed rows.
 */
int engy_toploc_n_chunks(const struct engy_rows *rows,
			 const struct engy_toploc_params *p, size_t *n);

/*
 * engy_toploc_prove_rows() - every proof of a request, concatenated into
 * one malloc'd buffer of *@n * engy_toploc_proof_len(topk) bytes (NULL
 * when *@n is 0).  f32 rows are cast to bf16 first, exactly as torch.
 * Returns 0, -EINVAL (bad rows or params, a chunk under topk elements) or
 * -ENOMEM.  A chunk with no injective modulus gets a null proof.
 */
int engy_toploc_prove_rows(const struct engy_rows *rows,
			   const struct engy_toploc_params *p, uint8_t **proofs,
			   size_t *n);

/* A request's verdict with per-chunk statistics. */
struct engy_toploc_report {
	int verdict;	    /* enum engy_verdict_kind */
	const char *reason; /* static: "ok", "exp_mismatch", ... */
	int defect;	    /* enum engy_toploc_defect */
	long bad_proof;	    /* proof that was unusable, or -1 */
	size_t n_chunks;    /* chunks judged (entries in chunks) */
	size_t n_pass;	    /* chunks within the limits */
	struct engy_toploc_stats *chunks; /* malloc'd */
};

void engy_toploc_report_free(struct engy_toploc_report *rep);

/*
 * engy_toploc_chunk_fail() - why one chunk is outside @lim, or NULL when it
 * passes: at most max_exp_mismatches, and the mantissa mean / median at
 * most their limits when those are set (non-zero).  Reasons:
 * "exp_mismatch", "mant_mean", "mant_median".
 */
const char *engy_toploc_chunk_fail(const struct engy_toploc_stats *st,
				   const struct engy_proof_limits *lim);

/*
 * engy_toploc_verify_rows() - verify @n_proofs base64 proofs against the
 * verifier's own @rows and decide: PASS when at least min_pass_ratio of
 * the chunks pass, CHEAT otherwise, UNPROVEN for any unusable proof.
 * Returns 0 (with @rep filled; release it with engy_toploc_report_free),
 * -EINVAL for malformed rows or params, or -ENOMEM.
 */
int engy_toploc_verify_rows(const struct engy_rows *rows,
			    const struct engy_toploc_params *p,
			    const char *const *b64, const size_t *b64_len,
			    size_t n_proofs,
			    const struct engy_proof_limits *lim,
			    struct engy_toploc_report *rep);

/* ---- The commitment member (JSON, lib/toploc/toploc_json.c). ---- */

/*
 * engy_toploc_commitment_json() - {"proofs":[...],"topk":K,
 * "decode_batching_size":B,"skip_prefill":S,"n_tokens":M} for @n proofs
 * (base64-encoded here) as a malloc'd string in @json.
 */
int engy_toploc_commitment_json(const struct engy_toploc_params *p,
				const uint8_t *proofs, size_t n,
				uint32_t n_tokens, char **json);

/*
 * engy_toploc_verify_json() - parse an untrusted commitment member, check
 * its parameters against @p and the rows, and verify as above.  A
 * malformed member gives UNPROVEN, never an error.
 */
int engy_toploc_verify_json(const struct engy_rows *rows,
			    const struct engy_toploc_params *p,
			    const char *json, size_t len,
			    const struct engy_proof_limits *lim,
			    struct engy_toploc_report *rep);

/* engy_toploc_report_json() - @rep as the verdict's detail JSON. */
int engy_toploc_report_json(const struct engy_toploc_report *rep, char **json);

#endif /* ENGY_TOPLOC_H */
