/* SPDX-License-Identifier: MIT */
/*
 * The SQL the two stores share (store-sqlite, store-postgres): one text
 * per statement, written once, with the dialect as a parameter.  Each
 * STORESQL_X(D) expands at compile time to a string literal for dialect
 * D, SQLITE or POSTGRES; the plugins keep them in their static sql_x[]
 * arrays, whose addresses key their statement caches.
 *
 * What a dialect decides:
 *  - STORESQL_P(D, n): parameter n, "?n" or "$n";
 *  - STORESQL_TEXT(D, n), STORESQL_BYTES(D, n): a parameter whose type
 *    PostgreSQL cannot infer (compared with '' or inside COALESCE):
 *    "$n::text", "$n::bytea"; plain "?n" on SQLite;
 *  - STORESQL_COLLATE(D): ORDER BY on text in byte order (SQLite's BINARY
 *    default; PostgreSQL's database collation would differ): "" or
 *    " COLLATE \"C\"".
 * STORESQL_Ln(D) is the list "p1, p2, ..., pn".
 *
 * Statements that differ beyond these (transactions, RETURNING, the
 * reservation sweep, schema) stay in each plugin.
 */
#ifndef ENGY_STORESQL_H
#define ENGY_STORESQL_H

#define STORESQL_P(D, n)	   STORESQL_P_##D(n)
#define STORESQL_P_SQLITE(n)	   "?" #n
#define STORESQL_P_POSTGRES(n)	   "$" #n
#define STORESQL_TEXT(D, n)	   STORESQL_TEXT_##D(n)
#define STORESQL_TEXT_SQLITE(n)	   "?" #n
#define STORESQL_TEXT_POSTGRES(n)  "$" #n "::text"
#define STORESQL_BYTES(D, n)	   STORESQL_BYTES_##D(n)
#define STORESQL_BYTES_SQLITE(n)   "?" #n
#define STORESQL_BYTES_POSTGRES(n) "$" #n "::bytea"
#define STORESQL_COLLATE(D)	   STORESQL_COLLATE_##D
#define STORESQL_COLLATE_SQLITE	   ""
#define STORESQL_COLLATE_POSTGRES  " COLLATE \"C\""

#define STORESQL_L1(D)	STORESQL_P(D, 1)
#define STORESQL_L2(D)	STORESQL_L1(D) ", " STORESQL_P(D, 2)
#define STORESQL_L3(D)	STORESQL_L2(D) ", " STORESQL_P(D, 3)
#define STORESQL_L4(D)	STORESQL_L3(D) ", " STORESQL_P(D, 4)
#define STORESQL_L5(D)	STORESQL_L4(D) ", " STORESQL_P(D, 5)
#define STORESQL_L6(D)	STORESQL_L5(D) ", " STORESQL_P(D, 6)
#define STORESQL_L7(D)	STORESQL_L6(D) ", " STORESQL_P(D, 7)
#define STORESQL_L8(D)	STORESQL_L7(D) ", " STORESQL_P(D, 8)
#define STORESQL_L9(D)	STORESQL_L8(D) ", " STORESQL_P(D, 9)
#define STORESQL_L10(D) STORESQL_L9(D) ", " STORESQL_P(D, 10)
#define STORESQL_L11(D) STORESQL_L10(D) ", " STORESQL_P(D, 11)
#define STORESQL_L12(D) STORESQL_L11(D) ", " STORESQL_P(D, 12)
#define STORESQL_L13(D) STORESQL_L12(D) ", " STORESQL_P(D, 13)
#define STORESQL_L14(D) STORESQL_L13(D) ", " STORESQL_P(D, 14)
#define STORESQL_L15(D) STORESQL_L14(D) ", " STORESQL_P(D, 15)
#define STORESQL_L16(D) STORESQL_L15(D) ", " STORESQL_P(D, 16)
#define STORESQL_L17(D) STORESQL_L16(D) ", " STORESQL_P(D, 17)
#define STORESQL_L18(D) STORESQL_L17(D) ", " STORESQL_P(D, 18)
#define STORESQL_L19(D) STORESQL_L18(D) ", " STORESQL_P(D, 19)
#define STORESQL_L20(D) STORESQL_L19(D) ", " STORESQL_P(D, 20)
#define STORESQL_L21(D) STORESQL_L20(D) ", " STORESQL_P(D, 21)
#define STORESQL_L22(D) STORESQL_L21(D) ", " STORESQL_P(D, 22)
#define STORESQL_L23(D) STORESQL_L22(D) ", " STORESQL_P(D, 23)
#define STORESQL_L24(D) STORESQL_L23(D) ", " STORESQL_P(D, 24)

