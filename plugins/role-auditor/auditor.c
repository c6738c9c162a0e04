/* SPDX-License-Identifier: MIT */
/*
 * The auditor role (specs/auditor.md): pull sampled commitments from the
 * gateway's proof tee, recompute prompt + output on the canonical
 * checkpoint, verify every proof scheme, record verdicts; at each epoch's
 * end settle the request log's slice and the verdicts with the scorer,
 * sign result_json with the master hotkey, store the epoch and publish it
 * on the provider API.  Pull-based: a slow or dead auditor never slows
 * serving.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>
#include <sodium.h>

#include <engy/host.h>
#include <engy/plugin.h>
#include <engy/role.h>

#include "config.h"
#include "auditor_int.h"
#include "httpc.h"
#include "ss58.h"

#define OFF(f) offsetof(struct aud_conf, f)

static const struct engy_opt aud_opts[] = {
	{ "tee_url", ENGY_OPT_STR, 0, OFF(tee_url), NULL,
	  "ENGY_AUDITOR_TEE_URL", 0, 0,
	  "the gateway's proof tee (http://host:port/internal/tee); unset: no audits" },
	{ "tee_token", ENGY_OPT_STR, ENGY_OPT_SECRET, OFF(tee_token), NULL,
	  "ENGY_TEE_TOKEN", 0, 0, "bearer token of the tee" },
	{ "sample_ppm", ENGY_OPT_INT, 0, OFF(sample_ppm), "10000", NULL, 0,
	  1000000,
	  "buyer requests audited, in millionths (probes always are)" },
	{ "pull_s", ENGY_OPT_INT, 0, OFF(pull_s), "5", NULL, 1, 3600,
	  "seconds between pulls from the tee" },
	{ "queue_max", ENGY_OPT_INT, 0, OFF(queue_max), "64", NULL, 1, 100000,
	  "sampled requests held at once (more are dropped, counted)" },
	{ "epoch_s", ENGY_OPT_INT, 0, OFF(epoch_s), "604800", "ENGY_EPOCH_S",
	  10, 31536000,
	  "epoch length; epoch i covers [i * epoch_s, (i + 1) * epoch_s) Unix seconds" },
	{ "netuid", ENGY_OPT_INT, 0, OFF(netuid), "53", "ENGY_SN53_NETUID", 0,
	  65535, "the subnet" },
	{ "hotkey_file", ENGY_OPT_STR, 0, OFF(hotkey_file), NULL,
	  "ENGY_MASTER_HOTKEY_FILE", 0, 0,
	  "the master hotkey file that signs epochs (mode 0600); unset: no epochs" },
	{ "owner_hotkey", ENGY_OPT_STR, 0, OFF(owner_hotkey), NULL,
	  "ENGY_SN53_OWNER_HOTKEY", 0, 0,
	  "the burn target (default: the master hotkey)" },
	{ "api_prefix", ENGY_OPT_STR, 0, OFF(api_prefix), "/api/subnet/v1",
	  NULL, 0, 0, "where the provider API is served" },
	{ "fetch_timeout_s", ENGY_OPT_INT, 0, OFF(fetch_timeout_s), "10", NULL,
	  1, 600, "seconds for one pull" },
	{ "spec_root", ENGY_OPT_STR, 0, OFF(spec_root), NULL,
	  "ENGY_AUDITOR_SPEC_ROOT", 0, 0,
	  "the checkpoint's pinned Merkle root (64 hex, engyctl model-spec build); checked at start with the store's spec_root" },
	{ "claim_s", ENGY_OPT_INT, 0, OFF(claim_s), "600", NULL, 1, 86400,
	  "an audit claim on a shared store lapses this long after it was taken (another auditor then takes the job)" },
	{ "gemm_rate", ENGY_OPT_FLOAT, 0, OFF(gemm_rate), "-1",
	  "ENGY_AUDITOR_GEMM_RATE", 0, 0,
	  "GEMM audit: share of audited entries whose miner is asked to open its trace, for every model (needs a proof plugin with challenge(), verifier-gemm); negative: each model's gemm_rate from the store" },
	{ "gemm_open_timeout_s", ENGY_OPT_FLOAT, 0, OFF(gemm_open_timeout_s),
	  "60", NULL, 0, 0,
	  "GEMM audit: the most one POST tee/open may take (above the gateway's gemm_open_timeout_s)" },
	{ "gemm_open_max_bytes", ENGY_OPT_INT, 0, OFF(gemm_open_max_bytes),
	  "16777216", NULL, 1024, (int64_t)1 << 30,
	  "GEMM audit: the largest opening read" },
	{ "gemm_miss_allowance", ENGY_OPT_INT, 0, OFF(gemm_miss_allowance), "2",
	  NULL, 0, 1000000,
	  "GEMM audit: openings a miner may miss per epoch (leg gone, its own error) as unproven; each further one is cheat no_opening" },
	ENGY_OPT_END
};

static int load_key(struct aud *a)
{
	const char *path = a->c->hotkey_file;
	char err[512];
	struct stat sb;
	int rc;

	if (!path || !*path) {
		aud_log(a, ENGY_LOG_WARNING,
			"event=no_master_key effect=\"verdicts are recorded; no epoch is settled or published\"");
		return 0;
	}
	rc = engy_hotkey_load(&a->hk, path, err, sizeof(err));
	if (rc) {
		aud_log(a, ENGY_LOG_ERR, "event=hotkey_unusable error=\"%s\"",
			err);
		return rc;
	}
	if (a->hk.source == ENGY_HOTKEY_PUBLIC_ONLY) {
		aud_log(a, ENGY_LOG_ERR,
			"event=hotkey_unusable error=\"%s holds no secret: it cannot sign\"",
			path);
		return -EINVAL;
	}
	if (stat(path, &sb) == 0 && (sb.st_mode & 077))
		aud_log(a, ENGY_LOG_WARNING,
			"event=hotkey_mode path=%s mode=%03o advice=\"chmod 600\"",
			path, (unsigned)(sb.st_mode & 0777));
	a->have_key = true;
	return 0;
}

static int wire(struct aud *a)
{
	const struct engy_host *h = a->h;
	size_t i;

	if (h->size <
		    offsetof(struct engy_host, peer_at) + sizeof(h->peer_at) ||
	    !h->peer_at)
		return -ENOTSUP; /* a 1.0 host: it refuses a 1.1 plugin anyway */
	for (i = 0;; i++) {
		struct engy_peer_info pi = { .size = sizeof(pi) };
		const void *ops;

		if (h->peer_at(h, i, &pi) < 0)
			break;
		ops = pi.ops;

		switch (pi.kind) {
		case ENGY_KIND_BACKEND:
			if (a->n_be < AUD_MAX_BACKENDS) {
				struct aud_backend *b = &a->be[a->n_be++];
				struct engy_model_info mi = { .size = sizeof(
								      mi) };

				b->ops = ops;
				b->inst = pi.inst;
				if (b->ops->info(b->inst, &mi) == 0)
					snprintf(b->name, sizeof(b->name), "%s",
						 mi.name);
				if (!b->ops->prefill) {
					aud_log(a, ENGY_LOG_ERR,
						"event=backend_unusable instance=%s reason=\"no prefill op\"",
						pi.instance);
					return -ENOTSUP;
				}
			}
			break;
		case ENGY_KIND_PROOF:
			if (a->n_pr < AUD_MAX_PROOFS) {
				a->pr[a->n_pr].ops = ops;
				a->pr[a->n_pr].inst = pi.inst;
				a->pr[a->n_pr++].name = pi.instance;
			}
			break;
		case ENGY_KIND_SCORER:
			a->sc = ops;
			a->sci = pi.inst;
			break;
		case ENGY_KIND_STORE:
			a->st = ops;
			a->sti = pi.inst;
			break;
		case ENGY_KIND_TRANSPORT:
			if (!a->t && ((const struct engy_transport_ops *)ops)
					     ->http_route) {
				a->t = ops;
				a->ti = pi.inst;
			}
			break;
		}
	}
	if (!a->st || !a->st->verdict_put || !a->st->verdict_list ||
	    !a->st->epoch_put || !a->st->epoch_get) {
		aud_log(a, ENGY_LOG_ERR,
			"event=store_unusable reason=\"the store has no verdict and epoch ops (an older plugin)\"");
		return -ENOTSUP;
	}
	return 0;
}

