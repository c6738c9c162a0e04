/* SPDX-License-Identifier: MIT */
/*
 * The miner's legs (specs/protocol.md §1-2): one persistent websocket per
 * gateway worker in the leg plan, a hello on every open, heartbeats every
 * heartbeat_s and as the answer to ping, admit and deny logged, reconnect
 * honoured by closing the connection (transport-ws re-dials with jittered
 * backoff), serve and cancel handed to miner_serve.c, anything else
 * ignored.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include <engy/plugin.h>

#include "logfmt.h"
#include "miner_gemm.h"
#include "miner_int.h"

/* A gateway-supplied string as a bounded logfmt value. */
static const char *quote(char *dst, size_t cap, const char *s)
{
	char tmp[161];

	snprintf(tmp, sizeof(tmp), "%s", s ? s : "");
	engy_logfmt_value(dst, cap, tmp);
	return dst;
}

unsigned miner_legs_open(const struct miner *m)
{
	unsigned n = 0;
	size_t i;

	for (i = 0; i < m->n_legs; i++)
		n += m->legs[i].conn != NULL;
	return n;
}

static void legs_gauge(struct miner *m)
{
	if (m->m_legs)
		m->h->metric_set(m->m_legs, miner_legs_open(m));
}

int miner_send(struct miner *m, struct engy_ws_conn *conn, char *text,
	       size_t len)
{
	int rc;

	if (!text)
		return -ENOMEM;
	rc = conn ? m->t->ws_send(m->ti, conn, ENGY_WS_TEXT, text, len)
		  : -ENOTCONN;
	free(text);
	if (rc < 0 && rc != -ENOTCONN)
		MLOG(m, ENGY_LOG_WARNING,
		     "event=send_failed bytes=%zu error=\"%s\"", len,
		     strerror(-rc));
	return rc;
}

static struct engy_miner_capacity leg_cap(const struct mleg *l)
{
	struct engy_miner_capacity c = l->m->cap;

	c.max_inflight = l->share;
	return c;
}

static void heartbeat(struct mleg *l)
{
	struct miner *m = l->m;
	struct engy_miner_capacity cap = leg_cap(l);
	double idle = m->inflight ? 0 : miner_since(&m->idle_since);
	size_t len = 0;
	char *s = engy_miner_heartbeat_json(m->inflight, idle, &cap, &len);

	miner_send(m, l->conn, s, len);
}

static void on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
	struct miner *m = arg;
	size_t i;

	for (i = 0; i < m->n_legs; i++)
		if (m->legs[i].conn)
			heartbeat(&m->legs[i]);
}

static int h_open(void *arg, struct engy_ws_conn *c,
		  const struct engy_ws_open *o)
{
	struct mleg *l = arg;
	struct miner *m = l->m;
	struct engy_miner_hello h = {
		.miner_key = m->c->miner_key,
		.model = m->model,
		.model_root = m->model_root,
		.hw = &m->hw,
		.versions = m->versions,
		.cap = leg_cap(l),
		.worker_name = m->worker_name,
		.instance_id = m->instance_id,
		.worker_id = m->worker_id,
		.constraints = m->constraints,
	};
	size_t len = 0;
	char *s;
	int rc;

	l->conn = c;
	l->admitted = false;
	if (m->t->ws_set_user)
		m->t->ws_set_user(m->ti, c, l);
	s = engy_miner_hello_json(&h, &len);
	rc = miner_send(m, c, s, len);
	MLOG(m, rc ? ENGY_LOG_WARNING : ENGY_LOG_INFO,
	     "event=leg_open leg=%u worker=%u opens=%u max_inflight=%u "
	     "hello=%s",
	     l->idx, l->worker, o->opens, l->share, rc ? "failed" : "sent");
	legs_gauge(m);
	return 0;
}

