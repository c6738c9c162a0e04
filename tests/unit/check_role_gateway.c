/* SPDX-License-Identifier: MIT */
/*
 * The gateway role's pure parts on the fake host, linked from
 * plugins/role-gateway/ (the layers below the request driver link alone:
 * specs/gateway.md, "Inside the gateway"): routing (eligibility, smooth
 * weighted round-robin, priority, prefix affinity and its spill, the
 * candidates' limits, pins), a miner's hello as parsed, the observer bus
 * (quantiles, slots, the state event) and the circuit breaker's window
 * arithmetic (consecutive failures, the error and slow ratios at their
 * boundaries, what never counts, a fresh window once qualified).
 *
 * Oracle: hand-derived from specs/gateway.md by the test's author (routing
 * sequences, breaker windows at their boundaries); no outside peer.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "fake_host.h"
#include "gateway_onboard.h"

static struct event_base *base;

static struct event_base *test_evbase(const struct engy_host *h)
{
	return base;
}

struct fx {
	struct engy_host *h;
	struct gw_conf c;
	struct gw g;
	struct gw_worker w[4];
	int conn; /* w->conn points here: "open" */
};

static void fx_init(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	f->h = fake_host_new("gateway");
	ck_assert_ptr_nonnull(f->h);
	f->h->evbase = test_evbase;
	f->c.affinity_chars = 16;
	f->c.affinity_slack = 0.5;
	f->c.mod.breaker_window_s = 60;
	f->c.mod.breaker_min_requests = 10;
	f->c.mod.breaker_max_error_ratio = 0.05;
	f->c.mod.breaker_max_slow_ratio = 0.05;
	f->c.mod.breaker_consecutive = 5;
	f->g.h = f->h;
	f->g.c = &f->c;
}

/* Worker @i of @model with @cap slots, ACTIVE, linked in g->workers
 * (in index order). */
static struct gw_worker *fx_worker(struct fx *f, int i, const char *model,
				   unsigned cap)
{
	struct gw_worker *w = &f->w[i], **pp = &f->g.workers;

	w->g = &f->g;
	w->conn = (struct engy_ws_conn *)&f->conn;
	w->id = (uint64_t)i + 1;
	w->ident = 0x1000u * ((uint64_t)i + 1) + 7;
	w->state = GW_W_ACTIVE;
	w->max_inflight = cap;
	w->earned = cap; /* a worker that earned its whole share */
	w->max_input_tokens = 1000;
	w->max_output_tokens = 1000;
	snprintf(w->model, sizeof(w->model), "%s", model);
	snprintf(w->worker_name, sizeof(w->worker_name), "w%d", i);
	while (*pp)
		pp = &(*pp)->next;
	*pp = w;
	w->pprev = pp;
	f->g.n_workers++;
	return w;
}

static void fx_free(struct fx *f)
{
	size_t i;

	for (i = f->g.n_obs; i-- > 0;)
		if (f->g.obs[i].destroy)
			f->g.obs[i].destroy(f->g.obs[i].arg);
	fake_host_free(f->h);
}

static void req_for(struct gw_req *r, const char *model)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->spec.name, sizeof(r->spec.name), "%s", model);
	r->areq.max_tokens = 100;
	r->prompt_bound = 100;
}

/* ---- routing ---------------------------------------------------------- */

START_TEST(eligibility)
{
	struct fx f;
	struct gw_worker *w;

	fx_init(&f);
	w = fx_worker(&f, 0, "m", 4);
	ck_assert(gw_worker_eligible(&f.g, w));
	w->state = GW_W_NEW;
	ck_assert(gw_worker_eligible(&f.g, w)); /* onboarding off */
	f.c.onboarding = true;
	ck_assert(!gw_worker_eligible(&f.g, w));
	w->first_party = true;
	ck_assert(gw_worker_eligible(&f.g, w));
	w->state = GW_W_PULLED;
	ck_assert(gw_worker_eligible(&f.g, w)); /* 1st-party: any live state */
	w->first_party = false;
	ck_assert(!gw_worker_eligible(&f.g, w));
	w->state = GW_W_PROBING;
	ck_assert(!gw_worker_eligible(&f.g, w));
	w->state = GW_W_ACTIVE;
	w->reconnect_sent = true; /* draining */
	ck_assert(!gw_worker_eligible(&f.g, w));
	w->reconnect_sent = false;
	w->conn = NULL; /* closing */
	ck_assert(!gw_worker_eligible(&f.g, w));
	ck_assert(!gw_route_any(&f.g, "m"));
	w->conn = (struct engy_ws_conn *)&f.conn;
	ck_assert(gw_route_any(&f.g, "m"));
	ck_assert(!gw_route_any(&f.g, "other"));
	fx_free(&f);
}
END_TEST

