/* SPDX-License-Identifier: MIT */
/*
 * sglang's /generate and /abort_request bodies in, sglang's response
 * objects out.  Parsing uses cJSON; writing is by hand, because a reply
 * with hidden states holds millions of numbers and a cJSON tree of them
 * would cost ten times the text.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sglang_json.h"

/* --- a string builder ---------------------------------------------------- */

struct sb {
	char *p;
	size_t len, cap;
	bool oom;
};

static bool sb_grow(struct sb *b, size_t more)
{
	if (b->oom)
		return false;
	if (!engy_grow_by(&b->p, &b->cap, b->len + 1, more, 1))
		b->oom = true;
	return !b->oom;
}

static void sb_put(struct sb *b, const char *s, size_t n)
{
	if (!sb_grow(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_puts(struct sb *b, const char *s)
{
	sb_put(b, s, strlen(s));
}

static void sb_printf(struct sb *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_printf(struct sb *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(tmp)) {
		sb_put(b, tmp, (size_t)n);
		return;
	}
	if (!sb_grow(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* A JSON string; bytes >= 0x80 pass through (the text is UTF-8). */
static void sb_str(struct sb *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, run = 0;

	sb_put(b, "\"", 1);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[6];

		if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f)
			continue;
		sb_put(b, s + run, i - run);
		run = i + 1;
		esc[0] = '\\';
		switch (c) {
		case '"':
			esc[1] = '"';
			sb_put(b, esc, 2);
			break;
		case '\\':
			esc[1] = '\\';
			sb_put(b, esc, 2);
			break;
		case '\n':
			esc[1] = 'n';
			sb_put(b, esc, 2);
			break;
		case '\r':
			esc[1] = 'r';
			sb_put(b, esc, 2);
			break;
		case '\t':
			esc[1] = 't';
			sb_put(b, esc, 2);
			break;
		default:
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			sb_put(b, esc, 6);
		}
	}
	sb_put(b, s + run, n - run);
	sb_put(b, "\"", 1);
}

/* The shortest decimal that reads back as the same float; null if not
 * finite (JSON has no NaN; sglang's orjson writes null too). */
static void sb_float(struct sb *b, float v)
{
	char tmp[32];
	int prec;

	if (!isfinite(v)) {
		sb_put(b, "null", 4);
		return;
	}
	for (prec = 6; prec < 9; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, (double)v);
		if (strtof(tmp, NULL) == v)
			break;
	}
	if (prec == 9)
		snprintf(tmp, sizeof(tmp), "%.9g", (double)v);
	sb_puts(b, tmp);
}

static char *sb_done(struct sb *b, size_t *len)
{
	if (b->oom || !b->p) {
		free(b->p);
		return NULL;
	}
	if (len)
		*len = b->len;
	return b->p;
}

/* --- parsing ------------------------------------------------------------- */

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static bool is_uint(const cJSON *v, double max)
{
	double d;

	if (!cJSON_IsNumber(v))
		return false;
	d = v->valuedouble;
	return isfinite(d) && d >= 0 && d <= max && d == floor(d);
}

static bool is_int(const cJSON *v)
{
	double d;

	if (!cJSON_IsNumber(v))
		return false;
	d = v->valuedouble;
	return isfinite(d) && fabs(d) <= 9007199254740992.0 && d == floor(d);
}

/* Parse @body as one JSON value; trailing bytes other than space fail. */
static cJSON *parse_json(const void *body, size_t len, char *err, size_t errlen)
{
	const char *end = NULL;
	cJSON *j;

	if (!len) {
		fail(err, errlen,
		     "The request body is empty; send a JSON object.");
		return NULL;
	}
	if (memchr(body, '\0', len)) {
		fail(err, errlen, "Invalid JSON body: NUL byte");
		return NULL;
	}
	j = cJSON_ParseWithLengthOpts(body, len, &end, false);
	if (!j) {
		size_t at = end && end >= (const char *)body
				    ? (size_t)(end - (const char *)body)
				    : 0;

		fail(err, errlen, "Invalid JSON body (near byte %zu)", at);
		return NULL;
	}
	while (end && (size_t)(end - (const char *)body) < len &&
	       strchr(" \t\r\n", *end))
		end++;
	if (end && (size_t)(end - (const char *)body) < len) {
		cJSON_Delete(j);
		fail(err, errlen,
		     "Invalid JSON body: trailing data after the object");
		return NULL;
	}
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		fail(err, errlen, "The request body must be a JSON object.");
		return NULL;
	}
	return j;
}

static int get_bool(const cJSON *o, const char *key, bool *out, char *err,
		    size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v))
		return fail(err, errlen, "%s must be a boolean", key);
	*out = cJSON_IsTrue(v);
	return 0;
}

