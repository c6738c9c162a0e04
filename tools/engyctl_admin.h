/* SPDX-License-Identifier: MIT */
/*
 * engyctl admin: accounts, keys, money, models, miners and the request
 * log, through a store plugin's ops (the same code the gateway runs),
 * loaded and configured the way engyd does it.
 */
#ifndef ENGY_ENGYCTL_ADMIN_H
#define ENGY_ENGYCTL_ADMIN_H

#include <stdint.h>

#include <engy/store.h>

struct admin {
	const struct engy_store_ops *ops;
	void *inst;
	const char *store; /* plugin name, for messages */
};

/* A command of a group: argv[0] is the command's name. */
struct admin_cmd {
	const char *name;
	int (*run)(struct admin *a, int argc, char **argv);
};

/* Run @argv[1] of group @group from @cmds, or print @usage. */
int admin_dispatch(struct admin *a, const char *group, const char *usage,
		   const struct admin_cmd *cmds, int argc, char **argv);

/* One line naming the failed op and the errno's meaning; returns 1. */
int admin_fail(const char *what, const char *name, int rc);

/* Usage error: "engyctl: admin GROUP CMD: MSG (--help)"; returns 2. */
int admin_usage(const char *where, const char *msg);

/* An account by name, or by id when the name is all digits and unknown. */
int admin_account(struct admin *a, const char *ref, struct engy_account *out);

/* µUSD as "12.500000" into a static-free caller buffer of 32. */
const char *admin_usd(char buf[32], int64_t micro);

/* 64 hex digits to 32 bytes; 0 or -EINVAL. */
int admin_hex32(const char *hex, uint8_t out[32]);
void admin_hex32_str(const uint8_t in[32], char out[65]);

/* Unix milliseconds as ISO 8601 UTC (buffer of 32). */
const char *admin_time(char buf[32], int64_t ms);

/* Parse a decimal integer in [lo, hi]; 0 or -EINVAL. */
int admin_int(const char *s, int64_t lo, int64_t hi, int64_t *out);

/* The groups. */
int admin_accounts(struct admin *a, int argc, char **argv);
int admin_topup(struct admin *a, int argc, char **argv);
int admin_keys(struct admin *a, int argc, char **argv);
int admin_log(struct admin *a, int argc, char **argv);
int admin_reservations(struct admin *a, int argc, char **argv);
int admin_models(struct admin *a, int argc, char **argv);
int admin_miners(struct admin *a, int argc, char **argv);
/* tools/engyctl_verdicts.c */
int admin_verdicts(struct admin *a, int argc, char **argv);

#endif /* ENGY_ENGYCTL_ADMIN_H */
