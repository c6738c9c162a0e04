/* SPDX-License-Identifier: MIT */
/*
 * What a miner sends (specs/protocol.md §2), parsed on the gateway's side:
 * hello, heartbeat, chunk, response, cancelled, gemm_opening; anything
 * else with a "type" is ignored (forward compatibility).  Outside bytes:
 * every field is checked for type and size before it is used, and nothing
 * here logs.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gateway_int.h"
#include "json_lazy.h"
#include "jsonget.h"
#include "minerproto.h"

static const char *const lazy_keys[] = { "commitment", NULL };

static int bad(char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s", what);
	return -EINVAL;
}

/* A string field of 1..@max bytes, or NULL. */
static const char *str(const cJSON *o, const char *name, size_t max)
{
	const cJSON *j = engy_json_get(o, name);
	size_t n;

	if (!cJSON_IsString(j) || !j->valuestring)
		return NULL;
	n = strlen(j->valuestring);
	return n && n <= max ? j->valuestring : NULL;
}

/* A finite number in [lo, hi], else @def. */
static double num(const cJSON *o, const char *name, double lo, double hi,
		  double def, bool *ok)
{
	const cJSON *j = engy_json_get(o, name);

	if (!j)
		return def;
	if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) ||
	    j->valuedouble < lo || j->valuedouble > hi) {
		*ok = false;
		return def;
	}
	return j->valuedouble;
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static int capacity(const cJSON *o, struct gw_capacity *c)
{
	const cJSON *cap = engy_json_get(o, "capacity");
	bool ok = true;

	memset(c, 0, sizeof(*c));
	if (!cap)
		return 0;
	if (!cJSON_IsObject(cap))
		return -EINVAL;
	c->max_inflight =
		(unsigned)num(cap, "max_inflight", 1, 1 << 20, 0, &ok);
	c->has_total = engy_json_get(cap, "max_inflight_total") != NULL;
	c->max_inflight_total =
		(unsigned)num(cap, "max_inflight_total", 0, 1 << 20, 0, &ok);
	c->max_input_tokens =
		(uint64_t)num(cap, "max_input_tokens", 1, 1e12, 0, &ok);
	c->max_output_tokens =
		(uint64_t)num(cap, "max_output_tokens", 1, 1e12, 0, &ok);
	c->max_request_s = num(cap, "max_request_s", 0.001, 1e7, 0, &ok);
	return ok ? 0 : -EINVAL;
}

/* "constraints": the output constraints the worker enforces by
 * constrained decoding ("json_schema", "tool_call") and "top_logprobs"
 * (it returns alternatives); names it does not know are ignored.
 * Absent: none. */
static int constraints(const cJSON *o, unsigned *out)
{
	const cJSON *a = engy_json_get(o, "constraints"), *c;

	*out = 0;
	if (!a || cJSON_IsNull(a))
		return 0;
	if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > 8)
		return -EINVAL;
	cJSON_ArrayForEach(c, a)
	{
		if (!cJSON_IsString(c))
			return -EINVAL;
		if (strcmp(c->valuestring, "json_schema") == 0)
			*out |= ENGY_API_CONS_JSON;
		else if (strcmp(c->valuestring, "tool_call") == 0)
			*out |= ENGY_API_CONS_TOOL;
		else if (strcmp(c->valuestring, "top_logprobs") == 0)
			*out |= ENGY_API_CONS_TOPLP;
	}
	return 0;
}

