# Shared helpers for the integration scripts (sourced, POSIX sh + bash).
set -eu
: "${top_srcdir:?run through make check}"
: "${top_builddir:?run through make check}"
ENGYD="$top_builddir/engyd/engyd"
ENGYCTL="$top_builddir/tools/engyctl"
TEST_PLUGINS="$top_builddir/tests/plugins/.libs"
T=$(mktemp -d "${TMPDIR:-/tmp}/engy-it.XXXXXX")
# engyd writes info lines from a thread of the log's own: a script that
# greps a line as soon as it sees engyd's answer could look before the
# line is written.  With log_sync every line is written before engyd
# goes on.  A script that wants the writer thread sets ENGY_LOG_SYNC=0.
export ENGY_LOG_SYNC="${ENGY_LOG_SYNC-1}"
# Bounds on waits for a process to start or a line to appear only bound a
# hang; the sanitizer suite, several times slower, scales them
# (ENGY_TEST_TIME_SCALE, set by scripts/test.sh).
TIME_SCALE="${ENGY_TEST_TIME_SCALE:-1}"
PIDS=""
cleanup() {
  for p in $PIDS; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT
N_OK=0
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { N_OK=$((N_OK + 1)); echo "ok $N_OK - $*"; }
# expect_fail "what" "needle" cmd...: cmd must exit non-zero, stderr+stdout must hold needle
expect_fail() {
  what=$1; needle=$2; shift 2
  if out=$("$@" 2>&1); then fail "$what: succeeded, expected failure"; fi
  case "$out" in *"$needle"*) ok "$what";; *) fail "$what: no '$needle' in: $out";; esac
}
expect_ok() {
  what=$1; needle=$2; shift 2
  out=$("$@" 2>&1) || fail "$what: exit $?: $out"
  case "$out" in *"$needle"*) ok "$what";; *) fail "$what: no '$needle' in: $out";; esac
}
# wait_for FILE NEEDLE SECONDS
wait_for() {
  i=0
  while ! grep -q -- "$2" "$1" 2>/dev/null; do
    i=$((i + 1)); [ $i -le $(($3 * 20 * TIME_SCALE)) ] || return 1; sleep 0.05
  done
}
# LeakSanitizer failing itself at exit ("LeakSanitizer has encountered a
# fatal error": its tracer could not stop the process's threads), and
# the hints it prints with that: not a report about the program.
SAN_TOOL_LINES='LeakSanitizer has encountered a fatal error\|HINT: .*LeakSanitizer\|HINT: For debugging'
# sanitizer_tool_failed RC STDERR: true when a nonzero exit RC is that
# failure with no report of any kind in STDERR, so no leak or error was
# found or missed by the program: said on stdout, not counted as the
# program's failure.  A leak report, an AddressSanitizer or UBSan error
# still fails.
sanitizer_tool_failed() {
  [ "$1" != 0 ] && [ -f "$2" ] || return 1
  grep -q 'LeakSanitizer has encountered a fatal error' "$2" || return 1
  if grep -q 'ERROR: \(Leak\|Address\|Undefined\)Sanitizer\|runtime error' "$2"; then
    return 1
  fi
  echo "# note: exit $1 was LeakSanitizer's own fatal error at exit, no report: $(grep -m2 -h 'Tracer\|fatal error' "$2" | tr '\n' ' ')"
}
# stopped_clean NAME RC LOG STDERR: an engyd stopped by SIGTERM exited 0
# (or LeakSanitizer failed itself, above); otherwise fail with the log's
# tail and, since a nonzero exit after "stopped exit=0" is a sanitizer's
# report at exit, that report with its stacks.
stopped_clean() {
  [ "$2" = 0 ] || sanitizer_tool_failed "$2" "$4" ||
    fail "$1: exit $2 after SIGTERM: $(tail -5 "$3")
$(grep -h -A40 'Sanitizer\|runtime error' "$4" 2> /dev/null | head -80)"
}
# A plugin dir holding every plugin built in this tree plus the test ones.
make_plugin_dir() {
  d=$1; mkdir -p "$d"
  for so in "$top_builddir"/plugins/*/.libs/*.so "$TEST_PLUGINS"/*.so; do
    [ -f "$so" ] && ln -sf "$so" "$d/$(basename "$so")"
  done
  return 0
}
# skip_or_fail REASON: this test cannot run here.  Normally a skip (exit
# 77) that says why; under the project's test command in CI
# (ENGY_REQUIRE_PEERS=1, which scripts/test.sh sets when CI=true) what is
# missing is something that command installs, builds or lays out itself
# (npm peers, node, PostgreSQL, numpy, the Python peers of
# tests/peers/requirements.txt in ENGY_PYTHON's virtualenv, a plugin, the
# shared fixtures), so its absence is a failure.  The no-GPU skip does not
# use this.
skip_or_fail() {
  if [ "${ENGY_REQUIRE_PEERS:-}" = 1 ]; then
    echo "FAIL: $* (a skip is a failure with ENGY_REQUIRE_PEERS=1)" >&2
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
# skip_part REASON: a part of this test cannot run here; the rest goes
# on.  Said on stdout, and a failure with ENGY_REQUIRE_PEERS=1 as above.
skip_part() {
  if [ "${ENGY_REQUIRE_PEERS:-}" = 1 ]; then
    echo "FAIL: $* (a skipped part is a failure with ENGY_REQUIRE_PEERS=1)" >&2
    exit 1
  fi
  echo "# SKIP (part): $*"
}
