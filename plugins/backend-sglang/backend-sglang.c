/* SPDX-License-Identifier: MIT */
/*
 * backend-sglang: the miner's (and an auditor's) client of local sglang
 * serves, as specs/protocol.md §4 drives them: /generate with input_ids, an
 * explicit rid, hidden states and logprobs; generations longer than
 * gen_chunk cut into calls with the one-token overlap; streamed events
 * coalesced for stream_flush_s before on_tokens; cancel as
 * /abort_request; several serves chosen least-in-flight.  Everything runs
 * on the host's loop (libcurl multi on libevent): no thread per request.
 */
#include <curl/curl.h>
#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include <engy/backend.h>
#include <engy/plugin.h>

#include "checkfmt.h"
#include "config.h"
#include "sgl.h"
#include "sgl_http.h"

#define OFF(f) offsetof(struct sgl_conf, f)

static const struct engy_opt sgl_opts[] = {
	{ "serve_urls", ENGY_OPT_STR_LIST, 0, OFF(serve_urls),
	  "http://127.0.0.1:8000", "SERVE_URL", 0, 0,
	  "sglang serves (the public miner's --serve-url; comma-separated in "
	  "SERVE_URL), least-in-flight" },
	{ "checkpoint", ENGY_OPT_STR, 0, OFF(checkpoint), NULL, "CHECKPOINT", 0,
	  0,
	  "checkpoint directory (the public miner's --checkpoint): "
	  "config.json gives the model's sizes" },
	{ "api_key", ENGY_OPT_STR, ENGY_OPT_SECRET, OFF(api_key), NULL,
	  "ENGY_SERVE_API_KEY", 0, 0,
	  "bearer key of a serve started with --api-key" },
	{ "gen_chunk", ENGY_OPT_INT, 0, OFF(gen_chunk), "4096",
	  "TOPLOC_GEN_CHUNK", 1, 1 << 20,
	  "most new tokens asked of one /generate call" },
	{ "stream", ENGY_OPT_BOOL, 0, OFF(stream), "true", NULL, 0, 0,
	  "stream from the serve (tokens as they come); false: per call" },
	{ "stream_flush_s", ENGY_OPT_FLOAT, 0, OFF(stream_flush_s), "0.05",
	  "STREAM_FLUSH_S", 0, 0,
	  "seconds streamed tokens are coalesced before on_tokens" },
	{ "max_request_s", ENGY_OPT_FLOAT, 0, OFF(max_request_s), "1800",
	  "MAX_REQUEST_S", 0, 0,
	  "a whole generation's time limit at the serve" },
	{ "serve_http_s", ENGY_OPT_FLOAT, 0, OFF(serve_http_s), "0",
	  "SERVE_HTTP_S", 0, 0,
	  "one /generate call's time limit (0: max_request_s)" },
	{ "connect_timeout_s", ENGY_OPT_FLOAT, 0, OFF(connect_timeout_s), "10",
	  NULL, 0, 0, "seconds to connect to a serve" },
	{ "max_inflight", ENGY_OPT_INT, 0, OFF(max_inflight), "64",
	  "MAX_INFLIGHT", 1, 65536,
	  "requests in flight at most (-EBUSY after)" },
	{ "gemm_trace", ENGY_OPT_BOOL, 0, OFF(gemm_trace), "true", NULL, 0, 0,
	  "ask the serve for a GEMM audit trace when a request wants one "
	  "(return_gemm_trace, specs/serve.md; such a generation is one "
	  "call); false for a serve that refuses unknown fields" },
	ENGY_OPT_END
};

static bool url_ok(const char *u)
{
	return (strncmp(u, "http://", 7) == 0 && u[7]) ||
	       (strncmp(u, "https://", 8) == 0 && u[8]);
}

static int bad(const struct engy_host *host, const char *opt, const char *why)
{
	engy_err(host, "event=config_invalid option=%s reason=\"%s\"", opt,
		 why);
	return -EINVAL;
}

static int check_conf(const struct engy_host *host, const struct sgl_conf *c)
{
	size_t i;

	if (!c->serve_urls.n)
		return bad(host, "serve_urls", "no serve");
	for (i = 0; i < c->serve_urls.n; i++)
		if (!url_ok(c->serve_urls.v[i]) ||
		    strlen(c->serve_urls.v[i]) > 900)
			return bad(host, "serve_urls",
				   "each must be an http:// or https:// URL");
	{
		size_t joined = 0;

		for (i = 0; i < c->serve_urls.n; i++)
			joined += strlen(c->serve_urls.v[i]) + (i > 0);
		if (joined >= sizeof(((struct engy_model_info *)0)->serve_urls))
			return bad(
				host, "serve_urls",
				"at most 1023 characters in all (info() reports them)");
	}
	if (c->gen_chunk < 1 || c->gen_chunk > (1 << 20))
		return bad(host, "gen_chunk", "must be 1..1048576");
	if (!(c->stream_flush_s >= 0 && c->stream_flush_s <= 10))
		return bad(host, "stream_flush_s", "must be 0..10");
	if (!(c->max_request_s > 0 && c->max_request_s <= 86400 * 7))
		return bad(host, "max_request_s", "must be > 0 (seconds)");
	if (!(c->serve_http_s >= 0 && c->serve_http_s <= 86400 * 7))
		return bad(host, "serve_http_s", "must be >= 0 (seconds)");
	if (!(c->connect_timeout_s > 0 && c->connect_timeout_s <= 3600))
		return bad(host, "connect_timeout_s", "must be > 0 (seconds)");
	if (c->max_inflight < 1 || c->max_inflight > 65536)
		return bad(host, "max_inflight", "must be 1..65536");
	return 0;
}

