/* SPDX-License-Identifier: MIT */
/*
 * Onboarding's supporting parts (specs/gateway.md, "Onboarding"): the
 * penalties that survive a re-dial, the probe prompt set (a file, or a
 * built-in one), the modules' option checks, onboarding's metrics, the
 * model's latency ceilings (the breaker's too) and onboarding's part of
 * GET /internal/v1/workers.  Below gateway_onboard.c: it calls nothing
 * there.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "gateway_onboard.h"
#include "grow.h"
#include "logfmt.h"

static const char *const phase_names[] = {
	"idle", "spec", "probing", "backoff", "cooldown",
};

static const char *const builtin_prompts[] = {
	"Explain in two sentences why the sky is blue.",
	"Write a haiku about a lighthouse in winter.",
	"List three prime numbers greater than 50 and say why each is prime.",
	"Translate 'good morning, how are you?' into French and Spanish.",
	"What is the capital of Australia? Answer in one sentence.",
	"Summarize the plot of Romeo and Juliet in three sentences.",
	"Write a short Python function that reverses a string.",
	"Describe the water cycle to a ten-year-old.",
	"Give two arguments for and two against working from home.",
	"What is 17 times 23? Show the steps.",
};

struct ob_w *ob_rec_of(const struct ob *ob, const struct gw_worker *w)
{
	return ob && ob->slot >= 0 ? w->ext[ob->slot] : NULL;
}

struct ob_w *ob_rec_by_id(struct ob *ob, uint64_t worker_id)
{
	struct gw_worker *w;

	for (w = ob->g->workers; w; w = w->next)
		if (w->id == worker_id)
			return ob_rec_of(ob, w);
	return NULL;
}

void ob_later(struct timespec *t, double s)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_sec += (time_t)s;
	t->tv_nsec += (long)((s - floor(s)) * 1e9);
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

bool ob_due(const struct timespec *t)
{
	return gw_since(t) >= 0;
}

const char *ob_q(char *dst, size_t cap, const char *s)
{
	engy_logfmt_value(dst, cap, s ? s : "");
	return dst;
}

int ob_push_u32(uint32_t **v, size_t *n, size_t *cap, uint32_t x)
{
	if (!engy_grow(v, cap, *n + 1, sizeof(**v)))
		return -ENOMEM;
	(*v)[(*n)++] = x;
	return 0;
}

/* ---- penalties -------------------------------------------------------- */

void ob_penalty_set(struct ob *ob, const struct ob_w *rec)
{
	struct ob_penalty *p;

	for (p = ob->penalties; p; p = p->next)
		if (p->ident == rec->w->ident)
			break;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return;
		p->ident = rec->w->ident;
		p->next = ob->penalties;
		ob->penalties = p;
	}
	p->until = rec->next_at;
	p->phase = rec->phase;
}

/* Drop lapsed penalties; the one of @ident (still running), or NULL. */
struct ob_penalty *ob_penalty_get(struct ob *ob, uint64_t ident)
{
	struct ob_penalty **pp, *p, *hit = NULL;

	for (pp = &ob->penalties; (p = *pp);) {
		if (ob_due(&p->until)) {
			*pp = p->next;
			free(p);
			continue;
		}
		if (p->ident == ident)
			hit = p;
		pp = &p->next;
	}
	return hit;
}

/* ---- the admin view ------------------------------------------------------- */

void gw_onboard_ceilings(struct gw *g, const struct gw_worker *w,
			 uint32_t *ttft_ms, uint32_t *tpot_ms)
{
	struct ob *ob = gw_mod_find(g, GW_MOD_ONBOARD);
	const struct ob_w *rec = ob_rec_of(ob, w);

	*ttft_ms = rec ? rec->ttft_ms : 0;
	*tpot_ms = rec ? rec->tpot_ms : 0;
}

