/* SPDX-License-Identifier: MIT */
/*
 * lib/model/merkle: the known answers of specs/model-commitment.md §8
 * (computed by the independent tests/ref/model_commitment.py), every
 * leaf's path folding back to the root for trees of 0 to 33 leaves, and
 * the shape rules and refusals of a tensor description.
 *
 * Oracle: independent: known answers computed by
 * tests/ref/model_commitment.py, written separately from specs/model-
 * commitment.md.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "merkle.h"
#include "safetensors.h"

static struct engy_mh *h;

static void hexeq(const uint8_t b[32], const char *want)
{
	char hex[65];

	engy_mc_hex(b, 32, hex);
	ck_assert_str_eq(hex, want);
}

START_TEST(kat_tags_tree)
{
	uint8_t e[32], n[32], l[3][32], root[32], path[64], f[32];

	engy_mc_empty(h, e);
	hexeq(e,
	      "b276ab53ed8f4fe5d2e96b9d53d8f608280c29f2f01740df6be53c1f6cd785bb");
	engy_mc_node(h, e, e, n);
	hexeq(n,
	      "292cbfad15f3e9ce5a04568533d3b647a89126da458e44628b1964e1c2137bcf");
	engy_mh_sha256(h, "a", 1, l[0]);
	engy_mh_sha256(h, "b", 1, l[1]);
	engy_mh_sha256(h, "c", 1, l[2]);
	engy_mc_tree(h, &l[0][0], 3, (uint8_t[96]){ 0 }, 2, path, root);
	hexeq(root,
	      "90ea0e131872e2542fc15b2f2096913b87a8db18d86c866c9cf8692230540d78");
	ck_assert_mem_eq(path, e, 32);
	engy_mc_node(h, l[0], l[1], n);
	ck_assert_mem_eq(path + 32, n, 32);
	engy_mc_fold(h, l[2], 2, path, 2, f);
	ck_assert_mem_eq(f, root, 32);
}
END_TEST

START_TEST(kat_tensor_model)
{
	struct engy_mc_tensor_desc d = {
		.name = "t", .dtype = ENGY_ST_BF16, .ndim = 2, .shape = { 3, 2 }
	};
	uint8_t data[12], tid[32], lv[3][32], rr[32], tr[32], tl[32], cs[32],
		mr[32];
	uint64_t nr, rb, ab;
	int i;

	for (i = 0; i < 12; i++)
		data[i] = (uint8_t)i;
	ck_assert_int_eq(engy_mc_desc_check(&d, &nr, &rb, &ab, NULL, 0), 0);
	ck_assert_uint_eq(nr, 3);
	ck_assert_uint_eq(rb, 4);
	ck_assert_uint_eq(ab, 0);
	engy_mc_tid(h, &d, nr, rb, tid);
	hexeq(tid,
	      "dd8fc97ec7b343c896095fb33af24a660991eb48aa3b03a072f86c3235e47ac0");
	for (i = 0; i < 3; i++)
		engy_mc_leaf(h, tid, (uint64_t)i, data + 4 * i, 4, NULL, 0,
			     lv[i]);
	hexeq(lv[0],
	      "06dcd8b1cd8d4a509b8c6b15b5a8ec8b0ae2a7dc94958a19c9083424b3c9f209");
	engy_mc_tree(h, &lv[0][0], 3, &lv[0][0], 0, NULL, rr);
	engy_mc_tensor_root(h, tid, 3, rr, tr);
	hexeq(tr,
	      "cfac0a9f3dc80cfe079350a3d1b2b01662cb5885aa66c59250e9b2fb3485d0c1");
	engy_mc_tleaf(h, tr, tl);
	engy_mh_sha256(h, "{\"arch\":\"x\"}", 12, cs);
	engy_mc_model(h, cs, 1, tl, mr);
	hexeq(mr,
	      "1777185585cd1cdc698a039efbeeffd4f96e56b260e9e039a412be237e00cdf7");
}
END_TEST

/* Every leaf of trees of 0..33 leaves folds back to the root; a path
 * with one flipped bit or at another index does not. */
