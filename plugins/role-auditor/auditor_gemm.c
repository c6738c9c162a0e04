/* SPDX-License-Identifier: MIT */
/*
 * The GEMM audit of one sampled entry (specs/auditor.md, "GEMM audit"),
 * on the pool, inside the job's verify step and so before the entry is
 * acknowledged (the tee still holds it and knows the leg that served it):
 *
 *   1. sampled at gemm_rate (libsodium's randombytes: a miner cannot
 *      predict which answers are opened);
 *   2. nonce = 32 fresh random bytes, revealed only now that the
 *      commitment is held; the scheme's challenge() derives the cells;
 *   3. POST <tee>/open {"seq":S,"challenge":{...}}: the gateway relays it
 *      to the miner's leg and answers with the opening or why none came;
 *   4. the scheme's check() with the opening -> pass / cheat / unproven.
 *
 * The non-answer rule (a miner must not escape by silence):
 *   - a connected leg that does not answer within the gateway's deadline
 *     (status no_answer), an opening over the gateway's size bound
 *     (oversize) or a gemm_opening frame with neither an opening nor an
 *     error (malformed) is `cheat` (reason no_opening / oversize /
 *     malformed): the miner alone controls those;
 *   - a leg that is gone (the miner disconnected: status gone) or a miner
 *     that says it cannot open (miner_error: not_held, busy, ...) is
 *     `unproven` (reason gone / miner_<error>) and counted: beyond
 *     gemm_miss_allowance such misses of one miner in one epoch, each
 *     further one is `cheat` (reason no_opening);
 *   - what is the gateway's or this auditor's trouble (the entry no
 *     longer held, an open refused, the call failed) is `unproven` and not
 *     counted.
 * The misses are counted in RAM (this process, this epoch): a restart
 * forgives them, which costs a cheat at most gemm_miss_allowance more
 * silent answers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "auditor_int.h"
#include "httpc.h"

#define OPEN_SLACK 4096 /* the reply's envelope around the opening */

/* This epoch's count of @miner's misses, after adding one. */
static unsigned miss(struct aud *a, const char *miner)
{
	int64_t epoch = aud_now_ms() / (a->c->epoch_s * 1000);
	struct aud_miss *m, *old = NULL;
	size_t i;

	for (i = 0; i < AUD_MISS_SLOTS; i++) {
		m = &a->misses[i];
		if (m->epoch == epoch && !strcmp(m->miner, miner))
			return ++m->count;
		if (!old || m->epoch < old->epoch)
			old = m; /* empty slots have epoch 0: taken first */
	}
	snprintf(old->miner, sizeof(old->miner), "%s", miner);
	old->epoch = epoch;
	old->count = 1;
	return 1;
}

static bool sampled(double rate)
{
	if (rate >= 1)
		return true;
	if (!(rate > 0))
		return false;
	return randombytes_uniform(1000000) < (uint32_t)(rate * 1e6);
}

/* The open URL beside the tee's sample URL, or -EINVAL. */
static int open_url(const struct aud *a, char *url, size_t len)
{
	const char *base = a->c->tee_url;
	size_t n;

	if (!base || (n = strlen(base)) < 7 ||
	    strcmp(base + n - 7, "/sample") || n + 8 >= len)
		return -EINVAL;
	snprintf(url, len, "%.*s/open", (int)(n - 7), base);
	return 0;
}

static void set(struct engy_verdict *v, uint32_t verdict, const char *reason)
{
	v->verdict = verdict;
	snprintf(v->reason, sizeof(v->reason), "%s", reason);
}

/* A miss: unproven within the allowance, cheat beyond it. */
static void missed(struct aud *a, const struct aud_job *j,
		   struct engy_verdict *v, const char *reason)
{
	unsigned n = miss(a, j->miner);

	if (n > (unsigned)a->c->gemm_miss_allowance)
		set(v, ENGY_VERDICT_CHEAT, "no_opening");
	else
		set(v, ENGY_VERDICT_UNPROVEN, reason);
	aud_log(a, ENGY_LOG_NOTICE,
		"event=gemm_miss request_id=%s miner=%s reason=%s misses=%u allowance=%lld",
		j->request_id, j->miner, reason, n,
		(long long)a->c->gemm_miss_allowance);
}

