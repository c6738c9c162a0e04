#!/bin/sh
# SPDX-License-Identifier: MIT
# engyctl keys / epoch on their own (usage, refusals, round trips), then
# sr25519, Merlin, SS58, BIP-39, hotkey files and signed epochs against
# @scure/sr25519 and @polkadot/util-crypto (sr25519_peer.mjs).
# Oracle: independent: @scure/sr25519 and @polkadot/util-crypto.
. "$top_srcdir/tests/integration/lib.sh"
DATA=$top_srcdir/tests/data/hotkeys
DEV_SEED=fac7959dbfe72f052e5a0c3c8d6530f202b02fd8f9f5ca3580ec8deb7797479e
DEV_SS58=5DfhGyQdFobKM8NsWvEeAKk5EQQgYe9AydgJ7rMB6E1EqRzV

usage_err() {  # what cmd...: must exit 2
  what=$1; shift
  if "$@" >/dev/null 2>&1; then fail "$what: succeeded"; fi
  "$@" >/dev/null 2>&1 || [ $? -eq 2 ] || fail "$what: not a usage error (exit 2)"
  ok "$what"
}

usage_err "keys without a command" "$ENGYCTL" keys
usage_err "keys new without --out" "$ENGYCTL" keys new
usage_err "keys new with a short seed" "$ENGYCTL" keys new --out "$T/x" --seed-hex abcd
usage_err "epoch sign without --hotkey" "$ENGYCTL" epoch sign --netuid 53 --epoch 1 "$T/x"
usage_err "epoch sign with a netuid over 65535" "$ENGYCTL" epoch sign --hotkey h --netuid 65536 --epoch 1 x
usage_err "epoch verify with a short --sig" "$ENGYCTL" epoch verify --ss58 "$DEV_SS58" --netuid 53 --epoch 1 --sig abcd x
usage_err "epoch verify with --payload and --sig" "$ENGYCTL" epoch verify --ss58 "$DEV_SS58" --netuid 53 --payload --sig 00 x
usage_err "an unknown epoch command" "$ENGYCTL" epoch frobnicate

# keys new / show, and what they never print.
out=$("$ENGYCTL" keys new --out "$T/dev" --seed-hex "$DEV_SEED") || fail "keys new: $out"
case "$out" in *"ss58Address: $DEV_SS58"*) ;; *) fail "keys new printed: $out";; esac
case "$out" in *"$DEV_SEED"*|*05d65584*) fail "keys new printed the secret";; esac
[ "$(stat -c %a "$T/dev")" = 600 ] || fail "hotkey mode $(stat -c %a "$T/dev")"
ok "keys new: the dev key, mode 0600, no secret printed"
out=$("$ENGYCTL" keys show "$T/dev") || fail "keys show: $out"
case "$out" in *"publicKey: 0x46ebddef8cd9bb167dc30878d7113b7e168e6f0646beffd77d69d39bad76b47a"*) ;;
  *) fail "keys show printed: $out";; esac
case "$out" in *fac7959d*|*05d65584*|*privateKey*) fail "keys show printed the secret";; esac
ok "keys show: address and public key only"
expect_fail "keys new never overwrites" "exists" "$ENGYCTL" keys new --out "$T/dev"
for f in nacl ansible fernet; do
  expect_fail "keys show refuses the encrypted $f file by name" "$DATA/$f: encrypted keyfile" \
    "$ENGYCTL" keys show "$DATA/$f"
done
chmod 644 "$T/dev"
expect_ok "keys show warns about a readable hotkey" "chmod 600" "$ENGYCTL" keys show "$T/dev"
chmod 600 "$T/dev"

# epoch sign / verify round trip, and the refusals.
printf '{"epoch_index":105,"netuid":53,"weights":[["%s",65535]]}' "$DEV_SS58" >"$T/rj.json"
sig=$("$ENGYCTL" epoch sign --hotkey "$T/dev" --netuid 53 --epoch 105 "$T/rj.json") || fail "epoch sign: $sig"
expect_ok "epoch verify accepts its own signature" "ok: engy-sn53:epoch:v1:53:105:" \
  "$ENGYCTL" epoch verify --ss58 "$DEV_SS58" --netuid 53 --epoch 105 --sig "$sig" "$T/rj.json"
expect_ok "the signature reads from stdin too" "ok:" \
  sh -c '"$0" epoch verify --ss58 "$1" --netuid 53 --epoch 105 --sig "$2" - <"$3"' \
  "$ENGYCTL" "$DEV_SS58" "$sig" "$T/rj.json"
expect_fail "epoch verify: another netuid" "does not verify" \
  "$ENGYCTL" epoch verify --ss58 "$DEV_SS58" --netuid 54 --epoch 105 --sig "$sig" "$T/rj.json"
expect_fail "epoch verify: a Polkadot address is not a bittensor one" "prefix is not 42" \
  "$ENGYCTL" epoch verify --ss58 15oF4uVJwmo4TdGW7VfQxNLavjCXviqxT9S1MgbjMNHr6Sp5 --netuid 53 --epoch 105 --sig "$sig" "$T/rj.json"
expect_fail "epoch verify: a bad checksum is named" "checksum" \
  "$ENGYCTL" epoch verify --ss58 5DfhGyQdFobKM8NsWvEeAKk5EQQgYe9AydgJ7rMB6E1EqRzW --netuid 53 --epoch 105 --sig "$sig" "$T/rj.json"
expect_fail "epoch sign: result_json of another epoch" "epoch_index 105, expected 104" \
  "$ENGYCTL" epoch sign --hotkey "$T/dev" --netuid 53 --epoch 104 "$T/rj.json"
expect_fail "epoch sign: a public-only hotkey cannot sign" "public key only" \
  "$ENGYCTL" epoch sign --hotkey "$DATA/public" --netuid 53 --epoch 105 "$T/rj.json"
expect_fail "epoch sign: an encrypted hotkey" "encrypted keyfile" \
  "$ENGYCTL" epoch sign --hotkey "$DATA/nacl" --netuid 53 --epoch 105 "$T/rj.json"
"$ENGYCTL" epoch sign --hotkey "$T/dev" --netuid 53 --epoch 105 --payload "$T/rj.json" >"$T/p.json" \
  || fail "epoch sign --payload"
expect_ok "epoch verify --payload accepts a fresh payload" "ok: epoch 105 netuid 53" \
  "$ENGYCTL" epoch verify --ss58 "$DEV_SS58" --netuid 53 --payload "$T/p.json"
expect_fail "epoch verify --payload: wrong netuid is named" "rejected (netuid)" \
  "$ENGYCTL" epoch verify --ss58 "$DEV_SS58" --netuid 52 --payload "$T/p.json"
other=$("$ENGYCTL" keys show "$DATA/public" | sed -n 's/^ss58Address: //p')
expect_fail "epoch verify --payload: another pinned key" "rejected (signature)" \
  "$ENGYCTL" epoch verify --ss58 "$other" --netuid 53 --payload "$T/p.json"
N_CLI=$N_OK

PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$PEERS" ]; then
  skip_or_fail "no test peers at $PEERS (npm ci --prefix tests/peers)"
fi
command -v node >/dev/null || fail "node is required for the peer test"
node "$top_srcdir/tests/integration/sr25519_peer.mjs" "$top_builddir/tests/integration/sr25519_tool" \
  "$ENGYCTL" "$PEERS" "$T" || fail "the peer comparison failed"
ok "sr25519 peer comparison"
echo "$N_OK passed, 0 failed ($N_CLI engyctl checks, then the peer run)"
