/* SPDX-License-Identifier: MIT */
/*
 * The auditor role: sample served requests, recompute, verify proofs, record verdicts, settle epochs.
 * This file declares what the role wires; its flow grows here as the
 * plugins it drives arrive (see ARCHITECTURE.md, "Data flow").
 */
#include <engy/plugin.h>

#include "../role.h"

const struct engy_role engy_role_auditor = {
	.name = "auditor",
	.summary = "sample served requests, recompute, verify proofs, record verdicts, settle epochs",
	.needs = {
		{ ENGY_KIND_BACKEND, 1, 0, "recompute on the canonical checkpoint" },
		{ ENGY_KIND_PROOF, 1, 0, "proof verification" },
		{ ENGY_KIND_SCORER, 1, 1, "epoch settlement" },
		{ ENGY_KIND_STORE, 1, 1, "verdicts and epochs" },
		{ ENGY_KIND_TRANSPORT, 0, 0, "the provider API listener" },
		{ 0, 0, 0, NULL },
	},
	.start = engy_role_start_common,
};
