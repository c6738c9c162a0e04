/* SPDX-License-Identifier: MIT */
/*
 * The light validator's pure parts: the schedule (a new epoch at once, an
 * older one never, the same one every interval by blocks or by the clock,
 * a clock or chain that went backwards, the 80% pre-gate), uid resolution
 * with renormalization onto 65535 (the remainder to the top row, ties to
 * the lower uid; dropped hotkeys and their share; duplicates summed), and
 * the state file: round trip, per-field validation, corruption.
 *
 * Oracle: hand-derived from specs/validator.md by the test's author;
 * state-file round trips are self-consistency.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ss58.h"
#include "valsched.h"

static struct engy_valsched_last last(uint64_t applied, bool has_block,
				      uint64_t block, bool has_ts, int64_t ts)
{
	struct engy_valsched_last l = { true,  applied, has_block,
					block, has_ts,	ts };

	return l;
}

START_TEST(test_decide)
{
	struct engy_valsched_last none = { 0 },
				  l = last(105, true, 1000, true, 50000);
	struct engy_valsched_decision d;

	engy_valsched_decide(&none, 1, false, 0, 0, 120, 12, &d);
	ck_assert_int_eq(d.verdict, ENGY_VALSCHED_NEW);
	engy_valsched_decide(&l, 106, true, 1001, 50001, 120, 12, &d);
	ck_assert_int_eq(d.verdict, ENGY_VALSCHED_NEW);
	/* the replay guard holds whatever the clock or the chain say */
	engy_valsched_decide(&l, 104, true, 999999, 9999999, 120, 12, &d);
	ck_assert_int_eq(d.verdict, ENGY_VALSCHED_OLDER);
	/* same epoch, by blocks */
	engy_valsched_decide(&l, 105, true, 1119, 99999999, 120, 12, &d);
	ck_assert_int_eq(d.verdict, ENGY_VALSCHED_NOT_YET);
	ck_assert(d.by_block);
	ck_assert_uint_eq(d.wait_blocks, 1);
	ck_assert_int_eq(d.wait_s, 12);
	engy_valsched_decide(&l, 105, true, 1120, 0, 120, 12, &d);
	ck_assert_int_eq(d.verdict, ENGY_VALSCHED_DUE);
	engy_valsched_decide(&l, 105, true, 1000, 50000, 120, 12, &d);
	ck_assert_int_eq(d.verdict, ENGY_VALSCHED_NOT_YET);
	ck_assert_uint_eq(d.wait_blocks, 120);
	/* a chain behind the last submission: due */
	engy_valsched_decide(&l, 105, true, 10, 50000, 120, 12, &d);
	ck_assert_int_eq(d.verdict, ENGY_VALSCHED_DUE);
	/* no block now: the clock at 12 s a block */
	engy_valsched_decide(&l, 105, false, 0, 50000 + 1439, 120, 12, &d);
	ck_assert_int_eq(d.verdict, ENGY_VALSCHED_NOT_YET);
	ck_assert(!d.by_block);
	ck_assert_int_eq(d.wait_s, 1);
	engy_valsched_decide(&l, 105, false, 0, 50000 + 1440, 120, 12, &d);
	ck_assert_int_eq(d.verdict, ENGY_VALSCHED_DUE);
	/* the clock went backwards: due */
	engy_valsched_decide(&l, 105, false, 0, 49999, 120, 12, &d);
	ck_assert_int_eq(d.verdict, ENGY_VALSCHED_DUE);
	/* no last block recorded: the clock decides even with a block now */
	l = last(105, false, 0, true, 50000);
	engy_valsched_decide(&l, 105, true, 5, 50100, 120, 12, &d);
	ck_assert_int_eq(d.verdict, ENGY_VALSCHED_NOT_YET);
	ck_assert(!d.by_block);
	/* nothing recorded at all but the epoch: due */
	l = last(105, false, 0, false, 0);
	engy_valsched_decide(&l, 105, false, 0, 1, 120, 12, &d);
	ck_assert_int_eq(d.verdict, ENGY_VALSCHED_DUE);
}
END_TEST

