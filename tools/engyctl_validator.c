/* SPDX-License-Identifier: MIT */
/*
 * engyctl validator: the light validator's operator commands.
 *   health  exit 0 while the heartbeat file is fresh (a container
 *           HEALTHCHECK); 1 when stale, missing or unreadable.
 *   state   print the state file, field by field, as the validator reads
 *           it (dropped fields named).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "engyctl.h"
#include "fsutil.h"
#include "valsched.h"

int engyctl_validator(int argc, char **argv);

#define HB_NAME	   "validator-heartbeat.json"
#define STATE_NAME "validator-state.json"

struct opts {
	const char *state_dir;
	const char *file;
	long max_age;
};

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: engyctl validator health [--state-dir DIR | "
		   "--heartbeat FILE] [--max-age S]\n"
		   "       engyctl validator state [--state-dir DIR | --state "
		   "FILE]\n"
		   "\n"
		   "health exits 0 while the validator's heartbeat file is "
		   "fresh: younger\n"
		   "than --max-age, by default the stall limit the validator "
		   "wrote into it.\n"
		   "The default state directory is " ENGY_LOCALSTATEDIR ".\n");
	return rc;
}

static int parse(int argc, char **argv, struct opts *o, const char *file_opt)
{
	static const struct option lo[] = {
		{ "state-dir", required_argument, NULL, 'd' },
		{ "heartbeat", required_argument, NULL, 'f' },
		{ "state", required_argument, NULL, 'f' },
		{ "max-age", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, idx;

	memset(o, 0, sizeof(*o));
	o->max_age = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, &idx)) != -1) {
		switch (c) {
		case 'd':
			o->state_dir = optarg;
			break;
		case 'f':
			if (strcmp(lo[idx].name, file_opt) != 0)
				return usage(stderr, 2);
			o->file = optarg;
			break;
		case 'm':
			o->max_age = strtol(optarg, NULL, 10);
			if (o->max_age <= 0)
				return usage(stderr, 2);
			break;
		case 'h':
			usage(stdout, 0);
			return -1;
		default:
			return usage(stderr, 2);
		}
	}
	if (optind != argc || (o->state_dir && o->file))
		return usage(stderr, 2);
	return 0;
}

static char *path_of(const struct opts *o, const char *name)
{
	const char *dir = o->state_dir ? o->state_dir : ENGY_LOCALSTATEDIR;
	size_t n;
	char *p;

	if (o->file)
		return strdup(o->file);
	n = strlen(dir) + strlen(name) + 2;
	p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* The heartbeat's last submission path, as one line (0: none). */
static int last_path(const cJSON *root, char *out, size_t cap)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "path");
	const cJSON *rr =
		cJSON_GetObjectItemCaseSensitive(root, "reveal_round");
	const cJSON *rb =
		cJSON_GetObjectItemCaseSensitive(root, "reveal_block");

	if (!cJSON_IsString(p) ||
	    strspn(p->valuestring, "abcdefghijklmnopqrstuvwxyz_0123456789") !=
		    strlen(p->valuestring) ||
	    strlen(p->valuestring) > 32)
		return 0;
	if (cJSON_IsNumber(rr) && cJSON_IsNumber(rb))
		snprintf(out, cap,
			 "last submission: %s, reveal round %.0f, due at block "
			 "%.0f",
			 p->valuestring, rr->valuedouble, rb->valuedouble);
	else
		snprintf(out, cap, "last submission: %s", p->valuestring);
	return 1;
}

static int health(int argc, char **argv)
{
	const cJSON *ts, *lim;
	char sub[160];
	int how;
	uint8_t *buf = NULL;
	struct opts o;
	cJSON *root;
	size_t len;
	double age;
	long limit;
	char *path;
	int rc = parse(argc, argv, &o, "heartbeat");

	if (rc)
		return rc < 0 ? 0 : rc;
	path = path_of(&o, HB_NAME);
	if (!path)
		return engyctl_fail("validator health: out of memory");
	if (engy_read_file(path, 4096, &buf, &len)) {
		rc = engyctl_fail("validator health: no heartbeat yet (%s)",
				  path);
		free(path);
		return rc;
	}
	root = cJSON_ParseWithLength((const char *)buf, len);
	free(buf);
	ts = cJSON_GetObjectItemCaseSensitive(root, "ts");
	lim = cJSON_GetObjectItemCaseSensitive(root, "stall_limit_s");
	if (!cJSON_IsNumber(ts)) {
		cJSON_Delete(root);
		rc = engyctl_fail("validator health: %s is not a heartbeat",
				  path);
		free(path);
		return rc;
	}
	limit = o.max_age > 0 ? o.max_age
		: cJSON_IsNumber(lim) && lim->valuedouble >= 1
			? (long)lim->valuedouble
			: 900;
	age = (double)time(NULL) - ts->valuedouble;
	if (age < 0)
		age = 0;
	how = last_path(root, sub, sizeof(sub));
	cJSON_Delete(root);
	free(path);
	if (age > (double)limit)
		return engyctl_fail("validator health: stale heartbeat: last "
				    "tick %.0fs ago (limit %lds)",
				    age, limit);
	printf("ok (last tick %.0fs ago, limit %lds)\n", age, limit);
	if (how)
		printf("%s\n", sub);
	return 0;
}

static int state(int argc, char **argv)
{
	struct engy_valstate st;
	char dropped[128];
	struct opts o;
	size_t i;
	char *path;
	int rc = parse(argc, argv, &o, "state");

	if (rc)
		return rc < 0 ? 0 : rc;
	path = path_of(&o, STATE_NAME);
	if (!path)
		return engyctl_fail("validator state: out of memory");
	rc = engy_valstate_load(path, &st, dropped, sizeof(dropped));
	if (rc) {
		rc = engyctl_fail("validator state: %s: %s", path,
				  strerror(-rc));
		free(path);
		return rc;
	}
	printf("file: %s\n", path);
	if (st.last.has_applied)
		printf("last_applied: %" PRIu64 "\n", st.last.applied);
	if (st.last.has_block)
		printf("last_submit_block: %" PRIu64 "\n", st.last.block);
	if (st.last.has_ts)
		printf("last_submit_ts: %" PRId64 "\n", st.last.ts);
	if (st.has_cached_epoch)
		printf("cached_epoch: %" PRIu64 "\n", st.cached_epoch);
	if (st.has_digest)
		printf("cached_digest: %s\n", st.digest);
	if (st.has_cache) {
		printf("cached_weights: %zu rows\n", st.n_rows);
		for (i = 0; i < st.n_rows; i++)
			printf("  %s %u\n", st.rows[i].hotkey,
			       st.rows[i].weight);
	}
	if (dropped[0])
		printf("dropped: %s\n", dropped);
	engy_valstate_free(&st);
	free(path);
	return 0;
}

int engyctl_validator(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)
		return usage(argc < 2 ? stderr : stdout, argc < 2 ? 2 : 0);
	if (strcmp(argv[1], "health") == 0)
		return health(argc - 1, argv + 1);
	if (strcmp(argv[1], "state") == 0)
		return state(argc - 1, argv + 1);
	fprintf(stderr,
		"engyctl: validator: unknown command '%s' (health, state)\n",
		argv[1]);
	return 2;
}