/* Smooth weighted round-robin by free slots: capacities 8 and 16 share
 * exactly 1:2 in every window of three picks. */
START_TEST(round_robin_by_capacity)
{
	struct fx f;
	struct gw_req r;
	int n[2] = { 0, 0 }, i, k;

	fx_init(&f);
	fx_worker(&f, 0, "m", 8);
	fx_worker(&f, 1, "m", 16);
	req_for(&r, "m");
	for (k = 0; k < 100; k++) {
		int win[2] = { 0, 0 };

		for (i = 0; i < 3; i++) {
			struct gw_worker *w = gw_route_pick(&f.g, &r);

			ck_assert_ptr_nonnull(w);
			win[w == &f.w[1]]++;
		}
		ck_assert_int_eq(win[0], 1);
		ck_assert_int_eq(win[1], 2);
		n[0] += win[0];
		n[1] += win[1];
	}
	ck_assert_int_eq(n[0], 100);
	ck_assert_int_eq(n[1], 200);
	/* Priority 1 doubles a weight: 8 x 2 against 16, 1:1. */
	f.w[0].priority = 1;
	n[0] = n[1] = 0;
	for (i = 0; i < 200; i++)
		n[gw_route_pick(&f.g, &r) == &f.w[1]]++;
	ck_assert_int_eq(n[0], 100);
	ck_assert_int_eq(n[1], 100);
	/* Free slots, not capacity: the bigger one nearly full loses. */
	f.w[0].priority = 0;
	f.w[1].inflight = 15; /* 1 free against 8 */
	n[0] = n[1] = 0;
	for (i = 0; i < 90; i++)
		n[gw_route_pick(&f.g, &r) == &f.w[1]]++;
	ck_assert_int_eq(n[0], 80);
	ck_assert_int_eq(n[1], 10);
	fx_free(&f);
}
END_TEST

/* Weights are earned shares, not claims: a worker claiming 16 that
 * earned 4 against one that earned its 8 gets a third; at its earned
 * share it gets nothing while another has room; when every one is at
 * its share, the rest of the ceilings are used by earned weight; held
 * cancels take slots. */
START_TEST(earned_weights)
{
	struct fx f;
	struct gw_req r;
	int n[2] = { 0, 0 }, i;

	fx_init(&f);
	fx_worker(&f, 0, "m", 16)->earned = 4;
	fx_worker(&f, 1, "m", 8);
	req_for(&r, "m");
	for (i = 0; i < 120; i++)
		n[gw_route_pick(&f.g, &r) == &f.w[1]]++;
	ck_assert_int_eq(n[0], 40);
	ck_assert_int_eq(n[1], 80);
	f.w[0].inflight = 4; /* at its earned share */
	f.w[1].inflight = 2;
	for (i = 0; i < 20; i++)
		ck_assert_ptr_eq(gw_route_pick(&f.g, &r), &f.w[1]);
	f.w[1].inflight = 6;
	f.w[1].held = 2; /* 8 slots taken: no room there at all */
	for (i = 0; i < 20; i++)
		ck_assert_ptr_eq(gw_route_pick(&f.g, &r), &f.w[0]);
	f.w[0].inflight = 16; /* at its ceiling */
	ck_assert_ptr_null(gw_route_pick(&f.g, &r));
	fx_free(&f);
}
END_TEST

