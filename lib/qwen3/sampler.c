/* SPDX-License-Identifier: MIT */
/*
 * Sampling.  With temperature T > 0: candidates are the top_k logits (all
 * when top_k is 0) sorted by logit, descending (ties: lower id first);
 * probabilities softmax(logit / T) over them in double; top_p keeps the
 * shortest prefix whose mass reaches top_p (at least one); one uniform
 * draw walks the kept prefix.  The same logits, parameters and generator
 * state always give the same token.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "sampler.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

void engy_q3_rng_seed(struct q3_rng *r, uint64_t seed)
{
	int i;

	for (i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t engy_q3_rng_next(struct q3_rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

double engy_q3_rng_uniform(struct q3_rng *r)
{
	return (double)(engy_q3_rng_next(r) >> 11) * 0x1p-53;
}

int engy_q3_sampling_check(const struct q3_sampling *p, const char **why)
{
	if (!(p->temperature >= 0) || !isfinite(p->temperature)) {
		*why = "temperature must be >= 0";
		return -EINVAL;
	}
	if (!(p->top_p > 0 && p->top_p <= 1)) {
		*why = "top_p must be in (0, 1]";
		return -EINVAL;
	}
	if (p->top_k < 0) {
		*why = "top_k must be >= 0";
		return -EINVAL;
	}
	return 0;
}

struct cand {
	float logit;
	uint32_t id;
};

struct q3_sampler {
	uint32_t vocab;
	struct cand *c;
	double *p;
};

struct q3_sampler *engy_q3_sampler_new(uint32_t vocab)
{
	struct q3_sampler *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->vocab = vocab;
	s->c = malloc(vocab * sizeof(*s->c));
	s->p = malloc(vocab * sizeof(*s->p));
	if (!s->c || !s->p) {
		engy_q3_sampler_free(s);
		return NULL;
	}
	return s;
}

void engy_q3_sampler_free(struct q3_sampler *s)
{
	if (!s)
		return;
	free(s->c);
	free(s->p);
	free(s);
}

/* Descending logit, then ascending id: a total order, so qsort is stable enough. */
static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->logit != y->logit)
		return x->logit > y->logit ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The log-softmax normaliser: max + log(sum(exp(logit - max))). */
static void lse_of(const float *logits, uint32_t vocab, float *mx, double *ls)
{
	double sum = 0;
	uint32_t i;

	*mx = -INFINITY;
	for (i = 0; i < vocab; i++)
		*mx = fmaxf(*mx, logits[i]);
	for (i = 0; i < vocab; i++)
		sum += exp((double)logits[i] - *mx);
	*ls = log(sum);
}

static float logprob_of(const float *logits, uint32_t vocab, uint32_t id)
{
	float mx;
	double ls;

	lse_of(logits, vocab, &mx, &ls);
	return (float)((double)logits[id] - mx - ls);
}

/* The k best into s->c[0..k), sorted; a partial selection when k is small. */
static uint32_t top_candidates(struct q3_sampler *s, const float *logits,
			       uint32_t k)
{
	uint32_t i, n = 0, j;

	if (k == 0 || k >= s->vocab || k > 256) {
		for (i = 0; i < s->vocab; i++)
			s->c[i] = (struct cand){ logits[i], i };
		qsort(s->c, s->vocab, sizeof(*s->c), cmp_cand);
		return k && k < s->vocab ? k : s->vocab;
	}
	/* Insertion into a sorted array of at most k. */
	for (i = 0; i < s->vocab; i++) {
		struct cand x = { logits[i], i };

		if (n == k && cmp_cand(&x, &s->c[k - 1]) >= 0)
			continue;
		j = n < k ? n++ : k - 1;
		while (j > 0 && cmp_cand(&x, &s->c[j - 1]) < 0) {
			s->c[j] = s->c[j - 1];
			j--;
		}
		s->c[j] = x;
	}
	return n;
}

uint32_t engy_q3_sample(struct q3_sampler *s, const float *logits,
			const struct q3_sampling *p, struct q3_rng *rng,
			float *logprob)
{
	uint32_t i, n, best = 0, keep;
	double sum = 0, acc, u;

	if (p->temperature == 0) {
		for (i = 1; i < s->vocab; i++)
			if (logits[i] > logits[best])
				best = i;
		goto done;
	}
	n = top_candidates(s, logits, (uint32_t)p->top_k);
	for (i = 0; i < n; i++) {
		s->p[i] = exp(((double)s->c[i].logit - s->c[0].logit) /
			      p->temperature);
		sum += s->p[i];
	}
	keep = n;
	if (p->top_p < 1) {
		acc = 0;
		for (i = 0; i < n; i++) {
			acc += s->p[i] / sum;
			if (acc >= p->top_p) {
				keep = i + 1;
				break;
			}
		}
		for (sum = 0, i = 0; i < keep; i++)
			sum += s->p[i];
	}
	u = engy_q3_rng_uniform(rng) * sum;
	best = s->c[keep - 1].id;
	for (acc = 0, i = 0; i < keep; i++) {
		acc += s->p[i];
		if (u < acc) {
			best = s->c[i].id;
			break;
		}
	}
done:
	if (logprob)
		*logprob = logprob_of(logits, s->vocab, best);
	return best;
}

uint32_t engy_q3_top_logprobs(struct q3_sampler *s, const float *logits,
			      uint32_t k, uint32_t *ids, float *lps)
{
	uint32_t i, n;
	float mx;
	double ls;

	if (!k)
		return 0;
	/* The logit order is the logprob order (one normaliser for all). */
	n = top_candidates(s, logits, k);
	lse_of(logits, s->vocab, &mx, &ls);
	for (i = 0; i < n; i++) {
		ids[i] = s->c[i].id;
		lps[i] = (float)((double)s->c[i].logit - mx - ls);
	}
	return n;
}
