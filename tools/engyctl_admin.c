/* SPDX-License-Identifier: MIT */
/*
 * engyctl admin: the operator's hands on the store.  It loads the store
 * plugin with engyd's own loader and option code (defaults, environment
 * twins, -o NAME=VALUE as a config section would set them), starts it,
 * and calls its ops: the same code path as the gateway, on the same
 * database.  specs/store.md lists the commands.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <engy/plugin.h>

#include "../engyd/conf.h"
#include "../engyd/loader.h"
#include "billing.h"
#include "engyctl.h"
#include "engyctl_admin.h"

int engyctl_admin(int argc, char **argv);

static const char usage_text[] =
	"usage: engyctl admin [STORE OPTIONS] GROUP COMMAND [ARGS]\n"
	"\n"
	"groups and commands (`engyctl admin GROUP --help` for each):\n"
	"  accounts create NAME | list | show ACCOUNT\n"
	"  topup ACCOUNT USD\n"
	"  keys create ACCOUNT [--label L] | list ACCOUNT | revoke KEY_ID\n"
	"  models put NAME [--spec FILE] [limits, prices] | list | show NAME\n"
	"         roots [MODEL] | root-add MODEL --root HEX | root-del HEX\n"
	"  miners register HOTKEY | set HOTKEY | list\n"
	"  log tail [-n N] [--account ACCOUNT] [--since MS]\n"
	"  reservations release-expired\n"
	"\n"
	"store options (the store section a gateway config would have):\n"
	"  --store NAME       store plugin (default store-sqlite)\n"
	"  --plugin-dir DIR   where plugins are ($ENGY_PLUGIN_DIR, else the\n"
	"                     installed plugin directory)\n"
	"  --state-dir DIR    state directory ($ENGY_STATE_DIR, else the\n"
	"                     installed one); store-sqlite's file is there\n"
	"  --db PATH          store-sqlite's database file (-o path=PATH)\n"
	"  -o NAME=VALUE      any store option; secrets as NAME_file=PATH or\n"
	"                     their environment twin (ENGY_KEY_PEPPER)\n"
	"  -v                 show the store's informational lines\n"
	"\n"
	"Money is in US dollars with up to six decimals (integer micro-USD\n"
	"inside).  Keys are printed once, on stdout, and never stored.\n";

static int verbose;
static const char *state_dir_path;

static void h_vlog(const struct engy_host *h, int level, const char *fmt,
		   va_list ap)
{
	if (level > (verbose ? ENGY_LOG_INFO : ENGY_LOG_WARNING))
		return;
	fprintf(stderr, "engyctl: %s: ", h->instance);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void h_log(const struct engy_host *h, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	h_vlog(h, level, fmt, ap);
	va_end(ap);
}

static struct event_base *h_evbase(const struct engy_host *h)
{
	return NULL;
}

static int h_timer_add(const struct engy_host *h, uint64_t ms, int repeat,
		       void (*cb)(void *), void *arg, struct engy_timer **out)
{
	return -ENOTSUP;
}

static void h_timer_del(const struct engy_host *h, struct engy_timer *t)
{
}

/* No loop here: work runs where it is asked for. */
static int h_work(const struct engy_host *h, void (*fn)(void *),
		  void (*done)(void *, int), void *arg)
{
	fn(arg);
	done(arg, 0);
	return 0;
}

static int h_metric(const struct engy_host *h, int type, const char *name,
		    const char *help, const char *labels, const double *buckets,
		    size_t n, struct engy_metric **out)
{
	*out = NULL;
	return 0;
}

static void h_metric_op(struct engy_metric *m, double v)
{
}

static int h_peer(const struct engy_host *h, uint32_t kind,
		  const char *instance, const void **ops, void **inst)
{
	return -ENOENT;
}

static const char *h_state_dir(const struct engy_host *h)
{
	return state_dir_path;
}

struct optv {
	char **v;
	size_t n;
};

static const char *opt_get(void *arg, const char *name)
{
	const struct optv *o = arg;
	size_t i, len = strlen(name);

	for (i = o->n; i-- > 0;)
		if (strncmp(o->v[i], name, len) == 0 && o->v[i][len] == '=')
			return o->v[i] + len + 1;
	return NULL;
}

