#!/bin/sh
# SPDX-License-Identifier: MIT
# Onboarding end to end (specs/gateway.md, "Onboarding"): engyd -c as a
# gateway with onboarding on, scripted miners (probe_miner.mjs, which
# tells probe serves from buyer ones) and, when built, engy's own miners
# on backend-ref.
#  - A new honest miner gets probes first: a buyer request meanwhile gets
#    503 while it is alone, and goes to the 1st-party worker once one is
#    there (which is never probed).  Its probes are in the tee; two
#    auditor verdicts (pass) acknowledged on /internal/v1/tee/ack make it
#    active, and buyer traffic reaches it.
#  - Miners that answer probes with errors, too slowly (TTFT p99 over the
#    model's ceiling), or whose probe an auditor finds a cheat, never
#    become active and never see a buyer request; a failed round is
#    retried after probe_retry_s.
#  - Probes are logged with is_probe and cost 0; the account pays for the
#    buyer requests only.  Metrics and `engyctl workers` show it all.
#  - The gateway's own probe verifier (backend-ref + verifier-toploc in
#    its config): an engy miner on the canonical checkpoint qualifies, one
#    on its INT4 copy is caught (cheat) and never becomes active.
# Oracle: scripted miners (probe_miner.mjs) and engy's own miners; verdicts
# from engy's verifier on an honest and an INT4 checkpoint (self-
# consistency); states read from the internal API.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/gateway_mod_lib.sh"

# Ceilings an honest scripted miner (first chunk after 5 ms) meets with a
# wide margin on a loaded machine under ASan; the slow one is twice over.
store_init --qual-ttft-p99-ms 1000 --qual-tpot-p99-ms 500
K_HON=$(miner_key $HK_A --label honest)
K_FP=$(miner_key $HK_B --label fp --first-party)
K_ERR=$(miner_key $HK_C --label errors)
K_SLOW=$(miner_key $HK_D --label slow)
K_CHEAT=$(miner_key $HK_E --label cheat)
MARK=987654321

gw_conf a 'onboarding = true
  probe_count = 6
  probe_concurrency = 2
  probe_max_tokens = 4
  probe_verify = "auditor"
  probe_verdicts = 2
  probe_window_s = 20
  probe_retry_s = 1
  probe_verdict_timeout_s = 60
  tee_sample_rate = 0'
gw_start a

# count FILE KIND: serves of that kind a scripted miner saw.
count() {
	c=$(grep -c " $2 " "$T/pm-$1.out" 2> /dev/null) || true
	echo "${c:-0}"
}
wait_count() {  # NAME KIND N SECONDS
	i=0
	while [ "$(count "$1" "$2")" -lt "$3" ]; do
		i=$((i + 1)); [ $i -le $(($4 * 10)) ] || return 1
		sleep 0.1
	done
}

# --- a new honest miner is probed; buyers do not reach it ------------------
[ "$(chat none)" = 503 ] || fail "no worker: $(cat "$T/chat.out")"
pm hon "$K_HON" PM_MARK_IDS=$MARK
wait_count hon probe 6 10 || fail "probes: $(cat "$T/pm-hon.out")"
[ "$(state hon)" = probing ] || fail "state after probes: $(state hon)"
[ "$(chat alone)" = 503 ] || fail "a buyer reached a probing worker: $(cat "$T/chat.out")"
[ "$(count hon buyer)" = 0 ] || fail "buyer serve at the probing miner"
ok "a new miner gets probes first (6), buyers get 503 while it is the only worker"

pm fp "$K_FP"
[ "$(state fp)" = active ] || fail "1st-party state: $(state fp)"
for i in 1 2 3 4; do
	[ "$(chat "fp$i")" = 200 ] || fail "chat $i: $(cat "$T/chat.out")"
done
[ "$(count fp buyer)" = 4 ] || fail "fp buyer serves: $(cat "$T/pm-fp.out")"
[ "$(count hon buyer)" = 0 ] || fail "buyer serve at the probing miner"
[ "$(count fp probe)" = 0 ] || fail "the 1st-party worker was probed"
ok "meanwhile buyer requests go to the 1st-party worker (active at once, never probed)"

# The round waits for TOPLOC verdicts: the test is the auditor.  Once
# the gateway has counted all six probes (it decides a round on each
# count), the round has everything but the verdicts: still probing.
i=0
while :; do
	internal /internal/v1/workers > /dev/null
	[ "$(js "$T/int.out" "(j.workers.find((w) => w.name === 'hon') || {}).onboarding?.attempts_ok")" = 6 ] && break
	i=$((i + 1)); [ $i -le 100 ] || fail "the gateway did not count 6 probes of hon: $(cat "$T/int.out")"
	sleep 0.1
