#!/bin/sh
# SPDX-License-Identifier: MIT
# engyd -c as a gateway, end to end on 127.0.0.1: a store made with
# engyctl admin (models, accounts, keys, miners), two engy miners on
# backend-ref with a generated tiny checkpoint (capacities 8 and 16), a
# scripted miner peer for output that must be known exactly (tool calls,
# reasoning, cached tokens), and the official SDKs as buyers
# (gateway_sdk.mjs): both APIs plain and streamed, errors as the SDKs'
# own types, 402 without credit.  Then from the request log: round-robin
# by free capacity is exactly 1:2 for short prompts, a long prompt prefix
# stays on one worker, and the books balance.  Also GET /gw/meta and
# the hello checks (unknown key, unknown model, max_inflight_total).
# Oracle: independent: the official SDKs as buyers; the routing ratios and
# costs computed by the script from the capacities and the price card it
# set.
. "$top_srcdir/tests/integration/gateway_lib.sh"

tiny_model
MARKER="sdk-marker-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
A models put tiny --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 30 \
	--price-input 1 --price-cached-input 0.5 --price-output 2 >/dev/null || fail "models put tiny"
A models put scripted --max-input-tokens 4096 --max-output-tokens 4096 --max-request-s 30 \
	--price-input 1 --price-cached-input 0.5 --price-output 2 >/dev/null || fail "models put scripted"
A accounts create acme >/dev/null && A topup acme 5 >/dev/null || fail "account"
A accounts create broke >/dev/null || fail "broke account"
KEY=$(A keys create acme 2>/dev/null) || fail "key"
BROKE=$(A keys create broke 2>/dev/null) || fail "broke key"
KA=$(register 5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY)
KB=$(register 5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty)
KC=$(register 5FLSigC9HGRKVhB9FiEo4Y3koPsNmBmLJbpXg2mp1hXcS59Y)
ok "store: two models, two accounts, three miners"

# worker_start_inflight 16: the weights are the hellos' capacities from
# the start (a trusted pool), so the split below is exact.
gw_conf "  affinity_min_chars = 200
  worker_start_inflight = 16
  keepalive_s = 1
  first_token_timeout_s = 20"
