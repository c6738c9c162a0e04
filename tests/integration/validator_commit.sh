#!/bin/sh
# SPDX-License-Identifier: MIT
# The light validator on a subnet with timelocked commit-reveal, end to end
# on 127.0.0.1: engyd's validator role on chain-dev with commit_reveal on
# (versions 4 and 3), against the local provider (epoch_provider.mjs, whose
# payloads @scure/sr25519 signs).  The validator commits (never calls
# set_weights), the commit lands with its reveal round and block, the state
# file records the epoch as submitted, the log, the heartbeat file and
# `engyctl validator health` name the path and the reveal; chain-dev then
# signs the round with its test beacon, decrypts the commit and applies the
# weights, so the weights file ends with the signed epoch's weights.  Bad
# input: a version engy does not speak and a reveal round that would not be
# in the future are refused with the reason, and nothing is submitted.
# Oracle: the provider's payload is signed by @scure/sr25519 (independent);
# the expected weights are hand-derived (the same vector and values as
# validator_provider.sh); the encryption and decryption are engy's own
# lib/drand, whose ciphertexts are checked against bittensor-drand by
# tlock_peer.sh.  No subtensor runtime with commit-reveal runs offline, so
# the chain side here is chain-dev's simulation.
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

printf '{"mode":"good","netuid":53,"epoch":5,"weights":[["%s",40000],["%s",20000],["%s",5535]]}\n' \
  "$A" "$B" "$C" > "$T/provider.json"
node "$top_srcdir/tests/integration/epoch_provider.mjs" "$PEERS" "$T/provider.json" \
  "$T/beats.jsonl" > "$T/provider.out" 2>&1 &
PIDS="$PIDS $!"
wait_for "$T/provider.out" "^port" 60 || fail "provider did not start: $(cat "$T/provider.out")"
PORT=$(sed -n 's/^port \([0-9]*\) .*/\1/p' "$T/provider.out")

