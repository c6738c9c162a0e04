/* SPDX-License-Identifier: MIT */
/*
 * The matmul kernels of the reference engine (the thread pool they run
 * on is mm_pool.c).
 *
 * The kernels compute each output element as one eight-lane dot product
 * (see matmul.h); the AVX2+FMA variant (here) or the AVX-512F one
 * (matmul_avx512.c) is picked at run time, and the plugin is built with
 * -ffp-contract=off so the generic one never fuses.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "matmul.h"
#include "matmul_int.h"

/* ---- Kernels ---- */

typedef float v8 __attribute__((vector_size(32)));

/* A macro, not a function: returning a 32-byte vector by value without
 * AVX enabled would change the ABI (-Wpsabi). */
#define LD8(dst, p) memcpy(&(dst), (p), sizeof(v8))

static inline __attribute__((always_inline)) void
gen_loadw(v8 *dst, const void *w, int wt, size_t k)
{
	if (wt == MM_BF16) {
		const uint16_t *b = (const uint16_t *)w + k;
		float f[8];
		int i;

		for (i = 0; i < 8; i++)
			f[i] = engy_bf16_to_f32(b[i]);
		memcpy(dst, f, sizeof(f));
	} else {
		LD8(*dst, (const float *)w + k);
	}
}

/* R rows of x against C rows of w; R, C, WT are constants after inlining. */
static inline __attribute__((always_inline)) void
gen_block(const float *x, size_t ldx, const void *w, size_t ldw, size_t in,
	  float *y, size_t ldy, const int R, const int C, const int WT)
{
	v8 acc[4][4], wv[4], xv;
	float l[8];
	size_t k;
	int r, c;

	_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
		_Pragma("GCC unroll 4") for (c = 0; c < C; c++) acc[r][c] =
			(v8){ 0 };
	for (k = 0; k + 8 <= in; k += 8) {
		_Pragma("GCC unroll 4") for (c = 0; c < C; c++)
			gen_loadw(&wv[c], WROW(w, WT, c, ldw), WT, k);
		_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
		{
			LD8(xv, x + r * ldx + k);
			_Pragma("GCC unroll 4") for (c = 0; c < C; c++)
				acc[r][c] = acc[r][c] + xv * wv[c];
		}
	}
	_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
		_Pragma("GCC unroll 4") for (c = 0; c < C; c++)
	{
		memcpy(l, &acc[r][c], sizeof(l));
		y[r * ldy + c] =
			finish(l, x + r * ldx, WROW(w, WT, c, ldw), WT, k, in);
	}
}

#define DISPATCH(BLOCK, x, ldx, w, ldw, in, y, ldy, r, c, WT)                  \
	switch ((r)*8 + (c)) {                                                 \
	case 8 + 1:                                                            \
		BLOCK(x, ldx, w, ldw, in, y, ldy, 1, 1, WT);                   \
		break;                                                         \
	case 8 + 2:                                                            \
		BLOCK(x, ldx, w, ldw, in, y, ldy, 1, 2, WT);                   \
		break;                                                         \
	case 8 + 3:                                                            \
		BLOCK(x, ldx, w, ldw, in, y, ldy, 1, 3, WT);                   \
		break;                                                         \
	case 8 + 4:                                                            \
		BLOCK(x, ldx, w, ldw, in, y, ldy, 1, 4, WT);                   \
		break;                                                         \
	case 16 + 1:                                                           \
		BLOCK(x, ldx, w, ldw, in, y, ldy, 2, 1, WT);                   \
		break;                                                         \
	case 16 + 2:                                                           \
		BLOCK(x, ldx, w, ldw, in, y, ldy, 2, 2, WT);                   \
		break;                                                         \
	case 16 + 3:                                                           \
		BLOCK(x, ldx, w, ldw, in, y, ldy, 2, 3, WT);                   \
		break;                                                         \
	case 32 + 1:                                                           \
		BLOCK(x, ldx, w, ldw, in, y, ldy, 4, 1, WT);                   \
		break;                                                         \
	case 32 + 2:                                                           \
		BLOCK(x, ldx, w, ldw, in, y, ldy, 4, 2, WT);                   \
		break;                                                         \
	case 32 + 3:                                                           \
		BLOCK(x, ldx, w, ldw, in, y, ldy, 4, 3, WT);                   \
		break;                                                         \
	default:                                                               \
		BLOCK(x, ldx, w, ldw, in, y, ldy, 2, 4, WT);                   \
		break;                                                         \
	}

