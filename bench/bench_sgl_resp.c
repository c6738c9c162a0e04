/* SPDX-License-Identifier: MIT */
/*
 * bench_sgl_resp: hidden-state ingestion from an sglang /generate
 * response of 4,096 tokens x 2,048 floats (bf16 values in shortest decimal
 * form, as the serve prints them; element 0 a one-row prefill block), by
 * the streaming parser (fed 64 KB at a time, as the network delivers it)
 * against cJSON (parse + walk) in the same run.  Both fill the same flat
 * float32 buffer, touched beforehand, so the RSS growth each shows is its
 * own working memory.
 *
 * Target (issue 6): at least 5x cJSON's speed, flat memory.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sgl_resp.h"

#define TOKENS	     4096
#define HIDDEN	     2048
#define FEED	     (64 * 1024)
#define TARGET_RATIO 5.0

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double maxrss_mb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_maxrss / 1024.0;
}

static uint64_t rs = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

/* A bf16 value of a hidden state, roughly N(0, 1), in shortest form. */
static void bf16_text(char *s, size_t cap)
{
	double g = 0;
	float f;
	uint32_t u;
	int i, k;

	for (i = 0; i < 4; i++)
		g += (double)(rnd() >> 11) / 9007199254740992.0;
	f = (float)((g - 2.0) * 1.7);
	memcpy(&u, &f, sizeof(u));
	u &= 0xffff0000u;
	memcpy(&f, &u, sizeof(f));
	for (k = 1; k <= 17; k++) {
		snprintf(s, cap, "%.*g", k, (double)f);
		if (strtod(s, NULL) == (double)f)
			return;
	}
}

struct text {
	char *p;
	size_t n, cap;
};

static void put(struct text *t, const char *s, size_t n)
{
	if (t->n + n + 1 > t->cap) {
		t->cap = (t->n + n + 1) * 2;
		t->p = realloc(t->p, t->cap);
		if (!t->p)
			abort();
	}
	memcpy(t->p + t->n, s, n);
	t->n += n;
	t->p[t->n] = '\0';
}

static void puts_(struct text *t, const char *s)
{
	put(t, s, strlen(s));
}

static void make_response(struct text *t)
{
	static char pool[8192][24];
	char buf[64];
	size_t i, r, c;

	for (i = 0; i < 8192; i++)
		bf16_text(pool[i], sizeof(pool[i]));
	puts_(t, "{\"text\":\"(4096 tokens of text)\",\"output_ids\":[");
	for (i = 0; i < TOKENS; i++) {
		snprintf(buf, sizeof(buf), "%s%zu", i ? "," : "", 1000 + i);
		puts_(t, buf);
	}
	puts_(t, "],\"meta_info\":{\"id\":\"engy-0\",\"finish_reason\":"
		 "{\"type\":\"length\",\"length\":4096},"
		 "\"prompt_tokens\":812,\"completion_tokens\":4096,"
		 "\"cached_tokens\":0,\"output_token_logprobs\":[");
	for (i = 0; i < TOKENS; i++) {
		snprintf(buf, sizeof(buf), "%s[-0.%zu,%zu,null]", i ? "," : "",
			 rnd() % 100000, 1000 + i);
		puts_(t, buf);
	}
	puts_(t, "],\"hidden_states\":[");
	for (r = 0; r < TOKENS; r++) {
		puts_(t, r == 0 ? "[[" : ",[");
		for (c = 0; c < HIDDEN; c++) {
			if (c)
				put(t, ",", 1);
			puts_(t, pool[rnd() % 8192]);
		}
		puts_(t, r == 0 ? "]]" : "]");
	}
	puts_(t, "],\"e2e_latency\":41.5}}");
}

struct sink {
	float *out;
	size_t rows;
};

static int on_row(void *arg, uint32_t elem, uint32_t row, const float *v,
		  uint32_t width)
{
	struct sink *s = arg;

	if (width != HIDDEN || elem >= TOKENS)
		return -EINVAL;
	memcpy(s->out + (size_t)elem * HIDDEN, v, HIDDEN * sizeof(float));
	s->rows++;
	return 0;
}

