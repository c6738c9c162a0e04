#!/bin/sh
# SPDX-License-Identifier: MIT
# Scale-out on one PostgreSQL database (README: "several gateways and
# auditors on one PostgreSQL database"; ARCHITECTURE.md "How it scales"):
# two gateway processes and two auditor processes on one throwaway server
# (pg_lib.sh), an engy miner (backend-ref, tiny generated model) behind
# each gateway, buyers on both gateways at once, every buyer answer in its
# gateway's tee (tee_sample_rate 1) and audited by the auditor polling that
# tee (sample_ppm 10^6); both auditors hold the master hotkey and race to
# close the same 10 s epochs.  What one process would have produced:
#  - money: reserved 0, balance = credited - spent, spent = the request
#    log's costs, for each account, and each account's spend equals the sum
#    of the costs its buyers were told (usage x price card);
#  - the request log: one row per answered request id, none missing;
#  - verdicts: exactly one per answered request id (none done twice, none
#    lost), every one pass;
#  - epochs: every epoch index from the first request's to the last
#    verdict's closed once, no auditor logged a failure, and each signed
#    weight vector equals the one this script computes itself from the
#    request log's slice by specs/scoring.md §2–§3.4 (the tokens of
#    counted requests x score_rate, floor shares of 65535, the remainder to
#    the top miner; burn to the owner when nothing counted).
# Expected values come from independent sources: the curl answers
# (usage), the price card set here, and SQL over the tables plus shell
# arithmetic written from specs/scoring.md, not from engy's scorer.
ENGY_TEST_STORE=store-postgres
. "$top_srcdir/tests/integration/gateway_lib.sh"

for p in backend-ref verifier-toploc scorer-sn53; do
	[ -f "$T/plug/$p.so" ] || skip_or_fail "$p.so not built"
done
tiny_model
TOKEN="tee-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export ENGY_TEE_TOKEN="$TOKEN"
EPOCH_S=10
HK1=5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY
HK2=5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty
# $1 per 1M input tokens, $100 per 1M output tokens; score_rate 1000 µUSD
# per 1k tokens; quality ceilings no tiny CPU model misses.
A models put tiny --max-input-tokens 4096 --max-output-tokens 16 --max-request-s 60 \
	--price-input 1 --price-output 100 --toploc-v 0 --score-rate 1000 \
	--qual-ttft-p99-ms 60000 --qual-tpot-p99-ms 60000 > /dev/null || fail "models put"
for b in b1 b2; do
	A accounts create $b > /dev/null && A topup $b 1 > /dev/null || fail "account $b"
done
KEY_b1=$(A keys create b1 2> /dev/null) || fail "key b1"
KEY_b2=$(A keys create b2 2> /dev/null) || fail "key b2"
MK1=$(register $HK1)
MK2=$(register $HK2)
"$ENGYCTL" keys new --out "$T/master" --seed-hex $(printf 'ee%.0s' $(seq 32)) > /dev/null
chmod 600 "$T/master"
MASTER=$("$ENGYCTL" keys show "$T/master" | sed -n 's/^ss58Address: //p' | head -1)

# gw NAME: a gateway on the shared database; sets HPORT_NAME, WS_NAME.
gw() {
	cat > "$T/$1.conf" <<C
role = "gateway"
state_dir = "$T/$1"
log_file = "$T/$1.log"
log_level = "info"
shutdown_timeout = 10
gateway {
  first_token_timeout_s = 60
  tee_sample_rate = 1
  tee_ttl_s = 3600
}
plugin "transport-http" { listen = { "127.0.0.1:0" } timeout_s = 60 }
plugin "transport-ws" { listen = "127.0.0.1:0" }
plugin "store-postgres" { $STORE_CONF }
C
	mkdir -p "$T/$1"
	"$ENGYD" --no-dlclose -c "$T/$1.conf" 2> "$T/$1.stderr" &
	PIDS="$PIDS $!"
	eval "PID_$1=$!"
	wait_for "$T/$1.log" "event=ready" 60 || fail "$1: no ready line: $(cat "$T/$1.log" "$T/$1.stderr")"
	eval "HPORT_$1=$(sed -n 's/.*inst=transport-http event=listen addr=127.0.0.1 port=\([0-9]*\).*/\1/p' "$T/$1.log" | tail -1)"
	eval "WS_$1=$(sed -n 's/.*event=ws_listen addr=127.0.0.1:\([0-9]*\).*/\1/p' "$T/$1.log" | tail -1)"
}
gw g1
gw g2
[ -n "$HPORT_g1" ] && [ -n "$HPORT_g2" ] && [ -n "$WS_g1" ] && [ -n "$WS_g2" ] || fail "ports"

