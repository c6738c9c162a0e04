/* SPDX-License-Identifier: MIT */
/*
 * The miner's check op (engyd -t, engyctl doctor): the gateway it dials,
 * its key, and its checkpoint: its own option, else the one its backend
 * reports (the backend's own check reports that one), else the serve's
 * model_path, which only start asks for.  Reads the conf; no I/O but
 * stat() and access() of the checkpoint.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <engy/backend.h>
#include <engy/check.h>
#include <engy/plugin.h>

#include "checkfmt.h"
#include "miner_int.h"

/*
 * 1 when a created backend already knows its checkpoint directory (it
 * reports that checkpoint itself), 0 when none does (the serve will say),
 * -ENOENT when no backend was created (setup failed; it says why).
 */
static int backend_has_path(const struct engy_host *h)
{
	struct engy_peer_info pi;
	int found = -ENOENT;
	size_t i;

	if (h->size < offsetof(struct engy_host, peer_at) + sizeof(void *) ||
	    !h->peer_at)
		return -ENOENT;
	for (i = 0;; i++) {
		const struct engy_backend_ops *ops;
		struct engy_model_info mi;

		memset(&pi, 0, sizeof(pi));
		pi.size = sizeof(pi);
		if (h->peer_at(h, i, &pi) < 0)
			break;
		if (pi.kind != ENGY_KIND_BACKEND || !pi.ops)
			continue;
		ops = pi.ops;
		found = 0;
		memset(&mi, 0, sizeof(mi));
		mi.size = sizeof(mi);
		if (ops->info && ops->info(pi.inst, &mi) == 0 && mi.path[0])
			return 1;
	}
	return found;
}

int miner_check(const struct engy_host *h, const void *conf, void *inst,
		const struct engy_check_sink *sink)
{
	const struct miner_conf *c = conf;
	struct engy_check_buf b;
	const char *why = NULL;
	char *meta = NULL;
	int rc;

	(void)inst;
	engy_check_begin(&b, "gateway", ENGY_PROBE_GW_META);
	ENGY_CHECK_SET(&b, target, "%s", c->gw ? c->gw : "");
	engy_check_source(h, "gw", &b);
	if (!c->gw || !*c->gw) {
		ENGY_CHECK_SET(&b, problem, "no gateway URL");
		ENGY_CHECK_SET(&b, fix,
			       "set GW=wss://<gateway-host>/gw (or gw "
			       "in the miner section)");
	} else if (engy_gw_meta_url(c->gw, &meta, &why) < 0) {
		ENGY_CHECK_SET(&b, problem, "%s",
			       why ? why : "not a gateway URL");
		ENGY_CHECK_SET(&b, fix,
			       "set GW to the gateway's ws:// or "
			       "wss:// URL, e.g. wss://api.engy.ai/gw");
	}
	free(meta);
	if ((rc = engy_check_add(sink, &b)) < 0)
		return rc;

	engy_check_begin(&b, "miner key", ENGY_PROBE_NONE);
	engy_check_source(h, "miner_key", &b);
	if (c->miner_key && *c->miner_key) {
		ENGY_CHECK_SET(&b, target, "set");
	} else {
		ENGY_CHECK_SET(&b, target, "not set");
		ENGY_CHECK_SET(&b, source, "MINER_KEY unset");
		/* engyd -t passes: the key may come at start. */
		ENGY_CHECK_SET(&b, problem, "no miner key");
		b.c.warn_only = 1;
		ENGY_CHECK_SET(&b, fix,
			       "set MINER_KEY to the key from "
			       "provider.engy.ai (or miner_key_file, a file "
			       "only this user can read)");
	}
	if ((rc = engy_check_add(sink, &b)) < 0)
		return rc;

	if (c->checkpoint && *c->checkpoint)
		return engy_check_add_checkpoint(h, sink, "checkpoint",
						 c->checkpoint);
	if (backend_has_path(h) != 0)
		return 0;
	engy_check_begin(&b, "checkpoint", ENGY_PROBE_MODEL_PATH);
	ENGY_CHECK_SET(&b, target, "the serve's model_path (asked at start)");
	ENGY_CHECK_SET(&b, source, "default");
	return engy_check_add(sink, &b);
}
