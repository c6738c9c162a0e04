#!/bin/sh
# SPDX-License-Identifier: MIT
# Leases (lease_micro): one store reservation per API key backs the
# holds of many of its requests in memory, each charge lowering it in a
# group-committed batch.  Claims: a key's requests after the first hold
# from its one lease (a single lease_open for 13 requests, 12 of them in
# parallel); every charge and row lands, with the lease's remainder the
# only money reserved; a balance that cannot cover a lease falls back to
# a hold per request (3 answered, 9 refused with 402, as without
# leases); a key opens at most 4 leases; a clean stop closes the leases, so nothing stays reserved and
# the books balance; after a crash the lease lapses at its expiry and
# release-expired gives it back; a settlement waiting in its window
# (settle_window_ms, while another request is open) is what a crash
# loses, and nothing else.  The loop's shortcuts: a key whose hash
# is memoised is still refused once revoked, a made-up key next to it
# gets 401, and engy_gw_requests_total counts each answer under its own
# api and status.
# Oracle: money computed by the script from the price card and the token
# counts the scripted miners send (bad_miner.mjs); reservations read back
# with engyctl admin.
# The log's writer thread stays on here (lib.sh turns it off): this test
# waits for the lines it reads, so it runs engyd as an operator would.
export ENGY_LOG_SYNC=0
. "$top_srcdir/tests/integration/gateway_lib.sh"

tiny_model
# Output at $100 per 1M tokens (100 micro-USD a token), input free: a
# request with max_tokens 8 holds 800 micro-USD and its 8 tokens cost 800.
A models put spend --max-input-tokens 4096 --max-output-tokens 16 --max-request-s 5 \
	--price-input 0 --price-output 100 >/dev/null || fail "models put spend"
A accounts create lease >/dev/null && A topup lease 1 >/dev/null || fail "lease account"
A accounts create race >/dev/null && A topup race 0.003 >/dev/null || fail "race account"
LEASE=$(A keys create lease 2>/dev/null) || fail "key"
RACE=$(A keys create race 2>/dev/null) || fail "key"
MK=$(register 5HGjWAeFDfFCWPsjFQdVV2Msvz2XtMktvgocEZcCj68kUMaw)
CONF="  key_max_inflight = 64
  reserve_margin_s = 0
  lease_micro = 100000
  lease_s = 3600"
gw_conf "$CONF"
gw_start
MARKER="lease$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
peer fast slow MINER_KEY="$MK" MODEL=spend WORKER_NAME=fast MAX_INFLIGHT=64 CHUNKS=8 \
	CHUNK_MS=20 MARKER="$MARKER"
buyers() {  # KEY API STREAM N MAX_TOKENS
	node "$top_srcdir/tests/integration/gateway_buyer.mjs" "$PEERS" "$BASE" "$1" "$2" spend \
		"$3" "$4" 0 "$5" > "$T/buy.out" 2>&1 || fail "buyer: $(cat "$T/buy.out")"
}
field() {  # ACCOUNT NAME: the account's NAME in micro-USD
	micro "$(A accounts show "$1" | head -1 | sed -n "s/.* $2=\([0-9.-]*\).*/\1/p")"
}
# books ACCOUNT RESERVED: balance = credited - spent, the log's costs add
# up to spent, RESERVED held.
books() {
	res=$(field "$1" reserved)
	bal=$(field "$1" balance)
	[ "$res" = "$2" ] || fail "$1: reserved $res, want $2"
	[ "$(($(field "$1" credited) - $(field "$1" spent)))" = "$bal" ] || fail "$1: balance $bal"
	logged=$(A log tail -n 100000 --account "$1" | sed -n 's/.* cost=\([0-9.]*\).*/\1/p' |
		awk -F. '{ s += $1 * 1000000 + $2 } END { printf "%d\n", s }')
	[ "$logged" = "$(field "$1" spent)" ] || fail "$1: log costs $logged != spent"
}
# lapsed ACCOUNT: after a crash, release-expired gives the account's
# lease back once it expires (lease_s + max_request_s after it opened).
lapsed() {
	i=0
	until [ "$(field "$1" reserved)" = 0 ]; do
		i=$((i + 1)); [ $i -le 600 ] || fail "the lease never lapsed: $(A accounts show "$1")"
		A reservations release-expired > /dev/null || fail "release-expired"
		sleep 0.1
	done
}

# short_lease PEER [CONF]: a gateway whose leases take holds for 0.5 s
# (plus CONF), and a fast peer named PEER serving the spend model.
short_lease() {
	gw_conf "  key_max_inflight = 64
  reserve_margin_s = 0
  lease_micro = 100000
  lease_s = 0.5
${2:-}"
	gw_start
	peer "$1" slow MINER_KEY="$MK" MODEL=spend WORKER_NAME="$1" MAX_INFLIGHT=64 CHUNKS=8 \
		CHUNK_MS=20 MARKER="$MARKER"
}

