/* SPDX-License-Identifier: MIT */
/*
 * Onboarding (specs/gateway.md, "Onboarding"): a permissionless worker
 * earns buyer traffic with probe traffic.  Admitted as NEW, it gets its
 * model's spec (latency ceilings, TOPLOC thresholds) from the store, then
 * rounds of probes: synthetic requests pinned to it with gw_submit()
 * (is_probe: logged with cost 0, never billed, never scored), served
 * like production.  A round passes when
 *
 *   - at least probe_count probe attempts ended and at least
 *     probe_min_success of them were answered (200; 502 and 504 fail);
 *   - the nearest-rank p99 of their TTFT and TPOT is inside the model's
 *     qual_ttft_p99_ms / qual_tpot_p99_ms (or the role's defaults);
 *   - probe_verdicts TOPLOC verdicts came and probe_min_success of them
 *     pass, none cheat: rendered by the gateway's own probe verifier
 *     (gateway_probe.c) or by an auditor through the tee's ack;
 *
 * and the worker becomes ACTIVE.  A failed round (too many errors, too
 * slow, a verdict short of pass, the window or the verdict timeout
 * passed) leaves it PROBING without probes for probe_retry_s, then a new
 * round begins.  PULLED workers (the breaker's; this file hears of it as
 * a change of state) re-qualify the same way after breaker_cooldown_s.  A worker that re-dials keeps its penalty:
 * the wait is remembered by (miner key, worker_name).  With onboarding
 * off, admitted workers serve at once and a pulled one returns (NEW)
 * after the cooldown.  1st-party workers are never probed.
 *
 * A cheat verdict on a miner's buyer traffic pulls every leg of that
 * miner on the model (gw_onboard_cheat()): at once when an auditor acks
 * it to this gateway's tee, and, for verdicts acked to another gateway
 * on the same store, when the store's verdicts are read (every
 * verdict_poll_s).  The miner then re-qualifies as after a breaker pull.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "gateway_onboard.h"
#include "grow.h"
#include "logfmt.h"

/* ---- rounds ----------------------------------------------------------- */

static void kick(struct ob *ob)
{
	if (ob->kick && !ob->stopping)
		event_active(ob->kick, 0, 0);
}

/* Start the next round of @rec (state PROBING). */
static void round_begin(struct ob *ob, struct ob_w *rec, const char *why)
{
	char msg[96];

	rec->round++;
	rec->sent = rec->ok = rec->failed = 0;
	rec->n_ttft = rec->n_tpot = rec->n_ids = 0;
	rec->v_sent = rec->v_pass = rec->v_cheat = rec->v_unproven = 0;
	clock_gettime(CLOCK_MONOTONIC, &rec->began);
	rec->phase = OB_PROBING;
	snprintf(msg, sizeof(msg), "onboarding round %u (%s)", rec->round, why);
	gw_worker_set_state(rec->w, GW_W_PROBING, msg);
	kick(ob);
}

static void round_failed(struct ob *ob, struct ob_w *rec, const char *why)
{
	char qn[300], qw[300];

	rec->phase = OB_BACKOFF;
	rec->rounds_failed++;
	ob->failed++;
	ob_later(&rec->next_at, ob->c->probe_retry_s);
	ob_penalty_set(ob, rec);
	snprintf(rec->last, sizeof(rec->last), "round %u failed: %s",
		 rec->round, why);
	if (ob->m_fail)
		gw_madd(ob->g, ob->m_fail, 1);
	GW_LOG(ob->g, ENGY_LOG_NOTICE,
	       "event=onboard_failed worker=%llu name=%s miner=%s round=%u "
	       "ok=%u failed=%u verdicts_pass=%u reason=%s retry_s=%.1f",
	       (unsigned long long)rec->w->id,
	       ob_q(qn, sizeof(qn), rec->w->worker_name), rec->w->hotkey,
	       rec->round, rec->ok, rec->failed, rec->v_pass,
	       ob_q(qw, sizeof(qw), why), ob->c->probe_retry_s);
}

