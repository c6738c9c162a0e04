/* SPDX-License-Identifier: MIT */
/*
 * The proof tee (specs/gateway.md, "Proof tee"): off the response path,
 * the commitment of every successful response frame (probes always,
 * buyer responses at tee_sample_rate) is kept with its metadata in an
 * in-RAM ring, in arrival order, each entry numbered (seq) and forgotten
 * tee_ttl_s after it came, or earlier when the ring is over tee_max_bytes
 * (the miner holding the most bytes loses its oldest first: one miner
 * cannot push the others' proofs out) or an auditor acknowledged it.  A
 * commitment larger than its request can need (entry_limit(): the ids
 * and proofs of the prompt bound and max_tokens) is never kept.
 * Commitments carry buyer token ids: they never reach a disk or a log,
 * and their bytes are wiped when an entry goes.  Auditors pull on the
 * buyer listener:
 *
 *   GET  /internal/v1/tee                      the ring's figures
 *   GET  /internal/v1/tee/sample?n=&since=&probe=&boot=
 *        up to n (100, at most 1000) entries with seq > since, oldest
 *        first; probe=1 only probes, probe=0 only buyer responses;
 *        "next" is the cursor for the next call and "boot" this
 *        process's id: a boot= naming another process (the gateway
 *        restarted, seqs begin at 1 again) reads from the oldest entry
 *   POST /internal/v1/tee/ack  {"acks":[{"seq":N,"verdict":"pass"}]}
 *        the entries are dropped; a verdict on a probe feeds onboarding,
 *        a cheat on a buyer answer pulls the miner (gw_onboard_cheat())
 *   POST /internal/v1/tee/open {"seq":N,"challenge":{...}}
 *        a GEMM audit's opening: a `gemm_open` frame to the leg that
 *        served the held entry, its `gemm_opening` relayed back (or
 *        status no_answer / gone / oversize / miner_error; the answer
 *        waits at most gemm_open_timeout_s, gemm_open_max_pending at
 *        once, one per entry)
 *
 * every one behind `Authorization: Bearer <tee_token>` (gw_internal_auth,
 * shared with /internal/v1/workers).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/event.h>

#include "gateway_mod.h"
#include "jsonget.h"

#define TEE_MAX_N 1000
/* What a commitment may need (specs/protocol.md §3): its JSON frame, each
 * token id as at most 11 digits and a comma, and per output token the
 * bytes of a TOPLOC proof of a one-token chunk at topk 128 (344 base64
 * characters) with room to spare.  Honest commitments are a few KB per
 * 32 tokens, far below. */
#define TEE_ENT_BASE	   4096u
#define TEE_ENT_PER_ID	   12u
#define TEE_ENT_PER_OUT	   512u
#define TEE_DEF_IN_TOKENS  131072u
#define TEE_DEF_OUT_TOKENS 32768u

struct tee_holder; /* one miner's entries */
struct tee;

/* One opening asked of a miner for an auditor (POST tee/open). */
struct tee_open {
	struct tee_open *next, **pprev;
	struct tee *t;
	struct engy_http_exchange *x;
	uint64_t seq, worker_id;
	char corr_id[40];
	struct event *timer;
};

struct tee_ent {
	uint64_t seq;
	struct tee_holder *h;
	struct tee_ent *hprev, *hnext; /* h's entries, oldest first */
	int64_t time_ms, expires_ms;   /* Unix ms */
	uint64_t worker_id;
	bool is_probe;
	uint32_t prompt_tokens, completion_tokens;
	size_t bytes; /* what it counts against the cap */
	char request_id[40];
	char miner[64];
	char worker_name[128];
	char model[128];
	char model_root[129];
	char *commitment; /* JSON text; NULL: none came */
	size_t clen;
};

struct tee_holder {
	char miner[64];
	size_t bytes, count;
	struct tee_ent *first, *last;
};

struct tee {
	struct gw *g;
	const struct gw_mod_conf *c;
	struct tee_ent **ring; /* seq & (cap - 1) */
	size_t cap;
	uint64_t head, next; /* live seqs are [head, next) */
	size_t bytes, count;
	uint64_t rng;
	char boot[17]; /* this process's id: a cursor's seqs are its own */
	struct tee_holder **hs;
	size_t n_hs, cap_hs;
	struct tee_holder *pinned; /* push()'s own: kept while it evicts */
	struct tee_open *opens;	   /* openings asked of miners */
	unsigned n_opens;
	uint64_t open_no;
	struct event *tick;
	struct engy_metric *m_entries, *m_bytes, *m_kept[2], *m_drop[4],
		*m_verdict[4];
};

enum { DROP_EXPIRED, DROP_CAP, DROP_ACKED, DROP_OVERSIZE };
static const char *const drop_names[] = { "expired", "cap", "acked",
					  "oversize" };
static const char *const verdict_names[] = { NULL, "pass", "cheat",
					     "unproven" };

/* ---- the ring -------------------------------------------------------- */

static void ent_free(struct tee_ent *e)
{
	if (e->commitment) {
		explicit_bzero(e->commitment, e->clen);
		free(e->commitment);
	}
	explicit_bzero(e, sizeof(*e));
	free(e);
}

