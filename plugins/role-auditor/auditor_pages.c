/* SPDX-License-Identifier: MIT */
/*
 * The provider's pages, beside the provider API on the same listener:
 *
 *   GET /epochs        every closed epoch (the newest AUD_PAGE_EPOCHS)
 *                      and the one in flight: status, the signed
 *                      result's digest, signer and signature check, the
 *                      weight vector as a table and a bar chart, burn,
 *                      the aggregates and the command that recomputes it
 *   GET /epochs/{i}    one epoch, with its rows
 *   GET /miners[?epoch=i]  the newest (or that) closed epoch per (miner, model):
 *                      requests, tokens, 2xx rate, p99s against the
 *                      model's ceilings, verdicts by scheme, the gate,
 *                      score and weight; a sparkline of its weight over
 *                      the last epochs
 *
 * Server-rendered HTML with inline SVG: no script, no external asset.
 * Everything read from the store (labels are miner-chosen; hotkeys and
 * model names are validated but escaped all the same) goes through
 * engy_html_text().  Metadata only: nothing a buyer sent is in the store.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "auditor_int.h"
#include "epoch_sign.h"
#include "html.h"

#define AUD_PAGE_EPOCHS 48   /* epochs shown on /epochs */
#define AUD_PAGE_SCAN	512  /* indices looked at below the newest */
#define AUD_SPARK	12   /* epochs in a sparkline */
#define CLOSE_GRACE_MS	3000 /* as auditor_epoch.c */

enum { P_EPOCHS, P_EPOCH, P_MINERS };

struct pep { /* one closed epoch, parsed */
	struct engy_epoch_rec rec;
	cJSON *payload, *result, *agg;
	char check[96]; /* the signature check's outcome */
};

struct pageq {
	struct aud *a;
	struct engy_http_exchange *x;
	int what;
	int64_t index;
	bool has_index; /* /miners?epoch=i */
	bool closing;	/* copied on the loop thread */
	int64_t next_close;
	char host[128];
	int status;
	char *body;
	size_t len;
	/* gathered on the pool */
	struct pep *ep;
	size_t n_ep;
	struct engy_miner *miners;
	size_t n_miners;
};

static const char *label_of(const struct pageq *q, const char *hotkey)
{
	size_t i;

	for (i = 0; i < q->n_miners; i++)
		if (!strcmp(q->miners[i].hotkey, hotkey))
			return q->miners[i].label;
	return "";
}

