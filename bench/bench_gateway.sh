#!/bin/sh
# SPDX-License-Identifier: MIT
# The gateway's overhead side by side with two peers measured in the same
# run (specs/gateway.md, "Bench"): engyd as a gateway (store-sqlite, an
# API key with credit: auth and billing on the path, onboarding off, the
# tee at its default 5 %), bench_gateway_load with instant fake miners and
# a direct endpoint answering the gateway's own bytes, plain and streamed:
# added latency p50/p99 per request (minus direct, one connection) and
# requests per second and latency under load, in interleaved rounds, for
#   engy     the gateway;
#   nginx    Debian's nginx as a plain HTTP/1.1 keep-alive reverse proxy in
#            front of the same direct endpoint (installed with apt-get when
#            missing and root);
#   litellm  the LiteLLM proxy (PyPI litellm[proxy], in a bench-only
#            virtualenv under the build directory, bench/litellm-venv) with
#            an "openai/" model pointing at the direct endpoint's /v1 and
#            its own master key;
# then instructions per request under callgrind, load-independent:
# (Ir(N2) - Ir(N1)) / (N2 - N1) for engyd and for nginx (one process),
# with engyd's cost by object and function.  A peer or valgrind that is
# missing or fails is skipped with the reason; it never fails the bench.
# usage: bench/bench_gateway
# environment: BENCH_LEGS, BENCH_SEQ, BENCH_SEQ_SECONDS, BENCH_CONNS,
# BENCH_SECONDS, BENCH_ROUNDS (see bench_gateway_load.c), BENCH_LOG_LEVEL
# (info), BENCH_SYNC (normal: the store's synchronous option), BENCH_CKPT
# (1000: the store's checkpoint_pages; 0 = SQLite's checkpoints in the
# committing request), BENCH_TASKSET (e.g. "taskset -c 0,1": engyd and the
# peers), BENCH_STORE (sqlite, or postgres: a throwaway PostgreSQL server,
# see below), BENCH_NGINX / BENCH_LITELLM / BENCH_INSTR (0 skips that
# part), BENCH_INSTR_N1 / BENCH_INSTR_N2 (200 / 1200 requests),
# BENCH_INSTR_CONNS (64: the loaded count, after the sequential one),
# BENCH_LEASE (1000000: the gateway's lease_micro, its holds in memory;
# 0: a store reservation per request), BENCH_SETTLE_MS (the gateway's
# settle_window_ms; unset: its default), BENCH_KEEP (a directory: the
# callgrind output files are copied there for callgrind_annotate).
# The store lives under TMPDIR: on a disk its commits and WAL checkpoints
# (fsync) make most of the tail; on tmpfs what is left is the gateway's own.
set -eu
top_srcdir='%TOP_SRCDIR%'
top_builddir='%TOP_BUILDDIR%'
T=$(mktemp -d "${TMPDIR:-/tmp}/engy-bench-gw.XXXXXX")
PIDS=""
GROUPS_=""
# Process groups (nginx's master and workers, LiteLLM's): TERM, then KILL.
stop_group() {
	kill -TERM "-$1" 2> /dev/null || return 0
	i=0
	while kill -0 "-$1" 2> /dev/null && [ $i -lt 300 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	kill -9 "-$1" 2> /dev/null || true
}
cleanup() {
	if [ -n "${BENCH_KEEP:-}" ] && [ -d "$T/cg" ]; then
		mkdir -p "$BENCH_KEEP" && cp "$T"/cg/*.[0-9]* "$BENCH_KEEP"/ 2> /dev/null || true
	fi
	for p in $PIDS; do kill -9 $p 2>/dev/null || true; done
	for g in $GROUPS_; do stop_group $g; done
	rm -rf "$T"
}
fail() { echo "bench_gateway: $*" >&2; exit 1; }
say() { echo "bench_gateway: $*"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
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
# engyd as the gateway on ports $1 (HTTP), $1 + 1 (WS), $1 + 2 (metrics),
# files $T/$2.*, run under $3 (e.g. valgrind); ready when the metrics
# endpoint answers (opened after the listeners; the log's event=ready line
# is info, below some levels), $4 tries of 0.05 s at most (a deadline
# against a hang only).
start() {
	HPORT=$1
	WPORT=$(($1 + 1))
	MPORT=$(($1 + 2))
	cat > "$T/$2.conf" <<C
role = "gateway"
plugin_dir = "$T/plug"
state_dir = "$T/state"
log_file = "$T/$2.log"
log_level = "${BENCH_LOG_LEVEL:-info}"
metrics_listen = "127.0.0.1:$MPORT"
shutdown_timeout = 5
gateway {
  key_max_inflight = 0
  lease_micro = ${BENCH_LEASE:-1000000}${BENCH_SETTLE_MS:+
  settle_window_ms = $BENCH_SETTLE_MS}
}
plugin "transport-http" { listen = { "127.0.0.1:$HPORT" } }
plugin "transport-ws" { listen = "127.0.0.1:$WPORT" }
plugin "$STORE_NAME" {
  $STORE_CONF
}
C
	: > "$T/$2.log"
	${BENCH_TASKSET:-} $3 "$top_builddir/engyd/engyd" -c "$T/$2.conf" 2> "$T/$2.stderr" &
	GPID=$!
	PIDS="$PIDS $GPID"
	i=0
	until curl -sf -o /dev/null "http://127.0.0.1:$MPORT/metrics"; do
		if ! kill -0 $GPID 2> /dev/null || [ $i -ge $4 ]; then
			kill -9 $GPID 2> /dev/null || true
			return 1
		fi
		i=$((i + 1))
		sleep 0.05
	done
}
# SIGTERM, then wait for the exit (a deadline of 300 s against a hang).
stop_pid() {
	kill -TERM $1 2> /dev/null || return 0
	i=0
	while kill -0 $1 2> /dev/null && [ $i -lt 3000 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	kill -9 $1 2> /dev/null || true
	wait $1 2> /dev/null || true
}
n=0
until start $((20000 + ($$ + n * 7919) % 40000)) gw "" 200; do
	n=$((n + 1))
	[ $n -lt 5 ] || { cat "$T/gw.log" "$T/gw.stderr"; exit 1; }
done
BASE=$HPORT
GW_PID=$GPID
# The load program's direct endpoint, the peers', the callgrind runs'.
DPORT=$((BASE + 3))
NPORT=$((BASE + 4))
LPORT=$((BASE + 5))
IBASE=$((BASE + 6))
INPORT=$((BASE + 9))
CPUS=$(${BENCH_TASKSET:-} nproc)
FS=$(df -PT "$T" 2> /dev/null | awk 'NR == 2 { print $2 }')
say "engyd gateway log_level=${BENCH_LOG_LEVEL:-info}, $STORE_DESC on ${FS:-?} (TMPDIR), $(nproc) CPUs${BENCH_TASKSET:+ ($BENCH_TASKSET)}"

# ---- nginx ----------------------------------------------------------------
# Debian's nginx (nginx-light, else nginx), installed when missing and root.
NGINX=""
find_nginx() {
	NGINX=$(command -v nginx 2> /dev/null || true)
	[ -z "$NGINX" ] && [ -x /usr/sbin/nginx ] && NGINX=/usr/sbin/nginx
	[ -n "$NGINX" ] && return 0
	if [ "$(id -u)" != 0 ] || ! command -v apt-get > /dev/null 2>&1; then
		NGINX_WHY="nginx is not installed and this is not root with apt-get (apt-get install nginx-light)"
		return 1
	fi
	say "installing nginx-light with apt-get (nginx is not installed)"
	if ! { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nginx-light ||
		{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nginx-light; } ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nginx; } > "$T/apt-nginx.log" 2>&1; then
		NGINX_WHY="apt-get install nginx-light failed: $(tail -n 1 "$T/apt-nginx.log")"
		return 1
	fi
	NGINX=$(command -v nginx 2> /dev/null || echo /usr/sbin/nginx)
	[ -x "$NGINX" ] || { NGINX_WHY="no nginx binary after apt-get install"; return 1; }
}
# $1: name (files under $T/$1), $2: port, $3: master_process, $4: workers
nginx_conf() {
	mkdir -p "$T/$1/tmp"
	cat > "$T/$1/nginx.conf" <<C
daemon off;
master_process $3;
worker_processes $4;
pid $T/$1/nginx.pid;
error_log $T/$1/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $T/$1/tmp/body;
  proxy_temp_path $T/$1/tmp/proxy;
  fastcgi_temp_path $T/$1/tmp/fastcgi;
  uwsgi_temp_path $T/$1/tmp/uwsgi;
  scgi_temp_path $T/$1/tmp/scgi;
  keepalive_requests 100000000;
  upstream direct {
    server 127.0.0.1:$DPORT;
    keepalive 256;
    keepalive_requests 100000000;
  }
  server {
    listen 127.0.0.1:$2;
    location = /ready { return 204; }
    location / {
      proxy_pass http://direct;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
C
}
# Ready when /ready answers (nginx itself), $2 tries of 0.05 s at most.
wait_nginx() {
	i=0
	until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/ready" 2> /dev/null)" = 204 ]; do
		kill -0 $NGPID 2> /dev/null && [ $i -lt $2 ] || return 1
		i=$((i + 1))
		sleep 0.05
	done
}
PEERS=""
NGPID=""
NGINX_WHY=""
if [ "${BENCH_NGINX:-1}" = 0 ]; then
	NGINX_WHY="BENCH_NGINX=0"
elif find_nginx; then
	nginx_conf nginx $NPORT on "$CPUS"
	${BENCH_TASKSET:-} setsid "$NGINX" -p "$T/nginx/" -c "$T/nginx/nginx.conf" \
		-e "$T/nginx/error.log" > "$T/nginx/stdout" 2>&1 &
	NGPID=$!
	GROUPS_="$GROUPS_ $NGPID"
	if wait_nginx $NPORT 600; then
		PEERS="nginx:$NPORT"
		say "nginx: $("$NGINX" -v 2>&1 | sed 's/^nginx version: //'), reverse proxy (HTTP/1.1 upstream keep-alive, proxy_buffering off), master + $CPUS worker processes (= engyd's CPUs), access_log off"
	else
		NGINX_WHY="nginx did not start: $(tail -n 2 "$T/nginx/error.log" "$T/nginx/stdout" 2> /dev/null | tr '\n' ' ')"
		stop_group $NGPID
	fi
fi
[ -z "$NGINX_WHY" ] || say "nginx: skipped: $NGINX_WHY"

# ---- LiteLLM ----------------------------------------------------------------
# In a virtualenv of the bench's own (the build directory's
# bench/litellm-venv, made once; make clean removes it).  Spend tracking
# (virtual keys, spend logs) needs DATABASE_URL (PostgreSQL) and
# prisma-client-py, whose `prisma generate` fetches the Prisma query
# engine from binaries.prisma.sh at run time (no PyPI or npm package
# carries it); offline that fails, so LiteLLM runs with its master key
# only, unless BENCH_LITELLM_DB names a database URL to try.
LLPID=""
LL_WHY=""
LLV="$top_builddir/bench/litellm-venv"
LLKEY="sk-bench-$$-master"
if [ "${BENCH_LITELLM:-1}" = 0 ]; then
	LL_WHY="BENCH_LITELLM=0"
elif ! [ -x "$LLV/bin/litellm" ]; then
	say "installing litellm[proxy] into bench/litellm-venv (once)"
	rm -rf "$LLV"
	if ! { python3 -m venv "$LLV" && "$LLV/bin/pip" install -q --disable-pip-version-check \
		'litellm[proxy]'; } > "$T/pip-litellm.log" 2>&1; then
		LL_WHY="pip install litellm[proxy] failed: $(tail -n 1 "$T/pip-litellm.log")"
		rm -rf "$LLV"
	fi
fi
if [ -z "$LL_WHY" ]; then
	mkdir -p "$T/litellm"
	cat > "$T/litellm/config.yaml" <<C
model_list:
  - model_name: bench-model
    litellm_params:
      model: openai/bench-model
      api_base: http://127.0.0.1:$DPORT/v1
      api_key: bench-upstream-key
general_settings:
  master_key: $LLKEY
C
	if [ -n "${BENCH_LITELLM_DB:-}" ]; then
		printf '  database_url: "%s"\n' "$BENCH_LITELLM_DB" >> "$T/litellm/config.yaml"
		LL_SPEND="spend tracking on ($BENCH_LITELLM_DB)"
	else
		LL_SPEND="spend tracking off: it needs PostgreSQL and prisma-client-py, whose 'prisma generate' downloads the Prisma query engine from binaries.prisma.sh at run time (no PyPI or npm package carries it) and this machine reaches package registries only; so master key auth only, no virtual keys, no spend rows"
	fi
	(cd "$T/litellm" && LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_LOG=ERROR \
		TMPDIR="$T/litellm" HOME="$T/litellm" \
		exec ${BENCH_TASKSET:-} setsid "$LLV/bin/litellm" --config config.yaml \
		--host 127.0.0.1 --port $LPORT --num_workers "$CPUS") > "$T/litellm/log" 2>&1 &
	LLPID=$!
	GROUPS_="$GROUPS_ $LLPID"
	# Ready when its liveliness route answers: a deadline of 300 s against
	# a hang only (it imports for tens of seconds on a loaded machine).
	i=0
	until curl -sf -o /dev/null "http://127.0.0.1:$LPORT/health/liveliness" 2> /dev/null; do
		if ! kill -0 $LLPID 2> /dev/null || [ $i -ge 3000 ]; then
			LL_WHY="the LiteLLM proxy did not start: $(grep -v '^ *$' "$T/litellm/log" | tail -n 2 | tr '\n' ' ')"
			break
		fi
		i=$((i + 1))
		sleep 0.1
	done
	if [ -z "$LL_WHY" ]; then
		PEERS="$PEERS litellm:$LPORT:$LLKEY"
		say "litellm: LiteLLM proxy $("$LLV/bin/pip" show litellm 2> /dev/null | sed -n 's/^Version: //p'), $CPUS uvicorn workers, model openai/bench-model at the direct endpoint's /v1, master key; $LL_SPEND"
	else
		stop_group $LLPID
		LLPID=""
	fi
fi
[ -z "$LL_WHY" ] || say "litellm: skipped: $LL_WHY"

# ---- the load phases --------------------------------------------------------
rc=0
TMPDIR="$T" BENCH_DIRECT_PORT=$DPORT BENCH_PEERS="$PEERS" BENCH_SUMMARY="$T/summary" \
	${BENCH_TASKSET:-} "$top_builddir/bench/bench_gateway_load" "$HPORT" \
	"ws://127.0.0.1:$((HPORT + 1))/gw" "$MK" "$KEY" bench-model || rc=$?
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
# Peak memory after all the rounds (VmHWM, the resident high-water mark):
# engyd with its allocator, nginx's master and workers together.
hwm_kib() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status" 2> /dev/null; }
GW_HWM=$(hwm_kib $GW_PID)
NG_HWM=""
if [ -n "$NGPID" ]; then
	NG_HWM=0
	for p in $(pgrep -g $NGPID 2> /dev/null); do
		h=$(hwm_kib $p)
		NG_HWM=$((NG_HWM + ${h:-0}))
	done
fi
[ -z "$GW_HWM" ] || printf '  peak memory (VmHWM): engyd %d MiB (%s)%s\n' $((GW_HWM / 1024)) \
	"$("$top_builddir/engyd/engyd" --version | sed -n 's/^allocator: //p')" \
	"${NG_HWM:+, nginx master and workers $((NG_HWM / 1024)) MiB}"
[ $rc = 0 ] || exit $rc
[ -z "$LLPID" ] || stop_group $LLPID
[ -z "$NGPID" ] || stop_group $NGPID
stop_pid $GW_PID

# ---- instructions per request (callgrind) ----------------------------------
# engyd (same config and store) and nginx (master_process off: one
# process) under callgrind, twice: N1 then N2 sequential plain requests
# after the same warm-up; each run ends with SIGTERM and callgrind writes
# its totals at the exit, so start-up, warm-up and shutdown cancel in the
# difference.  No timing is assumed: valgrind is only slower.
N1=${BENCH_INSTR_N1:-200}
N2=${BENCH_INSTR_N2:-1200}
INSTR_WHY=""
if [ "${BENCH_INSTR:-1}" = 0 ]; then
	INSTR_WHY="BENCH_INSTR=0"
elif ! command -v valgrind > /dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null 2>&1; then
		say "installing valgrind with apt-get (it is not installed)"
		{ DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends valgrind ||
			{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends valgrind; }; } \
			> "$T/apt-valgrind.log" 2>&1 || INSTR_WHY="apt-get install valgrind failed: $(tail -n 1 "$T/apt-valgrind.log")"
	else
		INSTR_WHY="valgrind is not installed and this is not root with apt-get"
	fi
fi
[ "$N2" -gt "$N1" ] || INSTR_WHY="BENCH_INSTR_N2 must exceed BENCH_INSTR_N1"
# Self instructions by object (O), by function (F) and in all (T) of a
# callgrind output file (--compress-strings: "(id) name" defines, "(id)"
# refers; the cost line after a calls= line is the call's inclusive cost).
cg_self() {
	awk '
	function nm(map, v,   id, rest) {
		if (v !~ /^\([0-9]+\)/) return v
		id = substr(v, 2, index(v, ")") - 2)
		rest = substr(v, index(v, ")") + 1); sub(/^ /, "", rest)
		if (rest != "") map[id] = rest
		return map[id] }
	BEGIN { np = 1 }
	/^positions:/ { np = NF - 1; next }
	/^ob=/ { ob = nm(obs, substr($0, 4)); n = split(ob, p, "/"); ob = p[n]; next }
	/^cob=/ { nm(obs, substr($0, 5)); next }
	/^fn=/ { fn = nm(fns, substr($0, 4)); next }
	/^cfn=/ { nm(fns, substr($0, 5)); next }
	/^calls=/ { skip = 1; next }
	/^[0-9+*-]/ { if (skip) { skip = 0; next }
		c = $(np + 1) + 0; O[ob] += c; F[ob ":" fn] += c; t += c; next }
	END { for (k in O) print "O", O[k], k; for (k in F) print "F", F[k], k
	      print "T", t, "all" }' "$1"
}
# $1 = N, $2 = connections: engyd and (when there) nginx under callgrind,
# N requests each (files $T/cg/WHO.$2.$1).
cg_run() {
	CG="valgrind --tool=callgrind --dump-instr=no --callgrind-out-file=$T/cg/engyd.$2.$1"
	k=0
	until start $IBASE cg "$CG" 6000; do
		# another port set: a port taken since the first choice
		k=$((k + 1))
		IBASE=$((20000 + ($$ + k * 7919 + 3001) % 40000))
		INPORT=$((IBASE + 3))
		WHY=$(cat "$T/cg.log" "$T/cg.stderr" | grep -v '^==[0-9]*== *[A-Z ]*\(refs\|Collected\|$\)' | tail -n 3 | tr '\n' ' ')
		[ $k -ge 3 ] || { say "engyd under valgrind did not start ($WHY), trying other ports"; continue; }
		INSTR_WHY="engyd under valgrind did not start: $WHY"
		return 1
	done
	CG_GW=$GPID
	CG_NG=""
	CG_PEERS=""
	if [ -n "$NGINX" ] && [ -z "$NGINX_WHY" ]; then
		nginx_conf nginx-cg $INPORT off 1
		${BENCH_TASKSET:-} valgrind --tool=callgrind --dump-instr=no \
			--callgrind-out-file="$T/cg/nginx.$2.$1" "$NGINX" -p "$T/nginx-cg/" \
			-c "$T/nginx-cg/nginx.conf" -e "$T/nginx-cg/error.log" > "$T/nginx-cg/stdout" 2>&1 &
		CG_NG=$!
		PIDS="$PIDS $CG_NG"
		NGPID=$CG_NG
		if wait_nginx $INPORT 6000; then
			CG_PEERS="nginx:$INPORT"
		else
			NG_CG_WHY="nginx under valgrind did not start"
		fi
	fi
	r=0
	TMPDIR="$T" BENCH_INSTR=$1 BENCH_INSTR_CONNS=$2 BENCH_DIRECT_PORT=$DPORT \
		BENCH_PEERS="$CG_PEERS" \
		"$top_builddir/bench/bench_gateway_load" "$IBASE" \
		"ws://127.0.0.1:$((IBASE + 1))/gw" "$MK" "$KEY" bench-model || r=$?
	stop_pid $CG_GW
	[ -z "$CG_NG" ] || stop_pid $CG_NG
	[ $r = 0 ] || { INSTR_WHY="the load program failed under callgrind (exit $r)"; return 1; }
	[ -s "$T/cg/engyd.$2.$1" ] || { INSTR_WHY="callgrind wrote no output for engyd"; return 1; }
}
NG_CG_WHY=""
if [ -z "$INSTR_WHY" ]; then
	mkdir -p "$T/cg"
	for CC in 1 ${BENCH_INSTR_CONNS:-64}; do
		[ -z "$INSTR_WHY" ] || break
		t0=$(date +%s)
		if cg_run $N1 $CC && cg_run $N2 $CC; then
			[ $CC = 1 ] && how="sequential plain requests" ||
				how="plain requests over $CC connections (a loaded gateway: settlements group-committed)"
			say "instructions per request (callgrind, (Ir($N2) - Ir($N1)) / $((N2 - N1)), $how after a warm-up; $(($(date +%s) - t0)) s):"
			for who in engyd nginx; do
				[ -s "$T/cg/$who.$CC.$N1" ] && [ -s "$T/cg/$who.$CC.$N2" ] || continue
				cg_self "$T/cg/$who.$CC.$N1" | sed 's/^/a /' > "$T/cg/$who.self"
				cg_self "$T/cg/$who.$CC.$N2" | sed 's/^/b /' >> "$T/cg/$who.self"
				awk -v dn=$((N2 - N1)) -v who=$who -v out="$T/cg/$who.$CC.ir" '
					{ name = $4; for (i = 5; i <= NF; i++) name = name " " $i
					  key = $2 SUBSEP name
					  if ($1 == "a") d[key] -= $3; else d[key] += $3
					  kind[key] = $2; nm[key] = name }
					END {
					  for (k in d) if (kind[k] == "T") tot = d[k] / dn
					  printf "%s %.0f\n", who, tot > out
					  printf "  %-6s %9.0f instructions per request\n", who, tot
					  if (tot <= 0) exit
					  for (pass = 1; pass <= 2; pass++) {
					    want = pass == 1 ? "O" : "F"; n = 0
					    for (k in d) if (kind[k] == want && d[k] / dn >= 0.5) { n++; ks[n] = k; vs[n] = d[k] / dn }
					    for (i = 2; i <= n; i++) for (j = i; j > 1 && vs[j] > vs[j - 1]; j--) {
					      t = vs[j]; vs[j] = vs[j - 1]; vs[j - 1] = t; t = ks[j]; ks[j] = ks[j - 1]; ks[j - 1] = t }
					    lim = who == "engyd" ? 8 : 3
					    printf "    by %s (self):", pass == 1 ? "object" : "function"
					    for (i = 1; i <= n && i <= lim; i++)
					      printf "%s %s %.0f (%.1f %%)", (i > 1 ? "," : ""), nm[ks[i]], vs[i], 100 * vs[i] / tot
					    printf "\n"; delete ks; delete vs }
					}' "$T/cg/$who.self"
			done
		fi
	done
fi
[ -z "$INSTR_WHY" ] || say "instructions per request: skipped: $INSTR_WHY"
[ -z "$NG_CG_WHY" ] || say "instructions per request: nginx skipped: $NG_CG_WHY"

# ---- the ratios ----------------------------------------------------------------
say "ratios (engy against the goals and the peers of this run):"
[ ! -f "$T/summary" ] || cat "$T/summary"
for CC in 1 ${BENCH_INSTR_CONNS:-64}; do
	[ $CC = 1 ] && how="sequential" || how="$CC connections"
	if [ -f "$T/cg/engyd.$CC.ir" ]; then
		EIR=$(awk '{ print $2 }' "$T/cg/engyd.$CC.ir")
		if [ -f "$T/cg/nginx.$CC.ir" ]; then
			NIR=$(awk '{ print $2 }' "$T/cg/nginx.$CC.ir")
			awk -v e="$EIR" -v n="$NIR" -v h="$how" 'BEGIN { printf "  engy instructions per request (%s): %.0f (goal <= 100,000), nginx %.0f, engy/nginx %.1f\n", h, e, n, (n > 0 ? e / n : 0) }'
		else
			awk -v e="$EIR" -v h="$how" 'BEGIN { printf "  engy instructions per request (%s): %.0f (goal <= 100,000), nginx not measured\n", h, e }'
		fi
	else
		echo "  engy instructions per request ($how): not measured (see above)"
	fi
done
[ -n "$NGINX_WHY" ] && echo "  engy req/s / nginx req/s: not measured (nginx: $NGINX_WHY)" || true
[ -n "$LL_WHY" ] && echo "  engy req/s / litellm req/s: not measured (litellm: $LL_WHY)" || true
