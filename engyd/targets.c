/* SPDX-License-Identifier: MIT */
/*
 * engyd -t's report and engyctl doctor's targets.  The host runs no role
 * logic; this only reads the shipped plugins' options by name through their
 * option tables, so a check says exactly what the role would use.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <engy/plugin.h>

#include "chain_network.h"
#include "targets.h"
#include "hotkey.h"
#include "minerproto.h"

#define DEFAULT_API "https://provider.engy.ai"	/* role-validator's */

struct list {
	struct engy_check *v;
	size_t n, cap;
	int rc;
};

static struct engy_check *add(struct list *l, const char *what, int probe)
{
	struct engy_check *c;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		struct engy_check *nv = realloc(l->v, cap * sizeof(*nv));

		if (!nv) {
			l->rc = -ENOMEM;
			return NULL;
		}
		l->v = nv;
		l->cap = cap;
	}
	c = &l->v[l->n++];
	memset(c, 0, sizeof(*c));
	c->what = what;
	c->probe = probe;
	return c;
}

static void set(char *buf, size_t n, const char *fmt, ...)
	ENGY_PRINTF(3, 4);
static void set(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, n, fmt, ap);
	va_end(ap);
}

#define SET(field, ...) set(field, sizeof(field), __VA_ARGS__)

/* An option of one instance, by name, as the host filled it. */
struct val {
	const struct engy_opt *o;
	const void *slot;
};

static bool opt_of(const struct engy_instance *in, const char *name,
		   struct val *out)
{
	const struct engy_opt *o;

	if (!in || !in->conf)
		return false;
	for (o = in->lp.desc.opts; o && o->name; o++)
		if (strcmp(o->name, name) == 0) {
			out->o = o;
			out->slot = (const char *)in->conf + o->offset;
			return true;
		}
	return false;
}

static const char *str_of(const struct engy_instance *in, const char *name)
{
	struct val v;

	if (!opt_of(in, name, &v) || v.o->type != ENGY_OPT_STR)
		return NULL;
	return *(const char *const *)v.slot;
}

/* Where an option's value came from: its twin, the file, or the default. */
static void source_of(const struct engy_instance *in, const char *name,
		      char *buf, size_t n)
{
	struct val v;
	const char *e;

	if (!opt_of(in, name, &v)) {
		snprintf(buf, n, "?");
		return;
	}
	e = v.o->env ? getenv(v.o->env) : NULL;
	if (e && *e)
		snprintf(buf, n, "$%s", v.o->env);
	else if (v.o->def && v.o->type == ENGY_OPT_STR &&
		 *(const char *const *)v.slot &&
		 strcmp(*(const char *const *)v.slot, v.o->def) == 0)
		snprintf(buf, n, "default");
	else
		snprintf(buf, n, "config %s %s", in->name, name);
}

static const struct engy_instance *by_plugin(const struct engyd *d,
					     const char *plugin)
{
	size_t i;

	for (i = 0; i < d->n_insts; i++)
		if (d->insts[i].lp.desc.name &&
		    strcmp(d->insts[i].lp.desc.name, plugin) == 0)
			return &d->insts[i];
	return NULL;
}

static bool is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool readable(const char *dir, const char *file)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	return access(p, R_OK) == 0;
}

