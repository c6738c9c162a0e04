/* SPDX-License-Identifier: MIT */
/*
 * engyctl toploc: build and check TOPLOC proofs without a daemon.
 *
 *   engyctl toploc prove  --topk K --dbs B --hidden H [--dtype bf16|f32]
 *                         [--prefill N] [--no-skip-prefill] [FILE|-]
 *   engyctl toploc verify --topk K --dbs B --hidden H [--dtype bf16|f32]
 *                         [--prefill N] [--no-skip-prefill] --proofs FILE
 *                         --max-mismatches V --min-pass P
 *                         [--max-mant-mean X] [--max-mant-median Y] [ROWS|-]
 *
 * Rows are little-endian binary32 or bfloat16, row after row.  Exit status
 * of verify: 0 pass, 3 cheat, 4 unproven; 1 bad input, 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "engyctl.h"
#include "toploc.h"

int engyctl_toploc(int argc, char **argv);

#define EXIT_CHEAT    3
#define EXIT_UNPROVEN 4
#define PARSE_HELP    -1 /* --help printed: exit 0 */

struct opts {
	struct engy_toploc_params p;
	struct engy_proof_limits lim;
	uint32_t dtype;
	uint64_t hidden;
	uint64_t prefill;
	const char *proofs;
	const char *rows;
	int have_topk, have_dbs, have_v, have_p;
	int verify_only; /* an option only verify takes was given */
};

static const char usage_text[] =
	"usage: engyctl toploc prove  --topk K --dbs B --hidden H "
	"[--dtype bf16|f32]\n"
	"                             [--prefill N] [--no-skip-prefill] "
	"[FILE|-]\n"
	"       engyctl toploc verify --topk K --dbs B --hidden H "
	"[--dtype bf16|f32]\n"
	"                             [--prefill N] [--no-skip-prefill] "
	"--proofs FILE\n"
	"                             --max-mismatches V --min-pass P\n"
	"                             [--max-mant-mean X] "
	"[--max-mant-median Y] [ROWS|-]\n"
	"\n"
	"Rows: little-endian bf16 (default) or f32 values, HIDDEN per row;\n"
	"the first N rows (--prefill) are prompt positions.  prove prints one\n"
	"base64 proof per line; verify reads them one per line and prints a\n"
	"line per chunk and a verdict line.  verify exits 0 for pass, 3 for\n"
	"cheat, 4 for unproven; 1 on bad input, 2 on usage errors.\n";

static int usage(FILE *f, int rc)
{
	fputs(usage_text, f);
	return rc;
}

static int parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= 0))
		return -EINVAL;
	*out = v;
	return 0;
}

/* Parses the shared and per-command options; 0, or an exit status. */
/* The options only verify takes. */
static int take_verify_option(int c, const char *arg, struct opts *o)
{
	uint64_t v;
	int bad = 0;

	switch (c) {
	case 'p':
		o->proofs = arg;
		break;
	case 'V':
		bad = engyctl_parse_u64(arg, ENGY_TOPLOC_MAX_TOPK, &v) != 0;
		o->lim.max_exp_mismatches = (uint32_t)v;
		o->have_v = 1;
		break;
	case 'P':
		bad = parse_double(arg, &o->lim.min_pass_ratio) ||
		      o->lim.min_pass_ratio > 1;
		o->have_p = 1;
		break;
	case 'M':
		bad = parse_double(arg, &o->lim.max_mant_mean) != 0;
		break;
	case 'D':
		bad = parse_double(arg, &o->lim.max_mant_median) != 0;
		break;
	default:
		return -1;
	}
	o->verify_only = 1;
	return bad;
}