# engy miners: m1 behind g1, m2 behind g2.
GWURL="ws://127.0.0.1:$WS_g1/gw" miner m1 "$MK1" m1 8
GWURL="ws://127.0.0.1:$WS_g2/gw" miner m2 "$MK2" m2 8
ROOT=$(sed -n 's/.*event=miner_prepared .*model_root=\([0-9a-f]*\).*/\1/p' "$T/m1.log" | head -1)
[ -n "$ROOT" ] || fail "no model root in the miner's log"
A models root-add tiny --root "$ROOT" > /dev/null || fail "root-add"
ok "two gateways and two engy miners on one PostgreSQL database"

# aud NAME GATEWAY: an auditor on the shared database polling GATEWAY's tee.
aud() {
	eval "hp=\$HPORT_$2"
	cat > "$T/$1.conf" <<C
role = "auditor"
state_dir = "$T/$1"
log_file = "$T/$1.log"
log_level = "info"
shutdown_timeout = 10
plugin "backend-ref" { checkpoint = "$T/model" threads = 1 name = "tiny" }
plugin "verifier-toploc" { }
plugin "scorer-sn53" { }
plugin "store-postgres" { $STORE_CONF }
auditor {
  tee_url = "http://127.0.0.1:$hp/internal/v1/tee/sample"
  sample_ppm = 1000000
  pull_s = 1
  epoch_s = $EPOCH_S
  hotkey_file = "$T/master"
}
C
	mkdir -p "$T/$1"
	"$ENGYD" --no-dlclose -c "$T/$1.conf" 2> "$T/$1.stderr" &
	PIDS="$PIDS $!"
	eval "PID_$1=$!"
	wait_for "$T/$1.log" "event=auditor_start" 60 || fail "$1: $(cat "$T/$1.log" "$T/$1.stderr")"
}
aud a1 g1
aud a2 g2

# --- traffic: each buyer on both gateways at once ---------------------------------
T0=$(date +%s%3N)
# Unequal shares (g1 10 per buyer, g2 5), so the weights split unevenly.
N_g1=10
N_g2=5
N=$((2 * (N_g1 + N_g2)))
buy() {  # ACCOUNT GATEWAY
	eval "k=\$KEY_$1 hp=\$HPORT_$2 n=\$N_$2"
	for i in $(seq 1 $n); do
		mt=$((2 + i % 7))
		t0=$(date +%s%3N)
		s=$(curl -s -D "$T/h-$1-$2-$i" -o "$T/o-$1-$2-$i" -w '%{http_code}' \
			-H "Authorization: Bearer $k" -H 'Content-Type: application/json' \
			--data "{\"model\":\"tiny\",\"max_tokens\":$mt,\"messages\":[{\"role\":\"user\",\"content\":\"scale $1 $2 $i\"}]}" \
			"http://127.0.0.1:$hp/v1/chat/completions")
		rid=$(sed -n 's/^x-request-id: \([^\r]*\).*/\1/ip' "$T/h-$1-$2-$i")
		pt=$(sed -n 's/.*"prompt_tokens":\([0-9]*\).*/\1/p' "$T/o-$1-$2-$i")
		ct=$(sed -n 's/.*"completion_tokens":\([0-9]*\).*/\1/p' "$T/o-$1-$2-$i")
		echo "$1 $2 $s $rid $pt $ct $t0 $(date +%s%3N)"
	done > "$T/buy-$1-$2"
}
BP=""
for b in b1 b2; do
	for g in g1 g2; do
		buy $b $g &
		BP="$BP $!"
	done
