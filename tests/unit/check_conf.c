/* SPDX-License-Identifier: MIT */
/*
 * Config: two passes, option tables, env twins, secrets, clear errors.
 *
 * Oracle: hand-written by the test's author from the config rules (specs);
 * no outside peer exists for engy's config language.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"

struct a_conf {
	const char *url;
	int64_t n;
	bool on;
	double f;
	struct engy_strv list;
	const char *key;
};

static const struct engy_opt a_opts[] = {
	{ "url", ENGY_OPT_STR, ENGY_OPT_REQUIRED, offsetof(struct a_conf, url),
	  NULL, "T_GW", 0, 0, NULL },
	{ "n", ENGY_OPT_INT, 0, offsetof(struct a_conf, n), "8", "T_N", 1, 64,
	  NULL },
	{ "on", ENGY_OPT_BOOL, 0, offsetof(struct a_conf, on), "true", NULL, 0,
	  0, NULL },
	{ "f", ENGY_OPT_FLOAT, 0, offsetof(struct a_conf, f), "0.25", NULL, 0,
	  0, NULL },
	{ "list", ENGY_OPT_STR_LIST, 0, offsetof(struct a_conf, list), "x, y",
	  NULL, 0, 0, NULL },
	{ "key", ENGY_OPT_STR, ENGY_OPT_SECRET, offsetof(struct a_conf, key),
	  NULL, "T_KEY", 0, 0, NULL },
	ENGY_OPT_END,
};

struct b_conf {
	int64_t depth;
};

static const struct engy_opt b_opts[] = {
	{ "depth", ENGY_OPT_INT, 0, offsetof(struct b_conf, depth), "3", NULL,
	  0, 0, NULL },
	ENGY_OPT_END,
};

static char dir[64], path[128];
static struct engy_config cfg;
static struct engy_errs errs;

static void write_conf(const char *text, int mode)
{
	FILE *f;

	snprintf(path, sizeof(path), "%s/t.conf", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	chmod(path, (mode_t)mode);
}

static void setup(void)
{
	strcpy(dir, "/tmp/engy-conf-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	memset(&errs, 0, sizeof(errs));
	unsetenv("T_GW");
	unsetenv("T_N");
	unsetenv("T_KEY");
}

static void teardown(void)
{
	engy_config_free(&cfg);
	engy_errs_free(&errs);
	unlink(path);
	snprintf(path, sizeof(path), "%s/key", dir);
	unlink(path);
	rmdir(dir);
}

/* Section order in the test configs: section 0 is "a", section 1 "b". */
static int fill(void **confs)
{
	const struct engy_opt *opts[2] = { a_opts, b_opts };
	size_t sizes[2] = { sizeof(struct a_conf), sizeof(struct b_conf) };
	int rc;

	rc = engy_config_load(path, NULL, &cfg, &errs);
	if (rc)
		return rc;
	return engy_config_fill(&cfg, opts, sizes, confs, NULL, &errs);
}

static int has_err(const char *needle)
{
	size_t i;

	for (i = 0; i < errs.n; i++)
		if (strstr(errs.v[i], needle))
			return 1;
	return 0;
}

static void dump(void)
{
	size_t i;

	for (i = 0; i < errs.n; i++)
		fprintf(stderr, "  err: %s\n", errs.v[i]);
}

