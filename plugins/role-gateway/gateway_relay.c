/* SPDX-License-Identifier: MIT */
/*
 * One attempt of a routed request on a worker's leg, from `serve` to its
 * end (specs/gateway.md, "Relay"):
 *
 *  - start: the request driver (gateway_req.c) picked the worker; send
 *    `serve` with a fresh corr_id and engy_request_id, always streamed
 *    from the miner (the first chunk gives the TTFT, also of a buyer's
 *    plain request);
 *  - chunk: relayed at once as SSE when the buyer streams (the first one
 *    starts the reply); while none came, a keep-alive every keepalive_s
 *    (the reply starts then, without content); the first token is the
 *    first non-empty content, reasoning or tool-call delta: an empty
 *    chunk is ignored (counted), it neither starts TTFT nor the timer;
 *  - response: the usage clamped to what the request allowed (a miner
 *    cannot bill past max_tokens or the prompt's count), the final SSE
 *    events or the whole JSON reply, the proof tee hears of it;
 *  - failure of an attempt (an error response, output that cannot be
 *    rendered, the leg lost): the driver tries another worker while no
 *    content byte has reached the buyer and attempts and time remain,
 *    else 502 (in-band once the stream is under way); a serve frame the
 *    gateway could not build or send is its own failure: 500, not
 *    retried, never counted against the worker;
 *  - no token within first_token_timeout_s, or the request past its
 *    max_request_s: `cancel` to the miner, 504;
 *  - the buyer leaves: `cancel` to the miner (gw_relay_cancel()), 499,
 *    and the buyer pays for the tokens that reached it.
 *
 * The pool hands this file a leg's frames through struct gw_pool_sink;
 * this file hands the end of an attempt to the driver through struct
 * gw_relay_sink (both set at start): calls go down only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "gateway_int.h"
#include "jsonget.h"
#include "strcopy.h"
#include "grow.h"
#include "logfmt.h"
#include "tokenizer.h"

static uint32_t u32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static uint32_t ms_between(const struct timespec *a, const struct timespec *b)
{
	double ms = (double)(b->tv_sec - a->tv_sec) * 1e3 +
		    (double)(b->tv_nsec - a->tv_nsec) / 1e6;

	return ms <= 0 ? 0 : ms > 4e9 ? UINT32_MAX : (uint32_t)(ms + 0.5);
}

static void detach(struct gw_req *r)
{
	struct gw_worker *w = r->w;

	if (!w)
		return;
	*r->wprev = r->wnext;
	if (r->wnext)
		r->wnext->wprev = r->wprev;
	r->w = NULL;
	r->wnext = NULL;
	r->wprev = NULL;
	gw_worker_release(w);
}

static void timers_off(struct gw_req *r)
{
	if (r->timer)
		evtimer_del(r->timer);
	if (r->keepalive)
		evtimer_del(r->keepalive);
}

void gw_relay_end(struct gw_req *r)
{
	detach(r);
	timers_off(r);
}

void gw_relay_drop(struct gw_req *r)
{
	detach(r);
	if (r->timer)
		event_free(r->timer);
	if (r->keepalive)
		event_free(r->keepalive);
	r->timer = r->keepalive = NULL;
}

void gw_relay_outcome(const struct gw_req *r, int status, const char *reason,
		      struct gw_outcome *o)
{
	memset(o, 0, sizeof(*o));
	o->status = status;
	o->miner_fault = status == 502 || status == 504;
	o->prompt_tokens = r->prompt_tokens;
	o->completion_tokens = r->completion_tokens;
	o->cached_tokens = r->cached_tokens;
	if (r->first_chunk) {
		o->ttft_ms = ms_between(&r->t_sent, &r->t_first);
		if (r->completion_tokens > 1)
			o->tpot_ms = ms_between(&r->t_first, &r->t_last) /
				     (r->completion_tokens - 1);
	}
	o->total_s = gw_since(&r->t0);
	o->is_probe = r->is_probe;
	o->reason = reason;
}

/* FNV-1a: a cheap first test before the string compare (a worker's
 * attempts in flight are a list, walked for every frame). */
