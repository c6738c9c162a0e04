/* SPDX-License-Identifier: MIT */
/*
 * The auditor role on the fake host, its files linked into the test, with
 * fake store, scorer, backend and proof peers: what start() refuses (a
 * 1.0 host, no store or an older one, a backend without prefill, the
 * master hotkey, the owner), that create() does no I/O and destroy()
 * after create() or a refused start() frees everything, and closing an
 * epoch (specs/scoring.md §2): which request-log rows count for which
 * (miner, model) row, the exact ttft/tpot histograms, the verdict tallies,
 * the models passed on, the store read in pages by id, the payload signed
 * by the master hotkey, an epoch already stored never settled again, a
 * settle failure retried, a close that waits for requests still running.
 * No tee is set: nothing is pulled.
 *
 * Oracle: hand-derived from specs/scoring.md §2 by the test's author
 * (which rows count, the histograms, the tallies); the fake peers record
 * what the role passes on. Real traffic scored end to end:
 * scaleout_postgres.sh.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include <engy/plugin.h>
#include <engy/role.h>

#include "auditor_int.h"
#include "epoch_sign.h"
#include "fake_host.h"

extern const struct engy_plugin engy_plugin;

static struct event_base *base;
static char state[64];

static struct event_base *test_evbase(const struct engy_host *h)
{
	return base;
}

static const char *test_state_dir(const struct engy_host *h)
{
	return state;
}

/* ---- the fake peers ----------------------------------------------------- */

#define EPOCH_S 60

static struct {
	/* the store */
	int64_t stored[4];
	size_t n_stored;
	unsigned n_log, n_verdicts, n_put;
	int put_rc; /* epoch_put's answer when not 0 (nothing stored) */
	int64_t log_after[4], log_since, log_until;
	struct engy_epoch_rec put;
	char *payload, *aggregates;
	/* the scorer */
	int settle_rc;
	unsigned n_settle;
	struct engy_epoch_input in;
	struct engy_epoch_model models[4];
	struct engy_epoch_row row;
	struct engy_score_bucket ttft[8], tpot[8];
	char hotkey[64], model[128], owner[64], model0[128];
	char result[512]; /* the result_json settle() gave */
	/* holds_open() */
	uint64_t holds;
	int64_t holds_before;
	unsigned n_holds;
} fk;

static int st_holds_open(void *inst, int64_t created_before_ms, int64_t now_ms,
			 uint64_t *n)
{
	fk.n_holds++;
	fk.holds_before = created_before_ms;
	*n = fk.holds;
	return 0;
}

static int st_verdict_put(void *inst, const struct engy_verdict *v)
{
	return 0;
}

static int st_epoch_put(void *inst, const struct engy_epoch_rec *e,
			const char *payload, const char *aggregates)
{
	fk.n_put++;
	if (fk.put_rc)
		return fk.put_rc;
	fk.put = *e;
	free(fk.payload);
	free(fk.aggregates);
	fk.payload = strdup(payload);
	fk.aggregates = strdup(aggregates);
	ck_assert_uint_lt(fk.n_stored, 4);
	fk.stored[fk.n_stored++] = e->epoch_index;
	return 0;
}

static int st_epoch_get(void *inst, int64_t index, int latest,
			struct engy_epoch_rec *out, char **payload,
			char **aggregates)
{
	size_t i;

	for (i = 0; i < fk.n_stored; i++)
		if (fk.stored[i] == index) {
			memset(out, 0, sizeof(*out));
			out->epoch_index = index;
			return 0;
		}
	return -ENOENT;
}

static int st_model_list(void *inst, struct engy_model **out, size_t *n)
{
	*out = calloc(2, sizeof(**out));
	snprintf((*out)[0].name, sizeof((*out)[0].name), "m");
	(*out)[0].score_rate = 5;
	(*out)[0].qual_ttft_p99_ms = 1000;
	(*out)[0].qual_tpot_p99_ms = 50;
	snprintf((*out)[1].name, sizeof((*out)[1].name), "unused");
	(*out)[1].score_rate = 9;
	*n = 2;
	return 0;
}

static int st_miner_list(void *inst, struct engy_miner **out, size_t *n)
{
	*out = calloc(2, sizeof(**out));
	(*out)[0].id = 3;
	snprintf((*out)[0].hotkey, sizeof((*out)[0].hotkey), "hkA");
	(*out)[1].id = 70000; /* past a u16 uid: never a row */
	snprintf((*out)[1].hotkey, sizeof((*out)[1].hotkey), "hkBig");
	*n = 2;
	return 0;
}

