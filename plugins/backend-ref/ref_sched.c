/* SPDX-License-Identifier: MIT */
/*
 * The step scheduler of backend-ref (see ref.h).  Everything here runs on
 * the loop thread except step_run(), the pool job, which only touches the
 * step and the requests in it; the loop side leaves those alone while a
 * step is in flight (cancel() only raises a flag).  Callbacks may call
 * back into the plugin: a step stays "in flight" until its done handler
 * has finished, so such calls never start a second step.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

struct step {
	struct ref *r;
	struct engy_gen **reqs;
	size_t n_reqs;
	struct q3_row *rows;
	size_t n_rows;
	float *hidden;	       /* n_rows x H */
	float *last;	       /* the sampling rows, gathered */
	float *logits;	       /* one row per sampling request */
	struct ref_hookctx hc; /* each row's request and position */
	bool traced;	       /* a request here has a GEMM sink */
	int rc;
};

void ref_req_free(struct engy_gen *g)
{
	if (!g)
		return;
	engy_q3_seq_free(g->seq);
	engy_cons_state_free(g->cst);
	engy_cons_free(g->cons);
	free(g->cend);
	free(g->ids);
	free(g->stop);
	free(g->hidden);
	free(g->step_top_ids);
	free(g->step_top_lp);
	free(g->gmember);
	ref_gemm_sink_free(g->gs);
	if (g->hold)
		ref_hold_put(g->r, g->hold);
	free(g);
}

/* An id that ends a constrained output (EOS or a stop id). */
static bool is_end(const struct engy_gen *g, uint32_t tok)
{
	size_t i;

	for (i = 0; i < g->n_cend; i++)
		if (g->cend[i] == tok)
			return true;
	return false;
}

/* Tokens @g may still emit, this one included. */
static uint32_t cons_left(const struct ref *r, const struct engy_gen *g)
{
	size_t room = r->max_ctx > g->n_prompt + g->n_out
			      ? r->max_ctx - g->n_prompt - g->n_out
			      : 1;
	size_t left = g->max_new > g->n_out ? g->max_new - g->n_out : 1;

	return (uint32_t)(left < room ? left : room);
}

static void step_free(struct step *s)
{
	if (!s)
		return;
	free(s->reqs);
	free(s->rows);
	free(s->hidden);
	free(s->last);
	free(s->logits);
	free(s->hc.req);
	free(s->hc.pos);
	free(s);
}

/* Prefill kind: every position; generate: the prompt, then one token. */
static size_t rows_wanted(const struct ref *r, const struct engy_gen *g)
{
	size_t end = g->kind != REQ_GENERATE ? g->n_ids : g->n_prompt;

	if (g->n_fed < end)
		return end - g->n_fed < r->chunk ? end - g->n_fed : r->chunk;
	return g->n_fed < g->n_ids ? 1 : 0;
}

static struct step *step_build(struct ref *r)
{
	struct step *s = calloc(1, sizeof(*s));
	size_t n_rows = 0, n_samp = 0, i;
	struct engy_gen *g;

	if (!s)
		return NULL;
	s->r = r;
	for (g = r->active; g; g = g->next)
		if (!g->cancelled)
			n_rows += rows_wanted(r, g);
	s->reqs = calloc(r->n_active + 1, sizeof(*s->reqs));
	s->rows = calloc(n_rows + 1, sizeof(*s->rows));
	s->hidden = malloc((n_rows + 1) * r->cfg.hidden * sizeof(float));
	s->hc.req = calloc(n_rows + 1, sizeof(*s->hc.req));
	s->hc.pos = calloc(n_rows + 1, sizeof(*s->hc.pos));
	if (!s->reqs || !s->rows || !s->hidden || !s->hc.req || !s->hc.pos)
		goto fail;
	for (g = r->active; g; g = g->next) {
		g->step_rows = g->cancelled ? 0 : rows_wanted(r, g);
		g->step_samples = false;
		if (!g->step_rows)
			continue;
		g->step_first = s->n_rows;
		for (i = 0; i < g->step_rows; i++) {
			s->hc.req[s->n_rows] = g;
			s->hc.pos[s->n_rows] = (uint32_t)(g->n_fed + i);
			s->rows[s->n_rows++] =
				(struct q3_row){ g->seq, g->ids[g->n_fed + i] };
		}
		s->traced |= g->gs != NULL;
		/* Sample once the prompt is in and more tokens are wanted. */
		g->step_samples = g->kind == REQ_GENERATE &&
				  g->n_fed + g->step_rows >= g->n_prompt &&
				  g->n_out < g->max_new;
		n_samp += g->step_samples;
		s->reqs[s->n_reqs++] = g;
	}
	s->last = malloc((n_samp + 1) * r->cfg.hidden * sizeof(float));
	s->logits = malloc((n_samp + 1) * (size_t)r->cfg.vocab * sizeof(float));
	if (!s->last || !s->logits)
		goto fail;
	return s;
fail:
	step_free(s);
	return NULL;
}

