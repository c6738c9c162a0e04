#!/bin/sh
# SPDX-License-Identifier: MIT
# The serve role end to end on 127.0.0.1: engyd with transport-http and
# the scripted backend test-lm, driven with curl and with node's fetch (an
# independent HTTP client and SSE reader, tests/integration/serve_stream.mjs,
# which also predicts every answer from test-lm's published function).
# Every route, every error, streaming, abort by rid prefix, client
# disconnects, the queue, concurrency, and a draining shutdown.
# Oracle: independent: curl and node's fetch (serve_stream.mjs), which
# predicts every answer from test-lm's published function.
. "$top_srcdir/tests/integration/lib.sh"
command -v curl >/dev/null || fail "curl is required"
if ! command -v node >/dev/null; then
	skip_or_fail "node is required for the streaming client"
fi
MJS="$top_srcdir/tests/integration/serve_stream.mjs"

make_plugin_dir "$T/plug"
[ -f "$T/plug/test-lm.so" ] && [ -f "$T/plug/transport-http.so" ] ||
	fail "transport-http.so or test-lm.so not built"
# A byte-level tokenizer.json: id = byte (GPT-2's byte-to-unicode map,
# written as \u escapes), <|eos|> = 256 special.
mkdir -p "$T/model"
awk 'BEGIN {
	printf "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":256,\"content\":\"<|eos|>\",";
	printf "\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,";
	printf "\"special\":true}],\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\",";
	printf "\"add_prefix_space\":false,\"use_regex\":false},\"decoder\":{\"type\":\"ByteLevel\"},";
	printf "\"model\":{\"type\":\"BPE\",\"vocab\":{";
	n = 0;
	for (b = 0; b < 256; b++) {
		if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) c = b;
		else c = 256 + n++;
		printf "%s\"\\u%04x\":%d", (b ? "," : ""), c, b;
	}
	printf "},\"merges\":[]}}\n";
}' > "$T/model/tokenizer.json"

cat > "$T/serve.conf" <<C
role = "serve"
plugin_dir = "$T/plug"
state_dir = "$T/state"
log_file = "$T/serve.log"
metrics_listen = "127.0.0.1:0"
shutdown_timeout = 10
plugin "transport-http" { listen = {"127.0.0.1:0"} max_body = 65536 timeout_s = 5 }
plugin "test-lm" { model_path = "$T/model" delay_ms = 25 hidden_size = 8 max_context = 256 }
C
"$ENGYD" -t -c "$T/serve.conf" >/dev/null 2>&1 || fail "engyd -t refuses the serve config"
ok "engyd -t accepts a serve config"

# 80 floats of hidden states in a running event: 10 rows of 8, every row
# so far in each (sglang's way; serve_ref.sh checks the default).
ENGY_SERVE_MAX_RUNNING=2 ENGY_SERVE_MAX_QUEUED=8 ENGY_SERVE_STREAM_HIDDEN_MAX=80 \
	ENGY_SERVE_STREAM_HIDDEN_REPEAT=1 \
	"$ENGYD" -c "$T/serve.conf" 2> "$T/serve.stderr" &
PID=$!
PIDS="$PIDS $PID"
wait_for "$T/serve.log" "event=ready" 10 || fail "no ready line: $(cat "$T/serve.log" "$T/serve.stderr")"
PORT=$(sed -n 's/.*inst=transport-http event=listen .*port=\([0-9]*\).*/\1/p' "$T/serve.log" | head -1)
MPORT=$(sed -n 's/.*event=metrics_listen .*port=\([0-9]*\).*/\1/p' "$T/serve.log" | head -1)
[ -n "$PORT" ] && [ "$PORT" != 0 ] || fail "no bound port in the listen line"
grep -q 'event=serve_ready transport=transport-http backend=test-lm max_running=2 max_queued=8' \
	"$T/serve.log" || fail "serve_ready line: $(cat "$T/serve.log")"
ok "serve starts, logs the bound port, wires transport and backend"
U="http://127.0.0.1:$PORT"

