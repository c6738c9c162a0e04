/* SPDX-License-Identifier: MIT */
/* The host's event log: one line per event, logfmt, any thread. */
#ifndef ENGY_CORE_LOG_H
#define ENGY_CORE_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <engy/host.h>

/* Parse "err", "warning", "notice", "info", "debug"; -EINVAL otherwise. */
int engy_log_parse_level(const char *s);
const char *engy_log_level_name(int level);

/* Log to @path (appending), or to stderr when @path is NULL. */
int engy_log_open(const char *path, int level);
/* Before engy_log_open(): every line is written before the call returns
 * (no writer thread), so a line is in the file before anything the
 * program does after logging it.  For debugging and for tests that read
 * the log as soon as they see the program's answer. */
void engy_log_set_sync(bool on);
/* Reopen the file (SIGHUP, after rotation); a no-op for stderr. */
int engy_log_reopen(void);
void engy_log_close(void);
/* Info and debug lines to a file are written by a thread of the log's own
 * (a write() can wait on the disk); notice and above are written before
 * the call returns, after every line logged before them.  flush() returns
 * when every line logged so far is written. */
void engy_log_flush(void);
void engy_log_set_level(int level);
int engy_log_get_level(void);

void engy_vlog(int level, const char *inst, const char *fmt, va_list ap)
	ENGY_PRINTF(3, 0);
void engy_log(int level, const char *inst, const char *fmt, ...)
	ENGY_PRINTF(3, 4);

/* Lines written at @level since start (for metrics). */
uint64_t engy_log_count(int level);

#endif /* ENGY_CORE_LOG_H */
