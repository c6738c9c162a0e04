/* SPDX-License-Identifier: MIT */
/*
 * The miner role: dial the gateway, serve routed requests on a backend,
 * prove, answer (specs/protocol.md; specs/miner.md).  This file holds the
 * options (the public client's environment names are their twins), the
 * wiring, the one-miner-per-node lock, the wait for the backend's model,
 * and shutdown.  miner_prep.c reads the checkpoint and asks the gateway
 * for its workers, miner_legs.c runs the legs, miner_serve.c the
 * requests (with miner_stream.c and miner_prove.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <event2/event.h>

#include <engy/host.h>
#include <engy/plugin.h>
#include <engy/role.h>

#include "config.h"
#include "miner_gemm.h"
#include "miner_int.h"
#include "chat_template.h"
#include "httpc.h"
#include "miner_prep.h"
#include "tokenizer.h"

#define OFF(f) offsetof(struct miner_conf, f)

static const struct engy_opt miner_opts[] = {
	{ "gw", ENGY_OPT_STR, ENGY_OPT_REQUIRED, OFF(gw), NULL, "GW", 0, 0,
	  "the gateway's websocket URL (wss://HOST/gw); no inbound port" },
	{ "miner_key", ENGY_OPT_STR, ENGY_OPT_SECRET, OFF(miner_key), NULL,
	  "MINER_KEY", 0, 0,
	  "the key the gateway admits (required; environment or "
	  "miner_key_file; never logged)" },
	{ "model", ENGY_OPT_STR, 0, OFF(model), NULL, "MODEL", 0, 0,
	  "the gateway's model id (default: the backend's served name)" },
	{ "max_inflight", ENGY_OPT_INT, 0, OFF(max_inflight), "64",
	  "MAX_INFLIGHT", 1, 65536,
	  "requests at once, split over the legs (the gateway admits >= 8)" },
	{ "max_input_tokens", ENGY_OPT_INT, 0, OFF(max_input_tokens), "229376",
	  "MAX_INPUT_TOKENS", 1, 1 << 30, "longest prompt served (tokens)" },
	{ "max_output_tokens", ENGY_OPT_INT, 0, OFF(max_output_tokens), "32768",
	  "MAX_OUTPUT_TOKENS", 1, 1 << 30,
	  "most tokens generated for one request" },
	{ "max_request_s", ENGY_OPT_FLOAT, 0, OFF(max_request_s), "1800",
	  "MAX_REQUEST_S", 0, 0,
	  "a request's deadline, from serve to response" },
	{ "max_tokens", ENGY_OPT_INT, 0, OFF(max_tokens), "512", "MAX_TOKENS",
	  1, 1 << 30, "output cap of a request that names no max_tokens" },
	{ "stream_flush_s", ENGY_OPT_FLOAT, 0, OFF(stream_flush_s), "0.05",
	  "STREAM_FLUSH_S", 0, 0,
	  "streamed text is coalesced this long per chunk" },
	{ "worker_name", ENGY_OPT_STR, 0, OFF(worker_name), NULL,
	  "ENGY_WORKER_NAME", 0, 0,
	  "this machine's name under its key (default: instance_id)" },
	{ "instance_id", ENGY_OPT_STR, 0, OFF(instance_id), NULL,
	  "ENGY_INSTANCE_ID", 0, 0,
	  "hello's instance_id, and the worker name when worker_name is "
	  "unset (default: ins-<hash of host, model, serve URLs>)" },
	{ "gw_workers", ENGY_OPT_INT, 0, OFF(gw_workers), "0",
	  "ENGY_GW_WORKERS", 0, ENGY_GW_MAX_WORKERS,
	  "gateway workers to dial (0: ask GET <GW>/meta)" },
	{ "heartbeat_s", ENGY_OPT_INT, 0, OFF(heartbeat_s), "30",
	  "ENGY_HEARTBEAT_S", 1, 3600,
	  "seconds between heartbeats on each leg" },
	{ "checkpoint", ENGY_OPT_STR, 0, OFF(checkpoint), NULL,
	  "ENGY_CHECKPOINT", 0, 0,
	  "checkpoint directory: tokenizer, chat template, model_root "
	  "(default: the backend's)" },
	{ "model_root", ENGY_OPT_STR, 0, OFF(model_root), NULL,
	  "ENGY_MODEL_ROOT", 0, 0,
	  "64 hex digits sent as hello's and every commitment's model_root "
	  "instead of the checkpoint's computed identity (the devnet's "
	  "cheat switch: claim another checkpoint's root)" },
	{ "chat_template", ENGY_OPT_STR, 0, OFF(chat_template), "auto",
	  "ENGY_CHAT_TEMPLATE", 0, 0,
	  "auto (from the checkpoint), qwen3.6 or qwen3" },
	{ "stream_reasoning", ENGY_OPT_BOOL, 0, OFF(stream_reasoning), "false",
	  "ENGY_STREAM_REASONING", 0, 0,
	  "also stream reasoning, as delta.reasoning_content (beyond "
	  "specs/protocol.md §2's chunk)" },
	{ "parallelism", ENGY_OPT_STR, 0, OFF(parallelism), "tp", NULL, 0, 0,
	  "hello's hw.parallelism (tp, dp, ...)" },
	{ "gpu_probe", ENGY_OPT_BOOL, 0, OFF(gpu_probe), "true", NULL, 0, 0,
	  "ask nvidia-smi for hello's hw.gpu* fields" },
	{ "lock_file", ENGY_OPT_STR, 0, OFF(lock_file), NULL, NULL, 0, 0,
	  "one miner per node (default: STATE_DIR/miner.lock)" },
	{ "meta_timeout_s", ENGY_OPT_FLOAT, 0, OFF(meta_timeout_s), "10", NULL,
	  0, 0, "time limit of GET <GW>/meta" },
	{ "gemm_trace", ENGY_OPT_BOOL, 0, OFF(gemm_trace), "true",
	  "ENGY_GEMM_TRACE", 0, 0,
	  "a backend that offers a GEMM trace builds one per request "
	  "(commitment.gemm; specs/protocol.md)" },
	{ "gemm_open_max", ENGY_OPT_INT, 0, OFF(gemm_open_max), "2", NULL, 1,
	  64, "GEMM openings at once per leg (more: error busy)" },
	{ "gemm_open_max_bytes", ENGY_OPT_INT, 0, OFF(gemm_open_max_bytes),
	  "16777216", NULL, 1024, (int64_t)1 << 30,
	  "the largest GEMM opening sent (larger: error too_large)" },
	ENGY_OPT_END
};

double miner_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) +
	       (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

void miner_count(struct miner *m, const char *outcome)
{
	struct engy_metric *mt;
	char labels[64];

	snprintf(labels, sizeof(labels), "outcome=\"%s\"", outcome);
	if (!m->h->metric(
		    m->h, ENGY_METRIC_COUNTER, "engy_miner_requests_total",
		    "routed requests by how they ended", labels, NULL, 0, &mt))
		m->h->metric_add(mt, 1);
}

/* After the loop ended (shutdown past drain): start nothing new. */
bool miner_loop_over(struct miner *m)
{
	struct event_base *base = m->h->evbase(m->h);

	return event_base_got_exit(base) || event_base_got_break(base);
}

