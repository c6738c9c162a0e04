/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include <engy/plugin.h>

#include "host.h"
#include "notify.h"
#include "log.h"
#include "metrics.h"
#include "pool.h"

struct engy_timer {
	struct engy_timer *next, **pprev;
	struct engy_instance *owner;
	struct event *ev;
	void (*cb)(void *);
	void *arg;
	bool repeat, firing, deleted;
};

static struct engy_instance *inst_of(const struct engy_host *h)
{
	return h->priv;
}

static void h_vlog(const struct engy_host *h, int level, const char *fmt,
		   va_list ap)
{
	engy_vlog(level, h->instance, fmt, ap);
}

static void h_log(const struct engy_host *h, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	engy_vlog(level, h->instance, fmt, ap);
	va_end(ap);
}

static struct event_base *h_evbase(const struct engy_host *h)
{
	return inst_of(h)->d->base;
}

static void timer_unlink_free(struct engy_timer *t)
{
	if (t->pprev) {
		*t->pprev = t->next;
		if (t->next)
			t->next->pprev = t->pprev;
	}
	event_free(t->ev);
	free(t);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct engy_timer *t = arg;

	t->firing = true;
	t->cb(t->arg);
	t->firing = false;
	if (t->deleted || !t->repeat)
		timer_unlink_free(t);
}

static int h_timer_add(const struct engy_host *h, uint64_t ms, int repeat,
		       void (*cb)(void *), void *arg, struct engy_timer **out)
{
	struct engy_instance *in = inst_of(h);
	struct engy_timer *t;
	struct timeval tv;

	if (!cb)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->ev = event_new(in->d->base, -1, repeat ? EV_PERSIST : 0, on_timer,
			  t);
	if (!t->ev) {
		free(t);
		return -ENOMEM;
	}
	t->owner = in;
	t->cb = cb;
	t->arg = arg;
	t->repeat = repeat != 0;
	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
	if (event_add(t->ev, &tv) < 0) {
		event_free(t->ev);
		free(t);
		return -EINVAL;
	}
	t->next = in->timers;
	if (t->next)
		t->next->pprev = &t->next;
	t->pprev = &in->timers;
	in->timers = t;
	if (out)
		*out = t;
	return 0;
}

static void h_timer_del(const struct engy_host *h, struct engy_timer *t)
{
	if (!t)
		return;
	event_del(t->ev);
	if (t->firing)
		t->deleted = true;
	else
		timer_unlink_free(t);
}

void engy_host_release_timers(struct engy_instance *in)
{
	while (in->timers)
		timer_unlink_free(in->timers);
}

static int h_work(const struct engy_host *h, void (*fn)(void *),
		  void (*done)(void *, int), void *arg)
{
	return engy_pool_submit(inst_of(h)->d->pool, fn, done, arg);
}

static int h_metric(const struct engy_host *h, int type, const char *name,
		    const char *help, const char *labels, const double *buckets,
		    size_t n_buckets, struct engy_metric **out)
{
	return engy_metrics_get(inst_of(h)->d->metrics, type, name, help,
				labels, buckets, n_buckets, out);
}

struct engy_instance *engy_host_find(struct engyd *d, uint32_t kind,
				     const char *name)
{
	size_t i;

	for (i = 0; i < d->n_insts; i++) {
		struct engy_instance *in = &d->insts[i];

		if (in->created && in->lp.desc.kind == kind &&
		    (!name || strcmp(name, in->name) == 0))
			return in;
	}
	return NULL;
}

static int h_peer(const struct engy_host *h, uint32_t kind,
		  const char *instance, const void **ops, void **inst)
{
	struct engy_instance *in =
		engy_host_find(inst_of(h)->d, kind, instance);

	if (!in)
		return -ENOENT;
	if (ops)
		*ops = in->lp.ops;
	if (inst)
		*inst = in->inst;
	return 0;
}

static int h_peer_at(const struct engy_host *h, size_t i,
		     struct engy_peer_info *out)
{
	struct engyd *d = inst_of(h)->d;
	struct engy_peer_info pi;
	size_t k;

