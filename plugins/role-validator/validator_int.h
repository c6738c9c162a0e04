/* SPDX-License-Identifier: MIT */
/* The validator role's internals (validator*.c). */
#ifndef ENGY_ROLE_VALIDATOR_INT_H
#define ENGY_ROLE_VALIDATOR_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <engy/engy.h>
#include <engy/host.h>

#include "epoch_sign.h"
#include "hotkey.h"
#include "valsched.h"

/* Protocol constants (specs/settlement.md §5; the public light validator's). */
#define VAL_DEFAULT_API	     "https://provider.engy.ai"
#define VAL_DEFAULT_MASTER   "5DXSBCCKH5ENuyHFNaAvtaMfbhEEWpjSJB4rzc4mJfsc1uvJ"
#define VAL_EPOCH_PATH	     "/api/subnet/v1/epoch/latest"
#define VAL_HEARTBEAT_PATH   "/api/subnet/v1/validator/heartbeat"
#define VAL_MAX_PAYLOAD	     (1u << 20) /* fetch cap: 1 MiB */
#define VAL_WATCHDOG_FLOOR_S 900
/* The role instance is named "validator": the host prefixes it. */
#define val_log(v, lvl, ...) (v)->h->log((v)->h, (lvl), __VA_ARGS__)

struct val_conf {
	const char *wallet;
	const char *hotkey;
	const char *wallet_path;
	const char *api;
	const char *master_hotkey;
	const char *owner_hotkey;
	int64_t netuid;
	int64_t poll_s;
	int64_t resubmit_blocks;
	int64_t fetch_timeout_s;
	int64_t watchdog_min_s;
	int64_t block_s;
	const char *state_file;
	const char *heartbeat_file;
	bool provider_heartbeat;
};

struct event;
struct tick;

struct val {
	const struct engy_host *h;
	const struct val_conf *c;
	const struct engy_chain_ops *ch;
	void *ci;
	bool stopping;
	unsigned inflight; /* chain ops and HTTP jobs out */
	struct engy_hotkey hk;
	struct engy_chain_signer signer;
	char api[512]; /* no trailing slash */
	char master[ENGY_SS58_ADDR_SIZE];
	uint8_t master_pub[32];
	char owner[ENGY_SS58_ADDR_SIZE];
	char *state_path;
	char *hb_path;
	int64_t stall_limit_s;
	struct event *tick_ev;
	struct event *dog_ev;
	struct timespec last_done; /* monotonic: last completed tick */
	struct tick *t;		   /* the tick in progress */
	unsigned n_ticks;
	/* the state this process last recorded (the replay guard's floor) */
	bool has_recorded;
	struct engy_valstate recorded;
	/* the last submission that landed this process: its path and, for a
	 * commit, when the chain reveals it (the heartbeat file says it) */
	char last_path[16]; /* "", "set_weights", "commit_v3", "commit_v4" */
	uint64_t last_reveal_round;
	uint64_t last_reveal_block;
};

/* What a fetch brought back (validator_http.c). */
struct val_fetch {
	int rc; /* 0: @body holds a 200 answer */
	long status;
	char *body;
	size_t len;
	char error[256];
};

struct tick {
	struct val *v;
	int64_t now;
	struct engy_valstate st;
	bool st_on_disk; /* @st is what the state file holds */
	/* the vector this tick works with */
	struct engy_valrow *rows;
	size_t n_rows;
	uint64_t epoch;
	char digest[ENGY_EPOCH_DIGEST_HEX + 1];
	bool fresh;	    /* verified this tick (not the cache) */
	const char *source; /* "payload", "cached", "burn" */
	bool standby;
	bool commit; /* commit-reveal is on: commit_weights, not set_weights */
	uint16_t cr_version;
	bool has_block;
	uint64_t block;
	struct val_fetch fetch;
	struct engy_valresolved res;
	char outcome[320]; /* the tick's one-line summary */
};

/* validator_http.c: blocking work for the pool. */
void val_fetch_run(struct val *v, struct val_fetch *f);
void val_fetch_free(struct val_fetch *f);
/*
 * Queue the provider heartbeat (best effort, never waited for): what the
 * state file @st says was submitted (NULL: liveness only).
 */
void val_provider_heartbeat(struct val *v, const struct engy_valstate *st);

/* validator_tick.c */
void val_tick_start(struct val *v);
/* Finish the tick: one `event=tick` line, the heartbeat, the next tick. */
void val_tick_end(struct tick *t, const char *outcome, const char *fmt, ...)
	ENGY_PRINTF(3, 4);
/* True (and the tick ended) when engyd is stopping. */
bool val_stopped(struct tick *t);
void val_fmt_wait(char *buf, size_t cap, int64_t s);
/* Remember @st as what this process last recorded (after a submission). */
void val_record(struct val *v, const struct engy_valstate *st);

/* validator_submit.c: from the metagraph to the state file. */
void val_after_metagraph(void *arg, const struct engy_chain_metagraph *m);
/* Stamp the heartbeat file (atomically). */
void val_stamp(struct val *v, int64_t now, const char *outcome);

/* The descriptor's check op (validator_check.c). */
int val_check(const struct engy_host *h, const void *conf, void *inst,
	      const struct engy_check_sink *sink);

#endif /* ENGY_ROLE_VALIDATOR_INT_H */
