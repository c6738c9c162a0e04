/* SPDX-License-Identifier: MIT */
/*
 * A third party's role, built against the installed SDK alone: it needs
 * one proof plugin, lists every peer the host offers when it starts, and
 * then asks the host to stop with the exit code of its `exit_code` option.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <engy/plugin.h>
#include <engy/proof.h>
#include <engy/role.h>

struct oot_conf {
	int64_t exit_code;
};

struct oot {
	const struct engy_host *h;
	const struct oot_conf *c;
	unsigned polls;
};

static const struct engy_opt oot_opts[] = {
	{ "exit_code", ENGY_OPT_INT, 0, offsetof(struct oot_conf, exit_code),
	  "0", "OOT_EXIT_CODE", 0, 125, "what engyd exits with" },
	ENGY_OPT_END,
};

static int oot_create(const struct engy_host *h, const void *conf, void **inst)
{
	struct oot *o = calloc(1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	o->h = h;
	o->c = conf;
	*inst = o;
	return 0;
}

static void oot_quit(void *arg)
{
	struct oot *o = arg;

	o->h->shutdown(o->h, (int)o->c->exit_code);
}

static int oot_start(void *inst)
{
	struct oot *o = inst;
	struct engy_peer_info pi = { .size = sizeof(pi) };
	const struct engy_proof_ops *p = NULL;
	void *pinst = NULL;
	size_t i;

	if (o->h->size < offsetof(struct engy_host, shutdown) + sizeof(void *))
		return -ENOTSUP; /* a host older than ABI 1.1 */
	for (i = 0; o->h->peer_at(o->h, i, &pi) == 0; i++)
		o->h->log(
			o->h, ENGY_LOG_NOTICE,
			"event=oot_peer index=%zu instance=%s plugin=%s kind=%u",
			i, pi.instance, pi.plugin, pi.kind);
	if (o->h->peer(o->h, ENGY_KIND_PROOF, NULL, (const void **)&p,
		       &pinst) ||
	    !p || !p->scheme)
		return -EINVAL;
	o->h->log(o->h, ENGY_LOG_NOTICE, "event=oot_wired peers=%zu scheme=%s",
		  i, p->scheme);
	return o->h->timer_add(o->h, 1, 0, oot_quit, o, NULL);
}

static unsigned oot_inflight(void *inst)
{
	struct oot *o = inst;

	/* One poll with work left, to show the drain waits for it. */
	return o->polls++ == 0;
}

static void oot_destroy(void *inst)
{
	free(inst);
}

static const struct engy_role_need oot_needs[] = {
	{ ENGY_KIND_PROOF, 1, 1, "a proof scheme to name" },
	{ 0, 0, 0, NULL },
};

static const struct engy_role_ops oot_ops = {
	.size = sizeof(struct engy_role_ops),
	.needs = oot_needs,
	.inflight = oot_inflight,
};

ENGY_PLUGIN(.kind = ENGY_KIND_ROLE, .name = "role-oot", .version = "0.1",
	    .description = "an out-of-tree role: lists its peers, then stops",
	    .opts = oot_opts, .conf_size = sizeof(struct oot_conf),
	    .create = oot_create, .start = oot_start, .destroy = oot_destroy,
	    .ops = &oot_ops);
