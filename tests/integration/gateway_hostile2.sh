#!/bin/sh
# SPDX-License-Identifier: MIT
# Hostile buyers and hostile miners, part two (issue 14): stream resets,
# poison requests, capacity claims against measured service, idle buyer
# sockets, answers longer than max_tokens.  Each attack runs on 127.0.0.1
# against engy miners on backend-ref and scripted peers (bad_miner.mjs),
# and the books balance after every one of them (balance = credited -
# spent, nothing reserved once requests settled, spent = the request
# log's costs).  Expected values come from the attack's own terms (the
# slots the miners were given, what the scripted peers sent, the
# configured limits), not from engy's output.
. "$top_srcdir/tests/integration/gateway_lib.sh"

TOKEN="tee-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export ENGY_TEE_TOKEN="$TOKEN"
tiny_model
A models put tiny --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 30 \
	--price-input 1 --price-output 2 >/dev/null || fail "models put tiny"
for m in hp hw hz hs; do
	A models put $m --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 20 \
		--price-input 1 --price-output 2 >/dev/null || fail "models put $m"
done
A accounts create acme >/dev/null && A topup acme 1 >/dev/null || fail "account"
KEY=$(A keys create acme 2>/dev/null) || fail "key"
MK=$(register 5DAAnrj7VHTznn2AWBemMuyBwZWs6FNFjdyVXUeYum3PTXFy)
# Small transport limits so that the idle-socket attack stays bounded.
GW_HTTP_OPTS="max_connections = 64 max_idle_per_client = 16"
gw_conf "  first_token_timeout_s = 5
  max_attempts = 2
  key_max_inflight = 0
  affinity_min_chars = 100000
  worker_max_inflight = 16
  cancel_hold_s = 2
  tee_sample_rate = 0"
gw_start

# post FILE [ADDR]: a buyer POST of FILE's bytes from ADDR (127.0.0.1);
# prints the HTTP status, the body in $T/post.out, the headers in $T/post.h.
post() {
	curl -s --interface "${2:-127.0.0.1}" -D "$T/post.h" -o "$T/post.out" -w '%{http_code}' \
		-H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
		--data-binary "@$1" "$BASE/v1/chat/completions"
}
workers() {
	curl -s -o "$T/workers.json" -H "Authorization: Bearer $TOKEN" \
		"$BASE/internal/v1/workers" || fail "internal workers"
}
# wjs EXPR: EXPR over the workers list (bound to `ws`), printed.
wjs() {
	workers
	node -e 'const ws = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).workers;
		const v = ('"$1"'); console.log(typeof v === "object" ? JSON.stringify(v) : v);' \
		"$T/workers.json"
}
# wait_wjs EXPR: EXPR over the workers list is true (60 s bound a hang).
wait_wjs() {
	i=0
	until [ "$(wjs "$1")" = true ]; do
		i=$((i + 1)); [ $i -le 600 ] || fail "never true: $1: $(cat "$T/workers.json")"
		sleep 0.1
	done
}
books() {  # books WHAT: the money invariants hold once every request settled
	wait_settled
	money acme
	ok "$1: the books balance (spent $SPENT, balance $BALANCE, nothing reserved)"
}
req() {  # req MODEL CONTENT [STREAM] [MAX_TOKENS] > file
	printf '{"model":"%s","max_tokens":%s,"stream":%s,"messages":[{"role":"user","content":"%s"}]}' \
		"$1" "${4:-8}" "${3:-false}" "$2"
}

