/* SPDX-License-Identifier: MIT */
/*
 * engyctl verdicts: the auditor's verdicts from the store, newest first.
 *
 *   engyctl verdicts [STORE OPTIONS] [--miner HOTKEY] [--limit N]
 *
 * STORE OPTIONS are engyctl admin's (--store, --plugin-dir, --state-dir,
 * --db, -o NAME=VALUE, -v); the store is opened by the same code
 * (`engyctl admin verdicts list` is the same command).  One line per
 * verdict: statistics only, as the store holds them.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engyctl.h"
#include "engyctl_admin.h"

int engyctl_admin(int argc, char **argv);
int engyctl_verdicts(int argc, char **argv);

static const char usage_text[] =
	"usage: engyctl verdicts [STORE OPTIONS] [--miner HOTKEY] [--limit N]\n"
	"\n"
	"The auditor's verdicts, newest first (default 50, at most 10000):\n"
	"time, request, miner, model, scheme, verdict, reason, chunks passed,\n"
	"the P99 and worst chunk exponent mismatches (and the P99 chunk score,\n"
	"mismatches / topk), the largest chunk mantissa mean, the thresholds.\n"
	"STORE OPTIONS as engyctl admin's (--state-dir, --db, -o, ...).\n";

static const char *vname(uint32_t v)
{
	return v == ENGY_VERDICT_PASS	 ? "pass"
	       : v == ENGY_VERDICT_CHEAT ? "cheat"
					 : "unproven";
}

int admin_verdicts(struct admin *a, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "miner", required_argument, NULL, 'm' },
		{ "limit", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct engy_verdict_query q = { .size = sizeof(q),
					.limit = 50,
					.newest_first = 1 };
	struct engy_verdict *v;
	int64_t lim;
	size_t n, i;
	int c, rc;

	if (argc < 2 || strcmp(argv[1], "list")) {
		fputs(usage_text, argc < 2 || !a ? stdout : stderr);
		return a && argc >= 2 ? 2 : 0;
	}
	optind = 0;
	opterr = 0;
	argc--;
	argv++;
	while ((c = getopt_long(argc, argv, "+h", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (strlen(optarg) >= sizeof(q.miner))
				return admin_usage("verdicts",
						   "--miner: too long");
			strcpy(q.miner, optarg);
			break;
		case 'n':
			if (admin_int(optarg, 1, 10000, &lim))
				return admin_usage("verdicts",
						   "--limit: 1..10000");
			q.limit = (uint32_t)lim;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			return admin_usage("verdicts",
					   "unknown option or missing value");
		}
	}
	if (!a)
		return 0;
	if (!a->ops->verdict_list)
		return engyctl_fail(
			"verdicts: store %s has no verdicts (an older plugin)",
			a->store);
	rc = a->ops->verdict_list(a->inst, &q, &v, &n);
	if (rc)
		return admin_fail("verdicts", q.miner[0] ? q.miner : "list",
				  rc);
	printf("%-19s %-24s %-10s %-16s %-6s %-8s %-13s %7s %7s %7s %9s %8s %s\n",
	       "time", "request", "miner", "model", "scheme", "verdict",
	       "reason", "chunks", "passed", "exp_p99", "p99_score", "mant_max",
	       "limits");
	for (i = 0; i < n; i++) {
		char t[32], mk[12];

		snprintf(mk, sizeof(mk), "%.8s…", v[i].miner);
		printf("%-19s %-24s %-10s %-16s %-6s %-8s %-13s %7u %7u %7u %9.4f %8.3f v=%u p=%u.%06u\n",
		       admin_time(t, v[i].time_ms), v[i].request_id, mk,
		       v[i].model, v[i].scheme, vname(v[i].verdict),
		       v[i].reason, v[i].chunks, v[i].passed, v[i].exp_p99,
		       v[i].topk ? (double)v[i].exp_p99 / v[i].topk : 0.0,
		       v[i].mant_mean_max_milli / 1000.0, v[i].limit_v,
		       v[i].limit_p_ppm / 1000000, v[i].limit_p_ppm % 1000000);
	}
	free(v);
	return 0;
}

/* `engyctl verdicts ARGS` is `engyctl admin STORE-OPTS verdicts list REST`. */
int engyctl_verdicts(int argc, char **argv)
{
	char **av = calloc((size_t)argc + 4, sizeof(*av));
	int i, n = 0, k, rc;

	if (!av)
		return engyctl_fail("verdicts: out of memory");
	av[n++] = "admin";
	for (i = 1; i < argc; i++) {
		const char *s = argv[i];
		bool two = !strcmp(s, "--store") ||
			   !strcmp(s, "--plugin-dir") ||
			   !strcmp(s, "--state-dir") || !strcmp(s, "--db") ||
			   !strcmp(s, "-o");

		if (two && i + 1 < argc) {
			av[n++] = argv[i++];
			av[n++] = argv[i];
		} else if (!strcmp(s, "-v") || !strncmp(s, "--store=", 8) ||
			   !strncmp(s, "--db=", 5) ||
			   !strncmp(s, "--state-dir=", 12) ||
			   !strncmp(s, "--plugin-dir=", 13)) {
			av[n++] = argv[i];
		}
	}
	av[n++] = "verdicts";
	av[n++] = "list";
	for (i = 1; i < argc; i++) {
		const char *s = argv[i];

		if (!strcmp(s, "--store") || !strcmp(s, "--plugin-dir") ||
		    !strcmp(s, "--state-dir") || !strcmp(s, "--db") ||
		    !strcmp(s, "-o")) {
			i++;
			continue;
		}
		if (!strcmp(s, "-v") || !strncmp(s, "--store=", 8) ||
		    !strncmp(s, "--db=", 5) ||
		    !strncmp(s, "--state-dir=", 12) ||
		    !strncmp(s, "--plugin-dir=", 13))
			continue;
		if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
			fputs(usage_text, stdout);
			free(av);
			return 0;
		}
		av[n++] = argv[i];
	}
	k = n;
	rc = engyctl_admin(k, av);
	free(av);
	return rc;
}