post() {  # path body
	CODE=$(curl -s -o "$T/out" -w '%{http_code}' -H 'Content-Type: application/json' \
		--data-binary "$2" "$U$1")
}
get() {
	CODE=$(curl -s -o "$T/out" -w '%{http_code}' "$U$1")
}
js() {
	node "$MJS" get "$1" < "${2:-$T/out}"
}
verify() {  # input_csv n finish [opts] [file]
	opts=${4:-}
	[ -n "$opts" ] || opts='{}'
	node "$MJS" verify "$1" "$2" "$3" "$opts" < "${5:-$T/out}" > /dev/null ||
		fail "verify $1 $2 $3 $opts: $(head -c 800 "${5:-$T/out}")"
}
expect_err() {  # what code path body needle
	post "$3" "$4"
	[ "$CODE" = "$2" ] || fail "$1: HTTP $CODE, want $2: $(head -c 300 "$T/out")"
	msg=$(js error.message)
	case "$msg" in *"$5"*) ok "$1";; *) fail "$1: message '$msg' lacks '$5'";; esac
}
metric() {
	curl -s "http://127.0.0.1:$MPORT/metrics" | awk -v m="$1" 'index($0, m " ") == 1 { print $NF }'
}

# --- the small routes ---
get /health
[ "$CODE" = 200 ] && [ ! -s "$T/out" ] || fail "/health: $CODE"
ok "GET /health is 200 with an empty body"
get /get_model_info
[ "$CODE" = 200 ] || fail "/get_model_info: $CODE"
[ "$(js model_path)" = "$T/model" ] && [ "$(js tokenizer_path)" = "$T/model" ] &&
	[ "$(js is_generation)" = true ] && [ "$(js weight_version)" = default ] ||
	fail "/get_model_info body: $(cat "$T/out")"
get /model_info
[ "$CODE" = 200 ] && [ "$(js model_path)" = "$T/model" ] || fail "/model_info: $CODE"
ok "GET /get_model_info (and /model_info): model_path, is_generation"
get /nope
[ "$CODE" = 404 ] || fail "unknown route: $CODE"
get /generate
[ "$CODE" = 405 ] || fail "GET /generate: $CODE"
ok "unknown route 404, GET /generate 405"

