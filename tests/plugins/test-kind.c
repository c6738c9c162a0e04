/* SPDX-License-Identifier: MIT */
/*
 * A well-formed plugin of any kind, compiled once per kind with
 * -DTEST_KIND=ENGY_KIND_x -DTEST_NAME="test-x": lets the tests build role
 * configs out of plugins that load, create and start without doing
 * anything else.
 */
#include <errno.h>
#include <stdlib.h>

#include <engy/engy.h>

struct conf {
	int64_t level;
};

struct inst {
	const struct engy_host *h;
};

static int tk_create(const struct engy_host *h, const void *conf, void **out)
{
	struct inst *in = calloc(1, sizeof(*in));

	if (!in)
		return -ENOMEM;
	in->h = h;
	*out = in;
	return 0;
}

static void tk_destroy(void *inst)
{
	free(inst);
}

static int tk_prove(void *inst, const struct engy_rows *rows, char **json)
{
	return -ENOTSUP;
}

static int tk_verify(void *inst, const struct engy_rows *rows,
		     const char *json, size_t len,
		     const struct engy_proof_limits *limits,
		     struct engy_proof_result *out)
{
	return -ENOTSUP;
}

#if TEST_KIND == ENGY_KIND_PROOF
static const struct engy_proof_ops ops = {
	.size = sizeof(ops),
	.scheme = "test",
	.prove = tk_prove,
	.verify = tk_verify,
};
#else
static const struct { uint32_t size; } ops = { sizeof(ops) };
#endif

static const struct engy_opt opts[] = {
	{ "level", ENGY_OPT_INT, 0, offsetof(struct conf, level), "1", NULL,
	  0, 9, "an option to set" },
	ENGY_OPT_END,
};

ENGY_PLUGIN(.kind = TEST_KIND, .name = TEST_NAME, .version = "1",
	    .description = "test plugin", .opts = opts,
	    .conf_size = sizeof(struct conf), .create = tk_create,
	    .destroy = tk_destroy, .ops = &ops);
