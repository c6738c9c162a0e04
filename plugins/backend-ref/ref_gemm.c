/* SPDX-License-Identifier: MIT */
/*
 * backend-ref's GEMM audit trace (specs/gemm-audit.md, specs/checkpoints.md
 * "GEMM trace").  A request generated with params.gemm_trace gets an
 * engy_ga_trace, and the model's row hook (lib/qwen3) hashes every audited
 * row of it into the trace as the forward runs, in prefill chunks and
 * batched decode steps alike: the attention projections, the dense MLP or
 * the router and the experts each token was routed to, and lm_head at the
 * positions whose logits chose a token.  When the request ends normally
 * its gemm root binds the spec root, the ids of prompt ‖ output and the
 * sampling; gemm_commit() hands out the member.  The trace (leaf hashes)
 * and the token ids stay in memory, keyed by the request's rid, bounded by
 * gemm_max_bytes and gemm_hold_s (never on disk, never logged).
 *
 * gemm_open() re-derives the challenged rows by a replay: a prefill of the
 * request's tokens up to the last challenged position on a fresh sequence,
 * as pool steps batched with the other requests, hooked the same way, and
 * lm_head on the challenged positions that sampled; each row goes to
 * engy_ga_open_add().  The engine computes every row independently of its
 * batch and of whether it came from a prefill or a decode step (qwen3.h),
 * so the replay's rows are the generation's bit for bit under every kernel
 * profile and thread count (tests/unit/check_gemm_replay.c: same gemm
 * root); a replayed row whose leaf is not the trace's is an internal error
 * (-EBADMSG), logged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm.h"
#include "hex.h"
#include "modelspec.h"
#include "ref.h"

enum { GS_TRACE = 1, GS_OPEN };

struct ref_gsink {
	int mode;		    /* GS_TRACE, GS_OPEN */
	struct engy_ga_trace *t;    /* GS_TRACE: being built (owned) */
	struct engy_ga_open *o;	    /* GS_OPEN (owned) */
	struct engy_ga_cell *cells; /* GS_OPEN: the challenge (owned) */
	uint8_t *lm;		    /* positions whose lm_head row is fed */
	size_t n_lm;		    /* bits in @lm */
	int rc;			    /* the first error */
	struct engy_ga_bind bind;   /* GS_TRACE */
};

struct ref_hold {
	struct ref_hold *next;
	char rid[128];
	struct engy_ga_trace *t;
	uint32_t *ids;			    /* prompt ‖ output */
	uint32_t n_tokens, n_prompt, n_fwd; /* n_fwd: positions forwarded */
	uint32_t n_out;
	uint64_t expires_ms;
	size_t bytes;
	unsigned refs; /* the table's, and each open replay's */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void lm_set(struct ref_gsink *gs, size_t pos)
{
	if (pos < gs->n_lm)
		gs->lm[pos / 8] |= (uint8_t)(1u << (pos % 8));
}

bool ref_gemm_lm_want(const struct engy_gen *rg, uint32_t pos)
{
	const struct ref_gsink *gs = rg->gs;

	return gs && pos < gs->n_lm && (gs->lm[pos / 8] >> (pos % 8)) & 1u;
}

int ref_gemm_sink_rc(const struct engy_gen *rg)
{
	return rg->gs ? rg->gs->rc : 0;
}

void ref_gemm_sink_fail(struct engy_gen *rg, int rc)
{
	if (rc && rg->gs && !rg->gs->rc)
		rg->gs->rc = rc;
}

void ref_gemm_sink_free(struct ref_gsink *gs)
{
	if (!gs)
		return;
	engy_ga_trace_free(gs->t);
	engy_ga_open_free(gs->o);
	free(gs->cells);
	free(gs->lm);
	free(gs);
}

static struct ref_gsink *sink_new(int mode, size_t n_pos)
{
	struct ref_gsink *gs = calloc(1, sizeof(*gs));

