/* SPDX-License-Identifier: MIT */
/*
 * TOPLOC kernels for x86-64 with AVX2, chosen at run time (cpuid through
 * __builtin_cpu_supports), and the choice itself.  Each gives exactly the
 * portable path's output (tests/unit/check_toploc.c compares them on random
 * input; ENGY_TOPLOC_SIMD=scalar forces the portable path).
 *
 * Interpolation is the portable path's algorithm (Newton divided
 * differences, then the nested expansion) with sixteen field elements per
 * vector, one per 16-bit lane.  Products use Montgomery reduction with
 * R = 2^16: for a, b < p, a*b = hi*R + lo, t = lo * p^-1 mod R, and
 * (a*b - t*p) / R = hi - mulhi(t, p) lies in (-p, p) and is a*b/R mod p.
 * A factor stored premultiplied by R (the inverse table below, each
 * expansion root) therefore gives the plain product; a factor shared by
 * all lanes also comes with t's multiplier premultiplied, saving one
 * multiply.  Every value stays canonical in [0, p), so the coefficients
 * are the portable path's bit for bit, duplicate x included (inv(0) = 0
 * in both).  The divided differences need one inverse per pair of points,
 * for a group of levels at a time: batch inversion (inv_batch) turns them
 * into three products each and one table load per 16-lane chain, where a
 * table load each (scalar or vpgatherdd) took twice as long, every one an
 * L2 access into the 128 KiB table.
 *
 * The verifier's evaluation (engy_toploc_eval_avx2) is Horner at 128 points
 * at once, the same Montgomery products.  Top-k (engy_toploc_topk_avx2)
 * finds its candidates from lane-wise maxima instead of a sample; see
 * there.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "toploc.h"
#include "toploc_int.h"

#define P ENGY_TOPLOC_PRIME

static int isa_default;
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TOPLOC_X86 1
#include <immintrin.h>
#endif

static int env_forces_scalar(void)
{
	const char *e = getenv("ENGY_TOPLOC_SIMD");

	return e && (!strcmp(e, "0") || !strcasecmp(e, "off") ||
		     !strcasecmp(e, "scalar"));
}

static void isa_init(void)
{
	isa_default = ENGY_TOPLOC_ISA_SCALAR;
	if (env_forces_scalar())
		return;
#ifdef TOPLOC_X86
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		isa_default = ENGY_TOPLOC_ISA_AVX2;
#endif
}

int engy_toploc_isa_default(void)
{
	pthread_once(&isa_once, isa_init);
	return isa_default;
}

const char *engy_toploc_simd(void)
{
	return engy_toploc_isa_default() == ENGY_TOPLOC_ISA_AVX2 ? "avx2"
								 : "scalar";
}

#ifdef TOPLOC_X86

#define AVX2 __attribute__((target("avx2")))
#define INL  static inline __attribute__((always_inline)) AVX2

#define R_MOD_P 39u    /* 2^16 mod p */
#define P_INV	36969u /* p^-1 mod 2^16 */

/* inv(d) * R mod p for every d (0 for 0), built once on first use. */
static uint16_t invr_tab[P + 1];
static pthread_once_t invr_once = PTHREAD_ONCE_INIT;

static void invr_init(void)
{
	const uint16_t *inv = engy_toploc_inv_table();
	uint32_t d;

	for (d = 0; d < P; d++)
		invr_tab[d] = (uint16_t)(inv[d] * R_MOD_P % P);
}

/* (a - b) mod p for a in [0, p), b in [0, p]. */
INL __m256i sub_mod(__m256i a, __m256i b, __m256i p)
{
	__m256i d = _mm256_sub_epi16(a, b);
	__m256i ge = _mm256_cmpeq_epi16(_mm256_max_epu16(a, b), a);

	return _mm256_add_epi16(d, _mm256_andnot_si256(ge, p));
}

/* (a + b) mod p for a, b in [0, p). */
INL __m256i add_mod(__m256i a, __m256i b, __m256i p)
{
	return sub_mod(a, _mm256_sub_epi16(p, b), p);
}

/* a * b / R mod p for a, b in [0, p). */
INL __m256i mont_mul(__m256i a, __m256i b, __m256i p, __m256i pinv)
{
	__m256i lo = _mm256_mullo_epi16(a, b);
	__m256i hi = _mm256_mulhi_epu16(a, b);
	__m256i t = _mm256_mullo_epi16(lo, pinv);

	return sub_mod(hi, _mm256_mulhi_epu16(t, p), p);
}

