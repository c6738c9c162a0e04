/* SPDX-License-Identifier: MIT */
/*
 * Token choice from logits: greedy (temperature 0) or temperature
 * sampling restricted by top_k and top_p, from a seeded generator
 * (xoshiro256** seeded through splitmix64), so one seed gives one text.
 */
#ifndef Q3_SAMPLER_H
#define Q3_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

struct q3_rng {
	uint64_t s[4];
};

void engy_q3_rng_seed(struct q3_rng *r, uint64_t seed);
uint64_t engy_q3_rng_next(struct q3_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double engy_q3_rng_uniform(struct q3_rng *r);

struct q3_sampling {
	double temperature; /* 0: greedy */
	double top_p;	    /* (0, 1]; 1: off */
	int32_t top_k;	    /* 0: off */
};

/* 0, or -EINVAL naming the field in @why. */
int engy_q3_sampling_check(const struct q3_sampling *p, const char **why);

struct q3_sampler;

struct q3_sampler *engy_q3_sampler_new(uint32_t vocab);
void engy_q3_sampler_free(struct q3_sampler *s);

/*
 * engy_q3_sample() - choose a token from @logits [vocab].  Greedy takes the
 * first maximum.  *@logprob (may be NULL) gets the token's log-probability
 * under the unmodified distribution (softmax of the raw logits).
 */
uint32_t engy_q3_sample(struct q3_sampler *s, const float *logits,
			const struct q3_sampling *p, struct q3_rng *rng,
			float *logprob);

/*
 * engy_q3_top_logprobs() - the @k most likely ids of @logits [@vocab] and
 * their log-probabilities under the same distribution engy_q3_sample()'s
 * *logprob is taken from (log-softmax of the raw logits, in double,
 * before temperature, top_k and top_p), sorted by logprob descending
 * (ties: lower id first), into @ids and @lps.  Returns min(@k, @vocab).
 * Uses the sampler's scratch: call it after engy_q3_sample().
 */
uint32_t engy_q3_top_logprobs(struct q3_sampler *s, const float *logits,
			      uint32_t k, uint32_t *ids, float *lps);

#endif /* Q3_SAMPLER_H */
