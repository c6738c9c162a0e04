/* SPDX-License-Identifier: MIT */
/*
 * Closing an epoch (specs/auditor.md §3, specs/scoring.md): epoch i is the
 * request log's slice [i * epoch_s, (i + 1) * epoch_s) and the verdicts
 * rendered in it.  A few seconds after its end, on the pool: reduce the
 * slice to one row per (miner, model), settle with the scorer, build the
 * public aggregates, sign result_json with the master hotkey and store
 * the payload and the aggregates.  An epoch already stored is never
 * settled again (a restart picks up where it left).  A request's row
 * carries its start time but is written when it ends: while a hold made
 * before the grace ran out is still open (a request that started in the
 * epoch and is still running), the close waits for it (store
 * holds_open(), specs/auditor.md §3).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auditor_int.h"
#include "epoch_sign.h"
#include "grow.h"

#define CLOSE_GRACE_MS 3000 /* rows the gateway is still settling */

struct vec {
	uint64_t *v;
	size_t n, cap;
};

struct erow {
	char hotkey[64];
	char model[128];
	uint32_t uid;
	struct engy_epoch_row r;
	struct vec ttft, tpot;
	struct engy_score_bucket *bt, *bp;
};

struct eclose {
	struct aud *a;
	int64_t index;
	int rc;
	uint64_t open_holds; /* -EAGAIN: requests still running */
	char why[256];
	struct engy_epoch_rec rec;
	char *payload, *aggregates;
	/* working state */
	struct engy_model *models;
	size_t n_models;
	struct engy_miner *miners;
	size_t n_miners;
	struct erow *rows;
	size_t n_rows, cap_rows;
};