static int bad_conf(const struct miner *m, const char *opt, const char *why)
{
	MLOG(m, ENGY_LOG_ERR, "event=config_invalid option=%s reason=\"%s\"",
	     opt, why);
	return -EINVAL;
}

static int check_conf(const struct miner *m)
{
	const struct miner_conf *c = m->c;
	const char *why = NULL;
	char *u = NULL;

	if (engy_gw_meta_url(c->gw, &u, &why) < 0)
		return bad_conf(m, "gw", why ? why : "out of memory");
	free(u);
	if (!c->miner_key || !c->miner_key[0])
		return bad_conf(m, "miner_key",
				"required: set MINER_KEY (or "
				"miner_key_file in the miner section)");
	if (!(c->max_request_s > 0 && c->max_request_s <= 7 * 86400))
		return bad_conf(m, "max_request_s", "must be > 0 (seconds)");
	if (!(c->stream_flush_s >= 0 && c->stream_flush_s <= 10))
		return bad_conf(m, "stream_flush_s", "must be 0..10 (seconds)");
	if (!(c->meta_timeout_s > 0 && c->meta_timeout_s <= 600))
		return bad_conf(m, "meta_timeout_s", "must be > 0 (seconds)");
	if (strcmp(c->chat_template, "auto") != 0 &&
	    engy_chat_variant_parse(c->chat_template) < 0)
		return bad_conf(m, "chat_template", "auto, qwen3.6 or qwen3");
	if (c->model_root && c->model_root[0] &&
	    (strlen(c->model_root) != 64 ||
	     strspn(c->model_root, "0123456789abcdef") != 64))
		return bad_conf(m, "model_root", "64 lowercase hex digits");
	if (c->instance_id && c->instance_id[0] &&
	    (strlen(c->instance_id) > 127 ||
	     strspn(c->instance_id,
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "abcdefghijklmnopqrstuvwxyz"
		    "0123456789._:-") != strlen(c->instance_id)))
		return bad_conf(m, "instance_id",
				"1..127 of A-Z a-z 0-9 . _ : -");
	if (c->max_inflight < 8)
		MLOG(m, ENGY_LOG_WARNING,
		     "event=config_warning option=max_inflight value=%lld "
		     "reason=\"the gateway admits a total of at least 8\"",
		     (long long)c->max_inflight);
	return 0;
}

