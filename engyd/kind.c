/* SPDX-License-Identifier: MIT */
#include <string.h>

#include <engy/engy.h>
#include <engy/role.h>

#include "kind.h"

#define OPS_MIN(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))
#define REQ(type, op)                                                          \
	{                                                                      \
#op, offsetof(type, op)                                        \
	}

/*
 * Kinds whose ops are still only a size require nothing else; the work
 * that defines their ops adds its required entries here.
 */
static const struct engy_kind_info kinds[] = {
	{ ENGY_KIND_TRANSPORT,
	  "transport",
	  sizeof(struct engy_transport_ops),
	  OPS_MIN(struct engy_transport_ops, proto),
	  { REQ(struct engy_transport_ops, proto), { NULL, 0 } },
	  0,
	  NULL },
	{ ENGY_KIND_BACKEND,
	  "backend",
	  sizeof(struct engy_backend_ops),
	  OPS_MIN(struct engy_backend_ops, prefill),
	  { REQ(struct engy_backend_ops, info),
	    REQ(struct engy_backend_ops, generate),
	    REQ(struct engy_backend_ops, cancel),
	    { NULL, 0 } },
	  0,
	  NULL },
	{ ENGY_KIND_PROOF,
	  "proof",
	  sizeof(struct engy_proof_ops),
	  OPS_MIN(struct engy_proof_ops, verify),
	  /* prove + verify, or challenge + check: engy_loader's rule. */
	  { REQ(struct engy_proof_ops, scheme), { NULL, 0 } },
	  0,
	  NULL },
	{ ENGY_KIND_SCORER,
	  "scorer",
	  sizeof(struct engy_scorer_ops),
	  OPS_MIN(struct engy_scorer_ops, aggregates),
	  { REQ(struct engy_scorer_ops, rules),
	    REQ(struct engy_scorer_ops, settle),
	    REQ(struct engy_scorer_ops, aggregates),
	    { NULL, 0 } },
	  0,
	  NULL },
	{ ENGY_KIND_CHAIN,
	  "chain",
	  sizeof(struct engy_chain_ops),
	  OPS_MIN(struct engy_chain_ops, set_weights),
	  { REQ(struct engy_chain_ops, block),
	    REQ(struct engy_chain_ops, metagraph),
	    REQ(struct engy_chain_ops, set_weights),
	    { NULL, 0 } },
	  0,
	  NULL },
	{ ENGY_KIND_STORE,
	  "store",
	  sizeof(struct engy_store_ops),
	  OPS_MIN(struct engy_store_ops, log_prune),
	  { REQ(struct engy_store_ops, key_hash),
	    REQ(struct engy_store_ops, account_create),
	    REQ(struct engy_store_ops, account_get),
	    REQ(struct engy_store_ops, account_by_name),
	    REQ(struct engy_store_ops, account_list),
	    REQ(struct engy_store_ops, topup),
	    REQ(struct engy_store_ops, key_create),
	    REQ(struct engy_store_ops, key_lookup),
	    REQ(struct engy_store_ops, key_revoke),
	    REQ(struct engy_store_ops, key_list),
	    REQ(struct engy_store_ops, reserve),
	    REQ(struct engy_store_ops, settle),
	    REQ(struct engy_store_ops, release_expired),
	    REQ(struct engy_store_ops, model_put),
	    REQ(struct engy_store_ops, model_get),
	    REQ(struct engy_store_ops, model_list),
	    REQ(struct engy_store_ops, model_root_put),
	    REQ(struct engy_store_ops, model_root_get),
	    REQ(struct engy_store_ops, model_root_list),
	    REQ(struct engy_store_ops, model_root_del),
	    REQ(struct engy_store_ops, miner_put),
	    REQ(struct engy_store_ops, miner_lookup),
	    REQ(struct engy_store_ops, miner_list),
	    REQ(struct engy_store_ops, log_append),
	    REQ(struct engy_store_ops, log_query),
	    REQ(struct engy_store_ops, log_prune),
	    { NULL, 0 } },
	  /* 1.4 grew struct engy_model, which model_list() returns as an
	   * array: an older store's stride is not the host's. */
	  .min_minor = 4,
	  .min_why =
		  "struct engy_model grew in 1.4 (model_list() returns an array of it)" },
	{ ENGY_KIND_ROLE,
	  "role",
	  sizeof(struct engy_role_ops),
	  OPS_MIN(struct engy_role_ops, needs),
	  { REQ(struct engy_role_ops, needs), { NULL, 0 } },
	  0,
	  NULL },
};

const struct engy_kind_info *engy_kind_info(uint32_t kind)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].kind == kind)
			return &kinds[i];
	return NULL;
}

const struct engy_kind_info *engy_kind_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i].name, name) == 0)
			return &kinds[i];
	return NULL;
}

const char *engy_kind_name(uint32_t kind)
{
	const struct engy_kind_info *k = engy_kind_info(kind);

	return k ? k->name : "unknown";
}
