// SPDX-License-Identifier: MIT
/*
 * Epoch scoring (specs/scoring.md): the gates, the per-row score, the
 * weight vector.  Integers only: products that may pass 64 bits go
 * through an exact 128-bit intermediate made of two 64-bit halves, so the
 * arithmetic is the same on every platform and compiler.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "score_int.h"

struct u128 {
	uint64_t hi, lo;
};

static struct u128 mul64(uint64_t a, uint64_t b)
{
	uint64_t a0 = (uint32_t)a, a1 = a >> 32;
	uint64_t b0 = (uint32_t)b, b1 = b >> 32;
	uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
	uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
	struct u128 r;

	r.lo = (mid << 32) | (uint32_t)p00;
	r.hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
	return r;
}

static int cmp128(struct u128 a, struct u128 b)
{
	if (a.hi != b.hi)
		return a.hi < b.hi ? -1 : 1;
	return a.lo < b.lo ? -1 : a.lo > b.lo;
}

static struct u128 add128(struct u128 a, uint64_t b)
{
	a.lo += b;
	a.hi += a.lo < b;
	return a;
}

/* floor(x / c), c != 0: restoring division one bit at a time. */
static struct u128 div128(struct u128 x, uint64_t c)
{
	struct u128 q = { 0, 0 };
	uint64_t r = 0, carry, bit;
	int i;

	for (i = 127; i >= 0; i--) {
		bit = i >= 64 ? (x.hi >> (i - 64)) & 1 : (x.lo >> i) & 1;
		carry = r >> 63;
		r = (r << 1) | bit;
		if (carry || r >= c) {
			r -= c; /* the true remainder < c: the wrap is right */
			if (i >= 64)
				q.hi |= 1ULL << (i - 64);
			else
				q.lo |= 1ULL << i;
		}
	}
	return q;
}

int engy_score_muldiv(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
	struct u128 q;

	if (!c)
		return -EDOM;
	q = div128(mul64(a, b), c);
	if (q.hi)
		return -ERANGE;
	*out = q.lo;
	return 0;
}

int engy_score_percentile(const struct engy_score_bucket *b, size_t n,
			  uint32_t pct, uint64_t *out)
{
	uint64_t total = 0, k, cum = 0;
	size_t i;

	if (pct < 1 || pct > 100)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (b[i].count > UINT64_MAX - total)
			return -ERANGE;
		total += b[i].count;
	}
	if (!total)
		return -ENODATA;
	/* k = ceil(pct * n / 100) = floor((pct * n + 99) / 100), 1..n */
	k = div128(add128(mul64(pct, total), 99), 100).lo;
	for (i = 0; i < n; i++) {
		cum += b[i].count;
		if (cum >= k) {
			*out = b[i].ms;
			return 0;
		}
	}
	return -ENODATA; /* not reached: cum ends at total >= k */
}

/* A gate runs only on at least max(min, 1) samples. */
static int enough(uint64_t samples, uint64_t min)
{
	return samples && samples >= min;
}

/* Gates of one row, in order; the cheat gate's outcome comes from its miner. */
static uint32_t row_gates(const struct engy_epoch_row *r,
			  const struct engy_epoch_model *m,
			  const struct engy_epoch_params *p, int miner_cheats,
			  struct engy_epoch_row_result *rr)
{
	uint64_t n = r->n_2xx + r->n_502 + r->n_504; /* < 2^55 */
	uint64_t nt = engy_score_hist_total(r->ttft, r->n_ttft);
	uint64_t np = engy_score_hist_total(r->tpot, r->n_tpot);
	uint64_t bp = ENGY_SCORE_BP;
	int acc_fail;

	if (n)
		engy_score_muldiv(r->n_2xx, ENGY_SCORE_BP, n, &bp);
	rr->accept_bp = (uint32_t)bp;
	if (nt)
		engy_score_percentile(r->ttft, r->n_ttft, ENGY_SCORE_PCT,
				      &rr->ttft_p99_ms);
	if (np)
		engy_score_percentile(r->tpot, r->n_tpot, ENGY_SCORE_PCT,
				      &rr->tpot_p99_ms);
	/* 2xx / n < min_bp / 10000, cross-multiplied */
	acc_fail = enough(n, p->acceptance_min_samples) &&
		   cmp128(mul64(r->n_2xx, ENGY_SCORE_BP),
			  mul64(p->acceptance_min_bp, n)) < 0;
	if (acc_fail)
		return ENGY_GATE_ACCEPTANCE;
	if (enough(nt, p->ttft_min_samples) &&
	    rr->ttft_p99_ms > m->qual_ttft_p99_ms)
		return ENGY_GATE_TTFT_P99;
	if (enough(np, p->tpot_min_samples) &&
	    rr->tpot_p99_ms > m->qual_tpot_p99_ms)
		return ENGY_GATE_TPOT_P99;
	if (miner_cheats)
		return ENGY_GATE_CHEAT;
	return ENGY_GATE_OK;
}

struct miner {
	const char *hotkey;
	uint64_t score;
	uint64_t weight;
};

/* The cheat gate of the miner whose rows are order[a..b). */
static int miner_cheats(const struct engy_epoch_input *in,
			const struct engy_epoch_params *p, const size_t *order,
			size_t a, size_t b, char *why, size_t wl, int *fails)
{
	uint64_t cheat = 0, rendered = 0;
	size_t i;

	for (i = a; i < b; i++) {
		const struct engy_epoch_row *r = &in->rows[order[i]];

		cheat += r->v_cheat;
		rendered += r->v_pass + r->v_cheat;
		if (rendered > ENGY_SCORE_MAX_INT)
			return engy_score_fail(
				why, wl, -ERANGE,
				"rows[%zu].verdicts: hotkey %s has over 2^53-1 verdicts",
				order[i], r->hotkey);
	}
	/* cheat / rendered > max_bp / 10000, cross-multiplied */
	*fails = enough(rendered, p->cheat_min_samples) &&
		 cmp128(mul64(cheat, ENGY_SCORE_BP),
			mul64(p->cheat_max_bp, rendered)) > 0;
	return 0;
}