# --- /generate, non-streaming ---
post /generate '{"input_ids":[10,20,30],"rid":"g-1","sampling_params":{"max_new_tokens":5,"temperature":0},"return_logprob":true,"return_hidden_states":true}'
[ "$CODE" = 200 ] || fail "generate: $CODE $(cat "$T/out")"
verify 10,20,30 5 length '{"rid":"g-1","logprob":true,"hidden":8,"temperature":0}'
ok "generate: ids, text, finish length, counts, logprobs, ragged hidden states of width 8"
post /generate '{"input_ids":[5,20,30],"sampling_params":{"max_new_tokens":4},"return_hidden_states":true}'
verify 5,20,30 4 length '{"hidden":8,"cache_hit":true}'
ok "a full prefix-cache hit (token 0 without a row): an empty prefill block, as sglang's"
post /generate '{"input_ids":[10,20,30],"sampling_params":{"max_new_tokens":5}}'
verify 10,20,30 5 length
[ "$(js meta_info.id | wc -c)" = 33 ] || fail "generated rid: $(js meta_info.id)"
ok "without rid: a 32-hex rid, no logprob or hidden keys"
post /generate '{"input_ids":[1,2,5],"sampling_params":{"max_new_tokens":10}}'
verify 1,2,5 10 stop
[ "$(js meta_info.finish_reason.matched)" = 256 ] || fail "EOS matched"
ok "EOS: finish stop, matched the EOS id, kept in output_ids, not in text"
STOP=$(node "$MJS" model 10,20,30 3 | sed 's/.*,\([0-9]*\)]/\1/')
post /generate "{\"input_ids\":[10,20,30],\"sampling_params\":{\"max_new_tokens\":10,\"stop_token_ids\":[$STOP]}}"
verify 10,20,30 10 stop "{\"stop\":[$STOP]}"
post /generate "{\"input_ids\":[10,20,30],\"sampling_params\":{\"max_new_tokens\":10,\"stop_token_ids\":[$STOP],\"no_stop_trim\":true}}"
verify 10,20,30 10 stop "{\"stop\":[$STOP],\"no_stop_trim\":true}"
ok "stop_token_ids: matched id ends it, trimmed from text unless no_stop_trim"
post /generate '{"input_ids":[1,3,5],"sampling_params":{"max_new_tokens":9},"return_logprob":true,"return_text_in_logprobs":true}'
verify 1,3,5 9 stop '{"logprob":true,"token_text":true}'
ok "return_text_in_logprobs: each token's own text, specials included"
post /generate '{"text":"zqxjk","sampling_params":{"max_new_tokens":4}}'
verify 122,113,120,106,107 4 length
ok "text prompts are encoded with the checkpoint's tokenizer"
post /generate '{"input_ids":[10,20,30],"sampling_params":{"max_new_tokens":6,"temperature":0.7,"sampling_seed":5}}'
verify 10,20,30 6 length '{"temperature":0.7,"seed":5}'
A=$(js output_ids)
post /generate '{"input_ids":[10,20,30],"sampling_params":{"max_new_tokens":6,"temperature":0.7,"sampling_seed":5}}'
[ "$(js output_ids)" = "$A" ] || fail "same seed, other ids"
ok "sampling_seed reaches the backend; the same seed gives the same ids"
post /generate '{"input_ids":[10,20,30],"sampling_params":{"max_new_tokens":0}}'
[ "$CODE" = 200 ] && [ "$(js output_ids)" = "[]" ] &&
	[ "$(js meta_info.finish_reason.type)" = length ] || fail "max_new_tokens 0: $(cat "$T/out")"
ok "max_new_tokens 0 answers at once with nothing generated"

# --- errors ---
expect_err "malformed JSON is 400" 400 /generate '{"input_ids":[1,2' "Invalid JSON"
expect_err "input_ids of the wrong type is 400" 400 /generate '{"input_ids":"1 2"}' "input_ids must be a list"
expect_err "no prompt is 400" 400 /generate '{"sampling_params":{}}' "Either text or input_ids"
expect_err "bad sampling value is 400" 400 /generate '{"input_ids":[5],"sampling_params":{"top_p":2}}' "top_p"
expect_err "unknown sampling key is 400" 400 /generate '{"input_ids":[5],"sampling_params":{"tempurature":0}}' "Unknown sampling parameter"
expect_err "batch is refused clearly" 400 /generate '{"input_ids":[[5],[6]]}' "Batch requests"
LONG=$(awk 'BEGIN { for (i = 0; i < 300; i++) printf "%s%d", (i ? "," : ""), 40 + i % 50 }')
expect_err "an input over the context is 400" 400 /generate "{\"input_ids\":[$LONG]}" \
	"The input (300 tokens) is longer than the model's context length (256 tokens)."
expect_err "input + max_new_tokens over the context is 400" 400 /generate \
	'{"input_ids":[5,6],"sampling_params":{"max_new_tokens":254}}' "exceeds the model's maximum context length of 256"
expect_err "an id outside the vocabulary is 400" 400 /generate '{"input_ids":[5,300]}' "outside the vocabulary"
expect_err "a scripted backend failure is 500" 500 /generate '{"input_ids":[2,3,9]}' "backend error: scripted failure"
expect_err "a failing generate() is 500" 500 /generate '{"input_ids":[3,3,9]}' "generate failed"
expect_err "abort_request with a bad rid is 400" 400 /abort_request '{"rid":5}' "rid must be a string"
head -c 70000 /dev/zero | tr '\0' ' ' > "$T/big"
CODE=$(curl -s -o "$T/out" -w '%{http_code}' --data-binary "@$T/big" "$U/generate")
[ "$CODE" = 413 ] || fail "body over max_body: $CODE"
ok "a body over max_body is 413"
# sglang reports checks made after the stream began inside the stream.
node "$MJS" stream "$U/generate" "{\"input_ids\":[$LONG],\"stream\":true}" > "$T/serr.json" ||
	fail "stream of an error"
