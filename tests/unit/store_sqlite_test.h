/* SPDX-License-Identifier: MIT */
/*
 * store-sqlite as the host sees it, for the store tests: dlopen() the
 * built module, fill its conf from the option table (defaults, env twins,
 * the test's overrides, as the host does), create and start an instance
 * on a database file in a fresh directory.
 */
#ifndef ENGY_STORE_SQLITE_TEST_H
#define ENGY_STORE_SQLITE_TEST_H

#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <engy/plugin.h>
#include <engy/store.h>

#include "fake_host.h"

struct st {
	void *dl;
	const struct engy_plugin *plug;
	const struct engy_store_ops *ops;
	struct engy_host *h;
	void *conf;
	void *inst;
	int start_rc;
};

static char st_dir[64];

/* A fresh directory per test (check forks each test). */
static inline void st_dir_new(void)
{
	snprintf(st_dir, sizeof(st_dir), "/tmp/engy-store.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(st_dir));
}

static inline void st_dir_rm(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", st_dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* @over: "name=value" overrides, NULL-terminated (may be NULL). */
static inline const char *st_over(const char *const *over, const char *name)
{
	size_t n = strlen(name);

	for (; over && *over; over++)
		if (strncmp(*over, name, n) == 0 && (*over)[n] == '=')
			return *over + n + 1;
	return NULL;
}

static inline void *st_fill(const struct engy_plugin *p, const char *const *over)
{
	uint8_t *conf = calloc(1, p->conf_size);
	const struct engy_opt *o;

	ck_assert_ptr_nonnull(conf);
	for (o = p->opts; o->name; o++) {
		const char *v = st_over(over, o->name);
		int64_t i;
		char *sv;

		if (!v && o->env && getenv(o->env))
			v = getenv(o->env);
		if (!v)
			v = o->def;
		if (!v)
			continue;
		switch (o->type) {
		case ENGY_OPT_INT:
			i = strtoll(v, NULL, 10);
			memcpy(conf + o->offset, &i, sizeof(i));
			break;
		case ENGY_OPT_STR:
			sv = strdup(v);
			ck_assert_ptr_nonnull(sv);
			memcpy(conf + o->offset, &sv, sizeof(sv));
			break;
		default:
			ck_abort_msg("unexpected option type for %s", o->name);
		}
	}
	return conf;
}

static inline void st_free_conf(struct st *t)
{
	const struct engy_opt *o;

	for (o = t->plug->opts; o->name; o++) {
		char *sv;

		if (o->type != ENGY_OPT_STR)
			continue;
		memcpy(&sv, (uint8_t *)t->conf + o->offset, sizeof(sv));
		free(sv);
	}
	free(t->conf);
}

/* Open the database st_dir/@file; the start result is in t->start_rc. */
static inline void st_open_rc(struct st *t, const char *file,
			      const char *const *over)
{
	char path[128], popt[160];
	const char *o2[16];
	size_t i = 0;

	memset(t, 0, sizeof(*t));
	t->dl = dlopen(STORE_SQLITE_SO, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(t->dl != NULL, "dlopen: %s", dlerror());
	t->plug = dlsym(t->dl, ENGY_PLUGIN_SYMBOL);
	ck_assert_ptr_nonnull(t->plug);
	t->ops = t->plug->ops;
	snprintf(path, sizeof(path), "%s/%s", st_dir, file);
	snprintf(popt, sizeof(popt), "path=%s", path);
	for (; over && over[i] && i < 14; i++)
		o2[i] = over[i];
	o2[i++] = popt;
	o2[i] = NULL;
	t->conf = st_fill(t->plug, o2);
	t->h = fake_host_new("store-sqlite");
	ck_assert_ptr_nonnull(t->h);
	ck_assert_int_eq(t->plug->create(t->h, t->conf, &t->inst), 0);
	t->start_rc = t->plug->start(t->inst);
}

static inline void st_open(struct st *t, const char *file,
			   const char *const *over)
{
	st_open_rc(t, file, over);
	ck_assert_int_eq(t->start_rc, 0);
}

static inline void st_close(struct st *t)
{
	t->plug->destroy(t->inst);
	st_free_conf(t);
	fake_host_free(t->h);
	if (!getenv("ENGY_NO_DLCLOSE"))
		dlclose(t->dl);
	memset(t, 0, sizeof(*t));
}

#endif /* ENGY_STORE_SQLITE_TEST_H */