#define LM_BATCH 16

/* lm_head of a replay's rows whose logits the generation computed (or
 * that a challenge opens), hooked; the logits themselves are not needed. */
static int replay_lm(struct step *s, struct engy_gen *g)
{
	struct ref *r = s->r;
	size_t H = r->cfg.hidden, i, n = 0;
	float *x = malloc(LM_BATCH * H * sizeof(float));
	float *y = malloc(LM_BATCH * (size_t)r->cfg.vocab * sizeof(float));
	struct engy_gen *req[LM_BATCH];
	uint32_t pos[LM_BATCH];
	struct ref_hookctx hc = { req, pos, 0 };
	int rc = 0;

	if (!x || !y) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i <= g->step_rows; i++) {
		uint32_t p = (uint32_t)(g->n_fed + i);

		if (i < g->step_rows && ref_gemm_lm_want(g, p)) {
			memcpy(x + n * H, s->hidden + (g->step_first + i) * H,
			       H * sizeof(float));
			req[n] = g;
			pos[n++] = p;
		}
		if (n && (n == LM_BATCH || i == g->step_rows)) {
			hc.n = n;
			r->hctx = &hc;
			engy_q3_logits(r->m, x, n, y);
			r->hctx = NULL;
			n = 0;
		}
	}
out:
	free(x);
	free(y);
	return rc;
}

/* The pool job: one batched forward, then sampling.  No loop state here. */
static void step_run(void *arg)
{
	struct step *s = arg;
	struct ref *r = s->r;
	size_t H = r->cfg.hidden, V = r->cfg.vocab, k, j = 0;

	if (!s->n_rows)
		return;
	s->hc.n = s->n_rows;
	r->hctx = s->traced ? &s->hc : NULL;
	s->rc = engy_q3_forward(r->m, s->rows, s->n_rows, s->hidden);
	r->hctx = NULL;
	if (s->rc)
		return;
	/* A replay that cannot finish fails alone, not the step. */
	for (k = 0; k < s->n_reqs && s->traced; k++)
		if (s->reqs[k]->kind == REQ_REPLAY && s->reqs[k]->gs)
			ref_gemm_sink_fail(s->reqs[k],
					   replay_lm(s, s->reqs[k]));
	for (k = 0; k < s->n_reqs; k++) {
		struct engy_gen *g = s->reqs[k];
		const float *h =
			s->hidden + (g->step_first + g->step_rows - 1) * H;

		if (g->kind == REQ_PREFILL)
			memcpy(g->hidden + g->n_fed * H,
			       s->hidden + g->step_first * H,
			       g->step_rows * H * sizeof(float));
		if (g->step_samples)
			memcpy(s->last + j++ * H, h, H * sizeof(float));
	}
	if (j) {
		/* lm_head's rows are the sampling requests' last rows */
		for (k = 0, j = 0; k < s->n_reqs; k++) {
			struct engy_gen *g = s->reqs[k];

			if (!g->step_samples)
				continue;
			s->hc.req[j] = g;
			s->hc.pos[j++] =
				(uint32_t)(g->n_fed + g->step_rows - 1);
		}
		s->hc.n = j;
		r->hctx = s->traced ? &s->hc : NULL;
		engy_q3_logits(r->m, s->last, j, s->logits);
		r->hctx = NULL;
	}
	for (k = 0, j = 0; k < s->n_reqs; k++) {
		struct engy_gen *g = s->reqs[k];

		if (!g->step_samples)
			continue;
		memcpy(g->hidden, s->last + j * H, H * sizeof(float));
		/* Constrained: ids the constraint refuses are masked out
		 * (an end id only where the output is complete); the
		 * hidden state is the model's all the same. */
		if (g->cst &&
		    (!r->cvocab ||
		     !engy_cons_mask_logits(
			     g->cst, r->cvocab, s->logits + j * V, g->cend,
			     g->n_cend, cons_left(r, g), r->cscratch))) {
			g->cons_stuck = true;
			j++;
			continue;
		}
		g->step_tok = engy_q3_sample(
			r->smp, s->logits + j * V, &g->sp, &g->rng,
			g->want_logprobs ? &g->step_lp : NULL);
		if (g->top_n)
			g->step_top_n = engy_q3_top_logprobs(
				r->smp, s->logits + j * V, g->top_n,
				g->step_top_ids, g->step_top_lp);
		if (g->cst && !is_end(g, g->step_tok) &&
		    engy_cons_feed_id(g->cst, r->cvocab, g->step_tok))
			g->cons_stuck = true; /* not reached: it was allowed */
		j++;
	}
}

