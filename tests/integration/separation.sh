#!/bin/sh
# SPDX-License-Identifier: MIT
# TOPLOC separates an honest miner from an INT4 cheat on engy's CPU
# reference engine, with no false positive: for both architectures
# (qwen3 dense, qwen3-moe), three checkpoint seeds and two prompts each,
# an honest commitment (generated on the canonical checkpoint) and a
# cheat one (generated on its --quant int4 copy, claiming the canonical
# checkpoint) are verified the way the auditor does it (specs/auditor.md
# §2): the canonical checkpoint prefills prompt ‖ output[:-1], and
# `engyctl toploc verify` compares the rows with the proofs under the
# devnet model spec's thresholds (etc/devnet/model-spec.json).  Every
# honest run passes, every cheat run is caught, and the margin (the
# honest maximum against the cheat minimum of exponent mismatches per
# chunk, and of the P99 chunk score) is printed.
# Oracle: engy's prover and verifier on engy's reference engine (self-
# consistency); the cheat is an INT4 copy the test makes, the honest
# recompute must be bit-exact.
. "$(dirname "$0")/lib.sh"

SPEC="$top_srcdir/etc/devnet/model-spec.json"
num() { tr -d ' \t\n' < "$SPEC" | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
V=$(num toploc_v); P=$(num toploc_p); TOPK=$(num toploc_topk)
[ -n "$V" ] && [ -n "$P" ] && [ "$TOPK" = 128 ] || fail "model spec: v=$V p=$P topk=$TOPK"
NGEN=96            # 3 chunks of 32
sc() { awk -v x="$1" 'BEGIN { printf "%.3f", x / 128 }'; }
: > "$T/runs"

# run ARCH SEED PROMPT: one honest and one cheat commitment, verified.
run() {
	d="$T/$1-$2"
	if [ ! -d "$d/m" ]; then
		mkdir -p "$d"
		"$ENGYCTL" mkmodel --arch "$1" --size tiny --seed "$2" --out "$d/m" --quiet ||
			fail "mkmodel $1 $2"
		"$ENGYCTL" mkmodel --arch "$1" --size tiny --seed "$2" --quant int4 \
			--out "$d/m4" --quiet || fail "mkmodel $1 $2 int4"
	fi
	hid=$(tr -d ' \t\n' < "$d/m/config.json" | sed -n 's/.*"hidden_size":\([0-9]*\).*/\1/p')
	np=$(echo $3 | wc -w)
	for who in honest cheat; do
		ck="$d/m"; [ $who = cheat ] && ck="$d/m4"
		out=$("$ENGYCTL" ref --checkpoint "$ck" --ids "$3" --generate $NGEN --ignore-eos \
			--threads 1 --hidden "$T/c.f32" 2>/dev/null) || fail "ref $1 $2 $who"
		"$ENGYCTL" toploc prove --topk 128 --dbs 32 --hidden "$hid" --dtype f32 \
			--prefill $((np - 1)) "$T/c.f32" > "$T/c.proofs" || fail "prove"
		ids="$3 $out"
		"$ENGYCTL" ref --checkpoint "$d/m" --ids "${ids% *}" --threads 1 \
			--hidden "$T/v.f32" > /dev/null 2>&1 || fail "recompute $1 $2 $who"
		rc=0
		"$ENGYCTL" toploc verify --topk 128 --dbs 32 --hidden "$hid" --dtype f32 \
			--prefill $((np - 1)) --proofs "$T/c.proofs" --max-mismatches "$V" \
			--min-pass "$P" "$T/v.f32" > "$T/verify.out" 2>&1 || rc=$?
		verdict=$(sed -n 's/^verdict=\([a-z]*\).*/\1/p' "$T/verify.out")
		want=pass; [ $who = cheat ] && want=cheat
		[ "$verdict" = $want ] || fail "$1 seed $2 $who: $verdict (rc $rc): $(cat "$T/verify.out")"
		# per chunk mismatches, sorted; nearest-rank P99 and the maximum
		sed -n 's/^chunk=[0-9]* exp_mismatches=\([0-9]*\).*/\1/p' "$T/verify.out" |
			sort -n > "$T/mm"
		n=$(wc -l < "$T/mm")
		[ "$n" = 3 ] || fail "$1 seed $2 $who: $n chunks"
		r=$(( (99 * n + 99) / 100 ))
		p99=$(sed -n "${r}p" "$T/mm"); min=$(head -1 "$T/mm"); max=$(tail -1 "$T/mm")
		echo "$1 $2 $who $min $max $p99" >> "$T/runs"
	done
}

PROMPTS="10 11 12 13 14 15 16 17 18 19 20 21|5 400 77 301 33 2 440 18"
for arch in qwen3 qwen3-moe; do
	for seed in 1 2 3; do
		echo "$PROMPTS" | tr '|' '\n' > "$T/prompts"
		while read -r p; do run $arch $seed "$p"; done < "$T/prompts"
	done
done

echo "arch       seed  miner   chunk mismatches min..max  p99 score  verdict"
while read -r a s w mi ma p; do
	v=pass; [ $w = cheat ] && v=cheat
	printf '%-10s %-5s %-7s %3s..%-3s                  %s      %s\n' $a $s $w $mi $ma \
		"$(sc $p)" $v
done < "$T/runs"
for arch in qwen3 qwen3-moe; do
	hmax=$(awk -v a=$arch '$1 == a && $3 == "honest" { if ($5 > m) m = $5 } END { print m + 0 }' "$T/runs")
	cmin=$(awk -v a=$arch '$1 == a && $3 == "cheat" { if (m == "" || $4 < m) m = $4 } END { print m }' "$T/runs")
	hp=$(awk -v a=$arch '$1 == a && $3 == "honest" { if ($6 > m) m = $6 } END { print m + 0 }' "$T/runs")
	cp=$(awk -v a=$arch '$1 == a && $3 == "cheat" { if (m == "" || $6 < m) m = $6 } END { print m }' "$T/runs")
	[ "$hmax" -le "$V" ] && [ "$cmin" -gt "$V" ] || fail "$arch: honest max $hmax, cheat min $cmin, V $V"
	ok "$arch, 3 seeds x 2 prompts x 3 chunks: honest max $hmax < V $V < cheat min $cmin mismatches per chunk; P99 score honest max $(sc $hp) vs cheat min $(sc $cp); no false positive"
done
