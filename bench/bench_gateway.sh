#!/bin/sh
# SPDX-License-Identifier: MIT
# The gateway's overhead (specs/gateway.md, "Bench"): engyd as a gateway
# (store-sqlite, an API key with credit: auth and billing on the path,
# onboarding off, the tee at its default 5 %), bench_gateway_load with
# instant fake miners and a direct endpoint answering the gateway's own
# bytes, plain and streamed: added latency p50/p99 per request (gateway
# minus direct, one connection) and requests per second under load, with
# the ratio to the anchors (LiteLLM, the goal).
# usage: bench/bench_gateway
# environment: BENCH_LEGS, BENCH_SEQ, BENCH_CONNS, BENCH_SECONDS (see
# bench_gateway_load.c), BENCH_LOG_LEVEL (info), BENCH_SYNC (normal: the
# store's synchronous option), BENCH_CKPT (1000: the store's
# checkpoint_pages; 0 = SQLite's checkpoints in the committing request),
# BENCH_TASKSET (e.g. "taskset -c 0,1"), BENCH_STORE (sqlite, or postgres:
# a throwaway PostgreSQL server, see below).
# The store lives under TMPDIR: on a disk its commits and WAL checkpoints
# (fsync) make most of the tail; on tmpfs what is left is the gateway's own.
set -eu
top_srcdir='%TOP_SRCDIR%'
top_builddir='%TOP_BUILDDIR%'
T=$(mktemp -d "${TMPDIR:-/tmp}/engy-bench-gw.XXXXXX")
PIDS=""
cleanup() {
	for p in $PIDS; do kill -9 $p 2>/dev/null || true; done
	rm -rf "$T"
}
fail() { echo "bench_gateway: $*" >&2; exit 1; }
trap cleanup EXIT
mkdir -p "$T/plug" "$T/state"
for so in "$top_builddir"/plugins/*/.libs/*.so; do ln -s "$so" "$T/plug/"; done
export ENGY_PLUGIN_DIR="$T/plug" ENGY_STATE_DIR="$T/state"
export ENGY_KEY_PEPPER="bench-pepper-0123456789abcdef"
# BENCH_STORE=postgres: store-postgres on a throwaway server under $T (the
# tests' pg_lib.sh), fsync on, synchronous_commit off: like SQLite's
# synchronous=normal, a crash may lose the last commits, never corrupts.
if [ "${BENCH_STORE:-sqlite}" = postgres ]; then
	[ -f "$T/plug/store-postgres.so" ] || fail "store-postgres is not built (libpq-dev)"
	. "$top_srcdir/tests/integration/pg_lib.sh"
	PG_SERVER_OPTS="-c synchronous_commit=off -c shared_buffers=128MB" pg_start
	STORE_NAME=store-postgres
	STORE_CONF="conninfo = \"$ENGY_TEST_PG\""
	STORE_DESC="store-postgres synchronous_commit=off (unix socket)"
	A() { "$top_builddir/tools/engyctl" admin --store store-postgres \
		-o conninfo="$ENGY_TEST_PG" "$@"; }
else
	STORE_NAME=store-sqlite
	STORE_CONF="synchronous = \"${BENCH_SYNC:-normal}\"
  checkpoint_pages = ${BENCH_CKPT:-1000}"
	STORE_DESC="store-sqlite synchronous=${BENCH_SYNC:-normal} checkpoint_pages=${BENCH_CKPT:-1000}"
	A() { "$top_builddir/tools/engyctl" admin "$@"; }
fi
A accounts create bench > /dev/null
A topup bench 1000000 > /dev/null
KEY=$(A keys create bench 2> /dev/null)
A models put bench-model --max-input-tokens 100000 --max-output-tokens 4096 \
	--max-request-s 600 --price-input 0.15 --price-output 0.60 > /dev/null
MK=$(A miners register 5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY 2> /dev/null)
# Ports chosen here (the listen lines are info, the log level may not be).
start() {
	HPORT=$1
	WPORT=$(($1 + 1))
	MPORT=$(($1 + 2))
	cat > "$T/gw.conf" <<C
role = "gateway"
plugin_dir = "$T/plug"
state_dir = "$T/state"
log_file = "$T/gw.log"
log_level = "${BENCH_LOG_LEVEL:-info}"
metrics_listen = "127.0.0.1:$MPORT"
shutdown_timeout = 5
gateway { key_max_inflight = 0 }
plugin "transport-http" { listen = { "127.0.0.1:$HPORT" } }
plugin "transport-ws" { listen = "127.0.0.1:$WPORT" }
plugin "$STORE_NAME" {
  $STORE_CONF
}
C
	: > "$T/gw.log"
	${BENCH_TASKSET:-} "$top_builddir/engyd/engyd" -c "$T/gw.conf" 2> "$T/gw.stderr" &
	GPID=$!
	PIDS="$PIDS $GPID"
	# Ready when the metrics endpoint answers (it is opened after the
	# listeners; the log's event=ready line is info, below some levels).
	i=0
	until curl -sf -o /dev/null "http://127.0.0.1:$MPORT/metrics"; do
		if ! kill -0 $GPID 2> /dev/null || [ $i -ge 200 ]; then
			kill -9 $GPID 2> /dev/null || true
			return 1
		fi
		i=$((i + 1))
		sleep 0.05
	done
}
n=0
until start $((20000 + ($$ + n * 7919) % 40000)); do
	n=$((n + 1))
	[ $n -lt 5 ] || { cat "$T/gw.log" "$T/gw.stderr"; exit 1; }
done
FS=$(df -PT "$T" 2> /dev/null | awk 'NR == 2 { print $2 }')
echo "bench_gateway: engyd gateway log_level=${BENCH_LOG_LEVEL:-info}, $STORE_DESC on ${FS:-?} ($T), $(nproc) CPUs${BENCH_TASKSET:+ ($BENCH_TASKSET)}"
TMPDIR="$T" ${BENCH_TASKSET:-} "$top_builddir/bench/bench_gateway_load" "$HPORT" \
	"ws://127.0.0.1:$WPORT/gw" "$MK" "$KEY" bench-model
# The gateway's own view: arrival to the serve frame sent (checks, reserve,
# route), for every request above.
curl -s "http://127.0.0.1:$MPORT/metrics" | awk '
	/^engy_gw_overhead_seconds_bucket/ {
		match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5)
		n++; les[n] = le; c[n] = $NF }
	/^engy_gw_overhead_seconds_count/ { total = $NF }
	END { if (!total) exit
	  printf "  gateway overhead before the miner (engy_gw_overhead_seconds, %d requests):", total
	  for (i = 1; i <= n; i++) if (les[i] != "+Inf")
		printf " <=%gms %.2f%%", les[i] * 1000, 100 * c[i] / total
	  printf "\n" }'

