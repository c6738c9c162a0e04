/* SPDX-License-Identifier: MIT */
/*
 * Streaming /generate response parser (see sgl_resp.h).
 *
 * A push lexer with an explicit stack: each open container carries a
 * context saying what it is in the response (meta_info, hidden_states, a
 * row, ...), so a value knows at its first byte where it goes.  Hot paths
 * work in place on the input: numbers of a row are scanned and converted
 * straight from the buffer (only a number cut by the end of a feed is
 * copied), strings nobody reads are skipped run by run, and hidden-state
 * elements below skip_elems are passed over by counting brackets.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"
#include "sgl_resp.h"
#include "sgl_resp_int.h"

int engy_sglresp_fail(struct engy_jf *j, int err, const char *why)
{
	if (!j->err) {
		j->err = err;
		j->why = why;
	}
	return j->err;
}

int engy_sglresp_new(const struct engy_sglresp_opts *o, struct engy_jf **out)
{
	struct engy_jf *j = calloc(1, sizeof(*j));

	*out = NULL;
	if (!j)
		return -ENOMEM;
	engy_sglresp_reset(j, o);
	*out = j;
	return 0;
}

void engy_sglresp_free(struct engy_jf *j)
{
	if (!j)
		return;
	free(j->r.ids);
	free(j->r.lp);
	free(j->r.lp_ids);
	free(j->r.top_lp);
	free(j->r.top_ids);
	free(j->r.top_cnt);
	free(j->row);
	free(j->last);
	free(j);
}

void engy_sglresp_reset(struct engy_jf *j, const struct engy_sglresp_opts *o)
{
	uint32_t *ids = j->r.ids, *lp_ids = j->r.lp_ids,
		 *top_ids = j->r.top_ids;
	float *lp = j->r.lp, *top_lp = j->r.top_lp;
	uint8_t *top_cnt = j->r.top_cnt;
	uint32_t top_n = j->o.top_n;

	if (o)
		j->o = *o;
	if (j->o.top_n > ENGY_SGLRESP_TOP_MAX)
		j->o.top_n = ENGY_SGLRESP_TOP_MAX;
	if (j->o.top_n != top_n) /* another stride: start over */
		j->top_cap = 0;
	if (!j->o.max_width)
		j->o.max_width = 1u << 20;
	if (!j->o.max_ids)
		j->o.max_ids = (size_t)1 << 24;
	memset(&j->r, 0, sizeof(j->r));
	j->r.ids = ids;
	j->r.lp = lp;
	j->r.lp_ids = lp_ids;
	j->r.top_lp = top_lp;
	j->r.top_ids = top_ids;
	j->r.top_cnt = top_cnt;
	j->r.prompt_tokens = -1;
	j->r.completion_tokens = -1;
	j->r.cached_tokens = -1;
	j->r.matched = -1;
	j->st = ST_VALUE;
	j->first = false;
	j->depth = 0;
	j->esc = false;
	j->uhex = 0;
	j->toklen = 0;
	j->rown = 0;
	j->err = 0;
	j->why = "";
	j->base = 0;
	j->off = 0;
}

const struct engy_sglresp_resp *engy_sglresp_resp(const struct engy_jf *j)
{
	return &j->r;
}

const char *engy_sglresp_error(const struct engy_jf *j)
{
	return j->why;
}

size_t engy_sglresp_offset(const struct engy_jf *j)
{
	return j->off;
}

int engy_sglresp_push(struct engy_jf *j, int ctx, bool obj)
{
	struct frame *f;

	if (j->depth == ENGY_SGLRESP_MAX_DEPTH)
		return engy_sglresp_fail(j, -EBADMSG, "nested too deep");
	f = &j->stk[j->depth++];
	memset(f, 0, sizeof(*f));
	f->ctx = (uint8_t)ctx;
	f->obj = obj;
	j->st = obj ? ST_KEY : ST_VALUE;
	j->first = true;
	return 0;
}

/* A value is complete: count it in its container. */
void engy_sglresp_value_done(struct engy_jf *j)
{
	if (j->depth == 0) {
		j->st = ST_DONE;
		return;
	}
	jf_top(j)->n++;
	j->st = ST_AFTER;
}

