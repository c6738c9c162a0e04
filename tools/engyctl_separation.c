/* SPDX-License-Identifier: MIT */
/*
 * engyctl separation: how far TOPLOC separates honest miners on other
 * kernel profiles from a cheat, measured in one process.
 *
 *   engyctl separation --checkpoint DIR --cheat DIR
 *                      [--profiles P,P,...] [--requests N] [--cheats M]
 *                      [--generate G] [--topk K] [--dbs B]
 *                      [--max-mismatches V] [--min-pass P]
 *                      [--max-mant-mean M] [--max-mant-median D]
 *                      [--seed S]
 *
 * Each honest request i runs on profile i mod |profiles| of the canonical
 * checkpoint, each cheat request on the cheat checkpoint (ref profile):
 * a pseudo-random prompt of 4..19 ids (xorshift from S), G greedy tokens
 * decoded with the KV cache, and the hidden rows of the last prompt
 * position and every generated token but the last proved as a miner
 * does (skip_prefill, decode_batching_size B).  The verifier is the
 * auditor's (specs/auditor.md §2): the canonical checkpoint on the ref
 * profile prefills prompt ‖ output[:-1], and engy_toploc_verify_rows()
 * judges the proofs under V and P (and M, a chunk's mantissa mean limit,
 * when given, and D its mantissa median's: the model spec's
 * toploc_mant_mean and toploc_mant_median, the verifier plugin's
 * max_mant_mean and max_mant_median).  One line per profile and one for the
 * cheat give the verdicts and the statistics the auditor records
 * (exponent mismatches per chunk, the request's P99 chunk score
 * exp_p99/K, mantissa mean and median); the last four lines give the
 * margins (honest maximum, cheat minimum).  Exit status 0 whatever the
 * verdicts (the caller judges).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "engyctl.h"
#include "qwen3.h"
#include "toploc.h"

#define MAX_PROFILES Q3_PROFILE_MAX

struct sep_args {
	const char *dir, *cheat, *profiles;
	uint64_t requests, cheats, gen, topk, dbs, v, seed;
	double p, mant_mean, mant_median;
};

/* What one group (a profile, or the cheat) saw. */
struct tally {
	const char *name;
	uint64_t requests, pass, cheat, unproven, nonzero, chunks;
	uint32_t exp_min, exp_max;
	double mant_mean_max, mant_median_max, p99_max, p99_min;
	double mant_mean_min, mant_median_min;
	uint32_t *exp; /* every chunk's exponent mismatches */
	size_t n_exp, cap_exp;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: engyctl separation --checkpoint DIR --cheat DIR\n"
		"                          [--profiles P,P,...] [--requests N] [--cheats M]\n"
		"                          [--generate G] [--topk K] [--dbs B]\n"
		"                          [--max-mismatches V] [--min-pass P]\n"
		"                          [--max-mant-mean M] [--max-mant-median D]\n"
		"                          [--seed S]\n"
		"\n"
		"Runs N honest requests spread over the kernel profiles (default\n"
		"ref,splitk,warp32,bf16act,splitk-f32) on the canonical checkpoint\n"
		"and M (default 100) on the cheat checkpoint, each a pseudo-random\n"
		"prompt and G (default 32) greedy tokens, proves their hidden rows\n"
		"and verifies them as the auditor does (a ref-profile prefill of the\n"
		"canonical checkpoint, TOPLOC with V mismatches per chunk and a pass\n"
		"ratio P, a chunk's mantissa mean at most M and median at most D\n"
		"when given; defaults 128, 32, 8, 0.99, unchecked, unchecked).\n"
		"Prints per group the verdicts\n"
		"and statistics, then the margins.\n");
}