/* One miner per node: an flock on the lock file, held for life. */
static int take_lock(struct miner *m)
{
	char path[4096], pid[32];
	int fd, n;

	if (m->c->lock_file)
		snprintf(path, sizeof(path), "%s", m->c->lock_file);
	else
		snprintf(path, sizeof(path), "%s/miner.lock",
			 m->h->state_dir(m->h));
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0) {
		n = -errno;
		MLOG(m, ENGY_LOG_ERR, "event=lock_failed path=%s error=\"%s\"",
		     path, strerror(-n));
		return n;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		n = (int)read(fd, pid, sizeof(pid) - 1);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		MLOG(m, ENGY_LOG_ERR,
		     "event=lock_held path=%s holder_pid=%s "
		     "reason=\"another "
		     "miner runs on this node (one per node; several "
		     "machines share a key as named workers)\"",
		     path, pid[0] ? pid : "unknown");
		close(fd);
		return -EBUSY;
	}
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n)
		MLOG(m, ENGY_LOG_WARNING, "event=lock_write_failed path=%s",
		     path);
	m->lock_fd = fd;
	return 0;
}

/* The backend's serve URLs, joined by ",", from its info() (1.1);
 * "" when its info predates them (an in-process engine has none). */
static int serve_urls(struct miner *m)
{
	const struct engy_model_info *i = &m->info;
	size_t need = offsetof(struct engy_model_info, serve_urls) +
		      sizeof(i->serve_urls);

	free(m->serve_urls);
	if (i->size >= need)
		m->serve_urls = strndup(i->serve_urls, sizeof(i->serve_urls));
	else
		m->serve_urls = strdup("");
	return m->serve_urls ? 0 : -ENOMEM;
}

static void metrics_init(struct miner *m)
{
	static const double ttft[] = { 0.05, 0.1, 0.25, 0.5, 1,
				       2.5,  5,	  10,	30,  60 };
	static const double prove[] = {
		0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5
	};
	const struct engy_host *h = m->h;

	h->metric(h, ENGY_METRIC_GAUGE, "engy_miner_inflight",
		  "routed requests in flight", NULL, NULL, 0, &m->m_inflight);
	h->metric(h, ENGY_METRIC_GAUGE, "engy_miner_legs_open",
		  "legs with an open connection to the gateway", NULL, NULL, 0,
		  &m->m_legs);
	h->metric(h, ENGY_METRIC_HISTOGRAM, "engy_miner_ttft_seconds",
		  "time from serve frame to first generated token", NULL, ttft,
		  sizeof(ttft) / sizeof(ttft[0]), &m->m_ttft);
	h->metric(h, ENGY_METRIC_COUNTER, "engy_miner_completion_tokens_total",
		  "tokens generated for routed requests", NULL, NULL, 0,
		  &m->m_tokens);
	h->metric(h, ENGY_METRIC_COUNTER, "engy_miner_prompt_tokens_total",
		  "prompt tokens of routed requests", NULL, NULL, 0,
		  &m->m_prompt);
	h->metric(h, ENGY_METRIC_HISTOGRAM, "engy_miner_prove_seconds",
		  "proof, parse and response framing of a finished request",
		  NULL, prove, sizeof(prove) / sizeof(prove[0]), &m->m_prove);
}

