/* SPDX-License-Identifier: MIT */
/*
 * chain-subtensor: a subtensor node over JSON-RPC (HTTP POST).  Reads the
 * metagraph from storage with the key hashers the runtime's metadata
 * declares, signs set_weights (or, where the subnet runs commit-reveal,
 * the timelocked commit: sub_commit.c) with the caller's signer against
 * the runtime's own call indices and signed extensions, submits it, and
 * follows new blocks until it is in one, then reads its outcome from the
 * block's events.  Each op is one job on the worker pool (blocking
 * lib/http/httpc there); jobs of an instance run one at a time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chain_network.h"
#include "checkfmt.h"
#include "httpc.h"
#include "sub.h"
#include "url.h"

#define OFF(f) offsetof(struct sub_conf, f)

static const struct engy_opt opts[] = {
	{ "endpoint", ENGY_OPT_STR, 0, OFF(endpoint), NULL,
	  "ENGY_SN53_CHAIN_ENDPOINT", 0, 0,
	  "the node's JSON-RPC URL (ws:// and wss:// are dialled as http:// and "
	  "https://); wins over network" },
	{ "network", ENGY_OPT_STR, 0, OFF(network), "finney",
	  "ENGY_SN53_NETWORK", 0, 0,
	  "finney, test, local, archive or a URL (the public validator's "
	  "network), used when no endpoint is given" },
	{ "timeout_s", ENGY_OPT_INT, 0, OFF(timeout_s), "30", NULL, 1, 600,
	  "seconds for one JSON-RPC call" },
	{ "inclusion_timeout_s", ENGY_OPT_INT, 0, OFF(inclusion_timeout_s),
	  "120", NULL, 1, 3600,
	  "seconds to wait for a submitted extrinsic to be in a block" },
	{ "poll_ms", ENGY_OPT_INT, 0, OFF(poll_ms), "2000", NULL, 50, 60000,
	  "how often new blocks are read while waiting" },
	{ "era_period", ENGY_OPT_INT, 0, OFF(era_period), "64", NULL, 0, 65536,
	  "blocks an extrinsic stays valid (0: immortal)" },
	{ "max_response_mb", ENGY_OPT_INT, 0, OFF(max_response_mb), "32", NULL,
	  1, 1024, "largest JSON-RPC response accepted (MiB)" },
	ENGY_OPT_END,
};

bool sub_nap(struct sub *s, long ms)
{
	while (ms > 0 && !atomic_load(&s->cancel)) {
		long step = ms > 50 ? 50 : ms;
		struct timespec ts = { 0, step * 1000000L };

		nanosleep(&ts, NULL);
		ms -= step;
	}
	return !atomic_load(&s->cancel);
}

static void do_block(struct sub_job *j, struct rpc *r)
{
	struct sub_at at;
	int rc = sub_best(j->s, r, &at, j->error, sizeof(j->error));

	j->block.status = rc;
	if (rc)
		return;
	j->block.number = at.number;
	memcpy(j->block.hash, at.hash, 32);
}

static void job_run(void *arg)
{
	struct sub_job *j = arg;
	struct sub *s = j->s;
	struct rpc r;
	int rc;

	pthread_mutex_lock(&s->lock);
	rc = rpc_init(&r, s->endpoint, (long)s->c->timeout_s * 1000,
		      (size_t)s->c->max_response_mb << 20, &s->cancel);
	if (rc) {
		j->block.status = j->mg.status = j->submit.status = rc;
		snprintf(j->error, sizeof(j->error), "out of memory");
		goto out;
	}
	switch (j->op) {
	case SUB_BLOCK:
		do_block(j, &r);
		break;
	case SUB_METAGRAPH:
		sub_do_metagraph(j, &r);
		break;
	case SUB_SET_WEIGHTS:
		sub_do_set_weights(j, &r);
		break;
	case SUB_COMMIT_WEIGHTS:
		sub_do_commit_weights(j, &r);
		break;
	}
	rpc_free(&r);
out:
	pthread_mutex_unlock(&s->lock);
}

static void job_free(struct sub_job *j)
{
	free(j->uids);
	free(j->weights);
	free(j->mg_uids);
	free(j->mg_permit);
	free(j->mg_last);
	free(j);
}

static void job_done(void *arg, int rc)
{
	struct sub_job *j = arg;

	j->s->inflight--;
	if (rc == -ECANCELED)
		snprintf(j->error, sizeof(j->error), "cancelled");
	switch (j->op) {
	case SUB_BLOCK:
		if (rc)
			j->block.status = rc;
		j->block.error = j->block.status ? j->error : NULL;
		j->done.block(j->arg, &j->block);
		break;
	case SUB_METAGRAPH:
		if (rc)
			j->mg.status = rc;
		j->mg.error = j->mg.status ? j->error : NULL;
		j->mg.uids = (const uint8_t(*)[32])j->mg_uids;
		j->mg.permit = j->mg_permit;
		j->mg.last_update = j->mg_last;
		j->mg.cr_why = j->mg.can_commit ? NULL : j->cr_why;
		j->done.metagraph(j->arg, &j->mg);
		break;
	case SUB_SET_WEIGHTS:
	case SUB_COMMIT_WEIGHTS:
		if (rc)
			j->submit.status = rc;
		j->submit.error = j->error[0] ? j->error : NULL;
		j->done.submit(j->arg, &j->submit);
		break;
	}
	job_free(j);
}

static int queue(struct sub *s, struct sub_job *j)
{
	int rc;

	if (atomic_load(&s->cancel)) {
		job_free(j);
		return -ESHUTDOWN;
	}
	j->s = s;
	rc = s->h->work(s->h, job_run, job_done, j);
	if (rc) {
		job_free(j);
		return rc;
	}
	s->inflight++;
	return 0;
}

static int op_block(void *inst,
		    void (*done)(void *, const struct engy_chain_block *),
		    void *arg)
{
	struct sub_job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->op = SUB_BLOCK;
	j->done.block = done;
	j->arg = arg;
	return queue(inst, j);
}

static int op_metagraph(void *inst, uint16_t netuid,
			void (*done)(void *,
				     const struct engy_chain_metagraph *),
			void *arg)
{
	struct sub_job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->op = SUB_METAGRAPH;
	j->netuid = netuid;
	j->mg.netuid = netuid;
	j->done.metagraph = done;
	j->arg = arg;
	return queue(inst, j);
}

static int submit_job(void *inst, int op, const struct engy_chain_weights *w,
		      const struct engy_chain_signer *sg,
		      void (*done)(void *, const struct engy_chain_submit *),
		      void *arg)
{
	struct sub_job *j;
	size_t i;

	if (!w ||
	    w->size < offsetof(struct engy_chain_weights, version_key) + 8 ||
	    !sg ||
	    sg->size <
		    offsetof(struct engy_chain_signer, arg) + sizeof(void *) ||
	    !sg->sign || w->n > 65535 || (w->n && (!w->uids || !w->weights)))
		return -EINVAL;
	for (i = 1; i < w->n; i++)
		if (w->uids[i] <= w->uids[i - 1])
			return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->uids = calloc(w->n ? w->n : 1, sizeof(*j->uids));
	j->weights = calloc(w->n ? w->n : 1, sizeof(*j->weights));
	if (!j->uids || !j->weights) {
		job_free(j);
		return -ENOMEM;
	}
	memcpy(j->uids, w->uids, w->n * sizeof(*j->uids));
	memcpy(j->weights, w->weights, w->n * sizeof(*j->weights));
	j->n = w->n;
	j->netuid = w->netuid;
	j->version_key = w->version_key;
	memcpy(&j->signer, sg, sizeof(j->signer));
	j->op = op;
	j->done.submit = done;
	j->arg = arg;
	return queue(inst, j);
}

static int op_set_weights(void *inst, const struct engy_chain_weights *w,
			  const struct engy_chain_signer *sg,
			  void (*done)(void *,
				       const struct engy_chain_submit *),
			  void *arg)
{
	return submit_job(inst, SUB_SET_WEIGHTS, w, sg, done, arg);
}

static int op_commit_weights(void *inst, const struct engy_chain_weights *w,
			     const struct engy_chain_signer *sg,
			     void (*done)(void *,
					  const struct engy_chain_submit *),
			     void *arg)
{
	return submit_job(inst, SUB_COMMIT_WEIGHTS, w, sg, done, arg);
}

static const struct engy_chain_ops ops = {
	.size = sizeof(ops),
	.block = op_block,
	.metagraph = op_metagraph,
	.set_weights = op_set_weights,
	.commit_weights = op_commit_weights,
};

static int sub_create(const struct engy_host *h, const void *conf, void **inst)
{
	const struct sub_conf *c = conf;
	struct engy_url u;
	const char *why = NULL, *endpoint;
	struct sub *s;

	*inst = NULL;
	endpoint = engy_chain_endpoint_pick(c->endpoint, c->network);
	if (!endpoint) {
		engy_err(h, "event=bad_option option=network reason=\"unknown "
			    "network: " ENGY_CHAIN_NETWORKS "\"");
		return -EINVAL;
	}
	if (engy_url_parse(&u, endpoint, &why) < 0) {
		engy_err(h, "event=bad_option option=endpoint reason=\"%s\"",
			 why ? why : "not set");
		return -EINVAL;
	}
	engy_url_free(&u);
	if (engy_httpc_global_init() < 0) {
		engy_err(h, "event=curl_init_failed");
		return -ENOMEM;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->h = h;
	s->c = c;
	s->endpoint = endpoint;
	atomic_init(&s->cancel, 0);
	pthread_mutex_init(&s->lock, NULL);
	*inst = s;
	return 0;
}

static int sub_start(void *inst)
{
	struct sub *s = inst;
	struct engy_url u;
	const char *why;

	if (engy_url_parse(&u, s->endpoint, &why) == 0) {
		engy_info(s->h,
			  "event=started endpoint=%s timeout_s=%lld "
			  "inclusion_timeout_s=%lld era_period=%lld",
			  u.safe, (long long)s->c->timeout_s,
			  (long long)s->c->inclusion_timeout_s,
			  (long long)s->c->era_period);
		engy_url_free(&u);
	}
	return 0;
}

static void sub_stop(void *inst)
{
	struct sub *s = inst;

	atomic_store(&s->cancel, 1);
}

static void sub_destroy(void *inst)
{
	struct sub *s = inst;

	if (!s)
		return;
	engy_meta_free(s->md);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/*
 * The check op (engyd -t, engyctl doctor): the node it would call, and
 * where that came from: the endpoint's twin, the network's twin, the
 * config's endpoint, else the network.  Reads the conf.
 */