static struct tee_ent **slot(struct tee *t, uint64_t seq)
{
	return &t->ring[seq & (t->cap - 1)];
}

static void gauges(struct tee *t)
{
	if (t->m_entries)
		gw_mset(t->g, t->m_entries, (double)t->count);
	if (t->m_bytes)
		gw_mset(t->g, t->m_bytes, (double)t->bytes);
}

/* ---- holders: the bytes of each miner ------------------------------------ */

static struct tee_holder *holder_get(struct tee *t, const char *miner)
{
	struct tee_holder *h, **n;
	size_t i;

	for (i = 0; i < t->n_hs; i++)
		if (!strcmp(t->hs[i]->miner, miner))
			return t->hs[i];
	if (t->n_hs == t->cap_hs) {
		n = realloc(t->hs,
			    (t->cap_hs ? t->cap_hs * 2 : 16) * sizeof(*n));
		if (!n)
			return NULL;
		t->hs = n;
		t->cap_hs = t->cap_hs ? t->cap_hs * 2 : 16;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	snprintf(h->miner, sizeof(h->miner), "%s", miner);
	t->hs[t->n_hs++] = h;
	return h;
}

/* @h goes once it holds nothing. */
static void holder_gc(struct tee *t, struct tee_holder *h)
{
	size_t i;

	if (h->count || h == t->pinned)
		return;
	for (i = 0; i < t->n_hs && t->hs[i] != h; i++)
		;
	if (i < t->n_hs)
		t->hs[i] = t->hs[--t->n_hs];
	free(h);
}

static void holder_unlink(struct tee *t, struct tee_ent *e)
{
	struct tee_holder *h = e->h;

	if (!h)
		return;
	if (e->hprev)
		e->hprev->hnext = e->hnext;
	else
		h->first = e->hnext;
	if (e->hnext)
		e->hnext->hprev = e->hprev;
	else
		h->last = e->hprev;
	h->bytes -= e->bytes;
	h->count--;
	e->h = NULL;
	holder_gc(t, h);
}

/* The holder that gives up its oldest entry when @add more bytes of
 * @mine must fit: the one holding the most (counting @add to @mine). */
static struct tee_holder *victim(struct tee *t, const struct tee_holder *mine,
				 size_t add)
{
	struct tee_holder *best = NULL;
	size_t i, b, bb = 0;

	for (i = 0; i < t->n_hs; i++) {
		b = t->hs[i]->bytes + (t->hs[i] == mine ? add : 0);
		if (t->hs[i]->first && b > bb) {
			best = t->hs[i];
			bb = b;
		}
	}
	return best;
}

static void drop(struct tee *t, uint64_t seq, int why)
{
	struct tee_ent **p = slot(t, seq), *e = *p;

	if (!e || e->seq != seq)
		return;
	*p = NULL;
	holder_unlink(t, e);
	t->bytes -= e->bytes;
	t->count--;
	if (t->m_drop[why])
		gw_madd(t->g, t->m_drop[why], 1);
	ent_free(e);
	while (t->head < t->next && !*slot(t, t->head))
		t->head++;
}

static void expire(struct tee *t)
{
	int64_t now = gw_now_ms();
	struct tee_ent *e;

	while (t->head < t->next) {
		e = *slot(t, t->head);
		if (e && e->expires_ms > now)
			break;
		if (e)
			drop(t, t->head, DROP_EXPIRED);
		else
			t->head++;
	}
	gauges(t);
}

static int grow(struct tee *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;
	struct tee_ent **r = calloc(cap, sizeof(*r));
	uint64_t s;

	if (!r)
		return -ENOMEM;
	for (s = t->head; t->cap && s < t->next; s++)
		r[s & (cap - 1)] = *slot(t, s);
	free(t->ring);
	t->ring = r;
	t->cap = cap;
	return 0;
}

static int push(struct tee *t, struct tee_ent *e)
{
	struct tee_holder *h = holder_get(t, e->miner), *v;

	if (!h)
		return -ENOMEM;
	/* Over the cap: the miner holding the most gives up its oldest, so a
	 * flood from one miner pushes out only its own entries.  @h may lose
	 * all of its own: it stays (pinned) until this entry is in. */
	t->pinned = h;
	while (t->bytes + e->bytes > (size_t)t->c->tee_max_bytes &&
	       (v = victim(t, h, e->bytes)))
		drop(t, v->first->seq, DROP_CAP);
	t->pinned = NULL;
	if ((t->next - t->head == t->cap && grow(t) < 0) ||
	    t->bytes + e->bytes > (size_t)t->c->tee_max_bytes) {
		holder_gc(t, h);
		return -ENOMEM;
	}
	e->seq = t->next++;
	*slot(t, e->seq) = e;
	e->h = h;
	e->hprev = h->last;
	if (h->last)
		h->last->hnext = e;
	else
		h->first = e;
	h->last = e;
	h->bytes += e->bytes;
	h->count++;
	t->bytes += e->bytes;
	t->count++;
	gauges(t);
	return 0;
}

static bool keep(struct tee *t, const struct gw_req *r)
{
	double u;

	if (r->is_probe || t->c->tee_sample_rate >= 1)
		return true;
	if (t->c->tee_sample_rate <= 0)
		return false;
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 7;
	t->rng ^= t->rng << 17;
	u = (double)(t->rng >> 11) / 9007199254740992.0;
	return u < t->c->tee_sample_rate;
}

/*
 * The most bytes @r's commitment can need: its prompt bound (exact, or
 * the rendered prompt's bytes) and max_tokens, else the worker's limits
 * (min of the model's spec and its hello).
 */
static size_t entry_limit(const struct gw_worker *w, const struct gw_req *r)
{
	uint64_t in = r->prompt_bound ? r->prompt_bound : w->max_input_tokens;
	uint64_t out =
		r->areq.max_tokens ? r->areq.max_tokens : w->max_output_tokens;

	if (!in || in > TEE_DEF_IN_TOKENS)
		in = TEE_DEF_IN_TOKENS;
	if (!out || out > TEE_DEF_OUT_TOKENS)
		out = TEE_DEF_OUT_TOKENS;
	return TEE_ENT_BASE + TEE_ENT_PER_ID * (size_t)(in + out + 1) +
	       TEE_ENT_PER_OUT * (size_t)out;
}

static void oversize(struct tee *t, struct gw_worker *w, const struct gw_req *r,
		     size_t limit)
{
	if (t->m_drop[DROP_OVERSIZE])
		gw_madd(t->g, t->m_drop[DROP_OVERSIZE], 1);
	GW_LOG(t->g, ENGY_LOG_NOTICE,
	       "event=tee_oversize worker=%llu miner=%s request=%s "
	       "limit=%zu",
	       (unsigned long long)w->id, w->hotkey, r->request_id, limit);
}

static void tee_response(void *arg, struct gw_worker *w, const struct gw_req *r,
			 const cJSON *frame)
{
	struct tee *t = arg;
	const cJSON *c = engy_json_get(frame, "commitment");
	size_t limit = entry_limit(w, r);
	struct tee_ent *e;
	char *s;

	if (!keep(t, r))
		return;
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	if (cJSON_IsRaw(c) && strcmp(c->valuestring, "null") != 0) {
		/* Its text, checked when the frame was read. */
		e->clen = strlen(c->valuestring);
		if (e->clen > limit) {
			free(e);
			oversize(t, w, r, limit);
			return;
		}
		e->commitment = malloc(e->clen + 1);
		if (!e->commitment) {
			free(e);
			return;
		}
		memcpy(e->commitment, c->valuestring, e->clen + 1);
	} else if (c && !cJSON_IsNull(c) && !cJSON_IsRaw(c)) {
		/* Printed into a buffer of the limit: a larger one stops
		 * there, costing no more than an honest one. */
		e->commitment = malloc(limit + 1);
		if (!e->commitment) {
			free(e);
			return;
		}
		if (limit > INT32_MAX - 8 ||
		    !cJSON_PrintPreallocated((cJSON *)c, e->commitment,
					     (int)limit + 1, 0)) {
			explicit_bzero(e->commitment, limit + 1);
			ent_free(e);
			oversize(t, w, r, limit);
			return;
		}
		e->clen = strlen(e->commitment);
		s = realloc(e->commitment, e->clen + 1);
		if (s)
			e->commitment = s;
	}
	e->bytes = sizeof(*e) + e->clen;
	if (e->bytes > (size_t)t->c->tee_max_bytes) {
		if (t->m_drop[DROP_CAP])
			gw_madd(t->g, t->m_drop[DROP_CAP], 1);
		ent_free(e);
		return;
	}
	e->time_ms = gw_now_ms();
	e->expires_ms = e->time_ms + (int64_t)(t->c->tee_ttl_s * 1000);
	e->worker_id = w->id;
	e->is_probe = r->is_probe;
	e->prompt_tokens = r->prompt_tokens;
	e->completion_tokens = r->completion_tokens;
	snprintf(e->request_id, sizeof(e->request_id), "%s", r->request_id);
	snprintf(e->miner, sizeof(e->miner), "%s", w->hotkey);
	snprintf(e->worker_name, sizeof(e->worker_name), "%s", w->worker_name);
	snprintf(e->model, sizeof(e->model), "%s", w->model);
	snprintf(e->model_root, sizeof(e->model_root), "%s", w->model_root);
	if (push(t, e) < 0) {
		ent_free(e);
		return;
	}
	if (t->m_kept[e->is_probe])
		gw_madd(t->g, t->m_kept[e->is_probe], 1);
}

/* ---- the internal API: auth and replies --------------------------------- */

void gw_internal_reply(struct gw *g, struct engy_http_exchange *x, int status,
		       cJSON *body, const char *error)
{
	static const char *const h401[] = { "WWW-Authenticate", "Bearer",
					    NULL };
	static const char *const hdr[] = { "Cache-Control", "no-store", NULL };
	char *s;

	if (!body) {
		body = cJSON_CreateObject();
		if (body)
			cJSON_AddStringToObject(body, "error",
						error ? error : "error");
	}
	s = body ? cJSON_PrintUnformatted(body) : NULL;
	cJSON_Delete(body);
	if (!s) {
		g->t->http_reply(g->ti, x, 500, "application/json", NULL,
				 "{\"error\":\"out of memory\"}", 25);
		return;
	}
	g->t->http_reply(g->ti, x, status, "application/json",
			 status == 401 ? h401 : hdr, s, strlen(s));
	free(s);
}

bool gw_internal_auth(struct gw *g, struct engy_http_exchange *x,
		      const struct engy_http_request *hr)
{
	const char *tok = g->c->mod.tee_token;
	const char *h = hr->header(hr, "Authorization");
	size_t tl, gl, i;
	unsigned char diff = 0;

	if (!tok || !tok[0]) {
		gw_internal_reply(g, x, 404, NULL,
				  "the internal API is off: "
				  "set tee_token (ENGY_TEE_TOKEN)");
		return false;
	}
	if (!h || strncasecmp(h, "Bearer ", 7) != 0) {
		gw_internal_reply(g, x, 401, NULL,
				  "a bearer token is required");
		return false;
	}
	h += 7;
	while (*h == ' ')
		h++;
	tl = strlen(tok);
	gl = strlen(h);
	/* Constant time in the token's length. */
	for (i = 0; i < tl; i++)
		diff |= (unsigned char)tok[i] ^
			(unsigned char)(i < gl ? h[i] : 0);
	if (diff || gl != tl) {
		GW_LOG(g, ENGY_LOG_NOTICE,
		       "event=internal_auth_failed "
		       "remote=%s path=%s",
		       hr->remote ? hr->remote : "-", hr->path);
		gw_internal_reply(g, x, 401, NULL, "invalid bearer token");
		return false;
	}
	return true;
}

/* The value of @name in a query string, or NULL. */
static const char *qparam(const char *query, const char *name, char *buf,
			  size_t cap)
{
	size_t nl = strlen(name), vl;
	const char *p = query, *end;

	while (p && *p) {
		end = strchr(p, '&');
		if (!end)
			end = p + strlen(p);
		if ((size_t)(end - p) > nl && !strncmp(p, name, nl) &&
		    p[nl] == '=') {
			vl = (size_t)(end - p) - nl - 1;
			if (vl >= cap)
				return NULL;
			memcpy(buf, p + nl + 1, vl);
			buf[vl] = '\0';
			return buf;
		}
		p = *end ? end + 1 : end;
	}
	return NULL;
}

static int qnum(const char *query, const char *name, uint64_t def, uint64_t max,
		uint64_t *out)
{
	char buf[32], *end;
	const char *v = qparam(query, name, buf, sizeof(buf));
	unsigned long long n;

	*out = def;
	if (!v)
		return 0;
	n = strtoull(v, &end, 10);
	if (!*v || *end || v[0] == '-' || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

/* ---- the routes ------------------------------------------------------- */

static cJSON *ent_json(const struct tee_ent *e)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "seq", (double)e->seq);
	cJSON_AddStringToObject(o, "request_id", e->request_id);
	cJSON_AddNumberToObject(o, "time_ms", (double)e->time_ms);
	cJSON_AddNumberToObject(o, "expires_ms", (double)e->expires_ms);
	cJSON_AddBoolToObject(o, "is_probe", e->is_probe);
	cJSON_AddStringToObject(o, "miner", e->miner);
	cJSON_AddStringToObject(o, "worker_name", e->worker_name);
	cJSON_AddNumberToObject(o, "worker", (double)e->worker_id);
	cJSON_AddStringToObject(o, "model", e->model);
	cJSON_AddStringToObject(o, "model_root", e->model_root);
	cJSON_AddNumberToObject(o, "prompt_tokens", e->prompt_tokens);
	cJSON_AddNumberToObject(o, "completion_tokens", e->completion_tokens);
	if (e->commitment)
		cJSON_AddRawToObject(o, "commitment", e->commitment);
	else
		cJSON_AddNullToObject(o, "commitment");
	return o;
}

static void sample(struct tee *t, struct engy_http_exchange *x,
		   const struct engy_http_request *hr)
{
	uint64_t n, since, probe, s, last;
	cJSON *o, *arr;
	char pb[8], bb[40];
	const char *pv = qparam(hr->query, "probe", pb, sizeof(pb));
	const char *bv = qparam(hr->query, "boot", bb, sizeof(bb));
	bool reboot;

	if (qnum(hr->query, "n", 100, TEE_MAX_N, &n) < 0 ||
	    qnum(hr->query, "since", 0, UINT64_MAX, &since) < 0 ||
	    qnum(hr->query, "probe", 2, 1, &probe) < 0 || (pv && !pv[0]) ||
	    !n) {
		gw_internal_reply(t->g, x, 400, NULL,
				  "n (1..1000), since (a seq) "
				  "and probe (0 or 1) are numbers");
		return;
	}
	/* A cursor of another process (this gateway restarted): its seqs
	 * say nothing here, read from the oldest entry. */
	reboot = bv && bv[0] && strcmp(bv, t->boot) != 0;
	if (reboot)
		since = 0;
	expire(t);
	o = cJSON_CreateObject();
	arr = o ? cJSON_AddArrayToObject(o, "entries") : NULL;
	if (!arr) {
		cJSON_Delete(o);
		gw_internal_reply(t->g, x, 500, NULL, "out of memory");
		return;
	}
	last = since;
	s = since + 1 > t->head ? since + 1 : t->head;
	for (; s < t->next && (uint64_t)cJSON_GetArraySize(arr) < n; s++) {
		const struct tee_ent *e = *slot(t, s);

		last = s;
		if (!e || (probe != 2 && e->is_probe != (probe == 1)))
			continue;
		cJSON_AddItemToArray(arr, ent_json(e));
	}
	if (s >= t->next && t->next && t->next - 1 > last)
		last = t->next - 1;
	cJSON_AddNumberToObject(o, "next", (double)last);
	cJSON_AddNumberToObject(o, "head", (double)t->head);
	cJSON_AddStringToObject(o, "boot", t->boot);
	if (reboot)
		GW_LOG(t->g, ENGY_LOG_NOTICE,
		       "event=tee_cursor_reset remote=%s reason=\"a cursor of "
		       "another gateway process\"",
		       hr->remote ? hr->remote : "-");
	GW_LOG(t->g, ENGY_LOG_INFO,
	       "event=tee_sample remote=%s since=%llu "
	       "entries=%d next=%llu",
	       hr->remote ? hr->remote : "-", (unsigned long long)since,
	       cJSON_GetArraySize(arr), (unsigned long long)last);
	gw_internal_reply(t->g, x, 200, o, NULL);
}

static int verdict_of(const char *s)
{
	int i;

	for (i = 1; i <= 3; i++)
		if (!strcmp(s, verdict_names[i]))
			return i;
	return 0;
}

static void ack(struct tee *t, struct engy_http_exchange *x,
		const struct engy_http_request *hr)
{
	cJSON *in = cJSON_ParseWithLength((const char *)hr->body, hr->body_len);
	const cJSON *acks = engy_json_get(in, "acks"), *a;
	unsigned acked = 0, unknown = 0, verdicts = 0;
	cJSON *o;

	if (!cJSON_IsArray(acks) || cJSON_GetArraySize(acks) > 100000) {
		cJSON_Delete(in);
		gw_internal_reply(
			t->g, x, 400, NULL,
			"want {\"acks\": [{\"seq\": N, "
			"\"verdict\": \"pass|cheat|unproven\"}, ...]}");
		return;
	}
	cJSON_ArrayForEach(a, acks)
	{
		const cJSON *seq = engy_json_get(a, "seq");
		const cJSON *v = engy_json_get(a, "verdict");
		struct tee_ent *e = NULL;
		uint64_t s;
		int vk = 0;

		if (!cJSON_IsNumber(seq) || seq->valuedouble < 0 ||
		    (v && !(cJSON_IsString(v) &&
			    (vk = verdict_of(v->valuestring))))) {
			cJSON_Delete(in);
			gw_internal_reply(
				t->g, x, 400, NULL,
				"an ack needs a seq; "
				"a verdict is pass, cheat or unproven");
			return;
		}
		s = (uint64_t)seq->valuedouble;
		if (s >= t->head && s < t->next)
			e = *slot(t, s);
		if (!e || e->seq != s) {
			unknown++;
			continue;
		}
		if (vk) {
			verdicts++;
			if (t->m_verdict[vk])
				gw_madd(t->g, t->m_verdict[vk], 1);
			if (e->is_probe)
				gw_onboard_verdict(t->g, e->worker_id,
						   e->request_id, vk);
			else if (vk == ENGY_VERDICT_CHEAT)
				gw_onboard_cheat(t->g, e->miner, e->model,
						 e->request_id, "tee");
		}
		drop(t, s, DROP_ACKED);
		acked++;
	}
	cJSON_Delete(in);
	gauges(t);
	o = cJSON_CreateObject();
	if (o) {
		cJSON_AddNumberToObject(o, "acked", acked);
		cJSON_AddNumberToObject(o, "unknown", unknown);
		cJSON_AddNumberToObject(o, "verdicts", verdicts);
	}
	GW_LOG(t->g, ENGY_LOG_INFO,
	       "event=tee_ack remote=%s acked=%u "
	       "unknown=%u verdicts=%u",
	       hr->remote ? hr->remote : "-", acked, unknown, verdicts);
	gw_internal_reply(t->g, x, 200, o, NULL);
}

static void stats(struct tee *t, struct engy_http_exchange *x)
{
	cJSON *o = cJSON_CreateObject();

	expire(t);
	if (o) {
		cJSON_AddNumberToObject(o, "entries", (double)t->count);
		cJSON_AddNumberToObject(o, "bytes", (double)t->bytes);
		cJSON_AddNumberToObject(o, "max_bytes",
					(double)t->c->tee_max_bytes);
		cJSON_AddNumberToObject(o, "head", (double)t->head);
		cJSON_AddNumberToObject(o, "next", (double)t->next);
		cJSON_AddNumberToObject(o, "ttl_s", t->c->tee_ttl_s);
		cJSON_AddNumberToObject(o, "sample_rate",
					t->c->tee_sample_rate);
		cJSON_AddStringToObject(o, "boot", t->boot);
	}
	gw_internal_reply(t->g, x, 200, o, NULL);
}

/* ---- GEMM openings: auditor -> gateway -> the miner's leg ----------------- */

static void open_free(struct tee_open *o)
{
	if (o->timer)
		event_free(o->timer);
	*o->pprev = o->next;
	if (o->next)
		o->next->pprev = o->pprev;
	o->t->n_opens--;
	free(o);
}

/* Answer the auditor (status 200: every outcome is an answer) and end. */
static void open_end(struct tee_open *o, cJSON *body, const char *status,
		     const char *error)
{
	struct tee *t = o->t;
	char lab[48];

	snprintf(lab, sizeof(lab), "outcome=\"%s\"", status);
	gw_count(t->g, "engy_gw_tee_opens_total", lab);
	GW_LOG(t->g, ENGY_LOG_INFO,
	       "event=tee_open_done seq=%llu worker=%llu corr_id=%s outcome=%s",
	       (unsigned long long)o->seq, (unsigned long long)o->worker_id,
	       o->corr_id, status);
	if (!body) {
		body = cJSON_CreateObject();
		if (body &&
		    (!cJSON_AddStringToObject(body, "error", error) ||
		     !cJSON_AddStringToObject(body, "status", status))) {
			cJSON_Delete(body);
			body = NULL;
		}
	}
	if (o->x)
		gw_internal_reply(t->g, o->x, body ? 200 : 500, body,
				  "out of memory");
	else
		cJSON_Delete(body);
	open_free(o);
}

static void open_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct tee_open *o = arg;
	char why[96];

