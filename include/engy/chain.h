/* SPDX-License-Identifier: MIT */
/*
 * Chain kind: weights to chain and metagraph reads (chain-subtensor, the
 * devnet's chain-dev).  Everything is network I/O, so every op is
 * asynchronous: it returns at once (0, or a negative errno and then no
 * callback), and its callback comes exactly once, on the loop thread,
 * with a result borrowed for the duration of the call.  An op still
 * running at the instance's stop() completes with status -ECANCELED.
 *
 * Accounts are 32-byte public keys (sr25519); SS58 is the caller's
 * business.  Signing stays with the caller: set_weights() gets a signer,
 * never a secret key.
 *
 * Ops are appended, never reordered (see plugin.h).  1.3 appended
 * commit_weights() (timelocked commit-reveal, CRv3/CRv4: the chain reveals
 * by itself, so there is no reveal op) and the commit-reveal fields at the
 * end of the metagraph and submit results.  Those result structs carry no
 * size: a caller reads the appended fields only from a plugin whose ops
 * table has commit_weights (non-NULL after the host's copy), which is
 * exactly a plugin built against 1.3 or later.
 */
#ifndef ENGY_CHAIN_H
#define ENGY_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <engy/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ENGY_CHAIN_ACCOUNT_BYTES 32
#define ENGY_CHAIN_SIG_BYTES	 64

/* The current best block. */
struct engy_chain_block {
	int status;	   /* 0 or a negative errno */
	const char *error; /* one line when status != 0 */
	uint64_t number;
	uint8_t hash[32];
};

/**
 * struct engy_chain_metagraph - a subnet read at one block.
 * @uids: @n account ids, index = uid (SubtensorModule.Keys).
 * @permit: @n flags (ValidatorPermit); all false when the chain has none.
 * @last_update: @n blocks (LastUpdate); 0 when never.
 * @rate_limit: WeightsSetRateLimit, blocks between two weight settings.
 * @version_key: WeightsVersionKey; set_weights must send at least this.
 * @commit_reveal: CommitRevealWeightsEnabled; while true the chain refuses
 *     set_weights (CommitRevealEnabled) and wants a commit instead.
 * @exists: the subnet exists on this chain.
 *
 * Appended in 1.3 (valid only when the plugin has commit_weights), read
 * from storage at the same block as the rest:
 * @cr_version: the commit-reveal version the chain runs
 *     (CommitRevealWeightsVersion; 3 on a runtime without that item).  Any
 *     value is reported as read; the caller refuses what it cannot speak.
 * @reveal_period: RevealPeriodEpochs, in epochs.
 * @tempo: Tempo, blocks per epoch (minus one).
 * @can_commit: the plugin can commit in @cr_version here (its crypto is
 *     built in and the runtime offers the version's call); when false,
 *     @cr_why says why in one line.
 */
struct engy_chain_metagraph {
	int status;
	const char *error;
	uint64_t block;
	uint8_t block_hash[32];
	uint16_t netuid;
	bool exists;
	size_t n;
	const uint8_t (*uids)[ENGY_CHAIN_ACCOUNT_BYTES];
	const bool *permit;
	const uint64_t *last_update;
	uint64_t rate_limit;
	uint64_t version_key;
	bool commit_reveal;
	/* 1.3 */
	uint16_t cr_version;
	uint64_t reveal_period;
	uint16_t tempo;
	bool can_commit;
	const char *cr_why;
};

/**
 * struct engy_chain_signer - signs for the caller's account.
 * @sign: an sr25519 signature (signing context "substrate") over @len
 *     bytes of @msg into @sig; 0 or a negative errno.  Called on any
 *     thread, possibly after set_weights() returned and before its
 *     callback; the signer must stay valid until the callback.
 */
struct engy_chain_signer {
	uint32_t size; /* sizeof(struct engy_chain_signer) */
	uint8_t account[ENGY_CHAIN_ACCOUNT_BYTES];
	int (*sign)(void *arg, const uint8_t *msg, size_t len,
		    uint8_t sig[ENGY_CHAIN_SIG_BYTES]);
	void *arg;
};

