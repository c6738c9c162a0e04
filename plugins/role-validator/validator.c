/* SPDX-License-Identifier: MIT */
/*
 * The validator role: the light validator (specs/settlement.md §5,
 * specs/validator.md).  Every poll: fetch the master-signed epoch result,
 * verify it against the pinned master hotkey, decide by the schedule
 * whether to submit, resolve hotkeys to uids on a fresh metagraph, submit
 * set_weights through the chain plugin and wait for its outcome, then
 * write the state file.  A heartbeat file is stamped after every tick and
 * a watchdog ends the process when ticks stop completing.
 *
 * Without a wallet and hotkey named the role stays idle: it says so, and
 * never stamps a heartbeat, so `engyctl validator health` fails.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <event2/event.h>

#include <engy/host.h>
#include <engy/plugin.h>
#include <engy/role.h>

#include "config.h"
#include "httpc.h"
#include "validator_int.h"

#define OFF(f) offsetof(struct val_conf, f)

static const struct engy_opt val_opts[] = {
	{ "wallet", ENGY_OPT_STR, 0, OFF(wallet), NULL, "ENGY_SN53_WALLET", 0,
	  0, "wallet name (btcli --wallet.name)" },
	{ "hotkey", ENGY_OPT_STR, 0, OFF(hotkey), NULL,
	  "ENGY_SN53_WALLET_HOTKEY", 0, 0,
	  "hotkey name (btcli --wallet.hotkey)" },
	{ "wallet_path", ENGY_OPT_STR, 0, OFF(wallet_path),
	  "~/.bittensor/wallets", "BT_WALLET_PATH", 0, 0,
	  "where wallets live" },
	{ "api", ENGY_OPT_STR, 0, OFF(api), NULL, "ENGY_SN53_API", 0, 0,
	  "provider URL (default " VAL_DEFAULT_API
	  "); set together with master_hotkey" },
	{ "master_hotkey", ENGY_OPT_STR, 0, OFF(master_hotkey), NULL,
	  "ENGY_SN53_MASTER_HOTKEY", 0, 0,
	  "the pinned key epoch results are signed with; set together with api" },
	{ "owner_hotkey", ENGY_OPT_STR, 0, OFF(owner_hotkey), NULL,
	  "ENGY_SN53_OWNER_HOTKEY", 0, 0,
	  "where a burn is expected to go (default: the master hotkey)" },
	{ "netuid", ENGY_OPT_INT, 0, OFF(netuid), "53", "ENGY_SN53_NETUID", 0,
	  65535, "the subnet" },
	{ "poll_s", ENGY_OPT_INT, 0, OFF(poll_s), "300", "ENGY_SN53_POLL_S", 1,
	  86400, "seconds between ticks" },
	{ "resubmit_blocks", ENGY_OPT_INT, 0, OFF(resubmit_blocks), "120",
	  "ENGY_SN53_RESUBMIT_BLOCKS", 1, 1000000,
	  "blocks between resubmissions of one epoch's vector" },
	{ "fetch_timeout_s", ENGY_OPT_INT, 0, OFF(fetch_timeout_s), "30", NULL,
	  1, 600, "seconds for one provider request" },
	{ "block_s", ENGY_OPT_INT, 0, OFF(block_s), "12", NULL, 1, 600,
	  "seconds a block, for the clock fallback and the pre-gate (subtensor: "
	  "12)" },
	{ "watchdog_min_s", ENGY_OPT_INT, 0, OFF(watchdog_min_s), "900", NULL,
	  1, 86400,
	  "the watchdog exits after max(3 x poll_s, this) without a completed "
	  "tick" },
	{ "state_file", ENGY_OPT_STR, 0, OFF(state_file), NULL,
	  "ENGY_SN53_STATE_FILE", 0, 0,
	  "default: STATE_DIR/validator-state.json" },
	{ "heartbeat_file", ENGY_OPT_STR, 0, OFF(heartbeat_file), NULL,
	  "ENGY_SN53_HEARTBEAT_FILE", 0, 0,
	  "default: STATE_DIR/validator-heartbeat.json" },
	{ "provider_heartbeat", ENGY_OPT_BOOL, 0, OFF(provider_heartbeat),
	  "true", NULL, 0, 0,
	  "POST a signed heartbeat to the provider after each tick" },
	ENGY_OPT_END
};

static int sign_cb(void *arg, const uint8_t *msg, size_t len, uint8_t sig[64])
{
	struct val *v = arg;

	return engy_sr25519_sign(&v->hk.kp, ENGY_SR25519_SUBSTRATE_CTX, msg,
				 len, sig);
}

/* Create the directories above @path (mode 0700 where made). */
static int mkdir_parents(const char *path)
{
	char *buf = strdup(path), *p;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (p = strchr(buf + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST) {
			rc = -errno;
			break;
		}
		*p = '/';
	}
	free(buf);
	return rc;
}

