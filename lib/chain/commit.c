/* SPDX-License-Identifier: MIT */
/* Timelocked commit-reveal: payload, reveal round, commit call
 * (commit.h, specs/commit-reveal.md). */
#include "commit.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "errbuf.h"

int engy_cr_payload(unsigned version, const uint8_t hotkey[32],
		    const uint16_t *uids, const uint16_t *weights, size_t n,
		    uint64_t version_key, struct engy_scale_buf *out, char *err,
		    size_t errlen)
{
	if (version != 3 && version != 4) {
		engy_seterr(err, errlen,
			    "commit-reveal version %u is not one engy speaks "
			    "(3 or 4)",
			    version);
		return -EPROTONOSUPPORT;
	}
	if (version == 4)
		engy_scale_put_vec(out, hotkey, 32);
	engy_scale_put_compact(out, n);
	for (size_t i = 0; i < n; i++)
		engy_scale_put_u16(out, uids[i]);
	engy_scale_put_compact(out, n);
	for (size_t i = 0; i < n; i++)
		engy_scale_put_u16(out, weights[i]);
	engy_scale_put_u64(out, version_key);
	return out->err;
}

int engy_cr_reveal_round(const struct engy_cr_sched *s, uint64_t *round,
			 uint64_t *reveal_block, char *err, size_t errlen)
{
	if (s->tempo == 0 || !(s->block_time > 0) || !(s->now > 0)) {
		engy_seterr(err, errlen,
			    "reveal round: tempo %u, block time %g, now %g",
			    s->tempo, s->block_time, s->now);
		return -EINVAL;
	}
	uint64_t t1 = (uint64_t)s->tempo + 1, n1 = (uint64_t)s->netuid + 1;
	if (s->block > UINT64_MAX / 4 || s->reveal_period > (1u << 20)) {
		engy_seterr(err, errlen,
			    "reveal round: block %llu or reveal period %llu "
			    "out of range",
			    (unsigned long long)s->block,
			    (unsigned long long)s->reveal_period);
		return -EINVAL;
	}
	uint64_t epoch = (s->block + n1) / t1;
	uint64_t first = (epoch + s->reveal_period) * t1;
	first = first > n1 ? first - n1 : 0;
	uint64_t rr;
	int rc = engy_cr_round_for_block(s->block, first, s->block_time, s->now,
					 &rr, err, errlen);
	if (rc)
		return rc;
	*round = rr;
	if (reveal_block)
		*reveal_block = first;
	return 0;
}

int engy_cr_round_for_block(uint64_t block, uint64_t reveal_block,
			    double block_time, double now, uint64_t *round,
			    char *err, size_t errlen)
{
	if (!(block_time > 0) || !(now > 0) || reveal_block > UINT64_MAX / 4) {
		engy_seterr(err, errlen,
			    "reveal round: block time %g, now %g, reveal block "
			    "%llu",
			    block_time, now, (unsigned long long)reveal_block);
		return -EINVAL;
	}
	uint64_t target = reveal_block + ENGY_CR_SECURITY_BLOCKS;
	uint64_t ahead = target > block ? target - block : 0;
	double when = now + (double)ahead * block_time;
	double r = floor((when - ENGY_CR_DRAND_GENESIS) / ENGY_CR_DRAND_PERIOD);
	uint64_t rr = r < 1 ? 1 : (uint64_t)r;
	/* The round published now (or before): the commit must name a later
	 * one, or anyone could open it at once. */
	double cur =
		floor((now - ENGY_CR_DRAND_GENESIS) / ENGY_CR_DRAND_PERIOD) + 1;
	if ((double)rr <= cur) {
		engy_seterr(err, errlen,
			    "reveal round %llu is not in the future (drand is "
			    "at round %.0f): nothing to commit to",
			    (unsigned long long)rr, cur);
		return -EINVAL;
	}
	*round = rr;
	return 0;
}

static bool epoch_runs(const struct engy_cr_epochs *s, uint64_t b)
{
	if (s->tempo == 0)
		return false;
	if (s->pending_epoch_at > 0 && b >= s->pending_epoch_at)
		return true;
	if (s->blocks_since_last_step > ENGY_CR_MAX_TEMPO)
		return true;
	return (b > s->last_epoch_block ? b - s->last_epoch_block : 0) >=
	       s->tempo;
}

/* The subnet's epoch as block b starts, before b's own epoch runs. */
static uint64_t epoch_before(const struct engy_cr_epochs *s, uint64_t b)
{
	return s->epoch_index + (epoch_runs(s, b) ? 1 : 0);
}

/* Block b's coinbase: counts the step, runs the epoch when due. */
static void run_block(struct engy_cr_epochs *s, uint64_t b)
{
	s->blocks_since_last_step++;
	s->block = b;
	if (epoch_runs(s, b)) {
		s->last_epoch_block = b;
		s->pending_epoch_at = 0;
		s->epoch_index++;
		s->blocks_since_last_step = 0;
	}
}

