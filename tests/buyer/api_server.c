/* SPDX-License-Identifier: MIT */
/*
 * A small test-only HTTP server (libevent evhttp) that answers the
 * official SDKs through the buyer API library, with scripted miner output
 * standing in for a miner, so tests/integration/buyer_sdk.sh can run the
 * SDKs before the gateway exists.
 *
 * usage: api_server SCENARIOS.json [max_body_bytes]
 *   prints "listening port=N", then one line per request (method, path,
 *   scenario, status; never content).
 *
 * Routes: GET /v1/models[/ID], POST /v1/chat/completions, POST
 * /v1/messages (anthropic-version required), POST
 * /v1/messages/count_tokens.  Keys: sk-good passes, sk-broke is out of
 * credits (402), sk-quota is rate limited for good (429 with
 * x-should-retry: false), anything else is refused (401).  The model is
 * "engy-test" (4096 output tokens at most).  The header x-engy-scenario
 * picks the miner frames to replay from SCENARIOS.json; "status:NNN"
 * answers NNN (retry-after-ms: 1); "echo" answers with the miner body the
 * request became as the content.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "anth.h"
#include "oai.h"

#define MODEL "engy-test"

static cJSON *scenarios;
static size_t max_body = 1 << 20;
static struct event_base *base;

struct sreq {
	struct evhttp_request *req;
	struct event *tick;
	struct engy_api_req areq;
	const cJSON *frames;
	cJSON *owned; /* frames made here (echo) */
	int next;
	char id[48];
	struct engy_oai_stream os;
	struct engy_anth_stream as;
	struct engy_sse_out out;
};

static const char *hdr(struct evhttp_request *req, const char *name)
{
	return evhttp_find_header(evhttp_request_get_input_headers(req), name);
}

static void set_hdr(struct evhttp_request *req, const char *k, const char *v)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), k, v);
}

static void logline(struct evhttp_request *req, const char *scn, int status)
{
	printf("request method=%s path=%s scenario=%s status=%d\n",
	       evhttp_request_get_command(req) == EVHTTP_REQ_GET ? "GET"
								 : "POST",
	       evhttp_request_get_uri(req), scn ? scn : "-", status);
	fflush(stdout);
}

static void send_json(struct evhttp_request *req, int status, const char *body,
		      size_t len)
{
	struct evbuffer *b = evbuffer_new();

	set_hdr(req, "Content-Type", "application/json");
	evbuffer_add(b, body, len);
	evhttp_send_reply(req, status, engy_apierr_reason(status), b);
	evbuffer_free(b);
}

static void send_error(struct evhttp_request *req, enum engy_api api,
		       int status, const char *msg, const char *scn)
{
	struct engy_apierr e = { .status = status,
				 .message = msg,
				 .request_id = "req_test" };
	char param[96];
	size_t len;
	char *body;

	engy_apierr_param_of(msg, param, sizeof(param));
	e.param = param;
	if (status == 429 || status >= 500)
		set_hdr(req, "retry-after-ms", "1");
	body = engy_apierr_body(api, &e, &len);
	logline(req, scn, status);
	send_json(req, status, body, len);
	free(body);
}

static void sreq_free(struct sreq *s)
{
	if (s->tick)
		event_free(s->tick);
	engy_api_req_free(&s->areq);
	engy_oai_stream_free(&s->os);
	engy_anth_stream_free(&s->as);
	engy_sse_out_free(&s->out);
	cJSON_Delete(s->owned);
	free(s);
}

/* The `response` frame's output, or its error.  Returns 0 or the status
 * to answer with (502). */
static int result_of(const cJSON *frame, struct engy_api_result *r,
		     const char **why)
{
	static char err[256];
	const cJSON *e = cJSON_GetObjectItem(frame, "error");

	if (cJSON_IsString(e)) {
		*why = e->valuestring;
		return 502;
	}
	if (engy_api_result_parse(cJSON_GetObjectItem(frame, "output"), r, err,
				  sizeof(err))) {
		*why = err;
		return 502;
	}
	return 0;
}

static void flush_out(struct sreq *s)
{
	struct evbuffer *b;

	if (!s->out.len)
		return;
	b = evbuffer_new();
	evbuffer_add(b, s->out.buf, s->out.len);
	evhttp_send_reply_chunk(s->req, b);
	evbuffer_free(b);
	engy_sse_out_reset(&s->out);
}

