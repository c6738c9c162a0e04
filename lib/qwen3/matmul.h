/* SPDX-License-Identifier: MIT */
/*
 * The engine's CPU compute: a small thread pool (the caller plus
 * threads-1 workers) and Y = X W^T for row-major X [n, in], W [out, in].
 *
 * Every output element is one dot product computed in a fixed order
 * (eight lanes striding over k, a fixed lane reduction, then the tail),
 * whatever n, the tile it falls in or the thread that runs it.  So a row's
 * result does not depend on which other rows share the call: prefill,
 * decode and batched decode give bit-identical numbers.
 */
#ifndef Q3_MATMUL_H
#define Q3_MATMUL_H

#include <stdbool.h>
#include <stddef.h>

struct mm_pool;

/* @threads >= 1; 1 runs everything on the caller. */
struct mm_pool *engy_mm_pool_new(unsigned threads);
void engy_mm_pool_free(struct mm_pool *p);
unsigned engy_mm_pool_threads(const struct mm_pool *p);

/*
 * engy_mm_pool_run() - fn(arg, task, thread) for every task in [0, n_tasks),
 * spread over the pool; returns when all are done.  @thread is in
 * [0, threads) and unique among concurrently running tasks (for scratch).
 * Calls on one pool must not overlap.
 */
void engy_mm_pool_run(struct mm_pool *p,
		      void (*fn)(void *arg, size_t task, unsigned thread),
		      void *arg, size_t n_tasks);

/*
 * engy_mm_pool_run_ranges() - the same, each thread first running its own
 * contiguous share of the tasks in order (task t's neighbours on the same
 * thread: a stream of weight rows stays in one core's cache), then
 * helping with the others' last ones.  Which thread runs a task is the
 * only difference.
 */
void engy_mm_pool_run_ranges(struct mm_pool *p,
			     void (*fn)(void *arg, size_t task,
					unsigned thread),
			     void *arg, size_t n_tasks);

/* engy_mm_matmul() - Y [n, out] = X [n, in] . W [out, in]^T (float32 W). */
void engy_mm_matmul(struct mm_pool *p, const float *x, size_t n, const float *w,
		    size_t in, size_t out, float *y);

/* Weight element types: float32, or bfloat16 bits widened on the fly. */
enum mm_wtype {
	MM_F32 = 0,
	MM_BF16 = 1,
};

/* One product of a batch: y [n, out] = x [n, in] . w [out, in]^T. */
struct mm_part {
	const float *x;
	const void *w; /* float or uint16_t (bf16), by @wt */
	float *y;
	size_t n, in, out;
	int wt; /* enum mm_wtype */
};

/*
 * engy_mm_matmul_batch() - several independent products as one pool job (one
 * wake-up and one wait instead of one per product: decode issues many
 * small ones).  Each element comes out exactly as engy_mm_matmul() makes it.
 */
void engy_mm_matmul_batch(struct mm_pool *p, const struct mm_part *parts,
			  size_t n_parts);

/*
 * Kernel profiles: alternative summation orders of the same products, as
 * other hardware computes them (specs/checkpoints.md, "Kernel profiles").
 * Each keeps the row independence above; only MM_PROFILE_REF is the
 * order the auditor recomputes with.  The alternatives use separate
 * multiply and add (no fused multiply-add), so they give the same bits on
 * every CPU.
 *
 * MM_PROFILE_REF     eight lanes striding over k, the tree above (default)
 * MM_PROFILE_SPLITK  split-K: k cut into 4 contiguous slices, each summed
 *                    on its own (8 lanes, lanes added left to right), the
 *                    4 partials added as a pairwise tree: a split-K GEMM
 * MM_PROFILE_WARP32  32 lanes striding over k reduced by a butterfly
 *                    (offsets 16, 8, 4, 2, 1): a warp-per-output GEMV
 * MM_PROFILE_BF16DP  a CPU's bf16 dot-product instruction (AVX512-BF16
 *                    VDPBF16PS, what oneDNN's bf16 GEMMs run): x and w
 *                    rounded to bf16 (nearest, ties to even); k in blocks
 *                    of 32, zero-padded; lane i of 16 adds, as two fused
 *                    multiply-adds each flushed to zero when subnormal
 *                    (inputs too), element 2i+1 then 2i of each block;
 *                    the lanes then summed as a tree (lane i + lane i+8,
 *                    then +4, +2, +1).  The exception to "no fused
 *                    multiply-add": fmaf() is exact on every CPU, and a
 *                    product of two bf16 values is exact anyway.  Only
 *                    bf16 weights: float32 ones (dequantized INT4 or FP8,
 *                    a float32 checkpoint) go the MM_PROFILE_REF order, as
 *                    rounding them to bf16 would change the model (the
 *                    GEMM audit sees it).
 * MM_PROFILE_AMX     a CPU's bf16 tile instruction (AMX-BF16 TDPBF16PS,
 *                    what oneDNN's bf16 GEMMs run where the CPU has it):
 *                    x and w rounded to bf16 as bf16dp's; k in blocks of
 *                    32, zero-padded; in each block the even elements'
 *                    products and the odd ones' summed in two chains of
 *                    fused multiply-adds from zero, the two chains added,
 *                    then that added to the running sum (from zero); every
 *                    step flushed to zero when subnormal (inputs too).
 *                    Float32 weights as bf16dp's.
 */