done
for p in $BP; do wait "$p" || fail "buyer loop"; done
cat "$T"/buy-* > "$T/answers"
[ "$(wc -l < "$T/answers")" = $N ] || fail "answers: $(cat "$T/answers")"
[ "$(awk '$3 == 200 && $4 != "" && $6 > 0' "$T/answers" | wc -l)" = $N ] ||
	fail "not every request was answered: $(awk '$3 != 200' "$T/answers" | head -3)"
[ "$(awk '{ print $4 }' "$T/answers" | sort -u | wc -l)" = $N ] || fail "request ids repeat"
ok "$N buyer requests, two accounts on both gateways at once: all 200, distinct request ids"

# Both gateways settle every request they took.
for g in g1 g2; do
	i=0
	while :; do
		d=$(grep -c "event=request_done" "$T/$g.log" || true)
		s=$(grep -c "event=request_settled" "$T/$g.log" || true)
		eval "w=\$((2 * N_$g))"
		[ "$d" = "$s" ] && [ "$d" -ge "$w" ] && break
		i=$((i + 1)); [ $i -le 1200 ] || fail "$g: requests not settled: done=$d settled=$s"
		sleep 0.05
	done
done

# --- money and the request log ----------------------------------------------------
for b in b1 b2; do
	money $b
	want=$(awk -v b=$b '$1 == b { s += $5 * 1 + $6 * 100 } END { print s + 0 }' "$T/answers")
	[ "$SPENT" = "$want" ] || fail "$b: spent $SPENT, the answers' usage at the price card is $want"
done
ok "books: reserved 0, balance = credited - spent, spent = the log's costs = usage x price card, per account"
pg_sql "SELECT request_id FROM request_log WHERE account_id <> 0 ORDER BY 1" > "$T/log_ids"
awk '{ print $4 }' "$T/answers" | sort > "$T/ans_ids"
sort "$T/log_ids" | cmp -s - "$T/ans_ids" ||
	fail "request log vs answers: $(sort "$T/log_ids" | diff - "$T/ans_ids" | head -5)"
ok "the request log has each answered request id exactly once, and no other buyer row"

# --- verdicts: one per answered request, from the auditor of its gateway ---------------
i=0
while :; do
	n=$(pg_sql "SELECT count(*) FROM verdicts WHERE is_probe = 0")
	[ "$n" -ge $N ] && break
	i=$((i + 1)); [ $i -le 1200 ] || fail "verdicts: $n of $N: $(tail -3 "$T/a1.log" "$T/a2.log")"
	sleep 0.1
done
pg_sql "SELECT request_id FROM verdicts WHERE is_probe = 0 ORDER BY 1" > "$T/v_ids"
cmp -s "$T/v_ids" "$T/ans_ids" || fail "verdicts vs answers: $(diff "$T/v_ids" "$T/ans_ids" | head -5)"
[ "$(pg_sql "SELECT count(*) FROM verdicts WHERE verdict <> 1")" = 0 ] ||
	fail "not pass: $(pg_sql "SELECT request_id, verdict, reason FROM verdicts WHERE verdict <> 1")"
