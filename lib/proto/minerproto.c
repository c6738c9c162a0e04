/* SPDX-License-Identifier: MIT */
/*
 * The miner link's pure code: leg plan, gateway URLs, worker name, and
 * the frames both ways (specs/protocol.md §1-2).  Numbers that Python writes as
 * floats (capacity.max_request_s, hw.ram_gb, ...) are written as Python
 * would ("1800.0"), so a frame reads the same as the public client's.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <sodium.h>

#include "jsonget.h"
#include "minerproto.h"

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

int engy_leg_plan(unsigned total, unsigned n_workers, uint64_t seed,
		  unsigned *workers, unsigned *n_legs, unsigned *share)
{
	unsigned i, j, t;

	if (!total || !n_workers || n_workers > ENGY_GW_MAX_WORKERS)
		return -EINVAL;
	for (i = 0; i < n_workers; i++)
		workers[i] = i;
	if (total >= n_workers) {
		*n_legs = n_workers;
		*share = total / n_workers;
		return 0;
	}
	/* A random subset, so a fleet of small miners does not pile onto
	 * worker 0. */
	for (i = 0; i < total; i++) {
		j = i + (unsigned)(splitmix64(&seed) % (n_workers - i));
		t = workers[i];
		workers[i] = workers[j];
		workers[j] = t;
	}
	qsort(workers, total, sizeof(*workers), cmp_unsigned);
	*n_legs = total;
	*share = 1;
	return 0;
}

/* Length of @gw's scheme://authority/path without query and trailing '/'. */
static size_t base_len(const char *gw)
{
	size_t n = strcspn(gw, "?#");
	const char *auth = strstr(gw, "://");

	while (n > 0 && gw[n - 1] == '/' && auth && gw + n - 1 > auth + 2)
		n--;
	return n;
}

static int ws_scheme(const char *gw, const char **why)
{
	if (strncmp(gw, "ws://", 5) == 0 && gw[5] && gw[5] != '/')
		return 0;
	if (strncmp(gw, "wss://", 6) == 0 && gw[6] && gw[6] != '/')
		return 1;
	if (why)
		*why = "not a ws:// or wss:// URL";
	return -EINVAL;
}

int engy_gw_meta_url(const char *gw, char **out, const char **why)
{
	int tls;
	size_t n;
	char *u;

	*out = NULL;
	if (!gw || (tls = ws_scheme(gw, why)) < 0)
		return -EINVAL;
	n = base_len(gw) - (size_t)(tls ? 6 : 5);
	u = malloc(n + 16);
	if (!u)
		return -ENOMEM;
	sprintf(u, "%s://%.*s/meta", tls ? "https" : "http", (int)n,
		gw + (tls ? 6 : 5));
	*out = u;
	return 0;
}

int engy_gw_worker_url(const char *gw, unsigned i, unsigned n_workers,
		       char **out)
{
	size_t n, q;
	char *u;

	*out = NULL;
	if (!gw || ws_scheme(gw, NULL) < 0)
		return -EINVAL;
	if (n_workers <= 1) {
		*out = strdup(gw);
		return *out ? 0 : -ENOMEM;
	}
	n = base_len(gw);
	q = strcspn(gw, "?#");
	u = malloc(strlen(gw) + 16);
	if (!u)
		return -ENOMEM;
	sprintf(u, "%.*s/%u%s", (int)n, gw, i, gw + q);
	*out = u;
	return 0;
}

static bool integral(const cJSON *j, double lo, double hi)
{
	return cJSON_IsNumber(j) && j->valuedouble == floor(j->valuedouble) &&
	       j->valuedouble >= lo && j->valuedouble <= hi;
}

int engy_gw_meta_parse(const char *body, size_t len, unsigned *workers)
{
	cJSON *root = cJSON_ParseWithLength(body, len), *w;
	int rc = -EINVAL;

	w = engy_json_get(root, "workers");
	if (cJSON_IsObject(root) && integral(w, 1, ENGY_GW_MAX_WORKERS)) {
		*workers = (unsigned)w->valuedouble;
		rc = 0;
	}
	cJSON_Delete(root);
	return rc;
}

static void hex(char *out, const uint8_t *b, size_t n)
{
	static const char d[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = d[b[i] >> 4];
		out[2 * i + 1] = d[b[i] & 15];
	}
	out[2 * n] = '\0';
}

