/* SPDX-License-Identifier: MIT */
/*
 * Fuzz chat rendering: the input is an OpenAI chat body (JSON), rendered
 * with both template variants, thinking on/off/from the body and with and
 * without the generation prompt.  A render either succeeds with a prompt of
 * the stated length or fails with a one-line reason; nothing else.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engy_chat_info info;
	char err[256], *out;
	size_t len, k;
	cJSON *body;
	int rc;

	body = cJSON_ParseWithLength((const char *)data, size);
	if (!body)
		return 0;
	for (k = 0; k < 8; k++) {
		struct engy_chat_opts o = {
			.variant = k & 1 ? ENGY_CHAT_QWEN3 : ENGY_CHAT_QWEN36,
			.enable_thinking = (int)(k >> 1 & 3) - 1,
			.no_generation_prompt = k == 7,
		};

		out = NULL;
		err[0] = '\0';
		rc = engy_chat_render(body, &o, &out, &len, &info, err,
				      sizeof(err));
		if (rc == 0) {
			if (!out || strlen(out) != len)
				abort();
			if (info.tools && !cJSON_IsArray(info.tools))
				abort();
		} else if (out || !err[0] || strchr(err, '\n') ||
			   (rc != -EINVAL && rc != -ENOMEM)) {
			abort();
		}
		free(out);
	}
	cJSON_Delete(body);
	return 0;
}
