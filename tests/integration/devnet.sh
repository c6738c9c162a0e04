#!/bin/sh
# SPDX-License-Identifier: MIT
# The README's first command, shortened: scripts/devnet.sh --once with
# this build, a state dir of its own and 12 s epochs.  A gateway, an
# honest miner, an INT4-cheat miner claiming the canonical root and an
# auditor on 127.0.0.1; buyer traffic through the OpenAI SDK; the table:
# the honest miner passes with P99 score 0, the cheat is caught, the
# closed epoch's signed weights give the cheat 0 and the payload
# verifies; and nothing is left running.
. "$(dirname "$0")/lib.sh"

command -v node >/dev/null || { echo "SKIP: no node"; exit 77; }
[ -x "$top_srcdir/scripts/devnet.sh" ] && [ -f "$top_srcdir/etc/devnet/auditor.conf" ] ||
	{ echo "SKIP: no scripts/devnet.sh or etc/devnet (not in this tree)"; exit 77; }
B=$(cd "$top_builddir" && pwd)
rc=0
ENGY_DEVNET_BUILD="$B" ENGY_DEVNET_STATE="$T/devnet" ENGY_DEVNET_EPOCH_S=12 \
	ENGY_DEVNET_REQUESTS=8 timeout 110 "$top_srcdir/scripts/devnet.sh" --once \
	> "$T/out" 2> "$T/err" || rc=$?
if [ $rc = 3 ]; then
	echo "SKIP: a devnet role is missing here: $(cat "$T/err")"
	exit 77
fi
cat "$T/out"
[ $rc = 0 ] || fail "devnet.sh exit $rc: $(tail -15 "$T/err")"
ok "scripts/devnet.sh --once ran ($(grep -c '^devnet: ' "$T/err") progress lines on stderr)"

grep -Eq '^honest +bf16 +[1-9][0-9]* +[1-9][0-9]* +0\.000 +pass$' "$T/out" ||
	fail "honest row: $(cat "$T/out")"
ok "honest: served, every response audited, P99 TOPLOC score 0.000, pass"
line=$(grep '^int4-cheat ' "$T/out") || fail "no cheat row"
echo "$line" | grep -Eq '^int4-cheat +int4 +[1-9][0-9]* +[1-9][0-9]* +0\.[0-9]+ +cheat$' ||
	fail "cheat row: $line"
s=$(echo "$line" | awk '{ print $5 }')
awk -v s="$s" 'BEGIN { exit !(s > 8 / 128) }' || fail "cheat score $s is not above v/topk"
ok "int4-cheat: served, audited, P99 score $s above the spec's 8/128, caught"
grep -Eq '^epoch [0-9]+ weights: honest 65535, int4-cheat 0 .*payload verifies\)$' "$T/out" ||
	fail "weights: $(grep weights "$T/out")"
ok "the closed epoch's signed weights: honest 65535, the cheat 0; the payload verifies"
grep -q "curl -s http://127.0.0.1:[0-9]*/v1/chat/completions -H 'Authorization: Bearer sk-engy-" "$T/out" ||
	fail "no curl line"
ok "a curl to chat with the gateway is printed"
grep -q 'event=model_root_override ' "$T/devnet/logs/int4-cheat.log" ||
	fail "the cheat did not override its root"
grep -q 'level=err' "$T/devnet/logs/gateway.log" "$T/devnet/logs/auditor.log" &&
	fail "errors: $(grep -h level=err "$T/devnet/logs/gateway.log" "$T/devnet/logs/auditor.log" | head -3)"
# nothing left running: no process has the state dir's configs open
sleep 0.2
if ps -eo args | grep -v grep | grep -q "$T/devnet/run/"; then
	fail "left running: $(ps -eo pid,args | grep "$T/devnet/run/" | grep -v grep)"
fi
ok "every devnet process stopped; no error line in the gateway's or the auditor's log"
