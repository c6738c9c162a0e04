#!/bin/sh
# SPDX-License-Identifier: MIT
# Timelock encryption against the references real validators run:
# bittensor-drand 2.0.0 (PyPI; tests/peers/requirements.txt, the
# interpreter named by ENGY_PYTHON) both ways and field by field
# (tlock_peer.py), and the BLS12-381 arithmetic (scalar multiples,
# compression, hash-to-G1, pairings in the serialization the timelock
# hashes) against @noble/curves over random inputs (tlock_noble.mjs).
# Expected values: drand quicknet's published beacon and the two peers.
. "$top_srcdir/tests/integration/lib.sh"
TOOL=$top_builddir/tests/integration/tlock_tool
PY=${ENGY_PYTHON:-python3}
if ! "$PY" -c 'import bittensor_drand' 2>/dev/null; then
  skip_or_fail "bittensor-drand is not importable by $PY (pip install -r tests/peers/requirements.txt; ENGY_PYTHON names that interpreter)"
fi
"$PY" "$top_srcdir/tests/integration/tlock_peer.py" "$TOOL" "$top_srcdir/tests/data/drand/quicknet.txt" \
  "$top_builddir/tests/integration/chain_tool" ||
  fail "the bittensor-drand comparison failed"
ok "bittensor-drand comparison"
PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$PEERS/@noble/curves" ]; then
  skip_or_fail "no @noble/curves at $PEERS (npm ci --prefix tests/peers)"
fi
node "$top_srcdir/tests/integration/tlock_noble.mjs" "$TOOL" "$PEERS" "${ENGY_NOBLE_N:-2000}" ||
  fail "the @noble/curves comparison failed"
ok "@noble/curves comparison"
echo "$N_OK passed, 0 failed"
