#!/bin/sh
# engyd runs a role on 127.0.0.1: host services work end to end, metrics
# are served, SIGHUP reopens the log, SIGTERM drains in-flight work, runs
# stop() then destroy(), and exits 0 leaving nothing behind.
# Oracle: behaviour of the host (signals, metrics, logs) observed from
# outside with curl and the log; no computed values.
. "$top_srcdir/tests/integration/lib.sh"
# Roles are plugins (role-NAME.so) found in the plugin directory: one
# directory with the test plugins and the built ones.
make_plugin_dir "$T/plug"
TEST_PLUGINS="$T/plug"
command -v curl >/dev/null || fail "curl is required"

run_conf() {  # name, extra plugin options, top-level extras
  cat > "$T/$1.conf" <<C
role = "validator"
plugin_dir = "$TEST_PLUGINS"
state_dir = "$T/state/$1"
log_file = "$T/$1.log"
metrics_listen = "127.0.0.1:0"
workers = 2
$3
plugin "test-chain" { interval_ms = 50 label = "two words" tags = {"a", "b"} $2 }
C
  chmod 600 "$T/$1.conf"
}

start() {  # name
  TEST_CHAIN_TOKEN=sekrit-token-123 "$ENGYD" -c "$T/$1.conf" 2> "$T/$1.stderr" &
  PID=$!
  PIDS="$PIDS $PID"
  wait_for "$T/$1.log" "event=ready" 10 || fail "$1: no ready line: $(cat "$T/$1.log" "$T/$1.stderr" 2>&1)"
  PORT=$(sed -n 's/.*event=metrics_listen .*port=\([0-9]*\).*/\1/p' "$T/$1.log" | head -1)
  [ -n "$PORT" ] || fail "$1: no metrics port"
}

stop_and_wait() {  # name, seconds
  kill -TERM "$PID"
  i=0
  while kill -0 "$PID" 2>/dev/null; do
    i=$((i + 1)); [ $i -le $(($2 * 20)) ] || fail "$1: still running after SIGTERM"
    sleep 0.05
  done
  wait "$PID" && RC=0 || RC=$?
}

# --- a normal life ---
run_conf life "stop_work_ms = 300" "shutdown_timeout = 5"
start life
ok "engyd starts and logs ready"
grep -q 'inst=test-chain event=started interval_ms=50 token_set=yes loud=false ratio=0.5' "$T/life.log" || fail "options did not reach the plugin: $(cat "$T/life.log")"
ok "options, defaults and the secret env twin reach the plugin"
grep -q "state_dir=$T/state/life self_peer=yes" "$T/life.log" || fail "state dir / peer lookup"
[ -d "$T/state/life" ] || fail "state dir not created"
ok "state dir created and peer lookup finds the instance"
grep -q 'event=tag value=b' "$T/life.log" || fail "string list"
ok "string list option"
wait_for "$T/life.log" "event=job_done n=3 rc=0" 10 || fail "worker pool jobs did not complete"
ok "timer ticks submit pool jobs whose completions come back"
grep -Eq '^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z level=info inst=test-chain event=tick n=[0-9]+ label=two words$' "$T/life.log" || fail "log line shape: $(head -3 "$T/life.log")"
ok "one logfmt line per event: time, level, instance, fields"
M=$(curl -fsS "http://127.0.0.1:$PORT/metrics") || fail "metrics fetch"
echo "$M" | grep -q '^# TYPE test_chain_ticks_total counter$' || fail "plugin metric type: $M"
n=$(echo "$M" | sed -n 's/^test_chain_ticks_total \([0-9]*\).*/\1/p')
[ "${n:-0}" -ge 3 ] || fail "plugin metric value: $M"
echo "$M" | grep -q '^engyd_pool_jobs_total [1-9]' || fail "pool metric: $M"
echo "$M" | grep -q '^engyd_log_lines_total{level="info"} [1-9]' || fail "log metric: $M"
echo "$M" | grep -q '^engyd_uptime_seconds ' || fail "uptime: $M"
ok "Prometheus text on /metrics with host and plugin metrics"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/other")
[ "$code" = 404 ] || fail "non-metrics path gave $code"
ok "other paths are 404"
mv "$T/life.log" "$T/life.log.1"
kill -HUP "$PID"
wait_for "$T/life.log" "event=log_reopen" 5 || fail "SIGHUP did not reopen the log"
ok "SIGHUP reopens the log file"
stop_and_wait life 10
[ "$RC" = 0 ] || fail "exit code $RC"
cat "$T/life.log.1" "$T/life.log" > "$T/life.all"
for ev in "event=signal signal=TERM" "event=shutdown_begin" "event=stopping" \
          "event=stop_work_done n=" "event=drained" "event=destroyed" "event=stopped exit=0"; do
  grep -q "$ev" "$T/life.all" || fail "missing '$ev' in shutdown log: $(tail -20 "$T/life.all")"
