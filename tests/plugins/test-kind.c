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

static __attribute__((unused)) int
tk_prove(void *inst, const struct engy_rows *rows, char **json)
{
	return -ENOTSUP;
}

static __attribute__((unused)) int
tk_verify(void *inst, const struct engy_rows *rows, const char *json,
	  size_t len, const struct engy_proof_limits *limits,
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
#elif TEST_KIND == 6 /* ENGY_KIND_STORE */
/* Every store op present, each refusing: store tests drive store-sqlite. */
#define TK_STUB(op, ...)                                                       \
	static int tk_##op(__VA_ARGS__)                                        \
	{                                                                      \
		return -ENOTSUP;                                               \
	}
TK_STUB(key_hash, void *i, const char *k, size_t n, uint8_t *h)
TK_STUB(account_create, void *i, const char *n, struct engy_account *o)
TK_STUB(account_get, void *i, int64_t id, struct engy_account *o)
TK_STUB(account_by_name, void *i, const char *n, struct engy_account *o)
TK_STUB(account_list, void *i, struct engy_account **o, size_t *n)
TK_STUB(topup, void *i, int64_t a, int64_t m, struct engy_account *o)
TK_STUB(key_create, void *i, int64_t a, const char *l, char **k,
	struct engy_api_key *o)
TK_STUB(key_lookup, void *i, const uint8_t *h, struct engy_api_key *o)
TK_STUB(key_revoke, void *i, int64_t id)
TK_STUB(key_list, void *i, int64_t a, struct engy_api_key **o, size_t *n)
TK_STUB(reserve, void *i, int64_t a, int64_t k, int64_t m, int64_t e,
	int64_t *r)
TK_STUB(settle, void *i, int64_t r, int64_t c,
	const struct engy_request_row *row, int64_t *ch)
TK_STUB(release_expired, void *i, int64_t t, uint64_t *n, int64_t *m)
TK_STUB(model_put, void *i, const struct engy_model *m)
TK_STUB(model_get, void *i, const char *n, struct engy_model *o)
TK_STUB(model_list, void *i, struct engy_model **o, size_t *n)
TK_STUB(model_root_put, void *i, const struct engy_model_root *r)
TK_STUB(model_root_get, void *i, const uint8_t *r, struct engy_model_root *o)
TK_STUB(model_root_list, void *i, const char *m, struct engy_model_root **o,
	size_t *n)
TK_STUB(model_root_del, void *i, const uint8_t *r)
TK_STUB(miner_put, void *i, const struct engy_miner *m, char **k,
	struct engy_miner *o)
TK_STUB(miner_lookup, void *i, const uint8_t *h, struct engy_miner *o)
TK_STUB(miner_list, void *i, struct engy_miner **o, size_t *n)
TK_STUB(log_append, void *i, const struct engy_request_row *r, size_t n)
TK_STUB(log_query, void *i, const struct engy_log_query *q,
	struct engy_request_row **o, size_t *n)
TK_STUB(log_prune, void *i, int64_t t, uint64_t *n)

static const struct engy_store_ops ops = {
	.size = sizeof(ops),
	.key_hash = tk_key_hash,
	.account_create = tk_account_create,
	.account_get = tk_account_get,
	.account_by_name = tk_account_by_name,
	.account_list = tk_account_list,
	.topup = tk_topup,
	.key_create = tk_key_create,
	.key_lookup = tk_key_lookup,
	.key_revoke = tk_key_revoke,
	.key_list = tk_key_list,
	.reserve = tk_reserve,
	.settle = tk_settle,
	.release_expired = tk_release_expired,
	.model_put = tk_model_put,
	.model_get = tk_model_get,
	.model_list = tk_model_list,
	.model_root_put = tk_model_root_put,
	.model_root_get = tk_model_root_get,
	.model_root_list = tk_model_root_list,
	.model_root_del = tk_model_root_del,
	.miner_put = tk_miner_put,
	.miner_lookup = tk_miner_lookup,
	.miner_list = tk_miner_list,
	.log_append = tk_log_append,
	.log_query = tk_log_query,
	.log_prune = tk_log_prune,
};
#elif TEST_KIND == 5 /* ENGY_KIND_CHAIN */
static int tk_block(void *inst,
		    void (*done)(void *, const struct engy_chain_block *),
		    void *arg)
{
	return -ENOTSUP;
}

static int tk_metagraph(void *inst, uint16_t netuid,
			void (*done)(void *,
				     const struct engy_chain_metagraph *),
			void *arg)
{
	return -ENOTSUP;
}

static int tk_set_weights(void *inst, const struct engy_chain_weights *w,
			  const struct engy_chain_signer *s,
			  void (*done)(void *,
				       const struct engy_chain_submit *),
			  void *arg)
{
	return -ENOTSUP;
}

static const struct engy_chain_ops ops = {
	.size = sizeof(ops),
	.block = tk_block,
	.metagraph = tk_metagraph,
	.set_weights = tk_set_weights,
};
#elif TEST_KIND == 1 /* ENGY_KIND_TRANSPORT */
static const struct engy_transport_ops ops = {
	.size = sizeof(ops),
	.proto = "test",
};
#else
static const struct {
	uint32_t size;
} ops = { sizeof(ops) };
#endif

static const struct engy_opt opts[] = {
	{ "level", ENGY_OPT_INT, 0, offsetof(struct conf, level), "1", NULL, 0,
	  9, "an option to set" },
	ENGY_OPT_END,
};

ENGY_PLUGIN(.kind = TEST_KIND, .name = TEST_NAME, .version = "1",
	    .description = "test plugin", .opts = opts,
	    .conf_size = sizeof(struct conf), .create = tk_create,
	    .destroy = tk_destroy, .ops = &ops);