static int64_t jint(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* ---- the pool: read the store --------------------------------------- */

static int load_epoch(struct pageq *q, int64_t index, int latest)
{
	struct aud *a = q->a;
	struct pep *p = &q->ep[q->n_ep];
	struct engy_epoch_verified ver = { 0 };
	char *payload = NULL, *agg = NULL, why[160];
	enum engy_epoch_reject r;
	int rc;

	memset(p, 0, sizeof(*p));
	rc = a->st->epoch_get(a->sti, index, latest, &p->rec, &payload, &agg);
	if (rc)
		return rc;
	p->payload = cJSON_Parse(payload);
	p->agg = cJSON_Parse(agg);
	p->result = cJSON_Parse(jstr(p->payload, "result_json"));
	if (!a->have_key) {
		snprintf(p->check, sizeof(p->check), "no master key here");
	} else {
		r = engy_epoch_payload_check(
			payload, strlen(payload), (uint16_t)a->c->netuid,
			a->hk.kp.pub, &ver, why, sizeof(why));
		if (r == ENGY_EPOCH_ACCEPT)
			snprintf(p->check, sizeof(p->check), "valid");
		else
			snprintf(p->check, sizeof(p->check), "INVALID (%s)",
				 engy_epoch_reject_name(r));
		engy_epoch_verified_free(&ver);
	}
	free(payload);
	free(agg);
	q->n_ep++;
	return 0;
}

/* The newest @want closed epochs from @top down (gaps skipped). */
static int load_epochs(struct pageq *q, int64_t top, size_t want)
{
	int64_t i;
	int rc;

	q->ep = calloc(want, sizeof(*q->ep));
	if (!q->ep)
		return -ENOMEM;
	rc = load_epoch(q, 0, 1);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	if (top >= 0 && q->ep[0].rec.epoch_index != top) {
		/* one epoch asked for: it, then the ones before it */
		cJSON_Delete(q->ep[0].payload);
		cJSON_Delete(q->ep[0].result);
		cJSON_Delete(q->ep[0].agg);
		q->n_ep = 0;
		rc = load_epoch(q, top, 0);
		if (rc)
			return rc;
	}
	for (i = q->ep[0].rec.epoch_index - 1;
	     i >= 0 && q->n_ep < want &&
	     i >= q->ep[0].rec.epoch_index - AUD_PAGE_SCAN;
	     i--) {
		rc = load_epoch(q, i, 0);
		if (rc && rc != -ENOENT)
			return rc;
	}
	return 0;
}

static void pep_free(struct pageq *q)
{
	size_t i;

	for (i = 0; i < q->n_ep; i++) {
		cJSON_Delete(q->ep[i].payload);
		cJSON_Delete(q->ep[i].result);
		cJSON_Delete(q->ep[i].agg);
	}
	free(q->ep);
	free(q->miners);
}

/* ---- rendering ------------------------------------------------------- */

static void head(struct engy_html *h, const char *title)
{
	engy_html_raw(
		h,
		"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		"<meta name=\"viewport\" content=\"width=device-width\"><title>");
	engy_html_text(h, title);
	engy_html_raw(
		h,
		"</title><style>"
		"body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}"
		"table{border-collapse:collapse;margin:.5em 0 1.5em}"
		"th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left}"
		"td.n{text-align:right;font-variant-numeric:tabular-nums}"
		"code{font-size:12px;word-break:break-all}.bad{color:#b00;font-weight:bold}"
		".ok{color:#070}.burn{color:#a60;font-weight:bold}nav a{margin-right:1em}"
		"</style></head><body><nav><a href=\"/epochs\">epochs</a>"
		"<a href=\"/miners\">miners</a></nav>\n<h1>");
	engy_html_text(h, title);
	engy_html_raw(h, "</h1>\n");
}

/* Horizontal bars, one per weight entry: the u16 over 65535. */
static void weight_chart(struct engy_html *h, const struct pageq *q,
			 const cJSON *weights, bool burn)
{
	const cJSON *w;
	int n = cJSON_GetArraySize(weights), i = 0;

	if (n <= 0)
		return;
	engy_html_printf(
		h,
		"<svg class=\"weights\" role=\"img\" width=\"520\" height=\"%d\" "
		"viewBox=\"0 0 520 %d\" xmlns=\"http://www.w3.org/2000/svg\">"
		"<title>weights</title>",
		22 * n + 4, 22 * n + 4);
	cJSON_ArrayForEach(w, weights)
	{
		const char *hk = cJSON_GetStringValue(cJSON_GetArrayItem(w, 0));
		double u = cJSON_GetNumberValue(cJSON_GetArrayItem(w, 1));
		const char *label = hk ? label_of(q, hk) : "";

		if (!hk || u != u)
			continue;
		engy_html_printf(h, "<text x=\"0\" y=\"%d\" font-size=\"12\">",
				 22 * i + 16);
		engy_html_text(h, burn ? "burn (owner)" : *label ? label : hk);
		engy_html_printf(
			h,
			"</text><rect x=\"170\" y=\"%d\" height=\"16\" width=\"%.1f\" "
			"fill=\"%s\"/><text x=\"%.1f\" y=\"%d\" font-size=\"12\">%.0f</text>",
			22 * i + 4, 1 + 280.0 * u / 65535,
			burn ? "#c80" : "#37a", 176 + 280.0 * u / 65535,
			22 * i + 16, u);
		i++;
	}
	engy_html_raw(h, "</svg>\n");
}

static void epoch_block(struct engy_html *h, const struct pageq *q,
			const struct pep *p, bool one)
{
	const cJSON *weights =
		cJSON_GetObjectItemCaseSensitive(p->result, "weights");
	const cJSON *w, *row;
	bool burn = cJSON_IsTrue(
		cJSON_GetObjectItemCaseSensitive(p->result, "burn"));
	int64_t i = p->rec.epoch_index;

	engy_html_printf(h,
			 "<section class=\"epoch\" id=\"e%" PRId64 "\"><h2>"
			 "<a href=\"/epochs/%" PRId64 "\">epoch %" PRId64
			 "</a></h2>\n"
			 "<table class=\"facts\">",
			 i, i, i);
	engy_html_raw(h,
		      "<tr><th>status</th><td class=\"status\">signed</td></tr>"
		      "<tr><th>digest</th><td><code class=\"digest\">");
	engy_html_text(h, p->rec.digest);
	engy_html_raw(
		h,
		"</code></td></tr><tr><th>signer</th><td><code class=\"signer\">");
	engy_html_text(h, jstr(p->payload, "signed_hotkey"));
	engy_html_printf(
		h,
		"</code></td></tr><tr><th>signature</th><td class=\"sig %s\">",
		strcmp(p->check, "valid") ? "bad" : "ok");
	engy_html_text(h, p->check);
	engy_html_printf(
		h,
		"</td></tr><tr><th>slice</th><td>%" PRId64 " .. %" PRId64
		" ms</td></tr><tr><th>total score</th><td class=\"n\">%" PRId64
		" µUSD</td></tr>",
		p->rec.start_ms, p->rec.end_ms, jint(p->result, "total_score"));
	if (burn)
		engy_html_raw(
			h,
			"<tr><th>burn</th><td class=\"burn\">burn: nothing scored, "
			"65535 to the owner hotkey</td></tr>");
	engy_html_raw(
		h,
		"</table>\n<table class=\"weights\"><thead><tr><th>hotkey</th>"
		"<th>label</th><th>weight (u16)</th><th>share</th></tr></thead><tbody>");
	cJSON_ArrayForEach(w, weights)
	{
		const char *hk = cJSON_GetStringValue(cJSON_GetArrayItem(w, 0));
		double u = cJSON_GetNumberValue(cJSON_GetArrayItem(w, 1));

		engy_html_raw(h, "<tr><td><code>");
		engy_html_text(h, hk);
		engy_html_raw(h, "</code></td><td>");
		engy_html_text(h, burn ? "burn (owner)"
				  : hk ? label_of(q, hk)
				       : "");
		engy_html_printf(
			h,
			"</td><td class=\"n w\">%.0f</td><td class=\"n\">%.2f %%</td></tr>",
			u, 100.0 * u / 65535);
	}
	engy_html_raw(h, "</tbody></table>\n");
	weight_chart(h, q, weights, burn);
	if (one) {
		engy_html_raw(
			h,
			"<h3>rows</h3><table class=\"rows\"><thead><tr><th>uid</th>"
			"<th>hotkey</th><th>label</th><th>model</th><th>counted</th>"
			"<th>tokens</th><th>score (µUSD)</th><th>gate</th></tr></thead><tbody>");
		cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(
						p->result, "rows"))
		{
			const char *gate = jstr(row, "gate_reason");

			engy_html_printf(h,
					 "<tr><td class=\"n\">%" PRId64
					 "</td><td><code>",
					 jint(row, "uid"));
			engy_html_text(h, jstr(row, "hotkey"));
			engy_html_raw(h, "</code></td><td>");
			engy_html_text(h, label_of(q, jstr(row, "hotkey")));
			engy_html_raw(h, "</td><td>");
			engy_html_text(h, jstr(row, "model"));
			engy_html_printf(h,
					 "</td><td class=\"n\">%" PRId64
					 "</td><td class=\"n\">%" PRId64
					 "</td><td class=\"n\">%" PRId64
					 "</td><td class=\"%s\">",
					 jint(row, "counted"),
					 jint(row, "tokens"),
					 jint(row, "score"),
					 strcmp(gate, "ok") ? "bad" : "ok");
			engy_html_text(h, gate);
			engy_html_raw(h, "</td></tr>");
		}
		engy_html_raw(h, "</tbody></table>\n");
	}
	engy_html_printf(h,
			 "<p>Public documents: <a href=\"%s/epoch/%" PRId64
			 "\">signed payload</a>, "
			 "<a href=\"%s/epoch/%" PRId64
			 "/aggregates\">aggregates</a>. Recompute:</p>"
			 "<pre class=\"cmd\">",
			 q->a->c->api_prefix, i, q->a->c->api_prefix, i);
	engy_html_raw(h, "curl -s http://");
	engy_html_text(h, q->host);
	engy_html_text(h, q->a->c->api_prefix);
	engy_html_printf(h,
			 "/epoch/%" PRId64
			 "/aggregates &gt; agg.json\ncurl -s http://",
			 i);
	engy_html_text(h, q->host);
	engy_html_text(h, q->a->c->api_prefix);
	engy_html_printf(
		h,
		"/epoch/%" PRId64 " &gt; payload.json\n"
		"engyctl epoch score --aggregates agg.json --payload payload.json</pre></section>\n",
		i);
}