/* One miner frame per tick: what a gateway does as frames arrive. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct sreq *s = arg;
	bool anth = s->areq.api == ENGY_API_ANTHROPIC, done = false;
	const cJSON *f = cJSON_GetArrayItem(s->frames, s->next++);
	struct timeval tv = { 0, 2000 };
	struct engy_api_result r;
	const char *type, *why = NULL;

	type = f ? cJSON_GetStringValue(cJSON_GetObjectItem(f, "type")) : NULL;
	if (type && strcmp(type, "chunk") == 0) {
		if (anth)
			engy_anth_stream_delta(&s->as,
					       cJSON_GetObjectItem(f, "delta"),
					       &s->out);
		else
			engy_oai_stream_delta(&s->os,
					      cJSON_GetObjectItem(f, "delta"),
					      &s->out);
	} else if (type && strcmp(type, "response") == 0) {
		int st = result_of(f, &r, &why);

		if (st) {
			struct engy_apierr e = { .status = st, .message = why };

			engy_apierr_sse(&s->out, s->areq.api, &e);
		} else {
			if (anth)
				engy_anth_stream_finish(&s->as, &r, &s->out);
			else
				engy_oai_stream_finish(&s->os, &r, &s->out);
			engy_api_result_free(&r);
		}
		done = true;
	} else {
		done = true;
	}
	flush_out(s);
	if (!done) {
		event_add(s->tick, &tv);
		return;
	}
	evhttp_connection_set_closecb(evhttp_request_get_connection(s->req),
				      NULL, NULL);
	evhttp_send_reply_end(s->req);
	sreq_free(s);
}

static void on_close(struct evhttp_connection *c, void *arg)
{
	struct sreq *s = arg;

	printf("closed early\n");
	fflush(stdout);
	sreq_free(s);
}

static void start_stream(struct sreq *s)
{
	bool anth = s->areq.api == ENGY_API_ANTHROPIC;
	struct timeval tv = { 0, 2000 };

	set_hdr(s->req, "Content-Type", "text/event-stream");
	set_hdr(s->req, "Cache-Control", "no-cache");
	set_hdr(s->req, "X-Accel-Buffering", "no");
	evhttp_send_reply_start(s->req, 200, "OK");
	evhttp_connection_set_closecb(evhttp_request_get_connection(s->req),
				      on_close, s);
	if (anth) {
		engy_anth_stream_init(&s->as, &s->areq, s->id);
		/* What a gateway sends the moment it has dispatched. */
		engy_anth_stream_start(&s->as, 0, &s->out);
	} else {
		engy_oai_stream_init(&s->os, &s->areq, s->id, 0);
		engy_oai_stream_start(&s->os, &s->out);
		engy_api_keepalive(&s->out, ENGY_API_OPENAI);
	}
	flush_out(s);
	s->tick = evtimer_new(base, on_tick, s);
	event_add(s->tick, &tv);
}

static void answer_once(struct sreq *s, const char *scn)
{
	const cJSON *f, *last = NULL;
	struct engy_api_result r;
	const char *why = NULL;
	int st;

	cJSON_ArrayForEach(f, s->frames) last = f;
	st = result_of(last, &r, &why);
	if (st) {
		send_error(s->req, s->areq.api, st, why, scn);
		sreq_free(s);
		return;
	}
	if (s->areq.api == ENGY_API_ANTHROPIC)
		engy_anth_response(&s->out, &s->areq, s->id, &r);
	else
		engy_oai_response(&s->out, &s->areq, s->id, 0, &r);
	engy_api_result_free(&r);
	logline(s->req, scn, 200);
	send_json(s->req, 200, s->out.buf, s->out.len);
	sreq_free(s);
}

