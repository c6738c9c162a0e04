/* SPDX-License-Identifier: MIT */
/*
 * What a config would connect to and what it could not find: the lines
 * `engyd -t` prints for a miner or a validator, and the targets `engyctl
 * doctor` then tries once each.  Read from the instances' filled options
 * (environment twins applied), never from a running role; no network I/O.
 */
#ifndef ENGY_CORE_TARGETS_H
#define ENGY_CORE_TARGETS_H

#include <stddef.h>

#include "host.h"

/* What engyctl doctor tries for a target. */
enum engy_probe {
	ENGY_PROBE_NONE = 0,
	ENGY_PROBE_SERVE,	/* GET /get_model_info, /generate with hidden states */
	ENGY_PROBE_GW_META,	/* GET <GW as http(s)>/meta */
	ENGY_PROBE_PROVIDER,	/* GET <api>/api/subnet/v1/epoch/latest */
	ENGY_PROBE_CHAIN,	/* JSON-RPC system_chain */
};

struct engy_check {
	const char *what;	/* "gateway", "serve", "checkpoint", ... */
	char target[1024];	/* URL, path or a description */
	char source[96];	/* "$GW", "config", "default" ... */
	char problem[512];	/* "" when nothing is wrong */
	char fix[512];		/* what to change when problem is set */
	int probe;		/* enum engy_probe */
	int warn_only;		/* the role still starts (engyd -t passes) */
	const char *secret;	/* a bearer key for the probe (never printed) */
};

/*
 * engyd_checks() - the checks of @d's role (miner, validator; none for
 * other roles), in @out (malloc'd, free()).  Instances whose options were
 * not filled are skipped.  Returns 0 or -ENOMEM.
 */
int engyd_checks(const struct engyd *d, struct engy_check **out, size_t *n);

#endif /* ENGY_CORE_TARGETS_H */
