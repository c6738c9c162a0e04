/* SPDX-License-Identifier: MIT */
/*
 * The metrics registry, rendered as Prometheus text (format 0.0.4) and
 * served on an optional HTTP listen address.
 */
#ifndef ENGY_CORE_METRICS_H
#define ENGY_CORE_METRICS_H

#include <stddef.h>

#include <engy/host.h>

struct event_base;
struct engy_metrics;

int engy_metrics_new(struct engy_metrics **out);
void engy_metrics_free(struct engy_metrics *r);

/*
 * Register or find the metric (@name, @labels).  A name registered again
 * with another type or help gets -EEXIST; names and labels are checked
 * against Prometheus syntax (-EINVAL).
 */
int engy_metrics_get(struct engy_metrics *r, int type, const char *name,
		     const char *help, const char *labels,
		     const double *buckets, size_t n_buckets,
		     struct engy_metric **out);
void engy_metric_add(struct engy_metric *m, double v);
void engy_metric_set(struct engy_metric *m, double v);
void engy_metric_observe(struct engy_metric *m, double v);
double engy_metric_value(struct engy_metric *m);

/* The whole registry as Prometheus text; malloc'd. */
char *engy_metrics_render(struct engy_metrics *r);

/*
 * Serve GET /metrics on @addr ("127.0.0.1:9100", "[::1]:9100").  @refresh
 * runs before each render so the host can update its own gauges.
 */
int engy_metrics_listen(struct engy_metrics *r, struct event_base *base,
			const char *addr, void (*refresh)(void *),
			void *refresh_arg);
/* The port actually bound (useful with port 0), or -1. */
int engy_metrics_port(struct engy_metrics *r);

#endif /* ENGY_CORE_METRICS_H */
