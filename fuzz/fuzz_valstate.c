/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the validator's state file parser: whatever it keeps of any input
 * must format and parse back to the same fields with nothing dropped.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "valsched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_valstate st, back;
	char dropped[128];
	char *text;
	size_t i;

	if (engy_valstate_parse((const char *)data, size, &st, dropped,
				sizeof(dropped)))
		return 0;
	text = engy_valstate_format(&st);
	if (!text)
		abort();
	if (engy_valstate_parse(text, strlen(text), &back, dropped,
				sizeof(dropped)) ||
	    dropped[0] || back.last.has_applied != st.last.has_applied ||
	    back.last.applied != st.last.applied ||
	    back.last.has_block != st.last.has_block ||
	    back.last.block != st.last.block ||
	    back.last.has_ts != st.last.has_ts || back.last.ts != st.last.ts ||
	    back.has_cached_epoch != st.has_cached_epoch ||
	    back.cached_epoch != st.cached_epoch ||
	    back.has_digest != st.has_digest ||
	    back.has_cache != st.has_cache || back.n_rows != st.n_rows)
		abort();
	for (i = 0; i < st.n_rows; i++)
		if (strcmp(st.rows[i].hotkey, back.rows[i].hotkey) ||
		    st.rows[i].weight != back.rows[i].weight)
			abort();
	free(text);
	engy_valstate_free(&st);
	engy_valstate_free(&back);
	return 0;
}
