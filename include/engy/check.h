/* SPDX-License-Identifier: MIT */
/*
 * Checks: what a plugin instance would connect to or read, and what it
 * could not find, as `engyd -t` prints them and `engyctl doctor` then
 * tries once each.  A plugin reports its own targets through its
 * descriptor's optional check op (appended in 1.1); the host collects
 * them from the role first, then from the instances in config order.
 */
#ifndef ENGY_CHECK_H
#define ENGY_CHECK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What engyctl doctor tries for a target (engyd -t only prints it). */
enum engy_probe {
	ENGY_PROBE_NONE = 0,
	ENGY_PROBE_SERVE = 1,	   /* GET /get_model_info, /generate with
				 * hidden states; target: URL[,URL...] */
	ENGY_PROBE_GW_META = 2,	   /* GET <target as http(s)>/meta */
	ENGY_PROBE_PROVIDER = 3,   /* GET <target>/api/subnet/v1/epoch/latest */
	ENGY_PROBE_CHAIN = 4,	   /* JSON-RPC system_chain at target */
	ENGY_PROBE_MODEL_PATH = 5, /* the first probed serve's model_path
				    * holds a readable tokenizer.json here */
};

/**
 * struct engy_check - one target of one instance.
 * @size:      sizeof(struct engy_check) as the plugin was built.
 * @probe:     enum engy_probe.
 * @warn_only: non-zero: the problem does not fail engyd -t (the role
 *             still starts, e.g. a key that may come at start).
 * @what:      what the target is: "gateway", "serve", "checkpoint", ...
 * @target:    URL, path or a description.
 * @source:    where it came from: "$ENV", "config NAME OPT", "default", ...
 * @problem:   NULL or "" when nothing is wrong.
 * @fix:       what to change when @problem is set.
 * @secret:    a bearer key for the probe (never printed), or NULL.
 *
 * The host copies every string but @secret during add(); @secret must
 * stay valid as long as the instance's conf does (point into the conf).
 */
struct engy_check {
	uint32_t size;
	uint32_t probe;
	uint32_t warn_only;
	const char *what;
	const char *target;
	const char *source;
	const char *problem;
	const char *fix;
	const char *secret;
};

/**
 * struct engy_check_sink - where a plugin's check op reports.
 * @add: report one check; returns 0 or -ENOMEM.  Call it once per target,
 *       in the order the lines should print.
 */
struct engy_check_sink {
	uint32_t size; /* sizeof(struct engy_check_sink) */
	void *arg;     /* host-owned */
	int (*add)(const struct engy_check_sink *sink,
		   const struct engy_check *c);
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_CHECK_H */
