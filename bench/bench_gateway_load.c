/* SPDX-License-Identifier: MIT */
/*
 * bench_gateway_load: the gateway's own cost per request, driven by
 * bench/bench_gateway.sh (which makes the store and starts engyd as a
 * gateway).  In this process, on one loop thread: LEGS instant fake
 * miners (transport-ws legs, loaded as engyd loads it: a `serve` is
 * answered at once with one chunk and the response) and a direct
 * endpoint (transport-http) that answers the same request with the bytes
 * the gateway answered; on the main thread an HTTP/1.1 keep-alive load
 * generator (epoll).  For plain and streamed requests:
 *
 *   sequential  one connection: latency p50/p99 through the gateway and
 *               direct; their difference is what the gateway adds
 *               (auth, store checks, reserve, routing, the miner link,
 *               relay, settle);
 *   loaded      CONNS connections for SECONDS: requests per second and
 *               latency p50/p99, ROUNDS rounds (gateway, peers, direct
 *               in each, so that the machine's load hits all of them),
 *               medians printed.
 *
 * Peers (BENCH_PEERS) are other proxies the script started in front of
 * this direct endpoint (BENCH_DIRECT_PORT, so that their configuration
 * can name it before this program runs): each gets the same requests,
 * sequential and loaded, in the same rounds; its added latency is its
 * latency minus the direct endpoint's.
 *
 * BENCH_INSTR=N: the instruction count mode, for runs under callgrind
 * (bench_gateway.sh runs it twice, N1 and N2, and divides the difference
 * of the totals by N2 - N1): after the capture and BENCH_INSTR_WARM (50)
 * plain requests to each, N plain requests to the gateway and to each
 * peer over BENCH_INSTR_CONNS connections (1: sequential), nothing
 * printed.
 *
 * usage: bench_gateway_load HTTP_PORT WS_URL MINER_KEY API_KEY MODEL
 * environment: BENCH_LEGS (4), BENCH_SEQ (3000; sequential runs also stop
 *              after BENCH_SEQ_SECONDS, 10), BENCH_CONNS (64),
 *              BENCH_SECONDS (5), BENCH_ROUNDS (3), BENCH_DIRECT_PORT (0:
 *              any), BENCH_PEERS ("NAME:PORT[:BEARER] ...": the bearer
 *              replaces the API key in that peer's requests),
 *              BENCH_SUMMARY (a file the ratio lines go to, else stdout),
 *              BENCH_INSTR, BENCH_INSTR_WARM, BENCH_INSTR_CONNS
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include <engy/plugin.h>
#include <engy/transport.h>

#include "conf.h"
#include "host.h"
#include "loader.h"
#include "log.h"
#include "metrics.h"
#include "pool.h"

#define MAX_LEGS    64
#define MAX_CONNS   1024
#define MAX_PEERS   4
#define MAX_ROUNDS  15
#define MAX_TARGETS (2 + MAX_PEERS)
#define BUFCAP	    (256 * 1024)

static struct engyd d;
static struct engy_instance ws_in, http_in;
static const struct engy_transport_ops *wsops, *httpops;
static const char *miner_key, *model;
static int n_legs, admitted;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* what the direct endpoint answers: the gateway's own bytes */
static char *direct_plain, *direct_sse;
static size_t direct_plain_len, direct_sse_len;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_gateway_load: %s\n", what);
	exit(1);
}

/* ---- fake miners (loop thread) ----------------------------------------- */

