/* SPDX-License-Identifier: MIT */
/*
 * Shared harness of the transport-ws plugin tests: the plugin dlopen()ed
 * into the loop-backed test host (ws_host.c), instances made from option
 * overrides, and a handler that records what it saw.
 */
#ifndef ENGY_TEST_WS_HARNESS_H
#define ENGY_TEST_WS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <engy/engy.h>

#include "ws_host.h"

extern const struct engy_plugin *plug;
extern const struct engy_transport_ops *ops;
extern struct event_base *base;

struct side {
	struct engy_host *h;
	void *conf;
	void *inst;
};

/* What a handler saw. */
struct rec {
	void *inst;
	bool echo;
	const char *const *say; /* text messages to send on open */
	int opens, closes, msgs, errors;
	int close_after_errors; /* ws_leg_close() at this many */
	struct engy_ws_conn *conn;
	struct engy_ws_leg *open_leg; /* o->leg of the last open */
	uint32_t open_count;
	int code, err, status;
	char reason[128], path[64], query[64], hdr[64], remote[64];
	int type[8];
	size_t len[8];
	uint8_t *data[8];
	long t_open[8], t_close[8], t_err[16];
};

struct wait {
	int *v;
	int at_least;
};

#define WAIT(var, n, ms)                                                       \
	do {                                                                   \
		struct wait w_ = { &(var), (n) };                              \
		ck_assert_msg(wsth_run(base, (ms), reached, &w_),              \
			      #var " stayed at %d, wanted %d", (var), (n));    \
	} while (0)

/* Fixture: load the plugin, make a loop (and point ws_raw.c at it). */
void ws_setup(void);
void ws_teardown(void);
/* An instance from "name=value" overrides, started; create()'s result. */
int side_make(struct side *s, const char *const *kv);
void side_unmake(struct side *s);
long now_ms(void);
void rec_free(struct rec *r);
/* Records into the struct rec given as its arg; echoes when asked. */
extern const struct engy_ws_handler handler;
bool reached(void *arg);
/* ws://127.0.0.1:PORT + @rest, in a static buffer. */
const char *url_of(int port, const char *rest);

#endif /* ENGY_TEST_WS_HARNESS_H */
