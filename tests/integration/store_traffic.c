/* SPDX-License-Identifier: MIT */
/*
 * store_traffic: the store side of a gateway's requests, for
 * tests/integration/admin_cli.sh.  It loads the built store plugin,
 * authenticates a buyer key (key_hash + key_lookup), reads the model's
 * price card, then for each request builds a chat body holding MARKER
 * (the buyer's content: it only ever lives in this process's memory),
 * reserves the bound from billing, and settles the real cost with one
 * metadata row, as the gateway does.  With HOLD_MS it finally takes one
 * more hold that expires after HOLD_MS and exits without settling it (a
 * gateway dying mid-request).
 *
 *   store_traffic PLUGIN.so DB KEY MODEL N MARKER [HOLD_MS]
 *
 * Prints `requests=N charged_micro=X` (and `refused=402` when the balance
 * ran out); exits 3 for an unknown or revoked key, 1 on other errors.
 * The store's options come from their environment twins (ENGY_KEY_PEPPER).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <engy/plugin.h>
#include <engy/store.h>

#include "billing.h"

static void h_vlog(const struct engy_host *h, int level, const char *fmt,
		   va_list ap)
{
	fprintf(stderr, "store_traffic: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void h_log(const struct engy_host *h, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	h_vlog(h, level, fmt, ap);
	va_end(ap);
}

static const char *h_state_dir(const struct engy_host *h)
{
	return ".";
}

/* The host's metrics: registered, not kept (nothing serves them here). */
static int h_metric(const struct engy_host *h, int type, const char *name,
		    const char *help, const char *labels, const double *buckets,
		    size_t n_buckets, struct engy_metric **out)
{
	*out = NULL;
	return 0;
}

static void h_metric_op(struct engy_metric *m, double v)
{
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Defaults and environment twins, then path = @db, as the host would. */
static void *fill(const struct engy_plugin *p, const char *db)
{
	char *conf = calloc(1, p->conf_size);
	const struct engy_opt *o;

	for (o = p->opts; conf && o->name; o++) {
		const char *v =
			o->env && getenv(o->env) ? getenv(o->env) : o->def;
		int64_t i;

		if (!strcmp(o->name, "path"))
			v = db;
		if (!v)
			continue;
		if (o->type == ENGY_OPT_INT) {
			i = strtoll(v, NULL, 10);
			memcpy(conf + o->offset, &i, sizeof(i));
		} else if (o->type == ENGY_OPT_STR) {
			memcpy(conf + o->offset, &v, sizeof(v));
		}
	}
	return conf;
}

int main(int argc, char **argv)
{
	struct engy_host host = { .size = sizeof(host),
				  .instance = "store",
				  .log = h_log,
				  .vlog = h_vlog,
				  .state_dir = h_state_dir,
				  .metric = h_metric,
				  .metric_add = h_metric_op,
				  .metric_set = h_metric_op,
				  .metric_observe = h_metric_op };
	const struct engy_store_ops *ops;
	const struct engy_plugin *p;
	struct engy_api_key key;
	struct engy_model m;
	int64_t charged = 0, res, amount, cost, ch;
	uint8_t hash[ENGY_STORE_HASH_BYTES];
	void *dl, *conf, *inst;
	int i, n, rc = 1;

	if (argc < 7 || argc > 8) {
		fprintf(stderr,
			"usage: store_traffic PLUGIN.so DB KEY MODEL N MARKER [HOLD_MS]\n");
		return 2;
	}
	dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	p = dl ? dlsym(dl, ENGY_PLUGIN_SYMBOL) : NULL;
	if (!p || p->kind != ENGY_KIND_STORE) {
		fprintf(stderr, "store_traffic: %s: not a store plugin\n",
			argv[1]);
		return 1;
	}
	ops = p->ops;
	conf = fill(p, argv[2]);
	if (!conf || p->create(&host, conf, &inst))
		return 1;
	if (p->start(inst))
		goto out;
	n = atoi(argv[5]);
	/* Authenticate as the gateway does: hash, look up, check status. */
	rc = ops->key_hash(inst, argv[3], strlen(argv[3]), hash);
	if (!rc)
		rc = ops->key_lookup(inst, hash, &key);
	if (rc || key.status != ENGY_KEY_ACTIVE) {
		printf("401 %s key\n", rc ? "unknown" : "revoked");
		rc = 3;
		goto out;
	}
	rc = ops->model_get(inst, argv[4], &m);
	if (rc) {
		fprintf(stderr, "store_traffic: model %s: %s\n", argv[4],
			strerror(-rc));
		goto fail;
	}
	for (i = 0; i < n; i++) {
		struct engy_request_row row;
		char body[512];
		uint32_t prompt, completion = 10 + (uint32_t)(i % 7);
		int len = snprintf(
			body, sizeof(body),
			"{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"%s #%d\"}]}",
			argv[4], argv[6], i);

		prompt = (uint32_t)len / 4 + 1; /* the miner's count, roughly */
		rc = engy_billing_reserve(&m.price, (uint64_t)len, 64, &amount);
		if (!rc)
			rc = ops->reserve(inst, key.account_id, key.id, amount,
					  now_ms() + 60000, &res);
		if (rc == -EDQUOT) {
			printf("refused=402 after=%d\n", i);
			break;
		}
		if (!rc)
			rc = engy_billing_cost(&m.price, prompt,
					       i % 2 ? prompt / 2 : 0,
					       completion, &cost);
		if (rc)
			goto fail;
		memset(&row, 0, sizeof(row));
		row.time_ms = now_ms();
		row.status = 200;
		row.prompt_tokens = prompt;
		row.cached_tokens = i % 2 ? prompt / 2 : 0;
		row.completion_tokens = completion;
		row.ttft_ms = 100 + (uint32_t)i;
		row.tpot_ms = 12;
		snprintf(row.request_id, sizeof(row.request_id), "req-%d", i);
		snprintf(row.model, sizeof(row.model), "%s", argv[4]);
		snprintf(row.miner, sizeof(row.miner), "%s",
			 "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY");
		snprintf(row.worker_name, sizeof(row.worker_name), "ins-test");
		rc = ops->settle(inst, res, cost, &row, &ch);
		if (rc)
			goto fail;
		charged += ch;
	}
	printf("requests=%d charged_micro=%lld\n", i, (long long)charged);
	if (argc == 8) {
		rc = ops->reserve(inst, key.account_id, key.id, 1000,
				  now_ms() + atoi(argv[7]), &res);
		if (rc)
			goto fail;
		printf("held=1000\n");
		fflush(stdout);
		_exit(0); /* no settle, no cleanup: a crash */
	}
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "store_traffic: %s\n", strerror(-rc));
	rc = 1;
out:
	p->destroy(inst);
	free(conf);
	return rc;
}