static int id_list(const cJSON *a, const char *what, size_t max, uint32_t **out,
		   size_t *n, char *err, size_t errlen)
{
	const cJSON *v;
	size_t i = 0, cnt = (size_t)cJSON_GetArraySize(a);

	if (cnt > max)
		return fail(err, errlen, "%s has %zu entries (at most %zu)",
			    what, cnt, max);
	/* A key given twice: the last one counts, the first is freed. */
	free(*out);
	*n = 0;
	*out = calloc(cnt ? cnt : 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	cJSON_ArrayForEach(v, a)
	{
		if (cJSON_IsArray(v))
			return fail(
				err, errlen,
				"Batch requests (a list of prompts) are not "
				"supported; send one request per prompt.");
		if (!is_uint(v, 4294967295.0))
			return fail(
				err, errlen,
				"%s must be a list of non-negative integers "
				"(entry %zu is not)",
				what, i);
		(*out)[i++] = (uint32_t)v->valuedouble;
	}
	*n = i;
	return 0;
}

/* Sampling keys sglang knows that only their default is honoured for. */
static int check_default(const cJSON *v, const char *key, char *err,
			 size_t errlen)
{
	static const struct {
		const char *key;
		double def; /* NAN: null/empty only */
	} d[] = {
		{ "min_p", 0 },
		{ "frequency_penalty", 0 },
		{ "presence_penalty", 0 },
		{ "repetition_penalty", 1 },
		{ "min_new_tokens", 0 },
		{ "n", 1 },
		{ "stop", NAN },
		{ "stop_regex", NAN },
		{ "regex", NAN },
		{ "ebnf", NAN },
		{ "structural_tag", NAN },
		{ "logit_bias", NAN },
		{ "custom_params", NAN },
	};
	size_t i;

	for (i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		if (strcmp(d[i].key, key) != 0)
			continue;
		if (cJSON_IsNull(v))
			return 0;
		if (isnan(d[i].def)
			    ? (cJSON_IsArray(v) || cJSON_IsObject(v)) &&
				      !v->child
			    : cJSON_IsNumber(v) && v->valuedouble == d[i].def)
			return 0;
		return fail(err, errlen,
			    "sampling_params.%s is not supported by this "
			    "server (only its default)",
			    key);
	}
	return 1; /* not one of them */
}

static int parse_sampling(const cJSON *sp, struct engy_sgl_gen *g, char *err,
			  size_t errlen)
{
	const cJSON *v;
	int rc;

	if (!sp || cJSON_IsNull(sp))
		return 0;
	if (!cJSON_IsObject(sp))
		return fail(err, errlen,
			    "sampling_params must be an object (a list "
			    "means a batch, which is not supported)");
	cJSON_ArrayForEach(v, sp)
	{
		const char *k = v->string;
		bool null = cJSON_IsNull(v);

		if (strcmp(k, "temperature") == 0) {
			if (null)
				continue;
			if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
			    v->valuedouble < 0)
				return fail(err, errlen,
					    "temperature must be non-negative");
			g->temperature =
				v->valuedouble < 1e-6 ? 0 : v->valuedouble;
		} else if (strcmp(k, "top_p") == 0) {
			if (null)
				continue;
			if (!cJSON_IsNumber(v) ||
			    !(v->valuedouble > 0 && v->valuedouble <= 1))
				return fail(err, errlen,
					    "top_p must be in (0, 1]");
			g->top_p = v->valuedouble;
		} else if (strcmp(k, "top_k") == 0) {
			if (null)
				continue;
			if (!is_int(v) ||
			    (v->valuedouble < 1 && v->valuedouble != -1) ||
			    v->valuedouble > 2147483647.0)
				return fail(
					err, errlen,
					"top_k must be -1 (disable), or at least 1");
			g->top_k = (int32_t)v->valuedouble;
		} else if (strcmp(k, "max_new_tokens") == 0) {
			if (null)
				continue;
			if (!is_int(v) || v->valuedouble < 0)
				return fail(
					err, errlen,
					"max_new_tokens must be at least 0");
			g->max_new_tokens = (int64_t)v->valuedouble;
			g->has_max_new_tokens = true;
		} else if (strcmp(k, "stop_token_ids") == 0) {
			if (null)
				continue;
			if (!cJSON_IsArray(v))
				return fail(
					err, errlen,
					"stop_token_ids must be a list of integers");
			rc = id_list(v, "stop_token_ids", ENGY_SGL_MAX_STOP_IDS,
				     &g->stop_ids, &g->n_stop, err, errlen);
			if (rc)
				return rc;
		} else if (strcmp(k, "sampling_seed") == 0) {
			if (null)
				continue;
			if (!is_uint(v, 9007199254740992.0))
				return fail(
					err, errlen,
					"sampling_seed must be a non-negative integer");
			g->seed = (uint64_t)v->valuedouble;
			g->has_seed = true;
		} else if (strcmp(k, "json_schema") == 0) {
			/* sglang's: the schema as a JSON string; the
			 * serve checks it against its backend */
			if (null)
				continue;
			if (!cJSON_IsString(v) || !v->valuestring[0])
				return fail(err, errlen,
					    "json_schema must be a JSON schema "
					    "as a string");
			free(g->json_schema);
			g->json_schema = strdup(v->valuestring);
			if (!g->json_schema)
				return -ENOMEM;
		} else if (strcmp(k, "ignore_eos") == 0) {
			if (null)
				continue;
			if (!cJSON_IsBool(v))
				return fail(err, errlen,
					    "ignore_eos must be a boolean");
			g->ignore_eos = cJSON_IsTrue(v);
		} else if (strcmp(k, "skip_special_tokens") == 0 ||
			   strcmp(k, "no_stop_trim") == 0 ||
			   strcmp(k, "spaces_between_special_tokens") == 0) {
			if (null)
				continue;
			if (!cJSON_IsBool(v))
				return fail(err, errlen, "%s must be a boolean",
					    k);
			if (k[0] == 's' && k[1] == 'k')
				g->skip_special_tokens = cJSON_IsTrue(v);
			else if (k[0] == 'n')
				g->no_stop_trim = cJSON_IsTrue(v);
		} else if (strcmp(k, "stream_interval") == 0) {
			/* Events follow the backend's batches; any interval
			 * is honoured by sending at least as often. */
			if (!null && (!is_int(v) || v->valuedouble < 1))
				return fail(
					err, errlen,
					"stream_interval must be a positive integer");
		} else {
			rc = check_default(v, k, err, errlen);
			if (rc < 0)
				return rc;
			if (rc > 0)
				return fail(err, errlen,
					    "Unknown sampling parameter: %.64s",
					    k);
		}
	}
	return 0;
}