/* --- catalog: models, checkpoint roots, miners --- */

#define STORESQL_MODEL_COLS                                                    \
	"name, status, max_input_tokens, max_output_tokens, max_request_s,"    \
	" toploc_topk, toploc_v, toploc_p_ppm, qual_ttft_p99_ms,"              \
	" qual_tpot_p99_ms, score_rate, price_input, price_cached_input,"      \
	" price_output, updated_ms, toploc_mant_mean_centi,"                   \
	" toploc_mant_median_centi, gemm_layers, gemm_tokens,"                 \
	" gemm_projections, gemm_spots, gemm_z_milli, gemm_c_el_milli,"        \
	" gemm_rate_ppm"
#define STORESQL_ROOT_COLS "root, spec_root, model, quant, arch, added_ms"
#define STORESQL_MINER_COLS                                                      \
	"id, hotkey, key_hash, key_shown, label, status, first_party, priority," \
	" created_ms, updated_ms"
#define STORESQL_MODEL_PUT(D)                                                             \
	"INSERT INTO models (" STORESQL_MODEL_COLS ") VALUES (" STORESQL_L24(             \
		D) ") ON CONFLICT (name) DO UPDATE SET status = excluded.status,"         \
		   " max_input_tokens = excluded.max_input_tokens, max_output_tokens ="   \
		   " excluded.max_output_tokens, max_request_s = excluded.max_request_s," \
		   " toploc_topk = excluded.toploc_topk, toploc_v = excluded.toploc_v,"   \
		   " toploc_p_ppm = excluded.toploc_p_ppm, qual_ttft_p99_ms ="            \
		   " excluded.qual_ttft_p99_ms, qual_tpot_p99_ms ="                       \
		   " excluded.qual_tpot_p99_ms, score_rate = excluded.score_rate,"        \
		   " price_input = excluded.price_input, price_cached_input ="            \
		   " excluded.price_cached_input, price_output = excluded.price_output,"  \
		   " updated_ms = excluded.updated_ms, toploc_mant_mean_centi ="          \
		   " excluded.toploc_mant_mean_centi, toploc_mant_median_centi ="         \
		   " excluded.toploc_mant_median_centi, gemm_layers ="                    \
		   " excluded.gemm_layers, gemm_tokens = excluded.gemm_tokens,"           \
		   " gemm_projections = excluded.gemm_projections, gemm_spots ="          \
		   " excluded.gemm_spots, gemm_z_milli = excluded.gemm_z_milli,"          \
		   " gemm_c_el_milli = excluded.gemm_c_el_milli, gemm_rate_ppm ="         \
		   " excluded.gemm_rate_ppm"
#define STORESQL_MODEL_GET(D)                                                  \
	"SELECT " STORESQL_MODEL_COLS                                          \
	" FROM models WHERE name = " STORESQL_P(D, 1)
#define STORESQL_MODEL_LIST(D)                                                 \
	"SELECT " STORESQL_MODEL_COLS                                          \
	" FROM models ORDER BY name" STORESQL_COLLATE(D)
#define STORESQL_ROOT_PUT(D)                                                                  \
	"INSERT INTO model_roots (" STORESQL_ROOT_COLS                                        \
	") VALUES (" STORESQL_L6(                                                             \
		D) ") ON CONFLICT (root) DO UPDATE SET spec_root = excluded.spec_root, quant" \
		   " = excluded.quant, arch = excluded.arch WHERE model_roots.model ="        \
		   " excluded.model"
#define STORESQL_ROOT_GET(D)                                                   \
	"SELECT " STORESQL_ROOT_COLS                                           \
	" FROM model_roots WHERE root = " STORESQL_P(D, 1)
#define STORESQL_ROOT_LIST(D)                                                  \
	"SELECT " STORESQL_ROOT_COLS                                           \
	" FROM model_roots WHERE model = " STORESQL_P(                         \
		D, 1) " ORDER BY added_ms, root"
#define STORESQL_ROOT_LIST_ALL(D)                                              \
	"SELECT " STORESQL_ROOT_COLS                                           \
	" FROM model_roots ORDER BY model" STORESQL_COLLATE(                   \
		D) ", added_ms, root"
#define STORESQL_ROOT_DEL(D)                                                   \
	"DELETE FROM model_roots WHERE root = " STORESQL_P(D, 1)
#define STORESQL_MINER_BY_HOTKEY(D)                                            \
	"SELECT " STORESQL_MINER_COLS                                          \
	" FROM miners WHERE hotkey = " STORESQL_P(D, 1)