static void render_epochs(struct pageq *q, struct engy_html *h)
{
	struct aud *a = q->a;
	int64_t s = a->c->epoch_s * 1000, now = aud_now_ms(), cur = now / s;
	size_t i;

	head(h, q->what == P_EPOCH ? "epoch" : "epochs");
	engy_html_printf(
		h,
		"<table class=\"inflight\"><thead><tr><th>epoch</th><th>status</th>"
		"<th>start (ms)</th><th>end (ms)</th></tr></thead><tbody>"
		"<tr><td class=\"n\">%" PRId64
		"</td><td class=\"status\">open</td>"
		"<td class=\"n\">%" PRId64 "</td><td class=\"n\">%" PRId64
		"</td></tr>",
		cur, cur * s, (cur + 1) * s);
	if (a->have_key && q->next_close < cur &&
	    (q->n_ep == 0 || q->ep[0].rec.epoch_index < cur - 1))
		engy_html_printf(h,
				 "<tr><td class=\"n\">%" PRId64
				 "</td><td class=\"status\">%s</td>"
				 "<td class=\"n\">%" PRId64
				 "</td><td class=\"n\">%" PRId64 "</td></tr>",
				 cur - 1,
				 q->closing ? "closing"
					    : "closed, not yet signed",
				 (cur - 1) * s, cur * s);
	engy_html_raw(h, "</tbody></table>\n");
	if (!q->n_ep)
		engy_html_raw(h,
			      "<p class=\"none\">No closed epoch yet.</p>\n");
	for (i = 0; i < (q->what == P_EPOCH && q->n_ep ? 1 : q->n_ep); i++)
		epoch_block(h, q, &q->ep[i], q->what == P_EPOCH);
	engy_html_raw(h, "</body></html>\n");
}