static void unlink_active(struct ref *r, struct engy_gen *g)
{
	struct engy_gen **p;

	for (p = &r->active; *p; p = &(*p)->next)
		if (*p == g) {
			*p = g->next;
			r->n_active--;
			return;
		}
}

/* on_done (or the prefill callback) once, then the handle dies. */
static void finish(struct ref *r, struct engy_gen *g, int status,
		   const char *error, int reason, int32_t matched)
{
	struct engy_gen_result res = {
		.status = status,
		.error = error,
		.finish = reason,
		.matched_stop = matched,
		.prompt_tokens = (uint32_t)g->n_prompt,
		.completion_tokens = g->n_out,
	};

	if (g->kind == REQ_REPLAY) {
		ref_gemm_replay_done(r, g,
				     status ? status
				     : reason == ENGY_FINISH_ABORT
					     ? -ECANCELED
					     : ref_gemm_sink_rc(g));
		ref_req_free(g);
		return;
	}
	if (g->kind == REQ_GENERATE && g->gs && !status &&
	    (reason == ENGY_FINISH_STOP || reason == ENGY_FINISH_LENGTH))
		ref_gemm_commit_now(r, g);
	if (g->kind == REQ_PREFILL) {
		struct engy_rows rows = { g->hidden, ENGY_DTYPE_F32,
					  (uint32_t)g->n_ids, r->cfg.hidden,
					  (uint32_t)g->n_ids };

		if (!status && reason == ENGY_FINISH_ABORT)
			status = -ECANCELED;
		g->pdone(g->arg, status, status ? NULL : &rows);
	} else {
		g->cb.on_done(g->arg, &res);
	}
	ref_req_free(g);
}

static bool is_stop(const struct ref *r, const struct engy_gen *g, uint32_t tok)
{
	size_t i;

	if (g->ignore_eos)
		return false;
	for (i = 0; i < r->cfg.n_eos; i++)
		if (r->cfg.eos[i] == tok)
			return true;
	for (i = 0; i < g->n_stop; i++)
		if (g->stop[i] == tok)
			return true;
	return false;
}

/* Stream this step's token; returns true when @g has ended. */
static bool deliver(struct ref *r, struct engy_gen *g)
{
	struct engy_rows rows = { g->hidden, ENGY_DTYPE_F32, 1, r->cfg.hidden,
				  0 };
	uint32_t tok = g->step_tok;

	if (g->cons_stuck && !g->cancelled && g->step_samples) {
		g->n_fed += g->step_rows;
		unlink_active(r, g);
		finish(r, g, -EPROTO,
		       "constrained decoding: no token may follow",
		       ENGY_FINISH_ERROR, -1);
		return true;
	}

	g->n_fed += g->step_rows;
	if (g->cancelled)
		return false; /* no tokens after cancel(); reaped next */
	if (g->kind == REQ_REPLAY) {
		if (g->n_fed < g->n_ids)
			return false;
		unlink_active(r, g);
		finish(r, g, 0, NULL, ENGY_FINISH_STOP, -1);
		return true;
	}
	if (g->kind == REQ_PREFILL) {
		if (r->m_prefill)
			r->host->metric_add(r->m_prefill, (double)g->step_rows);
		if (g->n_fed < g->n_ids)
			return false;
		unlink_active(r, g);
		finish(r, g, 0, NULL, ENGY_FINISH_STOP, -1);
		return true;
	}
	if (!g->step_samples) {
		/* max_new_tokens 0: the prompt was all there was to do. */
		if (g->n_fed < g->n_prompt || g->n_out < g->max_new)
			return false;
		unlink_active(r, g);
		finish(r, g, 0, NULL, ENGY_FINISH_LENGTH, -1);
		return true;
	}
	g->ids[g->n_ids++] = tok;
	g->n_out++;
	if (r->m_tokens)
		r->host->metric_add(r->m_tokens, 1);
	if (g->top_n)
		g->on_top(g->arg, 1, g->step_top_n, g->step_top_ids,
			  g->step_top_lp);
	g->cb.on_tokens(g->arg, &tok, 1, g->want_hidden ? &rows : NULL,
			g->want_logprobs ? &g->step_lp : NULL);
	if (is_stop(r, g, tok)) {
		unlink_active(r, g);
		finish(r, g, 0, NULL, ENGY_FINISH_STOP, (int32_t)tok);
		return true;
	}
	if (g->n_out >= g->max_new || g->n_prompt + g->n_out >= r->max_ctx) {
		unlink_active(r, g);
		finish(r, g, 0, NULL, ENGY_FINISH_LENGTH, -1);
		return true;
	}
	return false;
}

