#!/bin/sh
# SPDX-License-Identifier: MIT
# The gateway keeps its SLA with untrusted miners: scripted peers
# (bad_miner.mjs) that send garbage or binary frames, answer for another
# corr_id, never answer, answer slowly, drop mid-stream, answer with an
# error, or go silent.  The buyer (the official OpenAI SDK,
# gateway_buyer.mjs) gets a clean 502/504 before any content, a clean
# in-band stream error after it, or the answer of another worker when the
# first failed before its first byte; the miner gets `cancel`; a silent
# leg is pinged then dropped; a repeat (key, worker_name) supersedes the
# older leg; SIGTERM sends `reconnect` to idle legs at once and to busy
# ones when their request ends.  Miner faults cost the buyer nothing and
# the books balance to the micro-dollar.
# Oracle: the official OpenAI SDK as the buyer and scripted misbehaving
# miners (bad_miner.mjs); statuses and errors as the SDK classifies them.
. "$top_srcdir/tests/integration/gateway_lib.sh"

A models put bad --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 4 \
	--price-input 1 --price-output 2 >/dev/null || fail "models put"
A accounts create acme >/dev/null && A topup acme 1 >/dev/null || fail "account"
KEY=$(A keys create acme 2>/dev/null) || fail "key"
MK=$(register 5DAAnrj7VHTznn2AWBemMuyBwZWs6FNFjdyVXUeYum3PTXFy)
# worker_start_inflight 256: routing weights are the hellos' shares from
# the start, so a claim of 64 draws the first request below.
gw_conf "  first_token_timeout_s = 2
  worker_start_inflight = 256
  keepalive_s = 0.5
  stale_s = 3
  ping_s = 1
  max_attempts = 2
  key_max_inflight = 3
  first_party = { \"good\" }
  affinity_min_chars = 100000"
gw_start

# buy STREAM [N] [ABORT_AFTER] [MAX_TOKENS]: requests for model bad;
# results in $T/buy.out.
buy() {
	node "$top_srcdir/tests/integration/gateway_buyer.mjs" "$PEERS" "$BASE" "$KEY" openai bad "$@" \
		> "$T/buy.out" 2>&1 || fail "buyer: $(cat "$T/buy.out")"
	RES=$(grep '^result' "$T/buy.out" | head -1)
}
want() {  # want WHAT NEEDLE...: every needle is in $RES
	w=$1; shift
	for n in "$@"; do
		case "$RES" in *"$n"*) ;; *) fail "$w: no '$n' in: $RES";; esac
	done
}
bye() {  # bye NAME: stop a peer; when its leg was still open, wait until the gateway closed it
	eval "bp=\$PID_$1"
	open=1
	grep -q "closed code=" "$T/peer-$1.out" && open=0
	before=$(grep -c "event=leg_closed " "$T/gw.log" || true)
	if [ $open = 0 ]; then
		# Closed by the gateway: node may have exited on its own already.
		kill "$bp" 2>/dev/null || :
		return 0
	fi
	kill "$bp" 2>/dev/null || fail "peer $1 (pid $bp) with an open leg is not running"
	i=0
	while [ "$(grep -c "event=leg_closed " "$T/gw.log" || true)" -le "$before" ]; do
		i=$((i + 1)); [ $i -le 200 ] || fail "peer $1 stopped but the gateway logged no leg_closed"
		sleep 0.05
	done
}

# --- legs on another worker's path are refused --------------------------------
MINER_KEY="$MK" MODEL=bad node "$PEER" "$PEERS" "$GWURL/5" good > "$T/peer-w5.out" 2>&1 &
PIDS="$PIDS $!"
wait_for "$T/peer-w5.out" "closed code=1008" 10 || fail "/gw/5: $(cat "$T/peer-w5.out")"
grep -q admit "$T/peer-w5.out" && fail "/gw/5 admitted"
grep -q 'event=leg_refused .*reason="wrong worker path" worker_index=0' "$T/gw.log" ||
	fail "no leg_refused line"
MINER_KEY="$MK" MODEL=bad WORKER_NAME=w0 node "$PEER" "$PEERS" "$GWURL/0" good > "$T/peer-w0.out" 2>&1 &
W0=$!
PIDS="$PIDS $W0"
wait_for "$T/peer-w0.out" "admit" 10 || fail "/gw/0: $(cat "$T/peer-w0.out")"
kill "$W0"
ok "worker 0 admits legs on /gw and /gw/0 and refuses /gw/5 (1008)"

