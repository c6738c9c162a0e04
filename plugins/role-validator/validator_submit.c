/* SPDX-License-Identifier: MIT */
/*
 * The validator tick from a fresh metagraph on: resolve hotkeys to uids,
 * fall back to standby when nothing lands, submit, and write the state
 * file only after the chain says the weights were set.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validator_int.h"

/* What an operator should read into a chain error. */
static const char *hint(const char *error)
{
	static const struct {
		const char *needle, *hint;
	} hints[] = {
		{ "NoValidatorPermit", "no validator permit: the hotkey holds "
				       "no validator permit on this subnet" },
		{ "SettingWeightsTooFast",
		  "rate limited: too soon after this hotkey's last weights" },
		{ "RateLimitExceeded",
		  "rate limited: too soon after this hotkey's last weights" },
		{ "NotRegistered",
		  "the hotkey is not registered on this subnet" },
		{ "UidNotFound",
		  "the hotkey is not registered on this subnet" },
		{ "CommitRevealEnabled",
		  "commit-reveal is enabled on this subnet" },
		{ "IncorrectWeightVersionKey",
		  "the subnet wants a higher weights version key" },
		{ "NotEnoughStake", "not enough stake to set weights" },
		{ "CommittingWeightsTooFast",
		  "rate limited: too soon after this hotkey's last commit" },
		{ "StakeAmountTooLow", "not enough stake to set weights" },
	};
	size_t i;

	for (i = 0; error && i < sizeof(hints) / sizeof(hints[0]); i++)
		if (strstr(error, hints[i].needle))
			return hints[i].hint;
	return NULL;
}

static long find_account(const struct engy_chain_metagraph *m,
			 const uint8_t acc[32])
{
	size_t u;

	for (u = 0; m->uids && u < m->n && u <= UINT16_MAX; u++)
		if (memcmp(m->uids[u], acc, 32) == 0)
			return (long)u;
	return -1;
}

static void log_dropped(struct tick *t, const struct engy_chain_metagraph *m,
			const struct engy_valrow *rows, size_t n,
			const struct engy_valresolved *res, const char *what)
{
	size_t i, shown = 0;

	if (!res->dropped)
		return;
	for (i = 0; i < n && shown < 16; i++) {
		uint8_t acc[32];

		if (engy_ss58_decode(rows[i].hotkey, acc, NULL) == 0 &&
		    find_account(m, acc) >= 0)
			continue;
		val_log(t->v, ENGY_LOG_INFO,
			"event=hotkey_unregistered vector=%s hotkey=%s "
			"weight=%u",
			what, rows[i].hotkey, rows[i].weight);
		shown++;
	}
	val_log(t->v, ENGY_LOG_WARNING,
		"event=hotkeys_dropped vector=%s count=%zu of=%zu "
		"weight_share_pct=%.1f reason=\"not registered on subnet "
		"%lld\"",
		what, res->dropped, n,
		res->total ? 100.0 * (double)res->dropped_weight /
				     (double)res->total
			   : 0.0,
		(long long)t->v->c->netuid);
}

/* A hotkey listed twice is summed into its uid: say so. */
static void log_duplicates(struct tick *t, const struct engy_valrow *rows,
			   const struct engy_valresolved *res, const char *what)
{
	if (!res->duplicates)
		return;
	val_log(t->v, ENGY_LOG_WARNING,
		"event=hotkeys_duplicate vector=%s count=%zu first=%s "
		"effect=\"each repeated hotkey's weights are summed into its "
		"one uid (the chain refuses duplicate uids)\"",
		what, res->duplicates, rows[res->first_duplicate].hotkey);
}

