/* SPDX-License-Identifier: MIT */
/*
 * The serve role: sglang's native HTTP API on any backend plugin, so a
 * miner (or anything that speaks sglang) can drive engy's own engines.
 *
 *   POST /generate        input_ids or text, sampling_params, rid, stream,
 *                         return_logprob, return_hidden_states, and engy's
 *                         return_gemm_trace (meta_info.gemm)
 *   POST /engy/gemm_open  {"rid": R, "challenge": {...}}: the opening of
 *                         the GEMM trace meta_info.gemm named R
 *   POST /abort_request   {"rid": PREFIX} aborts every open request whose
 *                         rid starts with PREFIX ({"abort_all": true}: all)
 *   GET  /get_model_info  (also /model_info)
 *   GET  /health          200 while the backend answers (also
 *                         /health_generate)
 *
 * Requests run at most max_running at a time (ENGY_SERVE_MAX_RUNNING);
 * up to max_queued (ENGY_SERVE_MAX_QUEUED) more wait in a FIFO; beyond
 * that the answer is sglang's 503 "The request queue is full.".  A
 * running streamed event carries the hidden rows no earlier event had,
 * the others written as [] (a miner can then stream tokens as their rows
 * arrive, and the stream stays O(n) in rows), or with stream_hidden_repeat
 * every row so far as sglang does; either while that is at most
 * stream_hidden_max floats.  The final event has them all.
 * `text` prompts are encoded
 * with the tokenizer of the backend's checkpoint directory (no chat
 * template, like sglang); without one, send input_ids.
 * The log carries rids, counts and timings, never prompt or output.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <engy/plugin.h>
#include <engy/role.h>

#include "config.h"

#include "serve_int.h"
#include "tokenizer.h"

void serve_count(struct serve *s, const char *result)
{
	struct engy_metric *m;
	char labels[64];

	snprintf(labels, sizeof(labels), "result=\"%s\"", result);
	if (!s->h->metric(s->h, ENGY_METRIC_COUNTER,
			  "engy_serve_requests_total",
			  "serve /generate requests by how they ended", labels,
			  NULL, 0, &m))
		s->h->metric_add(m, 1);
}

void serve_reply_error(struct serve *s, struct engy_http_exchange *x,
		       int status, const char *msg)
{
	size_t len;
	char *buf = engy_sgl_error(msg, false, &len);

	if (!buf) {
		s->t->http_reply(s->ti, x, 500, NULL, NULL, NULL, 0);
		return;
	}
	s->t->http_reply(s->ti, x, status, "application/json", NULL, buf, len);
	free(buf);
}

bool serve_model(struct serve *s)
{
	char err[256];
	int rc;

	if (s->have_info)
		return true;
	memset(&s->info, 0, sizeof(s->info));
	s->info.size = sizeof(s->info);
	rc = s->b->info(s->bi, &s->info);
	if (rc < 0) {
		s->h->log(s->h, ENGY_LOG_WARNING,
			  "event=backend_info_failed error=\"%s\"",
			  strerror(-rc));
		return false;
	}
	s->info.name[sizeof(s->info.name) - 1] = '\0';
	s->info.path[sizeof(s->info.path) - 1] = '\0';
	s->have_info = true;
	s->h->log(s->h, ENGY_LOG_INFO,
		  "event=model hidden_size=%u vocab_size=%u max_context=%u",
		  s->info.hidden_size, s->info.vocab_size, s->info.max_context);
	if (!s->info.path[0]) {
		s->h->log(
			s->h, ENGY_LOG_WARNING,
			"event=no_tokenizer reason=\"the backend names no checkpoint "
			"directory\" effect=\"text is empty; text prompts refused\"");
		return true;
	}
	rc = engy_tokenizer_load(s->info.path, &s->tok, err, sizeof(err));
	if (rc < 0)
		s->h->log(
			s->h, ENGY_LOG_WARNING,
			"event=no_tokenizer reason=\"%s\" effect=\"text is empty; "
			"text prompts refused\"",
			err);
	else
		s->h->log(s->h, ENGY_LOG_INFO,
			  "event=tokenizer_loaded vocab=%zu",
			  engy_tokenizer_vocab_size(s->tok));
	return true;
}

static bool is_get(const struct engy_http_request *r)
{
	return strcmp(r->method, "GET") == 0 || strcmp(r->method, "HEAD") == 0;
}

static int h_generate(void *arg, struct engy_http_exchange *x,
		      const struct engy_http_request *r)
{
	if (strcmp(r->path, "/generate") != 0)
		return -ENOENT;
	return serve_generate(arg, x, r);
}

static void h_generate_gone(void *arg, struct engy_http_exchange *x)
{
	serve_gone(arg, x);
}

static int h_abort(void *arg, struct engy_http_exchange *x,
		   const struct engy_http_request *r)
{
	struct serve *s = arg;
	struct engy_sgl_abort a;
	struct sreq *q;
	char err[256];
	size_t plen;
	unsigned n = 0;
	int rc;

	if (strcmp(r->path, "/abort_request") != 0)
		return -ENOENT;
	if (strcmp(r->method, "POST") != 0) {
		serve_reply_error(s, x, 405, "Method Not Allowed (POST)");
		return 0;
	}
	rc = engy_sgl_parse_abort(r->body, r->body_len, &a, err, sizeof(err));
	if (rc) {
		serve_reply_error(s, x, rc == -ENOMEM ? 500 : 400,
				  rc == -ENOMEM ? "out of memory" : err);
		engy_sgl_abort_free(&a);
		return 0;
	}
	/* sglang matches by prefix: req.rid.startswith(rid).  An empty
	 * rid without abort_all names nothing. */
	plen = strlen(a.rid);
	for (q = s->open; q; q = q->next) {
		q->mark = a.abort_all ||
			  (plen && strncmp(q->rid, a.rid, plen) == 0);
		n += q->mark;
	}
	/* Aborting may end requests and start queued ones: rescan. */
	for (;;) {
		for (q = s->open; q && !q->mark; q = q->next)
			;
		if (!q)
			break;
		q->mark = false;
		serve_abort(q, NULL);
	}
	s->h->log(s->h, ENGY_LOG_INFO,
		  "event=abort_request prefix_len=%zu all=%d matched=%u", plen,
		  a.abort_all, n);
	engy_sgl_abort_free(&a);
	s->t->http_reply(s->ti, x, 200, NULL, NULL, NULL, 0);
	return 0;
}

