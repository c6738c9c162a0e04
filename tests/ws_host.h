/* SPDX-License-Identifier: MIT */
/*
 * A loop-backed host for transport tests: a real libevent base, timers,
 * a work "pool" that runs jobs from the loop, counters that can be read
 * back, a captured log; plus loading a plugin .so and filling its conf
 * from the option table's defaults with overrides, as engyd does.
 */
#ifndef ENGY_TEST_WS_HOST_H
#define ENGY_TEST_WS_HOST_H

#include <stdbool.h>

#include <engy/engy.h>

struct event_base;

struct engy_host *wsth_new(const char *instance, struct event_base *base);
void wsth_free(struct engy_host *h);
/* Everything logged so far, one event per line. */
const char *wsth_log(const struct engy_host *h);
/* A counter's or gauge's value; 0 when never registered. */
double wsth_metric(const struct engy_host *h, const char *name,
		   const char *labels);
/* Jobs handed to work() whose done() has not run yet. */
int wsth_pending(const struct engy_host *h);
/* The port of the first "event=ws_listen addr=HOST:PORT" line, or 0. */
int wsth_listen_port(const struct engy_host *h);

/*
 * Run the loop until @until(@arg) holds or @ms pass; returns whether it
 * held.  @until may be NULL: just run for @ms.
 */
bool wsth_run(struct event_base *base, int ms, bool (*until)(void *arg),
	      void *arg);

/* dlopen() a plugin; NULL (and a message on stderr) on failure. */
const struct engy_plugin *wsth_load(const char *so, void **dl);
/*
 * A conf for @p: defaults, then "name=value" overrides from @kv (NULL-ended);
 * an unknown name or a missing value aborts the test.  Free with
 * wsth_conf_free().
 */
void *wsth_conf(const struct engy_plugin *p, const char *const *kv);
void wsth_conf_free(const struct engy_plugin *p, void *conf);

#endif /* ENGY_TEST_WS_HOST_H */