static void round_passed(struct ob *ob, struct ob_w *rec, uint32_t ttft,
			 uint32_t tpot)
{
	char qn[300];

	rec->phase = OB_IDLE;
	rec->rounds_passed++;
	ob->passed++;
	snprintf(rec->last, sizeof(rec->last),
		 "round %u passed: %u/%u "
		 "answered, ttft p99 %u ms, tpot p99 %u ms, %u verdicts pass",
		 rec->round, rec->ok, rec->ok + rec->failed, ttft, tpot,
		 rec->v_pass);
	if (ob->m_pass)
		gw_madd(ob->g, ob->m_pass, 1);
	GW_LOG(ob->g, ENGY_LOG_NOTICE,
	       "event=worker_qualified worker=%llu name=%s miner=%s round=%u "
	       "ok=%u failed=%u ttft_p99_ms=%u tpot_p99_ms=%u verdicts_pass=%u",
	       (unsigned long long)rec->w->id,
	       ob_q(qn, sizeof(qn), rec->w->worker_name), rec->w->hotkey,
	       rec->round, rec->ok, rec->failed, ttft, tpot, rec->v_pass);
	gw_worker_set_state(rec->w, GW_W_ACTIVE, "qualified");
}

static uint32_t p99(const uint32_t *v, size_t n)
{
	uint32_t *tmp, r;

	if (!n)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return UINT32_MAX;
	memcpy(tmp, v, n * sizeof(*tmp));
	r = gw_mod_quantile(tmp, n, 0.99);
	free(tmp);
	return r;
}

/* Decide @rec's round when its numbers allow it. */
static void evaluate(struct ob *ob, struct ob_w *rec)
{
	const struct gw_mod_conf *c = ob->c;
	unsigned total = rec->ok + rec->failed, need = ob_verdicts_needed(ob);
	unsigned have = rec->v_pass + rec->v_cheat + rec->v_unproven;
	unsigned allowed = (unsigned)floor(
		(1 - c->probe_min_success) * (double)c->probe_count + 1e-9);
	double age = gw_since(&rec->began);
	uint32_t ttft, tpot;
	char why[160];

	if (rec->phase != OB_PROBING)
		return;
	if (rec->failed > allowed) {
		snprintf(why, sizeof(why),
			 "%u of %u probe attempts failed "
			 "(502/504)",
			 rec->failed, total);
		round_failed(ob, rec, why);
		return;
	}
	if (rec->v_cheat) {
		round_failed(ob, rec, "a TOPLOC verdict is cheat");
		return;
	}
	if (total < (unsigned)c->probe_count) {
		if (age > c->probe_window_s) {
			snprintf(why, sizeof(why),
				 "only %u of %lld probe "
				 "attempts ended within %.0f s",
				 total, (long long)c->probe_count,
				 c->probe_window_s);
			round_failed(ob, rec, why);
		}
		return;
	}
	ttft = p99(rec->ttft, rec->n_ttft);
	tpot = p99(rec->tpot, rec->n_tpot);
	if (rec->ttft_ms && ttft > rec->ttft_ms) {
		snprintf(why, sizeof(why),
			 "TTFT p99 %u ms is over the ceiling "
			 "%u ms",
			 ttft, rec->ttft_ms);
		round_failed(ob, rec, why);
		return;
	}
	if (rec->tpot_ms && tpot > rec->tpot_ms) {
		snprintf(why, sizeof(why),
			 "TPOT p99 %u ms is over the ceiling "
			 "%u ms",
			 tpot, rec->tpot_ms);
		round_failed(ob, rec, why);
		return;
	}
	if (have < need) {
		if (age > c->probe_verdict_timeout_s) {
			snprintf(why, sizeof(why),
				 "%u of %u TOPLOC verdicts "
				 "within %.0f s",
				 have, need, c->probe_verdict_timeout_s);
			round_failed(ob, rec, why);
		}
		return;
	}
	if (need &&
	    (double)rec->v_pass < ceil(c->probe_min_success * have - 1e-9)) {
		snprintf(why, sizeof(why),
			 "%u of %u TOPLOC verdicts pass "
			 "(%u unproven)",
			 rec->v_pass, have, rec->v_unproven);
		round_failed(ob, rec, why);
		return;
	}
	round_passed(ob, rec, ttft, tpot);
}