/* The same with b's twin bt = b * p^-1 mod R given (b shared by lanes, or
 * kept with its twin: one multiply fewer). */
INL __m256i mont_mul_tw(__m256i a, __m256i b, __m256i bt, __m256i p)
{
	__m256i hi = _mm256_mulhi_epu16(a, b);
	__m256i t = _mm256_mullo_epi16(a, bt);

	return sub_mod(hi, _mm256_mulhi_epu16(t, p), p);
}

#define IB_CAP 8192 /* inverses gathered at once (16 KiB) */
#define IB_CH  8    /* inv_batch's chains of 16 lanes */

#define LD(p)	 _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define ST(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), (v))

/* @a with its zero lanes made 1. */
INL __m256i nonzero(__m256i a)
{
	__m256i z = _mm256_cmpeq_epi16(a, _mm256_setzero_si256());

	return _mm256_or_si256(a, _mm256_and_si256(z, _mm256_set1_epi16(1)));
}

/*
 * Every d of @v[0..n) (n a multiple of 16, each d < p) replaced by inv(d) *
 * R mod p, what invr_tab holds (0 for 0), through Montgomery's batch
 * inversion: vector s * IB_CH + c belongs to chain c, so the IB_CH chains'
 * products are independent and hide each other's latency.  With plain
 * products M(a, b) = a * b / R, a chain's prefixes are Q_s = A_s * R^-s (A_s
 * the product of its first s + 1 values, a zero counted as 1) and I_s =
 * inv(A_s) * R^(s+1) starts from the table's entry for the last prefix;
 * then M(I_s, Q_(s-1)) = inv(d_s) * R and I_(s-1) = M(I_s, d_s).  @v and
 * @q hold IB_CH * 16 entries past IB_CAP: the last round is padded with 1.
 */
AVX2 static void inv_batch(uint16_t *v, size_t n, uint16_t *q, __m256i p,
			   __m256i pinv)
{
	const __m256i zero = _mm256_setzero_si256();
	size_t rounds = (n / 16 + IB_CH - 1) / IB_CH, s, c, i;
	__m256i acc[IB_CH];
	uint16_t t[16 * IB_CH];

	for (i = n; i < rounds * IB_CH * 16; i += 16)
		ST(v + i, _mm256_set1_epi16(1));
	for (c = 0; c < IB_CH; c++) {
		acc[c] = nonzero(LD(v + 16 * c));
		ST(q + 16 * c, acc[c]);
	}
	for (s = 1; s < rounds; s++)
		for (c = 0; c < IB_CH; c++) {
			size_t o = 16 * (s * IB_CH + c);

			acc[c] = mont_mul(acc[c], nonzero(LD(v + o)), p, pinv);
			ST(q + o, acc[c]);
		}
	for (c = 0; c < IB_CH; c++)
		ST(t + 16 * c, acc[c]);
	for (i = 0; i < 16 * IB_CH; i++)
		t[i] = invr_tab[t[i]];
	for (c = 0; c < IB_CH; c++)
		acc[c] = LD(t + 16 * c); /* I of the last round */
	for (s = rounds; s-- > 0;)
		for (c = 0; c < IB_CH; c++) {
			size_t o = 16 * (s * IB_CH + c);
			__m256i d = LD(v + o), r = acc[c];

			if (s) {
				r = mont_mul(acc[c], LD(q + o - 16 * IB_CH), p,
					     pinv);
				acc[c] = mont_mul(acc[c], nonzero(d), p, pinv);
			}
			ST(v + o,
			   _mm256_andnot_si256(_mm256_cmpeq_epi16(d, zero), r));
		}
}

/*
 * Buffers of k + 16 entries: a block of 16 lanes starting below k may run
 * into the padding, whose lanes are computed and never used.
 */
