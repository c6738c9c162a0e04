/* SPDX-License-Identifier: MIT */
/*
 * The gateway's SLA modules on top of the core (gateway_int.h's
 * extension points), specs/gateway.md "Onboarding" onwards:
 *
 *   gateway_admin.c    GET /internal/v1/workers, the modules' metrics
 *   gateway_tee.c      successful responses' commitments in expiring RAM,
 *                      GET /internal/v1/tee/sample, POST .../tee/ack, and
 *                      the bearer check of /internal/v1/
 *   gateway_onboard.c  NEW -> PROBING -> ACTIVE; PULLED -> PROBING:
 *                      the model's spec, probe rounds (gw_submit(),
 *                      pinned, is_probe), HTTP success, latency ceilings,
 *                      TOPLOC verdicts
 *   gateway_breaker.c  ACTIVE -> PULLED over a sliding window
 *   gateway_onboard_aux.c  penalties, prompts, option checks, metrics,
 *                      latency ceilings (gateway_onboard.h)
 *   gateway_probe.c    the gateway's own probe verifier: recompute on a
 *                      backend instance (prefill), verify with a proof
 *                      instance on the worker pool
 *
 * in layer order: a file calls only those below it (admin reads every
 * module, the tee hands onboarding its verdicts, the breaker reads
 * onboarding's ceilings), and all of them call into the core.  Onboarding
 * and the breaker never call each other: each hears of the other's
 * doing as a change of state (struct gw_observer's state).  Each module
 * registers one named observer; its state is that observer's arg
 * (gw_mod_find()).  All of it runs on the loop thread but the probe
 * verifier's verify step.
 */
#ifndef ENGY_ROLE_GATEWAY_MOD_H
#define ENGY_ROLE_GATEWAY_MOD_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "gateway_int.h"

struct engy_http_exchange;
struct engy_http_request;

#define GW_MOD_ONBOARD "onboard"
#define GW_MOD_BREAKER "breaker"
#define GW_MOD_TEE     "tee"
#define GW_MOD_ADMIN   "admin"

/* gateway_bus.c: the state of the module whose observer is named
 * @name, or NULL. */
void *gw_mod_find(struct gw *g, const char *name);
/* Nearest-rank p-quantile (0 < p <= 1) of @v[0..n) (sorted in place). */
uint32_t gw_mod_quantile(uint32_t *v, size_t n, double p);

/* ---- gateway_onboard.c ---------------------------------------------- */
int gw_onboard_init(struct gw *g);
/* A TOPLOC verdict (enum engy_verdict_kind) on probe @request_id of
 * worker @worker_id, from an auditor (tee ack). */
void gw_onboard_verdict(struct gw *g, uint64_t worker_id,
			const char *request_id, int verdict);
/* A cheat verdict on @miner's buyer request @request_id on @model (""
 * or NULL: any): every admitted permissionless leg of it is pulled and
 * re-qualifies after breaker_cooldown_s; @source (tee, store) is logged.
 * Returns the legs pulled. */
unsigned gw_onboard_cheat(struct gw *g, const char *miner, const char *model,
			  const char *request_id, const char *source);
/* The latency ceilings that apply to @w, 0 when none. */
void gw_onboard_ceilings(struct gw *g, const struct gw_worker *w,
			 uint32_t *ttft_ms, uint32_t *tpot_ms);
/* @w's onboarding as an "onboarding" member of @o. */
void gw_onboard_describe(struct gw *g, const struct gw_worker *w, cJSON *o);
/* Rounds passed and failed so far. */
void gw_onboard_totals(struct gw *g, uint64_t *passed, uint64_t *failed);

/* ---- gateway_probe.c ------------------------------------------------ */
struct gw_pv;
/* The verdict of one probe (worker id and round identify it). */
typedef void (*gw_pv_done)(struct gw *g, uint64_t worker_id, uint32_t round,
			   int verdict, const char *reason);
/* A verifier on the role's first proof instance and first backend with
 * prefill(); *@out NULL when the role has none. */
int gw_pv_new(struct gw *g, gw_pv_done done, struct gw_pv **out);
/* Queue @frame's commitment for recompute and verify; @model_root is the
 * worker's hello (a commitment naming another is a cheat); @limits from
 * the model spec (0: the proof instance's own).  0 or -errno. */
int gw_pv_submit(struct gw_pv *pv, const cJSON *frame, const char *model_root,
		 uint32_t toploc_v, uint32_t toploc_p_ppm,
		 uint16_t mant_mean_centi, uint16_t mant_median_centi,
		 uint64_t worker_id, uint32_t round);
/* Stop: cancel the recompute under way, refuse new work. */
void gw_pv_stop(struct gw_pv *pv);
void gw_pv_free(struct gw_pv *pv);
/* Verifications queued or running. */
unsigned gw_pv_pending(const struct gw_pv *pv);

/* ---- gateway_breaker.c ---------------------------------------------- */
int gw_breaker_init(struct gw *g);
/* @w's breaker and latency as "breaker", "ttft_p99_ms", "tpot_p99_ms"
 * members of @o. */
void gw_breaker_describe(struct gw *g, const struct gw_worker *w, cJSON *o);

/* ---- gateway_tee.c -------------------------------------------------- */
int gw_tee_init(struct gw *g);
/*
 * The bearer check of /internal/v1/: true when @hr carries the
 * configured token; otherwise @x is answered (404 while no token is
 * configured, 401 with WWW-Authenticate) and false returned.
 */
bool gw_internal_auth(struct gw *g, struct engy_http_exchange *x,
		      const struct engy_http_request *hr);
/* Answer @x with @body (taken; NULL: {"error": ...} of @status). */
void gw_internal_reply(struct gw *g, struct engy_http_exchange *x, int status,
		       cJSON *body, const char *error);

/* ---- gateway_admin.c ------------------------------------------------ */
int gw_admin_init(struct gw *g);

#endif /* ENGY_ROLE_GATEWAY_MOD_H */
