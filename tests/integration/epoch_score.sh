#!/bin/sh
# SPDX-License-Identifier: MIT
# engyctl epoch score: every vector of specs/scoring.md recomputed from its
# aggregates file, byte for byte and as the spec prints it; the digest and
# payload comparisons (a falsified epoch exits 1); the command line's
# netuid / epoch / owner against the file's; one-line errors naming the
# field; and no floating point in the scoring code.
# Oracle: specs/scoring.md's vectors, worked by hand in the spec;
# tests/data/scoring/*.result were produced by engy and are regression
# locks, not evidence.
. "${top_srcdir:?}/tests/integration/lib.sh"
V="$top_srcdir/tests/data/scoring"
SPEC="$top_srcdir/specs/scoring.md"
DEV_SEED=fac7959dbfe72f052e5a0c3c8d6530f202b02fd8f9f5ca3580ec8deb7797479e
DEV_SS58=5DfhGyQdFobKM8NsWvEeAKk5EQQgYe9AydgJ7rMB6E1EqRzV

# The spec block after "<!-- vector: NAME -->", without its fences.
spec_block() {
  awk -v tag="<!-- vector: $1 -->" '
    $0 == tag { on = 1; next }
    on && /^```/ { if (in_block) exit; in_block = 1; next }
    on && in_block { print }' "$SPEC"
}

n=0
for f in "$V"/*.json; do
  name=$(basename "$f" .json)
  "$ENGYCTL" epoch score --aggregates "$f" --out "$T/$name.rj" >"$T/$name.out" \
    || fail "$name: exit $?: $(cat "$T/$name.out")"
  cmp -s "$T/$name.rj" "$V/$name.result" || fail "$name: result_json differs from $name.result"
  [ "$(head -n 1 "$T/$name.out")" = "$(cat "$V/$name.result")" ] \
    || fail "$name: the first line is not result_json"
  digest=$(sha256sum "$V/$name.result" | cut -d' ' -f1)
  grep -qx "digest $digest" "$T/$name.out" || fail "$name: no digest line $digest"
  [ "$(spec_block "$name")" = "$(cat "$V/$name.result")" ] \
    || fail "$name: specs/scoring.md does not show $name.result"
  n=$((n + 1))
done
[ "$n" -ge 7 ] || fail "only $n vectors"
ok "$n vectors: result_json, --out bytes, digest and the spec's copy agree"

# The weight lines are result_json's vector, in order.
out=$("$ENGYCTL" epoch score --aggregates "$V/basic.json")
w=$(printf '%s\n' "$out" | sed -n 's/^weight //p' | tr '\n' ' ')
[ "$w" = "5C62Ck4UrFPiBtoCmeSrgF7x9yv9mn38446dhCpsi2mLHiFT 9363 5C7LYpP2ZH3tpKbvVvwiVe54AapxErdPBbvkYhe6y9ZBkqWt 18717 5C8etthaGJi5SkQeEDSaK32ABBjkhwDeK9ksQCTLEGM3EH14 37455 " ] \
  || fail "basic weights: $w"
printf '%s\n' "$out" | grep -q '^row uid=4 .* score=1000 gate_reason=ok accept_bp=10000 ttft_p99_ms=400 tpot_p99_ms=35$' \
  || fail "basic row line: $out"
ok "weight and row lines"

expect_ok "aggregates from stdin" "digest $(sha256sum "$V/ties.result" | cut -d' ' -f1)" \
  sh -c '"$0" epoch score --aggregates - <"$1"' "$ENGYCTL" "$V/ties.json"

# Falsification: a published digest or payload against the recomputation.
d=$(sha256sum "$V/thresholds.result" | cut -d' ' -f1)
expect_ok "--digest: the published digest matches" "digest $d" \
  "$ENGYCTL" epoch score --aggregates "$V/thresholds.json" --digest "$d"
expect_fail "--digest: a wrong digest is a mismatch" "digest mismatch: published 00" \
  "$ENGYCTL" epoch score --aggregates "$V/thresholds.json" \
  --digest 0000000000000000000000000000000000000000000000000000000000000000
"$ENGYCTL" keys new --out "$T/dev" --seed-hex "$DEV_SEED" >/dev/null || fail "keys new"
"$ENGYCTL" epoch sign --hotkey "$T/dev" --netuid 53 --epoch 105 --payload \
  "$V/thresholds.result" >"$T/p.json" || fail "epoch sign --payload"
expect_ok "the signed payload verifies" "ok: epoch 105 netuid 53 digest $d" \
  "$ENGYCTL" epoch verify --ss58 "$DEV_SS58" --netuid 53 --payload "$T/p.json"
expect_ok "--payload: an honest epoch matches" "ok: $T/p.json matches" \
  "$ENGYCTL" epoch score --aggregates "$V/thresholds.json" --payload "$T/p.json"
# A master that zeroed uid 3's ttft failure into a pass signs another result.
sed 's/"score":0,"gate_reason":"ttft_p99"/"score":10000,"gate_reason":"ok"/' \
  "$V/thresholds.result" | tr -d '\n' >"$T/forged.rj"
cmp -s "$T/forged.rj" "$V/thresholds.result" && fail "the forgery changed nothing"
"$ENGYCTL" epoch sign --hotkey "$T/dev" --netuid 53 --epoch 105 --payload \
  "$T/forged.rj" >"$T/forged.json" || fail "epoch sign the forgery"
expect_ok "the forged payload is well signed" "ok: epoch 105" \
  "$ENGYCTL" epoch verify --ss58 "$DEV_SS58" --netuid 53 --payload "$T/forged.json"
expect_fail "--payload: recomputing falsifies it" "result_json differs from the recomputed one" \
  "$ENGYCTL" epoch score --aggregates "$V/thresholds.json" --payload "$T/forged.json"

# netuid, epoch and owner: from the file, from the command line, never both different.
sed -e '/"netuid"/d' -e '/"epoch_index"/d' -e '/"owner_hotkey"/d' "$V/ties.json" >"$T/bare.json"
expect_fail "a missing netuid asks for --netuid" "netuid: missing (give --netuid)" \
  "$ENGYCTL" epoch score --aggregates "$T/bare.json" --epoch 104 --owner "$DEV_SS58"
expect_fail "a missing owner asks for --owner" "owner_hotkey: missing (give --owner)" \
  "$ENGYCTL" epoch score --aggregates "$T/bare.json" --epoch 104 --netuid 53
"$ENGYCTL" epoch score --aggregates "$T/bare.json" --netuid 53 --epoch 104 \
  --owner 5HTzEPr3W2R93FhiZ4NRM2HWcdg2RY2wu7idwwp4Un8U9gKX --out "$T/bare.rj" >/dev/null \
  || fail "bare aggregates with the command line's values"
cmp -s "$T/bare.rj" "$V/ties.result" || fail "the command line's values settle differently"
ok "the command line supplies netuid, epoch and owner"
expect_fail "--netuid against the file's" "--netuid 54 but the aggregates' netuid is 53" \
  "$ENGYCTL" epoch score --aggregates "$V/ties.json" --netuid 54
expect_fail "--epoch against the file's" "--epoch 1 but the aggregates' epoch_index is 104" \
  "$ENGYCTL" epoch score --aggregates "$V/ties.json" --epoch 1
expect_fail "--owner against the file's" "--owner $DEV_SS58 but the aggregates' owner_hotkey" \
  "$ENGYCTL" epoch score --aggregates "$V/ties.json" --owner "$DEV_SS58"
expect_fail "an owner that is not an address" "owner_hotkey: not an SS58 address" \
  "$ENGYCTL" epoch score --aggregates "$T/bare.json" --netuid 53 --epoch 1 --owner 5xyz

# Bad input: exit 1 and one line that names the file and the field.
one_line_error() {  # what needle sed-expression
  sed "$3" "$V/thresholds.json" >"$T/bad.json"
  "$ENGYCTL" epoch score --aggregates "$T/bad.json" >"$T/o" 2>"$T/e" && rc=0 || rc=$?
  [ $rc -eq 1 ] || fail "$1: exit status $rc"
  [ "$(wc -l <"$T/e")" -eq 1 ] || fail "$1: not one line: $(cat "$T/e")"
  grep -qF "engyctl: epoch score: $T/bad.json: $2" "$T/e" || fail "$1: $(cat "$T/e")"
  [ -s "$T/o" ] && fail "$1: printed a result"
  ok "$1"
}
one_line_error "a fraction" "rows[1].tokens: not an integer 0..2^53-1" 's/"tokens": 19700/"tokens": 19700.5/'
one_line_error "a negative count" "rows[2].status.502: not an integer" '/uid": 3/s/"502": 0/"502": -1/'
one_line_error "a misspelt key" 'rows[0]: unknown key "verdict"' '0,/verdicts/s/"verdicts"/"verdict"/'
one_line_error "an unsorted histogram" "rows[0].ttft_ms[2]: ms 90 not above" 's/\[900, 1\]/[90, 1]/'
one_line_error "more counted than 2xx" "rows[4].counted: 100 is above status.2xx (99)" \
  '/uid": 5/s/"2xx": 100/"2xx": 99/'
one_line_error "a model without terms" "rows[4].model: 'qwen3' is not in models" \
  '/uid": 5/s/"model": "qwen3.6-35b-fp8"/"model": "qwen3"/'
one_line_error "a truncated document" "aggregates: not JSON (byte" '$d'

expect_fail "no --aggregates is a usage error" "--aggregates FILE is required" \
  "$ENGYCTL" epoch score --netuid 53
expect_fail "a short --digest is a usage error" "bad value 'abc' for --digest" \
  "$ENGYCTL" epoch score --aggregates "$V/ties.json" --digest abc
expect_fail "a missing file is named" "/nonexistent.json: No such file" \
  "$ENGYCTL" epoch score --aggregates /nonexistent.json

# Integers only: no floating-point type or math in the scoring path.
# (grep exits 1 for "no match" and 2 for a missing file: only 1 passes.)
rc=0
grep -nE '\b(float|double|_Float[0-9]+)\b|<math\.h>|[0-9]\.[0-9]|[0-9][eE][-+]?[0-9]' \
  "$top_srcdir"/lib/score/*.c "$top_srcdir"/lib/score/*.h \
  "$top_srcdir"/plugins/scorer-sn53/*.c || rc=$?
[ "$rc" = 1 ] || fail "floating point in the scoring code (grep exit $rc)"
ok "no floating point in lib/score/score* and scorer-sn53"

echo "$N_OK passed, 0 failed"