/* A commit that did not land: the same outcomes, naming the path. */
static void commit_failed(struct tick *t, const struct engy_chain_submit *r,
			  const char *h)
{
	const char *e = r->error ? r->error : strerror(-r->status);

	if (r->status == 0 && r->included)
		val_tick_end(t, "failed",
			     "epoch=%" PRIu64 " source=%s block=%" PRIu64
			     " path=commit_v%u error=\"%s\"%s%s%s reason=\"the "
			     "commit was included but failed; nothing "
			     "recorded\"",
			     t->epoch, t->source, r->block, t->cr_version, e,
			     h ? " hint=\"" : "", h ? h : "", h ? "\"" : "");
	else if (r->status == 0)
		val_tick_end(t, "refused",
			     "epoch=%" PRIu64
			     " source=%s path=commit_v%u error=\"%s\"%s%s%s "
			     "reason=\"the node refused the commit; nothing "
			     "recorded\"",
			     t->epoch, t->source, t->cr_version, e,
			     h ? " hint=\"" : "", h ? h : "", h ? "\"" : "");
	else if (r->status == -ENOTSUP || r->status == -EINVAL ||
		 r->status == -EPROTONOSUPPORT)
		val_tick_end(t, "refused",
			     "epoch=%" PRIu64 " source=%s path=commit_v%u "
			     "error=\"%s\" reason=\"the chain plugin refused "
			     "to commit; nothing submitted\"",
			     t->epoch, t->source, t->cr_version, e);
	else
		val_tick_end(t, "failed",
			     "epoch=%" PRIu64 " source=%s path=commit_v%u "
			     "error=\"%s\" reason=\"the commit did not "
			     "complete; nothing recorded\"",
			     t->epoch, t->source, t->cr_version, e);
}

static void after_submit(void *arg, const struct engy_chain_submit *r)
{
	struct tick *t = arg;
	struct val *v = t->v;
	struct engy_valstate *st = &t->st;
	const char *h = hint(r->error);
	bool had_block = st->last.has_block;
	uint64_t prev = st->last.block;
	char since[32];
	int rc;

	v->inflight--;
	if (r->status == 0 && r->included && r->success) {
		st->last.has_applied = true;
		st->last.applied = t->epoch;
		st->last.has_block = true;
		st->last.block = r->block;
		st->last.has_ts = true;
		st->last.ts = (int64_t)time(NULL);
		rc = 0;
		if (t->fresh && !t->standby) {
			rc = engy_valstate_set_cache(st, t->rows, t->n_rows);
			st->has_digest = t->digest[0] != '\0';
			memcpy(st->digest, t->digest, sizeof(st->digest));
			st->has_cached_epoch = true;
			st->cached_epoch = t->epoch;
		}
		t->st_on_disk = false;
		if (!rc)
			rc = engy_valstate_save(v->state_path, st);
		if (!rc)
			t->st_on_disk = true;
		if (rc)
			val_log(v, ENGY_LOG_ERR,
				"event=state_write_failed path=%s error=\"%s\" "
				"effect=\"the next tick rewrites it first and "
				"submits nothing until it can\"",
				v->state_path, strerror(-rc));
		val_record(v, st);
		if (had_block && r->block >= prev)
			snprintf(since, sizeof(since), "%" PRIu64,
				 r->block - prev);
		else
			strcpy(since, "none");
		if (t->commit) {
			snprintf(v->last_path, sizeof(v->last_path),
				 "commit_v%u", r->cr_version);
			v->last_reveal_round = r->reveal_round;
			v->last_reveal_block = r->reveal_block;
			val_tick_end(
				t, "submitted",
				"epoch=%" PRIu64 " source=%s standby=%s "
				"uids=%zu block=%" PRIu64
				" blocks_since_last=%s path=%s reveal_round=%" PRIu64
				" reveal_block=%" PRIu64
				" reveal_in_blocks=%" PRIu64,
				t->epoch, t->source, t->standby ? "yes" : "no",
				t->res.n, r->block, since, v->last_path,
				r->reveal_round, r->reveal_block,
				r->reveal_block > r->block
					? r->reveal_block - r->block
					: 0);
			return;
		}
		strcpy(v->last_path, "set_weights");
		v->last_reveal_round = v->last_reveal_block = 0;
		val_tick_end(t, "submitted",
			     "epoch=%" PRIu64
			     " source=%s standby=%s uids=%zu block=%" PRIu64
			     " blocks_since_last=%s path=set_weights",
			     t->epoch, t->source, t->standby ? "yes" : "no",
			     t->res.n, r->block, since);
		return;
	}
	if (t->commit) {
		commit_failed(t, r, h);
		return;
	}
	if (r->status == 0 && r->included)
		val_tick_end(t, "failed",
			     "epoch=%" PRIu64 " source=%s block=%" PRIu64
			     " error=\"%s\"%s%s%s reason=\"set_weights was "
			     "included but failed; nothing recorded\"",
			     t->epoch, t->source, r->block,
			     r->error ? r->error : "unknown",
			     h ? " hint=\"" : "", h ? h : "", h ? "\"" : "");
	else if (r->status == 0)
		val_tick_end(t, "refused",
			     "epoch=%" PRIu64
			     " source=%s error=\"%s\"%s%s%s reason=\"the node "
			     "refused set_weights; nothing recorded\"",
			     t->epoch, t->source,
			     r->error ? r->error : "unknown",
			     h ? " hint=\"" : "", h ? h : "", h ? "\"" : "");
	else
		val_tick_end(
			t, "failed",
			"epoch=%" PRIu64
			" source=%s error=\"%s\"%s%s%s reason=\"set_weights "
			"did not complete; nothing recorded\"",
			t->epoch, t->source,
			r->error ? r->error : strerror(-r->status),
			h ? " hint=\"" : "", h ? h : "", h ? "\"" : "");
}

