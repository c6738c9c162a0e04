/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "grow.h"
#include "rpc.h"

struct body {
	char *p;
	size_t len, cap, max;
	int too_big;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t len = size * n;

	if (len > b->max - b->len) {
		b->too_big = 1;
		return 0;
	}
	if (!engy_grow_by(&b->p, &b->cap, b->len + 1, len, 1))
		return 0;
	memcpy(b->p + b->len, p, len);
	b->len += len;
	b->p[b->len] = '\0';
	return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
		       curl_off_t un)
{
	const atomic_int *cancel = arg;

	return cancel && atomic_load(cancel) ? 1 : 0;
}

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
	r->curl = curl_easy_init();
	if (!r->url || !r->curl) {
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
	if (r->curl)
		curl_easy_cleanup(r->curl);
	free(r->url);
	memset(r, 0, sizeof(*r));
}

static int transport_error(struct rpc *r, CURLcode cc, const struct body *b)
{
	if (r->cancel && atomic_load(r->cancel)) {
		snprintf(r->err, sizeof(r->err), "cancelled");
		return -ECANCELED;
	}
	if (b->too_big) {
		snprintf(r->err, sizeof(r->err), "response over %zu bytes",
			 r->max_body);
		return -EFBIG;
	}
	snprintf(r->err, sizeof(r->err), "%s", curl_easy_strerror(cc));
	switch (cc) {
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	default:
		return -EIO;
	}
}

int rpc_call(struct rpc *r, const char *method, const char *params,
	     cJSON **root_out, const cJSON **result)
{
	struct body b = {.max = r->max_body};
	struct curl_slist *h = NULL;
	const cJSON *err, *res;
	size_t need = strlen(method) + strlen(params) + 96;
	char *req = malloc(need);
	cJSON *root = NULL;
	long status = 0;
	CURLcode cc;
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
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(r->curl, CURLOPT_URL, r->url);
	curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(r->curl, CURLOPT_POSTFIELDS, req);
	curl_easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(req));
	curl_easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(r->curl, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(r->curl, CURLOPT_TIMEOUT_MS, r->timeout_ms);
	curl_easy_setopt(r->curl, CURLOPT_CONNECTTIMEOUT_MS, r->timeout_ms);
	curl_easy_setopt(r->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(r->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(r->curl, CURLOPT_XFERINFODATA, (void *)r->cancel);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(r->curl, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(r->curl, CURLOPT_PROTOCOLS,
			 (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	cc = curl_easy_perform(r->curl);
	curl_slist_free_all(h);
	free(req);
	if (cc != CURLE_OK) {
		rc = transport_error(r, cc, &b);
		goto out;
	}
	curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &status);
	root = b.p ? cJSON_ParseWithLength(b.p, b.len) : NULL;
	if (!cJSON_IsObject(root)) {
		snprintf(r->err, sizeof(r->err),
			 "HTTP %ld with no JSON-RPC answer", status);
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
	free(b.p);
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
