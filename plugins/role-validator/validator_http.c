/* SPDX-License-Identifier: MIT */
/*
 * The validator's HTTP: the epoch fetch (capped at 1 MiB by
 * Content-Length and by the running total) and the signed provider
 * heartbeat.  Both run lib/http/httpc (blocking) on the worker pool.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include <config.h>

#include "httpc.h"
#include "validator_int.h"

void val_fetch_run(struct val *v, struct val_fetch *f)
{
	static const char *const hdrs[] = { "Accept-Encoding: identity", NULL };
	char url[600];
	long ms = (long)v->c->fetch_timeout_s * 1000;
	const struct engy_httpc_req rq = {
		.url = url,
		.headers = hdrs,
		.timeout_ms = ms,
		.connect_timeout_ms = ms,
		.max_body = VAL_MAX_PAYLOAD,
		.user_agent = "engy-validator/" PACKAGE_VERSION,
	};
	struct engy_httpc_resp rs;
	int rc;

	memset(f, 0, sizeof(*f));
	snprintf(url, sizeof(url), "%s%s", v->api, VAL_EPOCH_PATH);
	rc = engy_httpc_do(NULL, &rq, &rs);
	f->status = rs.status;
	if (rc == -EFBIG) {
		f->rc = -EFBIG;
		snprintf(f->error, sizeof(f->error), "payload over %u bytes",
			 VAL_MAX_PAYLOAD);
	} else if (rc < 0) {
		f->rc = rc == -ETIMEDOUT || rc == -ENOMEM ? rc : -EIO;
		snprintf(f->error, sizeof(f->error), "%s", rs.err);
	} else if (f->status != 200) {
		f->rc = -EPROTO;
		snprintf(f->error, sizeof(f->error), "HTTP %ld", f->status);
	} else {
		f->body = rs.body;
		f->len = rs.len;
		rs.body = NULL;
		if (!f->body) {
			f->rc = -EPROTO;
			snprintf(f->error, sizeof(f->error), "empty answer");
		}
	}
	engy_httpc_resp_free(&rs);
}

void val_fetch_free(struct val_fetch *f)
{
	free(f->body);
	memset(f, 0, sizeof(*f));
}

struct beat {
	struct val *v;
	char body[256];
	char hdr_key[96], hdr_ts[64], hdr_sig[160];
	long status;
	char error[128];
};

static void beat_run(void *arg)
{
	struct beat *b = arg;
	const char *const hdrs[] = { "Content-Type: application/json",
				     b->hdr_key, b->hdr_ts, b->hdr_sig, NULL };
	char url[600];
	const struct engy_httpc_req rq = {
		.method = "POST",
		.url = url,
		.headers = hdrs,
		.body = b->body,
		.body_len = strlen(b->body),
		.timeout_ms = 10000,
		.max_body = VAL_MAX_PAYLOAD,
		.user_agent = "engy-validator/" PACKAGE_VERSION,
	};
	struct engy_httpc_resp rs;

	snprintf(url, sizeof(url), "%s%s", b->v->api, VAL_HEARTBEAT_PATH);
	if (engy_httpc_do(NULL, &rq, &rs) < 0)
		snprintf(b->error, sizeof(b->error), "%s", rs.err);
	b->status = rs.status;
	engy_httpc_resp_free(&rs);
}

static void beat_done(void *arg, int rc)
{
	struct beat *b = arg;

	b->v->inflight--;
	if (rc == 0 && !b->error[0] && b->status >= 200 && b->status < 300)
		val_log(b->v, ENGY_LOG_DEBUG,
			"event=provider_heartbeat status=%ld", b->status);
	else
		val_log(b->v, ENGY_LOG_INFO,
			"event=provider_heartbeat_failed error=\"%s\" "
			"effect=none",
			rc	      ? strerror(-rc)
			: b->error[0] ? b->error
				      : "not accepted");
	free(b);
}

/*
 * The body, as the public light validator builds it: liveness, then the
 * epoch last submitted, then (only when the state says that epoch carried
 * it) the digest the provider reconciles.
 */
static int beat_body(char *out, size_t cap, const struct engy_valstate *st)
{
	char synced[40] = "", claim[128] = "";
	int n;

	if (st && st->last.has_applied)
		snprintf(synced, sizeof(synced), ",\"synced_epoch\":%" PRIu64,
			 st->last.applied);
	if (st && engy_valstate_claim(st))
		snprintf(claim, sizeof(claim),
			 ",\"consensus\":{\"epoch_index\":%" PRIu64
			 ",\"digest\":\"%.64s\"}",
			 st->last.applied, st->digest);
	n = snprintf(out, cap, "{\"v\":1,\"version\":\"engy/%s\"%s%s}",
		     PACKAGE_VERSION, synced, claim);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : 0;
}

void val_provider_heartbeat(struct val *v, const struct engy_valstate *st)
{
	char msg[256], digest[65];
	uint8_t sum[32], sig[64];
	struct beat *b;
	int64_t ts = (int64_t)time(NULL);
	size_t i;

	if (!v->c->provider_heartbeat || v->stopping)
		return;
	b = calloc(1, sizeof(*b));
	if (!b)
		return;
	b->v = v;
	if (beat_body(b->body, sizeof(b->body), st)) {
		free(b);
		return;
	}
	crypto_hash_sha256(sum, (const uint8_t *)b->body, strlen(b->body));
	for (i = 0; i < 32; i++)
		sprintf(digest + 2 * i, "%02x", sum[i]);
	snprintf(msg, sizeof(msg), "engy-sn53:api:v1:%lld:POST:%s:%lld:%s",
		 (long long)v->c->netuid, VAL_HEARTBEAT_PATH, (long long)ts,
		 digest);
	if (engy_sr25519_sign(&v->hk.kp, ENGY_SR25519_SUBSTRATE_CTX, msg,
			      strlen(msg), sig)) {
		free(b);
		return;
	}
	snprintf(b->hdr_key, sizeof(b->hdr_key), "X-Validator-Hotkey: %s",
		 v->hk.ss58);
	snprintf(b->hdr_ts, sizeof(b->hdr_ts), "X-Validator-Ts: %lld",
		 (long long)ts);
	strcpy(b->hdr_sig, "X-Validator-Sig: ");
	for (i = 0; i < 64; i++)
		sprintf(b->hdr_sig + 17 + 2 * i, "%02x", sig[i]);
	if (v->h->work(v->h, beat_run, beat_done, b) < 0) {
		free(b);
		return;
	}
	v->inflight++;
}