/* Standby: the cache if it lands, else a burn to the owner if registered. */
static bool standby(struct tick *t, const struct engy_chain_metagraph *m)
{
	struct val *v = t->v;
	uint8_t owner[32];
	long uid;

	engy_valresolved_free(&t->res);
	if (t->fresh && t->st.has_cache &&
	    engy_valsched_resolve(t->st.rows, t->st.n_rows, m->uids, m->n,
				  &t->res) == 0 &&
	    t->res.n) {
		log_dropped(t, m, t->st.rows, t->st.n_rows, &t->res, "cached");
		log_duplicates(t, t->st.rows, &t->res, "cached");
		t->source = "cached";
		return true;
	}
	engy_valresolved_free(&t->res);
	if (engy_ss58_decode(v->owner, owner, NULL) ||
	    (uid = find_account(m, owner)) < 0)
		return false;
	t->res.uids = calloc(1, sizeof(uint16_t));
	t->res.weights = calloc(1, sizeof(uint16_t));
	if (!t->res.uids || !t->res.weights) {
		engy_valresolved_free(&t->res);
		return false;
	}
	t->res.uids[0] = (uint16_t)uid;
	t->res.weights[0] = 65535;
	t->res.n = 1;
	t->source = "burn";
	return true;
}

/* The metagraph can be worked with; else the tick ends, saying why. */
static bool metagraph_usable(struct tick *t,
			     const struct engy_chain_metagraph *m)
{
	struct val *v = t->v;

	if (m->status) {
		val_tick_end(t, "failed",
			     "epoch=%" PRIu64 " reason=\"metagraph: %s\"",
			     t->epoch,
			     m->error ? m->error : strerror(-m->status));
		return false;
	}
	if (m->n && !m->uids) {
		val_tick_end(t, "failed",
			     "epoch=%" PRIu64 " reason=\"metagraph: %zu uids "
			     "without accounts\"",
			     t->epoch, m->n);
		return false;
	}
	if (!m->exists) {
		val_tick_end(
			t, "failed",
			"epoch=%" PRIu64
			" reason=\"subnet %lld does not exist on this chain\"",
			t->epoch, (long long)v->c->netuid);
		return false;
	}
	if (m->commit_reveal && v->ch->commit_weights) {
		if (m->cr_version != 3 && m->cr_version != 4) {
			val_tick_end(
				t, "refused",
				"epoch=%" PRIu64
				" reason=\"commit-reveal is enabled on "
				"subnet %lld in version %u, which engy does "
				"not speak (it commits in versions 3 and "
				"4); nothing submitted\"",
				t->epoch, (long long)v->c->netuid,
				m->cr_version);
			return false;
		}
		if (!m->can_commit) {
			val_tick_end(t, "refused",
				     "epoch=%" PRIu64
				     " reason=\"commit-reveal is enabled on "
				     "subnet %lld (version %u) and the chain "
				     "plugin cannot commit: %s; nothing "
				     "submitted\"",
				     t->epoch, (long long)v->c->netuid,
				     m->cr_version,
				     m->cr_why ? m->cr_why : "no reason given");
			return false;
		}
		t->commit = true;
		t->cr_version = m->cr_version;
		return true;
	}
	if (m->commit_reveal) {
		val_tick_end(t, "refused",
			     "epoch=%" PRIu64
			     " reason=\"commit-reveal is enabled on subnet "
			     "%lld: the chain refuses set_weights there "
			     "(CommitRevealEnabled) and engy does not submit "
			     "commit/reveal yet; nothing submitted\"",
			     t->epoch, (long long)v->c->netuid);
		return false;
	}
	return true;
}

