/* SPDX-License-Identifier: MIT */
/*
 * The store conformance cases under concurrency (store_conformance.h):
 * the spend race over two instances, churn with a concurrent reader, a
 * process killed with open reservations; and the throughput figures
 * each engine's tests print.
 *
 * Oracle: invariants under concurrency (balance = credited - spent,
 * reserved = open holds); no expected values from engy.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store_conformance.h"

#define FAR ST_FAR

/* --- concurrency ---------------------------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

enum { RACERS = 32, AFFORD = 10, HOLD = 1000 };

struct racer {
	struct st *t;
	int64_t account;
	int idx;
	int rc;
	int64_t res;
	int64_t charged;
	pthread_barrier_t *go;
};

static void *race_reserve(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(r->go);
	r->rc = r->t->ops->reserve(r->t->inst, r->account, r->idx, HOLD, FAR,
				   &r->res);
	return NULL;
}

static void *race_settle(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(r->go);
	r->rc = r->t->ops->settle(r->t->inst, r->res, 10 * r->idx + 7, NULL,
				  &r->charged);
	return NULL;
}

struct claimer {
	struct st *t;
	char holder[16];
	int rc;
	pthread_barrier_t *go;
};

static void *race_claim(void *arg)
{
	struct claimer *c = arg;
	int64_t now = now_ms();

	pthread_barrier_wait(c->go);
	c->rc = c->t->ops->audit_claim(c->t->inst, "req-raced", c->holder, now,
				       now + 600000, NULL);
	return NULL;
}

/* N auditors (threads on two instances, as two processes would be) claim
 * one request at once: exactly one wins, the others get -EALREADY. */
START_TEST(test_claim_race)
{
	const char *const wide[] = { "connections=16", NULL };
	struct claimer cs[RACERS];
	pthread_t th[RACERS];
	pthread_barrier_t go;
	struct st t1, t2;
	int i, won = 0, refused = 0;

	st_engine->setup();
	st_open(&t1, "claim.db", wide);
	st_open(&t2, "claim.db", wide);
	ck_assert_int_eq(pthread_barrier_init(&go, NULL, RACERS), 0);
	for (i = 0; i < RACERS; i++) {
		cs[i].t = i % 2 ? &t1 : &t2;
		snprintf(cs[i].holder, sizeof(cs[i].holder), "aud-%d", i);
		cs[i].rc = 1;
		cs[i].go = &go;
		ck_assert_int_eq(
			pthread_create(&th[i], NULL, race_claim, &cs[i]), 0);
	}
	for (i = 0; i < RACERS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < RACERS; i++) {
		ck_assert_msg(cs[i].rc == 0 || cs[i].rc == -EALREADY,
			      "claimer %d: %d", i, cs[i].rc);
		won += cs[i].rc == 0;
		refused += cs[i].rc == -EALREADY;
	}
	ck_assert_int_eq(won, 1);
	ck_assert_int_eq(refused, RACERS - 1);
	pthread_barrier_destroy(&go);
	st_close(&t2);
	st_close(&t1);
}
END_TEST

/* N threads on two instances (as two processes would be) reserve at once
 * against a balance that covers K < N: exactly K win, the rest get
 * -EDQUOT, and the concurrent settles leave exact totals. */
