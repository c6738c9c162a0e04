#!/bin/sh
# SPDX-License-Identifier: MIT
# The OpenAI Responses API, legacy completions and stop strings through
# engyd -c as a gateway, on 127.0.0.1: an engy miner on backend-ref with a
# generated tiny checkpoint (model "tiny": the text is noise, the shapes
# and counts are real), one on backend-sglang driving engy's serve on the
# same checkpoint (model "tiny-sgl"), a scripted miner peer (bad_miner.mjs
# good, model "scripted") whose output a request names exactly
# ("script:JSON"), and one that claims top_logprobs (model "hostile").
# Buyers: raw curl for the exact event order and the error bodies, then
# the client libraries nobody here tuned for (gateway_responses.mjs):
# openai 6 responses.create and completions.create, the Vercel AI SDK 6
# default openai(model), @ai-sdk/openai-compatible, LangChain ChatOpenAI
# (with useResponsesApi too), @anthropic-ai/sdk and ChatAnthropic with
# one-character stop sequences.  Then the books must balance.
#
# Expected values: the event names, their order and the object shapes are
# the OpenAI Responses API reference's (an independent source); the
# scripted texts and where a stop string cuts them are written here; the
# prices and counts come from engy's own price card and usage.
. "$top_srcdir/tests/integration/gateway_lib.sh"

for m in ai @ai-sdk/openai @ai-sdk/openai-compatible @langchain/openai @langchain/anthropic @langchain/core; do
	[ -d "$PEERS/$m" ] || skip_or_fail "no $m module in $PEERS"
done

tiny_model
A models put tiny --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 30 \
	--price-input 1 --price-cached-input 0.5 --price-output 2 >/dev/null || fail "models put tiny"
A models put scripted --max-input-tokens 4096 --max-output-tokens 4096 --max-request-s 30 \
	--price-input 1 --price-cached-input 0.5 --price-output 2 >/dev/null || fail "models put scripted"