/* Nearest-rank p99 of a [[ms, count], ...] histogram; 0 when empty. */
static int64_t hist_p99(const cJSON *hist)
{
	const cJSON *b;
	int64_t n = 0, rank, seen = 0;

	cJSON_ArrayForEach(b, hist) n +=
		(int64_t)cJSON_GetNumberValue(cJSON_GetArrayItem(b, 1));
	if (n <= 0)
		return 0;
	rank = (99 * n + 99) / 100;
	cJSON_ArrayForEach(b, hist)
	{
		seen += (int64_t)cJSON_GetNumberValue(cJSON_GetArrayItem(b, 1));
		if (seen >= rank)
			return (int64_t)cJSON_GetNumberValue(
				cJSON_GetArrayItem(b, 0));
	}
	return 0;
}

static const cJSON *find_by(const cJSON *arr, const char *k1, const char *v1,
			    const char *k2, const char *v2)
{
	const cJSON *o;

	cJSON_ArrayForEach(o,
			   arr) if (!strcmp(jstr(o, k1), v1) &&
				    (!k2 || !strcmp(jstr(o, k2), v2))) return o;
	return NULL;
}

static double weight_in(const struct pep *p, const char *hotkey)
{
	const cJSON *w;

	cJSON_ArrayForEach(
		w, cJSON_GetObjectItemCaseSensitive(p->result, "weights"))
	{
		const char *hk = cJSON_GetStringValue(cJSON_GetArrayItem(w, 0));

		if (hk && !strcmp(hk, hotkey))
			return cJSON_GetNumberValue(cJSON_GetArrayItem(w, 1));
	}
	return 0;
}