/* One option's value into @o: 0, 1 when bad, -1 when not an option. */
static int take_option(int c, const char *arg, struct opts *o)
{
	uint64_t v;
	int bad = 0;

	switch (c) {
	case 'k':
		bad = engyctl_parse_u64(arg, ENGY_TOPLOC_MAX_TOPK, &v) ||
		      v == 0;
		o->p.topk = (uint32_t)v;
		o->have_topk = 1;
		break;
	case 'b':
		bad = engyctl_parse_u64(arg, ENGY_TOPLOC_MAX_DBS, &v) || v == 0;
		o->p.dbs = (uint32_t)v;
		o->have_dbs = 1;
		break;
	case 'H':
		bad = engyctl_parse_u64(arg, UINT32_MAX, &o->hidden) ||
		      o->hidden == 0;
		break;
	case 'd':
		if (strcmp(arg, "bf16") == 0)
			o->dtype = ENGY_DTYPE_BF16;
		else if (strcmp(arg, "f32") == 0)
			o->dtype = ENGY_DTYPE_F32;
		else
			bad = 1;
		break;
	case 'n':
		bad = engyctl_parse_u64(arg, UINT32_MAX, &o->prefill) != 0;
		break;
	case 'S':
		o->p.skip_prefill = false;
		break;
	default:
		return take_verify_option(c, arg, o);
	}
	return bad;
}

/* What must be given, and what must not, once all options are read. */
static int check_options(int argc, char **argv, int verify, struct opts *o)
{
	if (!o->have_topk || !o->have_dbs || !o->hidden) {
		fprintf(stderr,
			"engyctl: toploc %s: --topk, --dbs and "
			"--hidden are required\n",
			argv[0]);
		return 2;
	}
	if (verify && (!o->proofs || !o->have_v || !o->have_p)) {
		fprintf(stderr,
			"engyctl: toploc verify: --proofs, "
			"--max-mismatches and --min-pass are required\n");
		return 2;
	}
	if (!verify && o->verify_only) {
		fprintf(stderr, "engyctl: toploc prove: --proofs and the "
				"thresholds are options of verify\n");
		return 2;
	}
	if (optind < argc - 1) {
		fprintf(stderr, "engyctl: toploc %s: one input file at most\n",
			argv[0]);
		return 2;
	}
	return 0;
}

static int parse(int argc, char **argv, int verify, struct opts *o)
{
	static const struct option lo[] = {
		{ "topk", required_argument, NULL, 'k' },
		{ "dbs", required_argument, NULL, 'b' },
		{ "hidden", required_argument, NULL, 'H' },
		{ "dtype", required_argument, NULL, 'd' },
		{ "prefill", required_argument, NULL, 'n' },
		{ "no-skip-prefill", no_argument, NULL, 'S' },
		{ "proofs", required_argument, NULL, 'p' },
		{ "max-mismatches", required_argument, NULL, 'V' },
		{ "min-pass", required_argument, NULL, 'P' },
		{ "max-mant-mean", required_argument, NULL, 'M' },
		{ "max-mant-median", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c, li, bad;

	memset(o, 0, sizeof(*o));
	o->p.skip_prefill = true;
	o->dtype = ENGY_DTYPE_BF16;
	o->lim.size = sizeof(o->lim);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, &li)) != -1) {
		if (c == 'h') {
			usage(stdout, 0);
			return PARSE_HELP;
		}
		bad = take_option(c, optarg, o);
		if (bad < 0) {
			fprintf(stderr,
				"engyctl: toploc %s: unknown option or "
				"missing value: '%s' (--help)\n",
				argv[0], argv[optind - 1]);
			return 2;
		}
		if (bad) {
			fprintf(stderr,
				"engyctl: toploc %s: bad value '%s' "
				"for --%s\n",
				argv[0], optarg, lo[li].name);
			return 2;
		}
	}
	if (check_options(argc, argv, verify, o))
		return 2;
	o->rows = optind < argc ? argv[optind] : "-";
	return 0;
}

/* Reads all of @path ("-": stdin) into a malloc'd buffer. */
static int read_all(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t cap = 1 << 16, n = 0, got;
	uint8_t *b = NULL, *nb;
	int rc = 0;

	if (!f)
		return engyctl_fail("%s: %s", path, strerror(errno));
	for (;;) {
		if (!b || n == cap) {
			cap = b ? cap * 2 : cap;
			nb = realloc(b, cap);
			if (!nb) {
				rc = engyctl_fail("%s: out of memory", path);
				break;
			}
			b = nb;
		}
		got = fread(b + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f))
				rc = engyctl_fail("%s: read error", path);
			break;
		}
	}
	if (f != stdin)
		fclose(f);
	if (rc) {
		free(b);
		return rc;
	}
	*buf = b;
	*len = n;
	return 0;
}