/* @miner @model @status @account @cost @prompt @completion @ttft @tpot
 * @probe; ids from 1, all inside epoch fk.in's window. */
static const struct {
	const char *miner, *model;
	uint32_t status;
	int64_t account, cost;
	uint32_t prompt, completion, ttft, tpot, probe;
} logrows[] = {
	{ "hkA", "m", 200, 1, 10, 5, 3, 100, 20, 0 }, /* counted */
	{ "hkA", "m", 200, 1, 10, 5, 1, 100, 90, 0 }, /* counted, no tpot */
	{ "hkA", "m", 200, 1, 0, 5, 3, 7, 7, 0 },     /* free: 2xx only */
	{ "hkA", "m", 499, 1, 10, 5, 3, 7, 7, 0 },
	{ "hkA", "m", 502, 1, 10, 5, 3, 7, 7, 0 },
	{ "hkA", "m", 504, 1, 10, 5, 3, 7, 7, 0 },
	{ "hkA", "m", 429, 1, 10, 5, 3, 7, 7, 0 }, /* refused: nothing */
	{ "hkA", "m", 200, 1, 10, 5, 3, 7, 7, 1 }, /* probe */
	{ "hkA", "m", 200, 0, 10, 5, 3, 7, 7, 0 }, /* internal */
	{ "", "m", 200, 1, 10, 5, 3, 7, 7, 0 },	   /* no miner */
	{ "hkBig", "m", 200, 1, 10, 5, 3, 7, 7, 0 },
	{ "hkNone", "m", 200, 1, 10, 5, 3, 7, 7, 0 },
	{ "hkA", "gone", 200, 1, 10, 5, 3, 7, 7, 0 },
	{ "hkA", "m", 200, 1, 5, 4, 2, 50, 30, 0 }, /* counted */
};
#define N_LOG (sizeof(logrows) / sizeof(logrows[0]))

/* Two pages (the first 10, then the rest), then none. */
static int st_log_query(void *inst, const struct engy_log_query *q,
			struct engy_request_row **out, size_t *n)
{
	size_t i, from = (size_t)q->after_id, k;

	if (fk.n_log < 4)
		fk.log_after[fk.n_log] = q->after_id;
	fk.n_log++;
	fk.log_since = q->since_ms;
	fk.log_until = q->until_ms;
	k = from < N_LOG ? N_LOG - from : 0;
	if (k > 10)
		k = 10;
	*out = calloc(k + 1, sizeof(**out));
	for (i = 0; i < k; i++) {
		struct engy_request_row *r = &(*out)[i];

		r->id = (int64_t)(from + i + 1);
		r->time_ms = q->since_ms;
		snprintf(r->miner, sizeof(r->miner), "%s",
			 logrows[from + i].miner);
		snprintf(r->model, sizeof(r->model), "%s",
			 logrows[from + i].model);
		r->status = logrows[from + i].status;
		r->account_id = logrows[from + i].account;
		r->cost_micro = logrows[from + i].cost;
		r->prompt_tokens = logrows[from + i].prompt;
		r->completion_tokens = logrows[from + i].completion;
		r->ttft_ms = logrows[from + i].ttft;
		r->tpot_ms = logrows[from + i].tpot;
		r->is_probe = logrows[from + i].probe;
	}
	*n = k;
	return 0;
}

static int st_verdict_list(void *inst, const struct engy_verdict_query *q,
			   struct engy_verdict **out, size_t *n)
{
	static const uint32_t kinds[] = { ENGY_VERDICT_PASS, ENGY_VERDICT_PASS,
					  ENGY_VERDICT_CHEAT,
					  ENGY_VERDICT_UNPROVEN,
					  ENGY_VERDICT_PASS };
	size_t i;

	fk.n_verdicts++;
	if (q->after_id) {
		*out = NULL;
		*n = 0;
		return 0;
	}
	*out = calloc(5, sizeof(**out));
	for (i = 0; i < 5; i++) {
		(*out)[i].id = (int64_t)i + 1;
		(*out)[i].verdict = kinds[i];
		snprintf((*out)[i].miner, sizeof((*out)[i].miner), "%s",
			 i == 4 ? "" : "hkA");
		snprintf((*out)[i].model, sizeof((*out)[i].model), "m");
	}
	*n = 5;
	return 0;
}