static uint64_t corr_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static struct gw_req *find(struct gw_worker *w, const char *corr_id)
{
	uint64_t h = corr_hash(corr_id);
	struct gw_req *r;

	for (r = w->reqs; r; r = r->wnext)
		if (r->corr_hash == h && strcmp(r->corr_id, corr_id) == 0)
			return r;
	gw_count(w->g, "engy_gw_frames_ignored_total",
		 "reason=\"unknown corr_id\"");
	return NULL;
}

/* `cancel` to the attempt's worker; its slot stays taken until the
 * miner releases it (gw_worker_hold()). */
static void send_cancel(struct gw_req *r)
{
	cJSON *o;
	char *s;

	if (!r->w || !r->w->conn)
		return;
	o = cJSON_CreateObject();
	if (o && cJSON_AddStringToObject(o, "type", "cancel") &&
	    cJSON_AddStringToObject(o, "corr_id", r->corr_id)) {
		s = cJSON_PrintUnformatted(o);
		if (gw_send(r->g, r->w, s, s ? strlen(s) : 0) >= 0)
			gw_worker_hold(r->w, r->corr_id);
	}
	cJSON_Delete(o);
}

static bool miner_kind(enum gw_fail k)
{
	return k >= GW_F_ERROR;
}

/* An attempt ended without a result: tell the observers (a buyer
 * request's possible fault when the request ends: gw_relay_charge()),
 * then the driver (another worker, or the buyer gets @status). */
static void attempt_failed(struct gw_req *r, int status, const char *reason,
			   bool retry, enum gw_fail kind)
{
	struct gw *g = r->g;
	struct gw_worker *w = r->w;
	struct gw_failed_attempt *fa;
	struct gw_outcome o;

	timers_off(r);
	r->last_fault = false;
	if (w) {
		gw_relay_outcome(r, status, reason, &o);
		o.miner_fault = miner_kind(kind);
		r->last_fault = o.miner_fault;
		detach(r);
		if (!r->internal && o.miner_fault &&
		    r->n_fails < GW_MAX_ATTEMPTS) {
			fa = &r->fails[r->n_fails++];
			fa->worker = w->id;
			fa->kind = kind;
			fa->o = o;
		} else {
			if (o.miner_fault)
				w->failed++;
			gw_notify_finished(g, w, r, &o);
		}
	}
	r->first_chunk = false;
	r->status = status;
	g->relay_sink->failed(r, status, retry);
}

/* A charged failure halves what @w earned (not below the start). */
static void forfeit(struct gw_worker *w)
{
	unsigned start = (unsigned)w->g->c->worker_start_inflight;

	w->earned /= 2;
	if (w->earned < start)
		w->earned = start < w->max_inflight ? start : w->max_inflight;
}

/*
 * A buyer answer from @w (still counted in its slots): its time per
 * token joins a moving mean; answered at its full earned share and no
 * slower than twice the model's fastest eligible worker, the share grows
 * by one (up to the ceiling).  A claim alone never grows it.
 */
static void earn(struct gw_req *r, struct gw_worker *w)
{
	double mpt = (double)ms_between(&r->t_sent, &r->t_last) /
		     (r->completion_tokens ? r->completion_tokens : 1);
	double best = mpt;
	const struct gw_worker *x;

	if (r->internal)
		return;
	w->ms_per_token = w->answered ? 0.8 * w->ms_per_token + 0.2 * mpt : mpt;
	w->answered++;
	for (x = r->g->workers; x; x = x->next)
		if (x->answered && x->ms_per_token < best &&
		    strcmp(x->model, w->model) == 0 &&
		    gw_worker_eligible(r->g, x))
			best = x->ms_per_token;
	if (w->ms_per_token < best)
		best = w->ms_per_token;
	if (gw_worker_busy(w) >= w->earned && w->earned < w->max_inflight &&
	    w->ms_per_token <= 2 * best)
		w->earned++;
}

static struct gw_worker *worker_by_id(struct gw *g, uint64_t id)
{
	struct gw_worker *w;

	for (w = g->workers; w; w = w->next)
		if (w->id == id)
			return w;
	return NULL;
}

/*
 * One buyer request counts at most once against the workers it failed
 * on: answered elsewhere, the first failed attempt is charged; failed
 * everywhere, the same way (kind) on two workers or more, it is the
 * request's fault (a poison request) and nobody is charged; otherwise
 * the first failed attempt is.  Every attempt is still told.
 */
