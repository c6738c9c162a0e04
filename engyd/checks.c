/* SPDX-License-Identifier: MIT */
/*
 * engyd -t's report and engyctl doctor's targets, gathered from the
 * plugins' own check ops.  The host knows no role and reads no plugin's
 * options: it calls each instance's check() and copies what it reports.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <engy/plugin.h>

#include "checks.h"

struct list {
	struct engyd_check *v;
	size_t n, cap;
	int rc;
};

static char *dup0(const char *s)
{
	return strdup(s ? s : "");
}

static void free_one(struct engyd_check *c)
{
	free(c->what);
	free(c->target);
	free(c->source);
	free(c->problem);
	free(c->fix);
}

static int sink_add(const struct engy_check_sink *sink,
		    const struct engy_check *in)
{
	struct list *l = sink->arg;
	struct engy_check c = { 0 };
	struct engyd_check *o;

	if (!in || in->size < offsetof(struct engy_check, fix) + sizeof(void *))
		return -EINVAL;
	memcpy(&c, in, in->size < sizeof(c) ? in->size : sizeof(c));
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		struct engyd_check *nv = realloc(l->v, cap * sizeof(*nv));

		if (!nv)
			return l->rc = -ENOMEM;
		l->v = nv;
		l->cap = cap;
	}
	o = &l->v[l->n];
	memset(o, 0, sizeof(*o));
	o->what = dup0(c.what);
	o->target = dup0(c.target);
	o->source = dup0(c.source);
	o->problem = dup0(c.problem);
	o->fix = dup0(c.fix);
	if (!o->what || !o->target || !o->source || !o->problem || !o->fix) {
		free_one(o);
		return l->rc = -ENOMEM;
	}
	o->secret = c.secret;
	o->probe = (int)c.probe;
	o->warn_only = c.warn_only != 0;
	l->n++;
	return 0;
}

static void check_one(struct engy_instance *in, struct list *l,
		      const struct engy_check_sink *sink)
{
	if (!in->conf && in->lp.desc.opts)
		return;
	if (!in->lp.desc.check)
		return;
	/* The role is bound only once its peers were created. */
	if (!in->host.size)
		engy_host_bind(in);
	in->lp.desc.check(&in->host, in->conf, in->created ? in->inst : NULL,
			  sink);
}

int engyd_checks(struct engyd *d, struct engyd_check **out, size_t *n)
{
	struct list l = { 0 };
	struct engy_check_sink sink = { sizeof(sink), &l, sink_add };
	size_t i;

	*out = NULL;
	*n = 0;
	if (!d->has_role || !d->role_in.conf || !d->role_in.lp.desc.check)
		return 0;
	check_one(&d->role_in, &l, &sink);
	for (i = 0; i < d->n_insts && !l.rc; i++)
		check_one(&d->insts[i], &l, &sink);
	if (l.rc) {
		engyd_checks_free(l.v, l.n);
		return l.rc;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

void engyd_checks_free(struct engyd_check *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free_one(&v[i]);
	free(v);
}
