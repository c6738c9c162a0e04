#!/bin/sh
# SPDX-License-Identifier: MIT
# Two auditors polling the SAME gateway tee on one PostgreSQL database
# (specs/auditor.md §2, specs/store.md "Audit claims"): every entry of the
# tee reaches both, and each claims a request in the store before it
# recomputes, so:
#  - every answered request gets exactly one verdict (none twice, none
#    lost), all pass;
#  - the two auditors' verdict lines add up to the answers;
#  - a claim left by an auditor that "crashed" (a row inserted here, held
#    by a holder no process has) is not lost: both auditors set the job
#    aside while the claim is live; once it lapses (the script moves its
#    end to now, as time would) one of the two takes the job over, renders
#    the verdict after the lapse and marks the claim done, and the other
#    then drops the job as audited elsewhere;
#  - the buyer's books balance (reserved 0, balance = credited - spent,
#    spent = the request log's costs).
# Expected values come from independent sources: the curl answers (their
# x-request-id), the claim row this script writes, and SQL over the
# verdicts table; nothing is compared with engy's own output.
ENGY_TEST_STORE=store-postgres
. "$top_srcdir/tests/integration/gateway_lib.sh"

for p in backend-ref verifier-toploc; do
	[ -f "$T/plug/$p.so" ] || skip_or_fail "$p.so not built"
done
tiny_model
TOKEN="tee-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export ENGY_TEE_TOKEN="$TOKEN"
HK1=5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY
A models put tiny --max-input-tokens 4096 --max-output-tokens 16 --max-request-s 60 \
	--price-input 1 --price-output 100 --toploc-v 0 --score-rate 1000 \
	--qual-ttft-p99-ms 60000 --qual-tpot-p99-ms 60000 > /dev/null || fail "models put"
A accounts create b1 > /dev/null && A topup b1 1 > /dev/null || fail "account b1"
KEY=$(A keys create b1 2> /dev/null) || fail "key b1"
MK1=$(register $HK1)
gw_conf "  first_token_timeout_s = 60
  tee_sample_rate = 1
  tee_ttl_s = 3600"
gw_start
miner m1 "$MK1" m1 8
ROOT=$(sed -n 's/.*event=miner_prepared .*model_root=\([0-9a-f]*\).*/\1/p' "$T/m1.log" | head -1)
[ -n "$ROOT" ] || fail "no model root in the miner's log"
A models root-add tiny --root "$ROOT" > /dev/null || fail "root-add"

# --- traffic first: the tee holds every answer before any auditor runs -------
N=16
for i in $(seq 1 $N); do
	mt=$((2 + i % 7))
	s=$(curl -s -D "$T/h-$i" -o "$T/o-$i" -w '%{http_code}' \
		-H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
		--data "{\"model\":\"tiny\",\"max_tokens\":$mt,\"messages\":[{\"role\":\"user\",\"content\":\"claim $i\"}]}" \
		"$BASE/v1/chat/completions")
	rid=$(sed -n 's/^x-request-id: \([^\r]*\).*/\1/ip' "$T/h-$i")
	echo "$s $rid"
done > "$T/answers"
[ "$(awk '$1 == 200 && $2 != ""' "$T/answers" | wc -l)" = $N ] || fail "answers: $(cat "$T/answers")"
awk '{ print $2 }' "$T/answers" | sort > "$T/ans_ids"
[ "$(sort -u "$T/ans_ids" | wc -l)" = $N ] || fail "request ids repeat"
wait_settled
ok "$N buyer requests answered, each in the gateway's tee"

# An auditor that crashed holding request 1's claim (for an hour).
CRASHED=$(sed -n 1p "$T/answers" | awk '{ print $2 }')
NOW=$(date +%s%3N)
pg_sql "INSERT INTO audit_claims (request_id, holder, until_ms, claimed_ms)
	VALUES ('$CRASHED', 'crashed:1:dead', $((NOW + 3600000)), $NOW)" || fail "the crashed claim"