int engy_cr_reveal_block_epochs(const struct engy_cr_epochs *s,
				uint64_t reveal_period, uint64_t *reveal_block,
				char *err, size_t errlen)
{
	if (s->tempo == 0) {
		engy_seterr(err, errlen,
			    "reveal block: tempo 0, the subnet runs no epochs");
		return -EINVAL;
	}
	if (reveal_period > (1u << 20) || s->block > UINT64_MAX / 4 ||
	    s->epoch_index > UINT64_MAX / 4) {
		engy_seterr(err, errlen,
			    "reveal block: reveal period %llu or block %llu "
			    "out of range",
			    (unsigned long long)reveal_period,
			    (unsigned long long)s->block);
		return -EINVAL;
	}
	/* The commit lands in the next block. */
	struct engy_cr_epochs st = *s;
	uint64_t at = s->block + 1;
	uint64_t target = epoch_before(&st, at) + reveal_period;
	uint64_t budget = (reveal_period + 1) * ENGY_CR_MAX_TEMPO;
	for (uint64_t b = at; b <= at + budget; b++) {
		if (epoch_before(&st, b) == target) {
			*reveal_block = b;
			return 0;
		}
		run_block(&st, b);
	}
	engy_seterr(err, errlen,
		    "reveal block: none within %llu blocks of %llu",
		    (unsigned long long)budget, (unsigned long long)at);
	return -EINVAL;
}

static int check_args(const struct engy_metadata *md,
		      const struct engy_meta_variant *v, unsigned version,
		      char *err, size_t errlen)
{
	bool has_commit = false, has_round = false, has_netuid = false,
	     has_version = false;
	for (uint32_t i = 0; i < v->n_fields; i++) {
		const char *nm = v->fields[i].name ? v->fields[i].name : "";
		uint32_t t = v->fields[i].type;
		if (!strcmp(nm, "netuid") &&
		    engy_meta_is_prim(md, t, ENGY_PRIM_U16))
			has_netuid = true;
		else if (!strcmp(nm, "commit") &&
			 engy_meta_is_seq_of(md, t, ENGY_PRIM_U8))
			has_commit = true;
		else if (!strcmp(nm, "reveal_round") &&
			 engy_meta_is_prim(md, t, ENGY_PRIM_U64))
			has_round = true;
		else if (!strcmp(nm, "commit_reveal_version") &&
			 engy_meta_is_prim(md, t, ENGY_PRIM_U16))
			has_version = true;
		else {
			engy_seterr(err, errlen,
				    "%s: argument %u (%s) is not one engy "
				    "encodes",
				    v->name, i, nm);
			return -EPROTO;
		}
	}
	if (!has_netuid || !has_commit || !has_round ||
	    (version == 4 && !has_version)) {
		engy_seterr(err, errlen,
			    "%s lacks an argument engy needs (netuid, commit, "
			    "reveal_round%s)",
			    v->name,
			    version == 4 ? ", commit_reveal_version" : "");
		return -EPROTO;
	}
	return 0;
}

int engy_cr_find_call(const struct engy_metadata *md, unsigned version,
		      struct engy_cr_call *c, char *err, size_t errlen)
{
	if (version == 0)
		version = 3;
	if (version != 3 && version != 4) {
		engy_seterr(err, errlen,
			    "the chain runs commit-reveal version %u; engy "
			    "speaks 3 and 4: nothing submitted",
			    version);
		return -EPROTONOSUPPORT;
	}
	memset(c, 0, sizeof(*c));
	c->version = version;
	c->name = version == 3 ? "commit_crv3_weights"
			       : "commit_timelocked_weights";
	if (engy_meta_call(md, "SubtensorModule", c->name, &c->pallet, &c->call,
			   &c->v)) {
		engy_seterr(err, errlen,
			    "commit-reveal version %u: the runtime has no "
			    "SubtensorModule.%s",
			    version, c->name);
		return -ENOENT;
	}
	return check_args(md, c->v, version, err, errlen);
}

int engy_cr_call_encode(const struct engy_metadata *md,
			const struct engy_cr_call *c, uint16_t netuid,
			const uint8_t *commit, size_t len,
			uint64_t reveal_round, struct engy_scale_buf *out,
			char *err, size_t errlen)
{
	int rc = check_args(md, c->v, c->version, err, errlen);
	if (rc)
		return rc;
	engy_scale_put_u8(out, c->pallet);
	engy_scale_put_u8(out, c->call);
	for (uint32_t i = 0; i < c->v->n_fields; i++) {
		const char *nm = c->v->fields[i].name;
		if (!strcmp(nm, "netuid"))
			engy_scale_put_u16(out, netuid);
		else if (!strcmp(nm, "commit"))
			engy_scale_put_vec(out, commit, len);
		else if (!strcmp(nm, "reveal_round"))
			engy_scale_put_u64(out, reveal_round);
		else
			engy_scale_put_u16(out, (uint16_t)c->version);
	}
	return out->err;
}

int engy_cr_schedule_of(const struct engy_metadata *md, char *err,
			size_t errlen)
{
	static const char *const items[] = ENGY_CR_EPOCH_ITEMS;
	const size_t n = sizeof(items) / sizeof(items[0]);
	char missing[128] = "";
	size_t have = 0, marks = 0, i;

	for (i = 0; i < n; i++) {
		bool mark = strcmp(items[i], "BlocksSinceLastStep") != 0;

		if (engy_meta_entry(md, "SubtensorModule", items[i])) {
			have++;
			marks += mark;
		} else {
			size_t l = strlen(missing);

			snprintf(missing + l, sizeof(missing) - l, "%s%s",
				 l ? ", " : "", items[i]);
		}
	}
	if (marks == 0)
		return ENGY_CR_SCHED_TEMPO;
	if (have == n)
		return ENGY_CR_SCHED_STATEFUL;
	engy_seterr(err, errlen,
		    "the runtime has part of the stateful epoch schedule "
		    "(SubtensorModule lacks %s)",
		    missing);
	return -EPROTO;
}

const char *engy_cr_schedule_name(int schedule)
{
	return schedule == ENGY_CR_SCHED_STATEFUL ? "stateful" : "tempo";
}