	snprintf(why, sizeof(why), "the miner did not answer within %g s",
		 o->t->c->gemm_open_timeout_s);
	open_end(o, NULL, "no_answer", why);
}

static void open_refuse(struct tee *t, struct engy_http_exchange *x, int code,
			const char *status, const char *error)
{
	cJSON *o = cJSON_CreateObject();
	char lab[48];

	if (o && (!cJSON_AddStringToObject(o, "error", error) ||
		  !cJSON_AddStringToObject(o, "status", status))) {
		cJSON_Delete(o);
		o = NULL;
	}
	snprintf(lab, sizeof(lab), "outcome=\"%s\"", status);
	gw_count(t->g, "engy_gw_tee_opens_total", lab);
	gw_internal_reply(t->g, x, o ? code : 500, o, "out of memory");
}

static struct gw_worker *leg_of(struct tee *t, uint64_t id)
{
	struct gw_worker *w;

	for (w = t->g->workers; w; w = w->next)
		if (w->id == id)
			return w->conn && w->state >= GW_W_NEW &&
					       w->state < GW_W_CLOSED
				       ? w
				       : NULL;
	return NULL;
}

#define OPEN_MAX_CHALLENGE 65536

static void open_req(struct tee *t, struct engy_http_exchange *x,
		     const struct engy_http_request *hr)
{
	/* a body over the bound is not even parsed */
	cJSON *in = hr->body_len > OPEN_MAX_CHALLENGE
			    ? NULL
			    : cJSON_ParseWithLength((const char *)hr->body,
						    hr->body_len);
	const cJSON *seq = engy_json_get(in, "seq");
	cJSON *ch = engy_json_get(in, "challenge");
	cJSON *fr = NULL;
	struct tee_ent *e = NULL;
	struct tee_open *o;
	struct gw_worker *w;
	struct timeval tv;
	double to = t->c->gemm_open_timeout_s;
	char *text = NULL;
	uint64_t s;

	if (!cJSON_IsNumber(seq) || seq->valuedouble < 1 ||
	    seq->valuedouble > 9007199254740992.0 || !cJSON_IsObject(ch)) {
		cJSON_Delete(in);
		open_refuse(t, x, 400, "refused",
			    "want {\"seq\": N, \"challenge\": {...}} "
			    "(at most 64 KiB)");
		return;
	}
	s = (uint64_t)seq->valuedouble;
	expire(t);
	if (s >= t->head && s < t->next)
		e = *slot(t, s);
	if (!e || e->seq != s) {
		cJSON_Delete(in);
		open_refuse(t, x, 404, "not_held", "no such entry in the tee");
		return;
	}
	for (o = t->opens; o; o = o->next)
		if (o->seq == s)
			break;
	if (o) {
		cJSON_Delete(in);
		open_refuse(t, x, 409, "refused",
			    "an opening of this entry is in flight");
		return;
	}
	if (t->n_opens >= (unsigned)t->c->gemm_open_max_pending) {
		cJSON_Delete(in);
		open_refuse(t, x, 429, "refused",
			    "too many openings in flight "
			    "(gemm_open_max_pending)");
		return;
	}
	if (!(w = leg_of(t, e->worker_id))) {
		cJSON_Delete(in);
		open_refuse(t, x, 200, "gone",
			    "the leg that served the entry is gone");
		return;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		cJSON_Delete(in);
		gw_internal_reply(t->g, x, 500, NULL, "out of memory");
		return;
	}
	o->t = t;
	o->x = x;
	o->seq = s;
	o->worker_id = w->id;
	snprintf(o->corr_id, sizeof(o->corr_id), "gemm-%s-%llu", t->boot,
		 (unsigned long long)++t->open_no);
	o->next = t->opens;
	if (o->next)
		o->next->pprev = &o->next;
	o->pprev = &t->opens;
	t->opens = o;
	t->n_opens++;
	fr = cJSON_CreateObject();
	if (fr && cJSON_AddStringToObject(fr, "type", "gemm_open") &&
	    cJSON_AddStringToObject(fr, "corr_id", o->corr_id) &&
	    cJSON_AddStringToObject(fr, "request_id", e->request_id)) {
		cJSON_DetachItemViaPointer(in, ch);
		cJSON_AddItemToObject(fr, "challenge", ch);
		text = cJSON_PrintUnformatted(fr);
	}
	cJSON_Delete(fr);
	cJSON_Delete(in);
	if (!(o->timer =
		      evtimer_new(t->g->h->evbase(t->g->h), open_timeout, o)) ||
	    !text) {
		free(text);
		open_end(o, NULL, "refused", "out of memory");
		return;
	}
	if (!(to > 0))
		to = 30;
	tv.tv_sec = (time_t)to;
	tv.tv_usec = (suseconds_t)((to - (double)tv.tv_sec) * 1e6);
	evtimer_add(o->timer, &tv);
	GW_LOG(t->g, ENGY_LOG_INFO,
	       "event=tee_open seq=%llu worker=%llu corr_id=%s remote=%s",
	       (unsigned long long)s, (unsigned long long)w->id, o->corr_id,
	       hr->remote ? hr->remote : "-");
	if (gw_send(t->g, w, text, strlen(text)) < 0)
		open_end(o, NULL, "gone", "the frame could not be sent");
}

