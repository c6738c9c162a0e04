/* SPDX-License-Identifier: MIT */
/*
 * Pulling from the gateway's proof tee (specs/auditor.md §2): every
 * pull_s, one GET on the pool (lib/http/httpc, bounded body, timeout), the items
 * parsed there; on the loop thread the sampled ones join a bounded queue
 * (past queue_max they are dropped and counted: the auditor falls behind,
 * serving never does).  A buyer request is sampled when the first four
 * bytes of SHA-256(request_id) read below sample_ppm / 10^6 of 2^32, so a
 * miner cannot tell which of its requests are audited and a restart
 * samples the same ones; a probe always is.  The cursor travels with the
 * tee's "boot" (the gateway process's id): after a gateway restart its
 * seqs begin at 1 again, and the tee, seeing another boot, answers from
 * its oldest entry instead of skipping what is below the old cursor.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include <config.h>

#include "auditor_int.h"
#include "httpc.h"

#define PULL_MAX_BYTES (64u << 20)
#define PULL_LIMIT     64
#define ACK_MAX_BYTES  (64u << 10)

struct pull {
	struct aud *a;
	char url[1024];
	char err[160];
	struct aud_job *jobs; /* parsed, in order */
	char next[64];
	char boot[40];
	unsigned n_items, n_sampled;
};

void aud_job_free(struct aud_job *j)
{
	if (!j)
		return;
	if (j->commitment)
		sodium_memzero(j->commitment, strlen(j->commitment));
	free(j->commitment);
	if (j->ids)
		sodium_memzero(j->ids,
			       (j->n_prompt + j->n_out) * sizeof(*j->ids));
	free(j->ids);
	free(j->rows);
	free(j);
}

static bool sampled(const char *rid, int64_t ppm)
{
	uint8_t h[crypto_hash_sha256_BYTES];
	uint64_t x;

	if (ppm >= 1000000)
		return true;
	crypto_hash_sha256(h, (const uint8_t *)rid, strlen(rid));
	x = (uint64_t)h[0] << 24 | (uint64_t)h[1] << 16 | (uint64_t)h[2] << 8 |
	    h[3];
	return x * 1000000 < (uint64_t)ppm << 32;
}

static void copy_str(char *dst, size_t cap, const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	dst[0] = '\0';
	if (cJSON_IsString(v) && strlen(v->valuestring) < cap)
		strcpy(dst, v->valuestring);
}

static struct aud_job *parse_item(struct aud *a, const cJSON *it)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "commitment");
	const cJSON *v;
	struct aud_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->a = a;
	copy_str(j->request_id, sizeof(j->request_id), it, "request_id");
	copy_str(j->miner, sizeof(j->miner), it, "miner");
	copy_str(j->model, sizeof(j->model), it, "model");
	v = cJSON_GetObjectItemCaseSensitive(it, "time_ms");
	j->time_ms = cJSON_IsNumber(v) && v->valuedouble > 0
			     ? (int64_t)v->valuedouble
			     : aud_now_ms();
	j->is_probe =
		cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "is_probe"));
	v = cJSON_GetObjectItemCaseSensitive(it, "seq");
	j->seq = cJSON_IsNumber(v) && v->valuedouble > 0
			 ? (uint64_t)v->valuedouble
			 : 0;
	if (c && !cJSON_IsNull(c))
		j->commitment = cJSON_PrintUnformatted(c);
	return j;
}

static void pull_fn(void *arg)
{
	struct pull *u = arg;
	struct aud *a = u->a;
	struct aud_job **tail = &u->jobs;
	const cJSON *items, *it, *nx;
	const struct engy_httpc_req rq = {
		.url = u->url,
		.timeout_ms = a->c->fetch_timeout_s * 1000,
		.max_body = PULL_MAX_BYTES,
		.bearer = a->c->tee_token && *a->c->tee_token ? a->c->tee_token
							      : NULL,
		.user_agent = "engy-auditor/" PACKAGE_VERSION,
	};
	struct engy_httpc_resp rs;
	cJSON *doc;

	if (engy_httpc_do(NULL, &rq, &rs) < 0) {
		snprintf(u->err, sizeof(u->err), "%s", rs.err);
		goto out;
	}
	if (rs.status != 200) {
		snprintf(u->err, sizeof(u->err), "HTTP %ld", rs.status);
		goto out;
	}
	doc = cJSON_ParseWithLength(rs.body ? rs.body : "", rs.len);
	items = cJSON_GetObjectItemCaseSensitive(doc, "entries");
	if (!cJSON_IsArray(items)) {
		snprintf(u->err, sizeof(u->err),
			 "not a tee answer (no entries)");
		cJSON_Delete(doc);
		goto out;
	}
	cJSON_ArrayForEach(it, items)
	{
		struct aud_job *j;
		char rid[64];

		u->n_items++;
		copy_str(rid, sizeof(rid), it, "request_id");
		if (!cJSON_IsTrue(
			    cJSON_GetObjectItemCaseSensitive(it, "is_probe")) &&
		    !sampled(rid, a->c->sample_ppm))
			continue;
		j = parse_item(a, it);
		if (!j)
			break;
		u->n_sampled++;
		*tail = j;
		tail = &j->next;
	}
	nx = cJSON_GetObjectItemCaseSensitive(doc, "next");
	if (cJSON_IsString(nx) && strlen(nx->valuestring) < sizeof(u->next))
		strcpy(u->next, nx->valuestring);
	else if (cJSON_IsNumber(nx))
		snprintf(u->next, sizeof(u->next), "%.0f", nx->valuedouble);
	copy_str(u->boot, sizeof(u->boot), doc, "boot");
	if (strspn(u->boot, "0123456789abcdefABCDEF") != strlen(u->boot))
		u->boot[0] = '\0';
	cJSON_Delete(doc);
out:
	engy_httpc_resp_free(&rs);
}