static void gen_dispatch(const float *x, size_t ldx, const void *w, size_t ldw,
			 size_t in, float *y, size_t ldy, int r, int c, int wt)
{
	if (wt == MM_BF16) {
		DISPATCH(gen_block, x, ldx, w, ldw, in, y, ldy, r, c, MM_BF16)
	} else {
		DISPATCH(gen_block, x, ldx, w, ldw, in, y, ldy, r, c, MM_F32)
	}
}

#ifdef MM_X86
#define AVX __attribute__((target("avx2,fma")))

static inline __attribute__((always_inline)) AVX __m256 avx_loadw(const void *w,
								  int wt,
								  size_t k)
{
	if (wt == MM_BF16)
		return _mm256_castsi256_ps(_mm256_slli_epi32(
			_mm256_cvtepu16_epi32(_mm_loadu_si128(
				(const __m128i *)((const uint16_t *)w + k))),
			16));
	return _mm256_loadu_ps((const float *)w + k);
}

static inline __attribute__((always_inline)) AVX void
avx_block(const float *x, size_t ldx, const void *w, size_t ldw, size_t in,
	  float *y, size_t ldy, const int R, const int C, const int WT)
{
	__m256 acc[4][4], wv[4], xv;
	float l[8];
	size_t k;
	int r, c;

	_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
		_Pragma("GCC unroll 4") for (c = 0; c < C; c++) acc[r][c] =
			_mm256_setzero_ps();
	for (k = 0; k + 8 <= in; k += 8) {
		/* A row or two (decode): the weights stream from memory, a
		 * short row at a time; ask for the rows PF_ROWS on. */
		if (R <= 2)
			pf_rows(w, WT, ldw, C, k, 8);
		_Pragma("GCC unroll 4") for (c = 0; c < C; c++) wv[c] =
			avx_loadw(WROW(w, WT, c, ldw), WT, k);
		_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
		{
			xv = _mm256_loadu_ps(x + r * ldx + k);
			_Pragma("GCC unroll 4") for (c = 0; c < C; c++)
				acc[r][c] =
					_mm256_fmadd_ps(xv, wv[c], acc[r][c]);
		}
	}
	_Pragma("GCC unroll 4") for (r = 0; r < R; r++)
		_Pragma("GCC unroll 4") for (c = 0; c < C; c++)
	{
		_mm256_storeu_ps(l, acc[r][c]);
		y[r * ldy + c] =
			finish(l, x + r * ldx, WROW(w, WT, c, ldw), WT, k, in);
	}
}

static AVX void avx_dispatch(const float *x, size_t ldx, const void *w,
			     size_t ldw, size_t in, float *y, size_t ldy, int r,
			     int c, int wt)
{
	if (wt == MM_BF16) {
		DISPATCH(avx_block, x, ldx, w, ldw, in, y, ldy, r, c, MM_BF16)
	} else {
		DISPATCH(avx_block, x, ldx, w, ldw, in, y, ldy, r, c, MM_F32)
	}
}
#endif

/* The kernels, best first; the widest block each takes for four rows and
 * for one or two (the columns of one call). */
struct mm_kernel {
	const char *name;
	block_fn f;
	int c4, c2;
	bool (*usable)(void);
};

