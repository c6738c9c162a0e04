/* SPDX-License-Identifier: MIT */
/*
 * The store, from the gateway: every op blocks, so each runs in a job on
 * the worker pool (host->work) and only the job
 * touches its request; the loop thread keeps short-lived caches of the
 * hot reads (API key -> key and account, model -> spec and price card)
 * and of refused miner keys.
 *
 * A buyer request makes two trips:
 *   CHECK   (pool) the key (unless cached), the body parsed, the chat
 *           template rendered for the prompt count (exact with the
 *           model's tokenizer, else one token per byte: a byte-level BPE
 *           never makes more tokens than bytes), the affinity hash;
 *   (loop)  401, 404 for an unknown API route's model, 429 per key
 *           (gw_store_key_hold()), 503 when no worker serves the model;
 *   RESERVE (pool) the model (unless cached), its limits applied,
 *           reserve() sized from the prompt bound and max_tokens on the
 *           price card: 402 when the balance cannot cover it;
 * then it is routed.  At the end SETTLE (pool) charges what
 * was produced (never above the reservation) and appends the metadata
 * row in the same transaction; a refusal after the key is known gets a
 * row of its own.  Nothing of a prompt or completion reaches the store.
 *
 * Each trip ends in the caller's continuation on the loop thread (the
 * request driver, gateway_req.c, decides what follows): a refusal is left
 * in r->job_status and r->err, never answered here.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing.h"
#include "chat_template.h"
#include "gateway_int.h"
#include "miner_ckpt.h"
#include "minerproto.h"
#include "tokenizer.h"

const struct gw_tok *gw_store_tok(const struct gw *g, const char *model)
{
	size_t i;

	for (i = 0; i < g->n_toks; i++)
		if (strcmp(g->toks[i].model, model) == 0)
			return &g->toks[i];
	return NULL;
}

/* ---- caches (loop thread) ---------------------------------------- */

static struct gw_key_entry *key_find(struct gw *g,
				     const uint8_t hash[GW_HASH_BYTES])
{
	struct gw_key_entry *e;

	for (e = g->keys[hash[0]]; e; e = e->next)
		if (memcmp(e->hash, hash, GW_HASH_BYTES) == 0)
			return e;
	return NULL;
}

static struct gw_key_entry *key_put(struct gw *g,
				    const uint8_t hash[GW_HASH_BYTES],
				    const struct engy_api_key *k)
{
	struct gw_key_entry *e = key_find(g, hash);

	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return NULL;
		memcpy(e->hash, hash, GW_HASH_BYTES);
		e->next = g->keys[hash[0]];
		g->keys[hash[0]] = e;
	}
	e->key_id = k->id;
	e->account_id = k->account_id;
	e->status = k->status;
	clock_gettime(CLOCK_MONOTONIC, &e->fetched);
	return e;
}

static struct gw_model_entry *model_find(struct gw *g, const char *name)
{
	struct gw_model_entry *e;

	for (e = g->models; e; e = e->next)
		if (strcmp(e->m.name, name) == 0)
			return e;
	return NULL;
}

static void model_put(struct gw *g, const char *name,
		      const struct engy_model *m, bool found)
{
	struct gw_model_entry *e = model_find(g, name);

	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return;
		e->next = g->models;
		g->models = e;
	}
	if (found)
		e->m = *m;
	else
		memset(&e->m, 0, sizeof(e->m));
	snprintf(e->m.name, sizeof(e->m.name), "%s", name);
	e->found = found;
	clock_gettime(CLOCK_MONOTONIC, &e->fetched);
}

/* Drop entries well past their time (the release timer calls it). */
static void caches_trim(struct gw *g)
{
	struct gw_key_entry **pk, *k;
	struct gw_miner_entry **pm, *m;
	size_t i;

	for (i = 0; i < 256; i++) {
		for (pk = &g->keys[i]; (k = *pk);) {
			if (!k->inflight &&
			    !gw_fresh(&k->fetched,
				      6 * g->c->key_cache_s + 60)) {
				*pk = k->next;
				free(k);
			} else {
				pk = &k->next;
			}
		}
	}
	for (pm = &g->denied; (m = *pm);) {
		if (!gw_fresh(&m->fetched, g->c->miner_cache_s)) {
			*pm = m->next;
			free(m);
		} else {
			pm = &m->next;
		}
	}
}

