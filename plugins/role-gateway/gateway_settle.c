/* SPDX-License-Identifier: MIT */
/*
 * SETTLE (specs/gateway.md, "Money"): when a request ends, the charge for
 * what it produced (never above its hold) and its request-log row, in
 * one store transaction; a refusal after the key was known gets a row of
 * its own, and so does each attempt a worker failed before another was
 * tried.
 *
 * Group commit: with a store that has settle_batch(), one batch is on the
 * pool at a time and every request that ends meanwhile waits for the
 * next, and while other requests are open the next waits up to
 * settle_window_ms for them (settle_wait), so a loaded gateway pays one
 * transaction (one WAL commit, one fsync at most) for tens of requests
 * and one with nothing else open settles each at once.  A request stays
 * alive (and its event=request_settled line waits) until its batch has
 * committed; a crash loses at most the settlements in the window, the
 * batch in flight and the ones queued behind it (their buyers are not
 * charged; their holds lapse at expiry), never a committed row.  A
 * transaction that fails settles its batch one request at a time, so
 * one bad row costs only itself.  Without settle_batch() each request
 * settles in a transaction of its own.
 *
 * Leases (lease_micro > 0, a store with settle_batch()): one store
 * reservation of an API key, of at least lease_micro, backs the holds of
 * many of its requests, taken in memory on the loop without a store
 * trip; each request's charge lowers the lease in its batch (keep = 1)
 * and its hold counts against the lease until that batch commits, so
 * the holds in memory never exceed what the store holds.  A lease takes
 * new holds for lease_s and only while it outlives the request
 * (max_request_s + reserve_margin_s), then closes (the rest back to the
 * balance) once its holds have settled; at stop every idle lease closes
 * before the gateway exits.  A crash leaves the leases to lapse at their
 * expiry (release_expired), like any hold of a gateway that died.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "billing.h"
#include "gateway_int.h"
#include "strcopy.h"
#include "tokenizer.h"

/* Requests in one transaction at most (each brings up to
 * 1 + GW_MAX_ATTEMPTS rows): bounds a batch's time and memory. */
#define SETTLE_BATCH_MAX 256

static void fill_row(const struct gw_req *r, struct engy_request_row *row)
{
	memset(row, 0, sizeof(*row));
	row->time_ms = r->t0_ms;
	row->key_id = r->key_id;
	row->account_id = r->account_id;
	row->status = (uint32_t)r->status;
	row->prompt_tokens = r->prompt_tokens;
	row->completion_tokens = r->completion_tokens;
	row->cached_tokens = r->cached_tokens;
	row->ttft_ms = r->out_come.ttft_ms;
	row->tpot_ms = r->out_come.tpot_ms;
	row->cost_micro = r->cost_micro;
	row->is_probe = r->is_probe;
	engy_strcopy(row->request_id, sizeof(row->request_id), r->request_id);
	engy_strcopy(row->model, sizeof(row->model), r->spec.name);
	engy_strcopy(row->miner, sizeof(row->miner), r->miner);
	engy_strcopy(row->worker_name, sizeof(row->worker_name),
		     r->worker_name);
}

/* A stream the buyer left pays for what reached it (counted here, on
 * the pool, with the model's tokenizer when there is one). */
static void count_relayed(struct gw_req *r)
{
	uint64_t n;
	uint32_t *ids = NULL;
	size_t k = 0;

	if (r->tok && r->relayed &&
	    engy_tokenizer_encode(r->tok->tok, r->relayed, r->relayed_bytes,
				  &ids, &k) == 0)
		n = k;
	else
		n = (r->relayed_bytes +
		     (uint64_t)r->g->c->cancel_bytes_per_token - 1) /
		    (uint64_t)r->g->c->cancel_bytes_per_token;
	free(ids);
	if (n > r->areq.max_tokens)
		n = r->areq.max_tokens;
	r->completion_tokens = (uint32_t)(n > UINT32_MAX ? UINT32_MAX : n);
	r->prompt_tokens =
		n ? (uint32_t)(r->prompt_est > UINT32_MAX ? UINT32_MAX
							  : r->prompt_est)
		  : 0;
	r->cached_tokens = 0;
}

/* The failed attempts' rows (scoring counts every attempt, specs/
 * scoring.md §2): the same request id, that worker, no tokens, cost 0.
 * Returns how many were written to @rows. */
static unsigned attempt_rows(const struct gw_req *r,
			     const struct engy_request_row *req_row,
			     struct engy_request_row *rows)
{
	unsigned i;

