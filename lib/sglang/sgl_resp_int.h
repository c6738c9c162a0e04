/* SPDX-License-Identifier: MIT */
/*
 * Internal to lib/sglang/sgl_resp*.c: the parser's state, shared by the lexer
 * (sgl_resp.c) and the part that knows the response (sgl_resp_fields.c),
 * and the number scanner, inline because it is the hot loop.
 */
#ifndef ENGY_SGL_RESP_INT_H
#define ENGY_SGL_RESP_INT_H

#include <float.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sgl_resp.h"

/*
 * A scanned JSON number: value = (-1)^neg * m * 10^e10 when !trunc.
 * @m holds the first 19 significant digits; @trunc says non-zero digits
 * were dropped after them (then only strtof gives the exact answer).
 * @is_int: no fraction and no exponent were written.
 */
struct jf_num {
	uint64_t m;
	int64_t e10;
	int ndig;
	bool neg;
	bool trunc;
	bool is_int;
};

static inline bool jf_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * jf_scan_number() - scan the JSON number that starts at @p.
 * Returns its length when a character that cannot continue a number
 * follows it before @end, or when @final says @end closes it; 0 when the
 * buffer ends first (more bytes are needed); -1 when it is not a JSON
 * number (RFC 8259 grammar: no leading zeros, no "+", no "1.", no ".5").
 */
static inline long jf_scan_number(const char *p, const char *end, bool final,
				  struct jf_num *n)
{
	const char *s = p;
	uint64_t m = 0;
	int64_t adj = 0, ev = 0;
	bool trunc = false, eneg = false;
	int nd = 0, d;

	n->neg = false;
	n->is_int = true;
	if (p == end)
		return final ? -1 : 0;
	if (*p == '-') {
		n->neg = true;
		if (++p == end)
			return final ? -1 : 0;
	}
	if (*p == '0') {
		p++;
		if (p < end && jf_is_digit(*p))
			return -1; /* leading zero */
	} else if (jf_is_digit(*p)) {
		do {
			d = *p++ - '0';
			if (nd < 19) {
				m = m * 10 + (uint64_t)d;
				nd++;
			} else {
				adj++;
				trunc |= d != 0;
			}
		} while (p < end && jf_is_digit(*p));
	} else {
		return -1;
	}
	if (p == end)
		goto ran_out;
	if (*p == '.') {
		n->is_int = false;
		if (++p == end)
			return final ? -1 : 0;
		if (!jf_is_digit(*p))
			return -1;
		do {
			d = *p++ - '0';
			if (nd == 0 && d == 0) {
				adj--; /* a leading zero of 0.00x */
			} else if (nd < 19) {
				m = m * 10 + (uint64_t)d;
				nd++;
				adj--;
			} else {
				trunc |= d != 0;
			}
		} while (p < end && jf_is_digit(*p));
		if (p == end)
			goto ran_out;
	}
	if (*p == 'e' || *p == 'E') {
		n->is_int = false;
		if (++p == end)
			return final ? -1 : 0;
		if (*p == '+' || *p == '-') {
			eneg = *p == '-';
			if (++p == end)
				return final ? -1 : 0;
		}
		if (!jf_is_digit(*p))
			return -1;
		do {
			if (ev < 100000000) /* far past any float */
				ev = ev * 10 + (*p - '0');
			p++;
		} while (p < end && jf_is_digit(*p));
		if (p == end)
			goto ran_out;
	}
	goto done;
ran_out:
	if (!final)
		return 0;
done:
	n->m = m;
	n->ndig = nd;
	n->trunc = trunc;
	n->e10 = adj + (eneg ? -ev : ev);
	return (long)(p - s);
}

extern const double engy_sglresp_pow10[23];

/* The correctly rounded float of a number the fast path cannot do. */
float engy_sglresp_num_float_slow(const struct jf_num *n, const char *text,
				  size_t len);

/* jf_num_float() - @n (scanned from the @len bytes at @text) as the
 * correctly rounded float (round to nearest, ties to even). */
static inline float jf_num_float(const struct jf_num *n, const char *text,
				 size_t len)
{
#if FLT_EVAL_METHOD == 0
	uint64_t bits;
	double d;

	if (n->m && !n->trunc && n->m <= (1ull << 53) && n->e10 >= -22 &&
	    n->e10 <= 22) {
		d = (double)n->m;
		if (n->e10 >= 0)
			d *= engy_sglresp_pow10[n->e10];
		else
			d /= engy_sglresp_pow10[-n->e10];
		memcpy(&bits, &d, sizeof(bits));
		/* A float midpoint may hide a second rounding; subnormal
		 * floats have other midpoints: both go the slow way. */
		if (d >= FLT_MIN && (bits & 0x1fffffffu) != 0x10000000u)
			return n->neg ? -(float)d : (float)d;
	}
#endif
	return engy_sglresp_num_float_slow(n, text, len);
}