int gw_store_key_hold(struct gw_req *r)
{
	struct gw *g = r->g;
	struct gw_key_entry *e = key_find(g, r->key_hash);

	if (g->c->key_max_inflight && e &&
	    e->inflight >= (unsigned)g->c->key_max_inflight)
		return -EBUSY;
	if (e) {
		e->inflight++;
		r->key_counted = true;
	}
	return 0;
}

void gw_store_key_release(struct gw_req *r)
{
	struct gw_key_entry *e;

	if (!r->key_counted)
		return;
	r->key_counted = false;
	e = key_find(r->g, r->key_hash);
	if (e && e->inflight)
		e->inflight--;
}

/* ---- CHECK ---------------------------------------------------------- */

static void count_prompt(struct gw_req *r)
{
	const struct gw_tok *t = r->tok;
	struct engy_chat_opts o = { .enable_thinking = -1 };
	uint32_t *ids = NULL;
	size_t len = 0, n = 0;
	char *prompt = NULL;
	int rc;

	o.variant = t ? t->variant : r->g->variant;
	rc = engy_chat_render(r->areq.body, &o, &prompt, &len, NULL, r->err,
			      sizeof(r->err));
	if (rc < 0) {
		r->job_status = rc == -ENOMEM ? 500 : 400;
		return;
	}
	r->affinity = gw_route_affinity(r->g, prompt, len, &r->has_affinity);
	r->prompt_bound = len;
	r->prompt_est = (len + (uint64_t)r->g->c->cancel_bytes_per_token - 1) /
			(uint64_t)r->g->c->cancel_bytes_per_token;
	if (t && engy_tokenizer_encode(t->tok, prompt, len, &ids, &n) == 0) {
		r->prompt_bound = r->prompt_est = n;
		r->prompt_exact = true;
	}
	free(ids);
	free(prompt);
}

static void check_fn(void *arg)
{
	struct gw_req *r = arg;
	struct gw *g = r->g;
	struct engy_api_limits lim = {
		.max_body_bytes = (size_t)g->c->max_body_bytes,
		.max_messages = (size_t)g->c->max_messages,
		.max_tools = (size_t)g->c->max_tools,
	};
	int rc;

	if (!r->key_cached) {
		rc = g->st->key_lookup(g->sti, r->key_hash, &r->key_rec);
		if (rc == -ENOENT) {
			memset(&r->key_rec, 0, sizeof(r->key_rec));
		} else if (rc < 0) {
			r->job_status = 503;
			snprintf(r->err, sizeof(r->err),
				 "the key store is unavailable");
			return;
		}
	}
	if (!r->key_rec.id || r->key_rec.status != ENGY_KEY_ACTIVE) {
		r->job_status = 401;
		snprintf(r->err, sizeof(r->err), "%s",
			 r->key_rec.id ? "this API key has been revoked"
				       : "invalid API key");
		return;
	}
	if (r->route == ENGY_ROUTE_RESPONSES)
		rc = engy_resp_parse((const char *)r->body, r->body_len, &lim,
				     &r->areq, r->err, sizeof(r->err));
	else if (r->route == ENGY_ROUTE_COMPLETIONS)
		rc = engy_cmpl_parse((const char *)r->body, r->body_len, &lim,
				     &r->areq, r->err, sizeof(r->err));
	else if (r->api == ENGY_API_OPENAI)
		rc = engy_oai_parse((const char *)r->body, r->body_len, &lim,
				    &r->areq, r->err, sizeof(r->err));
	else
		rc = engy_anth_parse((const char *)r->body, r->body_len, &lim,
				     r->count_only ? ENGY_ANTH_COUNT_TOKENS : 0,
				     &r->areq, r->err, sizeof(r->err));
	free(r->body);
	r->body = NULL;
	if (rc < 0) {
		r->job_status = engy_api_status(rc);
		return;
	}
	r->tok = gw_store_tok(g, r->areq.model);
	count_prompt(r);
}

