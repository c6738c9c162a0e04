/* SPDX-License-Identifier: MIT */
/*
 * verifier-toploc: the TOPLOC proof scheme (specs/toploc.md), both sides.
 *
 * prove() turns a finished request's hidden-state rows into the
 * `commitment.toploc` member; verify() checks such a member against the
 * rows an auditor's backend recomputed and renders pass / cheat /
 * unproven.  Both are pure CPU work on borrowed data with no shared
 * mutable state: the flows call them from the worker pool, concurrently.
 * All the scheme's logic is in lib/toploc/toploc*.c.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <engy/plugin.h>
#include <engy/proof.h>

#include "config.h"
#include "toploc.h"

struct toploc_conf {
	int64_t topk;
	int64_t decode_batching_size;
	bool skip_prefill;
	int64_t max_exp_mismatches;
	double min_pass_ratio;
	double max_mant_mean;
	double max_mant_median;
};

struct toploc {
	const struct engy_host *host;
	struct engy_toploc_params params;
	struct engy_proof_limits limits;
};

#define OFF(f) offsetof(struct toploc_conf, f)

static const struct engy_opt toploc_opts[] = {
	{ "topk", ENGY_OPT_INT, 0, OFF(topk), "128", "TOPLOC_TOPK", 1,
	  ENGY_TOPLOC_MAX_TOPK, "points per proof (top-k of |x|)" },
	{ "decode_batching_size", ENGY_OPT_INT, 0, OFF(decode_batching_size),
	  "32", "TOPLOC_DBS", 1, ENGY_TOPLOC_MAX_DBS,
	  "generated tokens per proof" },
	{ "skip_prefill", ENGY_OPT_BOOL, 0, OFF(skip_prefill), "true", NULL, 0,
	  0, "prove only generated tokens (false: one prefill proof too)" },
	{ "max_exp_mismatches", ENGY_OPT_INT, 0, OFF(max_exp_mismatches), "40",
	  NULL, 0, ENGY_TOPLOC_MAX_TOPK,
	  "toploc_v: most exponent mismatches a passing chunk may have" },
	{ "min_pass_ratio", ENGY_OPT_FLOAT, 0, OFF(min_pass_ratio), "0.99",
	  NULL, 0, 0, "toploc_p: least share of chunks that must pass" },
	{ "max_mant_mean", ENGY_OPT_FLOAT, 0, OFF(max_mant_mean), "0", NULL, 0,
	  0, "largest mantissa error mean of a passing chunk (0: unchecked)" },
	{ "max_mant_median", ENGY_OPT_FLOAT, 0, OFF(max_mant_median), "0", NULL,
	  0, 0,
	  "largest mantissa error median of a passing chunk (0: unchecked)" },
	ENGY_OPT_END
};

static int toploc_create(const struct engy_host *host, const void *conf,
			 void **inst)
{
	const struct toploc_conf *c = conf;
	struct toploc *t;

	*inst = NULL;
	if (c->topk < 1 || c->topk > ENGY_TOPLOC_MAX_TOPK ||
	    c->decode_batching_size < 1 ||
	    c->decode_batching_size > ENGY_TOPLOC_MAX_DBS) {
		engy_err(host, "event=config_invalid option=%s",
			 c->topk < 1 || c->topk > ENGY_TOPLOC_MAX_TOPK
				 ? "topk"
				 : "decode_batching_size");
		return -EINVAL;
	}
	if (c->max_exp_mismatches < 0 || c->max_exp_mismatches > c->topk) {
		engy_err(host, "event=config_invalid option=max_exp_mismatches "
			       "reason=\"must be 0..topk\"");
		return -EINVAL;
	}
	if (!(c->min_pass_ratio >= 0 && c->min_pass_ratio <= 1)) {
		engy_err(host, "event=config_invalid option=min_pass_ratio "
			       "reason=\"must be 0..1\"");
		return -EINVAL;
	}
	if (!(c->max_mant_mean >= 0) || !(c->max_mant_median >= 0)) {
		engy_err(host,
			 "event=config_invalid option=%s "
			 "reason=\"must be >= 0\"",
			 !(c->max_mant_mean >= 0) ? "max_mant_mean"
						  : "max_mant_median");
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->host = host;
	t->params.topk = (uint32_t)c->topk;
	t->params.dbs = (uint32_t)c->decode_batching_size;
	t->params.skip_prefill = c->skip_prefill;
	t->limits.size = sizeof(t->limits);
	t->limits.max_exp_mismatches = (uint32_t)c->max_exp_mismatches;
	t->limits.min_pass_ratio = c->min_pass_ratio;
	t->limits.max_mant_mean = c->max_mant_mean;
	t->limits.max_mant_median = c->max_mant_median;
	*inst = t;
	return 0;
}

static void toploc_destroy(void *inst)
{
	free(inst);
}

static int toploc_prove(void *inst, const struct engy_rows *rows, char **json)
{
	struct toploc *t = inst;
	uint8_t *proofs = NULL;
	size_t n = 0;
	int rc;

	*json = NULL;
	rc = engy_toploc_prove_rows(rows, &t->params, &proofs, &n);
	if (rc) {
		engy_warn(t->host,
			  "event=toploc_prove_failed rc=%d rows=%u "
			  "hidden=%u",
			  rc, rows ? rows->n_rows : 0, rows ? rows->hidden : 0);
		return rc;
	}
	rc = engy_toploc_commitment_json(&t->params, proofs, n,
					 rows->n_rows - rows->n_prefill, json);
	free(proofs);
	return rc;
}

/* The caller's limits, zero-extended when its struct is older. */
static void pick_limits(const struct toploc *t,
			const struct engy_proof_limits *in,
			struct engy_proof_limits *out)
{
	size_t n;

	if (!in) {
		*out = t->limits;
		return;
	}
	memset(out, 0, sizeof(*out));
	n = in->size < sizeof(*out) ? in->size : sizeof(*out);
	memcpy(out, in, n);
	out->size = sizeof(*out);
}

static int toploc_verify(void *inst, const struct engy_rows *rows,
			 const char *json, size_t json_len,
			 const struct engy_proof_limits *limits,
			 struct engy_proof_result *out)
{
	struct toploc *t = inst;
	struct engy_toploc_report rep;
	struct engy_proof_limits lim;
	int rc;

	memset(out, 0, sizeof(*out));
	pick_limits(t, limits, &lim);
	rc = engy_toploc_verify_json(rows, &t->params, json, json_len, &lim,
				     &rep);
	if (rc) {
		engy_warn(t->host, "event=toploc_verify_failed rc=%d", rc);
		return rc;
	}
	out->verdict = rep.verdict;
	snprintf(out->reason, sizeof(out->reason), "%s", rep.reason);
	rc = engy_toploc_report_json(&rep, &out->detail);
	engy_toploc_report_free(&rep);
	return rc;
}

static const struct engy_proof_ops toploc_ops = {
	.size = sizeof(struct engy_proof_ops),
	.scheme = "toploc",
	.prove = toploc_prove,
	.verify = toploc_verify,
};

ENGY_PLUGIN(.kind = ENGY_KIND_PROOF, .name = "verifier-toploc",
	    .version = PACKAGE_VERSION,
	    .description = "TOPLOC activation proofs (prove and verify)",
	    .opts = toploc_opts, .conf_size = sizeof(struct toploc_conf),
	    .create = toploc_create, .destroy = toploc_destroy,
	    .ops = &toploc_ops);