done
[ "$(js "$T/int.out" "j.workers.find((w) => w.name === 'hon').state")" = probing ] ||
	fail "qualified without verdicts: $(cat "$T/int.out")"
[ "$(js "$T/int.out" "j.workers.find((w) => w.name === 'hon').onboarding.verdicts_pass")" = 0 ] ||
	fail "verdicts before the auditor gave any: $(cat "$T/int.out")"
[ "$(js "$T/int.out" "j.workers.find((w) => w.name === 'hon').onboarding.verdicts_needed")" = 2 ] ||
	fail "verdicts_needed: $(cat "$T/int.out")"
[ "$(internal '/internal/v1/tee/sample?probe=1&n=100')" = 200 ] || fail "tee sample: $(cat "$T/int.out")"
cp "$T/int.out" "$T/sample.json"
n=$(js "$T/sample.json" "j.entries.filter((e) => e.worker_name === 'hon' && e.is_probe &&
	e.commitment.toploc.prompt_ids[0] === $MARK).length")
[ "$n" -ge 6 ] || fail "probe entries of hon in the tee: $n: $(head -c 600 "$T/sample.json")"
[ "$(js "$T/sample.json" "j.entries.filter((e) => !e.is_probe).length")" = 0 ] ||
	fail "buyer entries with tee_sample_rate 0"
ok "its $n probe answers are in the tee with their commitments (buyer answers are not: rate 0)"