static int run_jf(const struct text *t, float *out)
{
	struct sink s = { out, 0 };
	struct engy_sglresp_opts o = { .on_row = on_row, .arg = &s };
	struct engy_jf *j;
	size_t at, k;
	int rc = 0;

	if (engy_sglresp_new(&o, &j))
		return -1;
	for (at = 0; at < t->n && !rc; at += k) {
		k = t->n - at < FEED ? t->n - at : FEED;
		rc = engy_sglresp_feed(j, t->p + at, k);
	}
	if (!rc)
		rc = engy_sglresp_finish(j);
	if (!rc && (s.rows != TOKENS || engy_sglresp_resp(j)->n_ids != TOKENS))
		rc = -1;
	engy_sglresp_free(j);
	return rc;
}

static int run_cjson(const struct text *t, float *out)
{
	cJSON *root = cJSON_ParseWithLength(t->p, t->n), *meta, *hs, *e, *x;
	size_t r = 0, c;
	int rc = -1;

	meta = cJSON_GetObjectItemCaseSensitive(root, "meta_info");
	hs = cJSON_GetObjectItemCaseSensitive(meta, "hidden_states");
	if (!cJSON_IsArray(hs))
		goto out;
	cJSON_ArrayForEach(e, hs)
	{
		if (r == 0) /* the prefill block: its last row */
			e = cJSON_GetArrayItem(e, cJSON_GetArraySize(e) - 1);
		c = 0;
		cJSON_ArrayForEach(x, e)
		{
			if (!cJSON_IsNumber(x) || c >= HIDDEN)
				goto out;
			out[r * HIDDEN + c++] = (float)x->valuedouble;
		}
		if (c != HIDDEN)
			goto out;
		if (r == 0)
			e = cJSON_GetArrayItem(hs, 0);
		r++;
	}
	rc = r == TOKENS ? 0 : -1;
out:
	cJSON_Delete(root);
	return rc;
}

int main(void)
{
	size_t nf = (size_t)TOKENS * HIDDEN;
	float *a = malloc(nf * sizeof(float)), *b = malloc(nf * sizeof(float));
	struct text t = { 0 };
	double t0, best_jf = 1e30, best_cj = 1e30, rss0, rss_jf, rss_cj, mb;
	int i, same;

	if (!a || !b)
		return 1;
	make_response(&t);
	memset(a, 0, nf * sizeof(float));
	memset(b, 0xff, nf * sizeof(float));
	mb = (double)t.n / 1e6;

	rss0 = maxrss_mb();
	for (i = 0; i < 3; i++) {
		t0 = now();
		if (run_jf(&t, a)) {
			fprintf(stderr, "bench_sgl_resp: parse failed\n");
			return 1;
		}
		t0 = now() - t0;
		if (t0 < best_jf)
			best_jf = t0;
	}
	rss_jf = maxrss_mb() - rss0;

	rss0 = maxrss_mb();
	for (i = 0; i < 2; i++) {
		t0 = now();
		if (run_cjson(&t, b)) {
			fprintf(stderr, "bench_sgl_resp: cJSON failed\n");
			return 1;
		}
		t0 = now() - t0;
		if (t0 < best_cj)
			best_cj = t0;
	}
	rss_cj = maxrss_mb() - rss0;
	same = memcmp(a, b, nf * sizeof(float)) == 0;

	printf("bench_sgl_resp: /generate response, %d tokens x %d floats, "
	       "%.1f MB of JSON\n",
	       TOKENS, HIDDEN, mb);
	printf("  engy_jf (64 KB feeds)  %8.1f MB/s  %6.3f s   RSS growth "
	       "%7.1f MB\n",
	       mb / best_jf, best_jf, rss_jf);
	printf("  cJSON parse + walk     %8.1f MB/s  %6.3f s   RSS growth "
	       "%7.1f MB\n",
	       mb / best_cj, best_cj, rss_cj);
	printf("  speed ratio %.1fx (target >= %.0fx), rows identical: %s\n",
	       best_cj / best_jf, TARGET_RATIO, same ? "yes" : "NO");
	printf("bench_sgl_resp: target %s\n",
	       same && best_cj / best_jf >= TARGET_RATIO ? "met" : "NOT met");
	free(t.p);
	free(a);
	free(b);
	return 0;
}
