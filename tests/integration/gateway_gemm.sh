#!/bin/sh
# SPDX-License-Identifier: MIT
# The GEMM audit's opening relay end to end (specs/protocol.md §2,
# "gemm_open"; specs/gateway.md, "Proof tee"): engyd -c as a gateway with
# the tee on every answer, a scripted miner (probe_miner.mjs, PM_OPEN modes)
# and an auditor played by curl on POST /internal/v1/tee/open.
#  - An open of a held entry reaches the leg that served it as a gemm_open
#    frame with the entry's request id and the challenge as sent; the
#    miner's opening comes back as {"opening": ...}.
#  - Hostile miners are bounded: silence is no_answer after
#    gemm_open_timeout_s, an opening over gemm_open_max_bytes is oversize,
#    a frame with neither opening nor error malformed, a second answer or
#    one for a corr_id never asked is ignored (counted), an error is
#    relayed short and printable, a leg that closes is gone.
#  - Hostile auditors are bounded: one open per entry (409), at most
#    gemm_open_max_pending at once (429), bad bodies 400, unknown seqs
#    404, the token required; one that leaves early costs nothing.
#  - The buyer's money adds up afterwards.
#  - With verifier-gemm and a tracing backend-ref built: an honest engy
#    miner passes the auditor's GEMM audit, an INT4 miner is cheat
#    (product), a miner that never answers is cheat no_opening.  The
#    auditor's rate and sizes are the model's (engyctl admin models put
#    --gemm-*; the auditor sets no gemm_rate): a model with gemm_rate 0
#    has nothing opened, one with gemm_layers 2 x gemm_tokens 3 has its
#    miner challenged on 2 layers, 6 cells.
# Oracle: the scripted miner and curl are written from specs/protocol.md
# and specs/gateway.md (no engy code); the expected answers follow from what
# the scripted miner was told to send.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/gateway_mod_lib.sh"

store_init
K1=$(miner_key $HK_A --label gemm)

gw_conf a 'onboarding = false
  tee_sample_rate = 1
  gemm_open_timeout_s = 2
  gemm_open_max_bytes = 1048576
  gemm_open_max_pending = 2'
# the transport's bound on one message, for an opening too large to parse
export ENGY_WS_MAX_MESSAGE_BYTES=4194304
gw_start a
unset ENGY_WS_MAX_MESSAGE_BYTES
echo echo > "$T/open.mode"
pm m1 "$K1" PM_OPEN_FILE="$T/open.mode"
for i in $(seq 1 10); do
	[ "$(chat "gemm$i")" = 200 ] || fail "buyer $i: $(cat "$T/chat.out")"
done
[ "$(internal '/internal/v1/tee/sample?n=100')" = 200 ] || fail "sample: $(cat "$T/int.out")"
cp "$T/int.out" "$T/all.json"
[ "$(js "$T/all.json" "j.entries.length")" = 10 ] || fail "entries: $(js "$T/all.json" "j.entries.length")"
seq_of() { js "$T/all.json" "j.entries[$1 - 1].seq"; }
rid_of() { js "$T/all.json" "j.entries[$1 - 1].request_id"; }

