/* SPDX-License-Identifier: MIT */
/*
 * The light validator role on the fake host, its files linked into the
 * test, with a fake chain peer whose block(), metagraph() and
 * set_weights() answer at once: what start() refuses (no chain, the
 * provider pin, the wallet), that create() does no I/O and destroy()
 * after create() or a refused start() frees everything, and one tick per
 * decision: no payload and no cache, the cache already submitted by the
 * clock (the chain never asked), the cache due (metagraph, resolve,
 * set_weights, the state file written only on success), by the block
 * (not yet), and the chain's answers (refused with its hint, commit-
 * reveal, nothing lands).  The provider answers nothing: its API is
 * 127.0.0.1 port 1, where a connection is refused, so every tick takes
 * the cache path.
 *
 * Oracle: hand-derived from specs/validator.md by the test's author; the
 * fake chain records what the role submits.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include <engy/chain.h>
#include <engy/plugin.h>
#include <engy/role.h>

#include "fake_host.h"
#include "ss58.h"
#include "validator_int.h"

extern const struct engy_plugin engy_plugin;

static struct event_base *base;
static char state[64];

static struct event_base *test_evbase(const struct engy_host *h)
{
	return base;
}

static const char *test_state_dir(const struct engy_host *h)
{
	return state;
}

/* ---- the fake chain ----------------------------------------------------- */

static struct {
	unsigned n_block, n_meta, n_set;
	int block_status;
	uint64_t block;
	struct engy_chain_metagraph mg;
	uint8_t accounts[4][32];
	struct engy_chain_submit sub;
	/* what set_weights() was given */
	size_t n;
	uint16_t uids[8], weights[8];
	uint16_t netuid;
	/* an ABI 1.3 chain: commit_weights() present */
	bool with_commit;
	unsigned n_commit;
} ch;

static int ch_block(void *inst,
		    void (*done)(void *arg, const struct engy_chain_block *b),
		    void *arg)
{
	struct engy_chain_block b = { .status = ch.block_status,
				      .error = ch.block_status ? "down" : NULL,
				      .number = ch.block };

	ch.n_block++;
	done(arg, &b);
	return 0;
}

static int ch_metagraph(void *inst, uint16_t netuid,
			void (*done)(void *arg,
				     const struct engy_chain_metagraph *m),
			void *arg)
{
	ch.n_meta++;
	ch.netuid = netuid;
	done(arg, &ch.mg);
	return 0;
}

static int ch_set_weights(void *inst, const struct engy_chain_weights *w,
			  const struct engy_chain_signer *s,
			  void (*done)(void *arg,
				       const struct engy_chain_submit *r),
			  void *arg)
{
	ch.n_set++;
	ck_assert_uint_le(w->n, 8);
	ch.n = w->n;
	memcpy(ch.uids, w->uids, w->n * sizeof(*w->uids));
	memcpy(ch.weights, w->weights, w->n * sizeof(*w->weights));
	ck_assert_ptr_nonnull(s->sign);
	done(arg, &ch.sub);
	return 0;
}

static const struct engy_chain_ops chain_ops = {
	.size = sizeof(chain_ops),
	.block = ch_block,
	.metagraph = ch_metagraph,
	.set_weights = ch_set_weights,
};

static int ch_commit_weights(void *inst, const struct engy_chain_weights *w,
			     const struct engy_chain_signer *s,
			     void (*done)(void *arg,
					  const struct engy_chain_submit *r),
			     void *arg)
{
	ch.n_commit++;
	ck_assert_uint_le(w->n, 8);
	ch.n = w->n;
	memcpy(ch.uids, w->uids, w->n * sizeof(*w->uids));
	memcpy(ch.weights, w->weights, w->n * sizeof(*w->weights));
	ck_assert_ptr_nonnull(s->sign);
	done(arg, &ch.sub);
	return 0;
}

static const struct engy_chain_ops chain_ops_cr = {
	.size = sizeof(chain_ops_cr),
	.block = ch_block,
	.metagraph = ch_metagraph,
	.set_weights = ch_set_weights,
	.commit_weights = ch_commit_weights,
};

static bool have_chain;

static int test_peer(const struct engy_host *h, uint32_t kind,
		     const char *instance, const void **ops, void **inst)
{
	if (kind != ENGY_KIND_CHAIN || !have_chain)
		return -ENOENT;
	*ops = ch.with_commit ? &chain_ops_cr : &chain_ops;
	*inst = NULL;
	return 0;
}

