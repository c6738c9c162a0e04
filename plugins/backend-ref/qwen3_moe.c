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

struct route {
	uint32_t expert;
	float w;
	uint32_t slot;		/* row's index into the expert's batch */
};

/* Softmax and top-k of one row's router logits into @sel (k entries). */
static void route_row(const float *logit, uint32_t E, uint32_t K,
		      bool norm, float *prob, struct route *sel)
{
	float mx = -INFINITY, wsum = 0;
	double sum = 0;
	uint32_t e, k, i, best;

	for (e = 0; e < E; e++)
		mx = fmaxf(mx, logit[e]);
	for (e = 0; e < E; e++) {
		prob[e] = expf(logit[e] - mx);
		sum += prob[e];
	}
	for (e = 0; e < E; e++)
		prob[e] = (float)(prob[e] / sum);
	for (k = 0; k < K; k++) {
		best = E;
		for (e = 0; e < E; e++) {
			if (prob[e] < 0)
				continue;	/* taken */
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
	size_t h = m->cfg.hidden, I = m->cfg.shared_inter, r, d;
	float *g = malloc(n * I * sizeof(float)), *u = malloc(n * I * sizeof(float));
	float *o = malloc(n * h * sizeof(float)), *gate = malloc(n * sizeof(float));
	int rc = -ENOMEM;

	if (!g || !u || !o || !gate)
		goto out;
	q3_mlp_run(m, layer, "shared_expert.", &l->shared, xn, n, g, u, o);
	q3_mm(m, layer, "shared_expert_gate", xn, n, l->shared_gate, h, 1, gate);
	for (r = 0; r < n; r++) {
		float s = 1.0f / (1.0f + expf(-gate[r]));

		for (d = 0; d < h; d++)
			y[r * h + d] += s * o[r * h + d];
	}
	rc = 0;
out:
	free(g);
	free(u);
	free(o);
	free(gate);
	return rc;
}

int q3_moe(struct q3_model *m, int layer, const float *xn, size_t n, float *y)
{
	const struct q3_config *c = &m->cfg;
	const struct q3_layer *l = &m->layers[layer];
	uint32_t E = c->n_experts, K = c->top_k, e, k;
	size_t h = c->hidden, I = c->moe_inter, r, d, cnt;
	float *logit = malloc(n * E * sizeof(float));
	float *prob = malloc(E * sizeof(float));
	struct route *sel = malloc(n * K * sizeof(*sel));
	float *xe = malloc(n * h * sizeof(float));
	float *ge = malloc(n * I * sizeof(float));
	float *ue = malloc(n * I * sizeof(float));
	float *ye = malloc(n * h * sizeof(float));
	float *outs = malloc(n * K * h * sizeof(float));
	size_t *who = malloc(n * sizeof(*who));
	char name[32];
	int rc = -ENOMEM;

	if (!logit || !prob || !sel || !xe || !ge || !ue || !ye || !outs || !who)
		goto out;
	q3_mm(m, layer, "router", xn, n, l->router, h, E, logit);
	for (r = 0; r < n; r++)
		route_row(logit + r * E, E, K, c->norm_topk, prob, sel + r * K);
	for (e = 0; e < E; e++) {
		/* Gather this expert's rows, run it, keep its outputs per slot. */
		cnt = 0;
		for (r = 0; r < n; r++)
			for (k = 0; k < K; k++)
				if (sel[r * K + k].expert == e) {
					sel[r * K + k].slot = (uint32_t)cnt;
					who[cnt] = r * K + k;
					memcpy(xe + cnt * h, xn + r * h,
					       h * sizeof(float));
					cnt++;
				}
		if (!cnt)
			continue;
		snprintf(name, sizeof(name), "experts.%u.", e);
		q3_mlp_run(m, layer, name, &l->experts[e], xe, cnt, ge, ue, ye);
		for (r = 0; r < cnt; r++)
			memcpy(outs + who[r] * h, ye + r * h, h * sizeof(float));
	}
	for (r = 0; r < n; r++) {
		float *yr = y + r * h;

		memset(yr, 0, h * sizeof(float));
		for (k = 0; k < K; k++) {
			const float *o = outs + (r * K + k) * h;
			float w = sel[r * K + k].w;

			for (d = 0; d < h; d++)
				yr[d] += o[d] * w;
		}
	}
	rc = c->shared_inter ? shared_expert(m, layer, xn, n, y) : 0;
out:
	free(logit);
	free(prob);
	free(sel);
	free(xe);
	free(ge);
	free(ue);
	free(ye);
	free(outs);
	free(who);
	return rc;
}
