// SPDX-License-Identifier: MIT
/*
 * Epoch scoring: input validation, names, the row order.  Every check
 * names the field the way the aggregates document does (rows[3].counted).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "score_int.h"
#include "ss58.h"

#define MAX_MODELS 1024
#define MAX_ROWS   (1u << 20)

int engy_score_fail(char *why, size_t whylen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

void engy_score_params_default(struct engy_epoch_params *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->acceptance_min_bp = 9900;
	p->cheat_max_bp = 100;
	p->acceptance_min_samples = 100;
	p->ttft_min_samples = 100;
	p->tpot_min_samples = 100;
	p->cheat_min_samples = 100;
}

const struct engy_epoch_params *
engy_score_params(const struct engy_epoch_input *in,
		  const struct engy_epoch_params *p,
		  struct engy_epoch_params *def)
{
	if (p)
		return p;
	if (in->params)
		return in->params;
	engy_score_params_default(def);
	return def;
}

const char *engy_gate_name(uint32_t gate)
{
	static const char *const names[] = {
		"ok", "acceptance", "ttft_p99", "tpot_p99", "cheat",
	};

	return gate < sizeof(names) / sizeof(names[0]) ? names[gate] : NULL;
}

int engy_score_hotkey_ok(const char *s)
{
	return s && strlen(s) < ENGY_SCORE_HOTKEY_MAX &&
	       engy_ss58_decode(s, NULL, NULL) == 0;
}

int engy_score_model_ok(const char *s)
{
	size_t n = 0;

	if (!s)
		return 0;
	for (; s[n]; n++) {
		char c = s[n];

		if (n == ENGY_SCORE_MODEL_MAX)
			return 0;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || strchr("._:/@+-", c)))
			return 0;
	}
	return n > 0;
}

const struct engy_epoch_model *
engy_score_model_of(const struct engy_epoch_input *in, const char *model)
{
	size_t i;

	for (i = 0; i < in->n_models; i++)
		if (strcmp(in->models[i].model, model) == 0)
			return &in->models[i];
	return NULL;
}

uint64_t engy_score_hist_total(const struct engy_score_bucket *b, size_t n)
{
	uint64_t t = 0;
	size_t i;

	for (i = 0; i < n; i++)
		t += b[i].count;
	return t;
}

struct rkey {
	const char *hotkey, *model;
	uint32_t uid;
	size_t idx;
};

static int cmp_str(const char *a, const char *b)
{
	int c = strcmp(a, b);

	return (c > 0) - (c < 0);
}

/* uid, hotkey, model, then input index: a total order. */
static int cmp_result(const void *pa, const void *pb)
{
	const struct rkey *a = pa, *b = pb;
	int c;

	if (a->uid != b->uid)
		return a->uid < b->uid ? -1 : 1;
	c = cmp_str(a->hotkey, b->hotkey);
	if (!c)
		c = cmp_str(a->model, b->model);
	if (!c)
		c = a->idx < b->idx ? -1 : a->idx > b->idx;
	return c;
}

/* hotkey, model, then input index: groups a miner's rows. */
static int cmp_miner(const void *pa, const void *pb)
{
	const struct rkey *a = pa, *b = pb;
	int c = cmp_str(a->hotkey, b->hotkey);

	if (!c)
		c = cmp_str(a->model, b->model);
	if (!c)
		c = a->idx < b->idx ? -1 : a->idx > b->idx;
	return c;
}

static struct rkey *row_keys(const struct engy_epoch_input *in,
			     int (*cmp)(const void *, const void *))
{
	struct rkey *k = malloc((in->n_rows ? in->n_rows : 1) * sizeof(*k));
	size_t i;

	if (!k)
		return NULL;
	for (i = 0; i < in->n_rows; i++) {
		k[i].hotkey = in->rows[i].hotkey;
		k[i].model = in->rows[i].model;
		k[i].uid = in->rows[i].uid;
		k[i].idx = i;
	}
	qsort(k, in->n_rows, sizeof(*k), cmp);
	return k;
}

size_t *engy_score_row_order(const struct engy_epoch_input *in)
{
	struct rkey *k = row_keys(in, cmp_result);
	size_t *o, i;

	if (!k)
		return NULL;
	o = malloc((in->n_rows ? in->n_rows : 1) * sizeof(*o));
	if (o)
		for (i = 0; i < in->n_rows; i++)
			o[i] = k[i].idx;
	free(k);
	return o;
}