#define STORESQL_MINER_BY_HASH(D)                                              \
	"SELECT " STORESQL_MINER_COLS                                          \
	" FROM miners WHERE key_hash = " STORESQL_P(D, 1)
#define STORESQL_MINER_LIST(D)                                                 \
	"SELECT " STORESQL_MINER_COLS " FROM miners ORDER BY id"
#define STORESQL_MINER_INSERT(D)                                                                                                                 \
	"INSERT INTO miners (hotkey, key_hash, key_shown, label, status,"                                                                        \
	" first_party, priority, created_ms, updated_ms) VALUES (" STORESQL_P(D, 1) ", " STORESQL_P(D, 2) ", " STORESQL_P(D, 3) ", " STORESQL_P( \
		D,                                                                                                                               \
		4) ", " STORESQL_P(D,                                                                                                            \
				   5) ", " STORESQL_P(D,                                                                                         \
						      6) ", " STORESQL_P(D,                                                                      \
									 7) ", " STORESQL_P(D,                                                   \
											    8) ", " STORESQL_P(D,                                \
													       8) ")"
#define STORESQL_MINER_UPDATE(D)                                                                                                                                                                 \
	"UPDATE miners SET label = " STORESQL_P(D, 4) ", status = " STORESQL_P(D, 5) ", first_party = " STORESQL_P(D, 6) ", priority = " STORESQL_P(                                             \
		D,                                                                                                                                                                               \
		7) ", updated_ms = " STORESQL_P(D,                                                                                                                                               \
						8) ", key_hash = COALESCE(" STORESQL_BYTES(D,                                                                                                    \
											   2) ", key_hash), key_shown = COALESCE(" STORESQL_TEXT(D,                                              \
																		 3) ", key_shown) WHERE hotkey = " STORESQL_P(D, \
																							      1)

/* --- money: accounts, top-ups, API keys (PostgreSQL adds RETURNING to
 * the inserts and the top-up) --- */

#define STORESQL_ACCOUNT_COLS                                                   \
	"id, name, balance_micro, reserved_micro, credited_micro, spent_micro," \
	" created_ms"
#define STORESQL_KEY_COLS                                                      \
	"id, account_id, hash, shown, label, status, created_ms, revoked_ms"
#define STORESQL_ACCOUNT_INSERT(D)                                             \
	"INSERT INTO accounts (name, created_ms) VALUES (" STORESQL_L2(D) ")"
#define STORESQL_ACCOUNT_BY_ID(D)                                              \
	"SELECT " STORESQL_ACCOUNT_COLS                                        \
	" FROM accounts WHERE id = " STORESQL_P(D, 1)
#define STORESQL_ACCOUNT_BY_NAME(D)                                            \
	"SELECT " STORESQL_ACCOUNT_COLS                                        \
	" FROM accounts WHERE name = " STORESQL_P(D, 1)
#define STORESQL_ACCOUNT_LIST(D)                                               \
	"SELECT " STORESQL_ACCOUNT_COLS " FROM accounts ORDER BY id"
#define STORESQL_TOPUP_UPDATE(D)                                                                     \
	"UPDATE accounts SET balance_micro = balance_micro + " STORESQL_P(                           \
		D,                                                                                   \
		2) ", credited_micro = credited_micro + " STORESQL_P(D,                              \
								     2) " WHERE id = " STORESQL_P(D, \
												  1)
#define STORESQL_TOPUP_INSERT(D)                                                       \
	"INSERT INTO topups (account_id, amount_micro, time_ms) VALUES (" STORESQL_L3( \
		D) ")"
#define STORESQL_KEY_INSERT(D)                                                 \
	"INSERT INTO api_keys (account_id, hash, shown, label, status,"        \
	" created_ms) VALUES (" STORESQL_L4(D) ", 1, " STORESQL_P(D, 5) ")"
#define STORESQL_KEY_BY_HASH(D)                                                \
	"SELECT " STORESQL_KEY_COLS                                            \
	" FROM api_keys WHERE hash = " STORESQL_P(D, 1)
#define STORESQL_KEY_REVOKE(D)                                                 \
	"UPDATE api_keys SET status = 2, revoked_ms = " STORESQL_P(            \
		D, 2) " WHERE id = " STORESQL_P(D, 1) " AND status = 1"
#define STORESQL_KEY_LIST(D)                                                   \
	"SELECT " STORESQL_KEY_COLS                                            \
	" FROM api_keys WHERE account_id = " STORESQL_P(D, 1) " ORDER BY id"

