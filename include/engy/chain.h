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
 * Ops are appended, never reordered (see plugin.h).  A commit-reveal path
 * adds commit_weights() and reveal_weights() after set_weights(), with
 * the same request and result shapes (the reveal carrying its salt).
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
 *     set_weights (CommitRevealEnabled) and wants commit/reveal instead.
 * @exists: the subnet exists on this chain.
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
 */
struct engy_chain_submit {
	int status;
	const char *error;
	bool included;
	bool success;
	uint64_t block;
	uint8_t block_hash[32];
	uint8_t tx_hash[32];
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
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_CHAIN_H */
