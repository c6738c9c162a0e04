/* SPDX-License-Identifier: MIT */
/* Billing arithmetic in integer µUSD (billing.h, specs/store.md). */
#include <errno.h>
#include <stdio.h>

#include "billing.h"

int engy_price_card_check(const struct engy_price_card *card)
{
	if (!card || card->input < 0 || card->input > ENGY_PRICE_MAX ||
	    card->output < 0 || card->output > ENGY_PRICE_MAX ||
	    card->cached_input < 0 || card->cached_input > ENGY_PRICE_MAX)
		return -EINVAL;
	return 0;
}

/*
 * Exact sum of tokens * rate / 1e6 without 128-bit integers: each rate is
 * split as q * 1e6 + r, so tokens * q and tokens * r stay below 2^63
 * (tokens < 2^32, q <= 1e6, r < 1e6) and the one rounding is at the end.
 */
struct acc {
	uint64_t whole; /* µUSD */
	uint64_t frac;	/* µUSD * 1e-6 */
};

static void acc_add(struct acc *a, uint64_t tokens, int64_t rate)
{
	uint64_t q = (uint64_t)rate / ENGY_PRICE_PER_TOKENS;
	uint64_t r = (uint64_t)rate % ENGY_PRICE_PER_TOKENS;

	a->whole += tokens * q;
	a->frac += tokens * r;
}

static int acc_result(const struct acc *a, int64_t *out)
{
	uint64_t v = a->whole + (a->frac + ENGY_PRICE_PER_TOKENS - 1) /
					ENGY_PRICE_PER_TOKENS;

	if (v > (uint64_t)ENGY_MONEY_MAX)
		return -EOVERFLOW;
	*out = (int64_t)v;
	return 0;
}

int engy_billing_cost(const struct engy_price_card *card, uint64_t prompt,
		      uint64_t cached, uint64_t completion, int64_t *cost)
{
	struct acc a = { 0, 0 };

	if (engy_price_card_check(card) || !cost || prompt > ENGY_TOKENS_MAX ||
	    completion > ENGY_TOKENS_MAX || cached > prompt)
		return -EINVAL;
	*cost = 0;
	if (completion == 0)
		return 0;
	acc_add(&a, prompt - cached, card->input);
	acc_add(&a, cached, card->cached_input);
	acc_add(&a, completion, card->output);
	return acc_result(&a, cost);
}

int engy_billing_reserve(const struct engy_price_card *card,
			 uint64_t prompt_max, uint64_t max_output,
			 int64_t *amount)
{
	struct acc a = { 0, 0 };
	int64_t in;

	if (engy_price_card_check(card) || !amount ||
	    prompt_max > ENGY_TOKENS_MAX || max_output > ENGY_TOKENS_MAX)
		return -EINVAL;
	/* A cached token may be listed dearer than an uncached one. */
	in = card->input > card->cached_input ? card->input
					      : card->cached_input;
	acc_add(&a, prompt_max, in);
	acc_add(&a, max_output, card->output);
	return acc_result(&a, amount);
}

int engy_money_parse(const char *s, int64_t *micro)
{
	uint64_t v = 0;
	int decimals = -1;
	bool digits = false;

	if (!s || !micro)
		return -EINVAL;
	for (; *s; s++) {
		if (*s == '.' && decimals < 0 && digits) {
			decimals = 0;
			continue;
		}
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (decimals >= 0 && ++decimals > 6)
			return -EINVAL;
		digits = true;
		v = v * 10 + (uint64_t)(*s - '0');
		/* Scaling only grows it: past the cap now is past it later. */
		if (v > (uint64_t)ENGY_MONEY_MAX)
			return -ERANGE;
	}
	if (!digits || decimals == 0)
		return -EINVAL;
	for (decimals = decimals < 0 ? 0 : decimals; decimals < 6; decimals++) {
		v *= 10;
		if (v > (uint64_t)ENGY_MONEY_MAX)
			return -ERANGE;
	}
	*micro = (int64_t)v;
	return 0;
}

int engy_money_format(char *out, size_t cap, int64_t micro)
{
	uint64_t m = micro < 0 ? 0 - (uint64_t)micro : (uint64_t)micro;

	return snprintf(out, cap, "%s%llu.%06llu", micro < 0 ? "-" : "",
			(unsigned long long)(m / 1000000),
			(unsigned long long)(m % 1000000));
}
