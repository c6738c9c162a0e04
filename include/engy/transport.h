/* SPDX-License-Identifier: MIT */
/*
 * Transport kind: moves requests in and frames out (transport-ws, transport-http).
 *
 * The ops of this kind are defined by the work that builds its first
 * plugin; until then the table holds only its size, and the host requires
 * nothing beyond it.  Ops are appended, never reordered (see plugin.h).
 */
#ifndef ENGY_TRANSPORT_H
#define ENGY_TRANSPORT_H

#include <stdint.h>

#include <engy/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct engy_transport_ops {
	uint32_t size;			/* sizeof(struct engy_transport_ops) */
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_TRANSPORT_H */