AVX2 int engy_toploc_interp_avx2(const uint32_t *x, const uint16_t *y, size_t k,
				 uint16_t *coeffs)
{
	enum { STACK_K = 256, NBUF = 5 };
	uint16_t stack[NBUF * (STACK_K + 32)], *mem = stack;
	uint16_t ibuf[IB_CAP + 16 * IB_CH], qbuf[IB_CAP + 16 * IB_CH];
	uint16_t *xs, *a, *b, *t, *nc, *c;
	const __m256i p = _mm256_set1_epi16((short)P);
	const __m256i pinv = _mm256_set1_epi16((short)P_INV);
	size_t len = (k + 32) & ~(size_t)15, i, j, j0, j1, n, o;

	pthread_once(&invr_once, invr_init);
	if (k + 15 > IB_CAP) /* a level must fit the inverse buffer */
		return -ENOMEM;
	if (k > STACK_K) {
		mem = malloc(NBUF * len * sizeof(*mem));
		if (!mem)
			return -ENOMEM;
	}
	memset(mem, 0, NBUF * len * sizeof(*mem));
	xs = mem;
	a = xs + len;
	b = a + len;
	nc = b + len;
	c = nc + len + 16; /* c[-1] is the constant term's addend */
	for (i = 0; i < k; i++) {
		xs[i] = (uint16_t)x[i];
		a[i] = (uint16_t)(y[i] >= P ? y[i] - P : y[i]);
	}

	/* Divided differences, level j: a holds level j - 1, b gets level j
	 * for i >= j; the first entry of each level is a Newton coefficient.
	 * The inverses come first for a group of levels, in one batch, each
	 * level's right after the last (its block's padding lanes are the
	 * next level's to overwrite). */
	nc[0] = a[0];
	for (j0 = 1; j0 < k; j0 = j1) {
		for (j1 = j0, n = 0; j1 < k; n += k - j1++) {
			size_t cnt = (k - j1 + 15) & ~(size_t)15;

			if (n + cnt > IB_CAP)
				break;
			for (i = 0; i < cnt; i += 16)
				ST(ibuf + n + i,
				   sub_mod(LD(xs + j1 + i), LD(xs + i), p));
		}
		inv_batch(ibuf, (n + 15) & ~(size_t)15, qbuf, p, pinv);
		for (j = j0, o = 0; j < j1; o += k - j++) {
			for (i = 0; i < k - j; i += 16) {
				__m256i num = sub_mod(LD(a + j + i),
						      LD(a + j + i - 1), p);

				ST(b + j + i,
				   mont_mul(num, LD(ibuf + o + i), p, pinv));
			}
			nc[j] = b[j];
			t = a;
			a = b;
			b = t;
		}
	}

	/* Nested expansion c <- c * (X - x_i) + nc[i], i = k-2 .. 0, as
	 * c[t] <- c[t] * (p - x_i) + c[t - 1] over t = 0 .. deg + 1 with
	 * c[-1] = nc[i]; blocks run downwards so each reads the old c[t-1]. */
	c[0] = nc[k - 1];
	for (i = k - 1; i-- > 0;) {
		size_t top = (k - 1 - i) & ~(size_t)15; /* block of deg + 1 */
		uint16_t nr = (uint16_t)((P - x[i]) * R_MOD_P % P);
		__m256i vn = _mm256_set1_epi16((short)nr);
		__m256i vt = _mm256_set1_epi16((short)(uint16_t)(nr * P_INV));

		c[-1] = nc[i];
		for (j = top + 16; j > 0;) {
			j -= 16;
			ST(c + j, add_mod(mont_mul_tw(LD(c + j), vn, vt, p),
					  LD(c + j - 1), p));
		}
	}
	memcpy(coeffs, c, k * sizeof(*coeffs));
	if (mem != stack)
		free(mem);
	return 0;
}

#define EV_VECS 8 /* points evaluated at once: 8 vectors of 16 */

/*
 * Horner at up to EV_VECS * 16 points at once, one vector per 16 points:
 * r <- r * x + c_j is a Montgomery product with x kept as x * R (and its
 * twin), then a modular addition, every value canonical, so the results
 * are the portable path's.  The points' vectors are independent: their
 * products hide each other's latency.
 */
