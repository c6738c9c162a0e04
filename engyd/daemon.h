/* SPDX-License-Identifier: MIT */
/* engyd's life: set up from a config, run the role, shut down cleanly. */
#ifndef ENGY_CORE_DAEMON_H
#define ENGY_CORE_DAEMON_H

#include <stdbool.h>

#include "conf.h"
#include "host.h"

/*
 * engyd_setup() - read @path, load and check every named plugin, fill
 * their options, check the role's needs, and create the instances (no I/O
 * yet).  Problems go to @e, one line each; returns 0 or -EINVAL.
 */
int engyd_setup(struct engyd *d, const char *path, struct engy_errs *e);
/* Start everything and run the loop until a signal ends it. */
int engyd_run(struct engyd *d);
void engyd_free(struct engyd *d);

#endif /* ENGY_CORE_DAEMON_H */