void engy_worker_name(const char *host, const char *model,
		      const char *serve_urls, char out[17])
{
	crypto_hash_sha256_state st;
	uint8_t h[crypto_hash_sha256_BYTES];

	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, (const uint8_t *)host, strlen(host));
	crypto_hash_sha256_update(&st, (const uint8_t *)"|", 1);
	crypto_hash_sha256_update(&st, (const uint8_t *)model, strlen(model));
	crypto_hash_sha256_update(&st, (const uint8_t *)"|", 1);
	crypto_hash_sha256_update(&st, (const uint8_t *)serve_urls,
				  strlen(serve_urls));
	crypto_hash_sha256_final(&st, h);
	memcpy(out, "ins-", 4);
	hex(out + 4, h, 6);
}

void engy_hex_id(char *out, size_t n)
{
	uint8_t b[64];
	size_t got = 0;
	ssize_t r;

	if (n > sizeof(b))
		n = sizeof(b);
	while (got < n && (r = getrandom(b + got, n - got, 0)) > 0)
		got += (size_t)r;
	if (got < n) {
		/* No entropy source: unique enough for an id, never a key. */
		struct timespec t;
		uint64_t s;

		clock_gettime(CLOCK_REALTIME, &t);
		s = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
		for (; got < n; got++)
			b[got] = (uint8_t)splitmix64(&s);
	}
	hex(out, b, n);
}

/* ---- builders ---- */

/* @v as Python's repr(float): "1800.0", "125.8". */
static cJSON *add_float(cJSON *o, const char *key, double v)
{
	char buf[40];

	if (!isfinite(v))
		v = 0;
	if (v == floor(v) && fabs(v) < 1e16) {
		snprintf(buf, sizeof(buf), "%.1f", v);
	} else {
		snprintf(buf, sizeof(buf), "%.15g", v);
		if (strtod(buf, NULL) != v)
			snprintf(buf, sizeof(buf), "%.17g", v);
	}
	return cJSON_AddRawToObject(o, key, buf);
}

static char *finish(cJSON *root, bool ok, size_t *len)
{
	char *s = ok ? cJSON_PrintUnformatted(root) : NULL;

	cJSON_Delete(root);
	if (s && len)
		*len = strlen(s);
	return s;
}

static bool add_capacity(cJSON *o, const struct engy_miner_capacity *c)
{
	cJSON *cap = cJSON_AddObjectToObject(o, "capacity");

	return cap &&
	       cJSON_AddNumberToObject(cap, "max_inflight", c->max_inflight) &&
	       cJSON_AddNumberToObject(cap, "max_inflight_total",
				       c->max_inflight_total) &&
	       cJSON_AddNumberToObject(cap, "max_input_tokens",
				       (double)c->max_input_tokens) &&
	       cJSON_AddNumberToObject(cap, "max_output_tokens",
				       (double)c->max_output_tokens) &&
	       add_float(cap, "max_request_s", c->max_request_s);
}

static bool add_hw(cJSON *o, const struct engy_miner_hw *hw)
{
	cJSON *h = cJSON_AddObjectToObject(o, "hw");
	bool ok;

	ok = h &&
	     cJSON_AddStringToObject(h, "host", hw->host ? hw->host : "") &&
	     cJSON_AddNumberToObject(h, "cpus", hw->cpus) &&
	     add_float(h, "ram_gb", hw->ram_gb) &&
	     cJSON_AddStringToObject(h, "gpu", hw->gpu ? hw->gpu : "") &&
	     cJSON_AddNumberToObject(h, "gpu_count", hw->gpu_count) &&
	     add_float(h, "gpu_mem_gb", hw->gpu_mem_gb) &&
	     cJSON_AddStringToObject(h, "gpus", hw->gpus ? hw->gpus : "");
	if (ok && hw->parallelism)
		ok = cJSON_AddStringToObject(h, "parallelism", hw->parallelism);
	return ok;
}