static void check_done(void *arg, int rc)
{
	struct gw_req *r = arg;
	struct gw *g = r->g;

	/* Unknown keys are not cached: a flood of made-up keys would grow
	 * the table; each costs one indexed read on the pool instead. */
	if (!r->key_cached && r->job_status != 503 && r->key_rec.id)
		key_put(g, r->key_hash, &r->key_rec);
	if (r->key_rec.id) {
		r->key_id = r->key_rec.id;
		r->account_id = r->key_rec.account_id;
	}
	if (rc < 0 && !r->job_status) {
		r->job_status = 503;
		snprintf(r->err, sizeof(r->err),
			 "the gateway is shutting down");
	}
	r->job_done(r);
}

void gw_store_check(struct gw_req *r, void (*done)(struct gw_req *r))
{
	struct gw *g = r->g;
	struct gw_key_entry *e = key_find(g, r->key_hash);

	if (e && gw_fresh(&e->fetched, g->c->key_cache_s)) {
		r->key_cached = true;
		r->key_rec.id = e->key_id;
		r->key_rec.account_id = e->account_id;
		r->key_rec.status = e->status;
	}
	r->state = GW_R_CHECK;
	r->job_done = done;
	if (gw_store_work(g, check_fn, check_done, r) < 0)
		check_done(r, -ECANCELED);
}

/* ---- RESERVE ------------------------------------------------------ */

/* The model's limits on @r (pure: the loop or the pool), before anything
 * about workers: a request over them is a 400 whether or not a worker
 * serves the model.  Non-zero: refused (r->job_status, r->err). */
static int limits(struct gw *g, struct gw_req *r)
{
	struct engy_api_model am = { 0 };
	int rc;

	am.max_output_tokens = r->spec.max_output_tokens;
	am.default_max_tokens =
		(uint64_t)g->c->default_max_tokens < r->spec.max_output_tokens
			? (uint64_t)g->c->default_max_tokens
			: r->spec.max_output_tokens;
	rc = engy_api_req_apply(&r->areq, &am, r->err, sizeof(r->err));
	if (rc < 0) {
		r->job_status = engy_api_status(rc);
		return rc;
	}
	if (!r->internal && r->prompt_bound > r->spec.max_input_tokens) {
		r->job_status = 400;
		snprintf(r->err, sizeof(r->err),
			 "messages: the prompt is %llu "
			 "%s, over the model's max_input_tokens %u",
			 (unsigned long long)r->prompt_bound,
			 r->prompt_exact ? "tokens"
					 : "bytes (counted as tokens)",
			 r->spec.max_input_tokens);
		return -EINVAL;
	}
	return 0;
}

static void reserve_fn(void *arg)
{
	struct gw_req *r = arg;
	struct gw *g = r->g;
	int64_t amount = 0, expires;
	int rc;

	if (!r->model_cached) {
		rc = g->st->model_get(g->sti, r->areq.model, &r->spec);
		r->job_rc = rc;
		if (rc < 0) {
			r->job_status = rc == -ENOENT ? 404 : 503;
			snprintf(r->err, sizeof(r->err), "%s",
				 rc == -ENOENT ? "model: no such model"
					       : "the store is unavailable");
			return;
		}
	}
	if (r->spec.status != ENGY_MODEL_ENABLED) {
		r->job_status = 404;
		snprintf(r->err, sizeof(r->err), "model: no such model");
		return;
	}
	/* From the cache, the loop applied them already. */
	if (!r->model_cached && limits(g, r))
		return;
	if (r->internal)
		return; /* probes and bench: no money moves */
	if (r->no_worker) {
		r->job_status = 503;
		snprintf(r->err, sizeof(r->err),
			 "no worker is serving this "
			 "model right now; retry shortly");
		return;
	}
	rc = engy_billing_reserve(&r->spec.price, r->prompt_bound,
				  r->areq.max_tokens, &amount);
	if (rc < 0) {
		r->job_status = 400;
		snprintf(r->err, sizeof(r->err),
			 "the request is too large to price");
		return;
	}
	if (amount == 0)
		return; /* a free model holds nothing */
	expires = gw_now_ms() +
		  (int64_t)((r->spec.max_request_s + g->c->reserve_margin_s) *
			    1000);
	rc = g->st->reserve(g->sti, r->account_id, r->key_id, amount, expires,
			    &r->reservation_id);
	if (rc == -EDQUOT) {
		r->job_status = 402;
		snprintf(r->err, sizeof(r->err),
			 "insufficient credits: this "
			 "request may cost up to $%lld.%06lld; top up the "
			 "account",
			 (long long)(amount / 1000000),
			 (long long)(amount % 1000000));
	} else if (rc < 0) {
		r->job_status = 503;
		snprintf(r->err, sizeof(r->err),
			 "the account store is unavailable");
	} else {
		r->reserved_micro = amount;
	}
}

