/* SPDX-License-Identifier: MIT */
/*
 * bench_backend_ref: the reference engine on the generated `small`
 * checkpoints (engyctl mkmodel --size small), on every online CPU:
 * prefill and decode tokens/s against a straightforward baseline measured
 * in the same run (the same engine with the textbook triple-loop matmul
 * on one thread), the memory a loaded model takes (RSS), and the
 * machine's limits next to them: the kernel's measured peak GFLOP/s, the
 * theoretical peak from the CPU flags and clock, and the read bandwidth
 * that bounds decode, measured at the level the weights live in (a cache
 * level when they fit in it, else DRAM; sizes from sysfs): a buffer of
 * the weights' size streamed after each round's decode (each stream the
 * bytes of a decode, the best of as many streams as decodes), each
 * round's decode over the roofline of its own measurement
 * (weights and KV cache read per token), the median of those ratios
 * printed.  Like the bandwidth, the decode is the best of several (the
 * round's DECODE_REPS decodes of the same tokens); the first decode's
 * ratio is printed next to it, and the decode compared with torch's (one
 * decode a round) is the first.
 *
 * torch is the peer: bench/bench_backend_ref_torch.py runs the same shapes
 * as a plain bf16 torch transformer with random weights (a throughput peer
 * of the same FLOPs, not a numerical one), in rounds interleaved with
 * engy's (engy, torch, engy, torch, ...; medians), so machine load hits
 * both.  When python3 cannot import torch and the bench runs as root it
 * installs Debian's python3-torch with apt-get (the bench's own peer, never
 * a dependency of engy); otherwise it says why torch was not measured and
 * goes on.  Figures, never pass/fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "matmul.h"
#include "mkmodel.h"
#include "qwen3.h"
#include "safetensors.h"

#define PREFILL	     256
#define CHUNK	     128
#define DECODE	     64
#define DECODE_REPS  3 /* decodes a round, the best over the roofline */
#define BASE_PREFILL 64
#define BASE_DECODE  16
#define ROUNDS	     3 /* interleaved engy / torch rounds, medians */
#define MAX_LEVELS   4
#define NPEERS	     2

/*
 * torch in bf16 is the goal's peer; float32 too, because torch's bf16
 * matmul is oneDNN's only on AVX-512 CPUs and a generic loop elsewhere.
 */
static const char *const dtypes[NPEERS] = { "bf16", "f32" };

#ifndef TORCH_PEER
#define TORCH_PEER "bench/bench_backend_ref_torch.py"
#endif

/* Set in main() before the children fork. */
static int torch_ok;
static char torch_why[256];
static struct level {
	unsigned level; /* 2, 3, ...; 0 = DRAM */
	double bytes;	/* all instances the threads reach */
	unsigned n;	/* instances */
	double gbs;	/* measured read bandwidth, all threads */
} levels[MAX_LEVELS + 1];
static unsigned n_levels;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double rss_mb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	double kb = 0;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = strtod(line + 6, NULL);
	if (f)
		fclose(f);
	return kb * 1024 / 1e6; /* MB, like the weight figure */
}

/* The first largest (NaN never chosen): the best so far in a register,
 * not reloaded each step (a decode step's 6144 logits took 20 us
 * that way, 2% of the step). */
static uint32_t argmax(const float *v, uint32_t n)
{
	uint32_t i, b = 0;
	float best = n ? v[0] : 0;

	for (i = 1; i < n; i++)
		if (v[i] > best) {
			best = v[i];
			b = i;
		}
	return b;
}

struct run {
	double prefill_tps, decode_tps;
	double decode_best_tps; /* the best of the decodes (see measure) */
};

/* Prefill @np tokens in chunks, then greedy-decode @nd; then @reps - 1
 * more times the same decode from the same place (the cache cut back to
 * the prompt): decode_tps is the first, decode_best_tps the best. */
static struct run measure(struct q3_model *m, size_t np, size_t nd, int reps)
{
	const struct q3_config *c = engy_q3_model_config(m);
	struct q3_seq *s = engy_q3_seq_new(m, (uint32_t)(np + nd + 1));
	float *h = malloc(CHUNK * c->hidden * sizeof(float));
	float *lg = malloc(c->vocab * sizeof(float));
	struct q3_row rows[CHUNK];
	struct run r;
	size_t off, k, cnt = 0;
	double t, tps;
	uint32_t tok, first;
	int rep;

