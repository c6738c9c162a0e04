/* SPDX-License-Identifier: MIT */
/*
 * The options of the gateway's SLA modules (onboarding, breaker, proof
 * tee, internal API), kept apart from the core's: struct gw_conf holds
 * one struct gw_mod_conf as `mod`, and gateway.c's option table expands
 * GW_MOD_OPTS into rows of the same `gateway { }` section.
 * specs/gateway.md ("Onboarding", "Circuit breaker", "Proof tee")
 * describes them.
 */
#ifndef ENGY_ROLE_GATEWAY_MOD_CONF_H
#define ENGY_ROLE_GATEWAY_MOD_CONF_H

#include <stdbool.h>
#include <stdint.h>

struct gw_mod_conf {
	/* onboarding */
	int64_t probe_count;	   /* probe attempts per round */
	int64_t probe_concurrency; /* probes in flight per worker */
	double probe_window_s;	   /* a round's time limit */
	double probe_retry_s;	   /* after a failed round */
	double probe_min_success;  /* share of attempts that succeed */
	int64_t probe_max_tokens;
	const char *probe_prompts; /* file: one prompt a line */
	const char *probe_verify;  /* auto, gateway, auditor, none */
	int64_t probe_verdicts;	   /* TOPLOC verdicts per round */
	double probe_verdict_timeout_s;
	int64_t ttft_p99_ms; /* when the model names none */
	int64_t tpot_p99_ms;
	/* breaker */
	double breaker_window_s;
	int64_t breaker_min_requests;
	double breaker_max_error_ratio;
	double breaker_max_slow_ratio;
	int64_t breaker_consecutive;
	double breaker_stall_s;
	double breaker_cooldown_s;
	double verdict_poll_s; /* the store's cheat verdicts; 0: never */
	/* proof tee and the internal API */
	const char *tee_token;
	double tee_sample_rate;
	double tee_ttl_s;
	int64_t tee_max_bytes;
	/* GEMM openings relayed for auditors (POST /internal/v1/tee/open) */
	double gemm_open_timeout_s;
	int64_t gemm_open_max_bytes;
	int64_t gemm_open_max_pending;
};

#define GW_MOD_OFF(f) offsetof(struct gw_conf, mod.f)

