// SPDX-License-Identifier: MIT
/*
 * Epoch scoring: the public aggregates document (specs/scoring.md §5)
 * into a struct engy_epoch_input.  Shapes and types here, with the field
 * named on failure; the rules of the values are engy_score_check()'s.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "score_int.h"
#include "score_json.h"

struct priv {
	struct sj *dom;
	struct engy_epoch_model *models;
	struct engy_epoch_row *rows;
	size_t n_rows;
};

struct ctx {
	char *why;
	size_t wl;
};

static int fail(struct ctx *c, const char *path, const char *what)
{
	return engy_score_fail(c->why, c->wl, -EINVAL, "%s: %s", path, what);
}

/* Unknown keys are refused: a misspelt field must not read as absent. */
static int known(struct ctx *c, const struct sj *o, const char *path,
		 const char *const *keys)
{
	char what[128];
	size_t i, k;

	if (o->type != SJ_OBJ)
		return fail(c, path, "not an object");
	for (i = 0; i < o->n; i++) {
		for (k = 0; keys[k] && strcmp(keys[k], o->k[i]); k++)
			;
		if (!keys[k]) {
			snprintf(what, sizeof(what), "unknown key \"%.64s\"",
				 o->k[i]);
			return fail(c, path, what);
		}
	}
	return 0;
}

/* @o.@key as an integer 0..@max; absent is an error when @req. */
static int get_uint(struct ctx *c, const struct sj *o, const char *path,
		    const char *key, uint64_t max, int req, uint64_t *out)
{
	const struct sj *v = engy_sj_get(o, key);
	char p[160], what[64];

	snprintf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", key);
	if (!v)
		return req ? fail(c, p, "missing") : 1;
	if (v->type != SJ_NUM || !v->is_uint)
		return fail(c, p, "not an integer 0..2^53-1");
	if (v->u > max) {
		snprintf(what, sizeof(what), "%llu is over %llu",
			 (unsigned long long)v->u, (unsigned long long)max);
		return fail(c, p, what);
	}
	*out = v->u;
	return 0;
}

static int get_str(struct ctx *c, const struct sj *o, const char *path,
		   const char *key, int req, const char **out)
{
	const struct sj *v = engy_sj_get(o, key);
	char p[160];

	snprintf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", key);
	if (!v)
		return req ? fail(c, p, "missing") : 1;
	if (v->type != SJ_STR)
		return fail(c, p, "not a string");
	*out = v->s;
	return 0;
}

static const struct sj *get_arr(struct ctx *c, const struct sj *o,
				const char *path, const char *key, int *rc)
{
	const struct sj *v = engy_sj_get(o, key);
	char p[160];

	snprintf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", key);
	*rc = 0;
	if (!v || v->type != SJ_ARR) {
		*rc = fail(c, p, v ? "not an array" : "missing");
		return NULL;
	}
	return v;
}

static int parse_params(struct ctx *c, const struct sj *top,
			struct engy_epoch_params *p)
{
	static const char *const keys[] = { "acceptance_min_bp",
					    "acceptance_min_samples",
					    "ttft_min_samples",
					    "tpot_min_samples",
					    "cheat_max_bp",
					    "cheat_min_samples",
					    NULL };
	const struct sj *o = engy_sj_get(top, "params");
	uint64_t v;
	int rc;

	engy_score_params_default(p);
	if (!o)
		return 0;
	rc = known(c, o, "params", keys);
	if (rc)
		return rc;
	rc = get_uint(c, o, "params", "acceptance_min_bp", ENGY_SCORE_BP, 0,
		      &v);
	if (rc < 0)
		return rc;
	if (!rc)
		p->acceptance_min_bp = (uint32_t)v;
	rc = get_uint(c, o, "params", "cheat_max_bp", ENGY_SCORE_BP, 0, &v);
	if (rc < 0)
		return rc;
	if (!rc)
		p->cheat_max_bp = (uint32_t)v;
	rc = get_uint(c, o, "params", "acceptance_min_samples",
		      ENGY_SCORE_MAX_INT, 0, &p->acceptance_min_samples);
	if (rc >= 0)
		rc = get_uint(c, o, "params", "ttft_min_samples",
			      ENGY_SCORE_MAX_INT, 0, &p->ttft_min_samples);
	if (rc >= 0)
		rc = get_uint(c, o, "params", "tpot_min_samples",
			      ENGY_SCORE_MAX_INT, 0, &p->tpot_min_samples);
	if (rc >= 0)
		rc = get_uint(c, o, "params", "cheat_min_samples",
			      ENGY_SCORE_MAX_INT, 0, &p->cheat_min_samples);
	return rc < 0 ? rc : 0;
}

