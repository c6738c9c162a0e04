/* SPDX-License-Identifier: MIT */
/*
 * A streamed request's `chunk` frames: the generated text is parsed as it
 * arrives (engy_genstream, the same rules as the final parse) and its
 * content goes out coalesced, at most one chunk per stream_flush_s, the
 * first at once.  Reasoning only with stream_reasoning (specs/protocol.md §2's
 * chunk carries delta.content); tool calls never: they ride the response.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "genparse.h"
#include "grow.h"
#include "miner_req.h"
#include "tokenizer.h"

#define FFFD "\xef\xbf\xbd"
/* A tail of replacement characters longer than this is real text. */
#define HOLD_MAX 16

static bool append(char **buf, size_t *len, size_t *cap, const char *p,
		   size_t n)
{
	if (!engy_grow_by(buf, cap, *len + 1, n, 1))
		return false;
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
	return true;
}

static int on_delta(void *arg, const struct engy_gen_delta *d)
{
	struct mreq *r = arg;

	/* Tool calls ride the response; reasoning only when asked for. */
	if (d->kind == ENGY_GEN_CONTENT)
		append(&r->pc, &r->pc_len, &r->pc_cap, d->text, d->len);
	else if (d->kind == ENGY_GEN_REASONING && r->m->c->stream_reasoning)
		append(&r->pr, &r->pr_len, &r->pr_cap, d->text, d->len);
	return 0;
}

void mreq_flush(struct mreq *r)
{
	size_t len = 0;
	char *s;

	if (r->flush_ev)
		evtimer_del(r->flush_ev);
	if ((!r->pc_len && !r->pr_len) || r->cancelled || !r->conn)
		goto out;
	s = engy_miner_chunk_json(r->corr_id, r->pc, r->pc_len, r->pr,
				  r->pr_len, &len);
	if (miner_send(r->m, r->conn, s, len) == 0)
		r->chunks++;
	clock_gettime(CLOCK_MONOTONIC, &r->t_flush);
out:
	r->pc_len = r->pr_len = 0;
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
	mreq_flush(arg);
}

/* Deltas go out at most every stream_flush_s, never one per token. */
static void schedule_flush(struct mreq *r)
{
	double wait;
	struct timeval tv;

	if ((!r->pc_len && !r->pr_len) || !r->flush_ev ||
	    evtimer_pending(r->flush_ev, NULL))
		return;
	wait = r->m->c->stream_flush_s - miner_since(&r->t_flush);
	if (wait <= 0) {
		mreq_flush(r);
		return;
	}
	tv.tv_sec = (time_t)wait;
	tv.tv_usec = (suseconds_t)((wait - (double)tv.tv_sec) * 1e6);
	evtimer_add(r->flush_ev, &tv);
}

size_t mreq_text_ids(const struct mreq *r)
{
	if (r->done && r->res.finish == ENGY_FINISH_STOP && r->n_out &&
	    r->res.matched_stop >= 0 &&
	    r->out[r->n_out - 1] == (uint32_t)r->res.matched_stop)
		return r->n_out - 1;
	return r->n_out;
}

static bool append_text(struct mreq *r, const char *p, size_t n)
{
	return append(&r->text, &r->text_len, &r->text_cap, p, n);
}

/* The earliest stop string that ends in text from @old on. */
static void find_stop(struct mreq *r, size_t old)
{
	size_t i, len, from;
	const char *hit;

	for (i = 0; i < r->n_stop_str; i++) {
		len = strlen(r->stop_str[i]);
		from = old >= len - 1 ? old - (len - 1) : 0;
		hit = memmem(r->text + from, r->text_len - from, r->stop_str[i],
			     len);
		if (hit &&
		    (!r->stop_hit || (size_t)(hit - r->text) < r->stop_at)) {
			r->stop_hit = true;
			r->stop_at = (size_t)(hit - r->text);
			r->stop_which = i;
		}
	}
}

/* Decode the ids not yet in r->text.  Byte-level BPE text is the
 * concatenation of the tokens' bytes, so only new ids are decoded; a
 * character split over tokens (a trailing U+FFFD) waits for the rest.
 * Returns true when a stop string matched. */
static bool text_grow(struct mreq *r, bool final)
{
	size_t n = final ? mreq_text_ids(r) : r->n_out, len = 0, old, i;
	char *t = NULL;

	/* A stop id may be the last token: its text is not the buyer's. */
	for (i = 0; !final && n > r->dec_from && i < r->n_stop; i++)
		if (r->out[n - 1] == r->stop[i]) {
			n--;
			break;
		}
	if (r->stop_hit || n <= r->dec_from ||
	    engy_tokenizer_decode(r->m->tok, r->out + r->dec_from,
				  n - r->dec_from, true, &t, &len) < 0) {
		free(t);
		return false;
	}
	if (!final && n - r->dec_from <= HOLD_MAX && len >= 3 &&
	    memcmp(t + len - 3, FFFD, 3) == 0) {
		free(t);
		return false;
	}
	old = r->text_len;
	if (append_text(r, t, len))
		r->dec_from = n;
	free(t);
	if (r->n_stop_str)
		find_stop(r, old);
	return r->stop_hit;
}

bool mreq_text(struct mreq *r, bool final)
{
	bool hit = text_grow(r, final);
	size_t lim;

	if (!r->gs)
		return hit;
	/* While running, the tail that may begin a stop string waits. */
	lim = r->stop_hit ? r->stop_at : r->text_len;
	if (!final && !r->stop_hit && r->stop_max > 1)
		lim = lim > r->stop_max - 1 ? lim - (r->stop_max - 1) : 0;
	if (lim > r->fed) {
		engy_genstream_feed(r->gs, r->text + r->fed, lim - r->fed);
		r->fed = lim;
	}
	if (final)
		engy_genstream_finish(r->gs);
	schedule_flush(r);
	return hit;
}

int mreq_stream_start(struct mreq *r)
{
	struct engy_genparse_opts po = { .think_open = r->ci.think_open,
					 .tools = r->ci.tools };

	if (engy_genstream_new(&po, on_delta, r, &r->gs) < 0)
		return -ENOMEM;
	r->flush_ev = evtimer_new(r->m->h->evbase(r->m->h), on_flush, r);
	return r->flush_ev ? 0 : -ENOMEM;
}
