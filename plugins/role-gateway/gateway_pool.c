/* SPDX-License-Identifier: MIT */
/*
 * The miner pool (specs/protocol.md §1-2, from the gateway's side): legs on
 * transport-ws at ws_path (with N workers, ws_path/<worker_index>),
 * GET ws_path/meta -> {"workers": N} on the same port, the hello checked
 * against the store (registered miner key, enabled model, an accepted
 * model_root when the model lists any, max_inflight_total >= 8) and
 * answered with admit or deny (then closed), a repeat (key, worker_name)
 * superseding the older leg, heartbeats and any frame as signs of life,
 * a ping after ping_s of silence, the leg dropped after stale_s, and
 * `reconnect` to every leg when the gateway drains (to a busy one when
 * its last request ends).  A leg that sends what is not a frame at all
 * is closed: its requests fail over to other workers.
 *
 * An attempt's frames (chunk, response) and a lost leg go up to the relay
 * through g->pool_sink; a change of state goes to the observers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway_int.h"
#include "logfmt.h"

static const char *const state_names[] = {
	"hello", "checking", "new", "probing", "active", "pulled", "closed",
};

const char *gw_wstate_name(enum gw_wstate s)
{
	return (unsigned)s < sizeof(state_names) / sizeof(state_names[0])
		       ? state_names[s]
		       : "?";
}

static const char *q(char *dst, size_t cap, const char *s)
{
	engy_logfmt_value(dst, cap, s ? s : "");
	return dst;
}

static void gauge(struct gw *g)
{
	struct gw_worker *w;
	unsigned n = 0;

	for (w = g->workers; w; w = w->next)
		n += w->state >= GW_W_NEW && w->state < GW_W_CLOSED;
	if (g->m_workers)
		gw_mset(g, g->m_workers, n);
}

void gw_worker_set_state(struct gw_worker *w, enum gw_wstate s, const char *why)
{
	enum gw_wstate from = w->state;
	char qn[300], qw[200];

	if (w->state == s)
		return;
	GW_LOG(w->g, ENGY_LOG_INFO,
	       "event=worker_state worker=%llu name=%s from=%s to=%s why=%s",
	       (unsigned long long)w->id, q(qn, sizeof(qn), w->worker_name),
	       gw_wstate_name(w->state), gw_wstate_name(s),
	       q(qw, sizeof(qw), why));
	w->state = s;
	gauge(w->g);
	gw_notify_state(w->g, w, from);
}

int gw_send(struct gw *g, struct gw_worker *w, char *text, size_t len)
{
	int rc;

	if (!text)
		return -ENOMEM;
	rc = w->conn ? g->ws->ws_send(g->wsi, w->conn, ENGY_WS_TEXT, text, len)
		     : -ENOTCONN;
	free(text);
	if (rc < 0 && rc != -ENOTCONN)
		GW_LOG(g, ENGY_LOG_WARNING,
		       "event=send_failed worker=%llu bytes=%zu error=\"%s\"",
		       (unsigned long long)w->id, len, strerror(-rc));
	return rc;
}

static int send_simple(struct gw *g, struct gw_worker *w, const char *type,
		       const char *reason)
{
	cJSON *o = cJSON_CreateObject();
	char *s;

	if (!o || !cJSON_AddStringToObject(o, "type", type) ||
	    (reason && !cJSON_AddStringToObject(o, "reason", reason))) {
		cJSON_Delete(o);
		return -ENOMEM;
	}
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return gw_send(g, w, s, s ? strlen(s) : 0);
}

void gw_worker_close(struct gw_worker *w, int code, const char *reason)
{
	struct gw *g = w->g;
	struct engy_ws_conn *c = w->conn;
	char qr[200];

	if (!c)
		return;
	GW_LOG(g, ENGY_LOG_INFO,
	       "event=worker_closing worker=%llu code=%d reason=%s "
	       "inflight=%u",
	       (unsigned long long)w->id, code, q(qr, sizeof(qr), reason),
	       w->inflight);
	w->conn = NULL;
	g->ws->ws_close(g->wsi, c, code, reason);
	/* Its requests move on now, not when the close handshake ends. */
	g->pool_sink->orphan(w);
	gauge(g);
}

