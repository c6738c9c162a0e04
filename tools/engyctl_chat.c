/* SPDX-License-Identifier: MIT */
/*
 * engyctl render-chat: an OpenAI chat body on stdin → the Qwen3 prompt (or
 * its token ids); with --parse, generated text on stdin → the OpenAI choice.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "chat_template.h"
#include "engyctl.h"
#include "fsutil.h"
#include "genparse.h"
#include "tokenizer.h"

#define MAX_INPUT (64u << 20)

static void usage(FILE *f)
{
	fprintf(f, "usage: engyctl render-chat [--tokenizer DIR] [--template "
		   "qwen3|qwen3.6]\n"
		   "                           [--no-think] "
		   "[--no-generation-prompt] [--ids]\n"
		   "       engyctl render-chat --parse [--request FILE] "
		   "[--template ...]\n"
		   "                           [--length] [--call-ids PREFIX]\n"
		   "\n"
		   "Reads an OpenAI chat completions body on stdin and prints "
		   "the prompt the\n"
		   "Qwen3 chat template renders for it (--ids: its token ids "
		   "on one line,\n"
		   "needs --tokenizer).  The template variant is --template, "
		   "else the one\n"
		   "DIR's tokenizer_config.json carries, else qwen3.6.\n"
		   "\n"
		   "--parse reads generated text on stdin instead and prints "
		   "the OpenAI choice\n"
		   "(finish_reason and message with reasoning_content and "
		   "tool_calls); the\n"
		   "request body from --request gives the tools and thinking "
		   "mode, --length\n"
		   "says max_tokens ended the generation.\n");
}

/* The Jinja source DIR ships: tokenizer_config.json's chat_template (a
 * string, or a list of named templates), else chat_template.jinja. */
static int detect_variant(const char *dir, int *variant)
{
	char path[4096];
	uint8_t *buf = NULL;
	cJSON *cfg = NULL, *t, *it, *name;
	const char *src = NULL;
	size_t len;
	int rc;

	snprintf(path, sizeof(path), "%s/tokenizer_config.json", dir);
	if (engy_read_file(path, MAX_INPUT, &buf, &len) == 0) {
		cfg = cJSON_ParseWithLength((const char *)buf, len);
		if (!cfg) {
			free(buf);
			return engyctl_fail("%s: not valid JSON", path);
		}
		t = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
		if (cJSON_IsString(t))
			src = t->valuestring;
		cJSON_ArrayForEach(it, (cJSON_IsArray(t) ? t : NULL))
		{
			name = cJSON_GetObjectItemCaseSensitive(it, "name");
			if (cJSON_IsString(name) &&
			    strcmp(name->valuestring, "default") == 0 &&
			    cJSON_IsString(cJSON_GetObjectItemCaseSensitive(
				    it, "template")))
				src = cJSON_GetObjectItemCaseSensitive(
					      it, "template")
					      ->valuestring;
		}
	}
	if (!src) {
		free(buf);
		buf = NULL;
		snprintf(path, sizeof(path), "%s/chat_template.jinja", dir);
		if (engy_read_file(path, MAX_INPUT, &buf, &len) == 0)
			src = (const char *)buf;
	}
	if (!src) {
		cJSON_Delete(cfg);
		return engyctl_fail(
			"%s: no chat template found (pass --template)", dir);
	}
	rc = engy_chat_variant_detect(src);
	cJSON_Delete(cfg);
	free(buf);
	if (rc < 0)
		return engyctl_fail("%s: the chat template is not a Qwen3 one "
				    "(pass --template)",
				    dir);
	*variant = rc;
	return 0;
}

static cJSON *read_json(const char *path, const char *what)
{
	uint8_t *buf = NULL;
	size_t len;
	cJSON *j;
	int rc;

	rc = engy_read_file(path, MAX_INPUT, &buf, &len);
	if (rc) {
		engyctl_fail("%s: %s", what, strerror(-rc));
		return NULL;
	}
	j = cJSON_ParseWithLength((const char *)buf, len);
	free(buf);
	if (!j)
		engyctl_fail("%s: not valid JSON", what);
	return j;
}

static int print_ids(const char *dir, const char *prompt, size_t len)
{
	struct engy_tokenizer *tok = NULL;
	uint32_t *ids = NULL;
	char err[256];
	size_t n = 0, i;
	int rc;

	rc = engy_tokenizer_load(dir, &tok, err, sizeof(err));
	if (rc)
		return engyctl_fail("%s: %s", dir, err);
	rc = engy_tokenizer_encode(tok, prompt, len, &ids, &n);
	engy_tokenizer_free(tok);
	if (rc)
		return engyctl_fail("encoding the prompt failed: %s",
				    strerror(-rc));
	for (i = 0; i < n; i++)
		printf(i ? " %u" : "%u", ids[i]);
	printf("\n");
	free(ids);
	return 0;
}