/* engy_sglresp_num_int() - @n as an integer when it is one that fits, else -1. */
int engy_sglresp_num_int(const struct jf_num *n, int64_t *out);

enum ctx {
	C_SKIP,
	C_TOP,
	C_META,
	C_FINISH,
	C_ERROR,
	C_IDS,
	C_LPS,
	C_LPE,
	C_HS,
	C_HSE,
	C_ROW,
	C_BLOCK,
	C_TLPS, /* output_top_logprobs */
	C_TLPE, /* one position's alternatives */
	C_TLPA, /* one [logprob, id, text] */
	C_GEMM, /* meta_info.gemm */
};

/* What a value is for, decided at its first byte. */
enum slot {
	V_SKIP,
	V_TOPOBJ,
	V_META,
	V_IDS,
	V_ERROR,
	V_MSG,
	V_HS,
	V_LPS,
	V_PROMPT,
	V_COMPL,
	V_CACHED,
	V_FINISH,
	V_FTYPE,
	V_FMATCHED,
	V_FMSG,
	V_EMSG,
	V_ID,
	V_LPE,
	V_LPV,
	V_LPID,
	V_HSE,
	V_HSFIRST,
	V_ROWV,
	V_BROW,
	V_TLPS,
	V_TLPE,
	V_TLPA,
	V_TLPV,
	V_TLPID,
	V_GEMM, /* meta_info.gemm */
	V_GSTR, /* one of its string members */
	V_GNUM, /* one of its counts */
};

enum st {
	ST_VALUE,
	ST_KEY,
	ST_COLON,
	ST_AFTER,
	ST_STRING,
	ST_TOKEN,
	ST_RAWSKIP,
	ST_DONE,
};

struct frame {
	uint8_t ctx;
	bool obj;
	bool in_block; /* C_ROW: a row of a 2-D element */
	uint32_t n;    /* values (or members) completed */
	uint32_t rows; /* C_BLOCK: rows completed */
	uint32_t elem; /* hidden_states element index */
};

struct engy_jf {
	struct engy_sglresp_opts o;
	struct engy_sglresp_resp r;
	size_t ids_cap, lp_cap;
	size_t top_cap; /* positions the top arrays hold */
	int st;
	bool first; /* a container just opened: it may close */
	int depth;
	struct frame stk[ENGY_SGLRESP_MAX_DEPTH];
	int slot; /* of the string or token being read */
	/* strings */
	bool esc;
	int uhex;
	bool is_key;
	char *cap; /* capture target, NULL: drop */
	size_t capn, capmax;
	char key[32];
	size_t keylen;
	char ftype[16];
	/* a number or literal cut by the end of a feed */
	char tok[ENGY_SGLRESP_NUM_MAX + 1];
	size_t toklen;
	uint32_t raw_depth;
	/* the row being filled, and the last full row of a 2-D element */
	float *row, *last;
	uint32_t rown, rowcap;
	int err;
	const char *why;
	size_t base; /* bytes fed before this feed */
	size_t off;  /* where the error is */
};

int engy_sglresp_fail(struct engy_jf *j, int err, const char *why);
int engy_sglresp_push(struct engy_jf *j, int ctx, bool obj);
void engy_sglresp_value_done(struct engy_jf *j);
int engy_sglresp_row_grow(struct engy_jf *j);
void engy_sglresp_capture_to(struct engy_jf *j, char *dst, size_t max);

/* sgl_resp_fields.c: what each value means in a /generate response. */
int engy_sglresp_value_slot(const struct engy_jf *j);
int engy_sglresp_open_array(struct engy_jf *j, int slot);
int engy_sglresp_open_object(struct engy_jf *j, int slot);
int engy_sglresp_open_string(struct engy_jf *j, int slot);
void engy_sglresp_string_done(struct engy_jf *j);
int engy_sglresp_close(struct engy_jf *j, char c);
int engy_sglresp_number_value(struct engy_jf *j, int slot,
			      const struct jf_num *n, const char *text,
			      size_t len);
int engy_sglresp_token_value(struct engy_jf *j);

static inline struct frame *jf_top(struct engy_jf *j)
{
	return &j->stk[j->depth - 1];
}

static inline int jf_row_push(struct engy_jf *j, float v)
{
	if (j->rown == j->rowcap && engy_sglresp_row_grow(j))
		return j->err;
	j->row[j->rown++] = v;
	return 0;
}

#endif /* ENGY_SGL_RESP_INT_H */
