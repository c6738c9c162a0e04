/* SPDX-License-Identifier: MIT */
/*
 * Fuzz chat rendering: the input is an OpenAI chat body (JSON), rendered
 * with both template variants, thinking on/off/from the body and with and
 * without the generation prompt.  A render either succeeds with a prompt of
 * the stated length or fails with a one-line reason; nothing else.
 * Oracles: rendering is deterministic (the same body and options render
 * the same bytes twice, with the same info), and a render contains every
 * user message's string content: verbatim for Qwen3, trimmed for Qwen3.6
 * (specs/chat.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"
#include "fuzz.h"

/* What Python's str.strip() may take off an end (whitespace; any
 * non-ASCII byte, to stay on the safe side of Unicode white space). */
static int strippable(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') ||
	       (c >= 0x1c && c <= 0x1f) || c >= 0x80;
}

/* Every user message's string content is in @out: verbatim for Qwen3,
 * trimmed for Qwen3.6 (specs/chat.md: it trims every message's text). */
static void user_text_present(const cJSON *body, const char *out, int trim)
{
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(body, "messages");
	const cJSON *m, *role, *content;
	const char *a, *z;
	char *core;

	cJSON_ArrayForEach(m, msgs)
	{
		role = cJSON_GetObjectItemCaseSensitive(m, "role");
		content = cJSON_GetObjectItemCaseSensitive(m, "content");
		if (!cJSON_IsString(role) ||
		    strcmp(role->valuestring, "user") ||
		    !cJSON_IsString(content))
			continue;
		a = content->valuestring;
		z = a + strlen(a);
		while (trim && a < z && strippable((unsigned char)*a))
			a++;
		while (trim && z > a && strippable((unsigned char)z[-1]))
			z--;
		core = strndup(a, (size_t)(z - a));
		if (!core)
			abort();
		if (!strstr(out, core))
			abort();
		free(core);
	}
}

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
			struct engy_chat_info info2;
			char *again = NULL;
			size_t len2 = 0;

			if (!out || strlen(out) != len)
				abort();
			if (info.tools && !cJSON_IsArray(info.tools))
				abort();
			if (engy_chat_render(body, &o, &again, &len2, &info2,
					     err, sizeof(err)) ||
			    len2 != len || memcmp(again, out, len) ||
			    info2.thinking != info.thinking ||
			    info2.think_open != info.think_open ||
			    info2.tools != info.tools)
				abort();
			free(again);
			user_text_present(body, out,
					  o.variant == ENGY_CHAT_QWEN36);
		} else if (out || !err[0] || strchr(err, '\n') ||
			   (rc != -EINVAL && rc != -ENOMEM)) {
			abort();
		}
		free(out);
	}
	cJSON_Delete(body);
	return 0;
}