START_TEST(test_values_and_defaults)
{
	void *confs[2];
	struct a_conf *a;
	struct b_conf *b;

	write_conf(
		"role = \"miner\"\nworkers = 3\n"
		"plugin \"alpha\" {\n  url = \"ws://x\"\n  list = {\"p\", \"q\", \"r\"}\n}\n"
		"plugin \"beta:second\" { depth = 7 }\n",
		0600);
	ck_assert_int_eq(fill(confs), 0);
	ck_assert_str_eq(cfg.role, "miner");
	ck_assert_int_eq(cfg.workers, 3);
	ck_assert_int_eq(cfg.shutdown_timeout, 10);
	ck_assert(!cfg.log_sync);
	ck_assert_uint_eq(cfg.n_secs, 2);
	ck_assert_str_eq(cfg.secs[0].plugin, "alpha");
	ck_assert_str_eq(cfg.secs[0].instance, "alpha");
	ck_assert_str_eq(cfg.secs[1].plugin, "beta");
	ck_assert_str_eq(cfg.secs[1].instance, "second");
	ck_assert_int_eq(cfg.secs[1].line, 7);
	ck_assert_int_eq(cfg.secs[0].line, 3);
	a = confs[0];
	b = confs[1];
	ck_assert_str_eq(a->url, "ws://x");
	ck_assert_int_eq(a->n, 8);
	ck_assert(a->on);
	ck_assert(a->f == 0.25);
	ck_assert_uint_eq(a->list.n, 3);
	ck_assert_str_eq(a->list.v[2], "r");
	ck_assert_ptr_null(a->key);
	ck_assert_int_eq(b->depth, 7);
	engy_conf_free(a_opts, confs[0]);
	engy_conf_free(b_opts, confs[1]);
}
END_TEST

START_TEST(test_env_overrides_config)
{
	void *confs[2];
	struct a_conf *a;

	setenv("T_GW", "wss://env", 1);
	setenv("T_N", "16", 1);
	write_conf("role = \"miner\"\nlog_sync = true\n"
		   "plugin \"alpha\" { url = \"ws://x\" n = 4 }\n"
		   "plugin \"beta\" {}\n",
		   0600);
	ck_assert_int_eq(fill(confs), 0);
	ck_assert(cfg.log_sync);
	a = confs[0];
	ck_assert_str_eq(a->url, "wss://env");
	ck_assert_int_eq(a->n, 16);
	engy_conf_free(a_opts, confs[0]);
	engy_conf_free(b_opts, confs[1]);
}
END_TEST

START_TEST(test_unknown_plugin_option)
{
	void *confs[2];

	write_conf("role = \"miner\"\nplugin \"alpha\" {\n  url = \"u\"\n"
		   "  depth = 2\n}\nplugin \"beta\" {}\n",
		   0600);
	ck_assert_int_eq(fill(confs), -EINVAL);
	dump();
	/* depth belongs to the other plugin: unknown here, on its own line. */
	ck_assert(has_err("t.conf:4: no such option 'depth'"));
	engy_config_free(&cfg);
	engy_errs_free(&errs);
	/* An option no plugin knows: libconfuse names it and its line. */
	write_conf("role = \"miner\"\nplugin \"alpha\" {\n  url = \"u\"\n"
		   "\n  bogus = 1\n}\nplugin \"beta\" {}\n",
		   0600);
	ck_assert_int_eq(fill(confs), -EINVAL);
	dump();
	ck_assert(has_err("t.conf:5: no such option 'bogus'"));
}
END_TEST

START_TEST(test_same_name_other_types)
{
	/* Two plugins may give one option name two types. */
	static const struct engy_opt list_opts[] = {
		{ "depth", ENGY_OPT_STR_LIST, 0, 0, NULL, NULL, 0, 0, NULL },
		ENGY_OPT_END,
	};
	const struct engy_opt *opts[2] = { b_opts, list_opts };
	size_t sizes[2] = { sizeof(struct b_conf), sizeof(struct engy_strv) };
	void *confs[2];
	struct engy_strv *l;

	write_conf("role = \"miner\"\n# plugin \"x\" { a comment }\n"
		   "plugin \"beta\" { depth = 4 }\n"
		   "plugin \"gamma\" {\n  depth = {\"a}\", \"b\"} /* } */\n}\n",
		   0600);
	ck_assert_int_eq(engy_config_load(path, NULL, &cfg, &errs), 0);
	ck_assert_int_eq(
		engy_config_fill(&cfg, opts, sizes, confs, NULL, &errs), 0);
	ck_assert_int_eq(((struct b_conf *)confs[0])->depth, 4);
	l = confs[1];
	ck_assert_uint_eq(l->n, 2);
	ck_assert_str_eq(l->v[0], "a}");
	engy_conf_free(b_opts, confs[0]);
	engy_conf_free(list_opts, confs[1]);
	engy_config_free(&cfg);
	/* A type error inside a body keeps its line. */
	write_conf(
		"role = \"miner\"\nplugin \"beta\" {\n\n  depth = \"deep\"\n}\n"
		"plugin \"gamma\" {}\n",
		0600);
	ck_assert_int_eq(engy_config_load(path, NULL, &cfg, &errs), 0);
	ck_assert_int_eq(
		engy_config_fill(&cfg, opts, sizes, confs, NULL, &errs),
		-EINVAL);
	dump();
	ck_assert(has_err("t.conf:4:"));
}
END_TEST

