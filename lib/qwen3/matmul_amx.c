/* SPDX-License-Identifier: MIT */
/*
 * MM_PROFILE_AMX (matmul.h): the definition in C, and the AMX-BF16 tile
 * kernel that gives its bits where the CPU has the instruction, Linux
 * lets this process use the tile registers, and a self-check at first
 * use says so.
 *
 * The kernel computes y^T = W x^T: a tile of 16 weight rows, 32 elements
 * each, is read straight from the weights (the instruction's first
 * operand, a row per output column), and x is packed once per matmul into
 * the pair layout of the second operand (engy_mm_amx_pack).  No weight is
 * copied, except the few rows and columns at a matrix's edge that would
 * read past it (zero-padded, as the definition pads).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "matmul.h"
#include "matmul_int.h"

#ifdef MM_X86
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* The definition, one element (bf16 weights): the instruction's bits.
 * Per block of 32 elements (zero-padded), the even elements' products and
 * the odd ones' summed in two chains from zero, then the two added, then
 * that added to the running sum: TDPBF16PS's order with K = 32, each step
 * rounded to nearest even and flushed to zero when subnormal (inputs
 * too).  fmaf() is exact everywhere, and the product of two bf16 values
 * is exact anyway. */
float engy_mm_amx_dot(const float *a, const uint16_t *b, size_t n)
{
	float c = 0.0f, e, o;
	size_t k, p;

	for (k = 0; k < n; k += 32) {
		e = o = 0.0f;
		for (p = k; p < k + 32; p += 2) {
			e = ftz(fmaf(bd_x(a, p, n), bd_w(b, p, n), e));
			o = ftz(fmaf(bd_x(a, p + 1, n), bd_w(b, p + 1, n), o));
		}
		c = ftz(c + ftz(e + o));
	}
	return c;
}

void engy_mm_amx_pack(const float *x, size_t rows, size_t in, void *dst)
{
	uint32_t *t = dst;
	size_t kb, p, r, k;

	for (kb = 0; kb < (in + 31) / 32; kb++, t += 256)
		for (p = 0; p < 16; p++)
			for (r = 0; r < 16; r++) {
				uint32_t lo = 0, hi = 0;

				k = kb * 32 + 2 * p;
				if (r < rows && k < in)
					lo = engy_bf16_from_f32(x[r * in + k]);
				if (r < rows && k + 1 < in)
					hi = engy_bf16_from_f32(
						x[r * in + k + 1]);
				t[p * 16 + r] = lo | hi << 16;
			}
}

/*
 * The tile kernel, written once (matmul_amx_kernel.h) over six tile
 * operations: AMX's where the CPU has them, and a model in C of the
 * same operations, TDPBF16PS's description step by step, that the tests
 * run on every CPU (engy_mm_amx_set_model): the packing, the edges and
 * the tiles' bookkeeping are checked everywhere, the instruction itself
 * where it exists (its self-check below, and the tests).
 */

/* ---- the model: eight 1 KiB tiles in memory ---- */

struct amx_tiles {
	_Alignas(64) unsigned char tile[8][1024];
};

static void m_load(struct amx_tiles *tm, int t, const void *p, size_t stride)
{
	int r;

	for (r = 0; r < 16; r++)
		memcpy(tm->tile[t] + r * 64, (const char *)p + r * stride, 64);
}

static void m_store(struct amx_tiles *tm, int t, void *p, size_t stride)
{
	int r;

	for (r = 0; r < 16; r++)
		memcpy((char *)p + r * stride, tm->tile[t] + r * 64, 64);
}

static float m_bf16(const unsigned char *at) /* DAZ */
{
	uint16_t h;

	memcpy(&h, at, 2);
	return ftz(engy_bf16_to_f32(h));
}

/* TDPBF16PS c += a b: row m of a (16 bf16 pairs), row k of b (16 pairs,
 * one for each column n); per row m, two chains for each n from zero over
 * k, then their sum into c. */
static void m_dp(struct amx_tiles *tm, int c, int a, int b)
{
	float e[16], o[16], acc;
	int m, k, n;

	for (m = 0; m < 16; m++) {
		for (n = 0; n < 16; n++)
			e[n] = o[n] = 0.0f;
		for (k = 0; k < 16; k++)
			for (n = 0; n < 16; n++) {
				const unsigned char *ra = tm->tile[a] + m * 64,
						    *rb = tm->tile[b] + k * 64;

				e[n] = ftz(fmaf(m_bf16(ra + 4 * k),
						m_bf16(rb + 4 * n), e[n]));
				o[n] = ftz(fmaf(m_bf16(ra + 4 * k + 2),
						m_bf16(rb + 4 * n + 2), o[n]));
			}
		for (n = 0; n < 16; n++) {
			memcpy(&acc, tm->tile[c] + m * 64 + 4 * n, 4);
			acc = ftz(acc + ftz(e[n] + o[n]));
			memcpy(tm->tile[c] + m * 64 + 4 * n, &acc, 4);
		}
	}
}