static void miner_checks(const struct engyd *d, struct list *l)
{
	const struct engy_instance *m = &d->role_in;
	const struct engy_instance *sgl = by_plugin(d, "backend-sglang");
	const struct engy_instance *ref = by_plugin(d, "backend-ref");
	const struct engy_instance *ck_in = NULL;
	const char *gw = str_of(m, "gw"), *ck = NULL, *key, *why = NULL;
	const char *ck_opt = "checkpoint";
	struct engy_check *c;
	char *meta = NULL;

	if ((c = add(l, "gateway", ENGY_PROBE_GW_META))) {
		SET(c->target, "%s", gw ? gw : "");
		source_of(m, "gw", c->source, sizeof(c->source));
		if (!gw || !*gw) {
			SET(c->problem, "no gateway URL");
			SET(c->fix, "set GW=wss://<gateway-host>/gw (or gw in "
			    "the miner section)");
		} else if (engy_gw_meta_url(gw, &meta, &why) < 0) {
			SET(c->problem, "%s", why ? why : "not a gateway URL");
			SET(c->fix, "set GW to the gateway's ws:// or wss:// "
			    "URL, e.g. wss://api.engy.ai/gw");
		}
		free(meta);
	}
	key = str_of(m, "miner_key");
	if ((c = add(l, "miner key", ENGY_PROBE_NONE))) {
		source_of(m, "miner_key", c->source, sizeof(c->source));
		if (key && *key) {
			SET(c->target, "set");
		} else {
			SET(c->target, "not set");
			SET(c->source, "MINER_KEY unset");
			/* engyd -t passes: the key may come at start. */
			SET(c->problem, "no miner key");
			c->warn_only = 1;
			SET(c->fix, "set MINER_KEY to the key from "
			    "provider.engy.ai (or miner_key_file, a file only "
			    "this user can read)");
		}
	}
	if (sgl) {
		struct val v;

		if ((c = add(l, "serve", ENGY_PROBE_SERVE)) &&
		    opt_of(sgl, "serve_urls", &v) &&
		    v.o->type == ENGY_OPT_STR_LIST) {
			const struct engy_strv *sv = v.slot;
			size_t i, k = 0;

			for (i = 0; i < sv->n; i++)
				k += (size_t)snprintf(c->target + k,
						      k < sizeof(c->target)
							      ? sizeof(c->target) - k
							      : 0,
						      "%s%s", i ? "," : "",
						      sv->v[i]);
			source_of(sgl, "serve_urls", c->source,
				  sizeof(c->source));
			if (v.o->env && (!getenv(v.o->env) ||
					 !*getenv(v.o->env)) &&
			    v.o->def && strcmp(c->target, v.o->def) == 0)
				SET(c->source, "default");
			c->secret = str_of(sgl, "api_key");
			if (!sv->n) {
				SET(c->problem, "no serve");
				SET(c->fix, "set SERVE_URL (or --serve-url) to "
				    "the sglang serve, e.g. "
				    "http://127.0.0.1:8000");
			}
		}
	} else if (ref && (c = add(l, "serve", ENGY_PROBE_NONE))) {
		SET(c->target, "in-process engine (backend-ref)");
		SET(c->source, "config");
	}
	/* The miner's checkpoint, else the backend's, else the serve's. */
	ck = str_of(m, "checkpoint");
	if (ck && *ck) {
		ck_in = m;
	} else if (sgl && (ck = str_of(sgl, "checkpoint")) && *ck) {
		ck_in = sgl;
	} else if (ref && (ck = str_of(ref, "checkpoint")) && *ck) {
		ck_in = ref;
	}
	if (!(c = add(l, "checkpoint", ENGY_PROBE_NONE)))
		return;
	if (!ck_in) {
		SET(c->target, "the serve's model_path (asked at start)");
		SET(c->source, "default");
		return;
	}
	SET(c->target, "%s", ck);
	source_of(ck_in, ck_opt, c->source, sizeof(c->source));
	if (!is_dir(ck))
		SET(c->problem, "no such directory");
	else if (!readable(ck, "config.json"))
		SET(c->problem, "no readable config.json in it");
	else if (!readable(ck, "tokenizer.json"))
		SET(c->problem, "no readable tokenizer.json in it (the miner "
		    "tokenizes with the checkpoint's tokenizer)");
	if (c->problem[0])
		SET(c->fix, "set CHECKPOINT (or --checkpoint) to the model's "
		    "checkpoint directory on this machine, the one the serve "
		    "loaded");
}

