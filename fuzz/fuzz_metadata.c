/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the metadata parser and the value walker: any input is parsed as
 * metadata; what parses is used the way chain-subtensor uses it (lookups,
 * the extension layout, storage keys), and the input's tail is walked as
 * a value of every type and as a block's events.
 */
#include <stdlib.h>
#include <string.h>

#include "extrinsic.h"
#include "fuzz.h"
#include "metadata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_metadata *md;
	struct engy_ext_layout l;
	struct engy_meta_outcome o;
	struct engy_scale_buf b;
	const uint8_t key[2] = { 53, 0 }, *keys[2] = { key, key };
	const size_t lens[2] = { 2, 2 };
	char err[256];
	uint8_t pi, ci;
	uint32_t t;

	if (engy_meta_parse(data, size, &md, err, sizeof(err)))
		return 0;
	engy_ext_layout_meta(&l, md, err, sizeof(err));
	engy_meta_call(md, "SubtensorModule", "set_weights", &pi, &ci, NULL);
	engy_scale_buf_init(&b);
	engy_meta_storage_key(md, "SubtensorModule", "Keys", keys, lens, 2,
			      true, &b);
	engy_scale_buf_free(&b);
	for (t = 0; t < md->n_types && t < 256; t++) {
		struct engy_scale_rd r;

		engy_scale_rd_init(&r, data + size / 2, size - size / 2);
		engy_meta_skip(md, t, &r);
		if (r.pos > size - size / 2)
			abort();
		engy_meta_zero_size(md, t);
	}
	engy_meta_outcome(md, data + size / 2, size - size / 2, 1, &o, err,
			  sizeof(err));
	engy_meta_free(md);
	return 0;
}
