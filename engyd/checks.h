/* SPDX-License-Identifier: MIT */
/*
 * What a config would connect to and what it could not find: the lines
 * `engyd -t` prints and the targets `engyctl doctor` then tries once each.
 * Each plugin reports its own through its descriptor's check op
 * (engy/check.h); the host only collects them.  No network I/O.
 */
#ifndef ENGY_CORE_CHECKS_H
#define ENGY_CORE_CHECKS_H

#include <stddef.h>

#include <engy/check.h>

#include "host.h"

/* One reported check, the host's copy (problem is "" when none). */
struct engyd_check {
	char *what, *target, *source, *problem, *fix;
	const char *secret; /* the plugin's conf: valid while @d is */
	int probe;	    /* enum engy_probe */
	int warn_only;
};

/*
 * engyd_checks() - call the check op of @d's role, then of each instance
 * in config order, when the role has one (a role without a check op has
 * no checks, nor do its instances).  Instances whose options were not
 * filled are skipped; one whose create() failed or was not reached is
 * asked with a NULL instance.  @out is malloc'd: engyd_checks_free().
 * Returns 0 or -ENOMEM.
 */
int engyd_checks(struct engyd *d, struct engyd_check **out, size_t *n);
void engyd_checks_free(struct engyd_check *v, size_t n);

#endif /* ENGY_CORE_CHECKS_H */
