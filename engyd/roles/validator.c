/* SPDX-License-Identifier: MIT */
/*
 * The validator role: the light validator: fetch the signed epoch, verify, schedule, set weights.
 * This file declares what the role wires; its flow grows here as the
 * plugins it drives arrive (see ARCHITECTURE.md, "Data flow").
 */
#include <engy/plugin.h>

#include "../role.h"

const struct engy_role engy_role_validator = {
	.name = "validator",
	.summary = "the light validator: fetch the signed epoch, verify, schedule, set weights",
	.needs = {
		{ ENGY_KIND_CHAIN, 1, 1, "weights to chain and metagraph reads" },
		{ ENGY_KIND_TRANSPORT, 0, 0, "optional websocket subscriptions" },
		{ 0, 0, 0, NULL },
	},
	.start = engy_role_start_common,
};
