/* SPDX-License-Identifier: MIT */
/*
 * chain-dev: the devnet's chain.  A subnet held in the config (hotkeys by
 * uid, from `hotkeys` then `hotkeys_file`, which a devnet script can write;
 * which uids hold a validator permit; the rate limit), blocks from
 * the wall clock (one per block_ms), and set_weights checked the way
 * subtensor checks it (commit-reveal, registration, permit, rate limit,
 * lengths) with the chain's error names, then appended as one JSON line to
 * `file`:
 *
 *   {"block":N,"netuid":53,"hotkey":"5...","uid":U,"ok":true,
 *    "uids":[...],"weights":[...]}      (ok false: "error":"Name")
 *
 * The signer is exercised for real: it signs the line's digest and the
 * signature is verified before anything is written.  Rate limits survive
 * restarts: the file's accepted lines are read back at start.
 *
 * With commit_reveal on, set_weights is refused (CommitRevealEnabled) and
 * commit_weights simulates subtensor's timelocked commits
 * (specs/commit-reveal.md): the payload of commit_reveal_version (3 or 4)
 * is encrypted (lib/drand) to the reveal round engy_cr_reveal_round()
 * computes from tempo, reveal_period and this chain's clock, to a test
 * beacon whose key is fixed below, and the commit is appended as
 *
 *   {"block":N,"netuid":53,"hotkey":"5...","uid":U,"ok":true,
 *    "commit":4,"reveal_round":R,"reveal_block":B}
 *
 * When drand's clock reaches the round, the chain signs the round with the
 * test beacon, decrypts the commit as the runtime would, checks the
 * payload (the hotkey of a version 4 payload must be the committer) and
 * appends the revealed weights:
 *
 *   {"block":N,"netuid":53,"hotkey":"5...","uid":U,"ok":true,
 *    "revealed":R,"uids":[...],"weights":[...]}
 *
 * Pending commits live in memory only: a restart drops them.
 */
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include <engy/engy.h>

#include "config.h"
#include "checkfmt.h"
#include "commit.h"
#include "fsutil.h"
#ifdef HAVE_BLST
#include "drand.h"
#endif
#include "sr25519.h"
#include "ss58.h"

struct dev_conf {
	const char *file;
	struct engy_strv hotkeys;
	const char *hotkeys_file;
	struct engy_strv permits;
	int64_t netuid;
	int64_t rate_limit;
	int64_t block_ms;
	int64_t version_key;
	bool commit_reveal;
	int64_t cr_version;
	int64_t reveal_period;
	int64_t tempo;
};

/* A commit waiting for its round (chain-dev's CRv3/CRv4 storage). */
struct pending {
	struct pending *next;
	uint8_t acc[32];
	unsigned version;
	uint64_t round;
	uint8_t *ct;
	size_t len;
};

struct dev {
	const struct engy_host *h;
	const struct dev_conf *c;
	size_t n;
	uint8_t (*acc)[32];
	bool *permit;
	uint64_t *last; /* under lock: workers write it */
	pthread_mutex_t lock;
	bool stopping;
	struct pending *pending; /* under lock */
	struct engy_timer *reveal_timer;
};

#ifdef HAVE_BLST
/*
 * The test beacon's secret key: chain-dev stands in for drand, so it can
 * sign any round.  Fixed, so a devnet's commits are readable by anyone
 * (it is a test chain).
 */
static const uint8_t beacon_sk[32] = {
	0x65, 0x6e, 0x67, 0x79, 0x2d, 0x63, 0x68, 0x61, 0x69, 0x6e, 0x2d,
	0x64, 0x65, 0x76, 0x20, 0x74, 0x65, 0x73, 0x74, 0x20, 0x62, 0x65,
	0x61, 0x63, 0x6f, 0x6e, 0x20, 0x6b, 0x65, 0x79, 0x21, 0x01,
};
#endif

struct job {
	struct dev *d;
	int op;
	void *arg;
	void (*done_block)(void *, const struct engy_chain_block *);
	void (*done_mg)(void *, const struct engy_chain_metagraph *);
	void (*done_sub)(void *, const struct engy_chain_submit *);
	uint16_t netuid;
	size_t n;
	uint16_t *uids, *weights;
	uint64_t version_key;
	struct engy_chain_signer signer;
	struct engy_chain_submit res;
	uint64_t block;
	char error[256];
};

