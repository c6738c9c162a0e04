/* SPDX-License-Identifier: MIT */
/* Helpers shared by the backend-ref unit tests: generated checkpoints. */
#ifndef REF_TESTLIB_H
#define REF_TESTLIB_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkmodel.h"
#include "safetensors.h"

/* A fresh temp directory holding a tiny generated checkpoint. */
static inline char *tiny_model(bool moe, uint64_t seed, int quant)
{
	struct mkmodel_opts o = {
		.moe = moe, .seed = seed, .quant = quant, .dtype = ENGY_ST_BF16
	};
	char tmpl[] = "/tmp/engy-ref-XXXXXX", err[512];
	char *dir = mkdtemp(tmpl);

	ck_assert_ptr_nonnull(dir);
	ck_assert_msg(mkmodel_write(&o, dir, err, sizeof(err)) == 0, "%s", err);
	return strdup(dir);
}

static inline void rm_model(char *dir)
{
	char cmd[600];

	if (!dir)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	free(dir);
}

/* Overwrite DIR/NAME with @text. */
static inline void put_file(const char *dir, const char *name, const char *text)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

#endif /* REF_TESTLIB_H */
