/* SPDX-License-Identifier: MIT */
/*
 * bench_backend_ref: the reference engine on the generated `small`
 * checkpoints (engyctl mkmodel --size small), on every online CPU:
 * prefill and decode tokens/s against a straightforward baseline measured
 * in the same run (the same engine with the textbook triple-loop matmul
 * on one thread), the memory a loaded model takes (RSS), and the
 * machine's limits next to them: the kernel's measured peak GFLOP/s, the
 * theoretical peak from the CPU flags and clock, and the memory read
 * bandwidth that bounds decode.  Figures, never pass/fail.
 */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "matmul.h"
#include "mkmodel.h"
#include "qwen3.h"
#include "safetensors.h"

#define PREFILL	     256
#define CHUNK	     128
#define DECODE	     64
#define BASE_PREFILL 64
#define BASE_DECODE  16

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

static uint32_t argmax(const float *v, uint32_t n)
{
	uint32_t i, b = 0;

	for (i = 1; i < n; i++)
		b = v[i] > v[b] ? i : b;
	return b;
}

struct run {
	double prefill_tps, decode_tps;
};

/* Prefill @np tokens in chunks, then greedy-decode @nd. */
static struct run measure(struct q3_model *m, size_t np, size_t nd)
{
	const struct q3_config *c = engy_q3_model_config(m);
	struct q3_seq *s = engy_q3_seq_new(m, (uint32_t)(np + nd + 1));
	float *h = malloc(CHUNK * c->hidden * sizeof(float));
	float *lg = malloc(c->vocab * sizeof(float));
	struct q3_row rows[CHUNK];
	struct run r;
	size_t off, k, cnt = 0;
	double t;
	uint32_t tok;

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
	tok = argmax(lg, c->vocab);
	t = now();
	for (k = 0; k < nd; k++) {
		rows[0] = (struct q3_row){ s, tok };
		engy_q3_forward(m, rows, 1, h);
		engy_q3_logits(m, h, 1, lg);
		tok = argmax(lg, c->vocab);
	}
	r.decode_tps = nd / (now() - t);
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

static double kernel_gflops(unsigned threads)
{
	struct mm_pool *p = engy_mm_pool_new(threads);
	size_t n = 128, in = 1536, out = 1536, i;
	float *x = malloc(n * in * 4), *w = malloc(out * in * 4),
	      *y = malloc(n * out * 4);
	double t, best = 0;
	int rep;

	for (i = 0; i < n * in; i++)
		x[i] = (float)(i % 7) * 0.1f;
	for (i = 0; i < out * in; i++)
		w[i] = (float)(i % 5) * 0.1f;
	for (rep = 0; rep < 5; rep++) {
		t = now();
		engy_mm_matmul(p, x, n, w, in, out, y);
		t = now() - t;
		if (2.0 * n * in * out / t / 1e9 > best)
			best = 2.0 * n * in * out / t / 1e9;
	}
	engy_mm_pool_free(p);
	free(x);
	free(w);
	free(y);
	return best;
}

static double read_bandwidth_gbs(void)
{
	size_t n = (size_t)64 << 20, i; /* 256 MB of floats */
	float *a = malloc(n * sizeof(float)), s = 0;
	double t, best = 0;
	int rep;

	if (!a)
		return 0;
	for (i = 0; i < n; i++)
		a[i] = 1.0f;
	for (rep = 0; rep < 3; rep++) {
		t = now();
		s += engy_mm_dot(a, a + n / 2,
				 n / 2); /* reads all n floats once */
		t = now() - t;
		if (n * 4.0 / t / 1e9 > best)
			best = n * 4.0 / t / 1e9;
	}
	free(a);
	return s > 0 ? best : 0;
}

/*
 * The theoretical peak for the kernel's ISA: cores x clock x float32 FLOP
 * per cycle with two FMA pipes (AVX2: 2 x 8 lanes x 2).  With avx512f the
 * hardware may do twice that (full-width units) or the same (Zen 4 splits
 * 512-bit operations); that bound is printed too.
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
	snprintf(
		what, len,
		"%u cores x %.2f GHz x %d FLOP/cycle (%s, 2 FMA pipes)%s",
		cores, mhz / 1e3, 4 * (lanes > 8 ? 8 : lanes),
		lanes >= 8 ? "avx2+fma" : "sse",
		lanes == 16
			? "; avx512f present: up to twice that on full-width units"
			: "");
	return cores * mhz / 1e3 * 4 * (lanes > 8 ? 8 : lanes);
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

static int bench_model(const char *dir, unsigned threads, double theo,
		       double bw)
{
	struct q3_load_opts fast = { .threads = threads },
			    slow = { .naive = true };
	struct q3_model *m, *b;
	struct run r, base;
	double rss0, rss1, t, macs;
	const struct q3_config *c;
	char err[512];

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
	measure(m, 16, 4); /* warm up: page in the weights, spin up threads */
	r = measure(m, PREFILL, DECODE);
	if (engy_q3_model_load(dir, &slow, &b, err, sizeof(err))) {
		fprintf(stderr, "bench_backend_ref: load: %s\n", err);
		return 1;
	}
	base = measure(b, BASE_PREFILL, BASE_DECODE);
	printf("  prefill %d tokens (chunks of %d): %8.1f tok/s  baseline %6.1f tok/s  ratio %5.1fx"
	       "  (FLOP-bound limit %.0f tok/s at the theoretical peak)\n",
	       PREFILL, CHUNK, r.prefill_tps, base.prefill_tps,
	       r.prefill_tps / base.prefill_tps, theo * 1e9 / (2 * macs));
	printf("  decode %d tokens (greedy, KV cache): %8.1f tok/s  baseline %6.1f tok/s  ratio %5.1fx"
	       "  (memory-bound limit %.0f tok/s at %.1f GB/s)\n",
	       DECODE, r.decode_tps, base.decode_tps,
	       r.decode_tps / base.decode_tps,
	       bw * 1e9 / (macs * engy_q3_model_matrix_bytes(m)), bw);
	engy_q3_model_free(m);
	engy_q3_model_free(b);
	return 0;
}

