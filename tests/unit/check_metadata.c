/* SPDX-License-Identifier: MIT */
/*
 * Runtime metadata v14 and v15: lookups by name (pallet and call indices
 * are read, never assumed), newtype unwrapping, storage keys with every
 * hasher against values computed with
 * polkadot-js, walking event records to an extrinsic's outcome with its
 * dispatch error named, and refusals: bad magic, other versions, dangling
 * type references, every truncation.
 *
 * Oracle: independent: storage keys computed with polkadot-js; the
 * fixtures are encoded by hand from the frame-metadata layout.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "meta_fixture.h"
#include "metadata.h"

/* The Substrate dev phrase's public key. */
#define DEV_PUB                                                                \
	"46ebddef8cd9bb167dc30878d7113b7e168e6f0646beffd77d69d39bad76b47a"

static struct engy_metadata *parse_fixture(int version, uint8_t sub_index)
{
	struct engy_metadata *md = NULL;
	struct engy_scale_buf b;
	char err[256] = "";

	engy_scale_buf_init(&b);
	mf_build(&b, version, sub_index, NULL, 0);
	ck_assert_msg(engy_meta_parse(b.p, b.len, &md, err, sizeof(err)) == 0,
		      "%s", err);
	engy_scale_buf_free(&b);
	return md;
}

static void check_lookups(struct engy_metadata *md, uint8_t sub_index)
{
	const struct engy_meta_variant *v;
	const struct engy_meta_pallet *p;
	uint8_t pi = 0, ci = 0;
	char err[256];

	ck_assert_uint_eq(md->n_types, T_N);
	ck_assert_uint_eq(md->n_pallets, 2);
	p = engy_meta_pallet(md, "SubtensorModule");
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->index, sub_index);
	ck_assert_str_eq(p->prefix, "SubtensorModule");
	ck_assert_ptr_eq(engy_meta_pallet_by_index(md, sub_index), p);
	ck_assert_ptr_null(engy_meta_pallet(md, "Balances"));
	ck_assert_int_eq(engy_meta_call(md, "SubtensorModule", "set_weights",
					&pi, &ci, &v),
			 0);
	ck_assert_uint_eq(pi, sub_index);
	ck_assert_uint_eq(ci, 0);
	ck_assert_uint_eq(v->n_fields, 4);
	ck_assert_str_eq(v->fields[0].name, "netuid");
	/* NetUid(u16) is a newtype: it carries a u16 */
	ck_assert(engy_meta_is_prim(md, v->fields[0].type, ENGY_PRIM_U16));
	ck_assert_uint_eq(engy_meta_unwrap(md, T_NETUID), T_U16);
	ck_assert(engy_meta_is_seq_of(md, v->fields[1].type, ENGY_PRIM_U16));
	ck_assert_int_eq(engy_meta_call(md, "SubtensorModule", "commit_weights",
					&pi, &ci, NULL),
			 0);
	ck_assert_uint_eq(ci, 96);
	ck_assert_int_eq(
		engy_meta_call(md, "SubtensorModule", "nope", &pi, &ci, NULL),
		-ENOENT);
	ck_assert_int_eq(
		engy_meta_call(md, "Nope", "set_weights", &pi, &ci, NULL),
		-ENOENT);
	ck_assert_str_eq(engy_meta_variant_at(md, p->errors, 15)->name,
			 "NeuronNoValidatorPermit");
	ck_assert_ptr_null(engy_meta_variant_at(md, p->errors, 16));
	ck_assert_uint_eq(md->n_exts, 13);
	ck_assert_str_eq(md->exts[12].identifier, "CheckMetadataHash");
	ck_assert_uint_eq(md->extrinsic_version, 4);
	(void)err;
}

START_TEST(test_v14)
{
	struct engy_metadata *md = parse_fixture(14, 7);

	ck_assert_uint_eq(md->version, 14);
	check_lookups(md, 7);
	engy_meta_free(md);
}
END_TEST