static int sc_settle(void *inst, const struct engy_epoch_input *in,
		     struct engy_epoch_result *out)
{
	fk.n_settle++;
	if (fk.settle_rc) {
		snprintf(out->error, sizeof(out->error), "rows: bad");
		return fk.settle_rc;
	}
	fk.in = *in;
	ck_assert_uint_le(in->n_models, 4);
	memcpy(fk.models, in->models, in->n_models * sizeof(*in->models));
	fk.in.models = NULL;
	if (in->n_models)
		snprintf(fk.model0, sizeof(fk.model0), "%s",
			 in->models[0].model);
	snprintf(fk.owner, sizeof(fk.owner), "%s", in->owner_hotkey);
	ck_assert_uint_eq(in->n_rows, 1);
	fk.row = in->rows[0];
	snprintf(fk.hotkey, sizeof(fk.hotkey), "%s", fk.row.hotkey);
	snprintf(fk.model, sizeof(fk.model), "%s", fk.row.model);
	ck_assert_uint_le(fk.row.n_ttft, 8);
	ck_assert_uint_le(fk.row.n_tpot, 8);
	memcpy(fk.ttft, fk.row.ttft, fk.row.n_ttft * sizeof(*fk.ttft));
	memcpy(fk.tpot, fk.row.tpot, fk.row.n_tpot * sizeof(*fk.tpot));
	snprintf(fk.result, sizeof(fk.result),
		 "{\"epoch_index\":%llu,\"netuid\":%u,\"weights\":[[\"hkA\","
		 "65535]],\"rules\":\"engy-sn53-v1\",\"burn\":false,"
		 "\"total_score\":1,\"rows\":[]}",
		 (unsigned long long)in->epoch_index, (unsigned)in->netuid);
	out->result_json = strdup(fk.result);
	out->result_len = strlen(fk.result);
	out->n_weights = 1;
	return 0;
}

static int sc_aggregates(void *inst, const struct engy_epoch_input *in,
			 char **json, char *why, size_t whylen)
{
	*json = strdup("{\"rows\":1}");
	return 0;
}

static int be_info(void *inst, struct engy_model_info *out)
{
	snprintf(out->name, sizeof(out->name), "m");
	return 0;
}

static int be_prefill(void *inst, const uint32_t *ids, size_t n,
		      void (*done)(void *arg, int rc,
				   const struct engy_rows *rows),
		      void *arg, struct engy_gen **g)
{
	return -EIO;
}

static struct engy_store_ops store;
static struct engy_scorer_ops scorer;
static struct engy_backend_ops be;
static struct engy_proof_ops pr;
static struct engy_transport_ops t_ws;

enum { P_STORE, P_SCORER, P_BE, P_PROOF, P_WS };
static struct engy_peer_info peers[5];

static void peers_init(void)
{
	free(fk.payload);
	free(fk.aggregates);
	memset(&fk, 0, sizeof(fk));
	memset(&store, 0, sizeof(store));
	store.size = sizeof(store);
	store.verdict_put = st_verdict_put;
	store.verdict_list = st_verdict_list;
	store.epoch_put = st_epoch_put;
	store.epoch_get = st_epoch_get;
	store.model_list = st_model_list;
	store.miner_list = st_miner_list;
	store.log_query = st_log_query;
	memset(&scorer, 0, sizeof(scorer));
	scorer.size = sizeof(scorer);
	scorer.settle = sc_settle;
	scorer.aggregates = sc_aggregates;
	memset(&be, 0, sizeof(be));
	be.size = sizeof(be);
	be.info = be_info;
	be.prefill = be_prefill;
	memset(&pr, 0, sizeof(pr));
	pr.size = sizeof(pr);
	pr.scheme = "toploc";
	memset(&t_ws, 0, sizeof(t_ws));
	t_ws.size = sizeof(t_ws);
	t_ws.proto = "ws"; /* no http_route: not the API's */
#define PEER(i, k, n, o)                                                       \
	peers[i] = (struct engy_peer_info){                                    \
		sizeof(peers[i]), k, n, n, "9.9", o, NULL                      \
	}
	PEER(P_STORE, ENGY_KIND_STORE, "store-sqlite", &store);
	PEER(P_SCORER, ENGY_KIND_SCORER, "scorer-default", &scorer);
	PEER(P_BE, ENGY_KIND_BACKEND, "backend-ref", &be);
	PEER(P_PROOF, ENGY_KIND_PROOF, "proof-toploc", &pr);
	PEER(P_WS, ENGY_KIND_TRANSPORT, "transport-ws", &t_ws);
#undef PEER
}

