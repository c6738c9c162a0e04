/* SPDX-License-Identifier: MIT */
/*
 * lib/qwen3, the engine under backend-ref: the matmul kernels against the
 * textbook loop, the thread pool, the sampler, the promise that a row's
 * result does not depend on how it is fed (one call, one token at a time,
 * chunks, batched with another sequence), the matmul hook, errors, and
 * checkpoint loading (refusals, INT4, FP8, shards).  Numerics against an
 * independent implementation are in tests/integration/backend_ref_reference.sh.
 *
 * Oracle: the textbook matmul loop written in the test, and engy's engine
 * against itself fed in different ways (self-consistency); the independent
 * numerics are in backend_ref_reference.sh.
 */
#include <check.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "matmul.h"
#include "qwen3.h"
#include "qwen3_int.h"
#include "ref_testlib.h"
#include "sampler.h"
#include "vec.h"

static char err[512];

static float frand(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((*s >> 40) & 0xFFFF) / 32768.0f - 1.0f;
}

/* n x in x out: 4x3 blocks (AVX2) and 4x8 / 2x8 (AVX-512) with their
 * column tails, pairs for the rows left, and wide tasks from 16 rows on
 * (matmul.c). */
static const size_t mm_shapes[][3] = {
	{ 1, 1, 1 },	{ 1, 7, 3 },	  { 2, 8, 4 },	  { 3, 37, 9 },
	{ 5, 64, 17 },	{ 1, 130, 33 },	  { 7, 9, 2 },	  { 4, 8, 3 },
	{ 8, 16, 5 },	{ 16, 40, 50 },	  { 17, 33, 97 }, { 4, 512, 13 },
	{ 2, 96, 15 },	{ 20, 136, 100 }, { 1, 24, 9 },	  { 2, 40, 7 },
	{ 1, 72, 700 }, { 2, 48, 301 },	  { 70, 45, 35 }, { 3, 40, 32 },
};

static const unsigned pool_threads[] = { 1, 3, 8 };

/* Random inputs @x [nx], weights @w [nw] and their bf16 bits @wb; with
 * @exact, @w holds exactly the bf16 values (widening @wb gives @w). */
static void operands(uint64_t *s, float *x, size_t nx, float *w, uint16_t *wb,
		     size_t nw, bool exact)
{
	size_t i;

	for (i = 0; i < nx; i++)
		x[i] = frand(s);
	for (i = 0; i < nw; i++) {
		uint32_t u;

		w[i] = frand(s);
		memcpy(&u, &w[i], 4);
		wb[i] = (uint16_t)(u >> 16);
		u &= 0xFFFF0000u;
		if (exact)
			memcpy(&w[i], &u, 4);
	}
}

START_TEST(test_matmul)
{
	uint64_t s = 42;
	size_t ti;
	size_t k, i;

	/* 1, 3 and 8 threads: a decode job's task width goes with them */
	for (ti = 0; ti < sizeof(pool_threads) / sizeof(pool_threads[0]);
	     ti++) {
		unsigned t = pool_threads[ti];
		struct mm_pool *p = engy_mm_pool_new(t);

		ck_assert_uint_eq(engy_mm_pool_threads(p), t);
		for (k = 0; k < sizeof(mm_shapes) / sizeof(mm_shapes[0]); k++) {
			size_t n = mm_shapes[k][0], in = mm_shapes[k][1],
			       out = mm_shapes[k][2];
			float *x = malloc(n * in * 4),
			      *w = malloc(out * in * 4);
			float *y = malloc(n * out * 4),
			      *yn = malloc(n * out * 4);
			float *y1 = malloc(out * 4), *yb = malloc(n * out * 4);
			uint16_t *wb = malloc(out * in * 2);
			struct mm_part part = {
				x, wb, yb, n, in, out, MM_BF16
			};

			/* Weights that are exact bf16 values. */
			operands(&s, x, n * in, w, wb, out * in, true);
			engy_mm_matmul(p, x, n, w, in, out, y);
			engy_mm_matmul_naive(x, n, w, MM_F32, in, out, yn);
			/* bf16 storage widens exactly: the same bits. */
			engy_mm_matmul_batch(p, &part, 1);
			ck_assert(memcmp(y, yb, n * out * 4) == 0);
			engy_mm_matmul_naive(x, n, wb, MM_BF16, in, out, yb);
			ck_assert(memcmp(yn, yb, n * out * 4) == 0);
			for (i = 0; i < n * out; i++)
				ck_assert_msg(fabsf(y[i] - yn[i]) <=
						      1e-5f * (float)in,
					      "%zux%zux%zu [%zu]: %g vs %g", n,
					      in, out, i, y[i], yn[i]);
			/* A row alone gives the very same bits as in the batch. */
			for (i = 0; i < n; i++) {
				engy_mm_matmul(p, x + i * in, 1, w, in, out,
					       y1);
				ck_assert(memcmp(y1, y + i * out, out * 4) ==
					  0);
			}
			ck_assert(engy_mm_dot(x, w, in) == y[0]);
			/* Attention's scores: rows of w as keys @in apart,
			 * four at a time, each the very dot of one. */
			if (in >= 2) {
				size_t m = out, len = in / 2;

				engy_mm_dots(x, w, in, len, m, y1);
				for (i = 0; i < m; i++)
					ck_assert(y1[i] ==
						  engy_mm_dot(x, w + i * in,
							      len));
			}
			free(x);
			free(w);
			free(y);
			free(yn);
			free(y1);
			free(yb);
			free(wb);
		}
		engy_mm_pool_free(p);
	}
	ck_assert(strcmp(engy_mm_kernel_name(), "avx512f") == 0 ||
		  strcmp(engy_mm_kernel_name(), "avx2+fma") == 0 ||
		  strcmp(engy_mm_kernel_name(), "generic") == 0);
}
END_TEST

/* One product by kernel @name: f32 and bf16 weights, and attention's
 * scores; NULL where the CPU lacks the kernel. */
static float *by_kernel(const char *name, struct mm_pool *p, const float *x,
			const float *w, const uint16_t *wb, size_t n, size_t in,
			size_t out)
{
	float *y = malloc((2 * n * out + out) * 4);
	struct mm_part part = { x, wb, y + n * out, n, in, out, MM_BF16 };

	if (engy_mm_set_kernel(name))
		return free(y), NULL;
	ck_assert_str_eq(engy_mm_kernel_name(), name);
	engy_mm_matmul(p, x, n, w, in, out, y);
	engy_mm_matmul_batch(p, &part, 1);
	engy_mm_dots(x, w, in, in / 2 ? in / 2 : 1, out, y + 2 * n * out);
	return y;
}

/*
 * The AVX-512 kernel keeps the AVX2 kernel's eight lanes per element (two
 * columns per register): the very same bits, on every block shape and
 * tail (bf16 weights 16 k at a time, then an 8-k block, then the rest).
 * Runs where the CPU has AVX-512F and AVX512-BW (says so where not).
 */
START_TEST(test_matmul_kernels)
{
	const char *was = engy_mm_kernel_name();
	struct mm_pool *p = engy_mm_pool_new(3);
	uint64_t s = 7;
	size_t k;
	int tested = 0;

	ck_assert_int_eq(engy_mm_set_kernel("avx1024"), -EINVAL);
	for (k = 0; k < sizeof(mm_shapes) / sizeof(mm_shapes[0]); k++) {
		size_t n = mm_shapes[k][0], in = mm_shapes[k][1],
		       out = mm_shapes[k][2];
		size_t len = 2 * n * out + out;
		float *x = malloc(n * in * 4), *w = malloc(out * in * 4);
		uint16_t *wb = malloc(out * in * 2);
		float *a, *z;

		operands(&s, x, n * in, w, wb, out * in, false);
		a = by_kernel("avx2+fma", p, x, w, wb, n, in, out);
		z = by_kernel("avx512f", p, x, w, wb, n, in, out);
		if (a && z) {
			ck_assert_msg(memcmp(a, z, len * 4) == 0,
				      "%zux%zux%zu: avx512f differs", n, in,
				      out);
			tested++;
		}
		free(a);
		free(z);
		free(x);
		free(w);
		free(wb);
	}
	if (!tested)
		printf("test_matmul_kernels: this CPU has no %s: not compared\n",
		       engy_mm_set_kernel("avx2+fma") ? "AVX2+FMA"
						      : "AVX-512F");
	else
		printf("test_matmul_kernels: avx512f = avx2+fma on %d shapes\n",
		       tested);
	ck_assert_int_eq(engy_mm_set_kernel(was), 0);
	engy_mm_pool_free(p);
}
END_TEST