static void tee_opening(struct gw *g, struct gw_worker *w, const char *corr_id,
			const cJSON *frame, size_t len)
{
	struct tee *t = gw_mod_find(g, GW_MOD_TEE);
	struct tee_open *o = NULL;
	cJSON *op, *body;
	const cJSON *err;
	char why[96];
	size_t i;

	for (o = t ? t->opens : NULL; o; o = o->next)
		if (o->worker_id == w->id && !strcmp(o->corr_id, corr_id))
			break;
	if (!o) { /* never asked, asked of another leg, or answered */
		gw_count(g, "engy_gw_frames_ignored_total",
			 "reason=\"unknown corr_id\"");
		return;
	}
	if (len > (size_t)t->c->gemm_open_max_bytes) {
		snprintf(why, sizeof(why),
			 "an opening of %zu bytes (at most %lld)", len,
			 (long long)t->c->gemm_open_max_bytes);
		open_end(o, NULL, "oversize", why);
		return;
	}
	op = engy_json_get(frame, "opening");
	err = engy_json_get(frame, "error");
	if (cJSON_IsObject(op)) {
		body = cJSON_CreateObject();
		if (body) {
			cJSON_DetachItemViaPointer((cJSON *)frame, op);
			cJSON_AddItemToObject(body, "opening", op);
		}
		open_end(o, body, "opened", "out of memory");
		return;
	}
	if (cJSON_IsString(err) && err->valuestring) {
		/* the miner's reason, printable ASCII and short */
		for (i = 0; i < 63 && err->valuestring[i]; i++) {
			unsigned char ch8 = (unsigned char)err->valuestring[i];

			why[i] = ch8 < 0x20 || ch8 > 0x7e || ch8 == '"' ||
						 ch8 == '\\'
					 ? '_'
					 : (char)ch8;
		}
		why[i] = '\0';
		open_end(o, NULL, "miner_error", why);
		return;
	}
	open_end(o, NULL, "malformed",
		 "a gemm_opening with neither an opening object nor an error");
}

