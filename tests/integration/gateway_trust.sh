#!/bin/sh
# SPDX-License-Identifier: MIT
# Closing the trust loop (issue 14), each attack first, the books
# balanced after each (balance = credited - spent, nothing reserved,
# spent = the request log's costs): engyd -c as a gateway on loopback,
# scripted miners (probe_miner.mjs), buyer traffic with curl.
#  - A miner bloating its commitments cannot push the other miners'
#    proofs out of the tee: a commitment over what its request can need
#    (the prompt bound and max_tokens) is never kept (`oversize`), and over
#    the tee's byte cap the miner holding the most bytes loses its oldest
#    entries first (also when that takes all of its own entries).
#  - A cheat verdict an auditor acks on a buyer answer pulls the miner at
#    once; it re-qualifies through a probe round before it serves again.
#    A cheat verdict that reached the store through another gateway (a
#    row written as the auditor writes it, with sqlite3) pulls the miner's
#    legs here too, within verdict_poll_s.
#  - Every attempt counts: a 502 on a first attempt that was retried on
#    another miner keeps a request-log row of its own against the miner
#    that failed it (same request id, cost 0).
#  - A SIGTERM that reaches shutdown_timeout ends what is in flight: a
#    503 to a waiting buyer, an error event to a streaming one, the miner
#    cancelled, a request-log row each, what was delivered charged and
#    every hold released at once.
#  - The tee's cursor carries the gateway process's boot id: after a
#    gateway restart (seqs begin at 1 again) a cursor of the old process
#    reads from the oldest entry; engy's auditor, polling with its old
#    cursor, still audits every answer of the new process.
# Expected values come from the spec (specs/gateway.md, "Proof tee",
# "Onboarding") and the requests this script sends, not from engy.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/gateway_mod_lib.sh"

store_init --qual-ttft-p99-ms 5000 --qual-tpot-p99-ms 5000
K1=$(miner_key $HK_A --label honest)
K2=$(miner_key $HK_B --label bloat)

# micro DOLLARS: "-0.000150" -> -150.
micro() {
	echo "$1" | awk -F. '{ s = 1; w = $1; if (substr(w, 1, 1) == "-") { s = -1; w = substr(w, 2) }
		printf "%d\n", s * (w * 1000000 + $2) }'
}
# books WHAT: the buyer's books balance once every request settled.
books() {
	i=0
	while :; do
		line=$(A accounts show buyer | head -1)
		res=$(micro "$(echo "$line" | sed -n 's/.* reserved=\([0-9.-]*\).*/\1/p')")
		[ "$res" = 0 ] && break
		i=$((i + 1)); [ $i -le 600 ] || fail "$1: reserved $res left: $line"
		sleep 0.1
	done
	bal=$(micro "$(echo "$line" | sed -n 's/.* balance=\([0-9.-]*\).*/\1/p')")
	cre=$(micro "$(echo "$line" | sed -n 's/.* credited=\([0-9.-]*\).*/\1/p')")
	spe=$(micro "$(echo "$line" | sed -n 's/.* spent=\([0-9.-]*\).*/\1/p')")
	logged=$(A log tail -n 100000 --account buyer | sed -n 's/.* cost=\([0-9.]*\).*/\1/p' |
		awk -F. '{ s += $1 * 1000000 + $2 } END { printf "%d\n", s }')
	[ "$bal" -ge 0 ] || fail "$1: negative balance: $line"
	[ "$((cre - spe))" = "$bal" ] || fail "$1: balance $bal != credited $cre - spent $spe"
	[ "$logged" = "$spe" ] || fail "$1: log costs $logged != spent $spe"
	ok "$1: the books balance (spent $spe, balance $bal, nothing reserved)"
}

# --- the tee: one miner's bloated commitments --------------------------------------
gw_conf a 'onboarding = false
  tee_sample_rate = 1
  tee_max_bytes = 131072'
