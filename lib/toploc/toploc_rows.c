/* SPDX-License-Identifier: MIT */
/*
 * TOPLOC per request: cut engy_rows into chunks, prove them, verify them
 * and decide the verdict (specs/toploc.md).
 *
 * Chunks: unless skip_prefill, chunk 0 is every prefill row; then one
 * chunk per decode_batching_size decode rows, the last possibly shorter.
 * A chunk is its rows back to back, so element j*hidden + d is simply the
 * chunk's j*hidden + d-th value in memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "bf16.h"
#include "grow.h"
#include "toploc.h"

struct chunk {
	size_t first; /* first row */
	size_t n_rows;
};

static int rows_check(const struct engy_rows *rows)
{
	if (!rows || rows->hidden == 0 || rows->n_prefill > rows->n_rows ||
	    (rows->dtype != ENGY_DTYPE_F32 && rows->dtype != ENGY_DTYPE_BF16) ||
	    (rows->n_rows && !rows->data))
		return -EINVAL;
	return 0;
}

int engy_toploc_n_chunks(const struct engy_rows *rows,
			 const struct engy_toploc_params *p, size_t *n)
{
	size_t n_dec;

	if (rows_check(rows) || engy_toploc_params_check(p))
		return -EINVAL;
	n_dec = rows->n_rows - rows->n_prefill;
	*n = (n_dec + p->dbs - 1) / p->dbs + (p->skip_prefill ? 0 : 1);
	return 0;
}

static struct chunk chunk_at(const struct engy_rows *rows,
			     const struct engy_toploc_params *p, size_t i)
{
	struct chunk c;
	size_t end;

	if (!p->skip_prefill) {
		if (i == 0) {
			c.first = 0;
			c.n_rows = rows->n_prefill;
			return c;
		}
		i--;
	}
	c.first = rows->n_prefill + i * p->dbs;
	end = c.first + p->dbs;
	if (end > rows->n_rows)
		end = rows->n_rows;
	c.n_rows = end - c.first;
	return c;
}

/*
 * chunk_bf16() - the chunk's values as bf16: the rows themselves, or for
 * f32 rows their torch cast into *@buf (grown as needed).
 */
static const uint16_t *chunk_bf16(const struct engy_rows *rows, struct chunk c,
				  uint16_t **buf, size_t *cap)
{
	size_t n = c.n_rows * rows->hidden, i;
	const float *f;
	static const uint16_t none[1];

	if (rows->dtype == ENGY_DTYPE_BF16)
		return (const uint16_t *)rows->data + c.first * rows->hidden;
	if (n == 0)
		return none; /* an empty prefill chunk: no buffer needed */
	if (!engy_grow(buf, cap, n, sizeof(**buf)))
		return NULL;
	f = (const float *)rows->data + c.first * rows->hidden;
	for (i = 0; i < n; i++)
		(*buf)[i] = engy_bf16_from_f32(f[i]);
	return *buf;
}

int engy_toploc_prove_rows(const struct engy_rows *rows,
			   const struct engy_toploc_params *p, uint8_t **proofs,
			   size_t *n)
{
	struct engy_toploc_ws *ws = NULL;
	size_t n_chunks, i, plen, cap = 0;
	uint16_t *buf = NULL;
	uint8_t *out = NULL;
	int rc;

	*proofs = NULL;
	*n = 0;
	rc = engy_toploc_n_chunks(rows, p, &n_chunks);
	if (rc)
		return rc;
	if (n_chunks == 0)
		return 0;
	plen = engy_toploc_proof_len(p->topk);
	out = malloc(n_chunks * plen);
	ws = engy_toploc_ws_new(p->topk);
	if (!out || !ws) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n_chunks; i++) {
		struct chunk c = chunk_at(rows, p, i);
		const uint16_t *v = chunk_bf16(rows, c, &buf, &cap);

		if (!v) {
			rc = -ENOMEM;
			goto out;
		}
		rc = engy_toploc_prove_chunk(ws, v, c.n_rows * rows->hidden,
					     out + i * plen);
		if (rc == -ERANGE)
			rc = 0; /* a null proof, as the reference */
		if (rc)
			goto out;
	}
	*proofs = out;
	*n = n_chunks;
	out = NULL;
