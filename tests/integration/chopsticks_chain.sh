#!/bin/sh
# SPDX-License-Identifier: MIT
# The light validator against a real subtensor runtime: the 2023 testnet
# runtime of fixtures/subtensor/raw_spec_testfinney.json, run offline by
# @acala-network/chopsticks.  A subnet, hotkeys, uids and validator
# permits are set with dev_setStorage; engyd's validator role on
# chain-subtensor (metadata read from the runtime, extrinsics signed in C)
# submits the vector a local provider signs, and the test reads the chain:
# the weights landed (Weights, LastUpdate), a resubmission waits for its
# blocks, a rate-limited and a permitless submission fail with the
# runtime's error names, and a vector over 256 bytes of payload lands
# (the signing payload is hashed).
# Oracle: independent: a real subtensor runtime (the 2023 testnet spec) run
# by @acala-network/chopsticks; the weights are read back from chain
# storage.
. "$top_srcdir/tests/integration/lib.sh"
PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
SPEC=${ENGY_SUBTENSOR_SPEC:-$top_srcdir/../shared/fixtures/subtensor/raw_spec_testfinney.json}
if [ ! -f "$SPEC" ]; then
  skip_or_fail "no subtensor chain spec at $SPEC (the shared fixtures are not beside the checkout)"
fi
if [ ! -x "$PEERS/.bin/chopsticks" ] || [ ! -d "$PEERS/@scure/sr25519" ]; then
  skip_or_fail "no chopsticks in the test peers at $PEERS (npm ci --prefix tests/peers)"
fi
command -v node >/dev/null || fail "node is required with the test peers"
make_plugin_dir "$T/plugins"
[ -e "$T/plugins/chain-subtensor.so" ] || fail "chain-subtensor.so was not built"
started=$(date +%s)
NETUID=53

# --- the chain: chopsticks, offline, from the chain spec ---
"$PEERS/.bin/chopsticks" --genesis="$SPEC" --allow-unresolved-imports \
  --host 127.0.0.1 --port 0 > "$T/chopsticks.log" 2>&1 &
