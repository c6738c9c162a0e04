#!/bin/sh
# SPDX-License-Identifier: MIT
# The light validator end to end on 127.0.0.1: engyd's validator role on
# chain-dev, against a local provider (epoch_provider.mjs) whose payloads
# are signed by @scure/sr25519.  Asserts the weights that land (uids and
# renormalized u16 values), the resubmit interval, every rejection reason
# with the fallback to the cached vector, the replay guard within a run and
# across restarts, the 1 MiB fetch cap, standby (cache, then burn to the
# owner), the burn tripwire, a missing permit and commit-reveal in an unknown
# version reported as such (the commit path: validator_commit.sh), a
# corrupted state file, the heartbeat file and `engyctl validator health`,
# the signed provider heartbeat, the watchdog, and configuration refusals.
# Oracle: epoch_provider.mjs signs payloads with @scure/sr25519
# (independent); the expected renormalized weights are written out in the
# script, hand-derived from specs/validator.md.
. "$top_srcdir/tests/integration/lib.sh"
PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$PEERS/@scure/sr25519" ]; then
  skip_or_fail "no test peers at $PEERS (npm ci --prefix tests/peers)"
fi
command -v node >/dev/null || fail "node is required with the test peers"
make_plugin_dir "$T/plugins"
[ -e "$T/plugins/chain-dev.so" ] || fail "chain-dev.so was not built"

MASTER_SEED=0101010101010101010101010101010101010101010101010101010101010101
export MASTER_SEED
key() {  # name [seed]: a hotkey file; prints its SS58 address
  mkdir -p "$(dirname "$T/$1")"
  if [ -n "${2:-}" ]; then
    "$ENGYCTL" keys new --out "$T/$1" --seed-hex "$2"
  else
    "$ENGYCTL" keys new --out "$T/$1"
  fi | sed -n 's/^ss58Address: //p'
}
VAL=$(key wallets/w/hotkeys/v 2222222222222222222222222222222222222222222222222222222222222222)
MASTER=$(key master "$MASTER_SEED")
A=$(key a)
B=$(key b)
C=$(key c)
[ -n "$VAL" ] && [ -n "$MASTER" ] && [ -n "$A" ] || fail "keys new printed no address"

provider() {  # mode epoch weights-json
  printf '{"mode":"%s","netuid":53,"epoch":%s,"weights":%s}\n' "$1" "$2" "$3" > "$T/provider.json.tmp"
  mv "$T/provider.json.tmp" "$T/provider.json"
}
VEC="[[\"$A\",40000],[\"$B\",20000],[\"$C\",5535]]"
provider good 5 "$VEC"
node "$top_srcdir/tests/integration/epoch_provider.mjs" "$PEERS" "$T/provider.json" \
  "$T/beats.jsonl" > "$T/provider.out" 2>&1 &
PIDS="$PIDS $!"
wait_for "$T/provider.out" "^port" 60 || fail "provider did not start: $(cat "$T/provider.out")"
PORT=$(sed -n 's/^port \([0-9]*\) .*/\1/p' "$T/provider.out")
grep -q "master $MASTER" "$T/provider.out" || fail "the provider signs with another key: $(cat "$T/provider.out")"

