#!/bin/sh
# SPDX-License-Identifier: MIT
# engy's serve as the project's own sglang client sees it: serve A puts
# backend-ref on sglang's API; serve B answers the same API through
# backend-sglang, which drives A exactly as it drives a real sglang serve
# (written independently, against sglang's API).  Whatever B answers
# must equal A's own answer, hidden states byte for byte, and cancelling
# at B must stop the work at A.  This is a self-consistency check: both
# answers are engy's (backend-ref's numbers are checked against an
# independent numpy forward pass in backend_ref_reference.sh); what it
# shows is that backend-sglang's client loses and changes nothing.  Every
# field compared must be present in both answers.
# Oracle: engy against engy (stated below): serve B's answers through
# backend-sglang must equal serve A's.
. "$top_srcdir/tests/integration/lib.sh"
command -v curl >/dev/null || fail "curl is required"
for p in backend-ref backend-sglang transport-http; do
	if [ ! -f "$top_builddir/plugins/$p/.libs/$p.so" ]; then
		skip_or_fail "$p not built"
	fi
done
if ! command -v node >/dev/null; then
	skip_or_fail "node is required"
fi
MJS="$top_srcdir/tests/integration/serve_stream.mjs"
"$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 5 --out "$T/model" --quiet || fail "mkmodel"
make_plugin_dir "$T/plug"

start() {  # name backend-section
	cat > "$T/$1.conf" <<C
role = "serve"
plugin_dir = "$T/plug"
state_dir = "$T/state-$1"
log_file = "$T/$1.log"
plugin "transport-http" { listen = {"127.0.0.1:0"} }
$2
C
	# --no-dlclose: see serve_ref.sh (CUDA libraries and leak checkers).
	"$ENGYD" --no-dlclose -c "$T/$1.conf" 2> "$T/$1.stderr" &
	eval "PID_$1=$!"
	PIDS="$PIDS $!"
	wait_for "$T/$1.log" "event=ready" 10 || fail "$1: $(cat "$T/$1.log" "$T/$1.stderr")"
	eval "PORT_$1=$(sed -n 's/.*inst=transport-http event=listen .*port=\([0-9]*\).*/\1/p' "$T/$1.log" | head -1)"
}
start a "plugin \"backend-ref\" { checkpoint = \"$T/model\" threads = 1 }"
start b "plugin \"backend-sglang\" { serve_urls = {\"http://127.0.0.1:$PORT_a\"} checkpoint = \"$T/model\" }"
wait_for "$T/b.log" "event=serve_info" 10 || fail "backend-sglang never read A's model info"
ok "serve B (backend-sglang) reads serve A's (backend-ref) model info"

js() {
	node "$MJS" get "$1" < "$2"
}
same() {  # field file file: present in both (not null, not empty) and equal
	va=$(js "$1" "$2") || fail "$1: unreadable $2"
	vb=$(js "$1" "$3") || fail "$1: unreadable $3"
	case "$va" in undefined|null|''|'[]'|'{}') fail "$1 missing in $2: $(head -c 300 "$2")";; esac
	case "$vb" in undefined|null|''|'[]'|'{}') fail "$1 missing in $3: $(head -c 300 "$3")";; esac
	[ "$va" = "$vb" ] || fail "$1 differs: $(echo "$va" | head -c 200) / $(echo "$vb" | head -c 200)"
}
B='{"input_ids":[10,20,30,40],"sampling_params":{"temperature":0,"max_new_tokens":12},"return_hidden_states":true,"return_logprob":true}'
code=$(curl -s -o "$T/ra" -w '%{http_code}' --data-binary "$B" "http://127.0.0.1:$PORT_a/generate")
[ "$code" = 200 ] || fail "A: HTTP $code: $(head -c 300 "$T/ra")"
code=$(curl -s -o "$T/rb" -w '%{http_code}' --data-binary "$B" "http://127.0.0.1:$PORT_b/generate")
[ "$code" = 200 ] || fail "B: HTTP $code: $(head -c 300 "$T/rb")"
for f in output_ids text meta_info.finish_reason meta_info.completion_tokens \
	 meta_info.prompt_tokens meta_info.output_token_logprobs meta_info.hidden_states; do
	same "$f" "$T/ra" "$T/rb"
done
[ "$(js meta_info.completion_tokens "$T/rb")" -ge 1 ] || fail "nothing generated"
ok "through backend-sglang: the same ids, text, finish, logprobs and hidden states as A's own answer"

node "$MJS" stream "http://127.0.0.1:$PORT_b/generate" "$(echo "$B" | sed 's/^{/{"stream":true,/')" > "$T/sb.json" ||
	fail "stream through B"
js final "$T/sb.json" > "$T/sb_final"
for f in output_ids text meta_info.finish_reason meta_info.hidden_states; do
	same "$f" "$T/ra" "$T/sb_final"
done
ok "streamed through B: A's answer"

