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

#include <curl/curl.h>
#include <event2/event.h>

#include "../host.h"
#include "../log.h"
#include "../role.h"
#include "auditor_int.h"
#include "ss58.h"

#define OFF(f) offsetof(struct aud_conf, f)

static const struct engy_opt aud_opts[] = {
	{ "tee_url", ENGY_OPT_STR, 0, OFF(tee_url), NULL, "ENGY_AUDITOR_TEE_URL",
	  0, 0, "the gateway's proof tee (http://host:port/internal/tee); unset: no audits" },
	{ "tee_token", ENGY_OPT_STR, ENGY_OPT_SECRET, OFF(tee_token), NULL,
	  "ENGY_TEE_TOKEN", 0, 0, "bearer token of the tee" },
	{ "sample_ppm", ENGY_OPT_INT, 0, OFF(sample_ppm), "10000", NULL, 0, 1000000,
	  "buyer requests audited, in millionths (probes always are)" },
	{ "pull_s", ENGY_OPT_INT, 0, OFF(pull_s), "5", NULL, 1, 3600,
	  "seconds between pulls from the tee" },
	{ "queue_max", ENGY_OPT_INT, 0, OFF(queue_max), "64", NULL, 1, 100000,
	  "sampled requests held at once (more are dropped, counted)" },
	{ "epoch_s", ENGY_OPT_INT, 0, OFF(epoch_s), "604800", "ENGY_EPOCH_S", 10,
	  31536000, "epoch length; epoch i covers [i * epoch_s, (i + 1) * epoch_s) Unix seconds" },
	{ "netuid", ENGY_OPT_INT, 0, OFF(netuid), "53", "ENGY_SN53_NETUID", 0, 65535,
	  "the subnet" },
	{ "hotkey_file", ENGY_OPT_STR, 0, OFF(hotkey_file), NULL,
	  "ENGY_MASTER_HOTKEY_FILE", 0, 0,
	  "the master hotkey file that signs epochs (mode 0600); unset: no epochs" },
	{ "owner_hotkey", ENGY_OPT_STR, 0, OFF(owner_hotkey), NULL,
	  "ENGY_SN53_OWNER_HOTKEY", 0, 0, "the burn target (default: the master hotkey)" },
	{ "api_prefix", ENGY_OPT_STR, 0, OFF(api_prefix), "/api/subnet/v1", NULL, 0, 0,
	  "where the provider API is served" },
	{ "fetch_timeout_s", ENGY_OPT_INT, 0, OFF(fetch_timeout_s), "10", NULL, 1, 600,
	  "seconds for one pull" },
	ENGY_OPT_END
};

static int load_key(struct aud *a)
{
	const char *path = a->c->hotkey_file;
	char err[512];
	struct stat sb;
	int rc;

	if (!path || !*path) {
		engy_log(ENGY_LOG_WARNING, AUD_LOG,
			 "event=no_master_key effect=\"verdicts are recorded; no epoch is settled or published\"");
		return 0;
	}
	rc = engy_hotkey_load(&a->hk, path, err, sizeof(err));
	if (rc) {
		engy_log(ENGY_LOG_ERR, AUD_LOG, "event=hotkey_unusable error=\"%s\"", err);
		return rc;
	}
	if (a->hk.source == ENGY_HOTKEY_PUBLIC_ONLY) {
		engy_log(ENGY_LOG_ERR, AUD_LOG,
			 "event=hotkey_unusable error=\"%s holds no secret: it cannot sign\"",
			 path);
		return -EINVAL;
	}
	if (stat(path, &sb) == 0 && (sb.st_mode & 077))
		engy_log(ENGY_LOG_WARNING, AUD_LOG,
			 "event=hotkey_mode path=%s mode=%03o advice=\"chmod 600\"",
			 path, (unsigned)(sb.st_mode & 0777));
	a->have_key = true;
	return 0;
}