	t = now();
	for (off = 0; off < np; off += cnt) {
		cnt = np - off < CHUNK ? np - off : CHUNK;
		for (k = 0; k < cnt; k++)
			rows[k] = (struct q3_row){ s, (uint32_t)((off + k) *
								 97 % 5000) };
		engy_q3_forward(m, rows, cnt, h);
	}
	engy_q3_logits(m, h + (cnt - 1) * c->hidden, 1, lg);
	r.prefill_tps = np / (now() - t);
	first = argmax(lg, c->vocab);
	r.decode_tps = r.decode_best_tps = 0;
	for (rep = 0; rep < reps; rep++) {
		engy_q3_seq_truncate(s, (uint32_t)np);
		tok = first;
		t = now();
		for (k = 0; k < nd; k++) {
			rows[0] = (struct q3_row){ s, tok };
			engy_q3_forward(m, rows, 1, h);
			engy_q3_logits(m, h, 1, lg);
			tok = argmax(lg, c->vocab);
		}
		tps = nd / (now() - t);
		if (!rep)
			r.decode_tps = tps;
		if (tps > r.decode_best_tps)
			r.decode_best_tps = tps;
	}
	engy_q3_seq_free(s);
	free(h);
	free(lg);
	return r;
}

/* Multiply-adds per token: every matmul weight used once (active experts only). */
static double macs_per_token(const struct q3_config *c)
{
	double h = c->hidden, qd = (double)c->n_heads * c->head_dim;
	double kvd = (double)c->n_kv * c->head_dim, mlp, total = 0;
	uint32_t l;

	for (l = 0; l < c->n_layers; l++) {
		mlp = c->sparse[l] ? 3.0 * h * c->moe_inter * c->top_k +
					     h * c->n_experts
				   : 3.0 * h * c->inter;
		total += h * qd * 2 + h * kvd * 2 + mlp;
	}
	return total + h * c->vocab;
}

/* The kernel profiles of a CPU's bf16 instructions, measured where the
 * instruction computes them (bf16 activations: torch bf16's arithmetic
 * there; a miner's speed path, not the auditor's reference). */
static const struct instr_profile {
	int mm, q3;
	const char *name, *kernel, *what;
} instr[] = {
	{ MM_PROFILE_BF16DP, Q3_PROFILE_BF16DP, "bf16dp", "avx512bf16",
	  "AVX512-BF16 VDPBF16PS" },
	{ MM_PROFILE_AMX, Q3_PROFILE_AMX, "amx", "amx-bf16",
	  "AMX-BF16 TDPBF16PS" },
};
#define N_INSTR (sizeof(instr) / sizeof(instr[0]))

/* The matmul's best GFLOP/s of five: the reference (float32 weights), or
 * the kernel profile @profile (enum mm_profile) on bf16 weights. */
static double kernel_gflops(unsigned threads, int profile)
{
	struct mm_pool *p = engy_mm_pool_new(threads);
	size_t n = 128, in = 1536, out = 1536, i;
	float *x = malloc(n * in * 4), *w = malloc(out * in * 4),
	      *y = malloc(n * out * 4);
	uint16_t *wb = malloc(out * in * 2);
	struct mm_part part = { x, wb, y, n, in, out, MM_BF16 };
	double t, best = 0;
	int rep;

	for (i = 0; i < n * in; i++)
		x[i] = (float)(i % 7) * 0.1f;
	for (i = 0; i < out * in; i++) {
		w[i] = (float)(i % 5) * 0.1f;
		wb[i] = (uint16_t)(0x3f80 + i % 5); /* 1.0 .. 1.03 */
	}
	for (rep = 0; rep < 5; rep++) {
		t = now();
		if (profile != MM_PROFILE_REF)
			engy_mm_matmul_batch_profile(p, &part, 1, profile);
		else
			engy_mm_matmul(p, x, n, w, in, out, y);
		t = now() - t;
		if (2.0 * n * in * out / t / 1e9 > best)
			best = 2.0 * n * in * out / t / 1e9;
	}
	engy_mm_pool_free(p);
	free(x);
	free(w);
	free(wb);
	free(y);
	return best;
}

struct reader {
	const float *a;
	size_t n; /* floats of this thread's slice */
	int passes;
	pthread_barrier_t *go;
	float sum;
	double t0, t1; /* this thread's timed passes */
};

static void *read_slice(void *arg)
{
	struct reader *r = arg;
	int p;

	r->sum = engy_mm_dot(r->a, r->a + r->n / 2, r->n / 2); /* untimed */
	pthread_barrier_wait(r->go);
	r->t0 = now();
	for (p = 0; p < r->passes; p++) /* reads the slice once per pass */
		r->sum += engy_mm_dot(r->a, r->a + r->n / 2, r->n / 2);
	r->t1 = now();
	return NULL;
}

/*
 * Read bandwidth of @bytes of floats split over @threads threads, each
 * reading its own slice @passes times (a buffer that fits a cache level
 * stays in it after the first touch): the best of @reps, GB/s.  The
 * threads time themselves (first start to last end): a main thread
 * descheduled between the barrier and its clock would time a fraction of
 * the work.
 */
