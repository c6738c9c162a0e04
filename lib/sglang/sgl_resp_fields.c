/* SPDX-License-Identifier: MIT */
/*
 * What each value of a /generate response means (see sgl_resp.h): the
 * lexer (sgl_resp.c) asks at a value's first byte where it goes, and
 * calls back here when a container closes or a scalar is complete.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sgl_resp.h"
#include "sgl_resp_int.h"

static bool key_is(const struct engy_jf *j, const char *k)
{
	return j->keylen < sizeof(j->key) && strcmp(j->key, k) == 0;
}

/* meta_info.gemm (sgl_resp.h): wrong shapes mark it, never fail. */
static void gemm_bad(struct engy_jf *j)
{
	j->r.gemm.present = true;
	j->r.gemm.bad = true;
}

/* The buffer of the gemm string member named by the current key. */
static char *gemm_str(struct engy_jf *j)
{
	struct engy_sglresp_gemm *g = &j->r.gemm;

	if (key_is(j, "hashing"))
		return g->hashing;
	if (key_is(j, "gemm_root"))
		return g->gemm_root;
	if (key_is(j, "spec_root"))
		return g->spec_root;
	if (key_is(j, "sampling"))
		return g->sampling;
	return g->rid;
}

static size_t gemm_cap(const struct engy_jf *j)
{
	const struct engy_sglresp_gemm *g = &j->r.gemm;

	if (key_is(j, "hashing"))
		return sizeof(g->hashing);
	if (key_is(j, "rid"))
		return sizeof(g->rid);
	return sizeof(g->gemm_root);
}

int engy_sglresp_value_slot(const struct engy_jf *j)
{
	const struct frame *f;

	if (j->depth == 0)
		return V_TOPOBJ;
	f = &j->stk[j->depth - 1];
	switch (f->ctx) {
	case C_TOP:
		if (key_is(j, "meta_info"))
			return V_META;
		if (key_is(j, "output_ids"))
			return V_IDS;
		if (key_is(j, "error"))
			return V_ERROR;
		if (key_is(j, "message") || key_is(j, "detail"))
			return V_MSG;
		return V_SKIP;
	case C_META:
		if (key_is(j, "hidden_states"))
			return V_HS;
		if (key_is(j, "output_token_logprobs"))
			return V_LPS;
		if (key_is(j, "output_top_logprobs") && j->o.top_n)
			return V_TLPS;
		if (key_is(j, "prompt_tokens"))
			return V_PROMPT;
		if (key_is(j, "completion_tokens"))
			return V_COMPL;
		if (key_is(j, "cached_tokens"))
			return V_CACHED;
		if (key_is(j, "finish_reason"))
			return V_FINISH;
		if (key_is(j, "gemm"))
			return V_GEMM;
		return V_SKIP;
	case C_GEMM:
		if (key_is(j, "hashing") || key_is(j, "gemm_root") ||
		    key_is(j, "spec_root") || key_is(j, "sampling") ||
		    key_is(j, "rid"))
			return V_GSTR;
		if (key_is(j, "n_prompt") || key_is(j, "n_tokens"))
			return V_GNUM;
		return V_SKIP;
	case C_FINISH:
		if (key_is(j, "type"))
			return V_FTYPE;
		if (key_is(j, "matched"))
			return V_FMATCHED;
		if (key_is(j, "message"))
			return V_FMSG;
		return V_SKIP;
	case C_ERROR:
		return key_is(j, "message") ? V_EMSG : V_SKIP;
	case C_IDS:
		return V_ID;
	case C_LPS:
		return V_LPE;
	case C_LPE:
		return f->n == 0 ? V_LPV : f->n == 1 ? V_LPID : V_SKIP;
	case C_TLPS:
		return V_TLPE;
	case C_TLPE:
		return V_TLPA;
	case C_TLPA:
		return f->n == 0 ? V_TLPV : f->n == 1 ? V_TLPID : V_SKIP;
	case C_HS:
		return V_HSE;
	case C_HSE:
		return V_HSFIRST;
	case C_ROW:
		return V_ROWV;
	case C_BLOCK:
		return V_BROW;
	default:
		return V_SKIP;
	}
}

