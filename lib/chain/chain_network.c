/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "chain_network.h"

static const struct {
	const char *name, *endpoint;
} networks[] = {
	{ "finney", "wss://entrypoint-finney.opentensor.ai:443" },
	{ "test", "wss://test.finney.opentensor.ai:443" },
	{ "local", "ws://127.0.0.1:9944" },
	{ "archive", "wss://archive.chain.opentensor.ai:443" },
};

const char *engy_chain_network_endpoint(const char *network)
{
	static const char *const schemes[] = { "ws://", "wss://", "http://",
					       "https://" };
	size_t i;

	if (!network)
		return NULL;
	for (i = 0; i < sizeof(networks) / sizeof(networks[0]); i++)
		if (strcmp(network, networks[i].name) == 0)
			return networks[i].endpoint;
	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strncmp(network, schemes[i], strlen(schemes[i])) == 0 &&
		    network[strlen(schemes[i])])
			return network;
	return NULL;
}

static int env_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v;
}

const char *engy_chain_endpoint_pick(const char *endpoint, const char *network)
{
	if (env_set("ENGY_SN53_CHAIN_ENDPOINT") && endpoint && *endpoint)
		return endpoint;
	if (env_set("ENGY_SN53_NETWORK"))
		return engy_chain_network_endpoint(network);
	if (endpoint && *endpoint)
		return endpoint;
	return engy_chain_network_endpoint(network ? network : "finney");
}
