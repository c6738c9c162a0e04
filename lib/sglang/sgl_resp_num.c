/* SPDX-License-Identifier: MIT */
/*
 * JSON numbers to float, exactly.
 *
 * The fast path is Clinger's: with at most 19 significant digits, a
 * mantissa m <= 2^53 and |e| <= 22, m and 10^|e| are exact doubles, so
 * m * 10^e (or m / 10^-e) is the correctly rounded double d of the decimal
 * value x.  Rounding d again to float can differ from rounding x to float
 * only when d lands exactly on a midpoint between two floats (every float
 * midpoint of the normal range is a double, and rounding is monotonic):
 * that case, and the subnormal range, go to strtof_l in the C locale,
 * which glibc rounds correctly.  The hidden states sglang prints are bf16
 * values in shortest decimal form, which the fast path covers almost
 * always.
 */
#include <float.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sgl_resp.h"
#include "sgl_resp_int.h"

const double engy_sglresp_pow10[23] = {
	1e0,  1e1,  1e2,  1e3,	1e4,  1e5,  1e6,  1e7,	1e8,  1e9,  1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

static pthread_once_t c_once = PTHREAD_ONCE_INIT;
static locale_t c_loc;

static void c_locale_init(void)
{
	c_loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

static float slow_float(const char *text, size_t len)
{
	char buf[ENGY_SGLRESP_NUM_MAX + 1];

	if (len > ENGY_SGLRESP_NUM_MAX) /* callers refuse these first */
		len = ENGY_SGLRESP_NUM_MAX;
	memcpy(buf, text, len);
	buf[len] = '\0';
	pthread_once(&c_once, c_locale_init);
	if (c_loc)
		return strtof_l(buf, NULL, c_loc);
	return strtof(buf, NULL);
}

float engy_sglresp_num_float_slow(const struct jf_num *n, const char *text,
				  size_t len)
{
	if (n->m == 0)
		return n->neg ? -0.0f : 0.0f;
	/* Whole ranges first: below 1e-46 everything rounds to zero, from
	 * 1e39 up everything overflows. */
	if (n->ndig + n->e10 <= -46)
		return n->neg ? -0.0f : 0.0f;
	if (n->ndig - 1 + n->e10 >= 39)
		return n->neg ? -INFINITY : INFINITY;
	return slow_float(text, len);
}

int engy_sglresp_num_int(const struct jf_num *n, int64_t *out)
{
	if (!n->is_int || n->trunc || n->e10 != 0 || n->m > INT64_MAX)
		return -1;
	*out = n->neg ? -(int64_t)n->m : (int64_t)n->m;
	return 0;
}

int engy_sglresp_parse_float(const char *s, size_t len, float *out)
{
	struct jf_num n;
	long k;

	if (len > ENGY_SGLRESP_NUM_MAX)
		return -E2BIG;
	k = jf_scan_number(s, s + len, true, &n);
	if (k < 0 || (size_t)k != len)
		return -EINVAL;
	*out = jf_num_float(&n, s, len);
	return 0;
}