void gw_relay_charge(struct gw_req *r, bool answered)
{
	struct gw *g = r->g;
	int charge = 0;
	unsigned i, j;

	if (!r->n_fails)
		return;
	for (i = 0; !answered && i < r->n_fails && charge >= 0; i++)
		for (j = i + 1; j < r->n_fails; j++)
			if (r->fails[i].kind == r->fails[j].kind &&
			    r->fails[i].worker != r->fails[j].worker) {
				charge = -1;
				break;
			}
	if (charge < 0) {
		r->poison = true; /* no attempt rows either (scoring) */
		gw_count(g, "engy_gw_poison_requests_total", NULL);
		GW_LOG(g, ENGY_LOG_NOTICE,
		       "event=request_poison request=%s attempts=%u "
		       "reason=\"failed the same way on %u workers: charged to "
		       "none\"",
		       r->request_id, r->attempts, r->n_fails);
	}
	for (i = 0; i < r->n_fails; i++) {
		struct gw_failed_attempt *fa = &r->fails[i];
		struct gw_worker *w = worker_by_id(g, fa->worker);

		fa->o.miner_fault = (int)i == charge;
		if (!w)
			continue;
		if (fa->o.miner_fault) {
			w->failed++;
			forfeit(w);
		}
		gw_notify_finished(g, w, r, &fa->o);
	}
	r->n_fails = 0;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct gw_req *r = arg;

	send_cancel(r);
	attempt_failed(r, 504,
		       r->first_chunk ? "past max_request_s"
				      : "no first token in time",
		       false, GW_F_TIMEOUT);
}

static void arm(struct gw_req *r, double s)
{
	struct timeval tv;

	if (s < 0.001)
		s = 0.001;
	tv.tv_sec = (time_t)s;
	tv.tv_usec = (suseconds_t)((s - (double)tv.tv_sec) * 1e6);
	if (!r->timer)
		r->timer = evtimer_new(r->g->h->evbase(r->g->h), on_timer, r);
	if (r->timer)
		evtimer_add(r->timer, &tv);
}

static void on_keepalive(evutil_socket_t fd, short what, void *arg)
{
	struct gw_req *r = arg;
	struct timeval tv = { 0, 0 };

	if (!r->x || r->content_sent || gw_reply_stream_begin(r) < 0)
		return;
	engy_api_keepalive(&r->out, r->api);
	gw_reply_flush(r);
	tv.tv_sec = (time_t)r->g->c->keepalive_s;
	tv.tv_usec =
		(suseconds_t)((r->g->c->keepalive_s - (double)tv.tv_sec) * 1e6);
	evtimer_add(r->keepalive, &tv);
}

/* The bytes cJSON would print for {"type":"serve","corr_id":…,
 * "request":…,"stream":true}, written straight into one buffer. */
static char *serve_frame(struct gw_req *r, size_t *len)
{
	struct engy_sse_out o;

	*len = 0;
	if (!r->areq.body)
		return NULL;
	engy_sse_out_init(&o);
	engy_sse_out_adds(&o, "{\"type\":\"serve\",\"corr_id\":");
	engy_sse_out_cjson_str(&o, r->corr_id);
	engy_sse_out_adds(&o, ",\"request\":");
	engy_sse_out_cjson(&o, r->areq.body);
	engy_sse_out_adds(&o, ",\"stream\":true}");
	return engy_sse_out_take(&o, len);
}

/* The answer's id: chatcmpl-, resp_, cmpl- or msg_. */
static const char *id_prefix(const struct gw_req *r)
{
	if (r->api != ENGY_API_OPENAI)
		return "msg_";
	return r->areq.route == ENGY_ROUTE_RESPONSES	 ? "resp_"
	       : r->areq.route == ENGY_ROUTE_COMPLETIONS ? "cmpl-"
							 : "chatcmpl-";
}

/* Text to a streaming buyer, in the route's shape. */
static void stream_text(struct gw_req *r, const char *content, size_t clen,
			const char *reasoning, size_t rlen)
{
	if (r->areq.route == ENGY_ROUTE_RESPONSES)
		engy_resp_stream_text(&r->rs, content, clen, reasoning, rlen,
				      &r->out);
	else if (r->areq.route == ENGY_ROUTE_COMPLETIONS)
		engy_cmpl_stream_text(&r->cs, content, clen, &r->out);
	else if (r->api == ENGY_API_OPENAI)
		engy_oai_stream_text(&r->os, content, clen, reasoning, rlen,
				     &r->out);
	else
		engy_anth_stream_text(&r->as, content, clen, reasoning, rlen,
				      &r->out);
}