static uint64_t dev_block(const struct dev *d)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000) /
	       (uint64_t)d->c->block_ms;
}

static long uid_of(const struct dev *d, const uint8_t acc[32])
{
	size_t u;

	for (u = 0; u < d->n; u++)
		if (memcmp(d->acc[u], acc, 32) == 0)
			return (long)u;
	return -1;
}

/* Subtensor's order of checks, with its error names. */
static const char *check(struct job *j, long *me)
{
	struct dev *d = j->d;
	size_t i, k;

	if (j->netuid != d->c->netuid)
		return "SubtensorModule.SubNetworkDoesNotExist";
	if (d->c->commit_reveal)
		return "SubtensorModule.CommitRevealEnabled";
	*me = uid_of(d, j->signer.account);
	if (*me < 0)
		return "SubtensorModule.HotKeyNotRegisteredInSubNet";
	if (j->version_key < (uint64_t)d->c->version_key)
		return "SubtensorModule.IncorrectWeightVersionKey";
	if (d->last[*me] &&
	    j->block - d->last[*me] < (uint64_t)d->c->rate_limit)
		return "SubtensorModule.SettingWeightsTooFast";
	if (!d->permit[*me] && !(j->n == 1 && j->uids[0] == *me))
		return "SubtensorModule.NeuronNoValidatorPermit";
	for (i = 0; i < j->n; i++) {
		if (j->uids[i] >= d->n)
			return "SubtensorModule.UidVecContainInvalidOne";
		for (k = 0; k < i; k++)
			if (j->uids[k] == j->uids[i])
				return "SubtensorModule.DuplicateUids";
	}
	return NULL;
}

static int append(const char *path, const char *line)
{
	FILE *f = fopen(path, "a");
	int rc;

	if (!f)
		return -errno;
	rc = fputs(line, f) < 0 ? -EIO : 0;
	if (fclose(f) != 0 && !rc)
		rc = -EIO;
	return rc;
}

/* Appends "uids":[...],"weights":[...]} and the newline. */
static size_t put_vectors(char *line, size_t cap, size_t i,
			  const uint16_t *uids, const uint16_t *weights,
			  size_t n)
{
	i += (size_t)snprintf(line + i, cap - i, ",\"uids\":[");
	for (size_t k = 0; k < n; k++)
		i += (size_t)snprintf(line + i, cap - i, "%s%u", k ? "," : "",
				      uids[k]);
	i += (size_t)snprintf(line + i, cap - i, "],\"weights\":[");
	for (size_t k = 0; k < n; k++)
		i += (size_t)snprintf(line + i, cap - i, "%s%u", k ? "," : "",
				      weights[k]);
	i += (size_t)snprintf(line + i, cap - i, "]}\n");
	return i;
}

/* Ends a submit job: the append's result @rc, else included in the block,
 * a success unless the chain's check said @err. */
static void submit_done(struct dev *d, struct job *j, int rc, const char *err)
{
	if (rc) {
		j->res.status = rc;
		snprintf(j->error, sizeof(j->error), "cannot append to %s: %s",
			 d->c->file, strerror(-rc));
		return;
	}
	j->res.included = true;
	j->res.block = j->block;
	j->res.success = !err;
	if (err)
		snprintf(j->error, sizeof(j->error), "%s", err);
}

static void submit_run(struct job *j)
{
	struct dev *d = j->d;
	uint8_t digest[32], sig[64];
	const char *err;
	char *line = NULL;
	size_t i, cap;
	long me = -1;
	char ss58[ENGY_SS58_ADDR_SIZE];
	int rc;

	j->block = dev_block(d);
	{
		crypto_generichash_state hs;

		crypto_generichash_init(&hs, NULL, 0, 32);
		crypto_generichash_update(&hs, (const uint8_t *)&j->netuid, 2);
		crypto_generichash_update(&hs, (const uint8_t *)j->uids,
					  j->n * 2);
		crypto_generichash_update(&hs, (const uint8_t *)j->weights,
					  j->n * 2);
		crypto_generichash_final(&hs, digest, 32);
	}
	rc = j->signer.sign(j->signer.arg, digest, 32, sig);
	if (!rc)
		rc = engy_sr25519_verify(j->signer.account,
					 ENGY_SR25519_SUBSTRATE_CTX, digest, 32,
					 sig);
	if (rc) {
		/* The node would answer BadProof before any block. */
		snprintf(
			j->error, sizeof(j->error),
			"Invalid Transaction: Transaction has a bad signature");
		return;
	}
	engy_ss58_encode(ss58, sizeof(ss58), j->signer.account,
			 ENGY_SS58_PREFIX_BITTENSOR);
	cap = 256 + j->n * 16;
	line = malloc(cap);
	if (!line) {
		j->res.status = -ENOMEM;
		return;
	}
	pthread_mutex_lock(&d->lock);
	err = check(j, &me);
	i = (size_t)snprintf(
		line, cap,
		"{\"block\":%" PRIu64
		",\"netuid\":%u,\"hotkey\":\"%s\",\"uid\":%ld,\"ok\":%s",
		j->block, j->netuid, ss58, me, err ? "false" : "true");
	if (err)
		i += (size_t)snprintf(line + i, cap - i, ",\"error\":\"%s\"",
				      err);
	put_vectors(line, cap, i, j->uids, j->weights, j->n);
	rc = append(d->c->file, line);
	if (!rc && !err)
		d->last[me] = j->block;
	pthread_mutex_unlock(&d->lock);
	free(line);
	submit_done(d, j, rc, err);
}

