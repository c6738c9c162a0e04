/* SPDX-License-Identifier: MIT */
/*
 * Fuzz what the gateway reads from a miner (plugins/role-gateway/gateway_frames.c):
 * every input is a frame.  It either fails with a reason or gives a type
 * whose fields hold their invariants: a hello has a key and a model of
 * bounded size and a share of at least 1, a chunk a corr_id and a delta
 * object, a response a corr_id; a response's output either renders or is
 * refused with a reason.  A top-level commitment kept as text (the lazy
 * path, lib/proto/json_lazy.c) parses back, and the frame read that way
 * is the tree cJSON's own whole parse builds: the lazy path never
 * accepts what cJSON refuses, nor reads it differently.
 */
#include <stdlib.h>
#include <string.h>

#include "../plugins/role-gateway/gateway_int.h"
#include "fuzz.h"
#include "minerproto.h"

/* Containers opened, string contents ignored: cJSON refuses past 1000,
 * the lazy path's members are parsed apart (their depth counts anew). */
static unsigned max_depth(const char *s, size_t n)
{
	unsigned d = 0, m = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] == '[' || s[i] == '{')
			m = ++d > m ? d : m;
		else if ((s[i] == ']' || s[i] == '}') && d)
			d--;
	}
	return m;
}

static void same_as_cjson(cJSON *root, const char *data, size_t size)
{
	cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "commitment");
	cJSON *whole = cJSON_ParseWithLength(data, size);
	char *a, *b;

	for (; c; c = c->next) {
		cJSON *t;

		if (!c->string || strcmp(c->string, "commitment") != 0 ||
		    !cJSON_IsRaw(c))
			continue;
		t = cJSON_Parse(c->valuestring);
		if (!t)
			abort(); /* checked text cJSON cannot read */
		cJSON_Delete(t);
	}
	if (!whole) {
		if (max_depth(data, size) < 900)
			abort(); /* accepted what cJSON refuses */
		return;
	}
	for (c = root->child; c; c = c->next)
		if (cJSON_IsRaw(c)) {
			cJSON *t = cJSON_Parse(c->valuestring);

			if (!t)
				abort();
			/* in place: the raw node becomes the tree it holds */
			cJSON_free(c->valuestring);
			c->valuestring = NULL;
			c->type = t->type;
			c->child = t->child;
			c->valuestring = t->valuestring;
			c->valueint = t->valueint;
			c->valuedouble = t->valuedouble;
			t->child = NULL;
			t->valuestring = NULL;
			cJSON_Delete(t);
		}
	a = cJSON_PrintUnformatted(root);
	b = cJSON_PrintUnformatted(whole);
	if (a && b && strcmp(a, b) != 0)
		abort(); /* read differently */
	free(a);
	free(b);
	cJSON_Delete(whole);
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
	if (rc == 0)
		same_as_cjson(f.root, (const char *)data, size);
	gw_frame_free(&f);
	return 0;
}