# top_logprobs_num through backend-sglang: B asks A for the alternatives
# and answers the same output_top_logprobs (texts made by each serve from
# the ids), plain and streamed.
TB='{"input_ids":[10,20,30,40],"sampling_params":{"temperature":0,"max_new_tokens":8},"return_logprob":true,"top_logprobs_num":3,"return_text_in_logprobs":true}'
code=$(curl -s -o "$T/ta" -w '%{http_code}' --data-binary "$TB" "http://127.0.0.1:$PORT_a/generate")
[ "$code" = 200 ] || fail "A top: HTTP $code: $(head -c 300 "$T/ta")"
code=$(curl -s -o "$T/tb" -w '%{http_code}' --data-binary "$TB" "http://127.0.0.1:$PORT_b/generate")
[ "$code" = 200 ] || fail "B top: HTTP $code: $(head -c 300 "$T/tb")"
node "$MJS" stream "http://127.0.0.1:$PORT_b/generate" "$(echo "$TB" | sed 's/^{/{"stream":true,/')" > "$T/tsb.json" ||
	fail "top stream through B"
js final "$T/tsb.json" > "$T/tsb_final"
for f in output_ids meta_info.output_token_logprobs meta_info.output_top_logprobs meta_info.input_top_logprobs; do
	same "$f" "$T/ta" "$T/tb"
	same "$f" "$T/ta" "$T/tsb_final"
done
[ "$(js meta_info.output_top_logprobs.0.length "$T/tb")" = 3 ] || fail "not 3 alternatives: $(head -c 300 "$T/tb")"
ok "top_logprobs_num 3 through B: A's output_top_logprobs, plain and streamed"

# sampling_params.json_schema (sglang's): A masks backend-ref's sampling;
# B passes it on through backend-sglang.  The output is checked by
# JSON.parse and a direct reading of the schema (not engy's code).
SCH='{\"type\":\"object\",\"properties\":{\"k\":{\"enum\":[\"a\",\"b\"]},\"n\":{\"type\":\"integer\"},\"s\":{\"type\":\"string\",\"maxLength\":6}},\"required\":[\"k\",\"n\",\"s\"],\"additionalProperties\":false}'
J='{"input_ids":[10,20,30,40],"sampling_params":{"temperature":1,"sampling_seed":7,"max_new_tokens":200,"json_schema":"'"$SCH"'"},"return_hidden_states":true}'
for n in a b; do
	eval "port=\$PORT_$n"
	code=$(curl -s -o "$T/j$n" -w '%{http_code}' --data-binary "$J" "http://127.0.0.1:$port/generate")
	[ "$code" = 200 ] || fail "json_schema at $n: HTTP $code: $(head -c 300 "$T/j$n")"
	node -e '
		const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
		const v = JSON.parse(r.text);
		const keys = Object.keys(v).join(",");
		if (keys !== "k,n,s" || !["a", "b"].includes(v.k) || !Number.isInteger(v.n) ||
		    typeof v.s !== "string" || [...v.s].length > 6 || r.meta_info.finish_reason.type !== "stop")
			throw new Error("does not match: " + r.text);' < "$T/j$n" || fail "json_schema at $n: $(head -c 300 "$T/j$n")"
done
for f in output_ids text meta_info.hidden_states; do
	same "$f" "$T/ja" "$T/jb"
done
ok "sampling_params.json_schema: A's output matches the schema; B (through backend-sglang) gives the same ids and hidden states"
for bad in '"regex":"a+"' '"ebnf":"root ::= \"a\""' '"json_schema":"{\"type\":\"string\",\"pattern\":\"a\"}"'; do
	code=$(curl -s -o "$T/jbad" -w '%{http_code}' --data-binary '{"input_ids":[1],"sampling_params":{'"$bad"'}}' "http://127.0.0.1:$PORT_a/generate")
	[ "$code" = 400 ] || fail "$bad: HTTP $code: $(head -c 300 "$T/jbad")"
	grep -q 'regex is not supported\|ebnf is not supported\|unsupported keyword \\"pattern\\"' "$T/jbad" || fail "$bad: $(head -c 300 "$T/jbad")"
done
ok "regex, ebnf and a schema outside the subset: 400 naming them"

node "$MJS" stream "http://127.0.0.1:$PORT_b/generate" '{"input_ids":[5,6,7],"stream":true,"rid":"chain-1","sampling_params":{"temperature":0,"max_new_tokens":3000}}' > "$T/ab.json" &
S=$!
# A has the request: B sent it, so B knows its rid.
wait_for "$T/a.log" "event=request rid=chain-1 " 10 || fail "chain-1 never reached A"
CODE=$(curl -s -o /dev/null -w '%{http_code}' --data-binary '{"rid":"chain-"}' "http://127.0.0.1:$PORT_b/abort_request")
[ "$CODE" = 200 ] || fail "abort at B: $CODE"
wait $S || fail "stream client"
[ "$(js final.meta_info.finish_reason.type "$T/ab.json")" = abort ] || fail "B's answer: $(head -c 300 "$T/ab.json")"
wait_for "$T/a.log" "event=request_done rid=chain-1 " 5 || fail "A kept generating"
grep "event=request_done rid=chain-1 " "$T/a.log" | grep -Eq "result=(gone|abort)" || fail "A: $(grep chain-1 "$T/a.log")"
ok "abort_request at B ends the request at B (finish abort) and stops A's work"

for n in a b; do
	eval "kill -TERM \$PID_$n"
	RC=0
	eval "wait \$PID_$n" || RC=$?
	[ "$RC" = 0 ] || fail "$n exit $RC: $(cat "$T/$n.stderr")"
	if grep -q Sanitizer "$T/$n.stderr"; then fail "$n: $(cat "$T/$n.stderr")"; fi
done
ok "both exit cleanly"
echo "$N_OK passed, 0 failed"