START_TEST(candidates)
{
	struct fx f;
	struct gw_req r;

	fx_init(&f);
	fx_worker(&f, 0, "m", 2);
	fx_worker(&f, 1, "other", 2);
	req_for(&r, "m");
	ck_assert_ptr_eq(gw_route_pick(&f.g, &r), &f.w[0]);
	f.w[0].inflight = 2; /* no free slot */
	ck_assert_ptr_null(gw_route_pick(&f.g, &r));
	f.w[0].inflight = 0;
	r.areq.max_tokens = 1001; /* over its output limit */
	ck_assert_ptr_null(gw_route_pick(&f.g, &r));
	r.areq.max_tokens = 1000;
	r.prompt_bound = 1001; /* over its input limit */
	ck_assert_ptr_null(gw_route_pick(&f.g, &r));
	r.prompt_bound = 1000;
	r.tried[r.attempts++] = f.w[0].id; /* tried already */
	ck_assert_ptr_null(gw_route_pick(&f.g, &r));
	/* A pin takes its worker only, whatever its model or state
	 * (probes go to a worker not yet eligible)... */
	req_for(&r, "m");
	r.pin = f.w[1].id;
	f.w[1].state = GW_W_PROBING;
	ck_assert_ptr_eq(gw_route_pick(&f.g, &r), &f.w[1]);
	/* ... while it is live, not draining, with a free slot. */
	f.w[1].reconnect_sent = true;
	ck_assert_ptr_null(gw_route_pick(&f.g, &r));
	f.w[1].reconnect_sent = false;
	f.w[1].state = GW_W_HELLO;
	ck_assert_ptr_null(gw_route_pick(&f.g, &r));
	fx_free(&f);
}
END_TEST

START_TEST(affinity)
{
	static const char p1[] = "You are a helpful assistant. Tell me";
	static const char p2[] = "You are a helpful assistant. Write";
	static const char p3[] = "Summarize this text for a child";
	struct fx f;
	struct gw_req r;
	struct gw_worker *w, *first;
	bool use;
	int i;

	fx_init(&f);
	/* Only the first affinity_chars (16) bytes count. */
	ck_assert(gw_route_affinity(&f.g, p1, strlen(p1), &use) ==
		  gw_route_affinity(&f.g, p2, strlen(p2), &use));
	ck_assert(use);
	ck_assert(gw_route_affinity(&f.g, p1, strlen(p1), &use) !=
		  gw_route_affinity(&f.g, p3, strlen(p3), &use));
	f.c.affinity_min_chars = 40; /* shorter: no affinity */
	gw_route_affinity(&f.g, p1, strlen(p1), &use);
	ck_assert(!use);
	gw_route_affinity(&f.g, "", 0, &use);
	ck_assert(!use);
	f.c.affinity_min_chars = 0;

	for (i = 0; i < 4; i++)
		fx_worker(&f, i, "m", 8);
	req_for(&r, "m");
	r.affinity = gw_route_affinity(&f.g, p1, strlen(p1), &r.has_affinity);
	first = gw_route_pick(&f.g, &r);
	ck_assert_ptr_nonnull(first);
	for (i = 0; i < 20; i++) /* one prefix, one worker */
		ck_assert_ptr_eq(gw_route_pick(&f.g, &r), first);
	/* A hot prefix spills once its worker's load is more than
	 * affinity_slack above the least loaded one's: 4/8 is at the
	 * slack, 5/8 over it. */
	first->inflight = 4;
	ck_assert_ptr_eq(gw_route_pick(&f.g, &r), first);
	first->inflight = 5;
	w = gw_route_pick(&f.g, &r);
	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_ne(w, first);
	/* The affine worker stays affine whatever else leaves. */
	first->inflight = 0;
	for (i = 0; i < 4; i++)
		if (&f.w[i] != first) {
			f.w[i].state = GW_W_CLOSED;
			ck_assert_ptr_eq(gw_route_pick(&f.g, &r), first);
		}
	fx_free(&f);
}
END_TEST

/* ---- a miner's hello, as parsed --------------------------------------- */

static int parse(const char *s, struct gw_mframe *fr, char *err)
{
	int rc = gw_frame_parse(s, strlen(s), fr, err, 160);

	return rc;
}

