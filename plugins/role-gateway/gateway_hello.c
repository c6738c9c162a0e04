/* SPDX-License-Identifier: MIT */
/*
 * A miner's hello checked against the store, on the worker pool
 * (gateway_pool.c decides): the key is hashed on the loop thread, then
 * miner_lookup() (registered and enabled), model_get() (enabled), and,
 * when the model lists accepted checkpoints, model_root_get() (the
 * hello's root is one of them).  The refusals of a disabled miner are
 * remembered for miner_cache_s, so one re-dialing every half second does
 * not keep the store busy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway_int.h"
#include "hex.h"

struct hello_job {
	struct gw_worker *w;
	void (*done)(struct gw_worker *w, int rc, const struct engy_miner *m,
		     const struct engy_model *spec, const char *why);
	uint8_t hash[GW_HASH_BYTES];
	char model[128];
	char root_hex[129];
	struct engy_miner m;
	struct engy_model spec;
	char spec_root[65]; /* the accepted root's pinned spec_root, or "" */
	int rc;
	bool cache; /* remember the refusal */
	char why[96];
};

static void hello_fn(void *arg)
{
	struct hello_job *j = arg;
	struct gw *g = j->w->g;
	struct engy_model_root *roots = NULL, root;
	uint8_t raw[ENGY_STORE_HASH_BYTES];
	size_t n = 0;
	int rc;

	rc = g->st->miner_lookup(g->sti, j->hash, &j->m);
	if (rc < 0 || j->m.status != ENGY_MINER_ACTIVE) {
		j->rc = rc < 0 && rc != -ENOENT ? rc : -EACCES;
		/* A disabled miner re-dialing is remembered; made-up keys are
		 * not (they would only grow the list). */
		j->cache = rc == 0;
		snprintf(j->why, sizeof(j->why), "%s",
			 rc == -ENOENT ? "unknown miner key"
			 : rc < 0      ? "the miner registry is "
					 "unavailable"
				       : "this miner is disabled");
		return;
	}
	rc = g->st->model_get(g->sti, j->model, &j->spec);
	if (rc < 0 || j->spec.status != ENGY_MODEL_ENABLED) {
		j->rc = rc < 0 && rc != -ENOENT ? rc : -ENOENT;
		snprintf(j->why, sizeof(j->why), "%s",
			 rc < 0 && rc != -ENOENT
				 ? "the model registry is unavailable"
				 : "this model is not served here");
		return;
	}
	/* A model that lists its accepted checkpoints admits only those. */
	rc = g->st->model_root_list(g->sti, j->model, &roots, &n);
	free(roots);
	if (rc < 0) {
		j->rc = rc;
		snprintf(j->why, sizeof(j->why),
			 "the model registry is unavailable");
		return;
	}
	if (n && (engy_hex_parse(j->root_hex, raw, ENGY_STORE_HASH_BYTES) < 0 ||
		  g->st->model_root_get(g->sti, raw, &root) < 0 ||
		  strcmp(root.model, j->model) != 0)) {
		j->rc = -EPERM;
		snprintf(j->why, sizeof(j->why),
			 "model_root is not an accepted "
			 "checkpoint of this model");
	} else if (n) {
		static const uint8_t zero[ENGY_STORE_HASH_BYTES];
		static const char d[] = "0123456789abcdef";
		size_t i;

		for (i = 0; memcmp(root.spec_root, zero, sizeof(zero)) &&
			    i < ENGY_STORE_HASH_BYTES;
		     i++) {
			j->spec_root[2 * i] = d[root.spec_root[i] >> 4];
			j->spec_root[2 * i + 1] = d[root.spec_root[i] & 15];
		}
	}
}

static void hello_done(void *arg, int rc)
{
	struct hello_job *j = arg;
	struct gw_worker *w = j->w;
	struct gw *g = w->g;

	w->in_job = false;
	if (w->state == GW_W_CLOSED) {
		free(w); /* its leg closed while the store was asked */
		free(j);
		return;
	}
	if (rc < 0 && !j->rc) {
		j->rc = rc;
		snprintf(j->why, sizeof(j->why),
			 "the gateway is shutting down");
	}
	if (j->cache) {
		struct gw_miner_entry *e = calloc(1, sizeof(*e));

		if (e) {
			memcpy(e->hash, j->hash, GW_HASH_BYTES);
			snprintf(e->reason, sizeof(e->reason), "%s", j->why);
			clock_gettime(CLOCK_MONOTONIC, &e->fetched);
			e->next = g->denied;
			g->denied = e;
		}
	}
	if (!j->rc)
		snprintf(w->spec_root, sizeof(w->spec_root), "%s",
			 j->spec_root);
	j->done(w, j->rc, &j->m, &j->spec, j->why);
	free(j);
}

void gw_store_hello(struct gw_worker *w, const char *miner_key,
		    void (*done)(struct gw_worker *w, int rc,
				 const struct engy_miner *m,
				 const struct engy_model *spec,
				 const char *why))
{
	struct gw *g = w->g;
	struct gw_miner_entry *e;
	struct hello_job *j = calloc(1, sizeof(*j));

	if (!j || g->st->key_hash(g->sti, miner_key, strlen(miner_key),
				  j->hash) < 0) {
		free(j);
		done(w, -EINVAL, NULL, NULL, "the miner key cannot be checked");
		return;
	}
	memcpy(w->key_hash, j->hash, GW_HASH_BYTES);
	for (e = g->denied; e; e = e->next) {
		if (memcmp(e->hash, j->hash, GW_HASH_BYTES) == 0 &&
		    gw_fresh(&e->fetched, g->c->miner_cache_s)) {
			char why[96];

			snprintf(why, sizeof(why), "%s", e->reason);
			free(j);
			done(w, -EACCES, NULL, NULL, why);
			return;
		}
	}
	j->w = w;
	j->done = done;
	snprintf(j->model, sizeof(j->model), "%s", w->model);
	snprintf(j->root_hex, sizeof(j->root_hex), "%s", w->model_root);
	w->in_job = true;
	if (gw_store_work(g, hello_fn, hello_done, j) < 0)
		hello_done(j, -ECANCELED);
}
