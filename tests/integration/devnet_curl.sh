#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/devnet.sh --once without the npm test peers: the buyer traffic
# goes through its curl fallback (each answer on a line of its own, then
# ok=N), and the devnet still ends with the honest miners qualified and
# passing, the cheat refused by onboarding (no buyer request) and caught
# on its probes, and the cheat's weight 0 on the dev chain.  About 20 s.
# Oracle: engy against itself with curl as the buyer; checks the honest
# pass, the cheat caught, the cheat's weight 0.
. "$(dirname "$0")/lib.sh"

[ -x "$top_srcdir/scripts/devnet.sh" ] && [ -f "$top_srcdir/etc/devnet/auditor.conf" ] ||
	{ echo "SKIP: no scripts/devnet.sh or etc/devnet (not in this tree)"; exit 77; }
command -v curl >/dev/null || fail "curl is required"
B=$(cd "$top_builddir" && pwd)
mkdir -p "$T/no-peers"
rc=0
ENGY_PEERS="$T/no-peers" ENGY_DEVNET_BUILD="$B" ENGY_DEVNET_STATE="$T/devnet" \
	ENGY_DEVNET_EPOCH_S=12 ENGY_DEVNET_REQUESTS=8 timeout $((110 * TIME_SCALE)) \
	"$top_srcdir/scripts/devnet.sh" --once > "$T/out" 2> "$T/err" || rc=$?
if [ $rc = 3 ]; then
	echo "SKIP: a devnet role is missing here: $(cat "$T/err")"
	exit 77
fi
cat "$T/out"
[ $rc = 0 ] || fail "devnet.sh without peers exit $rc: $(tail -15 "$T/err")"
grep -q "event=tokenizer_loaded model=devnet-qwen3 " "$T/devnet/logs/gateway.log" ||
	fail "the devnet gateway counts without the model's tokenizer: $(grep -i tokenizer "$T/devnet/logs/gateway.log")"
ok "the devnet gateway loads the checkpoint's tokenizer (exact prompt counts)"
grep -q '^devnet: 8 answers (curl);' "$T/err" || fail "the buyer was not curl: $(grep answers "$T/err")"
grep -qx 'ok=8' "$T/devnet/logs/buyer.out" || fail "buyer.out: $(tail -3 "$T/devnet/logs/buyer.out")"
ok "devnet.sh --once without the npm peers: 8 answers through curl, ok=8 on a line of its own"
# columns: miner checkpoint profile onboard/probes requests audited p99
# exp-max mant-mean toploc gemm verdict (each scheme: pass|cheat N/M)
for m in honest:splitk honest-2:warp32; do
	grep -Eq "^${m%%:*} +bf16 +${m#*:} +qualified/[1-9][0-9]* +[1-9][0-9]* +[1-9][0-9]* +[0-9.]+ +[0-9]+ +[0-9.]+ +pass ([1-9][0-9]*)/\\1 +pass ([1-9][0-9]*)/\\2 +pass\$" "$T/out" ||
		fail "${m%%:*} row: $(cat "$T/out")"
done
grep -Eq '^int4-cheat +int4 +ref +refused/[1-9][0-9]* +0 +[1-9][0-9]* +0\.[0-9]+ +[0-9]+ +[0-9.]+ +cheat ([1-9][0-9]*)/\1 +cheat ([1-9][0-9]*)/\2 +cheat$' "$T/out" || fail "cheat row: $(cat "$T/out")"
grep -Eq '^dev chain: set_weights .*int4-cheat \(uid 3\) 0, honest-2 \(uid 4\) [0-9]+ +\(matches the signed epoch\)$' "$T/out" ||
	fail "dev chain: $(grep '^dev chain' "$T/out")"
ok "the honest miners qualify and pass both schemes (toploc, gemm), the cheat is refused (0 buyer requests) and caught, the dev chain's weights match the signed epoch"
echo "1..$N_OK"