/* ---- cancelled slots -------------------------------------------------- */

void gw_worker_hold(struct gw_worker *w, const char *corr_id)
{
	struct gw_hold *h;

	if (!w->conn || !(h = calloc(1, sizeof(*h))))
		return;
	snprintf(h->corr_id, sizeof(h->corr_id), "%s", corr_id);
	clock_gettime(CLOCK_MONOTONIC, &h->t);
	h->next = w->holds;
	w->holds = h;
	w->held++;
}

bool gw_worker_unhold(struct gw_worker *w, const char *corr_id)
{
	struct gw_hold **pp, *h;

	for (pp = &w->holds; (h = *pp); pp = &h->next) {
		if (strcmp(h->corr_id, corr_id) != 0)
			continue;
		*pp = h->next;
		free(h);
		w->held--;
		return true;
	}
	return false;
}

unsigned gw_worker_busy(const struct gw_worker *w)
{
	return w->inflight + w->held;
}

static void unhold_all(struct gw_worker *w)
{
	struct gw_hold *h;

	while ((h = w->holds)) {
		w->holds = h->next;
		free(h);
	}
	w->held = 0;
}

/* A miner that confirmed a cancel before frees every slot by itself (its
 * own deadline ends what runs: max_request_s); one that never did gets
 * them back after cancel_hold_s. */
static void expire_holds(struct gw_worker *w)
{
	double limit = w->acks_cancel ? w->max_request_s + w->g->c->stale_s
				      : w->g->c->cancel_hold_s;
	struct gw_hold **pp, *h;

	for (pp = &w->holds; (h = *pp);) {
		if (gw_since(&h->t) <= limit) {
			pp = &h->next;
			continue;
		}
		GW_LOG(w->g, ENGY_LOG_INFO,
		       "event=cancel_hold_expired worker=%llu held_s=%.1f "
		       "acks_cancel=%s",
		       (unsigned long long)w->id, gw_since(&h->t),
		       w->acks_cancel ? "yes" : "no");
		*pp = h->next;
		free(h);
		w->held--;
		gw_count(w->g, "engy_gw_cancel_holds_expired_total", NULL);
	}
}

static void worker_free(struct gw_worker *w)
{
	size_t i;

	unhold_all(w);

	for (i = 0; i < GW_EXT_SLOTS; i++)
		if (w->ext[i])
			GW_LOG(w->g, ENGY_LOG_WARNING,
			       "event=worker_ext_leaked worker=%llu slot=%zu",
			       (unsigned long long)w->id, i);
	free(w);
}

static void unlink_worker(struct gw_worker *w)
{
	if (!w->pprev)
		return;
	*w->pprev = w->next;
	if (w->next)
		w->next->pprev = w->pprev;
	w->pprev = NULL;
	w->next = NULL;
	w->g->n_workers--;
}

static void send_reconnect(struct gw_worker *w)
{
	if (w->reconnect_sent || !w->conn)
		return;
	w->reconnect_sent = true;
	send_simple(w->g, w, "reconnect", NULL);
	GW_LOG(w->g, ENGY_LOG_INFO, "event=worker_reconnect worker=%llu",
	       (unsigned long long)w->id);
}

void gw_worker_release(struct gw_worker *w)
{
	if (w->inflight)
		w->inflight--;
	if (w->g->stopping && !w->inflight)
		send_reconnect(w);
}

void gw_pool_drain(struct gw *g)
{
	struct gw_worker *w;

	for (w = g->workers; w; w = w->next)
		if (!w->inflight)
			send_reconnect(w);
}

/* ---- hello ---------------------------------------------------------- */

static bool listed(const struct engy_strv *v, const char *name)
{
	size_t i;

	for (i = 0; i < v->n; i++)
		if (strcmp(v->v[i], name) == 0)
			return true;
	return false;
}