CH='{"nonce":"'$(printf 'ab%.0s' $(seq 32))'","cells":[[0,1],[65535,2]]}'
# open SEQ [BODY]: POST tee/open; the status printed, the body in $T/int.out
open() {
	if [ $# -ge 2 ]; then
		b=$2
	else
		b="{\"seq\":$1,\"challenge\":$CH}"
	fi
	internal /internal/v1/tee/open -X POST -H 'Content-Type: application/json' --data "$b"
}
# open_bg SEQ OUT: the same in the background (its pid in BGPID)
open_bg() {
	curl -s -o "$T/$2" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
		-X POST -H 'Content-Type: application/json' \
		--data "{\"seq\":$1,\"challenge\":$CH}" \
		"http://127.0.0.1:$HPORT/internal/v1/tee/open" > "$T/$2.code" &
	BGPID=$!
}
# opens_seen N: the miner has had N gemm_open frames (bounded wait)
opens_seen() {
	i=0
	while [ "$(grep -c '^gemm_open ' "$T/pm-m1.out")" -lt "$1" ]; do
		i=$((i + 1)); [ $i -le 600 ] || fail "gemm_open frames: $(grep -c '^gemm_open ' "$T/pm-m1.out") of $1"
		sleep 0.1
	done
}
# metric_is NAME VALUE: wait until /metrics shows it (bounded)
metric_is() {
	i=0
	while [ "$(metric "$1")" != "$2" ]; do
		i=$((i + 1)); [ $i -le 600 ] || fail "$1 = $(metric "$1"), want $2"
		sleep 0.1
	done
}

# --- an honest opening ---------------------------------------------------------------------
S1=$(seq_of 1)
[ "$(open "$S1")" = 200 ] || fail "open: $(cat "$T/int.out")"
node -e '
const fs = require("fs");
const j = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
const ch = JSON.parse(process.argv[2]);
if (JSON.stringify(j.opening.echo) !== JSON.stringify(ch) || j.opening.request_id !== process.argv[3] ||
    Object.keys(j).join() !== "opening") { console.log(JSON.stringify(j)); process.exit(1); }
' "$T/int.out" "$CH" "$(rid_of 1)" || fail "the opening relayed"
grep -q "^gemm_open gemm-[0-9a-f]*-[0-9]* $(rid_of 1) echo\$" "$T/pm-m1.out" ||
	fail "the miner's frame: $(grep gemm_open "$T/pm-m1.out")"
ok "an open of a held entry reaches the leg that served it (its request id, the challenge as sent) and the opening comes back"

# --- silence: no_answer at the deadline; one open per entry ---------------------------------------
echo silent > "$T/open.mode"
S2=$(seq_of 2)
t0=$(date +%s%3N)
open_bg "$S2" bg2
opens_seen 2
[ "$(open "$S2")" = 409 ] || fail "a second open of one entry: $(cat "$T/int.out")"
[ "$(js "$T/int.out" "j.status")" = refused ] || fail "409 body: $(cat "$T/int.out")"
wait "$BGPID"
t1=$(date +%s%3N)
[ "$(cat "$T/bg2.code")" = 200 ] && [ "$(js "$T/bg2" "j.status")" = no_answer ] ||
	fail "silence: $(cat "$T/bg2.code") $(cat "$T/bg2")"
[ $((t1 - t0)) -ge 2000 ] || fail "no_answer before gemm_open_timeout_s: $((t1 - t0)) ms"
ok "a silent miner is no_answer once gemm_open_timeout_s (2 s) passed; a second open of the entry meanwhile is 409"

# --- flood: gemm_open_max_pending -------------------------------------------------------------------
open_bg "$(seq_of 3)" bg3
B3=$BGPID
open_bg "$(seq_of 4)" bg4
B4=$BGPID
opens_seen 4
[ "$(open "$(seq_of 5)")" = 429 ] || fail "over gemm_open_max_pending: $(cat "$T/int.out")"
wait "$B3"
wait "$B4"
[ "$(js "$T/bg3" "j.status")" = no_answer ] && [ "$(js "$T/bg4" "j.status")" = no_answer ] ||
	fail "flood: $(cat "$T/bg3" "$T/bg4")"
[ "$(grep -c '^gemm_open ' "$T/pm-m1.out")" = 4 ] || fail "the refused open reached the miner"
ok "at most gemm_open_max_pending (2) openings in flight: the third is 429 and never reaches the miner"

# --- answers twice, answers for a corr_id never asked ----------------------------------------------
echo twice > "$T/open.mode"
[ "$(open "$(seq_of 6)")" = 200 ] && [ "$(js "$T/int.out" "JSON.stringify(j.opening.echo)")" = "$CH" ] ||
	fail "twice: $(cat "$T/int.out")"
metric_is 'engy_gw_frames_ignored_total{reason="unknown corr_id"}' 1
echo foreign > "$T/open.mode"
[ "$(open "$(seq_of 6)")" = 200 ] && [ "$(js "$T/int.out" "JSON.stringify(j.opening.echo)")" = "$CH" ] ||
	fail "foreign: $(cat "$T/int.out")"
metric_is 'engy_gw_frames_ignored_total{reason="unknown corr_id"}' 2
ok "a second answer and an answer for a corr_id never asked are ignored (counted); the asked one is relayed"

# --- oversize, malformed, errors -----------------------------------------------------------------------
echo huge > "$T/open.mode"
[ "$(open "$(seq_of 6)")" = 200 ] && [ "$(js "$T/int.out" "j.status")" = oversize ] ||
	fail "huge: $(head -c 300 "$T/int.out")"
[ "$(wc -c < "$T/int.out")" -lt 1024 ] || fail "the oversize opening was relayed"
echo neither > "$T/open.mode"
[ "$(open "$(seq_of 6)")" = 200 ] && [ "$(js "$T/int.out" "j.status")" = malformed ] ||
	fail "neither: $(cat "$T/int.out")"
echo error > "$T/open.mode"
[ "$(open "$(seq_of 6)")" = 200 ] &&
	[ "$(js "$T/int.out" "j.status + ' ' + j.error")" = "miner_error not_held" ] || fail "error: $(cat "$T/int.out")"
echo ctrl > "$T/open.mode"
[ "$(open "$(seq_of 6)")" = 200 ] &&
	[ "$(js "$T/int.out" "j.status + ' ' + j.error")" = "miner_error a__b_c_d" ] || fail "ctrl: $(cat "$T/int.out")"
ok "an opening over gemm_open_max_bytes is oversize (not relayed), one with neither opening nor error malformed, a miner's error relayed short and printable"

# --- the auditor's side ------------------------------------------------------------------------------
[ "$(open 999999)" = 404 ] && [ "$(js "$T/int.out" "j.status")" = not_held ] || fail "unknown seq: $(cat "$T/int.out")"
BIG="{\"seq\":$S1,\"challenge\":{\"pad\":\"$(head -c 70000 /dev/zero | tr '\0' x)\"}}"
for body in '' '{"seq":1}' "{\"seq\":$S1,\"challenge\":3}" "{\"seq\":-1,\"challenge\":{}}" '[1]' "$BIG"; do
	[ "$(open 0 "$body")" = 400 ] || fail "body '$(echo "$body" | head -c 80)': $(cat "$T/int.out")"
done
[ "$(internal /internal/v1/tee/open)" = 405 ] || fail "GET open"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST --data "{\"seq\":$S1,\"challenge\":{}}" \
	"http://127.0.0.1:$HPORT/internal/v1/tee/open")" = 401 ] || fail "no token"