	if (!gs)
		return NULL;
	gs->mode = mode;
	gs->n_lm = n_pos;
	gs->lm = calloc(n_pos / 8 + 1, 1);
	if (!gs->lm) {
		free(gs);
		return NULL;
	}
	return gs;
}

static int sink_add(struct ref_gsink *gs, const struct engy_ga_key *k,
		    uint32_t pos, const float *row, size_t n)
{
	if (gs->mode == GS_TRACE)
		return engy_ga_trace_add(gs->t, k, pos, row, n);
	return engy_ga_open_add(gs->o, k, pos, row, n);
}

void ref_gemm_hook(void *arg, int layer, const char *name, const uint32_t *idx,
		   const float *in, size_t rows, size_t in_dim,
		   const float *out, size_t out_dim)
{
	struct ref *r = arg;
	const struct ref_hookctx *hc = r->hctx;
	struct engy_ga_key kx, ky;
	uint32_t expert;
	size_t i;
	int mm;

	if (!hc || engy_ga_mm_parse(name, &mm, &expert))
		return;
	kx = (struct engy_ga_key){
		.layer = layer < 0 ? ENGY_GA_LM_LAYER : (uint16_t)layer,
		.mm = (uint8_t)mm,
		.expert = (uint16_t)expert,
		.role = ENGY_GA_X,
	};
	ky = kx;
	ky.role = ENGY_GA_Y;
	for (i = 0; i < rows; i++) {
		size_t fr = idx ? idx[i] : i;
		struct ref_gsink *gs;

		if (fr >= hc->n || !hc->req[fr])
			continue;
		gs = hc->req[fr]->gs;
		if (!gs || gs->rc)
			continue;
		gs->rc =
			sink_add(gs, &kx, hc->pos[fr], in + i * in_dim, in_dim);
		if (!gs->rc)
			gs->rc = sink_add(gs, &ky, hc->pos[fr],
					  out + i * out_dim, out_dim);
	}
}

/* ---- The table of kept traces ---- */

void ref_hold_put(struct ref *r, struct ref_hold *h)
{
	(void)r;
	if (!h || --h->refs)
		return;
	engy_ga_trace_free(h->t);
	free(h->ids);
	free(h);
}

static void gauges(struct ref *r)
{
	if (r->m_gheld)
		r->host->metric_set(r->m_gheld, (double)r->n_holds);
	if (r->m_gbytes)
		r->host->metric_set(r->m_gbytes, (double)r->hold_bytes);
}

/* Take @h (the head, or the one after @prev) out of the table. */
static void hold_unlink(struct ref *r, struct ref_hold *prev,
			struct ref_hold *h)
{
	if (prev)
		prev->next = h->next;
	else
		r->holds = h->next;
	if (r->holds_tail == &h->next)
		r->holds_tail = prev ? &prev->next : &r->holds;
	r->hold_bytes -= h->bytes;
	r->n_holds--;
	h->next = NULL;
	ref_hold_put(r, h);
}

/* Drop the traces past their time (loop thread). */
static void hold_expire(struct ref *r)
{
	uint64_t now = now_ms();
	size_t n = 0;

	/* Oldest first, and every entry lives as long: stop at a live one. */
	while (r->holds && r->holds->expires_ms <= now) {
		hold_unlink(r, NULL, r->holds);
		n++;
	}
	if (n && r->m_gexpired)
		r->host->metric_add(r->m_gexpired, (double)n);
	if (n)
		gauges(r);
}

static void gtimer_cb(void *arg)
{
	hold_expire(arg);
}

static struct ref_hold *hold_find(struct ref *r, const char *rid,
				  struct ref_hold **prev)
{
	struct ref_hold *h, *p = NULL;

	for (h = r->holds; h; p = h, h = h->next)
		if (!strcmp(h->rid, rid)) {
			if (prev)
				*prev = p;
			return h;
		}
	return NULL;
}

/* Keep @h (the table takes its reference): 0, or -ENOSPC when it alone
 * is over the cap (then freed). */
static int hold_insert(struct ref *r, struct ref_hold *h)
{
	struct ref_hold *old, *prev = NULL;

	hold_expire(r);
	old = hold_find(r, h->rid, &prev);
	if (old)
		hold_unlink(r, prev, old); /* a rid used again: the new one */
	while (r->holds && r->hold_bytes + h->bytes > r->hold_max) {
		engy_info(r->host,
			  "event=gemm_evicted rid=%s bytes=%zu reason=cap "
			  "held_bytes=%zu max_bytes=%llu",
			  r->holds->rid, r->holds->bytes, r->hold_bytes,
			  (unsigned long long)r->hold_max);
		if (r->m_gevicted)
			r->host->metric_add(r->m_gevicted, 1);
		hold_unlink(r, NULL, r->holds);
	}
	if (h->bytes > r->hold_max) {
		engy_info(r->host,
			  "event=gemm_evicted rid=%s bytes=%zu reason=too_big "
			  "max_bytes=%llu",
			  h->rid, h->bytes, (unsigned long long)r->hold_max);
		if (r->m_gevicted)
			r->host->metric_add(r->m_gevicted, 1);
		ref_hold_put(r, h);
		gauges(r);
		return -ENOSPC;
	}
	h->expires_ms = now_ms() + r->hold_ms;
	h->next = NULL;
	*r->holds_tail = h;
	r->holds_tail = &h->next;
	r->hold_bytes += h->bytes;
	r->n_holds++;
	engy_dbg(r->host, "event=gemm_kept rid=%s bytes=%zu held_bytes=%zu",
		 h->rid, h->bytes, r->hold_bytes);
	gauges(r);
	return 0;
}

/* ---- Replays ---- */

static struct engy_gen *replay_new(struct ref *r, const uint32_t *ids, size_t n,
				   struct ref_gsink *gs)
{
	struct engy_gen *rg = calloc(1, sizeof(*rg));

