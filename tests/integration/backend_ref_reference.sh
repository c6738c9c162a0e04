#!/bin/sh
# The reference engine against an independent float64 numpy forward pass
# (tests/ref/qwen3_ref.py) on generated checkpoints: final hidden states and
# logits of every position, prompt fed in chunks (a prompt longer than one
# chunk) and greedy decode with the KV cache, for dense and MoE, BF16, INT4
# and FP8 weights.  Tolerance: max |engine - ref| / max |ref| <= 1e-5 for
# hidden states and logits (measured: about 2e-7, float32 rounding).
# Also: one token at a time gives the same bytes as chunks, greedy and
# seeded sampling repeat exactly, and INT4 moves the hidden states.
# Oracle: independent: a float64 numpy forward pass
# (tests/ref/qwen3_ref.py) written separately from the C engine.
. "$top_srcdir/tests/integration/lib.sh"

PY=/usr/bin/python3
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  skip_or_fail "$PY has no numpy (apt-get install python3-numpy)"
fi
REF="$top_srcdir/tests/ref/qwen3_ref.py"
TOL=1e-5
# 40 prompt ids: three chunks of 16.
PROMPT="3 17 99 250 7 480 12 5 300 44 128 77 1 2 3 4 5 6 7 8 9 10 11 12 13
  400 401 402 33 34 35 36 200 201 202 90 91 92 93 94"

# check NAME DIR: chunked prefill + greedy decode vs the reference.
check() {
  name=$1; dir=$2
  gen=$("$ENGYCTL" ref --checkpoint "$dir" --ids "$PROMPT" --chunk 16 --generate 12 \
    --ignore-eos --hidden "$T/$name.h" --logits "$T/$name.l" 2>"$T/$name.err") ||
    fail "$name: engyctl ref: $(cat "$T/$name.err")"
  [ "$(echo "$gen" | wc -w)" -eq 12 ] || fail "$name: expected 12 tokens, got: $gen"
  # Fed: the prompt and every generated token but the last.
  fed="$PROMPT $(echo "$gen" | awk '{for (i = 1; i < NF; i++) printf "%s ", $i}')"
  "$PY" "$REF" check --checkpoint "$dir" --ids "$fed" --hidden "$T/$name.h" \
    --logits "$T/$name.l" --tol-hidden $TOL --tol-logits $TOL --greedy "$gen" \
    >"$T/$name.py" 2>&1 || fail "$name: $(cat "$T/$name.py")"
  ok "$name: $(grep hidden: "$T/$name.py" | sed 's/.*max rel err/hidden rel err/;s/ (tol.*//'), $(grep logits: "$T/$name.py" | sed 's/.*max rel err/logits/;s/ (tol.*//')"
  echo "$gen" >"$T/$name.gen"
}

for arch in qwen3 qwen3-moe; do
  "$ENGYCTL" mkmodel --arch $arch --size tiny --seed 5 --out "$T/$arch" --quiet ||
    fail "mkmodel $arch"
  check "$arch" "$T/$arch"

  # One token at a time through the KV cache: the very same bytes.
  "$ENGYCTL" ref --checkpoint "$T/$arch" --ids "$PROMPT" --step --generate 12 --ignore-eos \
    --hidden "$T/$arch.sh" --logits "$T/$arch.sl" >"$T/$arch.sgen" 2>/dev/null ||
    fail "$arch: --step run failed"
  cmp -s "$T/$arch.h" "$T/$arch.sh" || fail "$arch: token-by-token hidden states differ from chunked"
  cmp -s "$T/$arch.l" "$T/$arch.sl" || fail "$arch: token-by-token logits differ from chunked"
  cmp -s "$T/$arch.gen" "$T/$arch.sgen" || fail "$arch: token-by-token greedy text differs"
  ok "$arch: token-by-token decode is bit-identical to chunked prefill"

  # Determinism: greedy twice; seeded sampling twice; another seed differs.
  "$ENGYCTL" ref --checkpoint "$T/$arch" --ids "$PROMPT" --chunk 16 --generate 12 --ignore-eos \
    --hidden "$T/$arch.h2" >"$T/$arch.gen2" 2>/dev/null || fail "$arch: rerun failed"
  cmp -s "$T/$arch.gen" "$T/$arch.gen2" && cmp -s "$T/$arch.h" "$T/$arch.h2" ||
    fail "$arch: greedy is not deterministic"
  s1=$("$ENGYCTL" ref --checkpoint "$T/$arch" --ids "$PROMPT" --generate 16 --ignore-eos \
    --temperature 1 --top-p 0.9 --top-k 40 --seed 9 2>/dev/null)
  s2=$("$ENGYCTL" ref --checkpoint "$T/$arch" --ids "$PROMPT" --generate 16 --ignore-eos \
    --temperature 1 --top-p 0.9 --top-k 40 --seed 9 2>/dev/null)
  s3=$("$ENGYCTL" ref --checkpoint "$T/$arch" --ids "$PROMPT" --generate 16 --ignore-eos \
    --temperature 1 --top-p 0.9 --top-k 40 --seed 10 2>/dev/null)
  [ -n "$s1" ] && [ "$s1" = "$s2" ] || fail "$arch: seeded sampling is not repeatable"
  [ "$s1" != "$s3" ] || fail "$arch: seeds 9 and 10 sample the same text"
  ok "$arch: greedy and seeded sampling repeat exactly"

  for q in int4 fp8; do
    "$ENGYCTL" mkmodel --arch $arch --size tiny --seed 5 --out "$T/$arch-$q" --quant $q --quiet ||
      fail "mkmodel $arch $q"
    check "$arch-$q" "$T/$arch-$q"
  done
  # The INT4 cheat moves the hidden states of the same 40 prompt tokens
  # measurably (relative RMS difference over 2%; measured about 9%).
  d=$("$PY" "$REF" diff "$T/$arch-int4.h" "$T/$arch.h" --hidden-size 64 --rows 40) ||
    fail "$arch: diff failed"
  rms=$(echo "$d" | sed 's/.*rel rms diff //')
  "$PY" -c "import sys; sys.exit(0 if float('$rms') > 0.02 else 1)" ||
    fail "$arch: INT4 hidden states barely differ: $d"
  ok "$arch: INT4 vs BF16 hidden states: $d"
