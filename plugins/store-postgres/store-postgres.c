/* SPDX-License-Identifier: MIT */
/*
 * store-postgres: the store on a PostgreSQL server (libpq), for several
 * gateway and auditor processes on one database.  The ops and their
 * semantics are the store kind's (include/engy/store.h, specs/store.md),
 * the same as store-sqlite's; the schema is created and migrated at
 * start, every write is one transaction, connections are pooled.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "pg.h"

static const struct engy_opt opts[] = {
	{ "conninfo", ENGY_OPT_STR, 0, offsetof(struct pg_conf, conninfo), "",
	  "ENGY_PG_CONNINFO", 0, 0,
	  "libpq connection string or postgresql:// URI; empty: libpq's PGHOST, PGDATABASE, ... (keep the password out of it)" },
	{ "password", ENGY_OPT_STR, ENGY_OPT_SECRET,
	  offsetof(struct pg_conf, password), NULL, "ENGY_PG_PASSWORD", 0, 0,
	  "database password (else libpq's PGPASSWORD or PGPASSFILE, ~/.pgpass)" },
	{ "schema", ENGY_OPT_STR, 0, offsetof(struct pg_conf, schema), "",
	  "ENGY_PG_SCHEMA", 0, 0,
	  "schema holding engy's tables, created when missing; empty: the connection's search_path" },
	{ "connections", ENGY_OPT_INT, 0, offsetof(struct pg_conf, connections),
	  "4", NULL, 1, PG_MAX_CONNS,
	  "connections kept open (one per op in flight)" },
	{ "busy_timeout_ms", ENGY_OPT_INT, 0,
	  offsetof(struct pg_conf, busy_timeout_ms), "5000", NULL, 0, 600000,
	  "how long a statement waits for a row lock (lock_timeout; 0 = forever)" },
	{ "statement_timeout_ms", ENGY_OPT_INT, 0,
	  offsetof(struct pg_conf, statement_timeout_ms), "30000", NULL, 0,
	  3600000, "longest a statement may run (0 = no limit)" },
	{ "connect_timeout_s", ENGY_OPT_INT, 0,
	  offsetof(struct pg_conf, connect_timeout_s), "10", NULL, 1, 600,
	  "how long a connection attempt may take" },
	{ "pepper", ENGY_OPT_STR, ENGY_OPT_SECRET,
	  offsetof(struct pg_conf, pepper), NULL, "ENGY_KEY_PEPPER", 0, 0,
	  "server-side secret mixed into every stored key hash" },
	{ "max_query_rows", ENGY_OPT_INT, 0,
	  offsetof(struct pg_conf, max_query_rows), "10000", NULL, 1, 1000000,
	  "most request-log rows one query returns" },
	ENGY_OPT_END,
};

static bool schema_ok(const char *str)
{
	size_t n;

	if (strlen(str) > 63 || (*str >= '0' && *str <= '9'))
		return false;
	for (n = 0; str[n]; n++)
		if (!(str[n] == '_' || (str[n] >= 'a' && str[n] <= 'z') ||
		      (str[n] >= '0' && str[n] <= '9')))
			return false;
	return true;
}

/* The conninfo parses; a password in it works but is worth a warning. */
static int conninfo_check(const struct engy_host *h, const char *conninfo)
{
	PQconninfoOption *o, *opts_;
	char *err = NULL;

	opts_ = PQconninfoParse(conninfo, &err);
	if (!opts_) {
		/* libpq's message may quote the string: it is not logged. */
		PQfreemem(err);
		engy_err(
			h,
			"event=bad_option option=conninfo error=\"not a libpq connection string or URI\"");
		return -EINVAL;
	}
	for (o = opts_; o->keyword; o++)
		if (!strcmp(o->keyword, "password") && o->val && *o->val)
			engy_warn(
				h,
				"event=store_password_in_conninfo hint=\"use password_file, $ENGY_PG_PASSWORD, PGPASSFILE or ~/.pgpass\"");
	PQconninfoFree(opts_);
	return 0;
}

static char *secret_dup(const char *v)
{
	size_t n = strlen(v);
	char *p = sodium_malloc(n + 1);

	if (p)
		memcpy(p, v, n + 1);
	return p;
}