void gw_onboard_describe(struct gw *g, const struct gw_worker *w, cJSON *o)
{
	struct ob *ob = gw_mod_find(g, GW_MOD_ONBOARD);
	const struct ob_w *rec = ob_rec_of(ob, w);
	cJSON *j = cJSON_AddObjectToObject(o, "onboarding");

	if (!j || !rec)
		return;
	cJSON_AddStringToObject(j, "phase", phase_names[rec->phase]);
	cJSON_AddNumberToObject(j, "round", rec->round);
	cJSON_AddNumberToObject(j, "probes_inflight", rec->inflight);
	cJSON_AddNumberToObject(j, "attempts_ok", rec->ok);
	cJSON_AddNumberToObject(j, "attempts_failed", rec->failed);
	cJSON_AddNumberToObject(j, "verdicts_pass", rec->v_pass);
	cJSON_AddNumberToObject(j, "verdicts_cheat", rec->v_cheat);
	cJSON_AddNumberToObject(j, "verdicts_unproven", rec->v_unproven);
	cJSON_AddNumberToObject(j, "verdicts_needed", ob_verdicts_needed(ob));
	cJSON_AddNumberToObject(j, "rounds_passed", (double)rec->rounds_passed);
	cJSON_AddNumberToObject(j, "rounds_failed", (double)rec->rounds_failed);
	cJSON_AddNumberToObject(j, "ttft_ceiling_ms", rec->ttft_ms);
	cJSON_AddNumberToObject(j, "tpot_ceiling_ms", rec->tpot_ms);
	if (rec->phase == OB_BACKOFF || rec->phase == OB_COOLDOWN)
		cJSON_AddNumberToObject(j, "next_in_s",
					fmax(0, -gw_since(&rec->next_at)));
	cJSON_AddStringToObject(j, "last", rec->last);
}

void gw_onboard_totals(struct gw *g, uint64_t *passed, uint64_t *failed)
{
	struct ob *ob = gw_mod_find(g, GW_MOD_ONBOARD);

	*passed = ob ? ob->passed : 0;
	*failed = ob ? ob->failed : 0;
}

/* ---- init ------------------------------------------------------------- */

int ob_load_prompts(struct ob *ob, const char *path)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	char *s, *line, *save = NULL;
	int rc = engy_read_file(path, 16 << 20, &buf, &len);

	if (rc < 0) {
		GW_LOG(ob->g, ENGY_LOG_ERR,
		       "event=config_invalid "
		       "option=probe_prompts error=\"%s\"",
		       strerror(-rc));
		return rc;
	}
	s = (char *)buf;
	for (line = strtok_r(s, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t n = strlen(line);
		char **np;

		while (n && (line[n - 1] == '\r' || line[n - 1] == ' '))
			line[--n] = '\0';
		if (!n || line[0] == '#')
			continue;
		np = realloc(ob->prompts, (ob->n_prompts + 1) * sizeof(*np));
		if (!np || !(np[ob->n_prompts] = strdup(line))) {
			if (np)
				ob->prompts = np;
			free(buf);
			return -ENOMEM;
		}
		ob->prompts = np;
		ob->n_prompts++;
	}
	free(buf);
	if (!ob->n_prompts) {
		GW_LOG(ob->g, ENGY_LOG_ERR,
		       "event=config_invalid "
		       "option=probe_prompts reason=\"no prompt in the file\"");
		return -EINVAL;
	}
	return 0;
}

int ob_bad(const struct gw *g, const char *opt, const char *why)
{
	GW_LOG(g, ENGY_LOG_ERR, "event=config_invalid option=%s reason=\"%s\"",
	       opt, why);
	return -EINVAL;
}

