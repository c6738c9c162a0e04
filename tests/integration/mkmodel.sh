#!/bin/sh
# engyctl mkmodel: usage errors, byte-identical output for the same options,
# the seed and --quant changing what they should and nothing else, the
# tokenizer loading in lib/tokenizer and round-tripping text, the chat
# template rendering as engy's Qwen3 renderer does (peer: @huggingface/jinja
# when installed), and the generated model saying something varied.
# Oracle: byte-identical reruns and seed effects (self-consistency); the
# tokenizer round trip and @huggingface/jinja for the chat template when
# installed.
. "$top_srcdir/tests/integration/lib.sh"

"$ENGYCTL" mkmodel >/dev/null 2>&1 && fail "mkmodel without options ran"
[ $? -eq 2 ] || fail "mkmodel without options: not a usage error"
ok "options are required (exit 2)"
expect_fail "an unknown arch is named" "--arch 'llama'" \
  "$ENGYCTL" mkmodel --arch llama --size tiny --seed 1 --out "$T/x"
expect_fail "an unknown size is named" "--size 'huge'" \
  "$ENGYCTL" mkmodel --arch qwen3 --size huge --seed 1 --out "$T/x"
expect_fail "a bad seed is named" "--seed '-3'" \
  "$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed -3 --out "$T/x"
expect_fail "a bad quant is named" "--quant 'int3'" \
  "$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 1 --out "$T/x" --quant int3
expect_fail "a shared expert needs MoE" "needs --arch qwen3-moe" \
  "$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 1 --out "$T/x" --shared-expert
expect_ok "progress goes to stderr" "mkmodel: layer 2/2" \
  "$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 1 --out "$T/p"

FILES="config.json generation_config.json model.safetensors tokenizer.json tokenizer_config.json"
for arch in qwen3 qwen3-moe; do
  for q in "" "--quant int4"; do
    # shellcheck disable=SC2086 # q is a word list
    "$ENGYCTL" mkmodel --arch $arch --size tiny --seed 42 --out "$T/a" $q --quiet ||
      fail "mkmodel $arch $q failed"
    # shellcheck disable=SC2086
    "$ENGYCTL" mkmodel --arch $arch --size tiny --seed 42 --out "$T/b" $q --quiet ||
      fail "mkmodel $arch $q failed"
    for f in $FILES; do
      [ -s "$T/a/$f" ] || fail "$arch $q: no $f"
      cmp -s "$T/a/$f" "$T/b/$f" || fail "$arch $q: $f differs between two runs"
    done
    ok "$arch tiny ${q:-bf16}: two runs are byte-identical"
    rm -rf "$T/a" "$T/b"
  done
done

"$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 1 --out "$T/s1" --quiet
"$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 2 --out "$T/s2" --quiet
"$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 1 --out "$T/q1" --quiet --quant int4
cmp -s "$T/s1/model.safetensors" "$T/s2/model.safetensors" && fail "the seed changes nothing"
cmp -s "$T/s1/tokenizer.json" "$T/s2/tokenizer.json" || fail "the seed changed the tokenizer"
cmp -s "$T/s1/tokenizer.json" "$T/q1/tokenizer.json" || fail "--quant changed the tokenizer"
ok "the seed changes the weights only"
grep -q '"quant_method":[[:space:]]*"engy_int4"' "$T/q1/config.json" ||
  fail "no engy_int4 quantization_config"
grep -q 'q_proj.qweight' "$T/q1/model.safetensors" || fail "no qweight tensors"
grep -q 'q_proj.weight' "$T/q1/model.safetensors" && fail "INT4 file still has q_proj.weight"
[ "$(wc -c <"$T/q1/model.safetensors")" -lt "$(wc -c <"$T/s1/model.safetensors")" ] ||
  fail "the INT4 file is not smaller"
ok "--quant int4 writes the engy_int4 layout"

# The tokenizer: loads in lib/tokenizer, round-trips, has Qwen3's added tokens.
text='Hello, world! The model said: "naïve café" 12345 中文\n  spaces'
printf '%s' "$text" >"$T/text"
"$ENGYCTL" tokenize --tokenizer "$T/s1" <"$T/text" >"$T/ids" || fail "tokenize failed"
"$ENGYCTL" tokenize --tokenizer "$T/s1" --decode <"$T/ids" >"$T/back" || fail "decode failed"
cmp -s "$T/text" "$T/back" || fail "decode(encode(text)) != text"
n=$(wc -w <"$T/ids")
[ "$n" -lt "$(wc -c <"$T/text")" ] || fail "BPE merged nothing ($n ids)"
ok "tokenizer round-trips text in $n tokens"
for pair in '<|endoftext|>:486' '<|im_start|>:487' '<|im_end|>:488' \
    '<tool_call>:500' '</tool_call>:501' '<think>:510' '</think>:511'; do
  tok=${pair%:*}; want=${pair##*:}
  got=$(printf '%s' "$tok" | "$ENGYCTL" tokenize --tokenizer "$T/s1")
  [ "$got" = "$want" ] || fail "$tok encodes as '$got', expected $want"
done
ok "Qwen3 added tokens sit after the 486 BPE tokens"

# The template is detected as Qwen3 and renders as engy's renderer does.
echo '{"messages":[{"role":"user","content":"hi"}]}' >"$T/hi.json"
printf '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n' >"$T/hi.want"
"$ENGYCTL" render-chat --tokenizer "$T/s1" <"$T/hi.json" >"$T/hi.got" ||
  fail "render-chat with the generated tokenizer failed"
cmp -s "$T/hi.want" "$T/hi.got" || fail "the generated template is not detected as qwen3"
ok "the chat template is detected as Qwen3"

# Greedy text from the model: varied, not one token over and over.
out=$("$ENGYCTL" ref --checkpoint "$T/s1" --chat "hello there" --generate 32 \
  --ignore-eos 2>/dev/null) || fail "engyctl ref failed"
distinct=$(echo "$out" | tr ' ' '\n' | sort -u | wc -l)
[ "$distinct" -ge 8 ] || fail "greedy output has only $distinct distinct tokens: $out"
ok "greedy output has $distinct distinct tokens in 32"

PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ -d "$PEERS/@huggingface/jinja" ] && command -v node >/dev/null; then
  mkdir "$T/peer"
  node "$top_srcdir/tests/integration/chat_template_peer.mjs" "$PEERS" "$T/s1" \
    "$top_srcdir/tests/data/chat" "$T/peer" >/dev/null || fail "the Jinja peer failed"
  n=0
  for exp in "$T"/peer/*.expected; do
    name=$(basename "$exp" .expected)
    flags=$(cat "$T/peer/$name.flags")
    # shellcheck disable=SC2086
    "$ENGYCTL" render-chat --tokenizer "$T/s1" $flags <"$T/peer/$name.body.json" \
      >"$T/peer/$name.got" || fail "$name: render-chat failed"
    cmp -s "$exp" "$T/peer/$name.got" || fail "$name: the generated template renders differently"
    n=$((n + 1))
  done
  [ "$n" -ge 20 ] || fail "only $n conversations rendered"
  ok "the generated template renders $n conversations as engy's Qwen3 renderer"
else
  skip_part "no @huggingface/jinja peer at $PEERS or no node: template rendering not compared"
fi
echo "$N_OK passed, 0 failed"