static void deny(struct gw_worker *w, const char *reason)
{
	char qr[300];

	GW_LOG(w->g, ENGY_LOG_NOTICE,
	       "event=worker_denied worker=%llu remote=%s reason=%s",
	       (unsigned long long)w->id, w->remote, q(qr, sizeof(qr), reason));
	gw_count(w->g, "engy_gw_denied_total", NULL);
	send_simple(w->g, w, "deny", reason);
	gw_worker_close(w, ENGY_WS_CLOSE_POLICY, "denied");
}

static void supersede(struct gw_worker *nw)
{
	struct gw_worker *w;

	for (w = nw->g->workers; w; w = w->next) {
		if (w == nw || !w->conn || w->state < GW_W_NEW ||
		    memcmp(w->key_hash, nw->key_hash, GW_HASH_BYTES) != 0 ||
		    strcmp(w->worker_name, nw->worker_name) != 0)
			continue;
		GW_LOG(nw->g, ENGY_LOG_INFO,
		       "event=worker_superseded worker=%llu by=%llu "
		       "restart=%s",
		       (unsigned long long)w->id, (unsigned long long)nw->id,
		       strcmp(w->worker_id, nw->worker_id) ? "yes" : "no");
		gw_worker_close(w, ENGY_WS_CLOSE_NORMAL, "superseded");
	}
}

static uint64_t ident_of(const struct gw_worker *w)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const unsigned char *p;
	size_t i;

	for (i = 0; i < GW_HASH_BYTES; i++)
		h = (h ^ w->key_hash[i]) * 0x100000001b3ull;
	for (p = (const unsigned char *)w->worker_name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return h;
}

static uint64_t lim(uint64_t spec, uint64_t hello)
{
	return hello && hello < spec ? hello : spec;
}

static void hello_done(struct gw_worker *w, int rc, const struct engy_miner *m,
		       const struct engy_model *spec, const char *why)
{
	struct gw *g = w->g;
	char qn[300], qm[300], reason[128];

	if (!w->conn)
		return;
	if (g->stopping) {
		send_reconnect(w);
		return;
	}
	if (rc < 0) {
		deny(w, why ? why : "the gateway could not check the hello");
		return;
	}
	if (w->max_inflight_total < (unsigned)g->c->min_inflight_total) {
		snprintf(reason, sizeof(reason),
			 "capacity.max_inflight_total %u is below %lld",
			 w->max_inflight_total,
			 (long long)g->c->min_inflight_total);
		deny(w, reason);
		return;
	}
	w->miner_id = m->id;
	snprintf(w->hotkey, sizeof(w->hotkey), "%s", m->hotkey);
	w->priority = m->priority;
	w->first_party =
		m->first_party || listed(&g->c->first_party, w->worker_name);
	w->max_input_tokens = lim(spec->max_input_tokens, w->max_input_tokens);
	w->max_output_tokens =
		lim(spec->max_output_tokens, w->max_output_tokens);
	if (!(w->max_request_s > 0) || w->max_request_s > spec->max_request_s)
		w->max_request_s = spec->max_request_s;
	if (w->max_inflight > w->max_inflight_total)
		w->max_inflight = w->max_inflight_total;
	/* A claim alone never wins more than the ceiling: the share is the
	 * routing weight and the requests the worker is given at once. */
	if (w->max_inflight > (unsigned)g->c->worker_max_inflight)
		w->max_inflight = (unsigned)g->c->worker_max_inflight;
	/* ... and its weight starts small: it grows by serving. */
	w->earned = (unsigned)g->c->worker_start_inflight < w->max_inflight
			    ? (unsigned)g->c->worker_start_inflight
			    : w->max_inflight;
	w->ident = ident_of(w);
	supersede(w);
	gw_worker_set_state(w, w->first_party ? GW_W_ACTIVE : GW_W_NEW,
			    w->first_party ? "admitted, 1st-party"
					   : "admitted");
	if (g->ws->ws_set_max_message) /* back to the transport's limit */
		g->ws->ws_set_max_message(g->wsi, w->conn, 0);
	send_simple(g, w, "admit", NULL);
	GW_LOG(g, ENGY_LOG_NOTICE,
	       "event=worker_admitted worker=%llu miner=%s name=%s model=%s "
	       "max_inflight=%u max_inflight_total=%u max_input_tokens=%llu "
	       "max_output_tokens=%llu max_request_s=%.0f first_party=%s "
	       "priority=%d remote=%s",
	       (unsigned long long)w->id, w->hotkey,
	       q(qn, sizeof(qn), w->worker_name), q(qm, sizeof(qm), w->model),
	       w->max_inflight, w->max_inflight_total,
	       (unsigned long long)w->max_input_tokens,
	       (unsigned long long)w->max_output_tokens, w->max_request_s,
	       w->first_party ? "yes" : "no", w->priority, w->remote);
	gw_count(g, "engy_gw_admitted_total", NULL);
	gw_notify_admitted(g, w);
}