static void h_message(void *arg, struct engy_ws_conn *c, int type,
		      const uint8_t *data, size_t len)
{
	struct mleg *l = arg;
	struct miner *m = l->m;
	struct engy_gw_frame f;
	char err[160], q[400];

	if (type != ENGY_WS_TEXT) {
		MLOG(m, ENGY_LOG_DEBUG,
		     "event=frame_ignored leg=%u "
		     "reason=binary bytes=%zu",
		     l->idx, len);
		return;
	}
	if (engy_gw_frame_parse((const char *)data, len, &f, err, sizeof(err)) <
	    0) {
		MLOG(m, ENGY_LOG_WARNING,
		     "event=frame_invalid leg=%u "
		     "bytes=%zu reason=%s",
		     l->idx, len, quote(q, sizeof(q), err));
		engy_gw_frame_free(&f);
		return;
	}
	switch (f.type) {
	case ENGY_GW_ADMIT:
		l->admitted = true;
		MLOG(m, ENGY_LOG_INFO, "event=admit leg=%u worker=%u", l->idx,
		     l->worker);
		break;
	case ENGY_GW_DENY:
		l->admitted = false;
		MLOG(m, ENGY_LOG_WARNING,
		     "event=deny leg=%u worker=%u reason=%s", l->idx, l->worker,
		     quote(q, sizeof(q), f.reason));
		break;
	case ENGY_GW_PING:
		heartbeat(l);
		break;
	case ENGY_GW_RECONNECT:
		MLOG(m, ENGY_LOG_INFO, "event=reconnect leg=%u worker=%u",
		     l->idx, l->worker);
		m->t->ws_close(m->ti, c, ENGY_WS_CLOSE_NORMAL, "reconnect");
		break;
	case ENGY_GW_SERVE:
		miner_serve(l, &f);
		break;
	case ENGY_GW_CANCEL:
		miner_cancel(l, f.corr_id);
		break;
	case ENGY_GW_GEMM_OPEN:
		miner_gemm_open(l, &f);
		break;
	default:
		MLOG(m, ENGY_LOG_DEBUG, "event=frame_ignored leg=%u type=%s",
		     l->idx, quote(q, sizeof(q), f.type_name));
		break;
	}
	engy_gw_frame_free(&f);
}

static void h_close(void *arg, struct engy_ws_conn *c, int code,
		    const char *reason)
{
	struct mleg *l = arg;
	struct miner *m = l->m;
	char q[400];

	if (l->conn == c)
		l->conn = NULL;
	l->admitted = false;
	MLOG(m, ENGY_LOG_INFO,
	     "event=leg_closed leg=%u worker=%u code=%d reason=%s", l->idx,
	     l->worker, code, quote(q, sizeof(q), reason));
	miner_orphan(m, c);
	miner_gemm_orphan(m, c);
	legs_gauge(m);
}

static void h_dial_error(void *arg, struct engy_ws_leg *leg, int err,
			 int status)
{
	struct mleg *l = arg;

	MLOG(l->m, ENGY_LOG_WARNING,
	     "event=leg_dial_failed leg=%u worker=%u "
	     "error=\"%s\" status=%d",
	     l->idx, l->worker, strerror(-err), status);
}

static const struct engy_ws_handler leg_handler = {
	.size = sizeof(leg_handler),
	.on_open = h_open,
	.on_message = h_message,
	.on_close = h_close,
	.on_dial_error = h_dial_error,
};

int miner_legs_start(struct miner *m, unsigned n_workers)
{
	unsigned *workers, n_legs = 0, share = 0, i;
	struct timeval tv = { (time_t)m->c->heartbeat_s, 0 };
	uint64_t seed;
	int rc;

	workers = calloc(n_workers, sizeof(*workers));
	if (!workers)
		return -ENOMEM;
	{
		char h[17];

		engy_hex_id(h, 8);
		seed = strtoull(h, NULL, 16);
	}
	rc = engy_leg_plan(m->cap.max_inflight_total, n_workers, seed, workers,
			   &n_legs, &share);
	if (rc == 0) {
		m->legs = calloc(n_legs, sizeof(*m->legs));
		rc = m->legs ? 0 : -ENOMEM;
	}
	for (i = 0; rc == 0 && i < n_legs; i++) {
		struct mleg *l = &m->legs[i];

		l->m = m;
		l->idx = i;
		l->worker = workers[i];
		l->share = share;
		m->n_legs = i + 1;
		rc = engy_gw_worker_url(m->c->gw, l->worker, n_workers,
					&l->url);
		if (rc == 0)
			rc = m->t->ws_dial(m->ti, l->url, NULL, &leg_handler, l,
					   &l->leg);
	}
	free(workers);
	if (rc < 0) {
		MLOG(m, ENGY_LOG_ERR, "event=legs_failed error=\"%s\"",
		     strerror(-rc));
		return rc;
	}
	m->hb_ev =
		event_new(m->h->evbase(m->h), -1, EV_PERSIST, on_heartbeat, m);
	if (!m->hb_ev || event_add(m->hb_ev, &tv) < 0)
		return -ENOMEM;
	m->ready = true;
	MLOG(m, ENGY_LOG_INFO,
	     "event=leg_plan gw_workers=%u legs=%u "
	     "max_inflight=%u max_inflight_total=%u",
	     n_workers, n_legs, share, m->cap.max_inflight_total);
	return 0;
}

void miner_legs_close(struct miner *m)
{
	size_t i;

	for (i = 0; i < m->n_legs; i++) {
		if (m->legs[i].leg)
			m->t->ws_leg_close(m->ti, m->legs[i].leg);
		free(m->legs[i].url);
	}
	free(m->legs);
	m->legs = NULL;
	m->n_legs = 0;
}