static void tee_closed(void *arg, struct gw_worker *w)
{
	struct tee *t = arg;
	struct tee_open *o = t->opens, *n;

	for (; o; o = n) {
		n = o->next;
		if (o->worker_id != w->id)
			continue;
		/* a message over the transport's bound closed it (1009): an
		 * opening too large to relay is the miner's, not a drop */
		if (w->close_code == ENGY_WS_CLOSE_TOO_BIG)
			open_end(o, NULL, "oversize",
				 "the leg sent a message over the transport's "
				 "max_message_bytes");
		else
			open_end(o, NULL, "gone",
				 "the leg closed before it answered");
	}
}

static void h_gone(void *arg, struct engy_http_exchange *x)
{
	struct tee *t = arg;
	struct tee_open *o;

	for (o = t->opens; o; o = o->next)
		if (o->x == x) {
			o->x = NULL; /* a late answer is dropped */
			return;
		}
}

static int h_tee(void *arg, struct engy_http_exchange *x,
		 const struct engy_http_request *hr)
{
	struct tee *t = arg;
	const char *p = hr->path + strlen("/internal/v1/tee");
	bool get = !strcmp(hr->method, "GET");

	if (!gw_internal_auth(t->g, x, hr))
		return 0;
	if (!*p && get)
		stats(t, x);
	else if (!strcmp(p, "/sample") && get)
		sample(t, x, hr);
	else if (!strcmp(p, "/ack") && !strcmp(hr->method, "POST"))
		ack(t, x, hr);
	else if (!strcmp(p, "/open") && !strcmp(hr->method, "POST"))
		open_req(t, x, hr);
	else if (!*p || !strcmp(p, "/sample") || !strcmp(p, "/ack") ||
		 !strcmp(p, "/open"))
		gw_internal_reply(t->g, x, 405, NULL,
				  "GET the ring and sample, "
				  "POST ack and open");
	else
		gw_internal_reply(t->g, x, 404, NULL, "no such route");
	return 0;
}

