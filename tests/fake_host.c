/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <engy/plugin.h>

#include "fake_host.h"

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

struct fake {
	struct engy_host h;
	char *log;
	size_t len;
	const struct engy_peer_info *peers;
	size_t n_peers;
	int exit_code;
};

static void fake_vlog(const struct engy_host *h, int level, const char *fmt,
		      va_list ap)
{
	struct fake *f = (struct fake *)h;
	char line[4096], *p;
	int n;

	n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n < 0)
		return;
	fprintf(stderr, "level=%d inst=%s %s\n", level, h->instance, line);
	/* Plugins log from their own threads too. */
	pthread_mutex_lock(&log_mu);
	p = realloc(f->log, f->len + strlen(line) + 2);
	if (p) {
		f->log = p;
		memcpy(f->log + f->len, line, strlen(line));
		f->len += strlen(line);
		f->log[f->len++] = '\n';
		f->log[f->len] = '\0';
	}
	pthread_mutex_unlock(&log_mu);
}

static void fake_log(const struct engy_host *h, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fake_vlog(h, level, fmt, ap);
	va_end(ap);
}

static struct event_base *fake_evbase(const struct engy_host *h)
{
	return NULL;
}

static int fake_timer_add(const struct engy_host *h, uint64_t ms, int repeat,
			  void (*cb)(void *), void *arg,
			  struct engy_timer **out)
{
	return -ENOTSUP;
}

static void fake_timer_del(const struct engy_host *h, struct engy_timer *t)
{
}

static int fake_work(const struct engy_host *h, void (*fn)(void *),
		     void (*done)(void *, int), void *arg)
{
	fn(arg);
	done(arg, 0);
	return 0;
}

static int fake_metric(const struct engy_host *h, int type, const char *name,
		       const char *help, const char *labels,
		       const double *buckets, size_t n_buckets,
		       struct engy_metric **out)
{
	*out = NULL;
	return 0;
}

static void fake_metric_op(struct engy_metric *m, double v)
{
}

static int fake_peer(const struct engy_host *h, uint32_t kind,
		     const char *instance, const void **ops, void **inst)
{
	return -ENOENT;
}

static int fake_peer_at(const struct engy_host *h, size_t i,
			struct engy_peer_info *out)
{
	const struct fake *f = (const struct fake *)h;
	uint32_t size;

	if (i >= f->n_peers)
		return -ENOENT;
	size = out->size < sizeof(*out) ? out->size : sizeof(*out);
	memcpy(out, &f->peers[i], size);
	out->size = size;
	return 0;
}

static void fake_shutdown(const struct engy_host *h, int exit_code)
{
	struct fake *f = (struct fake *)h;

	if (f->exit_code < 0)
		f->exit_code = exit_code;
}

static const char *fake_state_dir(const struct engy_host *h)
{
	return ".";
}

struct engy_host *fake_host_new(const char *instance)
{
	struct fake *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->h.size = sizeof(f->h);
	f->h.abi_major = ENGY_ABI_MAJOR;
	f->h.abi_minor = ENGY_ABI_MINOR;
	f->h.instance = instance;
	f->h.log = fake_log;
	f->h.vlog = fake_vlog;
	f->h.evbase = fake_evbase;
	f->h.timer_add = fake_timer_add;
	f->h.timer_del = fake_timer_del;
	f->h.work = fake_work;
	f->h.metric = fake_metric;
	f->h.metric_add = fake_metric_op;
	f->h.metric_set = fake_metric_op;
	f->h.metric_observe = fake_metric_op;
	f->h.peer = fake_peer;
	f->h.state_dir = fake_state_dir;
	f->h.peer_at = fake_peer_at;
	f->h.shutdown = fake_shutdown;
	f->exit_code = -1;
	return &f->h;
}

void fake_host_free(struct engy_host *h)
{
	struct fake *f = (struct fake *)h;

	if (!f)
		return;
	free(f->log);
	free(f);
}

const char *fake_host_log(const struct engy_host *h)
{
	const struct fake *f = (const struct fake *)h;

	return f->log ? f->log : "";
}

void fake_host_set_peers(struct engy_host *h,
			 const struct engy_peer_info *peers, size_t n)
{
	struct fake *f = (struct fake *)h;

	f->peers = peers;
	f->n_peers = n;
}

int fake_host_shutdown_code(const struct engy_host *h)
{
	return ((const struct fake *)h)->exit_code;
}