node -e 'const s = JSON.parse(require("fs").readFileSync(process.argv[1]));
	if (s.events !== 1 || !/longer than/.test(s.final.error.message)) process.exit(1)' "$T/serr.json" ||
	fail "streamed error: $(cat "$T/serr.json")"
ok "streamed: a validation error is one data: {\"error\":...} event, then [DONE]"

# --- streaming (node reads the SSE as it arrives) ---
B='{"input_ids":[40,50,60],"rid":"st-1","stream":true,"sampling_params":{"max_new_tokens":24},"return_logprob":true,"return_hidden_states":true}'
node "$MJS" stream "$U/generate" "$B" > "$T/st.json" || fail "stream client"
js final "$T/st.json" > "$T/st_final.json"
verify 40,50,60 24 length '{"rid":"st-1","logprob":true,"hidden":8}' "$T/st_final.json"
RUN=$(js running "$T/st.json"); FIRST=$(js first_ms "$T/st.json"); LAST=$(js last_ms "$T/st.json")
[ "$RUN" -ge 3 ] || fail "only $RUN events before the final one"
[ $((LAST - FIRST)) -ge 100 ] || fail "events not incremental: first at $FIRST ms, last at $LAST ms"
[ "$(js reads "$T/st.json")" -ge 3 ] || fail "the body came in one read"
post /generate "$(echo "$B" | sed 's/"stream":true/"stream":false/; s/st-1/st-2/')"
[ "$(js output_ids)" = "$(js output_ids "$T/st_final.json")" ] &&
	[ "$(js text)" = "$(js text "$T/st_final.json")" ] ||
	fail "stream and non-stream differ: $(cat "$T/out") vs $(cat "$T/st_final.json")"
[ -z "$(js hidden_bad "$T/st.json")" ] || fail "hidden states while streaming: $(js hidden_bad "$T/st.json")"
HR=$(js hidden_running "$T/st.json")
[ "$HR" -ge 2 ] && [ "$HR" -lt "$RUN" ] && [ "$(js hidden_max_rows "$T/st.json")" -le 10 ] ||
	fail "$HR of $RUN running events with hidden states, up to $(js hidden_max_rows "$T/st.json") rows (cap: 10)"
ok "streaming: $RUN cumulative events over $((LAST - FIRST)) ms ($HR with every hidden row so far, up to stream_hidden_max), then the final one (all hidden states) and [DONE]; same answer as non-streaming"
node "$MJS" stream "$U/generate" '{"input_ids":[4,5],"stream":true,"sampling_params":{"max_new_tokens":20}}' > "$T/utf.json" ||
	fail "utf-8 stream"
js final "$T/utf.json" > "$T/utf_final.json"
verify 4,5 20 length '{}' "$T/utf_final.json"
[ "$(js running "$T/utf.json")" -ge 10 ] || fail "utf-8 stream: $(cat "$T/utf.json")"
ok "streaming holds back characters split over tokens; the final text is exact"

