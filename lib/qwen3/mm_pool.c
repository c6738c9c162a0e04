/* SPDX-License-Identifier: MIT */
/*
 * The reference engine's thread pool (matmul.h): the caller plus
 * threads-1 workers.
 *
 * The pool hands out tasks through one 64-bit atomic word, generation in
 * the top half and next task index in the bottom half: a worker claims a
 * task with a compare-and-swap, so one that wakes up late can never run a
 * task of a job that has moved on, and the caller only waits for claimed
 * tasks to finish, never for a sleeping worker to notice.  Workers spin a
 * little before they sleep: a decode step issues dozens of short jobs.
 * A thread counts the tasks it ran into the job's done word once, when it
 * finds none left to claim, not after each: the caller spins on that word,
 * so each add moves its cache line between the cores (per task, the adds
 * were ~3% of a decode step's CPU time on a 2-vCPU Zen 3 VM).
 *
 * A job run by ranges (engy_mm_pool_run_ranges) gives each thread its own
 * contiguous run of tasks in a word of its own: generation in the top
 * half, then the run's end and its next task, 16 bits each.  The owner
 * takes tasks from the front, in order (a matmul's weight rows stream
 * ahead of it, prefetched into its own cache); a thread out of tasks takes
 * the last one of the run with the most left.  The control word's task
 * half then reads RANGES, which no counting claim can take.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "matmul.h"
#include "matmul_int.h"

#ifdef MM_X86
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax()                                                            \
	do {                                                                   \
	} while (0)
#endif

#define SPIN_WAKE 4000 /* pause loops a worker spins before sleeping */
#define SPIN_DONE 2000 /* ... the caller spins before yielding */

#define RANGES	  0xFFFFFFFFu /* ctl's task half in a job run by ranges */
#define RANGE_MAX 0xFFFFu     /* tasks a job run by ranges may have */

typedef void (*task_fn)(void *arg, size_t task, unsigned thread);

struct slot {
	_Atomic(task_fn) fn;
	_Atomic(void *) arg;
	atomic_size_t n;
	atomic_size_t done;
};

/* A thread's run of a job by ranges: gen << 32 | end << 16 | next. */
struct range {
	_Alignas(64) atomic_uint_fast64_t w;
};

struct mm_pool {
	unsigned n; /* threads, the caller included */
	pthread_t *th;
	atomic_uint_fast64_t ctl; /* gen << 32 | next task */
	struct slot slot[2];	  /* job of gen g lives in slot[g & 1] */
	struct range *range;	  /* n of them */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_uint sleepers;
	atomic_bool stop;
};

struct worker_arg {
	struct mm_pool *p;
	unsigned idx;
};

/* @task of the job in @s; *@ran counts it, not yet in the job's done. */
static void run_one(struct slot *s, size_t task, unsigned thread, size_t *ran)
{
	atomic_load_explicit(&s->fn, memory_order_relaxed)(
		atomic_load_explicit(&s->arg, memory_order_relaxed), task,
		thread);
	++*ran;
}

#define R_GEN(w)  ((uint32_t)((w) >> 32))
#define R_END(w)  ((uint32_t)((w) >> 16) & RANGE_MAX)
#define R_NEXT(w) (RANGE_MAX & (uint32_t)(w))

/* Tasks of job @g run by ranges: @thread's own, then the others' last. */
static uint32_t run_ranges(struct mm_pool *p, unsigned thread, uint32_t g,
			   size_t *ran)
{
	struct slot *s = &p->slot[g & 1];
	atomic_uint_fast64_t *own = &p->range[thread].w;

	for (;;) {
		uint64_t w = atomic_load_explicit(own, memory_order_acquire);
		unsigned i, best = 0;
		uint32_t most = 0;

		if (R_GEN(w) != g)
			return g;
		if (R_NEXT(w) < R_END(w)) {
			if (atomic_compare_exchange_weak(own, &w, w + 1))
				run_one(s, R_NEXT(w), thread, ran);
			continue;
		}
		for (i = 0; i < p->n; i++) {
			w = atomic_load_explicit(&p->range[i].w,
						 memory_order_acquire);
			if (R_GEN(w) != g)
				return g;
			if (R_END(w) > R_NEXT(w) + most) {
				most = R_END(w) - R_NEXT(w);
				best = i;
			}
		}
		if (!most)
			return g;
		w = atomic_load_explicit(&p->range[best].w,
					 memory_order_acquire);
		if (R_GEN(w) == g && R_NEXT(w) < R_END(w) &&
		    atomic_compare_exchange_weak(&p->range[best].w, &w,
						 w - ((uint64_t)1 << 16)))
			run_one(s, R_END(w) - 1, thread, ran);
	}
}

/* Claims and runs tasks of the current job; returns its generation. */
static uint32_t claim_tasks(struct mm_pool *p, unsigned thread, uint32_t only,
			    size_t *ran)
{
	uint64_t c;

	for (;;) {
		uint32_t g, idx;
		struct slot *s;

		c = atomic_load_explicit(&p->ctl, memory_order_acquire);
		g = (uint32_t)(c >> 32);
		idx = (uint32_t)c;
		if (only && g != only)
			return g;
		if (idx == RANGES)
			return run_ranges(p, thread, g, ran);
		s = &p->slot[g & 1];
		if (idx >= atomic_load_explicit(&s->n, memory_order_relaxed))
			return g;
		if (!atomic_compare_exchange_weak(&p->ctl, &c, c + 1))
			continue;
		run_one(s, idx, thread, ran);
	}
}

