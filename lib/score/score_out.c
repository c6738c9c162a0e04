// SPDX-License-Identifier: MIT
/*
 * Epoch scoring: the canonical texts (specs/scoring.md §5, §6).  Fixed key
 * order, no whitespace, integers in plain decimal, names that were checked
 * to need no escaping: the same input gives the same bytes everywhere.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "score_int.h"

static void sbuf_grow(struct sbuf *b, size_t more)
{
	if (!b->err && !engy_grow_by(&b->p, &b->cap, b->len + 1, more, 1))
		b->err = -ENOMEM;
}

void engy_score_sbuf_put(struct sbuf *b, const char *s)
{
	size_t n = strlen(s);

	sbuf_grow(b, n);
	if (b->err)
		return;
	memcpy(b->p + b->len, s, n + 1);
	b->len += n;
}

void engy_score_sbuf_putu(struct sbuf *b, uint64_t v)
{
	char d[24], *e = d + sizeof(d) - 1;

	*e = '\0';
	do {
		*--e = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	engy_score_sbuf_put(b, e);
}

void engy_score_sbuf_putq(struct sbuf *b, const char *s)
{
	engy_score_sbuf_put(b, "\"");
	engy_score_sbuf_put(b, s);
	engy_score_sbuf_put(b, "\"");
}

/* ,"key": then the caller's value (no comma before the first member). */
static void key(struct sbuf *b, const char *k, int first)
{
	engy_score_sbuf_put(b, first ? "\"" : ",\"");
	engy_score_sbuf_put(b, k);
	engy_score_sbuf_put(b, "\":");
}

static void ukey(struct sbuf *b, const char *k, uint64_t v)
{
	key(b, k, 0);
	engy_score_sbuf_putu(b, v);
}

int engy_score_render_result(const struct engy_epoch_input *in,
			     const size_t *order, struct engy_epoch_result *out)
{
	struct sbuf b = { 0 };
	size_t i;

	engy_score_sbuf_put(&b, "{");
	key(&b, "epoch_index", 1);
	engy_score_sbuf_putu(&b, in->epoch_index);
	ukey(&b, "netuid", in->netuid);
	key(&b, "weights", 0);
	engy_score_sbuf_put(&b, "[");
	for (i = 0; i < out->n_weights; i++) {
		engy_score_sbuf_put(&b, i ? ",[" : "[");
		engy_score_sbuf_putq(&b, out->weights[i].hotkey);
		engy_score_sbuf_put(&b, ",");
		engy_score_sbuf_putu(&b, out->weights[i].weight);
		engy_score_sbuf_put(&b, "]");
	}
	engy_score_sbuf_put(&b, "]");
	key(&b, "rules", 0);
	engy_score_sbuf_putq(&b, ENGY_SCORE_RULES);
	key(&b, "burn", 0);
	engy_score_sbuf_put(&b, out->burn ? "true" : "false");
	ukey(&b, "total_score", out->total_score);
	key(&b, "rows", 0);
	engy_score_sbuf_put(&b, "[");
	for (i = 0; i < in->n_rows; i++) {
		const struct engy_epoch_row *r = &in->rows[order[i]];
		const struct engy_epoch_row_result *rr = &out->rows[order[i]];

		engy_score_sbuf_put(&b, i ? ",{" : "{");
		key(&b, "hotkey", 1);
		engy_score_sbuf_putq(&b, r->hotkey);
		ukey(&b, "uid", r->uid);
		key(&b, "model", 0);
		engy_score_sbuf_putq(&b, r->model);
		ukey(&b, "counted", r->counted);
		ukey(&b, "tokens", r->tokens);
		ukey(&b, "score", rr->score);
		key(&b, "gate_reason", 0);
		engy_score_sbuf_putq(&b, engy_gate_name(rr->gate));
		engy_score_sbuf_put(&b, "}");
	}
	engy_score_sbuf_put(&b, "]}");
	if (b.err) {
		free(b.p);
		return b.err;
	}
	out->result_json = b.p;
	out->result_len = b.len;
	return 0;
}

static void hist(struct sbuf *b, const char *k,
		 const struct engy_score_bucket *h, size_t n)
{
	size_t j;

	key(b, k, 0);
	engy_score_sbuf_put(b, "[");
	for (j = 0; j < n; j++) {
		engy_score_sbuf_put(b, j ? ",[" : "[");
		engy_score_sbuf_putu(b, h[j].ms);
		engy_score_sbuf_put(b, ",");
		engy_score_sbuf_putu(b, h[j].count);
		engy_score_sbuf_put(b, "]");
	}
	engy_score_sbuf_put(b, "]");
}