static const struct engy_http_handler tee_handler = {
	.size = sizeof(tee_handler),
	.on_request = h_tee,
	.on_gone = h_gone,
};

/* ---- life ------------------------------------------------------------- */

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	expire(arg);
}

static void tee_destroy(void *arg)
{
	struct tee *t = arg;
	uint64_t s;

	while (t->opens) /* the loop has ended: no reply can go out */
		open_free(t->opens);
	for (s = t->head; t->cap && s < t->next; s++) {
		struct tee_ent **p = slot(t, s);

		if (*p)
			ent_free(*p);
		*p = NULL;
	}
	free(t->ring);
	while (t->n_hs)
		free(t->hs[--t->n_hs]);
	free(t->hs);
	if (t->tick)
		event_free(t->tick);
	free(t);
}

static void metrics(struct tee *t)
{
	const struct engy_host *r = t->g->h;
	char l[48];
	int i;

	r->metric(r, ENGY_METRIC_GAUGE, "engy_gw_tee_entries",
		  "commitments held in RAM", NULL, NULL, 0, &t->m_entries);
	r->metric(r, ENGY_METRIC_GAUGE, "engy_gw_tee_bytes",
		  "bytes the tee holds (counted against tee_max_bytes)", NULL,
		  NULL, 0, &t->m_bytes);
	r->metric(r, ENGY_METRIC_COUNTER, "engy_gw_tee_kept_total",
		  "commitments taken into the tee", "kind=\"buyer\"", NULL, 0,
		  &t->m_kept[0]);
	r->metric(r, ENGY_METRIC_COUNTER, "engy_gw_tee_kept_total",
		  "commitments taken into the tee", "kind=\"probe\"", NULL, 0,
		  &t->m_kept[1]);
	for (i = 0; i < 4; i++) {
		snprintf(l, sizeof(l), "reason=\"%s\"", drop_names[i]);
		r->metric(r, ENGY_METRIC_COUNTER, "engy_gw_tee_dropped_total",
			  "tee entries forgotten", l, NULL, 0, &t->m_drop[i]);
	}
	for (i = 1; i <= 3; i++) {
		snprintf(l, sizeof(l), "verdict=\"%s\"", verdict_names[i]);
		r->metric(r, ENGY_METRIC_COUNTER, "engy_gw_tee_verdicts_total",
			  "verdicts auditors acknowledged", l, NULL, 0,
			  &t->m_verdict[i]);
	}
}

