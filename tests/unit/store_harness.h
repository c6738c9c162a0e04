/* SPDX-License-Identifier: MIT */
/*
 * A store plugin as the host sees it, for the store tests: dlopen() the
 * built module, fill its conf from the option table (defaults, env
 * twins, the test's options, as the host does), create and start an
 * instance.  Header-only: store_conformance.c builds on it.
 */
#ifndef ENGY_STORE_HARNESS_H
#define ENGY_STORE_HARNESS_H

#include <check.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
	int start_rc; /* create's, else start's result */
};

/* @opts: "name=value", NULL-terminated; the first of a name wins. */
static inline const char *st_opt(const char *const *opts, const char *name)
{
	size_t n = strlen(name);

	for (; opts && *opts; opts++)
		if (strncmp(*opts, name, n) == 0 && (*opts)[n] == '=')
			return *opts + n + 1;
	return NULL;
}

static inline void *st_fill(const struct engy_plugin *p,
			    const char *const *opts)
{
	uint8_t *conf = calloc(1, p->conf_size);
	const struct engy_opt *o;

	ck_assert_ptr_nonnull(conf);
	for (o = p->opts; o->name; o++) {
		const char *v = st_opt(opts, o->name);
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

/* Load @so, create an instance named @name with @opts and start it. */
static inline void st_load(struct st *t, const char *so, const char *name,
			   const char *const *opts)
{
	memset(t, 0, sizeof(*t));
	t->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(t->dl != NULL, "dlopen: %s", dlerror());
	t->plug = dlsym(t->dl, ENGY_PLUGIN_SYMBOL);
	ck_assert_ptr_nonnull(t->plug);
	t->ops = t->plug->ops;
	t->conf = st_fill(t->plug, opts);
	t->h = fake_host_new(name);
	ck_assert_ptr_nonnull(t->h);
	t->start_rc = t->plug->create(t->h, t->conf, &t->inst);
	if (t->start_rc)
		t->inst = NULL;
	else
		t->start_rc = t->plug->start(t->inst);
}

static inline void st_unload(struct st *t)
{
	if (t->inst)
		t->plug->destroy(t->inst);
	st_free_conf(t);
	fake_host_free(t->h);
	if (!getenv("ENGY_NO_DLCLOSE"))
		dlclose(t->dl);
	memset(t, 0, sizeof(*t));
}

#endif /* ENGY_STORE_HARNESS_H */