#ifdef MM_X86
static bool has_avx2(void)
{
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static bool has_avx512(void)
{
	return has_avx2() && __builtin_cpu_supports("avx512f") &&
	       __builtin_cpu_supports("avx512bw");
}
#endif

static bool has_any(void)
{
	return true;
}

static const struct mm_kernel kernels[] = {
#ifdef MM_X86
	{ "avx512f", engy_mm_z_dispatch, 8, 8, has_avx512 },
	{ "avx2+fma", avx_dispatch, 3, 4, has_avx2 },
#endif
	{ "generic", gen_dispatch, 3, 4, has_any },
};
#define N_KERNELS (sizeof(kernels) / sizeof(kernels[0]))

/* The kernel called @name, or NULL. */
static const struct mm_kernel *named(const char *name)
{
	size_t i;

#ifdef MM_X86
	__builtin_cpu_init();
#endif
	for (i = 0; i < N_KERNELS; i++)
		if (!strcmp(kernels[i].name, name))
			return &kernels[i];
	return NULL;
}

/* ENGY_MM_KERNEL names one to use where the CPU has it (benchmarks,
 * comparisons); otherwise the best the CPU has ("generic", last, always
 * is). */
static const struct mm_kernel *pick(void)
{
	const char *want = getenv("ENGY_MM_KERNEL");
	const struct mm_kernel *k = want ? named(want) : NULL;
	size_t i;

	if (k && k->usable())
		return k;
	for (i = 0; !kernels[i].usable(); i++)
		;
	return &kernels[i];
}

static _Atomic(const struct mm_kernel *) cur;

static const struct mm_kernel *kernel(void)
{
	const struct mm_kernel *k =
		atomic_load_explicit(&cur, memory_order_relaxed);

	if (!k) {
		k = pick();
		atomic_store_explicit(&cur, k, memory_order_relaxed);
	}
	return k;
}

bool engy_mm_kernel_avx512(void)
{
#ifdef MM_X86
	return kernel()->f == engy_mm_z_dispatch;
#else
	return false;
#endif
}

bool engy_mm_kernel_avx2(void)
{
#ifdef MM_X86
	return kernel()->f == avx_dispatch;
#else
	return false;
#endif
}

const char *engy_mm_kernel_name(void)
{
	return kernel()->name;
}

int engy_mm_set_kernel(const char *name)
{
	const struct mm_kernel *k = named(name);

	if (!k)
		return -EINVAL;
	if (!k->usable())
		return -ENOTSUP;
	atomic_store_explicit(&cur, k, memory_order_relaxed);
	return 0;
}

float engy_mm_dot(const float *a, const float *b, size_t n)
{
	float y;

	kernel()->f(a, n, b, n, n, &y, 1, 1, 1, MM_F32);
	return y;
}

void engy_mm_dots_rows(const float *q, size_t ldq, size_t nq, const float *k,
		       size_t ldk, size_t n, size_t m, float *y, size_t ldy)
{
	const struct mm_kernel *kk = kernel();
	size_t r = 0, j, c4 = (size_t)kk->c4, c2 = (size_t)kk->c2;
	int R;

	for (; r + 4 <= nq; r += 4)
		for (j = 0; j < m; j += c4)
			kk->f(q + r * ldq, ldq, k + j * ldk, ldk, n,
			      y + r * ldy + j, ldy, 4,
			      m - j >= c4 ? (int)c4 : (int)(m - j), MM_F32);
	for (; r < nq; r += (size_t)R) {
		R = nq - r >= 2 ? 2 : 1;
		for (j = 0; j < m; j += c2)
			kk->f(q + r * ldq, ldq, k + j * ldk, ldk, n,
			      y + r * ldy + j, ldy, R,
			      m - j >= c2 ? (int)c2 : (int)(m - j), MM_F32);
	}
}

void engy_mm_dots(const float *q, const float *k, size_t ldk, size_t n,
		  size_t m, float *y)
{
	engy_mm_dots_rows(q, n, 1, k, ldk, n, m, y, m);
}

/* ---- Kernel profiles (matmul.h): one output element at a time ---- */

static inline float wat(const void *w, int wt, size_t k)
{
	return wt == MM_BF16 ? engy_bf16_to_f32(((const uint16_t *)w)[k])
			     : ((const float *)w)[k];
}

/* Eight lanes over [k0, k1), then the lanes added left to right.  The
 * vector adds are lane-wise, so these are the scalar loops' very bits. */
static float slice8(const float *a, const void *b, int wt, size_t k0, size_t k1)
{
	v8 acc = { 0 }, xv, wv;
	float l[8], s = 0;
	size_t k;
	int i;

	for (k = k0; k + 8 <= k1; k += 8) {
		LD8(xv, a + k);
		if (wt == MM_BF16)
			gen_loadw(&wv, b, MM_BF16, k);
		else
			gen_loadw(&wv, b, MM_F32, k);
		acc = acc + xv * wv;
	}
	memcpy(l, &acc, sizeof(l));
	for (i = 0; k + (size_t)i < k1; i++)
		l[i] = l[i] + a[k + i] * wat(b, wt, k + i);
	for (i = 0; i < 8; i++)
		s = s + l[i];
	return s;
}

static float dot_splitk(const float *a, const void *b, int wt, size_t n)
{
	/* Slices of a multiple of 8 elements; the last takes the rest. */
	size_t len = (n + MM_SPLITK_SLICES - 1) / MM_SPLITK_SLICES, k0, k1;
	float p[MM_SPLITK_SLICES];
	int s;

	len = (len + 7) / 8 * 8;
	for (s = 0; s < MM_SPLITK_SLICES; s++) {
		k0 = (size_t)s * len < n ? (size_t)s * len : n;
		k1 = k0 + len < n ? k0 + len : n;
		p[s] = slice8(a, b, wt, k0, k1);
	}
	return (p[0] + p[1]) + (p[2] + p[3]);
}

static float dot_warp32(const float *a, const void *b, int wt, size_t n)
{
	v8 acc[4] = { { 0 } }, xv, wv;
	float l[32];
	size_t k;
	int i, off;

	for (k = 0; k + 32 <= n; k += 32)
		for (i = 0; i < 4; i++) {
			LD8(xv, a + k + 8 * i);
			if (wt == MM_BF16)
				gen_loadw(&wv, b, MM_BF16, k + 8 * i);
			else
				gen_loadw(&wv, b, MM_F32, k + 8 * i);
			acc[i] = acc[i] + xv * wv;
		}
	memcpy(l, acc, sizeof(l));
	for (i = 0; k + (size_t)i < n; i++)
		l[i] = l[i] + a[k + i] * wat(b, wt, k + i);
	/* Lane i takes lane i + off, as __shfl_down_sync does. */
	for (off = 16; off; off /= 2)
		for (i = 0; i < off; i++)
			l[i] = l[i] + l[i + off];
	return l[0];
}

/* Columns per task.  A job's tasks go by ranges (engy_mm_pool_run_ranges):
 * each thread streams its own run of weight rows in order, its prefetches
 * (PF_ROWS on) its own next rows, and a thread that finishes early takes
 * the other's last tasks.  For decode (a row or two: the weights are the
 * traffic) runs of 64, narrower on many threads (see the job's setup): a
 * job's end waits for at most a 64-row task (on 2 threads of a Zen 4 VM,
 * the best of 30 64-token decodes, five interleaved rounds: 1.05x as fast
 * as 256-column tasks handed out in turn, the earlier scheme; 32, 128 and
 * 256 by ranges within 3% of 64); 48 for prefill, where every task streams
 * all of x once (a multiple of the 4x3 block's 3: x read a third as often
 * as with 16); 16 between. */
#define COLS_PER_TASK	   16
#define COLS_PER_TASK_FEW  64 /* every part a row or two: decode */
#define COLS_PER_TASK_MANY 48
#define ROWS_MANY	   16
#define TASKS_PER_THREAD   4 /* a decode job's fewest, where columns allow */
#define MAX_PARTS	   512

struct mm_job {
	const struct mm_part *parts;
	size_t n_parts;
	size_t first[MAX_PARTS + 1]; /* first task of each part */
	size_t cols;		     /* per task */
	const struct mm_kernel *k;
	int profile; /* enum mm_profile */
	/* MM_PROFILE_BF16DP or MM_PROFILE_AMX on the instruction: each
	 * part's x as engy_mm_x_prepare() made it (NULL: that part by the
	 * definition in C) */
	const void *xb[MAX_PARTS];
};

static void profile_cols(const struct mm_job *j, const struct mm_part *pt,
			 size_t c0, size_t c1)
{
	size_t r, c;

	for (r = 0; r < pt->n; r++)
		for (c = c0; c < c1; c++) {
			const float *x = pt->x + r * pt->in;
			const void *w = WROW(pt->w, pt->wt, c, pt->in);

			pt->y[r * pt->out + c] =
				j->profile == MM_PROFILE_SPLITK
					? dot_splitk(x, w, pt->wt, pt->in)
				: j->profile == MM_PROFILE_WARP32
					? dot_warp32(x, w, pt->wt, pt->in)
				: j->profile == MM_PROFILE_AMX
					? engy_mm_amx_dot(x, w, pt->in)
					: engy_mm_bd_dot(x, w, pt->in);
		}
}

static void mm_task(void *arg, size_t task, unsigned thread);

/* Decode: a part's last task asks for the first PF_ROWS rows of the next
 * part, whose stream starts cold (the kernel's own prefetches, PF_ROWS
 * rows on, fall past the end of this matrix there): the rows lie end to
 * end, one run of bytes. */
static void pf_part(const struct mm_part *pt)
{
	const char *end = WROW(pt->w, pt->wt,
			       pt->out < PF_ROWS ? pt->out : PF_ROWS, pt->in);
	const char *at;

	for (at = pt->w; at < end; at += 64)
		__builtin_prefetch(at, 0, 2);
}

/* @j's tasks, after what its profile needs done first. */
static void run_job(struct mm_pool *p, struct mm_job *j, size_t tasks)
{
	void *buf = NULL;

	if (!tasks)
		return;
	if (engy_mm_profile_bf16_instr(j->profile)) {
		memset(j->xb, 0, j->n_parts * sizeof(j->xb[0]));
		if (j->profile == MM_PROFILE_AMX ? engy_mm_amx_fast()
						 : engy_mm_bd_fast())
			buf = engy_mm_x_prepare(p, j->parts, j->n_parts, j->xb,
						j->profile);
	}
	engy_mm_pool_run_ranges(p, mm_task, j, tasks);
	free(buf);
}

static void mm_task(void *arg, size_t task, unsigned thread)
{
	const struct mm_job *j = arg;
	const struct mm_part *pt;
	size_t lo = 0, hi = j->n_parts, c0, c1, r, c, c4, c2;

	/* The part holding this task: the last with first <= task. */
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (j->first[mid] <= task)
			lo = mid;
		else
			hi = mid;
	}
	pt = &j->parts[lo];
	c0 = (task - j->first[lo]) * j->cols;
	c1 = c0 + j->cols < pt->out ? c0 + j->cols : pt->out;
	if (engy_mm_profile_bf16_instr(j->profile) && pt->wt == MM_BF16) {
		if (!j->xb[lo])
			profile_cols(j, pt, c0, c1);
		else if (j->profile == MM_PROFILE_AMX)
			engy_mm_amx_cols(pt, j->xb[lo], c0, c1);
		else
			engy_mm_bd_cols(pt, j->xb[lo], c0, c1);
		return;
	}
	/* (their float32 weights go the ref order: matmul.h) */
	if (j->profile != MM_PROFILE_REF &&
	    !engy_mm_profile_bf16_instr(j->profile)) {
		profile_cols(j, pt, c0, c1);
		return;
	}
	/* Four rows against the kernel's widest block (AVX2: three
	 * columns, 12 accumulators: fewer loads and bf16 widenings per
	 * multiply-add than 2x4), then what is left in pairs.  Every element
	 * is the same dot product either way. */
	c4 = (size_t)j->k->c4;
	c2 = (size_t)j->k->c2;
	if (pt->n <= 2 && c1 == pt->out && lo + 1 < j->n_parts)
		pf_part(&j->parts[lo + 1]);
	for (r = 0; r + 4 <= pt->n; r += 4)
		for (c = c0; c < c1; c += c4) {
			int C = c1 - c >= c4 ? (int)c4 : (int)(c1 - c);

			j->k->f(pt->x + r * pt->in, pt->in,
				WROW(pt->w, pt->wt, c, pt->in), pt->in, pt->in,
				pt->y + r * pt->out + c, pt->out, 4, C, pt->wt);
		}
	for (; r < pt->n; r += 2) {
		int R = pt->n - r >= 2 ? 2 : 1;

		for (c = c0; c < c1; c += c2) {
			int C = c1 - c >= c2 ? (int)c2 : (int)(c1 - c);

			j->k->f(pt->x + r * pt->in, pt->in,
				WROW(pt->w, pt->wt, c, pt->in), pt->in, pt->in,
				pt->y + r * pt->out + c, pt->out, R, C, pt->wt);
		}
	}
}