START_TEST(hello)
{
	struct gw_mframe fr;
	char err[160];

	ck_assert_int_eq(parse("{\"type\":\"hello\",\"miner_key\":\"k\","
			       "\"model\":\"m\",\"model_root\":\"aB09\","
			       "\"worker_name\":\"gpu0\",\"capacity\":"
			       "{\"max_inflight\":4,\"max_inflight_total\":8,"
			       "\"max_output_tokens\":512}}",
			       &fr, err),
			 0);
	ck_assert_int_eq(fr.type, GW_M_HELLO);
	ck_assert_str_eq(fr.miner_key, "k");
	ck_assert_str_eq(fr.model_root, "aB09");
	ck_assert_str_eq(fr.worker_name, "gpu0");
	ck_assert_int_eq(fr.cap.max_inflight, 4);
	ck_assert(fr.cap.has_total);
	ck_assert_int_eq(fr.cap.max_inflight_total, 8);
	ck_assert_uint_eq(fr.cap.max_output_tokens, 512);
	ck_assert_uint_eq(fr.cap.max_input_tokens, 0); /* not sent */
	/* constraints: known names become bits, unknown ones are ignored,
	 * absent is none; anything but an array of strings is refused */
	ck_assert_uint_eq(fr.constraints, 0);
	gw_frame_free(&fr);
	ck_assert_int_eq(
		parse("{\"type\":\"hello\",\"miner_key\":\"k\","
		      "\"model\":\"m\",\"capacity\":{\"max_inflight\":4},"
		      "\"constraints\":[\"tool_call\",\"regex\","
		      "\"json_schema\",\"top_logprobs\"]}",
		      &fr, err),
		0);
	ck_assert_uint_eq(fr.constraints, ENGY_API_CONS_JSON |
						  ENGY_API_CONS_TOOL |
						  ENGY_API_CONS_TOPLP);
	gw_frame_free(&fr);
	ck_assert_int_eq(
		parse("{\"type\":\"hello\",\"miner_key\":\"k\","
		      "\"model\":\"m\",\"capacity\":{\"max_inflight\":4},"
		      "\"constraints\":[\"json_schema\",1]}",
		      &fr, err),
		-EINVAL);
	ck_assert_str_eq(err,
			 "hello.constraints: an array of at most 8 strings");
	gw_frame_free(&fr);
	/* A hello without the total parses: the pool denies it, naming it. */
	ck_assert_int_eq(parse("{\"type\":\"hello\",\"miner_key\":\"k\","
			       "\"model\":\"m\",\"capacity\":"
			       "{\"max_inflight\":4}}",
			       &fr, err),
			 0);
	ck_assert(!fr.cap.has_total);
	gw_frame_free(&fr);

	ck_assert_int_eq(
		parse("{\"type\":\"hello\",\"model\":\"m\"}", &fr, err),
		-EINVAL);
	ck_assert_int_eq(fr.type, GW_M_HELLO);
	ck_assert_str_eq(err, "hello.miner_key: a string of 1..512 bytes");
	gw_frame_free(&fr);
	ck_assert_int_eq(parse("{\"type\":\"hello\",\"miner_key\":\"k\","
			       "\"model\":\"m\\u0001\",\"capacity\":"
			       "{\"max_inflight\":4}}",
			       &fr, err),
			 -EINVAL);
	ck_assert_str_eq(err, "hello.model: a string of 1..127 bytes");
	gw_frame_free(&fr);
	ck_assert_int_eq(parse("{\"type\":\"hello\",\"miner_key\":\"k\","
			       "\"model\":\"m\",\"model_root\":\"xyz\","
			       "\"capacity\":{\"max_inflight\":4}}",
			       &fr, err),
			 -EINVAL);
	ck_assert_str_eq(err, "hello.model_root: hex digits");
	gw_frame_free(&fr);
	ck_assert_int_eq(parse("{\"type\":\"hello\",\"miner_key\":\"k\","
			       "\"model\":\"m\",\"capacity\":"
			       "{\"max_inflight\":0}}",
			       &fr, err),
			 -EINVAL);
	ck_assert_str_eq(err, "hello.capacity: numbers out of range");
	gw_frame_free(&fr);
	ck_assert_int_eq(parse("{\"type\":\"hello\",\"miner_key\":\"k\","
			       "\"model\":\"m\"}",
			       &fr, err),
			 -EINVAL);
	ck_assert_str_eq(err, "hello.capacity.max_inflight: required, >= 1");
	gw_frame_free(&fr);
	ck_assert_int_eq(parse("{\"type\":\"hello\",\"miner_key\":\"k\","
			       "\"model\":\"m\",\"worker_name\":\"a\\nb\","
			       "\"capacity\":{\"max_inflight\":4}}",
			       &fr, err),
			 -EINVAL);
	ck_assert_str_eq(err, "hello: a worker name or id with control "
			      "characters");
	gw_frame_free(&fr);
}
END_TEST

