/* SPDX-License-Identifier: MIT */
/*
 * The worker pool: blocking or CPU-heavy jobs run on threads, their
 * completions come back on the loop thread through a pipe event.
 */
#ifndef ENGY_CORE_POOL_H
#define ENGY_CORE_POOL_H

#include <stdint.h>

struct event_base;
struct engy_pool;

struct engy_pool_stats {
	uint64_t submitted;
	uint64_t completed;
	uint64_t cancelled;
	unsigned queued;
	unsigned running;
	unsigned threads;
};

int engy_pool_new(struct event_base *base, unsigned threads,
		  struct engy_pool **out);
/*
 * Queue @fn; @done(@arg, rc) runs exactly once on the loop thread: rc 0
 * after @fn ran, -ECANCELED if the pool shut down first (fn skipped).
 * -ESHUTDOWN once engy_pool_close() has been called.
 */
int engy_pool_submit(struct engy_pool *p, void (*fn)(void *),
		     void (*done)(void *, int), void *arg);
/* Jobs not yet completed on the loop thread (queued + running + pending). */
unsigned engy_pool_inflight(struct engy_pool *p);
void engy_pool_stats(struct engy_pool *p, struct engy_pool_stats *st);
/*
 * Stop taking jobs; cancel those still queued, wait for running ones, and
 * deliver every pending completion.  Must run on the loop thread.
 */
void engy_pool_close(struct engy_pool *p);
void engy_pool_free(struct engy_pool *p);

#endif /* ENGY_CORE_POOL_H */