/* The row is full: double it (and its twin), up to max_width. */
int engy_sglresp_row_grow(struct engy_jf *j)
{
	uint32_t cap = j->rowcap ? j->rowcap * 2 : 256;
	float *a, *b;

	if (j->rowcap >= j->o.max_width)
		return engy_sglresp_fail(j, -E2BIG,
					 "hidden-state row too long");
	if (cap > j->o.max_width)
		cap = j->o.max_width;
	a = realloc(j->row, cap * sizeof(float));
	if (!a)
		return engy_sglresp_fail(j, -ENOMEM, "out of memory");
	j->row = a;
	b = realloc(j->last, cap * sizeof(float));
	if (!b)
		return engy_sglresp_fail(j, -ENOMEM, "out of memory");
	j->last = b;
	j->rowcap = cap;
	return 0;
}

void engy_sglresp_capture_to(struct engy_jf *j, char *dst, size_t max)
{
	j->cap = dst;
	j->capn = 0;
	j->capmax = max;
	dst[0] = '\0';
}

static void capture(struct engy_jf *j, const char *p, size_t n)
{
	if (!j->cap)
		return;
	if (n > j->capmax - 1 - j->capn)
		n = j->capmax - 1 - j->capn;
	memcpy(j->cap + j->capn, p, n);
	j->capn += n;
	j->cap[j->capn] = '\0';
}

static bool is_ws(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static bool is_tokchar(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	       (c >= 'A' && c <= 'Z') || c == '-' || c == '+' || c == '.';
}

static bool is_hex(char c)
{
	return engy_hexval((unsigned char)c) >= 0;
}

/* Inside a string: returns where it stopped. */
static const char *string_bytes(struct engy_jf *j, const char *p,
				const char *end)
{
	static const char unesc[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
	const char *q, *e;

	while (p < end && !j->err) {
		if (j->uhex) {
			if (!is_hex(*p++))
				return engy_sglresp_fail(j, -EBADMSG,
							 "bad \\u escape"),
				       p;
			if (--j->uhex == 0)
				capture(j, "?", 1);
			continue;
		}
		if (j->esc) {
			j->esc = false;
			if (*p == 'u') {
				j->uhex = 4;
				p++;
				continue;
			}
			e = strchr(unesc, *p);
			if (!*p || !e || (e - unesc) % 2)
				return engy_sglresp_fail(j, -EBADMSG,
							 "bad escape"),
				       p;
			capture(j, e + 1, 1);
			p++;
			continue;
		}
		for (q = p; q < end && *q != '"' && *q != '\\' &&
			    (unsigned char)*q >= 0x20;
		     q++)
			;
		capture(j, p, (size_t)(q - p));
		p = q;
		if (p == end)
			break;
		if (*p == '"') {
			p++;
			engy_sglresp_string_done(j);
			break;
		}
		if (*p == '\\') {
			j->esc = true;
			p++;
			continue;
		}
		engy_sglresp_fail(j, -EBADMSG, "control character in a string");
	}
	return p;
}

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && is_ws(*p))
		p++;
	return p;
}

/*
 * The hot loop: values of a row, converted in place while each number
 * ends inside this feed.  Entered with a value expected in a C_ROW.
 */
static const char *row_fast(struct engy_jf *j, const char *p, const char *end)
{
	struct jf_num n;
	long k;

	for (;;) {
		p = skip_ws(p, end);
		if (p == end || !(*p == '-' || (*p >= '0' && *p <= '9')))
			return p;
		k = jf_scan_number(p, end, false, &n);
		if (k <= 0)
			return p; /* cut by the feed, or let the slow
					 * path say what is wrong */
		if (k > ENGY_SGLRESP_NUM_MAX) {
			engy_sglresp_fail(j, -E2BIG, "number too long");
			return p;
		}
		j->first = false;
		if (jf_row_push(j, jf_num_float(&n, p, (size_t)k)))
			return p;
		jf_top(j)->n++;
		p = skip_ws(p + k, end);
		j->st = ST_AFTER;
		if (p == end || *p != ',')
			return p;
		p++;
		j->st = ST_VALUE;
	}
}

/* A value starts at *p (not whitespace). */
static const char *begin_value(struct engy_jf *j, const char *p,
			       const char *end)
{
	int slot = engy_sglresp_value_slot(j);
	struct jf_num n;
	char c = *p;
	long k;

	j->first = false;
	if (c == '{') {
		engy_sglresp_open_object(j, slot);
		return p + 1;
	}
	if (c == '[') {
		engy_sglresp_open_array(j, slot);
		return p + 1;
	}
	if (c == '"') {
		j->is_key = false;
		engy_sglresp_open_string(j, slot);
		return p + 1;
	}
	if (c == '-' || (c >= '0' && c <= '9')) {
		k = jf_scan_number(p, end, false, &n);
		if (k > 0) {
			if (!engy_sglresp_number_value(j, slot, &n, p,
						       (size_t)k))
				engy_sglresp_value_done(j);
			return p + k;
		}
	}
	if (!is_tokchar(c)) {
		engy_sglresp_fail(j, -EBADMSG, "unexpected character");
		return p;
	}
	j->slot = slot;
	j->toklen = 0;
	j->st = ST_TOKEN;
	return p;
}

