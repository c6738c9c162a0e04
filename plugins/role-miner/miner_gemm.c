/* SPDX-License-Identifier: MIT */
/*
 * The GEMM audit on the miner's side (specs/protocol.md §2, "gemm_open"):
 * a backend that offers a trace (gemm_commit()/gemm_open(), backend ABI
 * 1.4) builds one while it generates; its member, with the trace root
 * that binds it to the TOPLOC proofs sent beside it, rides as
 * commitment["gemm"].  Later the gateway relays an auditor's challenge as
 * a `gemm_open` frame; the backend answers it from what it holds in RAM
 * and the opening goes back as `gemm_opening`.
 *
 * What is kept here is only the map request id -> backend rid of recent
 * traced requests (a ring of MINER_GEMM_HELD; no token ids, no rows); the
 * trace itself stays in the backend's bounded, expiring RAM.  Openings
 * are bounded: gemm_open_max at once per leg (more: error "busy"),
 * gemm_open_max_bytes per answer (more: error "too_large").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gemm.h"
#include "hex.h"
#include "miner_gemm.h"
#include "miner_int.h"

#define MINER_GEMM_HELD 4096

struct mgemm_held {
	char request_id[ENGY_GW_MAX_REQUEST_ID + 1];
	char rid[64];
};

/* One opening the backend works on. */
struct mgopen {
	struct mgopen *next, **pprev;
	struct miner *m;
	struct engy_ws_conn *conn; /* NULL: the leg closed meanwhile */
	unsigned leg;
	char corr_id[ENGY_GW_MAX_CORR_ID + 1];
};

bool miner_gemm_on(const struct miner *m)
{
	return m->c->gemm_trace &&
	       m->b->size >= offsetof(struct engy_backend_ops, gemm_open) +
				     sizeof(m->b->gemm_open) &&
	       m->b->gemm_commit && m->b->gemm_open;
}

void miner_gemm_keep(struct miner *m, const char *request_id,
		     const char *member)
{
	cJSON *o = member ? cJSON_Parse(member) : NULL;
	const cJSON *rid = cJSON_GetObjectItemCaseSensitive(o, "rid");
	struct mgemm_held *h;

	if (!request_id[0] || !cJSON_IsString(rid) ||
	    strlen(rid->valuestring) >= sizeof(h->rid)) {
		cJSON_Delete(o);
		return;
	}
	if (!m->gheld)
		m->gheld = calloc(MINER_GEMM_HELD, sizeof(*m->gheld));
	if (m->gheld) {
		h = &m->gheld[m->gheld_next++ % MINER_GEMM_HELD];
		snprintf(h->request_id, sizeof(h->request_id), "%s",
			 request_id);
		snprintf(h->rid, sizeof(h->rid), "%s", rid->valuestring);
	}
	cJSON_Delete(o);
}

static const char *held_rid(const struct miner *m, const char *request_id)
{
	size_t i, n = m->gheld_next < MINER_GEMM_HELD ? m->gheld_next
						      : MINER_GEMM_HELD;

	/* newest first: a request id seen twice is its latest answer */
	for (i = 0; m->gheld && i < n; i++) {
		const struct mgemm_held *h =
			&m->gheld[(m->gheld_next - 1 - i) % MINER_GEMM_HELD];

		if (!strcmp(h->request_id, request_id))
			return h->rid;
	}
	return NULL;
}

char *miner_gemm_member(const char *member, const char *toploc)
{
	cJSON *o = cJSON_Parse(member),
	      *t = toploc ? cJSON_Parse(toploc) : NULL;
	const cJSON *root = cJSON_GetObjectItemCaseSensitive(o, "gemm_root");
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(t, "proofs"), *e;
	const char **proofs = NULL;
	uint8_t gr[32], th[32] = { 0 }, tr[32];
	char hex[65], *s = NULL;
	size_t n = 0, i;

	if (!cJSON_IsObject(o) || !cJSON_IsString(root) ||
	    engy_hex_parse(root->valuestring, gr, 32))
		goto out;
	if (cJSON_IsArray(arr)) {
		proofs = calloc((size_t)cJSON_GetArraySize(arr) + 1,
				sizeof(*proofs));
		if (!proofs)
			goto out;
		cJSON_ArrayForEach(e, arr)
		{
			if (!cJSON_IsString(e))
				goto out;
			proofs[n++] = e->valuestring;
		}
		engy_ga_toploc_hash(proofs, n, th);
	} /* else a null member: 32 zero bytes */
	engy_ga_trace_root(gr, th, tr);
	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", tr[i]);
	cJSON_DeleteItemFromObjectCaseSensitive(o, "trace_root");
	if (cJSON_AddStringToObject(o, "trace_root", hex))
		s = cJSON_PrintUnformatted(o);
out:
	free(proofs);
	cJSON_Delete(o);
	cJSON_Delete(t);
	return s;
}

