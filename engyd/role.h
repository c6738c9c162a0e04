/* SPDX-License-Identifier: MIT */
/*
 * Roles: named flows that wire plugin kinds together.  Each declares the
 * kinds it needs (and how many); engyd -t refuses a config that lacks one.
 */
#ifndef ENGY_CORE_ROLE_H
#define ENGY_CORE_ROLE_H

#include <stdint.h>

#include <engy/plugin.h>

#include "conf.h"

struct engyd;

struct engy_role_need {
	uint32_t kind;		/* 0 ends the list */
	unsigned min, max;	/* max 0 = no upper bound */
	const char *why;	/* what the role uses it for */
};

struct engy_role {
	const char *name;
	const char *summary;
	struct engy_role_need needs[7];
	/*
	 * The role's own options, read from its `NAME { ... }` section
	 * (and environment twins) into d->role_conf like a plugin's.
	 */
	const struct engy_opt *opts;
	size_t conf_size;
	/* Wire the instances together once they are all started. */
	int (*start)(struct engyd *d);
	/* Stop taking new work (first step of shutdown). */
	void (*stop)(struct engyd *d);
	/* Requests the flow still has in flight (shutdown waits for 0). */
	unsigned (*inflight)(struct engyd *d);
	void (*destroy)(struct engyd *d);
};

extern const struct engy_role engy_role_miner;
extern const struct engy_role engy_role_gateway;
extern const struct engy_role engy_role_auditor;
extern const struct engy_role engy_role_validator;
extern const struct engy_role engy_role_serve;

const struct engy_role *engy_role_find(const char *name);
/* Every role's name, NULL-terminated. */
const char *const *engy_role_list(void);
/* "miner, gateway, auditor, validator, serve" */
const char *engy_role_names(void);
/* Check the loaded kinds against @r; one error per unmet need. */
int engy_role_check(const struct engy_role *r, const struct engyd *d,
		    struct engy_errs *e);
/* The common start: log what the role wired. */
int engy_role_start_common(struct engyd *d);

#endif /* ENGY_CORE_ROLE_H */