START_TEST(tree_paths)
{
	uint8_t lv[33 * 32], scr[33 * 32], root[32], r2[32], path[6 * 32],
		f[32];
	uint64_t n, i;

	for (i = 0; i < 33; i++)
		engy_mh_sha256(h, &i, sizeof(i), lv + 32 * i);
	for (n = 0; n <= 33; n++) {
		engy_mc_tree(h, lv, n, scr, 0, NULL, root);
		if (n == 0)
			engy_mc_empty(h, r2);
		else if (n == 1)
			memcpy(r2, lv, 32);
		else
			memcpy(r2, root, 32);
		ck_assert_mem_eq(root, r2, 32);
		for (i = 0; i < n; i++) {
			unsigned d = engy_mc_depth(n);

			engy_mc_tree(h, lv, n, scr, i, path, r2);
			ck_assert_mem_eq(r2, root, 32);
			engy_mc_fold(h, lv + 32 * i, i, path, d, f);
			ck_assert_mem_eq(f, root, 32);
			if (d) {
				engy_mc_fold(h, lv + 32 * i, i ^ 1, path, d, f);
				ck_assert(memcmp(f, root, 32) != 0);
				path[5] ^= 1;
				engy_mc_fold(h, lv + 32 * i, i, path, d, f);
				ck_assert(memcmp(f, root, 32) != 0);
			}
		}
	}
	ck_assert_uint_eq(engy_mc_depth(0), 0);
	ck_assert_uint_eq(engy_mc_depth(1), 0);
	ck_assert_uint_eq(engy_mc_depth(2), 1);
	ck_assert_uint_eq(engy_mc_depth(5), 3);
}
END_TEST

START_TEST(desc_rules)
{
	struct engy_mc_tensor_desc d = { .name = "w",
					 .dtype = ENGY_ST_F8_E4M3,
					 .ndim = 2,
					 .shape = { 300, 200 },
					 .quant = ENGY_MC_Q_FP8_BLOCK,
					 .qparam = 128,
					 .scale_name = "w_s",
					 .scale_dtype = ENGY_ST_F32,
					 .scale_shape = { 3, 2 } };
	uint64_t nr, rb, ab;
	char err[256];

	ck_assert_int_eq(
		engy_mc_desc_check(&d, &nr, &rb, &ab, err, sizeof(err)), 0);
	ck_assert_uint_eq(nr, 300);
	ck_assert_uint_eq(rb, 200);
	ck_assert_uint_eq(ab, 8);
	d.scale_shape[0] = 2; /* ceil(300/128) = 3 */
	ck_assert_int_eq(
		engy_mc_desc_check(&d, &nr, &rb, &ab, err, sizeof(err)),
		-EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "FP8"));
	d = (struct engy_mc_tensor_desc){ .name = "q",
					  .dtype = ENGY_ST_U8,
					  .ndim = 2,
					  .shape = { 4, 32 },
					  .quant = ENGY_MC_Q_INT4,
					  .qparam = 32,
					  .scale_name = "s",
					  .scale_dtype = ENGY_ST_F16,
					  .scale_shape = { 4, 2 } };
	ck_assert_int_eq(
		engy_mc_desc_check(&d, &nr, &rb, &ab, err, sizeof(err)), 0);
	ck_assert_uint_eq(ab, 4);
	d.qparam = 16;
	ck_assert_int_eq(
		engy_mc_desc_check(&d, &nr, &rb, &ab, err, sizeof(err)),
		-EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "INT4"));
	d = (struct engy_mc_tensor_desc){
		.name = "n", .dtype = ENGY_ST_F32, .ndim = 1, .shape = { 7 }
	};
	ck_assert_int_eq(
		engy_mc_desc_check(&d, &nr, &rb, &ab, err, sizeof(err)), 0);
	ck_assert_uint_eq(nr, 1);
	ck_assert_uint_eq(rb, 28);
	d.shape[0] = UINT64_MAX / 2;
	ck_assert_int_eq(
		engy_mc_desc_check(&d, &nr, &rb, &ab, err, sizeof(err)),
		-EINVAL);
	d = (struct engy_mc_tensor_desc){ .name = "", .dtype = ENGY_ST_F32 };
	ck_assert_int_eq(
		engy_mc_desc_check(&d, &nr, &rb, &ab, err, sizeof(err)),
		-EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("modelspec");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	h = engy_mh_new();
	tcase_add_test(tc, kat_tags_tree);
	tcase_add_test(tc, kat_tensor_model);
	tcase_add_test(tc, tree_paths);
	tcase_add_test(tc, desc_rules);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	engy_mh_free(h);
	return nf ? 1 : 0;
}