START_TEST(test_spend_race)
{
	const int64_t initial = AFFORD * HOLD + HOLD - 1;
	const char *const wide[] = { "connections=16", NULL };
	struct racer rs[RACERS];
	pthread_t th[RACERS];
	pthread_barrier_t go;
	struct engy_account a;
	struct st t1, t2;
	int i, won = 0, refused = 0, settled = 0;
	int64_t charged = 0;

	st_engine->setup();
	st_open(&t1, "race.db", wide);
	st_open(&t2, "race.db", wide);
	ck_assert_int_eq(t1.ops->account_create(t1.inst, "racer", &a), 0);
	ck_assert_int_eq(t1.ops->topup(t1.inst, a.id, initial, NULL), 0);
	ck_assert_int_eq(pthread_barrier_init(&go, NULL, RACERS), 0);
	for (i = 0; i < RACERS; i++) {
		rs[i] = (struct racer){
			i % 2 ? &t1 : &t2, a.id, i, 1, 0, 0, &go
		};
		ck_assert_int_eq(
			pthread_create(&th[i], NULL, race_reserve, &rs[i]), 0);
	}
	for (i = 0; i < RACERS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < RACERS; i++) {
		ck_assert_msg(rs[i].rc == 0 || rs[i].rc == -EDQUOT,
			      "racer %d: %d", i, rs[i].rc);
		won += rs[i].rc == 0;
		refused += rs[i].rc == -EDQUOT;
	}
	ck_assert_int_eq(won, AFFORD);
	ck_assert_int_eq(refused, RACERS - AFFORD);
	a = st_acct(&t1, a.id);
	ck_assert_int_eq(a.reserved_micro, AFFORD * HOLD);
	ck_assert_int_eq(a.balance_micro, initial);

	/* The winners settle at once, each for its own cost. */
	pthread_barrier_destroy(&go);
	ck_assert_int_eq(pthread_barrier_init(&go, NULL, AFFORD), 0);
	for (i = 0; i < RACERS; i++) {
		if (rs[i].rc)
			continue;
		rs[i].go = &go;
		ck_assert_int_eq(
			pthread_create(&th[i], NULL, race_settle, &rs[i]), 0);
	}
	for (i = 0; i < RACERS; i++) {
		if (rs[i].rc == -EDQUOT)
			continue;
		pthread_join(th[i], NULL);
		ck_assert_int_eq(rs[i].rc, 0);
		ck_assert_int_eq(rs[i].charged, 10 * i + 7);
		charged += rs[i].charged;
		settled++;
	}
	ck_assert_int_eq(settled, AFFORD);
	a = st_acct(&t2, a.id);
	ck_assert_int_eq(a.reserved_micro, 0);
	ck_assert_int_eq(a.spent_micro, charged);
	ck_assert_int_eq(a.balance_micro, initial - charged);
	pthread_barrier_destroy(&go);
	st_close(&t1);
	st_close(&t2);
	st_engine->teardown();
}
END_TEST

enum { CHURNERS = 6, ROUNDS = 120, BIG_HOLD = 300000 };

struct churn {
	struct st *t;
	int64_t account;
	unsigned seed;
	atomic_llong *charged;
	atomic_int *refused;
	atomic_int *bad;
};

static void *churn_run(void *arg)
{
	struct churn *c = arg;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		int64_t res, ch = -1, cost = rand_r(&c->seed) % 101;
		int rc = c->t->ops->reserve(c->t->inst, c->account, 1, BIG_HOLD,
					    FAR, &res);

		if (rc == -EDQUOT) {
			atomic_fetch_add(c->refused, 1);
			continue;
		}
		if (rc || c->t->ops->settle(c->t->inst, res, cost, NULL, &ch) ||
		    ch != cost) {
			atomic_fetch_add(c->bad, 1);
			continue;
		}
		atomic_fetch_add(c->charged, ch);
	}
	return NULL;
}

struct watch {
	struct st *t;
	int64_t account;
	atomic_int *stop;
	int reads;
	int violations;
};

static void *watch_run(void *arg)
{
	struct watch *w = arg;
	struct engy_account a;

	while (!atomic_load(w->stop)) {
		if (w->t->ops->account_get(w->t->inst, w->account, &a) == 0) {
			w->reads++;
			if (a.balance_micro < 0 || a.reserved_micro < 0 ||
			    a.reserved_micro > a.balance_micro ||
			    a.balance_micro != a.credited_micro - a.spent_micro)
				w->violations++;
		}
	}
	return NULL;
}

/* Threads reserve and settle in a loop while another reads the account:
 * the balance never goes negative, the holds never exceed it, and the
 * final figures equal the sum of the charges. */
