/* SPDX-License-Identifier: MIT */
/*
 * engyctl doctor ROLE.conf: read the config exactly as engyd would (its
 * loader, option tables and environment twins; every plugin's create(),
 * which does no I/O), print what engyd -t prints, then try each connection
 * once: the serve (/get_model_info, then one /generate token with hidden
 * states), the gateway's /meta, the provider API, the chain endpoint.
 * Every problem comes with the setting to fix.  Exit 0 when nothing is
 * wrong, 1 otherwise, 2 on a usage error.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include <config.h>

#include "../engyd/checks.h"
#include "../engyd/conf.h"
#include "../engyd/daemon.h"
#include "../engyd/log.h"
#include "engyctl.h"
#include "minerproto.h"

#define BODY_MAX (4u << 20)

struct body {
	char *p;
	size_t n;
};

static size_t on_body(char *ptr, size_t size, size_t nm, void *arg)
{
	struct body *b = arg;
	size_t k = size * nm;
	char *np;

	if (b->n + k > BODY_MAX)
		return 0;
	np = realloc(b->p, b->n + k + 1);
	if (!np)
		return 0;
	memcpy(np + b->n, ptr, k);
	b->p = np;
	b->n += k;
	b->p[b->n] = '\0';
	return k;
}

/*
 * One request: GET when @post is NULL.  Returns the HTTP status, or -1 with
 * curl's reason in @err when no answer came.
 */
static long fetch(const char *url, const char *post, const char *bearer,
		  struct body *b, char *err, size_t errlen, int direct)
{
	char ebuf[CURL_ERROR_SIZE] = "", auth[600];
	struct curl_slist *hdr = NULL;
	long code = -1;
	CURL *h = curl_easy_init();
	CURLcode rc;

	b->p = NULL;
	b->n = 0;
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(h, CURLOPT_PROTOCOLS,
			 (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	/* backend-sglang never goes through an http_proxy: neither do we. */
	if (direct)
		curl_easy_setopt(h, CURLOPT_PROXY, "");
	if (post) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, post);
	}
	if (bearer && *bearer) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
			 bearer);
		hdr = curl_slist_append(hdr, auth);
	}
	if (hdr)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	else
		snprintf(err, errlen, "%s",
			 ebuf[0] ? ebuf : curl_easy_strerror(rc));
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	return code;
}

/* The first serve's model_path: the miner's checkpoint when none is set. */
static char serve_model_path[1024];

struct verdict {
	char note[2048]; /* what was found */
	char problem[2048];
	char fix[768];
	int warn_only;
};

#define SAY(field, ...) snprintf(v->field, sizeof(v->field), __VA_ARGS__)