int gw_relay_prepare(struct gw_req *r)
{
	cJSON *id;

	id = cJSON_CreateString(r->request_id);
	if (!id || !cJSON_IsObject(r->areq.body))
		goto fail;
	cJSON_DeleteItemFromObjectCaseSensitive(r->areq.body,
						"engy_request_id");
	cJSON_AddItemToObject(r->areq.body, "engy_request_id", id);
	engy_api_stopper_init(&r->stopper, r->areq.body);
	if (r->internal || !r->areq.stream)
		return 0;
	engy_api_new_id(r->completion_id, sizeof(r->completion_id),
			id_prefix(r));
	if (r->areq.route == ENGY_ROUTE_RESPONSES)
		return engy_resp_stream_init(&r->rs, &r->areq, r->completion_id,
					     r->t0_ms / 1000);
	if (r->areq.route == ENGY_ROUTE_COMPLETIONS)
		return engy_cmpl_stream_init(&r->cs, &r->areq, r->completion_id,
					     r->t0_ms / 1000);
	if (r->api == ENGY_API_OPENAI)
		return engy_oai_stream_init(&r->os, &r->areq, r->completion_id,
					    r->t0_ms / 1000);
	return engy_anth_stream_init(&r->as, &r->areq, r->completion_id);
fail:
	cJSON_Delete(id);
	return -ENOMEM;
}

/* An attempt number is one digit (below GW_MAX_ATTEMPTS). */
_Static_assert(sizeof(((struct gw_req *)0)->corr_id) >=
			       sizeof(((struct gw_req *)0)->request_id) + 2 &&
		       GW_MAX_ATTEMPTS <= 10,
	       "corr_id holds a request id, a dot and an attempt number");

void gw_relay_start(struct gw_req *r, struct gw_worker *w)
{
	struct gw *g = r->g;
	double deadline;
	size_t len;
	char *s;
	int rc;

	/* "<request_id>.<attempt>" */
	{
		size_t n = engy_strcopy(r->corr_id, sizeof(r->request_id),
					r->request_id);

		r->corr_id[n++] = '.';
		r->corr_id[n + engy_u64_dec(r->corr_id + n, r->attempts)] =
			'\0';
	}
	r->corr_hash = corr_hash(r->corr_id);
	r->tried[r->attempts++] = w->id;
	engy_strcopy(r->miner, sizeof(r->miner), w->hotkey);
	engy_strcopy(r->worker_name, sizeof(r->worker_name), w->worker_name);
	r->w = w;
	/* nothing held reached the buyer: a new attempt starts afresh */
	r->stopper.held_len = 0;
	r->stopper.hit = false;
	r->wnext = w->reqs;
	if (r->wnext)
		r->wnext->wprev = &r->wnext;
	r->wprev = &w->reqs;
	w->reqs = r;
	w->inflight++;
	r->first_chunk = false;
	r->content_bytes = 0;
	deadline = r->spec.max_request_s;
	if (w->max_request_s > 0 && w->max_request_s < deadline)
		deadline = w->max_request_s;
	r->deadline_s = deadline;
	clock_gettime(CLOCK_MONOTONIC, &r->t_sent);
	if (r->attempts == 1 && g->m_overhead)
		gw_mobserve(g, g->m_overhead, gw_since(&r->t0));
	s = serve_frame(r, &len);
	rc = gw_send(g, w, s, len);
	if (rc < 0) {
		/* A stuck or closing leg is dropped; that fails @r over
		 * with the leg's other requests. */
		if (rc == -ENOBUFS || rc == -ENOTCONN)
			gw_worker_close(w, ENGY_WS_CLOSE_POLICY, "send failed");
		else /* the gateway's failure, never the worker's: not
			 * counted against it, and not retried (it would fail
			 * the same way on every worker) */
			attempt_failed(r, 500, "serve not sent", false,
				       GW_F_GATEWAY);
		return;
	}
	arm(r, g->c->first_token_timeout_s < deadline - gw_since(&r->t0)
		       ? g->c->first_token_timeout_s
		       : deadline - gw_since(&r->t0));
	if (r->x && r->areq.stream && !r->content_sent) {
		struct timeval tv = {
			(time_t)g->c->keepalive_s,
			(suseconds_t)((g->c->keepalive_s -
				       (double)(time_t)g->c->keepalive_s) *
				      1e6)
		};

		if (!r->keepalive)
			r->keepalive = evtimer_new(g->h->evbase(g->h),
						   on_keepalive, r);
		if (r->keepalive && !evtimer_pending(r->keepalive, NULL))
			evtimer_add(r->keepalive, &tv);
	}
}

