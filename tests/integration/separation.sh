#!/bin/sh
# SPDX-License-Identifier: MIT
# TOPLOC separates honest miners from an INT4 cheat on engy's CPU
# reference engine, with no false positive, when the honest miners' numbers
# are not the auditor's bits: they run other kernel profiles
# (specs/checkpoints.md, "Kernel profiles": split-K or warp-reduced
# matmuls with bf16 activations, as GPU kernels compute) while the auditor
# recomputes on the ref profile.
#
# Part 1, per checkpoint: for both architectures (qwen3 dense, qwen3-moe),
# three checkpoint seeds (the honest miner on splitk, warp32, bf16act
# respectively) and two prompts each, an honest commitment (generated on
# the canonical checkpoint) and a cheat one (generated on its --quant int4
# copy, claiming the canonical checkpoint) are verified the way the
# auditor does it (specs/auditor.md §2): the canonical checkpoint
# prefills prompt ‖ output[:-1], and `engyctl toploc verify` compares the
# rows with the proofs under the devnet model spec's thresholds
# (etc/devnet/model-spec.json: toploc_v, toploc_p and the mantissa limits
# toploc_mant_mean and toploc_mant_median, the rule the auditor applies).
#
# Part 2, volume: `engyctl separation` runs 1,000 honest requests on the
# devnet model (qwen3 tiny seed 3) spread over six profiles, 300 on the
# MoE one over five and 200 on its FP8 copy over two (fp8-bf16: FP8
# weights dequantized to bf16), each a pseudo-random prompt and 32 greedy
# tokens, plus INT4 cheat requests, through the same prove and verify
# code (lib/toploc) in one process.
#
# Part 3: the case the mantissa limits exist for: on the MoE model with
# prompt seed 2 an INT4 request passes on the exponent count alone, and
# the model spec's full rule catches all of them, honest ones passing.
#
# Every honest request passes, every cheat request is caught (under the
# model spec's rule, the same in both parts), the bf16
# profiles' honest statistics are above zero, and the margins (honest
# maximum against cheat minimum: exponent mismatches per chunk, the P99
# chunk score, mantissa mean and median) are printed.  Expected values:
# the verdicts and V come from the model spec; the statistics are engy's
# own (TOPLOC as specs/toploc.md defines it), deterministic for the seeds.
# Oracle: engy's prover and verifier on engy's reference engine; the
# honest miners' numbers come from other kernel profiles than the
# auditor's recompute, and the cheat is an INT4 copy the test makes.
. "$(dirname "$0")/lib.sh"

SPEC="$top_srcdir/etc/devnet/model-spec.json"
num() { tr -d ' \t\n' < "$SPEC" | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
V=$(num toploc_v); P=$(num toploc_p); TOPK=$(num toploc_topk)
MM=$(num toploc_mant_mean); MD=$(num toploc_mant_median)
[ -n "$V" ] && [ -n "$P" ] && [ "$TOPK" = 128 ] || fail "model spec: v=$V p=$P topk=$TOPK"
[ -n "$MM" ] && [ -n "$MD" ] || fail "model spec: no toploc_mant_mean ($MM) or toploc_mant_median ($MD)"
# the rule as engyctl's flags give it (a limit of 0 is unchecked)
MANT=""
awk -v x="$MM" 'BEGIN { exit !(x > 0) }' && MANT="$MANT --max-mant-mean $MM"
awk -v x="$MD" 'BEGIN { exit !(x > 0) }' && MANT="$MANT --max-mant-median $MD"
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
		ck="$d/m"; kp=$4; [ $who = cheat ] && { ck="$d/m4"; kp=ref; }
		out=$("$ENGYCTL" ref --checkpoint "$ck" --ids "$3" --generate $NGEN --ignore-eos \
			--threads 1 --kernel-profile $kp --hidden "$T/c.f32" 2>/dev/null) ||
			fail "ref $1 $2 $who"
		"$ENGYCTL" toploc prove --topk 128 --dbs 32 --hidden "$hid" --dtype f32 \
			--prefill $((np - 1)) "$T/c.f32" > "$T/c.proofs" || fail "prove"
		ids="$3 $out"
		"$ENGYCTL" ref --checkpoint "$d/m" --ids "${ids% *}" --threads 1 \
			--hidden "$T/v.f32" > /dev/null 2>&1 || fail "recompute $1 $2 $who"
		rc=0
		"$ENGYCTL" toploc verify --topk 128 --dbs 32 --hidden "$hid" --dtype f32 \
			--prefill $((np - 1)) --proofs "$T/c.proofs" --max-mismatches "$V" \
			--min-pass "$P" $MANT "$T/v.f32" > "$T/verify.out" 2>&1 || rc=$?
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
		echo "$1 $2 $who $min $max $p99 $kp" >> "$T/runs"
	done
}