START_TEST(test_pregate)
{
	struct engy_valsched_last l = last(105, true, 1000, true, 50000),
				  none = { 0 };
	int64_t wait;

	/* 80% of 120 blocks at 12 s = 1152 s */
	ck_assert(engy_valsched_pregate(&l, 105, 50000 + 1151, 120, 12, &wait));
	ck_assert_int_eq(wait, 1440 - 1151);
	ck_assert(
		!engy_valsched_pregate(&l, 105, 50000 + 1152, 120, 12, &wait));
	ck_assert_int_eq(wait, 0);
	ck_assert(!engy_valsched_pregate(&l, 106, 50001, 120, 12, &wait));
	ck_assert(!engy_valsched_pregate(&l, 105, 49000, 120, 12, &wait));
	ck_assert(!engy_valsched_pregate(&none, 1, 0, 120, 12, &wait));
	l.has_ts = false;
	ck_assert(!engy_valsched_pregate(&l, 105, 50001, 120, 12, &wait));
	/* a faster chain: 3 blocks of 1 s, gate at 2.4 s */
	l.has_ts = true;
	ck_assert(engy_valsched_pregate(&l, 105, 50002, 3, 1, &wait));
	ck_assert_int_eq(wait, 1);
	ck_assert(!engy_valsched_pregate(&l, 105, 50003, 3, 1, &wait));
}
END_TEST

static void account(uint8_t acc[32], uint8_t seed)
{
	memset(acc, seed, 32);
}

static void row(struct engy_valrow *r, uint8_t seed, uint16_t w)
{
	uint8_t acc[32];

	account(acc, seed);
	ck_assert_int_gt(
		engy_ss58_encode(r->hotkey, sizeof(r->hotkey), acc, 42), 0);
	r->weight = w;
}