static int emit(struct engy_jf *j, uint32_t elem, uint32_t row, const float *v,
		uint32_t n)
{
	int rc;

	if (j->r.width && j->r.width != n)
		return engy_sglresp_fail(j, -EBADMSG,
					 "hidden-state rows differ in width");
	j->r.width = n;
	if (!j->o.on_row)
		return 0;
	rc = j->o.on_row(j->o.arg, elem, row, v, n);
	return rc ? engy_sglresp_fail(j, rc, "row callback failed") : 0;
}

static int grow(struct engy_jf *j, void **p, size_t *cap, size_t need,
		size_t size)
{
	if (need > j->o.max_ids)
		return engy_sglresp_fail(j, -E2BIG, "too many output tokens");
	if (!engy_grow(p, cap, need, size))
		return engy_sglresp_fail(j, -ENOMEM, "out of memory");
	return 0;
}

static int lp_append(struct engy_jf *j)
{
	size_t cap = j->lp_cap, n = j->r.n_lp + 1;

	if (grow(j, (void **)&j->r.lp, &cap, n, sizeof(float)))
		return j->err;
	if (grow(j, (void **)&j->r.lp_ids, &j->lp_cap, n, sizeof(uint32_t)))
		return j->err;
	j->lp_cap = cap;
	j->r.lp[j->r.n_lp] = NAN;
	j->r.lp_ids[j->r.n_lp] = 0;
	j->r.n_lp = n;
	return 0;
}

/* A new output_top_logprobs position, without alternatives yet; room is
 * made for top_n of them (positions are bounded like output ids). */
static int top_append(struct engy_jf *j)
{
	size_t n = j->r.n_top + 1, k = j->o.top_n, c1 = 0, c2 = 0, c3 = 0;

	if (n > j->o.max_ids)
		return engy_sglresp_fail(j, -E2BIG, "too many output tokens");
	if (n > j->top_cap) {
		size_t cap = j->top_cap ? j->top_cap * 2 : 64;

		if (cap > j->o.max_ids)
			cap = j->o.max_ids;
		if (!engy_grow((void **)&j->r.top_cnt, &c1, cap, 1) ||
		    !engy_grow((void **)&j->r.top_lp, &c2, cap * k,
			       sizeof(float)) ||
		    !engy_grow((void **)&j->r.top_ids, &c3, cap * k,
			       sizeof(uint32_t)))
			return engy_sglresp_fail(j, -ENOMEM, "out of memory");
		j->top_cap = cap;
	}
	j->r.top_cnt[n - 1] = 0;
	j->r.n_top = n;
	return 0;
}

/* Its next alternative, preset to a null logprob. */
static int top_alt(struct engy_jf *j)
{
	size_t pos = j->r.n_top - 1, at;

	if (j->r.top_cnt[pos] >= j->o.top_n)
		return engy_sglresp_fail(j, -E2BIG,
					 "more top logprobs than asked");
	at = pos * j->o.top_n + j->r.top_cnt[pos]++;
	j->r.top_lp[at] = NAN;
	j->r.top_ids[at] = 0;
	return 0;
}

static size_t top_at(const struct engy_jf *j)
{
	size_t pos = j->r.n_top - 1;

	return pos * j->o.top_n + j->r.top_cnt[pos] - 1;
}

