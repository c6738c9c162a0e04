/* SPDX-License-Identifier: MIT */
/*
 * A streamed request's `chunk` frames: the generated text is parsed as it
 * arrives (engy_genstream, the same rules as the final parse) and its
 * content goes out coalesced, at most one chunk per stream_flush_s, the
 * first at once.  Reasoning only with stream_reasoning (PROTOCOL.md's
 * chunk carries delta.content); tool calls never: they ride the response.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "../host.h"
#include "genparse.h"
#include "miner_req.h"
#include "tokenizer.h"

#define FFFD "\xef\xbf\xbd"
/* A tail of replacement characters longer than this is real text. */
#define HOLD_MAX 16

static bool append(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
	size_t c = *cap ? *cap : 256;
	char *q;

	while (c < *len + n + 1)
		c *= 2;
	if (c != *cap) {
		q = realloc(*buf, c);
		if (!q)
			return false;
		*buf = q;
		*cap = c;
	}
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
	s = engy_miner_chunk_json(r->corr_id, r->pc, r->pc_len, r->pr, r->pr_len,
				  &len);
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

/* Feed newly decoded text to the stream parser.  Byte-level BPE text is
 * the concatenation of the tokens' bytes, so only the new ids are decoded;
 * a character split over tokens (a trailing U+FFFD) waits for the rest. */
void mreq_stream(struct mreq *r, bool final)
{
	size_t n = final ? mreq_text_ids(r) : r->n_out, len = 0, i;
	char *text = NULL;

	/* A stop id may be the last token: its text is not the buyer's. */
	for (i = 0; !final && n > r->dec_from && i < r->n_stop; i++)
		if (r->out[n - 1] == r->stop[i]) {
			n--;
			break;
		}

	if (n > r->dec_from &&
	    engy_tokenizer_decode(r->m->tok, r->out + r->dec_from, n - r->dec_from,
				  true, &text, &len) == 0) {
		if (final || n - r->dec_from > HOLD_MAX || len < 3 ||
		    memcmp(text + len - 3, FFFD, 3) != 0) {
			engy_genstream_feed(r->gs, text, len);
			r->dec_from = n;
		}
	}
	free(text);
	if (final)
		engy_genstream_finish(r->gs);
	schedule_flush(r);
}

int mreq_stream_start(struct mreq *r)
{
	struct engy_genparse_opts po = { .think_open = r->ci.think_open,
					 .tools = r->ci.tools };

	if (engy_genstream_new(&po, on_delta, r, &r->gs) < 0)
		return -ENOMEM;
	r->flush_ev = evtimer_new(r->m->d->base, on_flush, r);
	return r->flush_ev ? 0 : -ENOMEM;
}