static int parse_models(struct ctx *c, const struct sj *top, struct priv *pv,
			struct engy_epoch_input *in)
{
	static const char *const keys[] = { "model", "score_rate",
					    "qual_ttft_p99_ms",
					    "qual_tpot_p99_ms", NULL };
	const struct sj *a;
	char p[64];
	size_t i;
	int rc;

	a = get_arr(c, top, "", "models", &rc);
	if (!a)
		return rc;
	pv->models = calloc(a->n ? a->n : 1, sizeof(*pv->models));
	if (!pv->models)
		return -ENOMEM;
	for (i = 0; i < a->n; i++) {
		struct engy_epoch_model *m = &pv->models[i];

		snprintf(p, sizeof(p), "models[%zu]", i);
		rc = known(c, &a->v[i], p, keys);
		if (!rc)
			rc = get_str(c, &a->v[i], p, "model", 1, &m->model);
		if (!rc)
			rc = get_uint(c, &a->v[i], p, "score_rate",
				      ENGY_SCORE_MAX_INT, 1, &m->score_rate);
		if (!rc)
			rc = get_uint(c, &a->v[i], p, "qual_ttft_p99_ms",
				      ENGY_SCORE_MAX_INT, 1,
				      &m->qual_ttft_p99_ms);
		if (!rc)
			rc = get_uint(c, &a->v[i], p, "qual_tpot_p99_ms",
				      ENGY_SCORE_MAX_INT, 1,
				      &m->qual_tpot_p99_ms);
		if (rc)
			return rc;
	}
	in->models = pv->models;
	in->n_models = a->n;
	return 0;
}

