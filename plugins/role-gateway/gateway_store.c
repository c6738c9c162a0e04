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

#include <sodium.h>

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

/* ---- the key's stored hash ------------------------------------------ */

/*
 * The store's key_hash() (HMAC-SHA-256 under its pepper) was a tenth of
 * a request's work on the loop.  SipHash-2-4 of the key text with 128
 * bits out (a PRF under a random key per process: nobody outside can
 * aim at an entry or find two texts that share one; the lookup went
 * from 2.6k to 0.8k instructions against a keyed BLAKE2b) finds the
 * stored hash of a key that was valid before in a direct-mapped table;
 * a miss, or a key never found in the store, takes the store's hash.  The mapping never goes
 * stale (the stored hash depends on the text and the pepper only); a
 * revocation is the key cache's business, as before.  Key texts are
 * never kept.
 */
_Static_assert(sizeof(((struct gw_req *)0)->key_fast) ==
			       crypto_shorthash_siphashx24_BYTES &&
		       sizeof(((struct gw *)0)->khash_key) ==
			       crypto_shorthash_siphashx24_KEYBYTES,
	       "the key table's hash is SipHash-2-4's 128-bit one");

int gw_store_key_hash(struct gw_req *r, const char *key, size_t len)
{
	struct gw *g = r->g;
	struct gw_khash *e;

	crypto_shorthash_siphashx24(r->key_fast, (const unsigned char *)key,
				    len, g->khash_key);
	e = &g->khash[(r->key_fast[0] | (unsigned)r->key_fast[1] << 8) %
		      GW_KHASH_SLOTS];
	if (e->used &&
	    sodium_memcmp(e->fast, r->key_fast, sizeof(e->fast)) == 0) {
		memcpy(r->key_hash, e->hash, sizeof(r->key_hash));
		return 0;
	}
	r->key_fast_miss = true;
	return g->st->key_hash(g->sti, key, len, r->key_hash);
}

/* A key the store knows: its texts' hash is found without the HMAC. */
static void key_hash_put(struct gw_req *r)
{
	struct gw *g = r->g;
	struct gw_khash *e =
		&g->khash[(r->key_fast[0] | (unsigned)r->key_fast[1] << 8) %
			  GW_KHASH_SLOTS];

	memcpy(e->fast, r->key_fast, sizeof(e->fast));
	memcpy(e->hash, r->key_hash, sizeof(e->hash));
	e->used = true;
	r->key_fast_miss = false;
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

/* The key's record and the body parsed: false when refused. */
static bool check_parse(struct gw_req *r)
{
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
			return false;
		}
	}
	if (!r->key_rec.id || r->key_rec.status != ENGY_KEY_ACTIVE) {
		r->job_status = 401;
		snprintf(r->err, sizeof(r->err), "%s",
			 r->key_rec.id ? "this API key has been revoked"
				       : "invalid API key");
		return false;
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
		return false;
	}
	r->tok = gw_store_tok(g, r->areq.model);
	return true;
}

static void check_fn(void *arg)
{
	struct gw_req *r = arg;

	if (check_parse(r))
		count_prompt(r);
}

static void count_fn(void *arg)
{
	count_prompt(arg);
}

