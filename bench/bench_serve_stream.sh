#!/bin/sh
# SPDX-License-Identifier: MIT
# engy's serve streaming hidden states as a miner asks for them: one
# /generate of BENCH_TOKENS (128) greedy tokens with return_hidden_states
# and return_logprob (the public miner's body, ignore_eos so every run
# makes all of them), non-streamed, then streamed in the default mode
# (each hidden row sent once) and with stream_hidden_repeat (sglang's:
# every row so far in each event), all in the same run on one backend-ref
# engine (an engyctl mkmodel Qwen3, CPU).  Prints seconds and bytes of
# each and the ratio streamed / non-streamed: near 1 means a miner on
# engy's serve streams as fast as it generates.
# usage: bench/bench_serve_stream [SIZE]   (SIZE: tiny | small, default small)
set -eu
top_srcdir='%TOP_SRCDIR%'
top_builddir='%TOP_BUILDDIR%'
SIZE=${1:-small}
N=${BENCH_TOKENS:-128}
T=$(mktemp -d "${TMPDIR:-/tmp}/engy-bench.XXXXXX")
PIDS=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null || true; done; rm -rf "$T"' EXIT
mkdir -p "$T/plug"
for so in "$top_builddir"/plugins/*/.libs/*.so; do ln -s "$so" "$T/plug/"; done
"$top_builddir/tools/engyctl" mkmodel --arch qwen3 --size "$SIZE" --seed 3 \
	--out "$T/model" --quiet
serve() {  # name, extra env
	cat > "$T/$1.conf" <<C
role = "serve"
plugin_dir = "$T/plug"
state_dir = "$T/state-$1"
log_file = "$T/$1.log"
plugin "transport-http" { listen = {"127.0.0.1:0"} }
plugin "backend-ref" { checkpoint = "$T/model" }
C
	env $2 "$top_builddir/engyd/engyd" -c "$T/$1.conf" >/dev/null 2> "$T/$1.stderr" &
	PIDS="$PIDS $!"
	i=0
	until grep -q 'event=ready' "$T/$1.log" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 1200 ] || { cat "$T/$1.log" "$T/$1.stderr"; exit 1; }
		sleep 0.05
	done
	PORT=$(sed -n 's/.*inst=transport-http event=listen .*port=\([0-9]*\).*/\1/p' "$T/$1.log" | head -1)
}
serve new "ENGY_SERVE_STREAM_HIDDEN_REPEAT=0"; P_NEW=$PORT
HIDDEN=$(sed -n 's/.*inst=serve event=model hidden_size=\([0-9]*\).*/\1/p' "$T/new.log" | head -1)
serve rep "ENGY_SERVE_STREAM_HIDDEN_REPEAT=1"; P_REP=$PORT
body() {  # stream true|false
	echo "{\"input_ids\":[10,20,30,40,50],\"stream\":$1,\"return_hidden_states\":true,\"return_logprob\":true,\"sampling_params\":{\"temperature\":0,\"max_new_tokens\":$N,\"ignore_eos\":true}}"
}
run() {  # port stream -> "seconds bytes"
	curl -s -N -o "$T/out" -w '%{time_total} %{size_download}' \
		--data-binary "$(body "$2")" "http://127.0.0.1:$1/generate"
	grep -q "\"completion_tokens\":$N" "$T/out" || { echo "bench_serve_stream: short answer" >&2; exit 1; }
}
run "$P_NEW" false >/dev/null	# warm the engine (weights paged in)
set -- $(run "$P_NEW" false); NS=$1; NB=$2
set -- $(run "$P_NEW" true); SS=$1; SB=$2
set -- $(run "$P_REP" true); RS=$1; RB=$2
awk -v n="$N" -v h="$HIDDEN" -v ns="$NS" -v nb="$NB" -v ss="$SS" -v sb="$SB" \
	-v rs="$RS" -v rb="$RB" 'BEGIN {
	printf "bench_serve_stream: %d tokens, hidden %d, backend-ref (CPU)\n", n, h
	printf "  non-streamed                     %7.3f s %10d bytes\n", ns, nb
	printf "  streamed (default: rows once)    %7.3f s %10d bytes  ratio %.2f\n", ss, sb, ss / ns
	printf "  streamed (stream_hidden_repeat)  %7.3f s %10d bytes  ratio %.2f\n", rs, rb, rs / ns
}'
