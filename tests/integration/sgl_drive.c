/* SPDX-License-Identifier: MIT */
/*
 * sgl_drive: loads the built backend-sglang module into a small host with
 * a real libevent loop and runs commands against serves, printing one JSON
 * line per result for tests/integration/backend_sglang.sh.  It asserts the
 * backend contract itself (on_done exactly once and last, one row per id,
 * nothing after a cancel but on_done) and aborts on a breach.
 *
 *   sgl_drive PLUGIN.so [option=value ...] -- COMMAND [; COMMAND ...]
 *   gen IDS MAX [temp=T hidden=0 lp=0 rid=R stop=A,B seed=S
 *                cancel_after=N cancel_ms=MS top=K]
 *   multi N IDS MAX [same keys]     N generations at once
 *   prefill IDS                     hidden rows of every position
 *   info MS                         info() after MS ms on the loop
 *   busy N IDS MAX                  N generate() calls at once: their rcs
 *   gen ... gemm=1                  with params.gemm_trace: the line gets
 *                                   "gemm": gemm_commit()'s member (or null)
 *   open RID CHALLENGE_JSON         gemm_open(): {"rc":N,"opening":{...}}
 *
 * Rows and logprobs are printed as FNV-1a 64 hashes over their float32
 * bytes, top_logprobs alternatives over (uint32 id, float32 logprob) each
 * (the fake serve computes the same).  Token content goes to stdout
 * because these are test vectors, never to a log.
 */
#include <dlfcn.h>
#include <errno.h>
#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <engy/backend.h>
#include <engy/plugin.h>

#define MAXG 64

static struct event_base *base;
static const struct engy_plugin *plug;
static const struct engy_backend_ops *ops;
static void *inst;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "sgl_drive: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

/* ---- a host with a real loop ------------------------------------------- */

struct engy_timer {
	struct event *ev;
	void (*cb)(void *arg);
	void *arg;
	int repeat;
};

static void h_vlog(const struct engy_host *h, int level, const char *fmt,
		   va_list ap)
{
	fprintf(stderr, "level=%d inst=%s ", level, h->instance);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
}

static void h_log(const struct engy_host *h, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	h_vlog(h, level, fmt, ap);
	va_end(ap);
}

static struct event_base *h_evbase(const struct engy_host *h)
{
	return base;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct engy_timer *t = arg;
	int repeat = t->repeat;

	t->cb(t->arg);
	if (!repeat) {
		event_free(t->ev);
		free(t);
	}
}

static int h_timer_add(const struct engy_host *h, uint64_t ms, int repeat,
		       void (*cb)(void *), void *arg, struct engy_timer **out)
{
	struct engy_timer *t = calloc(1, sizeof(*t));
	struct timeval tv = { (time_t)(ms / 1000),
			      (suseconds_t)(ms % 1000) * 1000 };

	if (!t)
		return -ENOMEM;
	t->cb = cb;
	t->arg = arg;
	t->repeat = repeat;
	t->ev = event_new(base, -1, repeat ? EV_PERSIST : 0, on_timer, t);
	if (!t->ev || event_add(t->ev, &tv))
		die("timer");
	if (out)
		*out = t;
	return 0;
}

static void h_timer_del(const struct engy_host *h, struct engy_timer *t)
{
	if (!t)
		return;
	event_free(t->ev);
	free(t);
}

static int h_work(const struct engy_host *h, void (*fn)(void *),
		  void (*done)(void *, int), void *arg)
{
	fn(arg);
	done(arg, 0);
	return 0;
}

static int h_metric(const struct engy_host *h, int type, const char *name,
		    const char *help, const char *labels, const double *b,
		    size_t nb, struct engy_metric **out)
{
	*out = NULL;
	return 0;
}

static void h_metric_op(struct engy_metric *m, double v)
{
}

static int h_peer(const struct engy_host *h, uint32_t kind,
		  const char *instance, const void **o, void **i)
{
	return -ENOENT;
}

static const char *h_state_dir(const struct engy_host *h)
{
	return ".";
}

