#!/bin/sh
# SPDX-License-Identifier: MIT
# The README's first command, shortened: scripts/devnet.sh --once with
# this build, a state dir of its own and 12 s epochs.  A gateway, two
# honest miners on the splitk and warp32 kernel profiles (their numbers
# are not the auditor's ref bits), an INT4-cheat miner claiming the
# canonical root and an auditor on 127.0.0.1, then the light validator on
# chain-dev; onboarding probes every miner first: the honest ones qualify,
# the cheat fails its probes' TOPLOC verdicts and never reaches a buyer;
# buyer traffic through the OpenAI SDK; the table: each honest
# miner names its profile and passes with TOPLOC statistics above zero
# (mantissa mean > 0) and a P99 score at most v/topk, the cheat is caught
# on its probes by both schemes (toploc, gemm: the GEMM audit's opening
# of its trace fails the product check), the closed epoch's signed weights give the cheat 0 and the honest
# miners all of it, and the payload verifies; the validator submits that
# epoch and the weights on the dev chain (chain-dev's file, read here by
# uid) are the signed epoch's, the cheat's 0; the auditor checked its
# checkpoint against the Merkle root etc/devnet/model-spec.json pins; and
# nothing is left running.
# Oracle: mostly engy against itself (gateway, miners, auditor, validator
# all engy); the buyer side is the official OpenAI SDK, and the cheat is an
# INT4 copy the test makes. Weights are checked as the cheat's 0, the
# honest miners' sum and the payload's signature.
. "$(dirname "$0")/lib.sh"

command -v node >/dev/null || skip_or_fail "no node"
[ -x "$top_srcdir/scripts/devnet.sh" ] && [ -f "$top_srcdir/etc/devnet/auditor.conf" ] ||
	skip_or_fail "no scripts/devnet.sh or etc/devnet (not in this tree)"
B=$(cd "$top_builddir" && pwd)
rc=0
ENGY_DEVNET_BUILD="$B" ENGY_DEVNET_STATE="$T/devnet" ENGY_DEVNET_EPOCH_S=12 \
	ENGY_DEVNET_REQUESTS=8 timeout $((150 * TIME_SCALE)) "$top_srcdir/scripts/devnet.sh" --once \
	> "$T/out" 2> "$T/err" || rc=$?
if [ $rc = 3 ]; then
	skip_or_fail "a devnet role is missing here: $(cat "$T/err")"
fi
cat "$T/out"
[ $rc = 0 ] || fail "devnet.sh exit $rc: $(tail -15 "$T/err")"
ok "scripts/devnet.sh --once ran ($(grep -c '^devnet: ' "$T/err") progress lines on stderr)"

V=$(tr -d ' \t\n' < "$top_srcdir/etc/devnet/model-spec.json" | sed -n 's/.*"toploc_v":\([0-9]*\).*/\1/p')
[ -n "$V" ] || fail "no toploc_v in etc/devnet/model-spec.json"
# columns: miner checkpoint profile onboard/probes requests audited p99 exp-max mant-mean
# toploc gemm verdict (a scheme's column: its worst verdict and N/M)
for m in honest:splitk honest-2:warp32; do
	n=${m%%:*}
	line=$(grep "^$n " "$T/out") || fail "no $n row: $(cat "$T/out")"
	echo "$line" | grep -Eq "^$n +bf16 +${m#*:} +qualified/[1-9][0-9]* +[1-9][0-9]* +[1-9][0-9]* +[0-9.]+ +[0-9]+ +[0-9.]+ +pass [1-9][0-9]*/[1-9][0-9]* +pass [1-9][0-9]*/[1-9][0-9]* +pass\$" ||
		fail "$n row: $line"
	set -- $line
	awk -v s="$7" -v mm="$9" -v v="$V" 'BEGIN { exit !(s <= v / 128 && mm > 0) }' ||
		fail "$n: P99 score $7 (v $V), mantissa mean $9"
	ok "$n on ${m#*:}: qualified by its probes, served, every response audited, pass in both schemes (toploc ${11}, gemm ${13}); not bit-identical: P99 score $7, exp max $8, mantissa mean $9"
done
line=$(grep '^int4-cheat ' "$T/out") || fail "no cheat row"
echo "$line" | grep -Eq '^int4-cheat +int4 +ref +refused/[1-9][0-9]* +0 +[1-9][0-9]* +0\.[0-9]+ +[0-9]+ +[0-9.]+ +cheat [1-9][0-9]*/[1-9][0-9]* +cheat [1-9][0-9]*/[1-9][0-9]* +cheat$' ||
	fail "cheat row: $line"
s=$(echo "$line" | awk '{ print $7 }')
awk -v s="$s" -v v="$V" 'BEGIN { exit !(s > v / 128) }' || fail "cheat score $s is not above v/topk"
grep -q 'event=verdict .* scheme=gemm verdict=cheat reason=product ' "$T/devnet/logs/auditor.log" ||
	fail "no GEMM cheat for a product out of tolerance: $(grep 'scheme=gemm' "$T/devnet/logs/auditor.log" | head -3)"
grep -q 'event=onboard_failed .*reason="a TOPLOC verdict is cheat"' "$T/devnet/logs/gateway.log" ||
	fail "the cheat's round did not fail on a cheat verdict: $(grep onboard_failed "$T/devnet/logs/gateway.log" | head -2)"
ok "int4-cheat: refused by onboarding (a cheat verdict on its probes), no buyer request, P99 score $s above the spec's $V/128, caught by TOPLOC and by the GEMM audit"
wl=$(grep -E '^epoch [0-9]+ weights: honest [0-9]+, honest-2 [0-9]+, int4-cheat 0 .*payload verifies\)$' "$T/out") ||
	fail "weights: $(grep weights "$T/out")"