static const char *dstr(const cJSON *delta, const char *name, size_t *len)
{
	const cJSON *j = engy_json_get(delta, name);

	if (!cJSON_IsString(j) || !j->valuestring)
		return NULL;
	*len = strlen(j->valuestring);
	return *len ? j->valuestring : NULL;
}

static void keep_text(struct gw_req *r, const char *s, size_t n)
{
	r->relayed_bytes += n;
	if (!r->tok)
		return;
	if (!engy_grow(&r->relayed, &r->relayed_cap, r->relayed_bytes + 1, 1)) {
		free(r->relayed);
		r->relayed = NULL;
		r->tok = NULL; /* fall back to the byte estimate */
		return;
	}
	memcpy(r->relayed + r->relayed_bytes - n, s, n);
	r->relayed[r->relayed_bytes] = '\0';
}

/* The most text @r's max_tokens can produce (content, reasoning, tool
 * calls): a token decodes to max_bytes_per_token bytes at most; the
 * slack covers a tool call's JSON. */
static size_t content_bound(const struct gw_req *r)
{
	uint64_t b =
		r->areq.max_tokens * (uint64_t)r->g->c->max_bytes_per_token +
		1024;

	return b > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)b;
}

static size_t calls_bytes(const cJSON *calls)
{
	const cJSON *c, *f, *j;
	size_t n = 0;

	cJSON_ArrayForEach(c, calls)
	{
		f = engy_json_get(c, "function");
		j = engy_json_get(f, "arguments");
		if (cJSON_IsString(j) && j->valuestring)
			n += strlen(j->valuestring);
		j = engy_json_get(f, "name");
		if (cJSON_IsString(j) && j->valuestring)
			n += strlen(j->valuestring);
	}
	return n;
}

/* More text than max_tokens can produce: cut, `cancel`, the worker's
 * fault (another worker while nothing reached the buyer). */
static void oversize(struct gw_req *r)
{
	gw_count(r->g, "engy_gw_oversize_total", NULL);
	GW_LOG(r->g, ENGY_LOG_NOTICE,
	       "event=attempt_oversize request=%s worker=%llu bytes=%zu "
	       "max_tokens=%llu bound=%zu",
	       r->request_id, (unsigned long long)r->w->id, r->content_bytes,
	       (unsigned long long)r->areq.max_tokens, content_bound(r));
	send_cancel(r);
	attempt_failed(r, 502, "more content than max_tokens can produce",
		       !r->content_sent, GW_F_OVERSIZE);
}

static void on_chunk(struct gw_worker *w, const char *corr_id,
		     const cJSON *delta)
{
	struct gw_req *r = find(w, corr_id);
	const char *content, *reasoning;
	size_t clen = 0, rlen = 0;

	if (!r)
		return;
	content = dstr(delta, "content", &clen);
	reasoning = dstr(delta, "reasoning_content", &rlen);
	if (!reasoning)
		reasoning = dstr(delta, "reasoning", &rlen);
	r->content_bytes +=
		clen + rlen + calls_bytes(engy_json_get(delta, "tool_calls"));
	if (r->content_bytes > content_bound(r)) {
		oversize(r);
		return;
	}
	/* Only a token is a token: an empty chunk neither starts the
	 * first-token clock (a forged TTFT) nor re-arms the timer. */
	if (!content && !reasoning &&
	    cJSON_GetArraySize(engy_json_get(delta, "tool_calls")) < 1) {
		gw_count(w->g, "engy_gw_frames_ignored_total",
			 "reason=\"empty chunk\"");
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &r->t_last);
	if (!r->first_chunk) {
		r->first_chunk = true;
		r->t_first = r->t_last;
		arm(r, r->deadline_s - gw_since(&r->t0));
	}
	if (!r->x || !r->areq.stream || (!content && !reasoning))
		return;
	/* Stop strings: what may go out now (a possible prefix waits). */
	engy_sse_out_reset(&r->cut);
	if (content &&
	    engy_api_stopper_feed(&r->stopper, content, clen, &r->cut) == 0) {
		content = r->cut.len ? r->cut.buf : NULL;
		clen = r->cut.len;
	} else if (content) {
		content = NULL; /* out of memory: the final answer carries it */
		clen = 0;
	}
	if (!content && !reasoning)
		return;
	if (gw_reply_stream_begin(r) < 0)
		return;
	stream_text(r, content, clen, reasoning, rlen);
	if (r->out.len)
		r->content_sent = true;
	gw_reply_flush(r);
	if (reasoning)
		keep_text(r, reasoning, rlen);
	if (content)
		keep_text(r, content, clen);
}

