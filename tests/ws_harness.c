/* SPDX-License-Identifier: MIT */
/* Shared harness of the transport-ws plugin tests (see ws_harness.h). */
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "ws_harness.h"
#include "ws_raw.h"

static void *dl;
const struct engy_plugin *plug;
const struct engy_transport_ops *ops;
struct event_base *base;

void ws_setup(void)
{
	plug = wsth_load(TRANSPORT_WS_SO, &dl);
	ck_assert_ptr_nonnull(plug);
	ck_assert_str_eq(plug->name, "transport-ws");
	ops = plug->ops;
	ck_assert_str_eq(ops->proto, "ws");
	base = event_base_new();
	raw_init(base);
}

void ws_teardown(void)
{
	event_base_free(base);
	dlclose(dl);
}

int side_make(struct side *s, const char *const *kv)
{
	int rc;

	s->h = wsth_new("ws", base);
	s->conf = wsth_conf(plug, kv);
	s->inst = NULL;
	rc = plug->create(s->h, s->conf, &s->inst);
	if (rc == 0)
		ck_assert_int_eq(plug->start(s->inst), 0);
	return rc;
}

static bool no_jobs(void *arg)
{
	return wsth_pending(arg) == 0;
}

void side_unmake(struct side *s)
{
	if (s->inst) {
		plug->stop(s->inst);
		wsth_run(base, 2000, no_jobs, s->h);
		plug->destroy(s->inst);
	}
	wsth_conf_free(plug, s->conf);
	wsth_free(s->h);
}

long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

void rec_free(struct rec *r)
{
	int i;

	for (i = 0; i < 8; i++)
		free(r->data[i]);
}

static int on_open(void *arg, struct engy_ws_conn *c,
		   const struct engy_ws_open *o)
{
	struct rec *r = arg;
	const char *h = o->header(o, "x-test");
	int i;

	r->conn = c;
	if (r->opens < 8)
		r->t_open[r->opens] = now_ms();
	r->opens++;
	r->open_leg = o->leg;
	r->open_count = o->opens;
	snprintf(r->path, sizeof(r->path), "%s", o->path);
	snprintf(r->query, sizeof(r->query), "%s", o->query ? o->query : "");
	snprintf(r->hdr, sizeof(r->hdr), "%s", h ? h : "");
	snprintf(r->remote, sizeof(r->remote), "%s", o->remote);
	ck_assert_ptr_null(ops->ws_user(r->inst, c));
	ops->ws_set_user(r->inst, c, r);
	for (i = 0; r->say && r->say[i]; i++)
		ck_assert_int_eq(ops->ws_send(r->inst, c, ENGY_WS_TEXT,
					      r->say[i], strlen(r->say[i])),
				 0);
	return 0;
}

static void on_message(void *arg, struct engy_ws_conn *c, int type,
		       const uint8_t *data, size_t len)
{
	struct rec *r = arg;

	ck_assert_ptr_eq(ops->ws_user(r->inst, c), r);
	if (r->msgs < 8) {
		r->type[r->msgs] = type;
		r->len[r->msgs] = len;
		r->data[r->msgs] = malloc(len + 1);
		memcpy(r->data[r->msgs], data, len);
	}
	r->msgs++;
	if (r->echo)
		ck_assert_int_eq(ops->ws_send(r->inst, c, type, data, len), 0);
}

static void on_close(void *arg, struct engy_ws_conn *c, int code,
		     const char *reason)
{
	struct rec *r = arg;

	ck_assert_ptr_eq(c, r->conn);
	if (r->closes < 8)
		r->t_close[r->closes] = now_ms();
	r->closes++;
	r->code = code;
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	r->conn = NULL;
}

static void on_dial_error(void *arg, struct engy_ws_leg *leg, int err,
			  int status)
{
	struct rec *r = arg;

	if (r->errors < 16)
		r->t_err[r->errors] = now_ms();
	r->errors++;
	r->err = err;
	r->status = status;
	if (r->close_after_errors && r->errors == r->close_after_errors)
		ops->ws_leg_close(r->inst, leg);
}

const struct engy_ws_handler handler = {
	.size = sizeof(struct engy_ws_handler),
	.on_open = on_open,
	.on_message = on_message,
	.on_close = on_close,
	.on_dial_error = on_dial_error,
};

bool reached(void *arg)
{
	struct wait *w = arg;

	return *w->v >= w->at_least;
}

static char url[128];

const char *url_of(int port, const char *rest)
{
	snprintf(url, sizeof(url), "ws://127.0.0.1:%d%s", port, rest);
	return url;
}
