/* SPDX-License-Identifier: MIT */
/*
 * verifier-toploc as the host sees it: dlopen() the built module, read
 * the descriptor, fill the conf from its option table (defaults and env
 * twins, as the host does), and drive create / prove / verify / destroy
 * with the fake host.
 *
 * Oracle: engy itself: the plugin against lib/toploc (self-consistency).
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <engy/plugin.h>
#include <engy/proof.h>

#include "bf16.h"
#include "fake_host.h"

static void *dl;
static const struct engy_plugin *plug;
static const struct engy_proof_ops *ops;

static void load(void)
{
	dl = dlopen(VERIFIER_TOPLOC_SO, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(dl != NULL, "dlopen: %s", dlerror());
	plug = dlsym(dl, ENGY_PLUGIN_SYMBOL);
	ck_assert_ptr_nonnull(plug);
	ops = plug->ops;
}

static void unload(void)
{
	dlclose(dl);
}

static const struct engy_opt *opt(const char *name)
{
	const struct engy_opt *o;

	for (o = plug->opts; o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

/* The host's job: defaults, then env twins, stored at each offset. */
static void *fill_conf(void)
{
	uint8_t *conf = calloc(1, plug->conf_size);
	const struct engy_opt *o;

	ck_assert_ptr_nonnull(conf);
	for (o = plug->opts; o->name; o++) {
		const char *v =
			o->env && getenv(o->env) ? getenv(o->env) : o->def;
		int64_t i;
		double d;
		bool b;

		ck_assert_ptr_nonnull(v);
		ck_assert_uint_le(o->offset, plug->conf_size - 1);
		switch (o->type) {
		case ENGY_OPT_INT:
			i = strtoll(v, NULL, 10);
			memcpy(conf + o->offset, &i, sizeof(i));
			break;
		case ENGY_OPT_FLOAT:
			d = strtod(v, NULL);
			memcpy(conf + o->offset, &d, sizeof(d));
			break;
		case ENGY_OPT_BOOL:
			b = strcmp(v, "true") == 0;
			memcpy(conf + o->offset, &b, sizeof(b));
			break;
		default:
			ck_abort_msg("unexpected option type for %s", o->name);
		}
	}
	return conf;
}

static void set_int(void *conf, const char *name, int64_t v)
{
	memcpy((uint8_t *)conf + opt(name)->offset, &v, sizeof(v));
}

static void set_float(void *conf, const char *name, double v)
{
	memcpy((uint8_t *)conf + opt(name)->offset, &v, sizeof(v));
}

static uint64_t rs;

static uint16_t *rows_bf16(size_t n, uint64_t model, double noise)
{
	uint16_t *b = malloc(n * sizeof(*b));
	size_t i;

	ck_assert_ptr_nonnull(b);
	rs = model * 0x9E3779B97F4A7C15ull + 1;
	for (i = 0; i < n; i++) {
		double u[4];
		int j;

		for (j = 0; j < 4; j++) {
			rs ^= rs << 13;
			rs ^= rs >> 7;
			rs ^= rs << 17;
			u[j] = ((rs >> 11) + 0.5) / 9007199254740992.0;
		}
		b[i] = engy_bf16_from_f32(
			(float)(sqrt(-2 * log(u[0])) * cos(2 * M_PI * u[1]) *
				(1 + noise * sqrt(-2 * log(u[2])) *
					     cos(2 * M_PI * u[3]))));
	}
	return b;
}

START_TEST(test_descriptor)
{
	const struct engy_opt *o;

	load();
	ck_assert_uint_eq(plug->magic, ENGY_PLUGIN_MAGIC);
	ck_assert_uint_eq(plug->abi_major, ENGY_ABI_MAJOR);
	ck_assert_uint_le(plug->abi_minor, ENGY_ABI_MINOR);
	ck_assert_uint_ge(plug->size, ENGY_PLUGIN_SIZE_1_0);
	ck_assert_uint_eq(plug->kind, ENGY_KIND_PROOF);
	ck_assert_str_eq(plug->name, "verifier-toploc");
	ck_assert(plug->version && *plug->version);
	ck_assert(plug->create && plug->destroy && ops);
	ck_assert_uint_ge(ops->size, sizeof(struct engy_proof_ops));
	ck_assert_str_eq(ops->scheme, "toploc");
	ck_assert(ops->prove && ops->verify);

	o = opt("topk");
	ck_assert(o && o->type == ENGY_OPT_INT);
	ck_assert_str_eq(o->def, "128");
	ck_assert_str_eq(o->env, "TOPLOC_TOPK");
	ck_assert(o->min == 1 && o->max >= 128);
	o = opt("decode_batching_size");
	ck_assert(o && o->type == ENGY_OPT_INT);
	ck_assert_str_eq(o->def, "32");
	ck_assert_str_eq(o->env, "TOPLOC_DBS");
	ck_assert(o->min == 1 && o->max >= 32);
	o = opt("skip_prefill");
	ck_assert(o && o->type == ENGY_OPT_BOOL);
	ck_assert_str_eq(o->def, "true");
	o = opt("max_exp_mismatches");
	ck_assert(o && o->type == ENGY_OPT_INT);
	ck_assert_str_eq(o->def, "40");
	o = opt("min_pass_ratio");
	ck_assert(o && o->type == ENGY_OPT_FLOAT);
	ck_assert_str_eq(o->def, "0.99");
	ck_assert(opt("max_mant_mean") && opt("max_mant_median"));
	ck_assert_str_eq(opt("max_mant_mean")->def, "0");
	ck_assert_str_eq(opt("max_mant_median")->def, "0");
	for (o = plug->opts; o->name; o++)
		ck_assert(o->help && *o->help);
	unload();
}
END_TEST