START_TEST(test_resolve)
{
	uint8_t mg[6][32];
	struct engy_valrow rows[6];
	struct engy_valresolved r;
	size_t i;

	for (i = 0; i < 6; i++)
		account(mg[i], (uint8_t)(10 + i)); /* uid i <- seed 10+i */
	row(&rows[0], 14, 100);			   /* uid 4 */
	row(&rows[1], 11, 100);			   /* uid 1 */
	row(&rows[2], 99, 300);			   /* not registered */
	row(&rows[3], 12, 50);			   /* uid 2 */
	strcpy(rows[4].hotkey, "not an address");
	rows[4].weight = 7;
	ck_assert_int_eq(
		engy_valsched_resolve(rows, 5, (const uint8_t(*)[32])mg, 6, &r),
		0);
	ck_assert_uint_eq(r.n, 3);
	ck_assert_uint_eq(r.dropped, 2);
	ck_assert_uint_eq(r.dropped_weight, 307);
	ck_assert_uint_eq(r.total, 557);
	/* ascending uids; 65535*100/250 = 26214 (x2), 65535*50/250 = 13107:
	 * sum 65535, no remainder */
	ck_assert_uint_eq(r.uids[0], 1);
	ck_assert_uint_eq(r.uids[1], 2);
	ck_assert_uint_eq(r.uids[2], 4);
	ck_assert_uint_eq(r.weights[0], 26214);
	ck_assert_uint_eq(r.weights[1], 13107);
	ck_assert_uint_eq(r.weights[2], 26214);
	engy_valresolved_free(&r);

	/* a remainder goes to the top row, the lower uid on a tie */
	row(&rows[0], 13, 1); /* uid 3 */
	row(&rows[1], 15, 1); /* uid 5 */
	row(&rows[2], 10, 1); /* uid 0 */
	ck_assert_int_eq(
		engy_valsched_resolve(rows, 3, (const uint8_t(*)[32])mg, 6, &r),
		0);
	ck_assert_uint_eq(r.n, 3);
	ck_assert_uint_eq(r.uids[0], 0);
	ck_assert_uint_eq(r.weights[0], 21845); /* 65535/3 exactly */
	engy_valresolved_free(&r);
	row(&rows[0], 13, 2); /* uid 3: 2 */
	row(&rows[1], 15, 2); /* uid 5: 2 */
	row(&rows[2], 10, 1); /* uid 0: 1 */
	ck_assert_int_eq(
		engy_valsched_resolve(rows, 3, (const uint8_t(*)[32])mg, 6, &r),
		0);
	/* 26214 + 26214 + 13107 = 65535 */
	ck_assert_uint_eq(r.weights[0] + r.weights[1] + r.weights[2], 65535);
	engy_valresolved_free(&r);
	row(&rows[0], 13, 1);
	row(&rows[1], 15, 1);
	row(&rows[2], 10, 0);
	row(&rows[3], 11, 1); /* uid 1 */
	ck_assert_int_eq(
		engy_valsched_resolve(rows, 4, (const uint8_t(*)[32])mg, 6, &r),
		0);
	/* 65535/3 = 21845 each, no remainder; uid 0 keeps weight 0 */
	ck_assert_uint_eq(r.n, 4);
	ck_assert_uint_eq(r.weights[0], 0);
	engy_valresolved_free(&r);
	row(&rows[0], 13, 1); /* uid 3 */
	row(&rows[1], 15, 1); /* uid 5 */
	ck_assert_int_eq(
		engy_valsched_resolve(rows, 2, (const uint8_t(*)[32])mg, 6, &r),
		0);
	/* 32767 + 32767 = 65534: the 1 left goes to the lower uid */
	ck_assert_uint_eq(r.uids[0], 3);
	ck_assert_uint_eq(r.weights[0], 32768);
	ck_assert_uint_eq(r.weights[1], 32767);
	engy_valresolved_free(&r);
	/* a hotkey listed twice is summed */
	row(&rows[0], 13, 1);
	row(&rows[1], 13, 1);
	row(&rows[2], 15, 1);
	ck_assert_int_eq(
		engy_valsched_resolve(rows, 3, (const uint8_t(*)[32])mg, 6, &r),
		0);
	ck_assert_uint_eq(r.n, 2);
	ck_assert_uint_eq(r.weights[0], 43690);
	ck_assert_uint_eq(r.weights[1], 21845);
	/* ... and counted, with the first repeated row named */
	ck_assert_uint_eq(r.duplicates, 1);
	ck_assert_uint_eq(r.first_duplicate, 1);
	engy_valresolved_free(&r);
	row(&rows[0], 15, 1);
	row(&rows[1], 13, 1);
	row(&rows[2], 99, 1); /* unregistered: not a duplicate */
	row(&rows[3], 99, 1);
	row(&rows[4], 13, 1);
	row(&rows[5], 13, 0); /* a zero weight repeats the uid all the same */
	ck_assert_int_eq(
		engy_valsched_resolve(rows, 6, (const uint8_t(*)[32])mg, 6, &r),
		0);
	ck_assert_uint_eq(r.n, 2);
	ck_assert_uint_eq(r.duplicates, 2);
	ck_assert_uint_eq(r.first_duplicate, 4);
	engy_valresolved_free(&r);
	row(&rows[0], 13, 1);
	row(&rows[1], 15, 1);
	ck_assert_int_eq(
		engy_valsched_resolve(rows, 2, (const uint8_t(*)[32])mg, 6, &r),
		0);
	ck_assert_uint_eq(r.duplicates, 0);
	engy_valresolved_free(&r);
	/* nothing lands: none registered, or all zero */
	row(&rows[0], 99, 5);
	ck_assert_int_eq(
		engy_valsched_resolve(rows, 1, (const uint8_t(*)[32])mg, 6, &r),
		0);
	ck_assert_uint_eq(r.n, 0);
	ck_assert_ptr_null(r.uids);
	row(&rows[0], 13, 0);
	ck_assert_int_eq(
		engy_valsched_resolve(rows, 1, (const uint8_t(*)[32])mg, 6, &r),
		0);
	ck_assert_uint_eq(r.n, 0);
}
END_TEST