START_TEST(test_v15_and_opaque_wrapper)
{
	struct engy_metadata *md = NULL;
	struct engy_scale_buf b, w;
	char err[256];

	/* the 2023 testnet runtime has SubtensorModule at 8 */
	md = parse_fixture(15, 8);
	ck_assert_uint_eq(md->version, 15);
	check_lookups(md, 8);
	engy_meta_free(md);
	/* Option<OpaqueMetadata>, as Metadata_metadata_at_version answers */
	engy_scale_buf_init(&b);
	engy_scale_buf_init(&w);
	mf_build(&b, 15, 8, NULL, 0);
	engy_scale_put_u8(&w, 1);
	engy_scale_put_vec(&w, b.p, b.len);
	ck_assert_int_eq(engy_meta_parse(w.p, w.len, &md, err, sizeof(err)), 0);
	check_lookups(md, 8);
	engy_meta_free(md);
	engy_scale_buf_free(&b);
	engy_scale_buf_free(&w);
}
END_TEST

static void key_is(struct engy_metadata *md, const char *item,
		   const uint8_t *k1, size_t n1, const uint8_t *k2, size_t n2,
		   const char *hex)
{
	const uint8_t *keys[2] = { k1, k2 };
	size_t lens[2] = { n1, n2 };
	struct engy_scale_buf b;

	engy_scale_buf_init(&b);
	ck_assert_int_eq(engy_meta_storage_key(md, "SubtensorModule", item,
					       keys, lens,
					       k2   ? 2
					       : k1 ? 1
						    : 0,
					       false, &b),
			 0);
	ck_bytes(b.p, b.len, hex);
	engy_scale_buf_free(&b);
}

START_TEST(test_storage_keys)
{
	struct engy_metadata *md = parse_fixture(14, 7);
	static const uint8_t n53[2] = { 0x35, 0 }, u229[2] = { 0xe5, 0 };
	const struct engy_meta_entry *e;
	const uint8_t *keys[1] = { n53 };
	size_t lens[1] = { 2 }, n;
	struct engy_scale_buf b;
	uint8_t *dev = unhex(DEV_PUB, &n);

	key_is(md, "Keys", n53, 2, u229, 2,
	       "658faa385070e074c85bf6b568cf0555 "
	       "9f99a2ce711f3a31b2fc05604c93f179 3500 e500");
	key_is(md, "SubnetworkN", n53, 2, NULL, 0,
	       "658faa385070e074c85bf6b568cf0555 "
	       "a1048e9d244171852dfe8db314dc68ca 3500");
	key_is(md, "Uids", n53, 2, dev, 32,
	       "658faa385070e074c85bf6b568cf0555 "
	       "aab1b4e78e1ea8305462ee53b3686dc8 3500 "
	       "61f241703cdf949d6c16a7da8ed0c217 " DEV_PUB);
	key_is(md, "RevealPeriodEpochs", n53, 2, NULL, 0,
	       "658faa385070e074c85bf6b568cf0555 "
	       "8f232bcbac768c1d6201850c60f161ed "
	       "cdfb1e1e76a20a87 3500");
	key_is(md, "StakeThreshold", NULL, 0, NULL, 0,
	       "658faa385070e074c85bf6b568cf0555 "
	       "782d99ebaa64a1ba18b3e8cda1047327");
	engy_scale_buf_init(&b);
	/* a double map with one key: only as a prefix */
	ck_assert_int_eq(engy_meta_storage_key(md, "SubtensorModule", "Keys",
					       keys, lens, 1, false, &b),
			 -EINVAL);
	ck_assert_int_eq(engy_meta_storage_key(md, "SubtensorModule", "Keys",
					       keys, lens, 1, true, &b),
			 0);
	ck_bytes(b.p, b.len,
		 "658faa385070e074c85bf6b568cf0555 "
		 "9f99a2ce711f3a31b2fc05604c93f179 3500");
	ck_assert_int_eq(engy_meta_storage_key(md, "SubtensorModule", "Weights",
					       keys, lens, 1, false, &b),
			 -ENOENT);
	engy_scale_buf_free(&b);
	/* defaults come from the metadata: rate limit 100, commit-reveal on */
	e = engy_meta_entry(md, "SubtensorModule", "WeightsSetRateLimit");
	ck_assert_ptr_nonnull(e);
	ck_bytes(e->def, e->def_len, "6400000000000000");
	e = engy_meta_entry(md, "SubtensorModule",
			    "CommitRevealWeightsEnabled");
	ck_assert_uint_eq(e->modifier, 1);
	ck_bytes(e->def, e->def_len, "01");
	ck_assert_uint_eq(
		engy_meta_entry(md, "SubtensorModule", "Uids")->modifier, 0);
	free(dev);
	engy_meta_free(md);
}
END_TEST