static void probe_serve_one(const char *url, const char *key, struct verdict *v)
{
	char u[1200], err[256], rid[40], req[256];
	struct body b;
	long code;
	cJSON *j, *meta, *hs;
	const cJSON *mp;

	snprintf(u, sizeof(u), "%s/get_model_info", url);
	code = fetch(u, NULL, key, &b, err, sizeof(err), 1);
	if (code < 0) {
		SAY(problem, "%s: cannot connect: %s", url, err);
		SAY(fix,
		    "start the sglang serve (python -m "
		    "sglang.launch_server ... --enable-return-hidden-states), "
		    "or set SERVE_URL (--serve-url) to where it listens");
		goto out;
	}
	if (code == 401 || code == 403) {
		SAY(problem, "%s/get_model_info answered HTTP %ld", url, code);
		SAY(fix, "the serve wants an API key: set ENGY_SERVE_API_KEY "
			 "to its --api-key");
		goto out;
	}
	j = code == 200 ? cJSON_ParseWithLength(b.p ? b.p : "", b.n) : NULL;
	mp = j ? cJSON_GetObjectItemCaseSensitive(j, "model_path") : NULL;
	if (!cJSON_IsString(mp)) {
		SAY(problem, "%s/get_model_info answered HTTP %ld%s", url, code,
		    code == 200 ? " without a model_path" : "");
		SAY(fix,
		    "SERVE_URL must be an sglang serve's base URL, e.g. "
		    "http://127.0.0.1:8000 (curl it: curl -s URL/get_model_info)");
		cJSON_Delete(j);
		goto out;
	}
	SAY(note, "%s serves %s", url, mp->valuestring);
	if (!serve_model_path[0])
		snprintf(serve_model_path, sizeof(serve_model_path), "%s",
			 mp->valuestring);
	cJSON_Delete(j);
	free(b.p);

	engy_hex_id(rid, 16);
	snprintf(req, sizeof(req),
		 "{\"input_ids\":[1],\"sampling_params\":{\"max_new_tokens\":1,"
		 "\"temperature\":0},\"return_hidden_states\":true,"
		 "\"rid\":\"engy-%s\"}",
		 rid);
	snprintf(u, sizeof(u), "%s/generate", url);
	code = fetch(u, req, key, &b, err, sizeof(err), 1);
	if (code < 0) {
		SAY(problem, "%s/generate: no answer: %s", url, err);
		SAY(fix, "check the serve's log; it answered /get_model_info "
			 "but not a one-token /generate");
		goto out;
	}
	j = cJSON_ParseWithLength(b.p ? b.p : "", b.n);
	if (cJSON_IsArray(j) && cJSON_GetArraySize(j) > 0) {
		cJSON *first = cJSON_DetachItemFromArray(j, 0);

		cJSON_Delete(j);
		j = first;
	}
	meta = j ? cJSON_GetObjectItemCaseSensitive(j, "meta_info") : NULL;
	hs = meta ? cJSON_GetObjectItemCaseSensitive(meta, "hidden_states")
		  : NULL;
	if (code == 200 && cJSON_IsArray(hs) && cJSON_GetArraySize(hs) > 0) {
		size_t k = strlen(v->note);

		snprintf(v->note + k, sizeof(v->note) - k,
			 ", hidden states on");
	} else if (code == 200 || (b.p && strstr(b.p, "hidden"))) {
		SAY(problem, "%s returns no hidden states (%s)", url,
		    code == 200 ? "a /generate answer without them"
				: "it refuses return_hidden_states");
		SAY(fix,
		    "restart the serve with --enable-return-hidden-states, "
		    "and keep anything on its PYTHONPATH from emptying "
		    "meta_info.hidden_states");
	} else {
		SAY(problem, "%s/generate answered HTTP %ld", url, code);
		SAY(fix, "check the serve's log: a one-token /generate failed");
	}
	cJSON_Delete(j);
out:
	free(b.p);
}

static void probe_serve(const struct engyd_check *c, struct verdict *v)
{
	char *list = strdup(c->target), *save = NULL, *u;
	struct verdict one;
	size_t k = 0;

	if (!list) {
		SAY(problem, "out of memory");
		return;
	}
	for (u = strtok_r(list, ",", &save); u;
	     u = strtok_r(NULL, ",", &save)) {
		memset(&one, 0, sizeof(one));
		probe_serve_one(u, c->secret, &one);
		if (one.problem[0] && !v->problem[0]) {
			memcpy(v->problem, one.problem, sizeof(v->problem));
			memcpy(v->fix, one.fix, sizeof(v->fix));
		}
		if (one.note[0])
			k += (size_t)snprintf(
				v->note + k,
				k < sizeof(v->note) ? sizeof(v->note) - k : 0,
				"%s%s", k ? "; " : "", one.note);
	}
	free(list);
}