static int sub_check(const struct engy_host *h, const void *conf, void *inst,
		     const struct engy_check_sink *sink)
{
	const struct sub_conf *c = conf;
	const char *pick = engy_chain_endpoint_pick(c->endpoint, c->network);
	struct engy_check_buf b;
	char ep_src[96] = "", net_src[96] = "";

	(void)inst;
	engy_check_begin(&b, "chain", ENGY_PROBE_CHAIN);
	ENGY_CHECK_SET(&b, target, "%s",
		       pick ? pick : (c->network ? c->network : ""));
	engy_check_source(h, "endpoint", &b);
	memcpy(ep_src, b.source, sizeof(ep_src));
	engy_check_source(h, "network", &b);
	memcpy(net_src, b.source, sizeof(net_src));
	if (ep_src[0] == '$')
		ENGY_CHECK_SET(&b, source, "%s", ep_src);
	else if (net_src[0] == '$')
		ENGY_CHECK_SET(&b, source, "%s=%s", net_src,
			       c->network ? c->network : "");
	else if (c->endpoint && *c->endpoint)
		ENGY_CHECK_SET(&b, source, "%s", ep_src);
	else
		ENGY_CHECK_SET(&b, source, "network %s",
			       c->network ? c->network : "finney");
	if (!pick) {
		ENGY_CHECK_SET(&b, problem, "unknown network");
		ENGY_CHECK_SET(&b, fix,
			       "set ENGY_SN53_NETWORK to " ENGY_CHAIN_NETWORKS
			       ", or "
			       "ENGY_SN53_CHAIN_ENDPOINT to a node's URL");
	}
	return engy_check_add(sink, &b);
}

ENGY_PLUGIN(.kind = ENGY_KIND_CHAIN, .name = "chain-subtensor",
	    .version = "1.0",
	    .description = "subtensor over JSON-RPC: metagraph reads, signed "
			   "set_weights, inclusion and outcome",
	    .opts = opts, .conf_size = sizeof(struct sub_conf),
	    .create = sub_create, .start = sub_start, .stop = sub_stop,
	    .destroy = sub_destroy, .ops = &ops, .check = sub_check);
