/* SPDX-License-Identifier: MIT */
/*
 * Config files (libconfuse), read in two passes:
 *   1. core options and the list of `plugin "NAME[:INSTANCE]" { ... }`
 *      sections, plugin options ignored;
 *   2. after the named plugins are loaded, strictly: each section against
 *      its plugin's own option table, filling the plugin's conf struct.
 * Unknown options are errors naming the file, line and option.
 */
#ifndef ENGY_CORE_CONF_H
#define ENGY_CORE_CONF_H

#include <stdbool.h>
#include <stddef.h>

#include <engy/plugin.h>

/* A list of one-line problems, each naming where and what. */
struct engy_errs {
	char **v;
	size_t n;
};

void engy_errs_add(struct engy_errs *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void engy_errs_free(struct engy_errs *e);

struct engy_conf_section {
	char *plugin;	/* plugin name (file stem) */
	char *instance; /* instance name; the plugin name by default */
	int line;
};

struct engy_config {
	char *path;
	char *role;
	char *plugin_dir;
	char *log_level;
	char *log_file;
	char *metrics_listen;
	char *state_dir;
	long workers;	       /* 0 = one per CPU */
	long shutdown_timeout; /* seconds for in-flight work at shutdown */
	bool log_sync;	       /* every line written before the call returns */
	struct engy_conf_section *secs;
	size_t n_secs;
	char *text;	   /* the file, for line lookups */
	bool private_file; /* no group/other access: secrets allowed */
};

/*
 * Pass 1.  @role_sections (NULL-terminated, may be NULL) names the
 * top-level sections roles may have (`miner { ... }`); their contents are
 * read in pass 2.  Returns 0, or -EINVAL with problems in @e.
 */
int engy_config_load(const char *path, const char *const *role_sections,
		     struct engy_config *c, struct engy_errs *e);

/* The role's own section, filled in pass 2 like a plugin's. */
struct engy_conf_role {
	const char *name;	     /* section name: the role's */
	const struct engy_opt *opts; /* may be NULL: no options */
	size_t conf_size;
	void *conf; /* out: filled conf struct or NULL */
};

/*
 * Pass 2.  @opts[i] and @conf_size[i] describe section i's plugin; on
 * success @confs[i] holds a filled conf struct (NULL for conf_size 0), and
 * @role (may be NULL) its conf.
 */
int engy_config_fill(const struct engy_config *c,
		     const struct engy_opt *const *opts,
		     const size_t *conf_size, void **confs,
		     struct engy_conf_role *role, struct engy_errs *e);

/*
 * Fill one conf struct from option text values (tests, engyctl); @get
 * returns the config text of an option or NULL.  Env twins and defaults
 * apply as in a config file.
 */
int engy_conf_from_text(const char *who, const struct engy_opt *opts,
			size_t conf_size,
			const char *(*get)(void *arg, const char *name),
			void *arg, void **conf, struct engy_errs *e);

/* Release what the host allocated inside @conf, then @conf itself. */
void engy_conf_free(const struct engy_opt *opts, void *conf);
void engy_config_free(struct engy_config *c);

const char *engy_opt_type_name(uint32_t type);

#endif /* ENGY_CORE_CONF_H */