# --- garbage, binary: the leg is closed; no other worker: 502 at once ------------
for mode in garbage binary; do
	peer $mode $mode MINER_KEY="$MK" MODEL=bad WORKER_NAME=$mode
	buy 0
	want "$mode" "status=502 class=InternalServerError"
	peer_wait $mode "closed code=1008"
	bye $mode
done
grep -q 'event=frame_invalid .*reason="not a JSON object"' "$T/gw.log" || fail "no frame_invalid line"
grep -q 'event=frame_invalid .*reason="a binary message"' "$T/gw.log" || fail "no binary line"
ok "a garbage or a binary frame closes the leg (1008); the buyer gets a clean 502"

# --- wrong corr_id, never answers: 504 after first_token_timeout_s, cancel -------
peer wrongid wrongid MINER_KEY="$MK" MODEL=bad WORKER_NAME=wrongid
buy 0
want "wrongid" "status=504"
peer_wait wrongid "cancel corr="
bye wrongid
peer silent silent MINER_KEY="$MK" MODEL=bad WORKER_NAME=silent
buy 1
want "silent stream" "status=inband class=APIError chunks=0"
peer_wait silent "cancel corr="
ok "frames for an unknown corr_id are ignored; no token in 2 s is a 504 (in-band once keep-alives started the stream); the miner gets cancel"
buy 0 4
[ "$(grep -c 'status=504 ' "$T/buy.out")" = 3 ] &&
	[ "$(grep -c 'status=429 class=RateLimitError' "$T/buy.out")" = 1 ] ||
	fail "key_max_inflight 3: $(cat "$T/buy.out")"
ok "a 4th request in flight on one key is a 429 (RateLimitError) before any miner"
bye silent

# --- slow: within the deadline it streams; past max_request_s it is a 504 -------
peer slow slow MINER_KEY="$MK" MODEL=bad WORKER_NAME=slow CHUNKS=5 CHUNK_MS=300
buy 1 1 0 16
want "slow stream" "status=200" "chunks=5" "finish=stop" "completion=5"
bye slow
peer slow2 slow MINER_KEY="$MK" MODEL=bad WORKER_NAME=slow2 CHUNKS=40 CHUNK_MS=300
buy 1 1 0 64
want "too slow" "status=inband class=APIError"
case "$RES" in *" chunks=0 "*) fail "too slow: no content before the 504: $RES";; esac
peer_wait slow2 "cancel corr="
ok "a slow miner streams when in time; past max_request_s (4 s) the stream ends with an in-band error and a cancel"
bye slow2

# --- dropped mid-stream: in-band 502 after content; before content: another worker -
peer drop dropmid MINER_KEY="$MK" MODEL=bad WORKER_NAME=drop CHUNK_MS=100
buy 1
want "dropmid stream" "status=inband class=APIError chunks=2"
peer_wait drop "dropping"
bye drop
peer drop2 dropmid MINER_KEY="$MK" MODEL=bad WORKER_NAME=drop2 MAX_INFLIGHT=64 CHUNK_MS=50
peer good good MINER_KEY="$MK" MODEL=bad WORKER_NAME=good MAX_INFLIGHT=8
buy 0
want "dropmid then good" "status=200" "finish=stop"
peer_wait drop2 "serve corr="
peer_wait good "done corr="
grep -q "event=attempt_retry request=.* attempt=1 status=502" "$T/gw.log" || fail "no retry logged"
grep -q "event=worker_state worker=.* name=good from=checking to=active why=\"admitted, 1st-party\"" "$T/gw.log" ||
	fail "first_party from the config: $(grep 'name=good' "$T/gw.log" | head -3)"
ok "a leg dropped mid-stream: in-band 502 once content went out; before the first byte the request moves to another worker (a 1st-party one named in the config, active at once)"
bye drop2

# --- an error response: retried elsewhere; alone: 502 -----------------------------
peer err errresp MINER_KEY="$MK" MODEL=bad WORKER_NAME=err MAX_INFLIGHT=64
buy 0
want "errresp then good" "status=200"
n=$(grep -c "done corr=" "$T/peer-good.out")
[ "$n" = 2 ] || fail "good peer served $n"
bye good
buy 0
want "errresp alone" "status=502 class=InternalServerError"
grep -q "serve failed: scripted" "$T/gw.log" && fail "the miner's error text reached the log"
ok "an error response is retried on another worker; alone it is a 502 (the miner's text is not relayed)"
bye err