static char *path_in(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

static int load_hotkey(struct val *v)
{
	const char *base = v->c->wallet_path, *home = getenv("HOME");
	char path[4096], err[512];
	int rc;

	if (strncmp(base, "~/", 2) == 0 && home)
		rc = snprintf(path, sizeof(path), "%s/%s/%s/hotkeys/%s", home,
			      base + 2, v->c->wallet, v->c->hotkey);
	else
		rc = snprintf(path, sizeof(path), "%s/%s/hotkeys/%s", base,
			      v->c->wallet, v->c->hotkey);
	if (rc < 0 || (size_t)rc >= sizeof(path))
		return -ENAMETOOLONG;
	if (strchr(v->c->wallet, '/') || strchr(v->c->hotkey, '/')) {
		val_log(v, ENGY_LOG_ERR,
			"event=bad_option option=wallet reason=\"wallet and "
			"hotkey are names, not paths\"");
		return -EINVAL;
	}
	rc = engy_hotkey_load(&v->hk, path, err, sizeof(err));
	if (rc) {
		val_log(v, ENGY_LOG_ERR, "event=hotkey_unusable error=\"%s\"",
			err);
		return rc;
	}
	if (v->hk.source == ENGY_HOTKEY_PUBLIC_ONLY) {
		val_log(v, ENGY_LOG_ERR,
			"event=hotkey_unusable error=\"%s holds no secret: it "
			"cannot sign\"",
			path);
		return -EINVAL;
	}
	v->signer.size = sizeof(v->signer);
	memcpy(v->signer.account, v->hk.kp.pub, 32);
	v->signer.sign = sign_cb;
	v->signer.arg = v;
	val_log(v, ENGY_LOG_NOTICE, "event=wallet wallet=%s hotkey=%s ss58=%s",
		v->c->wallet, v->c->hotkey, v->hk.ss58);
	return 0;
}

/* api and master_hotkey: both defaults, or both given. */
static int pin_provider(struct val *v)
{
	const char *api = v->c->api, *master = v->c->master_hotkey;
	size_t n;
	int rc;

	/* The public .env.validator names the default provider with an
	 * empty master hotkey: that is the built-in pair, not an override. */
	if (api && !master &&
	    strncmp(api, VAL_DEFAULT_API, strlen(VAL_DEFAULT_API)) == 0 &&
	    strspn(api + strlen(VAL_DEFAULT_API), "/") ==
		    strlen(api + strlen(VAL_DEFAULT_API)))
		master = VAL_DEFAULT_MASTER;
	if (!api != !master) {
		val_log(v, ENGY_LOG_ERR,
			"event=bad_option option=%s reason=\"api and "
			"master_hotkey are overridden together or not at all\"",
			api ? "master_hotkey" : "api");
		return -EINVAL;
	}
	if (!api) {
		api = VAL_DEFAULT_API;
		master = VAL_DEFAULT_MASTER;
	}
	n = strlen(api);
	while (n && api[n - 1] == '/')
		n--;
	if (!n || n >= sizeof(v->api) ||
	    (strncmp(api, "http://", 7) != 0 &&
	     strncmp(api, "https://", 8) != 0)) {
		val_log(v, ENGY_LOG_ERR,
			"event=bad_option option=api reason=\"an http:// or "
			"https:// URL\"");
		return -EINVAL;
	}
	memcpy(v->api, api, n);
	v->api[n] = '\0';
	rc = engy_ss58_decode(master, v->master_pub, NULL);
	if (rc || strlen(master) >= sizeof(v->master)) {
		val_log(v, ENGY_LOG_ERR,
			"event=bad_option option=master_hotkey reason=\"%s\"",
			rc ? engy_ss58_strerror(rc) : "too long");
		return -EINVAL;
	}
	strcpy(v->master, master);
	master = v->c->owner_hotkey ? v->c->owner_hotkey : v->master;
	if (engy_ss58_decode(master, NULL, NULL) ||
	    strlen(master) >= sizeof(v->owner)) {
		val_log(v, ENGY_LOG_ERR,
			"event=bad_option option=owner_hotkey reason=\"not an "
			"SS58 address\"");
		return -EINVAL;
	}
	strcpy(v->owner, master);
	return 0;
}

static void on_tick_timer(evutil_socket_t fd, short what, void *arg)
{
	val_tick_start(arg);
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	struct val *v = arg;
	struct timespec now;
	int64_t idle;

	clock_gettime(CLOCK_MONOTONIC, &now);
	idle = now.tv_sec - v->last_done.tv_sec;
	if (idle <= v->stall_limit_s || v->stopping)
		return;
	val_log(v, ENGY_LOG_ERR,
		"event=watchdog_exit no_tick_s=%lld limit_s=%lld reason=\"no "
		"tick completed: exiting so the supervisor restarts engyd\"",
		(long long)idle, (long long)v->stall_limit_s);
	_exit(1);
}

static int val_create(const struct engy_host *h, const void *conf, void **inst)
{
	struct val *v = calloc(1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	v->h = h;
	v->c = conf;
	*inst = v;
	return 0;
}

static int val_start(void *inst)
{
	struct val *v = inst;
	const struct val_conf *c = v->c;
	const void *ops = NULL;
	void *ci = NULL;
	struct timeval dog;
	int rc;

	if (v->h->peer(v->h, ENGY_KIND_CHAIN, NULL, &ops, &ci) < 0 || !ops)
		return -ENOENT;
	v->ch = ops;
	v->ci = ci;
	rc = pin_provider(v);
	if (rc)
		return rc;
	if (!c->wallet || !c->hotkey || !*c->wallet || !*c->hotkey) {
		val_log(v, ENGY_LOG_ERR,
			"event=idle reason=\"no wallet and hotkey named: set "
			"validator { wallet hotkey } or ENGY_SN53_WALLET and "
			"ENGY_SN53_WALLET_HOTKEY\" effect=\"nothing is "
			"fetched or submitted; health reports no heartbeat\"");
		return 0;
	}
	rc = load_hotkey(v);
	if (rc)
		return rc;
	v->state_path = c->state_file ? strdup(c->state_file)
				      : path_in(v->h->state_dir(v->h),
						"validator-state.json");
	v->hb_path = c->heartbeat_file ? strdup(c->heartbeat_file)
				       : path_in(v->h->state_dir(v->h),
						 "validator-heartbeat.json");
	if (!v->state_path || !v->hb_path)
		return -ENOMEM;
	/* A state file that cannot be written would leave no replay guard. */
	rc = mkdir_parents(v->state_path);
	if (rc) {
		val_log(v, ENGY_LOG_ERR,
			"event=state_dir_failed path=%s error=\"%s\" "
			"effect=\"not started: the replay guard needs the "
			"state file\"",
			v->state_path, strerror(-rc));
		return rc;
	}
	if (engy_httpc_global_init() < 0)
		return -ENOMEM;
	v->stall_limit_s = 3 * c->poll_s > c->watchdog_min_s
				   ? 3 * c->poll_s
				   : c->watchdog_min_s;
	v->tick_ev = evtimer_new(v->h->evbase(v->h), on_tick_timer, v);
	v->dog_ev =
		event_new(v->h->evbase(v->h), -1, EV_PERSIST, on_watchdog, v);
	if (!v->tick_ev || !v->dog_ev)
		return -ENOMEM;
	clock_gettime(CLOCK_MONOTONIC, &v->last_done);
	/* Under a service manager's watchdog, its limit becomes ours. */
	if (getenv("WATCHDOG_USEC") &&
	    v->h->size >= offsetof(struct engy_host, notify) + sizeof(void *) &&
	    v->h->notify) {
		char w[64];

		snprintf(w, sizeof(w), "WATCHDOG_USEC=%lld",
			 (long long)v->stall_limit_s * 1000000LL);
		v->h->notify(v->h, w);
	}
	dog.tv_sec = v->stall_limit_s / 3 > 30 ? 30 : v->stall_limit_s / 3 + 1;
	dog.tv_usec = 0;
	event_add(v->dog_ev, &dog);
	val_log(v, ENGY_LOG_NOTICE,
		"event=validator_start netuid=%lld api=%s master=%s owner=%s "
		"poll_s=%lld resubmit_blocks=%lld state_file=%s "
		"heartbeat_file=%s stall_limit_s=%lld",
		(long long)c->netuid, v->api, v->master, v->owner,
		(long long)c->poll_s, (long long)c->resubmit_blocks,
		v->state_path, v->hb_path, (long long)v->stall_limit_s);
	val_tick_start(v);
	return 0;
}

static void val_stop(void *inst)
{
	struct val *v = inst;

	if (!v)
		return;
	v->stopping = true;
	if (v->tick_ev)
		evtimer_del(v->tick_ev);
	if (v->dog_ev)
		event_del(v->dog_ev);
}

static unsigned val_inflight(void *inst)
{
	struct val *v = inst;

	return v ? v->inflight : 0;
}

static void val_destroy(void *inst)
{
	struct val *v = inst;

	if (!v)
		return;
	if (v->tick_ev)
		event_free(v->tick_ev);
	if (v->dog_ev)
		event_free(v->dog_ev);
	engy_hotkey_wipe(&v->hk);
	free(v->state_path);
	free(v->hb_path);
	engy_valstate_free(&v->recorded);
	free(v);
}

static const struct engy_role_need val_needs[] = {
	{ ENGY_KIND_CHAIN, 1, 1, "weights to chain and metagraph reads" },
	{ 0, 0, 0, NULL },
};

static const struct engy_role_ops val_role_ops = {
	.size = sizeof(struct engy_role_ops),
	.needs = val_needs,
	.inflight = val_inflight,
};

ENGY_PLUGIN(.kind = ENGY_KIND_ROLE, .name = "role-validator",
	    .version = PACKAGE_VERSION,
	    .description = "the light validator: fetch the signed epoch, "
			   "verify, schedule, set weights",
	    .opts = val_opts, .conf_size = sizeof(struct val_conf),
	    .create = val_create, .start = val_start, .stop = val_stop,
	    .destroy = val_destroy, .ops = &val_role_ops, .check = val_check);