/* [[ms, count], ...] */
static int parse_hist(struct ctx *c, const struct sj *row, const char *path,
		      const char *key, const struct engy_score_bucket **out,
		      size_t *n)
{
	struct engy_score_bucket *b;
	const struct sj *a;
	char p[160];
	size_t j;
	int rc;

	a = get_arr(c, row, path, key, &rc);
	if (!a)
		return rc;
	b = calloc(a->n ? a->n : 1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	*out = b;
	*n = a->n;
	for (j = 0; j < a->n; j++) {
		const struct sj *e = &a->v[j];

		snprintf(p, sizeof(p), "%s.%s[%zu]", path, key, j);
		if (e->type != SJ_ARR || e->n != 2 || e->v[0].type != SJ_NUM ||
		    !e->v[0].is_uint || e->v[1].type != SJ_NUM ||
		    !e->v[1].is_uint)
			return fail(
				c, p,
				"not an [ms, count] pair of integers 0..2^53-1");
		b[j].ms = e->v[0].u;
		b[j].count = e->v[1].u;
	}
	return 0;
}

static int parse_counts(struct ctx *c, const struct sj *row, const char *path,
			const char *key, const char *const *keys,
			uint64_t *const *dst)
{
	const struct sj *o = engy_sj_get(row, key);
	char p[160];
	size_t k;
	int rc;

	snprintf(p, sizeof(p), "%s.%s", path, key);
	if (!o)
		return fail(c, p, "missing");
	rc = known(c, o, p, keys);
	for (k = 0; !rc && keys[k]; k++)
		rc = get_uint(c, o, p, keys[k], ENGY_SCORE_MAX_INT, 1, dst[k]);
	return rc;
}

static int parse_row(struct ctx *c, const struct sj *o, size_t i,
		     struct engy_epoch_row *r)
{
	static const char *const keys[] = { "hotkey",  "uid",	  "model",
					    "counted", "tokens",  "status",
					    "ttft_ms", "tpot_ms", "verdicts",
					    NULL };
	static const char *const status[] = { "2xx", "499", "502", "504",
					      NULL };
	static const char *const verdicts[] = { "pass", "cheat", "unproven",
						NULL };
	uint64_t *const sdst[] = { &r->n_2xx, &r->n_499, &r->n_502, &r->n_504 };
	uint64_t *const vdst[] = { &r->v_pass, &r->v_cheat, &r->v_unproven };
	uint64_t uid = 0;
	char p[48];
	int rc;

	snprintf(p, sizeof(p), "rows[%zu]", i);
	rc = known(c, o, p, keys);
	if (!rc)
		rc = get_str(c, o, p, "hotkey", 1, &r->hotkey);
	if (!rc)
		rc = get_uint(c, o, p, "uid", 65535, 1, &uid);
	r->uid = (uint32_t)uid;
	if (!rc)
		rc = get_str(c, o, p, "model", 1, &r->model);
	if (!rc)
		rc = get_uint(c, o, p, "counted", ENGY_SCORE_MAX_INT, 1,
			      &r->counted);
	if (!rc)
		rc = get_uint(c, o, p, "tokens", ENGY_SCORE_MAX_INT, 1,
			      &r->tokens);
	if (!rc)
		rc = parse_counts(c, o, p, "status", status, sdst);
	if (!rc)
		rc = parse_hist(c, o, p, "ttft_ms", &r->ttft, &r->n_ttft);
	if (!rc)
		rc = parse_hist(c, o, p, "tpot_ms", &r->tpot, &r->n_tpot);
	if (!rc)
		rc = parse_counts(c, o, p, "verdicts", verdicts, vdst);
	return rc;
}

static int parse_rows(struct ctx *c, const struct sj *top, struct priv *pv,
		      struct engy_epoch_input *in)
{
	const struct sj *a;
	size_t i;
	int rc;

	a = get_arr(c, top, "", "rows", &rc);
	if (!a)
		return rc;
	pv->rows = calloc(a->n ? a->n : 1, sizeof(*pv->rows));
	if (!pv->rows)
		return -ENOMEM;
	for (i = 0; i < a->n; i++) {
		pv->n_rows = i + 1;
		rc = parse_row(c, &a->v[i], i, &pv->rows[i]);
		if (rc)
			return rc;
	}
	in->rows = pv->rows;
	in->n_rows = a->n;
	return 0;
}

static int parse_top(struct ctx *c, const struct sj *top,
		     struct engy_score_doc *d, struct priv *pv)
{
	static const char *const keys[] = { "v",	   "netuid",
					    "epoch_index", "owner_hotkey",
					    "params",	   "models",
					    "rows",	   NULL };
	const char *owner = NULL;
	uint64_t v;
	int rc;

	rc = known(c, top, "aggregates", keys);
	if (rc)
		return rc;
	rc = get_uint(c, top, "", "v", ENGY_SCORE_MAX_INT, 1, &v);
	if (rc)
		return rc;
	if (v != 1)
		return fail(c, "v", "not 1 (an unknown version)");
	rc = get_uint(c, top, "", "netuid", 65535, 0, &v);
	if (rc < 0)
		return rc;
	d->have_netuid = !rc;
	d->in.netuid = rc ? 0 : (uint16_t)v;
	rc = get_uint(c, top, "", "epoch_index", ENGY_SCORE_MAX_INT, 0,
		      &d->in.epoch_index);
	if (rc < 0)
		return rc;
	d->have_epoch = !rc;
	rc = get_str(c, top, "", "owner_hotkey", 0, &owner);
	if (rc < 0)
		return rc;
	if (!rc) {
		if (strlen(owner) >= sizeof(d->owner))
			return fail(c, "owner_hotkey", "not an SS58 address");
		strcpy(d->owner, owner);
		d->in.owner_hotkey = d->owner;
		d->have_owner = 1;
	}
	rc = parse_params(c, top, &d->params);
	if (!rc)
		rc = parse_models(c, top, pv, &d->in);
	if (!rc)
		rc = parse_rows(c, top, pv, &d->in);
	return rc;
}

int engy_score_parse(const char *text, size_t len, struct engy_score_doc **out,
		     char *why, size_t whylen)
{
	struct ctx c = { why, whylen };
	struct engy_score_doc *d;
	struct priv *pv;
	char jwhy[96];
	int rc;

	*out = NULL;
	if (why && whylen)
		why[0] = '\0';
	d = calloc(1, sizeof(*d));
	pv = calloc(1, sizeof(*pv));
	if (!d || !pv) {
		free(d);
		free(pv);
		return -ENOMEM;
	}
	d->priv = pv;
	d->in.size = sizeof(d->in);
	d->in.params = &d->params;
	rc = engy_sj_parse(text, len, &pv->dom, jwhy, sizeof(jwhy));
	if (rc == -EINVAL)
		engy_score_fail(why, whylen, rc, "aggregates: not JSON (%s)",
				jwhy);
	if (!rc)
		rc = pv->dom->type == SJ_OBJ
			     ? parse_top(&c, pv->dom, d, pv)
			     : fail(&c, "aggregates", "not an object");
	if (rc) {
		engy_score_doc_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

void engy_score_doc_free(struct engy_score_doc *d)
{
	struct priv *pv;
	size_t i;

	if (!d)
		return;
	pv = d->priv;
	for (i = 0; i < pv->n_rows; i++) {
		free((void *)pv->rows[i].ttft);
		free((void *)pv->rows[i].tpot);
	}
	free(pv->rows);
	free(pv->models);
	engy_sj_free(pv->dom);
	free(pv);
	free(d);
}