static int do_render(const char *dir, struct engy_chat_opts *o, bool ids)
{
	char err[256], *prompt = NULL;
	cJSON *body;
	size_t len;
	int rc;

	body = read_json("-", "stdin");
	if (!body)
		return 1;
	rc = engy_chat_render(body, o, &prompt, &len, NULL, err, sizeof(err));
	cJSON_Delete(body);
	if (rc)
		return engyctl_fail("%s", err);
	if (ids)
		rc = print_ids(dir, prompt, len);
	else if (fwrite(prompt, 1, len, stdout) != len || fflush(stdout))
		rc = engyctl_fail("writing the prompt failed");
	free(prompt);
	return rc;
}

static int do_parse(const char *request, struct engy_chat_opts *o, bool length,
		    const char *id_prefix)
{
	struct engy_genparse_opts po = { .id_prefix = id_prefix };
	struct engy_chat_info info = { 0 };
	struct engy_gen_msg msg = { 0 };
	cJSON *body = NULL, *choice = NULL;
	char err[256], *prompt = NULL, *s;
	uint8_t *text = NULL;
	size_t len;
	int rc;

	if (request) {
		body = read_json(request, request);
		if (!body)
			return 1;
		rc = engy_chat_render(body, o, &prompt, &len, &info, err,
				      sizeof(err));
		free(prompt);
		if (rc) {
			cJSON_Delete(body);
			return engyctl_fail("%s: %s", request, err);
		}
		po.think_open = info.think_open;
		po.tools = info.tools;
	}
	rc = engy_read_file("-", MAX_INPUT, &text, &len);
	if (rc) {
		rc = engyctl_fail("stdin: %s", strerror(-rc));
		goto out;
	}
	rc = engy_genparse((const char *)text, len, &po, &msg);
	if (rc) {
		rc = engyctl_fail("parsing the generation failed: %s",
				  strerror(-rc));
		goto out;
	}
	choice = cJSON_CreateObject();
	if (!choice ||
	    !cJSON_AddStringToObject(
		    choice, "finish_reason",
		    engy_gen_finish_reason(length, msg.n_calls)) ||
	    !cJSON_AddItemToObject(choice, "message",
				   engy_gen_msg_json(&msg))) {
		rc = engyctl_fail("out of memory");
		goto out;
	}
	s = cJSON_PrintUnformatted(choice);
	if (!s) {
		rc = engyctl_fail("out of memory");
		goto out;
	}
	printf("%s\n", s);
	free(s);
out:
	engy_gen_msg_free(&msg);
	cJSON_Delete(choice);
	cJSON_Delete(body);
	free(text);
	return rc;
}

/* Called from engyctl.c's command table. */
int engyctl_render_chat(int argc, char **argv);

int engyctl_render_chat(int argc, char **argv)
{
	struct engy_chat_opts o = { .variant = ENGY_CHAT_QWEN36,
				    .enable_thinking = -1 };
	const char *dir = NULL, *tmpl = NULL, *request = NULL,
		   *id_prefix = NULL;
	bool ids = false, parse = false, length = false;
	int i, v;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "--tokenizer") == 0 && i + 1 < argc) {
			dir = argv[++i];
		} else if (strcmp(a, "--template") == 0 && i + 1 < argc) {
			tmpl = argv[++i];
		} else if (strcmp(a, "--request") == 0 && i + 1 < argc) {
			request = argv[++i];
		} else if (strcmp(a, "--call-ids") == 0 && i + 1 < argc) {
			id_prefix = argv[++i];
		} else if (strcmp(a, "--no-think") == 0) {
			o.enable_thinking = 0;
		} else if (strcmp(a, "--no-generation-prompt") == 0) {
			o.no_generation_prompt = true;
		} else if (strcmp(a, "--ids") == 0) {
			ids = true;
		} else if (strcmp(a, "--parse") == 0) {
			parse = true;
		} else if (strcmp(a, "--length") == 0) {
			length = true;
		} else {
			fprintf(stderr,
				"engyctl render-chat: unknown or incomplete "
				"option '%s'\n",
				a);
			usage(stderr);
			return 2;
		}
	}
	if (ids && !dir) {
		fprintf(stderr,
			"engyctl render-chat: --ids needs --tokenizer DIR\n");
		return 2;
	}
	if (tmpl) {
		v = engy_chat_variant_parse(tmpl);
		if (v < 0) {
			fprintf(stderr, "engyctl render-chat: --template: "
					"expected qwen3 or qwen3.6\n");
			return 2;
		}
		o.variant = (enum engy_chat_variant)v;
	} else if (dir) {
		if (detect_variant(dir, &v))
			return 1;
		o.variant = (enum engy_chat_variant)v;
	}
	if (parse)
		return do_parse(request, &o, length, id_prefix);
	return do_render(dir, &o, ids);
}