void engy_mm_matmul_batch(struct mm_pool *p, const struct mm_part *parts,
			  size_t n_parts)
{
	engy_mm_matmul_batch_profile(p, parts, n_parts, MM_PROFILE_REF);
}

void engy_mm_matmul_batch_profile(struct mm_pool *p,
				  const struct mm_part *parts, size_t n_parts,
				  int profile)
{
	struct mm_job j;
	size_t i, tasks = 0, k = 0;

	j.k = kernel();
	j.profile = profile;
	j.cols = COLS_PER_TASK;
	while (n_parts > MAX_PARTS) {
		engy_mm_matmul_batch_profile(p, parts, MAX_PARTS, profile);
		parts += MAX_PARTS;
		n_parts -= MAX_PARTS;
	}
	/* Empty products take no task (and no slot in the search). */
	j.parts = parts;
	for (i = 0; i < n_parts && parts[i].n <= 2; i++)
		;
	if (i == n_parts) {
		/* Decode: runs of COLS_PER_TASK_FEW, or of fewer columns (a
		 * multiple of 16, at least 16) where those would leave a thread
		 * fewer than TASKS_PER_THREAD tasks: a 512-column o_proj is 8
		 * tasks of 64, half of 16 threads idle.  (Two threads keep 64
		 * on every matmul of a 512-wide model.) */
		size_t cols = 0, per;

		for (i = 0; i < n_parts; i++)
			cols += parts[i].n ? parts[i].out : 0;
		per = cols / (TASKS_PER_THREAD * engy_mm_pool_threads(p));
		per = (per + 15) & ~(size_t)15;
		j.cols = per < COLS_PER_TASK	   ? COLS_PER_TASK
			 : per > COLS_PER_TASK_FEW ? COLS_PER_TASK_FEW
						   : per;
	}
	for (i = 0; i < n_parts; i++)
		if (parts[i].n >= ROWS_MANY)
			j.cols = COLS_PER_TASK_MANY;
	for (i = 0; i < n_parts; i++) {
		if (!parts[i].n || !parts[i].out)
			continue;
		j.first[k] = tasks;
		tasks += (parts[i].out + j.cols - 1) / j.cols;
		k++;
	}
	if (k < n_parts) {
		/* Rare: compact a copy without the empty ones. */
		struct mm_part tmp[MAX_PARTS];

		for (i = 0, k = 0; i < n_parts; i++)
			if (parts[i].n && parts[i].out)
				tmp[k++] = parts[i];
		j.parts = tmp;
		j.n_parts = k;
		j.first[k] = tasks;
		run_job(p, &j, tasks);
		return;
	}
	j.n_parts = k;
	j.first[k] = tasks;
	run_job(p, &j, tasks);
}

void engy_mm_matmul(struct mm_pool *p, const float *x, size_t n, const float *w,
		    size_t in, size_t out, float *y)
{
	struct mm_part part = { x, w, y, n, in, out, MM_F32 };

	engy_mm_matmul_batch(p, &part, 1);
}

void engy_mm_matmul_naive(const float *x, size_t n, const void *w, int wt,
			  size_t in, size_t out, float *y)
{
	const uint16_t *wb = w;
	const float *wf = w;
	size_t r, c, k;

	for (r = 0; r < n; r++)
		for (c = 0; c < out; c++) {
			float s = 0;

			for (k = 0; k < in; k++)
				s += x[r * in + k] *
				     (wt == MM_BF16
					      ? engy_bf16_to_f32(wb[c * in + k])
					      : wf[c * in + k]);
			y[r * out + c] = s;
		}
}
