/* SPDX-License-Identifier: MIT */
/*
 * Timelocked commit-reveal (subtensor CRv3 and CRv4; specs/commit-reveal.md):
 * the SCALE payload the runtime decrypts, the drand round a commit is
 * encrypted to (as the bittensor SDK computes it), and the commit call,
 * its index and argument types read from the runtime's metadata.  The
 * encryption itself is lib/drand's (blst).
 */
#ifndef ENGY_COMMIT_H
#define ENGY_COMMIT_H

#include <stddef.h>
#include <stdint.h>

#include "metadata.h"
#include "scale.h"

#define ENGY_CR_DRAND_GENESIS	1692803367u /* drand quicknet, unix seconds */
#define ENGY_CR_DRAND_PERIOD	3u
#define ENGY_CR_SECURITY_BLOCKS 3 /* the SDK aims 3 blocks into the epoch */

/*
 * engy_cr_payload() - the plaintext of a commit: version 4 SCALE
 * (hotkey Vec<u8>, uids Vec<u16>, values Vec<u16>, version_key u64),
 * version 3 the same without the hotkey.  -EPROTONOSUPPORT with a reason
 * in @err for any other version.
 */
int engy_cr_payload(unsigned version, const uint8_t hotkey[32],
		    const uint16_t *uids, const uint16_t *weights, size_t n,
		    uint64_t version_key, struct engy_scale_buf *out, char *err,
		    size_t errlen);

struct engy_cr_sched {
	uint16_t netuid;
	uint16_t tempo;		/* SubtensorModule.Tempo */
	uint64_t reveal_period; /* RevealPeriodEpochs, in epochs */
	uint64_t block;		/* the chain's current block */
	double block_time;	/* seconds per block (12 on finney) */
	double now;		/* unix seconds */
};

/*
 * engy_cr_reveal_round() - the drand round to encrypt to and the first
 * block of the reveal epoch: epochs of tempo+1 blocks offset by
 * netuid+1, the reveal epoch reveal_period after the current one, aimed
 * ENGY_CR_SECURITY_BLOCKS into it, that block's time estimated from
 * @block_time, rounded down to a round.  -EINVAL with a reason for a zero
 * tempo or block time, a round that would not be in the future, or an
 * overflow.
 */
int engy_cr_reveal_round(const struct engy_cr_sched *s, uint64_t *round,
			 uint64_t *reveal_block, char *err, size_t errlen);

/*
 * The runtime's stateful epoch schedule (newer subtensor; bittensor-drand
 * 2.x simulates it): an epoch runs at block b when an owner-triggered
 * epoch is pending at or before b, when more than ENGY_CR_MAX_TEMPO blocks
 * passed since the last step, or when b is at least tempo blocks after the
 * last epoch.
 */
#define ENGY_CR_MAX_TEMPO 50400u
struct engy_cr_epochs {
	uint64_t last_epoch_block; /* the block the last epoch ran at */
	uint64_t pending_epoch_at; /* 0: none */
	uint64_t epoch_index;	   /* the subnet's epoch counter */
	uint64_t blocks_since_last_step;
	uint64_t block; /* the chain's current block */
	uint16_t tempo;
};

/*
 * engy_cr_reveal_block_epochs() - the first block whose epoch (counted
 * before that block's own epoch runs) is @reveal_period epochs after the
 * epoch of the block that includes a commit sent now (the next block).
 * -EINVAL for a zero tempo or when no such block comes within
 * (reveal_period + 1) * ENGY_CR_MAX_TEMPO blocks.
 */
int engy_cr_reveal_block_epochs(const struct engy_cr_epochs *s,
				uint64_t reveal_period, uint64_t *reveal_block,
				char *err, size_t errlen);

/*
 * engy_cr_round_for_block() - the drand round for a reveal at
 * @reveal_block: ENGY_CR_SECURITY_BLOCKS later, its time estimated from
 * @block (now) and @block_time, rounded down.  -EINVAL when that round is
 * not after the one drand is at @now.
 */
int engy_cr_round_for_block(uint64_t block, uint64_t reveal_block,
			    double block_time, double now, uint64_t *round,
			    char *err, size_t errlen);

/*
 * Which epoch schedule a runtime runs, told by its metadata: the stateful
 * one when SubtensorModule has SubnetEpochIndex, LastEpochBlock and
 * PendingEpochAt (all maps netuid -> u64) besides BlocksSinceLastStep;
 * the older tempo + 1 schedule (the bittensor SDK 1.x formula) when it
 * has none of the three.
 */
enum engy_cr_schedule {
	ENGY_CR_SCHED_TEMPO = 1,    /* engy_cr_reveal_round() */
	ENGY_CR_SCHED_STATEFUL = 2, /* engy_cr_reveal_block_epochs() */
};

/* The storage items the stateful schedule is read from, in the order
 * struct engy_cr_epochs names them (Tempo is read as well). */
#define ENGY_CR_EPOCH_ITEMS                                                    \
	{                                                                      \
		"LastEpochBlock", "PendingEpochAt", "SubnetEpochIndex",        \
			"BlocksSinceLastStep"                                  \
	}

/*
 * engy_cr_schedule_of() - the schedule the runtime described by @md runs
 * (a positive enum engy_cr_schedule), or -EPROTO with the items named in
 * @err when it has some of the stateful items but not all of them.
 */
int engy_cr_schedule_of(const struct engy_metadata *md, char *err,
			size_t errlen);

/* "stateful" or "tempo", as the log names a schedule. */
const char *engy_cr_schedule_name(int schedule);

/* The commit call a runtime offers for a version. */
struct engy_cr_call {
	unsigned version; /* 3 or 4 */
	uint8_t pallet, call;
	const char *name;
	const struct engy_meta_variant *v;
};

/*
 * engy_cr_find_call() - @version is CommitRevealWeightsVersion as read
 * from storage, or 0 when the runtime has no such item (runtimes before
 * CRv4: then version 3).  Version 3 is SubtensorModule.commit_crv3_weights,
 * 4 commit_timelocked_weights; every argument must be one engy knows by
 * name and type (netuid u16, commit bytes, reveal_round u64,
 * commit_reveal_version u16).  -EPROTONOSUPPORT for another version,
 * -ENOENT when the runtime lacks the call, -EPROTO for other arguments.
 */
int engy_cr_find_call(const struct engy_metadata *md, unsigned version,
		      struct engy_cr_call *c, char *err, size_t errlen);

/* engy_cr_call_encode() - the call's bytes, its arguments in the order
 * the metadata lists them. */
int engy_cr_call_encode(const struct engy_metadata *md,
			const struct engy_cr_call *c, uint16_t netuid,
			const uint8_t *commit, size_t len,
			uint64_t reveal_round, struct engy_scale_buf *out,
			char *err, size_t errlen);

#endif /* ENGY_COMMIT_H */