/* ---- fixture ------------------------------------------------------------ */

struct fx {
	struct engy_host *h;
	struct aud_conf c;
	void *inst;
};

/* The defaults of auditor.c's table, a 60 s epoch, no tee, no key. */
static void fx_init(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(state, sizeof(state), "/tmp/engy-auditor.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(state));
	f->h = fake_host_new("auditor");
	ck_assert_ptr_nonnull(f->h);
	f->h->evbase = test_evbase;
	f->h->state_dir = test_state_dir;
	peers_init();
	fake_host_set_peers(f->h, peers, 5);
	f->c.sample_ppm = 10000;
	f->c.pull_s = 5;
	f->c.queue_max = 64;
	f->c.epoch_s = EPOCH_S;
	f->c.netuid = 53;
	f->c.api_prefix = "/api/subnet/v1";
	f->c.fetch_timeout_s = 10;
}

static int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void fx_free(struct fx *f)
{
	engy_plugin.destroy(f->inst);
	f->inst = NULL;
	ck_assert_int_eq(rmdir(state), 0);
	fake_host_free(f->h);
	free(fk.payload);
	free(fk.aggregates);
	fk.payload = fk.aggregates = NULL;
}

static int fx_start(struct fx *f)
{
	ck_assert_int_eq(engy_plugin.create(f->h, &f->c, &f->inst), 0);
	return engy_plugin.start(f->inst);
}

static void assert_log(struct fx *f, const char *s)
{
	ck_assert_msg(strstr(fake_host_log(f->h), s), "no \"%s\" in:\n%s", s,
		      fake_host_log(f->h));
}

/* ---- create and start ------------------------------------------------- */

START_TEST(descriptor)
{
	const struct engy_role_ops *ro = engy_plugin.ops;

	ck_assert_uint_eq(engy_plugin.kind, ENGY_KIND_ROLE);
	ck_assert_str_eq(engy_plugin.name, "role-auditor");
	ck_assert_uint_eq(engy_plugin.conf_size, sizeof(struct aud_conf));
	ck_assert_uint_eq(ro->needs[0].kind, ENGY_KIND_BACKEND);
	ck_assert_uint_eq(ro->needs[0].max, AUD_MAX_BACKENDS);
	ck_assert_uint_eq(ro->needs[1].kind, ENGY_KIND_PROOF);
	ck_assert_uint_eq(ro->needs[2].kind, ENGY_KIND_SCORER);
	ck_assert_uint_eq(ro->needs[3].kind, ENGY_KIND_STORE);
	ck_assert_uint_eq(ro->needs[3].min, 1);
	ck_assert_uint_eq(ro->needs[4].kind, ENGY_KIND_TRANSPORT);
	ck_assert_uint_eq(ro->needs[4].min, 0);
	ck_assert_uint_eq(ro->needs[5].kind, 0);
}
END_TEST

START_TEST(create_no_io)
{
	struct fx f;
	struct aud *a;

	fx_init(&f);
	ck_assert_int_eq(engy_plugin.create(f.h, &f.c, &f.inst), 0);
	a = f.inst;
	ck_assert_ptr_null(a->st);
	ck_assert_uint_eq(a->n_be, 0);
	ck_assert_ptr_null(a->pull_ev);
	ck_assert_str_eq(fake_host_log(f.h), "");
	ck_assert_int_eq(dir_entries(state), 0);
	fx_free(&f);
}
END_TEST

START_TEST(refuse_host_and_peers)
{
	struct fx f;

	fx_init(&f);
	f.h->peer_at = NULL;
	ck_assert_int_eq(fx_start(&f), -ENOTSUP);
	fx_free(&f);

	fx_init(&f);
	fake_host_set_peers(f.h, peers + 1, 4); /* no store */
	ck_assert_int_eq(fx_start(&f), -ENOTSUP);
	assert_log(&f, "event=store_unusable reason=\"the store has no "
		       "verdict and epoch ops");
	fx_free(&f);

	fx_init(&f);
	store.epoch_get = NULL; /* an older store */
	ck_assert_int_eq(fx_start(&f), -ENOTSUP);
	assert_log(&f, "event=store_unusable");
	fx_free(&f);

	fx_init(&f);
	be.prefill = NULL;
	ck_assert_int_eq(fx_start(&f), -ENOTSUP);
	assert_log(&f, "event=backend_unusable instance=backend-ref "
		       "reason=\"no prefill op\"");
	fx_free(&f);
}
END_TEST

START_TEST(refuse_keys)
{
	struct fx f;

	fx_init(&f);
	f.c.hotkey_file = HOTKEY_DATA "/public";
	ck_assert_int_eq(fx_start(&f), -EINVAL);
	assert_log(&f, "holds no secret: it cannot sign");
	fx_free(&f);

	fx_init(&f);
	f.c.hotkey_file = HOTKEY_DATA "/absent";
	ck_assert_int_ne(fx_start(&f), 0);
	assert_log(&f, "event=hotkey_unusable error=");
	fx_free(&f);

	fx_init(&f);
	f.c.owner_hotkey = "5notanaddress";
	ck_assert_int_eq(fx_start(&f), -EINVAL);
	assert_log(&f, "event=bad_option option=owner_hotkey");
	ck_assert_ptr_null(((struct aud *)f.inst)->pull_ev);
	fx_free(&f);
}
END_TEST

/* No key, no tee: it starts, says what it will not do, closes nothing;
 * the epoch in flight is now / epoch_s. */
START_TEST(start_keyless)
{
	struct fx f;
	struct aud *a;
	int64_t now;
	char want[96];

	fx_init(&f);
	now = aud_now_ms() / 1000 / EPOCH_S;
	ck_assert_int_eq(fx_start(&f), 0);
	a = f.inst;
	ck_assert_uint_eq(a->n_be, 1);
	ck_assert_str_eq(a->be[0].name, "m");
	ck_assert_uint_eq(a->n_pr, 1);
	ck_assert_ptr_eq(a->st, &store);
	ck_assert_ptr_eq(a->sc, &scorer);
	ck_assert_ptr_null(a->t); /* a ws transport serves no API */
	ck_assert(a->next_close == now || a->next_close == now + 1);
	assert_log(&f, "event=no_master_key");
	assert_log(&f, "event=no_tee");
	snprintf(want, sizeof(want), "epoch_s=60 epoch_current=%lld ",
		 (long long)a->next_close);
	assert_log(&f, want);
	assert_log(&f, "backends=1 proofs=1 master=- owner=- tee=-");
	a->next_close -= 5; /* long past, but no key */
	aud_epoch_tick(a);
	ck_assert_uint_eq(fk.n_log + fk.n_settle, 0);
	ck_assert(!a->closing);
	ck_assert_int_eq(dir_entries(state), 0);
	fx_free(&f);
}
END_TEST

/* ---- closing an epoch ------------------------------------------------- */

START_TEST(epoch_close)
{
	struct fx f;
	struct aud *a;
	struct engy_hotkey hk;
	struct engy_epoch_verified ok = { 0 };
	char err[256], why[256], digest[ENGY_EPOCH_DIGEST_HEX + 1], want[256];
	int64_t idx;

	ck_assert_int_eq(
		engy_hotkey_load(&hk, HOTKEY_DATA "/plain", err, sizeof(err)),
		0);
	fx_init(&f);
	f.c.hotkey_file = HOTKEY_DATA "/plain";
	ck_assert_int_eq(fx_start(&f), 0);
	a = f.inst;
	snprintf(want, sizeof(want), "master=%s owner=%s ", hk.ss58, hk.ss58);
	assert_log(&f, want);
	/* the epoch in flight is not closed yet */
	aud_epoch_tick(a);
	ck_assert_uint_eq(fk.n_log, 0);

	/* idx + 1 must be due too: its end plus the 3 s grace is past */
	idx = a->next_close - 3;
	a->next_close = idx;
	aud_epoch_tick(a);
	ck_assert(!a->closing);
	ck_assert_uint_eq(a->inflight, 0);
	/* the window, read in two pages by id */
	ck_assert_int_eq(fk.log_since, idx * EPOCH_S * 1000);
	ck_assert_int_eq(fk.log_until, (idx + 1) * EPOCH_S * 1000);
	ck_assert_uint_eq(fk.n_log, 3);
	ck_assert_int_eq(fk.log_after[0], 0);
	ck_assert_int_eq(fk.log_after[1], 10);
	ck_assert_int_eq(fk.log_after[2], (int64_t)N_LOG);
	ck_assert_uint_eq(fk.n_verdicts, 2);
	/* what went to the scorer */
	ck_assert_uint_eq(fk.n_settle, 1);
	ck_assert_uint_eq(fk.in.netuid, 53);
	ck_assert_uint_eq(fk.in.epoch_index, (uint64_t)idx);
	ck_assert_str_eq(fk.owner, hk.ss58);
	ck_assert_uint_eq(fk.in.n_models, 1); /* "unused" names no row */
	ck_assert_str_eq(fk.model0, "m");
	ck_assert_uint_eq(fk.models[0].score_rate, 5);
	ck_assert_uint_eq(fk.models[0].qual_ttft_p99_ms, 1000);
	ck_assert_uint_eq(fk.models[0].qual_tpot_p99_ms, 50);
	ck_assert_str_eq(fk.hotkey, "hkA");
	ck_assert_str_eq(fk.model, "m");
	ck_assert_uint_eq(fk.row.uid, 3);
	ck_assert_uint_eq(fk.row.n_2xx, 4);
	ck_assert_uint_eq(fk.row.n_499, 1);
	ck_assert_uint_eq(fk.row.n_502, 1);
	ck_assert_uint_eq(fk.row.n_504, 1);
	ck_assert_uint_eq(fk.row.counted, 3);
	ck_assert_uint_eq(fk.row.tokens, (5 + 3) + (5 + 1) + (4 + 2));
	ck_assert_uint_eq(fk.row.n_ttft, 2);
	ck_assert_uint_eq(fk.ttft[0].ms, 50);
	ck_assert_uint_eq(fk.ttft[0].count, 1);
	ck_assert_uint_eq(fk.ttft[1].ms, 100);
	ck_assert_uint_eq(fk.ttft[1].count, 2);
	ck_assert_uint_eq(fk.row.n_tpot, 2); /* one completion token: none */
	ck_assert_uint_eq(fk.tpot[0].ms, 20);
	ck_assert_uint_eq(fk.tpot[0].count, 1);
	ck_assert_uint_eq(fk.tpot[1].ms, 30);
	ck_assert_uint_eq(fk.tpot[1].count, 1);
	ck_assert_uint_eq(fk.row.v_pass, 2);
	ck_assert_uint_eq(fk.row.v_cheat, 1);
	ck_assert_uint_eq(fk.row.v_unproven, 1);
	/* what was stored: the record, the signed payload, the aggregates */
	ck_assert_uint_eq(fk.n_put, 1);
	ck_assert_int_eq(fk.put.epoch_index, idx);
	ck_assert_int_eq(fk.put.start_ms, idx * EPOCH_S * 1000);
	ck_assert_int_eq(fk.put.end_ms, (idx + 1) * EPOCH_S * 1000);
	ck_assert_uint_eq(fk.put.n_weights, 1);
	ck_assert_uint_eq(fk.put.burn, 0);
	engy_epoch_digest(fk.result, strlen(fk.result), digest);
	ck_assert_str_eq(fk.put.digest, digest);
	ck_assert_str_eq(fk.aggregates, "{\"rows\":1}");
	ck_assert_int_eq(
		engy_epoch_payload_check(fk.payload, strlen(fk.payload), 53,
					 hk.kp.pub, &ok, why, sizeof(why)),
		ENGY_EPOCH_ACCEPT);
	ck_assert_uint_eq(ok.epoch_index, (uint64_t)idx);
	ck_assert_str_eq(ok.digest, digest);
	engy_epoch_verified_free(&ok);
	snprintf(want, sizeof(want),
		 "event=epoch_closed epoch=%lld rows=1 weights=1 burn=false "
		 "digest=%s",
		 (long long)idx, digest);
	assert_log(&f, want);
	ck_assert_int_eq(a->next_close, idx + 1);

	/* idx + 1 already stored (another run): skipped, never settled */
	fk.stored[fk.n_stored++] = idx + 1;
	aud_epoch_tick(a);
	ck_assert_uint_eq(fk.n_settle, 1);
	ck_assert_uint_eq(fk.n_put, 1);
	ck_assert_int_eq(a->next_close, idx + 2);
	snprintf(want, sizeof(want),
		 "event=epoch_already_closed epoch=%lld source=store",
		 (long long)idx + 1);
	assert_log(&f, want);
	engy_hotkey_wipe(&hk);
	fx_free(&f);
}
END_TEST

/*
 * Another auditor on the same store closes the epoch between this one's
 * check and its put (epoch_put -EEXIST): already closed, not a failure,
 * and the next epoch is next.
 */
START_TEST(epoch_put_lost_race)
{
	struct fx f;
	struct aud *a;
	int64_t idx;
	char want[160];

	fx_init(&f);
	f.c.hotkey_file = HOTKEY_DATA "/plain";
	ck_assert_int_eq(fx_start(&f), 0);
	a = f.inst;
	idx = a->next_close - 2; /* ended over 3 s ago */
	a->next_close = idx;
	fk.put_rc = -EEXIST;
	aud_epoch_tick(a);
	ck_assert_uint_eq(fk.n_settle, 1);
	ck_assert_uint_eq(fk.n_put, 1);
	snprintf(want, sizeof(want),
		 "event=epoch_already_closed epoch=%lld source=store",
		 (long long)idx);
	assert_log(&f, want);
	ck_assert_msg(!strstr(fake_host_log(f.h), "event=epoch_failed"), "%s",
		      fake_host_log(f.h));
	ck_assert_int_eq(a->next_close, idx + 1);
	ck_assert(!a->closing);
	fx_free(&f);
}
END_TEST

/*
 * A request that started in the epoch is still running (an open hold made
 * before its end + 3 s): the close waits, logs it once per count, and
 * closes when the hold is gone (specs/auditor.md §3).
 */
START_TEST(epoch_waits_for_holds)
{
	struct fx f;
	struct aud *a;
	int64_t idx;
	char want[200];
	const char *log, *p;
	int n = 0;

	fx_init(&f);
	f.c.hotkey_file = HOTKEY_DATA "/plain";
	ck_assert_int_eq(fx_start(&f), 0);
	store.holds_open = st_holds_open;
	a = f.inst;
	idx = a->next_close - 2; /* ended over 3 s ago */
	a->next_close = idx;
	fk.holds = 2;
	aud_epoch_tick(a);
	aud_epoch_tick(a);
	ck_assert_uint_eq(fk.n_holds, 2);
	ck_assert_int_eq(fk.holds_before, (idx + 1) * EPOCH_S * 1000 + 3000);
	ck_assert_uint_eq(fk.n_log, 0);
	ck_assert_uint_eq(fk.n_settle, 0);
	ck_assert_uint_eq(fk.n_put, 0);
	ck_assert_int_eq(a->next_close, idx);
	ck_assert(!a->closing);
	snprintf(want, sizeof(want),
		 "event=epoch_waiting epoch=%lld open_holds=2 ",
		 (long long)idx);
	log = fake_host_log(f.h);
	for (p = log; (p = strstr(p, want)); p++)
		n++;
	ck_assert_msg(n == 1, "%d waiting lines in:\n%s", n, log);
	ck_assert_msg(!strstr(log, "event=epoch_failed"), "%s", log);
	/* the request settled: the epoch closes */
	fk.holds = 0;
	aud_epoch_tick(a);
	ck_assert_uint_eq(fk.n_settle, 1);
	ck_assert_uint_eq(fk.n_put, 1);
	ck_assert_int_eq(fk.put.epoch_index, idx);
	ck_assert_int_eq(a->next_close, idx + 1);
	store.holds_open = NULL;
	fx_free(&f);
}
END_TEST

/* The scorer refuses: logged with its reason, the same epoch next tick. */
START_TEST(epoch_settle_fails)
{
	struct fx f;
	struct aud *a;
	int64_t idx;
	char want[160];

	fx_init(&f);
	f.c.hotkey_file = HOTKEY_DATA "/plain";
	ck_assert_int_eq(fx_start(&f), 0);
	a = f.inst;
	idx = a->next_close - 2; /* ended over 3 s ago */
	a->next_close = idx;
	fk.settle_rc = -EINVAL;
	aud_epoch_tick(a);
	ck_assert_uint_eq(fk.n_settle, 1);
	ck_assert_uint_eq(fk.n_put, 0);
	snprintf(want, sizeof(want),
		 "event=epoch_failed epoch=%lld "
		 "error=\"settle: rows: bad\" retry=next_tick",
		 (long long)idx);
	assert_log(&f, want);
	ck_assert_int_eq(a->next_close, idx);
	ck_assert(!a->closing);
	fk.settle_rc = 0;
	aud_epoch_tick(a);
	ck_assert_uint_eq(fk.n_settle, 2);
	ck_assert_uint_eq(fk.n_put, 1);
	ck_assert_int_eq(a->next_close, idx + 1);
	/* stopping: no close even when due */
	a->next_close = idx - 1;
	engy_plugin.stop(f.inst);
	aud_epoch_tick(a);
	ck_assert_uint_eq(fk.n_settle, 2);
	fx_free(&f);
}
END_TEST

/*
 * The limits a job's schemes get come from the model's row
 * (specs/auditor.md, "GEMM audit"): TOPLOC's and the GEMM sizes as
 * stored; gemm_rate the model's unless the auditor's option is set
 * (>= 0; the default -1 is unset).  A rate of 0 opens nothing: the GEMM
 * audit returns before any challenge (no verdict).
 */
START_TEST(limits_from_model)
{
	struct aud_conf c = { .gemm_rate = -1 };
	struct engy_model m = { .toploc_v = 10,
				.toploc_p_ppm = 990000,
				.toploc_mant_mean_centi = 250,
				.gemm_layers = 3,
				.gemm_tokens = 5,
				.gemm_projections = 7,
				.gemm_spots = 0,
				.gemm_z_milli = 6500,
				.gemm_c_el_milli = 8000,
				.gemm_rate_ppm = 250000 };
	struct engy_proof_limits l;
	struct engy_verdict v = { 0 };
	struct aud a = { 0 };
	struct aud_job j = { 0 };
	struct aud_proof p = { 0 };

	aud_limits(&c, &m, &l);
	ck_assert_uint_eq(l.size, sizeof(l));
	ck_assert_uint_eq(l.max_exp_mismatches, 10);
	ck_assert(l.min_pass_ratio == 0.99 && l.max_mant_mean == 2.5 &&
		  l.max_mant_median == 0);
	ck_assert_uint_eq(l.gemm_layers, 3);
	ck_assert_uint_eq(l.gemm_tokens, 5);
	ck_assert_uint_eq(l.gemm_projections, 7);
	ck_assert_uint_eq(l.gemm_spots, 0); /* the verifier's own */
	ck_assert(l.gemm_z == 6.5 && l.gemm_c_el == 8.0);
	ck_assert(l.gemm_rate == 0.25);
	/* the option set: it wins, 0 included */
	c.gemm_rate = 1;
	aud_limits(&c, &m, &l);
	ck_assert(l.gemm_rate == 1 && l.gemm_layers == 3);
	c.gemm_rate = 0;
	aud_limits(&c, &m, &l);
	ck_assert(l.gemm_rate == 0);
	/* a model with gemm_rate 0 and the option unset: nothing opened */
	c.gemm_rate = -1;
	m.gemm_rate_ppm = 0;
	aud_limits(&c, &m, &l);
	ck_assert(l.gemm_rate == 0);
	a.c = &c;
	ck_assert(!aud_gemm_audit(&a, &j, &p, &l, &v));
	ck_assert_str_eq(v.reason, "");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("role_auditor");
	TCase *t = tcase_create("start");

	tcase_add_test(t, descriptor);
	tcase_add_test(t, create_no_io);
	tcase_add_test(t, refuse_host_and_peers);
	tcase_add_test(t, refuse_keys);
	tcase_add_test(t, start_keyless);
	tcase_add_test(t, limits_from_model);
	suite_add_tcase(s, t);
	t = tcase_create("epoch");
	tcase_add_test(t, epoch_close);
	tcase_add_test(t, epoch_settle_fails);
	tcase_add_test(t, epoch_put_lost_race);
	tcase_add_test(t, epoch_waits_for_holds);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r;
	int failed;

	base = event_base_new();
	if (!base)
		return 99;
	r = srunner_create(suite());
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	event_base_free(base);
	return failed ? 1 : 0;
}
