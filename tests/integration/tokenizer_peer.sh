#!/bin/sh
# SPDX-License-Identifier: MIT
# engy's C tokenizer against an independent JavaScript implementation on
# Qwen3's tokenizer.json (see tokenizer_peer.mjs).
set -eu
peers=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$peers" ]; then
	echo "SKIP: no test peers at $peers (npm ci --prefix tests/peers)"
	exit 77
fi
exec node "$top_srcdir/tests/integration/tokenizer_peer.mjs" \
	"$top_builddir/tools/engyctl" "$peers" "$top_srcdir/tests/data/tokenizer"