static int check_params(const struct engy_epoch_params *p, char *why, size_t wl)
{
	if (p->size < sizeof(*p))
		return engy_score_fail(why, wl, -EINVAL,
				       "params: size %u is not %zu",
				       (unsigned)p->size, sizeof(*p));
	if (p->acceptance_min_bp > ENGY_SCORE_BP)
		return engy_score_fail(
			why, wl, -EINVAL,
			"params.acceptance_min_bp: %u is over 10000",
			(unsigned)p->acceptance_min_bp);
	if (p->cheat_max_bp > ENGY_SCORE_BP)
		return engy_score_fail(why, wl, -EINVAL,
				       "params.cheat_max_bp: %u is over 10000",
				       (unsigned)p->cheat_max_bp);
	if (p->acceptance_min_samples > ENGY_SCORE_MAX_INT ||
	    p->ttft_min_samples > ENGY_SCORE_MAX_INT ||
	    p->tpot_min_samples > ENGY_SCORE_MAX_INT ||
	    p->cheat_min_samples > ENGY_SCORE_MAX_INT)
		return engy_score_fail(
			why, wl, -EINVAL,
			"params: a *_min_samples is over 2^53-1");
	return 0;
}

static int check_models(const struct engy_epoch_input *in, char *why, size_t wl)
{
	size_t i, j;

	if (in->n_models > MAX_MODELS)
		return engy_score_fail(why, wl, -EINVAL, "models: more than %d",
				       MAX_MODELS);
	if (in->n_models && !in->models)
		return engy_score_fail(why, wl, -EINVAL, "models: missing");
	for (i = 0; i < in->n_models; i++) {
		const struct engy_epoch_model *m = &in->models[i];

		if (!engy_score_model_ok(m->model))
			return engy_score_fail(
				why, wl, -EINVAL,
				"models[%zu].model: not a model name ([A-Za-z0-9._:/@+-], 1..128)",
				i);
		for (j = 0; j < i; j++)
			if (strcmp(in->models[j].model, m->model) == 0)
				return engy_score_fail(
					why, wl, -EINVAL,
					"models[%zu].model: '%s' repeats models[%zu]",
					i, m->model, j);
		if (m->score_rate > ENGY_SCORE_MAX_INT)
			return engy_score_fail(
				why, wl, -EINVAL,
				"models[%zu].score_rate: over 2^53-1", i);
		if (m->qual_ttft_p99_ms > ENGY_SCORE_MAX_INT)
			return engy_score_fail(
				why, wl, -EINVAL,
				"models[%zu].qual_ttft_p99_ms: over 2^53-1", i);
		if (m->qual_tpot_p99_ms > ENGY_SCORE_MAX_INT)
			return engy_score_fail(
				why, wl, -EINVAL,
				"models[%zu].qual_tpot_p99_ms: over 2^53-1", i);
	}
	return 0;
}

static int check_hist(const struct engy_score_bucket *b, size_t n,
		      uint64_t counted, size_t row, const char *name, char *why,
		      size_t wl)
{
	uint64_t total = 0;
	size_t j;

	if (n && !b)
		return engy_score_fail(why, wl, -EINVAL,
				       "rows[%zu].%s: missing", row, name);
	for (j = 0; j < n; j++) {
		if (b[j].ms > ENGY_SCORE_MAX_INT)
			return engy_score_fail(
				why, wl, -EINVAL,
				"rows[%zu].%s[%zu]: ms over 2^53-1", row, name,
				j);
		if (j && b[j].ms <= b[j - 1].ms)
			return engy_score_fail(
				why, wl, -EINVAL,
				"rows[%zu].%s[%zu]: ms %llu not above the previous bucket's %llu",
				row, name, j, (unsigned long long)b[j].ms,
				(unsigned long long)b[j - 1].ms);
		if (b[j].count == 0 || b[j].count > counted - total)
			return engy_score_fail(
				why, wl, -EINVAL,
				b[j].count
					? "rows[%zu].%s[%zu]: more samples than counted requests"
					: "rows[%zu].%s[%zu]: count 0",
				row, name, j);
		total += b[j].count;
	}
	return 0;
}

#define ROW_INT(r, f, name)                                                    \
	do {                                                                   \
		if ((r)->f > ENGY_SCORE_MAX_INT)                               \
			return engy_score_fail(                                \
				why, wl, -EINVAL,                              \
				"rows[%zu]." name ": over 2^53-1", i);         \
	} while (0)

