#!/bin/sh
# engyctl model-spec on generated dense, MoE (with a shared expert), FP8
# and INT4 checkpoints: the spec builds deterministically and is
# recomputed by an independent Python implementation written from
# specs/model-commitment.md (tests/ref/model_commitment.py); verify passes
# on the checkpoint and names the tampered tensor on a copy with one byte
# changed; row openings (plain, FP8 with its block scale row, INT4 with
# its group scales) verify against the root alone in C and in Python, and
# a forged row, a moved row index or another root is refused; on a
# terminal a progress line goes to stderr.
# Oracle: independent: tests/ref/model_commitment.py, written separately
# from specs/model-commitment.md, recomputes every root and opening.
. "$top_srcdir/tests/integration/lib.sh"

PY=/usr/bin/python3
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  skip_or_fail "$PY has no numpy (apt-get install python3-numpy)"
fi
REF="$top_srcdir/tests/ref/model_commitment.py"
MS="$ENGYCTL model-spec"

root_of() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["model_root"])' "$1"; }

# NAME ARGS TENSOR ROW: build, recompute, verify, open.
one() {
  name=$1; args=$2; tensor=$3; row=$4
  # shellcheck disable=SC2086 # args is a word list
  "$ENGYCTL" mkmodel $args --size tiny --seed 11 --out "$T/$name" --quiet ||
    fail "mkmodel $name"
  $MS build "$T/$name" >"$T/$name.json" 2>"$T/err" || fail "$name: build: $(cat "$T/err")"
  $MS build --threads 1 "$T/$name" >"$T/$name.1.json" || fail "$name: build 1 thread"
  cmp -s "$T/$name.json" "$T/$name.1.json" || fail "$name: 1 thread and all threads differ"
  [ ! -s "$T/err" ] || fail "$name: progress or noise on a non-terminal: $(cat "$T/err")"
  ok "$name: spec built, the same on 1 and N threads, stderr quiet off a terminal"
  out=$("$PY" "$REF" check "$T/$name" "$T/$name.json") || fail "$name: python: $out"
  ok "$name: $out"
  expect_ok "$name: verify passes" "matches" $MS verify "$T/$name" "$T/$name.json"
  $MS open "$T/$name" "$tensor" "$row" >"$T/$name.open" || fail "$name: open"
  root=$(root_of "$T/$name.json")
  expect_ok "$name: $tensor row $row opens against the root" "opens against" \
    $MS verify-opening "$T/$name.open" "$root"
  expect_ok "$name: verify-opening takes the spec file" "opens against" \
    $MS verify-opening "$T/$name.open" "$T/$name.json"
  out=$("$PY" "$REF" opening "$T/$name.open" "$root") || fail "$name: python opening: $out"
  ok "$name: the python verifier accepts the opening"
}

one dense "--arch qwen3" model.layers.1.self_attn.o_proj.weight 37
one moe "--arch qwen3-moe --shared-expert" model.layers.0.mlp.experts.5.down_proj.weight 3
one fp8 "--arch qwen3 --quant fp8" model.layers.0.mlp.up_proj.weight 100
one int4 "--arch qwen3-moe --quant int4" model.layers.0.mlp.experts.2.gate_proj.qweight 9

grep -q '"fp8-block"' "$T/fp8.open" && grep -q 'weight_scale_inv' "$T/fp8.open" ||
  fail "the FP8 opening does not carry its scale"
grep -q '"int4"' "$T/int4.open" && grep -q 'gate_proj.scales' "$T/int4.open" ||
  fail "the INT4 opening does not carry its scales"
grep -q '"aux_bytes":[[:space:]]*"[0-9a-f]' "$T/fp8.open" || fail "FP8: no scale bytes"
ok "FP8 and INT4 openings carry their scale rows"
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["expert_roots_by_layer"]["0"].get("shared") and len(d["expert_roots_by_layer"]["0"]["experts"]) == d["config"]["n_experts"] else 1)' "$T/moe.json" ||
  fail "MoE: no shared root or not one root per expert"
ok "MoE: router, shared and one root per expert"