static double read_bandwidth_gbs(size_t bytes, unsigned threads, int passes,
				 int reps)
{
	size_t n = bytes / sizeof(float), per = n / threads / 16 * 16, i;
	/* on 2 MiB pages where the kernel gives them, as the engine's
	 * weights are (lib/qwen3/qwen3_load.c) */
	size_t len =
		(n * sizeof(float) + (2u << 20) - 1) / (2u << 20) * (2u << 20);
	float *a = aligned_alloc(2u << 20, len);
	struct reader r[64];
	pthread_t th[64];
	pthread_barrier_t go;
	double t, t0, t1, best = 0, sum = 0;
	unsigned k;
	int rep;

	if (!a || threads > 64 || !per) {
		free(a);
		return 0;
	}
#ifdef MADV_HUGEPAGE
	(void)madvise(a, len, MADV_HUGEPAGE);
#endif
	for (i = 0; i < n; i++)
		a[i] = 1.0f;
	for (rep = 0; rep < reps; rep++) {
		pthread_barrier_init(&go, NULL, threads + 1);
		for (k = 0; k < threads; k++) {
			r[k] = (struct reader){ a + k * per, per, passes, &go,
						0,	     0,	  0 };
			pthread_create(&th[k], NULL, read_slice, &r[k]);
		}
		/* each thread's untimed first pass pulls its slice in */
		pthread_barrier_wait(&go);
		for (k = 0; k < threads; k++) {
			pthread_join(th[k], NULL);
			sum += r[k].sum;
		}
		t0 = r[0].t0;
		t1 = r[0].t1;
		for (k = 1; k < threads; k++) {
			t0 = r[k].t0 < t0 ? r[k].t0 : t0;
			t1 = r[k].t1 > t1 ? r[k].t1 : t1;
		}
		t = t1 - t0;
		pthread_barrier_destroy(&go);
		if (per * threads * 4.0 * passes / t / 1e9 > best)
			best = per * threads * 4.0 * passes / t / 1e9;
	}
	free(a);
	return sum > 0 ? best : 0;
}

static long read_long(const char *path, int kib)
{
	FILE *f = fopen(path, "r");
	char buf[64] = "";
	long v;

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	v = strtol(buf, NULL, 10);
	return kib && strchr(buf, 'K')	 ? v * 1024
	       : kib && strchr(buf, 'M') ? v << 20
					 : v;
}

/*
 * The data/unified cache levels 2 and up that the bench's threads reach
 * (sysfs; every distinct instance over cpus 0..threads-1 counts), each
 * with its read bandwidth measured on half its size, then DRAM (256 MB).
 */
static void find_levels(unsigned threads)
{
	char path[160], shared[MAX_LEVELS][32][64];
	unsigned cpu, idx, j, ns[MAX_LEVELS] = { 0 };
	long lev, size;
	FILE *f;

	n_levels = 0;
	for (idx = 0; idx < 8; idx++) {
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu0/cache/index%u/level",
			 idx);
		lev = read_long(path, 0);
		if (lev < 2 || lev > MAX_LEVELS + 1)
			continue;
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu0/cache/index%u/size",
			 idx);
		size = read_long(path, 1);
		if (size <= 0)
			continue;
		levels[n_levels] = (struct level){ (unsigned)lev, 0, 0, 0 };
		for (cpu = 0; cpu < threads; cpu++) {
			char line[64] = "";

			snprintf(
				path, sizeof(path),
				"/sys/devices/system/cpu/cpu%u/cache/index%u/shared_cpu_list",
				cpu, idx);
			f = fopen(path, "r");
			if (!f || !fgets(line, sizeof(line), f))
				snprintf(line, sizeof(line), "cpu%u", cpu);
			if (f)
				fclose(f);
			for (j = 0; j < ns[n_levels]; j++)
				if (!strcmp(shared[n_levels][j], line))
					break;
			if (j == ns[n_levels] && j < 32)
				snprintf(shared[n_levels][ns[n_levels]++], 64,
					 "%s", line);
		}
		levels[n_levels].n = ns[n_levels];
		levels[n_levels].bytes = (double)size * ns[n_levels];
		levels[n_levels].gbs = read_bandwidth_gbs(
			(size_t)(levels[n_levels].bytes / 2), threads,
			(int)(512e6 / levels[n_levels].bytes) + 1, 5);
		if (++n_levels == MAX_LEVELS)
			break;
	}
	levels[n_levels] = (struct level){
		0, 0, 0, read_bandwidth_gbs((size_t)256 << 20, threads, 1, 5)
	};
}

/* The smallest level holding @bytes (DRAM when none does). */
static const struct level *level_for(double bytes)
{
	unsigned i;

	for (i = 0; i < n_levels; i++)
		if (levels[i].bytes >= bytes)
			return &levels[i];
	return &levels[n_levels];
}

