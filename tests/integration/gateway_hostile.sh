#!/bin/sh
# SPDX-License-Identifier: MIT
# Hostile buyers and hostile miners (issue 14), each attack reproduced on
# 127.0.0.1 against scripted peers (bad_miner.mjs) and raw sockets, then
# shown to fail; the books balance after every one of them (balance =
# credited - spent, nothing reserved once requests settled, spent = the
# request log's costs).
. "$top_srcdir/tests/integration/gateway_lib.sh"

TOKEN="tee-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export ENGY_TEE_TOKEN="$TOKEN"
tiny_model
A models put tiny --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 30 \
	--price-input 1 --price-output 2 >/dev/null || fail "models put tiny"
A models put hm --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 10 \
	--price-input 1 --price-output 2 >/dev/null || fail "models put"
A accounts create acme >/dev/null && A topup acme 1 >/dev/null || fail "account"
KEY=$(A keys create acme 2>/dev/null) || fail "key"
MK=$(register 5DAAnrj7VHTznn2AWBemMuyBwZWs6FNFjdyVXUeYum3PTXFy)
gw_conf "  first_token_timeout_s = 3
  max_attempts = 2
  key_max_inflight = 16
  affinity_min_chars = 100000
  tee_sample_rate = 1
  worker_max_inflight = 16"
gw_start

# post FILE [PATH]: a buyer POST of FILE's bytes; prints the HTTP status,
# the body in $T/post.out, the headers in $T/post.h.
post() {
	curl -s -D "$T/post.h" -o "$T/post.out" -w '%{http_code}' -H "Authorization: Bearer $KEY" \
		-H 'Content-Type: application/json' --data-binary "@$1" \
		"$BASE${2:-/v1/chat/completions}"
}
# workers: /internal/v1/workers in $T/workers.json.
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
books() {  # books WHAT: the money invariants hold once every request settled
	wait_settled
	money acme
	ok "$1: the books balance (spent $SPENT, balance $BALANCE, nothing reserved)"
}

peer g1 good MINER_KEY="$MK" MODEL=hm WORKER_NAME=g1
peer g2 good MINER_KEY="$MK" MODEL=hm WORKER_NAME=g2

# --- 1. a request the gateway cannot deliver is the buyer's error ------------------
printf '{"model":"hm","max_tokens":4,"messages":[{"role":"user","content":"bad \377\376 bytes"}]}' \
	> "$T/badutf8.json"
s=$(post "$T/badutf8.json")
[ "$s" = 400 ] || fail "invalid UTF-8: $s $(cat "$T/post.out")"
grep -q 'UTF-8' "$T/post.out" || fail "invalid UTF-8: no reason: $(cat "$T/post.out")"
grep -q 'serve corr=' "$T/peer-g1.out" "$T/peer-g2.out" && fail "invalid UTF-8 reached a miner"
[ "$(wjs 'ws.filter((w) => w.failed > 0 || w.breaker.failed > 0).length')" = 0 ] ||
	fail "a worker was charged: $(cat "$T/workers.json")"
printf '{"model":"hm","max_tokens":4,"messages":[{"role":"user","content":"fine"}]}' > "$T/ok.json"
s=$(post "$T/ok.json")
[ "$s" = 200 ] || fail "a good request after: $s $(cat "$T/post.out")"
ok "invalid UTF-8 in a message is a 400 at parse time; no miner saw it, no breaker counted it"
books "invalid UTF-8"

# --- 2. a proof that cannot be built never fails a buyer request ------------------
# The tiny model's hidden size (64) is below toploc's topk (128): a proof
# chunk of one token cannot be built (completions of 1, 33, 65 ... tokens).
MKE=$(register 5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY)
miner me "$MKE" me 8
for st in true false; do
	printf '{"model":"tiny","max_tokens":1,"stream":%s,"messages":[{"role":"user","content":"one token"}]}' \
		"$st" > "$T/one.json"
	s=$(post "$T/one.json")
	[ "$s" = 200 ] || fail "max_tokens 1 (stream $st): $s $(cat "$T/post.out")"
done
grep -q '"completion_tokens":1' "$T/post.out" || fail "one token: $(cat "$T/post.out")"
grep -q 'event=toploc_prove_failed' "$T/me.log" || fail "the proof did not fail: $(tail -3 "$T/me.log")"
curl -s -o "$T/tee.json" -H "Authorization: Bearer $TOKEN" "$BASE/internal/v1/tee/sample?n=100" ||
	fail "tee sample"
