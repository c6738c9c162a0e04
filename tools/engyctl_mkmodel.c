/* SPDX-License-Identifier: MIT */
/*
 * engyctl mkmodel: write a generated Qwen3 / Qwen3-MoE checkpoint
 * (specs/checkpoints.md), the same bytes for the same options.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engyctl.h"
#include "mkmodel.h"
#include "safetensors.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: engyctl mkmodel --arch qwen3|qwen3-moe --size tiny|small --seed N\n"
		"                      --out DIR [--quant int4|fp8] [--dtype bf16|f16|f32]\n"
		"                      [--tie] [--shared-expert] [--quiet]\n"
		"\n"
		"Writes a complete Hugging Face-style checkpoint into DIR: config.json,\n"
		"generation_config.json, model.safetensors, tokenizer.json and\n"
		"tokenizer_config.json (byte-level BPE, Qwen3 special tokens and chat\n"
		"template).  The weights are random from --seed but shaped to produce\n"
		"varied text; the same options give the same bytes.  --quant int4\n"
		"writes the same model group-quantized to engy's INT4 layout, --quant\n"
		"fp8 with Qwen's 128x128 block FP8.  --tie ties lm_head to the\n"
		"embedding; --shared-expert adds a Qwen2-MoE style shared expert.\n"
		"Progress goes to stderr unless --quiet.\n");
}

static int parse_seed(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

int engyctl_mkmodel(int argc, char **argv);

int engyctl_mkmodel(int argc, char **argv)
{
	struct mkmodel_opts o = { .dtype = ENGY_ST_BF16, .progress = stderr };
	const char *arch = NULL, *size = NULL, *out = NULL, *seed = NULL;
	char err[512] = "";
	int i, rc;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "--tie") == 0) {
			o.tie = true;
		} else if (strcmp(a, "--shared-expert") == 0) {
			o.shared_expert = true;
		} else if (strcmp(a, "--quiet") == 0) {
			o.progress = NULL;
		} else if (!v) {
			break;
		} else if (strcmp(a, "--arch") == 0) {
			arch = argv[++i];
		} else if (strcmp(a, "--size") == 0) {
			size = argv[++i];
		} else if (strcmp(a, "--seed") == 0) {
			seed = argv[++i];
		} else if (strcmp(a, "--out") == 0) {
			out = argv[++i];
		} else if (strcmp(a, "--quant") == 0) {
			i++;
			if (strcmp(v, "int4") == 0)
				o.quant = MKMODEL_QUANT_INT4;
			else if (strcmp(v, "fp8") == 0)
				o.quant = MKMODEL_QUANT_FP8;
			else
				return engyctl_fail(
					"mkmodel: --quant '%s': int4 or fp8",
					v);
		} else if (strcmp(a, "--dtype") == 0) {
			i++;
			if (strcmp(v, "bf16") == 0)
				o.dtype = ENGY_ST_BF16;
			else if (strcmp(v, "f16") == 0)
				o.dtype = ENGY_ST_F16;
			else if (strcmp(v, "f32") == 0)
				o.dtype = ENGY_ST_F32;
			else
				return engyctl_fail(
					"mkmodel: --dtype '%s': bf16, f16 or f32",
					v);
		} else {
			break;
		}
	}
	if (i < argc || !arch || !size || !out || !seed) {
		if (i < argc)
			fprintf(stderr, "engyctl mkmodel: bad argument '%s'\n",
				argv[i]);
		else
			fprintf(stderr,
				"engyctl mkmodel: --arch, --size, --seed and --out are required\n");
		usage(stderr);
		return 2;
	}
	if (strcmp(arch, "qwen3") && strcmp(arch, "qwen3-moe"))
		return engyctl_fail("mkmodel: --arch '%s': qwen3 or qwen3-moe",
				    arch);
	if (strcmp(size, "tiny") && strcmp(size, "small"))
		return engyctl_fail("mkmodel: --size '%s': tiny or small",
				    size);
	if (parse_seed(seed, &o.seed))
		return engyctl_fail(
			"mkmodel: --seed '%s' is not an integer in [0, 2^64)",
			seed);
	o.moe = strcmp(arch, "qwen3-moe") == 0;
	o.small = strcmp(size, "small") == 0;
	rc = mkmodel_write(&o, out, err, sizeof(err));
	if (rc)
		return engyctl_fail("mkmodel: %s",
				    err[0] ? err : strerror(-rc));
	if (o.progress)
		fprintf(o.progress, "mkmodel: wrote %s\n", out);
	return 0;
}