	if (!r->n_failed_attempts || !r->key_id || r->is_probe || r->poison)
		return 0;
	for (i = 0; i < r->n_failed_attempts; i++) {
		memset(&rows[i], 0, sizeof(rows[i]));
		rows[i].time_ms = req_row->time_ms;
		rows[i].key_id = req_row->key_id;
		rows[i].account_id = req_row->account_id;
		rows[i].status = (uint32_t)r->failed_attempts[i].status;
		memcpy(rows[i].request_id, req_row->request_id,
		       sizeof(rows[i].request_id));
		memcpy(rows[i].model, req_row->model, sizeof(rows[i].model));
		engy_strcopy(rows[i].miner, sizeof(rows[i].miner),
			     r->failed_attempts[i].miner);
		engy_strcopy(rows[i].worker_name, sizeof(rows[i].worker_name),
			     r->failed_attempts[i].worker_name);
	}
	return r->n_failed_attempts;
}

/* What @r is charged (pool: it may count what reached the buyer with the
 * model's tokenizer), and its row. */
static void settle_prepare(struct gw_req *r, struct engy_request_row *row)
{
	int64_t cost = 0;

	/* The buyer left, or the gateway stopped (shutdown_timeout): what
	 * reached the buyer is paid for. */
	if ((r->status == 499 || r->aborted) && r->relayed_bytes)
		count_relayed(r);
	if ((r->status == 200 || r->status == 499 ||
	     (r->aborted && r->relayed_bytes)) &&
	    !r->is_probe &&
	    engy_billing_cost(&r->spec.price, r->prompt_tokens,
			      r->cached_tokens, r->completion_tokens,
			      &cost) < 0)
		cost = r->reserved_micro;
	if (cost > r->reserved_micro)
		cost = r->reserved_micro;
	r->cost_micro = cost;
	fill_row(r, row);
}

/* One request, one transaction (a store without settle_batch()). */
static void settle_fn(void *arg)
{
	struct gw_req *r = arg;
	struct gw *g = r->g;
	struct engy_request_row row, rows[GW_MAX_ATTEMPTS];
	unsigned n_att;
	int64_t charged = 0;
	int rc = 0;

	settle_prepare(r, &row);
	n_att = attempt_rows(r, &row, rows);
	if (n_att)
		r->attempt_rows_rc = g->st->log_append(g->sti, rows, n_att);
	if (r->lease) { /* a lease stays open */
		struct engy_settle it = { .reservation_id = r->reservation_id,
					  .cost_micro = r->cost_micro,
					  .row = &row,
					  .keep = 1 };

		rc = g->st->settle_batch(g->sti, &it, 1);
		if (!rc)
			rc = it.rc;
		r->cost_micro = rc ? 0 : it.charged;
	} else if (r->reservation_id) {
		rc = g->st->settle(g->sti, r->reservation_id, r->cost_micro,
				   &row, &charged);
		r->cost_micro = charged;
	} else if (r->key_id || r->is_probe) {
		row.cost_micro = 0;
		rc = g->st->log_append(g->sti, &row, 1);
	}
	r->job_rc = rc;
}

static void settle_done(void *arg, int rc)
{
	struct gw_req *r = arg;

	if (rc < 0 || r->job_rc < 0)
		GW_LOG(r->g, ENGY_LOG_ERR,
		       "event=settle_failed request=%s reservation=%lld "
		       "error=\"%s\" effect=\"the hold lapses at its expiry\"",
		       r->request_id, (long long)r->reservation_id,
		       strerror(rc < 0 ? -rc : -r->job_rc));
	if (r->attempt_rows_rc < 0)
		GW_LOG(r->g, ENGY_LOG_ERR,
		       "event=attempt_rows_failed request=%s rows=%u "
		       "error=\"%s\"",
		       r->request_id, r->n_failed_attempts,
		       strerror(-r->attempt_rows_rc));
	GW_LOG(r->g, ENGY_LOG_INFO,
	       "event=request_settled request=%s status=%d cost_micro=%lld "
	       "prompt_tokens=%u completion_tokens=%u cached_tokens=%u",
	       r->request_id, r->status, (long long)r->cost_micro,
	       r->prompt_tokens, r->completion_tokens, r->cached_tokens);
	r->job_done(r);
}

/* ---- leases --------------------------------------------------------- */