/* ---- probes ----------------------------------------------------------- */

static void probe_done(void *arg, const struct gw_outcome *o,
		       const cJSON *frame);

static const struct gw_sink probe_sink = { .done = probe_done };

static cJSON *probe_body(struct ob *ob, const struct gw_worker *w)
{
	const char *p = ob_prompt(ob);
	cJSON *b = cJSON_CreateObject(), *msgs, *m;

	if (!b || !cJSON_AddStringToObject(b, "model", w->model) ||
	    !(msgs = cJSON_AddArrayToObject(b, "messages")) ||
	    !(m = cJSON_CreateObject()) || !cJSON_AddItemToArray(msgs, m) ||
	    !cJSON_AddStringToObject(m, "role", "user") ||
	    !cJSON_AddStringToObject(m, "content", p) ||
	    !cJSON_AddNumberToObject(b, "max_tokens",
				     (double)ob->c->probe_max_tokens)) {
		cJSON_Delete(b);
		return NULL;
	}
	return b;
}

static bool wants_more(const struct ob *ob, const struct ob_w *rec)
{
	unsigned need = ob_verdicts_needed(ob);

	if (rec->sent < (unsigned)ob->c->probe_count)
		return true;
	/* The gateway verifies answered probes: enough must be answered. */
	return ob->verify == OBV_GATEWAY &&
	       rec->v_sent + rec->inflight < need &&
	       rec->sent < 4 * (unsigned)ob->c->probe_count + need;
}

static void fill(struct ob *ob, struct ob_w *rec)
{
	struct gw_worker *w = rec->w;
	struct ob_probe *p;
	cJSON *body;
	int rc;

	while (!ob->stopping && rec->phase == OB_PROBING && w->conn &&
	       rec->inflight < (unsigned)ob->c->probe_concurrency &&
	       w->inflight < w->max_inflight && wants_more(ob, rec)) {
		body = probe_body(ob, w);
		p = body ? calloc(1, sizeof(*p)) : NULL;
		if (!p) {
			cJSON_Delete(body);
			return;
		}
		p->rec = rec;
		p->next = rec->probes;
		if (p->next)
			p->next->pprev = &p->next;
		p->pprev = &rec->probes;
		rec->probes = p;
		rec->inflight++;
		rec->sent++;
		/* @p may be done (and freed) before this returns. */
		rc = gw_submit(ob->g, w->model, body, w, true, &probe_sink, p);
		if (rc < 0) {
			*p->pprev = p->next;
			if (p->next)
				p->next->pprev = p->pprev;
			free(p);
			rec->inflight--;
			rec->sent--;
			GW_LOG(ob->g, ENGY_LOG_WARNING,
			       "event=probe_submit_failed worker=%llu error=\"%s\"",
			       (unsigned long long)w->id, strerror(-rc));
			return;
		}
	}
}

static void probe_done(void *arg, const struct gw_outcome *o,
		       const cJSON *frame)
{
	struct ob_probe *p = arg;
	struct ob_w *rec = p->rec;
	struct ob *ob;

	*p->pprev = p->next;
	if (p->next)
		p->next->pprev = p->pprev;
	free(p);
	if (!rec)
		return; /* its worker is gone */
	ob = gw_mod_find(rec->w->g, GW_MOD_ONBOARD);
	rec->inflight--;
	if (frame && o->status == 200 && rec->phase == OB_PROBING &&
	    ob->verify == OBV_GATEWAY && rec->v_sent < ob_verdicts_needed(ob)) {
		if (gw_pv_submit(ob->pv, frame, rec->w->model_root,
				 rec->toploc_v, rec->toploc_p_ppm,
				 rec->mant_mean_centi, rec->mant_median_centi,
				 rec->w->id, rec->round) == 0)
			rec->v_sent++;
	}
	kick(ob);
}

