/* SPDX-License-Identifier: MIT */
/*
 * TOPLOC commitment member (specs/protocol.md §3) to and from JSON, and the
 * verdict's detail JSON.  The member arrives from a miner: every field is
 * checked, and anything unexpected makes the request UNPROVEN.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base64.h"
#include "toploc.h"

int engy_toploc_commitment_json(const struct engy_toploc_params *p,
				const uint8_t *proofs, size_t n,
				uint32_t n_tokens, char **json)
{
	size_t plen, i;
	cJSON *root, *arr;
	char *b64 = NULL;
	int rc = -ENOMEM;

	*json = NULL;
	if (engy_toploc_params_check(p) || (n && !proofs))
		return -EINVAL;
	plen = engy_toploc_proof_len(p->topk);
	root = cJSON_CreateObject();
	b64 = malloc(engy_base64_enc_len(plen) + 1);
	if (!root || !b64)
		goto out;
	arr = cJSON_AddArrayToObject(root, "proofs");
	if (!arr)
		goto out;
	for (i = 0; i < n; i++) {
		cJSON *s;

		engy_base64_encode(b64, proofs + i * plen, plen);
		s = cJSON_CreateString(b64);
		if (!s || !cJSON_AddItemToArray(arr, s)) {
			cJSON_Delete(s);
			goto out;
		}
	}
	if (!cJSON_AddNumberToObject(root, "topk", p->topk) ||
	    !cJSON_AddNumberToObject(root, "decode_batching_size", p->dbs) ||
	    !cJSON_AddBoolToObject(root, "skip_prefill", p->skip_prefill) ||
	    !cJSON_AddNumberToObject(root, "n_tokens", n_tokens))
		goto out;
	*json = cJSON_PrintUnformatted(root);
	if (*json)
		rc = 0;
out:
	free(b64);
	cJSON_Delete(root);
	return rc;
}

/* A non-negative integer member: 0, -ENOENT when absent, -EINVAL else. */
static int get_uint(const cJSON *obj, const char *name, uint64_t *out)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
	double d;

	if (!it)
		return -ENOENT;
	if (!cJSON_IsNumber(it))
		return -EINVAL;
	d = it->valuedouble;
	if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d))
		return -EINVAL;
	*out = (uint64_t)d;
	return 0;
}

/* The commitment's own parameters against ours; a defect or OK. */
static int check_params(const cJSON *root, const struct engy_rows *rows,
			const struct engy_toploc_params *p)
{
	const cJSON *sp;
	uint64_t v;
	int rc;

	if (get_uint(root, "topk", &v))
		return ENGY_TOPLOC_BAD_JSON;
	if (v != p->topk)
		return ENGY_TOPLOC_TOPK_MISMATCH;
	if (get_uint(root, "decode_batching_size", &v))
		return ENGY_TOPLOC_BAD_JSON;
	if (v != p->dbs)
		return ENGY_TOPLOC_DBS_MISMATCH;
	sp = cJSON_GetObjectItemCaseSensitive(root, "skip_prefill");
	if (sp && !cJSON_IsBool(sp))
		return ENGY_TOPLOC_BAD_JSON;
	/* The reference's default is true, as engy's miners send it. */
	if ((sp ? cJSON_IsTrue(sp) : 1) != p->skip_prefill)
		return ENGY_TOPLOC_PREFILL_MISMATCH;
	rc = get_uint(root, "n_tokens", &v);
	if (rc == -EINVAL)
		return ENGY_TOPLOC_BAD_JSON;
	if (!rc && v != (uint64_t)(rows->n_rows - rows->n_prefill))
		return ENGY_TOPLOC_N_TOKENS;
	return ENGY_TOPLOC_OK;
}

