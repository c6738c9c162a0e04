/* SPDX-License-Identifier: MIT */
/*
 * Store kind: accounts, API keys, balances and reservations, models with
 * their limits and price cards, registered miners, the metadata request
 * log; the auditor's verdicts and signed epochs (store-sqlite,
 * store-postgres).  specs/store.md is the contract: schema, money rules,
 * retention.
 *
 * Every op except key_hash() blocks on storage: the flows call them from
 * the worker pool (engy_host.work()), never on the loop thread.  One
 * instance serves many pool threads at once; every op is thread-safe and
 * every write is one transaction.  Data in and out are plain C structs;
 * nothing of the storage engine (SQL, handles) crosses this table.
 *
 * Money is integer micro-USD (µUSD) in int64_t, never floating point.
 * Times are Unix milliseconds.  Errors are 0 or a negative errno:
 * -EINVAL bad input (named in one log line), -ENOENT no such row,
 * -EEXIST a duplicate name, -EDQUOT a balance that cannot cover a
 * reservation (the gateway's 402), -EBUSY storage locked past the busy
 * timeout, -EIO anything else the storage reported (logged).  Arrays
 * returned through `T **out, size_t *n` hold plain structs (no pointers),
 * are allocated with malloc() and released by the caller with one free();
 * an empty result is *out = NULL, *n = 0.
 *
 * Ops are appended, never reordered (plugin.h); the auditor's verdict and
 * epoch ops follow log_prune(), then (1.3) audit_claim() and
 * holds_open().  The buyer's content (prompts, completions, token ids)
 * never reaches a store: no op takes it, no struct holds it.
 */
#ifndef ENGY_STORE_H
#define ENGY_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <engy/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ENGY_STORE_HASH_BYTES 32
/* The largest amount anywhere (balance, top-up, cost): $1e9. */
#define ENGY_STORE_MONEY_MAX 1000000000000000ll

enum engy_key_status {
	ENGY_KEY_ACTIVE = 1,
	ENGY_KEY_REVOKED = 2,
};

enum engy_miner_status {
	ENGY_MINER_ACTIVE = 1,	 /* admitted when it says hello */
	ENGY_MINER_DISABLED = 2, /* refused at hello */
};

enum engy_model_status {
	ENGY_MODEL_ENABLED = 1,	 /* served */
	ENGY_MODEL_DISABLED = 2, /* known, not served */
};

/* Rates in µUSD per 1,000,000 tokens (lib/money/billing.h does the sums). */
struct engy_price_card {
	int64_t input;	      /* uncached prompt tokens */
	int64_t cached_input; /* prompt tokens served from cache */
	int64_t output;	      /* completion tokens */
};

/**
 * struct engy_account - a buyer account and its money.
 * @balance_micro:  settled money, credited - spent, never negative.
 * @reserved_micro: held by open reservations, never above the balance;
 *                  what a new reservation can take is balance - reserved.
 * @credited_micro: every top-up so far.  @spent_micro: every charge.
 */
struct engy_account {
	int64_t id;
	int64_t balance_micro;
	int64_t reserved_micro;
	int64_t credited_micro;
	int64_t spent_micro;
	int64_t created_ms;
	char name[64];
};

/**
 * struct engy_api_key - a buyer key; the key text itself is never stored.
 * @shown: the leading "sk-engy-XXXX" for an operator to recognise it.
 * @revoked_ms: 0 while active.
 */
struct engy_api_key {
	int64_t id;
	int64_t account_id;
	int64_t created_ms;
	int64_t revoked_ms;
	uint32_t status; /* enum engy_key_status */
	char shown[16];
	char label[64];
};