/* ---- the bus ----------------------------------------------------------- */

START_TEST(quantile)
{
	uint32_t v[100], one = 7, four[] = { 4, 1, 3, 2 };
	int i;

	for (i = 0; i < 100; i++)
		v[i] = (uint32_t)(100 - i); /* 100 .. 1 */
	ck_assert_uint_eq(gw_mod_quantile(v, 100, 0.99), 99);
	ck_assert_uint_eq(gw_mod_quantile(v, 100, 1), 100);
	ck_assert_uint_eq(gw_mod_quantile(v, 100, 0.5), 50);
	ck_assert_uint_eq(gw_mod_quantile(v, 100, 0.001), 1);
	ck_assert_uint_eq(gw_mod_quantile(&one, 1, 0.99), 7);
	ck_assert_uint_eq(gw_mod_quantile(four, 4, 0.5), 2);
	ck_assert_uint_eq(gw_mod_quantile(four, 4, 0.51), 3);
	ck_assert_uint_eq(gw_mod_quantile(NULL, 0, 0.99), 0);
}
END_TEST

struct seen {
	int n;
	enum gw_wstate from[8], to[8];
};

static void seen_state(void *arg, struct gw_worker *w, enum gw_wstate from)
{
	struct seen *s = arg;

	if (s->n < 8) {
		s->from[s->n] = from;
		s->to[s->n] = w->state;
	}
	s->n++;
}

START_TEST(observers_and_state)
{
	struct gw_observer o = { .name = "seen", .state = seen_state };
	struct seen s = { 0 };
	struct fx f;
	struct gw_worker *w;
	int i;

	fx_init(&f);
	o.arg = &s;
	for (i = 0; i < GW_EXT_SLOTS; i++)
		ck_assert_int_eq(gw_ext_slot(&f.g), i);
	ck_assert_int_eq(gw_ext_slot(&f.g), -ENOSPC);
	ck_assert_int_eq(gw_observe(&f.g, &o), 0);
	ck_assert_ptr_eq(gw_mod_find(&f.g, "seen"), &s);
	ck_assert_ptr_null(gw_mod_find(&f.g, GW_MOD_BREAKER));
	w = fx_worker(&f, 0, "m", 4);
	w->state = GW_W_NEW;
	gw_worker_set_state(w, GW_W_PROBING, "round 1");
	gw_worker_set_state(w, GW_W_PROBING, "again"); /* no change: no event */
	gw_worker_set_state(w, GW_W_ACTIVE, "qualified");
	ck_assert_int_eq(s.n, 2);
	ck_assert_int_eq(s.from[0], GW_W_NEW);
	ck_assert_int_eq(s.to[0], GW_W_PROBING);
	ck_assert_int_eq(s.from[1], GW_W_PROBING);
	ck_assert_int_eq(s.to[1], GW_W_ACTIVE);
	ck_assert_ptr_nonnull(strstr(
		fake_host_log(f.h),
		"event=worker_state worker=1 name=w0 from=new to=probing "
		"why=\"round 1\"\n"));
	ck_assert_ptr_null(strstr(fake_host_log(f.h), "why=again"));
	for (i = 1; i < GW_MAX_OBSERVERS; i++)
		ck_assert_int_eq(gw_observe(&f.g, &o), 0);
	ck_assert_int_eq(gw_observe(&f.g, &o), -ENOSPC);
	fx_free(&f);
}
END_TEST

/* ---- the breaker's window ---------------------------------------------- */

/* Onboarding as the breaker finds it: the model's latency ceilings. */
struct bk_fx {
	struct fx f;
	struct ob ob;
	struct ob_w rec;
	struct gw_worker *w;
	struct gw_req r;
};