static int wire(struct miner *m)
{
	const struct engy_host *h = m->h;
	struct engy_peer_info pi = { .size = sizeof(pi) }, be = { 0 };
	size_t i;

	for (i = 0; h->peer_at(h, i, &pi) == 0;
	     memset(&pi, 0, sizeof(pi)), pi.size = sizeof(pi), i++) {
		const struct engy_transport_ops *t = pi.ops;

		if (pi.kind == ENGY_KIND_TRANSPORT && !m->t && t && t->proto &&
		    strcmp(t->proto, "ws") == 0 && t->ws_dial && t->ws_send &&
		    t->ws_close && t->ws_leg_close) {
			m->t = t;
			m->ti = pi.inst;
		} else if (pi.kind == ENGY_KIND_BACKEND && !be.ops) {
			be = pi;
		} else if (pi.kind == ENGY_KIND_BACKEND) {
			MLOG(m, ENGY_LOG_WARNING,
			     "event=backend_unused "
			     "instance=%s reason=\"the miner drives one "
			     "backend (%s); "
			     "list several serves in its serve_urls\"",
			     pi.instance, be.instance);
		} else if (pi.kind == ENGY_KIND_PROOF &&
			   m->n_proofs < MINER_MAX_PROOFS) {
			const struct engy_proof_ops *p = pi.ops;

			if (!p || !p->scheme || !p->prove)
				continue;
			m->proofs[m->n_proofs].name = pi.instance;
			m->proofs[m->n_proofs].ops = p;
			m->proofs[m->n_proofs++].inst = pi.inst;
			if (m->n_proofs == 1)
				snprintf(m->ver_proof, sizeof(m->ver_proof),
					 "%s %s", pi.plugin, pi.version);
		}
	}
	if (!m->t || !be.ops || !m->n_proofs) {
		MLOG(m, ENGY_LOG_ERR, "event=miner_unwired reason=\"%s\"",
		     !m->t     ? "no transport with proto ws (transport-ws)"
		     : !be.ops ? "no backend"
			       : "no proof plugin with prove()");
		return -EINVAL;
	}
	m->b = be.ops;
	m->bi = be.inst;
	snprintf(m->ver_backend, sizeof(m->ver_backend), "%s %s", be.plugin,
		 be.version);
	m->versions[0] = "engy";
	m->versions[1] = PACKAGE_VERSION;
	m->versions[2] = "backend";
	m->versions[3] = m->ver_backend;
	m->versions[4] = "proof";
	m->versions[5] = m->ver_proof;
	return 0;
}

static void on_info_timer(evutil_socket_t fd, short what, void *arg);

/* The backend's model: wait for it (a serve may still be loading), then
 * prepare on the pool. */
static void try_info(struct miner *m)
{
	struct timeval tv = { 1, 0 };
	int rc;

	if (m->stopping)
		return;
	memset(&m->info, 0, sizeof(m->info));
	m->info.size = sizeof(m->info);
	rc = m->b->info(m->bi, &m->info);
	if (rc == -EAGAIN) {
		if (m->info_tries++ % 30 == 0)
			MLOG(m, ENGY_LOG_INFO,
			     "event=waiting_for_backend "
			     "reason=\"the backend does not know its model "
			     "yet\"");
		if (!m->info_ev)
			m->info_ev = evtimer_new(m->h->evbase(m->h),
						 on_info_timer, m);
		if (m->info_ev)
			evtimer_add(m->info_ev, &tv);
		return;
	}
	m->info.name[sizeof(m->info.name) - 1] = '\0';
	m->info.path[sizeof(m->info.path) - 1] = '\0';
	if (rc == 0) {
		rc = serve_urls(m);
		if (rc == 0)
			rc = miner_prep_start(m);
	} else {
		MLOG(m, ENGY_LOG_ERR, "event=backend_info_failed error=\"%s\"",
		     strerror(-rc));
	}
	if (rc < 0)
		m->h->shutdown(m->h, 1);
}