/* One weight vector for one subnet (borrowed for the call). */
struct engy_chain_weights {
	uint32_t size; /* sizeof(struct engy_chain_weights) */
	uint16_t netuid;
	size_t n;
	const uint16_t *uids; /* ascending, distinct */
	const uint16_t *weights;
	uint64_t version_key;
};

/**
 * struct engy_chain_submit - how a submission ended.
 * @status: 0 when the chain answered: the extrinsic is in block @block
 *     (@included; then @success, or @error names the dispatch error by its
 *     runtime name, "SubtensorModule.NeuronNoValidatorPermit"), or the node
 *     refused it before any block (@included false; @error is the node's
 *     reason, "Invalid Transaction: Custom error: 6 (RateLimitExceeded)").
 *     A negative errno when the outcome is unknown or nothing was sent:
 *     -ETIMEDOUT (not seen in a block in time), -ECANCELED, transport
 *     errors, -ENOTSUP (refused by the plugin: commit-reveal on, a runtime
 *     it cannot sign for), with @error saying why.
 * @tx_hash: blake2b-256 of the extrinsic (all zero when none was built).
 *
 * Appended in 1.3, set by commit_weights() only:
 * @commit: this answers a commit; @cr_version the version committed in.
 * @reveal_round: the drand round the weights are encrypted to.
 * @reveal_block: the first block of the epoch the chain reveals in (an
 *     estimate, as the SDK makes it; the chain reveals once it holds the
 *     round's pulse).
 */
struct engy_chain_submit {
	int status;
	const char *error;
	bool included;
	bool success;
	uint64_t block;
	uint8_t block_hash[32];
	uint8_t tx_hash[32];
	/* 1.3 */
	bool commit;
	uint16_t cr_version;
	uint64_t reveal_round;
	uint64_t reveal_block;
};

struct engy_chain_ops {
	uint32_t size; /* sizeof(struct engy_chain_ops) */

	/* block() - the best block's number and hash.  Required. */
	int (*block)(void *inst,
		     void (*done)(void *arg, const struct engy_chain_block *b),
		     void *arg);

	/**
	 * metagraph() - subnet @netuid's accounts by uid, permits and the
	 * weight-setting parameters, all read at one block.  Required.
	 */
	int (*metagraph)(void *inst, uint16_t netuid,
			 void (*done)(void *arg,
				      const struct engy_chain_metagraph *m),
			 void *arg);

	/**
	 * set_weights() - sign and submit SubtensorModule.set_weights for
	 * @w as @s's account, and wait until it is in a block and its
	 * outcome is known (or the plugin's inclusion timeout passes:
	 * status -ETIMEDOUT).  Refuses (-ENOTSUP in the result) when the
	 * subnet has commit-reveal on.  Required.
	 */
	int (*set_weights)(void *inst, const struct engy_chain_weights *w,
			   const struct engy_chain_signer *s,
			   void (*done)(void *arg,
					const struct engy_chain_submit *r),
			   void *arg);

	/**
	 * commit_weights() - (1.3, optional) commit @w timelocked, in the
	 * commit-reveal version the chain runs, as @s's account: build the
	 * payload (version 4 names @s's account as hotkey), the reveal round
	 * and its ciphertext, sign and submit the version's commit call and
	 * wait for its outcome exactly as set_weights() does.  The answer
	 * carries the version, reveal round and reveal block.  Refuses
	 * before submitting anything (status -ENOTSUP or -EINVAL, @error
	 * saying why) when commit-reveal is off, for a version it does not
	 * speak, or when the reveal round would not be in the future.
	 */
	int (*commit_weights)(void *inst, const struct engy_chain_weights *w,
			      const struct engy_chain_signer *s,
			      void (*done)(void *arg,
					   const struct engy_chain_submit *r),
			      void *arg);
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_CHAIN_H */