int engy_toploc_verify_json(const struct engy_rows *rows,
			    const struct engy_toploc_params *p,
			    const char *json, size_t len,
			    const struct engy_proof_limits *lim,
			    struct engy_toploc_report *rep)
{
	const char **b64 = NULL;
	size_t *lens = NULL, n = 0, n_chunks;
	const cJSON *arr, *it;
	cJSON *root = NULL;
	int rc, d = ENGY_TOPLOC_BAD_JSON;

	memset(rep, 0, sizeof(*rep));
	rep->bad_proof = -1;
	rc = engy_toploc_n_chunks(rows, p, &n_chunks);
	if (rc || !lim)
		return -EINVAL;
	if (json)
		root = cJSON_ParseWithLength(json, len);
	if (!root || !cJSON_IsObject(root))
		goto defect;
	d = check_params(root, rows, p);
	if (d)
		goto defect;
	arr = cJSON_GetObjectItemCaseSensitive(root, "proofs");
	d = ENGY_TOPLOC_BAD_JSON;
	if (!cJSON_IsArray(arr))
		goto defect;
	n = (size_t)cJSON_GetArraySize(arr);
	if (n != n_chunks) {
		d = ENGY_TOPLOC_CHUNK_COUNT;
		goto defect;
	}
	b64 = malloc((n ? n : 1) * sizeof(*b64));
	lens = malloc((n ? n : 1) * sizeof(*lens));
	if (!b64 || !lens) {
		rc = -ENOMEM;
		goto out;
	}
	n = 0;
	cJSON_ArrayForEach(it, arr)
	{
		if (!cJSON_IsString(it) || !it->valuestring)
			goto defect;
		b64[n] = it->valuestring;
		lens[n++] = strlen(it->valuestring);
	}
	rc = engy_toploc_verify_rows(rows, p, b64, lens, n, lim, rep);
	goto out;
defect:
	rep->verdict = ENGY_VERDICT_UNPROVEN;
	rep->defect = d;
	rep->reason = engy_toploc_defect_str(d);
out:
	free(b64);
	free(lens);
	cJSON_Delete(root);
	return rc;
}

static const char *verdict_str(int v)
{
	switch (v) {
	case ENGY_VERDICT_PASS:
		return "pass";
	case ENGY_VERDICT_CHEAT:
		return "cheat";
	default:
		return "unproven";
	}
}

int engy_toploc_report_json(const struct engy_toploc_report *rep, char **json)
{
	cJSON *root, *mis, *mean, *med;
	size_t i;
	int rc = -ENOMEM;

	*json = NULL;
	root = cJSON_CreateObject();
	if (!root)
		return -ENOMEM;
	if (!cJSON_AddStringToObject(root, "verdict",
				     verdict_str(rep->verdict)) ||
	    !cJSON_AddStringToObject(root, "reason",
				     rep->reason ? rep->reason : "") ||
	    !cJSON_AddNumberToObject(root, "chunks", (double)rep->n_chunks) ||
	    !cJSON_AddNumberToObject(root, "passed", (double)rep->n_pass))
		goto out;
	if (rep->bad_proof >= 0 &&
	    !cJSON_AddNumberToObject(root, "bad_proof", (double)rep->bad_proof))
		goto out;
	mis = cJSON_AddArrayToObject(root, "exp_mismatches");
	mean = cJSON_AddArrayToObject(root, "mant_mean");
	med = cJSON_AddArrayToObject(root, "mant_median");
	if (!mis || !mean || !med)
		goto out;
	for (i = 0; i < rep->n_chunks; i++) {
		const struct engy_toploc_stats *st = &rep->chunks[i];

		if (!cJSON_AddItemToArray(
			    mis, cJSON_CreateNumber(st->exp_mismatches)) ||
		    !cJSON_AddItemToArray(mean,
					  cJSON_CreateNumber(st->mant_mean)) ||
		    !cJSON_AddItemToArray(med,
					  cJSON_CreateNumber(st->mant_median)))
			goto out;
	}
	*json = cJSON_PrintUnformatted(root);
	if (*json)
		rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}