START_TEST(test_unknown_top_option)
{
	write_conf("role = \"miner\"\nrolee = \"x\"\n", 0600);
	ck_assert_int_eq(engy_config_load(path, NULL, &cfg, &errs), 0);
	/* Pass 1 ignores it; pass 2 is strict. */
	ck_assert_int_eq(engy_config_fill(&cfg, NULL, NULL, NULL, NULL, &errs),
			 -EINVAL);
	dump();
	ck_assert(has_err("t.conf:2:"));
	ck_assert(has_err("rolee"));
}
END_TEST

START_TEST(test_type_and_range_errors)
{
	void *confs[2];

	write_conf(
		"role = \"miner\"\nplugin \"alpha\" {\n  url = \"u\"\n  n = 100\n}\n"
		"plugin \"beta\" { depth = \"deep\" }\n",
		0600);
	ck_assert_int_eq(fill(confs), -EINVAL);
	dump();
	ck_assert(has_err("depth"));
	write_conf(
		"role = \"miner\"\nplugin \"alpha\" {\n  url = \"u\"\n  n = 100\n}\n"
		"plugin \"beta\" {}\n",
		0600);
	engy_config_free(&cfg);
	engy_errs_free(&errs);
	ck_assert_int_eq(fill(confs), -EINVAL);
	dump();
	ck_assert(has_err(
		"t.conf:4: plugin \"alpha\": option 'n' = 100 is out of range 1..64"));
}
END_TEST

START_TEST(test_required)
{
	void *confs[2];

	write_conf(
		"role = \"miner\"\nplugin \"alpha\" {}\nplugin \"beta\" {}\n",
		0600);
	ck_assert_int_eq(fill(confs), -EINVAL);
	dump();
	ck_assert(has_err(
		"t.conf:2: plugin \"alpha\": option 'url' is required (or set $T_GW)"));
}
END_TEST

START_TEST(test_secret_rules)
{
	void *confs[2];
	struct a_conf *a;
	char kpath[128], text[512];
	FILE *f;

	/* A secret in a file others can read is refused. */
	write_conf(
		"role = \"miner\"\nplugin \"alpha\" { url = \"u\" key = \"s3cret\" }\n"
		"plugin \"beta\" {}\n",
		0644);
	ck_assert_int_eq(fill(confs), -EINVAL);
	dump();
	ck_assert(has_err(
		"secret option 'key' in a file others can read; use $T_KEY, key_file, or chmod 600"));
	ck_assert(!has_err("s3cret"));
	engy_config_free(&cfg);
	engy_errs_free(&errs);
	/* key_file works from any file; the first line is the secret. */
	snprintf(kpath, sizeof(kpath), "%s/key", dir);
	f = fopen(kpath, "w");
	ck_assert_ptr_nonnull(f);
	fputs("from-file\nignored\n", f);
	fclose(f);
	snprintf(
		text, sizeof(text),
		"role = \"miner\"\nplugin \"alpha\" { url = \"u\" key_file = \"%s\" }\n"
		"plugin \"beta\" {}\n",
		kpath);
	write_conf(text, 0644);
	ck_assert_int_eq(fill(confs), 0);
	a = confs[0];
	ck_assert_str_eq(a->key, "from-file");
	engy_conf_free(a_opts, confs[0]);
	engy_conf_free(b_opts, confs[1]);
	/* And the environment beats both. */
	engy_config_free(&cfg);
	setenv("T_KEY", "from-env", 1);
	ck_assert_int_eq(fill(confs), 0);
	a = confs[0];
	ck_assert_str_eq(a->key, "from-env");
	engy_conf_free(a_opts, confs[0]);
	engy_conf_free(b_opts, confs[1]);
}
END_TEST

