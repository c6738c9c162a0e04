// SPDX-License-Identifier: MIT
/* Stop strings held at the gateway (lib/buyerapi/stop.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonget.h"
#include "stop.h"

void engy_api_stops_init(struct engy_api_stops *st, const cJSON *body)
{
	const cJSON *stop = engy_json_get(body, "stop");
	const cJSON *it;

	memset(st, 0, sizeof(*st));
	if (cJSON_IsString(stop) && stop->valuestring[0]) {
		st->s[0] = stop->valuestring;
		st->len[0] = strlen(stop->valuestring);
		st->n = 1;
		return;
	}
	if (!cJSON_IsArray(stop))
		return;
	cJSON_ArrayForEach(it, stop)
	{
		if (st->n == ENGY_API_MAX_STOP)
			break;
		if (!cJSON_IsString(it) || !it->valuestring[0])
			continue;
		st->s[st->n] = it->valuestring;
		st->len[st->n++] = strlen(it->valuestring);
	}
}

int engy_api_stops_find(const struct engy_api_stops *st, const char *p,
			size_t n, size_t *at)
{
	size_t i, start, end, best_end = 0;
	const char *hit;
	int best = -1;

	/* The match that ends first (the longest of those), whatever the
	 * text's chunking: a stream that cuts as soon as one is complete cuts
	 * where the whole text is cut. */
	for (i = 0; i < st->n; i++) {
		hit = n >= st->len[i] ? memmem(p, n, st->s[i], st->len[i])
				      : NULL;
		if (!hit)
			continue;
		start = (size_t)(hit - p);
		end = start + st->len[i];
		if (best < 0 || end < best_end ||
		    (end == best_end && start < *at)) {
			best = (int)i;
			best_end = end;
			*at = start;
		}
	}
	return best;
}

size_t engy_api_stops_tail(const struct engy_api_stops *st, const char *p,
			   size_t n)
{
	size_t i, k, best = 0;

	for (i = 0; i < st->n; i++)
		for (k = st->len[i] - 1; k > best; k--)
			if (k <= n && memcmp(p + n - k, st->s[i], k) == 0) {
				best = k;
				break;
			}
	return best;
}

void engy_api_result_stops(struct engy_api_result *r,
			   const struct engy_api_stops *st, uint64_t max_tokens)
{
	size_t at = 0, i;
	int k;

	r->stop_sequence = NULL;
	k = engy_api_stops_find(st, r->content, r->content_len, &at);
	if (k >= 0) {
		r->content_len = at;
		r->stop_sequence = st->s[k];
		if (!r->n_calls)
			r->finish_reason = "stop";
		return;
	}
	for (i = 0; r->matched_stop && i < st->n; i++)
		if (strcmp(r->matched_stop, st->s[i]) == 0 &&
		    strcmp(r->finish_reason, "stop") == 0) {
			r->stop_sequence = st->s[i];
			return;
		}
	if (max_tokens && !r->n_calls &&
	    strcmp(r->finish_reason, "stop") == 0 &&
	    r->completion_tokens >= max_tokens)
		r->finish_reason = "length";
}

void engy_api_stopper_init(struct engy_api_stopper *f, const cJSON *body)
{
	memset(f, 0, sizeof(*f));
	engy_api_stops_init(&f->st, body);
}

void engy_api_stopper_free(struct engy_api_stopper *f)
{
	free(f->held);
	memset(f, 0, sizeof(*f));
}

int engy_api_stopper_feed(struct engy_api_stopper *f, const char *p, size_t n,
			  struct engy_sse_out *emit)
{
	size_t at = 0, keep, need;
	char *nb;

	if (f->hit || !n)
		return 0;
	if (!f->st.n)
		return engy_sse_out_add(emit, p, n);
	need = f->held_len + n;
	if (need > f->held_cap) {
		nb = realloc(f->held, need * 2);
		if (!nb)
			return -ENOMEM;
		f->held = nb;
		f->held_cap = need * 2;
	}
	memcpy(f->held + f->held_len, p, n);
	f->held_len = need;
	if (engy_api_stops_find(&f->st, f->held, f->held_len, &at) >= 0) {
		f->hit = true;
		f->held_len = 0;
		return engy_sse_out_add(emit, f->held, at);
	}
	keep = engy_api_stops_tail(&f->st, f->held, f->held_len);
	if (engy_sse_out_add(emit, f->held, f->held_len - keep))
		return -ENOMEM;
	memmove(f->held, f->held + f->held_len - keep, keep);
	f->held_len = keep;
	return 0;
}
