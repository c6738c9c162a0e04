/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the SCALE reader: any input read as a stream of compacts and
 * vectors must never read past its end, and every compact that decodes
 * must encode back to exactly the bytes it came from (canonical form).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "scale.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_scale_rd r;
	uint8_t enc[9];

	engy_scale_rd_init(&r, data, size);
	while (engy_scale_left(&r)) {
		size_t at = r.pos;
		uint64_t v;

		if (engy_scale_compact(&r, &v))
			break;
		if (engy_scale_compact_encode(v, enc) != r.pos - at ||
		    memcmp(enc, data + at, r.pos - at) != 0)
			abort();
		if (v & 1) {
			const uint8_t *p;
			size_t n;

			if (engy_scale_vec(&r, &p, &n))
				break;
			if (p + n > data + size)
				abort();
		}
	}
	if (r.pos > size)
		abort();
	return 0;
}
