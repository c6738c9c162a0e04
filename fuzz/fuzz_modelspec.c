/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the model commitment's parsers: any input is refused with a reason
 * or accepted, never crashes, as a spec file and as a row opening; an
 * accepted opening is checked against a root (refused with a reason: the
 * root is not one any opening reaches by chance).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "merkle.h"
#include "modelspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_mc_opening *o;
	uint8_t root[32];
	char err[256];

	err[0] = 0;
	if (engy_ms_spec_parse((const char *)data, size, root, err,
			       sizeof(err)) &&
	    !err[0])
		abort(); /* every refusal has a reason */
	err[0] = 0;
	if (engy_mc_opening_parse((const char *)data, size, &o, err,
				  sizeof(err))) {
		if (!err[0])
			abort();
		return 0;
	}
	memset(root, 0x5a, sizeof(root));
	err[0] = 0;
	if (engy_mc_opening_verify(o, root, err, sizeof(err)) == 0 || !err[0])
		abort();
	engy_mc_opening_free(o);
	return 0;
}
