/* SPDX-License-Identifier: MIT */
/*
 * transport-ws from the command line, for tests against independent peers
 * (tests/integration/ws_peer.sh).  It loads the built plugin into the
 * loop-backed test host and plays one side:
 *
 *   ws_driver serve [opt=value ...]
 *     echo server on /echo; a text "close:CODE:REASON" makes it close with
 *     CODE; prints "listening port=N", then one line per event.
 *   ws_driver dial URL [opt=value ...] [-H Name=Value] [--hold MS]
 *                      [--expect-error]
 *     a leg: sends a fixed battery (text, UTF-8, binary, 1 MiB, empty),
 *     checks every echo, asks the server to close with 4001, waits for the
 *     re-dial, checks one more echo, keeps the leg MS more, closes it.
 *     With --expect-error, expects a failed dial instead and prints
 *     "dial_error err=N".
 *
 * opt=value are transport-ws options (ca_file=..., ping_interval_s=...).
 * Exit 0 when everything held, 1 otherwise.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include <engy/engy.h>

#include "ws_host.h"

static const struct engy_transport_ops *ops;
static void *inst;
static struct event_base *base;
static volatile sig_atomic_t quit;

#define BIG (1 << 20)

struct battery {
	const char *data;
	size_t len;
	int type;
};

#define UTF8_TEXT                                                              \
	"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5 \xf0\x9f\x9a\x80"

static uint8_t bin256[256], big[BIG];
static struct battery msgs[] = {
	{ "hello", 5, ENGY_WS_TEXT },
	{ UTF8_TEXT, sizeof(UTF8_TEXT) - 1, ENGY_WS_TEXT },
	{ (const char *)bin256, sizeof(bin256), ENGY_WS_BINARY },
	{ (const char *)big, BIG, ENGY_WS_BINARY },
	{ "", 0, ENGY_WS_TEXT },
};
#define N_MSGS (sizeof(msgs) / sizeof(msgs[0]))

/* --- serve ---------------------------------------------------------- */

static int s_open(void *arg, struct engy_ws_conn *c,
		  const struct engy_ws_open *o)
{
	printf("open path=%s remote=%s\n", o->path, o->remote);
	return 0;
}

static void s_message(void *arg, struct engy_ws_conn *c, int type,
		      const uint8_t *data, size_t len)
{
	char reason[128] = "";
	int code, rc;

	printf("message type=%s len=%zu\n",
	       type == ENGY_WS_TEXT ? "text" : "binary", len);
	if (type == ENGY_WS_TEXT && len > 6 && len < 100 &&
	    memcmp(data, "close:", 6) == 0) {
		char buf[100];

		memcpy(buf, data, len);
		buf[len] = '\0';
		if (sscanf(buf, "close:%d:%127[^\n]", &code, reason) >= 1) {
			rc = ops->ws_close(inst, c, code, reason);
			printf("closing code=%d rc=%d\n", code, rc);
			return;
		}
	}
	rc = ops->ws_send(inst, c, type, data, len);
	if (rc)
		printf("echo failed rc=%d\n", rc);
}

static void s_close(void *arg, struct engy_ws_conn *c, int code,
		    const char *reason)
{
	printf("close code=%d reason=%s\n", code, reason);
}

static const struct engy_ws_handler serve_h = {
	.size = sizeof(struct engy_ws_handler),
	.on_open = s_open,
	.on_message = s_message,
	.on_close = s_close,
};

static bool stop_now(void *arg)
{
	return quit != 0;
}

/* --- dial ----------------------------------------------------------- */

struct dial {
	struct engy_ws_leg *leg;
	bool expect_error;
	int opens, echoed, bad, closes, code, err, status;
	char reason[128];
	bool done;
};

static void send_battery(struct engy_ws_conn *c)
{
	size_t i;
	int rc;

	for (i = 0; i < N_MSGS; i++) {
		rc = ops->ws_send(inst, c, msgs[i].type, msgs[i].data,
				  msgs[i].len);
		if (rc)
			printf("send %zu failed rc=%d\n", i, rc);
	}
}

static int d_open(void *arg, struct engy_ws_conn *c,
		  const struct engy_ws_open *o)
{
	struct dial *d = arg;

	d->opens++;
	printf("open opens=%u remote=%s\n", o->opens, o->remote);
	if (d->opens == 1)
		send_battery(c);
	else
		ops->ws_send(inst, c, ENGY_WS_TEXT, "hello again", 11);
	return 0;
}

static void d_message(void *arg, struct engy_ws_conn *c, int type,
		      const uint8_t *data, size_t len)
{
	struct dial *d = arg;
	const struct battery *want;

	if (d->opens > 1) {
		if (len != 11 || memcmp(data, "hello again", 11) != 0)
			d->bad++;
		printf("echo after reopen %s\n", d->bad ? "BAD" : "ok");
		d->done = true;
		return;
	}
	want = &msgs[d->echoed < (int)N_MSGS ? d->echoed : 0];
	if (type != want->type || len != want->len ||
	    memcmp(data, want->data, len) != 0) {
		printf("echo %d differs (type %d len %zu)\n", d->echoed, type,
		       len);
		d->bad++;
	}
	if (++d->echoed == (int)N_MSGS) {
		printf("echo %s n=%d\n", d->bad ? "BAD" : "ok", d->echoed);
		ops->ws_send(inst, c, ENGY_WS_TEXT, "close:4001:bye", 14);
	}
}