/* The bf16dp definition (matmul.h), written again here from the
 * instruction's description: the oracle for both of engy's ways. */
static float t_flush(float v)
{
	return fabsf(v) < FLT_MIN ? copysignf(0.0f, v) : v;
}

static float t_bf(float v)
{
	uint32_t u;

	memcpy(&u, &v, 4);
	u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
	memcpy(&v, &u, 4);
	return t_flush(v);
}

static float t_dp(const float *x, const uint16_t *w, size_t n)
{
	float lane[16] = { 0 }, a, b;
	size_t k, i, e, half;
	uint32_t u;

	for (k = 0; k < n; k += 32)
		for (i = 0; i < 16; i++)
			for (e = k + 2 * i + 2;
			     e-- > k + 2 * i;) { /* odd, even */
				a = e < n ? t_bf(x[e]) : 0.0f;
				u = e < n ? (uint32_t)w[e] << 16 : 0;
				memcpy(&b, &u, 4);
				lane[i] = t_flush(fmaf(a, t_flush(b), lane[i]));
			}
	for (half = 8; half; half /= 2)
		for (i = 0; i < half; i++)
			lane[i] += lane[i + half];
	return lane[0];
}

/* The amx definition (matmul.h), written again here from TDPBF16PS's
 * description (one instruction a block of 32 elements: two chains from
 * zero, even and odd elements, then their sum into the running one). */
static float t_amx(const float *x, const uint16_t *w, size_t n)
{
	float acc = 0.0f, chain[2], a, b;
	size_t k, e;
	uint32_t u;

	for (k = 0; k < n; k += 32) {
		chain[0] = chain[1] = 0.0f;
		for (e = k; e < k + 32; e++) {
			a = e < n ? t_bf(x[e]) : 0.0f;
			u = e < n ? (uint32_t)w[e] << 16 : 0;
			memcpy(&b, &u, 4);
			chain[e % 2] =
				t_flush(fmaf(a, t_flush(b), chain[e % 2]));
		}
		acc = t_flush(acc + t_flush(chain[0] + chain[1]));
	}
	return acc;
}

/* Whether this CPU has @profile's instruction (CPUID leaf 7). */
static bool t_cpu_has(int profile)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;

	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return false;
	if (profile == MM_PROFILE_AMX) /* AMX-BF16, AMX-TILE */
		return (d & 1u << 22) && (d & 1u << 24);
	if (!(b & 1u << 16)) /* AVX512F */
		return false;
	return __get_cpuid_count(7, 1, &a, &b, &c, &d) &&
	       (a & 1u << 5); /* AVX512-BF16 */
#else
	(void)profile;
	return false;
#endif
}

/*
 * A profile of a CPU's bf16 instruction: its kernel (where the CPU has
 * it) and the definition in C (forced by the generic kernel) against the
 * oracle, bit for bit, on every shape, with subnormal and tiny values
 * mixed in; float32 weights are not rounded: they go the ref order.
 */
static void bf16_instr_profile(int profile, const char *instr,
			       float (*oracle)(const float *, const uint16_t *,
					       size_t),
			       const char *forced)
{
	const char *was = engy_mm_kernel_name();
	struct mm_pool *p = engy_mm_pool_new(3);
	static const char *const ways[] = { "generic", "avx512f" };
	uint64_t s = 11;
	size_t k, i, way;
	int fast = 0;
	bool cpu = t_cpu_has(profile);

	for (k = 0; k < sizeof(mm_shapes) / sizeof(mm_shapes[0]); k++) {
		size_t n = mm_shapes[k][0], in = mm_shapes[k][1],
		       out = mm_shapes[k][2];
		float *x = malloc(n * in * 4), *w = malloc(out * in * 4),
		      *y = malloc(n * out * 4), *yf = malloc(n * out * 4),
		      *want = malloc(n * out * 4), *ref = malloc(n * out * 4);
		uint16_t *wb = malloc(out * in * 2);

		operands(&s, x, n * in, w, wb, out * in, true);
		for (i = 0; i < n * in; i += 7)
			x[i] = ldexpf(x[i], -130); /* subnormal */
		for (i = 3; i < out * in; i += 11)
			wb[i] &= 0x807Fu; /* a subnormal bf16 weight */
		for (i = 0; i < out * in; i++) {
			uint32_t u = (uint32_t)wb[i] << 16;

			memcpy(&w[i], &u, 4);
		}
		for (i = 0; i < n * out; i++)
			want[i] =
				oracle(x + i / out * in, wb + i % out * in, in);
		engy_mm_matmul(p, x, n, w, in, out, ref);
		for (way = 0; way < 2; way++) {
			struct mm_part pb = { x, wb, y, n, in, out, MM_BF16 },
				       pf = { x, w, yf, n, in, out, MM_F32 };

			const char *how;

			if (engy_mm_set_kernel(ways[way]))
				continue;
			/* the instruction only under avx512f, where the CPU
			 * has it (and its self-check agreed) */
			how = engy_mm_profile_kernel(profile);
			if (forced)
				ck_assert_str_eq(how, forced);
			else if (way && cpu)
				ck_assert(!strcmp(how, instr) ||
					  !strcmp(how, "emulated"));
			else
				ck_assert_str_eq(how, "emulated");
			fast += !strcmp(how, instr);
			engy_mm_matmul_batch_profile(p, &pb, 1, profile);
			engy_mm_matmul_batch_profile(p, &pf, 1, profile);
			for (i = 0; i < n * out; i++) {
				ck_assert_msg(
					memcmp(&y[i], &want[i], 4) == 0,
					"%s %zux%zux%zu [%zu]: %a, want %a",
					how, n, in, out, i, y[i], want[i]);
				ck_assert_msg(memcmp(&yf[i], &ref[i], 4) == 0,
					      "float32 weights [%zu]", i);
			}
		}
		free(x);
		free(w);
		free(y);
		free(yf);
		free(want);
		free(ref);
		free(wb);
	}
	if (forced) {
		printf("amx profile: the tile kernel on the model of the tile "
		       "instructions agrees with the oracle\n");
		goto out;
	}
	printf("%s profile: the definition in C%s%s%s\n",
	       profile == MM_PROFILE_AMX ? "amx" : "bf16dp",
	       fast ? " and the " : " agrees with the oracle",
	       fast ? instr : "",
	       fast  ? " kernel agree with the oracle"
	       : cpu ? " (the CPU has the instruction, but it is not in use:"
		       " no avx512f kernel, no tile permission, or its"
		       " self-check disagreed)"
		     : " (this CPU lacks the instruction)");
out:
	ck_assert_str_eq(engy_mm_profile_kernel(MM_PROFILE_REF), "");
	ck_assert_int_eq(engy_mm_set_kernel(was), 0);
	engy_mm_pool_free(p);
}

/* MM_PROFILE_BF16DP: AVX512-BF16's VDPBF16PS. */
START_TEST(test_bf16dp_profile)
{
	bf16_instr_profile(MM_PROFILE_BF16DP, "avx512bf16", t_dp, NULL);
}
END_TEST

/* MM_PROFILE_AMX: AMX-BF16's TDPBF16PS, then the tile kernel on the
 * model of the tile operations (matmul_amx.c), whatever the CPU: the
 * shapes go past a 16-row block of x and of weights, over four blocks of
 * x, and through every tail of k. */
START_TEST(test_amx_profile)
{
	bf16_instr_profile(MM_PROFILE_AMX, "amx-bf16", t_amx, NULL);
	engy_mm_amx_set_model(true);
	bf16_instr_profile(MM_PROFILE_AMX, "amx-bf16", t_amx, "model");
	engy_mm_amx_set_model(false);
}
END_TEST

#define POOL_BIG 70000 /* past what a job run by ranges may hold */
static atomic_uchar counts[POOL_BIG];

static void count_task(void *arg, size_t task, unsigned thread)
{
	ck_assert_uint_lt(thread, *(unsigned *)arg);
	atomic_fetch_add(&counts[task], 1);
}

/* Every task once, by either scheme, in any mix: jobs counted (the ctl
 * word's task half) and run by ranges (a word per thread) follow each
 * other, and workers that fell asleep in one wake up in the other. */