/**
 * struct engy_model - a buyer-facing model: its spec (specs/protocol.md §6,
 * specs/settlement.md §2) and its price card.
 * @max_input_tokens/@max_output_tokens/@max_request_s: request limits
 *     every miner of the model gets (a miner can only lower them).
 * @toploc_topk/@toploc_v: TOPLOC top-k and per-chunk mismatch threshold.
 * @toploc_p_ppm: share of chunks that must pass, in millionths (990000).
 * @toploc_mant_mean_centi/@toploc_mant_median_centi: a chunk's largest
 *     mantissa mean / median, in hundredths (200 = 2.00); 0 = not checked
 *     (ABI 1.1: they sit in what was padding, so callers zero the struct).
 * @qual_ttft_p99_ms/@qual_tpot_p99_ms: qualification and scoring ceilings.
 * @score_rate: µUSD per 1k tokens for scoring (not the buyer's price).
 * @gemm_layers/@gemm_tokens/@gemm_projections/@gemm_spots: the GEMM
 *     audit's sizes (specs/gemm-audit.md §6); 0 = the verifier's own
 *     option of the same name.
 * @gemm_z_milli/@gemm_c_el_milli: its tolerance multipliers, in
 *     thousandths (6000 = 6.0); 0 = the verifier's own.
 * @gemm_rate_ppm: share of audited requests opened, in millionths
 *     (50000 = 0.05; 0 = none), unless the auditor's gemm_rate is set.
 *     The gemm_* fields are appended in ABI 1.4 (sizeof 208 -> 240): a
 *     store plugin and its callers are built with the same headers.
 */
struct engy_model {
	char name[128];
	uint32_t status; /* enum engy_model_status */
	uint32_t max_input_tokens;
	uint32_t max_output_tokens;
	uint32_t max_request_s;
	uint32_t toploc_topk;
	uint32_t toploc_v;
	uint32_t toploc_p_ppm;
	uint32_t qual_ttft_p99_ms;
	uint32_t qual_tpot_p99_ms;
	uint16_t toploc_mant_mean_centi;
	uint16_t toploc_mant_median_centi;
	int64_t score_rate;
	struct engy_price_card price;
	int64_t updated_ms; /* out only */
	/* appended in 1.4 */
	uint32_t gemm_layers;
	uint32_t gemm_tokens;
	uint32_t gemm_projections;
	uint32_t gemm_spots;
	uint32_t gemm_z_milli;
	uint32_t gemm_c_el_milli;
	uint32_t gemm_rate_ppm;
	uint32_t gemm_pad; /* zero */
};

/**
 * struct engy_model_root - one accepted checkpoint of a model (each
 * quantization is its own root under one buyer-facing name).
 * @root: the identity miners send as hello.model_root.
 * @spec_root: the published weight commitment (the model spec file's
 *     model_root) auditors hold the checkpoint to; zeros when unknown.
 */
struct engy_model_root {
	uint8_t root[ENGY_STORE_HASH_BYTES];
	uint8_t spec_root[ENGY_STORE_HASH_BYTES];
	char model[128];
	char quant[32];	  /* "fp8", "nvfp4", ... may be "" */
	char arch[32];	  /* the spec's config.arch, may be "" */
	int64_t added_ms; /* out only */
};

/**
 * struct engy_miner - a registered miner: its MINER_KEY is stored hashed,
 * its hotkey (SS58) is where its score is paid.
 * @first_party: the trusted 1st-party cluster (always eligible).
 * @priority: routing bias; 0 = none.
 * @key_shown: the leading "mk-engy-XXXX" of its key.
 */
struct engy_miner {
	int64_t id;
	int64_t created_ms;
	int64_t updated_ms;
	uint32_t status;      /* enum engy_miner_status */
	uint32_t first_party; /* 0 or 1 */
	int32_t priority;
	char hotkey[64];
	char label[64];
	char key_shown[16];
};

/**
 * struct engy_request_row - one served (or refused) request, metadata
 * only: what specs/settlement.md §2 scores from, and what a buyer's bill shows.
 * @id: assigned by the store (ignored on the way in).
 * @time_ms: when the request arrived.
 * @key_id/@account_id: 0 when none (probe or internal traffic).
 * @status: the HTTP status the buyer got (499: the buyer hung up).
 * @ttft_ms/@tpot_ms: time to first token, mean time per output token.
 * @cost_micro: what the buyer paid for it.
 * @miner: the serving miner's hotkey, "" when none was picked.
 * @is_probe: 1 for onboarding probe traffic (never scores).
 */
struct engy_request_row {
	int64_t id;
	int64_t time_ms;
	int64_t key_id;
	int64_t account_id;
	int64_t cost_micro;
	uint32_t status;
	uint32_t prompt_tokens;
	uint32_t completion_tokens;
	uint32_t cached_tokens;
	uint32_t ttft_ms;
	uint32_t tpot_ms;
	uint32_t is_probe;
	char request_id[64];
	char model[128];
	char miner[64];
	char worker_name[64];
};