static int leg_open(void *arg, struct engy_ws_conn *c,
		    const struct engy_ws_open *o)
{
	char hello[1024];
	int n = snprintf(
		hello, sizeof(hello),
		"{\"type\":\"hello\",\"miner_key\":\"%s\",\"model\":\"%s\","
		"\"model_root\":\"%064d\",\"hw\":{\"host\":\"bench\",\"cpus\":1},"
		"\"versions\":{},\"capacity\":{\"max_inflight\":256,"
		"\"max_inflight_total\":256,\"max_input_tokens\":100000,"
		"\"max_output_tokens\":4096,\"max_request_s\":600},"
		"\"worker_name\":\"bench-%d\",\"instance_id\":\"bench-%d\","
		"\"worker_id\":\"%032d\"}",
		miner_key, model, 0, (int)(intptr_t)arg, (int)(intptr_t)arg,
		(int)(intptr_t)arg);

	return wsops->ws_send(ws_in.inst, c, ENGY_WS_TEXT, hello, (size_t)n);
}

static const char *field(const char *s, size_t len, const char *key, char *out,
			 size_t cap)
{
	const char *p = memmem(s, len, key, strlen(key)), *e;

	if (!p)
		return NULL;
	p += strlen(key);
	e = memchr(p, '"', len - (size_t)(p - s));
	if (!e || (size_t)(e - p) >= cap)
		return NULL;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
	return out;
}

static void leg_message(void *arg, struct engy_ws_conn *c, int type,
			const uint8_t *data, size_t len)
{
	const char *s = (const char *)data;
	char corr[96], rid[96], f[1536];
	int n;

	if (memmem(s, len, "\"type\":\"admit\"", 14)) {
		pthread_mutex_lock(&mu);
		admitted++;
		pthread_mutex_unlock(&mu);
		return;
	}
	if (memmem(s, len, "\"type\":\"ping\"", 13)) {
		n = snprintf(f, sizeof(f),
			     "{\"type\":\"heartbeat\",\"inflight\":0}");
		wsops->ws_send(ws_in.inst, c, ENGY_WS_TEXT, f, (size_t)n);
		return;
	}
	if (!memmem(s, len, "\"type\":\"serve\"", 14) ||
	    !field(s, len, "\"corr_id\":\"", corr, sizeof(corr)))
		return;
	if (!field(s, len, "\"engy_request_id\":\"", rid, sizeof(rid)))
		snprintf(rid, sizeof(rid), "%s", corr);
	n = snprintf(f, sizeof(f),
		     "{\"type\":\"chunk\",\"corr_id\":\"%s\","
		     "\"delta\":{\"content\":\"Hello\"}}",
		     corr);
	wsops->ws_send(ws_in.inst, c, ENGY_WS_TEXT, f, (size_t)n);
	n = snprintf(
		f, sizeof(f),
		"{\"type\":\"response\",\"corr_id\":\"%s\","
		"\"request_id\":\"%s\",\"commitment\":{\"model_root\":\"%064d\","
		"\"output_token_ids\":[9707,1052,11,4238],\"toploc\":{\"proofs\":"
		"[\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"],"
		"\"topk\":128,\"decode_batching_size\":32,\"skip_prefill\":true,"
		"\"n_tokens\":4,\"prompt_ids\":[151644,872,198,9707,151645,198,"
		"151644,77091,198]}},\"output\":{\"choices\":[{\"index\":0,"
		"\"finish_reason\":\"stop\",\"message\":{\"role\":\"assistant\","
		"\"content\":\"Hello there, friend\"}}],\"usage\":{\"prompt_tokens\":9,"
		"\"completion_tokens\":4,\"total_tokens\":13}}}",
		corr, rid, 0);
	wsops->ws_send(ws_in.inst, c, ENGY_WS_TEXT, f, (size_t)n);
}

static void leg_close(void *arg, struct engy_ws_conn *c, int code,
		      const char *r)
{
}

static const struct engy_ws_handler leg_handler = {
	.size = sizeof(leg_handler),
	.on_open = leg_open,
	.on_message = leg_message,
	.on_close = leg_close,
};

/* ---- the direct endpoint (loop thread) ------------------------------------ */

