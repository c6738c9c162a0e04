/* SPDX-License-Identifier: MIT */
/* A loop-backed test host (see ws_host.h). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "ws_host.h"

#define MAX_METRICS 64

struct engy_metric {
	char name[64];
	char labels[64];
	double v;
};

struct engy_timer {
	struct event *ev;
	void (*cb)(void *arg);
	void *arg;
	int repeat;
	struct engy_timer *next;
};

struct wsth {
	struct engy_host h;
	struct event_base *base;
	char *log;
	size_t len;
	struct engy_metric m[MAX_METRICS];
	int n_m;
	int pending;
	struct engy_timer *timers;
};

static struct wsth *of(const struct engy_host *h)
{
	return (struct wsth *)h;
}

static void t_vlog(const struct engy_host *h, int level, const char *fmt,
		   va_list ap)
{
	struct wsth *t = of(h);
	char line[2048], *p;
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	if (getenv("WSTH_VERBOSE"))
		fprintf(stderr, "level=%d %s\n", level, line);
	n = strlen(line);
	p = realloc(t->log, t->len + n + 2);
	if (!p)
		return;
	t->log = p;
	memcpy(t->log + t->len, line, n);
	t->len += n;
	t->log[t->len++] = '\n';
	t->log[t->len] = '\0';
}

static void t_log(const struct engy_host *h, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t_vlog(h, level, fmt, ap);
	va_end(ap);
}

static struct event_base *t_evbase(const struct engy_host *h)
{
	return of(h)->base;
}

static void unlink_timer(struct wsth *t, struct engy_timer *x)
{
	struct engy_timer **pp;

	for (pp = &t->timers; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			return;
		}
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct engy_timer *x = arg;

	x->cb(x->arg);
}

static int t_timer_add(const struct engy_host *h, uint64_t ms, int repeat,
		       void (*cb)(void *), void *arg, struct engy_timer **out)
{
	struct wsth *t = of(h);
	struct engy_timer *x = calloc(1, sizeof(*x));
	struct timeval tv = { (time_t)(ms / 1000),
			      (suseconds_t)(ms % 1000) * 1000 };

	if (!x)
		return -ENOMEM;
	x->ev = event_new(t->base, -1, repeat ? EV_PERSIST : 0, on_timer, x);
	x->cb = cb;
	x->arg = arg;
	x->repeat = repeat;
	event_add(x->ev, &tv);
	x->next = t->timers;
	t->timers = x;
	if (out)
		*out = x;
	return 0;
}

static void t_timer_del(const struct engy_host *h, struct engy_timer *x)
{
	unlink_timer(of(h), x);
	event_free(x->ev);
	free(x);
}

struct job {
	struct wsth *t;
	void (*fn)(void *);
	void (*done)(void *, int);
	void *arg;
};

static void run_job(evutil_socket_t fd, short what, void *arg)
{
	struct job *j = arg;

	j->fn(j->arg);
	j->t->pending--;
	j->done(j->arg, 0);
	free(j);
}

/* Jobs run later from the loop: done() never runs inside work(). */
static int t_work(const struct engy_host *h, void (*fn)(void *),
		  void (*done)(void *, int), void *arg)
{
	struct job *j = calloc(1, sizeof(*j));
	struct timeval zero = { 0, 0 };

	if (!j)
		return -ENOMEM;
	j->t = of(h);
	j->fn = fn;
	j->done = done;
	j->arg = arg;
	if (event_base_once(j->t->base, -1, EV_TIMEOUT, run_job, j, &zero) <
	    0) {
		free(j);
		return -ENOMEM;
	}
	j->t->pending++;
	return 0;
}

static int t_metric(const struct engy_host *h, int type, const char *name,
		    const char *help, const char *labels, const double *buckets,
		    size_t n_buckets, struct engy_metric **out)
{
	struct wsth *t = of(h);
	const char *l = labels ? labels : "";
	int i;

	for (i = 0; i < t->n_m; i++)
		if (strcmp(t->m[i].name, name) == 0 &&
		    strcmp(t->m[i].labels, l) == 0) {
			*out = &t->m[i];
			return 0;
		}
	if (t->n_m == MAX_METRICS)
		return -ENOSPC;
	snprintf(t->m[t->n_m].name, sizeof(t->m[0].name), "%s", name);
	snprintf(t->m[t->n_m].labels, sizeof(t->m[0].labels), "%s", l);
	*out = &t->m[t->n_m++];
	return 0;
}

static void t_metric_add(struct engy_metric *m, double v)
{
	if (m)
		m->v += v;
}

static void t_metric_set(struct engy_metric *m, double v)
{
	if (m)
		m->v = v;
}

static int t_peer(const struct engy_host *h, uint32_t kind,
		  const char *instance, const void **ops, void **inst)
{
	return -ENOENT;
}

static const char *t_state_dir(const struct engy_host *h)
{
	return ".";
}