/* Every attempt of a probe (the gateway may retry one on its worker). */
static void ob_finished(void *arg, struct gw_worker *w, const struct gw_req *r,
			const struct gw_outcome *o)
{
	struct ob *ob = arg;
	struct ob_w *rec = ob_rec_of(ob, w);

	if (r->sink != &probe_sink || !rec || rec->phase != OB_PROBING)
		return;
	if (o->status == 200) {
		rec->ok++;
		if (ob->m_ok)
			gw_madd(ob->g, ob->m_ok, 1);
		ob_push_u32(&rec->ttft, &rec->n_ttft, &rec->cap_ttft,
			    o->ttft_ms);
		if (o->completion_tokens > 1)
			ob_push_u32(&rec->tpot, &rec->n_tpot, &rec->cap_tpot,
				    o->tpot_ms);
		if (ob->verify == OBV_AUDITOR) {
			if (!ENGY_GROW(rec->ids, rec->cap_ids, rec->n_ids + 1))
				goto eval;
			snprintf(rec->ids[rec->n_ids++], sizeof(rec->ids[0]),
				 "%s", r->request_id);
		}
	} else if (o->miner_fault) {
		rec->failed++;
		if (ob->m_err)
			gw_madd(ob->g, ob->m_err, 1);
	}
eval:
	evaluate(ob, rec);
}

/* ---- verdicts --------------------------------------------------------- */

static void count_verdict(struct ob *ob, struct ob_w *rec, int verdict,
			  const char *reason, const char *by)
{
	char qr[160];

	if (verdict == ENGY_VERDICT_PASS)
		rec->v_pass++;
	else if (verdict == ENGY_VERDICT_CHEAT)
		rec->v_cheat++;
	else
		rec->v_unproven++;
	if (verdict >= 1 && verdict <= 3 && ob->m_v[verdict])
		gw_madd(ob->g, ob->m_v[verdict], 1);
	GW_LOG(ob->g, ENGY_LOG_INFO,
	       "event=probe_verdict worker=%llu round=%u by=%s verdict=%s "
	       "reason=%s",
	       (unsigned long long)rec->w->id, rec->round, by,
	       verdict == ENGY_VERDICT_PASS    ? "pass"
	       : verdict == ENGY_VERDICT_CHEAT ? "cheat"
					       : "unproven",
	       ob_q(qr, sizeof(qr), reason));
	evaluate(ob, rec);
}

static void pv_done(struct gw *g, uint64_t worker_id, uint32_t round,
		    int verdict, const char *reason)
{
	struct ob *ob = gw_mod_find(g, GW_MOD_ONBOARD);
	struct ob_w *rec = ob ? ob_rec_by_id(ob, worker_id) : NULL;

	if (rec && rec->round == round && rec->phase == OB_PROBING)
		count_verdict(ob, rec, verdict, reason, "gateway");
}

void gw_onboard_verdict(struct gw *g, uint64_t worker_id,
			const char *request_id, int verdict)
{
	struct ob *ob = gw_mod_find(g, GW_MOD_ONBOARD);
	struct ob_w *rec = ob ? ob_rec_by_id(ob, worker_id) : NULL;
	size_t i;

	if (!rec || rec->phase != OB_PROBING || ob->verify != OBV_AUDITOR)
		return;
	for (i = 0; i < rec->n_ids; i++) {
		if (strcmp(rec->ids[i], request_id) != 0)
			continue;
		/* One verdict per probe. */
		memmove(rec->ids[i], rec->ids[rec->n_ids - 1],
			sizeof(rec->ids[0]));
		rec->n_ids--;
		count_verdict(ob, rec, verdict, "auditor", "auditor");
		return;
	}
}