/* Top-level fields sglang knows that this server cannot honour. */
static int check_unsupported(const cJSON *j, char *err, size_t errlen)
{
	static const char *const keys[] = {
		"input_embeds",	     "image_data",
		"video_data",	     "audio_data",
		"lora_path",	     "lora_id",
		"session_params",    "custom_logit_processor",
		"token_ids_logprob", "bootstrap_host",
		"bootstrap_room",    "return_routed_experts",
		"return_entropy",    NULL,
	};
	const cJSON *v;
	size_t i;

	for (i = 0; keys[i]; i++) {
		v = cJSON_GetObjectItemCaseSensitive(j, keys[i]);
		if (v && !cJSON_IsNull(v) && !cJSON_IsFalse(v))
			return fail(err, errlen,
				    "%s is not supported by this server",
				    keys[i]);
	}
	v = cJSON_GetObjectItemCaseSensitive(j, "logprob_start_len");
	if (v && !cJSON_IsNull(v) &&
	    !(cJSON_IsNumber(v) && v->valuedouble == -1))
		return fail(err, errlen,
			    "logprob_start_len other than -1 is not "
			    "supported by this server (output logprobs only)");
	return 0;
}

static int parse_rid(const cJSON *v, char **out, bool batch_msg, char *err,
		     size_t errlen)
{
	const unsigned char *p;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsArray(v) && batch_msg)
		return fail(err, errlen,
			    "Batch requests (a list of rids) are not "
			    "supported; send one request per prompt.");
	if (!cJSON_IsString(v))
		return fail(err, errlen, "rid must be a string");
	if (strlen(v->valuestring) > ENGY_SGL_MAX_RID)
		return fail(err, errlen, "rid is longer than %d bytes",
			    ENGY_SGL_MAX_RID);
	for (p = (const unsigned char *)v->valuestring; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			return fail(err, errlen, "rid must be printable ASCII");
	if (batch_msg && !v->valuestring[0])
		return 0; /* "" names nothing: the server makes one */
	*out = strdup(v->valuestring);
	return *out ? 0 : -ENOMEM;
}

