/* SPDX-License-Identifier: MIT */
/*
 * store-sqlite: the embedded store, one SQLite file in the state
 * directory (WAL, schema created and migrated at start, prepared
 * statements, a busy timeout, every write one transaction).  The ops are
 * the store kind's (include/engy/store.h); the contract is
 * specs/store.md.  Several processes may open the file (engyctl admin
 * next to a gateway); several gateways over one database is
 * store-postgres's job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "sq.h"

static const struct engy_opt opts[] = {
	{ "path", ENGY_OPT_STR, 0, offsetof(struct sq_conf, path), "engy.db",
	  "ENGY_SQLITE_PATH", 0, 0,
	  "database file; relative to the state directory" },
	{ "busy_timeout_ms", ENGY_OPT_INT, 0,
	  offsetof(struct sq_conf, busy_timeout_ms), "5000", NULL, 0, 600000,
	  "how long a write waits for another process's lock" },
	{ "connections", ENGY_OPT_INT, 0, offsetof(struct sq_conf, connections),
	  "4", NULL, 1, SQ_MAX_CONNS,
	  "connections kept open (readers run side by side)" },
	{ "synchronous", ENGY_OPT_STR, 0, offsetof(struct sq_conf, synchronous),
	  "full", NULL, 0, 0,
	  "full (every commit on disk) or normal (WAL default; a power cut may lose the last commits)" },
	{ "pepper", ENGY_OPT_STR, ENGY_OPT_SECRET,
	  offsetof(struct sq_conf, pepper), NULL, "ENGY_KEY_PEPPER", 0, 0,
	  "server-side secret mixed into every stored key hash" },
	{ "max_query_rows", ENGY_OPT_INT, 0,
	  offsetof(struct sq_conf, max_query_rows), "10000", NULL, 1, 1000000,
	  "most request-log rows one query returns" },
	{ "checkpoint_pages", ENGY_OPT_INT, 0,
	  offsetof(struct sq_conf, checkpoint_pages), "1000", NULL, 0, 1000000,
	  "WAL pages that wake the checkpoint thread (off the request path); 0: checkpoint in the committing request, as SQLite does by default" },
	ENGY_OPT_END,
};

static int sq_create(const struct engy_host *h, const void *conf_, void **out)
{
	const struct sq_conf *conf = conf_;
	const char *dir = h->state_dir(h);
	struct sq *s;
	int n;

	if (!conf->path || !*conf->path) {
		engy_err(h, "event=bad_option option=path error=\"empty\"");
		return -EINVAL;
	}
	if (strcmp(conf->synchronous, "full") &&
	    strcmp(conf->synchronous, "normal")) {
		engy_err(
			h,
			"event=bad_option option=synchronous value=%s error=\"full or normal\"",
			conf->synchronous);
		return -EINVAL;
	}
	if (sodium_init() < 0)
		return -EIO;
	if (conf->pepper && *conf->pepper && strlen(conf->pepper) < 16)
		engy_warn(
			h,
			"event=weak_pepper length=%zu hint=\"use 32 random characters or more\"",
			strlen(conf->pepper));
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->h = h;
	if (conf->path[0] == '/')
		s->path = strdup(conf->path);
	else if ((n = snprintf(NULL, 0, "%s/%s", dir, conf->path)) > 0 &&
		 (s->path = malloc((size_t)n + 1)))
		snprintf(s->path, (size_t)n + 1, "%s/%s", dir, conf->path);
	s->pepper_len = conf->pepper ? strlen(conf->pepper) : 0;
	s->pepper = sodium_malloc(s->pepper_len + 1);
	if (!s->path || !s->pepper) {
		free(s->path);
		if (s->pepper)
			sodium_free(s->pepper);
		free(s);
		return -ENOMEM;
	}
	memcpy(s->pepper, conf->pepper ? conf->pepper : "", s->pepper_len + 1);
	s->synchronous = strcmp(conf->synchronous, "full") ? "NORMAL" : "FULL";
	s->busy_timeout_ms = (int)conf->busy_timeout_ms;
	s->max_query_rows = (uint32_t)conf->max_query_rows;
	s->n_conns = (size_t)conf->connections;
	s->ckpt_pages = (int)conf->checkpoint_pages;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->ckpt_mu, NULL);
	pthread_cond_init(&s->ckpt_cv, NULL);
	pthread_cond_init(&s->ckpt_idle, NULL);
	if (s->ckpt_pages) {
		h->metric(h, ENGY_METRIC_COUNTER,
			  "engy_store_checkpoints_total",
			  "WAL checkpoints by where they ran",
			  "where=\"thread\"", NULL, 0, &s->m_ckpt);
		h->metric(h, ENGY_METRIC_COUNTER,
			  "engy_store_checkpoints_total",
			  "WAL checkpoints by where they ran",
			  "where=\"inline\"", NULL, 0, &s->m_ckpt_inline);
	}
	pthread_cond_init(&s->cv, NULL);
	pthread_mutex_init(&s->wmu, NULL);
	*out = s;
	return 0;
}

static int sq_start(void *inst)
{
	struct sq *s = inst;
	int rc;

	if (sqlite3_threadsafe() == 0) {
		engy_err(
			s->h,
			"event=store_sqlite_unsafe error=\"libsqlite3 built without thread support\"");
		return -ENOTSUP;
	}
	rc = sq_open_pool(s);
	if (!rc && (rc = sq_ckpt_start(s)))
		sq_close_pool(s);
	if (rc)
		return rc;
	s->started = true;
	engy_info(
		s->h,
		"event=store_open path=%s sqlite=%s schema=%d connections=%zu synchronous=%s checkpoint_pages=%d",
		s->path, sqlite3_libversion(), SQ_SCHEMA_VERSION, s->n_conns,
		s->synchronous, s->ckpt_pages);
	return 0;
}

static void sq_destroy(void *inst)
{
	struct sq *s = inst;

	if (!s)
		return;
	sq_ckpt_stop(s);
	sq_close_pool(s);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->ckpt_mu);
	pthread_cond_destroy(&s->ckpt_cv);
	pthread_cond_destroy(&s->ckpt_idle);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->wmu);
	sodium_free(s->pepper);
	free(s->path);
	free(s);
}

static const struct engy_store_ops ops = {
	.size = sizeof(ops),
	.key_hash = sq_key_hash,
	.account_create = sq_account_create,
	.account_get = sq_account_get,
	.account_by_name = sq_account_by_name,
	.account_list = sq_account_list,
	.topup = sq_topup,
	.key_create = sq_key_create,
	.key_lookup = sq_key_lookup,
	.key_revoke = sq_key_revoke,
	.key_list = sq_key_list,
	.reserve = sq_reserve,
	.settle = sq_settle,
	.release_expired = sq_release_expired,
	.model_put = sq_model_put,
	.model_get = sq_model_get,
	.model_list = sq_model_list,
	.model_root_put = sq_model_root_put,
	.model_root_get = sq_model_root_get,
	.model_root_list = sq_model_root_list,
	.model_root_del = sq_model_root_del,
	.miner_put = sq_miner_put,
	.miner_lookup = sq_miner_lookup,
	.miner_list = sq_miner_list,
	.log_append = sq_log_append,
	.log_query = sq_log_query,
	.log_prune = sq_log_prune,
	.verdict_put = sq_verdict_put,
	.verdict_list = sq_verdict_list,
	.epoch_put = sq_epoch_put,
	.epoch_get = sq_epoch_get,
	.audit_claim = sq_audit_claim,
	.holds_open = sq_holds_open,
	.settle_batch = sq_settle_batch,
};

ENGY_PLUGIN(.kind = ENGY_KIND_STORE, .name = "store-sqlite", .version = "1.0",
	    .description =
		    "accounts, keys, balances, models, miners, the request log, verdicts and epochs in one SQLite file",
	    .opts = opts, .conf_size = sizeof(struct sq_conf),
	    .create = sq_create, .start = sq_start, .destroy = sq_destroy,
	    .ops = &ops);