/* The echo scenario: one response whose content is the miner body. */
static cJSON *echo_frames(const struct engy_api_req *q)
{
	cJSON *info = cJSON_CreateObject(), *frames, *resp, *msg, *out,
	      *choices, *ch;
	char *text;

	cJSON_AddItemToObject(info, "body", cJSON_Duplicate(q->body, true));
	cJSON_AddBoolToObject(info, "stream", q->stream);
	cJSON_AddBoolToObject(info, "include_usage", q->include_usage);
	cJSON_AddBoolToObject(info, "show_reasoning", q->show_reasoning);
	text = cJSON_PrintUnformatted(info);
	cJSON_Delete(info);
	frames = cJSON_CreateArray();
	resp = cJSON_CreateObject();
	cJSON_AddItemToArray(frames, resp);
	cJSON_AddStringToObject(resp, "type", "response");
	out = cJSON_AddObjectToObject(resp, "output");
	choices = cJSON_AddArrayToObject(out, "choices");
	ch = cJSON_CreateObject();
	cJSON_AddItemToArray(choices, ch);
	cJSON_AddStringToObject(ch, "finish_reason", "stop");
	msg = cJSON_AddObjectToObject(ch, "message");
	cJSON_AddStringToObject(msg, "content", text);
	free(text);
	return frames;
}

static bool authorized(struct evhttp_request *req, enum engy_api api,
		       const char *scn)
{
	char err[128];
	const char *key;
	size_t len;

	if (engy_api_key(hdr(req, "Authorization"), hdr(req, "x-api-key"), &key,
			 &len, err, sizeof(err))) {
		send_error(req, api, 401, err, scn);
		return false;
	}
	if (len == 7 && strncmp(key, "sk-good", 7) == 0)
		return true;
	if (len == 8 && strncmp(key, "sk-broke", 8) == 0) {
		send_error(req, api, 402, "insufficient credits: top up", scn);
		return false;
	}
	if (len == 8 && strncmp(key, "sk-quota", 8) == 0) {
		set_hdr(req, "x-should-retry", "false");
		send_error(req, api, 429, "quota exhausted for today", scn);
		return false;
	}
	send_error(req, api, 401, "invalid API key", scn);
	return false;
}

static void models(struct evhttp_request *req, const char *path)
{
	struct engy_api_model_info m = { .id = MODEL,
					 .created = 1767225600,
					 .display_name = "Engy Test",
					 .context_length = 32768,
					 .max_output_tokens = 4096 };
	struct engy_sse_out o;

	engy_sse_out_init(&o);
	if (strcmp(path, "/v1/models") == 0) {
		engy_api_models_json(&o, &m, 1);
	} else if (strcmp(path, "/v1/models/" MODEL) == 0) {
		engy_api_model_json(&o, &m);
	} else {
		engy_sse_out_free(&o);
		send_error(req,
			   hdr(req, "anthropic-version") ? ENGY_API_ANTHROPIC
							 : ENGY_API_OPENAI,
			   404, "model: no such model", NULL);
		return;
	}
	logline(req, NULL, 200);
	send_json(req, 200, o.buf, o.len);
	engy_sse_out_free(&o);
}

/* Checks and parses a POST; 0 or the status already answered. */
static int take(struct evhttp_request *req, enum engy_api api, bool count,
		const char *scn, struct sreq *s)
{
	struct engy_api_limits lim = { .max_body_bytes = max_body };
	struct engy_api_model model = { .max_output_tokens = 4096,
					.default_max_tokens = 1024 };
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	const char *body;
	char err[256];
	size_t len;
	int rc;

	if (!authorized(req, api, scn))
		return 401;
	if (api == ENGY_API_ANTHROPIC &&
	    engy_anth_check_version(hdr(req, "anthropic-version"), err,
				    sizeof(err))) {
		send_error(req, api, 400, err, scn);
		return 400;
	}
	if (scn && strncmp(scn, "status:", 7) == 0) {
		send_error(req, api, atoi(scn + 7), "scripted failure", scn);
		return atoi(scn + 7);
	}
	len = evbuffer_get_length(in);
	body = (const char *)evbuffer_pullup(in, -1);
	if (api == ENGY_API_OPENAI)
		rc = engy_oai_parse(body, len, &lim, &s->areq, err,
				    sizeof(err));
	else
		rc = engy_anth_parse(body, len, &lim,
				     count ? ENGY_ANTH_COUNT_TOKENS : 0,
				     &s->areq, err, sizeof(err));
	if (!rc && strcmp(s->areq.model, MODEL)) {
		rc = -ENOENT;
		snprintf(err, sizeof(err), "model: no such model");
	}
	if (!rc)
		rc = engy_api_req_apply(&s->areq, &model, err, sizeof(err));
	if (rc) {
		send_error(req, api, engy_api_status(rc), err, scn);
		return engy_api_status(rc);
	}
	return 0;
}

