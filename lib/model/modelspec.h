/* SPDX-License-Identifier: MIT */
/*
 * A checkpoint's model commitment (specs/model-commitment.md): the plan
 * (which tensors are committed, which scale tensors are bound into their
 * weight's rows), the parallel root build over the mapped bytes, the spec
 * file engy publishes (config, model_root, lm_root, layer_roots,
 * expert_roots_by_layer, tensor_roots), its parser and comparison, and a
 * row's opening.
 */
#ifndef ENGY_MODELSPEC_H
#define ENGY_MODELSPEC_H

#include <stddef.h>
#include <stdint.h>

#include "merkle.h"

#define ENGY_MS_MAX_TENSORS (1u << 20)
#define ENGY_MS_MAX_LAYERS  1024
#define ENGY_MS_MAX_EXPERTS 4096

struct engy_ms;

/*
 * engy_ms_open() - read @dir's config.json and map its safetensors
 * (model.safetensors or the shards of model.safetensors.index.json), and
 * plan the commitment.  0, or a negative errno with a reason in @err.
 */
int engy_ms_open(const char *dir, struct engy_ms **out, char *err,
		 size_t errlen);
void engy_ms_close(struct engy_ms *m);

/* Called from the worker threads as bytes are hashed (may be NULL). */
typedef void (*engy_ms_progress_fn)(void *arg, uint64_t done, uint64_t total);

/*
 * engy_ms_build() - every tensor root on @threads threads (0: online
 * CPUs), then the group and model roots.  @progress runs on the calling
 * thread about every @progress_ms while the workers hash.
 */
int engy_ms_build(struct engy_ms *m, unsigned threads,
		  engy_ms_progress_fn progress, void *arg, unsigned progress_ms,
		  char *err, size_t errlen);

uint64_t engy_ms_total_bytes(const struct engy_ms *m);
const uint8_t *engy_ms_model_root(const struct engy_ms *m);

/* The spec file (after a build): malloc'd, ends with a newline. */
char *engy_ms_spec_json(const struct engy_ms *m);

/*
 * engy_ms_spec_check() - compare a spec file with the built checkpoint:
 * the config, then each tensor in name order (the first that differs, is
 * missing or is extra is named), then every root.  0 when all agree;
 * -EINVAL (a malformed file) or -EBADMSG (a difference) with the reason
 * in @err.
 */
int engy_ms_spec_check(const struct engy_ms *m, const char *buf, size_t len,
		       char *err, size_t errlen);

/*
 * engy_ms_spec_parse() - validate a spec file alone (the shape of every
 * field); fills @model_root.  0, or -EINVAL with a reason.
 */
int engy_ms_spec_parse(const char *buf, size_t len, uint8_t model_root[32],
		       char *err, size_t errlen);

/*
 * engy_ms_open_row() - after a build: the opening JSON of row @row of
 * tensor @name (malloc'd), or NULL with a reason in @err.
 */
char *engy_ms_open_row(const struct engy_ms *m, const char *name, uint64_t row,
		       char *err, size_t errlen);

#endif /* ENGY_MODELSPEC_H */
