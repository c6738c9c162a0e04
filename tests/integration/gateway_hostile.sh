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
A models put hm --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 10 \
	--price-input 1 --price-output 2 >/dev/null || fail "models put"
A accounts create acme >/dev/null && A topup acme 1 >/dev/null || fail "account"
KEY=$(A keys create acme 2>/dev/null) || fail "key"
MK=$(register 5DAAnrj7VHTznn2AWBemMuyBwZWs6FNFjdyVXUeYum3PTXFy)
gw_conf "  first_token_timeout_s = 5
  max_attempts = 2
  key_max_inflight = 16
  affinity_min_chars = 100000"
gw_start

# post FILE [PATH]: a buyer POST of FILE's bytes; prints the HTTP status,
# the body in $T/post.out.
post() {
	curl -s -o "$T/post.out" -w '%{http_code}' -H "Authorization: Bearer $KEY" \
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

echo "$N_OK passed, 0 failed"