int gw_lease_hold(struct gw_req *r, int64_t amount)
{
	struct gw *g = r->g;
	int64_t now = gw_now_ms();
	int64_t until =
		now +
		(int64_t)((r->spec.max_request_s + g->c->reserve_margin_s) *
			  1000);
	struct gw_lease *l;

	for (l = g->leases[(uint64_t)r->key_id % GW_LEASE_BUCKETS]; l;
	     l = l->next)
		if (l->key_id == r->key_id && !l->dead && !l->closing &&
		    !g->stopping && now < l->retire_ms &&
		    until <= l->expires_ms && l->amount - l->held >= amount)
			break;
	if (!l)
		return -ENOENT;
	l->held += amount;
	l->n_holds++;
	r->lease = l;
	r->reservation_id = l->res_id;
	r->reserved_micro = amount;
	return 0;
}

bool gw_lease_room(struct gw *g, int64_t key_id)
{
	struct gw_lease *l;
	unsigned n = 0;

	for (l = g->leases[(uint64_t)key_id % GW_LEASE_BUCKETS]; l; l = l->next)
		n += l->key_id == key_id;
	return n < GW_KEY_LEASES;
}

void gw_lease_add(struct gw_req *r)
{
	struct gw *g = r->g;
	struct gw_lease *l;

	/* Over the key's leases (several were reserved at once), or out of
	 * memory: @r settles it whole, as a hold of its own. */
	if (!gw_lease_room(g, r->key_id) || !(l = calloc(1, sizeof(*l))))
		return;
	l->res_id = r->reservation_id;
	l->key_id = r->key_id;
	l->amount = r->lease_amount;
	l->held = r->reserved_micro;
	l->n_holds = 1;
	l->retire_ms = gw_now_ms() + (int64_t)(g->c->lease_s * 1000);
	l->expires_ms = r->lease_expires_ms;
	l->next = g->leases[(uint64_t)l->key_id % GW_LEASE_BUCKETS];
	g->leases[(uint64_t)l->key_id % GW_LEASE_BUCKETS] = l;
	g->n_leases++;
	r->lease = l;
	GW_LOG(g, ENGY_LOG_INFO,
	       "event=lease_open reservation=%lld key=%lld micro=%lld "
	       "expires_ms=%lld",
	       (long long)l->res_id, (long long)l->key_id, (long long)l->amount,
	       (long long)l->expires_ms);
}

static void settle_kick(struct gw *g);

static void lease_unlink(struct gw *g, struct gw_lease *l)
{
	struct gw_lease **p;

	for (p = &g->leases[(uint64_t)l->key_id % GW_LEASE_BUCKETS]; *p;
	     p = &(*p)->next)
		if (*p == l) {
			*p = l->next;
			g->n_leases--;
			free(l);
			return;
		}
}

/* @l holds nothing: gone when the store closed it, to close once
 * retired (or stopping), else kept for the key's next requests. */
static void lease_idle(struct gw *g, struct gw_lease *l, int64_t now)
{
	if (l->n_holds || l->closing)
		return;
	if (l->dead || l->amount <= 0) {
		lease_unlink(g, l);
		return;
	}
	if (now < l->retire_ms && !g->stopping)
		return;
	l->closing = true;
	l->close_next = g->lease_closeq;
	g->lease_closeq = l;
}

void gw_lease_close_idle(struct gw *g)
{
	struct gw_lease *l, *next;
	int64_t now = gw_now_ms();
	size_t b;

	for (b = 0; b < GW_LEASE_BUCKETS; b++)
		for (l = g->leases[b]; l; l = next) {
			next = l->next;
			lease_idle(g, l, now);
		}
	settle_kick(g);
}

void gw_lease_free_all(struct gw *g)
{
	struct gw_lease *l;
	size_t b;

	for (b = 0; b < GW_LEASE_BUCKETS; b++)
		while ((l = g->leases[b])) {
			g->leases[b] = l->next;
			free(l);
		}
	g->n_leases = 0;
	g->lease_closeq = NULL;
}

/* @r's batch is back: its hold leaves the lease, its charge too. */
static void lease_settled(struct gw_req *r)
{
	struct gw_lease *l = r->lease;

	r->lease = NULL;
	l->held -= r->reserved_micro;
	l->n_holds--;
	if (r->job_rc)
		l->dead = true;
	else
		l->amount -= r->cost_micro;
	lease_idle(r->g, l, gw_now_ms());
}

/* ---- group commit --------------------------------------------------- */