static const char *level_name(const struct level *l)
{
	static char buf[4][16];
	static int k;

	if (!l->level)
		return "DRAM";
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "L%u", l->level);
	return buf[k];
}

/* ---- the torch peer ---- */

/*
 * The interpreter that imports torch: python3 on the PATH, else the
 * distribution's own (Debian's python3-torch is for it, and a PATH may
 * put another python3 first).  Its probe line names the BLAS that torch's
 * float32 matmuls use.
 */
static const char *const pythons[] = { "python3", "/usr/bin/python3" };
static const char *python = "python3";
static char torch_blas[64];

static int find_python(void)
{
	char cmd[512], line[160], ver[64];
	size_t i;
	FILE *f;
	int ok;

	for (i = 0; i < sizeof(pythons) / sizeof(pythons[0]); i++) {
		snprintf(cmd, sizeof(cmd), "%s '%s' --probe 2>/dev/null",
			 pythons[i], TORCH_PEER);
		f = popen(cmd, "r");
		if (!f)
			continue;
		ok = fgets(line, sizeof(line), f) &&
		     sscanf(line, "torch %63s blas %63s", ver, torch_blas) == 2;
		if (pclose(f) == 0 && ok) {
			python = pythons[i];
			return 0;
		}
	}
	return -1;
}

/*
 * Can python3 import torch, with an optimised BLAS?  If not and we are
 * root, install Debian's python3-torch and OpenBLAS (a provider of the
 * libblas.so.3 it links; the default provider is netlib's reference
 * BLAS, too slow to be a peer).
 */
static void torch_prepare(void)
{
	char inst[320];
	const char *upd =
		"DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=600 "
		"update >/dev/null 2>&1";
	int have = 0, st;
	double t;

	if (access(TORCH_PEER, R_OK)) {
		snprintf(torch_why, sizeof(torch_why), "%s: %s", TORCH_PEER,
			 strerror(errno));
		return;
	}
	have = !find_python();
	if (have && strcmp(torch_blas, "reference")) {
		torch_ok = 1;
		return;
	}
	if (geteuid()) {
		if (have) { /* measured, with the BLAS named in its line */
			torch_ok = 1;
			return;
		}
		snprintf(
			torch_why, sizeof(torch_why),
			"python3 cannot import torch and the bench is not root "
			"(apt-get install python3-torch installs it)");
		return;
	}
	snprintf(
		inst, sizeof(inst),
		"DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=600 "
		"install -y --no-install-recommends %slibopenblas0-openmp >/dev/null 2>&1",
		have ? "" : "python3-torch ");
	printf("  torch: %s; installing %slibopenblas0-openmp (apt-get, once)\n",
	       have ? "torch's BLAS is the reference one"
		    : "python3 cannot import torch",
	       have ? "" : "python3-torch ");
	fflush(stdout);
	t = now();
	st = system(inst);
	if (st) /* no package lists yet: update them once and retry */
		st = system(upd) || system(inst);
	if (st && !have) {
		snprintf(torch_why, sizeof(torch_why),
			 "apt-get install python3-torch failed");
		return;
	}
	if (find_python()) {
		snprintf(
			torch_why, sizeof(torch_why),
			"python3-torch installed but no python3 imports torch");
		return;
	}
	printf("  torch: %s in %.0f s\n",
	       st ? "apt-get install failed; torch measured as it is"
		  : "installed",
	       now() - t);
	torch_ok = 1;
}

struct peer {
	pid_t pid;
	FILE *to, *from;
	char info[256];
};

