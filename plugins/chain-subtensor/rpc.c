/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpc.h"
#include "rpc.h"

int rpc_init(struct rpc *r, const char *endpoint, long timeout_ms,
	     size_t max_body, const atomic_int *cancel)
{
	const char *rest = endpoint;
	const char *scheme = "http://";

	memset(r, 0, sizeof(*r));
	if (strncmp(endpoint, "ws://", 5) == 0) {
		rest = endpoint + 5;
	} else if (strncmp(endpoint, "wss://", 6) == 0) {
		rest = endpoint + 6;
		scheme = "https://";
	} else {
		scheme = "";
	}
	r->url = malloc(strlen(scheme) + strlen(rest) + 1);
	r->http = engy_httpc_new();
	if (!r->url || !r->http) {
		rpc_free(r);
		return -ENOMEM;
	}
	strcpy(r->url, scheme);
	strcat(r->url, rest);
	r->timeout_ms = timeout_ms;
	r->max_body = max_body;
	r->cancel = cancel;
	return 0;
}

void rpc_free(struct rpc *r)
{
	engy_httpc_free(r->http);
	free(r->url);
	memset(r, 0, sizeof(*r));
}

int rpc_call(struct rpc *r, const char *method, const char *params,
	     cJSON **root_out, const cJSON **result)
{
	static const char *const hdrs[] = { "Content-Type: application/json",
					    NULL };
	const cJSON *err, *res;
	size_t need = strlen(method) + strlen(params) + 96;
	char *req = malloc(need);
	struct engy_httpc_req rq = {
		.method = "POST",
		.url = r->url,
		.headers = hdrs,
		.body = req,
		.timeout_ms = r->timeout_ms,
		.connect_timeout_ms = r->timeout_ms,
		.max_body = r->max_body,
		.cancel = r->cancel,
	};
	struct engy_httpc_resp b = { 0 };
	cJSON *root = NULL;
	int rc;

	*root_out = NULL;
	*result = NULL;
	r->code = 0;
	r->err[0] = '\0';
	if (!req)
		return -ENOMEM;
	snprintf(req, need,
		 "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"%s\",\"params\":%"
		 "s}",
		 ++r->id, method, params);
	rq.body_len = strlen(req);
	rc = engy_httpc_do(r->http, &rq, &b);
	free(req);
	if (rc < 0) {
		snprintf(r->err, sizeof(r->err), "%s", b.err);
		goto out;
	}
	root = b.body ? cJSON_ParseWithLength(b.body, b.len) : NULL;
	if (!cJSON_IsObject(root)) {
		snprintf(r->err, sizeof(r->err),
			 "HTTP %ld with no JSON-RPC answer", b.status);
		rc = -EPROTO;
		goto out;
	}
	err = cJSON_GetObjectItemCaseSensitive(root, "error");
	if (err && !cJSON_IsNull(err)) {
		const cJSON *code =
			cJSON_GetObjectItemCaseSensitive(err, "code");
		const cJSON *msg =
			cJSON_GetObjectItemCaseSensitive(err, "message");
		const cJSON *data =
			cJSON_GetObjectItemCaseSensitive(err, "data");
		char *dtext = data && !cJSON_IsString(data)
				      ? cJSON_PrintUnformatted(data)
				      : NULL;

		r->code = cJSON_IsNumber(code) ? (long)code->valuedouble : 0;
		snprintf(r->err, sizeof(r->err), "%s%s%s",
			 cJSON_IsString(msg) ? msg->valuestring : "error",
			 data ? ": " : "",
			 cJSON_IsString(data) ? data->valuestring
			 : dtext	      ? dtext
					      : "");
		free(dtext);
		rc = -EREMOTEIO;
		goto out;
	}
	res = cJSON_GetObjectItemCaseSensitive(root, "result");
	if (!res) {
		snprintf(r->err, sizeof(r->err),
			 "JSON-RPC answer without a result");
		rc = -EPROTO;
		goto out;
	}
	*root_out = root;
	*result = res;
	root = NULL;
	rc = 0;
out:
	cJSON_Delete(root);
	engy_httpc_resp_free(&b);
	return rc;
}

int rpc_call_str(struct rpc *r, const char *method, const char *params,
		 char *out, size_t cap)
{
	const cJSON *res;
	cJSON *root;
	int rc = rpc_call(r, method, params, &root, &res);

	if (rc)
		return rc;
	if (!cJSON_IsString(res) || strlen(res->valuestring) >= cap) {
		snprintf(r->err, sizeof(r->err), "%s: not the expected string",
			 method);
		cJSON_Delete(root);
		return -EPROTO;
	}
	strcpy(out, res->valuestring);
	cJSON_Delete(root);
	return 0;
}
