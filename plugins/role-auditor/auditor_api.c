/* SPDX-License-Identifier: MIT */
/*
 * The provider API (specs/settlement.md §4, specs/auditor.md §4), on the
 * transport-http listener, read from the store on the pool:
 *
 *   GET PREFIX/epoch/latest               the newest closed epoch's payload
 *   GET PREFIX/epoch/{index}              any closed epoch's payload
 *   GET PREFIX/epoch/{index}/aggregates   its public aggregates
 *   GET PREFIX/epoch/current              the epoch in flight: index,
 *                                         bounds, the latest closed index
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auditor_int.h"

enum { Q_LATEST, Q_INDEX, Q_AGG, Q_CURRENT };

struct apiq {
	struct aud *a;
	struct engy_http_exchange *x;
	bool gone;
	int what;
	int64_t index;
	int rc;
	int status;
	char *body;
	size_t len;
};

static const struct engy_http_handler api_h;

static char *jerr(const char *code, const char *msg)
{
	char *s = malloc(256);

	if (s)
		snprintf(s, 256,
			 "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}",
			 code, msg);
	return s;
}

static void api_fn(void *arg)
{
	struct apiq *q = arg;
	struct aud *a = q->a;
	struct engy_epoch_rec rec;
	char *payload = NULL, *agg = NULL;
	int rc;

	if (q->what == Q_CURRENT) {
		int64_t s = a->c->epoch_s * 1000, now = aud_now_ms();
		int64_t cur = now / s;
		char last[32] = "null";

		rc = a->st->epoch_get(a->sti, 0, 1, &rec, NULL, NULL);
		if (!rc)
			snprintf(last, sizeof(last), "%" PRId64,
				 rec.epoch_index);
		q->body = malloc(256);
		if (!q->body) {
			q->rc = -ENOMEM;
			return;
		}
		snprintf(q->body, 256,
			 "{\"v\":1,\"netuid\":%d,\"epoch_index\":%" PRId64
			 ",\"state\":\"open\",\"start_ms\":%" PRId64
			 ",\"end_ms\":%" PRId64 ",\"latest_closed\":%s}",
			 (int)a->c->netuid, cur, cur * s, (cur + 1) * s, last);
		q->status = 200;
		return;
	}
	rc = a->st->epoch_get(a->sti, q->index, q->what == Q_LATEST, &rec,
			      q->what == Q_AGG ? NULL : &payload,
			      q->what == Q_AGG ? &agg : NULL);
	if (rc == -ENOENT) {
		q->status = 404;
		q->body = jerr("not_found", "no such closed epoch");
	} else if (rc) {
		q->status = 503;
		q->body = jerr("unavailable", "the store is unavailable");
	} else {
		q->status = 200;
		q->body = q->what == Q_AGG ? agg : payload;
	}
	if (!q->body)
		q->rc = -ENOMEM;
}

static void api_done(void *arg, int prc)
{
	struct apiq *q = arg;
	struct aud *a = q->a;

	a->inflight--;
	if (!q->gone) {
		const char *hdr[] = { "Cache-Control", "no-store", NULL };

		if (prc < 0 || q->rc || !q->body)
			a->t->http_reply(a->ti, q->x, 500, "application/json",
					 NULL, "{}", 2);
		else
			a->t->http_reply(a->ti, q->x, q->status,
					 "application/json", hdr, q->body,
					 strlen(q->body));
	}
	free(q->body);
	free(q);
}

static int parse_index(const char *s, int64_t *out, const char **rest)
{
	int64_t v = 0;
	const char *p = s;

	if (*p < '0' || *p > '9' || (*p == '0' && p[1] >= '0' && p[1] <= '9'))
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (INT64_C(9007199254740991) - (*p - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (*p - '0');
	}
	*out = v;
	*rest = p;
	return 0;
}

static int on_request(void *arg, struct engy_http_exchange *x,
		      const struct engy_http_request *r)
{
	struct aud *a = arg;
	size_t plen = strlen(a->c->api_prefix) + strlen("/epoch/");
	const char *p = r->path, *rest = "";
	struct apiq *q;

	if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD"))
		return a->t->http_reply(a->ti, x, 405, "application/json", NULL,
					"{}", 2),
		       0;
	if (strlen(p) <= plen)
		return -ENOENT;
	p += plen;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->a = a;
	q->x = x;
	if (!strcmp(p, "latest")) {
		q->what = Q_LATEST;
	} else if (!strcmp(p, "current")) {
		q->what = Q_CURRENT;
	} else if (!parse_index(p, &q->index, &rest) &&
		   (!*rest || !strcmp(rest, "/aggregates"))) {
		q->what = *rest ? Q_AGG : Q_INDEX;
	} else {
		free(q);
		return -ENOENT;
	}
	a->inflight++;
	if (a->h->work(a->h, api_fn, api_done, q) < 0) {
		a->inflight--;
		free(q);
		return -ESHUTDOWN;
	}
	/* The exchange's on_gone finds the query by the exchange. */
	return 0;
}

static const struct engy_http_handler api_h = {
	.size = sizeof(api_h),
	.on_request = on_request,
};

int aud_api_init(struct aud *a)
{
	char route[256];
	int rc;

	snprintf(route, sizeof(route), "%s/epoch", a->c->api_prefix);
	rc = a->t->http_route(a->ti, route, &api_h, a);
	if (rc)
		aud_log(a, ENGY_LOG_ERR,
			"event=api_route_failed route=%s error=\"%s\"", route,
			strerror(-rc));
	else
		aud_log(a, ENGY_LOG_NOTICE, "event=provider_api route=%s",
			route);
	return rc;
}