/* --- reservations (the expiry sweep differs: one CTE on PostgreSQL) --- */

#define STORESQL_HOLD(D)                                                                                     \
	"UPDATE accounts SET reserved_micro = reserved_micro + " STORESQL_P(D, 2) " WHERE id = " STORESQL_P( \
		D, 1) " AND balance_micro - reserved_micro >= " STORESQL_P(D,                                \
									   2)
#define STORESQL_ACCOUNT_EXISTS(D)                                             \
	"SELECT 1 FROM accounts WHERE id = " STORESQL_P(D, 1)
#define STORESQL_RES_INSERT(D)                                                    \
	"INSERT INTO reservations (account_id, key_id, amount_micro, created_ms," \
	" expires_ms) VALUES (" STORESQL_L5(D) ")"
#define STORESQL_CHARGE(D)                                                                                                   \
	"UPDATE accounts SET balance_micro = balance_micro - " STORESQL_P(D, 2) ", spent_micro = spent_micro + " STORESQL_P( \
		D,                                                                                                           \
		2) ", reserved_micro = reserved_micro - " STORESQL_P(D,                                                      \
								     3) " WHERE id = " STORESQL_P(D,                         \
												  1)

/* --- the request log: 1 since, 2 until, 3 after, 4 limit, 5 account --- */

#define STORESQL_LOG_COLS                                                         \
	"id, time_ms, request_id, key_id, account_id, model, miner, worker_name," \
	" status, prompt_tokens, completion_tokens, cached_tokens, ttft_ms,"      \
	" tpot_ms, cost_micro, is_probe"
/* The insert's head; a row's 15 values follow in this order. */
#define STORESQL_LOG_INSERT_HEAD                                                   \
	"INSERT INTO request_log (time_ms, request_id, key_id, account_id, model," \
	" miner, worker_name, status, prompt_tokens, completion_tokens,"           \
	" cached_tokens, ttft_ms, tpot_ms, cost_micro, is_probe) VALUES "
#define STORESQL_LOG_INSERT(D) STORESQL_LOG_INSERT_HEAD "(" STORESQL_L15(D) ")"
#define STORESQL_LOG_ASC(D)                                                                  \
	"SELECT " STORESQL_LOG_COLS                                                          \
	" FROM request_log WHERE time_ms >= " STORESQL_P(D, 1) " AND time_ms < " STORESQL_P( \
		D,                                                                           \
		2) " AND id > " STORESQL_P(D,                                                \
					   3) " ORDER BY id LIMIT " STORESQL_P(D,            \
									       4)
#define STORESQL_LOG_DESC(D)                                                                 \
	"SELECT " STORESQL_LOG_COLS                                                          \
	" FROM request_log WHERE time_ms >= " STORESQL_P(D, 1) " AND time_ms < " STORESQL_P( \
		D,                                                                           \
		2) " AND id > " STORESQL_P(D,                                                \
					   3) " ORDER BY id DESC LIMIT " STORESQL_P(D,       \
										    4)
#define STORESQL_LOG_ACCT_ASC(D)                                                                                  \
	"SELECT " STORESQL_LOG_COLS                                                                               \
	" FROM request_log WHERE account_id = " STORESQL_P(D, 5) " AND time_ms >= " STORESQL_P(                   \
		D,                                                                                                \
		1) " AND time_ms < " STORESQL_P(D,                                                                \
						2) " AND id > " STORESQL_P(D,                                     \
									   3) " ORDER BY id LIMIT " STORESQL_P(D, \
													       4)
#define STORESQL_LOG_ACCT_DESC(D)                                                                                      \
	"SELECT " STORESQL_LOG_COLS                                                                                    \
	" FROM request_log WHERE account_id = " STORESQL_P(D, 5) " AND time_ms >= " STORESQL_P(                        \
		D,                                                                                                     \
		1) " AND time_ms < " STORESQL_P(D,                                                                     \
						2) " AND id > " STORESQL_P(D,                                          \
									   3) " ORDER BY id DESC LIMIT " STORESQL_P(D, \
														    4)
#define STORESQL_LOG_PRUNE(D)                                                  \
	"DELETE FROM request_log WHERE time_ms < " STORESQL_P(D, 1)

/* --- verdicts (1 since, 2 until, 3 after, 4 miner or "", 5 limit) and
 * epochs --- */

#define STORESQL_V_COLS                                                          \
	"id, time_ms, request_time_ms, verdict, is_probe, chunks, passed, topk," \
	" exp_p99, exp_max, limit_v, limit_p_ppm, mant_mean_max_milli,"          \
	" mant_median_max_milli, scheme, reason, request_id, miner, model"