/* Start the torch peer on @c's shapes; 0 once it said "ready". */
static int peer_start(struct peer *p, const struct q3_config *c,
		      unsigned threads, const char *dtype, char *why,
		      size_t len)
{
	int in[2], out[2];
	char a[16][24], *argv[40];
	int n = 0, k = 0;
	char *nl;

#define ARG(name, val)                                                         \
	do {                                                                   \
		argv[n++] = name;                                              \
		snprintf(a[k], sizeof(a[k]), "%lu", (unsigned long)(val));     \
		argv[n++] = a[k++];                                            \
	} while (0)
	argv[n++] = (char *)python;
	argv[n++] = TORCH_PEER;
	ARG("--threads", threads);
	ARG("--hidden", c->hidden);
	ARG("--layers", c->n_layers);
	ARG("--heads", c->n_heads);
	ARG("--kv", c->n_kv);
	ARG("--head-dim", c->head_dim);
	ARG("--inter", c->inter);
	ARG("--vocab", c->vocab);
	ARG("--experts", c->moe ? c->n_experts : 0);
	ARG("--top-k", c->moe ? c->top_k : 0);
	ARG("--moe-inter", c->moe ? c->moe_inter : 0);
	ARG("--prefill", PREFILL);
	ARG("--chunk", CHUNK);
	ARG("--decode", DECODE);
	ARG("--rope-theta", c->rope_theta);
	argv[n++] = "--dtype";
	argv[n++] = (char *)dtype;
	argv[n] = NULL;
#undef ARG
	if (pipe(in) || pipe(out)) {
		snprintf(why, len, "pipe: %s", strerror(errno));
		return -1;
	}
	/* The bench's ends stay out of the other peer's process, so closing
	 * them is this peer's EOF. */
	fcntl(in[1], F_SETFD, FD_CLOEXEC);
	fcntl(out[0], F_SETFD, FD_CLOEXEC);
	fflush(stdout);
	p->pid = fork();
	if (p->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execvp(python, argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (p->pid < 0) {
		close(in[1]);
		close(out[0]);
		snprintf(why, len, "fork: %s", strerror(errno));
		return -1;
	}
	p->to = fdopen(in[1], "w");
	p->from = fdopen(out[0], "r");
	if (!p->to || !p->from || !fgets(p->info, sizeof(p->info), p->from) ||
	    strncmp(p->info, "ready ", 6)) {
		snprintf(why, len,
			 "the peer script did not start (see stderr)");
		return -1;
	}
	if ((nl = strchr(p->info, '\n')))
		*nl = 0;
	return 0;
}

static int peer_run(struct peer *p, struct run *r)
{
	char line[128];

	if (fputs("run\n", p->to) == EOF || fflush(p->to) ||
	    !fgets(line, sizeof(line), p->from) ||
	    sscanf(line, "prefill %lf decode %lf", &r->prefill_tps,
		   &r->decode_tps) != 2)
		return -1;
	return 0;
}

static void peer_stop(struct peer *p)
{
	if (p->to)
		fclose(p->to); /* EOF: the peer exits */
	if (p->from)
		fclose(p->from);
	if (p->pid > 0)
		waitpid(p->pid, NULL, 0);
	memset(p, 0, sizeof(*p));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * The theoretical peak for the kernel's ISA: cores x clock x float32 FLOP
 * per cycle with two FMA pipes (AVX2: 2 x 8 lanes x 2; AVX-512 2 x 16 x 2
 * when the avx512f kernel runs, where a CPU that splits 512-bit operations,
 * as Zen 4 does, reaches half; the line says so).
 */
static double theoretical(unsigned cores, char *what, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[4096];
	double mhz = 0;
	int lanes = 4; /* SSE */

	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "cpu MHz", 7) && !mhz)
			mhz = strtod(strchr(line, ':') + 1, NULL);
		if (!strncmp(line, "flags", 5) && lanes == 4) {
			if (strstr(line, " avx2") && strstr(line, " fma"))
				lanes = 8;
			if (lanes == 8 && strstr(line, " avx512f"))
				lanes = 16;
		}
	}
	if (f)
		fclose(f);
	if (!strcmp(engy_mm_kernel_name(), "generic") && lanes > 4)
		lanes = 4; /* the kernel in use does not use AVX */
	if (!strcmp(engy_mm_kernel_name(), "avx2+fma") && lanes > 8)
		lanes = 8; /* nor AVX-512 */
	snprintf(what, len,
		 "%u cores x %.2f GHz x %d FLOP/cycle (%s, 2 FMA pipes)%s",
		 cores, mhz / 1e3, 4 * lanes,
		 lanes == 16  ? "avx512f"
		 : lanes == 8 ? "avx2+fma"
			      : "sse",
		 lanes == 16 ? "; a CPU that splits 512-bit operations "
			       "(Zen 4) does half"
			     : "");
	return cores * mhz / 1e3 * 4 * lanes;
}

/* " rounds: prefill P1 P2 P3, decode D1 D2 D3 tok/s (sorted; @note)":
 * the rest of a line; median() sorted the rounds. */
static void print_rounds(const double *pre, const double *dec, const char *note)
{
	int i;

	printf(" rounds: prefill");
	for (i = 0; i < ROUNDS; i++)
		printf(" %.1f", pre[i]);
	printf(", decode");
	for (i = 0; i < ROUNDS; i++)
		printf(" %.1f", dec[i]);
	printf(" tok/s (sorted; %s)\n", note);
}

/* Write the small checkpoint (in a child: the bench's heap stays fresh). */
static int generate(bool moe, const char *dir)
{
	struct mkmodel_opts o = {
		.moe = moe, .small = true, .seed = 1, .dtype = ENGY_ST_BF16
	};
	char err[512];

	if (mkmodel_write(&o, dir, err, sizeof(err))) {
		fprintf(stderr, "bench_backend_ref: mkmodel: %s\n", err);
		return 1;
	}
	return 0;
}

