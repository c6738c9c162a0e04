/* SPDX-License-Identifier: MIT */
/* Whole-file reads and atomic writes with clear limits. */
#ifndef ENGY_FSUTIL_H
#define ENGY_FSUTIL_H

#include <stddef.h>
#include <stdint.h>

/*
 * engy_read_file() - read all of @path ("-" = stdin) into a malloc'd buffer
 * with a trailing NUL (not counted in @len).  Refuses files over @max bytes
 * with -EFBIG.  Returns 0 or a negative errno.
 */
int engy_read_file(const char *path, size_t max, uint8_t **buf, size_t *len);

/*
 * engy_write_file_atomic() - write @len bytes to @path through a temporary
 * file in the same directory, fsync, rename.  Returns 0 or a negative errno.
 */
int engy_write_file_atomic(const char *path, const void *data, size_t len,
			   unsigned mode);

#endif /* ENGY_FSUTIL_H */