/* What the gateway answered, judged. */
static void judge(struct aud *a, const struct aud_job *j,
		  const struct aud_proof *p, const uint8_t nonce[32],
		  const struct engy_proof_limits *lim,
		  const struct engy_httpc_resp *rs, struct engy_verdict *v)
{
	cJSON *o = rs->body ? cJSON_ParseWithLength(rs->body, rs->len) : NULL;
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(o, "opening");
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
	const cJSON *er = cJSON_GetObjectItemCaseSensitive(o, "error");
	struct engy_proof_result res = { 0 };
	const char *s = cJSON_IsString(st) ? st->valuestring : "";
	char *text, why[64];
	size_t i;

	if (rs->status == 200 && cJSON_IsObject(op)) {
		text = cJSON_PrintUnformatted(op);
		if (!text ||
		    p->ops->check(p->inst, j->commitment, strlen(j->commitment),
				  j->request_id, nonce, text, strlen(text), lim,
				  &res) < 0) {
			set(v, ENGY_VERDICT_UNPROVEN, "check_failed");
		} else {
			v->verdict = (uint32_t)res.verdict;
			snprintf(v->reason, sizeof(v->reason), "%s",
				 res.reason);
		}
		free(res.detail);
		free(text);
	} else if (rs->status == 200 && !strcmp(s, "no_answer")) {
		set(v, ENGY_VERDICT_CHEAT, "no_opening");
	} else if (rs->status == 200 &&
		   (!strcmp(s, "oversize") || !strcmp(s, "malformed"))) {
		set(v, ENGY_VERDICT_CHEAT, s);
	} else if (rs->status == 200 && !strcmp(s, "gone")) {
		missed(a, j, v, "gone");
	} else if (rs->status == 200 && !strcmp(s, "miner_error")) {
		snprintf(why, sizeof(why), "miner_%s",
			 cJSON_IsString(er) ? er->valuestring : "error");
		for (i = 0; why[i]; i++)
			if (!((why[i] >= 'a' && why[i] <= 'z') ||
			      (why[i] >= '0' && why[i] <= '9') ||
			      why[i] == '_'))
				why[i] = '_';
		missed(a, j, v, why);
	} else {
		/* not held, refused, or the call failed: not the miner's */
		set(v, ENGY_VERDICT_UNPROVEN,
		    rs->status == 404 ? "open_not_held" : "open_failed");
	}
	cJSON_Delete(o);
}

bool aud_proof_challenges(const struct aud_proof *p)
{
	return p->ops->size >= offsetof(struct engy_proof_ops, check) +
				       sizeof(p->ops->check) &&
	       p->ops->challenge && p->ops->check;
}

bool aud_gemm_audit(struct aud *a, const struct aud_job *j,
		    const struct aud_proof *p,
		    const struct engy_proof_limits *lim, struct engy_verdict *v)
{
	static const char *const hdrs[] = { "Content-Type: application/json",
					    NULL };
	struct engy_proof_result res = { 0 };
	uint8_t nonce[32];
	char url[1024], *json = NULL, *body = NULL;
	struct engy_httpc_req rq = {
		.method = "POST",
		.url = url,
		.headers = hdrs,
		.timeout_ms = (long)(a->c->gemm_open_timeout_s * 1000),
		.max_body = (size_t)a->c->gemm_open_max_bytes + OPEN_SLACK,
		.bearer = a->c->tee_token && *a->c->tee_token ? a->c->tee_token
							      : NULL,
	};
	struct engy_httpc_resp rs = { 0 };
	int n;

	if (!sampled(lim->gemm_rate))
		return false;
	if (sodium_init() < 0) { /* idempotent, thread-safe */
		set(v, ENGY_VERDICT_UNPROVEN, "no_random");
		return true;
	}
	v->verdict = ENGY_VERDICT_UNPROVEN;
	if (j->why && strcmp(j->why, "recompute_failed") &&
	    strcmp(j->why, "no_checkpoint")) {
		/* the commitment or its model is unusable (TOPLOC's recompute
		 * is not the GEMM audit's concern) */
		set(v, ENGY_VERDICT_UNPROVEN, j->why);
		return true;
	}
	if (!j->commitment || !j->seq || open_url(a, url, sizeof(url))) {
		set(v, ENGY_VERDICT_UNPROVEN, "no_tee");
		return true;
	}
	randombytes_buf(nonce, sizeof(nonce));
	if (p->ops->challenge(p->inst, j->commitment, strlen(j->commitment),
			      j->request_id, nonce, lim, &json, &res) < 0) {
		set(v, ENGY_VERDICT_UNPROVEN, "challenge_failed");
		goto out;
	}
	if (!json) { /* not challengeable: the scheme says why */
		v->verdict = (uint32_t)res.verdict;
		snprintf(v->reason, sizeof(v->reason), "%s",
			 res.reason[0] ? res.reason : "no_gemm");
		goto out;
	}
	n = asprintf(&body, "{\"seq\":%llu,\"challenge\":%s}",
		     (unsigned long long)j->seq, json);
	if (n < 0) {
		body = NULL;
		set(v, ENGY_VERDICT_UNPROVEN, "challenge_failed");
		goto out;
	}
	rq.body = body;
	rq.body_len = (size_t)n;
	if (engy_httpc_do(NULL, &rq, &rs) < 0)
		set(v, ENGY_VERDICT_UNPROVEN, "open_failed");
	else
		judge(a, j, p, nonce, lim, &rs, v);
	engy_httpc_resp_free(&rs);
out:
	sodium_memzero(nonce, sizeof(nonce));
	free(res.detail);
	free(json);
	free(body);
	return true;
}
