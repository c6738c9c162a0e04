#!/bin/sh
# SPDX-License-Identifier: MIT
# Hostile buyers and hostile miners (issue 14), each attack reproduced on
# 127.0.0.1 against scripted peers (bad_miner.mjs) and raw sockets, then
# shown to fail; the books balance after every one of them (balance =
# credited - spent, nothing reserved once requests settled, spent = the
# request log's costs).
# Oracle: attacks from raw sockets and scripted peers written from the
# specs; the money invariants are checked against the request log by the
# script.
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
  worker_max_inflight = 16
  max_unauthenticated = 4"
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
wait_settled	# the request's row is written when it settles, after the answer
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

# --- 5. before a hello: a small message limit, and few such legs -----------------------
RAW="$top_srcdir/tests/integration/raw_ws.mjs"
# legs_closed_after N: the gateway logged more than N leg_closed lines.
legs_closed_after() {
	i=0
	while [ "$(grep -c 'event=leg_closed ' "$T/gw.log" || true)" -le "$1" ]; do
		i=$((i + 1)); [ $i -le 200 ] || fail "the gateway closed no leg after $1"
		sleep 0.05
	done
}
nc0=$(grep -c 'event=leg_closed ' "$T/gw.log" || true)
node "$RAW" "$WSPORT" /gw big > "$T/big.out" 2>&1 &
PIDS="$PIDS $!"
wait_for "$T/big.out" "closed 0 code=1009\\|eof 0" 60 || fail "64 MiB before hello: $(cat "$T/big.out")"
grep -q "closed 0 code=1009" "$T/big.out" || fail "64 MiB before hello: $(cat "$T/big.out")"
legs_closed_after "$nc0"
ok "a 64 MiB message before the hello is refused at its header (1009), nothing buffered"
node "$RAW" "$WSPORT" /gw idle 4 > "$T/idle.out" 2>&1 &
IDLE=$!
PIDS="$PIDS $IDLE"
i=0
while [ "$(grep -c '^open ' "$T/idle.out" || true)" -lt 4 ]; do
	i=$((i + 1)); [ $i -le 200 ] || fail "idle legs: $(cat "$T/idle.out")"
	sleep 0.05
done
node "$RAW" "$WSPORT" /gw idle 1 > "$T/fifth.out" 2>&1 &
PIDS="$PIDS $!"
wait_for "$T/fifth.out" "closed 0 code=1008\\|eof 0\\|refused 0" 60 || fail "a 5th leg without hello: $(cat "$T/fifth.out")"
grep -q "closed 0 code=1008" "$T/fifth.out" || fail "5th: $(cat "$T/fifth.out")"
grep -q 'event=leg_refused .*reason="too many legs without a hello" max_unauthenticated=4' "$T/gw.log" ||
	fail "no leg_refused line"
s=$(post "$T/ok.json")
[ "$s" = 200 ] || fail "buyers while legs wait: $s"
kill "$IDLE"
peer late good MINER_KEY="$MK" MODEL=hm3 WORKER_NAME=late REDIAL=1
peer_wait late admit
# max_tokens 1000: room for 100 kB (max_bytes_per_token 128).
A models put hm4 --max-input-tokens 4096 --max-output-tokens 1024 --max-request-s 10 \
	--price-input 1 --price-output 2 >/dev/null || fail "models put hm4"
peer bigans good MINER_KEY="$MK" MODEL=hm4 WORKER_NAME=bigans \
	MARKER="$(head -c 100000 /dev/zero | tr '\0' x)"
sed 's/"hm"/"hm4"/; s/"max_tokens":4/"max_tokens":1000/' "$T/ok.json" > "$T/hm4.json"
s=$(post "$T/hm4.json")
[ "$s" = 200 ] && [ "$(wc -c < "$T/post.out")" -gt 100000 ] ||
	fail "a 100 kB answer after admission: $s $(head -c 300 "$T/post.out")"
ok "max_unauthenticated 4: a 5th leg without a hello is refused (1008); admitted workers serve meanwhile; once they left, a miner is admitted; an admitted leg sends a 100 kB answer (the limit is lifted)"
books "pre-hello legs"

# --- 6. unknown model names: not cached, not stored ------------------------------------
MARK6="nosuch$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
long=$(head -c 200 /dev/zero | tr '\0' m)
rows0=$(A log tail -n 100000 | wc -l)
for m in "$MARK6" "$long" "$MARK6"; do
	printf '{"model":"%s","max_tokens":4,"messages":[{"role":"user","content":"x"}]}' "$m" > "$T/unk.json"
	s=$(post "$T/unk.json")
	[ "$s" = 404 ] || fail "unknown model: $s $(cat "$T/post.out")"
