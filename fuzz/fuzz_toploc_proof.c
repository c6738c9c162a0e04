/* SPDX-License-Identifier: MIT */
/*
 * Fuzz TOPLOC proof decoding: the input is tried as a commitment member
 * (JSON, then base64 proofs, then proof bytes), as one base64 proof, and
 * as raw proof bytes, against fixed rows.  Every input must end in a
 * verdict or a defect; the harness checks the invariants it can.
 * Round trips: a proof that decodes serialises back (big-endian modulus,
 * then the k coefficients, specs/toploc.md) to the same bytes; and the
 * input read as bf16 values is proven and verified against itself, which
 * must give 0 exponent mismatches and 0 mantissa error (or, when no
 * injective modulus exists, a null proof that verify calls one).  Chunks
 * holding a bf16 value whose bits are 65497 or more (negative NaNs with a
 * large payload) are left out: the scheme interpolates the bits over
 * GF(65497), so such a value cannot survive its own proof (found by this
 * oracle: 3 of 8 mismatches on a chunk with 0xff78 and 0xffff).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "fuzz.h"
#include "toploc.h"

#define HIDDEN 16
#define N_ROWS 5 /* 1 prefill row + 4 decode rows: 2 chunks of 2 */
#define TOPK   8

static uint16_t rows_data[N_ROWS * HIDDEN];

/*
 * The rows the seed corpus was proven from: written little-endian to a
 * file, `engyctl toploc prove --topk 8 --dbs 2 --hidden 16 --prefill 1`
 * gives the two proofs in fuzz/corpus/toploc_proof/commitment.json.
 */
static void init_rows(void)
{
	uint32_t s = 12345;
	size_t i;

	for (i = 0; i < N_ROWS * HIDDEN; i++) {
		s = s * 1103515245u + 12345u;
		/* bf16 in [-8, 8): exponents 0x78..0x82, any mantissa. */
		rows_data[i] = (uint16_t)(((s >> 16) & 0x8000) |
					  (0x3C00 + ((s >> 8) & 0x7FF)));
	}
}

/* The input's bf16 values proven as one chunk, verified on the same. */
static void prove_verify(struct engy_toploc_ws *ws, const uint8_t *data,
			 size_t size)
{
	static uint16_t v[4096];
	uint8_t proof[2 + 2 * TOPK];
	struct engy_toploc_stats st;
	size_t n = size / 2, i;
	int rc, d;

	if (n < TOPK)
		return;
	if (n > sizeof(v) / sizeof(v[0]))
		n = sizeof(v) / sizeof(v[0]);
	for (i = 0; i < n; i++) {
		v[i] = (uint16_t)(data[2 * i] | data[2 * i + 1] << 8);
		/* bf16 bits from 65497 up (negative NaNs only) are not
		 * field elements: the scheme cannot carry them (below). */
		if (v[i] >= ENGY_TOPLOC_PRIME)
			return;
	}
	rc = engy_toploc_prove_chunk(ws, v, n, proof);
	if (rc && rc != -ERANGE)
		abort();
	d = engy_toploc_verify_chunk(ws, v, n, proof, sizeof(proof), &st);
	if (rc == -ERANGE) {
		if (d != ENGY_TOPLOC_NULL_PROOF)
			abort();
		return;
	}
	if (d != ENGY_TOPLOC_OK || st.exp_mismatches != 0 ||
	    st.mant_mean != 0 || st.mant_median != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct engy_toploc_params p = { TOPK, 2, true };
	static const struct engy_proof_limits lim = {
		.size = sizeof(lim),
		.max_exp_mismatches = 2,
		.min_pass_ratio = 0.5,
		.max_mant_mean = 10,
		.max_mant_median = 8,
	};
	static struct engy_toploc_ws *ws;
	struct engy_rows rows = { rows_data, ENGY_DTYPE_BF16, N_ROWS, HIDDEN,
				  1 };
	struct engy_toploc_report rep;
	struct engy_toploc_stats st;
	uint8_t out[64];
	uint16_t coeffs[TOPK];
	uint32_t m;
	size_t n;
	char *detail;
	int d;

	if (!ws) {
		init_rows();
		ws = engy_toploc_ws_new(TOPK);
		if (!ws)
			abort();
	}
	if (engy_toploc_verify_json(&rows, &p, (const char *)data, size, &lim,
				    &rep))
		abort();
	if (rep.verdict < ENGY_VERDICT_PASS ||
	    rep.verdict > ENGY_VERDICT_UNPROVEN || !rep.reason ||
	    rep.n_pass > rep.n_chunks || rep.n_chunks > 2)
		abort();
	if (engy_toploc_report_json(&rep, &detail) == 0)
		free(detail);
	engy_toploc_report_free(&rep);

	if (engy_base64_decode(out, sizeof(out), (const char *)data, size,
			       &n) == 0) {
		char again[96];

		/* Strict decoding: re-encoding gives the same text back. */
		if (engy_base64_encode(again, out, n) != size ||
		    memcmp(again, data, size) != 0)
			abort();
		d = engy_toploc_verify_chunk(ws, rows_data + HIDDEN, 2 * HIDDEN,
					     out, n, &st);
		if (d < 0 || d >= ENGY_TOPLOC_DEFECT_MAX)
			abort();
	}

	d = engy_toploc_verify_chunk(ws, rows_data + HIDDEN, 2 * HIDDEN, data,
				     size, &st);
	if (d < 0 || d >= ENGY_TOPLOC_DEFECT_MAX ||
	    (d == ENGY_TOPLOC_OK && st.exp_mismatches > TOPK))
		abort();
	d = engy_toploc_proof_decode(data, size, TOPK, &m, coeffs);
	if (d == ENGY_TOPLOC_OK && (m == 0 || m > ENGY_TOPLOC_PRIME))
		abort();
	if (d == ENGY_TOPLOC_OK) {
		uint8_t again[2 + 2 * TOPK];
		size_t i;

		again[0] = (uint8_t)(m >> 8);
		again[1] = (uint8_t)m;
		for (i = 0; i < TOPK; i++) {
			again[2 + 2 * i] = (uint8_t)(coeffs[i] >> 8);
			again[3 + 2 * i] = (uint8_t)coeffs[i];
		}
		if (size != sizeof(again) || memcmp(again, data, size))
			abort();
	}
	prove_verify(ws, data, size);
	return 0;
}
