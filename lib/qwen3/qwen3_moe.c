/* SPDX-License-Identifier: MIT */
/*
 * The Qwen3-MoE sparse MLP: router logits, softmax over all experts in
 * float32, top-k (ties to the lower expert index), optional renormalisation
 * of the k weights (norm_topk_prob), then each expert runs on the rows
 * routed to it and a row's output is the weighted sum of its experts'
 * outputs in ascending expert order (transformers' index_add_ order).
 * A shared expert with a sigmoid gate is added when the config has one
 * (Qwen2-MoE style; Qwen3-MoE has none).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qwen3_int.h"
#include "vec.h"

struct route {
	uint32_t expert;
	float w;
	uint32_t slot; /* the pair's row in the gathered blocks */
};

/* Softmax and top-k of one row's router logits into @sel (k entries). */
static void route_row(const float *logit, uint32_t E, uint32_t K, bool norm,
		      bool pexp, float *prob, struct route *sel)
{
	float mx = -INFINITY, wsum = 0;
	double sum = 0;
	uint32_t e, k, i, best;

	for (e = 0; e < E; e++)
		mx = fmaxf(mx, logit[e]);
	for (e = 0; e < E; e++) {
		prob[e] = pexp ? engy_vec_pexp(logit[e] - mx)
			       : expf(logit[e] - mx);
		sum += prob[e];
	}
	for (e = 0; e < E; e++)
		prob[e] = (float)(prob[e] / sum);
	for (k = 0; k < K; k++) {
		best = E;
		for (e = 0; e < E; e++) {
			if (prob[e] < 0)
				continue; /* taken */
			if (best == E || prob[e] > prob[best])
				best = e;
		}
		sel[k].expert = best;
		sel[k].w = prob[best];
		wsum += prob[best];
		prob[best] = -1;
	}
	if (norm)
		for (k = 0; k < K; k++)
			sel[k].w /= wsum;
	/* Ascending expert order: the order outputs are summed in. */
	for (k = 1; k < K; k++)
		for (i = k; i > 0 && sel[i - 1].expert > sel[i].expert; i--) {
			struct route t = sel[i];

			sel[i] = sel[i - 1];
			sel[i - 1] = t;
		}
}

static int shared_expert(struct q3_model *m, int layer, const float *xn,
			 size_t n, float *y)
{
	const struct q3_layer *l = &m->layers[layer];
	size_t h = m->cfg.hidden, I = m->cfg.shared_inter, r;
	float *g = malloc(n * I * sizeof(float)),
	      *u = malloc(n * I * sizeof(float));
	float *o = malloc(n * h * sizeof(float)),
	      *gate = malloc(n * sizeof(float));
	int rc = -ENOMEM;

	if (!g || !u || !o || !gate)
		goto out;
	engy_q3_mlp_run(m, layer, "shared_expert.", &l->shared, xn, n, g, u, o);
	engy_q3_mm(m, layer, "shared_expert_gate", xn, n, l->shared_gate, h, 1,
		   gate);
	for (r = 0; r < n; r++)
		engy_vec_add_scaled(
			y + r * h, o + r * h,
			1.0f / (1.0f + (engy_q3_pexp(m)
						? engy_vec_pexp(-gate[r])
						: expf(-gate[r]))),
			h);
	rc = 0;
out:
	free(g);
	free(u);
	free(o);
	free(gate);
	return rc;
}

/*
 * Every routed (row, slot) pair gets a place in its expert's contiguous
 * block, so all active experts' gate and up products run as one pool job,
 * and all their down products as another.
 */
