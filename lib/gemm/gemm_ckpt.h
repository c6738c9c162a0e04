/* SPDX-License-Identifier: MIT */
/*
 * The verifier's weights (specs/gemm-audit.md §5.1): a safetensors
 * checkpoint directory (model.safetensors or the shards of
 * model.safetensors.index.json) read through lib/model, each audited
 * matrix dequantized exactly to float64 on first use (F32, BF16, F16;
 * FP8 e4m3 with its block scales; engy_int4 with its group scales) and
 * kept, with its per-column sums, in a cache bounded in bytes (a matrix a
 * running check holds is never evicted).  Reads files (at open); the
 * cache is shared by concurrent checks under a mutex.
 */
#ifndef ENGY_GEMM_CKPT_H
#define ENGY_GEMM_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "gemm.h"

struct engy_ga_ckpt;
struct engy_ga_ckpt_use;

/* 0, or a negative errno with a reason in @err. */
int engy_ga_ckpt_open(const char *dir, size_t cache_bytes,
		      struct engy_ga_ckpt **out, char *err, size_t errlen);
void engy_ga_ckpt_close(struct engy_ga_ckpt *c);

/*
 * engy_ga_ckpt_use() - fill @w for one check (its arg is the returned
 * handle: matrices it hands out stay until engy_ga_ckpt_done()).  NULL on
 * ENOMEM.
 */
struct engy_ga_ckpt_use *engy_ga_ckpt_use(struct engy_ga_ckpt *c,
					  struct engy_ga_weights *w);
void engy_ga_ckpt_done(struct engy_ga_ckpt_use *u);

/* Bytes the cache holds now; matrices loaded since open (for metrics and
 * tests). */
size_t engy_ga_ckpt_cached(struct engy_ga_ckpt *c);
size_t engy_ga_ckpt_loads(struct engy_ga_ckpt *c);
/* config.json's num_hidden_layers. */
uint32_t engy_ga_ckpt_layers(const struct engy_ga_ckpt *c);

#endif /* ENGY_GEMM_CKPT_H */