/* Cancelled requests, active or queued, end here. */
static void reap_cancelled(struct ref *r)
{
	struct engy_gen **p, *g;

	for (p = &r->active; *p;) {
		g = *p;
		if (!g->cancelled) {
			p = &g->next;
			continue;
		}
		*p = g->next;
		r->n_active--;
		finish(r, g, 0, NULL, ENGY_FINISH_ABORT, -1);
		p = &r->active; /* the callback may have changed the list */
	}
	for (p = &r->queue; *p;) {
		g = *p;
		if (!g->cancelled) {
			p = &g->next;
			continue;
		}
		*p = g->next;
		r->n_queued--;
		finish(r, g, 0, NULL, ENGY_FINISH_ABORT, -1);
		p = &r->queue;
	}
}

static void step_done(void *arg, int rc)
{
	struct step *s = arg;
	struct ref *r = s->r;
	size_t k;

	if (rc || s->rc) {
		rc = rc ? rc : s->rc;
		step_free(s);
		ref_fail_all(r, rc,
			     rc == -ECANCELED ? "shutting down"
			     : rc == -ENOMEM  ? "out of memory"
					      : "forward pass failed");
		r->step_inflight = false;
		ref_kick(r);
		return;
	}
	for (k = 0; k < s->n_reqs; k++)
		deliver(r, s->reqs[k]);
	step_free(s);
	reap_cancelled(r);
	ref_admit(r);
	r->step_inflight = false;
	ref_kick(r);
}

void ref_enqueue(struct ref *r, struct engy_gen *g)
{
	struct engy_gen **p;

	for (p = &r->queue; *p; p = &(*p)->next)
		;
	*p = g;
	r->n_queued++;
	ref_kick(r);
}

void ref_admit(struct ref *r)
{
	struct engy_gen *g, **tail;

	if (r->state != REF_READY)
		return;
	while (r->queue && r->n_active < r->max_batch) {
		g = r->queue;
		r->queue = g->next;
		r->n_queued--;
		g->next = NULL;
		g->seq = engy_q3_seq_new(r->m, r->max_ctx);
		if (!g->seq) {
			finish(r, g, -ENOMEM, "out of memory",
			       ENGY_FINISH_ERROR, -1);
			continue;
		}
		for (tail = &r->active; *tail; tail = &(*tail)->next)
			;
		*tail = g;
		r->n_active++;
	}
	if (r->m_requests)
		r->host->metric_set(r->m_requests,
				    (double)(r->n_active + r->n_queued));
}

void ref_kick(struct ref *r)
{
	struct step *s;
	int rc;

	if (r->step_inflight || r->state != REF_READY)
		return;
	reap_cancelled(r);
	ref_admit(r);
	if (!r->n_active)
		return;
	s = step_build(r);
	if (!s) {
		ref_fail_all(r, -ENOMEM, "out of memory");
		return;
	}
	r->step_inflight = true;
	rc = r->host->work(r->host, step_run, step_done, s);
	if (rc) {
		r->step_inflight = false;
		step_free(s);
		ref_fail_all(r, rc, "the worker pool refused the job");
	}
}

static void fail_one(struct ref *r, struct engy_gen *g, int status,
		     const char *why)
{
	if (g->cancelled)
		finish(r, g, 0, NULL, ENGY_FINISH_ABORT, -1);
	else
		finish(r, g, status, why, ENGY_FINISH_ERROR, -1);
}

void ref_fail_all(struct ref *r, int status, const char *why)
{
	struct engy_gen *g;

	while ((g = r->active)) {
		r->active = g->next;
		r->n_active--;
		fail_one(r, g, status, why);
	}
	while ((g = r->queue)) {
		r->queue = g->next;
		r->n_queued--;
		fail_one(r, g, status, why);
	}
}
