/* SPDX-License-Identifier: MIT */
/*
 * Store kind: accounts, keys, balances, specs, the metadata request log, verdicts, epochs (store-sqlite, store-postgres).
 *
 * The ops of this kind are defined by the work that builds its first
 * plugin; until then the table holds only its size, and the host requires
 * nothing beyond it.  Ops are appended, never reordered (see plugin.h).
 */
#ifndef ENGY_STORE_H
#define ENGY_STORE_H

#include <stdint.h>

#include <engy/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct engy_store_ops {
	uint32_t size;			/* sizeof(struct engy_store_ops) */
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_STORE_H */
