/* SPDX-License-Identifier: MIT */
/*
 * Timelocked commit-reveal (specs/commit-reveal.md): the settings read
 * from storage with each metagraph, and the commit: payload
 * (lib/chain/commit), reveal round as the SDK computes it (under the
 * runtime's stateful epoch schedule when its metadata has one, else the
 * SDK 1.x formula), ciphertext to
 * drand quicknet's pinned key (lib/drand, blst), the version's call from
 * the runtime's metadata, then signed, submitted and followed exactly as
 * set_weights is.  Without blst the plugin reads the settings and says it
 * cannot commit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "commit.h"
#include "sub.h"
#ifdef HAVE_BLST
#include "drand.h"
#endif

/* Seconds per block on subtensor chains (the SDK assumes 12 as well). */
#define SUB_BLOCK_TIME 12.0

/* CommitRevealWeightsVersion, or 0 when the runtime has no such item. */
static int cr_version(struct sub *s, struct rpc *r, const struct sub_at *at,
		      uint16_t netuid, uint64_t *v, char *err, size_t cap)
{
	*v = 0;
	if (!engy_meta_entry(s->md, "SubtensorModule",
			     "CommitRevealWeightsVersion"))
		return 0;
	return sub_u64_item(s, r, at, "CommitRevealWeightsVersion", netuid, 0,
			    v, err, cap);
}

int sub_cr_settings(struct sub_job *j, struct rpc *r, const struct sub_at *at,
		    struct engy_chain_metagraph *m)
{
	struct sub *s = j->s;
	struct engy_cr_call c;
	uint64_t ver, rp, tempo;
	int rc;

	rc = cr_version(s, r, at, j->netuid, &ver, j->error, sizeof(j->error));
	if (!rc)
		rc = sub_u64_item(s, r, at, "RevealPeriodEpochs", j->netuid, 0,
				  &rp, j->error, sizeof(j->error));
	if (!rc)
		rc = sub_u64_item(s, r, at, "Tempo", j->netuid, 0, &tempo,
				  j->error, sizeof(j->error));
	if (rc)
		return rc;
	m->cr_version = (uint16_t)(ver ? ver : 3);
	m->reveal_period = rp;
	m->tempo = (uint16_t)tempo;
#ifndef HAVE_BLST
	snprintf(j->cr_why, sizeof(j->cr_why),
		 "chain-subtensor was built without blst (configure "
		 "--with-blst)");
	(void)c;
#else
	if (engy_cr_find_call(s->md, (unsigned)ver, &c, j->cr_why,
			      sizeof(j->cr_why)) == 0) {
		if (s->layout_rc)
			snprintf(j->cr_why, sizeof(j->cr_why),
				 "cannot sign for spec %u: %.200s",
				 s->spec_version, s->layout_err);
		else
			m->can_commit = true;
	}
#endif
	return 0;
}

#ifdef HAVE_BLST
/* Refuse before anything is sent: the reason in j->error. */
static int refuse(struct sub_job *j, int rc, const char *what, const char *why)
{
	snprintf(j->error, sizeof(j->error), "%s%s; nothing submitted", what,
		 why);
	return rc;
}

/*
 * The reveal under the runtime's stateful epoch schedule: its state read
 * at @at (the best block), the reveal block simulated from it, the round
 * from that block.
 */
static int stateful_reveal(struct sub_job *j, struct rpc *r,
			   const struct sub_at *at, uint64_t tempo, uint64_t rp,
			   double now)
{
	static const char *const items[] = ENGY_CR_EPOCH_ITEMS;
	uint64_t v[sizeof(items) / sizeof(items[0])];
	struct engy_cr_epochs e = { 0 };
	char err[256];
	size_t i;
	int rc;

	for (i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
		rc = sub_u64_item(j->s, r, at, items[i], j->netuid, 0, &v[i],
				  j->error, sizeof(j->error));
		if (rc)
			return rc;
	}
	e.last_epoch_block = v[0];
	e.pending_epoch_at = v[1];
	e.epoch_index = v[2];
	e.blocks_since_last_step = v[3];
	e.block = at->number;
	e.tempo = (uint16_t)tempo;
	if (engy_cr_reveal_block_epochs(&e, rp, &j->submit.reveal_block, err,
					sizeof(err)) ||
	    engy_cr_round_for_block(at->number, j->submit.reveal_block,
				    SUB_BLOCK_TIME, now,
				    &j->submit.reveal_round, err, sizeof(err)))
		return refuse(j, -EINVAL, "", err);
	return 0;
}