static void pull_done(void *arg, int prc)
{
	struct pull *u = arg;
	struct aud *a = u->a;
	struct aud_job *j;
	unsigned dropped = 0;

	a->inflight--;
	a->pulling = false;
	if (u->err[0])
		aud_log(a, ENGY_LOG_WARNING,
			"event=tee_pull_failed error=\"%s\" retry_s=%lld",
			u->err, (long long)a->c->pull_s);
	if (u->next[0]) {
		memcpy(a->cursor, u->next, sizeof(a->cursor));
		if (u->boot[0] && a->boot[0] && strcmp(u->boot, a->boot))
			aud_log(a, ENGY_LOG_NOTICE,
				"event=tee_restarted boot=%s was=%s", u->boot,
				a->boot);
		memcpy(a->boot, u->boot, sizeof(a->boot));
	}
	while ((j = u->jobs)) {
		u->jobs = j->next;
		j->next = NULL;
		if (prc < 0 || a->stopping ||
		    a->q_len >= (unsigned)a->c->queue_max) {
			dropped += prc >= 0 && !a->stopping;
			aud_job_free(j);
			continue;
		}
		if (a->q_tail)
			a->q_tail->next = j;
		else
			a->q_head = j;
		a->q_tail = j;
		a->q_len++;
	}
	a->n_dropped += dropped;
	if (u->n_items)
		aud_log(a, ENGY_LOG_INFO,
			"event=tee_pull items=%u sampled=%u dropped=%u queued=%u",
			u->n_items, u->n_sampled, dropped, a->q_len);
	free(u);
	aud_check_next(a);
}

/*
 * Jobs another auditor on the store held when this one came to them wait
 * here (bounded by queue_max, past it dropped and counted) and go back to
 * the queue when their retry time comes: the holder may have finished
 * (then the claim says done and the job goes) or crashed (then its claim
 * lapses and this auditor takes the job).  Called every pull_s.
 */
void aud_requeue_deferred(struct aud *a)
{
	struct aud_job **pp = &a->d_head, *j;
	int64_t now = aud_now_ms();

	while ((j = *pp)) {
		if (j->retry_ms > now ||
		    a->q_len >= (unsigned)a->c->queue_max) {
			pp = &j->next;
			continue;
		}
		*pp = j->next;
		a->d_len--;
		j->next = NULL;
		j->claim = AUD_CLAIM_OURS;
		if (a->q_tail)
			a->q_tail->next = j;
		else
			a->q_head = j;
		a->q_tail = j;
		a->q_len++;
	}
	aud_check_next(a);
}

void aud_pull_start(struct aud *a)
{
	const char *base = a->c->tee_url;
	struct pull *u;

	if (a->d_head && !a->stopping)
		aud_requeue_deferred(a);

	if (a->pulling || a->stopping || !base || !*base)
		return;
	u = calloc(1, sizeof(*u));
	if (!u)
		return;
	u->a = a;
	snprintf(u->url, sizeof(u->url), "%s%ssince=%s&n=%d%s%s", base,
		 strchr(base, '?') ? "&" : "?", a->cursor[0] ? a->cursor : "0",
		 PULL_LIMIT, a->boot[0] ? "&boot=" : "", a->boot);
	a->pulling = true;
	a->inflight++;
	if (a->h->work(a->h, pull_fn, pull_done, u) < 0) {
		a->inflight--;
		a->pulling = false;
		free(u);
	}
}

/*
 * The verdict back to the tee (specs/gateway.md): the entry is dropped
 * there, and a probe's verdict feeds onboarding.  Best effort, on the
 * pool; a tee without an ack endpoint just expires its entries.
 */
void aud_ack(struct aud *a, const struct aud_job *j)
{
	static const char *const hdrs[] = { "Content-Type: application/json",
					    NULL };
	const char *base = a->c->tee_url, *v;
	char url[1024], body[128];
	uint32_t vk = ENGY_VERDICT_UNPROVEN;
	bool first = true;
	unsigned i;
	struct engy_httpc_req rq = {
		.method = "POST",
		.url = url,
		.headers = hdrs,
		.body = body,
		.timeout_ms = a->c->fetch_timeout_s * 1000,
		.max_body = ACK_MAX_BYTES,
		.bearer = a->c->tee_token && *a->c->tee_token ? a->c->tee_token
							      : NULL,
	};
	struct engy_httpc_resp rs;
	size_t n;

	if (!j->seq || !base || (n = strlen(base)) < 7 ||
	    strcmp(base + n - 7, "/sample") || n >= sizeof(url) - 8)
		return;
	snprintf(url, sizeof(url), "%.*s/ack", (int)(n - 7), base);
	/* One verdict for the entry: cheat when any scheme's is (the
	 * gateway pulls the miner), else the first scheme's. */
	for (i = 0; i < a->n_pr; i++) {
		if (!j->v[i].scheme[0])
			continue;
		if (first || j->v[i].verdict == ENGY_VERDICT_CHEAT)
			vk = j->v[i].verdict;
		first = false;
		if (vk == ENGY_VERDICT_CHEAT)
			break;
	}
	v = vk == ENGY_VERDICT_PASS    ? "pass"
	    : vk == ENGY_VERDICT_CHEAT ? "cheat"
				       : "unproven";
	snprintf(body, sizeof(body),
		 "{\"acks\":[{\"seq\":%llu,\"verdict\":\"%s\"}]}",
		 (unsigned long long)j->seq, v);
	/* Best effort: the answer is dropped (a tee may not ack at all). */
	rq.body_len = strlen(body);
	engy_httpc_do(NULL, &rq, &rs);
	engy_httpc_resp_free(&rs);
}