gw_start a
pm m1 "$K1"
# 40 KB commitments for 4-token answers (below the cap, so each would push
# out the oldest entries): over any entry limit of these requests (4 KiB
# + 12 B an id + 512 B an output token: about 8 KB).
pm big "$K2" PM_NAME=big PM_PAD_BYTES=40000
for i in $(seq 1 20); do
	[ "$(chat "big$i")" = 200 ] || fail "request $i: $(cat "$T/chat.out")"
done
NH=$(grep -c ' buyer ' "$T/pm-m1.out" || true)
NBIG=$(grep -c ' buyer ' "$T/pm-big.out" || true)
[ "$NH" -ge 1 ] && [ "$NBIG" -ge 1 ] || fail "both miners serve: m1 $NH, big $NBIG"
internal '/internal/v1/tee/sample?n=1000' > /dev/null
[ "$(js "$T/int.out" "j.entries.filter((e) => e.worker_name === 'm1').length")" = "$NH" ] ||
	fail "honest entries pushed out: $(js "$T/int.out" "j.entries.map((e) => e.worker_name)") of $NH"
[ "$(js "$T/int.out" "j.entries.filter((e) => e.worker_name === 'big').length")" = 0 ] ||
	fail "bloated entries kept"
[ "$(metric 'engy_gw_tee_dropped_total{reason="oversize"}')" = "$NBIG" ] || fail "oversize metric"
[ "$(metric 'engy_gw_tee_dropped_total{reason="cap"}')" = 0 ] || fail "cap drops"
grep -q "event=tee_oversize worker=[0-9]* miner=$HK_B " "$T/a.log" || fail "no tee_oversize line"
ok "40 KB commitments of 4-token answers are refused (oversize, $NBIG), the honest miner's $NH entries stay"
books "bloated commitments"
kill "$PMPID"
wait_for "$T/pm-big.out" closed 10 || true

# Just under the entry limit (6 KB each, 10x the honest ones): over the
# 128 KiB cap the bloating miner gives up its own oldest entries (the
# honest ones, about 800 B each, hold well under half of it).
pm big2 "$K2" PM_NAME=big2 PM_PAD_BYTES=6000
for i in $(seq 1 60); do
	[ "$(chat "fair$i")" = 200 ] || fail "request $i: $(cat "$T/chat.out")"
done
NH=$(grep -c ' buyer ' "$T/pm-m1.out" || true)
NB2=$(grep -c ' buyer ' "$T/pm-big2.out" || true)
[ "$NB2" -ge 12 ] || fail "big2 served $NB2 of 60"
internal '/internal/v1/tee/sample?n=1000' > /dev/null
[ "$(js "$T/int.out" "j.entries.filter((e) => e.worker_name === 'm1').length")" = "$NH" ] ||
	fail "a flood pushed honest entries out: $(js "$T/int.out" "j.entries.filter((e) => e.worker_name === 'm1').length") of $NH left"
KB=$(js "$T/int.out" "j.entries.filter((e) => e.worker_name === 'big2').length")
[ "$KB" -lt "$NB2" ] || fail "no flood entry dropped: $KB of $NB2"
internal /internal/v1/tee > /dev/null
[ "$(js "$T/int.out" "j.bytes <= 131072")" = true ] || fail "over the cap: $(cat "$T/int.out")"
[ "$(metric 'engy_gw_tee_dropped_total{reason="cap"}')" = $((NB2 - KB)) ] || fail "cap metric"
ok "over tee_max_bytes the bloating miner loses its own oldest ($((NB2 - KB)) of $NB2), all $NH honest entries stay"
books "a tee flood"

gw_stop a

# A tiny cap (16 KiB) where one flood entry (about 7 KB) is over a third of
# it: the flooding miner can lose all of its own entries to fit its new
# one (its bookkeeping must outlive that; the sanitizer pass would see a
# use after free).  Every answer is 200, the tee stays under its cap and
# keeps honest entries.
gw_conf a2 'onboarding = false
  tee_sample_rate = 1
  tee_max_bytes = 16384'