static int h_model_info(void *arg, struct engy_http_exchange *x,
			const struct engy_http_request *r)
{
	struct serve *s = arg;
	const char *path;
	size_t len;
	char *buf;

	if (strcmp(r->path, "/get_model_info") != 0 &&
	    strcmp(r->path, "/model_info") != 0)
		return -ENOENT;
	if (!is_get(r)) {
		serve_reply_error(s, x, 405, "Method Not Allowed (GET)");
		return 0;
	}
	if (!serve_model(s)) {
		serve_reply_error(s, x, 503, "The backend is not ready.");
		return 0;
	}
	path = s->info.path[0] ? s->info.path : s->info.name;
	buf = engy_sgl_model_info(path, path, &len);
	if (!buf)
		return -ENOMEM;
	s->t->http_reply(s->ti, x, 200, "application/json", NULL, buf, len);
	free(buf);
	return 0;
}

static int h_health(void *arg, struct engy_http_exchange *x,
		    const struct engy_http_request *r)
{
	struct serve *s = arg;
	struct engy_model_info info = { .size = sizeof(info) };
	bool up;

	if (strcmp(r->path, "/health") != 0 &&
	    strcmp(r->path, "/health_generate") != 0)
		return -ENOENT;
	if (!is_get(r)) {
		serve_reply_error(s, x, 405, "Method Not Allowed (GET)");
		return 0;
	}
	up = !s->stopping && s->b->info(s->bi, &info) == 0 && serve_model(s);
	s->t->http_reply(s->ti, x, up ? 200 : 503, NULL, NULL, NULL, 0);
	return 0;
}