/* An event record: phase, then pallet, variant and the fields' bytes. */
static void record(struct engy_scale_buf *b, int apply, uint32_t index,
		   uint8_t pallet, uint8_t variant, const char *fields_hex)
{
	size_t n;
	uint8_t *f = unhex(fields_hex, &n);

	if (apply) {
		engy_scale_put_u8(b, 0);
		engy_scale_put_u32(b, index);
	} else {
		engy_scale_put_u8(b, 1); /* Finalization */
	}
	engy_scale_put_u8(b, pallet);
	engy_scale_put_u8(b, variant);
	engy_scale_put(b, f, n);
	engy_scale_put_compact(b, 1); /* one topic */
	engy_scale_put(b, "0123456789abcdef0123456789abcdef", 32);
	free(f);
}

#define INFO "0b00204aa9d101 00 01" /* compact weight, class, pays */

static void events(struct engy_scale_buf *b)
{
	engy_scale_put_compact(b, 7);
	record(b, 1, 0, 0, 0, INFO);
	/* a u128 compact in big-integer mode and a string, to step over */
	record(b, 1, 1, 7, 1, "33 ffffffffffffffffffffffffffffffff 0c616263");
	/* 10 bits in u8 stores: two bytes */
	record(b, 1, 1, 7, 2, "28 ff03");
	record(b, 1, 1, 0, 1, "03 07 0f000000 " INFO);
	record(b, 0, 0, 0, 7, DEV_PUB " " DEV_PUB);
	record(b, 1, 2, 0, 1, "07 00 " INFO);
	record(b, 1, 3, 0, 1, "02 " INFO);
}

START_TEST(test_outcome)
{
	struct engy_metadata *md = parse_fixture(14, 7);
	struct engy_meta_outcome o;
	struct engy_scale_buf b;
	char err[256];
	size_t cut;

	engy_scale_buf_init(&b);
	events(&b);
	ck_assert_int_eq(
		engy_meta_outcome(md, b.p, b.len, 0, &o, err, sizeof(err)), 0);
	ck_assert(o.found && o.success);
	ck_assert_int_eq(
		engy_meta_outcome(md, b.p, b.len, 1, &o, err, sizeof(err)), 0);
	ck_assert(o.found && !o.success);
	ck_assert_str_eq(o.error, "SubtensorModule.NeuronNoValidatorPermit");
	ck_assert_int_eq(
		engy_meta_outcome(md, b.p, b.len, 2, &o, err, sizeof(err)), 0);
	ck_assert_str_eq(o.error, "Token.FundsUnavailable");
	ck_assert_int_eq(
		engy_meta_outcome(md, b.p, b.len, 3, &o, err, sizeof(err)), 0);
	ck_assert_str_eq(o.error, "BadOrigin");
	ck_assert_int_eq(
		engy_meta_outcome(md, b.p, b.len, 9, &o, err, sizeof(err)), 0);
	ck_assert(!o.found);
	/* every truncation, and one byte too many, are refused */
	for (cut = 0; cut < b.len; cut++)
		ck_assert_int_eq(engy_meta_outcome(md, b.p, cut, 1, &o, err,
						   sizeof(err)),
				 -EINVAL);
	engy_scale_put_u8(&b, 0);
	ck_assert_int_eq(
		engy_meta_outcome(md, b.p, b.len, 1, &o, err, sizeof(err)),
		-EINVAL);
	engy_scale_buf_free(&b);
	/* an unknown module error keeps its numbers */
	engy_scale_buf_init(&b);
	engy_scale_put_compact(&b, 1);
	record(&b, 1, 0, 0, 1, "03 09 02000000 " INFO);
	ck_assert_int_eq(
		engy_meta_outcome(md, b.p, b.len, 0, &o, err, sizeof(err)), 0);
	ck_assert_str_eq(o.error, "Module(9).Error(2)");
	engy_scale_buf_free(&b);
	engy_meta_free(md);
}
END_TEST

