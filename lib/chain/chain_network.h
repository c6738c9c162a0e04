/* SPDX-License-Identifier: MIT */
/*
 * The chain a validator talks to, named as the public light validator and
 * bittensor name it (ENGY_SN53_NETWORK=finney|test|local|archive) or given
 * as a node's URL.
 */
#ifndef ENGY_CHAIN_NETWORK_H
#define ENGY_CHAIN_NETWORK_H

/*
 * engy_chain_network_endpoint() - the JSON-RPC endpoint of @network: a
 * known name maps to its public entry point; a ws://, wss://, http:// or
 * https:// URL is itself.  NULL for anything else (an unknown name).
 */
const char *engy_chain_network_endpoint(const char *network);

/*
 * engy_chain_endpoint_pick() - the endpoint chain-subtensor dials, from its
 * options' values (environment twins already applied): an endpoint given in
 * $ENGY_SN53_CHAIN_ENDPOINT wins, then a network in $ENGY_SN53_NETWORK,
 * then the config's endpoint, then the config's network.  NULL when the
 * network that decides is not known.
 */
const char *engy_chain_endpoint_pick(const char *endpoint, const char *network);

/* The names engy_chain_network_endpoint() knows, for error messages. */
#define ENGY_CHAIN_NETWORKS "finney, test, local, archive or a ws(s):// URL"

#endif /* ENGY_CHAIN_NETWORK_H */
