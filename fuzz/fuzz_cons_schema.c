/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the schema compiler and the automaton: the input is a JSON schema,
 * a NUL byte, then text fed to the compiled automaton byte by byte.  Any
 * schema is compiled or refused with a reason; the automaton never
 * crashes, and a byte it refuses leaves the state as it was.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "constrain.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t slen = nul ? (size_t)(nul - data) : size, i;
	char *text = malloc(slen + 1), err[256];
	struct engy_cons *c;
	struct engy_cons_state *s;
	cJSON *j;
	int rc;

	if (!text)
		return 0;
	memcpy(text, data, slen);
	text[slen] = 0;
	j = cJSON_Parse(text);
	free(text);
	rc = engy_cons_compile(j, "<", ">", &c, err, sizeof(err));
	cJSON_Delete(j);
	if (rc) {
		if (!err[0] || c)
			abort();
		return 0;
	}
	s = engy_cons_state_new(c);
	for (i = slen + 1; s && i < size; i++) {
		bool done = engy_cons_done(s);

		if (engy_cons_feed(s, data + i, 1) && engy_cons_done(s) != done)
			abort();
	}
	engy_cons_state_free(s);
	engy_cons_free(c);
	return 0;
}