int engy_sglresp_open_array(struct engy_jf *j, int slot)
{
	struct frame *f;

	switch (slot) {
	case V_IDS:
		j->r.has_output_ids = true;
		j->r.n_ids = 0;
		return engy_sglresp_push(j, C_IDS, false);
	case V_LPS:
		j->r.has_logprobs = true;
		j->r.n_lp = 0;
		return engy_sglresp_push(j, C_LPS, false);
	case V_HS:
		j->r.has_hidden = true;
		return engy_sglresp_push(j, C_HS, false);
	case V_LPE:
		if (lp_append(j))
			return j->err;
		return engy_sglresp_push(j, C_LPE, false);
	case V_TLPS:
		j->r.has_top = true;
		j->r.n_top = 0;
		return engy_sglresp_push(j, C_TLPS, false);
	case V_TLPE:
		if (top_append(j))
			return j->err;
		return engy_sglresp_push(j, C_TLPE, false);
	case V_TLPA:
		if (top_alt(j))
			return j->err;
		return engy_sglresp_push(j, C_TLPA, false);
	case V_HSE:
		f = jf_top(j);
		j->r.n_elems = f->n + 1;
		if (f->n < j->o.skip_elems) {
			j->st = ST_RAWSKIP;
			j->raw_depth = 1;
			return 0;
		}
		if (engy_sglresp_push(j, C_HSE, false))
			return j->err;
		jf_top(j)->elem = f->n;
		return 0;
	case V_HSFIRST: /* the element is 2-D: this is its first row */
		jf_top(j)->ctx = C_BLOCK;
		/* fall through */
	case V_BROW:
		f = jf_top(j);
		if (engy_sglresp_push(j, C_ROW, false))
			return j->err;
		jf_top(j)->in_block = true;
		jf_top(j)->elem = f->elem;
		j->rown = 0;
		return 0;
	case V_GEMM:
	case V_GSTR:
	case V_GNUM:
		gemm_bad(j);
		/* fall through */
	case V_SKIP:
	case V_MSG:
	case V_ERROR:
	case V_FMATCHED:
		return engy_sglresp_push(j, C_SKIP, false);
	default:
		return engy_sglresp_fail(j, -EBADMSG,
					 "a list where the response has none");
	}
}

int engy_sglresp_open_object(struct engy_jf *j, int slot)
{
	switch (slot) {
	case V_TOPOBJ:
		return engy_sglresp_push(j, C_TOP, true);
	case V_META:
		j->r.has_meta = true;
		return engy_sglresp_push(j, C_META, true);
	case V_FINISH:
		return engy_sglresp_push(j, C_FINISH, true);
	case V_ERROR:
		j->r.has_error = true;
		return engy_sglresp_push(j, C_ERROR, true);
	case V_GEMM:
		/* a second member starts over */
		memset(&j->r.gemm, 0, sizeof(j->r.gemm));
		j->r.gemm.present = true;
		j->r.gemm.n_prompt = j->r.gemm.n_tokens = -1;
		return engy_sglresp_push(j, C_GEMM, true);
	case V_GSTR:
	case V_GNUM:
		gemm_bad(j);
		return engy_sglresp_push(j, C_SKIP, true);
	case V_SKIP:
	case V_MSG:
	case V_FMATCHED:
		return engy_sglresp_push(j, C_SKIP, true);
	default:
		return engy_sglresp_fail(
			j, -EBADMSG,
			j->depth ? "an object where the response has none"
				 : "the response is not a JSON object");
	}
}

