/* SPDX-License-Identifier: MIT */
/*
 * Pins the installed ABI's layout (x86_64/aarch64 LP64).  A change here
 * without an ENGY_ABI_* bump and a plugin.h changelog entry is a bug.
 *
 * Oracle: engy itself: the offsets and sizes are the current headers',
 * pinned; a regression lock on the ABI, not evidence that it is right.
 */
#include <check.h>
#include <stdlib.h>

#include <engy/engy.h>

#define PIN(expr, val) _Static_assert((expr) == (val), #expr " == " #val)

/* The frozen header. */
PIN(offsetof(struct engy_plugin, magic), 0);
PIN(offsetof(struct engy_plugin, abi_major), 4);
PIN(offsetof(struct engy_plugin, abi_minor), 6);
PIN(offsetof(struct engy_plugin, size), 8);
PIN(offsetof(struct engy_plugin, kind), 12);
PIN(ENGY_PLUGIN_MAGIC, 0x454e4731u);
/* ABI 1.0 descriptor. */
PIN(offsetof(struct engy_plugin, name), 16);
PIN(offsetof(struct engy_plugin, version), 24);
PIN(offsetof(struct engy_plugin, description), 32);
PIN(offsetof(struct engy_plugin, opts), 40);
PIN(offsetof(struct engy_plugin, conf_size), 48);
PIN(offsetof(struct engy_plugin, create), 56);
PIN(offsetof(struct engy_plugin, start), 64);
PIN(offsetof(struct engy_plugin, stop), 72);
PIN(offsetof(struct engy_plugin, destroy), 80);
PIN(offsetof(struct engy_plugin, ops), 88);
PIN(ENGY_PLUGIN_SIZE_1_0, 96);
/* Appended in 1.1. */
PIN(offsetof(struct engy_plugin, check), 96);
PIN(sizeof(struct engy_plugin), 104);
PIN(offsetof(struct engy_check, probe), 4);
PIN(offsetof(struct engy_check, warn_only), 8);
PIN(offsetof(struct engy_check, what), 16);
PIN(offsetof(struct engy_check, secret), 56);
PIN(sizeof(struct engy_check), 64);
PIN(offsetof(struct engy_check_sink, arg), 8);
PIN(offsetof(struct engy_check_sink, add), 16);
PIN(sizeof(struct engy_check_sink), 24);
PIN(ENGY_PROBE_MODEL_PATH, 5);
/* Option table entries. */
PIN(offsetof(struct engy_opt, type), 8);
PIN(offsetof(struct engy_opt, offset), 16);
PIN(offsetof(struct engy_opt, env), 32);
PIN(offsetof(struct engy_opt, help), 56);
PIN(sizeof(struct engy_opt), 64);
/* Host services 1.0. */
PIN(offsetof(struct engy_host, instance), 8);
PIN(offsetof(struct engy_host, log), 16);
PIN(offsetof(struct engy_host, work), 56);
PIN(offsetof(struct engy_host, peer), 96);
PIN(offsetof(struct engy_host, state_dir), 104);
PIN(offsetof(struct engy_host, priv), 112);
/* Host services 1.1 (appended). */
PIN(offsetof(struct engy_host, peer_at), 120);
PIN(offsetof(struct engy_host, shutdown), 128);
PIN(offsetof(struct engy_host, notify), 136);
PIN(offsetof(struct engy_host, opt_source), 144);
PIN(sizeof(struct engy_host), 152);
PIN(offsetof(struct engy_peer_info, kind), 4);
PIN(offsetof(struct engy_peer_info, instance), 8);
PIN(offsetof(struct engy_peer_info, inst), 40);
PIN(sizeof(struct engy_peer_info), 48);
/* The role kind (1.1). */
PIN(ENGY_KIND_ROLE, 7);
PIN(offsetof(struct engy_role_ops, needs), 8);
PIN(offsetof(struct engy_role_ops, inflight), 16);
PIN(offsetof(struct engy_role_ops, abort), 24);
PIN(sizeof(struct engy_role_ops), 32);
PIN(sizeof(struct engy_role_need), 24);
/* Kind ops 1.0. */
PIN(offsetof(struct engy_proof_ops, scheme), 8);
PIN(offsetof(struct engy_proof_ops, prove), 16);
PIN(offsetof(struct engy_proof_ops, verify), 24);
PIN(offsetof(struct engy_proof_ops, challenge), 32); /* 1.4 */
PIN(offsetof(struct engy_proof_ops, check), 40);
PIN(sizeof(struct engy_proof_ops), 48);
PIN(offsetof(struct engy_proof_limits, max_mant_median), 24);
PIN(offsetof(struct engy_proof_limits, gemm_layers), 32); /* 1.4 */
PIN(offsetof(struct engy_proof_limits, gemm_tokens), 36);
PIN(offsetof(struct engy_proof_limits, gemm_projections), 40);
PIN(offsetof(struct engy_proof_limits, gemm_spots), 44);
PIN(offsetof(struct engy_proof_limits, gemm_z), 48);
PIN(offsetof(struct engy_proof_limits, gemm_c_el), 56);
PIN(offsetof(struct engy_proof_limits, gemm_rate), 64);
PIN(sizeof(struct engy_proof_limits), 72);
PIN(sizeof(struct engy_rows), 24);
PIN(offsetof(struct engy_transport_ops, proto), 8);
PIN(offsetof(struct engy_transport_ops, http_route), 16);
PIN(offsetof(struct engy_transport_ops, http_stream_end), 48);
PIN(sizeof(struct engy_http_request), 64);
PIN(sizeof(struct engy_http_handler), 24);
PIN(offsetof(struct engy_transport_ops, ws_dial), 56);
PIN(offsetof(struct engy_transport_ops, ws_leg_close), 64);
PIN(offsetof(struct engy_transport_ops, ws_listen), 72);
PIN(offsetof(struct engy_transport_ops, ws_send), 80);
PIN(offsetof(struct engy_transport_ops, ws_close), 88);
PIN(offsetof(struct engy_transport_ops, ws_set_user), 96);
PIN(offsetof(struct engy_transport_ops, ws_user), 104);
PIN(sizeof(struct engy_transport_ops), 128);
PIN(offsetof(struct engy_transport_ops, client_tls), 112);
PIN(offsetof(struct engy_transport_ops, ws_set_max_message), 120);
PIN(offsetof(struct engy_ws_open, header), 24);
PIN(offsetof(struct engy_ws_open, opens), 40);
PIN(sizeof(struct engy_ws_open), 56);
PIN(offsetof(struct engy_ws_handler, on_open), 8);
PIN(offsetof(struct engy_ws_handler, on_dial_error), 32);
PIN(offsetof(struct engy_ws_handler, on_get), 40);
PIN(sizeof(struct engy_ws_handler), 48);
PIN(offsetof(struct engy_backend_ops, info), 8);
PIN(offsetof(struct engy_backend_ops, generate), 16);
PIN(offsetof(struct engy_backend_ops, cancel), 24);
PIN(offsetof(struct engy_backend_ops, prefill), 32);
PIN(offsetof(struct engy_backend_ops, gemm_commit), 40); /* 1.4 */
PIN(offsetof(struct engy_backend_ops, gemm_open), 48);	 /* 1.4 */
PIN(sizeof(struct engy_backend_ops), 56);
PIN(offsetof(struct engy_gen_params, ignore_eos), 120);
PIN(offsetof(struct engy_gen_params, top_logprobs), 124);
PIN(offsetof(struct engy_gen_params, on_top_logprobs), 128);
PIN(offsetof(struct engy_gen_params, gemm_trace), 136);
PIN(sizeof(struct engy_gen_params), 144);
PIN(ENGY_GEN_PARAMS_SIZE_1_4, 137);
PIN(sizeof(struct engy_gen_result), 40);
PIN(offsetof(struct engy_model_info, serve_urls), 672);
PIN(offsetof(struct engy_model_info, constraints), 1696);
PIN(offsetof(struct engy_model_info, caps), 1700);
PIN(sizeof(struct engy_model_info), 1704);
PIN(sizeof(struct engy_proof_result), 80);
PIN(offsetof(struct engy_chain_ops, block), 8);
PIN(offsetof(struct engy_chain_ops, metagraph), 16);
PIN(offsetof(struct engy_chain_ops, set_weights), 24);
PIN(offsetof(struct engy_chain_ops, commit_weights), 32); /* 1.3 */
PIN(sizeof(struct engy_chain_ops), 40);
PIN(sizeof(struct engy_chain_block), 56);
PIN(offsetof(struct engy_chain_metagraph, n), 64);
PIN(offsetof(struct engy_chain_metagraph, commit_reveal), 112);
PIN(offsetof(struct engy_chain_metagraph, cr_version), 114); /* 1.3 */
PIN(offsetof(struct engy_chain_metagraph, reveal_period), 120);
PIN(offsetof(struct engy_chain_metagraph, tempo), 128);
PIN(offsetof(struct engy_chain_metagraph, can_commit), 130);
PIN(offsetof(struct engy_chain_metagraph, cr_why), 136);
PIN(sizeof(struct engy_chain_metagraph), 144);
PIN(offsetof(struct engy_chain_signer, sign), 40);
PIN(sizeof(struct engy_chain_signer), 56);
PIN(offsetof(struct engy_chain_weights, version_key), 32);
PIN(sizeof(struct engy_chain_weights), 40);
PIN(offsetof(struct engy_chain_submit, block), 24);
PIN(offsetof(struct engy_chain_submit, commit), 96); /* 1.3 */
PIN(offsetof(struct engy_chain_submit, cr_version), 98);
PIN(offsetof(struct engy_chain_submit, reveal_round), 104);
PIN(offsetof(struct engy_chain_submit, reveal_block), 112);
PIN(sizeof(struct engy_chain_submit), 120);
PIN(offsetof(struct engy_scorer_ops, rules), 8);
PIN(offsetof(struct engy_scorer_ops, settle), 16);
PIN(offsetof(struct engy_scorer_ops, aggregates), 24);
PIN(sizeof(struct engy_scorer_ops), 32);
PIN(sizeof(struct engy_score_bucket), 16);
PIN(sizeof(struct engy_epoch_model), 32);
PIN(offsetof(struct engy_epoch_row, counted), 24);
PIN(offsetof(struct engy_epoch_row, ttft), 72);
PIN(offsetof(struct engy_epoch_row, v_pass), 104);
PIN(sizeof(struct engy_epoch_row), 128);
PIN(sizeof(struct engy_epoch_params), 48);
PIN(offsetof(struct engy_epoch_input, epoch_index), 8);
PIN(offsetof(struct engy_epoch_input, rows), 48);
PIN(sizeof(struct engy_epoch_input), 64);
PIN(sizeof(struct engy_epoch_row_result), 32);
PIN(sizeof(struct engy_epoch_weight), 68);
PIN(offsetof(struct engy_epoch_result, rows), 32);
PIN(offsetof(struct engy_epoch_result, error), 57);
PIN(sizeof(struct engy_epoch_result), 256);
PIN(offsetof(struct engy_store_ops, key_hash), 8);
PIN(offsetof(struct engy_store_ops, reserve), 88);
PIN(offsetof(struct engy_store_ops, settle), 96);
PIN(offsetof(struct engy_store_ops, log_append), 192);
PIN(offsetof(struct engy_store_ops, log_prune), 208);
PIN(offsetof(struct engy_store_ops, verdict_put), 216);
PIN(offsetof(struct engy_store_ops, epoch_get), 240);
PIN(offsetof(struct engy_store_ops, audit_claim), 248);
PIN(offsetof(struct engy_store_ops, holds_open), 256);
PIN(offsetof(struct engy_store_ops, settle_batch), 264);
PIN(sizeof(struct engy_store_ops), 272);
PIN(sizeof(struct engy_settle), 40);
PIN(offsetof(struct engy_settle, row), 16);
PIN(offsetof(struct engy_settle, keep), 24);
PIN(offsetof(struct engy_settle, rc), 28);
PIN(offsetof(struct engy_settle, charged), 32);
PIN(sizeof(struct engy_verdict), 424);
PIN(sizeof(struct engy_verdict_query), 104);
PIN(sizeof(struct engy_epoch_rec), 112);
PIN(sizeof(struct engy_price_card), 24);
PIN(offsetof(struct engy_account, name), 48);
PIN(sizeof(struct engy_account), 112);
PIN(offsetof(struct engy_api_key, shown), 36);
PIN(sizeof(struct engy_api_key), 120);
PIN(offsetof(struct engy_model, toploc_mant_mean_centi), 164);
PIN(offsetof(struct engy_model, toploc_mant_median_centi), 166);
PIN(offsetof(struct engy_model, score_rate), 168);
PIN(offsetof(struct engy_model, price), 176);
PIN(offsetof(struct engy_model, updated_ms), 200);
PIN(offsetof(struct engy_model, gemm_layers), 208);
PIN(offsetof(struct engy_model, gemm_z_milli), 224);
PIN(offsetof(struct engy_model, gemm_rate_ppm), 232);
PIN(sizeof(struct engy_model), 240);
PIN(offsetof(struct engy_model_root, model), 64);
PIN(sizeof(struct engy_model_root), 264);
PIN(offsetof(struct engy_miner, hotkey), 36);
PIN(sizeof(struct engy_miner), 184);
PIN(offsetof(struct engy_request_row, status), 40);
PIN(offsetof(struct engy_request_row, request_id), 68);
PIN(offsetof(struct engy_request_row, worker_name), 324);
PIN(sizeof(struct engy_request_row), 392);
PIN(offsetof(struct engy_log_query, newest_first), 40);
PIN(sizeof(struct engy_log_query), 48);
PIN(ENGY_STORE_MONEY_MAX, 1000000000000000ll);
PIN(ENGY_KEY_REVOKED, 2);
PIN(ENGY_MINER_DISABLED, 2);
PIN(ENGY_MODEL_DISABLED, 2);
/* Values that travel in config files and on the wire. */
PIN(ENGY_KIND_TRANSPORT, 1);
PIN(ENGY_KIND_STORE, 6);
PIN(ENGY_VERDICT_UNPROVEN, 3);
PIN(ENGY_GATE_CHEAT, 4);
PIN(ENGY_SCORE_WEIGHT_SUM, 65535);
PIN(ENGY_WS_TEXT, 1);
PIN(ENGY_WS_BINARY, 2);
PIN(ENGY_WS_CLOSE_NORMAL, 1000);
PIN(ENGY_WS_CLOSE_PROTOCOL, 1002);
PIN(ENGY_WS_CLOSE_ABNORMAL, 1006);
PIN(ENGY_WS_CLOSE_INVALID_DATA, 1007);
PIN(ENGY_WS_CLOSE_TOO_BIG, 1009);

START_TEST(test_versions)
{
	ck_assert_int_eq(ENGY_ABI_MAJOR, 1);
	ck_assert_int_eq(ENGY_ABI_MINOR, 5);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("abi");
	TCase *tc = tcase_create("layout");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_versions);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