static int bench_model(const char *dir, unsigned threads, double theo)
{
	struct q3_load_opts fast = { .threads = threads },
			    slow = { .naive = true };
	struct q3_model *m, *b, *mdp[N_INSTR] = { NULL };
	double dpp[N_INSTR][ROUNDS], dpd[N_INSTR][ROUNDS];
	size_t k;
	struct run r, base, tr = { 0, 0, 0 };
	double rss0, rss1, t, macs, roof, wb, wbw, kvb, tokb, t_pre[NPEERS],
		t_dec[NPEERS];
	double ep[ROUNDS], ed[ROUNDS], tp[NPEERS][ROUNDS], td[NPEERS][ROUNDS];
	double bw[ROUNDS], rr[ROUNDS], rr1[ROUNDS], rmed, rmed1, lim;
	const struct q3_config *c;
	const struct level *lv;
	struct peer peer[NPEERS] = { 0 };
	char err[512], why[NPEERS][256] = { "" }, info[NPEERS][256];
	int i, j, nt[NPEERS] = { 0 };

	rss0 = rss_mb();
	t = now();
	if (engy_q3_model_load(dir, &fast, &m, err, sizeof(err))) {
		fprintf(stderr, "bench_backend_ref: load: %s\n", err);
		return 1;
	}
	t = now() - t;
	rss1 = rss_mb();
	c = engy_q3_model_config(m);
	macs = macs_per_token(c);
	printf("%s small: hidden %u, %u layers, vocab %u%s; %.1fM MACs/token; %s\n",
	       c->moe ? "qwen3-moe" : "qwen3", c->hidden, c->n_layers, c->vocab,
	       c->moe ? ", experts 16 top-4" : "", macs / 1e6,
	       engy_q3_model_device(m));
	printf("  load %.2f s; weights %.1f MB in memory (%s matrices); RSS +%.1f MB per loaded model\n",
	       t, engy_q3_model_bytes(m) / 1e6,
	       engy_q3_model_matrix_bytes(m) == 2 ? "bf16" : "float32",
	       rss1 - rss0);
	/* warm up: page in the weights, spin up threads */
	measure(m, 16, 4, 1);
	/* The kernel profiles of the CPU's bf16 instructions (bf16
	 * activations, what torch bf16 runs here) where the instruction
	 * computes them: the same rounds. */
	for (k = 0; k < N_INSTR; k++) {
		struct q3_load_opts dp = { .threads = threads,
					   .profile = instr[k].q3 };

		if (strcmp(engy_mm_profile_kernel(instr[k].mm),
			   instr[k].kernel))
			continue;
		if (engy_q3_model_load(dir, &dp, &mdp[k], err, sizeof(err)))
			fprintf(stderr, "bench_backend_ref: load %s: %s\n",
				instr[k].name, err);
		else
			measure(mdp[k], 16, 4, 1);
	}
	for (j = 0; j < NPEERS; j++)
		if (torch_ok && peer_start(&peer[j], c, threads, dtypes[j],
					   why[j], sizeof(why[j])))
			peer_stop(&peer[j]);
	/* A decode step reads every used weight and, in each layer, the
	 * float32 keys and values of the positions so far: the mean
	 * context of the DECODE steps after a PREFILL-token prompt. */
	kvb = 2.0 * sizeof(float) * c->n_layers * c->n_kv * c->head_dim *
	      (PREFILL + (DECODE + 1) / 2.0);
	wb = (double)engy_q3_model_bytes(m);
	for (i = 0; i < ROUNDS; i++) {
		r = measure(m, PREFILL, DECODE, DECODE_REPS);
		ep[i] = r.prefill_tps;
		ed[i] = r.decode_tps;
		/* Where the weights live, measured next to each decode: stream
		 * a buffer of their size as decode does (sysfs may not tell
		 * the host's caches in a VM; a VM's memory speed drifts, so
		 * each round's decode meets its own roofline), measured as
		 * the decode is: each stream the bytes of a decode (DECODE
		 * tokens), the best of DECODE_REPS streams against the best
		 * of the round's DECODE_REPS decodes (the first decode's ratio
		 * is printed too). */
		tokb = macs * engy_q3_model_matrix_bytes(m) + kvb;
		bw[i] = read_bandwidth_gbs((size_t)wb, threads,
					   (int)(DECODE * tokb / wb + 0.5),
					   DECODE_REPS);
		lim = bw[i] * 1e9 / tokb;
		rr[i] = r.decode_best_tps / lim;
		rr1[i] = ed[i] / lim;
		for (k = 0; k < N_INSTR; k++) {
			if (!mdp[k])
				continue;
			r = measure(mdp[k], PREFILL, DECODE, 1);
			dpp[k][i] = r.prefill_tps;
			dpd[k][i] = r.decode_tps;
		}
		for (j = 0; j < NPEERS; j++) {
			if (!peer[j].pid)
				continue;
			if (peer_run(&peer[j], &tr)) {
				snprintf(
					why[j], sizeof(why[j]),
					"the peer stopped in round %d (see stderr)",
					i + 1);
				peer_stop(&peer[j]);
				continue;
			}
			tp[j][nt[j]] = tr.prefill_tps;
			td[j][nt[j]++] = tr.decode_tps;
		}
	}
	for (j = 0; j < NPEERS; j++) {
		snprintf(info[j], sizeof(info[j]), "%s", peer[j].info);
		peer_stop(&peer[j]);
		if (nt[j] == ROUNDS) {
			t_pre[j] = median(tp[j], ROUNDS);
			t_dec[j] = median(td[j], ROUNDS);
		}
	}
	r.prefill_tps = median(ep, ROUNDS);
	r.decode_tps = median(ed, ROUNDS);
	if (engy_q3_model_load(dir, &slow, &b, err, sizeof(err))) {
		fprintf(stderr, "bench_backend_ref: load: %s\n", err);
		return 1;
	}
	base = measure(b, BASE_PREFILL, BASE_DECODE, 1);
	lv = level_for(wb);
	wbw = median(bw, ROUNDS);
	rmed = median(rr, ROUNDS);
	rmed1 = median(rr1, ROUNDS);
	roof = wbw * 1e9 / (macs * engy_q3_model_matrix_bytes(m) + kvb);
	printf("  prefill %d tokens (chunks of %d): %8.1f tok/s  baseline %6.1f tok/s  ratio %5.1fx"
	       "  (FLOP-bound limit %.0f tok/s at the theoretical peak)\n",
	       PREFILL, CHUNK, r.prefill_tps, base.prefill_tps,
	       r.prefill_tps / base.prefill_tps, theo * 1e9 / (2 * macs));
	printf("  decode %d tokens (greedy, KV cache): %8.1f tok/s  baseline %6.1f tok/s  ratio %5.1fx"
	       "  (memory-bound limit %.0f tok/s at %.1f GB/s, %s)\n",
	       DECODE, r.decode_tps, base.decode_tps,
	       r.decode_tps / base.decode_tps, roof, wbw, "roofline below");
	printf("  engy");
	print_rounds(ep, ed, "the figures above are medians");
	for (j = 0; j < NPEERS; j++) {
		if (!torch_ok || nt[j] < ROUNDS) {
			printf("  torch %s: not measured: %s\n", dtypes[j],
			       torch_ok ? why[j] : torch_why);
			continue;
		}
		printf("  torch peer: %s; same shapes and work, random weights"
		       " (a throughput peer of the same FLOPs, not a numerical one)\n",
		       info[j] + 6);
		printf("  torch %s", dtypes[j]);
		print_rounds(tp[j], td[j], "interleaved with engy's");
		printf("  prefill: engy %.1f tok/s, torch %s %.1f tok/s, ratio %.2f (goal >= 1)\n",
		       r.prefill_tps, dtypes[j], t_pre[j],
		       r.prefill_tps / t_pre[j]);
		printf("  decode: engy %.1f tok/s, torch %s %.1f tok/s, ratio %.2f (goal >= 1)\n",
		       r.decode_tps, dtypes[j], t_dec[j],
		       r.decode_tps / t_dec[j]);
	}
	for (k = 0; k < N_INSTR; k++) {
		double pp, pd;

		if (!mdp[k]) {
			printf("  kernel profile %s: not measured: %s\n",
			       instr[k].name,
			       strcmp(engy_mm_profile_kernel(instr[k].mm),
				      instr[k].kernel)
				       ? "the instruction does not compute it "
					 "here (not on this CPU, or not "
					 "usable: it would run as its "
					 "definition in C)"
				       : "its model did not load (see stderr)");
			continue;
		}
		pp = median(dpp[k], ROUNDS);
		pd = median(dpd[k], ROUNDS);
		printf("  kernel profile %s (bf16 activations, %s: torch "
		       "bf16's arithmetic; a miner's speed path, not the "
		       "auditor's reference)",
		       instr[k].name, instr[k].what);
		print_rounds(dpp[k], dpd[k], "interleaved with engy's");
		j = 0; /* torch bf16 */
		if (torch_ok && nt[j] == ROUNDS)
			printf("  prefill, %s: engy %.1f tok/s, torch %s %.1f tok/s, ratio %.2f (goal >= 1); decode %.1f tok/s, ratio %.2f\n",
			       instr[k].name, pp, dtypes[j], t_pre[j],
			       pp / t_pre[j], pd, pd / t_dec[j]);
		else
			printf("  prefill, %s: engy %.1f tok/s, decode %.1f tok/s (torch bf16 not measured)\n",
			       instr[k].name, pp, pd);
		engy_q3_model_free(mdp[k]);
	}
	if (lv->level)
		printf("  weights %.1f MB fit in %s (%.1f MB per sysfs)",
		       wb / 1e6, level_name(lv), lv->bytes / 1e6);
	else
		printf("  weights %.1f MB exceed %s (%.1f MB per sysfs)",
		       wb / 1e6,
		       n_levels ? level_name(&levels[n_levels - 1])
				: "the caches",
		       n_levels ? levels[n_levels - 1].bytes / 1e6 : 0);
	printf("; a buffer of their size streams at %.1f GB/s (%u threads, the median of a measurement after each round's decode, the best of %d streams of a decode's bytes: %.1f %.1f %.1f sorted; DRAM-sized: %.1f GB/s)\n",
	       wbw, threads, DECODE_REPS, bw[0], bw[1], bw[2],
	       levels[n_levels].gbs);
	printf("  decode roofline: %.1f MB of weights and %.1f MB of KV cache"
	       " (float32, the mean context of %.1f) read per token at %.1f GB/s = %.0f tok/s;"
	       " decode %.1f tok/s; each round's best of %d decodes over its own roofline (sorted) %.2f %.2f %.2f, ratio %.2f (the median; goal >= 0.8);"
	       " each round's first decode alone %.2f %.2f %.2f, ratio %.2f\n",
	       macs * engy_q3_model_matrix_bytes(m) / 1e6, kvb / 1e6,
	       PREFILL + (DECODE + 1) / 2.0, wbw, roof, r.decode_tps,
	       DECODE_REPS, rr[0], rr[1], rr[2], rmed, rr1[0], rr1[1], rr1[2],
	       rmed1);
	engy_q3_model_free(m);
	engy_q3_model_free(b);
	return 0;
}