/* The miner's weight over the last epochs, oldest left. */
static void sparkline(struct engy_html *h, const struct pageq *q,
		      const char *hotkey)
{
	size_t n = q->n_ep < AUD_SPARK ? q->n_ep : AUD_SPARK, i;

	engy_html_printf(
		h,
		"<svg class=\"spark\" role=\"img\" width=\"%zu\" height=\"24\" "
		"viewBox=\"0 0 %zu 24\" xmlns=\"http://www.w3.org/2000/svg\">"
		"<title>weight over the last %zu epochs</title>"
		"<rect x=\"0\" y=\"0\" width=\"%zu\" height=\"24\" fill=\"#f4f4f4\"/>",
		8 * n + 2, 8 * n + 2, n, 8 * n + 2);
	for (i = 0; i < n; i++) {
		double u = weight_in(&q->ep[n - 1 - i], hotkey);
		double hh = 1 + 21.0 * u / 65535;

		engy_html_printf(
			h,
			"<rect x=\"%zu\" y=\"%.1f\" width=\"6\" height=\"%.1f\" "
			"fill=\"%s\"><title>epoch %" PRId64
			": %.0f</title></rect>",
			8 * i + 2, 23 - hh, hh, u > 0 ? "#37a" : "#b00",
			q->ep[n - 1 - i].rec.epoch_index, u);
	}
	engy_html_raw(h, "</svg>");
}

struct vcount {
	char miner[64], model[128], scheme[32];
	uint64_t n[3]; /* pass, cheat, unproven */
};

static void render_miners(struct pageq *q, struct engy_html *h,
			  const struct vcount *vc, size_t n_vc)
{
	const struct pep *p = q->n_ep ? &q->ep[0] : NULL;
	const cJSON *row,
		*models = p ? cJSON_GetObjectItemCaseSensitive(p->agg, "models")
			    : NULL;
	size_t k;

	head(h, "miners");
	if (!p) {
		engy_html_raw(
			h,
			"<p class=\"none\">No closed epoch yet.</p></body></html>\n");
		return;
	}
	engy_html_printf(
		h,
		"<p>Epoch <a href=\"/epochs/%" PRId64 "\">%" PRId64
		"</a>%s: who served "
		"each model, and how.</p>\n"
		"<table class=\"miners\"><thead><tr><th>label</th><th>hotkey</th><th>uid</th>"
		"<th>model</th><th>counted</th><th>tokens</th><th>2xx rate</th>"
		"<th>TTFT p99 / ceiling (ms)</th><th>TPOT p99 / ceiling (ms)</th>"
		"<th>verdicts (pass/cheat/unproven)</th><th>gate</th><th>score (µUSD)</th>"
		"<th>weight</th><th>last epochs</th></tr></thead><tbody>\n",
		p->rec.epoch_index, p->rec.epoch_index,
		q->has_index ? "" : ", the newest closed one");
	cJSON_ArrayForEach(row,
			   cJSON_GetObjectItemCaseSensitive(p->agg, "rows"))
	{
		const char *hk = jstr(row, "hotkey"),
			   *model = jstr(row, "model");
		const cJSON *st =
			cJSON_GetObjectItemCaseSensitive(row, "status");
		const cJSON *m = find_by(models, "model", model, NULL, NULL);
		const cJSON *res = find_by(
			cJSON_GetObjectItemCaseSensitive(p->result, "rows"),
			"hotkey", hk, "model", model);
		int64_t n2 = jint(st, "2xx"),
			den = n2 + jint(st, "502") + jint(st, "504");
		int64_t tt = hist_p99(
			cJSON_GetObjectItemCaseSensitive(row, "ttft_ms"));
		int64_t tp = hist_p99(
			cJSON_GetObjectItemCaseSensitive(row, "tpot_ms"));
		int64_t ct = jint(m, "qual_ttft_p99_ms"),
			cp = jint(m, "qual_tpot_p99_ms");
		const char *gate = res ? jstr(res, "gate_reason") : "?";
		bool any = false;

		engy_html_raw(h, "<tr><td class=\"label\">");
		engy_html_text(h, label_of(q, hk));
		engy_html_raw(h, "</td><td><code>");
		engy_html_text(h, hk);
		engy_html_printf(
			h, "</code></td><td class=\"n\">%" PRId64 "</td><td>",
			jint(row, "uid"));
		engy_html_text(h, model);
		engy_html_printf(h,
				 "</td><td class=\"n counted\">%" PRId64
				 "</td><td class=\"n tokens\">%" PRId64
				 "</td><td class=\"n\">",
				 jint(row, "counted"), jint(row, "tokens"));
		if (den)
			engy_html_printf(h, "%.2f %% (%" PRId64 "/%" PRId64 ")",
					 100.0 * n2 / den, n2, den);
		else
			engy_html_raw(h, "-");
		engy_html_printf(h,
				 "</td><td class=\"n %s\">%" PRId64
				 " / %" PRId64 "</td>"
				 "<td class=\"n %s\">%" PRId64 " / %" PRId64
				 "</td><td class=\"verdicts\">",
				 tt > ct ? "bad" : "", tt, ct,
				 tp > cp ? "bad" : "", tp, cp);
		for (k = 0; k < n_vc; k++) {
			if (strcmp(vc[k].miner, hk) ||
			    strcmp(vc[k].model, model))
				continue;
			engy_html_text(h, vc[k].scheme);
			engy_html_printf(
				h, " %" PRIu64 "/%" PRIu64 "/%" PRIu64 "<br>",
				vc[k].n[0], vc[k].n[1], vc[k].n[2]);
			any = true;
		}
		if (!any)
			engy_html_raw(h, "none");
		engy_html_printf(h, "</td><td class=\"gate %s\">",
				 strcmp(gate, "ok") ? "bad" : "ok");
		engy_html_text(h, gate);
		engy_html_printf(h,
				 "</td><td class=\"n score\">%" PRId64
				 "</td><td class=\"n weight\">%.0f</td><td>",
				 res ? jint(res, "score") : 0,
				 weight_in(p, hk));
		sparkline(h, q, hk);
		engy_html_raw(h, "</td></tr>\n");
	}
	engy_html_raw(
		h,
		"</tbody></table>\n<p>Verdicts are counted by scheme over the epoch's "
		"slice, probes included; the cheat gate sums pass and cheat over a miner's rows.</p>"
		"</body></html>\n");
}