/* Every -o names an option of the plugin (or a secret's _file twin). */
static int opts_known(const char *store, const struct engy_opt *opts,
		      const struct optv *o)
{
	const struct engy_opt *p;
	size_t i;

	for (i = 0; i < o->n; i++) {
		const char *eq = strchr(o->v[i], '=');
		size_t len = eq ? (size_t)(eq - o->v[i]) : 0;
		int ok = 0;

		for (p = opts; eq && p && p->name && !ok; p++) {
			size_t pl = strlen(p->name);

			ok = (len == pl && !strncmp(o->v[i], p->name, pl)) ||
			     ((p->flags & ENGY_OPT_SECRET) && len == pl + 5 &&
			      !strncmp(o->v[i], p->name, pl) &&
			      !strncmp(o->v[i] + pl, "_file", 5));
		}
		if (!ok) {
			fprintf(stderr,
				"engyctl: admin: -o %s: %s has no such option (engyd --plugin-info lists them)\n",
				o->v[i], store);
			return -EINVAL;
		}
	}
	return 0;
}

static const struct {
	const char *name;
	int (*run)(struct admin *a, int argc, char **argv);
} groups[] = {
	{ "accounts", admin_accounts },
	{ "topup", admin_topup },
	{ "keys", admin_keys },
	{ "models", admin_models },
	{ "miners", admin_miners },
	{ "log", admin_log },
	{ "reservations", admin_reservations },
	{ "verdicts", admin_verdicts },
	{ NULL, NULL },
};

