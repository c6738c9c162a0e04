#!/bin/sh
# SPDX-License-Identifier: MIT
# The proof tee and the internal API end to end (specs/gateway.md, "Proof
# tee", "Internal API"): engyd -c as a gateway, a scripted miner
# (probe_miner.mjs) whose commitments carry marker token ids, buyer
# traffic with curl.
#  - /internal/v1/ wants the bearer token: 401 without or with a wrong
#    one, 404 while no token is configured; the token is in no log.
#  - Probes are always in the tee, buyer answers at tee_sample_rate; each
#    entry has its request id (the buyer's x-request-id), miner, worker,
#    model, is_probe, time and the commitment as the miner sent it.
#  - sample pages with since/next/n and filters with probe=; ack drops
#    entries (unknown seqs counted, bad bodies 400).
#  - Entries expire after tee_ttl_s; tee_max_bytes drops the oldest.
#  - Nothing of it is on disk or in a log: the marker ids and the prompt
#    text are nowhere in the state dir or the logs.
#  - With engy's auditor role built: it pulls the probes of an engy miner
#    (backend-ref) from this tee, verifies them, and its verdicts (acks)
#    qualify the miner.
# Oracle: tee entries checked against the marker ids the scripted miner
# sends and the request ids curl saw; the auditor leg is engy against engy.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/gateway_mod_lib.sh"

store_init --qual-ttft-p99-ms 5000 --qual-tpot-p99-ms 5000
K1=$(miner_key $HK_A --label tee)
MARK1=918273645
MARK2=564738291

# --- configuration errors -------------------------------------------------------
gw_conf bad 'onboarding = true
  probe_verify = "gateway"'
"$ENGYD" --no-dlclose -c "$T/bad.conf" 2> /dev/null && fail "probe_verify = gateway without a verifier"
grep -q 'event=config_invalid option=probe_verify reason="gateway needs a proof instance' "$T/bad.log" ||
	fail "probe_verify: $(grep config "$T/bad.log")"
printf '# only comments\n\n' > "$T/empty.txt"
gw_conf bad2 'probe_prompts = "'"$T/empty.txt"'"'
"$ENGYD" --no-dlclose -c "$T/bad2.conf" 2> /dev/null && fail "an empty prompt set"
grep -q 'event=config_invalid option=probe_prompts reason="no prompt in the file"' "$T/bad2.log" ||
	fail "probe_prompts: $(grep config "$T/bad2.log")"
gw_conf bad3 'tee_sample_rate = 1.5'
"$ENGYD" --no-dlclose -c "$T/bad3.conf" 2> /dev/null && fail "tee_sample_rate 1.5"
grep -q 'event=config_invalid option=tee_sample_rate' "$T/bad3.log" || fail "tee_sample_rate"
ok "configuration errors stop engyd with the option named: a gateway verifier without instances, an empty prompt set, a rate over 1"

printf '# the operator'"'"'s private set\nPROBE-SET-one: name a colour.\n\nPROBE-SET-two: count to three.\n' > "$T/prompts.txt"
gw_conf a 'onboarding = true
  probe_count = 4
  probe_verify = "none"
  probe_prompts = "'"$T/prompts.txt"'"
  tee_sample_rate = 0.5
  tee_ttl_s = 120'
gw_start a
grep -q 'event=onboarding_ready onboarding=on verify=none probe_count=4 probe_verdicts=3 prompts=2' "$T/a.log" ||
	fail "prompt set: $(grep onboarding_ready "$T/a.log")"

code() {  # PATH [curl options]: the status without the token
	p=$1
	shift
	curl -s -o "$T/noauth.out" -w '%{http_code}' "$@" "http://127.0.0.1:$HPORT$p"
}

# --- auth -------------------------------------------------------------------
[ "$(code /internal/v1/tee/sample)" = 401 ] || fail "no token: $(cat "$T/noauth.out")"
curl -s -D "$T/h401" -o /dev/null "http://127.0.0.1:$HPORT/internal/v1/workers"
grep -qi '^WWW-Authenticate: Bearer' "$T/h401" || fail "no WWW-Authenticate: $(cat "$T/h401")"
[ "$(code /internal/v1/tee/sample -H 'Authorization: Bearer nope')" = 401 ] || fail "wrong token"
[ "$(code /internal/v1/tee/ack -X POST --data '{}' -H "Authorization: Bearer ${TOKEN}x")" = 401 ] ||
	fail "longer token"
[ "$(code /internal/v1/workers -H "Authorization: Basic $TOKEN")" = 401 ] || fail "basic auth"
[ "$(internal /internal/v1/tee)" = 200 ] || fail "with the token: $(cat "$T/int.out")"
[ "$(internal /internal/v1/nothing)" = 404 ] || fail "unknown internal route"
[ "$(internal /internal/v1/tee/sample -X POST)" = 405 ] || fail "POST sample"
grep -q 'event=internal_auth_failed' "$T/a.log" || fail "refusals not logged"
ok "/internal/v1/ wants the bearer token: 401 (WWW-Authenticate: Bearer) without, with a wrong one, with Basic"