/* The miner's usage, held to what the request allowed. */
static void clamp_usage(struct gw_req *r, struct engy_api_result *res)
{
	uint64_t prompt = res->prompt_tokens;

	if (prompt > r->prompt_bound)
		prompt = r->prompt_bound;
	if (res->completion_tokens > r->areq.max_tokens)
		res->completion_tokens = r->areq.max_tokens;
	if (res->cached_tokens > prompt)
		res->cached_tokens = prompt;
	res->prompt_tokens = prompt;
	r->prompt_tokens = u32(prompt);
	r->completion_tokens = u32(res->completion_tokens);
	r->cached_tokens = u32(res->cached_tokens);
}

static int answer(struct gw_req *r, const struct engy_api_result *res)
{
	struct gw *g = r->g;
	const char *h[6] = { "x-request-id", r->request_id, "request-id",
			     r->request_id,  NULL,	    NULL };
	int rc;

	if (!r->x)
		return 0;
	if (r->areq.stream) {
		rc = gw_reply_stream_begin(r);
		if (rc == 0 && r->areq.route == ENGY_ROUTE_RESPONSES)
			rc = engy_resp_stream_finish(&r->rs, res, &r->out);
		else if (rc == 0 && r->areq.route == ENGY_ROUTE_COMPLETIONS)
			rc = engy_cmpl_stream_finish(&r->cs, res, &r->out);
		else if (rc == 0)
			rc = r->api == ENGY_API_OPENAI
				     ? engy_oai_stream_finish(&r->os, res,
							      &r->out)
				     : engy_anth_stream_finish(&r->as, res,
							       &r->out);
		if (rc < 0)
			return rc;
		gw_reply_flush(r);
		g->t->http_stream_end(g->ti, r->x);
		r->x = NULL;
		return 0;
	}
	engy_api_new_id(r->completion_id, sizeof(r->completion_id),
			id_prefix(r));
	if (r->areq.route == ENGY_ROUTE_RESPONSES) { /* its items' ids */
		engy_api_new_id(r->rids.reasoning, sizeof(r->rids.reasoning),
				"rs_");
		engy_api_new_id(r->rids.message, sizeof(r->rids.message),
				"msg_");
	}
	rc = r->areq.route == ENGY_ROUTE_RESPONSES
		     ? engy_resp_response(&r->out, &r->areq, r->completion_id,
					  r->t0_ms / 1000, &r->rids, res)
	     : r->areq.route == ENGY_ROUTE_COMPLETIONS
		     ? engy_cmpl_response(&r->out, &r->areq, r->completion_id,
					  r->t0_ms / 1000, res)
	     : r->api == ENGY_API_OPENAI
		     ? engy_oai_response(&r->out, &r->areq, r->completion_id,
					 r->t0_ms / 1000, res)
		     : engy_anth_response(&r->out, &r->areq, r->completion_id,
					  res);
	if (rc < 0 || r->out.err)
		return rc < 0 ? rc : r->out.err;
	g->t->http_reply(g->ti, r->x, 200, "application/json", h, r->out.buf,
			 r->out.len);
	r->x = NULL;
	return 0;
}

static int decode_id(void *arg, uint32_t id, char **text, size_t *len)
{
	return engy_tokenizer_decode(arg, &id, 1, true, text, len);
}