done
# in-flight work finished before plugins were destroyed
a=$(grep -n 'event=stop_work_done' "$T/life.all" | head -1 | cut -d: -f1)
b=$(grep -n 'event=drained' "$T/life.all" | cut -d: -f1)
c=$(grep -n 'event=destroyed' "$T/life.all" | cut -d: -f1)
[ "$a" -lt "$b" ] && [ "$b" -lt "$c" ] || fail "shutdown order: work $a drained $b destroyed $c"
grep -q 'stop_work_done n=[0-9]* rc=0' "$T/life.all" || fail "in-flight job was cancelled"
ok "SIGTERM: stop, in-flight work finishes, destroy, exit 0"
if grep -q 'sekrit-token-123' "$T/life.all" "$T/life.stderr"; then fail "secret leaked into the log"; fi
ok "the secret never reaches the log"

# --- a shutdown deadline: work longer than shutdown_timeout ---
run_conf deadline "stop_work_ms = 2500" "shutdown_timeout = 1"
start deadline
stop_and_wait deadline 10
[ "$RC" = 0 ] || fail "deadline exit code $RC"
grep -q 'event=shutdown_deadline inflight=1 timeout_s=1' "$T/deadline.log" || fail "no deadline line: $(tail "$T/deadline.log")"
ok "shutdown deadline is logged, and the run still ends"

# --- a start failure: the metrics port is taken ---
# The holder listens on an ephemeral port (start sets PORT to it); the
# second run is configured for that same port.
run_conf holder "" ""
start holder
run_conf taken "" ""
sed -i "s/127.0.0.1:0/127.0.0.1:$PORT/" "$T/taken.conf"
grep -q "^metrics_listen = \"127.0.0.1:$PORT\"\$" "$T/taken.conf" || fail "taken.conf: not on port $PORT"
if "$ENGYD" -c "$T/taken.conf" 2>/dev/null; then fail "started on a taken port"; fi
grep -q "event=metrics_listen_failed addr=127.0.0.1:$PORT" "$T/taken.log" || fail "no listen failure line"
ok "a taken metrics port stops startup with a clear line"
stop_and_wait holder 10

# --- log_sync: no writer thread ---
# lib.sh runs engyd with ENGY_LOG_SYNC=1.  The log's writer thread is
# named engy-log.
writer() { cat /proc/"$1"/task/*/comm 2> /dev/null | grep -c '^engy-log$' || true; }
run_conf sync1 "" ""
start sync1
w1=$(writer "$PID")
stop_and_wait sync1 10
run_conf sync0 "" ""
ENGY_LOG_SYNC=0 start sync0
w0=$(writer "$PID")
stop_and_wait sync0 10
run_conf syncc "" "log_sync = true"
ENGY_LOG_SYNC=0 start syncc
wc=$(writer "$PID")
stop_and_wait syncc 10
[ "$w0/$w1/$wc" = 1/0/0 ] ||
	fail "log writer threads: $w0 by default, $w1 with ENGY_LOG_SYNC=1, $wc with log_sync = true"
ok "log_sync = true or ENGY_LOG_SYNC=1: no log writer thread (engy-log); one without"
rc=0
ENGY_LOG_SYNC=maybe "$ENGYD" -c "$T/syncc.conf" 2> "$T/bad-env.err" || rc=$?
[ "$rc" = 2 ] && grep -q "ENGY_LOG_SYNC='maybe': wants true or false" "$T/bad-env.err" ||
	fail "ENGY_LOG_SYNC=maybe: exit $rc: $(cat "$T/bad-env.err")"
ok "ENGY_LOG_SYNC that is not a boolean stops engyd with the reason"
echo "$N_OK passed, 0 failed"
