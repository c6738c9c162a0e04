#!/bin/sh
# SPDX-License-Identifier: MIT
# Signed set_weights extrinsics built and signed in C against
# @polkadot/types (call, signing payload, signature part, whole extrinsic)
# and @scure/sr25519 (signature with a fixed rng): extrinsic_peer.mjs.
# Oracle: independent: @polkadot/types and @scure/sr25519 build the same
# extrinsics (extrinsic_peer.mjs).
. "$top_srcdir/tests/integration/lib.sh"
PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$PEERS/@polkadot/types" ] || [ ! -d "$PEERS/@scure/sr25519" ]; then
  skip_or_fail "no @polkadot/types in the test peers at $PEERS (npm ci --prefix tests/peers)"
fi
command -v node >/dev/null || fail "node is required with the test peers"
TOOL="$top_builddir/tests/integration/chain_tool"
[ -x "$TOOL" ] || fail "chain_tool was not built"
out=$(node "$top_srcdir/tests/integration/extrinsic_peer.mjs" "$TOOL" "$PEERS" 2>&1) ||
  fail "$out"
case "$out" in *" 0 failed"*) ok "$out";; *) fail "$out";; esac
echo "$N_OK passed, 0 failed"