static void reserve_done(void *arg, int rc)
{
	struct gw_req *r = arg;
	struct gw *g = r->g;

	/* Only models the store knows are cached (bounded by the catalog):
	 * an unknown name costs a store read each time, like an unknown
	 * API key, and is not kept, not even in the request log. */
	if (!r->model_cached && r->job_rc == 0)
		model_put(g, r->areq.model, &r->spec, true);
	if (r->job_rc == -ENOENT)
		r->spec.name[0] = '\0';
	if (rc < 0 && !r->job_status) {
		r->job_status = 503;
		snprintf(r->err, sizeof(r->err),
			 "the gateway is shutting down");
	}
	r->job_done(r);
}

void gw_store_reserve(struct gw_req *r, void (*done)(struct gw_req *r))
{
	struct gw *g = r->g;
	struct gw_model_entry *m = model_find(g, r->areq.model);

	r->job_done = done;
	if (strlen(r->areq.model) >= sizeof(r->spec.name)) {
		/* Longer than any model id: unknown, without the store. */
		r->spec.name[0] = '\0';
		r->job_status = 404;
		snprintf(r->err, sizeof(r->err), "model: no such model");
		done(r);
		return;
	}
	if (m && gw_fresh(&m->fetched, g->c->model_cache_s)) {
		/* Refused from the cache, without a trip to the pool. */
		if (!m->found || m->m.status != ENGY_MODEL_ENABLED) {
			r->job_status = 404;
			snprintf(r->err, sizeof(r->err),
				 "model: no such model");
			done(r);
			return;
		}
		r->model_cached = true;
		r->spec = m->m;
		if (limits(g, r)) {
			done(r);
			return;
		}
		if (r->no_worker) {
			r->job_status = 503;
			snprintf(r->err, sizeof(r->err),
				 "no worker is serving this model "
				 "right now; retry shortly");
			done(r);
			return;
		}
	}
	r->state = GW_R_RESERVE;
	if (gw_store_work(g, reserve_fn, reserve_done, r) < 0)
		reserve_done(r, -ECANCELED);
}