	if (!rg)
		return NULL;
	rg->r = r;
	rg->kind = REQ_REPLAY;
	rg->ids = malloc(n * sizeof(*ids));
	if (!rg->ids) {
		free(rg);
		return NULL;
	}
	memcpy(rg->ids, ids, n * sizeof(*ids));
	rg->n_ids = rg->n_prompt = n;
	rg->gs = gs;
	return rg;
}

/* The member gemm_commit() hands out (specs/gemm-audit.md). */
static char *member_json(const struct ref *r, const struct ref_hold *h,
			 const struct engy_ga_bind *b, const uint8_t root[32])
{
	char groot[65], sroot[65], samp[65], *out;
	size_t cap = 400 + strlen(h->rid);

	engy_mc_hex(root, 32, groot);
	engy_mc_hex(r->spec_root, 32, sroot);
	engy_mc_hex(b->sampling, 32, samp);
	out = malloc(cap);
	if (!out)
		return NULL;
	snprintf(
		out, cap,
		"{\"hashing\":\"%s\",\"gemm_root\":\"%s\",\"spec_root\":\"%s\","
		"\"n_prompt\":%u,\"n_tokens\":%u,\"sampling\":\"%s\","
		"\"rid\":\"%s\"}",
		ENGY_GA_HASHING, groot, sroot, b->n_prompt, b->n_tokens, samp,
		h->rid);
	return out;
}

void ref_gemm_commit_now(struct ref *r, struct engy_gen *g)
{
	struct ref_gsink *gs = g->gs;
	struct ref_hold *h = NULL;
	uint8_t root[32];
	char *member = NULL;
	int rc = gs->rc;

	if (!r->gemm_ready)
		return;
	memcpy(gs->bind.spec_root, r->spec_root, 32);
	engy_ga_ids_hash(g->ids, g->n_ids, gs->bind.ids_hash);
	gs->bind.n_prompt = (uint32_t)g->n_prompt;
	gs->bind.n_tokens = (uint32_t)g->n_ids;
	memcpy(gs->bind.sampling, g->gsamp, 32);
	if (!rc)
		rc = engy_ga_trace_gemm_root(gs->t, &gs->bind, root);
	if (!rc) {
		h = calloc(1, sizeof(*h));
		if (h)
			h->ids = malloc(g->n_ids * sizeof(*h->ids));
		if (!h || !h->ids) {
			free(h);
			h = NULL;
			rc = -ENOMEM;
		}
	}
	if (!rc) {
		snprintf(h->rid, sizeof(h->rid), "%s", g->grid);
		memcpy(h->ids, g->ids, g->n_ids * sizeof(*h->ids));
		h->n_tokens = (uint32_t)g->n_ids;
		h->n_prompt = (uint32_t)g->n_prompt;
		h->n_fwd = (uint32_t)g->n_fed;
		h->n_out = g->n_out;
		h->refs = 1;
		member = member_json(r, h, &gs->bind, root);
		h->t = gs->t;
		gs->t = NULL;
		h->bytes = sizeof(*h) + engy_ga_trace_bytes(h->t) +
			   g->n_ids * sizeof(*h->ids);
		if (!member) {
			ref_hold_put(r, h);
			rc = -ENOMEM;
		} else if (hold_insert(r, h)) {
			free(member);
			member = NULL;
		}
	}
	if (rc)
		engy_warn(r->host, "event=gemm_trace_failed rc=%d", rc);
	g->gmember = member;
}

static void open_done(struct ref *r, struct engy_gen *rg, int rc)
{
	char *json = NULL;

	if (!rc) {
		errno = 0;
		json = engy_ga_open_json(rg->gs->o);
		if (!json)
			rc = errno ? -errno : -ENOMEM;
	}
	if (rc == -EBADMSG)
		engy_err(
			r->host,
			"event=gemm_replay_diverged rid=%s reason=\"a replayed "
			"row's leaf is not the trace's\"",
			rg->hold ? rg->hold->rid : "");
	if (r->m_gopens)
		r->host->metric_add(r->m_gopens, 1);
	if (rg->odone)
		rg->odone(rg->oarg, rc, json, json ? strlen(json) : 0);
	free(json);
}

void ref_gemm_replay_done(struct ref *r, struct engy_gen *rg, int rc)
{
	open_done(r, rg, rc);
}

/* ---- Options, load, ops ---- */

void ref_gemm_setup(struct ref *r, bool on, const char *spec_hex,
		    int64_t hold_s, int64_t max_bytes)
{
	r->gemm_on = on;
	r->hold_ms = (uint64_t)hold_s * 1000u;
	r->hold_max = (uint64_t)max_bytes;
	r->holds_tail = &r->holds;
	if (spec_hex && *spec_hex &&
	    !engy_hex_parse(spec_hex, r->spec_root, 32))
		r->spec_set = true;
	{
		FILE *f = fopen("/dev/urandom", "rb");

		if (!f || fread(r->rid_salt, 1, sizeof(r->rid_salt), f) !=
				  sizeof(r->rid_salt))
			memset(r->rid_salt, 0, sizeof(r->rid_salt));
		if (f)
			fclose(f);
	}
	if (!on)
		return;
	r->host->metric(r->host, ENGY_METRIC_GAUGE,
			"engy_backend_ref_gemm_traces",
			"GEMM audit traces kept for openings", NULL, NULL, 0,
			&r->m_gheld);
	r->host->metric(r->host, ENGY_METRIC_GAUGE,
			"engy_backend_ref_gemm_bytes",
			"bytes held by kept GEMM audit traces", NULL, NULL, 0,
			&r->m_gbytes);
	r->host->metric(r->host, ENGY_METRIC_COUNTER,
			"engy_backend_ref_gemm_evicted_total",
			"GEMM audit traces dropped for gemm_max_bytes before "
			"gemm_hold_s",
			NULL, NULL, 0, &r->m_gevicted);
	r->host->metric(r->host, ENGY_METRIC_COUNTER,
			"engy_backend_ref_gemm_expired_total",
			"GEMM audit traces dropped after gemm_hold_s", NULL,
			NULL, 0, &r->m_gexpired);
	r->host->metric(r->host, ENGY_METRIC_COUNTER,
			"engy_backend_ref_gemm_opens_total",
			"GEMM audit openings answered or failed", NULL, NULL, 0,
			&r->m_gopens);
}

int ref_gemm_spec_root(const char *dir, unsigned threads, uint8_t out[32],
		       char *err, size_t errlen)
{
	struct engy_ms *ms;
	int rc = engy_ms_open(dir, &ms, err, errlen);

	if (rc)
		return rc;
	rc = engy_ms_build(ms, threads, NULL, NULL, 0, err, errlen);
	if (!rc)
		memcpy(out, engy_ms_model_root(ms), 32);
	engy_ms_close(ms);
	return rc;
}

void ref_gemm_ready(struct ref *r, int rc, const uint8_t root[32],
		    const char *err)
{
	char hex[65];

	if (!r->gemm_on)
		return;
	/* cuBLAS picks its algorithm by shape: a row's bits may depend on
	 * how many rows share the call, and a replay could not be proven. */
	if (r->lo.device == Q3_DEVICE_CUDA) {
		engy_warn(r->host,
			  "event=gemm_unavailable reason=\"device cuda: a "
			  "row's bits may depend on its batch\"");
		return;
	}
	if (!r->spec_set) {
		if (rc) {
			engy_warn(r->host,
				  "event=gemm_unavailable reason=\"model root: "
				  "%s\"",
				  err && *err ? err : strerror(-rc));
			return;
		}
		memcpy(r->spec_root, root, 32);
	}
	engy_q3_model_set_row_hook(r->m, ref_gemm_hook, r);
	r->gemm_ready = true;
	engy_mc_hex(r->spec_root, 32, hex);
	engy_info(r->host, "event=gemm_ready spec_root=%s source=%s", hex,
		  r->spec_set ? "option" : "checkpoint");
}

int ref_gemm_start(struct ref *r)
{
	/* Without a timer, traces still expire: at each insert and open. */
	if (r->gemm_on &&
	    r->host->timer_add(r->host, 1000, 1, gtimer_cb, r, &r->gtimer))
		r->gtimer = NULL;
	return 0;
}

void ref_gemm_destroy(struct ref *r)
{
	while (r->holds)
		hold_unlink(r, NULL, r->holds);
}

/* A rid the member may carry: the caller's when printable, else ours. */
static bool rid_ok(const char *s)
{
	size_t n = 0;

	for (; s && *s; s++, n++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' ||
		      *s == '.' || *s == ':'))
			return false;
	return n > 0 && n < 128;
}