# --- one lease for a key's requests ---------------------------------------------
buyers "$LEASE" openai 0 1 8
grep -q "status=200 .*completion=8 " "$T/buy.out" || fail "first: $(cat "$T/buy.out")"
buyers "$LEASE" anthropic 1 12 8
[ "$(grep -c "status=200 " "$T/buy.out")" = 12 ] || fail "12 parallel: $(cat "$T/buy.out")"
wait_settled
[ "$(grep -c "event=lease_open" "$T/gw.log")" = 1 ] ||
	fail "leases opened: $(grep "event=lease_open" "$T/gw.log")"
grep -q "event=lease_open .* micro=100000 " "$T/gw.log" || fail "lease size: $(grep lease_open "$T/gw.log")"
[ "$(A log tail -n 1000 --account lease | grep -c "status=200 .* cost=0.000800")" = 13 ] ||
	fail "rows: $(A log tail -n 1000 --account lease)"
[ "$(field lease spent)" = 10400 ] || fail "spent $(field lease spent), want 13 x 800"
books lease $((100000 - 10400))
ok "13 requests (12 in parallel) held from one lease of 100000: 13 rows at 800, the lease lowered to $((100000 - 10400))"

# --- no room for a lease: a hold per request --------------------------------------
buyers "$RACE" openai 0 12 8
n200=$(grep -c "status=200 " "$T/buy.out" || true)
n402=$(grep -c "status=402 class=APIError" "$T/buy.out" || true)
[ "$n200" = 3 ] && [ "$n402" = 9 ] || fail "race: $n200 answered, $n402 refused: $(cat "$T/buy.out")"
wait_settled
books race 0
[ "$(field race spent)" = 2400 ] || fail "race spent $(field race spent)"
ok "3000 micro-USD cannot cover a lease: holds per request, 3 answered, 9 got 402, nothing reserved"

# --- a clean stop closes the lease -------------------------------------------------
gw_stop
grep -q "event=lease_closed .* returned_micro=$((100000 - 10400))" "$T/gw.log" ||
	fail "no lease_closed: $(grep lease_ "$T/gw.log")"
money lease
[ "$SPENT" = 10400 ] || fail "spent $SPENT"
ok "SIGTERM closes the lease: nothing reserved, the books balance"

# --- a crash: the lease lapses at its expiry ----------------------------------------
short_lease fast2
buyers "$LEASE" openai 0 1 8
grep -q "status=200 .*completion=8 " "$T/buy.out" || fail "after restart: $(cat "$T/buy.out")"
wait_settled
grep -q "event=lease_open" "$T/gw.log" || fail "no lease after the restart"
kill -9 "$GWPID"; wait "$GWPID" 2>/dev/null || true
[ "$(field lease spent)" = 11200 ] || fail "the settled request was lost: spent $(field lease spent)"
books lease $((100000 - 800))
lapsed lease
money lease
[ "$SPENT" = 11200 ] || fail "spent $SPENT"
ok "kill -9 with a lease open: the committed charge stays, the lease lapses at its expiry and goes back"

# --- a crash inside the settle window -----------------------------------------------
# settle_window_ms: a request that ends while others are open waits to
# commit with them.  With nothing else open it settles at once; a kill -9
# while it waits loses its charge and its row (never charged, its hold
# lapsing with the lease), and nothing committed before.
A models put heldm --max-input-tokens 4096 --max-output-tokens 16 --max-request-s 600 \
	--price-input 0 --price-output 100 >/dev/null || fail "models put heldm"
A accounts create holder >/dev/null && A topup holder 1 >/dev/null || fail "holder account"
HOLDER=$(A keys create holder 2>/dev/null) || fail "key"
short_lease fast5 "  settle_window_ms = 60000"
peer held5 held MINER_KEY="$MK" MODEL=heldm WORKER_NAME=held5 MAX_INFLIGHT=8 \
	RELEASE_FILE="$T/never"
before=$(field lease spent)
buyers "$LEASE" openai 0 1 8
grep -q "status=200 .*completion=8 " "$T/buy.out" || fail "alone: $(cat "$T/buy.out")"
wait_settled
[ "$(field lease spent)" = $((before + 800)) ] || fail "alone: spent $(field lease spent)"
rows=$(A log tail -n 100000 --account lease | grep -c "status=200 ")
node "$top_srcdir/tests/integration/gateway_buyer.mjs" "$PEERS" "$BASE" "$HOLDER" openai heldm \
	0 1 0 8 > "$T/held.out" 2>&1 &
HELDPID=$!
PIDS="$PIDS $HELDPID"
peer_wait held5 "held corr="
d0=$(grep -c "event=request_done" "$T/gw.log" || true)
buyers "$LEASE" openai 0 1 8
grep -q "status=200 .*completion=8 " "$T/buy.out" || fail "in the window: $(cat "$T/buy.out")"
i=0  # the log's lines are written by a thread of its own: wait for it
until [ "$(grep -c "event=request_done" "$T/gw.log")" = $((d0 + 1)) ]; do
	i=$((i + 1)); [ $i -le 200 ] || fail "no request_done: $(tail -5 "$T/gw.log")"
	sleep 0.05