/* ---- the model's spec ---------------------------------------------------- */

struct spec_job {
	struct ob *ob;
	uint64_t worker_id;
	char model[128];
	struct engy_model m;
	int rc;
};

static void spec_fn(void *arg)
{
	struct spec_job *j = arg;

	j->rc = j->ob->g->st->model_get(j->ob->g->sti, j->model, &j->m);
}

/* @rec's spec is in (@m), or not (@err, -errno): the role's ceilings
 * stand in for what it lacks; a round waiting for it begins. */
static void spec_in(struct ob *ob, struct ob_w *rec, const struct engy_model *m,
		    int err)
{
	if (m) {
		rec->ttft_ms = m->qual_ttft_p99_ms;
		rec->tpot_ms = m->qual_tpot_p99_ms;
		rec->toploc_v = m->toploc_v;
		rec->toploc_p_ppm = m->toploc_p_ppm;
		rec->mant_mean_centi = m->toploc_mant_mean_centi;
		rec->mant_median_centi = m->toploc_mant_median_centi;
	} else {
		GW_LOG(ob->g, ENGY_LOG_WARNING,
		       "event=onboard_spec_failed worker=%llu error=\"%s\"",
		       (unsigned long long)rec->w->id, strerror(-err));
	}
	if (!rec->ttft_ms)
		rec->ttft_ms = (uint32_t)ob->c->ttft_p99_ms;
	if (!rec->tpot_ms)
		rec->tpot_ms = (uint32_t)ob->c->tpot_p99_ms;
	if (rec->phase == OB_SPEC && !ob->stopping)
		round_begin(ob, rec, "admitted");
}

static void spec_done(void *arg, int rc)
{
	struct spec_job *j = arg;
	struct ob_w *rec = ob_rec_by_id(j->ob, j->worker_id);

	if (rec)
		spec_in(j->ob, rec, rc == 0 && j->rc == 0 ? &j->m : NULL,
			rc < 0 ? rc : j->rc);
	free(j);
}

/* The model's spec from the store (pool); a round in phase SPEC begins
 * once it is in. */
static void spec_fetch(struct ob *ob, struct ob_w *rec)
{
	const struct engy_host *h = ob->g->h;
	struct spec_job *j = calloc(1, sizeof(*j));

	if (!j) {
		spec_in(ob, rec, NULL, -ENOMEM);
		return;
	}
	j->ob = ob;
	j->worker_id = rec->w->id;
	snprintf(j->model, sizeof(j->model), "%s", rec->w->model);
	if (h->work(h, spec_fn, spec_done, j) < 0)
		spec_done(j, -ECANCELED);
}

/* ---- observers and timers -------------------------------------------- */

static void ob_admitted(void *arg, struct gw_worker *w)
{
	struct ob *ob = arg;
	struct ob_w *rec = calloc(1, sizeof(*rec));
	struct ob_penalty *pen;

	if (!rec) {
		GW_LOG(ob->g, ENGY_LOG_ERR, "event=onboard_oom worker=%llu",
		       (unsigned long long)w->id);
		return;
	}
	rec->w = w;
	w->ext[ob->slot] = rec;
	pen = w->first_party ? NULL : ob_penalty_get(ob, w->ident);
	if (pen) {
		/* A re-dial does not cut a wait short. */
		rec->phase = pen->phase;
		rec->next_at = pen->until;
		snprintf(rec->last, sizeof(rec->last),
			 "waiting out an earlier "
			 "%s",
			 pen->phase == OB_COOLDOWN ? "pull" : "failed round");
		gw_worker_set_state(
			w, ob->g->c->onboarding ? GW_W_PROBING : GW_W_PULLED,
			"re-dialled while waiting");
	} else if (!w->first_party && ob->g->c->onboarding) {
		rec->phase = OB_SPEC;
	}
	spec_fetch(ob, rec);
}