PROMPTS="10 11 12 13 14 15 16 17 18 19 20 21|5 400 77 301 33 2 440 18"
for arch in qwen3 qwen3-moe; do
	for seed in 1 2 3; do
		echo "$PROMPTS" | tr '|' '\n' > "$T/prompts"
		prof=$(echo splitk warp32 bf16act | cut -d' ' -f$seed)
		while read -r p; do run $arch $seed "$p" $prof; done < "$T/prompts"
	done
done

echo "arch       seed  miner   profile  chunk mismatches min..max  p99 score  verdict"
while read -r a s w mi ma p kp; do
	v=pass; [ $w = cheat ] && v=cheat
	printf '%-10s %-5s %-7s %-8s %3s..%-3s                  %s      %s\n' $a $s $w $kp \
		$mi $ma "$(sc $p)" $v
done < "$T/runs"
for arch in qwen3 qwen3-moe; do
	hmax=$(awk -v a=$arch '$1 == a && $3 == "honest" { if ($5 > m) m = $5 } END { print m + 0 }' "$T/runs")
	cmin=$(awk -v a=$arch '$1 == a && $3 == "cheat" { if (m == "" || $4 < m) m = $4 } END { print m }' "$T/runs")
	hp=$(awk -v a=$arch '$1 == a && $3 == "honest" { if ($6 > m) m = $6 } END { print m + 0 }' "$T/runs")
	cp=$(awk -v a=$arch '$1 == a && $3 == "cheat" { if (m == "" || $6 < m) m = $6 } END { print m }' "$T/runs")
	[ "$hmax" -le "$V" ] && [ "$cmin" -gt "$V" ] || fail "$arch: honest max $hmax, cheat min $cmin, V $V"
	[ "$hmax" -gt 0 ] || fail "$arch: every honest chunk is bit-identical to the recompute"
	ok "$arch, 3 seeds x 2 prompts x 3 chunks, honest on splitk/warp32/bf16act: honest max $hmax <= V $V < cheat min $cmin mismatches per chunk; P99 score honest max $(sc $hp) vs cheat min $(sc $cp); no false positive"
done