START_TEST(test_zero_size_and_skip)
{
	struct engy_metadata *md = parse_fixture(14, 7);
	struct engy_scale_rd r;
	static const uint8_t era[] = { 1, 7, 0xaa };

	ck_assert(engy_meta_zero_size(md, T_UNIT));
	ck_assert(engy_meta_zero_size(md, T_PHANTOM));
	ck_assert(!engy_meta_zero_size(md, T_CHECK_NONCE));
	ck_assert(!engy_meta_zero_size(md, T_H256));
	engy_scale_rd_init(&r, era, sizeof(era));
	ck_assert_int_eq(engy_meta_skip(md, T_ERA, &r), 0);
	ck_assert_uint_eq(r.pos, 2);
	/* a variant index the type does not have */
	engy_scale_rd_init(&r, "\x05", 1);
	ck_assert_int_eq(engy_meta_skip(md, T_ERA, &r), -EINVAL);
	/* a vector longer than the input is refused up front */
	engy_scale_rd_init(&r, "\xfd\xff\x01\x00", 4);
	ck_assert_int_eq(engy_meta_skip(md, T_VEC_U64, &r), -EMSGSIZE);
	engy_meta_free(md);
}
END_TEST

START_TEST(test_refusals)
{
	struct engy_metadata *md = NULL;
	struct engy_scale_buf b;
	char err[256];
	size_t cut;

	engy_scale_buf_init(&b);
	mf_build(&b, 14, 7, NULL, 0);
	/* every truncation before the runtime type id (which is not read) */
	for (cut = 0; cut < b.len - 1; cut++)
		ck_assert_int_eq(
			engy_meta_parse(b.p, cut, &md, err, sizeof(err)),
			-EINVAL);
	ck_assert_int_eq(engy_meta_parse(b.p, b.len - 1, &md, err, sizeof(err)),
			 0);
	engy_meta_free(md);
	b.p[4] = 13;
	ck_assert_int_eq(engy_meta_parse(b.p, b.len, &md, err, sizeof(err)),
			 -EPROTONOSUPPORT);
	ck_assert_str_eq(err, "metadata version 13 (14 and 15 are understood)");
	b.p[4] = 14;
	b.p[0] = 'M';
	ck_assert_int_eq(engy_meta_parse(b.p, b.len, &md, err, sizeof(err)),
			 -EINVAL);
	ck_assert_ptr_null(md);
	engy_scale_buf_free(&b);

	/* a field naming a type the registry lacks */
	engy_scale_buf_init(&b);
	engy_scale_put(&b, "meta\x0e", 5);
	engy_scale_put_compact(&b, 1);
	mf_composite(&b, 0, "Dangling", MF_F({ "x", 7 }));
	engy_scale_put_compact(&b, 0);
	ck_assert_int_eq(engy_meta_parse(b.p, b.len, &md, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "type reference") != NULL, "%s", err);
	engy_scale_buf_free(&b);

	/* ids out of order */
	engy_scale_buf_init(&b);
	engy_scale_put(&b, "meta\x0e", 5);
	engy_scale_put_compact(&b, 1);
	mf_prim(&b, 3, 3);
	ck_assert_int_eq(engy_meta_parse(b.p, b.len, &md, err, sizeof(err)),
			 -EINVAL);
	engy_scale_buf_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metadata");
	TCase *tc = tcase_create("v14v15");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_v14);
	tcase_add_test(tc, test_v15_and_opaque_wrapper);
	tcase_add_test(tc, test_storage_keys);
	tcase_add_test(tc, test_outcome);
	tcase_add_test(tc, test_zero_size_and_skip);
	tcase_add_test(tc, test_refusals);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