START_TEST(test_churn)
{
	const int64_t initial = 1000000; /* room for 3 holds at a time */
	atomic_llong charged = 0;
	atomic_int refused = 0, bad = 0, stop = 0;
	struct churn cs[CHURNERS];
	pthread_t th[CHURNERS], wt;
	struct engy_account a;
	struct watch w;
	struct st t;
	int i;

	st_engine->setup();
	st_open(&t, "churn.db", NULL);
	ck_assert_int_eq(t.ops->account_create(t.inst, "churn", &a), 0);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, initial, NULL), 0);
	w = (struct watch){ &t, a.id, &stop, 0, 0 };
	ck_assert_int_eq(pthread_create(&wt, NULL, watch_run, &w), 0);
	for (i = 0; i < CHURNERS; i++) {
		cs[i] = (struct churn){ &t,	  a.id,	    53u + (unsigned)i,
					&charged, &refused, &bad };
		ck_assert_int_eq(
			pthread_create(&th[i], NULL, churn_run, &cs[i]), 0);
	}
	for (i = 0; i < CHURNERS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&stop, 1);
	pthread_join(wt, NULL);
	ck_assert_int_eq(atomic_load(&bad), 0);
	ck_assert_int_eq(w.violations, 0);
	ck_assert_int_gt(w.reads, 0);
	a = st_acct(&t, a.id);
	ck_assert_int_eq(a.reserved_micro, 0);
	ck_assert_int_eq(a.spent_micro, atomic_load(&charged));
	ck_assert_int_eq(a.balance_micro, initial - atomic_load(&charged));
	fprintf(stderr,
		"%s churn: %d threads x %d rounds, %d refused (402), %lld µUSD charged, %d concurrent reads\n",
		st_engine->name, CHURNERS, ROUNDS, atomic_load(&refused),
		(long long)atomic_load(&charged), w.reads);
	st_close(&t);
	st_engine->teardown();
}
END_TEST

/* A process killed with open reservations leaves them held until they
 * expire; release_expired() then returns them. */
