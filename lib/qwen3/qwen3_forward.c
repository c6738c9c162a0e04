/* SPDX-License-Identifier: MIT */
/*
 * The Qwen3 forward pass over a batch of rows: embedding, then per layer
 * RMSNorm, q/k/v projections, per-head q/k RMSNorm, RoPE (rotate-half
 * layout), causal GQA attention over the row's own KV cache, o projection
 * and residual, RMSNorm, SwiGLU MLP or experts and residual; the final
 * RMSNorm.  Also the KV cache itself.
 *
 * Each row's arithmetic depends only on its own token, position and cache
 * (see qwen3.h), which is what lets a request be decoded, batched, or
 * recomputed by an auditor with identical results.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qwen3_int.h"
#include "vec.h"

/* ---- KV cache ---- */

struct q3_seq *engy_q3_seq_new(const struct q3_model *m, uint32_t max_ctx)
{
	struct q3_seq *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->m = m;
	s->max_ctx = max_ctx;
	s->k = calloc(m->cfg.n_layers, sizeof(*s->k));
	s->v = calloc(m->cfg.n_layers, sizeof(*s->v));
	if (!s->k || !s->v) {
		engy_q3_seq_free(s);
		return NULL;
	}
	return s;
}

void engy_q3_seq_free(struct q3_seq *s)
{
	uint32_t l;

	if (!s)
		return;
	for (l = 0; s->k && l < s->m->cfg.n_layers; l++)
		free(s->k[l]);
	for (l = 0; s->v && l < s->m->cfg.n_layers; l++)
		free(s->v[l]);
	free(s->k);
	free(s->v);
	free(s);
}

uint32_t engy_q3_seq_len(const struct q3_seq *s)
{
	return s->len;
}

void engy_q3_seq_truncate(struct q3_seq *s, uint32_t len)
{
	if (len < s->len)
		s->len = len;
}