static int check_row(const struct engy_epoch_input *in, size_t i, char *why,
		     size_t wl)
{
	const struct engy_epoch_row *r = &in->rows[i];
	int rc;

	if (!engy_score_hotkey_ok(r->hotkey))
		return engy_score_fail(why, wl, -EINVAL,
				       "rows[%zu].hotkey: not an SS58 address",
				       i);
	if (r->uid > 65535)
		return engy_score_fail(why, wl, -EINVAL,
				       "rows[%zu].uid: %u is over 65535", i,
				       (unsigned)r->uid);
	if (!engy_score_model_ok(r->model))
		return engy_score_fail(why, wl, -EINVAL,
				       "rows[%zu].model: not a model name", i);
	if (!engy_score_model_of(in, r->model))
		return engy_score_fail(why, wl, -EINVAL,
				       "rows[%zu].model: '%s' is not in models",
				       i, r->model);
	ROW_INT(r, counted, "counted");
	ROW_INT(r, tokens, "tokens");
	ROW_INT(r, n_2xx, "status.2xx");
	ROW_INT(r, n_499, "status.499");
	ROW_INT(r, n_502, "status.502");
	ROW_INT(r, n_504, "status.504");
	ROW_INT(r, v_pass, "verdicts.pass");
	ROW_INT(r, v_cheat, "verdicts.cheat");
	ROW_INT(r, v_unproven, "verdicts.unproven");
	if (r->counted > r->n_2xx)
		return engy_score_fail(
			why, wl, -EINVAL,
			"rows[%zu].counted: %llu is above status.2xx (%llu)", i,
			(unsigned long long)r->counted,
			(unsigned long long)r->n_2xx);
	if (!r->counted && r->tokens)
		return engy_score_fail(
			why, wl, -EINVAL,
			"rows[%zu].tokens: %llu with no counted request", i,
			(unsigned long long)r->tokens);
	rc = check_hist(r->ttft, r->n_ttft, r->counted, i, "ttft_ms", why, wl);
	if (!rc)
		rc = check_hist(r->tpot, r->n_tpot, r->counted, i, "tpot_ms",
				why, wl);
	return rc;
}

/* (hotkey, model) once; one uid per hotkey. */
static int check_pairs(const struct engy_epoch_input *in, char *why, size_t wl)
{
	struct rkey *k = row_keys(in, cmp_miner);
	size_t i, first = 0;
	int rc = 0;

	if (!k)
		return -ENOMEM;
	for (i = 1; i < in->n_rows && !rc; i++) {
		if (strcmp(k[i].hotkey, k[first].hotkey)) {
			first = i;
			continue;
		}
		if (strcmp(k[i].model, k[i - 1].model) == 0)
			rc = engy_score_fail(
				why, wl, -EINVAL,
				"rows[%zu]: hotkey %s and model %s repeat rows[%zu]",
				k[i].idx, k[i].hotkey, k[i].model,
				k[i - 1].idx);
		else if (k[i].uid != k[first].uid)
			rc = engy_score_fail(
				why, wl, -EINVAL,
				"rows[%zu].uid: hotkey %s has uid %u in rows[%zu]",
				k[i].idx, k[i].hotkey, (unsigned)k[first].uid,
				k[first].idx);
	}
	free(k);
	return rc;
}

int engy_score_check(const struct engy_epoch_input *in,
		     const struct engy_epoch_params *p, char *why, size_t wl)
{
	struct engy_epoch_params def;
	size_t i;
	int rc;

	if (why && wl)
		why[0] = '\0';
	if (!in || in->size < sizeof(*in))
		return engy_score_fail(why, wl, -EINVAL,
				       "input: missing or too small");
	if (in->epoch_index > ENGY_SCORE_MAX_INT)
		return engy_score_fail(why, wl, -EINVAL,
				       "epoch_index: over 2^53-1");
	if (!in->owner_hotkey)
		return engy_score_fail(why, wl, -EINVAL,
				       "owner_hotkey: missing");
	if (!engy_score_hotkey_ok(in->owner_hotkey))
		return engy_score_fail(why, wl, -EINVAL,
				       "owner_hotkey: not an SS58 address");
	rc = check_params(engy_score_params(in, p, &def), why, wl);
	if (!rc)
		rc = check_models(in, why, wl);
	if (rc)
		return rc;
	if (in->n_rows > MAX_ROWS)
		return engy_score_fail(why, wl, -EINVAL, "rows: more than %u",
				       MAX_ROWS);
	if (in->n_rows && !in->rows)
		return engy_score_fail(why, wl, -EINVAL, "rows: missing");
	for (i = 0; i < in->n_rows; i++) {
		rc = check_row(in, i, why, wl);
		if (rc)
			return rc;
	}
	return check_pairs(in, why, wl);
}