done
[ "$(grep -c "event=request_settled" "$T/gw.log")" = "$d0" ] ||
	fail "the request in the window settled: $(grep -c "event=request_settled" "$T/gw.log") of $((d0 + 1))"
kill -9 "$GWPID"; wait "$GWPID" 2>/dev/null || true
kill "$HELDPID" 2>/dev/null || true
[ "$(field lease spent)" = $((before + 800)) ] ||
	fail "the crash: spent $(field lease spent), want $((before + 800))"
[ "$(A log tail -n 100000 --account lease | grep -c "status=200 ")" = "$rows" ] ||
	fail "the crash left a row of the lost settlement"
lapsed lease
money lease
[ "$SPENT" = $((before + 800)) ] || fail "spent $SPENT"
[ "$(field holder spent)" = 0 ] || fail "holder spent $(field holder spent)"
[ "$(($(field holder credited) - $(field holder spent)))" = "$(field holder balance)" ] ||
	fail "holder: $(A accounts show holder)"
ok "settle_window_ms: alone a request settles at once; one waiting in the window is lost to kill -9 (no charge, no row), the committed one stays, the lease lapses and the books balance"

# --- a key's leases are bounded ---------------------------------------------------------
# Leases of 1000 for holds of 800: every request that finds none with room
# would open one more; past 4 a key's requests hold on their own.
gw_conf "  key_max_inflight = 64
  lease_micro = 1000"
gw_start
peer fast4 slow MINER_KEY="$MK" MODEL=spend WORKER_NAME=fast4 MAX_INFLIGHT=64 CHUNKS=8 \
	CHUNK_MS=20 MARKER="$MARKER"
before=$(field lease spent)
buyers "$LEASE" openai 0 16 8
[ "$(grep -c "status=200 " "$T/buy.out")" = 16 ] || fail "16 parallel: $(cat "$T/buy.out")"
wait_settled
n=$(grep -c "event=lease_open" "$T/gw.log" || true)
[ "$n" -ge 1 ] && [ "$n" -le 4 ] || fail "$n leases for one key: $(grep lease_open "$T/gw.log")"
[ "$(($(field lease spent) - before))" = $((16 * 800)) ] || fail "spent $(($(field lease spent) - before))"
gw_stop
money lease
ok "16 parallel requests each needing a new lease: $n leases (at most 4), the rest on holds of their own, the books balance"

# --- the key-hash memo, revocation, the request counter ------------------------------
gw_conf "  key_max_inflight = 64
  key_cache_s = 0"
sed -i '1a metrics_listen = "127.0.0.1:0"' "$T/gw.conf"
gw_start
MPORT=$(sed -n 's/.*event=metrics_listen .*port=\([0-9]*\).*/\1/p' "$T/gw.log" | head -1)
[ -n "$MPORT" ] || fail "no metrics port: $(cat "$T/gw.log")"
peer fast3 slow MINER_KEY="$MK" MODEL=spend WORKER_NAME=fast3 MAX_INFLIGHT=64 CHUNKS=8 \
	CHUNK_MS=20 MARKER="$MARKER"
A accounts create memo >/dev/null && A topup memo 1 >/dev/null || fail "memo account"
MEMO=$(A keys create memo 2>/dev/null) || fail "key"
buyers "$MEMO" openai 0 1 8
grep -q "status=200 " "$T/buy.out" || fail "before revoking: $(cat "$T/buy.out")"
buyers "$MEMO" openai 0 1 8  # its text's hash now comes from the memo
grep -q "status=200 " "$T/buy.out" || fail "memoised: $(cat "$T/buy.out")"
last=$(printf '%s' "$MEMO" | tail -c 1)
[ "$last" = a ] && other=b || other=a
buyers "$(printf '%s' "$MEMO" | sed 's/.$//')$other" openai 0 1 8
grep -q "status=401 " "$T/buy.out" || fail "a made-up key: $(cat "$T/buy.out")"
RID=$(A accounts show memo | sed -n 's/.*key id=\([0-9]*\) .*status=active.*/\1/p' | head -1)
[ -n "$RID" ] || fail "memo key id: $(A accounts show memo)"
A keys revoke "$RID" > /dev/null || fail "revoke"
buyers "$MEMO" openai 0 1 8
grep -q "status=401 " "$T/buy.out" || fail "revoked: $(cat "$T/buy.out")"
wait_settled
curl -s "http://127.0.0.1:$MPORT/metrics" > "$T/metrics"
grep -q '^engy_gw_requests_total{api="openai",status="200"} 2$' "$T/metrics" ||
	fail "200s: $(grep requests_total "$T/metrics")"
grep -q '^engy_gw_requests_total{api="openai",status="401"} 2$' "$T/metrics" ||
	fail "401s: $(grep requests_total "$T/metrics")"
gw_stop
ok "a memoised key is refused once revoked, a made-up key next to it gets 401; the counter has 2 x 200 and 2 x 401"
echo "$N_OK passed, 0 failed"