#define STORESQL_E_COLS                                                        \
	"epoch_index, start_ms, end_ms, closed_ms, burn, n_weights, digest,"   \
	" payload, aggregates"
#define STORESQL_V_INSERT(D)                                                       \
	"INSERT INTO verdicts (time_ms, request_time_ms, verdict, is_probe,"       \
	" chunks, passed, topk, exp_p99, exp_max, limit_v, limit_p_ppm,"           \
	" mant_mean_max_milli, mant_median_max_milli, scheme, reason, request_id," \
	" miner, model) VALUES (" STORESQL_L18(D) ")"
#define STORESQL_V_ASC(D)                                                                                               \
	"SELECT " STORESQL_V_COLS                                                                                       \
	" FROM verdicts WHERE time_ms >= " STORESQL_P(D, 1) " AND time_ms < " STORESQL_P(D, 2) " AND id > " STORESQL_P( \
		D,                                                                                                      \
		3) " AND (" STORESQL_TEXT(D,                                                                            \
					  4) " = '' OR miner = " STORESQL_TEXT(D,                                       \
									       4) ") ORDER BY id LIMIT " STORESQL_P(D,  \
														    5)
#define STORESQL_V_DESC(D)                                                                                                  \
	"SELECT " STORESQL_V_COLS                                                                                           \
	" FROM verdicts WHERE time_ms >= " STORESQL_P(D, 1) " AND time_ms < " STORESQL_P(D, 2) " AND id > " STORESQL_P(     \
		D,                                                                                                          \
		3) " AND (" STORESQL_TEXT(D,                                                                                \
					  4) " = '' OR miner = " STORESQL_TEXT(D,                                           \
									       4) ") ORDER BY id DESC LIMIT " STORESQL_P(D, \
															 5)
#define STORESQL_E_INSERT(D)                                                   \
	"INSERT INTO epochs (epoch_index, start_ms, end_ms, closed_ms, burn,"  \
	" n_weights, digest, payload, aggregates) VALUES (" STORESQL_L9(D) ")"
#define STORESQL_E_GET(D)                                                      \
	"SELECT " STORESQL_E_COLS                                              \
	" FROM epochs WHERE epoch_index = " STORESQL_P(D, 1)
#define STORESQL_E_LATEST(D)                                                   \
	"SELECT " STORESQL_E_COLS                                              \
	" FROM epochs ORDER BY epoch_index DESC LIMIT 1"

/*
 * --- the auditor's claims (1.3): ?1 request_id, ?2 holder, ?3 until_ms,
 * ?4 now_ms for all three writes.  A fresh claim, then a lapsed one (or
 * the holder's own, whose until_ms only grows), then who holds it.
 */
#define STORESQL_CLAIM_INSERT(D)                                               \
	"INSERT INTO audit_claims (request_id, holder, until_ms, claimed_ms)"  \
	" VALUES (" STORESQL_L4(D) ") ON CONFLICT (request_id) DO NOTHING"
/* clang-format off */
#define STORESQL_CLAIM_TAKE(D)                                                 \
	"UPDATE audit_claims SET holder = " STORESQL_P(D, 2) ","               \
	" claimed_ms = " STORESQL_P(D, 4) ","                                  \
	" until_ms = CASE WHEN holder = " STORESQL_P(D, 2)                     \
	" AND until_ms > " STORESQL_P(D, 3) " THEN until_ms"                   \
	" ELSE " STORESQL_P(D, 3) " END"                                       \
	" WHERE request_id = " STORESQL_P(D, 1)                                \
	" AND (holder = " STORESQL_P(D, 2)                                     \
	" OR until_ms <= " STORESQL_P(D, 4) ")"
/* clang-format on */
#define STORESQL_CLAIM_GET(D)                                                  \
	"SELECT until_ms FROM audit_claims WHERE request_id = " STORESQL_P(D, 1)
/* ?1 before_ms: claims last taken before it go with the log's rows. */
#define STORESQL_CLAIM_PRUNE(D)                                                \
	"DELETE FROM audit_claims WHERE claimed_ms < " STORESQL_P(D, 1)
/* ?1 created_before_ms, ?2 now_ms */
#define STORESQL_HOLDS_OPEN(D)                                                 \
	"SELECT COUNT(*) FROM reservations WHERE created_ms < " STORESQL_P(    \
		D, 1) " AND expires_ms > " STORESQL_P(D, 2)

#endif /* ENGY_STORESQL_H */