/* top_logprobs alternatives named by the gateway's own tokenizer of the
 * model, from their ids (the miner's text is only used without one); an
 * id out of the vocabulary, or an alternative without one, drops the
 * answer's logprobs (null), as other malformed logprobs are. */
static void name_alternatives(struct gw_req *r, struct engy_api_result *res)
{
	const struct gw_tok *t = r->tok; /* looked up when it was parsed */

	if (!res->logprobs || !r->areq.top_logprobs)
		return;
	if (t && engy_api_logprobs_name((cJSON *)res->logprobs, decode_id,
					t->tok) < 0)
		res->logprobs = NULL;
}

static void on_response(struct gw_worker *w, const char *corr_id,
			const cJSON *frame)
{
	struct gw_req *r = find(w, corr_id);
	const cJSON *err = engy_json_get(frame, "error");
	struct engy_api_result res;
	struct gw_outcome o;
	char why[256];

	if (!r)
		return;
	clock_gettime(CLOCK_MONOTONIC, &r->t_last);
	if (!r->first_chunk) {
		r->first_chunk = true;
		r->t_first = r->t_last;
	}
	if (cJSON_IsString(err) || (err && !cJSON_IsNull(err))) {
		/* The miner's text is not relayed: it may quote the prompt.
		 * While cancelled requests still hold slots there, a refusal
		 * is the cancels' doing, not the worker's fault. */
		if (w->held)
			attempt_failed(r, 502,
				       "the worker refused while cancels were "
				       "in flight",
				       true, GW_F_CANCELS);
		else
			attempt_failed(r, 502,
				       "the worker answered with an error",
				       true, GW_F_ERROR);
		return;
	}
	if (engy_api_result_parse(engy_json_get(frame, "output"), &res, why,
				  sizeof(why)) < 0) {
		engy_api_result_free(&res);
		attempt_failed(r, 502, "the worker's output cannot be rendered",
			       true, GW_F_RENDER);
		return;
	}
	{
		size_t n = res.content_len + res.reasoning_len, i;

		for (i = 0; i < res.n_calls; i++)
			n += (res.calls[i].name ? strlen(res.calls[i].name)
						: 0) +
			     (res.calls[i].arguments
				      ? strlen(res.calls[i].arguments)
				      : 0);
		if (n > r->content_bytes)
			r->content_bytes = n;
	}
	if (r->content_bytes > content_bound(r)) {
		engy_api_result_free(&res);
		oversize(r);
		return;
	}
	clamp_usage(r, &res);
	name_alternatives(r, &res);
	/* A constrained answer is routed only to a worker that enforces the
	 * constraint, which closes the value within max_tokens and says stop
	 * once it is complete: its last token may be the max_tokens-th. */
	if (!r->internal)
		engy_api_result_stops(&res, &r->stopper.st,
				      r->areq.constraint & (ENGY_API_CONS_JSON |
							    ENGY_API_CONS_TOOL)
					      ? 0
					      : r->areq.max_tokens);
	if (answer(r, &res) < 0) {
		engy_api_result_free(&res);
		attempt_failed(r, 502, "the worker's output cannot be rendered",
			       !r->content_sent, GW_F_RENDER);
		return;
	}
	engy_api_result_free(&res);
	w->served++;
	earn(r, w);
	timers_off(r);
	gw_relay_outcome(r, 200, NULL, &o);
	if (r->sink && !r->sink_called) {
		r->sink_called = true;
		r->sink->done(r->sink_arg, &o, frame);
	}
	gw_notify_response(r->g, w, r, frame);
	detach(r);
	gw_notify_finished(r->g, w, r, &o);
	r->g->relay_sink->answered(r);
}

static void on_orphan(struct gw_worker *w)
{
	while (w->reqs)
		attempt_failed(w->reqs, 502, "the worker's leg closed", true,
			       GW_F_LEG);
}

void gw_relay_cancel(struct gw_req *r)
{
	struct gw_worker *w = r->w;
	struct gw_outcome o;

	if (!w)
		return;
	send_cancel(r);
	gw_relay_outcome(r, 499, "buyer left", &o);
	detach(r);
	gw_notify_finished(r->g, w, r, &o);
}

static const struct gw_pool_sink pool_sink = {
	.chunk = on_chunk,
	.response = on_response,
	.orphan = on_orphan,
};

void gw_relay_init(struct gw *g)
{
	g->pool_sink = &pool_sink;
}