int engy_sglresp_close(struct engy_jf *j, char c)
{
	struct frame *f = jf_top(j), *parent;

	if (f->obj != (c == '}'))
		return engy_sglresp_fail(j, -EBADMSG, "mismatched bracket");
	switch (f->ctx) {
	case C_HSE: /* [] : an empty prefill block */
		if (f->elem != 0)
			return engy_sglresp_fail(j, -EBADMSG,
						 "empty hidden-state element");
		j->r.elem0_block = true;
		j->r.elem0_rows = 0;
		break;
	case C_ROW:
		if (j->rown == 0)
			return engy_sglresp_fail(j, -EBADMSG,
						 "empty hidden-state row");
		if (!f->in_block) {
			if (f->elem == 0) {
				j->r.elem0_block = false;
				j->r.elem0_rows = 1;
			}
			if (emit(j, f->elem, 0, j->row, j->rown))
				return j->err;
			break;
		}
		parent = &j->stk[j->depth - 2];
		parent->rows++;
		if (j->o.all_block_rows) {
			if (emit(j, f->elem, parent->rows - 1, j->row, j->rown))
				return j->err;
		} else {
			float *t = j->last;

			if (j->r.width && j->r.width != j->rown)
				return engy_sglresp_fail(
					j, -EBADMSG,
					"hidden-state "
					"rows differ in width");
			j->r.width = j->rown;
			j->last = j->row;
			j->row = t;
		}
		break;
	case C_BLOCK:
		if (f->elem == 0) {
			j->r.elem0_block = true;
			j->r.elem0_rows = f->rows;
		}
		if (!j->o.all_block_rows && f->rows &&
		    emit(j, f->elem, f->rows - 1, j->last, j->r.width))
			return j->err;
		break;
	case C_LPE:
		if (f->n < 2)
			return engy_sglresp_fail(
				j, -EBADMSG,
				"short output_token_logprobs entry");
		break;
	case C_TLPA:
		if (f->n < 2)
			return engy_sglresp_fail(
				j, -EBADMSG, "short output_top_logprobs entry");
		break;
	default:
		break;
	}
	j->depth--;
	engy_sglresp_value_done(j);
	return 0;
}

static int count_value(struct engy_jf *j, int64_t *dst, const struct jf_num *n)
{
	int64_t v;

	if (engy_sglresp_num_int(n, &v) || v < 0)
		return engy_sglresp_fail(j, -EBADMSG,
					 "a token count is not a count");
	*dst = v;
	return 0;
}

int engy_sglresp_number_value(struct engy_jf *j, int slot,
			      const struct jf_num *n, const char *text,
			      size_t len)
{
	int64_t v;

	if (len > ENGY_SGLRESP_NUM_MAX)
		return engy_sglresp_fail(j, -E2BIG, "number too long");
	switch (slot) {
	case V_HSFIRST:
		jf_top(j)->ctx = C_ROW; /* the element is a 1-D row */
		j->rown = 0;
		/* fall through */
	case V_ROWV:
		return jf_row_push(j, jf_num_float(n, text, len));
	case V_ID:
		if (engy_sglresp_num_int(n, &v) || v < 0 || v > UINT32_MAX)
			return engy_sglresp_fail(j, -EBADMSG,
						 "output id is not a token id");
		if (grow(j, (void **)&j->r.ids, &j->ids_cap, j->r.n_ids + 1,
			 sizeof(uint32_t)))
			return j->err;
		j->r.ids[j->r.n_ids++] = (uint32_t)v;
		return 0;
	case V_LPV:
		j->r.lp[j->r.n_lp - 1] = jf_num_float(n, text, len);
		return 0;
	case V_LPID:
		if (engy_sglresp_num_int(n, &v) || v < 0 || v > UINT32_MAX)
			return engy_sglresp_fail(
				j, -EBADMSG, "logprob id is not a token id");
		j->r.lp_ids[j->r.n_lp - 1] = (uint32_t)v;
		return 0;
	case V_TLPV:
		j->r.top_lp[top_at(j)] = jf_num_float(n, text, len);
		return 0;
	case V_TLPID:
		if (engy_sglresp_num_int(n, &v) || v < 0 || v > UINT32_MAX)
			return engy_sglresp_fail(
				j, -EBADMSG,
				"top logprob id is not a token id");
		j->r.top_ids[top_at(j)] = (uint32_t)v;
		return 0;
	case V_PROMPT:
		return count_value(j, &j->r.prompt_tokens, n);
	case V_COMPL:
		return count_value(j, &j->r.completion_tokens, n);
	case V_CACHED:
		return count_value(j, &j->r.cached_tokens, n);
	case V_FMATCHED:
		if (engy_sglresp_num_int(n, &v))
			v = -1;
		j->r.matched = v;
		return 0;
	case V_GNUM:
		if (engy_sglresp_num_int(n, &v) || v < 0)
			gemm_bad(j);
		else if (key_is(j, "n_prompt"))
			j->r.gemm.n_prompt = v;
		else
			j->r.gemm.n_tokens = v;
		return 0;
	case V_GEMM:
	case V_GSTR:
		gemm_bad(j);
		return 0;
	case V_SKIP:
	case V_MSG:
	case V_EMSG:
	case V_FMSG:
	case V_ERROR:
		return 0;
	default:
		return engy_sglresp_fail(
			j, -EBADMSG, "a number where the response has none");
	}
}