static void probe_meta(const struct engyd_check *c, struct verdict *v)
{
	char err[256], *url = NULL;
	const char *why = NULL;
	unsigned workers = 0;
	struct body b;
	long code;

	if (engy_gw_meta_url(c->target, &url, &why) < 0) {
		SAY(problem, "%s", why ? why : "not a gateway URL");
		SAY(fix, "set GW to the gateway's wss:// URL");
		return;
	}
	code = fetch(url, NULL, NULL, &b, err, sizeof(err), 0);
	if (code < 0) {
		SAY(problem, "cannot connect to %s: %s", url, err);
		SAY(fix,
		    "check GW (wss://<gateway-host>/gw; the public gateway "
		    "is wss://api.engy.ai/gw) and that this machine reaches "
		    "that host and port");
	} else if (code == 200 && b.p &&
		   engy_gw_meta_parse(b.p, b.n, &workers) == 0) {
		SAY(note, "%s says %u worker%s", url, workers,
		    workers == 1 ? "" : "s");
	} else {
		SAY(problem, "%s answered HTTP %ld, not {\"workers\": N}", url,
		    code);
		SAY(fix,
		    "the miner will plan for 1 gateway worker: fine for a "
		    "single-process gateway; otherwise check that GW names the "
		    "gateway's /gw path, or set ENGY_GW_WORKERS");
		v->warn_only = 1;
	}
	free(b.p);
	free(url);
}

static void probe_provider(const struct engyd_check *c, struct verdict *v)
{
	char url[1200], err[256];
	struct body b;
	cJSON *j;
	long code;

	snprintf(url, sizeof(url), "%s/api/subnet/v1/epoch/latest", c->target);
	code = fetch(url, NULL, NULL, &b, err, sizeof(err), 0);
	j = code == 200 ? cJSON_ParseWithLength(b.p ? b.p : "", b.n) : NULL;
	if (code < 0) {
		SAY(problem, "cannot connect to %s: %s", url, err);
		SAY(fix,
		    "set ENGY_SN53_API (and ENGY_SN53_MASTER_HOTKEY with "
		    "it) to a provider this machine reaches; the default is "
		    "https://provider.engy.ai");
	} else if (!cJSON_IsObject(j)) {
		SAY(problem, "%s answered HTTP %ld%s", url, code,
		    code == 200 ? ", not a JSON object" : "");
		SAY(fix, "ENGY_SN53_API must be the provider's base URL "
			 "(https://provider.engy.ai), without a path");
	} else {
		SAY(note, "%s answers an epoch payload", url);
	}
	cJSON_Delete(j);
	free(b.p);
}

static void probe_chain(const struct engyd_check *c, struct verdict *v)
{
	char url[1100], err[256];
	const char *t = c->target;
	struct body b;
	cJSON *j;
	const cJSON *r;
	long code;

	if (strncmp(t, "ws://", 5) == 0)
		snprintf(url, sizeof(url), "http://%s", t + 5);
	else if (strncmp(t, "wss://", 6) == 0)
		snprintf(url, sizeof(url), "https://%s", t + 6);
	else
		snprintf(url, sizeof(url), "%s", t);
	code = fetch(url,
		     "{\"id\":1,\"jsonrpc\":\"2.0\",\"method\":"
		     "\"system_chain\",\"params\":[]}",
		     NULL, &b, err, sizeof(err), 0);
	j = code == 200 ? cJSON_ParseWithLength(b.p ? b.p : "", b.n) : NULL;
	r = j ? cJSON_GetObjectItemCaseSensitive(j, "result") : NULL;
	if (cJSON_IsString(r)) {
		SAY(note, "%s is chain \"%s\"", t, r->valuestring);
	} else {
		if (code < 0)
			SAY(problem, "cannot connect to %s: %s", t, err);
		else
			SAY(problem, "%s answered HTTP %ld, not JSON-RPC", t,
			    code);
		SAY(fix,
		    "set ENGY_SN53_NETWORK (finney, test, local) or "
		    "ENGY_SN53_CHAIN_ENDPOINT to a subtensor node this machine "
		    "reaches");
	}
	cJSON_Delete(j);
	free(b.p);
}

static void check_model_path(struct verdict *v)
{
	char p[1100];
	FILE *f;

	snprintf(p, sizeof(p), "%s/tokenizer.json", serve_model_path);
	f = fopen(p, "r");
	if (f) {
		fclose(f);
		SAY(note, "the serve's model_path %s, here too",
		    serve_model_path);
		return;
	}
	SAY(problem,
	    "the serve's model_path %s has no readable "
	    "tokenizer.json on this machine",
	    serve_model_path);
	SAY(fix, "set CHECKPOINT (or --checkpoint) to this machine's copy of "
		 "the checkpoint the serve loaded");
}