static int hello(struct gw_mframe *f, char *err, size_t errlen)
{
	const cJSON *o = f->root;

	f->miner_key = str(o, "miner_key", 512);
	if (!f->miner_key)
		return bad(err, errlen,
			   "hello.miner_key: a string of 1..512 bytes");
	f->model = str(o, "model", 127);
	if (!f->model || !printable(f->model))
		return bad(err, errlen,
			   "hello.model: a string of 1..127 bytes");
	f->model_root = str(o, "model_root", 128);
	if (f->model_root &&
	    f->model_root[strspn(f->model_root, "0123456789abcdefABCDEF")])
		return bad(err, errlen, "hello.model_root: hex digits");
	f->worker_name = str(o, "worker_name", 127);
	f->worker_id = str(o, "worker_id", 63);
	f->instance_id = str(o, "instance_id", 63);
	if ((f->worker_name && !printable(f->worker_name)) ||
	    (f->worker_id && !printable(f->worker_id)) ||
	    (f->instance_id && !printable(f->instance_id)))
		return bad(err, errlen,
			   "hello: a worker name or id with "
			   "control characters");
	if (capacity(o, &f->cap) < 0)
		return bad(err, errlen, "hello.capacity: numbers out of range");
	if (constraints(o, &f->constraints) < 0)
		return bad(err, errlen,
			   "hello.constraints: an array of at most 8 strings");
	if (!f->cap.max_inflight)
		return bad(err, errlen,
			   "hello.capacity.max_inflight: required, >= 1");
	return 0;
}

int gw_frame_parse(const char *data, size_t len, struct gw_mframe *f, char *err,
		   size_t errlen)
{
	const cJSON *t;
	bool ok = true;

	memset(f, 0, sizeof(*f));
	/* A response's commitment is kept as its text (checked JSON): only
	 * the tee's sampled entries and probes read it. */
	f->root = engy_json_parse_lazy(data, len, lazy_keys);
	if (!f->root)
		f->root = cJSON_ParseWithLength(data, len);
	if (!cJSON_IsObject(f->root))
		return bad(err, errlen, "not a JSON object");
	t = engy_json_get(f->root, "type");
	if (!cJSON_IsString(t) || !t->valuestring)
		return bad(err, errlen, "no string \"type\"");
	f->type_name = t->valuestring;
	if (strcmp(f->type_name, "hello") == 0) {
		f->type = GW_M_HELLO;
		return hello(f, err, errlen);
	}
	if (strcmp(f->type_name, "heartbeat") == 0) {
		f->type = GW_M_HEARTBEAT;
		f->inflight =
			(unsigned)num(f->root, "inflight", 0, 1 << 20, 0, &ok);
		if (capacity(f->root, &f->cap) < 0 || !ok)
			return bad(err, errlen,
				   "heartbeat: numbers out of range");
		return 0;
	}
	if (strcmp(f->type_name, "chunk") == 0 ||
	    strcmp(f->type_name, "response") == 0) {
		f->type = f->type_name[0] == 'c' ? GW_M_CHUNK : GW_M_RESPONSE;
		f->corr_id = str(f->root, "corr_id", ENGY_GW_MAX_CORR_ID);
		if (!f->corr_id)
			return bad(err, errlen, "no usable corr_id");
		if (f->type == GW_M_CHUNK) {
			f->delta = engy_json_get(f->root, "delta");
			if (!cJSON_IsObject(f->delta))
				return bad(err, errlen,
					   "chunk.delta: an object");
		}
		return 0;
	}
	if (strcmp(f->type_name, "cancelled") == 0 ||
	    strcmp(f->type_name, "gemm_opening") == 0) {
		f->type = f->type_name[0] == 'c' ? GW_M_CANCELLED
						 : GW_M_GEMM_OPENING;
		f->corr_id = str(f->root, "corr_id", ENGY_GW_MAX_CORR_ID);
		if (!f->corr_id)
			return bad(err, errlen, "no usable corr_id");
		return 0;
	}
	f->type = GW_M_UNKNOWN;
	return 0;
}

void gw_frame_free(struct gw_mframe *f)
{
	cJSON_Delete(f->root);
	f->root = NULL;
}

const cJSON *gw_frame_member(const cJSON *frame, const char *name, cJSON **own)
{
	const cJSON *c = engy_json_get(frame, name);

	*own = NULL;
	if (!cJSON_IsRaw(c))
		return c;
	*own = cJSON_Parse(c->valuestring);
	return *own;
}
