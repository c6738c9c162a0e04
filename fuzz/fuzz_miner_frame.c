/* SPDX-License-Identifier: MIT */
/*
 * Fuzz what the gateway reads from a miner (plugins/role-gateway/gateway_frames.c):
 * every input is a frame.  It either fails with a reason or gives a type
 * whose fields hold their invariants: a hello has a key and a model of
 * bounded size and a share of at least 1, a chunk a corr_id and a delta
 * object, a response a corr_id; a response's output either renders or is
 * refused with a reason.  A top-level commitment kept as text (the lazy
 * path, lib/proto/json_lazy.c) parses back, and the frame read that way
 * is the tree cJSON's own whole parse builds, node for node: the lazy
 * path never accepts what cJSON refuses, nor reads it differently.  The
 * one-pass reader alone (engy_json_parse()) likewise builds cJSON's tree
 * and stops where cJSON stops, or takes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "../plugins/role-gateway/gateway_int.h"
#include "buyerapi_fuzz.h"
#include "fuzz.h"
#include "json_lazy.h"
#include "minerproto.h"

/* The lazy path (the gateway's first try) takes a frame as cJSON's
 * whole parse reads it, or not at all: with its raw members parsed back
 * in place, the same tree node for node.  Its nesting stays far below
 * cJSON's limit, so cJSON refuses nothing it takes. */
static void lazy_as_cjson(const char *data, size_t size)
{
	static const char *const keys[] = { "commitment", NULL };
	cJSON *j = engy_json_parse_lazy(data, size, keys), *whole, *c, *t;

	if (!j)
		return;
	whole = cJSON_ParseWithLength(data, size);
	if (!whole)
		abort(); /* accepted what cJSON refuses */
	for (c = j->child; c; c = c->next) {
		if (!cJSON_IsRaw(c))
			continue;
		if (strcmp(c->string, "commitment") != 0)
			abort(); /* kept as text, not named */
		t = cJSON_Parse(c->valuestring);
		if (!t)
			abort(); /* checked text cJSON cannot read */
		/* in place: the raw node becomes the tree it holds */
		cJSON_free(c->valuestring);
		c->type = t->type;
		c->child = t->child;
		c->valuestring = t->valuestring;
		c->valueint = t->valueint;
		c->valuedouble = t->valuedouble;
		t->child = NULL;
		t->valuestring = NULL;
		cJSON_Delete(t);
	}
	if (!fuzz_json_same(j, whole))
		abort(); /* read differently */
	cJSON_Delete(whole);
	cJSON_Delete(j);
}

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
	lazy_as_cjson((const char *)data, size);
	fuzz_check_json_parse((const char *)data, size);
	return 0;
}