/* What the metagraph says about committing here. */
static const char *cr_why(const struct dev *d)
{
#ifndef HAVE_BLST
	(void)d;
	return "chain-dev was built without blst (configure --with-blst)";
#else
	if (d->c->cr_version != 3 && d->c->cr_version != 4)
		return "engy commits in commit-reveal versions 3 and 4 only";
	return NULL;
#endif
}

#ifdef HAVE_BLST
/* Subtensor's checks of a commit: the subnet, the hotkey, the rate limit. */
static const char *check_commit(struct job *j, long *me)
{
	struct dev *d = j->d;

	if (j->netuid != d->c->netuid)
		return "SubtensorModule.SubNetworkDoesNotExist";
	*me = uid_of(d, j->signer.account);
	if (*me < 0)
		return "SubtensorModule.HotKeyNotRegisteredInSubNet";
	if (d->last[*me] &&
	    j->block - d->last[*me] < (uint64_t)d->c->rate_limit)
		return "SubtensorModule.CommittingWeightsTooFast";
	return NULL;
}

static void commit_run(struct job *j)
{
	struct dev *d = j->d;
	unsigned version = (unsigned)d->c->cr_version;
	struct engy_cr_sched sc = { 0 };
	struct engy_scale_buf pl;
	struct timespec ts;
	struct pending *p = NULL;
	uint8_t digest[32], sig[64];
	char ss58[ENGY_SS58_ADDR_SIZE], err[200], line[512];
	const char *cerr;
	uint8_t *ct = NULL;
	size_t ctlen = 0;
	drand_pk pk;
	long me = -1;
	int rc;

	j->res.commit = true;
	j->res.cr_version = (uint16_t)version;
	j->block = dev_block(d);
	if (!d->c->commit_reveal) {
		j->res.status = -ENOTSUP;
		snprintf(j->error, sizeof(j->error),
			 "commit-reveal is off on subnet %lld: set weights "
			 "instead; nothing submitted",
			 (long long)d->c->netuid);
		return;
	}
	if (cr_why(d)) {
		j->res.status = -ENOTSUP;
		snprintf(j->error, sizeof(j->error),
			 "the chain runs commit-reveal version %u: %s; nothing "
			 "submitted",
			 version, cr_why(d));
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	sc.netuid = j->netuid;
	sc.tempo = (uint16_t)d->c->tempo;
	sc.reveal_period = (uint64_t)d->c->reveal_period;
	sc.block = j->block;
	sc.block_time = (double)d->c->block_ms / 1000.0;
	sc.now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	rc = engy_cr_reveal_round(&sc, &j->res.reveal_round,
				  &j->res.reveal_block, err, sizeof(err));
	if (rc) {
		j->res.status = rc;
		snprintf(j->error, sizeof(j->error), "%s; nothing submitted",
			 err);
		return;
	}
	engy_scale_buf_init(&pl);
	rc = engy_cr_payload(version, j->signer.account, j->uids, j->weights,
			     j->n, j->version_key, &pl, err, sizeof(err));
	if (!rc && pl.err)
		rc = pl.err;
	drand_test_keygen(beacon_sk, &pk);
	if (!rc && tlock_encrypt(&pk, j->res.reveal_round, pl.p, pl.len, &ct,
				 &ctlen, err, sizeof(err)))
		rc = -EINVAL;
	engy_scale_buf_free(&pl);
	if (rc) {
		j->res.status = rc;
		snprintf(j->error, sizeof(j->error),
			 "commit: %s; nothing submitted", err);
		free(ct);
		return;
	}
	crypto_generichash(digest, 32, ct, ctlen, NULL, 0);
	rc = j->signer.sign(j->signer.arg, digest, 32, sig);
	if (!rc)
		rc = engy_sr25519_verify(j->signer.account,
					 ENGY_SR25519_SUBSTRATE_CTX, digest, 32,
					 sig);
	if (rc) {
		snprintf(
			j->error, sizeof(j->error),
			"Invalid Transaction: Transaction has a bad signature");
		free(ct);
		return;
	}
	engy_ss58_encode(ss58, sizeof(ss58), j->signer.account,
			 ENGY_SS58_PREFIX_BITTENSOR);
	pthread_mutex_lock(&d->lock);
	cerr = check_commit(j, &me);
	if (cerr)
		snprintf(line, sizeof(line),
			 "{\"block\":%" PRIu64 ",\"netuid\":%u,\"hotkey\":"
			 "\"%s\",\"uid\":%ld,\"ok\":false,\"error\":\"%s\","
			 "\"commit\":%u}\n",
			 j->block, j->netuid, ss58, me, cerr, version);
	else
		snprintf(line, sizeof(line),
			 "{\"block\":%" PRIu64 ",\"netuid\":%u,\"hotkey\":"
			 "\"%s\",\"uid\":%ld,\"ok\":true,\"commit\":%u,"
			 "\"reveal_round\":%" PRIu64
			 ",\"reveal_block\":%" PRIu64 "}\n",
			 j->block, j->netuid, ss58, me, version,
			 j->res.reveal_round, j->res.reveal_block);
	rc = append(d->c->file, line);
	if (!rc && !cerr) {
		p = calloc(1, sizeof(*p));
		if (p) {
			memcpy(p->acc, j->signer.account, 32);
			p->version = version;
			p->round = j->res.reveal_round;
			p->ct = ct;
			p->len = ctlen;
			ct = NULL;
			p->next = d->pending;
			d->pending = p;
		}
		d->last[me] = j->block;
	}
	pthread_mutex_unlock(&d->lock);
	free(ct);
	submit_done(d, j, rc, cerr);
}

/* A revealed payload, checked as subtensor checks set weights. */
static const char *reveal_check(struct dev *d, const struct pending *p,
				const uint8_t *pt, size_t n, long *me,
				uint16_t **uids, uint16_t **weights,
				size_t *count)
{
	struct engy_scale_rd r;
	const uint8_t *hk = NULL, *u = NULL, *w = NULL;
	size_t hn = 0, un = 0, wn = 0, i, k;
	uint32_t len = 0;
	uint64_t vk = 0;

	engy_scale_rd_init(&r, pt, n);
	if (p->version == 4)
		engy_scale_vec(&r, &hk, &hn);
	if (!engy_scale_compact32(&r, &len) && len <= engy_scale_left(&r) / 2)
		engy_scale_bytes(&r, (size_t)len * 2, &u);
	else
		engy_scale_fail(&r, -EMSGSIZE);
	un = len;
	if (!engy_scale_compact32(&r, &len) && len <= engy_scale_left(&r) / 2)
		engy_scale_bytes(&r, (size_t)len * 2, &w);
	else
		engy_scale_fail(&r, -EMSGSIZE);
	wn = len;
	engy_scale_u64(&r, &vk);
	if (r.err || engy_scale_left(&r))
		return "SubtensorModule.InvalidRevealCommitHashNotMatch";
	if (p->version == 4 && (hn != 32 || memcmp(hk, p->acc, 32) != 0))
		return "SubtensorModule.InvalidRevealCommitHashNotMatch";
	*me = uid_of(d, p->acc);
	if (*me < 0)
		return "SubtensorModule.HotKeyNotRegisteredInSubNet";
	if (un != wn)
		return "SubtensorModule.WeightVecNotEqualSize";
	if (vk < (uint64_t)d->c->version_key)
		return "SubtensorModule.IncorrectWeightVersionKey";
	*uids = calloc(un ? un : 1, 2);
	*weights = calloc(un ? un : 1, 2);
	if (!*uids || !*weights)
		return "out of memory";
	for (i = 0; i < un; i++) {
		(*uids)[i] = (uint16_t)(u[2 * i] | u[2 * i + 1] << 8);
		(*weights)[i] = (uint16_t)(w[2 * i] | w[2 * i + 1] << 8);
	}
	*count = un;
	if (!d->permit[*me] && !(un == 1 && (*uids)[0] == *me))
		return "SubtensorModule.NeuronNoValidatorPermit";
	for (i = 0; i < un; i++) {
		if ((*uids)[i] >= d->n)
			return "SubtensorModule.UidVecContainInvalidOne";
		for (k = 0; k < i; k++)
			if ((*uids)[k] == (*uids)[i])
				return "SubtensorModule.DuplicateUids";
	}
	return NULL;
}

/* Decrypts and applies one commit whose round has come. */
static void reveal_one(struct dev *d, struct pending *p)
{
	uint8_t sig[DRAND_G1_LEN], *pt = NULL;
	uint16_t *uids = NULL, *weights = NULL;
	size_t ptlen = 0, n = 0, i, cap;
	char ss58[ENGY_SS58_ADDR_SIZE], err[200], *line;
	const char *e;
	long me = -1;
	int rc;

	drand_test_sign(beacon_sk, p->round, sig);
	if (tlock_decrypt(p->ct, p->len, sig, &pt, &ptlen, err, sizeof(err)))
		e = "SubtensorModule.InvalidRevealCommitHashNotMatch";
	else
		e = reveal_check(d, p, pt, ptlen, &me, &uids, &weights, &n);
	engy_ss58_encode(ss58, sizeof(ss58), p->acc,
			 ENGY_SS58_PREFIX_BITTENSOR);
	cap = 320 + n * 16;
	line = malloc(cap);
	if (line) {
		i = (size_t)snprintf(line, cap,
				     "{\"block\":%" PRIu64 ",\"netuid\":%lld,"
				     "\"hotkey\":\"%s\",\"uid\":%ld,\"ok\":%s",
				     dev_block(d), (long long)d->c->netuid,
				     ss58, me, e ? "false" : "true");
		if (e)
			i += (size_t)snprintf(line + i, cap - i,
					      ",\"error\":\"%s\"", e);
		i += (size_t)snprintf(line + i, cap - i,
				      ",\"revealed\":%" PRIu64, p->round);
		put_vectors(line, cap, i, uids, weights, n);
		rc = append(d->c->file, line);
		if (rc)
			engy_err(d->h,
				 "event=reveal_write_failed path=%s "
				 "error=\"%s\"",
				 d->c->file, strerror(-rc));
		else
			engy_info(d->h,
				  "event=revealed round=%" PRIu64 " hotkey=%s "
				  "ok=%s%s%s uids=%zu",
				  p->round, ss58, e ? "false" : "true",
				  e ? " error=" : "", e ? e : "", n);
		free(line);
	}
	free(pt);
	free(uids);
	free(weights);
}

/* The loop's reveal step: every commit whose round drand has reached. */
static void reveal_due(void *arg)
{
	struct dev *d = arg;
	struct pending *due = NULL, **pp, *p;
	uint64_t now_round = drand_round_at((uint64_t)time(NULL));

	pthread_mutex_lock(&d->lock);
	for (pp = &d->pending; (p = *pp);) {
		if (p->round <= now_round) {
			*pp = p->next;
			p->next = due;
			due = p;
		} else {
			pp = &p->next;
		}
	}
	while ((p = due)) {
		due = p->next;
		reveal_one(d, p);
		free(p->ct);
		free(p);
	}
	pthread_mutex_unlock(&d->lock);
}
#endif

static void job_run(void *arg)
{
	struct job *j = arg;

	if (j->op == 3) {
		submit_run(j);
	} else if (j->op == 4) {
#ifdef HAVE_BLST
		commit_run(j);
#else
		j->res.commit = true;
		j->res.status = -ENOTSUP;
		snprintf(j->error, sizeof(j->error), "%s; nothing submitted",
			 cr_why(j->d));
#endif
	}
}

static void job_done(void *arg, int rc)
{
	struct job *j = arg;
	struct dev *d = j->d;
	uint64_t *last = NULL;

	if (j->op == 1) {
		struct engy_chain_block b = { .status = rc,
					      .number = dev_block(d) };

		b.error = rc ? strerror(-rc) : NULL;
		j->done_block(j->arg, &b);
	} else if (j->op == 2) {
		struct engy_chain_metagraph m = {
			.status = rc,
			.error = rc ? strerror(-rc) : NULL,
			.block = dev_block(d),
			.netuid = j->netuid,
			.exists = j->netuid == d->c->netuid,
			.rate_limit = (uint64_t)d->c->rate_limit,
			.version_key = (uint64_t)d->c->version_key,
			.commit_reveal = d->c->commit_reveal,
			.cr_version = (uint16_t)d->c->cr_version,
			.reveal_period = (uint64_t)d->c->reveal_period,
			.tempo = (uint16_t)d->c->tempo,
			.can_commit = cr_why(d) == NULL,
			.cr_why = cr_why(d),
		};

		if (m.exists) {
			m.n = d->n;
			m.uids = (const uint8_t(*)[32])d->acc;
			m.permit = d->permit;
			last = calloc(d->n ? d->n : 1, sizeof(*last));
			if (last) {
				pthread_mutex_lock(&d->lock);
				memcpy(last, d->last, d->n * sizeof(*last));
				pthread_mutex_unlock(&d->lock);
			} else {
				m.status = -ENOMEM;
				m.error = strerror(ENOMEM);
			}
			m.last_update = last;
		}
		j->done_mg(j->arg, &m);
		free(last);
	} else {
		if (rc)
			j->res.status = rc;
		j->res.error = j->error[0] ? j->error : NULL;
		j->done_sub(j->arg, &j->res);
	}
	free(j->uids);
	free(j->weights);
	free(j);
}

static int queue(struct dev *d, struct job *j)
{
	int rc;

	j->d = d;
	rc = d->stopping ? -ESHUTDOWN : d->h->work(d->h, job_run, job_done, j);
	if (rc) {
		free(j->uids);
		free(j->weights);
		free(j);
	}
	return rc;
}

static int op_block(void *inst,
		    void (*done)(void *, const struct engy_chain_block *),
		    void *arg)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->op = 1;
	j->done_block = done;
	j->arg = arg;
	return queue(inst, j);
}