static void send_opening(struct miner *m, struct engy_ws_conn *conn,
			 const char *corr_id, const char *opening, size_t olen,
			 const char *error)
{
	size_t len = 0;
	char *s = engy_miner_gemm_opening_json(corr_id, opening, olen, error,
					       &len);

	if (s)
		miner_send(m, conn, s, len);
}

static void open_unlink(struct mgopen *o)
{
	*o->pprev = o->next;
	if (o->next)
		o->next->pprev = o->pprev;
}

static void open_done(void *arg, int rc, const char *json, size_t len)
{
	struct mgopen *o = arg;
	struct miner *m = o->m;
	const char *err = NULL;

	open_unlink(o);
	if (rc < 0)
		err = rc == -ENOENT   ? "not_held"
		      : rc == -EINVAL ? "malformed"
				      : "failed";
	else if (!json || !len)
		err = "failed";
	else if (len > (size_t)m->c->gemm_open_max_bytes)
		err = "too_large";
	MLOG(m, err ? ENGY_LOG_WARNING : ENGY_LOG_INFO,
	     "event=gemm_opening leg=%u corr_id=%s bytes=%zu outcome=%s",
	     o->leg, o->corr_id, err ? 0 : len,
	     !o->conn ? "orphaned"
	     : err    ? err
		      : "sent");
	if (o->conn && !miner_loop_over(m))
		send_opening(m, o->conn, o->corr_id, err ? NULL : json, len,
			     err);
	free(o);
}

void miner_gemm_open(struct mleg *l, struct engy_gw_frame *f)
{
	struct miner *m = l->m;
	struct mgopen *o;
	const char *rid = NULL, *err = NULL;
	char *ch = NULL;
	unsigned busy = 0;
	int rc;

	for (o = m->gopens; o; o = o->next)
		if (o->conn == l->conn)
			busy++;
	if (f->bad)
		err = "malformed";
	else if (!miner_gemm_on(m))
		err = "no_trace";
	else if (!(rid = held_rid(m, f->request_id)))
		err = "not_held";
	else if (busy >= (unsigned)m->c->gemm_open_max)
		err = "busy";
	else if (!(ch = cJSON_PrintUnformatted(f->challenge)) ||
		 !(o = calloc(1, sizeof(*o))))
		err = "failed";
	if (err) {
		free(ch);
		MLOG(m, ENGY_LOG_NOTICE,
		     "event=gemm_open leg=%u corr_id=%s outcome=%s", l->idx,
		     f->corr_id, err);
		send_opening(m, l->conn, f->corr_id, NULL, 0, err);
		return;
	}
	o->m = m;
	o->conn = l->conn;
	o->leg = l->idx;
	snprintf(o->corr_id, sizeof(o->corr_id), "%s", f->corr_id);
	o->next = m->gopens;
	if (o->next)
		o->next->pprev = &o->next;
	o->pprev = &m->gopens;
	m->gopens = o;
	MLOG(m, ENGY_LOG_INFO, "event=gemm_open leg=%u corr_id=%s rid=%s",
	     l->idx, f->corr_id, rid);
	/* The backend may answer from inside the call. */
	rc = m->b->gemm_open(m->bi, rid, ch, strlen(ch), open_done, o);
	free(ch);
	if (rc < 0)
		open_done(o, rc, NULL, 0);
}

void miner_gemm_orphan(struct miner *m, struct engy_ws_conn *conn)
{
	struct mgopen *o;

	for (o = m->gopens; o; o = o->next)
		if (o->conn == conn)
			o->conn = NULL;
}

void miner_gemm_free(struct miner *m)
{
	/* The loop has ended: no backend callback can come any more. */
	while (m->gopens) {
		struct mgopen *o = m->gopens;

		open_unlink(o);
		free(o);
	}
	if (m->gheld)
		explicit_bzero(m->gheld, MINER_GEMM_HELD * sizeof(*m->gheld));
	free(m->gheld);
	m->gheld = NULL;
}
