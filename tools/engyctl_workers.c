/* SPDX-License-Identifier: MIT */
/*
 * engyctl workers: the gateway's miner legs as its internal API shows them
 * (GET /internal/v1/workers, specs/gateway.md "Internal API"): one row per
 * leg with its state, load, capacity, latency p99s, breaker and
 * onboarding.  The bearer token comes from ENGY_TEE_TOKEN or --token-file
 * (never the command line: it would show in ps).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engyctl.h"
#include "fsutil.h"
#include "httpc.h"

int engyctl_workers(int argc, char **argv);

#define MAX_BODY (32u << 20)

static int usage(FILE *f, int rc)
{
	fprintf(f,
		"usage: engyctl workers --gateway URL [--token-file FILE] [--json]\n"
		"\n"
		"Lists the gateway's miner legs: id, worker name, miner hotkey, model,\n"
		"state (new, probing, active, pulled, ...), requests in flight over\n"
		"capacity, TTFT and TPOT p99 over the breaker window, the breaker's\n"
		"status with its trips, and onboarding (phase, round, probe answers).\n"
		"URL is the gateway's buyer listener (http://HOST:PORT).  The token is\n"
		"the gateway's tee_token, from ENGY_TEE_TOKEN or --token-file.\n"
		"--json prints the API's answer as it came.  Exit 0, 1 on failure.\n");
	return rc;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : "-";
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void row(const cJSON *w)
{
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(w, "breaker");
	const cJSON *ob = cJSON_GetObjectItemCaseSensitive(w, "onboarding");
	char load[32], brk[48], onb[64], miner[16];
	const char *hk = str(w, "miner");

	snprintf(miner, sizeof(miner), "%.6s%s%.4s", hk,
		 strlen(hk) > 10 ? ".." : "",
		 strlen(hk) > 10 ? hk + strlen(hk) - 4 : "");
	snprintf(load, sizeof(load), "%.0f/%.0f", num(w, "inflight"),
		 num(w, "capacity"));
	snprintf(brk, sizeof(brk), "%s/%.0f", b ? str(b, "status") : "-",
		 b ? num(b, "trips") : 0);
	if (ob)
		snprintf(onb, sizeof(onb), "%s/r%.0f/%.0f+%.0f-",
			 str(ob, "phase"), num(ob, "round"),
			 num(ob, "attempts_ok"), num(ob, "attempts_failed"));
	else
		snprintf(onb, sizeof(onb), "-");
	printf("%-5.0f %-24s %-12s %-16s %-8s %-3s %-9s %8.0f %8.0f  %-12s %s\n",
	       num(w, "id"), str(w, "name"), miner, str(w, "model"),
	       str(w, "state"),
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(w, "first_party"))
		       ? "yes"
		       : "no",
	       load, num(w, "ttft_p99_ms"), num(w, "tpot_p99_ms"), brk, onb);
}

static int fetch(const char *url, const char *token, struct engy_httpc_resp *rs)
{
	const struct engy_httpc_req rq = {
		.url = url,
		.timeout_ms = 10000,
		.max_body = MAX_BODY,
		.bearer = token,
	};
	int rc = engy_httpc_do(NULL, &rq, rs);

	if (rc == -ENOMEM)
		return engyctl_fail("out of memory");
	if (rc < 0)
		return engyctl_fail("workers: %s: %s", url, rs->err);
	return 0;
}

int engyctl_workers(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "gateway", required_argument, NULL, 'g' },
		{ "token-file", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *gw = NULL, *tfile = NULL, *env = getenv("ENGY_TEE_TOKEN");
	struct engy_httpc_resp b = { 0 };
	char *token = NULL, *url = NULL;
	const cJSON *ws, *w;
	uint8_t *tb = NULL;
	size_t tl = 0;
	cJSON *doc = NULL;
	int c, rc = 1, json = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'g':
			gw = optarg;
			break;
		case 't':
			tfile = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			return usage(stdout, 0);
		default:
			return usage(stderr, 2);
		}
	}
	if (!gw || optind != argc)
		return usage(stderr, 2);
	if (tfile) {
		if (engy_read_file(tfile, 4096, &tb, &tl) < 0)
			return engyctl_fail("workers: cannot read %s", tfile);
		while (tl && (tb[tl - 1] == '\n' || tb[tl - 1] == '\r' ||
			      tb[tl - 1] == ' '))
			tb[--tl] = '\0';
		token = (char *)tb;
	} else if (env && *env) {
		token = strdup(env);
	}
	if (!token || !*token) {
		free(token);
		return engyctl_fail(
			"workers: no token (ENGY_TEE_TOKEN or --token-file)");
	}
	tl = strlen(gw);
	while (tl && gw[tl - 1] == '/')
		tl--;
	if (asprintf(&url, "%.*s/internal/v1/workers", (int)tl, gw) < 0)
		goto out;
	if (fetch(url, token, &b))
		goto out;
	doc = cJSON_ParseWithLength(b.body ? b.body : "", b.len);
	if (b.status != 200) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");

		engyctl_fail("workers: HTTP %ld%s%s", b.status,
			     cJSON_IsString(e) ? ": " : "",
			     cJSON_IsString(e) ? e->valuestring : "");
		goto out;
	}
	ws = cJSON_GetObjectItemCaseSensitive(doc, "workers");
	if (!cJSON_IsArray(ws)) {
		engyctl_fail("workers: not an answer of /internal/v1/workers");
		goto out;
	}
	if (json) {
		fwrite(b.body, 1, b.len, stdout);
		putchar('\n');
	} else {
		printf("%-5s %-24s %-12s %-16s %-8s %-3s %-9s %8s %8s  %-12s %s\n",
		       "ID", "NAME", "MINER", "MODEL", "STATE", "1P",
		       "INFLIGHT", "TTFT_P99", "TPOT_P99", "BREAKER",
		       "ONBOARDING");
		cJSON_ArrayForEach(w, ws) row(w);
	}
	rc = 0;
out:
	if (token)
		memset(token, 0, strlen(token));
	free(token);
	free(url);
	engy_httpc_resp_free(&b);
	cJSON_Delete(doc);
	return rc;
}