SEQS=$(js "$T/sample.json" "j.entries.filter((e) => e.worker_name === 'hon').slice(0, 2).map((e) => e.seq).join(' ')")
set -- $SEQS
[ "$(internal /internal/v1/tee/ack -X POST -H 'Content-Type: application/json' \
	--data "{\"acks\":[{\"seq\":$1,\"verdict\":\"pass\"},{\"seq\":$2,\"verdict\":\"pass\"}]}")" = 200 ] ||
	fail "ack: $(cat "$T/int.out")"
[ "$(js "$T/int.out" "j.acked + '/' + j.verdicts")" = 2/2 ] || fail "ack answer: $(cat "$T/int.out")"
wait_state hon active 5 || fail "not active after two pass verdicts: $(state hon)"
grep -q 'event=worker_qualified worker=[0-9]* name=hon .* verdicts_pass=2' "$T/a.log" ||
	fail "no worker_qualified line: $(grep -e qualified -e onboard "$T/a.log")"
ok "two auditor verdicts (pass) on /internal/v1/tee/ack qualify it: active"

# Which worker a prompt lands on is rendezvous hashing with this run's
# fresh miner keys (both have capacity 8): an even split by chance, so
# 8 requests, then more (up to 40) until the qualified miner has 2.
n=0
while [ $n -lt 8 ] || { [ "$(count hon buyer)" -lt 2 ] && [ $n -lt 40 ]; }; do
	n=$((n + 1))
	[ "$(chat "after$n")" = 200 ] || fail "chat after $n: $(cat "$T/chat.out")"
done
[ "$(count hon buyer)" -ge 2 ] || fail "the qualified miner got $(count hon buyer) of $n"
[ $(( $(count hon buyer) + $(count fp buyer) - 4 )) = $n ] ||
	fail "$n requests, $(count hon buyer) at hon and $(( $(count fp buyer) - 4 )) at the 1st-party worker"
ok "then buyer traffic reaches it ($(count hon buyer) of $n requests, the rest the 1st-party worker)"
BUYER_ROWS=$((4 + n + 10))	# before it qualified, these, the 10 below

# --- miners that fail their probes never become active -------------------------
pm err "$K_ERR" PM_MODE=error
pm slow "$K_SLOW" PM_MODE=slow PM_SLOW_MS=2000
pm cheat "$K_CHEAT"
wait_for "$T/a.log" 'event=onboard_failed worker=[0-9]* name=err .*reason="[0-9]* of [0-9]* probe attempts failed' 10 ||
	fail "err: $(grep -e onboard -e name=err "$T/a.log" | tail -5)"
wait_for "$T/a.log" 'event=onboard_failed worker=[0-9]* name=slow .*reason="TTFT p99 [0-9]* ms is over the ceiling 1000 ms"' 60 ||
	fail "slow: $(grep -e onboard "$T/a.log" | tail -5)"
wait_count cheat probe 6 10 || fail "cheat probes: $(cat "$T/pm-cheat.out")"
# The scripted miner prints a probe as it gets it: its answer, and the tee
# entry, come after.
i=0
while :; do
	internal '/internal/v1/tee/sample?probe=1&n=1000' > /dev/null
	S=$(js "$T/int.out" "(j.entries.find((e) => e.worker_name === 'cheat') || {}).seq")
	[ "$S" = undefined ] || break
	i=$((i + 1)); [ $i -le 300 ] || fail "no tee entry of cheat: $(cat "$T/int.out")"
	sleep 0.1
done
internal /internal/v1/tee/ack -X POST --data "{\"acks\":[{\"seq\":$S,\"verdict\":\"cheat\"}]}" > /dev/null
wait_for "$T/a.log" 'event=onboard_failed worker=[0-9]* name=cheat .*reason="a TOPLOC verdict is cheat"' 5 ||
	fail "cheat: $(grep -e onboard -e verdict "$T/a.log" | tail -5)"
ok "failing miners are held back: probe errors, TTFT p99 over the model's ceiling, a cheat verdict"

# A failed round is retried after probe_retry_s, and fails again.
wait_for "$T/a.log" 'event=onboard_failed worker=[0-9]* name=err .* round=2 ' 10 ||
	fail "no second round for err: $(grep name=err "$T/a.log" | tail -3)"
for i in $(seq 1 10); do
	[ "$(chat "late$i")" = 200 ] || fail "chat late $i: $(cat "$T/chat.out")"
done
for m in err slow cheat; do
	s=$(state $m)
	[ "$s" = probing ] || fail "$m is $s"
	[ "$(count $m buyer)" = 0 ] || fail "$m got buyer traffic"
	grep -q "event=worker_state worker=[0-9]* name=$m from=[a-z]* to=active" "$T/a.log" &&
		fail "$m was active once"
done
ok "after 10 more buyer requests none reached them; each is still probing (rounds retried)"

# --- books, metrics, engyctl workers -------------------------------------------
# The rows of the last requests may still be on their way to the store:
# read the log until the $BUYER_ROWS buyer rows and the 24 probe rows of
# the first rounds are there (no more buyer rows may come).
i=0
while :; do
	A log tail -n 1000 > "$T/logrows"
	nb=$(grep -v ' probe$' "$T/logrows" | grep -c 'status=200') || true
	np=$(grep -c ' probe$' "$T/logrows") || true
	[ "$nb" -lt "$BUYER_ROWS" ] || [ "$np" -lt 24 ] || break
	i=$((i + 1)); [ $i -le 150 ] || break
	sleep 0.2
done
grep ' probe$' "$T/logrows" | grep -qv ' cost=0.000000 probe$' && fail "a probe row costs: $(grep ' probe$' "$T/logrows" | grep -v 'cost=0.000000' | head -2)"
[ "$np" -ge 24 ] || fail "probe rows: $np"
[ "$nb" = "$BUYER_ROWS" ] || fail "buyer rows: $nb, want $BUYER_ROWS"
ok "the request log has $np probe rows (is_probe, cost 0) and the $BUYER_ROWS buyer rows"

[ "$(metric 'engy_gw_onboard_rounds_total{result="pass"}')" = 1 ] || fail "rounds pass metric"
[ "$(metric 'engy_gw_onboard_rounds_total{result="fail"}')" -ge 4 ] || fail "rounds fail metric"
[ "$(metric 'engy_gw_probe_attempts_total{result="ok"}')" -ge 12 ] || fail "probe ok metric"
[ "$(metric 'engy_gw_probe_attempts_total{result="failed"}')" -ge 1 ] || fail "probe failed metric"
[ "$(metric 'engy_gw_probe_verdicts_total{verdict="pass"}')" = 2 ] || fail "verdict pass metric"
[ "$(metric 'engy_gw_probe_verdicts_total{verdict="cheat"}')" = 1 ] || fail "verdict cheat metric"
[ "$(metric 'engy_gw_worker_states{state="active"}')" = 2 ] || fail "active gauge"
[ "$(metric 'engy_gw_worker_states{state="probing"}')" = 3 ] || fail "probing gauge"
[ "$(metric 'engy_gw_attempts_total{kind="probe",status="502"}')" -ge 1 ] || fail "attempts metric"
[ -n "$(metric engy_gw_tpot_seconds_count)" ] || fail "tpot histogram"
[ -n "$(metric engy_gw_reservations_open)" ] || fail "reservations gauge"
ok "metrics: rounds passed/failed, probe attempts and verdicts, worker states, attempts, TPOT, reservations"

"$ENGYCTL" workers --gateway "http://127.0.0.1:$HPORT" > "$T/workers.txt" 2>&1 ||
	fail "engyctl workers: $(cat "$T/workers.txt")"
for p in "hon .* active " "fp .* active  *yes " "err .* probing " "slow .* probing " "cheat .* probing "; do
	grep -q "^[0-9]*  *$p" "$T/workers.txt" || fail "engyctl workers: no '$p' in: $(cat "$T/workers.txt")"
done
grep -q '^ID  *NAME  *MINER  *MODEL  *STATE' "$T/workers.txt" || fail "header: $(head -1 "$T/workers.txt")"
ENGY_TEE_TOKEN=wrong "$ENGYCTL" workers --gateway "http://127.0.0.1:$HPORT" > "$T/w2" 2>&1 &&
	fail "a wrong token listed workers"
grep -q 'HTTP 401' "$T/w2" || fail "wrong token: $(cat "$T/w2")"
ok "engyctl workers lists the five workers with their states (401 with a wrong token)"
gw_stop a

# --- the gateway's own probe verifier ----------------------------------------------
if [ -f "$T/plug/backend-ref.so" ] && [ -f "$T/plug/verifier-toploc.so" ]; then
	"$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 3 --out "$T/m" --quiet || fail mkmodel
	"$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 3 --quant int4 --out "$T/m4" \
		--quiet || fail "mkmodel int4"
	# Latency is not what this part checks; TOPLOC is, strictly.
	A models put test-model --qual-ttft-p99-ms 60000 --qual-tpot-p99-ms 60000 \
		--toploc-v 0 > /dev/null || fail "models put"
	gw_conf b 'onboarding = true
  probe_count = 3
  probe_max_tokens = 8
  probe_verify = "gateway"
  probe_verdicts = 2
  probe_window_s = 60
  probe_retry_s = 60' 'plugin "backend-ref" { checkpoint = "'"$T/m"'" threads = 1 }
plugin "verifier-toploc" { }'
	gw_start b
	grep -q 'event=probe_verifier proof=verifier-toploc backend=backend-ref' "$T/b.log" ||
		fail "no probe verifier: $(grep gateway "$T/b.log" | head)"
	engy_miner() {  # NAME KEY CHECKPOINT
		cat > "$T/$1.conf" <<C
role = "miner"
plugin_dir = "$T/plug"
state_dir = "$T/state-$1"
log_file = "$T/$1.log"
shutdown_timeout = 5
miner { model = "test-model" gpu_probe = false max_tokens = 8 }
plugin "transport-ws" { reconnect_min_ms = 100 reconnect_max_ms = 500 }
plugin "backend-ref" { checkpoint = "$3" threads = 1 max_batch = 2 }
plugin "verifier-toploc" { topk = 128 decode_batching_size = 32 }
C
		GW="$GW" MINER_KEY="$2" ENGY_WORKER_NAME="$1" MAX_INFLIGHT=8 \
			"$ENGYD" --no-dlclose -c "$T/$1.conf" 2> "$T/$1.stderr" &
		PIDS="$PIDS $!"
		wait_for "$T/$1.log" "event=admit" 30 || fail "miner $1: $(tail -5 "$T/$1.log")"
	}
	engy_miner canon "$K_HON" "$T/m"
	engy_miner int4 "$K_CHEAT" "$T/m4"
	wait_state canon active 60 ||
		fail "canon not active: $(grep -e verdict -e onboard "$T/b.log" | tail -5)"
	[ "$(grep -c 'event=probe_verdict worker=[0-9]* round=1 by=gateway verdict=pass' "$T/b.log")" -ge 2 ] ||
		fail "gateway verdicts: $(grep verdict "$T/b.log")"
	wait_for "$T/b.log" 'event=onboard_failed worker=[0-9]* name=int4 .*reason="a TOPLOC verdict is cheat"' 60 ||
		fail "int4: $(grep -e verdict -e onboard "$T/b.log" | tail -5)"
	[ "$(state int4)" = probing ] || fail "int4 is $(state int4)"
	ok "probe verifier: the canonical checkpoint passes (recompute + verify), its INT4 copy is a cheat"
	gw_stop b
else
	skip_part "the gateway's own probe verifier: backend-ref.so or verifier-toploc.so not built"
fi

# --- zero retention -----------------------------------------------------------------
for f in "$T"/state/* "$T"/a.log "$T"/a.stderr; do
	grep -qa "BUYER-\|$MARK" "$f" && fail "prompt or token ids in $f"
done
ok "no prompt text and no committed token id in the state dir or the logs"
no_sanitizer_reports
echo "$N_OK passed, 0 failed"
