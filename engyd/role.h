/* SPDX-License-Identifier: MIT */
/*
 * The role: `role = "NAME"` loads role-NAME.so (kind role) from the plugin
 * directory; its options come from the config's `NAME { ... }` section.
 */
#ifndef ENGY_CORE_ROLE_H
#define ENGY_CORE_ROLE_H

#include <stddef.h>

#include "conf.h"

struct engyd;

/* Load role-@name.so into d->role; errors name the roles installed. */
int engy_role_load(struct engyd *d, const char *name, struct engy_errs *e);
/* Check the loaded kinds against the role's needs; one error per unmet
 * need or unused instance. */
int engy_role_check(const struct engyd *d, struct engy_errs *e);
/* The roles installed in @dir, ", " between them (sorted); malloc'd. */
char *engy_role_names(const char *dir);
/* Log what the role wired (once everything started). */
void engy_role_log_wired(const struct engyd *d);

#endif /* ENGY_CORE_ROLE_H */
