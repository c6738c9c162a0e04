/* SPDX-License-Identifier: MIT */
/*
 * Fuzz SS58 and base58 decoding: any input is tried as an address and as
 * base58 text.  Whatever decodes must encode back to exactly the input,
 * and the first 34 bytes, read as prefix and account, must round-trip.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "ss58.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[160], enc[300];
	uint8_t acc[32], acc2[32], raw[160];
	uint16_t prefix, p2;
	size_t n, len = size < sizeof(text) - 1 ? size : sizeof(text) - 1;

	memcpy(text, data, len);
	text[len] = '\0';
	if (engy_ss58_decode(text, acc, &prefix) == 0) {
		if (engy_ss58_encode(enc, sizeof(enc), acc, prefix) < 0 ||
		    strcmp(enc, text) != 0)
			abort();
		if (engy_ss58_decode_prefix(text, prefix, acc2) != 0 ||
		    memcmp(acc, acc2, 32) != 0)
			abort();
	}
	if (engy_base58_decode(raw, sizeof(raw), &n, text, strlen(text),
			       NULL) == 0) {
		if (engy_base58_encode(enc, sizeof(enc), raw, n) < 0 ||
		    strcmp(enc, text) != 0)
			abort();
	}
	if (size >= 34) {
		prefix = (uint16_t)((data[0] | data[1] << 8) & 0x3fff);
		memcpy(acc, data + 2, 32);
		if (engy_ss58_encode(enc, sizeof(enc), acc, prefix) > 0) {
			if (engy_ss58_decode(enc, acc2, &p2) != 0 ||
			    p2 != prefix || memcmp(acc, acc2, 32) != 0)
				abort();
		} else if (prefix != 46 && prefix != 47) {
			abort();
		}
	}
	return 0;
}