static struct engy_host host = {
	.size = sizeof(struct engy_host),
	.abi_major = ENGY_ABI_MAJOR,
	.abi_minor = ENGY_ABI_MINOR,
	.instance = "backend-sglang",
	.log = h_log,
	.vlog = h_vlog,
	.evbase = h_evbase,
	.timer_add = h_timer_add,
	.timer_del = h_timer_del,
	.work = h_work,
	.metric = h_metric,
	.metric_add = h_metric_op,
	.metric_set = h_metric_op,
	.metric_observe = h_metric_op,
	.peer = h_peer,
	.state_dir = h_state_dir,
};

/* ---- the conf, as the host fills it: override, env twin, default ------- */

static char *owned[64];
static size_t n_owned;

static void *keep(void *p)
{
	if (!p || n_owned == 64)
		die("out of memory");
	return owned[n_owned++] = p;
}

static void *make_conf(char **over, int n_over)
{
	uint8_t *conf = keep(calloc(1, plug->conf_size));
	const struct engy_opt *o;
	int i;

	for (o = plug->opts; o->name; o++) {
		const char *v = o->env ? getenv(o->env) : NULL;
		size_t len = strlen(o->name);

		for (i = 0; i < n_over; i++)
			if (!strncmp(over[i], o->name, len) &&
			    over[i][len] == '=')
				v = over[i] + len + 1;
		if (!v)
			v = o->def;
		if (!v)
			continue;
		switch (o->type) {
		case ENGY_OPT_INT: {
			int64_t x = strtoll(v, NULL, 10);

			memcpy(conf + o->offset, &x, sizeof(x));
			break;
		}
		case ENGY_OPT_FLOAT: {
			double x = strtod(v, NULL);

			memcpy(conf + o->offset, &x, sizeof(x));
			break;
		}
		case ENGY_OPT_BOOL: {
			bool x = strcmp(v, "true") == 0;

			memcpy(conf + o->offset, &x, sizeof(x));
			break;
		}
		case ENGY_OPT_STR: {
			const char *x = keep(strdup(v));

			memcpy(conf + o->offset, &x, sizeof(x));
			break;
		}
		case ENGY_OPT_STR_LIST: {
			char *s = keep(strdup(v)), *tok, *save = NULL;
			const char **list = keep(calloc(16, sizeof(char *)));
			struct engy_strv sv = { 0, list };

			for (tok = strtok_r(s, ",", &save); tok && sv.n < 16;
			     tok = strtok_r(NULL, ",", &save))
				list[sv.n++] = tok;
			memcpy(conf + o->offset, &sv, sizeof(sv));
			break;
		}
		}
	}
	return conf;
}

/* ---- requests ------------------------------------------------------------ */

struct req {
	struct engy_gen *g;
	uint32_t ids[4096];
	size_t n;
	size_t calls, folds, rows;
	uint32_t hidden;
	uint64_t rowhash, lphash, tophash;
	uint32_t top;	  /* top_logprobs asked */
	size_t top_ahead; /* ids on_top_logprobs announced, not yet given */
	int cancel_after;
	bool cancelled, done, want_hidden, want_lp;
	struct engy_gen_result res;
	char error[512];
	struct timespec t0; /* generate() */
	double ms;	    /* generate() to on_done, on the loop's clock */
	int prefill_rc;
	bool is_prefill;
	uint32_t n_prefill;
	char *gemm; /* gemm_commit() in on_done */
};

static struct req reqs[MAXG];
static int n_open;

static void fnv(uint64_t *h, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		*h = (*h ^ b[i]) * 0x100000001b3ull;
}

/* The alternatives of the next on_tokens' ids: K each, hashed. */
static void on_top(void *arg, size_t n, uint32_t k, const uint32_t *ids,
		   const float *lp)
{
	struct req *r = arg;
	size_t i;

	if (r->done || r->cancelled || r->top_ahead || k != r->top || !n)
		die("on_top_logprobs: %zu ids, %u each (asked %u)", n, k,
		    r->top);
	r->top_ahead = n;
	for (i = 0; i < n * k; i++) {
		fnv(&r->tophash, &ids[i], 4);
		fnv(&r->tophash, &lp[i], 4);
	}
}

