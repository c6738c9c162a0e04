// SPDX-License-Identifier: MIT
/*
 * scorer-sn53: SN53's epoch settlement (specs/settlement.md §2-§3,
 * specs/scoring.md), rule set "engy-sn53-v1".  The options are the gates'
 * thresholds and minimum samples; an input that carries its own params
 * (a recomputation) uses those instead.  All the logic is in lib/score/score*.c,
 * integers only.
 */
#include <errno.h>
#include <stdlib.h>

#include <engy/plugin.h>
#include <engy/scorer.h>

#include "config.h"
#include "score.h"

struct sn53_conf {
	int64_t acceptance_min_bp;
	int64_t acceptance_min_samples;
	int64_t ttft_min_samples;
	int64_t tpot_min_samples;
	int64_t cheat_max_bp;
	int64_t cheat_min_samples;
};

struct sn53 {
	const struct engy_host *host;
	struct engy_epoch_params params;
};

#define OFF(f) offsetof(struct sn53_conf, f)
#define MAXS   9007199254740991LL

/* The defaults are engy_score_params_default()'s (the unit test pins it). */
static const struct engy_opt sn53_opts[] = {
	{ "acceptance_min_bp", ENGY_OPT_INT, 0, OFF(acceptance_min_bp), "9900",
	  NULL, 0, 10000,
	  "acceptance gate: least 2xx / (2xx + 502 + 504), basis points" },
	{ "acceptance_min_samples", ENGY_OPT_INT, 0,
	  OFF(acceptance_min_samples), "100", NULL, 0, MAXS,
	  "acceptance gate: fewer 2xx + 502 + 504 than this pass" },
	{ "ttft_min_samples", ENGY_OPT_INT, 0, OFF(ttft_min_samples), "100",
	  NULL, 0, MAXS, "ttft_p99 gate: fewer TTFT samples than this pass" },
	{ "tpot_min_samples", ENGY_OPT_INT, 0, OFF(tpot_min_samples), "100",
	  NULL, 0, MAXS, "tpot_p99 gate: fewer TPOT samples than this pass" },
	{ "cheat_max_bp", ENGY_OPT_INT, 0, OFF(cheat_max_bp), "100", NULL, 0,
	  10000,
	  "cheat gate: most cheat / (pass + cheat) per miner, basis points" },
	{ "cheat_min_samples", ENGY_OPT_INT, 0, OFF(cheat_min_samples), "100",
	  NULL, 0, MAXS,
	  "cheat gate: miners with fewer pass + cheat verdicts pass" },
	ENGY_OPT_END
};

static int sn53_create(const struct engy_host *host, const void *conf,
		       void **inst)
{
	const struct sn53_conf *c = conf;
	const int64_t *v = &c->acceptance_min_bp;
	struct sn53 *s;
	size_t i;

	*inst = NULL;
	/*
	 * The host enforces the table's bounds; a direct caller may not.
	 * The table lists the conf's int64_t fields in order.
	 */
	for (i = 0; i < sizeof(*c) / sizeof(*v); i++)
		if (v[i] < sn53_opts[i].min || v[i] > sn53_opts[i].max) {
			engy_err(host,
				 "event=config_invalid option=%s "
				 "reason=\"out of range\"",
				 sn53_opts[i].name);
			return -EINVAL;
		}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->host = host;
	engy_score_params_default(&s->params);
	s->params.acceptance_min_bp = (uint32_t)c->acceptance_min_bp;
	s->params.acceptance_min_samples = (uint64_t)c->acceptance_min_samples;
	s->params.ttft_min_samples = (uint64_t)c->ttft_min_samples;
	s->params.tpot_min_samples = (uint64_t)c->tpot_min_samples;
	s->params.cheat_max_bp = (uint32_t)c->cheat_max_bp;
	s->params.cheat_min_samples = (uint64_t)c->cheat_min_samples;
	*inst = s;
	return 0;
}

static void sn53_destroy(void *inst)
{
	free(inst);
}

static const struct engy_epoch_params *pick(const struct sn53 *s,
					    const struct engy_epoch_input *in)
{
	return in && in->params ? in->params : &s->params;
}

static int sn53_settle(void *inst, const struct engy_epoch_input *in,
		       struct engy_epoch_result *out)
{
	struct sn53 *s = inst;
	int rc = engy_score_settle(in, pick(s, in), out);

	if (rc == -EINVAL || rc == -ERANGE)
		engy_warn(s->host, "event=settle_refused rc=%d reason=\"%s\"",
			  rc, out->error);
	else if (!rc)
		engy_info(s->host,
			  "event=settled epoch=%llu netuid=%u rows=%zu "
			  "weights=%zu burn=%d total_score=%llu",
			  (unsigned long long)in->epoch_index,
			  (unsigned)in->netuid, in->n_rows, out->n_weights,
			  (int)out->burn, (unsigned long long)out->total_score);
	return rc;
}

static int sn53_aggregates(void *inst, const struct engy_epoch_input *in,
			   char **json, char *why, size_t whylen)
{
	struct sn53 *s = inst;

	return engy_score_aggregates_json(in, pick(s, in), json, why, whylen);
}

static const struct engy_scorer_ops sn53_ops = {
	.size = sizeof(struct engy_scorer_ops),
	.rules = ENGY_SCORE_RULES,
	.settle = sn53_settle,
	.aggregates = sn53_aggregates,
};

ENGY_PLUGIN(.kind = ENGY_KIND_SCORER, .name = "scorer-sn53",
	    .version = PACKAGE_VERSION,
	    .description =
		    "SN53 epoch settlement (integer scores, gates, weight_u16)",
	    .opts = sn53_opts, .conf_size = sizeof(struct sn53_conf),
	    .create = sn53_create, .destroy = sn53_destroy, .ops = &sn53_ops);