AVX2 void engy_toploc_eval_avx2(const uint16_t *c, size_t k, const uint32_t *x,
				uint32_t *r, size_t n)
{
	const __m256i p = _mm256_set1_epi16((short)P);
	const __m256i pinv = _mm256_set1_epi16((short)P_INV);
	const __m256i r2 = _mm256_set1_epi16((short)(R_MOD_P * R_MOD_P % P));
	uint16_t buf[16 * EV_VECS];
	__m256i xr[EV_VECS], xt[EV_VECS], acc[EV_VECS];
	size_t i0, i, j, v, cnt;

	for (i0 = 0; i0 < n; i0 += cnt) {
		cnt = n - i0 < 16 * EV_VECS ? n - i0 : 16 * EV_VECS;
		memset(buf, 0, sizeof(buf));
		for (i = 0; i < cnt; i++)
			buf[i] = (uint16_t)x[i0 + i];
		for (v = 0; v < EV_VECS; v++) {
			xr[v] = mont_mul(LD(buf + 16 * v), r2, p, pinv);
			xt[v] = _mm256_mullo_epi16(xr[v], pinv);
			acc[v] = _mm256_set1_epi16((short)c[k - 1]);
		}
		for (j = k - 1; j-- > 0;) {
			__m256i cj = _mm256_set1_epi16((short)c[j]);

			for (v = 0; v < EV_VECS; v++)
				acc[v] = add_mod(
					mont_mul_tw(acc[v], xr[v], xt[v], p),
					cj, p);
		}
		for (v = 0; v < EV_VECS; v++)
			ST(buf + 16 * v, acc[v]);
		for (i = 0; i < cnt; i++)
			r[i0 + i] = buf[i];
	}
}

/* How many of the keys of @v[0..n) (n a multiple of 16) are >= @t. */
INL size_t count_ge(const uint16_t *v, size_t n, unsigned t)
{
	const __m256i keys = _mm256_set1_epi16(0x7FFF);
	const __m256i below = _mm256_set1_epi16((short)(t - 1));
	const __m256i ones = _mm256_set1_epi16(1);
	__m256i sum = _mm256_setzero_si256();
	__m128i s;
	size_t i, j;

	/* Each 16-bit lane counts at most 2048 before widening. */
	for (i = 0; i < n; i = j) {
		__m256i acc = _mm256_setzero_si256();

		for (j = i; j < n && j < i + 16 * 2048; j += 16)
			acc = _mm256_sub_epi16(
				acc, _mm256_cmpgt_epi16(
					     _mm256_and_si256(LD(v + j), keys),
					     below));
		sum = _mm256_add_epi32(sum, _mm256_madd_epi16(acc, ones));
	}
	s = _mm_add_epi32(_mm256_castsi256_si128(sum),
			  _mm256_extracti128_si256(sum, 1));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
	return (size_t)_mm_cvtsi128_si32(s);
}

/*
 * The @k-th largest key of @v[0..n) (n a multiple of 16, 1 <= k <= n) by
 * bisection over the 15-bit keys, and in *@above how many keys exceed it.
 */
INL unsigned kth_key(const uint16_t *v, size_t n, size_t k, size_t *above)
{
	unsigned lo = 0, hi = 0x8000, mid; /* count(lo) >= k > count(hi) */
	size_t c_hi = 0, c;

	while (hi - lo > 1) {
		mid = (lo + hi) / 2;
		c = count_ge(v, n, mid);
		if (c >= k) {
			lo = mid;
		} else {
			hi = mid;
			c_hi = c;
		}
	}
	*above = c_hi;
	return lo;
}

/*
 * Top-k for chunks of at least 32 k values: the lowest-index @k values of
 * the largest keys of @v[0..n), as ascending indices into @idx.
 *
 * The chunk is cut into tiles of V vectors (16 V values, V a multiple of
 * 8); lane l of a tile is a group of V values.  One pass takes lane-wise
 * maxima of keys, keeping them per block of 8 vectors (@l1, n / 8
 * entries) and per tile (@l2, at most 8 k entries).  At least k values
 * have a key >= the k-th largest of the 16 * tiles group maxima, so every
 * top-k key is at or above that threshold; with about 4k groups few more
 * than k values are, on hidden states.  Only the blocks whose maximum
 * reaches it are read again, then any values after the last tile: the
 * candidates (@cv, @ci, @cap entries plus 16 of padding) are every value
 * at or above the threshold, in index order, and the top k of those by
 * key, ties to the lower index, are the chunk's.
 *
 * Returns 0, 1 when the chunk is too small for tiles, 2 when the
 * candidates do not fit (then @idx is to be ignored).
 */
