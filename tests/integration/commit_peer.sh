#!/bin/sh
# SPDX-License-Identifier: MIT
# The CRv3 commit call built by engy against real subtensor metadata
# (spec 219 and 224, shipped by @bitgo/sdk-coin-tao 1.16.4, whose tarball
# the test command unpacks and names in ENGY_TAO_RESOURCES), checked byte
# for byte by @polkadot/types against the same metadata, with a timelocked
# commit that opens to the payload, and signed into an extrinsic with the
# runtime's own signed extensions as chain-subtensor's commit path does
# (decoded, re-encoded, its signature verified; commit_peer.mjs).  No runtime with
# commit-reveal runs offline here (the chopsticks fixture predates it), so
# the chain's own acceptance of a commit is not exercised.
. "$top_srcdir/tests/integration/lib.sh"
RES=${ENGY_TAO_RESOURCES:-}
if [ -z "$RES" ] || [ ! -f "$RES/mainnet.js" ] || [ ! -f "$RES/testnet.js" ]; then
  skip_or_fail "no subtensor metadata from @bitgo/sdk-coin-tao 1.16.4 (ENGY_TAO_RESOURCES; scripts/test.sh unpacks it)"
fi
PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$PEERS/@polkadot/types" ]; then
  skip_or_fail "no @polkadot/types at $PEERS (npm ci --prefix tests/peers)"
fi
node "$top_srcdir/tests/integration/commit_peer.mjs" "$top_builddir/tests/integration/chain_tool" \
  "$top_builddir/tests/integration/tlock_tool" "$RES" "$PEERS" \
  "$top_srcdir/tests/data/drand/quicknet.txt" "$T" >"$T/peer.out" 2>&1 && rc=0 || rc=$?
grep -v 'REGISTRY: Unknown signed extensions' "$T/peer.out"
[ "$rc" = 0 ] || fail "the @polkadot/types comparison failed"
ok "commit call and payload against @polkadot/types"
