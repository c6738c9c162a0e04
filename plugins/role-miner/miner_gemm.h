/* SPDX-License-Identifier: MIT */
/* The GEMM audit on the miner's side (miner_gemm.c). */
#ifndef ENGY_ROLE_MINER_GEMM_H
#define ENGY_ROLE_MINER_GEMM_H

#include <stdbool.h>

struct miner;
struct mleg;
struct engy_gw_frame;
struct engy_ws_conn;

/* The backend offers a trace and the gemm_trace option allows it. */
bool miner_gemm_on(const struct miner *m);
/* Loop: remember @request_id's backend rid (the member's "rid"). */
void miner_gemm_keep(struct miner *m, const char *request_id,
		     const char *member);
/* Any thread: @member (the backend's gemm_commit() text) with
 * "trace_root" added over @toploc (the TOPLOC member's text, NULL for
 * null); NULL when @member is unusable or on ENOMEM. */
char *miner_gemm_member(const char *member, const char *toploc);
/* Loop: a `gemm_open` frame on @l. */
void miner_gemm_open(struct mleg *l, struct engy_gw_frame *f);
/* @conn closed: its openings answer nowhere. */
void miner_gemm_orphan(struct miner *m, struct engy_ws_conn *conn);
void miner_gemm_free(struct miner *m);

#endif /* ENGY_ROLE_MINER_GEMM_H */
