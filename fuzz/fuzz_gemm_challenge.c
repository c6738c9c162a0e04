/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the GEMM audit's parser of a challenge (lib/gemm,
 * engy_ga_challenge_parse(), what a miner reads): any input is refused
 * with a reason or accepted, never crashes; an accepted challenge is
 * within bounds and engy_ga_challenge_json() of it parses back to the
 * same nonce and cells (round trip).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "gemm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_ga_cell *c, *c2;
	uint8_t nonce[32], n2[32];
	size_t n, m;
	char err[160], *j;

	err[0] = 0;
	if (engy_ga_challenge_parse((const char *)data, size, nonce, &c, &n,
				    err, sizeof(err))) {
		if (!err[0] || c)
			abort();
		return 0;
	}
	if (n > ENGY_GA_MAX_CELLS)
		abort();
	j = engy_ga_challenge_json(nonce, c, n);
	if (!j || engy_ga_challenge_parse(j, strlen(j), n2, &c2, &m, err,
					  sizeof(err)))
		abort();
	if (m != n || memcmp(n2, nonce, 32) || memcmp(c, c2, n * sizeof(*c)))
		abort();
	free(j);
	free(c);
	free(c2);
	return 0;
}
