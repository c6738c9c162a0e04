#!/bin/sh
# SPDX-License-Identifier: MIT
# A request that straddles an epoch boundary is scored in the epoch it
# started in (specs/scoring.md §2, specs/auditor.md §3).  A request's row
# carries its start (time_ms) but is written when it ends; the auditor
# used to close an epoch 3 s after its end whatever was still running, so
# a request that started before the boundary and ended later than that
# was in no epoch's result, and the epoch was never scored again.
# Here: a gateway, a scripted miner that holds its answer until this
# script releases it (bad_miner.mjs `held`), and an auditor with the
# master hotkey closing 10 s epochs, all on one store-sqlite file.  The
# request starts in epoch E; the script releases it only once the auditor
# has reached E's close (an epoch_waiting or epoch_closed line for E or
# later), so it ends more than 3 s after E's end; then E's signed weights
# must give the miner all of 65535 (its request is the epoch's only
# counted one), not burn to the owner.
# Expected values come from independent sources: the clock around the
# request and the request log's row (engyctl admin log tail), and
# specs/scoring.md §3.4 (the only counted miner gets all 65535); the
# payload is checked with engyctl epoch verify.
. "$top_srcdir/tests/integration/gateway_lib.sh"

for p in backend-ref verifier-toploc scorer-sn53; do
	[ -f "$T/plug/$p.so" ] || skip_or_fail "$p.so not built"
done
tiny_model
EPOCH_S=10
HK=5DAAnrj7VHTznn2AWBemMuyBwZWs6FNFjdyVXUeYum3PTXFy
A models put tiny --max-input-tokens 4096 --max-output-tokens 64 --max-request-s 120 \
	--price-input 1 --price-output 2 --score-rate 1000 \
	--qual-ttft-p99-ms 600000 --qual-tpot-p99-ms 600000 > /dev/null || fail "models put"
A accounts create acme > /dev/null && A topup acme 1 > /dev/null || fail "account"
KEY=$(A keys create acme 2> /dev/null) || fail "key"
MK=$(register $HK)
"$ENGYCTL" keys new --out "$T/master" --seed-hex $(printf 'ee%.0s' $(seq 32)) > /dev/null
chmod 600 "$T/master"
MASTER=$("$ENGYCTL" keys show "$T/master" | sed -n 's/^ss58Address: //p' | head -1)
[ -n "$MASTER" ] || fail "no master address"

gw_conf "  first_token_timeout_s = 120"
gw_start
peer held held MINER_KEY="$MK" MODEL=tiny RELEASE_FILE="$T/release"
grep -q '^admit' "$T/peer-held.out" || fail "held peer: $(cat "$T/peer-held.out")"

cat > "$T/aud.conf" <<C
role = "auditor"
state_dir = "$T/aud"
log_file = "$T/aud.log"
log_level = "info"
shutdown_timeout = 10
plugin "backend-ref" { checkpoint = "$T/model" threads = 1 name = "tiny" }
plugin "verifier-toploc" { }
plugin "scorer-sn53" { }
plugin "store-sqlite" { path = "$T/gw/engy.db" }
plugin "transport-http" { listen = { "127.0.0.1:0" } }
auditor {
  epoch_s = $EPOCH_S
  hotkey_file = "$T/master"
}
C
mkdir -p "$T/aud"
"$ENGYD" --no-dlclose -c "$T/aud.conf" 2> "$T/aud.stderr" &
AUDPID=$!
PIDS="$PIDS $AUDPID"
wait_for "$T/aud.log" "event=auditor_start" 60 || fail "auditor: $(cat "$T/aud.log" "$T/aud.stderr")"

# --- the request: starts, then is held by the miner --------------------------------
# It starts at least 3 s into an epoch and 5 s before its end (aligning
# with the wall clock, not waiting on an event): its hold is then made
# after the previous epoch's grace, whose close does not wait for it, and
# well before the boundary.
pos=$(($(date +%s%3N) % (EPOCH_S * 1000)))
if [ $pos -lt 3000 ] || [ $pos -gt $((EPOCH_S * 1000 - 5000)) ]; then
	ms=$(((EPOCH_S * 1000 - pos + 3200) % (EPOCH_S * 1000)))
	sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