static int op_metagraph(void *inst, uint16_t netuid,
			void (*done)(void *,
				     const struct engy_chain_metagraph *),
			void *arg)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->op = 2;
	j->netuid = netuid;
	j->done_mg = done;
	j->arg = arg;
	return queue(inst, j);
}

static int submit_job(void *inst, int op, const struct engy_chain_weights *w,
		      const struct engy_chain_signer *s,
		      void (*done)(void *, const struct engy_chain_submit *),
		      void *arg)
{
	struct job *j;

	if (!w || w->size < sizeof(*w) || !s || s->size < sizeof(*s) ||
	    !s->sign)
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->uids = calloc(w->n ? w->n : 1, 2);
	j->weights = calloc(w->n ? w->n : 1, 2);
	if (!j->uids || !j->weights) {
		free(j->uids);
		free(j->weights);
		free(j);
		return -ENOMEM;
	}
	memcpy(j->uids, w->uids, w->n * 2);
	memcpy(j->weights, w->weights, w->n * 2);
	j->n = w->n;
	j->netuid = w->netuid;
	j->version_key = w->version_key;
	j->signer = *s;
	j->op = op;
	j->done_sub = done;
	j->arg = arg;
	return queue(inst, j);
}

static int op_set_weights(void *inst, const struct engy_chain_weights *w,
			  const struct engy_chain_signer *s,
			  void (*done)(void *,
				       const struct engy_chain_submit *),
			  void *arg)
{
	return submit_job(inst, 3, w, s, done, arg);
}

