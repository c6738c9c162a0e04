/* SPDX-License-Identifier: MIT */
/*
 * One tick of the light validator, as a chain of callbacks on the loop
 * thread: fetch (pool) -> verify -> schedule -> block -> metagraph ->
 * resolve -> set_weights -> state file; then the heartbeat and the next
 * tick.  Every tick ends in exactly one `event=tick` line saying what it
 * did or why it did not.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "fsutil.h"
#include "validator_int.h"

#define MAX_DROPPED_LOGGED 16

static void tick_free(struct tick *t)
{
	engy_valstate_free(&t->st);
	free(t->rows);
	val_fetch_free(&t->fetch);
	engy_valresolved_free(&t->res);
	free(t);
}

void val_stamp(struct val *v, int64_t now, const char *outcome)
{
	char buf[640], path[160] = "";
	int n;

	/* The last submission's path; a commit says when it is revealed. */
	if (strncmp(v->last_path, "commit", 6) == 0)
		snprintf(path, sizeof(path),
			 ",\"path\":\"%s\",\"reveal_round\":%" PRIu64
			 ",\"reveal_block\":%" PRIu64,
			 v->last_path, v->last_reveal_round,
			 v->last_reveal_block);
	else if (v->last_path[0])
		snprintf(path, sizeof(path), ",\"path\":\"%s\"", v->last_path);
	n = snprintf(buf, sizeof(buf),
		     "{\"v\":1,\"ts\":%lld,\"pid\":%ld,\"poll_s\":%lld,\"stall_"
		     "limit_s\":%lld,\"outcome\":\"%s\"%s}\n",
		     (long long)now, (long)getpid(), (long long)v->c->poll_s,
		     (long long)v->stall_limit_s, outcome, path);
	if (n < 0 || (size_t)n >= sizeof(buf) ||
	    engy_write_file_atomic(v->hb_path, buf, (size_t)n, 0644) < 0)
		val_log(v, ENGY_LOG_WARNING,
			"event=heartbeat_write_failed path=%s", v->hb_path);
}