AVX2 int engy_toploc_topk_avx2(const uint16_t *v, size_t n, size_t k,
			       uint16_t *l1, uint16_t *l2, uint16_t *cv,
			       uint64_t *ci, size_t cap, uint64_t *idx)
{
	const __m256i keys = _mm256_set1_epi16(0x7FFF);
	size_t V = (n / (4 * k)) & ~(size_t)7, tiles, t, q, g, r, c = 0;
	size_t i, o, above, ties;
	__m256i below;
	unsigned thr;

	if (V < 8)
		return 1;
	tiles = n / (16 * V);
	if (16 * tiles < 2 * k)
		return 1;
	for (t = 0, g = 0; t < tiles; t++) {
		__m256i m2 = _mm256_setzero_si256();

		for (q = 0; q < V / 8; q++, g++) {
			const uint16_t *p = v + 128 * g;
			/* Four chains, unrolled: 15 vector operations. */
			__m256i c0 = _mm256_and_si256(LD(p), keys);
			__m256i c1 = _mm256_and_si256(LD(p + 16), keys);
			__m256i c2 = _mm256_and_si256(LD(p + 32), keys);
			__m256i c3 = _mm256_and_si256(LD(p + 48), keys);
			__m256i m0;

			c0 = _mm256_max_epu16(
				c0, _mm256_and_si256(LD(p + 64), keys));
			c1 = _mm256_max_epu16(
				c1, _mm256_and_si256(LD(p + 80), keys));
			c2 = _mm256_max_epu16(
				c2, _mm256_and_si256(LD(p + 96), keys));
			c3 = _mm256_max_epu16(
				c3, _mm256_and_si256(LD(p + 112), keys));
			m0 = _mm256_max_epu16(_mm256_max_epu16(c0, c1),
					      _mm256_max_epu16(c2, c3));
			ST(l1 + 16 * g, m0);
			m2 = _mm256_max_epu16(m2, m0);
		}
		ST(l2 + 16 * t, m2);
	}
	thr = kth_key(l2, 16 * tiles, k, &above);

	/* key >= thr as a signed compare: keys and thr - 1 are < 2^15. */
	below = _mm256_set1_epi16((short)(thr - 1));
	for (q = 0; q < g; q++) {
		if (_mm256_testz_si256(
			    _mm256_cmpgt_epi16(LD(l1 + 16 * q), below),
			    _mm256_set1_epi16(-1)))
			continue;
		for (r = 0; r < 8; r += 2) {
			const uint16_t *p = v + 128 * q + 16 * r;
			uint64_t bits =
				(uint64_t)(uint32_t)_mm256_movemask_epi8(
					_mm256_cmpgt_epi16(
						_mm256_and_si256(LD(p + 16),
								 keys),
						below))
					<< 32 |
				(uint32_t)_mm256_movemask_epi8(
					_mm256_cmpgt_epi16(
						_mm256_and_si256(LD(p), keys),
						below));

			/* Two mask bits per lane; keep the low one of each. */
			for (bits &= 0x5555555555555555ull; bits;
			     bits &= bits - 1) {
				size_t l = (size_t)__builtin_ctzll(bits) / 2;

				if (c == cap)
					return 2;
				cv[c] = p[l];
				ci[c++] = 128 * q + 16 * r + l;
			}
		}
	}
	for (i = 128 * g; i < n; i++) {
		if ((v[i] & 0x7FFFu) < thr)
			continue;
		if (c == cap)
			return 2;
		cv[c] = v[i];
		ci[c++] = i;
	}

	/* The k-th largest candidate key, and how many ties at it to take. */
	memset(cv + c, 0, 16 * sizeof(*cv)); /* keys 0: never counted */
	thr = kth_key(cv, (c + 15) & ~(size_t)15, k, &above);
	ties = k - above;
	for (i = 0, o = 0; o < k && i < c; i++) {
		unsigned key = cv[i] & 0x7FFFu;

		if (key > thr || (key == thr && ties > 0)) {
			if (key == thr)
				ties--;
			idx[o++] = ci[i];
		}
	}
	return o == k ? 0 : 2; /* never 2: at least k are >= thr */
}

#else /* !TOPLOC_X86: never chosen */

void engy_toploc_eval_avx2(const uint16_t *c, size_t k, const uint32_t *x,
			   uint32_t *r, size_t n)
{
	(void)c;
	(void)k;
	(void)x;
	(void)r;
	(void)n;
}

int engy_toploc_topk_avx2(const uint16_t *v, size_t n, size_t k, uint16_t *l1,
			  uint16_t *l2, uint16_t *cv, uint64_t *ci, size_t cap,
			  uint64_t *idx)
{
	return 1;
}

#endif