conf() {  # name, extra validator options, extra chain-dev options
  cat > "$T/$1.conf" <<C
role = "validator"
plugin_dir = "$T/plugins"
state_dir = "$T/state"
log_file = "$T/$1.log"
validator {
  wallet = "w"
  hotkey = "v"
  wallet_path = "$T/wallets"
  api = "http://127.0.0.1:$PORT/"
  master_hotkey = "$MASTER"
  poll_s = 1
  resubmit_blocks = 3
  block_s = 1
  fetch_timeout_s = 5
  $2
}
plugin "chain-dev" {
  file = "$T/weights.jsonl"
  block_ms = 1000
  rate_limit = 2
  hotkeys = { "$VAL", "$A", "$B", "$MASTER" }
  $3
}
C
  chmod 600 "$T/$1.conf"
}
start() {  # name
  "$ENGYD" -c "$T/$1.conf" 2> "$T/$1.stderr" &
  PID=$!
  PIDS="$PIDS $PID"
}
stop() {  # SIGTERM; engyd must exit 0 with nothing on stderr (sanitizers)
  kill -TERM "$PID" 2>/dev/null || true
  wait "$PID" && rc=0 || rc=$?
  [ "$rc" = 0 ] || fail "engyd exited $rc: $(tail -20 "$T"/*.stderr)"
  if grep -l 'Sanitizer\|runtime error' "$T"/*.stderr 2>/dev/null; then
    fail "sanitizer report: $(cat "$T"/*.stderr)"
  fi
}
lines() { wc -l < "$1" 2>/dev/null || echo 0; }
# after FILE MARK NEEDLE SECONDS: NEEDLE in FILE's lines after line MARK
after() {
  i=0
  while ! tail -n "+$(($2 + 1))" "$1" 2>/dev/null | grep -q -- "$3"; do
    i=$((i + 1)); [ $i -le $(($4 * 20)) ] || return 1; sleep 0.05
  done
}
state() { "$ENGYCTL" validator state --state-dir "$T/state"; }
# beats_after MARK COUNT SECONDS: wait until COUNT heartbeats past line MARK
# of beats.jsonl have arrived; prints them
beats_after() {
  i=0
  while [ "$(tail -n "+$(($1 + 1))" "$T/beats.jsonl" 2>/dev/null | wc -l)" -lt "$2" ]; do
    i=$((i + 1)); [ $i -le $(($3 * 20)) ] || return 1; sleep 0.05
  done
  tail -n "+$(($1 + 1))" "$T/beats.jsonl"
}
# beat_for MARK EPOCH SECONDS: the first heartbeat past line MARK that
# reports synced_epoch EPOCH
beat_for() {
  i=0
  while ! tail -n "+$(($1 + 1))" "$T/beats.jsonl" 2>/dev/null | grep -q "\"synced_epoch\":$2[,}]"; do
    i=$((i + 1)); [ $i -le $(($3 * 20)) ] || return 1; sleep 0.05
  done
  tail -n "+$(($1 + 1))" "$T/beats.jsonl" | grep -m1 "\"synced_epoch\":$2[,}]"
}
VER='"version":"engy/[^"]*"'

# --- a new epoch lands at once, renormalized, hotkeys resolved ---
conf run "" ""
start run
wait_for "$T/run.log" "outcome=submitted epoch=5 source=payload" 15 ||
  fail "epoch 5 not submitted: $(tail -20 "$T/run.log")"
ok "a verified new epoch is submitted at once"
line=$(tail -1 "$T/weights.jsonl")
case "$line" in *"\"hotkey\":\"$VAL\",\"uid\":0,\"ok\":true,\"uids\":[1,2],\"weights\":[43690,21845]"*) ;;
  *) fail "weights on the dev chain: $line";; esac
ok "uids resolved from the metagraph, weights renormalized onto 65535 (43690 + 21845)"
grep -q "event=hotkey_unregistered vector=payload hotkey=$C weight=5535" "$T/run.log" &&
  grep -q 'event=hotkeys_dropped vector=payload count=1 of=3 weight_share_pct=8.4' "$T/run.log" ||
  fail "dropped hotkey not logged: $(grep dropped "$T/run.log")"
ok "an unregistered hotkey is logged with the share of weight it held"
out=$(state)
case "$out" in *"last_applied: 5"*"cached_digest: "*"cached_weights: 3 rows"*) ;; *) fail "state: $out";; esac
ok "the state file holds the epoch, the block, the time and the cached vector"
wait_for "$T/beats.jsonl" '"ok":true' 60 || fail "no provider heartbeat: $(cat "$T/beats.jsonl" 2>/dev/null)"
grep -q "\"hotkey\":\"$VAL\",\"body\":{\"v\":1,\"version\":\"engy/[^\"]*\",\"synced_epoch\":5,\"consensus\":{\"epoch_index\":5,\"digest\":\"[0-9a-f]\{64\}\"}}" "$T/beats.jsonl" ||
  fail "heartbeat body: $(tail -1 "$T/beats.jsonl")"
ok "the provider heartbeat is signed by the validator's hotkey (verified by @scure/sr25519)"
expect_ok "health is 0 while the heartbeat is fresh" "ok (last tick" \
  "$ENGYCTL" validator health --state-dir "$T/state"

# --- the same epoch waits its interval ---
# From the first submission's line: the skips come in the 80% of the
# interval after it (about 2.4 s), which the checks above may outlast on
# a loaded machine.
mark=$(grep -n "outcome=submitted epoch=5 source=payload" "$T/run.log" | head -1 | cut -d: -f1)
after "$T/run.log" "$mark" 'next resubmit in .* (not contacting the chain yet)' 60 ||
  fail "no pre-gate skip: $(tail -5 "$T/run.log")"
ok "a resubmission is not even attempted before 80% of the interval by the clock"
after "$T/run.log" "$mark" "outcome=submitted epoch=5 source=payload standby=no uids=2 block=[0-9]* blocks_since_last=[3-9]" 60 ||
  fail "no resubmission after the interval: $(tail -5 "$T/run.log")"
b1=$(sed -n '1s/^{"block":\([0-9]*\).*/\1/p' "$T/weights.jsonl")
b2=$(sed -n '2s/^{"block":\([0-9]*\).*/\1/p' "$T/weights.jsonl")
[ $((b2 - b1)) -ge 3 ] || fail "resubmitted after $((b2 - b1)) blocks"
ok "the same epoch is resubmitted only after resubmit_blocks (here $((b2 - b1)) blocks later)"

# --- every rejection reason; the cached vector keeps the validator on chain ---
for reason in version netuid malformed digest signature; do
  mark=$(lines "$T/run.log")
  provider "$reason" 5 "$VEC"
  after "$T/run.log" "$mark" "event=payload_rejected reason=$reason " 60 ||
    fail "no rejection '$reason': $(tail -5 "$T/run.log")"
done
ok "payloads are rejected by name: version, netuid, malformed, digest, signature"
mark=$(lines "$T/run.log")
provider badweights 5 "$VEC"
after "$T/run.log" "$mark" "event=payload_rejected reason=malformed detail=\"[^\"]*weight" 60 ||
  fail "bad weights not rejected: $(tail -5 "$T/run.log")"
after "$T/run.log" "$mark" "event=fallback_cached epoch=5 rows=3" 60 || fail "no fallback"
after "$T/run.log" "$mark" "outcome=submitted epoch=5 source=cached" 60 ||
  fail "cached vector not resubmitted: $(tail -5 "$T/run.log")"
[ "$(tail -1 "$T/weights.jsonl" | sed 's/.*"uids"/"uids"/')" = '"uids":[1,2],"weights":[43690,21845]}' ] ||
  fail "fallback vector differs: $(tail -1 "$T/weights.jsonl")"
ok "a rejected payload falls back to the cached vector, on the same cadence"
mark=$(lines "$T/run.log")
provider down 5 "$VEC"
after "$T/run.log" "$mark" 'event=fetch_failed .*error="HTTP 503"' 60 || fail "no fetch failure"
provider big 5 "$VEC"
after "$T/run.log" "$mark" 'event=fetch_failed .*error="payload over 1048576 bytes"' 60 ||
  fail "Content-Length over the cap accepted: $(tail -3 "$T/run.log")"
mark=$(lines "$T/run.log")
provider chunked 5 "$VEC"
after "$T/run.log" "$mark" 'event=fetch_failed .*error="payload over 1048576 bytes"' 60 ||
  fail "a chunked body over the cap accepted: $(tail -3 "$T/run.log")"
ok "fetch failures fall back too; bodies over 1 MiB are refused by length and by count"

# --- the replay guard, then a new epoch at once ---
mark=$(lines "$T/run.log")
provider good 4 "$VEC"
after "$T/run.log" "$mark" "event=payload_older epoch=4 last_applied=5" 60 || fail "epoch 4 not refused"
bmark=$(lines "$T/beats.jsonl")
beats=$(beats_after "$bmark" 2 60) || fail "no heartbeat after the replayed epoch"
echo "$beats" | grep -q '"epoch_index":4' && fail "the heartbeat claims the refused epoch 4: $beats"
echo "$beats" | tail -1 | grep -q "\"synced_epoch\":5,\"consensus\":{\"epoch_index\":5," ||
  fail "the heartbeat does not report the submitted epoch 5: $beats"
ok "after a replayed older epoch the heartbeat still reports the submitted one"
mark=$(lines "$T/run.log")
provider good 6 "[[\"$B\",1],[\"$A\",2],[\"$A\",1]]"
after "$T/run.log" "$mark" "outcome=submitted epoch=6 source=payload" 60 || fail "epoch 6 not submitted"
grep -q "event=hotkeys_duplicate vector=payload count=1 first=$A " "$T/run.log" ||
  fail "a hotkey listed twice was summed silently: $(grep -c duplicate "$T/run.log")"
grep -q '"epoch":4\|epoch=4 source' "$T/run.log" && fail "epoch 4 was submitted"
tail -1 "$T/weights.jsonl" | grep -q '"uids":\[1,2\],"weights":\[49152,16383\]' ||
  fail "epoch 6 vector: $(tail -1 "$T/weights.jsonl")"
ok "an older epoch is never submitted; a newer one goes at once (a hotkey listed twice: summed, and said)"
stop

# --- the monotonic guard across a restart ---
provider good 5 "$VEC"
mark=$(lines "$T/run.log")
start run
bmark=$(lines "$T/beats.jsonl")
after "$T/run.log" "$mark" "event=payload_older epoch=5 last_applied=6" 60 ||
  fail "restart forgot the applied epoch: $(tail -5 "$T/run.log")"
beats=$(beats_after "$bmark" 1 60) || fail "no heartbeat after a restart"
echo "$beats" | head -1 | grep -q "\"synced_epoch\":6,\"consensus\":{\"epoch_index\":6,\"digest\":\"[0-9a-f]\{64\}\"}}" ||
  fail "after a restart the heartbeat does not report the state file's epoch 6: $beats"
stop
state | grep -q "last_applied: 6" || fail "state after restart: $(state)"
ok "after a restart, an older epoch is still refused and the heartbeat reports the state file's (6)"

# --- a corrupted state file: bad fields dropped, never submitted ---
printf '{"v":1,"last_applied":"six","last_submit_block":12,"cached_weights":[["%s"]],"cached_digest":"zz"}' "$A" > "$T/state/validator-state.json"
provider down 5 "$VEC"
n=$(lines "$T/weights.jsonl")
mark=$(lines "$T/run.log")
start run
after "$T/run.log" "$mark" "event=state_fields_dropped .*fields=last_applied,cached_digest,cached_weights" 60 ||
  fail "corrupt fields not named: $(tail -5 "$T/run.log")"
bmark=$(lines "$T/beats.jsonl")
after "$T/run.log" "$mark" 'outcome=skipped reason="fetch failed: HTTP 503; no cached vector to fall back on"' 60 ||
  fail "corrupt cache used: $(tail -5 "$T/run.log")"
beats=$(beats_after "$bmark" 1 60) || fail "no heartbeat when nothing verified in this process"
echo "$beats" | head -1 | grep -q "\"body\":{\"v\":1,$VER}}\$" ||
  fail "not a liveness-only heartbeat: $beats"
stop
[ "$(lines "$T/weights.jsonl")" = "$n" ] || fail "something was submitted from a corrupt state"
ok "a corrupted state file: each bad field dropped and named, nothing of it submitted, liveness reported"

# --- standby: nothing lands -> the cached vector, else a burn to the owner ---
rm -f "$T/state/validator-state.json"
provider good 7 "$VEC"
mark=$(lines "$T/run.log")
start run
after "$T/run.log" "$mark" "outcome=submitted epoch=7 source=payload" 60 || fail "epoch 7"
mark=$(lines "$T/run.log")
provider good 8 "[[\"$C\",65535]]"
after "$T/run.log" "$mark" "event=burn_target_unexpected target=$C expected=$MASTER" 60 ||
  fail "no burn tripwire: $(tail -5 "$T/run.log")"
bmark=$(lines "$T/beats.jsonl")
after "$T/run.log" "$mark" "outcome=submitted epoch=8 source=cached standby=yes" 60 ||
  fail "standby did not resubmit the cache: $(tail -5 "$T/run.log")"
beats=$(beat_for "$bmark" 8 60) || fail "no heartbeat for epoch 8 after standby"
echo "$beats" | grep -q "\"body\":{\"v\":1,$VER,\"synced_epoch\":8}}\$" ||
  fail "standby (epoch 7's vector under epoch 8): the heartbeat claims a digest: $beats"
state | grep -q "last_applied: 8" || fail "standby did not advance the schedule"
state | grep -q "cached_weights: 3 rows" || fail "standby replaced the cache: $(state)"
ok "standby resubmits the cached vector, advances the schedule, keeps the cache, claims no digest"
stop
printf '{"v":1,"last_applied":8}' > "$T/state/validator-state.json"
provider good 9 "[[\"$C\",65535]]"
mark=$(lines "$T/run.log")
bmark=$(lines "$T/beats.jsonl")
start run
after "$T/run.log" "$mark" "outcome=submitted epoch=9 source=burn standby=yes uids=1" 60 ||
  fail "no burn to the owner: $(tail -5 "$T/run.log")"
tail -1 "$T/weights.jsonl" | grep -q '"uids":\[3\],"weights":\[65535\]' || fail "burn: $(tail -1 "$T/weights.jsonl")"
beats=$(beat_for "$bmark" 9 60) || fail "no heartbeat for epoch 9 after the burn"
echo "$beats" | grep -q "\"body\":{\"v\":1,$VER,\"synced_epoch\":9}}\$" ||
  fail "a burn: the heartbeat claims the digest of a vector that did not land: $beats"
ok "with no cache, standby burns to the expected owner (uid 3); the heartbeat claims no digest"
stop

# --- the chain refuses: no validator permit, commit-reveal ---
rm -f "$T/state/validator-state.json" "$T/weights.jsonl"
provider good 10 "$VEC"
conf noperm "" 'permits = { "1", "2" }
  hotkeys_file = "'"$T/hotkeys.txt"'"'
printf '# the subnet, uid = line\n%s\n%s  # miner A\n\n%s\n%s\n' "$VAL" "$A" "$B" "$MASTER" > "$T/hotkeys.txt"
sed -i '/^  hotkeys = /d' "$T/noperm.conf"
start noperm
wait_for "$T/noperm.log" "outcome=failed" 60 || fail "no failure: $(tail -5 "$T/noperm.log")"
grep -q 'outcome=failed epoch=10 source=payload block=[0-9]* error="SubtensorModule.NeuronNoValidatorPermit" hint="no validator permit' "$T/noperm.log" ||
  fail "permit failure not named: $(grep outcome= "$T/noperm.log")"
grep -q "event=no_validator_permit hotkey=$VAL uid=0" "$T/noperm.log" || fail "no permit warning"
stop
[ ! -e "$T/state/validator-state.json" ] || fail "a failed submission wrote the state file"
ok "a hotkey without a validator permit: the chain's refusal reaches the log as such"
conf cr "" "commit_reveal = true
  commit_reveal_version = 7"
start cr
wait_for "$T/cr.log" "outcome=refused" 60 || fail "commit-reveal: $(tail -5 "$T/cr.log")"
grep -q 'reason="commit-reveal is enabled on subnet 53' "$T/cr.log" || fail "commit-reveal not said plainly"
stop
! grep -q '"commit"' "$T/weights.jsonl" || fail "commit-reveal: a commit was submitted: $(cat "$T/weights.jsonl")"
ok "commit-reveal in a version engy does not speak is said plainly, and nothing is submitted"

# --- a state file in a directory that does not exist; a state file lost ---
provider good 11 "$VEC"
conf sdir "state_file = \"$T/sdir/a/validator-state.json\"" ""
sed -i 's/resubmit_blocks = 3/resubmit_blocks = 1000/' "$T/sdir.conf"
start sdir
wait_for "$T/sdir.log" "outcome=submitted epoch=11 source=payload" 15 ||
  fail "epoch 11: $(tail -5 "$T/sdir.log")"
grep -q state_write_failed "$T/sdir.log" && fail "state not written: $(grep state_write_failed "$T/sdir.log")"
"$ENGYCTL" validator state --state "$T/sdir/a/validator-state.json" | grep -q "last_applied: 11" ||
  fail "no state file in the new directory"
ok "the state file's directory is created"
n=$(lines "$T/weights.jsonl")
mark=$(lines "$T/sdir.log")
rm -rf "$T/sdir"
provider good 10 "$VEC"
after "$T/sdir.log" "$mark" "outcome=failed reason=\"state file $T/sdir/a/validator-state.json does not hold epoch 11, submitted by this process, and cannot be rewritten: No such file or directory; the replay guard does not run without it: nothing submitted\"" 60 ||
  fail "a lost state file not refused: $(tail -5 "$T/sdir.log")"
[ "$(lines "$T/weights.jsonl")" = "$n" ] || fail "submitted without the state file: $(tail -1 "$T/weights.jsonl")"
ok "without its state file the validator submits nothing (no replay guard, no submission)"
mark=$(lines "$T/sdir.log")
mkdir -p "$T/sdir/a"
after "$T/sdir.log" "$mark" "event=state_rewritten path=$T/sdir/a/validator-state.json last_applied=11" 60 ||
  fail "the state file was not rewritten: $(tail -5 "$T/sdir.log")"
after "$T/sdir.log" "$mark" "event=payload_older epoch=10 last_applied=11" 60 ||
  fail "the replay guard after the rewrite: $(tail -5 "$T/sdir.log")"
stop
[ "$(lines "$T/weights.jsonl")" = "$n" ] || fail "epoch 10 submitted: $(tail -1 "$T/weights.jsonl")"
ok "once it can, the state file is rewritten from memory and the older epoch refused"

# --- liveness: the watchdog, then health goes stale ---
provider hang 10 "$VEC"
conf dog "watchdog_min_s = 2
  fetch_timeout_s = 30" ""
start dog
i=0
while kill -0 "$PID" 2>/dev/null; do
  i=$((i + 1)); [ $i -le 200 ] || fail "the watchdog did not end engyd"
  sleep 0.05
done
wait "$PID" && rc=0 || rc=$?
[ "$rc" = 1 ] || fail "watchdog exit code $rc"
grep -q 'event=watchdog_exit no_tick_s=[3-9] limit_s=3' "$T/dog.log" || fail "watchdog line: $(tail -3 "$T/dog.log")"
ok "the watchdog exits (code 1) after max(3 x poll, watchdog_min_s) without a completed tick"
# Nothing beats any more: health with --max-age 1 turns to "stale
# heartbeat" once the last beat is over a second old.
i=0
while out=$("$ENGYCTL" validator health --state-dir "$T/state" --max-age 1 2>&1); do
  i=$((i + 1)); [ $i -le 200 ] || fail "health still passes 10 s after engyd ended: $out"
  sleep 0.05
done
case "$out" in *"stale heartbeat"*) ok "health fails once the heartbeat is stale";;
  *) fail "health: no 'stale heartbeat' in: $out";; esac

# --- configuration ---
conf half "" ""
sed -i '/master_hotkey/d' "$T/half.conf"
if "$ENGYD" -c "$T/half.conf" 2>/dev/null; then fail "started with api alone"; fi
grep -q 'option=master_hotkey reason="api and master_hotkey are overridden together or not at all"' "$T/half.log" ||
  fail "half override: $(tail -3 "$T/half.log")"
ok "api and master_hotkey are overridden together or not at all"
conf idle "" ""
sed -i '/wallet = "w"/d; /hotkey = "v"/d' "$T/idle.conf"
rm -rf "$T/state"
start idle
wait_for "$T/idle.log" "event=idle reason=" 60 || fail "no idle line: $(tail -3 "$T/idle.log")"
expect_fail "without a wallet the role idles and health says so" "no heartbeat yet" \
  "$ENGYCTL" validator health --state-dir "$T/state"
stop
echo "$N_OK passed, 0 failed"
