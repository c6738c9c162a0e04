/* SPDX-License-Identifier: MIT */
/*
 * The gateway's leaf utilities (gateway_int.h, "Inside the gateway" in
 * specs/gateway.md): clocks, counters, the worker pool, and the observer
 * bus through which the core tells the modules what happened.  Every
 * other file may call these; they call none of the role's files.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gateway_mod.h"

double gw_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) +
	       (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

int64_t gw_now_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

bool gw_fresh(const struct timespec *t, double ttl)
{
	return gw_since(t) < ttl;
}

void gw_count(struct gw *g, const char *name, const char *labels)
{
	struct engy_metric *m;

	if (!g->h->metric(g->h, ENGY_METRIC_COUNTER, name, "gateway events",
			  labels, NULL, 0, &m))
		gw_madd(g, m, 1);
}

int gw_store_work(struct gw *g, void (*fn)(void *), void (*done)(void *, int),
		  void *arg)
{
	return g->h->work(g->h, fn, done, arg);
}

/* ---- observers -------------------------------------------------------- */

int gw_observe(struct gw *g, const struct gw_observer *o)
{
	if (g->n_obs == GW_MAX_OBSERVERS)
		return -ENOSPC;
	g->obs[g->n_obs++] = *o;
	return 0;
}

int gw_ext_slot(struct gw *g)
{
	return g->n_ext < GW_EXT_SLOTS ? (int)g->n_ext++ : -ENOSPC;
}

void gw_notify_admitted(struct gw *g, struct gw_worker *w)
{
	size_t i;

	for (i = 0; i < g->n_obs; i++)
		if (g->obs[i].admitted)
			g->obs[i].admitted(g->obs[i].arg, w);
}

void gw_notify_state(struct gw *g, struct gw_worker *w, enum gw_wstate from)
{
	size_t i;

	for (i = 0; i < g->n_obs; i++)
		if (g->obs[i].state)
			g->obs[i].state(g->obs[i].arg, w, from);
}

void gw_notify_closed(struct gw *g, struct gw_worker *w)
{
	size_t i;

	for (i = 0; i < g->n_obs; i++)
		if (g->obs[i].closed)
			g->obs[i].closed(g->obs[i].arg, w);
}

void gw_notify_finished(struct gw *g, struct gw_worker *w,
			const struct gw_req *r, const struct gw_outcome *o)
{
	size_t i;

	for (i = 0; i < g->n_obs; i++)
		if (g->obs[i].finished)
			g->obs[i].finished(g->obs[i].arg, w, r, o);
}

void gw_notify_response(struct gw *g, struct gw_worker *w,
			const struct gw_req *r, const cJSON *frame)
{
	size_t i;

	for (i = 0; i < g->n_obs; i++)
		if (g->obs[i].response)
			g->obs[i].response(g->obs[i].arg, w, r, frame);
}

void *gw_mod_find(struct gw *g, const char *name)
{
	size_t i;

	for (i = 0; i < g->n_obs; i++)
		if (g->obs[i].name && !strcmp(g->obs[i].name, name))
			return g->obs[i].arg;
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

uint32_t gw_mod_quantile(uint32_t *v, size_t n, double p)
{
	size_t k;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u32);
	k = (size_t)((double)n * p + 0.999999999); /* ceil(n p), nearest rank */
	if (k < 1)
		k = 1;
	return v[(k > n ? n : k) - 1];
}