START_TEST(test_pool)
{
	unsigned threads = 4;
	struct mm_pool *p = engy_mm_pool_new(threads);
	size_t job, n, i;

	for (job = 0; job < 600; job++) {
		n = job % 97 == 5 ? POOL_BIG : (job * 7) % 128;
		memset(counts, 0, sizeof(counts));
		if (job % 3)
			engy_mm_pool_run_ranges(p, count_task, &threads, n);
		else
			engy_mm_pool_run(p, count_task, &threads, n);
		for (i = 0; i < POOL_BIG; i++)
			if (atomic_load(&counts[i]) != (i < n ? 1 : 0))
				ck_abort_msg(
					"job %zu (%zu tasks, %s): task %zu "
					"ran %d times",
					job, n, job % 3 ? "ranges" : "counted",
					i, (int)atomic_load(&counts[i]));
		if (job % 50 == 0)
			usleep(2000); /* let workers fall asleep sometimes */
	}
	engy_mm_pool_free(p);
}
END_TEST

START_TEST(test_sampler)
{
	float lg[6] = { 0.5f, 2.0f, -1.0f, 2.0f, 1.0f, 0.0f }, lp;
	struct q3_sampling greedy = { 0, 1, 0 }, top1 = { 5.0, 1, 1 };
	struct q3_sampling hot = { 1.0, 1, 0 }, topk2 = { 3.0, 1, 2 };
	struct q3_sampling topp = { 1.0, 1e-6, 0 }, bad = { -1, 1, 0 };
	struct q3_sampler *s = engy_q3_sampler_new(6);
	struct q3_rng a, b;
	double two[2] = { log(0.7), log(0.3) }, sum = 0;
	uint32_t hits = 0, i, t1, t2;
	const char *why;

	ck_assert_uint_eq(engy_q3_sample(s, lg, &greedy, &a, &lp),
			  1); /* first max */
	for (i = 0; i < 6; i++)
		sum += exp(lg[i]);
	ck_assert_double_eq_tol(lp, 2.0 - log(sum), 1e-6);
	engy_q3_rng_seed(&a, 9);
	for (i = 0; i < 50; i++) {
		ck_assert_uint_eq(engy_q3_sample(s, lg, &top1, &a, NULL), 1);
		ck_assert_uint_eq(engy_q3_sample(s, lg, &topp, &a, NULL), 1);
		t1 = engy_q3_sample(s, lg, &topk2, &a, NULL);
		ck_assert(t1 == 1 || t1 == 3);
	}
	/* Same seed, same draws; another seed, another sequence. */
	engy_q3_rng_seed(&a, 123);
	engy_q3_rng_seed(&b, 123);
	for (i = 0; i < 20; i++)
		ck_assert_uint_eq(engy_q3_sample(s, lg, &hot, &a, NULL),
				  engy_q3_sample(s, lg, &hot, &b, NULL));
	engy_q3_rng_seed(&b, 124);
	for (i = 0, hits = 0; i < 20; i++) {
		t1 = engy_q3_sample(s, lg, &hot, &a, NULL);
		t2 = engy_q3_sample(s, lg, &hot, &b, NULL);
		hits += t1 == t2;
	}
	ck_assert_uint_lt(hits, 20);
	engy_q3_sampler_free(s);
	/* Frequencies follow softmax(logits / T). */
	s = engy_q3_sampler_new(2);
	lg[0] = (float)two[0];
	lg[1] = (float)two[1];
	for (i = 0, hits = 0; i < 20000; i++)
		hits += engy_q3_sample(s, lg, &hot, &a, NULL) == 0;
	ck_assert_double_eq_tol(hits / 20000.0, 0.7, 0.02);
	engy_q3_sampler_free(s);
	ck_assert_int_eq(engy_q3_sampling_check(&bad, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "temperature"));
	bad = (struct q3_sampling){ 1, 0, 0 };
	ck_assert_int_eq(engy_q3_sampling_check(&bad, &why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "top_p"));
	ck_assert_int_eq(engy_q3_sampling_check(&hot, &why), 0);
}
END_TEST

#define NP 37

/* Hidden rows of ids[0..n) fed in chunks of @chunk (0: all at once). */
static float *feed(struct q3_model *m, const uint32_t *ids, size_t n,
		   size_t chunk)
{
	const struct q3_config *c = engy_q3_model_config(m);
	struct q3_seq *s = engy_q3_seq_new(m, 1024);
	float *h = malloc(n * c->hidden * sizeof(float));
	struct q3_row *rows = malloc(n * sizeof(*rows));
	size_t off, k, cnt;

	chunk = chunk ? chunk : n;
	for (off = 0; off < n; off += cnt) {
		cnt = n - off < chunk ? n - off : chunk;
		for (k = 0; k < cnt; k++)
			rows[k] = (struct q3_row){ s, ids[off + k] };
		ck_assert_int_eq(
			engy_q3_forward(m, rows, cnt, h + off * c->hidden), 0);
	}
	ck_assert_uint_eq(engy_q3_seq_len(s), n);
	engy_q3_seq_free(s);
	free(rows);
	return h;
}

static void paths_identical(bool moe)
{
	char *dir = tiny_model(moe, 3, 0);
	struct q3_load_opts lo = { .threads = 2 };
	struct q3_model *m;
	const struct q3_config *c;
	uint32_t ids[NP], other[NP];
	float *all, *step, *chunks, *hb, *lg1, *lgn, *alt;
	struct q3_seq *a, *b, *c3;
	struct q3_row rows[2];
	size_t i, H;

	ck_assert_msg(engy_q3_model_load(dir, &lo, &m, err, sizeof(err)) == 0,
		      "%s", err);
	c = engy_q3_model_config(m);
	H = c->hidden;
	ck_assert_uint_eq(c->moe, moe);
	for (i = 0; i < NP; i++) {
		ids[i] = (uint32_t)((i * 131 + 7) % c->vocab);
		other[i] = (uint32_t)((i * 17 + 300) % c->vocab);
	}
	all = feed(m, ids, NP, 0);
	step = feed(m, ids, NP, 1);
	chunks = feed(m, ids, NP, 5);
	ck_assert(memcmp(all, step, NP * H * 4) == 0);
	ck_assert(memcmp(all, chunks, NP * H * 4) == 0);
	/* Batched with another sequence, one row of each per call. */
	a = engy_q3_seq_new(m, 64);
	b = engy_q3_seq_new(m, 64);
	hb = malloc(2 * H * 4);
	for (i = 0; i < NP; i++) {
		rows[0] = (struct q3_row){ b, other[i] };
		rows[1] = (struct q3_row){ a, ids[i] };
		ck_assert_int_eq(engy_q3_forward(m, rows, 2, hb), 0);
		ck_assert(memcmp(hb + H, all + i * H, H * 4) == 0);
	}
	/* A decode step's few rows: two of one sequence in one call with
	 * another sequence's row between them (two attention groups of one
	 * sequence), and two of one sequence then one of another (a group
	 * each): each row as alone. */
	alt = feed(m, other, NP, 0);
	c3 = engy_q3_seq_new(m, 64);
	engy_q3_seq_truncate(a, 0);
	engy_q3_seq_truncate(b, 0);
	hb = realloc(hb, 3 * H * 4);
	for (i = 0; i + 1 < NP; i += 2) {
		struct q3_row r3[3] = { { a, ids[i] },
					{ b, other[i] },
					{ a, ids[i + 1] } };

		ck_assert_int_eq(engy_q3_forward(m, r3, 3, hb), 0);
		ck_assert(memcmp(hb, all + i * H, H * 4) == 0);
		ck_assert(memcmp(hb + H, alt + i * H, H * 4) == 0);
		ck_assert(memcmp(hb + 2 * H, all + (i + 1) * H, H * 4) == 0);
		r3[0] = (struct q3_row){ c3, ids[i] };
		r3[1] = (struct q3_row){ c3, ids[i + 1] };
		r3[2] = (struct q3_row){ b, other[i + 1] };
		ck_assert_int_eq(engy_q3_forward(m, r3, 3, hb), 0);
		ck_assert(memcmp(hb, all + i * H, H * 4) == 0);
		ck_assert(memcmp(hb + H, all + (i + 1) * H, H * 4) == 0);
		ck_assert(memcmp(hb + 2 * H, alt + (i + 1) * H, H * 4) == 0);
	}
	engy_q3_seq_free(c3);
	free(alt);
	/* Rows are not all alike: the model says different things. */
	ck_assert(memcmp(all, all + H, H * 4) != 0);
	/* Truncate and recompute the tail: same rows again. */
	engy_q3_seq_truncate(a, 30);
	ck_assert_uint_eq(engy_q3_seq_len(a), 30);
	rows[0] = (struct q3_row){ a, ids[30] };
	ck_assert_int_eq(engy_q3_forward(m, rows, 1, hb), 0);
	ck_assert(memcmp(hb, all + 30 * H, H * 4) == 0);
	/* Logits of many rows at once equal row by row. */
	lgn = malloc(NP * c->vocab * 4);
	lg1 = malloc(c->vocab * 4);
	engy_q3_logits(m, all, NP, lgn);
	for (i = 0; i < NP; i += 9) {
		engy_q3_logits(m, all + i * H, 1, lg1);
		ck_assert(memcmp(lg1, lgn + i * c->vocab, c->vocab * 4) == 0);
	}
	engy_q3_seq_free(a);
	engy_q3_seq_free(b);
	free(all);
	free(step);
	free(chunks);
	free(hb);
	free(lg1);
	free(lgn);
	engy_q3_model_free(m);
	rm_model(dir);
}