static int parse_args(int argc, char **argv, struct sep_args *a)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;
		int bad = 0;

		if (!v)
			return i;
		i++;
		if (!strcmp(o, "--checkpoint"))
			a->dir = v;
		else if (!strcmp(o, "--cheat"))
			a->cheat = v;
		else if (!strcmp(o, "--profiles"))
			a->profiles = v;
		else if (!strcmp(o, "--requests"))
			bad = engyctl_parse_u64(v, 1000000, &a->requests);
		else if (!strcmp(o, "--cheats"))
			bad = engyctl_parse_u64(v, 1000000, &a->cheats);
		else if (!strcmp(o, "--generate"))
			bad = engyctl_parse_u64(v, 4096, &a->gen) || a->gen < 2;
		else if (!strcmp(o, "--topk"))
			bad = engyctl_parse_u64(v, ENGY_TOPLOC_MAX_TOPK,
						&a->topk) ||
			      !a->topk;
		else if (!strcmp(o, "--dbs"))
			bad = engyctl_parse_u64(v, ENGY_TOPLOC_MAX_DBS,
						&a->dbs) ||
			      !a->dbs;
		else if (!strcmp(o, "--max-mismatches"))
			bad = engyctl_parse_u64(v, ENGY_TOPLOC_MAX_TOPK, &a->v);
		else if (!strcmp(o, "--seed"))
			bad = engyctl_parse_u64(v, UINT64_MAX, &a->seed);
		else if (!strcmp(o, "--min-pass")) {
			a->p = strtod(v, &end);
			bad = !*v || *end || !(a->p >= 0 && a->p <= 1);
		} else if (!strcmp(o, "--max-mant-mean")) {
			a->mant_mean = strtod(v, &end);
			bad = !*v || *end || !(a->mant_mean > 0);
		} else if (!strcmp(o, "--max-mant-median")) {
			a->mant_median = strtod(v, &end);
			bad = !*v || *end || !(a->mant_median > 0);
		} else
			bad = 1;
		if (bad)
			return i - 1;
	}
	return 0;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint32_t argmax(const float *v, size_t n)
{
	size_t i, best = 0;

	for (i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	return (uint32_t)best;
}

/* Decodes @gen greedy tokens after @prompt into @out; the proved rows
 * (last prompt position, every generated token but the last) into @rows. */
static int generate(struct q3_model *m, const uint32_t *prompt, size_t np,
		    size_t gen, uint32_t *out, float *rows)
{
	const struct q3_config *c = engy_q3_model_config(m);
	struct q3_seq *s = engy_q3_seq_new(m, (uint32_t)(np + gen));
	struct q3_row *fr = malloc(np * sizeof(*fr));
	float *hid = malloc(np * c->hidden * sizeof(float));
	float *logits = malloc(c->vocab * sizeof(float));
	size_t i;
	int rc = -ENOMEM;

	if (!s || !fr || !hid || !logits)
		goto out;
	for (i = 0; i < np; i++)
		fr[i] = (struct q3_row){ s, prompt[i] };
	rc = engy_q3_forward(m, fr, np, hid);
	for (i = 0; !rc && i < gen; i++) {
		const float *h =
			i ? rows + i * c->hidden : hid + (np - 1) * c->hidden;

		if (!i)
			memcpy(rows, h, c->hidden * sizeof(float));
		rc = engy_q3_logits(m, h, 1, logits);
		if (rc)
			break;
		out[i] = argmax(logits, c->vocab);
		if (i + 1 < gen) {
			struct q3_row r = { s, out[i] };

			rc = engy_q3_forward(m, &r, 1,
					     rows + (i + 1) * c->hidden);
		}
	}
out:
	engy_q3_seq_free(s);
	free(fr);
	free(hid);
	free(logits);
	return rc;
}

/* The auditor's rows: prefill(prompt ‖ out[:-1]) from position np-1 on. */
static int recompute(struct q3_model *m, const uint32_t *prompt, size_t np,
		     const uint32_t *out, size_t gen, float *rows)
{
	const struct q3_config *c = engy_q3_model_config(m);
	size_t n = np + gen - 1, i;
	struct q3_seq *s = engy_q3_seq_new(m, (uint32_t)n);
	struct q3_row *fr = malloc(n * sizeof(*fr));
	float *hid = malloc(n * c->hidden * sizeof(float));
	int rc = -ENOMEM;

	if (s && fr && hid) {
		for (i = 0; i < n; i++)
			fr[i] = (struct q3_row){ s, i < np ? prompt[i]
							   : out[i - np] };
		rc = engy_q3_forward(m, fr, n, hid);
		if (!rc)
			memcpy(rows, hid + (np - 1) * c->hidden,
			       gen * c->hidden * sizeof(float));
	}
	engy_q3_seq_free(s);
	free(fr);
	free(hid);
	return rc;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank P99 of @n values (sorted in place). */
static uint32_t p99(uint32_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u32);
	return v[(99 * n + 99) / 100 - 1];
}

static int record(struct tally *t, const struct engy_toploc_report *rep,
		  uint32_t topk)
{
	uint32_t chunk[256], q;
	size_t i, n = rep->n_chunks < 256 ? rep->n_chunks : 256;
	double sc;
	bool nz = false;

	t->requests++;
	if (rep->verdict == ENGY_VERDICT_PASS)
		t->pass++;
	else if (rep->verdict == ENGY_VERDICT_CHEAT)
		t->cheat++;
	else
		t->unproven++;
	for (i = 0; i < n; i++) {
		const struct engy_toploc_stats *st = &rep->chunks[i];

		if (t->n_exp == t->cap_exp) {
			size_t cap = t->cap_exp ? 2 * t->cap_exp : 1024;
			uint32_t *p = realloc(t->exp, cap * sizeof(*p));

			if (!p)
				return -ENOMEM;
			t->exp = p;
			t->cap_exp = cap;
		}
		t->exp[t->n_exp++] = st->exp_mismatches;
		chunk[i] = st->exp_mismatches;
		if (!t->chunks || st->exp_mismatches < t->exp_min)
			t->exp_min = st->exp_mismatches;
		if (st->exp_mismatches > t->exp_max)
			t->exp_max = st->exp_mismatches;
		if (!t->chunks || st->mant_mean < t->mant_mean_min)
			t->mant_mean_min = st->mant_mean;
		if (!t->chunks || st->mant_median < t->mant_median_min)
			t->mant_median_min = st->mant_median;
		if (st->mant_mean > t->mant_mean_max)
			t->mant_mean_max = st->mant_mean;
		if (st->mant_median > t->mant_median_max)
			t->mant_median_max = st->mant_median;
		nz |= st->exp_mismatches || st->mant_mean > 0;
		t->chunks++;
	}
	if (n) {
		q = p99(chunk, n);
		sc = (double)q / topk;
		if (t->requests == 1 || sc > t->p99_max)
			t->p99_max = sc;
		if (t->requests == 1 || sc < t->p99_min)
			t->p99_min = sc;
	}
	t->nonzero += nz;
	return 0;
}

static void print_tally(struct tally *t, const char *kind)
{
	uint32_t q = t->n_exp ? p99(t->exp, t->n_exp) : 0;

	printf("group=%s kind=%s requests=%llu pass=%llu cheat=%llu "
	       "unproven=%llu nonzero=%llu chunks=%llu exp_min=%u exp_max=%u "
	       "exp_p99=%u p99_score_min=%.3f p99_score_max=%.3f "
	       "mant_mean_min=%.3f mant_mean_max=%.3f mant_median_min=%.0f "
	       "mant_median_max=%.0f\n",
	       t->name, kind, (unsigned long long)t->requests,
	       (unsigned long long)t->pass, (unsigned long long)t->cheat,
	       (unsigned long long)t->unproven, (unsigned long long)t->nonzero,
	       (unsigned long long)t->chunks, t->exp_min, t->exp_max, q,
	       t->p99_min, t->p99_max, t->mant_mean_min, t->mant_mean_max,
	       t->mant_median_min, t->mant_median_max);
}

/* One request on @gm, verified on @am, recorded in @t. */
static int one(const struct sep_args *a, struct q3_model *gm,
	       struct q3_model *am, uint64_t *rng, struct tally *t, float *mine,
	       float *theirs)
{
	const struct q3_config *c = engy_q3_model_config(am);
	struct engy_toploc_params p = { (uint32_t)a->topk, (uint32_t)a->dbs,
					true };
	struct engy_proof_limits lim = { .size = sizeof(lim),
					 .max_exp_mismatches = (uint32_t)a->v,
					 .min_pass_ratio = a->p,
					 .max_mant_mean = a->mant_mean,
					 .max_mant_median = a->mant_median };
	struct engy_toploc_report rep = { 0 };
	uint32_t prompt[20], out[4096];
	size_t np = 4 + xorshift(rng) % 16, i, n = 0;
	size_t plen = engy_toploc_proof_len(p.topk);
	uint8_t *proofs = NULL;
	char **b64 = NULL;
	size_t *lens = NULL;
	struct engy_rows rows = { mine, ENGY_DTYPE_F32, (uint32_t)a->gen,
				  c->hidden, 0 };
	int rc;

	for (i = 0; i < np; i++)
		prompt[i] = (uint32_t)(xorshift(rng) % c->vocab);
	rc = generate(gm, prompt, np, a->gen, out, mine);
	if (!rc)
		rc = engy_toploc_prove_rows(&rows, &p, &proofs, &n);
	if (!rc)
		rc = recompute(am, prompt, np, out, a->gen, theirs);
	if (rc)
		goto out;
	rc = -ENOMEM;
	b64 = calloc(n, sizeof(*b64));
	lens = calloc(n, sizeof(*lens));
	if (!b64 || !lens)
		goto out;
	for (i = 0; i < n; i++) {
		b64[i] = malloc(engy_base64_enc_len(plen) + 1);
		if (!b64[i])
			goto out;
		lens[i] = engy_base64_encode(b64[i], proofs + i * plen, plen);
	}
	rows.data = theirs;
	rc = engy_toploc_verify_rows(&rows, &p, (const char *const *)b64, lens,
				     n, &lim, &rep);
	if (!rc)
		rc = record(t, &rep, p.topk);
	engy_toploc_report_free(&rep);
out:
	for (i = 0; b64 && i < n; i++)
		free(b64[i]);
	free(b64);
	free(lens);
	free(proofs);
	return rc;
}

static int load(const char *dir, int profile, struct q3_model **m)
{
	struct q3_load_opts lo = { .threads = 1, .profile = profile };
	char err[512] = "";
	int rc = engy_q3_model_load(dir, &lo, m, err, sizeof(err));

	if (rc)
		return engyctl_fail("separation: %s: %s", dir,
				    err[0] ? err : strerror(-rc));
	return 0;
}

int engyctl_separation(int argc, char **argv);

int engyctl_separation(int argc, char **argv)
{
	struct sep_args a = { .profiles =
				      "ref,splitk,warp32,bf16act,splitk-f32",
			      .requests = 1000,
			      .cheats = 100,
			      .gen = 32,
			      .topk = 128,
			      .dbs = 32,
			      .v = 8,
			      .seed = 1,
			      .p = 0.99 };
	struct q3_model *gm[MAX_PROFILES] = { 0 }, *am = NULL, *cm = NULL;
	struct tally t[MAX_PROFILES + 1];
	int prof[MAX_PROFILES], np = 0, rc = 0, bad, i;
	uint64_t rng, r, hmax = 0, cmin = UINT64_MAX;
	double hp = 0, cp = 1, hmean = 0, hmed = 0;
	char *list = NULL, *tok, *save = NULL;
	float *mine = NULL, *theirs = NULL;
	size_t h;

	if (argc == 2 &&
	    (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	bad = parse_args(argc, argv, &a);
	if (bad || !a.dir || !a.cheat) {
		if (bad)
			fprintf(stderr,
				"engyctl separation: bad argument '%s'\n",
				argv[bad]);
		usage(stderr);
		return 2;
	}
	memset(t, 0, sizeof(t));
	list = strdup(a.profiles);
	if (!list)
		return engyctl_fail("separation: out of memory");
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int p = engy_q3_profile_parse(tok);

		if (p < 0 || np == MAX_PROFILES) {
			free(list);
			return engyctl_fail(
				"separation: --profiles: '%s' is not a profile "
				"(ref, splitk, warp32, bf16act, splitk-f32, "
				"fp8-bf16, bf16dp, amx), or "
				"one too many",
				tok);
		}
		prof[np] = p;
		t[np].name = engy_q3_profile_name(p);
		np++;
	}
	free(list);
	if (!np)
		return engyctl_fail("separation: --profiles names none");
	t[np].name = "cheat";
	for (i = 0; i < np && !rc; i++)
		rc = load(a.dir, prof[i], &gm[i]);
	if (!rc)
		rc = load(a.dir, Q3_PROFILE_REF, &am);
	if (!rc)
		rc = load(a.cheat, Q3_PROFILE_REF, &cm);
	if (rc)
		goto out;
	h = engy_q3_model_config(am)->hidden;
	mine = malloc(a.gen * h * sizeof(float));
	theirs = malloc(a.gen * h * sizeof(float));
	if (!mine || !theirs) {
		rc = engyctl_fail("separation: out of memory");
		goto out;
	}
	rng = a.seed * 0x9E3779B97F4A7C15ull + 1;
	for (r = 0; r < a.requests + a.cheats; r++) {
		bool honest = r < a.requests;
		int g = honest ? (int)(r % (uint64_t)np) : np;
		int e = one(&a, honest ? gm[g] : cm, am, &rng, &t[g], mine,
			    theirs);

		if (e) {
			rc = engyctl_fail("separation: request %llu: %s",
					  (unsigned long long)r, strerror(-e));
			goto out;
		}
	}
	for (i = 0; i <= np; i++) {
		print_tally(&t[i], i < np ? "honest" : "cheat");
		if (i < np && t[i].requests) {
			hmax = t[i].exp_max > hmax ? t[i].exp_max : hmax;
			hp = t[i].p99_max > hp ? t[i].p99_max : hp;
			hmean = fmax(hmean, t[i].mant_mean_max);
			hmed = fmax(hmed, t[i].mant_median_max);
		}
	}
	if (t[np].requests) {
		cmin = t[np].exp_min;
		cp = t[np].p99_min;
	}
	printf("margin metric=exp_mismatches honest_max=%llu v=%llu "
	       "cheat_min=%llu\n",
	       (unsigned long long)hmax, (unsigned long long)a.v,
	       (unsigned long long)(t[np].requests ? cmin : 0));
	printf("margin metric=p99_score honest_max=%.3f cheat_min=%.3f\n", hp,
	       t[np].requests ? cp : 0.0);
	printf("margin metric=mant_mean honest_max=%.3f cheat_min=%.3f\n",
	       hmean, t[np].mant_mean_min);
	printf("margin metric=mant_median honest_max=%.0f cheat_min=%.0f\n",
	       hmed, t[np].mant_median_min);
out:
	for (i = 0; i < np; i++)
		engy_q3_model_free(gm[i]);
	engy_q3_model_free(am);
	engy_q3_model_free(cm);
	for (i = 0; i <= np; i++)
		free(t[i].exp);
	free(mine);
	free(theirs);
	return rc;
}
