/* SPDX-License-Identifier: MIT */
/*
 * Standalone driver for the fuzz targets when libFuzzer is not linked in:
 * replays every file of the seed corpus directories given on the command
 * line (or $FUZZ_CORPUS), then runs a bounded number of deterministic
 * mutations of them (FUZZ_ITERS, default 20000).  A crash or sanitizer
 * report fails the test; the driver itself never judges output.  A
 * corpus directory that cannot be read, a seed that cannot be read, or
 * no seed at all fails too (exit 1): mutating nothing is not a pass.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

struct seed {
	uint8_t *p;
	size_t n;
};

static struct seed *seeds;
static size_t n_seeds;

static void add_seed(const uint8_t *p, size_t n)
{
	struct seed *s = realloc(seeds, (n_seeds + 1) * sizeof(*s));

	if (!s)
		abort();
	seeds = s;
	seeds[n_seeds].p = malloc(n ? n : 1);
	if (!seeds[n_seeds].p)
		abort();
	memcpy(seeds[n_seeds].p, p, n);
	seeds[n_seeds].n = n;
	n_seeds++;
}

static void load_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t buf[1 << 16];
	size_t n;

	if (!f) {
		fprintf(stderr, "fuzz: cannot read seed %s\n", path);
		exit(1);
	}
	n = fread(buf, 1, sizeof(buf), f);
	if (ferror(f)) {
		fprintf(stderr, "fuzz: cannot read seed %s\n", path);
		exit(1);
	}
	fclose(f);
	add_seed(buf, n);
	LLVMFuzzerTestOneInput(buf, n);
}

static void load_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];
	struct stat st;

	if (!d) {
		fprintf(stderr, "fuzz: no corpus at %s\n", dir);
		exit(1);
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			load_file(path);
	}
	closedir(d);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void mutate_and_run(void)
{
	static const uint8_t interesting[] = { 0,   0xff, 0x7f, 0x80, '"', '\\',
					       '{', '}',  '[',	']',  '<', '>',
					       '=', '/',  '\n', '0',  '9' };
	uint8_t buf[1 << 16];
	size_t n = 0, i, k;

	if (n_seeds) {
		struct seed *s = &seeds[next() % n_seeds];

		n = s->n < sizeof(buf) ? s->n : sizeof(buf);
		memcpy(buf, s->p, n);
	}
	k = 1 + next() % 8;
	for (i = 0; i < k; i++) {
		switch (next() % 5) {
		case 0: /* flip a bit */
			if (n)
				buf[next() % n] ^=
					(uint8_t)(1u << (next() % 8));
			break;
		case 1: /* overwrite with an interesting byte */
			if (n)
				buf[next() % n] =
					interesting[next() %
						    sizeof(interesting)];
			break;
		case 2: /* truncate */
			if (n)
				n = next() % n;
			break;
		case 3: /* insert a byte */
			if (n < sizeof(buf)) {
				size_t at = n ? next() % n : 0;

				memmove(buf + at + 1, buf + at, n - at);
				buf[at] = (uint8_t)next();
				n++;
			}
			break;
		default: /* duplicate a slice */
			if (n && n < sizeof(buf) / 2) {
				size_t at = next() % n,
				       len = 1 + next() % (n - at);

				memcpy(buf + n, buf + at, len);
				n += len;
			}
			break;
		}
	}
	LLVMFuzzerTestOneInput(buf, n);
}

int main(int argc, char **argv)
{
	const char *env = getenv("FUZZ_ITERS");
	long iters = env ? atol(env) : 20000;
	long i;
	int a;

	for (a = 1; a < argc; a++)
		load_dir(argv[a]);
	if (argc < 2) {
		/* Under `make check`: $top_srcdir/fuzz/corpus/<target>. */
		const char *top = getenv("top_srcdir");
		const char *base = strrchr(argv[0], '/');
		char dir[4096];

		base = base ? base + 1 : argv[0];
		if (strncmp(base, "lt-", 3) == 0)
			base += 3;
		if (strncmp(base, "fuzz_", 5) == 0)
			base += 5;
		if (getenv("FUZZ_CORPUS"))
			load_dir(getenv("FUZZ_CORPUS"));
		else if (top) {
			snprintf(dir, sizeof(dir), "%s/fuzz/corpus/%s", top,
				 base);
			load_dir(dir);
		} else {
			fprintf(stderr,
				"fuzz: no corpus: give its directories, "
				"or set FUZZ_CORPUS or top_srcdir\n");
			return 1;
		}
	}
	if (n_seeds == 0) {
		fprintf(stderr, "fuzz: the corpus holds no seed\n");
		return 1;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
	for (i = 0; i < iters; i++)
		mutate_and_run();
	printf("fuzz: %zu seeds, %ld mutations, no crash\n", n_seeds, iters);
	for (i = 0; i < (long)n_seeds; i++)
		free(seeds[i].p);
	free(seeds);
	return 0;
}