/* Verdicts of the epoch's slice by (miner, model, scheme). */
static int count_verdicts(struct pageq *q, struct vcount **out, size_t *n_out)
{
	struct aud *a = q->a;
	struct engy_verdict_query vq = { .size = sizeof(vq),
					 .limit = 10000,
					 .since_ms = q->ep[0].rec.start_ms,
					 .until_ms = q->ep[0].rec.end_ms };
	struct vcount *vc = NULL, *t;
	struct engy_verdict *v;
	size_t n, i, k, nv = 0;
	int rc;

	for (;;) {
		rc = a->st->verdict_list(a->sti, &vq, &v, &n);
		if (rc)
			break;
		for (i = 0; i < n; i++) {
			for (k = 0; k < nv; k++)
				if (!strcmp(vc[k].miner, v[i].miner) &&
				    !strcmp(vc[k].model, v[i].model) &&
				    !strcmp(vc[k].scheme, v[i].scheme))
					break;
			if (k == nv) {
				if (nv >= 4096)
					continue;
				t = realloc(vc, (nv + 1) * sizeof(*vc));
				if (!t) {
					rc = -ENOMEM;
					break;
				}
				vc = t;
				memset(&vc[nv], 0, sizeof(*vc));
				snprintf(vc[nv].miner, sizeof(vc[nv].miner),
					 "%s", v[i].miner);
				snprintf(vc[nv].model, sizeof(vc[nv].model),
					 "%s", v[i].model);
				snprintf(vc[nv].scheme, sizeof(vc[nv].scheme),
					 "%s", v[i].scheme);
				nv++;
			}
			vc[k].n[v[i].verdict == ENGY_VERDICT_PASS    ? 0
				: v[i].verdict == ENGY_VERDICT_CHEAT ? 1
								     : 2]++;
		}
		if (n)
			vq.after_id = v[n - 1].id;
		free(v);
		if (rc || !n)
			break;
	}
	*out = vc;
	*n_out = nv;
	return rc;
}