static void bk_setup(struct bk_fx *b)
{
	struct gw_observer ob = { .name = GW_MOD_ONBOARD };

	fx_init(&b->f);
	memset(&b->ob, 0, sizeof(b->ob));
	memset(&b->rec, 0, sizeof(b->rec));
	b->ob.g = &b->f.g;
	b->ob.slot = gw_ext_slot(&b->f.g);
	ob.arg = &b->ob;
	ck_assert_int_eq(gw_observe(&b->f.g, &ob), 0);
	ck_assert_int_eq(gw_breaker_init(&b->f.g), 0);
	b->w = fx_worker(&b->f, 0, "m", 8);
	b->rec.w = b->w;
	b->rec.ttft_ms = 100;
	b->rec.tpot_ms = 20;
	b->w->ext[b->ob.slot] = &b->rec;
	gw_notify_admitted(&b->f.g, b->w); /* the breaker's record */
	memset(&b->r, 0, sizeof(b->r));
}

static void bk_end(struct bk_fx *b, int status, uint32_t ttft, uint32_t tpot,
		   uint32_t tokens)
{
	struct gw_outcome o = {
		.status = status,
		.miner_fault = status == 502 || status == 504,
		.ttft_ms = ttft,
		.tpot_ms = tpot,
		.completion_tokens = tokens,
	};

	gw_notify_finished(&b->f.g, b->w, &b->r, &o);
}

static void bk_teardown(struct bk_fx *b)
{
	b->w->ext[b->ob.slot] = NULL;
	fx_free(&b->f);
}

static int trips(const struct bk_fx *b, const char *reason)
{
	const char *p = fake_host_log(b->f.h);
	char needle[128];
	int n = 0;

	snprintf(needle, sizeof(needle),
		 "event=breaker_trip worker=1 name=w0 "
		 "miner= model=m reason=%s ",
		 reason);
	while ((p = strstr(p, needle))) {
		n++;
		p++;
	}
	return n;
}

START_TEST(breaker_consecutive)
{
	struct bk_fx b;
	int i;

	bk_setup(&b);
	for (i = 0; i < 4; i++)
		bk_end(&b, 502, 0, 0, 0);
	ck_assert_int_eq(b.w->state, GW_W_ACTIVE);
	bk_end(&b, 504, 0, 0, 0); /* the 5th in a row */
	ck_assert_int_eq(b.w->state, GW_W_PULLED);
	ck_assert_int_eq(trips(&b, "consecutive"), 1);
	/* Pulled: no longer judged. */
	for (i = 0; i < 10; i++)
		bk_end(&b, 502, 0, 0, 0);
	ck_assert_int_eq(trips(&b, "consecutive"), 1);
	/* Qualified again (ACTIVE): a fresh window, four more in a row
	 * are not enough, a fifth trips. */
	gw_worker_set_state(b.w, GW_W_ACTIVE, "qualified");
	for (i = 0; i < 4; i++)
		bk_end(&b, 502, 0, 0, 0);
	ck_assert_int_eq(b.w->state, GW_W_ACTIVE);
	bk_end(&b, 502, 0, 0, 0);
	ck_assert_int_eq(b.w->state, GW_W_PULLED);
	ck_assert_int_eq(trips(&b, "consecutive"), 2);
	/* An answer in between breaks a run. */
	gw_worker_set_state(b.w, GW_W_ACTIVE, "qualified");
	for (i = 0; i < 8; i++)
		bk_end(&b, i == 4 ? 200 : 502, 10, 0, 1);
	ck_assert_int_eq(b.w->state, GW_W_ACTIVE);
	bk_teardown(&b);
}
END_TEST

/* More than 5 % of at least 10 attempts failed: 1 of 20 is not more,
 * 2 of 21 is. */
START_TEST(breaker_error_ratio)
{
	struct bk_fx b;
	int i;

	bk_setup(&b);
	for (i = 0; i < 19; i++)
		bk_end(&b, 200, 50, 10, 5);
	bk_end(&b, 502, 0, 0, 0);
	ck_assert_int_eq(b.w->state, GW_W_ACTIVE);
	bk_end(&b, 502, 0, 0, 0);
	ck_assert_int_eq(b.w->state, GW_W_PULLED);
	ck_assert_int_eq(trips(&b, "errors"), 1);
	ck_assert_ptr_nonnull(
		strstr(fake_host_log(b.f.h), "attempts=21 failed=2 slow=0"));
	bk_teardown(&b);
}
END_TEST