int engy_sgl_parse_generate(const void *body, size_t len,
			    struct engy_sgl_gen *g, char *err, size_t errlen)
{
	const cJSON *v, *ids, *text;
	cJSON *j;
	int rc;

	memset(g, 0, sizeof(*g));
	g->temperature = 1.0;
	g->top_p = 1.0;
	g->top_k = -1;
	g->max_new_tokens = ENGY_SGL_DEFAULT_MAX_NEW;
	g->skip_special_tokens = true;
	j = parse_json(body, len, err, errlen);
	if (!j)
		return -EINVAL;
	ids = cJSON_GetObjectItemCaseSensitive(j, "input_ids");
	text = cJSON_GetObjectItemCaseSensitive(j, "text");
	if (ids && !cJSON_IsNull(ids)) {
		if (!cJSON_IsArray(ids)) {
			rc = fail(
				err, errlen,
				"input_ids must be a list of non-negative integers");
			goto out;
		}
		rc = id_list(ids, "input_ids", (size_t)1 << 24, &g->input_ids,
			     &g->n_input, err, errlen);
		if (rc)
			goto out;
		if (!g->n_input) {
			rc = fail(err, errlen, "input_ids is empty");
			goto out;
		}
	} else if (text && !cJSON_IsNull(text)) {
		if (cJSON_IsArray(text)) {
			rc = fail(err, errlen,
				  "Batch requests (a list of prompts) are not "
				  "supported; send one request per prompt.");
			goto out;
		}
		if (!cJSON_IsString(text)) {
			rc = fail(err, errlen, "text must be a string");
			goto out;
		}
		g->text = strdup(text->valuestring);
		if (!g->text) {
			rc = -ENOMEM;
			goto out;
		}
	} else {
		rc = fail(err, errlen,
			  "Either text or input_ids should be provided.");
		goto out;
	}
	rc = parse_rid(cJSON_GetObjectItemCaseSensitive(j, "rid"), &g->rid,
		       true, err, errlen);
	if (!rc)
		rc = get_bool(j, "stream", &g->stream, err, errlen);
	if (!rc)
		rc = get_bool(j, "return_logprob", &g->return_logprob, err,
			      errlen);
	if (!rc)
		rc = get_bool(j, "return_text_in_logprobs",
			      &g->return_text_in_logprobs, err, errlen);
	if (rc)
		goto out;
	v = cJSON_GetObjectItemCaseSensitive(j, "return_hidden_states");
	if (v && cJSON_IsString(v)) {
		rc = fail(err, errlen,
			  "return_hidden_states \"%.16s\" is not supported "
			  "by this server (true or false)",
			  v->valuestring);
		goto out;
	}
	rc = get_bool(j, "return_hidden_states", &g->return_hidden_states, err,
		      errlen);
	if (!rc)
		rc = get_bool(j, "return_gemm_trace", &g->return_gemm_trace,
			      err, errlen);
	if (!rc)
		rc = check_unsupported(j, err, errlen);
	v = cJSON_GetObjectItemCaseSensitive(j, "top_logprobs_num");
	if (!rc && v && !cJSON_IsNull(v)) {
		if (!cJSON_IsNumber(v) ||
		    v->valuedouble != floor(v->valuedouble) ||
		    v->valuedouble < 0)
			rc = fail(err, errlen,
				  "top_logprobs_num must be an integer >= 0");
		else if (v->valuedouble > ENGY_SGL_MAX_TOP_LOGPROBS)
			rc = fail(err, errlen,
				  "top_logprobs_num above %d is not "
				  "supported by this server",
				  ENGY_SGL_MAX_TOP_LOGPROBS);
		else if (g->return_logprob)
			g->top_logprobs_num = (uint32_t)v->valuedouble;
	}
	if (!rc)
		rc = parse_sampling(
			cJSON_GetObjectItemCaseSensitive(j, "sampling_params"),
			g, err, errlen);
out:
	cJSON_Delete(j);
	return rc;
}