START_TEST(test_rows_and_burn)
{
	struct engy_valrow *rows;
	char why[128];
	size_t n;

	ck_assert_int_eq(
		engy_valrows_from_json("{\"epoch_index\":1,\"netuid\":53,"
				       "\"weights\":[[\"a\",1],[\"b\",65535]]}",
				       &rows, &n, why, sizeof(why)),
		0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(rows[1].hotkey, "b");
	ck_assert_uint_eq(rows[1].weight, 65535);
	ck_assert_ptr_null(engy_valrows_burn_target(rows, n));
	rows[0].weight = 0;
	ck_assert_str_eq(engy_valrows_burn_target(rows, n), "b");
	free(rows);
	ck_assert_int_eq(engy_valrows_from_json("{\"weights\":[[\"a\",1.5]]}",
						&rows, &n, why, sizeof(why)),
			 -EINVAL);
	ck_assert_int_eq(engy_valrows_from_json("{\"weights\":[[\"a\",65536]]}",
						&rows, &n, why, sizeof(why)),
			 -EINVAL);
	ck_assert_int_eq(
		engy_valrows_from_json("{}", &rows, &n, why, sizeof(why)),
		-EINVAL);
}
END_TEST

#define HK "5DfhGyQdFobKM8NsWvEeAKk5EQQgYe9AydgJ7rMB6E1EqRzV"
#define DIGEST                                                                 \
	"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

static void parse(const char *text, struct engy_valstate *st, char *dropped)
{
	ck_assert_int_eq(
		engy_valstate_parse(text, strlen(text), st, dropped, 128), 0);
}

START_TEST(test_state_round_trip)
{
	struct engy_valstate st = { 0 }, back;
	struct engy_valrow rows[2] = { { HK, 65535 }, { "5\"odd\\", 1 } };
	char dropped[128], path[] = "/tmp/engy-valstate-XXXXXX";
	char *text;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	st.last =
		last(9007199254740991ull, true, 4294967295u, true, 1790000000);
	st.has_digest = true;
	strcpy(st.digest, DIGEST);
	ck_assert_int_eq(engy_valstate_set_cache(&st, rows, 2), 0);
	text = engy_valstate_format(&st);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "\"last_applied\":9007199254740991,") !=
			      NULL,
		      "%s", text);
	parse(text, &back, dropped);
	ck_assert_str_eq(dropped, "");
	ck_assert(back.last.has_applied &&
		  back.last.applied == 9007199254740991ull);
	ck_assert(back.last.has_block && back.last.block == 4294967295u);
	ck_assert(back.last.has_ts && back.last.ts == 1790000000);
	ck_assert(back.has_digest);
	ck_assert_str_eq(back.digest, DIGEST);
	ck_assert_uint_eq(back.n_rows, 2);
	ck_assert_str_eq(back.rows[1].hotkey, "5\"odd\\");
	engy_valstate_free(&back);
	free(text);
	/* the file: written whole, read back, a missing one is empty */
	ck_assert_int_eq(engy_valstate_save(path, &st), 0);
	ck_assert_int_eq(
		engy_valstate_load(path, &back, dropped, sizeof(dropped)), 0);
	ck_assert_uint_eq(back.n_rows, 2);
	ck_assert_str_eq(dropped, "");
	engy_valstate_free(&back);
	unlink(path);
	ck_assert_int_eq(
		engy_valstate_load(path, &back, dropped, sizeof(dropped)), 0);
	ck_assert(!back.last.has_applied && !back.has_cache);
	ck_assert_str_eq(dropped, "");
	engy_valstate_free(&st);
}
END_TEST

START_TEST(test_state_corruption)
{
	struct engy_valstate st;
	char dropped[128];

	/* each field alone: the good ones survive */
	parse("{\"last_applied\":-1,\"last_submit_block\":7,\"last_submit_ts\":"
	      "\"x\","
	      "\"cached_digest\":\"ABC\",\"cached_weights\":[[\"" HK
	      "\",70000]]}",
	      &st, dropped);
	ck_assert_str_eq(
		dropped,
		"last_applied,last_submit_ts,cached_digest,cached_weights");
	ck_assert(!st.last.has_applied && !st.last.has_ts && !st.has_digest &&
		  !st.has_cache);
	ck_assert(st.last.has_block && st.last.block == 7);
	engy_valstate_free(&st);
	parse("{\"last_applied\":1.5,\"last_submit_block\":true,"
	      "\"cached_weights\":[[\"" HK "\",1],[\"" HK "\"]]}",
	      &st, dropped);
	ck_assert_str_eq(dropped,
			 "last_applied,last_submit_block,cached_weights");
	ck_assert(!st.has_cache);
	engy_valstate_free(&st);
	parse("{\"last_applied\":9007199254740993,\"cached_weights\":[],"
	      "\"last_submit_block\":4294967296}",
	      &st, dropped);
	ck_assert_str_eq(dropped,
			 "last_applied,last_submit_block,cached_weights");
	engy_valstate_free(&st);
	parse("{\"last_applied\":12,\"cached_digest\":\"" DIGEST "\"}", &st,
	      dropped);
	ck_assert_str_eq(dropped, "");
	ck_assert(st.last.has_applied && st.last.applied == 12 &&
		  st.has_digest);
	engy_valstate_free(&st);
	/* not an object at all */
	parse("{\"last_applied\":12", &st, dropped);
	ck_assert_str_eq(dropped, "file");
	ck_assert(!st.last.has_applied);
	parse("[1,2]", &st, dropped);
	ck_assert_str_eq(dropped, "file");
	parse("", &st, dropped);
	ck_assert_str_eq(dropped, "");
}
END_TEST

