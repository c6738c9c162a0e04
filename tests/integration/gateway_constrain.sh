#!/bin/sh
# SPDX-License-Identifier: MIT
# Structured outputs and forced tool calls by constrained decoding, end to
# end on 127.0.0.1: engyd -c as a gateway, an engy miner on backend-ref
# with a generated tiny checkpoint (random weights: only the mask makes
# its output JSON), and the client libraries as buyers
# (gateway_constrain.mjs): openai@6 json_schema (strict), json_object and
# tool_choice required/named; @anthropic-ai/sdk output_config.format and
# tool_choice any/tool; the Vercel AI SDK 6 generateObject/streamObject
# (openai-compatible and anthropic providers) and forced tools; LangChain
# withStructuredOutput (ChatOpenAI, ChatAnthropic).  Each output is
# parsed and checked against its schema by zod or by a small validator
# written in the test (independent of engy).  Before the miner comes, and
# with a scripted peer that advertises nothing, a constrained request is
# a 400 that says why.  The books balance after.
. "$top_srcdir/tests/integration/gateway_lib.sh"

for m in ai @ai-sdk/openai-compatible @ai-sdk/anthropic @langchain/openai @langchain/anthropic zod; do
	[ -d "$PEERS/$m" ] || skip_or_fail "no $m module in $PEERS (run npm ci --prefix tests/peers)"
done

tiny_model
A models put tiny --max-input-tokens 4096 --max-output-tokens 400 --max-request-s 60 \
	--price-input 1 --price-cached-input 0.5 --price-output 2 >/dev/null || fail "models put tiny"
A accounts create acme >/dev/null && A topup acme 5 >/dev/null || fail "account"
KEY=$(A keys create acme 2>/dev/null) || fail "key"
KA=$(register 5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY)
KC=$(register 5FLSigC9HGRKVhB9FiEo4Y3koPsNmBmLJbpXg2mp1hXcS59Y)
gw_conf "  first_token_timeout_s = 30"
gw_start

# A worker that enforces nothing (the public miner's hello): 400, not a hint.
peer plain good MINER_KEY="$KC" MODEL=tiny WORKER_NAME=plain
peer_wait plain admit
code=$(curl -s -o "$T/r400" -w '%{http_code}' "$BASE/v1/chat/completions" -H "Authorization: Bearer $KEY" \
	-d '{"model":"tiny","max_tokens":50,"response_format":{"type":"json_object"},"messages":[{"role":"user","content":"x"}]}')
[ "$code" = 400 ] && grep -q 'no worker serving this model enforces structured outputs' "$T/r400" ||
	fail "json_object without a constrained worker: $code $(cat "$T/r400")"
code=$(curl -s -o "$T/r400" -w '%{http_code}' "$BASE/v1/messages" -H "x-api-key: $KEY" -H 'anthropic-version: 2023-06-01' \
	-d '{"model":"tiny","max_tokens":50,"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"x"}]}')
[ "$code" = 400 ] && grep -q 'no worker serving this model enforces forced tool calls' "$T/r400" ||
	fail "tool_choice any without a constrained worker: $code $(cat "$T/r400")"
code=$(curl -s -o "$T/r400" -w '%{http_code}' "$BASE/v1/chat/completions" -H "Authorization: Bearer $KEY" \
	-d '{"model":"tiny","max_tokens":50,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","format":"email"}}},"messages":[{"role":"user","content":"x"}]}')
[ "$code" = 400 ] && grep -q 'unsupported keyword \\"format\\"' "$T/r400" ||
	fail "unsupported schema feature: $code $(cat "$T/r400")"
kill -TERM "$PID_plain"
ok "no worker enforcing it: 400 naming structured outputs / forced tool calls; an unsupported keyword: 400 naming it"

miner mA "$KA" mA 8
grep -q 'hello=sent' "$T/mA.log" || fail "mA hello"
grep -q "event=worker_admitted .* name=mA " "$T/gw.log" || fail "mA admission"

node "$top_srcdir/tests/integration/gateway_constrain.mjs" "$PEERS" "$BASE" "$KEY" \
	> "$T/sdk.out" 2>&1 || fail "client checks: $(cat "$T/sdk.out")"
n=$(grep -c "^ok - " "$T/sdk.out")
grep -q "^done checks=$n\$" "$T/sdk.out" || fail "client run incomplete: $(cat "$T/sdk.out")"
grep "^ok - " "$T/sdk.out" | sed 's/^ok - /  /'
ok "client libraries against the gateway, constrained on an engy miner: $n checks"
wait_settled

# The same with the Qwen3.6 template (XML tool calls): a forced call is
# written in the hermes JSON form, which its parser reads too.
kill -TERM "$PID_mA"
wait "$PID_mA" && rc=0 || rc=$?
stopped_clean "miner mA" "$rc" "$T/mA.log" "$T/mA.stderr"
cat > "$T/m36.conf" <<C
role = "miner"
state_dir = "$T/state-m36"
log_file = "$T/m36.log"
shutdown_timeout = 5
miner { model = "tiny" gpu_probe = false max_tokens = 16 chat_template = "qwen3.6" }
plugin "transport-ws" { reconnect_min_ms = 100 reconnect_max_ms = 500 }
plugin "backend-ref" { checkpoint = "$T/model" threads = 1 max_batch = 4 }
plugin "verifier-toploc" { topk = 128 decode_batching_size = 32 }
C
GW="$GWURL" MINER_KEY="$KA" ENGY_WORKER_NAME=m36 MAX_INFLIGHT=8 \
	"$ENGYD" --no-dlclose -c "$T/m36.conf" 2> "$T/m36.stderr" &
PIDS="$PIDS $!"
wait_for "$T/m36.log" "event=admit" 30 || fail "m36 not admitted: $(tail -5 "$T/m36.log")"
grep -q "event=miner_prepared .*chat_template=qwen3.6 " "$T/m36.log" ||
	fail "m36 does not render qwen3.6: $(grep -m1 miner_prepared "$T/m36.log")"
node "$top_srcdir/tests/integration/gateway_constrain.mjs" "$PEERS" "$BASE" "$KEY" \
	> "$T/sdk36.out" 2>&1 || fail "client checks, qwen3.6: $(cat "$T/sdk36.out")"
n=$(grep -c "^ok - " "$T/sdk36.out")
grep -q "^done checks=$n\$" "$T/sdk36.out" || fail "client run incomplete (qwen3.6): $(cat "$T/sdk36.out")"
ok "the same $n checks on a miner rendering the Qwen3.6 template"
wait_settled
money acme
[ "$SPENT" -gt 0 ] || fail "nothing spent"
ok "books balance: nothing reserved, balance = credited - spent, the log's costs = spent ($SPENT micro-USD)"