# On a terminal, a progress line goes to stderr (and the spec to stdout).
if command -v script >/dev/null 2>&1; then
  script -qec "$MS build $T/dense >$T/tty.json" /dev/null >"$T/tty.out" 2>&1 ||
    fail "build under a terminal failed: $(cat "$T/tty.out")"
  grep -q 'model-spec: [0-9]* / [0-9]* MB hashed' "$T/tty.out" ||
    fail "no progress line on a terminal: $(cat "$T/tty.out")"
  cmp -s "$T/tty.json" "$T/dense.json" || fail "the spec differs under a terminal"
  ok "a progress line on a terminal, the same spec"
else
  skip_part "no script(1): the terminal progress line is not checked"
fi

# Each quantization is its own root.
r1=$(root_of "$T/dense.json"); r2=$(root_of "$T/fp8.json")
[ "$r1" != "$r2" ] || fail "bf16 and fp8 share a root"
ok "the FP8 checkpoint has its own root"

# A tampered tensor is named.  Flip one byte inside o_proj of layer 1.
cp -r "$T/dense" "$T/bad"
off=$("$PY" - "$T/bad/model.safetensors" <<'PYEOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
print(8 + n + h["model.layers.1.self_attn.o_proj.weight"]["data_offsets"][0] + 1000)
PYEOF
)
"$PY" -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); c=f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([c[0]^1]))' "$T/bad/model.safetensors" "$off"
rc=0; $MS verify "$T/bad" "$T/dense.json" >"$T/out" 2>&1 || rc=$?
[ $rc -eq 3 ] || fail "verify of a tampered checkpoint did not exit 3: $(cat "$T/out")"
grep -q 'tensor model.layers.1.self_attn.o_proj.weight differs' "$T/out" ||
  fail "the tampered tensor is not named: $(cat "$T/out")"
ok "verify names the tampered tensor (exit 3)"
expect_fail "another checkpoint's config is named" "the config differs" \
  $MS verify "$T/fp8" "$T/dense.json"

# Forged openings.
forge() {
  "$PY" - "$T/$1.open" "$T/forged" "$2" <<'PYEOF'
import json, sys
o = json.load(open(sys.argv[1])); how = sys.argv[3]
if how == "row":
    b = bytearray.fromhex(o["row_bytes"]); b[0] ^= 1; o["row_bytes"] = b.hex()
elif how == "index":
    o["row"] ^= 1
elif how == "aux":
    b = bytearray.fromhex(o["aux_bytes"]); b[0] ^= 1; o["aux_bytes"] = b.hex()
elif how == "short":
    o["row_path"] = o["row_path"][:-1]
elif how == "name":
    o["tensor"]["name"] = o["tensor"]["name"].replace("o_proj", "q_proj")
elif how == "ctl":
    o["tensor"]["name"] = "x\x1b[2Jy"
json.dump(o, open(sys.argv[2], "w"))
PYEOF
}
for how in row index short name; do
  forge dense $how
  $MS verify-opening "$T/forged" "$r1" >"$T/out" 2>&1 &&
    fail "a forged opening ($how) was accepted"
  "$PY" "$REF" opening "$T/forged" "$r1" >/dev/null && fail "python accepted a forged opening ($how)"
  ok "a forged opening ($how) is refused: $(tail -1 "$T/out" | cut -c1-90)"
done
forge fp8 aux
$MS verify-opening "$T/forged" "$r2" >/dev/null 2>&1 && fail "a swapped FP8 scale row was accepted"
ok "an FP8 opening with another scale row is refused"
forge dense ctl
expect_fail "a name with a control character is refused at parse" "tensor is missing or malformed" \
  $MS verify-opening "$T/forged" "$r1"
expect_fail "an opening against another model's root" "not the one given" \
  $MS verify-opening "$T/dense.open" "$r2"
expect_fail "a row past the end" "has 64 rows" $MS open "$T/dense" model.layers.1.self_attn.o_proj.weight 64
expect_fail "a tensor not committed" "no committed tensor" $MS open "$T/fp8" model.layers.0.mlp.up_proj.weight_scale_inv 0
printf '{"hashing":"engy-mc1"}' >"$T/junk.json"
expect_fail "a malformed spec file" "config is not an object" $MS verify "$T/dense" "$T/junk.json"
echo "$N_OK passed, 0 failed"
