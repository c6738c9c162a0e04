/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the streaming /generate response parser differentially.  The first
 * byte picks the options (skip_elems, all_block_rows, top_n 0 or 2) and a
 * piece size;
 * the rest is parsed whole and in pieces, which must agree on success and,
 * when both succeed, on every field and every row (hashed).  Short inputs
 * are also tried as one number against strtof.  meta_info.gemm (engy's
 * extension) is hashed too and checked with engy_sglresp_gemm_json().
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sgl_resp.h"

struct acc {
	uint64_t h;
	size_t rows;
};

static void mix(struct acc *a, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		a->h = (a->h ^ b[i]) * 0x100000001b3ull;
}

static int on_row(void *arg, uint32_t elem, uint32_t row, const float *v,
		  uint32_t width)
{
	struct acc *a = arg;

	if (!width)
		abort();
	mix(a, &elem, sizeof(elem));
	mix(a, &row, sizeof(row));
	mix(a, v, width * sizeof(float));
	a->rows++;
	return 0;
}

static void resp_hash(struct acc *a, const struct engy_sglresp_resp *r)
{
	mix(a, &r->n_ids, sizeof(r->n_ids));
	mix(a, r->ids, r->n_ids * sizeof(*r->ids));
	mix(a, &r->n_lp, sizeof(r->n_lp));
	mix(a, r->lp_ids, r->n_lp * sizeof(*r->lp_ids));
	mix(a, r->lp, r->n_lp * sizeof(*r->lp));
	mix(a, &r->prompt_tokens, sizeof(r->prompt_tokens));
	mix(a, &r->completion_tokens, sizeof(r->completion_tokens));
	mix(a, &r->cached_tokens, sizeof(r->cached_tokens));
	mix(a, &r->finish, sizeof(r->finish));
	mix(a, &r->matched, sizeof(r->matched));
	mix(a, r->finish_msg, strlen(r->finish_msg));
	mix(a, r->error, strlen(r->error));
	mix(a, &r->n_elems, sizeof(r->n_elems));
	mix(a, &r->elem0_rows, sizeof(r->elem0_rows));
	mix(a, &r->width, sizeof(r->width));
	mix(a, &r->has_top, sizeof(r->has_top));
	mix(a, &r->n_top, sizeof(r->n_top));
	mix(a, r->top_cnt, r->n_top);
	/* meta_info.gemm (engy's extension): the same in pieces, and its
	 * check gives a canonical text or a reason, never a crash */
	{
		const struct engy_sglresp_gemm *g = &r->gemm;
		const char *why;
		char *json;
		int rc;

		mix(a, &g->present, sizeof(g->present));
		mix(a, &g->bad, sizeof(g->bad));
		if (g->present) {
			mix(a, g->hashing, strlen(g->hashing));
			mix(a, g->gemm_root, strlen(g->gemm_root));
			mix(a, g->spec_root, strlen(g->spec_root));
			mix(a, g->sampling, strlen(g->sampling));
			mix(a, g->rid, strlen(g->rid));
			mix(a, &g->n_prompt, sizeof(g->n_prompt));
			mix(a, &g->n_tokens, sizeof(g->n_tokens));
		}
		rc = engy_sglresp_gemm_json(g, &json, &why);
		if ((rc == 0) != (json != NULL) ||
		    (rc && rc != -ENOMEM && !why))
			abort();
		if (json && strlen(json) > 1024)
			abort(); /* bounded */
		free(json);
	}
}

/* Every position holds at most top_n alternatives, each read back. */
static void top_check(struct acc *a, const struct engy_sglresp_resp *r,
		      uint32_t top_n)
{
	size_t i, k;

	if (!top_n && (r->has_top || r->n_top))
		abort(); /* not asked: skipped */
	for (i = 0; i < r->n_top; i++) {
		if (r->top_cnt[i] > top_n)
			abort();
		for (k = 0; k < r->top_cnt[i]; k++) {
			mix(a, &r->top_ids[i * top_n + k], sizeof(uint32_t));
			mix(a, &r->top_lp[i * top_n + k], sizeof(float));
		}
	}
}

static int run(const uint8_t *p, size_t n, size_t piece, uint8_t opt,
	       struct acc *a)
{
	struct engy_sglresp_opts o = {
		.skip_elems = opt & 3,
		.all_block_rows = (opt & 4) != 0,
		.max_width = 4096,
		.max_ids = 4096,
		.on_row = on_row,
		.arg = a,
		.top_n = (opt & 8) ? 2 : 0,
	};
	struct engy_jf *j;
	size_t at, k;
	int rc = 0;

	a->h = 0xcbf29ce484222325ull;
	a->rows = 0;
	if (engy_sglresp_new(&o, &j))
		abort();
	for (at = 0; at < n && !rc; at += k) {
		k = n - at < piece ? n - at : piece;
		rc = engy_sglresp_feed(j, (const char *)p + at, k);
	}
	if (!rc)
		rc = engy_sglresp_finish(j);
	if (rc && !engy_sglresp_error(j)[0])
		abort(); /* every failure says why */
	if (!rc) {
		resp_hash(a, engy_sglresp_resp(j));
		top_check(a, engy_sglresp_resp(j), o.top_n);
	}
	engy_sglresp_free(j);
	return rc;
}

static void number_vs_strtof(const uint8_t *p, size_t n)
{
	char s[64];
	float f, want;

	if (n == 0 || n >= sizeof(s))
		return;
	memcpy(s, p, n);
	s[n] = '\0';
	if (strlen(s) != n || engy_sglresp_parse_float(s, n, &f))
		return;
	want = strtof(s, NULL);
	if (memcmp(&f, &want, sizeof(f)) != 0 && !(isnan(f) && isnan(want))) {
		fprintf(stderr, "fuzz_sgl_resp: %s: %a != %a\n", s, (double)f,
			(double)want);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct acc whole, cut;
	size_t piece;
	int a, b;

	if (size < 1)
		return 0;
	number_vs_strtof(data + 1, size - 1);
	piece = 1 + (data[0] >> 3) % 13;
	a = run(data + 1, size - 1, size, data[0], &whole);
	b = run(data + 1, size - 1, piece, data[0], &cut);
	if (!a != !b || (!a && (whole.h != cut.h || whole.rows != cut.rows))) {
		fprintf(stderr,
			"fuzz_sgl_resp: pieces of %zu differ "
			"(%d, %d)\n",
			piece, a, b);
		abort();
	}
	return 0;
}