START_TEST(test_prove_verify)
{
	const uint32_t hidden = 256, n_rows = 72, pre = 2;
	size_t n = (size_t)n_rows * hidden;
	uint16_t *rows = rows_bf16(n, 1, 0), *nz = rows_bf16(n, 1, 0.01);
	uint16_t *other = rows_bf16(n, 2, 0);
	struct engy_rows r = { rows, ENGY_DTYPE_BF16, n_rows, hidden, pre };
	struct engy_host *h = fake_host_new("toploc0");
	struct engy_proof_result res;
	struct engy_proof_limits strict = { .size = sizeof(strict),
					    .max_exp_mismatches = 0,
					    .min_pass_ratio = 0.99 };
	void *conf, *inst;
	char *json;
	cJSON *root, *det;

	load();
	conf = fill_conf();
	ck_assert_int_eq(plug->create(h, conf, &inst), 0);
	ck_assert_int_eq(ops->prove(inst, &r, &json), 0);
	root = cJSON_Parse(json);
	ck_assert_ptr_nonnull(root);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(root, "proofs")), 3);
	ck_assert_int_eq(cJSON_GetObjectItem(root, "topk")->valueint, 128);
	ck_assert_int_eq(
		cJSON_GetObjectItem(root, "decode_batching_size")->valueint,
		32);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(root, "skip_prefill")));
	ck_assert_int_eq(cJSON_GetObjectItem(root, "n_tokens")->valueint, 70);
	ck_assert_ptr_null(cJSON_GetObjectItem(root, "prompt_ids"));
	cJSON_Delete(root);

	/* The auditor's own rows: same, noisy, another model. */
	ck_assert_int_eq(ops->verify(inst, &r, json, strlen(json), NULL, &res),
			 0);
	ck_assert_int_eq(res.verdict, ENGY_VERDICT_PASS);
	ck_assert_str_eq(res.reason, "ok");
	det = cJSON_Parse(res.detail);
	ck_assert_ptr_nonnull(det);
	ck_assert_str_eq(cJSON_GetObjectItem(det, "verdict")->valuestring,
			 "pass");
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(det, "exp_mismatches")),
		3);
	cJSON_Delete(det);
	free(res.detail);
	r.data = nz;
	ck_assert_int_eq(ops->verify(inst, &r, json, strlen(json), NULL, &res),
			 0);
	ck_assert_int_eq(res.verdict, ENGY_VERDICT_PASS);
	free(res.detail);
	/* The caller's limits win over the configured ones. */
	ck_assert_int_eq(
		ops->verify(inst, &r, json, strlen(json), &strict, &res), 0);
	ck_assert_int_eq(res.verdict, ENGY_VERDICT_CHEAT);
	ck_assert_str_eq(res.reason, "exp_mismatch");
	free(res.detail);
	r.data = other;
	ck_assert_int_eq(ops->verify(inst, &r, json, strlen(json), NULL, &res),
			 0);
	ck_assert_int_eq(res.verdict, ENGY_VERDICT_CHEAT);
	free(res.detail);
	/* Malformed members are UNPROVEN, not errors. */
	ck_assert_int_eq(ops->verify(inst, &r, "{\"proofs\":", 10, NULL, &res),
			 0);
	ck_assert_int_eq(res.verdict, ENGY_VERDICT_UNPROVEN);
	ck_assert_str_eq(res.reason, "bad_json");
	free(res.detail);
	ck_assert_int_eq(
		ops->verify(inst, &r, json, strlen(json) / 2, NULL, &res), 0);
	ck_assert_int_eq(res.verdict, ENGY_VERDICT_UNPROVEN);
	free(res.detail);
	free(json);
	/* Rows the scheme cannot use: a local error, logged. */
	r.hidden = 0;
	ck_assert_int_eq(ops->prove(inst, &r, &json), -EINVAL);
	ck_assert_ptr_null(json);
	ck_assert_ptr_nonnull(strstr(fake_host_log(h), "toploc_prove_failed"));

	plug->destroy(inst);
	free(conf);
	fake_host_free(h);
	free(rows);
	free(nz);
	free(other);
	unload();
}
END_TEST