char *engy_miner_hello_json(const struct engy_miner_hello *h, size_t *len)
{
	cJSON *root = cJSON_CreateObject(), *v;
	const char *const *p;
	bool ok;

	ok = root && cJSON_AddStringToObject(root, "type", "hello") &&
	     cJSON_AddStringToObject(root, "miner_key", h->miner_key) &&
	     cJSON_AddStringToObject(root, "model", h->model) &&
	     cJSON_AddStringToObject(root, "model_root", h->model_root) &&
	     add_hw(root, h->hw) &&
	     (v = cJSON_AddObjectToObject(root, "versions"));
	for (p = h->versions; ok && p && p[0] && p[1]; p += 2)
		ok = cJSON_AddStringToObject(v, p[0], p[1]) != NULL;
	ok = ok && add_capacity(root, &h->cap) &&
	     cJSON_AddStringToObject(root, "worker_name", h->worker_name) &&
	     cJSON_AddStringToObject(root, "instance_id", h->instance_id) &&
	     cJSON_AddStringToObject(root, "worker_id", h->worker_id);
	if (ok && h->constraints) {
		cJSON *a = cJSON_AddArrayToObject(root, "constraints");

		ok = a &&
		     (!(h->constraints & 1) ||
		      cJSON_AddItemToArray(
			      a, cJSON_CreateString("json_schema"))) &&
		     (!(h->constraints & 2) ||
		      cJSON_AddItemToArray(a,
					   cJSON_CreateString("tool_call"))) &&
		     (!(h->constraints & 4) ||
		      cJSON_AddItemToArray(a,
					   cJSON_CreateString("top_logprobs")));
	}
	return finish(root, ok, len);
}

char *engy_miner_heartbeat_json(unsigned inflight, double idle_seconds,
				const struct engy_miner_capacity *cap,
				size_t *len)
{
	cJSON *root = cJSON_CreateObject();
	bool ok;

	ok = root && cJSON_AddStringToObject(root, "type", "heartbeat") &&
	     cJSON_AddNumberToObject(root, "inflight", inflight) &&
	     add_float(root, "idle_seconds", round(idle_seconds * 10) / 10) &&
	     add_capacity(root, cap);
	return finish(root, ok, len);
}

/* A string member from @n bytes (not NUL-terminated). */
static bool add_strn(cJSON *o, const char *key, const char *s, size_t n)
{
	char *t = malloc(n + 1);
	bool ok;

	if (!t)
		return false;
	memcpy(t, s, n);
	t[n] = '\0';
	ok = cJSON_AddStringToObject(o, key, t) != NULL;
	free(t);
	return ok;
}

char *engy_miner_chunk_json(const char *corr_id, const char *content,
			    size_t content_len, const char *reasoning,
			    size_t reasoning_len, size_t *len)
{
	cJSON *root = cJSON_CreateObject(), *d;
	bool ok;

	ok = root && cJSON_AddStringToObject(root, "type", "chunk") &&
	     cJSON_AddStringToObject(root, "corr_id", corr_id) &&
	     (d = cJSON_AddObjectToObject(root, "delta"));
	if (ok && content && content_len)
		ok = add_strn(d, "content", content, content_len);
	if (ok && reasoning && reasoning_len)
		ok = add_strn(d, "reasoning_content", reasoning, reasoning_len);
	return finish(root, ok, len);
}

char *engy_miner_cancelled_json(const char *corr_id, size_t *len)
{
	cJSON *root = cJSON_CreateObject();
	bool ok;

	ok = root && cJSON_AddStringToObject(root, "type", "cancelled") &&
	     cJSON_AddStringToObject(root, "corr_id", corr_id);
	return finish(root, ok, len);
}

char *engy_miner_error_json(const char *corr_id, const char *request_id,
			    const char *error, size_t *len)
{
	cJSON *root = cJSON_CreateObject();
	bool ok;

	ok = root && cJSON_AddStringToObject(root, "type", "response") &&
	     cJSON_AddStringToObject(root, "corr_id", corr_id) &&
	     cJSON_AddStringToObject(root, "request_id", request_id) &&
	     cJSON_AddNullToObject(root, "commitment") &&
	     cJSON_AddObjectToObject(root, "output") &&
	     cJSON_AddStringToObject(root, "error", error);
	return finish(root, ok, len);
}

char *engy_miner_gemm_opening_json(const char *corr_id, const char *opening,
				   size_t olen, const char *error, size_t *len)
{
	cJSON *root = cJSON_CreateObject();
	char *head, *s;
	size_t hl;
	bool ok;

	ok = root && cJSON_AddStringToObject(root, "type", "gemm_opening") &&
	     cJSON_AddStringToObject(root, "corr_id", corr_id) &&
	     (opening ||
	      cJSON_AddStringToObject(root, "error", error ? error : "error"));
	if (!opening)
		return finish(root, ok, len);
	/* The opening (megabytes) is spliced in as it is, not re-parsed. */
	head = ok ? cJSON_PrintUnformatted(root) : NULL;
	cJSON_Delete(root);
	if (!head)
		return NULL;
	hl = strlen(head) - 1; /* without the closing brace */
	s = malloc(hl + 11 + olen + 2);
	if (s) {
		memcpy(s, head, hl);
		memcpy(s + hl, ",\"opening\":", 11);
		memcpy(s + hl + 11, opening, olen);
		s[hl + 11 + olen] = '}';
		s[hl + 12 + olen] = '\0';
		*len = hl + 12 + olen;
	}
	free(head);
	return s;
}