A accounts create acme >/dev/null && A topup acme 5 >/dev/null || fail "account"
KEY=$(A keys create acme 2>/dev/null) || fail "key"
KA=$(register 5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY)
KC=$(register 5FLSigC9HGRKVhB9FiEo4Y3koPsNmBmLJbpXg2mp1hXcS59Y)
# (the gateway has the tiny checkpoint's tokenizer for "hostile" only:
# it names that worker's alternatives from their ids itself)
gw_conf "  keepalive_s = 1
  tokenizers = { \"hostile=$T/model\" }
  first_token_timeout_s = 20"
gw_start
miner mA "$KA" mA 8
peer scripted good MINER_KEY="$KC" MODEL=scripted WORKER_NAME=scripted CHUNK_MS=1
peer_wait scripted admit
# a scripted peer that says it serves top_logprobs and sends what a
# script names: too many alternatives, or malformed ones
A models put hostile --max-input-tokens 4096 --max-output-tokens 4096 --max-request-s 30 \
	--price-input 1 --price-cached-input 0.5 --price-output 2 >/dev/null || fail "models put hostile"
KH=$(register 5DAAnrj7VHTznn2AWBemMuyBwZWs6FNFjdyVXUeYum3PTXFy)
peer hostile good MINER_KEY="$KH" MODEL=hostile WORKER_NAME=hostile CHUNK_MS=1 CONSTRAINTS=top_logprobs
peer_wait hostile admit
# the same checkpoint on the production path: an engy miner on
# backend-sglang (model "tiny-sgl") driving engy's serve on backend-ref
A models put tiny-sgl --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 30 \
	--price-input 1 --price-cached-input 0.5 --price-output 2 >/dev/null || fail "models put tiny-sgl"
[ -f "$T/plug/backend-sglang.so" ] && [ -f "$T/plug/transport-http.so" ] || fail "backend-sglang.so and transport-http.so are needed"
cat > "$T/serve.conf" <<C
role = "serve"
state_dir = "$T/state-serve"
log_file = "$T/serve.log"
plugin "transport-http" { listen = {"127.0.0.1:0"} }
plugin "backend-ref" { checkpoint = "$T/model" threads = 1 }
C
"$ENGYD" --no-dlclose -c "$T/serve.conf" 2> "$T/serve.stderr" &
PIDS="$PIDS $!"
wait_for "$T/serve.log" "event=ready" 60 || fail "serve: $(cat "$T/serve.log" "$T/serve.stderr")"
SPORT=$(sed -n 's/.*inst=transport-http event=listen .*port=\([0-9]*\).*/\1/p' "$T/serve.log" | head -1)
KS=$(register 5HGjWAeFDfFCWPsjFQdVV2Msvz2XtMktvgocEZcCj68kUMaw)
cat > "$T/mS.conf" <<C
role = "miner"
state_dir = "$T/state-mS"
log_file = "$T/mS.log"
shutdown_timeout = 5
miner { model = "tiny-sgl" gpu_probe = false max_tokens = 16 }
plugin "transport-ws" { reconnect_min_ms = 100 reconnect_max_ms = 500 }
plugin "backend-sglang" { serve_urls = {"http://127.0.0.1:$SPORT"} checkpoint = "$T/model" }
plugin "verifier-toploc" { topk = 128 decode_batching_size = 32 }
C
GW="$GWURL" MINER_KEY="$KS" ENGY_WORKER_NAME=mS MAX_INFLIGHT=8 \
	"$ENGYD" --no-dlclose -c "$T/mS.conf" 2> "$T/mS.stderr" &
PIDS="$PIDS $!"
wait_for "$T/mS.log" "event=admit" 60 || fail "miner mS not admitted: $(tail -5 "$T/mS.log")"
ok "gateway, an engy miner (tiny), one on backend-sglang and engy's serve (tiny-sgl), a scripted peer (scripted) and one that claims top_logprobs (hostile)"

H="Authorization: Bearer $KEY"
post() {  # post PATH JSON [HEADER] -> body in $T/out, status in $T/status
	curl -s -o "$T/out" -w '%{http_code}' "$BASE$1" -H "$H" -H 'content-type: application/json' \
		${3:+-H "$3"} -d "$2" > "$T/status"
}
jq_() { node -e "const o=JSON.parse(require('fs').readFileSync('$T/out','utf8'));console.log($1)"; }

# --- routes --------------------------------------------------------------------
post /v1/nope '{"model":"tiny"}'
[ "$(cat "$T/status")" = 404 ] || fail "unknown route: $(cat "$T/status")"
grep -q 'no such route: POST /v1/nope' "$T/out" || fail "404 body: $(cat "$T/out")"
grep -q 'model_not_found' "$T/out" && fail "404 says model_not_found: $(cat "$T/out")"
grep -q '"code":"unknown_url"' "$T/out" || fail "404 code: $(cat "$T/out")"
curl -s -o "$T/out" -w '%{http_code}' "$BASE/v1/responses/resp_0123" -H "$H" > "$T/status"
[ "$(cat "$T/status")" = 404 ] && grep -q 'zero data retention' "$T/out" || fail "GET /v1/responses/ID: $(cat "$T/status") $(cat "$T/out")"
ok "an unknown route is a 404 naming the route (code unknown_url, not model_not_found); GET /v1/responses/ID says nothing is stored"

# --- Responses: plain ------------------------------------------------------------
post /v1/responses '{"model":"scripted","instructions":"Be brief.","input":"script:{\"pieces\":[\"Hel\",\"lo\"]}"}'
[ "$(cat "$T/status")" = 200 ] || fail "responses: $(cat "$T/status") $(cat "$T/out")"
[ "$(jq_ 'o.object+" "+o.status+" "+o.output.length+" "+o.output[0].type+" "+o.output[0].content[0].type+" "+o.output[0].content[0].text')" = \
	"response completed 1 message output_text Hello" ] || fail "response object: $(cat "$T/out")"
[ "$(jq_ 'o.usage.input_tokens+" "+o.usage.output_tokens+" "+o.usage.total_tokens+" "+o.store+" "+/^resp_[0-9a-f]{24}$/.test(o.id)')" = \
	"11 2 13 false true" ] || fail "response usage: $(cat "$T/out")"
ok "responses: a plain response (message item, output_text, usage, store false)"

# --- Responses: refused ----------------------------------------------------------
for f in '"store":true' '"previous_response_id":"resp_1"' '"conversation":"conv_1"'; do
	post /v1/responses '{"model":"scripted","input":"hi",'"$f"'}'
	[ "$(cat "$T/status")" = 400 ] || fail "$f: $(cat "$T/status")"
	grep -q 'zero data retention' "$T/out" || fail "$f: $(cat "$T/out")"
	grep -q '"type":"invalid_request_error"' "$T/out" || fail "$f shape: $(cat "$T/out")"
done
post /v1/responses '{"model":"scripted","input":[{"type":"item_reference","id":"msg_1"}]}'
[ "$(cat "$T/status")" = 400 ] && grep -q 'item_reference.*zero data retention' "$T/out" || fail "item_reference: $(cat "$T/out")"
post /v1/responses '{"model":"scripted","input":"hi","tools":[{"type":"web_search"}]}'
[ "$(cat "$T/status")" = 400 ] && grep -q '"param":"tools\[0\].type"' "$T/out" || fail "web_search tool: $(cat "$T/out")"
ok "responses: store, previous_response_id, conversation, item_reference refused saying why (zero data retention); a hosted tool is a 400 naming it"

# --- Responses: the exact event order of a stream with reasoning and a call ------
curl -sN "$BASE/v1/responses" -H "$H" -H 'content-type: application/json' \
	-d '{"model":"scripted","stream":true,"input":"weather?","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}' \
	> "$T/sse" || fail "stream"
sed -n 's/^event: //p' "$T/sse" | tr '\n' ' ' > "$T/events"
want="response.created response.in_progress response.output_item.added response.reasoning_summary_part.added response.reasoning_summary_text.delta response.reasoning_summary_text.done response.reasoning_summary_part.done response.output_item.done response.output_item.added response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done response.completed "
[ "$(cat "$T/events")" = "$want" ] || fail "event order: $(cat "$T/events")"
seqs=$(sed -n 's/^data: .*"sequence_number":\([0-9]*\).*/\1/p' "$T/sse" | tr '\n' ' ')
[ "$seqs" = "0 1 2 3 4 5 6 7 8 9 10 11 12 " ] || fail "sequence numbers: $seqs"
grep -q '"arguments":"{\\"city\\":\\"Paris\\",\\"days\\":3}"' "$T/sse" || fail "call arguments: $(cat "$T/sse")"
tail -3 "$T/sse" | grep -q '"usage":{"input_tokens":20,"input_tokens_details":{"cached_tokens":5},"output_tokens":12' ||
	fail "completed usage: $(tail -3 "$T/sse")"
ok "responses stream: created, in_progress, reasoning item, function_call item, completed with usage; sequence numbers 0..12"

# --- top_logprobs from a hostile worker -----------------------------------------------
# The worker's alternatives are checked: at most 20 per token, each a
# finite logprob <= 0, sorted, an id in the vocabulary of the gateway's
# tokenizer, which names them; anything else and the answer goes out with
# logprobs null (the text intact, billed as usual).  Expected values:
# OpenAI's bound of 20 (its API reference); the texts are the script's and
# the checkpoint's tokenizer.json's (read here).
for t in '{"n":10000}' '{"n":21}' '{"n":3,"bad":"positive"}' '{"n":3,"bad":"null"}' '{"n":3,"bad":"unsorted"}' '{"n":3,"bad":"bigid"}'; do
	post /v1/chat/completions '{"model":"hostile","logprobs":true,"top_logprobs":3,"messages":[{"role":"user","content":"script:{\"pieces\":[\"Hi\",\"!\"],\"top\":'"$(printf '%s' "$t" | sed 's/"/\\"/g')"'}"}]}'
	[ "$(cat "$T/status")" = 200 ] || fail "hostile $t: $(cat "$T/status") $(head -c 300 "$T/out")"
	[ "$(jq_ 'o.choices[0].message.content+" "+o.choices[0].logprobs')" = "Hi! null" ] ||
		fail "hostile $t relayed: $(head -c 600 "$T/out")"
done
post /v1/chat/completions '{"model":"hostile","logprobs":true,"top_logprobs":2,"messages":[{"role":"user","content":"script:{\"pieces\":[\"Hi\"],\"top\":{\"n\":20}}"}]}'
# ids 0 and 1 of the tokenizer.json's vocabulary (printable ASCII: their
# own text), not the worker's "a0" and "a1"
want=$(node -e 'const v = JSON.parse(require("fs").readFileSync(process.argv[1])).model.vocab;
	const inv = {}; for (const [k, i] of Object.entries(v)) inv[i] = k;
	if (!/^[!-~]$/.test(inv[0]) || !/^[!-~]$/.test(inv[1])) throw new Error("not printable");
	console.log(`${inv[0]}:-1 ${inv[1]}:-2`)' "$T/model/tokenizer.json") || fail "tokenizer.json"
[ "$(jq_ 'o.choices[0].logprobs.content[0].top_logprobs.map((a)=>a.token+":"+a.logprob).join(" ")')" = "$want" ] ||
	fail "20 alternatives, 2 asked, want $want: $(head -c 600 "$T/out")"
ok "top_logprobs: a worker's 10000 or 21 alternatives, a positive or null logprob, an unsorted list, an id out of the vocabulary: logprobs null, text intact; 20 sent, 2 asked: the first 2, named by the gateway's tokenizer"

# --- legacy completions ------------------------------------------------------------
post /v1/completions '{"model":"scripted","prompt":"script:{\"pieces\":[\"a\",\"b\"]}"}'
[ "$(jq_ 'o.object+" "+o.choices[0].text+" "+o.choices[0].finish_reason+" "+o.usage.completion_tokens+" "+/^cmpl-/.test(o.id)')" = \
	"text_completion ab stop 2 true" ] || fail "completion: $(cat "$T/out")"
grep -q "serve corr=.* max_tokens=16 " "$T/peer-scripted.out" || fail "completion default cap (16, as OpenAI's): $(tail -3 "$T/peer-scripted.out")"
post /v1/completions '{"model":"tiny","prompt":"Once upon a time"}'
[ "$(jq_ '["stop","length"].includes(o.choices[0].finish_reason)+" "+(o.usage.completion_tokens<=16)')" = "true true" ] ||
	fail "completion from the engy miner: $(cat "$T/out")"
ok "completions: text_completion from the scripted peer and from an engy miner (default max_tokens 16)"

# --- stop strings and finish reasons -------------------------------------------------
# The scripted peer ignores stop strings (as a public miner might): the
# gateway cuts.  "\n" and "}" sit inside longer pieces and across them.
post /v1/chat/completions '{"model":"scripted","stop":["\n"],"messages":[{"role":"user","content":"script:{\"pieces\":[\"ab\",\"c.\\nd\",\"ef\"]}"}]}'
[ "$(jq_ 'JSON.stringify(o.choices[0].message.content)+" "+o.choices[0].finish_reason')" = '"abc." stop' ] ||
	fail "stop \\n inside a piece: $(cat "$T/out")"
curl -sN "$BASE/v1/chat/completions" -H "$H" -H 'content-type: application/json' \
	-d '{"model":"scripted","stream":true,"stop":["END"],"messages":[{"role":"user","content":"script:{\"pieces\":[\"xE\",\"N\",\"Dyy\"]}"}]}' > "$T/sse"
sed -n 's/^data: \({.*\)/\1/p' "$T/sse" | node -e '
	let s = ""; for (const l of require("fs").readFileSync(0, "utf8").trim().split("\n")) {
		const c = JSON.parse(l).choices[0]; if (c && c.delta.content) s += c.delta.content; if (c && c.finish_reason) s += "|" + c.finish_reason }
	console.log(s)' > "$T/streamed"
[ "$(cat "$T/streamed")" = "x|stop" ] || fail "stop across chunks streamed: $(cat "$T/streamed") $(cat "$T/sse")"
ok "stop strings cut in the decoded text: \"\\n\" inside a piece, \"END\" across three chunks (nothing past it streamed)"
post /v1/messages '{"model":"scripted","max_tokens":50,"stop_sequences":["}"],"messages":[{"role":"user","content":"script:{\"pieces\":[\"{\\\"a\\\":1}\",\"tail\"]}"}]}' \
	'anthropic-version: 2023-06-01'
[ "$(jq_ 'o.content[0].text+" "+o.stop_reason+" "+o.stop_sequence')" = '{"a":1 stop_sequence }' ] ||
	fail "anthropic stop_sequence: $(cat "$T/out")"
ok "anthropic: stop_reason stop_sequence and the matched stop_sequence"
post /v1/chat/completions '{"model":"scripted","max_tokens":3,"messages":[{"role":"user","content":"script:{\"pieces\":[\"a\",\"b\",\"c\"],\"finish\":\"stop\"}"}]}'
[ "$(jq_ 'o.choices[0].finish_reason')" = length ] || fail "stop at max_tokens: $(cat "$T/out")"
ok "a worker's \"stop\" on a completion that used all of max_tokens is reported as length"

# --- a buyer who leaves a Responses stream pays for what reached it ----------------
A models put slow --max-input-tokens 4096 --max-output-tokens 4096 --max-request-s 60 \
	--price-input 1 --price-cached-input 0.5 --price-output 2 >/dev/null || fail "models put slow"
KB=$(register 5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty)
peer slowp slow MINER_KEY="$KB" MODEL=slow WORKER_NAME=slowp CHUNKS=40 CHUNK_MS=200
peer_wait slowp admit
cat > "$T/leave.mjs" <<'JS'
const [base, key] = process.argv.slice(2);
const ac = new AbortController();
const r = await fetch(`${base}/v1/responses`, { method: 'POST', signal: ac.signal,
	headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
	body: JSON.stringify({ model: 'slow', input: 'go', stream: true }) });
const rd = r.body.getReader(), dec = new TextDecoder();
let buf = '';
for (;;) {
	const { value, done } = await rd.read();
	if (done)
		break;
	buf += dec.decode(value);
	if (buf.includes('event: response.output_text.delta')) {
		ac.abort();
		break;
	}
}
console.log(buf.includes('event: response.created') && buf.includes('event: response.output_text.delta')
	? 'left after the first delta' : `unexpected: ${buf}`);
JS
node "$T/leave.mjs" "$BASE" "$KEY" > "$T/leave.out" 2>&1 || fail "leave: $(cat "$T/leave.out")"
grep -q "^left after the first delta" "$T/leave.out" || fail "leave: $(cat "$T/leave.out")"
peer_wait slowp "cancel corr="
wait_settled
A log tail -n 100000 > "$T/log.txt"
row=$(grep "model=slow .*status=499 " "$T/log.txt") || fail "no 499 row: $(grep model=slow "$T/log.txt")"
comp=$(echo "$row" | sed -n 's/.* completion=\([0-9]*\) .*/\1/p')
cost=$(echo "$row" | sed -n 's/.* cost=\([0-9.]*\).*/\1/p')
[ "$comp" -ge 1 ] && [ "$comp" -lt 40 ] && [ "$cost" != 0.000000 ] || fail "499 row: $row"
ok "a buyer who leaves a Responses stream: cancel to the miner, 499, billed for what reached it ($comp tokens, $cost USD)"

node "$top_srcdir/tests/integration/gateway_responses.mjs" "$PEERS" "$BASE" "$KEY" > "$T/sdk.out" 2>&1 ||
	fail "client checks: $(cat "$T/sdk.out")"
n=$(grep -c "^ok - " "$T/sdk.out")
grep -q "^done checks=$n\$" "$T/sdk.out" || fail "client run incomplete: $(cat "$T/sdk.out")"
grep "^ok - " "$T/sdk.out" | sed 's/^ok - /  /'
ok "client libraries against the gateway: $n checks"
wait_settled

# --- money -----------------------------------------------------------------------
money acme
[ "$SPENT" -gt 0 ] || fail "nothing spent"
A log tail -n 100000 > "$T/log.txt"
grep -v "status=200 \|status=499 " "$T/log.txt" | grep -v "cost=0.000000" && fail "a request that failed was charged"
# Each row costs its usage on the price card (input 1, cached input 0.5,
# output 2 USD per million tokens, rounded up to the micro-dollar).
awk '{ p = c = k = cost = -1
	for (i = 1; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[1] == "prompt") p = kv[2]; else if (kv[1] == "cached") c = kv[2]
		else if (kv[1] == "completion") k = kv[2]; else if (kv[1] == "cost") cost = kv[2]
	}
	if (p < 0 || c < 0 || k < 0 || cost < 0) { print "unparsed: " $0; bad = 1; next }
	half = 2 * (p - c) + c + 4 * k
	want = k == 0 ? 0 : int((half + 1) / 2)
	if (sprintf("%.6f", want / 1000000) != cost) { print "want " want " micro-USD: " $0; bad = 1 }
	n++ }
	END { if (bad) exit 1; print n }' "$T/log.txt" > "$T/priced" || fail "rows priced wrong: $(cat "$T/priced")"
ok "books balance: nothing reserved, balance = credited - spent, the log's costs = spent ($SPENT micro-USD); $(cat "$T/priced") rows each priced at the card"

gw_stop
grep -q "level=err" "$T/gw.log" && fail "errors in the gateway log: $(grep level=err "$T/gw.log")"
for s in Hello Paris 'Once upon'; do
	grep -q "$s" "$T/gw.log" "$T/mA.log" "$T/mS.log" && fail "content ($s) in a log"
done
ok "no error lines and no content in the logs"
echo "$N_OK passed, 0 failed"
