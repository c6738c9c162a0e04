/* SPDX-License-Identifier: MIT */
/*
 * A third-party proof scheme built out of tree against the installed SDK
 * (pkg-config engy): a keyed checksum of the hidden rows.  It shows the
 * whole surface a plugin author needs: descriptor, options, ops, logging.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <engy/engy.h>

struct conf {
	int64_t seed;
};

struct inst {
	const struct engy_host *h;
	uint64_t seed;
};

static uint64_t checksum(uint64_t seed, const struct engy_rows *rows)
{
	size_t esz = rows->dtype == ENGY_DTYPE_BF16 ? 2 : 4;
	size_t n = (size_t)rows->n_rows * rows->hidden * esz, i;
	const unsigned char *p = rows->data;
	uint64_t h = 1469598103934665603ull ^ seed;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static int oot_create(const struct engy_host *h, const void *conf, void **out)
{
	const struct conf *c = conf;
	struct inst *in = calloc(1, sizeof(*in));

	if (!in)
		return -ENOMEM;
	in->h = h;
	in->seed = (uint64_t)c->seed;
	engy_info(h, "event=created seed=%lld", (long long)c->seed);
	*out = in;
	return 0;
}

static void oot_destroy(void *inst)
{
	free(inst);
}

static int oot_prove(void *inst, const struct engy_rows *rows, char **json)
{
	struct inst *in = inst;
	char buf[64];

	snprintf(buf, sizeof(buf), "{\"sum\":\"%016llx\"}",
		 (unsigned long long)checksum(in->seed, rows));
	*json = strdup(buf);
	return *json ? 0 : -ENOMEM;
}

static int oot_verify(void *inst, const struct engy_rows *rows,
		      const char *json, size_t len,
		      const struct engy_proof_limits *limits,
		      struct engy_proof_result *out)
{
	char *mine = NULL;
	int rc = oot_prove(inst, rows, &mine);

	if (rc)
		return rc;
	out->detail = NULL;
	if (len != strlen(mine)) {
		out->verdict = ENGY_VERDICT_UNPROVEN;
		snprintf(out->reason, sizeof(out->reason), "bad_length");
	} else if (memcmp(json, mine, len) == 0) {
		out->verdict = ENGY_VERDICT_PASS;
		snprintf(out->reason, sizeof(out->reason), "ok");
	} else {
		out->verdict = ENGY_VERDICT_CHEAT;
		snprintf(out->reason, sizeof(out->reason), "sum_mismatch");
	}
	free(mine);
	return 0;
}

static const struct engy_proof_ops ops = {
	.size = sizeof(ops),
	.scheme = "oot-sum",
	.prove = oot_prove,
	.verify = oot_verify,
};

static const struct engy_opt opts[] = {
	{ "seed", ENGY_OPT_INT, 0, offsetof(struct conf, seed), "7", NULL, 0, 0,
	  "checksum key" },
	ENGY_OPT_END,
};

ENGY_PLUGIN(.kind = ENGY_KIND_PROOF, .name = "oot-proof", .version = "0.1",
	    .description = "out-of-tree example: keyed row checksum",
	    .opts = opts, .conf_size = sizeof(struct conf),
	    .create = oot_create, .destroy = oot_destroy, .ops = &ops);