/* Each step in its own process, so RSS counts one loaded model alone. */
static int in_child(int (*fn)(const char *, unsigned, double, double),
		    int (*gen)(bool, const char *), bool moe, const char *dir,
		    unsigned threads, double theo, double bw)
{
	int st;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		st = gen ? gen(moe, dir) : fn(dir, threads, theo, bw);
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
	double peak, peak1, theo, bw;
	char what[160], t1[] = "/tmp/engy-bench-XXXXXX",
			t2[] = "/tmp/engy-bench-XXXXXX";
	char cmd[128];
	int rc;

	/* A fixed threshold: big blocks are always mapped and unmapped, so
	 * freed memory never lingers in the heap to blur the RSS figure. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	if (!mkdtemp(t1) || !mkdtemp(t2))
		return 1;
	peak1 = kernel_gflops(1);
	peak = kernel_gflops(threads);
	theo = theoretical(threads, what, sizeof(what));
	bw = read_bandwidth_gbs();
	printf("bench_backend_ref: kernel %s, %u threads\n",
	       engy_mm_kernel_name(), threads);
	printf("  matmul kernel peak (128x1536x1536): %.1f GFLOP/s on %u threads, %.1f on 1"
	       "; theoretical %.0f GFLOP/s = %s; kernel at %.0f%% of it\n",
	       peak, threads, peak1, theo, what, 100 * peak / theo);
	rc = in_child(NULL, generate, false, t1, 0, 0, 0) ||
	     in_child(NULL, generate, true, t2, 0, 0, 0) ||
	     in_child(bench_model, NULL, false, t1, threads, theo, bw) ||
	     in_child(bench_model, NULL, true, t2, threads, theo, bw);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", t1, t2);
	return system(cmd) || rc;
}