for a in a1 a2; do
	g=g${a#a}
	n=$(grep -c 'event=verdict ' "$T/$a.log" || true)
	w=$(awk -v g=$g '$2 == g' "$T/answers" | wc -l)
	[ "$n" = "$w" ] || fail "$a rendered $n verdicts for $w answers of $g"
done
ok "verdicts: exactly one per answered request (none twice, none lost), all pass, each by the auditor of its gateway"

# --- epochs --------------------------------------------------------------------------
E_FIRST=$((T0 / 1000 / EPOCH_S))
E_LAST=$(($(pg_sql "SELECT max(time_ms) FROM verdicts") / 1000 / EPOCH_S))
i=0
until [ "$(pg_sql "SELECT count(*) FROM epochs WHERE epoch_index = $E_LAST")" = 1 ]; do
	i=$((i + 1)); [ $i -le 1200 ] || fail "epoch $E_LAST not closed: $(tail -3 "$T/a1.log" "$T/a2.log")"
	sleep 0.1
done
# Both auditors have passed E_LAST: each either closed it or found it closed.
for a in a1 a2; do
	wait_for "$T/$a.log" "event=epoch_\(closed\|already_closed\) epoch=$E_LAST " 60 ||
		fail "$a: epoch $E_LAST: $(grep epoch_ "$T/$a.log" | tail -3)"
done
grep -h 'event=epoch_failed' "$T/a1.log" "$T/a2.log" && fail "an auditor failed to close an epoch"
pg_sql "SELECT hotkey, id FROM miners" | tr '|' ' ' > "$T/uids"
for e in $(seq $E_FIRST $E_LAST); do
	n=$(grep -h "event=epoch_closed epoch=$e " "$T/a1.log" "$T/a2.log" | wc -l)
	[ "$n" = 1 ] || fail "epoch $e closed $n times"
	s=$((e * EPOCH_S * 1000)) u=$(((e + 1) * EPOCH_S * 1000))
	# specs/scoring.md §2: counted = buyer rows with a miner, 2xx, cost > 0;
	# §3.3: score = floor(tokens x 1000 / 1000); every gate passes here
	# (under 100 samples each, every verdict a pass).
	pg_sql "SELECT miner, sum(prompt_tokens + completion_tokens) FROM request_log
		WHERE time_ms >= $s AND time_ms < $u AND account_id <> 0 AND is_probe = 0
		AND miner <> '' AND status BETWEEN 200 AND 299 AND cost_micro > 0 GROUP BY miner" |
		tr '|' ' ' > "$T/score-$e"
	want=$(awk -v master="$MASTER" 'NR == FNR { uid[$1] = $2; next }
		{ sc[$1] = $2; tot += $2 }
		END {
			if (tot == 0) { printf "[[\"%s\",65535]]", master; exit }
			n = 0
			for (h in sc) { w[h] = int(sc[h] * 65535 / tot); rest += w[h]; hs[++n] = h }
			top = ""
			for (h in sc) if (top == "" || sc[h] > sc[top] ||
				(sc[h] == sc[top] && uid[h] < uid[top])) top = h
			w[top] += 65535 - rest
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
				if (uid[hs[j]] < uid[hs[i]]) { t = hs[i]; hs[i] = hs[j]; hs[j] = t }
			printf "["; sep = ""
			for (i = 1; i <= n; i++) if (w[hs[i]] > 0) { printf "%s[\"%s\",%d]", sep, hs[i], w[hs[i]]; sep = "," }
			printf "]"
		}' "$T/uids" "$T/score-$e")
	pg_sql "SELECT payload FROM epochs WHERE epoch_index = $e" > "$T/payload-$e.json"
	got=$(node -e 'const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		console.log(JSON.stringify(JSON.parse(p.result_json).weights));' "$T/payload-$e.json") ||
		fail "epoch $e: payload $(cat "$T/payload-$e.json")"
	# A request started in e and still running after e's end is waited
	# for (holds_open), so every epoch is compared, late requests included.
	late=$(awk -v b=$(((e + 1) * EPOCH_S * 1000)) '$7 < b && $8 > b + 2500' "$T/answers" | wc -l)
	[ "$got" = "$want" ] || fail "epoch $e: weights $got, from the request log $want ($late requests ran past its end + 2.5 s)"
	[ "$late" = 0 ] || echo "# epoch $e: $late requests ran past its end + 2.5 s, in its result"
	"$ENGYCTL" epoch verify --ss58 "$MASTER" --netuid 53 --payload "$T/payload-$e.json" > /dev/null ||
		fail "epoch $e: the payload does not verify"
	echo "epoch $e: $want" >> "$T/weights"
done
grep -q "$HK1" "$T/weights" && grep -q "$HK2" "$T/weights" ||
	fail "both miners' traffic is in no epoch's weights: $(cat "$T/weights")"
ok "epochs $E_FIRST..$E_LAST each closed once by one of the two auditors, signed; weights = the request log's by specs/scoring.md: $(tr '\n' ' ' < "$T/weights")"

for p in a1 a2 m1 m2 g1 g2; do
	eval "pid=\$PID_$p"
	kill -TERM "$pid"
	wait "$pid" || fail "$p exited $? on SIGTERM: $(tail -3 "$T/$p.log")"
done
for f in g1 g2 a1 a2 m1 m2; do
	[ ! -s "$T/$f.stderr" ] || fail "$f stderr: $(head -20 "$T/$f.stderr")"
done
ok "all six processes exit 0 on SIGTERM with a clean stderr"
exit 0