CHOP=$!
PIDS="$PIDS $CHOP"
wait_for "$T/chopsticks.log" "RPC listening on" 90 || fail "chopsticks did not start: $(tail -20 "$T/chopsticks.log")"
CPORT=$(sed -n 's/.*RPC listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$T/chopsticks.log" | head -1)
[ -n "$CPORT" ] || fail "no chopsticks port: $(tail -5 "$T/chopsticks.log")"
CURL="http://127.0.0.1:$CPORT"
ok "chopsticks runs the subtensor runtime offline ($(($(date +%s) - started)) s to start)"
js() { node "$top_srcdir/tests/integration/chopsticks_setup.mjs" "$PEERS" "$@"; }

key() {  # path seed: a hotkey file; prints its SS58 address
  mkdir -p "$(dirname "$T/$1")"
  "$ENGYCTL" keys new --out "$T/$1" --seed-hex "$2" | sed -n 's/^ss58Address: //p'
}
VAL=$(key wallets/w/hotkeys/v 2222222222222222222222222222222222222222222222222222222222222222)
NOPERM=$(key wallets/w/hotkeys/np 3333333333333333333333333333333333333333333333333333333333333333)
MASTER_SEED=0101010101010101010101010101010101010101010101010101010101010101
export MASTER_SEED
MASTER=$(key master "$MASTER_SEED")
js setup "$CURL" "$NETUID" "$VAL" "$NOPERM" 60 > "$T/setup.out" || fail "dev_setStorage: $(cat "$T/setup.out")"
A=$(sed -n 's/^A //p' "$T/setup.out")
B=$(sed -n 's/^B //p' "$T/setup.out")
C=$(sed -n 's/^C //p' "$T/setup.out")
[ -n "$A" ] && [ -n "$B" ] || fail "setup printed: $(cat "$T/setup.out")"
ok "a subnet with 64 uids, two validators (one without a permit) set with dev_setStorage"

# --- the provider ---
provider() {  # epoch weights-json
  printf '{"mode":"good","netuid":%s,"epoch":%s,"weights":%s}\n' "$NETUID" "$1" "$2" > "$T/provider.json.tmp"
  mv "$T/provider.json.tmp" "$T/provider.json"
}
provider 1 "[[\"$A\",40000],[\"$B\",20000],[\"$C\",5535]]"
node "$top_srcdir/tests/integration/epoch_provider.mjs" "$PEERS" "$T/provider.json" \
  "$T/beats.jsonl" > "$T/provider.out" 2>&1 &
PIDS="$PIDS $!"
wait_for "$T/provider.out" "^port" 10 || fail "provider did not start: $(cat "$T/provider.out")"
PPORT=$(sed -n 's/^port \([0-9]*\) .*/\1/p' "$T/provider.out")

conf() {  # name hotkey resubmit_blocks
  cat > "$T/$1.conf" <<C
role = "validator"
plugin_dir = "$T/plugins"
state_dir = "$T/state-$1"
log_file = "$T/$1.log"
validator {
  wallet = "w"
  hotkey = "$2"
  wallet_path = "$T/wallets"
  api = "http://127.0.0.1:$PPORT"
  master_hotkey = "$MASTER"
  netuid = $NETUID
  poll_s = 1
  block_s = 1
  resubmit_blocks = $3
}
plugin "chain-subtensor" {
  endpoint = "ws://127.0.0.1:$CPORT"
  inclusion_timeout_s = 30
  poll_ms = 200
  era_period = 64
}
C
  chmod 600 "$T/$1.conf"
}
start() {
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
after() {  # FILE MARK NEEDLE SECONDS
  i=0
  while ! tail -n "+$(($2 + 1))" "$1" 2>/dev/null | grep -q -- "$3"; do
    i=$((i + 1)); [ $i -le $(($4 * 20)) ] || return 1; sleep 0.05
  done
}

# --- the weights land ---
conf v v 3
start v
wait_for "$T/v.log" "outcome=submitted epoch=1 source=payload" 60 ||
  fail "not submitted: $(grep -E 'event=(tick|metadata|cannot)' "$T/v.log" | tail -5)"
grep 'event=submitted ' "$T/v.log" | head -1 | grep -q 'payload_bytes=[0-9]* signed=payload' ||
  fail "a short payload was hashed"
grep -q 'event=metadata spec_version=103 metadata_version=14 pallets=[0-9]* types=[0-9]* signed_extensions=8' "$T/v.log" ||
  fail "metadata line: $(grep event=metadata "$T/v.log")"
ok "the runtime's metadata v14 is read: pallet and call indices, 8 signed extensions"
blk=$(sed -n 's/.*outcome=submitted epoch=1 source=payload standby=no uids=2 block=\([0-9]*\).*/\1/p' "$T/v.log" | head -1)
[ -n "$blk" ] || fail "no inclusion block: $(grep outcome= "$T/v.log")"
js weights "$CURL" "$NETUID" 0 > "$T/w.out" || fail "reading weights"
grep -q '^weights 1:43690,2:21845$' "$T/w.out" || fail "Weights(53, 0) on chain: $(cat "$T/w.out")"
grep -q "^last_update $blk$" "$T/w.out" || fail "LastUpdate(53)[0] is not the inclusion block $blk: $(cat "$T/w.out")"
ok "set_weights landed: Weights(53, 0) = [(1, 43690), (2, 21845)], LastUpdate(53)[0] = block $blk"

# --- a resubmission waits its blocks ---
mark=$(lines "$T/v.log")
n=$(grep -c 'event=submitted ' "$T/v.log")
after "$T/v.log" "$mark" 'already submitted; next resubmit in [0-9]* blocks' 15 ||
  fail "no block-based wait: $(tail -3 "$T/v.log")"
# Positive evidence: three ticks in a row decide "not yet" on the same
# chain, and nothing was submitted meanwhile.
i=0
while [ "$(tail -n "+$((mark + 1))" "$T/v.log" | grep -c 'already submitted; next resubmit in [0-9]* blocks')" -lt 3 ]; do
  i=$((i + 1)); [ $i -le 600 ] || fail "not three skipped ticks: $(tail -5 "$T/v.log")"
  sleep 0.05
done
[ "$(grep -c 'event=submitted ' "$T/v.log")" = "$n" ] || fail "resubmitted without new blocks"
ok "with no new blocks, the same epoch is not resubmitted"
mark=$(lines "$T/v.log")
js newblocks "$CURL" 3 || fail "dev_newBlock"
after "$T/v.log" "$mark" 'outcome=submitted epoch=1 source=payload standby=no uids=2 block=[0-9]* blocks_since_last=[4-9]' 30 ||
  fail "no resubmission after 3 blocks: $(tail -3 "$T/v.log")"
ok "after resubmit_blocks new blocks the vector is resubmitted"
stop

# --- a rate-limited submission fails as such ---
cp -r "$T/state-v" "$T/state-fast"
conf fast v 1
mark=0
js newblocks "$CURL" 1 || fail "dev_newBlock"
start fast
wait_for "$T/fast.log" "outcome=failed" 60 || fail "no failure: $(grep outcome= "$T/fast.log" | tail -3)"
grep -q 'outcome=failed epoch=1 source=payload block=[0-9]* error="SubtensorModule.SettingWeightsTooFast" hint="rate limited' "$T/fast.log" ||
  fail "rate limit not named: $(grep outcome= "$T/fast.log" | head -3)"
stop
ok "a submission inside the chain's rate limit fails with SettingWeightsTooFast, reported as rate limited"

# --- a hotkey without a validator permit ---
conf np np 3
start np
wait_for "$T/np.log" "outcome=failed" 60 || fail "no failure: $(grep outcome= "$T/np.log" | tail -3)"
grep -q 'outcome=failed epoch=1 source=payload block=[0-9]* error="SubtensorModule.NoValidatorPermit" hint="no validator permit' "$T/np.log" ||
  fail "permit failure not named: $(grep outcome= "$T/np.log" | head -3)"
stop
[ ! -e "$T/state-np/validator-state.json" ] || fail "a failed submission wrote the state file"
js weights "$CURL" "$NETUID" 3 | grep -q '^weights $' || fail "permitless weights landed"
ok "a hotkey without a validator permit: included, failed with NoValidatorPermit, nothing recorded"

# --- a long vector: the signing payload is hashed ---
vec=""
for x in $(sed -n 's/^X //p' "$T/setup.out"); do vec="$vec,[\"$x\",1000]"; done
provider 2 "[[\"$A\",2000]$vec]"
mark=$(lines "$T/v.log")
start v
after "$T/v.log" "$mark" 'outcome=submitted epoch=2 source=payload standby=no uids=61' 60 ||
  fail "long vector: $(tail -3 "$T/v.log")"
grep -q 'event=submitted netuid=53 uids=61 .* payload_bytes=[0-9]* signed=blake2b-256' "$T/v.log" ||
  fail "the long payload was not hashed: $(grep 'event=submitted' "$T/v.log" | tail -1)"
bytes=$(sed -n 's/.*event=submitted .*uids=61 .*payload_bytes=\([0-9]*\).*/\1/p' "$T/v.log" | tail -1)
js weights "$CURL" "$NETUID" 0 > "$T/w.out"
grep -q '^weights 1:2115,4:1057,5:1057,.*,63:1057$' "$T/w.out" || fail "long vector on chain: $(cat "$T/w.out")"
stop
ok "a 61-uid vector lands: its $bytes-byte signing payload is signed as its blake2b-256"
echo "chopsticks_chain: $(($(date +%s) - started)) s"
echo "$N_OK passed, 0 failed"
