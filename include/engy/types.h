/* SPDX-License-Identifier: MIT */
/* Plain data types shared by the host, plugins and libengy. */
#ifndef ENGY_TYPES_H
#define ENGY_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A borrowed byte range. */
struct engy_buf {
	const uint8_t *p;
	size_t len;
};

/* A list of strings (ENGY_OPT_STR_LIST); host-owned, read-only. */
struct engy_strv {
	size_t n;
	const char *const *v;
};

/* Element types of hidden-state rows. */
enum engy_dtype {
	ENGY_DTYPE_F32 = 1,  /* IEEE binary32, host byte order */
	ENGY_DTYPE_BF16 = 2, /* bfloat16 bit patterns, uint16_t */
};

/**
 * struct engy_rows - a borrowed matrix of per-token hidden states.
 * @data:   n_rows * hidden elements of @dtype, row-major.
 * @dtype:  enum engy_dtype.
 * @n_rows: number of rows (tokens).
 * @hidden: elements per row.
 * @n_prefill: how many leading rows are prompt (prefill) positions; the
 *          rest are generated tokens.
 */
struct engy_rows {
	const void *data;
	uint32_t dtype;
	uint32_t n_rows;
	uint32_t hidden;
	uint32_t n_prefill;
};

/* A verdict on one served request (specs/settlement.md §1). */
enum engy_verdict_kind {
	ENGY_VERDICT_PASS = 1,
	ENGY_VERDICT_CHEAT = 2,
	ENGY_VERDICT_UNPROVEN = 3,
};

#ifdef __cplusplus
}
#endif

#endif /* ENGY_TYPES_H */