/* "[1,2,3]": ids printed directly (a 200k-token prompt is one string,
 * not 200k cJSON nodes). */
static char *ids_text(const uint32_t *ids, size_t n)
{
	char *s = malloc(n * 11 + 3), *p;
	size_t i;

	if (!s)
		return NULL;
	p = s;
	*p++ = '[';
	for (i = 0; i < n; i++)
		p += sprintf(p, i ? ",%u" : "%u", ids[i]);
	*p++ = ']';
	*p = '\0';
	return s;
}

static bool add_ids(cJSON *o, const char *key, const uint32_t *ids, size_t n)
{
	char *s = ids_text(ids, n);
	bool ok = s && cJSON_AddRawToObject(o, key, s);

	free(s);
	return ok;
}

static cJSON *commitment(const struct engy_miner_result *r, int *rc)
{
	cJSON *c = cJSON_CreateObject(), *p;
	size_t i;

	if (!c || !cJSON_AddStringToObject(c, "model_root", r->model_root) ||
	    !add_ids(c, "output_token_ids", r->output_ids, r->n_output_ids))
		goto oom;
	for (i = 0; i < r->n_schemes; i++) {
		if (!r->proofs[i]) { /* no proof: the scheme is null */
			if (!cJSON_AddNullToObject(c, r->schemes[i]))
				goto oom;
			continue;
		}
		p = cJSON_Parse(r->proofs[i]);
		if (!cJSON_IsObject(p)) {
			cJSON_Delete(p);
			cJSON_Delete(c);
			*rc = -EINVAL;
			return NULL;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(p, "prompt_ids");
		if (!add_ids(p, "prompt_ids", r->prompt_ids, r->n_prompt_ids)) {
			cJSON_Delete(p);
			goto oom;
		}
		cJSON_AddItemToObject(c, r->schemes[i], p);
	}
	if (r->has_gemm) {
		p = r->gemm ? cJSON_Parse(r->gemm) : cJSON_CreateNull();
		if (!p)
			goto oom;
		if (!cJSON_IsObject(p) && !cJSON_IsNull(p)) {
			cJSON_Delete(p);
			cJSON_Delete(c);
			*rc = -EINVAL;
			return NULL;
		}
		cJSON_AddItemToObject(c, "gemm", p);
	}
	return c;
oom:
	cJSON_Delete(c);
	*rc = -ENOMEM;
	return NULL;
}

static cJSON *output(const struct engy_miner_result *r)
{
	cJSON *o = cJSON_CreateObject(), *choices, *ch, *u, *d;
	bool ok;

	ok = o && (choices = cJSON_AddArrayToObject(o, "choices")) &&
	     (ch = cJSON_CreateObject());
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	cJSON_AddItemToArray(choices, ch);
	ok = cJSON_AddNumberToObject(ch, "index", 0) &&
	     cJSON_AddStringToObject(ch, "finish_reason", r->finish_reason) &&
	     (!r->matched_stop ||
	      cJSON_AddStringToObject(ch, "matched_stop", r->matched_stop));
	if (ok) {
		cJSON *m = engy_gen_msg_json(r->msg);

		ok = m && cJSON_AddItemToObject(ch, "message", m);
		if (!ok)
			cJSON_Delete(m);
	}
	if (ok && r->logprobs) {
		cJSON *l = cJSON_Duplicate(r->logprobs, true);

		ok = l && cJSON_AddItemToObject(ch, "logprobs", l);
		if (!ok)
			cJSON_Delete(l);
	}
	ok = ok && (u = cJSON_AddObjectToObject(o, "usage")) &&
	     cJSON_AddNumberToObject(u, "prompt_tokens", r->prompt_tokens) &&
	     cJSON_AddNumberToObject(u, "completion_tokens",
				     r->completion_tokens) &&
	     cJSON_AddNumberToObject(u, "total_tokens",
				     (double)r->prompt_tokens +
					     r->completion_tokens);
	if (ok && r->cached_tokens)
		ok = (d = cJSON_AddObjectToObject(u,
						  "prompt_tokens_details")) &&
		     cJSON_AddNumberToObject(d, "cached_tokens",
					     r->cached_tokens);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

char *engy_miner_response_json(const struct engy_miner_result *r, size_t *len,
			       int *rc)
{
	cJSON *root = cJSON_CreateObject(), *c = NULL, *o = NULL;
	bool ok;

	*rc = -ENOMEM;
	ok = root && cJSON_AddStringToObject(root, "type", "response") &&
	     cJSON_AddStringToObject(root, "corr_id", r->corr_id) &&
	     cJSON_AddStringToObject(root, "request_id", r->request_id) &&
	     (c = commitment(r, rc)) &&
	     cJSON_AddItemToObject(root, "commitment", c) && (o = output(r)) &&
	     cJSON_AddItemToObject(root, "output", o);
	if (!ok && c && !engy_json_get(root, "commitment"))
		cJSON_Delete(c);
	if (ok)
		*rc = 0;
	return finish(root, ok, len);
}

/* ---- parsers ---- */

static const struct {
	const char *name;
	int type;
} gw_types[] = {
	{ "admit", ENGY_GW_ADMIT },	    { "deny", ENGY_GW_DENY },
	{ "serve", ENGY_GW_SERVE },	    { "cancel", ENGY_GW_CANCEL },
	{ "ping", ENGY_GW_PING },	    { "reconnect", ENGY_GW_RECONNECT },
	{ "gemm_open", ENGY_GW_GEMM_OPEN },
};

static const char *corr_id(const cJSON *root)
{
	const cJSON *c = engy_json_get(root, "corr_id");

	if (!cJSON_IsString(c) || !c->valuestring[0] ||
	    strlen(c->valuestring) > ENGY_GW_MAX_CORR_ID)
		return NULL;
	return c->valuestring;
}

int engy_gw_frame_parse(const char *data, size_t len, struct engy_gw_frame *f,
			char *err, size_t errlen)
{
	const cJSON *t, *s;
	size_t i;

	memset(f, 0, sizeof(*f));
	f->root = cJSON_ParseWithLength(data, len);
	if (!cJSON_IsObject(f->root)) {
		snprintf(err, errlen, "not a JSON object");
		return -EINVAL;
	}
	t = engy_json_get(f->root, "type");
	if (!cJSON_IsString(t)) {
		snprintf(err, errlen, "no string \"type\"");
		return -EINVAL;
	}
	f->type_name = t->valuestring;
	for (i = 0; i < sizeof(gw_types) / sizeof(gw_types[0]); i++)
		if (strcmp(t->valuestring, gw_types[i].name) == 0)
			f->type = gw_types[i].type;
	switch (f->type) {
	case ENGY_GW_DENY:
		t = engy_json_get(f->root, "reason");
		f->reason = cJSON_IsString(t) ? t->valuestring : NULL;
		break;
	case ENGY_GW_SERVE:
	case ENGY_GW_CANCEL:
	case ENGY_GW_GEMM_OPEN:
		f->corr_id = corr_id(f->root);
		if (!f->corr_id) {
			snprintf(err, errlen,
				 "%s without a corr_id (a string of "
				 "1..%d bytes)",
				 t->valuestring, ENGY_GW_MAX_CORR_ID);
			return -EINVAL;
		}
		if (f->type == ENGY_GW_CANCEL)
			break;
		if (f->type == ENGY_GW_GEMM_OPEN) {
			s = engy_json_get(f->root, "request_id");
			f->challenge = engy_json_get(f->root, "challenge");
			if (!cJSON_IsString(s) || !s->valuestring[0] ||
			    strlen(s->valuestring) > ENGY_GW_MAX_REQUEST_ID)
				f->bad = "gemm_open: no usable request_id";
			else if (!cJSON_IsObject(f->challenge))
				f->bad = "gemm_open: challenge is not an "
					 "object";
			else
				f->request_id = s->valuestring;
			break;
		}
		f->request = engy_json_get(f->root, "request");
		s = engy_json_get(f->root, "stream");
		if (!cJSON_IsObject(f->request)) {
			f->request = NULL;
			f->bad = "serve: request is not a JSON object";
		} else if (s && !cJSON_IsBool(s) && !cJSON_IsNull(s)) {
			f->bad = "serve: stream is not a boolean";
		}
		f->stream = cJSON_IsTrue(s);
		break;
	default:
		break;
	}
	return 0;
}

void engy_gw_frame_free(struct engy_gw_frame *f)
{
	cJSON_Delete(f->root);
	memset(f, 0, sizeof(*f));
}

static const cJSON *field(const cJSON *o, const char *name)
{
	const cJSON *j = engy_json_get(o, name);

	return cJSON_IsNull(j) ? NULL : j;
}

static int bad(char *err, size_t errlen, const char *name, const char *why)
{
	snprintf(err, errlen, "%s: %s", name, why);
	return -EINVAL;
}

static int parse_stop(const cJSON *j, struct engy_chat_params *p, char *err,
		      size_t errlen)
{
	const cJSON *it;

	if (cJSON_IsString(j)) {
		p->stop[p->n_stop++] = j->valuestring;
		return 0;
	}
	if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) > 4)
		return bad(err, errlen, "stop", "a string or up to 4 strings");
	cJSON_ArrayForEach(it, j)
	{
		if (!cJSON_IsString(it))
			return bad(err, errlen, "stop",
				   "a string or up to 4 strings");
		p->stop[p->n_stop++] = it->valuestring;
	}
	return 0;
}