# --- stale legs, pings, supersede --------------------------------------------------
peer mute mute MINER_KEY="$MK" MODEL=bad WORKER_NAME=mute
peer alive good MINER_KEY="$MK" MODEL=bad WORKER_NAME=alive
peer_wait mute "ping"
peer_wait mute "closed code=1001"
grep -q "event=worker_closing worker=.* code=1001 reason=stale" "$T/gw.log" || fail "stale not logged"
# Positive evidence that the alive leg outlived the stale deadline: it
# was pinged twice more than the mute one, which was dropped after its
# pings went unanswered.
m=$(grep -c '^ping' "$T/peer-mute.out" || true)
i=0
while [ "$(grep -c '^ping' "$T/peer-alive.out" || true)" -lt $((m + 2)) ]; do
	i=$((i + 1)); [ $i -le 200 ] || fail "alive: not pinged $((m + 2)) times: $(cat "$T/peer-alive.out")"
	sleep 0.05
done
grep -q "closed" "$T/peer-alive.out" && fail "a leg answering pings was dropped: $(cat "$T/peer-alive.out")"
ok "a leg silent for stale_s (3 s) after pings is dropped; one answering pings stays"
bye mute
peer alive2 good MINER_KEY="$MK" MODEL=bad WORKER_NAME=alive
peer_wait alive "closed code=1000"
grep -q "event=worker_superseded .* restart=yes" "$T/gw.log" || fail "supersede not logged"
buy 0
want "after supersede" "status=200"
peer_wait alive2 "done corr="
ok "a repeat hello with the same (key, worker_name) supersedes the older leg"

# --- drain: reconnect to idle legs at once, to busy ones after their request ------
# The busy leg holds its request until the idle leg has been told to
# reconnect: the drain's order is then the gateway's, not the machine's
# speed.
peer busy held MINER_KEY="$MK" MODEL=bad WORKER_NAME=busy MAX_INFLIGHT=64 CHUNKS=6 CHUNK_MS=20 \
	RELEASE_FILE="$T/release-busy"
node "$top_srcdir/tests/integration/gateway_buyer.mjs" "$PEERS" "$BASE" "$KEY" openai bad 1 1 0 16 \
	> "$T/drain.out" 2>&1 &
BUYER=$!
peer_wait busy "held corr="
kill -TERM "$GWPID"
peer_wait alive2 "reconnect"
touch "$T/release-busy"
wait "$BUYER" || fail "buyer during drain: $(cat "$T/drain.out")"
grep -q "status=200 .*chunks=6" "$T/drain.out" || fail "request during drain: $(cat "$T/drain.out")"
peer_wait busy "reconnect"
[ "$(grep -n 'done corr=\|reconnect' "$T/peer-busy.out" | head -1 | grep -c done)" = 1 ] ||
	fail "reconnect before the request ended: $(cat "$T/peer-busy.out")"
gw_wait
# The gateway's order of events (not how fast the peers print them): the
# idle leg's reconnect came while the busy leg's request was still on
# (request_done is logged just after the release that sends its reconnect).
lno() { grep -n -- "$1" "$T/gw.log" | head -1 | cut -d: -f1; }
wid() { sed -n "s/.*event=worker_admitted worker=\([0-9]*\) .* name=$1 .*/\1/p" "$T/gw.log" | tail -1; }
la=$(lno "event=worker_reconnect worker=$(wid alive)\$")
lb=$(lno "event=worker_reconnect worker=$(wid busy)\$")
ld=$(grep -n 'event=request_done .* status=200 .* stream=1 ' "$T/gw.log" | tail -1 | cut -d: -f1)
[ -n "$la" ] && [ -n "$lb" ] && [ -n "$ld" ] && [ "$la" -lt "$lb" ] && [ "$la" -lt "$ld" ] ||
	fail "drain order (idle reconnect $la, request done $ld, busy reconnect $lb): $(grep -e worker_reconnect -e request_done "$T/gw.log" | tail -4)"
ok "SIGTERM: idle legs get reconnect at once; a busy one after its request, which completes"

# --- money: miner faults cost nothing; the books balance ---------------------------
A log tail -n 1000 > "$T/log.txt"
grep -E "status=(502|504) .*cost=0.000000" "$T/log.txt" >/dev/null || fail "no free 502/504 rows"
grep -E "status=(502|504) " "$T/log.txt" | grep -v "cost=0.000000" && fail "a miner fault was charged"
money acme
ok "502 and 504 cost nothing; the books balance ($SPENT micro-USD spent on the good answers)"
echo "$N_OK passed, 0 failed"