# --- 1. stream resets keep the slot accounting of gateway and miner in step --
# Two engy miners with 8 slots each; a buyer opens streams and resets them
# 0..5 ms after their first bytes (the miner is generating), 16 at a
# time, 400 in all.  A cancelled request holds its slot
# until the miner says it is free (`cancelled`), so the gateway never sends
# a miner more than its slots: no miner refuses "at capacity", no breaker
# counts anything, both stay active.
MK1=$(register 5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY)
miner m1 "$MK1" m1 8
miner m2 "$MK1" m2 8
req tiny "reset me" true 64 > "$T/reset.json"
node -e '
const net = require("net");
const [port, key, file] = process.argv.slice(1);
const body = require("fs").readFileSync(file);
const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
	`Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
let sent = 0, done = 0;
const total = 400, conc = 16;
function one() {
	if (sent >= total) return;
	const delay = sent % 6;
	sent++;
	const s = net.connect(Number(port), "127.0.0.1", () => { s.write(head); s.write(body); });
	s.once("data", () => setTimeout(() => {
		if (s.resetAndDestroy) s.resetAndDestroy(); else s.destroy();
	}, delay));
	s.on("error", () => {});
	s.on("close", () => { done++; if (done === total) console.log("resets " + total); else one(); });
}
for (let i = 0; i < conc; i++) one();
' "$HPORT" "$KEY" "$T/reset.json" > "$T/resets.out" 2>&1 || fail "reset buyer: $(cat "$T/resets.out")"
grep -q "resets 400" "$T/resets.out" || fail "reset buyer: $(cat "$T/resets.out")"
wait_settled
# Every cancelled slot comes back from the miners.
wait_wjs 'ws.filter((w) => w.model === "tiny").every((w) => w.cancels_held === 0 && w.inflight === 0)'
nc=$(cat "$T/m1.log" "$T/m2.log" | grep -c 'event=request_cancel ' || true)
[ "$nc" -gt 0 ] || fail "no reset reached a miner: $(tail -3 "$T/gw.log")"
nr=$(cat "$T/m1.log" "$T/m2.log" | grep -c 'event=serve_refused ' || true)
[ "$nr" = 0 ] || fail "the miners refused $nr serves: $(grep -h serve_refused "$T/m1.log" "$T/m2.log" | head -3)"
grep -q 'event=breaker_trip' "$T/gw.log" && fail "a breaker tripped: $(grep breaker_trip "$T/gw.log" | head -2)"
[ "$(wjs 'ws.filter((w) => w.model === "tiny" && w.eligible && w.failed === 0 && w.breaker.failed === 0).length')" = 2 ] ||
	fail "workers after the resets: $(cat "$T/workers.json")"
req tiny "after the resets" > "$T/after.json"
for i in 1 2 3 4; do
	s=$(post "$T/after.json")
	[ "$s" = 200 ] || fail "a request after the resets: $s $(cat "$T/post.out")"
done
ok "400 streams reset 0..5 ms after their first bytes ($nc cancels at the miners): no serve refused, no breaker count, both miners eligible and serving"
books "stream resets"

# --- 2. a poison request is the request's fault, not every miner's -----------
# Two scripted miners answer any request with "poison" in it with an error:
# each such request fails on both, the same way, and is charged to neither
# (breaker_consecutive 5 would pull both after 5).
peer pa poison MINER_KEY="$MK" MODEL=hp WORKER_NAME=pa
peer pb poison MINER_KEY="$MK" MODEL=hp WORKER_NAME=pb
req hp "poison pill" > "$T/poison.json"
for i in $(seq 1 8); do
	s=$(post "$T/poison.json")
	[ "$s" = 502 ] || fail "poison $i: $s $(cat "$T/post.out")"
done
[ "$(grep -c 'event=request_poison ' "$T/gw.log")" = 8 ] || fail "poison lines: $(grep -c request_poison "$T/gw.log")"
grep -q 'event=breaker_trip' "$T/gw.log" && fail "a breaker tripped: $(grep breaker_trip "$T/gw.log" | head -2)"
[ "$(wjs 'ws.filter((w) => w.model === "hp" && w.eligible && w.failed === 0 && w.breaker.failed === 0 && w.breaker.attempts === 0).length')" = 2 ] ||
	fail "poison was charged: $(cat "$T/workers.json")"
req hp "fine" > "$T/fine.json"
s=$(post "$T/fine.json")
[ "$s" = 200 ] || fail "a good request after the poison: $s $(cat "$T/post.out")"
# A request that fails on one worker and is answered by the other is
# charged once, to the one that failed it.
peer pc errresp MINER_KEY="$MK" MODEL=hp WORKER_NAME=pc
i=0
while [ "$(wjs '(ws.find((w) => w.name === "pc") || {failed: 0}).failed')" = 0 ]; do
	i=$((i + 1)); [ $i -le 20 ] || fail "pc never charged: $(cat "$T/workers.json")"
	s=$(post "$T/fine.json")
	[ "$s" = 200 ] || fail "a request with pc failing: $s $(cat "$T/post.out")"
done
[ "$(wjs 'ws.filter((w) => w.name !== "pc" && w.failed > 0).length')" = 0 ] ||
	fail "someone else charged: $(cat "$T/workers.json")"
kill "$PID_pc"
ok "8 poison requests failing the same way on both miners: 502, charged to neither (no breaker count); a request failed by one miner and answered by another is charged once, to the one that failed"
books "poison requests"

# --- 3. a capacity claim alone does not win traffic ----------------------------
# An honest worker (8 slots, quick) and a liar claiming 1,000,000 (held to
# worker_max_inflight 16) that answers slowly (1 s a chunk): 48
# requests, 8 at a time.  Weights start at worker_start_inflight (4) and
# grow only with answers in time, so the liar's share stays small.
peer honest good MINER_KEY="$MK" MODEL=hw WORKER_NAME=honest MAX_INFLIGHT=8 CHUNK_MS=5
peer liar good MINER_KEY="$MK" MODEL=hw WORKER_NAME=liar MAX_INFLIGHT=1000000 CHUNK_MS=1000
[ "$(wjs '(ws.find((w) => w.name === "liar") || {}).capacity')" = 16 ] ||
	fail "liar's ceiling: $(cat "$T/workers.json")"
req hw "weights" > "$T/hw.json"
seq 1 48 | xargs -P 8 -I{} curl -s -o /dev/null -w '%{http_code}\n' \
	-H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
	--data-binary "@$T/hw.json" "$BASE/v1/chat/completions" > "$T/hw.codes"
[ "$(grep -c '^200$' "$T/hw.codes")" = 48 ] || fail "weights: $(sort "$T/hw.codes" | uniq -c)"
nl=$(grep -c 'done corr=' "$T/peer-liar.out" || true)
nh=$(grep -c 'done corr=' "$T/peer-honest.out" || true)
[ "$((nl + nh))" = 48 ] && [ "$nl" -le 12 ] || fail "shares: liar $nl, honest $nh of 48"
ok "a slow worker claiming 1,000,000 slots against a quick honest one of 8: liar $nl, honest $nh of 48 (at most a quarter)"
books "a capacity claim against measured service"

# --- 4. idle sockets from one address do not hold every slot --------------------
# max_connections 64, max_idle_per_client 16: 100 idle sockets from
# 127.0.0.1 (84 of them closed as they come), then 16 each from
# 127.0.0.3..6 (64 in all, the limit); a buyer on 127.0.0.2 is served
# each time, within the 10 s idle timeout that would free them anyway.
# idle ADDR N: N idle sockets from ADDR, kept open; prints "open K",
# "closed K" as they go; the PID in IDLEPID.
idle() {
	node -e '
const net = require("net");
const [port, addr, n] = process.argv.slice(1);
let open = 0, closed = 0;
for (let i = 0; i < Number(n); i++) {
	const s = net.connect({ port: Number(port), host: "127.0.0.1", localAddress: addr }, () => {
		open++; console.log("open " + open);
	});
	s.on("error", () => {});
	s.on("close", () => { closed++; console.log("closed " + closed); });
}
setInterval(() => {}, 1000);
' "$HPORT" "$1" "$2" > "$T/idle-$1.out" 2>&1 &
	IDLEPID=$!
	PIDS="$PIDS $IDLEPID"
}
req hw "from another address" > "$T/other.json"
idle 127.0.0.1 100
wait_for "$T/idle-127.0.0.1.out" "^open 100$" 60 || fail "idle sockets: $(tail -3 "$T/idle-127.0.0.1.out")"
s=$(post "$T/other.json" 127.0.0.2)
[ "$s" = 200 ] || fail "a buyer on 127.0.0.2 beside 100 idle sockets: $s $(cat "$T/post.out")"
wait_for "$T/idle-127.0.0.1.out" "^closed 84$" 60 || fail "idle sockets: $(tail -3 "$T/idle-127.0.0.1.out")"
for a in 127.0.0.3 127.0.0.4 127.0.0.5 127.0.0.6; do
	idle $a 16
	wait_for "$T/idle-$a.out" "^open 16$" 60 || fail "idle $a: $(tail -2 "$T/idle-$a.out")"
done
s=$(post "$T/other.json" 127.0.0.2)
[ "$s" = 200 ] || fail "a buyer on 127.0.0.2 at max_connections: $s $(cat "$T/post.out")"
ok "100 idle sockets from 127.0.0.1 keep 16 (84 closed); with 64 idle from four other addresses at max_connections 64, a buyer on 127.0.0.2 is served"
books "idle sockets"

# --- 5. more text than max_tokens can produce is cut, and the worker's fault ----
peer big good MINER_KEY="$MK" MODEL=hz WORKER_NAME=big MARKER_KB=1000
for st in false true; do
	req hz "sixteen tokens" $st 16 > "$T/big.json"
	s=$(post "$T/big.json")
	[ "$s" = 502 ] || fail "1 MB for max_tokens 16 (stream $st): $s $(head -c 200 "$T/post.out")"
	[ "$(wc -c < "$T/post.out")" -lt 10000 ] || fail "the cut text reached the buyer (stream $st)"
done
[ "$(grep -c 'event=attempt_oversize ' "$T/gw.log")" = 2 ] || fail "no oversize lines: $(grep oversize "$T/gw.log")"
[ "$(wjs '(ws.find((w) => w.name === "big") || {}).failed')" = 2 ] || fail "big not charged: $(cat "$T/workers.json")"
peer_wait big "cancel corr="
# The scripted peers never send `cancelled`: a held slot comes back with a
# response that crossed the cancel, else after cancel_hold_s (2 s).  A
# silent one never answers: its slot comes back by the expiry.
wait_wjs 'ws.find((w) => w.name === "big").cancels_held === 0'
peer quiet silent MINER_KEY="$MK" MODEL=hs WORKER_NAME=quiet
req hs "no answer" > "$T/hs.json"
s=$(post "$T/hs.json")
[ "$s" = 504 ] || fail "silent: $s $(cat "$T/post.out")"
peer_wait quiet "cancel corr="
qid=$(wjs '(ws.find((w) => w.name === "quiet") || {}).id')
wait_for "$T/gw.log" "event=cancel_hold_expired worker=$qid .* acks_cancel=no" 60 ||
	fail "quiet's held slot: $(grep cancel_hold "$T/gw.log")"
wait_wjs 'ws.find((w) => w.name === "quiet").cancels_held === 0'
ok "1 MB of content for max_tokens 16: cut (502, nothing relayed), cancel to the miner, counted against it; the slot of a miner that never confirms a cancel comes back after cancel_hold_s"
books "answers longer than max_tokens"

# SIGTERM after all this: the gateway drains and exits 0, and its stderr
# (where sanitizer reports land) is empty.
gw_stop
ok "the gateway drains and exits 0 on SIGTERM after every attack"

echo "$N_OK passed, 0 failed"
