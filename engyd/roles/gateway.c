/* SPDX-License-Identifier: MIT */
/*
 * The gateway role: buyer API, auth, prepaid billing, SSE, miner pool, routing, proof tee.
 * This file declares what the role wires; its flow grows here as the
 * plugins it drives arrive (see ARCHITECTURE.md, "Data flow").
 */
#include <engy/plugin.h>

#include "../role.h"

const struct engy_role engy_role_gateway = {
	.name = "gateway",
	.summary = "buyer API, auth, prepaid billing, SSE, miner pool, routing, proof tee",
	.needs = {
		{ ENGY_KIND_TRANSPORT, 1, 0, "the buyer HTTP API and the miner websocket listener" },
		{ ENGY_KIND_STORE, 1, 1, "accounts, balances, the metadata request log" },
		{ ENGY_KIND_PROOF, 0, 0, "an optional probe verifier" },
		{ ENGY_KIND_BACKEND, 0, 0, "an optional probe recompute engine" },
		{ 0, 0, 0, NULL },
	},
	.start = engy_role_start_common,
};