START_TEST(test_syntax_error_and_missing)
{
	write_conf("role = \"miner\"\nplugin \"alpha\" { url = \n", 0600);
	ck_assert_int_eq(engy_config_load(path, NULL, &cfg, &errs), -EINVAL);
	dump();
	ck_assert(has_err("t.conf:"));
	engy_config_free(&cfg);
	engy_errs_free(&errs);
	ck_assert_int_eq(
		engy_config_load("/nonexistent/x.conf", NULL, &cfg, &errs),
		-EINVAL);
	ck_assert(has_err("/nonexistent/x.conf: cannot read config"));
}
END_TEST

START_TEST(test_no_role_and_dup_titles)
{
	write_conf("workers = 2\n", 0600);
	ck_assert_int_eq(engy_config_load(path, NULL, &cfg, &errs), -EINVAL);
	ck_assert(has_err("no role"));
	engy_config_free(&cfg);
	engy_errs_free(&errs);
	write_conf(
		"role = \"miner\"\nplugin \"alpha\" {}\nplugin \"alpha\" {}\n",
		0600);
	ck_assert_int_eq(engy_config_load(path, NULL, &cfg, &errs), -EINVAL);
	dump();
	ck_assert(errs.n >= 1);
}
END_TEST

START_TEST(test_role_section)
{
	static const char *const roles[] = { "miner", "gateway", NULL };
	struct engy_conf_role role = { "miner", a_opts, sizeof(struct a_conf),
				       NULL };
	const struct engy_opt *opts[1] = { b_opts };
	size_t sizes[1] = { sizeof(struct b_conf) };
	void *confs[1];
	struct a_conf *a;

	write_conf(
		"role = \"miner\"\nminer {\n  url = \"wss://gw\"\n  n = 12\n}\n"
		"plugin \"beta\" { depth = 1 }\n",
		0600);
	ck_assert_int_eq(engy_config_load(path, roles, &cfg, &errs), 0);
	ck_assert_uint_eq(cfg.n_secs, 1);
	ck_assert_int_eq(
		engy_config_fill(&cfg, opts, sizes, confs, &role, &errs), 0);
	a = role.conf;
	ck_assert_str_eq(a->url, "wss://gw");
	ck_assert_int_eq(a->n, 12);
	ck_assert_str_eq(a->list.v[0], "x");
	engy_conf_free(a_opts, role.conf);
	engy_conf_free(b_opts, confs[0]);
	engy_config_free(&cfg);
	/* Env twins apply to role options too; a missing section is fine. */
	setenv("T_GW", "ws://env", 1);
	write_conf("role = \"miner\"\nplugin \"beta\" {}\n", 0600);
	ck_assert_int_eq(engy_config_load(path, roles, &cfg, &errs), 0);
	ck_assert_int_eq(
		engy_config_fill(&cfg, opts, sizes, confs, &role, &errs), 0);
	a = role.conf;
	ck_assert_str_eq(a->url, "ws://env");
	engy_conf_free(a_opts, role.conf);
	engy_conf_free(b_opts, confs[0]);
	engy_config_free(&cfg);
	unsetenv("T_GW");
	/* Another role's section and unknown role options are errors. */
	write_conf("role = \"miner\"\nminer {\n  url = \"u\"\n  colour = 1\n}\n"
		   "plugin \"beta\" {}\n",
		   0600);
	ck_assert_int_eq(engy_config_load(path, roles, &cfg, &errs), 0);
	ck_assert_int_eq(
		engy_config_fill(&cfg, opts, sizes, confs, &role, &errs),
		-EINVAL);
	dump();
	ck_assert(has_err("t.conf:4: no such option 'colour'"));
	engy_config_free(&cfg);
	engy_errs_free(&errs);
	write_conf("role = \"miner\"\ngateway { }\nplugin \"beta\" {}\n", 0600);
	ck_assert_int_eq(engy_config_load(path, roles, &cfg, &errs), 0);
	ck_assert_int_eq(
		engy_config_fill(&cfg, opts, sizes, confs, &role, &errs),
		-EINVAL);
	dump();
	ck_assert(has_err("t.conf:2: no such option 'gateway'"));
}
END_TEST

