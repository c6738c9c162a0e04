/* SPDX-License-Identifier: MIT */
/* lib/gemm's insides, shared by its files and its tests. */
#ifndef ENGY_GEMM_INT_H
#define ENGY_GEMM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "gemm.h"
#include "merkle.h"

#define ENGY_GA_MAX_DEPTH 32 /* positions and subs are u32 */

struct engy_ga_ent {
	uint32_t pos;
	uint8_t leaf[32];
};

/* One (layer, mm, expert, role): its rows' leaves sorted by position. */
struct engy_ga_sub {
	uint64_t key; /* engy_ga_key_pack() */
	struct engy_ga_ent *e;
	size_t n, cap;
	uint8_t root[32]; /* the token tree's, after the gemm root */
	uint32_t rank;	  /* its place in the sub tree */
};

struct engy_ga_trace {
	struct engy_mh *h;
	uint32_t max_tokens;
	struct engy_ga_sub *subs;
	size_t n_subs, cap_subs;
	uint32_t *index; /* open addressing: sub index + 1, 0 empty */
	size_t index_cap;
	bool rooted;
	struct engy_ga_bind bind;
	uint32_t *order; /* sub indices in key order */
	uint8_t empty[ENGY_GA_MAX_DEPTH + 1][32];
	uint8_t sub_root[32], gemm_root[32];
};

bool engy_ga_key_ok(const struct engy_ga_key *k);
uint64_t engy_ga_key_pack(const struct engy_ga_key *k);
void engy_ga_key_unpack(uint64_t v, struct engy_ga_key *k);

void engy_ga_leaf_h(struct engy_mh *h, const struct engy_ga_key *key,
		    uint32_t pos, const float *row, size_t n, uint8_t out[32]);
void engy_ga_node(struct engy_mh *h, const uint8_t l[32], const uint8_t r[32],
		  uint8_t out[32]);
void engy_ga_empties(struct engy_mh *h, uint8_t e[ENGY_GA_MAX_DEPTH + 1][32]);
void engy_ga_sub_leaf(struct engy_mh *h, const struct engy_ga_key *k,
		      const uint8_t token_root[32], uint8_t out[32]);
void engy_ga_gemm_hash(struct engy_mh *h, const struct engy_ga_bind *b,
		       uint32_t n_subs, const uint8_t sub_root[32],
		       uint8_t out[32]);
void engy_ga_sparse_root(struct engy_mh *h, const struct engy_ga_ent *e,
			 size_t n, unsigned depth,
			 const uint8_t empty[ENGY_GA_MAX_DEPTH + 1][32],
			 const uint32_t *want, size_t n_want, uint8_t *paths,
			 uint8_t out[32]);
void engy_ga_fold(struct engy_mh *h, const uint8_t leaf[32], uint64_t index,
		  const uint8_t *path, unsigned depth, uint8_t root[32]);
struct engy_ga_sub *engy_ga_trace_sub(struct engy_ga_trace *t, uint64_t key,
				      bool create);
size_t engy_ga_sub_find(const struct engy_ga_sub *s, uint32_t pos, bool *found);
int engy_ga_trace_sub_paths(struct engy_ga_trace *t, const uint32_t *ranks,
			    size_t n, uint8_t *paths);
/* The PRNG seed of one product's projections and spots. */
void engy_ga_product_seed(const uint8_t seed[32], uint16_t layer, uint8_t mm,
			  uint16_t expert, uint8_t out[32]);

bool engy_ga_json_u32(const cJSON *j, uint32_t max, uint32_t *out);
bool engy_ga_json_hex32(const cJSON *j, uint8_t out[32]);
int engy_ga_cells_parse(const cJSON *a, struct engy_ga_cell **cells, size_t *n,
			char *err, size_t errlen);

/* A parsed opening. */
struct engy_ga_orow {
	uint32_t pos;
	uint8_t *path; /* depth x 32 */
	unsigned depth;
	float *data;
	size_t n;
};

struct engy_ga_osub {
	struct engy_ga_key key;
	uint32_t index;
	uint8_t *path;
	unsigned depth;
	struct engy_ga_orow *rows;
	size_t n_rows;
};

struct engy_ga_opening {
	struct engy_ga_bind bind;
	uint32_t n_subs;
	struct engy_ga_cell *cells;
	size_t n_cells;
	struct engy_ga_osub *subs;
	size_t n_osubs;
};

#endif /* ENGY_GEMM_INT_H */