static void wallet_check(const struct engy_instance *v, struct list *l)
{
	const char *wallet = str_of(v, "wallet"), *hotkey = str_of(v, "hotkey");
	const char *base = str_of(v, "wallet_path"), *home = getenv("HOME");
	struct engy_check *c = add(l, "wallet", ENGY_PROBE_NONE);
	struct engy_hotkey hk;
	char err[512];

	if (!c)
		return;
	if (!wallet || !*wallet || !hotkey || !*hotkey) {
		SET(c->target, "none named");
		SET(c->source, "ENGY_SN53_WALLET unset");
		SET(c->problem, "no wallet and hotkey named: the validator "
		    "idles");
		c->warn_only = 1;
		SET(c->fix, "set ENGY_SN53_WALLET and ENGY_SN53_WALLET_HOTKEY "
		    "to the names btcli wallet list shows");
		return;
	}
	if (!base)
		base = "~/.bittensor/wallets";
	if (strncmp(base, "~/", 2) == 0 && home)
		SET(c->target, "%s/%s/%s/hotkeys/%s", home, base + 2, wallet,
		    hotkey);
	else
		SET(c->target, "%s/%s/hotkeys/%s", base, wallet, hotkey);
	source_of(v, "wallet", c->source, sizeof(c->source));
	if (strchr(wallet, '/') || strchr(hotkey, '/')) {
		SET(c->problem, "the wallet and hotkey are names, not paths");
		SET(c->fix, "set ENGY_SN53_WALLET and ENGY_SN53_WALLET_HOTKEY "
		    "to names; BT_WALLET_PATH to the directory");
		return;
	}
	if (engy_hotkey_load(&hk, c->target, err, sizeof(err)) < 0) {
		SET(c->problem, "%s", err);
		SET(c->fix, "check ENGY_SN53_WALLET and "
		    "ENGY_SN53_WALLET_HOTKEY against btcli wallet list, "
		    "BT_WALLET_PATH (default ~/.bittensor/wallets), and that "
		    "this user can read the hotkey file");
		return;
	}
	if (hk.source == ENGY_HOTKEY_PUBLIC_ONLY) {
		SET(c->problem, "the hotkey file holds no secret: it cannot "
		    "sign");
		SET(c->fix, "point ENGY_SN53_WALLET_HOTKEY at an unencrypted "
		    "hotkey file with its secret");
	}
	engy_hotkey_wipe(&hk);
}

static void validator_checks(const struct engyd *d, struct list *l)
{
	const struct engy_instance *v = &d->role_in;
	const struct engy_instance *sub = by_plugin(d, "chain-subtensor");
	const char *api = str_of(v, "api");
	struct engy_check *c;

	if ((c = add(l, "provider API", ENGY_PROBE_PROVIDER))) {
		SET(c->target, "%s", api && *api ? api : DEFAULT_API);
		if (api && *api)
			source_of(v, "api", c->source, sizeof(c->source));
		else
			SET(c->source, "default");
		if (strncmp(c->target, "http://", 7) != 0 &&
		    strncmp(c->target, "https://", 8) != 0) {
			SET(c->problem, "not an http(s) URL");
			SET(c->fix, "set ENGY_SN53_API to the provider's URL "
			    "(default " DEFAULT_API ")");
		}
	}
	if (sub && (c = add(l, "chain", ENGY_PROBE_CHAIN))) {
		const char *ep = str_of(sub, "endpoint");
		const char *net = str_of(sub, "network");
		const char *pick = engy_chain_endpoint_pick(ep, net);
		const char *e = getenv("ENGY_SN53_CHAIN_ENDPOINT");

		SET(c->target, "%s", pick ? pick : (net ? net : ""));
		if (e && *e)
			SET(c->source, "$ENGY_SN53_CHAIN_ENDPOINT");
		else if ((e = getenv("ENGY_SN53_NETWORK")) && *e)
			SET(c->source, "$ENGY_SN53_NETWORK=%s", e);
		else if (ep && *ep)
			SET(c->source, "config %s endpoint", sub->name);
		else
			SET(c->source, "network %s", net ? net : "finney");
		if (!pick) {
			SET(c->problem, "unknown network");
			SET(c->fix, "set ENGY_SN53_NETWORK to "
			    ENGY_CHAIN_NETWORKS ", or ENGY_SN53_CHAIN_ENDPOINT "
			    "to a node's URL");
		}
	} else if (by_plugin(d, "chain-dev") &&
		   (c = add(l, "chain", ENGY_PROBE_NONE))) {
		const char *f = str_of(by_plugin(d, "chain-dev"), "file");

		SET(c->target, "chain-dev file %s", f ? f : "");
		SET(c->source, "config");
	}
	wallet_check(v, l);
}

int engyd_checks(const struct engyd *d, struct engy_check **out, size_t *n)
{
	struct list l = { 0 };

	*out = NULL;
	*n = 0;
	if (!d->has_role || !d->role_in.conf || !d->role_in.name)
		return 0;
	if (strcmp(d->role_in.name, "miner") == 0)
		miner_checks(d, &l);
	else if (strcmp(d->role_in.name, "validator") == 0)
		validator_checks(d, &l);
	if (l.rc) {
		free(l.v);
		return l.rc;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}
