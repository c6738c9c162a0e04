/* SPDX-License-Identifier: MIT */
/* The light validator's schedule and uid resolution (no clock, no I/O). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "valsched.h"

void engy_valsched_decide(const struct engy_valsched_last *last, uint64_t epoch,
			  bool has_block, uint64_t block, int64_t now,
			  uint32_t interval, uint32_t block_s,
			  struct engy_valsched_decision *out)
{
	int64_t need_s = (int64_t)interval * block_s;

	memset(out, 0, sizeof(*out));
	if (!last->has_applied || epoch > last->applied) {
		out->verdict = ENGY_VALSCHED_NEW;
		out->why = last->has_applied ? "new epoch"
					     : "no epoch applied yet";
		return;
	}
	if (epoch < last->applied) {
		out->verdict = ENGY_VALSCHED_OLDER;
		out->why = "older than the epoch applied (replay guard)";
		return;
	}
	if (has_block && last->has_block) {
		out->by_block = true;
		if (block < last->block) {
			out->verdict = ENGY_VALSCHED_DUE;
			out->why = "the chain is behind the last submission";
		} else if (block - last->block >= interval) {
			out->verdict = ENGY_VALSCHED_DUE;
			out->why = "resubmit interval passed";
		} else {
			out->verdict = ENGY_VALSCHED_NOT_YET;
			out->why = "resubmit interval not passed";
			out->wait_blocks = interval - (block - last->block);
			out->wait_s = (int64_t)out->wait_blocks * block_s;
		}
		return;
	}
	if (!last->has_ts) {
		out->verdict = ENGY_VALSCHED_DUE;
		out->why = "no record of the last submission's time";
	} else if (now < last->ts) {
		out->verdict = ENGY_VALSCHED_DUE;
		out->why = "the clock went backwards";
	} else if (now - last->ts >= need_s) {
		out->verdict = ENGY_VALSCHED_DUE;
		out->why = "resubmit interval passed by the clock";
	} else {
		out->verdict = ENGY_VALSCHED_NOT_YET;
		out->why = "resubmit interval not passed by the clock";
		out->wait_s = need_s - (now - last->ts);
		out->wait_blocks =
			(uint64_t)((out->wait_s + block_s - 1) / block_s);
	}
}

bool engy_valsched_pregate(const struct engy_valsched_last *last,
			   uint64_t epoch, int64_t now, uint32_t interval,
			   uint32_t block_s, int64_t *wait_s)
{
	int64_t gate = (int64_t)interval * block_s * ENGY_VALSCHED_PREGATE_PCT;

	*wait_s = 0;
	if (!last->has_applied || epoch != last->applied || !last->has_ts ||
	    now < last->ts)
		return false;
	if ((now - last->ts) * 100 >= gate)
		return false;
	*wait_s = (int64_t)interval * block_s - (now - last->ts);
	return true;
}

struct hit {
	uint16_t uid;
	uint64_t weight;
};

static int by_uid(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;

	return (x->uid > y->uid) - (x->uid < y->uid);
}

static long find_uid(const uint8_t acc[32], const uint8_t (*hotkeys)[32],
		     size_t n_uids)
{
	size_t u;

	for (u = 0; u < n_uids && u <= UINT16_MAX; u++)
		if (memcmp(hotkeys[u], acc, 32) == 0)
			return (long)u;
	return -1;
}

int engy_valsched_resolve(const struct engy_valrow *rows, size_t n_rows,
			  const uint8_t (*hotkeys)[32], size_t n_uids,
			  struct engy_valresolved *out)
{
	struct hit *hits;
	uint64_t sum = 0, given = 0;
	size_t i, n = 0, top = 0;

	memset(out, 0, sizeof(*out));
	hits = calloc(n_rows ? n_rows : 1, sizeof(*hits));
	if (!hits)
		return -ENOMEM;
	for (i = 0; i < n_rows; i++) {
		uint8_t acc[32];
		long uid = -1;
		size_t k;

		out->total += rows[i].weight;
		if (engy_ss58_decode(rows[i].hotkey, acc, NULL) == 0)
			uid = find_uid(acc, hotkeys, n_uids);
		if (uid < 0) {
			out->dropped++;
			out->dropped_weight += rows[i].weight;
			continue;
		}
		for (k = 0; k < n && hits[k].uid != uid; k++)
			;
		if (k == n)
			hits[n++].uid = (uint16_t)uid;
		else if (!out->duplicates++)
			out->first_duplicate = i;
		hits[k].weight += rows[i].weight;
	}
	for (i = 0; i < n; i++)
		sum += hits[i].weight;
	if (!n || !sum) {
		free(hits);
		return 0;
	}
	qsort(hits, n, sizeof(*hits), by_uid);
	out->uids = calloc(n, sizeof(*out->uids));
	out->weights = calloc(n, sizeof(*out->weights));
	if (!out->uids || !out->weights) {
		free(hits);
		engy_valresolved_free(out);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		/* weight <= 65535 * n_rows: the product fits 64 bits */
		uint64_t w = hits[i].weight * 65535u / sum;

		out->uids[i] = hits[i].uid;
		out->weights[i] = (uint16_t)w;
		given += w;
		if (out->weights[i] > out->weights[top])
			top = i; /* ascending uids: ties keep the lower */
	}
	out->weights[top] = (uint16_t)(out->weights[top] + (65535u - given));
	out->n = n;
	free(hits);
	return 0;
}

