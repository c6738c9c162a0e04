#!/bin/sh
# SPDX-License-Identifier: MIT
# Zero data retention: traffic whose prompts (and a scripted miner's
# completions) carry a unique marker goes through the gateway at debug
# log level: both APIs, plain and streamed, tool calls, a hang-up
# mid-stream, refusals (400, 401, 402, 404, 413) and a miner fault; then
# the marker is nowhere in the gateway's state directory (the SQLite
# database and its WAL; with ENGY_TEST_STORE=store-postgres, the whole
# PostgreSQL data directory), its log, the engy miners' logs and state,
# while the request log does hold the metadata rows.
# Oracle: grep over the state directory, the databases and the logs for a
# marker the test invents; independent of engy's code.
. "$top_srcdir/tests/integration/gateway_lib.sh"

tiny_model
P="zdr-prompt-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
C="zdr-completion-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
A models put tiny --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 30 \
	--price-input 1 --price-output 2 >/dev/null || fail "models put"
A models put scripted --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 30 \
	--price-input 1 --price-output 2 >/dev/null || fail "models put"
A accounts create zdr >/dev/null && A topup zdr 1 >/dev/null || fail "account"
A accounts create poor >/dev/null || fail "account"
KEY=$(A keys create zdr 2>/dev/null) || fail "key"
POOR=$(A keys create poor 2>/dev/null) || fail "key"
MA=$(register 5CiPPseXPECbkjWCa6MnjNokrgYjMqmKndv2rSnekmSK2DjL)
MS=$(register 5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY)
# No prefix affinity: the broken peer (the newest) gets the first pick.
gw_conf "  first_token_timeout_s = 10
  affinity_min_chars = 100000
  max_body_bytes = 4096"
sed -i 's/^log_level = "info"/log_level = "debug"/' "$T/gw.conf"
gw_start
miner m1 "$MA" m1 8
peer scripted slow MINER_KEY="$MS" MODEL=scripted WORKER_NAME=scripted MARKER="$C" CHUNK_MS=150
peer broken errresp MINER_KEY="$MS" MODEL=scripted WORKER_NAME=broken MAX_INFLIGHT=64

buy() {  # KEY API MODEL STREAM N ABORT MAX_TOKENS
	node "$top_srcdir/tests/integration/gateway_buyer.mjs" "$PEERS" "$BASE" "$1" "$2" "$3" "$4" \
		"${5:-1}" "${6:-0}" "${7:-8}" "$P asks about $P" >> "$T/buy.out" 2>&1 ||
		fail "buyer: $(cat "$T/buy.out")"
}
for api in openai anthropic; do
	for s in 0 1; do
		buy "$KEY" $api tiny $s
		buy "$KEY" $api scripted $s
	done
done
buy "$KEY" openai scripted 1 1 1
buy "$KEY" openai nope 0
buy "$POOR" openai tiny 0
buy "sk-engy-$P" anthropic tiny 0
peer_wait scripted "cancel corr="
# A tool call, a refused body naming the marker, an oversized one.
curl -s -o /dev/null "$BASE/v1/chat/completions" -H "Authorization: Bearer $KEY" \
	-d '{"model":"scripted","max_tokens":8,"messages":[{"role":"user","content":"'"$P"'"}],"tools":[{"type":"function","function":{"name":"f_'"$P"'","parameters":{"type":"object"}}}]}'
curl -s -o /dev/null "$BASE/v1/chat/completions" -H "Authorization: Bearer $KEY" \
	-d '{"model":"tiny","messages":[{"role":"'"$P"'","content":"'"$P"'"}]}'
head -c 6000 /dev/zero | tr '\0' 'x' | sed "s/^/$P/" > "$T/big"
curl -s -o /dev/null "$BASE/v1/messages" -H "x-api-key: $KEY" -H "anthropic-version: 2023-06-01" \
	--data-binary @"$T/big"
wait_settled
for st in 200 400 401 402 404 413 499; do
	grep -q "status=$st " "$T/gw.log" || fail "no $st in the traffic"
done
grep -q "event=attempt_retry .*status=502" "$T/gw.log" || fail "no miner error in the traffic"
ok "traffic: both APIs, plain and streamed, tools, a hang-up, 400, 401, 402, 404, 413, a miner error retried"
gw_stop
kill "$PID_m1"
wait "$PID_m1" 2>/dev/null || true

A log tail -n 1000 > "$T/log.txt"
# (a 404 for an unknown model writes no row: the buyer's name is not stored)
[ "$(grep -c "request=req_" "$T/log.txt")" -ge 11 ] || fail "too few rows: $(cat "$T/log.txt")"
ok "the request log holds $(grep -c "request=req_" "$T/log.txt") metadata rows"
for f in "$T"/gw/* "$T/gw.log" "$T/gw.stderr" "$T"/m1.log "$T"/m1.stderr "$T"/state-m1/*; do
	[ -f "$f" ] || continue
	! grep -qa -- "$P" "$f" || fail "the prompt's marker is in $f"
	! grep -qa -- "$C" "$f" || fail "the completion's marker is in $f"
done
# A request id from the log: what the search below reads holds the rows.
RID=$(sed -n 's/.*request=\(req_[^ ]*\).*/\1/p' "$T/log.txt" | head -1)
[ -n "$RID" ] || fail "no request id in the log: $(head -3 "$T/log.txt")"
if [ "$STORE" = store-postgres ]; then
	# The whole data directory (tables, indexes, the WAL) and the
	# server's log; a checkpoint first writes every page to its table.
	pg_sql "CHECKPOINT" || fail "CHECKPOINT"
	DB="the PostgreSQL data directory (tables and WAL)"
	set -- "$ENGY_TEST_PG_DATA" "$T/pg/server.log"
else
	ls "$T"/gw/engy.db* >/dev/null || fail "no database files"
	DB="the database (and WAL)"
	set -- "$T"/gw/engy.db*
fi
grep -rqa -- "$RID" "$@" || fail "request $RID is not in $DB"
! grep -rqa -- "$P" "$@" || fail "the prompt's marker is in $DB"
! grep -rqa -- "$C" "$@" || fail "the completion's marker is in $DB"
ok "no prompt or completion text in $DB, the gateway's log (debug), the miner's log and state"
echo "$N_OK passed, 0 failed"
