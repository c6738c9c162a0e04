/* SPDX-License-Identifier: MIT */
/*
 * A well-formed plugin of any kind, compiled once per kind with
 * -DTEST_KIND=<enum engy_kind value> -DTEST_NAME="test-x" (a number, since
 * the preprocessor cannot see enum constants): lets the tests build role
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

static __attribute__((unused)) int tk_prove(void *inst, const struct engy_rows *rows, char **json)
{
	return -ENOTSUP;
}

static __attribute__((unused)) int tk_verify(void *inst, const struct engy_rows *rows,
		     const char *json, size_t len,
		     const struct engy_proof_limits *limits,
		     struct engy_proof_result *out)
{
	return -ENOTSUP;
}

#if TEST_KIND == 3 /* ENGY_KIND_PROOF */
static const struct engy_proof_ops ops = {
	.size = sizeof(ops),
	.scheme = "test",
	.prove = tk_prove,
	.verify = tk_verify,
};
#elif TEST_KIND == 2 /* ENGY_KIND_BACKEND */
static int tk_info(void *inst, struct engy_model_info *out)
{
	out->hidden_size = 8;
	return 0;
}

static int tk_generate(void *inst, const struct engy_gen_params *p,
		       const struct engy_gen_cb *cb, void *arg,
		       struct engy_gen **out)
{
	return -ENOTSUP;
}

static void tk_cancel(void *inst, struct engy_gen *g)
{
}

static const struct engy_backend_ops ops = {
	.size = sizeof(ops),
	.info = tk_info,
	.generate = tk_generate,
	.cancel = tk_cancel,
};
#elif TEST_KIND == 4 /* ENGY_KIND_SCORER */
static int tk_settle(void *inst, const struct engy_epoch_input *in,
		     struct engy_epoch_result *out)
{
	return -ENOTSUP;
}

static int tk_aggregates(void *inst, const struct engy_epoch_input *in,
			 char **json, char *why, size_t whylen)
{
	return -ENOTSUP;
}

static const struct engy_scorer_ops ops = {
	.size = sizeof(ops),
	.rules = "test",
	.settle = tk_settle,
	.aggregates = tk_aggregates,
};
#elif TEST_KIND == 1 /* ENGY_KIND_TRANSPORT */
static const struct engy_transport_ops ops = {
	.size = sizeof(ops),
	.proto = "test",
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