static int host_is_le(void)
{
	const uint16_t one = 1;

	return *(const uint8_t *)&one == 1;
}

/* Reads the rows file and describes it in @rows (data in *@buf). */
static int load_rows(const struct opts *o, uint8_t **buf,
		     struct engy_rows *rows)
{
	size_t es = o->dtype == ENGY_DTYPE_F32 ? 4 : 2, len, i, row;
	const char *name = strcmp(o->rows, "-") ? o->rows : "stdin";
	uint8_t t;
	int rc;

	rc = read_all(o->rows, buf, &len);
	if (rc)
		return rc;
	row = es * o->hidden;
	if (len % row) {
		rc = engyctl_fail("%s: %zu bytes is not a whole number of rows "
				  "(%llu values of %zu bytes each)",
				  name, len, (unsigned long long)o->hidden, es);
		goto fail;
	}
	if (len == 0) {
		rc = engyctl_fail("%s: no rows", name);
		goto fail;
	}
	if (len / row > UINT32_MAX || o->prefill > len / row) {
		rc = engyctl_fail("%s: %zu rows, --prefill %llu is more", name,
				  len / row, (unsigned long long)o->prefill);
		goto fail;
	}
	/* The file is little-endian; rows are in host order. */
	if (!host_is_le())
		for (i = 0; i < len; i += es) {
			t = (*buf)[i];
			(*buf)[i] = (*buf)[i + es - 1];
			(*buf)[i + es - 1] = t;
			if (es == 4) {
				t = (*buf)[i + 1];
				(*buf)[i + 1] = (*buf)[i + 2];
				(*buf)[i + 2] = t;
			}
		}
	rows->data = *buf;
	rows->dtype = o->dtype;
	rows->n_rows = (uint32_t)(len / row);
	rows->hidden = (uint32_t)o->hidden;
	rows->n_prefill = (uint32_t)o->prefill;
	return 0;
fail:
	free(*buf);
	*buf = NULL;
	return rc;
}

/* Every chunk must hold at least topk values: name the first that does not. */
static int check_chunks(const struct opts *o, const struct engy_rows *rows)
{
	uint64_t n_dec = rows->n_rows - rows->n_prefill, last;

	if (!o->p.skip_prefill &&
	    (uint64_t)rows->n_prefill * rows->hidden < o->p.topk)
		return engyctl_fail("the prefill chunk holds %llu values, "
				    "fewer than --topk %u",
				    (unsigned long long)rows->n_prefill *
					    rows->hidden,
				    o->p.topk);
	if (n_dec == 0)
		return 0;
	last = n_dec % o->p.dbs ? n_dec % o->p.dbs : o->p.dbs;
	if (last * rows->hidden < o->p.topk)
		return engyctl_fail("the last chunk holds %llu values, fewer "
				    "than --topk %u",
				    (unsigned long long)(last * rows->hidden),
				    o->p.topk);
	return 0;
}