static void on_tokens(void *arg, const uint32_t *ids, size_t n,
		      const struct engy_rows *rows, const float *lp)
{
	struct req *r = arg;

	if (r->top && r->top_ahead != n)
		die("on_tokens with %zu ids after alternatives of %zu", n,
		    r->top_ahead);
	r->top_ahead = 0;

	if (r->done || r->cancelled)
		die("on_tokens after on_done or cancel");
	if (!n || r->n + n > 4096)
		die("on_tokens with %zu ids", n);
	memcpy(r->ids + r->n, ids, n * sizeof(*ids));
	r->n += n;
	r->calls++;
	if (r->want_hidden && !rows) {
		/* Folded into the prompt: only ever token 0, alone. */
		if (r->n != 1 || r->folds)
			die("rows missing for %zu ids at %zu", n, r->n - n);
		r->folds++;
	} else if (rows) {
		if (!r->want_hidden || rows->dtype != ENGY_DTYPE_F32 ||
		    rows->n_rows != n || rows->n_prefill || !rows->hidden ||
		    (r->hidden && rows->hidden != r->hidden))
			die("bad rows: %u rows of %u for %zu ids", rows->n_rows,
			    rows->hidden, n);
		r->hidden = rows->hidden;
		r->rows += n;
		fnv(&r->rowhash, rows->data, (size_t)n * rows->hidden * 4);
	}
	if (lp)
		fnv(&r->lphash, lp, n * sizeof(*lp));
	else if (r->want_lp)
		die("logprobs missing");
	if (r->cancel_after && r->n >= (size_t)r->cancel_after) {
		r->cancelled = true;
		ops->cancel(inst, r->g);
	}
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 +
	       (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

static void on_done(void *arg, const struct engy_gen_result *res)
{
	struct req *r = arg;

	if (r->done)
		die("on_done twice");
	if (r->cancelled && res->finish != ENGY_FINISH_ABORT)
		die("cancelled, finished with %d", res->finish);
	r->done = true;
	r->res = *res;
	r->ms = ms_since(&r->t0);
	free(r->gemm);
	r->gemm = NULL;
	if (ops->size >= offsetof(struct engy_backend_ops, gemm_commit) +
				 sizeof(ops->gemm_commit) &&
	    ops->gemm_commit)
		r->gemm = ops->gemm_commit(inst, r->g);
	snprintf(r->error, sizeof(r->error), "%s",
		 res->error ? res->error : "");
	n_open--;
}

static const struct engy_gen_cb gen_cb = { on_tokens, on_done };

static void on_prefill(void *arg, int rc, const struct engy_rows *rows)
{
	struct req *r = arg;

	if (r->done)
		die("prefill done twice");
	r->done = true;
	r->prefill_rc = rc;
	if (!rc) {
		if (!rows || rows->dtype != ENGY_DTYPE_F32)
			die("prefill rows");
		r->rows = rows->n_rows;
		r->hidden = rows->hidden;
		r->n_prefill = rows->n_prefill;
		fnv(&r->rowhash, rows->data,
		    (size_t)rows->n_rows * rows->hidden * 4);
	}
	n_open--;
}

static void on_cancel_timer(evutil_socket_t fd, short what, void *arg)
{
	struct req *r = arg;

	if (!r->done && !r->cancelled) {
		r->cancelled = true;
		ops->cancel(inst, r->g);
	}
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	die("requests still open after 30 s");
}

static void run_until_done(void)
{
	struct timeval tv = { 30, 0 };
	struct event *wd = evtimer_new(base, on_watchdog, NULL);

	evtimer_add(wd, &tv);
	while (n_open > 0)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(wd);
}

static size_t parse_ids(const char *s, uint32_t *out, size_t cap)
{
	size_t n = 0;
	char *e;

	while (*s && n < cap) {
		out[n++] = (uint32_t)strtoul(s, &e, 10);
		s = *e == ',' ? e + 1 : e;
		if (e == s && *s)
			die("bad id list");
	}
	return n;
}

static const char *kv(char **a, int n, const char *key)
{
	size_t len = strlen(key);
	int i;

	for (i = 0; i < n; i++)
		if (!strncmp(a[i], key, len) && a[i][len] == '=')
			return a[i] + len + 1;
	return NULL;
}

static void print_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void print_req(struct req *r)
{
	size_t i;

	printf("{\"status\":%d,\"error\":", r->res.status);
	print_json_str(r->error);
	printf(",\"finish\":%d,\"matched\":%d,\"prompt\":%u,\"completion\":%u,"
	       "\"cached\":%u,\"calls\":%zu,\"fold\":%zu,\"rows\":%zu,"
	       "\"hidden\":%u,\"rowhash\":\"%016llx\",\"lphash\":\"%016llx\","
	       "\"tophash\":\"%016llx\",\"ms\":%.0f,\"ids\":[",
	       r->res.finish, r->res.matched_stop, r->res.prompt_tokens,
	       r->res.completion_tokens, r->res.cached_tokens, r->calls,
	       r->folds, r->rows, r->hidden, (unsigned long long)r->rowhash,
	       (unsigned long long)r->lphash, (unsigned long long)r->tophash,
	       r->ms);
	for (i = 0; i < r->n; i++)
		printf("%s%u", i ? "," : "", r->ids[i]);
	printf("],\"gemm\":%s}\n", r->gemm ? r->gemm : "null");
	if (r->res.completion_tokens != r->n && r->res.status == 0 &&
	    r->res.finish != ENGY_FINISH_ABORT)
		die("completion_tokens %u but %zu ids delivered",
		    r->res.completion_tokens, r->n);
}

static int start_gen(struct req *r, char **a, int n, const uint32_t *in,
		     size_t n_in, uint32_t max, int index)
{
	static uint32_t stop[16];
	char rid[160];
	struct engy_gen_params p = { .size = sizeof(p) };
	const char *v;
	struct timeval tv;
	int rc;

	free(r->gemm);
	memset(r, 0, sizeof(*r));
	r->rowhash = r->lphash = r->tophash = 0xcbf29ce484222325ull;
	p.input_ids = in;
	p.n_input = n_in;
	p.max_new_tokens = max;
	p.temperature = (v = kv(a, n, "temp")) ? strtod(v, NULL) : 0;
	p.top_p = 1;
	p.return_hidden = r->want_hidden = !(v = kv(a, n, "hidden")) || atoi(v);
	p.return_logprobs = r->want_lp = !(v = kv(a, n, "lp")) || atoi(v);
	if ((v = kv(a, n, "top"))) { /* top_logprobs */
		p.top_logprobs = r->top = (uint32_t)atoi(v);
		p.on_top_logprobs = on_top;
	}
	p.rid = kv(a, n, "rid");
	if (p.rid && index >= 0) { /* several at once: rid.0, rid.1, ... */
		snprintf(rid, sizeof(rid), "%s.%d", p.rid, index);
		p.rid = rid;
	}
	if ((v = kv(a, n, "seed"))) {
		p.seed = strtoull(v, NULL, 10);
		p.has_seed = true;
	}
	if ((v = kv(a, n, "stop"))) {
		p.n_stop = parse_ids(v, stop, 16);
		p.stop_ids = stop;
	}
	r->cancel_after = (v = kv(a, n, "cancel_after")) ? atoi(v) : 0;
	p.gemm_trace = (v = kv(a, n, "gemm")) && atoi(v);
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	rc = ops->generate(inst, &p, &gen_cb, r, &r->g);
	if (rc)
		return rc;
	n_open++;
	if ((v = kv(a, n, "cancel_ms"))) {
		tv.tv_sec = atoi(v) / 1000;
		tv.tv_usec = (atoi(v) % 1000) * 1000;
		event_base_once(base, -1, EV_TIMEOUT, on_cancel_timer, r, &tv);
	}
	return 0;
}

struct opened {
	int rc, done;
	char *json;
};

static void on_opened(void *arg, int rc, const char *json, size_t len)
{
	struct opened *o = arg;

	if (o->done++)
		die("gemm_open done twice");
	o->rc = rc;
	o->json = json ? strndup(json, len) : NULL;
	n_open--;
}

static uint32_t input[1 << 16];

static void cmd(char **a, int n)
{
	size_t n_in;
	int i, rc;

	if (!strcmp(a[0], "gen") || !strcmp(a[0], "multi")) {
		int off = !strcmp(a[0], "multi"), count = off ? atoi(a[1]) : 1;

		if (n < 3 + off || count < 1 || count > MAXG)
			die("gen IDS MAX");
		n_in = parse_ids(a[1 + off], input, 1 << 16);
		for (i = 0; i < count; i++) {
			rc = start_gen(&reqs[i], a + 3 + off, n - 3 - off,
				       input, n_in, (uint32_t)atoi(a[2 + off]),
				       off ? i : -1);
			if (rc) {
				printf("{\"generate_rc\":%d}\n", rc);
				return;
			}
		}
		run_until_done();
		for (i = 0; i < count; i++)
			print_req(&reqs[i]);
	} else if (!strcmp(a[0], "prefill") && n >= 2) {
		struct req *r = &reqs[0];

		free(r->gemm);
		memset(r, 0, sizeof(*r));
		r->rowhash = 0xcbf29ce484222325ull;
		n_in = parse_ids(a[1], input, 1 << 16);
		rc = ops->prefill(inst, input, n_in, on_prefill, r, &r->g);
		if (rc) {
			printf("{\"prefill_rc\":%d}\n", rc);
			return;
		}
		n_open++;
		run_until_done();
		printf("{\"rc\":%d,\"rows\":%zu,\"hidden\":%u,\"n_prefill\":%u,"
		       "\"rowhash\":\"%016llx\"}\n",
		       r->prefill_rc, r->rows, r->hidden, r->n_prefill,
		       (unsigned long long)r->rowhash);
	} else if (!strcmp(a[0], "info") && n >= 2) {
		struct engy_model_info mi = { .size = sizeof(mi) };
		struct timeval tv = { atoi(a[1]) / 1000,
				      (atoi(a[1]) % 1000) * 1000 };

		/* The serve is asked at start: give it MS on the loop. */
		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
		rc = ops->info(inst, &mi);
		printf("{\"rc\":%d,\"name\":", rc);
		print_json_str(mi.name);
		printf(",\"path\":");
		print_json_str(mi.path);
		printf(",\"hidden\":%u,\"vocab\":%u,\"max_context\":%u,"
		       "\"eos\":[%u,%u,%u,%u]}\n",
		       mi.hidden_size, mi.vocab_size, mi.max_context,
		       mi.eos_ids[0], mi.eos_ids[1], mi.eos_ids[2],
		       mi.eos_ids[3]);
	} else if (!strcmp(a[0], "open") && n >= 3) {
		struct opened o = { 0 };

		if (!ops->gemm_open)
			die("no gemm_open");
		rc = ops->gemm_open(inst, a[1], a[2], strlen(a[2]), on_opened,
				    &o);
		if (!rc) {
			n_open++;
			run_until_done();
			rc = o.rc;
		}
		printf("{\"rc\":%d,\"opening\":%s}\n", rc,
		       o.json ? o.json : "null");
		free(o.json);
	} else if (!strcmp(a[0], "busy") && n >= 4) {
		int count = atoi(a[1]);

		n_in = parse_ids(a[2], input, 1 << 16);
		printf("{\"rcs\":[");
		for (i = 0; i < count && i < MAXG; i++) {
			rc = start_gen(&reqs[i], a + 4, n - 4, input, n_in,
				       (uint32_t)atoi(a[3]), i);
			printf("%s%d", i ? "," : "", rc);
			if (!rc) {
				reqs[i].cancelled = true;
				ops->cancel(inst, reqs[i].g);
			}
		}
		printf("]}\n");
		run_until_done();
	} else {
		die("unknown command %s", a[0]);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	void *dl, *conf;
	int i, sep, start;

	if (argc < 4)
		die("usage: sgl_drive PLUGIN.so [opt=value ...] -- CMD "
		    "[; CMD ...]");
	for (sep = 2; sep < argc && strcmp(argv[sep], "--"); sep++)
		;
	if (sep == argc)
		die("no --");
	dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		die("dlopen: %s", dlerror());
	plug = dlsym(dl, ENGY_PLUGIN_SYMBOL);
	if (!plug || plug->kind != ENGY_KIND_BACKEND)
		die("not a backend plugin");
	ops = plug->ops;
	base = event_base_new();
	conf = make_conf(argv + 2, sep - 2);
	if (plug->create(&host, conf, &inst))
		die("create failed");
	if (plug->start && plug->start(inst))
		die("start failed");
	for (start = i = sep + 1; i <= argc; i++) {
		if (i == argc || !strcmp(argv[i], ";")) {
			if (i > start)
				cmd(argv + start, i - start);
			start = i + 1;
		}
	}
	if (plug->stop)
		plug->stop(inst);
	plug->destroy(inst);
	event_base_free(base);
	/* The module stays mapped: a leak report can name its frames, and
	 * nothing of libcurl's is unmapped under a thread it may have left. */
	(void)dl;
	for (i = 0; i < (int)n_owned; i++)
		free(owned[i]);
	return 0;
}