# An epoch is tempo + 1 = 10 blocks of 0.5 s; with a reveal period of 2
# epochs the reveal is 14..23 blocks (7..11.5 s) ahead: always a later
# drand round.  A reveal period of 0 puts it at most 3 blocks (1.5 s)
# ahead: never after the round drand is at.
conf() {  # name, extra chain-dev options
  cat > "$T/$1.conf" <<C
role = "validator"
plugin_dir = "$T/plugins"
state_dir = "$T/$1-state"
log_file = "$T/$1.log"
validator {
  wallet = "w"
  hotkey = "v"
  wallet_path = "$T/wallets"
  api = "http://127.0.0.1:$PORT/"
  master_hotkey = "$MASTER"
  poll_s = 1
  resubmit_blocks = 100000
  block_s = 1
  fetch_timeout_s = 5
}
plugin "chain-dev" {
  file = "$T/$1.jsonl"
  block_ms = 500
  rate_limit = 2
  hotkeys = { "$VAL", "$A", "$B", "$MASTER" }
  commit_reveal = true
  tempo = 9
  reveal_period = 2
  $2
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

for ver in 4 3; do
  n=v$ver
  conf "$n" "commit_reveal_version = $ver"
  start "$n"
  wait_for "$T/$n.log" "outcome=submitted epoch=5" 60 ||
    fail "v$ver: epoch 5 not committed: $(tail -20 "$T/$n.log")"
  line=$(grep -m1 "outcome=submitted epoch=5" "$T/$n.log")
  case "$line" in *"source=payload standby=no uids=2 block="*" path=commit_v$ver reveal_round="*" reveal_block="*) ;;
    *) fail "v$ver: the tick line does not name the commit: $line";; esac
  rr=$(echo "$line" | sed -n 's/.* reveal_round=\([0-9]*\).*/\1/p')
  rb=$(echo "$line" | sed -n 's/.* reveal_block=\([0-9]*\).*/\1/p')
  grep -q "event=commit epoch=5 version=$ver reveal_period=2 tempo=9 uids=2" "$T/$n.log" ||
    fail "v$ver: no commit line: $(grep event=commit "$T/$n.log")"
  ok "v$ver: the validator commits (path=commit_v$ver) and the log says the reveal round ($rr) and block ($rb)"
  first=$(head -1 "$T/$n.jsonl")
  case "$first" in *"\"hotkey\":\"$VAL\",\"uid\":0,\"ok\":true,\"commit\":$ver,\"reveal_round\":$rr,\"reveal_block\":$rb}") ;;
    *) fail "v$ver: the chain's commit record: $first";; esac
  if grep -q '"uids"' "$T/$n.jsonl" && ! grep -q '"revealed"' "$T/$n.jsonl"; then
    fail "v$ver: weights were set in the clear: $(cat "$T/$n.jsonl")"
  fi
  ok "v$ver: the chain holds a commit, no weights in the clear"
  out=$("$ENGYCTL" validator state --state-dir "$T/$n-state")
  case "$out" in *"last_applied: 5"*) ;; *) fail "v$ver: state: $out";; esac
  ok "v$ver: the commit that landed is recorded as the epoch's submission"
  # The heartbeat file is stamped just after the tick line is logged.
  wait_for "$T/$n-state/validator-heartbeat.json" \
    "\"path\":\"commit_v$ver\",\"reveal_round\":$rr,\"reveal_block\":$rb}" 60 ||
    fail "v$ver: heartbeat file: $(cat "$T/$n-state/validator-heartbeat.json" 2>&1)"
  ok "v$ver: the heartbeat file carries the path and the reveal"
  expect_ok "v$ver: health names the commit and its reveal" \
    "last submission: commit_v$ver, reveal round $rr, due at block $rb" \
    "$ENGYCTL" validator health --state-dir "$T/$n-state"
  # The reveal: the chain waits for drand's clock to reach the round.
  wait_for "$T/$n.jsonl" '"revealed"' 60 || fail "v$ver: never revealed: $(cat "$T/$n.jsonl")"
  last=$(tail -1 "$T/$n.jsonl")
  case "$last" in *"\"hotkey\":\"$VAL\",\"uid\":0,\"ok\":true,\"revealed\":$rr,\"uids\":[1,2],\"weights\":[43690,21845]}") ;;
    *) fail "v$ver: revealed weights: $last";; esac
  ok "v$ver: the chain reveals round $rr with its beacon and the weights file ends with epoch 5's weights"
  # logged just after the weights file's line is written
  wait_for "$T/$n.log" "event=revealed round=$rr hotkey=$VAL ok=true uids=2" 10 ||
    fail "v$ver: chain-dev did not log the reveal"
  stop
done

# --- a version engy does not speak: refused, nothing submitted ---
conf v7 "commit_reveal_version = 7"
start v7
wait_for "$T/v7.log" "outcome=refused" 60 || fail "v7: $(tail -5 "$T/v7.log")"
grep -q 'reason="commit-reveal is enabled on subnet 53 in version 7, which engy does not speak' "$T/v7.log" ||
  fail "v7 refusal: $(grep outcome= "$T/v7.log")"
grep -q 'event=commit ' "$T/v7.log" && fail "v7: a commit was attempted"
[ ! -s "$T/v7.jsonl" ] || fail "v7: something reached the chain: $(cat "$T/v7.jsonl")"
[ ! -e "$T/v7-state/validator-state.json" ] || fail "v7: a state file was written"
stop
ok "an unknown commit-reveal version is refused with its number; nothing submitted or recorded"

# --- a reveal round that would not be in the future ---
conf past "reveal_period = 0"
start past
wait_for "$T/past.log" "outcome=refused" 60 || fail "past: $(tail -5 "$T/past.log")"
grep -q 'outcome=refused epoch=5 source=payload path=commit_v4 error="reveal round [0-9]* is not in the future (drand is at round [0-9]*): nothing to commit to; nothing submitted"' "$T/past.log" ||
  fail "past refusal: $(grep outcome= "$T/past.log")"
[ ! -s "$T/past.jsonl" ] || fail "past: something reached the chain: $(cat "$T/past.jsonl")"
[ ! -e "$T/past-state/validator-state.json" ] || fail "past: a state file was written"
stop
ok "a reveal round not in the future is refused with the rounds named; nothing submitted or recorded"