#define KNAME		      amx_cols_model
#define KATTR		      /* C */
#define T_STATE		      struct amx_tiles tm
#define T_CFG()		      (void)0
#define T_REL()		      (void)0
#define T_ZERO(t)	      memset(tm.tile[t], 0, 1024)
#define T_LOAD(t, p, stride)  m_load(&tm, t, p, stride)
#define T_STORE(t, p, stride) m_store(&tm, t, p, stride)
#define T_DP(c, a, b)	      m_dp(&tm, c, a, b)
#include "matmul_amx_kernel.h"

#ifdef MM_X86
/* ---- the instruction ---- */

#define AMX __attribute__((target("amx-tile,amx-bf16")))

/* Palette 1: tiles 0-3 the sums of four 16-row blocks of x, 4 the
 * weights, 6 and 7 x; every tile 16 rows of 64 bytes. */
struct amx_cfg {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

static AMX void amx_config(void)
{
	_Alignas(64) struct amx_cfg c;
	int i;

	memset(&c, 0, sizeof(c));
	c.palette = 1;
	for (i = 0; i < 8; i++) {
		c.colsb[i] = 64;
		c.rows[i] = 16;
	}
	_tile_loadconfig(&c);
}

#define KNAME		      amx_cols_instr
#define KATTR		      AMX
#define T_STATE		      int tm_unused __attribute__((unused))
#define T_CFG()		      amx_config()
#define T_REL()		      _tile_release()
#define T_ZERO(t)	      _tile_zero(t)
#define T_LOAD(t, p, stride)  _tile_loadd(t, p, stride)
#define T_STORE(t, p, stride) _tile_stored(t, p, stride)
#define T_DP(c, a, b)	      _tile_dpbf16ps(c, a, b)
#include "matmul_amx_kernel.h"
#endif

/* Whether the tests asked for the model (engy_mm_amx_set_model). */
static _Atomic bool amx_model;

void engy_mm_amx_set_model(bool on)
{
	atomic_store(&amx_model, on);
}

void engy_mm_amx_cols(const struct mm_part *pt, const uint32_t *xp, size_t c0,
		      size_t c1)
{
#ifdef MM_X86
	if (!atomic_load_explicit(&amx_model, memory_order_relaxed)) {
		amx_cols_instr(pt, xp, c0, c1);
		return;
	}
#endif
	amx_cols_model(pt, xp, c0, c1);
}

#ifdef MM_X86
/* The tiles against the definition: 20 rows of x (a full block of 16 and
 * a partial one) by 20 weight rows (a block read in place and one through
 * the pad), at every tail length. */
static bool amx_self_check(void)
{
	enum { R = 20, C = 20, N = 160 };
	/* on the stack: two threads may check at once */
	float x[R * N], y[R * C], wf[C * N];
	uint16_t w[C * N], xw[R * N];
	_Alignas(64) uint32_t xp[MM_AMX_BYTES(R, N) / 4];
	uint64_t rng = 0x2545f4914f6cdd1dull;
	size_t t, r, c, n;
	float want;

	for (t = 0; t < MM_CHECK_NS; t++) {
		struct mm_part pt;

		n = engy_mm_check_ns[t];
		/* x from the floats of one fill, w the bf16 of another */
		engy_mm_check_fill(x, xw, R * n, &rng);
		engy_mm_check_fill(wf, w, C * n, &rng);
		pt = (struct mm_part){ x, w, y, R, n, C, MM_BF16 };
		for (r = 0; r < R; r += 16)
			engy_mm_amx_pack(x + r * n, R - r < 16 ? R - r : 16, n,
					 (char *)xp +
						 r / 16 * MM_AMX_BYTES(16, n));
		amx_cols_instr(&pt, xp, 0, C);
		for (r = 0; r < R; r++)
			for (c = 0; c < C; c++) {
				want = engy_mm_amx_dot(x + r * n, w + c * n, n);
				if (memcmp(&want, &y[r * C + c], sizeof(want)))
					return false;
			}
	}
	return true;
}

/* CPUID leaf 7: AMX-BF16 (EDX bit 22) and AMX-TILE (bit 24); then Linux's
 * permission for the tile data (XFEATURE 18, asked once per process). */
static bool amx_usable(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & 1u << 22) ||
	    !(d & 1u << 24))
		return false;
#ifdef SYS_arch_prctl
	return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
		       18 /* XFEATURE_XTILEDATA */) == 0;
#else
	return false;
#endif
}
#endif

/* 1: the instruction; -1: the definition in C; 0: not decided yet. */
static _Atomic int amx_fast;

bool engy_mm_amx_fast(void)
{
	int v = atomic_load_explicit(&amx_fast, memory_order_relaxed);

	if (atomic_load_explicit(&amx_model, memory_order_relaxed))
		return true;

#ifdef MM_X86
	if (!v) {
		v = amx_usable() && amx_self_check() ? 1 : -1;
		atomic_store_explicit(&amx_fast, v, memory_order_relaxed);
	}
#else
	v = -1;
#endif
	/* as bf16dp's: a kernel forced below avx512f forces the definition */
	return v > 0 && strcmp(engy_mm_kernel_name(), "avx512f") == 0;
}

const char *engy_mm_amx_kernel(void)
{
	if (atomic_load(&amx_model))
		return "model";
	return engy_mm_amx_fast() ? "amx-bf16" : "emulated";
}