# --- part 2: volume, in one process ----------------------------------------
# field NAME LINE: the value of NAME=... in LINE
field() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# volume LABEL CANONICAL CHEAT PROFILES REQUESTS CHEATS
volume() {
	lab=$1 ck=$2 chk=$3 prof=$4 nreq=$5 nch=$6
	out="$T/vol-$lab"
	"$ENGYCTL" separation --checkpoint "$ck" --cheat "$chk" \
		--profiles "$prof" --requests $nreq --cheats $nch --generate 32 --topk "$TOPK" \
		--dbs 32 --max-mismatches "$V" --min-pass "$P" $MANT \
		--seed 53 > "$out" || fail "engyctl separation $lab: $(cat "$out")"
	echo "$lab: $nreq honest requests over $prof, $nch INT4 cheat requests, 32 tokens each;" \
		"V $V, mantissa mean <= $MM, median <= $MD (0: unchecked)"
	echo "group       requests pass cheat unproven nonzero exp_mismatches/chunk p99_score    mant_mean     mant_median"
	n=0
	while read -r line; do
		case $line in group=*) ;; *) continue ;; esac
		g=$(field group "$line"); kind=$(field kind "$line")
		req=$(field requests "$line"); pass=$(field pass "$line")
		ch=$(field cheat "$line"); un=$(field unproven "$line"); nz=$(field nonzero "$line")
		printf '%-11s %8s %4s %5s %8s %7s %8s..%-11s %s..%s  %s..%s  %s..%s\n' "$g" $req $pass \
			$ch $un $nz "$(field exp_min "$line")" "$(field exp_max "$line")" \
			"$(field p99_score_min "$line")" "$(field p99_score_max "$line")" \
			"$(field mant_mean_min "$line")" "$(field mant_mean_max "$line")" \
			"$(field mant_median_min "$line")" "$(field mant_median_max "$line")"
		if [ "$kind" = honest ]; then
			n=$((n + req))
			[ "$pass" = "$req" ] && [ "$ch" = 0 ] && [ "$un" = 0 ] ||
				fail "$lab $g: $ch false positives, $un unproven of $req"
			case $g in splitk | warp32 | bf16act | fp8-bf16 | bf16dp | amx)
				[ "$nz" = "$req" ] ||
					fail "$lab $g: $((req - nz)) honest requests bit-identical to the recompute" ;;
			esac
		else
			[ "$ch" = "$req" ] && [ "$req" -gt 0 ] || fail "$lab: $pass of $req INT4 requests pass"
		fi
	done < "$out"
	[ "$n" = $nreq ] || fail "$lab: $n honest requests reported, not $nreq"
	grep '^margin ' "$out" | sed 's/^/  /'
	m=$(grep '^margin metric=exp_mismatches ' "$out")
	hmax=$(field honest_max "$m"); cmin=$(field cheat_min "$m")
	[ "$hmax" -le "$V" ] && [ "$cmin" -gt "$V" ] || fail "$lab: honest max $hmax, cheat min $cmin, V $V"
	m=$(grep '^margin metric=mant_mean ' "$out")
	hm=$(field honest_max "$m"); cm=$(field cheat_min "$m")
	awk -v h="$hm" -v c="$cm" -v l="$MM" 'BEGIN { exit !(h <= l && l < c) }' ||
		fail "$lab: mantissa mean honest max $hm, limit $MM, cheat min $cm"
	m=$(grep '^margin metric=mant_median ' "$out")
	hd=$(field honest_max "$m"); cd=$(field cheat_min "$m")
	awk -v h="$hd" -v l="$MD" 'BEGIN { exit !(l == 0 || h <= l) }' ||
		fail "$lab: mantissa median honest max $hd above the limit $MD"
	ok "$lab, $nreq honest requests over $prof: 0 false positives, $nch of $nch INT4 caught; exp mismatches per chunk honest max $hmax <= V $V < cheat min $cmin; mantissa mean honest max $hm <= limit $MM < cheat min $cm; median honest max $hd <= limit $MD (cheat min $cd)"
}
volume qwen3 "$T/qwen3-3/m" "$T/qwen3-3/m4" splitk,warp32,bf16act,splitk-f32,bf16dp,amx 1000 100
# On the tiny MoE model exponent mismatches alone can overlap (other seeds:
# honest up to 10, an INT4 chunk down to 5 of 128); the mantissa mean
# separates it (honest <= ~1.4, INT4 >= ~2.9), as the TOPLOC paper's
# thresholds use it: the model spec's toploc_mant_mean.
volume qwen3-moe "$T/qwen3-moe-3/m" "$T/qwen3-moe-3/m4" splitk,warp32,bf16act,bf16dp,amx 300 60
# An FP8 checkpoint (the same seed-3 model, --quant fp8) audited on ref:
# honest miners dequantize it to bf16 (fp8-bf16) or keep float32 weights
# with bf16 activations (bf16act); the cheat is the INT4 copy.
"$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 3 --quant fp8 --out "$T/qwen3-3/m8" \
	--quiet || fail "mkmodel fp8"
volume qwen3-fp8 "$T/qwen3-3/m8" "$T/qwen3-3/m4" fp8-bf16,bf16act 200 40

# --- part 3: the exponent count alone lets INT4 through; the rule does not --
# The tiny MoE model (seed 3) with prompt seed 2: one INT4 request's chunk
# has only 10 exponent mismatches, so V alone passes it, while every INT4
# chunk's mantissa mean is above 3.  Under the model spec's rule (the
# auditor's) all 60 are caught and the 30 honest requests still pass.
sep2() {
	"$ENGYCTL" separation --checkpoint "$T/qwen3-moe-3/m" --cheat "$T/qwen3-moe-3/m4" \
		--profiles splitk,warp32,bf16act --requests 30 --cheats 60 --generate 32 \
		--topk "$TOPK" --dbs 32 --max-mismatches "$V" --min-pass "$P" --seed 2 "$@" ||
		fail "engyctl separation --seed 2"
}
line=$(sep2 | grep '^group=cheat ')
p=$(field pass "$line")
[ "$p" -ge 1 ] || fail "prompt seed 2: no INT4 request passes on V alone ($line): the case is gone"
# shellcheck disable=SC2086 # MANT is a list of flags
out=$(sep2 $MANT)
line=$(echo "$out" | grep '^group=cheat ')
[ "$(field pass "$line")" = 0 ] && [ "$(field cheat "$line")" = 60 ] ||
	fail "prompt seed 2 under the model spec's rule: $line"
h=$(echo "$out" | grep '^group=' | grep 'kind=honest' | while read -r l; do field pass "$l"; done |
	awk '{ s += $1 } END { print s }')
[ "$h" = 30 ] || fail "prompt seed 2 under the rule: $h of 30 honest requests pass"
ok "qwen3-moe, prompt seed 2: $p of 60 INT4 requests pass on exponent mismatches alone (V $V); under the model spec's rule (mantissa mean <= $MM) 60 of 60 are caught, 30 of 30 honest pass"
