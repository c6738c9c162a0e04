/* SPDX-License-Identifier: MIT */
/*
 * The audit of one opening (specs/gemm-audit.md §5): the paths against
 * the trace root, the binding, the cells, the rows each cell must have,
 * MoE routing, then each opened product by Freivalds with ±1 projections
 * in fp64 with compensated sums, and elementwise spot recomputes, within
 * a statistical tolerance.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "gemm.h"
#include "gemm_int.h"
#include "merkle.h"

/* A compensated sum (TwoSum: the exact error of each addition is carried;
 * the same result as Neumaier's without the branch). */
struct csum {
	double s, c;
};

static inline void cadd(struct csum *a, double x)
{
	double t = a->s + x, bp = t - a->s;

	a->c += (a->s - (t - bp)) + (x - bp);
	a->s = t;
}

static inline double cval(const struct csum *a)
{
	return a->s + a->c;
}

typedef float v4f __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));

/* Row @j of @m as doubles (@tmp holds in doubles when W is float32). */
static inline __attribute__((always_inline)) const double *
mrow(const struct engy_ga_matrix *m, size_t j, double *restrict tmp)
{
	const float *f;
	size_t k = 0;

	if (m->w)
		return m->w + j * m->in;
	f = m->wf + j * m->in;
	for (; k + 4 <= m->in; k += 4) {
		v4f a;
		v4d b;

		memcpy(&a, f + k, sizeof(a));
		b = __builtin_convertvector(a, v4d);
		memcpy(tmp + k, &b, sizeof(b));
	}
	for (; k < m->in; k++)
		tmp[k] = f[k];
	return tmp;
}

void engy_ga_cols(const struct engy_ga_matrix *m, double *colsq, double *rerr)
{
	double *tmp = m->w ? NULL : malloc(m->in * sizeof(*tmp));
	size_t j, k;

	memset(colsq, 0, m->in * sizeof(*colsq));
	memset(rerr, 0, m->in * sizeof(*rerr));
	if (!m->w && !tmp)
		abort(); /* one row: nothing sensible to do without it */
	for (j = 0; j < m->out; j++) {
		const double *r = mrow(m, j, tmp);

		for (k = 0; k < m->in; k++) {
			double d = (double)engy_bf16_to_f32(
					   engy_bf16_from_f32((float)r[k])) -
				   r[k];

			colsq[k] += r[k] * r[k];
			rerr[k] += d * d;
		}
	}
	free(tmp);
}

/* The rows of one cell's key, found by binary search. */
struct rref {
	uint64_t key;
	uint32_t pos;
	const struct engy_ga_orow *row;
};

