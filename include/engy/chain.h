/* SPDX-License-Identifier: MIT */
/*
 * Chain kind: weights to chain and metagraph reads (chain-subtensor, a dev chain).
 *
 * The ops of this kind are defined by the work that builds its first
 * plugin; until then the table holds only its size, and the host requires
 * nothing beyond it.  Ops are appended, never reordered (see plugin.h).
 */
#ifndef ENGY_CHAIN_H
#define ENGY_CHAIN_H

#include <stdint.h>

#include <engy/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct engy_chain_ops {
	uint32_t size;			/* sizeof(struct engy_chain_ops) */
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_CHAIN_H */