/**
 * struct engy_log_query - which request-log rows to read.
 * Rows come in id order (ascending), or the newest first with
 * @newest_first (a tail).  Zero means "no bound" for each filter.
 * @since_ms/@until_ms: since_ms <= time_ms < until_ms.
 * @after_id: id > after_id (the cursor of an ascending scan).
 * @limit: at most this many rows; 0 = 100; clamped to the store's cap.
 */
struct engy_log_query {
	uint32_t size; /* sizeof(struct engy_log_query) */
	uint32_t limit;
	int64_t since_ms;
	int64_t until_ms;
	int64_t after_id;
	int64_t account_id;
	uint32_t newest_first;
};

/**
 * struct engy_verdict - the auditor's verdict on one sampled request under
 * one proof scheme: metadata and statistics only (never token ids,
 * prompts or outputs).
 * @id: assigned by the store (ignored on the way in).
 * @time_ms: when the verdict was rendered (epochs count verdicts by it).
 * @request_time_ms: when the request arrived at the gateway.
 * @verdict: enum engy_verdict_kind (pass, cheat, unproven).
 * @chunks/@passed: chunks judged and chunks within the limits.
 * @topk: the scheme's points per chunk (a score is mismatches / topk).
 * @exp_p99/@exp_max: nearest-rank p99 and maximum of the per-chunk
 *     exponent mismatch counts; the P99 chunk score is exp_p99 / topk.
 * @mant_mean_max_milli/@mant_median_max_milli: the largest per-chunk
 *     mantissa mean and median, in thousandths (integers, exact).
 * @limit_v/@limit_p_ppm: the thresholds it was judged by.
 * @scheme: "toploc"; @reason: the plugin's reason ("ok", "exp_mismatch").
 */
struct engy_verdict {
	int64_t id;
	int64_t time_ms;
	int64_t request_time_ms;
	uint32_t verdict;
	uint32_t is_probe;
	uint32_t chunks;
	uint32_t passed;
	uint32_t topk;
	uint32_t exp_p99;
	uint32_t exp_max;
	uint32_t limit_v;
	uint32_t limit_p_ppm;
	uint32_t mant_mean_max_milli;
	uint32_t mant_median_max_milli;
	uint32_t pad;
	char scheme[32];
	char reason[64];
	char request_id[64];
	char miner[64];
	char model[128];
};

/**
 * struct engy_verdict_query - which verdicts to read, like
 * struct engy_log_query: id order, or newest first; 0 = no bound.
 * @miner: only this hotkey's when not "".
 */
struct engy_verdict_query {
	uint32_t size; /* sizeof(struct engy_verdict_query) */
	uint32_t limit;
	int64_t since_ms;
	int64_t until_ms;
	int64_t after_id;
	uint32_t newest_first;
	char miner[64];
};

/**
 * struct engy_epoch_rec - a closed, signed epoch.  Its documents (the
 * signed payload of specs/settlement.md §4 and the public aggregates of
 * specs/scoring.md §5) travel beside it as malloc'd texts.
 * @start_ms/@end_ms: the slice of the request log it settled.
 */
struct engy_epoch_rec {
	int64_t epoch_index;
	int64_t start_ms;
	int64_t end_ms;
	int64_t closed_ms;
	uint32_t burn;
	uint32_t n_weights;
	char digest[72]; /* lower-case hex SHA-256 */
};

/**
 * struct engy_settle - one item of settle_batch().
 * @reservation_id: the hold to charge; 0 for a row without one, appended
 *                  as log_append() appends it (@row required, @keep 0).
 * @cost_micro:     the charge (0..ENGY_STORE_MONEY_MAX), capped as
 *                  settle() caps it: never into other holds' money.
 * @row:            appended to the request log in the same transaction
 *                  with the reservation's account and key and cost_micro =
 *                  the charge; may be NULL.
 * @keep:           0: close the reservation as settle() does (the rest of
 *                  it goes back to the balance); 1: keep it open, its
 *                  amount lowered by the charge (a gateway's lease, which
 *                  backs the holds of many requests).
 * @rc:             out: 0, -ENOENT or -EINVAL for this item.
 * @charged:        out: what was charged (0 unless @rc is 0).
 */
struct engy_settle {
	int64_t reservation_id;
	int64_t cost_micro;
	const struct engy_request_row *row;
	int32_t keep;
	int32_t rc;
	int64_t charged;
};

