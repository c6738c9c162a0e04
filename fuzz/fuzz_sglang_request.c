/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the serve role's request parsing: every input is tried as a
 * /generate body and as an /abort_request body.  A parse either fails
 * with a reason or yields a request whose invariants hold; an accepted
 * request is then echoed through the response writer, whose output must
 * be JSON that cJSON reads back with the same ids.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sglang_json.h"

static void check_response(const struct engy_sgl_gen *g)
{
	struct engy_sgl_out o = {
		.rid = g->rid,
		.text = g->text,
		.text_len = g->text ? strlen(g->text) : 0,
		.ids = g->input_ids,
		.n_ids = g->n_input,
		.finish = ENGY_SGL_LENGTH,
		.length = (uint32_t)g->max_new_tokens,
		.e2e_latency = 0,
		.logprobs = g->return_logprob,
		.hidden = false,
	};
	cJSON *j, *ids;
	size_t len;
	char *s = engy_sgl_response(&o, g->stream, &len);

	if (!s)
		return;
	j = cJSON_ParseWithLength(g->stream ? s + 6 : s,
				  g->stream ? len - 8 : len);
	if (!j)
		abort(); /* the writer made something that is not JSON */
	ids = cJSON_GetObjectItemCaseSensitive(j, "output_ids");
	if (!ids || (size_t)cJSON_GetArraySize(ids) != g->n_input)
		abort();
	if (g->n_input && (uint32_t)cJSON_GetArrayItem(ids, 0)->valuedouble !=
				  g->input_ids[0])
		abort();
	cJSON_Delete(j);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_sgl_gen g;
	struct engy_sgl_abort a;
	char err[256];
	int rc;

	err[0] = '\0';
	rc = engy_sgl_parse_generate(data, size, &g, err, sizeof(err));
	if (rc == 0) {
		if (!g.n_input && !g.text)
			abort(); /* accepted a request with no prompt */
		if (g.top_p <= 0 || g.top_p > 1 || g.temperature < 0 ||
		    g.max_new_tokens < 0 || (g.top_k < 1 && g.top_k != -1))
			abort();
		if (g.rid && strlen(g.rid) > ENGY_SGL_MAX_RID)
			abort();
		check_response(&g);
	} else if (rc == -EINVAL && !err[0]) {
		abort(); /* a refusal must say why */
	}
	engy_sgl_gen_free(&g);
	if (engy_sgl_parse_abort(data, size, &a, err, sizeof(err)) == 0 &&
	    !a.rid)
		abort();
	engy_sgl_abort_free(&a);
	return 0;
}