gw_start a2
pm m1b "$K1" PM_NAME=m1b
pm big3 "$K2" PM_NAME=big3 PM_PAD_BYTES=6000
for i in $(seq 1 40); do
	[ "$(chat "tiny$i")" = 200 ] || fail "request $i: $(cat "$T/chat.out")"
done
internal /internal/v1/tee > /dev/null
[ "$(js "$T/int.out" "j.bytes <= 16384 && j.entries >= 2")" = true ] || fail "tiny cap: $(cat "$T/int.out")"
BOOT=$(js "$T/int.out" "j.boot")
internal '/internal/v1/tee/sample?n=1000' > /dev/null
[ "$(js "$T/int.out" "j.entries.filter((e) => e.worker_name === 'm1b').length > 0")" = true ] ||
	fail "no honest entry under the tiny cap: $(js "$T/int.out" "j.entries.map((e) => e.worker_name)")"
ok "a 16 KiB tee under 7 KB flood entries: 40 answers, the cap held, honest entries kept"
books "a tiny tee"

# --- the cursor across a gateway restart ------------------------------------------------
internal '/internal/v1/tee/sample?n=1000' > /dev/null
ALL=$(js "$T/int.out" "j.entries.length")
[ "$(js "$T/int.out" "j.boot")" = "$BOOT" ] && [ ${#BOOT} = 16 ] || fail "boot: $BOOT"
LAST=$(js "$T/int.out" "j.next")
internal "/internal/v1/tee/sample?n=1000&since=$LAST&boot=$BOOT" > /dev/null
[ "$(js "$T/int.out" "j.entries.length")" = 0 ] || fail "since=next of this process: $(cat "$T/int.out")"
internal "/internal/v1/tee/sample?n=1000&since=$LAST&boot=0123456789abcdef" > /dev/null
[ "$(js "$T/int.out" "j.entries.length")" = "$ALL" ] || fail "a cursor of another process: $(cat "$T/int.out")"
grep -q 'event=tee_cursor_reset ' "$T/a2.log" || fail "no tee_cursor_reset line"
ok "a cursor of another gateway process (boot) reads the tee from its oldest entry; this process's reads on"
gw_stop a2

# --- a cheat verdict on buyer traffic ------------------------------------------------------
gw_conf b 'onboarding = true
  probe_count = 4
  probe_verify = "none"
  breaker_cooldown_s = 3
  verdict_poll_s = 1
  tee_sample_rate = 1'
gw_start b
pm c1 "$K1" PM_NAME=c1
pm c2 "$K2" PM_NAME=c2
wait_state c1 active 20 || fail "c1 did not qualify: $(state c1)"
wait_state c2 active 20 || fail "c2 did not qualify: $(state c2)"
# Buyer requests until c1 has answered one: the router's prefix affinity
# weighs each worker by its earned share, which grows with what it has
# served, so how many of a few requests c1 gets depends on the timing of
# the probes (each prompt goes to c1 with odds of at least 1 in
# 1 + max_inflight; 200 requests miss it with odds under 10^-9).
SEQ=
i=0
while [ -z "$SEQ" ] && [ $i -lt 200 ]; do
	i=$((i + 1))
	[ "$(chat "cheat$i")" = 200 ] || fail "request $i"
	[ $((i % 4)) = 0 ] || continue
	internal '/internal/v1/tee/sample?probe=0&n=1000' > /dev/null
	SEQ=$(js "$T/int.out" "(j.entries.find((e) => e.worker_name === 'c1') || {}).seq || ''")
done
[ -n "$SEQ" ] || fail "no buyer entry of c1 in $i requests"
[ "$(internal /internal/v1/tee/ack -X POST --data "{\"acks\":[{\"seq\":$SEQ,\"verdict\":\"cheat\"}]}")" = 200 ] ||
	fail "ack: $(cat "$T/int.out")"
[ "$(state c1)" = pulled ] || fail "a cheat verdict left c1 $(state c1)"
grep -q "event=cheat_pull worker=[0-9]* name=c1 miner=$HK_A .* source=tee" "$T/b.log" || fail "no cheat_pull line"
[ "$(metric engy_gw_cheat_pulls_total)" = 1 ] || fail "cheat pulls metric"
: > "$T/pm-c1.out"
for i in $(seq 1 6); do
	[ "$(chat "after$i")" = 200 ] || fail "request $i after the pull"
done
[ "$(grep -c ' buyer ' "$T/pm-c1.out" || true)" = 0 ] || fail "a pulled cheat served buyers"
ok "a cheat verdict acked on c1's buyer answer pulls c1 at once: buyers go to c2 only"
wait_for "$T/b.log" "event=worker_qualified worker=[0-9]* name=c1 miner=$HK_A round=2 " 30 ||
	fail "c1 did not re-qualify: $(grep 'name=c1' "$T/b.log" | tail -3)"
[ "$(grep -c ' probe ' "$T/pm-c1.out" || true)" -ge 4 ] || fail "no probe round before serving again"
[ "$(state c1)" = active ] || fail "c1 after re-qualifying: $(state c1)"
ok "after breaker_cooldown_s c1 re-proves (a probe round, round 2) before it serves again"
books "a cheat pulled"

# A second gateway on the same store: the verdict reached the store
# through it (its auditor's verdict_put); this one reads it and pulls.
if command -v sqlite3 > /dev/null; then
	NOW=$(date +%s%3N)
	sqlite3 -cmd ".timeout 10000" "$T/state/engy.db" "INSERT INTO verdicts (time_ms,
		request_time_ms, verdict, is_probe, chunks, passed, topk, exp_p99, exp_max, limit_v,
		limit_p_ppm, mant_mean_max_milli, mant_median_max_milli, scheme, reason, request_id,
		miner, model) VALUES ($NOW, $NOW, 2, 0, 1, 0, 128, 40, 40, 8, 990000, 0, 0, 'toploc',
		'exp_mismatch', 'req_other_gateway', '$HK_B', 'test-model');" || fail "sqlite3 insert"
	wait_state c2 pulled 30 || fail "a cheat verdict in the store left c2 $(state c2)"
	grep -q "event=cheat_pull worker=[0-9]* name=c2 miner=$HK_B .* request=req_other_gateway source=store" "$T/b.log" ||
		fail "no cheat_pull line from the store"
	[ "$(state c1)" = active ] || fail "c1 pulled by c2's verdict"
	ok "a cheat verdict another gateway's auditor stored pulls c2 here within verdict_poll_s"
	wait_state c2 active 30 || fail "c2 did not re-qualify: $(state c2)"
	books "a stored cheat verdict"
else
	skip_part "a stored cheat verdict: no sqlite3 command"
fi
gw_stop b

# --- every attempt counts --------------------------------------------------------------
# f1 fails every serve (502), f2 answers: a request tried on f1 first is
# retried on f2 and answered, and f1's failed attempt keeps a row of its
# own (the same request id, status 502, cost 0) for scoring.
K3=$(miner_key $HK_C --label flaky)
gw_conf f 'onboarding = false
  breaker_consecutive = 1000
  breaker_max_error_ratio = 1'
gw_start f
pm f1 "$K3" PM_NAME=f1 PM_MODE=error
pm f2 "$K1" PM_NAME=f2
# Rendezvous hashing over this run's fresh keys sends all 6 to f2 in 1.6%
# of runs, so more requests (up to 40) until f1 has been tried.
i=0
while [ $i -lt 6 ] || { [ "$(grep -c ' buyer ' "$T/pm-f1.out" || true)" -lt 1 ] && [ $i -lt 40 ]; }; do
	i=$((i + 1))
	[ "$(chat "attempt$i")" = 200 ] || fail "request $i: $(cat "$T/chat.out")"
done
NF=$(grep -c ' buyer ' "$T/pm-f1.out" || true)
[ "$NF" -ge 1 ] || fail "f1 was never tried in $i requests"
# Rows are written as requests settle, after their answers: the gateway's
# stop settles them all.
gw_stop f
A log tail -n 200 > "$T/rows"
[ "$(grep -c " miner=$HK_C worker=f1 status=502 .* cost=0.000000" "$T/rows")" = "$NF" ] ||
	fail "f1's $NF failed attempts: $(grep -c "worker=f1" "$T/rows") rows: $(grep worker=f1 "$T/rows" | head -3)"
for rid in $(grep " worker=f1 status=502 " "$T/rows" | sed -n 's/.* request=\([^ ]*\) .*/\1/p'); do
	grep -q " request=$rid .* worker=f2 status=200 " "$T/rows" || fail "$rid: no answered row on f2"
done
ok "a 502 retried elsewhere keeps its own row against f1 ($NF attempts, status 502, cost 0), the answer's row is f2's"
books "failed attempts"

# --- SIGTERM past shutdown_timeout -------------------------------------------------------
# A miner that sends its first token and then stalls for two minutes: a
# streaming buyer has content, a non-streaming one has nothing yet, when
# the gateway is told to stop (shutdown_timeout = 5).
gw_conf e 'onboarding = false'
gw_start e
pm s1 "$K1" PM_NAME=s1 PM_MODE=slowtpot PM_TPOT_MS=120000
curl -s -N -o "$T/stream.out" -H "Authorization: Bearer $BKEY" -H 'Content-Type: application/json' \
	--data '{"model":"test-model","max_tokens":4,"stream":true,"messages":[{"role":"user","content":"BUYER-term1"}]}' \
	"http://127.0.0.1:$HPORT/v1/chat/completions" &
C1=$!
curl -s -o "$T/plain.out" -w '%{http_code}' -H "Authorization: Bearer $BKEY" -H 'Content-Type: application/json' \
	--data '{"model":"test-model","max_tokens":4,"messages":[{"role":"user","content":"BUYER-term2"}]}' \
	"http://127.0.0.1:$HPORT/v1/chat/completions" > "$T/plain.code" &
C2=$!
PIDS="$PIDS $C1 $C2"
wait_for "$T/stream.out" '"w0"' 30 || fail "no first token: $(cat "$T/stream.out")"
i=0
while [ "$(grep -c ' buyer ' "$T/pm-s1.out" || true)" -lt 2 ]; do
	i=$((i + 1)); [ $i -le 600 ] || fail "two serves: $(cat "$T/pm-s1.out")"
	sleep 0.1
done
T0=$(date +%s)
kill -TERM "$GPID"
wait "$C1" || true
wait "$C2" || true
i=0
while kill -0 "$GPID" 2> /dev/null; do
	i=$((i + 1)); [ $i -le 600 ] || fail "the gateway still runs 60 s after SIGTERM"
	sleep 0.1
done
wait "$GPID" || true
[ $(($(date +%s) - T0)) -ge 4 ] || fail "stopped before shutdown_timeout"
grep -q 'event=shutdown_abort aborted=2 ' "$T/e.log" || fail "no shutdown_abort: $(grep -e shutdown -e abort "$T/e.log")"
[ "$(cat "$T/plain.code")" = 503 ] || fail "the plain buyer got $(cat "$T/plain.code"): $(cat "$T/plain.out")"
grep -q '"w0"' "$T/stream.out" && grep -q '"error"' "$T/stream.out" ||
	fail "the stream did not end with an error event: $(cat "$T/stream.out")"
grep -q 'cancel ' "$T/pm-s1.out" || fail "the miner was not cancelled"
A log tail -n 2 > "$T/rows"
[ "$(grep -c ' status=503 ' "$T/rows")" = 2 ] || fail "rows: $(cat "$T/rows")"
grep ' status=503 ' "$T/rows" | grep -q ' completion=1 .* cost=0\.0*[1-9]' ||
	fail "the delivered token is not charged: $(cat "$T/rows")"
grep ' status=503 ' "$T/rows" | grep -q ' completion=0 .* cost=0\.000000' ||
	fail "the undelivered request is charged: $(cat "$T/rows")"
ok "SIGTERM past shutdown_timeout: both requests end with 503 (the stream with an error event after its token), the miner cancelled, a row each, the delivered token charged"
books "SIGTERM past shutdown_timeout"

# --- engy's auditor across a gateway restart ---------------------------------------------
if [ -f "$T/plug/backend-ref.so" ] && [ -f "$T/plug/verifier-toploc.so" ] &&
	[ -f "$T/plug/scorer-sn53.so" ]; then
	"$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 3 --out "$T/m" --quiet || fail mkmodel
	gw_conf c 'onboarding = false
  tee_sample_rate = 1'
	gw_start c
	P=$HPORT
	cat > "$T/auditor.conf" <<C
role = "auditor"
plugin_dir = "$T/plug"
state_dir = "$T/state"
log_file = "$T/auditor.log"
shutdown_timeout = 5
plugin "backend-ref" { checkpoint = "$T/m" threads = 1 name = "test-model" }
plugin "verifier-toploc" { }
plugin "scorer-sn53" { }
plugin "store-sqlite" { }
auditor {
  tee_url = "http://127.0.0.1:$P/internal/v1/tee/sample"
  sample_ppm = 1000000
  pull_s = 1
}
C
	"$ENGYD" --no-dlclose -c "$T/auditor.conf" 2> "$T/auditor.stderr" &
	APID=$!
	PIDS="$PIDS $APID"
	pm r1 "$K1" PM_NAME=r1
	for i in $(seq 1 6); do
		[ "$(chat "restart$i")" = 200 ] || fail "request $i"
	done
	i=0
	while [ "$(grep -c 'event=verdict ' "$T/auditor.log" || true)" -lt 6 ]; do
		i=$((i + 1)); [ $i -le 600 ] || fail "verdicts before the restart: $(grep -c 'event=verdict ' "$T/auditor.log")"
		sleep 0.1
	done
	wait_for "$T/c.log" 'event=tee_ack ' 60 || fail "no ack"
	gw_stop c
	# The same port: the auditor's tee_url does not change.
	gw_conf c2 'onboarding = false
  tee_sample_rate = 1' 'plugin "transport-http" { listen = { "127.0.0.1:'"$P"'" } }'
	sed -i '/^plugin "transport-http" { listen = { "127.0.0.1:0" } }$/d' "$T/c2.conf"
	gw_start c2
	[ "$HPORT" = "$P" ] || fail "port $HPORT, not $P"
	pm r2 "$K1" PM_NAME=r2
	for i in $(seq 1 3); do
		[ "$(chat "reborn$i")" = 200 ] || fail "request $i after the restart"
	done
	i=0
	while [ "$(grep -c 'event=verdict ' "$T/auditor.log" || true)" -lt 9 ]; do
		i=$((i + 1))
		[ $i -le 600 ] || fail "the new process's answers not audited: $(grep -c 'event=verdict ' "$T/auditor.log") verdicts of 9; $(grep tee_sample "$T/c2.log" | tail -2)"
		sleep 0.1
	done
	grep -q 'event=tee_restarted ' "$T/auditor.log" || fail "the auditor did not see the restart"
	ok "engy's auditor audits every answer of a restarted gateway (its cursor named the old process): 9 verdicts"
	kill -TERM "$APID"
	wait "$APID" || fail "the auditor exited $?"
	gw_stop c2
	books "a gateway restart"
else
	skip_part "engy's auditor across a restart: backend-ref.so, verifier-toploc.so or scorer-sn53.so not built"
fi
no_sanitizer_reports
echo "$N_OK passed, 0 failed"