struct engy_store_ops {
	uint32_t size; /* sizeof(struct engy_store_ops) */

	/**
	 * key_hash() - the stored form of a key text (@len bytes, 1..512):
	 * HMAC-SHA-256 under the instance's pepper (lib/money/apikey.h), for
	 * key_lookup() and miner_lookup() and a caller's own cache.
	 * Context: any thread, non-blocking (CPU only).  Required.
	 */
	int (*key_hash)(void *inst, const char *key, size_t len,
			uint8_t hash[ENGY_STORE_HASH_BYTES]);

	/**
	 * account_create() - a new account named @name (1..63 printable
	 * characters, unique: -EEXIST), balance 0; @out gets it.
	 * Context: any thread, blocking; called from the worker pool.
	 * Required.
	 */
	int (*account_create)(void *inst, const char *name,
			      struct engy_account *out);

	/* account_get() - by id (-ENOENT).  Context: any thread, blocking;
	 * called from the worker pool.  Required. */
	int (*account_get)(void *inst, int64_t id, struct engy_account *out);

	/* account_by_name() - by name (-ENOENT).  Context: any thread,
	 * blocking; called from the worker pool.  Required. */
	int (*account_by_name)(void *inst, const char *name,
			       struct engy_account *out);

	/* account_list() - every account, by id.  Context: any thread,
	 * blocking; called from the worker pool.  Required. */
	int (*account_list)(void *inst, struct engy_account **out, size_t *n);

	/**
	 * topup() - credit @amount_micro (1..ENGY_STORE_MONEY_MAX, and the
	 * balance must stay within it: -ERANGE) and record the top-up;
	 * @out (may be NULL) gets the account after it.
	 * Context: any thread, blocking; called from the worker pool.
	 * Required.
	 */
	int (*topup)(void *inst, int64_t account_id, int64_t amount_micro,
		     struct engy_account *out);

	/**
	 * key_create() - a fresh "sk-engy-..." key for @account_id with an
	 * optional @label (0..63 characters).  *@key gets the key text
	 * (malloc'd): the only time it exists outside the buyer's hands;
	 * the store keeps its hash.  @out (may be NULL) gets the record.
	 * Context: any thread, blocking; called from the worker pool.
	 * Required.
	 */
	int (*key_create)(void *inst, int64_t account_id, const char *label,
			  char **key, struct engy_api_key *out);

	/**
	 * key_lookup() - the key whose key_hash() is @hash (-ENOENT when
	 * none).  A revoked key is found, with status ENGY_KEY_REVOKED.
	 * Context: any thread, blocking; called from the worker pool.
	 * Required.
	 */
	int (*key_lookup)(void *inst, const uint8_t hash[ENGY_STORE_HASH_BYTES],
			  struct engy_api_key *out);

	/* key_revoke() - revoke for good (-ENOENT unknown; revoking twice is
	 * 0).  Context: any thread, blocking; called from the worker pool.
	 * Required. */
	int (*key_revoke)(void *inst, int64_t key_id);

	/* key_list() - an account's keys, by id.  Context: any thread,
	 * blocking; called from the worker pool.  Required. */
	int (*key_list)(void *inst, int64_t account_id,
			struct engy_api_key **out, size_t *n);

	/**
	 * reserve() - hold @amount_micro (1..ENGY_STORE_MONEY_MAX) of the
	 * account's balance before routing, atomically: succeeds only while
	 * balance - reserved covers it, so concurrent requests cannot
	 * overspend; -EDQUOT when it cannot (the buyer's 402), -ENOENT for
	 * an unknown account.  The hold lapses at @expires_ms (release_
	 * expired()).  *@reservation_id names it for settle().
	 * Context: any thread, blocking; called from the worker pool.
	 * Required.
	 */
	int (*reserve)(void *inst, int64_t account_id, int64_t key_id,
		       int64_t amount_micro, int64_t expires_ms,
		       int64_t *reservation_id);