static int cmd_prove(const struct opts *o)
{
	size_t n = 0, i, plen = engy_toploc_proof_len(o->p.topk);
	struct engy_rows rows;
	uint8_t *buf = NULL, *proofs = NULL;
	char *b64 = NULL;
	int rc;

	rc = load_rows(o, &buf, &rows);
	if (rc)
		return rc;
	rc = check_chunks(o, &rows);
	if (rc)
		goto out;
	if (engy_toploc_prove_rows(&rows, &o->p, &proofs, &n)) {
		rc = engyctl_fail("proving failed (out of memory?)");
		goto out;
	}
	b64 = malloc(engy_base64_enc_len(plen) + 1);
	if (!b64) {
		rc = engyctl_fail("out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		engy_base64_encode(b64, proofs + i * plen, plen);
		puts(b64);
	}
	if (fflush(stdout) || ferror(stdout))
		rc = engyctl_fail("stdout: write error");
out:
	free(b64);
	free(proofs);
	free(buf);
	return rc;
}

static const char *verdict_name(int v)
{
	return v == ENGY_VERDICT_PASS	 ? "pass"
	       : v == ENGY_VERDICT_CHEAT ? "cheat"
					 : "unproven";
}

/* Splits the proofs file into lines (in place); a final newline ends it. */
static int split_lines(char *text, size_t len, char ***lines, size_t **lens,
		       size_t *n)
{
	size_t cap = 0, i, start = 0;

	*lines = NULL;
	*lens = NULL;
	*n = 0;
	for (i = 0; i <= len; i++) {
		if (i < len && text[i] != '\n')
			continue;
		if (i == len && start == len)
			break;
		if (*n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			char **l = realloc(*lines, nc * sizeof(*l));
			size_t *s;

			if (!l)
				return -ENOMEM;
			*lines = l;
			s = realloc(*lens, nc * sizeof(*s));
			if (!s)
				return -ENOMEM;
			*lens = s;
			cap = nc;
		}
		(*lines)[*n] = text + start;
		(*lens)[(*n)++] = i - start;
		start = i + 1;
	}
	return 0;
}

static int cmd_verify(const struct opts *o)
{
	struct engy_toploc_report rep = { 0 };
	struct engy_rows rows;
	uint8_t *buf = NULL, *ptext = NULL;
	char **lines = NULL;
	size_t *lens = NULL, n = 0, plen, i, want;
	int rc;

	rc = load_rows(o, &buf, &rows);
	if (rc)
		return rc;
	rc = check_chunks(o, &rows);
	if (rc)
		goto out;
	rc = read_all(o->proofs, &ptext, &plen);
	if (rc)
		goto out;
	if (split_lines((char *)ptext, plen, &lines, &lens, &n)) {
		rc = engyctl_fail("out of memory");
		goto out;
	}
	if (engy_toploc_verify_rows(&rows, &o->p, (const char *const *)lines,
				    lens, n, &o->lim, &rep)) {
		rc = engyctl_fail("verifying failed (out of memory?)");
		goto out;
	}
	for (i = 0; i < rep.n_chunks; i++)
		printf("chunk=%zu exp_mismatches=%u mant_mean=%.6g "
		       "mant_median=%.6g\n",
		       i, rep.chunks[i].exp_mismatches, rep.chunks[i].mant_mean,
		       rep.chunks[i].mant_median);
	printf("verdict=%s reason=%s chunks=%zu passed=%zu\n",
	       verdict_name(rep.verdict), rep.reason, rep.n_chunks, rep.n_pass);
	fflush(stdout);
	if (rep.verdict == ENGY_VERDICT_PASS) {
		rc = 0;
	} else if (rep.verdict == ENGY_VERDICT_CHEAT) {
		rc = EXIT_CHEAT;
	} else {
		rc = EXIT_UNPROVEN;
		if (rep.defect == ENGY_TOPLOC_CHUNK_COUNT) {
			engy_toploc_n_chunks(&rows, &o->p, &want);
			engyctl_fail("%s: %zu proofs for %zu chunks", o->proofs,
				     n, want);
		} else if (rep.bad_proof >= 0) {
			engyctl_fail("%s line %ld: unusable proof (%s)",
				     o->proofs, rep.bad_proof + 1, rep.reason);
		} else {
			engyctl_fail("%s: unusable proofs (%s)", o->proofs,
				     rep.reason);
		}
	}
out:
	engy_toploc_report_free(&rep);
	free(lines);
	free(lens);
	free(ptext);
	free(buf);
	return rc;
}

int engyctl_toploc(int argc, char **argv)
{
	struct opts o;
	int verify, rc;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)
		return usage(argc < 2 ? stderr : stdout, argc < 2 ? 2 : 0);
	if (strcmp(argv[1], "prove") == 0) {
		verify = 0;
	} else if (strcmp(argv[1], "verify") == 0) {
		verify = 1;
	} else {
		fprintf(stderr,
			"engyctl: toploc: unknown command '%s' "
			"(prove or verify)\n",
			argv[1]);
		return 2;
	}
	rc = parse(argc - 1, argv + 1, verify, &o);
	if (rc)
		return rc == PARSE_HELP ? 0 : rc;
	return verify ? cmd_verify(&o) : cmd_prove(&o);
}