static void agg_row(struct sbuf *b, const struct engy_epoch_row *r)
{
	engy_score_sbuf_put(b, "{");
	key(b, "hotkey", 1);
	engy_score_sbuf_putq(b, r->hotkey);
	ukey(b, "uid", r->uid);
	key(b, "model", 0);
	engy_score_sbuf_putq(b, r->model);
	ukey(b, "counted", r->counted);
	ukey(b, "tokens", r->tokens);
	key(b, "status", 0);
	engy_score_sbuf_put(b, "{");
	key(b, "2xx", 1);
	engy_score_sbuf_putu(b, r->n_2xx);
	ukey(b, "499", r->n_499);
	ukey(b, "502", r->n_502);
	ukey(b, "504", r->n_504);
	engy_score_sbuf_put(b, "}");
	hist(b, "ttft_ms", r->ttft, r->n_ttft);
	hist(b, "tpot_ms", r->tpot, r->n_tpot);
	key(b, "verdicts", 0);
	engy_score_sbuf_put(b, "{");
	key(b, "pass", 1);
	engy_score_sbuf_putu(b, r->v_pass);
	ukey(b, "cheat", r->v_cheat);
	ukey(b, "unproven", r->v_unproven);
	engy_score_sbuf_put(b, "}}");
}

static int cmp_model(const void *a, const void *b)
{
	const struct engy_epoch_model *const *x = a, *const *y = b;

	return strcmp((*x)->model, (*y)->model);
}

int engy_score_aggregates_json(const struct engy_epoch_input *in,
			       const struct engy_epoch_params *p, char **json,
			       char *why, size_t whylen)
{
	const struct engy_epoch_model **m = NULL;
	struct engy_epoch_params def;
	struct sbuf b = { 0 };
	size_t *order = NULL, i;
	int rc;

	*json = NULL;
	rc = engy_score_check(in, p, why, whylen);
	if (rc)
		return rc;
	p = engy_score_params(in, p, &def);
	order = engy_score_row_order(in);
	m = malloc((in->n_models ? in->n_models : 1) * sizeof(*m));
	if (!order || !m) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < in->n_models; i++)
		m[i] = &in->models[i];
	qsort(m, in->n_models, sizeof(*m), cmp_model);

	engy_score_sbuf_put(&b, "{");
	key(&b, "v", 1);
	engy_score_sbuf_put(&b, "1");
	ukey(&b, "netuid", in->netuid);
	ukey(&b, "epoch_index", in->epoch_index);
	key(&b, "owner_hotkey", 0);
	engy_score_sbuf_putq(&b, in->owner_hotkey);
	key(&b, "params", 0);
	engy_score_sbuf_put(&b, "{");
	key(&b, "acceptance_min_bp", 1);
	engy_score_sbuf_putu(&b, p->acceptance_min_bp);
	ukey(&b, "acceptance_min_samples", p->acceptance_min_samples);
	ukey(&b, "ttft_min_samples", p->ttft_min_samples);
	ukey(&b, "tpot_min_samples", p->tpot_min_samples);
	ukey(&b, "cheat_max_bp", p->cheat_max_bp);
	ukey(&b, "cheat_min_samples", p->cheat_min_samples);
	engy_score_sbuf_put(&b, "}");
	key(&b, "models", 0);
	engy_score_sbuf_put(&b, "[");
	for (i = 0; i < in->n_models; i++) {
		engy_score_sbuf_put(&b, i ? ",{" : "{");
		key(&b, "model", 1);
		engy_score_sbuf_putq(&b, m[i]->model);
		ukey(&b, "score_rate", m[i]->score_rate);
		ukey(&b, "qual_ttft_p99_ms", m[i]->qual_ttft_p99_ms);
		ukey(&b, "qual_tpot_p99_ms", m[i]->qual_tpot_p99_ms);
		engy_score_sbuf_put(&b, "}");
	}
	engy_score_sbuf_put(&b, "]");
	key(&b, "rows", 0);
	engy_score_sbuf_put(&b, "[");
	for (i = 0; i < in->n_rows; i++) {
		if (i)
			engy_score_sbuf_put(&b, ",");
		agg_row(&b, &in->rows[order[i]]);
	}
	engy_score_sbuf_put(&b, "]}");
	rc = b.err;
	if (!rc)
		*json = b.p;
	else
		free(b.p);
out:
	free(order);
	free(m);
	return rc;
}