out:
	free(out);
	free(buf);
	engy_toploc_ws_free(ws);
	return rc;
}

void engy_toploc_report_free(struct engy_toploc_report *rep)
{
	if (!rep)
		return;
	free(rep->chunks);
	rep->chunks = NULL;
}

const char *engy_toploc_chunk_fail(const struct engy_toploc_stats *st,
				   const struct engy_proof_limits *lim)
{
	if (st->exp_mismatches > lim->max_exp_mismatches)
		return "exp_mismatch";
	if (lim->max_mant_mean > 0 && !(st->mant_mean <= lim->max_mant_mean))
		return "mant_mean";
	if (lim->max_mant_median > 0 &&
	    !(st->mant_median <= lim->max_mant_median))
		return "mant_median";
	return NULL;
}

static void unproven(struct engy_toploc_report *rep, int defect, long which)
{
	rep->verdict = ENGY_VERDICT_UNPROVEN;
	rep->defect = defect;
	rep->reason = engy_toploc_defect_str(defect);
	rep->bad_proof = which;
}

int engy_toploc_verify_rows(const struct engy_rows *rows,
			    const struct engy_toploc_params *p,
			    const char *const *b64, const size_t *b64_len,
			    size_t n_proofs,
			    const struct engy_proof_limits *lim,
			    struct engy_toploc_report *rep)
{
	struct engy_toploc_ws *ws = NULL;
	size_t n_chunks, i, plen, cap = 0, got;
	const char *first_fail = NULL;
	uint16_t *buf = NULL;
	uint8_t *proof = NULL;
	int rc;

	memset(rep, 0, sizeof(*rep));
	rep->bad_proof = -1;
	rc = engy_toploc_n_chunks(rows, p, &n_chunks);
	if (rc || !lim ||
	    !(lim->min_pass_ratio >= 0 && lim->min_pass_ratio <= 1))
		return -EINVAL;
	if (n_proofs != n_chunks) {
		unproven(rep, ENGY_TOPLOC_CHUNK_COUNT, -1);
		return 0;
	}
	if (n_chunks == 0) {
		unproven(rep, ENGY_TOPLOC_NO_CHUNKS, -1);
		return 0;
	}
	plen = engy_toploc_proof_len(p->topk);
	rep->chunks = calloc(n_chunks, sizeof(*rep->chunks));
	proof = malloc(plen);
	ws = engy_toploc_ws_new(p->topk);
	if (!rep->chunks || !proof || !ws) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n_chunks; i++) {
		struct chunk c = chunk_at(rows, p, i);
		const uint16_t *v;
		const char *why;
		int d;

		d = engy_base64_decode(proof, plen, b64[i], b64_len[i], &got);
		if (d == -EINVAL) {
			unproven(rep, ENGY_TOPLOC_BAD_BASE64, (long)i);
			goto out;
		}
		if (d == -ENOSPC || got != plen) {
			unproven(rep, ENGY_TOPLOC_BAD_LENGTH, (long)i);
			goto out;
		}
		v = chunk_bf16(rows, c, &buf, &cap);
		if (!v) {
			rc = -ENOMEM;
			goto out;
		}
		d = engy_toploc_verify_chunk(ws, v, c.n_rows * rows->hidden,
					     proof, got, &rep->chunks[i]);
		if (d) {
			unproven(rep, d, (long)i);
			goto out;
		}
		rep->n_chunks++;
		why = engy_toploc_chunk_fail(&rep->chunks[i], lim);
		if (!why)
			rep->n_pass++;
		else if (!first_fail)
			first_fail = why;
	}
	if ((double)rep->n_pass / (double)n_chunks >= lim->min_pass_ratio) {
		rep->verdict = ENGY_VERDICT_PASS;
		rep->reason = "ok";
	} else {
		rep->verdict = ENGY_VERDICT_CHEAT;
		rep->reason = first_fail;
	}
out:
	if (rc) {
		engy_toploc_report_free(rep);
		rep->n_chunks = 0;
	}
	free(proof);
	free(buf);
	engy_toploc_ws_free(ws);
	return rc;
}