static void pg_destroy(void *inst);

static int pg_create(const struct engy_host *h, const void *conf_, void **out)
{
	const struct pg_conf *conf = conf_;
	const char *schema = conf->schema ? conf->schema : "";
	struct pg *s;
	int rc;

	if (!schema_ok(schema)) {
		engy_err(
			h,
			"event=bad_option option=schema value=%s error=\"1..63 of [a-z0-9_], not starting with a digit\"",
			schema);
		return -EINVAL;
	}
	rc = conninfo_check(h, conf->conninfo ? conf->conninfo : "");
	if (rc)
		return rc;
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
	snprintf(s->schema, sizeof(s->schema), "%s", schema);
	s->conninfo = strdup(conf->conninfo ? conf->conninfo : "");
	s->pepper_len = conf->pepper ? strlen(conf->pepper) : 0;
	s->pepper = secret_dup(conf->pepper ? conf->pepper : "");
	if (conf->password && *conf->password)
		s->password = secret_dup(conf->password);
	s->busy_timeout_ms = (int)conf->busy_timeout_ms;
	s->statement_timeout_ms = (int)conf->statement_timeout_ms;
	s->connect_timeout_s = (int)conf->connect_timeout_s;
	s->max_query_rows = (uint32_t)conf->max_query_rows;
	s->n_conns = (size_t)conf->connections;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (!s->conninfo || !s->pepper ||
	    (conf->password && *conf->password && !s->password)) {
		pg_destroy(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

static int pg_start(void *inst)
{
	struct pg *s = inst;
	int rc;

	if (!PQisthreadsafe()) {
		engy_err(
			s->h,
			"event=store_postgres_unsafe error=\"libpq built without thread support\"");
		return -ENOTSUP;
	}
	rc = pg_open_pool(s);
	if (rc)
		return rc;
	engy_info(
		s->h,
		"event=store_open %s schema=%s libpq=%d schema_version=%d connections=%zu",
		s->where, s->schema[0] ? s->schema : "-", PQlibVersion(),
		PG_SCHEMA_VERSION, s->n_conns);
	return 0;
}

static void pg_destroy(void *inst)
{
	struct pg *s = inst;

	if (!s)
		return;
	pg_close_pool(s);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	if (s->pepper)
		sodium_free(s->pepper);
	if (s->password)
		sodium_free(s->password);
	free(s->conninfo);
	free(s);
}

static const struct engy_store_ops ops = {
	.size = sizeof(ops),
	.key_hash = pg_key_hash,
	.account_create = pg_account_create,
	.account_get = pg_account_get,
	.account_by_name = pg_account_by_name,
	.account_list = pg_account_list,
	.topup = pg_topup,
	.key_create = pg_key_create,
	.key_lookup = pg_key_lookup,
	.key_revoke = pg_key_revoke,
	.key_list = pg_key_list,
	.reserve = pg_reserve,
	.settle = pg_settle,
	.release_expired = pg_release_expired,
	.model_put = pg_model_put,
	.model_get = pg_model_get,
	.model_list = pg_model_list,
	.model_root_put = pg_model_root_put,
	.model_root_get = pg_model_root_get,
	.model_root_list = pg_model_root_list,
	.model_root_del = pg_model_root_del,
	.miner_put = pg_miner_put,
	.miner_lookup = pg_miner_lookup,
	.miner_list = pg_miner_list,
	.log_append = pg_log_append,
	.log_query = pg_log_query,
	.log_prune = pg_log_prune,
	.verdict_put = pg_verdict_put,
	.verdict_list = pg_verdict_list,
	.epoch_put = pg_epoch_put,
	.epoch_get = pg_epoch_get,
	.audit_claim = pg_audit_claim,
	.holds_open = pg_holds_open,
	.settle_batch = pg_settle_batch,
};

ENGY_PLUGIN(.kind = ENGY_KIND_STORE, .name = "store-postgres", .version = "1.0",
	    .description =
		    "accounts, keys, balances, models, miners, the request log, verdicts and epochs on a PostgreSQL server",
	    .opts = opts, .conf_size = sizeof(struct pg_conf),
	    .create = pg_create, .start = pg_start, .destroy = pg_destroy,
	    .ops = &ops);