static const char *raw_skip(struct engy_jf *j, const char *p, const char *end)
{
	for (; p < end; p++) {
		if (*p == '[') {
			if (++j->raw_depth > ENGY_SGLRESP_MAX_DEPTH) {
				engy_sglresp_fail(j, -EBADMSG,
						  "nested too deep");
				return p;
			}
		} else if (*p == ']') {
			if (--j->raw_depth == 0) {
				engy_sglresp_value_done(j);
				return p + 1;
			}
		} else if (*p == '"' || *p == '{' || *p == '}') {
			engy_sglresp_fail(j, -EBADMSG,
					  "hidden states hold a non-number");
			return p;
		}
	}
	return p;
}

int engy_sglresp_feed(struct engy_jf *j, const char *p, size_t len)
{
	const char *start = p, *end = p + len;
	char c;

	if (j->err)
		return j->err;
	while (p < end && !j->err) {
		if (j->st == ST_STRING) {
			p = string_bytes(j, p, end);
			continue;
		}
		if (j->st == ST_RAWSKIP) {
			p = raw_skip(j, p, end);
			continue;
		}
		if (j->st == ST_TOKEN) {
			if (is_tokchar(*p)) {
				if (j->toklen == ENGY_SGLRESP_NUM_MAX) {
					engy_sglresp_fail(j, -E2BIG,
							  "number too long");
					break;
				}
				j->tok[j->toklen++] = *p++;
				continue;
			}
			if (!engy_sglresp_token_value(j))
				engy_sglresp_value_done(j);
			continue;
		}
		if (j->st == ST_VALUE && j->depth && jf_top(j)->ctx == C_ROW) {
			p = row_fast(j, p, end);
			if (p == end || j->err)
				continue;
		}
		c = *p;
		if (is_ws(c)) {
			p++;
			continue;
		}
		switch (j->st) {
		case ST_VALUE:
			if (c == ']' && j->first && !jf_top(j)->obj) {
				engy_sglresp_close(j, c);
				p++;
			} else {
				p = begin_value(j, p, end);
			}
			break;
		case ST_KEY:
			if (c == '}' && j->first) {
				engy_sglresp_close(j, c);
			} else if (c == '"') {
				j->first = false;
				j->is_key = true;
				engy_sglresp_capture_to(j, j->key,
							sizeof(j->key));
				j->st = ST_STRING;
			} else {
				engy_sglresp_fail(j, -EBADMSG,
						  "expected a member name");
				break;
			}
			p++;
			break;
		case ST_COLON:
			if (c != ':') {
				engy_sglresp_fail(j, -EBADMSG, "expected ':'");
				break;
			}
			/* A name of 31 bytes or more matches no field. */
			j->keylen = j->capn;
			if (j->keylen >= sizeof(j->key) - 1)
				j->keylen = sizeof(j->key);
			j->st = ST_VALUE;
			p++;
			break;
		case ST_AFTER:
			if (c == ',') {
				j->st = jf_top(j)->obj ? ST_KEY : ST_VALUE;
				p++;
			} else if (c == ']' || c == '}') {
				engy_sglresp_close(j, c);
				p++;
			} else {
				engy_sglresp_fail(j, -EBADMSG,
						  "expected ',' or a close");
			}
			break;
		case ST_DONE:
			engy_sglresp_fail(j, -EBADMSG,
					  "bytes after the response object");
			break;
		}
	}
	if (j->err)
		j->off = j->base + (size_t)(p - start);
	j->base += len;
	return j->err;
}

int engy_sglresp_finish(struct engy_jf *j)
{
	if (j->err)
		return j->err;
	if (j->st == ST_TOKEN && j->depth == 0)
		return engy_sglresp_fail(j, -EBADMSG,
					 "the response is not a JSON object");
	if (j->st != ST_DONE) {
		j->off = j->base;
		return engy_sglresp_fail(j, -EBADMSG,
					 j->base ? "the response ends early"
						 : "empty response");
	}
	return 0;
}
