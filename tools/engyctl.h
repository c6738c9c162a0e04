/* SPDX-License-Identifier: MIT */
/* engyctl command groups; each lives in tools/engyctl_<group>.c. */
#ifndef ENGY_ENGYCTL_H
#define ENGY_ENGYCTL_H

#include <stdint.h>

/*
 * A command gets argv with argv[0] = its own name and returns the process
 * exit status: 0 success, 1 failure (a one-line error on stderr naming
 * what was wrong), 2 usage error.
 */
struct engyctl_cmd {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

/*
 * engyctl_parse_u64() - a decimal integer in [0, @max], digits only (no
 * sign, no blanks): 0, or -EINVAL.
 */
int engyctl_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* Prints "engyctl: <msg>" on stderr; returns 1 for `return engyctl_fail()`. */
int engyctl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* ENGY_ENGYCTL_H */