START_TEST(test_crash_recovery)
{
	struct engy_account a;
	int fds[2], status;
	uint64_t n = 9;
	int64_t micro = 9, ch;
	char ready;
	pid_t pid;
	struct st t;

	st_engine->setup();
	st_open(&t, "crash.db", NULL);
	ck_assert_int_eq(t.ops->account_create(t.inst, "crashy", &a), 0);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 10000, NULL), 0);
	st_close(&t);
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* A gateway that takes three holds, then dies hard. */
		struct st c;
		int64_t r, exp = now_ms() + 60000;

		st_open(&c, "crash.db", NULL);
		if (c.ops->reserve(c.inst, a.id, 1, 1000, exp, &r) ||
		    c.ops->reserve(c.inst, a.id, 1, 2000, exp, &r) ||
		    c.ops->reserve(c.inst, a.id, 1, 3000, exp + 60000, &r))
			_exit(2);
		if (write(fds[1], "r", 1) != 1)
			_exit(3);
		pause();
		_exit(4);
	}
	ck_assert_int_eq(read(fds[0], &ready, 1), 1);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status));
	close(fds[0]);
	close(fds[1]);

	st_open(&t, "crash.db", NULL);
	a = st_acct(&t, a.id);
	ck_assert_int_eq(a.reserved_micro, 6000);
	ck_assert_int_eq(a.balance_micro, 10000);
	/* Not yet expired: a live gateway's holds are left alone. */
	ck_assert_int_eq(t.ops->release_expired(t.inst, now_ms(), &n, &micro),
			 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(micro, 0);
	ck_assert_int_eq(
		t.ops->release_expired(t.inst, now_ms() + 61000, &n, &micro),
		0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(micro, 3000);
	ck_assert(strstr(
		fake_host_log(t.h),
		"event=store_released_expired reservations=2 micro=3000"));
	a = st_acct(&t, a.id);
	ck_assert_int_eq(a.reserved_micro, 3000);
	ck_assert_int_eq(
		t.ops->release_expired(t.inst, now_ms() + 200000, &n, &micro),
		0);
	ck_assert_uint_eq(n, 1);
	a = st_acct(&t, a.id);
	ck_assert_int_eq(a.reserved_micro, 0);
	ck_assert_int_eq(a.balance_micro, 10000);
	ck_assert_int_eq(a.spent_micro, 0);
	/* What was released cannot be settled any more. */
	ck_assert_int_eq(t.ops->settle(t.inst, 1, 10, NULL, &ch), -ENOENT);
	st_close(&t);
	st_engine->teardown();
}
END_TEST

void store_conformance_race(TCase *tc)
{
	tcase_add_test(tc, test_spend_race);
	tcase_add_test(tc, test_claim_race);
	tcase_add_test(tc, test_churn);
	tcase_add_test(tc, test_crash_recovery);
}

/* --- throughput ------------------------------------------------------------------ */

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct pairs {
	struct st *t;
	int64_t account;
	double until;
	int done;
};

static void *pairs_run(void *arg)
{
	struct pairs *p = arg;
	int64_t res, ch;

	while (mono() < p->until && p->done < 100000) {
		ck_assert_int_eq(p->t->ops->reserve(p->t->inst, p->account, 1,
						    10, FAR, &res),
				 0);
		ck_assert_int_eq(
			p->t->ops->settle(p->t->inst, res, 3, NULL, &ch), 0);
		p->done++;
	}
	return NULL;
}

double st_pairs_rate(const char *db, const char *const *over, int threads)
{
	struct pairs ps[8];
	pthread_t th[8];
	struct engy_account a;
	double t0, secs;
	int i, total = 0;
	struct st t;

	ck_assert_int_le(threads, 8);
	st_open(&t, db, over);
	ck_assert_int_eq(t.ops->account_create(t.inst, "bench", &a), 0);
	ck_assert_int_eq(t.ops->topup(t.inst, a.id, 100000000, NULL), 0);
	t0 = mono();
	for (i = 0; i < threads; i++) {
		ps[i] = (struct pairs){ &t, a.id, t0 + 1.0, 0 };
		ck_assert_int_eq(
			pthread_create(&th[i], NULL, pairs_run, &ps[i]), 0);
	}
	for (i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		total += ps[i].done;
	}
	secs = mono() - t0;
	a = st_acct(&t, a.id);
	ck_assert_int_eq(a.spent_micro, 3ll * total);
	st_close(&t);
	fprintf(stderr,
		"%s reserve+settle: %s, %d thread(s): %d pairs in %.2f s = %.0f pairs/s\n",
		st_engine->name, over && over[0] ? over[0] : "defaults",
		threads, total, secs, total / secs);
	return total / secs;
}

/* The gateway's cache miss (key_lookup) and batched log appends. */
void st_lookup_log_rates(const char *db, const char *const *over)
{
	struct engy_request_row rows[100];
	struct engy_api_key k;
	struct engy_account a;
	uint8_t h[32];
	char *key;
	double t0;
	int n = 0, i;
	struct st t;

	st_open(&t, db, over);
	ck_assert_int_eq(t.ops->account_create(t.inst, "l", &a), 0);
	ck_assert_int_eq(t.ops->key_create(t.inst, a.id, NULL, &key, NULL), 0);
	t0 = mono();
	while (mono() < t0 + 0.5) {
		ck_assert_int_eq(t.ops->key_hash(t.inst, key, strlen(key), h),
				 0);
		ck_assert_int_eq(t.ops->key_lookup(t.inst, h, &k), 0);
		n++;
	}
	fprintf(stderr, "%s key_hash+key_lookup: %.0f/s\n", st_engine->name,
		n / (mono() - t0));
	memset(rows, 0, sizeof(rows));
	for (i = 0; i < 100; i++) {
		rows[i].time_ms = 1767225600000ll + i;
		rows[i].status = 200;
		strcpy(rows[i].model, "m");
	}
	t0 = mono();
	for (n = 0; mono() < t0 + 0.5; n += 100)
		ck_assert_int_eq(t.ops->log_append(t.inst, rows, 100), 0);
	fprintf(stderr, "%s log_append, 100-row batches, %s: %.0f rows/s\n",
		st_engine->name, over && over[0] ? over[0] : "defaults",
		n / (mono() - t0));
	free(key);
	st_close(&t);
}