done
A log tail -n 100000 | grep -e "$MARK6" -e "mmmmmmmm" && fail "a buyer-supplied model name reached the request log"
[ "$(A log tail -n 100000 | wc -l)" = "$rows0" ] || fail "404s wrote rows"
# Were the unknown name cached (model_cache_s 10), it would still be a
# 404 once the model exists.
A models put "$MARK6" --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 10 \
	--price-input 1 --price-output 2 >/dev/null || fail "models put $MARK6"
printf '{"model":"%s","max_tokens":4,"messages":[{"role":"user","content":"x"}]}' "$MARK6" > "$T/unk.json"
s=$(post "$T/unk.json")
[ "$s" = 503 ] || fail "a model made after its 404: $s $(cat "$T/post.out")"
ok "unknown and 200-byte model names: 404, no request-log row, nothing of the name stored, not cached (the model made next is found at once)"
books "unknown model names"

# --- 7. over the model's limits is a 400 even when no worker serves it ------------------
A models put hm5 --max-input-tokens 100 --max-output-tokens 8 --max-request-s 10 \
	--price-input 1 --price-output 2 >/dev/null || fail "models put hm5"
printf '{"model":"hm5","max_tokens":4,"messages":[{"role":"user","content":"%s"}]}' \
	"$(head -c 200 /dev/zero | tr '\0' p)" > "$T/long.json"
printf '{"model":"hm5","max_tokens":9,"messages":[{"role":"user","content":"x"}]}' > "$T/mt.json"
printf '{"model":"hm5","max_tokens":4,"messages":[{"role":"user","content":"x"}]}' > "$T/fine5.json"
for round in 1 2; do	# the model read from the store, then from the cache
	s=$(post "$T/long.json")
	[ "$s" = 400 ] && grep -q max_input_tokens "$T/post.out" || fail "prompt over (round $round): $s $(cat "$T/post.out")"
	s=$(post "$T/mt.json")
	[ "$s" = 400 ] || fail "max_tokens over (round $round): $s $(cat "$T/post.out")"
	s=$(post "$T/fine5.json")
	[ "$s" = 503 ] || fail "within limits, no worker (round $round): $s $(cat "$T/post.out")"
done
ok "no worker serves the model: over its limits is a 400 (prompt, max_tokens; from the store and from the cache), within them a 503"
books "limits before workers"

# --- 8. strict framing and JSON ---------------------------------------------------------
# raw_http BODY_HEX CHUNK_SIZE: a chunked POST of one chunk whose size line
# is CHUNK_SIZE; prints the status.
raw_http() {
	node -e '
const net = require("net");
const [port, key, hex, size] = process.argv.slice(1);
const body = Buffer.from(hex, "hex");
const s = net.connect(Number(port), "127.0.0.1", () => {
	s.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
		"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
	s.write(`${size}\r\n`); s.write(body); s.write("\r\n0\r\n\r\n");
});
let out = "";
s.on("data", (d) => { out += d; });
s.on("close", () => console.log(out.split(" ")[1] || "none"));
s.on("error", () => {});
' "$HPORT" "$KEY" "$1" "$2"
}
small='{"model":"hm","max_tokens":4,"messages":[{"role":"user","content":"x"}]}'
hex=$(printf '%s' "$small" | od -An -tx1 | tr -d ' \n')
len=$(printf '%x' "$(printf '%s' "$small" | wc -c)")
[ "$(raw_http "$hex" "$len")" = 200 ] || fail "a chunked request"
[ "$(raw_http "$hex" "0x$len")" = 400 ] || fail "chunk size 0x$len accepted"
[ "$(raw_http "$hex" "+$len")" = 400 ] || fail "chunk size +$len accepted"
printf '%s {"model":"other"}' "$small" > "$T/two.json"
printf '%s\n' "$small" > "$T/trailingws.json"
printf '{"model":"hm","max_tokens":4,"messages":[{"role":"user","content":"a\001b"}]}' > "$T/ctl.json"
printf '{"model":"hm","max_tokens":4,"messages":[{"role":"user","content":"a\000b"}]}' > "$T/nul.json"
printf '{"model":"hm","max_tokens":4,"messages":[{"role":"user","content":"a\\u0000b"}]}' > "$T/unul.json"
for f in two ctl nul unul; do
	s=$(post "$T/$f.json")
	[ "$s" = 400 ] && grep -q 'not valid JSON' "$T/post.out" || fail "$f: $s $(cat "$T/post.out")"
done
s=$(post "$T/trailingws.json")
[ "$s" = 200 ] || fail "trailing whitespace: $s $(cat "$T/post.out")"
ok "a chunk size 0x.. or +.. is a 400; text after the JSON value, a raw control character, a NUL (raw or \\u0000) in a string are 400s; trailing whitespace is fine"
books "strict framing and JSON"

echo "$N_OK passed, 0 failed"