static int h_direct(void *arg, struct engy_http_exchange *x,
		    const struct engy_http_request *r)
{
	static const char *const sse_h[] = { "Cache-Control", "no-cache",
					     NULL };
	bool stream =
		memmem(r->body, r->body_len, "\"stream\":true", 13) != NULL;

	if (!stream)
		return httpops->http_reply(http_in.inst, x, 200,
					   "application/json", NULL,
					   direct_plain, direct_plain_len);
	httpops->http_stream_begin(http_in.inst, x, 200, "text/event-stream",
				   sse_h);
	httpops->http_stream_write(http_in.inst, x, direct_sse, direct_sse_len);
	httpops->http_stream_end(http_in.inst, x);
	return 0;
}

static const struct engy_http_handler direct_handler = {
	sizeof(direct_handler),
	h_direct,
	NULL,
};

/* ---- hosting the two plugins --------------------------------------------- */

static const char *ws_conf(void *arg, const char *name)
{
	return strcmp(name, "reconnect_min_ms") == 0 ? "100" : NULL;
}

static char direct_listen[64] = "127.0.0.1:0";

/* The peers' pooled upstream connections come from 127.0.0.1 too: no
 * idle connection of the load generator's is closed for theirs. */
static const char *http_conf(void *arg, const char *name)
{
	if (strcmp(name, "max_connections") == 0 ||
	    strcmp(name, "max_idle_per_client") == 0)
		return "8192";
	return strcmp(name, "listen") == 0 ? direct_listen : NULL;
}

static void host_one(struct engy_instance *in, const char *so, const char *name,
		     const char *(*get)(void *, const char *))
{
	struct engy_errs e = { 0 };
	char err[512];

	in->d = &d;
	in->name = strdup(name);
	if (engy_loader_open(so, name, &in->lp, err, sizeof(err)) ||
	    engy_conf_from_text(name, in->lp.desc.opts, in->lp.desc.conf_size,
				get, NULL, &in->conf, &e))
		die(err);
	engy_host_bind(in);
	if (in->lp.desc.create(&in->host, in->conf, &in->inst) ||
	    (in->lp.desc.start && in->lp.desc.start(in->inst)))
		die("plugin start");
	in->created = in->started = true;
}

static void *loop_main(void *arg)
{
	event_base_dispatch(d.base);
	return NULL;
}

static void on_quit(evutil_socket_t fd, short what, void *arg)
{
	event_base_loopbreak(d.base);
}

/* ---- the load generator (main thread) ---------------------------------------- */

struct conn {
	int fd;
	const char *req;
	size_t req_len, sent, got;
	double t0;
	char *buf;
};

/* A connected, then non-blocking, socket; -1 when @lenient and refused. */
static int dial_opt(int port, bool lenient)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (!lenient)
			die("connect");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
		die("fcntl");
	return fd;
}

static int dial(int port)
{
	return dial_opt(port, false);
}

/* The whole request (a few hundred bytes: the socket buffer takes it). */
static void put(struct conn *c)
{
	ssize_t r;

	c->t0 = now();
	for (c->sent = 0; c->sent < c->req_len; c->sent += (size_t)r) {
		r = send(c->fd, c->req + c->sent, c->req_len - c->sent,
			 MSG_NOSIGNAL);
		if (r < 0 && errno == EAGAIN)
			r = 0;
		else if (r < 0)
			die("send");
	}
}