/* Each step in its own process, so RSS counts one loaded model alone. */
static int in_child(int (*fn)(const char *, unsigned, double),
		    int (*gen)(bool, const char *), bool moe, const char *dir,
		    unsigned threads, double theo)
{
	int st;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		st = gen ? gen(moe, dir) : fn(dir, threads, theo);
		fflush(stdout);
		_exit(st);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	return !WIFEXITED(st) || WEXITSTATUS(st);
}

int main(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned threads = ncpu > 0 ? (unsigned)ncpu : 1;
	double peak, peak1, theo;
	char what[160], t1[] = "/tmp/engy-bench-XXXXXX",
			t2[] = "/tmp/engy-bench-XXXXXX";
	char cmd[128];
	unsigned i;
	int rc;

	/* A fixed threshold: big blocks are always mapped and unmapped, so
	 * freed memory never lingers in the heap to blur the RSS figure. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	signal(SIGPIPE, SIG_IGN); /* a torch peer that died: EPIPE, not death */
	if (!mkdtemp(t1) || !mkdtemp(t2))
		return 1;
	peak1 = kernel_gflops(1, MM_PROFILE_REF);
	peak = kernel_gflops(threads, MM_PROFILE_REF);
	theo = theoretical(threads, what, sizeof(what));
	find_levels(threads);
	printf("bench_backend_ref: kernel %s, %u threads\n",
	       engy_mm_kernel_name(), threads);
	printf("  matmul kernel peak (128x1536x1536): %.1f GFLOP/s on %u threads, %.1f on 1"
	       "; theoretical %.0f GFLOP/s = %s; kernel at %.0f%% of it\n",
	       peak, threads, peak1, theo, what, 100 * peak / theo);
	for (i = 0; i < N_INSTR; i++)
		if (!strcmp(engy_mm_profile_kernel(instr[i].mm),
			    instr[i].kernel))
			printf("  %s profile's kernel (%s, same shape, bf16 weights): %.1f GFLOP/s on %u threads, %.1f on 1\n",
			       instr[i].name, instr[i].what,
			       kernel_gflops(threads, instr[i].mm), threads,
			       kernel_gflops(1, instr[i].mm));
	printf("  read bandwidth (%u threads, measured):", threads);
	for (i = 0; i <= n_levels; i++)
		if (levels[i].level)
			printf("%s %s (%u x %.0f KiB) %.1f GB/s", i ? "," : "",
			       level_name(&levels[i]), levels[i].n,
			       levels[i].bytes / levels[i].n / 1024,
			       levels[i].gbs);
		else
			printf("%s DRAM (256 MB) %.1f GB/s", i ? "," : "",
			       levels[i].gbs);
	printf("\n");
	torch_prepare();
	if (!torch_ok)
		printf("  torch: not measured: %s\n", torch_why);
	rc = in_child(NULL, generate, false, t1, 0, 0) ||
	     in_child(NULL, generate, true, t2, 0, 0) ||
	     in_child(bench_model, NULL, false, t1, threads, theo) ||
	     in_child(bench_model, NULL, true, t2, threads, theo);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", t1, t2);
	return system(cmd) || rc;
}
