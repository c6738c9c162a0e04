/* SPDX-License-Identifier: MIT */
/*
 * Backend kind: turns token ids into tokens plus per-token final hidden states, and re-runs prompt+output for an auditor (backend-sglang, backend-ref).
 *
 * The ops of this kind are defined by the work that builds its first
 * plugin; until then the table holds only its size, and the host requires
 * nothing beyond it.  Ops are appended, never reordered (see plugin.h).
 */
#ifndef ENGY_BACKEND_H
#define ENGY_BACKEND_H

#include <stdint.h>

#include <engy/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct engy_backend_ops {
	uint32_t size;			/* sizeof(struct engy_backend_ops) */
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_BACKEND_H */
