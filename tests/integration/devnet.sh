#!/bin/sh
# SPDX-License-Identifier: MIT
# The README's first command, shortened: scripts/devnet.sh --once with
# this build, a state dir of its own and 12 s epochs.  A gateway, an
# honest miner, an INT4-cheat miner claiming the canonical root and an
# auditor on 127.0.0.1, then the light validator on chain-dev; onboarding
# probes both miners first: the honest one qualifies, the cheat fails its
# probes' TOPLOC verdicts and never reaches a buyer; buyer traffic through
# the OpenAI SDK; the table: the honest miner passes with P99 score 0, the
# cheat is caught on its probes, the closed epoch's signed weights give
# the cheat 0 and the payload verifies; the validator submits that epoch
# and the weights on the dev chain (chain-dev's file, read here by uid)
# are the signed epoch's, the cheat's 0; and nothing is left running.
. "$(dirname "$0")/lib.sh"

command -v node >/dev/null || skip_or_fail "no node"
[ -x "$top_srcdir/scripts/devnet.sh" ] && [ -f "$top_srcdir/etc/devnet/auditor.conf" ] ||
	skip_or_fail "no scripts/devnet.sh or etc/devnet (not in this tree)"
B=$(cd "$top_builddir" && pwd)
rc=0
ENGY_DEVNET_BUILD="$B" ENGY_DEVNET_STATE="$T/devnet" ENGY_DEVNET_EPOCH_S=12 \
	ENGY_DEVNET_REQUESTS=8 timeout 110 "$top_srcdir/scripts/devnet.sh" --once \
	> "$T/out" 2> "$T/err" || rc=$?
if [ $rc = 3 ]; then
	skip_or_fail "a devnet role is missing here: $(cat "$T/err")"
fi
cat "$T/out"
[ $rc = 0 ] || fail "devnet.sh exit $rc: $(tail -15 "$T/err")"
ok "scripts/devnet.sh --once ran ($(grep -c '^devnet: ' "$T/err") progress lines on stderr)"

grep -Eq '^honest +bf16 +qualified/[1-9][0-9]* +8 +[1-9][0-9]* +0\.000 +pass$' "$T/out" ||
	fail "honest row: $(cat "$T/out")"
ok "honest: qualified by its probes, served all 8 buyer requests, audited, P99 TOPLOC score 0.000, pass"
line=$(grep '^int4-cheat ' "$T/out") || fail "no cheat row"
echo "$line" | grep -Eq '^int4-cheat +int4 +refused/[1-9][0-9]* +0 +[1-9][0-9]* +0\.[0-9]+ +cheat$' ||
	fail "cheat row: $line"
s=$(echo "$line" | awk '{ print $6 }')
awk -v s="$s" 'BEGIN { exit !(s > 8 / 128) }' || fail "cheat score $s is not above v/topk"
grep -q 'event=onboard_failed .*reason="a TOPLOC verdict is cheat"' "$T/devnet/logs/gateway.log" ||
	fail "the cheat's round did not fail on a cheat verdict: $(grep onboard_failed "$T/devnet/logs/gateway.log" | head -2)"
ok "int4-cheat: refused by onboarding (a cheat verdict on its probes), no buyer request, P99 score $s above the spec's 8/128, caught"
grep -Eq '^epoch [0-9]+ weights: honest 65535, int4-cheat 0 .*payload verifies\)$' "$T/out" ||
	fail "weights: $(grep weights "$T/out")"
ok "the closed epoch's signed weights: honest 65535, the cheat 0; the payload verifies"
E=$(sed -n 's/^epoch \([0-9]*\) weights: .*/\1/p' "$T/out")
grep -Eq '^dev chain: set_weights by 5[1-9A-HJ-NP-Za-km-z]{47} at block [0-9]+: honest \(uid 2\) 65535, int4-cheat \(uid 3\) 0 +\(matches the signed epoch\)$' "$T/out" ||
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
[ "$uid" = 4 ] || fail "the subnet has $uid hotkeys: $(cat "$hk_file")"
[ "$(chain_w 2)" = 65535 ] && [ "$(chain_w 3)" = 0 ] || fail "honest/cheat on the dev chain: $line"
ok "the validator set epoch $E's weights on the dev chain: each uid's weight is the signed epoch's (honest 65535, the cheat 0)"
grep -q "curl -s http://127.0.0.1:[0-9]*/v1/chat/completions -H 'Authorization: Bearer sk-engy-" "$T/out" ||
	fail "no curl line"
ok "a curl to chat with the gateway is printed"
grep -q 'event=model_root_override ' "$T/devnet/logs/int4-cheat.log" ||
	fail "the cheat did not override its root"
grep -q 'level=err' "$T/devnet/logs/gateway.log" "$T/devnet/logs/auditor.log" \
	"$T/devnet/logs/validator.log" &&
	fail "errors: $(grep -h level=err "$T/devnet/logs/gateway.log" "$T/devnet/logs/auditor.log" "$T/devnet/logs/validator.log" | head -3)"
# nothing left running: no process has the state dir's configs open
sleep 0.2
if ps -eo args | grep -v grep | grep -q "$T/devnet/run/"; then
	fail "left running: $(ps -eo pid,args | grep "$T/devnet/run/" | grep -v grep)"
fi
ok "every devnet process stopped; no error line in the gateway's, the auditor's or the validator's log"