void engy_valresolved_free(struct engy_valresolved *r)
{
	free(r->uids);
	free(r->weights);
	memset(r, 0, sizeof(*r));
}

int engy_valrows_from_json(const char *result_json,
			   struct engy_valrow **rows_out, size_t *n_out,
			   char *why, size_t whylen)
{
	cJSON *root = cJSON_Parse(result_json), *w, *it;
	struct engy_valrow *rows = NULL;
	size_t n = 0;
	int rc = -EINVAL;

	*rows_out = NULL;
	*n_out = 0;
	w = cJSON_GetObjectItemCaseSensitive(root, "weights");
	if (!cJSON_IsArray(w)) {
		snprintf(why, whylen, "result_json has no weights list");
		goto out;
	}
	n = (size_t)cJSON_GetArraySize(w);
	if (n > ENGY_VALSCHED_MAX_ROWS) {
		snprintf(why, whylen, "%zu weight rows (at most %d)", n,
			 ENGY_VALSCHED_MAX_ROWS);
		goto out;
	}
	rows = calloc(n ? n : 1, sizeof(*rows));
	if (!rows) {
		rc = -ENOMEM;
		goto out;
	}
	n = 0;
	cJSON_ArrayForEach(it, w)
	{
		cJSON *hk = cJSON_GetArrayItem(it, 0),
		      *v = cJSON_GetArrayItem(it, 1);
		double d;

		if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2 ||
		    !cJSON_IsString(hk) || !cJSON_IsNumber(v) ||
		    strlen(hk->valuestring) >= sizeof(rows[n].hotkey)) {
			snprintf(why, whylen,
				 "weight row %zu is not [hotkey, integer]", n);
			goto out;
		}
		d = v->valuedouble;
		if (d < 0 || d > 65535 || d != (double)(uint16_t)d) {
			snprintf(why, whylen, "weight row %zu is not 0..65535",
				 n);
			goto out;
		}
		strcpy(rows[n].hotkey, hk->valuestring);
		rows[n].weight = (uint16_t)d;
		n++;
	}
	*rows_out = rows;
	*n_out = n;
	rows = NULL;
	rc = 0;
out:
	free(rows);
	cJSON_Delete(root);
	return rc;
}

const char *engy_valrows_burn_target(const struct engy_valrow *rows, size_t n)
{
	const char *who = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!rows[i].weight)
			continue;
		if (who && strcmp(who, rows[i].hotkey) != 0)
			return NULL;
		who = rows[i].hotkey;
	}
	return who;
}
