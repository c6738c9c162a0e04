/* SPDX-License-Identifier: MIT */
/*
 * A chain plugin that exercises every host service: a repeating timer,
 * worker-pool jobs with completions, a metric, peers, the state dir, and a
 * job left in flight at stop() that shutdown must wait for.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <engy/engy.h>

#define TC_MAGIC 0x54435431u

struct conf {
	int64_t interval_ms;
	int64_t stop_work_ms;
	const char *label;
	struct engy_strv tags;
	const char *token;
	double ratio;
	bool loud;
};

struct inst {
	uint32_t magic;
	const struct engy_host *h;
	const struct conf *c;
	struct engy_timer *timer;
	struct engy_metric *ticks;
	unsigned n_ticks, n_jobs;
};

struct job {
	struct inst *in;
	int64_t sleep_ms;
	unsigned n;
	const char *what;
};

static void tc_sleep(void *arg)
{
	struct job *j = arg;
	struct timespec ts = { (time_t)(j->sleep_ms / 1000),
			       (long)(j->sleep_ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void tc_done(void *arg, int rc)
{
	struct job *j = arg;

	engy_info(j->in->h, "event=%s n=%u rc=%d", j->what, j->n, rc);
	free(j);
}

static int tc_submit(struct inst *in, const char *what, int64_t ms)
{
	struct job *j = calloc(1, sizeof(*j));
	int rc;

	if (!j)
		return -ENOMEM;
	j->in = in;
	j->sleep_ms = ms;
	j->n = ++in->n_jobs;
	j->what = what;
	rc = in->h->work(in->h, tc_sleep, tc_done, j);
	if (rc)
		free(j);
	return rc;
}

static void tc_tick(void *arg)
{
	struct inst *in = arg;

	in->n_ticks++;
	in->h->metric_add(in->ticks, 1);
	engy_info(in->h, "event=tick n=%u label=%s", in->n_ticks,
		  in->c->label ? in->c->label : "-");
	tc_submit(in, "job_done", 1);
}

static int tc_create(const struct engy_host *h, const void *conf, void **out)
{
	const struct conf *c = conf;
	struct inst *in;

	if (c->ratio < 0 || c->ratio > 1) {
		engy_err(
			h,
			"event=bad_option option=ratio value=%g reason=\"must be in 0..1\"",
			c->ratio);
		return -EINVAL;
	}
	in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	in->magic = TC_MAGIC;
	in->h = h;
	in->c = c;
	*out = in;
	return 0;
}

static int tc_start(void *inst)
{
	struct inst *in = inst;
	const void *ops;
	void *peer;
	size_t i;
	int rc;

	rc = in->h->metric(in->h, ENGY_METRIC_COUNTER, "test_chain_ticks_total",
			   "Timer ticks of the test chain plugin", NULL, NULL,
			   0, &in->ticks);
	if (rc)
		return rc;
	rc = in->h->timer_add(in->h, (uint64_t)in->c->interval_ms, 1, tc_tick,
			      in, &in->timer);
	if (rc)
		return rc;
	for (i = 0; i < in->c->tags.n; i++)
		engy_info(in->h, "event=tag value=%s", in->c->tags.v[i]);
	engy_info(
		in->h,
		"event=started interval_ms=%lld token_set=%s loud=%s ratio=%g state_dir=%s self_peer=%s",
		(long long)in->c->interval_ms, in->c->token ? "yes" : "no",
		in->c->loud ? "true" : "false", in->c->ratio,
		in->h->state_dir(in->h),
		in->h->peer(in->h, ENGY_KIND_CHAIN, in->h->instance, &ops,
			    &peer) == 0 &&
				peer == in
			? "yes"
			: "no");
	return 0;
}

static void tc_stop(void *inst)
{
	struct inst *in = inst;

	in->h->timer_del(in->h, in->timer);
	in->timer = NULL;
	engy_info(in->h, "event=stopping ticks=%u", in->n_ticks);
	if (in->c->stop_work_ms > 0)
		tc_submit(in, "stop_work_done", in->c->stop_work_ms);
}

static void tc_destroy(void *inst)
{
	struct inst *in = inst;

	if (in->magic != TC_MAGIC)
		abort();
	engy_info(in->h, "event=destroyed");
	free(in);
}

/* The chain ops answer nothing: this plugin tests the host services. */
static int tc_block(void *inst,
		    void (*done)(void *, const struct engy_chain_block *),
		    void *arg)
{
	return -ENOTSUP;
}

static int tc_metagraph(void *inst, uint16_t netuid,
			void (*done)(void *,
				     const struct engy_chain_metagraph *),
			void *arg)
{
	return -ENOTSUP;
}

static int tc_set_weights(void *inst, const struct engy_chain_weights *w,
			  const struct engy_chain_signer *s,
			  void (*done)(void *,
				       const struct engy_chain_submit *),
			  void *arg)
{
	return -ENOTSUP;
}

static const struct engy_chain_ops ops = {
	.size = sizeof(ops),
	.block = tc_block,
	.metagraph = tc_metagraph,
	.set_weights = tc_set_weights,
};

static const struct engy_opt opts[] = {
	{ "interval_ms", ENGY_OPT_INT, 0, offsetof(struct conf, interval_ms),
	  "100", NULL, 1, 60000, "tick period" },
	{ "stop_work_ms", ENGY_OPT_INT, 0, offsetof(struct conf, stop_work_ms),
	  "0", NULL, 0, 60000, "a job this long is left in flight at stop" },
	{ "label", ENGY_OPT_STR, 0, offsetof(struct conf, label), NULL,
	  "TEST_CHAIN_LABEL", 0, 0, "logged on every tick" },
	{ "tags", ENGY_OPT_STR_LIST, 0, offsetof(struct conf, tags), NULL, NULL,
	  0, 0, "logged at start" },
	{ "token", ENGY_OPT_STR, ENGY_OPT_SECRET, offsetof(struct conf, token),
	  NULL, "TEST_CHAIN_TOKEN", 0, 0, "a secret; never logged" },
	{ "ratio", ENGY_OPT_FLOAT, 0, offsetof(struct conf, ratio), "0.5", NULL,
	  0, 0, "checked by create(): 0..1" },
	{ "loud", ENGY_OPT_BOOL, 0, offsetof(struct conf, loud), "false", NULL,
	  0, 0, "a bool" },
	ENGY_OPT_END,
};

ENGY_PLUGIN(.kind = ENGY_KIND_CHAIN, .name = "test-chain", .version = "1.0",
	    .description = "exercises the host services (tests only)",
	    .opts = opts, .conf_size = sizeof(struct conf), .create = tc_create,
	    .start = tc_start, .stop = tc_stop, .destroy = tc_destroy,
	    .ops = &ops);