void engy_sgl_gen_free(struct engy_sgl_gen *g)
{
	if (!g)
		return;
	free(g->input_ids);
	free(g->text);
	free(g->rid);
	free(g->stop_ids);
	free(g->json_schema);
	memset(g, 0, sizeof(*g));
}

int engy_sgl_parse_abort(const void *body, size_t len, struct engy_sgl_abort *a,
			 char *err, size_t errlen)
{
	cJSON *j;
	int rc;

	memset(a, 0, sizeof(*a));
	j = parse_json(body, len, err, errlen);
	if (!j)
		return -EINVAL;
	rc = parse_rid(cJSON_GetObjectItemCaseSensitive(j, "rid"), &a->rid,
		       false, err, errlen);
	if (!rc)
		rc = get_bool(j, "abort_all", &a->abort_all, err, errlen);
	if (!rc && !a->rid && !(a->rid = strdup("")))
		rc = -ENOMEM;
	cJSON_Delete(j);
	return rc;
}

void engy_sgl_abort_free(struct engy_sgl_abort *a)
{
	if (!a)
		return;
	free(a->rid);
	memset(a, 0, sizeof(*a));
}

/* --- writing -------------------------------------------------------------- */

static void put_finish(struct sb *b, const struct engy_sgl_out *o)
{
	switch (o->finish) {
	case ENGY_SGL_STOP:
		sb_printf(b, "{\"type\":\"stop\",\"matched\":%lld}",
			  (long long)o->matched);
		break;
	case ENGY_SGL_LENGTH:
		sb_printf(b, "{\"type\":\"length\",\"length\":%u}", o->length);
		break;
	case ENGY_SGL_ABORT:
		sb_puts(b, "{\"type\":\"abort\",\"message\":");
		if (o->abort_message)
			sb_str(b, o->abort_message, strlen(o->abort_message));
		else
			sb_puts(b, "null");
		if (o->abort_status)
			sb_printf(b, ",\"status_code\":%d,\"err_type\":null}",
				  o->abort_status);
		else
			sb_puts(b, ",\"status_code\":null,\"err_type\":null}");
		break;
	default:
		sb_puts(b, "null");
	}
}

static void put_row(struct sb *b, const float *r, uint32_t n)
{
	uint32_t j;

	sb_put(b, "[", 1);
	for (j = 0; j < n; j++) {
		if (j)
			sb_put(b, ",", 1);
		sb_float(b, r[j]);
	}
	sb_put(b, "]", 1);
}

/* input_top_logprobs (one position: null, as the prompt's logprob) and
 * output_top_logprobs: per output position a list of [logprob, id,
 * text-or-null], or null where the backend gave none. */
static void put_top(struct sb *b, const struct engy_sgl_out *o)
{
	size_t i, k, at;

	sb_puts(b, ",\"input_top_logprobs\":[null]");
	sb_puts(b, ",\"output_top_logprobs\":[");
	for (i = 0; i < o->n_ids; i++) {
		if (i)
			sb_put(b, ",", 1);
		at = i * o->top_n;
		if (!o->top_lp || isnan(o->top_lp[at])) {
			sb_puts(b, "null");
			continue;
		}
		sb_put(b, "[", 1);
		for (k = 0; k < o->top_n && !isnan(o->top_lp[at + k]); k++) {
			sb_puts(b, k ? ",[" : "[");
			sb_float(b, o->top_lp[at + k]);
			sb_printf(b, ",%u,", o->top_ids[at + k]);
			if (o->top_text && o->top_text[at + k])
				sb_str(b, o->top_text[at + k],
				       strlen(o->top_text[at + k]));
			else
				sb_puts(b, "null");
			sb_put(b, "]", 1);
		}
		sb_put(b, "]", 1);
	}
	sb_put(b, "]", 1);
}