w1=$(echo "$wl" | sed -n 's/.* honest \([0-9]*\),.*/\1/p'); w2=$(echo "$wl" | sed -n 's/.* honest-2 \([0-9]*\),.*/\1/p')
[ $((w1 + w2)) -ge 65534 ] && [ $((w1 + w2)) -le 65535 ] && [ "$w1" -gt 0 ] && [ "$w2" -gt 0 ] ||
	fail "honest weights $w1 + $w2: $wl"
ok "the closed epoch's signed weights: honest $w1, honest-2 $w2, the cheat 0; the payload verifies"
E=$(sed -n 's/^epoch \([0-9]*\) weights: .*/\1/p' "$T/out")
grep -Eq "^dev chain: set_weights by 5[1-9A-HJ-NP-Za-km-z]{47} at block [0-9]+: honest \\(uid 2\\) $w1, int4-cheat \\(uid 3\\) 0, honest-2 \\(uid 4\\) $w2 +\\(matches the signed epoch\\)\$" "$T/out" ||
  fail "dev chain line: $(grep '^dev chain' "$T/out")"
grep -q "event=tick n=1 outcome=submitted epoch=$E source=payload standby=no " "$T/devnet/logs/validator.log" ||
  fail "the validator did not submit epoch $E first: $(grep 'outcome=' "$T/devnet/logs/validator.log")"
# independently of the script's line: chain-dev's file by uid (the
# subnet's hotkeys file) against the signed payload's result_json
hk_file="$T/devnet/chain/hotkeys.txt"
line=$(grep '"ok":true' "$T/devnet/chain/weights.jsonl" | head -1)
[ -n "$line" ] || fail "nothing accepted on the dev chain: $(cat "$T/devnet/chain/weights.jsonl")"
uids=$(echo "$line" | sed -n 's/.*"uids":\[\([0-9,]*\)\].*/\1/p' | tr ',' ' ')
ws=$(echo "$line" | sed -n 's/.*"weights":\[\([0-9,]*\)\].*/\1/p' | tr ',' ' ')
val=$(sed -n '2s/ .*//p' "$hk_file")
echo "$line" | grep -q "\"hotkey\":\"$val\",\"uid\":1," || fail "not set by the validator (uid 1): $line"
chain_w() {  # uid -> its weight on the dev chain (0 when absent)
  set -- "$1" $ws
  u=$1; shift
  for x in $uids; do [ "$x" = "$u" ] && { echo "$1"; return; }; shift; done
  echo 0
}
signed_w() {  # hotkey -> its weight in the signed result_json (0 when absent)
  w=$(grep -o "\\\\\"$1\\\\\",[0-9][0-9]*" "$T/devnet/run/payload.json" | sed 's/.*,//' | head -1)
  echo "${w:-0}"
}
uid=0
while read -r hk _; do
  cw=$(chain_w $uid); sw=$(signed_w "$hk")
  [ "$cw" = "$sw" ] || fail "uid $uid ($hk): $cw on the dev chain, $sw in the signed epoch ($line)"
  uid=$((uid + 1))
done < "$hk_file"
[ "$uid" = 5 ] || fail "the subnet has $uid hotkeys: $(cat "$hk_file")"
[ "$(chain_w 2)" = "$w1" ] && [ "$(chain_w 4)" = "$w2" ] && [ "$(chain_w 3)" = 0 ] ||
	fail "honest/cheat on the dev chain: $line"
ok "the validator set epoch $E's weights on the dev chain: each uid's weight is the signed epoch's (honest $w1, honest-2 $w2, the cheat 0)"
grep -q "curl -s http://127.0.0.1:[0-9]*/v1/chat/completions -H 'Authorization: Bearer sk-engy-" "$T/out" ||
	fail "no curl line"
ok "a curl to chat with the gateway is printed"
grep -q 'event=model_root_override ' "$T/devnet/logs/int4-cheat.log" ||
	fail "the cheat did not override its root"
# the auditor checked its checkpoint against the Merkle root pinned in the
# store from etc/devnet/model-spec.json (specs/auditor.md)
PIN=$(tr -d ' \t\n' < "$top_srcdir/etc/devnet/model-spec.json" |
	sed -n 's/.*"model_root":"\([0-9a-f]*\)".*/\1/p')
grep -q "event=spec_root_ok model=devnet-qwen3 spec_root=$PIN .*source=store" \
	"$T/devnet/logs/auditor.log" ||
	fail "the auditor did not check its checkpoint against $PIN: $(grep spec_root "$T/devnet/logs/auditor.log")"
ok "the auditor's checkpoint is the pinned one (Merkle root ${PIN%"${PIN#????????????????}"}…)"
grep -q 'level=err' "$T/devnet/logs/gateway.log" "$T/devnet/logs/auditor.log" \
	"$T/devnet/logs/validator.log" &&
	fail "errors: $(grep -h level=err "$T/devnet/logs/gateway.log" "$T/devnet/logs/auditor.log" "$T/devnet/logs/validator.log" | head -3)"
# nothing left running: no process has the state dir's configs open
sleep 0.2
if ps -eo args | grep -v grep | grep -q "$T/devnet/run/"; then
	fail "left running: $(ps -eo pid,args | grep "$T/devnet/run/" | grep -v grep)"
fi
ok "every devnet process stopped; no error line in the gateway's, the auditor's or the validator's log"