int64_t aud_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int vec_push(struct vec *v, uint64_t x)
{
	if (!ENGY_GROW(v->v, v->cap, v->n + 1))
		return -ENOMEM;
	v->v[v->n++] = x;
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* The exact multiset as [ms, count] buckets, ascending. */
static int histogram(struct vec *v, struct engy_score_bucket **out, size_t *n)
{
	size_t i, k = 0;

	*out = NULL;
	*n = 0;
	if (!v->n)
		return 0;
	qsort(v->v, v->n, sizeof(*v->v), cmp_u64);
	*out = calloc(v->n, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (i = 0; i < v->n; i++) {
		if (k && (*out)[k - 1].ms == v->v[i]) {
			(*out)[k - 1].count++;
			continue;
		}
		(*out)[k].ms = v->v[i];
		(*out)[k++].count = 1;
	}
	*n = k;
	return 0;
}

static const struct engy_model *find_model(struct eclose *e, const char *name)
{
	size_t i;

	for (i = 0; i < e->n_models; i++)
		if (!strcmp(e->models[i].name, name))
			return &e->models[i];
	return NULL;
}

/*
 * The row of (@hotkey, @model), made on first use; NULL for a hotkey that
 * is not a registered miner or a model that is not known (logged once by
 * the caller's counters).  A miner's uid is its registry id.
 */
static struct erow *row_of(struct eclose *e, const char *hotkey,
			   const char *model)
{
	struct erow *r;
	size_t i;
	int64_t uid = -1;

	for (i = 0; i < e->n_rows; i++)
		if (!strcmp(e->rows[i].hotkey, hotkey) &&
		    !strcmp(e->rows[i].model, model))
			return &e->rows[i];
	if (!find_model(e, model))
		return NULL;
	for (i = 0; i < e->n_miners; i++)
		if (!strcmp(e->miners[i].hotkey, hotkey))
			uid = e->miners[i].id;
	if (uid < 0 || uid > 65535)
		return NULL;
	if (!ENGY_GROW(e->rows, e->cap_rows, e->n_rows + 1))
		return NULL;
	r = &e->rows[e->n_rows++];
	memset(r, 0, sizeof(*r));
	snprintf(r->hotkey, sizeof(r->hotkey), "%s", hotkey);
	snprintf(r->model, sizeof(r->model), "%s", model);
	r->uid = (uint32_t)uid;
	return r;
}

/* specs/scoring.md §2: what a request-log row adds to its pair's row. */
static int add_log_row(struct eclose *e, const struct engy_request_row *q)
{
	struct erow *r;
	int rc = 0;

	if (!q->miner[0] || q->is_probe || q->account_id == 0)
		return 0; /* no miner, probe or internal traffic */
	if (q->status / 100 != 2 && q->status != 499 && q->status != 502 &&
	    q->status != 504)
		return 0; /* refused before a miner was picked */
	r = row_of(e, q->miner, q->model);
	if (!r)
		return 0;
	if (q->status / 100 == 2)
		r->r.n_2xx++;
	else if (q->status == 499)
		r->r.n_499++;
	else if (q->status == 502)
		r->r.n_502++;
	else
		r->r.n_504++;
	if (q->status / 100 != 2 || q->cost_micro <= 0)
		return 0;
	r->r.counted++;
	r->r.tokens += (uint64_t)q->prompt_tokens + q->completion_tokens;
	rc = vec_push(&r->ttft, q->ttft_ms);
	if (!rc && q->completion_tokens >= 2)
		rc = vec_push(&r->tpot, q->tpot_ms);
	return rc;
}

static int read_log(struct eclose *e, int64_t since, int64_t until)
{
	struct aud *a = e->a;
	struct engy_log_query q = { .size = sizeof(q),
				    .limit = 10000,
				    .since_ms = since,
				    .until_ms = until };
	struct engy_request_row *rows;
	size_t n, i;
	int rc;

	for (;;) {
		rc = a->st->log_query(a->sti, &q, &rows, &n);
		if (rc)
			return rc;
		for (i = 0; !rc && i < n; i++)
			rc = add_log_row(e, &rows[i]);
		if (n)
			q.after_id = rows[n - 1].id;
		free(rows);
		if (rc || !n)
			return rc;
	}
}

static int read_verdicts(struct eclose *e, int64_t since, int64_t until)
{
	struct aud *a = e->a;
	struct engy_verdict_query q = { .size = sizeof(q),
					.limit = 10000,
					.since_ms = since,
					.until_ms = until };
	struct engy_verdict *v;
	struct erow *r;
	size_t n, i;
	int rc;

	for (;;) {
		rc = a->st->verdict_list(a->sti, &q, &v, &n);
		if (rc)
			return rc;
		for (i = 0; i < n; i++) {
			r = v[i].miner[0] ? row_of(e, v[i].miner, v[i].model)
					  : NULL;
			if (!r)
				continue;
			if (v[i].verdict == ENGY_VERDICT_PASS)
				r->r.v_pass++;
			else if (v[i].verdict == ENGY_VERDICT_CHEAT)
				r->r.v_cheat++;
			else
				r->r.v_unproven++;
		}
		if (n)
			q.after_id = v[n - 1].id;
		free(v);
		if (!n)
			return 0;
	}
}

static int settle_sign(struct eclose *e)
{
	struct aud *a = e->a;
	struct engy_epoch_model *em = NULL;
	struct engy_epoch_row *er = NULL;
	struct engy_epoch_input in = { .size = sizeof(in) };
	struct engy_epoch_result res = { 0 };
	uint8_t sig[ENGY_SR25519_SIG_BYTES];
	size_t i, n_em = 0;
	int rc = -ENOMEM;

	em = calloc(e->n_models + 1, sizeof(*em));
	er = calloc(e->n_rows + 1, sizeof(*er));
	if (!em || !er)
		goto out;
	/* Only the models a row names: the aggregates stay small. */
	for (i = 0; i < e->n_models; i++) {
		size_t k;

		for (k = 0; k < e->n_rows; k++)
			if (!strcmp(e->rows[k].model, e->models[i].name))
				break;
		if (k == e->n_rows)
			continue;
		em[n_em].model = e->models[i].name;
		em[n_em].score_rate = (uint64_t)e->models[i].score_rate;
		em[n_em].qual_ttft_p99_ms = e->models[i].qual_ttft_p99_ms;
		em[n_em++].qual_tpot_p99_ms = e->models[i].qual_tpot_p99_ms;
	}
	for (i = 0; i < e->n_rows; i++) {
		struct erow *r = &e->rows[i];

		rc = histogram(&r->ttft, &r->bt, &r->r.n_ttft);
		if (!rc)
			rc = histogram(&r->tpot, &r->bp, &r->r.n_tpot);
		if (rc)
			goto out;
		r->r.hotkey = r->hotkey;
		r->r.model = r->model;
		r->r.uid = r->uid;
		r->r.ttft = r->bt;
		r->r.tpot = r->bp;
		er[i] = r->r;
	}
	in.netuid = (uint16_t)a->c->netuid;
	in.epoch_index = (uint64_t)e->index;
	in.owner_hotkey = a->owner;
	in.models = em;
	in.n_models = n_em;
	in.rows = er;
	in.n_rows = e->n_rows;
	rc = a->sc->settle(a->sci, &in, &res);
	if (rc) {
		snprintf(e->why, sizeof(e->why), "settle: %s", res.error);
		goto out;
	}
	rc = a->sc->aggregates(a->sci, &in, &e->aggregates, e->why,
			       sizeof(e->why));
	if (rc)
		goto out;
	rc = engy_epoch_sign(&a->hk.kp, in.netuid, in.epoch_index,
			     res.result_json, res.result_len, NULL, sig);
	if (!rc)
		rc = engy_epoch_payload(&e->payload, in.netuid, in.epoch_index,
					res.result_json, res.result_len, sig,
					a->hk.ss58);
	if (rc) {
		snprintf(e->why, sizeof(e->why), "signing failed");
		goto out;
	}
	e->rec.epoch_index = e->index;
	e->rec.burn = res.burn;
	e->rec.n_weights = (uint32_t)res.n_weights;
	engy_epoch_digest(res.result_json, res.result_len, e->rec.digest);
	rc = a->st->epoch_put(a->sti, &e->rec, e->payload, e->aggregates);
	if (rc == -EEXIST) /* another auditor on this store closed it */
		rc = -EALREADY;
	else if (rc)
		snprintf(e->why, sizeof(e->why), "epoch_put: %s",
			 strerror(-rc));
out:
	engy_epoch_result_release(&res);
	free(em);
	free(er);
	return rc;
}

static void close_fn(void *arg)
{
	struct eclose *e = arg;
	struct aud *a = e->a;
	struct engy_epoch_rec have;
	int64_t s = a->c->epoch_s * 1000;

	e->rec.start_ms = e->index * s;
	e->rec.end_ms = (e->index + 1) * s;
	e->rc = a->st->epoch_get(a->sti, e->index, 0, &have, NULL, NULL);
	if (e->rc == 0) {
		e->rc = -EALREADY;
		return;
	}
	if (a->st->holds_open) {
		e->rc = a->st->holds_open(a->sti,
					  e->rec.end_ms + CLOSE_GRACE_MS,
					  aud_now_ms(), &e->open_holds);
		if (!e->rc && e->open_holds)
			e->rc = -EAGAIN;
		if (e->rc) {
			if (e->rc != -EAGAIN)
				snprintf(e->why, sizeof(e->why),
					 "holds_open: %s", strerror(-e->rc));
			return;
		}
	}
	e->rc = a->st->model_list(a->sti, &e->models, &e->n_models);
	if (!e->rc)
		e->rc = a->st->miner_list(a->sti, &e->miners, &e->n_miners);
	if (!e->rc)
		e->rc = read_log(e, e->rec.start_ms, e->rec.end_ms);
	if (!e->rc)
		e->rc = read_verdicts(e, e->rec.start_ms, e->rec.end_ms);
	if (e->rc && !e->why[0])
		snprintf(e->why, sizeof(e->why), "store: %s", strerror(-e->rc));
	if (!e->rc)
		e->rc = settle_sign(e);
}

static void eclose_free(struct eclose *e)
{
	size_t i;

	for (i = 0; i < e->n_rows; i++) {
		free(e->rows[i].ttft.v);
		free(e->rows[i].tpot.v);
		free(e->rows[i].bt);
		free(e->rows[i].bp);
	}
	free(e->rows);
	free(e->models);
	free(e->miners);
	free(e->payload);
	free(e->aggregates);
	free(e);
}

static void close_done(void *arg, int prc)
{
	struct eclose *e = arg;
	struct aud *a = e->a;

	a->inflight--;
	a->closing = false;
	if (prc < 0) {
		eclose_free(e);
		return;
	}
	if (e->rc == -EAGAIN) {
		/* Logged when the count changes, not every tick. */
		if (e->open_holds != a->wait_holds)
			aud_log(a, ENGY_LOG_INFO,
				"event=epoch_waiting epoch=%lld open_holds=%llu reason=\"requests that started in it are still running\"",
				(long long)e->index,
				(unsigned long long)e->open_holds);
		a->wait_holds = e->open_holds;
		eclose_free(e);
		return;
	}
	a->wait_holds = 0;
	if (e->rc == 0) {
		aud_log(a, ENGY_LOG_NOTICE,
			"event=epoch_closed epoch=%lld rows=%zu weights=%u burn=%s digest=%s",
			(long long)e->index, e->n_rows, e->rec.n_weights,
			e->rec.burn ? "true" : "false", e->rec.digest);
		a->next_close = e->index + 1;
	} else if (e->rc == -EALREADY) {
		aud_log(a, ENGY_LOG_INFO,
			"event=epoch_already_closed epoch=%lld source=store",
			(long long)e->index);
		a->next_close = e->index + 1;
	} else {
		aud_log(a, ENGY_LOG_ERR,
			"event=epoch_failed epoch=%lld error=\"%s\" retry=next_tick",
			(long long)e->index,
			e->why[0] ? e->why : strerror(-e->rc));
	}
	eclose_free(e);
}

void aud_epoch_tick(struct aud *a)
{
	struct eclose *e;
	int64_t due =
		(a->next_close + 1) * a->c->epoch_s * 1000 + CLOSE_GRACE_MS;

	if (a->closing || a->stopping || !a->have_key || aud_now_ms() < due)
		return;
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->a = a;
	e->index = a->next_close;
	a->closing = true;
	a->inflight++;
	if (a->h->work(a->h, close_fn, close_done, e) < 0) {
		a->inflight--;
		a->closing = false;
		free(e);
	}
}