static void rec_free(struct ob *ob, struct ob_w *rec)
{
	struct ob_probe *p;

	/* Probes still out end later: they find no worker. */
	while ((p = rec->probes)) {
		rec->probes = p->next;
		p->rec = NULL;
		p->next = ob->orphans;
		if (p->next)
			p->next->pprev = &p->next;
		p->pprev = &ob->orphans;
		ob->orphans = p;
	}
	rec->w->ext[ob->slot] = NULL;
	free(rec->ttft);
	free(rec->tpot);
	free(rec->ids);
	free(rec);
}

static void ob_closed(void *arg, struct gw_worker *w)
{
	struct ob *ob = arg;
	struct ob_w *rec = ob_rec_of(ob, w);

	if (rec)
		rec_free(ob, rec);
}

/* @w was pulled (the breaker): re-qualify after the cooldown.  One
 * already waiting (re-dialled during a wait: ob_admitted()) keeps its
 * wait. */
static void ob_state(void *arg, struct gw_worker *w, enum gw_wstate from)
{
	struct ob *ob = arg;
	struct ob_w *rec = ob_rec_of(ob, w);

	if (!rec || w->state != GW_W_PULLED || rec->phase == OB_COOLDOWN ||
	    rec->phase == OB_BACKOFF)
		return;
	rec->phase = OB_COOLDOWN;
	ob_later(&rec->next_at, ob->c->breaker_cooldown_s);
	ob_penalty_set(ob, rec);
	snprintf(rec->last, sizeof(rec->last), "pulled by the breaker");
}

/* ---- cheat verdicts ------------------------------------------------------ */

unsigned gw_onboard_cheat(struct gw *g, const char *miner, const char *model,
			  const char *request_id, const char *source)
{
	struct ob *ob = gw_mod_find(g, GW_MOD_ONBOARD);
	struct gw_worker *w;
	struct ob_w *rec;
	unsigned n = 0;
	char qn[300], qm[300], qr[200];

	for (w = g->workers; w; w = w->next) {
		if (strcmp(w->hotkey, miner) != 0 ||
		    (model && model[0] && strcmp(w->model, model) != 0) ||
		    (w->state != GW_W_NEW && w->state != GW_W_PROBING &&
		     w->state != GW_W_ACTIVE))
			continue;
		if (w->first_party) {
			GW_LOG(g, ENGY_LOG_WARNING,
			       "event=cheat_verdict_first_party worker=%llu "
			       "name=%s miner=%s request=%s source=%s",
			       (unsigned long long)w->id,
			       ob_q(qn, sizeof(qn), w->worker_name), w->hotkey,
			       ob_q(qr, sizeof(qr), request_id), source);
			continue;
		}
		GW_LOG(g, ENGY_LOG_NOTICE,
		       "event=cheat_pull worker=%llu name=%s miner=%s model=%s "
		       "request=%s source=%s cooldown_s=%.1f",
		       (unsigned long long)w->id,
		       ob_q(qn, sizeof(qn), w->worker_name), w->hotkey,
		       ob_q(qm, sizeof(qm), w->model),
		       ob_q(qr, sizeof(qr), request_id), source,
		       g->c->mod.breaker_cooldown_s);
		gw_worker_set_state(w, GW_W_PULLED, "cheat verdict");
		rec = ob ? ob_rec_of(ob, w) : NULL;
		if (rec)
			snprintf(rec->last, sizeof(rec->last),
				 "pulled: cheat verdict on %s (%s)", request_id,
				 source);
		n++;
	}
	if (ob && n && ob->m_cheat)
		gw_madd(g, ob->m_cheat, n);
	return n;
}

/* The store's new verdicts, read on the pool: the cheats on buyer
 * traffic that another gateway's auditor rendered. */