echo silent > "$T/open.mode"
n=$(grep -c 'event=tee_open_done' "$T/a.log")
curl -s -m 0.5 -o /dev/null -H "Authorization: Bearer $TOKEN" -X POST \
	--data "{\"seq\":$(seq_of 7),\"challenge\":$CH}" "http://127.0.0.1:$HPORT/internal/v1/tee/open" &&
	fail "a silent open answered within 0.5 s"
opens_seen 11
i=0
until [ "$(grep -c 'event=tee_open_done' "$T/a.log")" -gt "$n" ]; do
	i=$((i + 1)); [ $i -le 600 ] || fail "the abandoned open never ended"
	sleep 0.1
done
grep -q "event=tee_open_done seq=$(seq_of 7) .* outcome=no_answer" "$T/a.log" || fail "abandoned: $(grep tee_open_done "$T/a.log" | tail -1)"
echo echo > "$T/open.mode"
[ "$(open "$(seq_of 7)")" = 200 ] && [ "$(js "$T/int.out" "JSON.stringify(j.opening.echo)")" = "$CH" ] ||
	fail "after the abandoned open: $(cat "$T/int.out")"
ok "the auditor's side: unknown seq 404, bad bodies (and one over 64 KiB) 400, GET 405, no token 401; an auditor that leaves early costs nothing"