static void d_close(void *arg, struct engy_ws_conn *c, int code,
		    const char *reason)
{
	struct dial *d = arg;

	d->closes++;
	d->code = code;
	snprintf(d->reason, sizeof(d->reason), "%s", reason);
	printf("closed code=%d reason=%s\n", code, reason);
}

static void d_dial_error(void *arg, struct engy_ws_leg *leg, int err,
			 int status)
{
	struct dial *d = arg;

	d->err = err;
	d->status = status;
	printf("dial_error err=%d status=%d\n", err, status);
	if (d->expect_error)
		d->done = true;
}

static const struct engy_ws_handler dial_h = {
	.size = sizeof(struct engy_ws_handler),
	.on_open = d_open,
	.on_message = d_message,
	.on_close = d_close,
	.on_dial_error = d_dial_error,
};

static bool dial_done(void *arg)
{
	return ((struct dial *)arg)->done || quit;
}

static void on_signal(int sig)
{
	quit = 1;
}

static bool jobs_done(void *arg)
{
	return wsth_pending(arg) == 0;
}

int main(int argc, char **argv)
{
	const char *kv[32], *hdrs[16], *url = NULL;
	const struct engy_plugin *p;
	struct engy_host *h;
	struct dial d = { 0 };
	int nkv = 0, nh = 0, i, rc = 1, ok, hold_ms = 0;
	char *eq;
	void *dl, *conf;
	bool serve;

	if (argc < 2 || (strcmp(argv[1], "serve") && strcmp(argv[1], "dial"))) {
		fprintf(stderr, "usage: ws_driver serve|dial [URL] [opt=value] "
				"[-H Name=Value] [--expect-error]\n");
		return 2;
	}
	serve = strcmp(argv[1], "serve") == 0;
	for (i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--expect-error") == 0) {
			d.expect_error = true;
		} else if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc) {
			hold_ms = atoi(argv[++i]);
		} else if (strcmp(argv[i], "-H") == 0 && i + 1 < argc &&
			   nh < 14 && (eq = strchr(argv[i + 1], '='))) {
			*eq = '\0';
			hdrs[nh++] = argv[++i];
			hdrs[nh++] = eq + 1;
		} else if (!serve && !url) {
			url = argv[i];
		} else if (nkv < 31) {
			kv[nkv++] = argv[i];
		}
	}
	kv[nkv] = NULL;
	hdrs[nh] = NULL;
	for (i = 0; i < BIG; i++)
		big[i] = (uint8_t)(i * 7 + i / 251);
	for (i = 0; i < 256; i++)
		bin256[i] = (uint8_t)i;
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);

	p = wsth_load(TRANSPORT_WS_SO, &dl);
	if (!p)
		return 1;
	ops = p->ops;
	base = event_base_new();
	h = wsth_new("transport-ws", base);
	conf = wsth_conf(p, kv);
	if (p->create(h, conf, &inst) < 0 || p->start(inst) < 0)
		goto out;
	if (serve) {
		if (ops->ws_listen(inst, "/echo", &serve_h, NULL) < 0)
			goto out;
		printf("listening port=%d\n", wsth_listen_port(h));
		wsth_run(base, 60000, stop_now, NULL);
		rc = 0;
		goto out;
	}
	if (ops->ws_dial(inst, url, nh ? hdrs : NULL, &dial_h, &d, &d.leg) < 0)
		goto out;
	ok = wsth_run(base, 15000, dial_done, &d);
	/* Keep the leg a while (keepalive checks), then close it cleanly. */
	if (ok && hold_ms)
		wsth_run(base, hold_ms, stop_now, NULL);
	ops->ws_leg_close(inst, d.leg);
	wsth_run(base, 300, NULL, NULL);
	if (d.expect_error)
		rc = ok && d.err < 0 && d.opens == 0 ? 0 : 1;
	else
		rc = ok && d.opens == 2 && d.echoed == (int)N_MSGS && !d.bad &&
				     d.closes == 1 && d.code == 4001 &&
				     strcmp(d.reason, "bye") == 0
			     ? 0
			     : 1;
	if (!ok)
		printf("timed out\n");
out:
	/* The log is metadata only; the tests grep it for payloads. */
	fprintf(stderr, "%s", wsth_log(h));
	if (inst) {
		p->stop(inst);
		wsth_run(base, 2000, jobs_done, h);
		p->destroy(inst);
	}
	wsth_conf_free(p, conf);
	wsth_free(h);
	event_base_free(base);
	dlclose(dl);
	return rc;
}