struct vpoll_job {
	struct ob *ob;
	struct engy_verdict_query q;
	struct engy_verdict *v;
	size_t n;
	int rc;
};

static void vpoll_fn(void *arg)
{
	struct vpoll_job *j = arg;
	const struct gw *g = j->ob->g;

	j->rc = g->st->verdict_list(g->sti, &j->q, &j->v, &j->n);
}

static void vpoll_done(void *arg, int rc)
{
	struct vpoll_job *j = arg;
	struct ob *ob = j->ob;
	size_t i;

	ob->vp_busy = false;
	if (rc < 0 || j->rc < 0) {
		if (!ob->vp_failed)
			GW_LOG(ob->g, ENGY_LOG_WARNING,
			       "event=verdict_poll_failed error=\"%s\"",
			       strerror(-(rc < 0 ? rc : j->rc)));
		ob->vp_failed = true;
	} else {
		ob->vp_failed = false;
		for (i = 0; i < j->n; i++) {
			const struct engy_verdict *v = &j->v[i];

			if (v->id > ob->vp_after)
				ob->vp_after = v->id;
			if (v->verdict == ENGY_VERDICT_CHEAT && !v->is_probe &&
			    !ob->stopping)
				gw_onboard_cheat(ob->g, v->miner, v->model,
						 v->request_id, "store");
		}
		/* A full page: more are waiting, read on at the next tick. */
		if (j->n >= j->q.limit)
			ob_later(&ob->vp_next, 0);
	}
	free(j->v);
	free(j);
}

static void vpoll(struct ob *ob)
{
	const struct engy_host *h = ob->g->h;
	struct vpoll_job *j;

	if (ob->vp_busy || ob->stopping || !ob->g->st->verdict_list ||
	    ob->c->verdict_poll_s <= 0 || !ob_due(&ob->vp_next))
		return;
	ob_later(&ob->vp_next, ob->c->verdict_poll_s);
	j = calloc(1, sizeof(*j));
	if (!j)
		return;
	j->ob = ob;
	j->q.size = sizeof(j->q);
	j->q.limit = 1000;
	j->q.since_ms = ob->vp_since_ms;
	j->q.after_id = ob->vp_after;
	ob->vp_busy = true;
	if (h->work(h, vpoll_fn, vpoll_done, j) < 0) {
		ob->vp_busy = false;
		free(j);
	}
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct ob *ob = arg;
	struct gw_worker *w;
	struct ob_w *rec;

	for (w = ob->g->workers; w && !ob->stopping; w = w->next) {
		rec = ob_rec_of(ob, w);
		if (!rec || !w->conn)
			continue;
		if (rec->phase == OB_PROBING) {
			evaluate(ob, rec);
		} else if ((rec->phase == OB_BACKOFF ||
			    rec->phase == OB_COOLDOWN) &&
			   ob_due(&rec->next_at) && !rec->inflight) {
			if (ob->g->c->onboarding) {
				round_begin(ob, rec,
					    rec->phase == OB_COOLDOWN
						    ? "re-qualify after a pull"
						    : "retry");
			} else {
				rec->phase = OB_IDLE;
				gw_worker_set_state(w, GW_W_NEW,
						    "breaker cooldown over");
			}
		}
	}
	vpoll(ob);
	kick(ob);
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
	struct ob *ob = arg;
	struct gw_worker *w;
	struct ob_w *rec;

	for (w = ob->g->workers; w; w = w->next)
		if ((rec = ob_rec_of(ob, w)) && rec->phase == OB_PROBING)
			fill(ob, rec);
}

static void ob_stop(void *arg)
{
	struct ob *ob = arg;

	ob->stopping = true;
	if (ob->pv)
		gw_pv_stop(ob->pv);
}