static const char *get_kv(void *arg, const char *name)
{
	const char *const *kv = arg;

	for (; *kv; kv += 2)
		if (strcmp(kv[0], name) == 0)
			return kv[1];
	return NULL;
}

/* `list` is a string list in alpha and a string in gamma (like
 * transport-http's and transport-ws's `listen`): one file holds both. */
struct c_conf {
	const char *list;
};

static const struct engy_opt c_opts[] = {
	{ "list", ENGY_OPT_STR, 0, offsetof(struct c_conf, list), NULL, NULL, 0,
	  0, NULL },
	ENGY_OPT_END,
};

START_TEST(test_string_and_list_share_a_name)
{
	const struct engy_opt *opts[2] = { a_opts, c_opts };
	size_t sizes[2] = { sizeof(struct a_conf), sizeof(struct c_conf) };
	void *confs[2];
	struct a_conf *a;
	struct c_conf *c;

	write_conf(
		"role = \"miner\"\nplugin \"alpha\" { url = \"u\" list = { \"p\", \"q\" } }\n"
		"plugin \"gamma\" { list = \"one\" }\n",
		0600);
	ck_assert_int_eq(engy_config_load(path, NULL, &cfg, &errs), 0);
	ck_assert_int_eq(
		engy_config_fill(&cfg, opts, sizes, confs, NULL, &errs), 0);
	a = confs[0];
	c = confs[1];
	ck_assert_uint_eq(a->list.n, 2);
	ck_assert_str_eq(a->list.v[1], "q");
	ck_assert_str_eq(c->list, "one");
	engy_conf_free(a_opts, confs[0]);
	engy_conf_free(c_opts, confs[1]);
	engy_config_free(&cfg);
	write_conf("role = \"miner\"\nplugin \"alpha\" { url = \"u\" }\n"
		   "plugin \"gamma\" { list = { \"one\", \"two\" } }\n",
		   0600);
	ck_assert_int_eq(engy_config_load(path, NULL, &cfg, &errs), 0);
	ck_assert_int_eq(
		engy_config_fill(&cfg, opts, sizes, confs, NULL, &errs),
		-EINVAL);
	dump();
	/* Each body is parsed with its own plugin's table: a list given to
	 * a one-value option is a syntax error on its line. */
	ck_assert(has_err("t.conf:3: unexpected token '{'"));
}
END_TEST

START_TEST(test_from_text)
{
	const char *kv[] = { "url", "http://h", "list", "a,,b , c",
			     "on",  "no",	NULL };
	struct a_conf *a;
	void *conf;

	ck_assert_int_eq(engy_conf_from_text("alpha", a_opts, sizeof(*a),
					     get_kv, (void *)kv, &conf, &errs),
			 0);
	a = conf;
	ck_assert_str_eq(a->url, "http://h");
	ck_assert(!a->on);
	ck_assert_uint_eq(a->list.n, 3);
	ck_assert_str_eq(a->list.v[1], "b");
	ck_assert_str_eq(a->list.v[2], "c");
	engy_conf_free(a_opts, conf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conf");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_values_and_defaults);
	tcase_add_test(tc, test_env_overrides_config);
	tcase_add_test(tc, test_unknown_plugin_option);
	tcase_add_test(tc, test_unknown_top_option);
	tcase_add_test(tc, test_same_name_other_types);
	tcase_add_test(tc, test_type_and_range_errors);
	tcase_add_test(tc, test_required);
	tcase_add_test(tc, test_secret_rules);
	tcase_add_test(tc, test_syntax_error_and_missing);
	tcase_add_test(tc, test_no_role_and_dup_titles);
	tcase_add_test(tc, test_from_text);
	tcase_add_test(tc, test_role_section);
	tcase_add_test(tc, test_string_and_list_share_a_name);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