	/**
	 * settle() - close a reservation: charge @cost_micro (>= 0; 0
	 * releases it all) and return the rest to the available balance.
	 * The charge never takes the balance below the other open
	 * reservations: it is min(cost, reserved + available), written to
	 * *@charged (may be NULL).  When @row is not NULL it is appended to
	 * the request log in the same transaction, with the reservation's
	 * account and key and cost_micro = the charge.  -ENOENT when the
	 * reservation is unknown, settled, or released as expired (then
	 * nothing is charged or logged).
	 * Context: any thread, blocking; called from the worker pool.
	 * Required.
	 */
	int (*settle)(void *inst, int64_t reservation_id, int64_t cost_micro,
		      const struct engy_request_row *row, int64_t *charged);

	/**
	 * release_expired() - crash recovery: release every reservation
	 * whose expires_ms <= @now_ms (a gateway that died holding it will
	 * never settle it).  *@n and *@micro (may be NULL) get how many and
	 * how much.  Context: any thread, blocking; called from the worker
	 * pool.  Required.
	 */
	int (*release_expired)(void *inst, int64_t now_ms, uint64_t *n,
			       int64_t *micro);

	/**
	 * model_put() - create or replace a model by name (1..127 of
	 * [A-Za-z0-9._:/-]); limits > 0, toploc_p_ppm <= 1000000, the
	 * gemm_* sizes within specs/gemm-audit.md §6 (or 0), rates
	 * 0..1e12 µUSD per 1M tokens, status a known value (0 = enabled).
	 * Context: any thread, blocking; called from the worker pool.
	 * Required.
	 */
	int (*model_put)(void *inst, const struct engy_model *m);

	/* model_get() - by name (-ENOENT).  Context: any thread, blocking;
	 * called from the worker pool.  Required. */
	int (*model_get)(void *inst, const char *name, struct engy_model *out);

	/* model_list() - every model, by name.  Context: any thread,
	 * blocking; called from the worker pool.  Required. */
	int (*model_list)(void *inst, struct engy_model **out, size_t *n);

	/**
	 * model_root_put() - accept (or re-describe) a checkpoint root for
	 * a model that exists (-ENOENT otherwise); a root belongs to one
	 * model (-EEXIST when another has it).
	 * Context: any thread, blocking; called from the worker pool.
	 * Required.
	 */
	int (*model_root_put)(void *inst, const struct engy_model_root *r);

	/* model_root_get() - which model a root is (-ENOENT).  Context: any
	 * thread, blocking; called from the worker pool.  Required. */
	int (*model_root_get)(void *inst,
			      const uint8_t root[ENGY_STORE_HASH_BYTES],
			      struct engy_model_root *out);

	/* model_root_list() - a model's roots, or all with @model NULL.
	 * Context: any thread, blocking; called from the worker pool.
	 * Required. */
	int (*model_root_list)(void *inst, const char *model,
			       struct engy_model_root **out, size_t *n);

	/* model_root_del() - stop accepting a root (-ENOENT).  Context: any
	 * thread, blocking; called from the worker pool.  Required. */
	int (*model_root_del)(void *inst,
			      const uint8_t root[ENGY_STORE_HASH_BYTES]);

	/**
	 * miner_put() - register a miner by @m->hotkey (an SS58 address),
	 * or update its label, status, first_party and priority.  With @key
	 * not NULL a fresh "mk-engy-..." key is made (a new miner needs
	 * one: -EINVAL without) and *@key gets its text (malloc'd), once;
	 * the old key stops working.  @out (may be NULL) gets the record.
	 * Context: any thread, blocking; called from the worker pool.
	 * Required.
	 */
	int (*miner_put)(void *inst, const struct engy_miner *m, char **key,
			 struct engy_miner *out);

	/* miner_lookup() - the miner whose key_hash() is @hash (-ENOENT).
	 * Context: any thread, blocking; called from the worker pool.
	 * Required. */
	int (*miner_lookup)(void *inst,
			    const uint8_t hash[ENGY_STORE_HASH_BYTES],
			    struct engy_miner *out);

	/* miner_list() - every miner, by id.  Context: any thread, blocking;
	 * called from the worker pool.  Required. */
	int (*miner_list)(void *inst, struct engy_miner **out, size_t *n);

	/**
	 * log_append() - append @n rows (one transaction: all or none);
	 * rows without a reservation (probes, refusals) come this way.
	 * Context: any thread, blocking; called from the worker pool.
	 * Required.
	 */
	int (*log_append)(void *inst, const struct engy_request_row *rows,
			  size_t n);