struct settle_batch {
	struct gw *g;
	struct gw_lease *closes; /* by close_next: leases to close */
	size_t n_closes;
	struct gw_req *reqs; /* by settle_next, in the order they ended */
	size_t n_reqs;
	struct engy_settle *items;
	struct engy_request_row *rows;
	size_t n_items;
	int rc; /* settle_batch()'s */
};

static void batch_fn(void *arg)
{
	struct settle_batch *b = arg;
	struct gw *g = b->g;
	struct gw_lease *l;
	struct gw_req *r;
	size_t k = 0, i;

	for (r = b->reqs; r; r = r->settle_next) {
		struct engy_request_row row;
		unsigned n_att;

		settle_prepare(r, &row);
		/* The attempts' rows first, then the request's. */
		n_att = attempt_rows(r, &row, &b->rows[k]);
		for (i = 0; i < n_att; i++)
			b->items[k + i] =
				(struct engy_settle){ .row = &b->rows[k + i] };
		b->rows[k + n_att] = row;
		r->settle_att = n_att;
		r->settle_item = k + n_att;
		b->items[k + n_att] = (struct engy_settle){
			.reservation_id = r->reservation_id,
			.cost_micro = r->reservation_id ? r->cost_micro : 0,
			.row = &b->rows[k + n_att],
			.keep = r->lease != NULL,
		};
		k += n_att + 1;
	}
	/* Then the leases that close: what is left goes back. */
	for (l = b->closes; l; l = l->close_next)
		b->items[k++] =
			(struct engy_settle){ .reservation_id = l->res_id };
	b->n_items = k;
	b->rc = g->st->settle_batch(g->sti, b->items, b->n_items);
	if (b->rc < 0) {
		/* Nothing was written: one request at a time, so whatever
		 * failed it fails alone. */
		for (i = 0; i < b->n_items; i++) {
			int rc1 = g->st->settle_batch(g->sti, &b->items[i], 1);

			if (rc1 < 0)
				b->items[i].rc = rc1;
		}
	}
	for (r = b->reqs; r; r = r->settle_next) {
		struct engy_settle *it = &b->items[r->settle_item];

		r->job_rc = it->rc;
		r->cost_micro = it->rc ? 0 : it->charged;
		for (i = 0; i < r->settle_att; i++)
			if (b->items[r->settle_item - r->settle_att + i].rc)
				r->attempt_rows_rc = b->items[r->settle_item -
							      r->settle_att + i]
							     .rc;
	}
}

static void batch_done(void *arg, int rc)
{
	struct settle_batch *b = arg;
	struct gw *g = b->g;
	struct gw_lease *l, *lnext;
	struct gw_req *r, *next;
	size_t k = b->n_items - b->n_closes;

	if (!g->m_batches)
		g->h->metric(g->h, ENGY_METRIC_COUNTER,
			     "engy_gw_settle_batches_total", "gateway events",
			     NULL, NULL, 0, &g->m_batches);
	gw_madd(g, g->m_batches, 1);
	for (l = b->closes; l; l = lnext, k++) {
		lnext = l->close_next;
		if (rc < 0 || b->items[k].rc)
			GW_LOG(g, ENGY_LOG_WARNING,
			       "event=lease_close_failed reservation=%lld "
			       "error=\"%s\" effect=\"it lapses at its "
			       "expiry\"",
			       (long long)l->res_id,
			       strerror(rc < 0 ? -rc : -b->items[k].rc));
		else
			GW_LOG(g, ENGY_LOG_INFO,
			       "event=lease_closed reservation=%lld "
			       "returned_micro=%lld",
			       (long long)l->res_id, (long long)l->amount);
		lease_unlink(g, l);
	}
	for (r = b->reqs; r; r = next) {
		next = r->settle_next;
		r->settle_next = NULL;
		if (rc < 0 && !r->job_rc)
			r->job_rc = rc;
		if (r->lease)
			lease_settled(r);
		settle_done(r, rc);
	}
	free(b->items);
	free(b->rows);
	free(b);
	g->settling = false;
	settle_kick(g);
}

static void on_settle_ev(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	settle_kick(arg);
}

/*
 * Whether the queue waits for more before it commits: while requests
 * other than the queued ones are open (they end soon, and each would
 * otherwise be a transaction of a few rows: on a disk, the WAL's
 * writes and checkpoints grow with the transactions, not with the
 * rows), up to settle_window_ms after its first one joined, below
 * SETTLE_BATCH_MAX, never at stop.  A gateway with nothing else open
 * settles at once, so a buyer's next request sees the charge.  false
 * where the timer cannot be set: it commits now.
 */