/* Score the miner whose rows are order[a..b); its sum into *m. */
static int score_miner(const struct engy_epoch_input *in,
		       const struct engy_epoch_params *p, const size_t *order,
		       size_t a, size_t b, struct engy_epoch_result *out,
		       struct miner *m)
{
	int cheats = 0, rc;
	size_t i;

	rc = miner_cheats(in, p, order, a, b, out->error, sizeof(out->error),
			  &cheats);
	if (rc)
		return rc;
	m->hotkey = in->rows[order[a]].hotkey;
	m->score = 0;
	m->weight = 0;
	for (i = a; i < b; i++) {
		const struct engy_epoch_row *r = &in->rows[order[i]];
		struct engy_epoch_row_result *rr = &out->rows[order[i]];
		const struct engy_epoch_model *md;
		uint64_t s;

		md = engy_score_model_of(in, r->model);
		rr->gate = row_gates(r, md, p, cheats, rr);
		if (rr->gate != ENGY_GATE_OK)
			continue;
		if (engy_score_muldiv(r->tokens, md->score_rate, 1000, &s) ||
		    s > ENGY_SCORE_MAX_INT)
			return engy_score_fail(
				out->error, sizeof(out->error), -ERANGE,
				"rows[%zu]: score tokens * score_rate / 1000 is over 2^53-1",
				order[i]);
		rr->score = s;
		m->score += s;
		if (m->score > ENGY_SCORE_MAX_INT)
			return engy_score_fail(
				out->error, sizeof(out->error), -ERANGE,
				"rows[%zu]: hotkey %s scores over 2^53-1 in all",
				order[i], r->hotkey);
	}
	return 0;
}

/*
 * weight = floor(score * 65535 / total); the remainder to the top miner,
 * ties to the first in (uid, hotkey) order: the miners' own order.
 */
static int build_weights(const struct engy_epoch_input *in, struct miner *mn,
			 size_t n, uint64_t total,
			 struct engy_epoch_result *out)
{
	uint64_t sum = 0;
	size_t i, top = 0, k = 0;

	out->weights = calloc(n ? n : 1, sizeof(*out->weights));
	if (!out->weights)
		return -ENOMEM;
	if (!total) {
		out->burn = true;
		strcpy(out->weights[0].hotkey, in->owner_hotkey);
		out->weights[0].weight = ENGY_SCORE_WEIGHT_SUM;
		out->n_weights = 1;
		return 0;
	}
	for (i = 0; i < n; i++) {
		engy_score_muldiv(mn[i].score, ENGY_SCORE_WEIGHT_SUM, total,
				  &mn[i].weight);
		sum += mn[i].weight;
		if (mn[i].score > mn[top].score)
			top = i;
	}
	mn[top].weight += ENGY_SCORE_WEIGHT_SUM - sum;
	for (i = 0; i < n; i++) {
		if (!mn[i].weight)
			continue;
		strcpy(out->weights[k].hotkey, mn[i].hotkey);
		out->weights[k++].weight = (uint32_t)mn[i].weight;
	}
	out->n_weights = k;
	return 0;
}

static int settle(const struct engy_epoch_input *in,
		  const struct engy_epoch_params *p, const size_t *order,
		  struct engy_epoch_result *out)
{
	struct miner *mn;
	size_t a, b, n = 0;
	int rc = 0;

	mn = calloc(in->n_rows ? in->n_rows : 1, sizeof(*mn));
	if (!mn)
		return -ENOMEM;
	for (a = 0; a < in->n_rows && !rc; a = b) {
		const char *hk = in->rows[order[a]].hotkey;

		for (b = a + 1; b < in->n_rows &&
				strcmp(in->rows[order[b]].hotkey, hk) == 0;
		     b++)
			;
		rc = score_miner(in, p, order, a, b, out, &mn[n]);
		if (rc)
			break;
		out->total_score += mn[n++].score;
		if (out->total_score > ENGY_SCORE_MAX_INT)
			rc = engy_score_fail(
				out->error, sizeof(out->error), -ERANGE,
				"rows: the total score is over 2^53-1");
	}
	if (!rc)
		rc = build_weights(in, mn, n, out->total_score, out);
	free(mn);
	return rc;
}

int engy_score_settle(const struct engy_epoch_input *in,
		      const struct engy_epoch_params *p,
		      struct engy_epoch_result *out)
{
	struct engy_epoch_params def;
	size_t *order;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = engy_score_check(in, p, out->error, sizeof(out->error));
	if (rc)
		return rc;
	p = engy_score_params(in, p, &def);
	order = engy_score_row_order(in);
	out->rows = calloc(in->n_rows ? in->n_rows : 1, sizeof(*out->rows));
	if (!order || !out->rows) {
		rc = -ENOMEM;
		goto fail;
	}
	out->n_rows = in->n_rows;
	rc = settle(in, p, order, out);
	if (!rc)
		rc = engy_score_render_result(in, order, out);
	if (rc)
		goto fail;
	free(order);
	return 0;
fail:
	free(order);
	{
		char err[sizeof(out->error)];

		memcpy(err, out->error, sizeof(err));
		engy_epoch_result_release(out);
		memset(out, 0, sizeof(*out));
		memcpy(out->error, err, sizeof(err));
	}
	return rc;
}
