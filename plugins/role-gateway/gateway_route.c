/* SPDX-License-Identifier: MIT */
/*
 * Picking a worker for an attempt (specs/gateway.md, "Routing"):
 *
 *  1. candidates: eligible legs of the request's model with a free slot,
 *     limits that fit the request, not tried by this request yet (an
 *     internal request pinned to one worker has only that one);
 *  2. prefix affinity: weighted rendezvous hashing of the hash of the
 *     rendered prompt's leading affinity_chars with each candidate's
 *     (miner key, worker_name) picks the affine worker, so one prefix
 *     lands on one worker while that worker stays eligible, whatever
 *     else joins or leaves, and a reconnecting worker keeps its
 *     prefixes.  Weights are earned share x priority, so prefixes spread
 *     in proportion to measured capacity.  The affine worker is taken unless its load
 *     (inflight / capacity) exceeds the least loaded candidate's by more
 *     than affinity_slack: a hot prefix spills instead of queueing;
 *  3. otherwise smooth weighted round-robin (nginx's) with weights =
 *     free earned slots x priority: fair by earned capacity,
 *     deterministic, no starvation.  A worker's earned share starts at
 *     worker_start_inflight and grows by serving (gateway_relay.c);
 *     only when every candidate is at its earned share are the slots
 *     up to its ceiling used, weighted by the earned share.
 *
 * Priority is a bias, not a tier: a worker of priority p weighs 2^p
 * (p clamped to -8..8), so priority 1 gets about twice the share.
 */
#include <math.h>
#include <string.h>

#include "gateway_int.h"

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

uint64_t gw_route_affinity(const struct gw *g, const char *prompt, size_t len,
			   bool *use)
{
	size_t n = len < (size_t)g->c->affinity_chars
			   ? len
			   : (size_t)g->c->affinity_chars;

	*use = len > 0 && len >= (size_t)g->c->affinity_min_chars;
	return mix(fnv(prompt, n, 0xcbf29ce484222325ull));
}

bool gw_worker_eligible(const struct gw *g, const struct gw_worker *w)
{
	if (!w->conn || w->reconnect_sent)
		return false;
	switch (w->state) {
	case GW_W_ACTIVE:
		return true;
	case GW_W_NEW:
		return w->first_party || !g->c->onboarding;
	case GW_W_PROBING:
	case GW_W_PULLED:
		return w->first_party;
	default:
		return false;
	}
}

bool gw_route_constrained(const struct gw *g, const char *model,
			  unsigned constraint)
{
	const struct gw_worker *w;

	for (w = g->workers; w; w = w->next)
		if (gw_worker_eligible(g, w) && strcmp(w->model, model) == 0 &&
		    (constraint & ~w->constraints) == 0)
			return true;
	return false;
}

bool gw_route_any(const struct gw *g, const char *model)
{
	const struct gw_worker *w;

	for (w = g->workers; w; w = w->next)
		if (gw_worker_eligible(g, w) && strcmp(w->model, model) == 0)
			return true;
	return false;
}

static int prio(const struct gw_worker *w)
{
	return w->priority < -8 ? -8 : w->priority > 8 ? 8 : w->priority;
}

static bool tried(const struct gw_req *r, const struct gw_worker *w)
{
	unsigned i;

	for (i = 0; i < r->attempts && i < GW_MAX_ATTEMPTS; i++)
		if (r->tried[i] == w->id)
			return true;
	return false;
}

static bool candidate(const struct gw *g, const struct gw_req *r,
		      const struct gw_worker *w)
{
	if (r->pin)
		return w->id == r->pin && w->conn && !w->reconnect_sent &&
		       w->state >= GW_W_NEW && w->state < GW_W_CLOSED &&
		       gw_worker_busy(w) < w->max_inflight;
	return gw_worker_eligible(g, w) &&
	       gw_worker_busy(w) < w->max_inflight &&
	       strcmp(w->model, r->spec.name) == 0 && !tried(r, w) &&
	       (r->areq.constraint & ~w->constraints) == 0 &&
	       r->areq.max_tokens <= w->max_output_tokens &&
	       r->prompt_bound <= w->max_input_tokens;
}

static double load(const struct gw_worker *w)
{
	return (double)gw_worker_busy(w) / (double)w->max_inflight;
}

/* The earned share, within the ceiling (a heartbeat may lower it). */
static unsigned earned(const struct gw_worker *w)
{
	unsigned e = w->earned ? w->earned : 1;

	return e < w->max_inflight ? e : w->max_inflight;
}

/* -w / ln(u), u uniform in (0, 1) from the hash: the weighted
 * rendezvous score (highest wins). */
static double hrw(uint64_t affinity, const struct gw_worker *w)
{
	double u = ((double)(mix(affinity ^ w->ident) >> 11) + 0.5) /
		   9007199254740992.0;
	double weight = (double)earned(w) * ldexp(1.0, prio(w));

	return weight / -log(u);
}

struct gw_worker *gw_route_pick(struct gw *g, struct gw_req *r)
{
	struct gw_worker *w, *best = NULL, *aff = NULL;
	double min_load = 2, aff_score = -1;
	int64_t total = 0;
	bool room = false; /* a candidate below its earned share */

	for (w = g->workers; w; w = w->next) {
		if (!candidate(g, r, w))
			continue;
		if (load(w) < min_load)
			min_load = load(w);
		room |= gw_worker_busy(w) < earned(w);
		if (r->has_affinity) {
			double s = hrw(r->affinity, w);

			if (s > aff_score) {
				aff_score = s;
				aff = w;
			}
		}
	}
	if (aff && load(aff) <= min_load + g->c->affinity_slack)
		return aff;
	for (w = g->workers; w; w = w->next) {
		int64_t weight;

		if (!candidate(g, r, w))
			continue;
		if (room && gw_worker_busy(w) >= earned(w))
			continue;
		weight = (int64_t)(room ? earned(w) - gw_worker_busy(w)
					: earned(w))
			 << (prio(w) + 8);
		w->swrr += weight;
		total += weight;
		if (!best || w->swrr > best->swrr)
			best = w;
	}
	if (best)
		best->swrr -= total;
	return best;
}