static void sgl_destroy(void *inst);

static int sgl_create(const struct engy_host *host, const void *conf,
		      void **inst)
{
	const struct sgl_conf *c = conf;
	struct sgl *s;
	size_t i, n;
	int rc;

	*inst = NULL;
	rc = check_conf(host, c);
	if (rc)
		return rc;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		engy_err(host, "event=curl_init_failed");
		return -ENOMEM;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		curl_global_cleanup();
		return -ENOMEM;
	}
	s->host = host;
	s->info.size = sizeof(s->info);
	s->gen_chunk = (uint32_t)c->gen_chunk;
	s->stream = c->stream;
	s->flush_s = c->stream_flush_s;
	s->max_request_s = c->max_request_s;
	s->serve_http_s = c->serve_http_s;
	s->connect_s = c->connect_timeout_s;
	s->max_inflight = (unsigned)c->max_inflight;
	s->gemm_on = c->gemm_trace;
	s->serves = calloc(c->serve_urls.n, sizeof(*s->serves));
	s->serve_urls = calloc(c->serve_urls.n, sizeof(*s->serve_urls));
	if (!s->serves || !s->serve_urls)
		goto oom;
	for (i = 0; i < c->serve_urls.n; i++) {
		s->serves[i].url = strdup(c->serve_urls.v[i]);
		s->serve_urls[i] = strdup(c->serve_urls.v[i]);
		if (!s->serves[i].url || !s->serve_urls[i]) {
			free(s->serve_urls[i]);
			free(s->serves[i].url);
			goto oom;
		}
		s->n_serves++;
		n = strlen(s->serves[i].url);
		while (n > 8 && s->serves[i].url[n - 1] == '/')
			s->serves[i].url[--n] = '\0';
	}
	if (c->api_key && c->api_key[0]) {
		s->api_key = strdup(c->api_key);
		if (!s->api_key)
			goto oom;
	}
	if (c->checkpoint && c->checkpoint[0]) {
		rc = sgl_info_checkpoint(s, c->checkpoint);
		if (rc) {
			sgl_destroy(s);
			return rc;
		}
	}
	*inst = s;
	return 0;
oom:
	sgl_destroy(s);
	return -ENOMEM;
}

static int sgl_start(void *inst)
{
	struct sgl *s = inst;
	const struct engy_host *h = s->host;
	int rc;

	s->base = h->evbase(h);
	if (!s->base)
		return -EINVAL;
	rc = sgl_http_new(s->base, &s->http);
	if (rc)
		return rc;
	h->metric(h, ENGY_METRIC_COUNTER, "engy_sglang_requests_total",
		  "generate and prefill requests sent to sglang serves", NULL,
		  NULL, 0, &s->m_requests);
	h->metric(h, ENGY_METRIC_COUNTER, "engy_sglang_errors_total",
		  "requests that ended in an error", NULL, NULL, 0,
		  &s->m_errors);
	h->metric(h, ENGY_METRIC_COUNTER, "engy_sglang_calls_total",
		  "/generate calls (a chunked generation makes several)", NULL,
		  NULL, 0, &s->m_calls);
	h->metric(h, ENGY_METRIC_GAUGE, "engy_sglang_inflight",
		  "requests in flight at the serves", NULL, NULL, 0,
		  &s->m_inflight);
	rc = sgl_info_start(s);
	if (rc)
		return rc;
	s->started = true;
	engy_info(h, "event=started serves=%zu gen_chunk=%u stream=%s",
		  s->n_serves, s->gen_chunk, s->stream ? "true" : "false");
	return 0;
}

static void sgl_stop(void *inst)
{
	struct sgl *s = inst;

	s->stopped = true;
	if (s->http)
		sgl_info_stop(s);
}

static void sgl_destroy(void *inst)
{
	struct sgl *s = inst;
	size_t i;

	if (!s)
		return;
	while (s->gens)
		sgl_gen_drop(s->gens);
	sgl_gemm_drop_all(s);
	if (s->http)
		sgl_info_stop(s);
	if (s->info_timer)
		event_free(s->info_timer);
	sgl_http_free(s->http);
	for (i = 0; i < s->n_serves; i++) {
		free(s->serves[i].url);
		free(s->serve_urls[i]);
	}
	free(s->serves);
	free(s->serve_urls);
	if (s->api_key)
		explicit_bzero(s->api_key, strlen(s->api_key));
	free(s->api_key);
	free(s);
	curl_global_cleanup();
}

