/* SPDX-License-Identifier: MIT */
/*
 * The loader refuses every broken plugin with its own reason.
 *
 * Oracle: hand-written expected refusals; engy's loader only (no outside
 * peer).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <engy/engy.h>

#include "kind.h"
#include "loader.h"

static char err[1024];

static void refused(const char *name, const char *reason)
{
	struct engy_loaded l;
	int rc = engy_loader_open_named(TEST_PLUGIN_DIR, name, &l, err,
					sizeof(err));

	ck_assert_int_lt(rc, 0);
	ck_assert_msg(strstr(err, name) != NULL, "error names the plugin: %s",
		      err);
	ck_assert_msg(strstr(err, reason) != NULL, "'%s' in: %s", reason, err);
	ck_assert_ptr_null(l.dl);
}

START_TEST(test_bad_magic)
{
	refused("bad-magic", "bad magic 0xdeadbeef");
}
END_TEST

START_TEST(test_bad_major)
{
	refused("bad-major", "built for plugin ABI 2.5");
	ck_assert_ptr_nonnull(strstr(err, "rebuild the plugin"));
}
END_TEST

START_TEST(test_newer_minor)
{
	refused("newer-minor", "newer than this engyd's 1.5");
}
END_TEST

/* A store built for 1.3 would hand back engy_model arrays of 1.3's
 * stride: refused, saying why. */
START_TEST(test_old_store)
{
	refused("old-store", "older than 1.4: struct engy_model grew in 1.4");
}
END_TEST

START_TEST(test_short_size)
{
	refused("short-size", "descriptor of 24 bytes is smaller");
}
END_TEST

START_TEST(test_bad_kind)
{
	refused("bad-kind", "unknown kind 99");
}
END_TEST

START_TEST(test_missing_op)
{
	refused("missing-op", "missing required proof op 'verify'");
	/* 1.4: a challenged scheme needs both of its ops... */
	refused("half-challenge", "missing required proof op 'check'");
}
END_TEST

/* ...and then neither prove() nor verify(). */
START_TEST(test_challenge_only)
{
	struct engy_loaded l;
	const struct engy_proof_ops *p;

	ck_assert_int_eq(engy_loader_open_named(TEST_PLUGIN_DIR,
						"challenge-only", &l, err,
						sizeof(err)),
			 0);
	p = l.ops;
	ck_assert_ptr_null(p->prove);
	ck_assert_ptr_null(p->verify);
	ck_assert_ptr_nonnull(p->challenge);
	ck_assert_ptr_nonnull(p->check);
	engy_loader_close(&l, true);
}
END_TEST

START_TEST(test_no_destroy)
{
	refused("no-destroy", "missing required op 'destroy'");
}
END_TEST

START_TEST(test_no_symbol)
{
	refused("no-symbol", "does not export 'engy_plugin'");
}
END_TEST

START_TEST(test_name_mismatch)
{
	refused("name-mismatch", "calls itself 'other-name'");
}
END_TEST

START_TEST(test_not_found)
{
	refused("no-such-plugin", "not found");
}
END_TEST

START_TEST(test_invalid_name)
{
	struct engy_loaded l;

	ck_assert_int_lt(engy_loader_open_named(TEST_PLUGIN_DIR, "../bad-magic",
						&l, err, sizeof(err)),
			 0);
	ck_assert_ptr_nonnull(strstr(err, "invalid name"));
	ck_assert(!engy_plugin_name_valid(""));
	ck_assert(!engy_plugin_name_valid("A"));
	ck_assert(!engy_plugin_name_valid("a/b"));
	ck_assert(engy_plugin_name_valid("verifier-toploc"));
	ck_assert(engy_plugin_name_valid("store_sqlite2"));
}
END_TEST