	/* log_query() - rows matching @q (see struct engy_log_query).
	 * Context: any thread, blocking; called from the worker pool.
	 * Required. */
	int (*log_query)(void *inst, const struct engy_log_query *q,
			 struct engy_request_row **out, size_t *n);

	/* log_prune() - retention: delete rows with time_ms < @before_ms;
	 * *@n (may be NULL) gets how many.  Context: any thread, blocking;
	 * called from the worker pool.  Required. */
	int (*log_prune)(void *inst, int64_t before_ms, uint64_t *n);

	/*
	 * The auditor's ops (appended in 1.1; optional: a store without them
	 * reads as NULL and the auditor refuses it).
	 */

	/* verdict_put() - record one verdict (@v->id ignored).  Context: any
	 * thread, blocking; called from the worker pool.  Optional. */
	int (*verdict_put)(void *inst, const struct engy_verdict *v);

	/* verdict_list() - verdicts matching @q (by time_ms), as
	 * log_query().  Context: any thread, blocking; called from the
	 * worker pool.  Optional. */
	int (*verdict_list)(void *inst, const struct engy_verdict_query *q,
			    struct engy_verdict **out, size_t *n);

	/**
	 * epoch_put() - store a closed epoch with its signed @payload and
	 * public @aggregates (JSON texts, 1 byte..16 MiB); an epoch index
	 * is written once (-EEXIST).  Context: any thread, blocking; called
	 * from the worker pool.  Optional.
	 */
	int (*epoch_put)(void *inst, const struct engy_epoch_rec *e,
			 const char *payload, const char *aggregates);

	/**
	 * epoch_get() - epoch @index (-ENOENT), or with @latest the highest
	 * index stored.  *@payload and *@aggregates (each may be NULL) get
	 * malloc'd copies.  Context: any thread, blocking; called from the
	 * worker pool.  Optional.
	 */
	int (*epoch_get)(void *inst, int64_t index, int latest,
			 struct engy_epoch_rec *out, char **payload,
			 char **aggregates);

	/*
	 * Appended in 1.3 (optional: NULL in an older store; the auditor
	 * then audits without claims and closes epochs on the grace alone).
	 */

	/**
	 * audit_claim() - take the audit of @request_id (1..63 characters)
	 * for @holder (1..63 characters, one per auditor process) until
	 * @until_ms, atomically across every process on the store: 0 when
	 * there was no claim, when the claim lapsed (its until_ms <=
	 * @now_ms), or when @holder holds it already (its until_ms then
	 * only grows: ENGY_CLAIM_DONE marks the job done for good);
	 * -EALREADY when another holder's claim is live, *@held_until (may
	 * be NULL) getting its until_ms (ENGY_CLAIM_DONE: audited).
	 * log_prune() drops claims last taken before its bound.
	 * Context: any thread, blocking; called from the worker pool.
	 * Optional.
	 */
	int (*audit_claim)(void *inst, const char *request_id,
			   const char *holder, int64_t now_ms, int64_t until_ms,
			   int64_t *held_until);

	/**
	 * holds_open() - *@n gets how many reservations made before
	 * @created_before_ms are still open at @now_ms (neither settled,
	 * released nor lapsed): requests that started by then and whose
	 * request-log row may still come.  Context: any thread, blocking;
	 * called from the worker pool.  Optional.
	 */
	int (*holds_open)(void *inst, int64_t created_before_ms, int64_t now_ms,
			  uint64_t *n);

	/**
	 * settle_batch() - group commit: the @n items (struct engy_settle)
	 * in ONE transaction, in order, each as settle() would do it (or
	 * log_append() for an item without a reservation).  An item that
	 * cannot be done (-ENOENT: the reservation is unknown, settled or
	 * released; -EINVAL: a bad cost or row) writes nothing and says so
	 * in its @rc; the others still commit.  Returns 0 when the
	 * transaction committed (every item's @rc and @charged are set), <0
	 * when nothing was written.  Context: any thread, blocking; called
	 * from the worker pool.  Optional (ABI 1.5): without it a gateway
	 * settles one request per transaction.
	 */
	int (*settle_batch)(void *inst, struct engy_settle *items, size_t n);
};

/* audit_claim()'s until_ms of an audited job: it never lapses. */
#define ENGY_CLAIM_DONE INT64_MAX

#ifdef __cplusplus
}
#endif

#endif /* ENGY_STORE_H */
