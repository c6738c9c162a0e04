/* SPDX-License-Identifier: MIT */
/*
 * The plugin loader: dlopen one named plugin, check its descriptor before
 * any plugin code runs, and keep zero-extended copies of it and its ops.
 */
#ifndef ENGY_CORE_LOADER_H
#define ENGY_CORE_LOADER_H

#include <stdbool.h>
#include <stddef.h>

#include <engy/plugin.h>

struct engy_loaded {
	void *dl;
	char *path;
	struct engy_plugin desc; /* zero-extended copy */
	void *ops;		 /* zero-extended copy, kind's host size */
	const struct engy_kind_info *kind;
};

/*
 * engy_loader_open() - load @dir/@name.so.  On failure returns a negative
 * errno and writes one line to @err naming the plugin and the reason.
 * When @expect_name is NULL (--plugin-info) the stem check is skipped.
 */
int engy_loader_open(const char *path, const char *expect_name,
		     struct engy_loaded *out, char *err, size_t errlen);
int engy_loader_open_named(const char *dir, const char *name,
			   struct engy_loaded *out, char *err, size_t errlen);
void engy_loader_close(struct engy_loaded *l, bool unload);

/* A plugin name is [a-z0-9][a-z0-9_-]* (no path tricks). */
bool engy_plugin_name_valid(const char *name);

#endif /* ENGY_CORE_LOADER_H */