# aud NAME: an auditor on the shared database polling the gateway's tee.
aud() {
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
  tee_url = "$BASE/internal/v1/tee/sample"
  sample_ppm = 1000000
  pull_s = 1
}
C
	mkdir -p "$T/$1"
	"$ENGYD" --no-dlclose -c "$T/$1.conf" 2> "$T/$1.stderr" &
	PIDS="$PIDS $!"
	eval "PID_$1=$!"
}
aud a1
aud a2
for a in a1 a2; do
	wait_for "$T/$a.log" "event=audit_claims holder=" 60 || fail "$a: no claims: $(cat "$T/$a.log" "$T/$a.stderr")"
done

# Both set the crashed auditor's job aside; then its claim lapses.
for a in a1 a2; do
	wait_for "$T/$a.log" "event=audit_deferred request_id=$CRASHED " 120 ||
		fail "$a did not set aside the job another auditor held: $(tail -3 "$T/$a.log")"
done
[ "$(pg_sql "SELECT count(*) FROM verdicts WHERE request_id = '$CRASHED'")" = 0 ] ||
	fail "a job another auditor held was audited"
LAPSE=$(date +%s%3N)
pg_sql "UPDATE audit_claims SET until_ms = $LAPSE WHERE request_id = '$CRASHED'" || fail "lapse"

# --- verdicts: one per answered request ----------------------------------------
i=0
while :; do
	n=$(pg_sql "SELECT count(*) FROM verdicts WHERE is_probe = 0")
	[ "$n" -ge $N ] && break
	i=$((i + 1)); [ $i -le 1800 ] || fail "verdicts: $n of $N: $(tail -3 "$T/a1.log" "$T/a2.log")"
	sleep 0.1
done
pg_sql "SELECT request_id FROM verdicts WHERE is_probe = 0 ORDER BY 1" > "$T/v_ids"
cmp -s "$T/v_ids" "$T/ans_ids" || fail "verdicts vs answers: $(diff "$T/v_ids" "$T/ans_ids" | head -5)"
[ "$(pg_sql "SELECT count(*) FROM verdicts WHERE verdict <> 1")" = 0 ] ||
	fail "not pass: $(pg_sql "SELECT request_id, verdict, reason FROM verdicts WHERE verdict <> 1")"
ok "verdicts: exactly one per answered request (none twice, none lost), all pass"

n1=$(grep -c 'event=verdict ' "$T/a1.log" || true)
n2=$(grep -c 'event=verdict ' "$T/a2.log" || true)
[ $((n1 + n2)) = $N ] || fail "verdict lines: a1 $n1 + a2 $n2, answers $N"
grep -h 'event=claim_lost' "$T/a1.log" "$T/a2.log" && fail "an auditor lost a claim"
ok "the two auditors split the tee: a1 rendered $n1 verdicts, a2 $n2, none both"

# The crashed auditor's job: taken over once its claim lapsed.
vt=$(pg_sql "SELECT time_ms FROM verdicts WHERE request_id = '$CRASHED'")
[ -n "$vt" ] && [ "$vt" -ge "$LAPSE" ] || fail "the crashed claim's request: verdict at '$vt', the claim lapsed at $LAPSE"
if grep -q "event=verdict request_id=$CRASHED " "$T/a1.log"; then other=a2; else other=a1; fi
wait_for "$T/$other.log" "event=audit_skipped request_id=$CRASHED reason=audited_elsewhere" 60 ||
	fail "$other did not drop the job the other auditor took over: $(grep "$CRASHED" "$T/$other.log" | tail -3)"
[ "$(pg_sql "SELECT until_ms = 9223372036854775807 FROM audit_claims WHERE request_id = '$CRASHED'")" = t ] ||
	fail "the taken-over claim is not marked done: $(pg_sql "SELECT * FROM audit_claims WHERE request_id = '$CRASHED'")"
ok "a claim left by a crashed auditor: set aside by both while live, audited once after it lapsed, then dropped by the other"

money b1
ok "books: reserved 0, balance = credited - spent, spent = the log's costs"

for p in a1 a2 m1; do
	eval "pid=\$PID_$p"
	kill -TERM "$pid"
	wait "$pid" || fail "$p exited $? on SIGTERM: $(tail -3 "$T/$p.log")"
done
gw_stop
for f in a1 a2 m1; do
	[ ! -s "$T/$f.stderr" ] || fail "$f stderr: $(head -20 "$T/$f.stderr")"
done
ok "the auditors, the miner and the gateway exit 0 on SIGTERM with a clean stderr"
exit 0
