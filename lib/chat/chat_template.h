/* SPDX-License-Identifier: MIT */
/*
 * Qwen3-family chat rendering (ChatML), written natively from the models'
 * own Jinja templates: an OpenAI chat completions body in, the prompt text
 * out.  specs/chat.md states what is rendered and why.
 */
#ifndef ENGY_CHAT_TEMPLATE_H
#define ENGY_CHAT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

enum engy_chat_variant {
	/*
	 * The Qwen3.5/3.6 template (the miner's default: qwen3.6-35b-a3b):
	 * XML tool calls (<function=NAME><parameter=KEY>), contents trimmed,
	 * the generation prompt opens <think> itself, preserve_thinking.
	 */
	ENGY_CHAT_QWEN36 = 0,
	/* The Qwen3 (2504) template: hermes JSON tool calls. */
	ENGY_CHAT_QWEN3,
};

/* "qwen3.6" / "qwen3"; -EINVAL for anything else. */
int engy_chat_variant_parse(const char *name);
const char *engy_chat_variant_name(enum engy_chat_variant v);

/*
 * engy_chat_variant_detect() - the variant whose Jinja source @tmpl is
 * (XML tool calls → QWEN36, hermes JSON tool calls → QWEN3); -ENOENT when
 * it is neither.
 */
int engy_chat_variant_detect(const char *tmpl);

struct engy_chat_opts {
	enum engy_chat_variant variant;
	/* -1: as the body says (chat_template_kwargs.enable_thinking, else
	 * top-level enable_thinking, else on); 0: off; 1: on. */
	int enable_thinking;
	/* Leave out the trailing "<|im_start|>assistant\n…" (default: add it).
	 */
	bool no_generation_prompt;
};

/* What the generation parsers need to know about a rendered prompt. */
struct engy_chat_info {
	bool thinking;	 /* enable_thinking was not false */
	bool think_open; /* the prompt ends inside an open <think> */
	/* The body's "tools" when calls are to be parsed (tools given and
	 * tool_choice is not "none"), else NULL.  Borrowed from the body. */
	const cJSON *tools;
};

/*
 * engy_chat_render() - render @body (an OpenAI chat completions request) as
 * the variant's prompt.  *@prompt is malloc'd and NUL-terminated, *@len its
 * length; @info (may be NULL) is filled for the parsers.  Returns 0, or
 * -EINVAL with a one-line reason naming the offending field in @err, or
 * -ENOMEM.  Never logs or keeps message text.
 */
int engy_chat_render(const cJSON *body, const struct engy_chat_opts *opts,
		     char **prompt, size_t *len, struct engy_chat_info *info,
		     char *err, size_t errlen);

#endif /* ENGY_CHAT_TEMPLATE_H */