static void report(const char *tag, const struct engyd_check *c,
		   const char *what, const char *fix)
{
	printf("%-5s %s: %s (%s)%s%s\n", tag, c->what, c->target, c->source,
	       what && *what ? ": " : "", what ? what : "");
	if (fix && *fix)
		printf("      fix: %s\n", fix);
}

int engyctl_doctor(int argc, char **argv);
int engyctl_doctor(int argc, char **argv)
{
	struct engy_errs e = { 0 };
	struct engyd_check *cs = NULL;
	struct verdict *vs = NULL;
	struct engyd d;
	size_t n = 0, i;
	int bad = 0, warn = 0, rc;

	if (argc == 2 &&
	    (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("usage: engyctl doctor ROLE.conf\n\n"
		       "Reads ROLE.conf as engyd does (the environment twins "
		       "apply), says what it\nwould connect to, tries each "
		       "connection once (the serve's /get_model_info and\na "
		       "one-token /generate with hidden states, the gateway's "
		       "/meta, the provider\nAPI, the chain endpoint) and says "
		       "what to fix.  Exit 0: nothing to fix.\n");
		return 0;
	}
	if (argc != 2)
		return fprintf(stderr, "usage: engyctl doctor ROLE.conf\n"), 2;
	engy_log_set_level(ENGY_LOG_WARNING);
	rc = engyd_setup(&d, argv[1], &e);
	for (i = 0; i < e.n; i++) {
		printf("FAIL  config: %s\n", e.v[i]);
		bad++;
	}
	if (rc && !e.n) {
		printf("FAIL  config: %s: %s\n", argv[1], strerror(-rc));
		bad++;
	}
	engy_errs_free(&e);
	if (engyd_checks(&d, &cs, &n) < 0 ||
	    !(vs = calloc(n ? n : 1, sizeof(*vs)))) {
		engyd_checks_free(cs, n);
		engyd_free(&d);
		return engyctl_fail("out of memory");
	}
	/*
	 * Probe first, in the order reported; the serve's model_path is
	 * known only once a serve answered, so that check comes last.  Then
	 * print in the order reported.
	 */
	curl_global_init(CURL_GLOBAL_DEFAULT);
	for (i = 0; i < n; i++) {
		const struct engyd_check *c = &cs[i];
		struct verdict *v = &vs[i];

		/* engyd -t lets an idle validator start; a doctor does not. */
		if (c->problem[0])
			continue;
		switch (c->probe) {
		case ENGY_PROBE_SERVE:
			probe_serve(c, v);
			break;
		case ENGY_PROBE_GW_META:
			probe_meta(c, v);
			break;
		case ENGY_PROBE_PROVIDER:
			probe_provider(c, v);
			break;
		case ENGY_PROBE_CHAIN:
			probe_chain(c, v);
			break;
		default:
			break;
		}
	}
	for (i = 0; i < n; i++)
		if (!cs[i].problem[0] && cs[i].probe == ENGY_PROBE_MODEL_PATH &&
		    serve_model_path[0])
			check_model_path(&vs[i]);
	curl_global_cleanup();
	for (i = 0; i < n; i++) {
		const struct engyd_check *c = &cs[i];
		const struct verdict *v = &vs[i];

		if (c->problem[0]) {
			report("FAIL", c, c->problem, c->fix);
			bad++;
		} else if (v->problem[0]) {
			report(v->warn_only ? "warn" : "FAIL", c, v->problem,
			       v->fix);
			if (v->warn_only)
				warn++;
			else
				bad++;
		} else {
			report("ok", c, v->note, NULL);
		}
	}
	if (!n && !bad)
		printf("ok    %s: the config loads; doctor has no connection "
		       "checks for role %s\n",
		       argv[1], d.cfg.role ? d.cfg.role : "?");
	printf("engyctl doctor: %s: %d problem%s, %d warning%s\n", argv[1], bad,
	       bad == 1 ? "" : "s", warn, warn == 1 ? "" : "s");
	free(vs);
	engyd_checks_free(cs, n);
	engyd_free(&d);
	return bad ? 1 : 0;
}