fi
TB=$(date +%s%3N)
E=$((TB / 1000 / EPOCH_S))
curl -s -D "$T/h" -o "$T/o" -w '%{http_code}\n' -H "Authorization: Bearer $KEY" \
	-H 'Content-Type: application/json' \
	--data '{"model":"tiny","max_tokens":8,"messages":[{"role":"user","content":"straddle"}]}' \
	"$BASE/v1/chat/completions" > "$T/status" &
CURL=$!
peer_wait held "held corr="
# The auditor has reached E's close (it waits, or without the fix closes it).
wait_for "$T/aud.log" "event=epoch_\(waiting\|closed\) epoch=$E " 60 ||
	fail "the auditor did not reach epoch $E's close: $(grep epoch_ "$T/aud.log" | tail -3)"
REL_MS=$(date +%s%3N)
touch "$T/release"
wait "$CURL" || fail "curl"
[ "$(cat "$T/status")" = 200 ] || fail "status $(cat "$T/status"): $(cat "$T/o")"
peer_wait held "released corr="
wait_settled

# The row: its start is in epoch E, its end past E's 3 s grace.
RID=$(sed -n 's/^x-request-id: \([^\r]*\).*/\1/ip' "$T/h")
row=$(A log tail -n 10 --account acme | grep " request=$RID ")
echo "$row" | grep -q " miner=$HK .* status=200 " || fail "request-log row: '$row'"
# It started in E: the row is at or after the time taken before the
# request, and before E's end (5 s after it).
A log tail -n 10 --account acme --since "$TB" | grep -q " request=$RID " ||
	fail "the row is before $TB: $row"
A log tail -n 10 --account acme --since $(((E + 1) * EPOCH_S * 1000)) | grep -q " request=$RID " &&
	fail "the request reached the gateway after epoch $E's end (a machine this slow cannot run the test): $row"
[ "$REL_MS" -ge $(((E + 1) * EPOCH_S * 1000 + 3000)) ] ||
	fail "the request ended at $REL_MS, within epoch $E's grace: not a straddle"
ok "a request started in epoch $E and ended $((REL_MS - (E + 1) * EPOCH_S * 1000)) ms after its end"

# --- E's result: the miner's request is in it ---------------------------------------
wait_for "$T/aud.log" "event=epoch_closed epoch=$E " 60 ||
	fail "epoch $E not closed: $(grep epoch_ "$T/aud.log" | tail -3)"
APORT=$(sed -n 's/.*event=listen addr=127.0.0.1 port=\([0-9]*\).*/\1/p' "$T/aud.log" | head -1)
curl -sf "http://127.0.0.1:$APORT/api/subnet/v1/epoch/$E" > "$T/payload.json" || fail "GET epoch/$E"
"$ENGYCTL" epoch verify --ss58 "$MASTER" --netuid 53 --payload "$T/payload.json" > /dev/null ||
	fail "epoch $E: the payload does not verify"
got=$(node -e 'const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
	console.log(JSON.stringify(JSON.parse(p.result_json).weights));' "$T/payload.json") ||
	fail "epoch $E: payload $(cat "$T/payload.json")"
[ "$got" = "[[\"$HK\",65535]]" ] || fail "epoch $E: weights $got; its one counted request is the miner's: [[\"$HK\",65535]]"
grep -q "event=epoch_waiting epoch=$E open_holds=1 " "$T/aud.log" ||
	fail "the auditor did not wait for the running request: $(grep "epoch=$E " "$T/aud.log")"
ok "epoch $E waited for the running request and gives its miner all of 65535, signed"

money acme
ok "books: reserved 0, balance = credited - spent, spent = the log's costs"

kill -TERM "$AUDPID"
wait "$AUDPID" || fail "auditor exited $? on SIGTERM: $(tail -3 "$T/aud.log")"
[ ! -s "$T/aud.stderr" ] || fail "auditor stderr: $(head -20 "$T/aud.stderr")"
gw_stop
ok "the auditor and the gateway exit 0 on SIGTERM with a clean stderr"
exit 0