static int commit(struct sub_job *j, struct rpc *r)
{
	struct sub *s = j->s;
	struct engy_cr_sched sc = { 0 };
	struct engy_scale_buf pl, cbuf;
	struct engy_cr_call c;
	struct sub_at best;
	struct timespec ts;
	uint64_t cr, ver, rp, tempo;
	int sched;
	uint8_t *ct = NULL;
	size_t ctlen = 0;
	char err[256], what[64];
	drand_pk pk;
	int rc;

	rc = sub_best(s, r, &best, j->error, sizeof(j->error));
	if (!rc)
		rc = sub_runtime(s, r, &best, j->error, sizeof(j->error));
	if (rc)
		return rc;
	if (s->layout_rc) {
		snprintf(j->error, sizeof(j->error),
			 "cannot sign for spec %u: %s", s->spec_version,
			 s->layout_err);
		return -ENOTSUP;
	}
	rc = sub_u64_item(s, r, &best, "CommitRevealWeightsEnabled", j->netuid,
			  0, &cr, j->error, sizeof(j->error));
	if (!rc)
		rc = cr_version(s, r, &best, j->netuid, &ver, j->error,
				sizeof(j->error));
	if (!rc)
		rc = sub_u64_item(s, r, &best, "RevealPeriodEpochs", j->netuid,
				  0, &rp, j->error, sizeof(j->error));
	if (!rc)
		rc = sub_u64_item(s, r, &best, "Tempo", j->netuid, 0, &tempo,
				  j->error, sizeof(j->error));
	if (rc)
		return rc;
	if (!cr) {
		snprintf(j->error, sizeof(j->error),
			 "commit-reveal is off on subnet %u: set weights "
			 "instead; nothing submitted",
			 j->netuid);
		return -ENOTSUP;
	}
	j->submit.cr_version = (uint16_t)(ver ? ver : 3);
	if (engy_cr_find_call(s->md, (unsigned)ver, &c, err, sizeof(err)))
		return refuse(j, -ENOTSUP, "", err);
	sched = engy_cr_schedule_of(s->md, err, sizeof(err));
	if (sched < 0)
		return refuse(j, sched, "", err);
	clock_gettime(CLOCK_REALTIME, &ts);
	sc.netuid = j->netuid;
	sc.tempo = (uint16_t)tempo;
	sc.reveal_period = rp;
	sc.block = best.number;
	sc.block_time = SUB_BLOCK_TIME;
	sc.now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	if (sched == ENGY_CR_SCHED_STATEFUL) {
		rc = stateful_reveal(j, r, &best, tempo, rp, sc.now);
		if (rc)
			return rc;
	} else if (engy_cr_reveal_round(&sc, &j->submit.reveal_round,
					&j->submit.reveal_block, err,
					sizeof(err))) {
		return refuse(j, -EINVAL, "", err);
	}
	engy_info(s->h,
		  "event=commit_schedule netuid=%u schedule=%s block=%llu "
		  "reveal_block=%llu reveal_round=%llu",
		  j->netuid, engy_cr_schedule_name(sched),
		  (unsigned long long)best.number,
		  (unsigned long long)j->submit.reveal_block,
		  (unsigned long long)j->submit.reveal_round);
	if (drand_pk_parse_hex(&pk, DRAND_QUICKNET_PK_HEX, err, sizeof(err)))
		return refuse(j, -EINVAL,
			      "drand quicknet's key does not "
			      "parse: ",
			      err);
	engy_scale_buf_init(&pl);
	engy_scale_buf_init(&cbuf);
	rc = engy_cr_payload(c.version, j->signer.account, j->uids, j->weights,
			     j->n, j->version_key, &pl, err, sizeof(err));
	if (!rc && pl.err)
		rc = pl.err;
	if (!rc && tlock_encrypt(&pk, j->submit.reveal_round, pl.p, pl.len, &ct,
				 &ctlen, err, sizeof(err)))
		rc = -EINVAL;
	if (!rc)
		rc = engy_cr_call_encode(s->md, &c, j->netuid, ct, ctlen,
					 j->submit.reveal_round, &cbuf, err,
					 sizeof(err));
	if (rc) {
		snprintf(j->error, sizeof(j->error),
			 "cannot build the commit: %s; nothing submitted", err);
	} else {
		snprintf(what, sizeof(what), "%s", c.name);
		rc = sub_submit_call(j, r, &best, cbuf.p, cbuf.len, what);
		if (!rc && j->submit.included)
			engy_info(s->h,
				  "event=committed netuid=%u version=%u "
				  "reveal_round=%llu reveal_block=%llu "
				  "block=%llu success=%s",
				  j->netuid, c.version,
				  (unsigned long long)j->submit.reveal_round,
				  (unsigned long long)j->submit.reveal_block,
				  (unsigned long long)j->submit.block,
				  j->submit.success ? "true" : "false");
	}
	free(ct);
	engy_scale_buf_free(&pl);
	engy_scale_buf_free(&cbuf);
	return rc;
}
#endif

void sub_do_commit_weights(struct sub_job *j, struct rpc *r)
{
	int rc;

	j->submit.commit = true;
#ifdef HAVE_BLST
	rc = commit(j, r);
#else
	(void)r;
	snprintf(j->error, sizeof(j->error),
		 "chain-subtensor was built without blst (configure "
		 "--with-blst); nothing submitted");
	rc = -ENOTSUP;
#endif
	j->submit.status = rc;
	if (!rc && j->submit.success)
		j->error[0] = '\0';
}
