/* SPDX-License-Identifier: MIT */
/* logfmt: one event per line, key=value fields (the project's log format). */
#ifndef ENGY_LOGFMT_H
#define ENGY_LOGFMT_H

#include <stdarg.h>
#include <stddef.h>

/*
 * engy_logfmt_value() - append @s to @dst as a logfmt value: bare when it
 * holds only safe characters, else double-quoted with \" \\ \n \t and \xHH
 * escapes.  Writes at most @cap bytes including the NUL; returns the length
 * it needed (like snprintf).
 */
size_t engy_logfmt_value(char *dst, size_t cap, const char *s);

/* engy_logfmt_now() - the current UTC time as 2026-11-30T12:00:00.123Z. */
void engy_logfmt_now(char *dst, size_t cap);

/*
 * engy_logfmt_vformat() - vsnprintf() for the conversions log lines use
 * (%s %c %d %i %u %x %% with no flag, width or precision, lengths l, ll,
 * z), without libc's general machinery: most of a line's cost.  Writes
 * what fits of the text into @cap bytes, NUL included, and returns its
 * whole length as vsnprintf() would, or -1 at the first conversion it
 * does not take (then @ap is spent: the caller formats a va_copy() with
 * vsnprintf()).
 */
int engy_logfmt_vformat(char *dst, size_t cap, const char *fmt, va_list ap);

#endif /* ENGY_LOGFMT_H */