"$ENGYD" -t -c "$T/gw.conf" >/dev/null 2>&1 || fail "engyd -t refuses the gateway config"
gw_start
[ "$(curl -s "http://127.0.0.1:$WSPORT/gw/meta")" = '{"workers":1}' ] || fail "GET /gw/meta"
ok "engyd -t accepts the config; GET /gw/meta on the miners' port says {\"workers\":1}"

# --- hello checks -------------------------------------------------------------
peer nokey good MINER_KEY=mk-engy-unknown MODEL=tiny
peer_wait nokey "deny reason=unknown miner key"
peer nomodel good MINER_KEY="$KC" MODEL=other
peer_wait nomodel "deny reason=this model is not served here"
peer small good MINER_KEY="$KC" MODEL=scripted MAX_INFLIGHT=4 WORKER_NAME=small
peer_wait small "deny reason=capacity.max_inflight_total 4 is below 8"
peer nototal good MINER_KEY="$KC" MODEL=scripted MAX_TOTAL=none WORKER_NAME=nototal
peer_wait nototal "deny reason=capacity.max_inflight_total is required"
for p in nokey nomodel small nototal; do peer_wait $p "closed code=1008"; done
ok "hello refused with its reason, then closed: unknown key, unknown model, total below 8, no total"

# --- the miners ---------------------------------------------------------------
miner mA "$KA" mA 8
miner mB "$KB" mB 16
peer scripted good MINER_KEY="$KC" MODEL=scripted WORKER_NAME=scripted MARKER="$MARKER"
peer_wait scripted admit
grep -q "event=worker_admitted .* name=mA model=tiny max_inflight=8 max_inflight_total=8 max_input_tokens=4096 max_output_tokens=64 max_request_s=30" "$T/gw.log" ||
	fail "mA admission: $(grep worker_admitted "$T/gw.log")"
ok "two engy miners and a scripted peer admitted; limits are min(model spec, hello)"

node "$top_srcdir/tests/integration/gateway_sdk.mjs" "$PEERS" "$BASE" "$KEY" "$BROKE" "$MARKER" \
	> "$T/sdk.out" 2>&1 || fail "SDK checks: $(cat "$T/sdk.out")"
n=$(grep -c "^ok - " "$T/sdk.out")
grep -q "^done checks=$n\$" "$T/sdk.out" || fail "SDK run incomplete: $(cat "$T/sdk.out")"
grep "^ok - " "$T/sdk.out" | sed 's/^ok - /  /'
ok "openai and @anthropic-ai/sdk against the gateway: $n checks"
wait_settled

# --- routing, from the request log --------------------------------------------
A log tail -n 100000 > "$T/log.txt"
worker_of() {  # request id -> worker name
	sed -n "s/.* request=$1 .* worker=\([^ ]*\) .*/\1/p" "$T/log.txt"
}
for tag in rr aff1 aff2 aff3; do
	: > "$T/route-$tag"
	for id in $(sed -n "s/^route tag=$tag request=//p" "$T/sdk.out"); do
		worker_of "$id" >> "$T/route-$tag"
	done
done
a=$(grep -c '^mA$' "$T/route-rr" || true)
b=$(grep -c '^mB$' "$T/route-rr" || true)
[ "$a" = 10 ] && [ "$b" = 20 ] || fail "round-robin by free capacity: mA=$a mB=$b, want 10 and 20"
ok "round-robin weighted by free capacity: 30 short prompts split mA=10 mB=20 (capacities 8 and 16)"
seen=""
for tag in aff1 aff2 aff3; do
	[ "$(wc -l < "$T/route-$tag")" = 6 ] || fail "$tag: $(cat "$T/route-$tag")"
	[ "$(sort -u "$T/route-$tag" | wc -l)" = 1 ] || fail "$tag spread over workers: $(sort "$T/route-$tag" | uniq -c)"
	seen="$seen $(head -1 "$T/route-$tag")"
done
ok "prefix affinity: each long prefix stayed on one worker ($seen )"

# Priority is a bias: mA back with priority 2 weighs 8 x 4 against mB's 16.
kill -TERM "$PID_mA"
wait "$PID_mA" && rc=0 || rc=$?
stopped_clean "miner mA" "$rc" "$T/mA.log" "$T/mA.stderr"
A miners set 5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY --priority 2 >/dev/null ||
	fail "miners set --priority"
miner mA2 "$KA" mA 8
grep -q "event=worker_admitted .* name=mA .*priority=2 " "$T/gw.log" || fail "priority not read"
: > "$T/prio.ids"
for i in $(seq 1 30); do
	curl -s -D - -o /dev/null "$BASE/v1/chat/completions" -H "Authorization: Bearer $KEY" \
		-d '{"model":"tiny","max_tokens":2,"messages":[{"role":"user","content":"p '"$i"'"}]}' |
		sed -n 's/^x-request-id: \(req_[0-9a-f]*\).*/\1/p' >> "$T/prio.ids"
done
wait_settled
A log tail -n 100000 > "$T/log.txt"
: > "$T/route-prio"
for id in $(cat "$T/prio.ids"); do worker_of "$id" >> "$T/route-prio"; done
a=$(grep -c '^mA$' "$T/route-prio" || true)
b=$(grep -c '^mB$' "$T/route-prio" || true)
[ "$((a + b))" = 30 ] && [ "$a" -ge 19 ] && [ "$a" -le 21 ] ||
	fail "priority 2: mA=$a mB=$b, want about 20 and 10"
ok "priority 2 doubles twice: mA (8 slots) now takes $a of 30 against mB's $b (16 slots)"

# --- money --------------------------------------------------------------------
money acme
[ "$SPENT" -gt 0 ] || fail "nothing spent"
ACME=$SPENT
money broke
[ "$SPENT" = 0 ] || fail "the broke account paid"
grep -q "status=402 .*cost=0.000000" "$T/log.txt" || fail "no 402 row"
ok "books balance: nothing reserved, balance = credited - spent, the log's costs = spent ($ACME micro-USD)"
# Each 200 row of the scripted model costs its usage on the price card
# (input 1, cached input 0.5, output 2 USD per million tokens, rounded up
# to the micro-dollar): 11 prompt + 3 completion -> 17; the clamped usage
# (20 prompt tokens, 5 of them cached, 12 completion): 15 + 2.5 + 24 -> 42.
grep "model=scripted .*status=200 " "$T/log.txt" > "$T/scripted.rows" || fail "no scripted 200 rows in the log"
grep -q "model=scripted .*status=200 prompt=20 cached=5 completion=12 .*cost=0.000042\$" "$T/scripted.rows" ||
	fail "no row settled on the clamped usage at 0.000042: $(cat "$T/scripted.rows")"
awk '{ p = c = k = cost = -1
	for (i = 1; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[1] == "prompt") p = kv[2]; else if (kv[1] == "cached") c = kv[2]
		else if (kv[1] == "completion") k = kv[2]; else if (kv[1] == "cost") cost = kv[2]
	}
	if (p < 0 || c < 0 || k < 0 || cost < 0) { print "unparsed: " $0; bad = 1; next }
	half = 2 * (p - c) + c + 4 * k	# half micro-dollars
	want = k == 0 ? 0 : int((half + 1) / 2)
	if (sprintf("%.6f", want / 1000000) != cost) { print "want " want " micro-USD: " $0; bad = 1 }
	n++ }
	END { if (bad) exit 1; print n }' "$T/scripted.rows" > "$T/scripted.check" ||
	fail "scripted rows priced wrong: $(cat "$T/scripted.check")"
ok "settled at the price card on the miner's (clamped) usage: $(cat "$T/scripted.check") scripted rows"

gw_stop
grep -q "event=drained" "$T/gw.log" || fail "no drain"
peer_wait scripted "reconnect"
ok "SIGTERM: the gateway drains and sends reconnect to its legs"
grep -q "level=err" "$T/gw.log" && fail "errors in the gateway log: $(grep level=err "$T/gw.log")"
ok "no error lines in the gateway log"
echo "$N_OK passed, 0 failed"
