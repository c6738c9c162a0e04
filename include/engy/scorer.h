/* SPDX-License-Identifier: MIT */
/*
 * Scorer kind: settles a closed epoch from the request log and verdicts.
 *
 * The ops of this kind are defined by the work that builds its first
 * plugin; until then the table holds only its size, and the host requires
 * nothing beyond it.  Ops are appended, never reordered (see plugin.h).
 */
#ifndef ENGY_SCORER_H
#define ENGY_SCORER_H

#include <stdint.h>

#include <engy/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct engy_scorer_ops {
	uint32_t size;			/* sizeof(struct engy_scorer_ops) */
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_SCORER_H */
