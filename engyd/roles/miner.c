/* SPDX-License-Identifier: MIT */
/*
 * The miner role: dial the gateway, serve routed requests on a local inference serve, prove, answer.
 * This file declares what the role wires; its flow grows here as the
 * plugins it drives arrive (see ARCHITECTURE.md, "Data flow").
 */
#include <engy/plugin.h>

#include "../role.h"

const struct engy_role engy_role_miner = {
	.name = "miner",
	.summary = "dial the gateway, serve routed requests on a local inference serve, prove, answer",
	.needs = {
		{ ENGY_KIND_TRANSPORT, 1, 0, "websocket legs to the gateway" },
		{ ENGY_KIND_BACKEND, 1, 0, "the inference serve" },
		{ ENGY_KIND_PROOF, 1, 0, "proofs attached to every response" },
		{ 0, 0, 0, NULL },
	},
	.start = engy_role_start_common,
};
