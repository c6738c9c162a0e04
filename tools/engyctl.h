/* SPDX-License-Identifier: MIT */
/* engyctl command groups; each lives in tools/engyctl_<group>.c. */
#ifndef ENGY_ENGYCTL_H
#define ENGY_ENGYCTL_H

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

/* Prints "engyctl: <msg>" on stderr; returns 1 for `return engyctl_fail()`. */
int engyctl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* ENGY_ENGYCTL_H */