static void put_logprobs(struct sb *b, const struct engy_sgl_out *o)
{
	size_t i;

	/* logprob_start_len -1: one input entry, the last prompt token.
	 * engy's backends do not score prompt tokens: its logprob is null. */
	sb_printf(b, ",\"input_token_logprobs\":[[null,%u,null]]",
		  o->last_prompt_id);
	sb_puts(b, ",\"output_token_logprobs\":[");
	for (i = 0; i < o->n_ids; i++) {
		sb_puts(b, i ? ",[" : "[");
		if (o->logprob_v)
			sb_float(b, o->logprob_v[i]);
		else
			sb_puts(b, "null");
		sb_printf(b, ",%u,", o->ids[i]);
		if (o->token_text && o->token_text[i])
			sb_str(b, o->token_text[i], strlen(o->token_text[i]));
		else
			sb_puts(b, "null");
		sb_put(b, "]", 1);
	}
	sb_put(b, "]", 1);
	if (o->top_n)
		put_top(b, o);
}

char *engy_sgl_response(const struct engy_sgl_out *o, bool sse, size_t *len)
{
	struct sb b = { 0 };
	size_t i;

	if (sse)
		sb_puts(&b, "data: ");
	sb_puts(&b, "{\"text\":");
	sb_str(&b, o->text ? o->text : "", o->text ? o->text_len : 0);
	sb_puts(&b, ",\"output_ids\":[");
	for (i = 0; i < o->n_ids; i++)
		sb_printf(&b, i ? ",%u" : "%u", o->ids[i]);
	sb_puts(&b, "],\"meta_info\":{\"id\":");
	sb_str(&b, o->rid ? o->rid : "", o->rid ? strlen(o->rid) : 0);
	sb_puts(&b, ",\"finish_reason\":");
	put_finish(&b, o);
	sb_printf(&b,
		  ",\"prompt_tokens\":%u,\"weight_version\":\"default\","
		  "\"completion_tokens\":%zu,\"cached_tokens\":%u",
		  o->prompt_tokens, o->n_ids, o->cached_tokens);
	if (o->logprobs)
		put_logprobs(&b, o);
	if (o->hidden) {
		sb_puts(&b, ",\"hidden_states\":[");
		if (o->prefill_empty)
			sb_puts(&b, o->n_rows ? "[]," : "[]");
		for (i = 0; i < o->n_rows; i++) {
			bool block = i == 0 && !o->prefill_empty;

			if (i)
				sb_put(&b, ",", 1);
			if (i < o->rows_elided) {
				sb_put(&b, "[]", 2);
				continue;
			}
			if (block)
				sb_put(&b, "[", 1);
			put_row(&b, o->rows + i * o->hidden_size,
				o->hidden_size);
			if (block)
				sb_put(&b, "]", 1);
		}
		sb_put(&b, "]", 1);
	}
	if (o->gemm) {
		sb_puts(&b, ",\"gemm\":");
		sb_puts(&b, o->gemm);
	}
	if (o->e2e_latency >= 0)
		sb_printf(&b, ",\"e2e_latency\":%.6f", o->e2e_latency);
	sb_puts(&b, "}}");
	if (sse)
		sb_puts(&b, "\n\n");
	return sb_done(&b, len);
}

char *engy_sgl_error(const char *msg, bool sse, size_t *len)
{
	struct sb b = { 0 };

	if (sse)
		sb_puts(&b, "data: ");
	sb_puts(&b, "{\"error\":{\"message\":");
	sb_str(&b, msg, strlen(msg));
	sb_puts(&b, "}}");
	if (sse)
		sb_puts(&b, "\n\n");
	return sb_done(&b, len);
}

char *engy_sgl_model_info(const char *model_path, const char *tokenizer_path,
			  size_t *len)
{
	struct sb b = { 0 };

	sb_puts(&b, "{\"model_path\":");
	sb_str(&b, model_path, strlen(model_path));
	sb_puts(&b, ",\"tokenizer_path\":");
	sb_str(&b, tokenizer_path, strlen(tokenizer_path));
	sb_puts(&b,
		",\"is_generation\":true,\"preferred_sampling_params\":null,"
		"\"weight_version\":\"default\"}");
	return sb_done(&b, len);
}