static int cmp_rref(const void *a, const void *b)
{
	const struct rref *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

struct ck {
	const struct engy_ga_opening *o;
	const struct engy_ga_weights *w;
	const struct engy_ga_params *p;
	const uint8_t *seed;
	struct engy_ga_verdict *v;
	struct rref *rr;
	size_t n_rr;
	int err; /* a local failure (-ENOMEM) */
};

static int verdict(struct ck *c, int outcome, const char *reason,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int verdict(struct ck *c, int outcome, const char *reason,
		   const char *fmt, ...)
{
	va_list ap;

	c->v->outcome = outcome;
	snprintf(c->v->reason, sizeof(c->v->reason), "%s", reason);
	va_start(ap, fmt);
	vsnprintf(c->v->where, sizeof(c->v->where), fmt, ap);
	va_end(ap);
	return 1;
}

static uint64_t pk(uint16_t layer, int mm, uint16_t expert, int role)
{
	struct engy_ga_key k = { layer, (uint8_t)mm, expert, (uint8_t)role };

	return engy_ga_key_pack(&k);
}

static const struct engy_ga_orow *row_at(const struct ck *c, uint64_t key,
					 uint32_t pos)
{
	struct rref want = { key, pos, NULL }, *r;

	r = bsearch(&want, c->rr, c->n_rr, sizeof(*c->rr), cmp_rref);
	return r ? r->row : NULL;
}

static void where_key(char *out, size_t n, uint16_t layer, int mm,
		      uint16_t expert, uint32_t pos)
{
	if (layer == ENGY_GA_LM_LAYER)
		snprintf(out, n, "lm_head pos %u", pos);
	else if (expert != ENGY_GA_NO_EXPERT)
		snprintf(out, n, "layer %u experts.%u.%s pos %u", layer, expert,
			 engy_ga_mm_name(mm) + 8, pos);
	else
		snprintf(out, n, "layer %u %s pos %u", layer,
			 engy_ga_mm_name(mm), pos);
}

/* ---- 1. Paths, binding, cells ---- */

static int check_paths(struct ck *c, const uint8_t trace_root[32],
		       const uint8_t toploc_hash[32],
		       const struct engy_ga_bind *bind)
{
	const struct engy_ga_opening *o = c->o;
	unsigned td = engy_mc_depth(o->bind.n_tokens),
		 sd = engy_mc_depth(o->n_subs);
	uint8_t sroot[32], gemm[32], tr[32];
	struct engy_mh *h = engy_mh_new();
	size_t i, r;
	int bad = 0;

	if (!h)
		return c->err = -ENOMEM, 1;
	if (!o->n_osubs)
		bad = verdict(c, ENGY_GA_CHEAT, "missing_row", "no rows");
	for (i = 0; !bad && i < o->n_osubs; i++) {
		const struct engy_ga_osub *s = &o->subs[i];
		uint8_t troot[32], t2[32], leaf[32], sr[32];

		if (s->depth != sd || s->index >= o->n_subs) {
			bad = verdict(c, ENGY_GA_CHEAT, "path",
				      "sub %zu: index %u depth %u of %u subs",
				      i, s->index, s->depth, o->n_subs);
			break;
		}
		for (r = 0; r < s->n_rows && !bad; r++) {
			const struct engy_ga_orow *w = &s->rows[r];
			char wh[96];

			where_key(wh, sizeof(wh), s->key.layer, s->key.mm,
				  s->key.expert, w->pos);
			if (w->depth != td || w->pos >= o->bind.n_tokens) {
				bad = verdict(c, ENGY_GA_CHEAT, "path",
					      "%s %s: depth %u", wh,
					      s->key.role ? "Y" : "X",
					      w->depth);
				break;
			}
			engy_ga_leaf_h(h, &s->key, w->pos, w->data, w->n, leaf);
			engy_ga_fold(h, leaf, w->pos, w->path, w->depth,
				     r ? t2 : troot);
			if (r && memcmp(t2, troot, 32))
				bad = verdict(c, ENGY_GA_CHEAT, "path", "%s %s",
					      wh, s->key.role ? "Y" : "X");
		}
		if (bad)
			break;
		engy_ga_sub_leaf(h, &s->key, troot, leaf);
		engy_ga_fold(h, leaf, s->index, s->path, s->depth,
			     i ? sr : sroot);
		if (i && memcmp(sr, sroot, 32)) {
			char wh[96];

			where_key(wh, sizeof(wh), s->key.layer, s->key.mm,
				  s->key.expert, s->rows[0].pos);
			bad = verdict(c, ENGY_GA_CHEAT, "path", "%s %s sub", wh,
				      s->key.role ? "Y" : "X");
		}
	}
	if (!bad) {
		engy_ga_gemm_hash(h, &o->bind, o->n_subs, sroot, gemm);
		engy_mh_begin(h, ENGY_GA_TAG_TRACE);
		engy_mh_put(h, gemm, 32);
		engy_mh_put(h, toploc_hash, 32);
		engy_mh_end(h, tr);
		if (memcmp(tr, trace_root, 32))
			bad = verdict(c, ENGY_GA_CHEAT, "path",
				      "the opening does not fold to the trace "
				      "root");
	}
	engy_mh_free(h);
	if (bad)
		return 1;
	/* The opening is the one the miner committed to: now its binding
	 * against what the auditor holds. */
	if (memcmp(o->bind.spec_root, bind->spec_root, 32))
		return verdict(c, ENGY_GA_CHEAT, "spec_root",
			       "the trace binds another model root");
	if (memcmp(o->bind.ids_hash, bind->ids_hash, 32) ||
	    o->bind.n_prompt != bind->n_prompt ||
	    o->bind.n_tokens != bind->n_tokens)
		return verdict(c, ENGY_GA_CHEAT, "ids",
			       "the trace binds other token ids");
	if (memcmp(o->bind.sampling, bind->sampling, 32))
		return verdict(c, ENGY_GA_CHEAT, "sampling",
			       "the trace binds another sampling config");
	return 0;
}

static int check_cells(struct ck *c, const struct engy_ga_bind *bind)
{
	const struct engy_ga_opening *o = c->o;
	size_t cap = (size_t)c->p->layers * c->p->tokens, n, i;
	struct engy_ga_cell *want;
	int rc;

	if (cap > ENGY_GA_MAX_CELLS)
		cap = ENGY_GA_MAX_CELLS;
	want = malloc((cap ? cap : 1) * sizeof(*want));
	if (!want)
		return c->err = -ENOMEM, 1;
	rc = engy_ga_challenge(c->seed, c->w->n_layers, bind->n_prompt,
			       bind->n_tokens, c->p, want, cap, &n);
	if (rc) {
		free(want);
		return verdict(c, ENGY_GA_UNPROVEN, "params",
			       "the challenge cannot be expanded: %s",
			       strerror(-rc));
	}
	if (!n) {
		free(want);
		return verdict(c, ENGY_GA_UNPROVEN, "no_cells",
			       "nothing to challenge");
	}
	for (i = 0; i < n && i < o->n_cells; i++)
		if (want[i].layer != o->cells[i].layer ||
		    want[i].pos != o->cells[i].pos)
			break;
	free(want);
	if (i < n || o->n_cells != n)
		return verdict(c, ENGY_GA_CHEAT, "cells",
			       "the opening answers other cells (at %zu)", i);
	return 0;
}

/* ---- 2. The rows each cell must have ---- */

static bool in_cells(const struct engy_ga_opening *o, uint16_t layer,
		     uint32_t pos)
{
	size_t i;

	for (i = 0; i < o->n_cells; i++)
		if (o->cells[i].layer == layer && o->cells[i].pos == pos)
			return true;
	return false;
}

static int get_w(struct ck *c, uint16_t layer, int mm, uint16_t expert,
		 struct engy_ga_matrix *m)
{
	int rc;

	memset(m, 0, sizeof(*m));
	rc = c->w->get(c->w->arg, layer, mm, expert, m);
	if (rc == -ENOMEM)
		c->err = rc;
	else if (!rc && (!m->w == !m->wf || !m->out || !m->in))
		rc = -ENOENT; /* not a matrix: as if none */
	return rc;
}

static bool finite_row(const struct engy_ga_orow *r)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (!isfinite(r->data[i]))
			return false;
	return true;
}

/* Row X and Y of (layer, mm, expert) at pos: present, shaped, finite. */
static int need_pair(struct ck *c, uint16_t layer, int mm, uint16_t expert,
		     uint32_t pos, const float **shared_x, size_t *shared_n)
{
	const struct engy_ga_orow *x = row_at(c, pk(layer, mm, expert, 0), pos),
				  *y = row_at(c, pk(layer, mm, expert, 1), pos);
	struct engy_ga_matrix m;
	char wh[96];

	where_key(wh, sizeof(wh), layer, mm, expert, pos);
	if (!x || !y)
		return verdict(c, ENGY_GA_CHEAT, "missing_row", "%s %s", wh,
			       x ? "Y" : "X");
	if (get_w(c, layer, mm, expert, &m) < 0)
		return c->err ? 1
			      : verdict(c, ENGY_GA_UNPROVEN, "weights",
					"%s: no weights", wh);
	if (x->n != m.in || y->n != m.out)
		return verdict(c, ENGY_GA_CHEAT, "shape",
			       "%s: rows of %zu and %zu for [%zu, %zu]", wh,
			       x->n, y->n, m.out, m.in);
	if (!finite_row(x) || !finite_row(y))
		return verdict(c, ENGY_GA_CHEAT, "nonfinite", "%s", wh);
	if (shared_x) {
		if (!*shared_x) {
			*shared_x = x->data;
			*shared_n = x->n;
		} else if (*shared_n != x->n ||
			   memcmp(*shared_x, x->data, x->n * sizeof(float))) {
			return verdict(c, ENGY_GA_CHEAT, "input",
				       "%s: X differs from its layer's", wh);
		}
	}
	return 0;
}

static bool has_w(struct ck *c, uint16_t layer, int mm)
{
	struct engy_ga_matrix m;

	return get_w(c, layer, mm, ENGY_GA_NO_EXPERT, &m) == 0;
}

/* The router's top-k must be exactly the experts opened. */
static int check_routing(struct ck *c, uint16_t layer, uint32_t pos,
			 const float **xn, size_t *xnn)
{
	const struct engy_ga_orow *r = row_at(
		c, pk(layer, ENGY_GA_MM_ROUTER, ENGY_GA_NO_EXPERT, 1), pos);
	uint32_t k = c->w->top_k, n_open = 0, e, f;
	bool *open;
	size_t i;

	if (!r)
		return 0; /* need_pair() says missing_row */
	open = calloc(r->n, sizeof(*open));
	if (!open)
		return c->err = -ENOMEM, 1;
	/* Opened experts: any row of an expert key at (layer, pos). */
	for (i = 0; i < c->n_rr; i++) {
		struct engy_ga_key key;

		engy_ga_key_unpack(c->rr[i].key, &key);
		if (key.layer != layer || c->rr[i].pos != pos ||
		    key.expert == ENGY_GA_NO_EXPERT)
			continue;
		if (key.expert >= r->n) {
			free(open);
			return verdict(c, ENGY_GA_CHEAT, "routing",
				       "layer %u pos %u: expert %u of %zu",
				       layer, pos, key.expert, r->n);
		}
		if (!open[key.expert])
			n_open++;
		open[key.expert] = true;
	}
	if (n_open != k) {
		free(open);
		return verdict(c, ENGY_GA_CHEAT, "routing",
			       "layer %u pos %u: %u experts opened, top-%u",
			       layer, pos, n_open, k);
	}
	for (e = 0; e < r->n; e++) {
		if (!open[e])
			continue;
		for (f = 0; f < r->n; f++) {
			double le = r->data[e], lf = r->data[f];
			double tie =
				ldexp(fmax(1.0, fmax(fabs(le), fabs(lf))), -16);

			/* An expert left out with a clearly higher logit. */
			if (!open[f] && lf > le + tie) {
				free(open);
				return verdict(c, ENGY_GA_CHEAT, "routing",
					       "layer %u pos %u: expert %u "
					       "opened, %u scores higher",
					       layer, pos, e, f);
			}
		}
	}
	for (e = 0; e < r->n; e++) {
		if (!open[e])
			continue;
		if (need_pair(c, layer, ENGY_GA_MM_EXPERT_GATE, (uint16_t)e,
			      pos, xn, xnn) ||
		    need_pair(c, layer, ENGY_GA_MM_EXPERT_UP, (uint16_t)e, pos,
			      xn, xnn) ||
		    need_pair(c, layer, ENGY_GA_MM_EXPERT_DOWN, (uint16_t)e,
			      pos, NULL, NULL)) {
			free(open);
			return 1;
		}
	}
	free(open);
	return 0;
}

static int check_cell(struct ck *c, uint16_t layer, uint32_t pos)
{
	const float *xa = NULL, *xm = NULL;
	size_t xan = 0, xmn = 0;
	bool moe;

	if (layer == ENGY_GA_LM_LAYER)
		return need_pair(c, layer, ENGY_GA_MM_LM_HEAD,
				 ENGY_GA_NO_EXPERT, pos, NULL, NULL);
	if (need_pair(c, layer, ENGY_GA_MM_Q, ENGY_GA_NO_EXPERT, pos, &xa,
		      &xan) ||
	    need_pair(c, layer, ENGY_GA_MM_K, ENGY_GA_NO_EXPERT, pos, &xa,
		      &xan) ||
	    need_pair(c, layer, ENGY_GA_MM_V, ENGY_GA_NO_EXPERT, pos, &xa,
		      &xan) ||
	    need_pair(c, layer, ENGY_GA_MM_O, ENGY_GA_NO_EXPERT, pos, NULL,
		      NULL))
		return 1;
	moe = has_w(c, layer, ENGY_GA_MM_ROUTER);
	if (c->err)
		return 1;
	if (!moe)
		return need_pair(c, layer, ENGY_GA_MM_GATE, ENGY_GA_NO_EXPERT,
				 pos, &xm, &xmn) ||
		       need_pair(c, layer, ENGY_GA_MM_UP, ENGY_GA_NO_EXPERT,
				 pos, &xm, &xmn) ||
		       need_pair(c, layer, ENGY_GA_MM_DOWN, ENGY_GA_NO_EXPERT,
				 pos, NULL, NULL);
	if (need_pair(c, layer, ENGY_GA_MM_ROUTER, ENGY_GA_NO_EXPERT, pos, &xm,
		      &xmn) ||
	    check_routing(c, layer, pos, &xm, &xmn))
		return 1;
	if (has_w(c, layer, ENGY_GA_MM_SHARED_GATE) &&
	    (need_pair(c, layer, ENGY_GA_MM_SHARED_GATE, ENGY_GA_NO_EXPERT, pos,
		       &xm, &xmn) ||
	     need_pair(c, layer, ENGY_GA_MM_SHARED_UP, ENGY_GA_NO_EXPERT, pos,
		       &xm, &xmn) ||
	     need_pair(c, layer, ENGY_GA_MM_SHARED_DOWN, ENGY_GA_NO_EXPERT, pos,
		       NULL, NULL)))
		return 1;
	if (has_w(c, layer, ENGY_GA_MM_SHARED_EGATE) &&
	    need_pair(c, layer, ENGY_GA_MM_SHARED_EGATE, ENGY_GA_NO_EXPERT, pos,
		      &xm, &xmn))
		return 1;
	return c->err ? 1 : 0;
}

/* ---- 3. The products ---- */

/* The rounding unit of a committed output row: bf16 when every value is
 * a bf16 (the engine wrote bf16), else float32. */
static double out_unit(const float *y, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (engy_f32_bits(y[i]) & 0xffffu)
			return ENGY_GA_U_F32;
	return ENGY_GA_U_BF16;
}

struct tok {
	const float *x, *y;
	uint32_t pos;
	double uy, sy2, sxc, sxe, var, eps;
};

/* Rows summed plainly per block of this many, blocks compensated. */
#define VBLK 32

/* acc += w (neg: -= w) over n doubles. */
static inline __attribute__((always_inline)) void
acc_row(double *restrict acc, const double *restrict w, size_t n, bool neg)
{
	size_t k = 0;

	if (neg) {
		for (; k + 4 <= n; k += 4) {
			v4d a, b;

			memcpy(&a, acc + k, sizeof(a));
			memcpy(&b, w + k, sizeof(b));
			a -= b;
			memcpy(acc + k, &a, sizeof(a));
		}
		for (; k < n; k++)
			acc[k] -= w[k];
	} else {
		for (; k + 4 <= n; k += 4) {
			v4d a, b;

			memcpy(&a, acc + k, sizeof(a));
			memcpy(&b, w + k, sizeof(b));
			a += b;
			memcpy(acc + k, &a, sizeof(a));
		}
		for (; k < n; k++)
			acc[k] += w[k];
	}
}

/* (hi, lo) += x elementwise, the error of each addition kept (TwoSum). */
static inline __attribute__((always_inline)) void
acc_two(double *restrict hi, double *restrict lo, const double *restrict x,
	size_t n)
{
	size_t k;

	for (k = 0; k < n; k++) {
		double s = hi[k] + x[k], bp = s - hi[k];

		lo[k] += (hi[k] - (s - bp)) + (x[k] - bp);
		hi[k] = s;
	}
}

/*
 * V[q] = W^T r_q for the @np projections at once, one pass over W: rows
 * summed plainly in blocks of VBLK, the blocks' sums compensated.  Each
 * column's error is below 2^-48 sum_j |W[j][k]| (eps in the tolerance).
 */
static inline __attribute__((always_inline)) void
project_body(const struct engy_ga_matrix *m, const uint64_t *bits, size_t words,
	     size_t np, double *V, double *lo, double *blk, double *tmp)
{
	size_t j0, j, q, out = m->out, in = m->in;

	memset(V, 0, np * in * sizeof(*V));
	memset(lo, 0, np * in * sizeof(*lo));
	for (j0 = 0; j0 < out; j0 += VBLK) {
		size_t j1 = j0 + VBLK < out ? j0 + VBLK : out;

		memset(blk, 0, np * in * sizeof(*blk));
		for (j = j0; j < j1; j++) {
			const double *r = mrow(m, j, tmp);

			for (q = 0; q < np; q++)
				acc_row(blk + q * in, r, in,
					(bits[q * words + j / 64] >> (j % 64)) &
						1);
		}
		for (q = 0; q < np; q++)
			acc_two(V + q * in, lo + q * in, blk + q * in, in);
	}
	for (q = 0; q < np * in; q++)
		V[q] += lo[q];
}

/* The same, compiled for AVX2 where the CPU has it (the sums are the
 * same: the order of every addition is fixed by the code, not the ISA). */
static __attribute__((target("avx2"))) void
project_avx2(const struct engy_ga_matrix *m, const uint64_t *bits, size_t words,
	     size_t np, double *V, double *lo, double *blk, double *tmp)
{
	project_body(m, bits, words, np, V, lo, blk, tmp);
}

static void project_generic(const struct engy_ga_matrix *m,
			    const uint64_t *bits, size_t words, size_t np,
			    double *V, double *lo, double *blk, double *tmp)
{
	project_body(m, bits, words, np, V, lo, blk, tmp);
}

static void project(const struct engy_ga_matrix *m, const uint64_t *bits,
		    size_t words, size_t np, double *V, double *lo, double *blk,
		    double *tmp)
{
	static int avx2 = -1;

	if (avx2 < 0)
		avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
	(avx2 ? project_avx2 : project_generic)(m, bits, words, np, V, lo, blk,
						tmp);
}

static int check_product(struct ck *c, uint16_t layer, int mm, uint16_t expert,
			 struct tok *t, size_t nt)
{
	const struct engy_ga_params *p = c->p;
	const double *colsq, *rerr;
	double *own = NULL, *v = NULL, *vc = NULL, *blk = NULL, *cn = NULL;
	double *tmp = NULL;
	size_t out, in, i, j, k, words, np = p->projections;
	struct engy_ga_matrix m;
	uint8_t ps[32];
	struct engy_ga_prng g;
	uint64_t *bits = NULL;
	char wh[96];
	int rc = 0;

	if (get_w(c, layer, mm, expert, &m) < 0)
		return c->err ? 1
			      : verdict(c, ENGY_GA_UNPROVEN, "weights",
					"layer %u %s: no weights", layer,
					engy_ga_mm_name(mm));
	out = m.out;
	in = m.in;
	colsq = m.colsq;
	rerr = m.rerr;
	if (!colsq || !rerr) {
		own = malloc(2 * in * sizeof(*own));
		if (!own)
			return c->err = -ENOMEM, 1;
		engy_ga_cols(&m, own, own + in);
		colsq = own;
		rerr = own + in;
	}
	words = (out + 63) / 64;
	v = malloc((np ? np : 1) * in * sizeof(*v));
	vc = malloc((np ? np : 1) * in * sizeof(*vc));
	blk = malloc((np ? np : 1) * in * sizeof(*blk));
	cn = malloc(in * sizeof(*cn));
	tmp = malloc(in * sizeof(*tmp));
	bits = malloc((np ? np : 1) * words * sizeof(*bits));
	if (!v || !vc || !blk || !cn || !tmp || !bits) {
		c->err = -ENOMEM;
		rc = 1;
		goto out;
	}
	/* sum_j |W[j][k]| <= sqrt(out colsq[k]): bounds the projection's
	 * error. */
	for (k = 0; k < in; k++)
		cn[k] = sqrt((double)out * colsq[k]);
	/* Per token: the tolerance's parts (they do not depend on r). */
	for (i = 0; i < nt; i++) {
		struct csum a = { 0, 0 }, b = { 0, 0 }, e = { 0, 0 };
		double ex = 0;

		t[i].uy = out_unit(t[i].y, out);
		for (j = 0; j < out; j++)
			cadd(&a, (double)t[i].y[j] * t[i].y[j]);
		for (k = 0; k < in; k++) {
			double x2 = (double)t[i].x[k] * t[i].x[k];

			cadd(&b, x2 * colsq[k]);
			cadd(&e, x2 * rerr[k]);
			ex += fabs((double)t[i].x[k]) * cn[k];
		}
		t[i].eps = ldexp(ex, -47);
		t[i].sy2 = cval(&a);
		t[i].sxc = cval(&b);
		t[i].sxe = cval(&e);
		t[i].var =
			t[i].uy * t[i].uy * t[i].sy2 +
			ENGY_GA_U_ACC * ENGY_GA_U_ACC * (double)in * t[i].sxc +
			t[i].sxe;
	}
	engy_ga_product_seed(c->seed, layer, (uint8_t)mm, expert, ps);
	engy_ga_prng_init(&g, ps);
	for (i = 0; i < np * words; i++)
		bits[i] = engy_ga_prng_u64(&g);
	project(&m, bits, words, np, v, vc, blk, tmp);
	for (i = 0; i < np && !rc; i++) {
		const uint64_t *rb = bits + i * words;
		const double *vi = v + i * in;

		for (j = 0; j < nt && !rc; j++) {
			struct csum l = { 0, 0 }, r = { 0, 0 };
			double mag = 0, d, tol, rho;

			for (k = 0; k < out; k++) {
				double y = t[j].y[k];

				cadd(&l, (rb[k / 64] >> (k % 64)) & 1 ? -y : y);
				mag += fabs(y);
			}
			for (k = 0; k < in; k++) {
				double q = vi[k] * t[j].x[k];

				cadd(&r, q);
				mag += fabs(q);
			}
			d = fabs(cval(&l) - cval(&r));
			tol = p->z * sqrt(t[j].var) + ldexp(mag, -50) +
			      t[j].eps;
			rho = tol > 0 ? d / tol : (d > 0 ? INFINITY : 0);
			if (rho > c->v->rho_max)
				c->v->rho_max = rho;
			if (!(d <= tol)) {
				where_key(wh, sizeof(wh), layer, mm, expert,
					  t[j].pos);
				rc = verdict(c, ENGY_GA_CHEAT, "product",
					     "%s rho %.3g", wh, rho);
			}
		}
	}
	/* Spots: single outputs recomputed in full. */
	for (i = 0; i < p->spots && !rc && nt; i++) {
		size_t ti = (size_t)engy_ga_prng_below(&g, nt),
		       jo = (size_t)engy_ga_prng_below(&g, out);
		const double *r = mrow(&m, jo, tmp);
		struct csum s = { 0, 0 }, q2 = { 0, 0 }, e2 = { 0, 0 };
		double yhat, d, tol, mag = 0, rho;

		for (k = 0; k < in; k++) {
			double x = t[ti].x[k], q = x * r[k],
			       dr = (double)engy_bf16_to_f32(
					    engy_bf16_from_f32((float)r[k])) -
				    r[k];

			cadd(&s, q);
			cadd(&q2, q * q);
			cadd(&e2, x * x * dr * dr);
			mag += fabs(q);
		}
		yhat = cval(&s);
		d = fabs((double)t[ti].y[jo] - yhat);
		tol = p->c_el * sqrt(t[ti].uy * t[ti].uy * yhat * yhat +
				     ENGY_GA_U_ACC * ENGY_GA_U_ACC *
					     (double)in * cval(&q2) +
				     cval(&e2)) +
		      ldexp(mag, -50);
		rho = tol > 0 ? d / tol : (d > 0 ? INFINITY : 0);
		if (rho > c->v->rho_max)
			c->v->rho_max = rho;
		if (!(d <= tol)) {
			where_key(wh, sizeof(wh), layer, mm, expert, t[ti].pos);
			rc = verdict(c, ENGY_GA_CHEAT, "spot",
				     "%s out %zu rho %.3g", wh, jo, rho);
		}
	}
	c->v->products++;
out:
	free(own);
	free(v);
	free(vc);
	free(blk);
	free(cn);
	free(tmp);
	free(bits);
	return rc;
}

static int check_products(struct ck *c)
{
	struct tok *t = malloc((c->n_rr ? c->n_rr : 1) * sizeof(*t));
	size_t i = 0, nt;
	int rc = 0;

	if (!t)
		return c->err = -ENOMEM, 1;
	/* c->rr is sorted by (key, pos): the X rows of a product run
	 * together, its Y rows right after (role is the key's low byte). */
	while (i < c->n_rr && !rc) {
		struct engy_ga_key k;
		uint64_t key = c->rr[i].key;

		engy_ga_key_unpack(key, &k);
		if (k.role != ENGY_GA_X) {
			i++;
			continue;
		}
		for (nt = 0; i < c->n_rr && c->rr[i].key == key; i++, nt++) {
			const struct engy_ga_orow *y =
				row_at(c, key | ENGY_GA_Y, c->rr[i].pos);

			t[nt].x = c->rr[i].row->data;
			t[nt].y = y->data; /* present: check_cell() */
			t[nt].pos = c->rr[i].pos;
		}
		rc = check_product(c, k.layer, k.mm, k.expert, t, nt);
	}
	free(t);
	return rc;
}

int engy_ga_check(const struct engy_ga_opening *o, const uint8_t seed[32],
		  const uint8_t trace_root[32], const uint8_t toploc_hash[32],
		  const struct engy_ga_bind *bind,
		  const struct engy_ga_params *p,
		  const struct engy_ga_weights *w, struct engy_ga_verdict *v)
{
	struct ck c = { .o = o, .w = w, .p = p, .seed = seed, .v = v };
	size_t i, r, n = 0;

	memset(v, 0, sizeof(*v));
	v->outcome = ENGY_GA_PASS;
	snprintf(v->reason, sizeof(v->reason), "ok");
	if (check_paths(&c, trace_root, toploc_hash, bind) ||
	    check_cells(&c, bind))
		goto out;
	for (i = 0; i < o->n_osubs; i++)
		n += o->subs[i].n_rows;
	c.rr = malloc((n ? n : 1) * sizeof(*c.rr));
	if (!c.rr) {
		c.err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < o->n_osubs; i++)
		for (r = 0; r < o->subs[i].n_rows; r++) {
			struct rref *x = &c.rr[c.n_rr++];

			x->key = engy_ga_key_pack(&o->subs[i].key);
			x->pos = o->subs[i].rows[r].pos;
			x->row = &o->subs[i].rows[r];
			if (!in_cells(o, o->subs[i].key.layer, x->pos)) {
				verdict(&c, ENGY_GA_CHEAT, "extra_row",
					"layer %u pos %u is not challenged",
					o->subs[i].key.layer, x->pos);
				goto out;
			}
		}
	qsort(c.rr, c.n_rr, sizeof(*c.rr), cmp_rref);
	for (i = 1; i < c.n_rr; i++)
		if (c.rr[i].key == c.rr[i - 1].key &&
		    c.rr[i].pos == c.rr[i - 1].pos) {
			verdict(&c, ENGY_GA_CHEAT, "duplicate",
				"a row is opened twice");
			goto out;
		}
	/* Every row opened belongs to a key the cell must have. */
	for (i = 0; i < o->n_cells; i++)
		if (check_cell(&c, o->cells[i].layer, o->cells[i].pos))
			goto out;
	for (i = 0; i < c.n_rr; i++) {
		struct engy_ga_key k;
		struct engy_ga_matrix m;

		engy_ga_key_unpack(c.rr[i].key, &k);
		if (!row_at(&c, c.rr[i].key ^ 1, c.rr[i].pos) ||
		    get_w(&c, k.layer, k.mm, k.expert, &m) < 0) {
			if (c.err)
				goto out;
			verdict(&c, ENGY_GA_CHEAT, "extra_row",
				"layer %u %s: a row of no product", k.layer,
				engy_ga_mm_name(k.mm));
			goto out;
		}
	}
	check_products(&c);
out:
	free(c.rr);
	return c.err;
}
