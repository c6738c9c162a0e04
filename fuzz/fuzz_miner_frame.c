/* SPDX-License-Identifier: MIT */
/*
 * Fuzz what the gateway reads from a miner (plugins/role-gateway/gateway_frames.c):
 * every input is a frame.  It either fails with a reason or gives a type
 * whose fields hold their invariants: a hello has a key and a model of
 * bounded size and a share of at least 1, a chunk a corr_id and a delta
 * object, a response a corr_id; a response's output either renders or is
 * refused with a reason.
 */
#include <stdlib.h>
#include <string.h>

#include "../plugins/role-gateway/gateway_int.h"
#include "fuzz.h"
#include "minerproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_api_result res;
	struct gw_mframe f;
	char err[256];
	int rc;

	err[0] = '\0';
	rc = gw_frame_parse((const char *)data, size, &f, err, sizeof(err));
	if (rc < 0 && !err[0])
		abort(); /* a refusal names its reason */
	if (rc == 0 && f.type == GW_M_HELLO &&
	    (!f.miner_key || strlen(f.miner_key) > 512 || !f.model ||
	     strlen(f.model) > 127 || f.cap.max_inflight < 1))
		abort();
	if (rc == 0 && (f.type == GW_M_CHUNK || f.type == GW_M_RESPONSE) &&
	    (!f.corr_id || !f.corr_id[0] ||
	     strlen(f.corr_id) > ENGY_GW_MAX_CORR_ID))
		abort();
	if (rc == 0 && f.type == GW_M_CHUNK && !cJSON_IsObject(f.delta))
		abort();
	if (rc == 0 && f.type == GW_M_RESPONSE) {
		err[0] = '\0';
		if (engy_api_result_parse(
			    cJSON_GetObjectItemCaseSensitive(f.root, "output"),
			    &res, err, sizeof(err)) < 0 &&
		    !err[0])
			abort();
		engy_api_result_free(&res);
	}
	gw_frame_free(&f);
	return 0;
}
