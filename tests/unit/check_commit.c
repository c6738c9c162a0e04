/* SPDX-License-Identifier: MIT */
/*
 * lib/chain/commit: the reveal round (the bittensor SDK 1.x formula, worked
 * by hand in the comments: expected values from the formula as
 * specs/commit-reveal.md states it), the stateful epoch schedule (two of
 * bittensor-drand 2.0's pinned vectors, which cite subtensor's tests), the
 * refusals, the payload's refusal of unknown versions, and the choice of
 * schedule from a runtime's storage names (the names from subtensor's
 * pallet source, the expected choice from specs/commit-reveal.md).  The
 * payload bytes and the commit call are checked against @polkadot/types
 * in commit_peer.sh.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commit.h"

START_TEST(test_reveal_round)
{
	/* netuid 1, tempo 360, block 1000, 1 epoch, 12 s blocks:
	 * epoch (1000+2)/361 = 2, reveal epoch 3 starts at 3*361-2 = 1081,
	 * aim at 1084, 84 blocks = 1008 s ahead; now 1700000000 ->
	 * (1700001008-1692803367)/3 = 2399213.67 -> 2399213. */
	struct engy_cr_sched s = { .netuid = 1,
				   .tempo = 360,
				   .reveal_period = 1,
				   .block = 1000,
				   .block_time = 12,
				   .now = 1700000000 };
	uint64_t round = 0, blk = 0;
	char err[256];
	ck_assert_int_eq(
		engy_cr_reveal_round(&s, &round, &blk, err, sizeof err), 0);
	ck_assert_uint_eq(round, 2399213);
	ck_assert_uint_eq(blk, 1081);
	/* netuid 53, tempo 99, block 5000000, 2 epochs:
	 * (5000054)/100 = 50000, epoch 50002 starts at 5000200-54 = 5000146,
	 * aim 5000149, 149 blocks = 1788 s -> (1700001788-1692803367)/3 =
	 * 2399473.67 -> 2399473. */
	s = (struct engy_cr_sched){ .netuid = 53,
				    .tempo = 99,
				    .reveal_period = 2,
				    .block = 5000000,
				    .block_time = 12,
				    .now = 1700000000 };
	ck_assert_int_eq(
		engy_cr_reveal_round(&s, &round, &blk, err, sizeof err), 0);
	ck_assert_uint_eq(round, 2399473);
	ck_assert_uint_eq(blk, 5000146);
}
END_TEST

START_TEST(test_reveal_round_refusals)
{
	uint64_t round = 7;
	char err[256];
	/* A reveal that lands in the round drand is already at: with period 0
	 * and the block at its epoch's start, 3 blocks of 0.5 s ahead. */
	struct engy_cr_sched s = { .netuid = 1,
				   .tempo = 360,
				   .reveal_period = 0,
				   .block = 1081,
				   .block_time = 0.5,
				   .now = 1700000000 };
	ck_assert_int_eq(
		engy_cr_reveal_round(&s, &round, NULL, err, sizeof err),
		-EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "is not in the future"));
	ck_assert_uint_eq(round, 7);
	s.block_time = 12;
	s.tempo = 0;
	ck_assert_int_eq(
		engy_cr_reveal_round(&s, &round, NULL, err, sizeof err),
		-EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "tempo 0"));
	s.tempo = 10;
	s.block = UINT64_MAX - 1;
	ck_assert_int_eq(
		engy_cr_reveal_round(&s, &round, NULL, err, sizeof err),
		-EINVAL);
	s.block = 10;
	s.now = 0;
	ck_assert_int_eq(
		engy_cr_reveal_round(&s, &round, NULL, err, sizeof err),
		-EINVAL);
}
END_TEST

START_TEST(test_reveal_block_epochs)
{
	/* bittensor-drand 2.0's vector "cycle_reset" (after subtensor's
	 * tempo_control test of the next epoch's start block): the last epoch
	 * at block 10, tempo 50, now block 10, one epoch -> block 60. */
	struct engy_cr_epochs e = { .last_epoch_block = 10,
				    .tempo = 50,
				    .block = 10 };
	uint64_t b = 0;
	char err[256];
	ck_assert_int_eq(
		engy_cr_reveal_block_epochs(&e, 1, &b, err, sizeof err), 0);
	ck_assert_uint_eq(b, 60);
	/* A pending owner-triggered epoch at 95 (tempo 20, last 80, now 91):
	 * the commit (block 92) is in epoch 0, epoch 1 starts at 95 when the
	 * pending epoch fires, so the reveal epoch's first block is 95. */
	e = (struct engy_cr_epochs){ .last_epoch_block = 80,
				     .pending_epoch_at = 95,
				     .tempo = 20,
				     .block = 91 };
	ck_assert_int_eq(
		engy_cr_reveal_block_epochs(&e, 1, &b, err, sizeof err), 0);
	ck_assert_uint_eq(b, 95);
	e.tempo = 0;
	ck_assert_int_eq(
		engy_cr_reveal_block_epochs(&e, 1, &b, err, sizeof err),
		-EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "tempo 0"));
}
END_TEST

/* A runtime's metadata reduced to the SubtensorModule storage names the
 * schedule choice looks at (types are not consulted for the choice). */
