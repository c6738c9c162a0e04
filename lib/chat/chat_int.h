/* SPDX-License-Identifier: MIT */
/*
 * Internal to the chat renderer: the request as loaded and checked
 * (chat_template.c) and handed to the variant renderers (chat_qwen.c).
 */
#ifndef ENGY_CHAT_INT_H
#define ENGY_CHAT_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "chat_template.h"
#include "chat_util.h"

enum engy_chat_role { R_SYSTEM, R_USER, R_ASSISTANT, R_TOOL };

extern const char *const engy_chat_role_names[4];

struct engy_chat_msg {
	enum engy_chat_role role;
	char *content; /* flattened text parts; trimmed for QWEN36 */
	size_t clen;
	const cJSON *reasoning; /* string, or NULL when absent/null */
	const cJSON *calls;	/* non-empty array, or NULL */
};

struct engy_chat_ctx {
	enum engy_chat_variant v;
	struct engy_chat_msg *m;
	size_t n;
	const cJSON **tools;
	size_t ntools;
	bool thinking_false; /* enable_thinking defined and false */
	bool preserve_thinking;
	char *err;
	size_t errlen;
	struct engy_chat_buf out;
};

/* Sets the one-line reason in c->err; returns -EINVAL. */
__attribute__((format(printf, 2, 3))) int
engy_chat_fail(struct engy_chat_ctx *c, const char *fmt, ...);

static inline void engy_chat_out(struct engy_chat_ctx *c, const char *s,
				 size_t n)
{
	engy_chat_buf_add(&c->out, s, n);
}

static inline void engy_chat_outs(struct engy_chat_ctx *c, const char *s)
{
	engy_chat_buf_adds(&c->out, s);
}

/* The messages and header of each variant (no generation prompt). */
int engy_chat_render_qwen3(struct engy_chat_ctx *c);
int engy_chat_render_qwen36(struct engy_chat_ctx *c);

#endif /* ENGY_CHAT_INT_H */