static void on_hello(struct gw_worker *w, const struct gw_mframe *f)
{
	const struct gw_capacity *c = &f->cap;

	snprintf(w->model, sizeof(w->model), "%s", f->model);
	snprintf(w->model_root, sizeof(w->model_root), "%s",
		 f->model_root ? f->model_root : "");
	snprintf(w->worker_name, sizeof(w->worker_name), "%s",
		 f->worker_name	  ? f->worker_name
		 : f->instance_id ? f->instance_id
				  : "default");
	snprintf(w->worker_id, sizeof(w->worker_id), "%s",
		 f->worker_id ? f->worker_id : "");
	snprintf(w->instance_id, sizeof(w->instance_id), "%s",
		 f->instance_id ? f->instance_id : "");
	w->max_inflight = c->max_inflight;
	/* Never guessed from the leg's share (specs/protocol.md §2). */
	w->max_inflight_total = c->has_total ? c->max_inflight_total : 0;
	w->max_input_tokens = c->max_input_tokens;
	w->max_output_tokens = c->max_output_tokens;
	w->max_request_s = c->max_request_s;
	w->constraints = f->constraints;
	gw_worker_set_state(w, GW_W_CHECKING, "hello");
	if (!c->has_total) {
		deny(w, "capacity.max_inflight_total is required");
		return;
	}
	gw_store_hello(w, f->miner_key, hello_done);
}

static void on_heartbeat(struct gw_worker *w, const struct gw_mframe *f)
{
	w->miner_inflight = f->inflight;
	/* Nothing runs there: no cancelled request holds a slot (a miner
	 * that confirms its cancels is believed on those alone: this
	 * heartbeat may predate a serve it has not read yet). */
	if (!f->inflight && !w->acks_cancel)
		unhold_all(w);
	/* A miner may lower its share, never raise it past its hello. */
	if (f->cap.max_inflight && f->cap.max_inflight < w->max_inflight)
		w->max_inflight = f->cap.max_inflight;
}

/* ---- the websocket handler ---------------------------------------- */

/* Open legs not admitted yet: waiting for or checking a hello. */
static size_t unauthenticated(const struct gw *g)
{
	const struct gw_worker *w;
	size_t n = 0;

	for (w = g->workers; w; w = w->next)
		if (w->conn && w->state <= GW_W_CHECKING)
			n++;
	return n;
}

