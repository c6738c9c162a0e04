/* SPDX-License-Identifier: MIT */
/* Setting one option of a conf struct (conf_value.c). */
#ifndef ENGY_CORE_CONF_VALUE_H
#define ENGY_CORE_CONF_VALUE_H

#include <confuse.h>

#include "conf.h"

/* A boolean's text: true/yes/on/1 or false/no/off/0; -EINVAL otherwise. */
int engy_conf_parse_bool(const char *text, bool *out);
/* @o from config text (an env twin, a default, a secret file's line). */
int engy_conf_set_text(const char *who, const char *where,
		       const struct engy_opt *o, void *conf, const char *text,
		       struct engy_errs *e);
/* @o from the value libconfuse parsed in @sec. */
int engy_conf_set_cfg(const char *who, const char *where,
		      const struct engy_opt *o, void *conf, cfg_t *sec,
		      struct engy_errs *e);
/* The first line of a secret file, malloc'd; NULL (and an error) if not. */
char *engy_conf_read_secret(const char *path, struct engy_errs *e,
			    const char *who, const char *name);
void engy_conf_free_strv(struct engy_strv *sv);

#endif /* ENGY_CORE_CONF_VALUE_H */