/* Finish the tick: one summary line, the heartbeat, the next tick. */
void val_tick_end(struct tick *t, const char *outcome, const char *fmt, ...)
{
	struct val *v = t->v;
	struct timeval tv = { (time_t)v->c->poll_s, 0 };
	char why[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	val_log(v,
		strcmp(outcome, "failed") == 0 ||
				strcmp(outcome, "refused") == 0
			? ENGY_LOG_WARNING
			: ENGY_LOG_NOTICE,
		"event=tick n=%u outcome=%s %s", v->n_ticks, outcome, why);
	val_stamp(v, t->now, outcome);
	clock_gettime(CLOCK_MONOTONIC, &v->last_done);
	/* A supervisor's watchdog (systemd WatchdogSec=) is fed per tick,
	 * whatever its outcome, like the heartbeat file. */
	if (v->h->size >= offsetof(struct engy_host, notify) + sizeof(void *) &&
	    v->h->notify)
		v->h->notify(v->h, "WATCHDOG=1");
	if (!v->stopping) {
		val_provider_heartbeat(v, t->st_on_disk ? &t->st : NULL);
		evtimer_add(v->tick_ev, &tv);
	}
	v->t = NULL;
	tick_free(t);
}

bool val_stopped(struct tick *t)
{
	if (!t->v->stopping)
		return false;
	val_tick_end(t, "stopped", "reason=\"engyd is shutting down\"");
	return true;
}

void val_fmt_wait(char *buf, size_t cap, int64_t s)
{
	if (s >= 90)
		snprintf(buf, cap, "~%lld min", (long long)((s + 30) / 60));
	else
		snprintf(buf, cap, "~%lld s", (long long)s);
}

static void after_block(void *arg, const struct engy_chain_block *b);

static void go_chain(struct tick *t)
{
	struct val *v = t->v;
	int rc = v->ch->block(v->ci, after_block, t);

	v->inflight++;
	if (rc) {
		struct engy_chain_block b = { .status = rc,
					      .error = strerror(-rc) };

		after_block(t, &b);
	}
}

/* The vector to work with: verified now, else the cache. */
static void choose(struct tick *t, const char *why_not)
{
	struct engy_valstate *st = &t->st;
	struct val *v = t->v;
	int64_t wait;
	char w[32];

	if (!t->fresh) {
		if (!st->has_cache || !st->last.has_applied) {
			val_tick_end(t, "skipped",
				     "reason=\"%s; no cached vector to fall "
				     "back on\"",
				     why_not);
			return;
		}
		free(t->rows);
		t->rows = calloc(st->n_rows, sizeof(*t->rows));
		if (!t->rows) {
			val_tick_end(t, "failed", "reason=\"out of memory\"");
			return;
		}
		memcpy(t->rows, st->rows, st->n_rows * sizeof(*t->rows));
		t->n_rows = st->n_rows;
		t->epoch = st->last.applied;
		snprintf(t->digest, sizeof(t->digest), "%s",
			 st->has_digest ? st->digest : "");
		t->source = "cached";
		val_log(v, ENGY_LOG_NOTICE,
			"event=fallback_cached epoch=%" PRIu64
			" rows=%zu reason=\"%s\"",
			t->epoch, t->n_rows, why_not);
	}
	if (engy_valsched_pregate(&st->last, t->epoch, t->now,
				  (uint32_t)v->c->resubmit_blocks,
				  (uint32_t)v->c->block_s, &wait)) {
		val_fmt_wait(w, sizeof(w), wait);
		val_tick_end(t, "skipped",
			     "epoch=%" PRIu64
			     " source=%s reason=\"epoch %" PRIu64
			     " already submitted; next resubmit in %s (not "
			     "contacting the chain yet)\"",
			     t->epoch, t->source, t->epoch, w);
		return;
	}
	go_chain(t);
}

static void verify(struct tick *t)
{
	struct val *v = t->v;
	struct engy_epoch_verified ok = { 0 };
	enum engy_epoch_reject rj;
	char why[256], note[400];

	if (t->fetch.rc) {
		val_log(v, ENGY_LOG_WARNING,
			"event=fetch_failed url=%s%s error=\"%s\"", v->api,
			VAL_EPOCH_PATH, t->fetch.error);
		snprintf(note, sizeof(note), "fetch failed: %s",
			 t->fetch.error);
		choose(t, note);
		return;
	}
	rj = engy_epoch_payload_check(t->fetch.body, t->fetch.len,
				      (uint16_t)v->c->netuid, v->master_pub,
				      &ok, why, sizeof(why));
	if (rj == ENGY_EPOCH_ACCEPT &&
	    engy_valrows_from_json(ok.result_json, &t->rows, &t->n_rows, why,
				   sizeof(why)))
		rj = ENGY_EPOCH_REJECT_MALFORMED;
	if (rj != ENGY_EPOCH_ACCEPT) {
		val_log(v, ENGY_LOG_WARNING,
			"event=payload_rejected reason=%s detail=\"%s\"",
			engy_epoch_reject_name(rj), why);
		engy_epoch_verified_free(&ok);
		snprintf(note, sizeof(note), "payload rejected: %s",
			 engy_epoch_reject_name(rj));
		choose(t, note);
		return;
	}
	t->epoch = ok.epoch_index;
	memcpy(t->digest, ok.digest, sizeof(t->digest));
	engy_epoch_verified_free(&ok);
	val_log(v, ENGY_LOG_INFO,
		"event=payload_verified epoch=%" PRIu64 " digest=%s rows=%zu",
		t->epoch, t->digest, t->n_rows);
	if (t->st.last.has_applied && t->epoch < t->st.last.applied) {
		val_log(v, ENGY_LOG_WARNING,
			"event=payload_older epoch=%" PRIu64
			" last_applied=%" PRIu64
			" reason=\"an older epoch is never submitted (replay "
			"guard)\"",
			t->epoch, t->st.last.applied);
		free(t->rows);
		t->rows = NULL;
		t->n_rows = 0;
		snprintf(note, sizeof(note),
			 "payload epoch %" PRIu64
			 " older than applied %" PRIu64,
			 t->epoch, t->st.last.applied);
		choose(t, note);
		return;
	}
	t->fresh = true;
	t->source = "payload";
	choose(t, "");
}

static void fetch_fn(void *arg)
{
	struct tick *t = arg;

	val_fetch_run(t->v, &t->fetch);
}

static void fetch_done(void *arg, int rc)
{
	struct tick *t = arg;

	t->v->inflight--;
	if (rc && !t->fetch.rc) {
		t->fetch.rc = rc;
		snprintf(t->fetch.error, sizeof(t->fetch.error), "%s",
			 strerror(-rc));
	}
	if (val_stopped(t))
		return;
	verify(t);
}

void val_record(struct val *v, const struct engy_valstate *st)
{
	struct engy_valstate *r = &v->recorded;

	/* Without memory for the cache, the epoch alone still guards. */
	if (engy_valstate_set_cache(r, st->rows, st->n_rows))
		engy_valstate_free(r);
	r->last = st->last;
	r->has_digest = st->has_digest;
	memcpy(r->digest, st->digest, sizeof(r->digest));
	r->has_cached_epoch = st->has_cached_epoch;
	r->cached_epoch = st->cached_epoch;
	v->has_recorded = true;
}

/*
 * The state file must hold at least the epoch this process last recorded:
 * if it was lost (or never written), write it again from memory, or else
 * refuse the tick, for without it the replay guard would pass anything.
 */
static bool state_holds(struct tick *t)
{
	struct val *v = t->v;
	const struct engy_valsched_last *r = &v->recorded.last;
	int rc;

	if (!v->has_recorded ||
	    (t->st.last.has_applied && t->st.last.applied >= r->applied))
		return true;
	rc = engy_valstate_save(v->state_path, &v->recorded);
	if (rc) {
		val_tick_end(
			t, "failed",
			"reason=\"state file %s does not hold epoch %" PRIu64
			", submitted by this process, and cannot be "
			"rewritten: %s; the replay guard does not run "
			"without it: nothing submitted\"",
			v->state_path, r->applied, strerror(-rc));
		return false;
	}
	val_log(v, ENGY_LOG_WARNING,
		"event=state_rewritten path=%s last_applied=%" PRIu64
		" reason=\"the state file did not hold what this process "
		"submitted\"",
		v->state_path, r->applied);
	engy_valstate_free(&t->st);
	t->st = v->recorded;
	t->st.rows = NULL;
	t->st.n_rows = 0;
	t->st.has_cache = false;
	if (engy_valstate_set_cache(&t->st, v->recorded.rows,
				    v->recorded.n_rows)) {
		val_tick_end(t, "failed", "reason=\"out of memory\"");
		return false;
	}
	t->st.has_cache = v->recorded.has_cache;
	return true;
}

void val_tick_start(struct val *v)
{
	char dropped[128];
	struct tick *t;
	int rc;

	if (v->t || v->stopping)
		return;
	t = calloc(1, sizeof(*t));
	if (!t)
		return;
	v->t = t;
	t->v = v;
	t->now = (int64_t)time(NULL);
	v->n_ticks++;
	rc = engy_valstate_load(v->state_path, &t->st, dropped,
				sizeof(dropped));
	if (rc) {
		val_tick_end(t, "failed", "reason=\"state file %s: %s\"",
			     v->state_path, strerror(-rc));
		return;
	}
	if (dropped[0])
		val_log(v, ENGY_LOG_WARNING,
			"event=state_fields_dropped path=%s fields=%s "
			"effect=\"those fields are treated as unknown; "
			"nothing of them is submitted\"",
			v->state_path, dropped);
	if (!state_holds(t))
		return;
	t->st_on_disk = true;
	rc = v->h->work(v->h, fetch_fn, fetch_done, t);
	if (rc) {
		val_tick_end(t, "failed",
			     "reason=\"cannot queue the fetch: %s\"",
			     strerror(-rc));
		return;
	}
	v->inflight++;
}

static void after_block(void *arg, const struct engy_chain_block *b)
{
	struct tick *t = arg;
	struct val *v = t->v;
	struct engy_valsched_decision dec;
	char w[32];
	int rc;

	v->inflight--;
	if (val_stopped(t))
		return;
	if (b->status == 0) {
		t->has_block = true;
		t->block = b->number;
	} else {
		val_log(v, ENGY_LOG_WARNING,
			"event=block_unknown error=\"%s\" effect=\"schedule "
			"by the clock\"",
			b->error ? b->error : strerror(-b->status));
	}
	engy_valsched_decide(&t->st.last, t->epoch, t->has_block, t->block,
			     t->now, (uint32_t)v->c->resubmit_blocks,
			     (uint32_t)v->c->block_s, &dec);
	if (dec.verdict == ENGY_VALSCHED_NOT_YET) {
		val_fmt_wait(w, sizeof(w), dec.wait_s);
		if (dec.by_block)
			val_tick_end(
				t, "skipped",
				"epoch=%" PRIu64 " source=%s block=%" PRIu64
				" reason=\"epoch %" PRIu64
				" already submitted; next resubmit in %" PRIu64
				" blocks (%s)\"",
				t->epoch, t->source, t->block, t->epoch,
				dec.wait_blocks, w);
		else
			val_tick_end(t, "skipped",
				     "epoch=%" PRIu64
				     " source=%s reason=\"epoch %" PRIu64
				     " already submitted; next resubmit in %s "
				     "by the clock\"",
				     t->epoch, t->source, t->epoch, w);
		return;
	}
	if (dec.verdict == ENGY_VALSCHED_OLDER) {
		val_tick_end(t, "skipped", "epoch=%" PRIu64 " reason=\"%s\"",
			     t->epoch, dec.why);
		return;
	}
	val_log(v, ENGY_LOG_INFO,
		"event=schedule epoch=%" PRIu64 " decision=%s why=\"%s\"",
		t->epoch, dec.verdict == ENGY_VALSCHED_NEW ? "new" : "due",
		dec.why);
	rc = v->ch->metagraph(v->ci, (uint16_t)v->c->netuid,
			      val_after_metagraph, t);
	if (rc) {
		val_tick_end(t, "failed", "reason=\"metagraph: %s\"",
			     strerror(-rc));
		return;
	}
	v->inflight++;
}
