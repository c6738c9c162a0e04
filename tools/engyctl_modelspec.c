/* SPDX-License-Identifier: MIT */
/*
 * engyctl model-spec: a checkpoint's model commitment
 * (specs/model-commitment.md).
 *
 *   engyctl model-spec build [--threads N] CKPT > spec.json
 *   engyctl model-spec verify [--threads N] CKPT spec.json
 *   engyctl model-spec open [--threads N] CKPT TENSOR ROW > opening.json
 *   engyctl model-spec verify-opening OPENING.json ROOT|spec.json
 *
 * Exit status: 0 ok; 1 bad input or I/O; 2 usage; 3 a checkpoint or an
 * opening that does not match (verify, verify-opening).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engyctl.h"
#include "fsutil.h"
#include "merkle.h"
#include "modelspec.h"

int engyctl_modelspec(int argc, char **argv);

#define EXIT_MISMATCH 3
#define SPEC_MAX      ((size_t)1 << 30)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: engyctl model-spec build [--threads N] CKPT > spec.json\n"
		"       engyctl model-spec verify [--threads N] CKPT spec.json\n"
		"       engyctl model-spec open [--threads N] CKPT TENSOR ROW > opening.json\n"
		"       engyctl model-spec verify-opening OPENING.json ROOT|spec.json\n"
		"\n"
		"A Merkle commitment over a checkpoint directory's safetensors and its\n"
		"config.json (specs/model-commitment.md).  build prints the spec file;\n"
		"verify recomputes it and names the first tensor that differs; open\n"
		"prints one row of a tensor with its Merkle path; verify-opening checks\n"
		"an opening against a model root alone (64 hex digits, or a spec file's\n"
		"model_root).  Exit status 3: a mismatch.  A progress line goes to\n"
		"stderr when it is a terminal.\n");
}

static void progress(void *arg, uint64_t done, uint64_t total)
{
	(void)arg;
	fprintf(stderr, "\rmodel-spec: %llu / %llu MB hashed",
		(unsigned long long)(done >> 20),
		(unsigned long long)(total >> 20));
	fflush(stderr);
}

static int build(const char *dir, unsigned threads, struct engy_ms **out)
{
	bool tty = isatty(2);
	char err[512];
	int rc;

	rc = engy_ms_open(dir, out, err, sizeof(err));
	if (rc)
		return engyctl_fail("model-spec: %s", err);
	rc = engy_ms_build(*out, threads, tty ? progress : NULL, NULL, 250, err,
			   sizeof(err));
	if (tty)
		fputc('\n', stderr);
	if (rc) {
		engy_ms_close(*out);
		return engyctl_fail("model-spec: %s: %s", dir, err);
	}
	return 0;
}

static int do_verify_opening(const char *opath, const char *root_arg)
{
	struct engy_mc_opening *o;
	uint8_t root[32], *buf;
	char err[512];
	size_t len;
	int rc;

	if (engy_mc_unhex(root_arg, root, 32) != 0) {
		rc = engy_read_file(root_arg, SPEC_MAX, &buf, &len);
		if (rc)
			return engyctl_fail("model-spec: %s: %s", root_arg,
					    strerror(-rc));
		rc = engy_ms_spec_parse((const char *)buf, len, root, err,
					sizeof(err));
		free(buf);
		if (rc)
			return engyctl_fail("model-spec: %s: %s", root_arg,
					    err);
	}
	rc = engy_read_file(opath, SPEC_MAX, &buf, &len);
	if (rc)
		return engyctl_fail("model-spec: %s: %s", opath, strerror(-rc));
	rc = engy_mc_opening_parse((const char *)buf, len, &o, err,
				   sizeof(err));
	free(buf);
	if (rc)
		return engyctl_fail("model-spec: %s: %s", opath, err);
	rc = engy_mc_opening_verify(o, root, err, sizeof(err));
	if (rc) {
		engy_mc_opening_free(o);
		engyctl_fail("model-spec: %s", err);
		return EXIT_MISMATCH;
	}
	printf("ok: %s row %llu opens against the model root\n", o->d.name,
	       (unsigned long long)o->row);
	engy_mc_opening_free(o);
	return 0;
}

int engyctl_modelspec(int argc, char **argv)
{
	const char *sub;
	struct engy_ms *m;
	uint64_t threads = 0, row;
	char err[512], *s;
	uint8_t *buf;
	size_t len;
	int rc, a = 2;

	if (argc >= 2 &&
	    (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	sub = argv[1];
	if (argc > a + 1 && strcmp(argv[a], "--threads") == 0) {
		if (engyctl_parse_u64(argv[a + 1], 256, &threads))
			return engyctl_fail(
				"model-spec: --threads '%s': 0 to 256",
				argv[a + 1]);
		a += 2;
	}
	if (strcmp(sub, "build") == 0 && argc - a == 1) {
		if ((rc = build(argv[a], (unsigned)threads, &m)))
			return rc;
		s = engy_ms_spec_json(m);
		engy_ms_close(m);
		if (!s)
			return engyctl_fail("model-spec: out of memory");
		rc = fputs(s, stdout) < 0 || fflush(stdout) ? 1 : 0;
		free(s);
		return rc ? engyctl_fail("model-spec: writing stdout: %s",
					 strerror(errno))
			  : 0;
	}
	if (strcmp(sub, "verify") == 0 && argc - a == 2) {
		rc = engy_read_file(argv[a + 1], SPEC_MAX, &buf, &len);
		if (rc)
			return engyctl_fail("model-spec: %s: %s", argv[a + 1],
					    strerror(-rc));
		if ((rc = build(argv[a], (unsigned)threads, &m))) {
			free(buf);
			return rc;
		}
		rc = engy_ms_spec_check(m, (const char *)buf, len, err,
					sizeof(err));
		free(buf);
		engy_ms_close(m);
		if (rc == -EBADMSG) {
			engyctl_fail("model-spec: %s does not match %s: %s",
				     argv[a], argv[a + 1], err);
			return EXIT_MISMATCH;
		}
		if (rc)
			return engyctl_fail("model-spec: %s: %s", argv[a + 1],
					    err);
		printf("ok: %s matches %s\n", argv[a], argv[a + 1]);
		return 0;
	}
	if (strcmp(sub, "open") == 0 && argc - a == 3) {
		if (engyctl_parse_u64(argv[a + 2], UINT64_C(1) << 53, &row))
			return engyctl_fail(
				"model-spec: row '%s' is not a number",
				argv[a + 2]);
		if ((rc = build(argv[a], (unsigned)threads, &m)))
			return rc;
		s = engy_ms_open_row(m, argv[a + 1], row, err, sizeof(err));
		engy_ms_close(m);
		if (!s)
			return engyctl_fail("model-spec: %s", err);
		printf("%s\n", s);
		free(s);
		return 0;
	}
	if (strcmp(sub, "verify-opening") == 0 && argc == 4)
		return do_verify_opening(argv[2], argv[3]);
	usage(stderr);
	return 2;
}