/* An older caller's limits struct: the fields it lacks read as unset. */
START_TEST(test_short_limits)
{
	const uint32_t hidden = 128, n_rows = 32;
	uint16_t *rows = rows_bf16((size_t)n_rows * hidden, 3, 0);
	uint16_t *nz = rows_bf16((size_t)n_rows * hidden, 3, 0.02);
	struct engy_rows r = { rows, ENGY_DTYPE_BF16, n_rows, hidden, 0 };
	struct engy_host *h = fake_host_new("toploc0");
	struct engy_proof_limits lim = { .size = 0,
					 .max_exp_mismatches = 128,
					 .min_pass_ratio = 1.0,
					 .max_mant_mean = 0.001,
					 .max_mant_median = 0.001 };
	struct engy_proof_result res;
	void *conf, *inst;
	char *json;

	load();
	conf = fill_conf();
	ck_assert_int_eq(plug->create(h, conf, &inst), 0);
	ck_assert_int_eq(ops->prove(inst, &r, &json), 0);
	r.data = nz;
	lim.size = sizeof(lim);
	ck_assert_int_eq(ops->verify(inst, &r, json, strlen(json), &lim, &res),
			 0);
	ck_assert_int_eq(res.verdict, ENGY_VERDICT_CHEAT);
	ck_assert_str_eq(res.reason, "mant_mean");
	free(res.detail);
	lim.size = (uint32_t)offsetof(struct engy_proof_limits, max_mant_mean);
	ck_assert_int_eq(ops->verify(inst, &r, json, strlen(json), &lim, &res),
			 0);
	ck_assert_int_eq(res.verdict, ENGY_VERDICT_PASS);
	free(res.detail);
	free(json);
	plug->destroy(inst);
	free(conf);
	fake_host_free(h);
	free(rows);
	free(nz);
	unload();
}
END_TEST

START_TEST(test_env_twins)
{
	const uint32_t hidden = 256, n_rows = 70;
	uint16_t *rows = rows_bf16((size_t)n_rows * hidden, 4, 0);
	struct engy_rows r = { rows, ENGY_DTYPE_BF16, n_rows, hidden, 0 };
	struct engy_host *h = fake_host_new("toploc0");
	void *conf, *inst;
	char *json;
	cJSON *root;

	setenv("TOPLOC_TOPK", "64", 1);
	setenv("TOPLOC_DBS", "16", 1);
	load();
	conf = fill_conf();
	unsetenv("TOPLOC_TOPK");
	unsetenv("TOPLOC_DBS");
	ck_assert_int_eq(plug->create(h, conf, &inst), 0);
	ck_assert_int_eq(ops->prove(inst, &r, &json), 0);
	root = cJSON_Parse(json);
	ck_assert_int_eq(cJSON_GetObjectItem(root, "topk")->valueint, 64);
	ck_assert_int_eq(
		cJSON_GetObjectItem(root, "decode_batching_size")->valueint,
		16);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(root, "proofs")), 5);
	ck_assert_uint_eq(strlen(cJSON_GetArrayItem(
					 cJSON_GetObjectItem(root, "proofs"), 0)
					 ->valuestring),
			  176);
	cJSON_Delete(root);
	free(json);
	plug->destroy(inst);
	free(conf);
	fake_host_free(h);
	free(rows);
	unload();
}
END_TEST

START_TEST(test_create_rejects)
{
	struct engy_host *h = fake_host_new("toploc0");
	void *conf, *inst = (void *)1;

	load();
	conf = fill_conf();
	set_float(conf, "min_pass_ratio", 1.5);
	ck_assert_int_eq(plug->create(h, conf, &inst), -EINVAL);
	ck_assert_ptr_null(inst);
	ck_assert_ptr_nonnull(strstr(fake_host_log(h), "min_pass_ratio"));
	set_float(conf, "min_pass_ratio", 0.99);
	set_int(conf, "max_exp_mismatches", 129);
	ck_assert_int_eq(plug->create(h, conf, &inst), -EINVAL);
	ck_assert_ptr_nonnull(strstr(fake_host_log(h), "max_exp_mismatches"));
	set_int(conf, "max_exp_mismatches", 40);
	set_int(conf, "topk", 0);
	ck_assert_int_eq(plug->create(h, conf, &inst), -EINVAL);
	set_int(conf, "topk", 128);
	set_float(conf, "max_mant_mean", -1);
	ck_assert_int_eq(plug->create(h, conf, &inst), -EINVAL);
	set_float(conf, "max_mant_mean", 10);
	ck_assert_int_eq(plug->create(h, conf, &inst), 0);
	plug->destroy(inst);
	free(conf);
	fake_host_free(h);
	unload();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("verifier_toploc");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_descriptor);
	tcase_add_test(tc, test_prove_verify);
	tcase_add_test(tc, test_short_limits);
	tcase_add_test(tc, test_env_twins);
	tcase_add_test(tc, test_create_rejects);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
