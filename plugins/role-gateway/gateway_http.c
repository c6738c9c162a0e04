/* SPDX-License-Identifier: MIT */
/*
 * The buyer endpoints on transport-http (specs/buyer-api.md,
 * specs/gateway.md):
 *
 *   POST /v1/chat/completions      OpenAI, plain or SSE
 *   POST /v1/responses             OpenAI Responses, plain or SSE
 *   POST /v1/completions           OpenAI legacy completions
 *   POST /v1/messages              Anthropic (anthropic-version required)
 *   POST /v1/messages/count_tokens Anthropic, the prompt's count
 *   GET  /v1/models[/ID]           both SDKs' shapes in one list
 *
 * A request is taken here (key from Authorization: Bearer or x-api-key,
 * hashed at once; the body copied) and handed to the request driver
 * (gateway_req.c): checked and reserved on the pool, routed, relayed.
 * What goes back to the buyer is written by gateway_reply.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway_int.h"

/* ---- /v1/models ----------------------------------------------------- */

/* The list comes from the store on the pool; the exchange is tracked as
 * a request so a buyer who leaves meanwhile is noticed (h_gone). */
struct models_job {
	struct gw_req *r;
	char id[128]; /* "" for the list */
	struct engy_model *m;
	size_t n;
	int rc;
};

static void models_fn(void *arg)
{
	struct models_job *j = arg;
	struct gw *g = j->r->g;

	j->rc = g->st->model_list(g->sti, &j->m, &j->n);
}

static void coded_error(struct gw *g, struct engy_http_exchange *x,
			enum engy_api api, int status, const char *msg,
			const char *code)
{
	struct engy_apierr e = { .status = status,
				 .message = msg,
				 .code = code };
	size_t len;
	char *body = engy_apierr_body(api, &e, &len);

	g->t->http_reply(g->ti, x, status, "application/json", NULL, body,
			 body ? len : 0);
	free(body);
}

static void simple_error(struct gw *g, struct engy_http_exchange *x,
			 enum engy_api api, int status, const char *msg)
{
	coded_error(g, x, api, status, msg, NULL);
}

static void models_done(void *arg, int rc)
{
	struct models_job *j = arg;
	struct gw_req *r = j->r;
	struct engy_api_model_info *info = NULL;
	struct engy_sse_out o;
	size_t i, n = 0;
	int status = 200;

	engy_sse_out_init(&o);
	if (rc < 0 || j->rc < 0) {
		status = 503;
		goto out;
	}
	info = calloc(j->n + 1, sizeof(*info));
	for (i = 0; info && i < j->n; i++) {
		if (j->m[i].status != ENGY_MODEL_ENABLED ||
		    (j->id[0] && strcmp(j->m[i].name, j->id) != 0))
			continue;
		info[n].id = j->m[i].name;
		info[n].created = j->m[i].updated_ms / 1000;
		info[n].context_length = j->m[i].max_input_tokens;
		info[n].max_output_tokens = j->m[i].max_output_tokens;
		n++;
	}
	if (!info)
		status = 500;
	else if (j->id[0] && !n)
		status = 404;
	else if (j->id[0])
		engy_api_model_json(&o, &info[0]);
	else
		engy_api_models_json(&o, info, n);
out:
	if (status != 200)
		gw_req_error(r, status,
			     status == 404 ? "model: no such model"
					   : "the model list is unavailable");
	else if (o.err)
		gw_req_error(r, 500, "out of memory");
	else {
		if (r->x)
			gw_reply_json(r, 200, o.buf, o.len);
		gw_req_finish(r, 200, "models");
	}
	engy_sse_out_free(&o);
	free(info);
	free(j->m);
	free(j);
}

static void models(struct gw *g, struct engy_http_exchange *x,
		   const struct engy_http_request *hr, enum engy_api api)
{
	const struct engy_host *h = g->h;
	struct models_job *j = calloc(1, sizeof(*j));
	struct gw_req *r = j ? gw_req_new(g) : NULL;

	if (!r) {
		free(j);
		simple_error(g, x, api, 500, "out of memory");
		return;
	}
	r->x = x;
	r->api = api;
	j->r = r;
	if (hr->path[10] == '/')
		snprintf(j->id, sizeof(j->id), "%s", hr->path + 11);
	if (h->work(h, models_fn, models_done, j) < 0)
		models_done(j, -ECANCELED);
}

/* ---- the route ------------------------------------------------------ */

