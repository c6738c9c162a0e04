/* SPDX-License-Identifier: MIT */
/* chain-subtensor's internals: one instance, its caches, one job per op. */
#ifndef CHAIN_SUBTENSOR_SUB_H
#define CHAIN_SUBTENSOR_SUB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <engy/engy.h>

#include "extrinsic.h"
#include "metadata.h"
#include "rpc.h"

struct sub_conf {
	const char *endpoint;
	const char *network;
	int64_t timeout_s;
	int64_t inclusion_timeout_s;
	int64_t poll_ms;
	int64_t era_period;
	int64_t max_response_mb;
};

struct sub {
	const struct engy_host *h;
	const struct sub_conf *c;
	const char *endpoint; /* picked from endpoint and network */
	atomic_int cancel;    /* set at stop(): jobs end -ECANCELED */
	unsigned inflight;    /* jobs not yet completed (loop thread) */
	/* Jobs run one at a time; this also guards the caches below. */
	pthread_mutex_t lock;
	bool have_genesis;
	uint8_t genesis[32];
	uint32_t spec_version, tx_version;
	struct engy_metadata *md; /* of spec_version */
	struct engy_ext_layout layout;
	int layout_rc;
	char layout_err[256];
};

/* The block a job reads at. */
struct sub_at {
	uint64_t number;
	uint8_t hash[32];
	char hex[67];
};

enum { SUB_BLOCK = 1, SUB_METAGRAPH, SUB_SET_WEIGHTS, SUB_COMMIT_WEIGHTS };

struct sub_job {
	struct sub *s;
	int op;
	void *arg;
	union {
		void (*block)(void *arg, const struct engy_chain_block *b);
		void (*metagraph)(void *arg,
				  const struct engy_chain_metagraph *m);
		void (*submit)(void *arg, const struct engy_chain_submit *r);
	} done;
	/* inputs */
	uint16_t netuid;
	size_t n;
	uint16_t *uids, *weights;
	uint64_t version_key;
	struct engy_chain_signer signer;
	/* outputs */
	struct engy_chain_block block;
	struct engy_chain_metagraph mg;
	uint8_t (*mg_uids)[32];
	bool *mg_permit;
	uint64_t *mg_last;
	struct engy_chain_submit submit;
	char error[640];
	char cr_why[256]; /* the metagraph's cr_why */
};

/* sub_read.c */
int sub_best(struct sub *s, struct rpc *r, struct sub_at *at, char *err,
	     size_t cap);
int sub_runtime(struct sub *s, struct rpc *r, const struct sub_at *at,
		char *err, size_t cap);
/*
 * sub_storage() - @pallet's @item under @keys at @at: *@val (malloc'd)
 * holds the SCALE value, the runtime's default when the node has none;
 * -ENOENT when the runtime has no such item or (an Optional item) no
 * value.
 */
int sub_storage(struct sub *s, struct rpc *r, const struct sub_at *at,
		const char *pallet, const char *item,
		const uint8_t *const *keys, const size_t *key_lens,
		size_t n_keys, uint8_t **val, size_t *len, char *err,
		size_t cap);
int sub_u64_item(struct sub *s, struct rpc *r, const struct sub_at *at,
		 const char *item, uint16_t netuid, uint64_t def, uint64_t *v,
		 char *err, size_t cap);
void sub_do_metagraph(struct sub_job *j, struct rpc *r);

/* sub_submit.c */
void sub_do_set_weights(struct sub_job *j, struct rpc *r);
/* Timelocked commit-reveal (sub_commit.c). */
void sub_do_commit_weights(struct sub_job *j, struct rpc *r);
/*
 * sub_cr_settings() - the commit-reveal settings at @at into the
 * metagraph fields (version, reveal period, tempo, whether this plugin can
 * commit there, else why in j->cr_why).
 */
int sub_cr_settings(struct sub_job *j, struct rpc *r, const struct sub_at *at,
		    struct engy_chain_metagraph *m);
/*
 * sub_submit_call() - sign @call (an encoded call) as j->signer, submit
 * it and wait for its outcome into j->submit (sub_submit.c, shared by
 * set_weights and the commits).  @what names the call in the log.
 */
int sub_submit_call(struct sub_job *j, struct rpc *r, const struct sub_at *best,
		    const uint8_t *call, size_t call_len, const char *what);

/* Sleep @ms in short steps; false when cancelled. */
bool sub_nap(struct sub *s, long ms);

#endif /* CHAIN_SUBTENSOR_SUB_H */