node -e '
const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const e = j.entries.filter((e) => e.model === "tiny");
if (e.length !== 2) throw new Error("tee entries for tiny: " + e.length);
for (const x of e)
	if (!x.commitment || x.commitment.toploc !== null || !Array.isArray(x.commitment.output_token_ids))
		throw new Error("not a null proof: " + JSON.stringify(x.commitment));
' "$T/tee.json" || fail "tee: $(cat "$T/tee.json")"
[ "$(wjs 'ws.filter((w) => w.failed > 0 || w.breaker.failed > 0).length')" = 0 ] ||
	fail "a worker was charged: $(cat "$T/workers.json")"
ok "max_tokens 1 on a model whose proof cannot be built: 200 with a null proof (commitment.toploc null), nothing counted against the miner"
books "unprovable completions"

# --- 3. a hello's claim cannot win more than the per-worker ceiling ---------------
peer liar good MINER_KEY="$MK" MODEL=hm WORKER_NAME=liar MAX_INFLIGHT=1000000
[ "$(wjs '(ws.find((w) => w.name === "liar") || {}).capacity')" = 16 ] ||
	fail "liar's share: $(cat "$T/workers.json")"
for i in $(seq 1 40); do
	s=$(post "$T/ok.json")
	[ "$s" = 200 ] || fail "request $i: $s $(cat "$T/post.out")"
done
nl=$(grep -c 'done corr=' "$T/peer-liar.out" || true)
n1=$(grep -c 'done corr=' "$T/peer-g1.out" || true)
n2=$(grep -c 'done corr=' "$T/peer-g2.out" || true)
# Weights 16:8:8 by free slots: the liar's half, never all of it.
[ "$((nl + n1 + n2))" -ge 40 ] && [ "$nl" -le 24 ] && [ "$n1" -ge 6 ] && [ "$n2" -ge 6 ] ||
	fail "traffic with a 1,000,000 claim: liar $nl, g1 $n1, g2 $n2"
ok "a hello claiming max_inflight_total 1,000,000 is held to worker_max_inflight 16: liar $nl, honest $n1 and $n2 of 40"
books "an inflated capacity claim"

# --- 4. empty chunks are not a first token ------------------------------------------
# done_line: the request_done line of the last post.
done_line() {
	rid=$(sed -n 's/^x-request-id: \([^\r]*\).*/\1/ip' "$T/post.h")
	grep "event=request_done request=$rid " "$T/gw.log"
}
printf '{"model":"hm2","max_tokens":4,"stream":true,"messages":[{"role":"user","content":"ttft"}]}' \
	> "$T/hm2.json"
A models put hm2 --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 10 \
	--price-input 1 --price-output 2 >/dev/null || fail "models put hm2"
peer ef emptyfirst MINER_KEY="$MK" MODEL=hm2 WORKER_NAME=ef DELAY_MS=300
s=$(post "$T/hm2.json")
[ "$s" = 200 ] || fail "emptyfirst: $s $(cat "$T/post.out")"
peer_wait ef "empties sent"
ttft=$(done_line | sed -n 's/.* ttft_ms=\([0-9]*\) .*/\1/p')
# The content left the peer 300 ms after the empties: no earlier.
[ -n "$ttft" ] && [ "$ttft" -ge 300 ] || fail "TTFT forged by empty chunks: $(done_line)"
A log tail -n 1000 | grep "worker=ef " | grep -q " ttft_ms=$ttft " ||
	fail "the request log's TTFT: $(A log tail -n 1000 | grep 'worker=ef ')"
A models put hm3 --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 10 \
	--price-input 1 --price-output 2 >/dev/null || fail "models put hm3"
peer eo emptyonly MINER_KEY="$MK" MODEL=hm3 WORKER_NAME=eo CHUNK_MS=50
sed 's/"hm2"/"hm3"/' "$T/hm2.json" > "$T/hm3.json"
s=$(post "$T/hm3.json")
[ "$s" = 504 ] || fail "emptyonly: $s $(cat "$T/post.out")"
# Ended by first_token_timeout_s (3 s), not re-armed to max_request_s (10 s).
tot=$(done_line | sed -n 's/.* total_ms=\([0-9]*\).*/\1/p')
[ -n "$tot" ] && [ "$tot" -lt 10000 ] && done_line | grep -q ' ttft_ms=0 ' ||
	fail "emptyonly: $(done_line)"
peer_wait eo "cancel corr="
ok "empty chunks neither start the first-token clock nor reset its timer: TTFT $ttft ms (>= 300), empties alone are a 504 after first_token_timeout_s"
books "empty chunks"

echo "$N_OK passed, 0 failed"
