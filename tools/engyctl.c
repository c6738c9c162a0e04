/* SPDX-License-Identifier: MIT */
/* engyctl: operator and admin commands, one table of command groups. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <config.h>
#include "engyctl.h"

/* Command groups: add one extern and one table row per group. */
int engyctl_render_chat(int argc, char **argv);
int engyctl_toploc(int argc, char **argv);
int engyctl_tokenize(int argc, char **argv);
int engyctl_keys(int argc, char **argv);
int engyctl_epoch(int argc, char **argv);
int engyctl_mkmodel(int argc, char **argv);
int engyctl_ref(int argc, char **argv);
int engyctl_separation(int argc, char **argv);
int engyctl_validator(int argc, char **argv);
int engyctl_admin(int argc, char **argv);
int engyctl_verdicts(int argc, char **argv);
int engyctl_workers(int argc, char **argv);
int engyctl_doctor(int argc, char **argv);
int engyctl_modelspec(int argc, char **argv);

static const struct engyctl_cmd cmds[] = {
	{ "render-chat", "render an OpenAI chat body with the Qwen3 template",
	  engyctl_render_chat },
	{ "toploc", "prove and verify TOPLOC proofs", engyctl_toploc },
	{ "tokenize", "encode text to token ids, or decode ids",
	  engyctl_tokenize },
	{ "keys", "create and show sr25519 hotkey files", engyctl_keys },
	{ "epoch", "score, sign and verify epoch results", engyctl_epoch },
	{ "mkmodel", "write a generated Qwen3 / Qwen3-MoE checkpoint",
	  engyctl_mkmodel },
	{ "ref", "run the reference engine on a checkpoint", engyctl_ref },
	{ "separation",
	  "measure TOPLOC's honest and cheat margins across kernel profiles",
	  engyctl_separation },
	{ "model-spec",
	  "build, verify and open a checkpoint's Merkle commitment",
	  engyctl_modelspec },
	{ "validator", "light validator health and state", engyctl_validator },
	{ "admin", "accounts, keys, balances, models, miners, the request log",
	  engyctl_admin },
	{ "verdicts", "the auditor's verdicts from the store",
	  engyctl_verdicts },
	{ "workers", "a gateway's miner legs: state, load, p99s, breaker",
	  engyctl_workers },
	{ "doctor", "try a role config's connections once and say what to fix",
	  engyctl_doctor },
	{ NULL, NULL, NULL },
};

int engyctl_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int engyctl_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("engyctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static void usage(FILE *f)
{
	const struct engyctl_cmd *c;

	fprintf(f, "usage: engyctl COMMAND [ARGS...]\n\ncommands:\n");
	for (c = cmds; c->name; c++)
		fprintf(f, "  %-14s %s\n", c->name, c->summary);
	fprintf(f, "\n`engyctl COMMAND --help` describes a command.\n");
}

int main(int argc, char **argv)
{
	const struct engyctl_cmd *c;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("engyctl %s\n", PACKAGE_VERSION);
		return 0;
	}
	for (c = cmds; c->name; c++)
		if (strcmp(c->name, argv[1]) == 0)
			return c->run(argc - 1, argv + 1);
	fprintf(stderr,
		"engyctl: unknown command '%s' (engyctl --help lists them)\n",
		argv[1]);
	return 2;
}