/* A literal (or a number cut by a feed boundary) is complete. */
int engy_sglresp_token_value(struct engy_jf *j)
{
	const char *t = j->tok;
	int slot = j->slot;
	bool row = slot == V_ROWV || slot == V_HSFIRST, lenient;
	struct jf_num n;
	float v;
	long k;

	j->tok[j->toklen] = '\0';
	/* meta_info.gemm: any literal but a count is the wrong shape (a
	 * null member is absent) */
	if ((slot == V_GEMM || slot == V_GSTR || slot == V_GNUM) &&
	    (strcmp(t, "null") == 0 || strcmp(t, "true") == 0 ||
	     strcmp(t, "false") == 0 || strcmp(t, "NaN") == 0 ||
	     strcmp(t, "Infinity") == 0 || strcmp(t, "-Infinity") == 0)) {
		if (slot != V_GEMM || strcmp(t, "null") != 0)
			gemm_bad(j);
		return 0;
	}
	lenient = slot == V_SKIP || slot == V_MSG || slot == V_EMSG ||
		  slot == V_FMSG || slot == V_FTYPE || slot == V_FMATCHED ||
		  slot == V_ERROR;
	if (strcmp(t, "null") == 0) {
		switch (slot) {
		case V_TLPE: /* a position without alternatives */
			return top_append(j) ? j->err : 0;
		case V_ID:
		case V_LPID:
		case V_TLPID:
		case V_TLPA:
		case V_LPE:
		case V_HSE:
		case V_BROW:
		case V_TOPOBJ:
			return engy_sglresp_fail(
				j, -EBADMSG, "null where a value is needed");
		case V_ROWV:
		case V_HSFIRST:
			v = NAN;
			goto row_value;
		default: /* absent; logprob NaN was preset */
			return 0;
		}
	}
	if (strcmp(t, "true") == 0 || strcmp(t, "false") == 0)
		return lenient ? 0
			       : engy_sglresp_fail(j, -EBADMSG,
						   "unexpected boolean");
	if (strcmp(t, "NaN") == 0 || strcmp(t, "Infinity") == 0 ||
	    strcmp(t, "-Infinity") == 0) {
		v = t[0] == 'N' ? NAN : t[0] == '-' ? -INFINITY : INFINITY;
		if (slot == V_LPV) {
			j->r.lp[j->r.n_lp - 1] = v;
			return 0;
		}
		if (slot == V_TLPV) {
			j->r.top_lp[top_at(j)] = v;
			return 0;
		}
		if (row)
			goto row_value;
		return lenient ? 0
			       : engy_sglresp_fail(j, -EBADMSG,
						   "unexpected non-finite");
	}
	k = jf_scan_number(t, t + j->toklen, true, &n);
	if (k < 0 || (size_t)k != j->toklen)
		return engy_sglresp_fail(j, -EBADMSG,
					 "invalid literal or number");
	return engy_sglresp_number_value(j, slot, &n, t, j->toklen);
row_value:
	if (slot == V_HSFIRST) {
		jf_top(j)->ctx = C_ROW;
		j->rown = 0;
	}
	return jf_row_push(j, v);
}