int engy_q3_moe(struct q3_model *m, int layer, const float *xn, size_t n,
		float *y)
{
	const struct q3_config *c = &m->cfg;
	const struct q3_layer *l = &m->layers[layer];
	uint32_t E = c->n_experts, K = c->top_k, e, k;
	size_t h = c->hidden, I = c->moe_inter, nk = n * K, r, na = 0;
	float *logit = malloc(n * E * sizeof(float));
	float *prob = malloc(E * sizeof(float));
	struct route *sel = malloc(nk * sizeof(*sel));
	size_t *off = calloc(E + 1, sizeof(*off)),
	       *fill = calloc(E, sizeof(*fill));
	/* the gathered rows, their gate and up products, their outputs */
	float *xe = engy_q3_scratch(m, Q3_SCRATCH_MOE, 2 * nk * (h + I));
	float *ge = xe ? xe + nk * h : NULL, *ue = ge ? ge + nk * I : NULL;
	float *ye = ue ? ue + nk * I : NULL;
	struct mm_part *parts = malloc(2 * E * sizeof(*parts));
	/* the matmuls' names, for a hook only */
	char(*nm)[40] = calloc(2 * E, sizeof(*nm));
	bool hooked = engy_q3_hooked(m);
	const char **names = malloc(2 * E * sizeof(*names));
	/* the row hook's indices: the forward row of each gathered slot */
	uint32_t *slot_row = malloc((nk + 1) * sizeof(*slot_row));
	const uint32_t **idx = malloc(2 * E * sizeof(*idx));
	int rc = -ENOMEM;

	if (!logit || !prob || !sel || !off || !fill || !xe || !ge || !ue ||
	    !ye || !parts || !nm || !names || !slot_row || !idx)
		goto out;
	engy_q3_mm(m, layer, "router", xn, n, l->router, h, E, logit);
	for (r = 0; r < n; r++)
		route_row(logit + r * E, E, K, c->norm_topk, engy_q3_pexp(m),
			  prob, sel + r * K);
	/* Offsets of each expert's block, then rows gathered into them. */
	for (r = 0; r < nk; r++)
		off[sel[r].expert + 1]++;
	for (e = 0; e < E; e++)
		off[e + 1] += off[e];
	for (r = 0; r < n; r++)
		for (k = 0; k < K; k++) {
			struct route *s = &sel[r * K + k];

			s->slot =
				(uint32_t)(off[s->expert] + fill[s->expert]++);
			slot_row[s->slot] = (uint32_t)r;
			memcpy(xe + s->slot * h, xn + r * h, h * sizeof(float));
		}
	for (e = 0; e < E; e++) {
		size_t cnt = off[e + 1] - off[e];

		if (!cnt)
			continue;
		parts[na] = (struct mm_part){ xe + off[e] * h,
					      l->experts[e].gate,
					      ge + off[e] * I,
					      cnt,
					      h,
					      I,
					      m->wt };
		if (hooked)
			snprintf(nm[na], sizeof(nm[na]), "experts.%u.gate_proj",
				 e);
		idx[na] = idx[na + 1] = slot_row + off[e];
		parts[na + 1] = (struct mm_part){ xe + off[e] * h,
						  l->experts[e].up,
						  ue + off[e] * I,
						  cnt,
						  h,
						  I,
						  m->wt };
		if (hooked)
			snprintf(nm[na + 1], sizeof(nm[na + 1]),
				 "experts.%u.up_proj", e);
		na += 2;
	}
	for (r = 0; r < na; r++)
		names[r] = nm[r];
	engy_q3_mm_batch_idx(m, layer, names, parts, na, idx);
	engy_q3_swiglu(m, ge, ue, nk * I);
	for (e = 0, na = 0; e < E; e++) {
		size_t cnt = off[e + 1] - off[e];

		if (!cnt)
			continue;
		parts[na] = (struct mm_part){ ge + off[e] * I,
					      l->experts[e].down,
					      ye + off[e] * h,
					      cnt,
					      I,
					      h,
					      m->wt };
		if (hooked)
			snprintf(nm[na], sizeof(nm[na]), "experts.%u.down_proj",
				 e);
		names[na] = nm[na];
		idx[na] = slot_row + off[e];
		na++;
	}
	engy_q3_mm_batch_idx(m, layer, names, parts, na, idx);
	/* A row's experts are summed in ascending expert order. */
	for (r = 0; r < n; r++) {
		float *yr = y + r * h;

		memset(yr, 0, h * sizeof(float));
		for (k = 0; k < K; k++)
			engy_vec_add_scaled(yr, ye + sel[r * K + k].slot * h,
					    sel[r * K + k].w, h);
	}
	rc = c->shared_inter ? shared_expert(m, layer, xn, n, y) : 0;
out:
	free(logit);
	free(prob);
	free(sel);
	free(off);
	free(fill);
	free(parts);
	free(nm);
	free(names);
	free(slot_row);
	free(idx);
	return rc;
}