/* Three miners' accounts: 0x11.., 0x22.., 0x33..; uid i holds account i. */
static char hk[3][ENGY_SS58_ADDR_SIZE];

static void chain_init(void)
{
	size_t i;

	memset(&ch, 0, sizeof(ch));
	for (i = 0; i < 4; i++)
		memset(ch.accounts[i], 0x11 * (int)(i + 1), 32);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(engy_ss58_encode(hk[i], sizeof(hk[i]),
						  ch.accounts[i], 42),
				 48);
	ch.block = 1000;
	ch.mg.exists = true;
	ch.mg.n = 4;
	ch.mg.uids = (const uint8_t(*)[32])ch.accounts;
	ch.mg.version_key = 7;
	ch.sub.included = true;
	ch.sub.success = true;
	ch.sub.block = 1001;
}

/* ---- fixture ------------------------------------------------------------ */

struct fx {
	struct engy_host *h;
	struct val_conf c;
	void *inst;
	char state_file[96], hb_file[96], wallet[96];
};

static void copy_file(const char *from, const char *to)
{
	char buf[4096];
	FILE *in = fopen(from, "r"), *out = fopen(to, "w");
	size_t n;

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(out);
	n = fread(buf, 1, sizeof(buf), in);
	ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
	fclose(in);
	fclose(out);
}

/* Defaults of validator.c's table; a wallet "w" holding the fixtures
 * "plain" (signs) and "public" (cannot); the provider refuses. */