static bool settle_wait(struct gw *g)
{
	int64_t left;
	struct timeval tv;

	if (!g->c->settle_window_ms || g->stopping || !g->settle_q ||
	    g->n_settle_q >= SETTLE_BATCH_MAX || g->n_reqs <= g->n_settle_q)
		return false;
	if (g->settle_ev && evtimer_pending(g->settle_ev, NULL))
		return true; /* the window is open: no clock read */
	left = g->settle_q_ms + g->c->settle_window_ms - gw_now_ms();
	if (left <= 0)
		return false;
	if (left > g->c->settle_window_ms) /* the clock went back */
		left = g->c->settle_window_ms;
	if (!g->settle_ev)
		g->settle_ev = evtimer_new(g->h->evbase(g->h), on_settle_ev, g);
	if (!g->settle_ev)
		return false;
	tv.tv_sec = left / 1000;
	tv.tv_usec = (left % 1000) * 1000;
	return evtimer_add(g->settle_ev, &tv) == 0;
}

/* The next batch: what ended while the last one committed, or within
 * the window (settle_wait). */
static void settle_kick(struct gw *g)
{
	struct settle_batch *b;
	struct gw_lease *l;
	struct gw_req *r, **tail;
	size_t n_rows = 0;

	if (g->settling || (!g->settle_q && !g->lease_closeq) || settle_wait(g))
		return;
	b = calloc(1, sizeof(*b));
	if (!b)
		goto one_by_one;
	b->g = g;
	b->closes = g->lease_closeq;
	g->lease_closeq = NULL;
	for (l = b->closes; l; l = l->close_next)
		b->n_closes++;
	n_rows = b->n_closes;
	b->reqs = g->settle_q;
	tail = &b->reqs;
	for (r = g->settle_q; r && b->n_reqs < SETTLE_BATCH_MAX;
	     r = r->settle_next) {
		b->n_reqs++;
		n_rows += 1 + r->n_failed_attempts;
		tail = &r->settle_next;
	}
	g->settle_q = *tail;
	if (!g->settle_q)
		g->settle_q_tail = &g->settle_q;
	*tail = NULL;
	g->n_settle_q -= b->n_reqs;
	b->items = calloc(n_rows, sizeof(*b->items));
	b->rows = calloc(n_rows, sizeof(*b->rows));
	if (!b->items || !b->rows) {
		/* Out of memory: put them back, one by one below (the
		 * leases' closes wait for the next batch). */
		g->lease_closeq = b->closes;
		*tail = g->settle_q;
		g->settle_q = b->reqs;
		if (!*tail)
			g->settle_q_tail = tail;
		g->n_settle_q += b->n_reqs;
		free(b->items);
		free(b->rows);
		free(b);
		goto one_by_one;
	}
	g->settling = true;
	if (gw_store_work(g, batch_fn, batch_done, b) < 0) {
		batch_fn(b); /* the pool is closing: settle here */
		batch_done(b, 0);
	}
	return;
one_by_one:
	while ((r = g->settle_q)) {
		g->settle_q = r->settle_next;
		r->settle_next = NULL;
		g->n_settle_q--;
		settle_fn(r);
		if (r->lease)
			lease_settled(r);
		settle_done(r, 0);
	}
	g->settle_q_tail = &g->settle_q;
}

void gw_store_settle(struct gw_req *r, void (*done)(struct gw_req *r))
{
	struct gw *g = r->g;

	r->state = GW_R_SETTLE;
	r->job_done = done;
	/* Rows are requests that went for a model: not /v1/models nor
	 * count_tokens, not what failed before the key was known. */
	if (!r->reservation_id && !r->is_probe &&
	    (!r->key_id || r->count_only || !r->spec.name[0])) {
		GW_LOG(g, ENGY_LOG_INFO,
		       "event=request_settled "
		       "request=%s status=%d row=none",
		       r->request_id, r->status);
		done(r);
		return;
	}
	if (g->st->settle_batch) {
		if (!g->settle_q)
			g->settle_q_ms = gw_now_ms();
		r->settle_next = NULL;
		*g->settle_q_tail = r;
		g->settle_q_tail = &r->settle_next;
		g->n_settle_q++;
		settle_kick(g);
		return;
	}
	if (gw_store_work(g, settle_fn, settle_done, r) < 0) {
		settle_fn(r); /* the pool is closing: settle here */
		settle_done(r, 0);
	}
}
