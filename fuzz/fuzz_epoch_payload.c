/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the light validator's payload check: any input gets a verdict.  An
 * accepted payload must hand back a result_json that itself verifies and
 * passes the result rules.  The pinned key is the dev key, which signed
 * the seed corpus (fuzz/corpus/epoch_payload).
 */
#include <stdlib.h>
#include <string.h>

#include "epoch_sign.h"
#include "fuzz.h"

/* The Substrate dev key's public half (specs/signing.md §7). */
static const uint8_t dev_pub[32] = {
	0x46, 0xeb, 0xdd, 0xef, 0x8c, 0xd9, 0xbb, 0x16, 0x7d, 0xc3, 0x08,
	0x78, 0xd7, 0x11, 0x3b, 0x7e, 0x16, 0x8e, 0x6f, 0x06, 0x46, 0xbe,
	0xff, 0xd7, 0x7d, 0x69, 0xd3, 0x9b, 0xad, 0x76, 0xb4, 0x7a,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_epoch_verified v;
	enum engy_epoch_reject r;
	char why[256] = "";

	r = engy_epoch_payload_check((const char *)data, size, 53, dev_pub, &v,
				     why, sizeof(why));
	if (r == ENGY_EPOCH_ACCEPT) {
		if (!v.result_json || strlen(v.result_json) != v.result_len)
			abort();
		if (engy_epoch_result_check(v.result_json, v.result_len, 53,
					    v.epoch_index, NULL, 0) != 0)
			abort();
		engy_epoch_verified_free(&v);
	} else if (!why[0] || v.result_json) {
		abort();
	}
	return 0;
}
