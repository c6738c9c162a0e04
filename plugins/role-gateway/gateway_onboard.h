/* SPDX-License-Identifier: MIT */
/*
 * Onboarding's own state, shared by gateway_onboard.c (the model's spec,
 * rounds, probes, verdicts, the observers) and gateway_onboard_aux.c
 * below it (penalties, the prompt set, options, metrics, the admin
 * view).
 */
#ifndef ENGY_ROLE_GATEWAY_ONBOARD_H
#define ENGY_ROLE_GATEWAY_ONBOARD_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "gateway_mod.h"

struct event;
struct engy_metric;

enum ob_phase { OB_IDLE = 0, OB_SPEC, OB_PROBING, OB_BACKOFF, OB_COOLDOWN };
enum ob_verify { OBV_NONE = 0, OBV_GATEWAY, OBV_AUDITOR };

struct ob_w;

struct ob_probe { /* one probe in flight */
	struct ob_probe *next, **pprev;
	struct ob_w *rec; /* NULL once its worker closed */
};

struct ob_w { /* w->ext[ob->slot] */
	struct gw_worker *w;
	enum ob_phase phase;
	uint32_t round;
	struct timespec began, next_at;
	/* the model's spec */
	uint32_t ttft_ms, tpot_ms, toploc_v, toploc_p_ppm;
	uint16_t mant_mean_centi, mant_median_centi; /* 0: unchecked */
	/* this round */
	unsigned sent, inflight, ok, failed;
	uint32_t *ttft, *tpot;
	size_t n_ttft, n_tpot, cap_ttft, cap_tpot;
	char (*ids)[40]; /* answered probes awaiting verdicts */
	size_t n_ids, cap_ids;
	unsigned v_sent, v_pass, v_cheat, v_unproven;
	/* all rounds */
	uint64_t rounds_passed, rounds_failed;
	char last[200];
	struct ob_probe *probes;
};

struct ob_penalty { /* a wait that survives a re-dial */
	struct ob_penalty *next;
	uint64_t ident;
	struct timespec until;
	enum ob_phase phase;
};

struct ob {
	struct gw *g;
	const struct gw_mod_conf *c;
	int slot;
	enum ob_verify verify;
	struct gw_pv *pv;
	char **prompts;
	size_t n_prompts;
	uint64_t rng;
	struct event *tick, *kick;
	bool stopping;
	struct ob_probe *orphans;
	struct ob_penalty *penalties;
	uint64_t passed, failed;
	/* the store's verdicts (vpoll) */
	int64_t vp_since_ms, vp_after;
	struct timespec vp_next;
	bool vp_busy, vp_failed;
	struct engy_metric *m_pass, *m_fail, *m_ok, *m_err, *m_v[4], *m_cheat;
};

static inline unsigned ob_verdicts_needed(const struct ob *ob)
{
	return ob->verify == OBV_NONE ? 0 : (unsigned)ob->c->probe_verdicts;
}

/* gateway_onboard_aux.c */
struct ob_w *ob_rec_of(const struct ob *ob, const struct gw_worker *w);
struct ob_w *ob_rec_by_id(struct ob *ob, uint64_t worker_id);
/* *@t = now + @s (CLOCK_MONOTONIC); whether @t has come. */
void ob_later(struct timespec *t, double s);
bool ob_due(const struct timespec *t);
const char *ob_q(char *dst, size_t cap, const char *s);
int ob_push_u32(uint32_t **v, size_t *n, size_t *cap, uint32_t x);
/* Remember @rec's wait (phase, next_at) for its (key, worker_name). */
void ob_penalty_set(struct ob *ob, const struct ob_w *rec);
/* The running wait of @ident, or NULL (lapsed ones are dropped). */
struct ob_penalty *ob_penalty_get(struct ob *ob, uint64_t ident);
void ob_penalties_free(struct ob *ob);
/* A probe prompt: the configured set's, else a built-in one. */
const char *ob_prompt(struct ob *ob);
int ob_load_prompts(struct ob *ob, const char *path);
void ob_prompts_free(struct ob *ob);
/* The modules' option checks; 0 or -EINVAL (logged). */
int ob_check_conf(const struct gw *g, const struct gw_mod_conf *c);
int ob_bad(const struct gw *g, const char *opt, const char *why);
void ob_metrics(struct ob *ob);
size_t ob_n_builtin(void);

#endif /* ENGY_ROLE_GATEWAY_ONBOARD_H */