# --- the leg closes ----------------------------------------------------------------------------------
echo close > "$T/open.mode"
[ "$(open "$(seq_of 8)")" = 200 ] && [ "$(js "$T/int.out" "j.status")" = gone ] || fail "close: $(cat "$T/int.out")"
[ "$(open "$S1")" = 200 ] && [ "$(js "$T/int.out" "j.status")" = gone ] || fail "after the close: $(cat "$T/int.out")"
# an opening over the transport's own bound (4 MiB here): the leg is
# closed (1009) before anything is parsed, and that is oversize, not gone
pm m2 "$K1" PM_OPEN=huge PM_OPEN_BYTES=5242880
[ "$(chat gemm-m2)" = 200 ] || fail "m2 chat: $(cat "$T/chat.out")"
internal '/internal/v1/tee/sample?n=1000' > /dev/null
S9=$(js "$T/int.out" "j.entries.filter((e) => e.worker_name === 'm2')[0].seq")
[ "$(open "$S9")" = 200 ] && [ "$(js "$T/int.out" "j.status")" = oversize ] || fail "over 1009: $(cat "$T/int.out")"
grep -q 'event=leg_closed worker=[0-9]* code=1009 ' "$T/a.log" || fail "no 1009 close: $(grep leg_closed "$T/a.log")"
for o in opened no_answer refused oversize malformed miner_error not_held gone; do
	printf '%s=%s ' "$o" "$(metric "engy_gw_tee_opens_total{outcome=\"$o\"}")"
done > "$T/opens.txt"
[ "$(cat "$T/opens.txt")" = "opened=4 no_answer=4 refused=8 oversize=2 malformed=1 miner_error=2 not_held=1 gone=2 " ] ||
	fail "metrics: $(cat "$T/opens.txt")"
ok "a leg that closes while asked, and one already gone, are gone; one the transport closes for a message over its bound (1009) is oversize; engy_gw_tee_opens_total counts every outcome"