void ref_gemm_begin(struct ref *r, struct engy_gen *g,
		    const struct engy_gen_params *q)
{
	size_t room;

	if (!r->gemm_on || !q->gemm_trace || r->state == REF_FAILED)
		return;
	/* positions: the prompt and every token it may still emit */
	room = r->max_ctx - g->n_prompt;
	g->gs = sink_new(GS_TRACE, 0);
	if (g->gs)
		g->gs->t = engy_ga_trace_new(
			(uint32_t)(g->n_prompt + (q->max_new_tokens < room
							  ? q->max_new_tokens
							  : room)));
	if (!g->gs || !g->gs->t) {
		ref_gemm_sink_free(g->gs);
		g->gs = NULL;
		engy_warn(r->host, "event=gemm_trace_failed rc=%d", -ENOMEM);
		return;
	}
	engy_ga_sampling_hash(q->temperature, q->top_p, q->top_k,
			      q->has_seed ? q->seed : 0, q->has_seed,
			      q->max_new_tokens, g->gsamp);
	if (rid_ok(q->rid)) {
		snprintf(g->grid, sizeof(g->grid), "%s", q->rid);
	} else {
		uint8_t b[8];
		uint64_t v = ++r->rid_seq;
		char hex[17];
		int i;

		for (i = 0; i < 8; i++)
			b[i] = r->rid_salt[i] ^ (uint8_t)(v >> (8 * (7 - i)));
		engy_mc_hex(b, 8, hex);
		snprintf(g->grid, sizeof(g->grid), "ref-%s", hex);
	}
}