int gw_tee_init(struct gw *g)
{
	struct gw_observer o = {
		.name = GW_MOD_TEE,
		.response = tee_response,
		.closed = tee_closed,
		.destroy = tee_destroy,
	};
	struct timeval one = { 1, 0 };
	struct tee *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return -ENOMEM;
	t->g = g;
	t->c = &g->c->mod;
	t->head = t->next = 1;
	t->rng = (uint64_t)gw_now_ms() * 0xbf58476d1ce4e5b9ull | 1;
	{
		uint8_t b[8];
		uint64_t x = 0;
		int i;

		if (getentropy(b, sizeof(b)) == 0)
			memcpy(&x, b, sizeof(x));
		x ^= t->rng ^ (uint64_t)getpid() << 32;
		for (i = 0; i < 16; i++)
			t->boot[i] =
				"0123456789abcdef"[(x >> (60 - 4 * i)) & 15];
		t->boot[16] = '\0';
	}
	o.arg = t;
	rc = grow(t);
	if (rc == 0)
		rc = gw_observe(g, &o);
	if (rc) {
		free(t->ring);
		free(t);
		return rc;
	}
	metrics(t);
	g->gemm_opening = tee_opening;
	t->tick = event_new(g->h->evbase(g->h), -1, EV_PERSIST, on_tick, t);
	if (!t->tick || event_add(t->tick, &one) < 0)
		return -ENOMEM;
	rc = g->t->http_route(g->ti, "/internal/v1/tee", &tee_handler, t);
	if (rc < 0)
		GW_LOG(g, ENGY_LOG_ERR,
		       "event=route_failed "
		       "path=/internal/v1/tee error=\"%s\"",
		       strerror(-rc));
	GW_LOG(g, ENGY_LOG_INFO,
	       "event=tee_ready sample_rate=%g "
	       "ttl_s=%g max_bytes=%lld internal_api=%s",
	       t->c->tee_sample_rate, t->c->tee_ttl_s,
	       (long long)t->c->tee_max_bytes,
	       t->c->tee_token && t->c->tee_token[0] ? "on" : "off");
	return rc;
}