done

# TOPLOC end to end (engyctl toploc, bf16 proofs over f32 rows): a miner's
# proofs over the decode rows; the auditor recomputes prompt + output with
# the BF16 checkpoint in one prefill.  Honest: every chunk matches exactly.
# INT4 miner: every chunk shows the difference (the verdict under the
# TOPLOC paper's thresholds is printed; at this tiny size it is marginal).
TL="--topk 32 --dbs 4 --hidden 64 --dtype f32 --prefill 39"
LIM="--max-mismatches 10 --min-pass 0.99 --max-mant-mean 10 --max-mant-median 8"
for who in qwen3 qwen3-int4; do
  gen=$("$ENGYCTL" ref --checkpoint "$T/$who" --ids "$PROMPT" --generate 33 --ignore-eos \
    --hidden "$T/$who.mh" 2>/dev/null) || fail "$who: miner run failed"
  fed="$PROMPT $(echo "$gen" | awk '{for (i = 1; i < NF; i++) printf "%s ", $i}')"
  # shellcheck disable=SC2086
  "$ENGYCTL" toploc prove $TL "$T/$who.mh" >"$T/$who.proofs" || fail "$who: prove failed"
  "$ENGYCTL" ref --checkpoint "$T/qwen3" --ids "$fed" --chunk 16 --hidden "$T/$who.ah" \
    >/dev/null 2>&1 || fail "$who: auditor run failed"
  # shellcheck disable=SC2086
  rc=0
  "$ENGYCTL" toploc verify $TL $LIM --proofs "$T/$who.proofs" "$T/$who.ah" >"$T/$who.v" 2>&1 ||
    rc=$?
  echo $rc >"$T/$who.rc"
done
grep -q "verdict=pass reason=ok chunks=9 passed=9" "$T/qwen3.v" && [ "$(cat "$T/qwen3.rc")" = 0 ] ||
  fail "honest proofs do not pass: $(cat "$T/qwen3.v")"
[ "$(grep -c 'exp_mismatches=0 mant_mean=0 mant_median=0' "$T/qwen3.v")" -eq 9 ] ||
  fail "the auditor's recompute is not exact: $(cat "$T/qwen3.v")"
ok "TOPLOC: the honest miner's 9 chunks match the auditor's recompute exactly"
[ "$(grep -c 'exp_mismatches=0 mant_mean=0 ' "$T/qwen3-int4.v")" -eq 0 ] ||
  fail "an INT4 chunk matched exactly: $(cat "$T/qwen3-int4.v")"
ok "TOPLOC: every INT4 chunk differs; $(grep verdict "$T/qwen3-int4.v")"

for v in "qwen3 --tie" "qwen3 --dtype f16" "qwen3 --dtype f32" "qwen3-moe --shared-expert"; do
  name=$(echo "$v" | tr -d ' -')
  # shellcheck disable=SC2086
  "$ENGYCTL" mkmodel --arch $v --size tiny --seed 6 --out "$T/$name" --quiet || fail "mkmodel $v"
  check "$name" "$T/$name"
done

expect_fail "an id past the vocabulary is refused" "past vocab_size 512" \
  "$ENGYCTL" ref --checkpoint "$T/qwen3" --ids "1 512"
expect_fail "a checkpoint that is not there is named" "/nonexistent/config.json" \
  "$ENGYCTL" ref --checkpoint /nonexistent --ids "1"
echo "$N_OK passed, 0 failed"