static void on_pull(evutil_socket_t fd, short what, void *arg)
{
	aud_pull_start(arg);
}

static void on_epoch(evutil_socket_t fd, short what, void *arg)
{
	aud_epoch_tick(arg);
}

static int aud_create(const struct engy_host *h, const void *conf, void **inst)
{
	struct aud *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->h = h;
	a->c = conf;
	*inst = a;
	return 0;
}

static int aud_start(void *inst)
{
	struct aud *a = inst;
	const struct aud_conf *c = a->c;
	struct timeval tv = { 0, 0 };
	const char *owner;
	int rc;

	rc = wire(a);
	if (!rc)
		rc = load_key(a);
	if (!rc)
		rc = aud_pin_check(a);
	if (rc)
		return rc;
	owner = c->owner_hotkey ? c->owner_hotkey
		: a->have_key	? a->hk.ss58
				: NULL;
	if (owner && (engy_ss58_decode(owner, NULL, NULL) ||
		      strlen(owner) >= sizeof(a->owner))) {
		aud_log(a, ENGY_LOG_ERR,
			"event=bad_option option=owner_hotkey reason=\"not an SS58 address\"");
		return -EINVAL;
	}
	if (owner)
		strcpy(a->owner, owner);
	if (engy_httpc_global_init() < 0)
		return -ENOMEM;
	a->pull_ev = event_new(a->h->evbase(a->h), -1, EV_PERSIST, on_pull, a);
	a->epoch_ev =
		event_new(a->h->evbase(a->h), -1, EV_PERSIST, on_epoch, a);
	if (!a->pull_ev || !a->epoch_ev)
		return -ENOMEM;
	if (a->t) {
		rc = aud_api_init(a);
		if (!rc)
			rc = aud_pages_init(a);
		if (rc)
			return rc;
	}
	/* The epoch in flight now is the next to close. */
	a->next_close = aud_now_ms() / 1000 / c->epoch_s;
	if (c->tee_url && *c->tee_url) {
		tv.tv_sec = c->pull_s;
		event_add(a->pull_ev, &tv);
	} else {
		aud_log(a, ENGY_LOG_WARNING,
			"event=no_tee effect=\"no request is audited: set auditor { tee_url }\"");
	}
	tv.tv_sec = c->epoch_s < 60 ? 1 : 5;
	event_add(a->epoch_ev, &tv);
	aud_log(a, ENGY_LOG_NOTICE,
		"event=auditor_start netuid=%lld epoch_s=%lld epoch_current=%lld sample_ppm=%lld backends=%u proofs=%u master=%s owner=%s tee=%s",
		(long long)c->netuid, (long long)c->epoch_s,
		(long long)a->next_close, (long long)c->sample_ppm, a->n_be,
		a->n_pr, a->have_key ? a->hk.ss58 : "-",
		a->owner[0] ? a->owner : "-", c->tee_url ? c->tee_url : "-");
	if (a->st->audit_claim) {
		char host[64] = "host";
		unsigned char rnd[4];

		gethostname(host, sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		randombytes_buf(rnd, sizeof(rnd));
		snprintf(a->holder, sizeof(a->holder),
			 "%.40s:%ld:%02x%02x%02x%02x", host, (long)getpid(),
			 rnd[0], rnd[1], rnd[2], rnd[3]);
		aud_log(a, ENGY_LOG_INFO,
			"event=audit_claims holder=%s claim_s=%lld", a->holder,
			(long long)c->claim_s);
	}
	if (c->tee_url && *c->tee_url)
		aud_pull_start(a);
	return 0;
}

static void aud_stop(void *inst)
{
	struct aud *a = inst;

	if (!a)
		return;
	a->stopping = true;
	if (a->pull_ev)
		event_del(a->pull_ev);
	if (a->epoch_ev)
		event_del(a->epoch_ev);
}

static unsigned aud_inflight(void *inst)
{
	struct aud *a = inst;

	return a ? a->inflight : 0;
}

static void aud_destroy(void *inst)
{
	struct aud *a = inst;
	struct aud_job *j;

	if (!a)
		return;
	while ((j = a->q_head)) {
		a->q_head = j->next;
		aud_job_free(j);
	}
	while ((j = a->d_head)) {
		a->d_head = j->next;
		aud_job_free(j);
	}
	if (a->pull_ev)
		event_free(a->pull_ev);
	if (a->epoch_ev)
		event_free(a->epoch_ev);
	engy_hotkey_wipe(&a->hk);
	free(a);
}

static const struct engy_role_need aud_needs[] = {
	{ ENGY_KIND_BACKEND, 1, AUD_MAX_BACKENDS,
	  "recompute on the canonical checkpoint" },
	{ ENGY_KIND_PROOF, 1, AUD_MAX_PROOFS, "proof verification" },
	{ ENGY_KIND_SCORER, 1, 1, "epoch settlement" },
	{ ENGY_KIND_STORE, 1, 1, "verdicts and epochs" },
	{ ENGY_KIND_TRANSPORT, 0, 0, "the provider API listener" },
	{ 0, 0, 0, NULL },
};

static const struct engy_role_ops aud_role_ops = {
	.size = sizeof(struct engy_role_ops),
	.needs = aud_needs,
	.inflight = aud_inflight,
};

ENGY_PLUGIN(.kind = ENGY_KIND_ROLE, .name = "role-auditor",
	    .version = PACKAGE_VERSION,
	    .description =
		    "sample served requests, recompute, verify proofs, record verdicts, settle epochs",
	    .opts = aud_opts, .conf_size = sizeof(struct aud_conf),
	    .create = aud_create, .start = aud_start, .stop = aud_stop,
	    .destroy = aud_destroy, .ops = &aud_role_ops);