/* Without blst the job answers -ENOTSUP (job_run leaves it unrun). */
static int op_commit_weights(void *inst, const struct engy_chain_weights *w,
			     const struct engy_chain_signer *s,
			     void (*done)(void *,
					  const struct engy_chain_submit *),
			     void *arg)
{
	return submit_job(inst, 4, w, s, done, arg);
}

static const struct engy_chain_ops ops = {
	.size = sizeof(ops),
	.block = op_block,
	.metagraph = op_metagraph,
	.set_weights = op_set_weights,
	.commit_weights = op_commit_weights,
};

/* Rate limits survive restarts: the last accepted block per uid. */
static void read_back(struct dev *d)
{
	char line[65536];
	FILE *f = fopen(d->c->file, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		cJSON *o = cJSON_Parse(line);
		const cJSON *ok = cJSON_GetObjectItemCaseSensitive(o, "ok");
		const cJSON *uid = cJSON_GetObjectItemCaseSensitive(o, "uid");
		const cJSON *blk = cJSON_GetObjectItemCaseSensitive(o, "block");

		/* A reveal applies weights; the rate limit counts the
		 * submissions (set_weights and commits). */
		if (cJSON_IsTrue(ok) &&
		    !cJSON_GetObjectItemCaseSensitive(o, "revealed") &&
		    cJSON_IsNumber(uid) && cJSON_IsNumber(blk) &&
		    uid->valuedouble >= 0 && uid->valuedouble < (double)d->n &&
		    blk->valuedouble >= 0)
			d->last[(size_t)uid->valuedouble] =
				(uint64_t)blk->valuedouble;
		cJSON_Delete(o);
	}
	fclose(f);
}