/* Grows geometrically so a long decode reallocates O(log n) times. */
static int seq_reserve(struct q3_seq *s, uint32_t need)
{
	size_t hd = s->m->cfg.head_dim, nkv = s->m->cfg.n_kv, h;
	uint32_t cap = s->cap ? s->cap : 16, L = s->m->cfg.n_layers, l;
	float **nb;

	if (need <= s->cap)
		return 0;
	while (cap < need)
		cap = cap > UINT32_MAX / 2 ? need : 2 * cap;
	if (cap > s->max_ctx)
		cap = s->max_ctx;
	/* Head-major ([n_kv, cap, head_dim]): each KV head's positions are
	 * contiguous, so its attention streams them.  The new buffers are
	 * all allocated before any is used: on failure nothing changes. */
	nb = calloc(2 * (size_t)L, sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	for (l = 0; l < 2 * L; l++)
		if (!(nb[l] = malloc((size_t)cap * nkv * hd * sizeof(float)))) {
			while (l--)
				free(nb[l]);
			free(nb);
			return -ENOMEM;
		}
	for (l = 0; l < L; l++) {
		for (h = 0; h < nkv && s->cap; h++) {
			memcpy(nb[2 * l] + h * cap * hd,
			       s->k[l] + h * s->cap * hd,
			       (size_t)s->cap * hd * sizeof(float));
			memcpy(nb[2 * l + 1] + h * cap * hd,
			       s->v[l] + h * s->cap * hd,
			       (size_t)s->cap * hd * sizeof(float));
		}
		free(s->k[l]);
		free(s->v[l]);
		s->k[l] = nb[2 * l];
		s->v[l] = nb[2 * l + 1];
	}
	free(nb);
	s->cap = cap;
	return 0;
}

/* ---- Building blocks ---- */

void engy_q3_mm_batch_idx(struct q3_model *m, int layer,
			  const char *const *names, const struct mm_part *pt,
			  size_t n, const uint32_t *const *idx)
{
	size_t i;

	if (m->naive) {
		for (i = 0; i < n; i++)
			engy_mm_matmul_naive(pt[i].x, pt[i].n, pt[i].w,
					     pt[i].wt, pt[i].in, pt[i].out,
					     pt[i].y);
	} else if (m->cuda) {
		/* A device error falls back to the CPU: results must be right. */
		for (i = 0; i < n; i++)
			if (engy_q3_cuda_matmul(m->cuda, pt[i].x, pt[i].n,
						pt[i].w, pt[i].wt, pt[i].in,
						pt[i].out, pt[i].y))
				engy_mm_matmul_batch(m->pool, &pt[i], 1);
	} else {
		int order = engy_q3_mm_order(m);

		/* lm_head's input, the final hidden state, stays float32 in
		 * every profile: bf16dp and amx would round it inside the
		 * kernel, and the GEMM trace records what was multiplied. */
		if (layer < 0 && engy_mm_profile_bf16_instr(order))
			order = MM_PROFILE_REF;
		engy_mm_matmul_batch_profile(m->pool, pt, n, order);
	}
	/* A bf16 GEMM writes bf16 (lm_head's logits stay float32). */
	if (engy_q3_bf16act(m) && layer >= 0)
		for (i = 0; i < n; i++)
			engy_q3_bf16_round(pt[i].y, pt[i].n * pt[i].out);
	if (m->hook)
		for (i = 0; i < n; i++)
			if (pt[i].n)
				m->hook(m->hook_arg, layer, names[i], pt[i].x,
					pt[i].n, pt[i].in, pt[i].y, pt[i].out);
	if (m->row_hook)
		for (i = 0; i < n; i++)
			if (pt[i].n)
				m->row_hook(m->row_hook_arg, layer, names[i],
					    idx ? idx[i] : NULL, pt[i].x,
					    pt[i].n, pt[i].in, pt[i].y,
					    pt[i].out);
}

void engy_q3_mm_batch(struct q3_model *m, int layer, const char *const *names,
		      const struct mm_part *pt, size_t n)
{
	engy_q3_mm_batch_idx(m, layer, names, pt, n, NULL);
}

void engy_q3_mm(struct q3_model *m, int layer, const char *name, const float *x,
		size_t n, const void *w, size_t in, size_t out, float *y)
{
	struct mm_part part = { x, w, y, n, in, out, m->wt };

	engy_q3_mm_batch(m, layer, &name, &part, 1);
}

void engy_q3_bf16_round(float *v, size_t n)
{
	engy_vec_bf16_round(v, n);
}

struct swiglu {
	float *g;
	const float *u;
	size_t n, grain;
	bool round, pexp;
};

#define SWIGLU_GRAIN 4096

static void swiglu_task(void *arg, size_t task, unsigned thread)
{
	const struct swiglu *a = arg;
	size_t i = task * a->grain,
	       e = i + a->grain < a->n ? i + a->grain : a->n;

	(void)thread;
	if (a->pexp)
		engy_vec_swiglu_pexp(a->g + i, a->u + i, e - i);
	else
		engy_vec_swiglu(a->g + i, a->u + i, e - i);
	if (a->round)
		engy_q3_bf16_round(a->g + i, e - i);
}

void engy_q3_swiglu(struct q3_model *m, float *g, const float *u, size_t n)
{
	struct swiglu a = {
		g, u, n, SWIGLU_GRAIN, engy_q3_bf16act(m), engy_q3_pexp(m)
	};
	size_t nt = engy_mm_pool_threads(m->pool);

	/* An expf each, on the pool: prefill's in SWIGLU_GRAIN runs, a
	 * decode step's (a row's inter) split over the threads, in
	 * multiples of 16. */
	if (n < SWIGLU_GRAIN * nt)
		a.grain = ((n + nt - 1) / nt + 15) / 16 * 16;
	if (a.grain < 256)
		a.grain = 256;
	engy_mm_pool_run(m->pool, swiglu_task, &a, (n + a.grain - 1) / a.grain);
}

void engy_q3_mlp_run(struct q3_model *m, int layer, const char *pre,
		     const struct q3_mlp *mlp, const float *x, size_t n,
		     float *g, float *u, float *y)
{
	size_t h = m->cfg.hidden, ni = n * mlp->inter;
	struct mm_part gu[2] = { { x, mlp->gate, g, n, h, mlp->inter, m->wt },
				 { x, mlp->up, u, n, h, mlp->inter, m->wt } };
	char gname[64] = "", uname[64] = "", dname[64] = "";
	const char *names[2] = { gname, uname };

	if (engy_q3_hooked(m)) {
		snprintf(gname, sizeof(gname), "%sgate_proj", pre);
		snprintf(uname, sizeof(uname), "%sup_proj", pre);
		snprintf(dname, sizeof(dname), "%sdown_proj", pre);
	}
	engy_q3_mm_batch(m, layer, names, gu, 2);
	engy_q3_swiglu(m, g, u, ni);
	engy_q3_mm(m, layer, dname, g, n, mlp->down, mlp->inter, h, y);
}

/* ---- Attention ---- */

struct fwd {
	struct q3_model *m;
	const struct q3_row *rows;
	size_t n;
	uint32_t *pos;
	float *x, *xn, *q, *k, *v, *att, *tmp, *g, *u;
	float *cs;     /* each row's RoPE cos then sin [n, head_dim] */
	float *out;    /* the final hidden state [n, hidden] */
	float *scores; /* score_rows rows per thread */
	size_t score_stride, score_rows; /* ATT_GROUP, or a KV head's heads */
	size_t *grp, n_grp; /* first row of each attention group, then n */
	int layer;
};

/* q/k norms and RoPE for row @r, then its K and V into the cache (rows
 * are independent: each has its own cache slot).  The row's cos and sin
 * are computed at the first layer and kept for the others. */
static void qk_task(void *arg, size_t r, unsigned thread)
{
	struct fwd *f = arg;
	const struct q3_config *c = &f->m->cfg;
	const struct q3_layer *l = &f->m->layers[f->layer];
	size_t hd = c->head_dim, half = hd / 2, kvd = c->n_kv * hd, h, i;
	struct q3_seq *s = f->rows[r].seq;
	float *q = f->q + r * c->n_heads * hd, *k = f->k + r * kvd;
	float *cs = f->cs + r * hd;

	(void)thread;
	if (f->layer == 0)
		for (i = 0; i < half; i++) {
			/* The angle is a float32 product, as in transformers. */
			float ang = (float)f->pos[r] * f->m->inv_freq[i];

			cs[i] = (float)cos((double)ang);
			cs[half + i] = (float)sin((double)ang);
		}
	engy_vec_rmsnorm_rows(q, hd, q, hd, l->q_norm, c->n_heads, hd, c->eps);
	engy_vec_rmsnorm_rows(k, hd, k, hd, l->k_norm, c->n_kv, hd, c->eps);
	for (h = 0; h < c->n_heads; h++)
		engy_vec_rope(q + h * hd, cs, hd);
	for (h = 0; h < c->n_kv; h++)
		engy_vec_rope(k + h * hd, cs, hd);
	for (h = 0; h < c->n_kv; h++) {
		size_t at = (h * s->cap + f->pos[r]) * hd;

		memcpy(s->k[f->layer] + at, k + h * hd, hd * sizeof(float));
		memcpy(s->v[f->layer] + at, f->v + r * kvd + h * hd,
		       hd * sizeof(float));
	}
}

static void qk_prepare(struct fwd *f)
{
	size_t r;

	if (f->n >= 4)
		engy_mm_pool_run(f->m->pool, qk_task, f, f->n);
	else
		for (r = 0; r < f->n; r++)
			qk_task(f, r, 0);
}

#define ATT_GROUP 4

/* Row @r's softmax over its scores @sc (its positions 0..pos). */
static void attn_softmax(const struct fwd *f, size_t r, float *sc)
{
	size_t hd = f->m->cfg.head_dim, j, p = f->pos[r];
	float scale = (float)(1.0 / sqrt((double)hd)), mx;
	double sum = 0;

	mx = engy_vec_scale_max(sc, p + 1, scale);
	if (engy_q3_pexp(f->m))
		engy_vec_exp_sub(sc, p + 1, mx);
	else
		engy_vec_exp_sub_libm(sc, p + 1, mx);
	for (j = 0; j <= p; j++)
		sum += sc[j];
	engy_vec_div(sc, p + 1, sum);
}

/* KV head @task % n_kv of a group of rows of one sequence (up to
 * ATT_GROUP), for each query head that shares it (GQA): the rows' scores
 * against the keys as one block (each score the same dot product as
 * alone), each row's softmax, then the weighted sums of V, several rows
 * to one pass over V (each the same sum as alone).  The heads of a KV
 * head in one task: its keys and values come from memory once. */
static void attn_task(void *arg, size_t task, unsigned thread)
{
	const struct fwd *f = arg;
	const struct q3_config *c = &f->m->cfg;
	size_t hd = c->head_dim, grp = c->n_heads / c->n_kv;
	size_t g = task / c->n_kv, kvh = task % c->n_kv;
	size_t r0 = f->grp[g], nr = f->grp[g + 1] - r0, i, h, pmax = 0;
	size_t len[ATT_GROUP], n0;
	const struct q3_seq *s = f->rows[r0].seq;
	const float *K = s->k[f->layer] + kvh * s->cap * hd;
	const float *V = s->v[f->layer] + kvh * s->cap * hd;
	float *sc = f->scores + thread * f->score_rows * f->score_stride;
	float *out;
	bool bf = engy_q3_bf16act(f->m);

	for (i = 0; i < nr; i++)
		if (f->pos[r0 + i] > pmax)
			pmax = f->pos[r0 + i];
	if (nr == 1) { /* the heads' queries are adjacent: one block */
		engy_mm_dots_rows(f->q + (r0 * c->n_heads + kvh * grp) * hd, hd,
				  grp, K, hd, hd, pmax + 1, sc,
				  f->score_stride);
		for (h = 0; h < grp; h++)
			attn_softmax(f, r0, sc + h * f->score_stride);
		for (i = 0; i < ATT_GROUP; i++)
			len[i] = f->pos[r0] + 1;
		out = f->att + (r0 * c->n_heads + kvh * grp) * hd;
		for (h = 0; h < grp; h += n0) {
			n0 = grp - h < ATT_GROUP ? grp - h : ATT_GROUP;
			engy_vec_wsum_rows(sc + h * f->score_stride,
					   f->score_stride, len, n0, V, hd, hd,
					   out + h * hd, hd);
		}
		if (bf)
			engy_q3_bf16_round(out, grp * hd);
		return;
	}
	for (h = 0; h < grp; h++) { /* a head's rows, then the next head */
		engy_mm_dots_rows(f->q + (r0 * c->n_heads + kvh * grp + h) * hd,
				  c->n_heads * hd, nr, K, hd, hd, pmax + 1, sc,
				  f->score_stride);
		for (i = 0; i < nr; i++) {
			attn_softmax(f, r0 + i, sc + i * f->score_stride);
			len[i] = f->pos[r0 + i] + 1;
		}
		out = f->att + (r0 * c->n_heads + kvh * grp + h) * hd;
		engy_vec_wsum_rows(sc, f->score_stride, len, nr, V, hd, hd, out,
				   c->n_heads * hd);
		if (bf)
			for (i = 0; i < nr; i++)
				engy_q3_bf16_round(out + i * c->n_heads * hd,
						   hd);
	}
}

/* The rows' steps between the matmuls, ROW_GRAIN rows a task. */
#define ROW_GRAIN 8

enum row_step {
	ROW_IN_NORM,  /* xn = norm(x) with the layer's in_norm */
	ROW_ATTN_RES, /* x += tmp (o_proj's), xn = norm(x) with post_norm */
	ROW_MLP_RES,  /* x += tmp (the MLP's), then the next layer's
			* ROW_IN_NORM, or after the last the final norm into
			* f->out */
};

struct row_job {
	struct fwd *f;
	enum row_step step;
};

static void row_task(void *arg, size_t task, unsigned thread)
{
	const struct row_job *j = arg;
	struct fwd *f = j->f;
	struct q3_model *m = f->m;
	const struct q3_config *c = &m->cfg;
	size_t h = c->hidden, r0 = task * ROW_GRAIN,
	       nr = r0 + ROW_GRAIN < f->n ? ROW_GRAIN : f->n - r0, r;
	bool bf = engy_q3_bf16act(m);
	float *x = f->x + r0 * h, *out = f->xn + r0 * h;
	const float *norm;

	(void)thread;
	if (j->step != ROW_IN_NORM)
		for (r = 0; r < nr; r++) {
			engy_vec_add(x + r * h, f->tmp + (r0 + r) * h, h);
			if (bf)
				engy_q3_bf16_round(x + r * h, h);
		}
	if (j->step == ROW_ATTN_RES) {
		norm = m->layers[f->layer].post_norm;
	} else if (j->step == ROW_IN_NORM) {
		norm = m->layers[f->layer].in_norm;
	} else if (f->layer + 1 < (int)c->n_layers) {
		norm = m->layers[f->layer + 1].in_norm;
	} else {
		/* the final hidden state stays float32 */
		engy_vec_rmsnorm_rows(f->out + r0 * h, h, x, h, m->final_norm,
				      nr, h, c->eps);
		return;
	}
	engy_vec_rmsnorm_rows(out, h, x, h, norm, nr, h, c->eps);
	if (bf)
		engy_q3_bf16_round(out, nr * h);
}

static void rows_run(struct fwd *f, enum row_step step)
{
	struct row_job j = { f, step };

	engy_mm_pool_run(f->m->pool, row_task, &j,
			 (f->n + ROW_GRAIN - 1) / ROW_GRAIN);
}

/* One layer from f->xn (its input, normed) to f->xn normed for the next
 * (or the final hidden state in f->out after the last). */
static int layer_forward(struct fwd *f)
{
	struct q3_model *m = f->m;
	const struct q3_config *c = &m->cfg;
	const struct q3_layer *l = &m->layers[f->layer];
	size_t h = c->hidden, qd = (size_t)c->n_heads * c->head_dim;
	size_t kvd = (size_t)c->n_kv * c->head_dim;
	int L = f->layer, rc;

	{
		static const char *const names[3] = { "q_proj", "k_proj",
						      "v_proj" };
		struct mm_part qkv[3] = {
			{ f->xn, l->wq, f->q, f->n, h, qd, m->wt },
			{ f->xn, l->wk, f->k, f->n, h, kvd, m->wt },
			{ f->xn, l->wv, f->v, f->n, h, kvd, m->wt }
		};

		engy_q3_mm_batch(m, L, names, qkv, 3);
	}
	qk_prepare(f);
	engy_mm_pool_run(m->pool, attn_task, f, f->n_grp * c->n_kv);
	engy_q3_mm(m, L, "o_proj", f->att, f->n, l->wo, qd, h, f->tmp);
	rows_run(f, ROW_ATTN_RES);
	if (c->sparse[L]) {
		rc = engy_q3_moe(m, L, f->xn, f->n, f->tmp);
		if (rc)
			return rc;
	} else {
		engy_q3_mlp_run(m, L, "", &l->mlp, f->xn, f->n, f->g, f->u,
				f->tmp);
	}
	rows_run(f, ROW_MLP_RES);
	return 0;
}

static void embed_row(const struct q3_model *m, uint32_t id, float *out)
{
	size_t h = m->cfg.hidden, i;

	if (m->wt == MM_BF16) {
		const uint16_t *b = (const uint16_t *)m->embed + (size_t)id * h;

		for (i = 0; i < h; i++) {
			uint32_t u = (uint32_t)b[i] << 16;

			memcpy(&out[i], &u, sizeof(u));
		}
	} else {
		memcpy(out, (const float *)m->embed + (size_t)id * h,
		       h * sizeof(float));
	}
}

/* Positions, bounds and cache room for every row; nothing changes on error. */
static int place_rows(struct q3_model *m, const struct q3_row *rows, size_t n,
		      uint32_t *pos, uint32_t *max_pos)
{
	size_t r;
	int rc;

	*max_pos = 0;
	for (r = 0; r < n; r++) {
		if (rows[r].id >= m->cfg.vocab)
			return -ERANGE;
		rows[r].seq->next = rows[r].seq->len;
	}
	/* Row r takes its sequence's length plus the rows of it before r. */
	for (r = 0; r < n; r++) {
		struct q3_seq *s = rows[r].seq;

		if (s->next >= s->max_ctx)
			return -E2BIG;
		pos[r] = s->next++;
		if (pos[r] + 1 > *max_pos)
			*max_pos = pos[r] + 1;
	}
	for (r = 0; r < n; r++) {
		rc = seq_reserve(rows[r].seq, pos[r] + 1);
		if (rc)
			return rc;
	}
	return 0;
}

float *engy_q3_scratch(struct q3_model *m, int which, size_t floats)
{
	/* growing it is the only allocation of a step once it is large */
	if (floats > m->scratch_cap[which]) {
		free(m->scratch[which]);
		m->scratch[which] = malloc(floats * sizeof(float));
		m->scratch_cap[which] = m->scratch[which] ? floats : 0;
	}
	return m->scratch[which];
}

int engy_q3_forward(struct q3_model *m, const struct q3_row *rows, size_t n,
		    float *hidden)
{
	const struct q3_config *c = &m->cfg;
	size_t h = c->hidden, qd = (size_t)c->n_heads * c->head_dim;
	size_t kvd = (size_t)c->n_kv * c->head_dim, inter, r, nt, need;
	struct fwd f = { .m = m, .rows = rows, .n = n, .out = hidden };
	uint32_t max_pos, L;
	float *p;
	int rc;

	if (!n)
		return 0;
	inter = c->inter > c->shared_inter ? c->inter : c->shared_inter;
	f.pos = malloc(n * sizeof(*f.pos));
	f.grp = malloc((n + 1) * sizeof(*f.grp));
	if (!f.pos || !f.grp) {
		rc = -ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&m->mu);
	rc = place_rows(m, rows, n, f.pos, &max_pos);
	if (rc)
		goto out_unlock;
	f.score_stride = max_pos;
	f.score_rows = c->n_heads / c->n_kv > ATT_GROUP ? c->n_heads / c->n_kv
							: ATT_GROUP;
	nt = engy_mm_pool_threads(m->pool);
	/* x, xn, tmp; q, att; k, v; g, u; cs; scores */
	need = 3 * n * h + 2 * n * qd + 2 * n * kvd + 2 * (n * inter + 1) +
	       n * c->head_dim + nt * f.score_rows * max_pos;
	p = engy_q3_scratch(m, Q3_SCRATCH_FWD, need);
	rc = -ENOMEM;
	if (!p)
		goto out_unlock;
	f.x = p, p += n * h;
	f.xn = p, p += n * h;
	f.tmp = p, p += n * h;
	f.q = p, p += n * qd;
	f.att = p, p += n * qd;
	f.k = p, p += n * kvd;
	f.v = p, p += n * kvd;
	f.g = p, p += n * inter + 1;
	f.u = p, p += n * inter + 1;
	f.cs = p, p += n * c->head_dim;
	f.scores = p;
	/* Attention groups: runs of up to ATT_GROUP rows of one sequence. */
	for (r = 0; r < n; r++)
		if (!r || rows[r].seq != rows[f.grp[f.n_grp - 1]].seq ||
		    r - f.grp[f.n_grp - 1] == ATT_GROUP)
			f.grp[f.n_grp++] = r;
	f.grp[f.n_grp] = n;
	for (r = 0; r < n; r++)
		embed_row(m, rows[r].id, f.x + r * h);
	rc = 0;
	f.layer = 0;
	rows_run(&f, ROW_IN_NORM);
	for (L = 0; L < c->n_layers && !rc; L++) {
		f.layer = (int)L;
		rc = layer_forward(&f);
	}
	if (rc)
		goto out_unlock;
	for (r = 0; r < n; r++)
		if (f.pos[r] + 1 > rows[r].seq->len)
			rows[r].seq->len = f.pos[r] + 1;
out_unlock:
	pthread_mutex_unlock(&m->mu);
out:
	free(f.grp);
	free(f.pos);
	return rc;
}

int engy_q3_logits(struct q3_model *m, const float *hidden, size_t n,
		   float *logits)
{
	pthread_mutex_lock(&m->mu);
	engy_q3_mm(m, -1, "lm_head", hidden, n, m->lm_head, m->cfg.hidden,
		   m->cfg.vocab, logits);
	pthread_mutex_unlock(&m->mu);
	return 0;
}