static int run_group(const char *store, const char *plugin_dir, struct optv *o,
		     int argc, char **argv)
{
	struct engy_host host = {
		.size = sizeof(host),
		.abi_major = ENGY_ABI_MAJOR,
		.abi_minor = ENGY_ABI_MINOR,
		.instance = store,
		.log = h_log,
		.vlog = h_vlog,
		.evbase = h_evbase,
		.timer_add = h_timer_add,
		.timer_del = h_timer_del,
		.work = h_work,
		.metric = h_metric,
		.metric_add = h_metric_op,
		.metric_set = h_metric_op,
		.metric_observe = h_metric_op,
		.peer = h_peer,
		.state_dir = h_state_dir,
	};
	struct engy_errs errs = { NULL, 0 };
	struct engy_loaded l;
	struct admin a = { NULL, NULL, store };
	void *conf = NULL;
	char err[512];
	size_t i;
	int rc = 1, g;

	for (g = 0; groups[g].name; g++)
		if (strcmp(groups[g].name, argv[0]) == 0)
			break;
	if (!groups[g].name) {
		fprintf(stderr,
			"engyctl: admin: unknown group '%s' (engyctl admin --help)\n",
			argv[0]);
		return 2;
	}
	/* Help needs no store. */
	for (i = 1; i < (size_t)argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return groups[g].run(NULL, argc, argv);
	memset(&l, 0, sizeof(l));
	if (engy_loader_open_named(plugin_dir, store, &l, err, sizeof(err))) {
		fprintf(stderr, "engyctl: admin: %s\n", err);
		return 1;
	}
	if (l.desc.kind != ENGY_KIND_STORE) {
		fprintf(stderr,
			"engyctl: admin: plugin '%s' is not a store plugin\n",
			store);
		goto out;
	}
	if (opts_known(store, l.desc.opts, o))
		goto out;
	if (engy_conf_from_text(store, l.desc.opts, l.desc.conf_size, opt_get,
				o, &conf, &errs)) {
		for (i = 0; i < errs.n; i++)
			fprintf(stderr, "engyctl: admin: %s\n", errs.v[i]);
		goto out;
	}
	if (l.desc.create(&host, conf, &a.inst)) {
		fprintf(stderr,
			"engyctl: admin: %s: create failed (see above)\n",
			store);
		goto out;
	}
	a.ops = l.ops;
	if (l.desc.start && (rc = l.desc.start(a.inst))) {
		fprintf(stderr,
			"engyctl: admin: %s: could not open the store: %s\n",
			store, strerror(-rc));
		rc = 1;
	} else {
		rc = groups[g].run(&a, argc, argv);
	}
	if (l.desc.stop)
		l.desc.stop(a.inst);
	l.desc.destroy(a.inst);
out:
	engy_errs_free(&errs);
	engy_conf_free(l.desc.opts, conf);
	engy_loader_close(&l, getenv("ENGY_NO_DLCLOSE") == NULL);
	return rc;
}

int engyctl_admin(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "store", required_argument, NULL, 's' },
		{ "plugin-dir", required_argument, NULL, 'p' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ "db", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *store = "store-sqlite", *plugin_dir;
	struct optv o = { NULL, 0 };
	char *dbopt = NULL;
	int c, rc;

	plugin_dir = getenv("ENGY_PLUGIN_DIR") ? getenv("ENGY_PLUGIN_DIR")
					       : ENGY_PLUGINDIR;
	state_dir_path = getenv("ENGY_STATE_DIR") ? getenv("ENGY_STATE_DIR")
						  : ENGY_LOCALSTATEDIR;
	o.v = calloc((size_t)argc + 1, sizeof(*o.v));
	if (!o.v)
		return engyctl_fail("admin: out of memory");
	optind = 0;
	opterr = 0;
	rc = -1;
	while (rc < 0 &&
	       (c = getopt_long(argc, argv, "+ho:v", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			store = optarg;
			break;
		case 'p':
			plugin_dir = optarg;
			break;
		case 'S':
			state_dir_path = optarg;
			break;
		case 'd':
			free(dbopt);
			dbopt = malloc(strlen(optarg) + 6);
			if (!dbopt) {
				rc = engyctl_fail("admin: out of memory");
				break;
			}
			sprintf(dbopt, "path=%s", optarg);
			o.v[o.n++] = dbopt;
			break;
		case 'o':
			if (!strchr(optarg, '=')) {
				rc = admin_usage("admin",
						 "-o takes NAME=VALUE");
				break;
			}
			o.v[o.n++] = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			rc = 0;
			break;
		default:
			rc = admin_usage("admin",
					 "unknown option or missing value");
		}
	}
	if (rc < 0 && optind >= argc) {
		fputs(usage_text, stderr);
		rc = 2;
	}
	if (rc < 0)
		rc = run_group(store, plugin_dir, &o, argc - optind,
			       argv + optind);
	free(dbopt);
	free(o.v);
	return rc;
}

int admin_dispatch(struct admin *a, const char *group, const char *usage,
		   const struct admin_cmd *cmds, int argc, char **argv)
{
	const struct admin_cmd *c;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (c = cmds; c->name; c++)
		if (strcmp(c->name, argv[1]) == 0)
			break;
	if (!c->name) {
		fprintf(stderr,
			"engyctl: admin %s: unknown command '%s' (--help)\n",
			group, argv[1]);
		return 2;
	}
	/* `GROUP CMD --help` prints the group's usage without a store. */
	if (!a) {
		fputs(usage, stdout);
		return 0;
	}
	optind = 0;
	return c->run(a, argc - 1, argv + 1);
}

int admin_fail(const char *what, const char *name, int rc)
{
	const char *why;

	switch (rc) {
	case -ENOENT:
		why = "not found";
		break;
	case -EEXIST:
		why = "already exists";
		break;
	case -EDQUOT:
		why = "the balance does not cover it";
		break;
	case -ERANGE:
		why = "the balance would exceed $1,000,000,000";
		break;
	case -EINVAL:
		why = "refused as invalid (the line above says which field)";
		break;
	case -EBUSY:
		why = "the database stayed locked past the busy timeout";
		break;
	default:
		why = strerror(-rc);
	}
	fprintf(stderr, "engyctl: admin: %s%s%s%s: %s\n", what,
		name ? " '" : "", name ? name : "", name ? "'" : "", why);
	return 1;
}

int admin_usage(const char *where, const char *msg)
{
	fprintf(stderr, "engyctl: %s: %s (--help)\n", where, msg);
	return 2;
}

int admin_account(struct admin *a, const char *ref, struct engy_account *out)
{
	int64_t id;
	int rc = a->ops->account_by_name(a->inst, ref, out);

	if (rc == -ENOENT && admin_int(ref, 1, INT64_MAX, &id) == 0)
		rc = a->ops->account_get(a->inst, id, out);
	return rc;
}

const char *admin_usd(char buf[32], int64_t micro)
{
	engy_money_format(buf, 32, micro);
	return buf;
}

int admin_hex32(const char *hex, uint8_t out[32])
{
	size_t i;

	if (!hex || strlen(hex) != 64)
		return -EINVAL;
	for (i = 0; i < 32; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1 ||
		    !strchr("0123456789abcdefABCDEF", hex[2 * i]) ||
		    !strchr("0123456789abcdefABCDEF", hex[2 * i + 1]))
			return -EINVAL;
		out[i] = (uint8_t)v;
	}
	return 0;
}

void admin_hex32_str(const uint8_t in[32], char out[65])
{
	size_t i;

	for (i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", in[i]);
}

const char *admin_time(char buf[32], int64_t ms)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	if (!gmtime_r(&s, &tm) || !strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(buf, 32, "%lld", (long long)ms);
	else
		snprintf(buf + 19, 13, ".%03dZ", (int)(ms % 1000));
	return buf;
}

int admin_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long v;

	if (!s || !*s || (*s != '-' && (*s < '0' || *s > '9')))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}