struct engy_host *wsth_new(const char *instance, struct event_base *base)
{
	struct wsth *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->base = base;
	t->h.size = sizeof(t->h);
	t->h.abi_major = ENGY_ABI_MAJOR;
	t->h.abi_minor = ENGY_ABI_MINOR;
	t->h.instance = instance;
	t->h.log = t_log;
	t->h.vlog = t_vlog;
	t->h.evbase = t_evbase;
	t->h.timer_add = t_timer_add;
	t->h.timer_del = t_timer_del;
	t->h.work = t_work;
	t->h.metric = t_metric;
	t->h.metric_add = t_metric_add;
	t->h.metric_set = t_metric_set;
	t->h.metric_observe = t_metric_add;
	t->h.peer = t_peer;
	t->h.state_dir = t_state_dir;
	return &t->h;
}

void wsth_free(struct engy_host *h)
{
	struct wsth *t = of(h);

	if (!h)
		return;
	/* As engyd does before destroy: let queued jobs finish. */
	while (t->pending > 0)
		event_base_loop(t->base, EVLOOP_ONCE);
	while (t->timers)
		t_timer_del(h, t->timers);
	free(t->log);
	free(t);
}

const char *wsth_log(const struct engy_host *h)
{
	return of(h)->log ? of(h)->log : "";
}

double wsth_metric(const struct engy_host *h, const char *name,
		   const char *labels)
{
	const struct wsth *t = of(h);
	const char *l = labels ? labels : "";
	int i;

	for (i = 0; i < t->n_m; i++)
		if (strcmp(t->m[i].name, name) == 0 &&
		    strcmp(t->m[i].labels, l) == 0)
			return t->m[i].v;
	return 0;
}

int wsth_pending(const struct engy_host *h)
{
	return of(h)->pending;
}

int wsth_listen_port(const struct engy_host *h)
{
	const char *p = strstr(wsth_log(h), "event=ws_listen addr=");
	const char *e;

	if (!p)
		return 0;
	e = strchr(p, '\n');
	while (e > p && e[-1] != ':')
		e--;
	return e > p ? atoi(e) : 0;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void wake(evutil_socket_t fd, short what, void *arg)
{
}

bool wsth_run(struct event_base *base, int ms, bool (*until)(void *arg),
	      void *arg)
{
	long end = now_ms() + ms;
	struct timeval tick = { 0, 5000 };
	struct event *ev = event_new(base, -1, EV_PERSIST, wake, NULL);
	bool held = false;

	/* A 5 ms tick keeps EVLOOP_ONCE from sleeping past the deadline. */
	event_add(ev, &tick);
	while (!(held = until && until(arg)) && now_ms() < end)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(ev);
	return held;
}

const struct engy_plugin *wsth_load(const char *so, void **dl)
{
	const struct engy_plugin *p;

	*dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (!*dl) {
		fprintf(stderr, "dlopen %s: %s\n", so, dlerror());
		return NULL;
	}
	p = dlsym(*dl, ENGY_PLUGIN_SYMBOL);
	if (!p)
		fprintf(stderr, "%s: no %s\n", so, ENGY_PLUGIN_SYMBOL);
	return p;
}

static const char *value_of(const char *name, const char *const *kv,
			    const char *def)
{
	size_t n = strlen(name);

	for (; kv && *kv; kv++)
		if (strncmp(*kv, name, n) == 0 && (*kv)[n] == '=')
			return *kv + n + 1;
	return def;
}

void *wsth_conf(const struct engy_plugin *p, const char *const *kv)
{
	unsigned char *conf = calloc(1, p->conf_size);
	const struct engy_opt *o;
	const char *const *k;
	const char *v;
	int64_t i;
	bool b;
	char *s;

	if (!conf)
		abort();
	for (k = kv; k && *k; k++) {
		for (o = p->opts; o->name; o++)
			if (strncmp(*k, o->name, strlen(o->name)) == 0 &&
			    (*k)[strlen(o->name)] == '=')
				break;
		if (!o->name) {
			fprintf(stderr, "wsth_conf: unknown option in %s\n",
				*k);
			abort();
		}
	}
	for (o = p->opts; o->name; o++) {
		v = value_of(o->name, kv, o->def);
		if (!v)
			continue;
		switch (o->type) {
		case ENGY_OPT_STR:
			s = strdup(v);
			memcpy(conf + o->offset, &s, sizeof(s));
			break;
		case ENGY_OPT_INT:
			i = strtoll(v, NULL, 10);
			memcpy(conf + o->offset, &i, sizeof(i));
			break;
		case ENGY_OPT_BOOL:
			b = strcmp(v, "true") == 0;
			memcpy(conf + o->offset, &b, sizeof(b));
			break;
		default:
			fprintf(stderr, "wsth_conf: type of %s\n", o->name);
			abort();
		}
	}
	return conf;
}

void wsth_conf_free(const struct engy_plugin *p, void *conf)
{
	const struct engy_opt *o;
	char *s;

	for (o = p->opts; o->name; o++)
		if (o->type == ENGY_OPT_STR) {
			memcpy(&s, (unsigned char *)conf + o->offset,
			       sizeof(s));
			free(s);
		}
	free(conf);
}