static void fx_init(struct fx *f)
{
	char d[160];

	memset(f, 0, sizeof(*f));
	snprintf(state, sizeof(state), "/tmp/engy-validator.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(state));
	f->h = fake_host_new("validator");
	ck_assert_ptr_nonnull(f->h);
	f->h->evbase = test_evbase;
	f->h->state_dir = test_state_dir;
	f->h->peer = test_peer;
	have_chain = true;
	chain_init();
	snprintf(f->wallet, sizeof(f->wallet), "%s/wallets", state);
	snprintf(d, sizeof(d), "%s/w", f->wallet);
	ck_assert_int_eq(mkdir(f->wallet, 0700), 0);
	ck_assert_int_eq(mkdir(d, 0700), 0);
	snprintf(d, sizeof(d), "%s/w/hotkeys", f->wallet);
	ck_assert_int_eq(mkdir(d, 0700), 0);
	snprintf(d, sizeof(d), "%s/w/hotkeys/plain", f->wallet);
	copy_file(HOTKEY_DATA "/plain", d);
	snprintf(d, sizeof(d), "%s/w/hotkeys/public", f->wallet);
	copy_file(HOTKEY_DATA "/public", d);
	f->c.wallet = "w";
	f->c.hotkey = "plain";
	f->c.wallet_path = f->wallet;
	f->c.api = "http://127.0.0.1:1";
	f->c.master_hotkey = VAL_DEFAULT_MASTER;
	f->c.netuid = 53;
	f->c.poll_s = 300;
	f->c.resubmit_blocks = 120;
	f->c.fetch_timeout_s = 30;
	f->c.block_s = 12;
	f->c.watchdog_min_s = 900;
	f->c.provider_heartbeat = false;
	snprintf(f->state_file, sizeof(f->state_file),
		 "%s/validator-state.json", state);
	snprintf(f->hb_file, sizeof(f->hb_file), "%s/validator-heartbeat.json",
		 state);
}

static int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void fx_free(struct fx *f)
{
	char d[160];

	engy_plugin.destroy(f->inst);
	f->inst = NULL;
	unlink(f->state_file);
	unlink(f->hb_file);
	snprintf(d, sizeof(d), "%s/w/hotkeys/plain", f->wallet);
	unlink(d);
	snprintf(d, sizeof(d), "%s/w/hotkeys/public", f->wallet);
	unlink(d);
	snprintf(d, sizeof(d), "%s/w/hotkeys", f->wallet);
	rmdir(d);
	snprintf(d, sizeof(d), "%s/w", f->wallet);
	rmdir(d);
	rmdir(f->wallet);
	ck_assert_int_eq(rmdir(state), 0);
	fake_host_free(f->h);
}

static int fx_start(struct fx *f)
{
	ck_assert_int_eq(engy_plugin.create(f->h, &f->c, &f->inst), 0);
	return engy_plugin.start(f->inst);
}

static void assert_log(struct fx *f, const char *s)
{
	ck_assert_msg(strstr(fake_host_log(f->h), s), "no \"%s\" in:\n%s", s,
		      fake_host_log(f->h));
}

static void refute_log(struct fx *f, const char *s)
{
	ck_assert_msg(!strstr(fake_host_log(f->h), s), "\"%s\" in:\n%s", s,
		      fake_host_log(f->h));
}

/* A state file: @epoch applied @age_s ago at block @block, caching a
 * vector of miners 0 and 1 at 3:1. */
static void write_state(struct fx *f, uint64_t epoch, int64_t age_s,
			uint64_t block)
{
	struct engy_valstate st = { 0 };
	struct engy_valrow rows[2] = { { "", 49151 }, { "", 16384 } };

	snprintf(rows[0].hotkey, sizeof(rows[0].hotkey), "%s", hk[0]);
	snprintf(rows[1].hotkey, sizeof(rows[1].hotkey), "%s", hk[1]);
	st.last.has_applied = true;
	st.last.applied = epoch;
	st.last.has_block = true;
	st.last.block = block;
	st.last.has_ts = true;
	st.last.ts = (int64_t)time(NULL) - age_s;
	ck_assert_int_eq(engy_valstate_set_cache(&st, rows, 2), 0);
	ck_assert_int_eq(engy_valstate_save(f->state_file, &st), 0);
	engy_valstate_free(&st);
}

static void read_state(struct fx *f, struct engy_valstate *st)
{
	char dropped[128];

	memset(st, 0, sizeof(*st));
	ck_assert_int_eq(
		engy_valstate_load(f->state_file, st, dropped, sizeof(dropped)),
		0);
	ck_assert_str_eq(dropped, "");
}

static char *slurp(const char *path)
{
	static char buf[1024];
	FILE *fp = fopen(path, "r");
	size_t n;

	ck_assert_ptr_nonnull(fp);
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

/* ---- create and start ------------------------------------------------- */

START_TEST(descriptor)
{
	const struct engy_role_ops *ro = engy_plugin.ops;

	ck_assert_uint_eq(engy_plugin.kind, ENGY_KIND_ROLE);
	ck_assert_str_eq(engy_plugin.name, "role-validator");
	ck_assert_uint_eq(engy_plugin.conf_size, sizeof(struct val_conf));
	ck_assert_uint_eq(ro->needs[0].kind, ENGY_KIND_CHAIN);
	ck_assert_uint_eq(ro->needs[0].min, 1);
	ck_assert_uint_eq(ro->needs[0].max, 1);
	ck_assert_uint_eq(ro->needs[1].kind, 0);
}
END_TEST

START_TEST(create_no_io)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(engy_plugin.create(f.h, &f.c, &f.inst), 0);
	ck_assert_str_eq(fake_host_log(f.h), "");
	ck_assert_int_eq(dir_entries(state), 1); /* the wallet only */
	ck_assert_uint_eq(ch.n_block + ch.n_meta + ch.n_set, 0);
	fx_free(&f);
}
END_TEST

START_TEST(refuse_no_chain)
{
	struct fx f;

	fx_init(&f);
	have_chain = false;
	ck_assert_int_eq(fx_start(&f), -ENOENT);
	ck_assert_int_eq(dir_entries(state), 1);
	fx_free(&f);
}
END_TEST

static void refused(struct fx *f, int rc, const char *line)
{
	ck_assert_int_eq(fx_start(f), rc);
	assert_log(f, line);
	ck_assert_int_eq(dir_entries(state), 1); /* no state, no heartbeat */
	ck_assert_uint_eq(ch.n_block, 0);
	fx_free(f);
}

START_TEST(refuse_provider_pin)
{
	struct fx f;

	fx_init(&f);
	f.c.master_hotkey = NULL; /* another api, no master */
	refused(&f, -EINVAL,
		"event=bad_option option=master_hotkey "
		"reason=\"api and master_hotkey are overridden "
		"together");
	fx_init(&f);
	f.c.api = NULL;
	refused(&f, -EINVAL, "event=bad_option option=api reason=\"api and");
	fx_init(&f);
	f.c.api = "ftp://127.0.0.1:1";
	refused(&f, -EINVAL, "event=bad_option option=api reason=\"an http");
	fx_init(&f);
	f.c.api = "///";
	refused(&f, -EINVAL, "event=bad_option option=api reason=\"an http");
	fx_init(&f);
	f.c.master_hotkey = "5notanaddress";
	refused(&f, -EINVAL, "event=bad_option option=master_hotkey reason=");
	fx_init(&f);
	f.c.owner_hotkey = "5notanaddress";
	refused(&f, -EINVAL, "event=bad_option option=owner_hotkey");
	fx_init(&f);
	f.c.wallet = "../w";
	refused(&f, -EINVAL, "reason=\"wallet and hotkey are names, not paths");
	fx_init(&f);
	f.c.hotkey = "public";
	refused(&f, -EINVAL, "holds no secret: it cannot sign");
	fx_init(&f);
	f.c.hotkey = "absent";
	ck_assert_int_ne(fx_start(&f), 0);
	assert_log(&f, "event=hotkey_unusable error=");
	fx_free(&f);
}
END_TEST

/* The default provider named with an empty master (the public
 * .env.validator) is the built-in pair; no wallet: idle, no tick. */
START_TEST(default_provider_idle)
{
	struct fx f;
	struct val *v;

	fx_init(&f);
	f.c.api = VAL_DEFAULT_API "//";
	f.c.master_hotkey = NULL;
	f.c.wallet = "";
	ck_assert_int_eq(fx_start(&f), 0);
	v = f.inst;
	ck_assert_str_eq(v->api, VAL_DEFAULT_API);
	ck_assert_str_eq(v->master, VAL_DEFAULT_MASTER);
	ck_assert_str_eq(v->owner, VAL_DEFAULT_MASTER);
	assert_log(&f, "event=idle reason=\"no wallet and hotkey named");
	refute_log(&f, "event=tick");
	ck_assert_ptr_null(v->tick_ev);
	ck_assert_int_eq(dir_entries(state), 1);
	fx_free(&f);
}
END_TEST

/* ---- ticks ------------------------------------------------------------ */

/* No payload, no cache: skipped, the heartbeat says so, the chain unasked;
 * the watchdog limit is max(3 poll_s, watchdog_min_s). */
START_TEST(tick_no_cache)
{
	struct fx f;
	struct val *v;

	fx_init(&f);
	ck_assert_int_eq(fx_start(&f), 0);
	v = f.inst;
	ck_assert_int_eq(v->stall_limit_s, 900);
	assert_log(&f, "event=wallet wallet=w hotkey=plain ss58=");
	assert_log(&f,
		   "event=fetch_failed url=http://127.0.0.1:1" VAL_EPOCH_PATH
		   " error=");
	assert_log(&f,
		   "event=tick n=1 outcome=skipped reason=\"fetch failed: ");
	assert_log(&f, "no cached vector to fall back on\"");
	ck_assert_ptr_nonnull(strstr(slurp(f.hb_file),
				     "\"stall_limit_s\":900,\"outcome\":"
				     "\"skipped\"}"));
	ck_assert_uint_eq(ch.n_block + ch.n_meta + ch.n_set, 0);
	ck_assert_ptr_null(v->t);
	ck_assert_uint_eq(v->inflight, 0);
	/* a second tick while none runs: n=2 */
	val_tick_start(v);
	assert_log(&f, "event=tick n=2 outcome=skipped");
	engy_plugin.stop(f.inst);
	val_tick_start(v); /* stopping: no tick */
	refute_log(&f, "event=tick n=3");
	fx_free(&f);
}
END_TEST

START_TEST(watchdog_limit)
{
	struct fx f;

	fx_init(&f);
	f.c.poll_s = 400;
	ck_assert_int_eq(fx_start(&f), 0);
	ck_assert_int_eq(((struct val *)f.inst)->stall_limit_s, 1200);
	fx_free(&f);
}
END_TEST

/* The cache, submitted 60 s ago (< 80 % of 120 blocks of 12 s): skipped by
 * the clock before the chain is contacted. */
START_TEST(tick_cached_pregate)
{
	struct fx f;

	fx_init(&f);
	write_state(&f, 41, 60, 900);
	ck_assert_int_eq(fx_start(&f), 0);
	assert_log(&f, "event=fallback_cached epoch=41 rows=2 reason=\"fetch "
		       "failed: ");
	assert_log(&f, "event=tick n=1 outcome=skipped epoch=41 source=cached "
		       "reason=\"epoch 41 already submitted; next resubmit in "
		       "~23 min (not contacting the chain yet)\"");
	ck_assert_uint_eq(ch.n_block + ch.n_meta + ch.n_set, 0);
	fx_free(&f);
}
END_TEST

/* Past the clock's gate, but the block says 100 of 120 blocks: not yet. */
START_TEST(tick_cached_not_yet_by_block)
{
	struct fx f;

	fx_init(&f);
	write_state(&f, 41, 1200, 900);
	ch.block = 1000;
	ck_assert_int_eq(fx_start(&f), 0);
	ck_assert_uint_eq(ch.n_block, 1);
	ck_assert_uint_eq(ch.n_meta, 0);
	assert_log(&f, "outcome=skipped epoch=41 source=cached block=1000 "
		       "reason=\"epoch 41 already submitted; next resubmit in "
		       "20 blocks (~4 min)\"");
	fx_free(&f);
}
END_TEST

/* Due: the metagraph resolves both hotkeys, set_weights gets uids 0, 1 at
 * their weights and the chain's version key; the state file records the
 * block only after success. */
START_TEST(tick_cached_submitted)
{
	struct fx f;
	struct engy_valstate st;

	fx_init(&f);
	write_state(&f, 41, 1200, 900);
	ch.block = 1020;
	ch.sub.block = 1021;
	ck_assert_int_eq(fx_start(&f), 0);
	ck_assert_uint_eq(ch.n_block, 1);
	ck_assert_uint_eq(ch.n_meta, 1);
	ck_assert_uint_eq(ch.netuid, 53);
	ck_assert_uint_eq(ch.n_set, 1);
	ck_assert_uint_eq(ch.n, 2);
	ck_assert_uint_eq(ch.uids[0], 0);
	ck_assert_uint_eq(ch.uids[1], 1);
	ck_assert_uint_eq(ch.weights[0], 49151);
	ck_assert_uint_eq(ch.weights[1], 16384);
	assert_log(&f, "event=schedule epoch=41 decision=due");
	assert_log(&f, "event=not_registered hotkey=");
	assert_log(&f, "event=tick n=1 outcome=submitted epoch=41 "
		       "source=cached standby=no uids=2 block=1021 "
		       "blocks_since_last=121");
	read_state(&f, &st);
	ck_assert(st.last.has_applied);
	ck_assert_uint_eq(st.last.applied, 41);
	ck_assert_uint_eq(st.last.block, 1021);
	ck_assert_int_ge(st.last.ts, (int64_t)time(NULL) - 60);
	ck_assert_uint_eq(st.n_rows, 2); /* the cache kept */
	engy_valstate_free(&st);
	ck_assert_uint_eq(((struct val *)f.inst)->inflight, 0);
	fx_free(&f);
}
END_TEST

/* Included but failed: the hint, nothing recorded. */
START_TEST(tick_submit_failed)
{
	struct fx f;
	struct engy_valstate st;

	fx_init(&f);
	write_state(&f, 41, 1200, 900);
	ch.block = 1020;
	ch.sub.success = false;
	ch.sub.error = "Module(SubtensorModule::NoValidatorPermit)";
	ck_assert_int_eq(fx_start(&f), 0);
	ck_assert_uint_eq(ch.n_set, 1);
	assert_log(&f, "event=tick n=1 outcome=failed epoch=41 source=cached "
		       "block=1001 error=\"Module(SubtensorModule::"
		       "NoValidatorPermit)\" hint=\"no validator permit: ");
	read_state(&f, &st);
	ck_assert_uint_eq(st.last.block, 900);
	engy_valstate_free(&st);
	fx_free(&f);
}
END_TEST

/* Not included: refused, nothing recorded. */
START_TEST(tick_submit_refused)
{
	struct fx f;
	struct engy_valstate st;

	fx_init(&f);
	write_state(&f, 41, 1200, 900);
	ch.block = 1020;
	ch.sub.included = false;
	ch.sub.error = "Priority is too low";
	ck_assert_int_eq(fx_start(&f), 0);
	assert_log(&f,
		   "outcome=refused epoch=41 source=cached error=\"Priority "
		   "is too low\" reason=\"the node refused set_weights; "
		   "nothing recorded\"");
	refute_log(&f, "hint=");
	read_state(&f, &st);
	ck_assert_uint_eq(st.last.block, 900);
	engy_valstate_free(&st);
	fx_free(&f);
}
END_TEST

START_TEST(tick_commit_reveal)
{
	struct fx f;

	fx_init(&f);
	write_state(&f, 41, 1200, 900);
	ch.block = 1020;
	ch.mg.commit_reveal = true;
	ck_assert_int_eq(fx_start(&f), 0);
	ck_assert_uint_eq(ch.n_meta, 1);
	ck_assert_uint_eq(ch.n_set, 0);
	assert_log(&f, "outcome=refused epoch=41 reason=\"commit-reveal is "
		       "enabled on subnet 53");
	fx_free(&f);
}
END_TEST

/* An ABI 1.3 chain with commit-reveal on: the tick commits in the
 * chain's version (never set_weights), the landed commit is the epoch's
 * submission, the log names the path and the reveal. */
START_TEST(tick_commit_lands)
{
	struct fx f;
	struct engy_valstate st;

	fx_init(&f);
	write_state(&f, 41, 1200, 900);
	ch.with_commit = true;
	ch.block = 1020;
	ch.mg.commit_reveal = true;
	ch.mg.cr_version = 4;
	ch.mg.reveal_period = 1;
	ch.mg.tempo = 360;
	ch.mg.can_commit = true;
	ch.sub.block = 1021;
	ch.sub.commit = true;
	ch.sub.cr_version = 4;
	ch.sub.reveal_round = 5000000;
	ch.sub.reveal_block = 1500;
	ck_assert_int_eq(fx_start(&f), 0);
	ck_assert_uint_eq(ch.n_set, 0);
	ck_assert_uint_eq(ch.n_commit, 1);
	ck_assert_uint_eq(ch.n, 2);
	ck_assert_uint_eq(ch.weights[0], 49151);
	assert_log(&f, "event=commit epoch=41 version=4 reveal_period=1 "
		       "tempo=360 uids=2");
	assert_log(&f, "event=tick n=1 outcome=submitted epoch=41 "
		       "source=cached standby=no uids=2 block=1021 "
		       "blocks_since_last=121 path=commit_v4 "
		       "reveal_round=5000000 reveal_block=1500 "
		       "reveal_in_blocks=479");
	read_state(&f, &st);
	ck_assert(st.last.has_applied);
	ck_assert_uint_eq(st.last.applied, 41);
	ck_assert_uint_eq(st.last.block, 1021);
	engy_valstate_free(&st);
	fx_free(&f);
}
END_TEST

/* Bad input: a version engy does not speak, a plugin that cannot commit,
 * a commit the plugin refuses: refused, nothing submitted or recorded. */
START_TEST(tick_commit_refusals)
{
	struct fx f;
	struct engy_valstate st;

	fx_init(&f);
	write_state(&f, 41, 1200, 900);
	ch.with_commit = true;
	ch.block = 1020;
	ch.mg.commit_reveal = true;
	ch.mg.cr_version = 5;
	ch.mg.can_commit = false;
	ch.mg.cr_why = "engy commits in versions 3 and 4 only";
	ck_assert_int_eq(fx_start(&f), 0);
	ck_assert_uint_eq(ch.n_set + ch.n_commit, 0);
	assert_log(&f, "outcome=refused epoch=41 reason=\"commit-reveal is "
		       "enabled on subnet 53 in version 5, which engy does not "
		       "speak (it commits in versions 3 and 4); nothing "
		       "submitted\"");
	fx_free(&f);

	fx_init(&f);
	write_state(&f, 41, 1200, 900);
	ch.with_commit = true;
	ch.block = 1020;
	ch.mg.commit_reveal = true;
	ch.mg.cr_version = 4;
	ch.mg.can_commit = false;
	ch.mg.cr_why = "chain-x was built without blst";
	ck_assert_int_eq(fx_start(&f), 0);
	ck_assert_uint_eq(ch.n_set + ch.n_commit, 0);
	assert_log(&f, "outcome=refused epoch=41 reason=\"commit-reveal is "
		       "enabled on subnet 53 (version 4) and the chain plugin "
		       "cannot commit: chain-x was built without blst; "
		       "nothing submitted\"");
	fx_free(&f);

	fx_init(&f);
	write_state(&f, 41, 1200, 900);
	ch.with_commit = true;
	ch.block = 1020;
	ch.mg.commit_reveal = true;
	ch.mg.cr_version = 4;
	ch.mg.can_commit = true;
	ch.sub.status = -EINVAL;
	ch.sub.commit = true;
	ch.sub.error = "reveal round 9 is not in the future (drand is at "
		       "round 10): nothing to commit to; nothing submitted";
	ck_assert_int_eq(fx_start(&f), 0);
	ck_assert_uint_eq(ch.n_commit, 1);
	assert_log(&f, "outcome=refused epoch=41 source=cached path=commit_v4 "
		       "error=\"reveal round 9 is not in the future");
	refute_log(&f, "outcome=submitted");
	read_state(&f, &st);
	ck_assert_uint_eq(st.last.block, 900);
	engy_valstate_free(&st);
	fx_free(&f);
}
END_TEST

/* Nothing of the vector is registered and neither is the owner: standby
 * has nothing to submit. */
START_TEST(tick_nothing_lands)
{
	struct fx f;

	fx_init(&f);
	write_state(&f, 41, 1200, 900);
	ch.block = 1020;
	ch.mg.n = 0;
	ch.mg.uids = NULL;
	ck_assert_int_eq(fx_start(&f), 0);
	ck_assert_uint_eq(ch.n_set, 0);
	assert_log(&f, "event=hotkeys_dropped vector=cached count=2 of=2 "
		       "weight_share_pct=100.0");
	assert_log(&f, "event=nothing_lands epoch=41 source=cached");
	assert_log(&f, "outcome=skipped epoch=41 reason=\"standby: nothing "
		       "lands");
	fx_free(&f);
}
END_TEST

/* No block number: the clock decides (1200 s >= 120 * 12 s? no: not yet). */
START_TEST(tick_block_unknown)
{
	struct fx f;

	fx_init(&f);
	write_state(&f, 41, 1200, 900);
	ch.block_status = -EIO;
	ck_assert_int_eq(fx_start(&f), 0);
	assert_log(&f, "event=block_unknown error=\"down\"");
	assert_log(&f, "reason=\"epoch 41 already submitted; next resubmit in "
		       "~4 min by the clock\"");
	ck_assert_uint_eq(ch.n_meta, 0);
	fx_free(&f);
}
END_TEST

START_TEST(fmt_wait)
{
	char b[32];

	val_fmt_wait(b, sizeof(b), 0);
	ck_assert_str_eq(b, "~0 s");
	val_fmt_wait(b, sizeof(b), 89);
	ck_assert_str_eq(b, "~89 s");
	val_fmt_wait(b, sizeof(b), 90);
	ck_assert_str_eq(b, "~2 min");
	val_fmt_wait(b, sizeof(b), 149);
	ck_assert_str_eq(b, "~2 min");
	val_fmt_wait(b, sizeof(b), 150);
	ck_assert_str_eq(b, "~3 min");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("role_validator");
	TCase *t = tcase_create("start");

	tcase_add_test(t, descriptor);
	tcase_add_test(t, create_no_io);
	tcase_add_test(t, refuse_no_chain);
	tcase_add_test(t, refuse_provider_pin);
	tcase_add_test(t, default_provider_idle);
	tcase_add_test(t, watchdog_limit);
	suite_add_tcase(s, t);
	t = tcase_create("tick");
	tcase_add_test(t, tick_no_cache);
	tcase_add_test(t, tick_cached_pregate);
	tcase_add_test(t, tick_cached_not_yet_by_block);
	tcase_add_test(t, tick_cached_submitted);
	tcase_add_test(t, tick_submit_failed);
	tcase_add_test(t, tick_submit_refused);
	tcase_add_test(t, tick_commit_reveal);
	tcase_add_test(t, tick_commit_lands);
	tcase_add_test(t, tick_commit_refusals);
	tcase_add_test(t, tick_nothing_lands);
	tcase_add_test(t, tick_block_unknown);
	tcase_add_test(t, fmt_wait);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r;
	int failed;

	base = event_base_new();
	if (!base)
		return 99;
	r = srunner_create(suite());
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	event_base_free(base);
	return failed ? 1 : 0;
}