static void fake_md(struct engy_metadata *md, struct engy_meta_pallet *p,
		    struct engy_meta_entry *e, const char *const *names,
		    size_t n)
{
	memset(md, 0, sizeof *md);
	memset(p, 0, sizeof *p);
	for (size_t i = 0; i < n; i++) {
		memset(&e[i], 0, sizeof e[i]);
		e[i].name = names[i];
	}
	p->name = "SubtensorModule";
	p->has_storage = true;
	p->n_entries = (uint32_t)n;
	p->entries = e;
	md->n_pallets = 1;
	md->pallets = p;
}

START_TEST(test_schedule_choice)
{
	/* Item names from subtensor's pallet (LastEpochBlock, PendingEpochAt,
	 * SubnetEpochIndex: maps netuid -> u64 added with the stateful
	 * scheduler; BlocksSinceLastStep and Tempo predate it). */
	static const char *const old_rt[] = { "Tempo", "BlocksSinceLastStep",
					      "RevealPeriodEpochs" };
	static const char *const new_rt[] = {
		"Tempo",	  "BlocksSinceLastStep", "RevealPeriodEpochs",
		"LastEpochBlock", "PendingEpochAt",	 "SubnetEpochIndex"
	};
	static const char *const part_rt[] = { "Tempo", "BlocksSinceLastStep",
					       "SubnetEpochIndex" };
	static const char *const no_steps[] = { "Tempo", "LastEpochBlock",
						"PendingEpochAt",
						"SubnetEpochIndex" };
	static const char *const items[] = ENGY_CR_EPOCH_ITEMS;
	struct engy_metadata md;
	struct engy_meta_pallet p;
	struct engy_meta_entry e[8];
	char err[256];

	fake_md(&md, &p, e, old_rt, 3);
	ck_assert_int_eq(engy_cr_schedule_of(&md, err, sizeof err),
			 ENGY_CR_SCHED_TEMPO);
	ck_assert_str_eq(engy_cr_schedule_name(ENGY_CR_SCHED_TEMPO), "tempo");

	fake_md(&md, &p, e, new_rt, 6);
	ck_assert_int_eq(engy_cr_schedule_of(&md, err, sizeof err),
			 ENGY_CR_SCHED_STATEFUL);
	ck_assert_str_eq(engy_cr_schedule_name(ENGY_CR_SCHED_STATEFUL),
			 "stateful");

	/* Part of the state: refused, the missing items named. */
	err[0] = '\0';
	fake_md(&md, &p, e, part_rt, 3);
	ck_assert_int_eq(engy_cr_schedule_of(&md, err, sizeof err), -EPROTO);
	ck_assert_ptr_nonnull(strstr(err, "LastEpochBlock, PendingEpochAt"));
	ck_assert_ptr_null(strstr(err, "SubnetEpochIndex"));
	err[0] = '\0';
	fake_md(&md, &p, e, no_steps, 4);
	ck_assert_int_eq(engy_cr_schedule_of(&md, err, sizeof err), -EPROTO);
	ck_assert_ptr_nonnull(strstr(err, "lacks BlocksSinceLastStep"));

	/* A runtime without the pallet speaks the older schedule. */
	md.n_pallets = 0;
	ck_assert_int_eq(engy_cr_schedule_of(&md, err, sizeof err),
			 ENGY_CR_SCHED_TEMPO);

	/* The items are read into struct engy_cr_epochs in this order. */
	ck_assert_uint_eq(sizeof items / sizeof items[0], 4);
	ck_assert_str_eq(items[0], "LastEpochBlock");
	ck_assert_str_eq(items[1], "PendingEpochAt");
	ck_assert_str_eq(items[2], "SubnetEpochIndex");
	ck_assert_str_eq(items[3], "BlocksSinceLastStep");
}
END_TEST

START_TEST(test_payload_versions)
{
	uint8_t hk[32];
	uint16_t u[2] = { 1, 2 }, w[2] = { 3, 4 };
	struct engy_scale_buf b;
	char err[256];
	memset(hk, 0xab, sizeof hk);
	engy_scale_buf_init(&b);
	ck_assert_int_eq(
		engy_cr_payload(3, hk, u, w, 2, 9, &b, err, sizeof err), 0);
	ck_assert_uint_eq(b.len, 1 + 4 + 1 + 4 + 8);
	engy_scale_buf_free(&b);
	engy_scale_buf_init(&b);
	ck_assert_int_eq(
		engy_cr_payload(4, hk, u, w, 2, 9, &b, err, sizeof err), 0);
	ck_assert_uint_eq(b.len, 1 + 32 + 1 + 4 + 1 + 4 + 8);
	ck_assert_mem_eq(b.p + 1, hk, 32);
	engy_scale_buf_free(&b);
	engy_scale_buf_init(&b);
	ck_assert_int_eq(
		engy_cr_payload(2, hk, u, w, 2, 9, &b, err, sizeof err),
		-EPROTONOSUPPORT);
	ck_assert_ptr_nonnull(strstr(err, "version 2"));
	ck_assert_uint_eq(b.len, 0);
	engy_scale_buf_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("commit");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_reveal_round);
	tcase_add_test(tc, test_reveal_round_refusals);
	tcase_add_test(tc, test_reveal_block_epochs);
	tcase_add_test(tc, test_schedule_choice);
	tcase_add_test(tc, test_payload_versions);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