static int h_open(void *arg, struct engy_ws_conn *c,
		  const struct engy_ws_open *o)
{
	struct gw *g = arg;
	const char *base = g->c->ws_path, *tail;
	size_t blen = strlen(base);
	struct gw_worker *w;
	char *end;
	unsigned long idx;

	tail = o->path + blen;
	if (*tail == '/' && tail[1]) {
		idx = strtoul(tail + 1, &end, 10);
		if (*end || tail[1] < '0' || tail[1] > '9' ||
		    idx != (unsigned long)g->c->worker_index) {
			GW_LOG(g, ENGY_LOG_NOTICE,
			       "event=leg_refused remote=%s reason=\"wrong "
			       "worker "
			       "path\" worker_index=%lld",
			       o->remote, (long long)g->c->worker_index);
			return -EINVAL;
		}
	}
	if (g->stopping)
		return -ESHUTDOWN;
	if (unauthenticated(g) >= (size_t)g->c->max_unauthenticated) {
		gw_count(g, "engy_gw_legs_refused_total",
			 "reason=\"unauthenticated\"");
		GW_LOG(g, ENGY_LOG_WARNING,
		       "event=leg_refused remote=%s reason=\"too many legs "
		       "without a hello\" max_unauthenticated=%lld",
		       o->remote, (long long)g->c->max_unauthenticated);
		return -EBUSY;
	}
	/* Until admitted, a leg may send a hello's worth, not 64 MiB. */
	if (g->ws->ws_set_max_message)
		g->ws->ws_set_max_message(g->wsi, c,
					  (size_t)g->c->hello_max_bytes);
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->g = g;
	w->conn = c;
	w->id = ++g->next_worker_id;
	w->state = GW_W_HELLO;
	snprintf(w->remote, sizeof(w->remote), "%s", o->remote);
	clock_gettime(CLOCK_MONOTONIC, &w->opened);
	w->last_seen = w->last_ping = w->opened;
	w->next = g->workers;
	if (w->next)
		w->next->pprev = &w->next;
	w->pprev = &g->workers;
	g->workers = w;
	g->n_workers++;
	g->ws->ws_set_user(g->wsi, c, w);
	GW_LOG(g, ENGY_LOG_INFO, "event=leg_open worker=%llu remote=%s",
	       (unsigned long long)w->id, w->remote);
	return 0;
}

static void bad_frame(struct gw_worker *w, const char *why)
{
	char qw[200];

	w->bad_frames++;
	gw_count(w->g, "engy_gw_bad_frames_total", NULL);
	GW_LOG(w->g, ENGY_LOG_WARNING,
	       "event=frame_invalid worker=%llu reason=%s",
	       (unsigned long long)w->id, q(qw, sizeof(qw), why));
	gw_worker_close(w, ENGY_WS_CLOSE_POLICY, "invalid frame");
}

static void h_message(void *arg, struct engy_ws_conn *c, int type,
		      const uint8_t *data, size_t len)
{
	struct gw *g = arg;
	struct gw_worker *w = g->ws->ws_user(g->wsi, c);
	struct gw_mframe f;
	char err[160];

	if (!w || !w->conn)
		return;
	clock_gettime(CLOCK_MONOTONIC, &w->last_seen);
	if (type != ENGY_WS_TEXT) {
		bad_frame(w, "a binary message");
		return;
	}
	if (gw_frame_parse((const char *)data, len, &f, err, sizeof(err)) < 0) {
		gw_frame_free(&f);
		/* A broken hello is refused as such; later, an unusable
		 * chunk or response is ignored (its request times out or
		 * fails over), what is no frame at all closes the leg. */
		if (w->state == GW_W_HELLO && f.type == GW_M_HELLO)
			deny(w, err);
		else if (f.type == GW_M_CHUNK || f.type == GW_M_RESPONSE ||
			 f.type == GW_M_CANCELLED ||
			 f.type == GW_M_GEMM_OPENING)
			gw_count(g, "engy_gw_frames_ignored_total",
				 "reason=\"no corr_id\"");
		else
			bad_frame(w, err);
		return;
	}
	if (w->state == GW_W_HELLO) {
		if (f.type == GW_M_HELLO)
			on_hello(w, &f);
		else
			deny(w, "the first frame must be hello");
	} else if (w->state == GW_W_CHECKING) {
		/* Nothing can be routed here yet; a heartbeat is fine. */
	} else if (f.type == GW_M_HEARTBEAT) {
		on_heartbeat(w, &f);
	} else if (f.type == GW_M_CHUNK) {
		g->pool_sink->chunk(w, f.corr_id, f.delta);
	} else if (f.type == GW_M_RESPONSE) {
		/* A response that crossed our cancel frees its slot too. */
		if (!gw_worker_unhold(w, f.corr_id))
			g->pool_sink->response(w, f.corr_id, f.root);
	} else if (f.type == GW_M_CANCELLED) {
		w->acks_cancel = true;
		if (!gw_worker_unhold(w, f.corr_id))
			gw_count(g, "engy_gw_frames_ignored_total",
				 "reason=\"unknown corr_id\"");
	} else if (f.type == GW_M_GEMM_OPENING && g->gemm_opening) {
		g->gemm_opening(g, w, f.corr_id, f.root, len);
	} else {
		gw_count(g, "engy_gw_frames_ignored_total",
			 f.type == GW_M_HELLO ? "reason=\"repeat hello\""
					      : "reason=\"unknown type\"");
	}
	gw_frame_free(&f);
}