/* What the chain is likely to refuse, said before submitting. */
static void warn_before_submit(struct tick *t,
			       const struct engy_chain_metagraph *m)
{
	struct val *v = t->v;
	const char *target;
	long me = find_account(m, v->hk.kp.pub);

	if (me < 0)
		val_log(v, ENGY_LOG_WARNING,
			"event=not_registered hotkey=%s netuid=%lld "
			"effect=\"the chain will refuse these weights\"",
			v->hk.ss58, (long long)v->c->netuid);
	else if (m->permit && !m->permit[me])
		val_log(v, ENGY_LOG_WARNING,
			"event=no_validator_permit hotkey=%s uid=%ld "
			"effect=\"the chain is likely to refuse these weights "
			"(no validator permit)\"",
			v->hk.ss58, me);
	target = engy_valrows_burn_target(t->rows, t->n_rows);
	if (target && strcmp(target, v->owner) != 0)
		val_log(v, ENGY_LOG_WARNING,
			"event=burn_target_unexpected target=%s expected=%s "
			"effect=\"submitted as signed; report it to the "
			"provider\"",
			target, v->owner);
}

/* Nothing of the vector lands: standby, or the tick ends. */
static bool go_standby(struct tick *t, const struct engy_chain_metagraph *m)
{
	struct val *v = t->v;

	val_log(v, ENGY_LOG_WARNING,
		"event=nothing_lands epoch=%" PRIu64
		" source=%s reason=\"no hotkey of the vector has a "
		"uid with weight\" effect=standby",
		t->epoch, t->source);
	if (!standby(t, m)) {
		val_tick_end(t, "skipped",
			     "epoch=%" PRIu64
			     " reason=\"standby: nothing lands, no cached "
			     "vector lands and the owner hotkey %s is not "
			     "registered; nothing submitted\"",
			     t->epoch, v->owner);
		return false;
	}
	t->standby = true;
	val_log(v, ENGY_LOG_NOTICE,
		"event=standby epoch=%" PRIu64 " submits=%s uids=%zu", t->epoch,
		t->source, t->res.n);
	return true;
}

static void submit(struct tick *t, const struct engy_chain_metagraph *m)
{
	struct val *v = t->v;
	struct engy_chain_weights w = { .size = sizeof(w) };
	int rc;

	w.netuid = (uint16_t)v->c->netuid;
	w.n = t->res.n;
	w.uids = t->res.uids;
	w.weights = t->res.weights;
	w.version_key = m->version_key;
	if (t->commit) {
		val_log(v, ENGY_LOG_INFO,
			"event=commit epoch=%" PRIu64 " version=%u "
			"reveal_period=%" PRIu64 " tempo=%u uids=%zu",
			t->epoch, t->cr_version, m->reveal_period, m->tempo,
			w.n);
		rc = v->ch->commit_weights(v->ci, &w, &v->signer, after_submit,
					   t);
	} else {
		rc = v->ch->set_weights(v->ci, &w, &v->signer, after_submit, t);
	}
	if (rc) {
		val_tick_end(t, "failed", "epoch=%" PRIu64 " reason=\"%s: %s\"",
			     t->epoch,
			     t->commit ? "commit_weights" : "set_weights",
			     strerror(-rc));
		return;
	}
	v->inflight++;
}

void val_after_metagraph(void *arg, const struct engy_chain_metagraph *m)
{
	struct tick *t = arg;

	t->v->inflight--;
	if (val_stopped(t) || !metagraph_usable(t, m))
		return;
	warn_before_submit(t, m);
	if (engy_valsched_resolve(t->rows, t->n_rows, m->uids, m->n, &t->res)) {
		val_tick_end(t, "failed", "reason=\"out of memory\"");
		return;
	}
	log_dropped(t, m, t->rows, t->n_rows, &t->res, t->source);
	log_duplicates(t, t->rows, &t->res, t->source);
	if (!t->res.n && !go_standby(t, m))
		return;
	submit(t, m);
}
