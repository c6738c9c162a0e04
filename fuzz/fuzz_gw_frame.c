/* SPDX-License-Identifier: MIT */
/*
 * Fuzz what a miner reads from the gateway (lib/proto/minerproto.c): every input
 * is a frame, a /meta body and, when it parses as a serve frame, a
 * request's sampling fields.  A frame either fails with a reason or gives
 * a type whose fields hold their invariants; the corr_id of an accepted
 * serve goes back out in a chunk and an error response, which must be
 * JSON that reads back with the same corr_id.  A gemm_open is usable
 * (request id and challenge object) or says why not, and its corr_id
 * goes back out in a gemm_opening, with and without an opening.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "minerproto.h"

static void echo(const char *corr_id)
{
	size_t len, i;
	char *s[4];
	cJSON *j;

	s[0] = engy_miner_chunk_json(corr_id, "x", 1, NULL, 0, &len);
	s[1] = engy_miner_error_json(corr_id, "r", "bad", &len);
	s[2] = engy_miner_gemm_opening_json(corr_id, "{\"a\":[1]}", 9, NULL,
					    &len);
	s[3] = engy_miner_gemm_opening_json(corr_id, NULL, 0, "not_held", &len);
	for (i = 0; i < 4; i++) {
		if (!s[i])
			continue;
		j = cJSON_Parse(s[i]);
		if (!j || strcmp(cJSON_GetObjectItemCaseSensitive(j, "corr_id")
					 ->valuestring,
				 corr_id) != 0)
			abort(); /* the writer lost or changed the id */
		cJSON_Delete(j);
		free(s[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_gw_frame f;
	struct engy_chat_params p;
	unsigned workers;
	char err[256];
	int rc;

	if (engy_gw_meta_parse((const char *)data, size, &workers) == 0 &&
	    (workers < 1 || workers > ENGY_GW_MAX_WORKERS))
		abort();
	err[0] = '\0';
	rc = engy_gw_frame_parse((const char *)data, size, &f, err,
				 sizeof(err));
	if (rc < 0 && !err[0])
		abort(); /* a refusal names its reason */
	if (rc == 0 && f.type == ENGY_GW_GEMM_OPEN &&
	    !f.bad != (f.request_id && cJSON_IsObject(f.challenge)))
		abort(); /* usable, or says why not */
	if (rc == 0 && (f.type == ENGY_GW_SERVE || f.type == ENGY_GW_CANCEL ||
			f.type == ENGY_GW_GEMM_OPEN)) {
		if (!f.corr_id || !f.corr_id[0] ||
		    strlen(f.corr_id) > ENGY_GW_MAX_CORR_ID)
			abort();
		echo(f.corr_id);
	}
	if (rc == 0 && f.type == ENGY_GW_SERVE && f.request) {
		err[0] = '\0';
		if (engy_chat_params_parse(f.request, &p, err, sizeof(err)) <
		    0) {
			if (!err[0])
				abort();
		} else if ((p.has_max_tokens && p.max_tokens < 1) ||
			   !(p.temperature >= 0 && p.temperature <= 2) ||
			   !(p.top_p > 0 && p.top_p <= 1) || p.n_stop > 4) {
			abort();
		}
	}
	engy_gw_frame_free(&f);
	return 0;
}
