/* SPDX-License-Identifier: MIT */
/*
 * The light validator's pure parts (specs/settlement.md §5): when to submit,
 * how a hotkey vector becomes uids and u16 weights, and the state file.
 * Nothing here reads a clock or touches the network: times and blocks are
 * arguments.
 */
#ifndef ENGY_VALSCHED_H
#define ENGY_VALSCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ss58.h"

#define ENGY_VALSCHED_RESUBMIT_BLOCKS 120   /* SN53's rate limit is 100 */
#define ENGY_VALSCHED_BLOCK_S	      12    /* seconds a block, by the clock */
#define ENGY_VALSCHED_PREGATE_PCT     80    /* of the interval, by the clock */
#define ENGY_VALSCHED_MAX_ROWS	      65536 /* rows of a weight vector */

/* What is known of the last submission (each part may be missing). */
struct engy_valsched_last {
	bool has_applied;
	uint64_t applied; /* epoch index */
	bool has_block;
	uint64_t block; /* block it was submitted at */
	bool has_ts;
	int64_t ts; /* unix seconds */
};

enum engy_valsched_verdict {
	ENGY_VALSCHED_NEW = 1, /* a newer epoch: submit at once */
	ENGY_VALSCHED_DUE,     /* same epoch, interval passed */
	ENGY_VALSCHED_OLDER,   /* older epoch: never (replay guard) */
	ENGY_VALSCHED_NOT_YET, /* same epoch, interval not passed */
};

struct engy_valsched_decision {
	enum engy_valsched_verdict verdict;
	const char *why;      /* a short phrase for the log */
	bool by_block;	      /* decided on block numbers */
	uint64_t wait_blocks; /* NOT_YET: blocks left (by_block) */
	int64_t wait_s;	      /* NOT_YET: seconds left, estimated */
};

/*
 * engy_valsched_decide() - the decision for @epoch given @last, the
 * current block when known (@has_block), the clock @now and the interval
 * in blocks.  Without a block number (or without the last one) it falls
 * back to the clock at @block_s seconds a block (ENGY_VALSCHED_BLOCK_S on
 * subtensor); a clock or a chain that went backwards means due.
 */
void engy_valsched_decide(const struct engy_valsched_last *last, uint64_t epoch,
			  bool has_block, uint64_t block, int64_t now,
			  uint32_t interval, uint32_t block_s,
			  struct engy_valsched_decision *out);

/*
 * engy_valsched_pregate() - before opening the chain for a resubmission
 * of the same epoch: true (skip, *@wait_s seconds left) when less than
 * ENGY_VALSCHED_PREGATE_PCT of the interval has passed by the clock.
 * A new epoch, a missing timestamp or a clock that went back never skip.
 */
bool engy_valsched_pregate(const struct engy_valsched_last *last,
			   uint64_t epoch, int64_t now, uint32_t interval,
			   uint32_t block_s, int64_t *wait_s);

/* One row of a weight vector: a hotkey (SS58) and its u16 weight. */
struct engy_valrow {
	char hotkey[ENGY_SS58_ADDR_SIZE];
	uint16_t weight;
};

/*
 * The state file: the last submission and the cached vector, written all
 * together (atomically) only after a successful submission.  Each field
 * is validated on its own when read; a corrupt one is dropped.
 */
struct engy_valstate {
	struct engy_valsched_last last;
	bool has_cache;
	size_t n_rows;
	struct engy_valrow *rows; /* the cached vector (malloc'd) */
	bool has_digest;
	char digest[65]; /* the cached vector's epoch digest */
	bool has_cached_epoch;
	uint64_t cached_epoch; /* the epoch the cached vector is of */
};

/*
 * engy_valstate_parse() - read a state file's text.  Never fails on bad
 * content: the fields that do not validate are left out and named, comma
 * separated, in @dropped ("" when none; "file" when it is not a JSON
 * object).  Returns 0 or -ENOMEM.
 */
int engy_valstate_parse(const char *text, size_t len, struct engy_valstate *st,
			char *dropped, size_t cap);
/*
 * engy_valstate_claim() - whether the state says the epoch last submitted
 * (last_applied) carried the cached digest, so that it may be reported as
 * that epoch's consensus digest.  Not after a standby submission (a burn,
 * or an older epoch's cached vector: cached_epoch is older).  A file with
 * no cached_epoch (the public light validator's) is taken at its word.
 */
bool engy_valstate_claim(const struct engy_valstate *st);
/* engy_valstate_format() - the file's text (malloc'd), or NULL. */
char *engy_valstate_format(const struct engy_valstate *st);
/* Read @path (a missing file is an empty state, dropped ""). */
int engy_valstate_load(const char *path, struct engy_valstate *st,
		       char *dropped, size_t cap);
/* Write @path atomically (temp file, fsync, rename), mode 0600. */
int engy_valstate_save(const char *path, const struct engy_valstate *st);
void engy_valstate_free(struct engy_valstate *st);
/* Deep copy of @n rows into @st's cache. */
int engy_valstate_set_cache(struct engy_valstate *st,
			    const struct engy_valrow *rows, size_t n);

/*
 * The vector resolved against the metagraph: uids ascending, weights
 * renormalized onto 65535 (floor; the remainder to the row with the
 * largest weight, the lower uid on a tie).  @dropped counts rows whose
 * hotkey has no uid (or is not an SS58 address), @dropped_weight their
 * summed weight and @total the vector's; a hotkey listed twice has its
 * weights summed, and @duplicates counts the rows that repeat a uid
 * (@first_duplicate is the index of the first such row) so that the
 * caller can say so: the chain itself refuses duplicate uids.  @n is 0
 * when nothing lands (no uid, or all zero).
 */
struct engy_valresolved {
	size_t n;
	uint16_t *uids;
	uint16_t *weights;
	size_t dropped;
	uint64_t dropped_weight;
	uint64_t total;
	size_t duplicates;
	size_t first_duplicate;
};

/*
 * engy_valsched_resolve() - map @rows through @hotkeys (the metagraph:
 * @n_uids 32-byte account ids, index = uid).  Returns 0 or -ENOMEM.
 */
int engy_valsched_resolve(const struct engy_valrow *rows, size_t n_rows,
			  const uint8_t (*hotkeys)[32], size_t n_uids,
			  struct engy_valresolved *out);
void engy_valresolved_free(struct engy_valresolved *r);

/*
 * engy_valrows_from_json() - the rows of a verified result_json's
 * "weights" ([[hotkey, weight], ...]).  Returns 0, -EINVAL (with @why)
 * for anything else, -ENOMEM.
 */
int engy_valrows_from_json(const char *result_json, struct engy_valrow **rows,
			   size_t *n, char *why, size_t whylen);

/* The only non-zero hotkey when @rows is a burn (one recipient), or NULL. */
const char *engy_valrows_burn_target(const struct engy_valrow *rows, size_t n);

#endif /* ENGY_VALSCHED_H */