static int wire(struct aud *a)
{
	struct engyd *d = a->d;
	size_t i;

	for (i = 0; i < d->n_insts; i++) {
		struct engy_instance *in = &d->insts[i];
		const void *ops = in->lp.ops;

		switch (in->lp.desc.kind) {
		case ENGY_KIND_BACKEND:
			if (a->n_be < AUD_MAX_BACKENDS) {
				struct aud_backend *b = &a->be[a->n_be++];
				struct engy_model_info mi = { .size = sizeof(mi) };

				b->ops = ops;
				b->inst = in->inst;
				if (b->ops->info(b->inst, &mi) == 0)
					snprintf(b->name, sizeof(b->name), "%s", mi.name);
				if (!b->ops->prefill) {
					engy_log(ENGY_LOG_ERR, AUD_LOG,
						 "event=backend_unusable instance=%s reason=\"no prefill op\"",
						 in->name);
					return -ENOTSUP;
				}
			}
			break;
		case ENGY_KIND_PROOF:
			if (a->n_pr < AUD_MAX_PROOFS) {
				a->pr[a->n_pr].ops = ops;
				a->pr[a->n_pr].inst = in->inst;
				a->pr[a->n_pr++].name = in->name;
			}
			break;
		case ENGY_KIND_SCORER:
			a->sc = ops;
			a->sci = in->inst;
			break;
		case ENGY_KIND_STORE:
			a->st = ops;
			a->sti = in->inst;
			break;
		case ENGY_KIND_TRANSPORT:
			if (!a->t && ((const struct engy_transport_ops *)ops)->http_route) {
				a->t = ops;
				a->ti = in->inst;
			}
			break;
		}
	}
	if (!a->st || !a->st->verdict_put || !a->st->verdict_list || !a->st->epoch_put ||
	    !a->st->epoch_get) {
		engy_log(ENGY_LOG_ERR, AUD_LOG,
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

static int aud_start(struct engyd *d)
{
	const struct aud_conf *c = d->role_conf;
	struct timeval tv = { 0, 0 };
	struct aud *a;
	const char *owner;
	int rc;

	engy_role_start_common(d);
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	d->role_state = a;
	a->d = d;
	a->c = c;
	rc = wire(a);
	if (!rc)
		rc = load_key(a);
	if (rc)
		return rc;
	owner = c->owner_hotkey ? c->owner_hotkey : a->have_key ? a->hk.ss58 : NULL;
	if (owner && (engy_ss58_decode(owner, NULL, NULL) ||
		      strlen(owner) >= sizeof(a->owner))) {
		engy_log(ENGY_LOG_ERR, AUD_LOG,
			 "event=bad_option option=owner_hotkey reason=\"not an SS58 address\"");
		return -EINVAL;
	}
	if (owner)
		strcpy(a->owner, owner);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -ENOMEM;
	a->pull_ev = event_new(d->base, -1, EV_PERSIST, on_pull, a);
	a->epoch_ev = event_new(d->base, -1, EV_PERSIST, on_epoch, a);
	if (!a->pull_ev || !a->epoch_ev)
		return -ENOMEM;
	if (a->t) {
		rc = aud_api_init(a);
		if (rc)
			return rc;
	}
	/* The epoch in flight now is the next to close. */
	a->next_close = aud_now_ms() / 1000 / c->epoch_s;
	if (c->tee_url && *c->tee_url) {
		tv.tv_sec = c->pull_s;
		event_add(a->pull_ev, &tv);
	} else {
		engy_log(ENGY_LOG_WARNING, AUD_LOG,
			 "event=no_tee effect=\"no request is audited: set auditor { tee_url }\"");
	}
	tv.tv_sec = c->epoch_s < 60 ? 1 : 5;
	event_add(a->epoch_ev, &tv);
	engy_log(ENGY_LOG_NOTICE, AUD_LOG,
		 "event=auditor_start netuid=%lld epoch_s=%lld epoch_current=%lld sample_ppm=%lld backends=%u proofs=%u master=%s owner=%s tee=%s",
		 (long long)c->netuid, (long long)c->epoch_s, (long long)a->next_close,
		 (long long)c->sample_ppm, a->n_be, a->n_pr,
		 a->have_key ? a->hk.ss58 : "-", a->owner[0] ? a->owner : "-",
		 c->tee_url ? c->tee_url : "-");
	if (c->tee_url && *c->tee_url)
		aud_pull_start(a);
	return 0;
}

static void aud_stop(struct engyd *d)
{
	struct aud *a = d->role_state;

	if (!a)
		return;
	a->stopping = true;
	if (a->pull_ev)
		event_del(a->pull_ev);
	if (a->epoch_ev)
		event_del(a->epoch_ev);
}

static unsigned aud_inflight(struct engyd *d)
{
	struct aud *a = d->role_state;

	return a ? a->inflight : 0;
}

static void aud_destroy(struct engyd *d)
{
	struct aud *a = d->role_state;
	struct aud_job *j;

	if (!a)
		return;
	while ((j = a->q_head)) {
		a->q_head = j->next;
		aud_job_free(j);
	}
	if (a->pull_ev)
		event_free(a->pull_ev);
	if (a->epoch_ev) {
		event_free(a->epoch_ev);
		curl_global_cleanup();
	}
	engy_hotkey_wipe(&a->hk);
	free(a);
	d->role_state = NULL;
}

const struct engy_role engy_role_auditor = {
	.name = "auditor",
	.summary = "sample served requests, recompute, verify proofs, record verdicts, settle epochs",
	.needs = {
		{ ENGY_KIND_BACKEND, 1, AUD_MAX_BACKENDS, "recompute on the canonical checkpoint" },
		{ ENGY_KIND_PROOF, 1, AUD_MAX_PROOFS, "proof verification" },
		{ ENGY_KIND_SCORER, 1, 1, "epoch settlement" },
		{ ENGY_KIND_STORE, 1, 1, "verdicts and epochs" },
		{ ENGY_KIND_TRANSPORT, 0, 0, "the provider API listener" },
		{ 0, 0, 0, NULL },
	},
	.opts = aud_opts,
	.conf_size = sizeof(struct aud_conf),
	.start = aud_start,
	.stop = aud_stop,
	.inflight = aud_inflight,
	.destroy = aud_destroy,
};