static void h_close(void *arg, struct engy_ws_conn *c, int code,
		    const char *reason)
{
	struct gw *g = arg;
	struct gw_worker *w = g->ws->ws_user(g->wsi, c);
	char qr[200];

	if (!w)
		return;
	g->ws->ws_set_user(g->wsi, c, NULL);
	GW_LOG(g, ENGY_LOG_INFO,
	       "event=leg_closed worker=%llu code=%d reason=%s served=%llu "
	       "failed=%llu",
	       (unsigned long long)w->id, code, q(qr, sizeof(qr), reason),
	       (unsigned long long)w->served, (unsigned long long)w->failed);
	w->conn = NULL;
	w->close_code = code;
	g->pool_sink->orphan(w);
	if (w->state >= GW_W_NEW && w->state < GW_W_CLOSED)
		gw_notify_closed(g, w);
	w->state = GW_W_CLOSED;
	unlink_worker(w);
	gauge(g);
	if (!w->in_job)
		worker_free(w);
}

static int h_get(void *arg, const char *path, int *status, char **body,
		 size_t *len)
{
	struct gw *g = arg;
	size_t blen = strlen(g->c->ws_path);
	int n;

	if (strncmp(path, g->c->ws_path, blen) != 0 ||
	    strcmp(path + blen, "/meta") != 0)
		return -ENOENT;
	n = asprintf(body, "{\"workers\":%lld}", (long long)g->c->workers);
	if (n < 0) {
		*body = NULL;
		return -ENOMEM;
	}
	*len = (size_t)n;
	*status = 200;
	return 0;
}

static const struct engy_ws_handler pool_handler = {
	.size = sizeof(pool_handler),
	.on_open = h_open,
	.on_message = h_message,
	.on_close = h_close,
	.on_get = h_get,
};

int gw_pool_init(struct gw *g)
{
	int rc = g->ws->ws_listen(g->wsi, g->c->ws_path, &pool_handler, g);

	if (rc < 0)
		GW_LOG(g, ENGY_LOG_ERR,
		       "event=ws_listen_failed path=%s error=\"%s\" "
		       "hint=\"set "
		       "transport-ws's listen\"",
		       g->c->ws_path, strerror(-rc));
	return rc;
}

void gw_pool_tick(struct gw *g)
{
	struct gw_worker *w, *next;

	for (w = g->workers; w; w = next) {
		double silent = gw_since(&w->last_seen);

		next = w->next;
		if (!w->conn)
			continue;
		if (w->holds)
			expire_holds(w);
		if (w->state == GW_W_HELLO &&
		    gw_since(&w->opened) > g->c->hello_timeout_s) {
			deny(w, "no hello in time");
		} else if (silent > g->c->stale_s) {
			gw_count(g, "engy_gw_stale_total", NULL);
			gw_worker_close(w, ENGY_WS_CLOSE_GOING_AWAY, "stale");
		} else if (w->state >= GW_W_NEW && silent > g->c->ping_s &&
			   gw_since(&w->last_ping) > g->c->ping_s) {
			clock_gettime(CLOCK_MONOTONIC, &w->last_ping);
			send_simple(g, w, "ping", NULL);
		}
	}
}

void gw_pool_free(struct gw *g)
{
	struct gw_worker *w;

	while ((w = g->workers)) {
		unlink_worker(w);
		if (w->conn)
			g->ws->ws_set_user(g->wsi, w->conn, NULL);
		if (!w->in_job)
			worker_free(w);
	}
}