START_TEST(test_paths_dense)
{
	paths_identical(false);
}
END_TEST

START_TEST(test_paths_moe)
{
	paths_identical(true);
}
END_TEST

/*
 * Kernel profiles (matmul.h): each alternative summation order is within
 * the float32 error bound of the float64 product, n * 2^-23 * sum |x w|
 * (an independent bound: any order of n rounded additions of rounded
 * products), keeps a row's result independent of its batch and of the
 * thread count, and on a typical input (in >= 64) differs bitwise from
 * the ref order somewhere, which is the point of having it.  The bf16act
 * matmul (the ref kernel on bf16-rounded inputs, its output rounded to
 * bf16, as qwen3_forward.c runs it) adds 2^-8 (|y| + sum |x w|): one bf16
 * rounding of each input and of the output.
 */
START_TEST(test_profile_kernels)
{
	static const size_t shapes[][3] = { { 1, 1, 1 },    { 1, 7, 3 },
					    { 3, 37, 9 },   { 4, 64, 64 },
					    { 2, 128, 48 }, { 3, 512, 40 },
					    { 2, 1536, 24 } };
	/* The three orders, then bf16act (-1). */
	static const int profiles[] = { MM_PROFILE_REF, MM_PROFILE_SPLITK,
					MM_PROFILE_WARP32, -1 };
	uint64_t s = 7;
	size_t k, i, j, c, ti;
	int pi;

	/* 1, 3 and 8 threads: a decode job's task width goes with them */
	for (ti = 0; ti < sizeof(pool_threads) / sizeof(pool_threads[0]);
	     ti++) {
		unsigned t = pool_threads[ti];
		struct mm_pool *p = engy_mm_pool_new(t);

		for (k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
			size_t n = shapes[k][0], in = shapes[k][1],
			       out = shapes[k][2];
			float *x = malloc(n * in * 4), *y = malloc(n * out * 4);
			float *yr = malloc(n * out * 4), *y1 = malloc(out * 4);
			float *xb = malloc(n * in * 4);
			uint16_t *wb = malloc(out * in * 2);
			double *y64 = malloc(n * out * sizeof(double));
			double *mag = malloc(n * out * sizeof(double));

			for (i = 0; i < n * in; i++)
				x[i] = frand(&s);
			memcpy(xb, x, n * in * 4);
			engy_q3_bf16_round(xb, n * in);
			for (i = 0; i < out * in; i++) {
				float f = frand(&s);
				uint32_t u;

				memcpy(&u, &f, 4);
				wb[i] = (uint16_t)(u >> 16);
			}
			for (i = 0; i < n; i++)
				for (c = 0; c < out; c++) {
					double a = 0, m = 0;

					for (j = 0; j < in; j++) {
						uint32_t u =
							(uint32_t)wb[c * in + j]
							<< 16;
						float w;
						double pr;

						memcpy(&w, &u, 4);
						pr = (double)x[i * in + j] * w;
						a += pr;
						m += fabs(pr);
					}
					y64[i * out + c] = a;
					mag[i * out + c] = m;
				}
			for (pi = 0; pi < 4; pi++) {
				int bf = profiles[pi] < 0,
				    mp = bf ? MM_PROFILE_REF : profiles[pi];
				const float *xi = bf ? xb : x;
				struct mm_part part = { xi, wb,	 y,	 n,
							in, out, MM_BF16 };

				engy_mm_matmul_batch_profile(p, &part, 1, mp);
				if (bf)
					engy_q3_bf16_round(y, n * out);
				for (i = 0; i < n * out; i++)
					ck_assert_msg(
						fabs(y[i] - y64[i]) <=
							(double)in * ldexp(1, -23) *
									mag[i] +
								(bf ? ldexp(1,
									    -8) *
										 (fabs(y64[i]) +
										  mag[i])
								    : 0),
						"profile %d %zux%zux%zu [%zu]: "
						"%.9g vs %.9g",
						profiles[pi], n, in, out, i,
						y[i], y64[i]);
				for (i = 0; i < n; i++) {
					struct mm_part one = { xi + i * in, wb,
							       y1,	    1,
							       in,	    out,
							       MM_BF16 };

					engy_mm_matmul_batch_profile(p, &one, 1,
								     mp);
					if (bf)
						engy_q3_bf16_round(y1, out);
					ck_assert(memcmp(y1, y + i * out,
							 out * 4) == 0);
				}
				if (profiles[pi] == MM_PROFILE_REF)
					memcpy(yr, y, n * out * 4);
				else if (in >= 64)
					ck_assert_msg(
						memcmp(yr, y, n * out * 4) != 0,
						"profile %d equals ref on "
						"%zux%zux%zu",
						profiles[pi], n, in, out);
			}
			free(x);
			free(xb);
			free(y);
			free(yr);
			free(y1);
			free(wb);
			free(y64);
			free(mag);
		}
		engy_mm_pool_free(p);
	}
}
END_TEST

/* The bf16act matmul: q_proj's input and output as the hook sees them. */
struct bf16_seen {
	float *in, *out;
	size_t rows, in_dim, out_dim;
};

static void bf16_hook(void *arg, int layer, const char *name, const float *in,
		      size_t rows, size_t in_dim, const float *out,
		      size_t out_dim)
{
	struct bf16_seen *b = arg;

	if (layer != 0 || strcmp(name, "q_proj") || b->in)
		return;
	b->in = malloc(rows * in_dim * 4);
	b->out = malloc(rows * out_dim * 4);
	memcpy(b->in, in, rows * in_dim * 4);
	memcpy(b->out, out, rows * out_dim * 4);
	b->rows = rows;
	b->in_dim = in_dim;
	b->out_dim = out_dim;
}

static int bf16_exact(const float *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t u;

		memcpy(&u, &v[i], 4);
		if (u & 0xFFFFu)
			return 0;
	}
	return 1;
}

/*
 * Every profile, whole model: names round-trip, prefill equals decode
 * bit for bit (the row independence an honest miner and its own KV cache
 * need), the hidden states differ bitwise from ref but stay within 5% RMS
 * of them (measured: 0.4% dense, 3.6% MoE, where a bf16 router logit can
 * flip an expert; splitk-f32 1.5e-7; INT4 weights are 8.7-9.7%): a
 * profile is the same model, not noise.  bf16act's matmuls
 * take and give bf16-exact activations.  Profiles are CPU only.
 */