# --- traffic: probes always, buyers sampled ------------------------------------------
pm m1 "$K1" PM_MARK_IDS=$MARK1,$MARK2
wait_state m1 active 10 || fail "m1 did not qualify: $(state m1)"
[ "$(grep -c ' probe good set=1$' "$T/pm-m1.out")" = 4 ] || fail "probes not from the set: $(cat "$T/pm-m1.out")"
: > "$T/rids"
for i in $(seq 1 40); do
	st=$( [ $((i % 2)) = 0 ] && echo true || echo false )
	s=$(curl -s -D "$T/hdr" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $BKEY" \
		-H 'Content-Type: application/json' \
		--data "{\"model\":\"test-model\",\"max_tokens\":4,\"stream\":$st,\"messages\":[{\"role\":\"user\",\"content\":\"BUYER-tee-$i\"}]}" \
		"http://127.0.0.1:$HPORT/v1/chat/completions")
	[ "$s" = 200 ] || fail "buyer $i: $s"
	sed -n 's/^x-request-id: \([^\r]*\).*/\1/ip' "$T/hdr" >> "$T/rids"
done
[ "$(wc -l < "$T/rids")" = 40 ] || fail "request ids: $(wc -l < "$T/rids")"
[ "$(internal '/internal/v1/tee/sample?n=1000')" = 200 ] || fail "sample: $(cat "$T/int.out")"
cp "$T/int.out" "$T/all.json"
NP=$(js "$T/all.json" "j.entries.filter((e) => e.is_probe).length")
NB=$(js "$T/all.json" "j.entries.filter((e) => !e.is_probe).length")
[ "$NP" = 4 ] || fail "probe entries: $NP"
[ "$NB" -ge 6 ] && [ "$NB" -le 34 ] || fail "buyer entries at rate 0.5 of 40: $NB"
node -e '
const fs = require("fs");
const j = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
const rids = new Set(fs.readFileSync(process.argv[2], "utf8").trim().split("\n"));
for (const e of j.entries) {
	const c = e.commitment;
	const ok = typeof e.seq === "number" && /^req_[0-9a-f]+$/.test(e.request_id) &&
		e.miner === process.argv[3] && e.worker_name === "m1" && e.model === "test-model" &&
		e.model_root === "ab".repeat(32) && e.expires_ms - e.time_ms === 120000 &&
		Math.abs(e.time_ms - Date.now()) < 60000 && e.completion_tokens === 4 &&
		c.model_root === "ab".repeat(32) && c.toploc.prompt_ids[0] === Number(process.argv[4]) &&
		c.output_token_ids.length === 4 && (e.is_probe || rids.has(e.request_id));
	if (!ok) { console.log("bad entry " + JSON.stringify(e)); process.exit(1); }
}
const seqs = j.entries.map((e) => e.seq);
if (seqs.some((s, i) => i && s <= seqs[i - 1])) { console.log("not in order"); process.exit(1); }
' "$T/all.json" "$T/rids" "$HK_A" "$MARK1" || fail "entries"
ok "probes (from the configured prompt set) always (4) and buyer answers at rate 0.5 ($NB of 40) are in the tee, in order, with their metadata and commitment"

# --- paging, filters, ack -------------------------------------------------------------------
internal '/internal/v1/tee/sample?n=5' > /dev/null
[ "$(js "$T/int.out" "j.entries.length")" = 5 ] || fail "n=5"
NEXT=$(js "$T/int.out" "j.next")
[ "$NEXT" = "$(js "$T/int.out" "j.entries[4].seq")" ] || fail "next is not the last seq"
SEEN=$(js "$T/int.out" "j.entries.map((e) => e.seq).join(' ')")
while :; do
	internal "/internal/v1/tee/sample?n=7&since=$NEXT" > /dev/null
	[ "$(js "$T/int.out" "j.entries.length")" = 0 ] && break
	SEEN="$SEEN $(js "$T/int.out" "j.entries.map((e) => e.seq).join(' ')")"
	NEXT=$(js "$T/int.out" "j.next")
done
[ "$SEEN" = "$(js "$T/all.json" "j.entries.map((e) => e.seq).join(' ')")" ] || fail "pages: $SEEN"
internal '/internal/v1/tee/sample?probe=1' > /dev/null
[ "$(js "$T/int.out" "j.entries.length + ':' + j.entries.every((e) => e.is_probe)")" = 4:true ] || fail "probe=1"
internal '/internal/v1/tee/sample?probe=0&n=1000' > /dev/null
[ "$(js "$T/int.out" "j.entries.length + ':' + j.entries.some((e) => e.is_probe)")" = "$NB:false" ] || fail "probe=0"
for bad in 'n=0' 'n=1001' 'since=-1' 'probe=2' 'n=abc'; do
	[ "$(internal "/internal/v1/tee/sample?$bad")" = 400 ] || fail "$bad accepted"
done
ok "sample pages by since/next/n (the pages add up to the whole, in order), filters by probe=, refuses bad numbers"

set -- $(js "$T/all.json" "j.entries.slice(0, 3).map((e) => e.seq).join(' ')")
[ "$(internal /internal/v1/tee/ack -X POST --data "{\"acks\":[{\"seq\":$1},{\"seq\":$2,\"verdict\":\"pass\"},{\"seq\":$3,\"verdict\":\"unproven\"},{\"seq\":999999}]}")" = 200 ] ||
	fail "ack: $(cat "$T/int.out")"
[ "$(js "$T/int.out" "[j.acked, j.unknown, j.verdicts].join()")" = 3,1,2 ] || fail "ack answer: $(cat "$T/int.out")"
internal '/internal/v1/tee/sample?n=1000' > /dev/null
[ "$(js "$T/int.out" "j.entries.some((e) => [$1, $2, $3].includes(e.seq))")" = false ] || fail "acked entries still there"
[ "$(js "$T/int.out" "j.entries.length")" = $((NP + NB - 3)) ] || fail "other entries gone"
for body in '' '{"acks":3}' '{"acks":[{"verdict":"pass"}]}' '{"acks":[{"seq":1,"verdict":"maybe"}]}'; do
	[ "$(internal /internal/v1/tee/ack -X POST --data "$body")" = 400 ] || fail "ack body '$body' accepted"
done
[ "$(metric 'engy_gw_tee_dropped_total{reason="acked"}')" = 3 ] || fail "acked metric"
[ "$(metric 'engy_gw_tee_kept_total{kind="probe"}')" = 4 ] || fail "kept probe metric"
[ "$(metric 'engy_gw_tee_kept_total{kind="buyer"}')" = "$NB" ] || fail "kept buyer metric"
[ "$(metric engy_gw_tee_entries)" = $((NP + NB - 3)) ] || fail "entries gauge"
ok "ack drops entries (3 acked, 1 unknown; bad bodies 400); metrics count what was kept and dropped"

# --- nothing on disk, nothing in a log --------------------------------------------------
gw_stop a
for f in "$T"/state/* "$T"/a.log "$T"/a.stderr; do
	grep -qa "$MARK1\|$MARK2\|BUYER-tee\|PROBE-SET-\|$TOKEN" "$f" && fail "tee content or the token in $f"
done
ok "no committed token id, prompt text or token in the state dir or the gateway's logs"

# --- the byte cap ----------------------------------------------------------------------------
gw_conf b 'onboarding = false
  tee_sample_rate = 1
  tee_ttl_s = 8
  tee_max_bytes = 4096'
gw_start b
pm m1 "$K1"
for i in $(seq 1 20); do
	[ "$(chat "cap$i")" = 200 ] || fail "cap $i"
done
internal /internal/v1/tee > /dev/null
B=$(js "$T/int.out" "j.bytes")
E=$(js "$T/int.out" "j.entries")
[ "$B" -le 4096 ] && [ "$E" -ge 2 ] && [ "$E" -lt 20 ] || fail "cap: $(cat "$T/int.out")"
internal '/internal/v1/tee/sample?n=1000' > /dev/null
[ "$(js "$T/int.out" "j.entries.map((e) => e.seq).join(' ')")" = "$(seq $((21 - E)) 20 | tr '\n' ' ' | sed 's/ $//')" ] ||
	fail "not the newest $E: $(js "$T/int.out" "j.entries.map((e) => e.seq).join(' ')")"
[ "$(metric 'engy_gw_tee_dropped_total{reason="cap"}')" = $((20 - E)) ] || fail "cap metric"
ok "tee_max_bytes (4096) keeps the newest $E entries ($B bytes), the oldest $((20 - E)) dropped"

LAST=$(js "$T/int.out" "Math.max(...j.entries.map((e) => e.time_ms))")
i=0
while internal /internal/v1/tee > /dev/null &&
	[ "$(js "$T/int.out" "j.entries + ':' + j.bytes")" != 0:0 ]; do
	i=$((i + 1)); [ $i -le 60 ] || fail "after the ttl: $(cat "$T/int.out")"
	sleep 0.5
done
# Not before its time: the newest entry came at least tee_ttl_s before.
[ $(($(date +%s%3N) - LAST)) -ge 8000 ] || fail "expired early"
internal '/internal/v1/tee/sample?n=1000' > /dev/null
[ "$(js "$T/int.out" "j.entries.length")" = 0 ] || fail "entries after the ttl"
[ "$(metric 'engy_gw_tee_dropped_total{reason="expired"}')" = "$E" ] || fail "expired metric"
ok "entries expire after tee_ttl_s (8 s): the ring is empty, $E counted expired"
gw_stop b

# --- no token: the internal API is off ----------------------------------------------------------
unset ENGY_TEE_TOKEN
gw_conf c 'onboarding = false'
gw_start c
[ "$(code /internal/v1/tee/sample -H 'Authorization: Bearer x')" = 404 ] || fail "no token: tee"
grep -q 'internal API is off' "$T/noauth.out" || fail "404 body: $(cat "$T/noauth.out")"
[ "$(code /internal/v1/workers)" = 404 ] || fail "no token: workers"
gw_stop c
export ENGY_TEE_TOKEN="$TOKEN"
ok "without tee_token the internal API answers 404 (it is off)"

# --- engy's auditor pulls from this tee and qualifies a miner -------------------------------------
if [ -f "$T/plug/backend-ref.so" ] && [ -f "$T/plug/verifier-toploc.so" ] &&
	[ -f "$T/plug/scorer-sn53.so" ]; then
	"$ENGYCTL" mkmodel --arch qwen3 --size tiny --seed 3 --out "$T/m" --quiet || fail mkmodel
	gw_conf d 'onboarding = true
  probe_count = 3
  probe_max_tokens = 8
  probe_verify = "auditor"
  probe_verdicts = 2
  probe_verdict_timeout_s = 120'
	gw_start d
	cat > "$T/miner.conf" <<C
role = "miner"
plugin_dir = "$T/plug"
state_dir = "$T/state-miner"
log_file = "$T/miner.log"
shutdown_timeout = 5
miner { model = "test-model" gpu_probe = false max_tokens = 8 }
plugin "transport-ws" { reconnect_min_ms = 100 reconnect_max_ms = 500 }
plugin "backend-ref" { checkpoint = "$T/m" threads = 1 max_batch = 2 }
plugin "verifier-toploc" { topk = 128 decode_batching_size = 32 }
C
	K2=$(miner_key $HK_B --label engy)
	GW="$GW" MINER_KEY="$K2" ENGY_WORKER_NAME=engy MAX_INFLIGHT=8 \
		"$ENGYD" --no-dlclose -c "$T/miner.conf" 2> "$T/miner.stderr" &
	PIDS="$PIDS $!"
	wait_for "$T/miner.log" "event=admit" 30 || fail "engy miner: $(tail -5 "$T/miner.log")"
	ROOT=$(sed -n 's/.*event=miner_prepared .*model_root=\([0-9a-f]*\).*/\1/p' "$T/miner.log")
	A models root-add test-model --root "$ROOT" > /dev/null || fail "root-add"
	A models put test-model --toploc-v 0 > /dev/null || fail "toploc-v"
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
plugin "scorer-sn53" { }
plugin "store-sqlite" { }
plugin "transport-http" { listen = { "127.0.0.1:0" } }
auditor {
  tee_url = "http://127.0.0.1:$HPORT/internal/v1/tee/sample"
  sample_ppm = 0
  pull_s = 1
  hotkey_file = "$T/master"
}
C
	"$ENGYD" --no-dlclose -c "$T/auditor.conf" 2> "$T/auditor.stderr" &
	APID=$!
	PIDS="$PIDS $APID"
	wait_state engy active 90 ||
		fail "not qualified by the auditor: $(grep -e verdict -e tee "$T/auditor.log" | tail -5) $(grep -e verdict -e onboard "$T/d.log" | tail -5)"
	[ "$(grep -c 'event=probe_verdict worker=[0-9]* round=1 by=auditor verdict=pass' "$T/d.log")" -ge 2 ] ||
		fail "auditor verdicts: $(grep probe_verdict "$T/d.log")"
	grep -q 'event=tee_ack ' "$T/d.log" || fail "no ack reached the tee"
	ok "engy's auditor pulls the probes from this tee, verifies them and its acks (pass) qualify the miner"
	kill -TERM "$APID"
	wait "$APID" || fail "the auditor exited $? on SIGTERM: $(tail -5 "$T/auditor.log") $(cat "$T/auditor.stderr")"
	[ ! -s "$T/auditor.stderr" ] || fail "auditor stderr: $(head -20 "$T/auditor.stderr")"
	ok "the auditor drains and exits 0 on SIGTERM"
	gw_stop d
else
	skip_part "engy's auditor on this tee: backend-ref.so, verifier-toploc.so or scorer-sn53.so not built"
fi
no_sanitizer_reports
echo "$N_OK passed, 0 failed"