/* claim_tasks(), then the tasks it ran counted done.  They are all of
 * the job it returns: the next job starts only once they are counted. */
static uint32_t run_tasks(struct mm_pool *p, unsigned thread, uint32_t only)
{
	size_t ran = 0;
	uint32_t g = claim_tasks(p, thread, only, &ran);

	if (ran)
		atomic_fetch_add_explicit(&p->slot[g & 1].done, ran,
					  memory_order_release);
	return g;
}

static bool changed(struct mm_pool *p, uint32_t g)
{
	return (uint32_t)(atomic_load(&p->ctl) >> 32) != g ||
	       atomic_load(&p->stop);
}

static void *worker(void *a)
{
	struct worker_arg *wa = a;
	struct mm_pool *p = wa->p;
	unsigned idx = wa->idx, i;
	uint32_t g = 0;

	free(wa);
	for (;;) {
		g = run_tasks(p, idx, 0);
		for (i = 0; i < SPIN_WAKE && !changed(p, g); i++)
			cpu_relax();
		if (!changed(p, g)) {
			pthread_mutex_lock(&p->mu);
			atomic_fetch_add(&p->sleepers, 1);
			while (!changed(p, g))
				pthread_cond_wait(&p->cv, &p->mu);
			atomic_fetch_sub(&p->sleepers, 1);
			pthread_mutex_unlock(&p->mu);
		}
		if (atomic_load(&p->stop))
			return NULL;
	}
}

struct mm_pool *engy_mm_pool_new(unsigned threads)
{
	struct mm_pool *p = calloc(1, sizeof(*p));
	unsigned i;

	if (!p)
		return NULL;
	p->n = threads ? threads : 1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (p->n > 1) {
		p->th = calloc(p->n, sizeof(*p->th));
		p->range = aligned_alloc(_Alignof(struct range),
					 p->n * sizeof(*p->range));
		if (!p->th || !p->range)
			goto fail;
		for (i = 0; i < p->n; i++)
			atomic_init(&p->range[i].w, 0);
	}
	for (i = 1; i < p->n; i++) {
		struct worker_arg *wa = malloc(sizeof(*wa));

		if (!wa)
			goto fail_threads;
		wa->p = p;
		wa->idx = i;
		if (pthread_create(&p->th[i], NULL, worker, wa)) {
			free(wa);
			goto fail_threads;
		}
	}
	return p;
fail_threads:
	p->n = i; /* the threads that exist */
	engy_mm_pool_free(p);
	return NULL;
fail:
	free(p->th);
	free(p->range);
	free(p);
	return NULL;
}

void engy_mm_pool_free(struct mm_pool *p)
{
	unsigned i;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->stop, true);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (i = 1; i < p->n; i++)
		pthread_join(p->th[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p->th);
	free(p->range);
	free(p);
}

unsigned engy_mm_pool_threads(const struct mm_pool *p)
{
	return p->n;
}

static void run(struct mm_pool *p, task_fn fn, void *arg, size_t n_tasks,
		bool ranges)
{
	uint32_t g;
	struct slot *s;
	size_t t;
	unsigned i = 0;

	if (p->n == 1 || n_tasks <= 1) {
		for (t = 0; t < n_tasks; t++)
			fn(arg, t, 0);
		return;
	}
	g = (uint32_t)(atomic_load(&p->ctl) >> 32) + 1;
	if (!g)
		g = 1; /* 0 is the idle generation workers start from */
	s = &p->slot[g & 1];
	atomic_store_explicit(&s->fn, fn, memory_order_relaxed);
	atomic_store_explicit(&s->arg, arg, memory_order_relaxed);
	atomic_store_explicit(&s->n, n_tasks, memory_order_relaxed);
	atomic_store_explicit(&s->done, 0, memory_order_relaxed);
	if (ranges && n_tasks <= RANGE_MAX) {
		for (i = 0; i < p->n; i++)
			atomic_store_explicit(
				&p->range[i].w,
				(uint64_t)g << 32 |
					(uint64_t)((i + 1) * n_tasks / p->n)
						<< 16 |
					(i * n_tasks / p->n),
				memory_order_relaxed);
		atomic_store(&p->ctl, (uint64_t)g << 32 | RANGES);
	} else {
		atomic_store(&p->ctl, (uint64_t)g << 32);
	}
	if (atomic_load(&p->sleepers)) {
		pthread_mutex_lock(&p->mu);
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	run_tasks(p, 0, g);
	i = 0;
	while (atomic_load_explicit(&s->done, memory_order_acquire) < n_tasks) {
		if (++i < SPIN_DONE)
			cpu_relax();
		else
			sched_yield();
	}
}

void engy_mm_pool_run(struct mm_pool *p, task_fn fn, void *arg, size_t n_tasks)
{
	run(p, fn, arg, n_tasks, false);
}

void engy_mm_pool_run_ranges(struct mm_pool *p, task_fn fn, void *arg,
			     size_t n_tasks)
{
	run(p, fn, arg, n_tasks, true);
}