static void on_info_timer(evutil_socket_t fd, short what, void *arg)
{
	try_info(arg);
}

static int miner_create(const struct engy_host *h, const void *conf,
			void **inst)
{
	struct miner *m;

	*inst = NULL;
	/* peer_at() and shutdown() came in 1.1, with the role kind. */
	if (h->size < offsetof(struct engy_host, shutdown) +
			      sizeof(h->shutdown) ||
	    !h->peer_at || !h->shutdown) {
		engy_err(h,
			 "event=host_too_old abi=%u.%u reason=\"the role "
			 "needs host services 1.1\"",
			 (unsigned)h->abi_major, (unsigned)h->abi_minor);
		return -ENOTSUP;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->h = h;
	m->c = conf;
	m->lock_fd = -1;
	*inst = m;
	return 0;
}

static int miner_start(void *inst)
{
	struct miner *m = inst;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &m->idle_since);
	rc = check_conf(m);
	if (rc == 0)
		rc = wire(m);
	if (rc == 0)
		rc = take_lock(m);
	if (rc)
		return rc;
	if (engy_httpc_global_init() < 0)
		return -ENOMEM;
	engy_hex_id(m->worker_id, 16);
	metrics_init(m);
	MLOG(m, ENGY_LOG_INFO,
	     "event=miner_start worker_id=%s max_inflight=%lld proofs=%zu",
	     m->worker_id, (long long)m->c->max_inflight, m->n_proofs);
	try_info(m);
	return 0;
}

static void miner_stop(void *inst)
{
	struct miner *m = inst;

	if (!m)
		return;
	m->stopping = true;
	if (m->info_ev)
		evtimer_del(m->info_ev);
	MLOG(m, ENGY_LOG_INFO, "event=miner_stopping inflight=%u legs_open=%u",
	     m->inflight, miner_legs_open(m));
}

static unsigned miner_inflight(void *inst)
{
	struct miner *m = inst;

	return m ? m->inflight : 0;
}

static void miner_destroy(void *inst)
{
	struct miner *m = inst;

	if (!m)
		return;
	miner_reqs_free(m);
	miner_gemm_free(m);
	miner_legs_close(m);
	miner_prep_free(m);
	if (m->hb_ev)
		event_free(m->hb_ev);
	if (m->info_ev)
		event_free(m->info_ev);
	engy_tokenizer_free(m->tok);
	free(m->serve_urls);
	if (m->lock_fd >= 0)
		close(m->lock_fd);
	free(m);
}

static const struct engy_role_need miner_needs[] = {
	{ ENGY_KIND_TRANSPORT, 1, 0,
	  "websocket legs to the gateway (transport-ws)" },
	{ ENGY_KIND_BACKEND, 1, 0, "the inference serve" },
	{ ENGY_KIND_PROOF, 1, MINER_MAX_PROOFS,
	  "proofs attached to every response" },
	{ 0, 0, 0, NULL },
};

static const struct engy_role_ops miner_role_ops = {
	.size = sizeof(struct engy_role_ops),
	.needs = miner_needs,
	.inflight = miner_inflight,
};

ENGY_PLUGIN(.kind = ENGY_KIND_ROLE, .name = "role-miner",
	    .version = PACKAGE_VERSION,
	    .description = "dial the gateway, serve routed requests on a local "
			   "inference serve, prove, answer",
	    .opts = miner_opts, .conf_size = sizeof(struct miner_conf),
	    .create = miner_create, .start = miner_start, .stop = miner_stop,
	    .destroy = miner_destroy, .ops = &miner_role_ops,
	    .check = miner_check);
