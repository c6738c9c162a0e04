/* SPDX-License-Identifier: MIT */
/* The store kind's input rules, shared by every store plugin. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "ss58.h"
#include "storecheck.h"

/* A byte a stored text may hold: no control character, no DEL. */
static inline bool text_byte_ok(unsigned char c)
{
	return c >= 0x20 && c != 0x7f;
}

bool engy_store_text_ok(const char *str, size_t min, size_t max)
{
	size_t n;

	if (!str)
		return false;
	for (n = 0; str[n]; n++)
		if (!text_byte_ok((unsigned char)str[n]) || n >= max)
			return false;
	return n >= min;
}

bool engy_store_fixed_ok(const char *str, size_t cap)
{
	size_t n;

	/* engy_store_text_ok(str, 0, cap - 1) within @cap bytes, one pass */
	for (n = 0; n < cap; n++) {
		unsigned char c = (unsigned char)str[n];

		if (!c)
			return true;
		if (!text_byte_ok(c))
			return false;
	}
	return false;
}

bool engy_store_name_ok(const char *str, size_t max)
{
	size_t n;

	if (!str || !*str)
		return false;
	for (n = 0; str[n]; n++)
		if (n >= max || !(strchr("._:/-", str[n]) ||
				  (str[n] >= '0' && str[n] <= '9') ||
				  (str[n] >= 'a' && str[n] <= 'z') ||
				  (str[n] >= 'A' && str[n] <= 'Z')))
			return false;
	return true;
}

static bool rate_ok(int64_t r)
{
	return r >= 0 && r <= ENGY_STORE_RATE_MAX;
}

const char *engy_store_model_bad(const struct engy_model *m)
{
	if (!m)
		return "model";
	if (!engy_store_fixed_ok(m->name, sizeof(m->name)) ||
	    !engy_store_name_ok(m->name, 127))
		return "name";
	if (m->status > ENGY_MODEL_DISABLED)
		return "status";
	if (!m->max_input_tokens || !m->max_output_tokens || !m->max_request_s)
		return "limits";
	if (!m->toploc_topk || m->toploc_v > m->toploc_topk)
		return "toploc";
	if (m->toploc_p_ppm > 1000000)
		return "toploc_p_ppm";
	/* specs/gemm-audit.md §6's ranges; 0 = the verifier's own */
	if (m->gemm_layers > 65536 || m->gemm_tokens > 4096 ||
	    (uint64_t)m->gemm_layers * m->gemm_tokens > 4096 ||
	    m->gemm_projections > 64 || m->gemm_spots > 4096)
		return "gemm_sizes";
	if ((m->gemm_z_milli &&
	     (m->gemm_z_milli < 1000 || m->gemm_z_milli > 1000000)) ||
	    (m->gemm_c_el_milli &&
	     (m->gemm_c_el_milli < 1000 || m->gemm_c_el_milli > 1000000)))
		return "gemm_tolerance";
	if (m->gemm_rate_ppm > 1000000)
		return "gemm_rate_ppm";
	if (m->gemm_pad)
		return "gemm_pad";
	if (!rate_ok(m->score_rate))
		return "score_rate";
	if (!rate_ok(m->price.input) || !rate_ok(m->price.cached_input) ||
	    !rate_ok(m->price.output))
		return "price";
	return NULL;
}

const char *engy_store_root_bad(const struct engy_model_root *r)
{
	static const uint8_t zero[ENGY_STORE_HASH_BYTES];

	if (!r || memcmp(r->root, zero, sizeof(zero)) == 0)
		return "root";
	if (!engy_store_fixed_ok(r->model, sizeof(r->model)) ||
	    !engy_store_name_ok(r->model, 127))
		return "model";
	if (!engy_store_fixed_ok(r->quant, sizeof(r->quant)) ||
	    !engy_store_fixed_ok(r->arch, sizeof(r->arch)))
		return "quant";
	return NULL;
}

const char *engy_store_miner_bad(const struct engy_miner *m)
{
	if (!m || !engy_store_fixed_ok(m->hotkey, sizeof(m->hotkey)) ||
	    engy_ss58_decode(m->hotkey, NULL, NULL) != 0)
		return "hotkey";
	if (!engy_store_fixed_ok(m->label, sizeof(m->label)))
		return "label";
	if (m->status > ENGY_MINER_DISABLED || m->first_party > 1)
		return "status";
	return NULL;
}