static const struct engy_http_handler hd_generate = {
	sizeof(hd_generate),
	h_generate,
	h_generate_gone,
};
static int h_gemm_open(void *arg, struct engy_http_exchange *x,
		       const struct engy_http_request *r)
{
	if (strcmp(r->path, "/engy/gemm_open") != 0)
		return -ENOENT;
	return serve_gemm_open(arg, x, r);
}

static void h_gemm_open_gone(void *arg, struct engy_http_exchange *x)
{
	serve_gemm_gone(arg, x);
}

static const struct engy_http_handler hd_gemm_open = {
	sizeof(hd_gemm_open),
	h_gemm_open,
	h_gemm_open_gone,
};
static const struct engy_http_handler hd_abort = { sizeof(hd_abort), h_abort,
						   NULL };
static const struct engy_http_handler hd_info = { sizeof(hd_info), h_model_info,
						  NULL };
static const struct engy_http_handler hd_health = { sizeof(hd_health), h_health,
						    NULL };

static const struct {
	const char *path;
	const struct engy_http_handler *h;
} routes[] = {
	{ "/generate", &hd_generate },
	{ "/abort_request", &hd_abort },
	{ "/get_model_info", &hd_info },
	{ "/model_info", &hd_info },
	{ "/health", &hd_health },
	{ "/health_generate", &hd_health },
	{ "/engy/gemm_open", &hd_gemm_open },
};

/* The role's `serve { ... }` section; the variables are its env twins. */
struct serve_conf {
	int64_t max_running;
	int64_t max_queued;
	int64_t stream_hidden_max;
	bool stream_hidden_repeat;
};

static const struct engy_opt serve_opts[] = {
	{ "max_running", ENGY_OPT_INT, 0,
	  offsetof(struct serve_conf, max_running), "64",
	  "ENGY_SERVE_MAX_RUNNING", 1, 1000000,
	  "requests at the backend at once" },
	{ "max_queued", ENGY_OPT_INT, 0,
	  offsetof(struct serve_conf, max_queued), "1024",
	  "ENGY_SERVE_MAX_QUEUED", 1, 1000000,
	  "requests waiting for a running slot; beyond: 503" },
	{ "stream_hidden_max", ENGY_OPT_INT, 0,
	  offsetof(struct serve_conf, stream_hidden_max), "1048576",
	  "ENGY_SERVE_STREAM_HIDDEN_MAX", 0, 1073741824,
	  "floats of hidden states a running streamed event may carry; past it only the final event has them; 0: final only" },
	{ "stream_hidden_repeat", ENGY_OPT_BOOL, 0,
	  offsetof(struct serve_conf, stream_hidden_repeat), "false",
	  "ENGY_SERVE_STREAM_HIDDEN_REPEAT", 0, 0,
	  "a running streamed event repeats every hidden row so far, as sglang does (O(n^2) bytes); false: only the rows no earlier event had, the others as []" },
	ENGY_OPT_END,
};

static int serve_create(const struct engy_host *h, const void *conf,
			void **inst)
{
	struct serve *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->h = h;
	s->c = conf;
	s->qtail = &s->qhead;
	*inst = s;
	return 0;
}

/* The first http transport with everything serve needs, and a backend. */
static int serve_wire(struct serve *s)
{
	struct engy_peer_info pi = { .size = sizeof(pi) };
	bool have_t = false, have_b = false;
	size_t i;

	for (i = 0; s->h->peer_at(s->h, i, &pi) == 0; i++) {
		const struct engy_transport_ops *t = pi.ops;

		if (!have_t && pi.kind == ENGY_KIND_TRANSPORT && t &&
		    t->proto && strcmp(t->proto, "http") == 0 &&
		    t->http_route && t->http_reply && t->http_stream_begin &&
		    t->http_stream_write && t->http_stream_end) {
			s->t = t;
			s->ti = pi.inst;
			s->t_name = pi.instance;
			have_t = true;
		} else if (!have_b && pi.kind == ENGY_KIND_BACKEND) {
			s->b = pi.ops;
			s->bi = pi.inst;
			s->b_name = pi.instance;
			have_b = true;
		}
	}
	if (!have_t || !have_b) {
		s->h->log(
			s->h, ENGY_LOG_ERR, "event=serve_unwired reason=\"%s\"",
			have_t ? "no backend"
			       : "no transport with proto http (transport-http)");
		return -EINVAL;
	}
	return 0;
}

