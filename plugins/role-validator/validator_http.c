/* SPDX-License-Identifier: MIT */
/*
 * The validator's HTTP: the epoch fetch (capped at 1 MiB by
 * Content-Length and by the running total) and the signed provider
 * heartbeat.  Both run blocking libcurl on the worker pool.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <sodium.h>

#include <config.h>

#include "grow.h"
#include "validator_int.h"

struct sink {
	char *p;
	size_t len, cap;
	bool too_big;
};

static size_t on_body(char *d, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;

	n *= size;
	if (n > VAL_MAX_PAYLOAD - s->len) {
		s->too_big = true;
		return 0;
	}
	if (!engy_grow_by(&s->p, &s->cap, s->len + 1, n, 1))
		return 0;
	memcpy(s->p + s->len, d, n);
	s->len += n;
	s->p[s->len] = '\0';
	return n;
}

/* Refuse a declared length over the cap before reading the body. */
static size_t on_header(char *d, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;

	if (len > 15 && strncasecmp(d, "content-length:", 15) == 0 &&
	    strtoull(d + 15, NULL, 10) > VAL_MAX_PAYLOAD) {
		s->too_big = true;
		return 0;
	}
	return len;
}

void val_fetch_run(struct val *v, struct val_fetch *f)
{
	struct sink s = {0};
	char url[600];
	long ms = (long)v->c->fetch_timeout_s * 1000;
	CURLcode cc;
	CURL *h;

	memset(f, 0, sizeof(*f));
	snprintf(url, sizeof(url), "%s%s", v->api, VAL_EPOCH_PATH);
	h = curl_easy_init();
	if (!h) {
		f->rc = -ENOMEM;
		snprintf(f->error, sizeof(f->error), "out of memory");
		return;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &s);
	curl_easy_setopt(h, CURLOPT_USERAGENT,
			 "engy-validator/" PACKAGE_VERSION);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "identity");
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &f->status);
	curl_easy_cleanup(h);
	if (s.too_big) {
		f->rc = -EFBIG;
		snprintf(f->error, sizeof(f->error), "payload over %u bytes",
			 VAL_MAX_PAYLOAD);
	} else if (cc != CURLE_OK) {
		f->rc = cc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO;
		snprintf(f->error, sizeof(f->error), "%s",
			 curl_easy_strerror(cc));
	} else if (f->status != 200) {
		f->rc = -EPROTO;
		snprintf(f->error, sizeof(f->error), "HTTP %ld", f->status);
	} else {
		f->body = s.p;
		f->len = s.len;
		s.p = NULL;
		if (!f->body) {
			f->rc = -EPROTO;
			snprintf(f->error, sizeof(f->error), "empty answer");
		}
	}
	free(s.p);
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
	struct curl_slist *hs = NULL;
	struct sink s = {0};
	char url[600];
	CURLcode cc;
	CURL *h = curl_easy_init();

	if (!h) {
		snprintf(b->error, sizeof(b->error), "out of memory");
		return;
	}
	snprintf(url, sizeof(url), "%s%s", b->v->api, VAL_HEARTBEAT_PATH);
	hs = curl_slist_append(hs, "Content-Type: application/json");
	hs = curl_slist_append(hs, b->hdr_key);
	hs = curl_slist_append(hs, b->hdr_ts);
	hs = curl_slist_append(hs, b->hdr_sig);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, b->body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h, CURLOPT_USERAGENT,
			 "engy-validator/" PACKAGE_VERSION);
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &b->status);
	if (cc != CURLE_OK)
		snprintf(b->error, sizeof(b->error), "%s",
			 curl_easy_strerror(cc));
	curl_easy_cleanup(h);
	curl_slist_free_all(hs);
	free(s.p);
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
			 rc	       ? strerror(-rc)
			 : b->error[0] ? b->error
				       : "not accepted");
	free(b);
}

void val_provider_heartbeat(struct val *v, uint64_t synced, bool has_synced)
{
	char msg[256], digest[65], synced_s[32];
	uint8_t sum[32], sig[64];
	struct beat *b;
	int64_t ts = (int64_t)time(NULL);
	size_t i;

	if (!v->c->provider_heartbeat || !v->have_consensus || v->stopping)
		return;
	b = calloc(1, sizeof(*b));
	if (!b)
		return;
	b->v = v;
	if (has_synced)
		snprintf(synced_s, sizeof(synced_s), "%" PRIu64, synced);
	else
		strcpy(synced_s, "null");
	snprintf(b->body, sizeof(b->body),
		 "{\"v\":1,\"version\":\"engy/"
		 "%s\",\"synced_epoch\":%s,\"consensus\":{\"epoch_index\":"
		 "%" PRIu64 ",\"digest\":\"%s\"}}",
		 PACKAGE_VERSION, synced_s, v->cons_epoch, v->cons_digest);
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
