#!/bin/sh
# SPDX-License-Identifier: MIT
# The miner's own cost per request against the generation it wraps: engyd
# as a miner on backend-ref (an engyctl mkmodel Qwen3, CPU) behind the
# gateway peer of the tests, BENCH_N requests of BENCH_TOKENS tokens (half
# streamed).  From the miner's request_done lines: tokenizing (chat render
# and encode), proving plus parsing plus the response frame, against the
# generation time; the ratio is the miner's overhead.
# usage: bench/bench_miner [SIZE]   (SIZE: tiny | small, default small)
set -eu
top_srcdir='%TOP_SRCDIR%'
top_builddir='%TOP_BUILDDIR%'
SIZE=${1:-small}
PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$PEERS/ws" ] || ! command -v node >/dev/null; then
	echo "bench_miner: skipped (needs node and npm ws in $PEERS)"
	exit 0
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/engy-bench.XXXXXX")
PIDS=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null || true; done; rm -rf "$T"' EXIT
mkdir -p "$T/plug" "$T/out"
for so in "$top_builddir"/plugins/*/.libs/*.so; do ln -s "$so" "$T/plug/"; done
"$top_builddir/tools/engyctl" mkmodel --arch qwen3 --size "$SIZE" --seed 3 \
	--out "$T/model" --quiet
KEY=bench-key
export EXP_KEY=$KEY EXP_MODEL=bench EXP_CKPT="$T/model" EXP_TOTAL=8 EXP_LEGS=1 \
	EXP_SHARE=8 GW_META=1 BENCH_N=${BENCH_N:-8} BENCH_TOKENS=${BENCH_TOKENS:-64}
node "$top_srcdir/tests/integration/fake_gateway.mjs" "$PEERS" bench "$T/out" \
	> "$T/gw.out" 2>&1 &
GWPID=$!
PIDS="$PIDS $GWPID"
i=0
until grep -q 'listening port=' "$T/gw.out"; do
	i=$((i + 1)); [ $i -lt 100 ] || { cat "$T/gw.out"; exit 1; }; sleep 0.1
done
PORT=$(sed -n 's/^listening port=//p' "$T/gw.out")
cat > "$T/miner.conf" <<C
role = "miner"
plugin_dir = "$T/plug"
state_dir = "$T/state"
log_file = "$T/miner.log"
miner { gpu_probe = false }
plugin "transport-ws" { }
plugin "backend-ref" { checkpoint = "$T/model" }
plugin "verifier-toploc" { }
C
GW="ws://127.0.0.1:$PORT/gw" MINER_KEY=$KEY MODEL=bench MAX_INFLIGHT=8 \
	"$top_builddir/engyd/engyd" -c "$T/miner.conf" 2> "$T/miner.stderr" &
PIDS="$PIDS $!"
wait "$GWPID" || { cat "$T/gw.out"; tail "$T/miner.log"; exit 1; }
grep 'event=request_done' "$T/miner.log" | awk -v size="$SIZE" '
	{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	  n++; tok += v["completion_tokens"]; pt += v["prompt_tokens"];
	  tk += v["tokenize_ms"]; pr += v["prove_ms"]; gen += v["gen_ms"];
	  tt += v["total_ms"] }
	END {
	  printf "bench_miner: %s model, %d requests, %.0f prompt + %.0f output tokens each\n",
		size, n, pt / n, tok / n;
	  printf "  per request: tokenize %.3f ms, prove+parse+frame %.3f ms, generate %.1f ms, total %.1f ms\n",
		tk / n, pr / n, gen / n, tt / n;
	  printf "  miner overhead / generation: %.4f (%.2f%%)\n", (tk + pr) / gen,
		100 * (tk + pr) / gen }'