/* 0: incomplete; else the response's length (status in *st). */
static size_t complete(const char *b, size_t n, int *st)
{
	const char *h = memmem(b, n, "\r\n\r\n", 4), *cl, *p;
	size_t hl, body;

	if (!h)
		return 0;
	hl = (size_t)(h - b) + 4;
	*st = atoi(b + 9);
	cl = memmem(b, hl, "Content-Length:", 15);
	if (!cl)
		cl = memmem(b, hl, "content-length:", 15);
	if (cl)
		return n >= hl + (body = strtoul(cl + 15, NULL, 10)) ? hl + body
								     : 0;
	for (p = b + hl; p < b + n;) { /* chunked */
		char *end;
		size_t sz = strtoul(p, &end, 16);
		const char *crlf = memmem(p, (size_t)(b + n - p), "\r\n", 2);

		if (!crlf)
			return 0;
		if (sz == 0)
			return crlf + 4 <= b + n ? (size_t)(crlf + 4 - b) : 0;
		p = crlf + 2 + sz + 2;
	}
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct result {
	double rps, p50, p99; /* latencies in us */
	unsigned long n, errors;
	const char *failed; /* a peer that could not be measured: why */
};

/*
 * @conns connections to @port, closed loop, until @n_req answered (when
 * not 0) or for @seconds (when not 0), whichever comes first.  @lenient
 * (a peer): a connection the server closes is counted as an error and
 * dialled again; one that cannot be dialled fails the run (res->failed).
 */
static void run_opt(int port, const char *req, int conns, unsigned long n_req,
		    double seconds, bool lenient, struct result *res)
{
	static struct conn cs[MAX_CONNS];
	static double lat[4000000];
	struct epoll_event ev, evs[64];
	unsigned long done = 0, sent = 0;
	double t_start, t_end;
	int ep = epoll_create1(0), i, k, st;
	size_t len = strlen(req);

	memset(res, 0, sizeof(*res));
	for (i = 0; i < conns; i++) {
		char *buf = cs[i].buf;

		cs[i] = (struct conn){ .fd = dial_opt(port, lenient),
				       .req = req,
				       .req_len = len,
				       .buf = buf };
		if (cs[i].fd < 0) {
			while (i-- > 0)
				close(cs[i].fd);
			close(ep);
			res->failed = "connection refused";
			return;
		}
		if (!cs[i].buf && !(cs[i].buf = malloc(BUFCAP)))
			die("out of memory");
		ev.events = EPOLLIN;
		ev.data.ptr = &cs[i];
		epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
	}
	t_start = now();
	t_end = seconds > 0 ? t_start + seconds : 1e30;
	for (i = 0; i < conns; i++) {
		put(&cs[i]);
		sent++;
	}
	while (now() < t_end && (!n_req || done < n_req)) {
		int n = epoll_wait(ep, evs, 64, 1000);

		for (k = 0; k < n; k++) {
			struct conn *c = evs[k].data.ptr;
			ssize_t r;
			size_t whole;

			r = recv(c->fd, c->buf + c->got, BUFCAP - c->got - 1,
				 0);
			if (r < 0 && errno == EAGAIN)
				continue;
			if (r <= 0 && !lenient)
				die(r ? "recv"
				      : "the server closed a connection");
			if (r <= 0) { /* a peer closed: an error, dial again */
				res->errors++;
				epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
				close(c->fd);
				c->got = 0;
				if ((c->fd = dial_opt(port, true)) < 0) {
					res->failed = "connection refused";
					break;
				}
				ev.events = EPOLLIN;
				ev.data.ptr = c;
				epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
				put(c);
				continue;
			}
			c->got += (size_t)r;
			whole = complete(c->buf, c->got, &st);
			if (!whole)
				continue;
			if (done < sizeof(lat) / sizeof(lat[0]))
				lat[done] = now() - c->t0;
			done++;
			res->errors += st != 200;
			memmove(c->buf, c->buf + whole, c->got - whole);
			c->got -= whole;
			if (now() >= t_end || (n_req && sent >= n_req))
				continue;
			put(c);
			sent++;
		}
		if (res->failed)
			break;
	}
	if (res->failed) {
		for (i = 0; i < conns; i++)
			if (cs[i].fd >= 0)
				close(cs[i].fd);
		close(ep);
		return;
	}
	res->rps = (double)done / (now() - t_start);
	res->n = done;
	if (done > sizeof(lat) / sizeof(lat[0]))
		done = sizeof(lat) / sizeof(lat[0]);
	qsort(lat, done, sizeof(lat[0]), cmp);
	res->p50 = done ? lat[done / 2] * 1e6 : 0;
	res->p99 = done ? lat[(size_t)((double)done * 0.99)] * 1e6 : 0;
	for (i = 0; i < conns; i++)
		close(cs[i].fd);
	close(ep);
}

static char *request(const char *api_key, bool stream)
{
	char body[512], *r = NULL;
	int n = snprintf(
		body, sizeof(body),
		"{\"model\":\"%s\",\"max_tokens\":16,\"stream\":%s,\"messages\":"
		"[{\"role\":\"user\",\"content\":\"Say hello to the benchmark.\"}]}",
		model, stream ? "true" : "false");

	if (asprintf(
		    &r,
		    "POST /v1/chat/completions HTTP/1.1\r\nHost: bench\r\n"
		    "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
		    "Content-Length: %d\r\n\r\n%s",
		    api_key, n, body) < 0)
		die("out of memory");
	return r;
}

/* One request through the gateway: its reply body becomes the direct one. */
static void capture(int port, const char *req, char **out, size_t *len)
{
	char *b = malloc(BUFCAP);
	size_t got = 0, whole = 0;
	int fd = dial(port), st = 0;
	ssize_t r;

	if (!b || send(fd, req, strlen(req), MSG_NOSIGNAL) < 0)
		die("capture send");
	while (!whole) {
		fd_set rd;

		FD_ZERO(&rd);
		FD_SET(fd, &rd);
		select(fd + 1, &rd, NULL, NULL, NULL);
		r = recv(fd, b + got, BUFCAP - got - 1, 0);
		if (r <= 0 && errno != EAGAIN)
			die("capture recv");
		if (r > 0)
			got += (size_t)r;
		whole = complete(b, got, &st);
	}
	if (st != 200) {
		b[got] = '\0';
		fprintf(stderr, "%s\n", b);
		die("the gateway did not answer 200");
	}
	close(fd);
	if (memmem(b, whole, "chunked", 7)) { /* de-chunk the SSE body */
		const char *p =
			(const char *)memmem(b, whole, "\r\n\r\n", 4) + 4;
		size_t o = 0;

		*out = malloc(whole);
		while (p < b + whole) {
			char *end;
			size_t sz = strtoul(p, &end, 16);

			if (!sz)
				break;
			memcpy(*out + o, end + 2, sz);
			o += sz;
			p = end + 2 + sz + 2;
		}
		*len = o;
	} else {
		const char *p =
			(const char *)memmem(b, whole, "\r\n\r\n", 4) + 4;

		*len = whole - (size_t)(p - b);
		*out = malloc(*len);
		memcpy(*out, p, *len);
	}
	free(b);
}

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : def;
}

