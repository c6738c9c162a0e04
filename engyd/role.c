/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "host.h"
#include "kind.h"
#include "log.h"
#include "role.h"

static const struct engy_role *const roles[] = {
	&engy_role_miner,
	&engy_role_gateway,
	&engy_role_auditor,
	&engy_role_validator,
	&engy_role_serve,
};

const struct engy_role *engy_role_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (name && strcmp(roles[i]->name, name) == 0)
			return roles[i];
	return NULL;
}

const char *const *engy_role_list(void)
{
	static const char *names[sizeof(roles) / sizeof(roles[0]) + 1];
	size_t i;

	for (i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		names[i] = roles[i]->name;
	names[i] = NULL;
	return names;
}

const char *engy_role_names(void)
{
	return "miner, gateway, auditor, validator, serve";
}

int engy_role_check(const struct engy_role *r, const struct engyd *d,
		    struct engy_errs *e)
{
	const struct engy_role_need *n;
	size_t before = e->n, i;

	for (n = r->needs; n->kind; n++) {
		unsigned have = 0;

		for (i = 0; i < d->n_insts; i++)
			if (d->insts[i].lp.dl && d->insts[i].lp.desc.kind == n->kind)
				have++;
		if (have < n->min)
			engy_errs_add(e, "%s: role %s needs %s%u %s plugin%s (%s); the config has %u",
				      d->cfg.path, r->name, n->max == n->min ? "" : "at least ",
				      n->min, engy_kind_name(n->kind),
				      n->min > 1 ? "s" : "", n->why, have);
		else if (n->max && have > n->max)
			engy_errs_add(e, "%s: role %s takes at most %u %s plugin%s; the config has %u",
				      d->cfg.path, r->name, n->max,
				      engy_kind_name(n->kind), n->max > 1 ? "s" : "",
				      have);
	}
	for (i = 0; i < d->n_insts; i++) {
		uint32_t k = d->insts[i].lp.desc.kind;
		bool used = false;

		if (!d->insts[i].lp.dl)
			continue;
		for (n = r->needs; n->kind; n++)
			used |= n->kind == k;
		if (!used)
			engy_errs_add(e, "%s:%d: role %s has no use for %s plugin \"%s\"",
				      d->cfg.path, d->cfg.secs[i].line, r->name,
				      engy_kind_name(k), d->insts[i].name);
	}
	return e->n > before ? -EINVAL : 0;
}

int engy_role_start_common(struct engyd *d)
{
	size_t i;

	for (i = 0; i < d->n_insts; i++)
		engy_log(ENGY_LOG_INFO, NULL,
			 "event=role_wired role=%s instance=%s plugin=%s kind=%s",
			 d->role->name, d->insts[i].name, d->insts[i].lp.desc.name,
			 engy_kind_name(d->insts[i].lp.desc.kind));
	return 0;
}
