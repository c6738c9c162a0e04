#!/bin/sh
# SPDX-License-Identifier: MIT
# TOPLOC against the reference library itself (PyPI toploc, pinned in
# tests/peers/requirements.txt, with torch), both ways: toploc's proofs
# verify in engy (engyctl toploc verify: 0 exponent mismatches, mantissa
# error 0), engy's verify in toploc, and the proof bytes are identical on
# a matrix of shapes (hidden sizes, lengths, k, B, bf16 rows, prefill
# skipped as the public miner does: skip_prefill, B=32, k=128, and not).
# Expected values come from toploc, an independent implementation.
# ENGY_PYTHON (scripts/test.sh sets it to the peers' virtualenv) must
# import toploc and torch.
. "$top_srcdir/tests/integration/lib.sh"
PY=${ENGY_PYTHON:-python3}
"$PY" -c 'import toploc, torch, numpy' 2>/dev/null ||
	skip_or_fail "$PY cannot import toploc, torch and numpy (scripts/test.sh installs tests/peers/requirements.txt into a virtualenv and sets ENGY_PYTHON)"
"$PY" "$top_srcdir/tests/integration/toploc_peer.py" "$ENGYCTL" "$T"