gw_stop a
# --- engy end to end: an honest miner, an INT4 miner, a silent replay -----------------------
if [ -f "$T/plug/backend-ref.so" ] && [ -f "$T/plug/verifier-toploc.so" ] &&
	[ -f "$T/plug/verifier-gemm.so" ] && [ -f "$T/plug/scorer-sn53.so" ]; then
	"$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 3 --out "$T/m" --quiet || fail mkmodel
	"$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 3 --quant int4 --out "$T/m4" --quiet ||
		fail "mkmodel int4"
	gw_conf d 'onboarding = false
  tee_sample_rate = 1
  gemm_open_timeout_s = 20'
	gw_start d
	# engy_miner NAME KEY CHECKPOINT PROFILE [VAR=VALUE...]: an engy miner on
	# backend-ref ($REF_MORE: more backend-ref options)
	engy_miner() {
		cat > "$T/$1.conf" <<C
role = "miner"
plugin_dir = "$T/plug"
state_dir = "$T/state-$1"
log_file = "$T/$1.log"
shutdown_timeout = 5
miner { model = "test-model" gpu_probe = false max_tokens = 8 worker_name = "$1" }
plugin "transport-ws" { reconnect_min_ms = 100 reconnect_max_ms = 500 }
plugin "backend-ref" { checkpoint = "$3" kernel_profile = "$4" threads = 1 max_batch = 2 ${REF_MORE:-} }
plugin "verifier-toploc" { topk = 128 decode_batching_size = 32 }
C
		n=$1 k=$2
		shift 4
		env GW="$GW" MINER_KEY="$k" "$@" "$ENGYD" --no-dlclose -c "$T/$n.conf" 2> "$T/$n.stderr" &
		MPID=$! MNAME=$n
		PIDS="$PIDS $MPID"
		wait_for "$T/$n.log" "event=admit" 60 || fail "$n: $(tail -5 "$T/$n.log")"
	}
	stop_miner() {
		kill -TERM "$MPID"
		wait "$MPID" && rc=0 || rc=$?
		stopped_clean "miner $MNAME" "$rc" "$T/$MNAME.log" "$T/$MNAME.stderr"
	}
	# verdicts NAME HOTKEY N: wait for N verdict lines of each scheme for HOTKEY
	verdicts() {
		i=0
		while [ "$(grep -c "event=verdict .* miner=$2 .* scheme=gemm " "$T/auditor.log")" -lt "$3" ] ||
			[ "$(grep -c "event=verdict .* miner=$2 .* scheme=toploc " "$T/auditor.log")" -lt "$3" ]; do
			i=$((i + 1)); [ $i -le 1200 ] || fail "$1: verdicts $(grep "miner=$2" "$T/auditor.log" | tail -3)"
			sleep 0.1
		done
	}
	KH=$(miner_key $HK_B --label honest)
	KC=$(miner_key $HK_C --label int4)
	KS=$(miner_key $HK_D --label silent)
	KG=$(miner_key $HK_E --label gone)
	engy_miner honest "$KH" "$T/m" splitk
	HPID=$MPID
	ROOT=$(sed -n 's/.*event=miner_prepared .*model_root=\([0-9a-f]*\).*/\1/p' "$T/honest.log")
	A models root-add test-model --root "$ROOT" > /dev/null || fail "root-add"
	A models put test-model --toploc-v 10 --toploc-mant-mean 2 --toploc-mant-median 2 --gemm-rate 1 > /dev/null ||
		fail "toploc limits (the devnet model spec's), every audited answer opened"
	# the honest miner's commitment, replayed later by a miner that never opens
	[ "$(chat replay)" = 200 ] || fail "replay chat: $(cat "$T/chat.out")"
	internal '/internal/v1/tee/sample?n=1000' > /dev/null
	js "$T/int.out" "j.entries[j.entries.length - 1].commitment" > "$T/replay.json"
	[ "$(js "$T/replay.json" "typeof j.gemm.trace_root + ' ' + j.gemm.hashing")" = "string engy-ga1" ] ||
		fail "no gemm member: $(head -c 600 "$T/replay.json")"
	# before any auditor: the engy miner's own answers to opens of that
	# held entry (a challenge of layer 0, position 0; one it cannot read)
	RS=$(js "$T/int.out" "j.entries[j.entries.length - 1].seq")
	Z=$(printf '00%.0s' $(seq 32))
	[ "$(open "$RS" "{\"seq\":$RS,\"challenge\":{\"nonce\":\"$Z\",\"cells\":[[0,0]]}}")" = 200 ] &&
		[ "$(js "$T/int.out" "typeof j.opening + ' ' + (JSON.stringify(j.opening).length > 64)")" = "object true" ] ||
		fail "engy miner's opening: $(head -c 300 "$T/int.out")"
	[ "$(open "$RS" "{\"seq\":$RS,\"challenge\":{\"bogus\":1}}")" = 200 ] &&
		[ "$(js "$T/int.out" "j.status + ' ' + j.error")" = "miner_error malformed" ] ||
		fail "engy miner, a bad challenge: $(cat "$T/int.out")"
	grep -q "event=gemm_opening .* outcome=sent" "$T/honest.log" &&
		grep -q "event=gemm_opening .* outcome=malformed" "$T/honest.log" || fail "miner log: $(grep gemm_open "$T/honest.log")"
	ok "an engy miner (backend-ref) answers an open of its held answer with the opening, a challenge it cannot read with error malformed"
	SPEC_ROOT=$("$ENGYCTL" model-spec build "$T/m" | tr -d ' \t\n' |
		sed -n 's/.*"model_root":"\([0-9a-f]\{64\}\)".*/\1/p')
	[ -n "$SPEC_ROOT" ] || fail "model-spec build"
	"$ENGYCTL" keys new --out "$T/master" --seed-hex $(printf 'ee%.0s' $(seq 32)) > /dev/null
	chmod 600 "$T/master"
	cat > "$T/auditor.conf" <<C
role = "auditor"
plugin_dir = "$T/plug"
state_dir = "$T/state"
log_file = "$T/auditor.log"
shutdown_timeout = 5
plugin "backend-ref" { checkpoint = "$T/m" threads = 1 name = "test-model" }
plugin "verifier-toploc" { }
plugin "verifier-gemm" { checkpoint = "$T/m" spec_root = "$SPEC_ROOT" }
plugin "scorer-sn53" { }
plugin "store-sqlite" { }
auditor {
  tee_url = "http://127.0.0.1:$HPORT/internal/v1/tee/sample"
  sample_ppm = 1000000
  pull_s = 1
  gemm_miss_allowance = 1
}
C
	"$ENGYD" --no-dlclose -c "$T/auditor.conf" 2> "$T/auditor.stderr" &
	APID=$!
	PIDS="$PIDS $APID"
	wait_for "$T/auditor.log" "event=ready" 60 || fail "auditor: $(tail -5 "$T/auditor.log")"
	for i in 1 2; do
		[ "$(chat "honest$i")" = 200 ] || fail "honest chat $i"
	done
	verdicts honest "$HK_B" 3
	grep "event=verdict .* miner=$HK_B " "$T/auditor.log" > "$T/v-honest"
	[ "$(grep -c ' verdict=pass ' "$T/v-honest")" = 6 ] || fail "honest: $(cat "$T/v-honest")"
	grep -q 'event=gemm_opening .* outcome=sent' "$T/honest.log" || fail "the honest miner sent no opening"
	ok "an honest engy miner (splitk kernels) passes both schemes on 3 answers: toploc and gemm (its trace opened and checked)"
	stop_miner
	# INT4 weights claiming the canonical checkpoint: first with its trace
	# bound to its own weights' root, then lying about that too
	engy_miner int4 "$KC" "$T/m4" ref ENGY_MODEL_ROOT="$ROOT"
	[ "$(chat int4)" = 200 ] || fail "int4 chat"
	verdicts int4 "$HK_C" 1
	grep -q "event=verdict .* miner=$HK_C .* scheme=gemm verdict=cheat reason=spec_root " "$T/auditor.log" ||
		fail "int4 gemm: $(grep "miner=$HK_C .* scheme=gemm" "$T/auditor.log")"
	grep -q "event=verdict .* miner=$HK_C .* scheme=toploc verdict=cheat " "$T/auditor.log" ||
		fail "int4 toploc: $(grep "miner=$HK_C .* scheme=toploc" "$T/auditor.log")"
	stop_miner
	KC2=$K1 # HK_A: part A's scripted miner, no verdict yet
	REF_MORE="gemm_spec_root = \"$SPEC_ROOT\"" engy_miner int4-liar "$KC2" "$T/m4" ref ENGY_MODEL_ROOT="$ROOT"
	[ "$(chat int4liar)" = 200 ] || fail "int4-liar chat"
	verdicts int4-liar "$HK_A" 1
	grep -q "event=verdict .* miner=$HK_A .* scheme=gemm verdict=cheat reason=product " "$T/auditor.log" ||
		fail "int4-liar gemm: $(grep "miner=$HK_A .* scheme=gemm" "$T/auditor.log")"
	grep -q "event=verdict .* miner=$HK_A .* scheme=toploc verdict=cheat " "$T/auditor.log" ||
		fail "int4-liar toploc: $(grep "miner=$HK_A .* scheme=toploc" "$T/auditor.log")"
	ok "an INT4 miner claiming the canonical root is cheat in both schemes: gemm spec_root (its trace binds its own weights), and gemm product when it claims the pinned weight root too"
	stop_miner
	# The non-answer rule (specs/auditor.md): misses within the allowance
	# (1) are unproven, beyond it cheat; silence is cheat at once.
	echo error > "$T/gone.mode"
	pm gone "$KG" PM_ROOT="$ROOT" PM_OPEN_FILE="$T/gone.mode" PM_COMMITMENT_FILE="$T/replay.json"
	[ "$(chat gone1)" = 200 ] || fail "gone chat 1"
	verdicts gone "$HK_E" 1
	grep -q "event=verdict .* miner=$HK_E .* scheme=gemm verdict=unproven reason=miner_not_held " "$T/auditor.log" ||
		fail "miner error: $(grep "miner=$HK_E .* scheme=gemm" "$T/auditor.log")"
	echo close > "$T/gone.mode"
	[ "$(chat gone2)" = 200 ] || fail "gone chat 2"
	verdicts gone "$HK_E" 2
	grep -q "event=gemm_miss .* miner=$HK_E reason=gone misses=2 allowance=1" "$T/auditor.log" ||
		fail "gone miss: $(grep gemm_miss "$T/auditor.log")"
	grep -q "event=verdict .* miner=$HK_E .* scheme=gemm verdict=cheat reason=no_opening " "$T/auditor.log" ||
		fail "gone beyond the allowance: $(grep "miner=$HK_E .* scheme=gemm" "$T/auditor.log")"
	ok "a miner that cannot open (not_held) is unproven within the allowance (1); its next miss (the leg gone) is cheat no_opening"
	pm silent "$KS" PM_ROOT="$ROOT" PM_OPEN=silent PM_COMMITMENT_FILE="$T/replay.json"
	# the model's gemm_rate 0: audited (TOPLOC), never opened
	A models put test-model --gemm-rate 0 > /dev/null || fail "gemm_rate 0"
	[ "$(chat silent0)" = 200 ] || fail "silent0 chat"
	i=0
	while [ "$(grep -c "event=verdict .* miner=$HK_D .* scheme=toploc " "$T/auditor.log")" -lt 1 ]; do
		i=$((i + 1)); [ $i -le 1200 ] || fail "silent0: no toploc verdict"
		sleep 0.1
	done
	# then every answer opened, on 2 layers x 3 positions
	A models put test-model --gemm-rate 1 --gemm-layers 2 --gemm-tokens 3 > /dev/null || fail "gemm sizes"
	[ "$(chat silent)" = 200 ] || fail "silent chat"
	verdicts silent "$HK_D" 1
	# jobs are judged one at a time: silent0's verdicts were all logged
	[ "$(grep -c "event=verdict .* miner=$HK_D .* scheme=gemm " "$T/auditor.log")" = 1 ] &&
		[ "$(grep -c "event=verdict .* miner=$HK_D .* scheme=toploc " "$T/auditor.log")" = 2 ] ||
		fail "gemm_rate 0 opened: $(grep "miner=$HK_D" "$T/auditor.log")"
	# 3 positions on each drawn layer, except lm_head when it is drawn
	# (the nonce decides): it has rows only at n_prompt-1 .. n_tokens-2
	n_out=$(js "$T/replay.json" "j.gemm.n_tokens - j.gemm.n_prompt")
	lm=$((n_out < 3 ? n_out : 3))
	[ "$(grep -c '^gemm_open ' "$T/pm-silent.out")" = 1 ] &&
		grep -Eq "^gemm_cells [^ ]* layers=2 cells=(6|$((3 + lm)))\$" "$T/pm-silent.out" ||
		fail "the challenge (lm_head $lm positions): $(grep '^gemm_' "$T/pm-silent.out")"
	ok "the model's GEMM rate and sizes: gemm_rate 0 opens nothing (TOPLOC still judged), gemm_layers 2 x gemm_tokens 3 challenges 2 layers, 3 positions each (lm_head: at most its output rows)"
	grep -q "event=verdict .* miner=$HK_D .* scheme=gemm verdict=cheat reason=no_opening " "$T/auditor.log" ||
		fail "silent gemm: $(grep "miner=$HK_D .* scheme=gemm" "$T/auditor.log")"
	grep -q '^gemm_open ' "$T/pm-silent.out" || fail "the silent miner was never asked"
	ok "a connected miner that never answers the opening (a replayed honest commitment): gemm cheat no_opening at the gateway's deadline"
	kill -TERM "$APID"
	wait "$APID" || fail "auditor exit $?: $(tail -5 "$T/auditor.log")"
	gw_stop d
	for f in "$T"/honest.log "$T"/int4.log "$T"/auditor.log "$T"/d.log; do
		grep -qa 'BUYER-honest\|BUYER-int4' "$f" && fail "prompt text in $f"
	done
	ok "no prompt text in the miners', the auditor's or the gateway's logs"
else
	skip_part "engy end to end: backend-ref, verifier-toploc, verifier-gemm or scorer-sn53 not built"
fi

# --- the buyer's money -------------------------------------------------------------------------------
line=$(A accounts show buyer | head -1)
m6() { echo "$line" | sed -n "s/.* $1=\([0-9.-]*\).*/\1/p" | awk -F. '{ printf "%d\n", $1 * 1000000 + $2 }'; }
logged=$(A log tail -n 100000 --account buyer | sed -n 's/.* cost=\([0-9.]*\).*/\1/p' |
	awk -F. '{ s += $1 * 1000000 + $2 } END { printf "%d\n", s }')
[ "$(m6 reserved)" = 0 ] || fail "reserved: $line"
[ "$(($(m6 credited) - $(m6 spent)))" = "$(m6 balance)" ] || fail "balance: $line"
[ "$logged" = "$(m6 spent)" ] && [ "$logged" -gt 0 ] || fail "log costs $logged != spent: $line"
ok "money: nothing reserved, balance = credited - spent, spent = the request log's costs ($logged µUSD)"

no_sanitizer_reports
echo "$N_OK passed, 0 failed"