/* ---- SETTLE ------------------------------------------------------- */

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
	snprintf(row->request_id, sizeof(row->request_id), "%s", r->request_id);
	snprintf(row->model, sizeof(row->model), "%s", r->spec.name);
	snprintf(row->miner, sizeof(row->miner), "%.63s", r->miner);
	snprintf(row->worker_name, sizeof(row->worker_name), "%.63s",
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

/* A row of its own, before the request's, for each attempt a worker
 * failed (502/504) before another was tried: the same request id, that
 * worker, no tokens, cost 0 (specs/scoring.md §2: every attempt counts). */
static void log_failed_attempts(struct gw_req *r,
				const struct engy_request_row *req_row)
{
	struct engy_request_row rows[GW_MAX_ATTEMPTS];
	unsigned i;

	for (i = 0; i < r->n_failed_attempts; i++) {
		memset(&rows[i], 0, sizeof(rows[i]));
		rows[i].time_ms = req_row->time_ms;
		rows[i].key_id = req_row->key_id;
		rows[i].account_id = req_row->account_id;
		rows[i].status = (uint32_t)r->failed_attempts[i].status;
		memcpy(rows[i].request_id, req_row->request_id,
		       sizeof(rows[i].request_id));
		memcpy(rows[i].model, req_row->model, sizeof(rows[i].model));
		snprintf(rows[i].miner, sizeof(rows[i].miner), "%s",
			 r->failed_attempts[i].miner);
		snprintf(rows[i].worker_name, sizeof(rows[i].worker_name), "%s",
			 r->failed_attempts[i].worker_name);
	}
	r->attempt_rows_rc =
		r->g->st->log_append(r->g->sti, rows, r->n_failed_attempts);
}

static void settle_fn(void *arg)
{
	struct gw_req *r = arg;
	struct gw *g = r->g;
	struct engy_request_row row;
	int64_t cost = 0, charged = 0;
	int rc = 0;

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
	fill_row(r, &row);
	if (r->n_failed_attempts && r->key_id && !r->is_probe && !r->poison)
		log_failed_attempts(r, &row);
	if (r->reservation_id) {
		rc = g->st->settle(g->sti, r->reservation_id, cost, &row,
				   &charged);
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

void gw_store_settle(struct gw_req *r, void (*done)(struct gw_req *r))
{
	r->state = GW_R_SETTLE;
	r->job_done = done;
	/* Rows are requests that went for a model: not /v1/models nor
	 * count_tokens, not what failed before the key was known. */
	if (!r->reservation_id && !r->is_probe &&
	    (!r->key_id || r->count_only || !r->spec.name[0])) {
		GW_LOG(r->g, ENGY_LOG_INFO,
		       "event=request_settled "
		       "request=%s status=%d row=none",
		       r->request_id, r->status);
		done(r);
		return;
	}
	if (gw_store_work(r->g, settle_fn, settle_done, r) < 0) {
		settle_fn(r); /* the pool is closing: settle here */
		settle_done(r, 0);
	}
}

/* ---- life --------------------------------------------------------- */

static void release_fn(void *arg)
{
	struct gw *g = arg;
	uint64_t n = 0;
	int64_t micro = 0;

	if (g->st->release_expired(g->sti, gw_now_ms(), &n, &micro) == 0 && n)
		GW_LOG(g, ENGY_LOG_NOTICE,
		       "event=reservations_released n=%llu micro=%lld",
		       (unsigned long long)n, (long long)micro);
}

static void release_done(void *arg, int rc)
{
}

void gw_store_release_expired(struct gw *g)
{
	caches_trim(g);
	gw_store_work(g, release_fn, release_done, g);
}

static int load_tok(struct gw *g, const char *spec)
{
	const char *eq = strchr(spec, '=');
	struct gw_tok *t;
	char err[256];
	int rc;

	if (!eq || eq == spec || !eq[1] ||
	    (size_t)(eq - spec) >= sizeof(t->model) ||
	    strlen(eq + 1) >= sizeof(t->dir)) {
		GW_LOG(g, ENGY_LOG_ERR,
		       "event=config_invalid "
		       "option=tokenizers reason=\"want MODEL=DIR\"");
		return -EINVAL;
	}
	if (g->n_toks == GW_MAX_TOKENIZERS)
		return -ENOSPC;
	t = &g->toks[g->n_toks];
	snprintf(t->model, sizeof(t->model), "%.*s", (int)(eq - spec), spec);
	snprintf(t->dir, sizeof(t->dir), "%s", eq + 1);
	rc = engy_tokenizer_load(t->dir, &t->tok, err, sizeof(err));
	if (rc < 0) {
		GW_LOG(g, ENGY_LOG_ERR,
		       "event=tokenizer_failed model=%s "
		       "error=\"%s\"",
		       t->model, err);
		return rc;
	}
	t->variant = engy_ckpt_chat_variant(t->dir);
	if (t->variant < 0)
		t->variant = g->variant;
	g->n_toks++;
	GW_LOG(g, ENGY_LOG_INFO, "event=tokenizer_loaded model=%s vocab=%zu",
	       t->model, engy_tokenizer_vocab_size(t->tok));
	return 0;
}

int gw_store_init(struct gw *g)
{
	size_t i;
	int rc;

	if (!g->st->key_lookup || !g->st->reserve || !g->st->settle ||
	    !g->st->miner_lookup || !g->st->model_get || !g->st->log_append) {
		GW_LOG(g, ENGY_LOG_ERR,
		       "event=gateway_unwired "
		       "reason=\"the store lacks the gateway's ops\"");
		return -EINVAL;
	}
	for (i = 0; i < g->c->tokenizers.n; i++) {
		rc = load_tok(g, g->c->tokenizers.v[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

void gw_store_free(struct gw *g)
{
	struct gw_model_entry *m;
	struct gw_miner_entry *d;
	struct gw_key_entry *k;
	size_t i;

	for (i = 0; i < 256; i++)
		while ((k = g->keys[i])) {
			g->keys[i] = k->next;
			free(k);
		}
	while ((m = g->models)) {
		g->models = m->next;
		free(m);
	}
	while ((d = g->denied)) {
		g->denied = d->next;
		free(d);
	}
	for (i = 0; i < g->n_toks; i++)
		engy_tokenizer_free(g->toks[i].tok);
}