/* Slow: a TTFT over 100 ms or a TPOT over 20 ms (of answers of more
 * than one token); the ratio counts from 10 attempts. */
START_TEST(breaker_slow_ratio)
{
	struct bk_fx b;
	int i;

	bk_setup(&b);
	for (i = 0; i < 9; i++)
		bk_end(&b, 200, 101, 0, 1);	   /* slow TTFT */
	ck_assert_int_eq(b.w->state, GW_W_ACTIVE); /* 9 < min_requests */
	bk_end(&b, 200, 100, 21, 1);		   /* one token: TPOT moot */
	ck_assert_int_eq(b.w->state, GW_W_PULLED);
	ck_assert_int_eq(trips(&b, "slow"), 1);
	ck_assert_ptr_nonnull(
		strstr(fake_host_log(b.f.h), "attempts=10 failed=0 slow=9"));
	/* A fresh window (NEW after a cooldown): 19 in time, one slow TPOT
	 * is at the ratio, a second one over it. */
	gw_worker_set_state(b.w, GW_W_NEW, "breaker cooldown over");
	for (i = 0; i < 19; i++)
		bk_end(&b, 200, 100, 20, 3);
	bk_end(&b, 200, 10, 21, 3);
	ck_assert_int_eq(b.w->state, GW_W_NEW);
	bk_end(&b, 200, 10, 21, 3);
	ck_assert_int_eq(b.w->state, GW_W_PULLED);
	ck_assert_int_eq(trips(&b, "slow"), 2);
	bk_teardown(&b);
}
END_TEST

START_TEST(breaker_never_counts)
{
	struct bk_fx b;
	int i;

	bk_setup(&b);
	/* The buyer leaving and refusals are nobody's fault. */
	for (i = 0; i < 20; i++)
		bk_end(&b, i % 2 ? 499 : 503, 0, 0, 0);
	/* Probes and internal requests are onboarding's business. */
	b.r.is_probe = true;
	for (i = 0; i < 20; i++)
		bk_end(&b, 502, 0, 0, 0);
	b.r.is_probe = false;
	b.r.internal = true;
	for (i = 0; i < 20; i++)
		bk_end(&b, 502, 0, 0, 0);
	b.r.internal = false;
	ck_assert_int_eq(b.w->state, GW_W_ACTIVE);
	/* A 1st-party worker is watched, never pulled. */
	b.w->first_party = true;
	for (i = 0; i < 20; i++)
		bk_end(&b, 502, 0, 0, 0);
	ck_assert_int_eq(b.w->state, GW_W_ACTIVE);
	/* Nor is a NEW one while onboarding holds new workers back. */
	b.w->first_party = false;
	b.f.c.onboarding = true;
	gw_worker_set_state(b.w, GW_W_NEW, "admitted");
	for (i = 0; i < 20; i++)
		bk_end(&b, 502, 0, 0, 0);
	ck_assert_int_eq(b.w->state, GW_W_NEW);
	ck_assert_ptr_null(strstr(fake_host_log(b.f.h), "event=breaker_trip"));
	bk_teardown(&b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("role_gateway");
	TCase *t = tcase_create("route");

	tcase_add_test(t, eligibility);
	tcase_add_test(t, round_robin_by_capacity);
	tcase_add_test(t, earned_weights);
	tcase_add_test(t, candidates);
	tcase_add_test(t, affinity);
	suite_add_tcase(s, t);
	t = tcase_create("hello");
	tcase_add_test(t, hello);
	suite_add_tcase(s, t);
	t = tcase_create("bus");
	tcase_add_test(t, quantile);
	tcase_add_test(t, observers_and_state);
	suite_add_tcase(s, t);
	t = tcase_create("breaker");
	tcase_add_test(t, breaker_consecutive);
	tcase_add_test(t, breaker_error_ratio);
	tcase_add_test(t, breaker_slow_ratio);
	tcase_add_test(t, breaker_never_counts);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r;
	int failed;

	base = event_base_new();
	if (!base)
		return 1;
	r = srunner_create(suite());
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	event_base_free(base);
	return failed ? 1 : 0;
}