static void show(const char *what, const struct result *g,
		 const struct result *dr)
{
	printf("  %-22s direct p50 %7.0f us p99 %7.0f us | gateway p50 %7.0f us p99 %7.0f us"
	       " | added p50 %6.0f us p99 %6.0f us\n",
	       what, dr->p50, dr->p99, g->p50, g->p99, g->p50 - dr->p50,
	       g->p99 - dr->p99);
}

static void show_load(const char *what, int conns, const struct result *g,
		      const struct result *dr)
{
	printf("  %-22s %d connections: direct %7.0f req/s | gateway %7.0f req/s "
	       "(p50 %6.0f us, p99 %6.0f us, %lu errors) | gateway/direct %.3f\n",
	       what, conns, dr->rps, g->rps, g->p50, g->p99, g->errors,
	       g->rps / dr->rps);
}

/* What is measured: the gateway, the direct endpoint, the peers. */
struct target {
	const char *name;
	int port;
	bool peer;
	char *req[2]; /* plain, streamed */
	const char *failed;
	struct result seq[2], load[MAX_ROUNDS][2], med[2];
};

static struct target tg[MAX_TARGETS];
static int n_tg;

/* @t's run; a peer that failed once is not measured again. */
static void measure(struct target *t, int m, int conns, unsigned long n_req,
		    double seconds, struct result *res)
{
	memset(res, 0, sizeof(*res));
	if (t->failed) {
		res->failed = t->failed;
		return;
	}
	run_opt(t->port, t->req[m], conns, n_req, seconds, t->peer, res);
	t->failed = res->failed;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n ? v[n / 2] : 0;
}

