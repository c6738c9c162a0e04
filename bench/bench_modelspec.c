/* SPDX-License-Identifier: MIT */
/*
 * bench_modelspec: the model commitment's root building in MB/s per core,
 * against `sha256sum` of the same file in the same run.
 *
 *   bench_modelspec [MB]   (default 512; a checkpoint of BF16 matrices
 *                           with 2048-column rows, like a small model's)
 *
 * Prints the best of 3 runs on 1 thread, the best of 3 on all CPUs, and
 * sha256sum's best of 3 over the same safetensors file (one core); the
 * ratio is ours / sha256sum's throughput.  Also the floor: one plain
 * SHA-256 of the whole file from memory through the same OpenSSL.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "merkle.h"
#include "modelspec.h"
#include "safetensors.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int mkckpt(const char *dir, unsigned mb)
{
	struct engy_st_writer *w = engy_st_writer_new();
	const uint64_t cols = 2048, rows = 2048; /* 8 MiB per matrix */
	char path[4096], name[64];
	unsigned k, n = mb / 8 ? mb / 8 : 1;
	uint64_t shape[2] = { rows, cols }, i, s = 88172645463325252ULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/config.json", dir);
	f = fopen(path, "w");
	if (!f || !w)
		return -1;
	fprintf(f,
		"{\"model_type\":\"qwen3\",\"hidden_size\":2048,"
		"\"num_hidden_layers\":%u,\"num_attention_heads\":16,"
		"\"intermediate_size\":2048,\"vocab_size\":1000}\n",
		n);
	fclose(f);
	for (k = 0; k < n; k++) {
		uint16_t *d = malloc(rows * cols * 2);

		if (!d)
			return -1;
		for (i = 0; i < rows * cols; i++) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			d[i] = (uint16_t)s;
		}
		snprintf(name, sizeof(name),
			 "model.layers.%u.mlp.up_proj.weight", k);
		if (engy_st_writer_add_take(w, name, ENGY_ST_BF16, 2, shape, d,
					    rows * cols * 2))
			return -1;
	}
	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	k = (unsigned)engy_st_writer_save(w, path);
	engy_st_writer_free(w);
	return (int)k;
}

static double build_s(const char *dir, unsigned threads, uint64_t *bytes)
{
	struct engy_ms *m;
	char err[256];
	double t0, t;

	if (engy_ms_open(dir, &m, err, sizeof(err))) {
		fprintf(stderr, "bench_modelspec: %s\n", err);
		exit(1);
	}
	t0 = now();
	if (engy_ms_build(m, threads, NULL, NULL, 0, err, sizeof(err))) {
		fprintf(stderr, "bench_modelspec: %s\n", err);
		exit(1);
	}
	t = now() - t0;
	*bytes = engy_ms_total_bytes(m);
	engy_ms_close(m);
	return t;
}

int main(int argc, char **argv)
{
	unsigned mb = argc > 1 ? (unsigned)atoi(argv[1]) : 512, r;
	char dir[] = "/tmp/bench_modelspec.XXXXXX", cmd[4200], path[4096];
	double one = 1e30, all = 1e30, sha = 1e30, flo = 1e30, t;
	struct engy_mh *h = engy_mh_new();
	uint8_t *buf, dig[32];
	size_t len;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t bytes = 0;

	if (!mkdtemp(dir) || mkckpt(dir, mb)) {
		fprintf(stderr,
			"bench_modelspec: cannot write the checkpoint\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/model.safetensors", dir);
	snprintf(cmd, sizeof(cmd), "sha256sum %s >/dev/null", path);
	if (system(cmd) != 0) /* warm the page cache */
		fprintf(stderr, "bench_modelspec: no sha256sum\n");
	for (r = 0; r < 3; r++) {
		t = build_s(dir, 1, &bytes);
		one = t < one ? t : one;
		t = build_s(dir, 0, &bytes);
		all = t < all ? t : all;
		t = now();
		if (system(cmd) != 0)
			sha = 0;
		t = now() - t;
		if (sha > 0)
			sha = t < sha ? t : sha;
	}
	if (!h || engy_read_file(path, (size_t)8 << 30, &buf, &len))
		return 1;
	for (r = 0; r < 3; r++) {
		t = now();
		engy_mh_sha256(h, buf, len, dig);
		t = now() - t;
		flo = t < flo ? t : flo;
	}
	free(buf);
	engy_mh_free(h);
	printf("model-spec build, %.0f MB of BF16 rows (4 KiB each):\n",
	       bytes / 1e6);
	printf("  1 thread:        %7.0f MB/s per core\n", bytes / 1e6 / one);
	printf("  %2ld threads:      %7.0f MB/s (%.0f MB/s per core)\n", cpus,
	       bytes / 1e6 / all, bytes / 1e6 / all / (double)cpus);
	if (sha > 0)
		printf("  sha256sum:       %7.0f MB/s (1 core); ratio 1 thread / sha256sum = %.2f\n",
		       bytes / 1e6 / sha, sha / one);
	printf("  SHA-256 floor:   %7.0f MB/s (one message from memory, 1 core); ratio 1 thread / floor = %.2f\n",
	       len / 1e6 / flo, (bytes / one) / (len / flo));
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}
