/* SPDX-License-Identifier: MIT */
/* engyctl admin: accounts, top-ups, API keys, the request log, holds. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "billing.h"
#include "engyctl_admin.h"

static const char accounts_usage[] =
	"usage: engyctl admin accounts create NAME\n"
	"       engyctl admin accounts list\n"
	"       engyctl admin accounts show ACCOUNT\n"
	"\n"
	"ACCOUNT is a name, or an id.  Balances are in US dollars: balance\n"
	"(settled), reserved (held by requests in flight), available\n"
	"(balance - reserved), credited (all top-ups), spent (all charges).\n";

static const char keys_usage[] =
	"usage: engyctl admin keys create ACCOUNT [--label TEXT]\n"
	"       engyctl admin keys list ACCOUNT\n"
	"       engyctl admin keys revoke KEY_ID\n"
	"\n"
	"create prints the new sk-engy-... key on stdout, once: the store keeps\n"
	"only its keyed hash.  A revoked key is refused for good.\n";

static const char log_usage[] =
	"usage: engyctl admin log tail [-n N] [--account ACCOUNT] [--since UNIX_MS]\n"
	"\n"
	"The newest N (default 20) request-log rows, oldest first: metadata\n"
	"only (engy keeps no prompt or completion).\n";

static const char res_usage[] =
	"usage: engyctl admin reservations release-expired\n"
	"\n"
	"Return every reservation past its expiry to its account (what a\n"
	"gateway that died mid-request held).\n";

static const char topup_usage[] =
	"usage: engyctl admin topup ACCOUNT USD\n"
	"\n"
	"Credit ACCOUNT with USD dollars (\"25\", \"12.50\", at most six\n"
	"decimals); prints the account after it.\n";

static void print_account(const struct engy_account *a)
{
	char b[32], r[32], av[32], c[32], s[32];

	printf("account id=%lld name=%s balance=%s reserved=%s available=%s credited=%s spent=%s\n",
	       (long long)a->id, a->name, admin_usd(b, a->balance_micro),
	       admin_usd(r, a->reserved_micro),
	       admin_usd(av, a->balance_micro - a->reserved_micro),
	       admin_usd(c, a->credited_micro), admin_usd(s, a->spent_micro));
}

static void print_key(const struct engy_api_key *k)
{
	char t[32];

	printf("key id=%lld account=%lld shown=%s status=%s label=\"%s\" created=%s\n",
	       (long long)k->id, (long long)k->account_id, k->shown,
	       k->status == ENGY_KEY_ACTIVE ? "active" : "revoked", k->label,
	       admin_time(t, k->created_ms));
}

static int acc_create(struct admin *a, int argc, char **argv)
{
	struct engy_account acc;
	int rc;

	if (argc != 2)
		return admin_usage("admin accounts create", "give one NAME");
	rc = a->ops->account_create(a->inst, argv[1], &acc);
	if (rc)
		return admin_fail("accounts create", argv[1], rc);
	print_account(&acc);
	return 0;
}

static int acc_list(struct admin *a, int argc, char **argv)
{
	struct engy_account *v;
	size_t n, i;
	int rc;

	if (argc != 1)
		return admin_usage("admin accounts list", "takes no arguments");
	rc = a->ops->account_list(a->inst, &v, &n);
	if (rc)
		return admin_fail("accounts list", NULL, rc);
	for (i = 0; i < n; i++)
		print_account(&v[i]);
	free(v);
	return 0;
}

static int acc_show(struct admin *a, int argc, char **argv)
{
	struct engy_account acc;
	struct engy_api_key *k;
	size_t n, i;
	int rc;

	if (argc != 2)
		return admin_usage("admin accounts show", "give one ACCOUNT");
	rc = admin_account(a, argv[1], &acc);
	if (!rc)
		rc = a->ops->key_list(a->inst, acc.id, &k, &n);
	if (rc)
		return admin_fail("accounts show", argv[1], rc);
	print_account(&acc);
	for (i = 0; i < n; i++)
		print_key(&k[i]);
	free(k);
	return 0;
}

int admin_accounts(struct admin *a, int argc, char **argv)
{
	static const struct admin_cmd cmds[] = {
		{ "create", acc_create },
		{ "list", acc_list },
		{ "show", acc_show },
		{ NULL, NULL },
	};

	return admin_dispatch(a, "accounts", accounts_usage, cmds, argc, argv);
}

int admin_topup(struct admin *a, int argc, char **argv)
{
	struct engy_account acc;
	int64_t micro;
	int rc;

	if (!a || argc != 3) {
		fputs(topup_usage, a ? stderr : stdout);
		return a ? 2 : 0;
	}
	rc = engy_money_parse(argv[2], &micro);
	if (rc || micro == 0)
		return admin_usage(
			"admin topup",
			"USD is a positive amount like 25 or 12.50 (six decimals at most, $1e9 at most)");
	rc = admin_account(a, argv[1], &acc);
	if (!rc)
		rc = a->ops->topup(a->inst, acc.id, micro, &acc);
	if (rc)
		return admin_fail("topup", argv[1], rc);
	print_account(&acc);
	return 0;
}

static int key_create(struct admin *a, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "label", required_argument, NULL, 'l' }, { NULL, 0, NULL, 0 }
	};
	const char *label = "";
	struct engy_account acc;
	struct engy_api_key k;
	char *key = NULL;
	int c, rc;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c != 'l')
			return admin_usage("admin keys create",
					   "unknown option");
		label = optarg;
	}
	if (optind != argc - 1)
		return admin_usage("admin keys create", "give one ACCOUNT");
	rc = admin_account(a, argv[optind], &acc);
	if (!rc)
		rc = a->ops->key_create(a->inst, acc.id, label, &key, &k);
	if (rc)
		return admin_fail("keys create", argv[optind], rc);
	printf("%s\n", key);
	fflush(stdout);
	fprintf(stderr,
		"engyctl: key id=%lld for account %s (%s...): shown once, not stored; keep it now\n",
		(long long)k.id, acc.name, k.shown);
	sodium_memzero(key, strlen(key));
	free(key);
	return 0;
}

static int key_list(struct admin *a, int argc, char **argv)
{
	struct engy_account acc;
	struct engy_api_key *k;
	size_t n, i;
	int rc;

	if (argc != 2)
		return admin_usage("admin keys list", "give one ACCOUNT");
	rc = admin_account(a, argv[1], &acc);
	if (!rc)
		rc = a->ops->key_list(a->inst, acc.id, &k, &n);
	if (rc)
		return admin_fail("keys list", argv[1], rc);
	for (i = 0; i < n; i++)
		print_key(&k[i]);
	free(k);
	return 0;
}

static int key_revoke(struct admin *a, int argc, char **argv)
{
	int64_t id;
	int rc;

	if (argc != 2 || admin_int(argv[1], 1, INT64_MAX, &id))
		return admin_usage(
			"admin keys revoke",
			"give one KEY_ID (a number; keys list shows them)");
	rc = a->ops->key_revoke(a->inst, id);
	if (rc)
		return admin_fail("keys revoke: key", argv[1], rc);
	printf("key id=%lld status=revoked\n", (long long)id);
	return 0;
}

int admin_keys(struct admin *a, int argc, char **argv)
{
	static const struct admin_cmd cmds[] = {
		{ "create", key_create },
		{ "list", key_list },
		{ "revoke", key_revoke },
		{ NULL, NULL },
	};

	return admin_dispatch(a, "keys", keys_usage, cmds, argc, argv);
}

static void print_row(const struct engy_request_row *r)
{
	char t[32], cost[32];

	printf("%s id=%lld request=%s account=%lld key=%lld model=%s miner=%s worker=%s status=%u prompt=%u cached=%u completion=%u ttft_ms=%u tpot_ms=%u cost=%s%s\n",
	       admin_time(t, r->time_ms), (long long)r->id,
	       r->request_id[0] ? r->request_id : "-", (long long)r->account_id,
	       (long long)r->key_id, r->model[0] ? r->model : "-",
	       r->miner[0] ? r->miner : "-",
	       r->worker_name[0] ? r->worker_name : "-", r->status,
	       r->prompt_tokens, r->cached_tokens, r->completion_tokens,
	       r->ttft_ms, r->tpot_ms, admin_usd(cost, r->cost_micro),
	       r->is_probe ? " probe" : "");
}

static int log_tail(struct admin *a, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "account", required_argument, NULL, 'a' },
		{ "since", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 }
	};
	struct engy_log_query q = { .size = sizeof(q),
				    .limit = 20,
				    .newest_first = 1 };
	struct engy_request_row *rows;
	struct engy_account acc;
	int64_t v;
	size_t n;
	int c, rc;

	while ((c = getopt_long(argc, argv, "n:", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (admin_int(optarg, 1, 100000, &v))
				return admin_usage("admin log tail",
						   "-n takes 1..100000");
			q.limit = (uint32_t)v;
			break;
		case 'a':
			rc = admin_account(a, optarg, &acc);
			if (rc)
				return admin_fail("log tail: account", optarg,
						  rc);
			q.account_id = acc.id;
			break;
		case 's':
			if (admin_int(optarg, 0, INT64_MAX, &v))
				return admin_usage(
					"admin log tail",
					"--since takes Unix milliseconds");
			q.since_ms = v;
			break;
		default:
			return admin_usage("admin log tail", "unknown option");
		}
	}
	if (optind != argc)
		return admin_usage("admin log tail", "unexpected argument");
	rc = a->ops->log_query(a->inst, &q, &rows, &n);
	if (rc)
		return admin_fail("log tail", NULL, rc);
	while (n-- > 0)
		print_row(&rows[n]);
	free(rows);
	return 0;
}

int admin_log(struct admin *a, int argc, char **argv)
{
	static const struct admin_cmd cmds[] = {
		{ "tail", log_tail },
		{ NULL, NULL },
	};

	return admin_dispatch(a, "log", log_usage, cmds, argc, argv);
}

static int res_release(struct admin *a, int argc, char **argv)
{
	struct timespec ts;
	int64_t micro = 0;
	uint64_t n = 0;
	char usd[32];
	int rc;

	if (argc != 1)
		return admin_usage("admin reservations release-expired",
				   "takes no arguments");
	clock_gettime(CLOCK_REALTIME, &ts);
	rc = a->ops->release_expired(
		a->inst, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, &n,
		&micro);
	if (rc)
		return admin_fail("reservations release-expired", NULL, rc);
	printf("released=%llu amount=%s\n", (unsigned long long)n,
	       admin_usd(usd, micro));
	return 0;
}

int admin_reservations(struct admin *a, int argc, char **argv)
{
	static const struct admin_cmd cmds[] = {
		{ "release-expired", res_release },
		{ NULL, NULL },
	};

	return admin_dispatch(a, "reservations", res_usage, cmds, argc, argv);
}
