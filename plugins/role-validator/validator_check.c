/* SPDX-License-Identifier: MIT */
/*
 * The validator's check op (engyd -t, engyctl doctor): the provider API it
 * fetches from and the wallet's hotkey it signs with.  The chain is its
 * chain plugin's to report.  Reads the conf and the hotkey file; no
 * network I/O.
 */
#include <string.h>
#include <stdlib.h>

#include <engy/check.h>

#include "checkfmt.h"
#include "validator_int.h"

static int wallet_check(const struct engy_host *h, const struct val_conf *c,
			const struct engy_check_sink *sink)
{
	const char *wallet = c->wallet, *hotkey = c->hotkey;
	const char *base = c->wallet_path, *home = getenv("HOME");
	struct engy_check_buf b;
	struct engy_hotkey hk;
	char err[512];

	engy_check_begin(&b, "wallet", ENGY_PROBE_NONE);
	if (!wallet || !*wallet || !hotkey || !*hotkey) {
		ENGY_CHECK_SET(&b, target, "none named");
		ENGY_CHECK_SET(&b, source, "ENGY_SN53_WALLET unset");
		ENGY_CHECK_SET(&b, problem,
			       "no wallet and hotkey named: the "
			       "validator idles");
		b.c.warn_only = 1;
		ENGY_CHECK_SET(&b, fix,
			       "set ENGY_SN53_WALLET and "
			       "ENGY_SN53_WALLET_HOTKEY to the names btcli "
			       "wallet list shows");
		return engy_check_add(sink, &b);
	}
	if (!base)
		base = "~/.bittensor/wallets";
	if (strncmp(base, "~/", 2) == 0 && home)
		ENGY_CHECK_SET(&b, target, "%s/%s/%s/hotkeys/%s", home,
			       base + 2, wallet, hotkey);
	else
		ENGY_CHECK_SET(&b, target, "%s/%s/hotkeys/%s", base, wallet,
			       hotkey);
	engy_check_source(h, "wallet", &b);
	if (strchr(wallet, '/') || strchr(hotkey, '/')) {
		ENGY_CHECK_SET(&b, problem,
			       "the wallet and hotkey are names, "
			       "not paths");
		ENGY_CHECK_SET(&b, fix,
			       "set ENGY_SN53_WALLET and "
			       "ENGY_SN53_WALLET_HOTKEY to names; "
			       "BT_WALLET_PATH to the directory");
		return engy_check_add(sink, &b);
	}
	if (engy_hotkey_load(&hk, b.target, err, sizeof(err)) < 0) {
		ENGY_CHECK_SET(&b, problem, "%s", err);
		ENGY_CHECK_SET(&b, fix,
			       "check ENGY_SN53_WALLET and "
			       "ENGY_SN53_WALLET_HOTKEY against btcli wallet "
			       "list, BT_WALLET_PATH (default "
			       "~/.bittensor/wallets), and that this user can "
			       "read the hotkey file");
		return engy_check_add(sink, &b);
	}
	if (hk.source == ENGY_HOTKEY_PUBLIC_ONLY) {
		ENGY_CHECK_SET(&b, problem,
			       "the hotkey file holds no secret: "
			       "it cannot sign");
		ENGY_CHECK_SET(&b, fix,
			       "point ENGY_SN53_WALLET_HOTKEY at an "
			       "unencrypted hotkey file with its secret");
	}
	engy_hotkey_wipe(&hk);
	return engy_check_add(sink, &b);
}

int val_check(const struct engy_host *h, const void *conf, void *inst,
	      const struct engy_check_sink *sink)
{
	const struct val_conf *c = conf;
	struct engy_check_buf b;
	int rc;

	(void)inst;
	engy_check_begin(&b, "provider API", ENGY_PROBE_PROVIDER);
	ENGY_CHECK_SET(&b, target, "%s",
		       c->api && *c->api ? c->api : VAL_DEFAULT_API);
	if (c->api && *c->api)
		engy_check_source(h, "api", &b);
	else
		ENGY_CHECK_SET(&b, source, "default");
	if (strncmp(b.target, "http://", 7) != 0 &&
	    strncmp(b.target, "https://", 8) != 0) {
		ENGY_CHECK_SET(&b, problem, "not an http(s) URL");
		ENGY_CHECK_SET(&b, fix,
			       "set ENGY_SN53_API to the provider's "
			       "URL (default " VAL_DEFAULT_API ")");
	}
	if ((rc = engy_check_add(sink, &b)) < 0)
		return rc;
	return wallet_check(h, c, sink);
}