static void check_done(void *arg, int rc)
{
	struct gw_req *r = arg;
	struct gw *g = r->g;

	/* Unknown keys are not cached: a flood of made-up keys would grow
	 * the table; each costs one indexed read on the pool instead. */
	if (!r->key_cached && r->job_status != 503 && r->key_rec.id)
		key_put(g, r->key_hash, &r->key_rec);
	if (r->key_fast_miss && r->key_rec.id)
		key_hash_put(r);
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
	/* A known key and a small body: parsed and counted here, on the
	 * loop (tens of microseconds), instead of two thread hand-offs;
	 * with the model's tokenizer only the parse. */
	if (r->key_cached && r->body_len <= (size_t)g->c->check_inline_bytes) {
		if (!check_parse(r)) {
			check_done(r, 0);
			return;
		}
		/* A model's tokenizer may take a few milliseconds on a
		 * hostile 4 KiB: that count stays off the loop. */
		if (!r->tok) {
			count_prompt(r);
			check_done(r, 0);
		} else if (gw_store_work(g, count_fn, check_done, r) < 0) {
			check_done(r, -ECANCELED);
		}
		return;
	}
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

/* A store hold's answer: 402 when the balance cannot cover @amount. */
static void hold_result(struct gw_req *r, int rc, int64_t amount)
{
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

static bool leasing(const struct gw *g, const struct gw_req *r);

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
	if (r->internal || leasing(g, r))
		return; /* no money moves; or the hold on the loop */
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
	hold_result(r, rc, amount);
}

/* Leases (gateway_settle.c): a key's hold from one of its leases in
 * memory, else a new lease of at least lease_micro from the store (or,
 * when the balance cannot cover one, a hold of its own). */
static bool leasing(const struct gw *g, const struct gw_req *r)
{
	return g->c->lease_micro > 0 && g->st->settle_batch && !r->internal &&
	       r->key_id;
}

static void lease_fn(void *arg)
{
	struct gw_req *r = arg;
	struct gw *g = r->g;
	int64_t now = gw_now_ms(), amount = r->reserved_micro;
	int64_t life =
		(int64_t)((r->spec.max_request_s + g->c->reserve_margin_s) *
			  1000);
	int64_t want = amount > g->c->lease_micro ? amount : g->c->lease_micro;
	int rc;

	if (r->lease_plain)
		want = amount; /* the key has its leases: a hold of its own */
	r->reserved_micro = 0;
	r->lease_expires_ms = now + (int64_t)(g->c->lease_s * 1000) + life;
	rc = g->st->reserve(g->sti, r->account_id, r->key_id, want,
			    r->lease_plain ? now + life : r->lease_expires_ms,
			    &r->reservation_id);
	r->lease_new = rc == 0 && !r->lease_plain;
	r->lease_amount = want;
	if (rc == -EDQUOT && want > amount) /* a hold of its own */
		rc = g->st->reserve(g->sti, r->account_id, r->key_id, amount,
				    now + life, &r->reservation_id);
	hold_result(r, rc, amount);
}

static void lease_done(void *arg, int rc)
{
	struct gw_req *r = arg;

	if (rc < 0 && !r->job_status) {
		r->job_status = 503;
		snprintf(r->err, sizeof(r->err),
			 "the gateway is shutting down");
		r->lease_new = false; /* its reservation lapses at expiry */
	}
	if (r->lease_new && !r->job_status)
		gw_lease_add(r);
	r->lease_new = false;
	r->job_done(r);
}

/* The model is known and allowed: the hold, on the loop. */
static void lease_step(struct gw_req *r)
{
	struct gw *g = r->g;
	int64_t amount = 0;

	if (r->no_worker) {
		r->job_status = 503;
		snprintf(r->err, sizeof(r->err),
			 "no worker is serving this model right now; retry "
			 "shortly");
		r->job_done(r);
		return;
	}
	if (engy_billing_reserve(&r->spec.price, r->prompt_bound,
				 r->areq.max_tokens, &amount) < 0) {
		r->job_status = 400;
		snprintf(r->err, sizeof(r->err),
			 "the request is too large to price");
		r->job_done(r);
		return;
	}
	if (amount == 0 || gw_lease_hold(r, amount) == 0) {
		r->job_done(r); /* free, or held in memory */
		return;
	}
	r->reserved_micro = amount;
	/* A key holding GW_KEY_LEASES (requests each above what they have
	 * left) gets holds of their own, not one lease more each. */
	r->lease_plain = !gw_lease_room(g, r->key_id);
	r->state = GW_R_RESERVE;
	if (gw_store_work(g, lease_fn, lease_done, r) < 0)
		lease_done(r, -ECANCELED);
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
	if (!r->job_status && leasing(g, r)) {
		lease_step(r);
		return;
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
		if (leasing(g, r)) {
			lease_step(r);
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
	gw_lease_close_idle(g);
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

	g->settle_q_tail = &g->settle_q;
	if (sodium_init() < 0)
		return -EIO;
	randombytes_buf(g->khash_key, sizeof(g->khash_key));
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