int engy_sglresp_open_string(struct engy_jf *j, int slot)
{
	j->cap = NULL;
	j->slot = slot;
	switch (slot) {
	case V_ERROR:
		j->r.has_error = true;
		/* fall through */
	case V_MSG:
	case V_EMSG:
		engy_sglresp_capture_to(j, j->r.error, sizeof(j->r.error));
		break;
	case V_FTYPE:
		engy_sglresp_capture_to(j, j->ftype, sizeof(j->ftype));
		break;
	case V_FMSG:
		engy_sglresp_capture_to(j, j->r.finish_msg,
					sizeof(j->r.finish_msg));
		break;
	case V_FMATCHED: /* a stop string: no token id */
		j->r.matched = -1;
		break;
	case V_GSTR:
		engy_sglresp_capture_to(j, gemm_str(j), gemm_cap(j));
		break;
	case V_GEMM:
	case V_GNUM:
		gemm_bad(j);
		break;
	case V_SKIP:
		break;
	default:
		return engy_sglresp_fail(
			j, -EBADMSG, "a string where the response has none");
	}
	j->st = ST_STRING;
	return 0;
}

void engy_sglresp_string_done(struct engy_jf *j)
{
	if (j->is_key) {
		j->is_key = false;
		j->st = ST_COLON;
		return;
	}
	if (j->slot == V_GSTR && j->capn + 1 >= j->capmax)
		j->r.gemm.bad = true; /* longer than any valid value */
	if (j->slot == V_FTYPE)
		j->r.finish = strcmp(j->ftype, "stop") == 0
				      ? ENGY_SGLRESP_FINISH_STOP
			      : strcmp(j->ftype, "length") == 0
				      ? ENGY_SGLRESP_FINISH_LENGTH
			      : strcmp(j->ftype, "abort") == 0
				      ? ENGY_SGLRESP_FINISH_ABORT
				      : ENGY_SGLRESP_FINISH_OTHER;
	engy_sglresp_value_done(j);
}

static bool hex64(const char *s)
{
	size_t i;

	for (i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[64] == '\0';
}

int engy_sglresp_gemm_json(const struct engy_sglresp_gemm *g, char **out,
			   const char **why)
{
	const char *p;
	size_t cap;

	*out = NULL;
	*why = NULL;
	if (!g->present)
		*why = "absent";
	else if (g->bad)
		*why = "not an object of the expected members";
	else if (strcmp(g->hashing, "engy-ga1") != 0)
		*why = "hashing is not engy-ga1";
	else if (!hex64(g->gemm_root) || !hex64(g->spec_root) ||
		 !hex64(g->sampling))
		*why = "a root or the sampling hash is not 64 hex digits";
	else if (g->n_prompt < 1 || g->n_tokens < g->n_prompt ||
		 g->n_tokens >= (int64_t)1 << 31)
		*why = "n_prompt / n_tokens out of range";
	else if (!g->rid[0])
		*why = "no rid";
	for (p = g->rid; !*why && *p; p++)
		if (*p < 0x21 || *p > 0x7e || *p == '"' || *p == '\\')
			*why = "rid is not printable ASCII";
	if (*why)
		return -EBADMSG;
	cap = 400 + strlen(g->rid);
	*out = malloc(cap);
	if (!*out)
		return -ENOMEM;
	snprintf(*out, cap,
		 "{\"hashing\":\"engy-ga1\",\"gemm_root\":\"%s\","
		 "\"spec_root\":\"%s\",\"n_prompt\":%lld,\"n_tokens\":%lld,"
		 "\"sampling\":\"%s\",\"rid\":\"%s\"}",
		 g->gemm_root, g->spec_root, (long long)g->n_prompt,
		 (long long)g->n_tokens, g->sampling, g->rid);
	return 0;
}