# --- abort by rid prefix while streaming ---
STREAM_PROGRESS="$T/s10.progress" node "$MJS" stream "$U/generate" '{"input_ids":[10,20,30],"rid":"job-10","stream":true,"sampling_params":{"max_new_tokens":200}}' > "$T/s10.json" &
S10=$!
curl -s -o "$T/a11" --data-binary '{"input_ids":[11,20,30],"rid":"job-11","sampling_params":{"max_new_tokens":200}}' "$U/generate" &
A11=$!
curl -s -o "$T/a2" --data-binary '{"input_ids":[12,20,30],"rid":"job-2","sampling_params":{"max_new_tokens":12}}' "$U/generate" &
A2=$!
wait_for "$T/serve.log" "inst=test-lm event=generate rid=job-10 " 5 || fail "job-10 never ran"
# The abort meets all three in generation, and job-10 under way at its client.
wait_for "$T/serve.log" "inst=test-lm event=generate rid=job-11 " 5 || fail "job-11 never ran"
wait_for "$T/serve.log" "inst=test-lm event=generate rid=job-2 " 5 || fail "job-2 never ran"
wait_for "$T/s10.progress" "^event 1\$" 5 || fail "job-10's client got no event"
post /abort_request '{"rid":"job-1"}'
[ "$CODE" = 200 ] && [ ! -s "$T/out" ] || fail "abort_request: $CODE"
wait $S10 || fail "stream client of job-10"
wait $A11 $A2
[ "$(js final.meta_info.finish_reason.type "$T/s10.json")" = abort ] || fail "job-10: $(cat "$T/s10.json")"
[ "$(js running "$T/s10.json")" -ge 1 ] || fail "job-10 streamed nothing before the abort"
[ "$(js meta_info.finish_reason.type "$T/a11")" = abort ] || fail "job-11: $(cat "$T/a11")"
verify 12,20,30 12 length '{}' "$T/a2"
grep -q "inst=test-lm event=cancel rid=job-10 " "$T/serve.log" || fail "the backend never saw job-10's cancel"
if grep -q "event=cancel rid=job-2 " "$T/serve.log"; then fail "job-2 was cancelled"; fi
ok "abort_request job-1: job-10 (streaming) and job-11 end with finish abort, the backend is cancelled, job-2 runs on"

# --- clients that disconnect mid-request ---
# Each client goes once the serve has logged its request (200 tokens at
# 25 ms: 5 s of work left), not after a fixed time that a loaded machine
# could spend before the request is even sent.
for g in "gone-s,true" "gone-n,false"; do
	curl -sN --data-binary '{"input_ids":[10,20,30],"rid":"'"${g%,*}"'","stream":'"${g#*,}"',"sampling_params":{"max_new_tokens":200}}' \
		"$U/generate" > /dev/null &
	C=$!
	wait_for "$T/serve.log" "event=request rid=${g%,*} " 30 || fail "${g%,*} never came"
	kill "$C"
	wait "$C" 2>/dev/null && fail "${g%,*}: curl ended before it was killed"
done
wait_for "$T/serve.log" "event=request_done rid=gone-s result=gone" 5 || fail "gone-s not ended as gone"
wait_for "$T/serve.log" "event=request_done rid=gone-n result=gone" 5 || fail "gone-n not ended as gone"
grep -q "inst=test-lm event=cancel rid=gone-s " "$T/serve.log" &&
	grep -q "inst=test-lm event=cancel rid=gone-n " "$T/serve.log" || fail "backend not cancelled on disconnect"
[ "$(metric 'engy_serve_requests_total{result="gone"}')" = 2 ] || fail "gone not counted"
ok "a client that disconnects cancels its backend work and is counted as gone"

# --- concurrency: 8 at once (2 running, the rest queued) ---
P=""
for i in 1 2 3 4 5 6 7 8; do
	curl -s -o "$T/par$i" --data-binary "{\"input_ids\":[$((i + 10)),$((i * 3)),50],\"sampling_params\":{\"max_new_tokens\":6}}" "$U/generate" &
	P="$P $!"
done
wait $P
for i in 1 2 3 4 5 6 7 8; do
	verify "$((i + 10)),$((i * 3)),50" 6 length '{}' "$T/par$i"
done
ok "8 concurrent requests all answered correctly"
# Two long requests hold both running slots (whatever this machine's
# speed), then ten more come: eight queue, two are refused; aborting the
# two lets the queue run.
HP=""
for h in 1 2; do
	curl -s -o "$T/hold$h" --data-binary "{\"input_ids\":[9,$h,9],\"rid\":\"hold-$h\",\"sampling_params\":{\"max_new_tokens\":240}}" "$U/generate" &
	HP="$HP $!"
	wait_for "$T/serve.log" "inst=test-lm event=generate rid=hold-$h " 30 || fail "hold-$h never ran"