static void dev_destroy(void *inst)
{
	struct dev *d = inst;

	if (!d)
		return;
	while (d->pending) {
		struct pending *p = d->pending;

		d->pending = p->next;
		free(p->ct);
		free(p);
	}
	free(d->acc);
	free(d->permit);
	free(d->last);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* The config's hotkeys, then hotkeys_file's lines ('#' comments). */
static int collect(const struct engy_host *h, const struct dev_conf *c,
		   char **text, const char ***out, size_t *n_out)
{
	const char **v;
	size_t n = c->hotkeys.n, cap = n + 1, i;
	uint8_t *buf = NULL;
	size_t len = 0;
	char *line, *save;
	int rc;

	*text = NULL;
	if (c->hotkeys_file) {
		rc = engy_read_file(c->hotkeys_file, 1u << 20, &buf, &len);
		if (rc) {
			engy_err(h,
				 "event=bad_option option=hotkeys_file path=%s "
				 "error=\"%s\"",
				 c->hotkeys_file, strerror(-rc));
			return -EINVAL;
		}
		for (i = 0; i < len; i++)
			cap += buf[i] == '\n';
	}
	v = calloc(cap + 1, sizeof(*v));
	if (!v) {
		free(buf);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		v[i] = c->hotkeys.v[i];
	for (line = buf ? strtok_r((char *)buf, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, "# \t\r")] = '\0';
		if (*line && n < cap)
			v[n++] = line;
	}
	*text = (char *)buf;
	*out = v;
	*n_out = n;
	return 0;
}

static int dev_create(const struct engy_host *h, const void *conf, void **inst)
{
	const struct dev_conf *c = conf;
	const char **keys;
	struct dev *d;
	char *text;
	size_t i;
	int rc;

	*inst = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	d->h = h;
	d->c = c;
	rc = collect(h, c, &text, &keys, &d->n);
	if (rc) {
		dev_destroy(d);
		return rc;
	}
	d->acc = calloc(d->n ? d->n : 1, 32);
	d->permit = calloc(d->n ? d->n : 1, sizeof(bool));
	d->last = calloc(d->n ? d->n : 1, sizeof(uint64_t));
	rc = d->acc && d->permit && d->last ? 0 : -ENOMEM;
	for (i = 0; !rc && i < d->n; i++) {
		rc = engy_ss58_decode(keys[i], d->acc[i], NULL);
		if (rc) {
			engy_err(h,
				 "event=bad_option option=hotkeys index=%zu "
				 "value=%s reason=\"%s\"",
				 i, keys[i], engy_ss58_strerror(rc));
			rc = -EINVAL;
		}
		if (!rc)
			d->permit[i] = c->permits.n == 0;
	}
	free(keys);
	free(text);
	if (rc) {
		dev_destroy(d);
		return rc;
	}
	for (i = 0; i < c->permits.n; i++) {
		char *end;
		unsigned long u = strtoul(c->permits.v[i], &end, 10);

		if (*end || end == c->permits.v[i] || u >= d->n) {
			engy_err(h,
				 "event=bad_option option=permits value=%s "
				 "reason=\"a uid of hotkeys\"",
				 c->permits.v[i]);
			dev_destroy(d);
			return -EINVAL;
		}
		d->permit[u] = true;
	}
	*inst = d;
	return 0;
}

static int dev_start(void *inst)
{
	struct dev *d = inst;

	read_back(d);
	engy_info(d->h,
		  "event=started file=%s netuid=%lld uids=%zu block=%" PRIu64
		  " rate_limit=%lld commit_reveal=%s",
		  d->c->file, (long long)d->c->netuid, d->n, dev_block(d),
		  (long long)d->c->rate_limit,
		  d->c->commit_reveal ? "true" : "false");
#ifdef HAVE_BLST
	if (d->c->commit_reveal) {
		uint64_t ms =
			d->c->block_ms < 1000 ? (uint64_t)d->c->block_ms : 1000;
		int rc = d->h->timer_add(d->h, ms, 1, reveal_due, d,
					 &d->reveal_timer);

		if (rc)
			return rc;
		engy_info(d->h,
			  "event=commit_reveal version=%lld reveal_period=%lld "
			  "tempo=%lld beacon=test",
			  (long long)d->c->cr_version,
			  (long long)d->c->reveal_period,
			  (long long)d->c->tempo);
	}
#endif
	return 0;
}

static void dev_stop(void *inst)
{
	((struct dev *)inst)->stopping = true;
}

#define OFF(f) offsetof(struct dev_conf, f)

static const struct engy_opt opts[] = {
	{ "file", ENGY_OPT_STR, ENGY_OPT_REQUIRED, OFF(file), NULL, NULL, 0, 0,
	  "weights are appended here, one JSON line per submission" },
	{ "hotkeys", ENGY_OPT_STR_LIST, 0, OFF(hotkeys), NULL, NULL, 0, 0,
	  "the subnet's hotkeys (SS58), uid = position" },
	{ "hotkeys_file", ENGY_OPT_STR, 0, OFF(hotkeys_file), NULL,
	  "ENGY_DEV_CHAIN_HOTKEYS", 0, 0,
	  "more hotkeys, one SS58 a line, after those of hotkeys" },
	{ "permits", ENGY_OPT_STR_LIST, 0, OFF(permits), NULL, NULL, 0, 0,
	  "uids holding a validator permit (default: all)" },
	{ "netuid", ENGY_OPT_INT, 0, OFF(netuid), "53", NULL, 0, 65535,
	  "the subnet" },
	{ "rate_limit", ENGY_OPT_INT, 0, OFF(rate_limit), "100", NULL, 0,
	  1000000, "blocks between two weight settings of one hotkey" },
	{ "block_ms", ENGY_OPT_INT, 0, OFF(block_ms), "12000", NULL, 1, 3600000,
	  "milliseconds a block" },
	{ "version_key", ENGY_OPT_INT, 0, OFF(version_key), "0", NULL, 0, 0,
	  "the subnet's weights version key" },
	{ "commit_reveal", ENGY_OPT_BOOL, 0, OFF(commit_reveal), "false", NULL,
	  0, 0,
	  "commit-reveal on: refuse set_weights, take timelocked commits "
	  "and reveal them with a test beacon" },
	{ "commit_reveal_version", ENGY_OPT_INT, 0, OFF(cr_version), "4", NULL,
	  0, 65535, "CommitRevealWeightsVersion (engy commits in 3 and 4)" },
	{ "reveal_period", ENGY_OPT_INT, 0, OFF(reveal_period), "1", NULL, 0,
	  1000, "RevealPeriodEpochs: epochs from a commit to its reveal" },
	{ "tempo", ENGY_OPT_INT, 0, OFF(tempo), "360", NULL, 0, 65535,
	  "the subnet's tempo (an epoch is tempo + 1 blocks)" },
	ENGY_OPT_END,
};

/* The check op (engyd -t): the file its weights go to. */
static int dev_check(const struct engy_host *h, const void *conf, void *inst,
		     const struct engy_check_sink *sink)
{
	const struct dev_conf *c = conf;
	struct engy_check_buf b;

	(void)h;
	(void)inst;
	engy_check_begin(&b, "chain", ENGY_PROBE_NONE);
	ENGY_CHECK_SET(&b, target, "chain-dev file %s", c->file ? c->file : "");
	ENGY_CHECK_SET(&b, source, "config");
	return engy_check_add(sink, &b);
}

ENGY_PLUGIN(.kind = ENGY_KIND_CHAIN, .name = "chain-dev", .version = "1.0",
	    .description = "the devnet's chain: a configured subnet, weights "
			   "to a local file",
	    .opts = opts, .conf_size = sizeof(struct dev_conf),
	    .create = dev_create, .start = dev_start, .stop = dev_stop,
	    .destroy = dev_destroy, .ops = &ops, .check = dev_check);
