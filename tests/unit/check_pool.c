/* SPDX-License-Identifier: MIT */
/*
 * Worker pool: jobs run off the loop, completions come back on it.
 *
 * Oracle: properties only (every job runs once, its completion on the
 * loop); no expected values.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include <event2/event.h>

#include "pool.h"

#define N_JOBS 200

static pthread_t loop_thread;
static atomic_int ran_off_loop;
static int done_count, done_on_loop, cancelled;
static struct event_base *base;

static void job(void *arg)
{
	if (!pthread_equal(pthread_self(), loop_thread))
		atomic_fetch_add(&ran_off_loop, 1);
	*(int *)arg *= 2;
}

static void done(void *arg, int rc)
{
	done_count++;
	if (pthread_equal(pthread_self(), loop_thread))
		done_on_loop++;
	if (rc == -ECANCELED)
		cancelled++;
	if (done_count == N_JOBS)
		event_base_loopbreak(base);
}

START_TEST(test_jobs_and_completions)
{
	struct engy_pool *p;
	struct engy_pool_stats st;
	int vals[N_JOBS], i;

	loop_thread = pthread_self();
	base = event_base_new();
	ck_assert_int_eq(engy_pool_new(base, 3, &p), 0);
	for (i = 0; i < N_JOBS; i++) {
		vals[i] = i;
		ck_assert_int_eq(engy_pool_submit(p, job, done, &vals[i]), 0);
	}
	ck_assert_uint_gt(engy_pool_inflight(p), 0);
	event_base_dispatch(base);
	ck_assert_int_eq(done_count, N_JOBS);
	ck_assert_int_eq(done_on_loop, N_JOBS);
	ck_assert_int_eq(atomic_load(&ran_off_loop), N_JOBS);
	for (i = 0; i < N_JOBS; i++)
		ck_assert_int_eq(vals[i], 2 * i);
	ck_assert_uint_eq(engy_pool_inflight(p), 0);
	engy_pool_stats(p, &st);
	ck_assert_uint_eq(st.submitted, N_JOBS);
	ck_assert_uint_eq(st.completed, N_JOBS);
	ck_assert_uint_eq(st.threads, 3);
	engy_pool_free(p);
	event_base_free(base);
}
END_TEST

/* A job that runs until the first cancel (or 5 s): the jobs queued
 * behind it are still queued at close however slow the machine is. */
static sem_t gate;

static void slow(void *arg)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	while (sem_timedwait(&gate, &ts) < 0 && errno == EINTR)
		;
}

static int close_done, close_cancelled;

static void close_cb(void *arg, int rc)
{
	close_done++;
	if (rc == -ECANCELED && close_cancelled++ == 0)
		sem_post(&gate);
}

START_TEST(test_close_cancels_queued)
{
	struct engy_pool *p;
	int i;

	base = event_base_new();
	ck_assert_int_eq(sem_init(&gate, 0, 0), 0);
	ck_assert_int_eq(engy_pool_new(base, 1, &p), 0);
	for (i = 0; i < 10; i++)
		ck_assert_int_eq(engy_pool_submit(p, slow, close_cb, NULL), 0);
	engy_pool_close(p);
	/* Every done ran exactly once; all but the one running were
	 * cancelled, none lost. */
	ck_assert_int_eq(close_done, 10);
	ck_assert_int_ge(close_cancelled, 9);
	ck_assert_int_eq(engy_pool_submit(p, slow, close_cb, NULL), -ESHUTDOWN);
	ck_assert_int_eq(engy_pool_submit(p, NULL, close_cb, NULL), -EINVAL);
	engy_pool_free(p);
	event_base_free(base);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_jobs_and_completions);
	tcase_add_test(tc, test_close_cancels_queued);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