int engy_chat_params_parse(const cJSON *req, struct engy_chat_params *p,
			   char *err, size_t errlen)
{
	const cJSON *j;
	const char *mt = "max_completion_tokens";

	memset(p, 0, sizeof(*p));
	p->temperature = 1;
	p->top_p = 1;
	if (!cJSON_IsObject(req))
		return bad(err, errlen, "request", "not a JSON object");
	j = field(req, "n");
	if (j && !integral(j, 1, 1))
		return bad(err, errlen, "n", "only 1 choice is served");
	j = field(req, mt);
	if (!j)
		j = field(req, mt = "max_tokens");
	if (j) {
		if (!integral(j, 1, 4294967295.0))
			return bad(err, errlen, mt, "not an integer >= 1");
		p->max_tokens = (uint64_t)j->valuedouble;
		p->has_max_tokens = true;
	}
	j = field(req, "temperature");
	if (j) {
		if (!cJSON_IsNumber(j) ||
		    !(j->valuedouble >= 0 && j->valuedouble <= 2))
			return bad(err, errlen, "temperature",
				   "not a number in 0..2");
		p->temperature = j->valuedouble;
	}
	j = field(req, "top_p");
	if (j) {
		if (!cJSON_IsNumber(j) ||
		    !(j->valuedouble > 0 && j->valuedouble <= 1))
			return bad(err, errlen, "top_p",
				   "not a number in (0, 1]");
		p->top_p = j->valuedouble;
	}
	j = field(req, "top_k");
	if (j) {
		if (!integral(j, -1, 1 << 30))
			return bad(err, errlen, "top_k",
				   "not an integer >= -1");
		p->top_k = j->valuedouble < 0 ? 0 : (int32_t)j->valuedouble;
	}
	j = field(req, "seed");
	if (j) {
		if (!integral(j, -9007199254740991.0, 9007199254740991.0))
			return bad(err, errlen, "seed", "not an integer");
		p->seed = (uint64_t)(int64_t)j->valuedouble;
		p->has_seed = true;
	}
	j = field(req, "engy_request_id");
	if (j) {
		if (!cJSON_IsString(j) || !j->valuestring[0] ||
		    strlen(j->valuestring) > ENGY_GW_MAX_REQUEST_ID)
			return bad(err, errlen, "engy_request_id",
				   "not a string of 1..128 bytes");
		p->request_id = j->valuestring;
	}
	j = field(req, "stop");
	if (j && parse_stop(j, p, err, errlen))
		return -EINVAL;
	j = field(req, "logprobs");
	if (j && !cJSON_IsBool(j))
		return bad(err, errlen, "logprobs", "not true or false");
	p->logprobs = cJSON_IsTrue(j);
	j = field(req, "top_logprobs");
	if (j && !cJSON_IsNull(j) &&
	    !integral(j, 0, ENGY_CHAT_TOP_LOGPROBS_MAX))
		return bad(err, errlen, "top_logprobs",
			   "not an integer in 0..20");
	p->top_logprobs = p->logprobs && j && !cJSON_IsNull(j)
				  ? (uint32_t)j->valuedouble
				  : 0;
	return 0;
}