int ob_check_conf(const struct gw *g, const struct gw_mod_conf *c)
{
	if (!(c->probe_min_success >= 0 && c->probe_min_success <= 1))
		return ob_bad(g, "probe_min_success", "must be 0..1");
	if (!(c->probe_window_s > 0) || !(c->probe_retry_s >= 0) ||
	    !(c->probe_verdict_timeout_s > 0))
		return ob_bad(
			g, "probe_window_s",
			"probe_window_s and "
			"probe_verdict_timeout_s must be > 0, probe_retry_s >= 0");
	if (!(c->verdict_poll_s >= 0))
		return ob_bad(g, "verdict_poll_s", "must be >= 0");
	if (!(c->breaker_window_s > 0) || !(c->breaker_cooldown_s >= 0))
		return ob_bad(g, "breaker_window_s",
			      "breaker_window_s must be > 0, "
			      "breaker_cooldown_s >= 0");
	if (!(c->breaker_max_error_ratio >= 0 &&
	      c->breaker_max_error_ratio <= 1) ||
	    !(c->breaker_max_slow_ratio >= 0 && c->breaker_max_slow_ratio <= 1))
		return ob_bad(g, "breaker_max_error_ratio",
			      "ratios must be 0..1");
	if (!(c->tee_sample_rate >= 0 && c->tee_sample_rate <= 1) ||
	    !(c->tee_ttl_s > 0))
		return ob_bad(g, "tee_sample_rate",
			      "tee_sample_rate must be 0..1, "
			      "tee_ttl_s > 0");
	return 0;
}

void ob_metrics(struct ob *ob)
{
	static const char *const vn[] = { NULL, "pass", "cheat", "unproven" };
	const struct engy_host *r = ob->g->h;
	char l[48];
	int i;

	r->metric(r, ENGY_METRIC_COUNTER, "engy_gw_onboard_rounds_total",
		  "onboarding rounds decided", "result=\"pass\"", NULL, 0,
		  &ob->m_pass);
	r->metric(r, ENGY_METRIC_COUNTER, "engy_gw_onboard_rounds_total",
		  "onboarding rounds decided", "result=\"fail\"", NULL, 0,
		  &ob->m_fail);
	r->metric(r, ENGY_METRIC_COUNTER, "engy_gw_probe_attempts_total",
		  "probe attempts ended (is_probe, never billed)",
		  "result=\"ok\"", NULL, 0, &ob->m_ok);
	r->metric(r, ENGY_METRIC_COUNTER, "engy_gw_probe_attempts_total",
		  "probe attempts ended (is_probe, never billed)",
		  "result=\"failed\"", NULL, 0, &ob->m_err);
	for (i = 1; i <= 3; i++) {
		snprintf(l, sizeof(l), "verdict=\"%s\"", vn[i]);
		r->metric(r, ENGY_METRIC_COUNTER,
			  "engy_gw_probe_verdicts_total",
			  "TOPLOC verdicts on probes", l, NULL, 0, &ob->m_v[i]);
	}
	r->metric(r, ENGY_METRIC_COUNTER, "engy_gw_cheat_pulls_total",
		  "legs pulled by a cheat verdict on buyer traffic", NULL, NULL,
		  0, &ob->m_cheat);
}

size_t ob_n_builtin(void)
{
	return sizeof(builtin_prompts) / sizeof(builtin_prompts[0]);
}

const char *ob_prompt(struct ob *ob)
{
	ob->rng ^= ob->rng << 13;
	ob->rng ^= ob->rng >> 7;
	ob->rng ^= ob->rng << 17;
	return ob->n_prompts ? ob->prompts[ob->rng % ob->n_prompts]
			     : builtin_prompts[ob->rng % ob_n_builtin()];
}

void ob_prompts_free(struct ob *ob)
{
	size_t i;

	for (i = 0; i < ob->n_prompts; i++)
		free(ob->prompts[i]);
	free(ob->prompts);
	ob->prompts = NULL;
	ob->n_prompts = 0;
}

void ob_penalties_free(struct ob *ob)
{
	struct ob_penalty *p;

	while ((p = ob->penalties)) {
		ob->penalties = p->next;
		free(p);
	}
}