/* The public light validator writes last_submit_ts as time.time(). */
/*
 * What the heartbeat may claim: the digest only when the state file says
 * it is the digest of the epoch last submitted.
 */
START_TEST(test_state_claim)
{
	struct engy_valstate st;
	char dropped[128], *text;

	/* engy's own file: the cached vector's epoch names the digest's */
	parse("{\"last_applied\":12,\"cached_epoch\":12,\"cached_digest\":\"" DIGEST
	      "\"}",
	      &st, dropped);
	ck_assert_str_eq(dropped, "");
	ck_assert(st.has_cached_epoch && st.cached_epoch == 12);
	ck_assert(engy_valstate_claim(&st));
	text = engy_valstate_format(&st);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "\"cached_epoch\":12,") != NULL, "%s", text);
	free(text);
	/* standby: epoch 13 was submitted with epoch 12's vector (or a burn) */
	st.last.applied = 13;
	ck_assert(!engy_valstate_claim(&st));
	engy_valstate_free(&st);
	/* a file of the public light validator: no cached_epoch, the pair
	 * is its claim */
	parse("{\"last_applied\":12,\"cached_digest\":\"" DIGEST "\"}", &st,
	      dropped);
	ck_assert(engy_valstate_claim(&st));
	/* no digest or no epoch: nothing to claim */
	parse("{\"last_applied\":12}", &st, dropped);
	ck_assert(!engy_valstate_claim(&st));
	parse("{\"cached_digest\":\"" DIGEST "\"}", &st, dropped);
	ck_assert(!engy_valstate_claim(&st));
	parse("{\"last_applied\":12,\"cached_epoch\":-1,\"cached_digest\":\"" DIGEST
	      "\"}",
	      &st, dropped);
	ck_assert_str_eq(dropped, "cached_epoch");
	ck_assert(!st.has_cached_epoch);
}
END_TEST

START_TEST(test_state_fractional_ts)
{
	struct engy_valstate st;
	char dropped[128];

	parse("{\"last_applied\":12,\"last_submit_ts\":1790000000.734}", &st,
	      dropped);
	ck_assert_str_eq(dropped, "");
	ck_assert(st.last.has_ts && st.last.ts == 1790000000);
	engy_valstate_free(&st);
	parse("{\"last_submit_ts\":0.5}", &st, dropped);
	ck_assert_str_eq(dropped, "");
	ck_assert(st.last.has_ts && st.last.ts == 0);
	engy_valstate_free(&st);
	/* still dropped: negative, past 2^53, not a number */
	parse("{\"last_submit_ts\":-0.5}", &st, dropped);
	ck_assert_str_eq(dropped, "last_submit_ts");
	ck_assert(!st.last.has_ts);
	parse("{\"last_submit_ts\":9007199254740993.0}", &st, dropped);
	ck_assert_str_eq(dropped, "last_submit_ts");
	parse("{\"last_submit_ts\":\"1790000000.5\"}", &st, dropped);
	ck_assert_str_eq(dropped, "last_submit_ts");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("valsched");
	TCase *tc = tcase_create("pure");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_decide);
	tcase_add_test(tc, test_pregate);
	tcase_add_test(tc, test_resolve);
	tcase_add_test(tc, test_rows_and_burn);
	tcase_add_test(tc, test_state_round_trip);
	tcase_add_test(tc, test_state_corruption);
	tcase_add_test(tc, test_state_fractional_ts);
	tcase_add_test(tc, test_state_claim);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