static void post(struct evhttp_request *req, const char *path)
{
	const char *scn = hdr(req, "x-engy-scenario");
	bool count = strcmp(path, "/v1/messages/count_tokens") == 0;
	enum engy_api api;
	struct sreq *s;

	if (strcmp(path, "/v1/chat/completions") == 0) {
		api = ENGY_API_OPENAI;
	} else if (strcmp(path, "/v1/messages") == 0 || count) {
		api = ENGY_API_ANTHROPIC;
	} else {
		send_error(req, ENGY_API_OPENAI, 404, "no such route", scn);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		abort();
	s->req = req;
	engy_sse_out_init(&s->out);
	if (take(req, api, count, scn, s)) {
		sreq_free(s);
		return;
	}
	set_hdr(req, api == ENGY_API_OPENAI ? "x-request-id" : "request-id",
		"req_test");
	if (count) {
		engy_anth_count_json(&s->out, 7 * s->areq.n_messages);
		logline(req, scn, 200);
		send_json(req, 200, s->out.buf, s->out.len);
		sreq_free(s);
		return;
	}
	engy_api_new_id(s->id, sizeof(s->id),
			api == ENGY_API_OPENAI ? "chatcmpl-" : "msg_");
	if (scn && strcmp(scn, "echo") == 0)
		s->frames = s->owned = echo_frames(&s->areq);
	else
		s->frames = cJSON_GetObjectItem(scenarios, scn ? scn : "hello");
	if (!cJSON_IsArray(s->frames)) {
		send_error(req, api, 400, "x-engy-scenario: unknown", scn);
		sreq_free(s);
	} else if (!s->areq.stream) {
		answer_once(s, scn);
	} else {
		logline(req, scn, 200);
		start_stream(s);
	}
}

static void handle(struct evhttp_request *req, void *arg)
{
	const char *uri = evhttp_request_get_uri(req);
	char path[256];
	size_t n = strcspn(uri, "?");

	snprintf(path, sizeof(path), "%.*s", (int)(n < 255 ? n : 255), uri);
	if (evhttp_request_get_command(req) == EVHTTP_REQ_GET &&
	    strncmp(path, "/v1/models", 10) == 0)
		models(req, path);
	else if (evhttp_request_get_command(req) == EVHTTP_REQ_POST)
		post(req, path);
	else
		send_error(req, ENGY_API_OPENAI, 404, "no such route", NULL);
}

static void on_term(evutil_socket_t fd, short what, void *arg)
{
	event_base_loopexit(base, NULL);
}

int main(int argc, char **argv)
{
	struct event *term;
	struct evhttp_bound_socket *bs;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	struct evhttp *http;
	FILE *f;
	char *text;
	long n;

	if (argc < 2) {
		fprintf(stderr, "usage: api_server SCENARIOS.json "
				"[max_body_bytes]\n");
		return 2;
	}
	if (argc > 2)
		max_body = (size_t)atol(argv[2]);
	f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		perror(argv[1]);
		return 1;
	}
	text = malloc((size_t)n + 1);
	if (!text || fread(text, 1, (size_t)n, f) != (size_t)n) {
		perror(argv[1]);
		return 1;
	}
	fclose(f);
	text[n] = '\0';
	scenarios = cJSON_Parse(text);
	free(text);
	if (!cJSON_IsObject(scenarios)) {
		fprintf(stderr, "%s: not a JSON object\n", argv[1]);
		return 1;
	}
	base = event_base_new();
	http = evhttp_new(base);
	evhttp_set_max_body_size(http, 64 << 20);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
	evhttp_set_gencb(http, handle, NULL);
	bs = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
	if (!bs || getsockname(evhttp_bound_socket_get_fd(bs),
			       (struct sockaddr *)&sa, &sl)) {
		perror("bind");
		return 1;
	}
	/* SIGTERM ends the loop, so leak checkers see a clean exit. */
	term = evsignal_new(base, SIGTERM, on_term, NULL);
	event_add(term, NULL);
	printf("listening port=%u\n", ntohs(sa.sin_port));
	fflush(stdout);
	event_base_dispatch(base);
	event_free(term);
	evhttp_free(http);
	event_base_free(base);
	cJSON_Delete(scenarios);
	return 0;
}