done
P=""
for i in 1 2 3 4 5 6 7 8 9 10; do
	curl -s -o "$T/q$i" -w '%{http_code}\n' --data-binary "{\"input_ids\":[$((i + 10)),7,7],\"sampling_params\":{\"max_new_tokens\":16}}" "$U/generate" > "$T/q$i.code" &
	P="$P $!"
done
refused() {  # the q*.code files that hold 503
	grep -l '^503$' "$T"/q*.code 2> /dev/null | wc -l
}
i=0
while [ "$(metric engy_serve_queued)" != 8 ] || [ "$(refused)" != 2 ]; do
	i=$((i + 1)); [ $i -le 600 ] || fail "queue: $(metric engy_serve_queued) queued, $(refused) refused"
	sleep 0.05
done
[ "$(metric engy_serve_running)" = 2 ] || fail "running: $(metric engy_serve_running)"
post /abort_request '{"rid":"hold-"}'
[ "$CODE" = 200 ] || fail "abort_request: $CODE"
wait $HP $P
for h in 1 2; do
	[ "$(js meta_info.finish_reason.type "$T/hold$h")" = abort ] || fail "hold-$h: $(cat "$T/hold$h")"
done
N503=0
for i in 1 2 3 4 5 6 7 8 9 10; do
	case $(cat "$T/q$i.code") in
	200) verify "$((i + 10)),7,7" 16 length '{}' "$T/q$i";;
	503) N503=$((N503 + 1)); [ "$(js error.message "$T/q$i")" = "The request queue is full." ] ||
		fail "503 body: $(cat "$T/q$i")";;
	*) fail "queue test: HTTP $(cat "$T/q$i.code")";;
	esac
done
[ "$N503" = 2 ] || fail "$N503 of 10 refused with 2 running + 8 queued"
ok "past 2 running + 8 queued: 503 \"The request queue is full.\" (2 of 10 more), the queued ones answered"

# --- nothing left behind, nothing leaked into the log ---
for m in engy_serve_running engy_serve_queued test_lm_active; do
	[ "$(metric "$m")" = 0 ] || fail "$m is $(metric "$m")"
done
[ "$(metric 'engy_http_inflight{instance="transport-http"}')" = 0 ] || fail "http inflight"
[ "$(metric 'engy_http_requests_total{instance="transport-http",status="413"}')" = 1 ] || fail "413 count"
ok "metrics: nothing running, queued or in flight; statuses counted"
TXT=$(js text "$T/st_final.json")
if grep -qF "$TXT" "$T/serve.log" || grep -q zqxjk "$T/serve.log"; then
	fail "prompt or completion text in the log"
fi
if grep -q "input_ids\|output_ids" "$T/serve.log"; then fail "ids in the log"; fi
ok "the log holds no prompt, completion or ids"

# --- SIGTERM drains: an open request completes, then exit 0 ---
curl -s -o "$T/drain" --data-binary '{"input_ids":[10,20,30],"rid":"drain-1","sampling_params":{"max_new_tokens":20}}' "$U/generate" &
D=$!
wait_for "$T/serve.log" "inst=test-lm event=generate rid=drain-1 " 5 || fail "drain-1 never ran"
kill -TERM "$PID"
wait_for "$T/serve.log" "inst=transport-http event=stopping" 5 || fail "transport not stopped"
RC=0
curl -s -o /dev/null "$U/health" || RC=$?
[ "$RC" = 7 ] || fail "a new connection during the drain: curl $RC"
wait $D
verify 10,20,30 20 length '{}' "$T/drain"
RC=0
wait "$PID" || RC=$?
[ "$RC" = 0 ] || fail "engyd exit $RC: $(tail "$T/serve.log") $(cat "$T/serve.stderr")"
grep -q "event=drained" "$T/serve.log" || fail "no drained line"
if grep -q "Sanitizer" "$T/serve.stderr"; then fail "sanitizer report: $(cat "$T/serve.stderr")"; fi
ok "SIGTERM: new connections refused, the open request completes, exit 0"
echo "$N_OK passed, 0 failed"