static void ob_destroy(void *arg)
{
	struct ob *ob = arg;
	struct gw_worker *w;
	struct ob_probe *p;

	for (w = ob->g->workers; w; w = w->next)
		if (ob_rec_of(ob, w))
			rec_free(ob, ob_rec_of(ob, w));
	/* The role frees what requests are left without their sinks. */
	while ((p = ob->orphans)) {
		ob->orphans = p->next;
		free(p);
	}
	ob_penalties_free(ob);
	gw_pv_free(ob->pv);
	ob_prompts_free(ob);
	if (ob->tick)
		event_free(ob->tick);
	if (ob->kick)
		event_free(ob->kick);
	free(ob);
}

int gw_onboard_init(struct gw *g)
{
	const struct gw_mod_conf *c = &g->c->mod;
	struct gw_observer o = {
		.name = GW_MOD_ONBOARD,
		.admitted = ob_admitted,
		.state = ob_state,
		.closed = ob_closed,
		.finished = ob_finished,
		.stop = ob_stop,
		.destroy = ob_destroy,
	};
	struct timeval tv = { 0, 100000 };
	struct ob *ob;
	int rc = ob_check_conf(g, c);

	if (rc)
		return rc;
	ob = calloc(1, sizeof(*ob));
	if (!ob)
		return -ENOMEM;
	ob->g = g;
	ob->c = c;
	ob->slot = gw_ext_slot(g);
	o.arg = ob;
	rc = ob->slot < 0 ? ob->slot : gw_observe(g, &o);
	if (rc) {
		free(ob);
		return rc;
	}
	ob->rng = (uint64_t)gw_now_ms() * 0x9e3779b97f4a7c15ull | 1;
	/* Verdicts rendered from now on: a leg admitted later is probed
	 * anyway (with onboarding on). */
	ob->vp_since_ms = gw_now_ms();
	ob_metrics(ob);
	if (c->probe_prompts &&
	    (rc = ob_load_prompts(ob, c->probe_prompts)) < 0)
		return rc;
	rc = gw_pv_new(g, pv_done, &ob->pv);
	if (rc < 0)
		return rc;
	if (!c->probe_verify || !strcmp(c->probe_verify, "auto"))
		ob->verify = ob->pv ? OBV_GATEWAY : OBV_AUDITOR;
	else if (!strcmp(c->probe_verify, "gateway"))
		ob->verify = OBV_GATEWAY;
	else if (!strcmp(c->probe_verify, "auditor"))
		ob->verify = OBV_AUDITOR;
	else if (!strcmp(c->probe_verify, "none"))
		ob->verify = OBV_NONE;
	else
		return ob_bad(g, "probe_verify",
			      "auto, gateway, auditor or none");
	if (ob->verify == OBV_GATEWAY && !ob->pv)
		return ob_bad(g, "probe_verify",
			      "gateway needs a proof instance and "
			      "a backend instance with prefill in this config");
	ob->tick = event_new(g->h->evbase(g->h), -1, EV_PERSIST, on_tick, ob);
	ob->kick = event_new(g->h->evbase(g->h), -1, 0, on_kick, ob);
	if (!ob->tick || !ob->kick || event_add(ob->tick, &tv) < 0)
		return -ENOMEM;
	GW_LOG(g, ENGY_LOG_INFO,
	       "event=onboarding_ready onboarding=%s verify=%s probe_count=%lld "
	       "probe_verdicts=%lld prompts=%zu",
	       g->c->onboarding ? "on" : "off",
	       ob->verify == OBV_GATEWAY   ? "gateway"
	       : ob->verify == OBV_AUDITOR ? "auditor"
					   : "none",
	       (long long)c->probe_count, (long long)c->probe_verdicts,
	       ob->n_prompts ? ob->n_prompts : ob_n_builtin());
	if (ob->verify == OBV_NONE && g->c->onboarding)
		GW_LOG(g, ENGY_LOG_WARNING,
		       "event=onboarding_unverified "
		       "reason=\"probe_verify = none: workers qualify without "
		       "a TOPLOC check\"");
	return 0;
}