START_TEST(test_not_shared_object)
{
	char dir[] = "/tmp/engy-loader-XXXXXX", path[256];
	struct engy_loaded l;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/text-file.so", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("this is not an ELF file\n", f);
	fclose(f);
	ck_assert_int_lt(
		engy_loader_open_named(dir, "text-file", &l, err, sizeof(err)),
		0);
	ck_assert_ptr_nonnull(strstr(err, "plugin 'text-file': cannot load"));
	ck_assert_ptr_nonnull(strstr(err, "not a shared object"));
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(test_good_loads_and_zero_extends)
{
	struct engy_loaded l;
	const struct engy_proof_ops *ops;

	ck_assert_int_eq(engy_loader_open_named(TEST_PLUGIN_DIR, "test-proof",
						&l, err, sizeof(err)),
			 0);
	ck_assert_str_eq(l.desc.name, "test-proof");
	ck_assert_int_eq(l.desc.kind, ENGY_KIND_PROOF);
	ck_assert_str_eq(l.kind->name, "proof");
	ops = l.ops;
	ck_assert_uint_eq(ops->size, sizeof(*ops));
	ck_assert_str_eq(ops->scheme, "test");
	ck_assert_ptr_nonnull(ops->verify);
	/* The host's copy is its own, not the plugin's rodata. */
	ck_assert_ptr_ne(l.ops, l.desc.ops);
	engy_loader_close(&l, true);
	ck_assert_ptr_null(l.dl);
}
END_TEST

START_TEST(test_1_0_descriptor_has_no_check)
{
	struct engy_loaded l;

	/* A 1.0 descriptor loads; the 1.1 check op past its size reads
	 * NULL even though the bytes there are not. */
	ck_assert_int_eq(engy_loader_open_named(TEST_PLUGIN_DIR, "size-1-0", &l,
						err, sizeof(err)),
			 0);
	ck_assert_uint_eq(l.desc.size, ENGY_PLUGIN_SIZE_1_0);
	ck_assert_ptr_null(l.desc.check);
	engy_loader_close(&l, true);
	ck_assert_int_eq(engy_loader_open_named(TEST_PLUGIN_DIR, "test-proof",
						&l, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(l.desc.size, sizeof(struct engy_plugin));
	ck_assert_ptr_null(l.desc.check);
	engy_loader_close(&l, true);
}
END_TEST

START_TEST(test_each_kind_loads_as_itself)
{
	static const struct {
		const char *name;
		uint32_t kind;
	} k[] = {
		{ "test-transport", ENGY_KIND_TRANSPORT },
		{ "test-backend", ENGY_KIND_BACKEND },
		{ "test-proof", ENGY_KIND_PROOF },
		{ "test-scorer", ENGY_KIND_SCORER },
		{ "test-chain2", ENGY_KIND_CHAIN },
		{ "test-store", ENGY_KIND_STORE },
	};
	struct engy_loaded l;
	size_t i;

	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		ck_assert_int_eq(engy_loader_open_named(TEST_PLUGIN_DIR,
							k[i].name, &l, err,
							sizeof(err)),
				 0);
		ck_assert_uint_eq(l.desc.kind, k[i].kind);
		ck_assert_uint_eq(*(const uint32_t *)l.ops, l.kind->ops_size);
		if (k[i].kind == ENGY_KIND_BACKEND)
			ck_assert_ptr_nonnull(
				((const struct engy_backend_ops *)l.ops)
					->generate);
		engy_loader_close(&l, true);
	}
}
END_TEST

START_TEST(test_create_fails_loads)
{
	struct engy_loaded l;

	/* A plugin whose create() fails still passes every load check. */
	ck_assert_int_eq(engy_loader_open_named(TEST_PLUGIN_DIR, "create-fails",
						&l, err, sizeof(err)),
			 0);
	engy_loader_close(&l, true);
}
END_TEST

START_TEST(test_kinds)
{
	ck_assert_str_eq(engy_kind_name(ENGY_KIND_TRANSPORT), "transport");
	ck_assert_str_eq(engy_kind_name(ENGY_KIND_STORE), "store");
	ck_assert_str_eq(engy_kind_name(42), "unknown");
	ck_assert_ptr_eq(engy_kind_by_name("chain"),
			 engy_kind_info(ENGY_KIND_CHAIN));
	ck_assert_ptr_null(engy_kind_by_name("nope"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("loader");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_bad_magic);
	tcase_add_test(tc, test_bad_major);
	tcase_add_test(tc, test_newer_minor);
	tcase_add_test(tc, test_old_store);
	tcase_add_test(tc, test_short_size);
	tcase_add_test(tc, test_1_0_descriptor_has_no_check);
	tcase_add_test(tc, test_bad_kind);
	tcase_add_test(tc, test_missing_op);
	tcase_add_test(tc, test_challenge_only);
	tcase_add_test(tc, test_no_destroy);
	tcase_add_test(tc, test_no_symbol);
	tcase_add_test(tc, test_name_mismatch);
	tcase_add_test(tc, test_not_found);
	tcase_add_test(tc, test_invalid_name);
	tcase_add_test(tc, test_not_shared_object);
	tcase_add_test(tc, test_good_loads_and_zero_extends);
	tcase_add_test(tc, test_create_fails_loads);
	tcase_add_test(tc, test_each_kind_loads_as_itself);
	tcase_add_test(tc, test_kinds);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