	if (!out ||
	    out->size < offsetof(struct engy_peer_info, inst) + sizeof(void *))
		return -EINVAL;
	for (k = 0; k < d->n_insts; k++) {
		struct engy_instance *in = &d->insts[k];

		if (!in->created || i--)
			continue;
		memset(&pi, 0, sizeof(pi));
		pi.size = out->size < sizeof(pi) ? out->size
						 : (uint32_t)sizeof(pi);
		pi.kind = in->lp.desc.kind;
		pi.instance = in->name;
		pi.plugin = in->lp.desc.name;
		pi.version = in->lp.desc.version ? in->lp.desc.version : "";
		pi.ops = in->lp.ops;
		pi.inst = in->inst;
		memcpy(out, &pi, pi.size);
		return 0;
	}
	return -ENOENT;
}

static void h_shutdown(const struct engy_host *h, int exit_code)
{
	struct engyd *d = inst_of(h)->d;

	if (exit_code && !d->exit_code)
		d->exit_code = exit_code;
	engyd_shutdown(d);
}

static int h_notify(const struct engy_host *h, const char *state)
{
	(void)h;
	return state ? engy_notify(state) : -EINVAL;
}

/*
 * Where an option's value came from: its environment twin, the default
 * (the value equals the table's default), or the config file.  A list
 * compares as its values joined with ",".
 */
static int h_opt_source(const struct engy_host *h, const char *name, char *buf,
			size_t len)
{
	const struct engy_instance *in = inst_of(h);
	const struct engy_opt *o;
	const void *slot;
	const char *e;
	bool is_def = false;

	if (!name || !buf || !len)
		return -EINVAL;
	for (o = in->lp.desc.opts; o && o->name; o++)
		if (strcmp(o->name, name) == 0)
			break;
	if (!o || !o->name) {
		snprintf(buf, len, "?");
		return -ENOENT;
	}
	if (!in->conf) {
		snprintf(buf, len, "?");
		return -EINVAL;
	}
	slot = (const char *)in->conf + o->offset;
	e = o->env ? getenv(o->env) : NULL;
	if (o->def && o->type == ENGY_OPT_STR) {
		const char *v = *(const char *const *)slot;

		is_def = v && strcmp(v, o->def) == 0;
	} else if (o->def && o->type == ENGY_OPT_STR_LIST) {
		const struct engy_strv *sv = slot;
		size_t i, k = 0, dl = strlen(o->def);

		is_def = true;
		for (i = 0; i < sv->n && is_def; i++) {
			size_t l = strlen(sv->v[i]);

			if (i && (k >= dl || o->def[k++] != ','))
				is_def = false;
			else if (k + l > dl || memcmp(o->def + k, sv->v[i], l))
				is_def = false;
			else
				k += l;
		}
		is_def = is_def && k == dl;
	}
	if (e && *e)
		snprintf(buf, len, "$%s", o->env);
	else if (is_def)
		snprintf(buf, len, "default");
	else
		snprintf(buf, len, "config %s %s", in->name, name);
	return 0;
}

static const char *h_state_dir(const struct engy_host *h)
{
	return inst_of(h)->d->state_dir;
}

void engy_host_bind(struct engy_instance *in)
{
	struct engy_host *h = &in->host;

	memset(h, 0, sizeof(*h));
	h->size = sizeof(*h);
	h->abi_major = ENGY_ABI_MAJOR;
	h->abi_minor = ENGY_ABI_MINOR;
	h->instance = in->name;
	h->log = h_log;
	h->vlog = h_vlog;
	h->evbase = h_evbase;
	h->timer_add = h_timer_add;
	h->timer_del = h_timer_del;
	h->work = h_work;
	h->metric = h_metric;
	h->metric_add = engy_metric_add;
	h->metric_set = engy_metric_set;
	h->metric_observe = engy_metric_observe;
	h->peer = h_peer;
	h->state_dir = h_state_dir;
	h->priv = in;
	h->peer_at = h_peer_at;
	h->shutdown = h_shutdown;
	h->notify = h_notify;
	h->opt_source = h_opt_source;
}