/* Each loaded figure's median over the rounds, on its own. */
static void medians(struct target *t, int rounds)
{
	double a[MAX_ROUNDS], b[MAX_ROUNDS], c[MAX_ROUNDS];
	int m, r;

	for (m = 0; m < 2; m++) {
		memset(&t->med[m], 0, sizeof(t->med[m]));
		for (r = 0; r < rounds; r++) {
			a[r] = t->load[r][m].rps;
			b[r] = t->load[r][m].p50;
			c[r] = t->load[r][m].p99;
			t->med[m].errors += t->load[r][m].errors;
			t->med[m].n += t->load[r][m].n;
		}
		t->med[m].rps = median(a, rounds);
		t->med[m].p50 = median(b, rounds);
		t->med[m].p99 = median(c, rounds);
	}
}

/* "NAME:PORT[:BEARER] ..." */
static void parse_peers(const char *spec, const char *api_key)
{
	char *s = strdup(spec ? spec : ""), *save = NULL, *w;

	for (w = strtok_r(s, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		char *port = strchr(w, ':'), *bearer;
		struct target *t = &tg[n_tg];

		if (!port || n_tg == MAX_TARGETS)
			die("BENCH_PEERS: NAME:PORT[:BEARER] ..., at most 4");
		*port++ = '\0';
		bearer = strchr(port, ':');
		if (bearer)
			*bearer++ = '\0';
		t->name = w;
		t->port = atoi(port);
		t->peer = true;
		t->req[0] = request(bearer ? bearer : api_key, false);
		t->req[1] = request(bearer ? bearer : api_key, true);
		n_tg++;
	}
}

/* Instruction count mode: warm-up, then @n sequential plain requests to
 * the gateway and to each peer. */
static int instr_mode(int n)
{
	struct result r;
	unsigned long errors = 0;
	int i, warm = env_int("BENCH_INSTR_WARM", 50), pass;
	int conns = env_int("BENCH_INSTR_CONNS", 1);

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < n_tg; i++) {
			if (i == 1)
				continue; /* the direct endpoint */
			measure(&tg[i], 0, pass ? conns : 1,
				(unsigned long)(pass ? n : warm), 0, &r);
			if (r.failed) {
				fprintf(stderr, "bench_gateway_load: %s: %s\n",
					tg[i].name, r.failed);
				return 1;
			}
			errors += r.errors;
		}
	return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const char *const mode[2] = { "plain", "streamed" };
	char path[512], line[512];
	int gw_port, direct_port = 0, i, m, r, seq, conns, rounds, pfd[2];
	int instr;
	double secs, seq_secs, t0;
	unsigned long errors = 0;
	struct event *quit;
	pthread_t thr;
	struct target *g = &tg[0], *dt = &tg[1];
	const char *litellm_ok = NULL;
	FILE *f, *sum = stdout;

	if (argc != 6)
		die("usage: bench_gateway_load HTTP_PORT WS_URL MINER_KEY API_KEY MODEL");
	gw_port = atoi(argv[1]);
	miner_key = argv[3];
	model = argv[5];
	n_legs = env_int("BENCH_LEGS", 4);
	seq = env_int("BENCH_SEQ", 3000);
	seq_secs = env_int("BENCH_SEQ_SECONDS", 10);
	conns = env_int("BENCH_CONNS", 64);
	secs = env_int("BENCH_SECONDS", 5);
	rounds = env_int("BENCH_ROUNDS", 3);
	instr = env_int("BENCH_INSTR", 0);
	if (n_legs < 1 || n_legs > MAX_LEGS || conns < 1 || conns > MAX_CONNS ||
	    rounds < 1 || rounds > MAX_ROUNDS)
		die("BENCH_LEGS 1..64, BENCH_CONNS 1..1024, BENCH_ROUNDS 1..15");
	snprintf(direct_listen, sizeof(direct_listen), "127.0.0.1:%d",
		 env_int("BENCH_DIRECT_PORT", 0));
	snprintf(path, sizeof(path), "%s/bench-load-%d.log",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	engy_log_open(path, ENGY_LOG_INFO);
	d.base = event_base_new();
	engy_metrics_new(&d.metrics);
	engy_pool_new(d.base, 1, &d.pool);
	d.state_dir = strdup("/tmp");
	host_one(&ws_in, TRANSPORT_WS_SO, "transport-ws", ws_conf);
	host_one(&http_in, TRANSPORT_HTTP_SO, "transport-http", http_conf);
	wsops = ws_in.lp.ops;
	httpops = http_in.lp.ops;
	httpops->http_route(http_in.inst, "/v1/chat/completions",
			    &direct_handler, NULL);
	for (i = 0; i < n_legs; i++) {
		struct engy_ws_leg *leg;

		if (wsops->ws_dial(ws_in.inst, argv[2], NULL, &leg_handler,
				   (void *)(intptr_t)i, &leg) < 0)
			die("ws_dial");
	}
	if (pipe(pfd) < 0)
		die("pipe");
	quit = event_new(d.base, pfd[0], EV_READ, on_quit, NULL);
	event_add(quit, NULL);
	pthread_create(&thr, NULL, loop_main, NULL);
	/* a deadline against a hang only: under callgrind the gateway is slow */
	for (t0 = now(); now() - t0 < 300;) {
		pthread_mutex_lock(&mu);
		i = admitted;
		pthread_mutex_unlock(&mu);
		if (i == n_legs)
			break;
		usleep(10000);
	}
	if (i != n_legs)
		die("the fake miners were not admitted");
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "inst=transport-http") &&
		    strstr(line, "event=listen "))
			sscanf(strstr(line, "port=") + 5, "%d", &direct_port);
	if (f)
		fclose(f);
	engy_log_close();
	unlink(path);
	if (!direct_port)
		die("no direct port");
	*g = (struct target){ .name = "engy", .port = gw_port };
	*dt = (struct target){ .name = "direct", .port = direct_port };
	g->req[0] = dt->req[0] = request(argv[4], false);
	g->req[1] = dt->req[1] = request(argv[4], true);
	n_tg = 2;
	parse_peers(getenv("BENCH_PEERS"), argv[4]);
	capture(gw_port, g->req[0], &direct_plain, &direct_plain_len);
	capture(gw_port, g->req[1], &direct_sse, &direct_sse_len);
	if (instr > 0) {
		r = instr_mode(instr);
		if (write(pfd[1], "q", 1) == 1)
			pthread_join(thr, NULL);
		return r;
	}
	/* warm-up: caches, connections, the store's pages */
	for (i = 0; i < n_tg; i++) {
		struct result *w = &tg[i].seq[0];

		measure(&tg[i], 0, 4, tg[i].peer ? 200 : 2000,
			tg[i].peer ? 10 : 0, w);
		if (tg[i].peer && !tg[i].failed &&
		    (!w->n || w->errors * 2 > w->n))
			tg[i].failed =
				"most warm-up requests were not answered 200";
	}
	/* one connection: the gateway, the direct endpoint, the peers */
	for (m = 0; m < 2; m++)
		for (i = 0; i < n_tg; i++)
			measure(&tg[i], m, 1, (unsigned long)seq, seq_secs,
				&tg[i].seq[m]);
	/* loaded, in rounds: the gateway, the peers, the direct endpoint */
	for (r = 0; r < rounds; r++)
		for (m = 0; m < 2; m++)
			for (i = 0; i < n_tg; i++) {
				struct target *t = &tg[i == 0	       ? 0
						       : i == n_tg - 1 ? 1
								       : i + 1];

				measure(t, m, conns, 0, secs, &t->load[r][m]);
			}
	for (i = 0; i < n_tg; i++)
		medians(&tg[i], rounds);
	printf("bench_gateway: instant fake miners (%d legs), API key + reserve/settle on "
	       "the store on the path, the reply of the direct endpoint = the gateway's "
	       "bytes (%zu plain, %zu SSE)\n",
	       n_legs, direct_plain_len, direct_sse_len);
	show("plain, sequential", &g->seq[0], &dt->seq[0]);
	show("streamed, sequential", &g->seq[1], &dt->seq[1]);
	show_load("plain, loaded", conns, &g->med[0], &dt->med[0]);
	show_load("streamed, loaded", conns, &g->med[1], &dt->med[1]);
	printf("  side by side, the same load generator and direct endpoint (sequential: "
	       "one connection, %d requests or %.0f s; loaded: %d connections x %.0f s, "
	       "median of %d interleaved rounds; added = minus the direct endpoint's):\n",
	       seq, seq_secs, conns, secs, rounds);
	for (i = 0; i < n_tg; i++) {
		struct target *t = &tg[i == 0 ? 0 : i == n_tg - 1 ? 1 : i + 1];

		if (t->failed) {
			printf("  %-8s not measured: %s\n", t->name, t->failed);
			continue;
		}
		for (m = 0; m < 2; m++)
			printf("  %-8s %-8s sequential p50 %6.0f us p99 %6.0f us, "
			       "added %6.0f / %6.0f us | loaded %7.0f req/s, p50 %7.0f us "
			       "p99 %7.0f us, added %7.0f / %7.0f us, %lu errors\n",
			       t->name, mode[m], t->seq[m].p50, t->seq[m].p99,
			       t->seq[m].p50 - dt->seq[m].p50,
			       t->seq[m].p99 - dt->seq[m].p99, t->med[m].rps,
			       t->med[m].p50, t->med[m].p99,
			       t->med[m].p50 - dt->med[m].p50,
			       t->med[m].p99 - dt->med[m].p99,
			       t->med[m].errors);
		if (strcmp(t->name, "litellm") == 0)
			litellm_ok = t->name;
	}
	if (!litellm_ok)
		printf("  published figures (LiteLLM not measured here): LiteLLM adds "
		       "p50 2 ms / p99 13 ms at ~1,170 req/s (4 x 4 vCPU)\n");
	if (getenv("BENCH_SUMMARY") && *getenv("BENCH_SUMMARY") &&
	    !(sum = fopen(getenv("BENCH_SUMMARY"), "w")))
		die("BENCH_SUMMARY");
	fprintf(sum,
		"  engy loaded added p99: %.1f ms plain, %.1f ms streamed "
		"(goal < 5 ms)\n",
		(g->med[0].p99 - dt->med[0].p99) / 1000,
		(g->med[1].p99 - dt->med[1].p99) / 1000);
	for (i = 2; i < n_tg; i++) {
		struct target *t = &tg[i];
		bool nginx = strcmp(t->name, "nginx") == 0;

		if (t->failed)
			fprintf(sum,
				"  engy req/s / %s req/s: not measured (%s)\n",
				t->name, t->failed);
		else
			fprintf(sum,
				"  engy req/s / %s req/s: %.3f plain, %.3f streamed%s\n",
				t->name, g->med[0].rps / t->med[0].rps,
				g->med[1].rps / t->med[1].rps,
				nginx ? " (goal >= 0.5)" : "");
	}
	if (sum != stdout)
		fclose(sum);
	for (m = 0; m < 2; m++)
		errors += g->seq[m].errors + g->med[m].errors;
	if (errors)
		printf("  errors: %lu %lu %lu %lu (the gateway's non-200 answers)\n",
		       g->seq[0].errors, g->seq[1].errors, g->med[0].errors,
		       g->med[1].errors);
	if (write(pfd[1], "q", 1) != 1)
		return 1;
	pthread_join(thr, NULL);
	return errors ? 1 : 0;
}
