/* SPDX-License-Identifier: MIT */
/* engyd: run one role from a config file, or check a config or a plugin. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <config.h>
#ifdef HAVE_MIMALLOC
#include <mimalloc.h>
#endif

#include "checks.h"
#include "conf.h"
#include "conf_value.h"
#include "daemon.h"
#include "kind.h"
#include "loader.h"
#include "log.h"

/* An environment switch, read as a boolean option is: unset or empty is
 * off; a value that is not a boolean is an error (-EINVAL, said). */
static int env_on(const char *name, bool *on)
{
	const char *v = getenv(name);

	*on = false;
	if (!v || !*v)
		return 0;
	if (engy_conf_parse_bool(v, on) == 0)
		return 0;
	fprintf(stderr, "engyd: %s='%s': wants true or false (or 1, 0)\n", name,
		v);
	return -EINVAL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: engyd -c FILE            run the role FILE configures\n"
		"       engyd -t -c FILE         check FILE and its plugins, then exit\n"
		"       engyd --plugin-info PATH print a plugin's descriptor\n"
		"       engyd --version | --help\n"
		"\n"
		"options:\n"
		"  -c, --config FILE   role config (libconfuse syntax)\n"
		"  -t, --test          validate only: syntax, plugins, ABI, options, role\n"
		"      --no-dlclose    keep plugins mapped at exit (for leak tools)\n"
		"\n"
		"environment: ENGY_PLUGIN_DIR overrides plugin_dir; ENGY_NO_DLCLOSE=1\n"
		"is --no-dlclose; ENGY_LOG_SYNC=1 is log_sync = true; plugin options\n"
		"name their own variables (see --plugin-info).\n");
}

static void print_opt_default(const struct engy_opt *o)
{
	if (o->flags & ENGY_OPT_SECRET)
		printf("  secret");
	else if (o->def)
		printf("  default=%s", o->def);
	if (o->flags & ENGY_OPT_REQUIRED)
		printf("  required");
}

/* engyd -t: what the role would connect to, and what it could not find. */
static int print_checks(struct engyd *d, const char *conf)
{
	struct engyd_check *v;
	size_t n, i;
	int bad = 0;

	if (engyd_checks(d, &v, &n) < 0)
		return 0;
	for (i = 0; i < n; i++) {
		const struct engyd_check *c = &v[i];

		if (!c->problem[0]) {
			printf("engyd: %s: %s: %s (%s)\n", conf, c->what,
			       c->target, c->source);
			continue;
		}
		printf("engyd: %s: %s: %s (%s): %s: %s\n", conf, c->what,
		       c->target, c->source,
		       c->warn_only ? "warning" : "could not find it",
		       c->problem);
		printf("engyd: %s: %s: fix: %s\n", conf, c->what, c->fix);
		if (!c->warn_only)
			bad = 1;
	}
	engyd_checks_free(v, n);
	return bad;
}

/* --version: which allocator serves malloc in this process.  Linked
 * first, mimalloc's malloc is the one the loader binds every library
 * to; a preloaded allocator would come before it, and that is said. */
static void print_allocator(void)
{
#ifdef HAVE_MIMALLOC
	void *p = malloc(64);
	int v = mi_version();

	printf("allocator: mimalloc %d.%d.%d%s\n", v / 100, v / 10 % 10, v % 10,
	       p && mi_is_in_heap_region(p)
		       ? ""
		       : " (linked, but malloc is another allocator's)");
	free(p);
#else
	printf("allocator: the C library's malloc\n");
#endif
}

static int plugin_info(const char *path)
{
	struct engy_loaded l;
	const struct engy_opt *o;
	char err[1024];

	if (engy_loader_open(path, NULL, &l, err, sizeof(err)) < 0) {
		fprintf(stderr, "engyd: %s\n", err);
		return 1;
	}
	printf("path: %s\nname: %s\nversion: %s\nkind: %s\nabi: %u.%u\n", path,
	       l.desc.name, l.desc.version ? l.desc.version : "", l.kind->name,
	       l.desc.abi_major, l.desc.abi_minor);
	if (l.desc.description)
		printf("description: %s\n", l.desc.description);
	printf("options:%s\n", l.desc.opts && l.desc.opts->name ? "" : " none");
	for (o = l.desc.opts; o && o->name; o++) {
		printf("  %s  %s", o->name, engy_opt_type_name(o->type));
		print_opt_default(o);
		if (o->env)
			printf("  env=%s", o->env);
		if (o->type == ENGY_OPT_INT && (o->min || o->max))
			printf("  range=%lld..%lld", (long long)o->min,
			       (long long)o->max);
		if (o->help)
			printf("  # %s", o->help);
		printf("\n");
	}
	engy_loader_close(&l, true);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "test", no_argument, NULL, 't' },
		{ "plugin-info", required_argument, NULL, 'P' },
		{ "no-dlclose", no_argument, NULL, 'N' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *conf = NULL;
	struct engy_errs e = { 0 };
	struct engyd d;
	bool test = false, no_dlclose = false, env_dlclose, env_sync;
	int c, rc;
	size_t i;

	while ((c = getopt_long(argc, argv, "c:th", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			conf = optarg;
			break;
		case 't':
			test = true;
			break;
		case 'P':
			return plugin_info(optarg);
		case 'N':
			no_dlclose = true;
			break;
		case 'V':
			printf("engyd %s (plugin ABI %d.%d)\n", PACKAGE_VERSION,
			       ENGY_ABI_MAJOR, ENGY_ABI_MINOR);
			print_allocator();
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!conf || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (env_on("ENGY_NO_DLCLOSE", &env_dlclose) ||
	    env_on("ENGY_LOG_SYNC", &env_sync))
		return 2;
	/* While checking, plugins' informational lines would only be noise. */
	engy_log_set_level(test ? ENGY_LOG_WARNING : ENGY_LOG_INFO);
	/* Leak checkers can only name frames of modules still mapped. */
	if (env_dlclose)
		no_dlclose = true;
	rc = engyd_setup(&d, conf, &e);
	d.unload = !no_dlclose;
	if (test && print_checks(&d, conf) && !rc && !e.n)
		engy_errs_add(&e,
			      "%s: the role could not find what it needs "
			      "(see above)",
			      conf);
	/* The report is on stdout: out before anything can cut exit short. */
	fflush(stdout);
	if (rc || e.n) {
		for (i = 0; i < e.n; i++)
			fprintf(stderr, "engyd: %s\n", e.v[i]);
		if (!e.n)
			fprintf(stderr, "engyd: %s: setup failed: %s\n", conf,
				strerror(-rc));
		fprintf(stderr, "engyd: %s: %s\n", conf,
			test ? "test failed" : "refusing to start");
		engy_errs_free(&e);
		engyd_free(&d);
		return 1;
	}
	if (test) {
		printf("engyd: %s: ok (role %s, %zu plugin instance%s)\n", conf,
		       d.cfg.role, d.n_insts, d.n_insts == 1 ? "" : "s");
		engyd_free(&d);
		return 0;
	}
	engy_log_set_sync(d.cfg.log_sync || env_sync);
	rc = engy_log_open(d.cfg.log_file,
			   engy_log_parse_level(d.cfg.log_level));
	if (rc) {
		fprintf(stderr, "engyd: %s: cannot open log_file %s: %s\n",
			conf, d.cfg.log_file, strerror(-rc));
		engyd_free(&d);
		return 1;
	}
	rc = engyd_run(&d);
	engyd_free(&d);
	engy_log_close();
	return rc;
}