static int sgl_info(void *inst, struct engy_model_info *out)
{
	struct sgl *s = inst;
	uint32_t size = out->size;
	size_t i, len = 0;

	if (!size || size > sizeof(*out))
		size = sizeof(*out);
	if (!s->info_ckpt && !s->info_serve) {
		/* no checkpoint, no serve answer yet: only the serves */
		memset(out, 0, size);
		out->size = size;
	} else {
		memcpy(out, &s->info, size);
		out->size = size;
	}
	if (size >= offsetof(struct engy_model_info, serve_urls) +
			    sizeof(out->serve_urls)) {
		out->serve_urls[0] = '\0';
		for (i = 0; i < s->n_serves; i++) {
			int n = snprintf(out->serve_urls + len,
					 sizeof(out->serve_urls) - len, "%s%s",
					 i ? "," : "", s->serve_urls[i]);

			if (n < 0 ||
			    (size_t)n >= sizeof(out->serve_urls) - len) {
				out->serve_urls[len] = '\0';
				break;
			}
			len += (size_t)n;
		}
	}
	/* sglang's /generate (and engy's serve on backend-ref) take
	 * sampling_params.json_schema; nothing around it (no forced tool
	 * call's template) */
	if (size >= offsetof(struct engy_model_info, constraints) +
			    sizeof(out->constraints))
		out->constraints = ENGY_BACKEND_CONS_JSON;
	/* sglang's top_logprobs_num (output_top_logprobs) */
	if (size >= offsetof(struct engy_model_info, caps) + sizeof(out->caps))
		out->caps = ENGY_BACKEND_CAP_TOP_LOGPROBS;
	return s->info_ckpt || s->info_serve ? 0 : -EAGAIN;
}

static int sgl_op_generate(void *inst, const struct engy_gen_params *p,
			   const struct engy_gen_cb *cb, void *arg,
			   struct engy_gen **out)
{
	return sgl_generate(inst, p, cb, arg, (struct sgl_gen **)out);
}

static void sgl_op_cancel(void *inst, struct engy_gen *g)
{
	if (g)
		sgl_cancel((struct sgl_gen *)g);
}

static int sgl_op_prefill(void *inst, const uint32_t *ids, size_t n,
			  void (*done)(void *arg, int rc,
				       const struct engy_rows *rows),
			  void *arg, struct engy_gen **out)
{
	return sgl_prefill(inst, ids, n, done, arg, (struct sgl_gen **)out);
}

/*
 * The check op (engyd -t, engyctl doctor): the serves, probed with the
 * api_key, and the checkpoint directory when one is set.  Reads the conf.
 */
static int sgl_check(const struct engy_host *h, const void *conf, void *inst,
		     const struct engy_check_sink *sink)
{
	const struct sgl_conf *c = conf;
	struct engy_check_buf b;
	size_t i, k = 0;
	int rc;

	(void)inst;
	engy_check_begin(&b, "serve", ENGY_PROBE_SERVE);
	for (i = 0; i < c->serve_urls.n; i++)
		k += (size_t)snprintf(
			b.target + k,
			k < sizeof(b.target) ? sizeof(b.target) - k : 0, "%s%s",
			i ? "," : "", c->serve_urls.v[i]);
	engy_check_source(h, "serve_urls", &b);
	b.c.secret = c->api_key;
	if (!c->serve_urls.n) {
		ENGY_CHECK_SET(&b, problem, "no serve");
		ENGY_CHECK_SET(&b, fix,
			       "set SERVE_URL (or --serve-url) to the "
			       "sglang serve, e.g. http://127.0.0.1:8000");
	}
	if ((rc = engy_check_add(sink, &b)) < 0)
		return rc;
	return engy_check_add_checkpoint(h, sink, "checkpoint", c->checkpoint);
}

static const struct engy_backend_ops sgl_ops = {
	.size = sizeof(struct engy_backend_ops),
	.info = sgl_info,
	.generate = sgl_op_generate,
	.cancel = sgl_op_cancel,
	.prefill = sgl_op_prefill,
	.gemm_commit = sgl_gemm_commit,
	.gemm_open = sgl_gemm_open,
};

ENGY_PLUGIN(.kind = ENGY_KIND_BACKEND, .name = "backend-sglang",
	    .version = PACKAGE_VERSION,
	    .description = "sglang serves over HTTP: tokens, hidden states, "
			   "logprobs; chunked, streamed, abortable",
	    .opts = sgl_opts, .conf_size = sizeof(struct sgl_conf),
	    .create = sgl_create, .start = sgl_start, .stop = sgl_stop,
	    .destroy = sgl_destroy, .ops = &sgl_ops, .check = sgl_check, );