enum mm_profile {
	MM_PROFILE_REF = 0,
	MM_PROFILE_SPLITK,
	MM_PROFILE_WARP32,
	MM_PROFILE_BF16DP,
	MM_PROFILE_AMX,
};

#define MM_SPLITK_SLICES 4

/* Whether @profile is a CPU's bf16 instruction's (bf16dp, amx): x and w
 * rounded to bf16 inside the kernel, float32 weights in the ref order. */
static inline bool engy_mm_profile_bf16_instr(int profile)
{
	return profile == MM_PROFILE_BF16DP || profile == MM_PROFILE_AMX;
}

/*
 * engy_mm_matmul_batch_profile() - engy_mm_matmul_batch() summing in the
 * order of @profile (MM_PROFILE_REF is engy_mm_matmul_batch() itself).
 */
void engy_mm_matmul_batch_profile(struct mm_pool *p,
				  const struct mm_part *parts, size_t n_parts,
				  int profile);

/* engy_mm_dot() - the same dot product as one element of engy_mm_matmul(). */
float engy_mm_dot(const float *a, const float *b, size_t n);

/*
 * engy_mm_dots() - y[j] = engy_mm_dot(q, k + j * ldk, n) for j < m, the
 * very same bits, four rows of @k at a time (attention's scores against
 * the keys of one KV head, @ldk floats apart).
 */
void engy_mm_dots(const float *q, const float *k, size_t ldk, size_t n,
		  size_t m, float *y);

/*
 * engy_mm_dots_rows() - engy_mm_dots() for @nq queries @ldq floats apart
 * against the same @m keys: y[r * ldy + j], the very same bits, four
 * queries a block (prefill's rows of one sequence share their keys).
 */
void engy_mm_dots_rows(const float *q, size_t ldq, size_t nq, const float *k,
		       size_t ldk, size_t n, size_t m, float *y, size_t ldy);

/* engy_mm_matmul_naive() - the textbook triple loop, one thread (baseline). */
void engy_mm_matmul_naive(const float *x, size_t n, const void *w, int wt,
			  size_t in, size_t out, float *y);

/* The kernel in use: "avx512f", "avx2+fma" or "generic" (the best the CPU
 * has, or ENGY_MM_KERNEL's where the CPU has it).  avx512f gives avx2+fma's
 * bits exactly (the same eight lanes per element, two columns per
 * register). */
const char *engy_mm_kernel_name(void);
/* engy_mm_set_kernel() - use kernel @name from now on, process-wide
 * (tests, benchmarks); -ENOTSUP where the CPU lacks it, -EINVAL for an
 * unknown name. */
int engy_mm_set_kernel(const char *name);
/* engy_mm_amx_set_model() - tests: MM_PROFILE_AMX's tile kernel on a model
 * in C of the tile instructions from now on (on), process-wide, on any
 * CPU; engy_mm_profile_kernel() says "model" meanwhile. */
void engy_mm_amx_set_model(bool on);

/*
 * engy_mm_profile_kernel() - how @profile's products are computed here:
 * for MM_PROFILE_BF16DP "avx512bf16" (the instruction, where the CPU has
 * it, the kernel in use is avx512f, and a self-check at first use found
 * its bits equal to the definition above) or "emulated" (the definition
 * in C, slow); for MM_PROFILE_AMX "amx-bf16" (likewise, and Linux granted
 * the process the tile registers) or "emulated"; "" for the others.
 */
const char *engy_mm_profile_kernel(int profile);

#endif /* Q3_MATMUL_H */