/* Rows of the gateway's option table (struct gw_conf must be complete). */
#define GW_MOD_OPTS                                                                    \
	{ "probe_count",                                                               \
	  ENGY_OPT_INT,                                                                \
	  0,                                                                           \
	  GW_MOD_OFF(probe_count),                                                     \
	  "20",                                                                        \
	  "ENGY_GW_PROBE_COUNT",                                                       \
	  1,                                                                           \
	  10000,                                                                       \
	  "onboarding: probe attempts a round needs (the minimum sample)" },           \
		{ "probe_concurrency",                                                 \
		  ENGY_OPT_INT,                                                        \
		  0,                                                                   \
		  GW_MOD_OFF(probe_concurrency),                                       \
		  "2",                                                                 \
		  NULL,                                                                \
		  1,                                                                   \
		  64,                                                                  \
		  "onboarding: probes in flight to one worker at a time" },            \
		{ "probe_window_s",                                                    \
		  ENGY_OPT_FLOAT,                                                      \
		  0,                                                                   \
		  GW_MOD_OFF(probe_window_s),                                          \
		  "120",                                                               \
		  "ENGY_GW_PROBE_WINDOW_S",                                            \
		  0,                                                                   \
		  0,                                                                   \
		  "onboarding: a round not decided this long after it began fails" },  \
		{ "probe_retry_s",                                                     \
		  ENGY_OPT_FLOAT,                                                      \
		  0,                                                                   \
		  GW_MOD_OFF(probe_retry_s),                                           \
		  "60",                                                                \
		  "ENGY_GW_PROBE_RETRY_S",                                             \
		  0,                                                                   \
		  0,                                                                   \
		  "onboarding: pause after a failed round before the next one" },      \
		{ "probe_min_success",                                                 \
		  ENGY_OPT_FLOAT,                                                      \
		  0,                                                                   \
		  GW_MOD_OFF(probe_min_success),                                       \
		  "0.99",                                                              \
		  NULL,                                                                \
		  0,                                                                   \
		  0,                                                                   \
		  "onboarding: least share of probe attempts answered 200, and of "    \
		  "TOPLOC verdicts that pass" },                                       \
		{ "probe_max_tokens",                                                  \
		  ENGY_OPT_INT,                                                        \
		  0,                                                                   \
		  GW_MOD_OFF(probe_max_tokens),                                        \
		  "32",                                                                \
		  NULL,                                                                \
		  1,                                                                   \
		  1 << 20,                                                             \
		  "onboarding: max_tokens of a probe" },                               \
		{ "probe_prompts",                                                     \
		  ENGY_OPT_STR,                                                        \
		  0,                                                                   \
		  GW_MOD_OFF(probe_prompts),                                           \
		  NULL,                                                                \
		  "ENGY_GW_PROBE_PROMPTS",                                             \
		  0,                                                                   \
		  0,                                                                   \
		  "onboarding: a file of probe prompts, one a line ('#' comments); "   \
		  "unset: a built-in set" },                                           \
		{ "probe_verify",                                                      \
		  ENGY_OPT_STR,                                                        \
		  0,                                                                   \
		  GW_MOD_OFF(probe_verify),                                            \
		  "auto",                                                              \
		  "ENGY_GW_PROBE_VERIFY",                                              \
		  0,                                                                   \
		  0,                                                                   \
		  "onboarding: who renders the TOPLOC verdicts of probes: gateway "    \
		  "(a proof and a backend instance here), auditor (POST "              \
		  "/internal/v1/tee/ack), auto (gateway when configured, else "        \
		  "auditor), none (not checked)" },                                    \
		{ "probe_verdicts",                                                    \
		  ENGY_OPT_INT,                                                        \
		  0,                                                                   \
		  GW_MOD_OFF(probe_verdicts),                                          \
		  "3",                                                                 \
		  NULL,                                                                \
		  1,                                                                   \
		  10000,                                                               \
		  "onboarding: TOPLOC verdicts a round needs" },                       \
		{ "probe_verdict_timeout_s",                                           \
		  ENGY_OPT_FLOAT,                                                      \
		  0,                                                                   \
		  GW_MOD_OFF(probe_verdict_timeout_s),                                 \
		  "600",                                                               \
		  NULL,                                                                \
		  0,                                                                   \
		  0,                                                                   \
		  "onboarding: a round still short of verdicts this long after it "    \
		  "began fails" },                                                     \
		{ "ttft_p99_ms",                                                       \
		  ENGY_OPT_INT,                                                        \
		  0,                                                                   \
		  GW_MOD_OFF(ttft_p99_ms),                                             \
		  "0",                                                                 \
		  NULL,                                                                \
		  0,                                                                   \
		  1 << 30,                                                             \
		  "TTFT p99 ceiling of models whose spec sets none "                   \
		  "(0: none)" },                                                       \
		{ "tpot_p99_ms",                                                       \
		  ENGY_OPT_INT,                                                        \
		  0,                                                                   \
		  GW_MOD_OFF(tpot_p99_ms),                                             \
		  "0",                                                                 \
		  NULL,                                                                \
		  0,                                                                   \
		  1 << 30,                                                             \
		  "TPOT p99 ceiling of models whose spec sets none "                   \
		  "(0: none)" },                                                       \
		{ "breaker_window_s",                                                  \
		  ENGY_OPT_FLOAT,                                                      \
		  0,                                                                   \
		  GW_MOD_OFF(breaker_window_s),                                        \
		  "60",                                                                \
		  "ENGY_GW_BREAKER_WINDOW_S",                                          \
		  0,                                                                   \
		  0,                                                                   \
		  "breaker: the sliding window an active worker is judged on" },       \
		{ "breaker_min_requests",                                              \
		  ENGY_OPT_INT,                                                        \
		  0,                                                                   \
		  GW_MOD_OFF(breaker_min_requests),                                    \
		  "10",                                                                \
		  NULL,                                                                \
		  1,                                                                   \
		  1 << 20,                                                             \
		  "breaker: attempts in the window before its ratios count" },         \
		{ "breaker_max_error_ratio",                                           \
		  ENGY_OPT_FLOAT,                                                      \
		  0,                                                                   \
		  GW_MOD_OFF(breaker_max_error_ratio),                                 \
		  "0.05",                                                              \
		  NULL,                                                                \
		  0,                                                                   \
		  0,                                                                   \
		  "breaker: trips above this share of 502/504 attempts" },             \
		{ "breaker_max_slow_ratio",                                            \
		  ENGY_OPT_FLOAT,                                                      \
		  0,                                                                   \
		  GW_MOD_OFF(breaker_max_slow_ratio),                                  \
		  "0.05",                                                              \
		  NULL,                                                                \
		  0,                                                                   \
		  0,                                                                   \
		  "breaker: trips above this share of answers with TTFT or TPOT "      \
		  "over the model's p99 ceilings" },                                   \
		{ "breaker_consecutive",                                               \
		  ENGY_OPT_INT,                                                        \
		  0,                                                                   \
		  GW_MOD_OFF(breaker_consecutive),                                     \
		  "5",                                                                 \
		  NULL,                                                                \
		  1,                                                                   \
		  1 << 20,                                                             \
		  "breaker: trips after this many failed attempts in a row" },         \
		{ "breaker_stall_s",                                                   \
		  ENGY_OPT_FLOAT,                                                      \
		  0,                                                                   \
		  GW_MOD_OFF(breaker_stall_s),                                         \
		  "60",                                                                \
		  NULL,                                                                \
		  0,                                                                   \
		  0,                                                                   \
		  "breaker: an open attempt still without its first token this "       \
		  "long counts as failed (a hung worker is pulled before its "         \
		  "requests time out)" },                                              \
		{ "breaker_cooldown_s",                                                \
		  ENGY_OPT_FLOAT,                                                      \
		  0,                                                                   \
		  GW_MOD_OFF(breaker_cooldown_s),                                      \
		  "30",                                                                \
		  "ENGY_GW_BREAKER_COOLDOWN_S",                                        \
		  0,                                                                   \
		  0,                                                                   \
		  "breaker: a pulled worker waits this long before it re-qualifies" }, \
		{ "verdict_poll_s",                                                    \
		  ENGY_OPT_FLOAT,                                                      \
		  0,                                                                   \
		  GW_MOD_OFF(verdict_poll_s),                                          \
		  "10",                                                                \
		  "ENGY_GW_VERDICT_POLL_S",                                            \
		  0,                                                                   \
		  0,                                                                   \
		  "onboarding: how often the store's new cheat verdicts (any "         \
		  "gateway's auditor) are read; their miners are pulled (0: never)" }, \
		{ "tee_token",                                                         \
		  ENGY_OPT_STR,                                                        \
		  ENGY_OPT_SECRET,                                                     \
		  GW_MOD_OFF(tee_token),                                               \
		  NULL,                                                                \
		  "ENGY_TEE_TOKEN",                                                    \
		  0,                                                                   \
		  0,                                                                   \
		  "bearer secret of /internal/v1/ (tee, workers); unset: that API "    \
		  "is off" },                                                          \
		{ "tee_sample_rate",                                                   \
		  ENGY_OPT_FLOAT,                                                      \
		  0,                                                                   \
		  GW_MOD_OFF(tee_sample_rate),                                         \
		  "0.05",                                                              \
		  "ENGY_GW_TEE_SAMPLE_RATE",                                           \
		  0,                                                                   \
		  0,                                                                   \
		  "proof tee: share of buyer responses kept (probes always are)" },    \
		{ "tee_ttl_s",                                                         \
		  ENGY_OPT_FLOAT,                                                      \
		  0,                                                                   \
		  GW_MOD_OFF(tee_ttl_s),                                               \
		  "3600",                                                              \
		  "ENGY_GW_TEE_TTL_S",                                                 \
		  0,                                                                   \
		  0,                                                                   \
		  "proof tee: an entry is forgotten this long after it came" },        \
		{ "tee_max_bytes",                                                     \
		  ENGY_OPT_INT,                                                        \
		  0,                                                                   \
		  GW_MOD_OFF(tee_max_bytes),                                           \
		  "268435456",                                                         \
		  NULL,                                                                \
		  4096,                                                                \
		  (int64_t)1 << 40,                                                    \
		  "proof tee: RAM cap; the oldest entries go first" },                 \
		{ "gemm_open_timeout_s",                                               \
		  ENGY_OPT_FLOAT,                                                      \
		  0,                                                                   \
		  GW_MOD_OFF(gemm_open_timeout_s),                                     \
		  "30",                                                                \
		  "ENGY_GW_GEMM_OPEN_TIMEOUT_S",                                       \
		  0,                                                                   \
		  0,                                                                   \
		  "GEMM audit: how long an opening may take the miner (then "          \
		  "no_answer)" },                                                      \
		{ "gemm_open_max_bytes",                                               \
		  ENGY_OPT_INT,                                                        \
		  0,                                                                   \
		  GW_MOD_OFF(gemm_open_max_bytes),                                     \
		  "16777216",                                                          \
		  NULL,                                                                \
		  1024,                                                                \
		  (int64_t)1 << 30,                                                    \
		  "GEMM audit: the largest gemm_opening frame relayed (larger: "       \
		  "oversize)" },                                                       \
	{                                                                              \
		"gemm_open_max_pending", ENGY_OPT_INT, 0,                              \
			GW_MOD_OFF(gemm_open_max_pending), "16", NULL, 1,              \
			4096,                                                          \
			"GEMM audit: openings in flight at once (more: 429)"           \
	}

#endif /* ENGY_ROLE_GATEWAY_MOD_CONF_H */