static void page_fn(void *arg)
{
	struct pageq *q = arg;
	struct aud *a = q->a;
	struct engy_html h = { 0 };
	struct vcount *vc = NULL;
	size_t n_vc = 0;
	int rc;

	rc = a->st->miner_list(a->sti, &q->miners, &q->n_miners);
	if (!rc)
		rc = load_epochs(q, q->has_index ? q->index : -1,
				 q->what == P_EPOCH    ? 1 + AUD_SPARK
				 : q->what == P_MINERS ? AUD_SPARK
						       : AUD_PAGE_EPOCHS);
	if (!rc && q->has_index &&
	    (!q->n_ep || q->ep[0].rec.epoch_index != q->index))
		rc = -ENOENT;
	if (!rc && q->what == P_MINERS && q->n_ep)
		rc = count_verdicts(q, &vc, &n_vc);
	if (rc == -ENOENT) {
		q->status = 404;
		head(&h, "no such closed epoch");
		engy_html_raw(&h, "</body></html>\n");
	} else if (rc) {
		q->status = 503;
		head(&h, "the store is unavailable");
		engy_html_raw(&h, "</body></html>\n");
	} else {
		q->status = 200;
		if (q->what == P_MINERS)
			render_miners(q, &h, vc, n_vc);
		else
			render_epochs(q, &h);
	}
	free(vc);
	q->body = engy_html_take(&h, &q->len);
}

static void page_done(void *arg, int prc)
{
	struct pageq *q = arg;
	struct aud *a = q->a;
	const char *hdr[] = {
		"Cache-Control",
		"no-store",
		"Content-Security-Policy",
		"default-src 'none'; style-src 'unsafe-inline'; img-src 'self'",
		"X-Content-Type-Options",
		"nosniff",
		NULL
	};

	a->inflight--;
	if (prc < 0 || !q->body)
		a->t->http_reply(a->ti, q->x, 500, "text/plain", NULL,
				 "error\n", 6);
	else
		a->t->http_reply(a->ti, q->x, q->status,
				 "text/html; charset=utf-8", hdr, q->body,
				 q->len);
	free(q->body);
	pep_free(q);
	free(q);
}

/* A decimal index of at most 15 digits, no leading zero; -1 otherwise. */
static int64_t index_of(const char *p)
{
	size_t n = strspn(p, "0123456789");
	int64_t v = 0;

	if (!n || n != strlen(p) || n > 15 || (p[0] == '0' && n > 1))
		return -1;
	for (; *p; p++)
		v = v * 10 + (*p - '0');
	return v;
}

static int page_request(void *arg, struct engy_http_exchange *x,
			const struct engy_http_request *r)
{
	struct aud *a = arg;
	const char *p = r->path, *host = r->header(r, "Host");
	struct pageq *q;

	if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD"))
		return a->t->http_reply(a->ti, x, 405, "text/plain", NULL,
					"use GET\n", 8),
		       0;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->a = a;
	q->x = x;
	if (!strcmp(p, "/epochs") || !strcmp(p, "/epochs/")) {
		q->what = P_EPOCHS;
	} else if (!strcmp(p, "/miners") || !strcmp(p, "/miners/")) {
		q->what = P_MINERS;
		if (r->query && !strncmp(r->query, "epoch=", 6)) {
			q->index = index_of(r->query + 6);
			q->has_index = true;
			if (q->index < 0) {
				free(q);
				return -ENOENT;
			}
		}
	} else if (!strncmp(p, "/epochs/", 8) && index_of(p + 8) >= 0) {
		q->what = P_EPOCH;
		q->index = index_of(p + 8);
		q->has_index = true;
	} else {
		free(q);
		return -ENOENT;
	}
	/* Only for the command line shown; escaped where it is printed. */
	snprintf(q->host, sizeof(q->host), "%s",
		 host && *host ? host : "PROVIDER");
	q->closing = a->closing;
	q->next_close = a->next_close;
	a->inflight++;
	if (a->h->work(a->h, page_fn, page_done, q) < 0) {
		a->inflight--;
		free(q);
		return -ESHUTDOWN;
	}
	return 0;
}

static const struct engy_http_handler page_h = {
	.size = sizeof(page_h),
	.on_request = page_request,
};

int aud_pages_init(struct aud *a)
{
	static const char *const routes[] = { "/epochs", "/miners" };
	size_t i;
	int rc;

	for (i = 0; i < 2; i++) {
		rc = a->t->http_route(a->ti, routes[i], &page_h, a);
		if (rc) {
			aud_log(a, ENGY_LOG_ERR,
				"event=pages_route_failed route=%s error=\"%s\"",
				routes[i], strerror(-rc));
			return rc;
		}
	}
	aud_log(a, ENGY_LOG_NOTICE,
		"event=provider_pages routes=/epochs,/miners");
	return 0;
}