static int h_request(void *arg, struct engy_http_exchange *x,
		     const struct engy_http_request *hr)
{
	struct gw *g = arg;
	const char *p = hr->path, *key = NULL;
	bool post = strcmp(hr->method, "POST") == 0;
	enum engy_api api = hr->header(hr, "anthropic-version") ||
					    strncmp(p, "/v1/messages", 12) == 0
				    ? ENGY_API_ANTHROPIC
				    : ENGY_API_OPENAI;
	struct gw_req *r;
	size_t len = 0;
	int count = strcmp(p, "/v1/messages/count_tokens") == 0;
	enum engy_api_route route =
		strcmp(p, "/v1/responses") == 0	    ? ENGY_ROUTE_RESPONSES
		: strcmp(p, "/v1/completions") == 0 ? ENGY_ROUTE_COMPLETIONS
						    : ENGY_ROUTE_CHAT;
	char why[160];

	if (strcmp(p, "/v1/models") == 0 ||
	    strncmp(p, "/v1/models/", 11) == 0) {
		if (strcmp(hr->method, "GET") && strcmp(hr->method, "HEAD"))
			simple_error(g, x, api, 405, "use GET");
		else
			models(g, x, hr, api);
		return 0;
	}
	if (strncmp(p, "/v1/responses/", 14) == 0 ||
	    strncmp(p, "/v1/conversations", 17) == 0) {
		/* retrieve, cancel, delete, input_items: nothing was kept */
		coded_error(g, x, ENGY_API_OPENAI, 404,
			    "engy stores no responses or conversations (zero "
			    "data retention): there is nothing to retrieve, "
			    "cancel or delete",
			    "not_found");
		return 0;
	}
	if (strcmp(p, "/v1/chat/completions") && strcmp(p, "/v1/messages") &&
	    !count && route == ENGY_ROUTE_CHAT) {
		/* the path, quoted only when it is short and plain */
		size_t i, n = strlen(p);

		for (i = 0; i < n && n <= 64; i++)
			if (!((p[i] >= 'a' && p[i] <= 'z') ||
			      (p[i] >= 'A' && p[i] <= 'Z') ||
			      (p[i] >= '0' && p[i] <= '9') ||
			      strchr("/_-.", p[i])))
				break;
		snprintf(why, sizeof(why),
			 "no such route: %s %s (served: /v1/chat/completions, "
			 "/v1/responses, /v1/completions, /v1/messages, "
			 "/v1/messages/count_tokens, /v1/models)",
			 strlen(hr->method) <= 8 ? hr->method : "?",
			 n && i == n && n <= 64 ? p : "(this path)");
		coded_error(g, x, api, 404, why, "unknown_url");
		return 0;
	}
	if (!post) {
		simple_error(g, x, api, 405, "use POST");
		return 0;
	}
	r = gw_req_new(g);
	if (!r) {
		simple_error(g, x, api, 500, "out of memory");
		return 0;
	}
	r->x = x;
	r->api = strcmp(p, "/v1/chat/completions") == 0 ||
				 route != ENGY_ROUTE_CHAT
			 ? ENGY_API_OPENAI
			 : ENGY_API_ANTHROPIC;
	r->route = route;
	r->count_only = count;
	if (g->stopping) {
		gw_req_error(r, 503, "the gateway is shutting down; retry");
		return 0;
	}
	if (engy_api_key(hr->header(hr, "Authorization"),
			 hr->header(hr, "x-api-key"), &key, &len, r->err,
			 sizeof(r->err)) < 0 ||
	    gw_store_key_hash(r, key, len) < 0) {
		gw_req_error(r, 401, key ? "invalid API key" : r->err);
		return 0;
	}
	if (r->api == ENGY_API_ANTHROPIC &&
	    engy_anth_check_version(hr->header(hr, "anthropic-version"), r->err,
				    sizeof(r->err)) < 0) {
		gw_req_error(r, 400, r->err);
		return 0;
	}
	if (hr->body_len > (size_t)g->c->max_body_bytes) {
		snprintf(r->err, sizeof(r->err),
			 "the request body is over %lld "
			 "bytes",
			 (long long)g->c->max_body_bytes);
		gw_req_error(r, 413, r->err);
		return 0;
	}
	/* The transport's body lives while the exchange does; the pool
	 * job needs its own. */
	r->body = malloc(hr->body_len + 1);
	if (!r->body) {
		gw_req_error(r, 500, "out of memory");
		return 0;
	}
	memcpy(r->body, hr->body, hr->body_len);
	r->body[hr->body_len] = '\0';
	r->body_len = hr->body_len;
	gw_req_start(r);
	return 0;
}

static void h_gone(void *arg, struct engy_http_exchange *x)
{
	struct gw *g = arg;
	struct gw_req *r;

	for (r = g->reqs; r; r = r->next)
		if (r->x == x)
			break;
	if (r) {
		r->x = NULL;
		gw_req_gone(r);
	}
}

static const struct engy_http_handler v1_handler = {
	.size = sizeof(v1_handler),
	.on_request = h_request,
	.on_gone = h_gone,
};

int gw_http_init(struct gw *g)
{
	int rc = g->t->http_route(g->ti, "/v1", &v1_handler, g);

	if (rc < 0)
		GW_LOG(g, ENGY_LOG_ERR,
		       "event=route_failed path=/v1 "
		       "error=\"%s\"",
		       strerror(-rc));
	return rc;
}