static int serve_start(void *inst)
{
	struct serve *s = inst;
	const struct serve_conf *sc = s->c;
	size_t i;
	int rc;

	rc = serve_wire(s);
	if (rc)
		return rc;
	s->max_running = (unsigned)sc->max_running;
	s->max_queued = (unsigned)sc->max_queued;
	s->stream_hidden_max = (size_t)sc->stream_hidden_max;
	s->stream_hidden_repeat = sc->stream_hidden_repeat;
	s->h->metric(s->h, ENGY_METRIC_GAUGE, "engy_serve_running",
		     "serve requests at the backend", NULL, NULL, 0,
		     &s->m_running);
	s->h->metric(s->h, ENGY_METRIC_GAUGE, "engy_serve_queued",
		     "serve requests waiting for a running slot", NULL, NULL, 0,
		     &s->m_queued);
	s->h->metric(s->h, ENGY_METRIC_COUNTER,
		     "engy_serve_completion_tokens_total",
		     "tokens generated for serve requests", NULL, NULL, 0,
		     &s->m_tokens);
	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		rc = s->t->http_route(s->ti, routes[i].path, routes[i].h, s);
		if (rc < 0) {
			s->h->log(s->h, ENGY_LOG_ERR,
				  "event=route_failed path=%s error=\"%s\"",
				  routes[i].path, strerror(-rc));
			return rc;
		}
	}
	serve_model(s);
	s->h->log(
		s->h, ENGY_LOG_INFO,
		"event=serve_ready transport=%s backend=%s max_running=%u max_queued=%u",
		s->t_name, s->b_name, s->max_running, s->max_queued);
	return 0;
}

static void serve_stop(void *inst)
{
	struct serve *s = inst;

	s->stopping = true;
	s->h->log(s->h, ENGY_LOG_INFO,
		  "event=serve_stopping open=%u running=%u queued=%u",
		  s->n_open, s->n_running, s->n_queued);
}

static unsigned serve_inflight(void *inst)
{
	struct serve *s = inst;

	return s->n_open + s->n_opens;
}

static void serve_destroy(void *inst)
{
	struct serve *s = inst;

	/* Past the drain deadline: what is left goes without callbacks
	 * (the loop has stopped; backends fire none from destroy). */
	while (s->open)
		serve_req_free(s->open);
	serve_gemm_free_all(s);
	engy_tokenizer_free(s->tok);
	free(s);
}

static const struct engy_role_need serve_needs[] = {
	{ ENGY_KIND_TRANSPORT, 1, 0,
	  "an http transport (transport-http) for sglang's API" },
	{ ENGY_KIND_BACKEND, 1, 0, "the engine that generates" },
	{ 0, 0, 0, NULL },
};

static const struct engy_role_ops serve_role_ops = {
	.size = sizeof(struct engy_role_ops),
	.needs = serve_needs,
	.inflight = serve_inflight,
};

ENGY_PLUGIN(.kind = ENGY_KIND_ROLE, .name = "role-serve",
	    .version = PACKAGE_VERSION,
	    .description =
		    "sglang's native HTTP API (/generate, /abort_request, ...) on a backend",
	    .opts = serve_opts, .conf_size = sizeof(struct serve_conf),
	    .create = serve_create, .start = serve_start, .stop = serve_stop,
	    .destroy = serve_destroy, .ops = &serve_role_ops);
