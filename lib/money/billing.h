/* SPDX-License-Identifier: MIT */
/*
 * Billing arithmetic: integer micro-USD (µUSD) only, never floating point.
 *
 * A price card (struct engy_price_card, include/engy/store.h) holds three
 * rates in µUSD per 1,000,000 tokens: uncached input, cached input (a
 * prompt prefix the serve did not recompute) and output.  The cost of a
 * request is
 *
 *   cost = ceil( ((prompt - cached) * input + cached * cached_input
 *                 + completion * output) / 1,000,000 )
 *
 * summed exactly before the one division, so a request is never charged
 * more than 1 µUSD above its exact price.  A request that produced no
 * completion tokens costs 0 (zero-completion insurance).  specs/store.md
 * has the rules and vectors.
 */
#ifndef ENGY_BILLING_H
#define ENGY_BILLING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <engy/store.h>

/* Rates are per this many tokens. */
#define ENGY_PRICE_PER_TOKENS 1000000ull
/* The largest rate a card may hold: $1,000,000 per 1M tokens. */
#define ENGY_PRICE_MAX 1000000000000ll
/* The largest amount of money anywhere (a balance, a top-up, a cost). */
#define ENGY_MONEY_MAX ENGY_STORE_MONEY_MAX
/* The most tokens one count (prompt, cached, completion) may hold. */
#define ENGY_TOKENS_MAX 0xffffffffull

/* 0 when every rate is in 0..ENGY_PRICE_MAX, else -EINVAL. */
int engy_price_card_check(const struct engy_price_card *card);

/*
 * engy_billing_cost() - what a finished (or cancelled) request costs.
 * @cached must not exceed @prompt.  Returns 0, -EINVAL for a bad card or
 * counts, -EOVERFLOW when the cost would exceed ENGY_MONEY_MAX.
 */
int engy_billing_cost(const struct engy_price_card *card, uint64_t prompt,
		      uint64_t cached, uint64_t completion, int64_t *cost);

/*
 * engy_billing_reserve() - the amount to reserve before routing: the cost
 * of @prompt_max uncached prompt tokens (an upper bound on the prompt:
 * its token count when known, else its byte length, which bounds the
 * tokens of a byte-level BPE tokenizer) plus @max_output output tokens,
 * rounded up; never less than the later engy_billing_cost() of a request
 * within those bounds.  Same errors.
 */
int engy_billing_reserve(const struct engy_price_card *card,
			 uint64_t prompt_max, uint64_t max_output,
			 int64_t *amount);

/*
 * engy_money_parse() - "12", "12.5", "0.000001" (US dollars, at most six
 * decimals, no sign, no exponent) to µUSD.  Returns 0 or -EINVAL (text)
 * or -ERANGE (above ENGY_MONEY_MAX).
 */
int engy_money_parse(const char *s, int64_t *micro);

/*
 * engy_money_format() - µUSD as dollars with six decimals ("-0.000150"
 * for -150).  @cap of 32 always suffices.  Returns the length written.
 */
int engy_money_format(char *out, size_t cap, int64_t micro);

#endif /* ENGY_BILLING_H */