char *ref_gemm_commit(void *inst, struct engy_gen *g)
{
	(void)inst;
	return g && g->gmember ? strdup(g->gmember) : NULL;
}

int ref_gemm_open(void *inst, const char *rid, const char *challenge,
		  size_t len,
		  void (*done)(void *arg, int rc, const char *json, size_t len),
		  void *arg)
{
	struct ref *r = inst;
	struct engy_ga_cell *cells = NULL;
	struct ref_gsink *gs;
	struct engy_gen *rg;
	struct ref_hold *h;
	uint8_t nonce[32];
	char err[128];
	size_t n = 0, i, upto = 0;

	if (!done || !rid || !challenge)
		return -EINVAL;
	if (r->stopping)
		return -ESHUTDOWN;
	hold_expire(r);
	h = r->gemm_ready ? hold_find(r, rid, NULL) : NULL;
	if (!h)
		return -ENOENT;
	/* A replay takes a request's place: the same bound as generate(). */
	if (r->n_active + r->n_queued >= (size_t)r->max_batch + r->max_queue)
		return -EBUSY;
	if (engy_ga_challenge_parse(challenge, len, nonce, &cells, &n, err,
				    sizeof(err))) {
		engy_dbg(r->host, "event=gemm_open_refused reason=\"%s\"", err);
		free(cells);
		return -EINVAL;
	}
	/* Rows exist up to the last position forwarded; replay no further
	 * than the last one challenged. */
	for (i = 0; i < n; i++)
		if (cells[i].pos + (size_t)1 > upto)
			upto = cells[i].pos + (size_t)1;
	if (upto > h->n_fwd)
		upto = h->n_fwd;
	if (!upto)
		upto = 1;
	gs = sink_new(GS_OPEN, upto);
	if (!gs) {
		free(cells);
		return -ENOMEM;
	}
	gs->cells = cells;
	for (i = 0; i < n; i++)
		if (cells[i].layer == ENGY_GA_LM_LAYER &&
		    cells[i].pos + 1 >= h->n_prompt &&
		    cells[i].pos + 1 < (size_t)h->n_prompt + h->n_out)
			lm_set(gs, cells[i].pos);
	gs->o = engy_ga_open_new(h->t, cells, n);
	rg = gs->o ? replay_new(r, h->ids, upto, gs) : NULL;
	if (!rg) {
		ref_gemm_sink_free(gs);
		return -ENOMEM;
	}
	h->refs++;
	rg->hold = h;
	rg->odone = done;
	rg->oarg = arg;
	ref_enqueue(r, rg);
	return 0;
}
