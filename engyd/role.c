/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <engy/role.h>

#include "grow.h"
#include "host.h"
#include "kind.h"
#include "log.h"
#include "role.h"

#define ROLE_PREFIX "role-"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *engy_role_names(const char *dir)
{
	char **v = NULL, *out = NULL, *name;
	size_t n = 0, cap = 0, len = 1, i;
	struct dirent *de;
	DIR *dh = opendir(dir);

	while (dh && (de = readdir(dh))) {
		size_t l = strlen(de->d_name);

		if (strncmp(de->d_name, ROLE_PREFIX, strlen(ROLE_PREFIX)) ||
		    l <= strlen(ROLE_PREFIX) + 3 ||
		    strcmp(de->d_name + l - 3, ".so"))
			continue;
		name = strndup(de->d_name + strlen(ROLE_PREFIX),
			       l - strlen(ROLE_PREFIX) - 3);
		if (!name || !engy_plugin_name_valid(name)) {
			free(name);
			continue;
		}
		if (!ENGY_GROW(v, cap, n + 1)) {
			free(name);
			break;
		}
		v[n++] = name;
		len += l + 2;
	}
	if (dh)
		closedir(dh);
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	out = calloc(1, len);
	for (i = 0; i < n; i++) {
		if (out) {
			if (i)
				strcat(out, ", ");
			strcat(out, v[i]);
		}
		free(v[i]);
	}
	free(v);
	return out;
}

int engy_role_load(struct engyd *d, const char *name, struct engy_errs *e)
{
	struct engy_instance *in = &d->role_in;
	char plugin[256], err[1024];
	int rc;

	if (!engy_plugin_name_valid(name) ||
	    snprintf(plugin, sizeof(plugin), ROLE_PREFIX "%s", name) >=
		    (int)sizeof(plugin)) {
		engy_errs_add(e, "%s: role '%s' is not a valid role name",
			      d->cfg.path, name);
		return -EINVAL;
	}
	in->d = d;
	in->name = strdup(name);
	if (!in->name)
		return -ENOMEM;
	rc = engy_loader_open_named(d->plugin_dir, plugin, &in->lp, err,
				    sizeof(err));
	if (rc == -ENOENT) {
		char *names = engy_role_names(d->plugin_dir);

		engy_errs_add(e, "%s: unknown role '%s' (roles: %s)",
			      d->cfg.path, name,
			      names && *names ? names : "none installed");
		free(names);
		return -EINVAL;
	}
	if (rc < 0) {
		engy_errs_add(e, "%s: role '%s': %s", d->cfg.path, name, err);
		return -EINVAL;
	}
	if (in->lp.desc.kind != ENGY_KIND_ROLE) {
		engy_errs_add(e,
			      "%s: role '%s': %s.so is a %s plugin, not a role",
			      d->cfg.path, name, plugin,
			      engy_kind_name(in->lp.desc.kind));
		engy_loader_close(&in->lp, d->unload);
		return -EINVAL;
	}
	return 0;
}

int engy_role_check(const struct engyd *d, struct engy_errs *e)
{
	const struct engy_role_ops *ops = d->role_in.lp.ops;
	const struct engy_role_need *n;
	const char *r = d->role_in.name;
	size_t before = e->n, i;

	for (n = ops->needs; n->kind; n++) {
		unsigned have = 0;

		for (i = 0; i < d->n_insts; i++)
			if (d->insts[i].lp.dl &&
			    d->insts[i].lp.desc.kind == n->kind)
				have++;
		if (have < n->min)
			engy_errs_add(
				e,
				"%s: role %s needs %s%u %s plugin%s (%s); the config has %u",
				d->cfg.path, r,
				n->max == n->min ? "" : "at least ", n->min,
				engy_kind_name(n->kind), n->min > 1 ? "s" : "",
				n->why ? n->why : "", have);
		else if (n->max && have > n->max)
			engy_errs_add(
				e,
				"%s: role %s takes at most %u %s plugin%s; the config has %u",
				d->cfg.path, r, n->max, engy_kind_name(n->kind),
				n->max > 1 ? "s" : "", have);
	}
	for (i = 0; i < d->n_insts; i++) {
		uint32_t k = d->insts[i].lp.desc.kind;
		bool used = false;

		if (!d->insts[i].lp.dl)
			continue;
		if (k == ENGY_KIND_ROLE) {
			engy_errs_add(
				e,
				"%s:%d: plugin \"%s\" is a role; name it with role = \"...\"",
				d->cfg.path, d->cfg.secs[i].line,
				d->insts[i].name);
			continue;
		}
		for (n = ops->needs; n->kind; n++)
			used |= n->kind == k;
		if (!used)
			engy_errs_add(
				e,
				"%s:%d: role %s has no use for %s plugin \"%s\"",
				d->cfg.path, d->cfg.secs[i].line, r,
				engy_kind_name(k), d->insts[i].name);
	}
	return e->n > before ? -EINVAL : 0;
}

void engy_role_log_wired(const struct engyd *d)
{
	size_t i;

	for (i = 0; i < d->n_insts; i++)
		engy_log(
			ENGY_LOG_INFO, NULL,
			"event=role_wired role=%s instance=%s plugin=%s kind=%s",
			d->role_in.name, d->insts[i].name,
			d->insts[i].lp.desc.name,
			engy_kind_name(d->insts[i].lp.desc.kind));
}