static void profiles_model(bool moe)
{
	char *dir = tiny_model(moe, 3, 0);
	struct q3_load_opts lo = { .threads = 2 };
	struct q3_model *m, *mr;
	uint32_t ids[NP];
	float *ref, *all, *step;
	size_t i, H;
	int p, rc;

	ck_assert_msg(engy_q3_model_load(dir, &lo, &mr, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(engy_q3_model_profile(mr), Q3_PROFILE_REF);
	H = engy_q3_model_config(mr)->hidden;
	for (i = 0; i < NP; i++)
		ids[i] = (uint32_t)((i * 131 + 7) %
				    engy_q3_model_config(mr)->vocab);
	ref = feed(mr, ids, NP, 0);
	for (p = 0; p < Q3_PROFILE_MAX; p++) {
		double d2 = 0, r2 = 0;

		ck_assert_int_eq(engy_q3_profile_parse(engy_q3_profile_name(p)),
				 p);
		lo.profile = p;
		ck_assert_msg(
			engy_q3_model_load(dir, &lo, &m, err, sizeof(err)) == 0,
			"%s", err);
		ck_assert_int_eq(engy_q3_model_profile(m), p);
		all = feed(m, ids, NP, 0);
		step = feed(m, ids, NP, 1);
		ck_assert(memcmp(all, step, NP * H * 4) == 0);
		for (i = 0; i < NP * H; i++) {
			d2 += ((double)all[i] - ref[i]) *
			      ((double)all[i] - ref[i]);
			r2 += (double)ref[i] * ref[i];
		}
		if (p == Q3_PROFILE_REF)
			ck_assert(memcmp(all, ref, NP * H * 4) == 0);
		else
			ck_assert_msg(memcmp(all, ref, NP * H * 4) != 0 &&
					      sqrt(d2 / r2) < 0.05,
				      "%s: relative RMS %g",
				      engy_q3_profile_name(p), sqrt(d2 / r2));
		if (p == Q3_PROFILE_BF16ACT) {
			struct bf16_seen b = { 0 };
			struct q3_seq *sq = engy_q3_seq_new(m, 64);
			struct q3_row r[4];
			float *h4 = malloc(4 * H * 4);

			for (i = 0; i < 4; i++)
				r[i] = (struct q3_row){ sq, ids[i] };
			engy_q3_model_set_hook(m, bf16_hook, &b);
			ck_assert_int_eq(engy_q3_forward(m, r, 4, h4), 0);
			ck_assert_ptr_nonnull(b.in);
			ck_assert(bf16_exact(b.in, b.rows * b.in_dim));
			ck_assert(bf16_exact(b.out, b.rows * b.out_dim));
			free(h4);
			engy_q3_seq_free(sq);
			free(b.in);
			free(b.out);
		}
		free(all);
		free(step);
		engy_q3_model_free(m);
	}
	/* No profile but ref on the naive path (nor on CUDA). */
	lo.profile = Q3_PROFILE_SPLITK;
	lo.naive = true;
	ck_assert_int_eq(engy_q3_model_load(dir, &lo, &m, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "CPU kernels only"));
	lo.naive = false;
	/* On CUDA only bf16act (the GPU's bf16 GEMM) besides ref. */
	lo.device = Q3_DEVICE_CUDA;
	ck_assert_int_eq(engy_q3_model_load(dir, &lo, &m, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "CPU kernels only (bf16act also"));
	lo.profile = Q3_PROFILE_BF16ACT;
	err[0] = 0;
	rc = engy_q3_model_load(dir, &lo, &m, err, sizeof(err));
	if (rc == 0) /* a CUDA build on a machine with a GPU */
		engy_q3_model_free(m);
	else
		ck_assert_ptr_null(strstr(err, "CPU kernels only"));
	lo.device = Q3_DEVICE_CPU;
	lo.profile = Q3_PROFILE_MAX;
	ck_assert_int_eq(engy_q3_model_load(dir, &lo, &m, err, sizeof(err)),
			 -EINVAL);
	ck_assert_int_eq(engy_q3_profile_parse("fast"), -1);
	ck_assert_ptr_null(engy_q3_profile_name(-1));
	free(ref);
	engy_q3_model_free(mr);
	rm_model(dir);
}

START_TEST(test_profiles_dense)
{
	profiles_model(false);
}
END_TEST

START_TEST(test_profiles_moe)
{
	profiles_model(true);
}
END_TEST

struct hook_log {
	int calls[4][16]; /* [layer + 1][name index] */
	size_t expert_rows[4];
	size_t rows;
	const struct q3_config *c;
};

static const char *const hook_names[] = { "q_proj",    "k_proj",    "v_proj",
					  "o_proj",    "gate_proj", "up_proj",
					  "down_proj", "router",    "lm_head" };

static void hook(void *arg, int layer, const char *name, const float *in,
		 size_t rows, size_t in_dim, const float *out, size_t out_dim)
{
	struct hook_log *h = arg;
	const struct q3_config *c = h->c;
	size_t i;

	ck_assert(in && out && layer >= -1 && layer < 2);
	if (!strncmp(name, "experts.", 8)) {
		if (strstr(name, "down_proj")) {
			h->expert_rows[layer + 1] += rows;
			ck_assert_uint_eq(in_dim, c->moe_inter);
			ck_assert_uint_eq(out_dim, c->hidden);
		}
		return;
	}
	for (i = 0; i < sizeof(hook_names) / sizeof(hook_names[0]); i++)
		if (!strcmp(name, hook_names[i]))
			break;
	ck_assert_msg(i < sizeof(hook_names) / sizeof(hook_names[0]), "%s",
		      name);
	h->calls[layer + 1][i]++;
	ck_assert_uint_eq(rows, h->rows);
	if (i == 0) {
		ck_assert_uint_eq(in_dim, c->hidden);
		ck_assert_uint_eq(out_dim, c->n_heads * c->head_dim);
	}
	if (i == 8) {
		ck_assert_uint_eq(out_dim, c->vocab);
		ck_assert_int_eq(layer, -1);
	}
}

START_TEST(test_hook)
{
	char *dir = tiny_model(true, 5, 0);
	struct q3_model *m;
	struct hook_log h = { .rows = 6 };
	uint32_t ids[6] = { 1, 2, 3, 4, 5, 6 };
	float *hid, *lg;
	int k;

	ck_assert_int_eq(engy_q3_model_load(dir, NULL, &m, err, sizeof(err)),
			 0);
	h.c = engy_q3_model_config(m);
	engy_q3_model_set_hook(m, hook, &h);
	hid = feed(m, ids, 6, 0);
	/* Layer 0 is sparse, layer 1 dense (mlp_only_layers = [1]). */
	for (k = 0; k < 4; k++) {
		ck_assert_int_eq(h.calls[1][k], 1);
		ck_assert_int_eq(h.calls[2][k], 1);
	}
	ck_assert_int_eq(h.calls[1][7], 1); /* router */
	ck_assert_int_eq(h.calls[1][4], 0); /* no dense MLP */
	ck_assert_uint_eq(h.expert_rows[1], 6 * h.c->top_k);
	ck_assert_int_eq(h.calls[2][7], 0);
	ck_assert_int_eq(h.calls[2][4] + h.calls[2][5] + h.calls[2][6], 3);
	ck_assert_int_eq(h.calls[0][8], 0);
	lg = malloc(6 * h.c->vocab * 4);
	engy_q3_logits(m, hid, 6, lg);
	ck_assert_int_eq(h.calls[0][8], 1);
	free(lg);
	free(hid);
	engy_q3_model_free(m);
	rm_model(dir);
}
END_TEST

START_TEST(test_forward_errors)
{
	char *dir = tiny_model(false, 3, 0);
	struct q3_model *m;
	struct q3_seq *s;
	struct q3_row rows[3];
	float h[3 * 64];

	ck_assert_int_eq(engy_q3_model_load(dir, NULL, &m, err, sizeof(err)),
			 0);
	s = engy_q3_seq_new(m, 3);
	rows[0] = (struct q3_row){ s, 1 };
	rows[1] = (struct q3_row){ s, engy_q3_model_config(m)->vocab };
	ck_assert_int_eq(engy_q3_forward(m, rows, 2, h), -ERANGE);
	ck_assert_uint_eq(engy_q3_seq_len(s), 0);
	rows[1].id = 2;
	rows[2] = (struct q3_row){ s, 3 };
	ck_assert_int_eq(engy_q3_forward(m, rows, 3, h), 0);
	ck_assert_uint_eq(engy_q3_seq_len(s), 3);
	ck_assert_int_eq(engy_q3_forward(m, rows, 1, h), -E2BIG);
	ck_assert_uint_eq(engy_q3_seq_len(s), 3);
	ck_assert_int_eq(engy_q3_forward(m, rows, 0, h), 0);
	engy_q3_seq_free(s);
	engy_q3_model_free(m);
	rm_model(dir);
}
END_TEST

/* Replace @from by @to in DIR/config.json (restored from @orig first). */
static void patch_config(const char *dir, const char *orig, const char *from,
			 const char *to)
{
	const char *at = strstr(orig, from);
	char *s = malloc(strlen(orig) + strlen(to) + 1);

	ck_assert_msg(at != NULL, "no '%s' in config.json", from);
	memcpy(s, orig, (size_t)(at - orig));
	strcpy(s + (at - orig), to);
	strcat(s, at + strlen(from));
	put_file(dir, "config.json", s);
	free(s);
}

static void refused(const char *dir, const char *needle)
{
	struct q3_model *m = NULL;

	err[0] = '\0';
	ck_assert_int_lt(engy_q3_model_load(dir, NULL, &m, err, sizeof(err)),
			 0);
	ck_assert_ptr_null(m);
	ck_assert_msg(strstr(err, needle), "'%s' lacks '%s'", err, needle);
}

START_TEST(test_load_refusals)
{
	char *dir = tiny_model(false, 3, 0), path[600], *orig;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/config.json", dir);
	f = fopen(path, "r");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	orig = calloc(1, (size_t)n + 1);
	ck_assert_int_eq(fread(orig, 1, (size_t)n, f), n);
	fclose(f);
	patch_config(dir, orig, "\"qwen3\"", "\"llama\"");
	refused(dir, "model_type 'llama' is not a Qwen3 model");
	patch_config(dir, orig, "\"rope_scaling\":\tnull",
		     "\"rope_scaling\": {}");
	refused(dir, "rope_scaling is not supported");
	patch_config(dir, orig, "\"num_hidden_layers\":\t2",
		     "\"num_hidden_layers\": 3");
	refused(dir, "tensor model.layers.2.input_layernorm.weight is missing");
	patch_config(dir, orig, "\"hidden_size\":\t64", "\"hidden_size\": 32");
	refused(dir, "has shape [512, 64], expected [512, 32]");
	patch_config(dir, orig, "\"num_attention_heads\":\t4",
		     "\"num_attention_heads\": 3");
	refused(dir, "not a multiple of num_key_value_heads");
	patch_config(
		dir, orig, "\"vocab_size\":\t512",
		"\"vocab_size\": 512, \"quantization_config\": {\"quant_method\": \"gptq\"}");
	refused(dir, "quant_method 'gptq' is not supported");
	patch_config(dir, orig, "\"hidden_size\":\t64",
		     "\"hidden_size\": \"64\"");
	refused(dir, "hidden_size must be an integer");
	put_file(dir, "config.json", orig);
	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	ck_assert_int_eq(truncate(path, 1000), 0);
	refused(dir, "truncated");
	ck_assert_int_eq(unlink(path), 0);
	refused(dir, "model.safetensors");
	free(orig);
	rm_model(dir);
}
END_TEST

static float max_abs_diff(const float *a, const float *b, size_t n)
{
	float d = 0;
	size_t i;

	for (i = 0; i < n; i++)
		d = fmaxf(d, fabsf(a[i] - b[i]));
	return d;
}

START_TEST(test_quantized)
{
	char *base = tiny_model(false, 11, 0), *q4 = tiny_model(false, 11, 1);
	char *f8 = tiny_model(false, 11, 2);
	struct q3_model *m0, *m4, *m8;
	uint32_t ids[12] = { 5, 80, 200, 3, 9, 100, 44, 7, 301, 12, 13, 14 };
	float *h0, *h4, *h8, d4, d8;

	ck_assert_int_eq(engy_q3_model_load(base, NULL, &m0, err, sizeof(err)),
			 0);
	ck_assert_msg(engy_q3_model_load(q4, NULL, &m4, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_msg(engy_q3_model_load(f8, NULL, &m8, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(engy_q3_model_config(m4)->quant, Q3_QUANT_INT4);
	ck_assert_uint_eq(engy_q3_model_config(m4)->quant_block, 128);
	ck_assert_int_eq(engy_q3_model_config(m8)->quant, Q3_QUANT_FP8);
	h0 = feed(m0, ids, 12, 0);
	h4 = feed(m4, ids, 12, 4);
	h8 = feed(m8, ids, 12, 1);
	d4 = max_abs_diff(h0, h4, 12 * 64);
	d8 = max_abs_diff(h0, h8, 12 * 64);
	/* The same model, perturbed: measurably, not wildly. */
	ck_assert_msg(d4 > 0.05f && d4 < 2.0f, "int4 differs by %g", d4);
	ck_assert_msg(d8 > 1e-3f && d8 < d4, "fp8 %g, int4 %g", d8, d4);
	/* fp8-bf16 (bf16 activations and FP8 weights rounded to bf16 after
	 * the scale) is neither bf16act nor ref on an FP8 checkpoint, and
	 * stays closer to ref than INT4 is. */
	{
		struct q3_load_opts lb = { .profile = Q3_PROFILE_BF16ACT };
		struct q3_load_opts lf = { .profile = Q3_PROFILE_FP8_BF16 };
		struct q3_model *mb, *mf;
		float *hb, *hf, df;

		ck_assert_msg(
			engy_q3_model_load(f8, &lb, &mb, err, sizeof(err)) == 0,
			"%s", err);
		ck_assert_msg(
			engy_q3_model_load(f8, &lf, &mf, err, sizeof(err)) == 0,
			"%s", err);
		hb = feed(mb, ids, 12, 0);
		hf = feed(mf, ids, 12, 1);
		ck_assert(memcmp(hb, hf, 12 * 64 * 4) != 0);
		ck_assert(memcmp(h8, hf, 12 * 64 * 4) != 0);
		df = max_abs_diff(h8, hf, 12 * 64);
		ck_assert_msg(df < d4, "fp8-bf16 %g, int4 %g", df, d4);
		free(hb);
		free(hf);
		engy_q3_model_free(mb);
		engy_q3_model_free(mf);
	}
	free(h0);
	free(h4);
	free(h8);
	engy_q3_model_free(m0);
	engy_q3_model_free(m4);
	engy_q3_model_free(m8);
	rm_model(base);
	rm_model(q4);
	rm_model(f8);
}
END_TEST

/* Split model.safetensors into two shards plus an index. */
static void shard(const char *dir)
{
	struct engy_st_writer *w[2] = { engy_st_writer_new(),
					engy_st_writer_new() };
	char path[600], *idx;
	struct engy_st *st;
	size_t i, len = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	ck_assert_int_eq(engy_st_open(path, &st, err, sizeof(err)), 0);
	f = open_memstream(&idx, &len);
	fprintf(f, "{\"metadata\": {}, \"weight_map\": {");
	for (i = 0; i < engy_st_count(st); i++) {
		const struct engy_st_tensor *t = engy_st_at(st, i);
		void *d = malloc(t->nbytes);

		memcpy(d, t->data, t->nbytes);
		ck_assert_int_eq(engy_st_writer_add_take(
					 w[i % 2], t->name, t->dtype, t->ndim,
					 t->shape, d, t->nbytes),
				 0);
		fprintf(f, "%s\"%s\": \"%s\"", i ? ", " : "", t->name,
			i % 2 ? "model-00002-of-00002.safetensors"
			      : "model-00001-of-00002.safetensors");
	}
	fprintf(f, "}}");
	fclose(f);
	engy_st_close(st);
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path),
			 "%s/model-0000%zu-of-00002.safetensors", dir, i + 1);
		ck_assert_int_eq(engy_st_writer_save(w[i], path), 0);
		engy_st_writer_free(w[i]);
	}
	put_file(dir, "model.safetensors.index.json", idx);
	free(idx);
}

START_TEST(test_shards)
{
	char *dir = tiny_model(true, 4, 0), path[600];
	struct q3_model *m;
	uint32_t ids[9] = { 1, 50, 2, 60, 3, 70, 4, 80, 5 };
	float *h1, *h2;

	ck_assert_int_eq(engy_q3_model_load(dir, NULL, &m, err, sizeof(err)),
			 0);
	h1 = feed(m, ids, 9, 0);
	engy_q3_model_free(m);
	shard(dir);
	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_msg(engy_q3_model_load(dir, NULL, &m, err, sizeof(err)) == 0,
		      "%s", err);
	h2 = feed(m, ids, 9, 3);
	ck_assert(memcmp(h1, h2, 9 * 64 * 4) == 0);
	engy_q3_model_free(m);
	put_file(
		dir, "model.safetensors.index.json",
		"{\"weight_map\": {\"model.norm.weight\": \"../elsewhere.safetensors\"}}");
	refused(dir, "not a .safetensors file beside it");
	put_file(dir, "model.safetensors.index.json", "{\"weight_map\": 3}");
	refused(dir, "no weight_map object");
	free(h1);
	free(h2);
	rm_model(dir);
}
END_TEST

/* Equal bits, or both NaN (which NaN comes out of an operation on two of
 * them is the instruction's choice of operand, not the engine's). */
static void same_floats(const float *a, const float *b, size_t n,
			const char *what, size_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		ck_assert_msg(memcmp(&a[i], &b[i], 4) == 0 ||
				      (isnan(a[i]) && isnan(b[i])),
			      "%s, length %zu: element %zu is %a, not %a", what,
			      len, i, (double)a[i], (double)b[i]);
}

/* Random values, and with @special one in eight a NaN, an infinity, a
 * zero, a subnormal, a huge value or a bf16 rounding tie. */
static void vec_operands(uint64_t *s, float *v, size_t n, bool special)
{
	static const uint32_t odd[] = { 0x7FC00001u, 0xFFA00000u, 0x7F800000u,
					0xFF800000u, 0x00000000u, 0x80000000u,
					0x00000123u, 0x807FFFFFu, 0x7F7FFFFFu,
					0x3F808000u, 0x3F818000u, 0xC0FF8000u };
	size_t i;

	for (i = 0; i < n; i++) {
		v[i] = frand(s) * 4.0f;
		if (special && (*s >> 33) % 8 == 0)
			memcpy(&v[i], &odd[(*s >> 20) % 12], 4);
	}
}

/* The elementwise steps (vec.c) as their header defines them, written
 * again here: the oracle for both of the engine's ways. */
static void vec_oracle_round(float *v, size_t n)
{
	size_t i;
	uint32_t u;

	for (i = 0; i < n; i++) {
		memcpy(&u, &v[i], 4);
		if (isnan(v[i]))
			u = (u | 0x00400000u) & 0xFFFF0000u;
		else
			u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
		memcpy(&v[i], &u, 4);
	}
}

/*
 * The AVX-512 code of the elementwise steps (the softmax's scale and
 * division, attention's weighted sum of V (one row or several), the bf16 rounding, SwiGLU, the
 * residual add, the experts' weighted sum, RoPE, RMSNorm) gives the very bits of the C, which gives those
 * of the oracle above, on every length up to four registers and past,
 * tails included, with non-finite and subnormal values; and a forward
 * pass, which runs them all, gives the same hidden states under both.
 */
START_TEST(test_vec_kernels)
{
	/* The C definitions, then each CPU's code (AVX2: the weighted sum's
	 * own; avx2+fma runs the C for the rest), where this CPU has it. */
	static const char *const ways[] = { "generic", "avx2+fma", "avx512f" };
	enum { NW = 3 };
	const char *was = engy_mm_kernel_name();
	uint64_t s = 11;
	size_t len, w, i, j, d;
	int tested = 0;

	for (len = 0; len <= 80; len += len < 40 ? 1 : 13) {
		size_t hd = len % 3 == 0 ? 64 : len % 3 == 1 ? 7 : 100;
		size_t ldv = hd + 5;
		float *a = malloc((len + 1) * 4), *b = malloc((len + 1) * 4),
		      *V = malloc((len + 1) * ldv * 4), *wt = malloc(hd * 4);
		float *want[11], *got[11];
		float mx_want = -INFINITY, mx_got[NW];
		double dv = 3.0 + (double)len / 7.0, ss = 0;

		vec_operands(&s, a, len, len % 2);
		vec_operands(&s, b, len, len % 4 == 1);
		vec_operands(&s, V, (len + 1) * ldv, len % 5 == 2);
		vec_operands(&s, wt, hd, false);
		for (i = 0; i < 11; i++) {
			want[i] = malloc((len + hd + 1) * 4);
			got[i] = malloc((len + hd + 1) * 4);
		}
		/* the oracle */
		for (j = 0; j < len; j++) {
			want[0][j] = a[j] * 0.125f;
			if (want[0][j] > mx_want)
				mx_want = want[0][j];
			want[1][j] = (float)((double)a[j] / dv);
			want[2][j] = a[j];
			want[3][j] = a[j] / (1.0f + expf(-a[j])) * b[j];
			want[4][j] = a[j] + b[j];
		}
		vec_oracle_round(want[2], len);
		/* bf16dp's exp: the lanes as the one-value definition */
		for (j = 0; j < len; j++) {
			want[9][j] = engy_vec_pexp(a[j] - 0.75f);
			want[10][j] =
				a[j] / (1.0f + engy_vec_pexp(-a[j])) * b[j];
		}
		for (j = 0; j < len; j++)
			want[7][j] = a[j] + b[j] * -0.375f;
		/* RoPE over the first len & ~1 values, b as cos then sin */
		memcpy(want[8], a, len * 4);
		for (j = 0; j < len / 2; j++) {
			float x0 = a[j], x1 = a[j + len / 2], c0 = b[j],
			      s0 = b[len / 2 + j];

			want[8][j] = x0 * c0 - x1 * s0;
			want[8][j + len / 2] = x1 * c0 + x0 * s0;
		}
		for (d = 0; d < hd; d++) {
			float o = 0;

			for (j = 0; j < len; j++)
				o = o + a[j] * V[j * ldv + d];
			want[5][d] = o;
		}
		for (d = 0; d < hd; d++)
			ss += (double)V[d] * V[d];
		for (d = 0; d < hd; d++)
			want[6][d] =
				wt[d] *
				(V[d] *
				 (float)(1.0 / sqrt(ss / (double)hd + 1e-6)));
		for (w = 0; w < NW; w++) {
			if (engy_mm_set_kernel(ways[w]))
				continue;
			memcpy(got[0], a, len * 4);
			mx_got[w] = engy_vec_scale_max(got[0], len, 0.125f);
			memcpy(got[1], a, len * 4);
			engy_vec_div(got[1], len, dv);
			memcpy(got[2], a, len * 4);
			engy_vec_bf16_round(got[2], len);
			memcpy(got[3], a, len * 4);
			engy_vec_swiglu(got[3], b, len);
			memcpy(got[4], a, len * 4);
			engy_vec_add(got[4], b, len);
			engy_vec_wsum(a, len, V, ldv, hd, got[5]);
			/* several rows against one V, each its own length
			 * (some none): each row as alone */
			for (i = 1; i <= 6; i++) {
				size_t ns[6], r, ldsc = len + 3;
				float *sc = calloc(6 * ldsc + 1, 4),
				      *o = malloc(6 * (hd + 2) * 4),
				      *one = malloc(hd * 4);

				for (r = 0; r < i; r++) {
					ns[r] = len > r % 3 ? len - r % 3 : 0;
					memcpy(sc + r * ldsc, r % 2 ? b : a,
					       len * 4);
				}
				engy_vec_wsum_rows(sc, ldsc, ns, i, V, ldv, hd,
						   o, hd + 2);
				for (r = 0; r < i; r++) {
					engy_vec_wsum(sc + r * ldsc, ns[r], V,
						      ldv, hd, one);
					same_floats(o + r * (hd + 2), one, hd,
						    "wsum_rows", len);
				}
				free(sc);
				free(o);
				free(one);
			}
			engy_vec_rmsnorm(got[6], V, wt, len ? hd : 0, 1e-6);
			/* every row of V at once: each as alone */
			if (len) {
				float *rows = malloc(len * hd * 4),
				      *one = malloc(hd * 4);

				engy_vec_rmsnorm_rows(rows, hd, V, ldv, wt, len,
						      hd, 1e-6);
				for (j = 0; j < len; j++) {
					engy_vec_rmsnorm(one, V + j * ldv, wt,
							 hd, 1e-6);
					same_floats(rows + j * hd, one, hd,
						    "rmsnorm_rows", len);
				}
				free(rows);
				free(one);
			}
			memcpy(got[7], a, len * 4);
			engy_vec_add_scaled(got[7], b, -0.375f, len);
			memcpy(got[8], a, len * 4);
			engy_vec_rope(got[8], b, len & ~(size_t)1);
			memcpy(got[9], a, len * 4);
			engy_vec_exp_sub(got[9], len, 0.75f);
			memcpy(got[10], a, len * 4);
			engy_vec_swiglu_pexp(got[10], b, len);
			same_floats(got[9], want[9], len, "exp_sub", len);
			same_floats(got[10], want[10], len, "swiglu_pexp", len);
			same_floats(got[7], want[7], len, "add_scaled", len);
			same_floats(got[8], want[8], len, "rope", len);
			for (i = 0; i < 5; i++)
				same_floats(got[i], want[i], len, ways[w], len);
			same_floats(got[5], want[5], hd, "wsum", len);
			if (len)
				same_floats(got[6], want[6], hd, "rmsnorm",
					    len);
			ck_assert_msg(mx_got[w] == mx_want ||
					      (isinf(mx_want) &&
					       mx_got[w] == mx_want),
				      "%s: max %a, not %a", ways[w],
				      (double)mx_got[w], (double)mx_want);
			tested |= 1 << w;
		}
		for (i = 0; i < 11; i++) {
			free(want[i]);
			free(got[i]);
		}
		free(a);
		free(b);
		free(V);
		free(wt);
	}
	/* A forward pass under avx2+fma and avx512f where this CPU has both:
	 * the same hidden states, in both profiles (the generic matmul
	 * kernel multiplies and adds apart, so it is not one of them). */
	for (w = 0; w < 2 && (tested & 6) == 6; w++) {
		char *dir = tiny_model(w == 1, 5, 0);
		struct q3_load_opts lo = { .threads = 2,
					   .profile = Q3_PROFILE_BF16DP };
		float *h[2][NW] = { { NULL } };
		uint32_t ids[NP];
		int prof;

		for (i = 0; i < NP; i++)
			ids[i] = (uint32_t)((i * 89 + 3) % 256);
		for (prof = 0; prof < 2; prof++)
			for (i = 1; i < NW; i++) {
				struct q3_model *m;

				lo.profile = prof ? Q3_PROFILE_BF16DP
						  : Q3_PROFILE_REF;
				ck_assert_int_eq(engy_mm_set_kernel(ways[i]),
						 0);
				ck_assert_msg(
					engy_q3_model_load(dir, &lo, &m, err,
							   sizeof(err)) == 0,
					"%s", err);
				h[prof][i] = feed(m, ids, NP, 6);
				engy_q3_model_free(m);
			}
		for (prof = 0; prof < 2; prof++)
			for (i = 2; i < NW; i++)
				ck_assert_msg(
					memcmp(h[prof][1], h[prof][i],
					       NP * 64 * 4) == 0,
					"%s, %s profile: %s's hidden states "
					"differ from avx2+fma's",
					w ? "MoE" : "dense",
					prof ? "bf16dp" : "ref", ways[i]);
		ck_assert(memcmp(h[0][1], h[1][1], NP * 64 * 4) != 0);
		for (prof = 0; prof < 2; prof++)
			for (i = 0; i < NW; i++)
				free(h[prof][i]);
		rm_model(dir);
	}
	if (!(tested & 4))
		printf("test_vec_kernels: this CPU has no AVX-512F: the C "
		       "and AVX2 checked\n");
	ck_assert_int_eq(engy_mm_set_kernel(was), 0);
}
END_TEST

/*
 * The bf16dp profile's exp against the C library's double exp: within 2
 * ulp wherever e^x is a normal float (a sweep of 200,000 points over
 * [-87, 88] and every float near 0), exact at 0, and the edges: 0 below
 * -104, infinity from 89 on, e^-inf = 0, e^inf = inf, NaN stays NaN;
 * subnormal results within one step of the smallest subnormal.
 */
START_TEST(test_pexp)
{
	double worst = 0;
	int i;

	ck_assert(engy_vec_pexp(0.0f) == 1.0f);
	ck_assert(engy_vec_pexp(-0.0f) == 1.0f);
	ck_assert(engy_vec_pexp(-INFINITY) == 0.0f);
	ck_assert(engy_vec_pexp(-105.0f) == 0.0f);
	ck_assert(isinf(engy_vec_pexp(INFINITY)));
	ck_assert(isinf(engy_vec_pexp(89.0f)));
	ck_assert(isinf(engy_vec_pexp(1e30f)));
	ck_assert(isnan(engy_vec_pexp(NAN)));
	for (i = 0; i <= 200000; i++) {
		float x = -87.0f + 175.0f * (float)i / 200000.0f;
		double want = exp((double)x), got = engy_vec_pexp(x);
		double ulp = ldexp(1.0, ilogb(want) - 23);
		double e = fabs(got - want) / ulp;

		worst = e > worst ? e : worst;
		ck_assert_msg(e <= 2.0, "e^%a: %a, %.2f ulp off", (double)x,
			      got, e);
	}
	for (i = -1000; i <= 1000; i++) {
		float x = (float)i * 1e-6f;
		double want = exp((double)x), got = engy_vec_pexp(x);

		ck_assert(fabs(got - want) <= 2 * ldexp(1.0, ilogb(want) - 23));
	}
	for (i = 0; i <= 1000; i++) {
		float x = -87.5f - 16.0f * (float)i / 1000.0f;
		double want = exp((double)x), got = engy_vec_pexp(x);

		ck_assert(fabs(got - want) <= 0x1p-149);
	}
	printf("test_pexp: at most %.2f ulp from e^x over [-87, 88]\n", worst);
}
END_TEST

/*
 * The ref profile's softmax and SiLU exp in lanes (vec_exp.c), AVX2 and
 * AVX-512: the bits of the C library's expf on every float below 88 in
 * magnitude (the lanes' own path: 2.2 billion values, each sign; past
 * that the lanes call expf itself), and on a stride through the rest.  A
 * sample would not do: a lane computing one step unfused (r without its
 * fused multiply-add) differs from glibc on one value in a billion.  With
 * glibc the lanes must be on (their check at first use passed) on each
 * kernel the CPU has; elsewhere expf runs one value at a time and the
 * comparison holds trivially.
 */
START_TEST(test_exp_libm)
{
	static const char *const ways[] = { "avx2+fma", "avx512f" };
	const char *was = engy_mm_kernel_name();
	size_t n = 1 << 16, i, w, bad = 0;
	float *v = malloc(n * 4), *want = malloc(n * 4), *in = malloc(n * 4);
	uint64_t b0, end, stride;
	uint32_t b;
	int sign, pass;

	for (w = 0; w < 2; w++) {
		if (engy_mm_set_kernel(ways[w]))
			continue;
		printf("test_exp_libm: %s: expf in lanes: %s\n", ways[w],
		       engy_vec_exp_lanes() ? "yes" : "no");
#ifdef __GLIBC__
		ck_assert_msg(engy_vec_exp_lanes(),
			      "glibc and %s, but expf not in lanes", ways[w]);
#endif
		/* every value below 88 in magnitude, then a stride through
		 * all of them */
		for (pass = 0; pass < 4; pass++) {
			sign = pass & 1;
			stride = pass < 2 ? 1 : 1u << 16;
			end = pass < 2 ? 0x42b00000u : 0x100000000u;
			for (b0 = 0; b0 < end; b0 += n * stride) {
				for (i = 0; i < n; i++) {
					b = (uint32_t)(b0 + i * stride) |
					    (sign ? 0x80000000u : 0);
					memcpy(&in[i], &b, 4);
					v[i] = in[i];
					want[i] = expf(in[i] - 0.0f);
				}
				engy_vec_exp_sub_libm(v, n, 0.0f);
				for (i = 0; i < n; i++)
					if (memcmp(&v[i], &want[i], 4) &&
					    !(isnan(v[i]) && isnan(want[i])) &&
					    bad++ < 5)
						printf("expf(%a): %a, not %a\n",
						       (double)in[i],
						       (double)v[i],
						       (double)want[i]);
			}
		}
		ck_assert_msg(bad == 0, "%s: %zu values differ", ways[w], bad);
	}
	ck_assert_int_eq(engy_mm_set_kernel(was), 0);
	free(v);
	free(want);
	free(in);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("backend_ref_engine");
	TCase *tc = tcase_create("core"), *ex = tcase_create("exp");

	tcase_set_timeout(tc, 60);
	/* 4.5 billion expf calls: about 20 s here, several times that under
	 * the sanitizers */
	tcase_set_timeout(ex, 300);
	tcase_add_test(ex, test_exp_libm);
	suite_add_tcase(s, ex);
	tcase_add_test(tc, test_matmul);
	tcase_add_test(tc, test_matmul_kernels);
	tcase_add_test(tc, test_vec_kernels);
	tcase_add_test(tc, test_pexp);
	tcase_add_test(tc, test_bf16dp_profile);
	tcase_add_test(tc, test_amx_profile);
	tcase_add_test(tc, test_pool);
	tcase_add_test(tc, test_sampler);
	tcase_add_test(tc, test_paths_dense);
	tcase_add_test(tc, test_paths_moe);
	tcase_add_test(tc, test_profile_kernels);
	tcase_add_test(tc, test_profiles_dense);
	tcase_add_test(tc, test_profiles_moe);
	tcase_add_test(tc, test_hook);
	tcase_add_test(tc, test_forward_errors);
	tcase_add_test(tc, test_load_refusals);
	tcase_add_test(tc, test_quantized);
	tcase_add_test(tc, test_shards);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
