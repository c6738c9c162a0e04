/* SPDX-License-Identifier: MIT */
/* The pure rules of driving an sglang serve (see sgl_request.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "grow.h"
#include "sgl_resp.h"
#include "sgl_request.h"

struct sbuf {
	char *p;
	size_t n, cap;
	bool oom;
};

static void put(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (!engy_grow_by(&b->p, &b->cap, b->n + 1, n, 1)) {
		b->oom = true;
		return;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void puts_(struct sbuf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void putf(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void putf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[96];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		b->oom = true;
		return;
	}
	put(b, tmp, (size_t)n);
}

/* ,"name":<double>; a JSON number takes a dot whatever LC_NUMERIC says. */
static void put_double(struct sbuf *b, const char *name, double v)
{
	char tmp[40], *c;

	snprintf(tmp, sizeof(tmp), "%.17g", v);
	for (c = tmp; *c; c++)
		if (*c == ',')
			*c = '.';
	putf(b, ",\"%s\":%s", name, tmp);
}

/* Ids as a JSON list body, fast: this is the whole prompt. */
static void put_ids(struct sbuf *b, const uint32_t *ids, size_t n, bool comma)
{
	char tmp[16], *e;
	uint32_t v;
	size_t i;

	for (i = 0; i < n && !b->oom; i++) {
		e = tmp + sizeof(tmp);
		v = ids[i];
		do {
			*--e = (char)('0' + v % 10);
			v /= 10;
		} while (v);
		if (comma || i)
			*--e = ',';
		put(b, e, (size_t)(tmp + sizeof(tmp) - e));
	}
}

static char *done(struct sbuf *b, size_t *len)
{
	if (b->oom) {
		free(b->p);
		return NULL;
	}
	*len = b->n;
	return b->p;
}

char *sgl_body_generate(const struct sgl_call_spec *c, size_t *len)
{
	const struct sgl_sampling *sp = c->sp;
	struct sbuf b = { 0 };

	puts_(&b, "{\"input_ids\":[");
	put_ids(&b, c->prompt, c->n_prompt, false);
	put_ids(&b, c->out, c->n_out, c->n_prompt > 0);
	putf(&b, "],\"sampling_params\":{\"max_new_tokens\":%u", c->ask);
	put_double(&b, "temperature", sp->temperature);
	if (sp->top_p > 0 && sp->top_p < 1)
		put_double(&b, "top_p", sp->top_p);
	if (sp->top_k > 0)
		putf(&b, ",\"top_k\":%d", (int)sp->top_k);
	if (sp->has_seed) /* sglang takes a JSON-safe integer */
		putf(&b, ",\"sampling_seed\":%llu",
		     (unsigned long long)(sp->seed & ((1ull << 53) - 1)));
	if (sp->n_stop) {
		puts_(&b, ",\"stop_token_ids\":[");
		put_ids(&b, sp->stop, sp->n_stop, false);
		puts_(&b, "]");
	}
	if (sp->json_schema) { /* sglang takes the schema as a string */
		cJSON *j = cJSON_CreateString(sp->json_schema);
		char *t = j ? cJSON_PrintUnformatted(j) : NULL;

		cJSON_Delete(j);
		if (!t)
			b.oom = true;
		else
			puts_(&b, ",\"json_schema\":"), puts_(&b, t);
		free(t);
	}
	if (sp->ignore_eos)
		puts_(&b, ",\"ignore_eos\":true");
	puts_(&b, "},\"rid\":\"");
	puts_(&b, c->rid);
	puts_(&b, "\",\"return_logprob\":");
	puts_(&b, c->logprob ? "true" : "false");
	if (c->logprob && c->top_n)
		putf(&b, ",\"top_logprobs_num\":%u", c->top_n);
	if (c->hidden)
		puts_(&b, ",\"return_hidden_states\":true");
	if (c->gemm_trace)
		puts_(&b, ",\"return_gemm_trace\":true");
	if (c->all_positions)
		puts_(&b, ",\"logprob_start_len\":0");
	puts_(&b, ",\"stream\":");
	puts_(&b, c->stream ? "true}" : "false}");
	return done(&b, len);
}

char *sgl_body_abort(const char *rid, size_t *len)
{
	struct sbuf b = { 0 };

	puts_(&b, "{\"rid\":\"");
	puts_(&b, rid);
	puts_(&b, "\"}");
	return done(&b, len);
}

bool sgl_rid_ok(const char *rid)
{
	size_t n = 0;

	for (; rid[n]; n++)
		if (rid[n] < 0x20 || rid[n] > 0x7e || rid[n] == '"' ||
		    rid[n] == '\\')
			return false;
	return n >= 1 && n <= 128;
}

int sgl_plan_chunk(size_t n_out, uint32_t max_new, uint32_t gen_chunk,
		   bool greedy, struct sgl_chunk *c)
{
	size_t left = n_out < max_new ? max_new - n_out : 0;

	if (!left)
		return 1;
	if (left > gen_chunk)
		left = gen_chunk;
	c->drop = n_out && greedy ? 1 : 0;
	c->feed_out = n_out - c->drop;
	c->ask = (uint32_t)left + c->drop;
	return 0;
}

bool sgl_chunk_more(int finish, size_t got, uint32_t ask, size_t n_out,
		    uint32_t max_new)
{
	return finish == ENGY_SGLRESP_FINISH_LENGTH && got >= ask &&
	       n_out < max_new;
}

long sgl_list_new_from(size_t have, size_t n, int64_t total)
{
	if (total >= 0 && (uint64_t)n < (uint64_t)total &&
	    (uint64_t)(have + n) == (uint64_t)total)
		return 0; /* a delta */
	if (n >= have)
		return (long)have;
	return -1;
}

static size_t min2(size_t a, size_t b)
{
	return a < b ? a : b;
}

size_t sgl_take(const struct sgl_avail *a)
{
	size_t n = min2(a->ids, min2(a->rows, a->lps));
	size_t start = a->taken > a->drop ? a->taken : a->drop;

	if (a->room < SIZE_MAX - start)
		n = min2(n, start + a->room);
	return n > a->taken ? n : a->taken;
}

static bool has(const char *s, const char *needle)
{
	return strstr(s, needle) != NULL;
}

void sgl_error_text(long status, const char *msg, char *out, size_t cap)
{
	/* sglang: "The server is not configured to return hidden states"
	 * (400), or "...hidden states mode exceeds the server maximum". */
	if (has(msg, "hidden states") || has(msg, "hidden_states")) {
		snprintf(out, cap, "%s", SGL_NO_HIDDEN_MSG);
		return;
	}
	if (status && msg[0])
		snprintf(out, cap, "serve returned HTTP %ld: %s", status, msg);
	else if (status)
		snprintf(out, cap, "serve returned HTTP %ld", status);
	else
		snprintf(out, cap, "serve error: %s", msg);
}