const char *engy_store_row_bad(const struct engy_request_row *r)
{
	if (r->time_ms <= 0)
		return "time_ms";
	if (r->status < 100 || r->status > 599)
		return "status";
	if (r->cached_tokens > r->prompt_tokens)
		return "cached_tokens";
	if (r->cost_micro < 0 || r->cost_micro > ENGY_STORE_MONEY_MAX)
		return "cost_micro";
	if (r->is_probe > 1)
		return "is_probe";
	if (r->key_id < 0 || r->account_id < 0)
		return "key_id";
	if (!engy_store_fixed_ok(r->request_id, sizeof(r->request_id)))
		return "request_id";
	if (!engy_store_fixed_ok(r->model, sizeof(r->model)))
		return "model";
	if (!engy_store_fixed_ok(r->miner, sizeof(r->miner)))
		return "miner";
	if (!engy_store_fixed_ok(r->worker_name, sizeof(r->worker_name)))
		return "worker_name";
	return NULL;
}

const char *engy_store_settle_bad(int64_t reservation_id, int64_t cost_micro,
				  const struct engy_request_row *row)
{
	if (cost_micro < 0 || cost_micro > ENGY_STORE_MONEY_MAX ||
	    (!reservation_id && cost_micro))
		return "cost_micro";
	if (!reservation_id && !row)
		return "row";
	return row ? engy_store_row_bad(row) : NULL;
}

const char *engy_store_verdict_bad(const struct engy_verdict *v)
{
	if (!v)
		return "verdict";
	if (v->time_ms <= 0)
		return "time_ms";
	if (v->request_time_ms < 0)
		return "request_time_ms";
	if (v->verdict < ENGY_VERDICT_PASS ||
	    v->verdict > ENGY_VERDICT_UNPROVEN)
		return "verdict";
	if (v->is_probe > 1)
		return "is_probe";
	if (v->passed > v->chunks)
		return "passed";
	if (v->limit_p_ppm > 1000000)
		return "limit_p_ppm";
	if (!engy_store_fixed_ok(v->scheme, sizeof(v->scheme)) || !v->scheme[0])
		return "scheme";
	if (!engy_store_fixed_ok(v->reason, sizeof(v->reason)))
		return "reason";
	if (!engy_store_fixed_ok(v->request_id, sizeof(v->request_id)))
		return "request_id";
	if (!engy_store_fixed_ok(v->miner, sizeof(v->miner)))
		return "miner";
	if (!engy_store_fixed_ok(v->model, sizeof(v->model)))
		return "model";
	return NULL;
}

static bool doc_ok(const char *d)
{
	return d && *d &&
	       strnlen(d, ENGY_STORE_DOC_MAX + 1) <= ENGY_STORE_DOC_MAX;
}

const char *engy_store_epoch_bad(const struct engy_epoch_rec *e,
				 const char *payload, const char *aggregates)
{
	if (!e || e->epoch_index < 0)
		return "epoch_index";
	if (e->end_ms < e->start_ms)
		return "end_ms";
	if (strnlen(e->digest, sizeof(e->digest)) != 64)
		return "digest";
	if (!doc_ok(payload))
		return "payload";
	if (!doc_ok(aggregates))
		return "aggregates";
	return NULL;
}

static uint32_t limit_in(uint32_t limit, uint32_t max_rows)
{
	if (limit == 0)
		limit = 100;
	return limit > max_rows ? max_rows : limit;
}

int engy_store_log_query_in(const struct engy_log_query *in, uint32_t max_rows,
			    struct engy_log_query *q)
{
	if (!in || in->size < offsetof(struct engy_log_query, account_id))
		return -EINVAL;
	memset(q, 0, sizeof(*q));
	memcpy(q, in, in->size < sizeof(*q) ? in->size : sizeof(*q));
	q->limit = limit_in(q->limit, max_rows);
	if (!q->until_ms)
		q->until_ms = INT64_MAX;
	return 0;
}

int engy_store_verdict_query_in(const struct engy_verdict_query *in,
				uint32_t max_rows, struct engy_verdict_query *q)
{
	if (!in || in->size < offsetof(struct engy_verdict_query, miner) +
				      sizeof(in->miner))
		return -EINVAL;
	memcpy(q, in, sizeof(*q));
	if (!memchr(q->miner, '\0', sizeof(q->miner)))
		return -EINVAL;
	q->limit = limit_in(q->limit, max_rows);
	if (!q->until_ms)
		q->until_ms = INT64_MAX;
	return 0;
}
