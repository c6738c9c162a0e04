/* SPDX-License-Identifier: MIT */
/* logfmt: one event per line, key=value fields (the project's log format). */
#ifndef ENGY_LOGFMT_H
#define ENGY_LOGFMT_H

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

#endif /* ENGY_LOGFMT_H */
